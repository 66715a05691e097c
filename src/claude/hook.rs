//! Running as a Claude Code hook: the input Claude Code sends, and waiting for the turn a
//! `Stop` hook is told about. The policy is the pipeline file's `[hook]` table
//! ([`crate::engine::config::HookPolicy`]); what a hook may touch is the [`crate::claude::fence`].
//!
//! Claude Code runs `cchist hook` with a JSON object on stdin (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, …). What cchist does per event:
//!
//! | event | action |
//! |---|---|
//! | `SessionEnd` | apply the pipeline (default: shipped `scrub`) in place to the transcript and its sub-agent files, atomically |
//! | `PreCompact` | print guidance for the compaction summary, built from the redacted transcript |
//! | `SessionStart` | with `[hook] session_start_digest = true`: print a redacted digest of the project's previous session (not after `/compact` unless `session_start_on_compact`) |
//! | `Stop` | turn-count policies from `[hook]` (`at_turns`, `every`): write a compressed, redacted fork, or only notify; each threshold once per session. `action = "command"`: run the user's history manager ([`crate::claude::hook_command`]) after every turn or at the thresholds, and apply its document to a fork, or queue it for SessionEnd |
//! | `SessionEnd` (queued) | after the pipeline: apply the queued history-manager documents in place, each all or nothing, when every uuid they name is still there |
//! | `PostCompact` | save the compaction summary, redacted by the pipeline, as the project's memory ([`crate::claude::memory`]); one line to the user |
//! | anything else | nothing |
//!
//! What Claude Code 2.1.328 does with a hook's output (asserted by `tests/hook_cli.rs`):
//!
//! | event | honoured |
//! |---|---|
//! | `PreCompact` | plain stdout → the model; exit 2 or `decision: block` blocks compaction |
//! | `SessionStart` | plain stdout or `additionalContext` → the model |
//! | `Stop` | `systemMessage` → the user; `additionalContext`, exit 2 or `decision: block` make the model take another turn |
//! | `SessionEnd` | output ignored; exit 1 or 2 shows on the CLI's stderr |
//! | `PostCompact` | stdout, as text (JSON is not parsed), appended to the `/compact` output: the user sees it, the transcript keeps it, a resume sends it to the model (`tests/claude/hook_manager.rs`) |
//!
//! So a hook never exits 2 (it would block Stop and PreCompact and feed cchist's error to the
//! model): failures exit 0 (or 1 with `--strict`, and always 1 at SessionEnd, where nothing
//! else would show them).
//!
//! **Stop timing.** When Stop hooks start, Claude Code has not always finished writing the
//! transcript (the final assistant message lands tens of milliseconds later; on turn 1 the file
//! may not exist yet). [`wait_for_turn`] waits until the transcript holds the turn the input
//! names (its `prompt_id` and `last_assistant_message`) and has stopped growing.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

pub use crate::claude::fence::{read_bounded, Fence, Refusal, MAX_READ_BYTES};
use crate::error::{Error, Result};
use crate::io::framing;
use crate::transcript::record::Kind;
use crate::transcript::record::Record;
use crate::transcript::session::Session;
use crate::transcript::turns;

/// The most cchist reads of the hook input on stdin.
pub const MAX_INPUT_BYTES: u64 = 1 << 20;

/// The hook events cchist acts on; any other name is kept as it came.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HookEvent {
    /// The session ended.
    SessionEnd,
    /// A compaction is about to run.
    PreCompact,
    /// A compaction ran (`compact_summary` holds its summary).
    PostCompact,
    /// A session started (`source`: startup, resume, clear, compact).
    SessionStart,
    /// A turn ended.
    Stop,
    /// An event cchist does nothing on (or an input without a name: empty).
    Other(String),
    /// No `hook_event_name` in the input.
    #[default]
    Missing,
}

impl HookEvent {
    /// The event named `name` as Claude Code writes it.
    pub fn of(name: &str) -> HookEvent {
        match name {
            "SessionEnd" => HookEvent::SessionEnd,
            "PreCompact" => HookEvent::PreCompact,
            "PostCompact" => HookEvent::PostCompact,
            "SessionStart" => HookEvent::SessionStart,
            "Stop" => HookEvent::Stop,
            "" => HookEvent::Missing,
            other => HookEvent::Other(other.to_string()),
        }
    }

    /// The name Claude Code uses (`?` for a missing one).
    pub fn name(&self) -> &str {
        match self {
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::Stop => "Stop",
            HookEvent::Other(n) => n,
            HookEvent::Missing => "?",
        }
    }
}

impl<'de> Deserialize<'de> for HookEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(HookEvent::of(&String::deserialize(d)?))
    }
}

/// The hook input fields cchist reads (others are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
// A field the input lacks takes its `Default` value.
#[serde(default)]
pub struct HookInput {
    /// The session id.
    pub session_id: String,
    /// The transcript file.
    pub transcript_path: Option<PathBuf>,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// `SessionEnd`, `PreCompact`, `Stop`, `SessionStart`, …
    pub hook_event_name: HookEvent,
    /// `Stop`: true when Claude Code is already continuing because of a stop hook.
    pub stop_hook_active: bool,
    /// `Stop`: the `promptId` of the turn that just ended.
    pub prompt_id: Option<String>,
    /// `Stop`: the final text of the turn that just ended.
    pub last_assistant_message: Option<String>,
    /// `SessionStart`: `startup`, `resume`, `clear` or `compact`.
    pub source: Option<String>,
    /// `PreCompact`, `PostCompact`: `manual` or `auto`.
    pub trigger: Option<String>,
    /// `PostCompact`: the summary the compaction wrote.
    pub compact_summary: Option<String>,
}

impl HookInput {
    /// Parse the JSON Claude Code sends.
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::Other(format!(
                "hook input on stdin is not the JSON object Claude Code sends: {e}"
            ))
        })
    }

    /// The transcript path, required by the events that read it.
    pub fn transcript(&self) -> Result<&Path> {
        self.transcript_path
            .as_deref()
            .ok_or_else(|| Error::Other("hook input has no transcript_path".into()))
    }
}

// ---------------------------------------------------------------------------------------------
// Waiting for the turn a Stop hook is told about

/// The number of the turn the transcript ends with, when that turn is the one the Stop input
/// names: its prompt carries `prompt_id` (when both say one) and one of its assistant
/// messages has the text `last_message` (when given). Turns are counted as `history list`
/// counts them. `None` while the transcript does not hold that turn yet.
pub fn completed_turn(
    data: &[u8],
    prompt_id: Option<&str>,
    last_message: Option<&str>,
) -> Option<usize> {
    let mut s = Session::new(framing::lines(data, 1).map(Record::from_line).collect());
    let all = s.turns();
    let last = all.last()?;
    if let Some(want) = prompt_id.filter(|p| !p.is_empty()) {
        let has = s.records[last.prompt].value().ok().and_then(|v| {
            v.get("promptId")
                .and_then(|p| p.as_str())
                .map(str::to_owned)
        });
        if has.is_some_and(|h| h != want) {
            return None;
        }
    }
    if let Some(want) = last_message.map(str::trim).filter(|m| !m.is_empty()) {
        if !turn_has_text(&mut s, &last.records, want) {
            return None;
        }
    } else if !last.records.iter().any(|&i| {
        s.records[i]
            .header()
            .is_some_and(|h| h.kind == Kind::Assistant && !h.is_sidechain)
    }) {
        return None;
    }
    Some(last.number)
}

/// The number of the last turn when its prompt carries `prompt_id`, whether or not its answer
/// is written yet: the number a Stop input's turn gets, known as soon as its prompt is on disk.
pub fn turn_of_prompt(data: &[u8], prompt_id: &str) -> Option<usize> {
    let mut s = Session::new(framing::lines(data, 1).map(Record::from_line).collect());
    let last = s.turns().pop()?;
    let v = s.records[last.prompt].value().ok()?;
    (v.get("promptId").and_then(|p| p.as_str()) == Some(prompt_id)).then_some(last.number)
}

/// True when an assistant message of the turn (one record, or the records of one message id
/// together) has the text `want`.
fn turn_has_text(s: &mut Session<'_>, records: &[usize], want: &str) -> bool {
    let mut joined: Option<(String, Vec<String>)> = None;
    for &i in records {
        let Some(h) = s.records[i].header() else {
            continue;
        };
        if h.kind != Kind::Assistant || h.is_sidechain {
            continue;
        }
        let mid = h.message_id().map(str::to_string).unwrap_or_default();
        let Ok(v) = s.records[i].value() else {
            continue;
        };
        let text = turns::message_text(v);
        if text.trim() == want {
            return true;
        }
        match &mut joined {
            Some((m, parts)) if *m == mid => parts.push(text),
            _ => joined = Some((mid, vec![text])),
        }
        if let Some((_, parts)) = &joined {
            let parts: Vec<&str> = parts
                .iter()
                .map(String::as_str)
                .filter(|t| !t.is_empty())
                .collect();
            if parts.len() > 1 && (parts.join("\n").trim() == want || parts.concat().trim() == want)
            {
                return true;
            }
        }
    }
    false
}

/// How long [`wait_for_turn`] waits.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    /// Give up after this long (well inside the hook timeout).
    pub cap: Duration,
    /// The transcript must hold the turn and keep its size this long.
    pub settle: Duration,
    /// Time between looks.
    pub poll: Duration,
}

impl Default for Wait {
    fn default() -> Self {
        Wait {
            cap: Duration::from_secs(10),
            settle: Duration::from_millis(150),
            poll: Duration::from_millis(25),
        }
    }
}

/// What the transcript held when [`wait_for_turn`] returned.
#[derive(Debug)]
pub enum TurnWait {
    /// It holds the named turn, numbered `turn`, and stopped growing.
    Complete {
        /// The turn's number.
        turn: usize,
        /// The resolved transcript path.
        path: PathBuf,
        /// How long after the start the transcript first held the turn (zero: at once).
        held_after: Duration,
    },
    /// It did not within the cap; says what was missing.
    Incomplete(String),
    /// The path is outside the fence.
    Refused(String),
}

/// Wait until the transcript holds the turn the Stop input names and has stopped growing.
pub fn wait_for_turn(fence: &Fence, inp: &HookInput, wait: Wait) -> Result<TurnWait> {
    let path = inp.transcript()?;
    let start = Instant::now();
    let mut seen: Option<(u64, usize)> = None; // (size, turn) when the turn was first complete
    let mut stable_since = start;
    let mut held_after = None;
    let mut missing = "the transcript does not exist";
    loop {
        match fence.main_transcript(path) {
            Err(Refusal::Outside(why)) => return Ok(TurnWait::Refused(why)),
            Err(Refusal::Missing) => seen = None,
            Ok(resolved) => {
                let data = read_bounded(&resolved)?;
                let size = data.len() as u64;
                match completed_turn(
                    &data,
                    inp.prompt_id.as_deref(),
                    inp.last_assistant_message.as_deref(),
                ) {
                    None => {
                        missing = "the transcript does not hold the turn that ended";
                        seen = None;
                        held_after = None;
                    }
                    Some(turn) => {
                        held_after.get_or_insert_with(|| start.elapsed());
                        if seen != Some((size, turn)) {
                            seen = Some((size, turn));
                            stable_since = Instant::now();
                        } else if stable_since.elapsed() >= wait.settle {
                            return Ok(TurnWait::Complete {
                                turn,
                                path: resolved,
                                held_after: held_after.unwrap_or_default(),
                            });
                        }
                        missing = "the transcript kept growing";
                    }
                }
            }
        }
        if start.elapsed() >= wait.cap {
            return Ok(TurnWait::Incomplete(format!(
                "{missing} after {:.1} s",
                wait.cap.as_secs_f64()
            )));
        }
        std::thread::sleep(wait.poll);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: serde_json::Value) -> String {
        v.to_string() + "\n"
    }

    fn prompt(uuid: &str, parent: Option<&str>, pid: &str, text: &str) -> String {
        rec(
            serde_json::json!({"type":"user","uuid":uuid,"parentUuid":parent,"promptId":pid,
            "message":{"role":"user","content":text}}),
        )
    }

    fn answer(uuid: &str, parent: &str, mid: &str, text: &str) -> String {
        rec(
            serde_json::json!({"type":"assistant","uuid":uuid,"parentUuid":parent,
            "message":{"id":mid,"role":"assistant","content":[{"type":"text","text":text}]}}),
        )
    }

    #[test]
    fn completed_turn_needs_the_named_prompt_and_its_final_text() {
        let t1 = prompt("u1", None, "p1", "one") + &answer("a1", "u1", "m1", "answer one");
        // turn 1 complete
        assert_eq!(
            completed_turn(t1.as_bytes(), Some("p1"), Some("answer one")),
            Some(1)
        );
        // the Stop of turn 2 arrives before turn 2's prompt is written: not there
        assert_eq!(
            completed_turn(t1.as_bytes(), Some("p2"), Some("answer two")),
            None
        );
        // prompt written, answer not yet
        let t2 = t1.clone() + &prompt("u2", Some("a1"), "p2", "two");
        assert_eq!(
            completed_turn(t2.as_bytes(), Some("p2"), Some("answer two")),
            None
        );
        // a same-text answer of the previous turn does not count for this one
        assert_eq!(
            completed_turn(t2.as_bytes(), Some("p2"), Some("answer one")),
            None
        );
        let t2 = t2 + &answer("a2", "u2", "m2", "answer two");
        assert_eq!(
            completed_turn(t2.as_bytes(), Some("p2"), Some("answer two")),
            Some(2)
        );
        // without prompt id or text: the last turn needs some assistant record
        assert_eq!(completed_turn(t2.as_bytes(), None, None), Some(2));
        // empty file
        assert_eq!(completed_turn(b"", Some("p1"), Some("x")), None);
    }

    #[test]
    fn event_names_parse_to_the_enum_and_back() {
        for n in [
            "SessionEnd",
            "PreCompact",
            "PostCompact",
            "SessionStart",
            "Stop",
        ] {
            assert_eq!(HookEvent::of(n).name(), n);
        }
        let i = HookInput::parse(br#"{"hook_event_name":"UserPromptSubmit"}"#).unwrap();
        assert_eq!(
            i.hook_event_name,
            HookEvent::Other("UserPromptSubmit".into())
        );
        let i = HookInput::parse(b"{}").unwrap();
        assert_eq!(i.hook_event_name, HookEvent::Missing);
        assert_eq!(i.hook_event_name.name(), "?");
    }

    #[test]
    fn turn_of_prompt_is_known_before_the_answer() {
        let t = prompt("u1", None, "p1", "one")
            + &answer("a1", "u1", "m1", "answer one")
            + &prompt("u2", Some("a1"), "p2", "two");
        assert_eq!(turn_of_prompt(t.as_bytes(), "p2"), Some(2));
        assert_eq!(turn_of_prompt(t.as_bytes(), "p1"), None);
        assert_eq!(turn_of_prompt(t.as_bytes(), "p3"), None);
    }

    #[test]
    fn completed_turn_joins_the_records_of_one_message() {
        let t = prompt("u1", None, "p1", "one")
            + &answer("a1", "u1", "m1", "first part")
            + &answer("a2", "a1", "m1", "second part");
        assert_eq!(
            completed_turn(t.as_bytes(), Some("p1"), Some("first part\nsecond part")),
            Some(1)
        );
    }
}
