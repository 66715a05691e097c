//! `cchist check --policy`: exit codes, baselines, and SARIF that the official SARIF
//! Multitool validates (schema and rules) — what GitHub code scanning ingests.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{corpus, manifest, run};

/// `cchist check --policy ARGS…` (the policy first, the file last).
fn check(args: &[&str]) -> std::process::Output {
    run(&[&["check", "--policy"], args].concat())
}

/// The pinned SARIF Multitool (`CCHIST_SARIF_MULTITOOL`, else where
/// `scripts/install-test-tools.sh` puts it under target/). `None` (skip) without it, except
/// under CI=true. A test never installs it.
fn multitool() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CCHIST_SARIF_MULTITOOL") {
        return Some(PathBuf::from(p));
    }
    let bin = manifest()
        .join("target/sarif-tool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool");
    if bin.is_file() {
        return Some(bin);
    }
    crate::common::skip_or_fail(
        "the SARIF Multitool is not installed: run `. scripts/install-test-tools.sh` (or set CCHIST_SARIF_MULTITOOL)",
    );
    None
}

/// Errors the Multitool reports for a SARIF file (schema violations and rule errors).
fn sarif_errors(tool: &Path, sarif: &Path) -> Vec<String> {
    let out = sarif.with_extension("validation.sarif");
    let run = Command::new(tool)
        .arg("validate")
        .arg(sarif)
        .arg("--output")
        .arg(&out)
        .output()
        .expect("run the SARIF Multitool");
    assert!(
        out.exists(),
        "the Multitool wrote no report: {}",
        String::from_utf8_lossy(&run.stdout)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    v["runs"][0]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["level"] == "error")
        .map(|r| format!("{} {}", r["ruleId"], r["message"]))
        .collect()
}

#[test]
fn sarif_report_passes_the_official_validator() {
    let dir = tempfile::tempdir().unwrap();
    // A call a later prompt follows without an answer: a defect (the API rejects it). The
    // corpus's interrupted calls sit at the tip, which Claude Code handles (issue 17).
    let broken = dir.path().join("broken.jsonl");
    std::fs::write(&broken, crate::validate::mid_chain_unanswered_call()).unwrap();
    let out = run(&[
        "check",
        "--policy",
        "ci-policy",
        "--format",
        "sarif",
        corpus("generated/p01_quickstart.jsonl").to_str().unwrap(),
        corpus("real/thejamesnick__agentic-wallet__claude-session.jsonl")
            .to_str()
            .unwrap(),
        broken.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "findings exit 1");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], "2.1.0");
    let results = v["runs"][0]["results"].as_array().unwrap();
    let rules: Vec<&str> = results
        .iter()
        .map(|r| r["ruleId"].as_str().unwrap())
        .collect();
    assert!(
        rules.contains(&"github-pat") && rules.contains(&"unpaired-tool-use"),
        "{rules:?}"
    );
    for r in results {
        let region = &r["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().unwrap() >= 1);
    }
    // Never a secret in the report.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("AKIAIOSFODNN7EXAMPLE"));
    let Some(tool) = multitool() else { return };
    let file = dir.path().join("report.sarif");
    std::fs::write(&file, &out.stdout).unwrap();
    let errors = sarif_errors(&tool, &file);
    assert!(errors.is_empty(), "SARIF Multitool errors: {errors:?}");
    // The validator does reject a broken log, so the check above can fail.
    let broken = dir.path().join("broken.sarif");
    std::fs::write(&broken, r#"{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"results":[{"ruleId":"a"}]}]}"#).unwrap();
    assert!(!sarif_errors(&tool, &broken).is_empty());
}

#[test]
fn policy_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let p05 = corpus("generated/p05_long.jsonl");
    let p05 = p05.to_str().unwrap();
    // clean: a session without secrets and a valid chain
    let clean = check(&["ci-policy", p05]);
    crate::common::assert_code(&clean, 0);
    // a size limit the file breaks
    let strict = dir.path().join("strict.toml");
    std::fs::write(&strict, "version = 1\n[check]\ndeny_rules = []\nmax_transcript_bytes = 1000\nforbidden_tools = [\"Write\"]\n").unwrap();
    let out = check(&[strict.to_str().unwrap(), "--format", "json", p05]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["by_rule"]["max-transcript-bytes"], 1);
    assert_eq!(
        v["summary"]["by_rule"]["forbidden-tool"], 12,
        "one Write per turn"
    );
    // errors: a policy typo, a pipeline without [check], a missing file
    let typo = dir.path().join("typo.toml");
    std::fs::write(&typo, "version = 1\n[check]\nmax_bytes = 3\n").unwrap();
    let out = check(&[typo.to_str().unwrap(), p05]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("max_bytes"));
    let out = check(&["identity", p05]);
    assert_eq!(out.status.code(), Some(2));
    let out = run(&["check", "--policy", "ci-policy", "/nonexistent.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn baseline_hides_known_findings_only() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("baseline.json");
    let p01 = corpus("generated/p01_quickstart.jsonl");
    let out = check(&[
        "ci-policy",
        "--write-baseline",
        base.to_str().unwrap(),
        p01.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&base).unwrap();
    assert!(
        !text.contains("AKIAIOSFODNN7EXAMPLE"),
        "a baseline holds fingerprints only"
    );
    let out = check(&[
        "ci-policy",
        "--baseline",
        base.to_str().unwrap(),
        p01.to_str().unwrap(),
    ]);
    crate::common::assert_code(&out, 0);
    // A new secret is still reported.
    let f = dir.path().join("new.jsonl");
    let mut data = std::fs::read(&p01).unwrap();
    let key = format!("ghp_{}", "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9");
    data.extend_from_slice(format!("{{\"type\":\"queue-operation\",\"operation\":\"enqueue\",\"content\":\"token {key}\"}}\n").as_bytes());
    std::fs::write(&f, data).unwrap();
    let out = check(&[
        "ci-policy",
        "--baseline",
        base.to_str().unwrap(),
        "--format",
        "json",
        f.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["findings"], 1, "{v}");
}

/// `--write-baseline PATH` never replaces what is not a baseline: the very session it scans
/// (`--write-baseline SESSION.jsonl`), or any other file. Refused before the scan, exit 2,
/// the file as it was; an old baseline there is replaced.
#[test]
fn write_baseline_never_replaces_a_transcript() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    let key = format!("ghp_{}", "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9");
    let line = format!("{{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{{\"role\":\"user\",\"content\":\"token {key}\"}}}}\n");
    std::fs::write(&f, &line).unwrap();
    let fs = f.to_str().unwrap();
    let out = run(&["check", "--write-baseline", fs, fs]);
    crate::common::assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a cchist baseline"));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), line);
    let base = dir.path().join("b.json");
    let bs = base.to_str().unwrap();
    crate::common::assert_code(&run(&["check", "--write-baseline", bs, fs]), 0);
    // A baseline there is replaced.
    crate::common::assert_code(&run(&["check", "--write-baseline", bs, fs]), 0);
}
