//! One module per subcommand, each with `run(args) -> anyhow::Result<ExitStatus>`.

pub mod apply;
pub mod args;
pub mod check;
pub mod color;
pub mod complete;
pub mod context;
pub mod drop_tool_noise;
pub mod edit;
pub mod history;
pub mod hook;
pub mod hook_install;
pub mod import;
pub mod ls;
pub mod memory;
mod plan;
mod print;
mod progress;
pub mod redact;
pub mod relink;
pub mod repair;
pub mod rules;
pub mod run;
pub mod statusline;
pub mod summarize;
pub mod target;
pub mod undo;
pub mod validate;
