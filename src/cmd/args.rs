//! The flag groups several commands share: inputs and output mode, report format.

use std::path::PathBuf;

use cchist::engine::runner::Mode;
use clap::{Args, ValueEnum};

/// `--propagate`: how far a secret found in one file reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PropagateArg {
    /// The files of one session.
    Session,
    /// Every session of one project folder.
    Project,
}

impl From<PropagateArg> for cchist::engine::runner::Propagate {
    fn from(p: PropagateArg) -> Self {
        match p {
            PropagateArg::Session => cchist::engine::runner::Propagate::Session,
            PropagateArg::Project => cchist::engine::runner::Propagate::Project,
        }
    }
}

/// Input and output options shared by every transforming command.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("writes").args(["in_place", "out_dir"])))]
pub struct IoArgs {
    /// Transcript files or folders (walked for *.jsonl). None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Replace each file atomically (temp file, fsync, rename; mode and mtime kept).
    #[arg(short = 'i', long, conflicts_with_all = ["out_dir", "dry_run"])]
    pub in_place: bool,
    /// With --in-place: keep the original (with --out-dir: a file there that is replaced).
    /// Alone: as <file>.cchist-bak.<time>, which `cchist undo` restores (also for a whole run:
    /// `undo --all --since T`) and `cchist backups prune` removes; with `=SUFFIX`
    /// (--backup=.bak): as <file><SUFFIX>. The backups keep the originals, secrets included;
    /// a file that is itself a backup gets none, and older backups are left as they are (a
    /// run without --backup redacts them with their session).
    // A value only with `=`: `--backup ~/.claude/projects` is the flag and a path, never a
    // suffix.
    #[arg(
        long,
        value_name = "SUFFIX",
        requires = "writes",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "",
        value_parser = backup_suffix
    )]
    pub backup: Option<String>,
    /// With --in-place: go ahead with a lossy run (one that drops or caps: share, compact,
    /// drop-tool-noise, summarize-range) over several sessions without --backup. With
    /// --out-dir: replace the files already there (without it, or --backup, such a run is
    /// refused).
    #[arg(short = 'y', long, requires = "writes")]
    pub yes: bool,
    /// With --in-place: set the modification time to now instead of keeping it.
    #[arg(long, requires = "in_place")]
    pub touch: bool,
    /// Write outputs under DIR, mirroring paths relative to each argument.
    #[arg(long, value_name = "DIR", conflicts_with = "dry_run")]
    pub out_dir: Option<PathBuf>,
    /// Write nothing; print what would change per file.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Only walk files matching this glob (relative to the folder argument); repeatable.
    #[arg(long, value_name = "GLOB", allow_hyphen_values = true)]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB", allow_hyphen_values = true)]
    pub exclude: Vec<String>,
    /// Print nothing but errors on stderr: no progress bar, notes or summary (the
    /// transcript on stdout and a `--json` report still are).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Worker threads for multiple files (default: all cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// How far a secret found in one file is replaced in the others: over the files of its
    /// session (transcript, sub-agents, tool results, metadata), or over every session of
    /// its project.
    #[arg(long, value_name = "SCOPE", value_enum, default_value_t = PropagateArg::Session)]
    pub propagate: PropagateArg,
    /// Report format: `json` prints the per-file report as JSON on stdout (with --dry-run,
    /// --in-place or --out-dir).
    #[command(flatten)]
    pub format: FormatArgs,
    /// Write nothing; print what would change per record (dropped, changed, added, secrets
    /// redacted: rule ids only, never a value) as text, or JSON (`--diff=json`, or with
    /// --format json). Works with --in-place, --out-dir, --all and --session alike.
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true, default_missing_value = "text", value_enum)]
    pub diff: Option<Format>,
    /// Process everything under the Claude Code config folder ($CLAUDE_CONFIG_DIR, default
    /// ~/.claude): every session and sub-agent transcript, the tool-results/*.txt files beside
    /// them, and history.jsonl. With --in-place, live sessions are skipped unless --force.
    #[arg(long)]
    pub all: bool,
    /// With --in-place: also write sessions that look live (written in the last minute or
    /// open in a running claude). Without it such files are refused (skipped with --all).
    #[arg(long)]
    pub force: bool,
    /// With --in-place: replace a file that has other hard links anyway. The other names keep
    /// the old content (secrets included); without this flag such a file is refused.
    #[arg(long, requires = "in_place")]
    pub break_hard_links: bool,
    /// Process this session (id or unique prefix, under $CLAUDE_CONFIG_DIR/projects).
    #[arg(short = 's', long, value_name = "ID", add = clap_complete::ArgValueCandidates::new(crate::cmd::complete::sessions))]
    pub session: Option<String>,
    /// Write the result as a new session beside the original (fresh session id, companion
    /// folder copied), leave the original untouched, and print `claude --resume <new id>`.
    #[arg(long, conflicts_with_all = ["in_place", "out_dir", "dry_run", "all"])]
    pub fork: bool,
}

/// Which transcripts a read-only command scans beside its paths: a session, all of them, and
/// glob filters for folder walks.
#[derive(Args, Debug, Clone)]
pub struct ScanArgs {
    /// Also this session (id or unique prefix, under $CLAUDE_CONFIG_DIR/projects).
    #[arg(short = 's', long, value_name = "ID", add = clap_complete::ArgValueCandidates::new(crate::cmd::complete::sessions))]
    pub session: Option<String>,
    /// Everything under the Claude Code config folder ($CLAUDE_CONFIG_DIR, default ~/.claude):
    /// every project's transcripts and history.jsonl.
    #[arg(long)]
    pub all: bool,
    /// Only walk files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB", allow_hyphen_values = true)]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB", allow_hyphen_values = true)]
    pub exclude: Vec<String>,
}

/// `--backup`'s value: empty (cchist's undo-able naming) or a suffix such as `.bak` or `~`; a
/// path taken for a suffix by mistake (`--backup projects/`) is refused.
fn backup_suffix(s: &str) -> Result<String, String> {
    if s.is_empty()
        || (!s.contains('/')
            && (s.starts_with('.')
                || s.starts_with('~')
                || s.starts_with('-')
                || s.starts_with('_')))
    {
        Ok(s.to_string())
    } else {
        Err(format!(
            "`{s}` is not a backup suffix (write one such as .bak or ~); for a backup `cchist undo` restores, give --backup without a value"
        ))
    }
}

/// A point in time for `--since`: a date or date and time (`2026-12-01`, `2026-12-01 10:30`,
/// `2026-12-01 10:30:15` as `undo --list` prints it, RFC 3339 such as `2026-12-01T10:30:00Z`;
/// UTC unless it carries an offset) or an age (`30m`, `12h`, `7d`, `2w`). Returned as a stamp
/// in the form of [`cchist::io::clock::file_stamp`], which compares as a string with the
/// stamps of backup names. The time of day counts: `undo --all --since "2026-12-01 10:30"`
/// must not undo the edits of that morning.
pub fn parse_when(s: &str) -> Result<String, String> {
    let t = s.trim();
    let forms = "write a date and time (2026-12-01, 2026-12-01 10:30, 2026-12-01T10:30:00Z; UTC, as `undo --list` prints them) or an age (30m, 12h, 7d, 2w)";
    if let Some(unit) = t
        .chars()
        .last()
        .filter(|c| c.is_ascii_alphabetic() && !matches!(c, 'Z' | 'z'))
    {
        let secs = match unit {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => 0,
        };
        let n = t[..t.len() - 1].parse::<u64>().ok().filter(|_| secs > 0);
        let Some(n) = n else {
            return Err(format!("`{s}` is not a time: {forms}"));
        };
        let at = std::time::SystemTime::now()
            .checked_sub(std::time::Duration::from_secs(n.saturating_mul(secs)))
            .unwrap_or(std::time::UNIX_EPOCH);
        return Ok(cchist::io::clock::file_stamp(at));
    }
    let at = cchist::io::clock::parse(t)
        .map_err(|why| format!("`{s}` is not a valid time ({why}): {forms}"))?;
    Ok(cchist::io::clock::file_stamp(at))
}

impl IoArgs {
    /// Whether the report is JSON (`--format json` or `--json`).
    pub fn json(&self) -> bool {
        self.format.json()
    }

    /// The output mode the arguments ask for.
    pub fn mode(&self) -> Mode {
        let backup = self.backup.as_ref().map(|b| {
            if b.is_empty() {
                run_backup_suffix().to_string()
            } else {
                b.clone()
            }
        });
        if self.dry_run {
            Mode::DryRun
        } else if self.in_place {
            Mode::InPlace {
                backup,
                touch: self.touch,
                break_links: self.break_hard_links,
            }
        } else if let Some(d) = &self.out_dir {
            Mode::OutDir {
                dir: d.clone(),
                backup,
            }
        } else {
            Mode::Stdout
        }
    }
}

/// The suffix of this run's undo-able backups: `.cchist-bak.<start time>`, one for every file
/// of the run, so `undo --all --since T` finds them together.
pub fn run_backup_suffix() -> &'static str {
    static SUFFIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SUFFIX.get_or_init(|| {
        cchist::io::backup::suffix_at(
            cchist::io::backup::BACKUP_MARK,
            std::time::SystemTime::now(),
        )
    })
}

/// `--format text|json`, with `--json` as its alias: the same two flags on every command.
#[derive(Args, Debug, Clone, Default)]
pub struct FormatArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The same as --format json.
    #[arg(long)]
    pub json: bool,
}

impl FormatArgs {
    /// The format asked for (`--json` wins).
    pub fn get(&self) -> Format {
        if self.json {
            Format::Json
        } else {
            self.format
        }
    }
    /// Whether JSON was asked for.
    pub fn json(&self) -> bool {
        self.get() == Format::Json
    }
}

/// Report format.
#[derive(Default, ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Human-readable lines `file:line: rule: message`.
    #[default]
    Text,
    /// One JSON document.
    Json,
}
