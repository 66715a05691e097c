//! Known-secret propagation on arbitrary lines: the first bytes (up to a newline) are a known
//! value, the rest a transcript line. Never a panic; a JSON line stays valid JSON, and a line
//! that changed no longer holds the value where the guard lets it be replaced.
#![no_main]

use cchist::stages::redact::known::{Known, KnownSecret};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(nl) = data.iter().position(|&b| b == b'\n') else {
        return;
    };
    let (value, line) = (&data[..nl], &data[nl + 1..]);
    let mut k = Known::default();
    k.add(
        value,
        KnownSecret {
            rule: "fuzz".into(),
            placeholder: b"[REDACTED:fuzz]".to_vec(),
            fingerprint: String::new(),
        },
    );
    let Some(echoes) = k.echoes() else { return };
    let was_json = serde_json::from_slice::<serde_json::Value>(line).is_ok();
    if let Some(out) = echoes.line(line) {
        if was_json {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&out.line).is_ok(),
                "an echo replacement broke a JSON line"
            );
        }
    }
});
