//! Bytes in and out, nothing about transcripts: input sources, line framing, writers, the one
//! replace operation ([`replace`]) and the backups it keeps ([`backup`]), the clock, and how
//! a byte count is said ([`size`]).

pub mod backup;
pub mod clock;
pub mod framing;
pub mod input;
pub mod lock;
pub mod output;
pub mod replace;
pub mod size;
