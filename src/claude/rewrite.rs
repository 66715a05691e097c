//! Writing an edited session safely: in place with a backup, or as a new session (`--fork`),
//! and undoing the last in-place edit.
//!
//! Claude Code keeps a running session in memory and appends to its file, so an in-place edit
//! of a live session only shows on the next resume and can break the chain the running process
//! appends to. A live session is therefore refused unless forced; `--fork` never touches the
//! original and prints the `claude --resume` line for the copy.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::claude::layout::{self, backups, Part, SessionFile};
use crate::engine::pipeline::{FileReport, Pipeline};
use crate::engine::runner::{self, Mode};
use crate::error::{Error, Origin, Result};
use crate::io::input;
use crate::io::input::Input;
use crate::io::output::{AtomicFile, Sink, SpanWriter, BACKUP_MARK};

/// How to write an edit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MutateOptions {
    /// Write a new session instead of changing this one.
    pub fork: bool,
    /// Only report.
    pub dry_run: bool,
    /// Edit even a session that looks live.
    pub force: bool,
}

/// What happened.
#[derive(Debug)]
pub enum Written {
    /// Nothing was written.
    DryRun,
    /// The session was replaced; the original is kept at `backup`.
    InPlace {
        /// The backup of the original.
        backup: PathBuf,
    },
    /// The output was already identical: nothing written.
    Unchanged,
    /// A new session was written.
    Forked {
        /// Its id.
        id: String,
        /// Its file.
        path: PathBuf,
    },
}

/// Run `pipeline` over the session and write the result as `opts` says.
pub fn mutate(
    s: &SessionFile,
    pipeline: &Pipeline,
    opts: MutateOptions,
) -> Result<(FileReport, Written)> {
    let origin = Origin::file(&s.path);
    if !opts.fork && !opts.dry_run && !opts.force {
        if let Some(why) = layout::liveness(s) {
            return Err(Error::Other(format!(
                "{}: the session looks live ({why}); edit a copy with --fork (then `claude --resume <new id>`), or pass --force once it is idle",
                s.path.display()
            )));
        }
    }
    if !opts.fork && !opts.dry_run {
        // The runner's in-place protocol: fsync and backup before the last growth check,
        // then rename, then carry over anything appended in between. The mtime is kept:
        // Claude Code's cleanup goes by it, and a fresh one would make the session look live.
        let suffix = backup_suffix(&s.path);
        let mode = Mode::InPlace {
            backup: Some(suffix.clone()),
            touch: false,
            break_links: false,
        };
        let rel = s.path.file_name().map(Into::into).unwrap_or_default();
        let input = Input::File {
            path: s.path.clone(),
            rel,
        };
        let report = runner::run_one(pipeline, &input, &mode)?;
        if !report.changed {
            return Ok((report, Written::Unchanged));
        }
        let mut backup = s.path.as_os_str().to_owned();
        backup.push(suffix);
        let backup = PathBuf::from(backup);
        record_written(&s.path, &backup)?;
        return Ok((report, Written::InPlace { backup }));
    }
    let f = input::open(&s.path)?;
    let mut out = Vec::with_capacity(f.data.len());
    let mut sink = SpanWriter::new(&mut out);
    // The fork carries the session's other files too: what any of them shows is known in all.
    let known = session_known(s, pipeline);
    let report = pipeline
        .run_buffer_known(&f.data, &origin, &mut sink, false, &known)?
        .0;
    sink.finish().map_err(|e| Error::io(&origin, "write", e))?;
    drop(sink);
    if opts.dry_run {
        return Ok((report, Written::DryRun));
    }
    let (id, path) = fork(s, &out, pipeline, &known)?;
    Ok((report, Written::Forked { id, path }))
}

/// What the files of session `s` (backups aside) show of secrets, together.
fn session_known(s: &SessionFile, pipeline: &Pipeline) -> crate::stages::redact::known::Known {
    let members: Vec<PathBuf> = s
        .members()
        .into_iter()
        .filter(|m| m.part != Part::Backup)
        .map(|m| m.path)
        .collect();
    if members.len() < 2 {
        return Default::default();
    }
    let paths: Vec<&Path> = members.iter().map(PathBuf::as_path).collect();
    runner::known_of_files(pipeline, &paths)
}

/// A backup suffix (`.cchist-bak.<stamp>`) whose name sorts after every earlier backup of
/// the same file.
fn backup_suffix(path: &Path) -> String {
    let stamp = crate::io::clock::file_stamp(std::time::SystemTime::now());
    let newest = backups(path).pop();
    for n in 0u32.. {
        let suffix = if n == 0 {
            format!("{BACKUP_MARK}{stamp}")
        } else {
            format!("{BACKUP_MARK}{stamp}.{n:04}")
        };
        let mut name = path.as_os_str().to_owned();
        name.push(&suffix);
        let p = PathBuf::from(name);
        if !p.exists() && newest.as_ref().is_none_or(|b| p > *b) {
            return suffix;
        }
    }
    unreachable!("some suffix is free")
}

/// Replace `to` (whose content was read, under its lock, as `was`) by a copy of `from`,
/// atomically, with `from`'s mode and mtime. The copy is locked before it takes the name, and
/// an append that landed since `was` was read fails the restore instead of being lost.
fn restore_from(from: &Path, to: &Path, was: &input::InputFile) -> Result<()> {
    let o = Origin::file(to);
    let meta = std::fs::metadata(from).map_err(|e| Error::io(&Origin::file(from), "stat", e))?;
    let data = std::fs::read(from).map_err(|e| Error::io(&Origin::file(from), "read", e))?;
    let mut tmp = AtomicFile::create(to).map_err(|e| Error::io(&o, "create", e))?;
    tmp.write_all(&data)
        .map_err(|e| Error::io(&o, "write", e))?;
    let _ = std::os::unix::fs::fchown(tmp.file_ref(), Some(was.meta.uid()), Some(was.meta.gid()));
    tmp.prepare(Some(meta.mode()), meta.modified().ok())
        .map_err(|e| Error::io(&o, "write", e))?;
    let _held = tmp
        .file_ref()
        .try_clone()
        .and_then(|c| crate::io::lock::lock_file(&c).map(|()| c))
        .map_err(|e| Error::io(&o, "lock", e))?;
    let now = std::fs::symlink_metadata(to).map_err(|e| Error::io(&o, "stat", e))?;
    if now.len() != was.meta.len() || now.ino() != was.meta.ino() {
        return Err(Error::Concurrent { path: o });
    }
    tmp.persist().map_err(|e| Error::io(&o, "rename", e))
}

/// Where the record of what an edit wrote is kept: `.<backup name>.written` beside the backup
/// (hidden, and outside the backup names [`backups`] lists).
fn written_record(backup: &Path) -> PathBuf {
    let name = backup
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    backup.with_file_name(format!(".{name}.written"))
}

/// What a file holds, to notice later whether it changed: its length and SHA-256.
#[derive(Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Fingerprint {
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
/// whether the session changed since (turns appended by a resumed session would be lost).
pub(crate) fn record_written(path: &Path, backup: &Path) -> Result<()> {
    let data = std::fs::read(path).map_err(|e| Error::io(&Origin::file(path), "read", e))?;
    let rec = written_record(backup);
    let o = Origin::file(&rec);
    let mut tmp = AtomicFile::create(&rec).map_err(|e| Error::io(&o, "create", e))?;
    serde_json::to_writer(&mut tmp, &fingerprint(&data))
        .map_err(|e| Error::io(&o, "write", e.into()))?;
    tmp.commit(Some(0o600), None)
        .map_err(|e| Error::io(&o, "rename", e))
}

/// Restore the newest backup of a session (atomically) and remove it; returns its path.
///
/// Refused when the session changed since the edit that left the backup (the restore would
/// drop what was added since, e.g. the turns of a resumed session), unless `force`; a forced
/// undo keeps what it replaces as `<session>.jsonl.cchist-undone.<stamp>`.
pub fn undo(s: &SessionFile, force: bool) -> Result<PathBuf> {
    let Some(latest) = backups(&s.path).pop() else {
        return Err(Error::Other(format!(
            "{}: no cchist backup to restore (backups are written by in-place history edits)",
            s.path.display()
        )));
    };
    if !force {
        if let Some(why) = layout::liveness(s) {
            return Err(Error::Other(format!(
                "{}: the session looks live ({why}); pass --force once it is idle",
                s.path.display()
            )));
        }
    }
    let origin = Origin::file(&s.path);
    let locked = crate::io::lock::lock_path(&s.path, crate::io::lock::wait_bound()?)?;
    let current = input::read_locked(locked, &origin)?;
    let record = written_record(&latest);
    let expected: Option<Fingerprint> = std::fs::read(&record)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let change = match &expected {
        Some(e) if *e == fingerprint(&current.data) => None,
        Some(e) => Some(describe_change(&current.data, e)),
        None => Some("there is no record of what the edit wrote (a backup left by an older cchist?), so cchist cannot tell whether it changed since".to_string()),
    };
    if let Some(what) = &change {
        if !force {
            return Err(Error::Other(format!(
                "{}: changed since the edit that left {}: {what}. Restoring would lose that; it was left untouched — pass --force to restore anyway (the current file is kept as {}<stamp>)",
                s.path.display(),
                latest.display(),
                UNDONE_MARK
            )));
        }
        let mut keep = s.path.as_os_str().to_owned();
        keep.push(UNDONE_MARK);
        keep.push(crate::io::clock::file_stamp(std::time::SystemTime::now()));
        let keep = PathBuf::from(keep);
        let o = Origin::file(&keep);
        let mut tmp = AtomicFile::create(&keep).map_err(|e| Error::io(&o, "create", e))?;
        tmp.write_all(&current.data)
            .map_err(|e| Error::io(&o, "write", e))?;
        tmp.commit(Some(current.meta.mode()), current.meta.modified().ok())
            .map_err(|e| Error::io(&o, "rename", e))?;
        let msg = format!(
            "cchist: {}: {what}; the replaced content is kept as {}",
            s.path.display(),
            keep.display()
        );
        eprintln!("{}", crate::findings::report::printable_text(&msg));
    }
    restore_from(&latest, &s.path, &current)?;
    drop(current);
    std::fs::remove_file(&latest).map_err(|e| Error::io(&Origin::file(&latest), "remove", e))?;
    let _ = std::fs::remove_file(&record);
    Ok(latest)
}

/// Marker in the name of what a forced undo replaced: `<session>.jsonl.cchist-undone.<stamp>`.
pub const UNDONE_MARK: &str = ".cchist-undone.";

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

/// Write `bytes` as a new session beside `s`: fresh id in the file name and in every record's
/// `sessionId`, and every other member of the session ([`SessionFile::members`], backups
/// aside) copied through the pipeline: sub-agent transcripts through all of it, JSON documents
/// through the stages that apply to copies, text through the text stages — so a redacting
/// pipeline never copies a secret into the fork.
fn fork(
    s: &SessionFile,
    bytes: &[u8],
    pipeline: &Pipeline,
    known: &crate::stages::redact::known::Known,
) -> Result<(String, PathBuf)> {
    let id = uuid::Uuid::new_v4().to_string();
    let old_ids = session_ids(bytes, &s.id);
    let path = s.project_dir.join(format!("{id}.jsonl"));
    write_new(&path, &rewrite_session_id(bytes, &old_ids, &id), &s.path)?;
    let comp = s.companion_dir();
    let new_comp = s.project_dir.join(&id);
    for m in s.members() {
        let Ok(rel) = m.path.strip_prefix(&comp) else {
            continue; // the transcript itself and its backups
        };
        if m.part == Part::Backup {
            continue;
        }
        let origin = Origin::file(&m.path);
        let data = std::fs::read(&m.path).map_err(|e| Error::io(&origin, "read", e))?;
        let data = match m.part {
            Part::Subagent => {
                let mut out = Vec::with_capacity(data.len());
                let mut sink = SpanWriter::new(&mut out);
                pipeline.run_buffer_known(&data, &origin, &mut sink, false, known)?;
                drop(sink);
                rewrite_session_id(&out, &old_ids, &id)
            }
            Part::Document => pipeline
                .run_copy_known(&data, &origin, known)?
                .0
                .unwrap_or(data),
            _ => pipeline
                .run_text_known(&data, &origin, known)?
                .0
                .unwrap_or(data),
        };
        let dest = new_comp.join(rel);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(&Origin::file(dir), "create directory", e))?;
        }
        write_new(&dest, &data, &m.path)?;
    }
    Ok((id, path))
}

/// The session ids the records carry (normally one, equal to the file stem).
fn session_ids(bytes: &[u8], stem: &str) -> Vec<String> {
    let mut ids = vec![stem.to_string()];
    for l in crate::io::framing::lines(bytes, 1) {
        if let Some(h) = crate::transcript::record::Header::parse(l.body) {
            if let Some(sid) = h.session_id() {
                if !ids.iter().any(|i| i == sid) {
                    ids.push(sid.to_string());
                }
            }
        }
    }
    ids
}

/// Replace `"sessionId":"<old>"` by the new id, touching nothing else.
pub fn rewrite_session_id(bytes: &[u8], old: &[String], new: &str) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for o in old {
        let from = format!("\"sessionId\":\"{o}\"");
        let to = format!("\"sessionId\":\"{new}\"");
        out = replace_all(&out, from.as_bytes(), to.as_bytes());
    }
    out
}

fn replace_all(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(hay.len());
    let mut last = 0;
    for i in memchr::memmem::find_iter(hay, from) {
        out.extend_from_slice(&hay[last..i]);
        out.extend_from_slice(to);
        last = i + from.len();
    }
    out.extend_from_slice(&hay[last..]);
    out
}

fn write_new(path: &Path, bytes: &[u8], like: &Path) -> Result<()> {
    let o = Origin::file(path);
    let mode = std::fs::metadata(like).map(|m| m.mode()).unwrap_or(0o600);
    let mut tmp = AtomicFile::create(path).map_err(|e| Error::io(&o, "create", e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io(&o, "write", e))?;
    tmp.commit(Some(mode), None)
        .map_err(|e| Error::io(&o, "rename", e))
}
