//! `cchist run --pipeline FILE [PATH…]`: run a pipeline file.

use cchist::engine::config;
use cchist::error::ExitStatus;

use clap::Args;

use super::args::IoArgs;

/// `cchist run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The pipeline file (TOML), or the name of a shipped one (identity, scrub, share, …).
    #[arg(short, long, value_name = "FILE|NAME", add = clap_complete::ArgValueCandidates::new(crate::cmd::complete::pipelines))]
    pub pipeline: String,
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitStatus> {
    let file = config::load_spec(&args.pipeline)?;
    super::plan::execute(file.pipeline, &args.io)
}
