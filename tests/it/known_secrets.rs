//! A secret found once is gone everywhere (#24): a value a rule confirms where its context
//! shows it is replaced wherever the session repeats it bare — assistant text and thinking, an
//! Edit's strings, a `structuredPatch` line, a Bash `echo`, a sub-agent transcript, a
//! tool-results file, metadata — through every entry point; `check` reports those copies as
//! echoes; a file equals the same bytes on stdin; the output depends on neither `-j` nor file
//! order. Plus the records a stage adds after a redact stage (#25.1) and a token alone on a
//! line (#25.2).

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::json;

use crate::common::cchist;

const ID: &str = "7c2e0000-0000-4000-8000-000000000001";

/// An AWS-secret-shaped value, assembled at run time (no token-shaped literal in the source).
fn secret() -> String {
    ["wJa9rXUtnF", "EMI/K7MDEN", "G/bPxRfiCY", "q8Zt3LmW2v"].concat()
}

fn user(uuid: &str, parent: Option<&str>, content: serde_json::Value) -> String {
    json!({"type": "user", "uuid": uuid, "parentUuid": parent, "sessionId": ID,
        "timestamp": "2026-04-01T10:00:00.000Z", "message": {"role": "user", "content": content}})
    .to_string()
        + "\n"
}

fn assistant(uuid: &str, parent: &str, content: serde_json::Value) -> String {
    json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": ID,
        "timestamp": "2026-04-01T10:00:01.000Z",
        "message": {"role": "assistant", "id": format!("msg_{uuid}"), "type": "message",
            "model": "claude-opus-5-5", "content": content}})
    .to_string()
        + "\n"
}

/// The main transcript: the model quotes the value before it is ever assigned, the user
/// assigns it (the context a rule sees), then it is echoed in thinking, text, an Edit and
/// its structuredPatch, and a Bash command.
fn main_transcript() -> String {
    let s = secret();
    user("u0", None, json!("what is in the config?"))
        + &assistant("a0", "u0", json!([{"type": "text", "text": format!("I found {s} in a comment")}]))
        + &user("u1", Some("a0"), json!(format!("export AWS_SECRET_ACCESS_KEY=\"{s}\"")))
        + &assistant(
            "a1",
            "u1",
            json!([
                {"type": "thinking", "thinking": format!("the key {s} must move"), "signature": "sig"},
                {"type": "text", "text": format!("Set: {s}.")},
                {"type": "tool_use", "id": "toolu_1", "name": "Edit",
                    "input": {"file_path": "/app/a.py", "old_string": format!("KEY = '{s}'"), "new_string": "KEY = env()"}},
            ]),
        )
        + &user(
            "u2",
            Some("a1"),
            json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]),
        )
        .replace(
            "\"sessionId\"",
            &format!(
                "\"toolUseResult\":{{\"structuredPatch\":[{{\"lines\":[\"-KEY = '{s}'\",\"+KEY = env()\"]}}]}},\"sessionId\""
            ),
        )
        + &assistant(
            "a2",
            "u2",
            json!([{"type": "tool_use", "id": "toolu_2", "name": "Bash",
                "input": {"command": format!("echo {s} >> /tmp/log")}}]),
        )
        + &user(
            "u3",
            Some("a2"),
            json!([{"type": "tool_result", "tool_use_id": "toolu_2", "content": ""}]),
        )
}

struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
    project: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let project = root.join("projects/-home-dev-app");
        let comp = project.join(ID);
        std::fs::create_dir_all(comp.join("subagents")).unwrap();
        std::fs::create_dir_all(comp.join("tool-results")).unwrap();
        let s = secret();
        std::fs::write(project.join(format!("{ID}.jsonl")), main_transcript()).unwrap();
        std::fs::write(
            comp.join("subagents/agent-a1.jsonl"),
            user("s1", None, json!(format!("the key is {s}"))),
        )
        .unwrap();
        std::fs::write(
            comp.join("subagents/agent-a1.meta.json"),
            json!({"description": format!("rotate {s}")}).to_string(),
        )
        .unwrap();
        std::fs::write(comp.join("tool-results/toolu_9.txt"), format!("log: {s}\n")).unwrap();
        Sandbox {
            _dir: dir,
            root,
            project,
        }
    }

    fn main(&self) -> PathBuf {
        self.project.join(format!("{ID}.jsonl"))
    }

    fn cchist(&self, args: &[&str], stdin: Option<String>) -> Output {
        use std::io::Write;
        let mut child = cchist()
            .args(args)
            .env("CLAUDE_CONFIG_DIR", &self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            input.write_all(s.as_bytes()).unwrap();
        }
        drop(input);
        child.wait_with_output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> Output {
        let out = self.cchist(args, None);
        assert!(
            out.status.success(),
            "cchist {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Files under the config folder that still hold the secret (relative paths).
    fn holding_secret(&self) -> Vec<String> {
        let s = secret();
        files(&self.root)
            .into_iter()
            .filter(|p| contains(&std::fs::read(p).unwrap(), &s))
            .map(|p| p.strip_prefix(&self.root).unwrap().display().to_string())
            .collect()
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if e.file_type().unwrap().is_dir() {
            v.extend(files(&p));
        } else {
            v.push(p);
        }
    }
    v.sort();
    v
}

#[test]
fn redact_replaces_every_echo_in_the_transcript() {
    let s = Sandbox::new();
    let out = s.ok(&["redact", s.main().to_str().unwrap()]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(&secret()), "an echo survived:\n{text}");
    // One placeholder for all of them, and the thinking block that held one is gone.
    assert_eq!(text.matches("[REDACTED:").count(), 6, "{text}");
    assert!(!text.contains("\"thinking\""), "{text}");
    for l in text.lines() {
        serde_json::from_str::<serde_json::Value>(l).expect("every line stays JSON");
    }
}

#[test]
fn redact_in_place_scrubs_every_member_of_the_session() {
    let s = Sandbox::new();
    s.ok(&[
        "redact",
        "--in-place",
        "--force",
        s.main().to_str().unwrap(),
    ]);
    assert_eq!(s.holding_secret(), Vec::<String>::new());
}

#[test]
fn run_all_scrubs_echoes_in_every_member() {
    let s = Sandbox::new();
    s.ok(&["run", "-p", "scrub", "--all", "--in-place", "--force"]);
    assert_eq!(s.holding_secret(), Vec::<String>::new());
}

#[test]
fn session_end_hook_scrubs_echoes_in_every_member() {
    let s = Sandbox::new();
    let event = json!({"session_id": ID, "transcript_path": s.main(), "cwd": "/home/dev/app",
        "hook_event_name": "SessionEnd"});
    let out = s.cchist(&["hook"], Some(event.to_string()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(s.holding_secret(), Vec::<String>::new());
}

#[test]
fn fork_holds_no_echo() {
    let s = Sandbox::new();
    let out = s.ok(&["redact", "--fork", "--session", "7c2e"]);
    let line = String::from_utf8(out.stdout).unwrap();
    let new = line.split_whitespace().last().unwrap().to_string();
    let held: Vec<String> = s
        .holding_secret()
        .into_iter()
        .filter(|p| p.contains(&new))
        .collect();
    assert_eq!(held, Vec::<String>::new());
}

#[test]
fn check_reports_echoes_as_their_own_kind() {
    let s = Sandbox::new();
    let out = s.cchist(
        &[
            "check",
            "--format",
            "json",
            s.root.join("projects").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings: Vec<&serde_json::Value> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["findings"].as_array().unwrap())
        .collect();
    let echoes = findings.iter().filter(|f| f["kind"] == "echo").count();
    let own = findings.iter().filter(|f| f.get("kind").is_none()).count();
    assert!(own >= 1, "{v}");
    // main: text before, thinking, text, old_string, structuredPatch, Bash; the sub-agent, its
    // metadata and the tool result.
    assert!(echoes >= 9, "{echoes} echoes: {v}");
    assert!(!out
        .stdout
        .windows(8)
        .any(|w| w == &secret().as_bytes()[..8]));
}

#[test]
fn stdin_gives_the_output_of_the_same_file() {
    let s = Sandbox::new();
    let file = s.ok(&["redact", s.main().to_str().unwrap()]).stdout;
    let piped = s.cchist(&["redact"], Some(main_transcript()));
    assert!(piped.status.success());
    assert_eq!(
        String::from_utf8(piped.stdout).unwrap(),
        String::from_utf8(file).unwrap()
    );
}

#[test]
fn output_depends_neither_on_jobs_nor_on_file_order() {
    let mut outs = Vec::new();
    for (jobs, reverse) in [("1", false), ("2", false), ("2", true), ("1", true)] {
        let s = Sandbox::new();
        let mut paths: Vec<String> = files(&s.project)
            .into_iter()
            .map(|p| p.display().to_string())
            .collect();
        if reverse {
            paths.reverse();
        }
        let out_dir = s.root.join("out");
        let mut args = vec!["redact", "-j", jobs, "--out-dir", out_dir.to_str().unwrap()];
        args.extend(paths.iter().map(String::as_str));
        s.ok(&args);
        let mut got: Vec<(String, Vec<u8>)> = files(&out_dir)
            .into_iter()
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        got.sort();
        assert!(
            got.iter().all(|(_, b)| !contains(b, &secret())),
            "-j {jobs}, reversed {reverse}: an echo survived"
        );
        outs.push(got);
    }
    for o in &outs[1..] {
        assert!(o == &outs[0], "outputs differ between runs");
    }
}

/// One file cut into parts over the threads (`CCHIST_SPLIT_MIN` makes a small file split as
/// a 32 MiB one does) gives what one piece gives: stdout, `check`'s report, `--out-dir`.
#[test]
fn one_file_in_parts_gives_what_one_piece_gives() {
    let s = Sandbox::new();
    let body = main_transcript().repeat(40);
    let big = s.root.join("big.jsonl");
    std::fs::write(&big, &body).unwrap();
    let big = big.to_str().unwrap();
    let run = |args: &[&str], split: &str| {
        let out = cchist()
            .args(args)
            .env("CLAUDE_CONFIG_DIR", &s.root)
            .env("CCHIST_SPLIT_MIN", split)
            .output()
            .unwrap();
        (out.status.code(), out.stdout)
    };
    for args in [
        vec!["redact", big],
        vec!["check", "--format", "json", big],
        vec!["check", "--format", "sarif", big],
    ] {
        let whole = run(&[&args[..], &["-j", "1"]].concat(), "0");
        assert!(!contains(&whole.1, &secret()) || args[0] != "redact");
        for split in ["1024", "8192"] {
            let parts = run(&[&args[..], &["-j", "2"]].concat(), split);
            assert_eq!(parts.0, whole.0, "{args:?} split {split}: exit");
            assert!(parts.1 == whole.1, "{args:?} split {split}: output differs");
        }
    }
    let out_dir = |name: &str, jobs: &str, split: &str| {
        let dir = s.root.join(name);
        let st = run(
            &[
                "redact",
                "-j",
                jobs,
                "--out-dir",
                dir.to_str().unwrap(),
                big,
            ],
            split,
        );
        assert_eq!(st.0, Some(0));
        std::fs::read(dir.join("big.jsonl")).unwrap()
    };
    assert!(out_dir("one", "1", "0") == out_dir("parts", "2", "1024"));
}

#[test]
fn known_values_file_is_a_secret_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join(".env");
    let pw = ["Tr0ub4", "dor&3x", "Qz"].concat();
    std::fs::write(
        &env,
        format!("# the project's real values\nDB_PASSWORD=\"{pw}\"\n"),
    )
    .unwrap();
    let input = user("u1", None, json!(format!("connect with {pw} now")));
    let out = cchist()
        .args(["redact", "--known-values", env.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(&pw), "{text}");
    assert!(text.contains("[REDACTED:known-value]"), "{text}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains(&pw));
}

#[test]
fn a_secret_file_read_in_the_session_makes_its_values_known() {
    let dir = tempfile::tempdir().unwrap();
    let pw = ["Qm7x", "Vb2k", "Lp9w"].concat();
    // The rules see no context in any of these: only the .env Read makes the value known.
    let input = assistant(
        "a1",
        "u0",
        json!([{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/app/.env"}}]),
    ) + &user("u1", Some("a1"), json!([{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": format!("     1→PGPASS={pw}\n     2→NODE_ENV=development\n")}]))
    .replace(
        "\"sessionId\"",
        &format!("\"toolUseResult\":{{\"type\":\"text\",\"file\":{{\"filePath\":\"/app/.env\",\"content\":\"PGPASS={pw}\\nNODE_ENV=development\\n\"}}}},\"sessionId\""),
    ) + &assistant("a2", "u1", json!([{"type": "text", "text": format!("It uses {pw}, in development.")}]));
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, &input).unwrap();
    let out = cchist().args(["redact"]).arg(&f).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains(&pw), "{text}");
    // The collateral guard: a plain word of the same file is not a secret.
    assert!(text.contains("in development."), "{text}");
}

#[test]
fn short_and_word_values_are_replaced_only_as_whole_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join("kv");
    std::fs::write(&env, "sunflowers\n").unwrap();
    let input = user(
        "u1",
        None,
        json!("sunflowers and sunflowers7 and xsunflowers"),
    );
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, &input).unwrap();
    let out = cchist()
        .args(["redact", "--known-values", env.to_str().unwrap()])
        .arg(&f)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("[REDACTED:known-value] and sunflowers7 and xsunflowers"),
        "{text}"
    );
}

#[test]
fn a_redact_stage_after_summarize_sees_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let key = ["AKIA", "Q7ZX3MPL", "2WQ9RT4Y"].concat();
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "version = 1\n[[stage]]\ntype = \"summarize-range\"\nturns = \"1..1\"\n[[stage]]\ntype = \"redact\"\n",
    )
    .unwrap();
    let f = dir.path().join("s.jsonl");
    std::fs::write(
        &f,
        user("u1", None, json!(format!("my key is {key} ok")))
            + &assistant("a1", "u1", json!([{"type": "text", "text": "noted"}]))
            + &user("u2", Some("a1"), json!("next"))
            + &assistant("a2", "u2", json!([{"type": "text", "text": "ok"}])),
    )
    .unwrap();
    let out = cchist()
        .args(["run", "-p"])
        .arg(&p)
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Summary of turns"), "{text}");
    assert!(!text.contains(&key), "the summary kept the key:\n{text}");
}

#[test]
fn a_token_alone_on_a_line_is_redacted() {
    let key = ["AKIA", "Q7ZX3MPL", "2WQ9RT4Y"].concat();
    for line in [key.clone(), format!("   {key}  ")] {
        let out = cchist()
            .args(["redact"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(format!("{line}\n").as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains(&key), "{line:?} -> {text:?}");
    }
}

fn redact_with(args: &[&str], input: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, input).unwrap();
    let out = cchist().args(args).arg(&f).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_secret_used_as_a_key_is_not_named_in_an_echo_path() {
    let pw = ["Pw9x", "Qz7L", "mK3v", "R8tY"].concat();
    let input = user("u1", None, json!(format!("connect with postgres://admin:{pw}@db.example.org/app")))
        + &json!({"type": "assistant", "uuid": "a1", "extra": {pw.clone(): {"note": format!("pw {pw}")}}})
            .to_string()
        + "\n";
    let (out, err) = redact_with(&["check", "--format", "json"], &input);
    assert!(out.contains("\"kind\": \"echo\""), "{out}");
    assert!(!out.contains(&pw) && !err.contains(&pw), "{out}{err}");
}

#[test]
fn words_and_numbers_of_a_secret_file_are_not_secrets() {
    let env =
        "AUTH_PROVIDER=github\nTOKEN_TTL=3600000\nKEY_FORMAT=markdown\nPASSWORD_POLICY=strong\n";
    let token = ["ghp_", "Zq8xLm3kvR7pW2xY9kT4", "abcdEFGH12345678"].concat();
    let input = user("u1", None, json!([{"type": "tool_result", "tool_use_id": "t1", "content": env}]))
        .replace(
            "\"sessionId\"",
            &format!(
                "\"toolUseResult\":{{\"type\":\"text\",\"file\":{{\"filePath\":\"/p/.env\",\"content\":{}}}}},\"sessionId\"",
                serde_json::to_string(env).unwrap()
            ),
        )
        + &assistant(
            "a1",
            "u1",
            json!([{"type": "text", "text": format!("Clone https://github.com/acme/app as markdown, a strong cache of 3600000 ms; {token}")}]),
        );
    let (out, _) = redact_with(&["redact"], &input);
    assert!(
        out.contains("Clone https://github.com/acme/app as markdown, a strong cache of 3600000 ms; [REDACTED:github-pat]"),
        "{out}"
    );
}

#[test]
fn a_known_value_alone_on_its_line_is_taken_whole() {
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("kv");
    let b64 = ["dGhpc2lz", "bXlzZWNy", "ZXQ9PQ=="].concat();
    std::fs::write(&kv, format!("{b64}\n")).unwrap();
    let (out, _) = redact_with(
        &["redact", "--known-values", kv.to_str().unwrap()],
        &user("u1", None, json!(format!("auth {b64} here"))),
    );
    assert!(!out.contains(&b64), "{out}");
}

#[test]
fn values_with_quotes_or_backslashes_are_found_in_stringified_json() {
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("kv");
    let (a, b) = (
        ["Ab\"Zq8x", "Lm3kvR7pW2"].concat(),
        ["Cd\\Qm7v", "X2pL9kR4tZ8"].concat(),
    );
    std::fs::write(&kv, format!("{a}\n{b}\n")).unwrap();
    let inner = json!({"pw": a, "p2": b}).to_string();
    let input = json!({"type": "user", "uuid": "u1", "toolUseResult": inner}).to_string() + "\n";
    let (out, _) = redact_with(&["redact", "--known-values", kv.to_str().unwrap()], &input);
    assert!(
        !out.contains("Zq8xLm3") && !out.contains("Qm7vX2p"),
        "{out}"
    );
}

#[test]
fn a_sub_agent_backup_and_a_nested_companion_share_the_session_s_secrets() {
    let s = Sandbox::new();
    let comp = s.project.join(ID);
    let v = secret();
    std::fs::write(
        comp.join("subagents/agent-a1.jsonl.cchist-bak.20260401T100000Z"),
        user("s1", None, json!(format!("the key is {v}"))),
    )
    .unwrap();
    std::fs::create_dir_all(comp.join("other/deep")).unwrap();
    std::fs::write(comp.join("other/deep/y.txt"), format!("saw {v}\n")).unwrap();
    s.ok(&[
        "redact",
        "--in-place",
        "--force",
        s.main().to_str().unwrap(),
    ]);
    assert_eq!(s.holding_secret(), Vec::<String>::new());
}

/// A value the user declares secret that no run would replace (shorter than 5 bytes) is
/// refused with the file and line, never the value, instead of being ignored in silence; a
/// dotenv file's short settings (`PORT=80`) are not values to refuse.
#[test]
fn a_too_short_known_value_is_refused_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let kv = dir.path().join("values.txt");
    let short = ["Z", "q9"].concat();
    std::fs::write(&kv, format!("# mine\nLongEnoughValue42\n{short}\n")).unwrap();
    let out = cchist()
        .args(["redact", "--known-values", kv.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    crate::common::assert_code(&out, 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("values.txt:3"), "{err}");
    assert!(!err.contains(&short), "{err}");
    let env = dir.path().join(".env");
    std::fs::write(&env, "PORT=80\nAPI_KEY=LongEnoughValue42\n").unwrap();
    let input = user("u1", None, json!("key LongEnoughValue42 on port 80"));
    let (out, _) = redact_with(&["redact", "--known-values", env.to_str().unwrap()], &input);
    assert!(!out.contains("LongEnoughValue42"), "{out}");
    assert!(out.contains("port 80"), "{out}");
}

/// A dotenv line with an inline comment (`API_TOKEN=value # rotated`) gives its value, as
/// dotenv tools read it; the comment is not part of it (the value survived, `check` silent).
#[test]
fn a_dotenv_inline_comment_is_not_part_of_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let env = dir.path().join(".env");
    let (a, b) = (["Ef7q", "Lm2xZz9p"].concat(), ["Qw8r", "Ty5uIo3p"].concat());
    std::fs::write(
        &env,
        format!("API_TOKEN={a} # rotated monthly\nOTHER=\"{b}\" # quoted\n"),
    )
    .unwrap();
    let input = user("u1", None, json!(format!("use {a} and {b} for the api")));
    let (out, _) = redact_with(&["redact", "--known-values", env.to_str().unwrap()], &input);
    assert!(!out.contains(&a) && !out.contains(&b), "{out}");
    assert!(out.contains("for the api"), "{out}");
}
