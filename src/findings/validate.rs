//! Structural checks of a transcript: what would make `claude --resume` lose or reject history.
//!
//! Each finding names the line and, where it has one, the record's uuid; the finding ids and
//! what they mean are in [`STRUCTURAL`](super::STRUCTURAL).
//!
//! `summary.leafUuid` is not checked: Claude Code wrote those titles for other sessions into
//! whatever file was open, so they point into other files by design.
//!
//! States Claude Code itself writes and handles are not defects either:
//! - a `tool_use` left unanswered at the tip of its chain (the user interrupted the call, or
//!   the session ended while it ran): no user message follows it, and on resume Claude Code
//!   answers it itself. An unanswered call that a later message follows is a defect (the API
//!   rejects that history);
//! - the first parents of its compaction summariser's transcript (`agent-acompact-*.jsonl`,
//!   records with `agentId: "acompact-…"`), which point into the main session by design.

use std::collections::{HashMap, HashSet};

use crate::findings::Finding;
use crate::io::framing::{self, Term};
use crate::transcript::damage::Damage;
use crate::transcript::record::describe_invalid;
use crate::transcript::record::Kind;
use crate::transcript::record::{check_json, Record};
use crate::transcript::session::Session;

/// Most findings listed per line check (`invalid-json`, `not-an-object`): the rest are
/// counted in one more finding, so a file of millions of blank or broken lines costs a few
/// counters, not a finding each (40 MB of blank lines took 23.7 GB).
pub const MAX_LINE_EXAMPLES: usize = 20;

/// Findings of one per-line check: the first [`MAX_LINE_EXAMPLES`], and how many more.
#[derive(Default)]
struct LineFindings {
    listed: Vec<Finding>,
    more: usize,
    last: usize,
}

impl LineFindings {
    fn push(&mut self, line: usize, make: impl FnOnce() -> Finding) {
        if self.listed.len() < MAX_LINE_EXAMPLES {
            self.listed.push(make());
        } else {
            self.more += 1;
            self.last = line;
        }
    }

    /// The listed findings, and one for the rest (on the last such line).
    fn finish(self, rule: &str, what: &str, out: &mut Vec<Finding>) {
        out.extend(self.listed);
        if self.more > 0 {
            out.push(finding(
                rule,
                self.last,
                None,
                format!(
                    "and {} more {what} up to this one (the first {MAX_LINE_EXAMPLES} are listed)",
                    self.more
                ),
            ));
        }
    }
}

/// Validate one transcript held in memory.
pub fn validate(data: &[u8]) -> Vec<Finding> {
    validate_named(data, None, false)
}

/// [`validate`], knowing the file's stem: a main session file is named by its session id
/// (`<id>.jsonl`), so a stem that is a UUID must be every record's `sessionId`. `strict` adds
/// what only matters to a file another tool wrote (`non-uuid-uuid`: hand-made and test
/// sessions use short ids, which the CLI resumes).
pub fn validate_named(data: &[u8], stem: Option<&str>, strict: bool) -> Vec<Finding> {
    let mut findings = Vec::new();
    let n_lines = framing::lines(data, 1).count();
    let (mut invalid, mut not_object) = (LineFindings::default(), LineFindings::default());
    // Only object lines are records: a line that is not one has no uuid, parent or tool id,
    // so the chain checks below need nothing of it (and keeping it cost a record each).
    let mut records = Vec::new();
    for l in framing::lines(data, 1) {
        if let Err(reason) = check_json(l.body) {
            let rule = if l.number == n_lines && l.term == Term::None {
                "truncated-last-line"
            } else {
                "invalid-json"
            };
            if rule == "invalid-json" {
                invalid.push(l.number, || {
                    finding(
                        rule,
                        l.number,
                        None,
                        describe_invalid(l.body, l.term, &reason),
                    )
                });
            } else {
                findings.push(finding(
                    rule,
                    l.number,
                    None,
                    describe_invalid(l.body, l.term, &reason),
                ));
            }
            continue;
        }
        let rec = Record::from_line(l);
        if rec.header().is_none() {
            not_object.push(l.number, || {
                finding(
                    "not-an-object",
                    l.number,
                    None,
                    "line is valid JSON but not an object, so it is not a transcript record".into(),
                )
            });
            continue;
        }
        if l.term == Term::None {
            findings.push(finding(
                "missing-final-newline",
                l.number,
                None,
                "last line has no newline; Claude Code's next append would be glued onto it".into(),
            ));
        }
        records.push(rec);
    }
    invalid.finish(
        "invalid-json",
        "lines that are not valid JSON",
        &mut findings,
    );
    not_object.finish(
        "not-an-object",
        "lines that are valid JSON but not objects",
        &mut findings,
    );
    let s = Session::new(records);
    let damage = crate::transcript::damage::find(&s);
    check_uuids(&s, &damage, &mut findings);
    check_references(&s, &mut findings);
    check_cycles(&s, &mut findings);
    check_tools(&s, &mut findings);
    check_written_as_claude(&s, stem.filter(|s| is_uuid(s)), strict, &mut findings);
    check_split_messages(&s, &mut findings);
    check_damage(data, &s, &damage, &mut findings);
    findings.sort_by(|a, b| (a.line, &a.rule).cmp(&(b.line, &b.rule)));
    findings
}

fn finding(rule: &str, line: usize, uuid: Option<&str>, message: String) -> Finding {
    Finding::new(rule, line, uuid, message)
}

/// A finding on record `i` of `s`: its line and uuid.
fn record_finding(s: &Session<'_>, i: usize, rule: &str, message: String) -> Finding {
    let r = &s.records[i];
    finding(rule, r.line, r.header().and_then(|h| h.uuid()), message)
}

fn check_uuids(s: &Session<'_>, damage: &[Damage], out: &mut Vec<Finding>) {
    // Copies of replayed history are one `replayed-history` finding, not one each.
    let replayed = |i: usize| {
        damage
            .iter()
            .any(|d| matches!(d, Damage::ReplayedHistory { copies, .. } if copies.contains(&i)))
    };
    for &i in &s.duplicate_uuids {
        if replayed(i) {
            continue;
        }
        let r = &s.records[i];
        let u = r.header().and_then(|h| h.uuid());
        let first = u.and_then(|u| s.by_uuid.get(u)).map(|&j| s.records[j].line);
        out.push(finding(
            "duplicate-uuid",
            r.line,
            u,
            format!("uuid already used on line {}", first.unwrap_or(0)),
        ));
    }
}

fn check_references(s: &Session<'_>, out: &mut Vec<Finding>) {
    for r in &s.records {
        let Some(h) = r.header() else { continue };
        let uuid = h.uuid();
        if let Some(p) = h.parent_uuid() {
            if !s.by_uuid.contains_key(p) && !is_compaction_agent(h) {
                out.push(finding(
                    "dangling-parent",
                    r.line,
                    uuid,
                    "parentUuid names no record in this file; resume drops everything before it"
                        .into(),
                ));
            }
        }
        let mut refs: Vec<(&str, &str)> = Vec::new();
        if let Some(v) = h.logical_parent_uuid() {
            refs.push(("logicalParentUuid", v));
        }
        if let Some(v) = h.source_tool_assistant_uuid() {
            refs.push(("sourceToolAssistantUUID", v));
        }
        if h.kind == Kind::LastPrompt {
            if let Some(v) = h.leaf_uuid() {
                refs.push(("leafUuid", v));
            }
        }
        for (field, v) in refs {
            if !s.by_uuid.contains_key(v) {
                out.push(finding(
                    "dangling-reference",
                    r.line,
                    uuid,
                    format!("{field} names no record in this file"),
                ));
            }
        }
    }
}

/// The damage Claude Code writes itself ([`crate::transcript::damage`]), each with how much
/// of the conversation resume reaches now. A dangling parent that a snapshot collision
/// explains is that finding's, not a second one.
fn check_damage(data: &[u8], s: &Session<'_>, damage: &[Damage], out: &mut Vec<Finding>) {
    if damage.is_empty() {
        return;
    }
    let reach = crate::transcript::damage::resume_reach(s);
    // What `cchist repair` would leave: the same records repaired in memory (only for a file
    // that has such damage).
    let after = {
        let records = framing::lines(data, 1)
            .filter(|l| check_json(l.body).is_ok())
            .map(Record::from_line)
            .filter(|r| r.header().is_some())
            .collect();
        let mut fixed = Session::new(records);
        let mut cx = crate::stages::Cx::new(crate::error::Origin::stdin());
        // As `repair -i` does: sub-agent records move out.
        cx.companions = Some(crate::stages::Companions::default());
        crate::stages::relink::repair::repair(&mut fixed, &mut cx)
            .ok()
            .map(|()| crate::transcript::damage::resume_reach(&fixed))
    };
    let after = after.map_or(String::new(), |a| {
        format!(" ({} after `cchist repair`)", a.reached)
    });
    for d in damage {
        if let Damage::SnapshotCollision {
            message: Some(k), ..
        } = d
        {
            let line = s.records[*k].line;
            out.retain(|f| !(f.rule == "dangling-parent" && f.line == line));
        }
        out.push(record_finding(
            s,
            d.at(),
            d.rule(),
            format!("{}; {reach}{after}", d.describe(s)),
        ));
    }
}

fn check_cycles(s: &Session<'_>, out: &mut Vec<Finding>) {
    for cycle in s.parent_cycles() {
        let i = cycle[0];
        out.push(finding(
            "parent-cycle",
            s.records[i].line,
            s.header(i).and_then(|h| h.uuid()),
            "following parentUuid from here comes back to this record".into(),
        ));
    }
}

/// A record of Claude Code's compaction summariser (`agent-acompact-*.jsonl`), whose first
/// parents name records of the main session file.
pub fn is_compaction_agent(h: &crate::transcript::record::Header) -> bool {
    h.agent_id().is_some_and(|a| a.starts_with("acompact"))
}

/// For each record, whether a user message (a prompt or a tool result) descends from it: an
/// unanswered `tool_use` that no user message follows was interrupted at the tip of its
/// chain, which Claude Code handles on resume.
pub fn followed_by_user(s: &Session<'_>) -> Vec<bool> {
    let mut marked = vec![false; s.records.len()];
    for i in 0..s.records.len() {
        let is_user = s
            .header(i)
            .is_some_and(|h| h.kind == Kind::User && !h.is_compact_summary);
        if !is_user {
            continue;
        }
        // Mark the ancestors; stop at one already marked (its ancestors are too) or a cycle.
        let mut cur = s.parent(i);
        let mut steps = 0;
        while let Some(k) = cur {
            if marked[k] || steps > s.records.len() {
                break;
            }
            marked[k] = true;
            steps += 1;
            cur = s.parent(k);
        }
    }
    marked
}

fn check_tools(s: &Session<'_>, out: &mut Vec<Finding>) {
    let mut uses: Vec<(&String, &usize)> = s.tool_uses.iter().collect();
    uses.sort_by_key(|(_, &i)| i);
    let followed = followed_by_user(s);
    for (id, &i) in uses {
        if !s.tool_results.contains_key(id) && followed[i] {
            out.push(record_finding(
                s,
                i,
                "unpaired-tool-use",
                format!("tool_use {id} has no tool_result; the API rejects such a history"),
            ));
        }
    }
    let mut results: Vec<(&String, &Vec<usize>)> = s.tool_results.iter().collect();
    results.sort_by_key(|(_, v)| v[0]);
    for (id, idx) in results {
        if !s.tool_uses.contains_key(id) {
            for &i in idx {
                out.push(record_finding(
                    s,
                    i,
                    "orphan-tool-result",
                    format!("tool_result answers {id}, which no tool_use in this file has"),
                ));
            }
        }
    }
}

/// Whether `s` is a UUID as Claude Code writes them (8-4-4-4-12 hex digits).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The string fields each of Claude Code's built-in tools needs in its input (what the
/// converters of #26 got wrong: `Bash{cmd}`, `Bash{command: [..]}`, `Edit{raw}`).
pub const TOOL_SCHEMAS: &[(&str, &[&str])] = &[
    ("Bash", &["command"]),
    ("Read", &["file_path"]),
    ("Write", &["file_path", "content"]),
    ("Edit", &["file_path", "old_string", "new_string"]),
];

/// What a record written by Claude Code always is, and another writer (an importer) gets
/// wrong: uuids that are UUIDs (with `strict`, in records that say which session they belong
/// to), `sessionId` equal to
/// the file's name, thinking blocks with their signature (the CLI drops one without), and
/// built-in tool calls with the inputs those tools take.
fn check_written_as_claude(
    s: &Session<'_>,
    stem: Option<&str>,
    strict: bool,
    out: &mut Vec<Finding>,
) {
    for (i, r) in s.records.iter().enumerate() {
        let Some(h) = r.header() else { continue };
        if let Some(sid) = h.session_id() {
            if let Some(u) = h.uuid().filter(|u| strict && !is_uuid(u)) {
                out.push(record_finding(
                    s,
                    i,
                    "non-uuid-uuid",
                    format!("uuid `{}` is not a UUID; Claude Code writes v4 UUIDs and other tools expect them", crate::findings::report::printable_text(u)),
                ));
            }
            if let Some(stem) = stem.filter(|st| *st != sid) {
                out.push(record_finding(
                    s,
                    i,
                    "session-id-mismatch",
                    format!("sessionId differs from the file name ({stem}.jsonl); the file name is the id `claude --resume` looks up"),
                ));
            }
        }
        if h.kind != Kind::Assistant {
            continue;
        }
        let suspect = h.blocks().iter().any(|b| {
            b.kind() == "thinking"
                || (b.kind() == "tool_use"
                    && b.name()
                        .is_some_and(|n| TOOL_SCHEMAS.iter().any(|(t, _)| *t == n)))
        });
        if !suspect {
            continue;
        }
        // Read only: numbers need not keep their text.
        let Ok(v) = crate::transcript::record::parse_plain_value(r.raw()) else {
            continue;
        };
        let Some(blocks) = v.pointer("/message/content").and_then(|c| c.as_array()) else {
            continue;
        };
        let claude_model = v
            .pointer("/message/model")
            .and_then(|m| m.as_str())
            .is_some_and(|m| m.starts_with("claude"));
        for b in blocks {
            match b.get("type").and_then(|t| t.as_str()) {
                // The CLI itself writes unsigned thinking for providers that sign nothing
                // (measured: 2.1.17 with glm-4.7, 2.1.97 through OpenRouter) and drops it on
                // resume: its own state. So only a Claude model's record is held to it.
                Some("thinking")
                    if claude_model
                        && b.get("signature")
                            .and_then(|s| s.as_str())
                            .is_none_or(str::is_empty) =>
                {
                    out.push(record_finding(
                        s,
                        i,
                        "unsigned-thinking",
                        "thinking block without a signature: Claude Code drops it on resume and the API rejects it".into(),
                    ));
                }
                Some("tool_use") => {
                    let name = b.get("name").and_then(|n| n.as_str()).unwrap_or("");
                    let Some((_, need)) = TOOL_SCHEMAS.iter().find(|(t, _)| *t == name) else {
                        continue;
                    };
                    let input = b.get("input");
                    let missing: Vec<&str> = need
                        .iter()
                        .copied()
                        .filter(|k| !input.and_then(|i| i.get(*k)).is_some_and(|v| v.is_string()))
                        .collect();
                    if !missing.is_empty() {
                        out.push(record_finding(
                            s,
                            i,
                            "tool-input-schema",
                            format!(
                                "{name} call {} lacks the string field{} {} its tool takes; the model reads a call it could never have made",
                                b.get("id").and_then(|v| v.as_str()).map(crate::findings::report::printable_text).unwrap_or_default(),
                                if missing.len() == 1 { "" } else { "s" },
                                missing.join(", ")
                            ),
                        ));
                    }
                }
                _ => {}
            }
        }
    }
}

/// Pieces of one assistant message must follow each other on the chain: walking up from a
/// later piece, the first assistant record or user prompt met must be a piece of the same
/// message.
fn check_split_messages(s: &Session<'_>, out: &mut Vec<Finding>) {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut first_piece: HashMap<&str, usize> = HashMap::new();
    for (i, r) in s.records.iter().enumerate() {
        let Some(h) = r.header() else { continue };
        if h.kind != Kind::Assistant {
            continue;
        }
        let Some(mid) = h.message_id() else {
            continue;
        };
        if !seen.insert(mid) {
            if !s.continues_message(i, mid) {
                out.push(finding(
                    "split-message",
                    r.line,
                    h.uuid(),
                    format!(
                        "piece of assistant message {mid} is not chained to its earlier piece (line {})",
                        s.records[first_piece[mid]].line
                    ),
                ));
            }
        } else {
            first_piece.insert(mid, i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{prompt, tool_call, tool_result};

    fn rules(text: &str) -> Vec<(String, usize)> {
        validate(text.as_bytes())
            .into_iter()
            .map(|f| (f.rule, f.line))
            .collect()
    }

    #[test]
    fn clean_chain_has_no_findings() {
        let t = [
            prompt("1", None, "hi"),
            tool_call("2", "1", "m", "t", "X"),
            tool_result("3", "2", "t", "ok"),
        ]
        .concat();
        assert_eq!(rules(&t), vec![]);
    }

    #[test]
    fn reports_each_defect_with_its_line() {
        let t = [
            prompt("1", Some("gone"), "hi"),
            tool_call("2", "1", "m", "t", "X"),
            tool_result("1", "2", "zz", "ok"),
            "[1]\n".into(),
            "{\"type\":\"us".into(),
        ]
        .concat();
        assert_eq!(
            rules(&t),
            vec![
                ("dangling-parent".into(), 1),
                ("unpaired-tool-use".into(), 2),
                ("duplicate-uuid".into(), 3),
                ("orphan-tool-result".into(), 3),
                ("not-an-object".into(), 4),
                ("truncated-last-line".into(), 5),
            ]
        );
    }

    #[test]
    fn states_claude_code_handles_are_not_defects() {
        // A call interrupted at the tip: nothing follows it; Claude Code answers it on resume.
        let tip = [
            prompt("1", None, "hi"),
            tool_call("2", "1", "m", "t", "X"),
            r#"{"type":"system","uuid":"3","parentUuid":"2","subtype":"x"}"#.to_string() + "\n",
        ]
        .concat();
        assert_eq!(rules(&tip), vec![]);
        // The same call with a prompt after it is a defect.
        let mid = tip.clone() + &prompt("4", Some("3"), "next");
        assert_eq!(rules(&mid), vec![("unpaired-tool-use".into(), 2)]);
        // The compaction summariser's first parents point into the main file by design.
        let acompact = concat!(
            r#"{"type":"user","uuid":"1","parentUuid":"main-1","isSidechain":true,"agentId":"acompact-f46190","message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"user","uuid":"2","parentUuid":"main-2","isSidechain":true,"agentId":"a1234","message":{"role":"user","content":"hi"}}"#,
            "\n",
        );
        assert_eq!(rules(acompact), vec![("dangling-parent".into(), 2)]);
    }

    #[test]
    fn finds_cycles_and_split_messages() {
        let t = concat!(
            r#"{"type":"user","uuid":"a","parentUuid":"b"}"#,
            "\n",
            r#"{"type":"user","uuid":"b","parentUuid":"a"}"#,
            "\n",
            r#"{"type":"user","uuid":"1","parentUuid":null,"message":{"role":"user","content":"q"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"2","parentUuid":"1","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"x"}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"3","parentUuid":"2","message":{"role":"user","content":"q2"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"4","parentUuid":"3","message":{"id":"m","role":"assistant","content":[{"type":"text","text":"y"}]}}"#,
            "\n",
        );
        let r = rules(t);
        assert!(
            r.contains(&("parent-cycle".into(), 1)) || r.contains(&("parent-cycle".into(), 2)),
            "{r:?}"
        );
        assert!(r.contains(&("split-message".into(), 6)), "{r:?}");
    }
}
