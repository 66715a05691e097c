//! Reading turns: the rows of `history list` and the readable form of `history show`.

use serde::Serialize;
use serde_json::Value;

use crate::transcript::record::Kind;
use crate::transcript::session::{Session, Step, Turn};

/// One row of `cchist history list` (the `--json` shape is part of the documented interface).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnRow {
    /// 1-based turn number in chain order.
    pub number: usize,
    /// uuid of the prompt that opens the turn.
    pub uuid: String,
    /// Timestamp of the prompt.
    pub time: Option<String>,
    /// The prompt's text as a person reads it ([`readable_prompt`]), whole: a display
    /// redacts it before it shortens it (a secret cut in half is no longer recognized).
    pub prompt: String,
    /// tool_use blocks in the turn.
    pub tool_calls: usize,
    /// Records in the turn.
    pub records: usize,
    /// Bytes of the turn's lines.
    pub bytes: usize,
    /// The context count at the end of the turn ([`crate::transcript::context::Timeline`]):
    /// what the CLI would count before the next request. `None` off the conversation.
    pub context_tokens: Option<u64>,
    /// What the turn added to the count (negative after a compaction).
    pub added_tokens: Option<i64>,
}

/// Rows for every turn of a session.
pub fn rows(s: &mut Session<'_>) -> Vec<TurnRow> {
    let turns = s.turns();
    let per_turn = crate::transcript::context::Timeline::of(s).per_turn(&turns);
    let mut before = Some(0u64);
    let mut out = Vec::with_capacity(turns.len());
    for (t, c) in turns.iter().zip(per_turn) {
        let added = c.zip(before).map(|(c, b)| c as i64 - b as i64);
        out.push(row(s, t, c, added));
        before = c.or(before);
    }
    out
}

fn row(s: &mut Session<'_>, t: &Turn, context: Option<u64>, added: Option<i64>) -> TurnRow {
    let h = s.records[t.prompt].header().cloned().unwrap_or_default();
    let tool_calls = t
        .records
        .iter()
        .filter_map(|&i| s.records[i].header())
        .filter(|h| !h.is_sidechain)
        .map(|h| h.tool_use_ids().count())
        .sum();
    let bytes = t
        .records
        .iter()
        .map(|&i| s.records[i].raw().len() + s.records[i].term.bytes().len())
        .sum();
    let prompt = s.records[t.prompt]
        .read_value()
        .ok()
        .map(|v| readable_prompt(&message_text(&v)))
        .unwrap_or_default();
    TurnRow {
        number: t.number,
        uuid: h.uuid().unwrap_or_default().to_string(),
        time: h.timestamp().map(str::to_string),
        prompt,
        tool_calls,
        records: t.records.len(),
        bytes,
        context_tokens: context,
        added_tokens: added,
    }
}

/// One row of `cchist history list --steps` (the `--json` shape is part of the documented
/// interface).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct StepRow {
    /// 1-based step number across the session (what `summarize-range --steps` takes).
    pub number: usize,
    /// 1-based number of the turn it belongs to.
    pub turn: usize,
    /// uuid of the step's first assistant record.
    pub uuid: String,
    /// Timestamp of that record.
    pub time: Option<String>,
    /// Names of the tools it calls, in order.
    pub tools: Vec<String>,
    /// The message's text, whole (shortened by a display after redaction, as `prompt`).
    pub text: String,
    /// Records in the step.
    pub records: usize,
    /// Bytes of the step's lines.
    pub bytes: usize,
}

/// Rows for every step of a session.
pub fn step_rows(s: &mut Session<'_>) -> Vec<StepRow> {
    let turns = s.turns();
    let steps = s.steps(&turns);
    steps.iter().map(|st| step_row(s, &turns, st)).collect()
}

fn step_row(s: &mut Session<'_>, turns: &[Turn], st: &Step) -> StepRow {
    let first = st.records[0];
    let h = s.records[first].header().cloned().unwrap_or_default();
    let mut tools = Vec::new();
    let mut text = String::new();
    for &i in &st.records {
        let Some(h) = s.records[i].header() else {
            continue;
        };
        if h.kind != Kind::Assistant || h.is_sidechain {
            continue;
        }
        tools.extend(
            h.blocks()
                .iter()
                .filter(|b| b.kind() == "tool_use")
                .map(|b| b.name().map(str::to_string).unwrap_or_default()),
        );
        if text.is_empty() {
            if let Ok(v) = s.records[i].read_value() {
                text = message_text(&v);
            }
        }
    }
    let bytes = st
        .records
        .iter()
        .map(|&i| s.records[i].raw().len() + s.records[i].term.bytes().len())
        .sum();
    StepRow {
        number: st.number,
        turn: turns[st.turn].number,
        uuid: h.uuid().unwrap_or_default().to_string(),
        time: h.timestamp().map(str::to_string),
        tools,
        text,
        records: st.records.len(),
        bytes,
    }
}

/// One item of a turn or step list: a number, a closed range or an open one (`A..`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First number (1-based).
    pub from: usize,
    /// Last number, inclusive; `None` for an open end (`A..`).
    pub to: Option<usize>,
}

/// A turn or step list that does not parse: the message says what is wrong and how to write
/// one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(pub String);

/// The one grammar of turn and step numbers, for `history`, `summarize-range --turns` and
/// `--steps`: comma-separated items, each `N`, `A-B`, `A..B` or `A..=B` (inclusive), `A..`
/// (to the end) or `..B` (from the first). Numbers start at 1. `what` names the unit in
/// messages (`turn`, `step`). Items that are not numbers are returned by `other`, which
/// either accepts them (history takes uuids) or refuses them with its message.
pub fn parse_list<T>(
    spec: &str,
    what: &str,
    mut other: impl FnMut(&str) -> Option<T>,
) -> std::result::Result<Vec<Result<Span, T>>, RangeError> {
    let bad = |item: &str| {
        RangeError(format!(
            "`{item}` is not a {what} number or range; write N, A-B, A..B, A.., ..B or a list such as 3,5-7"
        ))
    };
    let num = |item: &str, n: &str| -> std::result::Result<usize, RangeError> {
        let n: usize = n.trim().parse().map_err(|_| bad(item))?;
        if n == 0 {
            return Err(RangeError(format!("{what}s are numbered from 1")));
        }
        Ok(n)
    };
    let digits = |s: &str| !s.trim().is_empty() && s.trim().bytes().all(|b| b.is_ascii_digit());
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let span = if let Some((a, b)) = item.split_once("..") {
            let b = b.strip_prefix('=').unwrap_or(b);
            if !(a.trim().is_empty() || digits(a)) || !(b.trim().is_empty() || digits(b)) {
                match other(item) {
                    Some(t) => {
                        out.push(Err(t));
                        continue;
                    }
                    None => return Err(bad(item)),
                }
            }
            let from = if a.trim().is_empty() {
                1
            } else {
                num(item, a)?
            };
            let to = if b.trim().is_empty() {
                None
            } else {
                Some(num(item, b)?)
            };
            Span { from, to }
        } else if let Some((a, b)) = item.split_once('-').filter(|(a, b)| digits(a) && digits(b)) {
            Span {
                from: num(item, a)?,
                to: Some(num(item, b)?),
            }
        } else if digits(item) {
            let n = num(item, item)?;
            Span {
                from: n,
                to: Some(n),
            }
        } else {
            match other(item) {
                Some(t) => {
                    out.push(Err(t));
                    continue;
                }
                None => return Err(bad(item)),
            }
        };
        if span.to.is_some_and(|t| t < span.from) {
            return Err(RangeError(format!("`{item}` ends before it starts")));
        }
        out.push(Ok(span));
    }
    if out.is_empty() {
        return Err(RangeError(format!("no {what}s given")));
    }
    Ok(out)
}

/// One consecutive range in the grammar of [`parse_list`] (a list is accepted when its items
/// join up, e.g. `3,4-6`): `(from, to)`, `to` `None` for an open end.
pub fn parse_range(
    spec: &str,
    what: &str,
) -> std::result::Result<(usize, Option<usize>), RangeError> {
    let mut spans: Vec<Span> = parse_list(spec, what, |_| None::<()>)?
        .into_iter()
        .filter_map(|s| s.ok())
        .collect();
    spans.sort_by_key(|s| s.from);
    let mut acc = spans[0];
    for s in &spans[1..] {
        match acc.to {
            Some(t) if s.from <= t + 1 => {
                acc.to = match (acc.to, s.to) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                }
            }
            None => {}
            Some(_) => {
                return Err(RangeError(format!(
                "`{spec}` is not one consecutive range of {what}s; summarize one range at a time"
            )))
            }
        }
    }
    Ok((acc.from, acc.to))
}

/// The plain text of a record's `message.content` (string, or its text blocks joined).
pub fn message_text(v: &Value) -> String {
    match v.pointer("/message/content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Wrappers Claude Code puts around what a user typed (IDE context, hook and system notes,
/// slash-command plumbing): dropped with their content when a prompt is shown on one line.
const WRAPPERS: &[&str] = &[
    "ide_selection",
    "ide_opened_file",
    "ide_diagnostics",
    "system-reminder",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "user-prompt-submit-hook",
];

/// A prompt as a person reads it: a slash command as `/name args`, wrappers such as
/// `<command-message>` and `<ide_selection>` removed with their content.
///
/// ```
/// use cchist::transcript::turns::readable_prompt;
/// assert_eq!(
///     readable_prompt("<command-message>compact</command-message>\n<command-name>/compact</command-name>\n<command-args>keep tests</command-args>"),
///     "/compact keep tests"
/// );
/// assert_eq!(readable_prompt("<ide_selection>fn main() {}</ide_selection> why does this fail?"), "why does this fail?");
/// ```
pub fn readable_prompt(text: &str) -> String {
    let inner = |tag: &str| -> Option<&str> {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        let a = text.find(&open)? + open.len();
        let b = text[a..].find(&close)? + a;
        Some(text[a..b].trim())
    };
    if let Some(name) = inner("command-name") {
        let args = inner("command-args").unwrap_or("");
        return if args.is_empty() {
            name.to_string()
        } else {
            format!("{name} {args}")
        };
    }
    let mut out = text.to_string();
    for tag in WRAPPERS {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        while let Some(a) = out.find(&open) {
            match out[a..].find(&close) {
                Some(b) => out.replace_range(a..a + b + close.len(), " "),
                None => out.replace_range(a..a + open.len(), " "),
            }
        }
    }
    out.trim().to_string()
}

/// `s` on one line, cut to `max` characters with an ellipsis.
pub fn shorten(s: &str, max: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max {
        return one;
    }
    let mut cut: String = one.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A readable rendering of one turn: each conversational block, tool calls with their input,
/// tool results, one line for each bookkeeping record, and a `── step N` line where each
/// step opens.
pub fn render_turn(s: &mut Session<'_>, t: &Turn) -> String {
    let mut out = String::new();
    let head = row(s, t, None, None);
    out += &format!(
        "── turn {} · {} · {}\n",
        head.number,
        head.time.as_deref().unwrap_or("?"),
        head.uuid
    );
    // Step numbers as `history list --steps` prints them, marked where each step opens.
    let turns = s.turns();
    let starts: std::collections::HashMap<usize, usize> = s
        .steps(&turns)
        .into_iter()
        .map(|st| (st.records[0], st.number))
        .collect();
    for &i in &t.records {
        if let Some(n) = starts.get(&i) {
            out += &format!("── step {n}\n");
        }
        let rec = &mut s.records[i];
        let line = rec.line;
        let Ok(v) = rec.value() else {
            out += &format!("[line {line}: not a JSON record]\n");
            continue;
        };
        render_record(v, &mut out);
    }
    out
}

fn render_record(v: &Value, out: &mut String) {
    let ty = v.get("type").and_then(Value::as_str).unwrap_or("?");
    let side = if v.get("isSidechain") == Some(&Value::Bool(true)) {
        " (sidechain)"
    } else {
        ""
    };
    match (ty, v.pointer("/message/content")) {
        ("user" | "assistant", Some(Value::String(text))) => {
            let meta = if v.get("isMeta") == Some(&Value::Bool(true)) {
                " meta"
            } else {
                ""
            };
            *out += &format!("[{ty}{meta}{side}] {text}\n");
        }
        ("user" | "assistant", Some(Value::Array(blocks))) => {
            for b in blocks {
                render_block(ty, side, b, out);
            }
        }
        _ => {
            let sub = v
                .get("subtype")
                .or_else(|| v.pointer("/attachment/type"))
                .and_then(Value::as_str)
                .map(|s| format!("/{s}"))
                .unwrap_or_default();
            *out += &format!("[{ty}{sub}{side}]\n");
        }
    }
}

fn render_block(ty: &str, side: &str, b: &Value, out: &mut String) {
    let kind = b.get("type").and_then(Value::as_str).unwrap_or("?");
    match kind {
        "text" => *out += &format!("[{ty}{side}] {}\n", b["text"].as_str().unwrap_or("")),
        "thinking" => {
            *out += &format!(
                "[{ty} thinking{side}] {}\n",
                b["thinking"].as_str().unwrap_or("")
            )
        }
        "tool_use" => {
            *out += &format!(
                "[{ty} → {}{side}] {}\n",
                b["name"].as_str().unwrap_or("?"),
                b.get("input").map(|i| i.to_string()).unwrap_or_default()
            )
        }
        "tool_result" => {
            let err = if b.get("is_error") == Some(&Value::Bool(true)) {
                " error"
            } else {
                ""
            };
            let text = match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(|p| {
                        p.get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("[non-text part]")
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => String::new(),
            };
            *out += &format!(
                "[tool_result {}{err}{side}] {text}\n",
                b["tool_use_id"].as_str().unwrap_or("?")
            );
        }
        other => *out += &format!("[{ty} {other} block{side}]\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_and_list_number_steps() {
        use crate::testkit::{prompt, tool_call, tool_result};
        let text = prompt("p", None, "go")
            + &tool_call("a", "p", "m1", "t", "Read")
            + &tool_result("r", "a", "t", "x")
            + r#"{"type":"assistant","uuid":"b","parentUuid":"r","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}"#;
        let mut s = Session::new(
            crate::io::framing::lines(text.as_bytes(), 1)
                .map(crate::transcript::record::Record::from_line)
                .collect(),
        );
        let rows = step_rows(&mut s);
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].number, rows[0].turn, rows[0].records), (1, 1, 2));
        assert_eq!(rows[0].tools, ["Read"]);
        assert_eq!(
            (rows[1].uuid.as_str(), rows[1].text.as_str()),
            ("b", "done")
        );
        let t = s.turns()[0].clone();
        let shown = render_turn(&mut s, &t);
        let marks: Vec<&str> = shown.lines().filter(|l| l.starts_with("── step")).collect();
        assert_eq!(marks, ["── step 1", "── step 2"]);
        assert!(shown.find("── step 2").unwrap() > shown.find("tool_result t").unwrap());
    }

    #[test]
    fn one_grammar_for_turns_and_steps() {
        let r = |s: &str| parse_range(s, "turn");
        for (spec, want) in [
            ("3", (3, Some(3))),
            ("3-7", (3, Some(7))),
            ("3..7", (3, Some(7))),
            ("3..=7", (3, Some(7))),
            ("..4", (1, Some(4))),
            ("5..", (5, None)),
            ("3,4-6", (3, Some(6))),
            ("5-7,3..4", (3, Some(7))),
        ] {
            assert_eq!(r(spec), Ok(want), "{spec}");
        }
        for bad in ["4..2", "0..2", "x", "3,5-7", "7-3", ""] {
            assert!(r(bad).is_err(), "{bad}");
        }
        let list = parse_list("3,5-7,abc", "turn", |s| Some(s.to_string())).unwrap();
        assert_eq!(
            list,
            vec![
                Ok(Span {
                    from: 3,
                    to: Some(3)
                }),
                Ok(Span {
                    from: 5,
                    to: Some(7)
                }),
                Err("abc".to_string())
            ]
        );
        assert!(parse_list("3,abc", "step", |_| None::<()>).is_err());
    }

    #[test]
    fn shorten_cuts_on_characters() {
        assert_eq!(shorten("a  b\nc", 10), "a b c");
        assert_eq!(shorten("ééééé", 3), "éé…");
    }
}
