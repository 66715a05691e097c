//! Line framing, the lazy header parse and the identity pipeline on arbitrary bytes: the output
//! is the input, byte for byte, whether the input is a buffer or a stream read in odd pieces;
//! validating and parsing never panic.
#![no_main]

use cchist::error::Origin;
use cchist::io::{framing, input};
use cchist::io::output::{Sink, SpanWriter};
use cchist::engine::pipeline::Pipeline;
use cchist::transcript::record::{check_json, Header, Record};
use libfuzzer_sys::fuzz_target;

/// A reader that hands out the input in pieces whose sizes come from the input itself.
struct Pieces<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Pieces<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(self.data.len()).min(out.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        self.step = self.step % 13 + 1;
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    // framing reproduces the input
    let mut again = Vec::with_capacity(data.len());
    for l in framing::lines(data, 1) {
        again.extend_from_slice(l.body);
        again.extend_from_slice(l.term.bytes());
        let _ = check_json(l.body);
        if let Some(h) = Header::parse(l.body) {
            let _ = h.tool_use_ids().count();
        }
        let rec = Record::from_line(l);
        assert_eq!(rec.untouched_slice(), Some(l.body));
    }
    assert_eq!(again, data);

    // identity over a buffer, checking every line for JSON validity too
    let mut p = Pipeline::identity();
    p.count_invalid = true;
    let mut out = Vec::new();
    let mut sink = SpanWriter::new(&mut out);
    let report = p.run_buffer(data, &Origin::stdin(), &mut sink).unwrap();
    sink.finish().unwrap();
    drop(sink);
    assert_eq!(out, data);
    assert!(!report.changed);

    // identity over a stream read in small pieces
    let mut streamed = Vec::new();
    let mut sink = SpanWriter::new(&mut streamed);
    let step = data.first().map_or(1, |b| *b as usize % 7 + 1);
    Pipeline::identity()
        .run_stream(Pieces { data, step }, &Origin::stdin(), &mut sink)
        .unwrap();
    sink.finish().unwrap();
    drop(sink);
    assert_eq!(streamed, data);

    // the batching reader hands out whole lines, in order
    let mut batches = Vec::new();
    let mut expect_line = 1usize;
    input::stream_chunks(Pieces { data, step }, &Origin::stdin(), |b, first| {
        assert_eq!(first, expect_line);
        expect_line += memchr_count(b);
        batches.extend_from_slice(b);
        Ok(())
    })
    .unwrap();
    assert_eq!(batches, data);

    let _ = cchist::findings::validate::validate(data);
});

fn memchr_count(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}
