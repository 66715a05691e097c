//! `--diff`: the per-record preview of every transforming command. Snapshots of the text and
//! JSON previews of each shipped pipeline (`filters/*.toml`) on a generated corpus session
//! (its planted secrets are fake), checked against what the same run really writes; the
//! preview writes nothing and never shows a secret.
//!
//! `CCHIST_UPDATE_SNAPSHOTS=1 cargo test --test it diff` rewrites `tests/snapshots/diff/`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{cchist, corpus, manifest, ok};

const SESSION: &str = "generated/p01_quickstart.jsonl";
/// The fake secrets planted in the session (tests/corpus/scenarios): never in a preview.
const PLANTED: [&str; 2] = ["ghp_0123456789abcdefghij", "sk-ant-api03-AbCdEf"];

fn pipelines() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(manifest().join("filters"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    v.sort();
    assert!(v.len() >= 5, "{v:?}");
    v
}

/// Compare `got` with the snapshot `name` (or write it under CCHIST_UPDATE_SNAPSHOTS).
fn snapshot(name: &str, got: &str) {
    let path = manifest().join("tests/snapshots/diff").join(name);
    if std::env::var_os("CCHIST_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (CCHIST_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    assert_eq!(got, want, "snapshot {name} differs");
}

fn no_secret(s: &str) {
    for p in PLANTED {
        assert!(!s.contains(p), "a planted secret is in the preview");
    }
}

/// Run `cchist ARGS FILE` (FILE a copy of the session); stdout with the path made stable.
fn preview(args: &[&str], file: &Path) -> String {
    let out = ok(cchist().args(args).arg(file));
    String::from_utf8(out.stdout)
        .unwrap()
        .replace(&file.display().to_string(), "<session>")
}

fn copy_session(dir: &Path) -> PathBuf {
    let f = dir.join("session.jsonl");
    std::fs::copy(corpus(SESSION), &f).unwrap();
    f
}

#[test]
fn every_shipped_pipeline_previews_as_its_snapshot_and_matches_the_real_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_session(dir.path());
    let input = std::fs::read(&file).unwrap();
    let in_lines: Vec<&[u8]> = input.split_inclusive(|&b| b == b'\n').collect();
    for p in pipelines() {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let pipe = p.to_str().unwrap();
        let text = preview(&["run", "-p", pipe, "--diff"], &file);
        let json = preview(&["run", "-p", pipe, "--diff=json"], &file);
        no_secret(&text);
        no_secret(&json);
        snapshot(&format!("{name}.txt"), &text);
        snapshot(&format!("{name}.json"), &json);
        // Nothing written.
        assert_eq!(std::fs::read(&file).unwrap(), input, "{name}");
        // The counts are the real run's.
        let real = ok(cchist().args(["run", "-p", pipe]).arg(&file)).stdout;
        let out_lines: Vec<&[u8]> = real.split_inclusive(|&b| b == b'\n').collect();
        let doc: Value = serde_json::from_str(&json).unwrap();
        let f = &doc["files"][0];
        let c = &f["counts"];
        let n = |k: &str| c[k].as_u64().unwrap() as usize;
        assert_eq!(f["records_out"].as_u64().unwrap() as usize, out_lines.len());
        assert_eq!(n("dropped") + n("changed") + n("unchanged"), in_lines.len());
        assert_eq!(n("added") + n("changed") + n("unchanged"), out_lines.len());
        let same = out_lines.iter().filter(|l| in_lines.contains(l)).count();
        assert_eq!(n("unchanged"), same, "{name}");
        // Every changed or dropped line is named, and no other.
        let listed: Vec<usize> = f["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["line"].as_u64().map(|l| l as usize))
            .collect();
        let expect: Vec<usize> = (1..=in_lines.len())
            .filter(|&l| !out_lines.contains(&in_lines[l - 1]))
            .collect();
        assert_eq!(listed, expect, "{name}");
    }
}

#[test]
fn redaction_is_named_by_rule_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_session(dir.path());
    let text = preview(&["redact", "--diff", "--in-place"], &file);
    no_secret(&text);
    assert!(
        text.contains("changed by redact; redacted 2 secrets (github-pat)"),
        "{text}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(corpus(SESSION)).unwrap()
    );
}

#[test]
fn summaries_and_history_edits_preview_without_writing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::copy(corpus("generated/p05_long.jsonl"), &file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let json = preview(
        &[
            "summarize-range",
            "--keep-last-steps",
            "3",
            "--diff=json",
            "--in-place",
            "--force",
        ],
        &file,
    );
    let doc: Value = serde_json::from_str(&json).unwrap();
    let recs = doc["files"][0]["records"].as_array().unwrap();
    let added: Vec<&Value> = recs.iter().filter(|r| r["change"] == "added").collect();
    assert_eq!(added.len(), 1, "{json}");
    assert_eq!(added[0]["stages"][0], "summarize-range");
    let dropped = recs.iter().filter(|r| r["change"] == "dropped").count() as u64;
    assert_eq!(added[0]["replaces"].as_u64(), Some(dropped));
    assert_eq!(std::fs::read(&file).unwrap(), before);

    for args in [
        &["history", "delete", "--turns", "2", "--diff"][..],
        &[
            "history", "replace", "--turns", "3", "--with", "X", "--diff",
        ][..],
    ] {
        let out = ok(cchist().args(args).arg("--force").arg("--file").arg(&file));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("dropped by edit"), "{args:?}: {text}");
        assert_eq!(std::fs::read(&file).unwrap(), before, "{args:?}");
    }
}

/// A preview writes nothing, not even the clean-up of an interrupted run's temp file that a
/// real in-place run does first (on a named file and with `--all`).
#[test]
fn in_place_preview_leaves_stale_temp_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects/p");
    std::fs::create_dir_all(&projects).unwrap();
    let file = projects.join("session.jsonl");
    std::fs::copy(corpus(SESSION), &file).unwrap();
    let dead = {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let id = c.id();
        c.wait().unwrap();
        id
    };
    let stale = projects.join(format!(".session.jsonl.cchist-tmp.{dead}.0"));
    std::fs::write(&stale, b"x").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(120);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let text = preview(&["redact", "--diff", "--in-place", "--force"], &file);
    assert!(text.contains("redacted"), "{text}");
    assert!(stale.exists(), "the preview removed a temp file");
    let out = ok(cchist().env("CLAUDE_CONFIG_DIR", dir.path()).args([
        "redact",
        "--all",
        "--in-place",
        "--force",
        "--diff",
    ]));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("redacted"),
        "{out:?}"
    );
    assert!(stale.exists(), "the --all preview removed a temp file");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        std::fs::read(corpus(SESSION)).unwrap()
    );
}

/// A secret used as a record's uuid or type (what a pasted token in the wrong field looks
/// like): redaction masks it, and the preview, which names records by uuid and type, must not
/// print it either (text or JSON; changed or dropped records).
#[test]
fn a_secret_in_a_uuid_or_type_is_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let (s1, s2) = (
        "ghp_0123456789abcdefghijABCDEFGHIJ012345",
        "ghp_9876543210abcdefghijABCDEFGHIJ012345",
    );
    let lines = [
        format!(
            r#"{{"type":"user","uuid":"{s1}","parentUuid":null,"sessionId":"s","message":{{"role":"user","content":"token {s2}"}}}}"#
        ),
        format!(
            r#"{{"type":"{s2}","uuid":"u2","parentUuid":"{s1}","sessionId":"s","message":{{"role":"user","content":"a {s2}"}}}}"#
        ),
        format!(
            r#"{{"type":"progress","uuid":"{s2}","parentUuid":"u2","sessionId":"s","data":{{"type":"hook_progress"}}}}"#
        ),
    ];
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    for args in [
        &["redact", "--diff"][..],
        &["redact", "--diff=json"][..],
        &["drop-tool-noise", "--diff"][..],
        &["drop-tool-noise", "--diff=json"][..],
    ] {
        let out = ok(cchist().args(args).arg(&file));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("changed") || text.contains("dropped"),
            "{args:?}: {text}"
        );
        assert!(
            !text.contains("ghp_"),
            "{args:?}: a secret is in the preview: {text}"
        );
    }
}

/// A secret used as an object key, short enough to pass for a field name (an AWS key id):
/// redaction renames the key, and the preview's field paths must not name the old one.
#[test]
fn a_secret_used_as_a_key_is_not_named_in_field_paths() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let key = "AKIAZQWERTYUIOPASDFG";
    let line = format!(
        r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","message":{{"role":"user","content":"hi"}},"env":{{"{key}":"x"}}}}"#
    );
    std::fs::write(&file, line + "\n").unwrap();
    for args in [&["redact", "--diff"][..], &["redact", "--diff=json"][..]] {
        let out = ok(cchist().args(args).arg(&file));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("aws-access-key-id"), "{args:?}: {text}");
        assert!(
            !text.contains(key),
            "{args:?}: the secret key is in the preview: {text}"
        );
    }
}
