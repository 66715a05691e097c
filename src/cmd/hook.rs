//! `cchist hook`: run as a Claude Code hook; `cchist hook install|uninstall`: edit settings.json.

use std::collections::BTreeSet;
use std::io::Read;

use anyhow::{bail, Context};
use cchist::claude::hook::{self, HookInput, Scope};
use cchist::claude::layout::SessionFile;
use cchist::claude::rewrite::{self, MutateOptions, Written};
use cchist::engine::config;
use cchist::engine::config::StopAction;
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::engine::runner::{self, Mode};
use cchist::error::ExitStatus;
use cchist::io::input::Input;
use cchist::io::{framing, input};
use cchist::stages;
use cchist::transcript::record::Record;
use cchist::transcript::session::Session;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::json;

/// `cchist hook` arguments.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookArgs {
    #[command(subcommand)]
    pub action: Option<HookAction>,
    /// Pipeline for SessionEnd (file or shipped name); its [hook] table sets Stop policies.
    #[arg(short, long, value_name = "FILE|NAME", default_value = "scrub")]
    pub pipeline: String,
    /// Exit 2 on failure (by default a failing hook logs to stderr and exits 0, so it never
    /// blocks Claude Code).
    #[arg(long)]
    pub strict: bool,
}

/// `cchist hook` subcommands.
#[derive(Subcommand, Debug)]
pub enum HookAction {
    /// Add cchist's hook entries to Claude Code's settings.json (idempotent, backup kept).
    Install(InstallArgs),
    /// Remove cchist's hook entries from settings.json.
    Uninstall(InstallArgs),
}

/// `hook install|uninstall`.
#[derive(Args, Debug)]
pub struct InstallArgs {
    /// Events to hook, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "SessionEnd,PreCompact")]
    pub event: Vec<String>,
    /// user: $CLAUDE_CONFIG_DIR/settings.json (default ~/.claude); project: ./.claude/settings.json.
    #[arg(long, value_enum, default_value_t = ScopeArg::User)]
    pub scope: ScopeArg,
    /// Pipeline the installed hook runs (file path or shipped name).
    #[arg(short, long, value_name = "FILE|NAME")]
    pub pipeline: Option<String>,
    /// Timeout Claude Code gives the hook, in seconds.
    #[arg(long, default_value_t = 30)]
    pub timeout: u64,
}

/// `--scope`.
#[derive(ValueEnum, Debug, Clone, Copy)]
pub enum ScopeArg {
    /// The user's settings.
    User,
    /// The project's settings.
    Project,
}

const EVENTS: &[&str] = &["SessionEnd", "PreCompact", "SessionStart", "Stop"];

pub fn run(a: HookArgs) -> anyhow::Result<ExitStatus> {
    match a.action {
        Some(HookAction::Install(i)) => install(i, true),
        Some(HookAction::Uninstall(i)) => install(i, false),
        None => match handle(&a.pipeline) {
            Ok(()) => Ok(ExitStatus::Ok),
            Err(e) if !a.strict => {
                eprintln!("cchist hook: {e:#} (ignored so Claude Code is not blocked; --strict makes this fatal)");
                Ok(ExitStatus::Ok)
            }
            Err(e) => Err(e),
        },
    }
}

fn handle(pipeline_spec: &str) -> anyhow::Result<()> {
    let mut buf = Vec::new();
    std::io::stdin()
        .read_to_end(&mut buf)
        .context("reading the hook input")?;
    let inp = HookInput::parse(&buf)?;
    match inp.hook_event_name.as_str() {
        "SessionEnd" => session_end(&inp, pipeline_spec),
        "PreCompact" => pre_compact(&inp),
        "SessionStart" => session_start(&inp, pipeline_spec),
        "Stop" => stop(&inp, pipeline_spec),
        _ => Ok(()),
    }
}

fn session_end(inp: &HookInput, spec: &str) -> anyhow::Result<()> {
    let transcript = inp.transcript()?;
    let file = config::load_spec(spec)?;
    let mode = Mode::InPlace {
        backup: None,
        touch: false,
    };
    let mut failures = Vec::new();
    for m in SessionFile::from_path(transcript).members() {
        let path = m.path;
        let rel = path.file_name().map(Into::into).unwrap_or_default();
        if let Err(e) = runner::run_one(&file.pipeline, &Input::File { path, rel }, &mode) {
            failures.push(e.to_string());
        }
    }
    if !failures.is_empty() {
        bail!("{}", failures.join("; "));
    }
    Ok(())
}

fn digest_of(path: &std::path::Path) -> anyhow::Result<String> {
    let f = input::open(path)?;
    let mut s = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect());
    let all: BTreeSet<usize> = (0..s.records.len()).collect();
    Ok(stages::summarize::digest_body(&mut s, &all))
}

fn pre_compact(inp: &HookInput) -> anyhow::Result<()> {
    let d = digest_of(inp.transcript()?)?;
    println!(
        "When you summarize, keep these facts from the transcript (collected by cchist):\n{d}"
    );
    Ok(())
}

fn session_start(inp: &HookInput, spec: &str) -> anyhow::Result<()> {
    let file = config::load_spec(spec)?;
    let policy = file.hook;
    if !policy.session_start_digest {
        return Ok(());
    }
    let transcript = inp.transcript()?;
    let Some(dir) = transcript.parent() else {
        return Ok(());
    };
    let previous = cchist::claude::layout::sessions_in(dir)?
        .into_iter()
        .filter(|s| s.id != inp.session_id && s.path != transcript)
        .max_by_key(|s| std::fs::metadata(&s.path).and_then(|m| m.modified()).ok());
    if let Some(prev) = previous {
        let d = digest_of(&prev.path)?;
        println!(
            "The previous session of this project ({}), digested by cchist:\n{d}",
            prev.id
        );
    }
    Ok(())
}

fn stop(inp: &HookInput, spec: &str) -> anyhow::Result<()> {
    if inp.stop_hook_active {
        return Ok(());
    }
    let file = config::load_spec(spec)?;
    let policy = file.hook;
    if policy.at_turns.is_empty() && policy.every == 0 {
        return Ok(());
    }
    let transcript = inp.transcript()?;
    let f = input::open(transcript)?;
    let turns = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect())
        .turns()
        .len();
    drop(f);
    if !policy.triggers(turns) {
        return Ok(());
    }
    let message = match policy.action {
        StopAction::Notify => {
            let flag = match (policy.fit, policy.keep_last_steps) {
                (Some(f), _) => format!("--fit {f}"),
                (None, Some(k)) => format!("--keep-last-steps {k}"),
                (None, None) => format!("--keep-last {}", policy.keep_last),
            };
            format!(
                "cchist: this session has {turns} turns. To continue with less context: cchist summarize-range {flag} --fork --session {}",
                inp.session_id
            )
        }
        StopAction::Fork => {
            let opts = policy.summarize_options();
            let summarize = (stages::summarize::DEF.build)(opts)?;
            let relink = (stages::relink::DEF.build)(toml::Table::new())?;
            let p = Pipeline::new(
                vec![summarize, relink],
                OnInvalid::Keep,
                "stop-hook fork".into(),
            );
            let s = SessionFile {
                id: inp.session_id.clone(),
                path: transcript.to_path_buf(),
                project_dir: transcript.parent().map(Into::into).unwrap_or_default(),
            };
            let (_, written) = rewrite::mutate(
                &s,
                &p,
                MutateOptions {
                    fork: true,
                    ..Default::default()
                },
            )?;
            match written {
                Written::Forked { id, .. } => format!(
                    "cchist: this session has {turns} turns; a compressed copy ({}) is ready: claude --resume {id}",
                    policy.kept()
                ),
                _ => return Ok(()),
            }
        }
    };
    println!("{}", json!({ "systemMessage": message }));
    Ok(())
}

fn install(a: InstallArgs, add: bool) -> anyhow::Result<ExitStatus> {
    for ev in &a.event {
        if !EVENTS.contains(&ev.as_str()) {
            bail!("unknown event `{ev}`; cchist handles {}", EVENTS.join(", "));
        }
    }
    let scope = match a.scope {
        ScopeArg::User => Scope::User,
        ScopeArg::Project => Scope::Project,
    };
    let path = hook::settings_path(scope)?;
    let exe = std::env::current_exe().context("finding the cchist executable")?;
    let mut command = format!("{} hook", shell_quote(&exe.to_string_lossy()));
    if let Some(p) = &a.pipeline {
        let p = std::path::Path::new(p);
        let spec = if p.exists() {
            std::path::absolute(p)?.to_string_lossy().into_owned()
        } else {
            config::load_spec(&p.to_string_lossy())?;
            p.to_string_lossy().into_owned()
        };
        command += &format!(" --pipeline {}", shell_quote(&spec));
    }
    let mut doc = hook::read_settings(&path)?;
    let changed = if add {
        hook::install_into(&mut doc, &a.event, &command, a.timeout)?
    } else {
        hook::uninstall_from(&mut doc)
    };
    if !changed {
        eprintln!(
            "{}: already {}",
            path.display(),
            if add { "installed" } else { "absent" }
        );
        return Ok(ExitStatus::Ok);
    }
    let backup = hook::write_settings(&path, &doc)?;
    let what = if add {
        format!("added `{command}` for {}", a.event.join(", "))
    } else {
        "removed cchist's hook entries".to_string()
    };
    eprintln!(
        "{}: {what}{}",
        path.display(),
        backup
            .map(|b| format!(" (previous version kept as {})", b.display()))
            .unwrap_or_default()
    );
    Ok(ExitStatus::Ok)
}

fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
