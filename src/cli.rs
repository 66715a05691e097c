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
    /// Continue another agent's conversation (Codex, Gemini CLI, aider, Messages API) in
    /// Claude Code: a new session, redacted, with its tool calls on Claude Code's tools.
    Import(cmd::import::ImportArgs),
    /// List projects and sessions under $CLAUDE_CONFIG_DIR (default ~/.claude).
    Ls(cmd::ls::LsArgs),
    /// How full a session's context is, when Claude Code will compact it, and what fills it.
    Context(cmd::context::ContextArgs),
    /// One status line for Claude Code's statusLine (JSON on stdin); `statusline install`.
    Statusline(cmd::statusline::StatuslineArgs),
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
    /// List or print the compaction summaries the PostCompact hook saved as project memory.
    Memory(cmd::memory::MemoryArgs),
    /// Make every uuid reference resolve; repair dangling parents, cycles, unpaired tool calls.
    Relink(cmd::relink::RelinkArgs),
    /// Fix what Claude Code breaks: replayed history after a second /compact, snapshot-id collisions, retries on progress rows.
    Repair(cmd::repair::RepairArgs),
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
    /// Print a man page (roff; `cchist man > cchist.1 && man ./cchist.1`, `cchist man run`
    /// for cchist-run(1)), or write them all with --out-dir.
    Man {
        /// The subcommand whose page to print (cchist-SUBCOMMAND(1)); none: cchist(1).
        subcommand: Option<String>,
        /// Write cchist.1 and every cchist-SUBCOMMAND.1 into DIR instead.
        #[arg(long, value_name = "DIR", conflicts_with = "subcommand")]
        out_dir: Option<std::path::PathBuf>,
    },
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
        Command::Import(a) => cmd::import::run(a),
        Command::Ls(a) => cmd::ls::run(a),
        Command::Context(a) => cmd::context::run(a),
        Command::Statusline(a) => cmd::statusline::run(a),
        Command::History(a) => cmd::history::run(a),
        Command::Apply(a) => cmd::apply::run(a),
        Command::Undo(a) => cmd::undo::run(a),
        Command::Backups(a) => cmd::undo::backups(a),
        Command::Hook(a) => cmd::hook::run(a),
        Command::Memory(a) => cmd::memory::run(a),
        Command::Relink(a) => cmd::relink::run(a),
        Command::Repair(a) => cmd::repair::run(a),
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
        Command::Man {
            subcommand,
            out_dir,
        } => man(subcommand.as_deref(), out_dir.as_deref()),
    }
}

/// `cchist man`: cchist(1), a cchist-SUBCOMMAND(1) the top page refers to, or all of them
/// into a folder; each with EXIT STATUS, ENVIRONMENT, FILES and EXAMPLES.
fn man(sub: Option<&str>, out_dir: Option<&std::path::Path>) -> anyhow::Result<ExitStatus> {
    use clap::CommandFactory;
    let mut root = Cli::command();
    root.build();
    let page = |name: Option<&str>| -> anyhow::Result<Vec<u8>> {
        let cmd = match name {
            None => root.clone(),
            Some(n) => {
                let Some(c) = root.find_subcommand(n) else {
                    let names: Vec<&str> = root.get_subcommands().map(|c| c.get_name()).collect();
                    anyhow::bail!(
                        "no subcommand `{n}`; man pages exist for: {}",
                        names.join(", ")
                    );
                };
                // clap names are `&'static str` (without its `string` feature): one short
                // string per page, in a process that prints it and exits.
                let title: &'static str = Box::leak(format!("cchist-{n}").into_boxed_str());
                c.clone()
                    .name(title)
                    .bin_name(format!("cchist {n}"))
                    .version(env!("CARGO_PKG_VERSION"))
            }
        };
        let m = clap_mangen::Man::new(cmd.clone());
        let mut buf = Vec::new();
        m.render_title(&mut buf)?;
        m.render_name_section(&mut buf)?;
        m.render_synopsis_section(&mut buf)?;
        m.render_description_section(&mut buf)?;
        if cmd.get_arguments().any(|a| !a.is_hide_set()) {
            m.render_options_section(&mut buf)?;
        }
        if cmd.has_subcommands() {
            m.render_subcommands_section(&mut buf)?;
        }
        buf.extend_from_slice(man_sections(name).as_bytes());
        m.render_version_section(&mut buf)?;
        Ok(buf)
    };
    if let Some(dir) = out_dir {
        std::fs::create_dir_all(dir)?;
        let mut names: Vec<Option<String>> = vec![None];
        names.extend(
            root.get_subcommands()
                .map(|c| Some(c.get_name().to_string())),
        );
        for n in &names {
            let file = match n {
                None => dir.join("cchist.1"),
                Some(n) => dir.join(format!("cchist-{n}.1")),
            };
            // Replaced atomically: a link there is replaced, never written through.
            let attrs = cchist::io::replace::Attrs::mode(0o644);
            if cchist::io::replace::write_file_over_link(&file, &page(n.as_deref())?, &attrs)? {
                eprintln!(
                    "cchist: note: {} was a symbolic link; it was replaced by the page (what it pointed to is left as it was)",
                    cchist::findings::report::printable_text(&file.display().to_string())
                );
            }
        }
        eprintln!(
            "cchist: wrote {} man pages to {} (`man -l {}/cchist.1`; or put them in a man1 folder on MANPATH)",
            names.len(),
            cchist::findings::report::printable_text(&dir.display().to_string()),
            cchist::findings::report::printable_text(&dir.display().to_string())
        );
        return Ok(ExitStatus::Ok);
    }
    let buf = page(sub)?;
    let mut out = std::io::stdout().lock();
    std::io::Write::write_all(&mut out, &buf)?;
    Ok(ExitStatus::Ok)
}

/// The sections clap_mangen does not write: EXIT STATUS, ENVIRONMENT, FILES, EXAMPLES, SEE
/// ALSO (roff).
fn man_sections(sub: Option<&str>) -> String {
    let examples: &[&str] = match sub {
        None | Some("check") => &[
            "cchist check",
            "cchist check \\-\\-all \\-\\-format sarif > cchist.sarif",
            "cchist check \\-\\-write\\-baseline baseline.json ~/.claude/projects",
        ],
        Some("redact") => &[
            "cchist redact \\-\\-in\\-place \\-\\-backup ~/.claude/projects",
            "cchist redact \\-\\-diff \\-s 5b1f",
        ],
        Some("run") => &[
            "cchist run \\-p share \\-\\-dry\\-run \\-\\-all",
            "cchist run \\-p scrub \\-\\-fork \\-s 5b1f",
        ],
        Some("undo") => &[
            "cchist undo \\-\\-list",
            "cchist undo \\-\\-all \\-\\-since 1h",
        ],
        Some("ls") => &["cchist ls \\-\\-sort size \\-l 20"],
        Some("hook") => &["cchist hook install", "cchist hook status \\-\\-json"],
        Some("validate") => &["cchist validate \\-\\-all"],
        Some("history") => &["cchist history list \\-s 5b1f"],
        Some(_) => &[],
    };
    let mut s = String::from(concat!(
        ".SH \"EXIT STATUS\"\n",
        ".TP\n0\nsuccess; for check and validate, nothing found\n",
        ".TP\n1\nfindings (check, validate)\n",
        ".TP\n2\nerror: bad arguments, unreadable or empty input, a failed file in a bulk run, Ctrl\\-C\n",
        ".SH ENVIRONMENT\n",
        ".TP\nCLAUDE_CONFIG_DIR\nClaude Code's config folder (default ~/.claude); it must exist\n",
        ".TP\nCCHIST_REDACT_KEY\nkey for fingerprints and pseudonyms (baselines keyed by it travel between machines)\n",
        ".TP\nCCHIST_LOCK_WAIT\nseconds an in\\-place write waits for another cchist (default 10)\n",
        ".TP\nNO_COLOR\nno color in text output\n",
        ".TP\nXDG_CONFIG_HOME, HOME\nwhere the per\\-machine key lives\n",
        ".SH FILES\n",
        ".TP\n$CLAUDE_CONFIG_DIR/projects/<folder>/<id>.jsonl\nsession transcripts, with <id>/ (sub\\-agents, tool\\-results) beside them\n",
        ".TP\n<file>.cchist\\-bak.<time>\nbackups that cchist undo restores and cchist backups prune removes\n",
        ".TP\n$CLAUDE_CONFIG_DIR/settings.json, ./.claude/settings.json\nwhere cchist hook install adds its hooks\n",
        ".TP\n$CLAUDE_CONFIG_DIR/cchist/hook.log\none line per hook run\n",
        ".TP\n~/.config/cchist/redact.key, <baseline>.key\nfingerprint keys: per machine, and beside a baseline\n",
    ));
    if !examples.is_empty() {
        s.push_str(".SH EXAMPLES\n");
        for e in examples {
            s.push_str(&format!(".PP\n.nf\n{e}\n.fi\n"));
        }
    }
    s.push_str(".SH \"SEE ALSO\"\ncchist(1), and cchist\\-SUBCOMMAND(1) for each subcommand (cchist man \\-\\-out\\-dir DIR writes them all)\n");
    s
}
