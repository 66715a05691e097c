//! `cchist import` (#26) on the hand-made fixtures of `tests/fixtures/import/<format>/` (see
//! their README for the upstream definitions they follow): what the session it writes holds,
//! what it must not hold (a rolled-back turn, injected context, a planted secret), and that
//! a malformed source writes nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{assert_code, cchist, manifest};

/// A fake AWS secret key, built at run time so the repository holds no secret-looking literal.
pub fn planted() -> String {
    format!("wJalrXUtnFEMI/K7MDENG/{}", "bPxRfiCYzzzzKEYimport")
}

/// The fixture `rel` (under tests/fixtures/import) copied into `dir` with `@@CWD@@` set to
/// `cwd` and `@@SECRET@@` to [`planted`]; the copy keeps the file name (detection reads it).
pub fn fixture(rel: &str, dir: &Path, cwd: &Path) -> PathBuf {
    let src = manifest().join("tests/fixtures/import").join(rel);
    let text = std::fs::read_to_string(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    let text = text
        .replace("@@CWD@@", &cwd.to_string_lossy())
        .replace("@@SECRET@@", &planted());
    let dest = dir.join(src.file_name().expect("name"));
    std::fs::write(&dest, text).expect("write fixture");
    dest
}

pub const CODEX: &str =
    "codex/rollout-2026-11-30T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl";
pub const GEMINI: &str = "gemini/session-2026-11-30T10-00-0199bbbb.jsonl";

/// `cchist import ARGS -o -` in `dir`: the records, and stderr.
fn import_out(dir: &Path, args: &[&str]) -> (Vec<Value>, String) {
    let out = cchist()
        .arg("import")
        .args(args)
        .args(["-o", "-"])
        .current_dir(dir)
        .env("CLAUDE_CONFIG_DIR", dir.join("no-claude-here"))
        .output()
        .expect("run");
    assert_code(&out, 0);
    let recs = String::from_utf8(out.stdout.clone())
        .expect("utf8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON record"))
        .collect();
    (recs, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn text_of(recs: &[Value]) -> String {
    recs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn blocks(recs: &[Value]) -> Vec<&Value> {
    recs.iter()
        .filter_map(|r| r["message"]["content"].as_array())
        .flatten()
        .collect()
}

fn is_v4(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok_and(|u| u.get_version_num() == 4)
}

/// What every import must give: a chain of fresh v4 uuids, the fields the CLI writes, ids
/// Claude accepts, every tool_use answered by the next record, Claude's tool schemas.
fn assert_well_formed(recs: &[Value]) {
    assert!(!recs.is_empty());
    let sid = recs[0]["sessionId"].as_str().expect("sessionId");
    assert!(is_v4(sid), "session id {sid} is not a v4 uuid");
    let mut parent = Value::Null;
    for (i, r) in recs.iter().enumerate() {
        assert!(is_v4(r["uuid"].as_str().expect("uuid")), "record {i}: uuid");
        assert_eq!(r["parentUuid"], parent, "record {i}: parentUuid chain");
        parent = r["uuid"].clone();
        assert_eq!(r["sessionId"], sid);
        assert_eq!(r["version"], "2.1.328");
        assert_eq!(r["userType"], "external");
        assert_eq!(r["isSidechain"], false);
        assert!(r["gitBranch"].is_string() && r["cwd"].is_string());
        let ts = r["timestamp"].as_str().expect("timestamp");
        assert!(ts.ends_with('Z') && ts.len() == 24, "timestamp {ts}");
        let expect_role = if i % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(r["type"], expect_role, "record {i}: roles alternate");
        let asked: Vec<&str> = r["message"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                let id = b["id"].as_str().unwrap();
                assert!(
                    !id.is_empty()
                        && id
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                    "tool_use id {id}"
                );
                let inp = &b["input"];
                let need: &[&str] = match b["name"].as_str().unwrap() {
                    "Bash" => &["command"],
                    "Read" => &["file_path"],
                    "Write" => &["file_path", "content"],
                    "Edit" => &["file_path", "old_string", "new_string"],
                    _ => &[],
                };
                for k in need {
                    assert!(inp[k].is_string(), "{} input lacks {k}: {inp}", b["name"]);
                }
                id
            })
            .collect();
        if !asked.is_empty() {
            let next = &recs[i + 1]["message"]["content"];
            let answered: Vec<&str> = next
                .as_array()
                .expect("results")
                .iter()
                .take(asked.len())
                .map(|b| b["tool_use_id"].as_str().expect("a tool_result first"))
                .collect();
            assert_eq!(answered, asked, "record {i}: every tool_use answered next");
        }
    }
}

#[test]
fn codex_rollout_imports_without_rollback_context_or_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture(CODEX, tmp.path(), tmp.path());
    let (recs, err) = import_out(tmp.path(), &[src.to_str().unwrap()]);
    assert_well_formed(&recs);
    let all = text_of(&recs);
    for absent in [
        "ROLLED-BACK",
        "environment_context",
        "INJECTED-AGENTS-MD",
        "permissions instructions",
        "You are Codex",
        "COMPACTED-SUMMARY",
    ] {
        assert!(!all.contains(absent), "{absent} reached the session");
    }
    assert!(
        !all.contains(&planted()) && !err.contains(&planted()),
        "the planted secret leaked"
    );
    assert!(all.contains("[REDACTED:"), "the secret's place is marked");
    let b = blocks(&recs);
    assert!(b
        .iter()
        .any(|b| b["type"] == "image" && b["source"]["media_type"] == "image/png"));
    let tools: Vec<(&str, &Value)> = b
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (b["name"].as_str().unwrap(), &b["input"]))
        .collect();
    let names: Vec<&str> = tools.iter().map(|t| t.0).collect();
    assert_eq!(names, ["Bash", "Bash", "Write", "Edit", "Bash"]);
    assert_eq!(tools[0].1["command"], "ls");
    assert_eq!(tools[1].1["command"], "cat config.env");
    let cwd = tmp.path().to_string_lossy();
    assert_eq!(tools[2].1["file_path"], format!("{cwd}/hello.txt"));
    assert_eq!(tools[3].1["old_string"], "    println!(\"hi\");");
    assert_eq!(tools[3].1["new_string"], "    println!(\"hello\");");
    assert_eq!(tools[4].1["command"], "cargo build");
    assert!(all.contains("[web search: rust println macro]"));
    assert!(all.contains("[codex tool call `update_plan`]"));
    assert_eq!(recs[0]["cwd"], cwd.as_ref());
    assert_eq!(recs[0]["gitBranch"], "main");
    // The report says what was dropped and why.
    for why in [
        "removed by a rollback",
        "injected",
        "encrypted_content",
        "a line kind cchist does not know",
        "update_plan",
    ] {
        assert!(err.contains(why), "report lacks {why}:\n{err}");
    }
}

#[test]
fn codex_active_history_starts_at_the_compaction() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture(CODEX, tmp.path(), tmp.path());
    let (recs, _) = import_out(tmp.path(), &[src.to_str().unwrap(), "--history", "active"]);
    assert_well_formed(&recs);
    let all = text_of(&recs);
    assert!(all.contains("COMPACTED-SUMMARY"));
    assert!(!all.contains("config.env holds"));
    assert_eq!(
        recs.len(),
        4,
        "replacement history (2) and the turn after it (2)"
    );
}

#[test]
#[cfg(feature = "zstd")]
fn codex_zst_rollout_reads_like_the_plain_one_and_latest_prefers_plain() {
    let tmp = tempfile::tempdir().unwrap();
    let day = tmp.path().join("codex/sessions/2026/11/30");
    std::fs::create_dir_all(&day).unwrap();
    let plain = fixture(CODEX, &day, tmp.path());
    let zst = day.join(format!(
        "{}.zst",
        plain.file_name().unwrap().to_string_lossy()
    ));
    let bytes = std::fs::read(&plain).unwrap();
    std::fs::write(&zst, zstd::stream::encode_all(&bytes[..], 3).unwrap()).unwrap();
    let (a, _) = import_out(tmp.path(), &[plain.to_str().unwrap()]);
    let (b, _) = import_out(tmp.path(), &[zst.to_str().unwrap()]);
    let strip =
        |v: &[Value]| -> Vec<Value> { v.iter().map(|r| r["message"]["content"].clone()).collect() };
    assert_eq!(strip(&a), strip(&b));
    // Both present: --latest takes the plain file (a corrupt .zst would otherwise fail).
    std::fs::write(&zst, b"not zstd").unwrap();
    let out = cchist()
        .args(["import", "--from", "codex", "--latest", "--dry-run"])
        .env("CODEX_HOME", tmp.path().join("codex"))
        .env("CLAUDE_CONFIG_DIR", tmp.path().join("claude"))
        .output()
        .unwrap();
    assert_code(&out, 0);
    assert!(String::from_utf8_lossy(&out.stderr).contains(".jsonl (codex)"));
    assert!(
        !tmp.path().join("claude").exists(),
        "a dry run writes nothing"
    );
}

#[test]
fn import_writes_the_session_where_claude_resumes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("my.proj");
    std::fs::create_dir_all(&proj).unwrap();
    let proj = proj.canonicalize().unwrap();
    let src = fixture(CODEX, tmp.path(), &proj);
    let cfg = tmp.path().join("claude");
    let out = cchist()
        .args(["import", src.to_str().unwrap()])
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .output()
        .unwrap();
    assert_code(&out, 0);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let id = stdout.trim().rsplit(' ').next().unwrap().to_string();
    assert_eq!(
        stdout.trim(),
        format!("cd {} && claude --resume {id}", proj.display())
    );
    let folder = cchist::claude::layout::project_folder_name(&proj.to_string_lossy());
    assert!(folder.ends_with("-my-proj"));
    let file = cfg
        .join("projects")
        .join(folder)
        .join(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&file).expect("the session file");
    assert!(text
        .lines()
        .all(|l| l.contains(&format!("\"sessionId\":\"{id}\""))));
    let v = cchist()
        .args(["validate", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_code(&v, 0);
    // --json says the same.
    let out = cchist()
        .args(["import", "--json", "--dry-run", src.to_str().unwrap()])
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .output()
        .unwrap();
    assert_code(&out, 0);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let imp = &doc["imports"][0];
    assert_eq!(imp["format"], "codex");
    assert!(imp["report"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["action"] == "dropped" && e["kind"] == "response_item/reasoning"));
}

#[test]
fn malformed_source_says_where_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture(CODEX, tmp.path(), tmp.path());
    let mut lines: Vec<String> = std::fs::read_to_string(&src)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    lines[2] = "{\"timestamp\": \"x\", \"type\": \"response_item\", \"payload\": ".into();
    std::fs::write(&src, lines.join("\n") + "\n").unwrap();
    let cfg = tmp.path().join("claude");
    let out = cchist()
        .args(["import", src.to_str().unwrap()])
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .output()
        .unwrap();
    assert_code(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3: not JSON", src.display())),
        "{err}"
    );
    assert!(!cfg.exists(), "nothing written under the config folder");
    // A Gemini log line that is no record of its format.
    let g = fixture(GEMINI, tmp.path(), tmp.path());
    let mut text = std::fs::read_to_string(&g).unwrap();
    text.push_str("{\"what\": 1}\n");
    std::fs::write(&g, text).unwrap();
    let out = cchist()
        .args(["import", g.to_str().unwrap()])
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .output()
        .unwrap();
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains(":14: neither metadata"));
    assert!(!cfg.exists());
}

#[test]
fn gemini_log_replays_rewinds_and_splits_tool_calls() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture(GEMINI, tmp.path(), tmp.path());
    let (recs, err) = import_out(
        tmp.path(),
        &[
            src.to_str().unwrap(),
            "--project",
            tmp.path().to_str().unwrap(),
        ],
    );
    assert_well_formed(&recs);
    let all = text_of(&recs);
    assert!(!all.contains("REWOUND") && !all.contains("Request cancelled"));
    assert!(!all.contains(&planted()));
    let b = blocks(&recs);
    assert!(b.iter().any(|b| b["type"] == "image"));
    let names: Vec<&str> = b
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    // The repeated `m2` record replaced the first: one Read, not two.
    assert_eq!(names, ["Read", "Bash", "Edit"]);
    assert!(all.contains("[gemini tool call `glob`]"));
    assert!(err.contains("a message rewound away"));
    assert!(err.contains("no signature"));
}

#[test]
fn gemini_checkpoint_drops_the_injected_context() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("gemini/checkpoint-demo.json", tmp.path(), tmp.path());
    let (recs, _) = import_out(tmp.path(), &[src.to_str().unwrap()]);
    assert_well_formed(&recs);
    let all = text_of(&recs);
    assert!(!all.contains("INJECTED-GEMINI-CONTEXT") && !all.contains("Thanks for the context"));
    assert_eq!(recs.len(), 4);
    assert!(!all.contains(&planted()));
}

#[test]
fn messages_shapes_import() {
    let tmp = tempfile::tempdir().unwrap();
    for f in [
        "messages/anthropic.json",
        "messages/openai-chat.json",
        "messages/openai-responses.jsonl",
    ] {
        let src = fixture(f, tmp.path(), tmp.path());
        let (recs, _) = import_out(tmp.path(), &[src.to_str().unwrap()]);
        assert_well_formed(&recs);
        let b = blocks(&recs);
        assert!(
            b.iter()
                .any(|b| b["type"] == "tool_result" && b["content"] == "config.env\nsrc"),
            "{f}"
        );
        assert!(
            !text_of(&recs).contains("You are a helpful assistant"),
            "{f}: system prompt dropped"
        );
    }
    // Thinking without a signature is dropped (the API rejects it), with one it is kept.
    let src = fixture("messages/anthropic.json", tmp.path(), tmp.path());
    let (recs, _) = import_out(tmp.path(), &[src.to_str().unwrap()]);
    assert!(blocks(&recs)
        .iter()
        .any(|b| b["type"] == "thinking" && b["signature"] == "EqQBCkYIBxgCKkBsig"));
    let text = std::fs::read_to_string(&src)
        .unwrap()
        .replace("EqQBCkYIBxgCKkBsig", "");
    std::fs::write(&src, text).unwrap();
    let (recs, err) = import_out(tmp.path(), &[src.to_str().unwrap()]);
    assert!(!blocks(&recs).iter().any(|b| b["type"] == "thinking"));
    assert!(err.contains("block/thinking") && err.contains("no signature"));
}

#[test]
fn aider_history_is_text_turns() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("aider/.aider.chat.history.md", tmp.path(), tmp.path());
    let (recs, err) = import_out(tmp.path(), &[src.to_str().unwrap()]);
    assert_well_formed(&recs);
    assert_eq!(recs.len(), 4);
    assert_eq!(
        recs[0]["message"]["content"],
        "Fix the greeting in src/main.rs\nso it says hello"
    );
    let all = text_of(&recs);
    assert!(
        all.contains("<<<<<<< SEARCH")
            && !all.contains("Applied edit")
            && !all.contains(&planted())
    );
    assert!(err.contains("aider's own output"));
}

/// What the converters of #26 got wrong, each a finding of `validate`: another agent's
/// argument names under Claude's tool names, unsigned thinking, non-UUID uuids (`--strict`),
/// a sessionId that is not the file name.
#[test]
fn validate_flags_what_other_converters_write() {
    let tmp = tempfile::tempdir().unwrap();
    let stem = "11111111-1111-4111-8111-111111111111";
    let other = "22222222-2222-4222-8222-222222222222";
    let rec = |uuid: &str, parent: Option<&str>, sid: &str, kind: &str, content: Value| {
        let mut v = serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": sid,
            "timestamp": "2026-11-30T10:00:00.000Z", "message": {"role": kind, "content": content}});
        if kind == "assistant" {
            v["message"]["model"] = "claude-opus-5-5".into();
            v["message"]["id"] = format!("msg_{uuid}").into();
        }
        v.to_string() + "\n"
    };
    let u = |n: u8| format!("aaaaaaaa-0000-4000-8000-00000000000{n}");
    let mut text = rec(&u(1), None, stem, "user", "go".into());
    text += &rec(
        &u(2),
        Some(&u(1)),
        stem,
        "assistant",
        serde_json::json!([
        {"type": "thinking", "thinking": "plan", "signature": ""},
        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": "ls"}},
        {"type": "tool_use", "id": "t2", "name": "Edit", "input": {"raw": "*** Begin Patch"}}]),
    );
    text += &rec(
        &u(3),
        Some(&u(2)),
        stem,
        "user",
        serde_json::json!([
        {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "b"}]),
    );
    text += &rec("request_1", Some(&u(3)), other, "user", "more".into());
    let file = tmp.path().join(format!("{stem}.jsonl"));
    std::fs::write(&file, text).unwrap();
    let rules = |strict: bool| -> Vec<String> {
        let mut c = cchist();
        c.args(["validate", "--format", "json"]).arg(&file);
        if strict {
            c.arg("--strict");
        }
        let out = c.output().unwrap();
        assert_code(&out, 1);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["files"][0]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        rules(false),
        [
            "tool-input-schema",
            "tool-input-schema",
            "unsigned-thinking",
            "session-id-mismatch"
        ]
    );
    assert!(rules(true).contains(&"non-uuid-uuid".to_string()));
}

/// A Gemini chat log of `n` messages, each re-appended `r` times after it (as the CLI does on
/// every tool-call and token update), then a rewind to the middle.
fn gemini_repeats(n: usize, r: usize) -> Vec<u8> {
    let mut out = String::from(
        "{\"sessionId\":\"s\",\"projectHash\":\"h\",\"startTime\":\"2026-11-30T10:00:00.000Z\"}\n",
    );
    for i in 0..n {
        let ty = if i % 2 == 0 { "user" } else { "gemini" };
        for k in 0..=r {
            out.push_str(&format!(
                "{{\"id\":\"m{i}\",\"timestamp\":\"2026-11-30T10:00:00.000Z\",\"type\":\"{ty}\",\"content\":[{{\"text\":\"message {i} update {k}\"}}]}}\n"
            ));
        }
    }
    out.push_str(&format!("{{\"$rewindTo\":\"m{}\"}}\n", n / 2));
    out.into_bytes()
}

/// The Gemini log replay is linear in the log: a repeated id is a map lookup, not a scan of
/// the records so far (which made 4× the messages cost 16× the time).
#[test]
#[ignore = "slow: times the Gemini log replay at two sizes"]
fn slow_gemini_repeated_ids_scale_linearly() {
    use cchist::import::{gemini::Gemini, Options, Report, Source};
    let path = Path::new("session-2026-11-30T10-00-scale.jsonl");
    let time = |data: &[u8]| {
        (0..3)
            .map(|_| {
                let t = std::time::Instant::now();
                let conv = Gemini
                    .read(path, data, &Options::default(), &mut Report::default())
                    .expect("read");
                assert!(!conv.messages.is_empty());
                t.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    };
    let n = 20_000;
    let small = time(&gemini_repeats(n, 3));
    let large = time(&gemini_repeats(4 * n, 3));
    let ratio = large / small;
    eprintln!(
        "gemini replay: {n} messages {small:.3}s, {} messages {large:.3}s, ×{ratio:.1}",
        4 * n
    );
    assert!(
        ratio < 8.0,
        "4× the messages took ×{ratio:.1} the time: not linear"
    );
}

/// The opencode fixture's session file, in its `storage/` tree.
pub const OPENCODE_SESSION: &str =
    "session/4b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4/ses_1f0aa0000000FixtureSession.json";

/// The opencode fixture (`tests/fixtures/import/opencode/storage`) copied to
/// `data/opencode/storage` under `dir` (so `data` is an `XDG_DATA_HOME`), placeholders filled
/// in as [`fixture`] does; the session file.
pub fn opencode_tree(dir: &Path, cwd: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path, cwd: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let (src, dest) = (e.path(), to.join(e.file_name()));
            if src.is_dir() {
                copy(&src, &dest, cwd);
            } else {
                let text = std::fs::read_to_string(&src).unwrap();
                let text = text
                    .replace("@@CWD@@", &cwd.to_string_lossy())
                    .replace("@@SECRET@@", &planted());
                std::fs::write(&dest, text).unwrap();
            }
        }
    }
    let storage = dir.join("data/opencode/storage");
    copy(
        &manifest().join("tests/fixtures/import/opencode/storage"),
        &storage,
        cwd,
    );
    storage.join(OPENCODE_SESSION)
}

fn tool_uses(recs: &[Value]) -> Vec<(String, Value)> {
    blocks(recs)
        .into_iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| (b["name"].as_str().unwrap().to_string(), b["input"].clone()))
        .collect()
}

#[test]
fn opencode_storage_imports_without_reverted_injected_or_secret() {
    let tmp = tempfile::tempdir().unwrap();
    let src = opencode_tree(tmp.path(), tmp.path());
    let (recs, err) = import_out(tmp.path(), &[src.to_str().unwrap()]);
    assert_well_formed(&recs);
    assert!(err.contains("(opencode)"), "detected: {err}");
    let all = text_of(&recs);
    for absent in [
        "REVERTED-PROMPT",
        "REVERTED-ANSWER",
        "INJECTED-SYNTHETIC",
        "IGNORED-PART",
        "REASONING-UNSIGNED",
        "FAILED-ATTEMPT",
        "COMPACTED-SUMMARY",
        "What did we do so far?",
        "[Old tool result content cleared]",
    ] {
        assert!(!all.contains(absent), "{absent} reached the session");
    }
    assert!(
        !all.contains(&planted()) && !err.contains(&planted()),
        "the planted secret leaked"
    );
    assert!(all.contains("[REDACTED:"), "the secret's place is marked");
    let b = blocks(&recs);
    assert!(b
        .iter()
        .any(|b| b["type"] == "image" && b["source"]["media_type"] == "image/png"));
    let tools = tool_uses(&recs);
    let names: Vec<&str> = tools.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        names,
        ["Bash", "Read", "Edit", "Write", "Edit", "Bash", "Bash"]
    );
    let cwd = tmp.path().to_string_lossy();
    assert_eq!(
        tools[0].1,
        serde_json::json!({"command": "ls", "description": "List files"})
    );
    assert_eq!(tools[1].1["file_path"], format!("{cwd}/config.env"));
    assert_eq!(
        tools[2].1,
        serde_json::json!({"file_path": format!("{cwd}/src/main.rs"),
            "old_string": "    println!(\"hi\");", "new_string": "    println!(\"hello\");"})
    );
    assert_eq!(tools[3].1["file_path"], format!("{cwd}/README.md"));
    assert_eq!(tools[3].1["content"], "# demo\n");
    assert_eq!(tools[4].1["new_string"], "    println!(\"hello, world\");");
    assert_eq!(tools[6].1["command"], "cargo test");
    // Results: the failed command is an error, the interrupted one answered with opencode's note.
    let result = |id: &str| {
        b.iter()
            .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
            .map(|b| (*b).clone())
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    assert_eq!(result("toolu_01ls")["content"], "config.env\nsrc\n");
    assert_eq!(result("toolu_06fmt")["is_error"], true);
    assert_eq!(
        result("toolu_06fmt")["content"],
        "error: no such command: `fmt-x`"
    );
    assert_eq!(
        result("toolu_07test")["content"],
        "[Tool execution was interrupted]"
    );
    assert_eq!(result("toolu_07test")["is_error"], true);
    // `glob` has no Claude Code tool: text, its (pruned but recorded) output too.
    assert!(all.contains("[opencode tool call `glob`]"));
    assert!(all.contains("[output of `glob`]"));
    // Text said after a tool call comes after its result.
    let done = recs
        .iter()
        .position(|r| r.to_string().contains("Done: the greeting says hello."))
        .unwrap();
    assert!(recs[done - 1].to_string().contains("[output of `glob`]"));
    assert_eq!(recs[0]["cwd"], cwd.as_ref());
    assert!(recs
        .iter()
        .any(|r| r["message"]["model"] == "claude-sonnet-4-5"));
    for why in [
        "session.revert",
        "synthetic: text opencode added",
        "ignored: opencode does not send it",
        "no signature",
        "bookkeeping",
        "failed (error)",
        "pending or running",
        "glob: no Claude Code tool",
        "apply_patch → Write, Edit",
        "full history kept",
    ] {
        assert!(err.contains(why), "report lacks {why}:\n{err}");
    }
}

#[test]
fn opencode_active_history_starts_at_the_compaction_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let src = opencode_tree(tmp.path(), tmp.path());
    let (recs, _) = import_out(tmp.path(), &[src.to_str().unwrap(), "--history", "active"]);
    assert_well_formed(&recs);
    let all = text_of(&recs);
    // The tail the compaction kept (from its `tail_start_id`), the question, the summary.
    assert_eq!(
        recs[0]["message"]["content"],
        "Change the greeting in src/main.rs to say hello."
    );
    assert!(all.contains("What did we do so far?") && all.contains("COMPACTED-SUMMARY"));
    assert!(all.contains("[Old tool result content cleared]"));
    assert!(!all.contains("Let me look.") && !all.contains("screenshot shows"));
    assert!(!all.contains("REVERTED-PROMPT"));
}

#[test]
fn opencode_session_and_latest_are_found_under_xdg_data_home() {
    let tmp = tempfile::tempdir().unwrap();
    opencode_tree(tmp.path(), tmp.path());
    for args in [
        &["--session", "FixtureSession"][..],
        &["--latest", "--cwd", tmp.path().to_str().unwrap()][..],
    ] {
        let out = cchist()
            .args(["import", "--from", "opencode", "--dry-run"])
            .args(args)
            .env("XDG_DATA_HOME", tmp.path().join("data"))
            .env("CLAUDE_CONFIG_DIR", tmp.path().join("claude"))
            .output()
            .unwrap();
        assert_code(&out, 0);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("ses_1f0aa0000000FixtureSession.json (opencode)"),
            "{err}"
        );
    }
    let out = cchist()
        .args(["import", "--from", "opencode", "--session", "nope"])
        .env("XDG_DATA_HOME", tmp.path().join("data"))
        .output()
        .unwrap();
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("no opencode session found"));
}

#[test]
fn opencode_malformed_part_says_where_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let src = opencode_tree(tmp.path(), tmp.path());
    let storage = src.parent().unwrap().parent().unwrap().parent().unwrap();
    let cfg = tmp.path().join("claude");
    let run = || {
        cchist()
            .args(["import", src.to_str().unwrap()])
            .env("CLAUDE_CONFIG_DIR", &cfg)
            .output()
            .unwrap()
    };
    // A part file cut short: not JSON, at its line.
    let part = storage.join("part/msg_1f0aa0000005FixtureMessage/prt_1f0aa0000017FixturePart.json");
    let text = std::fs::read_to_string(&part).unwrap();
    let cut: String = text.lines().take(4).collect::<Vec<_>>().join("\n");
    std::fs::write(&part, &cut).unwrap();
    let out = run();
    assert_code(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:4: not JSON", part.display())),
        "{err}"
    );
    assert!(!cfg.exists(), "nothing written under the config folder");
    std::fs::write(&part, text).unwrap();
    // A message of a role opencode does not write.
    let msg =
        storage.join("message/ses_1f0aa0000000FixtureSession/msg_1f0aa0000004FixtureMessage.json");
    let text = std::fs::read_to_string(&msg).unwrap();
    std::fs::write(
        &msg,
        text.replace("\"role\": \"user\"", "\"role\": \"system\""),
    )
    .unwrap();
    let out = run();
    assert_code(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:1: unknown role `system`", msg.display())),
        "{err}"
    );
    assert!(!cfg.exists());
}

/// `opencode.db` made from the fixture's storage tree as opencode's JSON migration makes it
/// (`storage/json-migration.ts`): ids from the file names, the JSON less its ids in `data`,
/// the session's `revert` a JSON column; rows inserted in an order that is not the
/// conversation's, so the reader orders them.
#[cfg(feature = "opencode-sqlite")]
fn opencode_db(dir: &Path, cwd: &Path) -> PathBuf {
    let session = opencode_tree(dir, cwd);
    let storage = session
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap();
    let db = dir.join("data/opencode/opencode.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT,
            slug TEXT NOT NULL, directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL,
            revert TEXT, time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL);
         CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
         CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
            time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);",
    )
    .unwrap();
    let read = |p: &Path| -> serde_json::Map<String, Value> {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    };
    let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
    let files = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        v.sort();
        v.reverse();
        v
    };
    let s = read(&session);
    let sid = stem(&session);
    let t = |o: &serde_json::Map<String, Value>, k: &str| o["time"][k].as_i64().unwrap_or(0);
    c.execute(
        "INSERT INTO session VALUES (?1, 'p', NULL, 'slug', ?2, 'title', '1.0.0', ?3, ?4, ?5)",
        rusqlite::params![
            sid,
            s["directory"].as_str().unwrap(),
            s["revert"].to_string(),
            t(&s, "created"),
            t(&s, "updated")
        ],
    )
    .unwrap();
    for m in files(&storage.join("message").join(&sid)) {
        let mut o = read(&m);
        let created = t(&o, "created");
        o.remove("id");
        o.remove("sessionID");
        let mid = stem(&m);
        c.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![mid, sid, created, Value::Object(o).to_string()],
        )
        .unwrap();
        for p in files(&storage.join("part").join(&mid)) {
            let mut o = read(&p);
            for k in ["id", "sessionID", "messageID"] {
                o.remove(k);
            }
            c.execute(
                "INSERT INTO part VALUES (?1, ?2, ?3, 0, 0, ?4)",
                rusqlite::params![stem(&p), mid, sid, Value::Object(o).to_string()],
            )
            .unwrap();
        }
    }
    drop(c);
    // The database alone: no storage tree to fall back on.
    std::fs::remove_dir_all(storage).unwrap();
    db
}

/// What a session's records say, less what each import makes anew (uuids, session id, message
/// ids).
fn conversation_of(recs: &[Value]) -> Vec<Value> {
    recs.iter()
        .map(|r| {
            serde_json::json!([
                r["type"],
                r["timestamp"],
                r["cwd"],
                r["message"]["model"],
                r["message"]["content"]
            ])
        })
        .collect()
}

#[test]
#[cfg(feature = "opencode-sqlite")]
fn opencode_db_imports_as_its_storage_tree_does() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = opencode_tree(tmp.path(), tmp.path());
    let (want, _) = import_out(tmp.path(), &[tree.to_str().unwrap()]);
    let (want_active, _) = import_out(tmp.path(), &[tree.to_str().unwrap(), "--history", "active"]);
    let db = opencode_db(tmp.path(), tmp.path());
    // Named, with --session (detected as opencode's by its header and name).
    let (got, err) = import_out(
        tmp.path(),
        &[db.to_str().unwrap(), "--session", "FixtureSession"],
    );
    assert_well_formed(&got);
    assert!(err.contains("opencode.db (opencode)"), "{err}");
    assert_eq!(conversation_of(&got), conversation_of(&want));
    let (got, _) = import_out(
        tmp.path(),
        &[
            db.to_str().unwrap(),
            "--from",
            "opencode",
            "--session",
            "ses_1f0aa0000000FixtureSession",
            "--history",
            "active",
        ],
    );
    assert_eq!(conversation_of(&got), conversation_of(&want_active));
    // Found under XDG_DATA_HOME by --latest.
    let out = cchist()
        .args(["import", "--from", "opencode", "--latest", "-o", "-"])
        .env("XDG_DATA_HOME", tmp.path().join("data"))
        .env("CLAUDE_CONFIG_DIR", tmp.path().join("claude"))
        .output()
        .unwrap();
    assert_code(&out, 0);
    let recs: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(conversation_of(&recs), conversation_of(&want));
    // Without --session: which one, said; a bad row: named, exit 2, nothing written.
    let cfg = tmp.path().join("claude");
    let out = cchist()
        .args(["import", db.to_str().unwrap()])
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .output()
        .unwrap();
    assert_code(&out, 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("name one with --session ID"));
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute(
        "UPDATE part SET data = '{\"type\": \"tool\", \"callID\": \"x\"' WHERE id = 'prt_1f0aa0000017FixturePart'",
        [],
    )
    .unwrap();
    drop(c);
    let out = cchist()
        .args([
            "import",
            db.to_str().unwrap(),
            "--session",
            "FixtureSession",
        ])
        .env("CLAUDE_CONFIG_DIR", &cfg)
        .output()
        .unwrap();
    assert_code(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: part `prt_1f0aa0000017FixturePart`: not JSON",
            db.display()
        )),
        "{err}"
    );
    assert!(!cfg.exists(), "nothing written");
}
