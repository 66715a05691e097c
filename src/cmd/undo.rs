//! `cchist undo`: restore the newest backup an in-place edit left.

use cchist::error::ExitStatus;
use clap::Args;

use super::target::SessionArgs;

/// `cchist undo` arguments.
#[derive(Args, Debug)]
pub struct UndoArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Restore even when the session looks live.
    #[arg(long)]
    pub force: bool,
}

pub fn run(a: UndoArgs) -> anyhow::Result<ExitStatus> {
    let s = a.target.resolve()?;
    let used = cchist::claude::rewrite::undo(&s, a.force)?;
    eprintln!("{}: restored from {}", s.path.display(), used.display());
    Ok(ExitStatus::Ok)
}
