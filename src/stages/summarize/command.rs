//! The summary command: the range as JSONL on its standard input, bounded in time and output.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::stages::relink::stage_err;
use crate::stages::Cx;
use crate::transcript::session::Session;

use super::options::{SummarizeRange, MAX_COMMAND_OUTPUT};
use super::NAME;

impl SummarizeRange {
    /// Run the summary command on the range; its trimmed standard output.
    pub(super) fn run_command(
        &self,
        s: &Session<'_>,
        removed: &BTreeSet<usize>,
        cmd: &str,
        cx: &Cx,
    ) -> Result<String> {
        let err = |m: String| stage_err(cx, NAME, 0, format!("summary command `{cmd}`: {m}"));
        let mut input = Vec::new();
        for &i in removed {
            s.records[i].write_to(&mut input);
        }
        let mut child = {
            use std::os::unix::process::CommandExt;
            Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn()
                .map_err(|e| err(format!("cannot start: {e}")))?
        };
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        // The threads are never joined: a process the command left behind may hold a pipe
        // open for good, and the run must not wait for it (see below).
        std::thread::spawn(move || {
            // A command that does not read all its input is fine.
            let _ = stdin.write_all(&input);
        });
        let too_much = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        for (which, pipe) in [
            (0u8, Box::new(stdout) as Box<dyn Read + Send>),
            (1, Box::new(stderr)),
        ] {
            let (tx, too_much) = (tx.clone(), too_much.clone());
            std::thread::spawn(move || {
                let mut b = Vec::new();
                let _ = pipe.take(MAX_COMMAND_OUTPUT as u64 + 1).read_to_end(&mut b);
                if b.len() > MAX_COMMAND_OUTPUT {
                    too_much.store(true, std::sync::atomic::Ordering::Relaxed);
                }
                let _ = tx.send((which, b));
            });
        }
        drop(tx);
        let pgid = child.id() as i32;
        // SAFETY: signals only the process group created for this child.
        let kill_group = || unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        };
        let start = Instant::now();
        let status = loop {
            if too_much.load(std::sync::atomic::Ordering::Relaxed) {
                kill_group();
                let _ = child.wait();
                return Err(err(format!(
                    "printed more than {} MiB; a summary is a few paragraphs",
                    MAX_COMMAND_OUTPUT >> 20
                )));
            }
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if start.elapsed() > self.timeout => {
                    kill_group();
                    let _ = child.wait();
                    return Err(err(format!(
                        "timed out after {} s (set timeout_secs / --timeout)",
                        self.timeout.as_secs()
                    )));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => return Err(err(format!("wait: {e}"))),
            }
        };
        // Whatever the command started in the background would keep its pipes open: end it.
        kill_group();
        let (mut out, mut errs) = (None, None);
        while out.is_none() || errs.is_none() {
            let left = self
                .timeout
                .saturating_sub(start.elapsed())
                .max(Duration::from_secs(1));
            match rx.recv_timeout(left) {
                Ok((0, b)) => out = Some(b),
                Ok((_, b)) => errs = Some(b),
                Err(_) => {
                    return Err(err(
                        "exited, but a process it started (outside its process group) still holds its output open; run that in the foreground or close its output".into(),
                    ))
                }
            }
        }
        if too_much.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(err(format!(
                "printed more than {} MiB; a summary is a few paragraphs",
                MAX_COMMAND_OUTPUT >> 20
            )));
        }
        let (out, errs) = (out.unwrap_or_default(), errs.unwrap_or_default());
        if !status.success() {
            let tail = String::from_utf8_lossy(&errs);
            let tail = tail.trim();
            let tail: String = tail
                .chars()
                .rev()
                .take(500)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            return Err(err(format!(
                "{status}{}",
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(": {tail}")
                }
            )));
        }
        let text = String::from_utf8(out).map_err(|_| err("output is not UTF-8".into()))?;
        let text = text.trim();
        if text.is_empty() {
            return Err(err("printed no summary (empty output)".into()));
        }
        Ok(text.to_string())
    }
}
