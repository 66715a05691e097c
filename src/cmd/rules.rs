//! `cchist rules`: the built-in secret rules (id, whether on by default, name, description);
//! with `--all`, also the structural (`validate`) and policy finding ids and the stage types.

use std::io::Write;

use cchist::error::ExitStatus;
use cchist::findings::{self, FindingDef};
use cchist::stages::redact::{rules::RULES, RedactOptions, Redactor};
use cchist::stages::REGISTRY;
use clap::Args;
use serde_json::json;

use super::args::{Format, FormatArgs};

/// `cchist rules`.
#[derive(Args, Debug)]
pub struct RulesArgs {
    /// Report format.
    #[command(flatten)]
    pub format: FormatArgs,
    /// Also print each rule's description.
    #[arg(long)]
    pub long: bool,
    /// Print the prefilter's keywords of the default rules instead, one per line (for
    /// comparisons such as `rg -c -i -F -f`).
    #[arg(long)]
    pub keywords: bool,
    /// Also list the structural (`validate`) and policy finding ids and the pipeline stages.
    #[arg(long, conflicts_with = "keywords")]
    pub all: bool,
}

pub fn run(args: RulesArgs) -> anyhow::Result<ExitStatus> {
    if args.all {
        return print_all(args.format.get());
    }
    print(args.long, args.keywords, args.format.get())
}

/// Every finding id (secret, structural, policy) and every stage type, from their registries.
fn print_all(format: Format) -> anyhow::Result<ExitStatus> {
    let mut out = std::io::stdout().lock();
    let defs = |d: &[FindingDef]| -> Vec<_> {
        d.iter()
            .map(|d| json!({"id": d.id, "description": d.about}))
            .collect()
    };
    if format == Format::Json {
        let v = json!({
            "secret": RULES.iter().map(|r| json!({"id": r.id, "description": r.title, "default": r.default_on})).collect::<Vec<_>>(),
            "structural": defs(findings::STRUCTURAL),
            "policy": defs(findings::POLICY),
            "stages": REGISTRY.iter().map(|d| json!({"type": d.name, "description": d.about})).collect::<Vec<_>>(),
        });
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(ExitStatus::Ok);
    }
    writeln!(out, "secret rules (redact, check):")?;
    for r in RULES {
        writeln!(out, "  {:<30} {}", r.id, r.title)?;
    }
    for (title, list) in [
        ("structural findings (validate):", findings::STRUCTURAL),
        ("policy findings (check --policy):", findings::POLICY),
    ] {
        writeln!(out, "\n{title}")?;
        for d in list {
            writeln!(out, "  {:<30} {}", d.id, d.about)?;
        }
    }
    writeln!(out, "\nstages (pipeline files, `type = …`):")?;
    for d in REGISTRY {
        writeln!(out, "  {:<30} {}", d.name, d.about)?;
    }
    Ok(ExitStatus::Ok)
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
