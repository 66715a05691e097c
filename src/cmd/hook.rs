//! `cchist hook`: run as a Claude Code hook (one event, JSON on stdin); `cchist hook
//! install|uninstall|status` (in `hook_install.rs`): cchist's entries in settings.json and
//! what the hooks did.
//!
//! Every run appends one line to `$CLAUDE_CONFIG_DIR/cchist/hook.log`. Exit status: 0, except
//! 1 when a SessionEnd run fails (the CLI shows exit 1 on its stderr; nothing else would show
//! it) or any run fails under `--strict`. Never 2 — Claude Code treats exit 2 of Stop and
//! PreCompact as "block" and feeds cchist's error to the model — unless a history manager
//! fails under `[hook] block_on_error = true`, which asks for exactly that.

use super::print::say;
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};
use cchist::claude::hook::{self, HookEvent, HookInput};
use cchist::claude::hook_handle::{self, Outcome};
use cchist::claude::hook_log::{self, LogLine};
use cchist::error::ExitStatus;
use clap::{Args, Subcommand};
use serde_json::json;

use super::hook_install::{self, InstallArgs, StatusArgs, UninstallArgs};

/// `cchist hook` arguments.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: Option<HookAction>,
    /// Pipeline (a shipped name such as `builtin:scrub`, or a file): SessionEnd applies it;
    /// forks and digests go through it; its [hook] table sets Stop and SessionStart policies.
    #[arg(short, long, value_name = "FILE|NAME", default_value = "builtin:scrub")]
    pub pipeline: String,
    /// Exit 1 on any failure (by default only a failing SessionEnd exits 1; other events log
    /// the failure and exit 0, so they never get in Claude Code's way).
    #[arg(long)]
    pub strict: bool,
}

/// `cchist hook` subcommands.
#[derive(Subcommand, Debug)]
pub enum HookAction {
    /// Add cchist's hook entries to Claude Code's settings.json (idempotent, backup kept).
    Install(InstallArgs),
    /// Remove cchist's hook entries from settings.json (all, or those of --event).
    Uninstall(UninstallArgs),
    /// Show the installed hooks, the last runs and failures.
    Status(StatusArgs),
}

pub fn run(a: HookArgs) -> anyhow::Result<ExitStatus> {
    match a.action {
        Some(HookAction::Install(i)) => hook_install::install(i),
        Some(HookAction::Uninstall(u)) => hook_install::uninstall(u),
        Some(HookAction::Status(s)) => hook_install::status(s),
        // Claude Code always pipes the event in: a terminal means a person ran it, who must
        // hear why nothing happens rather than wait (exit 2 cannot reach Claude Code here).
        None if super::plan::stdin_is() == super::plan::StdinIs::Terminal => bail!(
            "`cchist hook` reads the event JSON Claude Code sends on stdin, and stdin is a terminal: Claude Code runs it once installed (`cchist hook install`); to try it, pipe an event in"
        ),
        None => Ok(run_hook(&a.pipeline, a.strict)),
    }
}

fn run_hook(spec: &str, strict: bool) -> ExitStatus {
    let start = Instant::now();
    let mut inp = HookInput::default();
    let result = read_input().and_then(|i| {
        inp = i;
        Ok(hook_handle::handle(&inp, spec, &auto_fit)?)
    });
    let (outcome, detail) = match &result {
        Ok(d) => (d.kind.as_str(), d.detail.clone()),
        Err(e) => ("failed", format!("{e:#}")),
    };
    let line = LogLine {
        time: cchist::io::clock::now(),
        event: inp.hook_event_name.name().to_string(),
        session: inp.session_id.clone(),
        outcome: outcome.into(),
        detail: hook_log::shown_detail(&detail),
        ms: start.elapsed().as_millis() as u64,
    };
    let logged = cchist::claude::layout::config_root()
        .map_err(anyhow::Error::from)
        .and_then(|root| Ok(hook_log::append(&root, &line)?));
    if let Err(e) = logged {
        say!("cchist hook: cannot write the hook log: {e:#}");
    }
    if let Ok(Outcome { block: true, .. }) = &result {
        // Claude Code reads a blocking Stop hook's stderr and gives it to the model.
        say!(
            "cchist hook ({}): {}",
            line.event,
            cchist::stages::redact::shown_text(&detail)
        );
        return ExitStatus::Error;
    }
    if let Ok(o) = &result {
        if let Some(text) = &o.stdout {
            println!("{text}");
        }
        if let Some(m) = &o.message {
            println!("{}", json!({ "systemMessage": m }));
        }
    }
    if !line.is_failure() {
        return ExitStatus::Ok;
    }
    say!(
        "cchist hook ({}): {outcome}: {}",
        line.event,
        cchist::stages::redact::shown_text(&detail)
    );
    if strict || inp.hook_event_name == HookEvent::SessionEnd {
        ExitStatus::Findings
    } else {
        ExitStatus::Ok
    }
}

fn read_input() -> anyhow::Result<HookInput> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(hook::MAX_INPUT_BYTES + 1)
        .read_to_end(&mut buf)
        .context("reading the hook input")?;
    if buf.len() as u64 > hook::MAX_INPUT_BYTES {
        bail!(
            "hook input over {} bytes; not what Claude Code sends",
            hook::MAX_INPUT_BYTES
        );
    }
    Ok(HookInput::parse(&buf)?)
}

/// The auto-compact threshold of the session at `path` (its model, the environment and the
/// settings as Claude Code reads them); an error when the CLI knows none for the model.
fn auto_fit(path: &Path) -> cchist::error::Result<u64> {
    let f = cchist::io::input::open(path)?;
    let mut s = cchist::transcript::session::Session::new(
        cchist::io::framing::lines(&f.data, 1)
            .map(cchist::transcript::record::Record::from_line)
            .collect(),
    );
    let cwd = cchist::claude::layout::first_cwd(path).map(std::path::PathBuf::from);
    let m = super::context::measure(&mut s, &super::context::overrides(cwd.as_deref()));
    m.limits.threshold().ok_or_else(|| {
        cchist::error::Error::Other(format!(
            "fit = \"auto\": Claude Code does not auto-compact {} sessions here (no known window, or auto-compaction off); set fit to a number of tokens",
            m.limits.model
        ))
    })
}
