//! `cchist redact [PATH…]`: replace secrets with `[REDACTED:<rule>]` (a pipeline of one
//! `redact` stage; the same input and output options as `run`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::ExitStatus;
use cchist::stages::redact::{Redact, RedactOptions, Redactor};
use clap::Args;

use super::args::IoArgs;

/// Rule selection and keys, shared by `redact` and `check`.
#[derive(Args, Debug, Clone, Default)]
pub struct RuleArgs {
    /// Turn a rule off; repeatable (`cchist rules` lists them).
    #[arg(long = "disable", value_name = "RULE")]
    pub disable: Vec<String>,
    /// Turn on a rule that is off by default; repeatable.
    #[arg(long = "enable", value_name = "RULE")]
    pub enable: Vec<String>,
    /// Run only these built-in rules; repeatable.
    #[arg(long = "only", value_name = "RULE")]
    pub only: Vec<String>,
    /// Key for pseudonyms and fingerprints (else CCHIST_REDACT_KEY).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Values that are secrets wherever they occur: one a line, or a dotenv file such as the
    /// project's real `.env` (its values). Never printed.
    #[arg(long, value_name = "FILE")]
    pub known_values: Option<PathBuf>,
}

/// `cchist redact`.
#[derive(Args, Debug)]
pub struct RedactArgs {
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
    /// Rule selection.
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Replace with [REDACTED:<rule>:<8 hex>]: a keyed hash (CCHIST_REDACT_KEY or --key-file),
    /// the same for the same secret in every file.
    #[arg(long)]
    pub pseudonymize: bool,
    /// Take the redact options from the first `redact` stage of this pipeline file (flags add
    /// to them).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// List the rules and exit.
    #[arg(long)]
    pub list_rules: bool,
}

/// The options of the first `redact` stage of a pipeline file.
pub fn options_from_pipeline(path: &Path) -> anyhow::Result<RedactOptions> {
    // Validate the whole file first: errors name its line and key.
    cchist::engine::config::load(path)?;
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: toml::Table = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
    let stages = doc
        .get("stage")
        .and_then(|s| s.as_array())
        .cloned()
        .unwrap_or_default();
    for st in stages {
        let Some(mut t) = st.as_table().cloned() else {
            continue;
        };
        if t.get("type").and_then(|v| v.as_str()) == Some("redact") {
            t.remove("type");
            return cchist::stages::options(t)
                .map_err(|e| anyhow::anyhow!("{}: redact stage: {e}", path.display()));
        }
    }
    bail!("{}: has no `redact` stage", path.display())
}

/// Options from an optional pipeline file plus command-line flags.
pub fn build_options(
    config: Option<&Path>,
    rules: &RuleArgs,
    pseudonymize: bool,
) -> anyhow::Result<RedactOptions> {
    let mut o = match config {
        Some(p) => options_from_pipeline(p)?,
        None => RedactOptions::default(),
    };
    o.rules.disable.extend(rules.disable.iter().cloned());
    o.rules.enable.extend(rules.enable.iter().cloned());
    if !rules.only.is_empty() {
        o.rules.only = Some(rules.only.clone());
    }
    o.pseudonymize |= pseudonymize;
    if rules.key_file.is_some() {
        o.key_file = rules.key_file.clone();
    }
    if rules.known_values.is_some() {
        o.known_values_file = rules.known_values.clone();
    }
    Ok(o)
}

pub fn run(args: RedactArgs) -> anyhow::Result<ExitStatus> {
    if args.list_rules {
        return super::rules::print(false, false, super::args::Format::Text);
    }
    let opts = build_options(args.config.as_deref(), &args.rules, args.pseudonymize)?;
    let redactor =
        std::sync::Arc::new(Redactor::new(&opts).map_err(|e| anyhow::anyhow!("redact: {e}"))?);
    let stage = Redact::new(redactor.clone(), false);
    let pipeline = Pipeline::new(vec![Box::new(stage)], OnInvalid::Keep, "redact".into());
    super::plan::execute(pipeline, &args.io)
}
