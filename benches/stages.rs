//! Each stage alone and each shipped pipeline, on small, medium and large inputs built from
//! ../shared/corpus (bytes/s).
//!
//! Run with `cargo bench --bench stages` (all of it takes a few minutes; filter with e.g.
//! `cargo bench --bench stages -- share/large`).
//!
//! - small: one generated session (`p01_quickstart`, a few kB: per-run overhead shows);
//! - medium: every corpus file concatenated (~20 MB);
//! - large: four copies of medium with every uuid and message/tool id renumbered per copy, so
//!   the session has no duplicate ids (~80 MB).

mod corpus;

use cchist::engine::config;
use cchist::engine::pipeline::Pipeline;
use cchist::error::Origin;
use cchist::io::output::{Sink, SpanWriter};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use regex::bytes::Regex;

// The allocator the binary uses (src/main.rs), so the figures match `cchist`'s.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Pipelines measured: one per stage, then the shipped ones.
const PIPELINES: &[(&str, &str)] = &[
    ("redact", "[[stage]]\ntype = \"redact\"\n"),
    ("relink", "[[stage]]\ntype = \"relink\"\n"),
    ("drop-tool-noise", "[[stage]]\ntype = \"drop-tool-noise\"\n"),
    (
        "summarize-range",
        "[[stage]]\ntype = \"summarize-range\"\nkeep_last = 2\n",
    ),
    ("identity", "@identity"),
    ("scrub", "@scrub"),
    ("share", "@share"),
    ("compact", "@compact"),
];

fn pipeline(spec: &str) -> Pipeline {
    let file = match spec.strip_prefix('@') {
        Some(name) => config::load_spec(name),
        None => config::parse(&format!("version = 1\n{spec}"), &Origin::stdin()),
    };
    file.expect("bench pipeline").pipeline
}

/// `copies` copies of `one`, ids renumbered per copy (as scripts/bigfile.py does).
fn renumbered(one: &[u8], copies: usize) -> Vec<u8> {
    let uuid = Regex::new(r"\b([0-9a-f]{8})(-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\b")
        .unwrap();
    let ids = Regex::new(r"\b((?:msg|toolu|req)_[A-Za-z0-9]+)").unwrap();
    let mut all = one.to_vec();
    for k in 1..copies {
        let copy = uuid.replace_all(one, |c: &regex::bytes::Captures| {
            let head = std::str::from_utf8(&c[1]).unwrap();
            let n = u32::from_str_radix(head, 16).unwrap() ^ k as u32;
            let mut out = format!("{n:08x}").into_bytes();
            out.extend_from_slice(&c[2]);
            out
        });
        let copy = ids.replace_all(&copy, |c: &regex::bytes::Captures| {
            let mut out = c[1].to_vec();
            out.extend_from_slice(format!("x{k}").as_bytes());
            out
        });
        all.extend_from_slice(&copy);
    }
    all
}

fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let medium = corpus::bytes();
    let small = std::fs::read(corpus::dir().join("generated/p01_quickstart.jsonl")).unwrap();
    let large = renumbered(&medium, 4);
    vec![("small", small), ("medium", medium), ("large", large)]
}

fn bench(c: &mut Criterion) {
    let inputs = inputs();
    for (name, spec) in PIPELINES {
        let p = pipeline(spec);
        let mut g = c.benchmark_group(*name);
        g.sample_size(10);
        for (size, data) in &inputs {
            g.throughput(Throughput::Bytes(data.len() as u64));
            g.bench_with_input(BenchmarkId::from_parameter(size), data, |b, data| {
                b.iter(|| {
                    let mut sink = SpanWriter::new(std::io::sink());
                    p.run_buffer(data, &Origin::stdin(), &mut sink).unwrap();
                    sink.finish().unwrap();
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
