//! `summarize-range` on the corpus (no Claude Code CLI needed; `tests/claude/edit_resume.rs`
//! checks the resume).

use std::path::Path;

use cchist::findings::validate::validate;
use cchist::io::framing::lines;
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use serde_json::Value;

use crate::common::{cchist, corpus};

fn run(args: &[&str], input: &Path) -> std::process::Output {
    cchist().args(args).arg(input).output().unwrap()
}

/// `cchist ARGS INPUT`, which must succeed; its stdout.
fn ok(args: &[&str], input: &Path) -> Vec<u8> {
    crate::common::ok(cchist().args(args).arg(input)).stdout
}

fn records(data: &[u8]) -> Vec<Value> {
    data.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect()
}

/// The prompt text of each turn, in order.
fn prompts(data: &[u8]) -> Vec<String> {
    let mut s = Session::new(lines(data, 1).map(Record::from_line).collect());
    let turns = s.turns();
    turns
        .iter()
        .map(|t| {
            let v = s.records[t.prompt].value().unwrap();
            cchist::transcript::turns::message_text(v)
        })
        .collect()
}

const P05: &str = "generated/p05_long.jsonl";

#[test]
fn turns_2_to_10_become_one_summary_turn_in_place() {
    let input = corpus(P05);
    let data = std::fs::read(&input).unwrap();
    let out = ok(
        &["summarize-range", "--turns", "2..10", "--text", "S-TEXT"],
        &input,
    );
    assert!(validate(&out).is_empty(), "{:?}", validate(&out));
    let before = prompts(&data);
    let after = prompts(&out);
    assert_eq!(before.len(), 12);
    assert_eq!(after, [&before[0][..], "S-TEXT", &before[10], &before[11]]);
    let recs = records(&out);
    let sums: Vec<&Value> = recs
        .iter()
        .filter(|r| r.get("cchistSummary").is_some())
        .collect();
    assert_eq!(sums.len(), 1);
    let sum = sums[0];
    assert_eq!(sum["type"], "user");
    assert_eq!(sum["isSidechain"], false);
    assert_eq!(sum["userType"], "external");
    assert_eq!(sum["cchistSummary"]["turns"], "2..10");
    assert_eq!(sum["cchistSummary"]["source"], "text");
    // It hangs from turn 1's last record, and turn 11 hangs from it.
    let orig = records(&data);
    let turn1_answer = orig
        .iter()
        .find(|r| r["type"] == "assistant" && r.to_string().contains("The parser is in place"))
        .unwrap();
    assert_eq!(sum["parentUuid"], turn1_answer["uuid"]);
    let step11 = recs
        .iter()
        .find(|r| r["message"]["content"] == before[10].as_str())
        .unwrap();
    assert_eq!(step11["parentUuid"], sum["uuid"]);
    // Every removed chain uuid is named; none is left in the file.
    let removed: Vec<&str> = sum["cchistSummary"]["removedUuids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    let removed_lines = orig.len() + 1 - recs.len();
    assert_eq!(sum["cchistSummary"]["records"], removed_lines);
    assert!(!removed.is_empty());
    for u in removed {
        assert!(!recs.iter().any(|r| r["uuid"] == u), "{u} still present");
        assert!(orig.iter().any(|r| r["uuid"] == u));
    }
    assert_eq!(sum["sessionId"], orig[2]["sessionId"]);
    assert_eq!(sum["cwd"], orig[2]["cwd"]);
    assert_eq!(
        uuid::Uuid::parse_str(sum["uuid"].as_str().unwrap())
            .unwrap()
            .get_version_num(),
        4
    );
}

#[test]
fn keep_last_keeps_exactly_the_last_turns_after_a_digest() {
    let input = corpus(P05);
    let data = std::fs::read(&input).unwrap();
    let out = ok(&["summarize-range", "--keep-last", "3"], &input);
    assert!(validate(&out).is_empty());
    let before = prompts(&data);
    let after = prompts(&out);
    assert_eq!(after.len(), 4);
    assert_eq!(after[1..], before[9..]);
    assert!(
        after[0].starts_with("Summary of turns 1–9 (replaced by cchist"),
        "{}",
        after[0]
    );
    assert!(after[0].contains("Files written:") && after[0].contains("Commands run:"));
    // Nothing to summarize: unchanged.
    assert!(ok(&["summarize-range", "--keep-last", "12"], &input) == data);
}

#[test]
fn uuids_snap_to_whole_turns() {
    let input = corpus(P05);
    let data = std::fs::read(&input).unwrap();
    let orig = records(&data);
    // A tool result in turn 3 and the Write call of turn 5.
    let from = orig
        .iter()
        .find(|r| r.to_string().contains("built logging") && r["type"] == "user")
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let to = orig
        .iter()
        .find(|r| {
            r["type"] == "assistant"
                && r.to_string().contains("src/m04.rs")
                && r.to_string().contains("tool_use")
        })
        .unwrap()["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let out = ok(
        &[
            "summarize-range",
            "--from",
            &from,
            "--to",
            &to,
            "--text",
            "S",
        ],
        &input,
    );
    let sum = records(&out)
        .into_iter()
        .find(|r| r.get("cchistSummary").is_some())
        .unwrap();
    assert_eq!(sum["cchistSummary"]["turns"], "3..5");
    assert!(validate(&out).is_empty());
}

#[test]
fn a_failing_command_leaves_the_file_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("p05_long.jsonl");
    std::fs::copy(corpus(P05), &p).unwrap();
    let data = std::fs::read(&p).unwrap();
    for cmd in ["echo broken >&2; exit 3", "cat >/dev/null", "sleep 5"] {
        let out = run(
            &[
                "summarize-range",
                "--turns",
                "2..3",
                "--command",
                cmd,
                "--timeout",
                "1",
                "-i",
                "--force",
            ],
            &p,
        );
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("summary command"),
            "{cmd}"
        );
        assert!(std::fs::read(&p).unwrap() == data, "{cmd}: file changed");
    }
    let out = ok(
        &[
            "summarize-range",
            "--turns",
            "2..3",
            "--command",
            "grep -c '\"type\":\"user\"'",
        ],
        &p,
    );
    let sum = records(&out)
        .into_iter()
        .find(|r| r.get("cchistSummary").is_some())
        .unwrap();
    assert_eq!(sum["message"]["content"], "6");
    assert_eq!(sum["cchistSummary"]["source"], "command");
}
