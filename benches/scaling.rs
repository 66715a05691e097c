//! Scaling: each shape that once made a stage walk the input again per record, at 1×, 2×, 4×
//! and 8× its size (`cargo bench --bench scaling`). Time per element should stay flat;
//! `tests/scaling.rs` gates the 8×/1× ratio.

#[path = "../tests/scaling_inputs/mod.rs"]
mod scaling_inputs;

use std::collections::BTreeSet;

use cchist::io::framing;

use cchist::stages::summarize::digest_body;
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scaling_inputs as gen;
use scaling_inputs::{pipeline, run};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// (group, pipeline, base size, input maker).
type Shape = (&'static str, &'static str, usize, fn(usize) -> String);

const SHAPES: &[Shape] = &[
    (
        "relink/dangling",
        "[[stage]]\ntype = \"relink\"\n",
        10_000,
        gen::dangling_parents,
    ),
    (
        "relink/2-cycles",
        "[[stage]]\ntype = \"relink\"\n",
        5_000,
        gen::parent_two_cycles,
    ),
    (
        "relink/unanswered-tool-calls",
        "[[stage]]\ntype = \"relink\"\n",
        5_000,
        gen::unanswered_tool_calls,
    ),
    (
        "relink/detached-message-pieces",
        "[[stage]]\ntype = \"relink\"\n",
        5_000,
        gen::detached_message_pieces,
    ),
    (
        "drop-tool-noise/references-into-dropped-run",
        "[[stage]]\ntype = \"drop-tool-noise\"\n",
        10_000,
        gen::references_into_dropped_run,
    ),
    (
        "drop-tool-noise/opaque-after-dropped",
        "[[stage]]\ntype = \"drop-tool-noise\"\n",
        10_000,
        gen::opaque_after_dropped,
    ),
    (
        "share/opaque-after-dropped",
        "@share",
        10_000,
        gen::opaque_after_dropped,
    ),
    (
        "summarize-range/turns",
        "[[stage]]\ntype = \"summarize-range\"\nkeep_last = 1\n",
        2_500,
        gen::distinct_turns,
    ),
];

/// A benchmark group `name` timing `work` on `make(base * k)` for k = 1, 2, 4 and 8.
fn curve(
    c: &mut Criterion,
    name: &str,
    base: usize,
    make: fn(usize) -> String,
    work: impl Fn(&[u8]) -> usize,
) {
    let mut g = c.benchmark_group(name);
    g.sample_size(10);
    for k in [1, 2, 4, 8] {
        let n = base * k;
        let data = make(n);
        g.throughput(Throughput::Elements(n as u64));
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{k}x")),
            &data,
            |b, d| b.iter(|| work(d.as_bytes())),
        );
    }
    g.finish();
}

fn scaling(c: &mut Criterion) {
    for &(name, spec, base, make) in SHAPES {
        let p = pipeline(spec);
        curve(c, name, base, make, |d| run(&p, d));
    }
    curve(c, "validate/damaged", 5_000, gen::damaged, |d| {
        cchist::findings::validate::validate(d).len()
    });
    curve(
        c,
        "hook/precompact-digest",
        10_000,
        gen::distinct_prompts,
        |d| {
            let mut s = Session::new(framing::lines(d, 1).map(Record::from_line).collect());
            let all: BTreeSet<usize> = (0..s.records.len()).collect();
            digest_body(&mut s, &all).len()
        },
    );
}

criterion_group!(benches, scaling);
criterion_main!(benches);
