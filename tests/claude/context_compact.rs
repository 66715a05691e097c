//! `cchist context` against the real CLI's auto-compaction: the mock reports a chosen usage
//! each turn, and the turn before which cchist says "compacts now" is the turn at which the
//! pinned CLI compacts (issue #28).

use serde_json::{json, Value};

use crate::support::claude::{OutputFormat, Sandbox};
use crate::support::mock_api::{Block, MockApi};

/// A usage whose four-field sum is `total` (most of it cache reads, as a long session's is).
fn usage(total: u64) -> Value {
    json!({"input_tokens": 5, "cache_creation_input_tokens": 100,
           "cache_read_input_tokens": total - 125, "output_tokens": 20})
}

/// `cchist context --json` on the session, with `env` as the CLI has it.
fn context(sb: &Sandbox, sid: &str, env: &[(&str, &str)]) -> Value {
    let mut cmd = crate::common::cchist();
    cmd.args(["context", "--json", "-s", sid])
        .env("CLAUDE_CONFIG_DIR", sb.config_dir())
        .env("HOME", sb.root().join("home"))
        .current_dir(sb.proj());
    for v in cchist::transcript::context::ENV_VARS {
        cmd.env_remove(v);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    serde_json::from_slice(&crate::common::ok(&mut cmd).stdout).unwrap()
}

/// Plays one session on `model`: the first prompt, then one resume per entry of `totals`
/// after the first (the mock reporting `totals[k]` on turn k). Before each resume it asks
/// `cchist context`; returns, per resume, (cchist's standing, whether that run compacted).
/// `None` without the CLI.
fn play(model: &str, env: &[(&str, &str)], totals: &[u64]) -> Option<Vec<(String, bool)>> {
    let sb = Sandbox::new();
    let mock = MockApi::start(vec![]).unwrap();
    mock.set_usage(vec![usage(totals[0])]);
    mock.set_script(vec![vec![Block::text("ok 1")]]);
    let out = sb.cli_env(
        &mock,
        &["-p", "turn 1", "--model", model],
        OutputFormat::Json,
        &format!("{model} turn 1"),
        env,
    )?;
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let sid = out.session_id().expect("session id");
    let file = sb.session_file(&sid);
    let boundaries = || {
        std::fs::read_to_string(&file)
            .unwrap()
            .matches("\"compact_boundary\"")
            .count()
    };
    let mut seen = Vec::new();
    for (k, &total) in totals.iter().enumerate().skip(1) {
        let r = context(&sb, &sid, env);
        let standing = r["standing"].as_str().unwrap().to_string();
        let before = boundaries();
        mock.set_usage(vec![usage(total)]);
        mock.set_script(vec![vec![Block::text(&format!("ok {}", k + 1))]]);
        let prompt = format!("turn {}", k + 1);
        let out = sb.cli_env(
            &mock,
            &["-p", &prompt, "--resume", &sid, "--model", model],
            OutputFormat::Json,
            &format!("{model} {prompt}"),
            env,
        )?;
        let compacted = boundaries() > before;
        seen.push((standing, compacted));
        if compacted {
            break;
        }
        let _ = out;
    }
    Some(seen)
}

/// The turns' standings and compactions agree: the first "compacts_now" is the first
/// compaction, and nothing compacted before.
fn agree(seen: &[(String, bool)]) {
    let said = seen.iter().position(|(s, _)| s == "compacts_now");
    let did = seen.iter().position(|(_, c)| *c);
    assert!(did.is_some(), "the CLI never compacted: {seen:?}");
    assert_eq!(said, did, "cchist's \"compacts now\" vs the CLI: {seen:?}");
}

#[test]
fn compacts_now_is_when_the_cli_compacts_on_a_1m_model() {
    // Threshold 967 000: 300 tokens short does not compact; 2 000 over does.
    let Some(seen) = play(
        "claude-opus-5-5",
        &[],
        &[900_000, 950_000, 966_700, 969_000, 975_000],
    ) else {
        return;
    };
    agree(&seen);
}

#[test]
fn compacts_now_is_when_the_cli_compacts_on_sonnet_4_6() {
    let Some(seen) = play(
        "claude-sonnet-4-6",
        &[],
        &[120_000, 150_000, 166_700, 169_000, 175_000],
    ) else {
        return;
    };
    assert_eq!(seen[1].0, "warning");
    agree(&seen);
}

#[test]
fn compacts_now_follows_the_pct_override() {
    let env = [("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE", "50")];
    let Some(seen) = play(
        "claude-sonnet-4-6",
        &env,
        &[60_000, 89_700, 92_000, 120_000],
    ) else {
        return;
    };
    agree(&seen);
}

#[test]
fn disabled_auto_compact_is_off_and_the_cli_does_not_compact() {
    let env = [("DISABLE_AUTO_COMPACT", "1")];
    let Some(seen) = play("claude-sonnet-4-6", &env, &[100_000, 169_000, 172_000]) else {
        return;
    };
    assert!(seen.iter().all(|(s, c)| s == "off" && !c), "{seen:?}");
}

#[test]
fn no_known_window_is_said_and_the_cli_does_not_compact() {
    let Some(seen) = play("claude-haiku-4-5", &[], &[100_000, 400_000, 1_200_000]) else {
        return;
    };
    assert!(seen.iter().all(|(s, c)| s == "unknown" && !c), "{seen:?}");
}
