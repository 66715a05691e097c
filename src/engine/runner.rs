//! Running a pipeline over many inputs: to stdout, in place (atomically), into a mirror folder,
//! or as a dry run; files in parallel, reports in input order.

use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::engine::pipeline::{FileReport, Pipeline};
use crate::error::{Error, Origin, Result};
use crate::io::input::{self, Input};
use crate::io::lock;
use crate::io::output::{AtomicFile, LazySink, Sink, SpanWriter, BACKUP_MARK};
use crate::stages::redact::known::Known;
use crate::stages::Secrets;

/// How far the secrets found in one file of a run reach ([`RunOptions::propagate`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Propagate {
    /// Over the files of the same session (transcript, sub-agents, tool results, metadata,
    /// backups): the default. What one session leaked is replaced in all of it.
    #[default]
    Session,
    /// Over every session of the same project folder: a key pasted in one session and
    /// echoed bare in another is replaced in both.
    Project,
}

/// Where output goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    /// Concatenated to standard output, in input order.
    #[default]
    Stdout,
    /// Each file replaced atomically; unchanged files are not rewritten.
    InPlace {
        /// Keep a copy of the original as `<file><suffix>`.
        backup: Option<String>,
        /// Set the mtime to now instead of keeping the original.
        touch: bool,
        /// Replace a file that has other hard links (they keep the old content) instead of
        /// refusing it.
        break_links: bool,
    },
    /// Mirrored under a folder, by path relative to the argument it came from.
    OutDir(PathBuf),
    /// Nothing written; reports only.
    DryRun,
}

/// What [`RunOptions::on_done`] calls with each finished input.
pub type OnDone = std::sync::Arc<dyn Fn(&Input) + Send + Sync>;

/// Options for [`run_all`].
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Output mode.
    pub mode: Mode,
    /// Worker threads (`None` = all cores).
    pub jobs: Option<usize>,
    /// Called once per input as it is done (from worker threads): what a progress display
    /// counts.
    pub on_done: Option<OnDone>,
    /// How far a secret found in one input reaches into the others.
    pub propagate: Propagate,
    /// Set (by a SIGINT handler) to stop: inputs not yet started are not processed and get
    /// [`INTERRUPTED`] as their error; those being written are finished, so no temp file or
    /// half-replaced file is left.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// The error of an input [`RunOptions::cancel`] stopped before it was started.
pub const INTERRUPTED: &str = "interrupted before it was processed";

/// Whether `o` was stopped by [`RunOptions::cancel`] before it started.
pub fn was_interrupted(o: &Outcome) -> bool {
    matches!(&o.result, Err(Error::Other(m)) if m == INTERRUPTED)
}

impl std::fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("mode", &self.mode)
            .field("jobs", &self.jobs)
            .field("on_done", &self.on_done.is_some())
            .finish()
    }
}

/// The outcome for one input.
pub struct Outcome {
    /// The input.
    pub input: Input,
    /// Its report, or why it failed.
    pub result: Result<FileReport>,
}

/// The secrets the files at `paths` show, together ([`Pipeline::known_in`] of each, run in
/// parallel): what a session knows before any of its files is written. A file that cannot be
/// read adds nothing (running it reports the error).
pub fn known_of_files(pipeline: &Pipeline, paths: &[&Path]) -> Known {
    if pipeline.secret_pass() == Secrets::Ignores {
        return Known::default();
    }
    let each: Vec<Known> = paths
        .par_iter()
        .map(|p| {
            let origin = Origin::file(p);
            input::open(p)
                .and_then(|f| {
                    let text = Treatment::of_path(p) == Treatment::Text;
                    pipeline.known_in(&f.data, text, &origin)
                })
                .unwrap_or_default()
        })
        .collect();
    let mut all = Known::default();
    for k in &each {
        all.merge(k);
    }
    all
}

/// The transcript of the session a file belongs to: any file at any depth under
/// `<project>/<id>/` (a sub-agent's backup, a nested companion) belongs to `<project>/<id>.jsonl`;
/// otherwise as [`crate::claude::layout::owning_session_of`] says.
fn session_of(path: &Path) -> PathBuf {
    for dir in path.ancestors().skip(1).take(4) {
        if dir.file_name().is_some() {
            let main = dir.with_extension("jsonl");
            if main != path && main.is_file() {
                return main;
            }
        }
    }
    crate::claude::layout::owning_session_of(path).path
}

/// For each input, the secrets of the other inputs of its session (or project, as
/// `propagate` says). The union does not depend on the order of the inputs or on how many
/// run at once, so neither does the output. A file alone in its group gets none: its own
/// run already replaces every occurrence of what it shows.
fn seeds(
    pipeline: &Pipeline,
    inputs: &[Input],
    propagate: Propagate,
) -> Vec<std::sync::Arc<Known>> {
    use std::collections::BTreeMap;
    let none = std::sync::Arc::new(Known::default());
    let mut seeds = vec![none; inputs.len()];
    if pipeline.secret_pass() == Secrets::Ignores || inputs.len() < 2 {
        return seeds;
    }
    let mut groups: BTreeMap<PathBuf, Vec<usize>> = BTreeMap::new();
    for (i, inp) in inputs.iter().enumerate() {
        if let Input::File { path, .. } = inp {
            let main = session_of(path);
            let key = match propagate {
                Propagate::Session => main,
                Propagate::Project => main.parent().map(Path::to_path_buf).unwrap_or(main),
            };
            groups.entry(key).or_default().push(i);
        }
    }
    for members in groups.values().filter(|m| m.len() > 1) {
        let paths: Vec<&Path> = members
            .iter()
            .filter_map(|&i| match &inputs[i] {
                Input::File { path, .. } => Some(path.as_path()),
                Input::Stdin => None,
            })
            .collect();
        let known = std::sync::Arc::new(known_of_files(pipeline, &paths));
        for &i in members {
            seeds[i] = known.clone();
        }
    }
    seeds
}

/// Process every input with `pipeline`. Never stops at the first failing file: each
/// failure is reported in its [`Outcome`].
pub fn run_all(pipeline: &Pipeline, inputs: &[Input], opts: &RunOptions) -> Vec<Outcome> {
    let seeds = seeds(pipeline, inputs, opts.propagate);
    if opts.mode == Mode::Stdout {
        // Output order is input order; stream each file straight to stdout.
        let stdout = io::stdout();
        let mut lock = BufWriter::with_capacity(1 << 16, stdout.lock());
        let mut outcomes = Vec::new();
        let mut broken = false;
        for (inp, seed) in inputs.iter().zip(&seeds) {
            let result = if broken {
                Err(Error::Other("output closed".into()))
            } else {
                let r = run_one_to_known(pipeline, inp, &mut lock, seed);
                if let Err(Error::Io { source, .. }) = &r {
                    broken = source.kind() == io::ErrorKind::BrokenPipe;
                }
                r
            };
            if let Some(f) = &opts.on_done {
                f(inp);
            }
            outcomes.push(Outcome {
                input: inp.clone(),
                result,
            });
        }
        let _ = lock.flush();
        return outcomes;
    }
    let work = || {
        inputs
            .par_iter()
            .zip(&seeds)
            .map(|(inp, seed)| {
                let cancelled = opts
                    .cancel
                    .as_ref()
                    .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed));
                let result = if cancelled {
                    Err(Error::Other(INTERRUPTED.into()))
                } else {
                    run_one_known(pipeline, inp, &opts.mode, seed)
                };
                if let Some(f) = &opts.on_done {
                    f(inp);
                }
                Outcome {
                    input: inp.clone(),
                    result,
                }
            })
            .collect()
    };
    match opts.jobs {
        // No more threads than files: `-j 20000` on two files must not start 20000 threads.
        Some(n) => match rayon::ThreadPoolBuilder::new()
            .num_threads(n.clamp(1, inputs.len().max(1)))
            .build()
        {
            Ok(pool) => pool.install(work),
            Err(_) => work(),
        },
        None => work(),
    }
}

/// Run `pipeline` on one input, writing the whole output to `w`.
pub fn run_one_to(pipeline: &Pipeline, inp: &Input, w: &mut dyn Write) -> Result<FileReport> {
    run_one_to_known(pipeline, inp, w, &Known::default())
}

/// [`run_one_to`] knowing the secrets `seed` (the session's other files').
fn run_one_to_known(
    pipeline: &Pipeline,
    inp: &Input,
    w: &mut dyn Write,
    seed: &Known,
) -> Result<FileReport> {
    let origin = inp.origin();
    if let Input::File { path, .. } = inp {
        match Treatment::of_path(path) {
            Treatment::Records => {}
            t => {
                let f = input::open(path)?;
                let (new, r) = if t == Treatment::Text {
                    pipeline.run_text_known(&f.data, &origin, seed)?
                } else {
                    pipeline.run_copy_known(&f.data, &origin, seed)?
                };
                w.write_all(new.as_deref().unwrap_or(&f.data))
                    .map_err(|e| Error::io(&Origin::stdin(), "write", e))?;
                return Ok(r);
            }
        }
    }
    let mut sink = SpanWriter::new(w);
    let report = match inp {
        Input::Stdin => pipeline.run_stdin(&mut sink)?,
        Input::File { path, .. } => {
            let f = input::open(path)?;
            let r = pipeline
                .run_buffer_known(&f.data, &origin, &mut sink, false, seed)?
                .0;
            sink.finish().map_err(|e| Error::io(&origin, "write", e))?;
            r
        }
    };
    sink.finish()
        .map_err(|e| Error::io(&Origin::stdin(), "write", e))?;
    Ok(report)
}

/// How a file is run, judged by its name: a session's files other than its transcripts
/// (`claude::layout::Part`) are not records to transform. Text is redacted as text; backups and
/// JSON documents get only the stages that apply to copies ([`Pipeline::run_copy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Treatment {
    /// A transcript (`*.jsonl`): every stage.
    Records,
    /// Plain text (`tool-results/*.txt` and other companion files): the text transformation,
    /// which leaves a binary file byte for byte ([`Pipeline::run_text`]).
    Text,
    /// A copy of a session (`*.cchist-bak.*`) or a JSON document (`*.meta.json`).
    Copy,
}

impl Treatment {
    /// The treatment of the file at `path`.
    pub fn of_path(path: &Path) -> Treatment {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name.contains(BACKUP_MARK) || name.ends_with(".json") {
            Treatment::Copy
        } else if name.ends_with(".jsonl") {
            Treatment::Records
        } else {
            Treatment::Text
        }
    }
}

/// Run `pipeline` on one input in a file-writing mode.
pub fn run_one(pipeline: &Pipeline, inp: &Input, mode: &Mode) -> Result<FileReport> {
    run_one_known(pipeline, inp, mode, &Known::default())
}

/// [`run_one`] knowing the secrets `seed`: those of the other files of the input's session
/// ([`session_known`]), replaced wherever they occur in this one.
pub fn run_one_known(
    pipeline: &Pipeline,
    inp: &Input,
    mode: &Mode,
    seed: &Known,
) -> Result<FileReport> {
    let origin = inp.origin();
    if let Input::File { path, rel } = inp {
        match Treatment::of_path(path) {
            Treatment::Records => {}
            Treatment::Text => {
                return run_whole_file(pipeline, path, rel, mode, &|p, d, o| {
                    p.run_text_known(d, o, seed)
                })
            }
            Treatment::Copy => {
                return run_whole_file(pipeline, path, rel, mode, &|p, d, o| {
                    p.run_copy_known(d, o, seed)
                })
            }
        }
    }
    let Input::File { path, rel } = inp else {
        return match mode {
            Mode::DryRun => {
                let mut sink = NullSink;
                pipeline.run_stdin(&mut sink)
            }
            _ => run_one_to(pipeline, inp, &mut io::stdout().lock()),
        };
    };
    match mode {
        Mode::Stdout => run_one_to_known(pipeline, inp, &mut io::stdout().lock(), seed),
        Mode::DryRun => {
            let f = input::open(path)?;
            let mut sink = LazySink::new(&f.data, || Ok(io::sink()));
            let mut r = pipeline
                .run_buffer_known(&f.data, &origin, &mut sink, false, seed)?
                .0;
            r.changed = sink
                .close()
                .map_err(|e| Error::io(&origin, "write", e))?
                .is_some();
            Ok(r)
        }
        Mode::InPlace {
            backup,
            touch,
            break_links,
        } => {
            // A concurrent append makes us retry; Claude Code appends a few records at a time.
            let mut last = None;
            for _ in 0..3 {
                match in_place(
                    pipeline,
                    path,
                    backup.as_deref(),
                    *touch,
                    *break_links,
                    seed,
                ) {
                    Err(e @ Error::Concurrent { .. }) => last = Some(e),
                    other => return other,
                }
            }
            Err(last.expect("loop ran"))
        }
        Mode::OutDir(dir) => {
            let dest = dir.join(rel);
            create_private_parent(&dest)?;
            let f = input::open(path)?;
            let dest_origin = Origin::file(&dest);
            let mut out = BufWriter::with_capacity(
                1 << 16,
                AtomicFile::create(&dest).map_err(|e| Error::io(&dest_origin, "create", e))?,
            );
            let mut sink = SpanWriter::new(&mut out);
            let r = pipeline
                .run_buffer_known(&f.data, &origin, &mut sink, false, seed)?
                .0;
            sink.finish()
                .map_err(|e| Error::io(&dest_origin, "write", e))?;
            drop(sink);
            let tmp = out
                .into_inner()
                .map_err(|e| Error::io(&dest_origin, "write", e.into_error()))?;
            tmp.commit(Some(f.meta.mode()), None)
                .map_err(|e| Error::io(&dest_origin, "rename", e))?;
            Ok(r)
        }
    }
}

/// Create the folders above an `--out-dir` destination, owner-only whatever the umask: they
/// hold transcripts.
fn create_private_parent(dest: &Path) -> Result<()> {
    match dest.parent() {
        Some(parent) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| Error::io(&Origin::file(parent), "create directory", e)),
        None => Ok(()),
    }
}

/// A plain-text companion file (`tool-results/*.txt`): only the stages' text transformation
/// applies (redaction); written as the mode says, atomically, mode and mtime kept.
/// The result of a whole-file transformation: the new bytes when something changed.
type WholeFile = Result<(Option<Vec<u8>>, FileReport)>;

/// Run a whole-file transformation (text, or a copy of a session) and write as `mode` says.
fn run_whole_file(
    pipeline: &Pipeline,
    path: &Path,
    rel: &Path,
    mode: &Mode,
    transform: &dyn Fn(&Pipeline, &[u8], &Origin) -> WholeFile,
) -> Result<FileReport> {
    let origin = Origin::file(path);
    let f = match mode {
        // The same rules as a transcript: no links, no other hard links, locked, read whole.
        Mode::InPlace { break_links, .. } => {
            check_replaceable(path, *break_links)?;
            input::read_locked(lock::lock_path(path, lock::wait_bound()?)?, &origin)?
        }
        _ => input::open(path)?,
    };
    let (new, report) = transform(pipeline, &f.data, &origin)?;
    let bytes: &[u8] = new.as_deref().unwrap_or(&f.data);
    let write_atomic = |dest: &Path, mtime: Option<std::time::SystemTime>| -> Result<()> {
        let o = Origin::file(dest);
        let mut tmp = AtomicFile::create(dest).map_err(|e| Error::io(&o, "create", e))?;
        tmp.write_all(bytes)
            .map_err(|e| Error::io(&o, "write", e))?;
        if matches!(mode, Mode::InPlace { .. }) {
            keep_owner(tmp.file_ref(), &f.meta, dest)?;
        } else {
            // A copy: the original's owner when permitted, else whoever runs cchist.
            let _ =
                std::os::unix::fs::fchown(tmp.file_ref(), Some(f.meta.uid()), Some(f.meta.gid()));
        }
        tmp.prepare(Some(f.meta.mode()), mtime)
            .map_err(|e| Error::io(&o, "write", e))?;
        let now = std::fs::symlink_metadata(dest);
        if matches!(mode, Mode::InPlace { .. })
            && now.map_or(true, |now| changed_since(&now, &f.meta))
        {
            return Err(Error::Concurrent { path: o });
        }
        let _held = tmp
            .file_ref()
            .try_clone()
            .and_then(|c| lock::lock_file(&c).map(|()| c))
            .map_err(|e| Error::io(&o, "lock", e))?;
        tmp.persist().map_err(|e| Error::io(&o, "rename", e))
    };
    match mode {
        Mode::DryRun => {}
        Mode::Stdout => io::stdout()
            .lock()
            .write_all(bytes)
            .map_err(|e| Error::io(&Origin::stdin(), "write", e))?,
        Mode::OutDir(dir) => {
            let dest = dir.join(rel);
            create_private_parent(&dest)?;
            write_atomic(&dest, None)?;
        }
        Mode::InPlace { backup, touch, .. } => {
            if new.is_none() {
                return Ok(report);
            }
            // As for JSONL files: a link is not replaced by a regular file (the rename would
            // break it and leave the original, secret and all, at its target).
            let lmeta =
                std::fs::symlink_metadata(path).map_err(|e| Error::io(&origin, "stat", e))?;
            if !lmeta.file_type().is_file() {
                return Err(Error::Other(format!(
                    "{}: is a symbolic link or not a regular file; cchist replaces only regular files in place",
                    path.display()
                )));
            }
            let mut undoable = None;
            if let Some(suffix) = backup {
                let (b, bpath) = stage_backup(path, suffix, &f)?;
                b.persist()
                    .map_err(|e| Error::io(&Origin::file(&bpath), "backup", e))?;
                if suffix.contains(BACKUP_MARK) {
                    undoable = Some(bpath);
                }
            }
            let mtime = if *touch { None } else { f.meta.modified().ok() };
            write_atomic(path, mtime)?;
            if let Some(bpath) = undoable {
                crate::claude::rewrite::record_written(path, &bpath)?;
            }
        }
    }
    Ok(report)
}

/// A sink that discards everything.
pub struct NullSink;

impl Sink for NullSink {
    fn put(&mut self, _rec: &dyn crate::io::output::Encode) -> io::Result<()> {
        Ok(())
    }
    fn put_span(&mut self, _bytes: &[u8]) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Replace `path` by the pipeline's output, atomically, without losing what a live session
/// appends meanwhile.
///
/// Claude Code appends to a session by path (open with O_APPEND, write, close) and never takes
/// a lock, so the protocol is:
///
/// 1. read the file (memory-mapped) and note its size, inode, mtime and ctime;
/// 2. write the output to a temp file beside it, give it the original's owner, mode and mtime,
///    fsync it, and stage the backup the same way — everything slow comes first;
/// 3. stat the path again: if anything changed, drop the temp files and fail with
///    [`Error::Concurrent`] (the caller retries, then gives up leaving the file as it is);
/// 4. rename the backup, then the output, into place;
/// 5. look at the old inode through the descriptor still open: an append that landed between
///    3 and 4 is there, and is copied onto the end of the new file
///    (`bytes-appended-during-replace` in the report).
///
/// What remains: a writer that opened the file before the rename and writes after step 5 — or
/// one that keeps its descriptor open for good, which Claude Code does not do — writes into
/// the old inode, which has no name any more (or only the backup's, with `--backup`). Records
/// carried over in step 5 come after any a writer appended to the new file in the
/// microseconds between 4 and 5, so their order in the file can differ from the order they
/// were written in (their `parentUuid` links are unaffected).
fn in_place(
    pipeline: &Pipeline,
    path: &Path,
    backup: Option<&str>,
    touch: bool,
    break_links: bool,
    seed: &Known,
) -> Result<FileReport> {
    let origin = Origin::file(path);
    check_replaceable(path, break_links)?;
    // Another cchist writing this file goes first; then we read what it wrote.
    let locked = lock::lock_path(path, lock::wait_bound()?)?;
    let f = input::read_locked(locked, &origin)?;
    let mut sink = LazySink::new(&f.data, || {
        AtomicFile::create(path).map(|a| BufWriter::with_capacity(1 << 16, a))
    });
    let mut report = pipeline
        .run_buffer_known(&f.data, &origin, &mut sink, false, seed)?
        .0;
    sink.finish().map_err(|e| Error::io(&origin, "write", e))?;
    let Some(out) = sink.close().map_err(|e| Error::io(&origin, "write", e))? else {
        report.changed = false;
        return Ok(report);
    };
    report.changed = true;
    let mut tmp = out
        .into_inner()
        .map_err(|e| Error::io(&origin, "write", e.into_error()))?;
    keep_owner(tmp.file_ref(), &f.meta, path)?;
    let mtime = if touch { None } else { f.meta.modified().ok() };
    // Everything slow (fsync, the backup) happens before the last check, so that the window
    // between that check and the rename is two system calls.
    tmp.prepare(Some(f.meta.mode()), mtime)
        .map_err(|e| Error::io(&origin, "write", e))?;
    let backup = match backup {
        Some(suffix) => Some(stage_backup(path, suffix, &f)?),
        None => None,
    };
    // Did the file grow or change while we read it (a live session appending)?
    let now = std::fs::symlink_metadata(path).map_err(|e| Error::io(&origin, "stat", e))?;
    if changed_since(&now, &f.meta) {
        return Err(Error::Concurrent { path: origin });
    }
    // Lock the replacement before it gets the name: a cchist that opens the path after the
    // rename must wait until the carry-over below is done.
    let new_lock = tmp
        .file_ref()
        .try_clone()
        .and_then(|c| lock::lock_file(&c).map(|()| c))
        .map_err(|e| Error::io(&origin, "lock", e))?;
    let mut undoable = None;
    if let Some((b, bpath)) = backup {
        b.persist()
            .map_err(|e| Error::io(&Origin::file(&bpath), "backup", e))?;
        // A backup in cchist's own naming is one `undo` restores: note what this run wrote,
        // so that undo can tell whether the file changed since.
        if bpath.to_string_lossy().contains(BACKUP_MARK) {
            undoable = Some(bpath);
        }
    }
    tmp.persist().map_err(|e| Error::io(&origin, "rename", e))?;
    // A writer that appended between the check and the rename wrote to the old inode, which
    // now has no name (or only the backup's): carry those bytes over to the new file.
    let carried = carry_over(&f.file, f.meta.len(), path)
        .map_err(|e| Error::io(&origin, "carry over appended records", e))?;
    if carried > 0 {
        report
            .counters
            .insert("bytes-appended-during-replace".into(), carried);
    }
    drop(new_lock);
    if let Some(bpath) = undoable {
        crate::claude::rewrite::record_written(path, &bpath)?;
    }
    Ok(report)
}

/// Give the replacement the original's owner and group. Refuses (rather than silently handing
/// a user's transcript to whoever ran cchist) when that is not permitted.
fn keep_owner(tmp: &std::fs::File, was: &std::fs::Metadata, path: &Path) -> Result<()> {
    let now = tmp
        .metadata()
        .map_err(|e| Error::io(&Origin::file(path), "stat", e))?;
    if now.uid() == was.uid() && now.gid() == was.gid() {
        return Ok(());
    }
    std::os::unix::fs::fchown(tmp, Some(was.uid()), Some(was.gid())).map_err(|e| {
        Error::Other(format!(
            "{}: owned by uid {} gid {}, and this user cannot give the replacement that owner ({e}); it was left untouched — run cchist as its owner",
            path.display(),
            was.uid(),
            was.gid()
        ))
    })
}

/// Refuse to replace what an in-place write must not: a link (the rename would replace the
/// link, not what it points to), anything but a regular file, and a file with other hard
/// links unless `break_links` (the other names would keep the old content).
fn check_replaceable(path: &Path, break_links: bool) -> Result<()> {
    let origin = Origin::file(path);
    let lmeta = std::fs::symlink_metadata(path).map_err(|e| Error::io(&origin, "stat", e))?;
    if lmeta.file_type().is_symlink() {
        return Err(Error::Other(format!(
            "{}: is a symbolic link; cchist does not replace links in place (pass the real file)",
            path.display()
        )));
    }
    if !lmeta.file_type().is_file() {
        return Err(Error::Other(format!(
            "{}: is not a regular file; cchist replaces only regular files in place",
            path.display()
        )));
    }
    if lmeta.nlink() > 1 && !break_links {
        return Err(Error::Other(format!(
            "{}: has {} hard links; replacing it would leave the other names with the old content (secrets included). Pass --break-hard-links to replace this name anyway, or process a copy",
            path.display(),
            lmeta.nlink()
        )));
    }
    Ok(())
}

/// True when `now` (the path, just stat'ed) is not the file that was read as `then`.
fn changed_since(now: &std::fs::Metadata, then: &std::fs::Metadata) -> bool {
    now.len() != then.len()
        || now.ino() != then.ino()
        || now.dev() != then.dev()
        || now.mtime() != then.mtime()
        || now.mtime_nsec() != then.mtime_nsec()
        || now.ctime() != then.ctime()
        || now.ctime_nsec() != then.ctime_nsec()
}

/// Write the bytes that were read into a temp file that becomes `<path><suffix>` on persist:
/// same mode, owner and mtime as the original. Written from the bytes read (not copied from
/// the path), and renamed into place rather than opened by name, so a link planted at the
/// backup's name is replaced, never followed.
fn stage_backup(path: &Path, suffix: &str, f: &input::InputFile) -> Result<(AtomicFile, PathBuf)> {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    let bpath = PathBuf::from(name);
    let borigin = Origin::file(&bpath);
    let mut b = AtomicFile::create(&bpath).map_err(|e| Error::io(&borigin, "backup", e))?;
    b.write_all(&f.data)
        .map_err(|e| Error::io(&borigin, "backup", e))?;
    let _ = std::os::unix::fs::fchown(b.file_ref(), Some(f.meta.uid()), Some(f.meta.gid()));
    b.prepare(Some(f.meta.mode()), f.meta.modified().ok())
        .map_err(|e| Error::io(&borigin, "backup", e))?;
    Ok((b, bpath))
}

/// After `path` was replaced: append to it whatever a concurrent writer added to the old
/// inode (`old`, which held `len` bytes at the last check). Waits briefly for a write in
/// progress to end its line. Returns the number of bytes carried over.
fn carry_over(old: &std::fs::File, len: u64, path: &Path) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut done = len;
    let mut last_byte = b'\n';
    let mut out: Option<std::fs::File> = None;
    for _ in 0..200 {
        let size = old.metadata()?.len();
        if size <= done {
            if last_byte == b'\n' {
                break;
            }
            // A line in progress: give its writer a moment to finish it.
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        let mut buf = vec![0; (size - done) as usize];
        old.read_exact_at(&mut buf, done)?;
        let o = match &mut out {
            Some(o) => o,
            None => out.insert(std::fs::OpenOptions::new().append(true).open(path)?),
        };
        o.write_all(&buf)?;
        last_byte = *buf.last().expect("non-empty");
        done = size;
    }
    if let Some(o) = out {
        o.sync_all()?;
    }
    Ok(done - len)
}
