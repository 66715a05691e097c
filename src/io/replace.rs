//! The one way cchist puts bytes at a path: every writer (the runner in place and into a
//! mirror folder, fork and undo, settings, the key file, `redact_file`) comes here.
//!
//! Replacing a file someone else may be appending to ([`open`], then [`commit`]):
//!
//! 1. check it is replaceable (no link, a regular file, no other hard links unless asked),
//!    lock it (another cchist goes first) and read it, noting size, inode, mtime and ctime;
//! 2. write the new content to a temp file beside it ([`temp`]); give it the original's owner,
//!    mode and mtime and fsync it, and stage the backup the same way — everything slow first;
//! 3. stat the path again: if anything changed, drop the temp files and fail with
//!    [`Error::Concurrent`] (the caller retries, then gives up leaving the file as it is);
//! 4. lock the replacement, rename the backup, then the new content, into place;
//! 5. carry over what a writer appended to the old inode between 3 and 4 (or, when asked,
//!    nothing: the re-check in 3 already refused).
//!
//! What remains: a writer that opened the file before the rename and writes after step 5 — or
//! one that keeps its descriptor open for good, which Claude Code does not do — writes into
//! the old inode, which has no name any more (or only the backup's). Records carried over in
//! step 5 come after any a writer appended to the new file in the microseconds between 4 and
//! 5, so their order in the file can differ from the order they were written in.

use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use crate::error::{Error, Origin, Result};
use crate::io::backup;
use crate::io::input::{self, InputFile};
use crate::io::lock;
use crate::io::output::AtomicFile;

/// A temp file beside `path` that the new content is written to; it replaces `path` only
/// through [`commit`] or [`persist_new`], and removes itself when dropped.
pub fn temp(path: &Path) -> io::Result<AtomicFile> {
    AtomicFile::create(path)
}

/// Check that `path` may be replaced, lock it and read it whole: step 1.
pub fn open(path: &Path, break_links: bool) -> Result<InputFile> {
    check_replaceable(path, break_links)?;
    let origin = Origin::file(path);
    input::read_locked(lock::lock_path(path, lock::wait_bound()?)?, &origin)
}

/// Who owns the replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The original's owner, or refuse: a user's transcript is never handed to whoever ran
    /// cchist.
    Keep,
    /// The original's owner when permitted, else whoever runs cchist.
    Try,
}

/// What to do with bytes appended to the original between the last check and the rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// Copy them onto the end of the replacement (`bytes-appended-during-replace`).
    CarryOver,
    /// Nothing: only the re-check guards (a restore that must not mix two versions).
    Ignore,
}

/// How [`commit`] replaces a file.
#[derive(Debug, Clone, Copy)]
pub struct Replace<'a> {
    /// Keep the original as `<path><suffix>`.
    pub backup: Option<&'a str>,
    /// Record beside the backup what was written, so that `undo` can tell whether the file
    /// changed since ([`backup::record_written`]).
    pub record: bool,
    /// The replacement's mode.
    pub mode: u32,
    /// The replacement's mtime (`None`: now).
    pub mtime: Option<SystemTime>,
    /// Its owner.
    pub owner: Owner,
    /// Appends during the replace.
    pub appended: Appended,
}

impl Replace<'_> {
    /// An in-place edit of `was`: its owner, mode and (unless `touch`) mtime, appends carried
    /// over.
    pub fn in_place<'a>(was: &InputFile, backup: Option<&'a str>, touch: bool) -> Replace<'a> {
        Replace {
            backup,
            // A backup in cchist's own naming is one `undo` restores.
            record: backup.is_some_and(backup::is_undoable),
            mode: was.meta.mode(),
            mtime: if touch {
                None
            } else {
                was.meta.modified().ok()
            },
            owner: Owner::Keep,
            appended: Appended::CarryOver,
        }
    }
}

/// What [`commit`] did.
#[derive(Debug, Default)]
pub struct Committed {
    /// Bytes a concurrent writer appended during the replace, carried over.
    pub carried: u64,
    /// Where the backup went.
    pub backup: Option<std::path::PathBuf>,
}

/// Replace `path` (read by [`open`] as `was`, still locked) by the content written to `tmp`:
/// steps 2 to 5.
pub fn commit(
    path: &Path,
    was: &InputFile,
    mut tmp: AtomicFile,
    how: Replace,
) -> Result<Committed> {
    let origin = Origin::file(path);
    match how.owner {
        Owner::Keep => keep_owner(tmp.file_ref(), &was.meta, path)?,
        Owner::Try => {
            let _ = std::os::unix::fs::fchown(
                tmp.file_ref(),
                Some(was.meta.uid()),
                Some(was.meta.gid()),
            );
        }
    }
    // Everything slow (fsync, the backup) happens before the last check, so that the window
    // between that check and the rename is two system calls.
    tmp.prepare(Some(how.mode), how.mtime)
        .map_err(|e| Error::io(&origin, "write", e))?;
    let staged = match how.backup {
        Some(suffix) => Some(backup::stage(path, suffix, was)?),
        None => None,
    };
    // Did the file grow or change while we read it (a live session appending)?
    let now = std::fs::symlink_metadata(path).map_err(|e| Error::io(&origin, "stat", e))?;
    if changed_since(&now, &was.meta) {
        return Err(Error::Concurrent { path: origin });
    }
    // Lock the replacement before it gets the name: a cchist that opens the path after the
    // rename must wait until the carry-over below is done.
    let new_lock = tmp
        .file_ref()
        .try_clone()
        .and_then(|c| lock::lock_file(&c).map(|()| c))
        .map_err(|e| Error::io(&origin, "lock", e))?;
    let backup = match staged {
        Some(s) => Some(s.persist()?),
        None => None,
    };
    tmp.persist().map_err(|e| Error::io(&origin, "rename", e))?;
    // A writer that appended between the check and the rename wrote to the old inode, which
    // now has no name (or only the backup's): carry those bytes over to the new file.
    let carried = match how.appended {
        Appended::CarryOver => carry_over(&was.file, was.meta.len(), path)
            .map_err(|e| Error::io(&origin, "carry over appended records", e))?,
        Appended::Ignore => 0,
    };
    drop(new_lock);
    if let (Some(b), true) = (&backup, how.record) {
        backup::record_written(path, b)?;
    }
    Ok(Committed { carried, backup })
}

/// Mode, mtime and owner of a file [`write_file`] writes.
#[derive(Debug, Clone, Copy)]
pub struct Attrs {
    /// Its mode.
    pub mode: u32,
    /// Its mtime (`None`: now).
    pub mtime: Option<SystemTime>,
    /// Its owner, when permitted (`None`: whoever runs cchist).
    pub owner: Option<(u32, u32)>,
}

impl Attrs {
    /// Mode 0600, now, ours.
    pub fn private() -> Attrs {
        Attrs::mode(0o600)
    }

    /// `mode`, now, ours.
    pub fn mode(mode: u32) -> Attrs {
        Attrs {
            mode,
            mtime: None,
            owner: None,
        }
    }

    /// The mode, and the owner when permitted, of `meta` (a file this one copies).
    pub fn like(meta: &std::fs::Metadata) -> Attrs {
        Attrs {
            mode: meta.mode(),
            mtime: None,
            owner: Some((meta.uid(), meta.gid())),
        }
    }
}

/// Write `bytes` to `path` atomically — a file cchist makes (a fork, a mirror, a record,
/// settings) or a replacement nobody appends to: created, or replaced by rename.
pub fn write_file(path: &Path, bytes: &[u8], attrs: &Attrs) -> Result<()> {
    let o = Origin::file(path);
    let mut tmp = temp(path).map_err(|e| Error::io(&o, "create", e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(&o, "write", e))?;
    finish_file(path, tmp, attrs)
}

/// [`write_file`] for a file cchist makes at a path the user names (a man page, a baseline):
/// the rename replaces the name, so a symbolic link there is replaced by the file and what it
/// pointed to is left as it was. `Ok(true)` when a link was replaced, for the caller to say so.
pub fn write_file_over_link(path: &Path, bytes: &[u8], attrs: &Attrs) -> Result<bool> {
    let was_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    write_file(path, bytes, attrs)?;
    Ok(was_link)
}

/// [`write_file`] for content already written to `tmp` ([`temp`]): give it `attrs`, fsync,
/// rename over `path`.
pub fn finish_file(path: &Path, tmp: AtomicFile, attrs: &Attrs) -> Result<()> {
    let o = Origin::file(path);
    if let Some((uid, gid)) = attrs.owner {
        let _ = std::os::unix::fs::fchown(tmp.file_ref(), Some(uid), Some(gid));
    }
    tmp.commit(Some(attrs.mode), attrs.mtime)
        .map_err(|e| Error::io(&o, "rename", e))
}

/// Write `bytes` to `path` only when nothing is there yet: written aside, fsynced, then
/// linked into place, so a concurrent writer either wins or finds ours. `Ok(false)` when
/// `path` already existed (then it is left as it is).
pub fn persist_new(path: &Path, bytes: &[u8], mode: u32) -> io::Result<bool> {
    let mut tmp = temp(path)?;
    tmp.write_all(bytes)?;
    tmp.prepare(Some(mode), None)?;
    match std::fs::hard_link(tmp.temp_path(), path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
    // Dropping `tmp` removes the temp name; the linked name stays.
}

/// Give the file at `from` the name `to` only when nothing is there yet, its folder synced:
/// `Ok(false)` when `to` already exists (both are left as they are). Linux renames with
/// `RENAME_NOREPLACE`; elsewhere, or on a file system that does not support it, the file is
/// linked at `to` and then unlinked at `from` (for a moment it has both names). An error
/// `Unsupported` when neither works (a file system without hard links).
pub fn rename_new(from: &Path, to: &Path) -> io::Result<bool> {
    let done = match rename_noreplace(from, to) {
        Some(Ok(())) => true,
        Some(Err(e)) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
        Some(Err(e)) => return Err(e),
        None => link_then_unlink(from, to)?,
    };
    if !done {
        return Ok(false);
    }
    // Renamed: a folder that cannot be synced does not make it an error (the caller would
    // take the file for one under its old name), as for any persisted file.
    if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(true)
}

/// [`rename_new`] where the system cannot rename without replacing: link at `to` (which fails
/// when it exists), then unlink `from`.
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<bool> {
    match std::fs::hard_link(from, to) {
        Ok(()) => {
            if let Err(e) = std::fs::remove_file(from) {
                let _ = std::fs::remove_file(to);
                return Err(e);
            }
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EOPNOTSUPP)) => {
            Err(io::Error::new(io::ErrorKind::Unsupported, e))
        }
        Err(e) => Err(e),
    }
}

/// `renameat2(RENAME_NOREPLACE)`; `None` where it is not available (another system, or a
/// file system that does not support the flag), for the caller's fallback.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn rename_noreplace(from: &Path, to: &Path) -> Option<io::Result<()>> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes());
    let (Ok(f), Ok(t)) = (c(from), c(to)) else {
        return Some(Err(io::Error::from(io::ErrorKind::InvalidInput)));
    };
    // SAFETY: two NUL-terminated paths that outlive the call; no memory is handed over.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Some(Ok(()));
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP) => None,
        _ => Some(Err(e)),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn rename_noreplace(_: &Path, _: &Path) -> Option<io::Result<()>> {
    None
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

/// Create the folders above `root/rel` (an `--out-dir` destination), owner-only whatever the
/// umask, without following a link: every path below `root` is looked at (not followed) right
/// before it is entered or created, and one that is a link or not a folder is refused
/// ([`refuse_links_below`]). `root` itself is the caller's choice and may be a link.
pub fn create_dirs_below(root: &Path, rel: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let parts = parts_below(root, rel)?;
    if !root.as_os_str().is_empty() && std::fs::metadata(root).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(root)
            .map_err(|e| Error::io(&Origin::file(root), "create directory", e))?;
    }
    let mut cur = root.to_path_buf();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        cur.push(part);
        match std::fs::symlink_metadata(&cur) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match std::fs::DirBuilder::new().mode(0o700).create(&cur) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(Error::io(&Origin::file(&cur), "create directory", e)),
                }
            }
            Err(e) => return Err(Error::io(&Origin::file(&cur), "stat", e)),
        }
        not_a_link(root, rel, &cur, true)?;
    }
    Ok(())
}

/// Refuse `root/rel` when a path below `root` on the way to it is a symbolic link or not a
/// folder, or when it is itself a link: a write there would land wherever the link points,
/// outside `root`. Paths that do not exist yet pass.
pub fn refuse_links_below(root: &Path, rel: &Path) -> Result<()> {
    let parts = parts_below(root, rel)?;
    let mut cur = root.to_path_buf();
    for (i, part) in parts.iter().enumerate() {
        cur.push(part);
        if std::fs::symlink_metadata(&cur).is_err() {
            return Ok(());
        }
        not_a_link(root, rel, &cur, i + 1 < parts.len())?;
    }
    Ok(())
}

/// The plain names of `rel`; a `..` or an absolute part is refused.
fn parts_below<'a>(root: &Path, rel: &'a Path) -> Result<Vec<&'a std::ffi::OsStr>> {
    use std::path::Component;
    let mut out = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => {
                return Err(Error::Other(format!(
                    "{}: leads out of {}; nothing was written there",
                    root.join(rel).display(),
                    root.display()
                )))
            }
        }
    }
    Ok(out)
}

fn not_a_link(root: &Path, rel: &Path, at: &Path, folder: bool) -> Result<()> {
    let dest = root.join(rel);
    let meta =
        std::fs::symlink_metadata(at).map_err(|e| Error::io(&Origin::file(at), "stat", e))?;
    if meta.file_type().is_symlink() {
        return Err(Error::Other(format!(
            "{}: not written: {} is a symbolic link inside {}, and cchist never writes through a link there (it may point anywhere) — remove the link, or choose another folder",
            dest.display(),
            at.display(),
            root.display()
        )));
    }
    if folder && !meta.is_dir() {
        return Err(Error::Other(format!(
            "{}: not written: {} is not a folder — move it away, or choose another folder",
            dest.display(),
            at.display()
        )));
    }
    Ok(())
}

/// Refuse to replace what an in-place write must not: a link (the rename would replace the
/// link, not what it points to), anything but a regular file, and a file with other hard
/// links unless `break_links` (the other names would keep the old content).
pub fn check_replaceable(path: &Path, break_links: bool) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_below_a_root_are_made_without_following_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("out/new");
        let away = d.path().join("away");
        std::fs::create_dir_all(&away).unwrap();
        // a root that does not exist yet is made; the folders below are owner-only
        create_dirs_below(&root, Path::new("p/q/f.jsonl")).unwrap();
        let m = std::fs::metadata(root.join("p/q")).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
        assert!(refuse_links_below(&root, Path::new("p/q/f.jsonl")).is_ok());
        // a link on the way, or at the destination, is refused and nothing lands behind it
        std::os::unix::fs::symlink(&away, root.join("l")).unwrap();
        assert!(create_dirs_below(&root, Path::new("l/x/f.jsonl")).is_err());
        assert!(refuse_links_below(&root, Path::new("l/f.jsonl")).is_err());
        std::os::unix::fs::symlink(away.join("v"), root.join("p/f.jsonl")).unwrap();
        assert!(refuse_links_below(&root, Path::new("p/f.jsonl")).is_err());
        assert_eq!(std::fs::read_dir(&away).unwrap().count(), 0);
        // a file where a folder is needed, and a `..`
        std::fs::write(root.join("file"), "x").unwrap();
        assert!(create_dirs_below(&root, Path::new("file/f.jsonl")).is_err());
        assert!(create_dirs_below(&root, Path::new("../f.jsonl")).is_err());
        // a root that is a link is the caller's choice
        let via = d.path().join("via");
        std::os::unix::fs::symlink(&away, &via).unwrap();
        assert!(create_dirs_below(&via, Path::new("p/f.jsonl")).is_ok());
    }

    #[test]
    fn rename_new_never_replaces_what_is_there() {
        let d = tempfile::tempdir().unwrap();
        let (a, b, c) = (d.path().join("a"), d.path().join("b"), d.path().join("c"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        assert!(!rename_new(&a, &b).unwrap());
        assert_eq!(std::fs::read(&b).unwrap(), b"b");
        assert!(rename_new(&a, &c).unwrap());
        assert!(!a.exists());
        assert_eq!(std::fs::read(&c).unwrap(), b"a");
        // The fallback, as on a system without RENAME_NOREPLACE.
        assert!(!link_then_unlink(&c, &b).unwrap());
        assert_eq!(std::fs::read(&b).unwrap(), b"b");
        assert!(link_then_unlink(&c, &a).unwrap());
        assert!(!c.exists());
        assert_eq!(std::fs::read(&a).unwrap(), b"a");
    }

    #[test]
    fn persist_new_never_replaces_what_is_there() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("key");
        assert!(persist_new(&p, b"first\n", 0o600).unwrap());
        assert!(!persist_new(&p, b"second\n", 0o600).unwrap());
        assert_eq!(std::fs::read(&p).unwrap(), b"first\n");
        // No temp file is left beside it.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_replace_keeps_an_undoable_backup_and_its_record() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(&p, "old\n").unwrap();
        let was = open(&p, false).unwrap();
        let mut tmp = temp(&p).unwrap();
        tmp.write_all(b"new\n").unwrap();
        let suffix = backup::fresh_suffix(&p);
        let done = commit(&p, &was, tmp, Replace::in_place(&was, Some(&suffix), false)).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new\n");
        let b = done.backup.unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"old\n");
        assert_eq!(backup::change_since(&b, b"new\n"), None);
        assert!(backup::change_since(&b, b"new\nmore\n")
            .unwrap()
            .contains("appended"));
    }
}
