//! What `cchist hook` does per event ([`handle`]), as a typed [`Outcome`]: the line the log
//! gets, what goes to stdout (a digest, the PostCompact line), the `systemMessage` for the
//! user and whether to block. The binary reads stdin, logs and picks the exit status; the table
//! of events is in [`crate::claude::hook`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::claude::hook::{self, Fence, HookEvent, HookInput, Refusal, TurnWait};
use crate::claude::hook_command;
use crate::claude::hook_log::{self, Fired};
use crate::claude::layout::SessionFile;
use crate::claude::rewrite::{self, MutateOptions, Written};
use crate::engine::config::{self, ApplyAt, HookPolicy, PipelineFile, StopAction};
use crate::engine::pipeline::{OnInvalid, Pipeline};
use crate::engine::runner::{self, Mode};
use crate::error::{Error, Origin, Result};
use crate::io::framing;
use crate::io::output::{Sink, SpanWriter};
use crate::stages;
use crate::stages::edit::{EditStage, Op, OpsDoc};
use crate::transcript::record::Record;
use crate::transcript::session::Session;

/// `return Err(Error::Other(format!(…)))`.
macro_rules! bail_out {
    ($($arg:tt)*) => {
        return Err(Error::Other(format!($($arg)*)))
    };
}

/// Finds the auto-compact threshold, in tokens, of the session at a path (`fit = "auto"`).
pub type AutoFit<'a> = dyn Fn(&Path) -> Result<u64> + 'a;

/// How a run ended, as the log says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutcomeKind {
    /// Done.
    Ok,
    /// A Stop policy acted (a fork, a notice, a history manager's edit).
    Fired,
    /// Nothing to do.
    Skipped,
    /// The fence refused a path.
    Refused,
    /// The transcript did not hold the turn in time.
    Incomplete,
    /// It failed (a history manager's failure: nothing changed).
    Failed,
}

impl OutcomeKind {
    /// The word the log uses.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Ok => "ok",
            OutcomeKind::Fired => "fired",
            OutcomeKind::Skipped => "skipped",
            OutcomeKind::Refused => "refused",
            OutcomeKind::Incomplete => "incomplete",
            OutcomeKind::Failed => "failed",
        }
    }
}

/// What one run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How it ended.
    pub kind: OutcomeKind,
    /// What happened, in a few words (never transcript content).
    pub detail: String,
    /// Text for stdout: a digest (PreCompact, SessionStart) or the PostCompact line.
    pub stdout: Option<String>,
    /// A line for the user (the Stop hook's `systemMessage`).
    pub message: Option<String>,
    /// Exit 2 (`block_on_error`): Claude Code gives `detail` to the model.
    pub block: bool,
}

impl Outcome {
    fn new(kind: OutcomeKind, detail: impl Into<String>) -> Outcome {
        Outcome {
            kind,
            detail: detail.into(),
            stdout: None,
            message: None,
            block: false,
        }
    }

    fn telling(mut self, message: impl Into<String>) -> Outcome {
        self.message = Some(message.into());
        self
    }

    fn printing(mut self, text: impl Into<String>) -> Outcome {
        self.stdout = Some(text.into());
        self
    }
}

/// Act on one hook event as the pipeline `spec` (a shipped name or a file) and its `[hook]`
/// table say; `auto_fit` finds the auto-compact threshold of a session (`fit = "auto"`; the
/// binary's `context` reads the settings it depends on).
pub fn handle(inp: &HookInput, spec: &str, auto_fit: &AutoFit<'_>) -> Result<Outcome> {
    let fence = Fence::of_config_root()?;
    match &inp.hook_event_name {
        HookEvent::SessionEnd => session_end(inp, spec, &fence),
        HookEvent::PreCompact => pre_compact(inp, spec, &fence),
        HookEvent::SessionStart => session_start(inp, spec, &fence),
        HookEvent::Stop => stop(inp, spec, &fence, auto_fit),
        HookEvent::PostCompact => post_compact(inp, spec, &fence),
        other @ (HookEvent::Other(_) | HookEvent::Missing) => Ok(Outcome::new(
            OutcomeKind::Skipped,
            format!("event {:?}: nothing to do", other.name()),
        )),
    }
}

fn load(spec: &str) -> Result<(PipelineFile, HookPolicy)> {
    let file = config::load_spec(spec)?;
    let policy = file.hook.clone();
    Ok((file, policy))
}

fn session_end(inp: &HookInput, spec: &str, fence: &Fence) -> Result<Outcome> {
    let (file, _) = load(spec)?;
    let transcript = match fence.main_transcript(inp.transcript()?) {
        Ok(p) => p,
        Err(Refusal::Missing) => {
            return Ok(Outcome::new(OutcomeKind::Skipped, "no transcript on disk"))
        }
        Err(Refusal::Outside(why)) => return Ok(Outcome::new(OutcomeKind::Refused, why)),
    };
    let mode = Mode::InPlace {
        backup: None,
        touch: false,
        break_links: false,
    };
    let (files, refused) = fence.members(&transcript);
    let (mut failures, mut changed) = (Vec::new(), 0);
    // One set of known secrets for the whole session: what one file showed is replaced in all.
    let paths: Vec<(&std::path::Path, crate::io::input::Treatment)> = files
        .iter()
        .map(|m| (m.path.as_path(), m.part.treatment()))
        .collect();
    let seed = runner::known_of_files(&file.pipeline, &paths);
    let session = crate::claude::layout::SessionFile::from_path(&transcript);
    for m in &files {
        let rel = m.path.file_name().map(Into::into).unwrap_or_default();
        let input = crate::claude::layout::member_input(m.clone(), rel, &session);
        match runner::run_one_known(&file.pipeline, &input, &mode, &seed) {
            Ok(r) => changed += usize::from(r.changed),
            Err(e) => failures.push(e.to_string()),
        }
    }
    if !failures.is_empty() {
        bail_out!("{}", failures.join("; "));
    }
    let mut detail = format!("{} files, {changed} changed", files.len());
    // After the pipeline: what the queued edits cut is then redacted in their backup too.
    if let Some(q) = apply_queued(inp, spec, &transcript)? {
        detail = format!("{detail}; {q}");
    }
    if !refused.is_empty() {
        return Ok(Outcome::new(
            OutcomeKind::Refused,
            format!("{detail}; refused: {}", refused.join("; ")),
        ));
    }
    Ok(Outcome::new(OutcomeKind::Ok, detail))
}

/// A digest of the session at `path` after the pipeline ran over it (so it holds no secret the
/// pipeline redacts), and the digest's text through the pipeline's text transformation too.
fn redacted_digest(pipeline: &Pipeline, path: &Path) -> Result<String> {
    let data = hook::read_bounded(path)?;
    let origin = Origin::file(path);
    let mut out = Vec::with_capacity(data.len());
    let mut sink = SpanWriter::new(&mut out);
    pipeline.run_buffer(&data, &origin, &mut sink)?;
    sink.finish()
        .map_err(|e| Error::io(&origin, "build the digest", e))?;
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

fn pre_compact(inp: &HookInput, spec: &str, fence: &Fence) -> Result<Outcome> {
    let (file, _) = load(spec)?;
    let path = match fence.main_transcript(inp.transcript()?) {
        Ok(p) => p,
        Err(why) => return Ok(Outcome::new(OutcomeKind::Refused, why.to_string())),
    };
    let d = redacted_digest(&file.pipeline, &path)?;
    Ok(
        Outcome::new(OutcomeKind::Ok, "digest printed").printing(format!(
            "When you summarize, keep these facts from the transcript (collected by cchist):\n{d}"
        )),
    )
}

fn session_start(inp: &HookInput, spec: &str, fence: &Fence) -> Result<Outcome> {
    let (file, policy) = load(spec)?;
    if !policy.session_start_digest {
        return Ok(Outcome::new(
            OutcomeKind::Skipped,
            "session_start_digest is off",
        ));
    }
    if inp.source.as_deref() == Some("compact") && !policy.session_start_on_compact {
        return Ok(Outcome::new(
            OutcomeKind::Skipped,
            "after compaction (session_start_on_compact is off)",
        ));
    }
    let transcript = inp.transcript()?;
    let Some(dir) = transcript.parent() else {
        return Ok(Outcome::new(OutcomeKind::Skipped, "no project folder"));
    };
    let mut sessions = crate::claude::layout::sessions_in(dir).unwrap_or_default();
    sessions.retain(|s| s.id != inp.session_id && s.path != transcript);
    let previous = sessions
        .into_iter()
        .max_by_key(|s| std::fs::metadata(&s.path).and_then(|m| m.modified()).ok());
    let Some(prev) = previous else {
        return Ok(Outcome::new(
            OutcomeKind::Skipped,
            "no previous session in this project",
        ));
    };
    let path = match fence.transcript(&prev.path) {
        Ok(p) => p,
        Err(why) => return Ok(Outcome::new(OutcomeKind::Refused, why.to_string())),
    };
    let d = redacted_digest(&file.pipeline, &path)?;
    let mut printed = format!(
        "The previous session of this project ({}), digested by cchist:\n{d}",
        prev.id
    );
    // Its latest compaction summary, saved (redacted) at PostCompact.
    let root = crate::claude::layout::config_root()?;
    let project = project_folder(&path);
    let memory = crate::claude::memory::latest_of(&root, &project, &prev.id);
    let Some(m) = memory else {
        return Ok(
            Outcome::new(OutcomeKind::Ok, format!("digest of {}", prev.id)).printing(printed),
        );
    };
    let text = std::fs::read_to_string(&m.path)
        .map_err(|e| Error::io(&Origin::file(&m.path), "read", e))?;
    printed.push_str(&format!(
        "\n\nIts latest compaction summary (saved by cchist, {}):\n{}",
        m.stamp,
        text.trim_end()
    ));
    Ok(Outcome::new(
        OutcomeKind::Ok,
        format!("digest of {} with its saved summary {}", prev.id, m.stamp),
    )
    .printing(printed))
}

/// Why `inp`'s `session_id` is not taken, if it is not: an id names state files and is
/// printed to the user, so only `[A-Za-z0-9_-]{1,128}` equal to the transcript's file stem is
/// (the reason never repeats the id; the log redacts it anyway).
fn not_the_session(inp: &HookInput) -> Option<String> {
    let id = inp.session_id.as_str();
    let plain = (1..=128).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !plain {
        return Some(
            "session_id is not a session id (letters, digits, - and _, at most 128); nothing done"
                .into(),
        );
    }
    let stem = inp
        .transcript_path
        .as_deref()
        .and_then(Path::file_stem)
        .map(|s| s.to_string_lossy().into_owned());
    (stem.as_deref() != Some(id)).then(|| {
        "session_id is not the id of the transcript the input names (its file name); nothing done"
            .into()
    })
}

fn stop(inp: &HookInput, spec: &str, fence: &Fence, auto_fit: &AutoFit<'_>) -> Result<Outcome> {
    if let Some(why) = not_the_session(inp) {
        return Ok(Outcome::new(OutcomeKind::Refused, why));
    }
    // `stop_hook_active` (another hook made the model continue) is no reason to skip: this
    // hook never blocks, and the state below keeps a threshold from firing twice.
    let (file, policy) = load(spec)?;
    if !policy.acts_on_stop() {
        return Ok(Outcome::new(
            OutcomeKind::Skipped,
            "no turn-count rule nor history manager in [hook]",
        ));
    }
    // The turn's number is known once its prompt is on disk: a turn that triggers nothing
    // needs no wait for its answer.
    if let (Some(pid), Ok(path)) = (
        inp.prompt_id.as_deref(),
        fence.main_transcript(inp.transcript()?),
    ) {
        let known = hook::read_bounded(&path)
            .ok()
            .and_then(|data| hook::turn_of_prompt(&data, pid));
        if let Some(turn) = known.filter(|&t| !policy.triggers(t)) {
            return Ok(Outcome::new(
                OutcomeKind::Ok,
                format!("turn {turn}: no threshold"),
            ));
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
            return Ok(Outcome::new(
                OutcomeKind::Incomplete,
                format!("{why}; nothing fired"),
            ))
        }
        TurnWait::Refused(why) => return Ok(Outcome::new(OutcomeKind::Refused, why)),
    };
    // How long the transcript took to hold the turn after the hook started: the wait's reason.
    let held = format!("complete after {} ms", held_after.as_millis());
    if !policy.triggers(turn) {
        return Ok(Outcome::new(
            OutcomeKind::Ok,
            format!("turn {turn}: no threshold ({held})"),
        ));
    }
    let root = crate::claude::layout::config_root()?;
    let mut fired = Fired::lock(&root, &inp.session_id)?;
    if fired.has(turn) {
        return Ok(Outcome::new(
            OutcomeKind::Skipped,
            format!("turn {turn}: already fired in this session"),
        ));
    }
    if policy.action == StopAction::Command {
        let done = history_manager(inp, file, &policy, turn, &path, &root, &held, fence)?;
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
        StopAction::Command => bail_out!("[hook] action = \"command\" reached the fork policies"),
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
    Ok(Outcome::new(OutcomeKind::Fired, detail).telling(message))
}

/// Write a compressed fork: summarize-range (all but the last `keep_last` turns), then the
/// hook pipeline's stages (redaction …), then relink unless the pipeline ends with it.
fn fork(file: PipelineFile, path: &Path, opts: toml::Table) -> Result<String> {
    let mut list =
        vec![(stages::summarize::DEF.build)(opts).map_err(|e| Error::Other(e.to_string()))?];
    list.extend(file.pipeline.stages);
    if list.last().is_none_or(|s| s.name() != "relink") {
        list.push(
            (stages::relink::DEF.build)(toml::Table::new())
                .map_err(|e| Error::Other(e.to_string()))?,
        );
    }
    let p = Pipeline::new(list, OnInvalid::Keep, "stop-hook fork".into());
    let s = session_file(path);
    let opts = MutateOptions {
        fork: true,
        ..Default::default()
    };
    match rewrite::mutate(&s, &p, opts)? {
        (_, Written::Forked { id, .. }) => Ok(id),
        (_, other) => bail_out!("the fork was not written ({other:?})"),
    }
}

/// `action = "command"`: run the user's history manager on the complete turn and apply what
/// it answers to a fork (or queue it for SessionEnd); any failure changes nothing and is told
/// to the user, without quoting the command's output.
#[allow(clippy::too_many_arguments)]
fn history_manager(
    inp: &HookInput,
    file: PipelineFile,
    policy: &HookPolicy,
    turn: usize,
    path: &Path,
    root: &Path,
    held: &str,
    fence: &Fence,
) -> Result<Outcome> {
    let argv = &policy
        .command
        .as_ref()
        .ok_or_else(|| Error::Other("[hook] action = \"command\" without a command".into()))?
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
        // A reason may quote the manager's document (a field's value), which may quote the
        // transcript: redacted whole and cut, as the log has it, before the user sees it.
        let why = hook_log::shown_detail(&why);
        let mut d = Outcome::new(OutcomeKind::Failed, format!("turn {turn}: history manager: {why}")).telling(
            format!(
                "cchist: your history manager failed at turn {turn}: {why}. This session is unchanged (`cchist hook status` shows the log)."
            ),
        );
        d.block = policy.block_on_error;
        d
    };
    let answer = match hook_command::run(argv, &req, inp.cwd.as_deref(), timeout, &exe) {
        Ok(None) => {
            return Ok(Outcome::new(
                OutcomeKind::Ok,
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
            Ok(id) => Ok(Outcome::new(OutcomeKind::Fired,
                format!("turn {turn}: history manager: forked {id} ({held})"),
            )
            .telling(format!(
                "cchist: your history manager edited this session at turn {turn} (this session is unchanged); the edited copy, redacted, is ready: claude --resume {id}"
            ))),
            Err(e) => Ok(failed(format!("{e}"))),
        },
        ApplyAt::SessionEnd => {
            // The document waits on disk until the session ends: kept redacted, as the
            // apply would redact what it inserts (and `check --all` scans it).
            let doc = queued_document(file, &answer.text, path, fence)?;
            let n = hook_log::queue_push(root, &inp.session_id, &doc)?;
            Ok(Outcome::new(OutcomeKind::Fired,
                format!("turn {turn}: history manager: queued for SessionEnd ({n} queued; {held})"),
            )
            .telling(format!(
                "cchist: your history manager's edit (turn {turn}) is queued; it is applied to this session when it ends, then `claude --resume {}` shows it",
                inp.session_id
            )))
        }
    }
}

/// A history manager's document as the queue keeps it: every string in it redacted by the
/// hook pipeline's secret stages and the default rules, knowing the secrets the session's
/// files show (a value the manager restates bare is caught too), then as shown text. The
/// document stays valid JSON: strings are redacted one by one, keys and structure kept.
fn queued_document(
    file: PipelineFile,
    text: &str,
    transcript: &Path,
    fence: &Fence,
) -> Result<String> {
    let mut doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::Other(format!("the history manager's document is not JSON: {e}")))?;
    let mut list: Vec<Box<dyn stages::Stage>> = file
        .pipeline
        .stages
        .into_iter()
        .filter(|s| s.secrets() == stages::Secrets::Replaces)
        .collect();
    // The default rules apply below (shown_text); a redact stage of its own finds the
    // session's secrets when the pipeline has none (one scan of the session, not two).
    if list.is_empty() {
        list.push(
            (stages::redact::DEF.build)(toml::Table::new())
                .map_err(|e| Error::Other(e.to_string()))?,
        );
    }
    let p = Pipeline::new(list, OnInvalid::Keep, "queued document".into());
    let (files, _) = fence.members(transcript);
    let paths: Vec<(&Path, crate::io::input::Treatment)> = files
        .iter()
        .map(|m| (m.path.as_path(), m.part.treatment()))
        .collect();
    let seed = runner::known_of_files(&p, &paths);
    let origin = Origin::file(transcript);
    fn walk(
        v: &mut serde_json::Value,
        f: &mut dyn FnMut(&str) -> Result<Option<String>>,
    ) -> Result<()> {
        match v {
            serde_json::Value::String(s) => {
                if let Some(new) = f(s)? {
                    *s = new;
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().try_for_each(|x| walk(x, f))?,
            serde_json::Value::Object(o) => o.values_mut().try_for_each(|x| walk(x, f))?,
            _ => {}
        }
        Ok(())
    }
    walk(&mut doc, &mut |s| {
        let ruled = match p.run_text_known(s.as_bytes(), &origin, &seed)? {
            (Some(t), _) => String::from_utf8_lossy(&t).into_owned(),
            (None, _) => s.to_string(),
        };
        let shown = crate::stages::redact::shown_text(&ruled).into_owned();
        Ok((shown != s).then_some(shown))
    })?;
    Ok(doc.to_string())
}

/// The pipeline a history manager's edit goes through: the edit, the hook pipeline's stages
/// (redaction of what the manager wrote too), then relink unless the pipeline ends with it.
fn edit_pipeline(file: PipelineFile, ops: Vec<Op>) -> Result<Pipeline> {
    let mut list: Vec<Box<dyn stages::Stage>> = vec![Box::new(EditStage::new(ops))];
    list.extend(file.pipeline.stages);
    if list.last().is_none_or(|s| s.name() != "relink") {
        list.push(
            (stages::relink::DEF.build)(toml::Table::new())
                .map_err(|e| Error::Other(e.to_string()))?,
        );
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

fn edit_fork(file: PipelineFile, path: &Path, ops: Vec<Op>) -> Result<String> {
    let p = edit_pipeline(file, ops)?;
    let opts = MutateOptions {
        fork: true,
        ..Default::default()
    };
    match rewrite::mutate(&session_file(path), &p, opts)? {
        (_, Written::Forked { id, .. }) => Ok(id),
        (_, other) => bail_out!("the fork was not written ({other:?})"),
    }
}

/// SessionEnd: apply the documents queued by `apply = "session-end"`, each all or nothing, in
/// place (the session has ended: nothing appends to it any more). Returns what to log.
fn apply_queued(inp: &HookInput, spec: &str, path: &Path) -> Result<Option<String>> {
    let root = crate::claude::layout::config_root()?;
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
        bail_out!("{applied} queued edits applied; {}", failed.join("; "))
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
fn post_compact(inp: &HookInput, spec: &str, fence: &Fence) -> Result<Outcome> {
    let (file, policy) = load(spec)?;
    let summary = match inp.compact_summary.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => s,
        _ => {
            return Ok(Outcome::new(
                OutcomeKind::Skipped,
                "no compact_summary in the input",
            ))
        }
    };
    let transcript = match fence.transcript(inp.transcript()?) {
        Ok(p) => p,
        Err(Refusal::Missing) => {
            return Ok(Outcome::new(OutcomeKind::Skipped, "no transcript on disk"))
        }
        Err(Refusal::Outside(why)) => return Ok(Outcome::new(OutcomeKind::Refused, why)),
    };
    let (files, _) = fence.members(&transcript);
    let paths: Vec<(&Path, crate::io::input::Treatment)> = files
        .iter()
        .map(|m| (m.path.as_path(), m.part.treatment()))
        .collect();
    let seed = runner::known_of_files(&file.pipeline, &paths);
    let origin = Origin::file(&transcript);
    let text = match file
        .pipeline
        .run_text_known(summary.as_bytes(), &origin, &seed)?
    {
        (Some(changed), _) => String::from_utf8_lossy(&changed).into_owned(),
        (None, _) => summary.to_string(),
    };
    let text = crate::stages::redact::shown_text(&text).into_owned() + "\n";
    let root = crate::claude::layout::config_root()?;
    let stamp = crate::io::clock::file_stamp(std::time::SystemTime::now());
    let project = project_folder(&transcript);
    let saved = crate::claude::memory::save(
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
    Ok(Outcome::new(
        OutcomeKind::Ok,
        format!("{trigger} compaction summary saved as {stamp}"),
    )
    .printing(format!(
        "cchist: compaction summary saved (redacted) as project memory: {}",
        saved.display()
    )))
}
