//! cchist's JSON readers against simd-json and sonic-rs, on generated records (issue #31).
//!
//! Run with `cargo bench --bench json_parsers` (add `-- header` or `-- value` for one half).
//! Four inputs, each a few MB of one record shape (no corpus content: every line is built
//! here; their sizes are printed first): short chat records (~310 B), assistant tool-use
//! records (~1.6 KB), and large tool results (~105 KB: the output twice, in `message.content`
//! and in `toolUseResult`) with the header fields after the big strings (Claude Code's own key
//! order) or before them.
//!
//! `header/*` reads what `transcript::record::Header::parse` reads (`type`, the ids, the
//! flags, `attachment.type`, `message.id`/`role`, every content block's `type`, `id`,
//! `tool_use_id`, `name`, `is_error` and a text prefix), each parser's fields decoded into one
//! string arena as `Header` does. simd-json parses in place, so its rows include copying the
//! line into a reused buffer (cchist's lines are borrowed from a read-only map).
//!
//! `value/*` parses the whole record into a tree, as `transcript::record::parse_value` does
//! for a stage that edits a record: serde_json's `Value` (with `preserve_order`, as cchist
//! builds it), cchist's own `parse_value` (the same plus its depth and number checks), the
//! other parsers' own trees, and the other parsers deserializing into serde_json's `Value`
//! (the only drop-in form: the stages edit `serde_json::Value`).

use std::hint::black_box;
use std::time::Duration;

use cchist::transcript::record::Header;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use serde_json::json;
use simd_json::prelude::*;
use sonic_rs::JsonValueTrait;

// ---------------------------------------------------------------------------------------------
// Inputs.

/// A small deterministic generator (xorshift), so every run sees the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn uuid(&mut self) -> String {
        let (a, b) = (self.next(), self.next());
        format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            a >> 32,
            a & 0xffff,
            (a >> 16) & 0xfff,
            b & 0xfff,
            b >> 16 & 0xffff_ffff_ffff
        )
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[(self.next() % from.len() as u64) as usize]
    }
}

const WORDS: &[&str] = &[
    "parser",
    "the",
    "test",
    "fails",
    "because",
    "offset",
    "line",
    "buffer",
    "résumé",
    "naïve",
    "token",
    "index",
    "why",
    "does",
    "return",
    "None",
    "when",
    "empty",
    "日本語",
    "fix",
];

fn words(r: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(r.pick(WORDS));
    }
    s
}

/// Tool output as a shell prints it: code lines with quotes, tabs, backslashes, some UTF-8.
fn tool_output(r: &mut Rng, bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 128);
    let mut n = 0u64;
    while s.len() < bytes {
        n += 1;
        match r.next() % 5 {
            0 => s.push_str(&format!(
                "    let x{n} = parse(\"{}\", {});\n",
                r.pick(WORDS),
                r.next() % 1000
            )),
            1 => s.push_str(&format!("src/lib.rs:{n}:\t{}\n", words(r, 8))),
            2 => s.push_str(&format!("test tests::case_{n} ... ok\n")),
            3 => s.push_str(&format!(
                "C:\\work\\{}\\{n}.rs — {}\n",
                r.pick(WORDS),
                words(r, 5)
            )),
            _ => s.push_str(&format!("{}\n", words(r, 12))),
        }
    }
    s
}

struct Ids {
    session: String,
    parent: String,
}

fn chat(r: &mut Rng, ids: &mut Ids) -> serde_json::Value {
    let uuid = r.uuid();
    let v = if r.next().is_multiple_of(2) {
        json!({"parentUuid": ids.parent, "isSidechain": false, "sessionId": ids.session,
            "type": "user", "message": {"role": "user", "content": words(r, 6)},
            "uuid": uuid, "timestamp": "2026-11-30T10:15:42.118Z"})
    } else {
        json!({"parentUuid": ids.parent, "isSidechain": false, "sessionId": ids.session,
            "type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "text", "text": words(r, 5)}]},
            "uuid": uuid, "timestamp": "2026-11-30T10:15:43.502Z"})
    };
    ids.parent = uuid;
    v
}

fn tool_use(r: &mut Rng, ids: &mut Ids) -> serde_json::Value {
    let uuid = r.uuid();
    let v = json!({
        "parentUuid": ids.parent, "isSidechain": false, "userType": "external",
        "cwd": "/home/alice/proj", "sessionId": ids.session, "version": "2.1.3",
        "gitBranch": "main",
        "message": {
            "id": format!("msg_01{:020x}", r.next()), "type": "message", "role": "assistant",
            "model": "claude-opus-4-5",
            "content": [
                {"type": "text", "text": words(r, 120)},
                {"type": "tool_use", "id": format!("toolu_01{:020x}", r.next()), "name": "Bash",
                 "input": {"command": format!("cargo test --test it {} 2>&1 | tail -40", r.pick(WORDS)),
                           "description": words(r, 8)}}
            ],
            "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 4, "cache_creation_input_tokens": r.next() % 9000,
                      "cache_read_input_tokens": r.next() % 90000, "output_tokens": 312,
                      "service_tier": "standard"}
        },
        "requestId": format!("req_011C{:016x}", r.next()), "type": "assistant",
        "uuid": uuid, "timestamp": "2026-11-30T10:16:01.934Z"
    });
    ids.parent = uuid;
    v
}

fn tool_result(r: &mut Rng, ids: &mut Ids, header_first: bool) -> serde_json::Value {
    let uuid = r.uuid();
    let out = tool_output(r, 50_000);
    let call = format!("toolu_01{:020x}", r.next());
    let message = json!({"role": "user", "content": [
        {"tool_use_id": call, "type": "tool_result", "content": out, "is_error": false}]});
    let result = json!({"stdout": out, "stderr": "", "interrupted": false, "isImage": false});
    let v = if header_first {
        json!({"type": "user", "uuid": uuid, "parentUuid": ids.parent, "isSidechain": false,
            "sessionId": ids.session, "timestamp": "2026-11-30T10:16:09.020Z",
            "sourceToolAssistantUUID": ids.parent, "message": message, "toolUseResult": result})
    } else {
        json!({"parentUuid": ids.parent, "isSidechain": false, "userType": "external",
            "cwd": "/home/alice/proj", "sessionId": ids.session, "version": "2.1.3",
            "gitBranch": "main", "type": "user", "message": message, "uuid": uuid,
            "timestamp": "2026-11-30T10:16:09.020Z", "toolUseResult": result,
            "sourceToolAssistantUUID": ids.parent})
    };
    ids.parent = uuid;
    v
}

/// `name`, and its lines (each one record, no newline) totalling about `total` bytes.
fn inputs() -> Vec<(&'static str, Vec<Vec<u8>>)> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ids = Ids {
        session: r.uuid(),
        parent: r.uuid(),
    };
    let mut set = |total: usize, make: &mut dyn FnMut(&mut Rng, &mut Ids) -> serde_json::Value| {
        let mut lines = Vec::new();
        let mut n = 0;
        while n < total {
            let l = serde_json::to_vec(&make(&mut r, &mut ids)).unwrap();
            n += l.len();
            lines.push(l);
        }
        lines
    };
    let sets = vec![
        ("chat_300B", set(2 << 20, &mut chat)),
        ("tool_use_1600B", set(2 << 20, &mut tool_use)),
        (
            "tool_result_105KB_fields_after",
            set(4 << 20, &mut |r, i| tool_result(r, i, false)),
        ),
        (
            "tool_result_105KB_fields_before",
            set(4 << 20, &mut |r, i| tool_result(r, i, true)),
        ),
    ];
    for (name, lines) in &sets {
        let bytes: usize = lines.iter().map(Vec::len).sum();
        eprintln!(
            "{name}: {} lines, {} B a line",
            lines.len(),
            bytes / lines.len()
        );
    }
    sets
}

// ---------------------------------------------------------------------------------------------
// The header fields, read by each parser into the same shape.

/// Top-level string fields `Header` reads (`type` included: it is matched as a kind).
const TOP: &[&str] = &[
    "type",
    "subtype",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "leafUuid",
    "sourceToolAssistantUUID",
    "sessionId",
    "agentId",
    "timestamp",
    "toolUseID",
    "parentToolUseID",
];
const FLAGS: &[&str] = &["isSidechain", "isMeta", "isCompactSummary"];
const BLOCK: &[&str] = &["type", "id", "tool_use_id", "name"];

type Span = (u32, u32);

/// What a header read yields: decoded strings in one arena, flags, blocks.
struct Fields {
    text: String,
    top: [Span; 16],
    flags: u8,
    blocks: Vec<[Span; 5]>,
    block_errors: u64,
}

impl Default for Fields {
    fn default() -> Self {
        Fields {
            text: String::new(),
            top: [(u32::MAX, 0); 16],
            flags: 0,
            blocks: Vec::new(),
            block_errors: 0,
        }
    }
}

impl Fields {
    fn push(&mut self, s: &str) -> Span {
        let start = self.text.len() as u32;
        self.text.push_str(s);
        (start, s.len() as u32)
    }
    fn top(&mut self, k: &str, s: Option<&str>) -> bool {
        let Some(i) = TOP.iter().position(|t| *t == k) else {
            return false;
        };
        self.top[i] = s.map_or((u32::MAX, 0), |s| self.push(s));
        true
    }
    fn flag(&mut self, k: &str, b: Option<bool>) -> bool {
        let Some(i) = FLAGS.iter().position(|t| *t == k) else {
            return false;
        };
        if b == Some(true) {
            self.flags |= 1 << i;
        }
        true
    }
    fn prefix(&mut self, s: &str) -> Span {
        let mut end = s.len().min(64);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.push(&s[..end])
    }
    fn get(&self, s: Span) -> Option<&str> {
        (s.0 != u32::MAX).then(|| &self.text[s.0 as usize..(s.0 + s.1) as usize])
    }
    /// Panics unless these are the fields `Header` read.
    fn check(&self, h: &Header) {
        assert_eq!(self.get(self.top[2]), h.uuid());
        assert_eq!(self.get(self.top[3]), h.parent_uuid());
        assert_eq!(self.get(self.top[6]), h.source_tool_assistant_uuid());
        assert_eq!(self.get(self.top[7]), h.session_id());
        assert_eq!(self.get(self.top[9]), h.timestamp());
        assert_eq!(self.get(self.top[13]), h.message_id());
        assert_eq!(self.get(self.top[14]), h.role());
        assert_eq!(self.flags & 1 == 1, h.is_sidechain);
        assert_eq!(self.blocks.len(), h.blocks().len());
        for (b, hb) in self.blocks.iter().zip(h.blocks()) {
            assert_eq!(self.get(b[0]).unwrap_or(""), hb.kind());
            assert_eq!(self.get(b[1]), hb.id());
            assert_eq!(self.get(b[2]), hb.tool_use_id());
            assert_eq!(self.get(b[3]), hb.name());
        }
    }
    /// A number standing for the result, so nothing is optimized away.
    fn digest(self) -> usize {
        self.text.len() + self.blocks.len() + self.flags as usize + self.block_errors as usize
    }
}

fn cchist_header(line: &[u8]) -> usize {
    let h = Header::parse(line).expect("a JSON object");
    h.uuid().map_or(0, str::len) + h.blocks().len() + h.text_prefix().len()
}

// simd-json: the tape (its lowest-level read), and the borrowed tree.

struct SimdState {
    buf: Vec<u8>,
    buffers: simd_json::Buffers,
    tape: Option<simd_json::Tape<'static>>,
}

impl SimdState {
    fn new() -> Self {
        SimdState {
            buf: Vec::new(),
            buffers: simd_json::Buffers::default(),
            tape: Some(simd_json::Tape::null().reset()),
        }
    }
}

fn simd_tape_header(st: &mut SimdState, line: &[u8]) -> Fields {
    st.buf.clear();
    st.buf.extend_from_slice(line);
    let mut tape = st.tape.take().expect("kept").reset();
    simd_json::fill_tape(&mut st.buf, &mut st.buffers, &mut tape).expect("JSON");
    let mut f = Fields::default();
    {
        let v = tape.as_value();
        let o = v.as_object().expect("an object");
        for (k, v) in o.iter() {
            if f.top(k, v.as_str()) || f.flag(k, v.as_bool()) {
                continue;
            }
            match k {
                "attachment" => {
                    let t = v.get("type");
                    f.top[12] = t
                        .as_ref()
                        .and_then(|t| t.as_str())
                        .map_or((u32::MAX, 0), |t| f.push(t));
                }
                "compactMetadata" => f.flags |= 1 << 5,
                "message" => {
                    let Some(m) = v.as_object() else { continue };
                    for (k, v) in m.iter() {
                        match k {
                            "id" => f.top[13] = v.as_str().map_or((u32::MAX, 0), |s| f.push(s)),
                            "role" => f.top[14] = v.as_str().map_or((u32::MAX, 0), |s| f.push(s)),
                            "content" => {
                                if let Some(s) = v.as_str() {
                                    f.top[15] = f.prefix(s);
                                } else if let Some(a) = v.as_array() {
                                    for b in a.iter() {
                                        let mut spans = [(u32::MAX, 0); 5];
                                        if let Some(b) = b.as_object() {
                                            for (k, v) in b.iter() {
                                                if let Some(i) = BLOCK.iter().position(|t| *t == k)
                                                {
                                                    spans[i] = v
                                                        .as_str()
                                                        .map_or((u32::MAX, 0), |s| f.push(s));
                                                } else if k == "is_error" {
                                                    f.block_errors +=
                                                        u64::from(v.as_bool() == Some(true));
                                                } else if k == "text" {
                                                    if let Some(s) = v.as_str() {
                                                        spans[4] = f.prefix(s);
                                                    }
                                                }
                                            }
                                        }
                                        f.blocks.push(spans);
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
    st.tape = Some(tape.reset());
    f
}

fn simd_borrowed_header(st: &mut SimdState, line: &[u8]) -> Fields {
    st.buf.clear();
    st.buf.extend_from_slice(line);
    let v = simd_json::borrowed::to_value_with_buffers(&mut st.buf, &mut st.buffers).expect("JSON");
    let mut f = Fields::default();
    let o = v.as_object().expect("an object");
    for (k, v) in o.iter() {
        let k: &str = k;
        if f.top(k, v.as_str()) || f.flag(k, v.as_bool()) {
            continue;
        }
        match k {
            "attachment" => {
                let t = v.get("type").and_then(|t| t.as_str());
                f.top[12] = t.map_or((u32::MAX, 0), |t| f.push(t));
            }
            "compactMetadata" => f.flags |= 1 << 5,
            "message" => {
                let Some(m) = v.as_object() else { continue };
                if let Some(s) = m.get("id").and_then(|v| v.as_str()) {
                    f.top[13] = f.push(s);
                }
                if let Some(s) = m.get("role").and_then(|v| v.as_str()) {
                    f.top[14] = f.push(s);
                }
                match m.get("content") {
                    Some(c) if c.as_str().is_some() => f.top[15] = f.prefix(c.as_str().unwrap()),
                    Some(c) => {
                        for b in c.as_array().into_iter().flatten() {
                            let mut spans = [(u32::MAX, 0); 5];
                            if let Some(b) = b.as_object() {
                                for (i, k) in BLOCK.iter().enumerate() {
                                    if let Some(s) = b.get(*k).and_then(|v| v.as_str()) {
                                        spans[i] = f.push(s);
                                    }
                                }
                                f.block_errors += u64::from(
                                    b.get("is_error").and_then(|v| v.as_bool()) == Some(true),
                                );
                                if let Some(s) = b.get("text").and_then(|v| v.as_str()) {
                                    spans[4] = f.prefix(s);
                                }
                            }
                            f.blocks.push(spans);
                        }
                    }
                    None => {}
                }
            }
            _ => {}
        }
    }
    f
}

// sonic-rs: its lazy iterators (a validating walk that skips what is not asked for, like
// cchist's scanner), and `get_many` by pointer.

fn sonic_blocks(f: &mut Fields, content: sonic_rs::LazyValue<'_>) {
    if let Some(s) = content.as_str() {
        f.top[15] = f.prefix(s);
        return;
    }
    let Some(a) = content.into_array_iter() else {
        return;
    };
    for b in a {
        let b = b.expect("JSON");
        let mut spans = [(u32::MAX, 0); 5];
        if let Some(o) = b.into_object_iter() {
            for kv in o {
                let (k, v) = kv.expect("JSON");
                if let Some(i) = BLOCK.iter().position(|t| *t == k) {
                    spans[i] = v.as_str().map_or((u32::MAX, 0), |s| f.push(s));
                } else if k == "is_error" {
                    f.block_errors += u64::from(v.as_bool() == Some(true));
                } else if k == "text" {
                    if let Some(s) = v.as_str() {
                        spans[4] = f.prefix(s);
                    }
                }
            }
        }
        f.blocks.push(spans);
    }
}

fn sonic_lazy_header(line: &[u8]) -> Fields {
    let mut f = Fields::default();
    for kv in sonic_rs::to_object_iter(line) {
        let (k, v) = kv.expect("JSON");
        if f.top(&k, v.as_str()) || f.flag(&k, v.as_bool()) {
            continue;
        }
        match &*k {
            "attachment" => {
                let t = v.get("type");
                f.top[12] = t
                    .as_ref()
                    .and_then(|t| t.as_str())
                    .map_or((u32::MAX, 0), |t| f.push(t));
            }
            "compactMetadata" => f.flags |= 1 << 5,
            "message" => {
                let Some(m) = v.into_object_iter() else {
                    continue;
                };
                for kv in m {
                    let (k, v) = kv.expect("JSON");
                    match &*k {
                        "id" => f.top[13] = v.as_str().map_or((u32::MAX, 0), |s| f.push(s)),
                        "role" => f.top[14] = v.as_str().map_or((u32::MAX, 0), |s| f.push(s)),
                        "content" => sonic_blocks(&mut f, v),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    f
}

fn sonic_tree() -> sonic_rs::PointerTree {
    let mut t = sonic_rs::PointerTree::new();
    for k in TOP.iter().chain(FLAGS) {
        t.add_path([*k]);
    }
    t.add_path(["attachment", "type"]);
    t.add_path(["compactMetadata"]);
    t.add_path(["message", "id"]);
    t.add_path(["message", "role"]);
    t.add_path(["message", "content"]);
    t
}

fn sonic_get_many_header(tree: &sonic_rs::PointerTree, line: &[u8]) -> Fields {
    let got = sonic_rs::get_many(line, tree).expect("JSON");
    let mut f = Fields::default();
    let mut it = got.into_iter();
    for k in TOP {
        let v = it.next().unwrap();
        f.top(k, v.as_ref().and_then(|v| v.as_str()));
    }
    for k in FLAGS {
        let v = it.next().unwrap();
        f.flag(k, v.as_ref().and_then(|v| v.as_bool()));
    }
    if let Some(t) = it.next().unwrap().as_ref().and_then(|v| v.as_str()) {
        f.top[12] = f.push(t);
    }
    if it.next().unwrap().is_some() {
        f.flags |= 1 << 5;
    }
    if let Some(s) = it.next().unwrap().as_ref().and_then(|v| v.as_str()) {
        f.top[13] = f.push(s);
    }
    if let Some(s) = it.next().unwrap().as_ref().and_then(|v| v.as_str()) {
        f.top[14] = f.push(s);
    }
    if let Some(c) = it.next().unwrap() {
        sonic_blocks(&mut f, c);
    }
    f
}

// ---------------------------------------------------------------------------------------------

fn header(c: &mut Criterion) {
    let tree = sonic_tree();
    for (name, lines) in inputs() {
        let bytes: usize = lines.iter().map(Vec::len).sum();
        // Every reader must see the same fields before it is timed.
        let mut st = SimdState::new();
        for l in &lines {
            let h = Header::parse(l).unwrap();
            simd_tape_header(&mut st, l).check(&h);
            simd_borrowed_header(&mut st, l).check(&h);
            sonic_lazy_header(l).check(&h);
            sonic_get_many_header(&tree, l).check(&h);
        }
        let mut g = c.benchmark_group(format!("header/{name}"));
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(BenchmarkId::from_parameter("cchist_scanner"), |b| {
            b.iter(|| {
                lines
                    .iter()
                    .map(|l| cchist_header(black_box(l)))
                    .sum::<usize>()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("simd_json_tape"), |b| {
            b.iter(|| {
                lines
                    .iter()
                    .map(|l| simd_tape_header(&mut st, black_box(l)).digest())
                    .sum::<usize>()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("simd_json_borrowed"), |b| {
            b.iter(|| {
                lines
                    .iter()
                    .map(|l| simd_borrowed_header(&mut st, black_box(l)).digest())
                    .sum::<usize>()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("sonic_rs_lazy_iter"), |b| {
            b.iter(|| {
                lines
                    .iter()
                    .map(|l| sonic_lazy_header(black_box(l)).digest())
                    .sum::<usize>()
            })
        });
        g.bench_function(BenchmarkId::from_parameter("sonic_rs_get_many"), |b| {
            b.iter(|| {
                lines
                    .iter()
                    .map(|l| sonic_get_many_header(&tree, black_box(l)).digest())
                    .sum::<usize>()
            })
        });
        g.finish();
    }
}

fn value(c: &mut Criterion) {
    for (name, lines) in inputs() {
        let bytes: usize = lines.iter().map(Vec::len).sum();
        let mut buf = Vec::new();
        let mut buffers = simd_json::Buffers::default();
        // The drop-in forms must give serde_json's own tree.
        for l in &lines {
            let want: serde_json::Value = serde_json::from_slice(l).unwrap();
            buf.clear();
            buf.extend_from_slice(l);
            let simd: serde_json::Value =
                simd_json::serde::from_slice_with_buffers(&mut buf, &mut buffers).unwrap();
            assert_eq!(simd, want, "{name}");
            let sonic: serde_json::Value = sonic_rs::from_slice(l).unwrap();
            assert_eq!(sonic, want, "{name}");
        }
        let mut g = c.benchmark_group(format!("value/{name}"));
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(BenchmarkId::from_parameter("serde_json_Value"), |b| {
            b.iter(|| {
                for l in &lines {
                    black_box(serde_json::from_slice::<serde_json::Value>(black_box(l)).unwrap());
                }
            })
        });
        g.bench_function(BenchmarkId::from_parameter("cchist_parse_value"), |b| {
            b.iter(|| {
                for l in &lines {
                    black_box(cchist::transcript::record::parse_value(black_box(l)).unwrap());
                }
            })
        });
        g.bench_function(BenchmarkId::from_parameter("simd_json_owned"), |b| {
            b.iter(|| {
                for l in &lines {
                    buf.clear();
                    buf.extend_from_slice(black_box(l));
                    black_box(
                        simd_json::owned::to_value_with_buffers(&mut buf, &mut buffers).unwrap(),
                    );
                }
            })
        });
        g.bench_function(BenchmarkId::from_parameter("simd_json_borrowed"), |b| {
            b.iter(|| {
                for l in &lines {
                    buf.clear();
                    buf.extend_from_slice(black_box(l));
                    let v =
                        simd_json::borrowed::to_value_with_buffers(&mut buf, &mut buffers).unwrap();
                    black_box(&v);
                }
            })
        });
        g.bench_function(
            BenchmarkId::from_parameter("simd_json_into_serde_json_Value"),
            |b| {
                b.iter(|| {
                    for l in &lines {
                        buf.clear();
                        buf.extend_from_slice(black_box(l));
                        black_box(
                            simd_json::serde::from_slice_with_buffers::<serde_json::Value>(
                                &mut buf,
                                &mut buffers,
                            )
                            .unwrap(),
                        );
                    }
                })
            },
        );
        g.bench_function(BenchmarkId::from_parameter("sonic_rs_Value"), |b| {
            b.iter(|| {
                for l in &lines {
                    black_box(sonic_rs::from_slice::<sonic_rs::Value>(black_box(l)).unwrap());
                }
            })
        });
        g.bench_function(
            BenchmarkId::from_parameter("sonic_rs_into_serde_json_Value"),
            |b| {
                b.iter(|| {
                    for l in &lines {
                        black_box(sonic_rs::from_slice::<serde_json::Value>(black_box(l)).unwrap());
                    }
                })
            },
        );
        g.finish();
    }
}

fn short() -> Criterion {
    // Short runs: the machine is shared; compare rows of one run only.
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = short();
    targets = header, value
}
criterion_main!(benches);
