//! Issue #27 in the real CLI: the user's own history manager (`[hook] action = "command"`)
//! forks once at its turn and the fork resumes with the summary and the recent turns only; with
//! `apply = "session-end"` the edit lands in the session when it ends; failing managers change
//! nothing, say why and never block Claude; PostCompact saves a redacted summary the next
//! SessionStart shows once; an `auto`-only matcher does not run on a manual `/compact`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;
use serde_json::Value;

fn write(sb: &Sandbox, name: &str, text: &str) -> String {
    let p = sb.root().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn install(sb: &Sandbox, events: &str, pipeline: &str, matcher: Option<&str>) {
    let mut args = vec!["hook", "install", "--event", events, "--pipeline", pipeline];
    args.extend(["--timeout", "60"]);
    if let Some(m) = matcher {
        args.extend(["--matcher", m]);
    }
    sb.cchist(&args);
}

fn hook_log(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sb.config_dir().join("cchist/hook.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn forks(sb: &Sandbox, sid: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(sb.project_dir())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .filter(|p| p.file_stem().is_some_and(|s| s != sid))
        .collect();
    v.sort();
    v
}

/// The shipped example manager; `None` without jq (a skip, or a failure under CI).
fn example_manager() -> Option<String> {
    let jq = Command::new("jq").arg("--version").output();
    if !jq.is_ok_and(|o| o.status.success()) {
        crate::common::skip_or_fail("jq is not installed; examples/history-manager.sh needs it");
        return None;
    }
    Some(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/history-manager.sh")
            .display()
            .to_string(),
    )
}

fn q(k: usize) -> String {
    format!("MGR-QUESTION-{k:02}")
}

fn a(k: usize) -> String {
    format!("MGR-ANSWER-{k:02}")
}

fn scenario(name: &str, turns: usize) -> Scenario {
    Scenario {
        name: name.into(),
        files: vec![],
        prompts: (1..=turns)
            .map(|k| Prompt {
                prompt: q(k),
                turns: vec![vec![Block::text(&a(k))]],
            })
            .collect(),
    }
}

fn manager_pipeline(sb: &Sandbox, command: &str, extra: &str) -> String {
    write(
        sb,
        "manager.toml",
        &format!("version = 1\n[hook]\naction = \"command\"\ncommand = {command:?}\n{extra}\n[[stage]]\ntype = \"redact\"\n"),
    )
}

/// Turns 1–5 absent, the summary and turns 6–10 present, in what a resume sent. The summary
/// (summarize-range's digest) quotes the prompts it stands for: that is the only place they
/// may appear.
fn assert_compressed(msgs: &[Value]) {
    let summary = occurrences(msgs, "Summary of turns 1-5 (by cchist)");
    assert_eq!(summary.len(), 1, "the summary reaches the model once");
    for k in 1..=5 {
        let elsewhere: Vec<String> = occurrences(msgs, &q(k))
            .into_iter()
            .chain(occurrences(msgs, &a(k)))
            .filter(|p| *p != summary[0])
            .collect();
        assert!(
            elsewhere.is_empty(),
            "turn {k} was sent outside the summary: {elsewhere:?}"
        );
    }
    for k in 6..=10 {
        assert!(!occurrences(msgs, &q(k)).is_empty(), "turn {k} is missing");
        assert!(
            !occurrences(msgs, &a(k)).is_empty(),
            "turn {k}'s answer is missing"
        );
    }
}

#[test]
fn the_example_manager_forks_once_at_turn_10_and_the_fork_resumes_compressed() {
    let Some(m) = example_manager() else {
        return;
    };
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let p = manager_pipeline(&sb, &m, "at_turns = [10]\n");
    install(&sb, "Stop", &p, None);
    let (sid, runs) = sb
        .play_runs(&scenario("manager", 12), OutputFormat::StreamJson)
        .expect("CLI available");
    let found = forks(&sb, &sid);
    assert_eq!(
        found.len(),
        1,
        "exactly one fork: {found:?}; log {:?}",
        hook_log(&sb)
    );
    let fork_id = found[0].file_stem().unwrap().to_string_lossy().into_owned();
    // the user saw how to resume it, at turn 10 only
    let told: Vec<usize> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.stdout.contains(&format!("claude --resume {fork_id}")))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(told, vec![10]);
    // the original is untouched: all 12 turns, no summary
    let original = std::fs::read_to_string(sb.session_file(&sid)).unwrap();
    assert!((1..=12).all(|k| original.contains(&q(k))));
    assert!(!original.contains("Summary of turns 1-5"));
    let probe = sb.resume(&fork_id, &[]).expect("CLI available");
    let msgs = probe.expect_ok("history-manager fork");
    assert_compressed(msgs);
    assert!(
        occurrences(msgs, &q(11)).is_empty(),
        "the fork is of turn 10"
    );
    note(&format!(
        "history manager at_turns=[10] over 12 turns: forks {}, told at turns {told:?}",
        found.len()
    ));
}

#[test]
fn with_apply_session_end_the_edit_lands_in_the_session_when_it_ends() {
    let Some(m) = example_manager() else {
        return;
    };
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let p = manager_pipeline(&sb, &m, "at_turns = [10]\napply = \"session-end\"\n");
    install(&sb, "Stop,SessionEnd", &p, None);
    let mock = MockApi::start((1..=10).map(|k| vec![Block::text(&a(k))]).collect()).unwrap();
    let mut live = sb.live(&mock, &[]).expect("CLI available");
    let mut said = Vec::new();
    for k in 1..=10 {
        said.extend(live.send(&q(k)));
    }
    let sid = live.session_id.clone().unwrap();
    let file = sb.session_file(&sid);
    assert!(
        std::fs::read_to_string(&file).unwrap().contains(&q(1)),
        "nothing changes while the session runs"
    );
    assert!(
        said.iter().any(|l| l.contains("is queued")),
        "the user is told it is queued"
    );
    assert!(live.close().is_some_and(|s| s.success()));
    assert!(forks(&sb, &sid).is_empty(), "no fork");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("Summary of turns 1-5"),
        "log {:?}",
        hook_log(&sb)
    );
    let probe = sb.resume(&sid, &[]).expect("CLI available");
    assert_compressed(probe.expect_ok("session edited at its end"));
}

#[test]
fn failing_managers_change_nothing_say_why_and_do_not_block_claude() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let script = |name: &str, body: &str| {
        let p = write(&sb, name, &format!("#!/bin/sh\ncat >/dev/null\n{body}\n"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    };
    let unknown = r#"{"action":"modify_history","operations":[{"type":"delete","turns":["00000000-0000-4000-8000-999999999999"]}]}"#;
    // one case per turn of one session: the pipeline file is rewritten before each prompt
    let cases = [
        (
            "garbage",
            script("garbage.sh", "echo 'this is no document'"),
            "",
            "not a modify_history document",
        ),
        ("exit 1", script("exit1.sh", "exit 1"), "", "exited 1"),
        (
            "hang",
            script("hang.sh", "sleep 60"),
            "command_timeout_ms = 1000\n",
            "past its timeout",
        ),
        (
            "unknown uuid",
            script("unknown.sh", &format!("printf '%s' '{unknown}'")),
            "",
            "not in this session",
        ),
    ];
    let p = manager_pipeline(&sb, &cases[0].1, "");
    install(&sb, "Stop", &p, None);
    let mock = MockApi::start(Vec::new()).unwrap();
    let mut sid: Option<String> = None;
    for (k, (what, cmd, extra, why)) in cases.iter().enumerate() {
        manager_pipeline(&sb, cmd, extra);
        mock.set_script(vec![vec![Block::text(&a(k + 1))]]);
        let before = mock.requests().iter().filter(|r| r.carries_tools()).count();
        let q = q(k + 1);
        let mut args = vec!["-p", q.as_str()];
        if let Some(s) = &sid {
            args.extend(["--resume", s.as_str()]);
        }
        let out = sb
            .cli(&mock, &args, OutputFormat::StreamJson, what)
            .unwrap();
        assert!(
            out.status.is_some_and(|s| s.success()),
            "{what}: {}",
            out.stderr
        );
        let s = out.session_id().unwrap();
        let main = mock.requests().iter().filter(|r| r.carries_tools()).count() - before;
        assert_eq!(main, 1, "{what}: Claude was made to take another turn");
        let told: Vec<&str> = out
            .stdout
            .lines()
            .filter(|l| l.contains("history manager failed"))
            .collect();
        assert!(
            told.len() == 1 && told[0].contains(why),
            "{what}: the user read {told:?}"
        );
        assert!(forks(&sb, &s).is_empty(), "{what}: a fork was written");
        let last = hook_log(&sb).pop().unwrap();
        assert_eq!(last["outcome"], "failed", "{what}: {last}");
        assert!(
            last["detail"].as_str().unwrap().contains(why),
            "{what}: {last}"
        );
        sid = Some(s);
    }
    // the session is as the CLI wrote it: every turn there
    let text = std::fs::read_to_string(sb.session_file(sid.as_deref().unwrap())).unwrap();
    assert!((1..=4).all(|k| text.contains(&q(k))));
}

#[test]
fn post_compact_saves_a_redacted_summary_the_next_session_start_shows_once() {
    if claude_bin().is_none() {
        return;
    }
    let secret = planted_secret();
    let sb = Sandbox::new();
    let sid = sb
        .play(&env_secret_scenario("memory", vec![]))
        .expect("CLI available");
    let p = write(
        &sb,
        "memory.toml",
        "version = 1\n[hook]\nsession_start_digest = true\n[[stage]]\ntype = \"redact\"\n",
    );
    install(&sb, "PostCompact,SessionStart", &p, None);
    // the compaction summary the model writes restates the secret (the compaction request
    // carries the tools, so it takes the scripted turn; a side request would take the text)
    let summary = format!(
        "MEMORY-SUMMARY-7431: the .env holds AWS_SECRET_ACCESS_KEY={secret}; the raw value {secret} was shown."
    );
    let mock = MockApi::start(vec![vec![Block::text(&summary)]]).unwrap();
    mock.set_side_text(&summary);
    let out = sb
        .cli(
            &mock,
            &["-p", "/compact", "--resume", &sid],
            OutputFormat::StreamJson,
            "compact",
        )
        .unwrap();
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let log = hook_log(&sb);
    let pc: Vec<&Value> = log.iter().filter(|l| l["event"] == "PostCompact").collect();
    assert_eq!(pc.len(), 1, "{log:?}");
    assert_eq!(pc[0]["outcome"], "ok", "{log:?}");
    assert!(
        pc[0]["detail"].as_str().unwrap().starts_with("manual"),
        "{log:?}"
    );
    let dir = sb
        .config_dir()
        .join("cchist/memory")
        .join(sb.project_dir().file_name().unwrap());
    let saved: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(saved.len(), 1);
    let text = std::fs::read_to_string(&saved[0]).unwrap();
    assert!(text.contains("MEMORY-SUMMARY-7431"), "{text}");
    assert!(
        !text.contains(&secret),
        "the saved summary holds the planted secret"
    );
    let shown: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("compaction summary saved"))
        .collect();
    note(&format!(
        "PostCompact: lines the user got saying it was saved: {}",
        shown.len()
    ));
    // (the CLI's own stream prints the model's summary, secret and all: not cchist's output)
    assert!(shown.iter().all(|l| !l.contains(&secret)));
    // the next session's SessionStart carries it, once
    let mock = MockApi::start(vec![vec![Block::text("ok")]]).unwrap();
    let out = sb
        .cli(&mock, &["-p", "hello"], OutputFormat::Json, "next session")
        .unwrap();
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let first = mock
        .requests()
        .into_iter()
        .find(|r| r.carries_tools())
        .unwrap();
    let body = first.body.to_string();
    assert_eq!(body.matches("MEMORY-SUMMARY-7431").count(), 1, "shown once");
    assert!(!body.contains(&secret));
    assert_eq!(
        shown.len(),
        1,
        "one line told the user it was saved: {}",
        out.stdout
    );
}

#[test]
fn an_auto_only_pre_compact_hook_does_not_run_on_a_manual_compact() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let sid = sb.play(&scenario("matcher", 1)).expect("CLI available");
    let compact = |label: &str| {
        let mock = MockApi::start(Vec::new()).unwrap();
        let out = sb
            .cli(
                &mock,
                &["-p", "/compact", "--resume", &sid],
                OutputFormat::Json,
                label,
            )
            .unwrap();
        assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
        hook_log(&sb)
            .iter()
            .filter(|l| l["event"] == "PreCompact")
            .count()
    };
    install(&sb, "PreCompact", "builtin:scrub", Some("auto"));
    assert_eq!(
        compact("compact, auto matcher"),
        0,
        "the auto-only hook ran"
    );
    install(&sb, "PreCompact", "builtin:scrub", Some("manual"));
    assert_eq!(
        compact("compact, manual matcher"),
        1,
        "the manual hook did not run"
    );
}

/// What the pinned CLI does with a PostCompact hook's output (the row of the table in
/// `src/claude/hook.rs`): stdout, as text (a `systemMessage` object is not parsed), is appended
/// to the `/compact` command's output message, which the user sees, the transcript keeps and a
/// later resume sends to the model.
#[test]
fn post_compact_stdout_is_shown_as_text_kept_in_the_transcript_and_resent() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let sid = sb.play(&scenario("pcout", 2)).expect("CLI available");
    let body = "cat >/dev/null\necho '{\"systemMessage\":\"PC-SYSMSG-7431\"}'";
    let p = write(&sb, "pc.sh", &format!("#!/bin/sh\n{body}\n"));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        sb.config_dir().join("settings.json"),
        serde_json::json!({"hooks": {"PostCompact": [{"hooks": [{"type": "command", "command": p, "timeout": 20}]}]}})
            .to_string(),
    )
    .unwrap();
    let mock = MockApi::start(Vec::new()).unwrap();
    let out = sb
        .cli(
            &mock,
            &["-p", "/compact", "--resume", &sid],
            OutputFormat::StreamJson,
            "pc out",
        )
        .unwrap();
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let shown: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains("PC-SYSMSG-7431"))
        .collect();
    assert_eq!(shown.len(), 1, "{}", out.stdout);
    assert!(
        shown[0].contains("local-command-stdout") && shown[0].contains("systemMessage"),
        "shown as text: {}",
        shown[0]
    );
    let kept = std::fs::read_to_string(sb.session_file(&sid)).unwrap();
    assert!(kept.contains("PC-SYSMSG-7431"), "kept in the transcript");
    let probe = sb.resume(&sid, &[]).unwrap();
    let msgs = probe.expect_ok("after PostCompact");
    assert!(
        !occurrences(msgs, "PC-SYSMSG-7431").is_empty(),
        "resent to the model"
    );
}
