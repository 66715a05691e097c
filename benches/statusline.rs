//! The status line's cost on a 100 MB session (`cargo bench --bench statusline`): reading
//! the transcript's end ([`context::tail`]) and the limits of its model. Target ≤ 20 ms; it
//! should not grow with the file, since only the end is read.

use std::io::Write;

use cchist::transcript::context::{self, Limits, Overrides, Timeline};
use criterion::{criterion_group, criterion_main, Criterion};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A session of about `mb` MB: turns of a prompt, an assistant tool call with usage, and a
/// 4 KB tool result.
fn session(mb: usize) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().expect("temp file");
    let result = "r".repeat(4_000);
    let mut parent = String::from("null");
    let mut written = 0usize;
    let mut t = 0u64;
    let mut w = std::io::BufWriter::new(f.as_file_mut());
    while written < mb * 1_000_000 {
        t += 1;
        let lines = [
            format!(
                r#"{{"type":"user","uuid":"u{t}","parentUuid":{parent},"sessionId":"s","message":{{"role":"user","content":"prompt {t}"}}}}"#
            ),
            format!(
                r#"{{"type":"assistant","uuid":"a{t}","parentUuid":"u{t}","sessionId":"s","message":{{"id":"m{t}","model":"claude-sonnet-4-6","role":"assistant","content":[{{"type":"tool_use","id":"toolu_{t}","name":"Bash","input":{{"command":"ls"}}}}],"usage":{{"input_tokens":5,"cache_read_input_tokens":{},"cache_creation_input_tokens":100,"output_tokens":20}}}}}}"#,
                (t * 1000) % 150_000
            ),
            format!(
                r#"{{"type":"user","uuid":"r{t}","parentUuid":"a{t}","sessionId":"s","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_{t}","content":"{result}"}}]}}}}"#
            ),
        ];
        for l in lines {
            written += l.len() + 1;
            writeln!(w, "{l}").expect("write");
        }
        parent = format!("\"r{t}\"");
    }
    w.flush().expect("flush");
    drop(w);
    f
}

fn bench(c: &mut Criterion) {
    let f = session(100);
    let o = Overrides::default();
    c.bench_function("statusline/tail+limits 100MB", |b| {
        b.iter(|| {
            let t = context::tail(f.path(), 4 * 1024 * 1024).expect("tail");
            let l = Limits::of(t.model.as_deref().unwrap_or("x"), &o);
            (l.standing(t.tokens), Timeline::growth(&t.per_turn, 5))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
