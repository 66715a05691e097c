//! The text as a reader sees it (invisible characters removed, HTML entities and a token's
//! percent-encoded characters read, pieces of literals joined) on arbitrary bytes: never a
//! panic, never longer than the input, and every span of it maps back into the input, in
//! order.
#![no_main]

use cchist::stages::redact::scan::reading;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(r) = reading(data) {
        assert!(r.text.len() < data.len(), "a reading is shorter than the text");
        let mut last = 0;
        for x in 0..=r.text.len() {
            let (s, e) = (r.start(x), r.end(x));
            assert!(s >= last && s <= data.len(), "starts in order, inside");
            assert!(e <= data.len() && (x == 0 || e >= r.start(x - 1)), "ends after starts");
            last = s;
        }
    }
});
