//! The fields of a record that carry its structure, not its text: what redaction must keep
//! valid. A secret inside an id field is replaced by a derived id of the same kind (distinct ids
//! stay distinct, references still meet), and a known secret's echo never rewrites a field whose
//! value is Claude Code's own vocabulary (`"type": "assistant"`, `"role"`, `"model"`): a `.env`
//! the session read with `SECRET_ROLE` set to `assistant` must not turn every assistant record into a
//! placeholder (issue #25, adversarial pass).

use super::json::Seg;

/// What a string's JSON path says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Text: replaced as found.
    Text,
    /// An id; `uuid` when it is a uuid field.
    Id {
        /// The field holds a uuid (`uuid`, `parentUuid`, …).
        uuid: bool,
    },
    /// Claude Code's vocabulary or the session's own id (`type`, `role`, `model`, `sessionId`):
    /// rules still redact a secret there, echoes of known values never touch it.
    Structure,
}

const TOP_UUIDS: &[&str] = &[
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "leafUuid",
    "sourceToolAssistantUUID",
    "promptId",
    "agentId",
];
const TOP_IDS: &[&str] = &[
    "toolUseID",
    "parentToolUseID",
    "sourceToolUseID",
    "tool_use_id",
    "requestId",
    "messageId",
];
const TOP_STRUCTURE: &[&str] = &[
    "type",
    "subtype",
    "userType",
    "level",
    "version",
    "timestamp",
    "sessionId",
];
const MESSAGE_STRUCTURE: &[&str] = &["role", "model", "type", "stop_reason"];
const BLOCK_STRUCTURE: &[&str] = &["type", "name"];

/// The kind of the string at `path` (a value's path; a key is always text).
pub fn field(path: &[Seg]) -> Field {
    fn key(s: &Seg) -> Option<&str> {
        match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Idx(_) => None,
        }
    }
    match path {
        [k] => match key(k) {
            Some(k) if TOP_UUIDS.contains(&k) => Field::Id { uuid: true },
            Some(k) if TOP_IDS.contains(&k) => Field::Id { uuid: false },
            Some(k) if TOP_STRUCTURE.contains(&k) => Field::Structure,
            _ => Field::Text,
        },
        [m, k] if key(m) == Some("message") => match key(k) {
            Some("id") => Field::Id { uuid: false },
            Some(k) if MESSAGE_STRUCTURE.contains(&k) => Field::Structure,
            _ => Field::Text,
        },
        [m, c, Seg::Idx(_), k] if key(m) == Some("message") && key(c) == Some("content") => {
            match key(k) {
                Some("id" | "tool_use_id") => Field::Id { uuid: false },
                Some(k) if BLOCK_STRUCTURE.contains(&k) => Field::Structure,
                _ => Field::Text,
            }
        }
        _ => Field::Text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(segs: &[&str]) -> Vec<Seg> {
        segs.iter()
            .map(|s| match s.parse::<usize>() {
                Ok(i) => Seg::Idx(i),
                Err(_) => Seg::Key(s.to_string()),
            })
            .collect()
    }

    #[test]
    fn kinds() {
        assert_eq!(field(&p(&["uuid"])), Field::Id { uuid: true });
        assert_eq!(
            field(&p(&["message", "content", "0", "id"])),
            Field::Id { uuid: false }
        );
        assert_eq!(field(&p(&["message", "role"])), Field::Structure);
        assert_eq!(field(&p(&["sessionId"])), Field::Structure);
        assert_eq!(field(&p(&["message", "content", "0", "text"])), Field::Text);
        assert_eq!(
            field(&p(&["message", "content", "0", "input", "type"])),
            Field::Text
        );
        assert_eq!(field(&p(&["toolUseResult", "type"])), Field::Text);
    }
}
