//! `summarize-range`: replace a range of turns or steps with one summary.
//!
//! The range is made of *segments*: each turn's head (its prompt and what precedes its first
//! step) and each step ([`Step`]: one assistant message with the results answering it). It is
//! chosen by turn numbers (`turns = "3..10"`, 1-based and inclusive, as `history list` numbers
//! them), `keep_last = N` (every turn before the last N), step numbers (`steps = "12..140"`,
//! as `history list --steps` numbers them; a range may cross turns and takes the heads in
//! between), `keep_last_steps = N` (every step before the last N; the first prompt stays),
//! uuids (`from`/`to`: the segments holding them), or a token budget (`fit`: the oldest steps
//! after the first prompt until the resume estimate of [`budget`] is under it). It grows to
//! the segment holding the other half of any tool call it would cut; a step never splits a
//! split assistant message.
//!
//! Every record of the range is removed and ONE `user` record with string content takes the
//! place of the first one: the text given (`text`), the standard output of a command fed the
//! range as JSONL on its standard input (`command`, with a timeout; a failure, a non-zero exit
//! or empty output is an error and the file is left untouched), or else a deterministic digest
//! (prompts, files read and written, commands run, errors, final answer). The summary record
//! gets a fresh v4 uuid, the envelope of the range's first message (`sessionId`, `cwd`,
//! `version`, `gitBranch`, …), `isSidechain: false`, `userType: "external"`, the timestamp of
//! the range's last record, a `parentUuid` into the kept chain, and
//! `cchistSummary {turns, steps, records, source, removedUuids}` naming what it replaced.
//! Every reference into the range is re-pointed at it (tombstones + [`relink`]).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{OptionError, Result};
use crate::stages::relink::{envelope, new_uuid, relink, stage_err};
use crate::stages::{options, Cx, Scope, Stage, StageDef};
use crate::transcript::budget;
use crate::transcript::record::Record;
use crate::transcript::session::{is_conversational, is_prompt, Session, Step, Turn};
use crate::transcript::turns::{message_text, shorten};

const NAME: &str = "summarize-range";

/// Options of `summarize-range`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SummarizeOptions {
    /// First record of the range (its whole turn is taken).
    #[serde(default)]
    pub from: Option<String>,
    /// Last record of the range (its whole turn is taken).
    #[serde(default)]
    pub to: Option<String>,
    /// Turn numbers, `A..B` (inclusive), `A..`, `..B` or `N`.
    #[serde(default)]
    pub turns: Option<String>,
    /// Summarize everything before the last N turns.
    #[serde(default)]
    pub keep_last: Option<usize>,
    /// Step numbers, `A..B` (inclusive), `A..`, `..B` or `N`, numbered across the session as
    /// `history list --steps` numbers them.
    #[serde(default)]
    pub steps: Option<String>,
    /// Summarize every step before the last N (the first prompt stays).
    #[serde(default)]
    pub keep_last_steps: Option<usize>,
    /// A token budget: summarize the oldest steps (the first prompt stays) until the
    /// conversation rebuilt on resume is estimated under it ([`crate::transcript::budget`]).
    #[serde(default)]
    pub fit: Option<u64>,
    /// The summary text.
    #[serde(default)]
    pub text: Option<String>,
    /// A shell command (`sh -c`) reading the range as JSONL and printing the summary.
    #[serde(default)]
    pub command: Option<String>,
    /// Seconds the command may run (default 120).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

/// Most bytes a summary command may print (on stdout, and on stderr): past it the command is
/// ended and the stage fails, rather than reading without bound until the timeout.
pub const MAX_COMMAND_OUTPUT: usize = 1 << 20;

/// Default `timeout_secs` of a summary command.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;

/// Which part of the session, before snapping to whole steps and growing over tool pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    Uuids(Option<String>, Option<String>),
    Turns(usize, Option<usize>),
    KeepLast(usize),
    Steps(usize, Option<usize>),
    KeepLastSteps(usize),
    Fit(u64),
}

/// The `summarize-range` stage.
pub struct SummarizeRange {
    selector: Selector,
    text: Option<String>,
    command: Option<String>,
    timeout: Duration,
}

/// Parse turn numbers in the one grammar of [`crate::transcript::turns::parse_range`]
/// (`3`, `3-7`, `3..7`, `3..`, `..7`, a list that joins up).
pub fn parse_turns(spec: &str) -> std::result::Result<(usize, Option<usize>), OptionError> {
    crate::transcript::turns::parse_range(spec, "turn").map_err(|e| OptionError::key("turns", e.0))
}

/// Parse step numbers in the same grammar as [`parse_turns`].
pub fn parse_steps(spec: &str) -> std::result::Result<(usize, Option<usize>), OptionError> {
    crate::transcript::turns::parse_range(spec, "step").map_err(|e| OptionError::key("steps", e.0))
}

impl SummarizeRange {
    /// Build the stage, validating the options.
    pub fn new(o: SummarizeOptions) -> std::result::Result<Self, OptionError> {
        let by_uuid = o.from.is_some() || o.to.is_some();
        let chosen = [
            by_uuid,
            o.turns.is_some(),
            o.keep_last.is_some(),
            o.steps.is_some(),
            o.keep_last_steps.is_some(),
            o.fit.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count();
        if chosen != 1 {
            return Err(OptionError::general(
                "choose the range with exactly one of `from`/`to`, `turns`, `keep_last`, `steps`, `keep_last_steps` or `fit`",
            ));
        }
        let selector = if by_uuid {
            Selector::Uuids(o.from, o.to)
        } else if let Some(t) = &o.turns {
            let (a, b) = parse_turns(t)?;
            Selector::Turns(a, b)
        } else if let Some(t) = &o.steps {
            let (a, b) = parse_steps(t)?;
            Selector::Steps(a, b)
        } else if let Some(k) = o.keep_last_steps {
            Selector::KeepLastSteps(k)
        } else if let Some(f) = o.fit {
            if f == 0 {
                return Err(OptionError::key(
                    "fit",
                    "the budget must be at least 1 token",
                ));
            }
            Selector::Fit(f)
        } else {
            Selector::KeepLast(o.keep_last.unwrap_or(0))
        };
        if o.text.is_some() && o.command.is_some() {
            return Err(OptionError::key(
                "command",
                "give either `text` or `command`, not both",
            ));
        }
        if o.text.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(OptionError::key("text", "the summary text is empty"));
        }
        if o.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
            return Err(OptionError::key("command", "the command is empty"));
        }
        if o.timeout_secs == Some(0) {
            return Err(OptionError::key("timeout_secs", "must be at least 1"));
        }
        Ok(SummarizeRange {
            selector,
            text: o.text,
            command: o.command,
            timeout: Duration::from_secs(o.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)),
        })
    }
}

/// A run of records an edit takes whole: the head of a turn (its prompt and what precedes
/// its first step) or one step. The segments of a session, in order, cover every record of
/// its turns.
#[derive(Debug, Clone)]
struct Segment {
    /// 0-based turn index.
    turn: usize,
    /// Step number, `None` for a turn's head.
    step: Option<usize>,
    /// Record indexes, in file order.
    records: Vec<usize>,
}

fn segments(s: &Session<'_>, turns: &[Turn]) -> Vec<Segment> {
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
struct Plan {
    removed: BTreeSet<usize>,
    /// Turn numbers touched, `N` or `A..B`.
    turns: String,
    /// Step numbers covered, when the range holds steps.
    steps: Option<String>,
    /// True when the range is whole turns.
    whole_turns: bool,
}

fn label(a: usize, b: usize) -> String {
    if a == b {
        a.to_string()
    } else {
        format!("{a}..{b}")
    }
}

fn plan(turns: &[Turn], segs: &[Segment], a: usize, b: usize) -> Plan {
    let removed = segs[a..=b]
        .iter()
        .flat_map(|g| g.records.iter().copied())
        .collect();
    let numbers: Vec<usize> = segs[a..=b].iter().filter_map(|g| g.step).collect();
    let whole_turns = segs[a].step.is_none() && !segs.get(b + 1).is_some_and(|g| g.step.is_some());
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
    fn title(&self) -> String {
        let turns = self.turns.replace("..", "–");
        match (&self.steps, self.whole_turns) {
            (Some(st), false) => format!("steps {} (turns {turns})", st.replace("..", "–")),
            _ => format!("turns {turns}"),
        }
    }
}

/// The stage's entry in the registry.
pub const DEF: StageDef = StageDef {
    name: "summarize-range",
    about: "replace a range of turns or steps with one summary (text, command or digest); by turns, steps or a token budget",
    build,
};

fn build(table: toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError> {
    let opts: SummarizeOptions = options(table)?;
    Ok(Box::new(SummarizeRange::new(opts)?))
}

impl Stage for SummarizeRange {
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
        let removed = &plan.removed;
        let (text, source) = match (&self.text, &self.command) {
            (Some(t), _) => (t.clone(), "text"),
            (None, Some(cmd)) => (self.run_command(s, removed, cmd, cx)?, "command"),
            (None, None) => (digest(s, removed, &plan.title()), "digest"),
        };
        let removed_uuids: Vec<String> = removed
            .iter()
            .filter_map(|&i| s.header(i).and_then(|h| h.uuid.clone()))
            .collect();
        // The record whose envelope the summary takes and whose parent it hangs from (skipping
        // the range): the range's first message.
        let prompt = removed
            .iter()
            .copied()
            .find(|&i| {
                s.header(i)
                    .is_some_and(|h| !h.is_sidechain && is_conversational(h) && h.uuid.is_some())
            })
            .unwrap_or(*removed.first().expect("a segment has records"));
        let in_range: HashSet<&str> = removed_uuids.iter().map(String::as_str).collect();
        let mut parent = s.header(prompt).and_then(|h| h.parent_uuid.clone());
        let mut guard = 0;
        while let Some(p) = parent.clone().filter(|p| in_range.contains(p.as_str())) {
            guard += 1;
            parent = s
                .by_uuid
                .get(&p)
                .and_then(|&i| s.header(i))
                .and_then(|h| h.parent_uuid.clone())
                .filter(|_| guard <= removed.len());
        }
        let timestamp = removed
            .iter()
            .rev()
            .find_map(|&i| s.header(i).and_then(|h| h.timestamp.clone()))
            .unwrap_or_else(crate::io::clock::now);
        let line = s.records[prompt].line;
        let template = s.records[prompt]
            .value()
            .map_err(|e| stage_err(cx, NAME, line, e))?
            .clone();
        let uuid = new_uuid();
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
        for u in &removed_uuids {
            s.tombstone(u, Some(&uuid));
        }
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
            if after > budget {
                cx.count("summarize-range.fit.over_budget", 1);
            }
        }
        Ok(())
    }
}

impl SummarizeRange {
    /// Indexes (into the segments) of the first and last segment to replace; `None` when
    /// there is nothing to replace.
    fn segment_range(
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
    fn fit_range(
        &self,
        s: &mut Session<'_>,
        turns: &[Turn],
        segs: &[Segment],
        budget: u64,
        cx: &mut Cx,
    ) -> Result<Option<(usize, usize)>> {
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

    /// Run the summary command on the range; its trimmed standard output.
    fn run_command(
        &self,
        s: &Session<'_>,
        removed: &BTreeSet<usize>,
        cmd: &str,
        cx: &Cx,
    ) -> Result<String> {
        let err = |m: String| stage_err(cx, NAME, 0, format!("summary command `{cmd}`: {m}"));
        let mut input = Vec::new();
        for &i in removed {
            s.records[i].write_to(&mut input);
        }
        let mut child = {
            use std::os::unix::process::CommandExt;
            Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .map_err(|e| err(format!("cannot start: {e}")))?
        };
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        // The threads are never joined: a process the command left behind may hold a pipe
        // open for good, and the run must not wait for it (see below).
        std::thread::spawn(move || {
            // A command that does not read all its input is fine.
            let _ = stdin.write_all(&input);
        });
        let too_much = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        for (which, pipe) in [
            (0u8, Box::new(stdout) as Box<dyn Read + Send>),
            (1, Box::new(stderr)),
        ] {
            let (tx, too_much) = (tx.clone(), too_much.clone());
            std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = pipe.take(MAX_COMMAND_OUTPUT as u64 + 1).read_to_end(&mut b);
                if b.len() > MAX_COMMAND_OUTPUT {
                    too_much.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let _ = tx.send((which, b));
            });
        }
        drop(tx);
        let pgid = child.id() as i32;
        // SAFETY: signals only the process group created for this child.
        let kill_group = || unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        };
        let start = Instant::now();
        let status = loop {
            if too_much.load(std::sync::atomic::Ordering::Relaxed) {
                kill_group();
                let _ = child.wait();
                return Err(err(format!(
                    "printed more than {} MiB; a summary is a few paragraphs",
                    MAX_COMMAND_OUTPUT >> 20
                )));
            }
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if start.elapsed() > self.timeout => {
                    kill_group();
                    let _ = child.wait();
                    return Err(err(format!(
                        "timed out after {} s (set timeout_secs / --timeout)",
                        self.timeout.as_secs()
                    )));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(err(format!("wait: {e}"))),
            }
        };
        // Whatever the command started in the background would keep its pipes open: end it.
        kill_group();
        let (mut out, mut errs) = (None, None);
        while out.is_none() || errs.is_none() {
            let left = self
                .timeout
                .saturating_sub(start.elapsed())
                .max(Duration::from_secs(1));
            match rx.recv_timeout(left) {
                Ok((0, b)) => out = Some(b),
                Ok((_, b)) => errs = Some(b),
                Err(_) => {
                    return Err(err(
                        "exited, but a process it started (outside its process group) still holds its output open; run that in the foreground or close its output".into(),
                    ))
                }
            }
        }
        if too_much.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(err(format!(
                "printed more than {} MiB; a summary is a few paragraphs",
                MAX_COMMAND_OUTPUT >> 20
            )));
        }
        let (out, errs) = (out.unwrap_or_default(), errs.unwrap_or_default());
        if !status.success() {
            let tail = String::from_utf8_lossy(&errs);
            let tail = tail.trim();
            let tail: String = tail
                .chars()
                .rev()
                .take(500)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(err(format!(
                "{status}{}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            )));
        }
        let text = String::from_utf8(out).map_err(|_| err("output is not UTF-8".into()))?;
        let text = text.trim();
        if text.is_empty() {
            return Err(err("printed no summary (empty output)".into()));
        }
        Ok(text.to_string())
    }
}

/// Grow the segments `first..=last` until no tool call has its use inside and its result
/// outside (or the reverse).
fn grow_over_tool_pairs(
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

/// A deterministic digest of the removed records: prompts, files, commands, errors, answer.
pub fn digest(s: &mut Session<'_>, removed: &BTreeSet<usize>, title: &str) -> String {
    format!(
        "Summary of {} (replaced by cchist; {} records removed).\n{}",
        title,
        removed.len(),
        digest_body(s, removed)
    )
}

/// The facts of some records, as lists: prompts, files read and written, commands run,
/// errors, open todos (from the last todo list), and the final answer. Deterministic.
pub fn digest_body(s: &mut Session<'_>, removed: &BTreeSet<usize>) -> String {
    let mut prompts = Vec::new();
    let mut read = Vec::new();
    let mut written = Vec::new();
    let mut commands = Vec::new();
    let mut errors = Vec::new();
    let mut answer = String::new();
    let mut todos: Vec<String> = Vec::new();
    let mut tool_names: HashMap<String, String> = HashMap::new();
    // Each list keeps first occurrences in order; the set beside it makes the check O(1)
    // (a scan of the list made a digest of many distinct prompts quadratic).
    let mut seen: [HashSet<String>; 5] = Default::default();
    let mut push = |list: usize, v: &mut Vec<String>, x: String| {
        if !x.is_empty() && seen[list].insert(x.clone()) {
            v.push(x);
        }
    };
    for &i in removed {
        let Some(h) = s.header(i) else { continue };
        if h.is_sidechain || !matches!(h.ty.as_str(), "user" | "assistant") {
            continue;
        }
        let prompt = is_prompt(h);
        let ty = h.ty.clone();
        let Ok(v) = s.records[i].value() else {
            continue;
        };
        if prompt {
            push(0, &mut prompts, shorten(&message_text(v), 200));
            continue;
        }
        let blocks = v
            .pointer("/message/content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let name = b["name"].as_str().unwrap_or("").to_string();
                    if let Some(id) = b["id"].as_str() {
                        tool_names.insert(id.to_string(), name.clone());
                    }
                    let input = &b["input"];
                    let path = input["file_path"]
                        .as_str()
                        .or_else(|| input["notebook_path"].as_str())
                        .or_else(|| input["path"].as_str())
                        .unwrap_or("")
                        .to_string();
                    match name.as_str() {
                        "Read" => push(1, &mut read, path),
                        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
                            push(2, &mut written, path)
                        }
                        "Bash" => push(
                            3,
                            &mut commands,
                            shorten(input["command"].as_str().unwrap_or(""), 200),
                        ),
                        "TodoWrite" => {
                            todos = input["todos"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter(|t| t["status"] != "completed")
                                .filter_map(|t| t["content"].as_str())
                                .map(|t| shorten(t, 200))
                                .collect();
                        }
                        _ => {}
                    }
                }
                Some("tool_result") if b["is_error"] == true => {
                    let name = b["tool_use_id"]
                        .as_str()
                        .and_then(|id| tool_names.get(id))
                        .cloned()
                        .unwrap_or_else(|| "tool".into());
                    let text = match &b["content"] {
                        Value::String(t) => t.clone(),
                        Value::Array(items) => items
                            .iter()
                            .filter_map(|x| x["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                        _ => String::new(),
                    };
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    push(4, &mut errors, format!("{name}: {}", shorten(first, 200)));
                }
                Some("text") if ty == "assistant" => {
                    if let Some(t) = b["text"].as_str().filter(|t| !t.trim().is_empty()) {
                        answer = t.to_string();
                    }
                }
                _ => {}
            }
        }
    }
    let mut out = String::new();
    let list = |out: &mut String, title: &str, items: &[String], max: usize| {
        if items.is_empty() {
            return;
        }
        out.push_str(&format!("\n{title}:\n"));
        for it in items.iter().take(max) {
            out.push_str(&format!("- {it}\n"));
        }
        if items.len() > max {
            out.push_str(&format!("- … and {} more\n", items.len() - max));
        }
    };
    list(&mut out, "Prompts", &prompts, 50);
    list(&mut out, "Files read", &read, 50);
    list(&mut out, "Files written", &written, 50);
    list(&mut out, "Commands run", &commands, 50);
    list(&mut out, "Errors", &errors, 20);
    list(&mut out, "Open todos", &todos, 50);
    if !answer.is_empty() {
        let cut: String = answer.chars().take(1500).collect();
        out.push_str("\nFinal answer:\n");
        out.push_str(cut.trim_end());
        if cut.len() < answer.len() {
            out.push('…');
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Origin;
    use crate::io::framing::lines;

    fn session_text(turns: usize) -> String {
        let mut t = String::new();
        let mut parent = "null".to_string();
        for n in 1..=turns {
            t += &format!(
                r#"{{"type":"user","uuid":"p{n}","parentUuid":{parent},"sessionId":"s","cwd":"/w","message":{{"role":"user","content":"prompt {n}"}},"timestamp":"2026-01-01T00:00:0{n}.000Z"}}"#
            );
            t += "\n";
            t += &format!(
                r#"{{"type":"assistant","uuid":"a{n}","parentUuid":"p{n}","message":{{"id":"m{n}","role":"assistant","content":[{{"type":"tool_use","id":"t{n}","name":"Bash","input":{{"command":"echo {n}"}}}}]}}}}"#
            );
            t += "\n";
            t += &format!(
                r#"{{"type":"user","uuid":"r{n}","parentUuid":"a{n}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{n}","content":"{n}"}}]}}}}"#
            );
            t += "\n";
            t += &format!(
                r#"{{"type":"assistant","uuid":"f{n}","parentUuid":"r{n}","message":{{"id":"n{n}","role":"assistant","content":[{{"type":"text","text":"answer {n}"}}]}}}}"#
            );
            t += "\n";
            parent = format!("\"f{n}\"");
        }
        t
    }

    fn run(o: SummarizeOptions, text: &str) -> Result<Vec<Value>> {
        let st = SummarizeRange::new(o).unwrap();
        let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        let mut cx = Cx::new(Origin::stdin());
        st.session(&mut s, &mut cx)?;
        let mut out = Vec::new();
        for r in &s.records {
            r.write_to(&mut out);
        }
        let f = crate::findings::validate::validate(&out);
        assert!(f.is_empty(), "{f:?}");
        Ok(String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect())
    }

    #[test]
    fn turns_range_becomes_one_summary_turn() {
        let text = session_text(5);
        let out = run(
            SummarizeOptions {
                turns: Some("2..4".into()),
                text: Some("S".into()),
                ..Default::default()
            },
            &text,
        )
        .unwrap();
        assert_eq!(out.len(), 4 + 1 + 4);
        let sum = &out[4];
        assert_eq!(sum["message"]["content"], "S");
        assert_eq!(sum["parentUuid"], "f1");
        assert_eq!(sum["sessionId"], "s");
        assert_eq!(sum["cwd"], "/w");
        assert_eq!(sum["isSidechain"], false);
        assert_eq!(sum["userType"], "external");
        assert_eq!(sum["timestamp"], "2026-01-01T00:00:04.000Z");
        assert_eq!(sum["cchistSummary"]["turns"], "2..4");
        assert_eq!(
            sum["cchistSummary"]["removedUuids"]
                .as_array()
                .unwrap()
                .len(),
            12
        );
        assert_eq!(out[5]["uuid"], "p5");
        assert_eq!(out[5]["parentUuid"], sum["uuid"]);
    }

    #[test]
    fn keep_last_and_digest() {
        let text = session_text(4);
        let out = run(
            SummarizeOptions {
                keep_last: Some(1),
                ..Default::default()
            },
            &text,
        )
        .unwrap();
        assert_eq!(out.len(), 1 + 4);
        assert_eq!(out[0]["parentUuid"], Value::Null);
        let d = out[0]["message"]["content"].as_str().unwrap();
        assert!(d.starts_with("Summary of turns 1–3"), "{d}");
        assert!(d.contains("- prompt 2\n") && d.contains("- echo 3"), "{d}");
        assert!(d.ends_with("Final answer:\nanswer 3"), "{d}");
        let none = run(
            SummarizeOptions {
                keep_last: Some(9),
                ..Default::default()
            },
            &text,
        )
        .unwrap();
        assert_eq!(none.len(), 16);
    }

    #[test]
    fn uuids_snap_to_steps() {
        let out = run(
            SummarizeOptions {
                from: Some("r2".into()),
                to: Some("a3".into()),
                text: Some("S".into()),
                ..Default::default()
            },
            &session_text(4),
        )
        .unwrap();
        // Steps a2+r2, f2, the head p3 and a3+r3 go; p2 and f3 stay around the summary.
        assert_eq!(out.len(), 16 - 6 + 1);
        let sum = &out[5];
        assert_eq!(out[4]["uuid"], "p2");
        assert_eq!(sum["parentUuid"], "p2");
        assert_eq!(sum["cchistSummary"]["turns"], "2..3");
        assert_eq!(sum["cchistSummary"]["steps"], "3..5");
        assert_eq!(out[6]["uuid"], "f3");
        assert_eq!(out[6]["parentUuid"], sum["uuid"]);
    }

    #[test]
    fn step_ranges_cross_turns_and_keep_the_first_prompt() {
        let out = run(
            SummarizeOptions {
                steps: Some("2..5".into()),
                ..Default::default()
            },
            &session_text(3),
        )
        .unwrap();
        let uuids: Vec<&str> = out.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
        assert_eq!(uuids[..3], ["p1", "a1", "r1"]);
        assert_eq!(uuids[4..], ["f3"]);
        let d = out[3]["message"]["content"].as_str().unwrap();
        assert!(d.starts_with("Summary of steps 2–5 (turns 1–3)"), "{d}");
        assert!(d.contains("- prompt 2\n") && d.contains("- echo 3"), "{d}");

        let out = run(
            SummarizeOptions {
                keep_last_steps: Some(3),
                text: Some("S".into()),
                ..Default::default()
            },
            &session_text(3),
        )
        .unwrap();
        let uuids: Vec<&str> = out.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
        // 6 steps: 1..3 go with the head p2; the first prompt, the summary, steps 4..6 stay.
        assert_eq!(uuids[0], "p1");
        assert_eq!(out[1]["message"]["content"], "S");
        assert_eq!(uuids[2..], ["f2", "p3", "a3", "r3", "f3"]);
        assert_eq!(out[1]["cchistSummary"]["steps"], "1..3");

        let e = run(
            SummarizeOptions {
                steps: Some("4..7".into()),
                ..Default::default()
            },
            &session_text(3),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("step 7 does not exist: the session has 6 steps"),
            "{e}"
        );
    }

    /// A message split in pieces with tool results in between (2.1.x streaming), then a
    /// second message: two steps, never cut between the pieces.
    #[test]
    fn split_messages_are_one_step() {
        let text = [
            r#"{"type":"user","uuid":"p","parentUuid":null,"message":{"role":"user","content":"go"}}"#,
            r#"{"type":"assistant","uuid":"a1","parentUuid":"p","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#,
            r#"{"type":"user","uuid":"r1","parentUuid":"a1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}"#,
            r#"{"type":"assistant","uuid":"a2","parentUuid":"r1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Bash","input":{}}]}}"#,
            r#"{"type":"user","uuid":"r2","parentUuid":"a2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"y"}]}}"#,
            r#"{"type":"assistant","uuid":"b","parentUuid":"r2","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
        ]
        .join("\n")
            + "\n";
        let s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        let steps = s.steps(&s.turns());
        let recs: Vec<Vec<usize>> = steps.iter().map(|st| st.records.clone()).collect();
        assert_eq!(recs, vec![vec![1, 2, 3, 4], vec![5]]);
        let out = run(
            SummarizeOptions {
                keep_last_steps: Some(1),
                text: Some("S".into()),
                ..Default::default()
            },
            &text,
        )
        .unwrap();
        let uuids: Vec<&str> = out.iter().map(|v| v["uuid"].as_str().unwrap()).collect();
        assert_eq!(uuids[0], "p");
        assert_eq!(uuids[2..], ["b"]);
    }

    #[test]
    fn fit_takes_the_fewest_oldest_steps_under_the_budget() {
        let text = session_text(6);
        let mut all = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        let before = budget::resume_tokens(&mut all);
        for b in [before / 2, before * 3 / 4, before - 1] {
            let o = SummarizeOptions {
                fit: Some(b),
                text: Some("S".into()),
                ..Default::default()
            };
            let st = SummarizeRange::new(o.clone()).unwrap();
            let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
            let mut cx = Cx::new(Origin::stdin());
            st.session(&mut s, &mut cx).unwrap();
            let after = budget::resume_tokens(&mut s);
            assert!(after <= b, "budget {b}: {after}");
            assert_eq!(cx.counters["summarize-range.fit.after_tokens"], after);
            assert_eq!(cx.counters["summarize-range.fit.before_tokens"], before);
            // One step fewer would not fit: summarizing the steps before the kept ones less one.
            let n = cx.counters["summarize-range.steps_summarized"] as usize;
            if n > 1 {
                let fewer = SummarizeRange::new(SummarizeOptions {
                    fit: None,
                    steps: Some(format!("1..{}", n - 1)),
                    ..o
                })
                .unwrap();
                let mut s2 =
                    Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
                fewer
                    .session(&mut s2, &mut Cx::new(Origin::stdin()))
                    .unwrap();
                assert!(budget::resume_tokens(&mut s2) > b, "budget {b}");
            }
        }
        let mut cx = Cx::new(Origin::stdin());
        let st = SummarizeRange::new(SummarizeOptions {
            fit: Some(before),
            ..Default::default()
        })
        .unwrap();
        let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
        st.session(&mut s, &mut cx).unwrap();
        assert_eq!(cx.counters["summarize-range.skipped"], 1);
    }

    #[test]
    fn command_output_failure_and_timeout() {
        let text = session_text(3);
        let cmd = |c: &str, t: Option<u64>| SummarizeOptions {
            turns: Some("2".into()),
            command: Some(c.into()),
            timeout_secs: t,
            ..Default::default()
        };
        let out = run(cmd("wc -l | tr -d ' '", None), &text).unwrap();
        assert_eq!(out[4]["message"]["content"], "4");
        assert_eq!(out[4]["cchistSummary"]["source"], "command");
        let e = run(cmd("echo nope >&2; exit 3", None), &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("exit status: 3") && e.contains("nope"), "{e}");
        let e = run(cmd("cat >/dev/null", None), &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("empty output"), "{e}");
        let e = run(cmd("sleep 5", Some(1)), &text).unwrap_err().to_string();
        assert!(e.contains("timed out"), "{e}");
    }

    #[test]
    fn command_output_is_bounded_and_leftover_processes_do_not_hold_the_run() {
        let text = session_text(3);
        let cmd = |c: &str, t: Option<u64>| SummarizeOptions {
            turns: Some("2".into()),
            command: Some(c.into()),
            timeout_secs: t,
            ..Default::default()
        };
        // Output past the bound (endless output is stopped there too, not read until the
        // timeout).
        let e = run(
            cmd("head -c 3000000 /dev/zero | tr '\\0' x", Some(600)),
            &text,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(e.contains("printed more than"), "{e}");
        // A background job in the command's group is ended once the command exits.
        let out = run(cmd("sleep 600 & echo done", Some(600)), &text).unwrap();
        assert_eq!(out[4]["message"]["content"], "done");
        // One that left the group and keeps the output open: an error, not a hang. The
        // command waits until the detached process has left the group (it creates a file
        // after setsid), else ending the group could still catch it and the test would race.
        let dir = tempfile::tempdir().unwrap();
        let flag = dir.path().join("left");
        let c = format!(
            "setsid sh -c 'touch {f}; exec sleep 10' & while [ ! -e {f} ]; do sleep 0.01; done; echo done",
            f = flag.display()
        );
        let e = run(cmd(&c, Some(1)), &text)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains("still holds its output open"), "{e}");
    }

    #[test]
    fn options_are_checked() {
        assert_eq!(parse_turns("3..10"), Ok((3, Some(10))));
        assert_eq!(parse_turns("3..=10"), Ok((3, Some(10))));
        assert_eq!(parse_turns("..4"), Ok((1, Some(4))));
        assert_eq!(parse_turns("5.."), Ok((5, None)));
        assert_eq!(parse_turns("7"), Ok((7, Some(7))));
        assert!(parse_turns("4..2").is_err());
        assert!(parse_turns("0..2").is_err());
        assert!(parse_turns("x").is_err());
        assert_eq!(parse_turns("3-7"), Ok((3, Some(7))));
        assert_eq!(parse_steps("2,3-4"), Ok((2, Some(4))));
        assert!(SummarizeRange::new(SummarizeOptions::default()).is_err());
        assert!(SummarizeRange::new(SummarizeOptions {
            turns: Some("1".into()),
            keep_last: Some(1),
            ..Default::default()
        })
        .is_err());
        let e = run(
            SummarizeOptions {
                turns: Some("9".into()),
                ..Default::default()
            },
            &session_text(2),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("turn 9 does not exist"), "{e}");
    }
}
