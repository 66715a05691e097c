//! `validate` names, and `cchist repair` fixes, what Claude Code itself writes broken: one
//! fixture per report, built here from the issue's description (each cites its issue), and
//! the whole corpus, which must come out with no such finding and byte-identical.

use std::collections::BTreeMap;

use cchist::findings::validate::validate;
use serde_json::{json, Value};

use crate::common::{corpus_files, own_corpus_len};
use crate::scaling::scaling_inputs::{pipeline, replayed_history};

const NEW_IDS: &[&str] = &[
    "replayed-history",
    "snapshot-id-collision",
    "retry-on-progress",
    "subagent-in-main",
];

fn line(v: Value) -> String {
    v.to_string() + "\n"
}

fn prompt(uuid: &str, parent: Option<&str>, text: &str) -> String {
    line(
        json!({"type":"user","uuid":uuid,"parentUuid":parent,"isSidechain":false,
        "message":{"role":"user","content":text}}),
    )
}

fn answer(uuid: &str, parent: &str, text: &str) -> String {
    line(
        json!({"type":"assistant","uuid":uuid,"parentUuid":parent,"isSidechain":false,
        "message":{"id":format!("msg-{uuid}"),"role":"assistant","content":[{"type":"text","text":text}]}}),
    )
}

fn repair(data: &[u8]) -> Vec<u8> {
    crate::common::run_in_memory(&pipeline("@repair"), data, false)
}

fn rules(data: &[u8]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for f in validate(data) {
        *m.entry(f.rule).or_default() += 1;
    }
    m
}

/// The message of the first finding `rule`.
fn message(data: &[u8], rule: &str) -> String {
    validate(data)
        .into_iter()
        .find(|f| f.rule == rule)
        .unwrap_or_else(|| panic!("no {rule} finding"))
        .message
}

fn reach(data: &[u8]) -> (usize, usize) {
    let recs = cchist::io::framing::lines(data, 1)
        .map(cchist::transcript::record::Record::from_line)
        .collect();
    let s = cchist::transcript::session::Session::new(recs);
    let r = cchist::transcript::damage::resume_reach(&s);
    (r.reached, r.total)
}

fn records(data: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(data)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_uuid<'v>(recs: &'v [Value], uuid: &str) -> Vec<&'v Value> {
    recs.iter().filter(|r| r["uuid"] == uuid).collect()
}

/// claude-code#92089: a second `/compact` in one process re-appends the history the first
/// summarized; the continuation hangs from the copy, so resume skips everything between the
/// two compactions. After the repair one copy is left and resume reaches every message.
#[test]
fn replayed_history_after_a_second_compact() {
    let n = 5;
    let input = replayed_history(n);
    let total = 2 * n + 2 * n + 2 + 2; // turns before and between, two summaries, the continuation
    assert_eq!(reach(input.as_bytes()), (2 * n + 2, total));
    let m = message(input.as_bytes(), "replayed-history");
    assert!(
        m.contains(&format!(
            "resume reaches {} of {total} messages ({total} after `cchist repair`)",
            2 * n + 2
        )),
        "{m}"
    );
    // One finding for the replay, not one duplicate-uuid per copy.
    assert_eq!(rules(input.as_bytes()).get("duplicate-uuid"), None);

    let out = repair(input.as_bytes());
    assert_eq!(
        rules(&out),
        BTreeMap::new(),
        "{}",
        String::from_utf8_lossy(&out)
    );
    assert_eq!(reach(&out), (total, total));
    let recs = records(&out);
    assert_eq!(recs.len(), records(input.as_bytes()).len() - 2 * n);
    assert_eq!(by_uuid(&recs, "a-p0").len(), 1);
    assert_eq!(by_uuid(&recs, "c-p0")[0]["parentUuid"], "s2");
    let b2 = by_uuid(&recs, "b2")[0];
    let last_b = format!("b-a{}", n - 1);
    assert_eq!(b2["logicalParentUuid"], last_b.as_str());
    let seg = &b2["compactMetadata"]["preservedSegment"];
    assert_eq!(
        (&seg["headUuid"], &seg["tailUuid"]),
        (&json!(last_b), &json!(last_b))
    );
    assert_eq!(
        b2["compactMetadata"]["preservedMessages"]["uuids"],
        json!([last_b])
    );
    // The first boundary names the originals, rightly, and keeps its bytes.
    let b1_in = input
        .lines()
        .find(|l| l.contains(r#""uuid":"b1""#))
        .unwrap();
    assert!(String::from_utf8_lossy(&out).contains(b1_in));
    // Repairing again changes nothing.
    assert_eq!(repair(&out), out);
}

/// claude-code#24304: a `file-history-snapshot`'s `messageId` is the next message's uuid and
/// that message's parent is not in the file: resume shows only what follows.
#[test]
fn snapshot_collision_with_a_dangling_parent() {
    let snapshot = line(json!({"type":"file-history-snapshot","messageId":"p2",
        "snapshot":{"messageId":"p2","trackedFileBackups":{},"timestamp":"2026-01-01T00:00:00Z"},
        "isSnapshotUpdate":false}));
    let input = [
        prompt("p0", None, "one"),
        answer("a0", "p0", "1"),
        prompt("p1", Some("a0"), "two"),
        answer("a1", "p1", "2"),
        snapshot,
        prompt("p2", Some("never-written"), "three"),
        answer("a2", "p2", "3"),
    ]
    .concat();
    let found = rules(input.as_bytes());
    assert_eq!(found.get("snapshot-id-collision"), Some(&1), "{found:?}");
    // The dangling parent is this finding's, not a second one.
    assert_eq!(found.get("dangling-parent"), None, "{found:?}");
    assert!(message(input.as_bytes(), "snapshot-id-collision")
        .contains("resume reaches 2 of 6 messages"));
    let out = repair(input.as_bytes());
    assert_eq!(rules(&out), BTreeMap::new());
    assert_eq!(reach(&out), (6, 6));
    assert_eq!(by_uuid(&records(&out), "p2")[0]["parentUuid"], "a1");
    // Only that one line changed.
    let changed = String::from_utf8_lossy(&out)
        .lines()
        .zip(input.lines())
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(changed, 1);
}

/// claude-code#36583: a snapshot carrying a message's uuid, written before the message, takes
/// its place for every child (a quarter of the history unreachable in the report).
#[test]
fn snapshot_carrying_a_message_uuid() {
    let snapshot = line(
        json!({"type":"file-history-snapshot","uuid":"p1","messageId":"p1",
        "snapshot":{"messageId":"p1","trackedFileBackups":{},"timestamp":"2026-01-01T00:00:00Z"},
        "isSnapshotUpdate":true}),
    );
    let input = [
        prompt("p0", None, "one"),
        answer("a0", "p0", "1"),
        snapshot,
        prompt("p1", Some("a0"), "two"),
        answer("a1", "p1", "2"),
    ]
    .concat();
    assert_eq!(
        rules(input.as_bytes()).get("snapshot-id-collision"),
        Some(&1)
    );
    assert_eq!(reach(input.as_bytes()).0, 1);
    let out = repair(input.as_bytes());
    assert_eq!(
        rules(&out),
        BTreeMap::new(),
        "{}",
        String::from_utf8_lossy(&out)
    );
    assert_eq!(reach(&out), (4, 4));
    let recs = records(&out);
    assert_ne!(recs[2]["uuid"], "p1");
    assert_eq!(recs[2]["messageId"], "p1");
}

/// claude-code#37437: a 403 auto-retry re-sent the prompt parented on a sub-agent `progress`
/// row (whose own parent is the sub-agent's record, in another file): on resume the earlier
/// history is gone.
#[test]
fn retry_parented_on_a_subagent_progress_row() {
    let progress = line(
        json!({"type":"progress","uuid":"pr","parentUuid":"agent-record",
        "isSidechain":false,"toolUseID":"agent_msg_1","parentToolUseID":"toolu_1",
        "data":{"type":"agent_progress","agentId":"a1b2c3","prompt":"look around"}}),
    );
    let input = [
        prompt("p0", None, "one"),
        answer("a0", "p0", "1"),
        progress,
        prompt("p1", Some("pr"), "two (retried)"),
        answer("a1", "p1", "2"),
    ]
    .concat();
    assert!(message(input.as_bytes(), "retry-on-progress").contains("resume reaches 2 of 4"));
    let out = repair(input.as_bytes());
    let left = rules(&out);
    assert_eq!(left.get("retry-on-progress"), None);
    assert_eq!(reach(&out), (4, 4));
    assert_eq!(by_uuid(&records(&out), "p1")[0]["parentUuid"], "a0");
    // The progress row is left as Claude Code wrote it.
    assert!(String::from_utf8_lossy(&out).contains(r#""uuid":"pr","parentUuid":"agent-record""#));
}

fn side(u: &str, p: Option<&str>, text: &str) -> String {
    line(
        json!({"type":"user","uuid":u,"parentUuid":p,"isSidechain":true,"agentId":"a9f3",
        "message":{"role":"user","content":text}}),
    )
}

/// claude-code#23373: sub-agent records written into the main file. Named by `validate`; on
/// standard output (one file only) repair leaves them where they are.
#[test]
fn subagent_records_in_the_main_file() {
    let input = [
        prompt("p0", None, "one"),
        side("s0", None, "sub-agent task"),
        side("s1", Some("s0"), "sub-agent step"),
        answer("a0", "p0", "1"),
    ]
    .concat();
    let m = message(input.as_bytes(), "subagent-in-main");
    assert!(m.contains("2 records of sub-agent a9f3"), "{m}");
    assert!(m.contains("subagents/agent-a9f3.jsonl"), "{m}");
    assert_eq!(repair(input.as_bytes()), input.as_bytes());
}

fn repair_cmd(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let mut all: Vec<&std::ffi::OsStr> = vec!["repair".as_ref()];
    all.extend_from_slice(args);
    crate::common::run(&all)
}

/// `cchist repair -i --force p`, which must succeed.
fn repair_in_place(p: &std::path::Path) {
    let out = repair_cmd(&["-i".as_ref(), "--force".as_ref(), p.as_os_str()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A session `<dir>/<id>.jsonl` with sub-agent a9f3's records among its own.
fn session_with_subagent_records(dir: &std::path::Path) -> (std::path::PathBuf, String, String) {
    let main = [prompt("p0", None, "one"), answer("a0", "p0", "1")];
    let sub = [
        side("s0", None, "sub-agent task"),
        side("s1", Some("s0"), "sub-agent step"),
    ];
    let input = [
        main[0].clone(),
        sub[0].clone(),
        sub[1].clone(),
        main[1].clone(),
    ]
    .concat();
    let p = dir.join("5d1c0b7e-0000-4000-8000-000000000023.jsonl");
    std::fs::write(&p, &input).unwrap();
    (p, main.concat(), sub.concat())
}

/// In place, the records move to `<id>/subagents/agent-a9f3.jsonl` as they are, in file
/// order; the main file keeps the rest byte for byte; `validate` is clean; `undo` puts the
/// records back and removes the file it created.
#[test]
fn subagent_records_move_to_their_file_in_place_and_undo_moves_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let (p, main, sub) = session_with_subagent_records(dir.path());
    let input = std::fs::read(&p).unwrap();
    let moved = p.with_extension("").join("subagents/agent-a9f3.jsonl");
    // A dry run says what would move and writes nothing.
    let dry = repair_cmd(&["--dry-run".as_ref(), p.as_os_str()]);
    let said =
        String::from_utf8_lossy(&dry.stderr).into_owned() + &String::from_utf8_lossy(&dry.stdout);
    assert!(said.contains("subagents/agent-a9f3.jsonl"), "{said}");
    assert!(!moved.exists() && !p.with_extension("").exists());
    assert_eq!(std::fs::read(&p).unwrap(), input);
    let diff = repair_cmd(&["--diff".as_ref(), p.as_os_str()]);
    let shown = String::from_utf8_lossy(&diff.stdout);
    assert!(
        shown.contains("2 records move to subagents/agent-a9f3.jsonl"),
        "{shown}"
    );
    assert!(!p.with_extension("").exists());

    let out = repair_cmd(&[
        "-i".as_ref(),
        "--backup".as_ref(),
        "--force".as_ref(),
        p.as_os_str(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&p).unwrap(), main);
    assert_eq!(std::fs::read_to_string(&moved).unwrap(), sub);
    use std::os::unix::fs::PermissionsExt;
    let mode = |f: &std::path::Path| std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&moved), mode(&p), "the session's mode");
    assert_eq!(mode(moved.parent().unwrap()), 0o700, "an owner-only folder");
    assert!(!rules(main.as_bytes()).contains_key("subagent-in-main"));
    // Again: nothing left to move, nothing changes.
    repair_in_place(&p);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), main);

    let undo = crate::common::run(&[
        "undo".as_ref(),
        "--force".as_ref(),
        "--file".as_ref(),
        p.as_os_str(),
    ]);
    assert_eq!(
        undo.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&undo.stderr)
    );
    assert_eq!(std::fs::read(&p).unwrap(), input);
    assert!(!moved.exists(), "undo removes the file the edit created");
}

/// Nothing is merged into a file Claude Code wrote, nothing written through a link, and an
/// agent id that is not a plain word names no file: the records stay, reported.
#[test]
fn subagent_records_stay_when_their_file_exists_or_cannot_be_named() {
    // The sub-agent's file exists.
    let dir = tempfile::tempdir().unwrap();
    let (p, _, _) = session_with_subagent_records(dir.path());
    let input = std::fs::read(&p).unwrap();
    let subdir = p.with_extension("").join("subagents");
    std::fs::create_dir_all(&subdir).unwrap();
    std::fs::write(subdir.join("agent-a9f3.jsonl"), "{}\n").unwrap();
    repair_in_place(&p);
    assert_eq!(std::fs::read(&p).unwrap(), input);
    assert_eq!(
        std::fs::read(subdir.join("agent-a9f3.jsonl")).unwrap(),
        b"{}\n"
    );

    // The companion folder is a link.
    let dir = tempfile::tempdir().unwrap();
    let (p, _, _) = session_with_subagent_records(dir.path());
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), p.with_extension("")).unwrap();
    // Not followed, and said: the run is incomplete (exit 2), the records stay.
    let out = repair_cmd(&["-i".as_ref(), "--force".as_ref(), p.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
    assert_eq!(std::fs::read(&p).unwrap(), input);
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);

    // An agent id that reads as a secret would put it into a file name.
    let dir = tempfile::tempdir().unwrap();
    let p = dir
        .path()
        .join("5d1c0b7e-0000-4000-8000-000000000026.jsonl");
    let token = format!("ghp_{}", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8");
    let input = [
        prompt("p0", None, "one"),
        line(
            json!({"type":"user","uuid":"s0","parentUuid":null,"isSidechain":true,
            "agentId":token,"message":{"role":"user","content":"task"}}),
        ),
        answer("a0", "p0", "1"),
    ]
    .concat();
    std::fs::write(&p, &input).unwrap();
    repair_in_place(&p);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), input);
    assert!(!p.with_extension("").exists());

    // An agent id that could name a path.
    let dir = tempfile::tempdir().unwrap();
    let p = dir
        .path()
        .join("5d1c0b7e-0000-4000-8000-000000000024.jsonl");
    let input = [
        prompt("p0", None, "one"),
        line(
            json!({"type":"user","uuid":"s0","parentUuid":null,"isSidechain":true,
            "agentId":"../../x","message":{"role":"user","content":"task"}}),
        ),
        answer("a0", "p0", "1"),
    ]
    .concat();
    std::fs::write(&p, &input).unwrap();
    repair_in_place(&p);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), input);
    assert!(!p.with_extension("").exists() && !dir.path().join("x").exists());
}

/// What leaves the file is redacted first, with everything the session knows: a secret found
/// on a main-chain line after the sub-agent's records, echoed bare in one of them, is
/// replaced in the file they move to (`redact` then `repair`, in place).
#[test]
fn moved_records_carry_no_secret_the_session_found() {
    let dir = tempfile::tempdir().unwrap();
    let secret = format!("wJalrXUtnFEMI{}bPxRfiCYEXAMPLEKEY9", "/K7MDENG/");
    let p = dir
        .path()
        .join("5d1c0b7e-0000-4000-8000-000000000025.jsonl");
    let input = [
        prompt("p0", None, "one"),
        side("s0", None, &format!("the value is {secret} as noted")),
        answer(
            "a0",
            "p0",
            &format!("export AWS_SECRET_ACCESS_KEY=\"{secret}\""),
        ),
    ]
    .concat();
    std::fs::write(&p, &input).unwrap();
    let pipe = dir.path().join("p.toml");
    std::fs::write(
        &pipe,
        "version = 1\n[[stage]]\ntype = \"repair\"\n[[stage]]\ntype = \"redact\"\n",
    )
    .unwrap();
    let out = crate::common::run(&[
        "run".as_ref(),
        "-p".as_ref(),
        pipe.as_os_str(),
        "-i".as_ref(),
        "--force".as_ref(),
        p.as_os_str(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let moved = p.with_extension("").join("subagents/agent-a9f3.jsonl");
    let main = std::fs::read_to_string(&p).unwrap();
    let sub = std::fs::read_to_string(&moved).unwrap();
    assert!(
        !main.contains(&secret) && !main.contains("\"s0\""),
        "{main}"
    );
    assert!(
        sub.contains("\"s0\"") && sub.contains("the value is"),
        "{sub}"
    );
    assert!(!sub.contains(&secret), "{sub}");
}

/// No false positive: no corpus session has any of these findings, and repair writes each one
/// back byte for byte.
#[test]
fn corpus_has_no_such_damage_and_repair_changes_nothing() {
    let files = corpus_files("");
    assert!(files.len() >= own_corpus_len("") && !files.is_empty());
    for f in files {
        let data = std::fs::read(&f).unwrap();
        let new: Vec<_> = validate(&data)
            .into_iter()
            .filter(|x| NEW_IDS.contains(&x.rule.as_str()))
            .map(|x| format!("{}:{}: {}", x.rule, x.line, x.message))
            .collect();
        assert!(new.is_empty(), "{}: {new:?}", f.display());
        assert!(repair(&data) == data, "{}: repair changed it", f.display());
    }
}

/// `cchist repair` is the shipped pipeline with the usual machinery: a dry run names what it
/// would change, `--in-place` fixes the file and `validate` is clean after.
#[test]
fn repair_command_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, replayed_history(3)).unwrap();
    let v = crate::common::run(&["validate".as_ref(), p.as_os_str()]);
    assert_eq!(v.status.code(), Some(1));
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(text.contains("replayed-history"), "{text}");
    let out = crate::common::run(&[
        "repair".as_ref(),
        "-i".as_ref(),
        "--force".as_ref(),
        p.as_os_str(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::common::run(&["validate".as_ref(), p.as_os_str()]);
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
}

/// States Claude Code writes and handles itself are none of these shapes: the snapshot it
/// writes for every prompt (its `messageId` is the prompt's uuid), a prompt hanging from a
/// hook's progress row, one compaction, a uuid repeated once.
#[test]
fn states_claude_code_writes_are_left_alone() {
    let snapshot = line(json!({"type":"file-history-snapshot","messageId":"p1",
        "snapshot":{"messageId":"p1","trackedFileBackups":{},"timestamp":"2026-01-01T00:00:00Z"},
        "isSnapshotUpdate":false}));
    let hook = line(
        json!({"type":"progress","uuid":"hp","parentUuid":"a0","isSidechain":false,
        "data":{"type":"hook_progress","hookEvent":"UserPromptSubmit"}}),
    );
    let normal = [
        prompt("p0", None, "one"),
        answer("a0", "p0", "1"),
        snapshot,
        prompt("p1", Some("a0"), "two"),
        answer("a1", "p1", "2"),
        hook,
        prompt("p2", Some("hp"), "three"),
        answer("a2", "p2", "3"),
    ]
    .concat();
    assert_eq!(rules(normal.as_bytes()), BTreeMap::new());
    assert_eq!(repair(normal.as_bytes()), normal.as_bytes());

    // Replayed history needs a second compaction: copies after the first one only are
    // duplicate uuids (what relink and validate already name), left to them.
    let one_compaction: String = replayed_history(3)
        .lines()
        .filter(|l| !l.contains(r#""uuid":"b2""#))
        .map(|l| l.to_string() + "\n")
        .collect();
    let found = rules(one_compaction.as_bytes());
    assert_eq!(found.get("replayed-history"), None, "{found:?}");
    assert!(found.contains_key("duplicate-uuid"), "{found:?}");
    assert_eq!(repair(one_compaction.as_bytes()), one_compaction.as_bytes());
}

/// A third `/compact` in the same process replays the same history again: each replay's rows
/// hang from their own compaction after the repair.
#[test]
fn replayed_history_after_a_third_compact() {
    let two = replayed_history(3);
    let first: String = two.lines().take(6).map(|l| l.to_string() + "\n").collect();
    let b2 = two.lines().find(|l| l.contains(r#""uuid":"b2""#)).unwrap();
    let s2 = two.lines().find(|l| l.contains(r#""uuid":"s2""#)).unwrap();
    let input = two.clone()
        + &(b2
            .replace(r#""uuid":"b2""#, r#""uuid":"b3""#)
            .replace(r#""s2""#, r#""s3""#)
            + "\n")
        + &(s2
            .replace(r#""uuid":"s2""#, r#""uuid":"s3""#)
            .replace(r#""parentUuid":"b2""#, r#""parentUuid":"b3""#)
            + "\n")
        + &first
        + &prompt("d-p0", Some("a-a2"), "after the third")
        + &answer("d-a0", "d-p0", "ok");
    assert_eq!(rules(input.as_bytes()).get("replayed-history"), Some(&2));
    let out = repair(input.as_bytes());
    assert_eq!(
        rules(&out),
        BTreeMap::new(),
        "{}",
        String::from_utf8_lossy(&out)
    );
    let recs = records(&out);
    assert_eq!(by_uuid(&recs, "c-p0")[0]["parentUuid"], "s2");
    assert_eq!(by_uuid(&recs, "d-p0")[0]["parentUuid"], "s3");
    assert_eq!(by_uuid(&recs, "b3")[0]["logicalParentUuid"], "c-a0");
    let (reached, total) = reach(&out);
    assert_eq!(reached, total);
}
