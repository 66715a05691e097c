//! Issue 4 acceptance with the real Claude Code CLI: `cchist redact` on the generated
//! p01_quickstart session resumes with the full conversation, and none of its planted secrets
//! reaches the (mock) API. Skips without the CLI (fails under `CI=true`); see `support`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{cchist, corpus, ok, scenario};
use crate::support::*;

/// (secret, the placeholder `cchist redact` puts in its place), from the cc-oracle scenario.
fn planted() -> Vec<(String, &'static str)> {
    let path = scenario("p01_quickstart");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("scenario"))
        .expect("scenario JSON");
    let mut out = Vec::new();
    for line in v["files"][".env"].as_str().expect(".env").lines() {
        let (name, value) = line.split_once('=').expect("NAME=value");
        let rule = match name {
            "AWS_ACCESS_KEY_ID" => "[REDACTED:aws-access-key-id]",
            "AWS_SECRET_ACCESS_KEY" => "[REDACTED:aws-secret-access-key]",
            _ => "[REDACTED:github-pat]",
        };
        out.push((value.to_string(), rule));
    }
    for p in v["prompts"].as_array().expect("prompts") {
        for w in p["prompt"].as_str().expect("prompt").split_whitespace() {
            if w.starts_with("sk-ant-") {
                out.push((w.to_string(), "[REDACTED:anthropic-api-key]"));
            }
        }
    }
    assert_eq!(out.len(), 4);
    // The scenario's AWS pair is AWS's documented example: a look-alike that redaction keeps
    // as it is (issue #14).
    out.retain(|(v, _)| !v.ends_with("EXAMPLE") && !v.ends_with("EXAMPLEKEY"));
    out
}

/// `cchist redact INPUT > DIR/<same name>` (the session id stays the same).
fn redact_into(input: &Path, dir: &Path) -> PathBuf {
    let out = ok(cchist().arg("redact").arg(input));
    let dest = dir.join(input.file_name().expect("file name"));
    std::fs::write(&dest, &out.stdout).expect("write");
    dest
}

/// Every string in `v` with each secret replaced by its placeholder.
fn replaced(v: &Value, secrets: &[(String, &str)]) -> Value {
    match v {
        Value::String(s) => {
            let mut s = s.clone();
            for (secret, ph) in secrets {
                s = s.replace(secret.as_str(), ph);
            }
            Value::String(s)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| replaced(x, secrets)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, x)| (k.clone(), replaced(x, secrets)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// p01 and the secrets its scenario planted; `None` (skip) without a CLI.
fn p01_and_secrets() -> Option<(std::path::PathBuf, Vec<(String, &'static str)>)> {
    claude_bin()?;
    Some((corpus("generated/p01_quickstart.jsonl"), planted()))
}

#[test]
fn redacted_p01_resumes_intact_and_leaks_nothing() {
    let Some((input, secrets)) = p01_and_secrets() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let redacted = redact_into(&input, tmp.path());

    let (orig, red) = resume_both(&input, &redacted);
    let before = orig.expect_ok("p01_quickstart");
    let after = red.expect_ok("redacted p01_quickstart");

    // The original really sends the secrets; the redacted file sends none of them, anywhere.
    let raw: Vec<&str> = secrets.iter().map(|(s, _)| s.as_str()).collect();
    assert!(
        raw.iter().any(|s| !occurrences(before, s).is_empty()),
        "the original conversation should carry the planted secrets"
    );
    assert_no_secret_reaches_model(after, &raw);
    for req in &red.requests {
        let body = req.body.to_string();
        for s in &raw {
            assert!(
                !body.contains(s),
                "a request to {} carries a planted secret ({}…)",
                req.path,
                &s[..4]
            );
        }
    }

    // Same conversation, turn for turn, with placeholders where the secrets were.
    let expected: Vec<Value> = before.iter().map(|m| replaced(m, &secrets)).collect();
    assert_conversation_eq(&expected, after);
    assert_summary_present(after, PROBE_PROMPT);
    note(&format!(
        "redacted p01: {} messages identical up to placeholders",
        after.len()
    ));
}

/// A thinking block holding a secret is removed whole (its signature would no longer verify);
/// its record stays, with empty content, and the CLI still rebuilds the conversation.
#[test]
fn a_removed_thinking_block_still_resumes() {
    let Some((input, secrets)) = p01_and_secrets() else {
        return;
    };
    let token = &secrets[0].0;
    let text = std::fs::read_to_string(&input).expect("read p01");
    let marker = "\"thinking\":\"Start by listing files.\"";
    assert_eq!(text.matches(marker).count(), 1, "p01 changed shape");
    let tmp = tempfile::tempdir().expect("tempdir");
    let leaky = tmp.path().join("src");
    std::fs::create_dir_all(&leaky).expect("mkdir");
    let leaky = leaky.join(input.file_name().expect("name"));
    std::fs::write(
        &leaky,
        text.replace(
            marker,
            &format!("\"thinking\":\"Start by listing files. Token {token}\""),
        ),
    )
    .expect("write");
    let redacted = redact_into(&leaky, tmp.path());
    let red_text = std::fs::read_to_string(&redacted).expect("read");
    assert!(
        !red_text.contains("Start by listing files"),
        "the thinking block should be gone"
    );

    let (orig, red) = resume_both(&input, &redacted);
    let before = orig.expect_ok("p01_quickstart");
    let after = red.expect_ok("p01 with its thinking block removed");
    assert_no_secret_reaches_model(after, &[token.as_str()]);
    // The original conversation minus that thinking block, with placeholders for the rest.
    let mut expected: Vec<Value> = before.iter().map(|m| replaced(m, &secrets)).collect();
    for m in &mut expected {
        if let Some(Value::Array(blocks)) = m.get_mut("content") {
            blocks.retain(|b| b["thinking"] != "Start by listing files.");
        }
    }
    assert_conversation_eq(&expected, after);
}
