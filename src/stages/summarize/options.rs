//! The stage's options, and the selector they make.

use std::time::Duration;

use serde::Deserialize;

use crate::error::OptionError;
use crate::transcript::budget;

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
    /// With `fit`: tokens of the budget kept for what Claude Code adds on resume (its
    /// reminders and context, the next prompt) and the estimate's error; the estimate aims at
    /// `fit - fit_reserve`. Default [`budget::default_reserve`] (4,000 + 10 % of `fit`).
    #[serde(default)]
    pub fit_reserve: Option<u64>,
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
pub(super) enum Selector {
    Uuids(Option<String>, Option<String>),
    Turns(usize, Option<usize>),
    KeepLast(usize),
    Steps(usize, Option<usize>),
    KeepLastSteps(usize),
    Fit(u64),
}

/// The `summarize-range` stage.
pub struct SummarizeRange {
    pub(super) selector: Selector,
    pub(super) text: Option<String>,
    pub(super) command: Option<String>,
    pub(super) timeout: Duration,
    pub(super) fit_reserve: Option<u64>,
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
        if o.fit_reserve.is_some() && o.fit.is_none() {
            return Err(OptionError::key(
                "fit_reserve",
                "a reserve is part of a budget: give `fit` too",
            ));
        }
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
            fit_reserve: o.fit_reserve,
        })
    }

    /// For a budget: (reserve, the estimate to aim at).
    pub(super) fn fit_target(&self, budget: u64) -> (u64, u64) {
        let reserve = self
            .fit_reserve
            .unwrap_or_else(|| budget::default_reserve(budget));
        (reserve, budget.saturating_sub(reserve))
    }
}
