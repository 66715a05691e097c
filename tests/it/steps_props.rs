//! Property: for random agentic sessions (prompts, assistant messages split in pieces,
//! parallel tool calls, results written between the pieces) and random step ranges,
//! `summarize-range --steps` leaves a session that validates, keeps every tool_use with its
//! tool_result, and takes or keeps each step whole.

use std::collections::HashSet;

use cchist::error::Origin;
use cchist::findings::validate::validate;
use cchist::stages::summarize::{SummarizeOptions, SummarizeRange};
use cchist::stages::{Cx, Stage};
use cchist::transcript::session::Session;
use proptest::prelude::*;

use crate::common::{session_bytes, session_of, step_uuids};
use serde_json::{json, Value};

/// One assistant message: how many tool calls, and whether its results are written between
/// its pieces (2.1.x streaming) or after them.
#[derive(Debug, Clone)]
struct Msg {
    tools: usize,
    interleaved: bool,
}

fn session_text(turns: &[Vec<Msg>]) -> String {
    let mut out = String::new();
    let mut parent = Value::Null;
    let mut n = 0;
    let mut push = |out: &mut String, parent: &mut Value, mut v: Value| {
        n += 1;
        let uuid = format!("u{n}");
        v["uuid"] = json!(uuid);
        v["parentUuid"] = parent.clone();
        v["sessionId"] = json!("s");
        v["cwd"] = json!("/w");
        v["isSidechain"] = json!(false);
        v["timestamp"] = json!(format!("2026-01-01T00:00:{:02}.000Z", n % 60));
        out.push_str(&v.to_string());
        out.push('\n');
        *parent = json!(uuid);
    };
    let mut tool = 0;
    for (t, msgs) in turns.iter().enumerate() {
        push(
            &mut out,
            &mut parent,
            json!({"type":"user","message":{"role":"user","content":format!("prompt {t}")}}),
        );
        for (m, msg) in msgs.iter().enumerate() {
            let mid = format!("msg_{t}_{m}");
            let piece = |content: Value| json!({"type":"assistant","message":{"id":mid,"role":"assistant","content":[content]}});
            push(
                &mut out,
                &mut parent,
                piece(json!({"type":"text","text":format!("working {t}.{m}")})),
            );
            let mut pending = Vec::new();
            for _ in 0..msg.tools {
                tool += 1;
                let id = format!("toolu_{tool}");
                push(
                    &mut out,
                    &mut parent,
                    piece(
                        json!({"type":"tool_use","id":id,"name":"Bash","input":{"command":format!("echo {tool}")}}),
                    ),
                );
                let result = json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":id,"content":format!("{tool}")}]}});
                if msg.interleaved {
                    push(&mut out, &mut parent, result);
                } else {
                    pending.push(result);
                }
            }
            for r in pending {
                push(&mut out, &mut parent, r);
            }
        }
    }
    out
}

fn arb_turns() -> impl Strategy<Value = Vec<Vec<Msg>>> {
    let msg =
        (0usize..4, any::<bool>()).prop_map(|(tools, interleaved)| Msg { tools, interleaved });
    prop::collection::vec(prop::collection::vec(msg, 0..6), 1..5)
}

fn uuid_steps(data: &[u8]) -> Vec<HashSet<String>> {
    step_uuids(data)
        .into_iter()
        .map(|st| st.into_iter().collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn step_ranges_validate_and_keep_pairs(turns in arb_turns(), a in 1usize..30, len in 0usize..30) {
        let text = session_text(&turns);
        let steps = uuid_steps(text.as_bytes());
        prop_assume!(!steps.is_empty());
        let a = 1 + (a - 1) % steps.len();
        let b = (a + len).min(steps.len());
        let stage = SummarizeRange::new(SummarizeOptions {
            steps: Some(format!("{a}..{b}")),
            text: Some("S".into()),
            ..Default::default()
        })
        .unwrap();
        let mut s = session_of(text.as_bytes());
        stage.session(&mut s, &mut Cx::new(Origin::stdin())).unwrap();
        let out = session_bytes(&s);
        let findings = validate(&out);
        prop_assert!(findings.is_empty(), "{:?}", findings);
        let s = session_of(&out);
        let kept: HashSet<String> = (0..s.records.len())
            .filter_map(|i| s.header(i).and_then(|h| h.uuid().map(str::to_string)))
            .collect();
        // Split assistant messages stay whole: all of a message's pieces are kept or none.
        let orig = session_of(text.as_bytes());
        let pieces = |s: &Session<'_>, mid: &str| {
            (0..s.records.len())
                .filter(|&i| s.header(i).is_some_and(|h| h.message_id() == Some(mid)))
                .count()
        };
        for i in 0..orig.records.len() {
            if let Some(mid) = orig.header(i).and_then(|h| h.message_id().map(str::to_string)) {
                let k = pieces(&s, &mid);
                prop_assert!(k == 0 || k == pieces(&orig, &mid), "message {} split", mid);
            }
        }
        // Pairs stay together.
        let uses: HashSet<&String> = s.tool_uses.keys().collect();
        let results: HashSet<&String> = s.tool_results.keys().collect();
        prop_assert_eq!(uses, results);
        // Each step is wholly kept or wholly gone; the chosen steps are gone.
        for (n, st) in steps.iter().enumerate() {
            let k = st.iter().filter(|u| kept.contains(*u)).count();
            prop_assert!(k == 0 || k == st.len(), "step {} split", n + 1);
            if n + 1 >= a && n < b {
                prop_assert_eq!(k, 0, "step {} kept", n + 1);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A summary command answering `{"summary", "keep"}` with random records of a random step
    /// range: the result validates, pairs stay together, every step is whole or gone, and each
    /// step named in `keep` is kept whole.
    #[test]
    fn command_keep_validates_and_keeps_whole_steps(
        turns in arb_turns(),
        a in 1usize..30,
        len in 0usize..30,
        pick in any::<u64>(),
        at in any::<u64>(),
    ) {
        let text = session_text(&turns);
        let steps = uuid_steps(text.as_bytes());
        prop_assume!(!steps.is_empty());
        let a = 1 + (a - 1) % steps.len();
        let b = (a + len).min(steps.len());
        let mut chosen = Vec::new();
        let mut keep = Vec::new();
        for n in a..=b {
            if pick >> (n % 64) & 1 == 1 {
                let mut st: Vec<&String> = steps[n - 1].iter().collect();
                st.sort();
                chosen.push(n);
                keep.push(st[(at as usize + n) % st.len()].clone());
            }
        }
        let reply = json!({"summary": "S", "keep": keep}).to_string();
        let stage = SummarizeRange::new(SummarizeOptions {
            steps: Some(format!("{a}..{b}")),
            command: Some(format!("cat >/dev/null; printf '%s' '{reply}'")),
            ..Default::default()
        })
        .unwrap();
        let mut s = session_of(text.as_bytes());
        if let Err(e) = stage.session(&mut s, &mut Cx::new(Origin::stdin())) {
            // Keeping every record of the range leaves nothing to summarize: an error.
            prop_assert!(e.to_string().contains("nothing is left to summarize"), "{}", e);
            return Ok(());
        }
        let out = session_bytes(&s);
        let findings = validate(&out);
        prop_assert!(findings.is_empty(), "{:?}", findings);
        let s = session_of(&out);
        let uses: HashSet<&String> = s.tool_uses.keys().collect();
        let results: HashSet<&String> = s.tool_results.keys().collect();
        prop_assert_eq!(uses, results);
        let present: HashSet<String> = (0..s.records.len())
            .filter_map(|i| s.header(i).and_then(|h| h.uuid().map(str::to_string)))
            .collect();
        // One chain: every record is on the path resume follows from the newest one (a kept
        // step must not hang off the summary beside what follows it).
        let on_path: HashSet<usize> = s.logical_path(s.leaf().unwrap()).into_iter().collect();
        prop_assert_eq!(on_path.len(), s.records.len(), "a record fell off the chain");
        for (n, st) in steps.iter().enumerate() {
            let k = st.iter().filter(|u| present.contains(*u)).count();
            prop_assert!(k == 0 || k == st.len(), "step {} split", n + 1);
            if chosen.contains(&(n + 1)) {
                prop_assert_eq!(k, st.len(), "step {} was to be kept", n + 1);
            }
        }
    }
}
