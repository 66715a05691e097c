//! Every entry point handles the same set of files as one session (`SessionFile::members`):
//! the transcript, its sub-agent transcripts and their `.meta.json`, `tool-results/`, and
//! cchist's own backups. A secret planted in each must be gone after every command that
//! scrubs, and a fork must carry the same set, scrubbed.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::common::cchist;

const ID: &str = "5b1f0000-0000-4000-8000-000000000001";

fn token() -> String {
    // Assembled at run time so the source itself holds no token-shaped string.
    format!("ghp_{}", "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9")
}

fn record(kind: &str, uuid: &str, parent: Option<&str>, session: &str, text: &str) -> String {
    crate::common::message_line(kind, uuid, parent, session, text)
}

struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    /// A config folder holding one session with a secret in every member.
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = root.join("projects/-home-dev-app");
        let comp = project.join(ID);
        std::fs::create_dir_all(comp.join("subagents")).unwrap();
        std::fs::create_dir_all(comp.join("tool-results")).unwrap();
        let t = token();
        let main = record("user", "u1", None, ID, &format!("deploy with {t} please"))
            + &record("assistant", "a1", Some("u1"), ID, "done")
            + &record("user", "u2", Some("a1"), ID, "thanks")
            + &record("assistant", "a2", Some("u2"), ID, "welcome");
        std::fs::write(project.join(format!("{ID}.jsonl")), &main).unwrap();
        std::fs::write(
            project.join(format!("{ID}.jsonl.cchist-bak.20260401T100000Z")),
            &main,
        )
        .unwrap();
        let agent = record("user", "s1", None, ID, &format!("use {t}"))
            + &record("assistant", "s2", Some("s1"), ID, "ok");
        std::fs::write(comp.join("subagents/agent-a1.jsonl"), agent).unwrap();
        std::fs::write(
            comp.join("subagents/agent-a1.meta.json"),
            serde_json::json!({"agentType": "general-purpose", "description": format!("push with {t}")})
                .to_string(),
        )
        .unwrap();
        std::fs::write(
            comp.join("tool-results/toolu_1.txt"),
            format!("output\nGITHUB_TOKEN={t}\n"),
        )
        .unwrap();
        Sandbox {
            _dir: dir,
            root,
            project,
        }
    }

    fn main(&self) -> PathBuf {
        self.project.join(format!("{ID}.jsonl"))
    }

    fn cchist(&self, args: &[&str], stdin: Option<String>) -> Output {
        use std::io::Write;
        let mut child = cchist()
            .args(args)
            .env("CLAUDE_CONFIG_DIR", &self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "cchist {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Files under the config folder that still hold the token (relative paths).
    fn holding_secret(&self) -> Vec<String> {
        let t = token();
        files(&self.root)
            .into_iter()
            .filter(|p| {
                std::fs::read(p)
                    .unwrap()
                    .windows(t.len())
                    .any(|w| w == t.as_bytes())
            })
            .map(|p| p.strip_prefix(&self.root).unwrap().display().to_string())
            .collect()
    }

    /// `check` over the whole config folder finds nothing.
    fn check_is_clean(&self) {
        let out = cchist()
            .args(["check"])
            .arg(self.root.join("projects"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "check still finds something: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }

    fn assert_scrubbed(&self, entry: &str) {
        assert_eq!(self.holding_secret(), Vec::<String>::new(), "after {entry}");
        self.check_is_clean();
    }
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            v.extend(files(&p));
        } else {
            v.push(p);
        }
    }
    v.sort();
    v
}

#[test]
fn check_reaches_every_member() {
    let s = Sandbox::new();
    let out = cchist()
        .args(["check", "--format", "json"])
        .arg(&s.project)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = String::from_utf8_lossy(&out.stdout);
    for member in [
        format!("{ID}.jsonl\""),
        ".cchist-bak.".into(),
        "agent-a1.jsonl".into(),
        "agent-a1.meta.json".into(),
        "toolu_1.txt".into(),
    ] {
        assert!(report.contains(&member), "check skipped {member}: {report}");
    }
}

#[test]
fn redact_by_session_id_scrubs_every_member() {
    let s = Sandbox::new();
    // --force: the sandbox was just written, so the session looks live.
    s.cchist(
        &["redact", "--in-place", "--force", "--session", "5b1f"],
        None,
    );
    s.assert_scrubbed("redact -s");
}

#[test]
fn redact_by_path_scrubs_every_member() {
    let s = Sandbox::new();
    let main = s.main();
    // --force: the sandbox was just written, so the session looks live.
    s.cchist(
        &["redact", "--in-place", "--force", main.to_str().unwrap()],
        None,
    );
    s.assert_scrubbed("redact PATH");
}

#[test]
fn run_all_scrubs_every_member() {
    let s = Sandbox::new();
    s.cchist(
        &["run", "-p", "scrub", "--all", "--in-place", "--force"],
        None,
    );
    s.assert_scrubbed("run --all");
}

#[test]
fn session_end_hook_scrubs_every_member() {
    let s = Sandbox::new();
    let event = serde_json::json!({
        "session_id": ID,
        "transcript_path": s.main(),
        "cwd": "/home/dev/app",
        "hook_event_name": "SessionEnd",
    });
    s.cchist(&["hook"], Some(event.to_string()));
    s.assert_scrubbed("the SessionEnd hook");
}

#[test]
fn fork_copies_every_member_scrubbed() {
    let s = Sandbox::new();
    let before = files(&s.root);
    let out = s.cchist(&["redact", "--fork", "--session", "5b1f"], None);
    let line = String::from_utf8(out.stdout).unwrap();
    let new = line.trim().split_once("claude --resume ").unwrap().1;
    let comp = |id: &str| {
        files(&s.project.join(id))
            .into_iter()
            .map(|p| {
                p.strip_prefix(s.project.join(id))
                    .unwrap()
                    .display()
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(comp(new), comp(ID), "the fork has the same companion files");
    let t = token();
    for p in files(&s.project.join(new))
        .into_iter()
        .chain([s.project.join(format!("{new}.jsonl"))])
    {
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(!text.contains(&t), "{} holds the secret", p.display());
        assert!(
            !text.contains(ID),
            "{} keeps the old session id",
            p.display()
        );
    }
    let after: Vec<_> = files(&s.root)
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains(new))
        .collect();
    assert_eq!(after, before, "the original session is untouched");
}

#[test]
fn history_edit_backups_are_members_and_undo_restores_a_scrubbed_copy() {
    let s = Sandbox::new();
    std::fs::remove_file(
        s.project
            .join(format!("{ID}.jsonl.cchist-bak.20260401T100000Z")),
    )
    .unwrap();
    s.cchist(
        &["history", "delete", "-s", "5b1f", "--turns", "2", "--force"],
        None,
    );
    // The edit kept a backup holding the secret: it is part of the session, so redaction
    // reaches it, and undo then restores a scrubbed copy.
    assert!(s
        .holding_secret()
        .iter()
        .any(|p| p.contains(".cchist-bak.")));
    // --force: the sandbox was just written, so the session looks live.
    s.cchist(
        &["redact", "--in-place", "--force", "--session", "5b1f"],
        None,
    );
    s.assert_scrubbed("history delete, then redact -s");
    s.cchist(&["undo", "-s", "5b1f", "--force"], None);
    let restored = std::fs::read_to_string(s.main()).unwrap();
    assert_eq!(
        restored.lines().count(),
        4,
        "undo restored the edit's backup"
    );
    assert!(restored.contains("[REDACTED:github-pat]"));
    s.assert_scrubbed("undo");
}

/// `--backup` asks for the originals to be kept: a second `redact -i --backup` leaves the
/// first run's backup as it is, so two `undo`s bring back the bytes before the first run.
/// (It used to redact the older backup in place: the first original was lost to undo.)
#[test]
fn a_run_with_backup_leaves_older_backups_for_undo() {
    let s = Sandbox::new();
    let main = s.main();
    let t = token();
    let original = std::fs::read(&main).unwrap();
    s.cchist(&["redact", "-i", "--backup", "--force", "-s", "5b1f"], None);
    let mut later = std::fs::read(&main).unwrap();
    later.extend_from_slice(record("user", "u3", Some("a2"), ID, &format!("again {t}")).as_bytes());
    std::fs::write(&main, &later).unwrap();
    // A later stamp for the second run's backups.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = s.cchist(&["redact", "-i", "--backup", "--force", "-s", "5b1f"], None);
    assert!(!std::fs::read_to_string(&main).unwrap().contains(&t));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("older backup"),
        "the run says it left the older backups: {said}"
    );
    s.cchist(&["undo", "-s", "5b1f", "--force"], None);
    assert_eq!(
        std::fs::read(&main).unwrap(),
        later,
        "first undo: before the second run"
    );
    s.cchist(&["undo", "-s", "5b1f", "--force"], None);
    assert_eq!(
        std::fs::read(&main).unwrap(),
        original,
        "second undo: the bytes before the first run, secret included"
    );
}

/// The transcript's other copies beside it — what a forced undo replaced
/// (`.cchist-undone.<time>`) and a `--backup=SUFFIX` copy (`.bak`) — are the session too: a
/// run without `--backup` and the SessionEnd hook redact them with it, as they do cchist's
/// own backups. (They were left holding their secrets.)
#[test]
fn undo_and_suffix_copies_of_the_transcript_are_redacted_with_it() {
    for entry in ["redact", "hook"] {
        let s = Sandbox::new();
        let main = s.main();
        let bytes = std::fs::read(&main).unwrap();
        std::fs::write(
            format!("{}.cchist-undone.20260401T110000000Z", main.display()),
            &bytes,
        )
        .unwrap();
        std::fs::write(format!("{}.bak", main.display()), &bytes).unwrap();
        if entry == "redact" {
            s.cchist(&["redact", "-i", "--force", "-s", "5b1f"], None);
        } else {
            let event = serde_json::json!({"session_id": ID, "transcript_path": main,
                "cwd": "/home/dev/app", "hook_event_name": "SessionEnd"});
            s.cchist(&["hook"], Some(event.to_string()));
        }
        s.assert_scrubbed(entry);
    }
}
