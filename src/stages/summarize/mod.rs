//! `summarize-range`: replace a range of turns or steps with one summary.
//!
//! The range is made of *segments*: each turn's head (its prompt and what precedes its first
//! step) and each step (`Step`: one assistant message with the results answering it). It is
//! chosen by turn numbers (`turns = "3..10"`, 1-based and inclusive, as `history list` numbers
//! them), `keep_last = N` (every turn before the last N), step numbers (`steps = "12..140"`,
//! as `history list --steps` numbers them; a range may cross turns and takes the heads in
//! between), `keep_last_steps = N` (every step before the last N; the first prompt stays),
//! uuids (`from`/`to`: the segments holding them), or a token budget (`fit`: the oldest steps
//! after the first prompt until the resume estimate of [`budget`] is under it). It grows to
//! the segment holding the other half of any tool call it would cut; a step never splits a
//! split assistant message.
//!
//! A budget aims the estimate at `fit` less a reserve for what Claude Code adds on resume
//! (`fit_reserve`, default [`budget::default_reserve`]).
//!
//! Every record of the range is removed and ONE `user` record with string content takes the
//! place of the first one: the text given (`text`), the standard output of a command fed the
//! range as JSONL on its standard input (`command`, with a timeout; a failure, a non-zero exit
//! or empty output is an error and the file is left untouched), or else a deterministic digest
//! ([`digest_body`]: prompts, files read, files written with their last state, commands with
//! their exit status, errors and whether they were resolved later, the plan of the last todo
//! list, the final answer). A command may answer a JSON object `{"summary": "...", "keep":
//! ["uuid", ...]}` instead of text (bare, after a byte-order mark or a line of prose, or in a
//! markdown code fence; one that names `"summary"` but does not parse is an error): the records it names (uuids of the range, else an error)
//! stay verbatim with their whole step, so a tool call keeps its result; they are listed as
//! `keptUuids`, and a reference into a removed record after them goes to the nearest kept
//! record before it, so they stay on the resumed chain. The summary record
//! gets a fresh v4 uuid, the envelope of the range's first message (`sessionId`, `cwd`,
//! `version`, `gitBranch`, …), `isSidechain: false`, `userType: "external"`, the timestamp of
//! the range's last record, a `parentUuid` into the kept chain, and
//! `cchistSummary {turns, steps, records, source, removedUuids}` naming what it replaced.
//! Every reference into the range is re-pointed at it (tombstones + [`relink`]).

mod command;
mod digest;
mod options;
mod range;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashSet};

use serde_json::{json, Value};

use crate::error::{OptionError, Result};
use crate::stages::relink::{derived_uuid, envelope, relink, stage_err};
use crate::stages::{options as read_options, Cx, Scope, Stage, StageDef};
use crate::transcript::budget;
use crate::transcript::record::Record;
use crate::transcript::session::is_conversational;
use crate::transcript::session::Session;

pub use digest::{digest, digest_body};
use options::Selector;
pub use options::{
    parse_steps, parse_turns, SummarizeOptions, SummarizeRange, DEFAULT_TIMEOUT_SECS,
    MAX_COMMAND_OUTPUT,
};
use range::{grow_over_tool_pairs, plan, segments};

const NAME: &str = "summarize-range";

/// The stage's entry in the registry.
pub const DEF: StageDef = StageDef {
    name: "summarize-range",
    about: "replace a range of turns or steps with one summary (text, command or digest); by turns, steps or a token budget",
    build,
};

fn build(table: toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError> {
    let opts: SummarizeOptions = read_options(table)?;
    Ok(Box::new(SummarizeRange::new(opts)?))
}

impl Stage for SummarizeRange {
    /// It removes records (a range it replaces, turns an edit deletes): a secret they showed
    /// must be known before they go, so that a restatement of it in what replaces them is
    /// replaced too.
    fn cuts_text(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        DEF.name
    }

    fn scope(&self) -> Scope {
        Scope::Session
    }

    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
        let turns = s.turns();
        let segs = segments(s, &turns);
        let range = match self.selector {
            Selector::Fit(budget) => self.fit_range(s, &turns, &segs, budget, cx)?,
            _ => self.segment_range(s, &turns, &segs, cx)?,
        };
        let Some((first, last)) = range else {
            cx.count("summarize-range.skipped", 1);
            return Ok(());
        };
        let (first, last) = grow_over_tool_pairs(s, &segs, first, last);
        let plan = plan(&turns, &segs, first, last);
        let (text, source, kept) = match (&self.text, &self.command) {
            (Some(t), _) => (t.clone(), "text", BTreeSet::new()),
            (None, Some(cmd)) => {
                let out = self.run_command(s, &plan.removed, cmd, cx)?;
                let (text, keep) = command::parse_reply(&out)
                    .map_err(|m| stage_err(cx, NAME, 0, format!("summary command `{cmd}`: {m}")))?;
                let kept = command::kept_records(s, &segs[first..=last], &keep)
                    .map_err(|m| stage_err(cx, NAME, 0, format!("summary command `{cmd}`: {m}")))?;
                (text, "command", kept)
            }
            (None, None) => (
                digest(s, &plan.removed, &plan.title()),
                "digest",
                BTreeSet::new(),
            ),
        };
        let removed: &BTreeSet<usize> = &plan.removed.difference(&kept).copied().collect();
        if removed.is_empty() {
            return Err(stage_err(
                cx,
                NAME,
                0,
                "the summary command kept every record of the range: nothing is left to summarize; keep fewer steps".into(),
            ));
        }
        let kept_uuids: Vec<String> = kept
            .iter()
            .filter_map(|&i| s.header(i).and_then(|h| h.uuid().map(str::to_string)))
            .collect();
        let removed_uuids: Vec<String> = removed
            .iter()
            .filter_map(|&i| s.header(i).and_then(|h| h.uuid().map(str::to_string)))
            .collect();
        // The record whose envelope the summary takes and whose parent it hangs from (skipping
        // the range): the range's first message.
        let prompt = removed
            .iter()
            .copied()
            .find(|&i| {
                s.header(i)
                    .is_some_and(|h| !h.is_sidechain && is_conversational(h) && h.uuid().is_some())
            })
            .unwrap_or(*removed.first().expect("a segment has records"));
        let in_range: HashSet<&str> = removed_uuids.iter().map(String::as_str).collect();
        let mut parent = s
            .header(prompt)
            .and_then(|h| h.parent_uuid().map(str::to_string));
        let mut guard = 0;
        while let Some(p) = parent.clone().filter(|p| in_range.contains(p.as_str())) {
            guard += 1;
            parent = s
                .by_uuid
                .get(&p)
                .and_then(|&i| s.header(i))
                .and_then(|h| h.parent_uuid().map(str::to_string))
                .filter(|_| guard <= removed.len());
        }
        let timestamp = removed
            .iter()
            .rev()
            .find_map(|&i| s.header(i).and_then(|h| h.timestamp().map(str::to_string)))
            .unwrap_or_else(crate::io::clock::now);
        let line = s.records[prompt].line;
        let template = s.records[prompt]
            .value()
            .map_err(|e| stage_err(cx, NAME, line, e))?
            .clone();
        // Named by the records it stands for: the same range summarized twice is the same record.
        let mut seed: Vec<&str> = vec!["summary"];
        seed.extend(removed_uuids.iter().map(String::as_str));
        let uuid = derived_uuid(&seed);
        let mut m = envelope(Some(&template), parent.as_deref());
        m.insert("isSidechain".into(), Value::Bool(false));
        m.insert("type".into(), Value::from("user"));
        m.insert("message".into(), json!({"role": "user", "content": text}));
        m.insert("uuid".into(), Value::from(uuid.clone()));
        m.insert("timestamp".into(), Value::from(timestamp));
        m.insert(
            "cchistSummary".into(),
            json!({
                "turns": plan.turns,
                "records": removed.len(),
                "source": source,
                "removedUuids": removed_uuids,
            }),
        );
        if let (Some(steps), Some(Value::Object(m))) = (&plan.steps, m.get_mut("cchistSummary")) {
            m.insert("steps".into(), Value::from(steps.clone()));
        }
        if let (false, Some(Value::Object(m))) = (kept_uuids.is_empty(), m.get_mut("cchistSummary"))
        {
            m.insert("keptUuids".into(), Value::from(kept_uuids.clone()));
        }
        // A reference to a removed record goes to the summary, or to the kept record nearest
        // before it (a kept step stays on the chain between the summary and what follows).
        let mut current: Option<String> = None;
        for &i in &plan.removed {
            let Some(h) = s.header(i) else { continue };
            let u = h.uuid().map(str::to_string);
            if kept.contains(&i) {
                if current.is_some() && !h.is_sidechain && is_conversational(h) {
                    current = u.or(current);
                }
            } else {
                let to = current.get_or_insert_with(|| uuid.clone()).clone();
                if let Some(u) = u {
                    s.tombstone(&u, Some(&to));
                }
            }
        }
        cx.count("summarize-range.kept_records", kept.len() as u64);
        let at = *removed.first().expect("a turn has records");
        let old = std::mem::take(&mut s.records);
        let mut summary = Some(Record::from_value(Value::Object(m)));
        for (i, r) in old.into_iter().enumerate() {
            if i == at {
                s.records.extend(summary.take());
            }
            if !removed.contains(&i) {
                s.records.push(r);
            }
        }
        let touched: BTreeSet<usize> = segs[first..=last].iter().map(|g| g.turn).collect();
        cx.count("summarize-range.turns_touched", touched.len() as u64);
        cx.count(
            "summarize-range.steps_summarized",
            segs[first..=last]
                .iter()
                .filter(|g| g.step.is_some())
                .count() as u64,
        );
        relink(s, cx)?;
        if let Selector::Fit(budget) = self.selector {
            let after = budget::resume_tokens(s);
            cx.count("summarize-range.fit.after_tokens", after);
            if after > self.fit_target(budget).1 {
                cx.count("summarize-range.fit.over_budget", 1);
            }
        }
        Ok(())
    }
}
