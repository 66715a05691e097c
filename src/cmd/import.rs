//! `cchist import [--from FORMAT] SOURCE…`: another agent's conversation as a new Claude Code
//! session, through a redaction pipeline, resumable with `claude --resume <id>`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use cchist::claude::layout;
use cchist::engine::config;
use cchist::error::ExitStatus;
use cchist::import::{self, codex, opencode, History, Options};
use clap::{Args, ValueEnum};
use serde_json::json;

use super::print::say;

/// `--from`: the source format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum From {
    /// Anthropic Messages / OpenAI Chat Completions / Responses JSON or JSONL.
    Messages,
    /// OpenAI Codex CLI rollouts (`rollout-*.jsonl`, `.jsonl.zst`).
    Codex,
    /// Gemini CLI chats (`session-*.jsonl`) and `/chat save` checkpoints.
    Gemini,
    /// aider's `.aider.chat.history.md`.
    Aider,
    /// opencode sessions: a `storage/session/<project>/<id>.json` file, or `opencode.db`.
    Opencode,
}

impl From {
    fn name(self) -> &'static str {
        match self {
            From::Messages => "messages",
            From::Codex => "codex",
            From::Gemini => "gemini",
            From::Aider => "aider",
            From::Opencode => "opencode",
        }
    }
}

/// `--history`: how much of a compacted Codex history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryArg {
    /// Everything the user saw (Claude Code compacts again when it must).
    Full,
    /// What the agent's model saw last: the compaction's replacement history and later.
    Active,
}

/// `cchist import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The files to import, each as a session of its own.
    #[arg(value_name = "SOURCE", required_unless_present_any = ["latest", "session"])]
    pub sources: Vec<PathBuf>,
    /// The source format; detected from the file when absent.
    #[arg(long, value_enum)]
    pub from: Option<From>,
    /// Import the newest session of the agent (`--from codex|gemini|opencode`), under
    /// $CODEX_HOME (default ~/.codex), ~/.gemini or $XDG_DATA_HOME/opencode (default
    /// ~/.local/share/opencode).
    #[arg(long, requires = "from", conflicts_with = "session")]
    pub latest: bool,
    /// With --latest: the newest one that ran in DIR.
    #[arg(long, value_name = "DIR", requires = "latest")]
    pub cwd: Option<PathBuf>,
    /// Import the agent's session whose file name holds ID (`--from codex|gemini|opencode`);
    /// with `--from opencode` and an `opencode.db` SOURCE, that session of the database.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// The project the session belongs to (where `claude --resume` runs); default: the
    /// source's working directory, else the current one.
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// The pipeline every imported record runs through (a shipped name or a file).
    #[arg(short = 'p', long, value_name = "FILE|NAME", default_value = "scrub")]
    pub pipeline: String,
    /// Write the session's JSONL to FILE (`-`: stdout) instead of into Claude Code's folder.
    #[arg(short = 'o', long, value_name = "FILE|-", conflicts_with = "dry_run")]
    pub output: Option<PathBuf>,
    /// Write nothing; print the report.
    #[arg(long)]
    pub dry_run: bool,
    /// Codex and opencode compactions: the full history, or only what the model saw after the
    /// last one.
    #[arg(long, value_enum, default_value = "full")]
    pub history: HistoryArg,
    /// The model every imported assistant message names. Claude Code sends signed thinking
    /// back only from records of the model it resumes with: give that model here to keep it.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The report as JSON (on stdout; on stderr with `-o -`).
    #[arg(long)]
    pub json: bool,
}

/// The newest Gemini CLI chat under `~/.gemini/tmp/*/chats/`.
fn gemini_chats() -> Vec<PathBuf> {
    let Some(home) = std::env::var_os("HOME") else {
        return Vec::new();
    };
    let tmp = PathBuf::from(home).join(".gemini").join("tmp");
    let mut out = Vec::new();
    for slug in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(slug.path().join("chats"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            if name.starts_with("session-") && (name.ends_with(".jsonl") || name.ends_with(".json"))
            {
                out.push(f.path());
            }
        }
    }
    out.sort_by_key(|p| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH)
    });
    out
}

/// The files `--latest` / `--session` name (with the session of a database that holds
/// many).
fn find_sources(args: &ImportArgs) -> anyhow::Result<Vec<(PathBuf, Option<String>)>> {
    let Some(from) = args.from else {
        bail!("--session finds a session with --from codex|gemini|opencode, or in an opencode database given as SOURCE");
    };
    let all = match from {
        From::Codex => {
            let home = codex::codex_home()
                .context("cannot find Codex's folder: set CODEX_HOME or HOME")?;
            codex::rollouts(&home)
        }
        From::Gemini => gemini_chats(),
        From::Opencode => return opencode_sessions(args),
        f => bail!(
            "--latest and --session find sessions of codex, gemini or opencode, not {}",
            f.name()
        ),
    };
    let found = if let Some(id) = &args.session {
        all.into_iter().rev().find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(id.as_str()))
        })
    } else if let Some(dir) = &args.cwd {
        let want = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        all.into_iter()
            .rev()
            .find(|p| codex::rollout_cwd(p).is_some_and(|c| Path::new(&c) == want))
    } else {
        all.into_iter().next_back()
    };
    match found {
        Some(p) => Ok(vec![(p, None)]),
        None => bail!(
            "no {} session found{}; name the file instead",
            from.name(),
            args.session
                .as_ref()
                .map(|s| format!(" whose file name holds `{s}`"))
                .or_else(|| args
                    .cwd
                    .as_ref()
                    .map(|d| format!(" that ran in {}", d.display())))
                .unwrap_or_default()
        ),
    }
}

/// The opencode session `--latest` / `--session` name, under `$XDG_DATA_HOME/opencode`
/// (default `~/.local/share/opencode`): in `opencode.db` (with the `opencode-sqlite`
/// feature) or the `storage/` tree, the newest that matches; the database and its id, or the
/// session's file.
fn opencode_sessions(args: &ImportArgs) -> anyhow::Result<Vec<(PathBuf, Option<String>)>> {
    let home = opencode::data_home()
        .context("cannot find opencode's folder: set XDG_DATA_HOME or HOME")?;
    let want = args
        .cwd
        .as_ref()
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()));
    let fits = |id: &str, dir: &str| {
        args.session
            .as_ref()
            .is_none_or(|s| id.contains(s.as_str()))
            && want.as_ref().is_none_or(|w| Path::new(dir) == w)
    };
    let mut found: Vec<(f64, PathBuf, Option<String>)> = opencode::storage_sessions(&home)
        .into_iter()
        .filter_map(|p| {
            let (id, dir, t) = opencode::storage_session_meta(&p)?;
            fits(&id, &dir).then_some((t, p, None))
        })
        .collect();
    let db = home.join("opencode.db");
    if db.is_file() {
        for s in opencode::db_sessions(&db)? {
            if fits(&s.id, &s.directory) {
                found.push((s.updated, db.clone(), Some(s.id)));
            }
        }
    }
    found.sort_by(|a, b| a.0.total_cmp(&b.0));
    match found.pop() {
        Some((_, p, id)) => Ok(vec![(p, id)]),
        None => bail!(
            "no opencode session found{} under {}; name the file instead",
            args.session
                .as_ref()
                .map(|s| format!(" whose id holds `{s}`"))
                .or_else(|| args
                    .cwd
                    .as_ref()
                    .map(|d| format!(" that ran in {}", d.display())))
                .unwrap_or_default(),
            home.display()
        ),
    }
}

/// A path as the CLI resolves a working directory: real, when it exists.
fn real(p: &Path) -> String {
    p.canonicalize()
        .unwrap_or_else(|_| p.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

pub fn run(args: ImportArgs) -> anyhow::Result<ExitStatus> {
    // An opencode database named with `--session`: that session of it.
    let in_named =
        !args.sources.is_empty() && !args.latest && args.from.is_none_or(|f| f == From::Opencode);
    let sources = if (args.latest || args.session.is_some()) && !in_named {
        find_sources(&args)?
    } else {
        args.sources
            .iter()
            .map(|p| (p.clone(), args.session.clone()))
            .collect()
    };
    if args.output.is_some() && sources.len() > 1 {
        bail!("-o writes one session: import one SOURCE at a time with it");
    }
    let pipeline = config::load_spec(&args.pipeline)?.pipeline;
    let opts = Options {
        history: match args.history {
            HistoryArg::Full => History::Full,
            HistoryArg::Active => History::Active,
        },
        model: args.model.clone(),
        session: None,
    };
    let project = args.project.as_deref().map(real);
    let here = real(&std::env::current_dir().context("current directory")?);
    // Everything converted and checked before anything is written: a bad source among
    // several writes none of them.
    let mut done = Vec::new();
    for (path, session) in &sources {
        let opts = Options {
            session: session.clone(),
            ..opts.clone()
        };
        let data = import::read_file(path)?;
        let source = match args.from {
            Some(f) => import::source_named(f.name()).expect("every --from has a source"),
            None => import::detect(path, &data)?,
        };
        let imported = import::convert(
            source,
            path,
            &data,
            &opts,
            project.as_deref(),
            &here,
            &pipeline,
        )?;
        let findings = cchist::findings::validate::validate_named(
            &imported.jsonl,
            Some(&imported.target.session_id),
            true,
        );
        if let Some(f) = findings.first() {
            bail!(
                "{}: the session built from it does not validate (line {}: {}); nothing was written — please report this",
                path.display(),
                f.line,
                f.message
            );
        }
        done.push((path, source.name(), imported));
    }
    let root = layout::config_root()?;
    let mut reports = Vec::new();
    for (path, format, imp) in &done {
        let id = &imp.target.session_id;
        let dest = match &args.output {
            _ if args.dry_run => None,
            Some(o) if o.as_os_str() == "-" => {
                std::io::stdout().lock().write_all(&imp.jsonl)?;
                None
            }
            Some(o) => Some(o.clone()),
            None => Some(
                layout::projects_dir(&root)
                    .join(layout::project_folder_name(&imp.target.cwd))
                    .join(format!("{id}.jsonl")),
            ),
        };
        if let Some(d) = &dest {
            import::write_new(d, &imp.jsonl).with_context(|| format!("{}: write", d.display()))?;
        }
        let resume = format!(
            "cd {} && claude --resume {id}",
            shlex::try_quote(&imp.target.cwd)
                .map_or_else(|_| imp.target.cwd.clone(), |q| q.into_owned())
        );
        let secrets = imp.pipeline.findings.len();
        if args.json {
            reports.push(json!({
                "source": path.display().to_string(),
                "format": format,
                "session_id": id,
                "project": imp.target.cwd,
                "file": dest.as_ref().map(|d| d.display().to_string()),
                "records": imp.jsonl.iter().filter(|&&b| b == b'\n').count(),
                "pipeline": args.pipeline,
                "pipeline_findings": secrets,
                "resume": resume,
                "report": imp.report.entries(),
            }));
            continue;
        }
        say!("cchist: import {} ({format}):", path.display());
        eprint!("{}", imp.report.text());
        say!(
            "  pipeline {}: {} finding{} replaced",
            args.pipeline,
            secrets,
            if secrets == 1 { "" } else { "s" }
        );
        match &dest {
            Some(d) => {
                say!("cchist: wrote {}", d.display());
                if args.output.is_none() {
                    println!("{resume}");
                }
            }
            None if args.dry_run => {
                say!("cchist: dry run, nothing written (would be session {id})")
            }
            None => {}
        }
    }
    if args.json {
        let doc = json!({ "imports": reports });
        // Source names come from the disk: printed redacted, as every report is.
        let text = super::print::shown_json(&doc)?;
        let text = text.trim_end();
        if args.output.as_ref().is_some_and(|o| o.as_os_str() == "-") {
            eprintln!("{text}");
        } else {
            println!("{text}");
        }
    }
    Ok(ExitStatus::Ok)
}
