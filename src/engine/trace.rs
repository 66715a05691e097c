//! What each stage did to each record of one run, for `--diff` ([`crate::engine::diff`]). The
//! trace belongs to the pipeline's run (it is threaded through the run beside the stages'
//! context, never inside it): stages cannot see it, and `stages` does not depend on `engine`.

use std::cell::RefCell;

use crate::transcript::record::Record;

/// A run's trace, when `--diff` asked for one.
pub type Tracer = Option<Box<Trace>>;

/// What a stage did to a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Edited it.
    Changed,
    /// Removed it.
    Dropped,
    /// Created it.
    Added,
}

/// One record as written: its identity, input line (0 for a new one) and, when it is not the
/// input's line byte for byte, its bytes.
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) id: u64,
    pub(crate) line: usize,
    pub(crate) bytes: Option<Vec<u8>>,
}

/// What each stage did to each record of one run, filled by the pipeline when asked.
#[derive(Debug, Default)]
pub struct Trace {
    /// (record id, input line, stage index, event), in the order they happened.
    pub(crate) events: Vec<(u64, usize, usize, Event)>,
    /// The records written, in output order (interior mutability: the pipeline writes with a
    /// shared context).
    pub(crate) written: RefCell<Vec<Written>>,
}

impl Trace {
    /// Note `event` of stage `stage` on the record `id` (input line `line`), if the run traces.
    pub fn note(trace: &mut Tracer, id: u64, line: usize, stage: usize, event: Event) {
        if let Some(t) = trace.as_deref_mut() {
            t.events.push((id, line, stage, event));
        }
    }

    /// Note a record written to the output.
    pub fn output(&self, rec: &Record<'_>) {
        let bytes = (rec.is_changed() || rec.line == 0).then(|| {
            let mut b = Vec::new();
            rec.write_to(&mut b);
            b
        });
        self.written.borrow_mut().push(Written {
            id: rec.id(),
            line: rec.line,
            bytes,
        });
    }
}
