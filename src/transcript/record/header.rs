//! The cheap, tolerant view of a record that structural stages need.
//!
//! Parsing a header skips every large value (message text, tool output, base64) without
//! allocating it. A field of an unexpected JSON type is treated as absent rather than making
//! the whole record unreadable: new Claude Code versions change shapes often.
//!
//! Layout: a session holds one header per record, so the header is compact. Every string it
//! reads (ids, timestamps, the text prefixes, the fields of content blocks) is decoded into one
//! arena (a single allocation, none for a record without such fields) and named by a
//! `(start, len)` span; flags and the kind are small fixed fields. Read the strings through
//! the accessors ([`Header::uuid`], [`Block::id`], …).

use std::borrow::Cow;
use std::fmt;

use crate::json::scan::{Cursor, RawStr, Scan};

use super::Kind;

/// Where a string sits in a header's arena; [`Span::ABSENT`] for a field that is not there.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    const ABSENT: Span = Span {
        start: u32::MAX,
        len: 0,
    };
    const EMPTY: Span = Span { start: 0, len: 0 };

    fn get(self, text: &str) -> Option<&str> {
        if self.start == u32::MAX {
            return None;
        }
        let (s, l) = (self.start as usize, self.len as usize);
        text.get(s..s + l)
    }
}

/// The string fields of a header, as indexes into [`Header::spans`].
#[derive(Clone, Copy)]
enum F {
    Subtype,
    Uuid,
    ParentUuid,
    LogicalParentUuid,
    LeafUuid,
    SourceToolAssistantUuid,
    SessionId,
    AgentId,
    Timestamp,
    ToolUseId,
    ParentToolUseId,
    MessageId,
    Role,
    TextPrefix,
}
const FIELDS: usize = F::TextPrefix as usize + 1;

/// The string fields of a block, as indexes into [`BlockSpans::spans`].
#[derive(Clone, Copy)]
enum B {
    Kind,
    Id,
    ToolUseId,
    Name,
    TextPrefix,
}
const BLOCK_FIELDS: usize = B::TextPrefix as usize + 1;

/// The structural part of one content block, as spans into its header's arena.
#[derive(Clone, Copy)]
struct BlockSpans {
    spans: [Span; BLOCK_FIELDS],
    is_error: bool,
}

impl Default for BlockSpans {
    fn default() -> Self {
        let mut spans = [Span::ABSENT; BLOCK_FIELDS];
        spans[B::Kind as usize] = Span::EMPTY;
        spans[B::TextPrefix as usize] = Span::EMPTY;
        BlockSpans {
            spans,
            is_error: false,
        }
    }
}

/// Fields of a record that describe its place in the conversation.
#[derive(Clone)]
pub struct Header {
    /// `type`.
    pub kind: Kind,
    /// `isSidechain`.
    pub is_sidechain: bool,
    /// `isMeta`.
    pub is_meta: bool,
    /// `isCompactSummary`.
    pub is_compact_summary: bool,
    /// True when `message.content` is a plain string.
    pub content_is_text: bool,
    /// True when the record has a top-level `compactMetadata` (compaction boundaries), whose
    /// uuid references `relink` rewrites.
    pub has_compact_metadata: bool,
    /// Length of the longest string in the record, as written (escapes not decoded): a
    /// stage that shortens long strings skips every record where this is under its limit.
    pub longest_string: usize,
    /// The decoded strings of every field, back to back.
    text: Box<str>,
    spans: [Span; FIELDS],
    blocks: Box<[BlockSpans]>,
}

impl Default for Header {
    fn default() -> Self {
        let mut spans = [Span::ABSENT; FIELDS];
        spans[F::TextPrefix as usize] = Span::EMPTY;
        Header {
            kind: Kind::Absent,
            is_sidechain: false,
            is_meta: false,
            is_compact_summary: false,
            content_is_text: false,
            has_compact_metadata: false,
            longest_string: 0,
            text: Box::default(),
            spans,
            blocks: Box::default(),
        }
    }
}

/// One content block of a header (`message.content[i]`), borrowed from it.
#[derive(Clone, Copy)]
pub struct Block<'h> {
    text: &'h str,
    s: &'h BlockSpans,
}

impl<'h> Block<'h> {
    /// Block `type` (`text`, `tool_use`, `tool_result`, `thinking`, `image`, …); `""` when
    /// absent.
    pub fn kind(&self) -> &'h str {
        self.s.spans[B::Kind as usize].get(self.text).unwrap_or("")
    }
    /// `id` of a `tool_use` block.
    pub fn id(&self) -> Option<&'h str> {
        self.s.spans[B::Id as usize].get(self.text)
    }
    /// `tool_use_id` of a `tool_result` block.
    pub fn tool_use_id(&self) -> Option<&'h str> {
        self.s.spans[B::ToolUseId as usize].get(self.text)
    }
    /// `name` of a `tool_use` block.
    pub fn name(&self) -> Option<&'h str> {
        self.s.spans[B::Name as usize].get(self.text)
    }
    /// `is_error` of a `tool_result` block.
    pub fn is_error(&self) -> bool {
        self.s.is_error
    }
    /// First bytes of a `text` block's text (as written), see [`Header::text_prefix`].
    pub fn text_prefix(&self) -> &'h str {
        self.s.spans[B::TextPrefix as usize]
            .get(self.text)
            .unwrap_or("")
    }
}

impl fmt::Debug for Block<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Block")
            .field("kind", &self.kind())
            .field("id", &self.id())
            .field("tool_use_id", &self.tool_use_id())
            .field("name", &self.name())
            .field("is_error", &self.is_error())
            .field("text_prefix", &self.text_prefix())
            .finish()
    }
}

impl PartialEq for Block<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.kind() == o.kind()
            && self.id() == o.id()
            && self.tool_use_id() == o.tool_use_id()
            && self.name() == o.name()
            && self.is_error() == o.is_error()
            && self.text_prefix() == o.text_prefix()
    }
}

/// The content blocks of a header, in order.
#[derive(Clone, Copy)]
pub struct Blocks<'h> {
    text: &'h str,
    all: &'h [BlockSpans],
}

impl<'h> Blocks<'h> {
    /// Number of blocks.
    pub fn len(&self) -> usize {
        self.all.len()
    }
    /// True when there is none (content is not a list, or an empty one).
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
    /// Block `i`, if there is one.
    pub fn get(&self, i: usize) -> Option<Block<'h>> {
        let text = self.text;
        self.all.get(i).map(|s| Block { text, s })
    }
    /// The blocks in order.
    pub fn iter(&self) -> BlockIter<'h> {
        BlockIter {
            text: self.text,
            it: self.all.iter(),
        }
    }
}

impl<'h> IntoIterator for Blocks<'h> {
    type Item = Block<'h>;
    type IntoIter = BlockIter<'h>;
    fn into_iter(self) -> BlockIter<'h> {
        self.iter()
    }
}

impl<'h> IntoIterator for &Blocks<'h> {
    type Item = Block<'h>;
    type IntoIter = BlockIter<'h>;
    fn into_iter(self) -> BlockIter<'h> {
        self.iter()
    }
}

/// Iterator over the [`Blocks`] of a header.
#[derive(Clone)]
pub struct BlockIter<'h> {
    text: &'h str,
    it: std::slice::Iter<'h, BlockSpans>,
}

impl<'h> Iterator for BlockIter<'h> {
    type Item = Block<'h>;
    fn next(&mut self) -> Option<Block<'h>> {
        let text = self.text;
        self.it.next().map(|s| Block { text, s })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.it.size_hint()
    }
}

impl DoubleEndedIterator for BlockIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let text = self.text;
        self.it.next_back().map(|s| Block { text, s })
    }
}

impl ExactSizeIterator for BlockIter<'_> {}

macro_rules! string_fields {
    ($($(#[$doc:meta])* $name:ident => $f:ident,)*) => {
        $(
            $(#[$doc])*
            pub fn $name(&self) -> Option<&str> {
                self.spans[F::$f as usize].get(&self.text)
            }
        )*
    };
}

impl Header {
    string_fields! {
        /// `subtype` on `system` records (`compact_boundary`, …) or `attachment.type`.
        subtype => Subtype,
        /// `uuid`.
        uuid => Uuid,
        /// `parentUuid` (`None` for `null` or absent).
        parent_uuid => ParentUuid,
        /// `logicalParentUuid` (compact boundaries).
        logical_parent_uuid => LogicalParentUuid,
        /// `leafUuid` (summary, last-prompt).
        leaf_uuid => LeafUuid,
        /// `sourceToolAssistantUUID` (tool results, 2.1.x).
        source_tool_assistant_uuid => SourceToolAssistantUuid,
        /// `sessionId`.
        session_id => SessionId,
        /// `agentId` (sub-agent records).
        agent_id => AgentId,
        /// `timestamp`.
        timestamp => Timestamp,
        /// `toolUseID` (progress and hook records).
        tool_use_id => ToolUseId,
        /// `parentToolUseID` (progress records).
        parent_tool_use_id => ParentToolUseId,
        /// `message.id` (assistant message pieces share it).
        message_id => MessageId,
        /// `message.role`.
        role => Role,
    }

    /// The first bytes (at most 64, as written, escapes undecoded) of `message.content` when it
    /// is a string, else of the first text block: enough to tell command output and interrupt
    /// markers from typed prompts. `""` when there is none.
    pub fn text_prefix(&self) -> &str {
        self.spans[F::TextPrefix as usize]
            .get(&self.text)
            .unwrap_or("")
    }

    /// `message.content` blocks, when it is a list (else none).
    pub fn blocks(&self) -> Blocks<'_> {
        Blocks {
            text: &self.text,
            all: &self.blocks,
        }
    }

    /// True for the header of a record with none of the fields a header reads and no string
    /// (`{}`): every such header reads the same, so records may share one.
    pub fn is_blank(&self) -> bool {
        self.kind == Kind::Absent
            && self.text.is_empty()
            && self.blocks.is_empty()
            && self.longest_string == 0
            && !(self.is_sidechain
                || self.is_meta
                || self.is_compact_summary
                || self.content_is_text
                || self.has_compact_metadata)
            && self.spans == Header::default().spans
    }

    /// Parse the header of a JSON line; `None` when the line is not a JSON object.
    ///
    /// ```
    /// let h = cchist::transcript::record::Header::parse(br#"{"type":"user","uuid":"u1","parentUuid":null}"#).unwrap();
    /// assert_eq!(h.kind, cchist::transcript::record::Kind::User);
    /// assert_eq!(h.uuid(), Some("u1"));
    /// assert_eq!(h.parent_uuid(), None);
    /// ```
    pub fn parse(bytes: &[u8]) -> Option<Header> {
        // Invalid UTF-8 inside a string the header does not read is tolerated, as serde_json
        // tolerates it in a value it skips: one corrupt byte in a tool output must not take
        // the record out of the chain (its children would be re-parented around it).
        if trim_ascii_start(bytes).first() != Some(&b'{') {
            return None;
        }
        let mut c = Cursor::new(bytes);
        let mut b = Build::default();
        let mut attachment_type = Span::ABSENT;
        c.object(|c, key| top_field(c, key, &mut b, &mut attachment_type))
            .ok()?;
        if !c.at_end() {
            return None;
        }
        if b.h.spans[F::Subtype as usize] == Span::ABSENT {
            b.h.spans[F::Subtype as usize] = attachment_type;
        }
        b.h.longest_string = c.longest_string;
        Some(b.finish())
    }

    /// The header of an in-memory value.
    pub fn from_value(v: &serde_json::Value) -> Option<Header> {
        if !v.is_object() {
            return None;
        }
        Header::parse(&crate::json::number::to_vec(v))
    }

    /// True for records that take part in the parent chain (they carry a `uuid`).
    pub fn is_chain(&self) -> bool {
        self.uuid().is_some()
    }

    /// Ids of the `tool_use` blocks in this record.
    pub fn tool_use_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks()
            .iter()
            .filter(|b| b.kind() == "tool_use" || b.kind() == "server_tool_use")
            .filter_map(|b| b.id())
    }

    /// `tool_use_id`s answered by the `tool_result` blocks in this record.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = &str> {
        self.blocks()
            .iter()
            .filter(|b| b.kind() == "tool_result")
            .filter_map(|b| b.tool_use_id())
    }
}

impl PartialEq for Header {
    fn eq(&self, o: &Self) -> bool {
        self.kind == o.kind
            && self.is_sidechain == o.is_sidechain
            && self.is_meta == o.is_meta
            && self.is_compact_summary == o.is_compact_summary
            && self.content_is_text == o.content_is_text
            && self.has_compact_metadata == o.has_compact_metadata
            && self.longest_string == o.longest_string
            && (0..FIELDS).all(|i| self.spans[i].get(&self.text) == o.spans[i].get(&o.text))
            && self.blocks().iter().eq(o.blocks().iter())
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Header")
            .field("kind", &self.kind)
            .field("subtype", &self.subtype())
            .field("uuid", &self.uuid())
            .field("parent_uuid", &self.parent_uuid())
            .field("logical_parent_uuid", &self.logical_parent_uuid())
            .field("leaf_uuid", &self.leaf_uuid())
            .field(
                "source_tool_assistant_uuid",
                &self.source_tool_assistant_uuid(),
            )
            .field("session_id", &self.session_id())
            .field("agent_id", &self.agent_id())
            .field("is_sidechain", &self.is_sidechain)
            .field("is_meta", &self.is_meta)
            .field("is_compact_summary", &self.is_compact_summary)
            .field("timestamp", &self.timestamp())
            .field("tool_use_id", &self.tool_use_id())
            .field("parent_tool_use_id", &self.parent_tool_use_id())
            .field("message_id", &self.message_id())
            .field("role", &self.role())
            .field("content_is_text", &self.content_is_text)
            .field("blocks", &self.blocks().iter().collect::<Vec<_>>())
            .field("text_prefix", &self.text_prefix())
            .field("longest_string", &self.longest_string)
            .field("has_compact_metadata", &self.has_compact_metadata)
            .finish()
    }
}

/// A header being read: its fixed fields, the arena its strings go to, its blocks.
#[derive(Default)]
struct Build {
    h: Header,
    text: String,
    blocks: Vec<BlockSpans>,
}

impl Build {
    /// Append `t` to the arena. A string past 4 GiB of arena (a line of that size) reads as
    /// absent.
    fn push(&mut self, t: &str) -> Span {
        match (u32::try_from(self.text.len()), u32::try_from(t.len())) {
            (Ok(start), Ok(len)) if start.checked_add(len).is_some_and(|e| e < u32::MAX) => {
                self.text.push_str(t);
                Span { start, len }
            }
            _ => Span::ABSENT,
        }
    }

    fn push_opt(&mut self, t: Option<&str>) -> Span {
        t.map_or(Span::ABSENT, |t| self.push(t))
    }

    #[cfg(test)]
    fn set(&mut self, f: F, t: Option<&str>) {
        self.h.spans[f as usize] = self.push_opt(t);
    }

    /// A string-valued field, decoded into the arena; any other type reads as absent.
    fn text(&mut self, c: &mut Cursor<'_>) -> Scan<Span> {
        Ok(match c.opt_string()? {
            Some(s) => self.push_raw(&s),
            None => Span::ABSENT,
        })
    }

    fn push_raw(&mut self, s: &RawStr<'_>) -> Span {
        if s.escaped {
            let d = s.decode();
            self.push_opt(d.as_deref())
        } else {
            self.push_opt(std::str::from_utf8(s.body).ok())
        }
    }

    fn field(&mut self, c: &mut Cursor<'_>, f: F) -> Scan<()> {
        self.h.spans[f as usize] = self.text(c)?;
        Ok(())
    }

    fn finish(self) -> Header {
        let mut h = self.h;
        h.text = self.text.into_boxed_str();
        h.blocks = self.blocks.into_boxed_slice();
        h
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

/// The kind a `type` field names (any other JSON type reads as absent).
fn kind(c: &mut Cursor<'_>) -> Scan<Kind> {
    Ok(match c.opt_string()? {
        Some(s) if !s.escaped => std::str::from_utf8(s.body).map_or(Kind::Absent, Kind::from_name),
        Some(s) => s.decode().map_or(Kind::Absent, |t| Kind::from_name(&t)),
        None => Kind::Absent,
    })
}

fn top_field(
    c: &mut Cursor<'_>,
    key: RawStr<'_>,
    b: &mut Build,
    attachment_type: &mut Span,
) -> Scan<()> {
    match &*key_name(&key) {
        b"type" => b.h.kind = kind(c)?,
        b"subtype" => b.field(c, F::Subtype)?,
        b"uuid" => b.field(c, F::Uuid)?,
        b"parentUuid" => b.field(c, F::ParentUuid)?,
        b"logicalParentUuid" => b.field(c, F::LogicalParentUuid)?,
        b"leafUuid" => b.field(c, F::LeafUuid)?,
        b"sourceToolAssistantUUID" => b.field(c, F::SourceToolAssistantUuid)?,
        b"sessionId" => b.field(c, F::SessionId)?,
        b"agentId" => b.field(c, F::AgentId)?,
        b"isSidechain" => b.h.is_sidechain = c.flag()?,
        b"isMeta" => b.h.is_meta = c.flag()?,
        b"isCompactSummary" => b.h.is_compact_summary = c.flag()?,
        b"timestamp" => b.field(c, F::Timestamp)?,
        b"toolUseID" => b.field(c, F::ToolUseId)?,
        b"parentToolUseID" => b.field(c, F::ParentToolUseId)?,
        b"attachment" if c.peek() == Some(b'{') => {
            *attachment_type = Span::ABSENT;
            c.object(|c, k| {
                if k.is("type") {
                    *attachment_type = b.text(c)?;
                    Ok(())
                } else {
                    c.skip_value()
                }
            })?;
        }
        b"message" if c.peek() == Some(b'{') => message(c, b)?,
        b"compactMetadata" => {
            b.h.has_compact_metadata = true;
            c.skip_value()?;
        }
        _ => c.skip_value()?,
    }
    Ok(())
}

fn message(c: &mut Cursor<'_>, b: &mut Build) -> Scan<()> {
    c.object(|c, key| {
        match &*key_name(&key) {
            b"id" => b.field(c, F::MessageId)?,
            b"role" => b.field(c, F::Role)?,
            b"content" => {
                b.h.content_is_text = false;
                b.blocks.clear();
                b.h.spans[F::TextPrefix as usize] = Span::EMPTY;
                match c.peek() {
                    Some(b'"') => {
                        let s = c.string()?;
                        b.h.content_is_text = true;
                        b.h.spans[F::TextPrefix as usize] = b.push(raw_prefix(s.with_close));
                    }
                    Some(b'[') => {
                        c.array(|c| {
                            let bs = block(c, b)?;
                            b.blocks.push(bs);
                            Ok(())
                        })?;
                        let text = &b.text;
                        if let Some(first) = b
                            .blocks
                            .iter()
                            .find(|s| s.spans[B::Kind as usize].get(text) == Some("text"))
                        {
                            b.h.spans[F::TextPrefix as usize] = first.spans[B::TextPrefix as usize];
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

fn block(c: &mut Cursor<'_>, b: &mut Build) -> Scan<BlockSpans> {
    let mut s = BlockSpans::default();
    if c.peek() != Some(b'{') {
        c.skip_value()?;
        return Ok(s);
    }
    c.object(|c, key| {
        match &*key_name(&key) {
            b"type" => {
                s.spans[B::Kind as usize] = match b.text(c)? {
                    Span::ABSENT => Span::EMPTY,
                    t => t,
                }
            }
            b"id" => s.spans[B::Id as usize] = b.text(c)?,
            b"tool_use_id" => s.spans[B::ToolUseId as usize] = b.text(c)?,
            b"name" => s.spans[B::Name as usize] = b.text(c)?,
            b"is_error" => s.is_error = c.flag()?,
            b"text" => {
                s.spans[B::TextPrefix as usize] = match c.opt_string()? {
                    Some(t) => b.push(raw_prefix(t.with_close)),
                    None => Span::EMPTY,
                }
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(s)
}

/// Up to 64 bytes of a JSON string's text as written (`raw` starts after the opening quote
/// and ends with the closing one), cut on a char boundary, trailing quotes trimmed.
fn raw_prefix(raw: &[u8]) -> &str {
    // The slice starts and ends at ASCII quotes of a line checked to be UTF-8.
    let t = std::str::from_utf8(raw).unwrap_or_default();
    let mut end = t.len().min(64);
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    t[..end].trim_end_matches('"')
}

fn trim_ascii_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}
#[cfg(test)]
mod reference;

#[cfg(test)]
mod tests;
