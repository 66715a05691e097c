//! Input sources: memory-mapped files, read files, and streamed stdin.
//!
//! Policy (as in ripgrep): a named regular file is memory-mapped, since a map costs nothing to
//! set up and lets untouched records be written straight from the page cache; when mapping
//! fails (empty file, special file, a file system that refuses) the file is read into memory.
//! Standard input is never held whole unless a session-scoped stage needs the whole session:
//! [`stream_chunks`] hands out batches of complete lines from one reusable buffer.

use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use crate::error::{Error, Origin, Result};

/// The bytes of one input file.
pub enum Data {
    /// A read-only memory map.
    Mapped(memmap2::Mmap),
    /// Bytes read into memory.
    Owned(Vec<u8>),
    /// A stream read whole into anonymous memory (its first `usize` bytes).
    Anon(memmap2::MmapMut, usize),
}

impl Deref for Data {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Data::Mapped(m) => m,
            Data::Owned(v) => v,
            Data::Anon(m, len) => &m[..*len],
        }
    }
}

/// An opened input file, with the metadata observed when it was opened.
pub struct InputFile {
    /// The file's bytes.
    pub data: Data,
    /// Metadata at open time (size, mode, mtime), used to notice concurrent growth and to
    /// restore mode and mtime after an in-place write.
    pub meta: std::fs::Metadata,
    /// The open file. An in-place write keeps it to see what a concurrent writer appended to
    /// the original inode while it was being replaced.
    pub file: File,
}

/// Open `path` for reading, memory-mapping it when possible.
pub fn open(path: &Path) -> Result<InputFile> {
    let origin = Origin::file(path);
    let file = File::open(path).map_err(|e| Error::io(&origin, "open", e))?;
    let meta = file.metadata().map_err(|e| Error::io(&origin, "stat", e))?;
    if meta.is_dir() {
        return Err(Error::Other(format!(
            "{}: is a directory; pass it as a path to walk (its *.jsonl files are processed)",
            path.display()
        )));
    }
    if meta.is_file() && meta.len() > 0 {
        // SAFETY: the map is read-only; a concurrent writer (Claude Code appending) may change
        // bytes past the length we use, and a truncation by another process could fault. We
        // compare the length again before any in-place replace and accept that risk for speed,
        // as ripgrep does.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok(InputFile {
                data: Data::Mapped(map),
                meta,
                file,
            });
        }
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    (&file)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(&origin, "read", e))?;
    Ok(InputFile {
        data: Data::Owned(buf),
        meta,
        file,
    })
}

/// The whole of a file this process has locked for an in-place write, read into memory: a
/// map would turn a truncation by another process (which no lock stops) into SIGBUS, and an
/// in-place write must end in an error that leaves the file alone, never in a crash.
pub fn read_locked(locked: crate::io::lock::Locked, origin: &Origin) -> Result<InputFile> {
    let crate::io::lock::Locked { file, meta } = locked;
    let mut buf = Vec::with_capacity(meta.len() as usize);
    (&file)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io(origin, "read", e))?;
    if buf.len() as u64 != meta.len() {
        // Shrunk or grew while read: the growth check would catch growth later, but a
        // shrink means someone truncated it: say so now.
        return Err(Error::Concurrent {
            path: origin.clone(),
        });
    }
    Ok(InputFile {
        data: Data::Owned(buf),
        meta,
        file,
    })
}

/// Read all of `reader` into memory (used when a session-scoped stage needs stdin whole).
pub fn read_all(mut reader: impl Read, origin: &Origin) -> Result<Data> {
    let read_err = |e| Error::io(origin, "read", e);
    // Grown by doubling in anonymous maps rather than a Vec: a map's untouched pages cost
    // nothing, and an outgrown one goes back to the system at once (the allocator would
    // keep it), so reading a 1 GB session peaks near 2 GB only while it is copied.
    let Ok(mut map) = memmap2::MmapMut::map_anon(FIRST_MAP) else {
        let mut buf = Vec::new();
        reader.read_to_end(&mut buf).map_err(read_err)?;
        return Ok(Data::Owned(buf));
    };
    let mut len = 0;
    loop {
        if len == map.len() {
            let mut bigger = memmap2::MmapMut::map_anon(map.len() * 2).map_err(read_err)?;
            bigger[..len].copy_from_slice(&map[..len]);
            map = bigger;
        }
        match reader.read(&mut map[len..]) {
            Ok(0) => return Ok(Data::Anon(map, len)),
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(read_err(e)),
        }
    }
}

/// Reserved size of the first map of [`read_all`] (address space only until written).
const FIRST_MAP: usize = 64 << 20;

/// Standard input whole: memory-mapped when it is a regular file read from its start (`cchist
/// relink < session.jsonl`), read otherwise (a pipe).
pub fn read_stdin_all() -> Result<Data> {
    let stdin = std::io::stdin();
    if let Some(map) = map_stdin(&stdin) {
        return Ok(Data::Mapped(map));
    }
    read_all(stdin.lock(), &Origin::stdin())
}

fn map_stdin(stdin: &std::io::Stdin) -> Option<memmap2::Mmap> {
    use std::os::fd::AsRawFd;
    let fd = stdin.as_raw_fd();
    // SAFETY: fstat and lseek on an open descriptor, with a zeroed stat buffer.
    let (is_file, size, at_start) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return None;
        }
        (
            st.st_mode & libc::S_IFMT == libc::S_IFREG,
            st.st_size,
            libc::lseek(fd, 0, libc::SEEK_CUR) == 0,
        )
    };
    if !is_file || size <= 0 || !at_start {
        return None;
    }
    // SAFETY: as for a named file (see `open`): read-only, a concurrent truncation could fault.
    unsafe { memmap2::Mmap::map(fd) }.ok()
}

/// Size of one read from a stream.
const CHUNK: usize = 1 << 20;

/// Stream `reader` as batches of complete lines.
///
/// `sink(batch, first_line_number)` receives byte ranges that end on a line boundary, except the
/// very last batch, which may end with an unterminated line. Memory stays at about one chunk plus
/// the longest line.
pub fn stream_chunks(
    reader: impl Read,
    origin: &Origin,
    sink: impl FnMut(&[u8], usize) -> Result<()>,
) -> Result<()> {
    stream_chunks_after(StreamBuf::new(), reader, origin, sink)
}

/// A stream's buffer: anonymous memory that grows in place ([`StreamBuf::reserve`]) and gives
/// back what it no longer needs at once. Read into a `Vec`, one long line cost its length
/// rounded up to a power of two (the free space zeroed before reads), and each outgrown buffer
/// stayed resident in the allocator, which never purges: a 200 MB line on a pipe held 256 MB
/// of buffer plus the 64 and 128 MB ones it had outgrown. A map's pages cost nothing until
/// written, and one grows without a copy where the system can move pages (`mremap` on Linux).
pub struct StreamBuf {
    map: Option<memmap2::MmapMut>,
    /// Bytes of `map` filled from the stream.
    len: usize,
}

impl Default for StreamBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamBuf {
    /// An empty buffer (no memory until [`StreamBuf::reserve`]).
    pub fn new() -> Self {
        StreamBuf { map: None, len: 0 }
    }

    /// The filled bytes.
    pub fn filled(&self) -> &[u8] {
        match &self.map {
            Some(m) => &m[..self.len],
            None => &[],
        }
    }

    /// Room for `n` more bytes past the filled ones (address space: untouched pages are not
    /// memory).
    pub fn reserve(&mut self, n: usize) -> std::io::Result<()> {
        let need = self
            .len
            .checked_add(n)
            .ok_or(std::io::ErrorKind::OutOfMemory)?;
        if self.map.as_ref().is_some_and(|m| m.len() >= need) {
            return Ok(());
        }
        let cap = need.max(self.capacity().saturating_mul(2)).max(CHUNK);
        self.resize(cap)
    }

    fn capacity(&self) -> usize {
        self.map.as_ref().map_or(0, |m| m.len())
    }

    /// Make the map `cap` bytes long (`cap >= len`), keeping the filled bytes.
    fn resize(&mut self, cap: usize) -> std::io::Result<()> {
        debug_assert!(cap >= self.len);
        #[cfg(target_os = "linux")]
        if let Some(m) = &mut self.map {
            // SAFETY: the map is this buffer's own and no slice of it is alive (`&mut self`);
            // a moved map keeps its contents.
            return unsafe { m.remap(cap, memmap2::RemapOptions::new().may_move(true)) };
        }
        let mut bigger = memmap2::MmapMut::map_anon(cap)?;
        if let Some(m) = &self.map {
            bigger[..self.len].copy_from_slice(&m[..self.len]);
        }
        self.map = Some(bigger);
        Ok(())
    }

    /// The free space (zeroed or stale bytes) to read into; [`StreamBuf::reserve`] first.
    fn spare(&mut self) -> &mut [u8] {
        match &mut self.map {
            Some(m) => &mut m[self.len..],
            None => &mut [],
        }
    }

    /// Drop the first `n` filled bytes, moving the rest to the front; a buffer a long line
    /// made big shrinks back.
    fn consume(&mut self, n: usize) -> std::io::Result<()> {
        let len = self.len;
        if let Some(m) = &mut self.map {
            m.copy_within(n..len, 0);
        }
        self.len -= n;
        if self.capacity() > 4 * CHUNK && self.len < CHUNK {
            let keep = (2 * CHUNK).max(self.len);
            #[cfg(target_os = "linux")]
            return self.resize(keep);
            #[cfg(not(target_os = "linux"))]
            {
                let mut small = memmap2::MmapMut::map_anon(keep)?;
                small[..self.len].copy_from_slice(&self.filled()[..self.len]);
                self.map = Some(small);
            }
        }
        Ok(())
    }

    /// Read from `reader` into the free space until `limit` bytes are filled or the stream
    /// ends (what `Read::take(limit).read_to_end` does for a `Vec`).
    pub fn fill_to(&mut self, reader: &mut impl Read, limit: usize) -> std::io::Result<()> {
        while self.len < limit {
            self.reserve((limit - self.len).min(CHUNK))?;
            let room = (limit - self.len).min(self.spare().len());
            match read_some(reader, &mut self.spare()[..room])? {
                0 => break,
                n => self.len += n,
            }
        }
        Ok(())
    }
}

/// One `read`, retried when interrupted.
fn read_some(reader: &mut impl Read, out: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(out) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// [`stream_chunks`] of `head` (bytes read from the stream already), then the rest of
/// `reader`. `head` becomes the buffer: a stream read ahead to see whether it fits a bound is
/// not held twice (a 100 MB line on a pipe kept its first 64 MiB in both).
pub fn stream_chunks_after(
    head: StreamBuf,
    mut reader: impl Read,
    origin: &Origin,
    mut sink: impl FnMut(&[u8], usize) -> Result<()>,
) -> Result<()> {
    let grow = |e| Error::io(origin, "read", e);
    let mut buf = head;
    let mut line_no = 1usize;
    // Emit everything up to the last newline of the filled bytes; the bytes before `start`
    // hold none (they are what followed the last newline of an earlier batch).
    fn emit(
        buf: &mut StreamBuf,
        start: usize,
        line_no: &mut usize,
        sink: &mut impl FnMut(&[u8], usize) -> Result<()>,
    ) -> Result<Option<usize>> {
        let filled = buf.filled();
        let Some(pos) = memchr::memrchr(b'\n', &filled[start..]) else {
            return Ok(None);
        };
        let end = start + pos + 1;
        sink(&filled[..end], *line_no)?;
        *line_no += memchr::memchr_iter(b'\n', &filled[..end]).count();
        Ok(Some(end))
    }
    if let Some(end) = emit(&mut buf, 0, &mut line_no, &mut sink)? {
        buf.consume(end).map_err(grow)?;
    }
    loop {
        buf.reserve(CHUNK / 2).map_err(grow)?;
        let start = buf.len;
        let n = read_some(&mut reader, buf.spare()).map_err(|e| Error::io(origin, "read", e))?;
        buf.len += n;
        if n == 0 {
            if buf.len > 0 {
                sink(buf.filled(), line_no)?;
            }
            return Ok(());
        }
        if let Some(end) = emit(&mut buf, start, &mut line_no, &mut sink)? {
            buf.consume(end).map_err(grow)?;
        }
    }
}

/// One input to process.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A file, with the root it was found under (for `--out-dir` mirroring), classified where
    /// it was found (`claude::layout::classify`): the engine never judges a file by its name.
    File {
        /// The file.
        path: PathBuf,
        /// Path relative to the argument it came from (the file name for a file argument).
        rel: PathBuf,
        /// How its bytes are run.
        treatment: Treatment,
        /// The transcript of the session it belongs to (itself, for a transcript): the files
        /// whose secrets are known in it.
        session: PathBuf,
    },
}

/// How a file's bytes are run. Decided once, by `claude::layout::classify`, and carried by
/// the [`Input`]: text is redacted as text; copies get only the stages that apply to copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Treatment {
    /// A transcript: records, every stage.
    Records,
    /// Plain text (`tool-results/*`, other companion files): the text transformation, which
    /// leaves a binary file byte for byte.
    Text,
    /// A copy of a session (a backup) or a JSON document (`*.meta.json`).
    Copy,
}

impl Input {
    /// Where this input comes from, for messages.
    pub fn origin(&self) -> Origin {
        match self {
            Input::Stdin => Origin::stdin(),
            Input::File { path, .. } => Origin::file(path),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `step` bytes per call, to exercise chunk boundaries.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(self.data.len()).min(out.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn stream_reassembles_input_and_numbers_lines() {
        let input = b"{\"a\":1}\n{\"b\":2}\r\nxx\n\nlast";
        for step in [1, 2, 3, 7, 100] {
            let mut out = Vec::new();
            let mut firsts = Vec::new();
            stream_chunks(Trickle { data: input, step }, &Origin::stdin(), |b, n| {
                firsts.push(n);
                out.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(out, input);
            // the first batch starts at line 1, and numbering is consistent with content
            assert_eq!(firsts[0], 1);
        }
    }

    #[test]
    fn a_stream_read_ahead_goes_on_from_its_head() {
        let input = b"one\ntwo\nthr";
        let rest = b"ee\nfour\nfive";
        for split in 0..=input.len() {
            let (head, more) = input.split_at(split);
            let tail = [more, &rest[..]].concat();
            let mut out = Vec::new();
            let mut numbers = Vec::new();
            let mut buf = StreamBuf::new();
            buf.fill_to(&mut &head[..], head.len()).unwrap();
            stream_chunks_after(
                buf,
                Trickle {
                    data: &tail,
                    step: 3,
                },
                &Origin::stdin(),
                |b, n| {
                    // Each batch starts at the line its first byte is on.
                    let before = memchr::memchr_iter(b'\n', &out).count() + 1;
                    numbers.push((n, before));
                    out.extend_from_slice(b);
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(out, [&input[..], &rest[..]].concat(), "split at {split}");
            assert!(numbers.iter().all(|(n, b)| n == b), "{numbers:?}");
        }
    }
}
