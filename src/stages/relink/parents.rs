//! Steps 1–3 of relink: dangling parents re-pointed (tombstones, else the nearest earlier
//! record of the branch), cycles broken, split assistant messages joined.

use super::*;

/// The record a record with a broken parent link should hang from: the previous piece of its
/// assistant message, else the previous chain record of the same branch, in file order; never
/// one of its own descendants.
///
/// `i` is a root or a cycle member (its broken link is what is being repaired), so "`j`
/// descends from `i`" is "walking up from `j` ends where walking up from `i` ends", which
/// [`Ancestry`] answers without a walk; candidates come from per-branch lists in file order
/// instead of a scan back through the file.
pub(super) fn repair_parent(
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
        if let Some(mid) = h.message_id() {
            let pieces = ix
                .pieces
                .get(&(mid.to_string(), branch.clone()))
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
        if hj.uuid() != h.uuid() && anc.find(j) != end {
            return hj.uuid().map(str::to_string);
        }
    }
    None
}

/// A record's branch: `isSidechain` and `agentId`.
pub(super) type Branch = (bool, Option<String>);

/// The records [`repair_parent`] may pick, in file order: every record with a uuid by branch,
/// and every assistant piece with a uuid by message id and branch. Relink's parent repairs
/// change only `parentUuid`, so these stay right while they run.
pub(super) struct Candidates {
    by_branch: FastMap<Branch, Vec<usize>>,
    pieces: FastMap<(String, Branch), Vec<usize>>,
}

impl Candidates {
    fn new(s: &Session<'_>) -> Self {
        let mut by_branch: FastMap<Branch, Vec<usize>> = FastMap::default();
        let mut pieces: FastMap<(String, Branch), Vec<usize>> = FastMap::default();
        for i in 0..s.records.len() {
            let Some(h) = s.header(i) else { continue };
            if h.uuid().is_none() {
                continue;
            }
            let branch = (h.is_sidechain, h.agent_id().map(str::to_string));
            if h.kind == Kind::Assistant {
                if let Some(mid) = h.message_id() {
                    pieces
                        .entry((mid.to_string(), branch.clone()))
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
pub(super) struct Ancestry {
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

pub(super) fn fix_parents(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
    fix_parents_with(s, cx, st, false)
}

/// Re-point parents that name no record; `touched_only`: only those a tombstone explains
/// (records removed in this run), leaving damage that was already there.
pub(super) fn fix_parents_with(
    s: &mut Session<'_>,
    cx: &Cx,
    st: &mut Stats,
    touched_only: bool,
) -> Result<()> {
    let mut anc: Option<Ancestry> = None;
    let mut ix: Option<Candidates> = None;
    let mut tombstones = Resolver::default();
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        let Some(p) = h.parent_uuid().map(str::to_string) else {
            continue;
        };
        if s.by_uuid.contains_key(&p) {
            continue;
        }
        let own = h.uuid().map(str::to_string);
        let compact_summary = h.is_compact_summary;
        let resolution = tombstones.resolve(s, &p);
        if touched_only && resolution == Resolution::Unknown {
            continue;
        }
        let new = match resolution {
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
pub(super) fn break_cycles(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
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
pub(super) fn break_cycles_by_listing(
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

pub(super) fn join_split_messages(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
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
pub(super) fn join_pass(s: &mut Session<'_>, cx: &Cx, st: &mut Stats) -> Result<()> {
    // Last uuid-bearing piece seen so far, per (message, branch).
    let mut last: HashMap<(String, Branch), usize> = HashMap::new();
    // (later piece, earlier piece, the later piece's parent before the join).
    let mut joined: Vec<(usize, usize, Option<String>)> = Vec::new();
    for i in 0..s.records.len() {
        let Some(h) = s.header(i) else { continue };
        if h.kind != Kind::Assistant {
            continue;
        }
        let Some(mid) = h.message_id().map(str::to_string) else {
            continue;
        };
        let has_uuid = h.uuid().is_some();
        let above = h.parent_uuid().map(str::to_string);
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
