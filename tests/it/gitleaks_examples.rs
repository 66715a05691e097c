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

/// gitleaks' own detection rules (config/gitleaks.toml at the examples' commit), to tell a
/// false positive of one rule that is another rule's true positive: gitleaks lists an
/// Anthropic admin key among the API-key rule's false positives, and `DATABRICKS_TOKEN=…` of
/// the wrong length, which its generic rule reports. Redacting those is right; the false
/// positive rate that matters counts only the examples no gitleaks rule reports.
struct GitleaksRule {
    id: String,
    regex: regex::bytes::Regex,
    entropy: f64,
    keywords: Vec<String>,
    secret_group: usize,
    allowlists: Vec<Allowlist>,
}

struct Allowlist {
    and: bool,
    target: String,
    regexes: Vec<regex::bytes::Regex>,
    stopwords: Vec<String>,
    /// A path condition: never met by a transcript string.
    paths: bool,
}

impl Allowlist {
    fn allows(&self, secret: &str, whole_match: &str, line: &str) -> bool {
        let target = match self.target.as_str() {
            "match" => whole_match,
            "line" => line,
            _ => secret,
        };
        let by_regex = self.regexes.iter().any(|r| r.is_match(target.as_bytes()));
        let lower = secret.to_lowercase();
        let by_word = self.stopwords.iter().any(|w| lower.contains(w.as_str()));
        if self.and {
            (self.regexes.is_empty() || by_regex)
                && (self.stopwords.is_empty() || by_word)
                && !self.paths
        } else {
            by_regex || by_word
        }
    }
}

fn shannon(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
    }
    let n = s.chars().count() as f64;
    counts
        .values()
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

struct Gitleaks {
    rules: Vec<GitleaksRule>,
    global: Allowlist,
}

impl Gitleaks {
    fn from_doc(doc: &Value) -> Option<Gitleaks> {
        let strings = |v: &Value| -> Vec<String> {
            v.as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        // Go's RE2: `\w`, `\s`, `\b` and case folding are ASCII.
        let go = |r: &str| {
            regex::bytes::RegexBuilder::new(r)
                .unicode(false)
                .size_limit(1 << 26)
                .build()
        };
        let regexes = |v: &Value| -> Vec<regex::bytes::Regex> {
            strings(v).iter().filter_map(|r| go(r).ok()).collect()
        };
        let allow = |a: &Value| Allowlist {
            and: a["condition"].as_str() == Some("AND"),
            target: a["target"].as_str().unwrap_or("secret").to_string(),
            regexes: regexes(&a["regexes"]),
            stopwords: strings(&a["stopwords"])
                .into_iter()
                .map(|w| w.to_lowercase())
                .collect(),
            paths: a["paths"].as_bool().unwrap_or(false),
        };
        let mut rules = Vec::new();
        for r in doc["rules"].as_array()? {
            // A Go regex the crate cannot compile is left out and said: it can only make
            // the rate stricter (fewer examples excused).
            let Ok(regex) = go(r["regex"].as_str()?) else {
                eprintln!("gitleaks rule {} not compiled here", r["id"]);
                continue;
            };
            rules.push(GitleaksRule {
                id: r["id"].as_str()?.to_string(),
                regex,
                entropy: r["entropy"].as_f64().unwrap_or(0.0),
                keywords: strings(&r["keywords"])
                    .into_iter()
                    .map(|k| k.to_lowercase())
                    .collect(),
                secret_group: r["secret_group"].as_u64().unwrap_or(0) as usize,
                allowlists: r["allowlists"]
                    .as_array()
                    .map(|a| a.iter().map(allow).collect())
                    .unwrap_or_default(),
            });
        }
        let global = allow(&doc["allowlist"]);
        Some(Gitleaks { rules, global })
    }

    /// The id of a gitleaks rule other than `own` that reports something in `text`.
    fn other_rule_reporting(&self, text: &str, own: &str) -> Option<&str> {
        let lower = text.to_lowercase();
        self.rules
            .iter()
            .filter(|r| r.id != own)
            .filter(|r| r.keywords.is_empty() || r.keywords.iter().any(|k| lower.contains(k)))
            .find(|r| {
                r.regex.captures_iter(text.as_bytes()).any(|c| {
                    let str_of = |m: regex::bytes::Match<'_>| &text[m.start()..m.end()];
                    let whole = c.get(0).map_or("", str_of);
                    let secret = if r.secret_group > 0 {
                        c.get(r.secret_group).map(str_of)
                    } else {
                        c.iter()
                            .skip(1)
                            .flatten()
                            .map(str_of)
                            .find(|s| !s.is_empty())
                    }
                    .unwrap_or(whole);
                    let start = c.get(0).map_or(0, |m| m.start());
                    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
                    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
                    let line = &text[line_start..line_end];
                    shannon(secret) >= r.entropy
                        && !self.global.allows(secret, whole, line)
                        && !r.allowlists.iter().any(|a| a.allows(secret, whole, line))
                })
            })
            .map(|r| r.id.as_str())
    }
}

#[derive(Default, Clone, Copy)]
struct Tally {
    tp: usize,
    tp_ok: usize,
    sample: usize,
    sample_ok: usize,
    fp: usize,
    fp_flagged: usize,
    /// False positives no other gitleaks rule reports, and how many of those are flagged.
    fp_own: usize,
    fp_own_flagged: usize,
}

#[test]
fn gitleaks_examples_detected_wholly_and_false_positives_kept() {
    let Some(doc) = fixture() else { return };
    let examples = doc["examples"].as_array().expect("examples array");
    let gitleaks = Gitleaks::from_doc(&doc);
    assert!(
        gitleaks.is_some() || std::env::var("CI").is_err(),
        "the examples file has no gitleaks rules: regenerate it with scripts/gitleaks-examples.py"
    );
    let stage = Redact::new(Redactor::new(&RedactOptions::default()).unwrap(), false);
    let p = Pipeline::new(vec![Box::new(stage)], OnInvalid::Keep, "redact".into());

    // Each example is its own session: gitleaks reuses one value in a rule's true and false
    // positives, and a session forgets nothing it found (a value redacted once is redacted
    // everywhere in its session), so one stream of all examples would count echoes.
    let mut lines = Vec::new();
    let mut outs = Vec::new();
    for e in examples {
        let pair = records(e["text"].as_str().unwrap());
        let input = pair.join("\n") + "\n";
        let out =
            String::from_utf8(crate::common::run_in_memory(&p, input.as_bytes(), false)).unwrap();
        let out: Vec<String> = out.lines().map(String::from).collect();
        assert_eq!(out.len(), 2, "redact keeps every record");
        lines.extend(pair);
        outs.extend(out);
    }
    let out: Vec<&str> = outs.iter().map(String::as_str).collect();

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
                let text = e["text"].as_str().unwrap();
                let other = gitleaks
                    .as_ref()
                    .and_then(|g| g.other_rule_reporting(text, rule));
                let flag = changed[0] || changed[1];
                t.fp += 1;
                t.fp_flagged += usize::from(flag);
                if other.is_none() {
                    t.fp_own += 1;
                    t.fp_own_flagged += usize::from(flag);
                }
                if flag {
                    flagged.push(format!(
                        "{rule}{}: {}",
                        other.map_or(String::new(), |o| format!(" (gitleaks {o} reports it)")),
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
        all.fp_own += t.fp_own;
        all.fp_own_flagged += t.fp_own_flagged;
    }
    for m in &misses {
        println!("not redacted: {}", &m[..m.len().min(240)]);
    }
    for f in &flagged {
        println!("flagged: {}", &f[..f.len().min(240)]);
    }
    let (tp, sample, fp, fp_own) = (
        pct(all.tp_ok, all.tp),
        pct(all.sample_ok, all.sample),
        pct(all.fp_flagged, all.fp),
        pct(all.fp_own_flagged, all.fp_own),
    );
    println!(
        "\nliteral true positives detected and wholly redacted: {tp:.1}% ({} / {}); generated samples: {sample:.1}% ({} / {}); false positives flagged: {fp:.1}% ({} / {}), of those no other gitleaks rule reports: {fp_own:.1}% ({} / {}); {} rules",
        all.tp_ok, all.tp, all.sample_ok, all.sample, all.fp_flagged, all.fp, all.fp_own_flagged, all.fp_own, by_rule.len()
    );
    assert!(tp >= 97.0, "literal true positives {tp:.1}% < 97%");
    assert!(sample >= 90.0, "generated samples {sample:.1}% < 90%");
    assert!(fp <= 6.0, "false positives flagged {fp:.1}% > 6%");
    if gitleaks.is_some() {
        assert!(
            fp_own <= 3.0,
            "false positives no other rule reports, flagged {fp_own:.1}% > 3%"
        );
    }
}
