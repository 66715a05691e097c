//! Messages API conversations: Anthropic `messages` arrays (string or block content: text,
//! image, document, tool_use / tool_result, thinking kept only with its signature), OpenAI
//! Chat Completions (`tool_calls` + `tool` role) and Responses (`function_call` /
//! `function_call_output` items). A JSON array, a request body (`messages` / `input`), or JSONL
//! of messages.

use std::path::Path;

use serde_json::Value;

use super::codex::{response_item, Item};
use super::{
    image_from_url, json_line, lines, Action, Block, Conversation, Dialect, ImportError, Message,
    Options, Report, Role, Source,
};

/// The Messages API source.
pub struct Messages;

/// One Anthropic or OpenAI content block (`None`: counted and left out).
fn block(b: &Value, report: &mut Report) -> Option<Block> {
    if let Some(s) = b.as_str() {
        return Some(Block::Text(s.to_string()));
    }
    let ty = b.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = format!("block/{ty}");
    let s = |k: &str| b.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let out = match ty {
        "text" | "input_text" | "output_text" => Block::Text(s("text")),
        "image" => {
            let src = b.get("source").unwrap_or(&Value::Null);
            match src.get("type").and_then(Value::as_str) {
                Some("base64") => Block::Image {
                    media_type: src
                        .get("media_type")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    data: src.get("data").and_then(Value::as_str).unwrap_or("").into(),
                    url: false,
                },
                _ => Block::Raw(b.clone()),
            }
        }
        "input_image" => image_from_url(&s("image_url")),
        "image_url" => {
            let url = b
                .get("image_url")
                .and_then(|u| u.get("url").or(Some(u)))
                .and_then(Value::as_str)
                .unwrap_or("");
            image_from_url(url)
        }
        "tool_use" => Block::ToolUse {
            id: s("id"),
            name: s("name"),
            input: b
                .get("input")
                .cloned()
                .unwrap_or(Value::Object(Default::default())),
            dialect: Dialect::Native,
        },
        "tool_result" => {
            let content = match b.get("content") {
                Some(Value::String(t)) => vec![Block::Text(t.clone())],
                Some(Value::Array(a)) => a.iter().filter_map(|c| block(c, report)).collect(),
                _ => Vec::new(),
            };
            Block::ToolResult {
                tool_use_id: s("tool_use_id"),
                content,
                is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
            }
        }
        "thinking" => {
            let sig = s("signature");
            if sig.is_empty() {
                report.add(
                    &kind,
                    Action::Dropped,
                    "no signature: the API would reject it (and Claude Code drops it)",
                );
                return None;
            }
            report.add(&kind, Action::Kept, "signed: sent back on resume only when its record names the model resumed with (--model)");
            return Some(Block::Thinking {
                thinking: s("thinking"),
                signature: sig,
            });
        }
        "redacted_thinking" | "document" | "search_result" => Block::Raw(b.clone()),
        _ => {
            report.add(&kind, Action::Dropped, "a block kind cchist does not know");
            return None;
        }
    };
    report.add(&kind, Action::Kept, "block");
    Some(out)
}

/// One message (Anthropic or OpenAI Chat), or a Responses item, into `out`.
fn message(m: &Value, report: &mut Report, out: &mut Vec<Message>) -> Result<(), String> {
    let Some(o) = m.as_object() else {
        return Err("a message must be a JSON object".into());
    };
    // A Responses item other than a message (`function_call`, …); a message of any shape
    // (a Responses one has `type: "message"`) goes by its role.
    if o.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t != "message")
    {
        if let Item::Message(m, _) = response_item(m, Dialect::Native, report) {
            out.push(m);
        }
        return Ok(());
    }
    if !o.contains_key("role") {
        return Err("a message needs a `role` (or a Responses item its `type`)".into());
    }
    let role = o.get("role").and_then(Value::as_str).unwrap_or("");
    let mut blocks: Vec<Block> = match o.get("content") {
        Some(Value::String(s)) => vec![Block::Text(s.clone())],
        Some(Value::Array(a)) => a.iter().filter_map(|b| block(b, report)).collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(_) => return Err("`content` must be a string or an array of blocks".into()),
    };
    match role {
        "user" => {
            report.add("message/user", Action::Kept, "message");
            out.push(Message::new(Role::User, blocks));
        }
        "assistant" => {
            for c in o
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let f = c.get("function").unwrap_or(&Value::Null);
                let args = f.get("arguments").and_then(Value::as_str).unwrap_or("{}");
                let input = match serde_json::from_str::<Value>(args) {
                    Ok(v @ Value::Object(_)) => v,
                    Ok(v) => serde_json::json!({ "arguments": v }),
                    Err(_) => serde_json::json!({ "arguments": args }),
                };
                report.add("tool_calls", Action::Kept, "a tool_use");
                blocks.push(Block::ToolUse {
                    id: c.get("id").and_then(Value::as_str).unwrap_or("").into(),
                    name: f.get("name").and_then(Value::as_str).unwrap_or("").into(),
                    input,
                    dialect: Dialect::Native,
                });
            }
            report.add("message/assistant", Action::Kept, "message");
            out.push(Message::new(Role::Assistant, blocks));
        }
        "tool" => {
            report.add("message/tool", Action::Kept, "a tool_result");
            out.push(Message::new(
                Role::User,
                vec![Block::ToolResult {
                    tool_use_id: o
                        .get("tool_call_id")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    content: blocks,
                    is_error: false,
                }],
            ));
        }
        "system" | "developer" => {
            report.add(
                &format!("message/{role}"),
                Action::Dropped,
                "system prompt: Claude Code sends its own",
            );
        }
        r => {
            return Err(format!(
                "unknown role `{r}` (user, assistant, tool, system, developer)"
            ))
        }
    }
    Ok(())
}

impl Source for Messages {
    fn name(&self) -> &'static str {
        "messages"
    }

    fn detect(&self, _path: &Path, head: &[u8]) -> bool {
        let t = head.trim_ascii_start();
        if t.starts_with(b"[") {
            return true;
        }
        // A pretty-printed document names its keys on later lines: search the whole head.
        let has = |k: &str| memchr::memmem::find(t, k.as_bytes()).is_some();
        has("\"messages\"") || has("\"input\"") || has("\"role\"")
    }

    fn read(
        &self,
        path: &Path,
        data: &[u8],
        _opts: &Options,
        report: &mut Report,
    ) -> Result<Conversation, ImportError> {
        let mut out = Vec::new();
        let mut model = None;
        // A whole JSON document, or else JSONL of messages.
        match serde_json::from_slice::<Value>(data) {
            Ok(doc) => {
                let list = match &doc {
                    Value::Array(a) => a,
                    Value::Object(o) => match o.get("messages").or_else(|| o.get("input")) {
                        Some(Value::Array(a)) => a,
                        _ if o.contains_key("role") => std::slice::from_ref(&doc),
                        _ => return Err(ImportError::at(path, 1, "expected an array of messages, or an object with `messages` or `input`")),
                    },
                    _ => return Err(ImportError::at(path, 1, "expected an array of messages")),
                };
                if let Value::Object(o) = &doc {
                    model = o.get("model").and_then(Value::as_str).map(str::to_string);
                    if o.contains_key("system") || o.contains_key("instructions") {
                        report.add(
                            "system",
                            Action::Dropped,
                            "system prompt: Claude Code sends its own",
                        );
                    }
                }
                for (i, m) in list.iter().enumerate() {
                    message(m, report, &mut out)
                        .map_err(|e| ImportError::at(path, 1, format!("message {}: {e}", i + 1)))?;
                }
            }
            Err(_) => {
                for (n, body) in lines(data) {
                    let v = json_line(path, n, body)?;
                    message(&v, report, &mut out).map_err(|e| ImportError::at(path, n, e))?;
                }
            }
        }
        Ok(Conversation {
            messages: out,
            model,
            ..Conversation::default()
        })
    }
}
