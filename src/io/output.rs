//! Writers: where records go, and atomic in-place replacement.
//!
//! [`SpanWriter`] writes runs of untouched records as the input's own bytes (the pipeline
//! gathers them into one span per run).
//! [`LazySink`] writes nothing until the first change, so an unchanged file costs no write at
//! all and is never rewritten. [`AtomicFile`] is a temp file in the target's own folder that
//! replaces the target by rename after fsync, keeping its mode and (unless asked) its mtime.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A record as a writer sees it: something that appends its output line (body and
/// terminator) to a buffer. (`transcript::record::Record` is the one implementation; the trait
/// keeps `io` free of what a transcript is.)
pub trait Encode {
    /// Append the output bytes, terminator included.
    fn write_to(&self, out: &mut Vec<u8>);
}

/// Something records are written to.
pub trait Sink {
    /// Write one kept record that a stage changed or created (or that is not part of the
    /// input buffer being run).
    fn put(&mut self, rec: &dyn Encode) -> io::Result<()>;
    /// Write bytes of the input verbatim: a run of adjacent untouched records, terminators
    /// included. The pipeline gathers such runs, so an unchanged file is one call.
    fn put_span(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Write a changed record's output line (terminator included) that the caller gives
    /// away: a sink that keeps what it is given keeps this one instead of a copy (a 200 MB
    /// record was held twice, its bytes and their copy).
    fn put_owned(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        self.put_span(&bytes)
    }
    /// Flush anything pending.
    fn finish(&mut self) -> io::Result<()>;
}

/// Writes records to `W`: changed ones serialized, runs of untouched ones as the input's bytes.
pub struct SpanWriter<W: Write> {
    w: W,
    scratch: Vec<u8>,
}

impl<W: Write> SpanWriter<W> {
    /// A writer over `w`.
    pub fn new(w: W) -> Self {
        SpanWriter {
            w,
            scratch: Vec::new(),
        }
    }

    /// Flush and return the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.w.flush()?;
        Ok(self.w)
    }
}

impl<W: Write> Sink for SpanWriter<W> {
    fn put(&mut self, rec: &dyn Encode) -> io::Result<()> {
        self.scratch.clear();
        rec.write_to(&mut self.scratch);
        self.w.write_all(&self.scratch)
    }

    fn put_span(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.w.write_all(bytes)
    }

    fn finish(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

/// A sink over a whole input buffer that opens its destination only once the output differs
/// from the input. `open` is called at most once.
pub struct LazySink<'b, W: Write, F: FnMut() -> io::Result<W>> {
    base: &'b [u8],
    /// Bytes of `base` reproduced so far by untouched records in order.
    same_upto: usize,
    open: F,
    out: Option<SpanWriter<W>>,
}

impl<'b, W: Write, F: FnMut() -> io::Result<W>> LazySink<'b, W, F> {
    /// A lazy sink over `base` (the whole input).
    pub fn new(base: &'b [u8], open: F) -> Self {
        LazySink {
            base,
            same_upto: 0,
            open,
            out: None,
        }
    }

    fn diverge(&mut self) -> io::Result<&mut SpanWriter<W>> {
        if self.out.is_none() {
            let mut w = SpanWriter::new((self.open)()?);
            w.put_span(&self.base[..self.same_upto])?;
            self.out = Some(w);
        }
        Ok(self.out.as_mut().expect("just opened"))
    }

    /// Finish; returns the writer when the output differs from the input, `None` when it is
    /// identical (nothing was opened or written).
    pub fn close(mut self) -> io::Result<Option<W>> {
        if self.out.is_none() && self.same_upto != self.base.len() {
            self.diverge()?;
        }
        match self.out.take() {
            Some(w) => w.into_inner().map(Some),
            None => Ok(None),
        }
    }
}

impl<'b, W: Write, F: FnMut() -> io::Result<W>> Sink for LazySink<'b, W, F> {
    fn put(&mut self, rec: &dyn Encode) -> io::Result<()> {
        self.diverge()?.put(rec)
    }

    fn put_span(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.out.is_none() {
            // Still the same as the input if these are the input's very next bytes (compared
            // by address: the pipeline hands out spans of the buffer it runs over).
            let off = (bytes.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
            if off == self.same_upto && bytes.len() <= self.base.len() - off {
                self.same_upto += bytes.len();
                return Ok(());
            }
        }
        self.diverge()?.put_span(bytes)
    }

    fn finish(&mut self) -> io::Result<()> {
        match &mut self.out {
            Some(w) => w.finish(),
            None => Ok(()),
        }
    }
}

/// A sink that keeps what a run writes instead of writing it — runs of the input buffer by
/// position, other bytes copied — so that every line can be looked at once more before it is
/// written ([`Recording::pieces`]): what the engine does with the secrets a session turned out
/// to know. Holds only the bytes that differ from the input.
pub struct Recording<'b> {
    base: &'b [u8],
    pieces: Vec<Piece>,
    owned: Vec<u8>,
    /// Lines given away whole ([`Sink::put_owned`]), kept as they were given.
    given: Vec<Vec<u8>>,
}

/// One run of output bytes: a range of the input buffer, or of the copied bytes, or one of
/// the lines given away.
#[derive(Debug, Clone, Copy)]
enum Piece {
    Base(usize, usize),
    Owned(usize, usize),
    Given(usize),
}

impl<'b> Recording<'b> {
    /// A recording over `base` (the buffer being run over).
    pub fn new(base: &'b [u8]) -> Self {
        Recording {
            base,
            pieces: Vec::new(),
            owned: Vec::new(),
            given: Vec::new(),
        }
    }

    fn push_owned(&mut self, bytes: &[u8]) {
        let start = self.owned.len();
        self.owned.extend_from_slice(bytes);
        match self.pieces.last_mut() {
            Some(Piece::Owned(_, e)) if *e == start => *e = self.owned.len(),
            _ => self.pieces.push(Piece::Owned(start, self.owned.len())),
        }
    }

    /// The output in order: each run with `true` when it is a slice of the input buffer (so
    /// that a [`LazySink`] still sees an unchanged input as unchanged).
    pub fn pieces(&self) -> impl Iterator<Item = (&[u8], bool)> + '_ {
        self.pieces.iter().map(|p| match *p {
            Piece::Base(s, e) => (&self.base[s..e], true),
            Piece::Owned(s, e) => (&self.owned[s..e], false),
            Piece::Given(i) => (&self.given[i][..], false),
        })
    }
}

impl Sink for Recording<'_> {
    fn put(&mut self, rec: &dyn Encode) -> io::Result<()> {
        // Encoded where it is kept: a scratch copy of a 100 MB record stayed allocated for the
        // rest of the run, beside the kept copy.
        let start = self.owned.len();
        rec.write_to(&mut self.owned);
        match self.pieces.last_mut() {
            Some(Piece::Owned(_, e)) if *e == start => *e = self.owned.len(),
            _ => self.pieces.push(Piece::Owned(start, self.owned.len())),
        }
        Ok(())
    }

    fn put_owned(&mut self, bytes: Vec<u8>) -> io::Result<()> {
        self.pieces.push(Piece::Given(self.given.len()));
        self.given.push(bytes);
        Ok(())
    }

    fn put_span(&mut self, bytes: &[u8]) -> io::Result<()> {
        let off = (bytes.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
        if off <= self.base.len() && bytes.len() <= self.base.len() - off {
            let end = off + bytes.len();
            match self.pieces.last_mut() {
                Some(Piece::Base(_, e)) if *e == off => *e = end,
                _ => self.pieces.push(Piece::Base(off, end)),
            }
        } else {
            self.push_owned(bytes);
        }
        Ok(())
    }

    fn finish(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Suffix of cchist's temp files (`.<name>.cchist-tmp.<pid>.<n>`), so a later run can find and
/// remove leftovers of a killed run.
pub const TEMP_MARK: &str = ".cchist-tmp.";

/// A temp file beside `target` that atomically replaces it on [`AtomicFile::commit`].
/// Dropped without commit, it removes itself.
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Create a temp file (mode 0600) in `target`'s folder.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let dir = target
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        loop {
            let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temp = dir.join(format!(".{name}{TEMP_MARK}{}.{n}", std::process::id()));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)
            {
                Ok(file) => {
                    return Ok(AtomicFile {
                        target: target.to_path_buf(),
                        temp,
                        file: Some(file),
                    })
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The open temp file.
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("temp file open until commit")
    }

    /// The open temp file, shared.
    pub fn file_ref(&self) -> &File {
        self.file.as_ref().expect("temp file open until commit")
    }

    /// The temp file's path.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// fsync the temp file, give it `mode` (and `mtime` when given), and rename it over the
    /// target; then fsync the folder so the rename is durable.
    pub fn commit(
        mut self,
        mode: Option<u32>,
        mtime: Option<std::time::SystemTime>,
    ) -> io::Result<()> {
        self.prepare(mode, mtime)?;
        self.persist()
    }

    /// Everything [`AtomicFile::commit`] does before the rename: give the temp file `mode` (and
    /// `mtime` when given) and fsync it. Lets a caller make its last checks right before
    /// [`AtomicFile::persist`], after the slow fsync.
    pub fn prepare(
        &mut self,
        mode: Option<u32>,
        mtime: Option<std::time::SystemTime>,
    ) -> io::Result<()> {
        let file = self.file();
        if let Some(m) = mode {
            file.set_permissions(std::fs::Permissions::from_mode(m & 0o7777))?;
        }
        if let Some(t) = mtime {
            file.set_times(std::fs::FileTimes::new().set_modified(t))?;
        }
        file.sync_all()
    }

    /// Rename the temp file over the target, then fsync the folder so the rename is durable.
    /// Call [`AtomicFile::prepare`] first (or use [`AtomicFile::commit`]).
    pub fn persist(mut self) -> io::Result<()> {
        drop(self.file.take());
        std::fs::rename(&self.temp, &self.target)?;
        self.temp = PathBuf::new();
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file().write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

/// True when `name` is a cchist temp file left by a killed run.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARK)
}

/// The parts of a cchist temp file name `.<target>.cchist-tmp.<pid>.<n>`: the target's file
/// name, the id of the process that wrote it, and its counter. `None` for any other name.
///
/// ```
/// use cchist::io::output::parse_temp_name;
/// assert_eq!(parse_temp_name(".s.jsonl.cchist-tmp.42.7"), Some(("s.jsonl", 42, 7)));
/// assert_eq!(parse_temp_name(".s.jsonl.cchist-tmp.42.7.bak"), None);
/// assert_eq!(parse_temp_name("s.jsonl"), None);
/// ```
pub fn parse_temp_name(name: &str) -> Option<(&str, u32, u64)> {
    let rest = name.strip_prefix('.')?;
    let at = rest.rfind(TEMP_MARK)?;
    let target = &rest[..at];
    let (pid, n) = rest[at + TEMP_MARK.len()..].split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if target.is_empty() || !digits(pid) || !digits(n) {
        return None;
    }
    let pid: u32 = pid.parse().ok()?;
    if pid == 0 || pid > i32::MAX as u32 {
        return None;
    }
    Some((target, pid, n.parse().ok()?))
}

/// What [`remove_leftovers`] did with one temp file.
#[derive(Debug)]
pub enum Leftover {
    /// Removed.
    Removed,
    /// Left alone, and why (the process that writes it still runs, it is newer than the run).
    Kept(String),
    /// Removing it failed.
    Failed(io::Error),
}

/// Remove temp files that killed cchist runs left behind (see [`TEMP_MARK`]).
///
/// Only a path whose name parses as ours ([`parse_temp_name`]) and that is a regular file (not
/// a link) is considered; it is removed only when it was last modified before `started` (the
/// start of the current run) and the process that wrote it is gone. Anything else is kept.
pub fn remove_leftovers(
    paths: &[PathBuf],
    started: std::time::SystemTime,
) -> Vec<(PathBuf, Leftover)> {
    let mut done = Vec::new();
    for p in paths {
        let Some((_, pid, _)) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(parse_temp_name)
        else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            continue;
        };
        if !meta.file_type().is_file() {
            continue;
        }
        let outcome = if meta.modified().map_or(true, |m| m >= started) {
            Leftover::Kept("newer than this run (another cchist is writing it?)".into())
        } else if process_running(pid) {
            Leftover::Kept(format!("process {pid}, which writes it, is still running"))
        } else {
            match std::fs::remove_file(p) {
                Ok(()) => Leftover::Removed,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => Leftover::Failed(e),
            }
        };
        done.push((p.clone(), outcome));
    }
    done
}

/// True when a process with this id exists (ours included).
fn process_running(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Ok(pid) = i32::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
