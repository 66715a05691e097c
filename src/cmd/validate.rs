//! `cchist validate [PATH…]`: structural defects, exit 1 when any is found.

use super::print::say;
use std::io::Write;

use cchist::error::ExitStatus;
use cchist::io::input;
use cchist::io::input::Input;
use serde_json::json;

use std::path::PathBuf;

use clap::Args;

use super::args::{Format, FormatArgs};

/// `cchist validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Transcript files or folders. None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Report format.
    #[command(flatten)]
    pub format: FormatArgs,
    /// Which transcripts: a session, all, include/exclude globs.
    #[command(flatten)]
    pub scan: super::args::ScanArgs,
    /// Also report what only a file another tool wrote gets wrong: uuids that are not UUIDs
    /// (`cchist import` checks its output so).
    #[arg(long)]
    pub strict: bool,
    /// Print nothing but errors: the exit status says whether anything was found.
    #[arg(short = 'q', long)]
    pub quiet: bool,
}

pub fn run(args: ValidateArgs) -> anyhow::Result<ExitStatus> {
    let format = args.format.get();
    super::print::set_quiet(args.quiet);
    let mut paths =
        super::plan::scan_paths(&args.paths, args.scan.session.as_deref(), args.scan.all)?;
    let implicit_stdin = paths.is_empty();
    if implicit_stdin {
        paths.extend(super::plan::no_path_input(true)?);
    }
    let walk = super::plan::inputs(&paths, &args.scan.include, &args.scan.exclude)?;
    let mut status = ExitStatus::Ok;
    let mut files = Vec::new();
    let mut out = std::io::stdout().lock();
    for inp in &walk.inputs {
        let origin = inp.origin();
        let data = match inp {
            Input::Stdin => input::read_stdin_all(),
            Input::File { path, .. } => input::open(path).map(|f| f.data),
        };
        let data = match data {
            Ok(d) if implicit_stdin && d.is_empty() => return Err(super::plan::empty_stdin()),
            Ok(d) => d,
            Err(e) => {
                say!("cchist: error: {e}");
                status = ExitStatus::Error;
                files.push(json!({"file": origin.to_string(), "error": e.to_string()}));
                continue;
            }
        };
        let stem = match inp {
            Input::File { path, .. } => path.file_stem().map(|s| s.to_string_lossy().into_owned()),
            Input::Stdin => None,
        };
        let findings =
            cchist::findings::validate::validate_named(&data, stem.as_deref(), args.strict);
        if !findings.is_empty() && status == ExitStatus::Ok {
            status = ExitStatus::Findings;
        }
        match format {
            Format::Text if super::print::quiet() => {}
            Format::Text => {
                let c = super::color::stdout();
                let one = [cchist::findings::report::FileFindings {
                    file: origin.to_string(),
                    findings,
                }];
                out.write_all(cchist::findings::report::text_colored(&one, c).as_bytes())?;
            }
            Format::Json => {
                let shown: Vec<_> = findings
                    .iter()
                    .map(cchist::findings::report::shown)
                    .collect();
                files.push(json!({"file": origin.to_string(), "findings": shown}))
            }
        }
    }
    if format == Format::Json {
        // A file may be named after a token: printed redacted, as its findings are.
        out.write_all(super::print::shown_json(&json!({ "files": files }))?.as_bytes())?;
    } else if status == ExitStatus::Ok {
        say!(
            "cchist: {}",
            super::print::count(walk.inputs.len(), "file valid", "files valid")
        );
    }
    Ok(status)
}
