//! Breadth of the default `redact` stage on gitleaks' public rule examples (issue #14).
//!
//! gitleaks (MIT) keeps true-positive and false-positive example strings beside each rule;
//! `scripts/gitleaks-examples.py` extracts the literal ones at a pinned commit into
//! `tests/data/gitleaks/examples.json` (see the README there: the file is generated, not
//! committed). Each example is placed in two transcript records, a `tool_result` content and
//! a Bash command, and run through a real pipeline:
//!
//! - a true positive counts when both records change and every redaction marker covers a
//!   whole token: no letter or digit glued to the marker's left, no token tail (`[\w+/-]` run
//!   holding a letter or digit) glued to its right;
//! - a false positive counts as flagged when either record changes.
//!
//! Prints a per-rule table; asserts ≥ 90 % of the literal true positives detected and wholly
//! redacted, ≥ 90 % of the generated samples likewise, and ≤ 5 % of the false positives
//! flagged.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::stages::redact::{Redact, RedactOptions, Redactor};
use serde_json::{json, Value};

/// `$CCHIST_GITLEAKS_EXAMPLES`, else `tests/data/gitleaks/examples.json`, else
/// `../shared/gitleaks/examples.json` (where the project's shared data sits beside a clone).
fn fixture() -> Option<Value> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = std::env::var_os("CCHIST_GITLEAKS_EXAMPLES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let local = root.join("tests/data/gitleaks/examples.json");
            let shared = root.join("../shared/gitleaks/examples.json");
            if !local.exists() && shared.exists() {
                shared
            } else {
                local
            }
        });
    match std::fs::read(&path) {
        Ok(b) => Some(serde_json::from_slice(&b).expect("examples.json is valid JSON")),
        Err(e) => {
            let required = std::env::var("CCHIST_GITLEAKS_REQUIRED").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "gitleaks examples not found at {}: {e}; generate them as tests/data/gitleaks/README.md says",
                path.display()
            );
            eprintln!(
                "gitleaks examples not found at {} ({e}): breadth test skipped; generate them as tests/data/gitleaks/README.md says",
                path.display()
            );
            None
        }
    }
}

fn records(text: &str) -> [String; 2] {
    let tool_result = json!({
        "type": "user",
        "uuid": "00000000-0000-4000-8000-000000000001",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": text}
        ]}
    });
    let bash = json!({
        "type": "assistant",
        "uuid": "00000000-0000-4000-8000-000000000002",
        "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": text}}
        ]}
    });
    [tool_result.to_string(), bash.to_string()]
}

fn strings_of(rec: &str) -> String {
    let v: Value = serde_json::from_str(rec).expect("output lines are valid JSON");
    let c = &v["message"]["content"][0];
    c["content"]
        .as_str()
        .or_else(|| c["input"]["command"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// Every `[REDACTED:…]` marker covers a whole token.
fn whole(text: &str) -> bool {
    let b = text.as_bytes();
    let mut from = 0;
    let mut any = false;
    while let Some(i) = text[from..].find("[REDACTED:") {
        let s = from + i;
        let Some(j) = text[s..].find(']') else {
            return false;
        };
        let e = s + j + 1;
        any = true;
        if s > 0 && b[s - 1].is_ascii_alphanumeric() {
            return false;
        }
        let tail: Vec<u8> = b[e..]
            .iter()
            .copied()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'+' | b'/' | b'-'))
            .collect();
        if tail.iter().any(u8::is_ascii_alphanumeric) {
            return false;
        }
        from = e;
    }
    any
}

#[derive(Default, Clone, Copy)]
struct Tally {
    tp: usize,
    tp_ok: usize,
    sample: usize,
    sample_ok: usize,
    fp: usize,
    fp_flagged: usize,
}

#[test]
fn gitleaks_examples_detected_wholly_and_false_positives_kept() {
    let Some(doc) = fixture() else { return };
    let examples = doc["examples"].as_array().expect("examples array");
    let stage = Redact::new(Redactor::new(&RedactOptions::default()).unwrap(), false);
    let p = Pipeline::new(vec![Box::new(stage)], OnInvalid::Keep, "redact".into());

    let mut lines = Vec::new();
    for e in examples {
        lines.extend(records(e["text"].as_str().unwrap()));
    }
    let input = lines.join("\n") + "\n";
    let out = String::from_utf8(crate::common::run_in_memory(&p, input.as_bytes(), false)).unwrap();
    let out: Vec<&str> = out.lines().collect();
    assert_eq!(out.len(), lines.len(), "redact keeps every record");

    let mut by_rule: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut misses = Vec::new();
    let mut flagged = Vec::new();
    for (k, e) in examples.iter().enumerate() {
        let rule = e["rule"].as_str().unwrap();
        let t = by_rule.entry(rule).or_default();
        let (a, b) = (&lines[2 * k], &lines[2 * k + 1]);
        let (oa, ob) = (out[2 * k], out[2 * k + 1]);
        let changed = [a.as_str() != oa, b.as_str() != ob];
        match (e["kind"].as_str().unwrap(), e["source"].as_str().unwrap()) {
            ("fp", _) => {
                t.fp += 1;
                if changed[0] || changed[1] {
                    t.fp_flagged += 1;
                    flagged.push(format!(
                        "{rule}: {}",
                        strings_of(if changed[0] { oa } else { ob })
                    ));
                }
            }
            (_, source) => {
                let ok =
                    changed[0] && changed[1] && whole(&strings_of(oa)) && whole(&strings_of(ob));
                if source == "literal" {
                    t.tp += 1;
                    t.tp_ok += usize::from(ok);
                } else {
                    t.sample += 1;
                    t.sample_ok += usize::from(ok);
                }
                if !ok {
                    let how = if !changed[0] && !changed[1] {
                        "missed"
                    } else if changed[0] != changed[1] {
                        "one record"
                    } else {
                        "partial"
                    };
                    misses.push(format!("{rule} [{source}, {how}]: {}", strings_of(oa)));
                }
            }
        }
    }

    let pct = |a: usize, n: usize| 100.0 * a as f64 / n.max(1) as f64;
    println!(
        "\ngitleaks examples at {}",
        doc["commit"].as_str().unwrap_or("?")
    );
    println!(
        "{:<44} {:>9} {:>9} {:>9}",
        "rule", "tp ok/n", "samp ok/n", "fp flag/n"
    );
    let mut all = Tally::default();
    for (rule, t) in &by_rule {
        println!(
            "{rule:<44} {:>9} {:>9} {:>9}",
            format!("{}/{}", t.tp_ok, t.tp),
            format!("{}/{}", t.sample_ok, t.sample),
            format!("{}/{}", t.fp_flagged, t.fp)
        );
        all.tp += t.tp;
        all.tp_ok += t.tp_ok;
        all.sample += t.sample;
        all.sample_ok += t.sample_ok;
        all.fp += t.fp;
        all.fp_flagged += t.fp_flagged;
    }
    for m in &misses {
        println!("not redacted: {}", &m[..m.len().min(240)]);
    }
    for f in &flagged {
        println!("flagged: {}", &f[..f.len().min(240)]);
    }
    let (tp, sample, fp) = (
        pct(all.tp_ok, all.tp),
        pct(all.sample_ok, all.sample),
        pct(all.fp_flagged, all.fp),
    );
    println!(
        "\nliteral true positives detected and wholly redacted: {tp:.1}% ({} / {}); generated samples: {sample:.1}% ({} / {}); false positives flagged: {fp:.1}% ({} / {}); {} rules",
        all.tp_ok, all.tp, all.sample_ok, all.sample, all.fp_flagged, all.fp, by_rule.len()
    );
    assert!(tp >= 90.0, "literal true positives {tp:.1}% < 90%");
    assert!(sample >= 90.0, "generated samples {sample:.1}% < 90%");
    assert!(fp <= 5.0, "false positives flagged {fp:.1}% > 5%");
}
