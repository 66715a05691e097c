//! Hooks under the real Claude Code CLI's timing (the Stop hook starts before the transcript
//! holds the turn that ended): Stop forks exactly once per session on the complete turn, turn
//! counts are right from turn 1, forks and digests hold no secret, SessionEnd failures reach
//! the CLI's stderr, and what the CLI does with each form of hook output.

use std::path::PathBuf;
use std::process::Command;

use crate::support::*;
use serde_json::{json, Value};

fn write_pipeline(sb: &Sandbox, name: &str, text: &str) -> String {
    let p = sb.root().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn install(sb: &Sandbox, event: &str, pipeline: &str) {
    sb.cchist(&[
        "hook",
        "install",
        "--event",
        event,
        "--pipeline",
        pipeline,
        "--timeout",
        "30",
    ]);
}

fn hook_log(sb: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sb.config_dir().join("cchist/hook.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `.jsonl` files of the project folder other than `sid`'s: the forks.
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

fn text_prompt(p: &str, answer: &str) -> Prompt {
    Prompt {
        prompt: p.into(),
        turns: vec![vec![Block::text(answer)]],
    }
}

/// How many sessions the Stop tests play (`CCHIST_HOOK_SESSIONS`, default 10).
fn sessions() -> usize {
    std::env::var("CCHIST_HOOK_SESSIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
}

#[test]
fn stop_fork_at_turn_2_exactly_once_per_session_on_the_complete_turn() {
    if claude_bin().is_none() {
        return;
    }
    let secret = planted_secret();
    let n = sessions();
    let mut forks_per_session = Vec::new();
    let mut counts_right = 0;
    let mut counts_total = 0;
    let mut stop_ms: Vec<u64> = Vec::new();
    for i in 0..n {
        let sb = Sandbox::new();
        let p = write_pipeline(
            &sb,
            "fork.toml",
            "version = 1\n[hook]\nat_turns = [2]\naction = \"fork\"\nkeep_last = 1\n\n[[stage]]\ntype = \"redact\"\n\n[[stage]]\ntype = \"relink\"\n",
        );
        install(&sb, "Stop", &p);
        let marker = format!("MARKER-{i}-{}", std::process::id());
        let scenario = Scenario {
            name: format!("stopfork{i}"),
            files: vec![(".env".into(), format!("AWS_SECRET_ACCESS_KEY={secret}\n"))],
            prompts: vec![
                text_prompt(&format!("first question {i}"), &format!("answer one {i}")),
                Prompt {
                    prompt: format!("second question {i}"),
                    turns: vec![
                        vec![Block::tool(
                            "Bash",
                            json!({"command": format!("echo {marker} && cat .env"), "description": "Show env"}),
                        )],
                        vec![Block::text(&format!("answer two {i}"))],
                    ],
                },
                text_prompt(&format!("third question {i}"), &format!("answer three {i}")),
                text_prompt(&format!("fourth question {i}"), &format!("answer four {i}")),
            ],
        };
        let sid = sb.play(&scenario).expect("CLI available");
        let found = forks(&sb, &sid);
        forks_per_session.push(found.len());
        // every Stop run saw the real turn number
        let stops: Vec<Value> = hook_log(&sb)
            .into_iter()
            .filter(|l| l["event"] == "Stop")
            .collect();
        for (k, l) in stops.iter().enumerate() {
            stop_ms.push(l["ms"].as_u64().unwrap_or(0));
            counts_total += 1;
            let detail = l["detail"].as_str().unwrap_or("");
            if detail.starts_with(&format!("turn {}:", k + 1)) {
                counts_right += 1;
            } else {
                note(&format!("session {i}: Stop run {} logged {l}", k + 1));
            }
        }
        assert_eq!(stops.len(), 4, "one Stop run per prompt: {stops:?}");
        assert_eq!(
            found.len(),
            1,
            "session {i}: forks {found:?}; log {stops:?}"
        );
        let fork = &found[0];
        let text = std::fs::read_to_string(fork).unwrap();
        assert!(
            !text.contains(&secret),
            "session {i}: the fork holds the planted secret"
        );
        assert!(
            !text.contains("answer three"),
            "session {i}: the fork holds a later turn"
        );
        assert!(
            !text.contains("[Tool call interrupted"),
            "session {i}: the fork lacks turn 2's real tool result"
        );
        // turn 2's real tool result and final answer
        let has_result = text.lines().any(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or(Value::Null);
            v["type"] == "user"
                && v["message"]["content"][0]["type"] == "tool_result"
                && v.to_string().contains(&marker)
        });
        assert!(
            has_result,
            "session {i}: the fork lacks turn 2's tool result"
        );
        assert!(text.contains(&format!("answer two {i}")));
        let v = Command::new(env!("CARGO_BIN_EXE_cchist"))
            .arg("validate")
            .arg(fork)
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "session {i}: validate: {}",
            String::from_utf8_lossy(&v.stdout)
        );
        let fork_id = fork.file_stem().unwrap().to_string_lossy().into_owned();
        let probe = sb.resume(&fork_id, &[]).expect("CLI available");
        let msgs = probe.expect_ok("stop-hook fork");
        assert_no_secret_reaches_model(msgs, &[&secret]);
        assert!(
            !occurrences(msgs, &marker).is_empty(),
            "the resumed fork has turn 2's result"
        );
        assert!(!occurrences(msgs, &format!("answer two {i}")).is_empty());
    }
    stop_ms.sort_unstable();
    note(&format!(
        "Stop fork at_turns=[2]: forks per session {forks_per_session:?}; turn counts right {counts_right}/{counts_total}; Stop hook ms median {} max {}",
        stop_ms[stop_ms.len() / 2],
        stop_ms.last().unwrap()
    ));
    assert_eq!(counts_right, counts_total);
}

#[test]
fn stop_notify_every_turn_says_the_real_turn_number() {
    if claude_bin().is_none() {
        return;
    }
    let n = (sessions() / 3).max(2);
    let (mut right, mut total) = (0, 0);
    let mut late = 0; // Stop runs that started before the transcript held their turn
    let mut held_ms = Vec::new();
    for i in 0..n {
        let sb = Sandbox::new();
        let p = write_pipeline(&sb, "notify.toml", "version = 1\n[hook]\nevery = 1\n");
        install(&sb, "Stop", &p);
        let scenario = Scenario {
            name: format!("notify{i}"),
            files: vec![],
            prompts: (1..=4)
                .map(|k| text_prompt(&format!("question {k}"), &format!("answer {k}")))
                .collect(),
        };
        let (_, runs) = sb
            .play_runs(&scenario, OutputFormat::StreamJson)
            .expect("CLI available");
        for (k, run) in runs.iter().enumerate() {
            total += 1;
            let said: Vec<&str> = run
                .stdout
                .lines()
                .filter(|l| l.contains("cchist: this session has"))
                .collect();
            let want = format!("this session has {} turns", k + 1);
            if said.len() == 1 && said[0].contains(&want) {
                right += 1;
            } else {
                note(&format!("session {i} turn {}: said {said:?}", k + 1));
            }
        }
        for l in hook_log(&sb) {
            let detail = l["detail"].as_str().unwrap_or("");
            let ms = detail
                .split("complete after ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|t| t.parse::<u64>().ok());
            late += usize::from(ms.is_some_and(|ms| ms > 0));
            held_ms.extend(ms);
        }
    }
    note(&format!(
        "Stop notify every=1: counts right {right}/{total}; turn not yet in the transcript when the hook started: {late}/{total} (held after {held_ms:?} ms)"
    ));
    assert_eq!(right, total);
}

/// Strings of a request body that contain `needle`.
fn strings_with<'a>(body: &'a Value, needle: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    fn walk<'a>(v: &'a Value, needle: &str, out: &mut Vec<&'a str>) {
        match v {
            Value::String(s) if s.contains(needle) => out.push(s),
            Value::Array(a) => a.iter().for_each(|x| walk(x, needle, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, needle, out)),
            _ => {}
        }
    }
    walk(body, needle, &mut out);
    out
}

/// A session in `sb` whose tool output holds the planted secret.
fn session_with_secret(sb: &Sandbox, name: &str) -> String {
    let scenario = env_secret_scenario(name, vec![]);
    sb.play(&scenario).expect("CLI available")
}

#[test]
fn pre_compact_and_session_start_digests_carry_no_secret() {
    if claude_bin().is_none() {
        return;
    }
    let secret = planted_secret();
    let sb = Sandbox::new();
    let sid = session_with_secret(&sb, "digests");
    let p = write_pipeline(
        &sb,
        "digest.toml",
        "version = 1\n[hook]\nsession_start_digest = true\n[[stage]]\ntype = \"redact\"\n",
    );
    install(&sb, "PreCompact", &p);
    install(&sb, "SessionStart", &p);
    // PreCompact: the digest lands in the compaction request
    let mock = MockApi::start(Vec::new()).unwrap();
    let out = sb
        .cli(
            &mock,
            &["-p", "/compact", "--resume", &sid],
            OutputFormat::Json,
            "compact",
        )
        .unwrap();
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let digests = strings_in(mock.requests().iter(), "collected by cchist");
    assert!(
        !digests.is_empty(),
        "the PreCompact digest reached the compaction request"
    );
    for d in &digests {
        let at = d.find("collected by cchist").unwrap();
        assert!(
            !d[at..].contains(&secret),
            "the PreCompact digest holds the secret"
        );
        assert!(d[at..].contains("cat .env"), "the digest has the facts");
    }
    // SessionStart of a new session: the previous one's digest reaches the model
    let mock = MockApi::start(vec![vec![Block::text("ok")]]).unwrap();
    let out = sb
        .cli(&mock, &["-p", "hello"], OutputFormat::Json, "new session")
        .unwrap();
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let seen = strings_in(
        mock.requests().iter().filter(|r| r.carries_tools()),
        "digested by cchist",
    );
    assert!(
        !seen.is_empty(),
        "the SessionStart digest reached the model"
    );
    assert!(
        seen.iter().all(|d| !d.contains(&secret)),
        "the SessionStart digest holds the secret"
    );
}

#[test]
fn session_end_failure_shows_on_the_cli_stderr_and_in_the_log() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let p = write_pipeline(&sb, "gone.toml", "version = 1\n");
    install(&sb, "SessionEnd", &p);
    std::fs::remove_file(&p).unwrap();
    let mock = MockApi::start(vec![vec![Block::text("ok")]]).unwrap();
    let out = sb
        .cli(
            &mock,
            &["-p", "hello"],
            OutputFormat::Json,
            "session end fails",
        )
        .unwrap();
    assert!(
        out.stderr.contains("gone.toml"),
        "the failure reaches the CLI's stderr: {}",
        out.stderr
    );
    let log = hook_log(&sb);
    let last = log.last().expect("a hook log line");
    assert_eq!(last["event"], "SessionEnd");
    assert_eq!(last["outcome"], "failed");
}

/// A hook command that prints `text` and exits `code` (on stdout; on stderr for exit 2, as
/// Claude Code reads it then), once per session for Stop (so a blocking Stop hook does not
/// loop).
fn script(sb: &Sandbox, name: &str, text: &str, code: i32) -> String {
    let p = sb.root().join(name);
    let to = if code == 2 { " >&2" } else { "" };
    let body = format!(
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"stop_hook_active\":true'*) exit 0;; esac\nprintf '%s' '{}'{to}\nexit {code}\n",
        text.replace('\'', "'\\''")
    );
    std::fs::write(&p, body).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.to_string_lossy().into_owned()
}

fn settings_with(sb: &Sandbox, event: &str, commands: &[String]) {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|c| json!({"type": "command", "command": c, "timeout": 20}))
        .collect();
    std::fs::write(
        sb.config_dir().join("settings.json"),
        json!({"hooks": {event: [{"hooks": hooks}]}}).to_string(),
    )
    .unwrap();
}

/// The strings holding `needle` in the bodies of `requests`.
fn strings_in<'r>(requests: impl Iterator<Item = &'r Request>, needle: &str) -> Vec<String> {
    requests
        .flat_map(|r| strings_with(&r.body, needle))
        .map(str::to_owned)
        .collect()
}

fn main_requests(mock: &MockApi) -> usize {
    mock.requests().iter().filter(|r| r.carries_tools()).count()
}

/// The table in `src/claude/hook.rs` (issue #15): what Claude Code does with each form of
/// hook output. A CLI upgrade that changes it fails here.
#[test]
fn the_cli_honours_hook_output_as_documented() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let sid = session_with_secret(&sb, "forms");
    let run = |args: &[&str], script_turns: Vec<Turn>, format: OutputFormat, label: &str| {
        let mock = MockApi::start(script_turns).unwrap();
        let out = sb.cli(&mock, args, format, label).unwrap();
        (mock, out)
    };
    let seen = |mock: &MockApi, needle: &str| {
        mock.requests()
            .iter()
            .any(|r| !strings_with(&r.body, needle).is_empty())
    };
    let compacted = || {
        std::fs::read_to_string(sb.session_file(&sid))
            .unwrap()
            .matches("\"compact_boundary\"")
            .count()
    };
    // A prompt the model answers once.
    let hi = |format: OutputFormat, label: &str| {
        run(&["-p", "hi"], vec![vec![Block::text("ok")]], format, label)
    };
    // `/compact` on the session, with one PreCompact hook printing `output` and exiting `code`.
    let compact_with = |name: &str, output: &str, code: i32, label: &str| {
        settings_with(&sb, "PreCompact", &[script(&sb, name, output, code)]);
        run(
            &["-p", "/compact", "--resume", &sid],
            vec![],
            OutputFormat::Json,
            label,
        )
        .0
    };
    // A prompt the model answers twice if asked, with one Stop hook printing `output` and
    // exiting `code`.
    let stop_with = |name: &str, output: &str, code: i32, label: &str| {
        settings_with(&sb, "Stop", &[script(&sb, name, output, code)]);
        run(
            &["-p", "hi"],
            vec![vec![Block::text("ok")], vec![Block::text("ok2")]],
            OutputFormat::Json,
            label,
        )
        .0
    };

    // PreCompact: plain stdout reaches the compaction request; exit 2 blocks compaction;
    // additionalContext does not reach the model.
    let before = compacted();
    let mock = compact_with("pc1", "PC-PLAIN-7431", 0, "pc plain");
    assert!(
        seen(&mock, "PC-PLAIN-7431"),
        "PreCompact plain stdout → the model"
    );
    assert_eq!(compacted(), before + 1, "compaction happened");
    let ctx = json!({"hookSpecificOutput": {"hookEventName": "PreCompact", "additionalContext": "PC-CTX-7431"}}).to_string();
    let mock = compact_with("pc2", &ctx, 0, "pc context");
    assert!(
        !seen(&mock, "PC-CTX-7431"),
        "PreCompact additionalContext is not honoured"
    );
    let before = compacted();
    compact_with("pc3", "PC-BLOCK", 2, "pc exit 2");
    assert_eq!(compacted(), before, "PreCompact exit 2 blocks compaction");
    let block = json!({"decision": "block", "reason": "PC-REASON"}).to_string();
    compact_with("pc4", &block, 0, "pc block");
    assert_eq!(
        compacted(),
        before,
        "PreCompact decision: block blocks compaction"
    );

    // SessionStart: plain stdout and additionalContext both reach the model.
    let ctx = json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "SS-CTX-7431"}}).to_string();
    settings_with(
        &sb,
        "SessionStart",
        &[
            script(&sb, "ss1", "SS-PLAIN-7431", 0),
            script(&sb, "ss2", &ctx, 0),
        ],
    );
    let (mock, _) = hi(OutputFormat::Json, "ss");
    assert!(
        seen(&mock, "SS-PLAIN-7431"),
        "SessionStart plain stdout → the model"
    );
    assert!(
        seen(&mock, "SS-CTX-7431"),
        "SessionStart additionalContext → the model"
    );

    // Stop: systemMessage reaches the user (stream-json) and not the model; additionalContext
    // and exit 2 make the model take another turn.
    let msg = json!({"systemMessage": "STOP-MSG-7431"}).to_string();
    settings_with(&sb, "Stop", &[script(&sb, "st1", &msg, 0)]);
    let (mock, out) = hi(OutputFormat::StreamJson, "stop msg");
    assert!(
        out.stdout.contains("STOP-MSG-7431"),
        "Stop systemMessage → the user"
    );
    assert_eq!(main_requests(&mock), 1, "systemMessage does not continue");
    let ctx = json!({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "STOP-CTX-7431"}}).to_string();
    let mock = stop_with("st2", &ctx, 0, "stop ctx");
    assert_eq!(
        main_requests(&mock),
        2,
        "Stop additionalContext → another turn"
    );
    let mock = stop_with("st3", "STOP-EXIT2-7431", 2, "stop exit 2");
    assert_eq!(main_requests(&mock), 2, "Stop exit 2 → another turn");
    assert!(
        seen(&mock, "STOP-EXIT2-7431"),
        "…and its stderr reaches the model"
    );
    let block = json!({"decision": "block", "reason": "STOP-REASON-7431"}).to_string();
    let mock = stop_with("st4", &block, 0, "stop block");
    assert_eq!(
        main_requests(&mock),
        2,
        "Stop decision: block → another turn"
    );
    assert!(seen(&mock, "STOP-REASON-7431"), "…with its reason");

    // SessionEnd: output ignored; exit 1 shows on the CLI's stderr.
    let p = sb.root().join("se1");
    std::fs::write(
        &p,
        "#!/bin/sh\ncat >/dev/null\necho SE-OUT-7431\necho SE-ERR-7431 >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    settings_with(&sb, "SessionEnd", &[p.to_string_lossy().into_owned()]);
    let (_, out) = hi(OutputFormat::Json, "session end");
    assert!(
        !out.stdout.contains("SE-OUT-7431"),
        "SessionEnd output is ignored"
    );
    assert!(
        out.stderr.contains("SE-ERR-7431"),
        "SessionEnd exit 1 → the CLI's stderr: {}",
        out.stderr
    );
}
