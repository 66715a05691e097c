//! `cchist import` of a 100 MB Codex rollout (#26: target under 2 s on one core), generated
//! here: turns of a prompt, a `shell` call with a few kB of output, an `apply_patch`, and a
//! reply. Measured end to end as the command does it — read, build the records, run them
//! through the `scrub` pipeline — with rayon held to one thread.
//!
//! Run with `cargo bench --bench import`.

use std::path::Path;

use cchist::engine::config;
use cchist::import::{self, Options};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::json;

// The allocator the binary uses (src/main.rs), so the figures match `cchist`'s.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn put(out: &mut Vec<u8>, ty: &str, p: serde_json::Value) {
    let v = json!({"timestamp": "2026-11-30T10:00:00.000Z", "type": ty, "payload": p});
    serde_json::to_writer(&mut *out, &v).unwrap();
    out.push(b'\n');
}

/// A rollout of at least `size` bytes.
fn rollout(size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + (1 << 20));
    put(
        &mut out,
        "session_meta",
        json!({"id": "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee", "cwd": "/w", "source": "cli"}),
    );
    let listing: String = (0..80)
        .map(|i| format!("-rw-r--r-- 1 dev dev {i:>6} src/module_{i}.rs\n"))
        .collect();
    let mut n = 0usize;
    loop {
        n += 1;
        put(
            &mut out,
            "turn_context",
            json!({"cwd": "/w", "model": "gpt-5-codex"}),
        );
        put(
            &mut out,
            "response_item",
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("Step {n}: list the sources and fix module {n}")}]}),
        );
        put(
            &mut out,
            "response_item",
            json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA".repeat(40)}),
        );
        let call = format!("call_ls_{n}");
        put(
            &mut out,
            "response_item",
            json!({"type": "function_call", "name": "shell", "call_id": call, "arguments": json!({"command": ["bash", "-lc", "ls -l src"], "workdir": "/w"}).to_string()}),
        );
        put(
            &mut out,
            "response_item",
            json!({"type": "function_call_output", "call_id": call, "output": json!({"output": listing, "metadata": {"exit_code": 0}}).to_string()}),
        );
        let patch = format!("*** Begin Patch\n*** Update File: src/module_{n}.rs\n@@ fn run() {{\n-    old({n});\n+    new({n});\n*** End Patch\n");
        put(
            &mut out,
            "response_item",
            json!({"type": "custom_tool_call", "name": "apply_patch", "call_id": format!("call_p_{n}"), "input": patch}),
        );
        put(
            &mut out,
            "response_item",
            json!({"type": "custom_tool_call_output", "call_id": format!("call_p_{n}"), "output": "Success. Updated the following files:\nM src/module.rs\n"}),
        );
        put(
            &mut out,
            "response_item",
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Module {n} now calls new(); the listing shows 80 files.")}]}),
        );
        if out.len() >= size {
            break;
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let _ = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build_global();
    let data = rollout(100 << 20);
    let pipeline = config::load_spec("scrub").unwrap().pipeline;
    let path = Path::new("rollout-bench.jsonl");
    let source = import::source_named("codex").unwrap();
    let mut g = c.benchmark_group("import");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("codex-100MB-scrub", |b| {
        b.iter(|| {
            let imp = import::convert(
                source,
                path,
                &data,
                &Options::default(),
                None,
                "/w",
                &pipeline,
            )
            .unwrap();
            assert!(!imp.jsonl.is_empty());
            imp.jsonl.len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
