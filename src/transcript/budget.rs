//! What a session costs when Claude Code resumes it, in estimated tokens.
//!
//! On `--resume` Claude Code rebuilds the conversation from the chain that ends at the newest
//! message (from the last compaction boundary on, when there is one) and sends its messages to
//! the model. The estimate counts exactly those records: `user` and `assistant` messages and
//! `attachment` records (their `rendered` text, which is what is sent) on the logical path,
//! sidechains excluded.
//!
//! Estimator: **bytes of JSON text sent / 4**, rounded up per record, plus
//! [`IMAGE_TOKENS`] for every `image` or `document` block (their base64 data is not text the
//! model reads; the API bills an image by its size, at most about 1,600 tokens for the
//! ~1.15 megapixel images Claude Code sends). The system prompt and the tool definitions are
//! not part of the session and are not counted: a budget is for the conversation.
//!
//! **Reserve.** The conversation the CLI sends on resume is more than the session's records:
//! it adds its own messages (system reminders, the context attachments it rebuilds, the next
//! prompt), and the message wrappers and JSON escapes the estimate leaves out. Measured with
//! Claude Code 2.1.328 against the mock API (`tests/claude/steps_resume.rs`, messages sent as
//! JSON bytes / 4): a 2-turn corpus session cut to an estimate of 19,341 tokens was sent as
//! 23,450 (+4,109), the same cut to 3,589 as 6,619 (+3,030); a small generated session cut to
//! 4,615 as 5,365 (+750). So `--fit B` aims the estimate at `B - reserve`, the reserve being
//! [`RESERVE_BASE_TOKENS`] plus a tenth of `B` ([`default_reserve`]; `fit_reserve` sets it).

use serde_json::Value;

use crate::transcript::record::Kind;
use crate::transcript::session::Session;

/// Bytes of JSON text per estimated token.
pub const BYTES_PER_TOKEN: u64 = 4;

/// Tokens counted for one image or document block.
pub const IMAGE_TOKENS: u64 = 1600;

/// The fixed part of the default reserve: what Claude Code adds to a resumed conversation.
pub const RESERVE_BASE_TOKENS: u64 = 4_000;

/// The default reserve of a budget: [`RESERVE_BASE_TOKENS`] plus 10 % of it for the
/// estimate's own error (wrappers and escapes grow with the conversation).
pub fn default_reserve(budget: u64) -> u64 {
    RESERVE_BASE_TOKENS + budget / 10
}

/// Attachment types written without `rendered` text that the CLI does not send to the model
/// (the prompt snapshot is a copy of the system prompt for the CLI's own bookkeeping).
const NOT_SENT_ATTACHMENTS: &[&str] = &["prompt_snapshot", "session_context"];

/// Indexes of the records Claude Code sends on resume, in chain order.
pub fn resume_path(s: &Session<'_>) -> Vec<usize> {
    let Some(leaf) = s.leaf() else {
        return Vec::new();
    };
    let path = s.logical_path(leaf);
    // Resume starts over at the last compaction: what came before is in its summary.
    let start = path
        .iter()
        .rposition(|&i| {
            s.header(i)
                .is_some_and(|h| h.subtype() == Some("compact_boundary"))
        })
        .map_or(0, |p| p + 1);
    path[start..]
        .iter()
        .copied()
        .filter(|&i| {
            s.header(i).is_some_and(|h| {
                !h.is_sidechain && matches!(h.kind, Kind::User | Kind::Assistant | Kind::Attachment)
            })
        })
        .collect()
}

/// Estimated tokens of record `i` as sent to the model (0 for a record that is not sent).
pub fn record_tokens(s: &mut Session<'_>, i: usize) -> u64 {
    let Ok(v) = s.records[i].read_value() else {
        return 0;
    };
    let sent = if v.get("type").and_then(Value::as_str) == Some("attachment") {
        // `rendered` holds the exact text sent (2.1.x); without it, the attachment itself,
        // unless its type is bookkeeping the CLI never sends.
        match v.get("rendered") {
            Some(r) => Some(r),
            None => v.get("attachment").filter(|a| {
                !a.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| NOT_SENT_ATTACHMENTS.contains(&t))
            }),
        }
    } else {
        v.pointer("/message/content")
    };
    let Some(sent) = sent else { return 0 };
    let (bytes, images) = weigh(sent);
    bytes.div_ceil(BYTES_PER_TOKEN) + images * IMAGE_TOKENS
}

/// Estimated tokens of the whole conversation Claude Code would rebuild on resume.
pub fn resume_tokens(s: &mut Session<'_>) -> u64 {
    resume_path(s)
        .into_iter()
        .map(|i| record_tokens(s, i))
        .sum()
}

/// Estimated tokens of one JSON value as sent (a content block).
pub fn value_tokens(v: &Value) -> u64 {
    let (bytes, images) = weigh(v);
    bytes.div_ceil(BYTES_PER_TOKEN) + images * IMAGE_TOKENS
}

/// Estimated tokens of a plain text (a summary).
pub fn text_tokens(text: &str) -> u64 {
    (text.len() as u64 + 2).div_ceil(BYTES_PER_TOKEN)
}

/// (bytes of `v` serialized as compact JSON, image and document blocks) — escapes inside
/// strings are not counted, which is well inside the estimate's precision.
fn weigh(v: &Value) -> (u64, u64) {
    match v {
        Value::String(s) => (s.len() as u64 + 2, 0),
        Value::Number(n) => (n.to_string().len() as u64, 0),
        Value::Bool(b) => (if *b { 4 } else { 5 }, 0),
        Value::Null => (4, 0),
        Value::Array(items) => items.iter().fold((1 + items.len() as u64, 0), |acc, x| {
            let (b, i) = weigh(x);
            (acc.0 + b, acc.1 + i)
        }),
        Value::Object(m) => {
            if matches!(
                m.get("type").and_then(Value::as_str),
                Some("image" | "document")
            ) {
                return (0, 1);
            }
            m.iter().fold((1 + m.len() as u64, 0), |acc, (k, x)| {
                let (b, i) = weigh(x);
                (acc.0 + k.len() as u64 + 3 + b, acc.1 + i)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::framing::lines;
    use crate::transcript::record::Record;

    #[test]
    fn weigh_matches_compact_json_and_counts_images() {
        let v: Value = serde_json::from_str(
            r#"[{"type":"text","text":"hello"},{"type":"tool_result","tool_use_id":"t","content":[{"type":"image","source":{"data":"QUFB"}}],"is_error":false,"n":12}]"#,
        )
        .unwrap();
        let mut no_image = v.clone();
        no_image[1]["content"] = Value::Array(vec![]);
        let (bytes, images) = weigh(&v);
        assert_eq!(images, 1);
        assert_eq!(
            bytes,
            serde_json::to_string(&no_image).unwrap().len() as u64
        );
    }

    #[test]
    fn resume_counts_the_path_after_the_last_compaction() {
        let text = [
            r#"{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"old old old old"}}"#,
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","parentUuid":null,"logicalParentUuid":"a"}"#,
            r#"{"type":"user","uuid":"c","parentUuid":"b","isCompactSummary":true,"message":{"role":"user","content":"sum"}}"#,
            r#"{"type":"assistant","uuid":"d","parentUuid":"c","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"ok"}]}}"#,
            r#"{"type":"attachment","uuid":"f","parentUuid":"d","attachment":{"type":"prompt_snapshot","text":"a long system prompt"}}"#,
            r#"{"type":"attachment","uuid":"g","parentUuid":"f","attachment":{"type":"date","date":"2026-01-01 and more"},"rendered":["abc"]}"#,
            r#"{"type":"assistant","uuid":"h","parentUuid":"g","message":{"id":"m2","role":"assistant","content":"x"}}"#,
            r#"{"type":"assistant","uuid":"e","parentUuid":"c","isSidechain":true,"message":{"id":"n","role":"assistant","content":"side"}}"#,
        ]
        .join("\n");
        let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        assert_eq!(resume_path(&s), vec![2, 3, 4, 5, 6]);
        // "sum" → 5 bytes → 2 tokens; [{"type":"text","text":"ok"}] → 29 bytes → 8 tokens;
        // the prompt snapshot is not sent; ["abc"] → 7 bytes → 2 tokens; "x" → 1 token.
        assert_eq!(resume_tokens(&mut s), 2 + 8 + 2 + 1);
    }
}
