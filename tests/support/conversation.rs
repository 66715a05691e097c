//! Comparing and searching the conversations Claude Code sends to the API ([`Probe::messages`]).
//!
//! Two resumes of the same unchanged file send the same `messages`, except for (measured on the
//! whole corpus with 2.1.328):
//! - the sandbox path (`<tmp>/cchist-probe.XXXXXX`, also in its project-dir form), which the CLI
//!   writes into the fresh environment context it appends after the probe prompt;
//! - the current date (`Today's date is YYYY-MM-DD`) in that fresh context, which changes when
//!   two resumes straddle midnight.
//!
//! [`normalize`] replaces exactly those, only where they can be fresh (sandbox path anywhere, the
//! date only after the last assistant message), drops `cache_control` (prompt-cache hints, not
//! content) and writes string `content` as one text block (the same thing to the model).
//! Everything else (roles, block order and types, text, thinking and signatures, tool ids,
//! names, inputs, results, `is_error`, the extra message fields) must match exactly.
//!
//! Failure messages show structure (roles, block types, tool ids, text lengths) but no
//! transcript text, since corpus files may hold live secrets; set `CCHIST_SHOW_DIFF=1` to
//! include short text snippets.
//!
//! [`Probe::messages`]: super::claude::Probe::messages

use super::claude::SANDBOX_PREFIX;
use regex::Regex;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// Max differences listed by [`conversation_diff`].
const MAX_DIFFS: usize = 8;

fn sandbox_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let tmp = std::env::temp_dir();
        let tmp = tmp.canonicalize().unwrap_or(tmp);
        let plain = format!("{}/{}", tmp.display(), SANDBOX_PREFIX);
        let hashed = super::claude::project_hash(std::path::Path::new(&plain));
        Regex::new(&format!(
            "(?:{}|{})[A-Za-z0-9_]+",
            regex::escape(&plain),
            regex::escape(&hashed)
        ))
        .expect("sandbox regex")
    })
}

fn date_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"Today's date is \d{4}-\d{2}-\d{2}").expect("date regex"))
}

/// The conversation with the per-run parts made uniform (see the module docs).
pub fn normalize(messages: &[Value]) -> Vec<Value> {
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut m = m.clone();
            if let Some(s) = m.get("content").and_then(Value::as_str) {
                m["content"] = json!([{"type": "text", "text": s}]);
            }
            // Only what follows the last assistant turn can be context added by this run.
            let fresh = last_assistant.is_none_or(|a| a < i);
            scrub(&mut m, fresh);
            m
        })
        .collect()
}

fn scrub(v: &mut Value, fresh: bool) {
    match v {
        Value::String(s) => {
            if s.contains(SANDBOX_PREFIX) || s.contains("cchist-probe-") {
                *s = sandbox_re().replace_all(s, "<SANDBOX>").into_owned();
            }
            if fresh && s.contains("Today's date is") {
                *s = date_re()
                    .replace_all(s, "Today's date is <DATE>")
                    .into_owned();
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| scrub(x, fresh)),
        Value::Object(o) => {
            o.remove("cache_control");
            o.values_mut().for_each(|x| scrub(x, fresh));
        }
        _ => {}
    }
}

/// One line per message: index, role, and per block its type plus tool name/id, `tool_use_id`,
/// or text length. Safe to print (no transcript text).
pub fn outline(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut line = format!("{i:3} {}", m["role"].as_str().unwrap_or("?"));
            let blocks = match &m["content"] {
                Value::String(s) => vec![format!("str({})", s.chars().count())],
                Value::Array(a) => a.iter().map(block_outline).collect(),
                other => vec![format!("{other:.20}")],
            };
            let _ = write!(line, " [{}]", blocks.join(", "));
            line
        })
        .collect()
}

fn block_outline(b: &Value) -> String {
    let kind = b["type"].as_str().unwrap_or("?");
    let len = |k: &str| b[k].as_str().map_or(0, |s| s.chars().count());
    match kind {
        "tool_use" => format!(
            "tool_use {} {}",
            b["name"].as_str().unwrap_or("?"),
            b["id"].as_str().unwrap_or("?")
        ),
        "tool_result" => format!(
            "tool_result {}{}",
            b["tool_use_id"].as_str().unwrap_or("?"),
            if b["is_error"] == true { " error" } else { "" }
        ),
        "text" => format!("text({})", len("text")),
        "thinking" => format!("thinking({})", len("thinking")),
        other => other.to_owned(),
    }
}

/// `None` when `a` and `b` are the same conversation after [`normalize`]; otherwise a readable
/// report: the outlines from the first differing message on, or the first differing JSON paths.
pub fn conversation_diff(a: &[Value], b: &[Value]) -> Option<String> {
    let (na, nb) = (normalize(a), normalize(b));
    if na == nb {
        return None;
    }
    let (oa, ob) = (outline(&na), outline(&nb));
    let mut report = format!(
        "conversations differ ({} vs {} messages)\n",
        na.len(),
        nb.len()
    );
    if oa != ob {
        let first = oa.iter().zip(&ob).take_while(|(x, y)| x == y).count();
        let from = first.saturating_sub(2);
        let _ = writeln!(report, "structure differs from message {first}:\n--- left");
        oa[from..]
            .iter()
            .take(12)
            .for_each(|l| report.push_str(&format!("{l}\n")));
        report.push_str("--- right\n");
        ob[from..]
            .iter()
            .take(12)
            .for_each(|l| report.push_str(&format!("{l}\n")));
        return Some(report);
    }
    let mut diffs = Vec::new();
    json_diff(
        &Value::Array(na),
        &Value::Array(nb),
        "messages".into(),
        &mut diffs,
    );
    for d in diffs.iter().take(MAX_DIFFS) {
        let _ = writeln!(report, "  {d}");
    }
    if diffs.len() > MAX_DIFFS {
        let _ = writeln!(report, "  … {} more", diffs.len() - MAX_DIFFS);
    }
    Some(report)
}

fn json_diff(a: &Value, b: &Value, path: String, out: &mut Vec<String>) {
    if a == b || out.len() > MAX_DIFFS {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => json_diff(v, w, format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}: only on the left")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{path}.{k}: only on the right"));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                json_diff(v, w, format!("{path}[{i}]"), out);
            }
        }
        (Value::String(x), Value::String(y)) => {
            let at = x.chars().zip(y.chars()).take_while(|(p, q)| p == q).count();
            let mut line = format!(
                "{path}: strings differ at char {at} (lengths {} vs {})",
                x.chars().count(),
                y.chars().count()
            );
            if std::env::var("CCHIST_SHOW_DIFF").as_deref() == Ok("1") {
                let snip = |s: &str| {
                    s.chars()
                        .skip(at.saturating_sub(20))
                        .take(60)
                        .collect::<String>()
                };
                let _ = write!(line, ": {:?} vs {:?}", snip(x), snip(y));
            }
            out.push(line);
        }
        _ => out.push(format!("{path}: {} vs {}", kind(a), kind(b))),
    }
}

fn kind(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("array[{}]", a.len()),
        Value::Object(_) => "object".into(),
        Value::String(s) => format!("string({})", s.chars().count()),
        other => other.to_string(),
    }
}

/// Panics with [`conversation_diff`]'s report unless `a` and `b` are the same conversation.
#[track_caller]
pub fn assert_conversation_eq(a: &[Value], b: &[Value]) {
    if let Some(report) = conversation_diff(a, b) {
        panic!("{report}");
    }
}

/// Every string in `v` (values, not keys) with its JSON path.
pub fn strings(v: &Value) -> Vec<(String, &str)> {
    fn walk<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a str)>) {
        match v {
            Value::String(s) => out.push((path, s)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| walk(x, format!("{path}[{i}]"), out)),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, x)| walk(x, format!("{path}.{k}"), out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, "messages".into(), &mut out);
    out
}

/// Where `needle` occurs in the conversation (JSON paths, one per occurrence).
pub fn occurrences(messages: &[Value], needle: &str) -> Vec<String> {
    let all = Value::Array(messages.to_vec());
    strings(&all)
        .into_iter()
        .flat_map(|(p, s)| vec![p; s.matches(needle).count()])
        .collect()
}

/// `abcd…(40 chars)`: enough to tell secrets apart in a failure without leaking them.
fn mask(secret: &str) -> String {
    format!(
        "{}…({} chars)",
        secret.chars().take(4).collect::<String>(),
        secret.chars().count()
    )
}

/// Panics if any of `secrets` occurs anywhere in what is sent to the model.
#[track_caller]
pub fn assert_no_secret_reaches_model(messages: &[Value], secrets: &[&str]) {
    let leaks = found_at(messages, secrets, mask);
    assert!(
        leaks.is_empty(),
        "secrets reach the model: {}",
        leaks.join("; ")
    );
}

/// For each of `needles` that occurs in the conversation: `label(needle) at <paths>`.
fn found_at(messages: &[Value], needles: &[&str], label: impl Fn(&str) -> String) -> Vec<String> {
    needles
        .iter()
        .filter_map(|n| {
            let at = occurrences(messages, n);
            (!at.is_empty()).then(|| format!("{} at {}", label(n), at.join(", ")))
        })
        .collect()
}

/// Panics if any of `texts` occurs anywhere in the conversation.
#[track_caller]
pub fn assert_turns_absent(messages: &[Value], texts: &[&str]) {
    let found = found_at(messages, texts, |t| {
        format!("{:?}", t.chars().take(40).collect::<String>())
    });
    assert!(
        found.is_empty(),
        "turns still present: {}",
        found.join("; ")
    );
}

/// Panics unless `text` occurs exactly once in the conversation.
#[track_caller]
pub fn assert_summary_present(messages: &[Value], text: &str) {
    let at = occurrences(messages, text);
    assert!(
        at.len() == 1,
        "summary {:?} expected exactly once, found {} times: {:?}",
        text.chars().take(40).collect::<String>(),
        at.len(),
        at
    );
}
