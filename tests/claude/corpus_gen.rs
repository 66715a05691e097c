//! The generated half of the in-repository corpus: `tests/corpus/generated/` is what the real
//! CLI writes for the scenarios in `tests/corpus/scenarios/` (the CLI runs the tools; the mock
//! API answers with the scripted turns; sandbox paths become `/home/dev/<name>`).
//!
//! Rewrite it after changing a scenario or the pinned CLI:
//! `CCHIST_WRITE_CORPUS=1 cargo test --test claude -- --ignored regenerate_corpus`
//! (`CCHIST_SCENARIO=p06_kinds` limits the run to one scenario).
//! Without `CCHIST_WRITE_CORPUS` the test generates into a temp dir and checks that the
//! committed corpus still has the same files and record kinds, so a CLI update that changes
//! what Claude Code writes shows up as a failure here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{corpus_dir, jsonl_under};
use crate::support::*;

/// `type`, or `type/subtype` for the kinds that carry one (system subtype, attachment type,
/// progress data type).
fn kind(record: &Value) -> String {
    let ty = record["type"].as_str().unwrap_or("<none>");
    let sub = record["subtype"]
        .as_str()
        .or_else(|| record["attachment"]["type"].as_str())
        .or_else(|| record["data"]["type"].as_str());
    match sub {
        Some(s) => format!("{ty}/{s}"),
        None => ty.to_owned(),
    }
}

/// Per file under `dir` (relative path with sub-agent and tool-result names reduced to their
/// folder): the record kinds of its JSONL lines, or an empty set for other files.
fn profile(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeMap<String, BTreeSet<String>>) {
        let mut entries: Vec<_> = std::fs::read_dir(d)
            .expect("read generated dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(root, &p, out);
                continue;
            }
            let rel = p.strip_prefix(root).expect("under root");
            // Sub-agent and tool-result files carry random ids; keep the folder and the kind
            // of file only.
            let key = match rel.parent().and_then(Path::file_name) {
                Some(folder) if folder == "subagents" || folder == "tool-results" => {
                    let ext = if p.to_string_lossy().ends_with(".meta.json") {
                        "meta.json"
                    } else {
                        p.extension().and_then(|x| x.to_str()).unwrap_or("")
                    };
                    format!("{}/*.{ext}", rel.parent().expect("parent").display())
                }
                _ => rel.display().to_string(),
            };
            let kinds = out.entry(key).or_default();
            if p.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&p).expect("read transcript");
                for line in text.lines() {
                    kinds.insert(kind(&serde_json::from_str(line).expect("record JSON")));
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The scenario files, or only `CCHIST_SCENARIO`'s.
fn scenarios() -> Vec<PathBuf> {
    let only = std::env::var("CCHIST_SCENARIO").ok();
    let mut v: Vec<PathBuf> = std::fs::read_dir(corpus_dir().join("scenarios"))
        .expect("tests/corpus/scenarios")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| match &only {
            Some(o) => p.file_stem().is_some_and(|s| s == o.as_str()),
            None => true,
        })
        .collect();
    v.sort();
    v
}

#[test]
#[ignore = "runs the real CLI for every scenario (about 40 runs)"]
fn regenerate_corpus() {
    if claude_bin().is_none() {
        return;
    }
    let write = std::env::var_os("CCHIST_WRITE_CORPUS").is_some();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("generated");
    let scenarios = scenarios();
    assert!(
        !scenarios.is_empty(),
        "no scenario (CCHIST_SCENARIO names none?)"
    );
    std::thread::scope(|s| {
        for chunk in scenarios.chunks(scenarios.len().div_ceil(3)) {
            let out = &out;
            s.spawn(move || {
                for sc in chunk {
                    generate(&Scenario::from_oracle_file(sc), out).expect("CLI available");
                }
            });
        }
    });
    let committed = corpus_dir().join("generated");
    if write {
        // Each scenario's transcript and companion folder replace the old ones.
        for sc in &scenarios {
            let name = sc.file_stem().expect("scenario name");
            let dir = committed.join(name);
            if dir.is_dir() {
                std::fs::remove_dir_all(&dir).expect("remove old companion folder");
            }
        }
        copy_dir(&out, &committed, &[]);
        note(&format!(
            "wrote {} transcripts to {}",
            jsonl_under(&out).len(),
            committed.display()
        ));
    } else {
        let generated = profile(&out);
        let mut expected = profile(&committed);
        // Only what this run generated (all of it unless CCHIST_SCENARIO is set).
        expected.retain(|k, _| {
            let top = k.split('/').next().unwrap_or(k);
            generated.keys().any(|g| g.split('/').next() == Some(top))
        });
        assert_eq!(
            expected, generated,
            "the CLI now writes other files or record kinds than tests/corpus/generated holds: \
             regenerate it (CCHIST_WRITE_CORPUS=1) and review the tests that count records"
        );
    }
}
