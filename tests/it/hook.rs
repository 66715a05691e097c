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
    // a companion tool-results file that is a link is not replaced
    let f = r.session("s1", 1);
    let tr = r.proj.join("s1/tool-results");
    std::fs::create_dir_all(&tr).unwrap();
    let target = r.config().join("elsewhere.txt");
    std::fs::write(&target, &body).unwrap();
    std::os::unix::fs::symlink(&target, tr.join("t.txt")).unwrap();
    let out = r.hook(&[], &event("SessionEnd", &f, "s1"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
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
