//! cchist's entries in Claude Code's `settings.json`: install, uninstall, list.
//!
//! An entry is cchist's when its parsed argv (shell quoting undone) runs `hook` (or
//! `statusline`) with a program that is this binary — the same path, or one resolving to the
//! same file — or is named `cchist` ([`Programs`]), so a binary path with a space, or a link
//! named otherwise, is found again, and another tool's `othertool hook` is never touched. The file is written atomically through a link
//! (dotfiles setups keep `settings.json` as a symlink), with a backup of the previous version.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Origin, Result};
use crate::io::replace;

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

/// The command line for `argv`, quoted for the shell Claude Code runs it with.
pub fn command_line(argv: &[String]) -> Result<String> {
    shlex::try_join(argv.iter().map(String::as_str))
        .map_err(|e| Error::Other(format!("cannot quote the hook command {argv:?}: {e}")))
}

/// The programs that are this cchist: an entry of settings.json is cchist's only when its
/// program is one of them (the same path, or a path that resolves to the same file) or its
/// file name is `cchist`. `<binary> hook` and `<binary> statusline` are shapes another tool may
/// use too; its entries are never taken for cchist's (replaced, listed or removed).
#[derive(Debug, Clone, Default)]
pub struct Programs {
    /// Each path given, and what it resolves to.
    paths: Vec<PathBuf>,
}

impl Programs {
    /// The programs `exes` name (the binary an entry runs, this process's executable …).
    pub fn of(exes: impl IntoIterator<Item = PathBuf>) -> Programs {
        let mut ours = Programs::default();
        ours.add(exes);
        ours
    }

    /// Add `exes` (and what they resolve to).
    pub fn add(&mut self, exes: impl IntoIterator<Item = PathBuf>) {
        for p in exes {
            if let Ok(real) = std::fs::canonicalize(&p) {
                self.paths.push(real);
            }
            self.paths.push(p);
        }
        self.paths.sort();
        self.paths.dedup();
    }

    /// True when `program` (an entry's argv\[0\]) is cchist.
    pub fn owns(&self, program: &str) -> bool {
        let p = Path::new(program);
        if p.file_name().is_some_and(|n| n == "cchist") {
            return true;
        }
        if self.paths.iter().any(|q| q == p) {
            return true;
        }
        // A bare name runs what the shell finds on PATH; a path, what it resolves to.
        let found = if p.components().count() == 1 && !p.is_absolute() {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(p))
                    .find(|c| c.is_file())
            })
        } else if p.is_absolute() {
            Some(p.to_path_buf())
        } else {
            None
        };
        found
            .and_then(|f| std::fs::canonicalize(f).ok())
            .is_some_and(|real| self.paths.contains(&real))
    }

    /// True when `entry` (a settings object with a `command`) runs one of these programs with
    /// `word` as its first argument and, when `exact`, no other.
    fn runs(&self, entry: &Value, word: &str, exact: bool) -> Option<Vec<String>> {
        let cmd = entry.get("command").and_then(Value::as_str)?;
        let argv = shlex::split(cmd)?;
        (argv.len() >= 2 && argv[1] == word && (!exact || argv.len() == 2) && self.owns(&argv[0]))
            .then_some(argv)
    }
}

/// The argv of a hook entry's command, when it is cchist's: `<program> hook …` where the
/// program is cchist by [`Programs::owns`] (`hook install` writes `<binary> hook` or
/// `<binary> hook --pipeline <spec>`; a link or copy named otherwise, such as `cc`, is found
/// again by the file it resolves to). Another tool's `x hook` is not.
pub fn our_argv(entry: &Value, ours: &Programs) -> Option<Vec<String>> {
    ours.runs(entry, "hook", false)
}

/// True for a `statusLine` value that is cchist's: `<program> statusline`, the program cchist
/// by [`Programs::owns`].
pub fn is_our_statusline(v: &Value, ours: &Programs) -> bool {
    ours.runs(v, "statusline", true).is_some()
}

/// Merge hook entries running `argv` for `events` into the settings JSON `doc`, replacing an
/// older cchist entry of the same event (one whose program `ours` owns; `argv[0]` is added to
/// them); returns true when something changed. Other settings and other tools' hooks are kept.
pub fn install_into(
    doc: &mut Value,
    events: &[String],
    argv: &[String],
    timeout_s: u64,
    ours: &Programs,
) -> Result<bool> {
    install_matched(doc, events, argv, timeout_s, None, ours)
}

/// [`install_into`] with a `matcher` on the entries' group (`"auto"` for PreCompact, `"startup"`
/// for SessionStart …: Claude Code then runs the hook only when the event's trigger or source
/// matches).
pub fn install_matched(
    doc: &mut Value,
    events: &[String],
    argv: &[String],
    timeout_s: u64,
    matcher: Option<&str>,
    ours: &Programs,
) -> Result<bool> {
    let command = command_line(argv)?;
    let mut programs = ours.clone();
    programs.add(argv.first().map(PathBuf::from));
    let programs = &programs;
    let Some(obj) = doc.as_object_mut() else {
        return Err(Error::Other(
            "settings.json does not hold a JSON object".into(),
        ));
    };
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
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
        let ours: Vec<(&Value, Option<&str>)> = groups
            .iter()
            .flat_map(|g| {
                let m = g
                    .get("matcher")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty());
                g.get("hooks")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(move |h| (h, m))
            })
            .filter(|(h, _)| our_argv(h, programs).is_some())
            .collect();
        let same = |(h, m): (&Value, Option<&str>)| {
            our_argv(h, programs).as_deref() == Some(argv)
                && h.get("timeout").and_then(Value::as_u64) == Some(timeout_s)
                && m == matcher
        };
        if ours.len() == 1 && same(ours[0]) {
            continue;
        }
        remove_ours(groups, programs);
        let mut group =
            json!({ "hooks": [{"type": "command", "command": command, "timeout": timeout_s}] });
        if let Some(m) = matcher {
            group["matcher"] = json!(m);
        }
        groups.push(group);
        changed = true;
    }
    Ok(changed)
}

/// Remove cchist's entries from one event's groups (and groups left empty); true if any.
fn remove_ours(groups: &mut Vec<Value>, ours: &Programs) -> bool {
    let mut changed = false;
    for g in groups.iter_mut() {
        if let Some(hs) = g.get_mut("hooks").and_then(Value::as_array_mut) {
            let before = hs.len();
            hs.retain(|h| our_argv(h, ours).is_none());
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

/// Remove cchist's hook entries (those whose program `ours` owns), of `events` only when
/// given; events left without hooks are removed too. True when something changed.
pub fn uninstall_from(doc: &mut Value, events: Option<&[String]>, ours: &Programs) -> bool {
    let Some(hooks) = doc.get_mut("hooks").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    for (ev, groups) in hooks.iter_mut() {
        if events.is_some_and(|only| !only.contains(ev)) {
            continue;
        }
        if let Some(groups) = groups.as_array_mut() {
            changed |= remove_ours(groups, ours);
        }
    }
    hooks.retain(|_, g| !g.as_array().is_some_and(Vec::is_empty));
    // A `hooks` table that only ever held cchist's entries goes with them: uninstall leaves
    // the file as it was before install, not `{"hooks": {}}`.
    if changed && hooks.is_empty() {
        if let Some(o) = doc.as_object_mut() {
            o.remove("hooks");
        }
    }
    changed
}

/// cchist's entries in `doc` (those whose program `ours` owns): `(event, command, timeout,
/// matcher)`.
pub fn installed(
    doc: &Value,
    ours: &Programs,
) -> Vec<(String, String, Option<u64>, Option<String>)> {
    let mut out = Vec::new();
    let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
        return out;
    };
    for (ev, groups) in hooks {
        for g in groups.as_array().into_iter().flatten() {
            let matcher = g
                .get("matcher")
                .and_then(Value::as_str)
                .filter(|m| !m.is_empty())
                .map(str::to_string);
            for h in g
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|h| our_argv(h, ours).is_some())
            {
                let cmd = h.get("command").and_then(Value::as_str).unwrap_or_default();
                out.push((
                    ev.clone(),
                    cmd.to_string(),
                    h.get("timeout").and_then(Value::as_u64),
                    matcher.clone(),
                ));
            }
        }
    }
    out
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

/// The file a write to `path` must replace: the target of a link (so the link stays a link),
/// else `path` itself.
fn write_target(path: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            Error::io(
                &Origin::file(path),
                "resolve the link (its target must exist)",
                e,
            )
        }),
        _ => Ok(path.to_path_buf()),
    }
}

/// Write settings.json atomically (through a link, to its target), keeping a backup of the
/// previous version; returns the backup's path.
pub fn write_settings(path: &Path, doc: &Value) -> Result<Option<PathBuf>> {
    write_settings_with(path, doc, true)
}

/// [`write_settings`], keeping a backup only when `backup` (a project's settings live in its
/// repository, where version control keeps the previous version and a backup file would be
/// litter in the working tree).
pub fn write_settings_with(path: &Path, doc: &Value, backup: bool) -> Result<Option<PathBuf>> {
    use std::io::Write;
    let keep = backup;
    let path = &write_target(path)?;
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
    }
    let mut text = serde_json::to_string_pretty(doc).expect("a Value serializes");
    text.push('\n');
    if let (Ok(_), true) = (std::fs::metadata(path), keep) {
        // The backup is staged from the bytes read and renamed into place with the new
        // version, never copied by name (a half-written copy would be a broken settings file).
        let was = crate::io::input::open(path)?;
        let suffix = crate::io::backup::fresh_suffix(path);
        let mut tmp = replace::temp(path).map_err(|e| Error::io(&o, "create", e))?;
        tmp.write_all(text.as_bytes())
            .map_err(|e| Error::io(&o, "write", e))?;
        let how = replace::Replace {
            backup: Some(&suffix),
            record: false,
            mode,
            mtime: None,
            owner: replace::Owner::Try,
            appended: replace::Appended::Ignore,
        };
        backup = replace::commit(path, &was, tmp, how)?.backup;
    } else {
        replace::write_file(path, text.as_bytes(), &replace::Attrs::mode(mode))?;
    }
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No program but those named `cchist` (and, installing, the one written).
    fn none() -> Programs {
        Programs::default()
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn install_is_idempotent_and_keeps_other_settings() {
        let mut doc = json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other"}]}]}});
        let ev = vec!["SessionEnd".to_string(), "Stop".to_string()];
        let cmd = argv(&["/bin/cchist", "hook"]);
        assert!(install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap());
        let once = doc.clone();
        assert!(!install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap());
        assert_eq!(doc, once);
        assert_eq!(doc["model"], "opus");
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(doc["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 10);
        // a new pipeline replaces the old entry instead of adding a second one
        let cmd2 = argv(&["/bin/cchist", "hook", "--pipeline", "builtin:share"]);
        assert!(install_into(&mut doc, &ev, &cmd2, 10, &none()).unwrap());
        assert_eq!(doc["hooks"]["SessionEnd"].as_array().unwrap().len(), 1);
        assert!(uninstall_from(&mut doc, None, &none()));
        assert_eq!(
            doc,
            json!({"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other"}]}]}})
        );
    }

    #[test]
    fn a_binary_path_with_a_space_is_found_again() {
        let mut doc = json!({});
        let ev = vec!["SessionEnd".to_string()];
        let cmd = argv(&["/opt/my tools/cchist", "hook"]);
        assert!(install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap());
        let line = doc["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(shlex::split(&line).unwrap(), cmd);
        assert!(
            !install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap(),
            "no duplicate"
        );
        assert_eq!(installed(&doc, &none()).len(), 1);
        assert!(uninstall_from(&mut doc, None, &none()));
        // The `hooks` table cchist added goes with its entries.
        assert_eq!(doc, json!({}));
    }

    #[test]
    fn a_binary_named_otherwise_is_recognised_by_its_path_and_another_tools_never() {
        // `x hook` of any shape, `--pipeline` included, is another tool's: kept.
        let other = json!({"type": "command", "command": "/usr/bin/x hook --verbose"});
        let other2 = json!({"type": "command", "command": "/usr/local/bin/othertool hook"});
        let other3 = json!({"type": "command", "command": "othertool hook --pipeline p"});
        let theirs = json!({"hooks": {"SessionEnd": [{"hooks": [other, other2, other3]}]}});
        let mut doc = theirs.clone();
        let ev = vec!["SessionEnd".to_string()];
        let cmd = argv(&["/tmp/x/cc", "hook"]);
        let cc = Programs::of([PathBuf::from("/tmp/x/cc")]);
        assert!(install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap());
        assert!(
            !install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap(),
            "no duplicate"
        );
        let cmd2 = argv(&["/tmp/x/cc", "hook", "--pipeline", "builtin:share"]);
        assert!(install_into(&mut doc, &ev, &cmd2, 10, &none()).unwrap());
        let listed: Vec<String> = installed(&doc, &cc).into_iter().map(|e| e.1).collect();
        assert_eq!(
            listed,
            vec!["/tmp/x/cc hook --pipeline builtin:share".to_string()]
        );
        assert!(installed(&doc, &none()).is_empty(), "not this binary's");
        assert!(!uninstall_from(&mut doc.clone(), None, &none()));
        assert!(uninstall_from(&mut doc, None, &cc));
        assert_eq!(doc, theirs);
    }

    #[test]
    fn a_link_to_this_binary_is_ours_and_a_status_line_must_be_exactly_ours() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("real-bin");
        std::fs::write(&real, "").unwrap();
        let link = d.path().join("cc");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let ours = Programs::of([real.clone()]);
        assert!(ours.owns(&link.to_string_lossy()));
        assert!(ours.owns("/anywhere/cchist"));
        assert!(!ours.owns("/usr/bin/othertool"));
        assert!(!ours.owns("othertool-that-is-on-no-path"));
        let line = |c: &str| json!({"type": "command", "command": c});
        assert!(is_our_statusline(
            &line(&format!("{} statusline", link.display())),
            &ours
        ));
        assert!(!is_our_statusline(
            &line("/usr/bin/othertool statusline"),
            &ours
        ));
        assert!(!is_our_statusline(
            &line(&format!("{} statusline --x", real.display())),
            &ours
        ));
    }

    #[test]
    fn uninstall_of_one_event_keeps_the_others() {
        let mut doc = json!({});
        let ev = vec!["SessionEnd".to_string(), "PreCompact".to_string()];
        install_into(&mut doc, &ev, &argv(&["/b/cchist", "hook"]), 10, &none()).unwrap();
        assert!(uninstall_from(
            &mut doc,
            Some(&["PreCompact".to_string()]),
            &none()
        ));
        let left: Vec<String> = installed(&doc, &none()).into_iter().map(|e| e.0).collect();
        assert_eq!(left, vec!["SessionEnd".to_string()]);
    }

    #[test]
    fn a_matcher_goes_on_the_group_and_a_changed_one_replaces_the_entry() {
        let mut doc = json!({});
        let ev = vec!["PreCompact".to_string()];
        let cmd = argv(&["/b/cchist", "hook"]);
        assert!(install_matched(&mut doc, &ev, &cmd, 10, Some("auto"), &none()).unwrap());
        assert_eq!(doc["hooks"]["PreCompact"][0]["matcher"], "auto");
        assert!(!install_matched(&mut doc, &ev, &cmd, 10, Some("auto"), &none()).unwrap());
        assert!(install_matched(&mut doc, &ev, &cmd, 10, Some("manual"), &none()).unwrap());
        assert_eq!(doc["hooks"]["PreCompact"].as_array().unwrap().len(), 1);
        assert_eq!(installed(&doc, &none())[0].3.as_deref(), Some("manual"));
        assert!(
            install_into(&mut doc, &ev, &cmd, 10, &none()).unwrap(),
            "no matcher: changed"
        );
        assert_eq!(installed(&doc, &none())[0].3, None);
    }

    #[test]
    fn writes_through_a_symlinked_settings_file() {
        let d = tempfile::tempdir().unwrap();
        let real = d.path().join("dotfiles-settings.json");
        std::fs::write(&real, "{\"model\":\"opus\"}").unwrap();
        let link = d.path().join("settings.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let mut doc = read_settings(&link).unwrap();
        install_into(
            &mut doc,
            &["Stop".into()],
            &argv(&["/b/cchist", "hook"]),
            5,
            &none(),
        )
        .unwrap();
        write_settings(&link, &doc).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        let v = read_settings(&real).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(installed(&v, &none()).len(), 1);
    }
}
