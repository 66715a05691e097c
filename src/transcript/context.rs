//! How full Claude Code's context is, and when it will compact.
//!
//! Measured on the pinned CLI (2.1.328, the same to the token on 2.1.332) against the mock
//! Messages API reporting chosen usage:
//!
//! - **The count.** Before each request the CLI takes the `usage` of the last real assistant
//!   response — `input_tokens + cache_read_input_tokens + cache_creation_input_tokens +
//!   output_tokens` — skipping records without usage and the `<synthetic>` "Prompt is too long"
//!   record, and adds an estimate of what was added since. [`Timeline`] does the same, the
//!   estimate being [`budget::record_tokens`].
//! - **The window.** Not recorded in the transcript: it follows from the model name
//!   ([`model_window`]), and a model with no known window is never compacted proactively
//!   ([`Window::Unknown`]: cchist says so rather than invent a threshold).
//! - **The thresholds.** Auto-compaction at `window − min(max output, 20 000) − 13 000`
//!   (967 000 on the 1M models, 167 000 on the 200K ones), the warning 20 000 below it, and,
//!   when auto-compaction is off, a refusal to send at `window − min(max output, 20 000) −
//!   3 000`. [`Overrides`] move them as the CLI's environment and settings do.
//!
//! The library never reads the environment or the settings files itself: the binary gathers
//! them into an [`Overrides`] ([`Overrides::resolve`] takes a lookup function and the parsed
//! files), so every rule here is testable with chosen inputs.

use serde::Serialize;
use serde_json::Value;

use crate::transcript::budget;
use crate::transcript::record::Kind;
use crate::transcript::session::{FastMap, Session};

/// Tokens below the effective window at which the CLI auto-compacts.
pub const AUTO_COMPACT_BUFFER: u64 = 13_000;
/// Tokens below the auto-compact threshold at which the CLI starts warning.
pub const WARNING_BUFFER: u64 = 20_000;
/// Tokens below the effective window at which the CLI refuses to send (compaction off).
pub const BLOCK_BUFFER: u64 = 3_000;
/// The most output tokens the CLI reserves out of the window.
pub const MAX_OUTPUT_RESERVE: u64 = 20_000;
/// The model Claude Code 2.1.328 uses when none is chosen (and what `opus` resolves to).
pub const DEFAULT_MODEL: &str = "claude-opus-5-5";

/// Models with a 1M window on the pinned CLI, by the name the transcript records or the
/// alias `--model` takes.
const WINDOW_1M: &[&str] = &[
    "claude-opus-5-5",
    "claude-opus-4-7",
    "claude-sonnet-5-5",
    "opus",
    "sonnet",
    "haiku",
];
/// Models with a 200K window on the pinned CLI.
const WINDOW_200K: &[&str] = &["claude-sonnet-4-6", "claude-opus-4-6"];

/// The context window the CLI computes compaction from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// A window of this many tokens.
    Known(u64),
    /// The CLI knows no window for the model: it never compacts proactively, only after the
    /// API answers "prompt is too long" (measured: not even at 1.5M tokens).
    Unknown,
}

/// The model's own window on the pinned CLI (`claude-sonnet-4-5`, `claude-haiku-4-5`, the
/// `[1m]` forms and dated ids have none it knows).
pub fn model_window(model: &str) -> Window {
    if WINDOW_1M.contains(&model) {
        Window::Known(1_000_000)
    } else if WINDOW_200K.contains(&model) {
        Window::Known(200_000)
    } else {
        Window::Unknown
    }
}

/// The model a session resumes on when it is not the recorded one (Claude Code moves some
/// retired models to the default; their thinking blocks are not resent).
pub fn resumed_model(model: &str) -> Option<&'static str> {
    match model {
        // 2.1.328 already does this for these two; 2.1.329 adds claude-sonnet-4-5.
        "claude-sonnet-4" | "claude-opus-4-1" => Some(DEFAULT_MODEL),
        _ => None,
    }
}

/// Where an override came from, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The variable or setting (`CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`, `autoCompactWindow`).
    pub name: String,
    /// Its value as written.
    pub value: String,
    /// `environment`, or the settings file it was read from.
    pub from: String,
}

/// What moves the thresholds: Claude Code's environment variables and settings, gathered by
/// the caller ([`Overrides::resolve`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Overrides {
    /// `CLAUDE_CODE_AUTO_COMPACT_WINDOW`, else the `autoCompactWindow` setting: caps the
    /// window compaction is computed from (and gives one to a model with none known).
    pub auto_compact_window: Option<u64>,
    /// `modelSettings.<model>.autoCompactWindow`, per model (wins over the general one).
    pub model_windows: Vec<(String, u64)>,
    /// `CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`: a percentage of the effective window that can only
    /// lower the threshold.
    pub autocompact_pct: Option<f64>,
    /// `CLAUDE_CODE_MAX_OUTPUT_TOKENS`: the output reserve, when under 20 000.
    pub max_output_tokens: Option<u64>,
    /// `CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE`: where the CLI refuses to send.
    pub blocking_limit: Option<u64>,
    /// `CLAUDE_CODE_DISABLE_1M_CONTEXT`: the 1M models held to 200K.
    pub disable_1m: bool,
    /// What turned auto-compaction off (`DISABLE_AUTO_COMPACT`, `DISABLE_COMPACT`,
    /// `autoCompactEnabled: false`), if anything did.
    pub disabled_by: Option<String>,
    /// Every override in effect, for the report.
    pub sources: Vec<Source>,
}

/// A truthy environment value as Claude Code reads one.
fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

/// The environment variables [`Overrides::resolve`] reads.
pub const ENV_VARS: &[&str] = &[
    "CLAUDE_CODE_AUTO_COMPACT_WINDOW",
    "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE",
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS",
    "CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE",
    "CLAUDE_CODE_DISABLE_1M_CONTEXT",
    "DISABLE_AUTO_COMPACT",
    "DISABLE_COMPACT",
];

impl Overrides {
    /// Gather the overrides from `env` (a lookup of the process environment), the settings
    /// files `settings` as `(file name, parsed document)` from the lowest precedence to the
    /// highest (user, project, local — Claude Code's order), and the global config
    /// (`.claude.json`, which holds `autoCompactEnabled`).
    ///
    /// A variable set in a settings file's `env` block counts when the environment does not
    /// set it (the environment wins).
    pub fn resolve(
        env: &dyn Fn(&str) -> Option<String>,
        settings: &[(String, Value)],
        global: Option<(String, &Value)>,
    ) -> Overrides {
        let mut o = Overrides::default();
        let var = |name: &str| -> Option<(String, String)> {
            if let Some(v) = env(name).filter(|v| !v.trim().is_empty()) {
                return Some((v, "environment".into()));
            }
            settings.iter().rev().find_map(|(file, doc)| {
                let v = doc.get("env")?.get(name)?;
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => return None,
                };
                Some((v, format!("{file} env")))
            })
        };
        let note = |o: &mut Overrides, name: &str, value: &str, from: &str| {
            o.sources.push(Source {
                name: name.into(),
                value: value.into(),
                from: from.into(),
            });
        };
        let number = |v: &str| v.trim().parse::<f64>().ok().filter(|n| n.is_finite());
        if let Some((v, from)) = var("CLAUDE_CODE_AUTO_COMPACT_WINDOW") {
            if let Some(n) = number(&v).filter(|n| *n > 0.0) {
                o.auto_compact_window = Some(n as u64);
                note(&mut o, "CLAUDE_CODE_AUTO_COMPACT_WINDOW", &v, &from);
            }
        }
        if o.auto_compact_window.is_none() {
            let found = settings.iter().rev().find_map(|(file, doc)| {
                let n = doc.get("autoCompactWindow")?.as_u64()?;
                Some((n, file.clone()))
            });
            if let Some((n, file)) = found {
                o.auto_compact_window = Some(n);
                note(&mut o, "autoCompactWindow", &n.to_string(), &file);
            }
        }
        for (file, doc) in settings {
            let Some(models) = doc.get("modelSettings").and_then(Value::as_object) else {
                continue;
            };
            for (model, s) in models {
                if let Some(n) = s.get("autoCompactWindow").and_then(Value::as_u64) {
                    o.model_windows.retain(|(m, _)| m != model);
                    o.model_windows.push((model.clone(), n));
                    let name = format!("modelSettings.{model}.autoCompactWindow");
                    note(&mut o, &name, &n.to_string(), file);
                }
            }
        }
        if let Some((v, from)) = var("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE") {
            if let Some(p) = number(&v).filter(|p| *p > 0.0 && *p <= 100.0) {
                o.autocompact_pct = Some(p);
                note(&mut o, "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", &v, &from);
            }
        }
        if let Some((v, from)) = var("CLAUDE_CODE_MAX_OUTPUT_TOKENS") {
            if let Some(n) = number(&v).filter(|n| *n > 0.0) {
                o.max_output_tokens = Some(n as u64);
                note(&mut o, "CLAUDE_CODE_MAX_OUTPUT_TOKENS", &v, &from);
            }
        }
        if let Some((v, from)) = var("CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE") {
            if let Some(n) = number(&v).filter(|n| *n > 0.0) {
                o.blocking_limit = Some(n as u64);
                note(&mut o, "CLAUDE_CODE_BLOCKING_LIMIT_OVERRIDE", &v, &from);
            }
        }
        if let Some((v, from)) = var("CLAUDE_CODE_DISABLE_1M_CONTEXT") {
            if truthy(&v) {
                o.disable_1m = true;
                note(&mut o, "CLAUDE_CODE_DISABLE_1M_CONTEXT", &v, &from);
            }
        }
        for name in ["DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"] {
            if let Some((v, from)) = var(name) {
                if truthy(&v) {
                    o.disabled_by.get_or_insert_with(|| format!("{name}={v}"));
                    note(&mut o, name, &v, &from);
                }
            }
        }
        if let Some((file, doc)) = global {
            if doc.get("autoCompactEnabled") == Some(&Value::Bool(false)) {
                o.disabled_by
                    .get_or_insert_with(|| "autoCompactEnabled: false".into());
                note(&mut o, "autoCompactEnabled", "false", &file);
            }
        }
        o
    }
}

/// When the CLI compacts a session of one model, with the overrides in effect.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Compaction {
    /// Auto-compaction at `threshold`.
    Auto {
        /// The window less the output reserve.
        effective: u64,
        /// The CLI compacts before a request whose count reaches this.
        threshold: u64,
        /// "Context left until auto-compact" shows from here.
        warning: u64,
    },
    /// Auto-compaction is off; the CLI refuses to send at `block` (when the window is known).
    Off {
        /// What turned it off.
        by: String,
        /// The count at which the CLI answers "Prompt is too long" without sending.
        block: Option<u64>,
    },
    /// No known window: compacted only after the API answers "prompt is too long".
    NoKnownWindow,
}

/// The limits of one model, and what they are computed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Limits {
    /// The model they are for.
    pub model: String,
    /// The model's own window (what the status line's percentage is of).
    pub window: Window,
    /// When it compacts.
    pub compaction: Compaction,
}

impl Limits {
    /// The limits of `model` under `o`.
    pub fn of(model: &str, o: &Overrides) -> Limits {
        let mut window = model_window(model);
        if o.disable_1m && window == Window::Known(1_000_000) {
            window = Window::Known(200_000);
        }
        // The window compaction is computed from: the model's, capped by the override (which
        // gives a window to a model with none known — measured on claude-sonnet-4-5).
        let cap = o
            .model_windows
            .iter()
            .find(|(m, _)| m == model)
            .map(|(_, n)| *n)
            .or(o.auto_compact_window);
        let compaction_window = match (window, cap) {
            (Window::Known(w), Some(c)) => Some(w.min(c)),
            (Window::Known(w), None) => Some(w),
            (Window::Unknown, c) => c,
        };
        let reserve = o
            .max_output_tokens
            .map_or(MAX_OUTPUT_RESERVE, |m| m.min(MAX_OUTPUT_RESERVE));
        let effective = compaction_window.map(|w| w.saturating_sub(reserve));
        let block = |eff: u64| {
            o.blocking_limit
                .unwrap_or_else(|| eff.saturating_sub(BLOCK_BUFFER))
        };
        let compaction = match (effective, &o.disabled_by) {
            (eff, Some(by)) => Compaction::Off {
                by: by.clone(),
                block: eff.map(block),
            },
            (None, None) => Compaction::NoKnownWindow,
            (Some(eff), None) => {
                let mut threshold = eff.saturating_sub(AUTO_COMPACT_BUFFER);
                if let Some(p) = o.autocompact_pct {
                    // A percentage of the effective window that only lowers the threshold.
                    threshold = threshold.min((eff as f64 * p / 100.0).floor() as u64);
                }
                Compaction::Auto {
                    effective: eff,
                    threshold,
                    warning: threshold.saturating_sub(WARNING_BUFFER),
                }
            }
        };
        Limits {
            model: model.to_string(),
            window,
            compaction,
        }
    }

    /// Percent of the model's window `tokens` fill (as the status line shows it).
    pub fn percent(&self, tokens: u64) -> Option<f64> {
        match self.window {
            Window::Known(w) if w > 0 => Some(tokens as f64 * 100.0 / w as f64),
            _ => None,
        }
    }

    /// The auto-compact threshold, when the CLI compacts on its own.
    pub fn threshold(&self) -> Option<u64> {
        match self.compaction {
            Compaction::Auto { threshold, .. } => Some(threshold),
            _ => None,
        }
    }
}

/// An assistant response's usage, the four fields the CLI sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// `input_tokens`.
    pub input_tokens: u64,
    /// `cache_read_input_tokens`.
    pub cache_read_input_tokens: u64,
    /// `cache_creation_input_tokens`.
    pub cache_creation_input_tokens: u64,
    /// `output_tokens`.
    pub output_tokens: u64,
}

impl Usage {
    /// The usage of a record as the CLI counts it: an `assistant` record with
    /// `message.usage`, not the `<synthetic>` one the CLI writes for its own errors.
    pub fn of(record: &Value) -> Option<Usage> {
        if record.get("type").and_then(Value::as_str) != Some("assistant") {
            return None;
        }
        let msg = record.get("message")?;
        if msg.get("model").and_then(Value::as_str) == Some("<synthetic>") {
            return None;
        }
        let u = msg.get("usage")?.as_object()?;
        let f = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        Some(Usage {
            input_tokens: f("input_tokens"),
            cache_read_input_tokens: f("cache_read_input_tokens"),
            cache_creation_input_tokens: f("cache_creation_input_tokens"),
            output_tokens: f("output_tokens"),
        })
    }

    /// The sum the CLI compares with its thresholds.
    pub fn total(&self) -> u64 {
        self.input_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
            + self.output_tokens
    }
}

/// The count after each record of the conversation, as the CLI would make it there.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// `(record index, count after it)` along the logical path, in chain order, for the
    /// records the CLI sends (user, assistant, attachment; sidechains excluded) and the
    /// compact boundaries (where the count starts over).
    pub points: Vec<(usize, u64)>,
    /// The last real assistant record on the path since the last compaction, with its usage.
    pub last_usage: Option<(usize, Usage)>,
    /// What was estimated after it.
    pub estimated_after: u64,
    /// The model of the last real assistant record (any, when none since the compaction).
    pub model: Option<String>,
}

impl Timeline {
    /// Walk the session's logical path once.
    pub fn of(s: &mut Session<'_>) -> Timeline {
        let mut t = Timeline::default();
        let Some(leaf) = s.leaf() else {
            return t;
        };
        let mut count = 0u64;
        for i in s.logical_path(leaf) {
            let Some(h) = s.header(i) else { continue };
            if h.subtype() == Some("compact_boundary") {
                count = 0;
                t.last_usage = None;
                t.estimated_after = 0;
                t.points.push((i, 0));
                continue;
            }
            if h.is_sidechain || !matches!(h.kind, Kind::User | Kind::Assistant | Kind::Attachment)
            {
                continue;
            }
            let is_assistant = h.kind == Kind::Assistant;
            let usage = if is_assistant {
                s.records[i].read_value().ok().and_then(|v| Usage::of(&v))
            } else {
                None
            };
            if let Some(u) = usage {
                count = u.total();
                t.last_usage = Some((i, u));
                t.estimated_after = 0;
                if let Some(m) = s.records[i].read_value().ok().and_then(|v| {
                    v.pointer("/message/model")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                }) {
                    t.model = Some(m);
                }
            } else {
                let add = budget::record_tokens(s, i);
                count += add;
                t.estimated_after += add;
            }
            t.points.push((i, count));
        }
        t
    }

    /// The count now: the last usage plus the estimate after it.
    pub fn tokens(&self) -> u64 {
        self.points.last().map_or(0, |p| p.1)
    }

    /// The count at the end of each of `turns` (`None` for a turn with no record on the
    /// path), given the turns' record lists.
    pub fn per_turn(&self, turns: &[crate::transcript::session::Turn]) -> Vec<Option<u64>> {
        self.per_turn_from(turns, 0)
    }

    /// [`Timeline::per_turn`] for the turns that end after the last compaction (`None` for
    /// the others): the growth that matters for the next auto-compaction.
    pub fn per_turn_since_compaction(
        &self,
        turns: &[crate::transcript::session::Turn],
    ) -> Vec<Option<u64>> {
        let from = self
            .points
            .iter()
            .rposition(|&(_, c)| c == 0)
            .map_or(0, |p| p + 1);
        self.per_turn_from(turns, from)
    }

    fn per_turn_from(
        &self,
        turns: &[crate::transcript::session::Turn],
        from: usize,
    ) -> Vec<Option<u64>> {
        let at: FastMap<usize, (usize, u64)> = self
            .points
            .iter()
            .enumerate()
            .map(|(pos, &(i, c))| (i, (pos, c)))
            .collect();
        turns
            .iter()
            .map(|t| {
                t.records
                    .iter()
                    .filter_map(|i| at.get(i))
                    .max_by_key(|(pos, _)| *pos)
                    .filter(|(pos, _)| *pos >= from)
                    .map(|(_, c)| *c)
            })
            .collect()
    }

    /// Average growth per turn over the last `n` turns since the last compaction (turns whose
    /// count went down — a compaction, an edit — are left out); `None` with too few turns.
    pub fn growth(per_turn: &[Option<u64>], n: usize) -> Option<u64> {
        let counts: Vec<u64> = per_turn.iter().flatten().copied().collect();
        let deltas: Vec<u64> = counts
            .windows(2)
            .filter(|w| w[1] >= w[0])
            .map(|w| w[1] - w[0])
            .collect();
        let recent = &deltas[deltas.len().saturating_sub(n)..];
        if recent.is_empty() {
            return None;
        }
        Some((recent.iter().sum::<u64>() / recent.len() as u64).max(1))
    }
}

/// Where a count stands against the limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Below the warning.
    Ok,
    /// The CLI shows "Context left until auto-compact".
    Warning,
    /// The next request compacts first.
    CompactsNow,
    /// Compaction is off and the next request is refused.
    Blocked,
    /// Compaction is off, below the block.
    Off,
    /// No known window.
    Unknown,
}

impl Limits {
    /// Where `tokens` stands.
    pub fn standing(&self, tokens: u64) -> Standing {
        match &self.compaction {
            Compaction::Auto {
                threshold, warning, ..
            } => {
                if tokens >= *threshold {
                    Standing::CompactsNow
                } else if tokens >= *warning {
                    Standing::Warning
                } else {
                    Standing::Ok
                }
            }
            Compaction::Off { block, .. } => match block {
                Some(b) if tokens >= *b => Standing::Blocked,
                _ => Standing::Off,
            },
            Compaction::NoKnownWindow => Standing::Unknown,
        }
    }
}

/// What fills the conversation, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// `tool_result` blocks (their text).
    ToolResults,
    /// `tool_use` inputs.
    ToolInputs,
    /// `text` blocks and string contents.
    Text,
    /// `thinking` and `redacted_thinking` blocks.
    Thinking,
    /// `image` and `document` blocks, wherever they are.
    Images,
    /// `attachment` records.
    Attachments,
}

impl Part {
    /// Every part, in report order.
    pub const ALL: [Part; 6] = [
        Part::ToolResults,
        Part::ToolInputs,
        Part::Text,
        Part::Thinking,
        Part::Images,
        Part::Attachments,
    ];

    /// The name the report prints.
    pub fn label(self) -> &'static str {
        match self {
            Part::ToolResults => "tool results",
            Part::ToolInputs => "tool inputs",
            Part::Text => "text",
            Part::Thinking => "thinking",
            Part::Images => "images",
            Part::Attachments => "attachments",
        }
    }
}

/// One item of the conversation, for the largest-items list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Estimated tokens.
    pub tokens: u64,
    /// Its kind.
    pub part: Part,
    /// The step it is in (as `summarize-range --steps` numbers them), if any.
    pub step: Option<usize>,
    /// The tool (for tool results and inputs) or attachment type.
    pub name: Option<String>,
    /// Its record's uuid.
    pub uuid: Option<String>,
}

/// What the conversation Claude Code would resume is made of.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Composition {
    /// Estimated tokens per part, in [`Part::ALL`] order.
    pub parts: Vec<(Part, u64)>,
    /// The largest items, largest first.
    pub largest: Vec<Item>,
    /// Steps on the resume path, with the estimated tokens of each, in chain order.
    pub steps: Vec<(usize, u64)>,
    /// Tool-result text above the drop-tool-noise cap, in estimated tokens.
    pub over_cap: u64,
    /// Images and documents.
    pub images: u64,
}

/// Estimated tokens of a JSON value as sent (the estimator of [`budget`]).
fn tokens_of(v: &Value) -> u64 {
    budget::value_tokens(v)
}

/// Break the resume path into parts; keep the `top` largest items. `cap` is drop-tool-noise's
/// tool-output cap in bytes.
pub fn composition(s: &mut Session<'_>, top: usize, cap: usize) -> Composition {
    let path = budget::resume_path(s);
    let turns = s.turns();
    let steps = s.steps(&turns);
    let mut step_of: FastMap<usize, usize> = FastMap::default();
    for st in &steps {
        for &i in &st.records {
            step_of.insert(i, st.number);
        }
    }
    let mut totals: std::collections::BTreeMap<Part, u64> = Default::default();
    let mut items: Vec<Item> = Vec::new();
    let mut step_tokens: Vec<(usize, u64)> = Vec::new();
    let mut c = Composition::default();
    // Tool names by tool_use id, learnt as the path goes (a call precedes its result).
    let mut tool_names: FastMap<String, String> = FastMap::default();
    for i in path {
        let step = step_of.get(&i).copied();
        let uuid = s.header(i).and_then(|h| h.uuid()).map(str::to_string);
        let mut found: Vec<(Part, u64, Option<String>)> = Vec::new();
        if s.header(i).is_some_and(|h| h.kind == Kind::Attachment) {
            let tokens = budget::record_tokens(s, i);
            let name = s.records[i].read_value().ok().and_then(|v| {
                v.pointer("/attachment/type")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            });
            found.push((Part::Attachments, tokens, name));
        } else {
            let Ok(v) = s.records[i].read_value() else {
                continue;
            };
            match v.pointer("/message/content") {
                Some(Value::String(t)) => found.push((Part::Text, budget::text_tokens(t), None)),
                Some(Value::Array(blocks)) => {
                    for b in blocks {
                        parts_of(b, &mut found, &mut c, cap, &mut tool_names);
                    }
                }
                _ => {}
            }
        }
        let mut rec_total = 0;
        for (part, tokens, name) in found {
            *totals.entry(part).or_default() += tokens;
            rec_total += tokens;
            items.push(Item {
                tokens,
                part,
                step,
                name,
                uuid: uuid.clone(),
            });
        }
        if let Some(n) = step {
            match step_tokens.last_mut() {
                Some((last, t)) if *last == n => *t += rec_total,
                _ => step_tokens.push((n, rec_total)),
            }
        }
    }
    // Largest first; equal sizes in chain order.
    items.sort_by_key(|x| std::cmp::Reverse(x.tokens));
    items.truncate(top);
    c.parts = Part::ALL
        .iter()
        .map(|p| (*p, totals.get(p).copied().unwrap_or(0)))
        .collect();
    c.largest = items;
    c.steps = step_tokens;
    c
}

/// The parts of one content block (a tool result's images count as images).
fn parts_of(
    b: &Value,
    out: &mut Vec<(Part, u64, Option<String>)>,
    c: &mut Composition,
    cap: usize,
    tool_names: &mut FastMap<String, String>,
) {
    let field = |k: &str| b.get(k).and_then(Value::as_str);
    match b.get("type").and_then(Value::as_str) {
        Some("tool_result") => {
            let mut images = 0;
            let mut bytes = 0u64;
            match b.get("content") {
                Some(Value::Array(items)) => {
                    for x in items {
                        if matches!(
                            x.get("type").and_then(Value::as_str),
                            Some("image" | "document")
                        ) {
                            images += 1;
                        } else if let Some(t) = x.get("text").and_then(Value::as_str) {
                            bytes += t.len() as u64;
                        }
                    }
                }
                Some(Value::String(t)) => bytes += t.len() as u64,
                _ => {}
            }
            let total = tokens_of(b).saturating_sub(images * budget::IMAGE_TOKENS);
            c.over_cap += bytes.saturating_sub(cap as u64) / budget::BYTES_PER_TOKEN;
            let tool = field("tool_use_id")
                .and_then(|id| tool_names.get(id))
                .cloned();
            out.push((Part::ToolResults, total, tool));
            if images > 0 {
                c.images += images;
                out.push((Part::Images, images * budget::IMAGE_TOKENS, None));
            }
        }
        Some("tool_use") => {
            let name = field("name").map(str::to_string);
            if let (Some(id), Some(n)) = (field("id"), &name) {
                tool_names.insert(id.to_string(), n.clone());
            }
            out.push((Part::ToolInputs, tokens_of(b), name));
        }
        Some("thinking" | "redacted_thinking") => out.push((Part::Thinking, tokens_of(b), None)),
        Some("image" | "document") => {
            c.images += 1;
            out.push((Part::Images, budget::IMAGE_TOKENS, None));
        }
        _ => out.push((Part::Text, tokens_of(b), None)),
    }
}

#[cfg(test)]
mod tests;

mod from_end;
pub use from_end::{tail, Tail};
