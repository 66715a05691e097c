//! Every registered stage, with its default options (`keep_last = 2` for one that needs a range), on sessions built from the fuzz input
//! (records of every kind, references forward, backward, to themselves and to nothing, tool
//! calls and results paired or not, long outputs, invalid lines). A stage may refuse a file
//! with an error; it may not panic, and it may never drop a line that is not valid JSON
//! (`on_invalid_json = "keep"` passes those through).
#![no_main]

use cchist::error::Origin;
use cchist::io::output::{Sink, SpanWriter};
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::transcript::record::check_json;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::OnceLock;

fn uuid(i: usize) -> String {
    format!("00000000-0000-4000-8000-{i:012}")
}

/// A session from fuzz bytes, 4 bytes a record.
pub fn build(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let n = data.len() / 4 + 1;
    for (i, c) in data.chunks(4).enumerate() {
        let b = |k: usize| c.get(k).copied().unwrap_or(0) as usize;
        let parent: Value = match b(1) % 5 {
            0 => Value::Null,
            1 if i > 0 => uuid(b(1) / 5 % i).into(),
            2 => uuid(b(1) / 5 % n).into(), // may be later, or itself
            3 => "dangling-parent".into(),
            _ if i > 0 => uuid(i - 1).into(),
            _ => Value::Null,
        };
        let tool = format!("toolu_{}", b(2) % 6);
        let text = "x".repeat(b(3) * 97);
        let side = b(2) % 7 == 0;
        let mut v = match b(0) % 13 {
            0 => {
                json!({"type": "user", "message": {"role": "user", "content": format!("prompt {i} {text}")}})
            }
            1 => {
                json!({"type": "assistant", "message": {"id": format!("msg_{}", b(2) % 4), "role": "assistant",
                "content": [{"type": "text", "text": format!("answer {i}")}]}})
            }
            2 => {
                json!({"type": "assistant", "message": {"id": format!("msg_{}", b(2) % 4), "role": "assistant",
                "content": [{"type": "tool_use", "id": tool, "name": if b(3) % 2 == 0 {"Read"} else {"Bash"},
                    "input": {"file_path": "/a"}}]}})
            }
            3 => {
                json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result",
                "tool_use_id": tool, "content": text, "is_error": b(3) % 3 == 0}]},
                "toolUseResult": {"stdout": "y".repeat(b(3) * 50)},
                "sourceToolAssistantUUID": uuid(b(1) % n)})
            }
            4 => {
                json!({"type": "progress", "toolUseID": tool, "parentToolUseID": tool, "data": {"type": "bash_progress"}})
            }
            5 => {
                json!({"type": "system", "subtype": "compact_boundary", "logicalParentUuid": uuid(b(1) % n),
                "compactMetadata": {"trigger": "auto", "preTokens": 1}})
            }
            6 => json!({"type": "summary", "summary": "s", "leafUuid": uuid(b(1) % n)}),
            7 => json!({"type": "last-prompt", "lastPrompt": "p", "leafUuid": uuid(b(1) % n)}),
            8 => {
                // a raw line: whatever the bytes are
                out.extend_from_slice(c);
                out.push(b'\n');
                continue;
            }
            9 => {
                json!({"type": "attachment", "attachment": {"type": if b(3) % 2 == 0 {"hook_success"} else {"environment"}}})
            }
            10 => json!({"type": "user", "message": {"role": "user", "content": [{"type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo".repeat(b(3) + 1)}}]}}),
            11 => {
                json!({"type": "assistant", "message": {"id": format!("msg_{}", b(2) % 4), "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]}})
            }
            _ => json!({"type": "file-history-snapshot", "messageId": uuid(i), "snapshot": {}}),
        };
        let o = v.as_object_mut().unwrap();
        if !matches!(b(0) % 13, 6 | 7 | 12) {
            o.insert("uuid".into(), uuid(i).into());
            o.insert("parentUuid".into(), parent);
            o.insert("isSidechain".into(), side.into());
            o.insert("sessionId".into(), "s".into());
        }
        serde_json::to_writer(&mut out, &v).unwrap();
        out.extend_from_slice(if b(2) % 11 == 0 { b"\r\n" } else { b"\n" });
    }
    out
}

/// One pipeline per registered stage that builds with default options (built once: some
/// stages compile many patterns).
fn pipelines() -> &'static [(&'static str, Pipeline)] {
    static P: OnceLock<Vec<(&'static str, Pipeline)>> = OnceLock::new();
    P.get_or_init(|| {
        cchist::stages::REGISTRY
            .iter()
            .filter_map(|d| {
                let (name, build) = (&d.name, d.build);
                // Default options; a stage that needs a range gets `keep_last = 2`; others that
                // need options are skipped.
                let stage = build(toml::Table::new())
                    .or_else(|_| build(toml::from_str("keep_last = 2").unwrap()))
                    .ok()?;
                Some((
                    *name,
                    Pipeline::new(vec![stage], OnInvalid::Keep, String::new()),
                ))
            })
            .collect()
    })
}

fuzz_target!(|data: &[u8]| {
    let session = build(data);
    let invalid: Vec<&[u8]> = cchist::io::framing::lines(&session, 1)
        .filter(|l| check_json(l.body).is_err())
        .map(|l| l.body)
        .collect();
    for (name, p) in pipelines() {
        let mut out = Vec::new();
        let mut sink = SpanWriter::new(&mut out);
        let ok = p.run_buffer(&session, &Origin::stdin(), &mut sink).is_ok();
        if ok {
            sink.finish().unwrap();
        }
        drop(sink);
        if !ok {
            continue;
        }
        let kept: Vec<&[u8]> = cchist::io::framing::lines(&out, 1)
            .map(|l| l.body)
            .collect();
        for line in &invalid {
            assert!(
                kept.contains(line),
                "stage {name} dropped an invalid line: {:?}",
                String::from_utf8_lossy(line)
            );
        }
    }
});
