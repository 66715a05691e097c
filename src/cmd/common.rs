//! What every transforming command shares: expand paths, run the pipeline, report, exit code.

use std::io::Write;

use anyhow::{bail, Context};
use cchist::claude::walk::{self, Filters, Input};
use cchist::engine::pipeline::{FileReport, Pipeline};
use cchist::engine::runner::{self, Mode, Outcome, RunOptions};
use cchist::error::ExitStatus;
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
    let started = std::time::SystemTime::now();
    let mut paths = io.paths.clone();
    if let Some(id) = &io.session {
        let projects =
            cchist::claude::layout::projects_dir(&cchist::claude::layout::config_root()?);
        paths.push(cchist::claude::layout::find_by_id(&projects, id)?.path);
    }
    if io.fork {
        return fork(&pipeline, &paths);
    }
    let mode = mode(io);
    if io.all {
        return all(pipeline, io, mode, started);
    }
    if io.json && mode == Mode::Stdout {
        bail!("--json prints a report on stdout, where the transcript goes without --in-place, --out-dir or --dry-run; add one of those");
    }
    let walk = inputs(&paths, &io.include, &io.exclude)?;
    if matches!(mode, Mode::InPlace { .. }) {
        report_leftovers(&walk.leftovers, started);
    }
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
    report(&outcomes, &mode, io.json, &[])
}

/// Remove the temp files killed runs left where this in-place run works, and say so.
pub fn report_leftovers(leftovers: &[std::path::PathBuf], started: std::time::SystemTime) {
    use cchist::io::output::Leftover;
    for (p, what) in cchist::io::output::remove_leftovers(leftovers, started) {
        match what {
            Leftover::Removed => eprintln!(
                "cchist: removed {}: temp file of an interrupted run",
                p.display()
            ),
            Leftover::Kept(why) => eprintln!("cchist: left {}: {why}", p.display()),
            Leftover::Failed(e) => eprintln!(
                "cchist: could not remove {} (temp file of an interrupted run): {e}",
                p.display()
            ),
        }
    }
}

/// `--all`: every transcript, companion text file and history.jsonl under the config root.
fn all(
    mut pipeline: Pipeline,
    io: &IoArgs,
    mode: Mode,
    started: std::time::SystemTime,
) -> anyhow::Result<ExitStatus> {
    use cchist::claude::layout;
    let root = layout::config_root()?;
    let projects = layout::projects_dir(&root);
    let mut walk = inputs(std::slice::from_ref(&projects), &io.include, &io.exclude)
        .with_context(|| format!("walking {}", projects.display()))?;
    walk.inputs
        .extend(cchist::claude::walk::text_companions(&projects));
    let history = root.join("history.jsonl");
    if history.is_file() {
        walk.inputs.push(Input::File {
            path: history,
            rel: "history.jsonl".into(),
        });
    }
    if matches!(mode, Mode::InPlace { .. }) {
        report_leftovers(&walk.leftovers, started);
    }
    if mode == Mode::DryRun {
        pipeline.count_invalid = true;
    }
    // Live sessions: Claude Code is appending to them; leave them (and their companions) alone.
    let mut skipped = Vec::new();
    if matches!(mode, Mode::InPlace { .. }) && !io.force {
        let mut verdicts: std::collections::HashMap<std::path::PathBuf, Option<String>> =
            Default::default();
        walk.inputs.retain(|inp| {
            let Input::File { path, .. } = inp else {
                return true;
            };
            let Some(session) = owning_session(&projects, path) else {
                return true;
            };
            let live = verdicts
                .entry(session.path.clone())
                .or_insert_with(|| layout::liveness(&session))
                .clone();
            match live {
                Some(why) => {
                    skipped.push((path.clone(), why));
                    false
                }
                None => true,
            }
        });
    }
    for (p, why) in &skipped {
        eprintln!(
            "cchist: skipped {} (live session: {why}; --force to process it anyway)",
            p.display()
        );
    }
    let opts = RunOptions {
        mode: mode.clone(),
        jobs: io.jobs,
    };
    let outcomes = runner::run_all(&pipeline, &walk.inputs, &opts);
    let status = report(&outcomes, &mode, io.json, &skipped)?;
    if !io.json {
        eprint!("{}", summary_table(&totals(&outcomes, skipped.len())));
    }
    Ok(status)
}

/// The main session a file under `projects` belongs to: `<p>/<id>.jsonl` itself, or the
/// session whose companion folder holds it (`<p>/<id>/subagents/…`, `<p>/<id>/tool-results/…`).
fn owning_session(
    projects: &std::path::Path,
    path: &std::path::Path,
) -> Option<cchist::claude::layout::SessionFile> {
    let rel = path.strip_prefix(projects).ok()?;
    let mut parts = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned());
    let project = parts.next()?;
    let first = parts.next()?;
    let id = first.strip_suffix(".jsonl").unwrap_or(&first).to_string();
    let project_dir = projects.join(&project);
    let file = project_dir.join(format!("{id}.jsonl"));
    file.is_file()
        .then_some(cchist::claude::layout::SessionFile {
            id,
            path: file,
            project_dir,
        })
}

/// Totals of a run (the `summary` of `--json`, the table of a bulk run).
#[derive(Debug, Default, serde::Serialize)]
pub struct Totals {
    /// Inputs processed (skipped ones not counted).
    pub files: usize,
    /// Inputs whose output differs.
    pub changed: usize,
    /// Inputs left alone because their session looks live.
    pub skipped: usize,
    /// Inputs that failed.
    pub failed: usize,
    /// Records read.
    pub records: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Per stage, in pipeline order.
    pub stages: Vec<(String, cchist::stages::StageStats)>,
}

/// Add up the outcomes.
pub fn totals(outcomes: &[Outcome], skipped: usize) -> Totals {
    let mut t = Totals {
        files: outcomes.len(),
        skipped,
        ..Totals::default()
    };
    for o in outcomes {
        let Ok(r) = &o.result else {
            t.failed += 1;
            continue;
        };
        t.records += r.records;
        t.bytes_in += r.bytes_in;
        t.bytes_out += r.bytes_out;
        t.changed += usize::from(r.changed);
        for (name, st) in &r.stages {
            match t.stages.iter_mut().find(|(n, _)| n == name) {
                Some((_, acc)) => {
                    acc.changed += st.changed;
                    acc.dropped += st.dropped;
                    acc.added += st.added;
                }
                None => t.stages.push((name.clone(), *st)),
            }
        }
    }
    t
}

/// The end-of-run table of a bulk run.
pub fn summary_table(t: &Totals) -> String {
    let mut s = String::new();
    let mut row = |k: &str, v: String| s += &format!("{k:<28} {v:>16}\n");
    row("files", t.files.to_string());
    row("  changed", t.changed.to_string());
    row("  skipped (live)", t.skipped.to_string());
    row("  failed", t.failed.to_string());
    row("records", t.records.to_string());
    row("bytes in", t.bytes_in.to_string());
    row("bytes out", t.bytes_out.to_string());
    for (name, st) in &t.stages {
        row(
            &format!("{name} (changed/dropped/added)"),
            format!("{}/{}/{}", st.changed, st.dropped, st.added),
        );
    }
    s
}

/// `--fork`: run over exactly one session file and write the result as a new session.
fn fork(pipeline: &Pipeline, paths: &[std::path::PathBuf]) -> anyhow::Result<ExitStatus> {
    let [path] = paths else {
        bail!("--fork writes one new session: give exactly one session (--session ID or one file)");
    };
    if !path.is_file() {
        bail!("{}: --fork needs a session file", path.display());
    }
    let s = cchist::claude::layout::SessionFile {
        id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.clone(),
        project_dir: path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| ".".into(), Into::into),
    };
    let opts = cchist::claude::rewrite::MutateOptions {
        fork: true,
        ..Default::default()
    };
    let (report, written) = cchist::claude::rewrite::mutate(&s, pipeline, opts)?;
    if let cchist::claude::rewrite::Written::Forked { id, path: new } = written {
        eprintln!(
            "{}",
            describe(&s.path.display().to_string(), &report).replace("would change", "changed")
        );
        eprintln!(
            "{}: left untouched; new session written to {}",
            s.path.display(),
            new.display()
        );
        println!("claude --resume {id}");
    }
    Ok(ExitStatus::Ok)
}

/// Print per-file results and return the exit status.
pub fn report(
    outcomes: &[Outcome],
    mode: &Mode,
    as_json: bool,
    skipped: &[(std::path::PathBuf, String)],
) -> anyhow::Result<ExitStatus> {
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
                if let Some(n) = r.counters.get("bytes-appended-during-replace") {
                    eprintln!("cchist: {name}: {n} bytes appended while it was replaced were carried over unchanged");
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
        let skipped: Vec<_> = skipped
            .iter()
            .map(|(p, why)| json!({"file": p.display().to_string(), "reason": why}))
            .collect();
        let doc = json!({
            "files": files,
            "skipped": skipped,
            "summary": totals(outcomes, skipped.len()),
        });
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
