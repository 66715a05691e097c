//! Runs over standard input: mapped when it is a regular file and the whole input is needed,
//! else streamed in batches of lines with bounded memory.

use super::*;

impl Pipeline {
    /// Run over standard input: as [`Pipeline::run_stream`], except that when the whole input
    /// is needed and stdin is a regular file (`cchist relink < session.jsonl`), it is mapped
    /// rather than read.
    pub fn run_stdin(&self, sink: &mut dyn Sink) -> Result<FileReport> {
        let origin = Origin::stdin();
        if self.needs_session() || self.on_invalid == OnInvalid::Error {
            let data = input::read_stdin_all()?;
            return self.run_buffer(&data, &origin, sink);
        }
        self.run_stream(std::io::stdin().lock(), &origin, sink)
    }

    /// Run over a stream (stdin). Record-scoped pipelines keep memory bounded; a
    /// session-scoped pipeline, or `on_invalid_json = "error"`, reads the stream whole first.
    pub fn run_stream(
        &self,
        reader: impl Read,
        origin: &Origin,
        sink: &mut dyn Sink,
    ) -> Result<FileReport> {
        if self.needs_session() || self.on_invalid == OnInvalid::Error {
            let data = input::read_all(reader, origin)?;
            return self.run_buffer(&data, origin, sink);
        }
        let pass = self.secret_pass();
        let mut reader: Box<dyn Read + '_> = Box::new(reader);
        let mut forward_only = false;
        let mut head_bytes = input::StreamBuf::new();
        if pass != Secrets::Ignores {
            // Up to KNOWN_BUFFER bytes, the same output as the same bytes in a file: every
            // occurrence of a secret found anywhere in them is replaced.
            // In the stream's own buffer: read ahead into a vector, a long line was held
            // twice (the vector stayed resident in the allocator once the buffer took over).
            head_bytes
                .fill_to(&mut reader, KNOWN_BUFFER + 1)
                .map_err(|e| Error::io(origin, "read", e))?;
            if head_bytes.filled().len() <= KNOWN_BUFFER {
                return self.run_buffer(head_bytes.filled(), origin, sink);
            }
            forward_only = true;
        }
        let mut report = self.new_report();
        let mut cx = self.new_cx(origin, &Known::default());
        // Past the buffer, memory stays bounded however many distinct secrets the stream
        // holds: at most STREAM_KNOWN values are remembered, and the matcher grows with them
        // instead of being built again for every chunk.
        cx.known.track_changes(STREAM_KNOWN);
        let mut echoes = None;
        input::stream_chunks_after(head_bytes, reader, origin, |chunk, first| {
            report.bytes_in += chunk.len() as u64;
            if pass == Secrets::Ignores {
                let mut out = Out::new(sink, chunk);
                self.run_records(chunk, first, &mut cx, &mut None, &mut report, &mut out)?;
                out.flush().map_err(|e| Error::io(origin, "write", e))?;
            } else {
                // Past the buffer, forward only: what a chunk shows is known from it on.
                let mut recording = Recording::new(chunk);
                {
                    let mut out = Out::new(&mut recording, chunk);
                    self.run_records(chunk, first, &mut cx, &mut None, &mut report, &mut out)?;
                    out.flush().map_err(|e| Error::io(origin, "write", e))?;
                }
                self.write_known(
                    recording.pieces(),
                    first,
                    pass,
                    &mut cx,
                    &mut report,
                    sink,
                    &mut echoes,
                )?;
            }
            sink.finish().map_err(|e| Error::io(origin, "write", e))
        })?;
        if forward_only {
            cx.count(FORWARD_ONLY, 1);
        }
        if cx.known.dropped() > 0 {
            cx.count(STREAM_KNOWN_FULL, cx.known.dropped());
        }
        if cx.unlisted > 0 {
            let n = cx.unlisted;
            cx.count(FINDINGS_NOT_LISTED, n);
        }
        report.findings = cx.findings;
        report.counters = cx.counters;
        Ok(report)
    }
}
