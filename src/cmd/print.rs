//! What a run prints: one line per file, the totals table of a bulk run, the JSON report.

use std::io::Write;

use anyhow::Context;
use cchist::engine::pipeline::FileReport;
use cchist::engine::runner::{Mode, Outcome};
use cchist::error::ExitStatus;
use serde_json::json;

/// One field as it may go to a terminal or a text report (a file name, a label, a prompt, a
/// command): control characters escaped ([`cchist::findings::report::printable`]), newlines
/// included. JSON output needs none of this: serde escapes it.
pub fn safe(s: &str) -> std::borrow::Cow<'_, str> {
    cchist::findings::report::printable(s)
}

/// Text of several lines as it may go to a terminal (a turn, a message naming files): control
/// characters escaped, newlines and tabs kept.
pub fn safe_text(s: &str) -> std::borrow::Cow<'_, str> {
    cchist::findings::report::printable_text(s)
}

/// `eprintln!` for a message that may hold file names or transcript text: redacted
/// ([`shown_text`]: a file may be named after a token, a label may be one) and printed through
/// [`safe_text`], so neither can send the terminal a control sequence. Under `-q`
/// ([`set_quiet`]) only errors are said.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cmd::print::say_text(&format!($($arg)*))
    };
}

/// `-q` as grep and rg mean it: nothing but errors (and the exit status).
static QUIET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Turn `-q` on.
pub fn set_quiet(on: bool) {
    if on {
        QUIET.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether `-q` is on.
pub fn quiet() -> bool {
    QUIET.load(std::sync::atomic::Ordering::Relaxed)
}

/// What [`say!`] prints: a line on stderr, unless `-q` is on and it is no error.
pub fn say_text(msg: &str) {
    if quiet() && !msg.contains("error") {
        return;
    }
    eprintln!("{}", safe_text(&shown_text(msg)));
}
pub(crate) use say;

/// A line of a command's report on stdout, redacted ([`shown_text`]) and through
/// [`safe_text`]; nothing under `-q`. A dry
/// run's report is its output, as `--diff`'s is (what to do next and errors stay on stderr), so
/// `--dry-run | less` and `--dry-run > report.txt` hold it.
pub fn report_line(msg: &str) -> std::io::Result<()> {
    if quiet() {
        return Ok(());
    }
    use std::io::Write as _;
    writeln!(std::io::stdout().lock(), "{}", safe_text(&shown_text(msg)))
}

/// `println!` for text output that may hold file names or transcript text (never JSON):
/// redacted ([`shown_text`]) and printed through [`safe_text`].
macro_rules! tell {
    ($($arg:tt)*) => {
        println!(
            "{}",
            $crate::cmd::print::safe_text(&$crate::cmd::print::shown_text(&format!($($arg)*)))
        )
    };
}
pub(crate) use tell;

/// `text` as it may be shown: secrets replaced by their markers.
pub fn shown_text(text: &str) -> String {
    cchist::stages::redact::shown_text(text).into_owned()
}

/// `value` as pretty JSON that may be shown: redacted as a transcript line is (JSON-aware,
/// so the document stays valid).
pub fn shown_json<T: serde::Serialize>(value: &T) -> anyhow::Result<String> {
    let line = serde_json::to_vec(value)?;
    let v: serde_json::Value = match cchist::stages::redact::default_redactor()
        .redact_line(&line)
        .line
    {
        Some(l) => serde_json::from_slice(&l)?,
        None => serde_json::from_slice(&line)?,
    };
    Ok(serde_json::to_string_pretty(&v)? + "\n")
}

/// The one size format of every command's text output: `512 B`, `3.4 KiB`, `12.0 MiB`,
/// The command that resumes session `id` (written beside `transcript`): `claude --resume`
/// finds a session only from its project's directory, so the line changes there first (the
/// working directory the transcript recorded, quoted for the shell when it needs to be).
pub fn resume_line(transcript: &std::path::Path, id: &str) -> String {
    match cchist::claude::layout::first_cwd(transcript) {
        Some(dir) => format!("cd {} && claude --resume {id}", shell_quoted(&safe(&dir))),
        None => format!("claude --resume {id}"),
    }
}

/// `s` as one shell word: as it is when it holds only safe characters, else single-quoted.
fn shell_quoted(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Columns of the terminal stdout is, if it is one (`COLUMNS` wins); `None` when stdout is
/// a file or a pipe, where lines are not cut.
pub fn terminal_width() -> Option<usize> {
    if let Some(c) = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()) {
        return Some(c);
    }
    if !std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills a winsize struct for a terminal descriptor.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(ws.ws_col as usize)
}

/// `s` cut to at most `cols` terminal columns, by display width (a CJK character takes two),
/// ending in `…` when cut.
pub fn fit(s: &str, cols: usize) -> String {
    use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
    if s.width() <= cols {
        return s.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > cols.saturating_sub(1) {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// An RFC 3339 time (as transcripts and `--json` carry them) as the terminal shows times:
/// local, to the minute, with its UTC offset (`2026-04-01 19:00 +09:00`); the text as it is
/// when it is no time.
pub fn local_time(rfc3339: &str) -> String {
    let Ok(t) = cchist::io::clock::parse(rfc3339) else {
        return rfc3339.to_string();
    };
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: localtime_r fills the tm we own; tzset reads TZ first, as localtime_r may not.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe {
        tzset();
        !libc::localtime_r(&secs, &mut tm).is_null()
    };
    if !ok {
        return rfc3339.to_string();
    }
    let off = tm.tm_gmtoff / 60;
    let sign = if off < 0 { '-' } else { '+' };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02} {sign}{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        off.abs() / 60,
        off.abs() % 60
    )
}

extern "C" {
    fn tzset();
}

/// What a run says of a binary file it left byte for byte (in place, in a folder or a fork),
/// holding `findings` secrets.
pub fn binary_note(name: &str, findings: usize) -> String {
    let found = match findings {
        0 => String::new(),
        n => format!(
            "; it holds {n} secret(s) cchist cannot redact without breaking it (`cchist check` lists them)"
        ),
    };
    format!(
        "cchist: skipped {name}: a binary file (NUL bytes or not UTF-8), left byte for byte{found}"
    )
}

/// What a fork says of the binary companions it copied as they are (`binary`, no secret found
/// in them: [`binary_note`]) and of those it left out (`left_out`, each holding secrets cchist
/// cannot redact): one line each.
pub fn fork_binary_notes(
    binary: &[std::path::PathBuf],
    left_out: &[(std::path::PathBuf, usize)],
) -> Vec<String> {
    let mut out: Vec<String> = binary
        .iter()
        .map(|p| binary_note(&p.display().to_string(), 0))
        .collect();
    out.extend(left_out.iter().map(|(p, n)| {
        format!(
            "cchist: {}: a binary file (NUL bytes or not UTF-8) that holds {n} secret(s) cchist cannot redact without breaking it, left out of the fork (the original keeps it; `cchist check` lists them)",
            p.display()
        )
    }));
    out
}

/// What a run over a stream (stdin) past its bounds says of the secrets it may have left as
/// they are, and what to do: one warning line, or `None` within the bounds. Past
/// [`cchist::engine::pipeline::KNOWN_BUFFER`] a secret is replaced from where it is found on
/// ([`cchist::engine::pipeline::FORWARD_ONLY`]: said only when one was found), and past
/// [`cchist::engine::pipeline::STREAM_KNOWN`] distinct ones the others are replaced only
/// where a rule finds them ([`cchist::engine::pipeline::STREAM_KNOWN_FULL`]). A file is read
/// whole, so `cchist redact FILE` replaces every repeat. (No word "error": `-q` silences it.)
pub fn stream_note(name: &str, r: &FileReport) -> Option<String> {
    use cchist::engine::pipeline::{FORWARD_ONLY, KNOWN_BUFFER, STREAM_KNOWN, STREAM_KNOWN_FULL};
    let mib = KNOWN_BUFFER >> 20;
    let todo = "run cchist on a file (`cchist redact FILE`), not a pipe, to replace every repeat";
    if let Some(n) = r.counters.get(STREAM_KNOWN_FULL).filter(|&&n| n > 0) {
        let max = format!("{},{:03}", STREAM_KNOWN / 1000, STREAM_KNOWN % 1000);
        return Some(format!(
            "cchist: warning: {name}: a stream over {mib} MiB with more than {max} distinct secrets: {n} secrets past those were replaced only where a rule finds them, so their later repeats (echoes in prose, tool output) may be left as they are; {todo}"
        ));
    }
    if r.counters.contains_key(FORWARD_ONLY) && !r.findings.is_empty() {
        return Some(format!(
            "cchist: warning: {name}: a stream over {mib} MiB is redacted in chunks: a secret is replaced where it is found and after, so a repeat of it earlier in the stream may be left as it is; {todo}"
        ));
    }
    None
}

/// `1 file`, `2 files`: a count with its noun in the right number.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub use cchist::io::size::human_bytes;

/// Totals of a run (the `summary` of `--json`, the table of a bulk run).
#[derive(Debug, Default, serde::Serialize)]
pub struct Totals {
    /// Inputs processed (skipped ones not counted).
    pub files: usize,
    /// Inputs whose output differs.
    pub changed: usize,
    /// Inputs left alone because their session looks live.
    pub skipped: usize,
    /// Inputs that failed.
    pub failed: usize,
    /// Records read.
    pub records: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Bytes written.
    pub bytes_out: u64,
    /// Per stage, in pipeline order.
    #[serde(serialize_with = "stages_as_objects")]
    pub stages: Vec<(String, cchist::stages::StageStats)>,
}

/// Per-stage counts as JSON: an array of objects in pipeline order, each naming its `stage`
/// (a pair `[name, {…}]` is what serde makes of a tuple, and no reader wants it).
pub fn stages_json(stages: &[(String, cchist::stages::StageStats)]) -> serde_json::Value {
    stages
        .iter()
        .map(|(name, st)| {
            let mut o = serde_json::Map::new();
            o.insert("stage".into(), json!(name));
            if let serde_json::Value::Object(m) = json!(st) {
                o.extend(m);
            }
            serde_json::Value::Object(o)
        })
        .collect()
}

fn stages_as_objects<S: serde::Serializer>(
    stages: &[(String, cchist::stages::StageStats)],
    s: S,
) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&stages_json(stages), s)
}

/// A file's report as JSON, its stages as [`stages_json`] gives them, its findings as every
/// report shows them ([`cchist::findings::report::shown`]: a uuid, a JSON key or a tool id
/// that is a secret is replaced by its marker).
pub fn report_json(r: &FileReport) -> serde_json::Value {
    let mut v = json!(r);
    v["stages"] = stages_json(&r.stages);
    v["findings"] = json!(r
        .findings
        .iter()
        .map(cchist::findings::report::shown)
        .collect::<Vec<_>>());
    v
}

/// A file name as a report prints it: secrets in its text replaced by their markers
/// ([`cchist::findings::report::shown_name`]).
pub fn shown_name(name: &str) -> String {
    cchist::findings::report::shown_name(name)
}

/// Add up the outcomes.
pub fn totals(outcomes: &[Outcome], skipped: usize) -> Totals {
    let mut t = Totals {
        files: outcomes.len(),
        skipped,
        ..Totals::default()
    };
    for o in outcomes {
        let Ok(r) = &o.result else {
            t.failed += 1;
            continue;
        };
        t.records += r.records;
        t.bytes_in += r.bytes_in;
        t.bytes_out += r.bytes_out;
        t.changed += usize::from(r.changed);
        for (name, st) in &r.stages {
            match t.stages.iter_mut().find(|(n, _)| n == name) {
                Some((_, acc)) => {
                    acc.changed += st.changed;
                    acc.dropped += st.dropped;
                    acc.added += st.added;
                }
                None => t.stages.push((name.clone(), *st)),
            }
        }
    }
    t
}

/// The end-of-run table of a bulk run: counts, sizes (human), what was saved, per stage.
pub fn summary_table(t: &Totals) -> String {
    let mut rows: Vec<(String, String)> = vec![
        ("files".into(), t.files.to_string()),
        ("  changed".into(), t.changed.to_string()),
    ];
    if t.skipped > 0 {
        rows.push(("  skipped (live)".into(), t.skipped.to_string()));
    }
    rows.push(("  failed".into(), t.failed.to_string()));
    rows.push(("records".into(), t.records.to_string()));
    rows.push(("size in".into(), human_bytes(t.bytes_in)));
    rows.push(("size out".into(), human_bytes(t.bytes_out)));
    let saved = t.bytes_in.saturating_sub(t.bytes_out);
    let pct = if t.bytes_in > 0 {
        format!(" ({:.1}%)", saved as f64 * 100.0 / t.bytes_in as f64)
    } else {
        String::new()
    };
    rows.push(("saved".into(), format!("{}{pct}", human_bytes(saved))));
    for (name, st) in &t.stages {
        rows.push((
            name.clone(),
            format!(
                "{} changed, {} dropped, {} added",
                st.changed, st.dropped, st.added
            ),
        ));
    }
    let kw = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let vw = rows
        .iter()
        .map(|(_, v)| v.chars().count())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for (k, v) in rows {
        s += &format!("  {k:<kw$}  {v:>vw$}\n");
    }
    s
}

/// The name a file shown as `name` takes (`to`), as a report shows it: its file name when it
/// stays in its folder, else the whole path (a folder named after a secret moved it into the
/// folder's placeholder), the secrets in it replaced by their markers.
fn renamed_shown(name: &str, to: &std::path::Path) -> String {
    let dir = |p: &std::path::Path| p.parent().map(|d| d.display().to_string());
    if dir(std::path::Path::new(name)) == dir(to).map(|d| shown_name(&d)) {
        shown_name(&to.file_name().unwrap_or_default().to_string_lossy())
    } else {
        shown_name(&to.display().to_string())
    }
}

/// Print per-file results and return the exit status.
pub fn report(
    outcomes: &[Outcome],
    mode: &Mode,
    as_json: bool,
    skipped: &[(std::path::PathBuf, String)],
) -> anyhow::Result<ExitStatus> {
    let mut failed = 0;
    let mut changed = 0;
    let mut files = Vec::new();
    for o in outcomes {
        // Printed only, never opened: a file named after a token is named with its marker.
        let name = shown_name(&o.input.origin().to_string());
        match &o.result {
            Ok(r) => {
                if r.changed {
                    changed += 1;
                }
                if *mode == Mode::DryRun && !as_json {
                    report_line(&describe(&name, r))?;
                }
                for (line, why) in &r.invalid_examples {
                    if !as_json && *mode != Mode::Stdout {
                        say!("cchist: {name}:{line}: kept as is: {why}");
                    }
                }
                if !as_json {
                    if let Some(line) = describe_fit(&name, r) {
                        say!("{line}");
                    }
                }
                if let Some(note) = stream_note(&name, r) {
                    say!("{note}");
                }
                if let (Some(to), false) = (&r.renamed, *mode == Mode::DryRun || as_json) {
                    say!(
                        "cchist: {name}: renamed to {}: its name held a secret (`cchist undo` renames it back)",
                        renamed_shown(&name, to)
                    );
                }
                if let Some(n) = r.counters.get("bytes-appended-during-replace") {
                    say!("cchist: {name}: {n} bytes appended while it was replaced were carried over unchanged");
                }
                if r.counters
                    .contains_key(cchist::engine::pipeline::BINARY_SKIPPED)
                    && !as_json
                {
                    say!("{}", binary_note(&name, r.findings.len()));
                }
                files.push(json!({"file": name, "ok": true, "report": report_json(r)}));
            }
            Err(e) => {
                failed += 1;
                if is_closed_output(e) {
                    return Ok(ExitStatus::Ok);
                }
                let e = shown_text(&e.to_string());
                say!("cchist: error: {e}");
                files.push(json!({"file": name, "ok": false, "error": e}));
            }
        }
    }
    if as_json {
        let skipped: Vec<_> = skipped
            .iter()
            .map(|(p, why)| {
                json!({"file": shown_name(&p.display().to_string()), "reason": shown_text(why)})
            })
            .collect();
        let doc = json!({
            "files": files,
            "skipped": skipped,
            "summary": totals(outcomes, skipped.len()),
        });
        // Each name, uuid and path was redacted where it was taken; the whole report is
        // redacted once more, as everything printed about a session is.
        let text = shown_json(&doc).context("the JSON report")?;
        std::io::stdout()
            .lock()
            .write_all(text.as_bytes())
            .context("writing the JSON report")?;
    } else if *mode == Mode::DryRun && outcomes.len() == 1 {
        say!("{}", dry_run_hint(1));
    } else if *mode != Mode::Stdout && outcomes.len() > 1 {
        let what = if *mode == Mode::DryRun {
            "would change (dry run: nothing written)"
        } else {
            "changed"
        };
        let head = format!("cchist: {changed} of {} files {what}", outcomes.len());
        let table = summary_table(&totals(outcomes, skipped.len()));
        if *mode == Mode::DryRun {
            report_line(&head)?;
            report_line(table.trim_end_matches('\n'))?;
            say!("{}", dry_run_hint(outcomes.len()));
        } else {
            say!("{head}");
            if !quiet() {
                eprint!("{table}");
            }
        }
    }
    Ok(if failed > 0 {
        ExitStatus::Error
    } else {
        ExitStatus::Ok
    })
}

fn is_closed_output(e: &cchist::error::Error) -> bool {
    matches!(e, cchist::error::Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// What would change in one file, readable: a head line (records and sizes before and after,
/// what is saved), then one line per stage with what it changed, dropped and added and its
/// counters.
pub fn describe(name: &str, r: &FileReport) -> String {
    if !r.changed {
        return format!(
            "{name}: unchanged ({} records, {})",
            r.records,
            human_bytes(r.bytes_in)
        );
    }
    let saved = r.bytes_in.saturating_sub(r.bytes_out);
    let mut s = format!(
        "{name}: would change: {} → {} records, {} → {}",
        r.records,
        r.records_out,
        human_bytes(r.bytes_in),
        human_bytes(r.bytes_out)
    );
    if saved > 0 {
        s += &format!(" ({} saved)", human_bytes(saved));
    }
    if r.invalid_lines > 0 {
        s += &format!("; {} invalid lines kept as they are", r.invalid_lines);
    }
    let width = r.stages.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut used = std::collections::BTreeSet::new();
    for (stage, st) in &r.stages {
        let parts: Vec<String> = [
            (st.changed, "changed"),
            (st.dropped, "dropped"),
            (st.added, "added"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        let counters: Vec<String> = r
            .counters
            .iter()
            .filter_map(|(k, v)| {
                let rest = k
                    .strip_prefix(stage.as_str())
                    .and_then(|r| r.strip_prefix(['.', '/']))?;
                used.insert(k.clone());
                Some(format!("{}: {v}", rest.replace(['_', '.'], " ")))
            })
            .collect();
        // `redact` counts all its replacements as `redactions`.
        let counters: Vec<String> = r
            .counters
            .get("redactions")
            .filter(|_| stage == "redact")
            .map(|n| format!("redactions: {n}"))
            .into_iter()
            .chain(counters)
            .collect();
        let line = match (parts.is_empty(), counters.is_empty()) {
            (true, true) => "no change".to_string(),
            (true, false) => counters.join(", "),
            (false, true) => parts.join(", "),
            (false, false) => format!("{} ({})", parts.join(", "), counters.join(", ")),
        };
        s += &format!("\n    {stage:<width$}  {line}");
    }
    let other: Vec<String> = r
        .counters
        .iter()
        .filter(|(k, _)| {
            let shown_by_redact =
                k.as_str() == "redactions" && r.stages.iter().any(|(n, _)| n == "redact");
            !used.contains(*k) && !shown_by_redact
        })
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    if !other.is_empty() {
        s += &format!("\n    {}", other.join(", "));
    }
    if let Some(to) = &r.renamed {
        s += &format!(
            "\n    renamed to {}: its name holds a secret (an in-place run with --backup renames it; `cchist undo` renames it back)",
            renamed_shown(name, to)
        );
    }
    // Records moved out of the file, and where to (under the session's companion folder).
    for m in &r.moved {
        s += &format!(
            "\n    {} records move to {}",
            m.records,
            shown_name(&m.rel.display().to_string())
        );
    }
    s
}

/// What a dry run ends with: nothing was written, and how to get the output.
pub fn dry_run_hint(files: usize) -> String {
    let stdout = if files == 1 {
        "`> out.jsonl` (the result on stdout)"
    } else {
        "`--out-dir DIR` (a copy of each file)"
    };
    format!(
        "cchist: dry run, nothing written. To get the output, drop --dry-run and add {stdout}, or `--in-place` to replace the files (`--backup` keeps a copy `cchist undo` restores)"
    )
}

/// The line `summarize-range --fit` prints: the resume estimate before and after, and what
/// was summarized.
fn describe_fit(name: &str, r: &FileReport) -> Option<String> {
    let c = |k: &str| r.counters.get(&format!("summarize-range.fit.{k}")).copied();
    let before = c("before_tokens")?;
    let after = c("after_tokens").unwrap_or(before);
    let budget = c("budget_tokens").unwrap_or(0);
    let reserve = c("reserve_tokens").unwrap_or(0);
    let steps = r
        .counters
        .get("summarize-range.steps_summarized")
        .copied()
        .unwrap_or(0);
    let verdict = if c("over_budget").is_some() {
        "still over the budget (the first prompt and the summary stay)"
    } else if before + reserve <= budget {
        "already under the budget, nothing summarized"
    } else {
        "under the budget"
    };
    Some(format!(
        "cchist: {name}: resume estimate ~{before} tokens before, ~{after} after (budget {budget}, of which {reserve} reserved for what Claude Code adds on resume; {steps} steps summarized): {verdict}"
    ))
}

/// Print `--diff` previews (text or JSON) on stdout; the exit status reflects failures.
pub fn diff_report(
    diffs: Vec<(
        cchist::io::input::Input,
        cchist::error::Result<cchist::engine::diff::FileDiff>,
    )>,
    as_json: bool,
) -> anyhow::Result<ExitStatus> {
    let mut ok = Vec::new();
    let mut errors = Vec::new();
    for (inp, r) in diffs {
        match r {
            Ok(d) => ok.push(d),
            Err(e) => {
                // An error names the file and may quote it: shown redacted, like the preview.
                let (file, e) = (inp.origin().to_string(), e.to_string());
                let (file, e) = (shown_text(&file), shown_text(&e));
                say!("cchist: error: {e}");
                errors.push(json!({"file": file, "error": e}));
            }
        }
    }
    // Each preview's strings were redacted where they were taken from the input; the whole
    // output is redacted once more, as everything printed about a session is.
    let text = if as_json {
        let doc = json!({"files": ok, "errors": errors});
        shown_json(&doc).context("the JSON diff")?
    } else {
        safe_text(&shown_text(&cchist::engine::diff::render_text(&ok))).into_owned()
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        // The reader stopped (`| head`): not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitStatus::Ok),
        r => r.context("writing the diff")?,
    }
    Ok(if errors.is_empty() {
        ExitStatus::Ok
    } else {
        ExitStatus::Error
    })
}

#[cfg(test)]
mod tests {
    use super::stream_note;
    use cchist::engine::pipeline::{FileReport, FORWARD_ONLY, STREAM_KNOWN_FULL};

    fn with(counters: &[(&str, u64)], findings: usize) -> FileReport {
        let mut r = FileReport::default();
        for (k, v) in counters {
            r.counters.insert(k.to_string(), *v);
        }
        r.findings = (0..findings)
            .map(|i| cchist::findings::Finding::new("github-pat", i + 1, None, String::new()))
            .collect();
        r
    }

    /// Issue #25, R7: a stream past 64 MiB with more than 65,536 distinct secrets leaves later
    /// repeats of the rest raw; the run says so in one warning line, with what to do. (No
    /// smaller case exists: the bounds are constants, so the message is tested here.)
    #[test]
    fn a_stream_past_its_bounds_says_what_it_left_and_what_to_do() {
        let full = stream_note(
            "<stdin>",
            &with(&[(FORWARD_ONLY, 1), (STREAM_KNOWN_FULL, 7)], 3),
        )
        .expect("a warning");
        assert!(!full.contains('\n'), "one line: {full}");
        assert!(full.starts_with("cchist: warning: <stdin>:"), "{full}");
        assert!(
            full.contains("7 secrets") && full.contains("65,536"),
            "{full}"
        );
        assert!(full.contains("not a pipe"), "what to do: {full}");
        assert!(!full.contains("error"), "-q silences it: {full}");
        let forward = stream_note("<stdin>", &with(&[(FORWARD_ONLY, 1)], 1)).expect("a warning");
        assert!(
            !forward.contains('\n') && forward.contains("64 MiB"),
            "{forward}"
        );
        assert!(
            forward.contains("not a pipe") && !forward.contains("error"),
            "{forward}"
        );
        // Nothing to say of a stream without a secret, or of one within the bounds.
        assert_eq!(stream_note("<stdin>", &with(&[(FORWARD_ONLY, 1)], 0)), None);
        assert_eq!(stream_note("<stdin>", &with(&[], 5)), None);
    }
}
