//! Helpers for the tests that drive the real Claude Code CLI (`tests/claude/`).
#![allow(dead_code)]

pub mod claude;
pub mod conversation;
pub mod mock_api;
pub mod tui;

pub use claude::*;
pub use conversation::*;
#[allow(unused_imports)]
pub use mock_api::{check_shape, Block, MockApi, Request, Turn};
