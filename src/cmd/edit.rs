//! Shared by `history delete|replace|insert` and `apply`: build the edit pipeline (edit +
//! relink), write it safely, and say what happened.

use super::print::say;
use std::sync::Arc;

use cchist::claude::layout::SessionFile;
use cchist::claude::rewrite::{self, MutateOptions, Written};
use cchist::engine::pipeline::{OnInvalid, Pipeline};
use cchist::error::{ExitStatus, Result as LibResult};
use cchist::stages::edit::{EditReport, EditStage, Op};
use cchist::stages::{self, Cx, Scope, Stage};
use cchist::transcript::session::Session;
use clap::Args;

/// How a mutating command writes.
#[derive(Args, Debug, Clone)]
pub struct WriteArgs {
    /// Write the edited history as a new session (the original stays untouched), then print
    /// the `claude --resume` line for it.
    #[arg(long)]
    pub fork: bool,
    /// Show what would change; write nothing.
    #[arg(short = 'n', long)]
    pub dry_run: bool,
    /// Edit even a session that looks live (written in the last minute or open in claude).
    #[arg(long)]
    pub force: bool,
    /// Report format: `json` prints what was done as one JSON object on stdout.
    #[command(flatten)]
    pub format: super::args::FormatArgs,
    /// Write nothing; print what would change per record (dropped, changed, added) as text,
    /// or JSON with `--diff=json`.
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true, default_missing_value = "text", value_enum)]
    pub diff: Option<super::args::Format>,
}

impl WriteArgs {
    fn options(&self) -> MutateOptions {
        MutateOptions {
            fork: self.fork,
            dry_run: self.dry_run,
            force: self.force,
        }
    }
}

/// Lets the edit stage be shared with the pipeline while we read its report afterwards.
struct Shared(Arc<EditStage>);

impl Stage for Shared {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn scope(&self) -> Scope {
        Scope::Session
    }
    fn session(&self, s: &mut Session<'_>, cx: &mut Cx) -> LibResult<()> {
        self.0.session(s, cx)
    }
}

/// Apply `ops` to the session and write as `w` says.
pub fn run_ops(session: &SessionFile, ops: Vec<Op>, w: &WriteArgs) -> anyhow::Result<ExitStatus> {
    let edit = Arc::new(EditStage::new(ops));
    let relink = (stages::relink::DEF.build)(toml::Table::new())?;
    let pipeline = Pipeline::new(
        vec![Box::new(Shared(edit.clone())), relink],
        OnInvalid::Keep,
        "history edit".into(),
    );
    if let Some(f) = w.diff {
        let input = cchist::claude::layout::input(
            session.path.clone(),
            session.path.file_name().map(Into::into).unwrap_or_default(),
        );
        let d = cchist::engine::diff::diff_input(&pipeline, &input);
        print_labels(&edit.report());
        return super::print::diff_report(vec![(input, d)], f == super::args::Format::Json);
    }
    let (report, written) = rewrite::mutate(session, &pipeline, w.options())?;
    let er = edit.report();
    if w.format.json() {
        let (outcome, backup, new) = match &written {
            Written::DryRun => ("dry-run", None, None),
            Written::Unchanged => ("unchanged", None, None),
            Written::InPlace { backup } => ("edited", Some(backup.display().to_string()), None),
            Written::Forked { id, path, .. } => (
                "forked",
                None,
                Some(serde_json::json!({"id": id, "file": path.display().to_string()})),
            ),
        };
        let doc = serde_json::json!({
            "file": session.path.display().to_string(),
            "outcome": outcome,
            "removed_turns": er.removed_turns,
            "labels": er.labels,
            "backup": backup,
            "fork": new,
            "report": super::print::report_json(&report),
        });
        // The labels come from the operations document and the names from the disk: the
        // report is redacted whole, as every printed JSON about a session is.
        let text = super::print::shown_json(&doc)?;
        std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes())?;
        return Ok(ExitStatus::Ok);
    }
    print_labels(&er);
    let name = session.path.display();
    match written {
        Written::DryRun => {
            super::print::report_line(&format!(
                "{name}: would remove turns {:?}; {}",
                er.removed_turns,
                super::print::describe("records", &report)
            ))?;
        }
        Written::Unchanged => say!("{name}: nothing to change"),
        Written::InPlace { backup } => {
            say!(
                "{name}: edited (backup: {}; `cchist undo --session {}` restores it)",
                backup.display(),
                session.id
            );
        }
        Written::Forked {
            id,
            path,
            binary,
            left_out,
        } => {
            for note in super::print::fork_binary_notes(&binary, &left_out) {
                say!("{note}");
            }
            say!(
                "{name}: left untouched; edited copy written to {}",
                path.display()
            );
            println!("{}", super::print::resume_line(&path, &id));
        }
    }
    Ok(ExitStatus::Ok)
}

fn print_labels(r: &EditReport) {
    for (label, uuid) in &r.labels {
        if label != uuid {
            say!("{label} -> {uuid}");
        }
    }
}
