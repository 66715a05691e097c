//! `cchist hook` installed into a sandboxed Claude Code: the real CLI runs it at SessionEnd,
//! and the transcript left on disk holds no planted secret and still resumes, whatever files
//! named like shipped pipelines the project holds.

use crate::support::*;

#[test]
fn session_end_hook_scrubs_the_transcript_the_cli_wrote() {
    if claude_bin().is_none() {
        return;
    }
    let sb = Sandbox::new();
    sb.cchist(&[
        "hook",
        "install",
        "--event",
        "SessionEnd",
        "--timeout",
        "20",
    ]);
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.config_dir().join("settings.json")).unwrap())
            .unwrap();
    assert!(settings["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("cchist hook"));
    let secret = planted_secret();
    // A `scrub` file and a `share/` folder in the project (the hook's working directory)
    // must not replace the shipped pipeline the hook runs.
    let scenario = env_secret_scenario(
        "hooked",
        vec![
            ("scrub".into(), "version = 1\n".into()),
            ("share/notes.md".into(), "not a pipeline\n".into()),
        ],
    );
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
