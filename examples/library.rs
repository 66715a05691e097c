//! cchist as a library: run a shipped pipeline over one transcript and write the result.
//!
//! ```sh
//! cargo run --example library -- ~/.claude/projects/<project>/<session>.jsonl > scrubbed.jsonl
//! ```
//!
//! A crate of your own depends on the library without the binary's dependencies:
//! `cchist = { version = "0.1", default-features = false }`. The README's library section shows
//! the same lines.

use std::io::Write;
use std::path::Path;

use cchist::engine::config;
use cchist::error::Origin;
use cchist::io::output::SpanWriter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .ok_or("usage: library <transcript.jsonl>")?;
    let input = std::fs::read(&path)?;

    // A shipped pipeline by name (`scrub`, `share`, …) or the path of a pipeline file.
    let file = config::load_spec("scrub")?;
    let mut out = Vec::new();
    let mut sink = SpanWriter::new(&mut out);
    let report = file
        .pipeline
        .run_buffer(&input, &Origin::file(Path::new(&path)), &mut sink)?;

    std::io::stdout().write_all(&out)?;
    eprintln!("{} records in, {} out", report.records, report.records_out);
    Ok(())
}
