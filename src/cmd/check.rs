//! `cchist check [PATH…]`: report secrets without changing anything (rule, file, line, JSON
//! path and a keyed fingerprint; never the secret). Exit 1 when anything is found.
//!
//! `cchist check --pipeline FILE` with no paths validates the pipeline file alone.

use super::print::say;
use std::io::Write;
use std::path::PathBuf;

use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::engine::runner::Mode;
use cchist::error::ExitStatus;
use cchist::io::input::Input;
use cchist::io::input::Treatment;
use cchist::stages::redact::{Redact, Redactor};
use clap::Args;
use serde_json::json;

use super::redact::{build_options, RuleArgs};
use cchist::findings::report::{self, FileFindings};

/// `check --format`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckFormat {
    /// Lines `file:line: rule: message at path (fingerprint …)`.
    Text,
    /// One JSON document.
    Json,
    /// SARIF 2.1.0.
    Sarif,
}

/// `cchist check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Transcript files or folders (walked for *.jsonl). None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Report format (SARIF 2.1.0 for GitHub code scanning).
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
    /// The same as --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// A pipeline file with a `[check]` table (or a shipped name such as `ci-policy`): which
    /// rules must find nothing, size limits, forbidden tools and record types, chain validity.
    #[arg(long, value_name = "FILE|NAME", add = clap_complete::ArgValueCandidates::new(crate::cmd::complete::pipelines))]
    pub policy: Option<String>,
    /// Known findings (a file written by --write-baseline) are not reported.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write the current findings as a baseline to FILE (and exit 0 unless an error occurs).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// A pipeline file: validated (alone, when no paths are given); its first `redact` stage's
    /// options (rules, custom rules, allowlist) are used for the scan.
    #[arg(long, value_name = "FILE")]
    pub pipeline: Option<PathBuf>,
    /// Rule selection.
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Which transcripts: a session, all, include/exclude globs.
    #[command(flatten)]
    pub scan: super::args::ScanArgs,
    /// Print nothing but errors: the exit status says whether anything was found (no report
    /// in text form, no progress bar).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Worker threads (default: all cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// How far a secret found in one file is reported in the others (as an echo): over the
    /// files of its session, or over every session of its project.
    #[arg(long, value_name = "SCOPE", value_enum, default_value_t = super::args::PropagateArg::Session)]
    pub propagate: super::args::PropagateArg,
}

pub fn run(mut args: CheckArgs) -> anyhow::Result<ExitStatus> {
    if args.json {
        args.format = CheckFormat::Json;
    }
    super::print::set_quiet(args.quiet);
    if let Some(path) = &args.write_baseline {
        baseline::may_replace(path)?;
    }
    if let (Some(p), true) = (&args.pipeline, args.paths.is_empty()) {
        let file = cchist::engine::config::load(p)?;
        let names: Vec<&str> = file.pipeline.stages.iter().map(|s| s.name()).collect();
        say!(
            "cchist: {}: valid pipeline ({} stages: {})",
            p.display(),
            names.len(),
            names.join(", ")
        );
        return Ok(ExitStatus::Ok);
    }
    let key = baseline_key(&mut args)?;
    let config = match &args.pipeline {
        Some(p) => {
            let has_redact = cchist::engine::config::load(p)?
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
    let policy = match &args.policy {
        Some(spec) => {
            let file = cchist::engine::config::load_spec(spec)?;
            Some(file.check.ok_or_else(|| {
                anyhow::anyhow!("{spec}: has no [check] table; see filters/ci-policy.toml for one")
            })?)
        }
        None => None,
    };
    let mut paths =
        super::plan::scan_paths(&args.paths, args.scan.session.as_deref(), args.scan.all)?;
    let implicit_stdin = paths.is_empty();
    if implicit_stdin {
        paths.extend(super::plan::no_path_input(true)?);
    }
    let mut walk = super::plan::inputs(&paths, &args.scan.include, &args.scan.exclude)?;
    // A session's secrets may sit in any of its files: sub-agents, metadata, tool-results and
    // cchist's own backups are checked with it.
    super::plan::whole_sessions(&mut walk);
    let copies = add_copies(&mut walk.inputs);
    if args.scan.all {
        // The hook log quotes why runs failed, which may be a command's error output, and
        // hook-state/ holds queued history-manager documents: scanned as text with everything
        // else cchist keeps under the config folder.
        let root = cchist::claude::layout::config_root()?;
        for path in cchist::claude::hook_log::kept_files(&root) {
            let rel = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            walk.inputs.push(cchist::claude::layout::input(path, rel));
        }
    }
    let mut outcomes = super::progress::run_with_bar(
        &pipeline,
        &walk.inputs,
        Mode::DryRun,
        args.jobs,
        args.quiet,
        args.propagate.into(),
    );

    // The names the report gives the backups and copies it scanned.
    let backup_names: std::collections::BTreeSet<String> = outcomes
        .iter()
        .filter(|o| matches!(&o.input, Input::File { path, .. } if copies.contains(path)))
        .map(|o| o.input.origin().to_string())
        .collect();
    if implicit_stdin
        && outcomes
            .iter()
            .any(|o| o.input == Input::Stdin && o.result.as_ref().is_ok_and(|r| r.bytes_in == 0))
    {
        return Err(super::plan::empty_stdin());
    }
    let mut status = ExitStatus::Ok;
    let mut files: Vec<FileFindings> = Vec::new();
    let mut errors: Vec<(String, String)> = Vec::new();
    let mut scanned = 0usize;
    for o in &mut outcomes {
        let name = o.input.origin().to_string();
        match &mut o.result {
            Ok(r) => {
                scanned += 1;
                if let Some(note) = super::print::stream_note(&name, r) {
                    say!("{note}");
                }
                // Taken, not copied: a stream of a million secrets held them twice.
                let mut findings = std::mem::take(&mut r.findings);
                if let (
                    Some(p),
                    Input::File {
                        path, treatment, ..
                    },
                ) = (&policy, &o.input)
                {
                    findings.retain(|f| p.denies_rule(&f.rule));
                    // Structural policies concern transcripts; a session's other files
                    // (text, metadata, backups) are scanned for secrets only.
                    if *treatment == Treatment::Records {
                        match cchist::io::input::open(path) {
                            Ok(f) => findings.extend(p.evaluate(&f.data)),
                            Err(e) => errors.push((name.clone(), e.to_string())),
                        }
                    }
                    findings.sort_by(|a, b| (a.line, &a.rule).cmp(&(b.line, &b.rule)));
                }
                files.push(FileFindings {
                    file: name,
                    findings,
                });
            }
            Err(e) => errors.push((name, e.to_string())),
        }
    }
    // Printed from here on (never opened): names and messages redacted, as the findings are.
    let errors: Vec<(String, String)> = errors
        .iter()
        .map(|(f, e)| (report::shown_name(f), report::shown_name(e)))
        .collect();
    for (name, e) in &errors {
        status = ExitStatus::Error;
        say!("cchist: error: {name}: {e}");
    }
    // Inputs the walk passed over (links are never followed) were not scanned: the scan is
    // incomplete, so it must not look clean.
    let skipped: Vec<(String, String)> = walk
        .skipped
        .iter()
        .map(|(p, why)| {
            (
                report::shown_name(&p.display().to_string()),
                report::shown_name(why),
            )
        })
        .collect();
    if !skipped.is_empty() {
        status = ExitStatus::Error;
        say!(
            "cchist: error: {} not scanned (listed above); the scan is incomplete — pass the real files to scan them",
            super::print::count(skipped.len(), "input", "inputs")
        );
    }
    let known = match &args.baseline {
        Some(b) => baseline::read(b)?,
        None => Default::default(),
    };
    for f in &mut files {
        let file = f.file.clone();
        f.findings
            .retain(|x| !known.contains(&baseline::key(&file, x)));
    }
    if let Some(path) = &args.write_baseline {
        baseline::write(path, &files)?;
        let n: usize = files.iter().map(|f| f.findings.len()).sum();
        say!(
            "cchist: wrote {} to {}, fingerprints keyed by {}",
            super::print::count(n, "known finding", "known findings"),
            path.display(),
            key.as_deref().unwrap_or("?")
        );
        return Ok(status);
    }
    files.retain(|f| !f.findings.is_empty() || args.format != CheckFormat::Sarif);
    let total: usize = files.iter().map(|f| f.findings.len()).sum();
    if total > 0 && status == ExitStatus::Ok {
        status = ExitStatus::Findings;
    }
    // The exit status is the findings', whoever reads the report: `check --json | head -1`
    // closing the pipe early must not turn exit 1 into 0.
    let written = (|| -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        match args.format {
            CheckFormat::Text => {
                if !super::print::quiet() {
                    let mut w = std::io::BufWriter::new(&mut out);
                    report::write_text(&files, super::color::stdout(), &mut w)?;
                    w.flush()?;
                }
                let with = files.iter().filter(|f| !f.findings.is_empty()).count();
                if total == 0 {
                    say!(
                        "cchist: nothing found in {}",
                        super::print::count(scanned, "file", "files")
                    );
                } else {
                    // Counted, not read off the JSON report (a copy of every finding).
                    let rules: Vec<String> = report::by_rule(&files)
                        .into_iter()
                        .map(|(r, n)| format!("{r} {n}"))
                        .collect();
                    say!(
                        "cchist: {} in {with} of {}: {}",
                        super::print::count(total, "finding", "findings"),
                        super::print::count(scanned, "file", "files"),
                        rules.join(", ")
                    );
                    // Findings in backups are what sessions held before an edit: once the
                    // sessions are clean, the backups are the only copies of those secrets.
                    let (mut backups, mut copies, mut in_backups, mut in_copies) = (0, 0, 0, 0);
                    for f in files
                        .iter()
                        .filter(|f| !f.findings.is_empty() && backup_names.contains(&f.file))
                    {
                        if f.file.contains(cchist::io::backup::BACKUP_MARK)
                            || f.file.contains(".cchist-undone.")
                        {
                            backups += 1;
                            in_backups += f.findings.len();
                        } else {
                            copies += 1;
                            in_copies += f.findings.len();
                        }
                    }
                    if backups > 0 {
                        say!(
                            "cchist: {} of them in {}: they keep what the sessions held before an edit, now perhaps the only copies of those secrets — `cchist backups list` lists them, `cchist backups prune --older-than 0s` removes them once no `cchist undo` needs them",
                            super::print::count(in_backups, "finding", "findings"),
                            super::print::count(backups, "cchist backup", "cchist backups")
                        );
                    }
                    if copies > 0 {
                        say!(
                            "cchist: {} of them in {} of a session (`--backup=SUFFIX` names; `cchist backups list` lists them): remove the ones you no longer need",
                            super::print::count(in_copies, "finding", "findings"),
                            super::print::count(copies, "copy", "copies")
                        );
                    }
                }
            }
            CheckFormat::Json => {
                files.retain(|f| !f.findings.is_empty() || outcomes.len() == 1);
                let mut doc = report::json(&files);
                doc["errors"] = json!(errors
                    .iter()
                    .map(|(f, e)| json!({"file": f, "error": e}))
                    .collect::<Vec<_>>());
                doc["summary"]["scanned"] = json!(scanned);
                doc["skipped"] = json!(skipped
                    .iter()
                    .map(|(f, why)| json!({"file": f, "reason": why}))
                    .collect::<Vec<_>>());
                doc["summary"]["skipped"] = json!(skipped.len());
                // Which of the files are backups or copies of a session, not sessions.
                doc["backups"] = json!(files
                    .iter()
                    .filter(|f| backup_names.contains(&f.file))
                    .map(|f| report::shown_name(&f.file))
                    .collect::<Vec<_>>());
                out.write_all(super::print::shown_json(&doc)?.as_bytes())?;
            }
            CheckFormat::Sarif => {
                let mut log = report::sarif(&files, &describe_rule);
                // Inputs not scanned and files that failed are the run's notifications: a
                // consumer sees the scan was incomplete, not a clean result.
                let note = |f: &str, text: String| {
                    json!({
                        "level": "error",
                        "message": {"text": text},
                        "locations": [{"physicalLocation": {"artifactLocation": {"uri": report::uri(f)}}}],
                    })
                };
                let notes: Vec<_> = skipped
                    .iter()
                    .map(|(f, why)| note(f, format!("not scanned: {why}")))
                    .chain(
                        errors
                            .iter()
                            .map(|(f, e)| note(f, format!("not scanned: {e}"))),
                    )
                    .collect();
                log["runs"][0]["invocations"] = json!([{
                    "executionSuccessful": notes.is_empty(),
                    "toolExecutionNotifications": notes,
                }]);
                out.write_all(super::print::shown_json(&log)?.as_bytes())?;
            }
        }
        Ok(())
    })();
    match written {
        Err(e) if is_closed_pipe(&e) => Ok(status),
        Err(e) => Err(e),
        Ok(()) => Ok(status),
    }
}

/// The key a baseline's fingerprints are made with, so a baseline travels (a laptop's
/// baseline must match in CI): `--key-file`, else `CCHIST_REDACT_KEY`, else the key file
/// beside the baseline (`<baseline>.key`; `--write-baseline` creates it, 0600). Only without
/// a baseline is the per-machine key used. Returns what the key is, for the messages.
fn baseline_key(args: &mut CheckArgs) -> anyhow::Result<Option<String>> {
    if let Some(k) = &args.rules.key_file {
        return Ok(Some(format!("the key in {}", k.display())));
    }
    let env = cchist::stages::redact::KEY_ENV;
    if std::env::var_os(env).is_some_and(|v| !v.is_empty()) {
        return Ok(Some(env.to_string()));
    }
    let Some(base) = args.write_baseline.as_ref().or(args.baseline.as_ref()) else {
        return Ok(None);
    };
    let mut name = base.as_os_str().to_owned();
    name.push(".key");
    let key = PathBuf::from(name);
    let mut created = "";
    if !key.exists() {
        if args.write_baseline.is_none() {
            say!(
                "cchist: note: no {} beside the baseline and no {env}: fingerprints are keyed by this machine's key, so a baseline written elsewhere matches nothing (write baselines with {env} set, or keep the .key file --write-baseline writes beside them)",
                key.display()
            );
            return Ok(Some("this machine's key".into()));
        }
        write_new_key(&key)?;
        created = " (created; keep it with the baseline, or set CCHIST_REDACT_KEY in CI, so the baseline matches elsewhere)";
    }
    let what = format!("the key in {}{created}", key.display());
    args.rules.key_file = Some(key);
    Ok(Some(what))
}

/// A new 32-byte random key as hex in `path`, mode 0600, never over an existing file.
fn write_new_key(path: &std::path::Path) -> anyhow::Result<()> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut raw = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .map_err(|e| anyhow::anyhow!("reading /dev/urandom for a baseline key: {e}"))?;
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{hex}\n").as_bytes()).and(f.sync_all()))
        .map_err(|e| anyhow::anyhow!("writing the baseline key {}: {e}", path.display()))
}

/// Whether writing the report failed because its reader went away.
fn is_closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}

/// Add the other copies of each transcript among `inputs` ([`backup::copies`]: what
/// `--backup=SUFFIX` and a forced undo left beside it) right after it, each file once; the
/// paths of every backup or copy among the inputs, cchist's own included. They hold the
/// session as it was, so a scan that passed over them would report clean over secrets that
/// are still on disk.
///
/// [`backup::copies`]: cchist::io::backup::copies
fn add_copies(inputs: &mut Vec<Input>) -> std::collections::BTreeSet<PathBuf> {
    let mut seen: std::collections::HashSet<PathBuf> = inputs
        .iter()
        .filter_map(|i| match i {
            Input::File { path, .. } => Some(path.clone()),
            Input::Stdin => None,
        })
        .collect();
    let mut backups = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(inputs.len());
    for inp in std::mem::take(inputs) {
        let Input::File { path, rel, .. } = &inp else {
            out.push(inp);
            continue;
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.contains(cchist::io::backup::BACKUP_MARK) {
            backups.insert(path.clone());
        }
        let is_transcript = name.ends_with(".jsonl");
        let copies = if is_transcript {
            cchist::io::backup::copies(path)
        } else {
            Vec::new()
        };
        let rel = rel.clone();
        out.push(inp);
        for c in copies {
            backups.insert(c.clone());
            if seen.insert(c.clone()) {
                let rel = rel.with_file_name(c.file_name().unwrap_or_default());
                out.push(cchist::claude::layout::input(c, rel));
            }
        }
    }
    *inputs = out;
    backups
}

/// A rule's one-line description: redact rules from the registry, the others from their
/// producers' docs.
fn describe_rule(rule: &str) -> String {
    if let Some(r) = cchist::stages::redact::rules::find(rule) {
        return r.title.to_string();
    }
    match rule {
        "max-transcript-bytes" => "Transcript larger than the policy allows",
        "max-tool-output-bytes" => "Tool output larger than the policy allows",
        "forbidden-tool" => "Call of a tool the policy forbids",
        "forbidden-record-type" => "Record of a type the policy forbids",
        "invalid-json" | "truncated-last-line" | "missing-final-newline" | "not-an-object" => {
            "Line that Claude Code cannot load"
        }
        "dangling-parent" | "dangling-reference" | "parent-cycle" | "duplicate-uuid" => {
            "Broken conversation chain (resume loses history)"
        }
        "unpaired-tool-use" | "orphan-tool-result" => {
            "Unpaired tool call (the API rejects the session)"
        }
        "split-message" => "Assistant message split apart",
        other => other,
    }
    .to_string()
}

/// Known findings: `--baseline` reads them, `--write-baseline` writes them.
mod baseline {
    use std::collections::BTreeSet;
    use std::path::Path;

    use anyhow::Context;
    use cchist::findings::report::FileFindings;

    /// A finding's identity across runs: the keyed fingerprint of a secret (wherever it
    /// appears), else rule + file + record (uuid or line).
    /// The file and uuid are written to the baseline as reports show them
    /// ([`report::shown_name`]): a baseline is an output too.
    ///
    /// [`report::shown_name`]: cchist::findings::report::shown_name
    pub fn key(file: &str, f: &cchist::findings::Finding) -> String {
        use cchist::findings::report::shown_name;
        match &f.fingerprint {
            Some(fp) => format!("{}:{fp}", f.rule),
            None => format!(
                "{}:{}:{}",
                f.rule,
                shown_name(file),
                shown_name(&f.uuid.clone().unwrap_or_else(|| f.line.to_string()))
            ),
        }
    }

    pub fn read(path: &Path) -> anyhow::Result<BTreeSet<String>> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading baseline {}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a cchist baseline (JSON)", path.display()))?;
        Ok(v["known"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect())
    }

    /// `--write-baseline PATH` replaces only a baseline (or nothing): a transcript or any
    /// other file named there by mistake (`--write-baseline SESSION.jsonl`) would be lost.
    /// Checked before the scan, so that nothing is read for a run that cannot write.
    pub fn may_replace(path: &Path) -> anyhow::Result<()> {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(());
        };
        let is_baseline = || {
            std::fs::read(path)
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .is_some_and(|v| v.get("version").is_some() && v["known"].is_array())
        };
        if meta.file_type().is_symlink() || (meta.is_file() && is_baseline()) {
            return Ok(());
        }
        anyhow::bail!(
            "{}: not a cchist baseline, so --write-baseline will not replace it (nothing was scanned or written); name a new file, or remove this one if it is an old baseline",
            path.display()
        )
    }

    pub fn write(path: &Path, files: &[FileFindings]) -> anyhow::Result<()> {
        let known: BTreeSet<String> = files
            .iter()
            .flat_map(|f| f.findings.iter().map(move |x| key(&f.file, x)))
            .collect();
        let doc = serde_json::json!({"version": 1, "known": known});
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        // Replaced atomically: a link there is replaced, never written through.
        let attrs = cchist::io::replace::Attrs::mode(0o644);
        if cchist::io::replace::write_file_over_link(path, text.as_bytes(), &attrs)
            .with_context(|| format!("writing baseline {}", path.display()))?
        {
            super::super::print::say!(
                "cchist: note: {} was a symbolic link; it was replaced by the baseline (what it pointed to is left as it was)",
                path.display()
            );
        }
        Ok(())
    }
}
