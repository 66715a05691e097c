//! What the pinned CLI does when the transcript of a session it is running is edited in place
//! between two turns (issue #27, step 0): the measurement that makes a history manager's edits
//! go to a fork (or wait for SessionEnd) rather than into the live file.
//!
//! Observed with 2.1.328 (asserted below): the running process keeps the conversation in
//! memory, so the next request still carries the turns the edit removed; it appends the new
//! turn to the file by path (the edited file, not the replaced inode), chained onto the last
//! record it holds in memory; the edit stays in the file. A resume afterwards therefore sees the
//! edit plus the new turn, while the user of the live session saw neither.

use crate::support::*;
use serde_json::Value;

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn main_requests(mock: &MockApi) -> Vec<Request> {
    mock.requests()
        .into_iter()
        .filter(|r| r.carries_tools())
        .collect()
}

#[test]
fn a_live_session_ignores_an_in_place_edit_and_appends_to_the_edited_file() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    let mock = MockApi::start(vec![
        vec![Block::text("LIVE-ANSWER-ONE")],
        vec![Block::text("LIVE-ANSWER-TWO")],
        vec![Block::text("LIVE-ANSWER-THREE")],
    ])
    .unwrap();
    let mut live = sb.live(&mock, &[]).expect("CLI available");
    live.send("LIVE-QUESTION-ONE");
    live.send("LIVE-QUESTION-TWO");
    let sid = live.session_id.clone().expect("session id");
    let file = sb.session_file(&sid);
    let ino =
        |p: &std::path::Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before_ino = ino(&file);
    // Replace turn 1 with a summary, in place, as a history manager would.
    let ops = sb.root().join("ops.json");
    std::fs::write(
        &ops,
        r#"{"action":"modify_history","operations":[{"type":"replace","turns":[1],"with":{"type":"user","content":"LIVE-SUMMARY-OF-ONE"}}]}"#,
    )
    .unwrap();
    sb.cchist(&[
        "apply",
        ops.to_str().unwrap(),
        "--file",
        file.to_str().unwrap(),
        "--force",
    ]);
    assert_ne!(ino(&file), before_ino, "apply replaced the file (rename)");
    let edited = std::fs::read_to_string(&file).unwrap();
    assert!(edited.contains("LIVE-SUMMARY-OF-ONE") && !edited.contains("LIVE-QUESTION-ONE"));

    live.send("LIVE-QUESTION-THREE");
    let status = live.close();
    assert!(
        status.is_some_and(|s| s.success()),
        "the session ended well"
    );

    // 1. the next request still carries the removed turn, not the summary
    let reqs = main_requests(&mock);
    let third = &reqs.last().unwrap().body["messages"];
    let third_text = third.to_string();
    assert!(third_text.contains("LIVE-QUESTION-THREE"));
    assert!(
        third_text.contains("LIVE-QUESTION-ONE"),
        "the running CLI sends the conversation it holds in memory"
    );
    assert!(!third_text.contains("LIVE-SUMMARY-OF-ONE"));

    // 2. the file: the edit stayed, the new turn was appended to it by path
    let after = records(&file);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("LIVE-SUMMARY-OF-ONE"),
        "the edit stayed on disk"
    );
    assert!(
        !text.contains("LIVE-QUESTION-ONE"),
        "not rewritten from memory"
    );
    assert!(text.contains("LIVE-QUESTION-THREE") && text.contains("LIVE-ANSWER-THREE"));
    // the appended prompt chains onto the last record the process holds (turn 2's answer),
    // which the edit kept: the chain holds together here, but only because the edit left
    // the tail alone.
    let uuids: std::collections::HashSet<&str> =
        after.iter().filter_map(|r| r["uuid"].as_str()).collect();
    let third_prompt = after
        .iter()
        .find(|r| r["type"] == "user" && r.to_string().contains("LIVE-QUESTION-THREE"))
        .unwrap();
    let parent = third_prompt["parentUuid"].as_str().unwrap();
    assert!(uuids.contains(parent), "appended onto a surviving record");
    note(&format!(
        "live edit: request 3 carries turn 1 from memory; file kept the edit and got turn 3 appended ({} records)",
        after.len()
    ));

    // 3. a resume sees the edit and all three turns after it
    let probe = sb.resume(&sid, &[]).expect("CLI available");
    let msgs = probe.expect_ok("edited live session");
    assert!(!occurrences(msgs, "LIVE-SUMMARY-OF-ONE").is_empty());
    assert!(occurrences(msgs, "LIVE-QUESTION-ONE").is_empty());
    assert!(!occurrences(msgs, "LIVE-ANSWER-THREE").is_empty());
}
