//! What cchist reports rather than changes: structural defects ([`validate`]), CI policies
//! ([`policy`]) and the report formats they share ([`report`]).

pub mod policy;
pub mod report;
pub mod validate;

// A finding is what a stage reports, so its type lives with the stages (below this folder,
// which reads, checks and prints findings); re-exported here where readers look for it.
pub use crate::stages::finding::{Finding, ECHO, NAME};

/// A finding id and what it means. Secret rules have their own table (with regexes and
/// checks) in `stages::redact::rules`; `cchist rules --all` prints all three kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindingDef {
    /// The id findings carry.
    pub id: &'static str,
    /// What it means for the session, and what to do.
    pub about: &'static str,
}

/// The ids of [`validate`]: what would make `claude --resume` lose or reject history.
pub const STRUCTURAL: &[FindingDef] = &[
    FindingDef { id: "invalid-json", about: "a line that is not valid JSON (NUL padding, invalid UTF-8, glued records)" },
    FindingDef { id: "truncated-last-line", about: "the last line is cut off (a killed writer)" },
    FindingDef { id: "missing-final-newline", about: "the last line is complete JSON but unterminated: the next append will glue onto it" },
    FindingDef { id: "not-an-object", about: "valid JSON that is not an object (array, string, number)" },
    FindingDef { id: "duplicate-uuid", about: "a uuid carried by an earlier record too" },
    FindingDef { id: "dangling-parent", about: "`parentUuid` names no record of the file: resume silently drops everything before" },
    FindingDef { id: "dangling-reference", about: "another uuid reference (`logicalParentUuid`, `leafUuid` of last-prompt, `sourceToolAssistantUUID`) names no record" },
    FindingDef { id: "parent-cycle", about: "following `parentUuid` comes back to the same record" },
    FindingDef { id: "tool-input-schema", about: "a call of a built-in tool (Bash, Read, Write, Edit) without the input fields that tool takes (`Bash{cmd}`, `Edit{raw}`): another tool's arguments under Claude's name" },
    FindingDef { id: "unsigned-thinking", about: "a thinking block without a signature: Claude Code drops it on resume, the API rejects it" },
    FindingDef { id: "non-uuid-uuid", about: "a record's uuid is not a UUID (in a record with a sessionId; `validate --strict`): Claude Code writes v4 UUIDs" },
    FindingDef { id: "session-id-mismatch", about: "a record's sessionId differs from the file name (`<id>.jsonl`), the id resume looks up" },
    FindingDef { id: "unpaired-tool-use", about: "a `tool_use` with no `tool_result` anywhere in the file: the API rejects the session" },
    FindingDef { id: "orphan-tool-result", about: "a `tool_result` whose `tool_use` is not in the file" },
    FindingDef { id: "split-message", about: "pieces of one assistant message (same `message.id`) separated by another turn" },
    FindingDef { id: "replayed-history", about: "a second `/compact` re-appended the history the first summarized, and the rows after it hang from the copy: resume skips everything since the first compaction (claude-code#92089; `cchist repair`)" },
    FindingDef { id: "snapshot-id-collision", about: "a `file-history-snapshot` carries a message's uuid, or the message its `messageId` names hangs from a missing parent: resume shows only what follows (claude-code#24304, #36583; `cchist repair`)" },
    FindingDef { id: "retry-on-progress", about: "a retried prompt hangs from a sub-agent `progress` row: resume loses the history before it (claude-code#37437; `cchist repair`)" },
    FindingDef { id: "subagent-in-main", about: "a sub-agent's records written into the main session file instead of `subagents/agent-<id>.jsonl` (claude-code#23373)" },
];

/// The ids of a CI [`policy`] (the `[check]` table), besides secret rules and structural ids.
pub const POLICY: &[FindingDef] = &[
    FindingDef {
        id: "max-transcript-bytes",
        about: "a transcript larger than `max_transcript_bytes`",
    },
    FindingDef {
        id: "max-tool-output-bytes",
        about: "a single tool output larger than `max_tool_output_bytes`",
    },
    FindingDef {
        id: "forbidden-tool",
        about: "a call of a tool named in `forbidden_tools`",
    },
    FindingDef {
        id: "forbidden-record-type",
        about: "a record of a type named in `forbidden_record_types`",
    },
];

/// The definition of a structural or policy finding id.
pub fn def(id: &str) -> Option<&'static FindingDef> {
    STRUCTURAL.iter().chain(POLICY).find(|d| d.id == id)
}

#[cfg(test)]
mod tests {
    /// Every id the checks can emit is in the registry: a new check must document itself.
    #[test]
    fn every_emitted_id_is_registered() {
        for (file, src) in [
            ("validate.rs", include_str!("validate.rs")),
            ("policy.rs", include_str!("policy.rs")),
            ("damage.rs", include_str!("../transcript/damage.rs")),
        ] {
            let code = src.split("#[cfg(test)]").next().unwrap();
            for quoted in code.split('"').skip(1).step_by(2) {
                // Record types Claude Code writes are quoted in the checks too.
                let record_type = ["last-prompt", "file-history-snapshot", "queue-operation"];
                let looks_like_id = quoted.len() > 3
                    && !record_type.contains(&quoted)
                    && quoted.contains('-')
                    && quoted.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
                if looks_like_id {
                    assert!(
                        super::def(quoted).is_some(),
                        "{file}: `{quoted}` is not in the registry"
                    );
                }
            }
        }
    }
}
