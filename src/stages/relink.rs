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
}

fn yes() -> bool {
    true
}

impl Default for RelinkOptions {
    fn default() -> Self {
        RelinkOptions { tool_pairs: true }
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
            .map(|(u, &i)| (u.clone(), s.header(i).and_then(|h| h.parent_uuid.clone())))
            .collect()
    } else {
        HashMap::new()
    };
    let mut st = Stats::default();
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
    fix_references(s, cx, &orig, &mut st)?;
    s.reindex();
    s.linked = Some(opts.tool_pairs);
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
    Ok(())
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
    s.header(i).and_then(|h| h.uuid.clone())
}

fn branch_of(s: &Session<'_>, i: usize) -> Option<(bool, Option<String>)> {
    s.header(i).map(|h| (h.is_sidechain, h.agent_id.clone()))
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

/// The record a record with a broken parent link should hang from: the previous piece of its
/// assistant message, else the previous chain record of the same branch, in file order; never
/// one of its own descendants.
///
/// `i` is a root or a cycle member (its broken link is what is being repaired), so "`j`
/// descends from `i`" is "walking up from `j` ends where walking up from `i` ends", which
/// [`Ancestry`] answers without a walk; candidates come from per-branch lists in file order
/// instead of a scan back through the file.
fn repair_parent(
    s: &Session<'_>,
    i: usize,
    anc: &mut Ancestry,
    ix: &mut Option<Candidates>,
) -> Option<String> {
    let branch = branch_of(s, i)?;
    let h = s.header(i)?;
    let ix = ix.get_or_insert_with(|| Candidates::new(s));
    let end = anc.find(i);
    if h.kind == Kind::Assistant {
        if let Some(mid) = &h.message_id {
            let pieces = ix
                .pieces
                .get(&(mid.clone(), branch.clone()))
                .map_or(&[][..], Vec::as_slice);
            let before = pieces.partition_point(|&j| j < i);
            for &j in pieces[..before].iter().rev() {
                if anc.find(j) != end {
                    return uuid_of(s, j);
                }
            }
        }
    }
    let chain = ix.by_branch.get(&branch).map_or(&[][..], Vec::as_slice);
    let before = chain.partition_point(|&j| j < i);
    for &j in chain[..before].iter().rev() {
        let hj = s.header(j).expect("indexed records have headers");
        if hj.uuid != h.uuid && anc.find(j) != end {
            return hj.uuid.clone();
        }
    }
    None
}

/// A record's branch: `isSidechain` and `agentId`.
type Branch = (bool, Option<String>);

/// The records [`repair_parent`] may pick, in file order: every record with a uuid by branch,
/// and every assistant piece with a uuid by message id and branch. Relink's parent repairs
/// change only `parentUuid`, so these stay right while they run.
struct Candidates {
    by_branch: FastMap<Branch, Vec<usize>>,
    pieces: FastMap<(String, Branch), Vec<usize>>,
}

impl Candidates {
    fn new(s: &Session<'_>) -> Self {
        let mut by_branch: FastMap<Branch, Vec<usize>> = FastMap::default();
        let mut pieces: FastMap<(String, Branch), Vec<usize>> = FastMap::default();
        for i in 0..s.records.len() {
            let Some(h) = s.header(i) else { continue };
            if h.uuid.is_none() {
                continue;
            }
            let branch = (h.is_sidechain, h.agent_id.clone());
            if h.kind == Kind::Assistant {
                if let Some(mid) = &h.message_id {
                    pieces
                        .entry((mid.clone(), branch.clone()))
                        .or_default()
                        .push(i);
                }
            }
            by_branch.entry(branch).or_default().push(i);
        }
        Candidates { by_branch, pieces }
    }
}

/// Where walking up the parent links from each record ends: at a root (a record whose parent
/// is not in the file) or in a cycle. A union-find over the records plus one element per
/// cycle, with path compression, kept up to date as relink re-points the parent of a root or
/// of a cycle member: "does `j` descend from root `i`" is `find(j) == find(i)`, not a walk up
/// from `j` (which made repairing many broken links quadratic).
struct Ancestry {
    /// Union-find links: `up[k]` is `k` for a root or a cycle element; elements
    /// `n + c` stand for cycle `c`.
    up: Vec<usize>,
    /// Members of each cycle in walk order, in the order [`Session::parent_cycles`] finds
    /// them, and the first record index whose walk found it.
    cycles: Vec<(Vec<usize>, usize)>,
}

impl Ancestry {
    fn new(s: &Session<'_>) -> Self {
        const UNSET: usize = usize::MAX;
        const ON_WALK: usize = usize::MAX - 1;
        let n = s.records.len();
        let mut up = vec![UNSET; n];
        let mut cycles = Vec::new();
        let mut walk = Vec::new();
        for start in 0..n {
            if up[start] != UNSET {
                continue;
            }
            walk.clear();
            let mut cur = start;
            let end = loop {
                match up[cur] {
                    UNSET => {}
                    ON_WALK => {
                        let at = walk.iter().position(|&k| k == cur).unwrap_or(0);
                        cycles.push((walk[at..].to_vec(), start));
                        break n + cycles.len() - 1;
                    }
                    done => break done,
                }
                up[cur] = ON_WALK;
                walk.push(cur);
                match s.parent(cur) {
                    Some(p) => cur = p,
                    None => break cur,
                }
            };
            for &k in &walk {
                up[k] = end;
            }
        }
        up.extend(n..n + cycles.len());
        Ancestry { up, cycles }
    }

    /// Where walking up from element `k` ends (a root record or a cycle element).
    fn find(&mut self, k: usize) -> usize {
        let mut end = k;
        while self.up[end] != end {
            end = self.up[end];
        }
        let mut cur = k;
        while self.up[cur] != end {
            let next = self.up[cur];
            self.up[cur] = end;
            cur = next;
        }
        end
    }

    /// Root `i` now hangs from record `p`: returns false (and records nothing) when that closes
    /// a cycle.
    fn attach_root(&mut self, i: usize, p: usize) -> bool {
        let end = self.find(p);
        if end == i {
            return false;
        }
        self.up[i] = end;
        true
    }
}

fn fix_parents(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
    let mut anc: Option<Ancestry> = None;
    let mut ix: Option<Candidates> = None;
    let mut tombstones = Resolver::default();
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        let Some(p) = h.parent_uuid.clone() else {
            continue;
        };
        if s.by_uuid.contains_key(&p) {
            continue;
        }
        let own = h.uuid.clone();
        let compact_summary = h.is_compact_summary;
        let new = match tombstones.resolve(s, &p) {
            Resolution::Survivor(u) if Some(&u) != own.as_ref() => Some(u),
            Resolution::Root => None,
            // A compaction summary hangs from its boundary, a root: without it, it is the root.
            _ if compact_summary => None,
            _ => repair_parent(s, i, anc.get_or_insert_with(|| Ancestry::new(s)), &mut ix),
        };
        set_parent(s, i, new.as_deref(), cx)?;
        st.reparented += 1;
        // `i` was a root (its parent is not in the file): keep the ancestry in step. A link
        // that closes a cycle makes the ancestry stale; it is rebuilt on the next repair.
        if let (Some(a), Some(u)) = (anc.as_mut(), new.as_deref()) {
            let p = s.by_uuid[u];
            if !a.attach_root(i, p) {
                anc = None;
            }
        }
    }
    Ok(())
}

/// Break every parent cycle at its member that comes first in the file, one cycle at a time
/// in the order [`Session::parent_cycles`] lists them, as if the cycles were listed again
/// after each break: a broken cycle's records join what its first member now hangs from, so
/// a cycle they join moves up to where the broken one was.
fn break_cycles(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
    let mut anc = Ancestry::new(s);
    if anc.cycles.is_empty() {
        return Ok(());
    }
    let n = s.records.len();
    let mut ix: Option<Candidates> = None;
    // (first record whose walk reaches the cycle, cycle): the next cycle to break is the least.
    let mut queue: std::collections::BinaryHeap<std::cmp::Reverse<(usize, usize)>> = anc
        .cycles
        .iter()
        .enumerate()
        .map(|(c, &(_, start))| std::cmp::Reverse((start, c)))
        .collect();
    let mut reached_from: Vec<usize> = anc.cycles.iter().map(|&(_, start)| start).collect();
    let mut broken = vec![false; anc.cycles.len()];
    let mut breaks = 0;
    while let Some(std::cmp::Reverse((start, c))) = queue.pop() {
        if broken[c] || reached_from[c] != start {
            continue;
        }
        let first = *anc.cycles[c].0.iter().min().expect("a cycle has members");
        let new = repair_parent(s, first, &mut anc, &mut ix);
        set_parent(s, first, new.as_deref(), cx)?;
        st.cycles_broken += 1;
        breaks += 1;
        broken[c] = true;
        let cycle = n + c;
        match new.as_deref() {
            None => {
                anc.up[first] = first;
                anc.up[cycle] = first;
            }
            Some(u) => {
                let end = anc.find(s.by_uuid[u]);
                if end == cycle {
                    // Still a cycle (the uuid picked is carried by an earlier record too):
                    // go on the slow way, listing the cycles again after each break.
                    return break_cycles_by_listing(s, cx, st, n - breaks);
                }
                anc.up[cycle] = end;
                if end >= n && start < reached_from[end - n] {
                    reached_from[end - n] = start;
                    queue.push(std::cmp::Reverse((start, end - n)));
                }
            }
        }
    }
    Ok(())
}

/// [`break_cycles`] for the odd case it does not follow: list the cycles again after every
/// break (at most `budget` breaks).
fn break_cycles_by_listing(
    s: &mut Session<'_>,
    cx: &Cx,
    st: &mut Stats,
    budget: usize,
) -> Result<()> {
    for _ in 0..budget {
        let Some(cycle) = s.parent_cycles().into_iter().next() else {
            return Ok(());
        };
        let first = *cycle.iter().min().expect("a cycle has members");
        let new = repair_parent(s, first, &mut Ancestry::new(s), &mut None);
        set_parent(s, first, new.as_deref(), cx)?;
        st.cycles_broken += 1;
    }
    Ok(())
}

fn join_split_messages(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
    // A swap can split a piece already checked, so repeat until nothing moves (bounded).
    for _ in 0..=s.records.len() {
        let before = st.split_joined;
        join_pass(s, cx, st)?;
        if st.split_joined == before {
            break;
        }
    }
    Ok(())
}

/// One pass: every piece not chained to the previous piece of its message (same branch) is
/// hung from it. Pieces are found through a per-message list, not a scan back; whether the
/// earlier piece hangs below the later one (then they swap places on the chain) is found
/// after the pass by one cycle search, which a join onto a descendant is the only way to
/// create, instead of a walk up the chain per piece.
fn join_pass(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
    // Last uuid-bearing piece seen so far, per (message, branch).
    let mut last: HashMap<(String, Branch), usize> = HashMap::new();
    // (later piece, earlier piece, the later piece's parent before the join).
    let mut joined: Vec<(usize, usize, Option<String>)> = Vec::new();
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if h.kind != Kind::Assistant {
            continue;
        }
        let Some(mid) = h.message_id.clone() else {
            continue;
        };
        let has_uuid = h.uuid.is_some();
        let above = h.parent_uuid.clone();
        let Some(branch) = branch_of(s, i) else {
            continue;
        };
        let key = (mid, branch);
        let prev = last.get(&key).copied();
        if has_uuid {
            last.insert(key.clone(), i);
        }
        let Some(j) = prev else { continue };
        if s.continues_message(i, &key.0) || !has_uuid {
            continue;
        }
        let j_uuid = uuid_of(s, j).expect("only pieces with a uuid are listed");
        set_parent(s, i, Some(&j_uuid), cx)?;
        joined.push((i, j, above));
        st.split_joined += 1;
    }
    if joined.is_empty() {
        return Ok(());
    }
    // A join onto a piece that hung below the joined one closed a loop: swap them instead
    // (the earlier piece takes the later one's old place on the chain).
    let in_cycle: HashSet<usize> = s.parent_cycles().into_iter().flatten().collect();
    for (i, j, above) in joined {
        if in_cycle.contains(&i) && in_cycle.contains(&j) {
            let own = uuid_of(s, i);
            let above = above.filter(|p| Some(p) != own.as_ref());
            set_parent(s, j, above.as_deref(), cx)?;
        }
    }
    // Joins that closed a loop together (never seen in practice): broken as any cycle is.
    if !s.parent_cycles().is_empty() {
        break_cycles(s, cx, st)?;
    }
    Ok(())
}

/// True when record `i` is a user/assistant message whose `content` is an empty list (the API
/// rejects such a message; a redaction that removed a record's only thinking block leaves one).
fn is_empty_message(s: &mut Session<'_>, i: usize) -> bool {
    let candidate = s.header(i).is_some_and(|h| {
        h.kind.is_message() && h.uuid.is_some() && h.blocks.is_empty() && !h.content_is_text
    });
    candidate
        && s.records[i]
            .value()
            .ok()
            .and_then(|v| v.pointer("/message/content"))
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
}

/// Remove `tool_result` blocks answering no `tool_use` of the file, and messages left with no
/// content; true when records were removed (the caller relinks their children).
fn drop_orphan_results(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<bool> {
    let mut empty = Vec::new();
    for i in 0..s.records.len() {
        if is_empty_message(s, i) {
            empty.push(i);
            st.empty_messages += 1;
            continue;
        }
        let orphans: HashSet<String> = match s.header(i) {
            Some(h) => h
                .tool_result_ids()
                .filter(|id| !s.tool_uses.contains_key(*id))
                .map(str::to_string)
                .collect(),
            None => continue,
        };
        if orphans.is_empty() {
            continue;
        }
        let m = object_mut(&mut s.records[i], cx, "relink")?;
        let Some(Value::Array(blocks)) = m.get_mut("message").and_then(|v| v.get_mut("content"))
        else {
            continue;
        };
        let before = blocks.len();
        blocks.retain(|b| {
            !(b.get("type").and_then(Value::as_str) == Some("tool_result")
                && b.get("tool_use_id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| orphans.contains(id)))
        });
        st.orphan_results += (before - blocks.len()) as u64;
        if blocks.is_empty() {
            empty.push(i);
        }
    }
    for &i in empty.iter().rev() {
        s.remove(i);
    }
    Ok(!empty.is_empty())
}

/// Envelope fields a generated record copies from its neighbour, in Claude Code's order.
const ENVELOPE: &[&str] = &[
    "isSidechain",
    "agentId",
    "userType",
    "entrypoint",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "slug",
];

/// A new record's envelope: `parentUuid`, then the [`ENVELOPE`] fields `from` has (with
/// `userType: "external"` and `isSidechain: false` when it has none).
pub(crate) fn envelope(from: Option<&Value>, parent: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "parentUuid".into(),
        parent.map_or(Value::Null, |p| Value::String(p.into())),
    );
    for key in ENVELOPE {
        if let Some(v) = from.and_then(|f| f.get(*key)) {
            m.insert((*key).into(), v.clone());
        }
    }
    m.entry("isSidechain").or_insert(Value::Bool(false));
    m.entry("userType").or_insert(Value::from("external"));
    m
}

/// A fresh v4 uuid.
pub(crate) fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The last piece of each assistant message that holds an unanswered `tool_use`: where its
/// synthetic results go, so they follow the whole message. For record `i` (a piece), the last
/// later piece of the same message and branch that descends from `i`, else `i`.
///
/// One walk per message, from its last piece up the chain while it stays at or after the
/// message's first piece in the file, marks the pieces that piece descends from; a piece off
/// that path (a forked message) falls back to a search of its own message's pieces. Messages
/// do not overlap in a file, so the walks are linear in the file together.
fn last_pieces(s: &Session<'_>, wanted: &[usize]) -> HashMap<usize, usize> {
    let key = |i: usize| -> Option<(String, Branch)> {
        let h = s.header(i)?;
        (h.kind == Kind::Assistant).then_some(())?;
        Some((h.message_id.clone()?, branch_of(s, i)?))
    };
    let mut messages: HashMap<(String, Branch), Vec<usize>> = HashMap::new();
    for &i in wanted {
        if let Some(k) = key(i) {
            messages.entry(k).or_default();
        }
    }
    if !messages.is_empty() {
        // Only a piece with a uuid can carry the results (they hang from it).
        for j in (0..s.records.len()).filter(|&j| uuid_of(s, j).is_some()) {
            if let Some(list) = key(j).and_then(|k| messages.get_mut(&k)) {
                list.push(j);
            }
        }
    }
    let mut out = HashMap::new();
    for &i in wanted {
        out.insert(i, i);
    }
    for pieces in messages.values() {
        let (Some(&first), Some(&last)) = (pieces.first(), pieces.last()) else {
            continue;
        };
        let members: HashSet<usize> = pieces.iter().copied().collect();
        let mut on_path = HashSet::new();
        let mut cur = Some(last);
        while let Some(k) = cur.filter(|&k| k >= first) {
            if !on_path.insert(k) {
                break;
            }
            cur = s.parent(k);
        }
        for &i in pieces {
            if !out.contains_key(&i) {
                continue;
            }
            let anchor = if on_path.contains(&i) {
                last
            } else {
                pieces
                    .iter()
                    .rev()
                    .take_while(|&&j| j > i)
                    .find(|&&j| members.contains(&j) && descends_from(s, j, i))
                    .copied()
                    .unwrap_or(i)
            };
            out.insert(i, anchor);
        }
    }
    out
}

/// Give every `tool_use` without a result a synthetic error result; true when records were
/// inserted. Linear: the anchors, their children and the last-prompts naming them are found
/// in one pass each, and the new records go in with one rebuild of the record list.
fn answer_unpaired(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<bool> {
    // (tool_use record, id), in file and block order.
    let mut todo: Vec<(usize, String)> = Vec::new();
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if h.uuid.is_none() {
            continue;
        }
        // Only client tools: a server_tool_use is answered inside the assistant message.
        todo.extend(
            h.blocks
                .iter()
                .filter(|b| b.kind == "tool_use")
                .filter_map(|b| b.id.as_deref())
                .filter(|id| !s.tool_results.contains_key(*id) && s.tool_uses.get(*id) == Some(&i))
                .map(|id| (i, id.to_string())),
        );
    }
    if todo.is_empty() {
        return Ok(false);
    }
    let mut users: Vec<usize> = todo.iter().map(|t| t.0).collect();
    users.dedup();
    let anchors = last_pieces(s, &users);
    // (anchor, [(tool_use record, id)]) by anchor, in file and block order within each.
    let mut groups: Vec<(usize, Vec<(usize, String)>)> = Vec::new();
    {
        let mut keyed: Vec<(usize, usize, String)> = todo
            .into_iter()
            .map(|(i, id)| (anchors[&i], i, id))
            .collect();
        keyed.sort_by_key(|t| t.0);
        for (anchor, i, id) in keyed {
            match groups.last_mut() {
                Some((a, v)) if *a == anchor => v.push((i, id)),
                _ => groups.push((anchor, vec![(i, id)])),
            }
        }
    }
    let anchor_uuids: HashMap<String, usize> = groups
        .iter()
        .filter_map(|(a, _)| Some((uuid_of(s, *a)?, *a)))
        .collect();
    // Records hanging from an anchor, and last-prompts naming one as their leaf.
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut leaves: HashMap<usize, Vec<usize>> = HashMap::new();
    for k in 0..s.records.len() {
        let Some(h) = s.header(k) else { continue };
        if let Some(&a) = h.parent_uuid.as_deref().and_then(|p| anchor_uuids.get(p)) {
            if a != k {
                children.entry(a).or_default().push(k);
            }
        }
        if h.kind == Kind::LastPrompt {
            if let Some(&a) = h.leaf_uuid.as_deref().and_then(|l| anchor_uuids.get(l)) {
                leaves.entry(a).or_default().push(k);
            }
        }
    }
    let mut inserts: Vec<(usize, Vec<Record<'static>>)> = Vec::new();
    for (anchor, calls) in groups {
        let Some(anchor_uuid) = uuid_of(s, anchor) else {
            continue;
        };
        let line = s.records[anchor].line;
        let template = s.records[anchor]
            .value()
            .map_err(|e| stage_err(cx, "relink", line, e))?
            .clone();
        let timestamp = template.get("timestamp").cloned();
        let mut parent = anchor_uuid.clone();
        let mut new_records = Vec::new();
        for (use_rec, id) in calls {
            let source = uuid_of(s, use_rec);
            let uuid = new_uuid();
            let mut m = envelope(Some(&template), Some(&parent));
            m.insert("type".into(), Value::from("user"));
            m.insert(
                "message".into(),
                json!({"role": "user", "content": [{
                    "type": "tool_result",
                    "content": INTERRUPTED_TOOL_TEXT,
                    "is_error": true,
                    "tool_use_id": id,
                }]}),
            );
            m.insert("uuid".into(), Value::from(uuid.clone()));
            if let Some(t) = &timestamp {
                m.insert("timestamp".into(), t.clone());
            }
            m.insert("toolUseResult".into(), Value::from(INTERRUPTED_TOOL_TEXT));
            m.insert("toolDenialKind".into(), Value::from("interrupted"));
            if let Some(src) = source {
                m.insert("sourceToolAssistantUUID".into(), Value::from(src));
            }
            new_records.push(Record::from_value(Value::Object(m)));
            parent = uuid;
            st.synthetic_results += 1;
        }
        for k in children.remove(&anchor).unwrap_or_default() {
            set_parent(s, k, Some(&parent), cx)?;
        }
        // A last-prompt that named the anchor as the leaf now names the end of the new chain.
        for k in leaves.remove(&anchor).unwrap_or_default() {
            object_mut(&mut s.records[k], cx, "relink")?
                .insert("leafUuid".into(), Value::from(parent.clone()));
        }
        inserts.push((anchor, new_records));
    }
    // Groups are in anchor order: one pass puts each batch right after its anchor.
    let added: usize = inserts.iter().map(|(_, v)| v.len()).sum();
    let old = std::mem::take(&mut s.records);
    let mut records = Vec::with_capacity(old.len() + added);
    let mut inserts = inserts.into_iter().peekable();
    for (k, r) in old.into_iter().enumerate() {
        records.push(r);
        while let Some((_, batch)) = inserts.next_if(|(a, _)| *a == k) {
            records.extend(batch);
        }
    }
    s.records = records;
    Ok(true)
}

/// What to do with one reference.
enum Fix {
    Set(String),
    Remove,
}

/// True when record `i` is a main-chain conversational record with a uuid: what a dangling
/// reference after it may point at (the nearest earlier one).
fn is_main(s: &Session<'_>, i: usize) -> bool {
    s.header(i)
        .is_some_and(|h| h.uuid.is_some() && !h.is_sidechain && is_conversational(h))
}

/// True when record `i` may contain `key` (a byte search, unless the record is held as an
/// edited value and its bytes are stale).
fn mentions(rec: &Record<'_>, key: &str) -> bool {
    if rec.is_value_edited() {
        return true;
    }
    let needle = format!("\"{key}\"");
    memchr::memmem::find(rec.raw(), needle.as_bytes()).is_some()
}

fn fix_references(
    s: &mut Session<'_>,
    cx: &Cx,
    orig: &HashMap<String, Option<String>>,
    st: &mut Stats,
) -> Result<()> {
    let compact: Vec<&str> = REFERENCE_FIELDS
        .iter()
        .map(|(p, _)| *p)
        .filter(|p| p.starts_with("/compactMetadata/"))
        .collect();
    let mut tombstones = Resolver::default();
    // The nearest main-chain conversational record before `i`, kept as the loop goes (a walk
    // back per dangling reference made a run of them quadratic).
    let mut earlier_main: Option<usize> = None;
    for i in 0..s.records.len() {
        let earlier = earlier_main;
        if is_main(s, i) {
            earlier_main = Some(i);
        }
        let earlier = || earlier.and_then(|j| uuid_of(s, j));
        let Some(h) = s.header(i) else { continue };
        let has_compact_metadata = h.has_compact_metadata;
        let mut fixes: Vec<(&str, Fix)> = Vec::new();
        // Fields the header already holds.
        if let Some(v) = h.logical_parent_uuid.as_deref() {
            if !s.by_uuid.contains_key(v) {
                let fix = match tombstones.resolve(s, v) {
                    Resolution::Survivor(u) => Fix::Set(u),
                    Resolution::Root => Fix::Remove,
                    Resolution::Unknown => earlier().map_or(Fix::Remove, Fix::Set),
                };
                fixes.push(("logicalParentUuid", fix));
            }
        }
        if let Some(v) = h.source_tool_assistant_uuid.as_deref() {
            if !s.by_uuid.contains_key(v) {
                let src = h
                    .tool_result_ids()
                    .find_map(|id| s.tool_uses.get(id))
                    .and_then(|&j| uuid_of(s, j));
                fixes.push(("sourceToolAssistantUUID", src.map_or(Fix::Remove, Fix::Set)));
            }
        }
        if let Some(v) = h.leaf_uuid.as_deref() {
            if !s.by_uuid.contains_key(v) {
                match tombstones.resolve(s, v) {
                    Resolution::Survivor(u) => fixes.push(("leafUuid", Fix::Set(u))),
                    Resolution::Root => fixes.push(("leafUuid", Fix::Remove)),
                    // summary.leafUuid points into other files by design.
                    Resolution::Unknown if h.kind == Kind::LastPrompt => {
                        fixes.push(("leafUuid", earlier().map_or(Fix::Remove, Fix::Set)))
                    }
                    Resolution::Unknown => {}
                }
            }
        }
        for (key, fix) in fixes {
            let m = object_mut(&mut s.records[i], cx, "relink")?;
            match fix {
                Fix::Set(u) => {
                    m.insert(key.into(), Value::from(u));
                    st.refs_rewritten += 1;
                }
                Fix::Remove => {
                    m.shift_remove(key);
                    st.refs_removed += 1;
                }
            }
        }
        if !compact.is_empty() && has_compact_metadata {
            fix_compact_metadata(s, i, cx, orig, st)?;
        }
        // Any other reference field (added to the table later): tombstones only.
        for (ptr, _) in REFERENCE_FIELDS {
            let generic = !matches!(
                *ptr,
                "/parentUuid" | "/logicalParentUuid" | "/leafUuid" | "/sourceToolAssistantUUID"
            ) && !ptr.starts_with("/compactMetadata/");
            if generic {
                fix_generic(s, i, ptr, cx, st)?;
            }
        }
    }
    Ok(())
}

fn fix_generic(s: &mut Session<'_>, i: usize, ptr: &str, cx: &Cx, st: &mut Stats) -> Result<()> {
    let (parent_ptr, last) = ptr.rsplit_once('/').unwrap_or(("", ptr));
    let key = if last == "*" {
        parent_ptr.rsplit('/').next().unwrap_or("")
    } else {
        last
    };
    if key.is_empty() || !mentions(&s.records[i], key) {
        return Ok(());
    }
    let line = s.records[i].line;
    let v = s.records[i]
        .value()
        .map_err(|e| stage_err(cx, "relink", line, e))?;
    if last == "*" {
        let Some(Value::Array(a)) = v.pointer(parent_ptr) else {
            return Ok(());
        };
        let gone: Vec<usize> = a
            .iter()
            .enumerate()
            .filter(|(_, x)| {
                x.as_str()
                    .is_some_and(|u| !s.by_uuid.contains_key(u) && s.removed.contains_key(u))
            })
            .map(|(k, _)| k)
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        let v = s.records[i]
            .value_mut()
            .map_err(|e| stage_err(cx, "relink", line, e))?;
        if let Some(Value::Array(a)) = v.pointer_mut(parent_ptr) {
            for k in gone.into_iter().rev() {
                a.remove(k);
                st.refs_removed += 1;
            }
        }
        return Ok(());
    }
    let Some(u) = v.pointer(ptr).and_then(Value::as_str).map(str::to_string) else {
        return Ok(());
    };
    if s.by_uuid.contains_key(&u) {
        return Ok(());
    }
    let fix = match resolve(s, &u) {
        Resolution::Survivor(n) => Fix::Set(n),
        Resolution::Root => Fix::Remove,
        Resolution::Unknown => return Ok(()),
    };
    let v = s.records[i]
        .value_mut()
        .map_err(|e| stage_err(cx, "relink", line, e))?;
    match fix {
        Fix::Set(n) => {
            if let Some(x) = v.pointer_mut(ptr) {
                *x = Value::from(n);
                st.refs_rewritten += 1;
            }
        }
        Fix::Remove => {
            if let Some(Value::Object(o)) = v.pointer_mut(parent_ptr) {
                o.shift_remove(last);
                st.refs_removed += 1;
            }
        }
    }
    Ok(())
}

/// `compactMetadata.preservedSegment` / `preservedMessages` after records were removed.
///
/// Claude Code splices the preserved messages right after the anchor (normally the compact
/// summary) and gives up on the whole splice when one listed uuid is missing. So: listed uuids
/// that are gone are dropped; the segment shrinks to its surviving head and tail (found on the
/// original chain through the tombstones, else from the list) or disappears with its last
/// member; a missing anchor becomes what replaced it (a tombstone's survivor), else the
/// boundary itself (the summary's parent).
fn fix_compact_metadata(
    s: &mut Session<'_>,
    i: usize,
    cx: &Cx,
    orig: &HashMap<String, Option<String>>,
    st: &mut Stats,
) -> Result<()> {
    let line = s.records[i].line;
    let v = s.records[i]
        .value()
        .map_err(|e| stage_err(cx, "relink", line, e))?;
    let Some(mut new_meta) = v.get("compactMetadata").and_then(Value::as_object).cloned() else {
        return Ok(());
    };
    let own = v.get("uuid").and_then(Value::as_str).map(str::to_string);
    let missing = |u: &str| !s.by_uuid.contains_key(u);
    let new_anchor = |a: &str| match resolve(s, a) {
        Resolution::Survivor(n) => Some(n),
        _ => own.clone(),
    };
    let str_of =
        |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_str).map(String::from);
    let mut changed = 0u64;
    let mut removed = 0u64;
    // The surviving preserved uuids in order, from the list (before it is filtered).
    let listed: Vec<String> = new_meta
        .get("preservedMessages")
        .and_then(|pm| pm.get("uuids"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|u| !missing(u))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(seg)) = new_meta.get_mut("preservedSegment") {
        let head = str_of(seg, "headUuid");
        let tail = str_of(seg, "tailUuid");
        let mut drop_segment = false;
        if let (Some(head), Some(tail)) = (&head, &tail) {
            if missing(head) || missing(tail) {
                let survivors: Vec<String> = match segment_path(s, orig, head, tail) {
                    // tail → head order; the list is head → tail.
                    Some(path) => path.into_iter().filter(|u| !missing(u)).rev().collect(),
                    None => listed.clone(),
                };
                match (survivors.first(), survivors.last()) {
                    (Some(h), Some(t)) => {
                        for (key, old, new) in [("headUuid", head, h), ("tailUuid", tail, t)] {
                            if old != new {
                                seg.insert(key.into(), Value::from(new.as_str()));
                                changed += 1;
                            }
                        }
                    }
                    _ => drop_segment = true,
                }
            }
        }
        if let Some(a) = str_of(seg, "anchorUuid").filter(|a| missing(a)) {
            match new_anchor(&a) {
                Some(n) => {
                    seg.insert("anchorUuid".into(), Value::from(n));
                    changed += 1;
                }
                None => drop_segment = true,
            }
        }
        if drop_segment {
            new_meta.shift_remove("preservedSegment");
            removed += 1;
        }
    }
    if let Some(Value::Object(pm)) = new_meta.get_mut("preservedMessages") {
        let mut drop_pm = false;
        if let Some(a) = str_of(pm, "anchorUuid").filter(|a| missing(a)) {
            match new_anchor(&a) {
                Some(n) => {
                    pm.insert("anchorUuid".into(), Value::from(n));
                    changed += 1;
                }
                None => drop_pm = true,
            }
        }
        for key in ["uuids", "allUuids"] {
            if let Some(Value::Array(list)) = pm.get_mut(key) {
                let before = list.len();
                list.retain(|x| !x.as_str().is_some_and(missing));
                removed += (before - list.len()) as u64;
            }
        }
        if drop_pm {
            new_meta.shift_remove("preservedMessages");
            removed += 1;
        }
    }
    if changed + removed == 0 {
        return Ok(());
    }
    object_mut(&mut s.records[i], cx, "relink")?
        .insert("compactMetadata".into(), Value::Object(new_meta));
    st.refs_rewritten += changed;
    st.refs_removed += removed;
    Ok(())
}

/// The uuids from `tail` up to `head` (inclusive) on the original chain, or `None` when the
/// walk does not reach `head`.
fn segment_path(
    s: &Session<'_>,
    orig: &HashMap<String, Option<String>>,
    head: &str,
    tail: &str,
) -> Option<Vec<String>> {
    let mut path = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = Some(tail.to_string());
    while let Some(u) = cur {
        if !seen.insert(u.clone()) {
            return None;
        }
        path.push(u.clone());
        if u == head {
            return Some(path);
        }
        cur = match orig.get(&u) {
            Some(p) => p.clone(),
            None => s.removed.get(&u)?.clone(),
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::io::framing::lines;

    fn run(text: &str, edit: impl FnOnce(&mut Session<'_>)) -> String {
        let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        edit(&mut s);
        let mut cx = Cx::new(Origin::stdin());
        relink(&mut s, &mut cx).unwrap();
        let mut out = Vec::new();
        for r in &s.records {
            r.write_to(&mut out);
        }
        String::from_utf8(out).unwrap()
    }

    const CHAIN: &str = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"tool_use","id":"t","name":"X","input":{}}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"3","parentUuid":"2","sourceToolAssistantUUID":"2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"n","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
        "\n",
        r#"{"type":"last-prompt","lastPrompt":"hi","leafUuid":"4"}"#,
        "\n",
    );

    #[test]
    fn untouched_file_is_identical() {
        assert_eq!(run(CHAIN, |_| {}), CHAIN);
    }

    #[test]
    fn child_of_removed_record_gets_grandparent() {
        let out = run(CHAIN, |s| {
            s.records.remove(3);
        });
        assert!(out.contains(r#""leafUuid":"3""#), "{out}");
        assert!(
            crate::findings::validate::validate(out.as_bytes()).is_empty(),
            "{out}"
        );
    }

    #[test]
    fn removed_tool_use_takes_its_result_along() {
        let out = run(CHAIN, |s| {
            s.records.remove(1);
        });
        assert!(!out.contains("tool_result"), "{out}");
        assert!(out.contains(r#""uuid":"4","parentUuid":"1""#), "{out}");
        assert!(
            crate::findings::validate::validate(out.as_bytes()).is_empty(),
            "{out}"
        );
    }

    #[test]
    fn removed_result_gets_synthetic_error_result() {
        let out = run(CHAIN, |s| {
            s.records.remove(2);
        });
        let recs: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let syn = &recs[2];
        assert_eq!(syn["parentUuid"], "2");
        assert_eq!(syn["message"]["content"][0]["is_error"], true);
        assert_eq!(syn["message"]["content"][0]["tool_use_id"], "t");
        assert_eq!(syn["sourceToolAssistantUUID"], "2");
        assert_eq!(recs[3]["parentUuid"], syn["uuid"]);
        assert!(
            crate::findings::validate::validate(out.as_bytes()).is_empty(),
            "{out}"
        );
    }

    #[test]
    fn dangling_parent_and_cycle_are_repaired() {
        let text = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"2","parentUuid":"gone","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"a","parentUuid":"b","message":{"role":"user","content":"q"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"n","role":"assistant","content":[{"type":"text","text":"y"}]}}"#,
            "\n",
        );
        let out = run(text, |_| {});
        assert!(out.contains(r#""uuid":"2","parentUuid":"1""#), "{out}");
        assert!(out.contains(r#""uuid":"a","parentUuid":"2""#), "{out}");
        assert!(
            crate::findings::validate::validate(out.as_bytes()).is_empty(),
            "{out}"
        );
        assert_eq!(run(&out, |_| {}), out, "idempotent");
    }

    #[test]
    fn split_message_pieces_are_joined_and_swapped_when_reversed() {
        // Piece b2 of message m hangs from the prompt beside b1: it is hung from b1.
        let beside = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"b1","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"b2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"y"}]}}"#,
            "\n",
        );
        let out = run(beside, |_| {});
        assert!(out.contains(r#""uuid":"b2","parentUuid":"b1""#), "{out}");
        assert!(out.contains(r#""uuid":"b1","parentUuid":"1""#), "{out}");
        // The earlier piece in the file hangs below the later one: they swap places on the
        // chain (c1 takes c2's old parent, c2 hangs from c1), without a loop.
        let reversed = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"c1","parentUuid":"c2","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"c2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"y"}]}}"#,
            "\n",
        );
        let out = run(reversed, |_| {});
        assert!(out.contains(r#""uuid":"c1","parentUuid":"1""#), "{out}");
        assert!(out.contains(r#""uuid":"c2","parentUuid":"c1""#), "{out}");
        assert!(
            crate::findings::validate::validate(out.as_bytes()).is_empty(),
            "{out}"
        );
        assert_eq!(run(&out, |_| {}), out, "idempotent");
    }

    #[test]
    fn orphan_result_is_removed() {
        let text = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"user","uuid":"2","parentUuid":"1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"zz","content":"ok"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"3","parentUuid":"2","message":{"id":"n","role":"assistant","content":[{"type":"text","text":"y"}]}}"#,
            "\n",
        );
        let out = run(text, |_| {});
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(out.contains(r#""uuid":"3","parentUuid":"1""#), "{out}");
    }

    /// A record-scoped stage whose `Drop` goes through `Stage::session`'s default.
    struct DropType(&'static str);
    impl Stage for DropType {
        fn name(&self) -> &'static str {
            "drop-type"
        }
        fn record(&self, rec: &mut Record<'_>, _: &mut Cx) -> Result<crate::stages::Verdict> {
            Ok(if rec.record_type() == Some(self.0) {
                crate::stages::Verdict::Drop
            } else {
                crate::stages::Verdict::Keep
            })
        }
    }

    #[test]
    fn drops_by_record_stages_leave_tombstones() {
        // File order differs from chain order: the progress record's parent is "1", and the
        // record written just before it is the side branch "x".
        let text = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"attachment","uuid":"x","parentUuid":"1"}"#,
            "\n",
            r#"{"type":"progress","uuid":"p","parentUuid":"1"}"#,
            "\n",
            r#"{"type":"assistant","uuid":"2","parentUuid":"p","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"a"}]}}"#,
            "\n",
        );
        let out = run(text, |s| {
            let mut cx = Cx::new(Origin::stdin());
            DropType("progress").session(s, &mut cx).unwrap();
            s.reindex();
            assert_eq!(s.removed.get("p"), Some(&Some("1".to_string())));
        });
        assert!(out.contains(r#""uuid":"2","parentUuid":"1""#), "{out}");
        // Without the tombstone (a line deleted from the file), the nearest earlier record of
        // the branch is the best guess.
        let cut: String = text
            .lines()
            .filter(|l| !l.contains("progress"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(run(&cut, |_| {}).contains(r#""uuid":"2","parentUuid":"x""#));
    }

    #[test]
    fn empty_message_is_removed_and_summary_without_boundary_is_a_root() {
        let text = concat!(
            r#"{"type":"user","uuid":"s","parentUuid":"gone","isCompactSummary":true,"message":{"role":"user","content":"summary"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"2","parentUuid":"s","message":{"id":"m","role":"assistant","content":[]}}"#,
            "\n",
            r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":"next"}}"#,
            "\n",
        );
        let out = run(text, |_| {});
        assert!(out.contains(r#""uuid":"s","parentUuid":null"#), "{out}");
        assert!(!out.contains(r#""uuid":"2""#), "{out}");
        assert!(out.contains(r#""uuid":"3","parentUuid":"s""#), "{out}");
    }

    #[test]
    fn compact_segment_shrinks_to_survivors() {
        let text = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"a"}]}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"3","parentUuid":"2","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"b"}]}}"#,
            "\n",
            r#"{"type":"system","subtype":"compact_boundary","uuid":"c","parentUuid":null,"logicalParentUuid":"3","compactMetadata":{"trigger":"manual","preservedSegment":{"headUuid":"2","anchorUuid":"s","tailUuid":"3"},"preservedMessages":{"anchorUuid":"s","uuids":["2","3"],"allUuids":["2","3"]}}}"#,
            "\n",
            r#"{"type":"user","uuid":"s","parentUuid":"c","isCompactSummary":true,"message":{"role":"user","content":"summary"}}"#,
            "\n",
        );
        let out = run(text, |s| {
            s.records.remove(2);
        });
        let b: Value = serde_json::from_str(out.lines().nth(2).unwrap()).unwrap();
        assert_eq!(b["logicalParentUuid"], "2");
        assert_eq!(b["compactMetadata"]["preservedSegment"]["tailUuid"], "2");
        assert_eq!(b["compactMetadata"]["preservedSegment"]["headUuid"], "2");
        assert_eq!(
            b["compactMetadata"]["preservedMessages"]["uuids"],
            json!(["2"])
        );
        let out = run(text, |s| {
            s.records.drain(1..3);
        });
        let b: Value = serde_json::from_str(out.lines().nth(1).unwrap()).unwrap();
        assert_eq!(b["logicalParentUuid"], "1");
        assert!(
            b["compactMetadata"].get("preservedSegment").is_none(),
            "{b}"
        );
        assert_eq!(
            b["compactMetadata"]["preservedMessages"]["uuids"],
            json!([])
        );
    }
}
