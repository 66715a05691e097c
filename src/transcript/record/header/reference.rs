//! A reference implementation the header scanner's tests compare against (serde).

use super::{BlockSpans, Build, Kind, B, F};
use crate::transcript::record::Header;
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
    let mut b = Build::default();
    b.h.kind = string(raw.ty).map_or(Kind::Absent, |t| Kind::from_name(&t));
    for (f, v) in [
        (F::Subtype, raw.subtype),
        (F::Uuid, raw.uuid),
        (F::ParentUuid, raw.parent_uuid),
        (F::LogicalParentUuid, raw.logical_parent_uuid),
        (F::LeafUuid, raw.leaf_uuid),
        (F::SourceToolAssistantUuid, raw.source_tool_assistant_uuid),
        (F::SessionId, raw.session_id),
        (F::AgentId, raw.agent_id),
        (F::Timestamp, raw.timestamp),
        (F::ToolUseId, raw.tool_use_id),
        (F::ParentToolUseId, raw.parent_tool_use_id),
    ] {
        b.set(f, string(v).as_deref());
    }
    b.h.is_sidechain = flag(raw.is_sidechain);
    b.h.is_meta = flag(raw.is_meta);
    b.h.is_compact_summary = flag(raw.is_compact_summary);
    if string(raw.subtype).is_none() {
        if let Some(att) = raw.attachment {
            let t = from_slice::<RawAttachment>(att.get().as_bytes()).and_then(|a| string(a.ty));
            b.set(F::Subtype, t.as_deref());
        }
    }
    if let Some(m) = raw
        .message
        .and_then(|msg| from_slice::<RawMessage>(msg.get().as_bytes()))
    {
        b.set(F::MessageId, string(m.id).as_deref());
        b.set(F::Role, string(m.role).as_deref());
        if let Some(c) = m.content {
            let text = c.get();
            if text.starts_with('"') {
                b.h.content_is_text = true;
                b.set(F::TextPrefix, Some(&raw_prefix(c)));
            } else if text.starts_with('[') {
                let blocks: Vec<&RawValue> = from_slice(text.as_bytes()).unwrap_or_default();
                for raw in blocks {
                    let s = block(&mut b, raw);
                    b.blocks.push(s);
                }
                let first = b
                    .blocks
                    .iter()
                    .find(|s| s.spans[B::Kind as usize].get(&b.text) == Some("text"))
                    .map(|s| s.spans[B::TextPrefix as usize]);
                if let Some(p) = first {
                    b.h.spans[F::TextPrefix as usize] = p;
                }
            }
        }
    }
    Some(b.finish())
}

fn block(b: &mut Build, raw: &RawValue) -> BlockSpans {
    let mut s = BlockSpans::default();
    if let Some(rb) = from_slice::<RawBlock>(raw.get().as_bytes()) {
        let kind = string(rb.ty).unwrap_or_default();
        s.spans[B::Kind as usize] = b.push(&kind);
        s.spans[B::Id as usize] = b.push_opt(string(rb.id).as_deref());
        s.spans[B::ToolUseId as usize] = b.push_opt(string(rb.tool_use_id).as_deref());
        s.spans[B::Name as usize] = b.push_opt(string(rb.name).as_deref());
        s.is_error = flag(rb.is_error);
        // Deliberate change: the scanner reads no prefix from a `text` that is not a
        // string (the old code took the first bytes of any JSON value).
        let prefix = rb
            .text
            .filter(|t| t.get().starts_with('"'))
            .map(raw_prefix)
            .unwrap_or_default();
        s.spans[B::TextPrefix as usize] = b.push(&prefix);
    }
    s
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
