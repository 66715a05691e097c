//! Tests against the real Claude Code CLI (pinned, driven against a local mock of the Messages
//! API by `support`): what cchist writes must resume as the CLI would resume the original.
//! Without the CLI they skip with a note, except under `CI=true`.
//!
//! `corpus_gen` regenerates the sessions under `tests/corpus/generated` (ignored by default).

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod context_compact;
mod corpus_gen;
mod echo_zero;
mod edit_resume;
mod history_resume;
mod hook_cli;
mod hook_manager;
mod hook_resume;
mod import_resume;
mod live_edit;
mod redact_resume;
mod repair_resume;
mod resume;
mod statusline_pty;
mod steps_resume;
