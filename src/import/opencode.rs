//! opencode sessions: `$XDG_DATA_HOME/opencode/` (default `~/.local/share/opencode/`), either
//! the legacy JSON tree `storage/` (`session/<projectID>/<sessionID>.json`,
//! `message/<sessionID>/<messageID>.json`, `part/<messageID>/<partID>.json`) or the SQLite
//! database `opencode.db` (tables `session`, `message`, `part`, the same JSON in a `data`
//! column; feature `opencode-sqlite`).
//!
//! Defined in anomalyco/opencode `packages/opencode/src/session/message-v2.ts` @007a9409
//! (`User`/`Assistant` messages, the `Part` union, `toModelMessages`: what opencode sends its
//! model, which this follows), `session.sql.ts` @063e830 (the tables, `session.revert`),
//! `storage/json-migration.ts` (the tree: ids come from file names) and `session/revert.ts`
//! (`cleanup`: a revert removes the messages after `revert.messageID`, and that message too
//! unless `revert.partID`, whose parts from that one on go).
//!
//! Both forms load into [`Doc`]s and go through [`conversation`], so they read alike.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{
    image_from_url, Action, Block, Conversation, Dialect, History, ImportError, Message, Options,
    Report, Role, Source,
};

/// The opencode source.
pub struct Opencode;

/// What a pruned tool output reads as once opencode has compacted it (`toModelMessages`).
pub const CLEARED: &str = "[Old tool result content cleared]";
/// What opencode answers a tool call that never finished with (`toModelMessages`).
pub const INTERRUPTED: &str = "[Tool execution was interrupted]";
/// The question a compaction part stands for (`toModelMessages`).
pub const COMPACTION_PROMPT: &str = "What did we do so far?";

/// Where a document was read: a file of the storage tree, or a row of the database.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A JSON file.
    File(PathBuf),
    /// The `data` of a row.
    Row {
        /// The database file.
        db: PathBuf,
        /// `session`, `message` or `part`.
        table: &'static str,
        /// The row's id.
        id: String,
    },
}

impl Origin {
    fn error(&self, line: usize, reason: impl Into<String>) -> ImportError {
        match self {
            Origin::File(p) => ImportError::at(p, line, reason),
            Origin::Row { db, table, id } => ImportError::MalformedRow {
                path: db.clone(),
                table,
                id: id.clone(),
                reason: reason.into(),
            },
        }
    }
}

/// One JSON document of a session (its info, a message, a part) and the id its file name or
/// row gives it (which wins over the JSON's own, as opencode's migration and its queries do).
#[derive(Debug, Clone)]
pub struct Doc {
    /// Where it was read.
    pub origin: Origin,
    /// The id.
    pub id: String,
    /// The JSON text.
    pub bytes: Vec<u8>,
}

/// A parsed document: an object, or where and why not.
fn object(d: &Doc) -> Result<Map<String, Value>, ImportError> {
    match serde_json::from_slice::<Value>(&d.bytes) {
        Ok(Value::Object(o)) => Ok(o),
        Ok(_) => Err(d.origin.error(1, "must be a JSON object")),
        Err(e) => Err(d.origin.error(e.line().max(1), format!("not JSON: {e}"))),
    }
}

fn str_of<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str)
}

/// An epoch-milliseconds time as RFC 3339.
fn time_of(ms: Option<&Value>) -> Option<String> {
    let ms = ms?
        .as_f64()
        .filter(|m| m.is_finite() && *m >= 0.0 && *m < 1e15)?;
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    Some(crate::io::clock::rfc3339(t))
}

/// A message with its parts, parsed and checked.
struct Msg {
    id: String,
    info: Map<String, Value>,
    parts: Vec<(String, Origin, Map<String, Value>)>,
}

impl Msg {
    fn role(&self) -> &str {
        str_of(&self.info, "role").unwrap_or("")
    }
    fn has(&self, ty: &str) -> bool {
        self.parts
            .iter()
            .any(|(_, _, p)| str_of(p, "type") == Some(ty))
    }
}

/// Parts that are opencode's bookkeeping, never sent to its model.
const BOOKKEEPING: &[&str] = &["step-start", "step-finish", "snapshot", "patch"];

/// The conversation of one session: its info and its messages, each with its parts, in any
/// order (sorted here by id, as opencode orders them).
pub fn conversation(
    session: &Doc,
    messages: Vec<(Doc, Vec<Doc>)>,
    opts: &Options,
    report: &mut Report,
) -> Result<Conversation, ImportError> {
    let info = object(session)?;
    let mut msgs = Vec::new();
    for (m, parts) in messages {
        let mut o = object(&m)?;
        match str_of(&o, "role") {
            Some("user" | "assistant") => {}
            Some(r) => {
                return Err(m
                    .origin
                    .error(1, format!("unknown role `{r}` (user, assistant)")))
            }
            None => return Err(m.origin.error(1, "a message needs a `role`")),
        }
        o.insert("id".into(), m.id.clone().into());
        let mut ps = Vec::new();
        for p in parts {
            let mut po = object(&p)?;
            if !po.get("type").is_some_and(Value::is_string) {
                return Err(p.origin.error(1, "a part needs a `type`"));
            }
            if str_of(&po, "type") == Some("tool") {
                let status = po
                    .get("state")
                    .and_then(|s| s.get("status"))
                    .and_then(Value::as_str);
                if !matches!(status, Some("pending" | "running" | "completed" | "error")) {
                    return Err(p.origin.error(
                        1,
                        "a tool part needs `state.status` (pending, running, completed, error)",
                    ));
                }
            }
            po.insert("id".into(), p.id.clone().into());
            ps.push((p.id, p.origin, po));
        }
        ps.sort_by(|a, b| a.0.cmp(&b.0));
        msgs.push(Msg {
            id: m.id,
            info: o,
            parts: ps,
        });
    }
    msgs.sort_by(|a, b| a.id.cmp(&b.id));
    report.add(
        "session",
        Action::Kept,
        if info.get("parentID").is_some_and(Value::is_string) {
            "a sub-agent's session (parentID): imported as a session of its own"
        } else {
            "directory used; title and summary left out"
        },
    );
    revert(&info, &mut msgs, report);
    let msgs = compaction(msgs, opts.history, report);
    let mut out = Vec::new();
    for m in &msgs {
        match m.role() {
            "user" => user(m, report, &mut out),
            _ => assistant(m, opts.history, report, &mut out)?,
        }
    }
    Ok(Conversation {
        messages: out,
        cwd: str_of(&info, "directory")
            .filter(|d| !d.is_empty())
            .map(str::to_string),
        ..Conversation::default()
    })
}

/// `session.revert`: the messages after `messageID` go, and that one too unless `partID`
/// names where in it the revert starts (its parts from that one on go): what opencode's
/// `SessionRevert.cleanup` removes before the next prompt.
fn revert(info: &Map<String, Value>, msgs: &mut Vec<Msg>, report: &mut Report) {
    let Some(r) = info.get("revert").filter(|r| r.is_object()) else {
        return;
    };
    let Some(at) = r.get("messageID").and_then(Value::as_str) else {
        return;
    };
    let part = r.get("partID").and_then(Value::as_str);
    let why = "after the session's revert point (session.revert): opencode discards it";
    msgs.retain_mut(|m| {
        if m.id.as_str() < at {
            return true;
        }
        if m.id == at {
            if let Some(p) = part {
                let before = m.parts.len();
                m.parts.retain(|(id, _, _)| id.as_str() < p);
                for _ in m.parts.len()..before {
                    report.add("part", Action::Dropped, why);
                }
                return true;
            }
        }
        report.add("message", Action::Dropped, why);
        false
    });
    report.add("session.revert", Action::Kept, "applied");
}

/// Whether `m` is a compaction whose summary finished: a user message with a `compaction`
/// part answered by an assistant `summary: true` message that finished without error.
fn completed_compactions(msgs: &[Msg]) -> Vec<usize> {
    msgs.iter()
        .enumerate()
        .filter(|(_, m)| m.role() == "user" && m.has("compaction"))
        .filter(|(_, m)| {
            msgs.iter().any(|a| {
                a.role() == "assistant"
                    && a.info.get("summary").and_then(Value::as_bool) == Some(true)
                    && a.info.get("finish").is_some_and(Value::is_string)
                    && a.info.get("error").is_none_or(Value::is_null)
                    && str_of(&a.info, "parentID") == Some(m.id.as_str())
            })
        })
        .map(|(i, _)| i)
        .collect()
}

/// `--history full`: every compaction exchange (its question and summary) left out, the rest
/// kept; `active`: what opencode's model saw last (`filterCompacted`) — from the last finished
/// compaction on, or from its `tail_start_id` when the compaction kept a tail.
fn compaction(mut msgs: Vec<Msg>, history: History, report: &mut Report) -> Vec<Msg> {
    let done = completed_compactions(&msgs);
    match history {
        History::Full => {
            let ids: Vec<String> = done.iter().map(|&i| msgs[i].id.clone()).collect();
            msgs.retain(|m| {
                let question = m.role() == "user" && ids.contains(&m.id);
                let summary = m.role() == "assistant"
                    && m.info.get("summary").and_then(Value::as_bool) == Some(true)
                    && str_of(&m.info, "parentID").is_some_and(|p| ids.iter().any(|i| i == p));
                if question || summary {
                    report.add(
                        if question {
                            "part/compaction"
                        } else {
                            "message/summary"
                        },
                        Action::Dropped,
                        "full history kept (--history active imports what the agent's model saw after it)",
                    );
                }
                !(question || summary)
            });
            msgs
        }
        History::Active => {
            let Some(&last) = done.last() else {
                return msgs;
            };
            let tail = msgs[last]
                .parts
                .iter()
                .find(|(_, _, p)| str_of(p, "type") == Some("compaction"))
                .and_then(|(_, _, p)| str_of(p, "tail_start_id"))
                .and_then(|t| msgs[..last].iter().position(|m| m.id == t));
            let start = tail.unwrap_or(last);
            for _ in 0..start {
                report.add(
                    "message",
                    Action::Dropped,
                    "before a compaction (--history active)",
                );
            }
            report.add(
                "part/compaction",
                Action::Kept,
                "--history active: the compaction's question and summary replace what came before",
            );
            msgs.split_off(start)
        }
    }
}

/// A `file` part (or a tool's attachment) as a block: an image or a PDF from a `data:` URL;
/// `None` for a text file or a folder (opencode put their content in a synthetic text part).
fn file_block(p: &Map<String, Value>, kind: &str, report: &mut Report) -> Option<Block> {
    let mime = str_of(p, "mime").unwrap_or("");
    let url = str_of(p, "url").unwrap_or("");
    let name = str_of(p, "filename").unwrap_or("file");
    if mime == "text/plain" || mime == "application/x-directory" {
        report.add(
            kind,
            Action::Dropped,
            "a text file or folder: opencode sends its content as a synthetic text part instead",
        );
        return None;
    }
    if url.starts_with("data:") && url.contains(',') {
        if mime.starts_with("image/") {
            report.add(kind, Action::Kept, "an image (data: URL)");
            return Some(match image_from_url(url) {
                Block::Image {
                    media_type, data, ..
                } if media_type.is_empty() => Block::Image {
                    media_type: mime.to_string(),
                    data,
                    url: false,
                },
                b => b,
            });
        }
        if mime == "application/pdf" {
            if let Some((_, data)) = url.split_once(',') {
                report.add(kind, Action::Kept, "a PDF: a document block");
                return Some(Block::Raw(json!({"type": "document", "source": {
                    "type": "base64", "media_type": mime, "data": data}})));
            }
        }
    }
    report.add(
        kind,
        Action::Folded,
        "a file Claude Code cannot be sent as it is (not an image or PDF in a data: URL): a note naming it",
    );
    Some(Block::Text(format!("[attached file: {name} ({mime})]")))
}

/// A user message's parts, as `toModelMessages` sends them.
fn user(m: &Msg, report: &mut Report, out: &mut Vec<Message>) {
    let mut blocks = Vec::new();
    for (_, _, p) in &m.parts {
        let ty = str_of(p, "type").unwrap_or("");
        let kind = format!("part/{ty}");
        let flag = |k: &str| p.get(k).and_then(Value::as_bool) == Some(true);
        match ty {
            "text" if flag("ignored") => report.add(
                &kind,
                Action::Dropped,
                "ignored: opencode does not send it to its model",
            ),
            "text" if flag("synthetic") => report.add(
                &kind,
                Action::Dropped,
                "synthetic: text opencode added (an attached file's content, a command's output), not the user's words",
            ),
            "text" => {
                report.add(&kind, Action::Kept, "user text");
                blocks.push(Block::Text(str_of(p, "text").unwrap_or("").to_string()));
            }
            "file" => blocks.extend(file_block(p, &kind, report)),
            "compaction" => {
                report.add(
                    &kind,
                    Action::Folded,
                    "the question opencode asks its model to summarize with",
                );
                blocks.push(Block::Text(COMPACTION_PROMPT.into()));
            }
            "subtask" => {
                report.add(
                    &kind,
                    Action::Folded,
                    "a command the user ran as a sub-agent: the note opencode sends",
                );
                blocks.push(Block::Text(
                    "The following tool was executed by the user".into(),
                ));
            }
            _ => other_part(ty, report),
        }
    }
    let mut msg = Message::new(Role::User, blocks);
    msg.timestamp = time_of(m.info.get("time").and_then(|t| t.get("created")));
    out.push(msg);
}

/// A part kind neither role sends.
fn other_part(ty: &str, report: &mut Report) {
    let kind = format!("part/{ty}");
    if BOOKKEEPING.contains(&ty) {
        report.add(
            &kind,
            Action::Dropped,
            "bookkeeping (steps, cost, file snapshots): no conversation in it",
        );
    } else if ty == "agent" {
        report.add(
            &kind,
            Action::Dropped,
            "an @agent mention: opencode sends nothing for it",
        );
    } else if ty == "retry" {
        report.add(&kind, Action::Dropped, "a failed attempt's error");
    } else {
        report.add(&kind, Action::Dropped, "a part kind cchist does not know");
    }
}

/// A `reasoning` part: a thinking block when its metadata holds Anthropic's signature.
fn reasoning(p: &Map<String, Value>, report: &mut Report) -> Option<Block> {
    let sig = p
        .get("metadata")
        .and_then(|m| m.get("anthropic"))
        .and_then(|a| a.get("signature"))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    match sig {
        Some(s) => {
            report.add("part/reasoning", Action::Kept, "signed (Anthropic): sent back on resume only when its record names the model resumed with (--model)");
            Some(Block::Thinking {
                thinking: str_of(p, "text").unwrap_or("").to_string(),
                signature: s.to_string(),
            })
        }
        None => {
            report.add(
                "part/reasoning",
                Action::Dropped,
                "no signature Claude would accept for a thinking block",
            );
            None
        }
    }
}

/// A tool part's answer: its output (cleared when opencode pruned it and only the active
/// history is imported), its error, or the interruption note.
fn tool_result(id: &str, state: &Value, history: History, report: &mut Report) -> Block {
    let s = |k: &str| state.get(k).and_then(Value::as_str).unwrap_or("");
    let status = s("status");
    let (content, is_error) = match status {
        "completed" => {
            let pruned = state
                .get("time")
                .and_then(|t| t.get("compacted"))
                .is_some_and(|c| !c.is_null());
            let mut content = Vec::new();
            if pruned && history == History::Active {
                report.add("tool output", Action::Dropped, "pruned by opencode (time.compacted): its model saw the note it left (--history active)");
                content.push(Block::Text(CLEARED.into()));
            } else {
                if pruned {
                    report.add("tool output", Action::Kept, "pruned by opencode (time.compacted) but still recorded: kept (--history active writes the note its model saw)");
                }
                content.push(Block::Text(s("output").to_string()));
                for a in state
                    .get("attachments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_object)
                {
                    content.extend(file_block(a, "tool attachment", report));
                }
            }
            (content, false)
        }
        "error" => {
            let meta = state.get("metadata");
            let interrupted_output = meta
                .filter(|m| m.get("interrupted").and_then(Value::as_bool) == Some(true))
                .and_then(|m| m.get("output"))
                .and_then(Value::as_str);
            match interrupted_output {
                Some(o) => (vec![Block::Text(o.to_string())], false),
                None => (vec![Block::Text(s("error").to_string())], true),
            }
        }
        _ => {
            report.add(
                "tool call",
                Action::Kept,
                "pending or running when the session stopped: answered with opencode's interruption note",
            );
            (vec![Block::Text(INTERRUPTED.into())], true)
        }
    };
    Block::ToolResult {
        tool_use_id: id.to_string(),
        content,
        is_error,
    }
}

/// An assistant message: its text, signed reasoning and tool calls, each tool's result in a
/// user message after the calls it answers. A message that failed is left out, as opencode
/// leaves it out (unless it was aborted after it said or did something).
fn assistant(
    m: &Msg,
    history: History,
    report: &mut Report,
    out: &mut Vec<Message>,
) -> Result<(), ImportError> {
    if let Some(e) = m.info.get("error").filter(|e| !e.is_null()) {
        let aborted = e.get("name").and_then(Value::as_str) == Some("MessageAbortedError");
        let said = m
            .parts
            .iter()
            .any(|(_, _, p)| !matches!(str_of(p, "type"), Some("step-start" | "reasoning")));
        if !(aborted && said) {
            report.add(
                "message/assistant",
                Action::Dropped,
                "failed (error): opencode does not send it to its model",
            );
            return Ok(());
        }
    }
    report.add("message/assistant", Action::Kept, "assistant message");
    let ts = time_of(m.info.get("time").and_then(|t| t.get("created")));
    let cwd = m
        .info
        .get("path")
        .and_then(|p| p.get("cwd"))
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .map(str::to_string);
    let model = str_of(&m.info, "modelID").map(str::to_string);
    let mut blocks: Vec<Block> = Vec::new();
    let mut results: Vec<Block> = Vec::new();
    let flush = |blocks: &mut Vec<Block>, results: &mut Vec<Block>, out: &mut Vec<Message>| {
        if !blocks.is_empty() {
            let mut a = Message::new(Role::Assistant, std::mem::take(blocks));
            a.timestamp.clone_from(&ts);
            a.cwd.clone_from(&cwd);
            a.model.clone_from(&model);
            out.push(a);
        }
        if !results.is_empty() {
            let mut u = Message::new(Role::User, std::mem::take(results));
            u.timestamp.clone_from(&ts);
            out.push(u);
        }
    };
    for (_, origin, p) in &m.parts {
        let ty = str_of(p, "type").unwrap_or("");
        let block = match ty {
            "text" => {
                report.add("part/text", Action::Kept, "assistant text");
                Some(Block::Text(str_of(p, "text").unwrap_or("").to_string()))
            }
            "reasoning" => reasoning(p, report),
            "file" => file_block(p, "part/file", report),
            "tool" => {
                let Some(call) = str_of(p, "callID").filter(|c| !c.is_empty()) else {
                    return Err(origin.error(1, "a tool part needs a `callID`"));
                };
                let name = str_of(p, "tool").unwrap_or("").to_string();
                let state = p.get("state").cloned().unwrap_or(Value::Null);
                let input = match state.get("input") {
                    Some(v @ Value::Object(_)) => v.clone(),
                    _ => Value::Object(Map::new()),
                };
                report.add(
                    "part/tool",
                    Action::Kept,
                    "split into a tool_use and its tool_result (see `tool call` for how it maps)",
                );
                blocks.push(Block::ToolUse {
                    id: call.to_string(),
                    name,
                    input,
                    dialect: Dialect::Opencode,
                });
                results.push(tool_result(call, &state, history, report));
                continue;
            }
            _ => {
                other_part(ty, report);
                None
            }
        };
        if let Some(b) = block {
            // Said after tool calls whose results are pending: those go first.
            if !results.is_empty() {
                flush(&mut blocks, &mut results, out);
            }
            blocks.push(b);
        }
    }
    flush(&mut blocks, &mut results, out);
    Ok(())
}

/// `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`.
pub fn data_home() -> Option<PathBuf> {
    std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .map(|d| d.join("opencode"))
}

/// Whether `path` is a session file of the storage tree: `storage/session/<project>/<id>.json`.
fn in_storage_tree(path: &Path) -> bool {
    let parent = |p: &Path| p.parent().map(Path::to_path_buf);
    let Some(sdir) = parent(path).and_then(|p| parent(&p)) else {
        return false;
    };
    sdir.file_name().is_some_and(|n| n == "session")
        && path.extension().is_some_and(|e| e == "json")
}

/// The storage root of a session file (`…/storage`).
fn storage_root(path: &Path) -> Option<&Path> {
    path.parent()?.parent()?.parent()
}

fn read_doc(path: PathBuf) -> Result<Doc, ImportError> {
    let bytes = std::fs::read(&path).map_err(|e| ImportError::Io {
        path: path.clone(),
        op: "read",
        source: e,
    })?;
    let id = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(Doc {
        origin: Origin::File(path),
        id,
        bytes,
    })
}

/// The `*.json` files of `dir` (none when it does not exist).
fn json_files(dir: &Path) -> Result<Vec<PathBuf>, ImportError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(ImportError::Io {
                path: dir.to_path_buf(),
                op: "list",
                source: e,
            })
        }
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    out.sort();
    Ok(out)
}

/// A session of the storage tree: the session file (`data`, read already), its messages'
/// files and their parts' files.
fn read_storage(
    path: &Path,
    data: &[u8],
    opts: &Options,
    report: &mut Report,
) -> Result<Conversation, ImportError> {
    let root = storage_root(path).ok_or_else(|| {
        ImportError::NotFound(format!(
            "{}: not in an opencode storage tree (storage/session/<project>/<session>.json)",
            path.display()
        ))
    })?;
    let sid = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = Doc {
        origin: Origin::File(path.to_path_buf()),
        id: sid.clone(),
        bytes: data.to_vec(),
    };
    let mut messages = Vec::new();
    for mp in json_files(&root.join("message").join(&sid))? {
        let m = read_doc(mp)?;
        let parts = json_files(&root.join("part").join(&m.id))?
            .into_iter()
            .map(read_doc)
            .collect::<Result<Vec<_>, _>>()?;
        messages.push((m, parts));
    }
    if messages.is_empty() {
        return Err(ImportError::NotFound(format!(
            "{}: the session has no messages under {}",
            path.display(),
            root.join("message").join(&sid).display()
        )));
    }
    conversation(&session, messages, opts, report)
}

/// Every session file of the storage tree under `home` (`storage/session/*/*.json`).
pub fn storage_sessions(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for proj in std::fs::read_dir(home.join("storage").join("session"))
        .into_iter()
        .flatten()
        .flatten()
    {
        out.extend(json_files(&proj.path()).unwrap_or_default());
    }
    out
}

/// A session file's `(id, directory, time.updated)`, for `--latest` / `--session`.
pub fn storage_session_meta(path: &Path) -> Option<(String, String, f64)> {
    let v: Value = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    let id = path.file_stem()?.to_string_lossy().into_owned();
    let dir = v.get("directory").and_then(Value::as_str).unwrap_or("");
    let t = v
        .get("time")
        .and_then(|t| t.get("updated").or_else(|| t.get("created")))
        .and_then(Value::as_f64)
        .unwrap_or(0.0);
    Some((id, dir.to_string(), t))
}

impl Source for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn detect(&self, path: &Path, head: &[u8]) -> bool {
        if head.starts_with(super::SQLITE_MAGIC) {
            return path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("opencode"));
        }
        let has = |k: &str| memchr::memmem::find(head, k.as_bytes()).is_some();
        in_storage_tree(path) && has("\"ses_") && (has("\"projectID\"") || has("\"directory\""))
    }

    fn read(
        &self,
        path: &Path,
        data: &[u8],
        opts: &Options,
        report: &mut Report,
    ) -> Result<Conversation, ImportError> {
        if data.starts_with(super::SQLITE_MAGIC) {
            return read_db(path, opts, report);
        }
        read_storage(path, data, opts, report)
    }
}

#[cfg(not(feature = "opencode-sqlite"))]
fn read_db(
    path: &Path,
    _opts: &Options,
    _report: &mut Report,
) -> Result<Conversation, ImportError> {
    Err(ImportError::NotFound(format!(
        "{}: an opencode database, and this cchist is built without the `opencode-sqlite` feature: build with it, or import a session file of the JSON `storage/` tree",
        path.display()
    )))
}

/// One session of a database, for `--latest` / `--session`.
#[derive(Debug, Clone)]
pub struct DbSession {
    /// Its id.
    pub id: String,
    /// The directory it ran in.
    pub directory: String,
    /// When it was last updated (epoch ms).
    pub updated: f64,
}

#[cfg(feature = "opencode-sqlite")]
fn open_db(path: &Path) -> Result<rusqlite::Connection, ImportError> {
    use rusqlite::OpenFlags;
    rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| db_error(path, e))
}

#[cfg(feature = "opencode-sqlite")]
fn db_error(path: &Path, e: rusqlite::Error) -> ImportError {
    ImportError::Io {
        path: path.to_path_buf(),
        op: "read (SQLite)",
        source: std::io::Error::other(format!(
            "{e}; is it opencode's database (tables session, message, part)?"
        )),
    }
}

/// A session row's `directory, parent_id, revert, time_created, time_updated`.
#[cfg(feature = "opencode-sqlite")]
type SessionCols = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<f64>,
    Option<f64>,
);

/// A `data` column's JSON text (TEXT, as opencode writes it, or a BLOB).
#[cfg(feature = "opencode-sqlite")]
fn text(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Vec<u8>> {
    r.get_ref(i)?.as_bytes().map(<[u8]>::to_vec).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into())
    })
}

/// The sessions of an opencode database.
#[cfg(feature = "opencode-sqlite")]
pub fn db_sessions(path: &Path) -> Result<Vec<DbSession>, ImportError> {
    let c = open_db(path)?;
    let mut st = c
        .prepare("SELECT id, directory, time_updated FROM session")
        .map_err(|e| db_error(path, e))?;
    let rows = st
        .query_map([], |r| {
            Ok(DbSession {
                id: r.get(0)?,
                directory: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                updated: r.get::<_, Option<f64>>(2)?.unwrap_or(0.0),
            })
        })
        .map_err(|e| db_error(path, e))?;
    rows.collect::<Result<Vec<_>, _>>()
        .map_err(|e| db_error(path, e))
}

/// Without the `opencode-sqlite` feature a database holds no session cchist can read.
#[cfg(not(feature = "opencode-sqlite"))]
pub fn db_sessions(_path: &Path) -> Result<Vec<DbSession>, ImportError> {
    Ok(Vec::new())
}

/// The session of the database `--session` names (an id, or a part of one that only one id
/// holds), read from its `session`, `message` and `part` rows.
#[cfg(feature = "opencode-sqlite")]
fn read_db(path: &Path, opts: &Options, report: &mut Report) -> Result<Conversation, ImportError> {
    use rusqlite::OptionalExtension;
    let err = |e| db_error(path, e);
    let all = db_sessions(path)?;
    let Some(want) = opts.session.as_deref() else {
        return Err(ImportError::NotFound(format!(
            "{}: an opencode database holds {} sessions: name one with --session ID (`--from opencode --latest` takes the newest)",
            path.display(),
            all.len()
        )));
    };
    let hits: Vec<&DbSession> = match all.iter().find(|s| s.id == want) {
        Some(s) => vec![s],
        None => all.iter().filter(|s| s.id.contains(want)).collect(),
    };
    let sid = match hits[..] {
        [s] => s.id.clone(),
        [] => {
            return Err(ImportError::NotFound(format!(
                "{}: no session whose id holds `{want}`",
                path.display()
            )))
        }
        _ => {
            return Err(ImportError::NotFound(format!(
                "{}: {} sessions have ids holding `{want}`: give more of the id",
                path.display(),
                hits.len()
            )))
        }
    };
    let c = open_db(path)?;
    let row = |table: &'static str, id: &str| Origin::Row {
        db: path.to_path_buf(),
        table,
        id: id.to_string(),
    };
    // The session's columns as the JSON its storage file holds (the `revert` column is JSON).
    let cols: Option<SessionCols> = c
        .query_row(
            "SELECT directory, parent_id, revert, time_created, time_updated FROM session WHERE id = ?1",
            [&sid],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()
        .map_err(err)?;
    let (directory, parent, revert, created, updated) = cols
        .ok_or_else(|| ImportError::NotFound(format!("{}: no session `{sid}`", path.display())))?;
    let revert = match revert {
        Some(t) => serde_json::from_str::<Value>(&t)
            .map_err(|e| row("session", &sid).error(1, format!("`revert` is not JSON: {e}")))?,
        None => Value::Null,
    };
    let info = json!({"id": sid, "directory": directory, "parentID": parent, "revert": revert,
        "time": {"created": created, "updated": updated}});
    let session = Doc {
        origin: row("session", &sid),
        id: sid.clone(),
        bytes: info.to_string().into_bytes(),
    };
    let mut parts: std::collections::HashMap<String, Vec<Doc>> = Default::default();
    let mut st = c
        .prepare("SELECT id, message_id, data FROM part WHERE session_id = ?1")
        .map_err(err)?;
    let rows = st
        .query_map([&sid], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, text(r, 2)?))
        })
        .map_err(err)?;
    for r in rows {
        let (id, mid, data) = r.map_err(err)?;
        parts.entry(mid).or_default().push(Doc {
            origin: row("part", &id),
            id,
            bytes: data,
        });
    }
    let mut st = c
        .prepare("SELECT id, data FROM message WHERE session_id = ?1")
        .map_err(err)?;
    let rows = st
        .query_map([&sid], |r| Ok((r.get::<_, String>(0)?, text(r, 1)?)))
        .map_err(err)?;
    let mut messages = Vec::new();
    for r in rows {
        let (id, data) = r.map_err(err)?;
        let ps = parts.remove(&id).unwrap_or_default();
        messages.push((
            Doc {
                origin: row("message", &id),
                id,
                bytes: data,
            },
            ps,
        ));
    }
    if messages.is_empty() {
        return Err(ImportError::NotFound(format!(
            "{}: session `{sid}` has no messages",
            path.display()
        )));
    }
    conversation(&session, messages, opts, report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, v: Value) -> Doc {
        Doc {
            origin: Origin::File(PathBuf::from(format!("{id}.json"))),
            id: id.into(),
            bytes: v.to_string().into_bytes(),
        }
    }

    fn texts(c: &Conversation) -> Vec<String> {
        c.messages
            .iter()
            .flat_map(|m| &m.blocks)
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    /// A revert with a `partID` keeps that message's parts before it and drops the later
    /// messages, as `SessionRevert.cleanup` does.
    #[test]
    fn a_part_revert_keeps_the_parts_before_it() {
        let session = doc(
            "ses_1",
            json!({"directory": "/w", "revert": {"messageID": "msg_2", "partID": "prt_3"}}),
        );
        let text = |t: &str| json!({"type": "text", "text": t});
        let msgs = vec![
            (
                doc("msg_1", json!({"role": "user", "time": {"created": 1}})),
                vec![doc("prt_1", text("go"))],
            ),
            (
                doc("msg_3", json!({"role": "user"})),
                vec![doc("prt_5", text("LATER"))],
            ),
            (
                doc("msg_2", json!({"role": "assistant"})),
                vec![doc("prt_4", text("CUT")), doc("prt_2", text("kept"))],
            ),
        ];
        let mut r = Report::default();
        let c = conversation(&session, msgs, &Options::default(), &mut r).unwrap();
        assert_eq!(texts(&c), ["go", "kept"]);
        assert_eq!(c.cwd.as_deref(), Some("/w"));
        assert_eq!(r.total(Action::Dropped), 2, "{}", r.text());
    }

    /// Reasoning with Anthropic's signature in its metadata is a thinking block; without, it
    /// is dropped.
    #[test]
    fn signed_reasoning_is_thinking() {
        let session = doc("ses_1", json!({}));
        let msgs = vec![(
            doc("msg_1", json!({"role": "assistant"})),
            vec![
                doc(
                    "prt_1",
                    json!({"type": "reasoning", "text": "plan", "metadata": {"anthropic": {"signature": "sig"}}}),
                ),
                doc("prt_2", json!({"type": "reasoning", "text": "unsigned"})),
            ],
        )];
        let c = conversation(&session, msgs, &Options::default(), &mut Report::default()).unwrap();
        assert_eq!(
            c.messages[0].blocks,
            [Block::Thinking {
                thinking: "plan".into(),
                signature: "sig".into()
            }]
        );
    }

    /// A database row's error names its table and id.
    #[test]
    fn a_bad_row_names_its_table_and_id() {
        let session = doc("ses_1", json!({}));
        let part = Doc {
            origin: Origin::Row {
                db: "opencode.db".into(),
                table: "part",
                id: "prt_9".into(),
            },
            id: "prt_9".into(),
            bytes: b"{\"type\": 3}".to_vec(),
        };
        let msgs = vec![(doc("msg_1", json!({"role": "user"})), vec![part])];
        let e = conversation(&session, msgs, &Options::default(), &mut Report::default())
            .unwrap_err()
            .to_string();
        assert_eq!(e, "opencode.db: part `prt_9`: a part needs a `type`");
    }
}
