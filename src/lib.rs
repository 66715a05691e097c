//! # cchist — transform Claude Code session transcripts safely and fast
//!
//! How a record flows:
//!
//! 1. **Source** ([`io::input`]): a named file is memory-mapped (read when mapping fails); stdin
//!    is streamed in batches of complete lines.
//! 2. **Framing** ([`io::framing`]): lines are split on `\n` with memchr; each remembers its
//!    terminator (LF, CRLF, none), so output can reproduce input byte for byte.
//! 3. **Record** ([`transcript::record`]): raw bytes plus a lazily parsed
//!    [`transcript::record::Header`] (read by the allocation-free scanner in [`json::scan`]);
//!    the full JSON value is parsed only when a stage edits the record.
//! 4. **Stages** ([`stages`]) run in pipeline order ([`engine::pipeline`]). Record-scoped stages
//!    stream; one session-scoped stage makes the pipeline build a
//!    [`transcript::session::Session`].
//! 5. **Writer** ([`io::output`]): untouched records are copied as runs of original bytes; a
//!    changed record is re-serialized compactly with its keys in original order. An unchanged
//!    file is never rewritten; in-place writes are atomic ([`io::output::AtomicFile`]).
//!
//! Around that flow:
//!
//! - [`engine`]: pipeline files ([`engine::config`]) and the [`engine::runner`] that runs one
//!   over many files in parallel.
//! - [`claude`]: Claude Code's folders — which files make up a session
//!   ([`claude::layout::SessionFile`], the one owner of that question), walking arguments,
//!   rewriting a session in place / as a fork / back (`undo`), and the hooks.
//! - [`findings`]: `validate`, CI policies and the text/JSON/SARIF reports.
//! - [`error`]: typed errors that name file and line, and the exit status.
//!
//! The supported API is [`engine`] (build and run pipelines), [`stages`] (the stage trait and
//! the shipped stages), [`transcript`] (records, sessions, turns and steps, resume budgets,
//! damage Claude Code writes and how much of a session resume reaches),
//! [`claude::layout`] and [`error`]; the rest is public for the binary, benches and fuzz
//! targets and may change.
//!
//! ```
//! use cchist::{engine::pipeline::Pipeline, error::Origin, io::output::SpanWriter};
//! let input = b"{\"type\":\"user\"}\r\nnot json\n";
//! let mut out = Vec::new();
//! let mut sink = SpanWriter::new(&mut out);
//! Pipeline::identity().run_buffer(input, &Origin::stdin(), &mut sink).unwrap();
//! cchist::io::output::Sink::finish(&mut sink).unwrap();
//! drop(sink);
//! assert_eq!(out, input);
//! ```

#![warn(missing_docs)]

pub mod claude;
pub mod engine;
pub mod error;
pub mod findings;
pub mod import;
pub mod io;
pub mod json;
pub mod stages;
#[cfg(test)]
pub(crate) mod testkit;
pub mod transcript;
