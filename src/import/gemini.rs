//! Gemini CLI chats: `~/.gemini/tmp/<slug>/chats/session-*.jsonl`, a log of mutations
//! (metadata line, message records where a repeated `id` replaces the earlier one,
//! `{"$set": …}` whose `messages` replaces the list, `{"$rewindTo": id}` dropping that message
//! and all after it); the older single-document `.json` sessions; and `/chat save` checkpoints
//! (`checkpoint-*.json`: raw Gemini `Content`).
//!
//! Defined in google-gemini/gemini-cli `packages/core/src/services/chatRecordingTypes.ts`,
//! `chatRecordingService.ts` (`loadConversationRecord`) and `packages/core/src/core/logger.ts`
//! (checkpoints).

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::{
    json_line, lines, Action, Block, Conversation, Dialect, ImportError, Message, Options, Report,
    Role, Source,
};

/// The Gemini CLI source.
pub struct Gemini;

/// The context Gemini CLI puts at the start of a checkpoint's history (`getEnvironment` in
/// `packages/core/src/utils/environmentContext.ts`), and the model's canned answer to it.
const SETUP: &str = "This is the Gemini CLI. We are setting up the context";
const SETUP_ACK: &str = "Got it. Thanks for the context!";

/// Gemini `Part`s as blocks: `text`, `inlineData` images, `functionCall` / `functionResponse`
/// (ids made from the name and position when the part has none).
fn parts(v: &Value, pending: &mut Vec<(String, String)>, n: &mut usize) -> Vec<Block> {
    let list: Vec<&Value> = match v {
        Value::String(s) => return vec![Block::Text(s.clone())],
        Value::Array(a) => a.iter().collect(),
        Value::Object(_) => vec![v],
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for p in list {
        if let Some(s) = p.as_str() {
            out.push(Block::Text(s.to_string()));
        } else if p.get("thought").and_then(Value::as_bool) == Some(true) {
            // A thought part has no signature Claude would accept.
        } else if let Some(t) = p.get("text").and_then(Value::as_str) {
            out.push(Block::Text(t.to_string()));
        } else if let Some(d) = p.get("inlineData") {
            out.push(Block::Image {
                media_type: d
                    .get("mimeType")
                    .and_then(Value::as_str)
                    .unwrap_or("image/png")
                    .into(),
                data: d.get("data").and_then(Value::as_str).unwrap_or("").into(),
                url: false,
            });
        } else if let Some(fc) = p.get("functionCall") {
            let name = fc
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            *n += 1;
            let id = fc
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{name}-{n}"), str::to_string);
            pending.push((name.clone(), id.clone()));
            out.push(Block::ToolUse {
                id,
                name,
                input: fc
                    .get("args")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default())),
                dialect: Dialect::Gemini,
            });
        } else if let Some(fr) = p.get("functionResponse") {
            let name = fr.get("name").and_then(Value::as_str).unwrap_or("");
            let id = match fr.get("id").and_then(Value::as_str) {
                Some(id) => {
                    pending.retain(|(_, i)| i != id);
                    id.to_string()
                }
                None => match pending.iter().position(|(nm, _)| nm == name) {
                    Some(i) => pending.remove(i).1,
                    None => name.to_string(),
                },
            };
            out.push(Block::ToolResult {
                tool_use_id: id,
                content: vec![Block::Text(response_text(fr.get("response")))],
                is_error: fr.get("response").and_then(|r| r.get("error")).is_some(),
            });
        }
    }
    out
}

/// A `functionResponse.response` as text: its `output` (or `content`, or `error`), else the
/// JSON.
fn response_text(r: Option<&Value>) -> String {
    let Some(r) = r else { return String::new() };
    for k in ["output", "content", "error"] {
        match r.get(k) {
            Some(Value::String(s)) => return s.clone(),
            Some(v) if !v.is_null() => return v.to_string(),
            _ => {}
        }
    }
    r.to_string()
}

/// One `MessageRecord` as messages: a `gemini` record split into the assistant's text and
/// calls, then a user message with the calls' results.
fn record(m: &Value, report: &mut Report, out: &mut Vec<Message>, n: &mut usize) {
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    let ts = m
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_string);
    let mut pending = Vec::new();
    let content = m.get("content").unwrap_or(&Value::Null);
    match ty {
        "user" => {
            report.add("user", Action::Kept, "user message");
            let mut msg = Message::new(Role::User, parts(content, &mut pending, n));
            msg.timestamp = ts;
            out.push(msg);
        }
        "gemini" => {
            report.add("gemini", Action::Kept, "model message");
            if m.get("thoughts")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
            {
                report.add(
                    "gemini/thoughts",
                    Action::Dropped,
                    "no signature Claude would accept for a thinking block",
                );
            }
            let mut blocks = parts(content, &mut pending, n);
            let mut results = Vec::new();
            for c in m
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                report.add(
                    "gemini/toolCall",
                    Action::Kept,
                    "split into a tool_use and its tool_result",
                );
                let id = c
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                blocks.push(Block::ToolUse {
                    id: id.clone(),
                    name,
                    input: c
                        .get("args")
                        .cloned()
                        .unwrap_or(Value::Object(Default::default())),
                    dialect: Dialect::Gemini,
                });
                let mut content = Vec::new();
                for r in c
                    .get("result")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(fr) = r.get("functionResponse") {
                        content.push(Block::Text(response_text(fr.get("response"))));
                    } else {
                        content.extend(parts(r, &mut Vec::new(), n));
                    }
                }
                let status = c.get("status").and_then(Value::as_str).unwrap_or("");
                if c.get("result").is_none() {
                    continue; // the builder answers it, and says so
                }
                results.push(Block::ToolResult {
                    tool_use_id: id,
                    content,
                    is_error: matches!(status, "error" | "cancelled"),
                });
            }
            let mut msg = Message::new(Role::Assistant, blocks);
            msg.timestamp.clone_from(&ts);
            msg.model = m.get("model").and_then(Value::as_str).map(str::to_string);
            out.push(msg);
            if !results.is_empty() {
                let mut r = Message::new(Role::User, results);
                r.timestamp = ts;
                out.push(r);
            }
        }
        t => report.add(
            t,
            Action::Dropped,
            "a UI record (info/error/warning), not conversation",
        ),
    }
}

/// A checkpoint's `history: Content[]`.
fn checkpoint(v: &Value, report: &mut Report) -> Vec<Message> {
    let mut out = Vec::new();
    let mut pending = Vec::new();
    let mut n = 0;
    let mut setup = false;
    for c in v
        .get("history")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = match c.get("role").and_then(Value::as_str) {
            Some("model") => Role::Assistant,
            _ => Role::User,
        };
        let blocks = parts(c.get("parts").unwrap_or(&Value::Null), &mut pending, &mut n);
        let text: String = blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        if role == Role::User && text.trim_start().starts_with(SETUP) {
            report.add(
                "checkpoint/content",
                Action::Dropped,
                "the environment context Gemini CLI injects",
            );
            setup = true;
            continue;
        }
        if setup && role == Role::Assistant && text.trim() == SETUP_ACK {
            report.add(
                "checkpoint/content",
                Action::Dropped,
                "the model's canned answer to the injected context",
            );
            setup = false;
            continue;
        }
        setup = false;
        report.add("checkpoint/content", Action::Kept, "message");
        out.push(Message::new(role, blocks));
    }
    out
}

impl Source for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn detect(&self, path: &Path, head: &[u8]) -> bool {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name.starts_with("checkpoint-") && name.ends_with(".json") {
            return true;
        }
        let first = head.split(|&b| b == b'\n').next().unwrap_or(b"");
        let has = |k: &str| memchr::memmem::find(first, k.as_bytes()).is_some();
        (has("\"projectHash\"") && has("\"sessionId\""))
            || (name.starts_with("session-") && has("\"sessionId\""))
    }

    fn read(
        &self,
        path: &Path,
        data: &[u8],
        _opts: &Options,
        report: &mut Report,
    ) -> Result<Conversation, ImportError> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let trimmed = data.trim_ascii_start();
        // A whole-document form: a checkpoint, or an older one-file session.
        if trimmed.starts_with(b"{") && (name.ends_with(".json") || lines(data).count() == 1) {
            let v = json_line(path, 1, data)?;
            if v.get("history").is_some() {
                return Ok(Conversation {
                    messages: checkpoint(&v, report),
                    ..Conversation::default()
                });
            }
            if let Some(ms) = v.get("messages").and_then(Value::as_array) {
                let mut out = Vec::new();
                let mut n = 0;
                for m in ms {
                    record(m, report, &mut out, &mut n);
                }
                return Ok(Conversation {
                    messages: out,
                    ..Conversation::default()
                });
            }
        }
        // The mutation log, replayed as `loadConversationRecord` does, with an index from
        // message id to its place so a repeated id (the CLI re-appends the last message on
        // every tool-call and token update) is one lookup, not a scan: linear in the log.
        let mut records: Vec<Value> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let reindex = |records: &[Value], at: &mut HashMap<String, usize>| {
            at.clear();
            for (i, r) in records.iter().enumerate() {
                if let Some(id) = r.get("id").and_then(Value::as_str) {
                    // The first record with an id is the one a later repeat replaces.
                    at.entry(id.to_string()).or_insert(i);
                }
            }
        };
        for (n, body) in lines(data) {
            let v = json_line(path, n, body)?;
            let Some(o) = v.as_object() else {
                return Err(ImportError::at(
                    path,
                    n,
                    "a chat log line must be a JSON object",
                ));
            };
            if let Some(set) = o.get("$set") {
                if let Some(ms) = set.get("messages") {
                    let ms = ms.as_array().ok_or_else(|| {
                        ImportError::at(path, n, "`$set.messages` must be an array")
                    })?;
                    for _ in 0..records.len() {
                        report.add(
                            "$set",
                            Action::Dropped,
                            "a record replaced by a checkpoint ($set.messages)",
                        );
                    }
                    records = ms.clone();
                    reindex(&records, &mut at);
                }
                continue;
            }
            if let Some(to) = o.get("$rewindTo") {
                let to = to
                    .as_str()
                    .ok_or_else(|| ImportError::at(path, n, "`$rewindTo` must be a message id"))?;
                if let Some(&i) = at.get(to) {
                    for r in records.drain(i..) {
                        report.add("$rewindTo", Action::Dropped, "a message rewound away");
                        if let Some(id) = r.get("id").and_then(Value::as_str) {
                            if at.get(id).is_some_and(|&j| j >= i) {
                                at.remove(id);
                            }
                        }
                    }
                }
                continue;
            }
            match (o.get("id").and_then(Value::as_str), o.get("type")) {
                (Some(id), Some(_)) => match at.get(id) {
                    Some(&i) => records[i] = v,
                    None => {
                        at.insert(id.to_string(), records.len());
                        records.push(v);
                    }
                },
                _ if o.contains_key("sessionId") => {
                    report.add(
                        "metadata",
                        Action::Kept,
                        "session metadata (not conversation)",
                    );
                }
                _ => {
                    return Err(ImportError::at(
                        path,
                        n,
                        "neither metadata, a message record (`id`, `type`), `$set` nor `$rewindTo`",
                    ));
                }
            }
        }
        let mut out = Vec::new();
        let mut n = 0;
        for r in &records {
            record(r, report, &mut out, &mut n);
        }
        Ok(Conversation {
            messages: out,
            ..Conversation::default()
        })
    }
}
