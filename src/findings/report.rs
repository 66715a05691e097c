//! Findings reports: human text, JSON, and SARIF 2.1.0 (for GitHub code scanning).
//!
//! No report ever holds a secret: a [`Finding`] carries the rule, file, line, JSON path and a
//! keyed fingerprint only, and the parts of those that come from the input (a uuid, a tool id
//! in a message, a JSON key in a path) go through the default redaction before any format
//! prints them ([`shown`]): a secret used as an id is still a secret. So do file names
//! ([`shown_name`]): a sub-agent transcript may be named after one.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::findings::Finding;

/// `x` as a report may show it: its uuid, JSON path and message (which names tool ids, record
/// types, tool names) with every secret the default rules find replaced by its marker.
pub fn shown(x: &Finding) -> Finding {
    use crate::stages::redact::shown_text;
    Finding {
        uuid: x.uuid.as_deref().map(|u| shown_text(u).into_owned()),
        path: x.path.as_deref().map(|p| shown_text(p).into_owned()),
        message: shown_text(&x.message).into_owned(),
        ..x.clone()
    }
}

/// A file name or path as a report may show it: every secret the default rules find in its
/// text replaced by its marker (`subagents/agent-[REDACTED:github-pat].jsonl`). Only what is
/// printed changes: the file itself is read and written under its real name.
pub fn shown_name(name: &str) -> String {
    crate::stages::redact::shown_text(name).into_owned()
}

/// `files` with each file name [`shown_name`] and each finding [`shown`].
pub fn shown_files(files: &[FileFindings]) -> Vec<FileFindings> {
    files
        .iter()
        .map(|f| FileFindings {
            file: shown_name(&f.file),
            findings: f.findings.iter().map(shown).collect(),
        })
        .collect()
}

/// Findings of one file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FileFindings {
    /// The file, as given or walked.
    pub file: String,
    /// Its findings, in line order.
    pub findings: Vec<Finding>,
}

/// One line per finding: `file:line: rule: message [path] (fingerprint)`.
///
/// Everything that comes from the input (file names, paths, uuids) is printed with control
/// characters escaped: a uuid holding `\n::error::` must not start a line of its own in a CI
/// log.
pub fn text(files: &[FileFindings]) -> String {
    text_colored(files, false)
}

/// How bad a finding is: a secret (`error`) or a structural or policy defect (`warning`).
pub fn severity(rule: &str) -> &'static str {
    if crate::stages::redact::rules::find(rule).is_some() {
        "error"
    } else {
        "warning"
    }
}

/// ANSI SGR codes of the colored text report (the colors of ripgrep's: path magenta, line
/// green; the rule red for a secret, yellow for a defect; details dim).
pub mod ansi {
    /// `s` wrapped in SGR `code` when `on`.
    pub fn paint(on: bool, code: &str, s: &str) -> String {
        if on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    /// A file path.
    pub const PATH: &str = "35";
    /// A line number.
    pub const LINE: &str = "32";
    /// A rule of severity `error`.
    pub const ERROR: &str = "1;31";
    /// A rule of severity `warning`.
    pub const WARNING: &str = "1;33";
    /// Details (JSON path, uuid, fingerprint).
    pub const DIM: &str = "2";
    /// The SGR code of a rule's severity.
    pub fn rule(rule: &str) -> &'static str {
        if super::severity(rule) == "error" {
            ERROR
        } else {
            WARNING
        }
    }
}

/// [`text`], with ANSI colors when `color`: the same characters otherwise.
pub fn text_colored(files: &[FileFindings], color: bool) -> String {
    let mut out = Vec::new();
    write_text(files, color, &mut out).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the report is text")
}

/// [`text_colored`], written to `w` a finding at a time: a report of a million findings is
/// not held whole, nor its findings copied as shown ([`shown_files`]) all at once.
pub fn write_text(
    files: &[FileFindings],
    color: bool,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use ansi::paint;
    for f in files {
        let file = shown_name(&f.file);
        let name = paint(color, ansi::PATH, &printable(&file));
        for x in &f.findings {
            let x = shown(x);
            let mut out = format!(
                "{}:{}: {}: {}",
                name,
                paint(color, ansi::LINE, &x.line.to_string()),
                paint(color, ansi::rule(&x.rule), &printable(&x.rule)),
                printable(&x.message)
            );
            let mut detail = String::new();
            if let Some(p) = &x.path {
                detail += &format!(" at {}", printable(p));
            }
            if let Some(u) = &x.uuid {
                detail += &format!(" [{}]", printable(u));
            }
            if let Some(fp) = &x.fingerprint {
                detail += &format!(" (fingerprint {fp})");
            }
            out += &paint(color && !detail.is_empty(), ansi::DIM, &detail);
            out.push('\n');
            w.write_all(out.as_bytes())?;
        }
    }
    Ok(())
}

/// How many findings of each rule `files` hold (what [`json()`]'s `summary.by_rule` says),
/// without building the report.
pub fn by_rule(files: &[FileFindings]) -> BTreeMap<&str, usize> {
    let mut by_rule: BTreeMap<&str, usize> = BTreeMap::new();
    for x in files.iter().flat_map(|f| &f.findings) {
        *by_rule.entry(&x.rule).or_default() += 1;
    }
    by_rule
}

/// `s` with control characters (C0, DEL, C1, line and paragraph separators, bidirectional
/// overrides) written as `\u{…}` escapes; everything else as is. What cchist prints from a
/// transcript or a file name goes through this (or [`printable_text`]), so it cannot move the
/// cursor, overwrite what was printed (CR), retitle the terminal or write the clipboard
/// (OSC 52).
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, |_| false)
}

/// [`printable`] for text of several lines (a turn, a message): newlines and tabs are kept.
pub fn printable_text(s: &str) -> std::borrow::Cow<'_, str> {
    escaped(s, |c| c == '\n' || c == '\t')
}

fn escaped(s: &str, keep: impl Fn(char) -> bool) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
            && !keep(c)
    };
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| {
                if bad(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// The JSON report: `{"files": [{"file", "findings": [...]}], "summary": {...}}`.
pub fn json(files: &[FileFindings]) -> Value {
    let files = &shown_files(files);
    let total: usize = files.iter().map(|f| f.findings.len()).sum();
    let by_rule = by_rule(files);
    json!({
        "files": files,
        "summary": {"files": files.len(), "findings": total, "by_rule": by_rule},
    })
}

/// A SARIF 2.1.0 log. `describe(rule)` gives a rule's one-line description.
pub fn sarif(files: &[FileFindings], describe: &dyn Fn(&str) -> String) -> Value {
    let files = &shown_files(files);
    let mut rules: Vec<&str> = files
        .iter()
        .flat_map(|f| f.findings.iter().map(|x| x.rule.as_str()))
        .collect();
    rules.sort_unstable();
    rules.dedup();
    let index: BTreeMap<&str, usize> = rules.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let results: Vec<Value> = files
        .iter()
        .flat_map(|f| f.findings.iter().map(move |x| (f, x)))
        .map(|(f, x)| {
            let mut physical = json!({"artifactLocation": {"uri": uri(&f.file)}});
            if x.line > 0 {
                physical["region"] = json!({"startLine": x.line});
            }
            let mut message = x.message.clone();
            if let Some(p) = &x.path {
                message += &format!(" (at {p})");
            }
            let mut r = json!({
                "ruleId": x.rule,
                "ruleIndex": index[x.rule.as_str()],
                "level": "error",
                "message": {"text": message},
                "locations": [{"physicalLocation": physical}],
            });
            if let Some(fp) = &x.fingerprint {
                r["partialFingerprints"] = json!({"cchistFingerprint/v1": fp});
            }
            if let Some(kind) = x.kind {
                r["properties"] = json!({"kind": kind});
            }
            r
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cchist",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/cchist/cchist",
                "rules": rules.iter().map(|r| json!({
                    "id": r,
                    "shortDescription": {"text": describe(r)},
                })).collect::<Vec<_>>(),
            }},
            "results": results,
        }],
    })
}

/// A file path as a SARIF URI reference: relative paths stay relative (GitHub resolves them
/// against the checkout), absolute ones become `file://` URIs; characters outside the URI
/// alphabet are percent-encoded.
pub fn uri(path: &str) -> String {
    let path = normalize(path);
    let mut out = String::with_capacity(path.len() + 7);
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

/// Remove `.` and `..` segments lexically (`..` at the start of a relative path stays).
fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_newlines_kept_only_in_text() {
        let s = "a\u{1b}]52;c;eA==\u{7}b\rc\u{9b}d\u{202e}e\tf\ng";
        assert_eq!(
            printable(s),
            "a\\u{1b}]52;c;eA==\\u{7}b\\u{d}c\\u{9b}d\\u{202e}e\\u{9}f\\u{a}g"
        );
        assert_eq!(
            printable_text(s),
            "a\\u{1b}]52;c;eA==\\u{7}b\\u{d}c\\u{9b}d\\u{202e}e\tf\ng"
        );
        assert!(matches!(
            printable("plain é"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    fn finding(rule: &str, line: usize) -> Finding {
        Finding {
            rule: rule.into(),
            line,
            uuid: None,
            path: Some("$.message.content".into()),
            fingerprint: Some("ab12cd34".into()),
            message: "found".into(),
            kind: None,
        }
    }

    #[test]
    fn text_escapes_control_characters_from_the_input() {
        let mut f = finding("github-pat", 3);
        f.uuid = Some("u1\n::error::owned\u{1b}[2J".into());
        f.path = Some("$[\"a\\rb\"]".into());
        let out = text(&[FileFindings {
            file: "x\ny.jsonl".into(),
            findings: vec![f],
        }]);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(!out.contains('\u{1b}') && !out.contains('\r'));
        assert!(out.contains("\\u{a}::error::owned\\u{1b}"), "{out}");
    }

    #[test]
    fn uris_are_normalized() {
        assert_eq!(uri("/a/b/../c d.jsonl"), "file:///a/c%20d.jsonl");
        assert_eq!(uri("../x/./y.jsonl"), "../x/y.jsonl");
    }

    #[test]
    fn sarif_has_rules_results_and_regions() {
        let files = vec![FileFindings {
            file: "dir/my session.jsonl".into(),
            findings: vec![finding("aws-access-key-id", 3), finding("max-bytes", 0)],
        }];
        let v = sarif(&files, &|r| format!("rule {r}"));
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["rules"].as_array().unwrap().len(), 2);
        let r0 = &run["results"][0];
        assert_eq!(r0["ruleId"], "aws-access-key-id");
        assert_eq!(
            r0["locations"][0]["physicalLocation"]["region"]["startLine"],
            3
        );
        assert_eq!(
            r0["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "dir/my%20session.jsonl"
        );
        assert!(run["results"][1]["locations"][0]["physicalLocation"]
            .get("region")
            .is_none());
    }
}
