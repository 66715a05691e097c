//! `--color auto|always|never` and `NO_COLOR`: whether text output is colored.

use std::io::IsTerminal;
use std::sync::OnceLock;

/// `--color`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// On a terminal, unless the environment sets NO_COLOR (to anything but "").
    Auto,
    /// Always (even into a pipe, and over NO_COLOR).
    Always,
    /// Never.
    Never,
}

static WHEN: OnceLock<When> = OnceLock::new();

/// Set once, from the command line.
pub fn set(w: When) {
    let _ = WHEN.set(w);
}

/// Whether stdout output is colored.
pub fn stdout() -> bool {
    match WHEN.get().copied().unwrap_or(When::Auto) {
        When::Always => true,
        When::Never => false,
        When::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}
