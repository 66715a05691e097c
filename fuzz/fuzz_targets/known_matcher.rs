//! The anchored index against Aho-Corasick on arbitrary patterns and text: the same
//! leftmost-longest matches (the first bytes, split at NUL, are the patterns; the rest the text).
#![no_main]

use cchist::stages::redact::known::matcher::Matcher;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(sep) = data.windows(2).position(|w| w == b"\n\n") else {
        return;
    };
    let (pats, text) = (&data[..sep], &data[sep + 2..]);
    let mut uniq: Vec<Vec<u8>> = Vec::new();
    for p in pats.split(|&b| b == 0) {
        if p.len() >= 4 && p.len() <= 64 && !uniq.iter().any(|u| u == p) {
            uniq.push(p.to_vec());
        }
    }
    if uniq.is_empty() || uniq.len() > 64 {
        return;
    }
    let all = |m: &Matcher| {
        let mut out = Vec::new();
        m.for_each(text, |s, e, p| out.push((s, e, p)));
        out
    };
    assert_eq!(all(&Matcher::anchored(&uniq)), all(&Matcher::small(&uniq)));
});
