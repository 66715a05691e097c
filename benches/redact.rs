//! Redaction throughput on the shared corpus (bytes/s, single thread).
//!
//! Run with `cargo bench --bench redact`. The corpus is every *.jsonl under ../shared/corpus
//! concatenated (about 20 MB), read relative to CARGO_MANIFEST_DIR. Groups:
//!
//! - `redact/pipeline`: a pipeline with one default `redact` stage, `run_buffer` into a sink
//!   (framing, prefilter, parsing of candidate lines, splicing, writing);
//! - `redact/lines`: `Redactor::redact_line` over every line (no pipeline, no writer);
//! - `redact/unfiltered`: every rule over every decoded string (what the prefilter saves).
//!
//! Compare with `rg -c -i -F -f <(cchist rules --keywords) corpus.jsonl` on the same bytes.

mod corpus;

use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::Origin;
use cchist::io::framing::lines;
use cchist::io::output::{Sink, SpanWriter};
use cchist::stages::redact::{Redact, RedactOptions, Redactor};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench(c: &mut Criterion) {
    let data = corpus::bytes();
    let mut g = c.benchmark_group("redact");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.sample_size(20);
    let stage = Redact::new(Redactor::new(&RedactOptions::default()).unwrap(), false);
    let p = Pipeline::new(vec![Box::new(stage)], OnInvalid::Keep, "redact".into());
    g.bench_function("pipeline", |b| {
        b.iter(|| {
            let mut sink = SpanWriter::new(std::io::sink());
            p.run_buffer(&data, &Origin::stdin(), &mut sink).unwrap();
            sink.finish().unwrap();
        })
    });
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    g.bench_function("lines", |b| {
        b.iter(|| {
            lines(&data, 1)
                .filter(|l| r.redact_line(l.body).line.is_some())
                .count()
        })
    });
    g.sample_size(10);
    g.bench_function("unfiltered", |b| {
        b.iter(|| {
            lines(&data, 1)
                .filter(|l| r.redact_line_unfiltered(l.body).line.is_some())
                .count()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
