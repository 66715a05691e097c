//! The one builder: a [`Conversation`] as Claude Code records, written as the pinned CLI
//! writes them (`parentUuid` chain of fresh v4 uuids, `sessionId` = the file name,
//! `timestamp`, `cwd`, `version`, `gitBranch`, `userType`, `isSidechain`).
//!
//! It also makes the history one the Messages API accepts: tool calls mapped onto Claude
//! Code's tools ([`super::tools`]), every `tool_use` answered by the next user message, ids
//! matching `^[A-Za-z0-9_-]+$`, roles alternating, the first message a user's.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};

use super::tools::{self, Mapped};
use super::{Action, Block, Conversation, Message, Report, Role, CLAUDE_VERSION};
use crate::io::clock;

/// Where and as what the records are written.
#[derive(Debug, Clone)]
pub struct Target {
    /// The new session's id (a v4 uuid; the file is `<id>.jsonl`).
    pub session_id: String,
    /// The working directory `claude --resume` runs in.
    pub cwd: String,
    /// The git branch the records name (`""` when unknown, as the CLI writes outside git).
    pub git_branch: String,
    /// The model assistant records name when the message names none (or always, with
    /// `--model`; see [`super::Options::model`]).
    pub model: Option<String>,
    /// True when `model` overrides the messages' own (`--model`).
    pub force_model: bool,
    /// The source's name, for text renderings (`codex`).
    pub source: &'static str,
}

/// The tool_use id Claude accepts for a source id: other characters become `_`.
fn clean_id(id: &str, n: usize) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        format!("toolu_import_{n}")
    } else {
        s
    }
}

/// What became of one source call.
enum Call {
    /// Claude calls, with their ids.
    Mapped(Vec<String>),
    /// Rendered as text; the name renders its result too.
    Folded(String),
}

/// Records for `conv`, one JSON line each, as the pinned CLI writes them. Takes the
/// conversation whole: its text moves into the records (a 100 MB source is not copied twice).
pub fn build(conv: Conversation, t: &Target, report: &mut Report) -> Vec<u8> {
    let messages = normalize(conv, t, report);
    // Room for every text once, plus each record's envelope: the output is not regrown (a
    // 100 MB Vec doubled into place copies it twice over).
    let room: usize = messages
        .iter()
        .map(|m| 600 + m.blocks.iter().map(block_len).sum::<usize>())
        .sum();
    let mut out = Vec::with_capacity(room);
    let mut parent: Option<String> = None;
    let base = clock::parse(&clock::now()).unwrap_or(std::time::SystemTime::UNIX_EPOCH);
    let mut last_ts: Option<std::time::SystemTime> = None;
    for m in messages {
        let ts = m
            .timestamp
            .as_deref()
            .and_then(|s| clock::parse(s).ok())
            .or_else(|| last_ts.map(|t| t + std::time::Duration::from_millis(1)))
            .unwrap_or(base);
        last_ts = Some(ts);
        let uuid = uuid::Uuid::new_v4().to_string();
        let tool = m.blocks.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        let model = model_of(&m, t);
        let role = m.role;
        let cwd = m.cwd.unwrap_or_else(|| t.cwd.clone());
        let mut blocks = m.blocks;
        // A lone text block is written as a string, as the CLI writes a typed prompt.
        let content = match (&mut blocks[..], role) {
            ([Block::Text(s)], Role::User) => Value::String(std::mem::take(s)),
            _ => Value::Array(blocks.into_iter().map(block_json).collect()),
        };
        let message = match role {
            Role::User => MessageOut::User {
                role: "user",
                content,
            },
            Role::Assistant => MessageOut::Assistant {
                id: format!("msg_import_{}", uuid.replace('-', "")),
                ty: "message",
                role: "assistant",
                model,
                content,
                stop_reason: if tool { "tool_use" } else { "end_turn" },
                stop_sequence: None,
                usage: Usage {
                    input_tokens: 0,
                    output_tokens: 0,
                },
            },
        };
        let record = RecordOut {
            parent_uuid: parent.as_deref(),
            is_sidechain: false,
            user_type: "external",
            cwd: &cwd,
            session_id: &t.session_id,
            version: CLAUDE_VERSION,
            git_branch: &t.git_branch,
            ty: match role {
                Role::User => "user",
                Role::Assistant => "assistant",
            },
            message,
            uuid: &uuid,
            timestamp: clock::rfc3339(ts),
        };
        serde_json::to_writer(&mut out, &record).expect("serializing to memory");
        out.push(b'\n');
        parent = Some(uuid);
    }
    out
}

/// One record as the pinned CLI writes it, fields in its order: serialized straight from the
/// conversation's strings (no `Value` tree of the whole record is built).
#[derive(serde::Serialize)]
struct RecordOut<'a> {
    #[serde(rename = "parentUuid")]
    parent_uuid: Option<&'a str>,
    #[serde(rename = "isSidechain")]
    is_sidechain: bool,
    #[serde(rename = "userType")]
    user_type: &'static str,
    cwd: &'a str,
    #[serde(rename = "sessionId")]
    session_id: &'a str,
    version: &'static str,
    #[serde(rename = "gitBranch")]
    git_branch: &'a str,
    #[serde(rename = "type")]
    ty: &'static str,
    message: MessageOut,
    uuid: &'a str,
    timestamp: String,
}

/// A record's `message`.
#[derive(serde::Serialize)]
#[serde(untagged)]
enum MessageOut {
    User {
        role: &'static str,
        content: Value,
    },
    Assistant {
        id: String,
        #[serde(rename = "type")]
        ty: &'static str,
        role: &'static str,
        model: String,
        content: Value,
        stop_reason: &'static str,
        stop_sequence: Option<()>,
        usage: Usage,
    },
}

/// An assistant message's `usage` (an import spent no tokens).
#[derive(serde::Serialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
}

/// About how many bytes a block writes (its texts), to size the output once.
fn block_len(b: &Block) -> usize {
    match b {
        Block::Text(s) => s.len() + 32,
        Block::Image { data, .. } => data.len() + 96,
        Block::ToolUse { input, .. } => {
            256 + input.as_object().map_or(0, |o| {
                o.values()
                    .map(|v| v.as_str().map_or(64, str::len))
                    .sum::<usize>()
            })
        }
        Block::ToolResult { content, .. } => 96 + content.iter().map(block_len).sum::<usize>(),
        Block::Thinking {
            thinking,
            signature,
        } => thinking.len() + signature.len() + 64,
        Block::Raw(_) => 256,
    }
}

/// The model an assistant record names: `--model`, else the message's, else the
/// conversation's, else `<source>-import` (never `<synthetic>`, which the CLI treats as its
/// own placeholder).
fn model_of(m: &Message, t: &Target) -> String {
    if let (true, Some(forced)) = (t.force_model, &t.model) {
        return forced.clone();
    }
    m.model
        .clone()
        .or_else(|| t.model.clone())
        .unwrap_or_else(|| format!("{}-import", t.source))
}

fn block_json(b: Block) -> Value {
    match b {
        Block::Text(s) => json!({"type": "text", "text": s}),
        Block::Image {
            media_type,
            data,
            url,
        } => {
            if url {
                json!({"type": "image", "source": {"type": "url", "url": data}})
            } else {
                json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
            }
        }
        Block::ToolUse {
            id, name, input, ..
        } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        Block::ToolResult {
            tool_use_id,
            mut content,
            is_error,
        } => {
            let content = match &mut content[..] {
                [Block::Text(s)] => Value::String(std::mem::take(s)),
                [] => Value::String(String::new()),
                _ => Value::Array(content.into_iter().map(block_json).collect()),
            };
            let mut v =
                json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": content});
            if is_error {
                v["is_error"] = Value::Bool(true);
            }
            v
        }
        Block::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Block::Raw(v) => v,
    }
}

/// The text of a tool result's content.
fn result_text(content: &[Block]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            Block::Text(s) => Some(s.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Tool calls mapped or folded, results joined to their calls, messages merged by role,
/// every call answered.
fn normalize(conv: Conversation, t: &Target, report: &mut Report) -> Vec<Message> {
    let mut calls: HashMap<String, Call> = HashMap::new();
    let mut used: HashSet<String> = HashSet::new();
    let mut n = 0usize;
    let mut fresh = |id: &str, used: &mut HashSet<String>| {
        n += 1;
        let mut id = clean_id(id, n);
        while !used.insert(id.clone()) {
            id = format!("{id}_{n}");
        }
        id
    };
    let mut out: Vec<Message> = Vec::new();
    let mut cwd = conv.cwd;
    for m in conv.messages {
        if m.cwd.is_some() {
            cwd.clone_from(&m.cwd);
        }
        let mut blocks = Vec::new();
        for b in m.blocks {
            match b {
                Block::ToolUse {
                    id,
                    name,
                    input,
                    dialect,
                } => match tools::map(dialect, &name, &input, cwd.as_deref()) {
                    Mapped::Calls(cs) => {
                        let mut ids = Vec::new();
                        let why = (dialect != super::Dialect::Native).then(|| {
                            format!(
                                "{name} → {}",
                                cs.iter()
                                    .map(|c| c.0.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        });
                        let many = cs.len() > 1;
                        for (i, (cname, cinput)) in cs.into_iter().enumerate() {
                            let base = if many {
                                format!("{id}_{}", i + 1)
                            } else {
                                id.clone()
                            };
                            let nid = fresh(&base, &mut used);
                            ids.push(nid.clone());
                            blocks.push(Block::ToolUse {
                                id: nid,
                                name: cname,
                                input: cinput,
                                dialect: super::Dialect::Native,
                            });
                        }
                        if let Some(why) = why {
                            report.add("tool call", Action::Mapped, &why);
                        }
                        calls.insert(id, Call::Mapped(ids));
                    }
                    Mapped::Unmapped => {
                        report.add(
                            "tool call",
                            Action::Folded,
                            &format!(
                                "{name}: no Claude Code tool means the same; rendered as text"
                            ),
                        );
                        blocks.push(Block::Text(tools::render_call(t.source, &name, &input)));
                        calls.insert(id, Call::Folded(name));
                    }
                },
                Block::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => match calls.get(&tool_use_id) {
                    Some(Call::Mapped(ids)) => {
                        let mut first = Some(content);
                        for nid in ids {
                            let content = if let Some(c) = first.take() {
                                c
                            } else {
                                vec![Block::Text(
                                    "(applied by the same call; its output is on the first part)"
                                        .into(),
                                )]
                            };
                            blocks.push(Block::ToolResult {
                                tool_use_id: nid.clone(),
                                content,
                                is_error,
                            });
                        }
                    }
                    Some(Call::Folded(name)) => {
                        blocks.push(Block::Text(tools::render_result(
                            name,
                            &result_text(&content),
                            is_error,
                        )));
                        blocks.extend(
                            content
                                .into_iter()
                                .filter(|b| matches!(b, Block::Image { .. })),
                        );
                    }
                    None => {
                        report.add(
                            "tool result",
                            Action::Folded,
                            "answers no call in the source; rendered as text",
                        );
                        blocks.push(Block::Text(tools::render_result(
                            &tool_use_id,
                            &result_text(&content),
                            is_error,
                        )));
                    }
                },
                Block::Text(s) if s.trim().is_empty() => {}
                b => blocks.push(b),
            }
        }
        if blocks.is_empty() {
            continue;
        }
        // A tool result travels in a user message, whatever the source's role for it.
        let (results, rest): (Vec<Block>, Vec<Block>) = blocks
            .into_iter()
            .partition(|b| matches!(b, Block::ToolResult { .. }));
        for (role, blocks) in [(Role::User, results), (m.role, rest)] {
            if blocks.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some(last) if last.role == role => last.blocks.extend(blocks),
                _ => out.push(Message {
                    role,
                    blocks,
                    timestamp: m.timestamp.clone(),
                    cwd: cwd.clone(),
                    model: m.model.clone(),
                }),
            }
        }
    }
    answer_every_call(&mut out, report);
    if out.first().is_some_and(|m| m.role == Role::Assistant) {
        report.add(
            "conversation",
            Action::Folded,
            "starts with the model: a user note opens it (the API needs a user message first)",
        );
        let mut note = Message::new(
            Role::User,
            vec![Block::Text(format!(
                "[conversation imported from {}]",
                t.source
            ))],
        );
        note.timestamp.clone_from(&out[0].timestamp);
        note.cwd.clone_from(&out[0].cwd);
        out.insert(0, note);
    }
    out
}

/// Each assistant message's tool calls answered at the start of the next user message: the
/// results put first, a missing one written (and counted), a result no call of the message
/// before asked for rendered as text.
fn answer_every_call(out: &mut Vec<Message>, report: &mut Report) {
    // Rebuilt in one pass: a user message inserted after each unanswered call would shift
    // the rest every time (quadratic on a long history of calls without outputs).
    let mut messages = std::mem::take(out).into_iter().peekable();
    while let Some(m) = messages.next() {
        if m.role != Role::Assistant {
            out.push(m);
            continue;
        }
        let asked: Vec<String> = m
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        let next_is_user = messages.peek().is_some_and(|n| n.role == Role::User);
        if !next_is_user && asked.is_empty() {
            out.push(m);
            continue;
        }
        let mut user = match messages.next_if(|n| n.role == Role::User) {
            Some(u) => u,
            None => {
                let mut u = Message::new(Role::User, Vec::new());
                u.timestamp.clone_from(&m.timestamp);
                u.cwd.clone_from(&m.cwd);
                u
            }
        };
        out.push(m);
        let mut results: HashMap<String, Block> = HashMap::new();
        let mut rest = Vec::new();
        for b in std::mem::take(&mut user.blocks) {
            match b {
                Block::ToolResult {
                    ref tool_use_id,
                    ref content,
                    is_error,
                } => {
                    if asked.contains(tool_use_id) && !results.contains_key(tool_use_id) {
                        results.insert(tool_use_id.clone(), b);
                    } else {
                        report.add(
                            "tool result",
                            Action::Folded,
                            "not the answer to a call of the message before it; rendered as text",
                        );
                        rest.push(Block::Text(tools::render_result(
                            tool_use_id,
                            &result_text(content),
                            is_error,
                        )));
                    }
                }
                b => rest.push(b),
            }
        }
        let mut blocks = Vec::new();
        for id in &asked {
            match results.remove(id) {
                Some(b) => blocks.push(b),
                None => {
                    report.add(
                        "tool call",
                        Action::Kept,
                        "the source recorded no output: answered with a note saying so",
                    );
                    blocks.push(Block::ToolResult {
                        tool_use_id: id.clone(),
                        content: vec![Block::Text(
                            "[no output was recorded for this call in the imported history]".into(),
                        )],
                        is_error: true,
                    });
                }
            }
        }
        blocks.extend(rest);
        user.blocks = blocks;
        out.push(user);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::Dialect;

    fn target() -> Target {
        Target {
            session_id: "11111111-1111-4111-8111-111111111111".into(),
            cwd: "/w".into(),
            git_branch: String::new(),
            model: None,
            force_model: false,
            source: "codex",
        }
    }

    fn records(conv: &Conversation) -> Vec<Value> {
        let mut r = Report::default();
        let out = build(conv.clone(), &target(), &mut r);
        out.split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    #[test]
    fn chain_and_answered_calls() {
        let conv = Conversation {
            messages: vec![
                Message::new(Role::User, vec![Block::Text("hi".into())]),
                Message::new(
                    Role::Assistant,
                    vec![Block::ToolUse {
                        id: "call.1".into(),
                        name: "shell".into(),
                        input: json!({"command": ["ls"]}),
                        dialect: Dialect::Codex,
                    }],
                ),
                Message::new(
                    Role::Assistant,
                    vec![Block::ToolUse {
                        id: "call_2".into(),
                        name: "update_plan".into(),
                        input: json!({"plan": []}),
                        dialect: Dialect::Codex,
                    }],
                ),
            ],
            ..Conversation::default()
        };
        let recs = records(&conv);
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0]["parentUuid"], Value::Null);
        assert_eq!(recs[1]["parentUuid"], recs[0]["uuid"]);
        assert_eq!(recs[2]["parentUuid"], recs[1]["uuid"]);
        let a = &recs[1]["message"]["content"];
        assert_eq!(a[0]["id"], "call_1");
        assert_eq!(a[0]["name"], "Bash");
        assert_eq!(a[1]["type"], "text");
        assert_eq!(recs[2]["message"]["content"][0]["tool_use_id"], "call_1");
        assert_eq!(recs[2]["message"]["content"][0]["is_error"], true);
    }
}
