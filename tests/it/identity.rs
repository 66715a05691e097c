//! The identity pipeline is lossless: every byte of every input comes back, whatever the input.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use cchist::engine::pipeline::Pipeline;

use crate::common::{corpus, corpus_files, manifest, own_corpus_len};
use proptest::prelude::*;

fn cchist() -> Command {
    Command::from_std(crate::common::cchist())
}

fn identity() -> PathBuf {
    manifest().join("filters/identity.toml")
}

/// `cchist run -p identity.toml FILE`.
fn run_identity_on(f: &Path) -> std::process::Output {
    cchist()
        .args(["run", "--pipeline"])
        .arg(identity())
        .arg(f)
        .output()
        .unwrap()
}

#[test]
fn identity_reproduces_every_corpus_file_byte_for_byte() {
    let files = corpus_files("");
    assert!(files.len() >= own_corpus_len("").max(30), "{files:?}");
    for f in files {
        let out = run_identity_on(&f);
        assert!(out.status.success(), "{}: {:?}", f.display(), out);
        assert!(
            out.stdout == std::fs::read(&f).unwrap(),
            "{} changed under the identity pipeline",
            f.display()
        );
    }
}

/// Awkward inputs: CRLF, no final newline, invalid lines, NUL bytes, invalid UTF-8, a BOM,
/// empty lines, non-object JSON.
fn awkward_inputs() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("empty", b"".to_vec()),
        (
            "crlf",
            b"{\"type\":\"user\"}\r\n{\"type\":\"assistant\"}\r\n".to_vec(),
        ),
        ("no-final-newline", b"{\"a\":1}\n{\"b\":2}".to_vec()),
        ("truncated", b"{\"a\":1}\n{\"type\":\"us".to_vec()),
        (
            "invalid",
            b"{\"a\":1}\nnot json at all\n{\"b\":2}\n".to_vec(),
        ),
        ("nul", b"{\"a\":1}\n\0\0\0\0\n{\"b\":2}\n".to_vec()),
        ("bad-utf8", b"{\"a\":\"\xff\xfe\"}\n".to_vec()),
        ("bom", b"\xef\xbb\xbf{\"a\":1}\n".to_vec()),
        ("blank-lines", b"\n\n{\"a\":1}\n\n".to_vec()),
        ("non-objects", b"[1,2]\n\"s\"\n42\n".to_vec()),
        ("lone-cr", b"{\"a\":1}\r{\"b\":2}\n".to_vec()),
    ]
}

#[test]
fn identity_reproduces_awkward_inputs_via_file_and_stdin() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in awkward_inputs() {
        let f = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&f, &bytes).unwrap();
        let out = run_identity_on(&f);
        assert!(out.status.success(), "{name}: {out:?}");
        assert_eq!(out.stdout, bytes, "{name} via file");
        let out = cchist()
            .args(["run", "-p"])
            .arg(identity())
            .write_stdin(bytes.clone())
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        assert_eq!(out.stdout, bytes, "{name} via stdin");
    }
}

#[test]
fn on_invalid_error_names_file_and_line_and_writes_nothing() {
    let (dir, p) =
        crate::common::temp_file("strict.toml", "version = 1\non_invalid_json = \"error\"\n");
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, b"{\"a\":1}\n{\"a\":\n{\"b\":2}\n").unwrap();
    let out = cchist()
        .args(["run", "-p"])
        .arg(&p)
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "nothing may be written");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s.jsonl:2:"), "{err}");
    // the same through stdin
    let out = cchist()
        .args(["run", "-p"])
        .arg(&p)
        .write_stdin(std::fs::read(&f).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("<stdin>:2:"));
}

#[test]
fn dry_run_counts_invalid_lines_and_writes_nothing() {
    let (_dir, f) = crate::common::temp_file("s.jsonl", b"{\"a\":1}\nnope\n\0\0\n");
    let out = cchist()
        .args(["run", "--dry-run", "--json", "-p"])
        .arg(identity())
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["files"][0]["report"];
    assert_eq!(r["records"], 3);
    assert_eq!(r["invalid_lines"], 2);
    assert_eq!(r["changed"], false);
}

#[test]
fn in_place_identity_keeps_bytes_mode_mtime_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let proj = dir.path().join("projects/-home-me");
    std::fs::create_dir_all(&proj).unwrap();
    let src = corpus("generated/p01_quickstart.jsonl");
    let f = proj.join("s.jsonl");
    std::fs::copy(&src, &f).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    crate::common::set_mtime(&f, old);
    let before = std::fs::metadata(&f).unwrap();
    cchist()
        .args(["run", "--in-place", "-p"])
        .arg(identity())
        .arg(dir.path())
        .assert()
        .success();
    let after = std::fs::metadata(&f).unwrap();
    assert_eq!(std::fs::read(&f).unwrap(), std::fs::read(&src).unwrap());
    assert_eq!(after.permissions().mode() & 0o7777, 0o600);
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    assert_eq!(
        std::os::unix::fs::MetadataExt::ino(&after),
        std::os::unix::fs::MetadataExt::ino(&before),
        "an unchanged file is not rewritten"
    );
    let names: Vec<_> = std::fs::read_dir(&proj)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("s.jsonl")]);
}

#[test]
fn out_dir_mirrors_relative_paths() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in/proj/sub");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.jsonl"), b"{\"a\":1}\n").unwrap();
    std::fs::write(dir.path().join("in/proj/b.jsonl"), b"{\"b\":1}").unwrap();
    let out = dir.path().join("out");
    cchist()
        .args(["run", "-p"])
        .arg(identity())
        .arg("--out-dir")
        .arg(&out)
        .arg(dir.path().join("in"))
        .assert()
        .success();
    assert_eq!(
        std::fs::read(out.join("proj/sub/a.jsonl")).unwrap(),
        b"{\"a\":1}\n"
    );
    assert_eq!(
        std::fs::read(out.join("proj/b.jsonl")).unwrap(),
        b"{\"b\":1}"
    );
}

#[test]
fn clear_errors_exit_2() {
    // missing input file
    let out = cchist()
        .args(["run", "-p"])
        .arg(identity())
        .arg("/nonexistent/x.jsonl")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.jsonl"));
    // pipeline typo
    let (_dir, p) = crate::common::temp_file("typo.toml", "version = 1\ndescripton = \"x\"\n");
    let out = cchist().args(["run", "-p"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("typo.toml:2:") && err.contains("descripton"),
        "{err}"
    );
}

#[test]
fn unreadable_directory_is_a_clear_error() {
    // root reads everything: as root, cchist runs as `nobody` (setpriv) so the check applies.
    let as_nobody = unsafe { libc::geteuid() } == 0;
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if as_nobody && !setpriv {
        crate::common::skip_or_fail(
            "running as root and setpriv is missing; root reads a directory with mode 000",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // `nobody` must reach the pipeline and the locked folder's parent, not the folder.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let pipeline = dir.path().join("identity.toml");
    std::fs::copy(identity(), &pipeline).unwrap();
    std::fs::set_permissions(&pipeline, std::fs::Permissions::from_mode(0o644)).unwrap();
    let d = dir.path().join("locked");
    std::fs::create_dir(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o000)).unwrap();
    let mut cmd = if as_nobody {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(crate::common::bin());
        c
    } else {
        std::process::Command::new(crate::common::bin())
    };
    let out = cmd
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .args(["run", "-p"])
        .arg(&pipeline)
        .arg(&d)
        .output()
        .unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn run_identity(input: &[u8]) -> Vec<u8> {
    crate::common::run_in_memory(&Pipeline::identity(), input, false)
}

fn run_identity_stream(input: &[u8]) -> Vec<u8> {
    crate::common::run_in_memory(&Pipeline::identity(), input, true)
}

fn line_soup() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"{\"type\":\"user\",\"uuid\":\"u\"}".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\0".to_vec()),
        Just(b"{\"a\":".to_vec()),
        Just(b"\xff".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..20),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn identity_is_exact_on_line_soup(input in line_soup()) {
        prop_assert_eq!(run_identity(&input), input.clone());
        prop_assert_eq!(run_identity_stream(&input), input);
    }
}
