//! Turn CRUD judged by the real Claude Code CLI: after `history delete|replace|insert`,
//! `apply`, `undo` and `--fork`, the CLI rebuilds exactly the conversation we intended.
//!
//! The expected conversation is derived from the CLI's own rebuild of the untouched session:
//! split into turns at the user messages that carry each prompt, then the same edit applied to
//! that list of turns.

use serde_json::{json, Value};

use crate::common::{corpus, ok};
use crate::support::*;

const SESSION: &str = "generated/p05_long.jsonl";

/// `cchist ARGS` on the sandbox's config folder, which must succeed.
fn cchist(sandbox: &Sandbox, args: &[&str]) -> std::process::Output {
    ok(crate::common::cchist()
        .args(args)
        .env("CLAUDE_CONFIG_DIR", sandbox.config_dir()))
}

/// A sandbox holding p05 (12 turns, "Step N: …") with an old mtime, so it does not look live.
fn sandbox_with_session() -> Option<(Sandbox, String)> {
    claude_bin()?;
    let sb = Sandbox::new();
    let sid = sb.install(&corpus(SESSION));
    crate::common::age(&sb.session_file(&sid), 3600);
    Some((sb, sid))
}

/// The conversation the CLI rebuilds from the untouched session, in turns: `[0]` is whatever
/// precedes the first prompt, then one entry per turn (its prompt message and what follows).
fn original_turns() -> Vec<Vec<Value>> {
    let sb = Sandbox::new();
    let sid = sb.install(&corpus(SESSION));
    let probe = sb.resume(&sid, &[]).expect("CLI available");
    let msgs = probe.expect_ok("original p05").to_vec();
    split_turns(&msgs)
}

fn is_prompt_message(m: &Value, n: usize) -> bool {
    m["role"] == "user" && text_of(m).contains(&format!("Step {n}: implement"))
}

fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn split_turns(msgs: &[Value]) -> Vec<Vec<Value>> {
    let mut turns: Vec<Vec<Value>> = vec![Vec::new()];
    let mut next = 1;
    for m in msgs {
        if is_prompt_message(m, next) {
            turns.push(Vec::new());
            next += 1;
        }
        turns.last_mut().unwrap().push(m.clone());
    }
    assert_eq!(turns.len(), 13, "p05 has 12 turns");
    turns
}

/// The probe prompt and fresh context the CLI appends after the last turn: the tail of the
/// last turn after its final assistant message.
fn join(parts: Vec<Vec<Value>>) -> Vec<Value> {
    parts.into_iter().flatten().collect()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "text", "text": text}]})
}

/// What the API makes of a message list: consecutive messages of one role are one message,
/// and text blocks are compared without surrounding whitespace (the CLI joins a string
/// message into the next one as blocks).
fn as_api_sees_it(msgs: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in msgs {
        let blocks: Vec<Value> = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        let blocks: Vec<Value> = blocks
            .into_iter()
            .map(|mut b| {
                if let Some(t) = b.get("text").and_then(Value::as_str) {
                    b["text"] = Value::from(t.trim());
                }
                b
            })
            .collect();
        match out.last_mut() {
            Some(prev) if prev["role"] == m["role"] => {
                prev["content"].as_array_mut().unwrap().extend(blocks)
            }
            _ => {
                let mut m = m.clone();
                m["content"] = Value::Array(blocks);
                out.push(m);
            }
        }
    }
    out
}

/// Resume the edited session and compare with `expected`.
fn check(sb: &Sandbox, sid: &str, expected: &[Value], what: &str) -> Vec<Value> {
    let probe = sb.resume(sid, &[]).expect("CLI available");
    let got = probe.expect_ok(what).to_vec();
    if let Some(diff) = conversation_diff(&as_api_sees_it(&got), &as_api_sees_it(expected)) {
        panic!(
            "{what}: the CLI rebuilt another conversation than intended:\n{diff}\n{:#?}",
            outline(&got)
        );
    }
    got
}

#[test]
fn delete_turns_resumes_without_them() {
    let Some((sb, sid)) = sandbox_with_session() else {
        return;
    };
    let t = original_turns();
    cchist(
        &sb,
        &["history", "delete", "--session", &sid, "--turns", "3,5-6"],
    );
    let expected = join(
        t.iter()
            .enumerate()
            .filter(|(i, _)| ![3, 5, 6].contains(i))
            .map(|(_, v)| v.clone())
            .collect(),
    );
    let got = check(&sb, &sid, &expected, "delete 3,5-6");
    assert_turns_absent(&got, &["Step 3:", "Step 5:", "Step 6:"]);
}

/// Runs `history VERB --session SID ARGS` on a sandboxed p05 and checks the CLI then rebuilds
/// turns 0 and 1, the user message `text`, and the turns from `rest` on, `text` present.
/// `None` without a CLI.
fn message_after_turn_1(verb: &str, args: &[&str], text: &str, rest: usize) -> Option<Vec<Value>> {
    let (sb, sid) = sandbox_with_session()?;
    let t = original_turns();
    let mut cmd = vec!["history", verb, "--session", &sid];
    cmd.extend_from_slice(args);
    cchist(&sb, &cmd);
    let mut parts = vec![t[0].clone(), t[1].clone(), vec![user(text)]];
    parts.extend(t[rest..].iter().cloned());
    let what = format!("{verb} {}", args.join(" "));
    let got = check(&sb, &sid, &join(parts), &what);
    assert_summary_present(&got, text);
    Some(got)
}

#[test]
fn replace_turns_resumes_with_the_replacement_in_place() {
    let s = "Summary: steps 2 to 4 built the cache, the logging and the config loader.";
    if let Some(got) = message_after_turn_1("replace", &["--turns", "2-4", "--with", s], s, 5) {
        assert_turns_absent(&got, &["Step 2:", "Step 3:", "Step 4:"]);
    }
}

#[test]
fn insert_after_turn_resumes_with_the_message_there() {
    let c = "Let's focus on the cache next.";
    message_after_turn_1("insert", &["--after", "1", "--content", c], c, 2);
}

#[test]
fn apply_document_mixing_all_operations() {
    let Some((sb, sid)) = sandbox_with_session() else {
        return;
    };
    let t = original_turns();
    let rows: Value = serde_json::from_slice(
        &cchist(&sb, &["history", "list", "--json", "--session", &sid]).stdout,
    )
    .unwrap();
    let uuid = |n: usize| rows[n - 1]["uuid"].as_str().unwrap().to_string();
    let summary = "Summary: steps 2 and 3 added the cache and the logging.";
    let focus = "Let's focus on the metrics.";
    let doc = json!({"action": "modify_history", "operations": [
        {"type": "replace", "turns": [uuid(2), uuid(3)], "with": {"type": "assistant", "content": summary, "uuid": "summary-1"}},
        {"type": "delete", "turns": [uuid(5)]},
        {"type": "insert", "after": uuid(7), "content": {"type": "user", "content": focus, "uuid": "insert-1"}}
    ]});
    let ops = sb.root().join("ops.json");
    std::fs::write(&ops, doc.to_string()).unwrap();
    let out = cchist(&sb, &["apply", ops.to_str().unwrap(), "--session", &sid]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("summary-1 -> ") && err.contains("insert-1 -> "),
        "labels are mapped and printed: {err}"
    );
    let mut parts = vec![
        t[0].clone(),
        t[1].clone(),
        vec![assistant(summary)],
        t[4].clone(),
        t[6].clone(),
        t[7].clone(),
        vec![user(focus)],
    ];
    parts.extend(t[8..].iter().cloned());
    let got = check(&sb, &sid, &join(parts), "apply document");
    assert_summary_present(&got, summary);
    assert_turns_absent(&got, &["Step 2:", "Step 3:", "Step 5:"]);
}

#[test]
fn invalid_document_changes_nothing() {
    let Some((sb, sid)) = sandbox_with_session() else {
        return;
    };
    let before = std::fs::read(sb.session_file(&sid)).unwrap();
    let doc = json!({"action": "modify_history", "operations": [
        {"type": "delete", "turns": [2]},
        {"type": "delete", "turns": ["no-such-uuid"]}
    ]});
    let ops = sb.root().join("ops.json");
    std::fs::write(&ops, doc.to_string()).unwrap();
    let out = crate::common::cchist()
        .args(["apply", ops.to_str().unwrap(), "--session", &sid])
        .env("CLAUDE_CONFIG_DIR", sb.config_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("operation 1") && err.contains("turns[0]"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(sb.session_file(&sid)).unwrap(),
        before,
        "all or nothing"
    );
}

#[test]
fn undo_restores_byte_identical_content() {
    let Some((sb, sid)) = sandbox_with_session() else {
        return;
    };
    let before = std::fs::read(sb.session_file(&sid)).unwrap();
    cchist(
        &sb,
        &["history", "delete", "--session", &sid, "--turns", "4"],
    );
    cchist(
        &sb,
        &[
            "history",
            "insert",
            "--session",
            &sid,
            "--after",
            "2",
            "--content",
            "x",
        ],
    );
    assert_ne!(std::fs::read(sb.session_file(&sid)).unwrap(), before);
    cchist(&sb, &["undo", "--session", &sid]);
    cchist(&sb, &["undo", "--session", &sid]);
    assert_eq!(std::fs::read(sb.session_file(&sid)).unwrap(), before);
    let leftovers: Vec<_> = std::fs::read_dir(sb.project_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("cchist"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn fork_of_a_live_session_leaves_it_untouched_and_resumes_separately() {
    let Some((sb, sid)) = sandbox_with_session() else {
        return;
    };
    let t = original_turns();
    let file = sb.session_file(&sid);
    // Written just now: looks live. An in-place edit is refused...
    crate::common::set_mtime(&file, std::time::SystemTime::now());
    let before = std::fs::read(&file).unwrap();
    let refused = crate::common::cchist()
        .args(["history", "delete", "--session", &sid, "--turns", "2"])
        .env("CLAUDE_CONFIG_DIR", sb.config_dir())
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--fork"));
    // ...but --fork writes a new session.
    let out = cchist(
        &sb,
        &[
            "history",
            "delete",
            "--session",
            &sid,
            "--turns",
            "2",
            "--fork",
        ],
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the original is untouched"
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let new_id = line
        .trim()
        .split_once("claude --resume ")
        .expect("prints the resume line")
        .1
        .to_string();
    assert_ne!(new_id, sid);
    let mut parts = vec![t[0].clone(), t[1].clone()];
    parts.extend(t[3..].iter().cloned());
    let probe = sb.resume(&new_id, &[]).expect("CLI available");
    let got = probe.expect_ok("forked session").to_vec();
    if let Some(diff) = conversation_diff(&as_api_sees_it(&got), &as_api_sees_it(&join(parts))) {
        panic!("fork: {diff}");
    }
    assert_eq!(
        probe.reported_session_id().as_deref(),
        Some(new_id.as_str()),
        "the CLI knows it as its own session"
    );
    // The original still resumes with all 12 turns.
    let orig = sb.resume(&sid, &[]).expect("CLI available");
    assert!(conversation_diff(orig.expect_ok("original after fork"), &join(t)).is_none());
}
