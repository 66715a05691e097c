//! [`Redactor`]: compiled rules, allowlist and replacement; redacts JSONL lines and texts.

use std::collections::HashSet;

use hmac::{Hmac, Mac};
use regex::bytes::Regex;
use sha2::Sha256;

use super::json::{self, esc, Frame, PathGlob, Seg, Tok};
use super::scan::{self, Compiled, Engine, Found, Hit};
use super::{checks, rules, RedactOptions, KEY_ENV};
use crate::error::OptionError;
use crate::transcript::record::Record;

const DEFAULT_FINGERPRINT_KEY: &[u8] =
    b"cchist fingerprint v1 (set CCHIST_REDACT_KEY for an unguessable one)";

#[derive(Debug)]
enum Part {
    Lit(String),
    Rule,
    Hash,
}

/// A finding in one line or text: which rule, where, and a keyed fingerprint of the secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineFinding {
    /// Index into [`Redactor::rule_ids`].
    pub rule: usize,
    /// JSON path of the string (None for plain text).
    pub path: Option<Vec<Seg>>,
    /// Byte offset of the secret in the decoded string or text.
    pub offset: usize,
    /// Length of the secret in bytes.
    pub len: usize,
    /// Keyed short hash of the secret.
    pub fingerprint: String,
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
    fp_key: Vec<u8>,
    has_field_rules: bool,
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
            if let Some(k) = c.keywords.iter().find(|k| !valid_keyword(k)) {
                return Err(OptionError::key("custom", format!("rule `{}`: keyword {k:?} must be 2+ ASCII characters without quotes, backslashes, slashes or control characters",
                    c.id
                )));
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
        let engine = Engine::new(compiled, keywords);

        let allow_regexes = opts
            .allow
            .regexes
            .iter()
            .map(|r| {
                Regex::new(r)
                    .map_err(|e| OptionError::key("allow", format!("bad regex {r:?}: {e}")))
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
        if template.iter().any(|p| matches!(p, Part::Hash)) && key.is_none() {
            return Err(OptionError::key(
                "replacement",
                format!("{{hash}} needs a key: set {KEY_ENV} or `key_file`"),
            ));
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
            fp_key: key
                .clone()
                .unwrap_or_else(|| DEFAULT_FINGERPRINT_KEY.to_vec()),
            key,
            has_field_rules,
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

    /// A keyed short hash of `secret` (the pseudonym, and the fingerprint in reports).
    pub fn fingerprint(&self, secret: &[u8]) -> String {
        keyed_hash(&self.fp_key, secret)
    }

    /// Redact one JSONL line (prefiltered).
    pub fn redact_line(&self, line: &[u8]) -> LineResult {
        self.line(line, false)
    }

    /// Redact one line with every rule over every string: no prefilter. The property tests
    /// check that [`Redactor::redact_line`] gives the same result.
    pub fn redact_line_unfiltered(&self, line: &[u8]) -> LineResult {
        self.line(line, true)
    }

    fn line(&self, line: &[u8], full: bool) -> LineResult {
        let mut raw_hits = Vec::new();
        let mut escaped = false;
        if !full {
            self.engine.hits(line, true, &mut raw_hits);
            if raw_hits.is_empty() {
                return LineResult::default();
            }
            // An escape that could hide a keyword: strings holding one are decoded and searched.
            escaped = raw_hits.iter().any(|h| h.rule == scan::ESCAPE);
            raw_hits.retain(|h| h.rule != scan::ESCAPE);
            raw_hits.sort_unstable_by_key(|h| (h.pos, h.rule));
        }
        // Strings starting after the last occurrence hold none (unless an escape hides one).
        let stop = if full || escaped {
            usize::MAX
        } else {
            raw_hits.last().map_or(0, |h| h.pos)
        };
        let mut st = LineState::default();
        let walked = json::walk_until(line, stop, |tok, frames| {
            if !tok.is_key && st.ok {
                self.string(line, tok, frames, &raw_hits, full, &mut st);
            }
        });
        if walked.is_err() || !st.ok {
            let (new, found) = self.text(line, full);
            return LineResult {
                line: new,
                findings: found,
                blocks: Vec::new(),
            };
        }
        if st.edits.is_empty() {
            return LineResult {
                line: None,
                findings: st.findings,
                blocks: st.blocks,
            };
        }
        let mut out = Vec::with_capacity(line.len());
        let mut at = 0;
        for (s, e, enc) in &st.edits {
            out.extend_from_slice(&line[at..*s]);
            out.extend_from_slice(enc);
            at = *e;
        }
        out.extend_from_slice(&line[at..]);
        st.blocks.sort();
        st.blocks.dedup();
        LineResult {
            line: Some(out),
            findings: st.findings,
            blocks: st.blocks,
        }
    }

    fn string(
        &self,
        line: &[u8],
        tok: &Tok,
        frames: &[Frame],
        raw_hits: &[Hit],
        full: bool,
        st: &mut LineState,
    ) {
        let (s, e) = (tok.start, tok.end);
        let in_range = |a: usize, b: usize| {
            let lo = raw_hits.partition_point(|h| h.pos < a);
            let hi = raw_hits.partition_point(|h| h.pos < b);
            &raw_hits[lo..hi]
        };
        let val_hits = in_range(s, e);
        let key = match frames.last() {
            Some(Frame::Obj(Some(k))) if self.has_field_rules => Some(*k),
            _ => None,
        };
        let key_hits: Vec<Hit> = match key {
            Some((ks, ke, _)) if !full => in_range(ks, ke)
                .iter()
                .filter(|h| self.engine.rules[h.rule as usize].field)
                .copied()
                .collect(),
            _ => Vec::new(),
        };
        let hidden = tok.flags & (esc::U | esc::SLASH) != 0;
        let key_hidden = key.is_some_and(|(_, _, kf)| kf & (esc::U | esc::SLASH) != 0);
        if !full && val_hits.is_empty() && key_hits.is_empty() && !hidden && !key_hidden {
            return;
        }
        let Some(text) = decoded(&line[s..e], tok.flags) else {
            st.ok = false;
            return;
        };
        let ktext = match key {
            Some((ks, ke, kf)) if full || !key_hits.is_empty() || key_hidden => {
                match decoded(&line[ks..ke], kf) {
                    Some(k) => Some((k, kf, ks)),
                    None => {
                        st.ok = false;
                        return;
                    }
                }
            }
            _ => None,
        };
        // Replacing one secret can uncover a match another hid (a greedy token class that ate
        // the next key's BEGIN line): search again until nothing is found, so that a second
        // run finds nothing.
        let mut cur = text;
        let mut path: Option<Vec<Seg>> = None;
        for round in 0..MAX_ROUNDS {
            let mut found = Vec::new();
            if full {
                self.engine.find_all(&cur, false, &mut found);
            } else if round > 0 || !val_hits.is_empty() || hidden {
                let mut hits: Vec<Hit> = if round == 0 && tok.flags == 0 {
                    val_hits
                        .iter()
                        .map(|h| Hit {
                            rule: h.rule,
                            pos: h.pos - s,
                        })
                        .collect()
                } else {
                    let mut v = Vec::new();
                    self.engine.hits(&cur, false, &mut v);
                    v
                };
                self.engine.find(&cur, &mut hits, &mut found);
            }
            if let Some((k, kf, ks)) = &ktext {
                self.field(k, &cur, *kf, &key_hits, *ks, full, &mut found);
            }
            self.finish(&cur, &mut found);
            if found.is_empty() {
                break;
            }
            let p = path.get_or_insert_with(|| json::path_of(line, frames));
            if round == 0 && self.allow_paths.iter().any(|g| g.allows(p)) {
                return;
            }
            for f in &found {
                st.findings.push(LineFinding {
                    rule: f.rule as usize,
                    path: Some(p.clone()),
                    offset: f.start,
                    len: f.end - f.start,
                    fingerprint: self.fingerprint(&cur[f.start..f.end]),
                });
            }
            cur = std::borrow::Cow::Owned(self.replace(&cur, &found));
        }
        let Some(path) = path else { return };
        for (i, seg) in path.iter().enumerate() {
            if seg == &Seg::Key("content".into()) && matches!(path.get(i + 1), Some(Seg::Idx(_))) {
                st.blocks.push(path[..i + 2].to_vec());
            }
        }
        let mut enc = Vec::with_capacity(cur.len() + 16);
        json::encode(&cur, &mut enc);
        st.edits.push((s, e, enc));
    }

    /// A JSON member `"key": "value"` searched as `key": "value` by the field rules; matches
    /// that start in the key and whose secret lies in the value are added (value offsets).
    #[allow(clippy::too_many_arguments)]
    fn field(
        &self,
        key: &[u8],
        value: &[u8],
        kflags: u8,
        key_hits: &[Hit],
        ks: usize,
        full: bool,
        found: &mut Vec<Found>,
    ) {
        let mut synth = Vec::with_capacity(key.len() + value.len() + 5);
        synth.extend_from_slice(key);
        synth.extend_from_slice(b"\": \"");
        let off = synth.len();
        synth.extend_from_slice(value);
        synth.push(b'"');
        let mut got = Vec::new();
        if full {
            self.engine.find_all(&synth, true, &mut got);
        } else {
            let mut hits: Vec<Hit> = if kflags == 0 {
                key_hits
                    .iter()
                    .map(|h| Hit {
                        rule: h.rule,
                        pos: h.pos - ks,
                    })
                    .collect()
            } else {
                let mut v = Vec::new();
                self.engine.hits(&synth, false, &mut v);
                v.retain(|h| h.pos < key.len() && self.engine.rules[h.rule as usize].field);
                v
            };
            self.engine.find(&synth, &mut hits, &mut got);
        }
        for f in got {
            if self.engine.rules[f.rule as usize].field
                && f.mstart < key.len()
                && f.start >= off
                && f.end <= off + value.len()
            {
                found.push(Found {
                    rule: f.rule,
                    start: f.start - off,
                    end: f.end - off,
                    mstart: 0,
                    mend: f.mend.saturating_sub(off).min(value.len()),
                });
            }
        }
    }

    /// Allowlist, placeholders already there, overlaps.
    fn finish(&self, text: &[u8], found: &mut Vec<Found>) {
        found.retain(|f| {
            let secret = &text[f.start..f.end];
            !self.allow_values.contains(secret)
                && !self.allow_regexes.iter().any(|r| r.is_match(secret))
        });
        if found.is_empty() {
            return;
        }
        let masks: Vec<(usize, usize)> = self
            .placeholder_re
            .find_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect();
        scan::resolve(found, &masks);
    }

    fn replace(&self, text: &[u8], found: &[Found]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            out.extend_from_slice(&text[at..f.start]);
            for p in &self.template {
                match p {
                    Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                    Part::Rule => {
                        out.extend_from_slice(self.engine.rules[f.rule as usize].id.as_bytes())
                    }
                    Part::Hash => {
                        let k = self.key.as_deref().unwrap_or(&self.fp_key);
                        out.extend_from_slice(keyed_hash(k, &text[f.start..f.end]).as_bytes());
                    }
                }
            }
            at = f.end;
        }
        out.extend_from_slice(&text[at..]);
        out
    }

    fn text(&self, text: &[u8], full: bool) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        let mut cur = std::borrow::Cow::Borrowed(text);
        let mut findings = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let mut found = Vec::new();
            if full {
                self.engine.find_all(&cur, false, &mut found);
            } else {
                let mut hits = Vec::new();
                self.engine.hits(&cur, false, &mut hits);
                if hits.is_empty() {
                    break;
                }
                self.engine.find(&cur, &mut hits, &mut found);
            }
            self.finish(&cur, &mut found);
            if found.is_empty() {
                break;
            }
            findings.extend(found.iter().map(|f| LineFinding {
                rule: f.rule as usize,
                path: None,
                offset: f.start,
                len: f.end - f.start,
                fingerprint: self.fingerprint(&cur[f.start..f.end]),
            }));
            cur = std::borrow::Cow::Owned(self.replace(&cur, &found));
        }
        match cur {
            std::borrow::Cow::Owned(v) => (Some(v), findings),
            std::borrow::Cow::Borrowed(_) => (None, findings),
        }
    }

    /// Redact a plain text (a `tool-results/*.txt` file): the new text when something changed,
    /// and the findings (offsets into `text`).
    pub fn redact_text(&self, text: &[u8]) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        self.text(text, false)
    }

    /// True when records of this type (or `type/subtype`) are allowlisted.
    pub fn allows_record(&self, rec: &Record<'_>) -> bool {
        if self.allow_types.is_empty() {
            return false;
        }
        let Some(h) = rec.header() else { return false };
        let full = h.subtype.as_ref().map(|s| format!("{}/{s}", h.ty));
        self.allow_types
            .iter()
            .any(|t| *t == h.ty || Some(t) == full.as_ref())
    }
}

/// Rounds of search-and-replace on one string before giving up on a fixpoint.
const MAX_ROUNDS: usize = 8;

/// The decoded content of a JSON string (borrowed when it has no escapes).
fn decoded(raw: &[u8], flags: u8) -> Option<std::borrow::Cow<'_, [u8]>> {
    if flags == 0 {
        return Some(std::borrow::Cow::Borrowed(raw));
    }
    let mut buf = Vec::new();
    json::decode(raw, &mut buf).then_some(std::borrow::Cow::Owned(buf))
}

struct LineState {
    edits: Vec<(usize, usize, Vec<u8>)>,
    findings: Vec<LineFinding>,
    blocks: Vec<Vec<Seg>>,
    /// False once a string could not be decoded: the line is then redacted as text.
    ok: bool,
}

impl Default for LineState {
    fn default() -> Self {
        LineState {
            edits: Vec::new(),
            findings: Vec::new(),
            blocks: Vec::new(),
            ok: true,
        }
    }
}
