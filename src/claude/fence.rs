//! The fence around what a hook touches: regular files under `$CLAUDE_CONFIG_DIR/projects`
//! (after resolving `..` and links) — a transcript must be a `.jsonl` there, its companions
//! must be there too — no larger than a bound, so a hook input naming `/dev/zero`, a FIFO, a
//! link or a file elsewhere is refused with a reason instead of read or rewritten.

use std::path::{Path, PathBuf};

use crate::claude::layout::{Member, SessionFile};
use crate::error::{Error, Origin, Result};

/// The most a hook reads of one file (transcript, sub-agent file, tool result): a larger file
/// is refused rather than read, so a hook stays within its timeout and memory.
pub const MAX_READ_BYTES: u64 = 512 << 20;

/// The most lines a hook runs a transcript of: a session pipeline costs up to ~100 bytes a
/// record, so 512 MiB of blank lines (the byte bound alone) would take ~37 GB. Real sessions
/// hold far fewer (a 500 MB transcript of tool output, some 100k lines).
pub const MAX_HOOK_LINES: u64 = 4_000_000;

/// The only files a hook touches: regular `.jsonl` files (and their companions) under
/// `$CLAUDE_CONFIG_DIR/projects`, after resolving `..` and links.
#[derive(Debug, Clone)]
pub struct Fence {
    projects: PathBuf,
}

/// Why a path is outside the fence, or not there (yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The file (or its folder) does not exist.
    Missing,
    /// The path is not one a hook may act on; the reason says why.
    Outside(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Missing => f.write_str("the transcript does not exist"),
            Refusal::Outside(why) => f.write_str(why),
        }
    }
}

impl Fence {
    /// The fence of the Claude Code config root (`$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    pub fn of_config_root() -> Result<Fence> {
        let root = crate::claude::layout::config_root()?;
        Ok(Fence::new(&crate::claude::layout::projects_dir(&root)))
    }

    /// The fence of one `projects` folder.
    pub fn new(projects: &Path) -> Fence {
        // Resolved once, so a config root reached through a link (dotfiles) still matches.
        let projects = std::fs::canonicalize(projects).unwrap_or_else(|_| projects.to_path_buf());
        Fence { projects }
    }

    /// The resolved `projects` folder.
    pub fn projects(&self) -> &Path {
        &self.projects
    }

    /// Check a transcript path: a `.jsonl` name, in a folder under `projects` (after resolving
    /// `..` and links), itself a regular file (not a link, device or FIFO) no larger than
    /// [`MAX_READ_BYTES`]. Returns the resolved path.
    pub fn transcript(&self, path: &Path) -> std::result::Result<PathBuf, Refusal> {
        self.file(path, Some("jsonl"))
    }

    /// [`Fence::transcript`], and the file a session's main transcript (`<id>.jsonl` in its
    /// project folder, as [`crate::claude::layout::classify`] tells the part): a sub-agent's
    /// transcript, a companion or a backup is refused, as a hook acting on it would write a
    /// fork into `subagents/` or rewrite one file of a session alone.
    pub fn main_transcript(&self, path: &Path) -> std::result::Result<PathBuf, Refusal> {
        let resolved = self.transcript(path)?;
        let part = crate::claude::layout::classify(&resolved).part;
        if part != crate::claude::layout::Part::Main {
            return Err(Refusal::Outside(format!(
                "{}: {}, not a session's main transcript; hooks act only on a session's main transcript (<id>.jsonl); nothing done",
                path.display(),
                part.name()
            )));
        }
        Ok(resolved)
    }

    /// Check a file: in a folder under `projects` (after resolving `..` and links), itself a
    /// regular file no larger than [`MAX_READ_BYTES`], named `*.ext` when `ext` is given.
    pub fn file(&self, path: &Path, ext: Option<&str>) -> std::result::Result<PathBuf, Refusal> {
        let shown = path.display();
        if let Some(ext) = ext {
            if path.extension().is_none_or(|x| x != ext) {
                return Err(Refusal::Outside(format!(
                    "{shown}: not a .{ext} file; hooks act only on session files"
                )));
            }
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(Refusal::Outside(format!("{shown}: no folder")));
        };
        let dir = match std::fs::canonicalize(dir) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
            Err(e) => return Err(Refusal::Outside(format!("{shown}: {e}"))),
        };
        if !dir.starts_with(&self.projects) || dir == self.projects {
            return Err(Refusal::Outside(format!(
                "{shown}: outside {} (hooks act only on Claude Code's session files)",
                self.projects.display()
            )));
        }
        let resolved = dir.join(name);
        let meta = match std::fs::symlink_metadata(&resolved) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Missing),
            Err(e) => return Err(Refusal::Outside(format!("{shown}: {e}"))),
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            return Err(Refusal::Outside(format!(
                "{shown}: a symbolic link; hooks act only on regular files"
            )));
        }
        if !ft.is_file() {
            return Err(Refusal::Outside(format!(
                "{shown}: not a regular file (device, FIFO or folder)"
            )));
        }
        if meta.len() > MAX_READ_BYTES {
            return Err(Refusal::Outside(format!(
                "{shown}: {} bytes, over the hook limit of {MAX_READ_BYTES}",
                meta.len()
            )));
        }
        // Only a file with more bytes than the line bound can hold more lines than it.
        let records = resolved.extension().is_some_and(|x| x == "jsonl");
        if records && meta.len() > MAX_HOOK_LINES {
            let lines =
                count_lines(&resolved).map_err(|e| Refusal::Outside(format!("{shown}: {e}")))?;
            if lines > MAX_HOOK_LINES {
                return Err(Refusal::Outside(format!(
                    "{shown}: {lines} lines, over the hook limit of {MAX_HOOK_LINES} (each costs memory whatever its size); run `cchist` on it by hand"
                )));
            }
        }
        Ok(resolved)
    }

    /// The files of the session whose (fenced, resolved) transcript is `transcript`
    /// ([`SessionFile::members`]), each inside the fence; the others as refusals. Links are
    /// never members; a companion folder that is a link resolves outside and is refused.
    pub fn members(&self, transcript: &Path) -> (Vec<Member>, Vec<String>) {
        let (mut ok, mut refused) = (Vec::new(), Vec::new());
        let session = SessionFile::from_path(transcript);
        let folder = session.linked_companion().is_some();
        for link in session.linked_members() {
            refused.push(if folder {
                format!(
                    "{}: the session's companion folder is a symbolic link, so its files are outside the session folder; hooks do not follow it",
                    link.display()
                )
            } else {
                format!(
                    "{}: a file of the session that is a symbolic link; hooks do not follow it, so what it points to was neither scanned nor redacted",
                    link.display()
                )
            });
        }
        for m in session.members() {
            match self.file(&m.path, None) {
                Ok(path) => ok.push(Member { path, part: m.part }),
                Err(Refusal::Missing) => {}
                Err(why) => refused.push(why.to_string()),
            }
        }
        (ok, refused)
    }
}

/// The lines of the file at `path`, counted a MiB at a time (not mapped: another process may
/// truncate it).
fn count_lines(path: &Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let got = f.read(&mut buf)?;
        if got == 0 {
            return Ok(n);
        }
        n += memchr::memchr_iter(b'\n', &buf[..got]).count() as u64;
    }
}

/// Read a fenced file whole (the fence bounds its size; a file that grew past the bound since
/// is cut there and the next check sees it).
pub fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let o = Origin::file(path);
    let f = std::fs::File::open(path).map_err(|e| Error::io(&o, "open", e))?;
    let mut data = Vec::new();
    f.take(MAX_READ_BYTES)
        .read_to_end(&mut data)
        .map_err(|e| Error::io(&o, "read", e))?;
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_refuses_what_is_not_a_session_file() {
        let d = tempfile::tempdir().unwrap();
        let projects = d.path().join("projects");
        let proj = projects.join("-p");
        std::fs::create_dir_all(&proj).unwrap();
        let fence = Fence::new(&projects);
        let good = proj.join("s.jsonl");
        std::fs::write(&good, "{}\n").unwrap();
        assert!(fence.transcript(&good).is_ok());
        assert_eq!(
            fence.transcript(&proj.join("t.jsonl")),
            Err(Refusal::Missing)
        );
        let outside = d.path().join("x.jsonl");
        std::fs::write(&outside, "{}\n").unwrap();
        for bad in [
            outside.clone(),
            proj.join("../../x.jsonl"),
            projects.join("s.jsonl"),
            PathBuf::from("/dev/zero"),
            proj.join("s.txt"),
        ] {
            assert!(
                matches!(fence.transcript(&bad), Err(Refusal::Outside(_))),
                "{}",
                bad.display()
            );
        }
        std::os::unix::fs::symlink(&outside, proj.join("l.jsonl")).unwrap();
        assert!(matches!(
            fence.transcript(&proj.join("l.jsonl")),
            Err(Refusal::Outside(_))
        ));
        // a `..` that stays inside is fine
        assert!(fence.transcript(&proj.join("../-p/s.jsonl")).is_ok());
        // a FIFO
        let fifo = proj.join("f.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path we own, in a temp dir.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(matches!(fence.transcript(&fifo), Err(Refusal::Outside(_))));
        // companions: a linked sub-agent file is left out and refused, a regular one kept
        let sub = proj.join("s/subagents");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("agent-a.jsonl"), "{}\n").unwrap();
        std::os::unix::fs::symlink(&outside, sub.join("agent-b.jsonl")).unwrap();
        let (ok, refused) = fence.members(&good);
        assert_eq!(ok.len(), 2, "{ok:?}");
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("agent-b.jsonl"), "{refused:?}");
        // a companion folder that is a link to elsewhere: its files are refused
        let away = d.path().join("away/subagents");
        std::fs::create_dir_all(&away).unwrap();
        std::fs::write(away.join("agent-c.jsonl"), "{}\n").unwrap();
        let t = proj.join("t.jsonl");
        std::fs::write(&t, "{}\n").unwrap();
        std::os::unix::fs::symlink(d.path().join("away"), proj.join("t")).unwrap();
        let (ok, refused) = fence.members(&t);
        assert_eq!(ok.len(), 1, "{ok:?}");
        assert_eq!(refused.len(), 1, "{refused:?}");
    }
}
