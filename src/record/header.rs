//! The cheap, tolerant view of a record that structural stages need.
//!
//! Parsing a header skips every large value (message text, tool output, base64) without
//! allocating it. A field of an unexpected JSON type is treated as absent rather than making
//! the whole record unreadable: new Claude Code versions change shapes often.

use serde::Deserialize;
use serde_json::value::RawValue;

/// Fields of a record that describe its place in the conversation.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Header {
    /// `type` (`user`, `assistant`, `system`, `progress`, `summary`, …); empty when absent.
    pub ty: String,
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

impl Header {
    /// Parse the header of a JSON line; `None` when the line is not a JSON object.
    ///
    /// ```
    /// let h = cchist::record::Header::parse(br#"{"type":"user","uuid":"u1","parentUuid":null}"#).unwrap();
    /// assert_eq!(h.ty, "user");
    /// assert_eq!(h.uuid.as_deref(), Some("u1"));
    /// assert_eq!(h.parent_uuid, None);
    /// ```
    pub fn parse(bytes: &[u8]) -> Option<Header> {
        let trimmed = trim_ascii_start(bytes);
        if trimmed.first() != Some(&b'{') {
            return None;
        }
        let raw: RawHeader = from_slice(bytes)?;
        let mut h = Header {
            ty: string(raw.ty).unwrap_or_default(),
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

    /// True for a `system` record that starts a compacted segment.
    pub fn is_compact_boundary(&self) -> bool {
        self.ty == "system" && self.subtype.as_deref() == Some("compact_boundary")
    }
}

fn block(raw: &RawValue) -> Block {
    from_slice::<RawBlock>(raw.get().as_bytes())
        .map(|rb| Block {
            kind: string(rb.ty).unwrap_or_default(),
            id: string(rb.id),
            tool_use_id: string(rb.tool_use_id),
            name: string(rb.name),
            is_error: flag(rb.is_error),
            text_prefix: rb.text.map(raw_prefix).unwrap_or_default(),
        })
        .unwrap_or_default()
}

/// Up to 64 bytes of a JSON string's text, without the opening quote, cut on a char boundary.
fn raw_prefix(raw: &RawValue) -> String {
    let t = raw.get();
    let t = t.strip_prefix('"').unwrap_or(t);
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
        assert_eq!(h.ty, "user");
        assert_eq!(h.uuid.as_deref(), Some("a/b"));
    }
}
