//! `repair`: fix the damage Claude Code itself writes, shape by shape
//! ([`crate::transcript::damage`]), and nothing else.
//!
//! - claude-code#92089 (replayed history after a second `/compact`): the re-appended copies go
//!   (the first copy of each uuid stays), the rows parented into the copies hang from the last
//!   record written before them, and the boundary's `logicalParentUuid` and
//!   `compactMetadata.preservedSegment`/`preservedMessages` entries that named a copy name the
//!   last message before the boundary (the record 2.1.x names there).
//! - claude-code#36583 (a `file-history-snapshot` carrying a message's uuid): the snapshot gets
//!   a uuid of its own. claude-code#24304 (the message a snapshot names hangs from a parent that
//!   is not in the file): it hangs from the main-chain message written before the snapshot.
//! - claude-code#37437 (a retried prompt parented on a sub-agent `progress` row): the prompt
//!   hangs from the main-chain message the row hangs from.
//! - claude-code#23373 (sub-agent records in the main file): when the run can write companion
//!   files ([`Cx::companions`]: in place, or a dry run saying what it would write) the records
//!   move, as they are and in file order, to `subagents/agent-<id>.jsonl`, where the CLI
//!   writes a sub-agent's transcript. They stay (reported) when the run writes one file only
//!   (standard output, a mirror folder), when that file exists already (Claude Code's own is
//!   never merged into), or when the agent id is not a plain file-name word or reads as a
//!   secret.
//!
//! A file with none of these shapes is not touched (not even parsed for editing).

use std::collections::HashSet;

use serde_json::Value;

use super::{object_mut, set_parent, uuid_of};
use crate::error::{OptionError, Result};
use crate::stages::{options, Cx, Scope, Stage, StageDef};
use crate::transcript::damage::{self, Damage};
use crate::transcript::session::Session;

/// Options of the `repair` stage (none yet).
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepairOptions {}

/// The `repair` stage.
pub struct Repair;

/// The stage's entry in the registry.
pub const DEF: StageDef = StageDef {
    name: "repair",
    about: "fix what Claude Code itself breaks: replayed history after a second /compact, snapshot-id collisions, retries parented on progress rows, sub-agent records in the main file (moved to subagents/ when writing in place)",
    build,
};

fn build(table: toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError> {
    let _: RepairOptions = options(table)?;
    Ok(Box::new(Repair))
}

impl Stage for Repair {
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

    /// Records it moves out of the file must be redacted before they leave it.
    fn cuts_text(&self) -> bool {
        true
    }

    fn moves_records(&self) -> bool {
        true
    }

    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
        repair(s, cx)
    }
}

/// Repair every damage of a known shape in `s` (see the module docs).
pub fn repair(s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
    s.reindex();
    let found = damage::find(s);
    if found.is_empty() {
        return Ok(());
    }
    // Records to remove, marked: one pass removes them all (a drain per record from the
    // middle of a large file would be quadratic).
    let mut remove = vec![false; s.records.len()];
    let mut copies_of: Vec<String> = Vec::new();
    // Where each replay's rows end: at the next replay (a third `/compact` re-appends the
    // same uuids again, and the rows after it hang from that copy), so each row is looked at
    // once.
    let replay_starts: Vec<usize> = found
        .iter()
        .filter_map(|d| match d {
            Damage::ReplayedHistory { copies, .. } => Some(copies.start),
            _ => None,
        })
        .collect();
    for d in &found {
        match d {
            Damage::ReplayedHistory {
                copies,
                boundary,
                anchor,
                logical,
            } => {
                let copied: HashSet<String> =
                    copies.clone().filter_map(|i| uuid_of(s, i)).collect();
                let anchor = uuid_of(s, *anchor);
                let logical = logical.and_then(|l| uuid_of(s, l));
                let mut moved = 0;
                let next = replay_starts
                    .iter()
                    .copied()
                    .find(|&st| st > copies.start)
                    .unwrap_or(s.records.len());
                for j in copies.end..next {
                    let hangs_on_copy = s.header(j).is_some_and(|h| {
                        !h.is_sidechain && h.parent_uuid().is_some_and(|p| copied.contains(p))
                    });
                    if hangs_on_copy {
                        set_parent(s, j, anchor.as_deref(), cx)?;
                        moved += 1;
                    }
                }
                repoint_boundary(s, *boundary, &copied, logical.as_deref(), cx)?;
                cx.count("repair.replayed_removed", copies.len() as u64);
                cx.count("repair.reparented", moved);
                for i in copies.clone() {
                    remove[i] = true;
                    copies_of.extend(uuid_of(s, i));
                }
            }
            Damage::SnapshotCollision {
                snapshot,
                message,
                own_uuid,
                parent,
            } => {
                if *own_uuid {
                    let old = uuid_of(s, *snapshot).unwrap_or_default();
                    let uuid = super::derived_uuid(&["snapshot", &old, &snapshot.to_string()]);
                    let m = object_mut(&mut s.records[*snapshot], cx, "repair")?;
                    m.insert("uuid".into(), Value::String(uuid));
                    cx.count("repair.snapshot_ids", 1);
                } else if let Some(k) = message {
                    let p = parent.and_then(|p| uuid_of(s, p));
                    set_parent(s, *k, p.as_deref(), cx)?;
                    cx.count("repair.reparented", 1);
                }
            }
            Damage::RetryOnProgress { prompt, parent, .. } => {
                let p = parent.and_then(|p| uuid_of(s, p));
                set_parent(s, *prompt, p.as_deref(), cx)?;
                cx.count("repair.reparented", 1);
            }
            Damage::SubagentInMain { agent, records } => {
                if move_out(s, agent, records, cx) {
                    for &i in records {
                        remove[i] = true;
                    }
                    cx.count("repair.subagent_records_moved", records.len() as u64);
                } else {
                    cx.count("repair.subagent_records_left", records.len() as u64);
                }
            }
        }
    }
    if !remove.contains(&true) {
        return Ok(());
    }
    let mut at = 0;
    s.records.retain(|_| {
        at += 1;
        !remove[at - 1]
    });
    s.reindex();
    // The copies' uuids live on in their originals: they are no tombstones.
    for u in copies_of {
        if s.by_uuid.contains_key(&u) {
            s.removed.remove(&u);
        }
    }
    Ok(())
}

/// Where the CLI writes sub-agent `agent`'s transcript, relative to the session's companion
/// folder; `None` for an id that is not a plain file-name word (it could name a path) or that
/// reads as a secret (a file name is printed and copied where no redaction reaches it).
fn subagent_file(agent: &str) -> Option<std::path::PathBuf> {
    let plain = !agent.is_empty()
        && agent.len() <= 128
        && agent
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let secret = || {
        matches!(
            crate::stages::redact::shown_text(agent),
            std::borrow::Cow::Owned(_)
        )
    };
    (plain && !secret()).then(|| std::path::PathBuf::from(format!("subagents/agent-{agent}.jsonl")))
}

/// Hand `records` (sub-agent `agent`'s, in file order) out as its companion file when the run
/// can write one and the file is not there yet; true when they were.
fn move_out(s: &Session<'_>, agent: &str, records: &[usize], cx: &mut Cx) -> bool {
    let Some(rel) = subagent_file(agent) else {
        return false;
    };
    let Some(c) = cx.companions.as_mut() else {
        return false;
    };
    if c.existing.contains(&rel) {
        return false;
    }
    let mut bytes = Vec::new();
    for &i in records {
        s.records[i].write_to(&mut bytes);
        // The main file's unended last line ends its line in the companion.
        if s.records[i].term == crate::io::framing::Term::None {
            bytes.push(b'\n');
        }
    }
    c.out.push(crate::stages::MovedOut {
        rel,
        records: records.len() as u64,
        bytes,
    });
    true
}

/// Point the boundary's references that name a copy at `logical`.
fn repoint_boundary(
    s: &mut Session<'_>,
    boundary: usize,
    copied: &HashSet<String>,
    logical: Option<&str>,
    cx: &mut Cx,
) -> Result<()> {
    // Edited on a copy and written back only when something named a copy, so a boundary
    // that needs nothing keeps its bytes.
    let mut value = match s.records[boundary].value() {
        Ok(v) => v.clone(),
        Err(e) => return Err(super::stage_err(cx, "repair", s.records[boundary].line, e)),
    };
    let Some(m) = value.as_object_mut() else {
        return Ok(());
    };
    let to = |v: &mut Value| {
        if v.as_str().is_some_and(|u| copied.contains(u)) {
            *v = logical.map_or(Value::Null, |l| Value::String(l.into()));
            true
        } else {
            false
        }
    };
    let mut changed = false;
    if let Some(v) = m.get_mut("logicalParentUuid") {
        changed |= to(v);
    }
    if let Some(cm) = m.get_mut("compactMetadata").and_then(Value::as_object_mut) {
        if let Some(seg) = cm
            .get_mut("preservedSegment")
            .and_then(Value::as_object_mut)
        {
            for k in ["headUuid", "tailUuid"] {
                if let Some(v) = seg.get_mut(k) {
                    changed |= to(v);
                }
            }
        }
        if let Some(pm) = cm
            .get_mut("preservedMessages")
            .and_then(Value::as_object_mut)
        {
            for k in ["uuids", "allUuids"] {
                if let Some(Value::Array(a)) = pm.get_mut(k) {
                    for v in a.iter_mut() {
                        changed |= to(v);
                    }
                    // Two copies re-pointed at one record name it once.
                    let mut seen = HashSet::new();
                    a.retain(|v| seen.insert(v.to_string()));
                }
            }
        }
    }
    if changed {
        s.records[boundary].set_value(value);
        cx.count("repair.references_rewritten", 1);
    }
    Ok(())
}
