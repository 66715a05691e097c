//! The JSON scanner behind `Header::parse` and `check_json` against serde_json on arbitrary
//! bytes: `check_json` accepts exactly what serde_json accepts (its fast path must never say
//! yes to a line serde_json refuses), a line with a header is a JSON object, and nothing
//! panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

fn serde_accepts(data: &[u8]) -> bool {
    let mut de = serde_json::Deserializer::from_slice(data);
    de.disable_recursion_limit();
    let ok = serde::de::IgnoredAny::deserialize(serde_stacker::Deserializer::new(&mut de)).is_ok();
    ok && de.end().is_ok()
}

fuzz_target!(|data: &[u8]| {
    let accepted = serde_accepts(data);
    assert_eq!(cchist::transcript::record::check_json(data).is_ok(), accepted);
    if cchist::transcript::record::Header::parse(data).is_some() {
        assert!(accepted, "a header for a line serde_json refuses");
        assert!(serde_json::from_slice::<serde_json::Value>(data).map_or(true, |v| v.is_object()));
    }
});
