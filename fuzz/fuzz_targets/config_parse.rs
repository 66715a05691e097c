//! The pipeline-file loader on arbitrary text: an error or a pipeline, never a panic; a
//! pipeline that loads runs on a small transcript without panicking.
#![no_main]

use cchist::error::Origin;
use cchist::io::output::{Sink, SpanWriter};
use libfuzzer_sys::fuzz_target;

const SESSION: &[u8] = b"{\"type\":\"user\",\"uuid\":\"u1\",\"parentUuid\":null,\"message\":{\"role\":\"user\",\"content\":\"hi AKIAIOSFODNN7EXAMPLE\"}}\n{\"type\":\"assistant\",\"uuid\":\"a1\",\"parentUuid\":\"u1\",\"message\":{\"id\":\"m1\",\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{}}]}}\n{\"type\":\"progress\",\"uuid\":\"p1\",\"parentUuid\":\"a1\",\"toolUseID\":\"t1\"}\n{\"type\":\"user\",\"uuid\":\"r1\",\"parentUuid\":\"a1\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"ok\"}]}}\nnot json\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = cchist::engine::config::parse(text, &Origin::stdin()) else {
        return;
    };
    let mut out = Vec::new();
    let mut sink = SpanWriter::new(&mut out);
    if file
        .pipeline
        .run_buffer(SESSION, &Origin::stdin(), &mut sink)
        .is_ok()
    {
        sink.finish().unwrap();
    }
});
