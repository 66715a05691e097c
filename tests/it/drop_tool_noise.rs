//! `drop-tool-noise` on the corpus, and the shipped pipeline files (no Claude Code CLI needed;
//! `tests/claude/edit_resume.rs` checks the resume).

use std::collections::HashSet;
use std::path::Path;

use cchist::findings::validate::validate;
use cchist::stages::drop_tool_noise::{DropToolNoise, DropToolNoiseOptions};
use cchist::stages::{Scope, Stage};
use serde_json::Value;

use crate::common::{corpus, main_sessions, manifest, ok};

/// `cchist ARGS INPUT`, which must succeed; its stdout.
fn cchist(args: &[&str], input: &Path) -> Vec<u8> {
    ok(crate::common::cchist().args(args).arg(input)).stdout
}

fn records(data: &[u8]) -> Vec<Value> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// (tool_use ids, tool_result ids) of the records.
fn tool_ids(recs: &[Value]) -> (HashSet<String>, HashSet<String>) {
    let (mut uses, mut results) = (HashSet::new(), HashSet::new());
    for r in recs {
        for b in r
            .pointer("/message/content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match b["type"].as_str() {
                Some("tool_use") => uses.insert(b["id"].as_str().unwrap().to_string()),
                Some("tool_result") => {
                    results.insert(b["tool_use_id"].as_str().unwrap().to_string())
                }
                _ => false,
            };
        }
    }
    (uses, results)
}

#[test]
fn defaults_halve_p02_and_keep_every_tool_call_paired() {
    let input = corpus("generated/p02_noise.jsonl");
    let data = std::fs::read(&input).unwrap();
    let out = cchist(&["drop-tool-noise"], &input);
    assert!(
        out.len() * 2 <= data.len(),
        "{} -> {} bytes",
        data.len(),
        out.len()
    );
    assert!(validate(&out).is_empty(), "{:?}", validate(&out));
    let recs = records(&out);
    let (uses, results) = tool_ids(&recs);
    assert_eq!(uses, results);
    let (orig_uses, _) = tool_ids(&records(&data));
    // One of the two identical reads is gone.
    assert_eq!(orig_uses.len() - uses.len(), 1);
    for r in &recs {
        let ty = r["type"].as_str().unwrap();
        assert!(
            !ty.starts_with("api-request")
                && !["atis-latch", "tools-used", "cost-state", "progress"].contains(&ty)
        );
        if let Some(a) = r["attachment"]["type"].as_str() {
            assert!(![
                "prompt_snapshot",
                "skill_listing",
                "agent_listing_delta",
                "deferred_tools_delta"
            ]
            .contains(&a));
        }
    }
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.contains("KiB of tool output removed by cchist …]"));
    // Running it again changes nothing.
    let tmp = tempfile::tempdir().unwrap();
    let again = tmp.path().join("p02_noise.jsonl");
    std::fs::write(&again, &out).unwrap();
    assert!(
        cchist(&["drop-tool-noise"], &again) == out,
        "not idempotent"
    );
}

#[test]
fn every_generated_session_stays_valid_and_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions = main_sessions("generated");
    assert!(sessions.len() >= 5, "{sessions:?}");
    for input in sessions {
        let f = input.file_name().unwrap().to_string_lossy().into_owned();
        let out = cchist(
            &[
                "drop-tool-noise",
                "--drop-tool",
                "Bash",
                "--max-tool-output",
                "300",
            ],
            &input,
        );
        assert!(validate(&out).is_empty(), "{f}: {:?}", validate(&out));
        let (uses, results) = tool_ids(&records(&out));
        assert_eq!(uses, results, "{f}");
        let p = tmp.path().join(&f);
        std::fs::write(&p, &out).unwrap();
        let again = cchist(
            &[
                "drop-tool-noise",
                "--drop-tool",
                "Bash",
                "--max-tool-output",
                "300",
            ],
            &p,
        );
        assert!(again == out, "{f}: not idempotent");
    }
}

#[test]
fn drop_tool_glob_keeps_failed_calls_unless_asked() {
    let input = corpus("generated/p02_noise.jsonl");
    let bash = |data: &[u8]| -> usize {
        records(data)
            .iter()
            .flat_map(|r| {
                r.pointer("/message/content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "tool_use" && b["name"] == "Bash")
            .count()
    };
    let all = std::fs::read(&input).unwrap();
    let kept = cchist(&["drop-tool-noise", "--drop-tool", "Ba*"], &input);
    let none = cchist(
        &[
            "drop-tool-noise",
            "--drop-tool",
            "Ba*",
            "--drop-tool-errors",
        ],
        &input,
    );
    assert!(
        bash(&all) > bash(&kept) && bash(&kept) > 0,
        "{} {}",
        bash(&all),
        bash(&kept)
    );
    assert_eq!(bash(&none), 0);
    for out in [&kept, &none] {
        assert!(validate(out).is_empty(), "{:?}", validate(out));
    }
}

#[test]
fn capping_alone_streams_and_keeps_every_record() {
    let opts = DropToolNoiseOptions {
        drop_progress: false,
        drop_types: vec![],
        drop_attachments: vec![],
        collapse_reads: false,
        ..Default::default()
    };
    assert_eq!(DropToolNoise::new(opts).unwrap().scope(), Scope::Record);
    assert_eq!(
        DropToolNoise::new(DropToolNoiseOptions::default())
            .unwrap()
            .scope(),
        Scope::Session
    );
    let input = corpus("generated/p02_noise.jsonl");
    let out = cchist(
        &[
            "drop-tool-noise",
            "--keep-progress",
            "--no-default-drops",
            "--no-collapse-reads",
            "--max-tool-output",
            "4096",
        ],
        &input,
    );
    let data = std::fs::read(&input).unwrap();
    assert_eq!(records(&out).len(), records(&data).len());
    assert!(out.len() < data.len());
    assert!(validate(&out).is_empty());
}

#[test]
fn shipped_filters_run_and_keep_the_chain_valid() {
    let input = corpus("generated/p01_quickstart.jsonl");
    for f in ["compact.toml", "share.toml"] {
        let pipeline = manifest().join("filters").join(f);
        let out = cchist(&["run", "--pipeline", pipeline.to_str().unwrap()], &input);
        assert!(validate(&out).is_empty(), "{f}: {:?}", validate(&out));
        let (uses, results) = tool_ids(&records(&out));
        assert_eq!(uses, results, "{f}");
        if f == "share.toml" {
            let text = String::from_utf8(out).unwrap();
            // p01's GitHub token (its AWS pair is AWS's documented example, which is kept).
            assert!(
                text.contains("[REDACTED:github-pat]") && !text.contains("ghp_0"),
                "share.toml must redact"
            );
        }
    }
}

#[test]
fn stage_options_are_checked_in_pipeline_files() {
    let tmp = tempfile::tempdir().unwrap();
    for (ty, bad) in [
        ("drop-tool-noise", "max_output = 3"),
        ("drop-tool-noise", "max_tool_output = 10"),
        ("drop-tool-noise", "drop_tools = [\"[\"]"),
        ("relink", "repair = true"),
        ("summarize-range", "turns = \"4..2\""),
        ("summarize-range", "text = \"S\""),
    ] {
        let p = tmp.path().join("p.toml");
        std::fs::write(
            &p,
            format!("version = 1\n\n[[stage]]\ntype = \"{ty}\"\n{bad}\n"),
        )
        .unwrap();
        let out = crate::common::cchist()
            .args(["run", "--pipeline"])
            .arg(&p)
            .arg(corpus("generated/p01_quickstart.jsonl"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{ty} {bad}: {err}");
        assert!(err.contains("p.toml:"), "{ty} {bad}: {err}");
        assert!(out.stdout.is_empty());
    }
}
