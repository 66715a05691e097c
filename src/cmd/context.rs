//! `cchist context`: how full a session's context is, when Claude Code will compact it, what
//! fills it and what would shrink it. The numbers are [`cchist::transcript::context`]'s; this
//! file gathers the environment and settings the CLI would read, and prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use cchist::claude::layout::{self, SessionFile};
use cchist::error::ExitStatus;
use cchist::io::{framing, input};
use cchist::stages::drop_tool_noise::DEFAULT_CAP;
use cchist::transcript::budget;
use cchist::transcript::context::{
    composition, Compaction, Composition, Limits, Overrides, Standing, Timeline, Window,
    DEFAULT_MODEL, ENV_VARS,
};
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use clap::Args;
use serde::Serialize;

use super::target::SessionArgs;

/// `cchist context` arguments.
#[derive(Args, Debug)]
pub struct ContextArgs {
    /// A transcript file (the same as --file).
    #[arg(value_name = "FILE", conflicts_with_all = ["session", "file", "project"])]
    pub path: Option<PathBuf>,
    #[command(flatten)]
    pub target: SessionArgs,
    /// How many of the largest items to list.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub top: usize,
    /// Report format: `json` prints one object (see README for the fields).
    #[command(flatten)]
    pub format: super::args::FormatArgs,
}

/// The overrides Claude Code would apply in `project` (its working directory): the process
/// environment, the user, project and local settings files, and the global config. Unreadable
/// or missing files count as empty, as they do for the CLI.
pub fn overrides(project: Option<&Path>) -> Overrides {
    let root = layout::config_root().ok();
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(r) = &root {
        files.push(r.join("settings.json"));
    }
    if let Some(p) = project {
        files.push(p.join(".claude").join("settings.json"));
        files.push(p.join(".claude").join("settings.local.json"));
    }
    let read = |p: &Path| -> Option<serde_json::Value> {
        let text = std::fs::read(p).ok()?;
        serde_json::from_slice(&text).ok()
    };
    let docs: Vec<(String, serde_json::Value)> = files
        .iter()
        .filter_map(|p| read(p).map(|d| (p.display().to_string(), d)))
        .collect();
    // The global config: beside the settings under CLAUDE_CONFIG_DIR, else ~/.claude.json.
    let global_path = match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        Some(d) => Some(PathBuf::from(d).join(".claude.json")),
        None => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude.json")),
    };
    let global = global_path.and_then(|p| read(&p).map(|d| (p.display().to_string(), d)));
    let env = |k: &str| {
        debug_assert!(ENV_VARS.contains(&k));
        std::env::var(k).ok()
    };
    Overrides::resolve(&env, &docs, global.as_ref().map(|(f, d)| (f.clone(), d)))
}

/// Everything `context` reports (the `--json` shape).
#[derive(Serialize)]
pub struct Report {
    /// Session id.
    pub session: String,
    /// The transcript.
    pub file: String,
    /// The model the numbers are for (the last real assistant record's, else the default).
    pub model: String,
    /// The model's window, as the CLI knows it.
    pub window: Window,
    /// The usage sum of the last real assistant record (exact, as the CLI counts it).
    pub usage_tokens: u64,
    /// Estimated tokens of the records after it.
    pub estimated_after: u64,
    /// The count now: `usage_tokens + estimated_after`.
    pub tokens: u64,
    /// Percent of the window, when it is known.
    pub percent: Option<f64>,
    /// The resume estimate: what `--resume` would send (from the last compaction on).
    pub resume_tokens: u64,
    /// When it compacts.
    pub compaction: Compaction,
    /// Where the count stands.
    pub standing: Standing,
    /// Tokens left until the warning / the auto-compaction / the block.
    pub left_until_warning: Option<u64>,
    /// See `left_until_warning`.
    pub left_until_compact: Option<u64>,
    /// See `left_until_warning`.
    pub left_until_block: Option<u64>,
    /// Recent growth per turn, estimated tokens.
    pub growth_per_turn: Option<u64>,
    /// Turns at that growth until auto-compaction.
    pub turns_until_compact: Option<u64>,
    /// The overrides in effect, with where each came from.
    pub overrides: Vec<cchist::transcript::context::Source>,
    /// What fills the conversation.
    pub composition: Composition,
    /// Commands that would shrink it, with what each would gain.
    pub commands: Vec<Suggestion>,
    /// Said when the session resumes on another model.
    pub note: Option<String>,
    /// Messages on the path `--resume` rebuilds (`transcript::damage::resume_reach`).
    pub reached_messages: usize,
    /// Messages in the file; fewer reached means resume loses history (`cchist repair`).
    pub messages: usize,
}

/// A command to paste.
#[derive(Serialize)]
pub struct Suggestion {
    /// The command line.
    pub command: String,
    /// What it would do, in words.
    pub gain: String,
}

/// What one session's context looks like: the count, the model and its limits.
pub struct Measure {
    /// The count along the conversation.
    pub timeline: Timeline,
    /// The limits of its model.
    pub limits: Limits,
}

/// Measure a parsed session under `o`.
pub fn measure(s: &mut Session<'_>, o: &Overrides) -> Measure {
    let timeline = Timeline::of(s);
    let model = timeline.model.as_deref().unwrap_or(DEFAULT_MODEL);
    let limits = Limits::of(model, o);
    Measure { timeline, limits }
}

/// "143k" / "1.2M".
pub fn short_tokens(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1}M", n as f64 / 1e6)
    } else if n >= 1_000 {
        format!("{}k", (n + 500) / 1000)
    } else {
        n.to_string()
    }
}

/// The context column of `ls` and `history list`: "143k 72%", "143k ?%" with no known window.
pub fn column(tokens: u64, limits: &Limits) -> String {
    match limits.percent(tokens) {
        Some(p) => format!("{} {:.0}%", short_tokens(tokens), p),
        None => format!("{} ?%", short_tokens(tokens)),
    }
}

/// "compacts now", "compacts in ~3 turns", "auto-compact off", … for the status line and the
/// report.
pub fn outlook(r: &Report) -> String {
    match (&r.compaction, r.standing) {
        (_, Standing::CompactsNow) => "compacts now".into(),
        (_, Standing::Blocked) => "auto-compact off: the next prompt is refused".into(),
        (Compaction::Off { by, .. }, _) => format!("auto-compact off ({by})"),
        (Compaction::NoKnownWindow, _) => {
            "no known window: compacts only when the API answers \"prompt is too long\"".into()
        }
        (Compaction::Auto { .. }, _) => match r.turns_until_compact {
            Some(n) => format!("compacts in ~{n} turn{}", if n == 1 { "" } else { "s" }),
            None => "compaction not in sight".into(),
        },
    }
}

/// Build the report of one session.
pub fn report(sf: &SessionFile, top: usize, o: Option<Overrides>) -> anyhow::Result<Report> {
    let f = input::open(&sf.path)?;
    let mut s = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect());
    let o = o.unwrap_or_else(|| overrides(project_of(sf).as_deref()));
    let m = measure(&mut s, &o);
    let turns = s.turns();
    let per_turn = m.timeline.per_turn_since_compaction(&turns);
    let tokens = m.timeline.tokens();
    let usage_tokens = m.timeline.last_usage.map_or(0, |(_, u)| u.total());
    let l = &m.limits;
    let (warn, thr, block) = match l.compaction {
        Compaction::Auto {
            threshold, warning, ..
        } => (Some(warning), Some(threshold), None),
        Compaction::Off { block, .. } => (None, None, block),
        Compaction::NoKnownWindow => (None, None, None),
    };
    let left = |x: Option<u64>| x.map(|x| x.saturating_sub(tokens));
    let growth = Timeline::growth(&per_turn, 5);
    let turns_until_compact = match thr {
        Some(t) if tokens >= t => Some(0),
        Some(t) => growth.map(|g| (t - tokens).div_ceil(g)),
        None => None,
    };
    let comp = composition(&mut s, top, DEFAULT_CAP);
    let resume_tokens = budget::resume_tokens(&mut s);
    let reach = cchist::transcript::damage::resume_reach(&s);
    let commands = suggestions(sf, &comp, thr.or(block), resume_tokens);
    let note = cchist::transcript::context::resumed_model(&l.model).map(|m| {
        format!(
            "{} sessions resume on {m} (whose window then applies); their thinking is not resent",
            l.model
        )
    });
    Ok(Report {
        session: sf.id.clone(),
        file: sf.path.display().to_string(),
        model: l.model.clone(),
        window: l.window,
        usage_tokens,
        estimated_after: m.timeline.estimated_after,
        tokens,
        percent: l.percent(tokens).map(|p| (p * 10.0).round() / 10.0),
        resume_tokens,
        compaction: l.compaction.clone(),
        standing: l.standing(tokens),
        left_until_warning: left(warn),
        left_until_compact: left(thr),
        left_until_block: left(block),
        growth_per_turn: growth,
        turns_until_compact,
        overrides: o.sources.clone(),
        composition: comp,
        commands,
        note,
        reached_messages: reach.reached,
        messages: reach.total,
    })
}

/// The session's recorded working directory (where Claude Code reads project settings on
/// resume), else the current one.
fn project_of(sf: &SessionFile) -> Option<PathBuf> {
    layout::first_cwd(&sf.path)
        .map(PathBuf::from)
        .or_else(|| std::env::current_dir().ok())
}

/// Pasteable commands with what each would gain.
fn suggestions(
    sf: &SessionFile,
    c: &Composition,
    limit: Option<u64>,
    resume: u64,
) -> Vec<Suggestion> {
    let path = shlex::try_quote(&sf.path.to_string_lossy())
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| sf.path.display().to_string());
    let mut out = Vec::new();
    let images = c.images * budget::IMAGE_TOKENS;
    if c.over_cap + images > 0 {
        out.push(Suggestion {
            command: format!("cchist drop-tool-noise -i {path}"),
            gain: format!(
                "~{} tokens: tool output capped at {} KiB ({}), {} image{} replaced",
                short_tokens(c.over_cap + images),
                DEFAULT_CAP / 1024,
                short_tokens(c.over_cap),
                c.images,
                if c.images == 1 { "" } else { "s" }
            ),
        });
    }
    // Keep the recent steps that fill at most half of the limit (or of the resume now).
    let room = limit.map_or(resume / 2, |l| l / 2).max(1);
    let mut kept = 0u64;
    let mut n = 0usize;
    for &(_, t) in c.steps.iter().rev() {
        if kept + t > room {
            break;
        }
        kept += t;
        n += 1;
    }
    if n > 0 && n < c.steps.len() {
        let before: u64 = c.steps.iter().map(|s| s.1).sum::<u64>() - kept;
        out.push(Suggestion {
            command: format!("cchist summarize-range --keep-last-steps {n} -i {path}"),
            gain: format!(
                "the last {n} steps kept (~{}), the {} before summarized (~{} of steps)",
                short_tokens(kept),
                c.steps.len() - n,
                short_tokens(before)
            ),
        });
    }
    if let Some(l) = limit {
        let target = l / 2;
        if resume > target {
            out.push(Suggestion {
                command: format!("cchist summarize-range --fit {target} -i {path}"),
                gain: format!(
                    "resume ~{} → under {} (half of the limit)",
                    short_tokens(resume),
                    short_tokens(target)
                ),
            });
        }
    }
    out
}

pub fn run(a: ContextArgs) -> anyhow::Result<ExitStatus> {
    let mut target = a.target.clone();
    if let Some(p) = a.path {
        target.file = Some(p);
    }
    let sf = target.resolve()?;
    let r = report(&sf, a.top, None)?;
    let mut out = std::io::stdout().lock();
    if a.format.json() {
        out.write_all(super::print::shown_json(&r)?.as_bytes())?;
        return Ok(ExitStatus::Ok);
    }
    let text = render(&r);
    out.write_all(super::print::safe_text(&super::print::shown_text(&text)).as_bytes())?;
    Ok(ExitStatus::Ok)
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The text report.
fn render(r: &Report) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let window = match r.window {
        Window::Known(w) => format!("window {}", short_tokens(w)),
        Window::Unknown => "no known window".into(),
    };
    let _ = writeln!(o, "session  {}  ({})", r.session, r.file);
    let _ = writeln!(o, "model    {}  ({window})", r.model);
    let pct = r.percent.map(|p| format!("  {p:.0}%")).unwrap_or_default();
    let _ = writeln!(
        o,
        "context  {} tokens{pct}  (last usage {} + ~{} estimated after it)",
        thousands(r.tokens),
        thousands(r.usage_tokens),
        thousands(r.estimated_after)
    );
    let _ = writeln!(
        o,
        "resume   ~{} tokens (what --resume would send, from the last compaction on)",
        thousands(r.resume_tokens)
    );
    if r.reached_messages < r.messages {
        let _ = writeln!(
            o,
            "reach    resume reaches {} of {} messages in the file (the others sit on branches a rewind left, or are lost: `cchist validate` tells which)",
            thousands(r.reached_messages as u64),
            thousands(r.messages as u64)
        );
    }
    match &r.compaction {
        Compaction::Auto {
            threshold, warning, ..
        } => {
            let _ = writeln!(
                o,
                "limits   warning at {}: {} left · auto-compact at {}: {} left",
                thousands(*warning),
                thousands(r.left_until_warning.unwrap_or(0)),
                thousands(*threshold),
                thousands(r.left_until_compact.unwrap_or(0)),
            );
        }
        Compaction::Off { by, block } => {
            let b = block.map_or("no known window".to_string(), |b| {
                format!(
                    "prompts refused at {}: {} left",
                    thousands(b),
                    thousands(r.left_until_block.unwrap_or(0))
                )
            });
            let _ = writeln!(o, "limits   auto-compaction is off ({by}); {b}");
        }
        Compaction::NoKnownWindow => {
            let _ = writeln!(
                o,
                "limits   Claude Code knows no window for {}: it never compacts it proactively, only after the API answers \"prompt is too long\"",
                r.model
            );
        }
    }
    let growth = r
        .growth_per_turn
        .map(|g| format!(" (recent growth ~{} tokens/turn)", thousands(g)))
        .unwrap_or_default();
    let _ = writeln!(o, "outlook  {}{growth}", outlook(r));
    for s in &r.overrides {
        let _ = writeln!(o, "override {}={} ({})", s.name, s.value, s.from);
    }
    if let Some(n) = &r.note {
        let _ = writeln!(o, "note     {n}");
    }
    let total: u64 = r.composition.parts.iter().map(|p| p.1).sum::<u64>().max(1);
    let _ = writeln!(
        o,
        "\nwhat fills it (estimated, from the last compaction on):"
    );
    for (p, t) in &r.composition.parts {
        if *t > 0 {
            let _ = writeln!(
                o,
                "  {:<13} {:>10}  {:>3.0}%",
                p.label(),
                thousands(*t),
                *t as f64 * 100.0 / total as f64
            );
        }
    }
    if !r.composition.largest.is_empty() {
        let _ = writeln!(o, "\nlargest:");
        for it in &r.composition.largest {
            let step = it.step.map(|s| format!("step {s}")).unwrap_or_default();
            let name = it
                .name
                .as_deref()
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            let _ = writeln!(
                o,
                "  {:>10}  {}{name}  {step}",
                thousands(it.tokens),
                it.part.label()
            );
        }
    }
    if !r.commands.is_empty() {
        let _ = writeln!(o, "\nto shrink it:");
        for s in &r.commands {
            let _ = writeln!(o, "  {}\n      # {}", s.command, s.gain);
        }
    }
    o
}
