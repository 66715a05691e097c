//! One classifier of a session's files: an in-place run and a `--fork` treat each file the
//! same way. A `.jsonl` under `tool-results/` is a tool's output, not a transcript — text,
//! which a records stage (drop-tool-noise dropping a progress record) must leave alone.

use std::path::Path;

/// A session `s1` (p02_noise) whose `tool-results/` holds a `.jsonl` file that a records
/// stage would change; everything old enough not to look live. Returns the project folder.
fn session_with_jsonl_tool_result(root: &Path) -> std::path::PathBuf {
    let dir = root.join("projects/-home-p");
    let results = dir.join("s1/tool-results");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::copy(
        crate::common::corpus("generated/p02_noise.jsonl"),
        dir.join("s1.jsonl"),
    )
    .unwrap();
    std::fs::write(results.join("out.jsonl"), TOOL_OUTPUT).unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    for p in [dir.join("s1.jsonl"), results.join("out.jsonl")] {
        let f = std::fs::File::options().write(true).open(&p).unwrap();
        f.set_modified(old).unwrap();
    }
    dir
}

const TOOL_OUTPUT: &str = concat!(
    r#"{"type":"progress","uuid":"u1","parentUuid":null,"data":{}}"#,
    "\n",
    r#"{"type":"user","uuid":"u2","parentUuid":"u1","message":{"role":"user","content":"hi"}}"#,
    "\n"
);

#[test]
fn a_jsonl_under_tool_results_is_text_in_place_and_in_a_fork() {
    let d = tempfile::tempdir().unwrap();
    let dir = session_with_jsonl_tool_result(d.path());
    crate::common::ok(
        crate::common::cchist()
            .args(["drop-tool-noise", "--in-place", "--backup"])
            .arg(dir.join("s1.jsonl"))
            .env("CLAUDE_CONFIG_DIR", d.path()),
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("s1/tool-results/out.jsonl")).unwrap(),
        TOOL_OUTPUT,
        "in place: the tool's output is text, not records to drop"
    );

    let d = tempfile::tempdir().unwrap();
    let dir = session_with_jsonl_tool_result(d.path());
    let out = crate::common::ok(
        crate::common::cchist()
            .args(["drop-tool-noise", "--fork", "--session", "s1"])
            .env("CLAUDE_CONFIG_DIR", d.path()),
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let id = line
        .trim()
        .rsplit_once("claude --resume ")
        .unwrap()
        .1
        .trim();
    assert_eq!(
        std::fs::read_to_string(dir.join(id).join("tool-results/out.jsonl")).unwrap(),
        TOOL_OUTPUT,
        "in a fork: the same treatment as in place"
    );
}
