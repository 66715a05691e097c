//! [`Redactor`]: compiled rules, allowlist and replacement; redacts JSONL lines and texts.

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use regex::bytes::Regex;
use sha2::Sha256;

use super::json::{self, esc, Frame, PathGlob, Seg, Tok};
use super::known::SecretBytes;
use super::scan::{self, Compiled, Engine, Found, Hit};
use super::{checks, rules, RedactOptions, KEY_ENV};
use crate::error::OptionError;
use crate::transcript::record::Record;

mod line;
mod splice;

/// Where the per-machine fingerprint key lives, under the user's config folder.
const MACHINE_KEY_FILE: &str = "cchist/redact.key";

/// The per-machine fingerprint key: read from `$XDG_CONFIG_HOME/cchist/redact.key` (or
/// `~/.config/…`), created there with 32 random bytes and mode 0600 when absent. None when
/// there is no config folder, it cannot be written, or the file is readable by others: a
/// fingerprint keyed by a known key would let anyone confirm a guessed weak password.
pub fn machine_key() -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| std::path::Path::new(&h).join(".config"))
        })?;
    let path = base.join(MACHINE_KEY_FILE);
    let read = |p: &std::path::Path| -> Option<Vec<u8>> {
        let meta = std::fs::symlink_metadata(p).ok()?;
        if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
            return None;
        }
        let k = std::fs::read(p).ok()?.trim_ascii().to_vec();
        (k.len() >= 32).then_some(k)
    };
    if path.exists() {
        return read(&path);
    }
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let mut raw = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut raw))
        .ok()?;
    let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    // Written aside, then linked into place: a concurrent run either wins or reads ours.
    match crate::io::replace::persist_new(&path, format!("{hex}\n").as_bytes(), 0o600) {
        Ok(true) => Some(hex.into_bytes()),
        _ => read(&path),
    }
}

#[derive(Debug)]
enum Part {
    Lit(String),
    Rule,
    Hash,
}

/// A finding in one line or text: which rule, where, and a keyed fingerprint of the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFinding {
    /// Index of the rule ([`Redactor::rule_id`]).
    pub rule: usize,
    /// JSON path of the string (None for plain text).
    pub path: Option<Vec<Seg>>,
    /// Byte offset of the secret in the decoded string or text.
    pub offset: usize,
    /// Length of the secret in bytes.
    pub len: usize,
    /// Keyed short hash of the secret.
    pub fingerprint: String,
    /// The secret itself, kept in memory only: its other occurrences in the session are
    /// replaced too ([`super::known`]). Never printed (its `Debug` shows the length).
    pub secret: SecretBytes,
}

/// The outcome for one line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LineResult {
    /// The redacted line, when something was replaced.
    pub line: Option<Vec<u8>>,
    /// What was found.
    pub findings: Vec<LineFinding>,
    /// Content blocks (`…content[i]`) holding a change: thinking blocks among them must go.
    pub blocks: Vec<Vec<Seg>>,
    /// Secrets replaced besides those of `findings` (the later lines of a private-key block
    /// split over the strings of an array, reported once): (rule, bytes).
    pub secrets: Vec<(usize, SecretBytes)>,
}

/// Compiled rules, allowlist and replacement: everything needed to redact lines and texts.
pub struct Redactor {
    pub(super) engine: Engine,
    allow_regexes: Vec<Regex>,
    allow_values: HashSet<Vec<u8>>,
    allow_paths: Vec<PathGlob>,
    allow_types: Vec<String>,
    template: Vec<Part>,
    placeholder_re: Regex,
    key: Option<Vec<u8>>,
    /// The fingerprint key: the configured key, else the per-machine key (loaded on the
    /// first fingerprint), else none (findings then carry no fingerprint).
    fp_key: std::sync::OnceLock<Option<Vec<u8>>>,
    has_field_rules: bool,
    /// The declared known values, as [`Redactor::known_values`] gives them.
    known: std::sync::OnceLock<super::known::Known>,
    known_values: Vec<Vec<u8>>,
    /// Index of the `private-key` rule, when active: the rule that owns key-block lines split
    /// over the strings of an array (`structuredPatch` lines).
    pem_rule: Option<usize>,
}

fn keyed_hash(key: &[u8], data: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    let out = mac.finalize().into_bytes();
    out[..4].iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_template(t: &str) -> std::result::Result<Vec<Part>, OptionError> {
    if t.is_empty() {
        return Err(OptionError::key("replacement", "must not be empty"));
    }
    if t.chars().any(|c| c == '"' || c == '\\' || c.is_control()) {
        return Err(OptionError::key(
            "replacement",
            "must not hold quotes, backslashes or control characters",
        ));
    }
    let mut parts = Vec::new();
    let mut rest = t;
    while let Some(p) = rest.find('{') {
        if p > 0 {
            parts.push(Part::Lit(rest[..p].to_string()));
        }
        let r = &rest[p..];
        if let Some(r2) = r.strip_prefix("{rule}") {
            parts.push(Part::Rule);
            rest = r2;
        } else if let Some(r2) = r.strip_prefix("{hash}") {
            parts.push(Part::Hash);
            rest = r2;
        } else {
            return Err(OptionError::key(
                "replacement",
                format!("unknown placeholder at `{r}`; use {{rule}} or {{hash}}"),
            ));
        }
    }
    if !rest.is_empty() {
        parts.push(Part::Lit(rest.to_string()));
    }
    Ok(parts)
}

fn read_key(opts: &RedactOptions) -> std::result::Result<Option<Vec<u8>>, OptionError> {
    if let Some(p) = &opts.key_file {
        let k = std::fs::read(p).map_err(|e| {
            OptionError::key("key_file", format!("cannot read {}: {e}", p.display()))
        })?;
        let k = k.trim_ascii().to_vec();
        if k.is_empty() {
            return Err(OptionError::key(
                "key_file",
                format!("{} is empty", p.display()),
            ));
        }
        return Ok(Some(k));
    }
    Ok(std::env::var_os(KEY_ENV)
        .map(|v| v.into_encoded_bytes())
        .filter(|k| !k.is_empty()))
}

/// The values `known_values` and `known_values_file` declare. The file holds one value a line,
/// or a dotenv file (`KEY=value`, `export KEY="value"`; `#` comments): its values. Errors name
/// the file, never a value.
fn read_known_values(opts: &RedactOptions) -> std::result::Result<Vec<Vec<u8>>, OptionError> {
    let too_short = format!(
        "too short to replace safely (fewer than {} bytes: it would match inside words), so no run would replace it; nothing was written — remove it, or give the longer secret it is part of",
        super::known::MIN_LEN
    );
    if let Some(i) = opts
        .known_values
        .iter()
        .position(|v| v.trim().len() < super::known::MIN_LEN)
    {
        return Err(OptionError::key(
            "known_values",
            format!("value {} is {too_short}", i + 1),
        ));
    }
    let mut out: Vec<Vec<u8>> = opts
        .known_values
        .iter()
        .map(|v| v.as_bytes().to_vec())
        .collect();
    if let Some(p) = &opts.known_values_file {
        let text = std::fs::read(p).map_err(|e| {
            OptionError::key(
                "known_values_file",
                format!("cannot read {}: {}", p.display(), e.kind()),
            )
        })?;
        if let Some(line) = super::known::short_value_line(&text) {
            return Err(OptionError::key(
                "known_values_file",
                format!("{}:{line}: the value is {too_short}", p.display()),
            ));
        }
        out.extend(super::known::values_of_file(&text));
    }
    Ok(out)
}

/// The fewest bytes, whitespace aside, of a key that pseudonyms are made with.
pub const MIN_KEY_BYTES: usize = 16;

/// A key that pseudonyms are written with must be hard to guess: each pseudonym in a shared
/// transcript is the keyed hash of a secret, so with a guessable key (one byte, a word, blanks)
/// anyone can confirm a guessed password or token against it offline. At least
/// [`MIN_KEY_BYTES`] bytes that are not whitespace; the error never holds the key, nor its
/// length.
fn check_key_strength(key: &[u8], opts: &RedactOptions) -> std::result::Result<(), OptionError> {
    let strong = key.iter().filter(|b| !b.is_ascii_whitespace()).count();
    if strong >= MIN_KEY_BYTES {
        return Ok(());
    }
    let (blame, source) = match &opts.key_file {
        Some(p) => ("key_file", format!("the key in {}", p.display())),
        None => ("pseudonymize", format!("the key in {KEY_ENV}")),
    };
    Err(OptionError::key(
        blame,
        format!("{source} is too short to make pseudonyms with: it needs at least {MIN_KEY_BYTES} bytes that are not whitespace, or anyone could confirm a guessed secret against its pseudonym; nothing was written — use a random key, e.g. `openssl rand -hex 16`"),
    ))
}

/// Custom keywords must survive JSON escaping as they are (no `"`, `\\`, `/`, control
/// characters) and be ASCII (only `\\u00XX` escapes can then hide them, which the prefilter
/// watches for).
fn valid_keyword(k: &str) -> bool {
    k.len() >= 2
        && k.bytes().all(|c| c.is_ascii_graphic() || c == b' ')
        && !k.contains(['"', '\\', '/'])
}

impl Redactor {
    /// Compile the options; errors name the offending key.
    pub fn new(opts: &RedactOptions) -> std::result::Result<Redactor, OptionError> {
        let sel = &opts.rules;
        for id in sel
            .enable
            .iter()
            .chain(&sel.disable)
            .chain(sel.only.iter().flatten())
        {
            if rules::find(id).is_none() {
                return Err(OptionError::key(
                    "rules",
                    format!("unknown rule `{id}`; `cchist rules` lists them"),
                ));
            }
        }
        let mut compiled = Vec::new();
        let mut keywords = Vec::new();
        let mut seen = HashSet::new();
        for c in &opts.custom {
            if c.id.is_empty()
                || !c
                    .id
                    .chars()
                    .all(|x| x.is_ascii_alphanumeric() || matches!(x, '.' | '_' | '-'))
            {
                return Err(OptionError::key(
                    "custom",
                    format!("rule id `{}` must be letters, digits, `.`, `_`, `-`", c.id),
                ));
            }
            if rules::find(&c.id).is_some() || !seen.insert(c.id.clone()) {
                return Err(OptionError::key(
                    "custom",
                    format!("rule id `{}` is already taken", c.id),
                ));
            }
            if c.keywords.is_empty() {
                return Err(OptionError::key(
                    "custom",
                    format!(
                        "rule `{}` needs `keywords` (literals every match contains)",
                        c.id
                    ),
                ));
            }
            if let Some(i) = c.keywords.iter().position(|k| !valid_keyword(k)) {
                return Err(OptionError::key(
                    "custom",
                    format!(
                        "rule `{}`: keyword #{} must be 2+ ASCII characters without quotes, backslashes, slashes or control characters",
                        c.id,
                        i + 1
                    ),
                ));
            }
            let checks = c.entropy.map(checks::Check::Entropy).into_iter().collect();
            let title = if c.description.is_empty() {
                c.id.clone()
            } else {
                c.description.clone()
            };
            compiled.push(
                Compiled::new(scan::Spec {
                    id: &c.id,
                    title: &title,
                    regex: &c.regex,
                    builtin: false,
                    before: c.before.unwrap_or(usize::MAX),
                    checks,
                    field: false,
                    trim: false,
                })
                .map_err(|e| OptionError::key("custom", e.to_string()))?,
            );
            keywords.push(
                c.keywords
                    .iter()
                    .map(|k| scan::KwSpec {
                        text: k.as_bytes().to_vec(),
                        ci: true,
                        confirm: rules::Confirm::Any,
                    })
                    .collect(),
            );
        }
        for r in rules::RULES {
            let on = match &sel.only {
                Some(only) => only.iter().any(|x| x == r.id),
                None => r.default_on || sel.enable.iter().any(|x| x == r.id),
            } && !sel.disable.iter().any(|x| x == r.id);
            if !on {
                continue;
            }
            compiled.push(
                Compiled::new(scan::Spec {
                    id: r.id,
                    title: r.title,
                    regex: r.regex,
                    builtin: true,
                    before: r.before,
                    checks: r.checks.to_vec(),
                    field: r.field,
                    trim: r.trim,
                })
                .map_err(OptionError::general)?,
            );
            keywords.push(r.keywords.iter().map(scan::KwSpec::from).collect());
        }
        let has_field_rules = compiled.iter().any(|c| c.field);
        let pem_rule = compiled.iter().position(|c| c.id == "private-key");
        let engine = Engine::new(compiled, keywords);

        let allow_regexes = opts
            .allow
            .regexes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                regex::bytes::RegexBuilder::new(r)
                    .size_limit(scan::CUSTOM_NFA_LIMIT)
                    .build()
                    .map_err(|e| {
                        OptionError::key(
                            "allow",
                            format!(
                                "regex #{} is not valid: {}",
                                i + 1,
                                scan::regex_problem(&e.to_string())
                            ),
                        )
                    })
            })
            .collect::<std::result::Result<_, _>>()?;
        let allow_paths = opts
            .allow
            .paths
            .iter()
            .map(|p| PathGlob::parse(p).map_err(|e| OptionError::key("allow", format!("path {e}"))))
            .collect::<std::result::Result<_, _>>()?;
        let key = read_key(opts)?;
        if opts.pseudonymize && key.is_none() {
            return Err(OptionError::key("pseudonymize", format!("needs a key: set {KEY_ENV} or `key_file` (the same key gives the same pseudonyms across files)"
            )));
        }
        let default = if opts.pseudonymize {
            "[REDACTED:{rule}:{hash}]"
        } else {
            "[REDACTED:{rule}]"
        };
        let template = parse_template(opts.replacement.as_deref().unwrap_or(default))?;
        let hashed = template.iter().any(|p| matches!(p, Part::Hash));
        if hashed && key.is_none() {
            return Err(OptionError::key(
                "replacement",
                format!("{{hash}} needs a key: set {KEY_ENV} or `key_file`"),
            ));
        }
        if let Some(k) = key.as_deref().filter(|_| hashed) {
            check_key_strength(k, opts)?;
        }
        let mut ph = String::new();
        for p in &template {
            match p {
                Part::Lit(s) => ph.push_str(&regex::escape(s)),
                Part::Rule => ph.push_str("[A-Za-z0-9._-]{1,80}"),
                Part::Hash => ph.push_str("[0-9a-f]{8}"),
            }
        }
        let placeholder_re = Regex::new(&ph).expect("escaped template is a valid regex");
        let known_values = read_known_values(opts)?;
        Ok(Redactor {
            engine,
            allow_regexes,
            allow_values: opts
                .allow
                .values
                .iter()
                .map(|v| v.as_bytes().to_vec())
                .collect(),
            allow_paths,
            allow_types: opts.allow.record_types.clone(),
            template,
            placeholder_re,
            fp_key: match &key {
                Some(k) => std::sync::OnceLock::from(Some(k.clone())),
                None => std::sync::OnceLock::new(),
            },
            key,
            has_field_rules,
            pem_rule,
            known: std::sync::OnceLock::new(),
            known_values,
        })
    }

    /// The secrets the options declare (`known_values`, `known_values_file`), each replaced
    /// by the placeholder of rule [`super::known::KNOWN_VALUE_RULE`] wherever it occurs.
    pub fn known_values(&self) -> &super::known::Known {
        self.known.get_or_init(|| {
            let mut k = super::known::Known::default();
            for v in &self.known_values {
                k.add(
                    v,
                    super::known::KnownSecret {
                        rule: super::known::KNOWN_VALUE_RULE.into(),
                        placeholder: self.placeholder_named(super::known::KNOWN_VALUE_RULE, v),
                        fingerprint: self.fingerprint(v),
                    },
                );
            }
            k
        })
    }

    /// Id of active rule `i`.
    pub fn rule_id(&self, i: usize) -> &str {
        &self.engine.rules[i].id
    }

    /// Short name of active rule `i`.
    pub fn rule_title(&self, i: usize) -> &str {
        &self.engine.rules[i].title
    }

    /// The prefilter's keywords (lower-cased, unique).
    pub fn keywords(&self) -> Vec<String> {
        self.engine.keywords()
    }

    /// A keyed short hash of `secret` (the fingerprint in reports); empty when there is no
    /// key to take (no configured key, no per-machine key file).
    pub fn fingerprint(&self, secret: &[u8]) -> String {
        match self.fp_key.get_or_init(machine_key) {
            Some(k) => keyed_hash(k, secret),
            None => String::new(),
        }
    }

    /// True when records of this type (or `type/subtype`) are allowlisted.
    pub fn allows_record(&self, rec: &Record<'_>) -> bool {
        if self.allow_types.is_empty() {
            return false;
        }
        let Some(h) = rec.header() else { return false };
        let full = h.subtype().as_ref().map(|s| format!("{}/{s}", h.kind));
        self.allow_types
            .iter()
            .any(|t| *t == h.kind.as_str() || Some(t) == full.as_ref())
    }
}
