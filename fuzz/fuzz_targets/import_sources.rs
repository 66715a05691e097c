//! Every `cchist import` source on arbitrary bytes (the first byte picks it): an error or a
//! conversation, never a panic; and what the builder makes of a conversation always validates
//! strictly clean (every tool_use answered, UUIDs, Claude's tool schemas, the file name).
#![no_main]

use std::path::Path;

use cchist::import::{build, sources, Options, Report};
use libfuzzer_sys::fuzz_target;

const NAMES: &[&str] = &[
    "rollout-2026-11-30T10-00-00-x.jsonl",
    "session-2026-11-30T10-00-x.jsonl",
    "messages.json",
    ".aider.chat.history.md",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let all = sources();
    let i = usize::from(pick) % all.len();
    let source = all[i];
    let path = Path::new(NAMES[i % NAMES.len()]);
    let mut report = Report::default();
    let Ok(conv) = source.read(path, data, &Options::default(), &mut report) else {
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
