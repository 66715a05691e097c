//! One module per subcommand, each with `run(args) -> anyhow::Result<ExitStatus>`.

pub mod apply;
pub mod check;
mod common;
pub mod drop_tool_noise;
pub mod edit;
pub mod history;
pub mod hook;
pub mod ls;
pub mod redact;
pub mod relink;
pub mod rules;
mod run;
pub mod summarize;
pub mod target;
pub mod undo;
mod validate;

use cchist::error::ExitStatus;

use crate::cli::Command;

/// Run the chosen command.
pub fn dispatch(cmd: Command) -> anyhow::Result<ExitStatus> {
    match cmd {
        Command::Run(a) => run::run(a),
        Command::Validate(a) => validate::run(a),
        Command::Ls(a) => ls::run(a),
        Command::History(a) => history::run(a),
        Command::Apply(a) => apply::run(a),
        Command::Undo(a) => undo::run(a),
        Command::Hook(a) => hook::run(a),
        Command::Relink(a) => relink::run(a),
        Command::DropToolNoise(a) => drop_tool_noise::run(a),
        Command::SummarizeRange(a) => summarize::run(a),
        Command::Redact(a) => redact::run(a),
        Command::Check(a) => check::run(a),
        Command::Rules(a) => rules::run(a),
    }
}
