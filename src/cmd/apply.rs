//! `cchist apply OPS.json`: apply an operations document to one session, all or nothing.

use std::path::PathBuf;

use anyhow::Context;
use cchist::error::ExitStatus;
use cchist::stages::edit::OpsDoc;
use clap::Args;

use super::edit::WriteArgs;
use super::target::SessionArgs;

/// `cchist apply` arguments.
#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The operations document (`-` for stdin):
    /// {"action":"modify_history","operations":[{"type":"replace"|"delete"|"insert",…}]}
    pub ops: PathBuf,
    #[command(flatten)]
    pub target: SessionArgs,
    #[command(flatten)]
    pub write: WriteArgs,
}

pub fn run(a: ApplyArgs) -> anyhow::Result<ExitStatus> {
    let text = if a.ops.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
            .context("reading the operations document from stdin")?
    } else {
        std::fs::read_to_string(&a.ops).with_context(|| format!("reading {}", a.ops.display()))?
    };
    let doc = OpsDoc::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", a.ops.display()))?;
    let session = a.target.resolve()?;
    super::edit::run_ops(&session, doc.operations, &a.write)
}
