//! The built-in digest: the facts of the replaced records.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use crate::transcript::session::{is_prompt, Session};
use crate::transcript::turns::{message_text, shorten};

/// A deterministic digest of the removed records: prompts, files, commands, errors, answer.
pub fn digest(s: &mut Session<'_>, removed: &BTreeSet<usize>, title: &str) -> String {
    format!(
        "Summary of {} (replaced by cchist; {} records removed).\n{}",
        title,
        removed.len(),
        digest_body(s, removed)
    )
}

/// The facts of some records, as lists: prompts, files read and written, commands run,
/// errors, open todos (from the last todo list), and the final answer. Deterministic.
pub fn digest_body(s: &mut Session<'_>, removed: &BTreeSet<usize>) -> String {
    let mut prompts = Vec::new();
    let mut read = Vec::new();
    let mut written = Vec::new();
    let mut commands = Vec::new();
    let mut errors = Vec::new();
    let mut answer = String::new();
    let mut todos: Vec<String> = Vec::new();
    let mut tool_names: HashMap<String, String> = HashMap::new();
    // Each list keeps first occurrences in order; the set beside it makes the check O(1)
    // (a scan of the list made a digest of many distinct prompts quadratic).
    let mut seen: [HashSet<String>; 5] = Default::default();
    let mut push = |list: usize, v: &mut Vec<String>, x: String| {
        if !x.is_empty() && seen[list].insert(x.clone()) {
            v.push(x);
        }
    };
    for &i in removed {
        let Some(h) = s.header(i) else { continue };
        if h.is_sidechain || !matches!(h.ty.as_str(), "user" | "assistant") {
            continue;
        }
        let prompt = is_prompt(h);
        let ty = h.ty.clone();
        let Ok(v) = s.records[i].value() else {
            continue;
        };
        if prompt {
            push(0, &mut prompts, shorten(&message_text(v), 200));
            continue;
        }
        let blocks = v
            .pointer("/message/content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for b in &blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => {
                    let name = b["name"].as_str().unwrap_or("").to_string();
                    if let Some(id) = b["id"].as_str() {
                        tool_names.insert(id.to_string(), name.clone());
                    }
                    let input = &b["input"];
                    let path = input["file_path"]
                        .as_str()
                        .or_else(|| input["notebook_path"].as_str())
                        .or_else(|| input["path"].as_str())
                        .unwrap_or("")
                        .to_string();
                    match name.as_str() {
                        "Read" => push(1, &mut read, path),
                        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
                            push(2, &mut written, path)
                        }
                        "Bash" => push(
                            3,
                            &mut commands,
                            shorten(input["command"].as_str().unwrap_or(""), 200),
                        ),
                        "TodoWrite" => {
                            todos = input["todos"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter(|t| t["status"] != "completed")
                                .filter_map(|t| t["content"].as_str())
                                .map(|t| shorten(t, 200))
                                .collect();
                        }
                        _ => {}
                    }
                }
                Some("tool_result") if b["is_error"] == true => {
                    let name = b["tool_use_id"]
                        .as_str()
                        .and_then(|id| tool_names.get(id))
                        .cloned()
                        .unwrap_or_else(|| "tool".into());
                    let text = match &b["content"] {
                        Value::String(t) => t.clone(),
                        Value::Array(items) => items
                            .iter()
                            .filter_map(|x| x["text"].as_str())
                            .collect::<Vec<_>>()
                            .join("\n"),
                        _ => String::new(),
                    };
                    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                    push(4, &mut errors, format!("{name}: {}", shorten(first, 200)));
                }
                Some("text") if ty == "assistant" => {
                    if let Some(t) = b["text"].as_str().filter(|t| !t.trim().is_empty()) {
                        answer = t.to_string();
                    }
                }
                _ => {}
            }
        }
    }
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
    list(&mut out, "Prompts", &prompts, 50);
    list(&mut out, "Files read", &read, 50);
    list(&mut out, "Files written", &written, 50);
    list(&mut out, "Commands run", &commands, 50);
    list(&mut out, "Errors", &errors, 20);
    list(&mut out, "Open todos", &todos, 50);
    if !answer.is_empty() {
        let cut: String = answer.chars().take(1500).collect();
        out.push_str("\nFinal answer:\n");
        out.push_str(cut.trim_end());
        if cut.len() < answer.len() {
            out.push('…');
        }
        out.push('\n');
    }
    out.trim_end().to_string()
}
