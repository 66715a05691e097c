//! `cchist hook` installed into a sandboxed Claude Code: the real CLI runs it at SessionEnd,
//! and the transcript left on disk holds no planted secret and still resumes, whatever files
//! named like shipped pipelines the project holds.

use serde_json::json;

use crate::common::ok;
use crate::support::*;

/// A fake AWS secret, built at run time so the repository itself holds no secret-looking literal.
fn planted_secret() -> String {
    format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCYzzzzKEYtest")
}

/// `cchist ARGS` in the sandbox's project on its config folder, which must succeed.
fn cchist(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    ok(crate::common::cchist()
        .args(args)
        .env("CLAUDE_CONFIG_DIR", sb.config_dir())
        .current_dir(sb.proj()))
}

#[test]
fn session_end_hook_scrubs_the_transcript_the_cli_wrote() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    cchist(
        &sb,
        &[
            "hook",
            "install",
            "--event",
            "SessionEnd",
            "--timeout",
            "20",
        ],
    );
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.config_dir().join("settings.json")).unwrap())
            .unwrap();
    assert!(settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("cchist hook"));
    let secret = planted_secret();
    let scenario = Scenario {
        name: "hooked".into(),
        // A `scrub` file and a `share/` folder in the project (the hook's working directory)
        // must not replace the shipped pipeline the hook runs.
        files: vec![
            (".env".into(), format!("AWS_SECRET_ACCESS_KEY={secret}\n")),
            ("scrub".into(), "version = 1\n".into()),
            ("share/notes.md".into(), "not a pipeline\n".into()),
        ],
        prompts: vec![Prompt {
            prompt: "What is in .env?".into(),
            turns: vec![
                vec![Block::tool(
                    "Bash",
                    json!({"command": "cat .env", "description": "Show env"}),
                )],
                vec![Block::text("It holds an AWS secret key.")],
            ],
        }],
    };
    let sid = sb.play(&scenario).expect("CLI available");
    let file = sb.session_file(&sid);
    let on_disk = std::fs::read_to_string(&file).unwrap();
    assert!(
        !on_disk.contains(&secret),
        "the SessionEnd hook left the planted secret in the transcript"
    );
    assert!(
        on_disk.contains("[REDACTED:"),
        "the hook redacted something"
    );
    let probe = sb.resume(&sid, &[]).expect("CLI available");
    let msgs = probe.expect_ok("hook-scrubbed session");
    assert_no_secret_reaches_model(msgs, &[&secret]);
    assert!(
        occurrences(msgs, "What is in .env?").len() == 1,
        "the conversation is intact"
    );
}
