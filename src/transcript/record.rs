//! A transcript record: its original bytes, a lazily parsed header, and an edited value.
//!
//! Most records are never parsed: a stage that does not care about a record never asks for
//! its [`Header`], and an untouched record is written back as its original bytes. A stage that
//! changes a record either replaces its bytes (a splice that keeps every other byte, as
//! `redact` does) or asks for the full [`serde_json::Value`] and edits that; the writer then
//! re-serializes it compactly with keys in their original order.

use std::cell::OnceCell;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::json::scan;

use crate::io::framing::{Line, Term};
use crate::io::output::Encode;

mod header;
mod kind;

pub use header::{Block, BlockIter, Blocks, Header};
pub use kind::Kind;

/// One line of a transcript.
///
/// Compact, as a session holds one per line: the borrowed input bytes, the header (parsed on
/// first use and shared with the session's index), and the rarely present edit state behind
/// one pointer.
pub struct Record<'a> {
    /// The input line (empty for a record a stage created).
    input: &'a [u8],
    /// Present once the record was parsed into a value or edited.
    edit: Option<Box<Edit>>,
    /// Shared so the session can keep the header of a record a stage drops (tombstones);
    /// [`not_object`] for a line that is not a JSON object.
    header: OnceCell<Arc<Header>>,
    id: u64,
    /// 1-based line number in the input; 0 for records a stage created.
    pub line: usize,
    edits: u32,
    /// How the line ended in the input; kept on output.
    pub term: Term,
}

/// What a record holds beyond its input line.
#[derive(Default)]
struct Edit {
    /// Bytes that replaced the input line ([`Record::set_raw`]).
    raw: Option<Vec<u8>>,
    /// The parsed (and maybe edited) value.
    value: Option<Value>,
    /// True when a stage changed the record.
    changed: bool,
}

/// The header every record whose line is not a JSON object points at.
fn not_object() -> &'static Arc<Header> {
    static H: OnceLock<Arc<Header>> = OnceLock::new();
    H.get_or_init(|| Arc::new(Header::default()))
}

/// The header every blank record (`{}`: no field a header reads, no string) shares, so such
/// records cost no allocation.
fn blank() -> &'static Arc<Header> {
    static H: OnceLock<Arc<Header>> = OnceLock::new();
    H.get_or_init(|| Arc::new(Header::default()))
}

fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<'a> Record<'a> {
    /// A record borrowing a framed input line.
    pub fn from_line(l: Line<'a>) -> Self {
        Record {
            input: l.body,
            edit: None,
            header: OnceCell::new(),
            id: next_id(),
            line: l.number,
            edits: 0,
            term: l.term,
        }
    }

    /// A record a stage created from a JSON value (written with an LF terminator).
    pub fn from_value(v: Value) -> Record<'static> {
        Record {
            input: &[],
            edit: Some(Box::new(Edit {
                raw: None,
                value: Some(v),
                changed: true,
            })),
            header: OnceCell::new(),
            id: next_id(),
            line: 0,
            edits: 1,
            term: Term::Lf,
        }
    }

    /// The bytes as read (or as last replaced with [`Record::set_raw`]); stale once
    /// [`Record::value_mut`] has been called.
    pub fn raw(&self) -> &[u8] {
        match self.edit.as_deref() {
            Some(Edit { raw: Some(r), .. }) => r,
            _ => self.input,
        }
    }

    /// The record's bytes as they would be written now (without terminator): the edited value
    /// serialized when a stage edited it as a value, else [`Record::raw`]. What a stage that
    /// reads bytes (redaction) must see, whatever stage edited the record before it.
    pub fn current_bytes(&self) -> std::borrow::Cow<'_, [u8]> {
        match self.written_value() {
            Some(v) => std::borrow::Cow::Owned(crate::json::number::to_vec(v)),
            None => std::borrow::Cow::Borrowed(self.raw()),
        }
    }

    fn value_ref(&self) -> Option<&Value> {
        self.edit.as_deref().and_then(|e| e.value.as_ref())
    }

    fn edit(&mut self) -> &mut Edit {
        self.edit.get_or_insert_with(Box::default)
    }

    /// True when a stage changed this record.
    pub fn is_changed(&self) -> bool {
        self.edit.as_deref().is_some_and(|e| e.changed)
    }

    /// The parsed header, or `None` when the line is not a JSON object.
    pub fn header(&self) -> Option<&Header> {
        self.cached_header().map(|h| &**h)
    }

    /// The parsed header as a shared handle (kept by the session after a stage drops the
    /// record, to leave a tombstone).
    pub fn header_arc(&self) -> Option<Arc<Header>> {
        self.cached_header().cloned()
    }

    /// True when the record's header is parsed and is `h` itself (not merely equal): no edit
    /// happened since `h` was taken with [`Record::header_arc`], or the record was blank then
    /// and is blank again.
    pub fn holds_header(&self, h: Option<&Arc<Header>>) -> bool {
        match (self.header.get(), h) {
            (Some(mine), Some(h)) => Arc::ptr_eq(mine, h),
            (Some(mine), None) => Arc::ptr_eq(mine, not_object()),
            (None, _) => false,
        }
    }

    fn cached_header(&self) -> Option<&Arc<Header>> {
        let h = self.header.get_or_init(|| {
            let h = match self.value_ref() {
                Some(v) => Header::from_value(v),
                None => Header::parse(self.raw()),
            };
            match h {
                None => not_object().clone(),
                Some(h) if h.is_blank() => blank().clone(),
                Some(h) => Arc::new(h),
            }
        });
        (!Arc::ptr_eq(h, not_object())).then_some(h)
    }

    /// The record `type`, if the line is a JSON object with one.
    pub fn record_type(&self) -> Option<&str> {
        self.header().map(|h| h.kind.as_str())
    }

    /// True when this line holds a JSON object (a real record).
    pub fn is_object(&self) -> bool {
        self.header().is_some()
    }

    /// The full JSON value, parsed on demand. Errors when the line is not valid JSON.
    pub fn value(&mut self) -> Result<&Value, String> {
        self.ensure_value()?;
        Ok(self.value_ref().expect("value parsed"))
    }

    /// The record as a value, for reading once: the one it holds when parsed already, else a
    /// fresh parse that is not kept. A pass that reads every record of a session (a digest, the
    /// turn list, the context count) would otherwise keep a parsed tree of each, ~10× its
    /// bytes (issue #25: 300k small records took `summarize-range` 889 MB).
    pub fn read_value(&self) -> Result<std::borrow::Cow<'_, Value>, String> {
        match self.value_ref() {
            Some(v) => Ok(std::borrow::Cow::Borrowed(v)),
            None => parse_value(self.raw()).map(std::borrow::Cow::Owned),
        }
    }

    /// True when the record is held as an edited [`Value`] (its raw bytes are stale).
    pub fn is_value_edited(&self) -> bool {
        self.edit
            .as_deref()
            .is_some_and(|e| e.changed && e.value.is_some())
    }

    /// Replace the record with an edited value (for a stage that parsed and transformed a copy
    /// of [`Record::raw`] itself, leaving the record untouched when nothing changed).
    pub fn set_value(&mut self, v: Value) {
        let e = self.edit();
        e.value = Some(v);
        e.changed = true;
        self.edits += 1;
        self.header = OnceCell::new();
    }

    /// Replace the value of the top-level field `key` with the JSON text `json` by splicing the
    /// bytes (everything else stays byte-identical, and nothing is parsed). False, with the
    /// record unchanged, when the field is absent or the record is held as an edited value:
    /// the caller then edits the value.
    ///
    /// ```
    /// use cchist::transcript::record::Record;
    /// let line = cchist::io::framing::lines(br#"{"parentUuid":"a", "x":1}"#, 1).next().unwrap();
    /// let mut r = Record::from_line(line);
    /// assert!(r.splice_top_field("parentUuid", "null"));
    /// assert_eq!(r.raw(), br#"{"parentUuid":null, "x":1}"#);
    /// ```
    pub fn splice_top_field(&mut self, key: &str, json: &str) -> bool {
        if self.is_value_edited() {
            return false;
        }
        let raw = self.raw();
        let Some(at) = scan::top_field_span(raw, key) else {
            return false;
        };
        let mut out = Vec::with_capacity(raw.len() + json.len());
        out.extend_from_slice(&raw[..at.start]);
        out.extend_from_slice(json.as_bytes());
        out.extend_from_slice(&raw[at.end..]);
        self.set_raw(out);
        true
    }

    /// The full JSON value for editing; marks the record changed.
    pub fn value_mut(&mut self) -> Result<&mut Value, String> {
        self.ensure_value()?;
        self.edits += 1;
        self.header = OnceCell::new();
        let e = self.edit();
        e.changed = true;
        Ok(e.value.as_mut().expect("value parsed"))
    }

    fn ensure_value(&mut self) -> Result<(), String> {
        if self.value_ref().is_none() {
            let v = parse_value(self.raw())?;
            self.edit().value = Some(v);
        }
        Ok(())
    }

    /// Replace the record's bytes (a splice that keeps everything else byte-identical).
    pub fn set_raw(&mut self, bytes: Vec<u8>) {
        let e = self.edit();
        e.raw = Some(bytes);
        e.value = None;
        e.changed = true;
        self.header = OnceCell::new();
        self.edits += 1;
    }

    /// How many times a stage asked to edit this record (for per-stage statistics).
    pub fn edits(&self) -> u32 {
        self.edits
    }

    /// A process-unique identity, stable while stages reorder or drop records. Records read
    /// from one input get increasing ids in input order, and a record a stage creates later
    /// gets a greater one than all of them.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The edited value to write instead of the bytes, if any.
    fn written_value(&self) -> Option<&Value> {
        self.edit
            .as_deref()
            .filter(|e| e.changed)
            .and_then(|e| e.value.as_ref())
    }

    /// Append this record's output bytes (body and terminator) to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self.written_value() {
            Some(v) => {
                crate::json::number::write(&mut *out, v).expect("writing to memory cannot fail");
            }
            None => out.extend_from_slice(self.raw()),
        }
        out.extend_from_slice(self.term.bytes());
    }

    /// This record's output line (body and terminator) when a stage replaced its bytes
    /// ([`Record::set_raw`]) with at least `min` of them, taken out of the record so that the
    /// writer keeps them instead of a copy; `None` (the record untouched) otherwise. The
    /// record is spent: write nothing else of it.
    pub fn take_output(&mut self, min: usize) -> Option<Vec<u8>> {
        let e = self.edit.as_deref_mut()?;
        if !e.changed || e.value.is_some() || e.raw.as_ref().is_none_or(|r| r.len() < min) {
            return None;
        }
        let mut bytes = e.raw.take()?;
        // In place: a vector of this size has room to spare (the redactor leaves it, and the
        // allocator rounds a big block up to its pages).
        bytes.extend_from_slice(self.term.bytes());
        Some(bytes)
    }

    /// Bytes this record writes (body and terminator). Serializes a changed value to count it.
    pub fn output_len(&self) -> u64 {
        let body = match self.written_value() {
            Some(v) => {
                let mut counter = ByteCounter(0);
                crate::json::number::write(&mut counter, v).expect("counting cannot fail");
                counter.0
            }
            None => self.raw().len() as u64,
        };
        body + self.term.bytes().len() as u64
    }

    /// The original borrowed input slice, when the record is unchanged and still borrows it.
    /// The writer uses this to copy runs of untouched records in one go.
    pub fn untouched_slice(&self) -> Option<&'a [u8]> {
        (!self.is_changed()).then_some(self.input)
    }
}

impl Encode for Record<'_> {
    fn write_to(&self, out: &mut Vec<u8>) {
        Record::write_to(self, out)
    }
}

/// A writer that only counts.
struct ByteCounter(u64);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Deepest nesting a record may have to be parsed into a [`Value`]. Real records nest about 20
/// levels; the limit keeps a hostile line from exhausting the stack when a value is dropped.
pub const MAX_VALUE_DEPTH: usize = 1000;

/// Parse a record into a [`Value`] to edit it: written back through the record, each number
/// keeps the text it was read with ([`crate::json::number`]). Lines nested deeper than
/// [`MAX_VALUE_DEPTH`] are refused.
pub fn parse_value(bytes: &[u8]) -> Result<Value, String> {
    crate::json::number::parse(bytes, parse_plain_value)
}

/// Below this nesting serde_json parses without its recursion limit tripping (it refuses 128).
const SERDE_JSON_DEPTH: usize = 100;

/// Parse a full JSON value as serde_json reads it (numbers as `u64`/`i64`/`f64`), for reading
/// only. Lines nested deeper than [`MAX_VALUE_DEPTH`] are refused.
pub fn parse_plain_value(bytes: &[u8]) -> Result<Value, String> {
    let depth = max_depth(bytes);
    if depth > MAX_VALUE_DEPTH {
        return Err(format!(
            "JSON nested {depth} levels deep (more than {MAX_VALUE_DEPTH}); cchist passes such a record through but cannot edit it"
        ));
    }
    // Within serde_json's own recursion limit (128) its recursive parser is safe on any
    // thread's stack; deeper lines grow the stack as they go (serde_stacker costs a closure
    // per container: a third of the parse of an ordinary record).
    if depth < SERDE_JSON_DEPTH {
        return serde_json::from_slice(bytes).map_err(|e| e.to_string());
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    let de = serde_stacker::Deserializer::new(&mut de);
    let v = <Value as serde::Deserialize>::deserialize(de).map_err(|e| e.to_string())?;
    Ok(v)
}

/// Deepest bracket nesting of a JSON text, ignoring brackets inside strings (which are
/// skipped with a SIMD search for the next quote or backslash).
fn max_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut i) = (0usize, 0usize, 0usize);
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => match crate::json::scan::string_end(bytes, i + 1) {
                Some(end) => i = end,
                None => return max, // unterminated: the parser reports it
            },
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    max
}

/// Check that `bytes` hold exactly one valid JSON value; returns the reason when not.
pub fn check_json(bytes: &[u8]) -> Result<(), String> {
    // The scanner is several times faster; serde_json words the reason for a bad line.
    if scan::is_json(bytes) {
        return Ok(());
    }
    // A blank line, the commonest bad line by far (a file of them is millions), is answered
    // as serde_json would, without starting a deserializer for it.
    if bytes.is_empty() {
        return Err("EOF while parsing a value at line 1 column 0".into());
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.disable_recursion_limit();
    {
        let sd = serde_stacker::Deserializer::new(&mut de);
        <serde::de::IgnoredAny as serde::Deserialize>::deserialize(sd)
            .map_err(|e| e.to_string())?;
    }
    de.end().map_err(|e| e.to_string())
}

/// A reason for an invalid line that tells truncation, NUL padding and bad UTF-8 apart.
pub fn describe_invalid(body: &[u8], term: Term, serde_reason: &str) -> String {
    if body.is_empty() {
        return "empty line (not a JSON record)".into();
    }
    if body.contains(&0) {
        return format!("line contains NUL bytes (an interrupted write?): {serde_reason}");
    }
    if std::str::from_utf8(body).is_err() {
        return format!("line is not valid UTF-8: {serde_reason}");
    }
    if term == Term::None && serde_reason.contains("EOF") {
        return format!("truncated last line (the writer was interrupted): {serde_reason}");
    }
    format!("invalid JSON: {serde_reason}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::framing::lines;

    #[test]
    fn depth_ignores_brackets_in_strings() {
        for (text, depth) in [
            (&br#"{"a":[1,{"b":"[[[{{"}]}"#[..], 3),
            (br#"{"a":"\"[[","b":[[]]}"#, 3),
            (br#"{"a":"\\","b":[]}"#, 2),
            (br#"{"a":"\","b":[]}"#, 1),
            (br#""\"#, 0),
            (br#"[[["#, 3),
            (br#"{"a":"x\"#, 1),
        ] {
            assert_eq!(max_depth(text), depth, "{}", String::from_utf8_lossy(text));
        }
    }

    /// A session holds one record and one header per line: a field added carelessly (or a
    /// `String` where a span does) multiplies by millions of lines.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn layout_stays_compact() {
        use std::mem::size_of;
        // input 16, edit 8, header 8, id 8, line 8, edits 4, term 1.
        assert_eq!(size_of::<Record>(), 56);
        // kind 24, longest_string 8, arena 16, 14 spans of 8, blocks 16, five flags.
        assert_eq!(size_of::<Header>(), 184);
    }

    #[test]
    fn untouched_record_writes_original_bytes() {
        let input = b"{\"b\":1.50,\"a\":\"x\"}\r\n";
        let l = lines(input, 1).next().unwrap();
        let r = Record::from_line(l);
        let mut out = Vec::new();
        r.write_to(&mut out);
        assert_eq!(out, input);
    }

    #[test]
    fn edited_record_keeps_key_order_and_numbers() {
        let input = b"{\"b\":1.50,\"a\":\"x\",\"n\":561.0564953984477}\n";
        let mut r = Record::from_line(lines(input, 1).next().unwrap());
        r.value_mut().unwrap()["a"] = Value::from("y");
        let mut out = Vec::new();
        r.write_to(&mut out);
        assert_eq!(out, b"{\"b\":1.50,\"a\":\"y\",\"n\":561.0564953984477}\n");
    }

    #[test]
    fn check_json_rejects_trailing_garbage_and_truncation() {
        assert!(check_json(b"{\"a\":1}").is_ok());
        assert!(check_json(b"{\"a\":1} x").is_err());
        assert!(check_json(b"{\"a\":").is_err());
        // The blank-line shortcut words it as serde_json does.
        let serde = serde_json::from_slice::<serde::de::IgnoredAny>(b"").unwrap_err();
        assert_eq!(check_json(b""), Err(serde.to_string()));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let mut s = "[".repeat(100_000);
        s.push_str(&"]".repeat(100_000));
        assert!(check_json(s.as_bytes()).is_ok());
        let mut r = Record::from_line(lines(s.as_bytes(), 1).next().unwrap());
        assert!(r.header().is_none());
        assert!(r.value().unwrap_err().contains("nested"));
    }
}
