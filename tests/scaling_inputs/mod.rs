//! Generated inputs that grow with `n`, for the scaling test (`tests/scaling.rs`) and the
//! scaling benches (`benches/scaling.rs`): each one is a shape that once made a stage walk
//! the file again per record (quadratic time).

#![allow(dead_code)]

use cchist::engine::config;
use cchist::engine::pipeline::Pipeline;
use cchist::error::Origin;
use cchist::io::output::{Sink, SpanWriter};

/// The pipeline `spec`: `@name` for a built-in spec, else the body of a pipeline file.
pub fn pipeline(spec: &str) -> Pipeline {
    let file = match spec.strip_prefix('@') {
        Some(name) => config::load_spec(name),
        None => config::parse(&format!("version = 1\n{spec}"), &Origin::stdin()),
    };
    file.expect("pipeline spec").pipeline
}

/// Runs `p` over `data` in memory; returns the output's length.
pub fn run(p: &Pipeline, data: &[u8]) -> usize {
    let mut out = Vec::new();
    let mut sink = SpanWriter::new(&mut out);
    p.run_buffer(data, &Origin::stdin(), &mut sink)
        .expect("run");
    sink.finish().unwrap();
    drop(sink);
    out.len()
}

fn user(uuid: &str, parent: Option<&str>, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"type":"user","message":{{"role":"user","content":"{text}"}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w"}}"#
    ) + "\n"
}

fn assistant(uuid: &str, parent: Option<&str>, mid: &str, text: &str) -> String {
    let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
    format!(
        r#"{{"parentUuid":{parent},"isSidechain":false,"type":"assistant","message":{{"id":"{mid}","role":"assistant","content":[{{"type":"text","text":"{text}"}}]}},"uuid":"{uuid}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w"}}"#
    ) + "\n"
}

/// `n` user/assistant records, each with a `parentUuid` that names no record (damage relink
/// repairs by hanging each from the record before it).
pub fn dangling_parents(n: usize) -> String {
    let mut t = String::new();
    for k in 0..n {
        let gone = format!("gone-{k}");
        if k % 2 == 0 {
            t += &user(&format!("u{k}"), Some(&gone), &format!("prompt {k}"));
        } else {
            t += &assistant(&format!("u{k}"), Some(&gone), &format!("m{k}"), "ok");
        }
    }
    t
}

/// `n` prompts, each answered by an assistant message whose `tool_use` has no result (a
/// session cut off mid-call, many times): relink answers each, once walked the whole file per
/// call to find the message's last piece and again to insert after it.
pub fn unanswered_tool_calls(n: usize) -> String {
    let mut t = String::new();
    let mut parent: Option<String> = None;
    for k in 0..n {
        let (u, a) = (format!("u{k}"), format!("a{k}"));
        t += &user(&u, parent.as_deref(), &format!("prompt {k}"));
        t += &(format!(
            r#"{{"parentUuid":"{u}","isSidechain":false,"type":"assistant","message":{{"id":"m{k}","role":"assistant","content":[{{"type":"tool_use","id":"toolu_{k}","name":"Bash","input":{{"command":"ls"}}}}]}},"uuid":"{a}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w"}}"#
        ) + "\n");
        parent = Some(a);
    }
    t
}

/// `n` prompts, each answered by a message in two pieces where the second hangs from the
/// prompt beside the first (an edit left it there): relink hangs it from the first piece, and
/// once walked from the first piece to the root per message to rule out a loop.
pub fn detached_message_pieces(n: usize) -> String {
    let mut t = String::new();
    let mut parent: Option<String> = None;
    for k in 0..n {
        let u = format!("u{k}");
        t += &user(&u, parent.as_deref(), &format!("prompt {k}"));
        t += &assistant(&format!("a{k}"), Some(&u), &format!("m{k}"), "first");
        t += &assistant(&format!("b{k}"), Some(&u), &format!("m{k}"), "second");
        parent = Some(format!("b{k}"));
    }
    t
}

/// A run of `n` `progress` records in one chain, each with a `system` record hanging from
/// it: dropping the run leaves `n` references into it, each once walked up the whole run of
/// tombstones to the first survivor.
pub fn references_into_dropped_run(n: usize) -> String {
    let mut t = user("root", None, "start");
    let mut parent = "root".to_string();
    for k in 0..n {
        t += &format!(
            r#"{{"parentUuid":"{parent}","isSidechain":false,"type":"progress","data":{{"type":"hook_progress"}},"uuid":"p{k}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s"}}"#
        );
        t += "\n";
        parent = format!("p{k}");
    }
    for k in 0..n {
        t += &format!(
            r#"{{"parentUuid":"p{k}","isSidechain":false,"type":"system","subtype":"informational","content":"x","uuid":"s{k}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s"}}"#
        );
        t += "\n";
    }
    t
}

/// `n` pairs of records that name each other as parent (2-cycles).
pub fn parent_two_cycles(n: usize) -> String {
    let mut t = user("root", None, "start");
    for k in 0..n {
        let (a, b) = (format!("a{k}"), format!("b{k}"));
        t += &user(&a, Some(&b), &format!("prompt {k}"));
        t += &assistant(&b, Some(&a), &format!("m{k}"), "ok");
    }
    t
}

/// A short conversation, then `n` progress records (drop-tool-noise drops them) each followed
/// by a line that is not a JSON object (kept, re-anchored to the nearest survivor).
pub fn opaque_after_dropped(n: usize) -> String {
    let mut t = user("p0", None, "start");
    t += &assistant("a0", Some("p0"), "m0", "ok");
    for k in 0..n {
        t += &format!(
            r#"{{"parentUuid":"a0","isSidechain":false,"type":"progress","data":{{"type":"hook_progress","n":{k}}},"uuid":"g{k}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s"}}"#
        );
        t += "\n";
        t += &format!("[{k}]\n");
    }
    t
}

/// `n` turns, each a distinct prompt, a Bash call with a distinct command and its result, and
/// an answer (summarize-range and the PreCompact digest list them all, deduplicated).
pub fn distinct_turns(n: usize) -> String {
    let mut t = String::new();
    let mut parent: Option<String> = None;
    for k in 0..n {
        let (p, a, r, f) = (
            format!("p{k}"),
            format!("a{k}"),
            format!("r{k}"),
            format!("f{k}"),
        );
        t += &user(&p, parent.as_deref(), &format!("prompt number {k}"));
        t += &format!(
            r#"{{"parentUuid":"{p}","isSidechain":false,"type":"assistant","message":{{"id":"m{k}","role":"assistant","content":[{{"type":"tool_use","id":"t{k}","name":"Bash","input":{{"command":"echo {k}"}}}}]}},"uuid":"{a}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w"}}"#
        );
        t += "\n";
        t += &format!(
            r#"{{"parentUuid":"{a}","isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{k}","content":"out {k}","is_error":true}}]}},"uuid":"{r}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w"}}"#
        );
        t += "\n";
        t += &assistant(&f, Some(&r), &format!("n{k}"), &format!("answer {k}"));
        parent = Some(f);
    }
    t
}

/// `n` distinct prompts in one chain (the digest lists each once).
pub fn distinct_prompts(n: usize) -> String {
    let mut t = String::new();
    for k in 0..n {
        let parent = (k > 0).then(|| format!("p{}", k - 1));
        t += &user(
            &format!("p{k}"),
            parent.as_deref(),
            &format!("prompt number {k}"),
        );
    }
    t
}

/// Damage of every kind validate reports, `n` times: dangling parents, 2-cycles, duplicate
/// uuids, unanswered tool calls.
pub fn damaged(n: usize) -> String {
    let mut t = String::new();
    for k in 0..n {
        t += &user(&format!("d{k}"), Some(&format!("gone-{k}")), "dangling");
        t += &user(&format!("x{k}"), Some(&format!("y{k}")), "cycle");
        t += &assistant(
            &format!("y{k}"),
            Some(&format!("x{k}")),
            &format!("m{k}"),
            "cycle",
        );
        t += &user(&format!("d{k}"), None, "duplicate");
        t += &format!(
            r#"{{"parentUuid":"d{k}","isSidechain":false,"type":"assistant","message":{{"id":"q{k}","role":"assistant","content":[{{"type":"tool_use","id":"t{k}","name":"Bash","input":{{"command":"true"}}}}]}},"uuid":"e{k}","sessionId":"s"}}"#
        );
        t += "\n";
    }
    t
}

/// One prompt, then `n` sidechain records and `n` last-prompts whose leaf is in no file:
/// relink points each at the nearest earlier main-chain record, once found by a walk back
/// over every record before it.
pub fn dangling_leaves_after_sidechain(n: usize) -> String {
    let mut t = user("m0", None, "prompt");
    for k in 0..n {
        let parent = (k > 0).then(|| format!("s{}", k - 1));
        t += &(format!(
            r#"{{"parentUuid":{},"isSidechain":true,"agentId":"a","type":"user","message":{{"role":"user","content":"x"}},"uuid":"s{k}","timestamp":"2026-01-01T00:00:00.000Z","sessionId":"s","cwd":"/w"}}"#,
            parent.map_or("null".to_string(), |p| format!("\"{p}\""))
        ) + "\n");
    }
    for k in 0..n {
        t += &(format!(
            r#"{{"type":"last-prompt","lastPrompt":"p","leafUuid":"gone-{k}","sessionId":"s"}}"#
        ) + "\n");
    }
    t
}

/// A transcript of the claude-code#92089 shape, `n` turns before the first compaction: the
/// second `/compact` of a process re-appended those turns verbatim (same uuids and parents)
/// after its summary, the continuation hangs from the last copy, and the second boundary's
/// `logicalParentUuid`/`preservedSegment` name that copy too. `n` turns also sit between the
/// two compactions. The repair tests and the scaling test share it.
pub fn replayed_history(n: usize) -> String {
    use serde_json::json;
    let line = |v: serde_json::Value| v.to_string() + "\n";
    let turn = |tag: &str, k: usize, parent: Option<String>| -> (String, String) {
        let (p, a) = (format!("{tag}-p{k}"), format!("{tag}-a{k}"));
        let text = line(
            json!({"type":"user","uuid":p,"parentUuid":parent,"isSidechain":false,
            "message":{"role":"user","content":format!("question {tag} {k}")}}),
        ) + &line(
            json!({"type":"assistant","uuid":a,"parentUuid":p,"isSidechain":false,
            "message":{"id":format!("msg-{tag}-{k}"),"role":"assistant","content":[{"type":"text","text":format!("answer {tag} {k}")}]}}),
        );
        (text, a)
    };
    let boundary = |uuid: &str, logical: &str, summary: &str| {
        line(
            json!({"type":"system","subtype":"compact_boundary","uuid":uuid,"parentUuid":null,
            "logicalParentUuid":logical,"isSidechain":false,"content":"Conversation compacted",
            "compactMetadata":{"trigger":"manual","preTokens":1000,
            "preservedSegment":{"headUuid":logical,"anchorUuid":summary,"tailUuid":logical},
            "preservedMessages":{"anchorUuid":summary,"uuids":[logical],"allUuids":[logical]}}}),
        )
    };
    let summary = |uuid: &str, parent: &str| {
        line(
            json!({"type":"user","uuid":uuid,"parentUuid":parent,"isSidechain":false,
            "isCompactSummary":true,"isVisibleInTranscriptOnly":true,
            "message":{"role":"user","content":"This session is being continued from a previous conversation."}}),
        )
    };
    let (mut first, mut last) = (String::new(), None::<String>);
    for k in 0..n {
        let (t, a) = turn("a", k, last.clone());
        first += &t;
        last = Some(a);
    }
    let last_a = last.unwrap();
    let mut out = first.clone();
    out += &boundary("b1", &last_a, "s1");
    out += &summary("s1", "b1");
    let mut prev = "s1".to_string();
    for k in 0..n {
        let (t, a) = turn("b", k, Some(prev.clone()));
        out += &t;
        prev = a;
    }
    // The bug: the second boundary names the replayed copy, and the copy follows its summary.
    out += &boundary("b2", &last_a, "s2");
    out += &summary("s2", "b2");
    out += &first;
    let (t, _) = turn("c", 0, Some(last_a));
    out + &t
}

/// A main session of `n` turns with a sub-agent's records after each prompt (claude-code#23373:
/// `n` agents, two records each, written into the main file).
pub fn subagents_in_main(n: usize) -> String {
    use serde_json::json;
    let line = |v: serde_json::Value| v.to_string() + "\n";
    let mut out = String::new();
    let mut parent: Option<String> = None;
    for k in 0..n {
        let (p, a) = (format!("p{k}"), format!("a{k}"));
        out += &user(&p, parent.as_deref(), &format!("turn {k}"));
        let agent = format!("a{k:016x}");
        for (j, sp) in [(0, None), (1, Some(format!("s{k}-0")))] {
            out += &line(
                json!({"type": "user", "uuid": format!("s{k}-{j}"), "parentUuid": sp,
                "isSidechain": true, "agentId": agent,
                "message": {"role": "user", "content": "sub-agent step"}}),
            );
        }
        out += &assistant(&a, Some(&p), &format!("m{k}"), "done");
        parent = Some(a);
    }
    out
}
