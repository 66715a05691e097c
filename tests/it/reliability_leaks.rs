//! Issue #25's leaks and losses, each checked through the binary: what cchist logs, prints or
//! leaves on disk holds no secret the default rules find, and a summary command's reply in the
//! forms models print keeps the records it asked for.
//!
//! Fake secrets are built at run time, so no token-shaped literal sits in the source.

use serde_json::Value;

use crate::common::{cchist, corpus, step_uuids, summary_record};

const P05: &str = "generated/p05_long.jsonl";

/// A summary command's `{"summary", "keep"}` reply after a byte-order mark, in a markdown
/// fence, or after a line of prose is still the JSON reply: the records it names are kept
/// (not dropped with raw JSON left as the summary). One that meant JSON but is broken is an
/// error, the file untouched.
#[test]
fn command_reply_in_a_fence_after_a_bom_or_prose_keeps_its_records() {
    let input = corpus(P05);
    let data = std::fs::read(&input).unwrap();
    let steps = step_uuids(&data);
    let keep = steps[1].last().unwrap().clone();
    let object = serde_json::json!({"summary": "S-JSON", "keep": [keep]}).to_string();
    let dir = tempfile::tempdir().unwrap();
    for reply in [
        format!("\u{feff}{object}"),
        format!("```json\n{object}\n```\n"),
        format!("Here is the summary:\n\n```\n{object}\n```"),
        format!("Here is the summary you asked for.\n{object}\n"),
        format!("\u{feff}Sure.\n  {object}\nHope this helps."),
    ] {
        let cmd = crate::common::reply_command(dir.path(), &reply);
        let out = crate::common::ok(
            cchist()
                .args([
                    "summarize-range",
                    "--keep-last-steps",
                    "3",
                    "--command",
                    &cmd,
                ])
                .arg(&input),
        );
        let sum = summary_record(&out.stdout).expect("a summary record");
        assert_eq!(sum["message"]["content"], "S-JSON", "{reply:?}");
        let kept = crate::common::strs(&sum["cchistSummary"]["keptUuids"]);
        assert!(kept.contains(&keep.as_str()), "{reply:?}: {kept:?}");
        assert!(out
            .stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .any(|l| serde_json::from_slice::<Value>(l).unwrap()["uuid"] == keep.as_str()));
    }
    for reply in [
        "```json\n{\"summary\": \"S\", \"keep\": [\"a\",]}\n```".to_string(),
        "Here it is:\n{\"summary\": \"S\", \"keep\": [\"a\",]}".to_string(),
        "\u{feff}{\"summary\": \"S\", \"keep\": [".to_string(),
    ] {
        let (d, f) = crate::common::temp_file("s.jsonl", &data);
        let cmd = crate::common::reply_command(d.path(), &reply);
        let out = cchist()
            .args([
                "summarize-range",
                "--keep-last-steps",
                "3",
                "--command",
                &cmd,
                "-i",
                "--force",
            ])
            .arg(&f)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{reply:?}: {err}");
        assert!(err.contains("not valid JSON"), "{reply:?}: {err}");
        assert_eq!(std::fs::read(&f).unwrap(), data);
    }
    // Plain text that quotes JSON of its own stays a plain-text summary.
    let text = "Changed the config:\n```json\n{\"a\": 1}\n```";
    let cmd = crate::common::reply_command(dir.path(), text);
    let out = crate::common::ok(
        cchist()
            .args([
                "summarize-range",
                "--keep-last-steps",
                "3",
                "--command",
                &cmd,
            ])
            .arg(&input),
    );
    let sum = summary_record(&out.stdout).unwrap();
    assert_eq!(sum["message"]["content"], text);
    assert!(sum["cchistSummary"].get("keptUuids").is_none());
}
