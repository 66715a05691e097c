//! The session model: a whole transcript with its conversation graph.
//!
//! Built from the records of one file, it indexes uuids, parents and children, tool_use ↔
//! tool_result pairs, assistant message pieces, every uuid reference field, and the turns of
//! the conversation. Records stay in file order in [`Session::records`]; stages edit that vector
//! and call [`Session::reindex`] when they need the indexes again.

use std::collections::HashSet;
use std::sync::Arc;

use crate::transcript::record::Kind;
use crate::transcript::record::{Header, Record};

/// The hash map of the session indexes: keys are uuids and tool ids written by Claude Code
/// (not attacker-chosen in any way that matters), so a fast non-cryptographic hash is right.
pub type FastMap<K, V> = foldhash::HashMap<K, V>;

/// Fields that reference another record's uuid, as `(JSON pointer, description)`.
///
/// `relink` rewrites every one of them; `validate` reports every dangling one. The pointers
/// with `*` name every element of an array.
pub const REFERENCE_FIELDS: &[(&str, &str)] = &[
    ("/parentUuid", "parent in the conversation chain"),
    (
        "/logicalParentUuid",
        "pre-compaction parent of a compact boundary",
    ),
    (
        "/leafUuid",
        "leaf of the branch a summary or last-prompt names",
    ),
    (
        "/sourceToolAssistantUUID",
        "assistant record holding the tool_use a result answers",
    ),
    (
        "/compactMetadata/preservedSegment/headUuid",
        "first record kept by a compaction",
    ),
    (
        "/compactMetadata/preservedSegment/anchorUuid",
        "anchor of a compaction's kept segment",
    ),
    (
        "/compactMetadata/preservedSegment/tailUuid",
        "last record kept by a compaction",
    ),
    (
        "/compactMetadata/preservedMessages/anchorUuid",
        "anchor of preserved messages",
    ),
    (
        "/compactMetadata/preservedMessages/uuids/*",
        "preserved messages",
    ),
    (
        "/compactMetadata/preservedMessages/allUuids/*",
        "preserved messages (all)",
    ),
];

/// One turn: a user prompt and everything until the next prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// 1-based number in chain order.
    pub number: usize,
    /// Index (into `records`) of the prompt that opens the turn.
    pub prompt: usize,
    /// Indexes of every record of the turn, in file order.
    pub records: Vec<usize>,
}

/// One step of a turn: one assistant message (every record sharing its `message.id`, however
/// the pieces are interleaved with tool results) with the tool results that answer it and the
/// bookkeeping records written in between. A turn is its prompt (with the records written
/// before its first assistant message: its *head*) plus its steps.
///
/// Steps are the finest unit an edit can take without breaking the conversation: a step never
/// splits a split assistant message, and a step holds the results of its tool calls (a result
/// answering an earlier step of the same turn merges the steps in between).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// 1-based number across the whole session, in chain order.
    pub number: usize,
    /// 0-based index of the turn (in [`Session::turns`]) the step belongs to.
    pub turn: usize,
    /// Indexes of the step's records, in file order.
    pub records: Vec<usize>,
}

/// A whole session: its records in file order plus the graph indexes.
pub struct Session<'a> {
    /// The records, in file order.
    pub records: Vec<Record<'a>>,
    /// uuid → index of the first record carrying it.
    pub by_uuid: FastMap<String, usize>,
    /// Indexes of records whose uuid repeats an earlier one.
    pub duplicate_uuids: Vec<usize>,
    /// tool_use id → index of the record holding the `tool_use` block.
    pub tool_uses: FastMap<String, usize>,
    /// tool_use id → indexes of records holding a `tool_result` for it.
    pub tool_results: FastMap<String, Vec<usize>>,
    /// Tombstones: uuid of a removed record → its `parentUuid` (`None` for a root).
    ///
    /// Filled automatically by [`Session::reindex`] for every uuid that was indexed before and
    /// is gone now (so a stage may drop records any way it likes), and explicitly by
    /// [`Session::remove`] / [`Session::tombstone`]. `relink` follows these to re-point the
    /// references to a removed record at its nearest surviving ancestor.
    pub removed: FastMap<String, Option<String>>,
    /// `(id, header)` of every record as of the last [`Session::reindex`]: when no record was
    /// added, removed or moved since, and no edit changed a uuid or tool id, the indexes are
    /// still right; the headers of records dropped since are the tombstones. An edit drops
    /// the record's cached header, so a record still holding the very header indexed was not
    /// edited since (or was a blank record and still is, which changes nothing indexed).
    indexed: Vec<(u64, Option<Arc<Header>>)>,
    /// Set by `relink` (to its `tool_pairs` option) when it leaves every reference resolving;
    /// cleared by any change. A second relink of an unchanged session has nothing to do.
    pub(crate) linked: Option<bool>,
}

impl<'a> Session<'a> {
    /// Build the model from records in file order.
    pub fn new(records: Vec<Record<'a>>) -> Self {
        let mut s = Session {
            records,
            by_uuid: FastMap::default(),
            duplicate_uuids: Vec::new(),
            tool_uses: FastMap::default(),
            tool_results: FastMap::default(),
            removed: FastMap::default(),
            indexed: Vec::new(),
            linked: None,
        };
        s.force_reindex();
        s
    }

    /// Bring every index up to date after the records changed. Cheap when they kept their
    /// places: only the headers of edited records are read again, and the indexes are rebuilt
    /// only when an edit changed what they hold.
    pub fn reindex(&mut self) {
        let same_places = self.indexed.len() == self.records.len()
            && self
                .records
                .iter()
                .zip(&self.indexed)
                .all(|(r, (id, _))| r.id() == *id);
        if !same_places {
            return self.force_reindex();
        }
        for (r, entry) in self.records.iter().zip(self.indexed.iter_mut()) {
            if r.holds_header(entry.1.as_ref()) {
                continue;
            }
            // Any edit may have moved the record in the chain.
            self.linked = None;
            let new = r.header_arc();
            if indexed_key(new.as_deref()) != indexed_key(entry.1.as_deref()) {
                return self.force_reindex();
            }
            entry.1 = new;
        }
    }

    fn force_reindex(&mut self) {
        self.linked = None;
        self.by_uuid.clear();
        self.duplicate_uuids.clear();
        self.tool_uses.clear();
        self.tool_results.clear();
        for (i, r) in self.records.iter().enumerate() {
            let Some(h) = r.header() else { continue };
            if let Some(u) = h.uuid() {
                if self.by_uuid.contains_key(u) {
                    self.duplicate_uuids.push(i);
                } else {
                    self.by_uuid.insert(u.to_string(), i);
                }
            }
            for id in h.tool_use_ids() {
                self.tool_uses.entry(id.to_string()).or_insert(i);
            }
            for id in h.tool_result_ids() {
                self.tool_results.entry(id.to_string()).or_default().push(i);
            }
        }
        // Tombstone every uuid indexed last time and gone now (the first record that carried
        // it names the parent), then remember the current headers.
        for (_, h) in std::mem::take(&mut self.indexed) {
            let Some(u) = h.as_ref().and_then(|h| h.uuid()) else {
                continue;
            };
            if !self.by_uuid.contains_key(u) && !self.removed.contains_key(u) {
                let parent = h.as_ref().and_then(|h| h.parent_uuid().map(str::to_string));
                self.removed.insert(u.to_string(), parent);
            }
        }
        self.indexed = self
            .records
            .iter()
            .map(|r| (r.id(), r.header_arc()))
            .collect();
    }

    /// Remove record `i`, leaving a tombstone for its uuid; returns it. Indexes are stale until
    /// the next [`Session::reindex`].
    pub fn remove(&mut self, i: usize) -> Record<'a> {
        self.linked = None;
        let r = self.records.remove(i);
        if let Some(h) = r.header() {
            if let Some(u) = h.uuid() {
                let p = h.parent_uuid().map(str::to_string);
                self.removed.entry(u.to_string()).or_insert(p);
            }
        }
        r
    }

    /// Record that `uuid` was removed and what now stands in its place in the chain: its
    /// nearest surviving ancestor, or a record that replaces it (a summary). Overrides an
    /// automatic tombstone.
    pub fn tombstone(&mut self, uuid: &str, replacement: Option<&str>) {
        self.linked = None;
        self.removed
            .insert(uuid.to_string(), replacement.map(str::to_string));
    }

    /// Header of record `i` (`None` for a line that is not a JSON object).
    pub fn header(&self, i: usize) -> Option<&Header> {
        self.records[i].header()
    }

    /// Index of the parent of record `i`, if it has one that exists in this file.
    pub fn parent(&self, i: usize) -> Option<usize> {
        let p = self.header(i)?.parent_uuid()?;
        self.by_uuid.get(p).copied()
    }

    /// Every cycle of `parentUuid` links, each as its records in walk order, starting at the
    /// record where a walk from the start of the file first came back to itself.
    pub fn parent_cycles(&self) -> Vec<Vec<usize>> {
        // 0 = unvisited, 1 = on the current walk, 2 = done (reaches a root or a known cycle).
        let mut state = vec![0u8; self.records.len()];
        let mut cycles = Vec::new();
        for start in 0..self.records.len() {
            let mut walk = Vec::new();
            let mut cur = Some(start);
            while let Some(i) = cur {
                match state[i] {
                    2 => break,
                    1 => {
                        let at = walk.iter().position(|&k| k == i).unwrap_or(0);
                        cycles.push(walk[at..].to_vec());
                        break;
                    }
                    _ => {}
                }
                state[i] = 1;
                walk.push(i);
                cur = self.parent(i);
            }
            for i in walk {
                state[i] = 2;
            }
        }
        cycles
    }

    /// Walking up from record `i`, is the first assistant record (or user prompt) met a piece
    /// of message `mid`? Results of tools run while the message was still streaming sit
    /// between its pieces (2.1.x) and are passed over; a prompt or other user text is not.
    /// A dangling parent or the root counts as yes (reported on its own).
    pub fn continues_message(&self, i: usize, mid: &str) -> bool {
        let mut cur = self.parent(i);
        let mut steps = 0;
        while let Some(p) = cur {
            steps += 1;
            if steps > self.records.len() {
                return false;
            }
            let Some(h) = self.header(p) else {
                return false;
            };
            match h.kind {
                Kind::Assistant => return h.message_id() == Some(mid),
                Kind::User if !is_tool_results_only(h) => return false,
                _ => cur = self.parent(p),
            }
        }
        true
    }

    /// Index of the record the chain continues from: the last non-sidechain chain record in
    /// file order (Claude Code resumes from the newest message).
    pub fn leaf(&self) -> Option<usize> {
        (0..self.records.len()).rev().find(|&i| {
            self.header(i)
                .is_some_and(|h| h.is_chain() && !h.is_sidechain && is_conversational(h))
        })
    }

    /// The chain from the root to `leaf`, following `parentUuid` and, across a compaction,
    /// `logicalParentUuid`. Stops at a dangling parent or a cycle.
    pub fn logical_path(&self, leaf: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut cur = Some(leaf);
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            path.push(i);
            let h = self.header(i);
            cur = self.parent(i).or_else(|| {
                let lp = h?.logical_parent_uuid()?;
                self.by_uuid.get(lp).copied()
            });
        }
        path.reverse();
        path
    }

    /// The turns of the main conversation, numbered from 1 in chain order.
    ///
    /// Prompts are found on the logical path to the leaf; every record of the file belongs to
    /// the turn of the nearest prompt at or before it in file order (so side branches,
    /// sidechains and bookkeeping records sit in the turn they were written in).
    pub fn turns(&self) -> Vec<Turn> {
        let Some(leaf) = self.leaf() else {
            return Vec::new();
        };
        let prompts: Vec<usize> = self
            .logical_path(leaf)
            .into_iter()
            .filter(|&i| self.header(i).is_some_and(is_prompt))
            .collect();
        let mut turns: Vec<Turn> = prompts
            .iter()
            .enumerate()
            .map(|(n, &p)| Turn {
                number: n + 1,
                prompt: p,
                records: Vec::new(),
            })
            .collect();
        if turns.is_empty() {
            return turns;
        }
        let mut sorted: Vec<(usize, usize)> =
            prompts.iter().enumerate().map(|(t, &p)| (p, t)).collect();
        sorted.sort();
        for i in 0..self.records.len() {
            let pos = sorted.partition_point(|&(p, _)| p <= i);
            let t = if pos == 0 {
                sorted[0].1
            } else {
                sorted[pos - 1].1
            };
            turns[t].records.push(i);
        }
        turns
    }

    /// The steps of `turns` (as [`Session::turns`] returns them), numbered from 1.
    ///
    /// A step opens at a non-sidechain assistant record on the logical path to the leaf whose
    /// `message.id` no earlier step of the turn holds; every record after it in the turn
    /// belongs to it until the next step opens. A piece of an earlier step's message, or a
    /// tool result answering an earlier step's call, merges the steps from that one on. The
    /// records of a turn before its first step are its head (prompt, attachments, meta).
    pub fn steps(&self, turns: &[Turn]) -> Vec<Step> {
        let on_path: HashSet<usize> = self
            .leaf()
            .map(|l| self.logical_path(l).into_iter().collect())
            .unwrap_or_default();
        let mut out: Vec<Step> = Vec::new();
        for (t, turn) in turns.iter().enumerate() {
            // (message ids, tool_use ids) of each step of this turn, parallel to `steps`.
            let mut steps: Vec<Step> = Vec::new();
            let mut keys: Vec<(HashSet<&str>, HashSet<&str>)> = Vec::new();
            for &i in &turn.records {
                if i <= turn.prompt {
                    // Records written before the prompt (first turn only) stay in the head,
                    // so the prompt always opens its turn.
                    continue;
                }
                let h = self.header(i);
                let opens = h.is_some_and(|h| {
                    h.kind == Kind::Assistant
                        && !h.is_sidechain
                        && on_path.contains(&i)
                        && !h
                            .message_id()
                            .is_some_and(|m| keys.iter().any(|k| k.0.contains(m)))
                });
                if opens {
                    steps.push(Step {
                        number: 0,
                        turn: t,
                        records: Vec::new(),
                    });
                    keys.push(Default::default());
                }
                let Some(cur) = steps.len().checked_sub(1) else {
                    continue; // the head
                };
                // The earliest step this record ties to: its message or the calls it answers.
                let mut tie = cur;
                if let Some(h) = h.filter(|h| !h.is_sidechain) {
                    for (k, key) in keys.iter().enumerate().take(cur) {
                        let same_msg = h.kind == Kind::Assistant
                            && h.message_id().is_some_and(|m| key.0.contains(m));
                        let answers = h
                            .blocks()
                            .iter()
                            .any(|b| b.tool_use_id().is_some_and(|id| key.1.contains(id)));
                        if same_msg || answers {
                            tie = k;
                            break;
                        }
                    }
                }
                while steps.len() > tie + 1 {
                    let last = steps.pop().expect("more than tie+1 steps");
                    let k = keys.pop().expect("parallel to steps");
                    let prev = steps.last_mut().expect("tie+1 steps remain");
                    prev.records.extend(last.records);
                    let pk = keys.last_mut().expect("parallel to steps");
                    pk.0.extend(k.0);
                    pk.1.extend(k.1);
                }
                let step = steps.last_mut().expect("a step is open");
                step.records.push(i);
                if let Some(h) = h.filter(|h| h.kind == Kind::Assistant && !h.is_sidechain) {
                    let key = keys.last_mut().expect("parallel to steps");
                    if let Some(m) = h.message_id() {
                        key.0.insert(m);
                    }
                    for b in h.blocks() {
                        if let Some(id) = b.id().filter(|_| b.kind() == "tool_use") {
                            key.1.insert(id);
                        }
                    }
                }
            }
            out.extend(steps);
        }
        for (n, s) in out.iter_mut().enumerate() {
            s.number = n + 1;
        }
        out
    }
}

/// What the indexes hold of one header: its uuid and the tool ids of its blocks.
type IndexedKey<'h> = (Option<&'h str>, Vec<(&'h str, &'h str, &'h str)>);

fn indexed_key(h: Option<&Header>) -> Option<IndexedKey<'_>> {
    h.map(|h| {
        let tools = h
            .blocks()
            .iter()
            .filter(|b| b.id().is_some() || b.tool_use_id().is_some())
            .map(|b| {
                (
                    b.kind(),
                    b.id().unwrap_or_default(),
                    b.tool_use_id().unwrap_or_default(),
                )
            })
            .collect();
        (h.uuid(), tools)
    })
}

/// True for a record whose content is only `tool_result` blocks.
pub fn is_tool_results_only(h: &Header) -> bool {
    !h.blocks().is_empty() && h.blocks().iter().all(|b| b.kind() == "tool_result")
}

/// True for user/assistant records (what the API sees), as opposed to bookkeeping.
pub fn is_conversational(h: &Header) -> bool {
    h.kind.is_message()
}

/// Text that Claude Code writes in the user role but that the user did not type: command
/// output and interrupt markers. Such records belong to the turn before them.
const NOT_PROMPT_PREFIXES: &[&str] = &[
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
];

/// True for a user record that opens a turn: typed text, not a tool result, not injected
/// meta text, not a compaction summary, not command output or an interrupt marker.
pub fn is_prompt(h: &Header) -> bool {
    h.kind == Kind::User
        && !h.is_meta
        && !h.is_compact_summary
        && !h.is_sidechain
        && (h.content_is_text
            || (!h.blocks().is_empty() && h.blocks().iter().all(|b| b.kind() != "tool_result")))
        && !NOT_PROMPT_PREFIXES
            .iter()
            .any(|p| h.text_prefix().starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::framing::lines;

    fn session(text: &str) -> Session<'_> {
        Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect())
    }

    #[test]
    fn turns_follow_chain_and_group_records() {
        let text = [
            crate::testkit::prompt("1", None, "hi"),
            crate::testkit::tool_call("2", "1", "m1", "t1", "Bash"),
            crate::testkit::tool_result("3", "2", "t1", "ok"),
            crate::testkit::prompt("4", Some("3"), "next"),
            r#"{"type":"assistant","uuid":"5","parentUuid":"4","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}"#.to_string() + "\n",
        ]
        .concat();
        let s = session(&text);
        let t = s.turns();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].records, vec![0, 1, 2]);
        assert_eq!(t[1].records, vec![3, 4]);
        assert_eq!(s.tool_uses["t1"], 1);
        assert_eq!(s.tool_results["t1"], vec![2]);
    }

    /// The index keeps each record's header itself, not its edit count: an edit drops the
    /// record's cached header, and reindex must still see every edit.
    #[test]
    fn reindex_sees_edits_through_the_header_it_holds() {
        let text = concat!(
            r#"{"type":"user","uuid":"a","parentUuid":null}"#,
            "\n",
            r#"{"type":"user","uuid":"b","parentUuid":"a"}"#,
            "\n",
            "{}\n",
        );
        let mut s = session(text);
        s.linked = Some(true);
        // An edit that keeps the indexed keys: indexes stay, but the chain may have moved.
        s.records[0].set_raw(br#"{"type":"user","uuid":"a","parentUuid":null,"x":1}"#.to_vec());
        s.reindex();
        assert_eq!(s.linked, None);
        assert_eq!(s.by_uuid["a"], 0);
        // An edit that changes a uuid: the old one becomes a tombstone.
        s.records[1].set_raw(br#"{"type":"user","uuid":"c","parentUuid":"a"}"#.to_vec());
        s.reindex();
        assert_eq!(s.by_uuid.get("b"), None);
        assert_eq!(s.by_uuid["c"], 1);
        assert_eq!(s.removed["b"].as_deref(), Some("a"));
        // Every edit is seen, a blank record's too (all blank records share one header).
        s.linked = Some(true);
        s.records[2].set_raw(b"{ }".to_vec());
        s.reindex();
        assert_eq!(s.linked, None);
        assert_eq!(s.by_uuid.len(), 2);
        // A record becoming a chain record is indexed.
        s.records[2].set_raw(br#"{"uuid":"d"}"#.to_vec());
        s.reindex();
        assert_eq!(s.by_uuid["d"], 2);
        assert_eq!(s.linked, None);
    }

    #[test]
    fn logical_path_crosses_compaction() {
        let s = session(concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"old"}}"#,
            "\n",
            r#"{"type":"system","subtype":"compact_boundary","uuid":"b","parentUuid":null,"logicalParentUuid":"1"}"#,
            "\n",
            r#"{"type":"user","uuid":"2","parentUuid":"b","isCompactSummary":true,"message":{"role":"user","content":"summary"}}"#,
            "\n",
            r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":"new"}}"#,
            "\n",
        ));
        assert_eq!(s.logical_path(3), vec![0, 1, 2, 3]);
        assert_eq!(s.turns().len(), 2);
    }
}
