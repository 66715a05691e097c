//! Running a pipeline over many inputs: to stdout, in place (atomically), into a mirror folder,
//! or as a dry run; files in parallel, reports in input order.

use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::engine::pipeline::{FileReport, Pipeline};
use crate::error::{Error, Origin, Result};
use crate::findings::Finding;
use crate::io::input::{self, Input, Treatment};
use crate::io::output::{LazySink, Sink, SpanWriter};
use crate::io::replace::{self, Attrs, Replace};
use crate::stages::redact::known::{Known, KnownSecret};
use crate::stages::{Companions, MovedOut, Secrets};

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
    /// Mirrored under a folder, by path relative to the argument it came from. A destination
    /// that exists is replaced as an in-place write would ([`replace::open`], then
    /// [`replace::commit`]: no link, locked, re-checked), keeping it as `<dest><backup>` when
    /// `backup` is set; whether it may be replaced at all (a live session, `--yes`) the caller
    /// decides before the run.
    OutDir {
        /// The folder.
        dir: PathBuf,
        /// Keep a destination that is replaced as `<dest><suffix>`.
        backup: Option<String>,
    },
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
pub fn known_of_files(pipeline: &Pipeline, files: &[(&Path, Treatment)]) -> Known {
    if pipeline.secret_pass() == Secrets::Ignores {
        return Known::default();
    }
    let each: Vec<Known> = files
        .par_iter()
        .map(|&(p, t)| {
            let origin = Origin::file(p);
            input::open(p)
                .and_then(|f| pipeline.known_in(&f.data, t == Treatment::Text, &origin))
                .unwrap_or_default()
        })
        .collect();
    let mut all = Known::default();
    for k in &each {
        all.merge(k);
    }
    all
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
        if let Input::File { session, .. } = inp {
            let main = session.clone();
            let key = match propagate {
                Propagate::Session => main,
                Propagate::Project => main.parent().map(Path::to_path_buf).unwrap_or(main),
            };
            groups.entry(key).or_default().push(i);
        }
    }
    for members in groups.values().filter(|m| m.len() > 1) {
        let paths: Vec<(&Path, Treatment)> = members
            .iter()
            .filter_map(|&i| match &inputs[i] {
                Input::File {
                    path, treatment, ..
                } => Some((path.as_path(), *treatment)),
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

/// The error of an input whose run panicked: one file that trips a bug is a reported failure.
pub const INTERNAL_ERROR: &str =
    "cchist failed on this file (an internal error; the file was left as it was): please report it with the message printed above";

/// Run one input's work with a panic in it caught (as ruff does per path): one file that
/// trips a bug is a reported failure, never a lost run. Writes go through `io::replace`,
/// whose staged file is removed when it is dropped unfinished, so the input is untouched.
/// The panic's own message is printed by the panic hook; it is not copied into the error,
/// which reports may carry elsewhere.
fn contained(work: impl FnOnce() -> Result<FileReport>) -> Result<FileReport> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| Err(Error::Other(INTERNAL_ERROR.into())))
}

/// Process every input with `pipeline`. Never stops at the first failing file: each
/// failure is reported in its [`Outcome`], a panic included ([`INTERNAL_ERROR`]).
pub fn run_all(pipeline: &Pipeline, inputs: &[Input], opts: &RunOptions) -> Vec<Outcome> {
    let seeds = seeds(pipeline, inputs, opts.propagate);
    if opts.mode == Mode::Stdout {
        // One file after another, on a pool of `-j` threads: a big file's parts run on them.
        let pool = opts.jobs.and_then(|n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .ok()
        });
        return match pool {
            Some(pool) => pool.install(|| run_all_to_stdout(pipeline, inputs, opts, &seeds)),
            None => run_all_to_stdout(pipeline, inputs, opts, &seeds),
        };
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
                    contained(|| run_one_known(pipeline, inp, &opts.mode, seed))
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
            .num_threads(n.clamp(1, inputs.len().max(cores())))
            .build()
        {
            Ok(pool) => pool.install(work),
            Err(_) => work(),
        },
        None => work(),
    }
}

/// The machine's threads (the default pool's size).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// [`run_all`] to stdout: output order is input order; each file streams straight out.
fn run_all_to_stdout(
    pipeline: &Pipeline,
    inputs: &[Input],
    opts: &RunOptions,
    seeds: &[std::sync::Arc<Known>],
) -> Vec<Outcome> {
    let stdout = io::stdout();
    let mut lock = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut outcomes = Vec::new();
    let mut broken = false;
    for (inp, seed) in inputs.iter().zip(seeds) {
        let result = if broken {
            Err(Error::Other("output closed".into()))
        } else {
            let r = contained(|| run_one_to_known(pipeline, inp, &mut lock, seed));
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
    outcomes
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
    if let Input::File {
        path, treatment, ..
    } = inp
    {
        match *treatment {
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

/// Run `pipeline` on one input in a file-writing mode.
pub fn run_one(pipeline: &Pipeline, inp: &Input, mode: &Mode) -> Result<FileReport> {
    run_one_known(pipeline, inp, mode, &Known::default())
}

/// [`run_one`] knowing the secrets `seed`: those of the other files of the input's session
/// (the session's files, [`known_of_files`]), replaced wherever they occur in this one.
///
/// A pipeline that reports secrets without replacing them (`check`) also reports those in
/// the path of a companion ([`name_findings`]), first.
pub fn run_one_known(
    pipeline: &Pipeline,
    inp: &Input,
    mode: &Mode,
    seed: &Known,
) -> Result<FileReport> {
    let mut report = run_one_content(pipeline, inp, mode, seed)?;
    if pipeline.secret_pass() == Secrets::Reports {
        let mut found = name_findings(pipeline, inp, seed);
        if !found.is_empty() {
            found.append(&mut report.findings);
            report.findings = found;
        }
    }
    Ok(report)
}

/// [`run_one_known`] but for the findings in the input's path.
fn run_one_content(
    pipeline: &Pipeline,
    inp: &Input,
    mode: &Mode,
    seed: &Known,
) -> Result<FileReport> {
    let origin = inp.origin();
    let rename = placeholder_for(pipeline, inp, seed);
    if let Input::File {
        path,
        rel,
        treatment,
        ..
    } = inp
    {
        match treatment {
            Treatment::Records => {}
            Treatment::Text => {
                return run_whole_file(pipeline, path, rel, mode, rename, &|p, d, o| {
                    p.run_text_known(d, o, seed)
                })
            }
            Treatment::Copy => {
                return run_whole_file(pipeline, path, rel, mode, rename, &|p, d, o| {
                    p.run_copy_known(d, o, seed)
                })
            }
        }
    }
    let Input::File { path, rel, .. } = inp else {
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
            let mut r = run_beside(pipeline, &f.data, path, &mut sink, seed)?;
            r.changed = sink
                .close()
                .map_err(|e| Error::io(&origin, "write", e))?
                .is_some();
            if rename.is_some() {
                r.changed = true;
                r.renamed = rename;
            }
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
                    rename.as_deref(),
                ) {
                    Err(e @ Error::Concurrent { .. }) => last = Some(e),
                    other => return other,
                }
            }
            Err(last.expect("loop ran"))
        }
        Mode::OutDir { dir, backup } => {
            let dest = dir.join(rel);
            replace::create_dirs_below(dir, rel)?;
            let f = input::open(path)?;
            let dest_origin = Origin::file(&dest);
            let mut out = BufWriter::with_capacity(
                1 << 16,
                replace::temp(&dest).map_err(|e| Error::io(&dest_origin, "create", e))?,
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
            // Looked at again right before the rename: no link was put on the way since.
            replace::refuse_links_below(dir, rel)?;
            put_copy(&dest, tmp, &f.meta, backup.as_deref())?;
            Ok(r)
        }
    }
}

/// Put the copy staged in `tmp` at `dest` (an `--out-dir` destination) with the mode and mtime
/// of its original (`meta`; a copy keeps its mtime, as a fork does, so it does not look
/// live). A destination that exists is replaced by the in-place protocol, kept as
/// `<dest><backup>` when asked; a fresh one is simply written.
fn put_copy(
    dest: &Path,
    tmp: crate::io::output::AtomicFile,
    meta: &std::fs::Metadata,
    backup: Option<&str>,
) -> Result<()> {
    if std::fs::symlink_metadata(dest).is_err() {
        let attrs = Attrs {
            mtime: meta.modified().ok(),
            ..Attrs::like(meta)
        };
        return replace::finish_file(dest, tmp, &attrs);
    }
    let was = replace::open(dest, false)?;
    let how = Replace {
        backup,
        record: backup.is_some_and(crate::io::backup::is_undoable),
        mode: meta.mode(),
        mtime: meta.modified().ok(),
        owner: replace::Owner::Try,
        appended: replace::Appended::Ignore,
    };
    replace::commit(dest, &was, tmp, how).map(drop)
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
    rename: Option<PathBuf>,
    transform: &dyn Fn(&Pipeline, &[u8], &Origin) -> WholeFile,
) -> Result<FileReport> {
    let f = match mode {
        // The same rules as a transcript: no links, no other hard links, locked, read whole.
        Mode::InPlace { break_links, .. } => replace::open(path, *break_links)?,
        _ => input::open(path)?,
    };
    let origin = Origin::file(path);
    let (new, mut report) = transform(pipeline, &f.data, &origin)?;
    let bytes: &[u8] = new.as_deref().unwrap_or(&f.data);
    match mode {
        Mode::DryRun => {
            if rename.is_some() {
                report.changed = true;
                report.renamed = rename;
            }
        }
        Mode::Stdout => io::stdout()
            .lock()
            .write_all(bytes)
            .map_err(|e| Error::io(&Origin::stdin(), "write", e))?,
        Mode::OutDir { dir, backup } => {
            // As a fork does: a binary file holding secrets is not copied (cchist cannot
            // redact it without breaking it); the run says so and is incomplete.
            if report
                .counters
                .contains_key(crate::engine::pipeline::BINARY_SKIPPED)
                && !report.findings.is_empty()
            {
                return Err(Error::BinaryLeftOut {
                    path: origin,
                    count: report.findings.len(),
                });
            }
            let dest = dir.join(rel);
            replace::create_dirs_below(dir, rel)?;
            // A copy: the original's owner when permitted, else whoever runs cchist.
            let o = Origin::file(&dest);
            let mut tmp = replace::temp(&dest).map_err(|e| Error::io(&o, "create", e))?;
            tmp.write_all(bytes)
                .map_err(|e| Error::io(&o, "write", e))?;
            replace::refuse_links_below(dir, rel)?;
            put_copy(&dest, tmp, &f.meta, backup.as_deref())?;
        }
        Mode::InPlace { backup, touch, .. } => {
            let suffix = crate::io::backup::suffix_for(path, backup.as_deref());
            let undoable = suffix.filter(|s| crate::io::backup::is_undoable(s));
            if let (Some(to), Some(suffix)) = (&rename, undoable) {
                let tmp = match &new {
                    Some(bytes) => Some(staged(path, bytes)?),
                    None => None,
                };
                let (_, to) = commit_renamed(path, &f, tmp, suffix, *touch, to.clone())?;
                report.changed = true;
                report.renamed = Some(to);
                return Ok(report);
            }
            if new.is_some() {
                let tmp = staged(path, bytes)?;
                replace::commit(path, &f, tmp, Replace::in_place(&f, suffix, *touch))?;
            }
            if let Some(to) = &rename {
                return Err(name_left(path, to, new.is_some()));
            }
        }
    }
    Ok(report)
}

/// `bytes` written to a temp file beside `path`, to replace it.
fn staged(path: &Path, bytes: &[u8]) -> Result<crate::io::output::AtomicFile> {
    let origin = Origin::file(path);
    let mut tmp = replace::temp(path).map_err(|e| Error::io(&origin, "create", e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(&origin, "write", e))?;
    Ok(tmp)
}

/// `path` shown as every report shows a name: the secrets in it replaced by their markers.
fn shown(path: &Path) -> String {
    crate::findings::report::shown_name(&path.display().to_string())
}

/// One part of a companion's path below its session's companion folder (a folder's name, or
/// the file's, last), and the secrets in it.
#[derive(Debug, Clone)]
pub struct NamePart {
    /// The part as it is.
    pub name: String,
    /// It with every secret replaced by its placeholder (`None`: it holds none).
    pub shown: Option<String>,
    /// What each secret in it is.
    pub found: Vec<KnownSecret>,
}

/// The parts of the path of the companion `inp` below its session's companion folder
/// (`tool-results/ghp_…/out.txt`: three), each with the secrets in it: those the pipeline's
/// rules find there and those the session knows (`seed`): a value a context rule found in the
/// transcript (`PASSWORD=…`) names a file as surely as a token does. Empty for an input that
/// is no companion (a transcript, a backup or copy, stdin) or when the pipeline ignores
/// secrets.
pub fn name_parts(pipeline: &Pipeline, inp: &Input, seed: &Known) -> Vec<NamePart> {
    let Input::File { path, session, .. } = inp else {
        return Vec::new();
    };
    if pipeline.secret_pass() == Secrets::Ignores
        || path == session
        || crate::io::backup::is_copy(path)
    {
        return Vec::new();
    }
    let Ok(rel) = path.strip_prefix(companion_dir(session)) else {
        return Vec::new();
    };
    let origin = Origin::file(path);
    rel.components()
        .map(|c| {
            let name = c.as_os_str().to_string_lossy().into_owned();
            let mut known = pipeline
                .known_in(name.as_bytes(), true, &origin)
                .unwrap_or_default();
            known.merge(&seed.within(name.as_bytes()));
            let hit = known.echoes().and_then(|e| {
                let (new, found) = e.text(name.as_bytes())?;
                let what: Vec<KnownSecret> =
                    found.iter().map(|x| e.secret(x.secret).clone()).collect();
                Some((String::from_utf8_lossy(&new).into_owned(), what))
            });
            let (shown, found) = match hit {
                Some((s, f)) => (Some(s), f),
                None => (None, Vec::new()),
            };
            NamePart { name, shown, found }
        })
        .collect()
}

/// The findings of the secrets in the path of the companion `inp` ([`name_parts`]): one per
/// secret, on the whole file (line 0), of kind [`crate::findings::NAME`].
pub fn name_findings(pipeline: &Pipeline, inp: &Input, seed: &Known) -> Vec<Finding> {
    let parts = name_parts(pipeline, inp, seed);
    let last = parts.len().saturating_sub(1);
    let mut out = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let whose = if i == last {
            "the file's name holds a secret"
        } else {
            "the name of a folder the file is in holds a secret"
        };
        for k in &p.found {
            out.push(Finding {
                rule: k.rule.clone(),
                line: 0,
                uuid: None,
                path: None,
                fingerprint: (!k.fingerprint.is_empty()).then(|| k.fingerprint.clone()),
                message: format!(
                    "{whose}: `cchist redact --in-place --backup` gives it a placeholder name, `cchist undo` gives the name back"
                ),
                kind: Some(crate::findings::NAME),
            });
        }
    }
    out
}

/// The path below the companion folder that the companion `inp` takes when parts of its
/// path hold secrets ([`name_parts`]): each such part in a form file systems take
/// ([`crate::stages::redact::file_safe_name`] by the default rules, else
/// [`crate::stages::redact::safe_form`] of what the pipeline and the session know), with the
/// byte offset in its file name where a numeric suffix goes. `None` when no part holds one.
fn safe_rel(parts: &[NamePart]) -> Option<(PathBuf, usize)> {
    let mut rel = PathBuf::new();
    let mut changed = false;
    let mut at = 0;
    for p in parts {
        let safe = crate::stages::redact::file_safe_name(&p.name).or_else(|| {
            p.shown
                .as_deref()
                .and_then(|s| crate::stages::redact::safe_form(&p.name, s))
        });
        match safe {
            Some((n, a)) => {
                changed = true;
                at = a;
                rel.push(n);
            }
            None => {
                at = p.name.rfind('.').filter(|&i| i > 0).unwrap_or(p.name.len());
                rel.push(&p.name);
            }
        }
    }
    changed.then_some((rel, at))
}

/// The placeholder name an in-place run gives the input `inp`: `Some` for a file of a
/// session's companion folder (not the transcript, not a backup or copy) whose file name, or
/// the name of a folder it is in, reads as a secret ([`name_parts`]: by the default rules,
/// the pipeline's, and the secrets its session knows, `seed`), when the pipeline replaces
/// secrets. The name is the redacted one in a form file systems take
/// ([`crate::stages::redact::file_safe_name`]: `tool-results/ghp_….txt` →
/// `tool-results/REDACTED-github-pat.txt`; `tool-results/ghp_…/out.txt` →
/// `tool-results/REDACTED-github-pat/out.txt`), with a numeric suffix
/// (`REDACTED-github-pat-1.txt`) when that is taken or has backups of its own.
pub fn placeholder_for(pipeline: &Pipeline, inp: &Input, seed: &Known) -> Option<PathBuf> {
    let Input::File { session, .. } = inp else {
        return None;
    };
    if pipeline.secret_pass() != Secrets::Replaces {
        return None;
    }
    let (rel, at) = safe_rel(&name_parts(pipeline, inp, seed))?;
    let dest = companion_dir(session).join(rel);
    let safe = dest.file_name()?.to_string_lossy().into_owned();
    Some(free_name(&dest, &safe, at))
}

/// The first of `safe`, `safe` with `-1`, `-2`… inserted at byte `at`, that names nothing
/// beside `path` and no backups.
pub fn free_name(path: &Path, safe: &str, at: usize) -> PathBuf {
    (0u32..)
        .map(|n| match n {
            0 => safe.to_string(),
            n => format!("{}-{n}{}", &safe[..at], &safe[at..]),
        })
        .map(|name| path.with_file_name(name))
        .find(|p| std::fs::symlink_metadata(p).is_err() && crate::io::backup::backups(p).is_empty())
        .expect("some name is free")
}

/// The next free placeholder name for the file at `path` ([`free_name`]), `to` being taken:
/// in `to`'s folder (a folder named after a secret gave it another).
fn next_free(path: &Path, to: &Path) -> PathBuf {
    let name = to.file_name().unwrap_or_default().to_string_lossy();
    let (safe, at) = crate::stages::redact::file_safe_name(
        &path.file_name().unwrap_or_default().to_string_lossy(),
    )
    .unwrap_or_else(|| {
        let at = name.rfind('.').filter(|&i| i > 0).unwrap_or(name.len());
        (name.clone().into_owned(), at)
    });
    free_name(to, &safe, at)
}

/// The path `rel` of an input in an `--out-dir` mirror: its file name the placeholder
/// ([`placeholder_for`], without the numeric suffix: two inputs that land on the same name
/// are refused before anything is written) when it reads as a secret. A copy for sharing
/// never carries a secret in its name.
pub fn mirror_rel(pipeline: &Pipeline, inp: &Input) -> Option<PathBuf> {
    let Input::File {
        path, rel, session, ..
    } = inp
    else {
        return None;
    };
    if pipeline.secret_pass() != Secrets::Replaces || path == session {
        return None;
    }
    // A companion: every part of its path below the companion folder that holds a secret
    // (a folder named after one too), by the rules.
    let parts = name_parts(pipeline, inp, &Known::default());
    if let Some((below, _)) = safe_rel(&parts) {
        let comps: Vec<_> = rel.components().collect();
        if comps.len() >= parts.len() {
            let mut out: PathBuf = comps[..comps.len() - parts.len()].iter().collect();
            out.push(below);
            return Some(out);
        }
    }
    let name = rel.file_name()?.to_string_lossy();
    let (safe, _) = crate::stages::redact::file_safe_name(&name)?;
    Some(rel.with_file_name(safe))
}

/// Where below its session's companion folder the companion `inp` goes when a part of its
/// path holds a secret ([`placeholder_for`] without looking for a free name): with the byte
/// offset in its file name where a numeric suffix goes. `None` when none does, or when the
/// pipeline does not replace secrets.
pub fn placeholder_rel(pipeline: &Pipeline, inp: &Input, seed: &Known) -> Option<(PathBuf, usize)> {
    if pipeline.secret_pass() != Secrets::Replaces {
        return None;
    }
    safe_rel(&name_parts(pipeline, inp, seed))
}

/// The error of a file whose name reads as a secret that an in-place run without an undoable
/// backup leaves under its name: nothing could rename it back.
fn name_left(path: &Path, to: &Path, redacted: bool) -> Error {
    let content = if redacted {
        "its content was redacted, its name was left"
    } else {
        "it was left as it was"
    };
    Error::Other(format!(
        "{}: the file's name holds a secret; {content}, since without a backup in cchist's naming `cchist undo` could not rename it back. Run the in-place command again with --backup (`cchist redact --in-place --backup`: it is renamed to {} and `cchist undo --all --since T` renames it back), or rename it yourself",
        shown(path),
        shown(to.file_name().map(Path::new).unwrap_or(to)),
    ))
}

/// Give the companion at `path` (read as `f`, still locked) the placeholder name `to`, its
/// new content `tmp` first when it changed: the original is kept as the backup
/// `<to><suffix>` (an undoable suffix), with the records `undo` needs — what was written
/// and the name it had ([`crate::io::backup::record_renamed`]). The name is taken only when
/// free (`RENAME_NOREPLACE`, or link and unlink); one taken meanwhile moves on to the next
/// free one. Returns what the commit did and the name the file took. When it cannot be
/// renamed, the file keeps its name and the backup takes that name too (undo restores the
/// content as for any file), and the error says so.
fn commit_renamed(
    path: &Path,
    f: &crate::io::input::InputFile,
    tmp: Option<crate::io::output::AtomicFile>,
    suffix: &str,
    touch: bool,
    mut to: PathBuf,
) -> Result<(replace::Committed, PathBuf)> {
    use crate::io::backup;
    // The original is kept before anything changes, under the name the file takes. Two
    // files of one run may have been given the same placeholder (and so the same backup
    // name, the run's suffix being one): the name is settled, and its backup made, one
    // file at a time, each skipping names taken or backed up.
    static SETTLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A folder named after a secret: the file moves into the folder's placeholder (made
    // owner-only where missing, never through a link), and the folder goes once empty.
    let from_dir = path.parent().unwrap_or(Path::new(""));
    let common = from_dir
        .ancestors()
        .find(|a| to.starts_with(a))
        .unwrap_or(Path::new(""))
        .to_path_buf();
    if let Some(dir) = to.parent().filter(|d| *d != from_dir) {
        make_private_dirs(&common, dir)?;
    }
    let mut kept = {
        let _one = SETTLING.lock().unwrap_or_else(|e| e.into_inner());
        if std::fs::symlink_metadata(&to).is_ok() || !backup::backups(&to).is_empty() {
            to = next_free(path, &to);
        }
        backup::stage(&to, suffix, f)?.persist()?
    };
    let mut done = replace::Committed::default();
    if let Some(tmp) = tmp {
        match replace::commit(path, f, tmp, Replace::in_place(f, None, touch)) {
            Ok(d) => done = d,
            Err(e) => {
                let _ = std::fs::remove_file(&kept);
                return Err(e);
            }
        }
    }
    let mut why = String::from("every placeholder name tried was taken meanwhile");
    for _ in 0..3 {
        match replace::rename_new(path, &to) {
            Ok(true) => {
                backup::record_written(&to, &kept)?;
                backup::record_renamed(&kept, path)?;
                done.backup = Some(kept);
                remove_empty_dirs(from_dir, &common);
                return Ok((done, to));
            }
            Ok(false) => {
                let next = {
                    let _one = SETTLING.lock().unwrap_or_else(|e| e.into_inner());
                    next_free(path, &to)
                };
                let moved = backup::name_of(&next, suffix);
                backup::move_backup(&kept, &moved)?;
                (kept, to) = (moved, next);
            }
            Err(e) => {
                why = format!("it could not be renamed ({e})");
                break;
            }
        }
    }
    let moved = backup::name_of(path, suffix);
    backup::move_backup(&kept, &moved)?;
    backup::record_written(path, &moved)?;
    if let Some(dir) = to.parent().filter(|d| *d != from_dir) {
        remove_empty_dirs(dir, &common);
    }
    Err(Error::Other(format!(
        "{}: the file's name holds a secret and {why}; its content was redacted (the backup `cchist undo` restores is beside it), its name was left: rename it yourself",
        shown(path)
    )))
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
/// appends meanwhile ([`replace`] has the protocol). Claude Code appends to a session by path
/// (open with O_APPEND, write, close) and never takes a lock.
fn in_place(
    pipeline: &Pipeline,
    path: &Path,
    backup: Option<&str>,
    touch: bool,
    break_links: bool,
    seed: &Known,
    rename: Option<&Path>,
) -> Result<FileReport> {
    let origin = Origin::file(path);
    // Another cchist writing this file goes first; then we read what it wrote.
    let f = replace::open(path, break_links)?;
    let mut sink = LazySink::new(&f.data, || {
        replace::temp(path).map(|a| BufWriter::with_capacity(1 << 16, a))
    });
    let mut report = run_beside(pipeline, &f.data, path, &mut sink, seed)?;
    sink.finish().map_err(|e| Error::io(&origin, "write", e))?;
    let out = sink.close().map_err(|e| Error::io(&origin, "write", e))?;
    report.changed = out.is_some();
    let tmp = match out {
        Some(out) => Some(
            out.into_inner()
                .map_err(|e| Error::io(&origin, "write", e.into_error()))?,
        ),
        None => None,
    };
    // A backup or a suffix copy is redacted like the session, but not backed up again.
    let backup = crate::io::backup::suffix_for(path, backup);
    // A companion whose name reads as a secret (it moves no records out: only the
    // transcript does) takes its placeholder name when undo can follow.
    if let (Some(to), true) = (rename, report.moved.is_empty()) {
        if let Some(suffix) = backup.filter(|s| crate::io::backup::is_undoable(s)) {
            let (done, to) = commit_renamed(path, &f, tmp, suffix, touch, to.to_path_buf())?;
            report.changed = true;
            report.renamed = Some(to);
            if done.carried > 0 {
                report
                    .counters
                    .insert("bytes-appended-during-replace".into(), done.carried);
            }
            return Ok(report);
        }
        let redacted = tmp.is_some();
        if let Some(tmp) = tmp {
            replace::commit(path, &f, tmp, Replace::in_place(&f, backup, touch))?;
        }
        return Err(name_left(path, to, redacted));
    }
    let Some(tmp) = tmp else {
        return Ok(report);
    };
    // Records moved out are in their new files before they leave this one; if this one is
    // not replaced after all, the new files go again.
    let created = write_moved(path, &report.moved, f.meta.mode())?;
    let done = match replace::commit(path, &f, tmp, Replace::in_place(&f, backup, touch)) {
        Ok(d) => d,
        Err(e) => {
            remove_all(&created);
            return Err(e);
        }
    };
    let undoable = backup.is_some_and(crate::io::backup::is_undoable);
    if let Some(b) = done
        .backup
        .as_deref()
        .filter(|_| undoable && !created.is_empty())
    {
        let files: Vec<(PathBuf, &[u8])> = created
            .iter()
            .cloned()
            .zip(report.moved.iter().map(|m| &m.bytes[..]))
            .collect();
        crate::io::backup::record_created(b, &files)?;
    }
    if done.carried > 0 {
        report
            .counters
            .insert("bytes-appended-during-replace".into(), done.carried);
    }
    Ok(report)
}

/// Run `pipeline` on `data` (the file at `path`, written where it is or not at all), its
/// stages free to move records beside it when one may ([`Pipeline::moves_records`]).
fn run_beside(
    pipeline: &Pipeline,
    data: &[u8],
    path: &Path,
    sink: &mut dyn Sink,
    seed: &Known,
) -> Result<FileReport> {
    let companions = pipeline
        .moves_records()
        .then(|| companions_of(path))
        .flatten();
    let origin = Origin::file(path);
    Ok(pipeline
        .run_buffer_moving(data, &origin, sink, false, seed, companions)?
        .0)
}

/// The companion folder of the session at `path` (`<id>.jsonl` → `<id>/`), as
/// `claude::layout::SessionFile::companion_dir` names it (the engine sits below `claude`).
fn companion_dir(path: &Path) -> PathBuf {
    path.with_extension("")
}

/// What the session at `path` has beside it that records could be moved into: the
/// companion files that exist (`subagents/*`), which nothing is moved into. `None` (nothing
/// moves) when its companion folder, or `subagents/` in it, is there but not a plain folder
/// (a link is not followed: writes never leave the folder given).
pub(crate) fn companions_of(path: &Path) -> Option<Companions> {
    let comp = companion_dir(path);
    let mut existing = std::collections::HashSet::new();
    for dir in [comp.clone(), comp.join("subagents")] {
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return None,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Some(Companions::default());
            }
            Err(_) => return None,
        }
    }
    for e in std::fs::read_dir(comp.join("subagents")).ok()?.flatten() {
        existing.insert(Path::new("subagents").join(e.file_name()));
    }
    Some(Companions {
        existing,
        out: Vec::new(),
    })
}

/// Create each file of `moved` under the companion folder of the session at `path` (mode
/// `mode`, as the session's), folders made owner-only where missing, none written over: one
/// that appeared since the run looked is a concurrent change (the whole edit is retried, and
/// then leaves those records where they are). Returns the files created; on an error those
/// created so far are removed.
fn write_moved(path: &Path, moved: &[MovedOut], mode: u32) -> Result<Vec<PathBuf>> {
    let comp = companion_dir(path);
    let mut created = Vec::new();
    for m in moved {
        let dest = comp.join(&m.rel);
        let made = make_private_dirs(&comp, dest.parent().unwrap_or(&comp)).and_then(|()| {
            replace::persist_new(&dest, &m.bytes, mode & 0o7777)
                .map_err(|e| Error::io(&Origin::file(&dest), "create", e))
        });
        match made {
            Ok(true) => created.push(dest),
            Ok(false) => {
                remove_all(&created);
                return Err(Error::Concurrent {
                    path: Origin::file(&dest),
                });
            }
            Err(e) => {
                remove_all(&created);
                return Err(e);
            }
        }
    }
    Ok(created)
}

/// Create `dir` and the folders between `base`'s parent and it, owner-only, refusing any that
/// is there but not a plain folder (a link).
fn make_private_dirs(base: &Path, dir: &Path) -> Result<()> {
    let mut chain: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| d.starts_with(base))
        .collect();
    chain.reverse();
    for d in chain {
        match std::fs::DirBuilder::new().mode(0o700).create(d) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if !std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()) {
                    return Err(Error::Other(format!(
                        "{}: not a folder (a link is not followed); the records stay where they are",
                        d.display()
                    )));
                }
            }
            Err(e) => return Err(Error::io(&Origin::file(d), "create directory", e)),
        }
    }
    Ok(())
}

/// Remove `dir` and the folders above it up to `base` (not included) while they are empty:
/// a folder named after a secret that its files left for their placeholder's.
pub fn remove_empty_dirs(dir: &Path, base: &Path) {
    for d in dir
        .ancestors()
        .take_while(|d| *d != base && d.starts_with(base))
    {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
    }
}

/// Remove files this run created (undoing a write that did not complete).
fn remove_all(files: &[PathBuf]) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pipeline::OnInvalid;
    use crate::stages::{Cx, Stage, Verdict};
    use crate::transcript::record::Record;

    /// A stage with a bug: it panics on a record holding `boom`.
    struct Panics;
    impl Stage for Panics {
        fn name(&self) -> &'static str {
            "panics"
        }
        fn record(&self, rec: &mut Record<'_>, _: &mut Cx) -> Result<Verdict> {
            assert!(memchr::memmem::find(rec.raw(), b"boom").is_none(), "a bug");
            Ok(Verdict::Keep)
        }
    }

    /// A companion file that appeared after the run looked is not written over: the write is
    /// a concurrent change (retried, then the records stay), and what it created before is
    /// removed again.
    #[test]
    fn moved_records_never_overwrite_a_file_that_appeared() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("s.jsonl");
        std::fs::write(&session, "{}\n").unwrap();
        let moved = |rel: &str| MovedOut {
            rel: PathBuf::from(rel),
            records: 1,
            bytes: b"{\"uuid\":\"x\"}\n".to_vec(),
        };
        let subagents = dir.path().join("s/subagents");
        std::fs::create_dir_all(&subagents).unwrap();
        std::fs::write(subagents.join("agent-b.jsonl"), "theirs\n").unwrap();
        let r = write_moved(
            &session,
            &[
                moved("subagents/agent-a.jsonl"),
                moved("subagents/agent-b.jsonl"),
            ],
            0o600,
        );
        assert!(matches!(r, Err(Error::Concurrent { .. })), "{:?}", r.err());
        assert!(!subagents.join("agent-a.jsonl").exists(), "removed again");
        assert_eq!(
            std::fs::read(subagents.join("agent-b.jsonl")).unwrap(),
            b"theirs\n"
        );
    }

    #[test]
    fn a_panic_on_one_file_is_that_files_failure_and_the_others_run() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let inputs: Vec<Input> = ["a", "bad", "c"]
            .iter()
            .map(|n| {
                let path = dir.path().join(format!("{n}.jsonl"));
                let body = if *n == "bad" {
                    "{\"x\":\"boom\"}\n"
                } else {
                    "{\"x\":1}\n"
                };
                std::fs::write(&path, body).unwrap();
                Input::File {
                    rel: PathBuf::from(format!("{n}.jsonl")),
                    treatment: Treatment::Records,
                    session: path.clone(),
                    path,
                }
            })
            .collect();
        let p = Pipeline::new(vec![Box::new(Panics)], OnInvalid::Keep, "test".into());
        let opts = RunOptions {
            mode: Mode::OutDir {
                dir: out.clone(),
                backup: None,
            },
            jobs: Some(2),
            ..RunOptions::default()
        };
        let outcomes = run_all(&p, &inputs, &opts);
        let ok: Vec<bool> = outcomes.iter().map(|o| o.result.is_ok()).collect();
        assert_eq!(ok, [true, false, true]);
        assert!(matches!(&outcomes[1].result, Err(Error::Other(m)) if m == INTERNAL_ERROR));
        assert!(out.join("a.jsonl").exists() && out.join("c.jsonl").exists());
        assert!(
            !out.join("bad.jsonl").exists(),
            "nothing written for the failed file"
        );
    }
}
