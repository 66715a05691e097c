//! `cchist history list|show|delete|replace|insert`: turns of one session.

use std::io::Write;

use anyhow::{bail, Context};
use cchist::error::ExitStatus;
use cchist::history;
use cchist::input::{self, framing};
use cchist::record::Record;
use cchist::session::{Session, Turn};
use clap::{Args, Subcommand};

use super::target::SessionArgs;

/// `cchist history` arguments.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: Action,
}

/// `cchist history` subcommands.
#[derive(Subcommand, Debug)]
pub enum Action {
    /// List the turns: number, first uuid, time, prompt, tool calls, size.
    List(ListArgs),
    /// Print one turn, readable (or its records as JSON).
    Show(ShowArgs),
}

/// `history list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Only the last N turns.
    #[arg(long, value_name = "N")]
    pub recent: Option<usize>,
    /// Print JSON rows.
    #[arg(long)]
    pub json: bool,
}

/// `history show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Turn number (as `history list` prints it) or the uuid of any record of the turn.
    #[arg(short, long, value_name = "N|UUID")]
    pub turn: String,
    /// Print the turn's records as a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: HistoryArgs) -> anyhow::Result<ExitStatus> {
    match args.action {
        Action::List(a) => list(a),
        Action::Show(a) => show(a),
    }
}

fn load(target: &SessionArgs) -> anyhow::Result<(cchist::locate::SessionFile, input::InputFile)> {
    let s = target.resolve()?;
    let f = input::open(&s.path)?;
    Ok((s, f))
}

fn list(a: ListArgs) -> anyhow::Result<ExitStatus> {
    let (_, f) = load(&a.target)?;
    let mut session = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect());
    let mut rows = history::rows(&mut session);
    if let Some(n) = a.recent {
        rows.drain(..rows.len().saturating_sub(n));
    }
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitStatus::Ok);
    }
    for r in rows {
        writeln!(
            out,
            "{:>4}  {}  {}  {:>3} tools {:>8} B  {}",
            r.number,
            r.uuid,
            r.time.as_deref().unwrap_or("?"),
            r.tool_calls,
            r.bytes,
            r.prompt
        )?;
    }
    Ok(ExitStatus::Ok)
}

/// Find a turn by number or by the uuid of any of its records.
pub fn find_turn<'t>(s: &Session<'_>, turns: &'t [Turn], key: &str) -> anyhow::Result<&'t Turn> {
    if let Ok(n) = key.parse::<usize>() {
        return turns
            .iter()
            .find(|t| t.number == n)
            .with_context(|| format!("no turn {n}: the session has {} turns", turns.len()));
    }
    let Some(&idx) = s.by_uuid.get(key) else {
        bail!("no record with uuid {key} in this session");
    };
    turns
        .iter()
        .find(|t| t.records.contains(&idx))
        .with_context(|| format!("record {key} belongs to no turn"))
}

fn show(a: ShowArgs) -> anyhow::Result<ExitStatus> {
    let (_, f) = load(&a.target)?;
    let mut session = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect());
    let turns = session.turns();
    let turn = find_turn(&session, &turns, &a.turn)?.clone();
    let mut out = std::io::stdout().lock();
    if a.json {
        let mut values = Vec::new();
        for &i in &turn.records {
            if let Ok(v) = session.records[i].value() {
                values.push(v.clone());
            }
        }
        serde_json::to_writer_pretty(&mut out, &values)?;
        writeln!(out)?;
    } else {
        out.write_all(history::render_turn(&mut session, &turn).as_bytes())?;
    }
    Ok(ExitStatus::Ok)
}
