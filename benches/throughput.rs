//! Identity and framing throughput on the shared corpus (bytes/s).
//!
//! Run with `cargo bench --bench throughput`. The corpus is every *.jsonl under
//! ../shared/corpus concatenated, repeated to about 64 MB so that per-run overhead vanishes.

mod corpus;

use cchist::engine::pipeline::Pipeline;
use cchist::error::Origin;
use cchist::io::output::{Sink, SpanWriter};
use cchist::transcript::record::Header;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// The corpus repeated to about 64 MB, so that per-run overhead vanishes.
fn corpus_bytes() -> Vec<u8> {
    let one = corpus::bytes();
    let mut all = Vec::with_capacity(64 << 20);
    while all.len() < (64 << 20) {
        all.extend_from_slice(&one);
    }
    all
}

fn bench(c: &mut Criterion) {
    let data = corpus_bytes();
    let mut g = c.benchmark_group("identity");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.sample_size(20);
    let p = Pipeline::identity();
    g.bench_function("run_buffer", |b| {
        b.iter(|| {
            let mut sink = SpanWriter::new(std::io::sink());
            p.run_buffer(&data, &Origin::stdin(), &mut sink).unwrap();
            sink.finish().unwrap();
        })
    });
    g.bench_function("run_stream", |b| {
        b.iter(|| {
            let mut sink = SpanWriter::new(std::io::sink());
            p.run_stream(&data[..], &Origin::stdin(), &mut sink)
                .unwrap();
            sink.finish().unwrap();
        })
    });
    g.finish();
    let mut g = c.benchmark_group("parse");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.sample_size(10);
    g.bench_function("header_every_line", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for l in cchist::io::framing::lines(&data, 1) {
                n += Header::parse(l.body).map_or(0, |h| h.blocks().len());
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
