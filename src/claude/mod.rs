//! Claude Code's folders: where sessions live and which files make up one ([`layout`]),
//! walking path arguments ([`walk`]), rewriting a session in place, as a fork, or back
//! ([`rewrite`]), running as a hook ([`hook`], within the [`fence`], its log and state in [`hook_log`], what it does per event in [`hook_handle`], a history manager run by [`hook_command`], compaction summaries kept as project [`memory`]), and cchist's
//! entries in `settings.json` ([`settings`]).

pub mod fence;
pub mod hook;
pub mod hook_command;
pub mod hook_handle;
pub mod hook_log;
pub mod layout;
pub mod memory;
pub mod rewrite;
pub mod settings;
pub mod walk;
