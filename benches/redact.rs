//! Redaction throughput on the shared corpus (bytes/s, single thread).
//!
//! Run with `cargo bench --bench redact`. The corpus is every *.jsonl under ../shared/corpus
//! concatenated (about 20 MB), read relative to CARGO_MANIFEST_DIR. Groups:
//!
//! - `redact/pipeline`: a pipeline with one default `redact` stage, `run_buffer` into a sink
//!   (framing, prefilter, parsing of candidate lines, splicing, writing);
//! - `redact/lines`: `Redactor::redact_line` over every line (no pipeline, no writer), with the
//!   best prefilter this CPU runs (the one-pass filter with AVX-512 VBMI byte tables, else AVX2);
//! - `redact/lines-avx2`, `redact/lines-passes`: the same with the AVX2 one-pass filter, and with
//!   the passes over a folded copy (three `aho_corasick` Teddy searchers and a rare-byte pass)
//!   that the one-pass filter replaced (`CCHIST_REDACT_PREFILTER`);
//! - `redact/unfiltered`: every rule over every decoded string (what the prefilter saves).
//!
//! Compare with `rg -c -i -F -f <(cchist rules --keywords) corpus.jsonl` on the same bytes.
//!
//! Measured 2026-12-01 on the shared 2-core VM (AVX-512 VBMI; 19 MiB, best-effort, noisy):
//! `lines` 26.5 ms (719 MiB/s), `lines-avx2` 41.7 ms (458 MiB/s), `lines-passes` 48.5 ms
//! (394 MiB/s).

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
    for path in ["avx2", "passes"] {
        std::env::set_var("CCHIST_REDACT_PREFILTER", path);
        let r = Redactor::new(&RedactOptions::default()).unwrap();
        std::env::remove_var("CCHIST_REDACT_PREFILTER");
        g.bench_function(format!("lines-{path}"), |b| {
            b.iter(|| {
                lines(&data, 1)
                    .filter(|l| r.redact_line(l.body).line.is_some())
                    .count()
            })
        });
    }
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
