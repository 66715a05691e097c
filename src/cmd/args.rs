//! The flag groups several commands share: inputs and output mode, report format.

use std::path::PathBuf;

use cchist::engine::runner::Mode;
use clap::{Args, ValueEnum};

/// Input and output options shared by every transforming command.
#[derive(Args, Debug, Clone)]
pub struct IoArgs {
    /// Transcript files or folders (walked for *.jsonl). None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Replace each file atomically (temp file, fsync, rename; mode and mtime kept).
    #[arg(short = 'i', long, conflicts_with_all = ["out_dir", "dry_run"])]
    pub in_place: bool,
    /// With --in-place: keep the original as <file><SUFFIX>.
    #[arg(long, value_name = "SUFFIX", requires = "in_place")]
    pub backup: Option<String>,
    /// With --in-place: set the modification time to now instead of keeping it.
    #[arg(long, requires = "in_place")]
    pub touch: bool,
    /// Write outputs under DIR, mirroring paths relative to each argument.
    #[arg(long, value_name = "DIR", conflicts_with = "dry_run")]
    pub out_dir: Option<PathBuf>,
    /// Write nothing; print what would change per file.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Only walk files matching this glob (relative to the folder argument); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Worker threads for multiple files (default: all cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Report format: `json` prints the per-file report as JSON on stdout (with --dry-run,
    /// --in-place or --out-dir).
    #[command(flatten)]
    pub format: FormatArgs,
    /// Process everything under the Claude Code config folder ($CLAUDE_CONFIG_DIR, default
    /// ~/.claude): every session and sub-agent transcript, the tool-results/*.txt files beside
    /// them, and history.jsonl. With --in-place, live sessions are skipped unless --force.
    #[arg(long)]
    pub all: bool,
    /// With --in-place: also write sessions that look live (written in the last minute or
    /// open in a running claude). Without it such files are refused (skipped with --all).
    #[arg(long)]
    pub force: bool,
    /// With --in-place: replace a file that has other hard links anyway. The other names keep
    /// the old content (secrets included); without this flag such a file is refused.
    #[arg(long, requires = "in_place")]
    pub break_hard_links: bool,
    /// Process this session (id or unique prefix, under $CLAUDE_CONFIG_DIR/projects).
    #[arg(short = 's', long, value_name = "ID")]
    pub session: Option<String>,
    /// Write the result as a new session beside the original (fresh session id, companion
    /// folder copied), leave the original untouched, and print `claude --resume <new id>`.
    #[arg(long, conflicts_with_all = ["in_place", "out_dir", "dry_run", "all"])]
    pub fork: bool,
}

impl IoArgs {
    /// Whether the report is JSON (`--format json` or `--json`).
    pub fn json(&self) -> bool {
        self.format.json()
    }

    /// The output mode the arguments ask for.
    pub fn mode(&self) -> Mode {
        if self.dry_run {
            Mode::DryRun
        } else if self.in_place {
            Mode::InPlace {
                backup: self.backup.clone(),
                touch: self.touch,
                break_links: self.break_hard_links,
            }
        } else if let Some(d) = &self.out_dir {
            Mode::OutDir(d.clone())
        } else {
            Mode::Stdout
        }
    }
}

/// `--format text|json`, with `--json` as its alias: the same two flags on every command.
#[derive(Args, Debug, Clone, Default)]
pub struct FormatArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
}

impl FormatArgs {
    /// The format asked for (`--json` wins).
    pub fn get(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
    /// Whether JSON was asked for.
    pub fn json(&self) -> bool {
        self.get() == Format::Json
    }
}

/// Report format.
#[derive(Default, ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable lines `file:line: rule: message`.
    #[default]
    Text,
    /// One JSON document.
    Json,
}
