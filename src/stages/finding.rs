//! The one shape of what a stage reports rather than changes: [`Finding`]. `findings/`
//! (validation, policies, report formats) builds on it.

/// A finding a stage reports without (or besides) changing anything: a secret's location, a
/// defect. It never holds a secret value.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Finding {
    /// Rule or check id (`aws-access-key-id`, `dangling-parent`, …).
    pub rule: String,
    /// 1-based line in the input, 0 when the finding concerns the whole file.
    pub line: usize,
    /// Record uuid, when the record has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// JSON path inside the record (`$.message.content[0].text`), when relevant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A short keyed fingerprint, stable across runs (for baselines), never the value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
    /// Human-readable explanation.
    pub message: String,
    /// `echo`: another occurrence of a secret a rule found elsewhere in the session (the rule
    /// and fingerprint are that finding's), replaced because the session knew it
    /// (`stages::redact::known`); `name`: a secret in the file's path ([`NAME`]). Absent for
    /// a finding in the content, of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
}

/// [`Finding::kind`] of an echo.
pub const ECHO: &str = "echo";

/// [`Finding::kind`] of a secret in a file's name or in the name of a folder it is in (the
/// finding's file is that path, shown redacted).
pub const NAME: &str = "name";

impl Finding {
    /// A finding about a line (0: the whole file), without JSON path or fingerprint.
    pub fn new(rule: &str, line: usize, uuid: Option<&str>, message: String) -> Finding {
        Finding {
            rule: rule.into(),
            line,
            uuid: uuid.map(str::to_string),
            path: None,
            fingerprint: None,
            message,
            kind: None,
        }
    }
}
