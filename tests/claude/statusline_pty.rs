//! The status line the pinned CLI shows carries `cchist statusline`'s line: the real CLI,
//! interactive in a tmux pseudo-terminal, with `statusLine` set by `cchist statusline
//! install`, resuming a session whose last usage the mock chose (issue #28).

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::claude::{OutputFormat, Sandbox};
use crate::support::mock_api::{Block, MockApi};

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
    let Some(tui) = sb.tui(&mock, &["--resume", &sid, "--model", "claude-sonnet-4-6"]) else {
        return;
    };
    // The one line cchist prints for this session (150 000 tokens of sonnet-4-6's 200K).
    let want = "ctx 150k/200k 75% · compacts at 167k";
    let start = Instant::now();
    let mut pane = String::new();
    while start.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(500));
        pane = tui.screen();
        if pane.contains(want) {
            break;
        }
    }
    drop(tui);
    assert!(
        pane.contains(want),
        "the CLI's screen lacks `{want}`:\n{pane}"
    );
}
