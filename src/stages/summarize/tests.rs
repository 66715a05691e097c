//! Unit tests of the stage.

use super::*;
use crate::error::Origin;
use crate::io::framing::lines;
use std::collections::BTreeSet;

fn session_text(turns: usize) -> String {
    let mut t = String::new();
    let mut parent = "null".to_string();
    for n in 1..=turns {
        t += &format!(
            r#"{{"type":"user","uuid":"p{n}","parentUuid":{parent},"sessionId":"s","cwd":"/w","message":{{"role":"user","content":"prompt {n}"}},"timestamp":"2026-01-01T00:00:0{n}.000Z"}}"#
        );
        t += "\n";
        t += &format!(
            r#"{{"type":"assistant","uuid":"a{n}","parentUuid":"p{n}","message":{{"id":"m{n}","role":"assistant","content":[{{"type":"tool_use","id":"t{n}","name":"Bash","input":{{"command":"echo {n}"}}}}]}}}}"#
        );
        t += "\n";
        t += &format!(
            r#"{{"type":"user","uuid":"r{n}","parentUuid":"a{n}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"{n}"}}]}}}}"#
        );
        t += "\n";
        t += &format!(
            r#"{{"type":"assistant","uuid":"f{n}","parentUuid":"r{n}","message":{{"id":"n{n}","role":"assistant","content":[{{"type":"text","text":"answer {n}"}}]}}}}"#
        );
        t += "\n";
        parent = format!("\"f{n}\"");
    }
    t
}

/// Options summarizing the steps `range`.
fn steps(range: &str) -> SummarizeOptions {
    SummarizeOptions {
        steps: Some(range.into()),
        ..Default::default()
    }
}

/// Options summarizing the turns `range`.
fn turns(range: &str) -> SummarizeOptions {
    SummarizeOptions {
        turns: Some(range.into()),
        ..Default::default()
    }
}

/// Options summarizing all but the last `n` turns.
fn keep_last(n: usize) -> SummarizeOptions {
    SummarizeOptions {
        keep_last: Some(n),
        ..Default::default()
    }
}

/// Options summarizing turn 2 with the output of the shell command `c` (timeout `t` seconds).
fn cmd(c: &str, t: Option<u64>) -> SummarizeOptions {
    SummarizeOptions {
        turns: Some("2".into()),
        command: Some(c.into()),
        timeout_secs: t,
        ..Default::default()
    }
}

/// The error `run` fails with.
fn run_err(o: SummarizeOptions, text: &str) -> String {
    run(o, text).unwrap_err().to_string()
}

fn run(o: SummarizeOptions, text: &str) -> Result<Vec<Value>> {
    let st = SummarizeRange::new(o).unwrap();
    let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    let mut cx = Cx::new(Origin::stdin());
    st.session(&mut s, &mut cx)?;
    let mut out = Vec::new();
    for r in &s.records {
        r.write_to(&mut out);
    }
    let f = crate::findings::validate::validate(&out);
    assert!(f.is_empty(), "{f:?}");
    Ok(String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect())
}

#[test]
fn turns_range_becomes_one_summary_turn() {
    let text = session_text(5);
    let out = run(
        SummarizeOptions {
            turns: Some("2..4".into()),
            text: Some("S".into()),
            ..Default::default()
        },
        &text,
    )
    .unwrap();
    assert_eq!(out.len(), 4 + 1 + 4);
    let sum = &out[4];
    assert_eq!(sum["message"]["content"], "S");
    assert_eq!(sum["parentUuid"], "f1");
    assert_eq!(sum["sessionId"], "s");
    assert_eq!(sum["cwd"], "/w");
    assert_eq!(sum["isSidechain"], false);
    assert_eq!(sum["userType"], "external");
    assert_eq!(sum["timestamp"], "2026-01-01T00:00:04.000Z");
    assert_eq!(sum["cchistSummary"]["turns"], "2..4");
    assert_eq!(
        sum["cchistSummary"]["removedUuids"]
            .as_array()
            .unwrap()
            .len(),
        12
    );
    assert_eq!(out[5]["uuid"], "p5");
    assert_eq!(out[5]["parentUuid"], sum["uuid"]);
}

#[test]
fn keep_last_and_digest() {
    let text = session_text(4);
    let out = run(keep_last(1), &text).unwrap();
    assert_eq!(out.len(), 1 + 4);
    assert_eq!(out[0]["parentUuid"], Value::Null);
    let d = out[0]["message"]["content"].as_str().unwrap();
    assert!(d.starts_with("Summary of turns 1–3"), "{d}");
    assert!(d.contains("- prompt 2\n") && d.contains("- echo 3"), "{d}");
    assert!(d.ends_with("Final answer:\nanswer 3"), "{d}");
    let none = run(keep_last(9), &text).unwrap();
    assert_eq!(none.len(), 16);
}

#[test]
fn uuids_snap_to_steps() {
    let out = run(
        SummarizeOptions {
            from: Some("r2".into()),
            to: Some("a3".into()),
            text: Some("S".into()),
            ..Default::default()
        },
        &session_text(4),
    )
    .unwrap();
    // Steps a2+r2, f2, the head p3 and a3+r3 go; p2 and f3 stay around the summary.
    assert_eq!(out.len(), 16 - 6 + 1);
    let sum = &out[5];
    assert_eq!(out[4]["uuid"], "p2");
    assert_eq!(sum["parentUuid"], "p2");
    assert_eq!(sum["cchistSummary"]["turns"], "2..3");
    assert_eq!(sum["cchistSummary"]["steps"], "3..5");
    assert_eq!(out[6]["uuid"], "f3");
    assert_eq!(out[6]["parentUuid"], sum["uuid"]);
}

#[test]
fn step_ranges_cross_turns_and_keep_the_first_prompt() {
    let out = run(steps("2..5"), &session_text(3)).unwrap();
    let uuids: Vec<&str> = out.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
    assert_eq!(uuids[..3], ["p1", "a1", "r1"]);
    assert_eq!(uuids[4..], ["f3"]);
    let d = out[3]["message"]["content"].as_str().unwrap();
    assert!(d.starts_with("Summary of steps 2–5 (turns 1–3)"), "{d}");
    assert!(d.contains("- prompt 2\n") && d.contains("- echo 3"), "{d}");

    let out = run(
        SummarizeOptions {
            keep_last_steps: Some(3),
            text: Some("S".into()),
            ..Default::default()
        },
        &session_text(3),
    )
    .unwrap();
    let uuids: Vec<&str> = out.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
    // 6 steps: 1..3 go with the head p2; the first prompt, the summary, steps 4..6 stay.
    assert_eq!(uuids[0], "p1");
    assert_eq!(out[1]["message"]["content"], "S");
    assert_eq!(uuids[2..], ["f2", "p3", "a3", "r3", "f3"]);
    assert_eq!(out[1]["cchistSummary"]["steps"], "1..3");

    let e = run_err(steps("4..7"), &session_text(3));
    assert!(
        e.contains("step 7 does not exist: the session has 6 steps"),
        "{e}"
    );
}

/// A message split in pieces with tool results in between (2.1.x streaming), then a
/// second message: two steps, never cut between the pieces.
#[test]
fn split_messages_are_one_step() {
    let text = [
        r#"{"type":"user","uuid":"p","parentUuid":null,"message":{"role":"user","content":"go"}}"#,
        r#"{"type":"assistant","uuid":"a1","parentUuid":"p","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#,
        r#"{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}"#,
        r#"{"type":"assistant","uuid":"a2","parentUuid":"r1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{}}]}}"#,
        r#"{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"y"}]}}"#,
        r#"{"type":"assistant","uuid":"b","parentUuid":"r2","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    ]
    .join("\n")
        + "\n";
    let s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    let steps = s.steps(&s.turns());
    let recs: Vec<Vec<usize>> = steps.iter().map(|st| st.records.clone()).collect();
    assert_eq!(recs, vec![vec![1, 2, 3, 4], vec![5]]);
    let out = run(
        SummarizeOptions {
            keep_last_steps: Some(1),
            text: Some("S".into()),
            ..Default::default()
        },
        &text,
    )
    .unwrap();
    let uuids: Vec<&str> = out.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
    assert_eq!(uuids[0], "p");
    assert_eq!(uuids[2..], ["b"]);
}

#[test]
fn fit_takes_the_fewest_oldest_steps_under_the_budget() {
    let text = session_text(6);
    let mut all = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    let before = budget::resume_tokens(&mut all);
    for b in [before / 2, before * 3 / 4, before - 1] {
        let o = SummarizeOptions {
            fit: Some(b),
            fit_reserve: Some(0),
            text: Some("S".into()),
            ..Default::default()
        };
        let st = SummarizeRange::new(o.clone()).unwrap();
        let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        let mut cx = Cx::new(Origin::stdin());
        st.session(&mut s, &mut cx).unwrap();
        let after = budget::resume_tokens(&mut s);
        assert!(after <= b, "budget {b}: {after}");
        assert_eq!(cx.counters["summarize-range.fit.after_tokens"], after);
        assert_eq!(cx.counters["summarize-range.fit.before_tokens"], before);
        // One step fewer would not fit: summarizing the steps before the kept ones less one.
        let n = cx.counters["summarize-range.steps_summarized"] as usize;
        if n > 1 {
            let fewer = SummarizeRange::new(SummarizeOptions {
                fit: None,
                fit_reserve: None,
                steps: Some(format!("1..{}", n - 1)),
                ..o
            })
            .unwrap();
            let mut s2 = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
            fewer
                .session(&mut s2, &mut Cx::new(Origin::stdin()))
                .unwrap();
            assert!(budget::resume_tokens(&mut s2) > b, "budget {b}");
        }
    }
    let mut cx = Cx::new(Origin::stdin());
    let st = SummarizeRange::new(SummarizeOptions {
        fit: Some(before),
        fit_reserve: Some(0),
        ..Default::default()
    })
    .unwrap();
    let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    st.session(&mut s, &mut cx).unwrap();
    assert_eq!(cx.counters["summarize-range.skipped"], 1);
    // The default reserve (for what the CLI adds on resume) comes off the budget: the same
    // budget plus less than the reserve no longer fits as it is.
    let b = before + budget::RESERVE_BASE_TOKENS / 2;
    let mut cx = Cx::new(Origin::stdin());
    let st = SummarizeRange::new(SummarizeOptions {
        fit: Some(b),
        text: Some("S".into()),
        ..Default::default()
    })
    .unwrap();
    let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    st.session(&mut s, &mut cx).unwrap();
    assert!(!cx.counters.contains_key("summarize-range.skipped"));
    assert_eq!(
        cx.counters["summarize-range.fit.reserve_tokens"],
        budget::default_reserve(b)
    );
    assert!(SummarizeRange::new(SummarizeOptions {
        steps: Some("1".into()),
        fit_reserve: Some(10),
        ..Default::default()
    })
    .is_err());
}

#[test]
fn command_output_failure_and_timeout() {
    let text = session_text(3);
    let out = run(cmd("wc -l | tr -d ' '", None), &text).unwrap();
    assert_eq!(out[4]["message"]["content"], "4");
    assert_eq!(out[4]["cchistSummary"]["source"], "command");
    let e = run(cmd("echo nope >&2; exit 3", None), &text)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exit status: 3") && e.contains("nope"), "{e}");
    let e = run_err(cmd("cat >/dev/null", None), &text);
    assert!(e.contains("empty output"), "{e}");
    let e = run_err(cmd("sleep 5", Some(1)), &text);
    assert!(e.contains("timed out"), "{e}");
}

#[test]
fn command_output_is_bounded_and_leftover_processes_do_not_hold_the_run() {
    let text = session_text(3);
    // Output past the bound (endless output is stopped there too, not read until the
    // timeout).
    let e = run(
        cmd("head -c 3000000 /dev/zero | tr '\\0' x", Some(600)),
        &text,
    )
    .map(|_| ())
    .unwrap_err()
    .to_string();
    assert!(e.contains("printed more than"), "{e}");
    // A background job in the command's group is ended once the command exits.
    let out = run(cmd("sleep 600 & echo done", Some(600)), &text).unwrap();
    assert_eq!(out[4]["message"]["content"], "done");
    // One that left the group and keeps the output open: an error, not a hang. The
    // command waits until the detached process has left the group (it creates a file
    // after setsid), else ending the group could still catch it and the test would race.
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("left");
    let c = format!(
        "setsid sh -c 'touch {f}; exec sleep 10' & while [ ! -e {f} ]; do sleep 0.01; done; echo done",
        f = flag.display()
    );
    let e = run(cmd(&c, Some(1)), &text)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(e.contains("still holds its output open"), "{e}");
}

#[test]
fn options_are_checked() {
    assert_eq!(parse_turns("3..10"), Ok((3, Some(10))));
    assert_eq!(parse_turns("3..=10"), Ok((3, Some(10))));
    assert_eq!(parse_turns("..4"), Ok((1, Some(4))));
    assert_eq!(parse_turns("5.."), Ok((5, None)));
    assert_eq!(parse_turns("7"), Ok((7, Some(7))));
    assert!(parse_turns("4..2").is_err());
    assert!(parse_turns("0..2").is_err());
    assert!(parse_turns("x").is_err());
    assert_eq!(parse_turns("3-7"), Ok((3, Some(7))));
    assert_eq!(parse_steps("2,3-4"), Ok((2, Some(4))));
    assert!(SummarizeRange::new(SummarizeOptions::default()).is_err());
    assert!(SummarizeRange::new(SummarizeOptions {
        turns: Some("1".into()),
        keep_last: Some(1),
        ..Default::default()
    })
    .is_err());
    let e = run_err(turns("9"), &session_text(2));
    assert!(e.contains("turn 9 does not exist"), "{e}");
}

/// A crafted session for the digest's step facts: one line per record.
fn digest_of(lines_: &[String]) -> String {
    let text = lines_.join("\n") + "\n";
    let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    let all: BTreeSet<usize> = (0..s.records.len()).collect();
    digest_body(&mut s, &all)
}

fn call(n: usize, name: &str, input: Value) -> String {
    json!({"type":"assistant","uuid":format!("a{n}"),"message":{"id":format!("m{n}"),"role":"assistant",
        "content":[{"type":"tool_use","id":format!("t{n}"),"name":name,"input":input}]}})
    .to_string()
}

fn result(n: usize, error: Option<&str>) -> String {
    let mut b = json!({"type":"tool_result","tool_use_id":format!("t{n}"),"content":error.unwrap_or("fine")});
    if error.is_some() {
        b["is_error"] = Value::Bool(true);
    }
    json!({"type":"user","uuid":format!("r{n}"),"message":{"role":"user","content":[b]}})
        .to_string()
}

#[test]
fn digest_has_files_with_state_commands_with_status_errors_resolved_and_the_plan() {
    let d = digest_of(&[
        json!({"type":"user","uuid":"p","message":{"role":"user","content":"fix it"}}).to_string(),
        call(1, "Read", json!({"file_path":"src/a.rs"})),
        result(1, None),
        call(2, "Edit", json!({"file_path":"src/a.rs","old_string":"x","new_string":"y"})),
        result(2, Some("String to replace not found in file.")),
        call(3, "Edit", json!({"file_path":"src/a.rs","old_string":"z","new_string":"y"})),
        result(3, None),
        call(4, "Bash", json!({"command":"cargo test"})),
        result(4, Some("Exit code 101\nthread main panicked")),
        call(5, "Bash", json!({"command":"cargo build --release"})),
        result(5, Some("Exit code 2\nlinker failed")),
        call(6, "Bash", json!({"command":"cargo test"})),
        result(6, None),
        call(7, "TodoWrite", json!({"todos":[
            {"content":"read a","status":"completed"},
            {"content":"fix a","status":"in_progress"},
            {"content":"ship","status":"pending"}]})),
        result(7, None),
        call(8, "Read", json!({"file_path":"src/b.rs"})),
        result(8, None),
        call(9, "Read", json!({"file_path":"src/b.rs"})),
        result(9, None),
        call(10, "Write", json!({"file_path":"out.txt","content":"c"})),
        json!({"type":"assistant","uuid":"f","message":{"id":"mf","role":"assistant","content":[{"type":"text","text":"done"}]}}).to_string(),
    ]);
    let want = "\
Prompts:
- fix it

Files read:
- src/b.rs (read 2×)

Files written:
- src/a.rs (2 writes, last: Edit ok)
- out.txt (last: Write no result)

Commands run:
- cargo test (2×) → ok
- cargo build --release → exit 2

Errors:
- Edit src/a.rs: String to replace not found in file. — resolved later
- Bash cargo test: Exit code 101: thread main panicked — resolved later
- Bash cargo build --release: Exit code 2: linker failed — not resolved in this range

Plan (last todo list):
- [x] read a
- [~] fix a
- [ ] ship

Final answer:
done";
    assert_eq!(d.trim_start(), want);
}

#[test]
fn digest_is_bounded() {
    let mut recs = vec![
        json!({"type":"user","uuid":"p","message":{"role":"user","content":"go"}}).to_string(),
    ];
    for n in 1..=2000 {
        let long = "x".repeat(5000);
        recs.push(call(
            n,
            "Bash",
            json!({"command": format!("echo {n} {long}")}),
        ));
        recs.push(result(n, Some(&format!("Exit code 1\n{long}"))));
        recs.push(call(
            100_000 + n,
            "Edit",
            json!({"file_path": format!("f{n}.rs")}),
        ));
        recs.push(result(100_000 + n, None));
    }
    let d = digest_of(&recs);
    assert!(
        d.contains("- … and 1950 more"),
        "commands and files are capped"
    );
    assert!(d.contains("- … and 1980 more"), "errors are capped");
    assert!(d.len() < 40_000, "{} bytes", d.len());
}
