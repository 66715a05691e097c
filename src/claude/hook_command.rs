//! `[hook] action = "command"`: run the user's own history manager after a completed turn
//! (the History Management proposal's PostTurn / TurnCount hook) and read the operations
//! document it answers.
//!
//! The command gets the proposal's input on stdin:
//!
//! ```json
//! {"event": "PostTurn", "session_id": "…", "turn_count": 15, "current_turn_uuid": "…",
//!  "recent_turns": ["…", "…", "…"], "total_turns": 15, "transcript_path": "…", "cwd": "…"}
//! ```
//!
//! and the environment `TURN_COUNT`, `TOTAL_TURNS`, `CURRENT_TURN_UUID`, `SESSION_ID`,
//! `TRANSCRIPT_PATH`, `TURN_1` … `TURN_<n>` (each turn's first record uuid). Its stdout is
//! empty (nothing to do) or one `modify_history` document ([`OpsDoc`]). It runs without a
//! shell, in its own process group, which is killed whole at the timeout; stdout is read up to
//! [`MAX_STDOUT_BYTES`]. A failure says what happened (exit status, timeout, the document's
//! field) and never quotes the command's output: it may echo the transcript.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use wait_timeout::ChildExt;

use crate::io::framing;
use crate::stages::edit::OpsDoc;
use crate::transcript::record::Record;
use crate::transcript::session::Session;

/// The most of the command's stdout cchist reads; more is a failure.
pub const MAX_STDOUT_BYTES: usize = 1 << 20;

/// Why the history manager's answer is not applied.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Failure {
    /// It could not be started.
    #[error("cannot run `{program}`: {why}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        why: String,
    },
    /// It exited non-zero or was killed by a signal.
    #[error("the command {0}; nothing applied")]
    Exit(String),
    /// It ran past the timeout and was killed.
    #[error("the command ran past its timeout of {} ms and was killed (its process group); nothing applied (raise `command_timeout_ms`)", .0.as_millis())]
    Timeout(Duration),
    /// It printed more than [`MAX_STDOUT_BYTES`].
    #[error("the command printed more than {MAX_STDOUT_BYTES} bytes; nothing applied")]
    TooLarge,
    /// Its stdout is not an operations document.
    #[error("the command's output is not a modify_history document: {0}; nothing applied")]
    Invalid(String),
}

/// What the history manager is told.
#[derive(Debug, Clone)]
pub struct Request {
    /// `PostTurn` (after every turn) or `TurnCount` (at `at_turns` / `every`).
    pub event: &'static str,
    /// The session id.
    pub session_id: String,
    /// The transcript.
    pub transcript_path: PathBuf,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// Each turn's first record uuid, turn 1 first.
    pub turns: Vec<String>,
    /// How many of the last turns `recent_turns` lists.
    pub recent: usize,
}

impl Request {
    /// The input JSON on stdin.
    pub fn input(&self) -> Value {
        let n = self.turns.len();
        json!({
            "event": self.event,
            "session_id": self.session_id,
            "turn_count": n,
            "current_turn_uuid": self.turns.last(),
            "recent_turns": self.turns[n.saturating_sub(self.recent)..],
            "total_turns": n,
            "transcript_path": self.transcript_path,
            "cwd": self.cwd,
        })
    }

    /// The environment the proposal's example reads.
    pub fn env(&self) -> Vec<(String, String)> {
        let n = self.turns.len().to_string();
        let mut v = vec![
            ("TURN_COUNT".to_string(), n.clone()),
            ("TOTAL_TURNS".into(), n),
            (
                "CURRENT_TURN_UUID".into(),
                self.turns.last().cloned().unwrap_or_default(),
            ),
            ("SESSION_ID".into(), self.session_id.clone()),
            (
                "TRANSCRIPT_PATH".into(),
                self.transcript_path.to_string_lossy().into_owned(),
            ),
        ];
        for (i, u) in self.turns.iter().enumerate() {
            v.push((format!("TURN_{}", i + 1), u.clone()));
        }
        v
    }
}

/// Each turn's first record uuid (its prompt's), turn 1 first, as `history list` numbers them.
pub fn turn_uuids(data: &[u8]) -> Vec<String> {
    let s = Session::new(framing::lines(data, 1).map(Record::from_line).collect());
    let turns = s.turns();
    turns
        .iter()
        .map(|t| {
            s.records[t.prompt]
                .header()
                .and_then(|h| h.uuid())
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// What a history manager answered.
#[derive(Debug)]
pub struct Answer {
    /// The document as it printed it (what a queue keeps).
    pub text: String,
    /// The document parsed and checked.
    pub doc: OpsDoc,
}

/// Run `argv` with `req` on stdin and in the environment (plus `extra_env`), in `cwd`; kill
/// its process group after `timeout`. `Ok(None)`: it printed nothing (or only whitespace).
pub fn run(
    argv: &[String],
    req: &Request,
    cwd: Option<&Path>,
    timeout: Duration,
    extra_env: &[(String, String)],
) -> Result<Option<Answer>, Failure> {
    let program = argv.first().cloned().unwrap_or_default();
    let mut cmd = Command::new(&program);
    cmd.args(&argv[1..])
        .envs(req.env())
        .envs(extra_env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // Not read: it may echo the transcript, and an unread pipe could block the command.
        .stderr(Stdio::null())
        .process_group(0);
    if let Some(d) = cwd.filter(|d| d.is_dir()) {
        cmd.current_dir(d);
    }
    let mut child = cmd.spawn().map_err(|e| Failure::Spawn {
        program: program.clone(),
        why: e.to_string(),
    })?;
    let pgid = child.id() as i32;
    let input = req.input().to_string();
    let mut stdin = child.stdin.take();
    // Writer and reader threads: a command that never reads its input, or prints a lot before
    // reading it, must not hang us.
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            // A command that exits without reading closes the pipe: not an error of ours.
            let _ = s.write_all(input.as_bytes());
        }
    });
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = (&mut stdout)
            .take(MAX_STDOUT_BYTES as u64 + 1)
            .read_to_end(&mut buf);
        // Past the limit: keep draining so the command is not blocked on a full pipe
        // while we wait for it (it is killed at the timeout anyway).
        if buf.len() > MAX_STDOUT_BYTES {
            let _ = std::io::copy(&mut stdout, &mut std::io::sink());
        }
        r.map(|_| buf)
    });
    let status = match child.wait_timeout(timeout) {
        Ok(Some(s)) => s,
        Ok(None) | Err(_) => {
            kill_group(pgid);
            let _ = child.wait();
            let _ = writer.join();
            let _ = reader.join();
            return Err(Failure::Timeout(timeout));
        }
    };
    // The command exited; a child it left behind may hold stdout open: kill its group.
    kill_group(pgid);
    let _ = writer.join();
    let out = reader.join().ok().and_then(Result::ok).unwrap_or_default();
    if !status.success() {
        return Err(Failure::Exit(match (status.code(), status.signal()) {
            (Some(c), _) => format!("exited {c}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            _ => "failed".into(),
        }));
    }
    if out.len() > MAX_STDOUT_BYTES {
        return Err(Failure::TooLarge);
    }
    let text = std::str::from_utf8(&out).map_err(|_| Failure::Invalid("it is not UTF-8".into()))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    let doc = OpsDoc::parse(text).map_err(|e| Failure::Invalid(e.to_string()))?;
    Ok(Some(Answer {
        text: text.to_string(),
        doc,
    }))
}

fn kill_group(pgid: i32) {
    // SAFETY: signals the process group created for this command only (`process_group(0)`
    // made its leader's pid the group id).
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Every uuid a document names as a turn reference that must be in the session (to say which
/// is missing): not the labels of records the document itself creates.
pub fn named_uuids(doc: &OpsDoc) -> Vec<String> {
    use crate::stages::edit::{Op, TurnRef};
    let created: std::collections::HashSet<&str> = doc
        .operations
        .iter()
        .filter_map(|op| match op {
            Op::Replace { with: m, .. } | Op::Insert { content: m, .. } => m.uuid.as_deref(),
            Op::Delete { .. } => None,
        })
        .collect();
    let mut v = Vec::new();
    let mut push = |r: &TurnRef| {
        if let TurnRef::Uuid(u) = r {
            if !created.contains(u.as_str()) {
                v.push(u.clone());
            }
        }
    };
    for op in &doc.operations {
        match op {
            Op::Delete { turns } | Op::Replace { turns, .. } => turns.iter().for_each(&mut push),
            Op::Insert { after, .. } => push(after),
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn req() -> Request {
        Request {
            event: "PostTurn",
            session_id: "s1".into(),
            transcript_path: "/t/s1.jsonl".into(),
            cwd: None,
            turns: vec!["u1".into(), "u2".into(), "u3".into(), "u4".into()],
            recent: 2,
        }
    }

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn input_and_env_follow_the_proposal() {
        let r = req();
        let v = r.input();
        assert_eq!(v["turn_count"], 4);
        assert_eq!(v["total_turns"], 4);
        assert_eq!(v["current_turn_uuid"], "u4");
        assert_eq!(v["recent_turns"], json!(["u3", "u4"]));
        let env = r.env();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("TURN_1"), Some("u1"));
        assert_eq!(get("TURN_4"), Some("u4"));
        assert_eq!(get("TURN_5"), None);
        assert_eq!(get("TURN_COUNT"), Some("4"));
    }

    #[test]
    fn reads_the_document_or_nothing() {
        let t = Duration::from_secs(10);
        let doc = r#"{"action":"modify_history","operations":[{"type":"delete","turns":["'"$TURN_1"'"]}]}"#;
        let got = run(
            &sh(&format!("cat >/dev/null; echo '{doc}'")),
            &req(),
            None,
            t,
            &[],
        )
        .unwrap()
        .unwrap();
        assert_eq!(named_uuids(&got.doc), vec!["u1"]);
        assert!(matches!(
            run(&sh("cat >/dev/null"), &req(), None, t, &[]),
            Ok(None)
        ));
        // stdin carries the input
        let echo = sh(r#"grep -q '"event":"PostTurn"' && printf ' \n'"#);
        assert!(matches!(run(&echo, &req(), None, t, &[]), Ok(None)));
    }

    #[test]
    fn failures_say_why_without_the_output() {
        let t = Duration::from_secs(10);
        let e = run(&sh("echo SECRET-ISH; exit 3"), &req(), None, t, &[]).unwrap_err();
        assert_eq!(e, Failure::Exit("exited 3".into()));
        let e = run(&sh("echo not json at all"), &req(), None, t, &[]).unwrap_err();
        assert!(
            matches!(&e, Failure::Invalid(m) if !m.contains("not json at all")),
            "{e}"
        );
        let e = run(
            &sh(
                r#"echo '{"action":"modify_history","operations":[{"type":"delete","turns":[]}]}'"#,
            ),
            &req(),
            None,
            t,
            &[],
        )
        .unwrap_err();
        assert!(e.to_string().contains("operations[0].turns"), "{e}");
        let e = run(
            &sh("head -c 1100000 /dev/zero | tr '\\0' x"),
            &req(),
            None,
            t,
            &[],
        )
        .unwrap_err();
        assert_eq!(e, Failure::TooLarge);
        let e = run(&["/no/such/manager".into()], &req(), None, t, &[]).unwrap_err();
        assert!(matches!(e, Failure::Spawn { .. }));
    }

    #[test]
    fn a_hang_is_killed_with_its_children_at_the_timeout() {
        let start = Instant::now();
        // the child `sleep` keeps stdout open: killing only the shell would leave us waiting
        let e = run(
            &sh("sleep 30 & sleep 30"),
            &req(),
            None,
            Duration::from_millis(300),
            &[],
        )
        .unwrap_err();
        assert_eq!(e, Failure::Timeout(Duration::from_millis(300)));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn labels_the_document_creates_are_not_named_uuids() {
        let doc = OpsDoc::parse(r#"{"action":"modify_history","operations":[
            {"type":"replace","turns":["u1","u2"],"with":{"type":"user","content":"S","uuid":"sum"}},
            {"type":"insert","after":"sum","content":{"type":"user","content":"focus"}},
            {"type":"delete","turns":[4]}]}"#)
        .unwrap();
        assert_eq!(named_uuids(&doc), vec!["u1", "u2"]);
    }

    #[test]
    fn turn_uuids_are_the_prompts() {
        let t = concat!(
            r#"{"type":"user","uuid":"p1","parentUuid":null,"message":{"role":"user","content":"one"}}"#,
            "\n",
            r#"{"type":"assistant","uuid":"a1","parentUuid":"p1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"x"}]}}"#,
            "\n",
            r#"{"type":"user","uuid":"p2","parentUuid":"a1","message":{"role":"user","content":"two"}}"#,
            "\n",
        );
        assert_eq!(turn_uuids(t.as_bytes()), vec!["p1", "p2"]);
    }
}
