//! Issue #25 (adversarial round 2): links met where cchist reads or writes. A link is never
//! followed; a gate or an in-place run that passed over one says so and exits 2 (incomplete),
//! and a write never goes through a link to somewhere else.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fake access key id, built at run time.
fn secret() -> String {
    format!("AKIA{}", "Z7LINKSQTESTWXYZ")
}

const SID: &str = "11111111-2222-4333-8444-555555555555";

/// A config root with one project and one idle session holding no secret.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Root {
        let dir = tempfile::tempdir().unwrap();
        let r = Root { dir };
        std::fs::create_dir_all(r.project()).unwrap();
        r
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn project(&self) -> PathBuf {
        self.root().join("projects/-tmp-proj")
    }

    fn session(&self) -> PathBuf {
        let f = self.project().join(format!("{SID}.jsonl"));
        std::fs::write(
            &f,
            "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"uuid\":\"aaaaaaaa-1111-4111-8111-111111111111\",\"parentUuid\":null}\n",
        )
        .unwrap();
        crate::common::age(&f, 7200);
        f
    }

    fn cc(&self) -> Command {
        let mut c = crate::common::cchist();
        c.env("CLAUDE_CONFIG_DIR", self.root())
            .env("HOME", self.root())
            .env("XDG_CONFIG_HOME", self.root().join("xdg"));
        c
    }
}

fn run(c: &mut Command) -> Output {
    c.stdin(std::process::Stdio::null()).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Finding 01: a companion *file* that is a link (`tool-results/t1.txt`,
/// `subagents/agent-a1.jsonl`) is not read; `check` must not pass as if it had been.
#[test]
fn a_linked_companion_file_makes_check_and_redact_incomplete() {
    let r = Root::new();
    let f = r.session();
    let comp = r.project().join(SID);
    let outside = r.root().join("o.txt");
    let body = format!("tok {}\n", secret());
    std::fs::write(&outside, &body).unwrap();
    std::fs::create_dir_all(comp.join("tool-results")).unwrap();
    let link = comp.join("tool-results/t1.txt");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let project = r.project();
    for args in [
        vec!["check", s(&f)],
        vec!["check", s(&project)],
        vec!["check", "--all"],
        vec!["check", "-q", s(&f)],
        vec!["redact", "-i", s(&f)],
        vec!["redact", "-i", "--all"],
    ] {
        let o = run(r.cc().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        if !args.contains(&"-q") {
            assert!(
                e.contains("t1.txt") && e.contains("symbolic link"),
                "{args:?}: {e}"
            );
        }
        assert!(!e.contains(&secret()), "{args:?}: {e}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), body, "{args:?}");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
    // A linked sub-agent transcript, named through its session's file.
    std::fs::remove_file(&link).unwrap();
    std::fs::create_dir_all(comp.join("subagents")).unwrap();
    let agent = r.root().join("a.jsonl");
    std::fs::write(
        &agent,
        format!("{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"{}\"}},\"uuid\":\"bbbbbbbb-1111-4111-8111-111111111111\",\"parentUuid\":null}}\n", secret()),
    )
    .unwrap();
    std::os::unix::fs::symlink(&agent, comp.join("subagents/agent-a1.jsonl")).unwrap();
    for args in [vec!["check", s(&f)], vec!["redact", "-i", s(&f)]] {
        let o = run(r.cc().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("agent-a1.jsonl"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// Finding 01, the hook: SessionEnd scrubs the session and logs the link it did not follow.
#[test]
fn the_session_end_hook_logs_a_linked_companion_file() {
    let r = Root::new();
    let f = r.session();
    let comp = r.project().join(SID);
    std::fs::create_dir_all(comp.join("tool-results")).unwrap();
    let outside = r.root().join("o.txt");
    std::fs::write(&outside, format!("tok {}\n", secret())).unwrap();
    std::os::unix::fs::symlink(&outside, comp.join("tool-results/t1.txt")).unwrap();
    let ev = serde_json::json!({
        "session_id": SID,
        "transcript_path": f,
        "cwd": "/tmp/proj",
        "hook_event_name": "SessionEnd",
    });
    let o = crate::common::output_with_stdin(
        r.cc().current_dir(r.root()).arg("hook"),
        ev.to_string().as_bytes(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let log = std::fs::read_to_string(r.root().join("cchist/hook.log")).unwrap();
    let last: serde_json::Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(last["outcome"], "refused", "{log}");
    assert!(
        log.contains("t1.txt") && log.contains("symbolic link"),
        "{log}"
    );
    assert!(!log.contains(&secret()));
}

/// Finding 11: `redact -i --all` over a linked project folder left its sessions as they were
/// and exited 0 (silently under -q).
#[test]
fn redact_in_place_over_a_linked_project_folder_exits_2() {
    let r = Root::new();
    std::fs::remove_dir(r.project()).unwrap();
    let away = r.root().join("else/-tmp-proj");
    std::fs::create_dir_all(&away).unwrap();
    std::os::unix::fs::symlink(&away, r.project()).unwrap();
    let f = away.join(format!("{SID}.jsonl"));
    std::fs::write(&f, format!("{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"tok {}\"}},\"uuid\":\"aaaaaaaa-1111-4111-8111-111111111111\",\"parentUuid\":null}}\n", secret())).unwrap();
    crate::common::age(&f, 7200);
    for args in [
        vec!["check", "-q", "--all"],
        vec!["redact", "-i", "-q", "--all"],
        vec!["redact", "-i", "--all"],
    ] {
        let o = run(r.cc().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("incomplete"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    assert!(std::fs::read_to_string(&f).unwrap().contains(&secret()));
}

/// Finding 04: `--out-dir DIR` followed a linked folder inside DIR (`DIR/-tmp-proj ->
/// elsewhere`) and wrote the copy there. Refused: that file fails, exit 2, nothing elsewhere.
#[test]
fn out_dir_never_writes_through_a_link_inside_it() {
    let r = Root::new();
    let f = r.session();
    let comp = r.project().join(SID);
    std::fs::create_dir_all(comp.join("tool-results")).unwrap();
    std::fs::write(comp.join("tool-results/t.txt"), "plain\n").unwrap();
    crate::common::age(&comp.join("tool-results/t.txt"), 7200);
    let projects = r.root().join("projects");
    let name = format!("{SID}.jsonl");
    // the project folder in DIR a link; then the session's companion folder; then the file
    for link_at in [
        "-tmp-proj".to_string(),
        format!("-tmp-proj/{SID}"),
        format!("-tmp-proj/{name}"),
    ] {
        let out = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let at = out.path().join(&link_at);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        let target = if link_at.ends_with(".jsonl") {
            let t = outside.path().join("victim.jsonl");
            std::fs::write(&t, "victim\n").unwrap();
            t
        } else {
            outside.path().to_path_buf()
        };
        std::os::unix::fs::symlink(&target, &at).unwrap();
        for args in [
            vec!["redact", "-q", "--out-dir", s(out.path()), s(&projects)],
            vec!["redact", "--yes", "--out-dir", s(out.path()), s(&projects)],
        ] {
            let o = run(r.cc().args(&args));
            assert_eq!(
                o.status.code(),
                Some(2),
                "{link_at} {args:?}: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains("symbolic link"),
                "{link_at} {args:?}: {}",
                stderr(&o)
            );
            let mut left: Vec<_> = std::fs::read_dir(outside.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            left.sort();
            if link_at.ends_with(".jsonl") {
                assert_eq!(left, vec!["victim.jsonl"], "{link_at} {args:?}");
                assert_eq!(std::fs::read_to_string(&target).unwrap(), "victim\n");
            } else {
                assert!(
                    left.is_empty(),
                    "{link_at} {args:?}: wrote {left:?} through the link"
                );
            }
        }
    }
    assert!(f.is_file());
}

/// Finding 08: `man --out-dir DIR` and `check --write-baseline B` wrote through a link at
/// the file they write. They replace the file atomically (temp file + rename), which
/// replaces the link itself and leaves what it pointed to as it was, and say so.
#[test]
fn man_pages_and_baselines_replace_a_link_instead_of_writing_through_it() {
    let r = Root::new();
    let f = r.session();
    let victim = r.root().join("victim");
    std::fs::write(&victim, "not a man page\n").unwrap();
    let man = r.root().join("man");
    std::fs::create_dir_all(&man).unwrap();
    std::os::unix::fs::symlink(&victim, man.join("cchist.1")).unwrap();
    let o = run(r.cc().args(["man", "--out-dir", s(&man)]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "not a man page\n"
    );
    let page = man.join("cchist.1");
    assert!(std::fs::symlink_metadata(&page).unwrap().is_file());
    assert!(std::fs::read_to_string(&page).unwrap().contains(".TH"));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    // the baseline
    let b = r.root().join("base.json");
    std::os::unix::fs::symlink(&victim, &b).unwrap();
    let o = run(r.cc().args(["check", "--write-baseline", s(&b), s(&f)]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "not a man page\n"
    );
    assert!(std::fs::symlink_metadata(&b).unwrap().is_file());
    assert!(std::fs::read_to_string(&b).unwrap().contains("\"known\""));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
}
