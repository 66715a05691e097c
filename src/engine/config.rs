//! Pipeline files (TOML): schema, validation, and building the stages.
//!
//! ```toml
//! version = 1
//! description = "Make transcripts safe to share"
//! on_invalid_json = "keep"        # keep | error — never silently drop
//!
//! [[stage]]
//! type = "redact"
//! ```
//!
//! Everything is validated before any data flows: an unknown key, an unknown stage type or a
//! bad value is an error naming the file, the line and the key.

use std::path::Path;

use serde::Deserialize;

use crate::engine::pipeline::{OnInvalid, Pipeline};
use crate::error::{Error, OptionError, Origin, Result};
use crate::findings::policy::Policy;
use crate::stages;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineDoc {
    version: u32,
    #[serde(default)]
    description: String,
    #[serde(default)]
    on_invalid_json: OnInvalid,
    #[serde(default)]
    stage: Vec<toml::Spanned<toml::Table>>,
    /// Policy for `cchist check --policy`.
    #[serde(default)]
    check: Option<toml::Spanned<toml::Table>>,
    /// Turn-count policies for `cchist hook`.
    #[serde(default)]
    hook: Option<toml::Spanned<toml::Table>>,
}

/// A loaded pipeline file, every table validated: the built pipeline, its CI policy and its
/// hook policy.
pub struct PipelineFile {
    /// The runnable pipeline.
    pub pipeline: Pipeline,
    /// The `[check]` table, if any.
    pub check: Option<Policy>,
    /// The `[hook]` table (defaults when absent).
    pub hook: HookPolicy,
}

/// Turn-count policy of the `[hook]` table.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HookPolicy {
    /// Act when the session reaches exactly these turn counts.
    #[serde(default)]
    pub at_turns: Vec<usize>,
    /// Act every N turns (0 = never).
    #[serde(default)]
    pub every: usize,
    /// `fork` (write a compressed copy and say how to resume it) or `notify` (only say it).
    #[serde(default)]
    pub action: StopAction,
    /// With `fork`: how many recent turns the copy keeps after its summary.
    #[serde(default = "default_keep_last")]
    pub keep_last: usize,
    /// With `fork`: keep the last N steps (assistant messages with their tool results) after
    /// the first prompt and the summary, instead of `keep_last` turns.
    #[serde(default)]
    pub keep_last_steps: Option<usize>,
    /// With `fork`: summarize the oldest steps until the copy is estimated under this many
    /// tokens on resume (see `transcript::budget`), instead of `keep_last` turns; `"auto"`:
    /// under the auto-compact threshold of the session's model (`transcript::context`).
    #[serde(default)]
    pub fit: Option<Fit>,
    /// Print a digest of the project's previous session at `SessionStart`.
    #[serde(default)]
    pub session_start_digest: bool,
    /// Print it again when the session starts after a compaction (`source: compact`); off by
    /// default, since it would repeat after every `/compact`.
    #[serde(default)]
    pub session_start_on_compact: bool,
    /// `Stop`: how long to wait for the transcript to hold the turn that ended, in
    /// milliseconds (keep it well inside the hook's timeout).
    #[serde(default = "default_stop_wait_ms")]
    pub stop_wait_ms: u64,
    /// `PostCompact`: how many saved summaries of a project to keep (the newest).
    #[serde(default = "default_memory_keep")]
    pub memory_keep: usize,
    /// `action = "command"`: the history manager to run after each completed turn (or at
    /// `at_turns` / `every`): a string (split as a POSIX shell would, no shell run) or an
    /// argv array.
    #[serde(default)]
    pub command: Option<CommandLine>,
    /// `action = "command"`: how many recent turns the input's `recent_turns` lists.
    #[serde(default = "default_recent")]
    pub recent: usize,
    /// `action = "command"`: kill the command (its whole process group) after this long.
    #[serde(default = "default_command_timeout_ms")]
    pub command_timeout_ms: u64,
    /// `action = "command"`: where the document it prints is applied.
    #[serde(default)]
    pub apply: ApplyAt,
    /// `action = "command"`: exit 2 when the command fails, which makes Claude Code feed the
    /// reason to the model (off: the user is told, Claude goes on).
    #[serde(default)]
    pub block_on_error: bool,
}

/// `command` of the `[hook]` table, as an argv.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(try_from = "CommandValue")]
pub struct CommandLine(pub Vec<String>);

#[derive(Deserialize)]
#[serde(untagged)]
enum CommandValue {
    Line(String),
    Argv(Vec<String>),
}

impl TryFrom<CommandValue> for CommandLine {
    type Error = String;
    fn try_from(v: CommandValue) -> std::result::Result<CommandLine, String> {
        let argv = match v {
            CommandValue::Argv(a) => a,
            CommandValue::Line(l) => shlex::split(&l).ok_or(
                "unbalanced quotes or a trailing backslash; give the command as an array of arguments instead",
            )?,
        };
        if argv.first().is_none_or(|p| p.is_empty()) {
            return Err("is empty: give the program to run".into());
        }
        Ok(CommandLine(argv))
    }
}

/// Where a history manager's document is applied: a live transcript cannot take it (the
/// running CLI keeps the conversation in memory and appends to the file; see
/// `tests/claude/live_edit.rs`).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ApplyAt {
    /// To a new session (the original untouched); the user is told how to resume it.
    #[default]
    Fork,
    /// Queued, and applied in place to the session itself when it ends (SessionEnd).
    SessionEnd,
}

fn default_memory_keep() -> usize {
    20
}

fn default_recent() -> usize {
    3
}

fn default_command_timeout_ms() -> u64 {
    15_000
}

/// `fit` of the `[hook]` table: a token budget, or `"auto"` for the auto-compact threshold
/// of the session's model, found when the hook runs.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(try_from = "FitValue")]
pub enum Fit {
    /// This many tokens.
    Tokens(u64),
    /// The session's auto-compact threshold.
    Auto,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FitValue {
    Tokens(u64),
    Word(String),
}

impl TryFrom<FitValue> for Fit {
    type Error = String;
    fn try_from(v: FitValue) -> std::result::Result<Fit, String> {
        match v {
            FitValue::Tokens(n) => Ok(Fit::Tokens(n)),
            FitValue::Word(w) if w == "auto" => Ok(Fit::Auto),
            FitValue::Word(w) => Err(format!(
                "`{w}`: give a number of tokens or \"auto\" (the auto-compact threshold of the session's model)"
            )),
        }
    }
}

fn default_keep_last() -> usize {
    5
}

fn default_stop_wait_ms() -> u64 {
    10_000
}

/// The one set of defaults: a pipeline file without `[hook]` gets the same policy as one
/// with an empty `[hook]`.
impl Default for HookPolicy {
    fn default() -> Self {
        HookPolicy {
            at_turns: Vec::new(),
            every: 0,
            action: StopAction::default(),
            keep_last: default_keep_last(),
            keep_last_steps: None,
            fit: None,
            session_start_digest: false,
            session_start_on_compact: false,
            stop_wait_ms: default_stop_wait_ms(),
            memory_keep: default_memory_keep(),
            command: None,
            recent: default_recent(),
            command_timeout_ms: default_command_timeout_ms(),
            apply: ApplyAt::default(),
            block_on_error: false,
        }
    }
}

/// What a turn-count policy does.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StopAction {
    /// Only tell the user.
    #[default]
    Notify,
    /// Write a compressed fork and tell the user how to resume it.
    Fork,
    /// Run the user's history manager (`command`) and apply the document it prints.
    Command,
}

impl HookPolicy {
    /// True when the policy has any turn-count rule.
    pub fn has_turn_rules(&self) -> bool {
        !self.at_turns.is_empty() || self.every > 0
    }

    /// The `summarize-range` options of a fork: `fit`, else `keep_last_steps`, else
    /// `keep_last` (the loader refuses `fit` with `keep_last_steps`).
    pub fn summarize_options(&self) -> toml::Table {
        let mut t = toml::Table::new();
        let int = |n: u64| toml::Value::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        // `fit = "auto"` is resolved to tokens first ([`HookPolicy::with_fit`]).
        match (self.fit, self.keep_last_steps) {
            (Some(Fit::Tokens(f)), _) => t.insert("fit".into(), int(f)),
            (_, Some(k)) => t.insert("keep_last_steps".into(), int(k as u64)),
            (_, None) => t.insert("keep_last".into(), int(self.keep_last as u64)),
        };
        t
    }

    /// The policy with `fit = "auto"` replaced by `auto` tokens.
    pub fn with_fit(&self, auto: u64) -> HookPolicy {
        let mut p = self.clone();
        if p.fit == Some(Fit::Auto) {
            p.fit = Some(Fit::Tokens(auto));
        }
        p
    }

    /// What a fork keeps, for the message to the user.
    pub fn kept(&self) -> String {
        match (self.fit, self.keep_last_steps) {
            (Some(Fit::Tokens(f)), _) => {
                format!("summary + the recent steps that fit in ~{f} tokens")
            }
            (Some(Fit::Auto), _) => {
                "summary + the recent steps that fit under the auto-compact threshold".into()
            }
            (None, Some(k)) => format!("first prompt + summary + last {k} steps"),
            (None, None) => format!("summary + last {} turns", self.keep_last),
        }
    }

    /// True when a session with `turns` turns triggers the policy: a turn-count rule, or a
    /// history manager without one (it runs after every turn, the proposal's PostTurn).
    pub fn triggers(&self, turns: usize) -> bool {
        turns > 0
            && (self.at_turns.contains(&turns)
                || (self.every > 0 && turns.is_multiple_of(self.every))
                || self.is_post_turn())
    }

    /// True when a Stop hook has anything to do.
    pub fn acts_on_stop(&self) -> bool {
        self.has_turn_rules() || self.action == StopAction::Command
    }

    /// A history manager run after every completed turn (no `at_turns` / `every`).
    pub fn is_post_turn(&self) -> bool {
        self.action == StopAction::Command && !self.has_turn_rules()
    }
}

/// The pipelines shipped in `filters/`, built into the binary so hooks and bulk runs work
/// wherever cchist is installed: `(name, text)`.
pub const BUILTIN: &[(&str, &str)] = &[
    ("identity", include_str!("../../filters/identity.toml")),
    ("scrub", include_str!("../../filters/scrub.toml")),
    ("compact", include_str!("../../filters/compact.toml")),
    ("share", include_str!("../../filters/share.toml")),
    ("ci-policy", include_str!("../../filters/ci-policy.toml")),
    ("repair", include_str!("../../filters/repair.toml")),
];

/// Prefix that names a shipped pipeline explicitly: `builtin:scrub`.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// The shipped pipeline `spec` names, if it names one: `builtin:NAME`, or a bare shipped name
/// (`scrub`, `share`, …).
pub fn builtin_name(spec: &str) -> Option<&'static str> {
    let name = spec.strip_prefix(BUILTIN_PREFIX).unwrap_or(spec);
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(n, _)| *n)
}

/// Load a pipeline by the name of a shipped one (`builtin:scrub`, or just `scrub`), else by
/// path; `filters/NAME.toml` falls back to the shipped copy when no such file exists.
///
/// A shipped name resolves before any file: a file named `scrub` in the working directory
/// (a hook runs in the project's) must never replace the built-in redaction.
pub fn load_spec(spec: &str) -> Result<PipelineFile> {
    if let Some(n) = builtin_name(spec) {
        return load_builtin(n);
    }
    let path = Path::new(spec);
    if let Some(name) = spec.strip_prefix(BUILTIN_PREFIX) {
        return Err(unknown(
            path,
            &format!("`{name}` is not a shipped pipeline"),
        ));
    }
    if path.exists() {
        return load(path);
    }
    let name = spec.trim_end_matches(".toml");
    let name = name.strip_prefix("filters/").unwrap_or(name);
    match builtin_name(name) {
        Some(n) => load_builtin(n),
        None => Err(unknown(path, "no such pipeline file")),
    }
}

fn load_builtin(name: &str) -> Result<PipelineFile> {
    let text = BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("a shipped name");
    parse(text, &Origin::file(Path::new(&format!("<builtin {name}>"))))
}

fn unknown(path: &Path, why: &str) -> Error {
    Error::Config {
        path: Origin::file(path),
        line: None,
        message: format!(
            "{why}, and not a shipped pipeline name ({})",
            BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Read and build the pipeline file at `path`.
pub fn load(path: &Path) -> Result<PipelineFile> {
    let origin = Origin::file(path);
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(&origin, "read pipeline", e))?;
    parse(&text, &origin)
}

/// Build a pipeline from TOML text; `origin` names it in errors.
pub fn parse(text: &str, origin: &Origin) -> Result<PipelineFile> {
    let err = |line: Option<usize>, message: String| Error::Config {
        path: origin.clone(),
        line,
        message,
    };
    let doc: PipelineDoc = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start));
        err(line, e.message().trim().to_string())
    })?;
    if doc.version != 1 {
        return Err(err(
            find_key_line(text, 0, "version"),
            format!(
                "unsupported pipeline version {}; this cchist reads version = 1",
                doc.version
            ),
        ));
    }
    let mut built = Vec::new();
    for spanned in doc.stage {
        let start = spanned.span().start;
        let stage_line = line_of(text, start);
        let mut table = spanned.into_inner();
        let ty = match table.remove("type") {
            Some(toml::Value::String(s)) => s,
            Some(_) => return Err(err(Some(stage_line), "key `type`: must be a string".into())),
            None => {
                return Err(err(
                    Some(stage_line),
                    format!(
                        "[[stage]] has no `type`; add one of: {}",
                        stage_names().join(", ")
                    ),
                ))
            }
        };
        let Some(def) = stages::def(&ty) else {
            return Err(err(
                find_key_line(text, start, "type").or(Some(stage_line)),
                format!(
                    "key `type`: unknown stage type `{ty}`; known types: {}",
                    stage_names().join(", ")
                ),
            ));
        };
        let stage = (def.build)(table).map_err(|e| {
            let line = e
                .key
                .as_deref()
                .and_then(|k| find_key_line(text, start, k))
                .unwrap_or(stage_line);
            err(Some(line), format!("stage `{ty}`, {e}"))
        })?;
        built.push(stage);
    }
    // A table error names the line of its key: `file:line: [check] key `x`: …`.
    let table_err = |table: &str, start: usize, e: OptionError| {
        let line = e.key.as_deref().and_then(|k| find_key_line(text, start, k));
        err(
            line.or(Some(line_of(text, start))),
            format!("[{table}] {e}"),
        )
    };
    let check = match doc.check {
        Some(t) => {
            let start = t.span().start;
            Some(Policy::from_table(t.get_ref()).map_err(|e| table_err("check", start, e))?)
        }
        None => None,
    };
    let hook = match doc.hook {
        Some(t) => {
            let start = t.span().start;
            let h: HookPolicy =
                stages::options(t.into_inner()).map_err(|e| table_err("hook", start, e))?;
            if h.fit.is_some() && h.keep_last_steps.is_some() {
                return Err(table_err(
                    "hook",
                    start,
                    OptionError::key("fit", "give `fit` or `keep_last_steps`, not both"),
                ));
            }
            match (h.action, &h.command) {
                (StopAction::Command, None) => {
                    return Err(table_err(
                        "hook",
                        start,
                        OptionError::key(
                            "command",
                            "`action = \"command\"` needs the command to run",
                        ),
                    ))
                }
                (StopAction::Notify | StopAction::Fork, Some(_)) => {
                    return Err(table_err(
                        "hook",
                        start,
                        OptionError::key("command", "is run only with `action = \"command\"`"),
                    ))
                }
                _ => {}
            }
            if h.fit == Some(Fit::Tokens(0)) {
                return Err(table_err(
                    "hook",
                    start,
                    OptionError::key("fit", "the budget must be at least 1 token"),
                ));
            }
            h
        }
        None => HookPolicy::default(),
    };
    Ok(PipelineFile {
        pipeline: Pipeline::new(built, doc.on_invalid_json, doc.description),
        check,
        hook,
    })
}

fn stage_names() -> Vec<&'static str> {
    stages::REGISTRY.iter().map(|d| d.name).collect()
}

/// 1-based line of byte offset `pos`.
fn line_of(text: &str, pos: usize) -> usize {
    text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Line of the first `key =` at or after byte `from`.
fn find_key_line(text: &str, from: usize, key: &str) -> Option<usize> {
    let from = text[..from.min(text.len())]
        .rfind('\n')
        .map_or(0, |p| p + 1);
    let mut off = from;
    for l in text[from..].split_inclusive('\n') {
        let t = l.trim_start();
        if let Some(rest) = t.strip_prefix(key) {
            if rest.trim_start().starts_with('=') {
                return Some(line_of(text, off));
            }
        }
        off += l.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_err(text: &str) -> String {
        match parse(text, &Origin::file(Path::new("p.toml"))) {
            Ok(_) => panic!("expected an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn identity_pipeline_loads() {
        let p = parse("version = 1\ndescription = \"x\"\n", &Origin::stdin()).unwrap();
        assert!(p.pipeline.stages.is_empty());
    }

    #[test]
    fn unknown_top_level_key_names_line_and_key() {
        let e = parse_err("version = 1\non_invalid = \"keep\"\n");
        assert!(e.starts_with("p.toml:2:"), "{e}");
        assert!(e.contains("on_invalid"), "{e}");
    }

    #[test]
    fn unknown_stage_type_is_an_error() {
        let e = parse_err("version = 1\n\n[[stage]]\ntype = \"nope\"\n");
        assert!(e.starts_with("p.toml:4:"), "{e}");
        assert!(e.contains("unknown stage type `nope`"), "{e}");
    }

    #[test]
    fn bad_on_invalid_value_is_an_error() {
        let e = parse_err("version = 1\non_invalid_json = \"drop\"\n");
        assert!(e.starts_with("p.toml:2:"), "{e}");
    }

    #[test]
    fn hook_command_is_an_argv_and_needs_its_action() {
        let h = |t: &str| parse(t, &Origin::stdin()).unwrap().hook;
        let line = h(
            "version = 1\n[hook]\naction = \"command\"\ncommand = \"./m.sh --at 'two words'\"\n",
        );
        assert_eq!(
            line.command.clone().unwrap().0,
            vec!["./m.sh", "--at", "two words"]
        );
        assert!(line.is_post_turn() && line.triggers(1) && line.triggers(7));
        assert_eq!(line.apply, ApplyAt::Fork);
        let argv = h("version = 1\n[hook]\naction = \"command\"\ncommand = [\"m\", \"a b\"]\nat_turns = [10]\napply = \"session-end\"\n");
        assert_eq!(argv.command.clone().unwrap().0, vec!["m", "a b"]);
        assert!(!argv.is_post_turn() && argv.triggers(10) && !argv.triggers(9));
        assert_eq!(argv.apply, ApplyAt::SessionEnd);
        let e = parse_err("version = 1\n[hook]\naction = \"command\"\n");
        assert!(e.contains("[hook] key `command`"), "{e}");
        let e = parse_err("version = 1\n[hook]\ncommand = \"m\"\n");
        assert!(e.contains("only with `action = \"command\"`"), "{e}");
        let e = parse_err("version = 1\n[hook]\naction = \"command\"\ncommand = \"m 'open\"\n");
        assert!(e.contains("unbalanced quotes"), "{e}");
    }

    #[test]
    fn policy_triggers() {
        let p = HookPolicy {
            at_turns: vec![10, 25],
            every: 20,
            ..HookPolicy::default()
        };
        assert!(p.triggers(10) && p.triggers(20) && p.triggers(25) && p.triggers(40));
        assert!(!p.triggers(0) && !p.triggers(11));
    }

    #[test]
    fn hook_and_check_tables_are_validated_at_load_with_their_line() {
        let e = parse_err("version = 1\n\n[hook]\nevery = 2\nevry = 3\n");
        assert!(e.starts_with("p.toml:5: [hook] key `evry`"), "{e}");
        let e = parse_err("version = 1\n\n[check]\nforbidden_tools = [\"[\"]\n");
        assert!(
            e.starts_with("p.toml:4: [check] key `forbidden_tools`"),
            "{e}"
        );
    }

    #[test]
    fn hook_defaults_are_one_set() {
        let absent = parse("version = 1\n", &Origin::stdin()).unwrap().hook;
        let empty = parse("version = 1\n[hook]\n", &Origin::stdin())
            .unwrap()
            .hook;
        assert_eq!(absent, empty);
        assert_eq!(absent.keep_last, 5);
    }

    #[test]
    fn hook_forks_by_steps_or_budget() {
        let h = |t: &str| parse(t, &Origin::stdin()).unwrap().hook;
        let steps = h("version = 1\n[hook]\nkeep_last_steps = 10\n");
        assert_eq!(
            steps.summarize_options().get("keep_last_steps"),
            Some(&toml::Value::Integer(10))
        );
        let fit = h("version = 1\n[hook]\nfit = 20000\n");
        assert_eq!(
            fit.summarize_options().get("fit"),
            Some(&toml::Value::Integer(20000))
        );
        assert!(HookPolicy::default()
            .summarize_options()
            .contains_key("keep_last"));
        let auto = h("version = 1\n[hook]\nfit = \"auto\"\n");
        assert_eq!(auto.fit, Some(Fit::Auto));
        assert_eq!(
            auto.with_fit(167_000).summarize_options().get("fit"),
            Some(&toml::Value::Integer(167_000))
        );
        let e = parse_err("version = 1\n[hook]\nfit = \"big\"\n");
        assert!(e.contains("\"auto\""), "{e}");
        let e = parse_err("version = 1\n[hook]\nfit = 1\nkeep_last_steps = 2\n");
        assert!(e.starts_with("p.toml:3: [hook] key `fit`"), "{e}");
    }

    #[test]
    fn stage_option_errors_name_the_key_once() {
        let e = parse_err(
            "version = 1\n\n[[stage]]\ntype = \"drop-tool-noise\"\nmax_tool_output = 3\n",
        );
        assert!(
            e.starts_with(
                "p.toml:5: stage `drop-tool-noise`, key `max_tool_output`: 3 is too small"
            ),
            "{e}"
        );
        assert_eq!(e.matches("max_tool_output").count(), 1, "{e}");
    }

    #[test]
    fn wrong_version_is_an_error() {
        let e = parse_err("version = 2\n");
        assert!(e.contains("unsupported pipeline version 2"), "{e}");
    }
}
