//! `cchist relink [PATH…]`: make every reference resolve; repair damaged files.

use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::ExitStatus;
use cchist::stages::relink::{Relink, RelinkOptions};
use clap::Args;

use super::args::IoArgs;

/// `cchist relink` arguments.
#[derive(Args, Debug)]
pub struct RelinkArgs {
    /// Leave tool pairing alone (no removal of orphan tool_result blocks, no synthetic results
    /// for unanswered tool_use blocks).
    #[arg(long)]
    pub no_tool_pairs: bool,
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
}

pub fn run(args: RelinkArgs) -> anyhow::Result<ExitStatus> {
    let stage = Relink::new(RelinkOptions {
        tool_pairs: !args.no_tool_pairs,
        ..RelinkOptions::default()
    });
    let pipeline = Pipeline::new(vec![Box::new(stage)], OnInvalid::Keep, "relink".into());
    super::plan::execute(pipeline, &args.io)
}
