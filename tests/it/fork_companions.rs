//! `--fork` copies the companion folder into the new session: sub-agent transcripts carry the
//! new session id, and a redacting pipeline never copies a secret from tool-results into it.

#[test]
fn redact_fork_redacts_the_copied_tool_results() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("projects/-home-dev-p01");
    let comp = dir.join("p01/tool-results");
    std::fs::create_dir_all(&comp).unwrap();
    let src = crate::common::corpus("generated/p01_quickstart.jsonl");
    let session = dir.join("p01.jsonl");
    std::fs::copy(&src, &session).unwrap();
    let token = format!("ghp_{}", "Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0EdCbA9");
    std::fs::write(
        comp.join("toolu_1.txt"),
        format!("output\nGITHUB_TOKEN={token}\n"),
    )
    .unwrap();
    let before = std::fs::read(&session).unwrap();

    let out = crate::common::ok(
        crate::common::cchist()
            .args(["redact", "--fork", "--session", "p01"])
            .env("CLAUDE_CONFIG_DIR", d.path()),
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let id = line
        .trim()
        .split_once("claude --resume ")
        .unwrap()
        .1
        .to_string();

    assert_eq!(
        std::fs::read(&session).unwrap(),
        before,
        "the original is untouched"
    );
    let copied = std::fs::read_to_string(dir.join(&id).join("tool-results/toolu_1.txt")).unwrap();
    assert_eq!(copied, "output\nGITHUB_TOKEN=[REDACTED:github-pat]\n");
    let original = std::fs::read_to_string(comp.join("toolu_1.txt")).unwrap();
    assert!(
        original.contains(&token),
        "the original companion is untouched"
    );
    let forked = std::fs::read_to_string(dir.join(format!("{id}.jsonl"))).unwrap();
    assert!(forked.contains(&format!("\"sessionId\":\"{id}\"")));
    // p01's GitHub token is redacted in the fork (its AWS pair is AWS's documented example,
    // which redaction keeps).
    assert!(forked.contains("[REDACTED:github-pat]") && !forked.contains("ghp_0123"));
}
