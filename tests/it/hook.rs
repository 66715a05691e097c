//! `cchist hook` per event, fed the JSON Claude Code sends (no CLI needed): digests without
//! secrets, Stop policies that fire once, the fence, failures that show, the hook log,
//! shipped names before files, install/uninstall/status.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// A fake AWS secret, built at run time so the repository itself holds no secret-looking literal.
fn secret() -> String {
    format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCYzzzzKEYtest")
}

/// A config root with one project folder.
struct Root {
    dir: tempfile::TempDir,
    proj: PathBuf,
}

impl Root {
    fn new() -> Root {
        let dir = tempfile::tempdir().unwrap();
        let proj = dir.path().join("projects/-home-dev-app");
        std::fs::create_dir_all(&proj).unwrap();
        Root { dir, proj }
    }

    fn config(&self) -> &Path {
        self.dir.path()
    }

    /// A session of `turns` turns, each: prompt, a Bash call (turn 1 prints the planted secret),
    /// its result, a Write call and its result, a final answer.
    fn session(&self, id: &str, turns: usize) -> PathBuf {
        let mut lines = Vec::new();
        let mut parent: Value = Value::Null;
        let mut n = 0;
        let mut push = |mut v: Value, lines: &mut Vec<String>| {
            n += 1;
            let uuid = format!("00000000-0000-4000-8000-{n:012}");
            v["uuid"] = json!(uuid);
            v["parentUuid"] = parent.clone();
            v["sessionId"] = json!(id);
            v["timestamp"] = json!("2026-12-01T10:00:00.000Z");
            lines.push(v.to_string());
            parent = json!(uuid);
        };
        for t in 1..=turns {
            let out = if t == 1 {
                format!("AWS_SECRET_ACCESS_KEY={}", secret())
            } else {
                "ok".into()
            };
            push(
                json!({"type":"user","promptId":format!("p{t}"),"message":{"role":"user","content":format!("Step {t}: do the work")}}),
                &mut lines,
            );
            push(
                json!({"type":"assistant","message":{"id":format!("m{t}a"),"role":"assistant","content":[{"type":"tool_use","id":format!("toolu_b{t}"),"name":"Bash","input":{"command":format!("cat .env # step {t}")}}]}}),
                &mut lines,
            );
            push(
                json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":format!("toolu_b{t}"),"content":out}]}}),
                &mut lines,
            );
            push(
                json!({"type":"assistant","message":{"id":format!("m{t}b"),"role":"assistant","content":[{"type":"tool_use","id":format!("toolu_w{t}"),"name":"Write","input":{"file_path":format!("src/m{t:02}.rs"),"content":"fn f() {}"}}]}}),
                &mut lines,
            );
            push(
                json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":format!("toolu_w{t}"),"content":"written"}]}}),
                &mut lines,
            );
            push(
                json!({"type":"assistant","message":{"id":format!("m{t}c"),"role":"assistant","content":[{"type":"text","text":format!("Answer {t}.")}]}}),
                &mut lines,
            );
        }
        let f = self.proj.join(format!("{id}.jsonl"));
        std::fs::write(&f, lines.join("\n") + "\n").unwrap();
        f
    }

    fn hook(&self, args: &[&str], input: &Value) -> Output {
        self.hook_in(self.config(), args, input)
    }

    fn hook_in(&self, cwd: &Path, args: &[&str], input: &Value) -> Output {
        self.hook_raw(cwd, args, &input.to_string())
    }

    fn hook_raw(&self, cwd: &Path, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .cchist()
            .current_dir(cwd)
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

    fn cchist(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cchist"));
        c.env("CLAUDE_CONFIG_DIR", self.config())
            .env("HOME", self.config());
        c
    }

    fn pipeline(&self, name: &str, text: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn log(&self) -> Vec<Value> {
        std::fs::read_to_string(self.config().join("cchist/hook.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn event(name: &str, transcript: &Path, session_id: &str) -> Value {
    json!({
        "session_id": session_id,
        "transcript_path": transcript,
        "cwd": "/home/dev/app",
        "hook_event_name": name,
    })
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The Stop event of turn `n` of session `s1` in `f` (its prompt id and last answer set).
fn stop_event(f: &Path, n: usize) -> Value {
    let mut ev = event("Stop", f, "s1");
    ev["prompt_id"] = json!(format!("p{n}"));
    ev["last_assistant_message"] = json!(format!("Answer {n}."));
    ev
}

#[test]
fn pre_compact_digest_keeps_the_facts_and_no_secret() {
    let r = Root::new();
    let f = r.session("s1", 3);
    let out = r.hook(&[], &event("PreCompact", &f, "s1"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Step 1: do the work"), "{text}");
    assert!(
        text.contains("Files written:") && text.contains("src/m02.rs"),
        "{text}"
    );
    assert!(text.contains("Commands run:"), "{text}");
    assert!(
        !text.contains(&secret()),
        "the digest carries the planted secret"
    );
    assert_eq!(r.log().last().unwrap()["outcome"], "ok");
}

#[test]
fn session_start_digest_of_the_previous_session_has_no_secret_and_skips_compact() {
    let r = Root::new();
    r.session("previous", 3);
    let current = r.proj.join("current.jsonl");
    let p = r.pipeline(
        "digest.toml",
        "version = 1\n[hook]\nsession_start_digest = true\n[[stage]]\ntype = \"redact\"\n",
    );
    let mut ev = event("SessionStart", &current, "current");
    ev["source"] = json!("startup");
    let out = r.hook(&["--pipeline", &p], &ev);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("previous") && text.contains("Answer 3."),
        "{text}"
    );
    assert!(
        !text.contains(&secret()),
        "the digest carries the planted secret"
    );
    // not again after /compact
    ev["source"] = json!("compact");
    let out = r.hook(&["--pipeline", &p], &ev);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        stdout(&out)
    );
    // unless configured
    let p2 = r.pipeline(
        "digest2.toml",
        "version = 1\n[hook]\nsession_start_digest = true\nsession_start_on_compact = true\n",
    );
    let out = r.hook(&["--pipeline", &p2], &ev);
    assert!(stdout(&out).contains("Answer 3."));
    // off by default
    let out = r.hook(&[], &event("SessionStart", &current, "current"));
    assert!(out.status.success() && out.stdout.is_empty());
}

#[test]
fn stop_notify_says_the_turn_count_once() {
    let r = Root::new();
    let f = r.session("s1", 6);
    let p = r.pipeline("n.toml", "version = 1\n[hook]\nevery = 3\n");
    let mut ev = stop_event(&f, 6);
    // another hook made the model continue: still this turn's Stop
    ev["stop_hook_active"] = json!(true);
    let out = r.hook(&["--pipeline", &p], &ev);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["systemMessage"].as_str().unwrap().contains("has 6 turns"),
        "{v}"
    );
    // the same Stop again (a retry, a second hook): the threshold already fired
    let out = r.hook(&["--pipeline", &p], &ev);
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        stdout(&out)
    );
    let log = r.log();
    let outcomes: Vec<&str> = log.iter().map(|l| l["outcome"].as_str().unwrap()).collect();
    assert_eq!(outcomes, ["fired", "skipped"]);
    assert_eq!(log[0]["event"], "Stop");
    assert_eq!(log[0]["session"], "s1");
    assert!(log[0]["ms"].is_u64() && log[0]["time"].is_string());
}

#[test]
fn stop_never_fires_for_a_turn_that_is_not_there() {
    let r = Root::new();
    let f = r.session("s1", 3);
    let p = r.pipeline(
        "n.toml",
        "version = 1\n[hook]\nevery = 1\nstop_wait_ms = 300\n",
    );
    // the Stop of turn 4 arrives; the transcript still ends with turn 3
    let ev = stop_event(&f, 4);
    let out = r.hook(&["--pipeline", &p], &ev);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    assert_eq!(r.log()[0]["outcome"], "incomplete");
    // turn 1 of a new session whose file is not written yet
    let ev = json!({"session_id":"s2","transcript_path":r.proj.join("s2.jsonl"),"hook_event_name":"Stop","prompt_id":"p1","last_assistant_message":"hi"});
    let out = r.hook(&["--pipeline", &p], &ev);
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(r.log()[1]["outcome"], "incomplete");
}

#[test]
fn stop_fork_is_compressed_redacted_and_leaves_the_session_alone() {
    let r = Root::new();
    let f = r.session("s1", 4);
    let before = std::fs::read(&f).unwrap();
    let p = r.pipeline(
        "fork.toml",
        "version = 1\n[hook]\nat_turns = [4]\naction = \"fork\"\nkeep_last = 2\n[[stage]]\ntype = \"redact\"\n",
    );
    let ev = stop_event(&f, 4);
    let out = r.hook(&["--pipeline", &p], &ev);
    assert!(out.status.success(), "{}", stderr(&out));
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
    let text = std::fs::read_to_string(&copy).unwrap();
    assert!(text.contains("Step 4:") && text.contains("Answer 4.") && text.contains("Step 3:"));
    assert!(
        !text.contains("\"content\":\"Step 1: do the work\""),
        "turn 1 is summarized"
    );
    assert!(
        !text.contains(&secret()),
        "the fork carries the planted secret"
    );
    let out = r.cchist().arg("validate").arg(&copy).output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
}

#[test]
fn stop_fork_with_no_more_turns_than_keep_last_writes_no_copy() {
    let r = Root::new();
    let f = r.session("s1", 2);
    let p = r.pipeline(
        "fork.toml",
        "version = 1\n[hook]\nat_turns = [2]\naction = \"fork\"\nkeep_last = 5\n",
    );
    let out = r.hook(&["--pipeline", &p], &event("Stop", &f, "s1"));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("nothing to compress"),
        "{v}"
    );
    let files = std::fs::read_dir(&r.proj).unwrap().count();
    assert_eq!(files, 1, "no copy written");
}

#[test]
fn failures_exit_1_never_2_and_are_logged() {
    let r = Root::new();
    let cwd = r.config();
    let out = r.hook_raw(cwd, &[], "not json");
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("hook input"));
    let out = r.hook_raw(cwd, &["--strict"], "not json");
    assert_eq!(
        out.status.code(),
        Some(1),
        "--strict exits 1, never 2 (2 blocks Claude Code)"
    );
    let out = r.hook(&[], &json!({"hook_event_name": "Notification"}));
    assert!(out.status.success() && out.stdout.is_empty());
    // SessionEnd with a missing pipeline file: exit 1 (the CLI shows it) and a log line
    let f = r.session("s1", 1);
    let out = r.hook(
        &["--pipeline", "/nonexistent/p.toml"],
        &event("SessionEnd", &f, "s1"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("p.toml"), "{}", stderr(&out));
    let last = r.log().pop().unwrap();
    assert_eq!(
        (last["event"].as_str(), last["outcome"].as_str()),
        (Some("SessionEnd"), Some("failed"))
    );
    // the log never holds content
    let text = std::fs::read_to_string(r.config().join("cchist/hook.log")).unwrap();
    assert!(!text.contains("Step 1") && !text.contains(&secret()));
}

#[test]
fn the_fence_keeps_hooks_on_session_files() {
    let r = Root::new();
    let outside = r.config().join("notes.jsonl");
    let body = format!(
        "{{\"type\":\"user\",\"k\":\"AWS_SECRET_ACCESS_KEY={}\"}}\n",
        secret()
    );
    std::fs::write(&outside, &body).unwrap();
    let txt = r.proj.join("notes.txt");
    std::fs::write(&txt, &body).unwrap();
    let link = r.proj.join("link.jsonl");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let dotdot = r.proj.join("../../notes.jsonl");
    for (p, why) in [
        (&outside, "outside"),
        (&txt, "not a .jsonl"),
        (&link, "symbolic link"),
        (&dotdot, "outside"),
    ] {
        let out = r.hook(&[], &event("SessionEnd", p, "x"));
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}: {}",
            p.display(),
            stderr(&out)
        );
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), body);
    assert_eq!(std::fs::read_to_string(&txt).unwrap(), body);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // PreCompact on /dev/zero: refused at once, nothing read
    let out = r.hook(&[], &event("PreCompact", Path::new("/dev/zero"), "x"));
    assert!(out.status.success() && out.stdout.is_empty());
    assert_eq!(r.log().last().unwrap()["outcome"], "refused");
    // a companion tool-results file that is a link is not replaced, and is refused (exit 1,
    // logged): what it points to was neither scanned nor redacted
    let f = r.session("s1", 1);
    let tr = r.proj.join("s1/tool-results");
    std::fs::create_dir_all(&tr).unwrap();
    let target = r.config().join("elsewhere.txt");
    std::fs::write(&target, &body).unwrap();
    std::os::unix::fs::symlink(&target, tr.join("t.txt")).unwrap();
    let out = r.hook(&[], &event("SessionEnd", &f, "s1"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(r.log().last().unwrap()["outcome"], "refused");
    assert!(
        !std::fs::read_to_string(&f).unwrap().contains(&secret()),
        "the transcript is scrubbed"
    );
    assert!(std::fs::symlink_metadata(tr.join("t.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), body);
    // a companion folder that is a link to elsewhere: refused, exit 1, nothing written there
    let f2 = r.session("s2", 1);
    let away = r.config().join("away/tool-results");
    std::fs::create_dir_all(&away).unwrap();
    std::fs::write(away.join("t.txt"), &body).unwrap();
    std::os::unix::fs::symlink(r.config().join("away"), r.proj.join("s2")).unwrap();
    let out = r.hook(&[], &event("SessionEnd", &f2, "s2"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("outside"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(away.join("t.txt")).unwrap(), body);
}

/// Issue #25, R11: a hook input naming a sub-agent's transcript (`<id>/subagents/agent-*.jsonl`,
/// its `session_id` the file's name) is refused and logged by Stop, SessionEnd and PreCompact:
/// no fork lands in `subagents/`, the file is not rewritten, no digest is printed.
#[test]
fn hooks_refuse_a_sub_agent_transcript() {
    let r = Root::new();
    let main = r.session("s1", 2);
    let written = r.session("agent-abc", 4);
    let sub = r.proj.join("s1/subagents/agent-abc.jsonl");
    std::fs::create_dir_all(sub.parent().unwrap()).unwrap();
    std::fs::rename(&written, &sub).unwrap();
    let before = std::fs::read(&sub).unwrap();
    let main_before = std::fs::read(&main).unwrap();
    let p = r.pipeline(
        "fork.toml",
        "version = 1\n[hook]\nat_turns = [4]\naction = \"fork\"\nkeep_last = 1\nstop_wait_ms = 300\n[[stage]]\ntype = \"redact\"\n",
    );
    let mut stop = event("Stop", &sub, "agent-abc");
    stop["prompt_id"] = json!("p4");
    stop["last_assistant_message"] = json!("Answer 4.");
    for (ev, name) in [
        (stop, "Stop"),
        (event("SessionEnd", &sub, "agent-abc"), "SessionEnd"),
        (event("PreCompact", &sub, "agent-abc"), "PreCompact"),
    ] {
        let out = r.hook(&["--pipeline", &p], &ev);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{name}: {}",
            stderr(&out)
        );
        assert!(
            !stdout(&out).contains("--resume") && !stdout(&out).contains("keep these facts"),
            "{name}: {}",
            stdout(&out)
        );
        let last = r.log().last().cloned().unwrap();
        assert_eq!(last["outcome"], "refused", "{name}: {last}");
        assert!(
            last.to_string().contains("main transcript"),
            "{name}: the log says why: {last}"
        );
        assert_eq!(jsonl_files(&r.proj.join("s1/subagents")), vec![sub.clone()]);
        assert_eq!(jsonl_files(&r.proj), vec![main.clone()]);
        assert_eq!(std::fs::read(&sub).unwrap(), before, "{name}");
        assert_eq!(std::fs::read(&main).unwrap(), main_before, "{name}");
    }
}

/// Issue #25, item 6: the hook's byte bound let 512 MiB of blank lines in (~37 GB at ~73
/// bytes a line). A transcript of more lines than the hook's line bound is refused, logged and
/// left as it is, at once.
#[test]
fn a_transcript_of_millions_of_tiny_lines_is_refused_by_the_hook() {
    let r = Root::new();
    let f = r.session("s1", 1);
    let mut body = std::fs::read(&f).unwrap();
    body.extend(std::iter::repeat_n(b'\n', 4_000_001));
    std::fs::write(&f, &body).unwrap();
    let out = r.hook(&[], &event("SessionEnd", &f, "s1"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("lines, over the hook limit"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&f).unwrap(), body, "left as it is");
    assert_eq!(r.log().last().unwrap()["outcome"], "refused");
}

#[test]
fn a_scrub_file_or_share_folder_in_the_project_changes_nothing() {
    let r = Root::new();
    let work = r.config().join("work");
    std::fs::create_dir_all(work.join("share")).unwrap();
    std::fs::write(work.join("scrub"), "version = 1\n").unwrap();
    let f = r.session("s1", 2);
    let out = r.hook_in(&work, &[], &event("SessionEnd", &f, "s1"));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!std::fs::read_to_string(&f).unwrap().contains(&secret()));
    let f2 = r.session("s2", 2);
    let out = r.hook_in(
        &work,
        &["--pipeline", "share"],
        &event("SessionEnd", &f2, "s2"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!std::fs::read_to_string(&f2).unwrap().contains(&secret()));
}

#[test]
fn install_names_builtins_and_absolute_paths_warns_on_build_folders_and_status_shows_runs() {
    let r = Root::new();
    // A binary in a `target/debug/` folder of its own, so that the warning does not depend on
    // where this build put the real one (CARGO_TARGET_DIR may be anywhere).
    let build = r.config().join("checkout/target/debug");
    std::fs::create_dir_all(&build).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_cchist"), build.join("cchist")).unwrap();
    let out = r
        .cchist()
        .args([
            "hook",
            "install",
            "--event",
            "SessionEnd,Stop",
            "--pipeline",
            "share",
            "--exe",
        ])
        .arg(build.join("cchist"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("build folder"), "{}", stderr(&out));
    let settings: Value =
        serde_json::from_slice(&std::fs::read(r.config().join("settings.json")).unwrap()).unwrap();
    let cmd = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(cmd.ends_with("hook --pipeline builtin:share"), "{cmd}");
    // a pipeline file is written as its absolute path
    let p = r.pipeline("mine.toml", "version = 1\n");
    let out = r
        .cchist()
        .current_dir(r.config())
        .args([
            "hook",
            "install",
            "--event",
            "SessionEnd",
            "--pipeline",
            "mine.toml",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let settings: Value =
        serde_json::from_slice(&std::fs::read(r.config().join("settings.json")).unwrap()).unwrap();
    let cmd = settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(cmd.ends_with(&format!("--pipeline {p}")), "{cmd}");
    // uninstall --event removes only that event
    let out = r
        .cchist()
        .args(["hook", "uninstall", "--event", "Stop"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let settings: Value =
        serde_json::from_slice(&std::fs::read(r.config().join("settings.json")).unwrap()).unwrap();
    assert!(
        settings["hooks"].get("Stop").is_none() && settings["hooks"].get("SessionEnd").is_some()
    );
    // status: installed entries and the last runs, failures counted
    r.hook(
        &[],
        &event("SessionEnd", Path::new("/etc/passwd.jsonl"), "s9"),
    );
    let out = r.cchist().args(["hook", "status"]).output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("SessionEnd") && text.contains("mine.toml"),
        "{text}"
    );
    assert!(
        text.contains("refused") && text.contains("failures: 1 of 1"),
        "{text}"
    );
}

#[test]
fn in_place_text_writes_refuse_links_like_jsonl_writes() {
    let r = Root::new();
    let target = r.config().join("real.txt");
    let body = format!("AWS_SECRET_ACCESS_KEY={}\n", secret());
    std::fs::write(&target, &body).unwrap();
    let link = r.proj.join("link.txt");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out = r
        .cchist()
        .args(["redact", "--in-place"])
        .arg(&link)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link stays a link"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), body);
}

#[test]
fn stop_fork_with_fit_auto_fits_under_the_sessions_auto_compact_threshold() {
    let r = Root::new();
    let f = r.session("s1", 4);
    // A 34 000-token window: the threshold is 34 000 − 20 000 − 13 000 = 1 000 tokens, which
    // the 4-turn session is over, so the fork must summarize to get under it.
    std::fs::write(
        r.config().join("settings.json"),
        r#"{"autoCompactWindow": 34000}"#,
    )
    .unwrap();
    let p = r.pipeline(
        "fork.toml",
        "version = 1\n[hook]\nat_turns = [4]\naction = \"fork\"\nfit = \"auto\"\n",
    );
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("fit in ~1000 tokens"), "{msg}");
    let id = msg.rsplit("claude --resume ").next().unwrap().trim();
    let copy = f.with_file_name(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&copy).unwrap();
    // The first prompt stays; the turns after it are summarized.
    assert!(
        !text.contains("\"content\":\"Step 2: do the work\""),
        "turn 2 is summarized:\n{text}"
    );
    // A model the CLI never auto-compacts has no threshold (without the window setting, which
    // would give it one): the fork is refused, saying why.
    std::fs::remove_file(r.config().join("settings.json")).unwrap();
    let g = r.session("s2", 4);
    let haiku = std::fs::read_to_string(&g)
        .unwrap()
        .replace("\"role\":\"assistant\"", "\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}");
    std::fs::write(&g, haiku).unwrap();
    let mut ev = stop_event(&g, 4);
    ev["session_id"] = json!("s2");
    let out = r.hook(&["--pipeline", &p], &ev);
    // A hook failure never blocks Claude Code: it is said on stderr and logged.
    assert!(
        stderr(&out).contains("does not auto-compact claude-haiku-4-5"),
        "{}",
        stderr(&out)
    );
    let copies = std::fs::read_dir(&r.proj).unwrap().count();
    assert_eq!(copies, 3, "s1, its fork and s2; no fork of s2");
}

/// An executable history manager in `r`'s folder: `body` runs after its input is saved to
/// `input.json` and its `TURN_*` variables to `env.txt`.
fn manager(r: &Root, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = r.config().display().to_string();
    let p = r.config().join(name);
    std::fs::write(
        &p,
        format!("#!/bin/sh\ncat > '{dir}/input.json'\nenv | grep -E '^(TURN_|TOTAL_TURNS|CURRENT_TURN_UUID|SESSION_ID|TRANSCRIPT_PATH)' | sort > '{dir}/env.txt'\n{body}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

/// A manager replacing turns 1–2 with a summary that quotes the planted secret (what it writes
/// goes through the pipeline's redaction too).
fn summarizing_manager(r: &Root) -> String {
    let doc = format!(
        r#"{{"action":"modify_history","operations":[{{"type":"replace","turns":["'"$TURN_1"'","'"$TURN_2"'"],"with":{{"type":"user","content":"MANAGER-SUMMARY of turns 1-2, key AWS_SECRET_ACCESS_KEY={}"}}}}]}}"#,
        secret()
    );
    manager(r, "manager.sh", &format!("printf '%s' '{doc}'"))
}

fn command_pipeline(r: &Root, command: &str, extra: &str) -> String {
    r.pipeline(
        "manager.toml",
        &format!("version = 1\n[hook]\naction = \"command\"\ncommand = {command:?}\n{extra}\n[[stage]]\ntype = \"redact\"\n"),
    )
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    v.sort();
    v
}

#[test]
fn history_manager_edit_goes_to_a_redacted_fork_and_gets_the_proposals_input() {
    let r = Root::new();
    let f = r.session("s1", 4);
    let before = std::fs::read(&f).unwrap();
    let m = summarizing_manager(&r);
    let p = command_pipeline(&r, &m, "at_turns = [4]\n");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("unchanged"), "{msg}");
    let id = msg.rsplit("claude --resume ").next().unwrap().trim();
    let copy = f.with_file_name(format!("{id}.jsonl"));
    assert!(copy.is_file(), "{msg}");
    assert_eq!(
        std::fs::read(&f).unwrap(),
        before,
        "the live file is never edited"
    );
    let text = std::fs::read_to_string(&copy).unwrap();
    assert!(text.contains("MANAGER-SUMMARY"));
    assert!(!text.contains("Step 1:") && !text.contains("Step 2:"));
    assert!(text.contains("Step 3:") && text.contains("Answer 4."));
    assert!(
        !text.contains(&secret()),
        "what the manager wrote is redacted"
    );
    let out = r.cchist().arg("validate").arg(&copy).output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
    // the proposal's input and environment
    let input: Value =
        serde_json::from_slice(&std::fs::read(r.config().join("input.json")).unwrap()).unwrap();
    assert_eq!(input["event"], "TurnCount");
    assert_eq!(input["session_id"], "s1");
    assert_eq!(input["turn_count"], 4);
    assert_eq!(input["total_turns"], 4);
    assert_eq!(input["recent_turns"].as_array().unwrap().len(), 3);
    let first = "00000000-0000-4000-8000-000000000001";
    let env = std::fs::read_to_string(r.config().join("env.txt")).unwrap();
    assert!(env.contains(&format!("TURN_1={first}\n")), "{env}");
    assert!(env.contains("TURN_4=") && !env.contains("TURN_5="), "{env}");
    assert!(
        env.contains("TOTAL_TURNS=4\n") && env.contains("SESSION_ID=s1\n"),
        "{env}"
    );
    assert_eq!(
        input["current_turn_uuid"],
        "00000000-0000-4000-8000-000000000019"
    );
    let log = r.log();
    assert_eq!(log.last().unwrap()["outcome"], "fired", "{log:?}");
    // the threshold fires once
    let again = r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    assert!(stdout(&again).is_empty(), "{}", stdout(&again));
    assert_eq!(jsonl_files(&r.proj).len(), 2);
}

#[test]
fn history_manager_without_turn_rules_runs_after_every_turn_as_post_turn() {
    let r = Root::new();
    let f = r.session("s1", 2);
    let m = manager(&r, "quiet.sh", "exit 0");
    let p = command_pipeline(&r, &m, "");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 2));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "nothing to do, nothing said");
    let input: Value =
        serde_json::from_slice(&std::fs::read(r.config().join("input.json")).unwrap()).unwrap();
    assert_eq!(input["event"], "PostTurn");
    assert_eq!(input["turn_count"], 2);
    let log = r.log();
    assert!(
        log[0]["detail"].as_str().unwrap().contains("nothing to do"),
        "{log:?}"
    );
}

#[test]
fn history_manager_failures_change_nothing_say_why_and_never_block() {
    let unknown = r#"{"action":"modify_history","operations":[{"type":"delete","turns":["00000000-0000-4000-8000-999999999999"]}]}"#;
    let cases: Vec<(&str, String, &str, &str)> = vec![
        ("garbage", "echo 'Step 1: do the work, as garbage'".into(), "", "not a modify_history document"),
        ("exit 1", "echo '{}'; exit 1".into(), "", "exited 1"),
        ("hang", "sleep 30".into(), "command_timeout_ms = 300\n", "past its timeout of 300 ms"),
        ("unknown uuid", format!("printf '%s' '{unknown}'"), "", "not in this session"),
        (
            "bad field",
            r#"printf '%s' '{"action":"modify_history","operations":[{"type":"replace","turns":[1],"with":{"type":"user","content":"x","colour":"red"}}]}'"#.into(),
            "",
            "colour",
        ),
    ];
    for (what, body, extra, why) in cases {
        let r = Root::new();
        let f = r.session("s1", 3);
        let before = std::fs::read(&f).unwrap();
        let m = manager(&r, "bad.sh", &body);
        let p = command_pipeline(&r, &m, extra);
        let start = std::time::Instant::now();
        let out = r.hook(&["--pipeline", &p], &stop_event(&f, 3));
        assert!(out.status.success(), "{what}: exit {:?}", out.status);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{what}"
        );
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{what}: {}", stdout(&out)));
        let msg = v["systemMessage"].as_str().unwrap();
        assert!(
            msg.contains(why) && msg.contains("unchanged"),
            "{what}: {msg}"
        );
        assert_eq!(std::fs::read(&f).unwrap(), before, "{what}");
        assert_eq!(jsonl_files(&r.proj), vec![f.clone()], "{what}: no fork");
        let log = std::fs::read_to_string(r.config().join("cchist/hook.log")).unwrap();
        assert!(
            log.contains("\"failed\"") && log.contains(why),
            "{what}: {log}"
        );
        assert!(
            !log.contains("Step 1"),
            "{what}: the log quotes the manager's output: {log}"
        );
    }
    // block_on_error: exit 2 with the reason on stderr (Claude Code gives it to the model)
    let r = Root::new();
    let f = r.session("s1", 3);
    let m = manager(&r, "bad.sh", "exit 1");
    let p = command_pipeline(&r, &m, "block_on_error = true\n");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 3));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("exited 1"), "{}", stderr(&out));
}

#[test]
fn history_manager_with_apply_session_end_edits_the_session_when_it_ends() {
    let r = Root::new();
    let f = r.session("s1", 4);
    let before = std::fs::read(&f).unwrap();
    let m = summarizing_manager(&r);
    let p = command_pipeline(&r, &m, "at_turns = [4]\napply = \"session-end\"\n");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["systemMessage"].as_str().unwrap().contains("queued"),
        "{v}"
    );
    assert_eq!(
        std::fs::read(&f).unwrap(),
        before,
        "nothing changes while it runs"
    );
    assert_eq!(jsonl_files(&r.proj).len(), 1, "no fork");
    let out = r.hook(&["--pipeline", &p], &event("SessionEnd", &f, "s1"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(
        text.contains("MANAGER-SUMMARY"),
        "the edit landed in the session"
    );
    assert!(!text.contains("Step 1:") && text.contains("Step 3:"));
    assert!(!text.contains(&secret()));
    let out = r.cchist().arg("validate").arg(&f).output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
    let log = r.log();
    assert!(
        log.last().unwrap()["detail"]
            .as_str()
            .unwrap()
            .contains("1 queued edits applied"),
        "{log:?}"
    );
    // the queue is gone: a second end applies nothing again
    let out = r.hook(&["--pipeline", &p], &event("SessionEnd", &f, "s1"));
    assert!(out.status.success());
    assert!(!r.log().last().unwrap()["detail"]
        .as_str()
        .unwrap()
        .contains("queued"));
}

#[test]
fn a_queued_edit_whose_uuid_is_gone_at_session_end_is_not_applied_and_says_so() {
    let r = Root::new();
    let f = r.session("s1", 4);
    let m = summarizing_manager(&r);
    let p = command_pipeline(&r, &m, "at_turns = [4]\napply = \"session-end\"\n");
    r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    // turn 1 goes away meanwhile (another edit)
    let ops = r.pipeline(
        "del.json",
        r#"{"action":"modify_history","operations":[{"type":"delete","turns":[1]}]}"#,
    );
    let out = r
        .cchist()
        .args(["apply", &ops, "--force", "--file"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let between = std::fs::read(&f).unwrap();
    let out = r.hook(&["--pipeline", &p], &event("SessionEnd", &f, "s1"));
    assert_eq!(out.status.code(), Some(1), "a failing SessionEnd exits 1");
    assert!(
        stderr(&out).contains("no longer in the session"),
        "{}",
        stderr(&out)
    );
    let after = std::fs::read_to_string(&f).unwrap();
    assert!(!after.contains("MANAGER-SUMMARY"));
    // the scrub ran (in place), the edit did not
    assert_eq!(
        after.lines().count(),
        String::from_utf8_lossy(&between).lines().count()
    );
}

fn post_compact_event(f: &Path, session: &str, summary: &str) -> Value {
    let mut ev = event("PostCompact", f, session);
    ev["trigger"] = json!("manual");
    ev["compact_summary"] = json!(summary);
    ev
}

#[test]
fn post_compact_saves_the_redacted_summary_and_the_next_session_start_shows_it() {
    let r = Root::new();
    let f = r.session("previous", 2);
    let p = r.pipeline(
        "mem.toml",
        "version = 1\n[hook]\nsession_start_digest = true\nmemory_keep = 2\n[[stage]]\ntype = \"redact\"\n",
    );
    // The summary restates the secret twice: once with its key (a rule matches), once bare
    // (only the session's known secrets catch it).
    let summary = format!(
        "MEMORY-SUMMARY: the user set AWS_SECRET_ACCESS_KEY={s} in .env; the value {s} must stay.",
        s = secret()
    );
    let out = r.hook(
        &["--pipeline", &p],
        &post_compact_event(&f, "previous", &summary),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.starts_with("cchist: compaction summary saved") && said.lines().count() == 1,
        "one plain line (PostCompact output is not parsed as JSON): {said}"
    );
    let dir = r.config().join("cchist/memory/-home-dev-app");
    let saved: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    let name = saved[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.ends_with("-previous.md"), "{name}");
    let text = std::fs::read_to_string(&saved[0]).unwrap();
    assert!(text.contains("MEMORY-SUMMARY"), "{text}");
    assert!(
        !text.contains(&secret()),
        "the saved summary holds the secret: {text}"
    );
    // memory list / show
    let out = r.cchist().args(["memory", "list"]).output().unwrap();
    assert!(
        out.status.success() && stdout(&out).contains("previous"),
        "{}",
        stdout(&out)
    );
    let out = r
        .cchist()
        .args(["memory", "show", "prev"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("MEMORY-SUMMARY"), "{}", stdout(&out));
    let out = r
        .cchist()
        .args(["memory", "show", "nosuch"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("memory list"), "{}", stderr(&out));
    // the next session's SessionStart shows the digest and the summary, once
    let current = r.proj.join("current.jsonl");
    let mut ev = event("SessionStart", &current, "current");
    ev["source"] = json!("startup");
    let out = r.hook(&["--pipeline", &p], &ev);
    let text = stdout(&out);
    assert_eq!(text.matches("MEMORY-SUMMARY").count(), 1, "{text}");
    assert!(
        text.contains("Answer 2.") && !text.contains(&secret()),
        "{text}"
    );
    // newest N kept
    for i in 0..3 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        r.hook(
            &["--pipeline", &p],
            &post_compact_event(&f, "previous", &format!("again {i}")),
        );
    }
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        2,
        "memory_keep = 2"
    );
}

#[test]
fn matchers_are_written_on_the_group_checked_per_event_and_shown_by_status() {
    let r = Root::new();
    let out = r
        .cchist()
        .args([
            "hook",
            "install",
            "--event",
            "PreCompact,PostCompact",
            "--matcher",
            "auto",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = r
        .cchist()
        .args([
            "hook",
            "install",
            "--event",
            "SessionStart",
            "--matcher",
            "startup|resume",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let settings: Value =
        serde_json::from_slice(&std::fs::read(r.config().join("settings.json")).unwrap()).unwrap();
    assert_eq!(settings["hooks"]["PreCompact"][0]["matcher"], "auto");
    assert_eq!(settings["hooks"]["PostCompact"][0]["matcher"], "auto");
    assert_eq!(
        settings["hooks"]["SessionStart"][0]["matcher"],
        "startup|resume"
    );
    for (ev, m, why) in [
        ("PreCompact", "startup", "not a PreCompact trigger"),
        ("SessionStart", "auto", "not a SessionStart source"),
        ("Stop", "auto", "Stop takes no matcher"),
    ] {
        let out = r
            .cchist()
            .args(["hook", "install", "--event", ev, "--matcher", m])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{ev} {m}");
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
    }
    let out = r.cchist().args(["hook", "status"]).output().unwrap();
    let text = stdout(&out);
    assert!(
        text.contains("[matcher auto]") && text.contains("[matcher startup|resume]"),
        "{text}"
    );
    let out = r
        .cchist()
        .args(["hook", "status", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = v["settings"][0]["hooks"].as_array().unwrap();
    assert!(
        hooks
            .iter()
            .any(|h| h["event"] == "PreCompact" && h["matcher"] == "auto"),
        "{v}"
    );
}

/// `examples/history-manager.sh`, or `None` (skip, or fail under CI) without jq.
pub(crate) fn example_manager() -> Option<String> {
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

#[test]
fn the_example_history_manager_compresses_turns_1_to_5_at_turn_10() {
    let Some(m) = example_manager() else {
        return;
    };
    let r = Root::new();
    let f = r.session("s1", 10);
    let before = std::fs::read(&f).unwrap();
    // PostTurn: it runs after every turn and does nothing before turn 10
    let p = command_pipeline(&r, &m, "");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 10));
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{} / {}", stdout(&out), stderr(&out)));
    let msg = v["systemMessage"].as_str().unwrap();
    let id = msg.rsplit("claude --resume ").next().unwrap().trim();
    let copy = f.with_file_name(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&copy).unwrap();
    assert!(text.contains("Summary of turns 1-5 (by cchist)"), "{text}");
    for t in 1..=5 {
        assert!(
            !text.contains(&format!("\"content\":\"Step {t}: do the work\"")),
            "turn {t} kept"
        );
    }
    for t in 6..=10 {
        assert!(
            text.contains(&format!("Step {t}: do the work")),
            "turn {t} lost"
        );
    }
    // the digest names what turns 1-5 did
    assert!(text.contains("src/m01.rs"), "the summary has the facts");
    assert!(!text.contains(&secret()), "the summary is redacted");
    assert_eq!(std::fs::read(&f).unwrap(), before);
    let out = r.cchist().arg("validate").arg(&copy).output().unwrap();
    assert!(out.status.success(), "{}", stdout(&out));
    // at another turn: nothing
    let r = Root::new();
    let f = r.session("s1", 9);
    let p = command_pipeline(&r, &m, "");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 9));
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_history_manager_failure_quoting_a_secret_shows_it_redacted() {
    let r = Root::new();
    let f = r.session("s1", 2);
    // the document's `action` is quoted back in the error: make it a secret
    let body = format!(
        r#"printf '%s' '{{"action":"AWS_SECRET_ACCESS_KEY={}","operations":[{{"type":"delete","turns":[1]}}]}}'"#,
        secret()
    );
    let m = manager(&r, "leaky.sh", &body);
    let p = command_pipeline(&r, &m, "");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 2));
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(said.contains("history manager failed"), "{said}");
    assert!(
        !said.contains(&secret()),
        "the user's message holds the secret: {said}"
    );
    let log = std::fs::read_to_string(r.config().join("cchist/hook.log")).unwrap();
    assert!(!log.contains(&secret()), "{log}");
}

#[test]
fn another_tools_hook_entry_is_never_taken_for_cchists() {
    // `<binary> hook` is a common shape: only an entry whose program is this binary (its path,
    // or a link to it) or is named `cchist` is cchist's.
    let r = Root::new();
    let settings = r.config().join("settings.json");
    let other = json!({"type": "command", "command": "/usr/local/bin/othertool hook"});
    let other_pipeline =
        json!({"type": "command", "command": "/usr/local/bin/othertool hook --pipeline x"});
    std::fs::write(
        &settings,
        json!({"hooks": {
            "SessionEnd": [{"hooks": [other.clone()]}],
            "Stop": [{"hooks": [other_pipeline.clone()]}],
        }})
        .to_string(),
    )
    .unwrap();
    let commands = |ev: &str| -> Vec<String> {
        let v: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
        v["hooks"][ev]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
            .map(|h| h["command"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let out = r
        .cchist()
        .args(["hook", "install", "--event", "SessionEnd,Stop"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    for (ev, theirs) in [("SessionEnd", &other), ("Stop", &other_pipeline)] {
        let c = commands(ev);
        assert_eq!(c.len(), 2, "{ev}: {c:?}");
        assert!(
            c.contains(&theirs["command"].as_str().unwrap().to_string()),
            "{ev}: {c:?}"
        );
    }
    let out = r.cchist().args(["hook", "status"]).output().unwrap();
    assert!(!stdout(&out).contains("othertool"), "{}", stdout(&out));
    let out = r.cchist().args(["hook", "uninstall"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(&settings)
            .unwrap()
            .parse::<Value>()
            .unwrap(),
        json!({"hooks": {
            "SessionEnd": [{"hooks": [other]}],
            "Stop": [{"hooks": [other_pipeline]}],
        }})
    );
    // Nothing of cchist's left: a second uninstall says so and leaves the file alone.
    let before = std::fs::read(&settings).unwrap();
    let out = r.cchist().args(["hook", "uninstall"]).output().unwrap();
    assert!(
        stderr(&out).contains("no cchist hook entry"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&settings).unwrap(), before);
}

#[test]
fn a_queued_history_manager_document_is_stored_redacted_and_check_all_scans_hook_state() {
    let r = Root::new();
    let f = r.session("s1", 4);
    // The manager restates the session's secret bare (only the session's known secrets catch
    // it) and a vendor token of its own (the default rules catch it).
    let token = format!("ghp_{}", "R8aQ2vLm5Xz0Tk3Wn7Pc1Ys9Hd4Fb6Je2Gu0");
    let doc = format!(
        r#"{{"action":"modify_history","operations":[{{"type":"replace","turns":["'"$TURN_1"'","'"$TURN_2"'"],"with":{{"type":"user","content":"MANAGER-SUMMARY: {} and {token}"}}}}]}}"#,
        secret()
    );
    let m = manager(&r, "manager.sh", &format!("printf '%s' '{doc}'"));
    let p = command_pipeline(&r, &m, "at_turns = [4]\napply = \"session-end\"\n");
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    assert!(out.status.success(), "{}", stderr(&out));
    let queue = r.config().join("cchist/hook-state/s1.queue.json");
    let queued = std::fs::read_to_string(&queue).unwrap();
    assert!(queued.contains("MANAGER-SUMMARY"), "{queued}");
    assert!(
        !queued.contains(&secret()),
        "the known secret is queued raw"
    );
    assert!(!queued.contains(&token), "the vendor token is queued raw");
    let check = |r: &Root| {
        r.cchist()
            .args(["check", "-q", "--all"])
            .current_dir(r.config())
            .output()
            .unwrap()
    };
    // The redacted queue is clean; the session itself is not, so check a second root holding
    // only a queue with a secret (one an older cchist wrote): `check --all` finds it.
    let bare = Root::new();
    std::fs::write(
        bare.proj.join("s2.jsonl"),
        json!({"type": "user", "uuid": "u1", "parentUuid": null, "sessionId": "s2",
            "message": {"role": "user", "content": "hello"}})
        .to_string()
            + "\n",
    )
    .unwrap();
    assert_eq!(check(&bare).status.code(), Some(0), "a clean root");
    let dir = bare.config().join("cchist/hook-state");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("s2.queue.json"),
        json!({"documents": [format!("note {token}")]}).to_string(),
    )
    .unwrap();
    let out = bare
        .cchist()
        .args(["check", "--all"])
        .current_dir(bare.config())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("s2.queue.json"), "{}", stdout(&out));
    // The edit still applies at the session's end, and what it inserted is redacted.
    let out = r.hook(&["--pipeline", &p], &event("SessionEnd", &f, "s1"));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.contains("MANAGER-SUMMARY"), "the edit landed");
    assert!(!text.contains(&secret()) && !text.contains(&token));
    assert!(!queue.exists());
    // A hook pipeline without a redact stage: the queue is kept redacted all the same.
    let r = Root::new();
    let f = r.session("s1", 4);
    let m = manager(&r, "manager.sh", &format!("printf '%s' '{doc}'"));
    let p = r.pipeline(
        "bare.toml",
        &format!("version = 1\n[hook]\naction = \"command\"\ncommand = {m:?}\nat_turns = [4]\napply = \"session-end\"\n"),
    );
    let out = r.hook(&["--pipeline", &p], &stop_event(&f, 4));
    assert!(out.status.success(), "{}", stderr(&out));
    let queued =
        std::fs::read_to_string(r.config().join("cchist/hook-state/s1.queue.json")).unwrap();
    assert!(queued.contains("MANAGER-SUMMARY"), "{queued}");
    assert!(
        !queued.contains(&secret()) && !queued.contains(&token),
        "{queued}"
    );
}
