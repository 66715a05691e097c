//! Running as a Claude Code hook, and installing cchist into Claude Code's settings.
//!
//! Claude Code runs `cchist hook` with a JSON object on stdin (`session_id`,
//! `transcript_path`, `cwd`, `hook_event_name`, …). What cchist does per event:
//!
//! | event | action |
//! |---|---|
//! | `SessionEnd` | apply the pipeline (default: shipped `scrub`) in place to the transcript and its sub-agent files, atomically |
//! | `PreCompact` | print guidance for the compaction summary: files edited, commands run, open todos |
//! | `SessionStart` | with `[hook] session_start_digest = true`: print a digest of the project's previous session |
//! | `Stop` | turn-count policies from `[hook]` (`at_turns`, `every`): write a compressed fork, or only notify |
//! | anything else | nothing |
//!
//! A hook must never get in Claude Code's way: failures are logged to stderr and the process
//! exits 0 unless `--strict`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{Error, Origin, Result};

/// The hook input fields cchist reads (others are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct HookInput {
    /// The session id.
    #[serde(default)]
    pub session_id: String,
    /// The transcript file.
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    /// The working directory.
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// `SessionEnd`, `PreCompact`, `Stop`, `SessionStart`, …
    #[serde(default)]
    pub hook_event_name: String,
    /// `Stop`: true when Claude Code is already continuing because of a stop hook.
    #[serde(default)]
    pub stop_hook_active: bool,
}

impl HookInput {
    /// Parse the JSON Claude Code sends.
    pub fn parse(bytes: &[u8]) -> Result<HookInput> {
        serde_json::from_slice(bytes).map_err(|e| {
            Error::Other(format!(
                "hook input on stdin is not the JSON object Claude Code sends: {e}"
            ))
        })
    }

    /// The transcript path, required by the events that read it.
    pub fn transcript(&self) -> Result<&Path> {
        self.transcript_path
            .as_deref()
            .ok_or_else(|| Error::Other("hook input has no transcript_path".into()))
    }
}

// ---------------------------------------------------------------------------------------------
// settings.json

/// Where a hook is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `$CLAUDE_CONFIG_DIR/settings.json` (default `~/.claude/settings.json`).
    User,
    /// `.claude/settings.json` in the current project.
    Project,
}

/// The settings file for `scope`.
pub fn settings_path(scope: Scope) -> Result<PathBuf> {
    Ok(match scope {
        Scope::User => crate::claude::layout::config_root()?.join("settings.json"),
        Scope::Project => PathBuf::from(".claude").join("settings.json"),
    })
}

/// True for a hook entry cchist wrote: its command runs `<…/cchist> hook …`.
fn is_ours(entry: &Value) -> bool {
    let Some(cmd) = entry.get("command").and_then(Value::as_str) else {
        return false;
    };
    let mut words = cmd.split_whitespace();
    let exe = words.next().unwrap_or("").trim_matches('\'');
    Path::new(exe).file_name().is_some_and(|n| n == "cchist") && words.next() == Some("hook")
}

/// Merge hook entries running `command` for `events` into the settings JSON `doc`, replacing
/// an older cchist entry of the same event; returns true when something changed. Other
/// settings and other hooks are kept.
pub fn install_into(
    doc: &mut Value,
    events: &[String],
    command: &str,
    timeout_s: u64,
) -> Result<bool> {
    if !doc.is_object() {
        return Err(Error::Other(
            "settings.json does not hold a JSON object".into(),
        ));
    }
    let hooks = doc
        .as_object_mut()
        .expect("checked")
        .entry("hooks")
        .or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(Error::Other(
            "settings.json: `hooks` is not an object".into(),
        ));
    };
    let mut changed = false;
    for ev in events {
        let groups = hooks.entry(ev.clone()).or_insert_with(|| json!([]));
        let Some(groups) = groups.as_array_mut() else {
            return Err(Error::Other(format!(
                "settings.json: hooks.{ev} is not an array"
            )));
        };
        let wanted = json!({"type": "command", "command": command, "timeout": timeout_s});
        let ours: Vec<&Value> = groups
            .iter()
            .filter_map(|g| g.get("hooks").and_then(Value::as_array))
            .flatten()
            .filter(|h| is_ours(h))
            .collect();
        if ours.len() == 1 && *ours[0] == wanted {
            continue;
        }
        remove_ours(groups);
        groups.push(json!({ "hooks": [wanted] }));
        changed = true;
    }
    Ok(changed)
}

/// Remove cchist's entries from one event's groups (and groups left empty); true if any.
fn remove_ours(groups: &mut Vec<Value>) -> bool {
    let mut changed = false;
    for g in groups.iter_mut() {
        if let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) {
            let before = hs.len();
            hs.retain(|h| !is_ours(h));
            changed |= hs.len() != before;
        }
    }
    groups.retain(|g| {
        !g.get("hooks")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
    });
    changed
}

/// Remove every hook entry cchist wrote; events left without hooks are removed too.
pub fn uninstall_from(doc: &mut Value) -> bool {
    let Some(hooks) = doc.get_mut("hooks").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    for groups in hooks.values_mut() {
        if let Some(groups) = groups.as_array_mut() {
            changed |= remove_ours(groups);
        }
    }
    hooks.retain(|_, g| !g.as_array().is_some_and(Vec::is_empty));
    changed
}

/// Read settings.json (an empty object when missing).
pub fn read_settings(path: &Path) -> Result<Value> {
    match std::fs::read(path) {
        Ok(b) if b.iter().all(u8::is_ascii_whitespace) => Ok(json!({})),
        Ok(b) => serde_json::from_slice(&b).map_err(|e| {
            Error::Other(format!(
                "{}: not valid JSON ({e}); fix it by hand before cchist edits it",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(json!({})),
        Err(e) => Err(Error::io(&Origin::file(path), "read", e)),
    }
}

/// Write settings.json atomically, keeping a backup of the previous version.
pub fn write_settings(path: &Path, doc: &Value) -> Result<Option<PathBuf>> {
    use std::io::Write;
    let o = Origin::file(path);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(&Origin::file(dir), "create directory", e))?;
    }
    let mut backup = None;
    let mut mode = 0o644;
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::MetadataExt;
        mode = meta.mode();
        let mut name = path.as_os_str().to_owned();
        name.push(format!(
            ".cchist-bak.{}",
            crate::io::clock::file_stamp(std::time::SystemTime::now())
        ));
        let b = PathBuf::from(name);
        std::fs::copy(path, &b).map_err(|e| Error::io(&Origin::file(&b), "backup", e))?;
        backup = Some(b);
    }
    let mut text = serde_json::to_string_pretty(doc).expect("a Value serializes");
    text.push('\n');
    let mut tmp =
        crate::io::output::AtomicFile::create(path).map_err(|e| Error::io(&o, "create", e))?;
    tmp.write_all(text.as_bytes())
        .map_err(|e| Error::io(&o, "write", e))?;
    tmp.commit(Some(mode), None)
        .map_err(|e| Error::io(&o, "rename", e))?;
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_is_idempotent_and_keeps_other_settings() {
        let mut doc = json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other"}]}]}});
        let ev = vec!["SessionEnd".to_string(), "Stop".to_string()];
        assert!(install_into(&mut doc, &ev, "/bin/cchist hook", 10).unwrap());
        let once = doc.clone();
        assert!(!install_into(&mut doc, &ev, "/bin/cchist hook", 10).unwrap());
        assert_eq!(doc, once);
        assert_eq!(doc["model"], "opus");
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(doc["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 10);
        // a new pipeline replaces the old entry instead of adding a second one
        assert!(install_into(&mut doc, &ev, "/bin/cchist hook --pipeline x", 10).unwrap());
        assert_eq!(doc["hooks"]["SessionEnd"].as_array().unwrap().len(), 1);
        assert!(uninstall_from(&mut doc));
        assert_eq!(
            doc,
            json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other"}]}]}})
        );
    }
}
