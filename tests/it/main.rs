//! Integration tests that need no Claude Code CLI, in one binary (one link of the crate): the
//! commands run as a user would, the stages on the corpus, and the reliability checks.
//!
//! `common` runs the binary and finds corpus files (`tests/corpus`, plus `../shared/corpus`
//! when present). The real-CLI resume tests live in `tests/claude/`.

#[path = "../common/mod.rs"]
mod common;

mod bulk;
mod check_policy;
mod classify;
mod cli_habits;
mod context;
mod data_safety;
mod diff;
mod drop_tool_noise;
mod fork_companions;
mod gitleaks_examples;
mod hook;
mod identity;
mod import;
mod known_secrets;
mod links;
mod newcomer;
mod redact;
mod redact_encodings;
mod redact_props;
mod redact_recall;
mod reliability_append;
mod reliability_common;
mod reliability_crash;
mod reliability_hostile;
mod reliability_leaks;
mod reliability_perms;
mod reliability_prints;
mod reliability_round3;
mod reliability_structure;
mod reliability_writes;
mod relink;
mod relink_props;
mod repair;
mod scaling;
mod secret_names;
mod secret_names_check;
mod session_files;
mod sessions;
mod stdin_session;
mod steps_props;
mod summarize;
mod test_tree;
mod validate;
