//! `ls` and `history list/show` on a sandbox config folder built from the generated corpus.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

use crate::common::install_generated;

/// A config root holding the generated sessions where Claude Code would put them:
/// `projects/<folder of cwd>/<session id>.jsonl`, companion folders included.
fn sandbox() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for name in [
        "p01_quickstart",
        "p02_noise",
        "p03_compact",
        "p04_subagent",
        "p05_long",
    ] {
        install_generated(root.path(), name);
    }
    root
}

fn cchist(root: &Path) -> Command {
    let mut c = Command::from_std(crate::common::cchist());
    c.env("CLAUDE_CONFIG_DIR", root).env_remove("HOME");
    c
}

fn json_out(c: &mut Command) -> Value {
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn ls_counts_sessions_records_and_turns() {
    let root = sandbox();
    let v = json_out(cchist(root.path()).args(["ls", "--json"]));
    let rows = v.as_array().unwrap();
    let mut got: Vec<(String, u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["records"].as_u64().unwrap(),
                r["turns"].as_u64().unwrap(),
            )
        })
        .collect();
    // `ls` lists newest first since issue 17 (tests/it/cli_habits.rs checks the order); here
    // only the counts matter.
    got.sort();
    // records = lines of each file; turns = prompts typed in the main conversation (the
    // sub-agent's prompt in p04 is not a turn of the main session).
    assert_eq!(
        got,
        vec![
            ("p01_quickstart".into(), 46, 2),
            ("p02_noise".into(), 58, 1),
            ("p03_compact".into(), 82, 4),
            ("p04_subagent".into(), 35, 1),
            ("p05_long".into(), 199, 12),
        ]
    );
    let p01 = rows.iter().find(|r| r["id"] == "p01_quickstart").unwrap();
    assert_eq!(p01["project"], "/home/dev/p01_quickstart");
    assert_eq!(p01["first_prompt"], "What is in this project?");
    assert!(
        p01["live"].is_string(),
        "just copied, so written in the last minute"
    );
    // --project narrows to one project
    let v = json_out(cchist(root.path()).args(["ls", "--json", "--project", "/home/dev/p05_long"]));
    assert_eq!(v.as_array().unwrap().len(), 1);
}

#[test]
fn history_list_numbers_turns_in_chain_order() {
    let root = sandbox();
    let v = json_out(cchist(root.path()).args(["history", "list", "--json", "--session", "p05"]));
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 12);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["number"], i + 1);
        assert!(
            r["prompt"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Step {}:", i + 1)),
            "{r}"
        );
        assert!(r["tool_calls"].as_u64().unwrap() >= 1);
    }
    let v = json_out(
        cchist(root.path()).args(["history", "list", "--json", "-s", "p05", "--recent", "3"]),
    );
    let nums = crate::common::u64s(&v, "number");
    assert_eq!(nums, vec![10, 11, 12]);
    // the compacted session: the /compact command is a turn, its output belongs to it
    let v = json_out(cchist(root.path()).args(["history", "list", "--json", "-s", "p03"]));
    let prompts: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prompt"].as_str().unwrap())
        .collect();
    assert_eq!(prompts.len(), 4);
    assert_eq!(prompts[0], "Read my notes");
    assert_eq!(prompts[3], "What is left to do?");
}

#[test]
fn history_show_by_number_and_by_uuid_agree() {
    let root = sandbox();
    let list = json_out(cchist(root.path()).args(["history", "list", "--json", "-s", "p05"]));
    let uuid = list[1]["uuid"].as_str().unwrap().to_string();
    let by_num = cchist(root.path())
        .args(["history", "show", "-s", "p05", "--turn", "2"])
        .output()
        .unwrap();
    let by_uuid = cchist(root.path())
        .args(["history", "show", "-s", "p05", "--turn", &uuid])
        .output()
        .unwrap();
    assert!(by_num.status.success());
    assert_eq!(by_num.stdout, by_uuid.stdout);
    let text = String::from_utf8(by_num.stdout).unwrap();
    assert!(
        text.contains("[user] Step 2: implement the cache"),
        "{text}"
    );
    assert!(text.contains("[assistant → Write]"), "{text}");
    let missing = cchist(root.path())
        .args(["history", "show", "-s", "p05", "--turn", "99"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no turn 99"));
}

#[test]
fn unknown_session_says_what_to_do() {
    let root = sandbox();
    let out = cchist(root.path())
        .args(["history", "list", "-s", "nope"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cchist ls"));
}

/// A config root with `id` in each of `projects`, its one prompt quoting `token`, and the
/// recorded `cwd` given; aged so no session looks live.
fn sessions_with(id: &str, projects: &[&str], cwd: &str, token: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for p in projects {
        let dir = root.path().join("projects").join(p);
        std::fs::create_dir_all(&dir).unwrap();
        let line = serde_json::json!({"type": "user", "message": {"role": "user", "content": format!("tok {token}")},
            "uuid": "aaaaaaaa-1111-4111-8111-111111111111", "parentUuid": null, "cwd": cwd, "sessionId": id});
        let f = dir.join(format!("{id}.jsonl"));
        std::fs::write(&f, format!("{line}\n")).unwrap();
        crate::common::age(&f, 7200);
    }
    root
}

fn fake_token() -> String {
    format!("ghp_{}", "R8aQ2vLm5Xz0Tk3Wn7Pc1Ys9Hd4Fb6Je2Gu0")
}

#[test]
fn ls_text_redacts_the_recorded_cwd_as_the_json_view_does() {
    let token = fake_token();
    let root = sessions_with(
        "11111111-2222-4333-8444-555555555555",
        &["-tmp-proj"],
        &format!("/tmp/{token}"),
        "x",
    );
    let out = cchist(root.path()).arg("ls").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("/tmp/"), "{text}");
    assert!(!text.contains(&token), "{text}");
    let out = cchist(root.path()).args(["ls", "--json"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains(&token));
}

#[test]
fn a_full_session_id_held_by_two_projects_is_refused_as_ambiguous() {
    let id = "11111111-2222-4333-8444-555555555555";
    let token = fake_token();
    let root = sessions_with(id, &["-a", "-b"], "/tmp/a", &token);
    let files = [
        root.path().join(format!("projects/-a/{id}.jsonl")),
        root.path().join(format!("projects/-b/{id}.jsonl")),
    ];
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let out = cchist(root.path())
        .args(["redact", "-i", "-q", "-s", id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ambiguous") && err.contains("-a") && err.contains("-b"),
        "{err}"
    );
    let after: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert_eq!(before, after, "neither copy is touched");
    // Named by its path, either one is redacted.
    let out = cchist(root.path())
        .args(["redact", "-i", "-q"])
        .arg(&files[0])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!std::fs::read_to_string(&files[0]).unwrap().contains(&token));
}
