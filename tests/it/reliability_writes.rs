//! Issue #25, where cchist writes and copies: an `--out-dir` destination that exists gets the
//! rules of an in-place write of it; backups and undo copies are never copied into a folder
//! or a fork, nor backed up themselves; the hook never follows a link under its own folder
//! and takes only a session id that names the transcript.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A GitHub token shaped fake, built at run time.
fn token() -> String {
    const ALNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let body: String = (0..36)
        .map(|i| ALNUM[(i * 17 + 5) % ALNUM.len()] as char)
        .collect();
    format!("{}{body}", "ghp_")
}

const SID: &str = "11111111-2222-4333-8444-555555555555";

/// A chained session of `turns` turns; the first prompt carries `extra`.
fn session_text(id: &str, turns: usize, extra: &str) -> String {
    let mut out = String::new();
    let mut parent = serde_json::Value::Null;
    for t in 0..turns {
        let u = format!("00000000-0000-4000-8000-{:012}", t * 2);
        let a = format!("00000000-0000-4000-8000-{:012}", t * 2 + 1);
        let text = if t == 0 && !extra.is_empty() {
            format!("prompt {} {extra}", t + 1)
        } else {
            format!("prompt {}", t + 1)
        };
        let user = serde_json::json!({"parentUuid": parent, "isSidechain": false, "type": "user",
            "message": {"role": "user", "content": text}, "uuid": u,
            "timestamp": "2026-01-01T00:00:00.000Z", "sessionId": id, "cwd": "/tmp/proj",
            "version": "2.1.328", "userType": "external"});
        let asst = serde_json::json!({"parentUuid": u, "isSidechain": false, "type": "assistant",
            "message": {"id": format!("msg_{t}"), "role": "assistant", "model": "claude-opus-4-6",
                "type": "message", "content": [{"type": "text", "text": format!("answer {}", t + 1)}]},
            "uuid": a, "timestamp": "2026-01-01T00:00:30.000Z", "sessionId": id, "cwd": "/tmp/proj",
            "version": "2.1.328", "userType": "external"});
        out.push_str(&format!("{user}\n{asst}\n"));
        parent = a.into();
    }
    out
}

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("claude/projects/-tmp-proj")).unwrap();
        Sandbox { dir }
    }
    fn root(&self) -> PathBuf {
        self.dir.path().join("claude")
    }
    fn project(&self) -> PathBuf {
        self.root().join("projects/-tmp-proj")
    }
    /// Write `path` as a session of `turns` turns, old enough not to look live.
    fn gen(&self, path: &Path, turns: usize, extra: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let id = path.file_stem().unwrap().to_string_lossy().into_owned();
        std::fs::write(path, session_text(&id, turns, extra)).unwrap();
        crate::common::age(path, 7200);
    }
    fn cc(&self) -> Command {
        let mut c = crate::common::cchist();
        c.env("CLAUDE_CONFIG_DIR", self.root())
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path())
            .env_remove("CCHIST_LOCK_WAIT")
            .env_remove("CCHIST_REDACT_KEY")
            .env_remove("NO_COLOR");
        c
    }
}

fn run(c: &mut Command) -> Output {
    c.output().expect("run cchist")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every regular file under `dir` (links not followed).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| {
            let b = std::fs::read(p).unwrap();
            memchr::memmem::find(&b, needle.as_bytes()).is_some()
        })
        .collect()
}

// ---- N7: --out-dir onto a file that exists ----

#[test]
fn out_dir_onto_an_existing_file_gets_in_place_rules() {
    let r = Sandbox::new();
    let copy = r.dir.path().join("copy");
    r.gen(&copy.join(format!("-tmp-proj/{SID}.jsonl")), 2, "old copy");
    let live = r.project().join(format!("{SID}.jsonl"));
    r.gen(&live, 6, "the live session");
    crate::common::age(&live, 0); // written just now: live
    let before = std::fs::read(&live).unwrap();
    let projects = r.root().join("projects");
    for extra in [&[][..], &["--yes"][..], &["--backup"][..]] {
        let o = run(r
            .cc()
            .args(["redact", "--out-dir", s(&projects)])
            .args(extra)
            .arg(&copy));
        assert!(!o.status.success(), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("live"), "{extra:?}: {}", stderr(&o));
        assert_eq!(
            std::fs::read(&live).unwrap(),
            before,
            "{extra:?}: live replaced"
        );
    }
    // Idle now: replacing it needs --yes or --backup.
    crate::common::age(&live, 7200);
    let o = run(r
        .cc()
        .args(["redact", "--out-dir", s(&projects)])
        .arg(&copy));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--yes"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&live).unwrap(),
        before,
        "replaced without --yes"
    );
    let o = run(r
        .cc()
        .args(["redact", "--backup", "--out-dir", s(&projects)])
        .arg(&copy));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&live).unwrap();
    assert!(text.contains("old copy"), "not replaced with --backup");
    let baks: Vec<_> = files(&r.project())
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.contains(".cchist-bak.") && !n.starts_with('.')
        })
        .collect();
    assert_eq!(baks.len(), 1, "{baks:?}");
    assert_eq!(std::fs::read(&baks[0]).unwrap(), before);

    // A folder cchist filled: a fresh run writes it, the same run again needs --yes.
    let out = r.dir.path().join("out");
    let o = run(r.cc().args(["redact", "--out-dir", s(&out)]).arg(&copy));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(r.cc().args(["redact", "--out-dir", s(&out)]).arg(&copy));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run(r
        .cc()
        .args(["redact", "--yes", "--out-dir", s(&out)])
        .arg(&copy));
    assert!(o.status.success(), "{}", stderr(&o));
}

// ---- N11: backups and undo copies are never copied ----

#[test]
fn out_dir_and_fork_never_copy_backups_or_undo_copies() {
    let r = Sandbox::new();
    let main = r.project().join(format!("{SID}.jsonl"));
    r.gen(&main, 3, "");
    let note = "my private medical note";
    let bak = r
        .project()
        .join(format!("{SID}.jsonl.cchist-bak.20200101T000000Z"));
    r.gen(&bak, 3, note);
    let sub = r.project().join(format!("{SID}/subagents/agent-a1.jsonl"));
    r.gen(&sub, 1, "");
    r.gen(
        &r.project().join(format!(
            "{SID}/subagents/agent-a1.jsonl.cchist-bak.20200101T000000Z"
        )),
        1,
        note,
    );
    r.gen(
        &r.project().join(format!(
            "{SID}/subagents/agent-a1.jsonl.cchist-undone.20200101T000000Z"
        )),
        1,
        note,
    );
    r.gen(
        &r.project()
            .join(format!("{SID}/subagents/agent-a1.jsonl.bak")),
        1,
        note,
    );
    let share = r.dir.path().join("share");
    let o = run(r
        .cc()
        .args(["run", "-p", "share", "--out-dir", s(&share)])
        .arg(&main));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(share.join(format!("{SID}.jsonl")).is_file());
    assert!(share
        .join(format!("{SID}/subagents/agent-a1.jsonl"))
        .is_file());
    assert_eq!(holding(&share, "medical"), Vec::<PathBuf>::new());
    let before: Vec<_> = files(&r.project());
    let o = run(r.cc().args(["redact", "--fork"]).arg(&main));
    assert!(o.status.success(), "{}", stderr(&o));
    let new: Vec<_> = files(&r.project())
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(new.len(), 2, "{new:?}");
    for p in new {
        let b = std::fs::read_to_string(&p).unwrap();
        assert!(!b.contains("medical"), "{} copied a backup", p.display());
    }
}

// ---- N12: a backup gets no backup of its own ----

#[test]
fn a_backup_or_a_suffix_copy_is_not_backed_up_again() {
    let r = Sandbox::new();
    let t = token();
    let main = r.project().join(format!("{SID}.jsonl"));
    let sub = r.project().join(format!("{SID}/subagents/agent-a1.jsonl"));
    for b in ["--backup", "--backup=.bak", "--backup=.bak2"] {
        r.gen(&main, 3, &format!("k {t}"));
        r.gen(&sub, 1, &format!("k {t}"));
        let o = run(r.cc().args(["redact", "-i", b]).arg(&main));
        assert!(o.status.success(), "{b}: {}", stderr(&o));
    }
    let names: Vec<String> = files(&r.project())
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for n in &names {
        let copies = [".cchist-bak.", ".bak"]
            .iter()
            .map(|m| n.matches(m).count())
            .sum::<usize>();
        assert!(copies <= 1, "a backup of a backup: {n} (all: {names:?})");
    }
    // Each run had --backup, so it kept the originals and left the earlier runs' copies as
    // they were: every copy holds the token (three runs, two files), the transcripts none.
    let held = holding(&r.project(), &t);
    assert_eq!(held.len(), 6, "{held:?}");
    assert!(held.iter().all(|p| {
        let n = p.to_string_lossy();
        n.contains(".cchist-bak.") || n.ends_with(".bak") || n.ends_with(".bak2")
    }));
}

// ---- N5: a fork copies a binary companion only when it holds no secret ----

/// A fork is meant to be clean: a binary companion (which cchist cannot redact without breaking
/// it) holding a secret is left out of the fork, and stderr names it, its count and that it was
/// left out; one with no secret is copied byte for byte, as it is, and said so.
#[test]
fn a_fork_leaves_out_a_binary_companion_that_holds_a_secret() {
    let r = Sandbox::new();
    let t = token();
    let main = r.project().join(format!("{SID}.jsonl"));
    r.gen(&main, 2, &format!("k {t}"));
    let dir = r.project().join(format!("{SID}/tool-results"));
    std::fs::create_dir_all(&dir).unwrap();
    let (bin, clean) = (dir.join("b.bin"), dir.join("c.bin"));
    std::fs::write(&bin, format!("bin\0 {t}\n")).unwrap();
    std::fs::write(&clean, "bin\0 nothing here\n").unwrap();
    crate::common::age(&bin, 7200);
    crate::common::age(&clean, 7200);
    let o = run(r.cc().args(["run", "-p", "scrub", "--fork"]).arg(&main));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.lines().any(|l| l.contains("b.bin")
            && l.contains("holds 1 secret(s) cchist cannot redact")
            && l.contains("left out of the fork")),
        "{e}"
    );
    assert!(
        e.lines().any(|l| l.contains("c.bin")
            && l.contains("a binary file (NUL bytes or not UTF-8), left byte for byte")
            && !l.contains("secret")),
        "{e}"
    );
    assert!(!e.contains(&t) && !String::from_utf8_lossy(&o.stdout).contains(&t));
    let forks: Vec<PathBuf> = std::fs::read_dir(r.project())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.ends_with(SID))
        .collect();
    assert_eq!(forks.len(), 1, "{forks:?}");
    let fork = forks[0].join("tool-results");
    assert!(
        !fork.join("b.bin").exists(),
        "the secret binary is left out"
    );
    assert_eq!(
        std::fs::read(fork.join("c.bin")).unwrap(),
        std::fs::read(&clean).unwrap()
    );
    assert!(holding(&forks[0], &t).is_empty());
    assert!(bin.is_file(), "the original keeps it");
}

/// An `--out-dir` copy is held to the fork's promise: a binary companion holding a secret is
/// not copied into the folder; stderr names it and why, and the run exits 2 (incomplete). A
/// binary companion with no secret is copied byte for byte. Both `run` and `redact`.
#[test]
fn an_out_dir_copy_leaves_out_a_binary_companion_that_holds_a_secret() {
    for cmd in [&["run", "-p", "share"][..], &["redact"][..]] {
        let r = Sandbox::new();
        let t = token();
        let main = r.project().join(format!("{SID}.jsonl"));
        r.gen(&main, 2, "hello");
        let dir = r.project().join(format!("{SID}/tool-results"));
        std::fs::create_dir_all(&dir).unwrap();
        let (bin, clean) = (dir.join("b.bin"), dir.join("c.bin"));
        std::fs::write(&bin, format!("bin\0 {t}\n")).unwrap();
        std::fs::write(&clean, "bin\0 nothing here\n").unwrap();
        crate::common::age(&main, 7200);
        crate::common::age(&bin, 7200);
        crate::common::age(&clean, 7200);
        let out = r.dir.path().join("share");
        let o = run(r.cc().args(cmd).arg("--out-dir").arg(&out).arg(&main));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {e}");
        assert!(
            e.lines().any(|l| l.contains("b.bin")
                && l.contains("holds 1 secret(s) cchist cannot redact")
                && l.contains("left out of the copy")),
            "{cmd:?}: {e}"
        );
        assert!(!e.contains(&t) && !String::from_utf8_lossy(&o.stdout).contains(&t));
        assert!(
            holding(&out, &t).is_empty(),
            "{cmd:?}: the copy holds the token"
        );
        let copies: Vec<PathBuf> = files(&out);
        assert!(
            copies.iter().any(|p| p.ends_with("c.bin")),
            "{cmd:?}: the clean binary is copied: {copies:?}"
        );
        assert!(
            !copies.iter().any(|p| p.ends_with("b.bin")),
            "{cmd:?}: {copies:?}"
        );
        assert!(bin.is_file(), "the original keeps it");
    }
}

// ---- N13: a Stop hook takes only a session id that names the transcript ----

fn hook(r: &Sandbox, input: &serde_json::Value, pipeline: &Path) -> Output {
    use std::io::Write;
    let mut c = r.cc();
    c.args(["hook", "--pipeline", s(pipeline)])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_stop_hook_ignores_a_session_id_that_is_not_the_transcripts() {
    let r = Sandbox::new();
    let t = token();
    let main = r.project().join(format!("{SID}.jsonl"));
    r.gen(&main, 4, "");
    let p = r.dir.path().join("p.toml");
    std::fs::write(
        &p,
        "version = 1\n[hook]\naction = \"notify\"\nevery = 1\nstop_wait_ms = 300\n[[stage]]\ntype = \"redact\"\n",
    )
    .unwrap();
    let state = r.root().join("cchist/hook-state");
    for bad in [t.as_str(), "22222222-2222-4333-8444-555555555555", "../x"] {
        let input = serde_json::json!({"hook_event_name": "Stop", "session_id": bad,
            "transcript_path": s(&main), "cwd": "/tmp/proj", "last_assistant_message": "answer 4"});
        let o = hook(&r, &input, &p);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            !out.contains(&t) && !stderr(&o).contains(&t),
            "the token was printed"
        );
        let made: Vec<_> = files(&state);
        assert!(made.is_empty(), "{bad}: {made:?}");
    }
    let log = std::fs::read_to_string(r.root().join("cchist/hook.log")).unwrap();
    assert!(!log.contains(&t), "the token was logged");
    assert!(log.contains("refused"), "{log}");
    // The transcript's own id is taken.
    let input = serde_json::json!({"hook_event_name": "Stop", "session_id": SID,
        "transcript_path": s(&main), "cwd": "/tmp/proj", "last_assistant_message": "answer 4"});
    let o = hook(&r, &input, &p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        state.join(format!("{SID}.json")).is_file(),
        "{}",
        stderr(&o)
    );
}

// ---- N9: the hook never follows a link under its own folder ----

#[test]
fn the_hook_never_writes_or_prunes_through_a_link() {
    let r = Sandbox::new();
    let main = r.project().join(format!("{SID}.jsonl"));
    r.gen(&main, 3, "");
    let notes = r.dir.path().join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    for i in 10..41 {
        std::fs::write(
            notes.join(format!("20200101T0000{i}Z-notes.md")),
            format!("my note {i}\n"),
        )
        .unwrap();
    }
    let memory = r.root().join("cchist/memory");
    std::fs::create_dir_all(&memory).unwrap();
    std::os::unix::fs::symlink(&notes, memory.join("-tmp-proj")).unwrap();
    let target = r.dir.path().join("target");
    std::fs::write(&target, "orig content\n").unwrap();
    std::os::unix::fs::symlink(&target, r.root().join("cchist/hook.log")).unwrap();
    let elsewhere = r.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, r.root().join("cchist/hook-state")).unwrap();
    let before: Vec<_> = files(&notes);
    let compact = serde_json::json!({"hook_event_name": "PostCompact", "session_id": SID,
        "transcript_path": s(&main), "cwd": "/tmp/proj", "trigger": "manual",
        "compact_summary": "summary"});
    let o = hook(&r, &compact, Path::new("scrub"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        files(&notes),
        before,
        "the memory link was written through or pruned"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "orig content\n");
    let p = r.dir.path().join("p.toml");
    std::fs::write(
        &p,
        "version = 1\n[hook]\naction = \"notify\"\nevery = 1\nstop_wait_ms = 300\n[[stage]]\ntype = \"redact\"\n",
    )
    .unwrap();
    let stop = serde_json::json!({"hook_event_name": "Stop", "session_id": SID,
        "transcript_path": s(&main), "cwd": "/tmp/proj", "last_assistant_message": "answer 3"});
    let o = hook(&r, &stop, &p);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        files(&elsewhere),
        Vec::<PathBuf>::new(),
        "hook-state written through"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "orig content\n");
}
