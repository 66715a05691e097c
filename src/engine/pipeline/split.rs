//! One big file over every core: a pipeline of record-scoped stages (`redact`, `check`) sees
//! each record on its own — the stream path already runs it chunk by chunk — so a large
//! buffer is cut at line boundaries into parts run on the pool's threads. What each part
//! found is merged in file order: the output, the findings (and which are listed), the
//! counters and the known secrets are those of a run in one piece, whatever `-j` is. The
//! second pass (every known secret's other occurrences) searches the output on the same
//! threads, a batch at a time; it numbers, reports and writes in order.

use rayon::prelude::*;

use super::*;

/// Files smaller than this run in one piece: a part costs a thread hand-off and a merge.
pub const SPLIT_MIN: usize = 32 << 20;

/// [`SPLIT_MIN`], or `CCHIST_SPLIT_MIN` (bytes; 0: never split) where a test needs small
/// files split to hold them to the same output as one piece.
pub fn split_min() -> usize {
    std::env::var("CCHIST_SPLIT_MIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SPLIT_MIN)
}

/// What one part produced.
struct Part<'d> {
    recording: Recording<'d>,
    cx: Cx,
    report: FileReport,
}

impl Pipeline {
    /// The line-aligned parts `data` is run in over `workers` threads (None: one piece), each
    /// with the number of its first line.
    pub(super) fn parts<'d>(
        &self,
        data: &'d [u8],
        workers: usize,
    ) -> Option<Vec<(&'d [u8], usize)>> {
        if workers < 2 || self.split_min == 0 || data.len() < self.split_min.max(2) {
            return None;
        }
        let n = workers.min(data.len() / (self.split_min / 2).max(1)).max(2);
        let cuts = line_cuts(data, data.len().div_ceil(n));
        if cuts.len() < 3 {
            return None;
        }
        let slices: Vec<&[u8]> = cuts.windows(2).map(|w| &data[w[0]..w[1]]).collect();
        // Each part's first line number: the newlines before it, counted in parallel.
        let counts: Vec<usize> = slices
            .par_iter()
            .map(|s| memchr::memchr_iter(b'\n', s).count())
            .collect();
        let mut first = 1;
        Some(
            slices
                .into_iter()
                .zip(counts)
                .map(|(s, c)| {
                    let at = first;
                    first += c;
                    (s, at)
                })
                .collect(),
        )
    }

    /// Run the record stages over `parts` in parallel into one recording per part (in order),
    /// and merge what each found into `cx` and `report` as a run in one piece would have.
    pub(super) fn run_parts<'d>(
        &self,
        data: &'d [u8],
        parts: &[(&'d [u8], usize)],
        seed: &Known,
        cx: &mut Cx,
        report: &mut FileReport,
    ) -> Result<Vec<Recording<'d>>> {
        let origin = cx.origin.clone();
        let done: Vec<Result<Part<'d>>> = parts
            .par_iter()
            .map(|&(part, first_line)| {
                let mut recording = Recording::new(data);
                let mut pcx = self.new_cx(&origin, seed);
                let mut prep = self.new_report();
                {
                    let mut out = Out::new(&mut recording, data);
                    self.run_records(part, first_line, &mut pcx, &mut None, &mut prep, &mut out)?;
                    out.flush().map_err(|e| Error::io(&origin, "write", e))?;
                }
                Ok(Part {
                    recording,
                    cx: pcx,
                    report: prep,
                })
            })
            .collect();
        let mut recordings = Vec::with_capacity(done.len());
        for part in done {
            // The first error in file order is the one a run in one piece stops at.
            let Part {
                recording,
                cx: pcx,
                report: prep,
            } = part?;
            recordings.push(recording);
            for f in pcx.findings {
                cx.report(f);
            }
            cx.unlisted += pcx.unlisted;
            for (k, v) in pcx.counters {
                *cx.counters.entry(k).or_default() += v;
            }
            cx.known.merge(&pcx.known);
            report.records += prep.records;
            report.invalid_lines += prep.invalid_lines;
            let room = 10usize.saturating_sub(report.invalid_examples.len());
            report
                .invalid_examples
                .extend(prep.invalid_examples.into_iter().take(room));
            report.records_out += prep.records_out;
            report.bytes_out += prep.bytes_out;
            report.changed |= prep.changed;
            for ((_, all), (_, one)) in report.stages.iter_mut().zip(prep.stages) {
                all.changed += one.changed;
                all.dropped += one.dropped;
                all.added += one.added;
            }
        }
        Ok(recordings)
    }

    /// The echo lines of the pieces at the start of `pieces`, one list per piece: the first
    /// piece alone, or (`parallel`) as many pieces as make [`Pipeline::split_min`] bytes,
    /// searched on the pool's threads, a big piece in line-aligned parts. What a batch found
    /// is held until it is written: the batch bounds it.
    pub(super) fn echo_batch(
        &self,
        echoes: &Echoes,
        pieces: &[(&[u8], bool)],
        parallel: bool,
    ) -> Vec<Vec<Flagged>> {
        let Some(&(first, _)) = pieces.first() else {
            return Vec::new();
        };
        if !parallel {
            return vec![flagged_lines(echoes, first)];
        }
        let mut bytes = 0usize;
        // Two parts a thread: enough to keep the threads busy, and what a batch holds stays
        // that of a few MiB of output however many of its lines hold an echo.
        let batch = self
            .split_min
            .min(2 * super::ECHO_PART * rayon::current_num_threads());
        let n = pieces
            .iter()
            .take_while(|(b, _)| {
                let more = bytes < batch;
                bytes += b.len();
                more
            })
            .count();
        let chunk = (self.split_min / 4).max(1);
        pieces[..n]
            .par_iter()
            .map(|(b, _)| flagged_lines_in_parts(echoes, b, chunk))
            .collect()
    }
}

/// The offsets cutting `bytes` into runs of whole lines of about `size` bytes: 0 first, each
/// cut just after a newline, `bytes.len()` last.
pub(super) fn line_cuts(bytes: &[u8], size: usize) -> Vec<usize> {
    let mut cuts = vec![0usize];
    let mut at = size.max(1);
    while at < bytes.len() {
        match memchr::memchr(b'\n', &bytes[at..]) {
            Some(n) if at + n + 1 < bytes.len() => cuts.push(at + n + 1),
            _ => break,
        }
        at = cuts[cuts.len() - 1] + size.max(1);
    }
    cuts.push(bytes.len());
    cuts
}

/// [`flagged_lines`] over line-aligned parts of about `chunk` bytes on the pool's threads: the
/// same lines, unless a known value holds a control character (a raw newline: its match may
/// run across lines), which keeps the piece whole.
pub(super) fn flagged_lines_in_parts(echoes: &Echoes, bytes: &[u8], chunk: usize) -> Vec<Flagged> {
    if bytes.len() < 2 * chunk || echoes.holds_controls() {
        return flagged_lines(echoes, bytes);
    }
    let cuts = line_cuts(bytes, chunk);
    let parts: Vec<Vec<Flagged>> = cuts
        .par_windows(2)
        .map(|w| {
            let mut v = flagged_lines(echoes, &bytes[w[0]..w[1]]);
            for f in &mut v {
                f.start += w[0];
                f.at += w[0];
                f.nl = f.nl.map(|n| n + w[0]);
            }
            v
        })
        .collect();
    parts.into_iter().flatten().collect()
}
