//! `cchist hook` per event, fed the JSON Claude Code sends (no CLI needed): PreCompact
//! guidance, SessionStart digest, Stop turn-count policies, and never blocking Claude Code.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

fn corpus(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus")
        .join(rel)
}

fn hook(args: &[&str], input: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cchist"))
        .arg("hook")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn event(name: &str, transcript: &Path, session_id: &str) -> String {
    json!({
        "session_id": session_id,
        "transcript_path": transcript,
        "cwd": "/home/dev/p05_long",
        "hook_event_name": name,
    })
    .to_string()
}

/// p05 (12 turns) in a project folder of a temp dir.
fn project() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("projects/-home-dev-p05-long");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("p05_long.jsonl");
    std::fs::copy(corpus("generated/p05_long.jsonl"), &f).unwrap();
    (d, f)
}

#[test]
fn pre_compact_prints_what_the_summary_should_keep() {
    let (_d, f) = project();
    let out = hook(&[], &event("PreCompact", &f, "p05_long"));
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Step 1: implement the parser"), "{text}");
    assert!(
        text.contains("Files written:") && text.contains("src/m00.rs"),
        "{text}"
    );
    assert!(text.contains("Commands run:"), "{text}");
}

#[test]
fn stop_policy_notifies_or_writes_a_compressed_fork() {
    let (d, f) = project();
    let before = std::fs::read(&f).unwrap();
    let notify = d.path().join("notify.toml");
    std::fs::write(
        &notify,
        "version = 1\n[hook]\nevery = 6\naction = \"notify\"\n",
    )
    .unwrap();
    let out = hook(
        &["--pipeline", notify.to_str().unwrap()],
        &event("Stop", &f, "p05_long"),
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["systemMessage"].as_str().unwrap().contains("12 turns"),
        "{v}"
    );
    // not a multiple of the policy: silent
    let quiet = d.path().join("quiet.toml");
    std::fs::write(&quiet, "version = 1\n[hook]\nat_turns = [5, 13]\n").unwrap();
    let out = hook(
        &["--pipeline", quiet.to_str().unwrap()],
        &event("Stop", &f, "p05_long"),
    );
    assert!(out.status.success() && out.stdout.is_empty());

    let fork = d.path().join("fork.toml");
    std::fs::write(
        &fork,
        "version = 1\n[hook]\nat_turns = [12]\naction = \"fork\"\nkeep_last = 3\n",
    )
    .unwrap();
    let out = hook(
        &["--pipeline", fork.to_str().unwrap()],
        &event("Stop", &f, "p05_long"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    let id = msg.rsplit("claude --resume ").next().unwrap().trim();
    let copy = f.with_file_name(format!("{id}.jsonl"));
    assert!(copy.is_file(), "{msg}");
    assert_eq!(
        std::fs::read(&f).unwrap(),
        before,
        "the live file is never edited"
    );
    let copy_text = std::fs::read_to_string(&copy).unwrap();
    assert!(
        copy_text.contains("Step 12:") && !copy_text.contains("\"content\":\"Step 2: implement")
    );
}

#[test]
fn session_start_digest_of_the_previous_session() {
    let (d, f) = project();
    let current = f.with_file_name("current.jsonl");
    std::fs::write(&current, "").unwrap();
    let p = d.path().join("digest.toml");
    std::fs::write(&p, "version = 1\n[hook]\nsession_start_digest = true\n").unwrap();
    let out = hook(
        &["--pipeline", p.to_str().unwrap()],
        &event("SessionStart", &current, "current"),
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("p05_long") && text.contains("Step 12: implement the benchmarks"),
        "{text}"
    );
    // off by default
    let out = hook(&[], &event("SessionStart", &current, "current"));
    assert!(out.status.success() && out.stdout.is_empty());
}

#[test]
fn a_failing_hook_never_blocks_claude_code() {
    let out = hook(&[], "not json");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("hook input"));
    let out = hook(&["--strict"], "not json");
    assert_eq!(out.status.code(), Some(2));
    let out = hook(&[], &json!({"hook_event_name": "Notification"}).to_string());
    assert!(out.status.success() && out.stdout.is_empty());
    // SessionEnd on a missing transcript: logged, exit 0
    let out = hook(
        &[],
        &event("SessionEnd", Path::new("/nonexistent/x.jsonl"), "x"),
    );
    assert_eq!(out.status.code(), Some(0));
}

/// The Stop policy forks by steps: the copy of a 2-turn agentic session keeps the first
/// prompt, the summary and exactly its last 5 steps (in-repo fixture, no ../shared needed).
#[test]
fn stop_fork_keeps_the_last_steps() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("projects/-home-dev-agentic-long");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("agentic_long.jsonl");
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agentic_long.jsonl"),
        &f,
    )
    .unwrap();
    let policy = d.path().join("steps.toml");
    std::fs::write(
        &policy,
        "version = 1\n[hook]\nat_turns = [2]\naction = \"fork\"\nkeep_last_steps = 5\n",
    )
    .unwrap();
    let out = hook(
        &["--pipeline", policy.to_str().unwrap()],
        &event("Stop", &f, "agentic_long"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(
        msg.contains("first prompt + summary + last 5 steps"),
        "{msg}"
    );
    let id = msg.rsplit("claude --resume ").next().unwrap().trim();
    let copy = std::fs::read(f.with_file_name(format!("{id}.jsonl"))).unwrap();
    assert!(cchist::findings::validate::validate(&copy).is_empty());
    let s = cchist::transcript::session::Session::new(
        cchist::io::framing::lines(&copy, 1)
            .map(cchist::transcript::record::Record::from_line)
            .collect(),
    );
    let turns = s.turns();
    // Turn 1 is the first prompt alone, turn 2 the summary with the 5 kept steps after it.
    assert_eq!(turns.len(), 2);
    let steps = s.steps(&turns);
    assert_eq!(steps.len(), 5);
    assert!(steps.iter().all(|st| st.turn == 1));
    assert!(copy
        .windows(b"cchistSummary".len())
        .any(|w| w == b"cchistSummary"));
}
