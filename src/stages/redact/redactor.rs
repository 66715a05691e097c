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

/// Where the per-machine fingerprint key lives, under the user's config folder.
const MACHINE_KEY_FILE: &str = "cchist/redact.key";

/// The per-machine fingerprint key: read from `$XDG_CONFIG_HOME/cchist/redact.key` (or
/// `~/.config/…`), created there with 32 random bytes and mode 0600 when absent. None when
/// there is no config folder, it cannot be written, or the file is readable by others: a
/// fingerprint keyed by a known key would let anyone confirm a guessed weak password.
pub fn machine_key() -> Option<Vec<u8>> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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
    let tmp = dir.join(format!(".redact.key.{}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(format!("{hex}\n").as_bytes()).and(f.sync_all()));
    let linked = written.and_then(|_| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Some(hex.into_bytes()),
        Err(_) => read(&path),
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
    /// The fingerprint key: the configured key, else the per-machine key (loaded on the
    /// first fingerprint), else none (findings then carry no fingerprint).
    fp_key: std::sync::OnceLock<Option<Vec<u8>>>,
    has_field_rules: bool,
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
            fp_key: match &key {
                Some(k) => std::sync::OnceLock::from(Some(k.clone())),
                None => std::sync::OnceLock::new(),
            },
            key,
            has_field_rules,
            pem_rule,
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
        let mut esc_pos = Vec::new();
        let mut escaped = false;
        if !full {
            self.engine.hits(line, true, &mut raw_hits);
            if raw_hits.is_empty() {
                return LineResult::default();
            }
            // An escape that could hide a keyword: strings holding one are decoded and searched.
            escaped = raw_hits.iter().any(|h| h.rule == scan::ESCAPE);
            st_escapes(&raw_hits, &mut esc_pos);
            raw_hits.retain(|h| h.rule != scan::ESCAPE);
            raw_hits.sort_unstable_by_key(|h| (h.pos, h.rule));
        }
        // A key block may go on in later strings of its array (one patch line each): walk on.
        let block = raw_hits
            .iter()
            .any(|h| self.engine.rules[h.rule as usize].trim);
        // Strings starting after the last occurrence hold none (unless an escape hides one).
        let stop = if full || escaped || block {
            usize::MAX
        } else {
            raw_hits.last().map_or(0, |h| h.pos)
        };
        let mut st = LineState::default();
        let walked = json::walk_until(line, stop, |tok, frames| {
            if !st.ok {
                return;
            }
            if !tok.is_key && self.pem_line(line, tok, frames, &mut st) {
                return;
            }
            self.string(line, tok, frames, &raw_hits, &esc_pos, full, &mut st);
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

    #[allow(clippy::too_many_arguments)]
    fn string(
        &self,
        line: &[u8],
        tok: &Tok,
        frames: &[Frame],
        raw_hits: &[Hit],
        esc_pos: &[usize],
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
            Some(Frame::Obj(Some(k))) if self.has_field_rules && !tok.is_key => Some(*k),
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
        // `\u00` / `:\/` inside the string, possibly itself escaped (`\\u0041` in
        // stringified JSON): decode it and search what it hides.
        let nested_escape = {
            let lo = esc_pos.partition_point(|&p| p < s);
            esc_pos.get(lo).is_some_and(|&p| p < e)
        };
        let hidden = tok.flags & (esc::U | esc::SLASH) != 0 || nested_escape;
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
        let path_of = |st: &LineState| {
            let mut p = json::path_renamed(line, frames, |at| st.keys.get(&at).cloned());
            if tok.is_key {
                // A key's own path: its object, then the key as it now reads.
                p.push(Seg::Key(String::new()));
            }
            p
        };
        // Only where an escape may hide a keyword (`\u0041`, `:\/`) or the string is
        // stringified JSON: searching a string twice costs throughput.
        let has = |n: &[u8]| memchr::memmem::find(&cur, n).is_some();
        if memchr::memchr(b'\\', &cur).is_some()
            && (has(b"\\u00")
                || has(b":\\/")
                || matches!(cur.trim_ascii_start().first(), Some(b'{' | b'[')))
        {
            let (new, found) = self.nested(&cur, full);
            if let Some(new) = new {
                let p = path.get_or_insert_with(|| path_of(st));
                if self.allow_paths.iter().any(|g| g.allows(p)) {
                    return;
                }
                for mut f in found {
                    f.path = Some(p.clone());
                    st.findings.push(f);
                }
                cur = std::borrow::Cow::Owned(new);
            }
        }
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
            let p = path.get_or_insert_with(|| path_of(st));
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
        let Some(mut path) = path else { return };
        if tok.is_key {
            // Two secret keys of one object must not become the same key (a parser would keep
            // only the last member): later ones get `#2`, `#3`, ….
            let mut parent = path.clone();
            parent.pop();
            let base = String::from_utf8_lossy(&cur).into_owned();
            let n = st.key_names.entry((parent, base.clone())).or_insert(0);
            *n += 1;
            if *n > 1 {
                cur = std::borrow::Cow::Owned(format!("{base}#{n}").into_bytes());
            }
            // Later paths through this object name the key as redacted.
            let k = String::from_utf8_lossy(&cur).into_owned();
            st.keys.insert(s, k.clone());
            if let Some(Seg::Key(last)) = path.last_mut() {
                *last = k.clone();
            }
            let n = st.findings.len();
            for f in st.findings[..n].iter_mut().rev() {
                match &mut f.path {
                    Some(fp) if fp.last() == Some(&Seg::Key(String::new())) => {
                        *fp.last_mut().expect("non-empty") = Seg::Key(k.clone())
                    }
                    _ => break,
                }
            }
        }
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

    /// A decoded string that still holds escapes (`\u0041`, `\/`): stringified JSON is redacted
    /// as a JSON line of its own (its other bytes kept); other text is unescaped once and
    /// redacted as text. The new string and the findings, when something was found.
    fn nested(&self, text: &[u8], full: bool) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        let t = text.trim_ascii_start();
        if matches!(t.first(), Some(b'{' | b'[')) && json::walk(text, |_, _| {}).is_ok() {
            // Its strings are decoded and searched one by one: nothing else to unescape.
            let res = self.line(text, full);
            return match res.line {
                Some(l) => (Some(l), res.findings),
                None => (None, Vec::new()),
            };
        }
        // Other text: read its escapes once more (`\n`, `\"`, `\u0041`, `\/`), search that,
        // and replace the secrets found at the same places in the text as it is.
        let mut un = Vec::with_capacity(text.len());
        let mut map = Vec::with_capacity(text.len() + 1);
        let mut i = 0;
        while i < text.len() {
            let c = text[i];
            if c == b'\\' {
                let hex = text.get(i + 2..i + 6).and_then(|h| {
                    std::str::from_utf8(h)
                        .ok()
                        .filter(|h| h.starts_with("00"))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                });
                let (b, n) = match (text.get(i + 1), hex) {
                    (Some(b'u'), Some(b)) if b.is_ascii_graphic() => (b, 6),
                    (Some(b'/'), _) => (b'/', 2),
                    (Some(b'"'), _) => (b'"', 2),
                    (Some(b'\\'), _) => (b'\\', 2),
                    (Some(b'n'), _) => (b'\n', 2),
                    (Some(b'r'), _) => (b'\r', 2),
                    (Some(b't'), _) => (b'\t', 2),
                    _ => (c, 1),
                };
                un.push(b);
                map.push(i);
                i += n;
                continue;
            }
            un.push(c);
            map.push(i);
            i += 1;
        }
        map.push(text.len());
        if un.len() == text.len() {
            return (None, Vec::new());
        }
        let mut found = Vec::new();
        if full {
            self.engine.find_all(&un, false, &mut found);
        } else {
            let mut hits = Vec::new();
            self.engine.hits(&un, false, &mut hits);
            self.engine.find(&un, &mut hits, &mut found);
        }
        self.finish(&un, &mut found);
        if found.is_empty() {
            return (None, Vec::new());
        }
        let findings = found
            .iter()
            .map(|f| LineFinding {
                rule: f.rule as usize,
                path: None,
                offset: map[f.start],
                len: map[f.end] - map[f.start],
                fingerprint: self.fingerprint(&un[f.start..f.end]),
            })
            .collect();
        let mapped: Vec<Found> = found
            .iter()
            .map(|f| Found {
                rule: f.rule,
                start: map[f.start],
                end: map[f.end],
                mstart: map[f.mstart],
                mend: map[f.mend],
            })
            .collect();
        (Some(self.replace(text, &mapped)), findings)
    }

    /// A string of an array that carries a private-key block one line per string (the
    /// `lines` of an Edit's `structuredPatch`, each prefixed by `+`, `-` or a space). Opens
    /// the block at its BEGIN line; replaces each body line's base64 while it is open.
    /// True when the string was handled here.
    fn pem_line(&self, line: &[u8], tok: &Tok, frames: &[Frame], st: &mut LineState) -> bool {
        let Some(rule) = self.pem_rule else {
            return false;
        };
        let in_array = matches!(frames.last(), Some(Frame::Arr(_)));
        let raw = &line[tok.start..tok.end];
        let has = |n: &[u8]| memchr::memmem::find(raw, n).is_some();
        if st.pem.is_some_and(|d| d != frames.len() || !in_array) {
            st.pem = None;
        }
        if st.pem.is_none() {
            if in_array && has(b"-----BEGIN ") && has(b"PRIVATE KEY") && !has(b"-----END ") {
                st.pem = Some(frames.len());
                st.pem_reported = false;
            }
            return false;
        }
        if has(b"-----END ") || has(b"-----BEGIN ") {
            st.pem = None;
            return false;
        }
        let body = match raw.first() {
            Some(b'+' | b'-' | b' ') => &raw[1..],
            _ => raw,
        };
        let body = body.trim_ascii();
        let is_b64 = body.len() >= 8
            && body
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
        if !is_b64 {
            return false;
        }
        let p = json::path_renamed(line, frames, |at| st.keys.get(&at).cloned());
        if self.allow_paths.iter().any(|g| g.allows(&p)) {
            return true;
        }
        // `body` is a sub-slice of `raw` (base64 needs no escapes): its offset in the line.
        let start = tok.start + (body.as_ptr() as usize - raw.as_ptr() as usize);
        let end = start + body.len();
        if !st.pem_reported {
            st.pem_reported = true;
            st.findings.push(LineFinding {
                rule,
                path: Some(p.clone()),
                offset: start - tok.start,
                len: body.len(),
                fingerprint: self.fingerprint(body),
            });
        }
        let mut enc = Vec::new();
        let found = [Found {
            rule: rule as u32,
            start: 0,
            end: body.len(),
            mstart: 0,
            mend: body.len(),
        }];
        enc.extend_from_slice(&self.replace(body, &found));
        st.edits.push((start, end, enc));
        for (i, seg) in p.iter().enumerate() {
            if seg == &Seg::Key("content".into()) && matches!(p.get(i + 1), Some(Seg::Idx(_))) {
                st.blocks.push(p[..i + 2].to_vec());
            }
        }
        true
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
                        // `{hash}` is refused without a configured key.
                        let k = self.key.as_deref().unwrap_or_default();
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
        let full = h.subtype.as_ref().map(|s| format!("{}/{s}", h.kind));
        self.allow_types
            .iter()
            .any(|t| *t == h.kind.as_str() || Some(t) == full.as_ref())
    }
}

/// Offsets of the escape hits among `hits`, sorted.
fn st_escapes(hits: &[Hit], out: &mut Vec<usize>) {
    out.extend(
        hits.iter()
            .filter(|h| h.rule == scan::ESCAPE)
            .map(|h| h.pos),
    );
    out.sort_unstable();
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
    /// Object keys that were redacted: start offset → the key as it now reads.
    keys: std::collections::HashMap<usize, String>,
    /// Redacted keys per object (path of the object, key): how many so far.
    key_names: std::collections::BTreeMap<(Vec<Seg>, String), usize>,
    /// Depth of the array whose strings carry an open private-key block, one line each.
    pem: Option<usize>,
    /// The open block has been reported.
    pem_reported: bool,
    findings: Vec<LineFinding>,
    blocks: Vec<Vec<Seg>>,
    /// False once a string could not be decoded: the line is then redacted as text.
    ok: bool,
}

impl Default for LineState {
    fn default() -> Self {
        LineState {
            edits: Vec::new(),
            keys: Default::default(),
            key_names: Default::default(),
            pem: None,
            pem_reported: false,
            findings: Vec::new(),
            blocks: Vec::new(),
            ok: true,
        }
    }
}
