//! The known-secret matcher: Aho-Corasick against the anchored index, by set size.
//!
//! Run with `cargo bench --bench known_matcher`. Each set is `n` random 40-byte tokens, each
//! with the hex and base64 forms a session knows it by (4 patterns a token); the text is 1 MiB
//! of JSONL-like lines holding 16 of them. Groups: `build/<kind>/<patterns>` (building the
//! matcher) and `search/<kind>/<patterns>` (one pass over the text). `SMALL_SET` in
//! `src/stages/redact/known/matcher.rs` is where the anchored index starts to win; kinds
//! `aho-corasick` (what cchist builds: sampled q-grams in front of a DFA), `-auto` (the
//! crate's own choice), `-dfa` (a DFA alone) show what the sampling and the DFA each give.
//!
//! Measured 2026-12-02 on the shared 2-core VM (noisy): see the table in that file's history
//! and the README's performance section.

use cchist::stages::redact::known::matcher::Matcher;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

fn rng(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

fn token(seed: &mut u64) -> Vec<u8> {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..40)
        .map(|_| ALNUM[(rng(seed) % ALNUM.len() as u64) as usize])
        .collect()
}

fn patterns(tokens: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for t in tokens {
        let hex: Vec<u8> = t
            .iter()
            .flat_map(|b| format!("{b:02x}").into_bytes())
            .collect();
        out.push(t.clone());
        out.push(hex.to_ascii_uppercase());
        out.push(hex);
        // A base64-like form of the same length class.
        out.push(t.iter().rev().copied().chain(*b"QUJD").collect());
    }
    out
}

fn text(tokens: &[Vec<u8>], seed: &mut u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 20);
    let mut i = 0usize;
    while out.len() < 1 << 20 {
        out.extend_from_slice(
            br#"{"type":"assistant","message":{"content":[{"type":"text","text":"ran the build; "#,
        );
        if i.is_multiple_of(400) {
            out.extend_from_slice(&tokens[(rng(seed) as usize) % tokens.len()]);
        } else {
            out.extend_from_slice(&token(seed));
        }
        out.extend_from_slice(b" and the tests passed\"}]}}\n");
        i += 1;
    }
    out
}

fn bench(c: &mut Criterion) {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut g = c.benchmark_group("known");
    g.sample_size(10);
    for n in [4usize, 16, 64, 256, 1024, 4096, 16384] {
        let tokens: Vec<Vec<u8>> = (0..n).map(|_| token(&mut seed)).collect();
        let pats = patterns(&tokens);
        let hay = text(&tokens, &mut seed);
        g.throughput(Throughput::Elements(pats.len() as u64));
        g.bench_with_input(
            BenchmarkId::new("build/aho-corasick", pats.len()),
            &pats,
            |b, p| b.iter(|| Matcher::small(p)),
        );
        g.bench_with_input(
            BenchmarkId::new("build/anchored", pats.len()),
            &pats,
            |b, p| b.iter(|| Matcher::anchored(p)),
        );
        g.throughput(Throughput::Bytes(hay.len() as u64));
        let mut kinds = vec![
            ("aho-corasick", Matcher::small(&pats)),
            (
                "aho-corasick-auto",
                Matcher::Small(Matcher::aho_corasick(&pats, None)),
            ),
            ("anchored", Matcher::anchored(&pats)),
        ];
        // A full DFA of the largest sets takes seconds and hundreds of MiB to build.
        if pats.len() <= 4096 {
            kinds.push((
                "aho-corasick-dfa",
                Matcher::Small(Matcher::aho_corasick(
                    &pats,
                    Some(aho_corasick::AhoCorasickKind::DFA),
                )),
            ));
        }
        for (kind, m) in kinds {
            g.bench_with_input(
                BenchmarkId::new(format!("search/{kind}"), pats.len()),
                &hay,
                |b, h| {
                    b.iter(|| {
                        let mut n = 0usize;
                        m.for_each(h, |_, _, _| n += 1);
                        n
                    })
                },
            );
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
