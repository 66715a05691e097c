//! `cchist validate [PATH…]`: structural defects, exit 1 when any is found.

use std::io::Write;

use cchist::error::ExitStatus;
use cchist::io::input;
use cchist::io::input::Input;
use serde_json::json;

use std::path::PathBuf;

use clap::Args;

use super::args::Format;

/// `cchist validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Transcript files or folders. None, or `-`, reads stdin.
    pub paths: Vec<PathBuf>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Only walk files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub include: Vec<String>,
    /// Skip files matching this glob; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
}

pub fn run(args: ValidateArgs) -> anyhow::Result<ExitStatus> {
    let walk = super::plan::inputs(&args.paths, &args.include, &args.exclude)?;
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
            Ok(d) => d,
            Err(e) => {
                eprintln!("cchist: error: {e}");
                status = ExitStatus::Error;
                files.push(json!({"file": origin.to_string(), "error": e.to_string()}));
                continue;
            }
        };
        let findings = cchist::findings::validate::validate(&data);
        if !findings.is_empty() && status == ExitStatus::Ok {
            status = ExitStatus::Findings;
        }
        match args.format {
            Format::Text => {
                for f in &findings {
                    let uuid = f
                        .uuid
                        .as_deref()
                        .map(|u| format!(" [{u}]"))
                        .unwrap_or_default();
                    writeln!(out, "{origin}:{}: {}: {}{uuid}", f.line, f.rule, f.message)?;
                }
            }
            Format::Json => files.push(json!({"file": origin.to_string(), "findings": findings})),
        }
    }
    if args.format == Format::Json {
        serde_json::to_writer_pretty(&mut out, &json!({ "files": files }))?;
        writeln!(out)?;
    } else if status == ExitStatus::Ok {
        eprintln!("cchist: {} file(s) valid", walk.inputs.len());
    }
    Ok(status)
}
