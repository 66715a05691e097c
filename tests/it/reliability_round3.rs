//! Issue #25, round 3: an attacker's pass over the command line. Each case runs the binary
//! on a sandbox (a temp config folder, or a temp folder of transcripts) and checks that what
//! the attack aims at — an input, a file outside the session, the terminal — is left as it
//! was, with a clear message and exit 2 where the command is refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::reliability_common::{session, SECRET};

/// A temp config root (`CLAUDE_CONFIG_DIR`, also `HOME` and `XDG_CONFIG_HOME`, so nothing
/// reaches the real ones) with one project folder.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("projects/-home-dev-r3")).unwrap();
        Sandbox { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn project(&self) -> PathBuf {
        self.root().join("projects/-home-dev-r3")
    }

    /// A session `<id>.jsonl` in the project (a synthetic one holding [`SECRET`]), old
    /// enough not to look live.
    fn session(&self, id: &str) -> PathBuf {
        let p = self.project().join(format!("{id}.jsonl"));
        std::fs::write(&p, session(1, 6_000)).unwrap();
        crate::common::age(&p, 3600);
        p
    }

    fn cc(&self) -> Command {
        let mut c = crate::common::cchist();
        c.env("CLAUDE_CONFIG_DIR", self.root())
            .env("HOME", self.root())
            .env("XDG_CONFIG_HOME", self.root())
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

/// Every file under `dir` (links not followed) with its bytes.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.insert(e.path(), std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

// ---- 5. `undo --all --since` takes the time `undo --list` prints ----

/// A sandbox with sessions `a` and `b`, backed up at 10:00 and 12:00 UTC on 2026-01-01.
fn two_backups() -> (Sandbox, PathBuf, PathBuf) {
    let r = Sandbox::new();
    let a = r.session("a");
    let b = r.session("b");
    std::fs::write(
        format!("{}.cchist-bak.20260101T100000000Z", s(&a)),
        "old a\n",
    )
    .unwrap();
    std::fs::write(
        format!("{}.cchist-bak.20260101T120000000Z", s(&b)),
        "old b\n",
    )
    .unwrap();
    (r, a, b)
}

#[test]
fn undo_all_since_a_time_of_day_restores_only_later_backups() {
    // The form `undo --list` prints, with and without seconds, RFC 3339 (an offset too).
    let listed = {
        let (r, _, _) = two_backups();
        let o = run(r.cc().args(["undo", "--list"]));
        assert!(o.status.success(), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        let line = text
            .lines()
            .find(|l| l.ends_with("b.jsonl"))
            .unwrap()
            .to_string();
        line[..19].to_string()
    };
    assert_eq!(listed, "2026-01-01 12:00:00");
    for since in [
        listed.as_str(),
        "2026-01-01 11:00",
        "2026-01-01 11:59:59",
        "2026-01-01T11:00:00Z",
        "2026-01-01T11:30:00.250Z",
        "2026-01-01T12:00:00+01:00",
    ] {
        let (r, a, b) = two_backups();
        let was_a = std::fs::read(&a).unwrap();
        let o = run(r.cc().args(["undo", "--all", "--force", "--since", since]));
        assert!(o.status.success(), "--since {since}: {}", stderr(&o));
        assert!(
            std::fs::read(&b).unwrap() == b"old b\n",
            "--since {since}: b not restored"
        );
        assert!(
            std::fs::read(&a).unwrap() == was_a,
            "--since {since} undid the 10:00 edit too"
        );
    }
    // A time after both: nothing to restore.
    let (r, a, b) = two_backups();
    let before = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let o = run(r
        .cc()
        .args(["undo", "--all", "--force", "--since", "2026-01-01 12:00:01"]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()) == before,
        "a file changed"
    );
}

#[test]
fn an_invalid_date_or_time_is_an_error_that_names_it() {
    let (r, a, b) = two_backups();
    let before = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    for bad in [
        "2026-13-45",
        "2026-02-30",
        "2026-01-01 25:00",
        "2026-01-01 10:61",
        "2026-01-01T10:00:00+25:00",
        "2026-01-01 10:00 trailing",
    ] {
        for cmd in [
            vec!["undo", "--all", "--force", "--since", bad],
            vec!["undo", "--list", "--since", bad],
            vec!["backups", "prune", "--older-than", bad],
        ] {
            let o = run(r.cc().args(&cmd));
            assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", stderr(&o));
            let e = stderr(&o);
            assert!(e.contains(bad), "{cmd:?}: {e}");
            assert!(!e.contains("no cchist backup"), "{cmd:?}: {e}");
        }
    }
    assert!(
        (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()) == before,
        "a file changed"
    );
}

// ---- 7. `--out-dir` that lands on an input ----

#[test]
fn out_dir_onto_an_input_is_refused_before_anything_is_written() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("sessions");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let f = dir.join("s.jsonl");
    std::fs::write(&f, session(1, 6_000)).unwrap();
    crate::common::age(&f, 3600);
    let other = d.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let x = other.join("x.jsonl");
    std::fs::write(&x, session(2, 6_000)).unwrap();
    let link = d.path().join("link");
    std::os::unix::fs::symlink(&dir, &link).unwrap();
    let via_dotdot = dir.join("sub/..");
    let before = snapshot(d.path());
    let cases: Vec<Vec<&str>> = vec![
        vec!["redact", "--out-dir", s(&dir), s(&f)],
        vec!["redact", "--out-dir", s(&dir), s(&dir)],
        vec!["redact", "--out-dir", s(&link), s(&f)],
        vec!["redact", "--out-dir", s(&via_dotdot), s(&f)],
        // The colliding input comes second: the first is not written either.
        vec!["redact", "--out-dir", s(&dir), s(&x), s(&f)],
        vec!["drop-tool-noise", "--out-dir", s(&dir), s(&dir)],
    ];
    for args in cases {
        let o = run(crate::common::cchist().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--out-dir"), "{args:?}: {}", stderr(&o));
        assert!(snapshot(d.path()) == before, "{args:?} wrote something");
    }
}

#[test]
fn out_dir_onto_the_config_folder_with_all_is_refused() {
    let r = Sandbox::new();
    r.session("a");
    let before = snapshot(r.root());
    let projects = r.root().join("projects");
    for out in [projects.clone(), r.root().to_path_buf()] {
        let o = run(r.cc().args(["redact", "--all", "--out-dir", s(&out)]));
        if out == projects {
            assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
            assert!(stderr(&o).contains("--out-dir"), "{}", stderr(&o));
        }
        // Mirrored under root/, nothing may replace a file that was there.
        for (p, bytes) in &before {
            assert!(
                &std::fs::read(p).unwrap() == bytes,
                "{} replaced",
                p.display()
            );
        }
    }
}

// ---- 8. A companion folder that is a link ----

#[test]
fn a_linked_companion_folder_is_never_written_through() {
    let r = Sandbox::new();
    let f = r.session("s");
    let away = r.root().join("away");
    std::fs::create_dir_all(away.join("tool-results")).unwrap();
    let outside = away.join("tool-results/r.txt");
    let body = format!("aws_access_key_id = {SECRET}\n");
    std::fs::write(&outside, &body).unwrap();
    crate::common::age(&outside, 3600);
    std::os::unix::fs::symlink(&away, r.project().join("s")).unwrap();
    let out = r.root().join("out");
    for args in [
        vec!["redact", "-i", s(&f)],
        vec!["redact", "--all", "-i"],
        vec!["run", "-p", "builtin:scrub", "-i", "--backup=", s(&f)],
        vec!["redact", "--out-dir", s(&out), s(&f)],
    ] {
        let o = run(r.cc().args(&args));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), body, "{args:?}");
        assert!(
            stderr(&o).contains("symbolic link"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(
            std::fs::read_dir(away.join("tool-results"))
                .unwrap()
                .count()
                == 1,
            "{args:?} left a file in the link's target"
        );
    }
    assert!(
        !out.join("s/tool-results/r.txt").exists(),
        "copied through the link"
    );
    // The transcript itself was redacted.
    assert!(!std::fs::read_to_string(&f).unwrap().contains(SECRET));
}

// ---- 9. Binary companion files ----

#[test]
fn binary_companions_are_left_byte_identical_and_said_so() {
    let r = Sandbox::new();
    let f = r.session("s");
    let tr = r.project().join("s/tool-results");
    std::fs::create_dir_all(&tr).unwrap();
    let mut zip = b"PK\x03\x04\x14\x00\x00\x00\x08\x00".to_vec();
    zip.extend_from_slice(format!("key.txt aws_access_key_id = {SECRET}\n").as_bytes());
    zip.extend_from_slice(&[0, 0, 0xff, 0x10, b'\n', 0x80]);
    let mut latin = b"caf\xe9 cr\xe8me ".to_vec(); // Latin-1: not UTF-8, no NUL
    latin.extend_from_slice(format!("aws_access_key_id = {SECRET}\n").as_bytes());
    std::fs::write(tr.join("keys.zip"), &zip).unwrap();
    std::fs::write(tr.join("notes.bin"), &latin).unwrap();
    let text = tr.join("t.txt");
    std::fs::write(&text, format!("aws_access_key_id = {SECRET}\n")).unwrap();
    for f in ["keys.zip", "notes.bin", "t.txt"] {
        crate::common::age(&tr.join(f), 3600);
    }
    let out = r.root().join("out");
    // An out-dir copy is held to the fork's promise: binaries holding a secret are left out,
    // named, and the run is incomplete (exit 2).
    let o = run(r.cc().args(["redact", "--out-dir", s(&out), s(&f)]));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    for name in ["keys.zip", "notes.bin"] {
        assert!(!out.join("s/tool-results").join(name).exists(), "{name}");
        assert!(
            e.lines()
                .any(|l| l.contains(name) && l.contains("left out of the copy")),
            "{name}: {e}"
        );
    }
    let o = run(r.cc().args(["redact", "-i", s(&f)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        std::fs::read(tr.join("keys.zip")).unwrap() == zip,
        "{}",
        stringify!(zip)
    );
    assert!(
        std::fs::read(tr.join("notes.bin")).unwrap() == latin,
        "{}",
        stringify!(latin)
    );
    let e = stderr(&o);
    for name in ["keys.zip", "notes.bin"] {
        assert!(
            e.lines().any(|l| l.contains(name) && l.contains("binary")),
            "{name} not reported as skipped: {e}"
        );
    }
    // Text companions are still redacted.
    assert!(!std::fs::read_to_string(&text).unwrap().contains(SECRET));
    // A fork is clean: they hold a secret cchist cannot redact, so it leaves them out (and
    // says so); the session keeps them as they are.
    let o = run(r.cc().args(["redact", "--fork", s(&f)]));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    let forked: Vec<_> = snapshot(&r.project())
        .into_iter()
        .filter(|(p, _)| {
            p.file_name()
                .is_some_and(|n| n == "keys.zip" || n == "notes.bin")
                && !p.starts_with(r.project().join("s"))
        })
        .collect();
    assert!(forked.is_empty(), "{forked:?}");
    for name in ["keys.zip", "notes.bin"] {
        assert!(
            e.lines()
                .any(|l| l.contains(name) && l.contains("left out of the fork")),
            "{name}: {e}"
        );
    }
    assert!(std::fs::read(tr.join("keys.zip")).unwrap() == zip);
}

// ---- 14. Pseudonymization keys ----

#[test]
fn pseudonymize_refuses_a_short_or_blank_key_without_printing_it() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.jsonl");
    std::fs::write(&f, session(1, 6_000)).unwrap();
    let key_file = d.path().join("key");
    let cc = || {
        let mut c = crate::common::cchist();
        c.env("XDG_CONFIG_HOME", d.path())
            .env_remove("CCHIST_REDACT_KEY");
        c
    };
    for key in [
        "Kq7",
        "Kq7Kq7Kq7Kq7Kq7",
        " \t   \t      \t      ",
        "   Kq7    Kq7    Kq7   ",
    ] {
        let o = run(cc()
            .env("CCHIST_REDACT_KEY", key)
            .args(["redact", "--pseudonymize", s(&f)]));
        assert_eq!(o.status.code(), Some(2), "{key:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{key:?}");
        let e = stderr(&o);
        assert!(e.contains("16"), "{key:?}: {e}");
        assert!(!e.contains("Kq7"), "{key:?}: the key was printed: {e}");
        std::fs::write(&key_file, format!("{key}\n")).unwrap();
        let o = run(cc().args([
            "redact",
            "--pseudonymize",
            "--key-file",
            s(&key_file),
            s(&f),
        ]));
        assert_eq!(o.status.code(), Some(2), "key file {key:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("Kq7"), "{}", stderr(&o));
    }
    let o = run(cc()
        .env("CCHIST_REDACT_KEY", "a long enough key of 32 bytes!!")
        .args(["redact", "--pseudonymize", s(&f)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("[REDACTED:aws-access-key-id:"));
}

// ---- 17. CCHIST_LOCK_WAIT out of range ----

#[test]
fn an_odd_lock_wait_never_panics_a_writer() {
    let d = tempfile::tempdir().unwrap();
    for v in [
        "2e19",
        "18446744073709551616",
        "1e300",
        "inf",
        "NaN",
        "-1",
        "ten",
    ] {
        let f = d.path().join("s.jsonl");
        std::fs::write(&f, session(1, 6_000)).unwrap();
        crate::common::age(&f, 3600);
        let o = run(crate::common::cchist()
            .env("CCHIST_LOCK_WAIT", v)
            .env("XDG_CONFIG_HOME", d.path())
            .args(["redact", "-i", s(&f)]));
        let e = stderr(&o);
        assert!(!e.contains("panicked"), "{v}: {e}");
        match o.status.code() {
            // A huge wait is capped: the write goes ahead.
            Some(0) => assert!(
                !std::fs::read_to_string(&f).unwrap().contains(SECRET),
                "{v}"
            ),
            // Else refused, saying which variable.
            Some(2) => {
                assert!(e.contains("CCHIST_LOCK_WAIT"), "{v}: {e}");
                assert!(std::fs::read_to_string(&f).unwrap().contains(SECRET), "{v}");
            }
            c => panic!("{v}: exit {c:?}: {e}"),
        }
        if ["2e19", "18446744073709551616", "1e300", "inf"].contains(&v) {
            assert_eq!(o.status.code(), Some(0), "{v}: {e}");
        }
    }
}

// ---- 18. Terminal escapes from transcripts and file names ----

/// OSC 52 (a clipboard write), a bare CR that would overwrite the line, a CSI in its C1 form.
const ESCAPES: &str = "\u{1b}]52;c;cHduZWQ=\u{7} evil\rfake line \u{9b}31m red \u{1b}[2J";

/// True when `out` holds a control character a terminal acts on (other than newline and tab).
fn has_controls(out: &[u8]) -> bool {
    String::from_utf8_lossy(out)
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
}

fn hostile_session() -> Vec<u8> {
    let sid = "e5c0-0000-4000-8000-000000000001";
    let lines = [
        serde_json::json!({"type":"user","uuid":"u1","parentUuid":null,"sessionId":sid,
            "cwd": format!("/home/dev/{ESCAPES}"),
            "timestamp":"2026-01-01T00:00:00.000Z",
            "message":{"role":"user","content":format!("hello {ESCAPES}")}}),
        serde_json::json!({"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":sid,
            "timestamp":"2026-01-01T00:00:01.000Z",
            "message":{"id":"m1","role":"assistant","content":[
                {"type":"text","text":format!("answer {ESCAPES}")},
                {"type":"tool_use","id":"toolu_1","name":format!("Bash{ESCAPES}"),"input":{"command":format!("echo {ESCAPES}")}}]}}),
        serde_json::json!({"type":"user","uuid":"r1","parentUuid":"a1","sessionId":sid,
            "timestamp":"2026-01-01T00:00:02.000Z",
            "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
                "content":format!("aws_access_key_id = {SECRET} {ESCAPES}")}]}}),
    ];
    lines
        .iter()
        .map(|l| format!("{l}\n"))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn transcript_text_and_file_names_reach_the_terminal_without_controls() {
    let r = Sandbox::new();
    let f = r.project().join("e5c0-0000-4000-8000-000000000001.jsonl");
    std::fs::write(&f, hostile_session()).unwrap();
    crate::common::age(&f, 3600);
    let named = r.root().join(format!("x{ESCAPES}.jsonl"));
    std::fs::write(&named, hostile_session()).unwrap();
    crate::common::age(&named, 3600);
    let ops = r.root().join("ops.json");
    std::fs::write(
        &ops,
        serde_json::json!({"action":"modify_history","operations":[{"type":"insert","after":1,
            "content":{"type":"user","content":"x","uuid":format!("label{ESCAPES}")}}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        r.root().join("settings.json"),
        serde_json::json!({"hooks":{"SessionEnd":[{"hooks":[{"type":"command",
            "command":format!("cchist hook --pipeline '{ESCAPES}'"),"timeout":5}]}]}})
        .to_string(),
    )
    .unwrap();
    let missing = r.root().join(format!("missing{ESCAPES}.jsonl"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["history", "list", "-f", s(&f)],
        vec!["history", "list", "--steps", "-f", s(&f)],
        vec!["history", "show", "-f", s(&f), "-t", "1"],
        vec!["ls"],
        vec!["hook", "status"],
        vec!["apply", s(&ops), "-f", s(&named), "--dry-run"],
        vec!["apply", s(&ops), "-f", s(&named), "--fork"],
        vec!["redact", "--diff", s(&named)],
        vec!["redact", "--dry-run", s(&named)],
        vec!["redact", "--dry-run", s(&named), s(&f)],
        vec!["check", s(&named)],
        vec!["validate", s(&named)],
        vec!["redact", s(&named), s(&missing)],
    ];
    for args in cases {
        let o = run(r.cc().args(&args));
        assert!(
            !has_controls(&o.stdout),
            "{args:?}: stdout: {:?}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(
            !has_controls(&o.stderr),
            "{args:?}: stderr: {:?}",
            stderr(&o)
        );
    }
}

// ---- 19. A modification time in the future ----

#[test]
fn a_session_written_in_the_future_counts_as_live() {
    let d = tempfile::tempdir().unwrap();
    let f = d.path().join("s.jsonl");
    std::fs::write(&f, session(1, 6_000)).unwrap();
    crate::common::set_mtime(
        &f,
        std::time::SystemTime::now() + std::time::Duration::from_secs(3600),
    );
    let before = std::fs::read(&f).unwrap();
    let cc = || {
        let mut c = crate::common::cchist();
        c.env("XDG_CONFIG_HOME", d.path());
        c
    };
    for args in [
        vec!["redact", "-i", s(&f)],
        vec!["history", "delete", "-f", s(&f), "--turns", "1"],
    ] {
        let o = run(cc().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("live"), "{args:?}: {}", stderr(&o));
        assert!(
            std::fs::read(&f).unwrap() == before,
            "{args:?} changed the file"
        );
    }
    let o = run(cc().args(["redact", "-i", "--force", s(&f)]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!std::fs::read_to_string(&f).unwrap().contains(SECRET));
}

// ---- 20. `hook install` from a binary with another name ----

#[test]
fn hook_install_from_a_renamed_binary_keeps_one_entry_status_and_uninstall_see_it() {
    let r = Sandbox::new();
    let bin_dir = r.root().join("x");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let cc_bin = bin_dir.join("cc");
    std::os::unix::fs::symlink(crate::common::bin(), &cc_bin).unwrap();
    let settings = r.root().join("settings.json");
    let other = serde_json::json!({"type":"command","command":"/usr/bin/notify-send done"});
    std::fs::write(
        &settings,
        serde_json::json!({"hooks":{"SessionEnd":[{"hooks":[other]}]}}).to_string(),
    )
    .unwrap();
    let cc = || {
        let mut c = Command::new(&cc_bin);
        c.env("CLAUDE_CONFIG_DIR", r.root())
            .env("HOME", r.root())
            .env("XDG_CONFIG_HOME", r.root())
            .stdin(std::process::Stdio::null());
        c
    };
    let entries = |ev: &str| -> Vec<String> {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
        v["hooks"][ev]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
            .map(|h| h["command"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    for round in 0..3 {
        let o = run(cc().args(["hook", "install"]));
        assert!(o.status.success(), "{}", stderr(&o));
        let mut args = vec!["hook", "install"];
        if round == 2 {
            args.extend(["--pipeline", "builtin:share"]);
        }
        let o = run(cc().args(&args));
        assert!(o.status.success(), "{}", stderr(&o));
        let ours: Vec<String> = entries("SessionEnd")
            .into_iter()
            .filter(|c| c.contains("/x/cc"))
            .collect();
        assert_eq!(ours.len(), 1, "round {round}: {:?}", entries("SessionEnd"));
        assert_eq!(
            entries("PreCompact").len(),
            1,
            "round {round}: {:?}",
            entries("PreCompact")
        );
        assert!(entries("SessionEnd")
            .iter()
            .any(|c| c.contains("notify-send")));
    }
    let o = run(cc().args(["hook", "status"]));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.lines()
            .any(|l| l.contains("SessionEnd") && l.contains("/x/cc hook")),
        "{out}"
    );
    assert!(
        !out.contains("no cchist hook\n") || out.matches("no cchist hook").count() == 1,
        "{out}"
    );
    let o = run(cc().args(["hook", "uninstall"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        entries("SessionEnd"),
        vec!["/usr/bin/notify-send done".to_string()]
    );
    assert!(entries("PreCompact").is_empty());
}

// ---- 21. `-name` arguments: only positional ones are paths ----

#[test]
fn a_dashed_value_of_a_text_option_is_never_rewritten() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("-x")).unwrap();
    for (i, args) in [
        vec![
            "history", "insert", "-f", "s.jsonl", "--after", "1", "--text", "-x",
        ],
        vec![
            "history", "replace", "-f", "s.jsonl", "--turns", "1", "--with", "-x",
        ],
        vec![
            "history",
            "insert",
            "-f",
            "s.jsonl",
            "--after",
            "1",
            "--role",
            "user",
            "--content",
            "-x",
        ],
    ]
    .into_iter()
    .enumerate()
    {
        let f = work.path().join("s.jsonl");
        std::fs::write(&f, session(i, 6_000)).unwrap();
        crate::common::age(&f, 3600);
        let o = run(crate::common::cchist()
            .current_dir(work.path())
            .env("XDG_CONFIG_HOME", work.path())
            .args(&args));
        let after = std::fs::read_to_string(&f).unwrap();
        assert!(
            !after.contains("./-x"),
            "{args:?} wrote the value as a path"
        );
        if o.status.success() {
            assert!(after.contains("\"-x\""), "{args:?}: {}", stderr(&o));
        } else {
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        }
    }
    // Positional arguments, and path-valued options, still name the folder.
    let f = work.path().join("-x/s.jsonl");
    std::fs::write(&f, session(9, 6_000)).unwrap();
    for args in [
        vec!["validate", "-x"],
        vec!["history", "list", "-f", "-x/s.jsonl"],
    ] {
        let o = run(crate::common::cchist().current_dir(work.path()).args(&args));
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
}
