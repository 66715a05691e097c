//! Another agent's tool calls onto Claude Code's own tools, with Claude's input schemas:
//! `Bash{command, description?}`, `Read{file_path}`, `Write{file_path, content}`,
//! `Edit{file_path, old_string, new_string}`. A call with no equivalent is [`Mapped::Unmapped`]:
//! the builder renders it as text (a `tool_use` of a tool the CLI does not offer would be one
//! the model is told it can call and cannot).

use serde_json::{json, Map, Value};

use super::Dialect;

/// The Claude Code calls one source call becomes.
#[derive(Debug, Clone, PartialEq)]
pub enum Mapped {
    /// One call or more (an `apply_patch` of several hunks), each `(name, input)`.
    Calls(Vec<(String, Value)>),
    /// No Claude Code tool means the same.
    Unmapped,
}

/// The first string among `keys` in `input`.
fn str_arg<'a>(input: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
}

/// `path` made absolute against `cwd` (Claude's file tools take absolute paths).
fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(c) if !path.starts_with('/') => {
            format!(
                "{}/{}",
                c.trim_end_matches('/'),
                path.trim_start_matches("./")
            )
        }
        _ => path.to_string(),
    }
}

/// A shell command from a string or an argv array; `bash -lc SCRIPT` is the script.
fn command_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => {
            let argv: Option<Vec<&str>> = a.iter().map(Value::as_str).collect();
            let argv = argv?;
            if argv.len() == 3
                && matches!(argv[0], "bash" | "sh" | "zsh" | "/bin/bash" | "/bin/sh")
                && matches!(argv[1], "-lc" | "-c")
            {
                return Some(argv[2].to_string());
            }
            Some(shlex::try_join(argv.iter().copied()).unwrap_or_else(|_| argv.join(" ")))
        }
        _ => None,
    }
}

fn bash(
    command: String,
    workdir: Option<&str>,
    cwd: Option<&str>,
    description: Option<&str>,
) -> Value {
    let command = match workdir {
        Some(w) if Some(w) != cwd && !w.is_empty() => format!(
            "cd {} && {command}",
            shlex::try_quote(w).map_or_else(|_| w.into(), |q| q.into_owned())
        ),
        _ => command,
    };
    let mut m = Map::new();
    m.insert("command".into(), Value::String(command));
    if let Some(d) = description.filter(|d| !d.is_empty()) {
        m.insert("description".into(), Value::String(d.to_string()));
    }
    Value::Object(m)
}

/// Map `name(input)` of `dialect`, in working directory `cwd`.
pub fn map(dialect: Dialect, name: &str, input: &Value, cwd: Option<&str>) -> Mapped {
    if dialect == Dialect::Native {
        // A built-in tool's name on inputs that tool does not take would read as a call the
        // model could never have made (and `validate` flags it): text, like any unmapped call.
        let fits = crate::findings::validate::TOOL_SCHEMAS
            .iter()
            .find(|(t, _)| *t == name)
            .is_none_or(|(_, need)| {
                need.iter()
                    .all(|k| input.get(*k).is_some_and(Value::is_string))
            });
        return if fits {
            Mapped::Calls(vec![(name.to_string(), input.clone())])
        } else {
            Mapped::Unmapped
        };
    }
    let one = |n: &str, v: Value| Mapped::Calls(vec![(n.to_string(), v)]);
    let path = str_arg(input, &["file_path", "absolute_path", "path", "filePath"]);
    match name {
        "shell" | "container.exec" | "local_shell" | "exec_command" | "shell_command"
        | "run_shell_command" | "bash" => {
            let Some(cmd) = ["command", "cmd"]
                .iter()
                .find_map(|k| input.get(*k).and_then(command_of))
            else {
                return Mapped::Unmapped;
            };
            let workdir = str_arg(
                input,
                &["workdir", "working_directory", "directory", "dir_path"],
            );
            one(
                "Bash",
                bash(cmd, workdir, cwd, str_arg(input, &["description"])),
            )
        }
        "read_file" | "read" => match path {
            Some(p) => one("Read", json!({"file_path": absolute(p, cwd)})),
            None => Mapped::Unmapped,
        },
        "write_file" | "write" => match (path, str_arg(input, &["content"])) {
            (Some(p), Some(c)) => one(
                "Write",
                json!({"file_path": absolute(p, cwd), "content": c}),
            ),
            _ => Mapped::Unmapped,
        },
        "replace" | "edit" => match edit_call(input, path, cwd) {
            Some(v) => one("Edit", v),
            None => Mapped::Unmapped,
        },
        // opencode's `multiedit {filePath, edits: [{oldString, newString, replaceAll?}]}`: one
        // Edit per edit, in order.
        "multiedit" if dialect == Dialect::Opencode => {
            let Some(edits) = input.get("edits").and_then(Value::as_array) else {
                return Mapped::Unmapped;
            };
            let calls: Option<Vec<(String, Value)>> = edits
                .iter()
                .map(|e| {
                    let p = str_arg(e, &["filePath", "file_path"]).or(path);
                    edit_call(e, p, cwd).map(|v| ("Edit".to_string(), v))
                })
                .collect();
            match calls {
                Some(c) if !c.is_empty() => Mapped::Calls(c),
                _ => Mapped::Unmapped,
            }
        }
        // opencode's `apply_patch {patchText}` (and its older `patch` tool): the envelope
        // Codex writes.
        n if n == "apply_patch" || (n == "patch" && dialect == Dialect::Opencode) => {
            let text = input
                .as_str()
                .or_else(|| str_arg(input, &["input", "patch", "raw", "patchText"]));
            match text.and_then(|t| patch_calls(t, cwd)) {
                Some(calls) => Mapped::Calls(calls),
                None => Mapped::Unmapped,
            }
        }
        _ => Mapped::Unmapped,
    }
}

/// `Edit{file_path, old_string, new_string, replace_all?}` from snake- or camel-case
/// arguments; `None` without a path or an `old_string` to anchor it.
fn edit_call(input: &Value, path: Option<&str>, cwd: Option<&str>) -> Option<Value> {
    let o = str_arg(input, &["old_string", "oldString"]).filter(|o| !o.is_empty())?;
    let n = str_arg(input, &["new_string", "newString"])?;
    let mut v = json!({"file_path": absolute(path?, cwd), "old_string": o, "new_string": n});
    if ["replace_all", "replaceAll"]
        .iter()
        .any(|k| input.get(*k).and_then(Value::as_bool) == Some(true))
    {
        v["replace_all"] = Value::Bool(true);
    }
    Some(v)
}

/// An `apply_patch` envelope (`*** Begin Patch` … `*** End Patch`) as one Write per added
/// file and one Edit per hunk of an updated file; `None` when it does not parse or holds what
/// no Edit/Write expresses (a delete, a move, a hunk without context to anchor it).
pub fn patch_calls(text: &str, cwd: Option<&str>) -> Option<Vec<(String, Value)>> {
    let mut lines = text.lines().map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next()?.trim() != "*** Begin Patch" {
        return None;
    }
    let mut calls = Vec::new();
    let mut ended = false;
    // The file being updated and its hunk: (old, new) lines.
    let mut update: Option<String> = None;
    let mut hunk: Option<(Vec<&str>, Vec<&str>)> = None;
    let mut add: Option<(String, Vec<&str>)> = None;
    fn flush_hunk(
        file: &Option<String>,
        hunk: &mut Option<(Vec<&str>, Vec<&str>)>,
        calls: &mut Vec<(String, Value)>,
    ) -> Option<()> {
        if let Some((old, new)) = hunk.take() {
            if old.is_empty() {
                return None;
            }
            calls.push((
                "Edit".into(),
                json!({"file_path": file.clone()?, "old_string": old.join("\n"), "new_string": new.join("\n")}),
            ));
        }
        Some(())
    }
    fn flush_add(add: &mut Option<(String, Vec<&str>)>, calls: &mut Vec<(String, Value)>) {
        if let Some((p, body)) = add.take() {
            let mut content = body.join("\n");
            content.push('\n');
            calls.push(("Write".into(), json!({"file_path": p, "content": content})));
        }
    }
    for l in lines.by_ref() {
        if l.trim() == "*** End Patch" {
            ended = true;
            break;
        }
        if let Some(p) = l.strip_prefix("*** Add File: ") {
            flush_hunk(&update, &mut hunk, &mut calls)?;
            flush_add(&mut add, &mut calls);
            update = None;
            add = Some((absolute(p.trim(), cwd), Vec::new()));
        } else if let Some(p) = l.strip_prefix("*** Update File: ") {
            flush_hunk(&update, &mut hunk, &mut calls)?;
            flush_add(&mut add, &mut calls);
            update = Some(absolute(p.trim(), cwd));
        } else if l.starts_with("*** Delete File: ") || l.starts_with("*** Move to: ") {
            return None;
        } else if l.trim() == "*** End of File" {
            continue;
        } else if let Some((_, body)) = add.as_mut() {
            body.push(l.strip_prefix('+')?);
        } else if update.is_some() {
            if l.starts_with("@@") {
                flush_hunk(&update, &mut hunk, &mut calls)?;
                hunk = Some((Vec::new(), Vec::new()));
                continue;
            }
            let (old, new) = hunk.get_or_insert_with(|| (Vec::new(), Vec::new()));
            if let Some(r) = l.strip_prefix('+') {
                new.push(r);
            } else if let Some(r) = l.strip_prefix('-') {
                old.push(r);
            } else if let Some(r) = l.strip_prefix(' ') {
                old.push(r);
                new.push(r);
            } else if l.is_empty() {
                old.push("");
                new.push("");
            } else {
                return None;
            }
        } else {
            return None;
        }
    }
    if !ended {
        return None;
    }
    flush_hunk(&update, &mut hunk, &mut calls)?;
    flush_add(&mut add, &mut calls);
    (!calls.is_empty()).then_some(calls)
}

/// The text an unmapped call becomes: its name and arguments, so the model reads what was
/// done.
pub fn render_call(source: &str, name: &str, input: &Value) -> String {
    let args = match input {
        Value::String(s) => s.clone(),
        v => serde_json::to_string_pretty(v).unwrap_or_default(),
    };
    format!("[{source} tool call `{name}`]\n{args}")
}

/// The text the answer to an unmapped call becomes.
pub fn render_result(name: &str, text: &str, is_error: bool) -> String {
    let what = if is_error { "error from" } else { "output of" };
    format!("[{what} `{name}`]\n{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_argv_becomes_bash_command() {
        let m = map(
            Dialect::Codex,
            "shell",
            &json!({"command": ["bash", "-lc", "ls -la"], "workdir": "/w"}),
            Some("/w"),
        );
        assert_eq!(
            m,
            Mapped::Calls(vec![("Bash".into(), json!({"command": "ls -la"}))])
        );
        let m = map(
            Dialect::Codex,
            "exec_command",
            &json!({"cmd": "cargo test", "workdir": "/w/sub"}),
            Some("/w"),
        );
        assert_eq!(
            m,
            Mapped::Calls(vec![(
                "Bash".into(),
                json!({"command": "cd /w/sub && cargo test"})
            )])
        );
    }

    #[test]
    fn patch_becomes_one_call_per_hunk() {
        let p = "*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Update File: src/a.rs\n@@ fn a\n-    1\n+    2\n@@\n x\n-y\n+z\n*** End Patch";
        let calls = patch_calls(p, Some("/w")).expect("parses");
        assert_eq!(calls.len(), 3);
        assert_eq!(
            calls[0],
            (
                "Write".into(),
                json!({"file_path": "/w/new.txt", "content": "hello\n"})
            )
        );
        assert_eq!(
            calls[2],
            (
                "Edit".into(),
                json!({"file_path": "/w/src/a.rs", "old_string": "x\ny", "new_string": "x\nz"})
            )
        );
        assert_eq!(
            patch_calls("*** Begin Patch\n*** Delete File: a\n*** End Patch", None),
            None
        );
        assert_eq!(patch_calls("not a patch", None), None);
        assert_eq!(
            patch_calls("*** Begin Patch\n*** Add File: a\n+x\n", None),
            None
        );
    }
}
