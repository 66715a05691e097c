//! Stage `redact`: find secrets in every string of every record and replace them.
//!
//! ```toml
//! [[stage]]
//! type = "redact"
//! rules = { disable = ["generic-high-entropy"], enable = [] }   # or only = [...]
//! custom = [{ id = "acme-token", regex = 'acme_[a-z0-9]{32}', keywords = ["acme_"] }]
//! allow = { values = ["not-a-secret"], regexes = ['^test_'], paths = ["$.toolUseResult"], record_types = ["file-history-snapshot"] }
//! replacement = "[REDACTED:{rule}]"     # {rule} and {hash}
//! pseudonymize = false                  # [REDACTED:<rule>:<8 hex>], keyed by CCHIST_REDACT_KEY or key_file
//! ```
//!
//! How a line is handled ([`Redactor::redact_line`]):
//!
//! 1. The keyword prefilter ([`scan`]) runs over the raw line. A line with no confirmed keyword
//!    occurrence and no escape that could hide one (`\u00XX`, or `:\/` for `://`; keywords are
//!    ASCII without `/`) is left untouched without being parsed.
//! 2. Otherwise a string scanner ([`json`]) walks the line. Each string value holding an
//!    occurrence (or such an escape) is decoded and searched; a JSON member whose key names a
//!    secret (`"apiKey": "…"`) is also searched as `apiKey": "…`.
//! 3. Secrets become `[REDACTED:<rule>]`; a string is searched again after its replacements
//!    until nothing is found, so redacting twice changes nothing. Changed strings are
//!    re-encoded as `JSON.stringify` writes them and spliced back: every other byte of the line
//!    stays as it was. A secret used as an object key is replaced too (a second one in the
//!    same object gets `#2`, so the object keeps its members), and reports name it redacted.
//!    A string that still holds escapes after decoding (stringified JSON, `\u0041` one level
//!    down) is searched at its inner level too; a private-key block whose lines are the strings
//!    of an array (an Edit's `structuredPatch`) has each body line replaced.
//! 4. A change inside a `thinking` / `redacted_thinking` block removes that block (its
//!    signature would no longer verify); the record stays.
//!
//! A line that is not valid JSON is redacted as plain text, and so is a `tool-results/*.txt`
//! file ([`redact_text_file`]). Lines that are not object records reach the stage in every
//! pipeline, session-scoped ones included ([`Stage::opaque`]).
//!
//! Findings carry the rule, line, JSON path and a fingerprint: the first 8 hex digits of
//! HMAC-SHA256 of the secret, keyed by `CCHIST_REDACT_KEY` (or `key_file`), else by a random
//! per-machine key kept 0600 in `$XDG_CONFIG_HOME/cchist/redact.key` (created on first use;
//! without it, no fingerprint): never by a public key, which would let anyone confirm a guessed
//! weak password offline. With `pseudonymize`, the keyed hash is the pseudonym. No report ever
//! holds a secret.

mod bigrams;
pub mod checks;
mod confirm;
pub mod fields;
pub mod json;
pub mod known;
mod redactor;
pub mod rules;
pub mod scan;
// The one-pass filter runs on x86_64 only (AVX2/AVX-512); elsewhere it is built but unused.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
mod teddy;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{OptionError, Result};
use crate::stages::Finding;
use crate::stages::{Cx, Stage, StageDef, Verdict};
use crate::transcript::record::Record;
use json::Seg;
pub use known::SecretBytes;
pub use redactor::{LineFinding, LineResult, Redactor};

/// The redactor of the default options, compiled once per process: what cchist shows of a
/// session outside a pipeline (prompts in `ls` and `history`, ids in findings reports) goes
/// through it, so nothing printed holds a secret (invariant 3).
pub fn default_redactor() -> &'static Redactor {
    static R: std::sync::OnceLock<Redactor> = std::sync::OnceLock::new();
    R.get_or_init(|| Redactor::new(&Default::default()).expect("the built-in rules compile"))
}

/// The secrets the runs of this process found ([`remember_shown`]) and their matcher: a
/// value a rule found in a session's content (a `curl -u user:` password) that is also in a
/// printed path (its project folder's name) is replaced there too ([`shown_text`]).
static SHOWN_KNOWN: std::sync::Mutex<(known::Known, Option<Option<known::Echoes>>)> =
    std::sync::Mutex::new((known::Known::new(), None));

/// At most this many secrets are remembered for what is printed ([`remember_shown`]).
const SHOWN_LIMIT: usize = 65_536;

/// Remember the secrets `k` holds for everything this process prints ([`shown_text`]).
pub fn remember_shown(k: &known::Known) {
    if k.is_empty() {
        return;
    }
    let mut g = SHOWN_KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let before = g.0.len();
    // Bounded as a stream's set is: a run that finds hundreds of thousands of distinct
    // secrets (a generated or hostile input) does not keep a second copy of them all.
    if before + k.len() > SHOWN_LIMIT {
        return;
    }
    g.0.merge(k);
    if g.0.len() != before {
        // Built again when next shown: a bulk run adds a session at a time.
        g.1 = None;
    }
}

/// `text` with every secret the default rules find replaced by its marker, and every secret
/// a run of this process found ([`remember_shown`]) by its placeholder.
pub fn shown_text(text: &str) -> std::borrow::Cow<'_, str> {
    let ruled = match default_redactor().redact_text(text.as_bytes()).0 {
        Some(t) => std::borrow::Cow::Owned(String::from_utf8_lossy(&t).into_owned()),
        None => std::borrow::Cow::Borrowed(text),
    };
    let ruled = without_fragments(ruled);
    let mut g = SHOWN_KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if g.0.is_empty() {
        return ruled;
    }
    if g.1.is_none() {
        g.1 = Some(g.0.echoes());
    }
    match g
        .1
        .as_ref()
        .and_then(|e| e.as_ref())
        .and_then(|e| e.text(ruled.as_bytes()))
    {
        Some((t, _)) => std::borrow::Cow::Owned(String::from_utf8_lossy(&t).into_owned()),
        None => ruled,
    }
}

/// A vendor token's prefix and 8 or more of its characters: what is left of a token that
/// something cut short (a command printing its first 20 characters, a log line's cut), which
/// no rule matches whole. Only what cchist *shows* (errors, logs, reports) is held to it: a
/// transcript's text is not rewritten on so little evidence, but a message can lose a few
/// characters for nothing.
static FRAGMENT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"\b(?:gh[pousr]_|github_pat_|gl(?:pat|ptt|rt|dt)-|sk-(?:ant|proj|svcacct|admin|or-v1)-",
        r"|[sr]k_(?:live|test)_|xox[abeoprs]-|xapp-|(?:AKIA|ASIA)[A-Z0-9]|hf_|npm_|pypi-|SG\.",
        r"|AIza|ya29\.|GOCSPX-|whsec_|dckr_pat_|glsa_|lin_api_|ntn_|sbp_|hv[sb]\.",
        r"|AGE-SECRET-KEY-1|shp(?:at|ca|pa|ss)_|gsk_|xai-|pplx-|r8_|do[pro]_v1_)",
        r"[A-Za-z0-9_\-]{8,}"
    ))
    .expect("the fragment pattern is valid")
});

/// `text` with every token fragment ([`FRAGMENT`]) replaced by `[REDACTED:token-fragment]`.
fn without_fragments(text: std::borrow::Cow<'_, str>) -> std::borrow::Cow<'_, str> {
    match FRAGMENT.replace_all(&text, "[REDACTED:token-fragment]") {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(t) => std::borrow::Cow::Owned(t),
    }
}

/// The name a file named `name` takes when its name reads as a secret by the default rules
/// (those [`shown_text`] shows every name by): each marker of the redacted name in a form
/// file systems and shells take (`[REDACTED:github-pat]` → `REDACTED-github-pat`), the rest
/// of the name (an extension) kept; with the byte offset after the last placeholder, where a
/// numeric suffix goes when the name is taken. `None` for a name that reads as none. The
/// rules alone decide, not the secrets this process has found so far ([`remember_shown`]):
/// what a run renames does not depend on which file of it ran first.
pub fn file_safe_name(name: &str) -> Option<(String, usize)> {
    let shown =
        String::from_utf8_lossy(&default_redactor().redact_text(name.as_bytes()).0?).into_owned();
    safe_form(name, &shown)
}

/// The name a file named `name` takes once the secrets in it are replaced (`shown`: `name`
/// with markers or placeholders where its secrets were), in the form [`file_safe_name`]
/// gives; `None` when `shown` is `name`.
pub fn safe_form(name: &str, shown: &str) -> Option<(String, usize)> {
    if shown == name {
        return None;
    }
    let (mut out, mut rest, mut at) = (String::new(), shown, 0);
    while let Some(open) = rest.find("[REDACTED") {
        out.push_str(&rest[..open]);
        let tail = &rest[open + 1..];
        let close = tail.find(']').unwrap_or(tail.len());
        let safe = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
        let mut marker: String = tail[..close]
            .chars()
            .map(|c| if safe(c) { c } else { '-' })
            .collect();
        while marker.ends_with('-') {
            marker.pop();
        }
        out.push_str(&marker);
        at = out.len();
        rest = tail.get(close + 1..).unwrap_or("");
    }
    out.push_str(rest);
    // Whatever else the redaction left that a name should not hold (it came from the name,
    // but a marker's neighbour could be a path separator in another form).
    let out: String = out
        .chars()
        .map(|c| if c == '/' || c == '\0' { '-' } else { c })
        .collect();
    (!out.is_empty() && out != "." && out != "..").then_some((out, at))
}

/// `text` redacted as [`shown_text`] does, then cut to `max` characters ([`cut_shown`]).
/// Redaction comes first: a cut secret no longer matches any rule (a password cut before its
/// `@`, a token cut after its prefix), so a cut-then-redacted text may keep part of one.
pub fn shown_prefix(text: &str, max: usize) -> String {
    cut_shown(&shown_text(text), max)
}

/// The first `max` characters of the already redacted `text`, `…` appended when it was cut.
/// A `[REDACTED…]` marker the cut would split is left out whole, so what remains is neither
/// a broken marker nor one that reads as another.
pub fn cut_shown(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut end = text
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(text.len(), |(i, _)| i);
    if let Some(open) = text[..end].rfind("[REDACTED") {
        if !text[open..end].contains(']') {
            end = open;
        }
    }
    let mut out = text[..end].to_string();
    out.push('…');
    out
}

/// The last `max` characters of `text` after redacting all of it (the end of a command's
/// error output is what says why it failed), `…` prepended when it was cut; a marker the cut
/// would split is left out whole.
pub fn shown_suffix(text: &str, max: usize) -> String {
    let shown = shown_text(text);
    let n = shown.chars().count();
    if n <= max {
        return shown.into_owned();
    }
    let mut start = shown
        .char_indices()
        .nth(n - max + 1)
        .map_or(shown.len(), |(i, _)| i);
    if let Some(open) = shown[..start].rfind("[REDACTED") {
        if let Some(close) = shown[open..].find(']').map(|c| open + c + 1) {
            if close > start {
                start = close;
            }
        }
    }
    format!("…{}", &shown[start..])
}

/// Environment variable holding the key for pseudonyms and fingerprints.
pub const KEY_ENV: &str = "CCHIST_REDACT_KEY";

/// Which built-in rules run.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSelection {
    /// Run only these built-in rules (custom rules always run).
    #[serde(default)]
    pub only: Option<Vec<String>>,
    /// Turn on rules that are off by default.
    #[serde(default)]
    pub enable: Vec<String>,
    /// Turn these rules off.
    #[serde(default)]
    pub disable: Vec<String>,
}

/// A rule from the pipeline file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomRule {
    /// Id (`[A-Za-z0-9._-]+`, not a built-in id).
    pub id: String,
    /// Regex (Rust syntax, run on decoded strings as bytes); a group named `secret` marks
    /// the part to replace, else the whole match is replaced.
    pub regex: String,
    /// Literals every match contains (matched case-insensitively); lines without one are
    /// skipped. ASCII, at least 2 characters, no `"`, `\`, `/` or control characters.
    pub keywords: Vec<String>,
    /// What the rule finds.
    #[serde(default)]
    pub description: String,
    /// Minimum Shannon entropy of the secret.
    #[serde(default)]
    pub entropy: Option<f32>,
    /// Farthest a match may start before its keyword (default: anywhere in the string).
    #[serde(default)]
    pub before: Option<usize>,
}

/// What is never redacted.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowOptions {
    /// Secrets matching one of these regexes.
    #[serde(default)]
    pub regexes: Vec<String>,
    /// These exact secret values.
    #[serde(default)]
    pub values: Vec<String>,
    /// Strings at (or under) these JSON paths: `$.toolUseResult`, `$.message.content[*].input`,
    /// `**.signature` (`*` one step, `[*]` any index, `**` any number of steps).
    #[serde(default)]
    pub paths: Vec<String>,
    /// Records of these types (`type`, or `type/subtype` such as `attachment/file`).
    #[serde(default)]
    pub record_types: Vec<String>,
}

/// Options of the `redact` stage.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedactOptions {
    /// Built-in rule selection.
    #[serde(default)]
    pub rules: RuleSelection,
    /// Extra rules.
    #[serde(default)]
    pub custom: Vec<CustomRule>,
    /// Allowlist.
    #[serde(default)]
    pub allow: AllowOptions,
    /// Replacement template with `{rule}` and `{hash}`.
    #[serde(default)]
    pub replacement: Option<String>,
    /// Replace with `[REDACTED:<rule>:<8 hex>]`: a keyed hash, equal for equal secrets.
    #[serde(default)]
    pub pseudonymize: bool,
    /// File holding the key (else `CCHIST_REDACT_KEY`).
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// Values that are secrets wherever they occur (a project's real passwords), replaced
    /// by `[REDACTED:known-value]` with no rule needed.
    #[serde(default)]
    pub known_values: Vec<String>,
    /// A file of such values: one a line, or a dotenv file (its values).
    #[serde(default)]
    pub known_values_file: Option<PathBuf>,
}

/// The `redact` stage (or, with `report_only`, the scanner behind `cchist check`).
pub struct Redact {
    redactor: std::sync::Arc<Redactor>,
    report_only: bool,
}

impl Redact {
    /// A stage that redacts (or, with `report_only`, only reports findings).
    pub fn new(redactor: impl Into<std::sync::Arc<Redactor>>, report_only: bool) -> Redact {
        Redact {
            redactor: redactor.into(),
            report_only,
        }
    }

    /// The redactor.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }
}

/// Build the stage from its pipeline-file options.
/// The stage's entry in the registry.
pub const DEF: StageDef = StageDef {
    name: "redact",
    about: "find secrets (keys, tokens, passwords, private keys) in every string and replace them",
    build,
};

fn build(table: toml::Table) -> std::result::Result<Box<dyn Stage>, OptionError> {
    // A type error quotes the value it got (`invalid type: string "…"`): the value may be a
    // secret (an `allow.values` entry), so quoted text is cut from the message.
    let key = table.to_string();
    let opts: RedactOptions = crate::stages::options(table).map_err(|mut e| {
        e.message = unquote(&e.message);
        e
    })?;
    Ok(Box::new(Redact::new(shared_redactor(key, &opts)?, false)))
}

/// The compiled redactor for these options, shared by every `redact` stage built with the
/// same table while one is alive: a pipeline that repeats the stage holds one set of rules
/// and automata (about 100 KB), not one per stage. A redactor is immutable once built.
fn shared_redactor(
    key: String,
    opts: &RedactOptions,
) -> std::result::Result<std::sync::Arc<Redactor>, OptionError> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, Weak};
    static BUILT: OnceLock<Mutex<HashMap<String, Weak<Redactor>>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(r) = built.get(&key).and_then(Weak::upgrade) {
        return Ok(r);
    }
    let r = Arc::new(Redactor::new(opts)?);
    built.retain(|_, w| w.strong_count() > 0);
    built.insert(key, Arc::downgrade(&r));
    Ok(r)
}

/// `msg` with every double-quoted part replaced by `"…"`.
fn unquote(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut inside = false;
    let mut chars = msg.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                if !inside {
                    out.push_str("\"…\"");
                }
                inside = !inside;
            }
            '\\' if inside => {
                chars.next();
            }
            _ if inside => {}
            _ => out.push(c),
        }
    }
    out
}

impl Stage for Redact {
    fn name(&self) -> &'static str {
        DEF.name
    }

    fn applies_to_copies(&self) -> bool {
        true
    }

    fn known_values(&self) -> Option<&known::Known> {
        Some(self.redactor.known_values()).filter(|k| !k.is_empty())
    }

    fn secrets(&self) -> crate::stages::Secrets {
        if self.report_only {
            crate::stages::Secrets::Reports
        } else {
            crate::stages::Secrets::Replaces
        }
    }

    fn record(&self, rec: &mut Record<'_>, cx: &mut Cx) -> Result<Verdict> {
        // The bytes as they stand now: a stage before this one may have edited the record as
        // a value (or created it), and its input line is then stale.
        let bytes = rec.current_bytes();
        self.secret_files(&bytes, cx);
        let res = self.redactor.redact_line(&bytes);
        drop(bytes);
        if res.findings.is_empty() || self.redactor.allows_record(rec) {
            return Ok(Verdict::Keep);
        }
        self.remember(&res.findings, &res.secrets, cx);
        let uuid = rec.header().and_then(|h| h.uuid().map(str::to_string));
        for f in &res.findings {
            let id = self.redactor.rule_id(f.rule);
            cx.report(Finding {
                rule: id.to_string(),
                line: rec.line,
                uuid: uuid.clone(),
                path: f.path.as_deref().map(json::render),
                fingerprint: (!f.fingerprint.is_empty()).then(|| f.fingerprint.clone()),
                message: self.redactor.rule_title(f.rule).to_string(),
                kind: None,
            });
            cx.count(&format!("redact/{id}"), 1);
        }
        cx.count("redactions", res.findings.len() as u64);
        if self.report_only {
            return Ok(Verdict::Keep);
        }
        if let Some(new) = res.line {
            rec.set_raw(new);
        }
        if !res.blocks.is_empty() {
            let removed = remove_thinking(rec, &res.blocks);
            if removed > 0 {
                cx.count("redact/thinking-blocks-removed", removed);
            }
        }
        Ok(Verdict::Keep)
    }

    /// A line that is not a JSON object (truncated, BOM, array, string) is redacted as any
    /// line is: JSON strings one by one when it parses, else as text.
    fn opaque(&self, rec: &mut Record<'_>, cx: &mut Cx) -> Result<()> {
        self.record(rec, cx).map(|_| ())
    }

    /// `tool-results/*.txt`: the whole text is scanned at once, so a key block spread over
    /// several lines is still found.
    fn text(&self, text: &[u8], cx: &mut Cx) -> Result<Option<Vec<u8>>> {
        let (new, findings) = self.redactor.redact_text(text);
        self.remember(&findings, &[], cx);
        for f in &findings {
            let id = self.redactor.rule_id(f.rule);
            let upto = f.offset.min(text.len());
            cx.findings.push(Finding {
                rule: id.to_string(),
                line: 1 + memchr::memchr_iter(b'\n', &text[..upto]).count(),
                uuid: None,
                path: None,
                fingerprint: (!f.fingerprint.is_empty()).then(|| f.fingerprint.clone()),
                message: self.redactor.rule_title(f.rule).to_string(),
                kind: None,
            });
            cx.count(&format!("redact/{id}"), 1);
        }
        cx.count("redactions", findings.len() as u64);
        Ok(if self.report_only { None } else { new })
    }
}

impl Redact {
    /// A Read, Write or Edit of a file whose values are secrets (`.env`, credentials, a PEM
    /// key: [`known::is_secret_file`]) makes those values known secrets of the session, even
    /// where no rule would match their later repeats. Only lines naming a file path
    /// (`file_path` / `filePath`) and such a file are parsed.
    fn secret_files(&self, raw: &[u8], cx: &mut Cx) {
        // One search per line (`ath":` ends both `"file_path":` and `"filePath":`), then only
        // the path strings that follow it are looked at: a record is parsed only when one names
        // a secret file.
        static FIND: std::sync::OnceLock<memchr::memmem::Finder<'static>> =
            std::sync::OnceLock::new();
        let finder = FIND.get_or_init(|| {
            memchr::memmem::FinderBuilder::new().build_forward_with_ranker(JsonRank, b"ath\":")
        });
        let names_secret_file = finder.find_iter(raw).any(|at| {
            let rest = &raw[at + 5..];
            let rest = rest.trim_ascii_start();
            let Some(rest) = rest.strip_prefix(b"\"") else {
                return false;
            };
            let end = memchr::memchr(b'"', rest).unwrap_or(rest.len());
            let path = &rest[..end];
            let base = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
            known::is_secret_file(&String::from_utf8_lossy(base))
        });
        if !names_secret_file {
            return;
        }
        let Ok(v) = crate::transcript::record::parse_plain_value(raw) else {
            return;
        };
        let mut values = Vec::new();
        collect_secret_files(&v, None, &mut values);
        let r = &self.redactor;
        // A value that stands for a secret without being one (`changeme`, `${TOKEN}`, AWS's
        // documented example keys) is no more a secret in a `.env` than anywhere else.
        for value in values.into_iter().filter(|v| !checks::placeholder(v)) {
            cx.known.add(
                &value,
                known::KnownSecret {
                    rule: known::KNOWN_VALUE_RULE.into(),
                    placeholder: r.placeholder_named(known::KNOWN_VALUE_RULE, &value),
                    fingerprint: r.fingerprint(&value),
                },
            );
        }
    }

    /// Make every secret found a known secret of the run ([`known`]): its other occurrences
    /// get the same placeholder.
    fn remember(&self, findings: &[LineFinding], extra: &[(usize, SecretBytes)], cx: &mut Cx) {
        let r = &self.redactor;
        let all = findings
            .iter()
            .map(|f| (f.rule, &f.secret, f.fingerprint.as_str()))
            .chain(extra.iter().map(|(rule, s)| (*rule, s, "")));
        for (rule, secret, fp) in all {
            cx.known.add(
                &secret.0,
                known::KnownSecret {
                    rule: r.rule_id(rule).to_string(),
                    placeholder: r.placeholder_of(rule, &secret.0),
                    fingerprint: if fp.is_empty() {
                        r.fingerprint(&secret.0)
                    } else {
                        fp.to_string()
                    },
                },
            );
        }
    }
}

/// Byte frequencies of a JSON transcript, for the prefilter of a `memmem` search: the default
/// ranks (of prose and code) take `"` and `:` for rare, and the search for `ath":` stopped
/// at every key of every record; `h"` is rare in JSON (the probe's cost halves on the corpus).
struct JsonRank;

impl memchr::arch::all::packedpair::HeuristicFrequencyRank for JsonRank {
    fn rank(&self, byte: u8) -> u8 {
        match byte {
            b'h' => 10,
            b'"' => 20,
            _ => 255,
        }
    }
}

/// The secret values of every object below `v` that names a secret file (`file_path` /
/// `filePath`) beside its content (`content`, `new_string`, `old_string`, …); `name` is the
/// file named by an enclosing object (a Read's `toolUseResult.file`).
fn collect_secret_files(v: &Value, name: Option<&str>, out: &mut Vec<Vec<u8>>) {
    match v {
        Value::Object(m) => {
            let own = ["file_path", "filePath"]
                .iter()
                .find_map(|k| m.get(*k).and_then(Value::as_str))
                .map(|p| p.rsplit('/').next().unwrap_or(p));
            let name = own.or(name).filter(|n| known::is_secret_file(n));
            for (k, x) in m {
                match (name, x) {
                    (Some(n), Value::String(s))
                        if matches!(
                            k.as_str(),
                            "content"
                                | "new_string"
                                | "old_string"
                                | "newString"
                                | "oldString"
                                | "originalFile"
                        ) =>
                    {
                        out.extend(known::values_in_secret_file(n, s.as_bytes()))
                    }
                    _ => collect_secret_files(x, name, out),
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                collect_secret_files(x, name, out);
            }
        }
        _ => {}
    }
}

fn lookup<'v>(v: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, s| match s {
        Seg::Key(k) => v.get(k.as_str()),
        Seg::Idx(i) => v.get(*i),
    })
}

fn lookup_mut<'v>(v: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    path.iter().try_fold(v, |v, s| match s {
        Seg::Key(k) => v.get_mut(k.as_str()),
        Seg::Idx(i) => v.get_mut(*i),
    })
}

/// Remove the thinking blocks among `blocks` (paths to `…content[i]`); returns how many.
pub(crate) fn remove_thinking(rec: &mut Record<'_>, blocks: &[Vec<Seg>]) -> u64 {
    let Ok(v) = rec.value() else { return 0 };
    let mut doomed: Vec<&Vec<Seg>> = blocks
        .iter()
        .filter(|p| {
            matches!(
                lookup(v, p)
                    .and_then(|b| b.get("type"))
                    .and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        })
        .collect();
    if doomed.is_empty() {
        return 0;
    }
    // Later indices first, so earlier ones stay valid.
    doomed.sort_by(|a, b| b.cmp(a));
    let Ok(v) = rec.value_mut() else { return 0 };
    let mut n = 0;
    for p in doomed {
        let (Some(Seg::Idx(i)), parent) = (p.last(), &p[..p.len() - 1]) else {
            continue;
        };
        if let Some(Value::Array(a)) = lookup_mut(v, parent) {
            if *i < a.len() {
                a.remove(*i);
                n += 1;
            }
        }
    }
    n
}

/// Outcome of redacting one plain-text file.
#[derive(Debug, Default, Clone)]
pub struct TextFileReport {
    /// (rule id, 1-based line, fingerprint) per secret.
    pub findings: Vec<(String, usize, String)>,
    /// True when the file was (or, in a dry run, would be) rewritten.
    pub changed: bool,
}

/// Redact a plain-text file (a `tool-results/*.txt` beside a session). Unless `dry_run`, the
/// file is replaced atomically when something changed (mode and mtime kept).
pub fn redact_text_file(
    r: &Redactor,
    path: &Path,
    dry_run: bool,
) -> std::io::Result<TextFileReport> {
    use std::io::Write;
    let meta = std::fs::metadata(path)?;
    let data = std::fs::read(path)?;
    let (new, findings) = r.redact_text(&data);
    let lines = |off: usize| 1 + data[..off].iter().filter(|&&b| b == b'\n').count();
    let report = TextFileReport {
        findings: findings
            .iter()
            .map(|f| {
                (
                    r.rule_id(f.rule).to_string(),
                    lines(f.offset),
                    f.fingerprint.clone(),
                )
            })
            .collect(),
        changed: new.is_some(),
    };
    if let (Some(new), false) = (new, dry_run) {
        use std::os::unix::fs::PermissionsExt;
        let mut tmp = crate::io::replace::temp(path)?;
        tmp.write_all(&new)?;
        tmp.commit(Some(meta.permissions().mode()), meta.modified().ok())?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests;
