//! The command line: the `Command` enum over the subcommands in `cmd/`, and dispatch.
//! `cli` imports `cmd`, never the reverse.

use cchist::error::ExitStatus;
use clap::{Parser, Subcommand};

use crate::cmd;

/// Transform Claude Code session transcripts safely and fast.
///
/// Exit codes: 0 success, 1 findings (check, validate), 2 error.
#[derive(Parser, Debug)]
#[command(name = "cchist", version, about, max_term_width = 100)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
    /// Color findings in text output: `auto` on a terminal unless NO_COLOR is set.
    #[arg(long, global = true, value_enum, default_value_t = cmd::color::When::Auto)]
    pub color: cmd::color::When,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a pipeline file over transcripts.
    Run(cmd::run::RunArgs),
    /// Report structural defects: invalid lines, dangling parents, unpaired tool calls, …
    Validate(cmd::validate::ValidateArgs),
    /// List projects and sessions under $CLAUDE_CONFIG_DIR (default ~/.claude).
    Ls(cmd::ls::LsArgs),
    /// List, show and edit the turns of one session.
    History(cmd::history::HistoryArgs),
    /// Apply an operations document (replace/delete/insert turns) to one session, all or nothing.
    Apply(cmd::apply::ApplyArgs),
    /// Restore the newest backup of a session that an in-place edit or run left; `--all
    /// --since T` a whole run; `--list` lists them.
    Undo(cmd::undo::UndoArgs),
    /// List or prune cchist's backups (`backups prune --older-than 30d`).
    Backups(cmd::undo::BackupsArgs),
    /// Run as a Claude Code hook (JSON on stdin), or install/uninstall cchist's hooks.
    Hook(cmd::hook::HookArgs),
    /// Make every uuid reference resolve; repair dangling parents, cycles, unpaired tool calls.
    Relink(cmd::relink::RelinkArgs),
    /// Drop progress/bookkeeping records, cap tool output, replace images, drop tool calls.
    DropToolNoise(cmd::drop_tool_noise::DropToolNoiseArgs),
    /// Replace a range of turns or steps (or what a token budget needs) with one summary.
    SummarizeRange(cmd::summarize::SummarizeArgs),
    /// Replace secrets (keys, tokens, passwords, private keys) with [REDACTED:<rule>].
    Redact(cmd::redact::RedactArgs),
    /// Report secrets without changing anything (exit 1 when any is found); with
    /// --pipeline FILE and no paths, validate a pipeline file.
    Check(cmd::check::CheckArgs),
    /// List the secret rules of `redact` and `check`.
    Rules(cmd::rules::RulesArgs),
    /// Print a shell completion script (`cchist completions bash > /etc/bash_completion.d/cchist`).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff; `cchist man > cchist.1 && man ./cchist.1`).
    Man,
}

/// The arguments with each one that starts with `-`, is no flag of its command, and names an
/// existing file or folder turned into a path (`-home-dev-webapp` → `./-home-dev-webapp`):
/// Claude Code names project folders after the working directory, so they start with `-`, and
/// `cchist check -home-dev-webapp` must check that folder, not print help (`-h`) and exit 0.
/// Flags keep their meaning (a known flag wins over a file of that name); everything after
/// `--` is left alone, and so is the value of an option — text (`--text -x` must write `-x`,
/// not `./-x`, into the transcript) — unless the option takes a path, where `./-x` names the
/// same file (`--file -home-dev-webapp/s.jsonl`).
///
/// Such an argument that names nothing and looks like a path (`-home-dev-webapp`: a dash,
/// slash or dot after its first letter) is an error naming it: clap would take it for a
/// cluster of short flags, `-h` first, and print help with exit 0.
pub fn paths_not_flags(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    use clap::CommandFactory;
    // Most command lines have no such argument: leave them without building the command tree
    // (hooks run on every Claude Code event).
    let dashed = |a: &std::ffi::OsString| {
        a.to_str().is_some_and(|s| {
            s.starts_with('-') && s.len() > 1 && (pathlike(s) || std::path::Path::new(s).exists())
        })
    };
    if !args.iter().skip(1).any(dashed) {
        return Ok(args);
    }
    let mut root = Cli::command();
    root.build();
    let mut cur = &root;
    let mut out = Vec::with_capacity(args.len());
    // The option whose value comes next.
    let mut expect_value: Option<ValueOf> = None;
    let mut rest = false;
    let dashed_path =
        |s: &str| s.starts_with('-') && s.len() > 1 && std::path::Path::new(s).exists();
    for (i, a) in args.into_iter().enumerate() {
        let Some(s) = a.to_str().filter(|_| i > 0 && !rest) else {
            out.push(a);
            continue;
        };
        if let Some(value) = expect_value.take() {
            // A path clap would refuse for its leading `-`, naming an existing file or
            // folder, is that path (`--file -home-dev-webapp/x.jsonl`). Any other value stays
            // as typed: it is text, and `./` would change it.
            if value.is_path && !value.hyphen_ok && dashed_path(s) {
                out.push(format!("./{s}").into());
            } else {
                out.push(a);
            }
            continue;
        }
        if s == "--" {
            rest = true;
        } else if s.starts_with('-') && s.len() > 1 {
            match flag_takes_value(cur, s) {
                Some(takes) => expect_value = takes,
                None if dashed_path(s) => {
                    out.push(format!("./{s}").into());
                    continue;
                }
                None if pathlike(s) => {
                    return Err(format!(
                        "`{s}`: no such file or folder, and no flag of `{}` (Claude Code's project folders are under ~/.claude/projects, e.g. ~/.claude/projects/{s}; `cchist ls` lists them)",
                        cur.get_bin_name().unwrap_or(cur.get_name())
                    ));
                }
                None => {}
            }
        } else if let Some(sub) = cur.find_subcommand(s) {
            cur = sub;
        }
        out.push(a);
    }
    Ok(out)
}

/// Whether a `-x…` argument looks like a path rather than mistyped short flags: a single
/// dash, then a dash, slash or dot after its first letter (`-home-dev-webapp`, `-tmp/x`).
fn pathlike(s: &str) -> bool {
    !s.starts_with("--") && s.len() > 2 && s[2..].contains(['-', '/', '.'])
}

/// What the value after an option is.
#[derive(Debug, Clone, Copy)]
struct ValueOf {
    /// Clap takes a value starting with `-` as it is.
    hyphen_ok: bool,
    /// The value is a path (a `PathBuf` field), so `./-x` means what `-x` does.
    is_path: bool,
}

/// Whether `s` is a flag of `cmd` (`Some`), and if so whether the next argument is its value
/// (`Some(Some(what it is))`).
fn flag_takes_value(cmd: &clap::Command, s: &str) -> Option<Option<ValueOf>> {
    let takes = |a: &clap::Arg| {
        a.get_action().takes_values().then(|| ValueOf {
            hyphen_ok: a.is_allow_hyphen_values_set(),
            is_path: matches!(
                a.get_value_hint(),
                clap::ValueHint::AnyPath | clap::ValueHint::FilePath | clap::ValueHint::DirPath
            ),
        })
    };
    if let Some(long) = s.strip_prefix("--") {
        let (name, inline) = match long.split_once('=') {
            Some((n, _)) => (n, true),
            None => (long, false),
        };
        let a = cmd.get_arguments().find(|a| {
            a.get_long() == Some(name) || a.get_all_aliases().is_some_and(|al| al.contains(&name))
        })?;
        return Some(takes(a).filter(|_| !inline));
    }
    // A cluster of short flags: each a known flag, the last one (or one followed by its
    // value) possibly taking a value.
    for (i, c) in s[1..].char_indices() {
        let a = cmd.get_arguments().find(|a| {
            a.get_short() == Some(c) || a.get_all_short_aliases().is_some_and(|al| al.contains(&c))
        })?;
        if let Some(value) = takes(a) {
            // The value is the rest of this argument, or else the next one.
            return Some((i + c.len_utf8() == s.len() - 1).then_some(value));
        }
    }
    Some(None)
}

/// Run the chosen command.
pub fn dispatch(command: Command) -> anyhow::Result<ExitStatus> {
    match command {
        Command::Run(a) => cmd::run::run(a),
        Command::Validate(a) => cmd::validate::run(a),
        Command::Ls(a) => cmd::ls::run(a),
        Command::History(a) => cmd::history::run(a),
        Command::Apply(a) => cmd::apply::run(a),
        Command::Undo(a) => cmd::undo::run(a),
        Command::Backups(a) => cmd::undo::backups(a),
        Command::Hook(a) => cmd::hook::run(a),
        Command::Relink(a) => cmd::relink::run(a),
        Command::DropToolNoise(a) => cmd::drop_tool_noise::run(a),
        Command::SummarizeRange(a) => cmd::summarize::run(a),
        Command::Redact(a) => cmd::redact::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Rules(a) => cmd::rules::run(a),
        Command::Completions { shell } => {
            use clap::CommandFactory;
            // Into memory first: the generator panics on a write error, and a closed pipe
            // (`| head`) is not one.
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "cchist", &mut buf);
            let mut out = std::io::stdout().lock();
            std::io::Write::write_all(&mut out, &buf)?;
            std::io::Write::flush(&mut out)?;
            Ok(ExitStatus::Ok)
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            Ok(ExitStatus::Ok)
        }
    }
}
