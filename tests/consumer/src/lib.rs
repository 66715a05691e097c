//! A library user's crate: its own serde code, and cchist's library API.

use std::collections::HashMap;

use serde::Deserialize;

/// Code of the dependent's own that fails to deserialize when `arbitrary_precision` is on in
/// the build (numbers inside a flattened map then arrive as a private map, not as numbers).
#[derive(Debug, Deserialize)]
pub struct Prices {
    pub currency: String,
    #[serde(flatten)]
    pub items: HashMap<String, f64>,
}

/// Scrub one transcript with cchist's shipped pipeline.
pub fn scrub(input: &[u8]) -> Vec<u8> {
    let file = cchist::engine::config::load_spec("scrub").expect("a shipped pipeline");
    let mut out = Vec::new();
    let mut sink = cchist::io::output::SpanWriter::new(&mut out);
    file.pipeline
        .run_buffer(input, &cchist::error::Origin::stdin(), &mut sink)
        .expect("scrub runs");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flattened_map_of_numbers_deserializes_with_cchist_in_the_build() {
        let p: Prices = serde_json::from_str(r#"{"currency":"EUR","apple":1.5,"pear":2}"#)
            .expect("no arbitrary_precision in this build");
        assert_eq!(p.items["apple"], 1.5);
        assert_eq!(p.items["pear"], 2.0);
    }

    #[test]
    fn the_library_scrubs_a_secret() {
        // A key-shaped value made at run time (no token-shaped text in the source).
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let body: String = (0..93)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                alphabet[(x % alphabet.len() as u64) as usize] as char
            })
            .collect();
        let key = ["sk-ant-api03-", &body, "AA"].concat();
        let line = format!(
            r#"{{"type":"user","uuid":"u1","parentUuid":null,"message":{{"role":"user","content":"key {key} and 1.50"}}}}"#
        );
        let out = String::from_utf8(scrub(format!("{line}\n").as_bytes())).unwrap();
        assert!(!out.contains(&key), "{out}");
        assert!(out.contains("1.50"));
    }
}
