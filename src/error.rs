//! Library errors and the process exit status.
//!
//! Every error that concerns input data names the file and, where known, the
//! 1-based line, so the CLI can print `file:line: reason` without extra context.

use std::fmt;
use std::path::{Path, PathBuf};

/// Result alias for the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A displayable location: a path or `<stdin>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin(pub Option<PathBuf>);

impl Origin {
    /// Standard input.
    pub fn stdin() -> Self {
        Origin(None)
    }
    /// A named file.
    pub fn file(p: &Path) -> Self {
        Origin(Some(p.to_path_buf()))
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(p) => write!(f, "{}", p.display()),
            None => f.write_str("<stdin>"),
        }
    }
}

/// A bad option of a stage, a policy or an operations document: the key to blame (when one
/// is) and what is wrong with its value. Callers place it: the pipeline-file loader as
/// `file:line: stage `x`, key `k`: …`, a command as `--flag-name: …`. The message never
/// repeats the key, and never holds the offending value when it may be a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", key.as_ref().map(|k| format!("key `{k}`: ")).unwrap_or_default())]
pub struct OptionError {
    /// The offending key (`max_tool_output`), as written in a pipeline file.
    pub key: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
}

impl OptionError {
    /// An error blamed on `key`.
    pub fn key(key: &str, message: impl Into<String>) -> OptionError {
        OptionError {
            key: Some(key.to_string()),
            message: message.into(),
        }
    }

    /// An error about the options as a whole.
    pub fn general(message: impl Into<String>) -> OptionError {
        OptionError {
            key: None,
            message: message.into(),
        }
    }

    /// The message as a command-line flag would carry it: `--max-tool-output: …`, where the
    /// command's flag for a key is the key with dashes (`flag` maps the exceptions).
    pub fn for_flag(&self, flag: impl Fn(&str) -> Option<String>) -> String {
        match &self.key {
            Some(k) => {
                let f = flag(k).unwrap_or_else(|| format!("--{}", k.replace('_', "-")));
                format!("{f}: {}", self.message)
            }
            None => self.message.clone(),
        }
    }
}

/// Deserialize an option table (a stage's, `[check]`, `[hook]`), rejecting unknown keys (the options struct must use
/// `#[serde(deny_unknown_fields)]`). The key serde blames becomes the error's key.
pub fn options<T: serde::de::DeserializeOwned>(
    table: toml::Table,
) -> std::result::Result<T, OptionError> {
    T::deserialize(toml::Value::Table(table)).map_err(|e| serde_option_error(e.message()))
}

/// Serde's messages name the key in backquotes (``unknown field `x`, expected …``, ``missing
/// field `x` ``); this is the one place that reads them, at the source of the error.
fn serde_option_error(msg: &str) -> OptionError {
    let msg = msg.trim();
    for marker in ["unknown field `", "missing field `"] {
        if let Some(p) = msg.find(marker) {
            let rest = &msg[p + marker.len()..];
            if let Some(end) = rest.find('`') {
                return OptionError::key(&rest[..end], msg);
            }
        }
    }
    OptionError::general(msg)
}

/// Errors raised by the cchist library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O operation on a file failed.
    #[error("{path}: {op}: {source}")]
    Io {
        /// The file or directory concerned.
        path: Origin,
        /// What was being done (`open`, `read`, `write`, `rename`, …).
        op: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a valid JSON record and the pipeline says `on_invalid_json = "error"`.
    #[error("{path}:{line}: {reason} (set on_invalid_json = \"keep\" to pass such lines through unchanged)")]
    InvalidLine {
        /// The file.
        path: Origin,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A binary file holding secrets cchist cannot redact without breaking it was left out of
    /// an `--out-dir` copy (as a fork leaves it out): the copy is incomplete.
    #[error("{path}: a binary file (NUL bytes or not UTF-8) that holds {count} secret(s) cchist cannot redact without breaking it, left out of the copy (the original keeps it; `cchist check` lists them)")]
    BinaryLeftOut {
        /// The file left out.
        path: Origin,
        /// How many secrets it holds.
        count: usize,
    },
    /// The pipeline file is invalid.
    #[error("{path}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Config {
        /// The pipeline file.
        path: Origin,
        /// 1-based line of the offending key, when known.
        line: Option<usize>,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A stage failed on a record or session.
    #[error("{path}{}: stage {stage}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Stage {
        /// The file.
        path: Origin,
        /// 1-based line, when the failure concerns one record.
        line: Option<usize>,
        /// Stage name.
        stage: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The file changed on disk while it was being processed (e.g. Claude Code appended to it).
    #[error("{path}: the file changed while cchist was reading it (a live session?); it was left untouched — run again when the session is idle, or use --fork")]
    Concurrent {
        /// The file.
        path: Origin,
    },
    /// A memory-mapped input shrank while it was read (another process truncated it): the
    /// output so far is incomplete.
    #[error("{path}: the file was truncated by another process while cchist read it; the output is incomplete and the file was not changed — run again once nothing else writes it")]
    Truncated {
        /// The file.
        path: Origin,
    },
    /// Another cchist held the file's lock for longer than this one would wait.
    #[error("{path}: another cchist is writing this file (still locked after {} s); it was left untouched — run again when that one is done (CCHIST_LOCK_WAIT=SECONDS waits longer)", waited.as_secs_f64())]
    Locked {
        /// The file.
        path: Origin,
        /// How long this run waited.
        waited: std::time::Duration,
    },
    /// Anything else the caller must see as-is.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// Build an [`Error::Io`].
    pub fn io(path: &Origin, op: &'static str, source: std::io::Error) -> Self {
        // Output is written straight from the mapped input: a write that faults on its own
        // source bytes means the input's pages are gone, i.e. the file was truncated.
        #[cfg(unix)]
        if op == "write" && source.raw_os_error() == Some(libc::EFAULT) {
            return Error::Truncated { path: path.clone() };
        }
        Error::Io {
            path: path.clone(),
            op,
            source,
        }
    }
}

/// Process exit status, shared by every command.
///
/// * 0 — success, nothing found
/// * 1 — findings (`check`, `validate`)
/// * 2 — error (bad input, bad arguments, I/O failure)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// Success.
    Ok = 0,
    /// The command ran and found something (a secret, a defect).
    Findings = 1,
    /// The command could not do its job.
    Error = 2,
}
