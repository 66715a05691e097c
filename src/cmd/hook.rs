//! `cchist hook`: run as a Claude Code hook (one event, JSON on stdin); `cchist hook
//! install|uninstall|status` (in `hook_install.rs`): cchist's entries in settings.json and
//! what the hooks did.
//!
//! Every run appends one line to `$CLAUDE_CONFIG_DIR/cchist/hook.log`. Exit status: 0, except
//! 1 when a SessionEnd run fails (the CLI shows exit 1 on its stderr; nothing else would show
//! it) or any run fails under `--strict`. Never 2 — Claude Code treats exit 2 of Stop and
//! PreCompact as "block" and feeds cchist's error to the model — unless a history manager
//! fails under `[hook] block_on_error = true`, which asks for exactly that.

use super::print::say;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use cchist::claude::hook::{self, Fence, HookEvent, HookInput, Refusal, TurnWait};
use cchist::claude::hook_command;
use cchist::claude::hook_log::{self, Fired, LogLine};
use cchist::claude::layout::SessionFile;
use cchist::claude::rewrite::{self, MutateOptions, Written};
use cchist::engine::config::{self, ApplyAt, HookPolicy, PipelineFile, StopAction};
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::engine::runner::{self, Mode};
use cchist::error::{ExitStatus, Origin};
use cchist::io::framing;
use cchist::io::input::Input;
use cchist::io::output::{Sink, SpanWriter};
use cchist::stages;
use cchist::stages::edit::{EditStage, Op, OpsDoc};
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
    /// A line for the user (printed as the Stop hook's `systemMessage`).
    message: Option<String>,
    /// Exit 2 (`block_on_error`): Claude Code feeds `detail` to the model.
    block: bool,
}

impl Done {
    fn new(outcome: &'static str, detail: impl Into<String>) -> Done {
        Done {
            outcome,
            detail: detail.into(),
            message: None,
            block: false,
        }
    }

    fn telling(mut self, message: impl Into<String>) -> Done {
        self.message = Some(message.into());
        self
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
        event: inp.hook_event_name.name().to_string(),
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
    if let Ok(Done { block: true, .. }) = &result {
        // Claude Code reads a blocking Stop hook's stderr and gives it to the model.
        say!(
            "cchist hook ({}): {}",
            line.event,
            cchist::stages::redact::shown_text(&detail)
        );
        return ExitStatus::Error;
    }
    if let Ok(Done {
        message: Some(m), ..
    }) = &result
    {
        println!("{}", json!({ "systemMessage": m }));
    }
    if !line.is_failure() {
        return ExitStatus::Ok;
    }
    say!(
        "cchist hook ({}): {outcome}: {}",
        line.event,
        cchist::stages::redact::shown_text(&detail)
    );
    if strict || inp.hook_event_name == HookEvent::SessionEnd {
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
    match &inp.hook_event_name {
        HookEvent::SessionEnd => session_end(inp, spec, &fence),
        HookEvent::PreCompact => pre_compact(inp, spec, &fence),
        HookEvent::SessionStart => session_start(inp, spec, &fence),
        HookEvent::Stop => stop(inp, spec, &fence),
        HookEvent::PostCompact => post_compact(inp, spec, &fence),
        other @ (HookEvent::Other(_) | HookEvent::Missing) => Ok(Done::new(
            "skipped",
            format!("event {:?}: nothing to do", other.name()),
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
    let paths: Vec<&std::path::Path> = files.iter().map(|m| m.path.as_path()).collect();
    let seed = runner::known_of_files(&file.pipeline, &paths);
    for m in &files {
        let rel = m.path.file_name().map(Into::into).unwrap_or_default();
        let input = Input::File {
            path: m.path.clone(),
            rel,
        };
        match runner::run_one_known(&file.pipeline, &input, &mode, &seed) {
            Ok(r) => changed += usize::from(r.changed),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    let mut detail = format!("{} files, {changed} changed", files.len());
    // After the pipeline: what the queued edits cut is then redacted in their backup too.
    if let Some(q) = apply_queued(inp, spec, &transcript)? {
        detail = format!("{detail}; {q}");
    }
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
    // Its latest compaction summary, saved (redacted) at PostCompact.
    let root = cchist::claude::layout::config_root()?;
    let project = project_folder(&path);
    let memory = cchist::claude::memory::latest_of(&root, &project, &prev.id);
    let Some(m) = memory else {
        return Ok(Done::new("ok", format!("digest of {}", prev.id)));
    };
    let text = std::fs::read_to_string(&m.path)
        .with_context(|| format!("reading {}", m.path.display()))?;
    println!(
        "\nIts latest compaction summary (saved by cchist, {}):\n{}",
        m.stamp,
        text.trim_end()
    );
    Ok(Done::new(
        "ok",
        format!("digest of {} with its saved summary {}", prev.id, m.stamp),
    ))
}

fn stop(inp: &HookInput, spec: &str, fence: &Fence) -> anyhow::Result<Done> {
    // `stop_hook_active` (another hook made the model continue) is no reason to skip: this
    // hook never blocks, and the state below keeps a threshold from firing twice.
    let (file, policy) = load(spec)?;
    if !policy.acts_on_stop() {
        return Ok(Done::new(
            "skipped",
            "no turn-count rule nor history manager in [hook]",
        ));
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
    if policy.action == StopAction::Command {
        let done = history_manager(inp, file, &policy, turn, &path, &root, &held)?;
        fired.record(turn)?;
        return Ok(done);
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
        // Handled above, before `fit` is resolved.
        StopAction::Command => bail!("[hook] action = \"command\" reached the fork policies"),
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
    let s = session_file(path);
    let opts = MutateOptions {
        fork: true,
        ..Default::default()
    };
    match rewrite::mutate(&s, &p, opts)? {
        (_, Written::Forked { id, .. }) => Ok(id),
        (_, other) => bail!("the fork was not written ({other:?})"),
    }
}

/// `action = "command"`: run the user's history manager on the complete turn and apply what
/// it answers to a fork (or queue it for SessionEnd); any failure changes nothing and is told
/// to the user, without quoting the command's output.
fn history_manager(
    inp: &HookInput,
    file: PipelineFile,
    policy: &HookPolicy,
    turn: usize,
    path: &Path,
    root: &Path,
    held: &str,
) -> anyhow::Result<Done> {
    let argv = &policy
        .command
        .as_ref()
        .context("[hook] action = \"command\" without a command")?
        .0;
    let data = hook::read_bounded(path)?;
    let req = hook_command::Request {
        event: if policy.is_post_turn() {
            "PostTurn"
        } else {
            "TurnCount"
        },
        session_id: inp.session_id.clone(),
        transcript_path: path.to_path_buf(),
        cwd: inp.cwd.clone(),
        turns: hook_command::turn_uuids(&data),
        recent: policy.recent,
    };
    // The manager may call cchist itself (the shipped example does): the same binary.
    let exe = std::env::current_exe()
        .map(|p| vec![("CCHIST".to_string(), p.to_string_lossy().into_owned())])
        .unwrap_or_default();
    let timeout = std::time::Duration::from_millis(policy.command_timeout_ms);
    let failed = |why: String| {
        let mut d = Done::new("failed", format!("turn {turn}: history manager: {why}")).telling(
            format!(
                "cchist: your history manager failed at turn {turn}: {why}. This session is unchanged (`cchist hook status` shows the log)."
            ),
        );
        d.block = policy.block_on_error;
        d
    };
    let answer = match hook_command::run(argv, &req, inp.cwd.as_deref(), timeout, &exe) {
        Ok(None) => {
            return Ok(Done::new(
                "ok",
                format!("turn {turn}: history manager: nothing to do ({held})"),
            ))
        }
        Ok(Some(a)) => a,
        Err(f) => return Ok(failed(f.to_string())),
    };
    // Every uuid it names must be in the session now (and, queued, still at its end).
    let s = Session::new(framing::lines(&data, 1).map(Record::from_line).collect());
    if let Some(u) = hook_command::named_uuids(&answer.doc)
        .into_iter()
        .find(|u| !s.by_uuid.contains_key(u))
    {
        return Ok(failed(format!(
            "its document names uuid {u}, which is not in this session; nothing applied"
        )));
    }
    drop(s);
    match policy.apply {
        ApplyAt::Fork => match edit_fork(file, path, answer.doc.operations) {
            Ok(id) => Ok(Done::new(
                "fired",
                format!("turn {turn}: history manager: forked {id} ({held})"),
            )
            .telling(format!(
                "cchist: your history manager edited this session at turn {turn} (this session is unchanged); the edited copy, redacted, is ready: claude --resume {id}"
            ))),
            Err(e) => Ok(failed(format!("{e:#}"))),
        },
        ApplyAt::SessionEnd => {
            let n = hook_log::queue_push(root, &inp.session_id, &answer.text)?;
            Ok(Done::new(
                "fired",
                format!("turn {turn}: history manager: queued for SessionEnd ({n} queued; {held})"),
            )
            .telling(format!(
                "cchist: your history manager's edit (turn {turn}) is queued; it is applied to this session when it ends, then `claude --resume {}` shows it",
                inp.session_id
            )))
        }
    }
}

/// The pipeline a history manager's edit goes through: the edit, the hook pipeline's stages
/// (redaction of what the manager wrote too), then relink unless the pipeline ends with it.
fn edit_pipeline(file: PipelineFile, ops: Vec<Op>) -> anyhow::Result<Pipeline> {
    let mut list: Vec<Box<dyn stages::Stage>> = vec![Box::new(EditStage::new(ops))];
    list.extend(file.pipeline.stages);
    if list.last().is_none_or(|s| s.name() != "relink") {
        list.push((stages::relink::DEF.build)(toml::Table::new())?);
    }
    Ok(Pipeline::new(
        list,
        OnInvalid::Keep,
        "history manager edit".into(),
    ))
}

fn session_file(path: &Path) -> SessionFile {
    SessionFile {
        id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        project_dir: path.parent().map(PathBuf::from).unwrap_or_default(),
    }
}

fn edit_fork(file: PipelineFile, path: &Path, ops: Vec<Op>) -> anyhow::Result<String> {
    let p = edit_pipeline(file, ops)?;
    let opts = MutateOptions {
        fork: true,
        ..Default::default()
    };
    match rewrite::mutate(&session_file(path), &p, opts)? {
        (_, Written::Forked { id, .. }) => Ok(id),
        (_, other) => bail!("the fork was not written ({other:?})"),
    }
}

/// SessionEnd: apply the documents queued by `apply = "session-end"`, each all or nothing, in
/// place (the session has ended: nothing appends to it any more). Returns what to log.
fn apply_queued(inp: &HookInput, spec: &str, path: &Path) -> anyhow::Result<Option<String>> {
    let root = cchist::claude::layout::config_root()?;
    let docs = hook_log::queue_take(&root, &inp.session_id)?;
    if docs.is_empty() {
        return Ok(None);
    }
    let (mut applied, mut failed) = (0, Vec::new());
    for (i, text) in docs.iter().enumerate() {
        let doc = match OpsDoc::parse(text) {
            Ok(d) => d,
            Err(e) => {
                failed.push(format!("queued document {}: {e}", i + 1));
                continue;
            }
        };
        let data = hook::read_bounded(path)?;
        let s = Session::new(framing::lines(&data, 1).map(Record::from_line).collect());
        if let Some(u) = hook_command::named_uuids(&doc)
            .into_iter()
            .find(|u| !s.by_uuid.contains_key(u))
        {
            failed.push(format!(
                "queued document {}: uuid {u} is no longer in the session; not applied",
                i + 1
            ));
            continue;
        }
        drop(s);
        let (file, _) = load(spec)?;
        let p = edit_pipeline(file, doc.operations)?;
        let opts = MutateOptions {
            force: true,
            ..Default::default()
        };
        match rewrite::mutate(&session_file(path), &p, opts) {
            Ok(_) => applied += 1,
            Err(e) => failed.push(format!("queued document {}: {e}", i + 1)),
        }
    }
    if failed.is_empty() {
        Ok(Some(format!("{applied} queued edits applied")))
    } else {
        bail!("{applied} queued edits applied; {}", failed.join("; "))
    }
}

/// The project folder a transcript is in, as named under `projects/`.
fn project_folder(transcript: &Path) -> String {
    transcript
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// PostCompact: save the compaction summary, redacted by the pipeline (knowing the secrets the
/// session's files show, so a restated value is caught too) and by the default rules, as the
/// project's memory. Claude Code shows PostCompact output only to the user: one line.
fn post_compact(inp: &HookInput, spec: &str, fence: &Fence) -> anyhow::Result<Done> {
    let (file, policy) = load(spec)?;
    let summary = match inp.compact_summary.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => s,
        _ => return Ok(Done::new("skipped", "no compact_summary in the input")),
    };
    let transcript = match fence.transcript(inp.transcript()?) {
        Ok(p) => p,
        Err(Refusal::Missing) => return Ok(Done::new("skipped", "no transcript on disk")),
        Err(Refusal::Outside(why)) => return Ok(Done::new("refused", why)),
    };
    let (files, _) = fence.members(&transcript);
    let paths: Vec<&Path> = files.iter().map(|m| m.path.as_path()).collect();
    let seed = runner::known_of_files(&file.pipeline, &paths);
    let origin = Origin::file(&transcript);
    let text = match file
        .pipeline
        .run_text_known(summary.as_bytes(), &origin, &seed)?
    {
        (Some(changed), _) => String::from_utf8_lossy(&changed).into_owned(),
        (None, _) => summary.to_string(),
    };
    let text = cchist::stages::redact::shown_text(&text).into_owned() + "\n";
    let root = cchist::claude::layout::config_root()?;
    let stamp = cchist::io::clock::file_stamp(std::time::SystemTime::now());
    let project = project_folder(&transcript);
    let saved = cchist::claude::memory::save(
        &root,
        &project,
        &inp.session_id,
        &stamp,
        &text,
        policy.memory_keep.max(1),
    )?;
    let trigger = inp.trigger.as_deref().unwrap_or("?");
    // Claude Code 2.1.328 appends PostCompact stdout as text to the `/compact` output (the
    // user sees it; the transcript keeps it, so a resume sends it to the model): one plain
    // line, a path and no content.
    println!(
        "cchist: compaction summary saved (redacted) as project memory: {}",
        saved.display()
    );
    Ok(Done::new(
        "ok",
        format!("{trigger} compaction summary saved as {stamp}"),
    ))
}
