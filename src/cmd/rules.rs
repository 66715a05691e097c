//! `cchist rules`: the built-in secret rules (id, whether on by default, name, description).

use std::io::Write;

use cchist::error::ExitStatus;
use cchist::stages::redact::{rules::RULES, RedactOptions, Redactor};
use clap::Args;
use serde_json::json;

use super::args::Format;

/// `cchist rules`.
#[derive(Args, Debug)]
pub struct RulesArgs {
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also print each rule's description.
    #[arg(long)]
    pub long: bool,
    /// Print the prefilter's keywords of the default rules instead, one per line (for
    /// comparisons such as `rg -c -i -F -f`).
    #[arg(long)]
    pub keywords: bool,
}

pub fn run(args: RulesArgs) -> anyhow::Result<ExitStatus> {
    print(args.long, args.keywords, args.format)
}

/// Print the rule list (or the keywords).
pub fn print(long: bool, keywords: bool, format: Format) -> anyhow::Result<ExitStatus> {
    let mut out = std::io::stdout().lock();
    if keywords {
        let r = Redactor::new(&RedactOptions::default()).map_err(anyhow::Error::msg)?;
        for k in r.keywords() {
            writeln!(out, "{k}")?;
        }
        return Ok(ExitStatus::Ok);
    }
    if format == Format::Json {
        let v: Vec<_> = RULES
            .iter()
            .map(|r| {
                json!({
                    "id": r.id,
                    "title": r.title,
                    "description": r.description,
                    "default": r.default_on,
                    "keywords": r.keywords.iter().map(|k| k.text).collect::<Vec<_>>(),
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
    } else {
        for r in RULES {
            let on = if r.default_on { "on " } else { "off" };
            writeln!(out, "{:<30} {on}  {}", r.id, r.title)?;
            if long {
                writeln!(out, "    {}\n", r.description)?;
            }
        }
    }
    Ok(ExitStatus::Ok)
}
