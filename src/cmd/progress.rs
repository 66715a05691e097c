//! The progress bar of bulk runs: files, bytes, rate and ETA on stderr, when stderr is a
//! terminal and `-q` was not given; nothing otherwise (logs and pipes stay clean).

use std::io::IsTerminal;
use std::sync::Arc;

use cchist::io::input::Input;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar over `inputs` (by bytes), or `None` when there is nothing worth showing: one
/// input, `quiet`, or stderr not a terminal.
pub fn bar(inputs: &[Input], quiet: bool) -> Option<ProgressBar> {
    if quiet || inputs.len() < 2 || !std::io::stderr().is_terminal() {
        return None;
    }
    let sizes: Vec<u64> = inputs.iter().map(size).collect();
    let bar = ProgressBar::with_draw_target(
        Some(sizes.iter().sum()),
        ProgressDrawTarget::stderr_with_hz(10),
    );
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} files {wide_bar} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} ETA {eta}",
        )
        .expect("a valid template")
        .progress_chars("=> "),
    );
    bar.set_message(format!("0/{}", inputs.len()));
    Some(bar)
}

/// The `on_done` callback that advances `bar` by each finished input.
pub fn on_done(bar: &ProgressBar, total: usize) -> cchist::engine::runner::OnDone {
    let bar = bar.clone();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    Arc::new(move |inp: &Input| {
        let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        bar.inc(size(inp));
        bar.set_message(format!("{n}/{total}"));
    })
}

fn size(inp: &Input) -> u64 {
    match inp {
        Input::File { path, .. } => std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
        Input::Stdin => 0,
    }
}

/// Runs `pipeline` over `inputs` in `mode` on `jobs` workers, with a [`bar`] (unless `quiet`)
/// that is cleared when all are done.
pub fn run_with_bar(
    pipeline: &cchist::engine::pipeline::Pipeline,
    inputs: &[Input],
    mode: cchist::engine::runner::Mode,
    jobs: Option<usize>,
    quiet: bool,
    propagate: cchist::engine::runner::Propagate,
) -> Vec<cchist::engine::runner::Outcome> {
    let bar = bar(inputs, quiet);
    let opts = cchist::engine::runner::RunOptions {
        mode,
        jobs,
        on_done: bar.as_ref().map(|b| on_done(b, inputs.len())),
        propagate,
    };
    let outcomes = cchist::engine::runner::run_all(pipeline, inputs, &opts);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    outcomes
}
