//! The record `type`s Claude Code writes, as an enum: code matches on variants, not strings.

use std::fmt;

/// A record's `type`. Types this version does not know (new ones appear with every Claude
/// Code release) are kept by name in [`Kind::Other`], so nothing is lost and they can still be
/// named in options and reports.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Kind {
    /// `user`: a prompt, tool results, or injected meta text.
    User,
    /// `assistant`: one piece (content block) of a model message.
    Assistant,
    /// `system`: compaction boundaries, hook output, API errors, …
    System,
    /// `attachment`: context Claude Code attached to a turn (files, hooks, todos, …).
    Attachment,
    /// `progress`: streaming progress of tools and hooks.
    Progress,
    /// `summary`: a legacy conversation title pointing at a leaf.
    Summary,
    /// `last-prompt`: where `--resume` picks up.
    LastPrompt,
    /// `file-history-snapshot`: checkpoint bookkeeping.
    FileHistorySnapshot,
    /// `queue-operation`: prompts queued while a turn ran.
    QueueOperation,
    /// No `type` (or not a string).
    #[default]
    Absent,
    /// Any other type, by name.
    Other(Box<str>),
}

impl Kind {
    /// The kind a `type` string names.
    pub fn from_name(name: &str) -> Kind {
        match name {
            "user" => Kind::User,
            "assistant" => Kind::Assistant,
            "system" => Kind::System,
            "attachment" => Kind::Attachment,
            "progress" => Kind::Progress,
            "summary" => Kind::Summary,
            "last-prompt" => Kind::LastPrompt,
            "file-history-snapshot" => Kind::FileHistorySnapshot,
            "queue-operation" => Kind::QueueOperation,
            "" => Kind::Absent,
            other => Kind::Other(other.into()),
        }
    }

    /// The `type` string as written (empty for [`Kind::Absent`]).
    pub fn as_str(&self) -> &str {
        match self {
            Kind::User => "user",
            Kind::Assistant => "assistant",
            Kind::System => "system",
            Kind::Attachment => "attachment",
            Kind::Progress => "progress",
            Kind::Summary => "summary",
            Kind::LastPrompt => "last-prompt",
            Kind::FileHistorySnapshot => "file-history-snapshot",
            Kind::QueueOperation => "queue-operation",
            Kind::Absent => "",
            Kind::Other(name) => name,
        }
    }

    /// A conversational message: `user` or `assistant`.
    pub fn is_message(&self) -> bool {
        matches!(self, Kind::User | Kind::Assistant)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in [
            "user",
            "assistant",
            "system",
            "attachment",
            "progress",
            "summary",
            "last-prompt",
            "file-history-snapshot",
            "queue-operation",
            "",
            "agent-name",
        ] {
            assert_eq!(Kind::from_name(n).as_str(), n);
        }
        assert_eq!(
            Kind::from_name("agent-name"),
            Kind::Other("agent-name".into())
        );
    }
}
