//! The form a reader sees (invisible characters removed, a token's percent-encoded punctuation
//! decoded, concatenated literals joined) on arbitrary bytes: never a panic, never longer than
//! the input, and a second pass has nothing more to remove of what the first removed.
#![no_main]

use cchist::stages::redact::scan::visible_form;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(v) = visible_form(data) {
        assert!(v.len() < data.len(), "a reader form is shorter than the text");
    }
});
