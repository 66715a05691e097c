//! `cchist history list|show|delete|replace|insert`: turns of one session.

use std::io::Write;

use anyhow::{bail, Context};
use cchist::error::ExitStatus;
use cchist::io::{framing, input};
use cchist::transcript::record::Record;
use cchist::transcript::session::{Session, Turn};
use cchist::transcript::turns;
use clap::{Args, Subcommand};

use cchist::stages::edit::{NewMessage, Op, Role, TurnRef};

use super::edit::{run_ops, WriteArgs};
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
    /// Delete whole turns (then relink, so the rest of the chain holds).
    Delete(DeleteArgs),
    /// Replace consecutive turns with one message.
    Replace(ReplaceArgs),
    /// Insert a message after a turn.
    Insert(InsertArgs),
}

/// `history delete`.
#[derive(Args, Debug)]
pub struct DeleteArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Turns: numbers, ranges and lists (`3`, `3-7`, `3..7`, `3,5-7`) or uuids of any record
    /// of a turn.
    #[arg(short, long, value_name = "LIST")]
    pub turns: String,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `history replace`.
#[derive(Args, Debug)]
pub struct ReplaceArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Consecutive turns: `2-4`, `2..4`, `3` (the grammar of `delete --turns`) or uuids.
    #[arg(short, long, value_name = "LIST")]
    pub turns: String,
    /// The text of the replacement message.
    #[arg(long = "text", visible_alias = "with", value_name = "TEXT")]
    pub with: String,
    /// Who speaks in the replacement.
    #[arg(long, value_enum, default_value_t = RoleArg::User)]
    pub role: RoleArg,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `history insert`.
#[derive(Args, Debug)]
pub struct InsertArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// The turn after which the message goes: number or uuid of any of its records.
    #[arg(long, value_name = "N|UUID")]
    pub after: String,
    /// The text of the new message.
    #[arg(long = "text", visible_alias = "content", value_name = "TEXT")]
    pub content: String,
    /// Who speaks.
    #[arg(long, value_enum, default_value_t = RoleArg::User)]
    pub role: RoleArg,
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `--role`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleArg {
    /// A user message.
    User,
    /// An assistant message.
    Assistant,
}

impl From<RoleArg> for Role {
    fn from(r: RoleArg) -> Role {
        match r {
            RoleArg::User => Role::User,
            RoleArg::Assistant => Role::Assistant,
        }
    }
}

/// Parse a turn list in the one grammar of [`turns::parse_list`] (`3`, `3-7`, `3..7`, `5..`,
/// lists such as `3,5-7`), where an item may also be the uuid of any record of a turn. A range
/// is checked against the session's `turns` before it is expanded
/// (`1-18446744073709551615` must not allocate).
pub fn parse_turn_list(s: &str, turns: usize) -> anyhow::Result<Vec<TurnRef>> {
    let mut out = Vec::new();
    for item in turns::parse_list(s, "turn", |u| Some(u.to_string()))? {
        match item {
            Ok(span) => {
                let to = span.to.unwrap_or(turns);
                if to > turns {
                    bail!("turn {to}: the session has {turns} turns (see `cchist history list`)");
                }
                out.extend((span.from..=to).map(TurnRef::Number));
            }
            Err(uuid) => out.push(TurnRef::Uuid(uuid)),
        }
    }
    if out.is_empty() {
        bail!("no turns given");
    }
    Ok(out)
}

fn one_ref(s: &str) -> TurnRef {
    match s.parse::<usize>() {
        Ok(n) => TurnRef::Number(n),
        Err(_) => TurnRef::Uuid(s.to_string()),
    }
}

/// `history list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Only the last N turns (with --steps: the last N steps).
    #[arg(long, value_name = "N")]
    pub recent: Option<usize>,
    /// List the steps instead (an assistant message with its tool results), numbered as
    /// `summarize-range --steps` takes them.
    #[arg(long)]
    pub steps: bool,
    /// Report format: `json` prints the rows as JSON.
    #[command(flatten)]
    pub format: super::args::FormatArgs,
}

/// `history show`.
#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub target: SessionArgs,
    /// Turn number (as `history list` prints it) or the uuid of any record of the turn.
    #[arg(short, long, value_name = "N|UUID")]
    pub turn: String,
    /// Report format: `json` prints the turn's records as a JSON array.
    #[command(flatten)]
    pub format: super::args::FormatArgs,
}

/// A message to write, as the flags give it (cchist picks its uuid).
fn new_message(role: impl Into<Role>, content: String) -> NewMessage {
    NewMessage {
        role: role.into(),
        content,
        uuid: None,
    }
}

pub fn run(args: HistoryArgs) -> anyhow::Result<ExitStatus> {
    match args.action {
        Action::List(a) => list(a),
        Action::Show(a) => show(a),
        Action::Delete(a) => {
            let s = a.target.resolve()?;
            let ops = vec![Op::Delete {
                turns: parse_turn_list(&a.turns, turn_count(&s)?)?,
            }];
            run_ops(&s, ops, &a.write)
        }
        Action::Replace(a) => {
            let with = new_message(a.role, a.with);
            let s = a.target.resolve()?;
            let ops = vec![Op::Replace {
                turns: parse_turn_list(&a.turns, turn_count(&s)?)?,
                with,
            }];
            run_ops(&s, ops, &a.write)
        }
        Action::Insert(a) => {
            let content = new_message(a.role, a.content);
            let ops = vec![Op::Insert {
                after: one_ref(&a.after),
                content,
            }];
            run_ops(&a.target.resolve()?, ops, &a.write)
        }
    }
}

/// How many turns the session has now (to check turn ranges before expanding them).
fn turn_count(s: &cchist::claude::layout::SessionFile) -> anyhow::Result<usize> {
    let f = input::open(&s.path)?;
    let session = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect());
    Ok(session.turns().len())
}

fn load(
    target: &SessionArgs,
) -> anyhow::Result<(cchist::claude::layout::SessionFile, input::InputFile)> {
    let s = target.resolve()?;
    let f = input::open(&s.path)?;
    Ok((s, f))
}

fn list(a: ListArgs) -> anyhow::Result<ExitStatus> {
    let (s, f) = load(&a.target)?;
    let mut session = Session::new(framing::lines(&f.data, 1).map(Record::from_line).collect());
    let conversational = session
        .records
        .iter()
        .filter_map(|r| r.header())
        .any(|h| h.kind.is_message());
    if !conversational {
        bail!(
            "{}: not a Claude Code transcript (no user or assistant records); `cchist ls` lists the sessions",
            s.path.display()
        );
    }
    if a.steps {
        return list_steps(&mut session, &a);
    }
    let mut rows = turns::rows(&mut session);
    for r in &mut rows {
        r.prompt = turns::shorten(&super::print::shown_text(&r.prompt), 80);
    }
    let m = super::context::measure(&mut session, &super::context::overrides(None));
    print_rows(rows, &a, |r| {
        let ctx = r
            .context_tokens
            .map(|c| super::context::column(c, &m.limits))
            .unwrap_or_else(|| "-".into());
        let added = match r.added_tokens {
            Some(n) if n >= 0 => format!("+{}", super::context::short_tokens(n as u64)),
            Some(n) => format!("-{}", super::context::short_tokens(n.unsigned_abs())),
            None => String::new(),
        };
        format!(
            "{:>4}  {}  {}  {:>3} tools {:>10}  {:>9} {:>6}  {}",
            r.number,
            r.uuid,
            r.time
                .as_deref()
                .map_or("?".into(), super::print::local_time),
            r.tool_calls,
            super::print::human_bytes(r.bytes as u64),
            ctx,
            added,
            r.prompt
        )
    })
}

fn list_steps(session: &mut Session<'_>, a: &ListArgs) -> anyhow::Result<ExitStatus> {
    let mut rows = turns::step_rows(session);
    for r in &mut rows {
        r.text = turns::shorten(&super::print::shown_text(&r.text), 80);
    }
    print_rows(rows, a, |r| {
        let tools = if r.tools.is_empty() {
            String::new()
        } else {
            format!("→ {} ", r.tools.join(","))
        };
        format!(
            "{:>5}  turn {:<3} {}  {}  {:>3} rec {:>10}  {}{}",
            r.number,
            r.turn,
            r.uuid,
            r.time
                .as_deref()
                .map_or("?".into(), super::print::local_time),
            r.records,
            super::print::human_bytes(r.bytes as u64),
            turns::shorten(&tools, 40),
            r.text
        )
    })
}

/// Prints the last `--recent` of `rows` on stdout: as JSON with `--format json`, else one
/// `line` each.
fn print_rows<T: serde::Serialize>(
    mut rows: Vec<T>,
    a: &ListArgs,
    line: impl Fn(&T) -> String,
) -> anyhow::Result<ExitStatus> {
    if let Some(n) = a.recent {
        rows.drain(..rows.len().saturating_sub(n));
    }
    let mut out = std::io::stdout().lock();
    if a.format.json() {
        out.write_all(super::print::shown_json(&rows)?.as_bytes())?;
    } else {
        // On a terminal each row fits its width (by display width: CJK takes two columns),
        // so rows never wrap; into a file or pipe they are written whole.
        let width = super::print::terminal_width();
        for r in &rows {
            let shown = super::print::shown_text(&line(r));
            let shown = super::print::safe(&shown);
            match width {
                Some(w) => writeln!(out, "{}", super::print::fit(&shown, w))?,
                None => writeln!(out, "{shown}")?,
            }
        }
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
    if a.format.json() {
        let mut values = Vec::new();
        for &i in &turn.records {
            if let Ok(v) = session.records[i].value() {
                values.push(v.clone());
            }
        }
        out.write_all(super::print::shown_json(&values)?.as_bytes())?;
    } else {
        let text = turns::render_turn(&mut session, &turn);
        let shown = super::print::shown_text(&text);
        out.write_all(super::print::safe_text(&shown).as_bytes())?;
    }
    Ok(ExitStatus::Ok)
}
