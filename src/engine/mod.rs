//! Running stages: the pipeline over one input, the runner over many, and the pipeline file
//! that configures both.

pub mod config;
pub mod diff;
pub mod pipeline;
pub mod runner;
pub mod trace;
