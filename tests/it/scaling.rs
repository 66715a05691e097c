//! Cost grows linearly with input: each shape that once made a stage walk the file again per
//! record is run at 1× and 8× its size, and the 8× run must take at most 20× as long (linear
//! is 8×, quadratic 64×). Relative timing within one test, best of three runs each, so a slow
//! or busy machine moves both sides alike; `tests/scaling_inputs` builds the inputs and
//! `benches/scaling.rs` reports the full 1×/2×/4×/8× curve.

#[path = "../scaling_inputs/mod.rs"]
pub(crate) mod scaling_inputs;

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use cchist::io::framing;

use cchist::stages::summarize::digest_body;
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use scaling_inputs as gen;
use scaling_inputs::{pipeline, run};

/// Largest accepted time ratio for 8× the input.
const MAX_RATIO: f64 = 20.0;

fn best_of_three(f: &mut dyn FnMut()) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// Time `work` on `make(base)` and `make(8 * base)`; fail when the ratio is past [`MAX_RATIO`].
fn assert_linear(name: &str, base: usize, make: fn(usize) -> String, work: &dyn Fn(&[u8])) {
    // One measurement at a time: tests run on parallel threads, and two timed runs sharing
    // the cores would skew each other's figures.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let small = make(base);
    let big = make(8 * base);
    work(small.as_bytes()); // warm-up: lazily built rules, allocator pages
                            // Other tests share the cores: a burst of load during one side can skew one measurement,
                            // so a ratio past the bound is measured again (up to three times). A quadratic walk is
                            // past it every time (64× at 8×), so retries do not hide one.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let t1 = best_of_three(&mut || work(small.as_bytes()));
        let t8 = best_of_three(&mut || work(big.as_bytes()));
        let ratio = t8.as_secs_f64() / t1.as_secs_f64().max(1e-6);
        eprintln!("{name}: 1× {t1:?}, 8× {t8:?}, ratio {ratio:.1}");
        if ratio <= MAX_RATIO {
            return;
        }
        seen.push(format!("{ratio:.1}× ({t1:?} → {t8:?})"));
    }
    panic!(
        "{name}: 8× the input took {} the time: something walks the input again per record",
        seen.join(", then ")
    );
}

fn assert_pipeline_linear(name: &str, spec: &str, base: usize, make: fn(usize) -> String) {
    let p = pipeline(spec);
    assert_linear(name, base, make, &|d| {
        run(&p, d);
    });
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_relink_dangling_parents_is_linear() {
    assert_pipeline_linear(
        "relink, dangling parents",
        "[[stage]]\ntype = \"relink\"\n",
        1500,
        gen::dangling_parents,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_relink_unanswered_tool_calls_is_linear() {
    assert_pipeline_linear(
        "relink, unanswered tool calls",
        "[[stage]]\ntype = \"relink\"\n",
        600,
        gen::unanswered_tool_calls,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_relink_detached_message_pieces_is_linear() {
    assert_pipeline_linear(
        "relink, detached message pieces",
        "[[stage]]\ntype = \"relink\"\n",
        500,
        gen::detached_message_pieces,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_references_into_a_dropped_run_are_linear() {
    assert_pipeline_linear(
        "drop-tool-noise, references into a dropped run",
        "[[stage]]\ntype = \"drop-tool-noise\"\n",
        1000,
        gen::references_into_dropped_run,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_relink_dangling_leaves_after_a_long_sidechain_are_linear() {
    assert_pipeline_linear(
        "relink, dangling last-prompt leaves after a sidechain run",
        "[[stage]]\ntype = \"relink\"\n",
        400,
        gen::dangling_leaves_after_sidechain,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_relink_parent_cycles_is_linear() {
    assert_pipeline_linear(
        "relink, parent 2-cycles",
        "[[stage]]\ntype = \"relink\"\n",
        750,
        gen::parent_two_cycles,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_share_opaque_lines_after_dropped_records_is_linear() {
    assert_pipeline_linear(
        "share, non-object lines after dropped records",
        "@share",
        2000,
        gen::opaque_after_dropped,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_drop_tool_noise_opaque_lines_is_linear() {
    assert_pipeline_linear(
        "drop-tool-noise, non-object lines after dropped records",
        "[[stage]]\ntype = \"drop-tool-noise\"\n",
        2000,
        gen::opaque_after_dropped,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_summarize_range_is_linear() {
    assert_pipeline_linear(
        "summarize-range keep_last = 1",
        "[[stage]]\ntype = \"summarize-range\"\nkeep_last = 1\n",
        500,
        gen::distinct_turns,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_validate_is_linear() {
    assert_linear("validate", 1000, gen::damaged, &|d| {
        cchist::findings::validate::validate(d);
    });
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_hook_digest_is_linear() {
    // What `cchist hook` prints at PreCompact (and SessionStart): the digest of every record.
    assert_linear("PreCompact digest", 3000, gen::distinct_prompts, &|d| {
        let mut s = Session::new(framing::lines(d, 1).map(Record::from_line).collect());
        let all: BTreeSet<usize> = (0..s.records.len()).collect();
        digest_body(&mut s, &all);
    });
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_repair_replayed_history_is_linear() {
    // claude-code#92089: one run of copies whose every original, child and boundary reference
    // is looked up once.
    assert_pipeline_linear(
        "repair, replayed history",
        "@repair",
        600,
        gen::replayed_history,
    );
}

#[test]
#[ignore = "slow: a scaling measurement (8x input, timed)"]
fn slow_repair_subagents_in_main_is_linear() {
    // claude-code#23373: each agent found once, its records gathered in one pass.
    let found = cchist::findings::validate::validate(gen::subagents_in_main(3).as_bytes());
    assert_eq!(
        found
            .iter()
            .filter(|f| f.rule == "subagent-in-main")
            .count(),
        3,
        "{found:?}"
    );
    assert_pipeline_linear(
        "repair, sub-agents in the main file",
        "@repair",
        3000,
        gen::subagents_in_main,
    );
}

/// The same at the size the issue names: 13 MB against 100 MB.
#[test]
#[ignore = "long: 100 MB session of the claude-code#92089 shape"]
fn repair_replayed_history_100mb_is_linear() {
    let len = gen::replayed_history(8 * 13_800).len();
    assert!(len > 100 << 20, "{len} bytes");
    assert_pipeline_linear(
        "repair, replayed history, 100 MB",
        "@repair",
        13_800,
        gen::replayed_history,
    );
}
