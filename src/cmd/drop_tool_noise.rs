//! `cchist drop-tool-noise [PATH…]`: drop bookkeeping records, cap tool output, replace images.

use anyhow::anyhow;
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::ExitStatus;
use cchist::stages::drop_tool_noise::{DropToolNoise, DropToolNoiseOptions, DEFAULT_CAP};
use clap::Args;

use super::args::IoArgs;

/// `cchist drop-tool-noise` arguments.
#[derive(Args, Debug)]
pub struct DropToolNoiseArgs {
    /// Keep `progress` records.
    #[arg(long)]
    pub keep_progress: bool,
    /// Do not drop the default bookkeeping types (api-request*, atis-latch, tools-used,
    /// cost-state) and attachments (prompt_snapshot, skill_listing, agent_listing_delta,
    /// deferred_tools_delta).
    #[arg(long)]
    pub no_default_drops: bool,
    /// Also drop records of this `type` (glob); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub drop_type: Vec<String>,
    /// Also drop `attachment` records of this `attachment.type` (glob); repeatable.
    #[arg(long, value_name = "GLOB")]
    pub drop_attachment: Vec<String>,
    /// Cap tool output longer than BYTES (head and tail kept); 0 disables.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_CAP)]
    pub max_tool_output: usize,
    /// Keep base64 images (default: replaced by a text placeholder).
    #[arg(long)]
    pub keep_images: bool,
    /// Keep repeated identical reads of a file (default: only the latest stays).
    #[arg(long)]
    pub no_collapse_reads: bool,
    /// Drop whole tool calls (use + result) of tools matching GLOB, e.g. 'mcp__*'; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub drop_tool: Vec<String>,
    /// With --drop-tool: drop failed calls too (default: calls whose result is an error stay).
    #[arg(long)]
    pub drop_tool_errors: bool,
    /// Input and output.
    #[command(flatten)]
    pub io: IoArgs,
}

pub fn run(args: DropToolNoiseArgs) -> anyhow::Result<ExitStatus> {
    let mut opts = DropToolNoiseOptions::default();
    if args.no_default_drops {
        opts.drop_types.clear();
        opts.drop_attachments.clear();
    }
    opts.drop_types.extend(args.drop_type);
    opts.drop_attachments.extend(args.drop_attachment);
    opts.drop_progress = !args.keep_progress;
    opts.max_tool_output = args.max_tool_output;
    opts.replace_images = !args.keep_images;
    opts.collapse_reads = !args.no_collapse_reads;
    opts.drop_tools = args.drop_tool;
    opts.keep_errors = !args.drop_tool_errors;
    let stage = DropToolNoise::new(opts).map_err(|e| anyhow!(e.for_flag(flag_of)))?;
    let pipeline = Pipeline::new(
        vec![Box::new(stage)],
        OnInvalid::Keep,
        "drop-tool-noise".into(),
    );
    super::plan::execute(pipeline, &args.io)
}

/// The flag that sets an option key, where the names differ.
fn flag_of(key: &str) -> Option<String> {
    let flag = match key {
        "drop_types" => "--drop-type",
        "drop_attachments" => "--drop-attachment",
        "drop_tools" => "--drop-tool",
        _ => return None,
    };
    Some(flag.to_string())
}
