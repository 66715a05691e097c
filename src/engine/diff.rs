//! `--diff`: what a pipeline would change, record by record, without writing anything.
//!
//! The pipeline runs as it would for real, into memory, with a [`Trace`](crate::engine::trace::Trace) beside it: each
//! stage's verdict on each record (changed, dropped, added) is noted where the pipeline
//! already compares a record before and after the stage, and every record written is noted
//! with its bytes when they are not the input's. The preview ([`FileDiff`]) then lists, in
//! output order, every record that is not byte-identical to its input line:
//!
//! - `dropped`: an input line the output no longer has, and the stage that removed it;
//! - `changed`: an input line written differently, the stages that changed it, which fields
//!   differ (paths only: `message.content[0].text`), and for redaction how many secrets of
//!   which rules were masked;
//! - `added`: a record a stage created (a summary says how many records it replaces).
//!
//! Unchanged records are counted, not listed. No value is ever printed — neither the old
//! text (which may hold the secret being redacted) nor the new — only line numbers, uuids,
//! record types, stage names, field paths and rule ids, so a preview is safe to share. The
//! cost is one run of the pipeline plus one pass over the changed records.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::engine::pipeline::{FileReport, Pipeline};
use crate::engine::trace::Event;
use crate::error::{Error, Origin, Result};
use crate::io::framing;
use crate::io::input::{self, Input, Treatment};
use crate::io::output::SpanWriter;
use crate::transcript::record::Record;

/// How a record differs from its input line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Gone from the output.
    Dropped,
    /// Written differently.
    Changed,
    /// New.
    Added,
}

/// One record of the preview.
#[derive(Debug, Clone, Serialize)]
pub struct RecordDiff {
    /// What happened to it.
    pub change: Change,
    /// Its input line (none for an added record, or a whole companion file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Its uuid, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Its `type`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub ty: Option<String>,
    /// The stages that did it, in pipeline order.
    pub stages: Vec<String>,
    /// For a changed record: the paths of the fields that differ (at most 10 are listed,
    /// `…` stands for the rest); `text` for a line that is not JSON.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Secrets masked in it, by rule id (never the secret).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub redacted: BTreeMap<String, u64>,
    /// For an added summary: how many records it replaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaces: Option<u64>,
}

/// Counts of a preview.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DiffCounts {
    /// Input lines gone.
    pub dropped: u64,
    /// Input lines written differently.
    pub changed: u64,
    /// Records created.
    pub added: u64,
    /// Input lines written byte for byte.
    pub unchanged: u64,
}

/// The preview of one input.
#[derive(Debug, Clone, Serialize)]
pub struct FileDiff {
    /// The input's name.
    pub file: String,
    /// Lines read.
    pub records_in: u64,
    /// Records that would be written.
    pub records_out: u64,
    /// The counts.
    pub counts: DiffCounts,
    /// Every record that is not unchanged, in output order (dropped ones where they were).
    pub records: Vec<RecordDiff>,
    /// Counters the stages reported (estimates of `--fit`, rules, …).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, u64>,
    /// Files records would move to (relative to the session's companion folder), with how
    /// many records each gets: those records are among the dropped.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<MovedTo>,
    /// The placeholder name an in-place run would give the file, whose name reads as a
    /// secret ([`crate::engine::runner::placeholder_for`]), beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed: Option<String>,
}

/// A companion file records would move to.
#[derive(Debug, Clone, Serialize)]
pub struct MovedTo {
    /// Its path relative to the session's companion folder.
    pub file: String,
    /// Records it would get.
    pub records: u64,
}

impl FileDiff {
    /// True when the output would differ from the input.
    pub fn changed(&self) -> bool {
        self.counts.dropped + self.counts.changed + self.counts.added > 0 || self.renamed.is_some()
    }

    /// The preview with every string taken from the input through the default redaction
    /// rules: a uuid, type or file name may be a pasted secret short enough to pass the
    /// shape checks of `header_of` (an AWS key id reads as a field name), and a preview is
    /// meant to be shared.
    pub fn shown(mut self) -> FileDiff {
        let shown = |s: &mut String| {
            if let std::borrow::Cow::Owned(t) = crate::stages::redact::shown_text(s) {
                *s = t;
            }
        };
        shown(&mut self.file);
        if let Some(r) = &mut self.renamed {
            shown(r);
        }
        for m in &mut self.moved {
            shown(&mut m.file);
        }
        for r in &mut self.records {
            for s in r
                .uuid
                .iter_mut()
                .chain(r.ty.iter_mut())
                .chain(&mut r.fields)
            {
                shown(s);
            }
        }
        self.counters = std::mem::take(&mut self.counters)
            .into_iter()
            .map(|(mut k, v)| {
                shown(&mut k);
                (k, v)
            })
            .collect();
        self
    }
}

/// Preview `pipeline` on one input; nothing is written. Everything the preview holds that
/// came from the input (its name, uuids, record types, field paths, counter names) has been
/// through the default redaction rules ([`FileDiff::shown`]).
pub fn diff_input(pipeline: &Pipeline, inp: &Input) -> Result<FileDiff> {
    diff_raw(pipeline, inp).map(FileDiff::shown)
}

fn diff_raw(pipeline: &Pipeline, inp: &Input) -> Result<FileDiff> {
    let mut d = diff_content(pipeline, inp)?;
    // The new file name; the path from where the two part when a folder is renamed too.
    d.renamed = crate::engine::runner::placeholder_for(pipeline, inp, &Default::default())
        .and_then(|p| {
            let from = match inp {
                Input::File { path, .. } => path.parent()?,
                Input::Stdin => return None,
            };
            let base = from.ancestors().find(|a| p.starts_with(a))?;
            let shown = if p.parent() == Some(from) {
                p.file_name()?.to_string_lossy().into_owned()
            } else {
                p.strip_prefix(base).ok()?.display().to_string()
            };
            Some(shown)
        });
    Ok(d)
}

fn diff_content(pipeline: &Pipeline, inp: &Input) -> Result<FileDiff> {
    let origin = inp.origin();
    let name = origin.to_string();
    match inp {
        Input::Stdin => {
            let data = input::read_stdin_all()?;
            diff_records(pipeline, &data, &origin, name, None)
        }
        Input::File {
            path, treatment, ..
        } => {
            let f = input::open(path)?;
            match treatment {
                // Records a stage would move out show as dropped by it, with its counters
                // saying where they go.
                Treatment::Records => diff_records(
                    pipeline,
                    &f.data,
                    &origin,
                    name,
                    pipeline
                        .moves_records()
                        .then(|| crate::engine::runner::companions_of(path))
                        .flatten(),
                ),
                Treatment::Text => {
                    let (_, r) = pipeline.run_text(&f.data, &origin)?;
                    Ok(whole_file(name, r))
                }
                Treatment::Copy => {
                    let (_, r) = pipeline.run_copy(&f.data, &origin)?;
                    Ok(whole_file(name, r))
                }
            }
        }
    }
}

/// Preview `pipeline` on every input, in parallel, in input order.
pub fn diff_all(
    pipeline: &Pipeline,
    inputs: &[Input],
    jobs: Option<usize>,
) -> Vec<(Input, Result<FileDiff>)> {
    let work = || {
        inputs
            .par_iter()
            .map(|inp| (inp.clone(), diff_input(pipeline, inp)))
            .collect()
    };
    match jobs.and_then(|n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.clamp(1, inputs.len().max(1)))
            .build()
            .ok()
    }) {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// A companion file run whole (text, or a copy): one entry naming the stages and rules.
fn whole_file(name: String, r: FileReport) -> FileDiff {
    let stages: Vec<String> = r
        .stages
        .iter()
        .filter(|(_, st)| st.changed > 0)
        .map(|(n, _)| n.clone())
        .collect();
    let mut redacted = BTreeMap::new();
    for f in &r.findings {
        *redacted.entry(f.rule.clone()).or_default() += 1;
    }
    let mut d = FileDiff {
        file: name,
        records_in: r.records,
        records_out: r.records_out,
        counts: DiffCounts::default(),
        records: Vec::new(),
        counters: r.counters,
        moved: Vec::new(),
        renamed: None,
    };
    if r.changed {
        d.counts.changed = 1;
        d.records.push(RecordDiff {
            change: Change::Changed,
            line: None,
            uuid: None,
            ty: None,
            stages,
            fields: vec!["text".into()],
            redacted,
            replaces: None,
        });
    }
    d
}

fn diff_records(
    pipeline: &Pipeline,
    data: &[u8],
    origin: &Origin,
    name: String,
    companions: Option<crate::stages::Companions>,
) -> Result<FileDiff> {
    let mut sink = SpanWriter::new(std::io::sink());
    let (report, trace, _) = pipeline.run_buffer_moving(
        data,
        origin,
        &mut sink,
        true,
        &crate::stages::redact::known::Known::default(),
        companions,
    )?;
    let trace = trace.ok_or_else(|| Error::Other("the pipeline kept no trace".into()))?;
    let names: Vec<&str> = report.stages.iter().map(|(n, _)| n.as_str()).collect();
    let bodies: Vec<&[u8]> = framing::lines(data, 1).map(|l| l.body).collect();
    // Stages per record, in pipeline order (a stage may note a record more than once).
    let mut by_id: HashMap<u64, Vec<(usize, Event)>> = HashMap::new();
    let mut dropped: Vec<(usize, u64)> = Vec::new();
    for &(id, line, stage, ev) in &trace.events {
        let v = by_id.entry(id).or_default();
        if !v.contains(&(stage, ev)) {
            v.push((stage, ev));
        }
        if ev == Event::Dropped && line > 0 {
            dropped.push((line, id));
        }
    }
    dropped.sort_unstable();
    dropped.dedup();
    let stages_of = |id: u64, want: &[Event]| -> Vec<String> {
        let mut idx: Vec<usize> = by_id
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|(_, e)| want.contains(e))
            .map(|&(s, _)| s)
            .collect();
        idx.sort_unstable();
        idx.dedup();
        idx.into_iter().map(|i| names[i].to_string()).collect()
    };
    let mut secrets: HashMap<usize, BTreeMap<String, u64>> = HashMap::new();
    for f in &report.findings {
        if f.line > 0 {
            *secrets
                .entry(f.line)
                .or_default()
                .entry(f.rule.clone())
                .or_default() += 1;
        }
    }
    let input_record = |line: usize| -> (Option<String>, Option<String>) {
        let Some(body) = line.checked_sub(1).and_then(|i| bodies.get(i)) else {
            return (None, None);
        };
        header_of(body)
    };
    let mut d = FileDiff {
        file: name,
        records_in: report.records,
        records_out: report.records_out,
        counts: DiffCounts::default(),
        records: Vec::new(),
        counters: report.counters.clone(),
        moved: report
            .moved
            .iter()
            .map(|m| MovedTo {
                file: m.rel.display().to_string(),
                records: m.records,
            })
            .collect(),
        renamed: None,
    };
    let mut next_dropped = 0;
    let mut push_dropped_before = |line: usize, d: &mut FileDiff| {
        while next_dropped < dropped.len() && dropped[next_dropped].0 < line {
            let (l, id) = dropped[next_dropped];
            next_dropped += 1;
            let (uuid, ty) = input_record(l);
            d.counts.dropped += 1;
            d.records.push(RecordDiff {
                change: Change::Dropped,
                line: Some(l),
                uuid,
                ty,
                stages: stages_of(id, &[Event::Dropped]),
                fields: Vec::new(),
                redacted: BTreeMap::new(),
                replaces: None,
            });
        }
    };
    for w in trace.written.borrow().iter() {
        if w.line > 0 {
            push_dropped_before(w.line, &mut d);
        }
        let Some(bytes) = &w.bytes else {
            d.counts.unchanged += 1;
            continue;
        };
        let body = strip_term(bytes);
        if w.line == 0 {
            let (uuid, ty) = header_of(body);
            let v: Option<Value> = serde_json::from_slice(body).ok();
            let replaces = v
                .as_ref()
                .and_then(|v| v.pointer("/cchistSummary/records"))
                .and_then(Value::as_u64);
            d.counts.added += 1;
            d.records.push(RecordDiff {
                change: Change::Added,
                line: None,
                uuid,
                ty,
                stages: stages_of(w.id, &[Event::Added, Event::Changed]),
                fields: Vec::new(),
                redacted: BTreeMap::new(),
                replaces,
            });
            continue;
        }
        let old = bodies.get(w.line - 1).copied().unwrap_or_default();
        if old == body {
            d.counts.unchanged += 1;
            continue;
        }
        let (uuid, ty) = header_of(old);
        let stages = stages_of(w.id, &[Event::Changed]);
        let redacted = if stages.iter().any(|s| s == "redact") {
            secrets.remove(&w.line).unwrap_or_default()
        } else {
            BTreeMap::new()
        };
        d.counts.changed += 1;
        d.records.push(RecordDiff {
            change: Change::Changed,
            line: Some(w.line),
            uuid,
            ty,
            stages,
            // A key redaction renamed was a secret: removed keys go unnamed.
            fields: changed_fields(old, body, !redacted.is_empty()),
            redacted,
            replaces: None,
        });
    }
    push_dropped_before(usize::MAX, &mut d);
    Ok(d)
}

fn strip_term(b: &[u8]) -> &[u8] {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    b.strip_suffix(b"\r").unwrap_or(b)
}

/// A record's uuid and type, when it is a JSON object with them.
fn header_of(body: &[u8]) -> (Option<String>, Option<String>) {
    let l = framing::lines(body, 1).next();
    let Some(l) = l else {
        return (None, None);
    };
    let r = Record::from_line(l);
    match r.header() {
        // A uuid or type is data too (a token pasted into the wrong field): one that does not
        // look like a uuid or a name is not printed.
        Some(h) => (
            h.uuid()
                .map(str::to_string)
                .filter(|u| is_uuid(u) || key_label(u) != "*"),
            Some(h.kind.to_string()).filter(|t| !t.is_empty() && key_label(t) != "*"),
        ),
        None => (None, None),
    }
}

/// True for the 8-4-4-4-12 hex form Claude Code writes.
fn is_uuid(u: &str) -> bool {
    u.len() == 36
        && u.bytes().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Most field paths listed for one record.
const MAX_FIELDS: usize = 10;
/// How deep field paths go.
const MAX_DEPTH: usize = 4;

/// The paths of the fields that differ between two JSON lines (`text` when either is not
/// JSON). Keys that do not look like field names are shown as `*`: a key may be data; so are
/// all removed keys when `mask_removed` (a record redaction changed: the key may be the secret).
fn changed_fields(old: &[u8], new: &[u8], mask_removed: bool) -> Vec<String> {
    let (Ok(a), Ok(b)) = (
        serde_json::from_slice::<Value>(old),
        serde_json::from_slice::<Value>(new),
    ) else {
        return vec!["text".into()];
    };
    let mut out = Vec::new();
    walk(&a, &b, String::new(), 0, mask_removed, &mut out);
    if out.is_empty() {
        // Same values, different bytes (key order, escapes, spacing).
        out.push("(formatting)".into());
    }
    if out.len() > MAX_FIELDS {
        let more = out.len() - MAX_FIELDS;
        out.truncate(MAX_FIELDS);
        out.push(format!("… {more} more"));
    }
    out
}

fn key_label(k: &str) -> &str {
    // Field names are short words; anything longer, or with many digits, may be data (a
    // token used as a key) and is not printed.
    let ok = !k.is_empty()
        && k.len() <= 24
        && k.bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
        && !k.as_bytes()[0].is_ascii_digit()
        && k.bytes().filter(u8::is_ascii_digit).count() <= 3;
    if ok {
        k
    } else {
        "*"
    }
}

fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        key_label(k).to_string()
    } else {
        format!("{path}.{}", key_label(k))
    }
}

fn walk(
    a: &Value,
    b: &Value,
    path: String,
    depth: usize,
    mask_removed: bool,
    out: &mut Vec<String>,
) {
    if a == b || out.len() > MAX_FIELDS {
        return;
    }
    let here = || {
        if path.is_empty() {
            "(record)".to_string()
        } else {
            path.clone()
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if depth < MAX_DEPTH => {
            for (k, va) in x {
                match y.get(k) {
                    Some(vb) => walk(va, vb, join(&path, k), depth + 1, mask_removed, out),
                    None if mask_removed => out.push(format!("{} (removed)", join(&path, "*"))),
                    None => out.push(format!("{} (removed)", join(&path, k))),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{} (added)", join(&path, k)));
            }
        }
        (Value::Array(x), Value::Array(y)) if depth < MAX_DEPTH && x.len() == y.len() => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                walk(va, vb, format!("{path}[{i}]"), depth + 1, mask_removed, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            out.push(format!("{} ({} → {} items)", here(), x.len(), y.len()))
        }
        _ => out.push(here()),
    }
}

/// The preview as text: one header line per file, then one line per record that is not
/// unchanged; consecutive dropped records of the same stages are one line.
pub fn render_text(diffs: &[FileDiff]) -> String {
    let mut s = String::new();
    for d in diffs {
        let c = &d.counts;
        s += &format!(
            "{}: {} records in, {} out: {} dropped, {} changed, {} added, {} unchanged{}\n",
            d.file,
            d.records_in,
            d.records_out,
            c.dropped,
            c.changed,
            c.added,
            c.unchanged,
            if d.changed() { "" } else { " (nothing to do)" }
        );
        let mut i = 0;
        while i < d.records.len() {
            let r = &d.records[i];
            if r.change == Change::Dropped {
                let mut j = i + 1;
                while j < d.records.len()
                    && d.records[j].change == Change::Dropped
                    && d.records[j].stages == r.stages
                {
                    j += 1;
                }
                if j - i > 1 {
                    s += &format!(
                        "  - {} records of lines {}–{}: dropped by {}\n",
                        j - i,
                        r.line.unwrap_or(0),
                        d.records[j - 1].line.unwrap_or(0),
                        by(&r.stages)
                    );
                    i = j;
                    continue;
                }
            }
            s += &format!("  {}\n", render_record(r));
            i += 1;
        }
        for m in &d.moved {
            s += &format!(
                "  → {} records move to {} (beside the session)\n",
                m.records, m.file
            );
        }
        if let Some(to) = &d.renamed {
            s += &format!(
                "  → renamed to {to}: its name holds a secret (an in-place run with --backup renames it; `cchist undo` renames it back)\n"
            );
        }
    }
    s
}

fn by(stages: &[String]) -> String {
    if stages.is_empty() {
        "the pipeline".into()
    } else {
        stages.join(", ")
    }
}

fn render_record(r: &RecordDiff) -> String {
    let mut who = String::new();
    if let Some(l) = r.line {
        who += &format!("line {l}");
    } else if r.change == Change::Added {
        who += "new";
    } else {
        who += "file";
    }
    if let Some(t) = &r.ty {
        who += &format!(" {t}");
    }
    if let Some(u) = &r.uuid {
        who += &format!(" {u}");
    }
    match r.change {
        Change::Dropped => format!("- {who}: dropped by {}", by(&r.stages)),
        Change::Added => {
            let what = match r.replaces {
                Some(n) => format!(": summary replacing {n} records"),
                None => String::new(),
            };
            format!("+ {who}: added by {}{what}", by(&r.stages))
        }
        Change::Changed => {
            let mut s = format!("~ {who}: changed by {}", by(&r.stages));
            if !r.redacted.is_empty() {
                let n: u64 = r.redacted.values().sum();
                let rules: Vec<&str> = r.redacted.keys().map(String::as_str).collect();
                s += &format!(
                    "; redacted {n} secret{} ({})",
                    if n == 1 { "" } else { "s" },
                    rules.join(", ")
                );
            }
            if !r.fields.is_empty() {
                s += &format!("; fields: {}", r.fields.join(", "));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_name_keys_never_values() {
        // A token-shaped key, made at run time (no token-shaped text in the source).
        let key = ["ghp", "_0123456789abcdefghijABCDEFGHIJ012345"].concat();
        let old = format!(
            r#"{{"parentUuid":"a","message":{{"content":[{{"type":"text","text":"ghp_secret"}}]}},"env":{{"{key}":"x"}}}}"#
        );
        let new = format!(
            r#"{{"parentUuid":"b","message":{{"content":[{{"type":"text","text":"[REDACTED]"}}]}},"env":{{"{key}":"y"}},"x":1}}"#
        );
        let f = changed_fields(old.as_bytes(), new.as_bytes(), false);
        assert_eq!(
            f,
            [
                "parentUuid",
                "message.content[0].text",
                "env.*",
                "x (added)"
            ]
        );
        assert_eq!(changed_fields(b"not json", b"{}", false), ["text"]);
        assert_eq!(
            changed_fields(br#"{"a":[1,2]}"#, br#"{"a":[1]}"#, false),
            ["a (2 → 1 items)"]
        );
        assert_eq!(
            changed_fields(br#"{"a":1,"b":2}"#, br#"{"b":2,"a":1}"#, false),
            ["(formatting)"]
        );
    }
}
