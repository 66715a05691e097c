//! `drop-tool-noise`: make a transcript smaller without breaking it.
//!
//! - drops `progress` records and bookkeeping record types / attachment subtypes (defaults: the
//!   set transcript-format.md §11 found safe against Claude Code 2.1.328);
//! - caps tool output: a `tool_result` text, and any string of the matching `toolUseResult`,
//!   longer than `max_tool_output` bytes keeps its head and tail around a marker
//!   `[… 183 kB of tool output removed by cchist …]` (the result stays under the cap, so a second
//!   run changes nothing);
//! - replaces base64 images with a short text block (and empties `toolUseResult` `base64`
//!   copies);
//! - collapses repeated identical reads (same `Read` input, same result) to the latest one;
//! - drops whole tool calls by tool-name glob, optionally keeping failed ones.
//!
//! A dropped tool call goes with its result(s) (and so its `toolUseResult`) and with the
//! `progress`/hook records naming its id; pieces of an assistant message left with nothing but
//! thinking go too. When anything with a uuid may be dropped the stage is session-scoped and
//! ends by running [`relink`](super::relink::relink), so the chain stays valid. With only
//! capping and image replacement enabled it is record-scoped and streams.
//!
//! Not handled here: the `tool-results/<file>.txt` companion files of dropped calls stay on
//! disk (the stage sees only the transcript stream).

use std::collections::{HashMap, HashSet};

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{OptionError, Result};
use crate::json::scan;
use crate::stages::relink::{object_mut, relink, stage_err};
use crate::stages::{options, Cx, Scope, Stage, StageDef, Verdict};
use crate::transcript::record::Record;
use crate::transcript::session::Session;

const NAME: &str = "drop-tool-noise";

/// Smallest accepted `max_tool_output` (head + tail + marker must fit).
pub const MIN_CAP: usize = 256;

/// Options of `drop-tool-noise`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropToolNoiseOptions {
    /// Drop every `progress` record.
    #[serde(default = "yes")]
    pub drop_progress: bool,
    /// Record `type`s to drop (globs).
    #[serde(default = "default_types")]
    pub drop_types: Vec<String>,
    /// `attachment.type`s to drop (globs).
    #[serde(default = "default_attachments")]
    pub drop_attachments: Vec<String>,
    /// Cap tool output longer than this many bytes (0 = no cap).
    #[serde(default = "default_cap")]
    pub max_tool_output: usize,
    /// Replace base64 images with a text placeholder.
    #[serde(default = "yes")]
    pub replace_images: bool,
    /// Keep only the latest of repeated identical `Read` calls.
    #[serde(default = "yes")]
    pub collapse_reads: bool,
    /// Drop whole tool calls whose tool name matches one of these globs (e.g. `mcp__*`).
    #[serde(default)]
    pub drop_tools: Vec<String>,
    /// With `drop_tools`: keep calls whose result is an error.
    #[serde(default = "yes")]
    pub keep_errors: bool,
}

fn yes() -> bool {
    true
}

/// Default `drop_types`: API request bookkeeping and session state of Claude Code 2.1.x.
pub fn default_types() -> Vec<String> {
    ["api-request*", "atis-latch", "tools-used", "cost-state"]
        .map(String::from)
        .to_vec()
}

/// Default `drop_attachments`: context snapshots the CLI re-creates on resume.
pub fn default_attachments() -> Vec<String> {
    [
        "prompt_snapshot",
        "skill_listing",
        "agent_listing_delta",
        "deferred_tools_delta",
    ]
    .map(String::from)
    .to_vec()
}

/// Default `max_tool_output` (bytes).
pub const DEFAULT_CAP: usize = 16 * 1024;

fn default_cap() -> usize {
    DEFAULT_CAP
}

impl Default for DropToolNoiseOptions {
    fn default() -> Self {
        DropToolNoiseOptions {
            drop_progress: true,
            drop_types: default_types(),
            drop_attachments: default_attachments(),
            max_tool_output: DEFAULT_CAP,
            replace_images: true,
            collapse_reads: true,
            drop_tools: Vec::new(),
            keep_errors: true,
        }
    }
}

/// The `drop-tool-noise` stage.
pub struct DropToolNoise {
    opts: DropToolNoiseOptions,
    types: GlobSet,
    attachments: GlobSet,
    tools: GlobSet,
}

fn globs(key: &str, pats: &[String]) -> std::result::Result<GlobSet, OptionError> {
    let mut b = GlobSetBuilder::new();
    for p in pats {
        b.add(Glob::new(p).map_err(|e| OptionError::key(key, format!("bad glob `{p}`: {e}")))?);
    }
    b.build().map_err(|e| OptionError::key(key, e.to_string()))
}

impl DropToolNoise {
    /// Build the stage, validating the options.
    pub fn new(opts: DropToolNoiseOptions) -> std::result::Result<Self, OptionError> {
        if opts.max_tool_output != 0 && opts.max_tool_output < MIN_CAP {
            return Err(OptionError::key(
                "max_tool_output",
                format!(
                    "{} is too small; use 0 (no cap) or at least {MIN_CAP}",
                    opts.max_tool_output
                ),
            ));
        }
        Ok(DropToolNoise {
            types: globs("drop_types", &opts.drop_types)?,
            attachments: globs("drop_attachments", &opts.drop_attachments)?,
            tools: globs("drop_tools", &opts.drop_tools)?,
            opts,
        })
    }

    fn drops_chain_records(&self) -> bool {
        let o = &self.opts;
        o.drop_progress
            || !o.drop_types.is_empty()
            || !o.drop_attachments.is_empty()
            || o.collapse_reads
            || !o.drop_tools.is_empty()
    }

    /// True when a record of this header is dropped for its type alone.
    fn drops_type(&self, h: &crate::transcript::record::Header) -> bool {
        (self.opts.drop_progress && h.ty == "progress")
            || (!h.ty.is_empty() && self.types.is_match(&h.ty))
            || (h.ty == "attachment"
                && h.subtype
                    .as_deref()
                    .is_some_and(|t| self.attachments.is_match(t)))
    }
}

/// The stage's entry in the registry.
pub const DEF: StageDef = StageDef {
    name: "drop-tool-noise",
    about: "drop progress/bookkeeping records, cap tool output, replace images, drop tool calls",
    build,
};

fn build(table: toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError> {
    let opts: DropToolNoiseOptions = options(table)?;
    Ok(Box::new(DropToolNoise::new(opts)?))
}

impl Stage for DropToolNoise {
    fn name(&self) -> &'static str {
        DEF.name
    }

    fn scope(&self) -> Scope {
        if self.drops_chain_records() {
            Scope::Session
        } else {
            Scope::Record
        }
    }

    fn record(&self, rec: &mut Record<'_>, cx: &mut Cx) -> Result<Verdict> {
        // Streaming: only records outside the chain may go without a relink.
        if let Some(h) = rec.header() {
            if h.uuid.is_none() && self.drops_type(h) {
                return Ok(Verdict::Drop);
            }
        }
        self.edit(rec, cx)?;
        Ok(Verdict::Keep)
    }

    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
        let mut drop: Vec<bool> = (0..s.records.len())
            .map(|i| s.header(i).is_some_and(|h| self.drops_type(h)))
            .collect();
        let mut calls: HashSet<String> = self.tool_calls_to_drop(s)?;
        let collapsed = if self.opts.collapse_reads {
            self.repeated_reads(s)
        } else {
            HashSet::new()
        };
        let n_collapsed = collapsed.difference(&calls).count() as u64;
        let n_dropped = calls.len() as u64;
        calls.extend(collapsed);
        self.drop_calls(s, &calls, &mut drop, cx)?;
        for (i, dropped) in drop.iter().enumerate() {
            if !dropped {
                self.edit(&mut s.records[i], cx)?;
            }
        }
        let mut i = 0;
        s.records.retain(|_| {
            i += 1;
            !drop[i - 1]
        });
        if n_dropped > 0 {
            cx.count("drop-tool-noise.tool_calls_dropped", n_dropped);
        }
        if n_collapsed > 0 {
            cx.count("drop-tool-noise.reads_collapsed", n_collapsed);
        }
        relink(s, cx)
    }
}

impl DropToolNoise {
    /// Ids of the tool calls `drop_tools` names (minus failed ones with `keep_errors`).
    fn tool_calls_to_drop(&self, s: &Session<'_>) -> Result<HashSet<String>> {
        let mut out = HashSet::new();
        if self.opts.drop_tools.is_empty() {
            return Ok(out);
        }
        for (id, &i) in &s.tool_uses {
            let Some(h) = s.header(i) else { continue };
            let name = h
                .blocks
                .iter()
                .find(|b| b.id.as_deref() == Some(id.as_str()))
                .and_then(|b| b.name.as_deref());
            if !name.is_some_and(|n| self.tools.is_match(n)) {
                continue;
            }
            if self.opts.keep_errors && result_is_error(s, id) {
                continue;
            }
            out.insert(id.clone());
        }
        Ok(out)
    }

    /// Ids of `Read` calls repeated later with the same input and the same result (compared as
    /// written, without parsing the records).
    fn repeated_reads(&self, s: &Session<'_>) -> HashSet<String> {
        let mut reads: Vec<(usize, &str)> = s
            .tool_uses
            .iter()
            .filter(|(id, &i)| {
                s.header(i).is_some_and(|h| {
                    h.blocks.iter().any(|b| {
                        b.kind == "tool_use"
                            && b.id.as_deref() == Some(id.as_str())
                            && b.name.as_deref() == Some("Read")
                    })
                }) && s.tool_results.get(*id).is_some_and(|r| r.len() == 1)
                    && !result_is_error(s, id)
            })
            .map(|(id, &i)| (i, id.as_str()))
            .collect();
        reads.sort_unstable();
        let mut latest: HashMap<(&[u8], &[u8]), &str> = HashMap::new();
        let mut out = HashSet::new();
        for (i, id) in reads {
            let r = s.tool_results[id][0];
            let input = scan::block_field(s.records[i].raw(), "tool_use", "id", id, "input");
            let result = scan::block_field(
                s.records[r].raw(),
                "tool_result",
                "tool_use_id",
                id,
                "content",
            );
            let (Some(input), Some(result)) = (input, result) else {
                continue;
            };
            if let Some(prev) = latest.insert((input, result), id) {
                out.insert(prev.to_string());
            }
        }
        out
    }

    /// Mark the records of the calls in `ids` for dropping (or strip their blocks from records
    /// that hold more).
    fn drop_calls(
        &self,
        s: &mut Session<'_>,
        ids: &HashSet<String>,
        drop: &mut [bool],
        cx: &Cx,
    ) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // Every block naming a dropped call: its tool_use / server_tool_use, its tool_result,
        // and a server tool's own result block (web_search_tool_result, …).
        let names_call = |b: &crate::transcript::record::Block| {
            b.id.as_deref().is_some_and(|x| ids.contains(x))
                || b.tool_use_id.as_deref().is_some_and(|x| ids.contains(x))
        };
        let mut strip: Vec<usize> = Vec::new();
        let mut messages: HashSet<String> = HashSet::new();
        for (i, rec) in s.records.iter().enumerate() {
            let Some(h) = rec.header() else { continue };
            if h.blocks.iter().any(names_call) {
                strip.push(i);
                if h.ty == "assistant" {
                    messages.extend(h.message_id.clone());
                }
            } else if !matches!(h.ty.as_str(), "user" | "assistant") {
                // progress / hook records of a dropped call.
                let names = |x: &Option<String>| x.as_deref().is_some_and(|t| ids.contains(t));
                if names(&h.tool_use_id) || names(&h.parent_tool_use_id) {
                    drop[i] = true;
                }
            }
        }
        for i in strip {
            let Some(h) = s.header(i) else { continue };
            if h.blocks.iter().all(names_call) {
                drop[i] = true;
                continue;
            }
            let m = object_mut(&mut s.records[i], cx, NAME)?;
            if let Some(Value::Array(blocks)) =
                m.get_mut("message").and_then(|v| v.get_mut("content"))
            {
                blocks.retain(|b| {
                    let named = |k: &str| {
                        b.get(k)
                            .and_then(Value::as_str)
                            .is_some_and(|x| ids.contains(x))
                    };
                    !(named("id") || named("tool_use_id"))
                });
            }
        }
        // Pieces of a message left with nothing but thinking go with it.
        let mut pieces: HashMap<&str, Vec<usize>> = HashMap::new();
        for i in 0..s.records.len() {
            if let Some(h) = s.header(i) {
                if h.ty == "assistant" {
                    if let Some(mid) = h.message_id.as_deref().filter(|m| messages.contains(*m)) {
                        pieces.entry(mid).or_default().push(i);
                    }
                }
            }
        }
        for pieces in pieces.values() {
            let only_thinking = pieces.iter().filter(|&&i| !drop[i]).all(|&i| {
                s.header(i).is_some_and(|h| {
                    h.blocks
                        .iter()
                        .all(|b| matches!(b.kind.as_str(), "thinking" | "redacted_thinking"))
                })
            });
            if only_thinking {
                for &i in pieces {
                    drop[i] = true;
                }
            }
        }
        Ok(())
    }

    /// Cap tool output and replace images in one record; true when it changed.
    fn edit(&self, rec: &mut Record<'_>, cx: &mut Cx) -> Result<bool> {
        let cap = self.opts.max_tool_output;
        let Some(h) = rec.header() else {
            return Ok(false);
        };
        if h.ty != "user" && h.ty != "assistant" {
            return Ok(false);
        }
        // Only a tool result (or an image) is ever edited, and capping needs a string over the
        // cap: the header tells both without parsing the record.
        let has_result = h.blocks.iter().any(|b| b.kind == "tool_result");
        let may_cap = cap > 0 && has_result && h.longest_string > cap;
        let may_img = self.opts.replace_images
            && (has_result || h.blocks.iter().any(|b| b.kind == "image"))
            && memchr::memmem::find(rec.raw(), b"\"base64\"").is_some();
        if !may_cap && !may_img {
            return Ok(false);
        }
        let spliced = if rec.is_value_edited() {
            None
        } else {
            // Splice the edits into the bytes: nothing else is parsed or re-written.
            edit_by_splicing(rec.raw(), cap, self.opts.replace_images)
        };
        let counts = match spliced {
            Some((bytes, counts)) => {
                if counts.capped + counts.images > 0 {
                    rec.set_raw(bytes);
                }
                counts
            }
            None => {
                let line = rec.line;
                // Parse a copy, so the record stays untouched when nothing is capped.
                let parsed = if rec.is_changed() {
                    rec.value().cloned()
                } else {
                    crate::transcript::record::parse_value(rec.raw())
                };
                let mut v = parsed.map_err(|e| stage_err(cx, NAME, line, e))?;
                let mut counts = Counts::default();
                self.transform(&mut v, &mut counts);
                if counts.capped + counts.images > 0 {
                    rec.set_value(v);
                }
                counts
            }
        };
        if counts.capped + counts.images == 0 {
            return Ok(false);
        }
        if counts.capped > 0 {
            cx.count("drop-tool-noise.outputs_capped", counts.capped);
        }
        if counts.images > 0 {
            cx.count("drop-tool-noise.images_replaced", counts.images);
        }
        Ok(true)
    }

    fn transform(&self, v: &mut Value, c: &mut Counts) {
        let cap = self.opts.max_tool_output;
        let images = self.opts.replace_images;
        let mut results = false;
        if let Some(Value::Array(blocks)) = v.pointer_mut("/message/content") {
            for b in blocks.iter_mut() {
                match b.get("type").and_then(Value::as_str) {
                    Some("image") if images => replace_image(b, c),
                    Some("tool_result") => {
                        results = true;
                        match b.get_mut("content") {
                            Some(Value::String(t)) => cap_string(t, cap, c),
                            Some(Value::Array(items)) => {
                                for it in items.iter_mut() {
                                    match it.get("type").and_then(Value::as_str) {
                                        Some("image") if images => replace_image(it, c),
                                        Some("text") => {
                                            if let Some(Value::String(t)) = it.get_mut("text") {
                                                cap_string(t, cap, c);
                                            }
                                        }
                                        _ => {}
                                    }
                                }
                            }
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
        }
        if results {
            if let Some(tur) = v.get_mut("toolUseResult") {
                cap_all(tur, cap, images, c);
            }
        }
    }
}

/// One change [`edit_by_splicing`] makes to a record's bytes.
enum Splice {
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
fn edit_by_splicing(raw: &[u8], cap: usize, images: bool) -> Option<(Vec<u8>, Counts)> {
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
fn span(c: &mut scan::Cursor<'_>) -> scan::Scan<(usize, usize)> {
    c.ws();
    let start = c.pos();
    c.skip_value()?;
    Ok((start, c.pos()))
}

/// What [`edit_by_splicing`] needs of a content block.
struct BlockFields {
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
fn block_fields(c: &mut scan::Cursor<'_>, field: &str) -> scan::Scan<Option<BlockFields>> {
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
fn image(
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
fn result_content(
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
fn long_string(c: &mut scan::Cursor<'_>, cap: usize, edits: &mut Vec<Splice>) -> scan::Scan<()> {
    let (start, end) = span(c)?;
    if end - start - 2 > cap {
        edits.push(Splice::Cap(start, end));
    }
    Ok(())
}

/// Deepest `toolUseResult` nesting walked here; deeper values take the parsing path.
const MAX_SPLICE_DEPTH: usize = 64;

/// The edits of a `toolUseResult` value: every string longer than `cap`; with `images`, every
/// non-empty `base64` string emptied.
fn strings_over(
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
struct Counts {
    capped: u64,
    images: u64,
}

fn result_is_error(s: &Session<'_>, id: &str) -> bool {
    s.tool_results.get(id).into_iter().flatten().any(|&r| {
        s.header(r).is_some_and(|h| {
            h.blocks.iter().any(|b| {
                b.kind == "tool_result" && b.tool_use_id.as_deref() == Some(id) && b.is_error
            })
        })
    })
}

fn replace_image(b: &mut Value, c: &mut Counts) {
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
fn image_text(media: &str, base64_len: usize) -> String {
    format!(
        "[image removed by cchist: {media}, {}]",
        human_size(base64_len / 4 * 3)
    )
}

/// Cap every long string in a `toolUseResult` value; with `images`, empty `base64` copies.
fn cap_all(v: &mut Value, cap: usize, images: bool, c: &mut Counts) {
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

/// `183 kB`, `1.2 MB`, `512 bytes`.
pub fn human_size(n: usize) -> String {
    if n < 1000 {
        format!("{n} bytes")
    } else if n < 1_000_000 {
        format!("{} kB", (n + 500) / 1000)
    } else {
        format!("{:.1} MB", n as f64 / 1e6)
    }
}

fn cap_string(t: &mut String, cap: usize, c: &mut Counts) {
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
        human_size(removed)
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

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::io::framing::lines;

    fn run(opts: DropToolNoiseOptions, text: &str) -> String {
        let st = DropToolNoise::new(opts).unwrap();
        let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        let mut cx = Cx::new(Origin::stdin());
        st.session(&mut s, &mut cx).unwrap();
        let mut out = Vec::new();
        for r in &s.records {
            r.write_to(&mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn cap_keeps_head_and_tail_under_the_cap() {
        let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
        let out = cap_text(&text, 1000).unwrap();
        assert!(out.len() <= 1000, "{}", out.len());
        assert!(out.starts_with("line 0\n"));
        assert!(out.ends_with("line 4999\n"));
        assert!(out.contains("kB of tool output removed by cchist …]"));
        assert_eq!(cap_text(&out, 1000), None, "idempotent");
        let wide = "é".repeat(2000);
        assert!(cap_text(&wide, 300).unwrap().len() <= 300);
    }

    const CALLS: &str = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__x__y","input":{}}]}}"#,
        "\n",
        r#"{"type":"progress","uuid":"p","parentUuid":"2","toolUseID":"t1","data":{}}"#,
        "\n",
        r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":"ok"}"#,
        "\n",
        r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"mcp__x__z","input":{}}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"5","parentUuid":"4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"boom","is_error":true}]}}"#,
        "\n",
        r#"{"type":"api-request","id":"r"}"#,
        "\n",
        r#"{"type":"assistant","uuid":"6","parentUuid":"5","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
        "\n",
    );

    #[test]
    fn drops_tool_calls_by_glob_keeping_errors() {
        let opts = DropToolNoiseOptions {
            drop_tools: vec!["mcp__*".into()],
            ..Default::default()
        };
        let out = run(opts, CALLS);
        assert!(!out.contains("\"t1\""), "{out}");
        assert!(out.contains("\"t2\""), "{out}");
        assert!(!out.contains("api-request"), "{out}");
        assert!(out.contains(r#""uuid":"4","parentUuid":"1""#), "{out}");
        assert!(
            crate::findings::validate::validate(out.as_bytes()).is_empty(),
            "{out}"
        );
        let opts = DropToolNoiseOptions {
            drop_tools: vec!["mcp__*".into()],
            keep_errors: false,
            ..Default::default()
        };
        let out = run(opts, CALLS);
        assert!(!out.contains("tool_"), "{out}");
        assert!(out.contains(r#""uuid":"6","parentUuid":"1""#), "{out}");
    }

    #[test]
    fn collapses_identical_reads_and_replaces_images() {
        let read = |n: &str, p: &str| {
            format!(
                concat!(
                    r#"{{"type":"assistant","uuid":"a{n}","parentUuid":"{p}","message":{{"id":"m{n}","role":"assistant","content":[{{"type":"tool_use","id":"r{n}","name":"Read","input":{{"file_path":"/x"}}}}]}}}}"#,
                    "\n",
                    r#"{{"type":"user","uuid":"u{n}","parentUuid":"a{n}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"r{n}","content":[{{"type":"text","text":"same"}},{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}}}]}}]}}}}"#,
                    "\n"
                ),
                n = n,
                p = p
            )
        };
        let text = format!(
            "{}{}{}",
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#.to_string() + "\n",
            read("1", "1"),
            read("2", "u1"),
        );
        let out = run(DropToolNoiseOptions::default(), &text);
        assert!(!out.contains("\"r1\""), "{out}");
        assert!(out.contains("\"r2\""), "{out}");
        assert!(out.contains(r#""uuid":"a2","parentUuid":"1""#), "{out}");
        assert!(
            out.contains("[image removed by cchist: image/png, 9 bytes]"),
            "{out}"
        );
        assert!(!out.contains("iVBOR"), "{out}");
    }

    #[test]
    fn server_tool_calls_go_with_their_result_blocks() {
        let text = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"3","parentUuid":"2","message":{"id":"m","role":"assistant","content":[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"found"}]}}"#,
            "\n",
        );
        // relink leaves a server tool call alone (its result is in the message itself).
        let none = DropToolNoiseOptions {
            collapse_reads: false,
            ..Default::default()
        };
        assert_eq!(run(none, text), text);
        let opts = DropToolNoiseOptions {
            drop_tools: vec!["web_*".into()],
            ..Default::default()
        };
        let out = run(opts, text);
        assert!(!out.contains("srvtoolu_1"), "{out}");
        assert!(out.contains(r#""uuid":"4","parentUuid":"1""#), "{out}");
    }

    /// The splicing path caps exactly what the parsing path caps, and leaves every other byte.
    #[test]
    fn splicing_caps_like_parsing() {
        let long = |c: char, n: usize| -> String {
            (0..n)
                .map(|i| if i % 50 == 49 { '\n' } else { c })
                .collect()
        };
        let records = [
            json!({"type":"user","message":{"role":"user","content":[
                {"tool_use_id":"t1","type":"tool_result","content":long('a', 5000)}]},
                "toolUseResult":{"stdout":long('b', 3000),"stderr":"","nested":[{"x":long('"', 900)}]}}),
            json!({"type":"user","message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t2","content":[
                    {"type":"text","text":long('é', 2000)},{"text":long('c', 2000),"type":"text"}]}]}}),
            // Not a tool result: nothing is capped, not even toolUseResult.
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":long('d', 5000)}]},
                "toolUseResult":long('e', 5000)}),
            json!({"type":"user","message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t3","content":"short"}]},"toolUseResult":long('\u{1}', 700)}),
            // Images: a prompt's, one inside a result, and the result's base64 copy.
            json!({"type":"user","message":{"role":"user","content":[
                {"type":"text","text":"see"},
                {"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}]}}),
            json!({"type":"user","message":{"role":"user","content":[
                {"type":"tool_result","tool_use_id":"t4","content":[
                    {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":long('Q', 4000)}},
                    {"type":"image","source":{"type":"url","url":"https://x"}}]}]},
                "toolUseResult":{"type":"image","file":{"base64":long('Q', 4000),"type":"image/jpeg"},"empty":{"base64":""}}}),
        ];
        let st = DropToolNoise::new(DropToolNoiseOptions {
            max_tool_output: 512,
            ..Default::default()
        })
        .unwrap();
        for v in records {
            let raw = serde_json::to_vec(&v).unwrap();
            let mut parsed = v.clone();
            let mut counts = Counts::default();
            st.transform(&mut parsed, &mut counts);
            let (spliced, got) = edit_by_splicing(&raw, 512, true).unwrap();
            assert_eq!((got.capped, got.images), (counts.capped, counts.images));
            if got.capped + got.images == 0 {
                assert_eq!(parsed, v, "nothing to edit");
                continue;
            }
            let spliced: Value = serde_json::from_slice(&spliced).unwrap();
            assert_eq!(spliced, parsed);
        }
        // Bytes outside the capped strings are kept as written.
        let raw = br#"{"b" : 1.50,"message":{"content":[{"type":"tool_result","content":"x"}]},"toolUseResult":{"s":"\u00e9"}}"#;
        let (_, counts) = edit_by_splicing(raw, 512, true).unwrap();
        assert_eq!(counts.capped + counts.images, 0);
        let raw = br#"{"b" : 1.50,"message":{"content":[{"type":"tool_result","content":"x"}]},"toolUseResult":{"s":"\u00e9","base64":"AAAA"}}"#;
        let (out, counts) = edit_by_splicing(raw, 512, true).unwrap();
        assert_eq!(counts.images, 1);
        assert_eq!(
            out,
            br#"{"b" : 1.50,"message":{"content":[{"type":"tool_result","content":"x"}]},"toolUseResult":{"s":"\u00e9","base64":""}}"#
        );
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        /// Text with escapes, multi-byte characters and newlines, short or over the cap.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                "[a-z \"\\\n\u{1}é😀]{0,40}",
                ("[a-z\n\"é]{1,8}", 20usize..200).prop_map(|(unit, n)| unit.repeat(n)),
            ]
        }

        fn item() -> impl Strategy<Value = Value> {
            prop_oneof![
                text().prop_map(|t| json!({"type": "text", "text": t})),
                text().prop_map(|t| json!({"text": t, "type": "text"})),
                text().prop_map(|d| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}})),
                Just(json!({"type": "image", "source": {"type": "url", "url": "u"}})),
            ]
        }

        fn block() -> impl Strategy<Value = Value> {
            prop_oneof![
                text()
                    .prop_map(|t| json!({"type": "tool_result", "tool_use_id": "t", "content": t})),
                prop::collection::vec(item(), 0..4)
                    .prop_map(|c| json!({"content": c, "type": "tool_result", "tool_use_id": "t"})),
                item(),
                text().prop_map(|t| json!({"type": "thinking", "thinking": t})),
            ]
        }

        fn tool_use_result() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                text().prop_map(Value::from),
                text().prop_map(|b| json!({"base64": b})),
                any::<i32>().prop_map(Value::from),
            ];
            leaf.prop_recursive(3, 12, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                    prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        proptest! {
            /// Splicing makes exactly the edits of the parsing path, on any mix of blocks.
            #[test]
            fn splicing_matches_parsing(
                blocks in prop::collection::vec(block(), 0..4),
                tur in prop::option::of(tool_use_result()),
                images in any::<bool>(),
            ) {
                let mut v = json!({"type": "user", "message": {"role": "user", "content": blocks}});
                if let Some(t) = tur {
                    v["toolUseResult"] = t;
                }
                let st = DropToolNoise::new(DropToolNoiseOptions {
                    max_tool_output: 256,
                    replace_images: images,
                    ..Default::default()
                })
                .unwrap();
                let raw = serde_json::to_vec(&v).unwrap();
                let mut parsed = v.clone();
                let mut counts = Counts::default();
                st.transform(&mut parsed, &mut counts);
                let (spliced, got) = edit_by_splicing(&raw, 256, images).unwrap();
                prop_assert_eq!((got.capped, got.images), (counts.capped, counts.images));
                if got.capped + got.images > 0 {
                    let spliced: Value = serde_json::from_slice(&spliced).unwrap();
                    prop_assert_eq!(spliced, parsed);
                } else {
                    prop_assert_eq!(parsed, v);
                }
            }
        }
    }

    #[test]
    fn small_cap_is_rejected() {
        let e = DropToolNoise::new(DropToolNoiseOptions {
            max_tool_output: 10,
            ..Default::default()
        })
        .err()
        .unwrap();
        assert!(e.key.as_deref() == Some("max_tool_output"), "{e}");
    }
}
