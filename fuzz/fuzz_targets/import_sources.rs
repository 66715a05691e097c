//! Every `cchist import` source on arbitrary bytes (the first byte picks it): an error or a
//! conversation, never a panic; and what the builder makes of a conversation always validates
//! strictly clean (every tool_use answered, UUIDs, Claude's tool schemas, the file name).
//!
//! opencode's session is a tree of JSON documents (or database rows), not one file: its
//! input is split into them — the first line the session's info, then `m<JSON>` a message
//! and `p<JSON>` a part of the message before it — and read by `opencode::conversation`, the
//! part both of its forms share.
#![no_main]

use std::path::{Path, PathBuf};

use cchist::import::opencode::{self, Doc, Origin};
use cchist::import::{build, sources, Conversation, ImportError, Options, Report};
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &[
    "rollout-2026-11-30T10-00-00-x.jsonl",
    "session-2026-11-30T10-00-x.jsonl",
    "storage/session/p/ses_x.json",
    "messages.json",
    ".aider.chat.history.md",
];

/// The input as opencode documents (see the module's doc).
fn opencode_docs(data: &[u8], opts: &Options, report: &mut Report) -> Result<Conversation, ImportError> {
    let doc = |id: String, bytes: &[u8]| Doc {
        origin: Origin::File(PathBuf::from(format!("{id}.json"))),
        id,
        bytes: bytes.to_vec(),
    };
    let mut lines = data.split(|&b| b == b'\n');
    let session = doc("ses_fuzz".into(), lines.next().unwrap_or(b""));
    let mut messages: Vec<(Doc, Vec<Doc>)> = Vec::new();
    let mut n = 0;
    for l in lines {
        n += 1;
        match l.split_first() {
            Some((b'm', rest)) => messages.push((doc(format!("msg_{n:04}"), rest), Vec::new())),
            Some((b'p', rest)) => {
                if let Some((_, parts)) = messages.last_mut() {
                    parts.push(doc(format!("prt_{n:04}"), rest));
                }
            }
            _ => {}
        }
    }
    opencode::conversation(&session, messages, opts, report)
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let all = sources();
    let i = usize::from(pick) % all.len();
    let source = all[i];
    let path = Path::new(NAMES[i % NAMES.len()]);
    let mut report = Report::default();
    // Both compaction policies: the active one cuts the history at a compaction.
    let opts = Options {
        history: if pick & 0x80 == 0 {
            cchist::import::History::Full
        } else {
            cchist::import::History::Active
        },
        ..Options::default()
    };
    let read = if source.name() == "opencode" {
        opencode_docs(data, &opts, &mut report)
    } else {
        source.read(path, data, &opts, &mut report)
    };
    let Ok(conv) = read else {
        return;
    };
    let target = build::Target {
        session_id: "11111111-1111-4111-8111-111111111111".into(),
        cwd: "/w".into(),
        git_branch: String::new(),
        model: None,
        force_model: false,
        source: source.name(),
    };
    let jsonl = build::build(conv, &target, &mut report);
    let findings =
        cchist::findings::validate::validate_named(&jsonl, Some(&target.session_id), true);
    assert!(findings.is_empty(), "{findings:?}");
});
