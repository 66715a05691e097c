//! A session-scoped pipeline reading a stream holds the whole input in a buffer it owns; the
//! output must be written before that buffer goes away. (It once was not: the last run of
//! untouched records was written from freed memory when the caller finished the sink, which
//! crashed on a 1 GB input and could write stale bytes on smaller ones.)

use cchist::engine::config;
use cchist::error::Origin;
use cchist::io::output::{Sink, SpanWriter};

/// A clean chain of `n` records, a few MB in all.
fn session(n: usize) -> Vec<u8> {
    let pad = "x".repeat(2000);
    let mut out = String::new();
    let mut parent = "null".to_string();
    for i in 0..n {
        let uuid = format!("00000000-0000-4000-8000-{i:012}");
        out.push_str(&format!(
            r#"{{"type":"user","uuid":"{uuid}","parentUuid":{parent},"message":{{"role":"user","content":"{pad} {i}"}}}}"#
        ));
        out.push('\n');
        parent = format!("\"{uuid}\"");
    }
    out.into_bytes()
}

#[test]
fn stream_into_session_pipeline_writes_every_byte_before_the_buffer_goes() {
    let input = session(3000);
    let pipeline = config::load_spec("scrub").unwrap().pipeline;
    assert!(pipeline.needs_session());
    let mut out = Vec::new();
    {
        let mut sink = SpanWriter::new(&mut out);
        pipeline
            .run_stream(&input[..], &Origin::stdin(), &mut sink)
            .unwrap();
        // Whatever reuses the memory of the freed input buffer must not reach the output.
        let scribble = vec![b'#'; input.len()];
        std::hint::black_box(&scribble);
        sink.finish().unwrap();
    }
    assert!(out == input, "the output differs from the (clean) input");
}

/// Through the binary: stdin redirected from a file (mapped), piped (read whole), and the
/// file named on the command line give the same output.
#[test]
fn stdin_from_file_pipe_and_path_agree() {
    use assert_cmd::Command;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    // A damaged chain, so relink has something to write (`relink` repairs damage already in
    // the file; `scrub` no longer does since issue 17).
    let mut text = String::from_utf8(session(50)).unwrap();
    text = text.replacen("00000000-0000-4000-8000-000000000010\"", "gone\"", 1);
    std::fs::write(&path, &text).unwrap();
    let by_path = Command::from_std(crate::common::cchist())
        .args(["relink"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(by_path.status.success());
    assert_ne!(by_path.stdout, text.as_bytes(), "relink repaired nothing");
    let redirected = crate::common::cchist()
        .args(["relink"])
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    let piped = Command::from_std(crate::common::cchist())
        .args(["relink"])
        .write_stdin(text.clone())
        .output()
        .unwrap();
    assert_eq!(redirected.stdout, by_path.stdout);
    assert_eq!(piped.stdout, by_path.stdout);
}
