//! One module per subcommand, each with `run(args) -> anyhow::Result<ExitStatus>`.

pub mod apply;
mod common;
pub mod edit;
pub mod history;
pub mod ls;
mod run;
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
    }
}
