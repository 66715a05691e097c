//! Claude Code's folders: where sessions live and which files make up one ([`layout`]),
//! walking path arguments ([`walk`]), rewriting a session in place, as a fork, or back
//! ([`rewrite`]), and running as a hook ([`hook`]).

pub mod hook;
pub mod layout;
pub mod rewrite;
pub mod walk;
