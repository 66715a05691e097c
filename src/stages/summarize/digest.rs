//! The built-in digest: the facts of the replaced records.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use crate::stages::redact::{cut_shown as cut, shown_text};
use crate::transcript::record::Kind;
use crate::transcript::session::{is_prompt, Session};
use crate::transcript::turns::message_text;

/// A deterministic digest of the removed records: prompts, files, commands, errors, answer.
pub fn digest(s: &mut Session<'_>, removed: &BTreeSet<usize>, title: &str) -> String {
    format!(
        "Summary of {} (replaced by cchist; {} records removed).\n{}",
        title,
        removed.len(),
        digest_body(s, removed)
    )
}

/// Most items listed per section; the rest is counted (`… and N more`).
const MAX_ITEMS: usize = 50;
/// Most errors listed.
const MAX_ERRORS: usize = 20;
/// Most characters of one item.
const ITEM_CHARS: usize = 200;
/// Most characters of the final answer.
const ANSWER_CHARS: usize = 1500;

/// `text` as a digest item: whitespace runs made one space, cut to `max` characters (`…`
/// marks a cut), after the default rules redacted the whole text. Redaction comes first
/// because a cut secret no longer matches: a password cut before its `@`, a token cut after
/// its prefix would pass every later redact stage and reach the summary (issue #25).
fn shorten(text: &str, max: usize) -> String {
    let shown = shown_text(text);
    let one: String = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&one, max)
}

/// What happened to a file, as the calls in the range left it.
#[derive(Default)]
struct FileState {
    reads: usize,
    writes: usize,
    /// The last call on it: tool name, and the first line of its error when it failed
    /// (`None` while its result is not seen).
    last: Option<(String, Option<Result<(), String>>)>,
}

/// A command run (deduplicated by its text): how often, and its last outcome.
struct CommandState {
    text: String,
    runs: usize,
    /// `None`: no result seen; `Some(Ok(()))`: exit 0; `Some(Err(status))`.
    last: Option<Result<(), String>>,
}

/// An error a tool call met, and whether a later call on the same target succeeded.
struct ErrorState {
    line: String,
    /// Tool name and target (file path or command) it concerns.
    key: (String, String),
    resolved: bool,
}

/// A tool call waiting for its result.
struct Pending {
    name: String,
    target: String,
    file: Option<String>,
    command: Option<usize>,
}

/// The first non-blank line of a tool result's text.
fn result_text(content: &Value) -> String {
    match content {
        Value::String(t) => t.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|x| x["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The exit status a failed Bash result reports (`Exit code 2` is how Claude Code writes it).
fn exit_status(text: &str) -> String {
    text.lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Exit code ")
                .and_then(|n| n.trim().parse::<i64>().ok())
        })
        .map_or_else(|| "failed".to_string(), |n| format!("exit {n}"))
}

/// The facts of some records, as lists: prompts; files read, and files written with their
/// last known state; commands run with their exit status; errors met and whether a later call
/// on the same file or command succeeded; the plan (the last todo list, every item with its
/// status); and the final answer. Deterministic, one pass, each list bounded.
pub fn digest_body(s: &mut Session<'_>, removed: &BTreeSet<usize>) -> String {
    let mut prompts = Vec::new();
    let mut seen_prompts: HashSet<String> = HashSet::new();
    let mut files: Vec<String> = Vec::new();
    let mut file_state: HashMap<String, FileState> = HashMap::new();
    let mut commands: Vec<CommandState> = Vec::new();
    let mut command_at: HashMap<String, usize> = HashMap::new();
    let mut errors: Vec<ErrorState> = Vec::new();
    // Unresolved errors by (tool, target): their indexes in `errors`.
    let mut open_errors: HashMap<(String, String), Vec<usize>> = HashMap::new();
    let mut pending: HashMap<String, Pending> = HashMap::new();
    let mut answer = String::new();
    let mut todos: Option<Vec<String>> = None;
    for &i in removed {
        let Some(h) = s.header(i) else { continue };
        if h.is_sidechain || !h.kind.is_message() {
            continue;
        }
        let prompt = is_prompt(h);
        let ty = h.kind.clone();
        let Ok(v) = s.records[i].read_value() else {
            continue;
        };
        let v = &*v;
        if prompt {
            let p = shorten(&message_text(v), ITEM_CHARS);
            if !p.is_empty() && seen_prompts.insert(p.clone()) {
                prompts.push(p);
            }
            continue;
        }
        let Some(blocks) = v.pointer("/message/content").and_then(Value::as_array) else {
            continue;
        };
        for b in blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let name = b["name"].as_str().unwrap_or("").to_string();
                    let input = &b["input"];
                    let path = input["file_path"]
                        .as_str()
                        .or_else(|| input["notebook_path"].as_str())
                        .or_else(|| input["path"].as_str())
                        .unwrap_or("")
                        .to_string();
                    let mut p = Pending {
                        name: name.clone(),
                        target: path.clone(),
                        file: None,
                        command: None,
                    };
                    match name.as_str() {
                        "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit"
                            if !path.is_empty() =>
                        {
                            let st = file_state.entry(path.clone()).or_insert_with(|| {
                                files.push(path.clone());
                                FileState::default()
                            });
                            if name == "Read" {
                                st.reads += 1;
                            } else {
                                st.writes += 1;
                            }
                            st.last = Some((name.clone(), None));
                            p.file = Some(path);
                        }
                        "Bash" => {
                            let c = shorten(input["command"].as_str().unwrap_or(""), ITEM_CHARS);
                            if !c.is_empty() {
                                let at = *command_at.entry(c.clone()).or_insert_with(|| {
                                    commands.push(CommandState {
                                        text: c.clone(),
                                        runs: 0,
                                        last: None,
                                    });
                                    commands.len() - 1
                                });
                                commands[at].runs += 1;
                                commands[at].last = None;
                                p.target = c;
                                p.command = Some(at);
                            }
                        }
                        "TodoWrite" => {
                            todos = Some(
                                input["todos"]
                                    .as_array()
                                    .into_iter()
                                    .flatten()
                                    .filter_map(|t| {
                                        let mark = match t["status"].as_str() {
                                            Some("completed") => "[x]",
                                            Some("in_progress") => "[~]",
                                            _ => "[ ]",
                                        };
                                        t["content"]
                                            .as_str()
                                            .map(|c| format!("{mark} {}", shorten(c, ITEM_CHARS)))
                                    })
                                    .collect(),
                            );
                        }
                        _ => {}
                    }
                    if let Some(id) = b["id"].as_str() {
                        pending.insert(id.to_string(), p);
                    }
                }
                Some("tool_result") => {
                    let Some(call) = b["tool_use_id"].as_str().and_then(|id| pending.remove(id))
                    else {
                        continue;
                    };
                    let failed = b["is_error"] == true;
                    let text = if failed {
                        result_text(&b["content"])
                    } else {
                        String::new()
                    };
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    let outcome = if failed {
                        Err(if call.command.is_some() {
                            exit_status(&text)
                        } else {
                            shorten(first, ITEM_CHARS)
                        })
                    } else {
                        Ok(())
                    };
                    if let Some(f) = &call.file {
                        if let Some(st) = file_state.get_mut(f) {
                            if let Some((n, o)) = st.last.as_mut() {
                                if *n == call.name {
                                    *o = Some(outcome.clone());
                                }
                            }
                        }
                    }
                    if let Some(c) = call.command {
                        commands[c].last = Some(outcome.clone());
                    }
                    let key = (call.name.clone(), call.target.clone());
                    if failed {
                        let what = if call.target.is_empty() {
                            call.name.clone()
                        } else {
                            format!("{} {}", call.name, shorten(&call.target, 80))
                        };
                        let line = match first {
                            "" => what,
                            f if call.command.is_some() && f.trim().starts_with("Exit code") => {
                                let next = text
                                    .lines()
                                    .skip_while(|l| !l.trim().starts_with("Exit code"))
                                    .skip(1)
                                    .find(|l| !l.trim().is_empty())
                                    .unwrap_or("");
                                if next.is_empty() {
                                    format!("{what}: {}", f.trim())
                                } else {
                                    format!("{what}: {}: {}", f.trim(), shorten(next, ITEM_CHARS))
                                }
                            }
                            f => format!("{what}: {}", shorten(f, ITEM_CHARS)),
                        };
                        open_errors
                            .entry(key.clone())
                            .or_default()
                            .push(errors.len());
                        errors.push(ErrorState {
                            line,
                            key,
                            resolved: false,
                        });
                    } else if let Some(list) = open_errors.remove(&key) {
                        for e in list {
                            errors[e].resolved = true;
                        }
                    }
                }
                Some("text") if ty == Kind::Assistant => {
                    if let Some(t) = b["text"].as_str().filter(|t| !t.trim().is_empty()) {
                        answer = t.to_string();
                    }
                }
                _ => {}
            }
        }
    }
    // Errors on a file are resolved by any later successful write of it, whatever the tool.
    for e in errors.iter_mut().filter(|e| !e.resolved) {
        if let Some(st) = file_state.get(&e.key.1) {
            if let Some((n, Some(Ok(())))) = &st.last {
                e.resolved = *n != "Read" || e.key.0 == "Read";
            }
        }
    }
    let outcome = |o: &Option<Result<(), String>>| match o {
        None => "no result".to_string(),
        Some(Ok(())) => "ok".to_string(),
        Some(Err(e)) => format!("failed: {e}"),
    };
    let read: Vec<String> = files
        .iter()
        .filter(|f| file_state[*f].writes == 0)
        .map(|f| {
            let st = &file_state[f];
            let mut line = f.clone();
            if st.reads > 1 {
                line += &format!(" (read {}×)", st.reads);
            }
            if let Some((_, Some(Err(e)))) = &st.last {
                line += &format!(" — failed: {e}");
            }
            shown_text(&line).into_owned()
        })
        .collect();
    let written: Vec<String> = files
        .iter()
        .filter(|f| file_state[*f].writes > 0)
        .map(|f| {
            let st = &file_state[f];
            let (tool, o) = st.last.as_ref().expect("a call was seen");
            let times = if st.writes > 1 {
                format!("{} writes, ", st.writes)
            } else {
                String::new()
            };
            shown_text(&format!("{f} ({times}last: {tool} {})", outcome(o))).into_owned()
        })
        .collect();
    let commands: Vec<String> = commands
        .iter()
        .map(|c| {
            let runs = if c.runs > 1 {
                format!(" ({}×)", c.runs)
            } else {
                String::new()
            };
            let status = match &c.last {
                None => "no result".to_string(),
                Some(Ok(())) => "ok".to_string(),
                Some(Err(e)) => e.clone(),
            };
            format!("{}{runs} → {status}", c.text)
        })
        .collect();
    let errors: Vec<String> = errors
        .iter()
        .map(|e| {
            format!(
                "{} — {}",
                e.line,
                if e.resolved {
                    "resolved later"
                } else {
                    "not resolved in this range"
                }
            )
        })
        .collect();
    let mut out = String::new();
    let list = |out: &mut String, title: &str, items: &[String], max: usize| {
        if items.is_empty() {
            return;
        }
        out.push_str(&format!("\n{title}:\n"));
        for it in items.iter().take(max) {
            out.push_str(&format!("- {it}\n"));
        }
        if items.len() > max {
            out.push_str(&format!("- … and {} more\n", items.len() - max));
        }
    };
    list(&mut out, "Prompts", &prompts, MAX_ITEMS);
    list(&mut out, "Files read", &read, MAX_ITEMS);
    list(&mut out, "Files written", &written, MAX_ITEMS);
    list(&mut out, "Commands run", &commands, MAX_ITEMS);
    list(&mut out, "Errors", &errors, MAX_ERRORS);
    if let Some(t) = &todos {
        list(&mut out, "Plan (last todo list)", t, MAX_ITEMS);
    }
    if !answer.is_empty() {
        let answer = shown_text(answer.trim_end());
        out.push_str("\nFinal answer:\n");
        out.push_str(&cut(&answer, ANSWER_CHARS));
        out.push('\n');
    }
    out.trim_end().to_string()
}
