//! The shared bench input: every *.jsonl under ../shared/corpus, sorted, concatenated, each
//! file ending in a newline. Included by each bench with `mod corpus;`.

use std::path::{Path, PathBuf};

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
    walk(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
        &mut files,
    );
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
