//! Shared helpers for integration tests that need the real Claude Code CLI.
//!
//! Include with `mod support;`. Not every test binary uses every helper.
#![allow(dead_code)]

pub mod claude;
pub mod conversation;
pub mod mock_api;

pub use claude::*;
pub use conversation::*;
#[allow(unused_imports)]
pub use mock_api::{check_shape, Block, MockApi, Request, Turn};

use std::path::{Path, PathBuf};

/// `<CARGO_MANIFEST_DIR>/../shared/corpus/<rel>` (CI checks `shared/` out beside the repo);
/// panics if it is missing.
pub fn corpus_file(rel: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/corpus")
        .join(rel);
    assert!(p.is_file(), "corpus file missing: {}", p.display());
    p
}
