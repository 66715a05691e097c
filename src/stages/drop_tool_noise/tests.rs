use super::*;
use crate::error::Origin;
use crate::io::framing::lines;

fn run(opts: DropToolNoiseOptions, text: &str) -> String {
    let st = DropToolNoise::new(opts).unwrap();
    let mut s = Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect());
    let mut cx = Cx::new(Origin::stdin());
    st.session(&mut s, &mut cx).unwrap();
    let mut out = Vec::new();
    for r in &s.records {
        r.write_to(&mut out);
    }
    String::from_utf8(out).unwrap()
}

#[test]
fn cap_keeps_head_and_tail_under_the_cap() {
    let text: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let out = cap_text(&text, 1000).unwrap();
    assert!(out.len() <= 1000, "{}", out.len());
    assert!(out.starts_with("line 0\n"));
    assert!(out.ends_with("line 4999\n"));
    assert!(out.contains("KiB of tool output removed by cchist …]"));
    assert_eq!(cap_text(&out, 1000), None, "idempotent");
    let wide = "é".repeat(2000);
    assert!(cap_text(&wide, 300).unwrap().len() <= 300);
}

const CALLS: &str = concat!(
    r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
    "\n",
    r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__x__y","input":{}}]}}"#,
    "\n",
    r#"{"type":"progress","uuid":"p","parentUuid":"2","toolUseID":"t1","data":{}}"#,
    "\n",
    r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":"ok"}"#,
    "\n",
    r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"m2","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"mcp__x__z","input":{}}]}}"#,
    "\n",
    r#"{"type":"user","uuid":"5","parentUuid":"4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"boom","is_error":true}]}}"#,
    "\n",
    r#"{"type":"api-request","id":"r"}"#,
    "\n",
    r#"{"type":"assistant","uuid":"6","parentUuid":"5","message":{"id":"m3","role":"assistant","content":[{"type":"text","text":"done"}]}}"#,
    "\n",
);

#[test]
fn drops_tool_calls_by_glob_keeping_errors() {
    let opts = DropToolNoiseOptions {
        drop_tools: vec!["mcp__*".into()],
        ..Default::default()
    };
    let out = run(opts, CALLS);
    assert!(!out.contains("\"t1\""), "{out}");
    assert!(out.contains("\"t2\""), "{out}");
    assert!(!out.contains("api-request"), "{out}");
    assert!(out.contains(r#""uuid":"4","parentUuid":"1""#), "{out}");
    assert!(
        crate::findings::validate::validate(out.as_bytes()).is_empty(),
        "{out}"
    );
    let opts = DropToolNoiseOptions {
        drop_tools: vec!["mcp__*".into()],
        keep_errors: false,
        ..Default::default()
    };
    let out = run(opts, CALLS);
    assert!(!out.contains("tool_"), "{out}");
    assert!(out.contains(r#""uuid":"6","parentUuid":"1""#), "{out}");
}

#[test]
fn collapses_identical_reads_and_replaces_images() {
    let read = |n: &str, p: &str| {
        format!(
            concat!(
                r#"{{"type":"assistant","uuid":"a{n}","parentUuid":"{p}","message":{{"id":"m{n}","role":"assistant","content":[{{"type":"tool_use","id":"r{n}","name":"Read","input":{{"file_path":"/x"}}}}]}}}}"#,
                "\n",
                r#"{{"type":"user","uuid":"u{n}","parentUuid":"a{n}","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"r{n}","content":[{{"type":"text","text":"same"}},{{"type":"image","source":{{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}}}]}}]}}}}"#,
                "\n"
            ),
            n = n,
            p = p
        )
    };
    let text = format!(
        "{}{}{}",
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#
            .to_string()
            + "\n",
        read("1", "1"),
        read("2", "u1"),
    );
    let out = run(DropToolNoiseOptions::default(), &text);
    assert!(!out.contains("\"r1\""), "{out}");
    assert!(out.contains("\"r2\""), "{out}");
    assert!(out.contains(r#""uuid":"a2","parentUuid":"1""#), "{out}");
    assert!(
        out.contains("[image removed by cchist: image/png, 9 B]"),
        "{out}"
    );
    assert!(!out.contains("iVBOR"), "{out}");
}

#[test]
fn server_tool_calls_go_with_their_result_blocks() {
    let text = concat!(
        r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"3","parentUuid":"2","message":{"id":"m","role":"assistant","content":[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"found"}]}}"#,
        "\n",
    );
    // relink leaves a server tool call alone (its result is in the message itself).
    let none = DropToolNoiseOptions {
        collapse_reads: false,
        ..Default::default()
    };
    assert_eq!(run(none, text), text);
    let opts = DropToolNoiseOptions {
        drop_tools: vec!["web_*".into()],
        ..Default::default()
    };
    let out = run(opts, text);
    assert!(!out.contains("srvtoolu_1"), "{out}");
    assert!(out.contains(r#""uuid":"4","parentUuid":"1""#), "{out}");
}

/// The splicing path caps exactly what the parsing path caps, and leaves every other byte.
#[test]
fn splicing_caps_like_parsing() {
    let long = |c: char, n: usize| -> String {
        (0..n)
            .map(|i| if i % 50 == 49 { '\n' } else { c })
            .collect()
    };
    let records = [
        json!({"type":"user","message":{"role":"user","content":[
            {"tool_use_id":"t1","type":"tool_result","content":long('a', 5000)}]},
            "toolUseResult":{"stdout":long('b', 3000),"stderr":"","nested":[{"x":long('"', 900)}]}}),
        json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t2","content":[
                {"type":"text","text":long('é', 2000)},{"text":long('c', 2000),"type":"text"}]}]}}),
        // Not a tool result: nothing is capped, not even toolUseResult.
        json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":long('d', 5000)}]},
            "toolUseResult":long('e', 5000)}),
        json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t3","content":"short"}]},"toolUseResult":long('\u{1}', 700)}),
        // Images: a prompt's, one inside a result, and the result's base64 copy.
        json!({"type":"user","message":{"role":"user","content":[
            {"type":"text","text":"see"},
            {"source":{"data":"iVBORw0KGgo=","media_type":"image/png","type":"base64"},"type":"image"}]}}),
        json!({"type":"user","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t4","content":[
                {"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":long('Q', 4000)}},
                {"type":"image","source":{"type":"url","url":"https://x"}}]}]},
            "toolUseResult":{"type":"image","file":{"base64":long('Q', 4000),"type":"image/jpeg"},"empty":{"base64":""}}}),
    ];
    let st = DropToolNoise::new(DropToolNoiseOptions {
        max_tool_output: 512,
        ..Default::default()
    })
    .unwrap();
    for v in records {
        let raw = serde_json::to_vec(&v).unwrap();
        let mut parsed = v.clone();
        let mut counts = Counts::default();
        st.transform(&mut parsed, &mut counts);
        let (spliced, got) = edit_by_splicing(&raw, 512, true).unwrap();
        assert_eq!((got.capped, got.images), (counts.capped, counts.images));
        if got.capped + got.images == 0 {
            assert_eq!(parsed, v, "nothing to edit");
            continue;
        }
        let spliced: Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(spliced, parsed);
    }
    // Bytes outside the capped strings are kept as written.
    let raw = br#"{"b" : 1.50,"message":{"content":[{"type":"tool_result","content":"x"}]},"toolUseResult":{"s":"\u00e9"}}"#;
    let (_, counts) = edit_by_splicing(raw, 512, true).unwrap();
    assert_eq!(counts.capped + counts.images, 0);
    let raw = br#"{"b" : 1.50,"message":{"content":[{"type":"tool_result","content":"x"}]},"toolUseResult":{"s":"\u00e9","base64":"AAAA"}}"#;
    let (out, counts) = edit_by_splicing(raw, 512, true).unwrap();
    assert_eq!(counts.images, 1);
    assert_eq!(
        out,
        br#"{"b" : 1.50,"message":{"content":[{"type":"tool_result","content":"x"}]},"toolUseResult":{"s":"\u00e9","base64":""}}"#
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Text with escapes, multi-byte characters and newlines, short or over the cap.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z \"\\\n\u{1}é😀]{0,40}",
            ("[a-z\n\"é]{1,8}", 20usize..200).prop_map(|(unit, n)| unit.repeat(n)),
        ]
    }

    fn item() -> impl Strategy<Value = Value> {
        prop_oneof![
            text().prop_map(|t| json!({"type": "text", "text": t})),
            text().prop_map(|t| json!({"text": t, "type": "text"})),
            text().prop_map(|d| json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": d}})),
            Just(json!({"type": "image", "source": {"type": "url", "url": "u"}})),
        ]
    }

    fn block() -> impl Strategy<Value = Value> {
        prop_oneof![
            text().prop_map(|t| json!({"type": "tool_result", "tool_use_id": "t", "content": t})),
            prop::collection::vec(item(), 0..4)
                .prop_map(|c| json!({"content": c, "type": "tool_result", "tool_use_id": "t"})),
            item(),
            text().prop_map(|t| json!({"type": "thinking", "thinking": t})),
        ]
    }

    fn tool_use_result() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            text().prop_map(Value::from),
            text().prop_map(|b| json!({"base64": b})),
            any::<i32>().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Splicing makes exactly the edits of the parsing path, on any mix of blocks.
        #[test]
        fn splicing_matches_parsing(
            blocks in prop::collection::vec(block(), 0..4),
            tur in prop::option::of(tool_use_result()),
            images in any::<bool>(),
        ) {
            let mut v = json!({"type": "user", "message": {"role": "user", "content": blocks}});
            if let Some(t) = tur {
                v["toolUseResult"] = t;
            }
            let st = DropToolNoise::new(DropToolNoiseOptions {
                max_tool_output: 256,
                replace_images: images,
                ..Default::default()
            })
            .unwrap();
            let raw = serde_json::to_vec(&v).unwrap();
            let mut parsed = v.clone();
            let mut counts = Counts::default();
            st.transform(&mut parsed, &mut counts);
            let (spliced, got) = edit_by_splicing(&raw, 256, images).unwrap();
            prop_assert_eq!((got.capped, got.images), (counts.capped, counts.images));
            if got.capped + got.images > 0 {
                let spliced: Value = serde_json::from_slice(&spliced).unwrap();
                prop_assert_eq!(spliced, parsed);
            } else {
                prop_assert_eq!(parsed, v);
            }
        }
    }
}

#[test]
fn small_cap_is_rejected() {
    let e = DropToolNoise::new(DropToolNoiseOptions {
        max_tool_output: 10,
        ..Default::default()
    })
    .err()
    .unwrap();
    assert!(e.key.as_deref() == Some("max_tool_output"), "{e}");
}
