//! `cchist run --pipeline FILE [PATH…]`: run a pipeline file.

use cchist::engine::config;
use cchist::error::ExitStatus;

use crate::cli::RunArgs;

pub fn run(args: RunArgs) -> anyhow::Result<ExitStatus> {
    let file = config::load_spec(&args.pipeline)?;
    super::common::execute(file.pipeline, &args.io)
}
