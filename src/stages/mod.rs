//! Stages: the trait every transformation implements, and the registry that builds them by name.
//!
//! A stage is built once from its options (validated before any data flows) and shared by every
//! worker thread, so it takes `&self`; what it counts or finds for one file goes into [`Cx`].
//! Record-scoped stages see one record at a time and let the pipeline stream; a session-scoped
//! stage makes the pipeline buffer the whole file as a [`Session`].

use std::collections::BTreeMap;

pub mod drop_tool_noise;
pub mod edit;
pub mod finding;
pub mod redact;
pub mod relink;
pub mod summarize;

use crate::error::{OptionError, Origin, Result};
use crate::transcript::record::Record;
use crate::transcript::session::Session;
pub use finding::Finding;

/// Whether a stage needs one record or the whole session at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Sees one record at a time; the pipeline may stream.
    Record,
    /// Needs the whole session (relink, summaries, turn edits).
    Session,
}

/// What happens to a record after a record-scoped stage saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Write it (changed or not).
    Keep,
    /// Remove it from the output.
    Drop,
}

/// Counts of what one stage did to one file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct StageStats {
    /// Records the stage changed.
    pub changed: u64,
    /// Records the stage removed.
    pub dropped: u64,
    /// Records the stage created.
    pub added: u64,
}

/// Files a session-scoped stage may hand out beside the session it runs on: records it moves
/// out of the main file into a companion file (`subagents/agent-<id>.jsonl`,
/// claude-code#23373). Present in [`Cx::companions`] only when the run can write them (in
/// place) or says what it would write (a dry run); elsewhere the records stay where they are.
#[derive(Debug, Default, Clone)]
pub struct Companions {
    /// Companion files (relative to the session's companion folder `<id>/`) that exist
    /// already: nothing is moved into them (a file Claude Code wrote is never merged into).
    pub existing: std::collections::HashSet<std::path::PathBuf>,
    /// What was handed out, in order.
    pub out: Vec<MovedOut>,
}

/// One companion file a stage hands out: the records' bytes as they would be written, one
/// per line, in file order.
#[derive(Debug, Default, Clone)]
pub struct MovedOut {
    /// Its path relative to the session's companion folder.
    pub rel: std::path::PathBuf,
    /// Records in it.
    pub records: u64,
    /// Its content.
    pub bytes: Vec<u8>,
}

/// Per-file context handed to stages: where the data comes from and what they found.
#[derive(Debug)]
pub struct Cx {
    /// The file being processed.
    pub origin: Origin,
    /// Findings reported by stages.
    pub findings: Vec<Finding>,
    /// Free-form counters a stage wants to report (e.g. `redactions`).
    pub counters: BTreeMap<String, u64>,
    /// The secrets found so far (by a stage whose [`Stage::secrets`] is not `Ignores`), and those the
    /// run started with (the session's other files, `--known-values`).
    pub known: crate::stages::redact::known::Known,
    /// At most this many findings are kept ([`Cx::report`]); the engine sets it for a run
    /// whose report nobody reads finding by finding (one that replaces its secrets).
    pub keep_findings: usize,
    /// Findings past [`Cx::keep_findings`]: counted, not kept.
    pub unlisted: u64,
    /// Companion files the stages may hand out (`None`: the run writes one file only).
    pub companions: Option<Companions>,
}

impl Cx {
    /// A fresh context for one file.
    pub fn new(origin: Origin) -> Self {
        Cx {
            origin,
            findings: Vec::new(),
            counters: BTreeMap::new(),
            known: Default::default(),
            keep_findings: usize::MAX,
            unlisted: 0,
            companions: None,
        }
    }

    /// Report `f`: kept, unless [`Cx::keep_findings`] are kept already (then counted only), so
    /// that a file of a million secrets does not hold a million findings.
    pub fn report(&mut self, f: Finding) {
        if self.findings.len() < self.keep_findings {
            self.findings.push(f);
        } else {
            self.unlisted += 1;
        }
    }

    /// Add `n` to the counter `name`.
    pub fn count(&mut self, name: &str, n: u64) {
        *self.counters.entry(name.to_string()).or_default() += n;
    }
}

/// What a stage does with the secrets it finds ([`Stage::secrets`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secrets {
    /// It does not look for any.
    Ignores,
    /// It replaces them.
    Replaces,
    /// It only reports them (`cchist check`).
    Reports,
}

/// A transformation of transcript records.
pub trait Stage: Send + Sync {
    /// The stage's registered name (its `type` in pipeline files).
    fn name(&self) -> &'static str;

    /// Record-scoped stages stream; session-scoped ones need the whole file.
    fn scope(&self) -> Scope {
        Scope::Record
    }

    /// Transform one record. The default keeps it unchanged.
    fn record(&self, _rec: &mut Record<'_>, _cx: &mut Cx) -> Result<Verdict> {
        Ok(Verdict::Keep)
    }

    /// True for a stage whose job is removing secrets: it also runs over the copies of a
    /// session that no other stage may change (backups, sub-agent metadata documents), since
    /// whatever cchist keeps of a session must be as clean as the session.
    fn applies_to_copies(&self) -> bool {
        false
    }

    /// What the stage does with secrets: a stage that finds them adds each to [`Cx::known`],
    /// and the engine then replaces (or, for a scanner, reports) every other occurrence of
    /// them in what the pipeline writes.
    fn secrets(&self) -> Secrets {
        Secrets::Ignores
    }

    /// Whether the stage shortens text it keeps (a cap on tool output) or removes records (a
    /// summary in place of a range, an edit): a stage that replaces secrets is then run before
    /// it, wherever a pipeline file puts it, so that nothing is cut before it is redacted.
    fn cuts_text(&self) -> bool {
        false
    }

    /// Whether the stage may move records out of the file into companion files
    /// ([`Cx::companions`]): the runner then looks at what the session has beside it.
    fn moves_records(&self) -> bool {
        false
    }

    /// Whether the stage can write text that was not in its input (a summary a command
    /// wrote, an edit document's content): what it adds or changes after a redact stage is
    /// then redacted again. False for a stage that only removes, moves or relinks what is
    /// there, or writes only cchist's own words (a truncation marker). True by default: a
    /// stage that says nothing is taken to add text.
    fn adds_text(&self) -> bool {
        true
    }

    /// Secrets the stage knows before it reads anything (the values its options declare).
    fn known_values(&self) -> Option<&crate::stages::redact::known::Known> {
        None
    }

    /// Transform a plain-text companion file (`tool-results/*.txt`, where Claude Code keeps a
    /// tool output too big to inline). `None` keeps it as it is, which is what stages that
    /// only understand records do.
    fn text(&self, _text: &[u8], _cx: &mut Cx) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }

    /// Transform a line that is not a JSON object record (a truncated last line, a BOM line,
    /// a `"string"` or `[array]` line): such lines never reach [`Stage::session`], and stages
    /// that only understand records leave them alone (the default). A stage that must reach
    /// every byte of a session (redaction) treats it as text.
    fn opaque(&self, _rec: &mut Record<'_>, _cx: &mut Cx) -> Result<()> {
        Ok(())
    }

    /// Transform a whole session. The default applies [`Stage::record`] to every record.
    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> Result<()> {
        let mut err = None;
        s.records.retain_mut(|r| {
            if err.is_some() {
                return true;
            }
            match self.record(r, cx) {
                Ok(v) => v == Verdict::Keep,
                Err(e) => {
                    err = Some(e);
                    true
                }
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Build a stage from its option table (the `type` key already removed).
pub type Builder = fn(toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError>;

/// A stage type as pipeline files name it: declared once by its module, read by the config
/// loader, [`Stage::name`], the CLI's help and `cchist rules`.
#[derive(Debug, Clone, Copy)]
pub struct StageDef {
    /// The `type` in pipeline files.
    pub name: &'static str,
    /// One line on what it does.
    pub about: &'static str,
    /// Builds it from its options.
    pub build: Builder,
}

/// Every stage type a pipeline file may name.
pub const REGISTRY: &[StageDef] = &[
    redact::DEF,
    relink::DEF,
    relink::repair::DEF,
    drop_tool_noise::DEF,
    summarize::DEF,
];

/// Look up a stage type by name.
pub fn def(name: &str) -> Option<&'static StageDef> {
    REGISTRY.iter().find(|d| d.name == name)
}

/// Stages read their option tables with the one options reader.
pub use crate::error::options;
