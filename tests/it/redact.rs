//! `cchist redact`, `cchist check` and `cchist rules` run as a user would, on the generated
//! p01_quickstart session, whose planted secrets (read from its cc-oracle scenario) must not
//! survive redaction nor appear in any output or report.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;
use serde_json::Value;

use crate::common::{corpus, scenario};

fn p01() -> PathBuf {
    corpus("generated/p01_quickstart.jsonl")
}

/// The secrets the p01 scenario plants: the values of its .env and the Anthropic key in a
/// prompt.
fn planted() -> Vec<String> {
    let text = std::fs::read_to_string(scenario("p01_quickstart")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut out: Vec<String> = v["files"][".env"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(_, v)| v.to_string()))
        .collect();
    for p in v["prompts"].as_array().unwrap() {
        for w in p["prompt"].as_str().unwrap().split_whitespace() {
            if w.starts_with("sk-ant-") {
                out.push(w.to_string());
            }
        }
    }
    assert_eq!(out.len(), 4, "{out:?}");
    // The scenario's AWS pair is AWS's documented example (`…EXAMPLE`, `…EXAMPLEKEY`): a
    // look-alike that redaction keeps byte for byte (issue #14), not a planted secret.
    out.retain(|v| !v.ends_with("EXAMPLE") && !v.ends_with("EXAMPLEKEY"));
    assert_eq!(out.len(), 2, "{out:?}");
    out
}

fn cchist() -> Command {
    let mut c = crate::common::cchist();
    c.env_remove("CCHIST_REDACT_KEY");
    Command::from_std(c)
}

#[track_caller]
fn assert_no_secret(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for s in planted() {
        assert!(
            !text.contains(&s),
            "{what} holds a planted secret ({}…)",
            &s[..4]
        );
    }
}

fn run(args: &[&str]) -> Output {
    cchist().args(args).output().unwrap()
}

#[test]
fn the_corpus_file_really_holds_the_secrets() {
    let data = std::fs::read_to_string(p01()).unwrap();
    for s in planted() {
        assert!(data.contains(&s), "{}… not in p01", &s[..4]);
    }
}

#[test]
fn redact_removes_every_planted_secret_and_keeps_every_line() {
    let out = run(&["redact", p01().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_secret("stdout", &out.stdout);
    assert_no_secret("stderr", &out.stderr);
    let input = std::fs::read(p01()).unwrap();
    let (a, b): (Vec<&[u8]>, Vec<&[u8]>) = (
        input.split(|&c| c == b'\n').collect(),
        out.stdout.split(|&c| c == b'\n').collect(),
    );
    assert_eq!(a.len(), b.len());
    let mut changed = 0;
    for (x, y) in a.iter().zip(&b) {
        if x != y {
            changed += 1;
            let v: Value = serde_json::from_slice(y).expect("redacted line is JSON");
            assert!(v.to_string().contains("[REDACTED:"));
        }
    }
    assert!(changed >= 4, "{changed}");
}

#[test]
fn check_reports_without_values_and_exits_1() {
    let out = run(&["check", p01().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_no_secret("check stdout", &out.stdout);
    assert_no_secret("check stderr", &out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    for rule in ["github-pat", "anthropic-api-key"] {
        assert!(text.contains(rule), "{rule} missing from:\n{text}");
    }
    assert!(text.contains("$.toolUseResult.file.content"), "{text}");

    let out = run(&["check", "--format", "json", p01().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert_no_secret("check --format json", &out.stdout);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &v["files"][0]["findings"];
    assert!(f.as_array().unwrap().len() >= 4);
    assert!(f[0]["fingerprint"].as_str().unwrap().len() == 8);
    assert!(f[0]["path"].as_str().unwrap().starts_with("$."));
    assert_eq!(v["summary"]["by_rule"]["anthropic-api-key"], 4);
}

#[test]
fn dry_run_and_json_reports_hold_no_secret() {
    let out = run(&["redact", "--dry-run", p01().to_str().unwrap()]);
    assert!(out.status.success());
    assert_no_secret("dry-run stdout", &out.stdout);
    assert_no_secret("dry-run stderr", &out.stderr);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("redactions: 6"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = run(&["redact", "--dry-run", "--json", p01().to_str().unwrap()]);
    assert!(out.status.success());
    assert_no_secret("dry-run --json", &out.stdout);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["files"][0]["report"]["counters"]["redactions"], 6);
}

#[test]
fn check_exits_0_on_a_clean_file_and_2_on_errors() {
    let (dir, clean) = crate::common::temp_file(
        "clean.jsonl",
        "{\"type\":\"user\",\"message\":{\"content\":\"hello\"}}\n",
    );
    let out = run(&["check", clean.to_str().unwrap()]);
    crate::common::assert_code(&out, 0);
    let out = run(&["check", dir.path().join("missing.jsonl").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&[
        "check",
        "--disable",
        "no-such-rule",
        clean.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-rule"));
}

#[test]
fn check_pipeline_validates_a_pipeline_file_alone() {
    let scrub = Path::new(env!("CARGO_MANIFEST_DIR")).join("filters/scrub.toml");
    let out = run(&["check", "--pipeline", scrub.to_str().unwrap()]);
    crate::common::assert_code(&out, 0);
    let (_dir, bad) = crate::common::temp_file(
        "bad.toml",
        "version = 1\n\n[[stage]]\ntype = \"redact\"\nrulez = {}\n",
    );
    let out = run(&["check", "--pipeline", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:5") && err.contains("rulez"), "{err}");
}

#[test]
fn check_uses_the_pipeline_files_redact_options() {
    let (_dir, p) = crate::common::temp_file("p.toml", "version = 1\n[[stage]]\ntype = \"redact\"\nrules = { disable = [\"anthropic-api-key\"] }\n");
    let out = run(&[
        "check",
        "--pipeline",
        p.to_str().unwrap(),
        p01().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("anthropic-api-key") && text.contains("github-pat"),
        "{text}"
    );
}

#[test]
fn in_place_redacts_the_session_and_its_tool_results() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.jsonl");
    std::fs::copy(p01(), &session).unwrap();
    let tr = dir.path().join("s/tool-results");
    std::fs::create_dir_all(&tr).unwrap();
    let key = planted()[0].clone();
    std::fs::write(tr.join("b1.txt"), format!("line one\nGITHUB_TOKEN={key}\n")).unwrap();
    std::fs::write(tr.join("b2.txt"), "nothing here\n").unwrap();

    let out = run(&["check", session.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("b1.txt:2: github-pat"));

    // --force: the copy was just written, so it looks live.
    let out = run(&["redact", "--in-place", "--force", session.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_secret("stderr", &out.stderr);
    assert_no_secret("session", &std::fs::read(&session).unwrap());
    assert_eq!(
        std::fs::read_to_string(tr.join("b1.txt")).unwrap(),
        "line one\nGITHUB_TOKEN=[REDACTED:github-pat]\n"
    );
    assert_eq!(
        std::fs::read_to_string(tr.join("b2.txt")).unwrap(),
        "nothing here\n"
    );
    // Nothing left to find; a second run changes nothing.
    let out = run(&["check", session.to_str().unwrap()]);
    crate::common::assert_code(&out, 0);
}

#[test]
fn pseudonyms_match_across_files_and_need_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    let key = planted()[0].clone();
    std::fs::write(
        &a,
        format!("{{\"type\":\"user\",\"message\":{{\"content\":\"use {key}\"}}}}\n"),
    )
    .unwrap();
    std::fs::write(&b, format!("{{\"x\":[\"token={key}\"]}}\n")).unwrap();
    let out = cchist()
        .env("CCHIST_REDACT_KEY", "a test key of 16+ bytes")
        .args([
            "redact",
            "--pseudonymize",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let tags: Vec<&str> = text
        .match_indices("[REDACTED:github-pat:")
        .map(|(i, _)| &text[i..i + 30])
        .collect();
    assert_eq!(tags.len(), 2, "{text}");
    assert_eq!(tags[0], tags[1]);
    let out = run(&["redact", "--pseudonymize", a.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("CCHIST_REDACT_KEY"));
}

#[test]
fn a_thinking_block_holding_a_secret_is_removed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("t.jsonl");
    let key = planted()[0].clone();
    let rec = serde_json::json!({"type":"assistant","uuid":"a1","parentUuid":null,"message":{"id":"m1","role":"assistant","content":[
        {"type":"thinking","thinking":format!("the user's token is {key}"),"signature":"c2lnbmF0dXJl"},
        {"type":"text","text":"Done."}]}});
    std::fs::write(&f, format!("{rec}\n")).unwrap();
    let out = run(&["redact", f.to_str().unwrap()]);
    assert!(out.status.success());
    assert_no_secret("stdout", &out.stdout);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["message"]["content"],
        serde_json::json!([{"type":"text","text":"Done."}])
    );
    assert_eq!(v["uuid"], "a1");
}

#[test]
fn stdin_works_and_unchanged_lines_stay_byte_identical() {
    let input = "{\"a\": 1.50 ,\"b\":\"caf\\u00e9\"}\r\nnot json\n";
    let out = cchist().arg("redact").write_stdin(input).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), input);
}

#[test]
fn rules_lists_at_least_forty_rules_and_the_keywords() {
    let out = run(&["rules"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().count() >= 40);
    assert!(text.contains("aws-access-key-id") && text.contains("generic-high-entropy"));
    let out = run(&["rules", "--format", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["description"].as_str().unwrap().len() > 20));
    let out = run(&["rules", "--keywords"]);
    let kw = String::from_utf8(out.stdout).unwrap();
    assert!(kw.lines().any(|l| l == "ghp_") && !kw.contains('"'));
    assert!(run(&["redact", "--list-rules"]).status.success());
}

#[test]
fn shipped_scrub_pipeline_runs_and_removes_the_secrets() {
    let scrub = Path::new(env!("CARGO_MANIFEST_DIR")).join("filters/scrub.toml");
    let out = run(&[
        "run",
        "-p",
        scrub.to_str().unwrap(),
        p01().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_secret("scrub output", &out.stdout);
    let out = run(&["run", "-p", "scrub", p01().to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_secret("builtin scrub output", &out.stdout);
}

/// Without CCHIST_REDACT_KEY, fingerprints are keyed by a random per-machine key kept 0600
/// under the config folder (never a public key), or left out when there is none.
#[test]
fn fingerprints_use_a_private_per_machine_key() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    std::fs::write(
        &file,
        format!("{{\"type\":\"user\",\"message\":{{\"content\":\"use {t}\"}}}}\n"),
    )
    .unwrap();
    let check = |xdg: &Path| {
        let out = cchist()
            .env("XDG_CONFIG_HOME", xdg)
            .args(["check", "--format", "json", file.to_str().unwrap()])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["files"][0]["findings"][0]["fingerprint"].clone()
    };
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let fa = check(&a);
    assert_eq!(check(&a), fa, "stable on one machine");
    assert_ne!(
        check(&b),
        fa,
        "another machine's key gives other fingerprints"
    );
    let key = a.join("cchist/redact.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // A key file others can read is not used: no fingerprint rather than a guessable one.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(check(&a), Value::Null);
}

/// Lines that are not JSON object records (a BOM line, an array, a string, a truncated last
/// line) are redacted in every pipeline, record- and session-scoped alike.
#[test]
fn non_object_lines_are_redacted_in_every_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let body = format!(
        "{{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n\
         \u{feff}{{\"type\":\"user\",\"message\":{{\"content\":\"bom {t}\"}}}}\n\
         [\"array\",\"{t}\"]\n\
         \"a string {t}\"\n\
         {{\"type\":\"user\",\"uuid\":\"u2\",\"parentUuid\":\"u1\",\"message\":{{\"content\":\"cut {t}"
    );
    std::fs::write(&file, &body).unwrap();
    let f = file.to_str().unwrap();
    for args in [
        vec!["redact", f],
        vec!["redact", "--dry-run", f],
        vec!["run", "-p", "scrub", f],
        vec!["run", "-p", "share", f],
    ] {
        let out = run(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains(&t), "{args:?} kept the secret:\n{text}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains(&t));
        if !args.contains(&"--dry-run") {
            assert_eq!(
                text.matches("[REDACTED:github-pat]").count(),
                4,
                "{args:?}:\n{text}"
            );
            assert!(!text.ends_with('\n'), "the cut last line stays cut");
        }
    }
    let out = run(&["check", f]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .matches("github-pat")
            .count(),
        4
    );
}
