//! # cchist — transform Claude Code session transcripts safely and fast
//!
//! How a record flows:
//!
//! 1. **Source** ([`input`]): a named file is memory-mapped (read when mapping fails); stdin is
//!    streamed in batches of complete lines.
//! 2. **Framing** ([`input::framing`]): lines are split on `\n` with memchr; each remembers its
//!    terminator (LF, CRLF, none), so output can reproduce input byte for byte.
//! 3. **Record** ([`record`]): raw bytes plus a lazily parsed [`record::Header`]; the full JSON
//!    value is parsed only when a stage edits the record.
//! 4. **Stages** ([`stages`]) run in pipeline order ([`pipeline`]). Record-scoped stages stream;
//!    one session-scoped stage makes the pipeline build a [`session::Session`].
//! 5. **Writer** ([`output`]): untouched records are copied as runs of original bytes; a changed
//!    record is re-serialized compactly with its keys in original order. An unchanged file is
//!    never rewritten; in-place writes are atomic ([`output::AtomicFile`]).
//!
//! Pipelines are TOML files ([`config`]); [`runner`] runs one over many files in parallel.
//!
//! ```
//! use cchist::{output::SpanWriter, pipeline::Pipeline, error::Origin};
//! let input = b"{\"type\":\"user\"}\r\nnot json\n";
//! let mut out = Vec::new();
//! let mut sink = SpanWriter::new(&mut out);
//! Pipeline::identity().run_buffer(input, &Origin::stdin(), &mut sink).unwrap();
//! cchist::output::Sink::finish(&mut sink).unwrap();
//! drop(sink);
//! assert_eq!(out, input);
//! ```

#![warn(missing_docs)]

pub mod clock;
pub mod config;
pub mod edit;
pub mod error;
pub mod history;
pub mod hook;
pub mod input;
pub mod locate;
pub mod mutate;
pub mod output;
pub mod pipeline;
pub mod policy;
pub mod record;
pub mod report;
pub mod runner;
pub mod session;
pub mod stages;
pub mod validate;
pub mod walk;
