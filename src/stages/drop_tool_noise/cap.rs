//! Capping and image replacement by splicing the raw record bytes (no full parse for the common
//! case), and the `serde_json` fallback the session pass uses on records it edits anyway.

use super::*;
use crate::io::size::human_bytes;

/// One change [`edit_by_splicing`] makes to a record's bytes.
pub(super) enum Splice {
    /// Cap the JSON string at this span (quotes included).
    Cap(usize, usize),
    /// Put this JSON text in place of the span.
    Put(usize, usize, String),
}

impl Splice {
    fn start(&self) -> usize {
        match self {
            Splice::Cap(s, _) | Splice::Put(s, _, _) => *s,
        }
    }
}

/// Make, in the record's own bytes, the edits [`DropToolNoise::transform`] makes on a parsed
/// value: cap the `content` of `tool_result` blocks (a string, or the `text` of its text
/// items) and every string of `toolUseResult`; with `images`, replace base64 image blocks
/// (top level or inside a result) with a text block and empty `toolUseResult` `base64`
/// strings. Long strings are decoded, cut with [`cap_text`] and written back JSON-escaped as
/// serde_json writes them; every other byte stays as it was, and nothing else is decoded (an
/// image's base64 is never copied). Returns the new bytes (empty when nothing changed) and the
/// counts; `None` when the record does not scan or nests too deeply: the caller then takes the
/// parsing path.
pub(super) fn edit_by_splicing(raw: &[u8], cap: usize, images: bool) -> Option<(Vec<u8>, Counts)> {
    use scan::Cursor;
    let mut edits: Vec<Splice> = Vec::new();
    let mut counts = Counts::default();
    let mut c = Cursor::new(raw);
    let mut results = false;
    let mut tool_use_result: Option<(usize, usize)> = None;
    scan::content_blocks(
        &mut c,
        |c, key| {
            if key.is("toolUseResult") {
                tool_use_result = Some(span(c)?);
                return Ok(());
            }
            c.skip_value()
        },
        |c| {
            let Some(block) = block_fields(c, "content")? else {
                return Ok(());
            };
            match block.kind.as_deref() {
                Some("image") if images => image(raw, &block, &mut edits, &mut counts),
                Some("tool_result") => {
                    results = true;
                    if let Some((from, to)) = block.field {
                        result_content(raw, from, to, cap, images, &mut edits, &mut counts)?;
                    }
                    Ok(())
                }
                _ => Ok(()),
            }
        },
    )
    .ok()?;
    if !c.at_end() {
        return None;
    }
    if let (true, Some((from, to))) = (results, tool_use_result) {
        let mut c = Cursor::new(&raw[..to]);
        c.skip_to(from);
        strings_over(&mut c, cap, images, 0, &mut edits, &mut counts).ok()?;
    }
    edits.sort_unstable_by_key(Splice::start);
    let mut puts: Vec<(usize, usize, String)> = Vec::with_capacity(edits.len());
    for e in edits {
        match e {
            Splice::Cap(start, end) => {
                let text: String = serde_json::from_slice(&raw[start..end]).ok()?;
                if let Some(new) = cap_text(&text, cap) {
                    counts.capped += 1;
                    puts.push((start, end, serde_json::to_string(&new).ok()?));
                }
            }
            Splice::Put(start, end, text) => puts.push((start, end, text)),
        }
    }
    if puts.is_empty() {
        return Some((Vec::new(), counts));
    }
    let size = puts
        .iter()
        .fold(raw.len(), |n, (s, e, t)| n - (e - s) + t.len());
    let mut out = Vec::with_capacity(size);
    let mut done = 0;
    for (start, end, text) in puts {
        out.extend_from_slice(&raw[done..start]);
        out.extend_from_slice(text.as_bytes());
        done = end;
    }
    out.extend_from_slice(&raw[done..]);
    Some((out, counts))
}

/// The span of the value at the cursor, which is skipped.
pub(super) fn span(c: &mut scan::Cursor<'_>) -> scan::Scan<(usize, usize)> {
    c.ws();
    let start = c.pos();
    c.skip_value()?;
    Ok((start, c.pos()))
}

/// What [`edit_by_splicing`] needs of a content block.
pub(super) struct BlockFields {
    /// The block's span.
    at: (usize, usize),
    /// Its `type`, when a string.
    kind: Option<String>,
    /// The span of the member named by the caller (`content` or `text`).
    field: Option<(usize, usize)>,
    /// The span of `source` (images).
    source: Option<(usize, usize)>,
}

/// Read a block object at the cursor (`None`, skipped, when it is not an object); `type` may
/// follow the other members, so spans are noted and the caller decides.
pub(super) fn block_fields(
    c: &mut scan::Cursor<'_>,
    field: &str,
) -> scan::Scan<Option<BlockFields>> {
    if c.peek() != Some(b'{') {
        c.skip_value()?;
        return Ok(None);
    }
    let start = c.pos();
    let (mut kind, mut found, mut source) = (None, None, None);
    c.object(|c, key| {
        if key.is("type") {
            kind = c.opt_string()?.and_then(|t| t.decode());
        } else if key.is(field) {
            found = Some(span(c)?);
        } else if key.is("source") {
            source = Some(span(c)?);
        } else {
            c.skip_value()?;
        }
        Ok(())
    })?;
    Ok(Some(BlockFields {
        at: (start, c.pos()),
        kind,
        field: found,
        source,
    }))
}

/// Replace a base64 image block with the text block [`replace_image`] writes.
pub(super) fn image(
    raw: &[u8],
    block: &BlockFields,
    edits: &mut Vec<Splice>,
    counts: &mut Counts,
) -> scan::Scan<()> {
    let Some((from, to)) = block.source else {
        return Ok(());
    };
    let mut c = scan::Cursor::new(&raw[..to]);
    c.skip_to(from);
    if c.peek() != Some(b'{') {
        return Ok(());
    }
    let (mut base64, mut media, mut data_len) = (false, None, None);
    c.object(|c, key| {
        if key.is("type") {
            base64 = c.opt_string()?.is_some_and(|t| t.is("base64"));
        } else if key.is("media_type") {
            media = c.opt_string()?.and_then(|t| t.decode());
        } else if key.is("data") {
            data_len = c.opt_string()?.map(|d| {
                if d.escaped {
                    d.decode().map_or(d.body.len(), |t| t.len())
                } else {
                    d.body.len()
                }
            });
        } else {
            c.skip_value()?;
        }
        Ok(())
    })?;
    let (true, Some(len)) = (base64, data_len) else {
        return Ok(());
    };
    let text = image_text(media.as_deref().unwrap_or("image"), len);
    let replacement = json!({"type": "text", "text": text}).to_string();
    edits.push(Splice::Put(block.at.0, block.at.1, replacement));
    counts.images += 1;
    Ok(())
}

/// The edits of a `tool_result`'s `content` at `raw[from..to]`.
pub(super) fn result_content(
    raw: &[u8],
    from: usize,
    to: usize,
    cap: usize,
    images: bool,
    edits: &mut Vec<Splice>,
    counts: &mut Counts,
) -> scan::Scan<()> {
    let mut c = scan::Cursor::new(&raw[..to]);
    c.skip_to(from);
    match c.peek() {
        Some(b'"') => long_string(&mut c, cap, edits),
        Some(b'[') => c.array(|c| {
            let Some(item) = block_fields(c, "text")? else {
                return Ok(());
            };
            match item.kind.as_deref() {
                Some("image") if images => image(raw, &item, edits, counts),
                Some("text") => {
                    if let Some((start, end)) = item.field {
                        if raw[start] == b'"' && end - start - 2 > cap {
                            edits.push(Splice::Cap(start, end));
                        }
                    }
                    Ok(())
                }
                _ => Ok(()),
            }
        }),
        _ => c.skip_value(),
    }
}

/// Note the string at the cursor for capping when its text (as written) is over `cap`.
pub(super) fn long_string(
    c: &mut scan::Cursor<'_>,
    cap: usize,
    edits: &mut Vec<Splice>,
) -> scan::Scan<()> {
    let (start, end) = span(c)?;
    if end - start - 2 > cap {
        edits.push(Splice::Cap(start, end));
    }
    Ok(())
}

/// Deepest `toolUseResult` nesting walked here; deeper values take the parsing path.
pub(super) const MAX_SPLICE_DEPTH: usize = 64;

/// The edits of a `toolUseResult` value: every string longer than `cap`; with `images`, every
/// non-empty `base64` string emptied.
pub(super) fn strings_over(
    c: &mut scan::Cursor<'_>,
    cap: usize,
    images: bool,
    depth: usize,
    edits: &mut Vec<Splice>,
    counts: &mut Counts,
) -> scan::Scan<()> {
    if depth > MAX_SPLICE_DEPTH {
        return Err(scan::NotJson);
    }
    match c.peek() {
        Some(b'"') => long_string(c, cap, edits),
        Some(b'[') => c.array(|c| strings_over(c, cap, images, depth + 1, edits, counts)),
        Some(b'{') => c.object(|c, key| {
            if images && key.is("base64") && c.peek() == Some(b'"') {
                let (start, end) = span(c)?;
                if end - start > 2 {
                    edits.push(Splice::Put(start, end, "\"\"".into()));
                    counts.images += 1;
                }
                return Ok(());
            }
            strings_over(c, cap, images, depth + 1, edits, counts)
        }),
        _ => c.skip_value(),
    }
}

#[derive(Default)]
pub(super) struct Counts {
    pub(super) capped: u64,
    pub(super) images: u64,
}

pub(super) fn result_is_error(s: &Session<'_>, id: &str) -> bool {
    s.tool_results.get(id).into_iter().flatten().any(|&r| {
        s.header(r).is_some_and(|h| {
            h.blocks()
                .iter()
                .any(|b| b.kind() == "tool_result" && b.tool_use_id() == Some(id) && b.is_error())
        })
    })
}

pub(super) fn replace_image(b: &mut Value, c: &mut Counts) {
    let src = &b["source"];
    if src["type"] != "base64" {
        return;
    }
    let Some(data) = src["data"].as_str() else {
        return;
    };
    let media = src["media_type"].as_str().unwrap_or("image");
    *b = json!({"type": "text", "text": image_text(media, data.len())});
    c.images += 1;
}

/// The text that stands for a removed image of `base64_len` bytes of base64.
pub(super) fn image_text(media: &str, base64_len: usize) -> String {
    format!(
        "[image removed by cchist: {media}, {}]",
        human_bytes((base64_len / 4 * 3) as u64)
    )
}

/// Cap every long string in a `toolUseResult` value; with `images`, empty `base64` copies.
pub(super) fn cap_all(v: &mut Value, cap: usize, images: bool, c: &mut Counts) {
    match v {
        Value::String(t) => cap_string(t, cap, c),
        Value::Array(a) => a.iter_mut().for_each(|x| cap_all(x, cap, images, c)),
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if images && k == "base64" {
                    if let Value::String(t) = x {
                        if !t.is_empty() {
                            t.clear();
                            c.images += 1;
                        }
                        continue;
                    }
                }
                cap_all(x, cap, images, c);
            }
        }
        _ => {}
    }
}

pub(super) fn cap_string(t: &mut String, cap: usize, c: &mut Counts) {
    if let Some(new) = cap_text(t, cap) {
        *t = new;
        c.capped += 1;
    }
}

/// `text` cut to at most `cap` bytes: head and tail (on line boundaries when one is near)
/// around a marker naming how much was removed. `None` when it fits.
pub fn cap_text(text: &str, cap: usize) -> Option<String> {
    if cap == 0 || text.len() <= cap {
        return None;
    }
    // Room for the marker (its size number has at most 7 characters).
    let budget = cap.saturating_sub(64);
    let half = budget / 2;
    let bytes = text.as_bytes();
    // A newline byte is always a char boundary, so snapping to one keeps UTF-8 intact.
    let mut head = floor_boundary(text, half);
    let lo = head - head.min(half / 4);
    if let Some(nl) = memchr::memrchr(b'\n', &bytes[lo..head]) {
        head = lo + nl + 1;
    }
    let mut tail = ceil_boundary(text, text.len() - half);
    let hi = (tail + half / 4).min(text.len());
    if let Some(nl) = memchr::memchr(b'\n', &bytes[tail..hi]) {
        tail += nl + 1;
    }
    let removed = tail - head;
    let marker = format!(
        "[… {} of tool output removed by cchist …]",
        human_bytes(removed as u64)
    );
    let mut out = String::with_capacity(head + marker.len() + 2 + text.len() - tail);
    out.push_str(&text[..head]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    out.push('\n');
    out.push_str(&text[tail..]);
    debug_assert!(out.len() <= cap, "{} > {cap}", out.len());
    Some(out)
}

pub(super) fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub(super) fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}
