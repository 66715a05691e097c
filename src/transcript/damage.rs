//! Damage Claude Code itself writes into transcripts, found by its exact shape, and how much
//! of the conversation a resume reaches.
//!
//! `validate` reports each [`Damage`] (one finding id per shape); the `repair` stage fixes
//! them. Both read the shapes from [`find`], so what is reported is exactly what is repaired.
//! Each detector matches only the shape a report describes and never a state Claude Code
//! writes and handles itself (a fork, a compaction, the compaction summariser's parents, an
//! ordinary `file-history-snapshot` whose `messageId` names the prompt it belongs to).

use std::collections::{HashMap, HashSet};

use crate::transcript::record::Kind;
use crate::transcript::session::Session;

/// How much of the conversation a resume reaches, as `validate` and `cchist context` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reach {
    /// Messages (main-chain user/assistant records, one per uuid) on the path Claude Code
    /// rebuilds from its leaf, across compactions, plus the tool results that answer calls on
    /// that path (2.1.x hangs parallel results off the side of it).
    pub reached: usize,
    /// Messages in the file.
    pub total: usize,
}

impl std::fmt::Display for Reach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "resume reaches {} of {} messages",
            self.reached, self.total
        )
    }
}

fn is_main_message(s: &Session<'_>, i: usize) -> bool {
    s.header(i)
        .is_some_and(|h| h.kind.is_message() && !h.is_sidechain && h.uuid().is_some())
}

/// Messages reachable from the leaf Claude Code resumes from (the newest main-chain message,
/// [`Session::leaf`]), walking `parentUuid` and, across a compaction boundary,
/// `logicalParentUuid` ([`Session::logical_path`]). A dangling parent ends the walk, as it
/// ends Claude Code's. Linear in the file.
pub fn resume_reach(s: &Session<'_>) -> Reach {
    let total = s
        .by_uuid
        .values()
        .filter(|&&i| is_main_message(s, i))
        .count();
    let Some(leaf) = s.leaf() else {
        return Reach { reached: 0, total };
    };
    let path = s.logical_path(leaf);
    let mut reached: HashSet<usize> = HashSet::new();
    let mut calls: HashSet<&str> = HashSet::new();
    for &i in &path {
        if is_main_message(s, i) {
            reached.insert(i);
            if let Some(h) = s.header(i) {
                calls.extend(h.tool_use_ids());
            }
        }
    }
    for id in calls {
        for &r in s.tool_results.get(id).into_iter().flatten() {
            if is_main_message(s, r)
                && s.by_uuid
                    .get(s.header(r).and_then(|h| h.uuid()).unwrap_or(""))
                    == Some(&r)
            {
                reached.insert(r);
            }
        }
    }
    Reach {
        reached: reached.len(),
        total,
    }
}

/// One defect of a known shape, by record index into [`Session::records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// claude-code#92089: a second `/compact` in one process re-appended the history the
    /// first one summarized. `copies` is the run of re-appended records (each repeating an
    /// earlier record's uuid and parentUuid); `boundary` is the compaction they follow,
    /// `anchor` the last record written before them (where the conversation really goes on),
    /// `logical` the last message before `boundary` (what its `logicalParentUuid` and
    /// `preservedSegment` should name).
    ReplayedHistory {
        /// The re-appended records.
        copies: std::ops::Range<usize>,
        /// The compaction boundary the copies follow.
        boundary: usize,
        /// The last record written before the copies.
        anchor: usize,
        /// The last message before the boundary.
        logical: Option<usize>,
    },
    /// claude-code#24304/#36583: a `file-history-snapshot` whose ids collide with a
    /// message's. `snapshot` carries a `uuid` that a message carries too (`own_uuid`), or the
    /// message its `messageId` names (`message`) hangs from a parent that is not in the file;
    /// `parent` is the main-chain message written before the snapshot.
    SnapshotCollision {
        /// The snapshot record.
        snapshot: usize,
        /// The message its `messageId` names, when that hangs from a missing parent.
        message: Option<usize>,
        /// True when the snapshot carries a message's uuid.
        own_uuid: bool,
        /// The main-chain message written before the snapshot.
        parent: Option<usize>,
    },
    /// claude-code#37437: a retried prompt parented on a sub-agent's `progress` row;
    /// `parent` is the main-chain message it belongs after.
    RetryOnProgress {
        /// The retried prompt.
        prompt: usize,
        /// The progress row it hangs from.
        progress: usize,
        /// The main-chain message it belongs after.
        parent: Option<usize>,
    },
    /// claude-code#23373: records of sub-agent `agent` written into the main session file
    /// (`records`, in file order), which belong in `subagents/agent-<agent>.jsonl`.
    SubagentInMain {
        /// The sub-agent's `agentId`.
        agent: String,
        /// Its records in the main file.
        records: Vec<usize>,
    },
}

impl Damage {
    /// The finding id of the shape.
    pub fn rule(&self) -> &'static str {
        match self {
            Damage::ReplayedHistory { .. } => "replayed-history",
            Damage::SnapshotCollision { .. } => "snapshot-id-collision",
            Damage::RetryOnProgress { .. } => "retry-on-progress",
            Damage::SubagentInMain { .. } => "subagent-in-main",
        }
    }

    /// The record the finding is reported on.
    pub fn at(&self) -> usize {
        match self {
            Damage::ReplayedHistory { copies, .. } => copies.start,
            Damage::SnapshotCollision {
                snapshot, message, ..
            } => message.unwrap_or(*snapshot),
            Damage::RetryOnProgress { prompt, .. } => *prompt,
            Damage::SubagentInMain { records, .. } => records[0],
        }
    }

    /// What happened, for the finding's message (without the reach).
    pub fn describe(&self, s: &Session<'_>) -> String {
        let line = |i: usize| s.records[i].line;
        match self {
            Damage::ReplayedHistory {
                copies, boundary, ..
            } => format!(
                "{} records re-appended after the compaction on line {} repeat earlier records (claude-code#92089); the rows after them are parented into the copy",
                copies.len(),
                line(*boundary)
            ),
            Damage::SnapshotCollision {
                snapshot,
                own_uuid: true,
                ..
            } => format!(
                "the file-history-snapshot on line {} carries the uuid of a message (claude-code#36583)",
                line(*snapshot)
            ),
            Damage::SnapshotCollision { snapshot, .. } => format!(
                "this message's uuid is the messageId of the file-history-snapshot on line {} and its parentUuid names no record (claude-code#24304)",
                line(*snapshot)
            ),
            Damage::RetryOnProgress { progress, .. } => format!(
                "prompt parented on the sub-agent progress row on line {} (a retried request, claude-code#37437)",
                line(*progress)
            ),
            Damage::SubagentInMain { agent, records } => format!(
                "{} records of sub-agent {agent} are in the main session file (claude-code#23373); they belong in subagents/agent-{agent}.jsonl (`cchist repair -i` moves them there)",
                records.len()
            ),
        }
    }
}

/// The last main-chain message before record `i` in file order.
fn message_before(s: &Session<'_>, i: usize) -> Option<usize> {
    (0..i).rev().find(|&k| is_main_message(s, k))
}

fn is_compact_boundary(s: &Session<'_>, i: usize) -> bool {
    s.header(i).is_some_and(|h| {
        h.kind == Kind::System && h.subtype() == Some("compact_boundary") && !h.is_sidechain
    })
}

/// Every defect of a known shape in `s`, in file order. Linear in the file (the record values
/// parsed are those of snapshots and of progress rows a prompt hangs from).
pub fn find(s: &Session<'_>) -> Vec<Damage> {
    let mut out = Vec::new();
    replayed_history(s, &mut out);
    snapshot_collisions(s, &mut out);
    retries_on_progress(s, &mut out);
    subagents_in_main(s, &mut out);
    out.sort_by_key(|d| d.at());
    out
}

fn replayed_history(s: &Session<'_>, out: &mut Vec<Damage>) {
    if s.duplicate_uuids.len() < 2 {
        return;
    }
    // Compaction boundaries in file order, to find the last one before a run.
    let boundaries: Vec<usize> = (0..s.records.len())
        .filter(|&i| is_compact_boundary(s, i))
        .collect();
    if boundaries.len() < 2 {
        // The replay follows a second compaction.
        return;
    }
    let dups = &s.duplicate_uuids;
    let mut k = 0;
    while k < dups.len() {
        let start = dups[k];
        let mut end = start + 1;
        k += 1;
        while k < dups.len() && dups[k] == end {
            end += 1;
            k += 1;
        }
        // Every copy repeats its original's uuid and parentUuid; the originals come before
        // the last compaction boundary ahead of the run.
        let mut last_original = 0;
        let exact = (start..end).all(|i| {
            let Some(h) = s.header(i) else { return false };
            let Some(&o) = h.uuid().and_then(|u| s.by_uuid.get(u)) else {
                return false;
            };
            last_original = last_original.max(o);
            s.header(o).is_some_and(|oh| {
                oh.parent_uuid() == h.parent_uuid() && oh.kind == h.kind && !h.is_sidechain
            })
        });
        if !exact || end - start < 2 {
            continue;
        }
        let pos = boundaries.partition_point(|&b| b < start);
        if pos < 2 {
            continue;
        }
        let boundary = boundaries[pos - 1];
        // The copies repeat history an earlier compaction summarized: another boundary lies
        // between the originals and this one.
        if boundaries[pos - 2] <= last_original {
            continue;
        }
        let Some(anchor) = (boundary..start).rev().find(|&a| {
            s.header(a)
                .is_some_and(|h| h.uuid().is_some() && !h.is_sidechain)
        }) else {
            continue;
        };
        out.push(Damage::ReplayedHistory {
            copies: start..end,
            boundary,
            anchor,
            logical: message_before(s, boundary),
        });
    }
}

/// `messageId` of a `file-history-snapshot` record.
fn snapshot_message_id(s: &Session<'_>, i: usize) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(s.records[i].raw()).ok()?;
    v.get("messageId")?.as_str().map(str::to_string)
}

fn snapshot_collisions(s: &Session<'_>, out: &mut Vec<Damage>) {
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if h.kind != Kind::FileHistorySnapshot {
            continue;
        }
        // A snapshot carries no uuid of its own; one that carries a message's is the
        // collision of #36583.
        if let Some(u) = h.uuid() {
            let holders = std::iter::once(s.by_uuid.get(u).copied())
                .flatten()
                .chain(
                    s.duplicate_uuids
                        .iter()
                        .copied()
                        .filter(|&d| s.header(d).and_then(|h| h.uuid()) == Some(u)),
                )
                .filter(|&k| k != i && is_main_message(s, k))
                .count();
            if holders > 0 {
                out.push(Damage::SnapshotCollision {
                    snapshot: i,
                    message: None,
                    own_uuid: true,
                    parent: None,
                });
                continue;
            }
        }
        // The message the snapshot belongs to follows it; when that message's parent is not in
        // the file, resume keeps only what follows (#24304).
        let Some(m) = snapshot_message_id(s, i) else {
            continue;
        };
        let Some(&k) = s.by_uuid.get(m.as_str()) else {
            continue;
        };
        let next =
            (i + 1..s.records.len()).find(|&j| s.header(j).is_some_and(|h| h.uuid().is_some()));
        let dangling = s
            .header(k)
            .and_then(|h| h.parent_uuid())
            .is_some_and(|p| !s.by_uuid.contains_key(p));
        if next == Some(k) && dangling && is_main_message(s, k) {
            out.push(Damage::SnapshotCollision {
                snapshot: i,
                message: Some(k),
                own_uuid: false,
                parent: message_before(s, i),
            });
        }
    }
}

fn is_agent_progress(s: &Session<'_>, i: usize) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(s.records[i].raw()) else {
        return false;
    };
    let data = v.get("data");
    data.and_then(|d| d.get("type")).and_then(|t| t.as_str()) == Some("agent_progress")
}

fn retries_on_progress(s: &Session<'_>, out: &mut Vec<Damage>) {
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if !crate::transcript::session::is_prompt(h) {
            continue;
        }
        let Some(p) = s.parent(i) else { continue };
        if s.header(p).is_none_or(|ph| ph.kind != Kind::Progress) || !is_agent_progress(s, p) {
            continue;
        }
        // The main chain the progress row hangs from: its nearest ancestor that is a message,
        // else the message written last before the prompt.
        let mut cur = s.parent(p);
        let mut steps = 0;
        while let Some(a) = cur {
            if is_main_message(s, a) || steps > s.records.len() {
                break;
            }
            steps += 1;
            cur = s.parent(a);
        }
        let parent = cur
            .filter(|&a| is_main_message(s, a))
            .or_else(|| message_before(s, i));
        out.push(Damage::RetryOnProgress {
            prompt: i,
            progress: p,
            parent,
        });
    }
}

fn subagents_in_main(s: &Session<'_>, out: &mut Vec<Damage>) {
    // Only a main session file (one with a main chain) can hold another agent's records.
    if !(0..s.records.len()).any(|i| is_main_message(s, i)) {
        return;
    }
    // A sub-agent is in the file when one of its sidechain messages is. The compaction
    // summariser's records live in its own file; 1.0.x sidechains carry no agentId and stayed
    // in the main file by design.
    let agent_of = |i: usize| -> Option<&str> {
        let h = s.header(i)?;
        let a = h.agent_id().filter(|a| !a.starts_with("acompact"))?;
        Some(a).filter(|_| h.is_sidechain && h.uuid().is_some())
    };
    let mut agents: Vec<(String, Vec<usize>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for i in 0..s.records.len() {
        if let Some(a) = agent_of(i) {
            if !index.contains_key(a) {
                index.insert(a.to_string(), agents.len());
                agents.push((a.to_string(), Vec::new()));
            }
        }
    }
    if agents.is_empty() {
        return;
    }
    // Its records: its sidechain messages, and the rows without a uuid that carry its agentId
    // (2.1.x writes its API request rows so); never a main-chain record.
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        let Some(&k) = h.agent_id().and_then(|a| index.get(a)) else {
            continue;
        };
        if agent_of(i).is_some() || (!h.is_sidechain && h.uuid().is_none()) {
            agents[k].1.push(i);
        }
    }
    for (agent, records) in agents {
        out.push(Damage::SubagentInMain { agent, records });
    }
}
