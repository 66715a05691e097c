//! `cchist undo`: restore the newest backup an in-place edit or run left (`history` edits,
//! `apply`, and `--in-place --backup` runs); `--all --since T` restores a whole bulk run;
//! `--list` lists the backups. `cchist backups prune --older-than 30d` removes old ones.

use super::print::{safe, say, shown_name};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::bail;
use cchist::claude::layout::{self, SessionFile};
use cchist::error::ExitStatus;
use cchist::io::backup::{BACKUP_MARK, UNDONE_MARK};
use cchist::io::output::is_temp_name;
use clap::{Args, Subcommand};
use serde::Serialize;

use super::args::{parse_when, FormatArgs};
use super::target::SessionArgs;

/// `cchist undo` arguments.
#[derive(Args, Debug)]
pub struct UndoArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Restore even when the session looks live, or changed since the edit (what it replaces
    /// is kept as <file>.cchist-undone.<time>).
    #[arg(long)]
    pub force: bool,
    /// List the backups undo can restore (newest first) instead of restoring.
    #[arg(long, conflicts_with = "all")]
    pub list: bool,
    /// Restore every file under the config folder whose newest backup is from --since on
    /// (a bulk `--in-place --backup` run, or several edits).
    #[arg(long, requires = "since")]
    pub all: bool,
    /// With --all or --list: only backups made at or after this time: a date and time as
    /// `--list` prints it (2026-12-01 10:30:15, UTC; 2026-12-01 10:30, RFC 3339 with an
    /// offset) or an age such as 2h, 7d.
    #[arg(long, value_name = "TIME", value_parser = parse_when)]
    pub since: Option<String>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// `cchist backups` arguments.
#[derive(Args, Debug)]
pub struct BackupsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: BackupsAction,
}

/// `cchist backups` subcommands.
#[derive(Subcommand, Debug)]
pub enum BackupsAction {
    /// List cchist's backups under the config folder (those `undo --list` shows), what
    /// forced undos replaced, and copies beside a session (`--backup=SUFFIX`).
    List {
        /// Only backups made at or after this time.
        #[arg(long, value_name = "TIME", value_parser = parse_when)]
        since: Option<String>,
        #[command(flatten)]
        format: FormatArgs,
    },
    /// Remove backups older than an age (`30d`, `12h`, `2w`) or a date.
    Prune {
        /// Remove backups made before this long ago (or before this date).
        #[arg(long, value_name = "AGE", value_parser = parse_when)]
        older_than: String,
        /// Show what would be removed; remove nothing.
        #[arg(short = 'n', long)]
        dry_run: bool,
        #[command(flatten)]
        format: FormatArgs,
    },
}

/// What a backup is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// `<file>.cchist-bak.<time>`: what `undo` restores.
    Undo,
    /// `<file>.cchist-undone.<time>`: what a forced `undo` replaced.
    Undone,
    /// `<file><SUFFIX>`: what `--backup=SUFFIX` (or anything else) copied beside it.
    Copy,
}

/// One backup or copy of a file under the config folder.
#[derive(Debug, Serialize)]
struct Backup {
    /// The file it restores.
    file: String,
    /// The backup itself.
    backup: String,
    /// What it is.
    kind: Kind,
    /// When it was made (UTC, from its name; a copy's from its modification time).
    time: String,
    /// Its size in bytes.
    bytes: u64,
    /// Its stamp, as in its name (sorts in time order).
    #[serde(skip)]
    stamp: String,
}

/// Every cchist backup under the config folder: the projects (sessions and their companion
/// files) and history.jsonl's.
fn all_backups() -> anyhow::Result<Vec<Backup>> {
    let root = layout::config_root()?;
    let mut out = Vec::new();
    walk(&layout::projects_dir(&root), &mut out, 0);
    // At the root only history.jsonl is a transcript: the backups `hook install` leaves of
    // settings.json are no session's, and `undo --all` restoring one would undo an install.
    let mut at_root = Vec::new();
    collect_in(&root, &mut at_root);
    let history = root.join("history.jsonl").display().to_string();
    out.extend(at_root.into_iter().filter(|b| b.file == history));
    out.sort_by(|a, b| b.stamp.cmp(&a.stamp).then_with(|| a.file.cmp(&b.file)));
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<Backup>, depth: usize) {
    if depth > 6 {
        return;
    }
    collect_in(dir, out);
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&e.path(), out, depth + 1);
        }
    }
}

fn collect_in(dir: &Path, out: &mut Vec<Backup>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        if is_temp_name(&name) || name.starts_with('.') {
            continue; // temp files and undo's `.written` records
        }
        let (main, kind, stamp) = if let Some((main, stamp)) = name.split_once(BACKUP_MARK) {
            (main.to_string(), Kind::Undo, stamp.to_string())
        } else if let Some((main, stamp)) = name.split_once(UNDONE_MARK) {
            (main.to_string(), Kind::Undone, stamp.to_string())
        } else {
            // `<x>.jsonl<SUFFIX>` beside `<x>.jsonl`: a copy holding what it held then.
            let Some(at) = name.find(".jsonl").map(|i| i + ".jsonl".len()) else {
                continue;
            };
            let main = &name[..at];
            if at == name.len() || !dir.join(main).is_file() {
                continue;
            }
            let Ok(t) = e.metadata().and_then(|m| m.modified()) else {
                continue;
            };
            (
                main.to_string(),
                Kind::Copy,
                cchist::io::clock::file_stamp(t),
            )
        };
        let stamp = stamp.split('.').next().unwrap_or(&stamp).to_string();
        out.push(Backup {
            file: dir.join(main).display().to_string(),
            backup: e.path().display().to_string(),
            kind,
            time: stamp_time(&stamp),
            bytes: e.metadata().map(|m| m.len()).unwrap_or(0),
            stamp,
        });
    }
}

/// `20261201T103123123Z` → `2026-12-01 10:31:23`.
fn stamp_time(s: &str) -> String {
    let d: Vec<char> = s.chars().filter(char::is_ascii_digit).collect();
    if d.len() < 14 {
        return s.to_string();
    }
    let g = |a: usize, b: usize| d[a..b].iter().collect::<String>();
    format!(
        "{}-{}-{} {}:{}:{}",
        g(0, 4),
        g(4, 6),
        g(6, 8),
        g(8, 10),
        g(10, 12),
        g(12, 14)
    )
}

fn stamp_of(backup: &Path) -> String {
    let name = backup
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.split_once(BACKUP_MARK)
        .map(|(_, s)| s.split('.').next().unwrap_or(s).to_string())
        .unwrap_or_default()
}

/// List the backups: those undo restores, or (`every`) every backup and copy.
fn list(since: Option<&str>, format: &FormatArgs, every: bool) -> anyhow::Result<ExitStatus> {
    let mut all = all_backups()?;
    if let Some(t) = since {
        all.retain(|b| b.stamp.as_str() >= t);
    }
    if !every {
        all.retain(|b| b.kind == Kind::Undo);
    }
    let mut out = std::io::stdout().lock();
    if format.json() {
        // One time format in every JSON document: RFC 3339 (the text keeps `undo --list`'s
        // UTC `2026-12-01 10:31:23`, which `--since` takes back). Names as every report shows
        // them ([`shown_name`]): a folder or a file may be named after a token.
        let mut doc = serde_json::to_value(&all)?;
        for b in doc.as_array_mut().into_iter().flatten() {
            for key in ["file", "backup"] {
                if let Some(name) = b[key].as_str() {
                    b[key] = serde_json::json!(shown_name(name));
                }
            }
            if let Some(t) = b["time"].as_str().filter(|t| t.len() == 19) {
                b["time"] = serde_json::json!(format!("{}Z", t.replacen(' ', "T", 1)));
            }
        }
        serde_json::to_writer_pretty(&mut out, &doc)?;
        writeln!(out)?;
        return Ok(ExitStatus::Ok);
    }
    if all.is_empty() {
        say!("cchist: no cchist backups under the config folder");
        return Ok(ExitStatus::Ok);
    }
    for b in &all {
        let what = match b.kind {
            Kind::Undo => String::new(),
            Kind::Undone => format!(
                "  (replaced by a forced undo: {})",
                safe(&shown_name(&b.backup))
            ),
            Kind::Copy => format!("  (copy: {})", safe(&shown_name(&b.backup))),
        };
        writeln!(
            out,
            "{}  {:>10}  {}{what}",
            b.time,
            super::print::human_bytes(b.bytes),
            safe(&shown_name(&b.file))
        )?;
    }
    say!(
        "cchist: {}; `cchist undo --all --since TIME` restores a run, `cchist backups prune --older-than 30d` removes old ones",
        super::print::count(all.len(), "backup", "backups")
    );
    Ok(ExitStatus::Ok)
}

pub fn run(a: UndoArgs) -> anyhow::Result<ExitStatus> {
    if a.list {
        return list(a.since.as_deref(), &a.format, false);
    }
    if a.all {
        return undo_all(a.since.as_deref().unwrap_or(""), a.force);
    }
    let s = a.target.resolve()?;
    undo_session(&s, a.force)
}

/// Undo the newest edit of the session `s`: every file of it (the transcript, then its
/// companions, renamed ones renamed back) whose newest backup that edit left — one run
/// stamps all its backups alike. Without any backup, the transcript's error says so.
fn undo_session(s: &SessionFile, force: bool) -> anyhow::Result<ExitStatus> {
    let newest = |p: &Path| cchist::io::backup::backups(p).pop().map(|b| stamp_of(&b));
    let companions: Vec<(PathBuf, String)> = s
        .members()
        .into_iter()
        .filter(|m| m.part != layout::Part::Backup && m.path != s.path)
        .filter_map(|m| newest(&m.path).map(|t| (m.path, t)))
        .collect();
    let main = newest(&s.path);
    let Some(stamp) = companions
        .iter()
        .map(|(_, t)| t.clone())
        .chain(main.clone())
        .max()
    else {
        cchist::claude::rewrite::undo(s, force)?;
        return Ok(ExitStatus::Ok);
    };
    if main.as_ref() == Some(&stamp) {
        let used = cchist::claude::rewrite::undo(s, force)?;
        say!("{}: restored from {}", s.path.display(), used.display());
    }
    let mut status = ExitStatus::Ok;
    for (path, _) in companions.iter().filter(|(_, t)| *t == stamp) {
        match cchist::claude::rewrite::undo(&SessionFile::from_path(path), force) {
            Ok(used) => say!(
                "{}: restored from {}",
                shown_name(&path.display().to_string()),
                shown_name(&used.display().to_string())
            ),
            Err(e) => {
                status = ExitStatus::Error;
                say!("cchist: error: {}", shown_name(&e.to_string()));
            }
        }
    }
    Ok(status)
}

/// Restore every file whose newest backup is from `since` on.
fn undo_all(since: &str, force: bool) -> anyhow::Result<ExitStatus> {
    let mut files: Vec<PathBuf> = all_backups()?
        .into_iter()
        .filter(|b| b.kind == Kind::Undo && b.stamp.as_str() >= since)
        .map(|b| PathBuf::from(b.file))
        .collect();
    files.sort();
    files.dedup();
    if files.is_empty() {
        bail!("no cchist backup made since the time given (`cchist undo --list` lists them)");
    }
    let mut status = ExitStatus::Ok;
    let mut restored = 0;
    for f in &files {
        // Only the newest backup of each file, and only when it is from `since` on.
        let newest = cchist::io::backup::backups(f).pop();
        if newest
            .as_deref()
            .is_none_or(|b| stamp_of(b).as_str() < since)
        {
            continue;
        }
        match cchist::claude::rewrite::undo(&SessionFile::from_path(f), force) {
            Ok(used) => {
                restored += 1;
                say!("{}: restored from {}", f.display(), used.display());
            }
            Err(e) => {
                status = ExitStatus::Error;
                say!("cchist: error: {e}");
            }
        }
    }
    say!(
        "cchist: {} restored",
        super::print::count(restored, "file", "files")
    );
    Ok(status)
}

/// `cchist backups`.
pub fn backups(a: BackupsArgs) -> anyhow::Result<ExitStatus> {
    match a.action {
        BackupsAction::List { since, format } => list(since.as_deref(), &format, true),
        BackupsAction::Prune {
            older_than,
            dry_run,
            format,
        } => {
            let (mut n, mut bytes, mut copies) = (0, 0, 0);
            let mut removed = Vec::new();
            for b in all_backups()?.into_iter().filter(|b| b.stamp < older_than) {
                // A copy's name carries no cchist stamp: it may be one the user made.
                if b.kind == Kind::Copy {
                    copies += 1;
                    continue;
                }
                n += 1;
                bytes += b.bytes;
                if dry_run {
                    if !format.json() {
                        println!("{}", safe(&shown_name(&b.backup)));
                    }
                    removed.push(shown_name(&b.backup));
                    continue;
                }
                let p = Path::new(&b.backup);
                std::fs::remove_file(p)
                    .map_err(|e| anyhow::anyhow!("removing {}: {e}", shown_name(&b.backup)))?;
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                let _ = std::fs::remove_file(p.with_file_name(format!(".{name}.written")));
                let _ = std::fs::remove_file(p.with_file_name(format!(".{name}.created")));
                let _ = std::fs::remove_file(p.with_file_name(format!(".{name}.renamed")));
                removed.push(shown_name(&b.backup));
            }
            if format.json() {
                let mut out = std::io::stdout().lock();
                serde_json::to_writer_pretty(
                    &mut out,
                    &serde_json::json!({
                        "dry_run": dry_run,
                        "removed": removed,
                        "bytes": bytes,
                        "copies_left": copies,
                    }),
                )?;
                writeln!(out)?;
                return Ok(ExitStatus::Ok);
            }
            let verb = if dry_run { "would remove" } else { "removed" };
            say!(
                "cchist: {verb} {}, {}",
                super::print::count(n, "backup", "backups"),
                super::print::human_bytes(bytes)
            );
            if copies > 0 {
                eprintln!(
                    "cchist: left {copies} older copies (`--backup=SUFFIX` names such as .bak, which carry no cchist stamp and may be yours): `cchist backups list` lists them; remove them by hand"
                );
            }
            Ok(ExitStatus::Ok)
        }
    }
}
