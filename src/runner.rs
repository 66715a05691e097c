//! Running a pipeline over many inputs: to stdout, in place (atomically), into a mirror folder,
//! or as a dry run; files in parallel, reports in input order.

use std::io::{self, BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, Origin, Result};
use crate::input;
use crate::output::{AtomicFile, LazySink, Sink, SpanWriter};
use crate::pipeline::{FileReport, Pipeline};
use crate::walk::Input;

/// Where output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Concatenated to standard output, in input order.
    Stdout,
    /// Each file replaced atomically; unchanged files are not rewritten.
    InPlace {
        /// Keep a copy of the original as `<file><suffix>`.
        backup: Option<String>,
        /// Set the mtime to now instead of keeping the original.
        touch: bool,
    },
    /// Mirrored under a folder, by path relative to the argument it came from.
    OutDir(PathBuf),
    /// Nothing written; reports only.
    DryRun,
}

/// Options for [`run_all`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output mode.
    pub mode: Mode,
    /// Worker threads (`None` = all cores).
    pub jobs: Option<usize>,
}

/// The outcome for one input.
pub struct Outcome {
    /// The input.
    pub input: Input,
    /// Its report, or why it failed.
    pub result: Result<FileReport>,
}

/// Process every input with `pipeline`. Never stops at the first failing file: each
/// failure is reported in its [`Outcome`].
pub fn run_all(pipeline: &Pipeline, inputs: &[Input], opts: &RunOptions) -> Vec<Outcome> {
    if opts.mode == Mode::Stdout {
        // Output order is input order; stream each file straight to stdout.
        let stdout = io::stdout();
        let mut lock = BufWriter::with_capacity(1 << 16, stdout.lock());
        let mut outcomes = Vec::new();
        let mut broken = false;
        for inp in inputs {
            let result = if broken {
                Err(Error::Other("output closed".into()))
            } else {
                let r = run_one_to(pipeline, inp, &mut lock);
                if let Err(Error::Io { source, .. }) = &r {
                    broken = source.kind() == io::ErrorKind::BrokenPipe;
                }
                r
            };
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
            .map(|inp| Outcome {
                input: inp.clone(),
                result: run_one(pipeline, inp, &opts.mode),
            })
            .collect()
    };
    match opts.jobs {
        Some(n) => match rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
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
    let origin = inp.origin();
    let mut sink = SpanWriter::new(w);
    let report = match inp {
        Input::Stdin => pipeline.run_stream(io::stdin().lock(), &origin, &mut sink)?,
        Input::File { path, .. } => {
            let f = input::open(path)?;
            let r = pipeline.run_buffer(&f.data, &origin, &mut sink)?;
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
    let origin = inp.origin();
    let Input::File { path, rel } = inp else {
        return match mode {
            Mode::DryRun => {
                let mut sink = NullSink;
                pipeline.run_stream(io::stdin().lock(), &origin, &mut sink)
            }
            _ => run_one_to(pipeline, inp, &mut io::stdout().lock()),
        };
    };
    match mode {
        Mode::Stdout => run_one_to(pipeline, inp, &mut io::stdout().lock()),
        Mode::DryRun => {
            let f = input::open(path)?;
            let mut sink = LazySink::new(&f.data, || Ok(io::sink()));
            let mut r = pipeline.run_buffer(&f.data, &origin, &mut sink)?;
            r.changed = sink
                .close()
                .map_err(|e| Error::io(&origin, "write", e))?
                .is_some();
            Ok(r)
        }
        Mode::InPlace { backup, touch } => {
            // A concurrent append makes us retry; Claude Code appends a few records at a time.
            let mut last = None;
            for _ in 0..3 {
                match in_place(pipeline, path, backup.as_deref(), *touch) {
                    Err(e @ Error::Concurrent { .. }) => last = Some(e),
                    other => return other,
                }
            }
            Err(last.expect("loop ran"))
        }
        Mode::OutDir(dir) => {
            let dest = dir.join(rel);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| Error::io(&Origin::file(parent), "create directory", e))?;
            }
            let f = input::open(path)?;
            let dest_origin = Origin::file(&dest);
            let mut out = BufWriter::with_capacity(
                1 << 16,
                AtomicFile::create(&dest).map_err(|e| Error::io(&dest_origin, "create", e))?,
            );
            let mut sink = SpanWriter::new(&mut out);
            let r = pipeline.run_buffer(&f.data, &origin, &mut sink)?;
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

/// A sink that discards everything.
pub struct NullSink;

impl Sink for NullSink {
    fn put(&mut self, _rec: &crate::record::Record<'_>) -> io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn in_place(
    pipeline: &Pipeline,
    path: &Path,
    backup: Option<&str>,
    touch: bool,
) -> Result<FileReport> {
    let origin = Origin::file(path);
    let lmeta = std::fs::symlink_metadata(path).map_err(|e| Error::io(&origin, "stat", e))?;
    if lmeta.file_type().is_symlink() {
        return Err(Error::Other(format!(
            "{}: is a symbolic link; cchist does not replace links in place (pass the real file)",
            path.display()
        )));
    }
    let f = input::open(path)?;
    let mut sink = LazySink::new(&f.data, || {
        AtomicFile::create(path).map(|a| BufWriter::with_capacity(1 << 16, a))
    });
    let mut report = pipeline.run_buffer(&f.data, &origin, &mut sink)?;
    sink.finish().map_err(|e| Error::io(&origin, "write", e))?;
    let Some(out) = sink.close().map_err(|e| Error::io(&origin, "write", e))? else {
        report.changed = false;
        return Ok(report);
    };
    report.changed = true;
    let tmp = out
        .into_inner()
        .map_err(|e| Error::io(&origin, "write", e.into_error()))?;
    // Did the file grow or change while we read it (a live session appending)?
    let now = std::fs::metadata(path).map_err(|e| Error::io(&origin, "stat", e))?;
    if now.len() != f.meta.len()
        || now.mtime() != f.meta.mtime()
        || now.mtime_nsec() != f.meta.mtime_nsec()
    {
        return Err(Error::Concurrent { path: origin });
    }
    // Keep the owner (matters when root edits a user's files); failure is harmless otherwise.
    let _ = std::os::unix::fs::fchown(tmp.file_ref(), Some(f.meta.uid()), Some(f.meta.gid()));
    if let Some(suffix) = backup {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let bpath = PathBuf::from(name);
        std::fs::copy(path, &bpath).map_err(|e| Error::io(&Origin::file(&bpath), "backup", e))?;
        let _ = std::fs::File::open(&bpath)
            .and_then(|b| b.set_times(std::fs::FileTimes::new().set_modified(f.meta.modified()?)));
    }
    drop(f);
    let mtime = if touch { None } else { now.modified().ok() };
    tmp.commit(Some(now.mode()), mtime)
        .map_err(|e| Error::io(&origin, "rename", e))?;
    Ok(report)
}
