//! The command line: the `Command` enum over the subcommands in `cmd/`, and dispatch.
//! `cli` imports `cmd`, never the reverse.

use cchist::error::ExitStatus;
use clap::{Parser, Subcommand};

use crate::cmd;

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
    Run(cmd::run::RunArgs),
    /// Report structural defects: invalid lines, dangling parents, unpaired tool calls, …
    Validate(cmd::validate::ValidateArgs),
    /// List projects and sessions under $CLAUDE_CONFIG_DIR (default ~/.claude).
    Ls(cmd::ls::LsArgs),
    /// List, show and edit the turns of one session.
    History(cmd::history::HistoryArgs),
    /// Apply an operations document (replace/delete/insert turns) to one session, all or nothing.
    Apply(cmd::apply::ApplyArgs),
    /// Restore the newest backup of a session that an in-place edit left.
    Undo(cmd::undo::UndoArgs),
    /// Run as a Claude Code hook (JSON on stdin), or install/uninstall cchist's hooks.
    Hook(cmd::hook::HookArgs),
    /// Make every uuid reference resolve; repair dangling parents, cycles, unpaired tool calls.
    Relink(cmd::relink::RelinkArgs),
    /// Drop progress/bookkeeping records, cap tool output, replace images, drop tool calls.
    DropToolNoise(cmd::drop_tool_noise::DropToolNoiseArgs),
    /// Replace a range of turns or steps (or what a token budget needs) with one summary.
    SummarizeRange(cmd::summarize::SummarizeArgs),
    /// Replace secrets (keys, tokens, passwords, private keys) with [REDACTED:<rule>].
    Redact(cmd::redact::RedactArgs),
    /// Report secrets without changing anything (exit 1 when any is found); with
    /// --pipeline FILE and no paths, validate a pipeline file.
    Check(cmd::check::CheckArgs),
    /// List the secret rules of `redact` and `check`.
    Rules(cmd::rules::RulesArgs),
}

/// Run the chosen command.
pub fn dispatch(command: Command) -> anyhow::Result<ExitStatus> {
    match command {
        Command::Run(a) => cmd::run::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Ls(a) => cmd::ls::run(a),
        Command::History(a) => cmd::history::run(a),
        Command::Apply(a) => cmd::apply::run(a),
        Command::Undo(a) => cmd::undo::run(a),
        Command::Hook(a) => cmd::hook::run(a),
        Command::Relink(a) => cmd::relink::run(a),
        Command::DropToolNoise(a) => cmd::drop_tool_noise::run(a),
        Command::SummarizeRange(a) => cmd::summarize::run(a),
        Command::Redact(a) => cmd::redact::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Rules(a) => cmd::rules::run(a),
    }
}
