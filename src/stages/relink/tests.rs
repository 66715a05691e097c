use super::*;
use crate::error::Origin;
use crate::io::framing::lines;

fn run(text: &str, edit: impl FnOnce(&mut Session<'_>)) -> String {
    let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    edit(&mut s);
    let mut cx = Cx::new(Origin::stdin());
    relink(&mut s, &mut cx).unwrap();
    let mut out = Vec::new();
    for r in &s.records {
        r.write_to(&mut out);
    }
    String::from_utf8(out).unwrap()
}

/// The output validates clean and a second relink changes nothing.
fn assert_valid_and_idempotent(out: &str) {
    assert_valid(out);
    assert_eq!(run(out, |_| {}), out, "idempotent");
}

/// The output validates clean.
fn assert_valid(out: &str) {
    assert!(
        crate::findings::validate::validate(out.as_bytes()).is_empty(),
        "{out}"
    );
}

/// A piece of assistant message `m` with one text block.
fn piece(uuid: &str, parent: &str, text: &str) -> String {
    format!(
        r#"{{"type":"assistant","uuid":"{uuid}","parentUuid":"{parent}","message":{{"id":"m","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}}}}"#
    ) + "\n"
}

const CHAIN: &str = concat!(
    r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
    "\n",
    r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t","name":"X","input":{}}]}}"#,
    "\n",
    r#"{"type":"user","uuid":"3","parentUuid":"2","sourceToolAssistantUUID":"2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#,
    "\n",
    r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"n","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    "\n",
    r#"{"type":"last-prompt","lastPrompt":"hi","leafUuid":"4"}"#,
    "\n",
);

#[test]
fn untouched_file_is_identical() {
    assert_eq!(run(CHAIN, |_| {}), CHAIN);
}

#[test]
fn child_of_removed_record_gets_grandparent() {
    let out = run(CHAIN, |s| {
        s.records.remove(3);
    });
    assert!(out.contains(r#""leafUuid":"3""#), "{out}");
    assert_valid(&out);
}

#[test]
fn removed_tool_use_takes_its_result_along() {
    let out = run(CHAIN, |s| {
        s.records.remove(1);
    });
    assert!(!out.contains("tool_result"), "{out}");
    assert!(out.contains(r#""uuid":"4","parentUuid":"1""#), "{out}");
    assert_valid(&out);
}

#[test]
fn removed_result_gets_synthetic_error_result() {
    let out = run(CHAIN, |s| {
        s.records.remove(2);
    });
    let recs: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let syn = &recs[2];
    assert_eq!(syn["parentUuid"], "2");
    assert_eq!(syn["message"]["content"][0]["is_error"], true);
    assert_eq!(syn["message"]["content"][0]["tool_use_id"], "t");
    assert_eq!(syn["sourceToolAssistantUUID"], "2");
    assert_eq!(recs[3]["parentUuid"], syn["uuid"]);
    assert_valid(&out);
}

#[test]
fn dangling_parent_and_cycle_are_repaired() {
    let text = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"gone","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"a","parentUuid":"b","message":{"role":"user","content":"q"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"n","role":"assistant","content":[{"type":"text","text":"y"}]}}"#,
        "\n",
    );
    let out = run(text, |_| {});
    assert!(out.contains(r#""uuid":"2","parentUuid":"1""#), "{out}");
    assert!(out.contains(r#""uuid":"a","parentUuid":"2""#), "{out}");
    assert_valid_and_idempotent(&out);
}

#[test]
fn split_message_pieces_are_joined_and_swapped_when_reversed() {
    // Piece b2 of message m hangs from the prompt beside b1: it is hung from b1.
    let prompt = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n"
    );
    let beside = format!("{prompt}{}{}", piece("b1", "1", "x"), piece("b2", "1", "y"));
    let out = run(&beside, |_| {});
    assert!(out.contains(r#""uuid":"b2","parentUuid":"b1""#), "{out}");
    assert!(out.contains(r#""uuid":"b1","parentUuid":"1""#), "{out}");
    // The earlier piece in the file hangs below the later one: they swap places on the
    // chain (c1 takes c2's old parent, c2 hangs from c1), without a loop.
    let reversed = format!(
        "{prompt}{}{}",
        piece("c1", "c2", "x"),
        piece("c2", "1", "y")
    );
    let out = run(&reversed, |_| {});
    assert!(out.contains(r#""uuid":"c1","parentUuid":"1""#), "{out}");
    assert!(out.contains(r#""uuid":"c2","parentUuid":"c1""#), "{out}");
    assert_valid_and_idempotent(&out);
}

#[test]
fn orphan_result_is_removed() {
    use crate::testkit::{prompt, tool_result};
    let text = prompt("1", None, "hi")
        + &tool_result("2", "1", "zz", "ok")
        + r#"{"type":"assistant","uuid":"3","parentUuid":"2","message":{"id":"n","role":"assistant","content":[{"type":"text","text":"y"}]}}"#
        + "\n";
    let out = run(&text, |_| {});
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.contains(r#""uuid":"3","parentUuid":"1""#), "{out}");
}

/// A record-scoped stage whose `Drop` goes through `Stage::session`'s default.
struct DropType(&'static str);
impl Stage for DropType {
    fn name(&self) -> &'static str {
        "drop-type"
    }
    fn record(&self, rec: &mut Record<'_>, _: &mut Cx) -> Result<crate::stages::Verdict> {
        Ok(if rec.record_type() == Some(self.0) {
            crate::stages::Verdict::Drop
        } else {
            crate::stages::Verdict::Keep
        })
    }
}

#[test]
fn drops_by_record_stages_leave_tombstones() {
    // File order differs from chain order: the progress record's parent is "1", and the
    // record written just before it is the side branch "x".
    let text = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"attachment","uuid":"x","parentUuid":"1"}"#,
        "\n",
        r#"{"type":"progress","uuid":"p","parentUuid":"1"}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"p","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"a"}]}}"#,
        "\n",
    );
    let out = run(text, |s| {
        let mut cx = Cx::new(Origin::stdin());
        DropType("progress").session(s, &mut cx).unwrap();
        s.reindex();
        assert_eq!(s.removed.get("p"), Some(&Some("1".to_string())));
    });
    assert!(out.contains(r#""uuid":"2","parentUuid":"1""#), "{out}");
    // Without the tombstone (a line deleted from the file), the nearest earlier record of
    // the branch is the best guess.
    let cut: String = text
        .lines()
        .filter(|l| !l.contains("progress"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(run(&cut, |_| {}).contains(r#""uuid":"2","parentUuid":"x""#));
}

#[test]
fn empty_message_is_removed_and_summary_without_boundary_is_a_root() {
    let text = concat!(
        r#"{"type":"user","uuid":"s","parentUuid":"gone","isCompactSummary":true,"message":{"role":"user","content":"summary"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"s","message":{"id":"m","role":"assistant","content":[]}}"#,
        "\n",
        r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":"next"}}"#,
        "\n",
    );
    let out = run(text, |_| {});
    assert!(out.contains(r#""uuid":"s","parentUuid":null"#), "{out}");
    assert!(!out.contains(r#""uuid":"2""#), "{out}");
    assert!(out.contains(r#""uuid":"3","parentUuid":"s""#), "{out}");
}

#[test]
fn compact_segment_shrinks_to_survivors() {
    let text = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"a"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"3","parentUuid":"2","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"b"}]}}"#,
        "\n",
        r#"{"type":"system","subtype":"compact_boundary","uuid":"c","parentUuid":null,"logicalParentUuid":"3","compactMetadata":{"trigger":"manual","preservedSegment":{"headUuid":"2","anchorUuid":"s","tailUuid":"3"},"preservedMessages":{"anchorUuid":"s","uuids":["2","3"],"allUuids":["2","3"]}}}"#,
        "\n",
        r#"{"type":"user","uuid":"s","parentUuid":"c","isCompactSummary":true,"message":{"role":"user","content":"summary"}}"#,
        "\n",
    );
    let out = run(text, |s| {
        s.records.remove(2);
    });
    let b: Value = serde_json::from_str(out.lines().nth(2).unwrap()).unwrap();
    assert_eq!(b["logicalParentUuid"], "2");
    assert_eq!(b["compactMetadata"]["preservedSegment"]["tailUuid"], "2");
    assert_eq!(b["compactMetadata"]["preservedSegment"]["headUuid"], "2");
    assert_eq!(
        b["compactMetadata"]["preservedMessages"]["uuids"],
        json!(["2"])
    );
    let out = run(text, |s| {
        s.records.drain(1..3);
    });
    let b: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
    assert_eq!(b["logicalParentUuid"], "1");
    assert!(
        b["compactMetadata"].get("preservedSegment").is_none(),
        "{b}"
    );
    assert_eq!(
        b["compactMetadata"]["preservedMessages"]["uuids"],
        json!([])
    );
}
