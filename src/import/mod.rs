//! `cchist import`: another agent's conversation as a new Claude Code session.
//!
//! Modelled on vector's `sources/`: each format is one module implementing [`Source`], which
//! reads its files into the neutral [`Conversation`] and counts what it did in a [`Report`].
//! [`build`] is the one place that turns a conversation into Claude Code records (as the
//! pinned CLI writes them), and [`tools`] the one place that maps another agent's tool calls
//! onto Claude Code's tools. The command then runs the records through a redaction pipeline
//! (the engine's, so no second redactor exists) before anything is written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

pub mod aider;
pub mod build;
pub mod codex;
pub mod gemini;
pub mod messages;
pub mod opencode;
pub mod tools;

/// The Claude Code version imported records say wrote them: the CLI the test suite resumes
/// them with.
pub const CLAUDE_VERSION: &str = "2.1.328";

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, and tool results (Claude's API carries them in user messages).
    User,
    /// The model.
    Assistant,
}

/// Whose tool names and argument names a tool call uses, which decides how [`tools`] maps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Already a Claude / Messages API call: kept as it is.
    Native,
    /// OpenAI Codex CLI (`shell`, `exec_command`, `apply_patch`, …).
    Codex,
    /// Gemini CLI (`run_shell_command`, `read_file`, `replace`, …).
    Gemini,
    /// opencode (`bash`, `read`, `write`, `edit`, `multiedit`, `apply_patch`, … with
    /// camel-case arguments: `filePath`, `oldString`, `patchText`).
    Opencode,
}

/// One block of a message, in the neutral model.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Plain text.
    Text(String),
    /// An image: base64 `data` of `media_type`, or a URL when the source only had one.
    Image {
        /// `image/png`, … (empty for a URL).
        media_type: String,
        /// Base64 bytes, or the URL.
        data: String,
        /// True when `data` is a URL.
        url: bool,
    },
    /// A tool call.
    ToolUse {
        /// The source's call id (sanitized by the builder).
        id: String,
        /// The source's tool name.
        name: String,
        /// The arguments.
        input: Value,
        /// Whose tool it is.
        dialect: Dialect,
    },
    /// The answer to a tool call.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// Text and images.
        content: Vec<Block>,
        /// The tool failed.
        is_error: bool,
    },
    /// A thinking block with the signature that lets the API accept it back.
    Thinking {
        /// The text.
        thinking: String,
        /// The signature (never empty: a source drops unsigned thinking).
        signature: String,
    },
    /// A Messages API block passed through as it is (`document`, `redacted_thinking`, …).
    Raw(Value),
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub blocks: Vec<Block>,
    /// When, as the source recorded it (any RFC 3339); the builder fills gaps.
    pub timestamp: Option<String>,
    /// The working directory at that point, when the source tracks it.
    pub cwd: Option<String>,
    /// The model that wrote an assistant message, when known.
    pub model: Option<String>,
}

impl Message {
    /// A message of `role` with `blocks` and nothing else known.
    pub fn new(role: Role, blocks: Vec<Block>) -> Message {
        Message {
            role,
            blocks,
            timestamp: None,
            cwd: None,
            model: None,
        }
    }
}

/// A conversation read from another agent, before it becomes records.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// The messages in order.
    pub messages: Vec<Message>,
    /// The working directory the session started in, when the source says.
    pub cwd: Option<String>,
    /// The git branch, when the source says.
    pub git_branch: Option<String>,
    /// The model of the whole conversation, when the source names one (a request body's
    /// `model`); a message's own model wins.
    pub model: Option<String>,
}

/// What an import did with one kind of source item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Carried over with the same meaning and shape.
    Kept,
    /// Carried over onto Claude Code's equivalent (a tool call onto Bash/Read/Write/Edit).
    Mapped,
    /// Carried over as text (no equivalent the API would accept).
    Folded,
    /// Left out.
    Dropped,
}

/// One line of a [`Report`].
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The source's item kind (`response_item/function_call`, `gemini/toolCall`, …).
    pub kind: String,
    /// What happened to it.
    pub action: Action,
    /// How many.
    pub count: u64,
    /// Why.
    pub why: String,
}

/// What an import did, per source kind: kept, mapped, folded into text, dropped, and why.
/// Nothing is dropped without a line here.
#[derive(Debug, Clone, Default)]
pub struct Report {
    counts: BTreeMap<(String, Action, String), u64>,
}

impl Report {
    /// Count one `kind` item `action`ed, for `why`.
    pub fn add(&mut self, kind: &str, action: Action, why: &str) {
        *self
            .counts
            .entry((kind.to_string(), action, why.to_string()))
            .or_default() += 1;
    }

    /// The lines, by kind then action.
    pub fn entries(&self) -> Vec<Entry> {
        self.counts
            .iter()
            .map(|((kind, action, why), n)| Entry {
                kind: kind.clone(),
                action: *action,
                count: *n,
                why: why.clone(),
            })
            .collect()
    }

    /// How many items were `action`ed, over all kinds.
    pub fn total(&self, action: Action) -> u64 {
        self.counts
            .iter()
            .filter(|((_, a, _), _)| *a == action)
            .map(|(_, n)| n)
            .sum()
    }

    /// The report as aligned text, one line per (kind, action, why).
    pub fn text(&self) -> String {
        let entries = self.entries();
        let w = entries.iter().map(|e| e.kind.len()).max().unwrap_or(0);
        let mut s = String::new();
        for e in &entries {
            let action = match e.action {
                Action::Kept => "kept",
                Action::Mapped => "mapped",
                Action::Folded => "folded",
                Action::Dropped => "dropped",
            };
            s.push_str(&format!(
                "  {:<w$}  {:<7} {:>6}  {}\n",
                e.kind, action, e.count, e.why
            ));
        }
        s
    }
}

/// A source that cannot be imported: what is wrong, where, and what to do.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A line or document of the source is not what its format defines.
    #[error("{}:{line}: {reason}", path.display())]
    Malformed {
        /// The source file.
        path: PathBuf,
        /// 1-based line (1 for a whole-document format).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A row of a source database is not what its format defines (a database has no lines:
    /// the row is named).
    #[error("{}: {table} `{id}`: {reason}", path.display())]
    MalformedRow {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: &'static str,
        /// The row's id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// The source could not be read.
    #[error("{}: {op}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The pipeline failed on the built records.
    #[error(transparent)]
    Pipeline(#[from] crate::error::Error),
    /// No format recognises the file, or none was found where one was asked for.
    #[error("{0}")]
    NotFound(String),
    /// The working directory the session would belong to holds a secret: the project folder
    /// Claude Code names after it (`ghp_…` → `-tmp-ghp-…`, which no rule matches) would keep
    /// it, and the `cd` line would print it. The value is never part of the message.
    #[error("{}: {whose} working directory holds a secret ({rule}); nothing was imported. The session's project folder is named after it: give the project's directory with `--project DIR` (the imported records' cwd then take it)", path.display())]
    SecretCwd {
        /// The source file.
        path: PathBuf,
        /// Whose directory: the source's, the one given, the current one.
        whose: &'static str,
        /// The rule that found it.
        rule: String,
    },
}

/// The rule the default redaction finds in `dir`, if any: a working directory that holds a
/// secret must not name a project folder.
fn secret_in(dir: &str) -> Option<String> {
    let r = crate::stages::redact::default_redactor();
    let (_, found) = r.redact_text(dir.as_bytes());
    found.first().map(|f| r.rule_id(f.rule).to_string())
}

impl ImportError {
    /// A [`ImportError::Malformed`] at `path:line`.
    pub fn at(path: &Path, line: usize, reason: impl Into<String>) -> ImportError {
        ImportError::Malformed {
            path: path.to_path_buf(),
            line,
            reason: reason.into(),
        }
    }
}

/// How much of a compacted history to import.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum History {
    /// Everything the user saw, compactions ignored (Claude Code compacts it again if needed).
    #[default]
    Full,
    /// What the other agent's model saw last: the compaction's replacement history and what
    /// follows it.
    Active,
}

/// Options every source honours.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Compaction policy.
    pub history: History,
    /// The model every assistant record names (`--model`). Claude Code sends a thinking
    /// block back only when its record names the model it resumes with (a signature is
    /// bound to its model), so a Messages array with signed thinking needs this.
    pub model: Option<String>,
    /// Which session of a source that holds many (an opencode database): an id, or a part of
    /// one that only one id holds.
    pub session: Option<String>,
}

/// One import format: recognises its files and reads one into a [`Conversation`].
pub trait Source: Sync {
    /// Its `--from` name.
    fn name(&self) -> &'static str;
    /// Whether `path` (whose first bytes are `head`) is in this format.
    fn detect(&self, path: &Path, head: &[u8]) -> bool;
    /// Read `data` (the whole file, decompressed) into a conversation, counting into `report`.
    fn read(
        &self,
        path: &Path,
        data: &[u8],
        opts: &Options,
        report: &mut Report,
    ) -> Result<Conversation, ImportError>;
}

/// Every source, in detection order (the most specific first).
pub fn sources() -> &'static [&'static dyn Source] {
    &[
        &codex::Codex,
        &gemini::Gemini,
        &opencode::Opencode,
        &messages::Messages,
        &aider::Aider,
    ]
}

/// The source `--from NAME` names.
pub fn source_named(name: &str) -> Option<&'static dyn Source> {
    sources().iter().copied().find(|s| s.name() == name)
}

/// The source that recognises `path`.
pub fn detect(path: &Path, data: &[u8]) -> Result<&'static dyn Source, ImportError> {
    let head = &data[..data.len().min(64 << 10)];
    sources()
        .iter()
        .copied()
        .find(|s| s.detect(path, head))
        .ok_or_else(|| {
            ImportError::NotFound(format!(
                "{}: not a format cchist import knows; name it with --from ({})",
                path.display(),
                sources()
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// The first bytes of every SQLite database file.
pub const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Read a source file whole, decompressing `.zst`; of a SQLite database only its header (its
/// source opens it: a database can be far larger than the one session it is asked for).
pub fn read_file(path: &Path) -> Result<Vec<u8>, ImportError> {
    let io = |op, source| ImportError::Io {
        path: path.to_path_buf(),
        op,
        source,
    };
    {
        use std::io::Read;
        let mut head = Vec::with_capacity(100);
        std::fs::File::open(path)
            .and_then(|f| f.take(100).read_to_end(&mut head))
            .map_err(|e| io("read", e))?;
        if head.starts_with(SQLITE_MAGIC) {
            return Ok(head);
        }
    }
    let raw = std::fs::read(path).map_err(|e| io("read", e))?;
    if path.extension().is_some_and(|e| e == "zst") {
        #[cfg(feature = "zstd")]
        return zstd::stream::decode_all(&raw[..]).map_err(|e| io("decompress (zstd)", e));
        #[cfg(not(feature = "zstd"))]
        return Err(io(
            "decompress (zstd)",
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "this cchist is built without the `zstd` feature: decompress the file first (`zstd -d`) or build with it",
            ),
        ));
    }
    Ok(raw)
}

/// Parse one JSON line, or say where and why not.
pub(crate) fn json_line(path: &Path, line: usize, body: &[u8]) -> Result<Value, ImportError> {
    serde_json::from_slice(body).map_err(|e| ImportError::at(path, line, format!("not JSON: {e}")))
}

/// The non-blank lines of `data` with their 1-based numbers.
pub(crate) fn lines(data: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    data.split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix(b"\r").unwrap_or(l)))
        .filter(|(_, l)| l.iter().any(|b| !b.is_ascii_whitespace()))
}

/// A `data:<type>;base64,<data>` URL as an image block; any other URL as a URL image.
pub(crate) fn image_from_url(url: &str) -> Block {
    if let Some(rest) = url.strip_prefix("data:") {
        if let Some((meta, data)) = rest.split_once(',') {
            if let Some(mt) = meta.strip_suffix(";base64") {
                return Block::Image {
                    media_type: mt.to_string(),
                    data: data.to_string(),
                    url: false,
                };
            }
        }
    }
    Block::Image {
        media_type: String::new(),
        data: url.to_string(),
        url: true,
    }
}

/// What one import gives: the records (redacted), what was done, and the pipeline's report.
pub struct Imported {
    /// Where and as what the records were built.
    pub target: build::Target,
    /// The session's JSONL, after the pipeline.
    pub jsonl: Vec<u8>,
    /// What the source's items became.
    pub report: Report,
    /// What the pipeline did (secrets replaced, …).
    pub pipeline: crate::engine::pipeline::FileReport,
}

/// Read `path` as `source`, build the records of a new session (fresh v4 id) in `project`
/// (else the source's own working directory, else `fallback_cwd`), and run them through
/// `pipeline` — the engine's own, as `cchist run` runs it, so no record reaches the caller
/// unredacted.
pub fn convert(
    source: &dyn Source,
    path: &Path,
    data: &[u8],
    opts: &Options,
    project: Option<&str>,
    fallback_cwd: &str,
    pipeline: &crate::engine::pipeline::Pipeline,
) -> Result<Imported, ImportError> {
    let mut report = Report::default();
    let mut conv = source.read(path, data, opts, &mut report)?;
    let refuse = |whose: &'static str, rule: String| ImportError::SecretCwd {
        path: path.to_path_buf(),
        whose,
        rule,
    };
    // A working directory that holds a secret would name the project folder (where no rule
    // finds it again) and the `cd` line: refused, unless another is given, which is then
    // every record's.
    let source_secret = conv
        .cwd
        .iter()
        .chain(conv.messages.iter().filter_map(|m| m.cwd.as_ref()))
        .find_map(|d| secret_in(d));
    match project {
        Some(p) => {
            if let Some(rule) = secret_in(p) {
                return Err(refuse("the given (`--project`)", rule));
            }
            if source_secret.is_some() {
                // Every record's, not only those that held it: one session, one directory.
                conv.cwd = Some(p.to_string());
                for m in &mut conv.messages {
                    m.cwd = None;
                }
            }
        }
        None => {
            if let Some(rule) = source_secret {
                return Err(refuse("the source's", rule));
            }
            if conv.cwd.is_none() {
                if let Some(rule) = secret_in(fallback_cwd) {
                    return Err(refuse("the current", rule));
                }
            }
        }
    }
    let target = build::Target {
        session_id: uuid::Uuid::new_v4().to_string(),
        cwd: project
            .map(str::to_string)
            .or_else(|| conv.cwd.clone())
            .unwrap_or_else(|| fallback_cwd.to_string()),
        git_branch: conv.git_branch.clone().unwrap_or_default(),
        model: opts.model.clone().or_else(|| conv.model.clone()),
        force_model: opts.model.is_some(),
        source: source.name(),
    };
    let records = build::build(conv, &target, &mut report);
    let origin = crate::error::Origin::file(path);
    let mut jsonl = Vec::with_capacity(records.len());
    let mut sink = crate::io::output::SpanWriter::new(&mut jsonl);
    let pipeline = pipeline.run_buffer(&records, &origin, &mut sink)?;
    drop(sink);
    Ok(Imported {
        target,
        jsonl,
        report,
        pipeline,
    })
}

/// Write a new session file: its folder created, never over an existing file, atomically
/// (a temp file renamed into place, so a reader never sees half a session). The one place an
/// import writes.
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    // The one write path: written aside, fsynced, linked into place, never over a session
    // that exists (a concurrent writer either wins or finds ours).
    if crate::io::replace::persist_new(path, bytes, 0o600)? {
        Ok(())
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "a session with this id exists already",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the `zstd` feature a compressed source is an error that says what to do, never
    /// compressed bytes taken for JSON (`scripts/library-face.sh` runs this build).
    #[cfg(not(feature = "zstd"))]
    #[test]
    fn a_zst_source_without_the_feature_says_to_decompress_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rollout.jsonl.zst");
        std::fs::write(&p, [0x28, 0xb5, 0x2f, 0xfd, 0, 0]).unwrap();
        let e = read_file(&p).unwrap_err().to_string();
        assert!(e.contains("without the `zstd` feature"), "{e}");
    }

    #[cfg(feature = "zstd")]
    #[test]
    fn a_zst_source_is_decompressed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("rollout.jsonl.zst");
        std::fs::write(&p, zstd::stream::encode_all(&b"{}\n"[..], 3).unwrap()).unwrap();
        assert_eq!(read_file(&p).unwrap(), b"{}\n");
    }
}
