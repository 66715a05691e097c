//! Addressing one session: `--session ID` (a unique prefix is enough), `--file PATH`, or
//! `--project DIR --latest`.

use std::path::PathBuf;

use anyhow::bail;
use cchist::claude::layout::{self, SessionFile};
use clap::Args;

/// Which session a command works on.
#[derive(Args, Debug, Clone)]
pub struct SessionArgs {
    /// Session id, or a unique prefix of one, under $CLAUDE_CONFIG_DIR/projects (default ~/.claude).
    #[arg(short, long, value_name = "ID", conflicts_with_all = ["file", "project"], add = clap_complete::ArgValueCandidates::new(crate::cmd::complete::sessions))]
    pub session: Option<String>,
    /// A transcript file given by path.
    #[arg(short, long, value_name = "PATH", conflicts_with = "project")]
    pub file: Option<PathBuf>,
    /// The project: its folder under projects/ by name (`-home-dev-webapp`) or path, or the
    /// working directory Claude Code recorded; with --latest, its most recent session.
    #[arg(
        long,
        value_name = "DIR",
        requires = "latest",
        allow_hyphen_values = true
    )]
    pub project: Option<PathBuf>,
    /// With --project: take the most recently modified session.
    #[arg(long)]
    pub latest: bool,
}

impl SessionArgs {
    /// Resolve to a session file.
    pub fn resolve(&self) -> anyhow::Result<SessionFile> {
        if let Some(f) = &self.file {
            if !f.is_file() {
                bail!("{}: no such transcript file", f.display());
            }
            return Ok(SessionFile::from_path(f));
        }
        let projects = layout::projects_dir(&config_root()?);
        if let Some(id) = &self.session {
            return Ok(layout::find_by_id(&projects, id)?);
        }
        if let Some(dir) = &self.project {
            return Ok(layout::latest_for_project(&projects, dir)?);
        }
        bail!("say which session: --session ID, --file PATH, or --project DIR --latest")
    }
}

/// The config root, which must exist: a mistyped `CLAUDE_CONFIG_DIR` is an error naming it,
/// not an empty listing.
pub fn config_root() -> anyhow::Result<PathBuf> {
    let root = layout::config_root()?;
    if !root.is_dir() {
        let from = if std::env::var_os("CLAUDE_CONFIG_DIR").is_some_and(|d| !d.is_empty()) {
            "CLAUDE_CONFIG_DIR"
        } else {
            "HOME (no CLAUDE_CONFIG_DIR set)"
        };
        bail!(
            "no Claude Code config folder at {} (from {from}): check CLAUDE_CONFIG_DIR — Claude Code keeps its sessions under ~/.claude unless it is set",
            root.display()
        );
    }
    Ok(root)
}
