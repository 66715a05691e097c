//! Redaction keeps a session's structure (issue #25, adversarial pass): a known value that is
//! one of Claude Code's own words or the session's id never rewrites the fields that hold
//! them, and secrets inside ids become distinct derived ids, so every reference still meets.

use serde_json::{json, Value};

use crate::common::{cchist, ok};

fn token(seed: u64) -> String {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let body: String = (0..36)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALNUM[(x % ALNUM.len() as u64) as usize] as char
        })
        .collect();
    format!("ghp_{body}")
}

fn records(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

/// A `.env` the session read says `SECRET_ROLE=assistant`, `API_TOKEN=<the session's id>`,
/// `SECRET_MODEL=<the model>`: each value is a known secret, yet no record's `type`, `role`,
/// `model` or `sessionId` changes (they were all replaced by a placeholder, and `validate`
/// called the file valid).
#[test]
fn known_values_never_rewrite_claude_codes_own_fields() {
    let sid = "11111111-2222-4333-8444-555555555555";
    let model = "claude-opus-4-6";
    let env = format!("SECRET_ROLE=assistant\nAPI_TOKEN={sid}\nSECRET_MODEL={model}\n");
    let u = |n: u32| format!("aaaaaaaa-0000-4000-8000-00000000000{n}");
    let recs = [
        json!({"parentUuid": null, "type": "user", "uuid": u(1), "sessionId": sid,
            "message": {"role": "user", "content": "read env"}}),
        json!({"parentUuid": u(1), "type": "assistant", "uuid": u(2), "sessionId": sid,
            "message": {"id": "m1", "model": model, "role": "assistant", "type": "message",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
                    "input": {"file_path": "/tmp/proj/.env"}}]}}),
        json!({"parentUuid": u(2), "type": "user", "uuid": u(3), "sessionId": sid,
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": env}]},
            "toolUseResult": {"type": "text", "file": {"filePath": "/tmp/proj/.env", "content": env}}}),
        json!({"parentUuid": u(3), "type": "assistant", "uuid": u(4), "sessionId": sid,
            "message": {"id": "m2", "model": model, "role": "assistant", "type": "message",
                "content": [{"type": "text", "text": "done"}]}}),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{sid}.jsonl"));
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&file, &text).unwrap();
    let out = ok(cchist().args(["run", "-p", "scrub"]).arg(&file));
    let got = records(&out.stdout);
    assert_eq!(got.len(), recs.len());
    for (a, b) in recs.iter().zip(&got) {
        for ptr in [
            "/type",
            "/sessionId",
            "/message/role",
            "/message/model",
            "/message/type",
        ] {
            assert_eq!(a.pointer(ptr), b.pointer(ptr), "{ptr} changed: {b}");
        }
    }
    // The values themselves are gone from the file's text.
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(!out.contains("SECRET_ROLE=assistant"), "{out}");
}

/// Distinct secrets inside ids (a record's `uuid`, a `tool_use` id) became one placeholder:
/// duplicate uuids, records their own parents, duplicate tool ids. Each now becomes a distinct
/// id of its kind derived from it, the same wherever it is referred to.
#[test]
fn secrets_in_ids_become_distinct_ids_that_still_meet() {
    let (t1, t2, t3) = (token(1), token(2), token(3));
    let recs = [
        json!({"parentUuid": null, "type": "user", "uuid": t1, "sessionId": "s",
            "message": {"role": "user", "content": "go"}}),
        json!({"parentUuid": t1, "type": "assistant", "uuid": t2, "sessionId": "s",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use",
                "id": t3, "name": "Bash", "input": {"command": "ls"}}]}}),
        json!({"parentUuid": t2, "type": "user", "uuid": "u3", "sessionId": "s",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": t3, "content": "ok"}]}}),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&file, &text).unwrap();
    let out = ok(cchist().arg("redact").arg(&file));
    let s = String::from_utf8_lossy(&out.stdout).into_owned();
    for t in [&t1, &t2, &t3] {
        assert!(!s.contains(&t[4..20]), "a secret id survives: {s}");
    }
    let got = records(&out.stdout);
    let uuid = |i: usize| got[i]["uuid"].as_str().unwrap().to_string();
    assert_ne!(uuid(0), uuid(1), "distinct ids stay distinct");
    for i in 0..2 {
        assert!(
            uuid::Uuid::parse_str(&uuid(i)).is_ok(),
            "a uuid field holds a uuid: {}",
            uuid(i)
        );
    }
    assert_eq!(
        got[1]["parentUuid"].as_str().unwrap(),
        uuid(0),
        "the child still meets its parent"
    );
    assert_eq!(got[2]["parentUuid"].as_str().unwrap(), uuid(1));
    let call = got[1]["message"]["content"][0]["id"].as_str().unwrap();
    let answer = got[2]["message"]["content"][0]["tool_use_id"]
        .as_str()
        .unwrap();
    assert_eq!(call, answer, "the tool result still meets its call");
    assert!(
        call.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        "a valid tool id: {call}"
    );
    // A second run changes nothing.
    let f2 = dir.path().join("s2.jsonl");
    std::fs::write(&f2, &out.stdout).unwrap();
    let again = ok(cchist().arg("redact").arg(&f2));
    assert_eq!(again.stdout, out.stdout);
}

/// A session of `turns` turns (user prompt, assistant answer), chained.
fn session(turns: usize) -> String {
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for t in 0..turns {
        let (u, a) = (format!("u{t}"), format!("a{t}"));
        out += &crate::common::message_line(
            "user",
            &u,
            parent.as_deref(),
            &format!("prompt {t}"),
            "s",
        );
        out += &crate::common::message_line("assistant", &a, Some(&u), "s", &format!("answer {t}"));
        parent = Some(a);
    }
    out
}

/// Issue #25: a stage after `redact` that writes text (a summary command's answer) used to
/// write it unredacted; the Stop hook's fork ran its stages in that order and said "redacted".
/// What such a stage adds goes through the redact stage again, whatever the order.
#[test]
fn text_a_stage_adds_after_redact_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let secret = token(9);
    let reply = dir.path().join("reply.txt");
    std::fs::write(&reply, format!("Summary: deployed with token {secret}")).unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "version = 1\n[[stage]]\ntype = \"redact\"\n[[stage]]\ntype = \"summarize-range\"\nturns = \"1..2\"\ncommand = \"cat >/dev/null; cat {}\"\n",
            reply.display()
        ),
    )
    .unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, session(4)).unwrap();
    let out = ok(cchist().arg("run").arg("-p").arg(&pipeline).arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("Summary: deployed with token [REDACTED:"),
        "{text}"
    );
    assert!(!text.contains(&secret[4..20]), "{text}");
}

/// Issue #25: `[drop-tool-noise] max_tool_output` before `redact` cut a token in two (24 of
/// its 40 characters were written, unmatched). Redaction runs before any cut, whatever the
/// order of the pipeline file.
#[test]
fn a_cap_before_redact_never_cuts_a_secret_in_two() {
    let dir = tempfile::tempdir().unwrap();
    let secret = token(11);
    let output = format!("{}token {secret} {}", "x".repeat(66), "y".repeat(3000));
    let recs = [
        json!({"parentUuid": null, "type": "user", "uuid": "u1", "sessionId": "s",
            "message": {"role": "user", "content": "show env"}}),
        json!({"parentUuid": "u1", "type": "assistant", "uuid": "a1", "sessionId": "s",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use",
                "id": "toolu_1", "name": "Bash", "input": {"command": "env"}}]}}),
        json!({"parentUuid": "a1", "type": "user", "uuid": "u2", "sessionId": "s",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": output}]}}),
    ];
    let file = dir.path().join("s.jsonl");
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&file, &text).unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        "version = 1\n[[stage]]\ntype = \"drop-tool-noise\"\nmax_tool_output = 256\n[[stage]]\ntype = \"redact\"\n",
    )
    .unwrap();
    let out = ok(cchist().arg("run").arg("-p").arg(&pipeline).arg(&file));
    let text = String::from_utf8(out.stdout).unwrap();
    for w in secret.as_bytes().windows(8) {
        let w = std::str::from_utf8(w).unwrap();
        assert!(
            !text.contains(w),
            "part of the secret ({w}) survives:\n{text}"
        );
    }
    assert!(
        text.contains("removed by cchist"),
        "the output is still capped: {text}"
    );
}

/// Issue #25, item 12: a token percent-encoded in a URL (`ghp%5F…`) or cut into two string
/// literals that code concatenates (`"ghp_ab" + "cd…"`) passed `check` and `redact`. Each is
/// found in the form a reader sees; a URL with nothing secret in it keeps its encoding.
#[test]
fn percent_encoded_and_concatenated_tokens_are_found_and_redacted() {
    let t1 = token(21);
    let t2 = token(22);
    let lines = [
        json!({"type": "user", "uuid": "u1", "message": {"role": "user",
            "content": format!("https://x.io/cb?token%3D{}", t1.replace('_', "%5F"))}})
        .to_string(),
        json!({"type": "user", "uuid": "u2", "message": {"role": "user",
            "content": format!("t = \"{}\" + \"{}\"", &t2[..20], &t2[20..])}})
        .to_string(),
        format!("const T = '{}' + '{}';", &t1[..12], &t1[12..]),
        json!({"type": "user", "uuid": "u4", "message": {"role": "user",
            "content": "https://x.io/search?q=a%2Fb%3Dc and \"a\" + \"b\""}})
        .to_string(),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    let found = crate::common::check_finding_lines(&file);
    for line in 1..=3 {
        assert!(
            found.contains(&line),
            "no finding on line {line}: {found:?}"
        );
    }
    let out = ok(cchist().arg("redact").arg(&file));
    let out = String::from_utf8(out.stdout).unwrap();
    for t in [&t1, &t2] {
        for part in [&t[4..16], &t[24..36]] {
            assert!(!out.contains(part), "{part} survives:\n{out}");
        }
    }
    assert_eq!(
        out.lines().nth(3),
        Some(lines[3].as_str()),
        "kept byte for byte"
    );
}

/// Second adversarial pass: a known value that is one of the names Claude Code writes
/// (`SECRET_KEY=parentUuid` in a prompt, `API_TOKEN=tool_use_id` in a `.env`) renamed that key
/// in every record, and the chain was gone. Keys keep their names; the values are never known.
#[test]
fn known_values_never_rename_claude_codes_keys() {
    let recs = [
        json!({"parentUuid": null, "type": "user", "uuid": "u1", "sessionId": "s",
            "message": {"role": "user", "content": "my config: SECRET_KEY=parentUuid"}}),
        json!({"parentUuid": "u1", "type": "assistant", "uuid": "a1", "sessionId": "s",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use",
                "id": "toolu_1", "name": "Read", "input": {"file_path": "/p/.env"}}]}}),
        json!({"parentUuid": "a1", "type": "user", "uuid": "u2", "sessionId": "s",
            "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": "toolu_1", "content": "API_TOKEN=tool_use_id\nSECRET=isSidechain\n"}]},
            "toolUseResult": {"type": "text", "file": {"filePath": "/p/.env",
                "content": "API_TOKEN=tool_use_id\nSECRET=isSidechain\n"}}}),
    ];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let text: String = recs.iter().map(|r| r.to_string() + "\n").collect();
    std::fs::write(&file, &text).unwrap();
    let out = ok(cchist().args(["run", "-p", "scrub"]).arg(&file));
    let got = records(&out.stdout);
    for (a, b) in recs.iter().zip(&got) {
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(a), keys(b), "{b}");
        assert_eq!(a["parentUuid"], b["parentUuid"]);
    }
    assert_eq!(got[2]["message"]["content"][0]["tool_use_id"], "toolu_1");
}

/// Second adversarial pass: a string holding one ordinary token was rewritten whole in the
/// form a reader sees (`"foo" + "bar"` joined, `%2F` decoded into a new query parameter, an
/// emoji's joiners dropped). That form is taken only when it shows more secrets.
#[test]
fn an_ordinary_token_leaves_the_rest_of_its_string_as_written() {
    let t = token(31);
    let code = format!(
        "a = \"foo\" + \"bar\"\nurl = \"https://x.io/login?next=%2Fhome%3Fq%3D1\"\nfam = \"\u{1F468}\u{200D}\u{1F469}\"  # co\u{AD}operate\ntoken = \"{t}\""
    );
    let rec = json!({"type": "user", "uuid": "u1", "message": {"role": "user", "content": code}});
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, rec.to_string() + "\n").unwrap();
    let out = ok(cchist().arg("redact").arg(&file));
    let got = records(&out.stdout);
    let want = code.replace(&t, "[REDACTED:github-pat]");
    assert_eq!(got[0]["message"]["content"].as_str().unwrap(), want);
}

/// Second adversarial pass: the Stop hook's fork runs `summarize-range` before the pipeline's
/// `redact`, so a summary restating a password of the turns it replaced was written raw (the
/// turns that showed it in context were gone before redact read them). Redaction runs before
/// any stage that removes records, whatever the order.
#[test]
fn a_summary_restating_a_removed_secret_is_redacted_whatever_the_order() {
    let dir = tempfile::tempdir().unwrap();
    let password = format!("Qw7{}", &token(41)[4..24]);
    let reply = dir.path().join("reply.txt");
    std::fs::write(
        &reply,
        format!("Summary: connected with password {password}"),
    )
    .unwrap();
    let pipeline = dir.path().join("p.toml");
    std::fs::write(
        &pipeline,
        format!(
            "version = 1\n[[stage]]\ntype = \"summarize-range\"\nturns = \"1..2\"\ncommand = \"cat >/dev/null; cat {}\"\n[[stage]]\ntype = \"redact\"\n",
            reply.display()
        ),
    )
    .unwrap();
    let mut text = String::new();
    let mut parent: Option<String> = None;
    for t in 0..4 {
        let (u, a) = (format!("u{t}"), format!("a{t}"));
        let prompt = if t == 0 {
            format!("export DB_PASSWORD={password}")
        } else {
            format!("prompt {t}")
        };
        text += &crate::common::message_line("user", &u, parent.as_deref(), "s", &prompt);
        text += &crate::common::message_line("assistant", &a, Some(&u), "s", "ok");
        parent = Some(a);
    }
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, text).unwrap();
    let out = ok(cchist().arg("run").arg("-p").arg(&pipeline).arg(&file));
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.contains("Summary: connected with password [REDACTED:"),
        "{out}"
    );
    assert!(!out.contains(&password), "{out}");
}
