//! `relink`: make every uuid reference of a session resolve again.
//!
//! Run after any stage that drops or inserts records, or on its own (`cchist relink`) to repair
//! a damaged file. What it does, in order:
//!
//! 1. **Parents.** A `parentUuid` naming a removed record (one with a tombstone in
//!    [`Session::removed`]) is re-pointed at the removed record's nearest surviving ancestor
//!    (`null` when the removed chain ended at a root). A `parentUuid` naming a record that was
//!    never in the file (damage) is attached to the nearest earlier record of the same branch
//!    (same `isSidechain`/`agentId`, previous chain record in file order; an assistant piece
//!    prefers the previous piece of its own message), never to one of its own descendants; a
//!    compaction summary whose boundary is gone becomes a root, as the boundary was.
//! 2. **Cycles** are broken at the member that comes first in the file, which gets the same
//!    treatment as a dangling parent.
//! 3. **Split assistant messages** (a later piece of a `message.id` no longer chained to its
//!    earlier piece) are re-attached to the previous piece.
//! 4. **Tool pairing** (option `tool_pairs`, on by default): `tool_result` blocks whose
//!    `tool_use` is not in the file are removed (a record left empty is removed and its
//!    children relinked); a `tool_use` with no result anywhere gets a synthetic error result
//!    record placed right after the last piece of its message, shaped like the one Claude Code
//!    2.1.x writes for a call whose result was never recorded ([`INTERRUPTED_TOOL_TEXT`]).
//!    A user/assistant message whose `content` is an empty list (what removing a record's only
//!    block leaves) is removed too.
//! 5. **Other references** — every field of [`REFERENCE_FIELDS`] besides `parentUuid`:
//!    tombstoned targets are rewritten to the nearest surviving ancestor or removed when there
//!    is none; `sourceToolAssistantUUID` is re-derived from the `tool_use` it answers;
//!    `compactMetadata.preservedMessages.uuids`/`allUuids` lose missing entries (Claude Code
//!    drops the whole splice when one is missing); `preservedSegment` shrinks to its surviving
//!    head/tail or disappears with its last member; a missing anchor becomes the record that
//!    replaced it, else the boundary itself.
//!    A dangling `last-prompt.leafUuid`/`logicalParentUuid` that no tombstone explains points
//!    at the nearest earlier main-chain record. `summary.leafUuid` into other files is left
//!    alone (Claude Code writes those by design).
//!
//! Forks and parallel-tool side branches that resolve are left as they are, and a record that
//! needs no change is never parsed for editing, so a file that needs nothing comes out
//! byte-identical.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, OptionError, Result};
use crate::stages::{options, Cx, Scope, Stage, StageDef};
use crate::transcript::record::Kind;
use crate::transcript::record::Record;
use crate::transcript::session::{is_conversational, FastMap, Session, REFERENCE_FIELDS};

mod parents;
mod references;
pub mod repair;
#[cfg(test)]
mod tests;
mod tools;

pub(crate) use crate::transcript::ids::derived_uuid;
use parents::*;
use references::*;
pub(crate) use tools::envelope;
use tools::*;

/// Result text of the synthetic `tool_result` for a call that never got one: the text Claude
/// Code 2.1.x itself writes (`is_error: true`, also as `toolUseResult`, with
/// `toolDenialKind: "interrupted"`) when a session ended before a call's result was recorded.
pub const INTERRUPTED_TOOL_TEXT: &str = "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown. Check whether it took effect before relying on it or running it again.]";

/// Options of the `relink` stage.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelinkOptions {
    /// Remove orphan `tool_result` blocks and answer unanswered `tool_use` blocks.
    #[serde(default = "yes")]
    pub tool_pairs: bool,
    /// What to repair: `all` (the default: every broken link, see the module docs) or
    /// `touched` (only what earlier stages of the pipeline broke: references to records they
    /// removed, messages they emptied). `scrub` uses `touched`, so a file changes only where a
    /// secret was.
    #[serde(default)]
    pub repair: Repair,
}

/// `relink`'s `repair` option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Repair {
    /// Every broken link: dangling parents, cycles, split messages, tool pairs, references.
    #[default]
    All,
    /// Only what the pipeline's own changes broke. Damage already in the file, and states
    /// Claude Code writes itself (a tool call interrupted at the tip, the compaction
    /// summariser's parents into the main file), are left as they are.
    Touched,
}

fn yes() -> bool {
    true
}

impl Default for RelinkOptions {
    fn default() -> Self {
        RelinkOptions {
            tool_pairs: true,
            repair: Repair::All,
        }
    }
}

/// The `relink` stage.
pub struct Relink {
    opts: RelinkOptions,
}

impl Relink {
    /// A relink stage with these options.
    pub fn new(opts: RelinkOptions) -> Self {
        Relink { opts }
    }
}

/// The stage's entry in the registry.
pub const DEF: StageDef = StageDef {
    name: "relink",
    about:
        "re-point every reference after drops/inserts; repair dangling parents, cycles, tool pairs",
    build,
};

fn build(table: toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError> {
    let opts: RelinkOptions = options(table)?;
    Ok(Box::new(Relink::new(opts)))
}

impl Stage for Relink {
    /// It removes, moves or relinks records, and writes only cchist's own words.
    fn adds_text(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        DEF.name
    }

    fn scope(&self) -> Scope {
        Scope::Session
    }

    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
        relink_with(s, cx, &self.opts)
    }
}

/// Relink with the default options (what dropping stages call when they are done).
pub fn relink(s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
    relink_with(s, cx, &RelinkOptions::default())
}

#[derive(Default)]
struct Stats {
    reparented: u64,
    refs_rewritten: u64,
    refs_removed: u64,
    cycles_broken: u64,
    orphan_results: u64,
    synthetic_results: u64,
    split_joined: u64,
    empty_messages: u64,
}

/// Make every reference of `s` resolve (see the module docs).
pub fn relink_with(s: &mut Session<'_>, cx: &mut Cx, opts: &RelinkOptions) -> Result<()> {
    s.reindex();
    // Relinked already (by a stage that drops records) and unchanged since: relink is
    // idempotent, so there is nothing to do.
    if s.linked == Some(true) || (s.linked == Some(false) && !opts.tool_pairs) {
        return Ok(());
    }
    // Parents as they were when relink started: compaction segments are walked on these
    // (only records with compaction metadata need them).
    let has_compactions = s
        .records
        .iter()
        .any(|r| r.header().is_some_and(|h| h.has_compact_metadata));
    let orig: HashMap<String, Option<String>> = if has_compactions {
        s.by_uuid
            .iter()
            .map(|(u, &i)| {
                (
                    u.clone(),
                    s.header(i)
                        .and_then(|h| h.parent_uuid().map(str::to_string)),
                )
            })
            .collect()
    } else {
        HashMap::new()
    };
    let mut st = Stats::default();
    if opts.repair == Repair::Touched {
        // Messages an earlier stage emptied (redaction removing a message's only thinking
        // block) go, and their children hang from what they hung from.
        let emptied: Vec<usize> = (0..s.records.len())
            .filter(|&i| s.records[i].is_changed() && is_empty_message(s, i))
            .collect();
        for &i in emptied.iter().rev() {
            s.remove(i);
            st.empty_messages += 1;
        }
        s.reindex();
        if !s.removed.is_empty() {
            fix_parents_with(s, cx, &mut st, true)?;
            fix_references(s, cx, &orig, &mut st, true)?;
            s.reindex();
        }
        count_stats(cx, &st);
        return Ok(());
    }
    fix_parents(s, cx, &mut st)?;
    break_cycles(s, cx, &mut st)?;
    join_split_messages(s, cx, &mut st)?;
    if opts.tool_pairs {
        if drop_orphan_results(s, cx, &mut st)? {
            s.reindex();
            fix_parents(s, cx, &mut st)?;
        }
        if answer_unpaired(s, cx, &mut st)? {
            s.reindex();
        }
    }
    fix_references(s, cx, &orig, &mut st, false)?;
    s.reindex();
    s.linked = Some(opts.tool_pairs);
    count_stats(cx, &st);
    Ok(())
}

fn count_stats(cx: &mut Cx, st: &Stats) {
    for (name, n) in [
        ("relink.reparented", st.reparented),
        ("relink.references_rewritten", st.refs_rewritten),
        ("relink.references_removed", st.refs_removed),
        ("relink.cycles_broken", st.cycles_broken),
        ("relink.orphan_results_removed", st.orphan_results),
        ("relink.synthetic_results", st.synthetic_results),
        ("relink.split_messages_joined", st.split_joined),
        ("relink.empty_messages_removed", st.empty_messages),
    ] {
        if n > 0 {
            cx.count(name, n);
        }
    }
}

/// Where a reference to a uuid that is not in the file leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// The nearest surviving record at or above it.
    Survivor(String),
    /// It was removed and its chain ended at a root: nothing survives above it.
    Root,
    /// No tombstone explains it: the reference was dangling already (damage).
    Unknown,
}

/// Resolve `uuid` through the session's tombstones.
pub fn resolve(s: &Session<'_>, uuid: &str) -> Resolution {
    Resolver::default().resolve(s, uuid)
}

/// [`resolve`] that remembers: every uuid a walk passes gets the walk's answer, so the
/// references into one long run of removed records (dropped progress records, a summarized
/// range) cost one walk together rather than one each. Valid while the session's uuids and
/// tombstones stay as they are (until the next reindex).
#[derive(Default)]
struct Resolver(HashMap<String, Resolution>);

impl Resolver {
    fn resolve(&mut self, s: &Session<'_>, uuid: &str) -> Resolution {
        let mut path: Vec<&str> = Vec::new();
        let mut cur = uuid;
        let res = loop {
            if let Some(r) = self.0.get(cur) {
                break r.clone();
            }
            if s.by_uuid.contains_key(cur) {
                break Resolution::Survivor(cur.to_string());
            }
            if path.len() > s.removed.len() {
                // A loop of tombstones: no survivor.
                break Resolution::Unknown;
            }
            path.push(cur);
            match s.removed.get(cur) {
                Some(Some(p)) => cur = p,
                Some(None) => break Resolution::Root,
                // Never existed, or a removed record whose parent was itself dangling: its
                // chain has no survivor.
                None => break Resolution::Unknown,
            }
        };
        for u in path {
            self.0.insert(u.to_string(), res.clone());
        }
        res
    }
}

pub(crate) fn stage_err(cx: &Cx, stage: &'static str, line: usize, message: String) -> Error {
    Error::Stage {
        path: cx.origin.clone(),
        line: (line > 0).then_some(line),
        stage,
        message,
    }
}

/// The record's value for editing, as a JSON object.
pub(crate) fn object_mut<'r>(
    rec: &'r mut Record<'_>,
    cx: &Cx,
    stage: &'static str,
) -> Result<&'r mut Map<String, Value>> {
    let line = rec.line;
    match rec.value_mut() {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(stage_err(
            cx,
            stage,
            line,
            "record is not a JSON object".into(),
        )),
        Err(e) => Err(stage_err(cx, stage, line, e)),
    }
}

fn set_parent(s: &mut Session<'_>, i: usize, parent: Option<&str>, cx: &Cx) -> Result<()> {
    let json = match parent {
        Some(p) => serde_json::to_string(p).expect("a string serializes"),
        None => "null".to_string(),
    };
    if s.records[i].splice_top_field("parentUuid", &json) {
        return Ok(());
    }
    let m = object_mut(&mut s.records[i], cx, "relink")?;
    m.insert(
        "parentUuid".into(),
        parent.map_or(Value::Null, |p| Value::String(p.into())),
    );
    Ok(())
}

fn uuid_of(s: &Session<'_>, i: usize) -> Option<String> {
    s.header(i).and_then(|h| h.uuid().map(str::to_string))
}

fn branch_of(s: &Session<'_>, i: usize) -> Option<(bool, Option<String>)> {
    s.header(i)
        .map(|h| (h.is_sidechain, h.agent_id().map(str::to_string)))
}

/// True when walking parents up from `j` reaches `i` (so `j` descends from `i`, or `j == i`).
fn descends_from(s: &Session<'_>, j: usize, i: usize) -> bool {
    let mut seen = HashSet::new();
    let mut cur = Some(j);
    while let Some(k) = cur {
        if k == i {
            return true;
        }
        if !seen.insert(k) {
            return false;
        }
        cur = s.parent(k);
    }
    false
}
