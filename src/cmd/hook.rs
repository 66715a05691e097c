//! `cchist hook`: run as a Claude Code hook (one event, JSON on stdin); `cchist hook
//! install|uninstall|status` (in `hook_install.rs`): cchist's entries in settings.json and
//! what the hooks did.
//!
//! Every run appends one line to `$CLAUDE_CONFIG_DIR/cchist/hook.log`. Exit status: 0, except
//! 1 when a SessionEnd run fails (the CLI shows exit 1 on its stderr; nothing else would show
//! it) or any run fails under `--strict`. Never 2: Claude Code treats exit 2 of Stop and
//! PreCompact as "block" and feeds cchist's error to the model.

use super::print::say;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};
use cchist::claude::hook::{self, Fence, HookInput, Refusal, TurnWait};
use cchist::claude::hook_log::{self, Fired, LogLine};
use cchist::claude::layout::SessionFile;
use cchist::claude::rewrite::{self, MutateOptions, Written};
use cchist::engine::config::{self, HookPolicy, PipelineFile, StopAction};
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::engine::runner::{self, Mode};
use cchist::error::{ExitStatus, Origin};
use cchist::io::framing;
use cchist::io::output::{Sink, SpanWriter};
use cchist::stages;
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use clap::{Args, Subcommand};
use serde_json::json;

use super::hook_install::{self, InstallArgs, StatusArgs, UninstallArgs};

/// `cchist hook` arguments.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: Option<HookAction>,
    /// Pipeline (a shipped name such as `builtin:scrub`, or a file): SessionEnd applies it;
    /// forks and digests go through it; its [hook] table sets Stop and SessionStart policies.
    #[arg(short, long, value_name = "FILE|NAME", default_value = "builtin:scrub")]
    pub pipeline: String,
    /// Exit 1 on any failure (by default only a failing SessionEnd exits 1; other events log
    /// the failure and exit 0, so they never get in Claude Code's way).
    #[arg(long)]
    pub strict: bool,
}

/// `cchist hook` subcommands.
#[derive(Subcommand, Debug)]
pub enum HookAction {
    /// Add cchist's hook entries to Claude Code's settings.json (idempotent, backup kept).
    Install(InstallArgs),
    /// Remove cchist's hook entries from settings.json (all, or those of --event).
    Uninstall(UninstallArgs),
    /// Show the installed hooks, the last runs and failures.
    Status(StatusArgs),
}

pub fn run(a: HookArgs) -> anyhow::Result<ExitStatus> {
    match a.action {
        Some(HookAction::Install(i)) => hook_install::install(i),
        Some(HookAction::Uninstall(u)) => hook_install::uninstall(u),
        Some(HookAction::Status(s)) => hook_install::status(s),
        // Claude Code always pipes the event in: a terminal means a person ran it, who must
        // hear why nothing happens rather than wait (exit 2 cannot reach Claude Code here).
        None if super::plan::stdin_is() == super::plan::StdinIs::Terminal => bail!(
            "`cchist hook` reads the event JSON Claude Code sends on stdin, and stdin is a terminal: Claude Code runs it once installed (`cchist hook install`); to try it, pipe an event in"
        ),
        None => Ok(run_hook(&a.pipeline, a.strict)),
    }
}

/// How one run ended (what the log says).
struct Done {
    outcome: &'static str,
    detail: String,
}

impl Done {
    fn new(outcome: &'static str, detail: impl Into<String>) -> Done {
        Done {
            outcome,
            detail: detail.into(),
        }
    }
}

fn run_hook(spec: &str, strict: bool) -> ExitStatus {
    let start = Instant::now();
    let mut inp = HookInput::default();
    let result = read_input().and_then(|i| {
        inp = i;
        handle(&inp, spec)
    });
    let (outcome, detail) = match &result {
        Ok(d) => (d.outcome, d.detail.clone()),
        Err(e) => ("failed", format!("{e:#}")),
    };
    let line = LogLine {
        time: cchist::io::clock::now(),
        event: if inp.hook_event_name.is_empty() {
            "?".into()
        } else {
            inp.hook_event_name.clone()
        },
        session: inp.session_id.clone(),
        outcome: outcome.into(),
        detail: hook_log::shown_detail(&detail),
        ms: start.elapsed().as_millis() as u64,
    };
    let logged = cchist::claude::layout::config_root()
        .map_err(anyhow::Error::from)
        .and_then(|root| Ok(hook_log::append(&root, &line)?));
    if let Err(e) = logged {
        say!("cchist hook: cannot write the hook log: {e:#}");
    }
    if !line.is_failure() {
        return ExitStatus::Ok;
    }
    say!(
        "cchist hook ({}): {outcome}: {}",
        line.event,
        cchist::stages::redact::shown_text(&detail)
    );
    if strict || inp.hook_event_name == "SessionEnd" {
        ExitStatus::Findings
    } else {
        ExitStatus::Ok
    }
}

fn read_input() -> anyhow::Result<HookInput> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(hook::MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .context("reading the hook input")?;
    if buf.len() as u64 > hook::MAX_INPUT_BYTES {
        bail!(
            "hook input over {} bytes; not what Claude Code sends",
            hook::MAX_INPUT_BYTES
        );
    }
    Ok(HookInput::parse(&buf)?)
}

fn handle(inp: &HookInput, spec: &str) -> anyhow::Result<Done> {
    let fence = Fence::of_config_root()?;
    match inp.hook_event_name.as_str() {
        "SessionEnd" => session_end(inp, spec, &fence),
        "PreCompact" => pre_compact(inp, spec, &fence),
        "SessionStart" => session_start(inp, spec, &fence),
        "Stop" => stop(inp, spec, &fence),
        other => Ok(Done::new(
            "skipped",
            format!("event {other:?}: nothing to do"),
        )),
    }
}

fn load(spec: &str) -> anyhow::Result<(PipelineFile, HookPolicy)> {
    let file = config::load_spec(spec)?;
    let policy = file.hook.clone();
    Ok((file, policy))
}

fn session_end(inp: &HookInput, spec: &str, fence: &Fence) -> anyhow::Result<Done> {
    let (file, _) = load(spec)?;
    let transcript = match fence.transcript(inp.transcript()?) {
        Ok(p) => p,
        Err(Refusal::Missing) => return Ok(Done::new("skipped", "no transcript on disk")),
        Err(Refusal::Outside(why)) => return Ok(Done::new("refused", why)),
    };
    let mode = Mode::InPlace {
        backup: None,
        touch: false,
        break_links: false,
    };
    let (files, refused) = fence.members(&transcript);
    let (mut failures, mut changed) = (Vec::new(), 0);
    // One set of known secrets for the whole session: what one file showed is replaced in all.
    let paths: Vec<(&std::path::Path, cchist::io::input::Treatment)> = files
        .iter()
        .map(|m| (m.path.as_path(), m.part.treatment()))
        .collect();
    let seed = runner::known_of_files(&file.pipeline, &paths);
    let session = SessionFile::from_path(&transcript);
    for m in &files {
        let rel = m.path.file_name().map(Into::into).unwrap_or_default();
        let input = cchist::claude::layout::member_input(m.clone(), rel, &session);
        match runner::run_one_known(&file.pipeline, &input, &mode, &seed) {
            Ok(r) => changed += usize::from(r.changed),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    let detail = format!("{} files, {changed} changed", files.len());
    if !refused.is_empty() {
        return Ok(Done::new(
            "refused",
            format!("{detail}; refused: {}", refused.join("; ")),
        ));
    }
    Ok(Done::new("ok", detail))
}

/// A digest of the session at `path` after the pipeline ran over it (so it holds no secret the
/// pipeline redacts), and the digest's text through the pipeline's text transformation too.
fn redacted_digest(pipeline: &Pipeline, path: &Path) -> anyhow::Result<String> {
    let data = hook::read_bounded(path)?;
    let origin = Origin::file(path);
    let mut out = Vec::with_capacity(data.len());
    let mut sink = SpanWriter::new(&mut out);
    pipeline.run_buffer(&data, &origin, &mut sink)?;
    sink.finish().context("building the digest")?;
    drop(sink);
    let mut s = Session::new(framing::lines(&out, 1).map(Record::from_line).collect());
    let all: BTreeSet<usize> = (0..s.records.len()).collect();
    let d = stages::summarize::digest_body(&mut s, &all);
    let d = match pipeline.run_text(d.as_bytes(), &origin)? {
        (Some(changed), _) => String::from_utf8_lossy(&changed).into_owned(),
        (None, _) => d,
    };
    Ok(d)
}

fn pre_compact(inp: &HookInput, spec: &str, fence: &Fence) -> anyhow::Result<Done> {
    let (file, _) = load(spec)?;
    let path = match fence.transcript(inp.transcript()?) {
        Ok(p) => p,
        Err(why) => return Ok(Done::new("refused", why.to_string())),
    };
    let d = redacted_digest(&file.pipeline, &path)?;
    println!(
        "When you summarize, keep these facts from the transcript (collected by cchist):\n{d}"
    );
    Ok(Done::new("ok", "digest printed"))
}

fn session_start(inp: &HookInput, spec: &str, fence: &Fence) -> anyhow::Result<Done> {
    let (file, policy) = load(spec)?;
    if !policy.session_start_digest {
        return Ok(Done::new("skipped", "session_start_digest is off"));
    }
    if inp.source.as_deref() == Some("compact") && !policy.session_start_on_compact {
        return Ok(Done::new(
            "skipped",
            "after compaction (session_start_on_compact is off)",
        ));
    }
    let transcript = inp.transcript()?;
    let Some(dir) = transcript.parent() else {
        return Ok(Done::new("skipped", "no project folder"));
    };
    let mut sessions = cchist::claude::layout::sessions_in(dir).unwrap_or_default();
    sessions.retain(|s| s.id != inp.session_id && s.path != transcript);
    let previous = sessions
        .into_iter()
        .max_by_key(|s| std::fs::metadata(&s.path).and_then(|m| m.modified()).ok());
    let Some(prev) = previous else {
        return Ok(Done::new("skipped", "no previous session in this project"));
    };
    let path = match fence.transcript(&prev.path) {
        Ok(p) => p,
        Err(why) => return Ok(Done::new("refused", why.to_string())),
    };
    let d = redacted_digest(&file.pipeline, &path)?;
    println!(
        "The previous session of this project ({}), digested by cchist:\n{d}",
        prev.id
    );
    Ok(Done::new("ok", format!("digest of {}", prev.id)))
}

fn stop(inp: &HookInput, spec: &str, fence: &Fence) -> anyhow::Result<Done> {
    // `stop_hook_active` (another hook made the model continue) is no reason to skip: this
    // hook never blocks, and the state below keeps a threshold from firing twice.
    let (file, policy) = load(spec)?;
    if !policy.has_turn_rules() {
        return Ok(Done::new("skipped", "no turn-count rule in [hook]"));
    }
    // The turn's number is known once its prompt is on disk: a turn that triggers nothing
    // needs no wait for its answer.
    if let (Some(pid), Ok(path)) = (
        inp.prompt_id.as_deref(),
        fence.transcript(inp.transcript()?),
    ) {
        let known = hook::read_bounded(&path)
            .ok()
            .and_then(|data| hook::turn_of_prompt(&data, pid));
        if let Some(turn) = known.filter(|&t| !policy.triggers(t)) {
            return Ok(Done::new("ok", format!("turn {turn}: no threshold")));
        }
    }
    let wait = hook::Wait {
        cap: std::time::Duration::from_millis(policy.stop_wait_ms),
        ..hook::Wait::default()
    };
    let (turn, path, held_after) = match hook::wait_for_turn(fence, inp, wait)? {
        TurnWait::Complete {
            turn,
            path,
            held_after,
        } => (turn, path, held_after),
        TurnWait::Incomplete(why) => {
            return Ok(Done::new("incomplete", format!("{why}; nothing fired")))
        }
        TurnWait::Refused(why) => return Ok(Done::new("refused", why)),
    };
    // How long the transcript took to hold the turn after the hook started: the wait's reason.
    let held = format!("complete after {} ms", held_after.as_millis());
    if !policy.triggers(turn) {
        return Ok(Done::new(
            "ok",
            format!("turn {turn}: no threshold ({held})"),
        ));
    }
    let root = cchist::claude::layout::config_root()?;
    let mut fired = Fired::lock(&root, &inp.session_id)?;
    if fired.has(turn) {
        return Ok(Done::new(
            "skipped",
            format!("turn {turn}: already fired in this session"),
        ));
    }
    // `fit = "auto"`: the auto-compact threshold of the session's model, as `context` finds it.
    // A fork cannot go on without it; a notice then says `--fit N`.
    let policy = match (policy.fit, policy.action) {
        (Some(config::Fit::Auto), StopAction::Fork) => policy.with_fit(auto_fit(&path)?),
        (Some(config::Fit::Auto), _) => match auto_fit(&path) {
            Ok(n) => policy.with_fit(n),
            Err(_) => policy,
        },
        _ => policy,
    };
    let (message, detail) = match policy.action {
        StopAction::Notify => (
            format!(
                "cchist: this session has {turn} turns. To continue with less context: cchist summarize-range {} --fork --session {}",
                match (policy.fit, policy.keep_last_steps) {
                    (Some(config::Fit::Tokens(f)), _) => format!("--fit {f}"),
                    (Some(config::Fit::Auto), _) => "--fit N".to_string(),
                    (None, Some(k)) => format!("--keep-last-steps {k}"),
                    (None, None) => format!("--keep-last {}", policy.keep_last),
                },
                inp.session_id
            ),
            format!("turn {turn}: notified ({held})"),
        ),
        StopAction::Fork
            if policy.fit.is_none()
                && policy.keep_last_steps.is_none()
                && turn <= policy.keep_last =>
        (
            format!(
                "cchist: this session has {turn} turns, no more than keep_last = {}: nothing to compress, no copy written",
                policy.keep_last
            ),
            format!("turn {turn}: nothing to compress (keep_last {})", policy.keep_last),
        ),
        StopAction::Fork => {
            let id = fork(file, &path, policy.summarize_options())?;
            (
                format!(
                    "cchist: this session has {turn} turns; a compressed copy ({}, redacted) is ready: claude --resume {id}",
                    policy.kept()
                ),
                format!("turn {turn}: forked {id} ({held})"),
            )
        }
    };
    fired.record(turn)?;
    println!("{}", json!({ "systemMessage": message }));
    Ok(Done::new("fired", detail))
}

/// Write a compressed fork: summarize-range (all but the last `keep_last` turns), then the
/// hook pipeline's stages (redaction …), then relink unless the pipeline ends with it.
/// The auto-compact threshold of the session at `path` (its model, the environment and the
/// settings as Claude Code reads them); an error when the CLI knows none for the model.
fn auto_fit(path: &Path) -> anyhow::Result<u64> {
    let f = cchist::io::input::open(path)?;
    let mut s = cchist::transcript::session::Session::new(
        cchist::io::framing::lines(&f.data, 1)
            .map(cchist::transcript::record::Record::from_line)
            .collect(),
    );
    let cwd = cchist::claude::layout::first_cwd(path).map(std::path::PathBuf::from);
    let m = super::context::measure(&mut s, &super::context::overrides(cwd.as_deref()));
    m.limits.threshold().ok_or_else(|| {
        anyhow::anyhow!(
            "fit = \"auto\": Claude Code does not auto-compact {} sessions here (no known window, or auto-compaction off); set fit to a number of tokens",
            m.limits.model
        )
    })
}

fn fork(file: PipelineFile, path: &Path, opts: toml::Table) -> anyhow::Result<String> {
    let mut list = vec![(stages::summarize::DEF.build)(opts)?];
    list.extend(file.pipeline.stages);
    if list.last().is_none_or(|s| s.name() != "relink") {
        list.push((stages::relink::DEF.build)(toml::Table::new())?);
    }
    let p = Pipeline::new(list, OnInvalid::Keep, "stop-hook fork".into());
    let s = SessionFile::from_path(path);
    let opts = MutateOptions {
        fork: true,
        ..Default::default()
    };
    match rewrite::mutate(&s, &p, opts)? {
        (_, Written::Forked { id, .. }) => Ok(id),
        (_, other) => bail!("the fork was not written ({other:?})"),
    }
}
