//! CI policies: the `[check]` table of a pipeline file, evaluated by `cchist check --policy`.
//!
//! ```toml
//! [check]
//! deny_rules = ["*"]                  # redact rules (globs) that must find nothing
//! max_transcript_bytes = 52428800     # a transcript larger than this is a finding
//! max_tool_output_bytes = 1048576     # a single tool result larger than this is a finding
//! forbidden_tools = ["mcp__*"]        # tool names (globs) that must not be called
//! forbidden_record_types = []         # record types (globs) that must not appear
//! require_valid = true                # validate's findings (chain, pairing) are findings
//! ```

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use serde_json::Value;

use crate::error::{options, OptionError};
use crate::findings::Finding;
use crate::io::framing;
use crate::transcript::record::Record;

/// The `[check]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Redact rules (globs) that must find nothing; default every rule.
    #[serde(default = "all_rules")]
    pub deny_rules: Vec<String>,
    /// Largest transcript allowed, in bytes.
    #[serde(default)]
    pub max_transcript_bytes: Option<u64>,
    /// Largest single tool output allowed, in bytes.
    #[serde(default)]
    pub max_tool_output_bytes: Option<u64>,
    /// Tool names (globs) that must not be called.
    #[serde(default)]
    pub forbidden_tools: Vec<String>,
    /// Record types (globs) that must not appear.
    #[serde(default)]
    pub forbidden_record_types: Vec<String>,
    /// Report `validate`'s structural findings.
    #[serde(default = "yes")]
    pub require_valid: bool,
}

fn all_rules() -> Vec<String> {
    vec!["*".into()]
}

fn yes() -> bool {
    true
}

/// A built policy.
pub struct Policy {
    /// The configuration.
    pub config: PolicyConfig,
    deny_rules: GlobSet,
    forbidden_tools: GlobSet,
    forbidden_types: GlobSet,
}

fn globs(list: &[String], key: &str) -> Result<GlobSet, OptionError> {
    let mut b = GlobSetBuilder::new();
    for g in list {
        b.add(Glob::new(g).map_err(|e| OptionError::key(key, format!("`{g}`: {e}")))?);
    }
    b.build().map_err(|e| OptionError::key(key, e.to_string()))
}

impl Policy {
    /// Build from the `[check]` table.
    pub fn from_table(t: &toml::Table) -> Result<Policy, OptionError> {
        let config: PolicyConfig = options(t.clone())?;
        Ok(Policy {
            deny_rules: globs(&config.deny_rules, "deny_rules")?,
            forbidden_tools: globs(&config.forbidden_tools, "forbidden_tools")?,
            forbidden_types: globs(&config.forbidden_record_types, "forbidden_record_types")?,
            config,
        })
    }

    /// True when a secret finding of `rule` violates the policy.
    pub fn denies_rule(&self, rule: &str) -> bool {
        self.deny_rules.is_match(rule)
    }

    /// Every non-secret finding for one transcript.
    pub fn evaluate(&self, data: &[u8]) -> Vec<Finding> {
        let mut out = Vec::new();
        let c = &self.config;
        if let Some(max) = c.max_transcript_bytes {
            if data.len() as u64 > max {
                out.push(finding(
                    "max-transcript-bytes",
                    0,
                    None,
                    format!(
                        "transcript is {} bytes, more than the policy's {max}",
                        data.len()
                    ),
                ));
            }
        }
        let scan_types = !c.forbidden_record_types.is_empty();
        let scan_tools = !c.forbidden_tools.is_empty();
        for l in framing::lines(data, 1) {
            let needs_header = scan_types || scan_tools;
            let long = c
                .max_tool_output_bytes
                .is_some_and(|m| l.body.len() as u64 > m);
            if !needs_header && !long {
                continue;
            }
            let mut rec = Record::from_line(l);
            let Some(h) = rec.header().cloned() else {
                continue;
            };
            let uuid = h.uuid();
            if scan_types && self.forbidden_types.is_match(h.kind.as_str()) {
                out.push(finding(
                    "forbidden-record-type",
                    l.number,
                    uuid,
                    format!("record type `{}` is forbidden by the policy", h.kind),
                ));
            }
            if scan_tools {
                for b in h.blocks().iter().filter(|b| b.kind() == "tool_use") {
                    let name = b.name().unwrap_or("");
                    if self.forbidden_tools.is_match(name) {
                        out.push(finding(
                            "forbidden-tool",
                            l.number,
                            uuid,
                            format!("tool `{name}` is forbidden by the policy"),
                        ));
                    }
                }
            }
            if let (true, Some(max)) = (long, c.max_tool_output_bytes) {
                if let Ok(v) = rec.value() {
                    for (i, size) in tool_output_sizes(v) {
                        if size > max {
                            out.push(Finding {
                                path: Some(format!("$.message.content[{i}].content")),
                                ..finding(
                                    "max-tool-output-bytes",
                                    l.number,
                                    uuid,
                                    format!(
                                        "tool output of {size} bytes, more than the policy's {max}"
                                    ),
                                )
                            });
                        }
                    }
                }
            }
        }
        if c.require_valid {
            out.extend(crate::findings::validate::validate(data));
        }
        out.sort_by(|a, b| (a.line, &a.rule).cmp(&(b.line, &b.rule)));
        out
    }
}

/// Bytes of text in each tool_result block of a record: `(block index, size)`.
fn tool_output_sizes(v: &Value) -> Vec<(usize, u64)> {
    let Some(blocks) = v.pointer("/message/content").and_then(Value::as_array) else {
        return Vec::new();
    };
    blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|(i, b)| {
            let size = match b.get("content") {
                Some(Value::String(s)) => s.len(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(
                        |p| match p.get("text").or_else(|| p.pointer("/source/data")) {
                            Some(Value::String(s)) => s.len(),
                            _ => 0,
                        },
                    )
                    .sum(),
                _ => 0,
            };
            (i, size as u64)
        })
        .collect()
}

fn finding(rule: &str, line: usize, uuid: Option<&str>, message: String) -> Finding {
    Finding::new(rule, line, uuid, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(toml_text: &str) -> Policy {
        Policy::from_table(&toml::from_str(toml_text).unwrap()).unwrap()
    }

    #[test]
    fn reports_each_policy_violation() {
        let data = [
            crate::testkit::prompt("1", None, "hi"),
            crate::testkit::tool_call("2", "1", "m", "t", "mcp__x__y"),
            crate::testkit::tool_result("3", "2", "t", "0123456789abcdef"),
            r#"{"type":"progress","uuid":"4","parentUuid":"3"}"#.to_string() + "\n",
        ]
        .concat();
        let p = policy(
            "max_transcript_bytes = 10\nmax_tool_output_bytes = 8\nforbidden_tools = [\"mcp__*\"]\nforbidden_record_types = [\"progress\"]\n",
        );
        let rules: Vec<(String, usize)> = p
            .evaluate(data.as_bytes())
            .into_iter()
            .map(|f| (f.rule, f.line))
            .collect();
        assert_eq!(
            rules,
            vec![
                ("max-transcript-bytes".into(), 0),
                ("forbidden-tool".into(), 2),
                ("max-tool-output-bytes".into(), 3),
                ("forbidden-record-type".into(), 4),
            ]
        );
        assert!(p.denies_rule("aws-access-key-id"));
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert!(Policy::from_table(&toml::from_str("max_bytes = 1").unwrap()).is_err());
    }
}
