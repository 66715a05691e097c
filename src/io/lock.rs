//! Advisory locks between cchist writers.
//!
//! Every in-place write of a file takes an exclusive `flock` on the file itself before reading
//! it, and holds it until the replacement is in place (and whatever a live writer appended
//! meanwhile is carried over). A second cchist writing the same file waits for the lock (up
//! to [`wait_bound`]), then sees that the path now names the replacement and locks that
//! instead, so it edits what the first one wrote: no lost update. The replacement is locked
//! *before* it is renamed into place ([`lock_file`] on the temp file), so nobody can lock the
//! new file while the first writer still works on it.
//!
//! Claude Code takes no lock: against it the growth check and carry-over of the in-place
//! protocol ([`crate::engine::runner`]) remain the protection.

use std::fs::{File, Metadata, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{Error, Origin, Result};

/// Default of [`wait_bound`].
const DEFAULT_WAIT: Duration = Duration::from_secs(10);

/// The longest wait [`wait_bound`] gives: a day. A longer one (up to `inf`) means "as long as
/// it takes", and a day is that for a cchist writer; beyond `u64::MAX` seconds a `Duration`
/// cannot even hold it.
pub const MAX_WAIT: Duration = Duration::from_secs(86_400);

/// How long a writer waits for another cchist's lock before it gives up:
/// `CCHIST_LOCK_WAIT` seconds (decimals allowed), default 10, at most [`MAX_WAIT`] (a larger
/// value, `inf` included, is capped). A value that is no number of seconds (`ten`, `NaN`, a
/// negative one) is an error rather than a silent default: the user asked for some wait and
/// would not get it.
pub fn wait_bound() -> Result<Duration> {
    parse_wait(std::env::var_os("CCHIST_LOCK_WAIT").as_deref())
}

/// [`wait_bound`] of the variable's value (`None`: unset).
fn parse_wait(v: Option<&std::ffi::OsStr>) -> Result<Duration> {
    let Some(v) = v else {
        return Ok(DEFAULT_WAIT);
    };
    let secs = v
        .to_str()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s >= 0.0); // NaN fails this too
    match secs {
        Some(s) if s >= MAX_WAIT.as_secs_f64() => Ok(MAX_WAIT),
        Some(s) => Ok(Duration::from_secs_f64(s)),
        None => Err(Error::Other(format!(
            "CCHIST_LOCK_WAIT={}: not a number of seconds (0 to {}, decimals allowed); nothing was written — set it to how long to wait for another cchist's lock, or unset it for the default of {} s",
            v.to_string_lossy(),
            MAX_WAIT.as_secs(),
            DEFAULT_WAIT.as_secs()
        ))),
    }
}

/// An open file (read-only) on which this process holds an exclusive lock; released when
/// dropped.
pub struct Locked {
    /// The locked file, opened without following a link.
    pub file: File,
    /// Its metadata, taken once the lock was held.
    pub meta: Metadata,
}

/// Open `path` (never through a link) and lock it exclusively, waiting at most `wait` for
/// another cchist to finish with it. Fails with [`Error::Locked`] when the wait runs out.
pub fn lock_path(path: &Path, wait: Duration) -> Result<Locked> {
    let origin = Origin::file(path);
    let start = Instant::now();
    loop {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(&origin, "open", e))?;
        let left = wait.saturating_sub(start.elapsed());
        if !lock_file_within(&file, left).map_err(|e| Error::io(&origin, "lock", e))? {
            return Err(Error::Locked {
                path: origin,
                waited: wait,
            });
        }
        let meta = file.metadata().map_err(|e| Error::io(&origin, "stat", e))?;
        // While we waited, the holder may have replaced the file: lock what the path names now.
        match std::fs::symlink_metadata(path) {
            Ok(now) if now.ino() == meta.ino() && now.dev() == meta.dev() => {
                return Ok(Locked { file, meta })
            }
            Ok(_) => continue,
            Err(e) => return Err(Error::io(&origin, "stat", e)),
        }
    }
}

/// Lock `file` exclusively now (it is not shared yet: a temp file about to be renamed into
/// place). The lock lives as long as the open file description (any clone of `file`).
pub fn lock_file(file: &File) -> std::io::Result<()> {
    if lock_file_within(file, Duration::ZERO)? {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::WouldBlock,
            "a fresh temp file is locked by someone else",
        ))
    }
}

/// Try to lock `file` exclusively for up to `wait`; false when it stayed locked.
fn lock_file_within(file: &File, wait: Duration) -> std::io::Result<bool> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        // SAFETY: flock on a descriptor we own; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => {}
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
        if start.elapsed() >= wait {
            return Ok(false);
        }
        // Polled rather than blocking so the wait is bounded; the holder usually needs
        // milliseconds, so start short and back off.
        std::thread::sleep(pause.min(wait.saturating_sub(start.elapsed())));
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_locker_gives_up_with_a_typed_error_and_follows_a_replacement() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("s.jsonl");
        std::fs::write(&p, "{}\n").unwrap();
        let first = lock_path(&p, Duration::ZERO).unwrap();
        match lock_path(&p, Duration::ZERO) {
            Err(Error::Locked { .. }) => {}
            other => panic!("expected Locked, got {:?}", other.map(|_| ())),
        }
        // The holder replaces the file, locking the replacement first; then releases.
        let q = d.path().join("new");
        std::fs::write(&q, "{}\n{}\n").unwrap();
        let new = File::open(&q).unwrap();
        lock_file(&new).unwrap();
        std::fs::rename(&q, &p).unwrap();
        drop(first);
        assert!(
            lock_path(&p, Duration::ZERO).is_err(),
            "replacement still locked"
        );
        drop(new);
        let l = lock_path(&p, Duration::ZERO).unwrap();
        assert_eq!(l.meta.len(), 6);
    }

    #[test]
    fn wait_bound_caps_huge_values_and_refuses_what_is_no_number() {
        let with = |v: &str| parse_wait(Some(std::ffi::OsStr::new(v)));
        assert_eq!(with("0.25").unwrap(), Duration::from_millis(250));
        assert_eq!(with(" 3 ").unwrap(), Duration::from_secs(3));
        for huge in ["86400", "2e19", "18446744073709551616", "1e308", "inf"] {
            assert_eq!(with(huge).unwrap(), MAX_WAIT, "{huge}");
        }
        for bad in ["NaN", "-1", "-inf", "ten", ""] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("CCHIST_LOCK_WAIT"), "{bad}: {e}");
        }
        assert_eq!(parse_wait(None).unwrap(), DEFAULT_WAIT);
    }

    #[test]
    fn links_are_not_locked_through() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("real.jsonl");
        std::fs::write(&p, "{}\n").unwrap();
        let l = d.path().join("link.jsonl");
        std::os::unix::fs::symlink(&p, &l).unwrap();
        assert!(lock_path(&l, Duration::ZERO).is_err());
    }
}
