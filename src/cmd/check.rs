//! `cchist check [PATH…]`: report secrets without changing anything (rule, file, line, JSON
//! path and a keyed fingerprint; never the secret). Exit 1 when anything is found.
//!
//! `cchist check --pipeline FILE` with no paths validates the pipeline file alone.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use cchist::error::ExitStatus;
use cchist::pipeline::{OnInvalid, Pipeline};
use cchist::runner::{self, Mode, RunOptions};
use cchist::stages::redact::{redact_text_file, Redact, Redactor};
use cchist::stages::Finding;
use cchist::walk::Input;
use clap::Args;
use serde_json::json;

use super::redact::{build_options, tool_results, RuleArgs};
use crate::cli::Format;

/// `cchist check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Transcript files or folders (walked for *.jsonl). None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// A pipeline file: validated (alone, when no paths are given); its first `redact` stage's
    /// options (rules, custom rules, allowlist) are used for the scan.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,
    /// Rule selection.
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Only walk files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Worker threads (default: all cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
}

pub fn run(args: CheckArgs) -> anyhow::Result<ExitStatus> {
    if let (Some(p), true) = (&args.pipeline, args.paths.is_empty()) {
        let file = cchist::config::load(p)?;
        let names: Vec<&str> = file.pipeline.stages.iter().map(|s| s.name()).collect();
        eprintln!(
            "cchist: {}: valid pipeline ({} stages: {})",
            p.display(),
            names.len(),
            names.join(", ")
        );
        return Ok(ExitStatus::Ok);
    }
    let config = match &args.pipeline {
        Some(p) => {
            let has_redact = cchist::config::load(p)?
                .pipeline
                .stages
                .iter()
                .any(|s| s.name() == "redact");
            has_redact.then_some(p.as_path())
        }
        None => None,
    };
    let opts = build_options(config, &args.rules, false)?;
    let redactor =
        std::sync::Arc::new(Redactor::new(&opts).map_err(|e| anyhow::anyhow!("check: {e}"))?);
    let pipeline = Pipeline::new(
        vec![Box::new(Redact::new(redactor.clone(), true))],
        OnInvalid::Keep,
        "check".into(),
    );
    let walk = super::common::inputs(&args.paths, &args.include, &args.exclude)?;
    let opts = RunOptions {
        mode: Mode::DryRun,
        jobs: args.jobs,
    };
    let outcomes = runner::run_all(&pipeline, &walk.inputs, &opts);

    let mut status = ExitStatus::Ok;
    let mut files = Vec::new();
    let mut by_rule: BTreeMap<String, usize> = BTreeMap::new();
    let (mut total, mut with) = (0usize, 0usize);
    let mut out = std::io::stdout().lock();
    let mut emit = |name: &str, findings: &[Finding], out: &mut dyn Write| -> std::io::Result<()> {
        if findings.is_empty() {
            return Ok(());
        }
        with += 1;
        total += findings.len();
        for f in findings {
            *by_rule.entry(f.rule.clone()).or_default() += 1;
            if args.format == Format::Text {
                let at = f
                    .path
                    .as_deref()
                    .map(|p| format!(" at {p}"))
                    .unwrap_or_default();
                let fp = f.fingerprint.as_deref().unwrap_or("-");
                writeln!(
                    out,
                    "{name}:{}: {}: {}{at} (fingerprint {fp})",
                    f.line, f.rule, f.message
                )?;
            }
        }
        Ok(())
    };
    let mut scanned = 0usize;
    for o in &outcomes {
        let name = o.input.origin().to_string();
        match &o.result {
            Ok(r) => {
                scanned += 1;
                emit(&name, &r.findings, &mut out)?;
                files.push(json!({"file": name, "findings": r.findings}));
            }
            Err(e) => {
                status = ExitStatus::Error;
                eprintln!("cchist: error: {e}");
                files.push(json!({"file": name, "error": e.to_string()}));
            }
        }
        // The whole tool outputs kept beside a session.
        if let Input::File { path, .. } = &o.input {
            for txt in tool_results(path) {
                let name = txt.display().to_string();
                match redact_text_file(&redactor, &txt, true) {
                    Ok(r) => {
                        scanned += 1;
                        let findings: Vec<Finding> = r
                            .findings
                            .iter()
                            .map(|(rule, line, fp)| Finding {
                                rule: rule.clone(),
                                line: *line,
                                uuid: None,
                                path: None,
                                fingerprint: Some(fp.clone()),
                                message: cchist::stages::redact::rules::find(rule)
                                    .map_or_else(|| rule.clone(), |r| r.title.to_string()),
                            })
                            .collect();
                        emit(&name, &findings, &mut out)?;
                        files.push(json!({"file": name, "findings": findings}));
                    }
                    Err(e) => {
                        status = ExitStatus::Error;
                        eprintln!("cchist: error: {name}: {e}");
                        files.push(json!({"file": name, "error": e.to_string()}));
                    }
                }
            }
        }
    }
    if args.format == Format::Json {
        let doc = json!({
            "files": files,
            "summary": {"files": scanned, "files_with_findings": with, "findings": total, "by_rule": by_rule},
        });
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
    } else if total == 0 {
        eprintln!("cchist: no secrets found in {scanned} file(s)");
    } else {
        let rules: Vec<String> = by_rule.iter().map(|(r, n)| format!("{r} {n}")).collect();
        eprintln!(
            "cchist: {total} secret(s) in {with} of {scanned} file(s): {}",
            rules.join(", ")
        );
    }
    if total > 0 && status == ExitStatus::Ok {
        status = ExitStatus::Findings;
    }
    Ok(status)
}
