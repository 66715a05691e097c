//! `cchist context`: the count is the CLI's (the last real assistant record's four usage
//! fields, exactly) on every corpus session, and the report says what it is made of.

use crate::common;
use serde_json::Value;

/// The four-field usage sum of the last assistant record the CLI counts: on the chain that
/// ends at the newest message (a rewound session's abandoned branch is not in the
/// conversation), after the last compaction, not a sidechain, not the `<synthetic>` error
/// record, with a `usage`. Written apart from the library on purpose.
fn last_usage_sum(path: &std::path::Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect();
    let by_uuid: std::collections::HashMap<&str, usize> = recs
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((v["uuid"].as_str()?, i)))
        .rev()
        .collect();
    let leaf = recs.iter().rposition(|v| {
        (v["type"] == "user" || v["type"] == "assistant") && v["isSidechain"] != true
    })?;
    let mut chain = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut cur = Some(leaf);
    while let Some(i) = cur.filter(|i| seen.insert(*i)) {
        chain.push(i);
        let v = &recs[i];
        let parent = v["parentUuid"].as_str().or(v["logicalParentUuid"].as_str());
        cur = parent.and_then(|p| by_uuid.get(p).copied());
    }
    chain
        .iter()
        .map(|&i| &recs[i])
        .take_while(|v| v["subtype"] != "compact_boundary")
        .filter(|v| v["type"] == "assistant" && v["isSidechain"] != true)
        .filter(|v| v["message"]["model"] != "<synthetic>")
        .find_map(|v| {
            let u = v["message"].get("usage")?.as_object()?.clone();
            let f = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            Some(
                f("input_tokens")
                    + f("cache_read_input_tokens")
                    + f("cache_creation_input_tokens")
                    + f("output_tokens"),
            )
        })
}

#[test]
#[ignore = "slow: every corpus session"]
fn slow_tokens_are_the_last_usage_sum_on_every_corpus_session() {
    let mut files = common::main_sessions("real");
    files.extend(common::main_sessions("generated"));
    assert!(files.len() >= common::own_corpus_len("real").min(3));
    let mut with_usage = 0;
    for f in &files {
        let out = common::stdout_ok(&["context".as_ref(), f.as_os_str(), "--json".as_ref()]);
        let r: Value = serde_json::from_slice(&out).unwrap();
        let want = last_usage_sum(f);
        with_usage += usize::from(want.is_some_and(|w| w > 0));
        assert_eq!(
            r["usage_tokens"].as_u64(),
            Some(want.unwrap_or(0)),
            "{}",
            f.display()
        );
        assert_eq!(
            r["tokens"].as_u64().unwrap(),
            r["usage_tokens"].as_u64().unwrap() + r["estimated_after"].as_u64().unwrap(),
            "{}",
            f.display()
        );
    }
    assert!(with_usage > 0, "no corpus session carries usage");
}

/// A session written here: `n` turns whose usage grows by 20 000 each, on `model`.
fn growing(dir: &std::path::Path, model: &str, n: u64) -> std::path::PathBuf {
    let mut lines = Vec::new();
    let mut parent = Value::Null;
    for t in 1..=n {
        let u = format!("u{t}");
        let a = format!("a{t}");
        lines.push(
            serde_json::json!({"type": "user", "uuid": u, "parentUuid": parent,
            "sessionId": "s", "message": {"role": "user", "content": format!("prompt {t}")}}),
        );
        lines.push(
            serde_json::json!({"type": "assistant", "uuid": a, "parentUuid": u,
            "sessionId": "s", "message": {"id": format!("m{t}"), "model": model,
            "role": "assistant", "content": [{"type": "text", "text": "ok"}],
            "usage": {"input_tokens": 5, "cache_read_input_tokens": t * 20_000,
                      "cache_creation_input_tokens": 0, "output_tokens": 10}}}),
        );
        parent = Value::String(a);
    }
    let p = dir.join("11111111-2222-3333-4444-555555555555.jsonl");
    let text: String = lines.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(&p, text).unwrap();
    p
}

fn report(file: &std::path::Path, env: &[(&str, &str)]) -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = common::cchist();
    cmd.args(["context", "--json"]).arg(file);
    cmd.env("CLAUDE_CONFIG_DIR", home.path())
        .env("HOME", home.path());
    for v in cchist::transcript::context::ENV_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    serde_json::from_slice(&common::ok(&mut cmd).stdout).unwrap()
}

#[test]
fn outlook_follows_model_and_overrides() {
    let d = tempfile::tempdir().unwrap();
    // 7 turns: 140 015 tokens on sonnet-4-6 (threshold 167 000), growing 20 000 a turn.
    let f = growing(d.path(), "claude-sonnet-4-6", 7);
    let r = report(&f, &[]);
    assert_eq!(r["usage_tokens"], 140_015);
    assert_eq!(r["compaction"]["threshold"], 167_000);
    assert_eq!(r["standing"], "ok");
    assert_eq!(r["growth_per_turn"], 20_000);
    assert_eq!(r["turns_until_compact"], 2);
    let r = report(&f, &[("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")]);
    assert_eq!(r["compaction"]["threshold"], 90_000);
    assert_eq!(r["standing"], "compacts_now");
    assert_eq!(r["overrides"][0]["from"], "environment");
    let r = report(&f, &[("DISABLE_AUTO_COMPACT", "1")]);
    assert_eq!(r["compaction"]["state"], "off");
    assert_eq!(r["compaction"]["block"], 177_000);
    let f = growing(d.path(), "claude-sonnet-4-5", 7);
    let r = report(&f, &[]);
    assert_eq!(r["window"], "unknown");
    assert_eq!(r["compaction"]["state"], "no_known_window");
    assert!(r["percent"].is_null());
}

#[test]
fn text_report_says_when_no_window_is_known() {
    let d = tempfile::tempdir().unwrap();
    let f = growing(d.path(), "claude-haiku-4-5", 2);
    let out = common::stdout_ok(&["context".as_ref(), f.as_os_str()]);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("knows no window for claude-haiku-4-5"),
        "{text}"
    );
    assert!(text.contains("prompt is too long"), "{text}");
}

fn statusline(stdin: &Value, home: &std::path::Path) -> String {
    use std::io::Write;
    let mut cmd = common::cchist();
    cmd.arg("statusline")
        .env("CLAUDE_CONFIG_DIR", home)
        .env("HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    for v in cchist::transcript::context::ENV_VARS {
        cmd.env_remove(v);
    }
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn statusline_reads_the_end_of_a_large_session() {
    let d = tempfile::tempdir().unwrap();
    let f = growing(d.path(), "claude-sonnet-4-6", 7);
    // A few MB of old history before it: the line must come from the end alone.
    let mut text = String::new();
    let filler = "y".repeat(10_000);
    for k in 0..600 {
        text.push_str(&format!(
            r#"{{"type":"user","uuid":"old{k}","parentUuid":null,"message":{{"role":"user","content":"{filler}"}}}}"#
        ));
        text.push('\n');
    }
    text.push_str(&std::fs::read_to_string(&f).unwrap());
    std::fs::write(&f, text).unwrap();
    let input = serde_json::json!({"session_id": "s", "transcript_path": f, "cwd": d.path(),
        "model": {"id": "claude-sonnet-4-6", "display_name": "Sonnet 4.6"}});
    let line = statusline(&input, d.path());
    assert_eq!(
        line.trim(),
        "ctx 140k/200k 70% · compacts at 167k in ~2 turns"
    );
    // The running model wins over the recorded one.
    let mut on_unknown = input.clone();
    on_unknown["model"]["id"] = "claude-haiku-4-5".into();
    let line = statusline(&on_unknown, d.path());
    assert!(line.contains("no known window"), "{line}");
}

#[test]
fn statusline_install_merges_and_is_idempotent() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join("settings.json");
    std::fs::write(&settings, r#"{"theme":"dark","hooks":{}}"#).unwrap();
    let install = || {
        let mut cmd = common::cchist();
        cmd.args(["statusline", "install", "--exe"])
            .arg(common::bin())
            .env("CLAUDE_CONFIG_DIR", home.path());
        common::ok(&mut cmd)
    };
    install();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(doc["theme"], "dark");
    assert_eq!(doc["statusLine"]["type"], "command");
    assert!(doc["statusLine"]["command"]
        .as_str()
        .unwrap()
        .ends_with(" statusline"));
    let before = std::fs::read(&settings).unwrap();
    let out = install();
    assert!(String::from_utf8_lossy(&out.stderr).contains("already installed"));
    assert_eq!(std::fs::read(&settings).unwrap(), before);
    // Another tool's status line is not replaced without --force.
    std::fs::write(
        &settings,
        r#"{"statusLine":{"type":"command","command":"other-tool"}}"#,
    )
    .unwrap();
    let mut cmd = common::cchist();
    cmd.args(["statusline", "install", "--exe"])
        .arg(common::bin())
        .env("CLAUDE_CONFIG_DIR", home.path());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(std::fs::read_to_string(&settings)
        .unwrap()
        .contains("other-tool"));
    // Nor is one of the same shape, `<other binary> statusline`: the refusal names --force.
    std::fs::write(
        &settings,
        r#"{"statusLine":{"type":"command","command":"/usr/bin/othertool statusline"}}"#,
    )
    .unwrap();
    let mut cmd = common::cchist();
    cmd.args(["statusline", "install", "--exe"])
        .arg(common::bin())
        .env("CLAUDE_CONFIG_DIR", home.path());
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--force"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&settings)
        .unwrap()
        .contains("/usr/bin/othertool statusline"));
    // A status line of this binary under another path (a link to it) is cchist's: replaced.
    let link = home.path().join("cc");
    std::os::unix::fs::symlink(common::bin(), &link).unwrap();
    std::fs::write(
        &settings,
        json_statusline(&format!("{} statusline", link.display())),
    )
    .unwrap();
    let mut cmd = common::cchist();
    cmd.args(["statusline", "install", "--exe"])
        .arg(common::bin())
        .env("CLAUDE_CONFIG_DIR", home.path());
    common::ok(&mut cmd);
    assert!(!std::fs::read_to_string(&settings)
        .unwrap()
        .contains(&link.display().to_string()));
}

fn json_statusline(command: &str) -> String {
    serde_json::json!({"statusLine": {"type": "command", "command": command}}).to_string()
}

#[test]
fn context_says_how_many_messages_resume_reaches() {
    // u1 → a1 → u2 → a2, then a rewind: u3 answers a1 again, a3 after it. Resume rebuilds the
    // newest branch: 4 of the 6 messages.
    let d = tempfile::tempdir().unwrap();
    let rec = |ty: &str, uuid: &str, parent: Option<&str>| {
        let content = if ty == "user" {
            serde_json::json!("q")
        } else {
            serde_json::json!([{"type": "text", "text": "a"}])
        };
        serde_json::json!({"type": ty, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
            "timestamp": "2026-01-01T00:00:00Z", "isSidechain": false,
            "message": {"role": ty, "content": content}})
        .to_string()
    };
    let lines = [
        rec("user", "u1", None),
        rec("assistant", "a1", Some("u1")),
        rec("user", "u2", Some("a1")),
        rec("assistant", "a2", Some("u2")),
        rec("user", "u3", Some("a1")),
        rec("assistant", "a3", Some("u3")),
    ];
    let f = d.path().join("s.jsonl");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    let r = report(&f, &[]);
    assert_eq!(
        (r["reached_messages"].as_u64(), r["messages"].as_u64()),
        (Some(4), Some(6))
    );
    let out = common::cchist().arg("context").arg(&f).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("resume reaches 4 of 6 messages"), "{text}");
}
