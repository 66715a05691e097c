//! The summary command: the range as JSONL on its standard input, bounded in time and output.

use std::collections::{BTreeSet, HashMap};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::stages::relink::stage_err;
use crate::stages::Cx;
use crate::transcript::session::Session;

use serde_json::Value;

use super::options::{SummarizeRange, MAX_COMMAND_OUTPUT};
use super::range::Segment;
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
            // The command read the transcript, so its error output may quote it, secrets
            // and all; the error is printed and logged (`hook.log`): redacted whole, then cut.
            let tail = String::from_utf8_lossy(&errs);
            let tail = crate::stages::redact::shown_suffix(tail.trim(), 500);
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

/// What a summary command answered: plain text (the summary), or a JSON object
/// `{"summary": "...", "keep": ["uuid", ...]}` naming records of the range to keep verbatim.
///
/// Models rarely print the bare object: it comes after a byte-order mark, inside a markdown
/// fence (```` ```json ````), or after a line of prose. Taking those as plain text would put
/// raw JSON in the summary and drop the records it asked to keep, so the object is looked for
/// in each form ([`json_reply`]); one that was meant but does not parse is an error.
pub(super) fn parse_reply(out: &str) -> std::result::Result<(String, Vec<String>), String> {
    let t = out.trim_start_matches('\u{feff}').trim();
    let Some(m) = json_reply(t)? else {
        return Ok((t.to_string(), Vec::new()));
    };
    if let Some(k) = m.keys().find(|k| *k != "summary" && *k != "keep") {
        return Err(format!(
            "its JSON reply has an unknown key `{k}`; write {{\"summary\": \"...\", \"keep\": [uuids]}}"
        ));
    }
    let summary = match m.get("summary") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        _ => {
            return Err(
                "its JSON reply needs a non-empty `summary` string (or print plain text)".into(),
            )
        }
    };
    let keep = match m.get("keep") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|u| {
                u.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| "`keep` must be a list of uuid strings".to_string())
            })
            .collect::<std::result::Result<_, _>>()?,
        Some(_) => return Err("`keep` must be a list of uuid strings".into()),
    };
    Ok((summary, keep))
}

/// The JSON object a reply holds, if it holds one: the whole text; else the body of the first
/// markdown code fence, or the object a line starts, that parses to an object with a
/// `summary` key (a plain-text summary may quote other JSON). `Err` when one of these meant
/// the JSON reply (it names `"summary"`) but is not valid JSON.
fn json_reply(t: &str) -> std::result::Result<Option<serde_json::Map<String, Value>>, String> {
    let broken = |e: serde_json::Error| {
        format!(
            "its reply holds what looks like a JSON {{\"summary\", \"keep\"}} object but is not valid JSON ({e}); print valid JSON or plain text"
        )
    };
    if t.starts_with('{') {
        match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => return Ok(Some(m)),
            Err(e) if t.contains("\"summary\"") => {
                // Valid JSON followed by prose is still the reply; anything else was broken.
                return match first_object(t) {
                    Some(Ok(m)) => Ok(Some(m)),
                    _ => Err(broken(e)),
                };
            }
            _ => {}
        }
    }
    let mut first_err = None;
    for body in fences(t) {
        let body = body.trim_start_matches('\u{feff}').trim();
        if !body.starts_with('{') {
            continue;
        }
        match first_object(body) {
            Some(Ok(m)) if m.contains_key("summary") => return Ok(Some(m)),
            Some(Err(e)) if body.contains("\"summary\"") => {
                first_err.get_or_insert(e);
            }
            _ => {}
        }
    }
    let mut at = 0;
    for line in t.split_inclusive('\n') {
        let start = at + (line.len() - line.trim_start().len());
        at += line.len();
        let rest = t[start..].trim_start_matches('\u{feff}');
        if !rest.starts_with('{') {
            continue;
        }
        match first_object(rest) {
            Some(Ok(m)) if m.contains_key("summary") => return Ok(Some(m)),
            Some(Err(e)) if line.contains("\"summary\"") => {
                first_err.get_or_insert(e);
            }
            _ => {}
        }
    }
    match first_err {
        Some(e) => Err(broken(e)),
        None => Ok(None),
    }
}

/// The JSON value `t` starts with, when it is an object (what follows it is not read).
fn first_object(
    t: &str,
) -> Option<std::result::Result<serde_json::Map<String, Value>, serde_json::Error>> {
    match serde_json::Deserializer::from_str(t)
        .into_iter::<Value>()
        .next()?
    {
        Ok(Value::Object(m)) => Some(Ok(m)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }
}

/// The bodies of the markdown code fences of `t` (```` ``` ```` or ```` ```json ```` lines
/// to the next ```` ``` ```` line, or to the end when it is not closed), in order.
fn fences(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut open: Option<usize> = None;
    let mut at = 0;
    for line in t.split_inclusive('\n') {
        let fence = line.trim().starts_with("```");
        match open {
            None if fence => open = Some(at + line.len()),
            Some(from) if fence && line.trim() == "```" => {
                out.push(&t[from..at]);
                open = None;
            }
            _ => {}
        }
        at += line.len();
    }
    if let Some(from) = open {
        out.push(&t[from.min(t.len())..]);
    }
    out
}

/// The records to keep verbatim: the whole segment (step, or turn head) of every uuid in
/// `keep`, grown until no tool call is cut (a kept tool_use keeps its results and the
/// reverse). Every uuid must name a record of the range (`range`, its segments).
pub(super) fn kept_records(
    s: &Session<'_>,
    range: &[Segment],
    keep: &[String],
) -> std::result::Result<BTreeSet<usize>, String> {
    let mut seg_of: HashMap<usize, usize> = HashMap::new();
    for (g, seg) in range.iter().enumerate() {
        for &i in &seg.records {
            seg_of.insert(i, g);
        }
    }
    let mut chosen = vec![false; range.len()];
    for u in keep {
        let g = s
            .by_uuid
            .get(u.as_str())
            .and_then(|i| seg_of.get(i))
            .ok_or_else(|| {
                // Quoted, escaped and cut: the entry is the command's text, not a uuid.
                let mut shown: String = u.chars().take(80).collect();
                if shown.len() < u.len() {
                    shown.push('…');
                }
                format!("`keep` names {shown:?}, which is not a record of the summarized range")
            })?;
        chosen[*g] = true;
    }
    if keep.is_empty() {
        return Ok(BTreeSet::new());
    }
    loop {
        let mut grew = false;
        for (id, &u) in &s.tool_uses {
            let results = s.tool_results.get(id).map(Vec::as_slice).unwrap_or(&[]);
            let members: Vec<usize> = results.iter().copied().chain([u]).collect();
            let segs: Vec<usize> = members
                .iter()
                .filter_map(|i| seg_of.get(i))
                .copied()
                .collect();
            if segs.iter().any(|&g| chosen[g]) {
                for g in segs {
                    if !chosen[g] {
                        chosen[g] = true;
                        grew = true;
                    }
                }
            }
        }
        if !grew {
            break;
        }
    }
    Ok(range
        .iter()
        .zip(chosen)
        .filter(|(_, c)| *c)
        .flat_map(|(g, _)| g.records.iter().copied())
        .collect())
}
