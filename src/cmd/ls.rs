//! `cchist ls`: projects and sessions under the config root.

use std::io::Write;
use std::path::PathBuf;

use cchist::claude::layout::{self, SessionFile};
use cchist::error::ExitStatus;
use cchist::io::{framing, input};
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use cchist::transcript::turns;
use clap::Args;
use serde::Serialize;

/// `cchist ls` arguments.
#[derive(Args, Debug)]
pub struct LsArgs {
    /// Only the sessions of this project: its folder under projects/ by name
    /// (`-home-dev-webapp`) or path, or the working directory Claude Code recorded.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    pub project: Option<PathBuf>,
    /// Report format: `json` prints an array of sessions (see README for the fields).
    #[command(flatten)]
    pub format: super::args::FormatArgs,
}

/// One listed session (the `--json` shape is documented in the README).
#[derive(Serialize)]
struct Row {
    id: String,
    file: String,
    project_dir: String,
    project: Option<String>,
    records: usize,
    turns: usize,
    bytes: u64,
    first_prompt: String,
    modified: Option<String>,
    live: Option<String>,
}

pub fn run(args: LsArgs) -> anyhow::Result<ExitStatus> {
    let projects = layout::projects_dir(&layout::config_root()?);
    let mut sessions = layout::list_sessions(&projects)?;
    if let Some(folder) = args
        .project
        .as_deref()
        .and_then(|p| layout::named_project_folder(&projects, p))
    {
        sessions.retain(|s| s.project_dir == folder);
    } else if let Some(p) = &args.project {
        let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
        let want = abs.to_string_lossy().into_owned();
        let folder = layout::project_folder_name(&want);
        sessions.retain(|s| {
            s.project_dir
                .file_name()
                .is_some_and(|n| n == folder.as_str())
                || layout::first_cwd(&s.path).as_deref() == Some(want.as_str())
        });
    }
    let rows: Vec<Row> = sessions.iter().filter_map(|s| describe(s).ok()).collect();
    let mut out = std::io::stdout().lock();
    if args.format.json() {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitStatus::Ok);
    }
    if rows.is_empty() {
        eprintln!("cchist: no sessions under {}", projects.display());
        return Ok(ExitStatus::Ok);
    }
    let mut last_project = None;
    for r in &rows {
        if last_project != Some(&r.project_dir) {
            writeln!(out, "{}", r.project.as_deref().unwrap_or(&r.project_dir))?;
            last_project = Some(&r.project_dir);
        }
        writeln!(
            out,
            "  {}  {:>5} rec {:>4} turns {:>9}  {}{}  {}",
            r.id,
            r.records,
            r.turns,
            super::print::human_bytes(r.bytes),
            r.modified.as_deref().unwrap_or("?"),
            if r.live.is_some() { "  LIVE" } else { "" },
            r.first_prompt
        )?;
    }
    Ok(ExitStatus::Ok)
}

fn describe(s: &SessionFile) -> anyhow::Result<Row> {
    let f = input::open(&s.path)?;
    let records: Vec<Record> = framing::lines(&f.data, 1).map(Record::from_line).collect();
    let n = records.len();
    let mut session = Session::new(records);
    let turns = session.turns();
    let first_prompt = turns
        .first()
        .and_then(|t| {
            session.records[t.prompt]
                .value()
                .ok()
                .map(turns::message_text)
        })
        .map(|t| turns::shorten(&t, 60))
        .unwrap_or_default();
    let modified = f.meta.modified().ok().map(cchist::io::clock::rfc3339);
    Ok(Row {
        id: s.id.clone(),
        file: s.path.display().to_string(),
        project_dir: s.project_dir.display().to_string(),
        project: layout::first_cwd(&s.path),
        records: n,
        turns: turns.len(),
        bytes: f.meta.len(),
        first_prompt,
        modified,
        live: layout::liveness(s),
    })
}
