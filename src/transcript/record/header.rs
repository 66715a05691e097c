//! The cheap, tolerant view of a record that structural stages need.
//!
//! Parsing a header skips every large value (message text, tool output, base64) without
//! allocating it. A field of an unexpected JSON type is treated as absent rather than making
//! the whole record unreadable: new Claude Code versions change shapes often.

use std::borrow::Cow;

use crate::json::scan::{Cursor, RawStr, Scan};

use super::Kind;

/// Fields of a record that describe its place in the conversation.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Header {
    /// `type`.
    pub kind: Kind,
    /// `subtype` on `system` records (`compact_boundary`, …) or `attachment.type`.
    pub subtype: Option<String>,
    /// `uuid`.
    pub uuid: Option<String>,
    /// `parentUuid` (`None` for `null` or absent).
    pub parent_uuid: Option<String>,
    /// `logicalParentUuid` (compact boundaries).
    pub logical_parent_uuid: Option<String>,
    /// `leafUuid` (summary, last-prompt).
    pub leaf_uuid: Option<String>,
    /// `sourceToolAssistantUUID` (tool results, 2.1.x).
    pub source_tool_assistant_uuid: Option<String>,
    /// `sessionId`.
    pub session_id: Option<String>,
    /// `agentId` (sub-agent records).
    pub agent_id: Option<String>,
    /// `isSidechain`.
    pub is_sidechain: bool,
    /// `isMeta`.
    pub is_meta: bool,
    /// `isCompactSummary`.
    pub is_compact_summary: bool,
    /// `timestamp`.
    pub timestamp: Option<String>,
    /// `toolUseID` (progress and hook records).
    pub tool_use_id: Option<String>,
    /// `parentToolUseID` (progress records).
    pub parent_tool_use_id: Option<String>,
    /// `message.id` (assistant message pieces share it).
    pub message_id: Option<String>,
    /// `message.role`.
    pub role: Option<String>,
    /// True when `message.content` is a plain string.
    pub content_is_text: bool,
    /// `message.content` blocks, when it is a list.
    pub blocks: Vec<Block>,
    /// The first bytes (at most 64, as written, escapes undecoded) of `message.content` when it
    /// is a string, else of the first text block: enough to tell command output and interrupt
    /// markers from typed prompts.
    pub text_prefix: String,
    /// Length of the longest string in the record, as written (escapes not decoded): a
    /// stage that shortens long strings skips every record where this is under its limit.
    pub longest_string: usize,
    /// True when the record has a top-level `compactMetadata` (compaction boundaries), whose
    /// uuid references `relink` rewrites.
    pub has_compact_metadata: bool,
}

/// The structural part of one content block.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Block {
    /// Block `type` (`text`, `tool_use`, `tool_result`, `thinking`, `image`, …).
    pub kind: String,
    /// `id` of a `tool_use` block.
    pub id: Option<String>,
    /// `tool_use_id` of a `tool_result` block.
    pub tool_use_id: Option<String>,
    /// `name` of a `tool_use` block.
    pub name: Option<String>,
    /// `is_error` of a `tool_result` block.
    pub is_error: bool,
    /// First bytes of a `text` block's text (as written), see [`Header::text_prefix`].
    pub text_prefix: String,
}

impl Header {
    /// Parse the header of a JSON line; `None` when the line is not a JSON object.
    ///
    /// ```
    /// let h = cchist::transcript::record::Header::parse(br#"{"type":"user","uuid":"u1","parentUuid":null}"#).unwrap();
    /// assert_eq!(h.kind, cchist::transcript::record::Kind::User);
    /// assert_eq!(h.uuid.as_deref(), Some("u1"));
    /// assert_eq!(h.parent_uuid, None);
    /// ```
    pub fn parse(bytes: &[u8]) -> Option<Header> {
        // Invalid UTF-8 inside a string the header does not read is tolerated, as serde_json
        // tolerates it in a value it skips: one corrupt byte in a tool output must not take
        // the record out of the chain (its children would be re-parented around it).
        if trim_ascii_start(bytes).first() != Some(&b'{') {
            return None;
        }
        let mut c = Cursor::new(bytes);
        let mut h = Header::default();
        let mut attachment_type = None;
        c.object(|c, key| top_field(c, key, &mut h, &mut attachment_type))
            .ok()?;
        if !c.at_end() {
            return None;
        }
        if h.subtype.is_none() {
            h.subtype = attachment_type;
        }
        h.longest_string = c.longest_string;
        Some(h)
    }

    /// The header of an in-memory value.
    pub fn from_value(v: &serde_json::Value) -> Option<Header> {
        if !v.is_object() {
            return None;
        }
        Header::parse(&serde_json::to_vec(v).ok()?)
    }

    /// True for records that take part in the parent chain (they carry a `uuid`).
    pub fn is_chain(&self) -> bool {
        self.uuid.is_some()
    }

    /// Ids of the `tool_use` blocks in this record.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks
            .iter()
            .filter(|b| b.kind == "tool_use" || b.kind == "server_tool_use")
            .filter_map(|b| b.id.as_deref())
    }

    /// `tool_use_id`s answered by the `tool_result` blocks in this record.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks
            .iter()
            .filter(|b| b.kind == "tool_result")
            .filter_map(|b| b.tool_use_id.as_deref())
    }
}

/// The decoded name of a key (keys are almost never escaped).
fn key_name<'a>(k: &RawStr<'a>) -> Cow<'a, [u8]> {
    if k.escaped {
        Cow::Owned(k.decode().unwrap_or_default().into_bytes())
    } else {
        Cow::Borrowed(k.body)
    }
}

/// A string-valued field; any other type reads as absent.
fn text(c: &mut Cursor<'_>) -> Scan<Option<String>> {
    Ok(c.opt_string()?.and_then(|s| s.decode()))
}

fn top_field(
    c: &mut Cursor<'_>,
    key: RawStr<'_>,
    h: &mut Header,
    attachment_type: &mut Option<String>,
) -> Scan<()> {
    match &*key_name(&key) {
        b"type" => h.kind = text(c)?.map_or(Kind::Absent, |t| Kind::from_name(&t)),
        b"subtype" => h.subtype = text(c)?,
        b"uuid" => h.uuid = text(c)?,
        b"parentUuid" => h.parent_uuid = text(c)?,
        b"logicalParentUuid" => h.logical_parent_uuid = text(c)?,
        b"leafUuid" => h.leaf_uuid = text(c)?,
        b"sourceToolAssistantUUID" => h.source_tool_assistant_uuid = text(c)?,
        b"sessionId" => h.session_id = text(c)?,
        b"agentId" => h.agent_id = text(c)?,
        b"isSidechain" => h.is_sidechain = c.flag()?,
        b"isMeta" => h.is_meta = c.flag()?,
        b"isCompactSummary" => h.is_compact_summary = c.flag()?,
        b"timestamp" => h.timestamp = text(c)?,
        b"toolUseID" => h.tool_use_id = text(c)?,
        b"parentToolUseID" => h.parent_tool_use_id = text(c)?,
        b"attachment" if c.peek() == Some(b'{') => {
            *attachment_type = None;
            c.object(|c, k| {
                if k.is("type") {
                    *attachment_type = text(c)?;
                    Ok(())
                } else {
                    c.skip_value()
                }
            })?;
        }
        b"message" if c.peek() == Some(b'{') => message(c, h)?,
        b"compactMetadata" => {
            h.has_compact_metadata = true;
            c.skip_value()?;
        }
        _ => c.skip_value()?,
    }
    Ok(())
}

fn message(c: &mut Cursor<'_>, h: &mut Header) -> Scan<()> {
    c.object(|c, key| {
        match &*key_name(&key) {
            b"id" => h.message_id = text(c)?,
            b"role" => h.role = text(c)?,
            b"content" => {
                h.content_is_text = false;
                h.blocks.clear();
                h.text_prefix.clear();
                match c.peek() {
                    Some(b'"') => {
                        let s = c.string()?;
                        h.content_is_text = true;
                        h.text_prefix = raw_prefix(s.with_close);
                    }
                    Some(b'[') => {
                        c.array(|c| {
                            h.blocks.push(block(c)?);
                            Ok(())
                        })?;
                        if let Some(b) = h.blocks.iter().find(|b| b.kind == "text") {
                            h.text_prefix = b.text_prefix.clone();
                        }
                    }
                    _ => c.skip_value()?,
                }
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

fn block(c: &mut Cursor<'_>) -> Scan<Block> {
    let mut b = Block::default();
    if c.peek() != Some(b'{') {
        c.skip_value()?;
        return Ok(b);
    }
    c.object(|c, key| {
        match &*key_name(&key) {
            b"type" => b.kind = text(c)?.unwrap_or_default(),
            b"id" => b.id = text(c)?,
            b"tool_use_id" => b.tool_use_id = text(c)?,
            b"name" => b.name = text(c)?,
            b"is_error" => b.is_error = c.flag()?,
            b"text" => {
                b.text_prefix = match c.opt_string()? {
                    Some(s) => raw_prefix(s.with_close),
                    None => String::new(),
                }
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(b)
}

/// Up to 64 bytes of a JSON string's text as written (`raw` starts after the opening quote
/// and ends with the closing one), cut on a char boundary, trailing quotes trimmed.
fn raw_prefix(raw: &[u8]) -> String {
    // The slice starts and ends at ASCII quotes of a line checked to be UTF-8.
    let t = std::str::from_utf8(raw).unwrap_or_default();
    let mut end = t.len().min(64);
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    t[..end].trim_end_matches('"').to_string()
}

fn trim_ascii_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

/// The serde_json implementation the scanner replaced, kept as the oracle of the
/// differential tests.
#[cfg(test)]
mod reference {
    use super::{Block, Header, Kind};
    use serde::Deserialize;
    use serde_json::value::RawValue;

    #[derive(Deserialize)]
    struct RawHeader<'a> {
        #[serde(rename = "type", borrow, default)]
        ty: Option<&'a RawValue>,
        #[serde(borrow, default)]
        subtype: Option<&'a RawValue>,
        #[serde(borrow, default)]
        attachment: Option<&'a RawValue>,
        #[serde(borrow, default)]
        uuid: Option<&'a RawValue>,
        #[serde(rename = "parentUuid", borrow, default)]
        parent_uuid: Option<&'a RawValue>,
        #[serde(rename = "logicalParentUuid", borrow, default)]
        logical_parent_uuid: Option<&'a RawValue>,
        #[serde(rename = "leafUuid", borrow, default)]
        leaf_uuid: Option<&'a RawValue>,
        #[serde(rename = "sourceToolAssistantUUID", borrow, default)]
        source_tool_assistant_uuid: Option<&'a RawValue>,
        #[serde(rename = "sessionId", borrow, default)]
        session_id: Option<&'a RawValue>,
        #[serde(rename = "agentId", borrow, default)]
        agent_id: Option<&'a RawValue>,
        #[serde(rename = "isSidechain", borrow, default)]
        is_sidechain: Option<&'a RawValue>,
        #[serde(rename = "isMeta", borrow, default)]
        is_meta: Option<&'a RawValue>,
        #[serde(rename = "isCompactSummary", borrow, default)]
        is_compact_summary: Option<&'a RawValue>,
        #[serde(borrow, default)]
        timestamp: Option<&'a RawValue>,
        #[serde(rename = "toolUseID", borrow, default)]
        tool_use_id: Option<&'a RawValue>,
        #[serde(rename = "parentToolUseID", borrow, default)]
        parent_tool_use_id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        message: Option<&'a RawValue>,
    }

    #[derive(Deserialize)]
    struct RawMessage<'a> {
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        role: Option<&'a RawValue>,
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
    }

    #[derive(Deserialize)]
    struct RawBlock<'a> {
        #[serde(rename = "type", borrow, default)]
        ty: Option<&'a RawValue>,
        #[serde(borrow, default)]
        id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        tool_use_id: Option<&'a RawValue>,
        #[serde(borrow, default)]
        name: Option<&'a RawValue>,
        #[serde(borrow, default)]
        is_error: Option<&'a RawValue>,
        #[serde(borrow, default)]
        text: Option<&'a RawValue>,
    }

    #[derive(Deserialize)]
    struct RawAttachment<'a> {
        #[serde(rename = "type", borrow, default)]
        ty: Option<&'a RawValue>,
    }

    fn string(raw: Option<&RawValue>) -> Option<String> {
        let raw = raw?;
        if !raw.get().starts_with('"') {
            return None;
        }
        serde_json::from_str(raw.get()).ok()
    }

    fn flag(raw: Option<&RawValue>) -> bool {
        raw.is_some_and(|r| r.get() == "true")
    }

    fn from_slice<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Option<T> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        de.disable_recursion_limit();
        let v = T::deserialize(serde_stacker::Deserializer::new(&mut de)).ok()?;
        de.end().ok()?;
        Some(v)
    }

    pub fn parse(bytes: &[u8]) -> Option<Header> {
        let trimmed = super::trim_ascii_start(bytes);
        if trimmed.first() != Some(&b'{') {
            return None;
        }
        let raw: RawHeader = from_slice(bytes)?;
        let mut h = Header {
            kind: string(raw.ty).map_or(Kind::Absent, |t| Kind::from_name(&t)),
            subtype: string(raw.subtype),
            uuid: string(raw.uuid),
            parent_uuid: string(raw.parent_uuid),
            logical_parent_uuid: string(raw.logical_parent_uuid),
            leaf_uuid: string(raw.leaf_uuid),
            source_tool_assistant_uuid: string(raw.source_tool_assistant_uuid),
            session_id: string(raw.session_id),
            agent_id: string(raw.agent_id),
            is_sidechain: flag(raw.is_sidechain),
            is_meta: flag(raw.is_meta),
            is_compact_summary: flag(raw.is_compact_summary),
            timestamp: string(raw.timestamp),
            tool_use_id: string(raw.tool_use_id),
            parent_tool_use_id: string(raw.parent_tool_use_id),
            ..Header::default()
        };
        if h.subtype.is_none() {
            if let Some(att) = raw.attachment {
                h.subtype =
                    from_slice::<RawAttachment>(att.get().as_bytes()).and_then(|a| string(a.ty));
            }
        }
        if let Some(m) = raw
            .message
            .and_then(|msg| from_slice::<RawMessage>(msg.get().as_bytes()))
        {
            h.message_id = string(m.id);
            h.role = string(m.role);
            if let Some(c) = m.content {
                let text = c.get();
                if text.starts_with('"') {
                    h.content_is_text = true;
                    h.text_prefix = raw_prefix(c);
                } else if text.starts_with('[') {
                    let blocks: Vec<&RawValue> = from_slice(text.as_bytes()).unwrap_or_default();
                    h.blocks = blocks.into_iter().map(block).collect();
                    if let Some(b) = h.blocks.iter().find(|b| b.kind == "text") {
                        h.text_prefix = b.text_prefix.clone();
                    }
                }
            }
        }
        Some(h)
    }

    fn block(raw: &RawValue) -> Block {
        from_slice::<RawBlock>(raw.get().as_bytes())
            .map(|rb| Block {
                kind: string(rb.ty).unwrap_or_default(),
                id: string(rb.id),
                tool_use_id: string(rb.tool_use_id),
                name: string(rb.name),
                is_error: flag(rb.is_error),
                // Deliberate change: the scanner reads no prefix from a `text` that is not a
                // string (the old code took the first bytes of any JSON value).
                text_prefix: rb
                    .text
                    .filter(|t| t.get().starts_with('"'))
                    .map(raw_prefix)
                    .unwrap_or_default(),
            })
            .unwrap_or_default()
    }

    fn raw_prefix(raw: &RawValue) -> String {
        let t = raw.get();
        let t = t.strip_prefix('"').unwrap_or(t);
        let mut end = t.len().min(64);
        while !t.is_char_boundary(end) {
            end -= 1;
        }
        t[..end].trim_end_matches('"').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tool_blocks_and_flags() {
        let h = Header::parse(
            br#"{"type":"assistant","uuid":"a","parentUuid":"p","isSidechain":true,"message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#,
        )
        .unwrap();
        assert!(h.is_sidechain);
        assert_eq!(h.message_id.as_deref(), Some("msg_1"));
        assert_eq!(h.tool_use_ids().collect::<Vec<_>>(), vec!["toolu_1"]);
        assert_eq!(h.blocks[0].name.as_deref(), Some("Bash"));
    }

    #[test]
    fn odd_field_types_are_absent_not_fatal() {
        let h = Header::parse(br#"{"type":"user","uuid":7,"isSidechain":"yes","message":"x"}"#)
            .unwrap();
        assert_eq!(h.uuid, None);
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
        assert_eq!(h.uuid.as_deref(), Some("a/b"));
    }
    fn without_scan_stats(h: Option<Header>) -> Option<Header> {
        h.map(|h| Header {
            longest_string: 0,
            has_compact_metadata: false,
            ..h
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
        let h =
            Header::parse(br#"{"type":"user","x":{"compactMetadata":1},"t":"compactMetadata"}"#);
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
        assert_eq!(Header::parse(line).unwrap().uuid.as_deref(), Some("v1"));
        assert_eq!(reference::parse(line).unwrap().uuid.as_deref(), Some("v1"));
        // A field the header reads that is not UTF-8 reads as absent.
        let line = b"{\"type\":\"user\",\"uuid\":\"\xff\"}";
        assert_eq!(Header::parse(line).unwrap().uuid, None);
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
}
