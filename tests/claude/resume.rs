//! Resume tests against the real Claude Code CLI (issue 3).
//!
//! Each corpus case runs `cchist run --pipeline filters/identity.toml FILE` and checks that the
//! CLI rebuilds the same conversation from the output as from the input. The CLI is found or
//! installed by `support::claude_bin`; without it these tests skip (or fail under `CI=true`).
//! The mock-API tests at the bottom need no CLI.

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

use crate::common::{cchist, corpus, corpus_any, main_sessions, manifest, ok};
use crate::support::*;

/// Runs the identity pipeline on `input`; writes the output under `out_dir` with the same file
/// name (so the session id is unchanged) and copies the input's companion dir beside it.
fn cchist_identity(input: &Path, out_dir: &Path) -> PathBuf {
    let pipeline = manifest().join("filters/identity.toml");
    let out = ok(cchist()
        .arg("run")
        .arg("--pipeline")
        .arg(&pipeline)
        .arg(input));
    let dest = out_dir.join(input.file_name().expect("file name"));
    std::fs::write(&dest, &out.stdout).expect("write cchist output");
    let companion = input.with_extension("");
    if companion.is_dir() {
        copy_dir(&companion, &dest.with_extension(""), &[]);
    }
    dest
}

/// Resumes `a` and `b` concurrently.
fn resume_both(a: &Path, b: &Path) -> Option<(Probe, Probe)> {
    std::thread::scope(|s| {
        let ha = s.spawn(|| resume(a));
        let pb = resume(b);
        Some((ha.join().expect("resume thread")?, pb?))
    })
}

/// The identity pipeline must not change what Claude Code rebuilds on resume.
fn check_identity(rel: &str) {
    let Some(input) = corpus_any(rel) else {
        crate::common::skip_without_shared(&format!(
            "{rel} is only in the extended corpus, which is absent"
        ));
        return;
    };
    if claude_bin().is_none() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let output = cchist_identity(&input, tmp.path());
    let (a, b) = resume_both(&input, &output).expect("CLI available");
    let (ma, mb) = (a.expect_ok(rel), b.expect_ok("its cchist output"));
    assert!(
        ma.iter().any(|m| m["role"] == "assistant"),
        "{rel}: the CLI rebuilt no assistant turn; pick another file"
    );
    assert_summary_present(ma, PROBE_PROMPT);
    assert_conversation_eq(ma, mb);
    note(&format!(
        "{rel}: {} messages identical; {} CLI runs so far",
        ma.len(),
        cli_runs()
    ));
}

macro_rules! identity_cases {
    ($($name:ident => $rel:expr,)*) => {$(
        #[test]
        fn $name() {
            check_identity($rel);
        }
    )*};
}

/// Cases only the extended corpus (../shared/corpus) holds: the slow tier, which fails under
/// CI=true when the corpus is absent instead of passing having checked nothing.
macro_rules! extended_identity_cases {
    ($($name:ident => $rel:expr,)*) => {$(
        #[test]
        #[ignore = "slow: needs ../shared/corpus (the slow tier: .ci/run)"]
        fn $name() {
            check_identity($rel);
        }
    )*};
}

identity_cases! {
    identity_v1_0_55_forked => "real/daaain__claude-code-log__cclog-sample__71c9afe9-d9cc-4583-86b3-e62ba682b83a.jsonl",
    identity_v1_0_128_image => "real/daaain__claude-code-log__me-next__4379d1bf-ccb1-414e-a856-9791b73f3af2.jsonl",
    identity_v2_1_17_subagents_folder => "real/daaain__claude-code-log__claude_p__29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl",
    identity_v2_1_38_agent_progress => "real/marot__spotter__subagent.jsonl",
    identity_v2_1_97_unanswered_tool_tail => "real/thejamesnick__agentic-wallet__claude-session.jsonl",
    identity_v2_1_114_teammates => "real/daaain__claude-code-log__worktrees__ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
    identity_gen_p01_quickstart => "generated/p01_quickstart.jsonl",
    identity_gen_p02_noise => "generated/p02_noise.jsonl",
    identity_gen_p03_compact => "generated/p03_compact.jsonl",
    identity_gen_p04_subagent => "generated/p04_subagent.jsonl",
    identity_gen_p05_long => "generated/p05_long.jsonl",
}

extended_identity_cases! {
    slow_identity_v1_0_43_forked => "real/daaain__claude-code-log__cclog-sample__0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl",
    slow_identity_v1_0_98_parallel_tools => "real/d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    slow_identity_v1_0_128_compacted => "real/sanand0__scripts__claude.jsonl",
    slow_identity_v2_0_5 => "real/daaain__claude-code-log__me-next__9e953218-585f-4692-89df-9e0747a31c68.jsonl",
    slow_identity_v2_0_37_agents => "real/daaain__claude-code-log__coderabbit__cb2e607c-c758-415a-8b45-c49e4631906a.jsonl",
    slow_identity_v2_1_39_compacted_subagents => "real/marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
    slow_identity_v2_1_81_unanswered_tool_tail => "real/uzaxirr__raze__claude-session.jsonl",
    slow_identity_v2_1_92_forked_tool_results => "real/Reinhartsamuel__TokenForge__claude-session.jsonl",
}

/// Removing one record mid-chain (no relinking) changes the rebuilt conversation, and the
/// comparison notices.
#[test]
fn broken_chain_is_detected() {
    let input = corpus("generated/p05_long.jsonl");
    if claude_bin().is_none() {
        return;
    }
    let text = std::fs::read_to_string(&input).expect("read p05");
    let lines: Vec<&str> = text.lines().collect();
    // The assistant record holding the Write tool_use of step 6.
    let victim = lines
        .iter()
        .position(|l| {
            l.contains(r#""type":"assistant""#)
                && l.contains("src/m05.rs")
                && l.contains(r#""tool_use""#)
        })
        .expect("step-6 Write record");
    let tmp = tempfile::tempdir().expect("tempdir");
    let broken = tmp.path().join("p05_long.jsonl");
    let kept: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != victim)
        .map(|(_, l)| *l)
        .collect();
    std::fs::write(&broken, kept.join("\n") + "\n").expect("write broken copy");

    let (a, b) = resume_both(&input, &broken).expect("CLI available");
    let (ma, mb) = (a.expect_ok("p05_long"), b.expect_ok("broken p05_long"));
    let report = conversation_diff(ma, mb).expect("a removed record must change the conversation");
    note(&format!(
        "broken p05_long: {} vs {} messages\n{report}",
        ma.len(),
        mb.len()
    ));
    let caught = std::panic::catch_unwind(|| assert_conversation_eq(ma, mb));
    assert!(
        caught.is_err(),
        "assert_conversation_eq must panic on a mismatch"
    );
    assert_turns_absent(mb, &["// retry policy"]);
}

/// Two resumes of one unchanged file differ only in what `normalize` covers.
#[test]
fn same_file_twice_differs_only_in_fresh_context() {
    let input = corpus("generated/p01_quickstart.jsonl");
    let Some((a, b)) = resume_both(&input, &input) else {
        return;
    };
    let (ma, mb) = (a.expect_ok("p01 (1st)"), b.expect_ok("p01 (2nd)"));
    assert_ne!(
        ma, mb,
        "the sandbox path should make the raw requests differ"
    );
    assert_conversation_eq(ma, mb);
    assert_summary_present(ma, PROBE_PROMPT);
    // Secrets from the generated session do reach the model unless a stage removes them.
    let caught =
        std::panic::catch_unwind(|| assert_no_secret_reaches_model(ma, &["AKIAIOSFODNN7EXAMPLE"]));
    assert!(caught.is_err(), "the unredacted AWS key must be found");
    assert_no_secret_reaches_model(ma, &["not-a-secret-anywhere-0xdeadbeef"]);
}

/// `Sandbox::resume` with extra args: `--fork-session` writes a new session file beside the
/// original, and that fork resumes with the probe turn added.
#[test]
fn fork_session_in_one_sandbox() {
    let input = corpus("generated/p01_quickstart.jsonl");
    if claude_bin().is_none() {
        return;
    }
    let sandbox = Sandbox::new();
    let sid = sandbox.install(&input);
    let first = sandbox
        .resume(&sid, &["--fork-session"])
        .expect("CLI available");
    let before = first.expect_ok("p01 with --fork-session").to_vec();
    let fork = first.reported_session_id().expect("session_id in output");
    assert_ne!(fork, sid);
    assert!(
        sandbox.session_file(&fork).is_file(),
        "fork file in {}",
        sandbox.project_dir().display()
    );
    assert_eq!(
        std::fs::read(sandbox.session_file(&sid)).ok(),
        std::fs::read(&input).ok(),
        "original untouched"
    );
    let second = sandbox.resume(&fork, &[]).expect("CLI available");
    let after = second.expect_ok("the fork");
    assert_eq!(occurrences(after, PROBE_PROMPT).len(), 2);
    assert_summary_present(after, PROBE_REPLY);
    let n = before
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .expect("assistant turn")
        + 1;
    assert_conversation_eq(&before[..n], &after[..n]);
}

/// A freshly generated session (2 prompts, thinking, real tool calls) resumes in full.
#[test]
fn generated_session_resumes() {
    let scenario = Scenario {
        name: "t_fresh".into(),
        files: vec![("notes.txt".into(), "alpha-note\n".into())],
        prompts: vec![
            Prompt {
                prompt: "Read my notes".into(),
                turns: vec![
                    vec![
                        Block::thinking("Look at the notes file."),
                        Block::tool("Read", json!({"file_path": "$PROJ/notes.txt"})),
                    ],
                    vec![Block::text("Your notes say alpha-note.")],
                ],
            },
            Prompt {
                prompt: "Count the files".into(),
                turns: vec![
                    vec![Block::tool(
                        "Bash",
                        json!({"command": "ls | wc -l && echo counted-by-bash", "description": "Count files"}),
                    )],
                    vec![Block::text("There is one file.")],
                ],
            },
        ],
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(path) = generate(&scenario, tmp.path()) else {
        return;
    };
    let probe = resume(&path).expect("CLI available");
    let m = probe.expect_ok("generated t_fresh");
    for needle in [
        "Read my notes",
        "Count the files",
        "Your notes say alpha-note.",
        "There is one file.",
        PROBE_PROMPT,
    ] {
        assert_summary_present(m, needle);
    }
    // The tools really ran: their results are in the conversation.
    assert!(
        !occurrences(m, "alpha-note").is_empty() && !occurrences(m, "counted-by-bash").is_empty()
    );
    let blocks: Vec<&Value> = m
        .iter()
        .filter_map(|x| x["content"].as_array())
        .flatten()
        .collect();
    let uses = blocks.iter().filter(|b| b["type"] == "tool_use").count();
    let results = blocks.iter().filter(|b| b["type"] == "tool_result").count();
    assert_eq!((uses, results), (2, 2), "{}", outline(m).join("\n"));
    assert!(blocks.iter().any(|b| b["type"] == "thinking"
        && b["signature"]
            .as_str()
            .is_some_and(|s| s.starts_with("sig"))));
}

// ---- mock API, no CLI needed ----

fn user(content: Value) -> Value {
    json!({"role": "user", "content": content})
}

fn assistant(content: Value) -> Value {
    json!({"role": "assistant", "content": content})
}

#[test]
fn shape_check_matches_api_rules() {
    let call = assistant(
        json!([{"type": "text", "text": "x"}, {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]),
    );
    let answer = user(json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]));
    let system = json!({"role": "system", "content": []});
    assert_eq!(
        check_shape(&[
            user(json!("hi")),
            call.clone(),
            system.clone(),
            answer.clone(),
            user(json!("more"))
        ]),
        Ok(())
    );

    let err =
        check_shape(&[user(json!("hi")), call.clone(), user(json!("no result"))]).unwrap_err();
    assert!(err.starts_with("messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_1"), "{err}");
    let err = check_shape(&[user(json!("hi")), call.clone()]).unwrap_err();
    assert!(err.contains("without tool_result"), "{err}");
    let err =
        check_shape(&[user(json!("hi")), assistant(json!("plain")), answer.clone()]).unwrap_err();
    assert!(
        err.starts_with(
            "messages.2.content.0: unexpected tool_use_id found in tool_result blocks: toolu_1"
        ),
        "{err}"
    );
    let err =
        check_shape(&[user(json!("a")), call.clone(), answer.clone(), call, answer]).unwrap_err();
    assert!(err.contains("must be unique"), "{err}");
}

/// Sends one raw HTTP/1.1 request with a chunked body; returns (status line, body).
fn post_chunked(mock: &MockApi, body: &Value) -> (String, String) {
    let addr = mock.base_url().trim_start_matches("http://").to_owned();
    let mut s = TcpStream::connect(addr).expect("connect mock");
    let data = body.to_string();
    let (a, b) = data.split_at(data.len() / 2);
    let req = format!(
        "POST /v1/messages?beta=true HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("read");
    let (head, body) = resp.split_once("\r\n\r\n").expect("response head");
    (
        head.lines().next().unwrap_or_default().to_owned(),
        body.to_owned(),
    )
}

#[test]
fn mock_serves_script_and_rejects_bad_shape() {
    let mock = MockApi::start(vec![vec![
        Block::thinking("t"),
        Block::text("hello"),
        Block::tool("Bash", json!({"command": "ls"})),
    ]])
    .expect("mock");
    let good = json!({"model": "m", "stream": true, "tools": [{"name": "Bash"}], "messages": [user(json!("hi"))]});
    let (status, body) = post_chunked(&mock, &good);
    assert_eq!(status, "HTTP/1.1 200 OK");
    for ev in [
        "message_start",
        "thinking_delta",
        "signature_delta",
        "text_delta",
        "input_json_delta",
        "\"stop_reason\":\"tool_use\"",
        "message_stop",
    ] {
        assert!(body.contains(ev), "missing {ev} in {body}");
    }
    let bad = json!({"model": "m", "tools": [{"name": "Bash"}], "messages": [user(json!("hi")), assistant(json!([{"type": "tool_use", "id": "toolu_x", "name": "Bash", "input": {}}])), user(json!("next"))]});
    let (status, body) = post_chunked(&mock, &bad);
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    let err: Value = serde_json::from_str(&body).expect("error JSON");
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert_eq!(mock.shape_errors().len(), 1);
    let plain = json!({"model": "m", "messages": [user(json!("title?"))]});
    let (_, body) = post_chunked(&mock, &plain);
    let msg: Value = serde_json::from_str(&body).expect("message JSON");
    assert_eq!(msg["content"][0]["text"], "Session notes.");
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(mock.conversation().map(|m| m.len()), Some(1));
}

/// Every main-session corpus file resumes without a shape error (`cargo test -- --ignored`;
/// about 50 CLI runs). Sidechain files (`agent-*`) cannot be resumed on their own (exit 1).
#[test]
#[ignore = "slow: resumes the whole corpus"]
fn slow_whole_corpus_resumes_cleanly() {
    if claude_bin().is_none() {
        return;
    }
    let files: Vec<PathBuf> = ["real", "generated"]
        .iter()
        .flat_map(|d| main_sessions(d))
        // Files without a single conversation record cannot be resumed ("no conversation").
        .filter(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(r#""type":"assistant""#)))
        .collect();
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(files.len().div_ceil(4).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|f| {
                            let p = resume(f).expect("CLI available");
                            let name = f.file_name().expect("name").to_string_lossy().into_owned();
                            let ok =
                                p.exit_status.is_some_and(|x| x.success()) && p.messages.is_some();
                            (!ok || !p.shape_errors.is_empty()).then(|| {
                                format!(
                                    "{name}: exit {:?}, shape errors {:?}",
                                    p.exit_status, p.shape_errors
                                )
                            })
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("thread"))
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
