//! Property: `relink` on random small damaged sessions (assistant messages split in pieces,
//! pieces on side branches or without a uuid, unanswered and orphan tool calls, last-prompts
//! naming any record, parents pointing anywhere: forks, loops, missing records) leaves a
//! session that validates, answers every tool_use, and is left as it is by a second relink.

use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::Origin;
use cchist::findings::validate::validate;
use cchist::io::output::{Sink, SpanWriter};
use cchist::stages::relink::{Relink, RelinkOptions};
use proptest::prelude::*;
use serde_json::{json, Value};

fn relink(data: &[u8]) -> Vec<u8> {
    let p = Pipeline::new(
        vec![Box::new(Relink::new(RelinkOptions::default()))],
        OnInvalid::Keep,
        "relink".into(),
    );
    let mut out = Vec::new();
    let mut sink = SpanWriter::new(&mut out);
    p.run_buffer(data, &Origin::stdin(), &mut sink).unwrap();
    sink.finish().unwrap();
    drop(sink);
    out
}

/// What a generated record is.
#[derive(Debug, Clone)]
enum What {
    Prompt,
    /// A piece of assistant message `msg`, holding a tool_use when `tool` is set.
    Piece {
        msg: u8,
        tool: bool,
    },
    /// A tool_result answering the tool_use of record `of` (none there: an orphan).
    Result {
        of: usize,
    },
    /// A last-prompt naming record `leaf`.
    LastPrompt {
        leaf: usize,
    },
    System,
}

/// Where a record's `parentUuid` points.
#[derive(Debug, Clone)]
enum Parent {
    Null,
    Previous,
    /// Record `k` (any, so later ones and itself too: forks and loops).
    Record(usize),
    Missing,
}

#[derive(Debug, Clone)]
struct Rec {
    what: What,
    parent: Parent,
    /// 0: main chain; 1: a sidechain of agent a1; 2: of agent a2.
    branch: u8,
    has_uuid: bool,
}

fn uuid(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

fn session(recs: &[Rec]) -> Vec<u8> {
    let n = recs.len();
    let mut out = Vec::new();
    for (i, r) in recs.iter().enumerate() {
        let mut v = match &r.what {
            What::Prompt => {
                json!({"type": "user", "message": {"role": "user", "content": "do it"}})
            }
            What::Piece { msg, tool } => {
                // A record without a uuid cannot be answered (nothing can hang from it): only
                // pieces with one hold calls.
                let block = if *tool && r.has_uuid {
                    json!({"type": "tool_use", "id": format!("toolu_{i}"), "name": "Bash", "input": {"command": "ls"}})
                } else {
                    json!({"type": "text", "text": "ok"})
                };
                json!({"type": "assistant", "message": {"id": format!("msg_{msg}"), "role": "assistant", "model": "m", "content": [block]}})
            }
            What::Result { of } => json!({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{}", of % n), "content": "x"}]}}),
            What::LastPrompt { leaf } => {
                json!({"type": "last-prompt", "lastPrompt": "do it", "leafUuid": uuid(leaf % n), "sessionId": "s"})
            }
            What::System => json!({"type": "system", "subtype": "x", "content": "y"}),
        };
        if !matches!(r.what, What::LastPrompt { .. }) {
            let parent = match r.parent {
                Parent::Null => Value::Null,
                Parent::Previous if i == 0 => Value::Null,
                Parent::Previous => json!(uuid(i - 1)),
                Parent::Record(k) => json!(uuid(k % n)),
                Parent::Missing => json!("ffffffff-dead-4bad-8bad-000000000000"),
            };
            v["parentUuid"] = parent;
            if r.has_uuid || !matches!(r.what, What::Piece { .. }) {
                v["uuid"] = json!(uuid(i));
            }
            v["isSidechain"] = json!(r.branch > 0);
            if r.branch > 0 {
                v["agentId"] = json!(format!("a{}", r.branch));
            }
            v["sessionId"] = json!("s");
            v["timestamp"] = json!(format!("2026-01-01T00:00:{:02}.000Z", i % 60));
        }
        out.extend_from_slice(v.to_string().as_bytes());
        out.push(b'\n');
    }
    out
}

fn what() -> impl Strategy<Value = What> {
    prop_oneof![
        1 => Just(What::Prompt),
        4 => (0u8..3, any::<bool>()).prop_map(|(msg, tool)| What::Piece { msg, tool }),
        2 => (0usize..16).prop_map(|of| What::Result { of }),
        1 => (0usize..16).prop_map(|leaf| What::LastPrompt { leaf }),
        1 => Just(What::System),
    ]
}

fn parent() -> impl Strategy<Value = Parent> {
    prop_oneof![
        1 => Just(Parent::Null),
        6 => Just(Parent::Previous),
        2 => (0usize..16).prop_map(Parent::Record),
        1 => Just(Parent::Missing),
    ]
}

fn rec() -> impl Strategy<Value = Rec> {
    (
        what(),
        parent(),
        prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
        prop_oneof![9 => Just(true), 1 => Just(false)],
    )
        .prop_map(|(what, parent, branch, has_uuid)| Rec {
            what,
            parent,
            branch,
            has_uuid,
        })
}

proptest! {
    // PROPTEST_CASES=N runs more.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn relink_repairs_random_small_sessions_idempotently(
        recs in prop::collection::vec(rec(), 1..14),
    ) {
        let data = session(&recs);
        let out = relink(&data);
        let text = String::from_utf8_lossy(&out).into_owned();
        // relink repairs what it finds except a message split across branches, or a piece
        // with no uuid (nothing can hang from it): those are reported, not repaired. A
        // sidechain record with an agentId in the main file (the generator writes them, the CLI
        // of today does not: claude-code#23373) is reported too; moving it is not relink's.
        let lines: Vec<&str> = text.lines().collect();
        let unfixable = |f: &cchist::findings::Finding| {
            if f.rule == "subagent-in-main" {
                return true;
            }
            if f.rule != "split-message" {
                return false;
            }
            let v: Value = serde_json::from_str(lines[f.line - 1]).unwrap();
            let mid = v["message"]["id"].as_str().unwrap_or_default();
            let branches: std::collections::HashSet<u8> = recs
                .iter()
                .filter(|r| matches!(r.what, What::Piece { msg, .. } if format!("msg_{msg}") == mid))
                .map(|r| r.branch)
                .collect();
            let uuidless = recs
                .iter()
                .any(|r| matches!(r.what, What::Piece { msg, .. } if format!("msg_{msg}") == mid) && !r.has_uuid);
            branches.len() > 1 || uuidless
        };
        let findings: Vec<_> = validate(&out).into_iter().filter(|f| !unfixable(f)).collect();
        prop_assert!(findings.is_empty(), "{findings:?}\n{text}");
        prop_assert!(
            !validate(&out).iter().any(|f| f.rule == "unpaired-tool-use"),
            "{text}"
        );
        let again = relink(&out);
        prop_assert!(again == out, "not idempotent:\n{text}\n{}", String::from_utf8_lossy(&again));
    }
}

/// A later piece without a uuid, hanging below the piece that made the call, cannot carry the
/// synthetic result: the call is answered after the last piece that has a uuid.
#[test]
fn a_call_whose_last_piece_has_no_uuid_is_answered() {
    let piece = |tool: bool, has_uuid: bool, parent: Parent| Rec {
        what: What::Piece { msg: 1, tool },
        parent,
        branch: 0,
        has_uuid,
    };
    let prompt = Rec {
        what: What::Prompt,
        parent: Parent::Previous,
        branch: 0,
        has_uuid: true,
    };
    let data = session(&[
        piece(true, true, Parent::Null),
        prompt,
        piece(false, false, Parent::Previous),
    ]);
    let out = relink(&data);
    let text = String::from_utf8_lossy(&out);
    assert!(
        !validate(&out).iter().any(|f| f.rule == "unpaired-tool-use"),
        "{text}"
    );
    assert_eq!(relink(&out), out);
}
