//! Command-line arguments (clap derive). Every file-processing command shares [`IoArgs`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Transform Claude Code session transcripts safely and fast.
///
/// Exit codes: 0 success, 1 findings (check, validate), 2 error.
#[derive(Parser, Debug)]
#[command(name = "cchist", version, about, max_term_width = 100)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a pipeline file over transcripts.
    Run(RunArgs),
    /// Report structural defects: invalid lines, dangling parents, unpaired tool calls, …
    Validate(ValidateArgs),
    /// List projects and sessions under $CLAUDE_CONFIG_DIR (default ~/.claude).
    Ls(crate::cmd::ls::LsArgs),
    /// List, show and edit the turns of one session.
    History(crate::cmd::history::HistoryArgs),
    /// Apply an operations document (replace/delete/insert turns) to one session, all or nothing.
    Apply(crate::cmd::apply::ApplyArgs),
    /// Restore the newest backup of a session that an in-place edit left.
    Undo(crate::cmd::undo::UndoArgs),
    /// Run as a Claude Code hook (JSON on stdin), or install/uninstall cchist's hooks.
    Hook(crate::cmd::hook::HookArgs),
    /// Make every uuid reference resolve; repair dangling parents, cycles, unpaired tool calls.
    Relink(crate::cmd::relink::RelinkArgs),
    /// Drop progress/bookkeeping records, cap tool output, replace images, drop tool calls.
    DropToolNoise(crate::cmd::drop_tool_noise::DropToolNoiseArgs),
    /// Replace a range of turns with one summary turn.
    SummarizeRange(crate::cmd::summarize::SummarizeArgs),
    /// Replace secrets (keys, tokens, passwords, private keys) with [REDACTED:<rule>].
    Redact(crate::cmd::redact::RedactArgs),
    /// Report secrets without changing anything (exit 1 when any is found); with
    /// --pipeline FILE and no paths, validate a pipeline file.
    Check(crate::cmd::check::CheckArgs),
    /// List the secret rules of `redact` and `check`.
    Rules(crate::cmd::rules::RulesArgs),
}

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
    /// Print the per-file report as JSON on stdout (with --dry-run, --in-place or --out-dir).
    #[arg(long)]
    pub json: bool,
    /// Process everything under the Claude Code config folder ($CLAUDE_CONFIG_DIR, default
    /// ~/.claude): every session and sub-agent transcript, the tool-results/*.txt files beside
    /// them, and history.jsonl. With --in-place, live sessions are skipped unless --force.
    #[arg(long)]
    pub all: bool,
    /// With --all: also process sessions that look live (written in the last minute or open
    /// in a running claude).
    #[arg(long, requires = "all")]
    pub force: bool,
    /// Process this session (id or unique prefix, under $CLAUDE_CONFIG_DIR/projects).
    #[arg(short = 's', long, value_name = "ID")]
    pub session: Option<String>,
    /// Write the result as a new session beside the original (fresh session id, companion
    /// folder copied), leave the original untouched, and print `claude --resume <new id>`.
    #[arg(long, conflicts_with_all = ["in_place", "out_dir", "dry_run", "all"])]
    pub fork: bool,
}

/// `cchist run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pipeline file (TOML), or the name of a shipped one (identity, scrub, share, …).
    #[arg(short, long, value_name = "FILE|NAME")]
    pub pipeline: String,
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
}

/// Report format.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable lines `file:line: rule: message`.
    Text,
    /// One JSON document.
    Json,
}

/// `cchist validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Transcript files or folders. None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only walk files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
}
