//! Whole-file runs: a session's companion files that are not records — plain text
//! (`tool-results/*`) and copies (backups, `*.meta.json`) — get the stages' text
//! transformation, or the stages that apply to copies, over the whole file at once.

use super::*;

/// What a finding in a binary file adds to its message: it is reported, not redacted.
pub const BINARY_NOTE: &str =
    " (in a binary file, which is not rewritten: remove the file, or the secret from whatever made it)";

impl Pipeline {
    /// Run the stages' text transformation over a plain-text companion file; returns the new
    /// text when some stage changed it.
    ///
    /// A companion that is not text ([`is_binary`]: a zip, an image a tool saved) is never
    /// changed: rewritten as text it would no longer open. It is still searched (so `check`
    /// reports what it holds), the report says so with the counter [`BINARY_SKIPPED`], and
    /// the bytes stay as they are — a secret in it is reported, not redacted.
    pub fn run_text(&self, data: &[u8], origin: &Origin) -> Result<(Option<Vec<u8>>, FileReport)> {
        self.run_text_known(data, origin, &Known::default())
    }

    /// [`Pipeline::run_text`] knowing the secrets `seed`: their occurrences are replaced too.
    pub fn run_text_known(
        &self,
        data: &[u8],
        origin: &Origin,
        seed: &Known,
    ) -> Result<(Option<Vec<u8>>, FileReport)> {
        let (new, mut report) = self.run_text_unchecked(data, origin, seed)?;
        if !is_binary(data) {
            return Ok((new, report));
        }
        // A stored zip entry's data follows its name with nothing between: a token that
        // starts an entry reads as glued to the name. Each entry's name and data are searched
        // on their own too; a secret found there and not in the whole file is reported.
        if self.secret_pass() != Secrets::Ignores {
            let mut seen: foldhash::HashSet<Option<String>> = report
                .findings
                .iter()
                .map(|f| f.fingerprint.clone())
                .collect();
            for (at, piece) in stored_zip_pieces(data) {
                let (_, r) = self.run_text_unchecked(piece, origin, seed)?;
                let line0 = memchr::memchr_iter(b'\n', &data[..at]).count();
                for mut f in r.findings {
                    if seen.insert(f.fingerprint.clone()) || f.fingerprint.is_none() {
                        f.line += line0;
                        report.findings.push(f);
                    }
                }
            }
            report.findings.sort_by_key(|f| f.line);
        }
        report.changed = false;
        report.bytes_out = report.bytes_in;
        for (_, st) in &mut report.stages {
            st.changed = 0;
        }
        report.counters.insert(BINARY_SKIPPED.into(), 1);
        // What is found in it stays there: the finding says so, whichever report shows it.
        for f in &mut report.findings {
            f.message.push_str(BINARY_NOTE);
        }
        Ok((None, report))
    }

    fn run_text_unchecked(
        &self,
        data: &[u8],
        origin: &Origin,
        seed: &Known,
    ) -> Result<(Option<Vec<u8>>, FileReport)> {
        let mut report = self.new_report();
        report.bytes_in = data.len() as u64;
        let mut cx = self.new_cx(origin, seed);
        let mut current: Option<Vec<u8>> = None;
        for (i, stage) in self.stages.iter().enumerate() {
            let input = current.as_deref().unwrap_or(data);
            if let Some(new) = stage.text(input, &mut cx)? {
                if new != input {
                    report.stages[i].1.changed += 1;
                    current = Some(new);
                }
            }
        }
        let pass = self.secret_pass();
        if let Some(echoes) = (pass != Secrets::Ignores && !cx.known.is_empty())
            .then(|| cx.known.echoes())
            .flatten()
        {
            let input = current.as_deref().unwrap_or(data);
            if let Some((new, found)) = echoes.text(input) {
                // A secret a rule already found on a line is not its own echo there (when
                // only reporting, the text still holds what the rule found).
                let seen: foldhash::HashSet<(usize, Option<String>)> = cx
                    .findings
                    .iter()
                    .map(|f| (f.line, f.fingerprint.clone()))
                    .collect();
                let mut echoed = 0u64;
                for e in &found {
                    let k = echoes.secret(e.secret);
                    let line = 1 + memchr::memchr_iter(b'\n', &input[..e.offset]).count();
                    let fingerprint = (!k.fingerprint.is_empty()).then(|| k.fingerprint.clone());
                    if seen.contains(&(line, fingerprint.clone())) {
                        continue;
                    }
                    echoed += 1;
                    cx.report(Finding {
                        rule: k.rule.clone(),
                        line,
                        uuid: None,
                        path: None,
                        fingerprint,
                        message: "another occurrence of a secret found in this session".into(),
                        kind: Some(crate::findings::ECHO),
                    });
                }
                if echoed > 0 {
                    cx.count("redact/echoes", echoed);
                }
                if pass == Secrets::Replaces {
                    if let Some(i) = self.last_secret_stage() {
                        report.stages[i].1.changed += 1;
                    }
                    current = Some(new);
                }
            }
        }
        report.changed = current.is_some();
        report.bytes_out = current.as_ref().map_or(data.len(), Vec::len) as u64;
        if cx.unlisted > 0 {
            let n = cx.unlisted;
            cx.count(FINDINGS_NOT_LISTED, n);
        }
        report.findings = cx.findings;
        report.counters = cx.counters;
        Ok((current, report))
    }

    /// Run the stages that apply to copies ([`Stage::applies_to_copies`]: redaction) over a
    /// copy of a session — a backup, a JSON document beside it — and nothing else: every JSON
    /// line through their record transformation, any other line through their text one.
    /// Returns the new bytes when something changed.
    pub fn run_copy(&self, data: &[u8], origin: &Origin) -> Result<(Option<Vec<u8>>, FileReport)> {
        self.run_copy_known(data, origin, &Known::default())
    }

    /// [`Pipeline::run_copy`] knowing the secrets `seed`: their occurrences are replaced too.
    pub fn run_copy_known(
        &self,
        data: &[u8],
        origin: &Origin,
        seed: &Known,
    ) -> Result<(Option<Vec<u8>>, FileReport)> {
        let mut report = self.new_report();
        report.bytes_in = data.len() as u64;
        let mut cx = self.new_cx(origin, seed);
        let mut out = Vec::new();
        let mut changed = false;
        let copy_stages: Vec<(usize, &dyn Stage)> = self
            .stages
            .iter()
            .enumerate()
            .filter(|(_, s)| s.applies_to_copies())
            .map(|(i, s)| (i, s.as_ref()))
            .collect();
        let mut sink = crate::io::output::SpanWriter::new(&mut out);
        for l in framing::lines(data, 1) {
            let term = l.term;
            let mut rec = Record::from_line(l);
            report.records += 1;
            let mut text: Option<Vec<u8>> = None;
            let is_json = check_json(rec.raw()).is_ok();
            for &(i, stage) in &copy_stages {
                if is_json {
                    let before = rec.edits();
                    stage.record(&mut rec, &mut cx)?;
                    if rec.edits() != before {
                        report.stages[i].1.changed += 1;
                    }
                } else {
                    let cur = text.as_deref().unwrap_or(rec.raw());
                    if let Some(new) = stage.text(cur, &mut cx)? {
                        if new != cur {
                            report.stages[i].1.changed += 1;
                            text = Some(new);
                        }
                    }
                }
            }
            let io = |e| Error::io(origin, "write", e);
            if let Some(t) = text {
                changed = true;
                sink.put_span(&t).map_err(io)?;
                sink.put_span(term.bytes()).map_err(io)?;
            } else {
                changed |= rec.is_changed();
                sink.put(&rec).map_err(io)?;
            }
        }
        sink.finish().map_err(|e| Error::io(origin, "write", e))?;
        drop(sink);
        let pass = self.secret_pass();
        if pass != Secrets::Ignores && !cx.known.is_empty() {
            let before = if changed { &out[..] } else { data };
            let mut echoed = Vec::with_capacity(before.len());
            let was = report.changed;
            report.changed = false;
            {
                let mut w = crate::io::output::SpanWriter::new(&mut echoed);
                self.write_known(
                    std::iter::once((before, false)),
                    1,
                    pass,
                    &mut cx,
                    &mut report,
                    &mut w,
                    &mut None,
                )?;
            }
            if report.changed {
                changed = true;
                out = echoed;
            }
            report.changed = was;
        }
        report.changed = changed;
        report.records_out = report.records;
        report.bytes_out = if changed { out.len() } else { data.len() } as u64;
        if cx.unlisted > 0 {
            let n = cx.unlisted;
            cx.count(FINDINGS_NOT_LISTED, n);
        }
        report.findings = cx.findings;
        report.counters = cx.counters;
        Ok((changed.then_some(out), report))
    }
}

/// The names and data (with their offsets) of the stored (uncompressed) entries of a zip
/// archive `data`, read from its local headers in order, up to the first that is not one:
/// each is text of its own that the archive's bytes run together.
pub(super) fn stored_zip_pieces(data: &[u8]) -> Vec<(usize, &[u8])> {
    let u16_at = |i: usize| u16::from_le_bytes([data[i], data[i + 1]]) as usize;
    let u32_at = |i: usize| u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
    let mut out = Vec::new();
    let mut i = 0;
    while data.len() >= i + 30 && data[i..].starts_with(b"PK\x03\x04") {
        let (method, size) = (u16_at(i + 8), u32_at(i + 18) as usize);
        let (name_len, extra_len) = (u16_at(i + 26), u16_at(i + 28));
        let name = i + 30;
        let body = name + name_len + extra_len;
        let Some(end) = body.checked_add(size).filter(|&e| e <= data.len()) else {
            break;
        };
        out.push((name, &data[name..name + name_len]));
        if method == 0 && size > 0 {
            out.push((body, &data[body..end]));
        }
        i = end;
    }
    out
}
