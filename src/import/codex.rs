//! OpenAI Codex CLI rollouts: `$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl` (or
//! `.jsonl.zst`), one `{timestamp, type, payload}` line each.
//!
//! Field names from openai/codex `codex-rs/protocol/src/models.rs` (`ResponseItem`),
//! `codex-rs/protocol/src/protocol.rs` (`RolloutItem`, `ThreadRolledBackEvent`) and
//! `codex-rs/rollout/src/policy.rs` (which `event_msg`s are persisted). Both the older enum
//! (5 line kinds) and the 2026 one (12) are read; the first rollouts (bare response items after
//! a `{id, timestamp, instructions}` line) too.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{
    image_from_url, json_line, lines, Action, Block, Conversation, Dialect, History, ImportError,
    Message, Options, Report, Role, Source,
};

/// The Codex source.
pub struct Codex;

/// Tags that open the user-role context Codex injects (not typed by the user):
/// `USER_INSTRUCTIONS_OPEN_TAG`, `ENVIRONMENT_CONTEXT_OPEN_TAG` and the AGENTS.md and
/// permissions blocks.
const INJECTED: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<permissions instructions>",
    "<INSTRUCTIONS>",
];

/// Whether a user message's text is context Codex injected.
pub(crate) fn injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED.iter().any(|tag| t.starts_with(tag))
}

/// Line kinds that hold harness state, not conversation (the 2026 enum).
const HARNESS: &[&str] = &[
    "token_usage_record",
    "world_state",
    "retained_context",
    "security_risk_score",
    "realtime_item",
    "inter_agent_communication",
    "inter_agent_communication_metadata",
];

/// What the conversion of one response item gave.
pub(crate) enum Item {
    /// A message; `true` when it opens a user turn (what a rollback counts).
    Message(Message, bool),
    /// Nothing (counted).
    None,
}

/// The text of a tool output (`FunctionCallOutputPayload`: a string, content items, or, in
/// older rollouts, a JSON string `{"output": …, "metadata": {"exit_code": …}}`).
fn output_blocks(v: &Value) -> (Vec<Block>, bool) {
    match v {
        Value::String(s) => {
            if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(s) {
                if let Some(out) = o.get("output").and_then(Value::as_str) {
                    let code = o
                        .get("metadata")
                        .and_then(|m| m.get("exit_code"))
                        .and_then(Value::as_i64);
                    return (
                        vec![Block::Text(out.to_string())],
                        code.is_some_and(|c| c != 0),
                    );
                }
            }
            (vec![Block::Text(s.clone())], false)
        }
        Value::Array(a) => (a.iter().filter_map(content_item).collect(), false),
        Value::Object(o) => {
            let err = o.get("success").and_then(Value::as_bool) == Some(false);
            let (b, _) = output_blocks(o.get("content").unwrap_or(&Value::Null));
            (b, err)
        }
        _ => (Vec::new(), false),
    }
}

/// One `ContentItem` (`input_text`, `output_text`, `input_image`).
fn content_item(c: &Value) -> Option<Block> {
    match c.get("type").and_then(Value::as_str)? {
        "input_text" | "output_text" | "text" => {
            Some(Block::Text(c.get("text")?.as_str()?.to_string()))
        }
        "input_image" => Some(image_from_url(c.get("image_url")?.as_str()?)),
        _ => None,
    }
}

/// One `ResponseItem` (shared with the OpenAI Responses shape of [`super::messages`]).
pub(crate) fn response_item(p: &Value, dialect: Dialect, report: &mut Report) -> Item {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = format!("response_item/{ty}");
    let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match ty {
        "message" => {
            let role = s("role");
            let blocks: Vec<Block> = match p.get("content") {
                Some(Value::String(t)) => vec![Block::Text(t.clone())],
                Some(Value::Array(a)) => a.iter().filter_map(content_item).collect(),
                _ => Vec::new(),
            };
            match role.as_str() {
                "user" => {
                    let text: String = blocks
                        .iter()
                        .filter_map(|b| match b {
                            Block::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect();
                    if !text.is_empty() && injected(&text) {
                        report.add(&kind, Action::Dropped, "user-role context the agent injected (environment, AGENTS.md, instructions): Claude Code injects its own");
                        return Item::None;
                    }
                    report.add(&kind, Action::Kept, "user message");
                    Item::Message(Message::new(Role::User, blocks), true)
                }
                "assistant" => {
                    report.add(&kind, Action::Kept, "assistant message");
                    Item::Message(Message::new(Role::Assistant, blocks), false)
                }
                _ => {
                    report.add(
                        &kind,
                        Action::Dropped,
                        "developer/system instructions: Claude Code sends its own system prompt",
                    );
                    Item::None
                }
            }
        }
        "function_call" | "custom_tool_call" | "local_shell_call" => {
            let id = p
                .get("call_id")
                .or_else(|| p.get("id"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let (name, input) = match ty {
                "function_call" => {
                    let args = s("arguments");
                    let input = match serde_json::from_str::<Value>(&args) {
                        Ok(v @ Value::Object(_)) => v,
                        Ok(v) => json!({ "arguments": v }),
                        Err(_) => json!({ "arguments": args }),
                    };
                    (s("name"), input)
                }
                "custom_tool_call" => (s("name"), p.get("input").cloned().unwrap_or(Value::Null)),
                _ => {
                    let a = p.get("action").cloned().unwrap_or(Value::Null);
                    let mut input =
                        json!({"command": a.get("command").cloned().unwrap_or(Value::Null)});
                    if let Some(w) = a.get("working_directory").filter(|w| w.is_string()) {
                        input["workdir"] = w.clone();
                    }
                    ("local_shell".to_string(), input)
                }
            };
            report.add(
                &kind,
                Action::Kept,
                "tool call (see `tool call` for how it maps)",
            );
            Item::Message(
                Message::new(
                    Role::Assistant,
                    vec![Block::ToolUse {
                        id,
                        name,
                        input,
                        dialect,
                    }],
                ),
                false,
            )
        }
        "function_call_output" | "custom_tool_call_output" => {
            let (content, is_error) = output_blocks(p.get("output").unwrap_or(&Value::Null));
            report.add(
                &kind,
                Action::Kept,
                "tool output, joined to its call by call_id",
            );
            Item::Message(
                Message::new(
                    Role::User,
                    vec![Block::ToolResult {
                        tool_use_id: s("call_id"),
                        content,
                        is_error,
                    }],
                ),
                false,
            )
        }
        "web_search_call" => {
            let a = p.get("action");
            let what = a
                .and_then(|a| {
                    a.get("query")
                        .or_else(|| a.get("url"))
                        .or_else(|| a.get("pattern"))
                })
                .and_then(Value::as_str)
                .unwrap_or("");
            report.add(
                &kind,
                Action::Folded,
                "has no output item, so no tool_result could answer it: a text note",
            );
            Item::Message(
                Message::new(
                    Role::Assistant,
                    vec![Block::Text(format!("[web search: {what}]"))],
                ),
                false,
            )
        }
        "reasoning" => {
            report.add(
                &kind,
                Action::Dropped,
                "opaque encrypted_content cannot become a signed thinking block",
            );
            Item::None
        }
        "compaction" | "context_compaction" | "compaction_trigger" => {
            report.add(&kind, Action::Dropped, "opaque compaction state");
            Item::None
        }
        _ => {
            report.add(
                &kind,
                Action::Dropped,
                "no conversation in it (or a kind cchist does not know)",
            );
            Item::None
        }
    }
}

/// Messages read so far, with where each user turn starts (for rollbacks).
#[derive(Default)]
struct History_ {
    messages: Vec<Message>,
    turn_starts: Vec<usize>,
}

impl History_ {
    fn push(&mut self, item: Item, ts: Option<&str>, cwd: &Option<String>, model: &Option<String>) {
        if let Item::Message(mut m, turn) = item {
            if turn {
                self.turn_starts.push(self.messages.len());
            }
            m.timestamp = ts.map(str::to_string);
            m.cwd.clone_from(cwd);
            if m.role == Role::Assistant {
                m.model.clone_from(model);
            }
            self.messages.push(m);
        }
    }
}

impl Source for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn detect(&self, path: &Path, head: &[u8]) -> bool {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        if name.starts_with("rollout-")
            && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
        {
            return true;
        }
        let first = head.split(|&b| b == b'\n').next().unwrap_or(b"");
        serde_json::from_slice::<Value>(first).is_ok_and(|v| {
            v.get("type").and_then(Value::as_str) == Some("session_meta")
                || (v.get("payload").is_some() && v.get("timestamp").is_some())
        })
    }

    fn read(
        &self,
        path: &Path,
        data: &[u8],
        opts: &Options,
        report: &mut Report,
    ) -> Result<Conversation, ImportError> {
        let mut conv = Conversation::default();
        let mut h = History_::default();
        let mut cwd: Option<String> = None;
        let mut model: Option<String> = None;
        for (n, body) in lines(data) {
            let v = json_line(path, n, body)?;
            let Some(obj) = v.as_object() else {
                return Err(ImportError::at(
                    path,
                    n,
                    "a rollout line must be a JSON object",
                ));
            };
            let ts = obj.get("timestamp").and_then(Value::as_str);
            let ty = obj.get("type").and_then(Value::as_str);
            let payload = obj.get("payload");
            let (ty, p) = match (ty, payload) {
                (Some(t), Some(p)) => (t, p),
                // The first rollouts: bare response items, a meta line, state lines.
                (Some(_), None) => ("response_item", &v),
                (None, _) if obj.contains_key("id") && n == 1 => ("session_meta", &v),
                (None, _) if obj.contains_key("record_type") => {
                    report.add("state", Action::Dropped, "harness state");
                    continue;
                }
                (None, _) => {
                    return Err(ImportError::at(
                        path,
                        n,
                        "a rollout line needs a `type` (and a `payload`)",
                    ))
                }
            };
            if !p.is_object() {
                return Err(ImportError::at(
                    path,
                    n,
                    format!("`{ty}` line: `payload` must be an object"),
                ));
            }
            match ty {
                "session_meta" => {
                    let meta = p.get("meta").unwrap_or(p);
                    cwd = meta.get("cwd").and_then(Value::as_str).map(str::to_string);
                    conv.cwd.clone_from(&cwd);
                    conv.git_branch = p
                        .get("git")
                        .and_then(|g| g.get("branch"))
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    let sub = meta
                        .get("source")
                        .is_some_and(|s| s.get("subagent").is_some() || s == "subagent");
                    let why = if sub {
                        "a sub-agent's rollout: imported as a session of its own"
                    } else {
                        "cwd and git branch used; base instructions dropped (Claude Code has its own)"
                    };
                    report.add(ty, Action::Kept, why);
                }
                "response_item" => {
                    let item = response_item(p, Dialect::Codex, report);
                    h.push(item, ts, &cwd, &model);
                }
                "turn_context" => {
                    if let Some(c) = p.get("cwd").and_then(Value::as_str) {
                        cwd = Some(c.to_string());
                    }
                    if let Some(m) = p.get("model").and_then(Value::as_str) {
                        model = Some(m.to_string());
                    }
                    report.add(ty, Action::Kept, "cwd and model followed");
                }
                "compacted" => {
                    match opts.history {
                        History::Full => {
                            report.add(ty, Action::Dropped, "full history kept (--history active imports what the agent's model saw after it)");
                        }
                        History::Active => {
                            let dropped = h.messages.len();
                            h = History_::default();
                            match p.get("replacement_history").and_then(Value::as_array) {
                                Some(items) => {
                                    for it in items {
                                        let item = response_item(it, Dialect::Codex, report);
                                        h.push(item, ts, &cwd, &model);
                                    }
                                }
                                None => {
                                    let msg =
                                        p.get("message").and_then(Value::as_str).unwrap_or("");
                                    h.push(
                                        Item::Message(
                                            Message::new(
                                                Role::User,
                                                vec![Block::Text(msg.to_string())],
                                            ),
                                            true,
                                        ),
                                        ts,
                                        &cwd,
                                        &model,
                                    );
                                }
                            }
                            for _ in 0..dropped {
                                report.add(
                                    "message",
                                    Action::Dropped,
                                    "before a compaction (--history active)",
                                );
                            }
                            report.add(ty, Action::Kept, "--history active: its replacement history replaces what came before");
                        }
                    }
                }
                "event_msg" => {
                    let et = p.get("type").and_then(Value::as_str).unwrap_or("");
                    if et == "thread_rolled_back" {
                        let k = p.get("num_turns").and_then(Value::as_u64).ok_or_else(|| {
                            ImportError::at(
                                path,
                                n,
                                "thread_rolled_back needs a numeric `num_turns`",
                            )
                        })? as usize;
                        let keep = h.turn_starts.len().saturating_sub(k);
                        let cut = h.turn_starts.get(keep).copied().unwrap_or(h.messages.len());
                        for _ in cut..h.messages.len() {
                            report.add(
                                "message",
                                Action::Dropped,
                                "removed by a rollback (thread_rolled_back)",
                            );
                        }
                        h.messages.truncate(cut);
                        h.turn_starts.truncate(keep);
                        report.add("event_msg/thread_rolled_back", Action::Kept, "applied");
                    } else {
                        report.add(
                            &format!("event_msg/{et}"),
                            Action::Dropped,
                            "a UI event: duplicates a response item",
                        );
                    }
                }
                t if HARNESS.contains(&t) => report.add(t, Action::Dropped, "harness state"),
                t => report.add(t, Action::Dropped, "a line kind cchist does not know"),
            }
        }
        conv.messages = h.messages;
        Ok(conv)
    }
}

/// `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".codex")))
}

/// Every rollout under `sessions/`, the plain file preferred to its `.zst` sibling, sorted by
/// name (which starts with the time it began).
pub fn rollouts(home: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![home.join("sessions")];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with("rollout-") {
                continue;
            }
            if name.ends_with(".jsonl") {
                out.push(p);
            } else if let Some(plain) = name.strip_suffix(".zst").filter(|n| n.ends_with(".jsonl"))
            {
                if !d.join(plain).exists() {
                    out.push(p);
                }
            }
        }
    }
    out.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
    out
}

/// The `cwd` a rollout's `session_meta` names.
pub fn rollout_cwd(path: &Path) -> Option<String> {
    let data = super::read_file(path).ok()?;
    let (_, first) = lines(&data).next()?;
    let v: Value = serde_json::from_slice(first).ok()?;
    let p = v.get("payload").unwrap_or(&v);
    p.get("cwd").and_then(Value::as_str).map(str::to_string)
}
