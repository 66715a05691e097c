//! The shared bench input: every *.jsonl under ../shared/corpus (the figures in the README were
//! measured on it), or under tests/corpus when ../shared is not checked out beside the
//! repository; sorted, concatenated, each file ending in a newline. Included by each bench with
//! `mod corpus;`.

use std::path::{Path, PathBuf};

/// `../shared/corpus` when present, else the repository's `tests/corpus` (said on stderr).
pub fn dir() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/corpus");
    if shared.is_dir() {
        return shared;
    }
    eprintln!("note: no ../shared/corpus beside the repository; benchmarking tests/corpus");
    root.join("tests/corpus")
}

/// The concatenated corpus (about 20 MB).
pub fn bytes() -> Vec<u8> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&dir(), &mut files);
    files.sort();
    let mut all = Vec::new();
    for f in files {
        let mut b = std::fs::read(f).unwrap();
        if b.last() != Some(&b'\n') {
            b.push(b'\n');
        }
        all.extend_from_slice(&b);
    }
    all
}
