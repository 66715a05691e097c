//! Runs stages in order over one input: streaming when every stage is record-scoped,
//! buffering the session when any stage needs it.

use std::collections::BTreeMap;
use std::io::Read;

use serde::{Deserialize, Serialize};

use crate::engine::trace::{Event, Trace, Tracer};
use crate::error::{Error, Origin, Result};
use crate::findings::Finding;
use crate::io::output::{Recording, Sink};
use crate::io::{framing, input};
use crate::stages::redact::known::{Echoes, Known};
use crate::stages::redact::{json, remove_thinking};
use crate::stages::{Companions, Cx, MovedOut, Scope, Secrets, Stage, StageStats, Verdict};
use crate::transcript::record::{check_json, describe_invalid, Record};
use crate::transcript::session::Session;

mod split;
mod stream;
mod whole;

pub use split::SPLIT_MIN;

/// How much of a stream (stdin) a pipeline that finds secrets reads before it writes: a
/// stream up to this size gives exactly the output of the same bytes as a file (every
/// occurrence of a secret found anywhere in it replaced). Past it, the stream is processed in
/// chunks, and a secret is replaced from the chunk where it is found on ([`FORWARD_ONLY`]).
pub const KNOWN_BUFFER: usize = 64 << 20;

/// Bytes of output the echo search looks at in one part when it runs on one thread.
const ECHO_PART: usize = 1 << 20;

/// A changed record at least this long is given to the writer rather than copied
/// ([`Sink::put_owned`]); shorter ones are gathered into one buffer.
const GIVE_MIN: usize = 1 << 20;

/// The counter set when a stream was longer than [`KNOWN_BUFFER`].
pub const FORWARD_ONLY: &str = "stdin-propagation-forward-only";

/// How many distinct secrets a stream remembers past [`KNOWN_BUFFER`] (~50 MB with their
/// matcher): each one is still replaced where a rule finds it, but a new value past this many
/// is not propagated to its later repeats. The counter [`STREAM_KNOWN_FULL`] says how many.
pub const STREAM_KNOWN: usize = 65_536;

/// The counter of the secrets a stream found but did not remember ([`STREAM_KNOWN`]).
pub const STREAM_KNOWN_FULL: &str = "stdin-known-secrets-not-remembered";

/// How many findings a run that replaces its secrets keeps for its report (the first ones):
/// its memory must not grow with the number of secrets, and a report of more than this is read
/// by its counts. The rest are counted under [`FINDINGS_NOT_LISTED`]. (`check` keeps every
/// finding: they are its output.)
pub const MAX_LISTED_FINDINGS: usize = 10_000;

/// The counter of the findings a run did not keep ([`MAX_LISTED_FINDINGS`]).
pub const FINDINGS_NOT_LISTED: &str = "findings-not-listed";

/// What to do with a line that is not valid JSON.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnInvalid {
    /// Pass it through unchanged and count it.
    #[default]
    Keep,
    /// Stop with `file:line: reason` before writing anything.
    Error,
}

/// A configured sequence of stages.
pub struct Pipeline {
    /// The stages, in order.
    pub stages: Vec<Box<dyn Stage>>,
    /// Policy for invalid lines.
    pub on_invalid: OnInvalid,
    /// The pipeline file's description.
    pub description: String,
    /// Check every line for JSON validity even in `keep` mode (to count invalid lines).
    /// Costs a JSON scan per line; the identity fast path skips it unless asked.
    pub count_invalid: bool,
    /// A buffer at least this big, run by record-scoped stages that look for secrets, is cut
    /// into line-aligned parts run on the thread pool ([`split::SPLIT_MIN`]; 0: never).
    pub split_min: usize,
}

/// What one run did to one input.
#[derive(Debug, Default, Clone, Serialize)]
pub struct FileReport {
    /// Lines read.
    pub records: u64,
    /// Lines that are not valid JSON (counted when checked; see [`Pipeline::count_invalid`]).
    pub invalid_lines: u64,
    /// First invalid lines (line number, reason), at most 10.
    pub invalid_examples: Vec<(usize, String)>,
    /// Bytes read.
    pub bytes_in: u64,
    /// Records written.
    pub records_out: u64,
    /// Bytes written (or that would be, in a dry run).
    pub bytes_out: u64,
    /// Per stage, in pipeline order: name and counts.
    pub stages: Vec<(String, StageStats)>,
    /// Counters stages reported.
    pub counters: BTreeMap<String, u64>,
    /// Findings stages reported.
    pub findings: Vec<Finding>,
    /// True when the output differs from the input.
    pub changed: bool,
    /// Companion files the stages handed out (records moved out of this file), with every
    /// secret the run knew replaced: what the writer puts beside the session
    /// ([`Pipeline::run_buffer_moving`]).
    #[serde(skip)]
    pub moved: Vec<MovedOut>,
    /// The placeholder name a companion whose name read as a secret was given (in a dry run:
    /// would be): an in-place run renames the file, `cchist undo` renames it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed: Option<std::path::PathBuf>,
}

/// The counter of a report on a file [`Pipeline::run_text`] left byte for byte because it is
/// not text.
pub const BINARY_SKIPPED: &str = "binary-skipped";

/// How much of a file's start [`is_binary`] looks at.
const SNIFF_BYTES: usize = 8 << 10;

/// Whether `data` is binary rather than text: a NUL byte, or bytes that are not UTF-8, in its
/// first 8 KiB (a character cut by that bound does not count). Git and grep judge so too.
pub fn is_binary(data: &[u8]) -> bool {
    let head = &data[..data.len().min(SNIFF_BYTES)];
    if memchr::memchr(0, head).is_some() {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        Err(e) => !(e.error_len().is_none() && head.len() < data.len()),
    }
}

impl Pipeline {
    /// A pipeline of `stages`.
    ///
    /// A stage that replaces secrets runs before any stage that cuts text
    /// ([`Stage::cuts_text`]), wherever `stages` puts it: a secret cut in two by a cap on
    /// tool output no longer matches its rule, and half of it would be written out.
    pub fn new(stages: Vec<Box<dyn Stage>>, on_invalid: OnInvalid, description: String) -> Self {
        Pipeline {
            stages: redact_before_cuts(stages),
            on_invalid,
            description,
            count_invalid: false,
            split_min: split::split_min(),
        }
    }

    /// The identity pipeline (no stages).
    pub fn identity() -> Self {
        Pipeline::new(Vec::new(), OnInvalid::Keep, "identity".into())
    }

    /// True when some stage needs the whole session in memory.
    pub fn needs_session(&self) -> bool {
        self.stages.iter().any(|s| s.scope() == Scope::Session)
    }

    fn new_report(&self) -> FileReport {
        FileReport {
            stages: self
                .stages
                .iter()
                .map(|s| (s.name().to_string(), StageStats::default()))
                .collect(),
            ..FileReport::default()
        }
    }

    fn check_lines(&self) -> bool {
        self.count_invalid || self.on_invalid == OnInvalid::Error
    }

    /// Refuse the input before anything is written when `on_invalid_json = "error"`.
    fn precheck(&self, data: &[u8], origin: &Origin) -> Result<()> {
        if self.on_invalid != OnInvalid::Error {
            return Ok(());
        }
        for l in framing::lines(data, 1) {
            if let Err(reason) = check_json(l.body) {
                return Err(Error::InvalidLine {
                    path: origin.clone(),
                    line: l.number,
                    reason: describe_invalid(l.body, l.term, &reason),
                });
            }
        }
        Ok(())
    }

    /// Run over a whole in-memory input (a mapped or read file), writing kept records to `sink`
    /// (finished before returning, so nothing in it refers to `data` afterwards).
    pub fn run_buffer(
        &self,
        data: &[u8],
        origin: &Origin,
        sink: &mut dyn Sink,
    ) -> Result<FileReport> {
        Ok(self.run_buffer_traced(data, origin, sink, false)?.0)
    }

    /// [`Pipeline::run_buffer`], also returning what each stage did to each record when
    /// `trace` is set (for `--diff`, [`crate::engine::diff`]).
    pub fn run_buffer_traced(
        &self,
        data: &[u8],
        origin: &Origin,
        sink: &mut dyn Sink,
        trace: bool,
    ) -> Result<(FileReport, Option<Box<Trace>>)> {
        let (report, trace, _) =
            self.run_buffer_known(data, origin, sink, trace, &Known::default())?;
        Ok((report, trace))
    }

    /// [`Pipeline::run_buffer_traced`] knowing the secrets `seed` from the start (those of
    /// the session's other files, or the user's): their occurrences are replaced too. Also
    /// returns every secret known at the end (the seed and what this input showed).
    ///
    /// When a stage finds secrets, the output is recorded first ([`Recording`]: only the
    /// bytes that differ from the input are held), then written line by line with every
    /// occurrence of a known secret replaced: an echo before the first finding is replaced as
    /// one after it, and a record any stage added or changed is covered whatever the order of
    /// the stages.
    pub fn run_buffer_known(
        &self,
        data: &[u8],
        origin: &Origin,
        sink: &mut dyn Sink,
        trace: bool,
        seed: &Known,
    ) -> Result<(FileReport, Option<Box<Trace>>, Known)> {
        self.run_buffer_moving(data, origin, sink, trace, seed, None)
    }

    /// [`Pipeline::run_buffer_known`] where session stages may move records out of the file
    /// into companion files (`companions`: those that exist already, which nothing is moved
    /// into). What they hand out is in [`FileReport::moved`], with every secret the run knows
    /// replaced as in the main output; writing it is the caller's.
    pub fn run_buffer_moving(
        &self,
        data: &[u8],
        origin: &Origin,
        sink: &mut dyn Sink,
        trace: bool,
        seed: &Known,
        companions: Option<Companions>,
    ) -> Result<(FileReport, Option<Box<Trace>>, Known)> {
        self.precheck(data, origin)?;
        let mut report = self.new_report();
        report.bytes_in = data.len() as u64;
        let mut cx = self.new_cx(origin, seed);
        cx.companions = companions;
        // The trace is the run's, not the stages': they never see it.
        let mut trace: Tracer = trace.then(Box::default);
        let pass = self.secret_pass();
        // Record-scoped stages that look for secrets keep their output for the second pass
        // anyway: a big buffer is then run in parts over the pool's threads.
        let parts = (pass != Secrets::Ignores && !self.needs_session() && trace.is_none())
            .then(|| self.parts(data, rayon::current_num_threads()))
            .flatten();
        let recordings = if let Some(parts) = parts {
            self.run_parts(data, &parts, seed, &mut cx, &mut report)?
        } else {
            let mut recording = Recording::new(data);
            {
                let target: &mut dyn Sink = if pass == Secrets::Ignores {
                    &mut *sink
                } else {
                    &mut recording
                };
                let mut out = Out::new(target, data);
                if self.needs_session() {
                    self.run_session(data, &mut cx, &mut trace, &mut report, &mut out)?;
                } else {
                    self.run_records(data, 1, &mut cx, &mut trace, &mut report, &mut out)?;
                }
                out.flush().map_err(|e| Error::io(origin, "write", e))?;
            }
            vec![recording]
        };
        if pass != Secrets::Ignores {
            self.write_known(
                recordings.iter().flat_map(|r| r.pieces()),
                1,
                pass,
                &mut cx,
                &mut report,
                sink,
                &mut None,
            )?;
        }
        sink.finish().map_err(|e| Error::io(origin, "write", e))?;
        if let Some(c) = cx.companions.take() {
            for mut m in c.out {
                if pass != Secrets::Ignores {
                    self.known_in_moved(&mut m, pass, &cx, &mut report)?;
                }
                report.moved.push(m);
            }
        }
        if cx.unlisted > 0 {
            let n = cx.unlisted;
            cx.count(FINDINGS_NOT_LISTED, n);
        }
        report.findings = cx.findings;
        report.counters = cx.counters;
        crate::stages::redact::remember_shown(&cx.known);
        Ok((report, trace, cx.known))
    }

    /// Replace (or, when `pass` only reports, count) in `m` (records a stage moved out of the
    /// file, after the secret stages saw them) every secret the run knows, as in the main
    /// output: an echo of a secret found on a later line is caught there too. Its echoes are
    /// counted (`redact/echoes-moved`), not listed: their lines are the companion's.
    fn known_in_moved(
        &self,
        m: &mut MovedOut,
        pass: Secrets,
        cx: &Cx,
        report: &mut FileReport,
    ) -> Result<()> {
        if cx.known.is_empty() {
            return Ok(());
        }
        let mut mcx = Cx::new(cx.origin.clone());
        mcx.known = cx.known.clone();
        let mut out = Vec::with_capacity(m.bytes.len());
        let mut scratch = self.new_report();
        {
            let mut sink = crate::io::output::SpanWriter::new(&mut out);
            let pieces = std::iter::once((&m.bytes[..], false));
            self.write_known(
                pieces,
                1,
                pass,
                &mut mcx,
                &mut scratch,
                &mut sink,
                &mut None,
            )?;
            sink.finish()
                .map_err(|e| Error::io(&cx.origin, "write", e))?;
        }
        if let Some(&n) = mcx.counters.get("redact/echoes") {
            *report
                .counters
                .entry("redact/echoes-moved".into())
                .or_default() += n;
        }
        if pass == Secrets::Replaces {
            m.bytes = out;
        }
        Ok(())
    }

    /// The secrets the stages that find them see in `data` (as text when `text`, else line
    /// by line as records are), without running anything else or writing anything: what one
    /// file of a session contributes to what the whole session knows.
    pub fn known_in(&self, data: &[u8], text: bool, origin: &Origin) -> Result<Known> {
        let mut cx = Cx::new(origin.clone());
        let finders: Vec<&dyn Stage> = self
            .stages
            .iter()
            .filter(|s| s.secrets() != Secrets::Ignores)
            .map(|s| s.as_ref())
            .collect();
        if finders.is_empty() {
            return Ok(Known::default());
        }
        if text {
            for s in &finders {
                s.text(data, &mut cx)?;
            }
        } else {
            for l in framing::lines(data, 1) {
                let mut rec = Record::from_line(l);
                for s in &finders {
                    s.record(&mut rec, &mut cx)?;
                }
                // Findings are not needed, only what they made known.
                cx.findings.clear();
            }
        }
        crate::stages::redact::remember_shown(&cx.known);
        Ok(cx.known)
    }

    /// A context for one input that knows `seed` and the values the stages declare.
    fn new_cx(&self, origin: &Origin, seed: &Known) -> Cx {
        let mut cx = Cx::new(origin.clone());
        cx.known = seed.clone();
        if self.secret_pass() == Secrets::Replaces {
            cx.keep_findings = MAX_LISTED_FINDINGS;
        }
        for s in &self.stages {
            if let Some(k) = s.known_values() {
                cx.known.merge(k);
            }
        }
        cx
    }

    /// Whether a stage may move records into companion files ([`Stage::moves_records`]).
    pub fn moves_records(&self) -> bool {
        self.stages.iter().any(|s| s.moves_records())
    }

    /// What the pipeline does with secrets: replaces them when a stage does, else reports
    /// them when a stage does.
    pub fn secret_pass(&self) -> Secrets {
        let mut pass = Secrets::Ignores;
        for s in &self.stages {
            match s.secrets() {
                Secrets::Replaces => return Secrets::Replaces,
                Secrets::Reports => pass = Secrets::Reports,
                Secrets::Ignores => {}
            }
        }
        pass
    }

    /// The index of the last stage that handles secrets (their echoes are counted there).
    fn last_secret_stage(&self) -> Option<usize> {
        self.stages
            .iter()
            .rposition(|s| s.secrets() != Secrets::Ignores)
    }

    /// Write recorded output to `sink` with every occurrence of a secret in `cx.known`
    /// replaced (or, when `pass` only reports, reported): each one a finding of kind echo,
    /// unless the same string of the same line already has a finding of that secret.
    ///
    /// `cache` holds the matcher between calls (a stream's chunks): it is brought up to what
    /// `cx.known` knows, grown in place when it can be rather than built again.
    #[allow(clippy::too_many_arguments)]
    fn write_known<'p>(
        &self,
        pieces: impl Iterator<Item = (&'p [u8], bool)>,
        first_line: usize,
        pass: Secrets,
        cx: &mut Cx,
        report: &mut FileReport,
        sink: &mut dyn Sink,
        cache: &mut Option<Echoes>,
    ) -> Result<()> {
        let origin = cx.origin.clone();
        let io = |e| Error::io(&origin, "write", e);
        if !cx.known.is_empty() {
            cx.known.refresh(cache);
        }
        let Some(echoes) = cache.as_ref() else {
            for (bytes, _) in pieces {
                sink.put_span(bytes).map_err(io)?;
            }
            return Ok(());
        };
        let replace = pass == Secrets::Replaces;
        // Only this piece's lines can hold an echo: the findings of earlier chunks of a stream
        // (lines before `first_line`) are left out, or each chunk would copy every finding so
        // far (quadratic: 1M key lines on a pipe took 15 min).
        let seen: foldhash::HashSet<(usize, Option<String>, Option<String>)> = cx
            .findings
            .iter()
            .filter(|f| f.line >= first_line)
            .map(|f| (f.line, f.path.clone(), f.fingerprint.clone()))
            .collect();
        let (mut line_no, mut echoed, mut changed_lines, mut removed) =
            (first_line.saturating_sub(1), 0u64, 0u64, 0u64);
        let mut delta: i64 = 0;
        // A big piece is looked at in line-aligned parts, one after the other: what the echo
        // search finds (a new line per line holding an echo) is held for a part, not for the
        // whole piece (`check` of 1M key lines held every line's echo). Not when a known value
        // holds a control character: its match may run across lines.
        let pieces: Vec<(&[u8], bool)> = if echoes.holds_controls() {
            pieces.collect()
        } else {
            pieces
                .flat_map(|(b, base)| {
                    let cuts = split::line_cuts(b, ECHO_PART);
                    let parts: Vec<(&[u8], bool)> =
                        cuts.windows(2).map(|w| (&b[w[0]..w[1]], base)).collect();
                    parts
                })
                .collect()
        };
        // The echo search (most of this pass) over a big output runs on the pool's threads, a
        // batch of pieces at a time; numbering, reporting and writing follow in order.
        let total: usize = pieces.iter().map(|(b, _)| b.len()).sum();
        let parallel =
            self.split_min > 0 && total >= self.split_min && rayon::current_num_threads() > 1;
        let mut batch = std::collections::VecDeque::new();
        for (k, &(bytes, _)) in pieces.iter().enumerate() {
            if batch.is_empty() {
                batch = self.echo_batch(echoes, &pieces[k..], parallel).into();
            }
            let flagged: Vec<Flagged> = batch.pop_front().unwrap_or_default();
            // The start of the run of lines written as they are.
            let mut pending = 0usize;
            // `bytes[..counted]` is numbered into `line_no`.
            let mut counted = 0usize;
            for Flagged {
                start,
                nl,
                at,
                line: el,
            } in flagged
            {
                line_no += memchr::memchr_iter(b'\n', &bytes[counted..start]).count();
                counted = start;
                let (body, term) = match nl {
                    Some(n) if n > start && bytes[n - 1] == b'\r' => {
                        (&bytes[start..n - 1], framing::Term::CrLf)
                    }
                    Some(n) => (&bytes[start..n], framing::Term::Lf),
                    None => (&bytes[start..], framing::Term::None),
                };
                let l = framing::Line {
                    body,
                    term,
                    number: line_no + 1,
                };
                let mut uuid = None;
                for e in &el.echoes {
                    let k = echoes.secret(e.secret);
                    // A path through a key that was itself a secret names it redacted.
                    let path = e.path.as_deref().map(json::render).map(|p| {
                        match echoes.text(p.as_bytes()) {
                            Some((new, _)) => String::from_utf8_lossy(&new).into_owned(),
                            None => p,
                        }
                    });
                    let fp = (!k.fingerprint.is_empty()).then(|| k.fingerprint.clone());
                    if seen.contains(&(l.number, path.clone(), fp.clone())) {
                        continue;
                    }
                    let uuid = uuid
                        .get_or_insert_with(|| {
                            Record::from_line(l)
                                .header()
                                .and_then(|h| h.uuid().map(str::to_string))
                        })
                        .clone();
                    cx.report(Finding {
                        rule: k.rule.clone(),
                        line: l.number,
                        uuid,
                        path,
                        fingerprint: fp,
                        message: "another occurrence of a secret found in this session".into(),
                        kind: Some(crate::findings::ECHO),
                    });
                    echoed += 1;
                }
                if !replace {
                    continue;
                }
                sink.put_span(&bytes[pending..start]).map_err(io)?;
                pending = at;
                changed_lines += 1;
                let mut out = Vec::new();
                if el.blocks.is_empty() {
                    out.extend_from_slice(&el.line);
                    out.extend_from_slice(l.term.bytes());
                } else {
                    let mut rec = Record::from_line(framing::Line {
                        body: &el.line,
                        term: l.term,
                        number: l.number,
                    });
                    removed += remove_thinking(&mut rec, &el.blocks);
                    rec.write_to(&mut out);
                }
                delta += out.len() as i64 - (at - start) as i64;
                sink.put_span(&out).map_err(io)?;
            }
            // The piece's lines after the last one looked at (its last line may be unended).
            line_no += memchr::memchr_iter(b'\n', &bytes[counted..]).count();
            if bytes.last().is_some_and(|&b| b != b'\n') {
                line_no += 1;
            }
            sink.put_span(&bytes[pending..]).map_err(io)?;
        }
        if echoed > 0 {
            cx.count("redact/echoes", echoed);
            // Earlier chunks' findings are sorted already and all come before this piece's
            // lines: sorting only this piece's keeps a long stream linear.
            let from = cx.findings.partition_point(|f| f.line < first_line);
            cx.findings[from..].sort_by_key(|f| f.line);
        }
        if removed > 0 {
            cx.count("redact/thinking-blocks-removed", removed);
        }
        if changed_lines > 0 {
            report.changed = true;
            report.bytes_out = (report.bytes_out as i64 + delta).max(0) as u64;
            if let Some(i) = self.last_secret_stage() {
                report.stages[i].1.changed += changed_lines;
            }
        }
        Ok(())
    }

    fn run_records(
        &self,
        data: &[u8],
        first_line: usize,
        cx: &mut Cx,
        trace: &mut Tracer,
        report: &mut FileReport,
        out: &mut Out<'_, '_>,
    ) -> Result<()> {
        for l in framing::lines(data, first_line) {
            let mut rec = Record::from_line(l);
            report.records += 1;
            if self.check_lines() && !self.line_is_valid(&rec, report) {
                // Invalid lines reach only the stages that handle any text (redaction).
                self.apply_opaque_stages(&mut rec, cx, trace, report)?;
                self.put(out, &rec, cx, trace, report)?;
                continue;
            }
            if self.apply_record_stages(&mut rec, cx, trace, report)? {
                // Dropped after this: a long line a stage replaced is given to the writer,
                // not copied.
                self.account(&rec, trace, report);
                match rec.take_output(GIVE_MIN) {
                    Some(bytes) => out.put_owned(bytes),
                    None => out.put(&rec),
                }
                .map_err(|e| Error::io(&cx.origin, "write", e))?;
            } else {
                report.changed = true;
            }
        }
        Ok(())
    }

    fn line_is_valid(&self, rec: &Record<'_>, report: &mut FileReport) -> bool {
        match check_json(rec.raw()) {
            Ok(()) => true,
            Err(reason) => {
                report.invalid_lines += 1;
                if report.invalid_examples.len() < 10 {
                    report
                        .invalid_examples
                        .push((rec.line, describe_invalid(rec.raw(), rec.term, &reason)));
                }
                false
            }
        }
    }

    /// Let every stage see a line that is not a record ([`Stage::opaque`]).
    fn apply_opaque_stages(
        &self,
        rec: &mut Record<'_>,
        cx: &mut Cx,
        trace: &mut Tracer,
        report: &mut FileReport,
    ) -> Result<()> {
        for (i, stage) in self.stages.iter().enumerate() {
            let before = rec.edits();
            stage.opaque(rec, cx)?;
            if rec.edits() != before {
                report.stages[i].1.changed += 1;
                report.changed = true;
                Trace::note(trace, rec.id(), rec.line, i, Event::Changed);
            }
        }
        Ok(())
    }

    /// Apply every stage to one record; false when a stage dropped it.
    fn apply_record_stages(
        &self,
        rec: &mut Record<'_>,
        cx: &mut Cx,
        trace: &mut Tracer,
        report: &mut FileReport,
    ) -> Result<bool> {
        let last_secret = self.last_replacing_stage();
        let mut after_secret = None;
        for (i, stage) in self.stages.iter().enumerate() {
            let before = rec.edits();
            let verdict = stage.record(rec, cx)?;
            let stats = &mut report.stages[i].1;
            if verdict == Verdict::Drop {
                stats.dropped += 1;
                Trace::note(trace, rec.id(), rec.line, i, Event::Dropped);
                return Ok(false);
            }
            if rec.edits() != before {
                stats.changed += 1;
                Trace::note(trace, rec.id(), rec.line, i, Event::Changed);
            }
            if Some(i) == last_secret {
                after_secret = Some(rec.edits());
            }
        }
        if after_secret.is_some_and(|e| e != rec.edits()) {
            self.redact_again(rec, cx, report)?;
        }
        Ok(true)
    }

    /// The index of the last stage that replaces secrets, when a stage that can add text
    /// ([`Stage::adds_text`]) comes after it: what such a stage adds or changes must be
    /// redacted too ([`Pipeline::redact_again`]).
    fn last_replacing_stage(&self) -> Option<usize> {
        let i = self
            .stages
            .iter()
            .rposition(|s| s.secrets() == Secrets::Replaces)?;
        self.stages[i + 1..]
            .iter()
            .any(|s| s.adds_text())
            .then_some(i)
    }

    /// Redaction is a property of the output, not of a stage's place: a record a stage after
    /// the last redact stage added or changed (a summary a command wrote, a marker) goes
    /// through every stage that replaces secrets again, in their order.
    fn redact_again(
        &self,
        rec: &mut Record<'_>,
        cx: &mut Cx,
        report: &mut FileReport,
    ) -> Result<()> {
        for (i, stage) in self.stages.iter().enumerate() {
            if stage.secrets() != Secrets::Replaces {
                continue;
            }
            let before = rec.edits();
            stage.record(rec, cx)?;
            if rec.edits() != before {
                report.stages[i].1.changed += 1;
                report.changed = true;
            }
        }
        Ok(())
    }

    fn put(
        &self,
        out: &mut Out<'_, '_>,
        rec: &Record<'_>,
        cx: &Cx,
        trace: &Tracer,
        report: &mut FileReport,
    ) -> Result<()> {
        self.account(rec, trace, report);
        out.put(rec).map_err(|e| Error::io(&cx.origin, "write", e))
    }

    /// Count (and trace) a record about to be written.
    fn account(&self, rec: &Record<'_>, trace: &Tracer, report: &mut FileReport) {
        report.records_out += 1;
        report.bytes_out += rec.output_len();
        if let Some(t) = trace.as_deref() {
            t.output(rec);
        }
        if rec.is_changed() {
            report.changed = true;
        }
    }

    fn run_session(
        &self,
        data: &[u8],
        cx: &mut Cx,
        trace: &mut Tracer,
        report: &mut FileReport,
        out: &mut Out<'_, '_>,
    ) -> Result<()> {
        // Lines that are not JSON objects (invalid JSON, NUL padding, arrays…) never reach a
        // session stage: a stage that removes a range of records must not take them along.
        // Each is written back after the record it followed (or the nearest earlier one that
        // survives).
        //
        // A last line without a newline that is not valid JSON is a record still being written
        // (or cut off by a crash): it never reaches a stage and stays the last line, byte for
        // byte, so records a stage adds go before it instead of being glued onto it, and a
        // second run finds the same file.
        //
        // Records get increasing ids in input order (and a record a stage adds a greater one),
        // so an opaque line is anchored by the id of the record before it, and the original
        // order of the records needs no list of its own.
        let (n_records, n_others) = line_count_estimate(data);
        let mut records = Vec::with_capacity(n_records);
        let mut opaque: Vec<(Option<u64>, Record<'_>)> = Vec::with_capacity(n_others);
        let mut partial_tail: Option<Record<'_>> = None;
        for l in framing::lines(data, 1) {
            let rec = Record::from_line(l);
            report.records += 1;
            if self.check_lines() {
                self.line_is_valid(&rec, report);
            }
            if rec.term == framing::Term::None && check_json(rec.raw()).is_err() {
                // It stays last, but redaction still reaches it as text.
                let mut rec = rec;
                self.apply_opaque_stages(&mut rec, cx, trace, report)?;
                partial_tail = Some(rec);
                continue;
            }
            if rec.is_object() {
                records.push(rec);
            } else {
                let mut rec = rec;
                self.apply_opaque_stages(&mut rec, cx, trace, report)?;
                opaque.push((records.last().map(Record::id), rec));
            }
        }
        // The greatest id of a record read from the input.
        let last_input_id = records.last().map_or(0, Record::id);
        let mut session = Session::new(records);
        let last_secret = self.last_replacing_stage();
        let mut after_secret = None;
        for (i, stage) in self.stages.iter().enumerate() {
            let before = EditsBefore::new(&session.records);
            // With a trace, the lines of the records before the stage (to name the dropped).
            let lines: Option<Vec<(u64, usize)>> = trace
                .is_some()
                .then(|| session.records.iter().map(|r| (r.id(), r.line)).collect());
            stage.session(&mut session, cx)?;
            let stats = &mut report.stages[i].1;
            let mut kept = 0u64;
            let mut alive = lines.as_ref().map(|_| foldhash::HashSet::default());
            let mut cursor = 0;
            for r in &session.records {
                if let Some(a) = alive.as_mut() {
                    a.insert(r.id());
                }
                match before.get(r.id(), &mut cursor) {
                    None => {
                        stats.added += 1;
                        Trace::note(trace, r.id(), r.line, i, Event::Added);
                    }
                    Some(e) => {
                        kept += 1;
                        if e != r.edits() {
                            stats.changed += 1;
                            Trace::note(trace, r.id(), r.line, i, Event::Changed);
                        }
                    }
                }
            }
            if let (Some(lines), Some(alive)) = (lines, alive) {
                for (id, line) in lines {
                    if !alive.contains(&id) {
                        Trace::note(trace, id, line, i, Event::Dropped);
                    }
                }
            }
            let stats = &mut report.stages[i].1;
            stats.dropped += before.len() as u64 - kept;
            if stats.dropped > 0 || stats.added > 0 {
                report.changed = true;
            }
            // The indexes are stale only if the stage changed something (re-indexing a large
            // session costs as much as a stage).
            if stats.dropped > 0 || stats.added > 0 || stats.changed > 0 {
                session.reindex();
            }
            if Some(i) == last_secret {
                after_secret = Some(EditsBefore::new(&session.records));
            }
        }
        if let Some(after) = after_secret {
            let mut cursor = 0;
            let mut again = false;
            for r in session.records.iter_mut() {
                if after.get(r.id(), &mut cursor) != Some(r.edits()) {
                    self.redact_again(r, cx, report)?;
                    again = true;
                }
            }
            if again {
                session.reindex();
            }
        }
        // Re-anchor opaque lines whose record was removed to the nearest earlier survivor.
        // One pass over the original order gives each record its nearest survivor at or before
        // it (walking back per opaque line was quadratic after a long run of dropped records).
        // The lines stay where they are, in input order: re-anchoring is monotone, so they
        // stay sorted by anchor (`None` first), and each record's lines are found by binary
        // search — no second copy of them (a file of blank lines cost a record three times).
        let mut opaque = opaque;
        if !opaque.is_empty() {
            // The input records still there, in input order.
            let mut alive: Vec<u64> = session
                .records
                .iter()
                .map(Record::id)
                .filter(|&id| id <= last_input_id)
                .collect();
            alive.sort_unstable();
            for (anchor, _) in opaque.iter_mut() {
                *anchor = anchor.and_then(|id| {
                    let k = alive.partition_point(|&x| x <= id);
                    k.checked_sub(1).map(|k| alive[k])
                });
            }
        }
        let lines_after = |a: Option<u64>| {
            let lo = opaque.partition_point(|(x, _)| *x < a);
            let hi = opaque.partition_point(|(x, _)| *x <= a);
            lo..hi
        };
        // A record without a newline (the input's unterminated last line) that is no longer
        // last gets one, so the next record starts a line of its own.
        let mut open_line = false;
        let mut emit = |rec: &Record<'_>, out: &mut Out<'_, '_>, report: &mut FileReport| {
            if open_line {
                report.changed = true;
                report.bytes_out += 1;
                out.newline()
                    .map_err(|e| Error::io(&cx.origin, "write", e))?;
            }
            open_line = rec.term == framing::Term::None;
            self.put(out, rec, cx, trace, report)
        };
        for (_, rec) in &opaque[lines_after(None)] {
            emit(rec, out, report)?;
        }
        for rec in &session.records {
            emit(rec, out, report)?;
            if !opaque.is_empty() {
                for (_, o) in &opaque[lines_after(Some(rec.id()))] {
                    emit(o, out, report)?;
                }
            }
        }
        if let Some(rec) = partial_tail {
            emit(&rec, out, report)?;
        }
        Ok(())
    }
}

/// How many lines of `data` start an object (records) and how many do not, for reserving
/// both lists: counted exactly when lines are short (there the records are most of the memory,
/// and growing a vector by doubling would hold up to twice what is needed), estimated from the
/// first 64 KiB otherwise (a record is then small next to its line, and counting would cost a
/// pass over the input). Blank or invalid lines never become records: reserving a record for
/// each was most of what a file of blank lines cost.
fn line_count_estimate(data: &[u8]) -> (usize, usize) {
    const SAMPLE: usize = 64 << 10;
    let exact = |d: &[u8]| {
        let (mut objects, mut lines) = (usize::from(d.first() == Some(&b'{')), 1);
        for p in memchr::memchr_iter(b'\n', d) {
            lines += 1;
            objects += usize::from(d.get(p + 1) == Some(&b'{'));
        }
        (objects + 1, lines - objects)
    };
    if data.len() <= SAMPLE {
        return exact(data);
    }
    let in_sample = memchr::memchr_iter(b'\n', &data[..SAMPLE]).count();
    if in_sample * 512 > SAMPLE {
        // Lines average under 512 bytes.
        return exact(data);
    }
    ((data.len() / SAMPLE + 1) * (in_sample + 1), 0)
}

/// `(id, edits)` of every record before a stage ran, sorted by id: what the stage's
/// statistics compare against (16 bytes a record, where a hash map took about twice that).
struct EditsBefore(Vec<(u64, u32)>);

impl EditsBefore {
    fn new(records: &[Record<'_>]) -> Self {
        let mut v: Vec<(u64, u32)> = records.iter().map(|r| (r.id(), r.edits())).collect();
        if !v.windows(2).all(|w| w[0].0 <= w[1].0) {
            v.sort_unstable_by_key(|e| e.0);
        }
        EditsBefore(v)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// The edits of record `id` before the stage, if it was there. `cursor` makes the usual
    /// walk (records still in id order) a merge rather than a search per record.
    fn get(&self, id: u64, cursor: &mut usize) -> Option<u32> {
        if let Some(&(k, e)) = self.0.get(*cursor) {
            if k == id {
                *cursor += 1;
                return Some(e);
            }
        }
        let k = self.0.binary_search_by_key(&id, |e| e.0).ok()?;
        *cursor = k + 1;
        Some(self.0[k].1)
    }
}

/// `stages` with every stage that replaces secrets moved ahead of the first stage that cuts
/// text (in their order; the others keep theirs).
fn redact_before_cuts(stages: Vec<Box<dyn Stage>>) -> Vec<Box<dyn Stage>> {
    let Some(first_cut) = stages.iter().position(|s| s.cuts_text()) else {
        return stages;
    };
    let late = |i: usize, s: &dyn Stage| i > first_cut && s.secrets() == Secrets::Replaces;
    if !stages.iter().enumerate().any(|(i, s)| late(i, s.as_ref())) {
        return stages;
    }
    let mut moved = Vec::new();
    let mut rest = Vec::new();
    for (i, s) in stages.into_iter().enumerate() {
        if late(i, s.as_ref()) {
            moved.push(s);
        } else {
            rest.push(s);
        }
    }
    let tail = rest.split_off(first_cut);
    rest.extend(moved);
    rest.extend(tail);
    rest
}

/// Where one run's records go: adjacent untouched records of `base` (the buffer being run
/// over) are gathered into one span, so an unchanged input is a single write. Spans are kept
/// as offsets into `base`, which `Out` borrows: nothing can outlive the buffer.
struct Out<'s, 'b> {
    sink: &'s mut dyn Sink,
    base: &'b [u8],
    pending: Option<(usize, usize)>,
}

impl<'s, 'b> Out<'s, 'b> {
    fn new(sink: &'s mut dyn Sink, base: &'b [u8]) -> Self {
        Out {
            sink,
            base,
            pending: None,
        }
    }

    fn put(&mut self, rec: &Record<'_>) -> std::io::Result<()> {
        if let Some(body) = rec.untouched_slice() {
            // Records framed from `base` borrow it: their bytes and terminator are `base`'s.
            let off = (body.as_ptr() as usize).wrapping_sub(self.base.as_ptr() as usize);
            let len = body.len() + rec.term.bytes().len();
            if off <= self.base.len() && len <= self.base.len() - off {
                match &mut self.pending {
                    Some((_, end)) if *end == off => *end += len,
                    _ => {
                        self.flush()?;
                        self.pending = Some((off, off + len));
                    }
                }
                return Ok(());
            }
        }
        self.flush()?;
        self.sink.put(rec)
    }

    /// A changed record's output line, given away ([`Sink::put_owned`]).
    fn put_owned(&mut self, bytes: Vec<u8>) -> std::io::Result<()> {
        self.flush()?;
        self.sink.put_owned(bytes)
    }

    /// End the line the last record left open (it had no terminator).
    fn newline(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.sink.put_span(b"\n")
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.pending.take() {
            Some((start, end)) => self.sink.put_span(&self.base[start..end]),
            None => Ok(()),
        }
    }
}

/// A line of an output piece holding an echo: where it starts, its newline, where the next
/// line starts, and what it becomes.
pub(super) struct Flagged {
    pub(super) start: usize,
    pub(super) nl: Option<usize>,
    pub(super) at: usize,
    pub(super) line: crate::stages::redact::known::EchoLine,
}

/// The lines of `bytes` that hold an echo, in order. Only the lines where the matcher (one
/// search of the piece) sees a value or an escape are looked at.
pub(super) fn flagged_lines(echoes: &Echoes, bytes: &[u8]) -> Vec<Flagged> {
    let positions = echoes.positions(bytes);
    let mut out = Vec::new();
    let mut last_start = 0usize;
    let mut next = 0usize;
    while next < positions.len() {
        let p = positions[next];
        let start = memchr::memrchr(b'\n', &bytes[..p]).map_or(0, |n| n + 1);
        let nl = memchr::memchr(b'\n', &bytes[p..]).map(|n| p + n);
        let at = nl.map_or(bytes.len(), |n| n + 1);
        next += positions[next..].partition_point(|&q| q < at);
        if start < last_start {
            // A position at a line's start already handled (from a value's match).
            continue;
        }
        last_start = start;
        let body = match nl {
            Some(n) if n > start && bytes[n - 1] == b'\r' => &bytes[start..n - 1],
            Some(n) => &bytes[start..n],
            None => &bytes[start..],
        };
        if let Some(line) = echoes.line(body) {
            out.push(Flagged {
                start,
                nl,
                at,
                line,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
