//! Recall and look-alike precision of the default `redact` stage on the labeled generator in
//! `recall_gen` (issue #14): every positive kind × position × encoding, every look-alike class
//! × position × encoding, run through a real pipeline. Prints the per-kind table; asserts
//! recall ≥ 98 %, look-alikes kept byte-identical ≥ 99 %, every output line valid JSON.

#[path = "../recall_gen/mod.rs"]
mod recall_gen;

use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::stages::redact::{Redact, RedactOptions, Redactor};
use recall_gen::{encodings, kinds, leaks, lookalikes, positions, visible_text, Gen};
use serde_json::Value;

fn pipeline() -> Pipeline {
    let stage = Redact::new(Redactor::new(&RedactOptions::default()).unwrap(), false);
    Pipeline::new(vec![Box::new(stage)], OnInvalid::Keep, "redact".into())
}

fn redact_lines(p: &Pipeline, lines: &[String]) -> Vec<String> {
    let input = lines.join("\n") + "\n";
    let text = String::from_utf8(crate::common::run_in_memory(p, input.as_bytes(), false)).unwrap();
    let v: Vec<String> = text.lines().map(str::to_string).collect();
    assert_eq!(v.len(), lines.len(), "redact keeps every record");
    v
}

/// A token that names its own kind: it can be found alone (as an object key, say).
fn self_identifying(secret: &str) -> bool {
    [
        "ghp_",
        "github_pat_",
        "glpat-",
        "sk-",
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "xoxb-",
        "AIza",
        "eyJ",
        "SG.",
        "npm_",
        "hf_",
        "key-",
    ]
    .iter()
    .any(|p| secret.starts_with(p))
}

#[derive(Default, Clone, Copy)]
struct Score {
    n: usize,
    ok: usize,
}

fn pct(s: Score) -> f64 {
    100.0 * s.ok as f64 / s.n.max(1) as f64
}

/// Prints one table of the report: each name with its case count and share of `ok` cases.
fn print_table<'a>(
    heading: &str,
    measure: &str,
    names: impl Iterator<Item = &'a str>,
    scores: &[Score],
) {
    println!("\n{heading:<34} {:>6} {measure:>8}", "cases");
    for (name, s) in names.zip(scores) {
        println!("{name:<34} {:>6} {:>7.1}%", s.n, pct(*s));
    }
}

#[test]
#[ignore = "slow: recall measured over the labeled generator (1 min)"]
fn slow_recall_and_lookalike_precision_on_the_labeled_generator() {
    let mut g = Gen(0x5eed_1234_abcd_ef01);
    let (kinds, looks, positions, encodings) = (kinds(), lookalikes(), positions(), encodings());
    assert!(kinds.len() + looks.len() >= 50, "at least 50 kinds");

    // Positives.
    let mut lines = Vec::new();
    let mut labels = Vec::new(); // (kind, position, encoding, secret)
    for (ki, (_, make)) in kinds.iter().enumerate() {
        for (pi, (pname, pos)) in positions.iter().enumerate() {
            for (ei, (_, enc)) in encodings.iter().enumerate() {
                let planted = make(&mut g);
                if *pname == "object key" && !self_identifying(&planted.secret) {
                    continue;
                }
                let rec = pos(&planted.snippet, &planted.secret);
                lines.push(enc(&rec, &planted.secret));
                labels.push((ki, pi, ei, planted.secret));
            }
        }
    }
    let p = pipeline();
    let out = redact_lines(&p, &lines);
    let mut by_kind = vec![Score::default(); kinds.len()];
    let mut by_pos = vec![Score::default(); positions.len()];
    let mut by_enc = vec![Score::default(); encodings.len()];
    let mut misses = Vec::new();
    for ((ki, pi, ei, secret), o) in labels.iter().zip(&out) {
        let v: Value = serde_json::from_str(o).expect("output lines are valid JSON");
        let mut text = String::new();
        visible_text(&v, &mut text);
        let caught = !leaks(&text, secret) && !leaks(o, secret);
        for s in [&mut by_kind[*ki], &mut by_pos[*pi], &mut by_enc[*ei]] {
            s.n += 1;
            s.ok += usize::from(caught);
        }
        if !caught {
            misses.push(format!(
                "{} / {} / {}",
                kinds[*ki].0, positions[*pi].0, encodings[*ei].0
            ));
        }
    }
    // Idempotent: a second run changes nothing.
    assert!(
        redact_lines(&p, &out) == out,
        "a second run changed something"
    );

    // Look-alikes.
    let mut lines = Vec::new();
    let mut labels = Vec::new();
    for (li, (_, make)) in looks.iter().enumerate() {
        for (pi, (pname, pos)) in positions.iter().enumerate() {
            if *pname == "object key" {
                continue;
            }
            for (_, enc) in &encodings {
                let snippet = make(&mut g);
                let rec = pos(&snippet, "");
                lines.push(enc(&rec, &snippet));
                labels.push(li);
                let _ = pi;
            }
        }
    }
    let out2 = redact_lines(&p, &lines);
    let mut by_look = vec![Score::default(); looks.len()];
    let mut flagged = Vec::new();
    for ((li, inp), o) in labels.iter().zip(&lines).zip(&out2) {
        by_look[*li].n += 1;
        if inp == o {
            by_look[*li].ok += 1;
        } else {
            flagged.push(format!("{}: {o}", looks[*li].0));
        }
    }

    print_table(
        "positive kind",
        "recall",
        kinds.iter().map(|k| k.0),
        &by_kind,
    );
    print_table("position", "recall", positions.iter().map(|k| k.0), &by_pos);
    print_table("encoding", "recall", encodings.iter().map(|k| k.0), &by_enc);
    print_table(
        "look-alike class",
        "kept",
        looks.iter().map(|k| k.0),
        &by_look,
    );
    let total = by_kind.iter().fold(Score::default(), |a, s| Score {
        n: a.n + s.n,
        ok: a.ok + s.ok,
    });
    let kept = by_look.iter().fold(Score::default(), |a, s| Score {
        n: a.n + s.n,
        ok: a.ok + s.ok,
    });
    println!(
        "\nrecall {:.2}% ({} / {}), look-alikes kept {:.2}% ({} / {}); {} positive kinds, {} look-alike classes",
        pct(total),
        total.ok,
        total.n,
        pct(kept),
        kept.ok,
        kept.n,
        kinds.len(),
        looks.len()
    );
    for m in misses.iter().take(40) {
        println!("missed: {m}");
    }
    for f in flagged.iter().take(20) {
        println!("flagged: {}", &f[..f.len().min(300)]);
    }
    assert!(pct(total) >= 98.0, "recall {:.2}% < 98%", pct(total));
    assert!(
        pct(kept) >= 99.0,
        "look-alikes kept {:.2}% < 99%",
        pct(kept)
    );
}

/// Where a session repeats a secret bare, with no context a rule could see (#24): the model's
/// text and thinking, an Edit's `old_string`, a `structuredPatch` line, a Bash `echo`.
fn echoes(secret: &str) -> Vec<Value> {
    use serde_json::json;
    let patch: Vec<Value> = secret
        .split('\n')
        .map(|l| Value::from(format!("-{l}")))
        .collect();
    vec![
        json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":format!("done — {secret}")}]},"uuid":"e1"}),
        json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":format!("keep {secret} out of git"),"signature":"c2ln"},{"type":"text","text":"ok"}]},"uuid":"e2"}),
        json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_e3","name":"Edit","input":{"file_path":"/p/a.py","old_string":format!("v = '{secret}'"),"new_string":"v = env()"}}]},"uuid":"e3"}),
        json!({"type":"user","toolUseResult":{"filePath":"/p/a.py","structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":1,"lines":patch}]},"uuid":"e4"}),
        json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_e5","name":"Bash","input":{"command":format!("echo {secret} >> /tmp/run.log")}}]},"uuid":"e5"}),
    ]
}

/// One labeled set: each positive kind planted once in context (every position), then repeated
/// bare in every echo position; the look-alikes share the file.
struct LabeledSet {
    lines: Vec<String>,
    /// (kind, secret, the lines holding a copy)
    cases: Vec<(usize, String, Vec<usize>)>,
    look_lines: Vec<usize>,
}

fn labeled_set(seed: u64) -> LabeledSet {
    let mut g = Gen(seed);
    let (kinds, looks, positions) = (kinds(), lookalikes(), positions());
    let mut lines = Vec::new();
    let mut cases: Vec<(usize, String, Vec<usize>)> = Vec::new();
    for (ki, (_, make)) in kinds.iter().enumerate() {
        for (pname, pos) in &positions {
            let planted = make(&mut g);
            if *pname == "object key" && !self_identifying(&planted.secret) {
                continue;
            }
            let mut at = vec![lines.len()];
            lines.push(pos(&planted.snippet, &planted.secret).to_string());
            for e in echoes(&planted.secret) {
                at.push(lines.len());
                lines.push(e.to_string());
            }
            cases.push((ki, planted.secret, at));
        }
    }
    let mut look_lines = Vec::new();
    for (_, make) in &looks {
        for (pname, pos) in &positions {
            if *pname == "object key" {
                continue;
            }
            look_lines.push(lines.len());
            lines.push(pos(&make(&mut g), "").to_string());
        }
    }
    LabeledSet {
        lines,
        cases,
        look_lines,
    }
}

/// Writes labeled sets for `scripts/peers-recall.sh`, which runs kingfisher, betterleaks and
/// `cchist check` on the same files: `$CCHIST_RECALL_SETS/set-<seed>.jsonl` and, beside it,
/// `set-<seed>.labels.json` (each secret's kind and the 1-based lines of its copies, the
/// look-alike lines). The seeds are not the tests' own: held out from what the rules were
/// tuned on. The labels hold the planted (generated, fake) values.
#[test]
#[ignore = "writes files for scripts/peers-recall.sh; needs CCHIST_RECALL_SETS"]
fn write_labeled_sets_for_the_peer_comparison() {
    let dir = std::env::var_os("CCHIST_RECALL_SETS")
        .map(std::path::PathBuf::from)
        .expect("set CCHIST_RECALL_SETS to the folder the sets go to");
    std::fs::create_dir_all(&dir).unwrap();
    let kinds = kinds();
    for seed in [0x5eed_0000_0000_0a11_u64, 0x5eed_0000_0000_0b22] {
        let set = labeled_set(seed);
        let jsonl = dir.join(format!("set-{seed:x}.jsonl"));
        std::fs::write(&jsonl, set.lines.join("\n") + "\n").unwrap();
        let cases: Vec<Value> = set
            .cases
            .iter()
            .map(|(ki, secret, at)| {
                serde_json::json!({
                    "kind": kinds[*ki].0,
                    "secret": secret,
                    "lines": at.iter().map(|i| i + 1).collect::<Vec<_>>(),
                })
            })
            .collect();
        let labels = serde_json::json!({
            "file": jsonl.file_name().unwrap().to_string_lossy(),
            "cases": cases,
            "lookalike_lines": set.look_lines.iter().map(|i| i + 1).collect::<Vec<_>>(),
        });
        std::fs::write(
            dir.join(format!("set-{seed:x}.labels.json")),
            serde_json::to_vec_pretty(&labels).unwrap(),
        )
        .unwrap();
    }
}

/// Recall with every copy counted: a secret counts as gone only when no copy of it is left
/// anywhere in the output. Look-alikes share the file, so they must stay byte-identical with
/// every one of those values known.
#[test]
#[ignore = "slow: recall measured over the labeled generator"]
fn slow_recall_with_every_copy_counted_and_lookalikes_beside_known_secrets() {
    let kinds = kinds();
    let LabeledSet {
        lines,
        cases,
        look_lines,
    } = labeled_set(0x0ec0_5eed_2024_0001);
    let p = pipeline();
    let out = redact_lines(&p, &lines);
    let mut by_kind = vec![Score::default(); kinds.len()];
    let mut misses = Vec::new();
    for (ki, secret, at) in &cases {
        let gone = at.iter().all(|&i| {
            let v: Value = serde_json::from_str(&out[i]).expect("output lines are valid JSON");
            let mut text = String::new();
            visible_text(&v, &mut text);
            // A key block's BEGIN/END lines are markers, not key material: only its body counts.
            let body: String = secret
                .split('\n')
                .filter(|l| !l.starts_with("-----"))
                .collect::<Vec<_>>()
                .join("\n");
            let secret = if body.is_empty() {
                secret.as_str()
            } else {
                body.as_str()
            };
            !leaks(&text, secret) && !leaks(&out[i], secret)
        });
        by_kind[*ki].n += 1;
        by_kind[*ki].ok += usize::from(gone);
        if !gone {
            misses.push(kinds[*ki].0);
        }
    }
    let kept = look_lines.iter().filter(|&&i| lines[i] == out[i]).count();
    print_table(
        "positive kind, every copy",
        "gone",
        kinds.iter().map(|k| k.0),
        &by_kind,
    );
    let total = by_kind.iter().fold(Score::default(), |a, s| Score {
        n: a.n + s.n,
        ok: a.ok + s.ok,
    });
    let kept_pct = 100.0 * kept as f64 / look_lines.len().max(1) as f64;
    println!(
        "\nevery copy counted: {:.2}% gone ({} / {}), look-alikes kept {kept_pct:.2}% ({kept} / {})",
        pct(total),
        total.ok,
        total.n,
        look_lines.len()
    );
    for m in misses.iter().take(40) {
        println!("missed: {m}");
    }
    assert!(
        pct(total) >= 99.0,
        "every copy counted: {:.2}% < 99%",
        pct(total)
    );
    assert!(kept_pct >= 99.5, "look-alikes kept {kept_pct:.2}% < 99.5%");
}
