//! Issue #24 acceptance with the real CLI: a session in which the model and the tools repeat
//! the secrets they saw — assistant text, an Edit's `old_string` and the `structuredPatch` the
//! CLI records for it, a Bash `echo` into a log — holds none of them, in any file of its
//! project folder, after each way cchist redacts it: `redact -i`, `run -p scrub -i`, the
//! SessionEnd hook, `redact --fork` and `run -p scrub -i --all`. Each result resumes, and no
//! secret reaches the model. Skips without the CLI (fails under `CI=true`).

use std::path::Path;

use serde_json::json;

use crate::support::*;

/// The planted values: an AWS secret (from `.env`) and a deploy token, both built at run time.
fn secrets() -> [String; 2] {
    [
        planted_secret(),
        format!("dpl_{}{}", "Qm3xR8vT2kL9", "wZ4nB7cY1pF6"),
    ]
}

/// One prompt: the secrets shown once where their context names them (`cat .env`, a Read of
/// `config.py`), then repeated bare: an Edit whose `old_string` holds the key, a Bash `echo`
/// of the token into a log, and a closing message quoting both.
fn echo_scenario(name: &str) -> Scenario {
    let [aws, tok] = secrets();
    Scenario {
        name: name.into(),
        files: vec![
            (
                ".env".into(),
                format!("AWS_SECRET_ACCESS_KEY={aws}\nDEPLOY_TOKEN={tok}\n"),
            ),
            ("config.py".into(), format!("KEY = \"{aws}\"\n")),
        ],
        prompts: vec![Prompt {
            prompt: "Move the key out of config.py and deploy.".into(),
            turns: vec![
                vec![Block::tool(
                    "Bash",
                    json!({"command": "cat .env", "description": "Show env"}),
                )],
                vec![Block::tool(
                    "Read",
                    json!({"file_path": "$PROJ/config.py"}),
                )],
                vec![Block::tool(
                    "Edit",
                    json!({
                        "file_path": "$PROJ/config.py",
                        "old_string": format!("KEY = \"{aws}\""),
                        "new_string": "KEY = os.environ[\"KEY\"]",
                    }),
                )],
                vec![Block::tool(
                    "Bash",
                    json!({
                        "command": format!("echo deploying with {tok} >> deploy.log"),
                        "description": "Log the deploy",
                    }),
                )],
                vec![Block::text(&format!(
                    "Done. The old key was {aws} and the deploy token {tok}; config.py reads the environment now."
                ))],
            ],
        }],
    }
}

/// Every file under `dir` that still holds a planted value (`file: which`), recursively.
fn leaks_under(dir: &Path) -> Vec<String> {
    let secrets = secrets();
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            // cchist's backups keep the originals, secrets included, by design (`backups prune`).
            if name.contains(".cchist-bak") {
                continue;
            }
            let data = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            for (i, s) in secrets.iter().enumerate() {
                if data.contains(s.as_str()) {
                    out.push(format!("{}: secret {i}", p.display()));
                }
            }
        }
    }
    out
}

/// The session as played, before any redaction: its file and companion folder, copied out.
fn played_session(scratch: &Path) -> Option<std::path::PathBuf> {
    let sb = Sandbox::new();
    let sid = sb.play(&echo_scenario("echoes"))?;
    let file = sb.session_file(&sid);
    let before = std::fs::read_to_string(&file).unwrap();
    for s in secrets() {
        assert!(
            before.matches(s.as_str()).count() >= 2,
            "the played session repeats each secret (context and echoes)"
        );
    }
    assert!(
        before.contains("structuredPatch") && before.contains("old_string"),
        "the CLI recorded the Edit and its patch"
    );
    let dst = scratch.join(format!("{sid}.jsonl"));
    std::fs::copy(&file, &dst).unwrap();
    let companion = sb.project_dir().join(&sid);
    if companion.is_dir() {
        copy_dir(&companion, &scratch.join(&sid), &[]);
    }
    Some(dst)
}

/// Resumes `sid` in `sb`: the conversation is there, and no planted value reaches the model.
fn resumes_clean(sb: &Sandbox, sid: &str, how: &str) {
    let probe = sb.resume(sid, &[]).expect("CLI available");
    let msgs = probe.expect_ok(how);
    let secrets = secrets();
    assert_no_secret_reaches_model(msgs, &[&secrets[0], &secrets[1]]);
    assert_eq!(
        occurrences(msgs, "Move the key out of config.py").len(),
        1,
        "{how}: the conversation is intact"
    );
}

#[test]
fn no_planted_secret_survives_any_way_of_redacting_a_session() {
    if claude_bin().is_none() {
        return;
    }
    let scratch = tempfile::tempdir().unwrap();
    let original = played_session(scratch.path()).expect("CLI available");

    // In place, by file: `redact -i` and `run -p scrub -i`.
    for args in [
        vec!["redact", "-i"],
        vec!["run", "-p", "scrub", "-i", "--yes"],
    ] {
        let sb = Sandbox::new();
        let sid = sb.install(&original);
        let file = sb.session_file(&sid);
        crate::common::age(&file, 600); // not a live session
        let mut argv = args.clone();
        let f = file.to_string_lossy().into_owned();
        argv.push(&f);
        sb.cchist(&argv);
        let how = args.join(" ");
        assert_eq!(
            leaks_under(&sb.project_dir()),
            Vec::<String>::new(),
            "{how}"
        );
        resumes_clean(&sb, &sid, &how);
    }

    // A fork: the new session is clean; the original is left as it was.
    let sb = Sandbox::new();
    let sid = sb.install(&original);
    crate::common::age(&sb.session_file(&sid), 600);
    let out = sb.cchist(&["redact", "--fork", "-s", &sid]);
    let line = String::from_utf8(out.stdout).unwrap();
    let fork = line
        .trim()
        .rsplit_once("claude --resume ")
        .expect("prints the resume line")
        .1
        .to_string();
    assert_ne!(fork, sid);
    let fork_dir = scratch.path().join("fork-only");
    std::fs::create_dir_all(&fork_dir).unwrap();
    std::fs::copy(
        sb.session_file(&fork),
        fork_dir.join(format!("{fork}.jsonl")),
    )
    .unwrap();
    let companion = sb.project_dir().join(&fork);
    if companion.is_dir() {
        copy_dir(&companion, &fork_dir.join(&fork), &[]);
    }
    assert_eq!(leaks_under(&fork_dir), Vec::<String>::new(), "--fork");
    resumes_clean(&sb, &fork, "redact --fork");

    // A bulk run over the whole config folder.
    let sb = Sandbox::new();
    let sid = sb.install(&original);
    crate::common::age(&sb.session_file(&sid), 600);
    sb.cchist(&["run", "-p", "scrub", "-i", "--yes", "--all"]);
    assert_eq!(
        leaks_under(&sb.project_dir()),
        Vec::<String>::new(),
        "--all"
    );
    resumes_clean(&sb, &sid, "run -p scrub -i --all");

    // The SessionEnd hook, on the session the CLI itself just wrote.
    let sb = Sandbox::new();
    sb.cchist(&[
        "hook",
        "install",
        "--event",
        "SessionEnd",
        "--timeout",
        "30",
    ]);
    let sid = sb.play(&echo_scenario("hooked")).expect("CLI available");
    assert_eq!(
        leaks_under(&sb.project_dir()),
        Vec::<String>::new(),
        "SessionEnd hook"
    );
    resumes_clean(&sb, &sid, "SessionEnd hook");
}
