//! The operations document (`cchist apply`): parsing arbitrary text never panics; a document
//! that parses, applied to a small session, succeeds or refuses as a whole, never panics.
#![no_main]

use cchist::io::framing;
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use libfuzzer_sys::fuzz_target;

const SESSION: &[u8] = b"{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"one\"}}\n{\"type\":\"assistant\",\"uuid\":\"a1\",\"parentUuid\":\"u1\",\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"1\"}]}}\n{\"type\":\"user\",\"uuid\":\"u2\",\"parentUuid\":\"a1\",\"message\":{\"role\":\"user\",\"content\":\"two\"}}\n{\"type\":\"assistant\",\"uuid\":\"a2\",\"parentUuid\":\"u2\",\"message\":{\"id\":\"m2\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"2\"}]}}\n{\"type\":\"user\",\"uuid\":\"u3\",\"parentUuid\":\"a2\",\"message\":{\"role\":\"user\",\"content\":\"three\"}}\n{\"type\":\"assistant\",\"uuid\":\"a3\",\"parentUuid\":\"u3\",\"message\":{\"id\":\"m3\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"3\"}]}}\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(doc) = cchist::stages::edit::OpsDoc::parse(text) else {
        return;
    };
    let records: Vec<Record> = framing::lines(SESSION, 1).map(Record::from_line).collect();
    let mut s = Session::new(records);
    let before = s.records.len();
    if cchist::stages::edit::apply(&mut s, &doc.operations).is_err() {
        assert_eq!(
            s.records.len(),
            before,
            "a refused document changed the session"
        );
    }
});
