//! `summarize-range` on the corpus (no Claude Code CLI needed; `tests/claude/edit_resume.rs`
//! checks the resume).

use std::path::Path;

use cchist::findings::validate::validate;
use serde_json::Value;

use crate::common::{cchist, corpus, session_of, step_uuids, summary_record};

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
    let mut s = session_of(data);
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
    let removed = crate::common::strs(&sum["cchistSummary"]["removedUuids"]);
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
        5,
        "named by the records it stands for (the same on every run)"
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
    let sum = summary_record(&out).unwrap();
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
    let sum = summary_record(&out).unwrap();
    assert_eq!(sum["message"]["content"], "6");
    assert_eq!(sum["cchistSummary"]["source"], "command");
}

/// `--command` answering `{"summary", "keep"}`: the kept steps stay verbatim (a uuid in the
/// middle of a step keeps all of it, its tool results with it), after the summary and on its
/// chain; for every choice of kept steps the result validates (`cchist validate`).
#[test]
fn command_json_reply_keeps_whole_steps_verbatim() {
    let input = corpus(P05);
    let data = std::fs::read(&input).unwrap();
    let steps = step_uuids(&data);
    let n = steps.len();
    let dir = tempfile::tempdir().unwrap();
    // Summarize every step but the last 3; keep some in between by one uuid each (the last
    // uuid of the step: its tool result when it has one).
    let choices: Vec<Vec<usize>> = vec![
        vec![0],
        vec![5],
        vec![n - 4],
        vec![2, 3, 9],
        (0..n - 3).step_by(4).collect(),
    ];
    let in_lines: Vec<&[u8]> = data.split_inclusive(|&b| b == b'\n').collect();
    for keep in choices {
        let uuids: Vec<&str> = keep
            .iter()
            .map(|&k| steps[k].last().unwrap().as_str())
            .collect();
        let cmd = crate::common::reply_command(
            dir.path(),
            &serde_json::json!({"summary": "S-JSON", "keep": uuids}).to_string(),
        );
        let out = ok(
            &[
                "summarize-range",
                "--keep-last-steps",
                "3",
                "--command",
                &cmd,
            ],
            &input,
        );
        assert!(validate(&out).is_empty(), "{keep:?}: {:?}", validate(&out));
        let file = dir.path().join("out.jsonl");
        std::fs::write(&file, &out).unwrap();
        crate::common::ok(crate::common::cchist().arg("validate").arg(&file));
        let recs = records(&out);
        let at = recs
            .iter()
            .position(|r| r.get("cchistSummary").is_some())
            .unwrap();
        let sum = &recs[at];
        assert_eq!(sum["message"]["content"], "S-JSON");
        let kept = crate::common::strs(&sum["cchistSummary"]["keptUuids"]);
        let out_lines: Vec<&[u8]> = out.split_inclusive(|&b| b == b'\n').collect();
        for &k in &keep {
            for u in &steps[k] {
                assert!(kept.contains(&u.as_str()), "{keep:?}: step {k} not whole");
                // Verbatim, or with only its parentUuid re-pointed (its parent was removed).
                let pos = recs.iter().position(|r| r["uuid"] == u.as_str()).unwrap();
                let orig = in_lines
                    .iter()
                    .find(|l| serde_json::from_slice::<Value>(l).unwrap()["uuid"] == u.as_str())
                    .unwrap();
                if out_lines[pos] != *orig {
                    let mut a: Value = serde_json::from_slice(orig).unwrap();
                    let mut b = recs[pos].clone();
                    a["parentUuid"] = Value::Null;
                    b["parentUuid"] = Value::Null;
                    assert_eq!(a, b, "{keep:?}: step {k} changed beyond its parent");
                }
                if k > 0 {
                    assert!(pos > at, "kept records of the range come after the summary");
                }
            }
        }
        let removed = sum["cchistSummary"]["removedUuids"].as_array().unwrap();
        assert!(removed.iter().all(|u| !kept.contains(&u.as_str().unwrap())));
    }
}

/// Every bad reply exits 2 with the file untouched. A reply meant as JSON but not valid JSON
/// (a trailing comma, a lone surrogate) is an error, not a summary holding the raw JSON with
/// the kept steps silently lost; a `keep` entry is quoted in the error with its control
/// characters escaped (no terminal escapes from the command reach the user's terminal).
#[test]
fn command_json_reply_errors_leave_the_file_untouched() {
    let input = corpus(P05);
    let data = std::fs::read(&input).unwrap();
    let steps = step_uuids(&data);
    let last = steps.last().unwrap()[0].clone();
    for (reply, want) in [
        (
            serde_json::json!({"summary": "S", "keep": [last]}).to_string(),
            "not a record of the summarized range",
        ),
        (
            serde_json::json!({"summary": "S", "keep": ["no-such-uuid"]}).to_string(),
            "not a record of the summarized range",
        ),
        (
            serde_json::json!({"summary": "", "keep": []}).to_string(),
            "non-empty `summary`",
        ),
        (
            serde_json::json!({"summary": "S", "kept": []}).to_string(),
            "unknown key `kept`",
        ),
        (
            r#"{"summary": "S", "keep": ["a",]}"#.into(),
            "not valid JSON",
        ),
        (
            r#"{"summary": "S\ud800", "keep": []}"#.into(),
            "not valid JSON",
        ),
        (
            "{\"summary\": \"S\", \"keep\": [\"\\u001b[2Jx\"]}".into(),
            "not a record of the summarized range",
        ),
    ] {
        let (dir, f) = crate::common::temp_file("s.jsonl", &data);
        let r = dir.path().join("reply.json");
        std::fs::write(&r, &reply).unwrap();
        let cmd = format!("cat {}", r.display());
        let out = run(
            &[
                "summarize-range",
                "--keep-last-steps",
                "3",
                "--command",
                &cmd,
                "-i",
                "--force",
            ],
            &f,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{reply}: {err}");
        assert!(err.contains(want), "{reply}: {err}");
        assert!(!err.contains('\u{1b}'), "{reply}: {err:?}");
        assert_eq!(std::fs::read(&f).unwrap(), data);
    }
}
