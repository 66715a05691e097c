//! What `check` says of a session's companion files whose *names* (or the names of the
//! folders they are in) hold a secret, of binary companions holding one, and of tool results
//! counted once; `undo -s` renaming such companions back (issue #25's round-3 names pass).
//! No output ever prints the secret.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::cchist;

const ID: &str = "5b1f0000-0000-4000-8000-0000000000c5";

fn token() -> String {
    // Assembled at run time so the source itself holds no token-shaped string.
    format!("ghp_{}", "Lk9Jh8Gf7Ds6Aq5Wz4Xs3Ed2Rf1Tg0Yh7Uj6")
}

/// A value only a context rule finds (`DB_PASSWORD="…"`).
fn password() -> String {
    format!("Hx7kq2Vt{}", "9Lm4Pz")
}

struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    /// A session with a plain transcript and an empty `tool-results/`.
    fn new(transcript_text: &str) -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = root.join("projects/-home-dev-app");
        std::fs::create_dir_all(project.join(ID).join("tool-results")).unwrap();
        let main = crate::common::message_line("user", "u1", None, ID, transcript_text)
            + &crate::common::message_line("assistant", "a1", Some("u1"), ID, "done");
        std::fs::write(project.join(format!("{ID}.jsonl")), main).unwrap();
        Sandbox {
            _dir: dir,
            root,
            project,
        }
    }

    fn results(&self) -> PathBuf {
        self.project.join(ID).join("tool-results")
    }

    fn run(&self, args: &[&str]) -> Output {
        cchist()
            .args(args)
            .env("CLAUDE_CONFIG_DIR", &self.root)
            .output()
            .unwrap()
    }

    /// Run `args`; assert it exits `code` and prints none of `secrets`.
    fn expect(&self, args: &[&str], code: i32, secrets: &[String]) -> Output {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&out.stderr)
        );
        for s in secrets {
            for (name, b) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                assert!(
                    !text(b).contains(s.as_str()),
                    "{args:?}: a secret in {name}: {}",
                    text(b)
                );
            }
        }
        out
    }

    /// The check findings, JSON (`file`, finding) pairs, after asserting text, JSON and SARIF
    /// all exit 1 without printing `secrets`, and SARIF has as many results as JSON findings.
    fn check_all(&self, secrets: &[String]) -> Vec<(String, serde_json::Value)> {
        let t = self.expect(&["check", "-s", "5b1f"], 1, secrets);
        let j = self.expect(&["check", "--json", "-s", "5b1f"], 1, secrets);
        let s = self.expect(&["check", "--format", "sarif", "-s", "5b1f"], 1, secrets);
        let doc: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
        let sarif: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
        let mut v = Vec::new();
        for f in doc["files"].as_array().unwrap() {
            for x in f["findings"].as_array().unwrap() {
                v.push((f["file"].as_str().unwrap().to_string(), x.clone()));
            }
        }
        let results = sarif["runs"][0]["results"].as_array().unwrap();
        assert_eq!(results.len(), v.len(), "{sarif}");
        let lines = text(&t.stdout).lines().count();
        assert_eq!(lines, v.len(), "{}", text(&t.stdout));
        v
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every file and folder under `dir`, links not followed, sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    crate::common::entries_under(dir)
}

/// The paths under the config folder that hold `secret`, backups and their records aside.
fn named_after(root: &Path, secret: &str) -> Vec<PathBuf> {
    walk(root)
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.contains(secret) && !n.contains(".cchist-bak.")
        })
        .collect()
}

#[test]
fn check_reports_a_companion_whose_file_name_holds_a_token() {
    let s = Sandbox::new("run the tests");
    let t = token();
    std::fs::write(s.results().join(format!("{t}.txt")), "all tests passed\n").unwrap();
    let found = s.check_all(&[t]);
    assert_eq!(found.len(), 1, "{found:?}");
    let (file, f) = &found[0];
    assert!(
        file.ends_with("tool-results/[REDACTED:github-pat].txt"),
        "{file}"
    );
    assert_eq!(f["rule"], "github-pat");
    assert!(f["message"].as_str().unwrap().contains("name"), "{f}");
}

#[test]
fn check_reports_a_folder_named_after_a_token_and_redact_needs_a_backup_to_rename_it() {
    let s = Sandbox::new("run the tests");
    let t = token();
    let folder = s.results().join(&t);
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("out.txt"), "all tests passed\n").unwrap();
    let found = s.check_all(std::slice::from_ref(&t));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]
            .0
            .ends_with("tool-results/[REDACTED:github-pat]/out.txt"),
        "{found:?}"
    );
    assert_eq!(found[0].1["rule"], "github-pat");

    // Previews say where it would go.
    for args in [
        &["redact", "--dry-run", "-s", "5b1f"][..],
        &["redact", "-i", "--backup", "--diff", "-s", "5b1f"][..],
    ] {
        let out = s.expect(args, 0, std::slice::from_ref(&t));
        let all = text(&out.stdout) + &text(&out.stderr);
        assert!(
            all.contains("REDACTED-github-pat/out.txt"),
            "{args:?}: {all}"
        );
    }
    // In place without a backup undo could follow: refused, saying what to do.
    let out = s.expect(
        &["redact", "-i", "--force", "-s", "5b1f"],
        2,
        std::slice::from_ref(&t),
    );
    assert!(
        text(&out.stderr).contains("--backup"),
        "{}",
        text(&out.stderr)
    );
    assert!(folder.join("out.txt").is_file(), "left as it was");

    // With one, the folder takes the placeholder; undo gives it its name back.
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        std::slice::from_ref(&t),
    );
    assert_eq!(named_after(&s.root, &t), Vec::<PathBuf>::new());
    assert_eq!(
        std::fs::read(s.results().join("REDACTED-github-pat/out.txt")).unwrap(),
        b"all tests passed\n"
    );
    s.expect(
        &["undo", "--all", "--since", "1h", "--force"],
        0,
        std::slice::from_ref(&t),
    );
    assert_eq!(
        std::fs::read(folder.join("out.txt")).unwrap(),
        b"all tests passed\n"
    );
    assert!(!s.results().join("REDACTED-github-pat").exists());
}

#[test]
fn a_name_holding_a_secret_only_a_context_rule_found_is_a_finding_and_renamed() {
    let pw = password();
    let s = Sandbox::new(&format!("export DB_PASSWORD=\"{pw}\""));
    let named = s.results().join(format!("{pw}.txt"));
    std::fs::write(&named, "connected\n").unwrap();
    let found = s.check_all(std::slice::from_ref(&pw));
    let on_name: Vec<_> = found
        .iter()
        .filter(|(f, _)| f.contains("tool-results/"))
        .collect();
    assert_eq!(on_name.len(), 1, "{found:?}");
    assert_eq!(on_name[0].1["rule"], "env-secret-assignment", "{found:?}");

    // Previews and a run that cannot rename name it redacted too.
    let before = walk(&s.root);
    for args in [
        &["redact", "--dry-run", "-s", "5b1f"][..],
        &["redact", "--diff", "-s", "5b1f"][..],
        &["redact", "--diff=json", "-s", "5b1f"][..],
    ] {
        let out = s.run(args);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?}");
        for b in [&out.stdout, &out.stderr] {
            assert!(!text(b).contains(&pw), "{args:?}: {}", text(b));
        }
    }
    assert_eq!(walk(&s.root), before, "previews wrote nothing");
    {
        // Without a backup (in a sandbox of its own: that run redacts the transcript, after
        // which nothing but the name holds the value).
        let s = Sandbox::new(&format!("export DB_PASSWORD=\"{pw}\""));
        let named = s.results().join(format!("{pw}.txt"));
        std::fs::write(&named, "connected\n").unwrap();
        let out = s.expect(
            &["redact", "-i", "--force", "-s", "5b1f"],
            2,
            std::slice::from_ref(&pw),
        );
        assert!(
            text(&out.stderr).contains("--backup"),
            "{}",
            text(&out.stderr)
        );
        assert!(named.is_file());
    }

    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        std::slice::from_ref(&pw),
    );
    assert_eq!(named_after(&s.root, &pw), Vec::<PathBuf>::new());
    assert_eq!(
        std::fs::read(s.results().join("REDACTED-env-secret-assignment.txt")).unwrap(),
        b"connected\n"
    );
    s.expect(
        &["undo", "--all", "--since", "1h", "--force"],
        0,
        std::slice::from_ref(&pw),
    );
    assert_eq!(std::fs::read(&named).unwrap(), b"connected\n");
}

#[test]
fn check_reports_a_token_in_a_stored_zip_and_says_binary_files_are_not_rewritten() {
    let s = Sandbox::new("zip the logs");
    let t = token();
    // A stored (uncompressed) zip entry: the token is there byte for byte, NULs around it.
    let mut zip = b"PK\x03\x04\x14\x00\x00\x00\x00\x00".to_vec();
    zip.extend_from_slice(&[0u8; 16]);
    zip.extend_from_slice(format!("log.txt key {t} end\n").as_bytes());
    zip.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00");
    let path = s.results().join("logs.zip");
    std::fs::write(&path, &zip).unwrap();
    let found = s.check_all(std::slice::from_ref(&t));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].0.ends_with("tool-results/logs.zip"), "{found:?}");
    assert_eq!(found[0].1["rule"], "github-pat");
    let msg = found[0].1["message"].as_str().unwrap();
    assert!(
        msg.contains("binary") && msg.contains("not rewritten"),
        "{msg}"
    );
    // Redact leaves it byte for byte.
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        std::slice::from_ref(&t),
    );
    assert_eq!(std::fs::read(&path).unwrap(), zip);
}

#[test]
fn check_counts_a_token_in_a_tool_result_once() {
    let s = Sandbox::new("run the tests");
    let t = token();
    std::fs::write(
        s.results().join("toolu_01.txt"),
        format!("token {t} here\n"),
    )
    .unwrap();
    let found = s.check_all(std::slice::from_ref(&t));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1["rule"], "github-pat");
    assert!(found[0].1.get("kind").is_none(), "{found:?}");
}

#[test]
fn undo_of_a_session_renames_its_companions_back() {
    let t = token();
    let s = Sandbox::new(&format!("saved to tool-results/{t}.txt"));
    let named = s.results().join(format!("{t}.txt"));
    std::fs::write(&named, "all tests passed\n").unwrap();
    s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        std::slice::from_ref(&t),
    );
    assert!(s.results().join("REDACTED-github-pat.txt").is_file());
    let out = s.expect(
        &["undo", "-s", "5b1f", "--force"],
        0,
        std::slice::from_ref(&t),
    );
    assert!(
        text(&out.stderr).contains("renamed back"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(&named).unwrap(), b"all tests passed\n");
    assert!(!s.results().join("REDACTED-github-pat.txt").exists());
    let main = std::fs::read_to_string(s.project.join(format!("{ID}.jsonl"))).unwrap();
    assert!(main.contains(&t), "the transcript restored too");
}

#[test]
fn an_out_dir_copy_and_a_fork_never_carry_a_folder_named_after_a_token() {
    let s = Sandbox::new("run the tests");
    let t = token();
    let folder = s.results().join(&t);
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("out.txt"), "all tests passed\n").unwrap();
    let share = s._dir.path().join("share");
    let main = s.project.join(format!("{ID}.jsonl"));
    s.expect(
        &[
            "redact",
            "--out-dir",
            share.to_str().unwrap(),
            main.to_str().unwrap(),
        ],
        0,
        std::slice::from_ref(&t),
    );
    assert_eq!(named_after(&share, &t), Vec::<PathBuf>::new());
    let copied: Vec<PathBuf> = walk(&share)
        .into_iter()
        .filter(|p| p.ends_with("REDACTED-github-pat/out.txt"))
        .collect();
    assert_eq!(copied.len(), 1, "{:?}", walk(&share));

    let before = walk(&s.project).len();
    s.expect(
        &["redact", "--fork", "-s", "5b1f"],
        0,
        std::slice::from_ref(&t),
    );
    let forked: Vec<PathBuf> = walk(&s.project)
        .into_iter()
        .filter(|p| p.ends_with("tool-results/REDACTED-github-pat/out.txt"))
        .collect();
    assert_eq!(forked.len(), 1, "{:?}", walk(&s.project));
    assert!(walk(&s.project).len() > before);
    assert_eq!(
        named_after(&s.project, &t),
        vec![folder],
        "only the original's"
    );
}

/// A stored zip entry `name` holding `body`, then the end record: what `zipfile` writes with
/// `ZIP_STORED` (the entry's data right after its name, no separator).
fn stored_zip(name: &str, body: &[u8]) -> Vec<u8> {
    let mut z = b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
    z.extend_from_slice(&[0x12, 0x34, 0x56, 0x78]); // crc-32 (not checked here)
    let n = (body.len() as u32).to_le_bytes();
    z.extend_from_slice(&n);
    z.extend_from_slice(&n);
    z.extend_from_slice(&(name.len() as u16).to_le_bytes());
    z.extend_from_slice(&[0, 0]);
    z.extend_from_slice(name.as_bytes());
    z.extend_from_slice(body);
    z.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00\x01\x00\x01\x00");
    z.extend_from_slice(&[0u8; 10]);
    z
}

#[test]
fn check_reports_a_token_that_starts_a_stored_zip_entry() {
    let s = Sandbox::new("zip the logs");
    let t = token();
    let zip = stored_zip("token.txt", t.as_bytes());
    let path = s.results().join("export.zip");
    std::fs::write(&path, &zip).unwrap();
    let found = s.check_all(std::slice::from_ref(&t));
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1["rule"], "github-pat");
    assert!(found[0].1["message"].as_str().unwrap().contains("binary"));
    let out = s.expect(
        &["redact", "-i", "--backup", "--force", "-s", "5b1f"],
        0,
        std::slice::from_ref(&t),
    );
    assert!(
        text(&out.stderr).contains("holds 1 secret"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(std::fs::read(&path).unwrap(), zip, "left byte for byte");
}
