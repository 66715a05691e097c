use super::*;
use crate::io::framing::lines;
use crate::transcript::record::Record;
use serde_json::json;

fn limits(model: &str, env: &[(&str, &str)], settings: Vec<Value>) -> Limits {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let files: Vec<(String, Value)> = settings
        .into_iter()
        .enumerate()
        .map(|(i, d)| (format!("settings{i}.json"), d))
        .collect();
    Limits::of(model, &Overrides::resolve(&lookup, &files, None))
}

fn threshold(l: &Limits) -> u64 {
    l.threshold().expect("auto-compaction on")
}

#[test]
fn thresholds_match_the_measured_table() {
    // context-window.md, measured on 2.1.328 by bisection.
    assert_eq!(threshold(&limits("claude-opus-5-5", &[], vec![])), 967_000);
    assert_eq!(threshold(&limits("opus", &[], vec![])), 967_000);
    assert_eq!(
        threshold(&limits("claude-sonnet-4-6", &[], vec![])),
        167_000
    );
    assert_eq!(threshold(&limits("claude-opus-4-6", &[], vec![])), 167_000);
    let pct = [("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")];
    assert_eq!(
        threshold(&limits("claude-sonnet-4-6", &pct, vec![])),
        90_000
    );
    assert_eq!(threshold(&limits("claude-opus-5-5", &pct, vec![])), 490_000);
    let high = [("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "95")];
    assert_eq!(
        threshold(&limits("claude-sonnet-4-6", &high, vec![])),
        167_000
    );
    let win = [("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "300000")];
    assert_eq!(threshold(&limits("claude-opus-5-5", &win, vec![])), 267_000);
    let set = json!({"autoCompactWindow": 300000});
    assert_eq!(
        threshold(&limits("claude-opus-5-5", &[], vec![set])),
        267_000
    );
    let out = [("CLAUDE_CODE_MAX_OUTPUT_TOKENS", "8000")];
    assert_eq!(threshold(&limits("claude-opus-5-5", &out, vec![])), 979_000);
    let l = limits("claude-sonnet-4-6", &[], vec![]);
    assert_eq!(
        l.compaction,
        Compaction::Auto {
            effective: 180_000,
            threshold: 167_000,
            warning: 147_000
        }
    );
}

#[test]
fn unknown_windows_are_said_not_invented() {
    for m in [
        "claude-sonnet-4-5",
        "claude-sonnet-4-5[1m]",
        "claude-haiku-4-5",
        "claude-sonnet-4-20250514",
    ] {
        let l = limits(m, &[], vec![]);
        assert_eq!(l.window, Window::Unknown, "{m}");
        assert_eq!(l.compaction, Compaction::NoKnownWindow, "{m}");
        assert_eq!(l.standing(1_500_000), Standing::Unknown);
        assert_eq!(l.percent(10), None);
    }
    // The window override gives one (measured: 200 000 → 167 000 on sonnet-4-5).
    let win = [("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "200000")];
    assert_eq!(
        threshold(&limits("claude-sonnet-4-5", &win, vec![])),
        167_000
    );
}

#[test]
fn disabled_compaction_blocks_at_window_less_23k() {
    for var in ["DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"] {
        let l = limits("claude-sonnet-4-6", &[(var, "1")], vec![]);
        match &l.compaction {
            Compaction::Off { by, block } => {
                assert!(by.starts_with(var));
                assert_eq!(*block, Some(177_000));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(l.standing(176_999), Standing::Off);
        assert_eq!(l.standing(177_000), Standing::Blocked);
    }
    let cfg = json!({"autoCompactEnabled": false});
    let o = Overrides::resolve(&|_| None, &[], Some(("~/.claude.json".into(), &cfg)));
    assert!(matches!(
        Limits::of("claude-opus-5-5", &o).compaction,
        Compaction::Off { .. }
    ));
    // "0" is not truthy.
    let l = limits(
        "claude-sonnet-4-6",
        &[("DISABLE_AUTO_COMPACT", "0")],
        vec![],
    );
    assert!(matches!(l.compaction, Compaction::Auto { .. }));
}

#[test]
fn environment_wins_over_settings_env_and_later_files_over_earlier() {
    let user =
        json!({"env": {"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}, "autoCompactWindow": 400000});
    let local = json!({"autoCompactWindow": 300000});
    let l = limits("claude-opus-5-5", &[], vec![user.clone(), local.clone()]);
    // 300 000 − 20 000 = 280 000, 50 % of it.
    assert_eq!(threshold(&l), 140_000);
    let env = [("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "90")];
    assert_eq!(
        threshold(&limits("claude-opus-5-5", &env, vec![user, local])),
        252_000
    );
}

#[test]
fn standing_compacts_at_the_threshold() {
    let l = limits("claude-sonnet-4-6", &[], vec![]);
    assert_eq!(l.standing(146_999), Standing::Ok);
    assert_eq!(l.standing(147_000), Standing::Warning);
    assert_eq!(l.standing(166_999), Standing::Warning);
    assert_eq!(l.standing(167_000), Standing::CompactsNow);
}

fn session(text: &str) -> Session<'_> {
    Session::new(lines(text.as_bytes(), 1).map(Record::from_line).collect())
}

#[test]
fn count_is_last_real_usage_plus_estimate_after() {
    let text = [
        r#"{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}"#,
        r#"{"type":"assistant","uuid":"b","parentUuid":"a","message":{"id":"m1","model":"claude-sonnet-4-6","role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":10,"cache_read_input_tokens":1000,"cache_creation_input_tokens":200,"output_tokens":7}}}"#,
        r#"{"type":"user","uuid":"c","parentUuid":"b","message":{"role":"user","content":"12345678"}}"#,
        r#"{"type":"assistant","uuid":"d","parentUuid":"c","message":{"id":"m2","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"Prompt is too long"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
        r#"{"type":"assistant","uuid":"e","parentUuid":"d","isSidechain":true,"message":{"id":"m3","model":"claude-sonnet-4-6","role":"assistant","content":"side","usage":{"input_tokens":999999,"output_tokens":0}}}"#,
    ]
    .join("\n");
    let mut s = session(&text);
    let t = Timeline::of(&mut s);
    let (i, u) = t.last_usage.unwrap();
    assert_eq!(i, 1);
    assert_eq!(u.total(), 1217);
    assert_eq!(t.model.as_deref(), Some("claude-sonnet-4-6"));
    // "12345678" → 10 bytes → 3 tokens; the synthetic record's text is estimated too.
    let synthetic = budget::record_tokens(&mut s, 3);
    assert_eq!(t.estimated_after, 3 + synthetic);
    assert_eq!(t.tokens(), 1217 + 3 + synthetic);
}

#[test]
fn growth_is_the_recent_average() {
    let per = [Some(100), Some(300), None, Some(600), Some(50), Some(250)];
    // Deltas 200, 300, (drop), 200.
    assert_eq!(Timeline::growth(&per, 5), Some(233));
    assert_eq!(Timeline::growth(&per, 1), Some(200));
    assert_eq!(Timeline::growth(&[Some(5)], 5), None);
}

#[test]
fn composition_by_kind_with_steps_and_tool_names() {
    let big = "x".repeat(40_000);
    let text = [
        r#"{"type":"user","uuid":"a","parentUuid":null,"message":{"role":"user","content":"hi"}}"#.to_string(),
        r#"{"type":"attachment","uuid":"d","parentUuid":"a","attachment":{"type":"todo"},"rendered":["todo list"]}"#.to_string(),
        r#"{"type":"assistant","uuid":"b","parentUuid":"d","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}"#.to_string(),
        format!(r#"{{"type":"user","uuid":"c","parentUuid":"b","message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t1","content":"{big}"}}]}}}}"#),
    ]
    .join("\n");
    let mut s = session(&text);
    let c = composition(&mut s, 3, 16 * 1024);
    let part = |p: Part| c.parts.iter().find(|x| x.0 == p).unwrap().1;
    assert!(part(Part::ToolResults) > 10_000);
    assert!(part(Part::ToolInputs) > 0);
    assert!(part(Part::Thinking) > 0);
    assert!(part(Part::Attachments) > 0);
    assert_eq!(part(Part::Images), 0);
    let top = &c.largest[0];
    assert_eq!(top.part, Part::ToolResults);
    assert_eq!(top.name.as_deref(), Some("Bash"));
    assert_eq!(top.step, Some(1));
    assert_eq!(c.over_cap, (40_000 - 16 * 1024) / 4);
}
