//! Bytes in and out, nothing about transcripts: input sources, line framing, writers with
//! atomic in-place replacement, and the clock.

pub mod clock;
pub mod framing;
pub mod input;
pub mod lock;
pub mod output;
