//! Arguments resolved into work: which inputs (whole sessions where files are changed), which
//! mode, which live sessions to leave alone, or a fork; then the run and its report.

use super::print::say;
use anyhow::{bail, Context};
use cchist::claude::layout::{self, SessionFile};
use cchist::claude::walk::{self, Filters};
use cchist::engine::pipeline::Pipeline;
use cchist::engine::runner::{self, Mode};
use cchist::error::ExitStatus;
use cchist::io::input::Input;

use super::args::IoArgs;
use super::print::{describe, diff_report, report, summary_table, totals};

/// Expand the path arguments, or fail with a message that says what to do.
pub fn inputs(
    paths: &[std::path::PathBuf],
    include: &[String],
    exclude: &[String],
) -> anyhow::Result<walk::Walk> {
    let filters = Filters::new(include, exclude)?;
    let w = walk::expand(paths, &filters)?;
    // A folder with nothing to process is a mistake (a wrong path, a filter too narrow), not a
    // clean result: say so and fail rather than report success over nothing.
    for p in paths.iter().filter(|p| p.is_dir()) {
        let found = w.inputs.iter().any(|i| match i {
            Input::File { path, .. } => path.starts_with(p),
            Input::Stdin => false,
        }) || w.skipped.iter().any(|(s, _)| s.starts_with(p));
        if !found {
            let filtered = if include.is_empty() && exclude.is_empty() {
                ""
            } else {
                " matching --include/--exclude"
            };
            bail!(
                "no .jsonl files under {}{filtered}: nothing to do — check the path (Claude Code keeps transcripts under ~/.claude/projects)",
                p.display()
            );
        }
    }
    for (p, why) in &w.skipped {
        say!("cchist: skipped {}: {why}", p.display());
    }
    for (p, first) in &w.duplicates {
        say!(
            "cchist: note: {} is the same file as {}; processed once",
            p.display(),
            first.display()
        );
    }
    Ok(w)
}

/// What standard input is, for a command given no path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinIs {
    /// A pipe, socket or non-empty file: read it (ripgrep's rule).
    Data,
    /// A terminal: nobody is going to type a transcript.
    Terminal,
    /// `/dev/null`, another device, an empty file, or closed: nothing to read.
    Nothing,
}

/// What stdin is ([`StdinIs`]).
pub fn stdin_is() -> StdinIs {
    use std::io::IsTerminal;
    use std::os::unix::fs::FileTypeExt;
    if std::io::stdin().is_terminal() {
        return StdinIs::Terminal;
    }
    // SAFETY: fd 0 stays open for the whole process; it is only duplicated here.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    let Ok(meta) = fd
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
    else {
        return StdinIs::Nothing;
    };
    let t = meta.file_type();
    if t.is_fifo() || t.is_socket() || (t.is_file() && meta.len() > 0) {
        StdinIs::Data
    } else {
        StdinIs::Nothing
    }
}

/// What to pass instead of an unreadable stdin.
const PASS_PATHS: &str = "name transcript files or folders (~/.claude/projects/<folder>), pass --session ID or --all, or pipe a transcript in";

/// The one rule for a command given no path (README, "Input"): stdin is read when it is a
/// pipe or a file with data. On a terminal, a read-only command (`check`, `validate`) scans
/// every project (returned, said on stderr) and any other refuses; an empty or closed stdin
/// is refused by all, so a CI gate can never pass over nothing.
pub fn no_path_input(readonly: bool) -> anyhow::Result<Option<std::path::PathBuf>> {
    match stdin_is() {
        StdinIs::Data => Ok(None),
        StdinIs::Terminal if readonly => {
            let projects = layout::projects_dir(&layout::config_root()?);
            if !projects.is_dir() {
                bail!(
                    "no path given and stdin is a terminal, and there is no projects folder at {}: {PASS_PATHS}",
                    projects.display()
                );
            }
            say!(
                "cchist: no path given and stdin is a terminal: scanning every project under {} (name paths, or pipe a transcript in, to scan those)",
                projects.display()
            );
            Ok(Some(projects))
        }
        StdinIs::Terminal => {
            bail!("no path given and stdin is a terminal, so there is nothing to read: {PASS_PATHS}")
        }
        StdinIs::Nothing => bail!(
            "no path given and stdin is empty (not a pipe or a file with data): nothing to read — {PASS_PATHS}"
        ),
    }
}

/// The error for a stdin that turned out empty once read, where a clean result would be a
/// pass over nothing.
pub fn empty_stdin() -> anyhow::Error {
    anyhow::anyhow!("stdin was empty: nothing was scanned — {PASS_PATHS}")
}

/// Add the other files of each session among the inputs ([`walk::expand_sessions`]), and say
/// which companion folders were not followed.
pub fn whole_sessions(walk: &mut walk::Walk) {
    let before = walk.skipped.len();
    walk.inputs = walk::expand_sessions(std::mem::take(&mut walk.inputs), &mut walk.skipped);
    for (p, why) in &walk.skipped[before..] {
        say!("cchist: skipped {}: {why}", p.display());
    }
}

/// The paths a read-only scan (`check`, `validate`) covers: those given, plus the session
/// `--session` names, plus with `--all` the projects folder and history.jsonl of the config
/// root.
pub fn scan_paths(
    paths: &[std::path::PathBuf],
    session: Option<&str>,
    all: bool,
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let mut out = paths.to_vec();
    if session.is_some() || all {
        let root = layout::config_root()?;
        let projects = layout::projects_dir(&root);
        if let Some(id) = session {
            out.push(layout::find_by_id(&projects, id)?.path);
        }
        if all {
            if !projects.is_dir() {
                bail!(
                    "no projects folder at {}: set CLAUDE_CONFIG_DIR to Claude Code's config folder",
                    projects.display()
                );
            }
            out.push(projects);
            let history = root.join("history.jsonl");
            if history.is_file() {
                out.push(history);
            }
        }
    }
    Ok(out)
}

/// Run `pipeline` as the I/O arguments say and report; the exit status reflects failures.
pub fn execute(mut pipeline: Pipeline, io: &IoArgs) -> anyhow::Result<ExitStatus> {
    super::print::set_quiet(io.quiet);
    let started = std::time::SystemTime::now();
    let mut paths = io.paths.clone();
    if let Some(id) = &io.session {
        let projects = layout::projects_dir(&layout::config_root()?);
        paths.push(layout::find_by_id(&projects, id)?.path);
    }
    if io.fork && io.diff.is_none() {
        return fork(&pipeline, &paths);
    }
    let mode = io.mode();
    if io.all {
        return all(pipeline, io, mode, started);
    }
    if io.json() && mode == Mode::Stdout && io.diff.is_none() {
        bail!("--json prints a report on stdout, where the transcript goes without --in-place, --out-dir or --dry-run; add one of those");
    }
    if paths.is_empty() {
        no_path_input(false)?;
    }
    let mut walk = inputs(&paths, &io.include, &io.exclude)?;
    if mode != Mode::Stdout {
        // Changing a session changes all of it: sub-agents, metadata, tool-results, backups.
        whole_sessions(&mut walk);
        // A member named on its own too is one file, processed once.
        walk::dedupe(&mut walk);
    }
    // A preview writes nothing, not even this clean-up, and needs no --backup or --yes.
    if matches!(mode, Mode::InPlace { .. }) && io.diff.is_none() {
        refuse_lossy_bulk(&pipeline, io, &walk.inputs)?;
        report_leftovers(&walk.leftovers, started);
    }
    if walk.inputs.iter().filter(|i| **i == Input::Stdin).count() > 1 {
        bail!("`-` (stdin) given more than once");
    }
    if mode != Mode::Stdout && mode != Mode::DryRun && walk.inputs.contains(&Input::Stdin) {
        bail!("stdin cannot be written in place or into --out-dir; pass file paths, or drop those flags to write to stdout");
    }
    keep_older_backups(&mode, &mut walk.inputs, &paths);
    let mut refused = Vec::new();
    if let Mode::OutDir { dir, .. } = &mode {
        drop_copies(&mut walk.inputs, &paths);
        mirror_names(&pipeline, &mut walk.inputs);
        refuse_out_dir_collisions(dir, &walk.inputs)?;
        if io.diff.is_none() {
            refused = out_dir_existing(dir, &mut walk.inputs, io)?;
        }
    }
    if mode == Mode::DryRun {
        pipeline.count_invalid = true;
    }
    // A file Claude Code is writing is refused, however it was named (the same rule as
    // history edits and --all): an edit would break the chain the running CLI appends to.
    if matches!(mode, Mode::InPlace { .. }) && !io.force {
        let mut verdicts = Default::default();
        walk.inputs.retain(|inp| match live_reason(inp, &mut verdicts) {
            // A preview writes nothing: show it, and say the real run would refuse the file.
            Some(why) if io.diff.is_some() => {
                say!(
                    "cchist: note: {}: the session looks live ({why}); a run with --in-place would leave it untouched unless --force",
                    inp.origin()
                );
                true
            }
            Some(why) => {
                refused.push(runner::Outcome {
                    input: inp.clone(),
                    result: Err(cchist::error::Error::Other(format!(
                        "{}: the session looks live ({why}); it was left untouched — run again once it is idle, pass --force to write it anyway, or write a copy with --fork",
                        inp.origin()
                    ))),
                });
                false
            }
            None => true,
        });
    }
    if let Some(f) = io.diff {
        return preview(&pipeline, &walk.inputs, io, f);
    }
    let mut outcomes = super::progress::run_with_bar(
        &pipeline,
        &walk.inputs,
        mode.clone(),
        io.jobs,
        io.quiet || mode == Mode::Stdout,
        io.propagate.into(),
    );
    let left = super::progress::take_interrupted(&mut outcomes);
    outcomes.extend(refused);
    let status = report(&outcomes, &mode, io.json(), &[])?;
    note_backups_keep_secrets(&outcomes, &mode, io.json());
    let status = incomplete(&walk.skipped, &mode, status);
    interrupted(&outcomes, left, &mode, started).map_or(Ok(status), Ok)
}

/// An in-place run that passed over files (links are never followed, a folder could not be
/// read) left whatever they hold as it was: it did not do its job over what it was given, so
/// it says so and exits 2, as `check` does over the same tree.
fn incomplete(
    skipped: &[(std::path::PathBuf, String)],
    mode: &Mode,
    status: ExitStatus,
) -> ExitStatus {
    if skipped.is_empty() || !matches!(mode, Mode::InPlace { .. }) {
        return status;
    }
    say!(
        "cchist: error: {} not processed (listed above as skipped), so what they hold is left as it was; the run is incomplete — pass the real files to process them",
        super::print::count(skipped.len(), "input", "inputs")
    );
    ExitStatus::Error
}

/// After a run Ctrl-C stopped (`left` inputs not started): say how far it got; exit 2.
fn interrupted(
    outcomes: &[runner::Outcome],
    left: usize,
    mode: &Mode,
    started: std::time::SystemTime,
) -> Option<ExitStatus> {
    if left == 0 {
        return None;
    }
    let undoable = matches!(mode, Mode::InPlace { backup: Some(b), .. } if b.starts_with(cchist::io::backup::BACKUP_MARK));
    super::progress::say_interrupted(outcomes.len(), left, undoable, started);
    Some(ExitStatus::Error)
}

/// After an in-place run with `--backup` that redacted something: the backups hold the
/// secrets the sessions no longer do, and `check` will find them there.
fn note_backups_keep_secrets(outcomes: &[runner::Outcome], mode: &Mode, json: bool) {
    let Mode::InPlace {
        backup: Some(suffix),
        ..
    } = mode
    else {
        return;
    };
    let redacted = outcomes.iter().filter(|o| {
        o.result
            .as_ref()
            .is_ok_and(|r| r.changed && r.counters.get("redactions").is_some_and(|n| *n > 0))
    });
    let n = redacted.count();
    if n == 0 || json {
        return;
    }
    let remove = if suffix.starts_with(cchist::io::backup::BACKUP_MARK) {
        "`cchist backups prune --older-than 0s` removes them once no `cchist undo` needs them"
    } else {
        "remove them by hand once you no longer need them"
    };
    say!(
        "cchist: the backups keep the originals, secrets included ({} redacted): {remove}",
        super::print::count(n, "file", "files")
    );
}

/// `--diff`: what the run would change, as a diff (or its JSON form), instead of running it.
fn preview(
    pipeline: &Pipeline,
    inputs: &[Input],
    io: &IoArgs,
    f: super::args::Format,
) -> anyhow::Result<ExitStatus> {
    let diffs = cchist::engine::diff::diff_all(pipeline, inputs, io.jobs);
    diff_report(diffs, io.json() || f == super::args::Format::Json)
}

/// Stages that drop or cap content: what they remove is gone once written in place.
const LOSSY_STAGES: &[&str] = &["drop-tool-noise", "summarize-range"];

/// A lossy in-place run over more than one session needs a way back (`--backup`, which
/// `undo --all` restores) or an explicit `--yes`.
fn refuse_lossy_bulk(pipeline: &Pipeline, io: &IoArgs, inputs: &[Input]) -> anyhow::Result<()> {
    if io.backup.is_some() || io.yes {
        return Ok(());
    }
    let lossy: Vec<&str> = pipeline
        .stages
        .iter()
        .map(|s| s.name())
        .filter(|n| LOSSY_STAGES.contains(n))
        .collect();
    if lossy.is_empty() {
        return Ok(());
    }
    let sessions: std::collections::HashSet<std::path::PathBuf> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::File { session, .. } => Some(session.clone()),
            Input::Stdin => None,
        })
        .collect();
    if sessions.len() > 1 {
        bail!(
            "this run drops or caps content ({}) in place in {} sessions, and that cannot be taken back: nothing was written — add --backup (then `cchist undo --all --since <start>` restores them all) or --yes to go ahead without one",
            lossy.join(", "),
            sessions.len()
        );
    }
    Ok(())
}

/// `--out-dir` mirrors each input by its path relative to its argument: two inputs with the
/// same relative path would overwrite each other, and a destination that is an input itself
/// (`--out-dir` the input's own folder, or one whose mirror path leads back onto an input
/// through `..` or a link) would replace that input with none of `--in-place`'s safeguards
/// (live-session check, `--backup`/`--yes`). Refuse both before writing anything. Paths are
/// compared canonicalized; a destination that does not exist yet is no input.
fn refuse_out_dir_collisions(dir: &std::path::Path, inputs: &[Input]) -> anyhow::Result<()> {
    let mut by_rel: std::collections::HashMap<&std::path::Path, &std::path::Path> =
        Default::default();
    let canonical: std::collections::HashMap<std::path::PathBuf, &std::path::Path> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::File { path, .. } => Some((std::fs::canonicalize(path).ok()?, path.as_path())),
            Input::Stdin => None,
        })
        .collect();
    for inp in inputs {
        if let Input::File { path, rel, .. } = inp {
            let dest = dir.join(rel);
            if let Some(input) = std::fs::canonicalize(&dest)
                .ok()
                .and_then(|c| canonical.get(&c))
            {
                bail!(
                    "--out-dir {}: the output for {} would be written to {}, which is the input {}; that would replace the original without --in-place's checks (live session, --backup). Nothing was written — choose a folder outside the inputs, or use --in-place (with --backup)",
                    dir.display(),
                    path.display(),
                    dest.display(),
                    input.display()
                );
            }
            if let Some(first) = by_rel.insert(rel, path) {
                bail!(
                    "{} and {} would both be written to {}; nothing was written — run them separately or with different --out-dir folders",
                    first.display(),
                    path.display(),
                    dest.display()
                );
            }
        }
    }
    Ok(())
}

/// In an `--out-dir` mirror, a companion whose file name reads as a secret is written under
/// its placeholder name ([`runner::mirror_rel`]): a copy never carries the secret in a name.
fn mirror_names(pipeline: &Pipeline, inputs: &mut [Input]) {
    for inp in inputs.iter_mut() {
        if let Some(safe) = runner::mirror_rel(pipeline, inp) {
            if let Input::File { rel, .. } = inp {
                *rel = safe;
            }
        }
    }
}

/// An in-place run with `--backup` keeps the originals, and the older backups and undo copies
/// of its sessions ([`cchist::io::backup::is_copy`]) are originals too: they are left as they
/// are, so that `undo` can still go back past this run. (Redacting them with the session
/// lost the first run's original to a second `redact -i --backup`.) A run without `--backup`
/// redacts them with their session, as a secret found once is gone everywhere. A copy named
/// as an argument is the user's own choice and runs.
fn keep_older_backups(mode: &Mode, inputs: &mut Vec<Input>, named: &[std::path::PathBuf]) {
    if !matches!(
        mode,
        Mode::InPlace {
            backup: Some(_),
            ..
        }
    ) {
        return;
    }
    let before = inputs.len();
    inputs.retain(|i| match i {
        Input::File { path, .. } => !cchist::io::backup::is_copy(path) || named.contains(path),
        _ => true,
    });
    let left = before - inputs.len();
    if left > 0 {
        say!(
            "cchist: left {left} older backup{} as {} (--backup keeps originals; `cchist check` reports what they hold, `cchist backups prune` removes them once no `cchist undo` needs them)",
            if left == 1 { "" } else { "s" },
            if left == 1 { "it is" } else { "they are" }
        );
    }
}

/// `--out-dir` copies sessions, not the user's local undo history: backups and undo copies
/// ([`cchist::io::backup::is_copy`]) are left out; one named as an argument is said so.
fn drop_copies(inputs: &mut Vec<Input>, named: &[std::path::PathBuf]) {
    inputs.retain(|i| match i {
        Input::File { path, .. } if cchist::io::backup::is_copy(path) => {
            if named.contains(path) {
                say!(
                    "cchist: skipped {}: a backup (local undo history, not part of a session); --out-dir never copies one",
                    path.display()
                );
            }
            false
        }
        _ => true,
    });
}

/// An `--out-dir` destination that exists gets the rules of an in-place write of it: one
/// that looks like a live session is refused (unless --force), as `--in-place` refuses it;
/// replacing any other needs `--yes` or `--backup` (which keeps what it replaces), else the
/// run is refused before anything is written. Returns the refusals, taken out of `inputs`.
fn out_dir_existing(
    dir: &std::path::Path,
    inputs: &mut Vec<Input>,
    io: &IoArgs,
) -> anyhow::Result<Vec<runner::Outcome>> {
    let mut refused = Vec::new();
    let mut existing = Vec::new();
    let mut verdicts = Default::default();
    inputs.retain(|inp| {
        let Input::File { rel, .. } = inp else {
            return true;
        };
        // A link on the way (or at the destination) is never written through: that file
        // fails, whatever else is there.
        if let Err(e) = cchist::io::replace::refuse_links_below(dir, rel) {
            refused.push(runner::Outcome {
                input: inp.clone(),
                result: Err(e),
            });
            return false;
        }
        let dest = dir.join(rel);
        if std::fs::symlink_metadata(&dest).is_err() {
            return true;
        }
        if !io.force {
            if let Some(why) = live_reason_of(&dest, &mut verdicts) {
                refused.push(runner::Outcome {
                    input: inp.clone(),
                    result: Err(cchist::error::Error::Other(format!(
                        "--out-dir: {} is there already and the session looks live ({why}); it was left untouched — run again once it is idle, pass --force to replace it anyway, or choose another folder",
                        dest.display()
                    ))),
                });
                return false;
            }
        }
        existing.push(dest);
        true
    });
    if let (Some(first), false, None) = (existing.first(), io.yes, &io.backup) {
        bail!(
            "--out-dir {}: {} there already ({}{}); nothing was written — pass --yes to replace them, --backup to replace them keeping each as <file>.cchist-bak.<time> (`cchist undo` restores it), or choose an empty folder",
            dir.display(),
            super::print::count(existing.len(), "file is", "files are"),
            first.display(),
            if existing.len() > 1 { ", …" } else { "" }
        );
    }
    Ok(refused)
}

/// Why the session `inp` belongs to looks live (the file itself written in the last minute,
/// or its main session live), if it does. Verdicts on main sessions are cached in `seen`.
fn live_reason(
    inp: &Input,
    seen: &mut std::collections::HashMap<std::path::PathBuf, Option<String>>,
) -> Option<String> {
    let Input::File { path, .. } = inp else {
        return None;
    };
    live_reason_of(path, seen)
}

/// [`live_reason`] of the file at `path`.
fn live_reason_of(
    path: &std::path::Path,
    seen: &mut std::collections::HashMap<std::path::PathBuf, Option<String>>,
) -> Option<String> {
    let owner = layout::classify(path).session;
    if owner.path != *path {
        if let Some(why) = layout::liveness(&SessionFile::from_path(path)) {
            return Some(why);
        }
    }
    seen.entry(owner.path.clone())
        .or_insert_with(|| layout::liveness(&owner))
        .clone()
}

/// Remove the temp files killed runs left where this in-place run works, and say so.
pub fn report_leftovers(leftovers: &[std::path::PathBuf], started: std::time::SystemTime) {
    use cchist::io::output::Leftover;
    for (p, what) in cchist::io::output::remove_leftovers(leftovers, started) {
        match what {
            Leftover::Removed => say!(
                "cchist: removed {}: temp file of an interrupted run",
                p.display()
            ),
            Leftover::Kept(why) => say!("cchist: left {}: {why}", p.display()),
            Leftover::Failed(e) => say!(
                "cchist: could not remove {} (temp file of an interrupted run): {e}",
                p.display()
            ),
        }
    }
}

/// `--all`: every session (all its files) and history.jsonl under the config root.
fn all(
    mut pipeline: Pipeline,
    io: &IoArgs,
    mode: Mode,
    started: std::time::SystemTime,
) -> anyhow::Result<ExitStatus> {
    let root = layout::config_root()?;
    let projects = layout::projects_dir(&root);
    let mut walk = inputs(std::slice::from_ref(&projects), &io.include, &io.exclude)
        .with_context(|| format!("walking {}", projects.display()))?;
    whole_sessions(&mut walk);
    let history = root.join("history.jsonl");
    if history.is_file() {
        walk.inputs
            .push(layout::input(history, "history.jsonl".into()));
    }
    // A preview writes nothing, not even this clean-up, and needs no --backup or --yes.
    if matches!(mode, Mode::InPlace { .. }) && io.diff.is_none() {
        refuse_lossy_bulk(&pipeline, io, &walk.inputs)?;
        report_leftovers(&walk.leftovers, started);
    }
    keep_older_backups(&mode, &mut walk.inputs, &[]);
    let mut refused = Vec::new();
    if let Mode::OutDir { dir, .. } = &mode {
        drop_copies(&mut walk.inputs, &[]);
        mirror_names(&pipeline, &mut walk.inputs);
        refuse_out_dir_collisions(dir, &walk.inputs)?;
        if io.diff.is_none() {
            refused = out_dir_existing(dir, &mut walk.inputs, io)?;
        }
    }
    if mode == Mode::DryRun {
        pipeline.count_invalid = true;
    }
    // Live sessions: Claude Code is appending to them; leave them (and their companions) alone.
    let mut skipped = Vec::new();
    if matches!(mode, Mode::InPlace { .. }) && !io.force {
        let mut verdicts: std::collections::HashMap<std::path::PathBuf, Option<String>> =
            Default::default();
        walk.inputs.retain(|inp| {
            let Input::File { path, .. } = inp else {
                return true;
            };
            let Some(session) = SessionFile::owning(&projects, path) else {
                return true;
            };
            let live = verdicts
                .entry(session.path.clone())
                .or_insert_with(|| layout::liveness(&session))
                .clone();
            match live {
                Some(why) => {
                    skipped.push((path.clone(), why));
                    false
                }
                None => true,
            }
        });
    }
    for (p, why) in &skipped {
        say!(
            "cchist: skipped {} (live session: {why}; --force to process it anyway)",
            p.display()
        );
    }
    if let Some(f) = io.diff {
        return preview(&pipeline, &walk.inputs, io, f);
    }
    let mut outcomes = super::progress::run_with_bar(
        &pipeline,
        &walk.inputs,
        mode.clone(),
        io.jobs,
        io.quiet || mode == Mode::Stdout,
        io.propagate.into(),
    );
    let left = super::progress::take_interrupted(&mut outcomes);
    outcomes.extend(refused);
    let status = report(&outcomes, &mode, io.json(), &skipped)?;
    note_backups_keep_secrets(&outcomes, &mode, io.json());
    let status = incomplete(&walk.skipped, &mode, status);
    if let Some(s) = interrupted(&outcomes, left, &mode, started) {
        return Ok(s);
    }
    if !io.json() && outcomes.len() <= 1 && !super::print::quiet() {
        eprint!("{}", summary_table(&totals(&outcomes, skipped.len())));
    }
    Ok(status)
}

/// `--fork`: run over exactly one session file and write the result as a new session.
fn fork(pipeline: &Pipeline, paths: &[std::path::PathBuf]) -> anyhow::Result<ExitStatus> {
    let [path] = paths else {
        bail!("--fork writes one new session: give exactly one session (--session ID or one file)");
    };
    if !path.is_file() {
        bail!("{}: --fork needs a session file", path.display());
    }
    let s = SessionFile::from_path(path);
    let opts = cchist::claude::rewrite::MutateOptions {
        fork: true,
        ..Default::default()
    };
    let (report, written) = cchist::claude::rewrite::mutate(&s, pipeline, opts)?;
    if let cchist::claude::rewrite::Written::Forked {
        id,
        path: new,
        binary,
        left_out,
    } = written
    {
        for note in super::print::fork_binary_notes(&binary, &left_out) {
            say!("{note}");
        }
        say!(
            "{}",
            describe(&s.path.display().to_string(), &report).replace("would change", "changed")
        );
        say!(
            "{}: left untouched; new session written to {}",
            s.path.display(),
            new.display()
        );
        println!("{}", super::print::resume_line(&new, &id));
    }
    Ok(ExitStatus::Ok)
}
