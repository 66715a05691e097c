//! One module per subcommand, each with `run(args) -> anyhow::Result<ExitStatus>`.

mod common;
pub mod history;
pub mod ls;
mod run;
pub mod target;
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
    }
}
