//! The count read from the end of a transcript only ([`tail`]): what the status line needs,
//! in time bounded by the bytes it reads whatever the file's size.

use super::*;

/// The count read from the end of a transcript only: what the status line needs, in time
/// bounded by `max_bytes` whatever the file's size.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tail {
    /// The count now (last real usage + estimate after it).
    pub tokens: u64,
    /// The last real usage, when the tail holds one.
    pub usage: Option<Usage>,
    /// The model of that record.
    pub model: Option<String>,
    /// The counts at the ends of the turns the tail holds (for [`Timeline::growth`]).
    pub per_turn: Vec<Option<u64>>,
}

/// How many bytes [`tail`] reads back at a time.
const TAIL_CHUNK: u64 = 256 * 1024;

/// Read `path` from its end, a chunk at a time, until the tail holds a real assistant usage
/// and a few turns before it, or `max_bytes` are read; then count as [`Timeline`] does over
/// the whole lines of that tail (sidechains and non-conversational records left out; the
/// chain is not followed, which the end of a live session does not need).
pub fn tail(path: &std::path::Path, max_bytes: u64) -> std::io::Result<Tail> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut start = len;
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let from = start
            .saturating_sub(TAIL_CHUNK)
            .max(len.saturating_sub(max_bytes));
        if from == start {
            break;
        }
        let mut chunk = vec![0u8; (start - from) as usize];
        f.seek(SeekFrom::Start(from))?;
        f.read_exact(&mut chunk)?;
        chunk.extend_from_slice(&buf);
        buf = chunk;
        start = from;
        // Enough once the part after the first line break holds six prompts-or-usages.
        let usages = memchr::memmem::find_iter(&buf, b"\"usage\"").count();
        if usages >= 6 || start == 0 {
            break;
        }
    }
    // Whole lines only: drop the partial first line unless the file starts here.
    let body = if start == 0 {
        &buf[..]
    } else {
        match memchr::memchr(b'\n', &buf) {
            Some(p) => &buf[p + 1..],
            None => &[][..],
        }
    };
    let records: Vec<crate::transcript::record::Record<'_>> = crate::io::framing::lines(body, 1)
        .map(crate::transcript::record::Record::from_line)
        .collect();
    let mut s = Session::new(records);
    let mut t = Tail::default();
    let mut count = 0u64;
    let mut seen_usage = false;
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if h.subtype() == Some("compact_boundary") {
            count = 0;
            t.per_turn.clear();
            t.usage = None;
            continue;
        }
        if h.is_sidechain || !matches!(h.kind, Kind::User | Kind::Assistant | Kind::Attachment) {
            continue;
        }
        if crate::transcript::session::is_prompt(h) && seen_usage {
            t.per_turn.push(Some(count));
        }
        let usage = if h.kind == Kind::Assistant {
            s.records[i].read_value().ok().and_then(|v| Usage::of(&v))
        } else {
            None
        };
        match usage {
            Some(u) => {
                count = u.total();
                seen_usage = true;
                t.usage = Some(u);
                t.model = s.records[i].read_value().ok().and_then(|v| {
                    v.pointer("/message/model")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            }
            // Before the tail's first usage the count is unknown: what came before is not read.
            None if seen_usage => count += budget::record_tokens(&mut s, i),
            None => {}
        }
    }
    if seen_usage {
        t.per_turn.push(Some(count));
    }
    t.tokens = count;
    Ok(t)
}
