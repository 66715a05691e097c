//! Issue #25 (round 3): what cchist prints holds no secret, wherever in the input the secret
//! sits — a record's uuid, a file's name, an operations document, an imported working
//! directory. Each test runs the binary in every report format and looks for any 8-byte run of
//! the fake token in what it printed.
//!
//! Fake secrets are built at run time, so no token-shaped literal sits in the source.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::{age, cchist};

const SID: &str = "11111111-2222-4333-8444-555555555555";

/// `n` characters of `alphabet`, different on every run.
fn random(alphabet: &str, n: usize) -> String {
    let a = alphabet.as_bytes();
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        ^ (u64::from(std::process::id()) << 32)
        ^ 0x9e37_79b9_7f4a_7c15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            a[(x % a.len() as u64) as usize] as char
        })
        .collect()
}

/// A fake GitHub token: `ghp_` and 36 letters and digits.
fn ghp() -> String {
    let alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    format!("ghp_{}", random(alnum, 36))
}

/// A fake AWS access key id.
fn akia() -> String {
    format!("AKIA{}", random("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16))
}

/// Panics when `out` (stdout and stderr) holds any 8-byte run of `secret`.
#[track_caller]
fn assert_no_run_of(what: &str, out: &Output, secret: &str) {
    let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
    let text = String::from_utf8_lossy(&all);
    for w in secret.as_bytes().windows(8) {
        let w = std::str::from_utf8(w).unwrap();
        assert!(
            !text.contains(w),
            "{what}: printed part of the secret ({w}):\n{}",
            text.replace(secret, "<THE SECRET>")
        );
    }
}

/// A config folder with one project `-tmp-proj`.
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("claude");
        let project = root.join("projects/-tmp-proj");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Sandbox {
            _dir: dir,
            root,
            project,
        }
    }

    fn cmd(&self) -> std::process::Command {
        let mut c = cchist();
        c.env("CLAUDE_CONFIG_DIR", &self.root)
            .env("HOME", self.root.parent().unwrap().join("home"))
            .env_remove("CCHIST_REDACT_KEY");
        c
    }

    fn run(&self, args: &[&str], files: &[&Path]) -> Output {
        self.cmd().args(args).args(files).output().unwrap()
    }

    /// `path` written with `text`, two hours old (not live).
    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        age(path, 7200);
    }
}

/// A record whose uuid is a token (and whose text holds another secret): no report of any run —
/// text, `--diff`, `--json` of a dry run, of `--out-dir` and of `-i`, `check` as text, JSON and
/// SARIF — prints any part of the uuid.
#[test]
fn a_secret_uuid_is_redacted_in_every_report() {
    let sb = Sandbox::new();
    let (t, k) = (ghp(), akia());
    let file = sb.project.join(format!("{SID}.jsonl"));
    let line = crate::common::message_line("user", &t, None, SID, &format!("key {k}"));
    sb.write(&file, &line);
    let od = sb.root.parent().unwrap().join("od");
    let od = od.to_str().unwrap();
    for args in [
        &["check"][..],
        &["check", "--json"],
        &["check", "--format", "sarif"],
        &["redact", "--diff"],
        &["redact", "--diff", "--json"],
        &["redact", "--dry-run"],
        &["redact", "--dry-run", "--json"],
        &["redact", "--out-dir", od, "--json"],
        &["run", "-p", "scrub", "--dry-run", "--json"],
        &["run", "-p", "scrub", "--dry-run"],
    ] {
        let out = sb.run(args, &[&file]);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{args:?}: {out:?}"
        );
        assert_no_run_of(&format!("{args:?}"), &out, &t);
    }
    let out = sb.run(&["redact", "-i", "--json"], &[&file]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_no_run_of("redact -i --json", &out, &t);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["files"][0]["report"]["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{v}");
    for f in findings {
        assert_eq!(f["uuid"], "[REDACTED:github-pat]", "{f}");
    }
}

/// A sub-agent transcript named after a token (`subagents/agent-ghp_….jsonl`) is still scanned
/// and redacted, and every report names it with a placeholder where the token was.
#[test]
fn a_secret_in_a_file_name_is_redacted_in_every_report() {
    let sb = Sandbox::new();
    let (t, k) = (ghp(), akia());
    let main = sb.project.join(format!("{SID}.jsonl"));
    sb.write(
        &main,
        &crate::common::message_line("user", "u1", None, SID, "hello"),
    );
    let agent = sb.project.join(format!("{SID}/subagents/agent-{t}.jsonl"));
    sb.write(
        &agent,
        &crate::common::message_line("user", "s1", None, SID, &format!("key {k}")),
    );
    let mut seen_findings = 0;
    for args in [
        &["check", "--all"][..],
        &["check", "--all", "--json"],
        &["check", "--all", "--format", "sarif"],
        &["redact", "--all", "--dry-run"],
        &["redact", "--all", "--dry-run", "--json"],
        &["redact", "--all", "--diff"],
        &["redact", "--all", "--diff", "--json"],
    ] {
        let out = sb.run(args, &[]);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{args:?}: {out:?}"
        );
        assert_no_run_of(&format!("{args:?}"), &out, &t);
        let all = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
        if all.contains("agent-[REDACTED:github-pat]") {
            seen_findings += 1;
        }
    }
    assert!(seen_findings >= 5, "the file is named with a placeholder");
    // The file was processed: check finds the key in it (and the token in its name, issue
    // #25 round 3), and -i redacts it.
    let out = sb.run(&["check", "--all", "--json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["findings"], 2, "{v}");
    let kinds: Vec<&str> = v["files"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(kinds, ["name", "-"], "{v}");
    // Without a backup undo could rename it back from, the name is left and the run says so
    // (exit 2, issue #25 R8); the content is redacted all the same.
    let out = sb.run(&["redact", "--all", "-i"], &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_no_run_of("redact --all -i", &out, &t);
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backup"));
    let text = std::fs::read_to_string(&agent).unwrap();
    assert!(!text.contains(&k), "{text}");
    // With one, it takes its placeholder name.
    let out = sb.run(&["redact", "--all", "-i", "--backup"], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_no_run_of("redact --all -i --backup", &out, &t);
    assert!(!agent.exists());
    assert!(agent
        .with_file_name("agent-REDACTED-github-pat.jsonl")
        .is_file());
}

/// A project folder and a sub-agent transcript named after a token, backed up by
/// `redact -i --backup`: the listings of backups (`backups list`, `undo --list`, as text and
/// JSON), `backups prune --dry-run` and `undo` name them with a placeholder where the token was
/// (issue #25, R6), and each still lists the backup.
#[test]
fn backup_listings_redact_a_secret_in_a_file_name() {
    let sb = Sandbox::new();
    let (t, k) = (ghp(), akia());
    let project = sb.root.join(format!("projects/-tmp-{t}"));
    let main = project.join(format!("{SID}.jsonl"));
    sb.write(
        &main,
        &crate::common::message_line("user", "u1", None, SID, &format!("key {k}")),
    );
    let agent = project.join(format!("{SID}/subagents/agent-{t}.jsonl"));
    sb.write(
        &agent,
        &crate::common::message_line("user", "s1", None, SID, &format!("key {k}")),
    );
    let out = sb.run(&["redact", "-i", "--backup"], &[&main]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_no_run_of("redact -i --backup", &out, &t);
    for args in [
        &["backups", "list"][..],
        &["backups", "list", "--json"],
        &["undo", "--list"],
        &["undo", "--list", "--json"],
        &[
            "backups",
            "prune",
            "--older-than",
            "2999-01-01",
            "--dry-run",
        ],
        &[
            "backups",
            "prune",
            "--older-than",
            "2999-01-01",
            "--dry-run",
            "--json",
        ],
    ] {
        let out = sb.run(args, &[]);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert_no_run_of(&format!("{args:?}"), &out, &t);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("-tmp-[REDACTED:github-pat]"),
            "{args:?}: the backup is listed with a placeholder: {text}"
        );
    }
    let out = sb.run(&["undo", "-s", SID, "--force"], &[]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_no_run_of("undo", &out, &t);
}

/// An operations document whose values are tokens — a turn to delete, an operation's type, an
/// `after`, an inserted record's label — is refused (or applied) by `cchist apply` without its
/// messages, label mapping or JSON report printing any part of them, as the hook's path does.
#[test]
fn apply_prints_no_value_of_its_document() {
    let sb = Sandbox::new();
    let t = ghp();
    let file = sb.project.join(format!("{SID}.jsonl"));
    let data = crate::common::message_line("user", "u1", None, SID, "one")
        + &crate::common::message_line("assistant", "a1", Some("u1"), SID, "two")
        + &crate::common::message_line("user", "u2", Some("a1"), SID, "three")
        + &crate::common::message_line("assistant", "a2", Some("u2"), SID, "four");
    sb.write(&file, &data);
    let ops = sb.root.parent().unwrap().join("ops.json");
    let insert = serde_json::json!({"type": "insert", "after": 1,
        "content": {"type": "user", "content": "x", "uuid": t}});
    for (op, code) in [
        (serde_json::json!({"type": "delete", "turns": [t]}), 2),
        (serde_json::json!({"type": t}), 2),
        (
            serde_json::json!({"type": "insert", "after": t, "content": {"type": "user", "content": "x"}}),
            2,
        ),
        (
            serde_json::json!({"type": "delete", "turns": [1], "after": t}),
            2,
        ),
        (insert, 0),
    ] {
        let doc = serde_json::json!({"action": "modify_history", "operations": [op]});
        std::fs::write(&ops, doc.to_string()).unwrap();
        for extra in [
            &["--dry-run"][..],
            &["--dry-run", "--json"],
            &["--diff"],
            &["--diff=json"],
        ] {
            let out = sb
                .cmd()
                .arg("apply")
                .arg(&ops)
                .args(["-s", SID])
                .args(extra)
                .output()
                .unwrap();
            let what = format!("{op} {extra:?}");
            assert_no_run_of(&what, &out, &t);
            if extra.iter().all(|a| !a.starts_with("--diff")) {
                assert_eq!(out.status.code(), Some(code), "{what}: {out:?}");
            }
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), data);
}

/// A Codex rollout whose `session_meta.cwd` (or a later `turn_context.cwd`) holds a token.
fn hostile_rollout(dir: &Path, t: &str, in_turn: bool) -> PathBuf {
    let (meta, turn) = if in_turn {
        ("/tmp/proj".to_string(), format!("/tmp/{t}/sub"))
    } else {
        (format!("/tmp/{t}"), format!("/tmp/{t}"))
    };
    let lines = [
        serde_json::json!({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
            "payload": {"id": "abc", "cwd": meta}}),
        serde_json::json!({"timestamp": "2026-01-01T00:00:01Z", "type": "response_item",
            "payload": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "list files"}]}}),
        serde_json::json!({"timestamp": "2026-01-01T00:00:01Z", "type": "turn_context",
            "payload": {"cwd": turn, "model": "gpt-5"}}),
        serde_json::json!({"timestamp": "2026-01-01T00:00:02Z", "type": "response_item",
            "payload": {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}]}}),
    ];
    let p = dir.join("rollout-2026-01-01T00-00-00-abc.jsonl");
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&p, text).unwrap();
    p
}

/// `cchist import` of a rollout whose working directory holds a token is refused (exit 2,
/// nothing written, the value never printed) with a message that says how to name another
/// one; with `--project DIR` it goes ahead and every record's `cwd` that held the token is DIR.
/// The same for every source whose directory comes from `--project` or the current directory.
#[test]
fn import_refuses_a_working_directory_that_holds_a_secret() {
    let sb = Sandbox::new();
    let t = ghp();
    let src = sb.root.parent().unwrap().join("src");
    std::fs::create_dir_all(&src).unwrap();
    let projects = sb.root.join("projects");
    let before: Vec<_> = std::fs::read_dir(&projects).unwrap().collect();
    for in_turn in [false, true] {
        let r = hostile_rollout(&src, &t, in_turn);
        for extra in [&[][..], &["--json"], &["--dry-run"], &["-o", "-"]] {
            let out = sb.cmd().arg("import").arg(&r).args(extra).output().unwrap();
            let what = format!("import {extra:?} (in turn: {in_turn})");
            assert_eq!(out.status.code(), Some(2), "{what}: {out:?}");
            assert_no_run_of(&what, &out, &t);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("working directory") && err.contains("holds a secret"),
                "{what}: {err}"
            );
            assert!(err.contains("--project DIR"), "{what}: {err}");
        }
        assert_eq!(std::fs::read_dir(&projects).unwrap().count(), before.len());
        // With --project the import goes ahead, and the records take its directory.
        let dir = sb.root.parent().unwrap().join("work");
        std::fs::create_dir_all(&dir).unwrap();
        let out = sb
            .cmd()
            .arg("import")
            .arg(&r)
            .arg("--project")
            .arg(&dir)
            .args(["-o", "-"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_no_run_of("import --project", &out, &t);
        let real = dir.canonicalize().unwrap();
        for line in String::from_utf8(out.stdout).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["cwd"], real.to_str().unwrap(), "{v}");
        }
    }
    // A source that records no directory: the one given, or the current one, is checked.
    let msgs = src.join("messages.json");
    std::fs::write(
        &msgs,
        serde_json::json!([{"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}])
        .to_string(),
    )
    .unwrap();
    let bad = src.join(format!("w-{t}"));
    std::fs::create_dir_all(&bad).unwrap();
    for given in [true, false] {
        let mut c = sb.cmd();
        c.arg("import").arg(&msgs).args(["--from", "messages"]);
        if given {
            c.arg("--project").arg(&bad);
        } else {
            c.current_dir(&bad);
        }
        let out = c.output().unwrap();
        let what = format!("import messages (--project given: {given})");
        assert_eq!(out.status.code(), Some(2), "{what}: {out:?}");
        assert_no_run_of(&what, &out, &t);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("holds a secret"), "{what}: {err}");
    }
    assert_eq!(std::fs::read_dir(&projects).unwrap().count(), before.len());
}
