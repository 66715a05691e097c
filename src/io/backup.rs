//! Backups: the one home of their names, their listing, their staging and the record of what
//! the edit that left one wrote (so that `undo` can tell whether the file changed since).
//!
//! A backup is `<file><suffix>` beside the file. cchist's own suffix, [`BACKUP_MARK`] and a
//! stamp, is one `undo` restores; `--backup=SUFFIX` writes any other suffix, which nothing
//! restores ([`copies`] finds those). Every backup is staged from the bytes that were read
//! (never copied from the path) and renamed into place, so a link planted at a backup's name
//! is replaced, never followed.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{Error, Origin, Result};
use crate::io::input::InputFile;
use crate::io::output::{is_temp_name, AtomicFile};

/// Marker in the names of cchist's backups: `<file>.cchist-bak.<stamp>` beside the file.
pub const BACKUP_MARK: &str = ".cchist-bak.";

/// Marker in the name of what a forced undo replaced: `<session>.jsonl.cchist-undone.<stamp>`.
pub const UNDONE_MARK: &str = ".cchist-undone.";

/// The one generator of backup suffixes: `mark` followed by the stamp of `at`
/// ([`crate::io::clock::file_stamp`]), which sorts as the times do.
pub fn suffix_at(mark: &str, at: SystemTime) -> String {
    format!("{mark}{}", crate::io::clock::file_stamp(at))
}

/// The path of `path`'s copy with `suffix`: `<path><suffix>`.
pub fn name_of(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// True when `suffix` names a backup `undo` restores (cchist's own naming).
pub fn is_undoable(suffix: &str) -> bool {
    suffix.contains(BACKUP_MARK)
}

/// An undoable suffix for a backup of `path` taken now, whose name is free and sorts after
/// every earlier backup of the same file (so that the newest is the one `undo` restores).
pub fn fresh_suffix(path: &Path) -> String {
    let mut stamp = suffix_at(BACKUP_MARK, SystemTime::now());
    let newest = backups(path).pop();
    // A newest backup stamped after now (a clock set back) would make every stamp of now sort
    // before it: count on from its suffix instead.
    if let Some(b) = &newest {
        if name_of(path, &stamp) <= *b {
            use std::os::unix::ffi::OsStrExt;
            let tail = &b.as_os_str().as_bytes()[path.as_os_str().len()..];
            stamp = String::from_utf8_lossy(tail).into_owned();
        }
    }
    for n in 0u32.. {
        let suffix = if n == 0 {
            stamp.clone()
        } else {
            format!("{stamp}.{n:04}")
        };
        let p = name_of(path, &suffix);
        if !p.exists() && newest.as_ref().is_none_or(|b| p > *b) {
            return suffix;
        }
    }
    unreachable!("some suffix is free")
}

/// True when the file at `path` is itself a copy of a session file, not a part of the
/// session: one of cchist's backups (`….cchist-bak.<stamp>`), what a forced undo replaced
/// (`….cchist-undone.<stamp>`), or a `--backup=SUFFIX` copy of a transcript beside it
/// (`agent-1.jsonl.bak` next to `agent-1.jsonl`). Such a file is the user's local undo
/// history: an `--out-dir` run or a fork never copies it, and an in-place run redacts it
/// without backing it up again.
pub fn is_copy(path: &Path) -> bool {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return false;
    };
    if name.contains(BACKUP_MARK) || name.contains(UNDONE_MARK) {
        return true;
    }
    // `<x>.jsonl<suffix>` beside `<x>.jsonl`: a suffix copy of that transcript.
    name.match_indices(".jsonl").any(|(i, m)| {
        let (base, tail) = name.split_at(i + m.len());
        is_suffix(tail) && path.with_file_name(base).is_file()
    })
}

/// A backup suffix as `--backup=SUFFIX` takes one: `.bak`, `~`, `-orig`, `_old`.
fn is_suffix(tail: &str) -> bool {
    tail.starts_with(['.', '~', '-', '_']) && !tail.contains('/')
}

/// The suffix an in-place write of `path` backs it up with, given the run's `suffix`: none
/// for a file that is itself a copy ([`is_copy`]) or a copy this suffix made
/// (`<file><suffix>` beside `<file>`), so that no run multiplies the copies of an original.
pub fn suffix_for<'a>(path: &Path, suffix: Option<&'a str>) -> Option<&'a str> {
    let suffix = suffix?;
    if is_copy(path) {
        return None;
    }
    let name = path.file_name()?.to_string_lossy();
    if let Some(base) = name.strip_suffix(suffix).filter(|b| !b.is_empty()) {
        if path.with_file_name(base).is_file() {
            return None;
        }
    }
    Some(suffix)
}

/// cchist's backups of `path` (`<path>.cchist-bak.<stamp>`), oldest first.
pub fn backups(path: &Path) -> Vec<PathBuf> {
    beside(path, |name, n| {
        n.starts_with(&format!("{name}{BACKUP_MARK}"))
    })
}

/// The other copies of `path` beside it: every regular file whose name is `path`'s name
/// followed by anything — what `--backup=SUFFIX` writes (`.bak`, `~`, `-orig`, any suffix),
/// what a forced undo replaced (`.cchist-undone.<time>`) — except cchist's undoable backups
/// ([`backups`], which undo restores) and temp files; sorted by name. Each holds the
/// session as it was, secrets included, so `check` scans them and `backups list` lists them.
pub fn copies(path: &Path) -> Vec<PathBuf> {
    beside(path, |name, n| {
        n.len() > name.len()
            && n.starts_with(name)
            && !n.starts_with(&format!("{name}{BACKUP_MARK}"))
    })
}

/// The regular files in `path`'s folder (temp files aside) whose name `keep(path's name,
/// theirs)` accepts, sorted by name: the one walk behind [`backups`] and [`copies`].
fn beside(path: &Path, keep: impl Fn(&str, &str) -> bool) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (
        path.parent(),
        path.file_name().map(|n| n.to_string_lossy().into_owned()),
    ) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            keep(&name, &n) && !is_temp_name(&n)
        })
        .map(|e| path.with_file_name(e.file_name()))
        .collect();
    v.sort();
    v
}

/// A backup written beside its file and not yet given its name ([`Staged::persist`]).
pub struct Staged {
    tmp: AtomicFile,
    /// The name it takes.
    pub path: PathBuf,
}

impl Staged {
    /// Rename the backup into place.
    pub fn persist(self) -> Result<PathBuf> {
        let o = Origin::file(&self.path);
        self.tmp.persist().map_err(|e| Error::io(&o, "backup", e))?;
        Ok(self.path)
    }
}

/// Write the bytes that were read (`f`) into a temp file that becomes `<path><suffix>` on
/// [`Staged::persist`]: same mode, owner (when permitted) and mtime as the original, fsynced.
pub fn stage(path: &Path, suffix: &str, f: &InputFile) -> Result<Staged> {
    let bpath = name_of(path, suffix);
    let o = Origin::file(&bpath);
    // A fixed suffix names the same file every run: what is there may be the user's own, or
    // the first run's backup and then the only original. Never replaced (an undo-able
    // suffix is fresh by construction, so this holds it too).
    if bpath.symlink_metadata().is_ok() {
        return Err(Error::Other(format!(
            "{}: not written: its backup {} exists already (the user's file, or an earlier run's backup and then the only original); move it away, or use --backup without a value for a new timestamped backup each run",
            path.display(),
            bpath.display()
        )));
    }
    let mut b = AtomicFile::create(&bpath).map_err(|e| Error::io(&o, "backup", e))?;
    b.write_all(&f.data)
        .map_err(|e| Error::io(&o, "backup", e))?;
    let _ = std::os::unix::fs::fchown(b.file_ref(), Some(f.meta.uid()), Some(f.meta.gid()));
    b.prepare(Some(f.meta.mode()), f.meta.modified().ok())
        .map_err(|e| Error::io(&o, "backup", e))?;
    Ok(Staged {
        tmp: b,
        path: bpath,
    })
}

/// Where the record of what an edit wrote is kept: `.<backup name>.written` beside the backup
/// (hidden, and outside the backup names [`backups`] lists).
fn written_record(backup: &Path) -> PathBuf {
    record_beside(backup, "written")
}

/// `.<backup name>.<what>` beside `backup`: hidden, and outside the names [`backups`] lists.
fn record_beside(backup: &Path, what: &str) -> PathBuf {
    let name = backup
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    backup.with_file_name(format!(".{name}.{what}"))
}

/// What a file holds, to notice later whether it changed: its length and SHA-256.
#[derive(Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    len: u64,
    sha256: String,
}

fn fingerprint(bytes: &[u8]) -> Fingerprint {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(bytes);
    Fingerprint {
        len: bytes.len() as u64,
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
    }
}

/// Note what the in-place edit that left `backup` wrote to `path`, so that `undo` can tell
/// whether the file changed since (turns appended by a resumed session would be lost).
pub fn record_written(path: &Path, backup: &Path) -> Result<()> {
    let data = std::fs::read(path).map_err(|e| Error::io(&Origin::file(path), "read", e))?;
    let rec = written_record(backup);
    let o = Origin::file(&rec);
    // Beside the backup, never replacing a transcript: the plain temp-and-rename suffices
    // (and keeps this below `replace`, which calls it).
    let mut tmp = AtomicFile::create(&rec).map_err(|e| Error::io(&o, "create", e))?;
    serde_json::to_writer(&mut tmp, &fingerprint(&data))
        .map_err(|e| Error::io(&o, "write", e.into()))?;
    tmp.commit(Some(0o600), None)
        .map_err(|e| Error::io(&o, "rename", e))
}

/// How `now` (the file as it is) differs from what the edit that left `backup` wrote: `None`
/// when it is what the edit wrote; otherwise why `undo` would lose something.
pub fn change_since(backup: &Path, now: &[u8]) -> Option<String> {
    let expected: Option<Fingerprint> = std::fs::read(written_record(backup))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    match &expected {
        Some(e) if *e == fingerprint(now) => None,
        Some(e) => Some(describe_change(now, e)),
        None => Some("there is no record of what the edit wrote (a backup left by an older cchist?), so cchist cannot tell whether it changed since".to_string()),
    }
}

/// Where the list of files the edit that left `backup` created beside its file is kept:
/// `.<backup name>.created` (companion files records were moved into).
fn created_record(backup: &Path) -> PathBuf {
    record_beside(backup, "created")
}

/// One file an edit created, and what it wrote there.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Created {
    path: PathBuf,
    written: Fingerprint,
}

/// Note the files (`path`, bytes written) the in-place edit that left `backup` created, so
/// that `undo` removes them with the edit ([`remove_created`]).
pub fn record_created(backup: &Path, files: &[(PathBuf, &[u8])]) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let list: Vec<Created> = files
        .iter()
        .map(|(p, b)| Created {
            path: p.clone(),
            written: fingerprint(b),
        })
        .collect();
    let rec = created_record(backup);
    let o = Origin::file(&rec);
    let mut tmp = AtomicFile::create(&rec).map_err(|e| Error::io(&o, "create", e))?;
    serde_json::to_writer(&mut tmp, &list).map_err(|e| Error::io(&o, "write", e.into()))?;
    tmp.commit(Some(0o600), None)
        .map_err(|e| Error::io(&o, "rename", e))
}

/// Remove the files the edit that left `backup` created, each only when it still holds what
/// the edit wrote. Returns those left because they changed since (they are someone's now).
pub fn remove_created(backup: &Path) -> Vec<PathBuf> {
    let Some(list) = std::fs::read(created_record(backup))
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<Created>>(&b).ok())
    else {
        return Vec::new();
    };
    let mut left = Vec::new();
    for c in list {
        match std::fs::read(&c.path) {
            Ok(now) if fingerprint(&now) == c.written => {
                if std::fs::remove_file(&c.path).is_err() {
                    left.push(c.path);
                }
            }
            Ok(_) => left.push(c.path),
            // Gone already: nothing to undo.
            Err(_) => {}
        }
    }
    left
}

/// Where the name the edit that left `backup` took its file from is kept:
/// `.<backup name>.renamed` (a companion whose name read as a secret, renamed to a
/// placeholder; the backup is named after the placeholder). It holds that name, so, like
/// the backup, a secret.
fn renamed_record(backup: &Path) -> PathBuf {
    record_beside(backup, "renamed")
}

/// The name a file had before the edit that left `backup` renamed it: `rel`, relative to
/// the session's companion folder ([`session_folder`]); notes written before that hold an
/// absolute `from`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Renamed {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rel: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    from: Option<PathBuf>,
}

/// The session's companion folder `path` lies in (the nearest folder `<id>` beside an
/// `<id>.jsonl`), or else the folder `path` is in.
fn session_folder(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new(""));
    dir.ancestors()
        .find(|a| {
            a.file_name().is_some_and(|n| {
                let mut t = n.to_os_string();
                t.push(".jsonl");
                a.with_file_name(t).is_file()
            })
        })
        .unwrap_or(dir)
        .to_path_buf()
}

/// `p` with `.` and `..` taken lexically (no link followed); `None` when it climbs above its
/// start.
fn normalise(p: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            c => out.push(c),
        }
    }
    Some(out)
}

/// Note that the in-place edit that left `backup` renamed its file from `from`, so that
/// `undo` renames it back ([`renamed_from`]). The name is kept relative to the session's
/// companion folder, so that a moved config folder or an edited note cannot send the file
/// elsewhere.
pub fn record_renamed(backup: &Path, from: &Path) -> Result<()> {
    let rec = renamed_record(backup);
    let o = Origin::file(&rec);
    let base = session_folder(backup);
    let rel = normalise(from)
        .and_then(|f| f.strip_prefix(&base).ok().map(Path::to_path_buf))
        .ok_or_else(|| {
            Error::Other(format!(
                "{}: its old name lies outside the session's folder {}; it was not renamed",
                backup.display(),
                base.display()
            ))
        })?;
    let mut tmp = AtomicFile::create(&rec).map_err(|e| Error::io(&o, "create", e))?;
    serde_json::to_writer(
        &mut tmp,
        &Renamed {
            rel: Some(rel),
            from: None,
        },
    )
    .map_err(|e| Error::io(&o, "write", e.into()))?;
    tmp.commit(Some(0o600), None)
        .map_err(|e| Error::io(&o, "rename", e))
}

/// The name the edit that left `backup` renamed its file from, when it renamed it: the
/// note's relative name under the session's companion folder, or an old note's absolute
/// name when it lies (normalised, no link followed) inside the folder the backup is in.
/// Anything else is refused: undo must not move a file out of its session. (Error messages
/// name paths as they are: whoever prints them redacts them, as every error is.)
pub fn renamed_from(backup: &Path) -> Result<Option<PathBuf>> {
    let Some(r) = std::fs::read(renamed_record(backup))
        .ok()
        .and_then(|b| serde_json::from_slice::<Renamed>(&b).ok())
    else {
        return Ok(None);
    };
    let (base, name) = match (r.rel, r.from) {
        (Some(rel), _) => {
            let base = session_folder(backup);
            let inside = rel
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            (base.clone(), inside.then(|| base.join(rel)))
        }
        (None, Some(from)) => {
            let base = backup.parent().unwrap_or(Path::new("")).to_path_buf();
            let name = normalise(&from).filter(|f| f.starts_with(&base) && *f != base);
            (base, name)
        }
        (None, None) => return Ok(None),
    };
    match name {
        Some(n) if n.file_name().is_some() => Ok(Some(n)),
        _ => Err(Error::Other(format!(
            "{}: the old name recorded in its `.renamed` note lies outside {} (an edited note, or the config folder moved); undo refused it: nothing restored, renamed or created. Rename the file yourself, or remove the note and run undo again",
            backup.display(),
            base.display()
        ))),
    }
}

/// Move `backup` and the records beside it to `moved` (a backup's name, [`name_of`]): a
/// backup staged for a name its file did not take after all.
pub fn move_backup(backup: &Path, moved: &Path) -> Result<()> {
    std::fs::rename(backup, moved).map_err(|e| Error::io(&Origin::file(backup), "rename", e))?;
    for what in ["written", "created", "renamed"] {
        let _ = std::fs::rename(record_beside(backup, what), record_beside(moved, what));
    }
    Ok(())
}

/// Remove `backup` (restored) and the records of what its edit wrote and created.
pub fn remove(backup: &Path) -> Result<()> {
    std::fs::remove_file(backup).map_err(|e| Error::io(&Origin::file(backup), "remove", e))?;
    let _ = std::fs::remove_file(written_record(backup));
    let _ = std::fs::remove_file(created_record(backup));
    let _ = std::fs::remove_file(renamed_record(backup));
    Ok(())
}

/// How `now` differs from what an edit wrote (`then`).
fn describe_change(now: &[u8], then: &Fingerprint) -> String {
    let was = then.len as usize;
    if now.len() > was && fingerprint(&now[..was]) == *then {
        let added = &now[was..];
        let lines = memchr::memchr_iter(b'\n', added).count();
        return format!(
            "{} bytes ({lines} lines) were appended after it (the session was resumed?)",
            added.len()
        );
    }
    format!(
        "its content differs from what the edit wrote ({} bytes now, {} then)",
        now.len(),
        was
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_suffix_sorts_after_every_earlier_backup() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("s.jsonl");
        std::fs::write(&f, "x\n").unwrap();
        // A backup from the far future: the next one must still sort after it.
        let later = name_of(&f, &format!("{BACKUP_MARK}99991231T235959Z"));
        std::fs::write(&later, "x\n").unwrap();
        let s = fresh_suffix(&f);
        assert!(is_undoable(&s));
        assert!(name_of(&f, &s) > later, "{s}");
        assert_eq!(backups(&f), vec![later]);
    }
}
