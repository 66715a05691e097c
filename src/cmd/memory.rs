//! `cchist memory list|show`: the compaction summaries `cchist hook` saved at PostCompact as
//! project memory (`$CLAUDE_CONFIG_DIR/cchist/memory/<project folder>/`).

use super::print::tell;
use std::path::PathBuf;

use anyhow::bail;
use cchist::claude::memory::{self, Entry};
use cchist::error::ExitStatus;
use clap::{Args, Subcommand};

/// `cchist memory` arguments.
#[derive(Args, Debug)]
pub struct MemoryArgs {
    #[command(subcommand)]
    pub action: MemoryAction,
}

/// `cchist memory` subcommands.
#[derive(Subcommand, Debug)]
pub enum MemoryAction {
    /// List the saved summaries, oldest first.
    List {
        /// Only this project: its folder under projects/ (`-home-dev-app`).
        #[arg(long, value_name = "FOLDER")]
        project: Option<String>,
        #[command(flatten)]
        format: super::args::FormatArgs,
    },
    /// Print one saved summary: the newest, or the newest of a session (id or prefix), or a
    /// file `memory list` named.
    Show {
        /// A session id (or unique prefix), or a saved file's name.
        which: Option<String>,
        /// Only this project: its folder under projects/.
        #[arg(long, value_name = "FOLDER")]
        project: Option<String>,
    },
}

fn entries(project: Option<&str>) -> anyhow::Result<Vec<Entry>> {
    let root = cchist::claude::layout::config_root()?;
    Ok(match project {
        Some(p) => memory::list_project(&root, p),
        None => memory::list(&root),
    })
}

pub fn run(a: MemoryArgs) -> anyhow::Result<ExitStatus> {
    match a.action {
        MemoryAction::List { project, format } => {
            let all = entries(project.as_deref())?;
            if format.json() {
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(&mut out, &all)?;
                std::io::Write::write_all(&mut out, b"\n")?;
                return Ok(ExitStatus::Ok);
            }
            if all.is_empty() {
                super::print::say!(
                    "no saved summaries (install the PostCompact hook: cchist hook install --event PostCompact)"
                );
            }
            for e in &all {
                let bytes = std::fs::metadata(&e.path).map(|m| m.len()).unwrap_or(0);
                tell!("{}  {}  {}  {bytes} bytes", e.project, e.stamp, e.session);
            }
            Ok(ExitStatus::Ok)
        }
        MemoryAction::Show { which, project } => {
            let all = entries(project.as_deref())?;
            let found: Vec<&Entry> = match &which {
                None => all.iter().max_by_key(|e| &e.stamp).into_iter().collect(),
                Some(w) => {
                    let by_file: Vec<&Entry> = all
                        .iter()
                        .filter(|e| e.path.file_name().is_some_and(|n| n == w.as_str()))
                        .collect();
                    if !by_file.is_empty() {
                        by_file
                    } else {
                        let mut ids: Vec<&str> = all
                            .iter()
                            .filter(|e| e.session.starts_with(w.as_str()))
                            .map(|e| e.session.as_str())
                            .collect();
                        ids.dedup();
                        if ids.len() > 1 {
                            bail!(
                                "`{w}` names several sessions ({}); give more of the id",
                                ids.join(", ")
                            );
                        }
                        all.iter()
                            .filter(|e| e.session.starts_with(w.as_str()))
                            .max_by_key(|e| &e.stamp)
                            .into_iter()
                            .collect()
                    }
                }
            };
            let Some(e) = found.first() else {
                bail!(
                    "no saved summary{}; `cchist memory list` shows what is stored",
                    which.map(|w| format!(" for `{w}`")).unwrap_or_default()
                );
            };
            let path: &PathBuf = &e.path;
            let text = std::fs::read_to_string(path)?;
            // Saved redacted; printed through the same guard as every other output.
            tell!("{}", text.trim_end());
            Ok(ExitStatus::Ok)
        }
    }
}
