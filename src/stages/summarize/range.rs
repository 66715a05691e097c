//! Range selection: segments (turn heads and steps), the range a selector picks, a budget's
//! range, and the growth over tool pairs.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::error::Result;
use crate::stages::relink::stage_err;
use crate::stages::Cx;
use crate::transcript::budget;
use crate::transcript::session::{Session, Step, Turn};

use super::digest::digest;
use super::options::{Selector, SummarizeRange};
use super::NAME;

/// A run of records an edit takes whole: the head of a turn (its prompt and what precedes
/// its first step) or one step. The segments of a session, in order, cover every record of
/// its turns.
#[derive(Debug, Clone)]
pub(super) struct Segment {
    /// 0-based turn index.
    pub(super) turn: usize,
    /// Step number, `None` for a turn's head.
    pub(super) step: Option<usize>,
    /// Record indexes, in file order.
    pub(super) records: Vec<usize>,
}

pub(super) fn segments(s: &Session<'_>, turns: &[Turn]) -> Vec<Segment> {
    let steps = s.steps(turns);
    let mut by_turn: Vec<Vec<&Step>> = vec![Vec::new(); turns.len()];
    for st in &steps {
        by_turn[st.turn].push(st);
    }
    let mut out = Vec::new();
    for (t, turn) in turns.iter().enumerate() {
        let in_steps: HashSet<usize> = by_turn[t]
            .iter()
            .flat_map(|st| st.records.iter().copied())
            .collect();
        out.push(Segment {
            turn: t,
            step: None,
            records: turn
                .records
                .iter()
                .copied()
                .filter(|i| !in_steps.contains(i))
                .collect(),
        });
        for st in &by_turn[t] {
            out.push(Segment {
                turn: t,
                step: Some(st.number),
                records: st.records.clone(),
            });
        }
    }
    out
}

/// What a range replaces: its records and how to name it.
pub(super) struct Plan {
    pub(super) removed: BTreeSet<usize>,
    /// Turn numbers touched, `N` or `A..B`.
    pub(super) turns: String,
    /// Step numbers covered, when the range holds steps.
    pub(super) steps: Option<String>,
    /// True when the range is whole turns.
    pub(super) whole_turns: bool,
}

fn label(a: usize, b: usize) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}..{b}")
    }
}

pub(super) fn plan(turns: &[Turn], segs: &[Segment], a: usize, b: usize) -> Plan {
    let removed = segs[a..=b]
        .iter()
        .flat_map(|g| g.records.iter().copied())
        .collect();
    let numbers: Vec<usize> = segs[a..=b].iter().filter_map(|g| g.step).collect();
    let whole_turns = segs[a].step.is_none() && segs.get(b + 1).is_none_or(|g| g.step.is_none());
    Plan {
        removed,
        turns: label(turns[segs[a].turn].number, turns[segs[b].turn].number),
        steps: numbers
            .first()
            .zip(numbers.last())
            .map(|(&x, &y)| label(x, y)),
        whole_turns,
    }
}

impl Plan {
    /// The digest's title: what it summarizes.
    pub(super) fn title(&self) -> String {
        let turns = self.turns.replace("..", "–");
        match (&self.steps, self.whole_turns) {
            (Some(st), false) => format!("steps {} (turns {turns})", st.replace("..", "–")),
            _ => format!("turns {turns}"),
        }
    }
}

impl SummarizeRange {
    /// Indexes (into the segments) of the first and last segment to replace; `None` when
    /// there is nothing to replace.
    pub(super) fn segment_range(
        &self,
        s: &Session<'_>,
        turns: &[Turn],
        segs: &[Segment],
        cx: &Cx,
    ) -> Result<Option<(usize, usize)>> {
        let n = turns.len();
        if n == 0 || segs.is_empty() {
            return Ok(None);
        }
        let err = |m: String| stage_err(cx, NAME, 0, m);
        let first_of_turn = |t: usize| segs.iter().position(|g| g.turn == t).expect("turn");
        let last_of_turn = |t: usize| segs.iter().rposition(|g| g.turn == t).expect("turn");
        let seg_of_step = |n: usize| segs.iter().position(|g| g.step == Some(n)).expect("step");
        let m = segs.iter().filter(|g| g.step.is_some()).count();
        match &self.selector {
            Selector::KeepLast(k) => Ok((n > *k).then(|| (0, last_of_turn(n - k - 1)))),
            Selector::Turns(a, b) => {
                let b = b.unwrap_or(n);
                for t in [*a, b] {
                    if t > n {
                        return Err(err(format!(
                            "turn {t} does not exist: the session has {n} turns"
                        )));
                    }
                }
                Ok(Some((first_of_turn(a - 1), last_of_turn(b - 1))))
            }
            Selector::Steps(a, b) => {
                let b = b.unwrap_or(m);
                for st in [*a, b] {
                    if st > m {
                        return Err(err(format!(
                            "step {st} does not exist: the session has {m} steps (see `cchist history list --steps`)"
                        )));
                    }
                }
                Ok(Some((seg_of_step(*a), seg_of_step(b))))
            }
            // The first turn's head (the first prompt) stays.
            Selector::KeepLastSteps(k) => Ok((m > *k).then(|| (1, seg_of_step(m - k)))),
            Selector::Uuids(from, to) => {
                let seg_of = |u: &str| -> Result<usize> {
                    let i = *s
                        .by_uuid
                        .get(u)
                        .ok_or_else(|| err(format!("no record has uuid {u}")))?;
                    segs.iter()
                        .position(|g| g.records.contains(&i))
                        .ok_or_else(|| err(format!("record {u} belongs to no turn")))
                };
                let a = from.as_deref().map(seg_of).transpose()?.unwrap_or(0);
                let b = to
                    .as_deref()
                    .map(seg_of)
                    .transpose()?
                    .unwrap_or(segs.len() - 1);
                if b < a {
                    return Err(err(format!(
                        "`to` (turn {}) comes before `from` (turn {})",
                        turns[segs[b].turn].number, turns[segs[a].turn].number
                    )));
                }
                Ok(Some((a, b)))
            }
            Selector::Fit(_) => unreachable!("fit picks its range in fit_range"),
        }
    }

    /// The shortest range of oldest segments after the first turn's head whose replacement
    /// by the summary brings the resume estimate under `budget`; the whole rest when nothing
    /// shorter does; `None` when the session already fits.
    pub(super) fn fit_range(
        &self,
        s: &mut Session<'_>,
        turns: &[Turn],
        segs: &[Segment],
        budget: u64,
        cx: &mut Cx,
    ) -> Result<Option<(usize, usize)>> {
        let (reserve, target) = self.fit_target(budget);
        cx.count("summarize-range.fit.reserve_tokens", reserve);
        let on_path: HashSet<usize> = budget::resume_path(s).into_iter().collect();
        let cost: Vec<u64> = segs
            .iter()
            .map(|g| {
                g.records
                    .iter()
                    .filter(|i| on_path.contains(i))
                    .map(|&i| budget::record_tokens(s, i))
                    .sum()
            })
            .collect();
        let total: u64 = cost.iter().sum();
        cx.count("summarize-range.fit.budget_tokens", budget);
        cx.count("summarize-range.fit.before_tokens", total);
        // From here on the budget is what the session's records may take.
        let budget = target;
        if total <= budget || segs.len() < 2 {
            cx.count("summarize-range.fit.after_tokens", total);
            if total > budget {
                cx.count("summarize-range.fit.over_budget", 1);
            }
            return Ok(None);
        }
        // removed[j]: tokens taken away by replacing segments 1..=j.
        let mut removed = vec![0u64; segs.len()];
        for j in 1..segs.len() {
            removed[j] = removed[j - 1] + cost[j];
        }
        let last = segs.len() - 1;
        // Without the summary's own size: no shorter range can fit.
        let lower = (1..=last)
            .find(|&j| total - removed[j] <= budget)
            .unwrap_or(last);
        let estimate = |s: &mut Session<'_>, j: usize| -> u64 {
            let (a, b) = grow_over_tool_pairs(s, segs, 1, j);
            let taken: u64 = cost[a..=b].iter().sum();
            let summary = match &self.text {
                Some(t) => budget::text_tokens(t),
                // A command's output is known only once it ran: it runs once, on the range
                // chosen without it, and the result is reported.
                None if self.command.is_some() => 0,
                None => {
                    let p = plan(turns, segs, a, b);
                    budget::text_tokens(&digest(s, &p.removed, &p.title()))
                }
            };
            total - taken + summary
        };
        if estimate(s, last) > budget {
            return Ok(Some((1, last)));
        }
        // The estimate grows with the summary but falls with every segment taken: search the
        // first range that fits, assuming it stays fitting beyond (the digest is bounded).
        let (mut lo, mut hi) = (lower, last);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if estimate(s, mid) <= budget {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(Some((1, lo)))
    }
}

/// Grow the segments `first..=last` until no tool call has its use inside and its result
/// outside (or the reverse).
pub(super) fn grow_over_tool_pairs(
    s: &Session<'_>,
    segs: &[Segment],
    mut first: usize,
    mut last: usize,
) -> (usize, usize) {
    let mut seg_of: HashMap<usize, usize> = HashMap::new();
    for (g, seg) in segs.iter().enumerate() {
        for &i in &seg.records {
            seg_of.insert(i, g);
        }
    }
    loop {
        let inside = |i: usize| seg_of.get(&i).is_some_and(|&g| g >= first && g <= last);
        let mut grow: Option<usize> = None;
        for (id, &u) in &s.tool_uses {
            let results = s.tool_results.get(id).map(Vec::as_slice).unwrap_or(&[]);
            let mut members = results.to_vec();
            members.push(u);
            if members.iter().any(|&i| inside(i)) {
                for &i in &members {
                    if !inside(i) {
                        if let Some(&g) = seg_of.get(&i) {
                            grow = Some(g);
                        }
                    }
                }
            }
            if grow.is_some() {
                break;
            }
        }
        match grow {
            Some(g) => {
                first = first.min(g);
                last = last.max(g);
            }
            None => return (first, last),
        }
    }
}
