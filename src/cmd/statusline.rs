//! `cchist statusline`: one short line for Claude Code's `statusLine` command, and `statusline
//! install` to set it in settings.json.
//!
//! What the pinned CLI (2.1.328) writes on the command's stdin, read from its bundled
//! JavaScript: the hook base fields (`session_id`, `transcript_path`, `cwd`), `model: {id,
//! display_name}`, `workspace: {current_dir, project_dir, added_dirs}`, `version`, `cost`,
//! and `context_window: {total_input_tokens, total_output_tokens, context_window_size,
//! current_usage, used_percentage, remaining_percentage}` (its percentage is of the full
//! window and leaves the auto-compact buffer out, which is why this line says where
//! compaction is). cchist reads only the end of the transcript ([`context::tail`]), so the
//! line costs the same on a 100 MB session as on a small one.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::bail;
use cchist::claude::settings;
use cchist::error::ExitStatus;
use cchist::transcript::context::{self, Compaction, Limits, Standing, Timeline, Usage};
use clap::{Args, Subcommand};
use serde_json::{json, Value};

use super::hook_install::ScopeArg;
use super::print::say;

/// `cchist statusline` arguments.
#[derive(Args, Debug)]
pub struct StatuslineArgs {
    /// Without one: read Claude Code's statusLine JSON on stdin and print one line.
    #[command(subcommand)]
    pub action: Option<Action>,
}

/// `statusline` subcommands.
#[derive(Subcommand, Debug)]
pub enum Action {
    /// Set `statusLine` in settings.json to run `cchist statusline` (backup kept, other
    /// settings untouched; a second run changes nothing).
    Install(InstallArgs),
}

/// `statusline install`.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// user: $CLAUDE_CONFIG_DIR/settings.json (default ~/.claude); project: ./.claude/settings.json.
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    pub scope: ScopeArg,
    /// The cchist binary the status line runs (default: this one).
    #[arg(long, value_name = "PATH")]
    pub exe: Option<PathBuf>,
    /// Replace a statusLine another tool set.
    #[arg(long)]
    pub force: bool,
}

/// The most of the transcript's end read for the line.
const TAIL_BYTES: u64 = 4 * 1024 * 1024;
/// The most of stdin read (the CLI's JSON is a few KiB).
const STDIN_BYTES: u64 = 1024 * 1024;

pub fn run(a: StatuslineArgs) -> anyhow::Result<ExitStatus> {
    match a.action {
        Some(Action::Install(i)) => install(i),
        None => {
            let mut input = Vec::new();
            std::io::stdin().take(STDIN_BYTES).read_to_end(&mut input)?;
            let line = line_for(&input)?;
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", super::print::safe(&line))?;
            Ok(ExitStatus::Ok)
        }
    }
}

/// The line for one statusLine JSON document.
pub fn line_for(input: &[u8]) -> anyhow::Result<String> {
    let v: Value = serde_json::from_slice(input).map_err(|e| {
        anyhow::anyhow!("stdin: not the statusLine JSON Claude Code sends ({e}); run `cchist statusline` as the statusLine command")
    })?;
    let project = v
        .pointer("/workspace/project_dir")
        .or_else(|| v.get("cwd"))
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let o = super::context::overrides(project.as_deref());
    let t = match v.get("transcript_path").and_then(Value::as_str) {
        Some(p) if Path::new(p).is_file() => context::tail(Path::new(p), TAIL_BYTES)?,
        _ => context::Tail::default(),
    };
    // The model the CLI runs now wins over the recorded one (a resume may switch it).
    let model = v
        .pointer("/model/id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(t.model.clone())
        .unwrap_or_else(|| context::DEFAULT_MODEL.to_string());
    let limits = Limits::of(&model, &o);
    let tokens = match t.usage {
        Some(_) => Some(t.tokens),
        // Nothing counted in the tail: the CLI's own last usage, when it sent one.
        None => v
            .pointer("/context_window/current_usage")
            .filter(|u| u.is_object())
            .map(|u| Usage::of(&json!({"type": "assistant", "message": {"usage": u}})))
            .and_then(|u| u.map(|u| u.total())),
    };
    Ok(render(tokens, &limits, Timeline::growth(&t.per_turn, 5)))
}

fn render(tokens: Option<u64>, l: &Limits, growth: Option<u64>) -> String {
    use super::context::short_tokens as k;
    let Some(tokens) = tokens else {
        return "ctx ?".into();
    };
    let size = match l.window {
        context::Window::Known(w) => format!(
            "ctx {}/{} {:.0}%",
            k(tokens),
            k(w),
            l.percent(tokens).unwrap_or(0.0)
        ),
        context::Window::Unknown => format!("ctx {} (no known window)", k(tokens)),
    };
    let tail = match (&l.compaction, l.standing(tokens)) {
        (_, Standing::CompactsNow) => "compacts now".to_string(),
        (_, Standing::Blocked) => "auto-compact off: full".to_string(),
        (Compaction::Off { .. }, _) => "auto-compact off".to_string(),
        (Compaction::NoKnownWindow, _) => "compacts only when too long".to_string(),
        (Compaction::Auto { threshold, .. }, _) => match growth {
            Some(g) => {
                let n = (threshold - tokens).div_ceil(g);
                format!(
                    "compacts at {} in ~{n} turn{}",
                    k(*threshold),
                    if n == 1 { "" } else { "s" }
                )
            }
            None => format!("compacts at {}", k(*threshold)),
        },
    };
    format!("{size} · {tail}")
}

fn install(a: InstallArgs) -> anyhow::Result<ExitStatus> {
    let path = settings::settings_path(a.scope.into())?;
    let exe = super::hook_install::stable_exe(a.exe.as_deref())?;
    let argv = vec![exe.to_string_lossy().into_owned(), "statusline".to_string()];
    let command = settings::command_line(&argv)?;
    let want = json!({"type": "command", "command": command});
    let ours = super::hook_install::this_binary(Some(&exe));
    let mut doc = settings::read_settings(&path)?;
    let Some(obj) = doc.as_object_mut() else {
        bail!("{}: does not hold a JSON object", path.display());
    };
    match obj.get("statusLine") {
        Some(cur) if *cur == want => {
            say!("{}: already installed", path.display());
            return Ok(ExitStatus::Ok);
        }
        Some(cur) if !settings::is_our_statusline(cur, &ours) && !a.force => bail!(
            "{}: statusLine is another tool's ({}), left as it is; pass --force to replace it",
            path.display(),
            cur
        ),
        _ => {}
    }
    obj.insert("statusLine".into(), want);
    let backup = settings::write_settings(&path, &doc)?;
    say!(
        "{}: statusLine runs `{command}`{}",
        path.display(),
        backup
            .map(|b| format!(" (previous version kept as {})", b.display()))
            .unwrap_or_default()
    );
    Ok(ExitStatus::Ok)
}
