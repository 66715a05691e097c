//! `cchist hook install|uninstall|status`.

use super::print::{say, tell};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cchist::claude::hook_log;
use cchist::claude::settings::{self, Scope};
use cchist::engine::config;
use cchist::error::ExitStatus;
use clap::{Args, ValueEnum};

/// `hook install`.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Events to hook, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "SessionEnd,PreCompact")]
    pub event: Vec<String>,
    /// user: $CLAUDE_CONFIG_DIR/settings.json (default ~/.claude); project: ./.claude/settings.json.
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    pub scope: ScopeArg,
    /// Pipeline the installed hook runs: a shipped name (written as `builtin:NAME`) or a file
    /// (written as its absolute path).
    #[arg(short, long, value_name = "FILE|NAME")]
    pub pipeline: Option<String>,
    /// Run only on these triggers (`manual`, `auto` for PreCompact and PostCompact) or sources
    /// (`startup`, `resume`, `clear`, `compact` for SessionStart); several joined by `|`.
    #[arg(long, value_name = "MATCHER")]
    pub matcher: Option<String>,
    /// Timeout Claude Code gives the hook, in seconds.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
    /// The cchist binary the hook runs (default: this one, by the path it was found on).
    #[arg(long, value_name = "PATH")]
    pub exe: Option<PathBuf>,
}

/// `hook uninstall`.
#[derive(Args, Debug)]
pub struct UninstallArgs {
    /// Remove only these events' entries (comma-separated; default: every cchist entry).
    #[arg(long, value_delimiter = ',')]
    pub event: Option<Vec<String>>,
    /// Which settings file.
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    pub scope: ScopeArg,
}

/// `hook status`.
#[derive(Args, Debug)]
pub struct StatusArgs {
    /// How many recent runs to show.
    #[arg(long, default_value_t = 10)]
    pub last: usize,
    /// Report format: `json` prints the settings files, their cchist hooks and the last runs.
    #[command(flatten)]
    pub format: super::args::FormatArgs,
}

/// `--scope`.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum ScopeArg {
    /// The user's settings.
    User,
    /// The project's settings.
    Project,
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Scope {
        match s {
            ScopeArg::User => Scope::User,
            ScopeArg::Project => Scope::Project,
        }
    }
}

const EVENTS: &[&str] = &[
    "SessionEnd",
    "PreCompact",
    "PostCompact",
    "SessionStart",
    "Stop",
];

/// The values Claude Code 2.1.328 matches an event's matcher against (its `trigger` or
/// `source`); events not listed take no matcher here.
fn matcher_values(event: &str) -> Option<&'static [&'static str]> {
    match event {
        "PreCompact" | "PostCompact" => Some(&["manual", "auto"]),
        "SessionStart" => Some(&["startup", "resume", "clear", "compact"]),
        _ => None,
    }
}

fn check_matcher(events: &[String], matcher: &str) -> anyhow::Result<()> {
    for ev in events {
        let Some(values) = matcher_values(ev) else {
            bail!("--matcher: {ev} takes no matcher (PreCompact, PostCompact and SessionStart do)");
        };
        for m in matcher.split('|') {
            if !values.contains(&m) {
                bail!(
                    "--matcher {matcher}: `{m}` is not a {ev} {} ({})",
                    if ev == "SessionStart" {
                        "source"
                    } else {
                        "trigger"
                    },
                    values.join(", ")
                );
            }
        }
    }
    Ok(())
}

fn check_events(events: &[String]) -> anyhow::Result<()> {
    for ev in events {
        if !EVENTS.contains(&ev.as_str()) {
            bail!("unknown event `{ev}`; cchist handles {}", EVENTS.join(", "));
        }
    }
    Ok(())
}

/// The binary path to write: `--exe`, else the `PATH` entry this process was started by when
/// it is the same file (a stable link such as `~/.cargo/bin/cchist` survives upgrades), else
/// the resolved executable.
pub(crate) fn stable_exe(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        let p = std::path::absolute(p)?;
        if !p.is_file() {
            bail!("--exe {}: no such file", p.display());
        }
        return Ok(p);
    }
    let exe = std::env::current_exe().context("finding the cchist executable")?;
    let real = std::fs::canonicalize(&exe).unwrap_or_else(|_| exe.clone());
    let argv0 = std::env::args_os().next().map(PathBuf::from);
    let candidate = argv0.and_then(|a| {
        if a.components().count() > 1 {
            std::path::absolute(&a).ok()
        } else {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(&a))
                    .find(|p| p.is_file())
            })
        }
    });
    Ok(candidate
        .filter(|c| c.is_absolute() && std::fs::canonicalize(c).is_ok_and(|r| r == real))
        .unwrap_or(exe))
}

/// The programs that are this cchist (whose settings entries are cchist's): `extra` (the
/// binary an install writes), this process's executable, and the path it was started by.
pub(crate) fn this_binary(extra: Option<&Path>) -> settings::Programs {
    let mut exes: Vec<PathBuf> = extra.map(Path::to_path_buf).into_iter().collect();
    exes.extend(std::env::current_exe().ok());
    exes.extend(stable_exe(None).ok());
    settings::Programs::of(exes)
}

/// True for a path inside a build folder (`…/target/debug/…`, `…/target/release/…`): gone
/// after `cargo clean`, changed by every build.
fn in_build_folder(p: &Path) -> bool {
    let parts: Vec<_> = p.components().map(|c| c.as_os_str()).collect();
    parts.windows(2).any(|w| {
        w[0] == "target"
            && w[1]
                .to_str()
                .is_some_and(|s| s == "debug" || s == "release")
    })
}

pub fn install(a: InstallArgs) -> anyhow::Result<ExitStatus> {
    check_events(&a.event)?;
    if let Some(m) = &a.matcher {
        check_matcher(&a.event, m)?;
    }
    let path = settings::settings_path(a.scope.into())?;
    let exe = stable_exe(a.exe.as_deref())?;
    if in_build_folder(&exe) {
        say!(
            "warning: {} is inside a build folder; the hook breaks after `cargo clean` or a move. Install cchist (`cargo install --path .`) and run its `hook install`, or pass --exe PATH",
            exe.display()
        );
    }
    let mut argv = vec![exe.to_string_lossy().into_owned(), "hook".to_string()];
    if let Some(p) = &a.pipeline {
        let spec = match config::builtin_name(p) {
            Some(n) => format!("{}{n}", config::BUILTIN_PREFIX),
            None => {
                config::load_spec(p)?;
                std::path::absolute(p)?.to_string_lossy().into_owned()
            }
        };
        argv.extend(["--pipeline".to_string(), spec]);
    }
    let mut doc = settings::read_settings(&path)?;
    let ours = this_binary(Some(&exe));
    if !settings::install_matched(
        &mut doc,
        &a.event,
        &argv,
        a.timeout,
        a.matcher.as_deref(),
        &ours,
    )? {
        say!("{}: already installed", path.display());
        return Ok(ExitStatus::Ok);
    }
    let backup = settings::write_settings_with(&path, &doc, keeps_backup(a.scope))?;
    say!(
        "{}: added `{}` for {}{}{}",
        path.display(),
        settings::command_line(&argv)?,
        a.event.join(", "),
        a.matcher
            .as_deref()
            .map(|m| format!(" (matcher {m})"))
            .unwrap_or_default(),
        kept(backup)
    );
    Ok(ExitStatus::Ok)
}

/// Whether writing the settings of `scope` keeps a backup: not a project's, which lives in
/// its repository (version control keeps the previous version).
fn keeps_backup(scope: ScopeArg) -> bool {
    !matches!(scope, ScopeArg::Project)
}

fn kept(backup: Option<PathBuf>) -> String {
    backup
        .map(|b| format!(" (previous version kept as {})", b.display()))
        .unwrap_or_default()
}

pub fn uninstall(a: UninstallArgs) -> anyhow::Result<ExitStatus> {
    if let Some(ev) = &a.event {
        check_events(ev)?;
    }
    let path = settings::settings_path(a.scope.into())?;
    let mut doc = settings::read_settings(&path)?;
    if !settings::uninstall_from(&mut doc, a.event.as_deref(), &this_binary(None)) {
        say!("{}: no cchist hook entry to remove", path.display());
        return Ok(ExitStatus::Ok);
    }
    // A project settings file that held only cchist's hooks was cchist's: removed whole.
    if matches!(a.scope, ScopeArg::Project) && doc.as_object().is_some_and(|o| o.is_empty()) {
        std::fs::remove_file(&path)
            .map_err(|e| anyhow::anyhow!("removing {}: {e}", path.display()))?;
        if let Some(dir) = path.parent() {
            // `.claude/` too, when nothing else is in it.
            let _ = std::fs::remove_dir(dir);
        }
        say!(
            "{}: removed cchist's hook entries; the file held nothing else and was removed",
            path.display()
        );
        return Ok(ExitStatus::Ok);
    }
    let backup = settings::write_settings_with(&path, &doc, keeps_backup(a.scope))?;
    let what = match &a.event {
        Some(ev) => format!("removed cchist's entries for {}", ev.join(", ")),
        None => "removed cchist's hook entries".into(),
    };
    say!("{}: {what}{}", path.display(), kept(backup));
    Ok(ExitStatus::Ok)
}

pub fn status(a: StatusArgs) -> anyhow::Result<ExitStatus> {
    let root = cchist::claude::layout::config_root()?;
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut scopes = Vec::new();
    let ours = this_binary(None);
    for (label, scope) in [("user", Scope::User), ("project", Scope::Project)] {
        let path = settings::settings_path(scope)?;
        // Run in the home folder, the project's settings are the user's: one file, once.
        let same = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&same) {
            if !a.format.json() {
                tell!(
                    "{label} settings {}: the user settings above",
                    path.display()
                );
            }
            continue;
        }
        seen.push(same);
        let entries = match settings::read_settings(&path) {
            Ok(doc) => settings::installed(&doc, &ours),
            Err(e) => {
                if !a.format.json() {
                    tell!("{label} settings {}: {e}", path.display());
                }
                scopes.push(serde_json::json!({"scope": label, "file": path.display().to_string(), "error": e.to_string()}));
                continue;
            }
        };
        scopes.push(serde_json::json!({
            "scope": label,
            "file": path.display().to_string(),
            "hooks": entries.iter().map(|(ev, cmd, t, m)| serde_json::json!({"event": ev, "command": cmd, "timeout": t, "matcher": m})).collect::<Vec<_>>(),
        }));
        if a.format.json() {
            continue;
        }
        if entries.is_empty() {
            tell!("{label} settings {}: no cchist hook", path.display());
            continue;
        }
        tell!("{label} settings {}:", path.display());
        for (ev, cmd, timeout, matcher) in entries {
            let t = timeout
                .map(|t| format!(" (timeout {t} s)"))
                .unwrap_or_default();
            let m = matcher
                .map(|m| format!(" [matcher {m}]"))
                .unwrap_or_default();
            tell!("  {ev:<13} {cmd}{t}{m}");
        }
    }
    let runs = hook_log::read(&root);
    let log = hook_log::log_path(&root);
    if a.format.json() {
        let last: Vec<_> = runs
            .iter()
            .skip(runs.len().saturating_sub(a.last))
            .map(|l| {
                let mut l = l.clone();
                l.detail = hook_log::shown_detail(&l.detail);
                l
            })
            .collect();
        let failures = runs.iter().filter(|l| l.is_failure()).count();
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "settings": scopes,
                "log": log.display().to_string(),
                "runs": runs.len(),
                "failures": failures,
                "last": last,
            }),
        )?;
        std::io::Write::write_all(&mut out, b"\n")?;
        return Ok(ExitStatus::Ok);
    }
    if runs.is_empty() {
        tell!("no hook run logged in {}", log.display());
        return Ok(ExitStatus::Ok);
    }
    let show = |l: &hook_log::LogLine| {
        let session: String = l.session.chars().take(8).collect();
        tell!(
            "  {}  {:<12} {:<8} {:<10} {:>6} ms  {}",
            l.time,
            l.event,
            session,
            l.outcome,
            l.ms,
            // A log written before details were redacted may hold a secret.
            hook_log::shown_detail(&l.detail)
        );
    };
    tell!("last runs ({}):", log.display());
    runs.iter()
        .skip(runs.len().saturating_sub(a.last))
        .for_each(show);
    let failures: Vec<_> = runs.iter().filter(|l| l.is_failure()).collect();
    tell!("failures: {} of {} logged runs", failures.len(), runs.len());
    failures
        .iter()
        .skip(failures.len().saturating_sub(a.last))
        .for_each(|l| show(l));
    Ok(ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_folders_are_recognised() {
        assert!(in_build_folder(Path::new(
            "/src/cchist/target/debug/cchist"
        )));
        assert!(in_build_folder(Path::new("/x/target/release/cchist")));
        assert!(!in_build_folder(Path::new("/home/u/.cargo/bin/cchist")));
    }
}
