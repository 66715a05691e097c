//! Issue 17, "habits from rg, fd, gitleaks, jq": the command line as a user meets it, through
//! the binary: one vocabulary, closed pipes, nothing to do, `-` folders, progress, completions,
//! color, `ls` at scale, bulk undo.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{corpus_dir, install_generated};

/// A config root holding generated sessions where Claude Code would put them.
fn sandbox(names: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for name in names {
        let dst = install_generated(root.path(), name);
        // Old enough not to look live.
        set_old(&dst);
        let comp = dst.with_extension("");
        if comp.is_dir() {
            let mut stack = vec![comp];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    if e.path().is_dir() {
                        stack.push(e.path());
                    } else {
                        set_old(&e.path());
                    }
                }
            }
        }
    }
    root
}

fn set_old(p: &Path) {
    crate::common::age(p, 3600);
}

fn all_names() -> Vec<&'static str> {
    vec![
        "p01_quickstart",
        "p02_noise",
        "p03_compact",
        "p04_subagent",
        "p05_long",
    ]
}

/// `cchist` with the sandbox as config root and no HOME.
fn cc(root: &Path) -> Command {
    let mut c = crate::common::cchist();
    c.env("CLAUDE_CONFIG_DIR", root)
        .env_remove("HOME")
        .env_remove("NO_COLOR");
    c
}

fn run(c: &mut Command) -> Output {
    c.output().expect("run cchist")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn json_ok(c: &mut Command) -> Value {
    let o = run(c);
    assert!(o.status.success(), "{c:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{c:?}: {e}: {}", stdout(&o)))
}

fn session_path(root: &Path, name: &str) -> PathBuf {
    let src = corpus_dir().join("generated").join(format!("{name}.jsonl"));
    let cwd = cchist::claude::layout::first_cwd(&src).unwrap();
    root.join("projects")
        .join(cchist::claude::layout::project_folder_name(&cwd))
        .join(format!("{name}.jsonl"))
}

// ---- 8. One vocabulary ----

#[test]
fn format_json_and_json_alias_on_every_reporting_command() {
    let root = sandbox(&["p05_long"]);
    let r = root.path();
    let f = session_path(r, "p05_long");
    let f = f.to_str().unwrap();
    for args in [
        vec!["ls"],
        vec!["history", "list", "-s", "p05"],
        vec!["history", "show", "-s", "p05", "--turn", "1"],
        vec!["rules"],
        vec!["validate", f],
        vec!["check", f],
        vec!["relink", "-n", f],
        vec!["history", "delete", "-s", "p05", "-n", "--turns", "2"],
        vec![
            "history", "insert", "-s", "p05", "-n", "--after", "2", "--text", "x",
        ],
        vec!["undo", "--list"],
        vec!["backups", "list"],
    ] {
        let a = json_ok(cc(r).args(&args).arg("--json"));
        let b = json_ok(cc(r).args(&args).args(["--format", "json"]));
        assert_eq!(a, b, "{args:?}: --json and --format json differ");
    }
}

#[test]
fn one_turn_range_grammar_in_history_and_summarize() {
    let root = sandbox(&["p05_long"]);
    let r = root.path();
    let f = session_path(r, "p05_long");
    let out = |spec: &str| {
        let v = json_ok(
            cc(r)
                .args([
                    "summarize-range",
                    "-n",
                    "--json",
                    "--text",
                    "S",
                    "--turns",
                    spec,
                ])
                .arg(&f),
        );
        v["files"][0]["report"]["records_out"].clone()
    };
    let dots = out("2..4");
    assert!(dots.as_u64().is_some());
    assert_eq!(out("2-4"), dots);
    assert_eq!(out("2,3-4"), dots);
    assert_eq!(out("2..=4"), dots);
    // history takes the same grammar, lists and dashes and dots alike.
    for spec in ["2-4", "2..4", "2,3..4"] {
        let o = run(cc(r).args(["history", "delete", "-s", "p05", "-n", "--turns", spec]));
        assert!(o.status.success(), "{spec}: {}", stderr(&o));
        let report = String::from_utf8_lossy(&o.stdout);
        assert!(
            report.contains("would remove turns [2, 3, 4]"),
            "{spec}: {report}"
        );
    }
    // Steps too.
    let a = json_ok(
        cc(r)
            .args(["summarize-range", "-n", "--json", "--steps", "2-3"])
            .arg(&f),
    );
    let b = json_ok(
        cc(r)
            .args(["summarize-range", "-n", "--json", "--steps", "2..3"])
            .arg(&f),
    );
    assert_eq!(
        a["files"][0]["report"]["records_out"],
        b["files"][0]["report"]["records_out"]
    );
    // A list that does not join up is refused by summarize-range, with the grammar named.
    let o = run(cc(r)
        .args(["summarize-range", "-n", "--turns", "2,5"])
        .arg(&f));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("consecutive"), "{}", stderr(&o));
}

#[test]
fn text_flag_is_one_name_with_aliases() {
    let root = sandbox(&["p05_long"]);
    let r = root.path();
    for (sub, alias) in [("replace", "--with"), ("insert", "--content")] {
        let place = if sub == "replace" {
            ["--turns", "2"]
        } else {
            ["--after", "2"]
        };
        for flag in ["--text", alias] {
            let o = run(cc(r)
                .args(["history", sub, "-s", "p05", "-n"])
                .args(place)
                .args([flag, "hello"]));
            assert!(o.status.success(), "{sub} {flag}: {}", stderr(&o));
        }
    }
}

#[test]
fn check_and_validate_take_session_and_all() {
    let root = sandbox(&all_names());
    let r = root.path();
    let v = json_ok(cc(r).args(["validate", "--json", "-s", "p05"]));
    let files = v["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    assert!(files[0]["file"]
        .as_str()
        .unwrap()
        .ends_with("p05_long.jsonl"));
    let v = json_ok(cc(r).args(["validate", "--json", "--all"]));
    assert!(v["files"].as_array().unwrap().len() >= 5, "{v}");
    let o = run(cc(r).args(["check", "--json", "--all"]));
    assert!(o.status.code() != Some(2), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["summary"]["scanned"].as_u64().unwrap() >= 5, "{v}");
    let o = run(cc(r).args(["check", "--json", "--session", "p01"]));
    assert!(o.status.code() != Some(2), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["summary"]["scanned"].as_u64().unwrap() >= 1, "{v}");
}

// ---- 2. A closed pipe is not an error ----

/// Runs `c` with stdout a pipe whose reading end is already closed (`| head` that has left).
fn closed_pipe(c: &mut Command) -> Output {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe(2) fills both descriptors, which are owned from here on.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let (reader, writer) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(reader);
    c.stdout(std::process::Stdio::from(writer))
        .stderr(std::process::Stdio::piped());
    c.output().unwrap()
}

#[test]
fn a_closed_pipe_is_not_an_error_for_any_output() {
    let root = sandbox(&["p05_long", "p01_quickstart"]);
    let r = root.path();
    let f = session_path(r, "p05_long");
    let f = f.to_str().unwrap();
    for args in [
        vec!["ls", "--json"],
        vec!["ls"],
        vec!["rules", "--format", "json"],
        vec!["rules", "--all"],
        vec!["validate", "--format", "json", f],
        vec!["run", "-p", "identity", "--json", "-n", f],
        vec!["run", "-p", "identity", f],
        vec!["redact", f],
        vec!["history", "list", "-s", "p05"],
        vec!["history", "show", "-s", "p05", "--turn", "1", "--json"],
        vec!["check", "--json", f],
        vec!["check", "--format", "sarif", f],
    ] {
        let o = closed_pipe(cc(r).args(&args));
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("error"), "{args:?}: {}", stderr(&o));
    }
}

// ---- 3. Nothing to do is not success ----

#[test]
fn a_folder_without_transcripts_is_an_error() {
    let root = sandbox(&["p01_quickstart"]);
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("notes.txt"), "not a transcript\n").unwrap();
    let e = empty.path().to_str().unwrap();
    for args in [
        vec!["check", e],
        vec!["validate", e],
        vec!["redact", e],
        vec!["redact", "-n", e],
        vec!["run", "-p", "scrub", "-i", e],
    ] {
        let o = run(cc(root.path()).args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("no .jsonl files under {e}")),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // An --include that matches nothing says so too.
    let p = root.path().join("projects");
    let o = run(cc(root.path())
        .args(["validate", "--include", "nothing-*.jsonl"])
        .arg(&p));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("matching --include"), "{}", stderr(&o));
}

/// Runs `cmd` (a shell command line) under a pseudo-terminal: stdin, stdout and stderr are
/// all the terminal `script` opens. Returns what the terminal showed and the exit code.
fn under_pty(root: &Path, cmd: &str, extra_env: &[(&str, &str)]) -> (String, Option<i32>) {
    let mut c = Command::new("timeout");
    c.args(["60", "script", "-qec", cmd, "/dev/null"])
        .env("CLAUDE_CONFIG_DIR", root)
        .env_remove("HOME")
        .env_remove("NO_COLOR")
        .env("COLUMNS", "120")
        .stdin(std::process::Stdio::null());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let o = c.output().expect("script (util-linux) runs");
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        o.status.code(),
    )
}

fn bin() -> String {
    crate::common::bin().display().to_string()
}

#[test]
fn check_on_a_terminal_without_paths_scans_the_projects() {
    let root = sandbox(&["p01_quickstart", "p05_long"]);
    let (shown, code) = under_pty(root.path(), &format!("{} check", bin()), &[]);
    // p01 holds planted secrets: findings, not a wait on the terminal (timeout would say 124).
    assert_eq!(code, Some(1), "{shown}");
    assert!(
        shown.contains("stdin is a terminal: scanning every project under"),
        "{shown}"
    );
    assert!(shown.contains("p01_quickstart.jsonl"), "{shown}");
    assert!(shown.contains("of 2 files"), "{shown}");
}

#[test]
fn history_list_on_a_non_transcript_file_says_so() {
    let root = sandbox(&["p01_quickstart"]);
    let (_dir, f) = crate::common::temp_file("data.jsonl", "{\"a\":1}\n{\"b\":2}\n");
    let o = run(cc(root.path()).args(["history", "list", "-f"]).arg(&f));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not a Claude Code transcript"),
        "{}",
        stderr(&o)
    );
}

// ---- 1. Project folders start with `-` ----

#[test]
fn a_dashed_folder_argument_is_a_path_not_flags() {
    let root = sandbox(&["p01_quickstart"]);
    let work = tempfile::tempdir().unwrap();
    let dashed = work.path().join("-home-dev-webapp");
    std::fs::create_dir(&dashed).unwrap();
    std::fs::copy(
        session_path(root.path(), "p01_quickstart"),
        dashed.join("s.jsonl"),
    )
    .unwrap();
    // p01 holds planted secrets: check must find them (exit 1), not print help (`-h`, exit 0).
    for args in [
        vec!["check", "-home-dev-webapp"],
        vec!["check", "-j", "1", "-home-dev-webapp"],
        vec!["check", "--", "-home-dev-webapp"],
        vec!["check", "./-home-dev-webapp"],
    ] {
        let o = run(cc(root.path()).current_dir(work.path()).args(&args));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{args:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(stdout(&o).contains("s.jsonl"), "{args:?}: {}", stdout(&o));
    }
    let o = run(cc(root.path())
        .current_dir(work.path())
        .args(["validate", "-home-dev-webapp"]));
    assert!(stderr(&o).contains("1 file valid"), "{}", stderr(&o));
    // A path as an option's value too.
    let o = run(cc(root.path()).current_dir(work.path()).args([
        "history",
        "list",
        "-f",
        "-home-dev-webapp/s.jsonl",
    ]));
    assert!(o.status.success(), "{}", stderr(&o));
    // Flags keep their meaning, and a missing dashed name is still an unknown flag.
    let o = run(cc(root.path())
        .current_dir(work.path())
        .args(["check", "-h"]));
    assert!(o.status.success() && stdout(&o).contains("Usage"));
    let o = run(cc(root.path())
        .current_dir(work.path())
        .args(["check", "-nothere"]));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn project_is_its_folder_name_its_path_or_its_cwd() {
    let root = sandbox(&all_names());
    let r = root.path();
    let f = session_path(r, "p05_long");
    let folder = f.parent().unwrap();
    let name = folder.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with('-'));
    let cwd = cchist::claude::layout::first_cwd(&f).unwrap();
    let ids = |spec: &str| -> Vec<String> {
        let v = json_ok(cc(r).args(["ls", "--json", "--project", spec]));
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let by_name = ids(name);
    assert_eq!(by_name, ["p05_long"]);
    assert_eq!(ids(folder.to_str().unwrap()), by_name);
    assert_eq!(ids(&cwd), by_name);
    for spec in [name, folder.to_str().unwrap(), cwd.as_str()] {
        let v = json_ok(cc(r).args(["history", "list", "--json", "--latest", "--project", spec]));
        assert!(v.as_array().unwrap().len() > 3, "{spec}");
    }
}

// ---- 10. Scrub means scrub ----

/// Claude Code's own states: a call interrupted at the tip, and its compaction summariser's
/// transcript whose first parents point into the main session.
fn claude_code_states() -> Vec<PathBuf> {
    vec![
        crate::common::corpus("real/thejamesnick__agentic-wallet__claude-session.jsonl"),
        crate::common::corpus(
            "real/marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20__subagents__agent-acompact-f46190.jsonl",
        ),
    ]
}

#[test]
fn scrub_leaves_states_claude_code_handles_and_validate_and_ci_policy_accept_them() {
    let root = sandbox(&["p01_quickstart"]);
    for f in claude_code_states() {
        let data = std::fs::read(&f).unwrap();
        let o = run(cc(root.path()).args(["run", "-p", "scrub"]).arg(&f));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            o.stdout == data,
            "{}: scrub changed a file with no secret",
            f.display()
        );
        let o = run(cc(root.path()).arg("validate").arg(&f));
        assert_eq!(o.status.code(), Some(0), "{}: {}", f.display(), stdout(&o));
        let o = run(cc(root.path())
            .args(["check", "--policy", "ci-policy"])
            .arg(&f));
        assert_eq!(o.status.code(), Some(0), "{}: {}", f.display(), stdout(&o));
    }
    // `relink` still repairs when asked: it answers the interrupted call.
    let f = &claude_code_states()[0];
    let o = run(cc(root.path()).arg("relink").arg(f));
    assert!(o.stdout != std::fs::read(f).unwrap());
    assert!(stdout(&o).contains("Tool call interrupted"));
}

#[test]
fn scrub_relinks_only_what_the_redaction_touched() {
    let root = sandbox(&["p01_quickstart"]);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    let secret = format!("ghp_{}", "Zy9xW8vU7tS6rQ5pO4nM3lK2jI1hG0fE9dC8");
    let lines = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#.to_string(),
        // A thinking-only message holding a secret: the block goes, so the record goes.
        format!(
            r#"{{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{{"id":"m1","role":"assistant","content":[{{"type":"thinking","thinking":"the token is {secret}","signature":"c2ln"}}]}}}}"#
        ),
        r#"{"type":"assistant","uuid":"a2","parentUuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"done"}]}}"#.to_string(),
        // Damage already in the file: not scrub's business.
        r#"{"type":"user","uuid":"u3","parentUuid":"never-written","message":{"role":"user","content":"later"}}"#.to_string(),
        String::new(),
    ];
    std::fs::write(&f, lines.join("\n")).unwrap();
    let o = run(cc(root.path()).args(["run", "-p", "scrub"]).arg(&f));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(!out.contains(&secret));
    assert!(!out.contains("\"uuid\":\"a1\""), "{out}");
    assert!(
        out.contains(r#""uuid":"a2","parentUuid":"u1""#)
            || out.contains(r#""parentUuid":"u1","message":{"id":"m1""#),
        "{out}"
    );
    assert!(out.contains(r#""parentUuid":"never-written""#), "{out}");
    // `relink` repairs that damage when asked.
    let o = run(cc(root.path()).arg("relink").arg(&f));
    assert!(!stdout(&o).contains("never-written"));
}

// ---- 9. Bulk undo ----

/// Every file under `dir`, with its bytes (backups and undo's records aside).
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut m = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                stack.push(p);
            } else if !name.contains(".cchist-bak.") && !name.starts_with('.') {
                m.insert(p, std::fs::read(e.path()).unwrap());
            }
        }
    }
    m
}

#[test]
fn a_lossy_bulk_run_asks_for_backup_or_yes_and_undo_all_restores_it() {
    let root = sandbox(&all_names());
    let r = root.path();
    let projects = r.join("projects");
    let before = snapshot(&projects);
    // Lossy over several sessions without a way back: refused, nothing written.
    for args in [
        vec!["run", "-p", "compact", "-i"],
        vec!["run", "-p", "share", "-i"],
        vec!["drop-tool-noise", "-i"],
        vec!["summarize-range", "--keep-last", "1", "-i"],
    ] {
        let o = run(cc(r).args(&args).arg(&projects));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("--backup") && stderr(&o).contains("--yes"),
            "{}",
            stderr(&o)
        );
        assert_eq!(snapshot(&projects), before, "{args:?} wrote something");
    }
    // Not lossy (scrub), or one session: no question asked.
    let one = session_path(r, "p05_long");
    let o = run(cc(r).args(["run", "-p", "scrub", "-i"]).arg(&projects));
    assert!(o.status.success(), "{}", stderr(&o));
    let before = snapshot(&projects);
    let o = run(cc(r)
        .args(["drop-tool-noise", "-i", "--backup=.bak"])
        .arg(&one));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::rename(one.with_extension("jsonl.bak"), &one).unwrap();
    set_old(&one);
    // With --backup: the run goes ahead and `undo` sees it.
    let o = run(cc(r)
        .args(["run", "-p", "compact", "-i"])
        .arg(&projects)
        .arg("--backup"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(snapshot(&projects), before, "compact changed nothing");
    let listed = json_ok(cc(r).args(["undo", "--list", "--json"]));
    let listed = listed.as_array().unwrap();
    assert!(listed.len() >= 2, "{listed:?}");
    assert!(listed
        .iter()
        .all(|b| b["backup"].as_str().unwrap().contains(".cchist-bak.")));
    let o = run(cc(r).args(["undo", "--list"]));
    assert!(stdout(&o).contains("p05_long.jsonl"), "{}", stdout(&o));
    // Restore the whole run: byte for byte.
    let o = run(cc(r).args(["undo", "--all", "--since", "1h"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        snapshot(&projects),
        before,
        "undo --all did not restore the run"
    );
    // --yes: no backup, no question.
    let o = run(cc(r)
        .args(["run", "-p", "compact", "-i", "--yes"])
        .arg(&projects));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn backups_prune_removes_old_backups() {
    let root = sandbox(&["p01_quickstart", "p05_long"]);
    let r = root.path();
    let projects = r.join("projects");
    // `--backup PATH` is the flag and a path (a suffix needs `=`).
    let o = run(cc(r).args(["redact", "-i", "--backup"]).arg(&projects));
    assert!(o.status.success(), "{}", stderr(&o));
    let n = json_ok(cc(r).args(["undo", "--list", "--json"]))
        .as_array()
        .unwrap()
        .len();
    assert!(n >= 1);
    // Nothing is 30 days old yet.
    let o = run(cc(r).args(["backups", "prune", "--older-than", "30d"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        json_ok(cc(r).args(["undo", "--list", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        n
    );
    // Everything made before a minute from now is older than "-1m"… use a future date.
    let o = run(cc(r).args(["backups", "prune", "--older-than", "2999-01-01"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "removed {n} backup{}",
            if n == 1 { "" } else { "s" }
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        json_ok(cc(r).args(["undo", "--list", "--json"]))
            .as_array()
            .unwrap()
            .len(),
        0
    );
}

// ---- 7. `ls` at 400 sessions ----

#[test]
fn ls_groups_by_project_once_newest_first_and_sorts_limits_filters() {
    let root = sandbox(&all_names());
    let r = root.path();
    // Two sessions in one project, others elsewhere, with distinct ages.
    let p05 = session_path(r, "p05_long");
    let twin = p05.with_file_name("p05_twin.jsonl");
    std::fs::copy(&p05, &twin).unwrap();
    for (i, name) in all_names().iter().enumerate() {
        crate::common::age(&session_path(r, name), 3600 * (i as u64 + 2));
    }
    crate::common::age(&twin, 3600 * 100 * 24); // 100 days old
    let ids = |args: &[&str]| -> Vec<String> {
        let v = json_ok(cc(r).arg("ls").arg("--json").args(args));
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    // Newest first; p05's twin joins p05's group (listed once) though it is the oldest.
    let by_time = ids(&[]);
    assert_eq!(by_time.first().unwrap(), "p01_quickstart");
    let at = by_time.iter().position(|i| i == "p05_long").unwrap();
    assert_eq!(by_time[at + 1], "p05_twin", "{by_time:?}");
    let o = run(cc(r).arg("ls"));
    let text = stdout(&o);
    let headers: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    let mut uniq = headers.clone();
    uniq.sort();
    uniq.dedup();
    assert_eq!(uniq.len(), headers.len(), "a project listed twice: {text}");
    assert!(text.contains("KiB") || text.contains("MiB"), "{text}");
    // --sort size: the largest first.
    let v = json_ok(cc(r).args(["ls", "--json", "--sort", "size"]));
    let sizes = crate::common::u64s(&v, "bytes");
    assert_eq!(sizes.iter().max(), sizes.first());
    let turns = json_ok(cc(r).args(["ls", "--json", "--sort", "turns"]));
    let t = crate::common::u64s(&turns, "turns");
    assert_eq!(t.iter().max(), t.first());
    // --limit, --since.
    assert_eq!(ids(&["--limit", "2"]).len(), 2);
    let recent = ids(&["--since", "30d"]);
    assert!(
        !recent.contains(&"p05_twin".to_string()) && recent.len() == 5,
        "{recent:?}"
    );
    // Width-aware: no line wider than the terminal says.
    let o = run(cc(r).arg("ls").env("COLUMNS", "70"));
    for l in stdout(&o).lines().filter(|l| l.starts_with("  ")) {
        assert!(l.chars().count() <= 70, "{l}");
    }
}

#[test]
fn prompts_are_shown_without_wrappers_in_ls_and_history() {
    let root = sandbox(&["p01_quickstart"]);
    let r = root.path();
    let dir = r.join("projects/-home-dev-wrapped");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("w.jsonl");
    let lines = [
        r#"{"type":"user","uuid":"u1","parentUuid":null,"cwd":"/home/dev/wrapped","message":{"role":"user","content":"<command-message>review</command-message>\n<command-name>/review</command-name>\n<command-args>the parser</command-args>"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"ok"}]}}"#,
        r#"{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user","content":[{"type":"text","text":"<ide_selection>The user selected lines 1-3 of x.rs</ide_selection>"},{"type":"text","text":"why does this fail?"}]}}"#,
        "",
    ];
    std::fs::write(&f, lines.join("\n")).unwrap();
    set_old(&f);
    let v = json_ok(cc(r).args(["ls", "--json", "--project", "-home-dev-wrapped"]));
    assert_eq!(v[0]["first_prompt"], "/review the parser");
    let v = json_ok(cc(r).args(["history", "list", "--json", "-f"]).arg(&f));
    assert_eq!(v[0]["prompt"], "/review the parser");
    assert_eq!(v[1]["prompt"], "why does this fail?");
    let o = run(cc(r).arg("ls"));
    assert!(!stdout(&o).contains("<command-"), "{}", stdout(&o));
}

// ---- 4. Progress ----

#[test]
fn bulk_runs_show_progress_on_a_terminal_only_and_end_with_a_table() {
    let root = sandbox(&all_names());
    let r = root.path();
    let projects = r.join("projects");
    let p = projects.to_str().unwrap();
    let (shown, code) = under_pty(r, &format!("{} run -p share -n {p}", bin()), &[]);
    assert_eq!(code, Some(0), "{shown}");
    // The bar: files done of total, bytes, rate, ETA.
    assert!(shown.contains("ETA"), "{shown}");
    assert!(shown.contains("files"), "{shown}");
    assert!(shown.contains("iB/s"), "{shown}");
    // The end table: aligned rows, human sizes, bytes saved.
    for row in ["files", "size in", "size out", "saved"] {
        assert!(shown.contains(row), "{row}: {shown}");
    }
    assert!(shown.contains("KiB") || shown.contains("MiB"), "{shown}");
    // check scans with the same bar.
    let (shown, _) = under_pty(r, &format!("{} check {p}", bin()), &[]);
    assert!(shown.contains("ETA"), "{shown}");
    // -q as grep and rg mean it: no bar, and no report either (issue 32).
    let (shown, _) = under_pty(r, &format!("{} run -p share -n -q {p}", bin()), &[]);
    assert!(!shown.contains("ETA"), "{shown}");
    assert!(!shown.contains("saved"), "{shown}");
    // stderr not a terminal: no bar either.
    let o = run(cc(r).args(["run", "-p", "share", "-n"]).arg(&projects));
    assert!(o.status.success());
    assert!(!stderr(&o).contains("ETA"), "{}", stderr(&o));
    // The dry run's report is its output: on stdout.
    let report = String::from_utf8_lossy(&o.stdout);
    assert!(report.contains("saved"), "{report}");
}

// ---- 5. Completions and a man page ----

#[test]
fn completions_for_every_shell_and_a_man_page() {
    let root = sandbox(&["p01_quickstart"]);
    let r = root.path();
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef cchist"),
        ("fish", "complete -c cchist"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[cchist]"),
    ] {
        let o = run(cc(r).args(["completions", shell]));
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(text.contains(marker), "{shell}: no {marker}");
        for sub in [
            "summarize-range",
            "drop-tool-noise",
            "history",
            "undo",
            "completions",
        ] {
            assert!(text.contains(sub), "{shell}: {sub} not completed");
        }
    }
    // The bash script loads and registers itself.
    let (_dir, script) = crate::common::temp_file(
        "cchist.bash",
        run(cc(r).args(["completions", "bash"])).stdout,
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p cchist", script.display()))
        .output()
        .unwrap();
    assert!(
        o.status.success() && stdout(&o).contains("cchist"),
        "{}",
        stderr(&o)
    );
    // An unknown shell is an error naming the choices.
    let o = run(cc(r).args(["completions", "tcsh"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bash"), "{}", stderr(&o));
    // The man page: roff with the name, the synopsis and the subcommands.
    let o = run(cc(r).arg("man"));
    assert!(o.status.success());
    let man = stdout(&o);
    assert!(man.contains(".TH cchist 1"), "{man}");
    assert!(
        man.contains(".SH SYNOPSIS") && man.contains("summarize\\-range"),
        "{man}"
    );
    // Closed pipes are fine here too.
    let o = closed_pipe(cc(r).args(["completions", "zsh"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = closed_pipe(cc(r).arg("man"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

// ---- 6. Color ----

#[test]
fn findings_are_colored_on_a_terminal_or_when_asked_never_otherwise() {
    let root = sandbox(&["p01_quickstart"]);
    let r = root.path();
    let f = session_path(r, "p01_quickstart");
    let bad = r.join("bad.jsonl");
    std::fs::write(&bad, crate::validate::mid_chain_unanswered_call()).unwrap();
    let red = "\x1b[1;31mgithub-pat\x1b[0m";
    let yellow = "\x1b[1;33munpaired-tool-use\x1b[0m";
    // Into a pipe: plain.
    let o = run(cc(r).arg("check").arg(&f));
    assert_eq!(o.status.code(), Some(1));
    assert!(!stdout(&o).contains('\x1b'), "{}", stdout(&o));
    // --color always: secrets red, with the path and line colored.
    let o = run(cc(r).args(["check", "--color", "always"]).arg(&f));
    assert!(stdout(&o).contains(red), "{}", stdout(&o));
    assert!(stdout(&o).contains("\x1b[32m"), "line numbers green");
    let o = run(cc(r).args(["--color", "always", "validate"]).arg(&bad));
    assert!(stdout(&o).contains(yellow), "{}", stdout(&o));
    // On a terminal: colored; NO_COLOR or --color never: plain.
    let (shown, _) = under_pty(r, &format!("{} check {}", bin(), f.display()), &[]);
    assert!(shown.contains(red), "{shown}");
    let (shown, _) = under_pty(
        r,
        &format!("{} check {}", bin(), f.display()),
        &[("NO_COLOR", "1")],
    );
    assert!(!shown.contains("\x1b[1;31m"), "{shown}");
    let (shown, _) = under_pty(
        r,
        &format!("{} validate --color never {}", bin(), bad.display()),
        &[],
    );
    assert!(
        !shown.contains("\x1b[1;33m") && shown.contains("unpaired-tool-use"),
        "{shown}"
    );
    // --color always wins over NO_COLOR.
    let o = run(cc(r)
        .args(["check", "--color", "always"])
        .arg(&f)
        .env("NO_COLOR", "1"));
    assert!(stdout(&o).contains(red));
}

// ---- 12. The README's first command ----

#[test]
fn the_readme_first_command_prints_a_readable_summary_and_how_to_get_the_output() {
    let readme = std::fs::read_to_string(crate::common::manifest().join("README.md")).unwrap();
    let first = readme
        .lines()
        .find(|l| l.starts_with("cargo run"))
        .expect("a first command");
    assert!(
        first.contains("run --pipeline share --dry-run examples/"),
        "{first}"
    );
    let o = run(crate::common::cchist()
        .current_dir(crate::common::manifest())
        .args(["run", "--pipeline", "share", "--dry-run", "examples/"]));
    assert!(o.status.success(), "{}", stderr(&o));
    // The report is the dry run's output (stdout, as `--diff`'s); what to do next is on stderr.
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = stderr(&o);
    let lines: Vec<&str> = report.lines().collect();
    // Head line: records and sizes before → after, what is saved.
    assert!(
        lines[0].contains("quickstart.jsonl: would change:"),
        "{report}"
    );
    assert!(
        lines[0].contains(" → ") && lines[0].contains("saved"),
        "{report}"
    );
    assert!(lines[0].contains("KiB"), "{report}");
    // One line per stage.
    for stage in ["redact", "drop-tool-noise", "relink"] {
        assert!(
            lines.iter().any(|l| l.trim_start().starts_with(stage)),
            "{stage}: {report}"
        );
    }
    // How to get the output.
    assert!(
        err.contains("> out.jsonl") && err.contains("--in-place"),
        "{err}"
    );
    assert!(!err.contains("would change"), "{err}");
}

// ---- What cchist shows of a session is redacted ----

/// `ls` and `history` print prompts and turns: a secret typed into a prompt is shown by its
/// marker, never whole and never cut in half (redaction runs before shortening).
#[test]
fn listings_never_show_a_secret_from_a_prompt() {
    let root = sandbox(&["p05_long"]);
    let r = root.path();
    let f = session_path(r, "p05_long");
    let token = format!("ghp_{}", "Zq8vLz2WmN5kTb3YxR7pQ4sD9fG1hJ6kL0aB");
    let text = std::fs::read_to_string(&f).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let first_prompt = lines
        .iter()
        .position(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_default();
            v["type"] == "user" && v["message"]["content"].is_string()
        })
        .expect("a typed prompt");
    let mut v: Value = serde_json::from_str(&lines[first_prompt]).unwrap();
    v["message"]["content"] = Value::from(format!("use {token} for the push please"));
    lines[first_prompt] = v.to_string();
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    set_old(&f);
    for args in [
        vec!["ls"],
        vec!["ls", "--json"],
        vec!["history", "list", "-s", "p05"],
        vec!["history", "list", "--json", "-s", "p05"],
        vec!["history", "list", "--steps", "-s", "p05"],
        vec!["history", "show", "-s", "p05", "--turn", "1"],
        vec!["history", "show", "-s", "p05", "--turn", "1", "--json"],
    ] {
        let o = run(cc(r).args(&args));
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert!(
            !out.contains(&token[..20]),
            "{args:?} shows the secret:\n{out}"
        );
        if args[0] == "history" && args[1] == "list" && !args.contains(&"--steps") {
            assert!(out.contains("REDACTED"), "{args:?}: {out}");
        }
    }
}
