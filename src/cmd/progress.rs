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
    // Ctrl-C in a run that writes files stops it between files: the files being written are
    // finished (atomic replacement, no temp left), the rest untouched, and the caller says
    // how far it got ([`take_interrupted`]). A second Ctrl-C kills as usual.
    let writes = !matches!(
        mode,
        cchist::engine::runner::Mode::Stdout | cchist::engine::runner::Mode::DryRun
    );
    let cancel = writes.then(on_sigint);
    let opts = cchist::engine::runner::RunOptions {
        mode,
        jobs,
        on_done: bar.as_ref().map(|b| on_done(b, inputs.len())),
        propagate,
        cancel,
    };
    let outcomes = cchist::engine::runner::run_all(pipeline, inputs, &opts);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    outcomes
}

/// The flag SIGINT sets, once [`on_sigint`] installed the handler.
static INTERRUPT: std::sync::OnceLock<Arc<std::sync::atomic::AtomicBool>> =
    std::sync::OnceLock::new();

extern "C" fn sigint(_: libc::c_int) {
    if let Some(f) = INTERRUPT.get() {
        f.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // SAFETY: signal() is async-signal-safe; the next Ctrl-C takes the default action.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

/// Installs the SIGINT handler and returns the flag it sets.
fn on_sigint() -> Arc<std::sync::atomic::AtomicBool> {
    let flag = INTERRUPT.get_or_init(Default::default).clone();
    // SAFETY: the handler only stores to an atomic and resets the disposition.
    unsafe {
        libc::signal(
            libc::SIGINT,
            sigint as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    flag
}

/// Removes the outcomes of inputs a Ctrl-C stopped before they started; returns how many.
pub fn take_interrupted(outcomes: &mut Vec<cchist::engine::runner::Outcome>) -> usize {
    let before = outcomes.len();
    outcomes.retain(|o| !cchist::engine::runner::was_interrupted(o));
    before - outcomes.len()
}

/// What to say after a run a Ctrl-C stopped: how far it got and how to go back.
pub fn say_interrupted(done: usize, left: usize, undoable: bool, started: std::time::SystemTime) {
    let back = if undoable {
        format!(
            "undo with `cchist undo --all --since {}`",
            cchist::io::clock::rfc3339(started)
        )
    } else {
        "run it again to process the rest (files already done are unchanged by a second run of the same pipeline)".into()
    };
    super::print::say!(
        "cchist: interrupted after {} ({left} not started, left as they were; none half-written); {back}",
        super::print::count(done, "file", "files")
    );
}
