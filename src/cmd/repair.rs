//! `cchist repair [PATH… | -s ID | --all]`: the shipped pipeline `repair` (filters/repair.toml):
//! fix what Claude Code itself breaks, with the usual dry-run, diff, in-place and backup.

use cchist::engine::config;
use cchist::error::ExitStatus;
use clap::Args;

use super::args::IoArgs;

/// `cchist repair` arguments.
#[derive(Args, Debug)]
pub struct RepairArgs {
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
}

pub fn run(args: RepairArgs) -> anyhow::Result<ExitStatus> {
    let file = config::load_spec("builtin:repair")?;
    super::plan::execute(file.pipeline, &args.io)
}
