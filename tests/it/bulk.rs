//! `run --all` over a sandbox config folder built from the corpus: every transcript,
//! sub-agent file, tool-results text file and history.jsonl; live sessions skipped; a second run
//! changes nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{age, cchist, copy_dir, corpus_dir, ok};

/// Sessions where Claude Code keeps them: the generated ones with their companion folders, and
/// two copies of a real one that ends on an unanswered tool call (relink repairs them).
fn sandbox() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (rel, id) in [
        ("generated/p01_quickstart", "p01"),
        ("generated/p02_noise", "p02"),
        ("generated/p03_compact", "p03"),
        ("generated/p04_subagent", "p04"),
        ("generated/p05_long", "p05"),
        (
            "real/thejamesnick__agentic-wallet__claude-session",
            "wallet",
        ),
        (
            "real/thejamesnick__agentic-wallet__claude-session",
            "wallet2",
        ),
    ] {
        let src = corpus_dir().join(format!("{rel}.jsonl"));
        let dir = root.path().join("projects").join(format!("-home-dev-{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join(format!("{id}.jsonl"));
        std::fs::copy(&src, &dest).unwrap();
        files.push(dest);
        let comp = corpus_dir().join(rel);
        if comp.is_dir() {
            copy_dir(&comp, &dir.join(id));
        }
    }
    // Prompt history, with a pasted token.
    let token = format!("ghp_{}", "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9");
    let history = root.path().join("history.jsonl");
    std::fs::write(
        &history,
        format!("{{\"display\":\"use {token} for the API\",\"project\":\"/home/dev/p01\"}}\n{{\"display\":\"hello\",\"project\":\"/home/dev/p02\"}}\n"),
    )
    .unwrap();
    files.push(history);
    fn all_files(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                all_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut every = Vec::new();
    all_files(root.path(), &mut every);
    for f in every {
        age(&f, 7200);
    }
    root
}

fn run_all(root: &Path) -> Value {
    let out = ok(cchist()
        .args(["run", "-p", "scrub", "--all", "--in-place", "--json"])
        .env("CLAUDE_CONFIG_DIR", root));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn all_scrubs_everything_once_and_skips_live_sessions() {
    let root = sandbox();
    // One session looks live: just written.
    let live = root.path().join("projects/-home-dev-p05/p05.jsonl");
    crate::common::set_mtime(&live, std::time::SystemTime::now());
    let live_before = std::fs::read(&live).unwrap();

    let v = run_all(root.path());
    let s = &v["summary"];
    // 6 main sessions + 1 sub-agent transcript and its .meta.json + 2 tool-results files +
    // history.jsonl: every member of every session (SessionFile::members)
    assert_eq!(s["files"], 11, "{s}");
    assert_eq!(s["skipped"], 1, "{s}");
    assert_eq!(s["failed"], 0, "{s}");
    // p01 (planted secrets) and history.jsonl (pasted token). Scrub changes a file only to
    // remove secrets (issue 17): the two copies of the real session whose last tool call was
    // interrupted stay as Claude Code wrote them (before, relink answered the call).
    assert_eq!(s["changed"], 2, "{s}");
    let stages = s["stages"].as_array().unwrap();
    assert_eq!(stages[0]["stage"], "redact");
    // five records of p01 and one line of history.jsonl
    assert_eq!(stages[0]["changed"], 6, "{s}");
    assert_eq!(stages[1]["stage"], "relink");
    assert_eq!(stages[1]["added"], 0, "{s}");
    assert_eq!(
        std::fs::read(&live).unwrap(),
        live_before,
        "the live session is untouched"
    );
    let history = std::fs::read_to_string(root.path().join("history.jsonl")).unwrap();
    assert!(history.contains("[REDACTED:github-pat]") && !history.contains("ghp_Zy9"));

    // A second run finds nothing left to change.
    let again = run_all(root.path());
    assert_eq!(again["summary"]["changed"], 0, "{}", again["summary"]);
    assert_eq!(again["summary"]["files"], 11);
}
