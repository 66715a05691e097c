//! A companion file whose *name* holds a secret (`tool-results/ghp_….txt`): an in-place run
//! renames it to a placeholder (`REDACTED-github-pat.txt`), recorded beside its backup so that
//! `cchist undo` renames it back; without a backup undo could follow, the file is refused
//! (exit 2). Previews say what would be renamed, the name shown redacted; no output ever
//! prints the raw name.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::cchist;

const ID: &str = "5b1f0000-0000-4000-8000-0000000000r8";

fn token() -> String {
    // Assembled at run time so the source itself holds no token-shaped string.
    format!("ghp_{}", "Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm9")
}

struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    /// A session whose tool result was persisted under a secret-shaped name (the transcript's
    /// stub names that file), beside one whose name is plain.
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = root.join("projects/-home-dev-app");
        let results = project.join(ID).join("tool-results");
        std::fs::create_dir_all(&results).unwrap();
        let t = token();
        let stub = format!(
            "Output too large. Full output saved to: {}",
            results.join(format!("{t}.txt")).display()
        );
        let main = crate::common::message_line("user", "u1", None, ID, "run the tests")
            + &crate::common::message_line("assistant", "a1", Some("u1"), ID, &stub)
            + &crate::common::message_line("user", "u2", Some("a1"), ID, "thanks");
        std::fs::write(project.join(format!("{ID}.jsonl")), main).unwrap();
        std::fs::write(results.join(format!("{t}.txt")), "all 12 tests passed\n").unwrap();
        std::fs::write(results.join("toolu_01plain.txt"), "plain output\n").unwrap();
        Sandbox {
            _dir: dir,
            root,
            project,
        }
    }

    fn results(&self) -> PathBuf {
        self.project.join(ID).join("tool-results")
    }

    fn main(&self) -> PathBuf {
        self.project.join(format!("{ID}.jsonl"))
    }

    fn run(&self, args: &[&str]) -> Output {
        cchist()
            .args(args)
            .env("CLAUDE_CONFIG_DIR", &self.root)
            .output()
            .unwrap()
    }

    /// Run `args`; assert it exits `code`, prints the raw name nowhere, and says `says` on
    /// stderr (when not empty).
    fn expect(&self, args: &[&str], code: i32, says: &str) -> Output {
        let out = self.run(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_silent(&out, &format!("{args:?}"));
        assert!(err.contains(says), "{args:?}: {err}");
        out
    }

    /// The names in `tool-results/`, backups and their records aside, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.results())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.contains(".cchist-bak."))
            .collect();
        v.sort();
        v
    }

    /// Every file and folder name under the config folder holding the token, backups and
    /// their records aside (those keep the originals, secrets included, until pruned).
    fn secret_names(&self) -> Vec<PathBuf> {
        let t = token();
        walk(&self.root)
            .into_iter()
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.contains(&t) && !n.contains(".cchist-bak.")
            })
            .collect()
    }
}

/// Every file and folder under `dir`, links not followed, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    crate::common::entries_under(dir)
}

/// Neither stream of `out` holds the token.
fn assert_silent(out: &Output, what: &str) {
    let t = token();
    for (name, s) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let s = String::from_utf8_lossy(s);
        assert!(!s.contains(&t), "{what}: the raw name in {name}: {s}");
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_in_place_run_renames_a_secret_name_and_undo_renames_it_back() {
    let s = Sandbox::new();
    let t = token();
    let old = s.results().join(format!("{t}.txt"));
    let content = std::fs::read(&old).unwrap();
    let main_before = std::fs::read(s.main()).unwrap();
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        "",
    );
    assert_eq!(
        s.names(),
        ["REDACTED-github-pat.txt", "toolu_01plain.txt"],
        "renamed to the placeholder; the plain name untouched"
    );
    assert_eq!(s.secret_names(), Vec::<PathBuf>::new());
    assert_eq!(
        std::fs::read(s.results().join("REDACTED-github-pat.txt")).unwrap(),
        content,
        "the content moves with the name"
    );
    assert_eq!(
        std::fs::read(s.results().join("toolu_01plain.txt")).unwrap(),
        b"plain output\n"
    );
    let main = text(&std::fs::read(s.main()).unwrap());
    assert!(!main.contains(&t), "the stub's path is redacted as text");
    assert!(
        main.contains("tool-results/[REDACTED:github-pat].txt"),
        "{main}"
    );

    s.expect(
        &["undo", "--all", "--since", "1h", "--force"],
        0,
        "renamed back to",
    );
    assert_eq!(
        s.names(),
        [format!("{t}.txt"), "toolu_01plain.txt".into()],
        "undo renamed it back"
    );
    assert_eq!(std::fs::read(&old).unwrap(), content);
    assert_eq!(std::fs::read(s.main()).unwrap(), main_before);
    let left: Vec<_> = walk(&s.results())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("cchist-bak"))
        .collect();
    assert_eq!(
        left,
        Vec::<PathBuf>::new(),
        "undo removed backups and records"
    );
}

#[test]
fn a_taken_placeholder_gets_a_numeric_suffix_and_nothing_is_overwritten() {
    let s = Sandbox::new();
    std::fs::write(s.results().join("REDACTED-github-pat.txt"), "someone's\n").unwrap();
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        "",
    );
    assert_eq!(
        s.names(),
        [
            "REDACTED-github-pat-1.txt",
            "REDACTED-github-pat.txt",
            "toolu_01plain.txt"
        ]
    );
    assert_eq!(
        std::fs::read(s.results().join("REDACTED-github-pat.txt")).unwrap(),
        b"someone's\n"
    );
}

#[test]
fn undo_leaves_the_placeholder_when_the_file_changed_since() {
    let s = Sandbox::new();
    let out = s.run(&["redact", "-i", "--backup", "--force", "-s", "5b1f"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let renamed = s.results().join("REDACTED-github-pat.txt");
    std::fs::write(&renamed, "edited since\n").unwrap();
    // Not live: what stops undo is the change.
    for p in walk(&s.root).iter().filter(|p| p.is_file()) {
        crate::common::age(p, 3600);
    }
    s.expect(
        &["undo", "--all", "--since", "2h"],
        2,
        "changed since the edit",
    );
    assert_eq!(std::fs::read(&renamed).unwrap(), b"edited since\n");
    assert_eq!(s.secret_names(), Vec::<PathBuf>::new());
    // Forced, it restores and renames back; what it replaced stays under the placeholder.
    s.expect(&["undo", "--all", "--since", "2h", "--force"], 0, "");
    let names = s.names();
    assert!(names.contains(&format!("{}.txt", token())), "{names:?}");
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("REDACTED-github-pat.txt.cchist-undone.")),
        "{names:?}"
    );
}

#[test]
fn undo_leaves_the_placeholder_when_the_old_name_was_taken_since() {
    let s = Sandbox::new();
    let out = s.run(&["redact", "-i", "--backup", "--force", "-s", "5b1f"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let old = s.results().join(format!("{}.txt", token()));
    std::fs::write(&old, "a newer file\n").unwrap();
    s.expect(
        &["undo", "--all", "--since", "1h", "--force"],
        2,
        "taken its old name",
    );
    assert_eq!(
        std::fs::read(&old).unwrap(),
        b"a newer file\n",
        "never overwritten"
    );
    assert_eq!(
        std::fs::read(s.results().join("REDACTED-github-pat.txt")).unwrap(),
        b"all 12 tests passed\n",
        "restored under the placeholder"
    );
}

#[test]
fn without_an_undoable_backup_a_secret_name_is_refused_with_what_to_do() {
    let s = Sandbox::new();
    let t = token();
    for backup in [None, Some("--backup=.bak")] {
        let mut args = vec!["redact", "-i", "--force", "-s", "5b1f"];
        args.extend(backup);
        let out = s.run(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_silent(&out, "redact -i without --backup");
        let err = text(&out.stderr);
        assert!(
            err.contains("REDACTED-github-pat") && err.contains("--backup"),
            "the message names the file (redacted) and what to do: {err}"
        );
        assert_eq!(s.names(), [format!("{t}.txt"), "toolu_01plain.txt".into()]);
    }
    // The transcript itself was still redacted.
    assert!(!text(&std::fs::read(s.main()).unwrap()).contains(&t));
}

#[test]
fn previews_say_what_would_be_renamed_without_the_secret() {
    let s = Sandbox::new();
    let t = token();
    let before = walk(&s.root);
    for args in [
        &["redact", "--dry-run", "-s", "5b1f"][..],
        &["redact", "-i", "--backup", "--diff", "-s", "5b1f"][..],
        &["redact", "-i", "--diff=json", "-s", "5b1f"][..],
    ] {
        let out = s.run(args);
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert_silent(&out, &format!("{args:?}"));
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            all.contains("REDACTED-github-pat.txt") && all.contains("renam"),
            "{args:?} says what would be renamed: {all}"
        );
        assert!(!all.contains("toolu_01plain.txt\n") || !all.contains("rename to toolu"));
        assert_eq!(walk(&s.root), before, "{args:?} wrote nothing");
    }
    assert!(s.names().contains(&format!("{t}.txt")));
}

#[test]
fn an_out_dir_copy_takes_the_placeholder_name() {
    let s = Sandbox::new();
    let out_dir = s._dir.path().join("share");
    s.expect(
        &[
            "redact",
            "--out-dir",
            out_dir.to_str().unwrap(),
            s.main().to_str().unwrap(),
        ],
        0,
        "",
    );
    let t = token();
    let copied: Vec<String> = walk(&out_dir)
        .iter()
        .map(|p| p.strip_prefix(&out_dir).unwrap().display().to_string())
        .collect();
    assert!(
        copied.iter().all(|p| !p.contains(&t)),
        "no copy under the secret name: {copied:?}"
    );
    assert!(
        copied
            .iter()
            .any(|p| p.ends_with("tool-results/REDACTED-github-pat.txt")),
        "{copied:?}"
    );
    // The originals are untouched.
    assert!(s.names().contains(&format!("{t}.txt")));
}

#[test]
fn stdout_runs_never_print_the_name() {
    let s = Sandbox::new();
    s.expect(&["redact", "-s", "5b1f"], 0, "");
}

#[test]
fn a_fork_copies_it_under_the_placeholder_name() {
    let s = Sandbox::new();
    let out = s.expect(&["redact", "--fork", "-s", "5b1f"], 0, "");
    let line = text(&out.stdout);
    let new = line
        .trim()
        .split_once("claude --resume ")
        .unwrap()
        .1
        .to_string();
    let results = s.project.join(&new).join("tool-results");
    let mut names: Vec<String> = std::fs::read_dir(&results)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["REDACTED-github-pat.txt", "toolu_01plain.txt"]);
    assert!(
        s.names().contains(&format!("{}.txt", token())),
        "the original keeps its name"
    );
}

#[test]
fn two_secret_names_in_one_folder_take_two_placeholders_and_undo_restores_both() {
    let s = Sandbox::new();
    let other = format!("ghp_{}", "Mn3Bv4Cx5Za6Sd7Fg8Hj9Kl0Qp1Wo2Ei3Ru4");
    let second = s.results().join(format!("{other}.txt"));
    std::fs::write(&second, "second output\n").unwrap();
    s.expect(
        &[
            "redact", "-i", "--backup", "--force", "-j", "2", "-s", "5b1f",
        ],
        0,
        "",
    );
    assert_eq!(
        s.names(),
        [
            "REDACTED-github-pat-1.txt",
            "REDACTED-github-pat.txt",
            "toolu_01plain.txt"
        ]
    );
    let out = s.run(&["undo", "--all", "--since", "1h", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&second).unwrap(), b"second output\n");
    assert_eq!(
        std::fs::read(s.results().join(format!("{}.txt", token()))).unwrap(),
        b"all 12 tests passed\n"
    );
}

/// The SessionEnd hook writes in place without a backup: it redacts the content, leaves the
/// name, and reports the file failed, saying what to do, the name redacted in its output and
/// its log.
#[test]
fn the_session_end_hook_leaves_a_secret_name_and_says_so() {
    let s = Sandbox::new();
    let event = serde_json::json!({
        "session_id": ID,
        "transcript_path": s.main(),
        "cwd": "/home/dev/app",
        "hook_event_name": "SessionEnd",
    });
    let out = crate::common::output_with_stdin(
        cchist().arg("hook").env("CLAUDE_CONFIG_DIR", &s.root),
        event.to_string().as_bytes(),
    );
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_silent(&out, "the hook");
    assert!(
        text(&out.stderr).contains("--backup"),
        "{}",
        text(&out.stderr)
    );
    let log = std::fs::read_to_string(s.root.join("cchist/hook.log")).unwrap();
    assert!(!log.contains(&token()), "{log}");
    assert_eq!(
        s.names(),
        [format!("{}.txt", token()), "toolu_01plain.txt".into()]
    );
    assert!(!text(&std::fs::read(s.main()).unwrap()).contains(&token()));
}

/// A sub-agent named after a secret: its transcript and its `.meta.json` take the same
/// placeholder stem, so they still pair; undo gives both their names back.
#[test]
fn a_sub_agent_and_its_meta_file_take_the_same_placeholder() {
    let s = Sandbox::new();
    let t = token();
    let sub = s.project.join(ID).join("subagents");
    std::fs::create_dir_all(&sub).unwrap();
    let agent = crate::common::message_line("user", "s1", None, ID, "look around");
    std::fs::write(sub.join(format!("agent-{t}.jsonl")), &agent).unwrap();
    std::fs::write(
        sub.join(format!("agent-{t}.meta.json")),
        "{\"agentType\":\"Explore\"}",
    )
    .unwrap();
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        "",
    );
    let names = |d: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.contains(".cchist-bak."))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(&sub),
        [
            "agent-REDACTED-github-pat.jsonl",
            "agent-REDACTED-github-pat.meta.json"
        ]
    );
    let out = s.run(&["undo", "--all", "--since", "1h", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        names(&sub),
        [format!("agent-{t}.jsonl"), format!("agent-{t}.meta.json")]
    );
    assert_eq!(
        std::fs::read_to_string(sub.join(format!("agent-{t}.jsonl"))).unwrap(),
        agent
    );
}

/// The `.renamed` note beside the renamed companion's backup.
fn renamed_note(s: &Sandbox) -> PathBuf {
    walk(&s.results())
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".renamed"))
        .expect("a .renamed note")
}

#[test]
fn the_renamed_note_holds_the_old_name_relative_to_the_session_folder() {
    let s = Sandbox::new();
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        "",
    );
    let note = std::fs::read_to_string(renamed_note(&s)).unwrap();
    assert!(
        !note.contains(&*s.root.to_string_lossy()),
        "no absolute path in the note: {note}"
    );
}

#[test]
fn undo_refuses_an_old_name_outside_the_session_folder_and_creates_nothing() {
    let s = Sandbox::new();
    let outside = tempfile::tempdir().unwrap();
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        "",
    );
    let note = renamed_note(&s);
    let placeholder = s.results().join("REDACTED-github-pat.txt");
    let escapes = [
        // An old absolute note (the config folder moved, or edited) naming a path elsewhere.
        serde_json::json!({"from": outside.path().join("sub/x.txt")}),
        // An absolute note climbing out of the backup's folder by `..`.
        serde_json::json!({"from": s.results().join("../../../../esc/x.txt")}),
        // A relative note climbing out.
        serde_json::json!({"rel": "../../esc/x.txt"}),
        serde_json::json!({"rel": outside.path().join("abs/x.txt")}),
    ];
    for bad in escapes {
        std::fs::write(&note, bad.to_string()).unwrap();
        let out = s.run(&["undo", "--all", "--since", "1h", "--force"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("outside"), "{bad}: {err}");
        assert!(
            placeholder.exists(),
            "{bad}: the file stays under its placeholder"
        );
        assert!(
            !outside.path().join("sub").exists(),
            "{bad}: no folder made"
        );
        assert!(
            !outside.path().join("abs").exists(),
            "{bad}: no folder made"
        );
        assert!(!s.project.join("esc").exists(), "{bad}: no folder made");
        assert!(!s.root.join("esc").exists(), "{bad}: no folder made");
        assert!(
            !s.root.parent().unwrap().join("esc").exists(),
            "{bad}: no folder made"
        );
    }
}
