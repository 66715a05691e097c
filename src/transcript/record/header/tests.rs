use super::*;

#[test]
fn reads_tool_blocks_and_flags() {
    let h = Header::parse(
        br#"{"type":"assistant","uuid":"a","parentUuid":"p","isSidechain":true,"message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#,
    )
    .unwrap();
    assert!(h.is_sidechain);
    assert_eq!(h.message_id(), Some("msg_1"));
    assert_eq!(h.tool_use_ids().collect::<Vec<_>>(), vec!["toolu_1"]);
    assert_eq!(h.blocks().get(0).unwrap().name(), Some("Bash"));
}

#[test]
fn odd_field_types_are_absent_not_fatal() {
    let h =
        Header::parse(br#"{"type":"user","uuid":7,"isSidechain":"yes","message":"x"}"#).unwrap();
    assert_eq!(h.uuid(), None);
    assert!(!h.is_sidechain);
}

#[test]
fn non_objects_have_no_header() {
    assert!(Header::parse(b"[1,2]").is_none());
    assert!(Header::parse(b"\"s\"").is_none());
    assert!(Header::parse(b"{\"type\":").is_none());
    assert!(Header::parse(b"{} trailing").is_none());
}

#[test]
fn escaped_strings_are_decoded() {
    let h = Header::parse(br#"{"type":"us\u0065r","uuid":"a\/b"}"#).unwrap();
    assert_eq!(h.kind, Kind::User);
    assert_eq!(h.uuid(), Some("a/b"));
}
fn without_scan_stats(h: Option<Header>) -> Option<Header> {
    h.map(|mut h| {
        h.longest_string = 0;
        h.has_compact_metadata = false;
        h
    })
}

/// Every line of the corpus (`tests/corpus`, and `../shared/corpus` when checked out beside
/// the repository) and of the examples reads the same as with the serde_json
/// implementation the scanner replaced.
#[test]
fn scanner_agrees_with_serde_on_every_corpus_line() {
    let mut files = Vec::new();
    for dir in [
        "tests/corpus",
        "../shared/corpus",
        "tests/fixtures",
        "examples",
    ] {
        collect_jsonl(std::path::Path::new(dir), &mut files);
    }
    let mut lines = 0;
    for f in &files {
        let data = std::fs::read(f).unwrap();
        for (n, line) in data.split(|&b| b == b'\n').enumerate() {
            let new = without_scan_stats(Header::parse(line));
            let old = reference::parse(line);
            assert!(new == old, "{}:{}: header differs", f.display(), n + 1);
            lines += 1;
        }
    }
    assert!(
        lines > 1000,
        "found only {lines} lines: is tests/corpus missing?"
    );
}

fn collect_jsonl(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_jsonl(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

#[test]
fn compact_metadata_is_noticed_at_top_level_only() {
    let h = Header::parse(br#"{"type":"system","compactMetadata":{"trigger":"auto"}}"#);
    assert!(h.unwrap().has_compact_metadata);
    let h = Header::parse(br#"{"type":"user","x":{"compactMetadata":1},"t":"compactMetadata"}"#);
    assert!(!h.unwrap().has_compact_metadata);
}

#[test]
fn longest_string_counts_bytes_as_written() {
    let h = Header::parse(br#"{"type":"user","x":{"y":["abc\n\u00e9", "ab"]}}"#).unwrap();
    assert_eq!(h.longest_string, 11);
}

#[test]
fn invalid_json_has_no_header() {
    for bad in [
        &b"{\"type\":\"user\",}"[..],
        b"{\"type\":\"user\"",
        b"{\"a\":[1,2}",
        b"{\"a\":\"\x01\"}",
        b"{\"a\":01}",
    ] {
        assert_eq!(Header::parse(bad), None, "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn invalid_utf8_in_a_skipped_string_keeps_the_header() {
    let line = b"{\"type\":\"user\",\"uuid\":\"v1\",\"x\":\"\xff\xfe\"}";
    assert_eq!(Header::parse(line).unwrap().uuid(), Some("v1"));
    assert_eq!(reference::parse(line).unwrap().uuid(), Some("v1"));
    // A field the header reads that is not UTF-8 reads as absent.
    let line = b"{\"type\":\"user\",\"uuid\":\"\xff\"}";
    assert_eq!(Header::parse(line).unwrap().uuid(), None);
}

mod props {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{json, Value};

    fn id() -> impl Strategy<Value = Value> {
        prop_oneof![
            "[a-z0-9\\-\"\\\\é\u{1F600}]{0,12}".prop_map(Value::from),
            Just(Value::Null),
            any::<i32>().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(json!({"x": [1, {"y": "z"}]})),
        ]
    }

    fn block() -> impl Strategy<Value = Value> {
        (
            prop::sample::select(vec!["text", "tool_use", "tool_result", "image", "x"]),
            id(),
            id(),
            id(),
            id(),
            prop::option::of(any::<bool>()),
        )
            .prop_map(|(ty, a, b, c, text, err)| {
                let mut m = serde_json::Map::new();
                m.insert("type".into(), ty.into());
                m.insert("id".into(), a);
                m.insert("tool_use_id".into(), b);
                m.insert("name".into(), c);
                m.insert("text".into(), text);
                if let Some(e) = err {
                    m.insert("is_error".into(), e.into());
                }
                Value::Object(m)
            })
    }

    fn record() -> impl Strategy<Value = Value> {
        (
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "type",
                        "subtype",
                        "uuid",
                        "parentUuid",
                        "leafUuid",
                        "isSidechain",
                        "isMeta",
                        "timestamp",
                        "toolUseID",
                        "sessionId",
                        "other",
                    ]),
                    id(),
                ),
                0..8,
            ),
            prop::option::of(id()),
            prop::option::of(prop_oneof![
                id(),
                prop::collection::vec(block(), 0..4).prop_map(Value::from),
            ]),
        )
            .prop_map(|(fields, attachment, content)| {
                let mut m = serde_json::Map::new();
                for (k, v) in fields {
                    m.insert(k.into(), v);
                }
                if let Some(a) = attachment {
                    m.insert("attachment".into(), json!({"type": a}));
                }
                if let Some(c) = content {
                    m.insert(
                        "message".into(),
                        json!({"id": "m", "role": "user", "content": c}),
                    );
                }
                Value::Object(m)
            })
    }

    proptest! {
        #[test]
        fn scanner_agrees_with_serde(v in record(), pretty in any::<bool>()) {
            let text = if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                serde_json::to_string(&v).unwrap()
            };
            let new = without_scan_stats(Header::parse(text.as_bytes()));
            prop_assert_eq!(new, reference::parse(text.as_bytes()), "{}", text);
        }

        #[test]
        fn truncated_records_have_no_header(v in record(), cut in 1usize..40) {
            let text = serde_json::to_string(&v).unwrap();
            let cut = text.len().saturating_sub(cut);
            prop_assert_eq!(Header::parse(&text.as_bytes()[..cut]), None);
        }
    }
}
