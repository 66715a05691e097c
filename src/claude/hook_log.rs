//! What hooks leave under `$CLAUDE_CONFIG_DIR/cchist/`: the run log (`hook.log`, one JSON line
//! per run: time, event, session, outcome, duration, and for failures the reason; never
//! transcript content) and which Stop thresholds fired per session (`hook-state/<id>.json`).
//!
//! A reason may quote what a failing command printed (a summary command reads the transcript
//! and may echo it on its error output): every detail is redacted whole by the default rules,
//! then cut ([`shown_detail`]), before it is written, and again when shown; `check --all`
//! scans the log files too ([`log_files`]).

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Origin, Result};

/// The log is rotated to `hook.log.1` past this size.
const LOG_ROTATE_BYTES: u64 = 1 << 20;

/// Most characters of a logged detail.
pub const DETAIL_CHARS: usize = 400;

/// A detail as it may be logged or shown: redacted whole by the default rules, then cut to
/// [`DETAIL_CHARS`] (cutting first would leave parts of secrets no rule matches).
pub fn shown_detail(detail: &str) -> String {
    crate::stages::redact::shown_prefix(detail, DETAIL_CHARS)
}

/// cchist's folder under the Claude Code config root.
pub fn state_dir(config_root: &Path) -> PathBuf {
    config_root.join("cchist")
}

/// The hook run log.
pub fn log_path(config_root: &Path) -> PathBuf {
    state_dir(config_root).join("hook.log")
}

/// The log files that exist: the rotated one, then the current one.
pub fn log_files(config_root: &Path) -> Vec<PathBuf> {
    let path = log_path(config_root);
    [path.with_extension("log.1"), path]
        .into_iter()
        .filter(|p| p.is_file())
        .collect()
}

/// The files the hooks keep that `check --all` scans: the log files, then what
/// `hook-state/` holds (turn-count state, queued history-manager documents), regular files
/// only, in name order.
pub fn kept_files(config_root: &Path) -> Vec<PathBuf> {
    let mut state: Vec<PathBuf> = std::fs::read_dir(state_dir(config_root).join("hook-state"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    state.sort();
    let mut out = log_files(config_root);
    out.extend(state);
    out
}

/// One hook run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LogLine {
    /// When it ended (RFC 3339, UTC).
    pub time: String,
    /// The hook event.
    pub event: String,
    /// The session id (as Claude Code sent it).
    pub session: String,
    /// `ok`, `fired`, `skipped`, `refused`, `incomplete` or `failed`.
    pub outcome: String,
    /// What happened, in a few words (file names and reasons; never transcript content).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// How long the run took.
    pub ms: u64,
}

impl LogLine {
    /// True for an outcome someone should look at.
    pub fn is_failure(&self) -> bool {
        matches!(self.outcome.as_str(), "failed" | "refused" | "incomplete")
    }
}

/// Refuse a symbolic link at any of `paths` (cchist's own folders and files under the config
/// root): what the hooks write there, and what they prune, must never go through a link to
/// somewhere else. A path that does not exist yet is fine.
pub fn refuse_links(paths: &[&Path]) -> Result<()> {
    for p in paths {
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::Other(format!(
                "{} is a symbolic link; cchist never writes through it (nothing was written there) — replace it with a real folder or file",
                p.display()
            )));
        }
    }
    Ok(())
}

/// The folders under the config root the hooks write to, down to `dir`, refused when any is a
/// link ([`refuse_links`]).
fn refuse_linked_dirs(config_root: &Path, dir: &Path) -> Result<()> {
    let mut chain: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| a.starts_with(config_root) && *a != config_root)
        .collect();
    chain.reverse();
    refuse_links(&chain)
}

/// `O_NOFOLLOW`: opening a link fails instead of opening what it points to.
const NO_FOLLOW: i32 = libc::O_NOFOLLOW;

fn private_dir(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(&Origin::file(dir), "create directory", e))
}

/// Append one line to the log (one `write` on an `O_APPEND` file, so concurrent hooks do
/// not interleave), rotating it when it grew past 1 MiB. Its detail is written as
/// [`shown_detail`] makes it.
pub fn append(config_root: &Path, line: &LogLine) -> Result<()> {
    let path = log_path(config_root);
    refuse_linked_dirs(config_root, &path)?;
    private_dir(&state_dir(config_root))?;
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > LOG_ROTATE_BYTES) {
        let _ = std::fs::rename(&path, path.with_extension("log.1"));
    }
    let line = LogLine {
        detail: shown_detail(&line.detail),
        session: crate::stages::redact::shown_text(&line.session).into_owned(),
        // An unknown event's name is the caller's text, kept as given: redacted like the rest.
        event: crate::stages::redact::shown_text(&line.event).into_owned(),
        ..line.clone()
    };
    let mut text = serde_json::to_string(&line).expect("a log line serializes");
    text.push('\n');
    let o = Origin::file(&path);
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(NO_FOLLOW)
        .open(&path)
        .map_err(|e| Error::io(&o, "open", e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| Error::io(&o, "write", e))
}

/// The logged runs, oldest first (the rotated file, then the current one); unreadable lines
/// are skipped.
pub fn read(config_root: &Path) -> Vec<LogLine> {
    let path = log_path(config_root);
    [path.with_extension("log.1"), path]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect::<Vec<LogLine>>()
        })
        .collect()
}

/// The Stop thresholds that fired in one session, held under an exclusive lock from
/// [`Fired::lock`] until dropped, so two hooks of one session cannot both fire one.
pub struct Fired {
    file: File,
    path: PathBuf,
    turns: BTreeSet<usize>,
}

#[derive(Serialize, Deserialize, Default)]
struct FiredDoc {
    fired: BTreeSet<usize>,
}

impl Fired {
    /// Lock and read the state of `session` (an id of letters, digits, `-` and `_`).
    pub fn lock(config_root: &Path, session: &str) -> Result<Fired> {
        check_id(session)?;
        let dir = state_dir(config_root).join("hook-state");
        refuse_linked_dirs(config_root, &dir)?;
        private_dir(&dir)?;
        let path = dir.join(format!("{session}.json"));
        if !path.exists() {
            prune(&dir);
        }
        let o = Origin::file(&path);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(NO_FOLLOW)
            .open(&path)
            .map_err(|e| Error::io(&o, "open", e))?;
        // SAFETY: flock on a descriptor we own; released when `file` closes.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Error::io(&o, "lock", std::io::Error::last_os_error()));
        }
        let mut text = String::new();
        file.read_to_string(&mut text)
            .map_err(|e| Error::io(&o, "read", e))?;
        let doc: FiredDoc = if text.trim().is_empty() {
            FiredDoc::default()
        } else {
            serde_json::from_str(&text).map_err(|e| {
                Error::Other(format!(
                    "{}: not the state cchist writes ({e}); remove it to start over",
                    path.display()
                ))
            })?
        };
        Ok(Fired {
            file,
            path,
            turns: doc.fired,
        })
    }

    /// True when the threshold at `turn` already fired.
    pub fn has(&self, turn: usize) -> bool {
        self.turns.contains(&turn)
    }

    /// Record that the threshold at `turn` fired (written and synced before returning).
    pub fn record(&mut self, turn: usize) -> Result<()> {
        self.turns.insert(turn);
        let o = Origin::file(&self.path);
        let text = serde_json::to_string(&FiredDoc {
            fired: self.turns.clone(),
        })
        .expect("state serializes");
        self.file
            .set_len(0)
            .and_then(|_| self.file.rewind())
            .and_then(|_| self.file.write_all(text.as_bytes()))
            .and_then(|_| self.file.sync_all())
            .map_err(|e| Error::io(&o, "write", e))
    }
}

/// A session id names state files: letters, digits, `-` and `_` only.
fn check_id(session: &str) -> Result<()> {
    if session.is_empty()
        || session.len() > 128
        || !session
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(Error::Other(format!(
            "session id {:?} is not one Claude Code writes; no state kept for it",
            session.chars().take(40).collect::<String>()
        )));
    }
    Ok(())
}

/// Where `apply = "session-end"` keeps a session's history-manager documents until it ends.
fn queue_path(config_root: &Path, session: &str) -> Result<PathBuf> {
    check_id(session)?;
    let dir = state_dir(config_root).join("hook-state");
    refuse_linked_dirs(config_root, &dir)?;
    private_dir(&dir)?;
    Ok(state_dir(config_root)
        .join("hook-state")
        .join(format!("{session}.queue.json")))
}

#[derive(Serialize, Deserialize, Default)]
struct QueueDoc {
    /// Each document as the history manager printed it, oldest first.
    documents: Vec<String>,
}

/// Queue a document for the session's end (written whole, then renamed over the queue).
/// Call it holding the session's [`Fired`] lock, which orders the Stop runs of one session.
pub fn queue_push(config_root: &Path, session: &str, document: &str) -> Result<usize> {
    let path = queue_path(config_root, session)?;
    let mut q = read_queue(&path)?;
    q.documents.push(document.to_string());
    let o = Origin::file(&path);
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string(&q).expect("queue serializes");
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(NO_FOLLOW)
            .open(&tmp)
            .map_err(|e| Error::io(&o, "open", e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(|e| Error::io(&o, "write", e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&o, "rename", e))?;
    Ok(q.documents.len())
}

/// The queued documents of `session`, oldest first, and the queue removed.
pub fn queue_take(config_root: &Path, session: &str) -> Result<Vec<String>> {
    let path = queue_path(config_root, session)?;
    let q = read_queue(&path)?;
    if path.exists() {
        std::fs::remove_file(&path).map_err(|e| Error::io(&Origin::file(&path), "remove", e))?;
    }
    Ok(q.documents)
}

fn read_queue(path: &Path) -> Result<QueueDoc> {
    match std::fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            Error::Other(format!(
                "{}: not the queue cchist writes ({e}); remove it to start over",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(QueueDoc::default()),
        Err(e) => Err(Error::io(&Origin::file(path), "read", e)),
    }
}

/// State files older than this are removed when a new session's file is made (a session
/// idle that long has been resumed, if ever, as the turn counts it had).
const STATE_KEEP: std::time::Duration = std::time::Duration::from_secs(90 * 24 * 3600);

/// Remove state files not written for [`STATE_KEEP`], so the folder does not grow forever.
fn prune(dir: &Path) {
    let now = std::time::SystemTime::now();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > STATE_KEEP));
        if old && e.path().extension().is_some_and(|x| x == "json") {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_appends_and_reads_back() {
        let d = tempfile::tempdir().unwrap();
        let line = LogLine {
            time: "t".into(),
            event: "Stop".into(),
            session: "s".into(),
            outcome: "failed".into(),
            detail: "x".into(),
            ms: 3,
        };
        append(d.path(), &line).unwrap();
        append(d.path(), &line).unwrap();
        assert_eq!(read(d.path()), vec![line.clone(), line]);
    }

    #[test]
    fn queue_keeps_documents_in_order_until_taken() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(queue_push(d.path(), "s-1", "a").unwrap(), 1);
        assert_eq!(queue_push(d.path(), "s-1", "b").unwrap(), 2);
        assert_eq!(queue_take(d.path(), "s-1").unwrap(), vec!["a", "b"]);
        assert!(queue_take(d.path(), "s-1").unwrap().is_empty());
        assert!(queue_push(d.path(), "../x", "a").is_err());
    }

    #[test]
    fn fired_state_persists_and_refuses_odd_ids() {
        let d = tempfile::tempdir().unwrap();
        {
            let mut f = Fired::lock(d.path(), "abc-1").unwrap();
            assert!(!f.has(2));
            f.record(2).unwrap();
        }
        assert!(Fired::lock(d.path(), "abc-1").unwrap().has(2));
        assert!(!Fired::lock(d.path(), "abc-2").unwrap().has(2));
        assert!(Fired::lock(d.path(), "../x").is_err());
    }
}
