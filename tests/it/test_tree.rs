//! The test tree itself: every proptest regression file sits where proptest reads it.
//!
//! proptest replays the seeds saved in a regression file before it tries new cases, but only
//! if the file is at the path its configuration resolves. A file left behind when a test
//! moved (a `src/record/header.rs` that became `src/transcript/record/header.rs`, a test that
//! moved into `tests/it/`) is silently ignored, and the failures it recorded can come back.
//!
//! No proptest block here sets `failure_persistence`, so every one uses proptest's default,
//! `FileFailurePersistence::SourceParallel("proptest-regressions")`: from the source file, walk
//! up to the first directory holding a `lib.rs` or `main.rs`; the file is
//! `<that directory's parent>/proptest-regressions/<path below it, extension .txt>`
//! (`src/json/scan.rs` → `proptest-regressions/json/scan.txt`, `tests/it/relink.rs` →
//! `tests/proptest-regressions/relink.txt`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file under `dir`, skipping build output and hidden directories.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if name == "target" || name.starts_with('.') {
                continue;
            }
            walk(&path, out);
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// The regression file proptest's default `SourceParallel("proptest-regressions")` resolves
/// for `source` (an absolute path), as `proptest::test_runner::FileFailurePersistence` does.
fn source_parallel(source: &Path) -> PathBuf {
    let mut dir = source.to_path_buf();
    while dir.pop() {
        if dir.join("lib.rs").is_file() || dir.join("main.rs").is_file() {
            let suffix = source.strip_prefix(&dir).unwrap().to_path_buf();
            let mut result = dir.clone();
            result.pop();
            result.push("proptest-regressions");
            result.push(suffix);
            result.set_extension("txt");
            return result;
        }
    }
    // proptest falls back to `WithSource("proptest-regressions")` here.
    source.with_extension("proptest-regressions")
}

fn is_regression_file(path: &Path) -> bool {
    let in_regressions_dir = path
        .ancestors()
        .skip(1)
        .any(|a| a.file_name().is_some_and(|n| n == "proptest-regressions"));
    let ext = path.extension().and_then(|e| e.to_str());
    ext == Some("proptest-regressions") || (in_regressions_dir && ext == Some("txt"))
}

fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn source_parallel_matches_proptest_layout() {
    let root = root();
    assert_eq!(
        source_parallel(&root.join("src/json/scan.rs")),
        root.join("proptest-regressions/json/scan.txt")
    );
    assert_eq!(
        source_parallel(&root.join("tests/it/relink.rs")),
        root.join("tests/proptest-regressions/relink.txt")
    );
}

#[test]
fn no_orphaned_proptest_regression_files() {
    let root = root();
    let mut files = Vec::new();
    walk(&root, &mut files);

    let mut read: BTreeSet<PathBuf> = BTreeSet::new();
    let mut sources = 0;
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    {
        let Ok(text) = fs::read_to_string(path) else {
            continue;
        };
        if !text.contains("proptest!") {
            continue;
        }
        // This file is the one place that names the setting; every test source must not.
        assert!(
            path.ends_with("tests/it/test_tree.rs") || !text.contains("failure_persistence"),
            "{} sets failure_persistence: teach tests/it/test_tree.rs the path it reads",
            rel(path)
        );
        if path.ends_with("tests/it/test_tree.rs") {
            continue;
        }
        sources += 1;
        read.insert(source_parallel(path));
    }
    assert!(sources > 0, "found no source file using proptest!");

    let regressions: Vec<&PathBuf> = files.iter().filter(|p| is_regression_file(p)).collect();
    assert!(
        !regressions.is_empty(),
        "found no proptest regression file at all; the walk is broken"
    );
    let orphaned: Vec<String> = regressions
        .iter()
        .filter(|p| !read.contains(**p))
        .map(|p| rel(p))
        .collect();
    assert!(
        orphaned.is_empty(),
        "proptest regression files no test reads (move each to the path its test's \
         proptest! block resolves):\n  {}\nread paths:\n  {}",
        orphaned.join("\n  "),
        read.iter().map(|p| rel(p)).collect::<Vec<_>>().join("\n  ")
    );
}

/// The slow tier is what `.ci/run` selects with `cargo test -- --ignored slow_`: a test is in
/// it when it is `#[ignore = "slow: …"]` and its name starts with `slow_`. One without the
/// other would run in neither tier (ignored by default, missed by the filter) or slow down
/// the default run; both fail here.
#[test]
fn the_slow_tier_is_marked_by_both_its_reason_and_its_name() {
    let mut files = Vec::new();
    walk(&root().join("tests"), &mut files);
    walk(&root().join("src"), &mut files);
    let mut wrong = Vec::new();
    let mut slow = 0;
    for path in files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
    {
        let Ok(text) = fs::read_to_string(path) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let t = line.trim_start();
            let marked = t.starts_with("#[ignore = \"slow:");
            // The fn this attribute (or a macro arm's) applies to: the next `fn` line.
            let named = t.starts_with("fn slow_") || t.starts_with("pub fn slow_");
            if marked {
                slow += 1;
                let next = lines[i + 1..]
                    .iter()
                    .map(|l| l.trim_start())
                    .find(|l| l.starts_with("fn ") || l.starts_with("pub fn "));
                let ok = next.is_some_and(|l| {
                    l.starts_with("fn slow_")
                        || l.starts_with("fn $name")
                        || l.starts_with("pub fn slow_")
                });
                if !ok {
                    wrong.push(format!(
                        "{}:{}: slow but not named slow_…",
                        rel(path),
                        i + 1
                    ));
                }
            }
            if named {
                let attrs = lines[..i]
                    .iter()
                    .rev()
                    .take_while(|l| l.trim_start().starts_with("#["));
                if !attrs
                    .clone()
                    .any(|l| l.trim_start().starts_with("#[ignore = \"slow:"))
                {
                    wrong.push(format!(
                        "{}:{}: named slow_ but not #[ignore = \"slow: …\"]",
                        rel(path),
                        i + 1
                    ));
                }
            }
        }
    }
    assert!(slow > 0, "no slow tier found; the walk is broken");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
