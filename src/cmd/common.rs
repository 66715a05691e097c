//! What every transforming command shares: expand paths, run the pipeline, report, exit code.

use std::io::Write;

use anyhow::{bail, Context};
use cchist::error::ExitStatus;
use cchist::pipeline::{FileReport, Pipeline};
use cchist::runner::{self, Mode, Outcome, RunOptions};
use cchist::walk::{self, Filters, Input};
use serde_json::json;

use crate::cli::IoArgs;

/// The output mode the arguments ask for.
pub fn mode(io: &IoArgs) -> Mode {
    if io.dry_run {
        Mode::DryRun
    } else if io.in_place {
        Mode::InPlace {
            backup: io.backup.clone(),
            touch: io.touch,
        }
    } else if let Some(d) = &io.out_dir {
        Mode::OutDir(d.clone())
    } else {
        Mode::Stdout
    }
}

/// Expand the path arguments, or fail with a message that says what to do.
pub fn inputs(
    paths: &[std::path::PathBuf],
    include: &[String],
    exclude: &[String],
) -> anyhow::Result<walk::Walk> {
    let filters = Filters::new(include, exclude)?;
    let w = walk::expand(paths, &filters)?;
    for (p, why) in &w.skipped {
        eprintln!("cchist: skipped {}: {why}", p.display());
    }
    Ok(w)
}

/// Run `pipeline` as the I/O arguments say and report; the exit status reflects failures.
pub fn execute(mut pipeline: Pipeline, io: &IoArgs) -> anyhow::Result<ExitStatus> {
    let mode = mode(io);
    if io.json && mode == Mode::Stdout {
        bail!("--json prints a report on stdout, where the transcript goes without --in-place, --out-dir or --dry-run; add one of those");
    }
    let walk = inputs(&io.paths, &io.include, &io.exclude)?;
    if walk.inputs.iter().filter(|i| **i == Input::Stdin).count() > 1 {
        bail!("`-` (stdin) given more than once");
    }
    if mode != Mode::Stdout && mode != Mode::DryRun && walk.inputs.contains(&Input::Stdin) {
        bail!("stdin cannot be written in place or into --out-dir; pass file paths, or drop those flags to write to stdout");
    }
    if mode == Mode::DryRun {
        pipeline.count_invalid = true;
    }
    let opts = RunOptions {
        mode: mode.clone(),
        jobs: io.jobs,
    };
    let outcomes = runner::run_all(&pipeline, &walk.inputs, &opts);
    report(&outcomes, &mode, io.json)
}

/// Print per-file results and return the exit status.
pub fn report(outcomes: &[Outcome], mode: &Mode, as_json: bool) -> anyhow::Result<ExitStatus> {
    let mut failed = 0;
    let mut changed = 0;
    let mut files = Vec::new();
    for o in outcomes {
        let name = o.input.origin().to_string();
        match &o.result {
            Ok(r) => {
                if r.changed {
                    changed += 1;
                }
                if *mode == Mode::DryRun && !as_json {
                    eprintln!("{}", describe(&name, r));
                }
                for (line, why) in &r.invalid_examples {
                    if !as_json && *mode != Mode::Stdout {
                        eprintln!("cchist: {name}:{line}: kept as is: {why}");
                    }
                }
                files.push(json!({"file": name, "ok": true, "report": r}));
            }
            Err(e) => {
                failed += 1;
                if is_closed_output(e) {
                    return Ok(ExitStatus::Ok);
                }
                eprintln!("cchist: error: {e}");
                files.push(json!({"file": name, "ok": false, "error": e.to_string()}));
            }
        }
    }
    if as_json {
        let doc = json!({"files": files, "summary": {"files": outcomes.len(), "changed": changed, "failed": failed}});
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &doc).context("writing the JSON report")?;
        writeln!(out)?;
    } else if *mode != Mode::Stdout && outcomes.len() > 1 {
        let verb = if *mode == Mode::DryRun {
            "would change"
        } else {
            "changed"
        };
        eprintln!(
            "cchist: {} files, {changed} {verb}, {failed} failed",
            outcomes.len()
        );
    }
    Ok(if failed > 0 {
        ExitStatus::Error
    } else {
        ExitStatus::Ok
    })
}

fn is_closed_output(e: &cchist::error::Error) -> bool {
    matches!(e, cchist::error::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// One line per file: what would change.
pub fn describe(name: &str, r: &FileReport) -> String {
    let mut s = format!(
        "{name}: {} records, {} out, {}",
        r.records,
        r.records_out,
        if r.changed {
            "would change"
        } else {
            "unchanged"
        }
    );
    if r.invalid_lines > 0 {
        s += &format!(", {} invalid lines kept", r.invalid_lines);
    }
    for (stage, st) in &r.stages {
        s += &format!(
            "; {stage}: {} changed, {} dropped, {} added",
            st.changed, st.dropped, st.added
        );
    }
    for (k, v) in &r.counters {
        s += &format!("; {k}: {v}");
    }
    s
}
