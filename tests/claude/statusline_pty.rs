//! The status line the pinned CLI shows carries `cchist statusline`'s line: the real CLI,
//! interactive in a tmux pseudo-terminal, with `statusLine` set by `cchist statusline
//! install`, resuming a session whose last usage the mock chose (issue #28).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::claude::{claude_bin, OutputFormat, Sandbox};
use crate::support::mock_api::{Block, MockApi};

/// The key `Sandbox` gives the CLI; an interactive CLI asks about a custom key unless its last
/// 20 characters are approved in `.claude.json`.
const KEY: &str = "sk-ant-dummy";

#[test]
fn the_cli_status_line_shows_cchist_line() {
    if Command::new("tmux").arg("-V").output().is_err() {
        crate::common::skip_or_fail("tmux is not installed");
        return;
    }
    let sb = Sandbox::new();
    let mock = MockApi::start(vec![vec![Block::text("ok")]]).unwrap();
    mock.set_usage(vec![
        json!({"input_tokens": 5, "cache_creation_input_tokens": 100,
        "cache_read_input_tokens": 149_875, "output_tokens": 20}),
    ]);
    let Some(out) = sb.cli(
        &mock,
        &["-p", "turn 1", "--model", "claude-sonnet-4-6"],
        OutputFormat::Json,
        "status line session",
    ) else {
        return;
    };
    assert!(out.status.is_some_and(|s| s.success()), "{}", out.stderr);
    let sid = out.session_id().expect("session id");
    // statusLine in the sandbox's user settings, as a user installs it.
    let mut install = crate::common::cchist();
    install
        .args(["statusline", "install", "--exe"])
        .arg(crate::common::bin())
        .env("CLAUDE_CONFIG_DIR", sb.config_dir());
    crate::common::ok(&mut install);
    // An interactive start asks nothing: onboarding done, the key approved, the folder trusted.
    let global = sb.config_dir().join(".claude.json");
    let mut g: serde_json::Value = std::fs::read(&global)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({}));
    g["hasCompletedOnboarding"] = json!(true);
    g["theme"] = json!("dark");
    g["customApiKeyResponses"] = json!({"approved": [KEY], "rejected": []});
    let proj = sb.proj().to_string_lossy().into_owned();
    g["projects"][&proj]["hasTrustDialogAccepted"] = json!(true);
    std::fs::write(&global, g.to_string()).unwrap();

    let bin = claude_bin().expect("CLI found above");
    let q = |s: &str| shlex::try_quote(s).unwrap().into_owned();
    let line = format!(
        "cd {} && exec env -i PATH={} HOME={} CLAUDE_CONFIG_DIR={} TERM=xterm-256color ANTHROPIC_API_KEY={KEY} ANTHROPIC_BASE_URL={} DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 {} --resume {sid} --model claude-sonnet-4-6",
        q(&proj),
        q(&std::env::var("PATH").unwrap_or_default()),
        q(&sb.root().join("home").to_string_lossy()),
        q(&sb.config_dir().to_string_lossy()),
        mock.base_url(),
        q(&bin.to_string_lossy()),
    );
    let name = format!("cchist-status-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &name])
            .args(args)
            .output()
            .expect("run tmux")
    };
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        "150",
        "-y",
        "40",
        &line,
    ]);
    assert!(started.status.success(), "{:?}", started);
    // The one line cchist prints for this session (150 000 tokens of sonnet-4-6's 200K).
    let want = "ctx 150k/200k 75% · compacts at 167k";
    let start = Instant::now();
    let mut pane = String::new();
    while start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
        pane = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", &name]).stdout)
            .into_owned();
        if pane.contains(want) {
            break;
        }
    }
    tmux(&["kill-server"]);
    assert!(
        pane.contains(want),
        "the CLI's screen lacks `{want}`:\n{pane}"
    );
}
