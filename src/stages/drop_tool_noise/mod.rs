//! `drop-tool-noise`: make a transcript smaller without breaking it.
//!
//! - drops `progress` records and bookkeeping record types / attachment subtypes (defaults: the
//!   set transcript-format.md §11 found safe against Claude Code 2.1.328);
//! - caps tool output: a `tool_result` text, and any string of the matching `toolUseResult`,
//!   longer than `max_tool_output` bytes keeps its head and tail around a marker
//!   `[… 178.7 KiB of tool output removed by cchist …]` (the result stays under the cap, so a second
//!   run changes nothing);
//! - replaces base64 images with a short text block (and empties `toolUseResult` `base64`
//!   copies);
//! - collapses repeated identical reads (same `Read` input, same result) to the latest one;
//! - drops whole tool calls by tool-name glob, optionally keeping failed ones.
//!
//! A dropped tool call goes with its result(s) (and so its `toolUseResult`) and with the
//! `progress`/hook records naming its id; pieces of an assistant message left with nothing but
//! thinking go too. When anything with a uuid may be dropped the stage is session-scoped and
//! ends by running [`relink`], so the chain stays valid. With only
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
use crate::transcript::record::Kind;
use crate::transcript::record::Record;
use crate::transcript::session::Session;

mod cap;
#[cfg(test)]
mod tests;

pub use cap::cap_text;
use cap::*;

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
        (self.opts.drop_progress && h.kind == Kind::Progress)
            || (h.kind != Kind::Absent && self.types.is_match(h.kind.as_str()))
            || (h.kind == Kind::Attachment
                && h.subtype().is_some_and(|t| self.attachments.is_match(t)))
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
    /// It removes, moves or relinks records, and writes only cchist's own words.
    fn adds_text(&self) -> bool {
        false
    }

    /// It caps tool output.
    fn cuts_text(&self) -> bool {
        true
    }

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
            if h.uuid().is_none() && self.drops_type(h) {
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
                .blocks()
                .iter()
                .find(|b| b.id() == Some(id.as_str()))
                .and_then(|b| b.name());
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
                    h.blocks().iter().any(|b| {
                        b.kind() == "tool_use"
                            && b.id() == Some(id.as_str())
                            && b.name() == Some("Read")
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
        let names_call = |b: crate::transcript::record::Block<'_>| {
            b.id().is_some_and(|x| ids.contains(x))
                || b.tool_use_id().is_some_and(|x| ids.contains(x))
        };
        let mut strip: Vec<usize> = Vec::new();
        let mut messages: HashSet<String> = HashSet::new();
        for (i, rec) in s.records.iter().enumerate() {
            let Some(h) = rec.header() else { continue };
            if h.blocks().iter().any(names_call) {
                strip.push(i);
                if h.kind == Kind::Assistant {
                    messages.extend(h.message_id().map(str::to_string));
                }
            } else if !h.kind.is_message() {
                // progress / hook records of a dropped call.
                let names = |x: Option<&str>| x.is_some_and(|t| ids.contains(t));
                if names(h.tool_use_id()) || names(h.parent_tool_use_id()) {
                    drop[i] = true;
                }
            }
        }
        for i in strip {
            let Some(h) = s.header(i) else { continue };
            if h.blocks().iter().all(names_call) {
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
                if h.kind == Kind::Assistant {
                    if let Some(mid) = h.message_id().filter(|m| messages.contains(*m)) {
                        pieces.entry(mid).or_default().push(i);
                    }
                }
            }
        }
        for pieces in pieces.values() {
            let only_thinking = pieces.iter().filter(|&&i| !drop[i]).all(|&i| {
                s.header(i).is_some_and(|h| {
                    h.blocks()
                        .iter()
                        .all(|b| matches!(b.kind(), "thinking" | "redacted_thinking"))
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
        if h.kind != Kind::User && h.kind != Kind::Assistant {
            return Ok(false);
        }
        // Only a tool result (or an image) is ever edited, and capping needs a string over the
        // cap: the header tells both without parsing the record.
        let has_result = h.blocks().iter().any(|b| b.kind() == "tool_result");
        let may_cap = cap > 0 && has_result && h.longest_string > cap;
        let may_img = self.opts.replace_images
            && (has_result || h.blocks().iter().any(|b| b.kind() == "image"))
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
