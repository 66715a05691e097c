//! `cchist summarize-range [PATH…]`: replace a range of turns or steps with one summary.

use anyhow::anyhow;
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::ExitStatus;
use cchist::stages::summarize::{SummarizeOptions, SummarizeRange};
use clap::{ArgGroup, Args};

use super::args::IoArgs;

/// `cchist summarize-range` arguments.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("range").required(true).multiple(true).args(["from", "to", "turns", "keep_last", "steps", "keep_last_steps", "fit"])))]
pub struct SummarizeArgs {
    /// First record of the range (its whole step, or turn head, is taken).
    #[arg(long, value_name = "UUID", conflicts_with_all = ["turns", "keep_last", "steps", "keep_last_steps", "fit"])]
    pub from: Option<String>,
    /// Last record of the range (its whole step, or turn head, is taken).
    #[arg(long, value_name = "UUID", conflicts_with_all = ["turns", "keep_last", "steps", "keep_last_steps", "fit"])]
    pub to: Option<String>,
    /// Turn numbers as `history list` prints them: N, A-B or A..B (inclusive), A.., ..B, or a
    /// list that joins up (`3,4-6`).
    #[arg(long, value_name = "RANGE", conflicts_with_all = ["keep_last", "steps", "keep_last_steps", "fit"])]
    pub turns: Option<String>,
    /// Summarize everything before the last N turns.
    #[arg(long, value_name = "N", conflicts_with_all = ["steps", "keep_last_steps", "fit"])]
    pub keep_last: Option<usize>,
    /// Step numbers as `history list --steps` prints them, in the grammar of --turns; a range
    /// may cross turns.
    #[arg(long, value_name = "RANGE", conflicts_with_all = ["keep_last_steps", "fit"])]
    pub steps: Option<String>,
    /// Summarize every step before the last N (the first prompt stays).
    #[arg(long, value_name = "N", conflicts_with = "fit")]
    pub keep_last_steps: Option<usize>,
    /// Summarize the oldest steps (the first prompt stays) until the conversation rebuilt on
    /// resume is estimated under TOKENS (JSON bytes sent / 4, images 1,600 each); prints the
    /// estimate before and after.
    #[arg(long, value_name = "TOKENS")]
    pub fit: Option<u64>,
    /// The summary text (default: a built-in digest of the range).
    #[arg(long, visible_aliases = ["with", "content"], value_name = "TEXT", conflicts_with = "command")]
    pub text: Option<String>,
    /// Shell command that reads the range as JSONL on stdin and prints the summary.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Seconds the --command may run.
    #[arg(long, value_name = "SECS", requires = "command")]
    pub timeout: Option<u64>,
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
}

pub fn run(args: SummarizeArgs) -> anyhow::Result<ExitStatus> {
    let opts = SummarizeOptions {
        from: args.from,
        to: args.to,
        turns: args.turns,
        keep_last: args.keep_last,
        steps: args.steps,
        keep_last_steps: args.keep_last_steps,
        fit: args.fit,
        fit_reserve: None,
        text: args.text,
        command: args.command,
        timeout_secs: args.timeout,
    };
    let stage = SummarizeRange::new(opts).map_err(|e| {
        anyhow!(e.for_flag(|key| (key == "timeout_secs").then(|| "--timeout".to_string())))
    })?;
    let pipeline = Pipeline::new(
        vec![Box::new(stage)],
        OnInvalid::Keep,
        "summarize-range".into(),
    );
    super::plan::execute(pipeline, &args.io)
}
