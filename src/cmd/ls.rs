//! `cchist ls`: projects and sessions under the config root, grouped by project (once),
//! newest first; `--sort`, `--limit`, `--since`; columns fit the terminal.

use super::print::say;
use std::io::Write;
use std::path::PathBuf;

use cchist::claude::layout::{self, SessionFile};
use cchist::error::ExitStatus;
use cchist::io::{framing, input};
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use cchist::transcript::turns;
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use serde::Serialize;

use super::print::human_bytes;

/// `cchist ls` arguments.
#[derive(Args, Debug)]
pub struct LsArgs {
    /// Only the sessions of this project: its folder under projects/ by name
    /// (`-home-dev-webapp`) or path, or the working directory Claude Code recorded.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    /// Order of sessions (and of projects, by their first session): newest, largest or
    /// longest first.
    #[arg(long, value_enum, default_value_t = SortKey::Time)]
    pub sort: SortKey,
    /// Show at most N sessions (after sorting).
    #[arg(short = 'l', long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only sessions modified at or after this time (a date such as 2026-12-01, UTC, or an
    /// age such as 2h, 7d).
    #[arg(long, value_name = "TIME", value_parser = super::args::parse_when)]
    pub since: Option<String>,
    /// Report format: `json` prints an array of sessions (see README for the fields).
    #[command(flatten)]
    pub format: super::args::FormatArgs,
    /// Print nothing but errors: the exit status says whether the listing worked (a filter
    /// that matches no project is exit 2).
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

/// `ls --sort`.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Most recently modified first.
    Time,
    /// Largest first.
    Size,
    /// Most turns first.
    Turns,
}

/// One listed session (the `--json` shape is documented in the README).
#[derive(Serialize)]
struct Row {
    id: String,
    file: String,
    project_dir: String,
    project: Option<String>,
    records: usize,
    turns: usize,
    bytes: u64,
    first_prompt: String,
    modified: Option<String>,
    live: Option<String>,
    /// The context count now (`cchist context`'s `tokens`) and its percent of the window.
    context_tokens: u64,
    context_percent: Option<f64>,
    #[serde(skip)]
    context: String,
}

pub fn run(args: LsArgs) -> anyhow::Result<ExitStatus> {
    super::print::set_quiet(args.quiet);
    let projects = layout::projects_dir(&super::target::config_root()?);
    let mut sessions = layout::list_sessions(&projects)?;
    let any_sessions = !sessions.is_empty();
    if let Some(folder) = args
        .project
        .as_deref()
        .and_then(|p| layout::named_project_folder(&projects, p))
    {
        sessions.retain(|s| s.project_dir == folder);
    } else if let Some(p) = &args.project {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let want = abs.to_string_lossy().into_owned();
        let folder = layout::project_folder_name(&want);
        sessions.retain(|s| {
            s.project_dir
                .file_name()
                .is_some_and(|n| n == folder.as_str())
                || layout::first_cwd(&s.path).as_deref() == Some(want.as_str())
        });
    }
    if let (Some(p), true) = (&args.project, any_sessions && sessions.is_empty()) {
        // A project that matches nothing is a mistake (a name without its `-home-…` prefix),
        // not an empty result: say which projects there are.
        let mut names: Vec<String> = std::fs::read_dir(&projects)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let more = names.len().saturating_sub(10);
        names.truncate(10);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        anyhow::bail!(
            "--project {}: no such project under {}; there are: {}{more} (a folder name, a path, or the working directory Claude Code recorded)",
            p.display(),
            projects.display(),
            names.join(", ")
        );
    }
    if let Some(t) = &args.since {
        sessions.retain(|s| {
            std::fs::metadata(&s.path)
                .and_then(|m| m.modified())
                .is_ok_and(|m| cchist::io::clock::file_stamp(m).as_str() >= t.as_str())
        });
    }
    // The environment and user settings once (a project's own settings are `context`'s).
    let o = super::context::overrides(None);
    let mut rows: Vec<Row> = sessions
        .par_iter()
        .filter_map(|s| describe(s, &o).ok())
        .collect();
    // Sort the sessions, then group them by project in the order each project first appears,
    // so every project is listed once and its best session leads it.
    match args.sort {
        SortKey::Time => rows.sort_by(|a, b| b.modified.cmp(&a.modified)),
        SortKey::Size => rows.sort_by_key(|r| std::cmp::Reverse(r.bytes)),
        SortKey::Turns => rows.sort_by_key(|r| std::cmp::Reverse(r.turns)),
    }
    let total = rows.len();
    if let Some(n) = args.limit {
        rows.truncate(n);
    }
    let mut order: Vec<&str> = Vec::new();
    for r in &rows {
        if !order.contains(&r.project_dir.as_str()) {
            order.push(&r.project_dir);
        }
    }
    let rank = |d: &str| order.iter().position(|o| *o == d).unwrap_or(usize::MAX);
    let mut idx: Vec<usize> = (0..rows.len()).collect();
    idx.sort_by_key(|&i| rank(&rows[i].project_dir)); // stable: keeps the session order
    let rows: Vec<Row> = {
        let mut slots: Vec<Option<Row>> = rows.into_iter().map(Some).collect();
        idx.iter().filter_map(|&i| slots[i].take()).collect()
    };
    let mut out = std::io::stdout().lock();
    if args.format.json() {
        out.write_all(super::print::shown_json(&rows)?.as_bytes())?;
        return Ok(ExitStatus::Ok);
    }
    if super::print::quiet() {
        return Ok(ExitStatus::Ok);
    }
    if rows.is_empty() {
        say!("cchist: no sessions under {}", projects.display());
        return Ok(ExitStatus::Ok);
    }
    let width = super::print::terminal_width();
    let mut i = 0;
    while i < rows.len() {
        let dir = &rows[i].project_dir;
        let group: Vec<&Row> = rows[i..]
            .iter()
            .take_while(|r| &r.project_dir == dir)
            .collect();
        i += group.len();
        let bytes: u64 = group.iter().map(|r| r.bytes).sum();
        let name = group
            .iter()
            .find_map(|r| r.project.as_deref())
            .unwrap_or(dir);
        // The recorded cwd may hold a token (a folder named after one): redacted, as the
        // JSON view has it.
        let name = super::print::shown_text(name);
        let name = super::print::safe(&name);
        writeln!(
            out,
            "{name}  ({} session{}, {})",
            group.len(),
            if group.len() == 1 { "" } else { "s" },
            human_bytes(bytes)
        )?;
        for r in group {
            let when = r
                .modified
                .as_deref()
                .map(super::print::local_time)
                .unwrap_or_else(|| "?".into());
            let head = format!(
                "  {:<8} {when:<23} {:>4} {} {:>9} {:>8}{}",
                r.id.get(..8).unwrap_or(&r.id),
                r.turns,
                if r.turns == 1 { "turn " } else { "turns" },
                human_bytes(r.bytes),
                r.context,
                if r.live.is_some() { "  LIVE" } else { "" },
            );
            let room = width.map_or(usize::MAX, |w| w.saturating_sub(head.chars().count() + 2));
            // Cut by display width: a CJK prompt cut by characters would wrap the row.
            let line = match width {
                // No room for the prompt: the row itself is cut to the terminal (a narrow one
                // does not fit every column), never wrapped.
                Some(w) if room < 6 => super::print::fit(&head, w),
                _ => {
                    let prompt = turns::shorten(&r.first_prompt, usize::MAX);
                    format!("{head}  {}", super::print::fit(&prompt, room))
                }
            };
            writeln!(out, "{}", super::print::safe(&line))?;
        }
    }
    if total > rows.len() {
        say!("cchist: {} of {total} sessions shown (--limit)", rows.len());
    }
    Ok(ExitStatus::Ok)
}

fn describe(s: &SessionFile, o: &cchist::transcript::context::Overrides) -> anyhow::Result<Row> {
    let f = input::open(&s.path)?;
    let records: Vec<Record> = framing::lines(&f.data, 1).map(Record::from_line).collect();
    let n = records.len();
    let mut session = Session::new(records);
    let turns = session.turns();
    let first_prompt = turns
        .iter()
        .filter_map(|t| {
            session.records[t.prompt]
                .value()
                .ok()
                .map(|v| turns::readable_prompt(&turns::message_text(v)))
        })
        .find(|p| !p.is_empty())
        .map(|t| turns::shorten(&super::print::shown_text(&t), 200))
        .unwrap_or_default();
    let modified = f.meta.modified().ok().map(cchist::io::clock::rfc3339);
    let m = super::context::measure(&mut session, o);
    let tokens = m.timeline.tokens();
    Ok(Row {
        id: s.id.clone(),
        file: s.path.display().to_string(),
        project_dir: s.project_dir.display().to_string(),
        project: layout::first_cwd(&s.path),
        records: n,
        turns: turns.len(),
        bytes: f.meta.len(),
        first_prompt,
        modified,
        live: layout::liveness(s),
        context_tokens: tokens,
        context_percent: m.limits.percent(tokens).map(|p| (p * 10.0).round() / 10.0),
        context: super::context::column(tokens, &m.limits),
    })
}
