//! Known secrets: a session remembers what it found.
//!
//! A rule confirms a secret where its context shows it (`AWS_SECRET_ACCESS_KEY="…"`,
//! `curl -u user:pass`); the model, an Edit's `old_string`, a Bash `echo` or a sub-agent then
//! repeat the bare value where no rule can tell it from any other string. Every value a rule
//! confirms (and every value the user or the session itself declares secret) becomes a
//! [`Known`] secret of its session; [`Echoes`] replaces its other occurrences with the same
//! placeholder: in any string of any record (keys too, after JSON decoding, and in
//! stringified JSON one level down), in plain-text lines and companion files.
//!
//! The collateral guard ([`reach`]): a value shorter than [`MIN_LEN`] bytes is never
//! propagated; one shorter than [`TOKEN_LEN`], made of letters only (a word), of digits only,
//! or of low entropy is propagated only where it stands as a whole token (no letter, digit or
//! `_` on either side); anything else wherever it occurs. A placeholder is never a known value.

pub mod matcher;

use std::collections::BTreeMap;
use std::sync::Arc;

use memchr::memmem;

use super::fields::{self, Field};
use super::json::{self, Seg};
use matcher::Matcher;

/// The bytes of a secret a rule confirmed. `Debug` shows only their length, so that no report,
/// log or panic message can hold them.
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretBytes(pub Box<[u8]>);

impl SecretBytes {
    /// A copy of `b`.
    pub fn new(b: &[u8]) -> SecretBytes {
        SecretBytes(b.into())
    }
}

impl std::borrow::Borrow<[u8]> for SecretBytes {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretBytes({} bytes)", self.0.len())
    }
}

/// Shorter values are never propagated: too many innocent strings hold them.
pub const MIN_LEN: usize = 5;
/// Shorter values are propagated only as whole tokens.
pub const TOKEN_LEN: usize = 10;
/// Values with less Shannon entropy (bits per byte) are propagated only as whole tokens.
pub const TOKEN_ENTROPY: f32 = 3.0;

/// The rule id of a value the user declared secret (`--known-values`, `known_values`) or the
/// session showed to be secret (a `.env` file it read).
pub const KNOWN_VALUE_RULE: &str = "known-value";

/// What replaces one known secret, and the finding it came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct KnownSecret {
    /// The rule that confirmed it (or [`KNOWN_VALUE_RULE`]).
    pub rule: String,
    /// What its occurrences become (`[REDACTED:<rule>]`, or its pseudonym).
    pub placeholder: Vec<u8>,
    /// Its keyed fingerprint (may be empty), for reports and baselines.
    pub fingerprint: String,
}

/// The known secrets of a session (or project): value → replacement. Ordered, so that what
/// is built from it does not depend on the order files were read in.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Shared with the matchers built from it ([`Echoes`]), not copied.
    map: BTreeMap<SecretBytes, Arc<KnownSecret>>,
    /// The values added or changed since [`Known::take_changes`] last ran, when changes are
    /// tracked (a stream extends its matcher with them instead of rebuilding it).
    changes: Option<Vec<SecretBytes>>,
    /// At most this many values are kept (None: no bound); past it a new value is not
    /// remembered and [`Known::dropped`] counts it.
    limit: Option<usize>,
    dropped: u64,
    /// The matcher built from `map`, shared by every clone made since `map` last changed: a
    /// session's files each start from a clone of its known secrets, and building the same
    /// automaton for each of 2,000 tool-results files was most of a `check`'s time.
    built: Built,
}

/// See [`Known::built`]: None until `map` first changes.
#[derive(Clone, Default)]
struct Built(Option<Arc<std::sync::OnceLock<Option<Echoes>>>>);

impl std::fmt::Debug for Built {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Built")
    }
}

impl PartialEq for Known {
    fn eq(&self, other: &Known) -> bool {
        self.map == other.map
    }
}

impl Eq for Known {}

impl Known {
    /// None known (usable in a `static`).
    pub const fn new() -> Known {
        Known {
            map: BTreeMap::new(),
            changes: None,
            limit: None,
            dropped: 0,
            built: Built(None),
        }
    }

    /// No secret known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// How many values are known.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Remember `value`. A value found by two rules keeps the least (rule, placeholder), so
    /// the result is the same whichever file or line was read first. Placeholders and values
    /// a placeholder contains are not remembered.
    pub fn add(&mut self, value: &[u8], secret: KnownSecret) {
        if value.is_empty()
            || claude_vocabulary(value)
            || memchr::memmem::find(value, b"[REDACTED").is_some()
            || memchr::memmem::find(&secret.placeholder, value).is_some()
        {
            return;
        }
        // A block (a private key) is also repeated a line at a time (a patch's `-` lines, a
        // Read of part of the file): each long line of it is known too.
        if value.contains(&b'\n') {
            for l in value.split(|&b| b == b'\n') {
                let l = l.trim_ascii();
                if l.len() >= 16 && !l.starts_with(b"-----") {
                    self.add(l, secret.clone());
                }
            }
        }
        match self.map.get_mut(value) {
            Some(old) if **old <= secret => return,
            Some(old) => *old = Arc::new(secret),
            None => {
                if self.limit.is_some_and(|l| self.map.len() >= l) {
                    self.dropped += 1;
                    return;
                }
                self.map.insert(SecretBytes::new(value), Arc::new(secret));
            }
        }
        self.built = Built(Some(Default::default()));
        if let Some(c) = &mut self.changes {
            c.push(SecretBytes::new(value));
        }
    }

    /// Track the values added or changed from now on ([`Known::take_changes`]), and keep at
    /// most `limit` values: what a stream does, whose memory must stay bounded however many
    /// distinct secrets it holds.
    pub fn track_changes(&mut self, limit: usize) {
        self.changes = Some(Vec::new());
        self.limit = Some(limit);
    }

    /// The values added or changed since the last call (when tracked).
    pub fn take_changes(&mut self) -> Vec<SecretBytes> {
        self.changes
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// How many new values were not remembered because the limit was reached.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The replacement of a known value.
    pub fn get(&self, value: &[u8]) -> Option<&KnownSecret> {
        self.map.get(value).map(|s| &**s)
    }

    /// The known values that occur in `text` as they are (a substring search per value: for
    /// a short text such as a file name), with their replacements.
    pub fn within(&self, text: &[u8]) -> Known {
        let mut k = Known::default();
        for (v, s) in &self.map {
            if v.0.len() <= text.len() && memmem::find(text, &v.0).is_some() {
                k.map.insert(v.clone(), s.clone());
            }
        }
        k
    }

    /// Remember everything `other` knows.
    pub fn merge(&mut self, other: &Known) {
        for (v, s) in &other.map {
            self.add(&v.0, KnownSecret::clone(s));
        }
    }

    /// Bring `cache` up to what is known: extended with the changes when they are tracked
    /// and the matcher can grow, else built again (None: nothing worth propagating).
    pub fn refresh(&mut self, cache: &mut Option<Echoes>) {
        if self.changes.is_none() {
            *cache = self.echoes();
            return;
        }
        let changed = self.take_changes();
        let grown = match cache {
            Some(_) if changed.is_empty() => true,
            Some(e) => e.extend(self, &changed),
            None => false,
        };
        if !grown {
            *cache = self.echoes();
        }
    }

    /// The matcher of the values worth propagating; None when there is none.
    ///
    /// A set of more than [`matcher::SMALL_SET`] patterns is built as the anchored index
    /// ([`matcher::Anchored`]) straight away, without a copy of each pattern, and its values
    /// are searched in their own forms only, not also in hex and base64 (thousands of known
    /// secrets are a generated or hostile input; their encodings would quadruple the memory).
    pub fn echoes(&self) -> Option<Echoes> {
        let large = self.map.len() * 4 > matcher::SMALL_SET;
        match &self.built.0 {
            // A large set's index is as costly to copy as to build: each builds its own.
            Some(cell) if !large => cell.get_or_init(|| self.build_echoes()).clone(),
            _ => self.build_echoes(),
        }
    }

    fn build_echoes(&self) -> Option<Echoes> {
        let mut e = if self.map.len() * 4 > matcher::SMALL_SET {
            Echoes::empty(Matcher::Large(Default::default()))
        } else {
            let mut b = EchoesBuilder::default();
            for (v, s) in &self.map {
                b.add(&v.0, s);
            }
            return b.build();
        };
        for (v, s) in &self.map {
            e.learn(&v.0, s);
        }
        (!e.meta.is_empty()).then_some(e)
    }
}

/// Collects the patterns of a small set's [`Echoes`]: each value's forms and encoded forms,
/// each once.
#[derive(Default)]
struct EchoesBuilder {
    pats: Vec<Vec<u8>>,
    meta: Vec<(usize, Reach)>,
    secrets: Vec<Arc<KnownSecret>>,
    reach: Vec<Reach>,
    seen: foldhash::HashSet<Vec<u8>>,
    controls: bool,
}

impl EchoesBuilder {
    fn add(&mut self, v: &[u8], s: &Arc<KnownSecret>) {
        let Some(r) = reach(v) else { return };
        self.controls |= has_control(v);
        let idx = self.secrets.len();
        self.secrets.push(s.clone());
        self.reach.push(r);
        for (form, r) in patterns_of(v, r, true) {
            if self.seen.insert(form.clone()) {
                self.pats.push(form);
                self.meta.push((idx, r));
            }
        }
    }

    fn build(self) -> Option<Echoes> {
        if self.pats.is_empty() {
            return None;
        }
        let mut e = Echoes::empty(Matcher::new(&self.pats));
        e.meta = self.meta;
        e.secrets = self.secrets;
        e.reach = self.reach;
        e.controls = self.controls;
        Some(e)
    }
}

/// Whether `v` holds a control character (JSON writes one as `\u00XX`).
fn has_control(v: &[u8]) -> bool {
    v.iter().any(|&b| b < 0x20 || b == 0x7F)
}

/// Whether the `\u` escape at the start of `t` stands for a control character.
fn escapes_control(t: &[u8]) -> bool {
    match t.get(2..6) {
        Some([b'0', b'0', h, l]) => matches!(h, b'0' | b'1') && l.is_ascii_hexdigit(),
        Some(x) => x.eq_ignore_ascii_case(b"007f"),
        None => false,
    }
}

/// The patterns a value is searched as, each with where it may be replaced (`encoded`: its
/// hex and base64 too).
fn patterns_of(v: &[u8], r: Reach, encoded: bool) -> Vec<(Vec<u8>, Reach)> {
    let mut out: Vec<(Vec<u8>, Reach)> = forms(v).into_iter().map(|f| (f, r)).collect();
    if encoded && r == Reach::Anywhere {
        out.extend(encoded_forms(v).into_iter().map(|f| (f, Reach::Anywhere)));
    }
    out
}

/// The names and words Claude Code itself writes in a transcript (keys, record and block
/// types, roles, model names): never a secret, whatever a `.env` says — known, they would
/// rename every record's keys or rewrite its structure (issue #25, adversarial pass).
fn claude_vocabulary(value: &[u8]) -> bool {
    const WORDS: &[&str] = &[
        "parentUuid",
        "logicalParentUuid",
        "leafUuid",
        "uuid",
        "sessionId",
        "message",
        "content",
        "type",
        "subtype",
        "role",
        "user",
        "assistant",
        "system",
        "text",
        "thinking",
        "signature",
        "redacted_thinking",
        "tool_use",
        "tool_result",
        "tool_use_id",
        "toolUseID",
        "parentToolUseID",
        "toolUseResult",
        "sourceToolAssistantUUID",
        "input",
        "name",
        "id",
        "isSidechain",
        "isMeta",
        "isCompactSummary",
        "compactMetadata",
        "userType",
        "external",
        "timestamp",
        "version",
        "cwd",
        "gitBranch",
        "requestId",
        "messageId",
        "promptId",
        "agentId",
        "model",
        "stop_reason",
        "stop_sequence",
        "end_turn",
        "usage",
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "service_tier",
        "attachment",
        "progress",
        "summary",
        "file-history-snapshot",
        "structuredPatch",
        "oldString",
        "newString",
        "old_string",
        "new_string",
        "originalFile",
        "file_path",
        "filePath",
        "command",
        "description",
        "stdout",
        "stderr",
        "interrupted",
        "isImage",
        "is_error",
        "image",
        "source",
        "media_type",
        "base64",
        "level",
        "toolUseResult",
        "queue-operation",
    ];
    if value.starts_with(b"claude-")
        && value.iter().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'-' | b'.' | b'@')
        })
    {
        return true;
    }
    WORDS.iter().any(|w| w.as_bytes() == value)
}

/// The values of a known-values file: one a line, or a dotenv file (`KEY=value`,
/// `export KEY="value"`, `KEY: value`; blank lines and `#` comments skipped).
pub fn values_of_file(text: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for line in text.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let v = dotenv_value(line).unwrap_or(line);
        if !v.is_empty() {
            out.push(v.to_vec());
        }
    }
    out
}

/// The first line (1-based) of a known-values file that gives a value alone on its line
/// (not `KEY=value`) shorter than [`MIN_LEN`] bytes: one the user declared secret that no
/// run would replace ([`reach`] never propagates one so short), so it is refused rather than
/// ignored. A dotenv file's short values (`PORT=80`, `DEBUG=true`) are settings, left out.
pub fn short_value_line(text: &[u8]) -> Option<usize> {
    text.split(|&b| b == b'\n')
        .enumerate()
        .find_map(|(i, line)| {
            let line = line.trim_ascii();
            let plain = !line.is_empty() && !line.starts_with(b"#") && dotenv_value(line).is_none();
            (plain && line.len() < MIN_LEN).then_some(i + 1)
        })
}

/// The value of a dotenv line `KEY=value` / `export KEY="value"` (quotes removed): a key that
/// is an identifier and a value that does not start with `=`. None otherwise, so that a value
/// given alone on its line (`dGhpc…PQ==`, `user:pass`) is taken whole.
fn dotenv_value(line: &[u8]) -> Option<&[u8]> {
    let l = line
        .strip_prefix(b"export ")
        .unwrap_or(line)
        .trim_ascii_start();
    let eq = l.iter().position(|&c| c == b'=')?;
    let key = l[..eq].trim_ascii();
    let ident = key
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && key.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_');
    let rest = l[eq + 1..].trim_ascii();
    if !ident || rest.is_empty() || rest.starts_with(b"=") {
        return None;
    }
    // As dotenv tools read it: a quoted value ends at its closing quote, whatever follows
    // (`"v" # note`); an unquoted one at an inline comment (` # rotated`).
    if let Some(&q) = rest.first().filter(|&&q| q == b'"' || q == b'\'') {
        if let Some(end) = rest[1..].iter().position(|&c| c == q) {
            return Some(&rest[1..1 + end]);
        }
    }
    let cut = rest
        .windows(2)
        .position(|w| w[0].is_ascii_whitespace() && w[1] == b'#')
        .map_or(rest, |at| rest[..at].trim_ascii_end());
    (!cut.is_empty()).then_some(cut)
}

/// The value of `KEY=value` / `export KEY="value"` / `KEY: value` (quotes removed); None
/// when `line` is no such assignment.
pub fn assignment_value(line: &[u8]) -> Option<&[u8]> {
    let line = line
        .strip_prefix(b"export ")
        .unwrap_or(line)
        .trim_ascii_start();
    let at = line.iter().position(|&c| c == b'=' || c == b':')?;
    let key = line[..at].trim_ascii();
    if key.is_empty()
        || !key
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
    {
        return None;
    }
    let mut v = line[at + 1..].trim_ascii();
    for q in [b'"', b'\''] {
        if v.len() >= 2 && v[0] == q && v[v.len() - 1] == q {
            v = &v[1..v.len() - 1];
        }
    }
    Some(v)
}

/// Whether a file name is one whose values a session shows to be secret: `.env*`, `*.pem`,
/// `credentials*`, `secrets.*`, `config.*`, `.netrc`, `.pgpass`.
pub fn is_secret_file(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with(".env")
        || n.ends_with(".pem")
        || n.starts_with("credentials")
        || n.starts_with("secrets.")
        || n.starts_with("config.")
        || n == ".netrc"
        || n == ".pgpass"
}

/// A key that names a secret (`DB_PASSWORD`, `api_key`, `authToken`, `client-secret`).
fn secret_key(key: &[u8]) -> bool {
    let k = key.to_ascii_lowercase();
    // A word of the key, not part of one (`author`, `keywords`, `passage` name no secret).
    [
        &b"password"[..],
        b"passwd",
        b"pass",
        b"pwd",
        b"secret",
        b"token",
        b"apikey",
        b"api_key",
        b"key",
        b"credential",
        b"credentials",
    ]
    .iter()
    .any(|w| {
        memchr::memmem::find_iter(&k, w).any(|at| {
            let end = at + w.len();
            let starts = at == 0 || !k[at - 1].is_ascii_alphabetic();
            starts && (end == k.len() || !k[end].is_ascii_alphabetic())
        })
    })
}

/// The secret values in the content of file `name` as a session shows it (a Read's output
/// with its `N→` line prefixes, a Write's content, an Edit's strings): the values of keys
/// that name a secret, any value of a `.env`/credentials/secrets file random enough to be
/// propagated anywhere, and the body lines of a PEM file.
pub fn values_in_secret_file(name: &str, content: &[u8]) -> Vec<Vec<u8>> {
    let n = name.to_ascii_lowercase();
    let any_random =
        n.starts_with(".env") || n.starts_with("credentials") || n.starts_with("secrets.");
    let pem = n.ends_with(".pem");
    let mut out = Vec::new();
    for line in content.split(|&b| b == b'\n') {
        let mut line = line.trim_ascii();
        // Read's prefix: spaces, a line number, `→` (or a tab).
        let digits = line.iter().take_while(|c| c.is_ascii_digit()).count();
        if digits > 0 {
            if let Some(rest) = line[digits..]
                .strip_prefix("→".as_bytes())
                .or_else(|| line[digits..].strip_prefix(b"\t"))
            {
                line = rest.trim_ascii();
            }
        }
        if n == ".pgpass" {
            // `host:port:database:user:password`, on any port; `\:` is a colon of a field.
            if let Some(pw) = pgpass_password(line).filter(|v| reach(v) == Some(Reach::Anywhere)) {
                out.push(pw.to_vec());
            }
            continue;
        }
        if pem {
            if line.len() >= 16
                && line
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='))
            {
                out.push(line.to_vec());
            }
            continue;
        }
        // `"key": "value",` (JSON), `key: value` (YAML), `key = value` (TOML, INI), dotenv.
        let unquoted: Vec<u8> = line
            .strip_suffix(b",")
            .unwrap_or(line)
            .iter()
            .copied()
            .filter(|&c| c != b'"')
            .collect();
        let l = unquoted.trim_ascii();
        let Some(at) = l.iter().position(|&c| c == b'=' || c == b':') else {
            continue;
        };
        let key = l[..at]
            .trim_ascii()
            .strip_prefix(b"export ")
            .unwrap_or(l[..at].trim_ascii());
        let Some(v) = assignment_value(l) else {
            continue;
        };
        if v.is_empty() {
            continue;
        }
        // Only values random enough to be propagated anywhere: a word or a number of such a
        // file (`github`, `3600000`) is no secret, and replacing it everywhere would wreck
        // the session.
        if reach(v) == Some(Reach::Anywhere) && (secret_key(key) || any_random) {
            out.push(v.to_vec());
        }
    }
    out
}

/// The password of a `.pgpass` line (`host:port:database:user:password`: five fields, `\:`
/// and `\\` escaped, the port a number or `*`); None for a comment or another shape.
fn pgpass_password(line: &[u8]) -> Option<&[u8]> {
    if line.starts_with(b"#") {
        return None;
    }
    let mut fields = Vec::with_capacity(5);
    let (mut start, mut i) = (0, 0);
    while i < line.len() {
        match line[i] {
            b'\\' => i += 1,
            b':' => {
                fields.push(&line[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    fields.push(&line[start.min(line.len())..]);
    let port = fields.get(1)?;
    let port_ok = *port == b"*"
        || (!port.is_empty() && port.len() <= 5 && port.iter().all(u8::is_ascii_digit));
    (fields.len() == 5 && port_ok && fields.iter().all(|f| !f.is_empty())).then(|| fields[4])
}

/// Where a value may be replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Wherever it occurs.
    Anywhere,
    /// Only with no letter, digit or `_` on either side.
    WholeToken,
}

/// The collateral guard: where `value` is propagated (None: nowhere).
pub fn reach(value: &[u8]) -> Option<Reach> {
    let trimmed = value.trim_ascii();
    if trimmed.len() < MIN_LEN || trimmed.len() != value.len() {
        return None;
    }
    let word = value.iter().all(u8::is_ascii_alphabetic);
    let digits = value.iter().all(u8::is_ascii_digit);
    if value.len() < TOKEN_LEN || word || digits || super::checks::entropy(value) < TOKEN_ENTROPY {
        Some(Reach::WholeToken)
    } else {
        Some(Reach::Anywhere)
    }
}

/// The forms a value takes in decoded text: itself, JSON-escaped (inside stringified JSON),
/// and with `/` written `\/`.
fn forms(v: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![v.to_vec()];
    let mut enc = Vec::new();
    json::encode(v, &mut enc);
    if enc != v {
        // And escaped twice: how a raw line shows it inside stringified JSON.
        let mut enc2 = Vec::new();
        json::encode(&enc, &mut enc2);
        out.push(enc);
        out.push(enc2);
    }
    if v.contains(&b'/') {
        let mut s = Vec::with_capacity(v.len() + 4);
        for &c in v {
            if c == b'/' {
                s.push(b'\\');
            }
            s.push(c);
        }
        out.push(s);
    }
    out
}

/// The encoded forms of a random-looking value a tool may print (issue #25: `xxd -p`, `od`,
/// `base64` of a token, a `user:token` pair encoded after it): hex in either case, and the
/// base64 every encoding of a string starting with the value begins with. Only for values
/// propagated anywhere: a short or word-like value's encodings would match by chance.
fn encoded_forms(v: &[u8]) -> Vec<Vec<u8>> {
    let hex: Vec<u8> = v
        .iter()
        .flat_map(|b| format!("{b:02x}").into_bytes())
        .collect();
    let mut out = vec![hex.to_ascii_uppercase(), hex];
    let b64 = super::checks::b64_whole_groups(v);
    if b64.len() >= 16 {
        out.push(b64);
    }
    out
}

/// The spans of the placeholders (`[REDACTED…]`) in `text`.
fn placeholders(text: &[u8]) -> Vec<(usize, usize)> {
    memchr::memmem::find_iter(text, b"[REDACTED")
        .map(|a| {
            let end = memchr::memchr(b']', &text[a..]).map_or(text.len(), |e| a + e + 1);
            (a, end)
        })
        .collect()
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// One replaced occurrence of a known secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Echo {
    /// Index of the secret ([`Echoes::secret`]).
    pub secret: usize,
    /// JSON path of the string (None for plain text).
    pub path: Option<Vec<Seg>>,
    /// Byte offset in the (decoded) string or text.
    pub offset: usize,
}

/// A line after its echoes were replaced.
#[derive(Debug, Clone, Default)]
pub struct EchoLine {
    /// The new line.
    pub line: Vec<u8>,
    /// What was replaced.
    pub echoes: Vec<Echo>,
    /// Content blocks (`…content[i]`) holding a change: thinking blocks among them must go.
    pub blocks: Vec<Vec<Seg>>,
}

/// The compiled matcher of a set of known secrets.
#[derive(Clone)]
pub struct Echoes {
    matcher: Matcher,
    /// Per pattern: the secret it stands for and where it may be replaced.
    meta: Vec<(usize, Reach)>,
    secrets: Vec<Arc<KnownSecret>>,
    /// Per secret: where it may be replaced.
    reach: Vec<Reach>,
    /// The escapes that can break a value's raw bytes apart in a JSON line.
    escape_u: memmem::Finder<'static>,
    escape_slash: memmem::Finder<'static>,
    /// Some value holds a control character: only then can an escaped one (`\u001b`, the
    /// colour codes of tool output) break a value apart.
    controls: bool,
}

impl Echoes {
    /// The secret `i` of [`Echo::secret`].
    pub fn secret(&self, i: usize) -> &KnownSecret {
        &self.secrets[i]
    }

    /// Whether some known value holds a control character (a raw newline among them: a match
    /// may then run across lines).
    pub fn holds_controls(&self) -> bool {
        self.controls
    }

    /// Whether secret `i` is propagated wherever it occurs (not only as a whole token).
    fn anywhere(&self, i: usize) -> bool {
        self.reach[i] == Reach::Anywhere
    }

    /// Learn the values `changed` (added to `known` or given another replacement since this
    /// matcher was built) in place. False when this matcher cannot grow (a small set's
    /// automaton): build it again from `known`.
    pub fn extend(&mut self, known: &Known, changed: &[SecretBytes]) -> bool {
        if !matches!(self.matcher, Matcher::Large(_)) {
            return false;
        }
        for v in changed {
            if let Some(s) = known.map.get(&v.0[..]) {
                self.learn(&v.0, s);
            }
        }
        true
    }

    /// A matcher of nothing yet.
    fn empty(matcher: Matcher) -> Echoes {
        Echoes {
            matcher,
            meta: Vec::new(),
            secrets: Vec::new(),
            reach: Vec::new(),
            escape_u: memmem::Finder::new(b"\\u").into_owned(),
            escape_slash: memmem::Finder::new(b"\\/").into_owned(),
            controls: false,
        }
    }

    /// Add value `v` (or give it replacement `s`, when known already) to the anchored index.
    fn learn(&mut self, v: &[u8], s: &Arc<KnownSecret>) {
        let Matcher::Large(a) = &mut self.matcher else {
            return;
        };
        let Some(r) = reach(v) else { return };
        self.controls |= has_control(v);
        // A value known before with another replacement keeps its index.
        if let Some(id) = a.id_of(v) {
            let idx = self.meta[id].0;
            self.secrets[idx] = s.clone();
            return;
        }
        let idx = self.secrets.len();
        self.secrets.push(s.clone());
        self.reach.push(r);
        for (form, r) in patterns_of(v, r, false) {
            if a.id_of(&form).is_none() {
                a.push_at(&form);
                self.meta.push((idx, r));
            }
        }
    }

    /// The occurrences in `text` the guard lets through: (start, end, secret). Never one
    /// inside a placeholder (`[REDACTED:github-pat]` holds the word `github`).
    fn find(&self, text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        let mut marks: Option<Vec<(usize, usize)>> = None;
        self.matcher.for_each(text, |start, end, pat| {
            let (idx, r) = self.meta[pat];
            let marks = marks.get_or_insert_with(|| placeholders(text));
            if marks.iter().any(|&(a, b)| start < b && a < end) {
                return;
            }
            if r == Reach::WholeToken {
                let before = start.checked_sub(1).map(|i| text[i]);
                let after = text.get(end).copied();
                let first = text[start];
                let last = text[end - 1];
                if before.is_some_and(|b| is_word_byte(b) && is_word_byte(first))
                    || after.is_some_and(|a| is_word_byte(a) && is_word_byte(last))
                {
                    return;
                }
            }
            out.push((start, end, idx));
        });
        out
    }

    fn replace(&self, text: &[u8], found: &[(usize, usize, usize)]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + found.len() * 16);
        let mut at = 0;
        for &(s, e, i) in found {
            out.extend_from_slice(&text[at..s]);
            out.extend_from_slice(&self.secrets[i].placeholder);
            at = e;
        }
        out.extend_from_slice(&text[at..]);
        out
    }

    /// Replace the known secrets in a plain text: the new text and what was replaced.
    pub fn text(&self, text: &[u8]) -> Option<(Vec<u8>, Vec<Echo>)> {
        let found = self.find(text);
        if found.is_empty() {
            return None;
        }
        let echoes = found
            .iter()
            .map(|&(s, _, i)| Echo {
                secret: i,
                path: None,
                offset: s,
            })
            .collect();
        Some((self.replace(text, &found), echoes))
    }

    /// Where in `text` (lines of a file) [`Echoes::line`] may find something: each position
    /// where a value's raw form or an escape that can break one apart starts, and the start
    /// of every line a value's match runs into. Sorted. A line holding none of them is
    /// left as it is by [`Echoes::line`], so a file is searched once rather than line by line.
    pub fn positions(&self, text: &[u8]) -> Vec<usize> {
        let mut at: Vec<usize> = Vec::new();
        self.matcher.for_each(text, |start, end, _| {
            at.push(start);
            // A value with a raw newline (a key block in a text file) must not hide what the
            // lines it covers hold on their own.
            at.extend(memchr::memchr_iter(b'\n', &text[start..end]).map(|n| start + n + 1));
        });
        at.extend(
            self.escape_u
                .find_iter(text)
                .filter(|&p| self.controls || !escapes_control(&text[p..])),
        );
        at.extend(self.escape_slash.find_iter(text));
        at.sort_unstable();
        at.dedup();
        at
    }

    /// Replace the known secrets in one line: in every string (key or value) of a JSON line,
    /// decoded, and one level down in stringified JSON; a line that is not JSON as text.
    /// None when nothing was replaced.
    pub fn line(&self, line: &[u8]) -> Option<EchoLine> {
        // One pass over the raw line: where a value may be (its raw form), and the escapes
        // (`\u`, `\/`) that can break a value's raw bytes apart (strings holding one are
        // decoded and searched).
        let mut values: Vec<usize> = Vec::new();
        self.matcher
            .for_each(line, |start, _, _| values.push(start));
        let mut escapes: Vec<usize> = self
            .escape_u
            .find_iter(line)
            .filter(|&p| self.controls || !escapes_control(&line[p..]))
            .collect();
        let unicode = escapes.len();
        escapes.extend(self.escape_slash.find_iter(line));
        if unicode > 0 && escapes.len() > unicode {
            escapes.sort_unstable();
        }
        if values.is_empty() && escapes.is_empty() {
            return None;
        }
        let within = |v: &[usize], s: usize, e: usize| {
            let i = v.partition_point(|&p| p < s);
            v.get(i).is_some_and(|&p| p < e)
        };
        let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::new();
        let mut echoes = Vec::new();
        let mut blocks = Vec::new();
        // Keys replaced per object (path of the object, new key): a second one gets `#2`.
        let mut key_names: BTreeMap<(Vec<Seg>, Vec<u8>), usize> = BTreeMap::new();
        let mut buf = Vec::new();
        let walked = json::walk(line, |tok, frames| {
            let raw = &line[tok.start..tok.end];
            if !within(&values, tok.start, tok.end) && !within(&escapes, tok.start, tok.end) {
                return;
            }
            let text: &[u8] = if tok.flags == 0 {
                raw
            } else {
                if !json::decode(raw, &mut buf) {
                    return;
                }
                &buf
            };
            let mut found = self.find(text);
            // A key is a name: only a value random enough to be a secret wherever it stands
            // is replaced there. A word a `.env` declared (`SECRET_KEY` set to `parentUuid`) must not
            // rename every record's `parentUuid` (issue #25, adversarial pass).
            if tok.is_key {
                found.retain(|&(_, _, i)| self.anywhere(i));
            }
            if found.is_empty() {
                return;
            }
            let mut path = json::path_of(line, frames);
            let kind = if tok.is_key {
                Field::Text
            } else {
                fields::field(&path)
            };
            let mut new = match kind {
                Field::Text => self.replace(text, &found),
                // Claude Code's own words and the session's id are never a known value's echo.
                Field::Structure => return,
                // An id: only a value random enough to be a secret wherever it stands, and
                // then a derived id of its kind (the redactor gives the same for the same id).
                Field::Id { uuid } => {
                    if !found.iter().any(|&(_, _, i)| self.anywhere(i)) {
                        return;
                    }
                    crate::transcript::ids::pseudonym_id(text, uuid).into_bytes()
                }
            };
            if tok.is_key {
                let n = key_names.entry((path.clone(), new.clone())).or_insert(0);
                *n += 1;
                if *n > 1 {
                    new.extend_from_slice(format!("#{n}").as_bytes());
                }
                path.push(Seg::Key(String::from_utf8_lossy(&new).into_owned()));
            }
            json::content_blocks(&path, &mut blocks);
            for &(s, _, i) in &found {
                echoes.push(Echo {
                    secret: i,
                    path: Some(path.clone()),
                    offset: s,
                });
            }
            let mut enc = Vec::with_capacity(new.len() + 2);
            json::encode(&new, &mut enc);
            edits.push((tok.start, tok.end, enc));
        });
        if walked.is_err() || crate::transcript::record::check_json(line).is_err() {
            let (new, echoes) = self.text(line)?;
            return Some(EchoLine {
                line: new,
                echoes,
                blocks: Vec::new(),
            });
        }
        if edits.is_empty() {
            return None;
        }
        let mut out = Vec::with_capacity(line.len());
        let mut at = 0;
        for (s, e, enc) in &edits {
            out.extend_from_slice(&line[at..*s]);
            out.extend_from_slice(enc);
            at = *e;
        }
        out.extend_from_slice(&line[at..]);
        blocks.sort();
        blocks.dedup();
        Some(EchoLine {
            line: out,
            echoes,
            blocks,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(values: &[&str]) -> Known {
        let mut k = Known::default();
        for v in values {
            k.add(
                v.as_bytes(),
                KnownSecret {
                    rule: "test-rule".into(),
                    placeholder: b"[REDACTED:test-rule]".to_vec(),
                    fingerprint: String::new(),
                },
            );
        }
        k
    }

    #[test]
    fn guard_classes() {
        assert_eq!(reach(b"abcd"), None);
        assert_eq!(reach(b" padded-value "), None);
        assert_eq!(reach(b"hunter2"), Some(Reach::WholeToken));
        assert_eq!(reach(b"correcthorsebattery"), Some(Reach::WholeToken));
        assert_eq!(reach(b"12345678901234"), Some(Reach::WholeToken));
        assert_eq!(reach(b"aaaaaaaaaaaaaaab"), Some(Reach::WholeToken));
        assert_eq!(reach(b"Zq8-Lm3!vR7#pW2x"), Some(Reach::Anywhere));
    }

    #[test]
    fn placeholders_are_never_known() {
        let k = known(&["[REDACTED:test-rule]", "REDACTED:test"]);
        assert!(k.is_empty());
    }

    #[test]
    fn replaces_in_values_keys_and_escaped_forms() {
        let v = "Zq8/Lm3+vR7pW2xY9kT4";
        let e = known(&[v]).echoes().unwrap();
        let line = format!(
            r#"{{"a":"say {v} now","{v}":1,"b":"{}","c":"{{\"x\":\"{v}\"}}"}}"#,
            v.replace('/', "\\/")
        );
        let out = e.line(line.as_bytes()).expect("replaced");
        let s = String::from_utf8(out.line).unwrap();
        assert!(!s.contains("Zq8"), "{s}");
        assert_eq!(out.echoes.len(), 4, "{s}");
        assert!(serde_json::from_str::<serde_json::Value>(&s).is_ok(), "{s}");
    }

    #[test]
    fn hex_and_base64_of_a_known_value_are_replaced() {
        let v = format!("ghp_{}", "Xr9bg7JJ70oWPxoCsPtwEliTcm8bBs4Nq2lp");
        let k = known(&[v.as_str()]);
        let e = k.echoes().unwrap();
        let hex: String = v.bytes().map(|b| format!("{b:02x}")).collect();
        let b64 = String::from_utf8(crate::stages::redact::checks::b64_whole_groups(
            format!("{v}:x-oauth-basic").as_bytes(),
        ))
        .unwrap();
        for text in [
            format!("$ echo -n $T | xxd -p\n{hex}\n"),
            format!("hex {} end", hex.to_ascii_uppercase()),
            format!("Authorization: Basic {b64}="),
        ] {
            let (out, _) = e.text(text.as_bytes()).expect("an encoded echo is found");
            let out = String::from_utf8(out).unwrap();
            assert!(
                !out.contains(&hex) && !out.contains(&hex.to_ascii_uppercase()),
                "{out}"
            );
            assert!(!out.contains(&b64[..24]), "{out}");
        }
    }

    #[test]
    fn unicode_escapes_are_decoded() {
        let v = "Zq8xLm3kvR7pW2xY9kT4";
        let e = known(&[v]).echoes().unwrap();
        let line = r#"{"a":"\u005aq8xLm3kvR7pW2xY9kT4"}"#;
        let out = e.line(line.as_bytes()).expect("replaced");
        assert_eq!(out.line, br#"{"a":"[REDACTED:test-rule]"}"#);
    }

    #[test]
    fn whole_token_values_stay_inside_words() {
        let e = known(&["hunter22"]).echoes().unwrap();
        assert!(e.line(br#"{"a":"xhunter22"}"#).is_none());
        assert!(e.line(br#"{"a":"hunter22x"}"#).is_none());
        let out = e.line(br#"{"a":"pw: hunter22."}"#).unwrap();
        assert_eq!(out.line, br#"{"a":"pw: [REDACTED:test-rule]."}"#);
    }

    #[test]
    fn never_outside_strings() {
        let e = known(&["1234567890"]).echoes().unwrap();
        assert!(e.line(br#"{"n":1234567890}"#).is_none());
    }

    #[test]
    fn plain_text_lines() {
        let v = "Zq8xLm3kvR7pW2xY9kT4";
        let e = known(&[v]).echoes().unwrap();
        let out = e.line(format!("echo {v} >> log").as_bytes()).unwrap();
        assert_eq!(out.line, b"echo [REDACTED:test-rule] >> log");
    }

    #[test]
    fn thinking_blocks_are_named() {
        let v = "Zq8xLm3kvR7pW2xY9kT4";
        let e = known(&[v]).echoes().unwrap();
        let line = format!(
            r#"{{"message":{{"content":[{{"type":"thinking","thinking":"{v}","signature":"s"}}]}}}}"#
        );
        let out = e.line(line.as_bytes()).unwrap();
        assert_eq!(out.blocks.len(), 1);
    }

    fn secret(rule: &str) -> KnownSecret {
        KnownSecret {
            rule: rule.into(),
            placeholder: format!("[REDACTED:{rule}]").into_bytes(),
            fingerprint: String::new(),
        }
    }

    /// A value a stream learns chunk after chunk is found by the grown matcher as by one
    /// built from everything known, including a value whose replacement changed.
    #[test]
    fn a_grown_matcher_finds_what_a_rebuilt_one_does() {
        let value = |i: usize| format!("Zq8xLm3kvR7pW2x{i:06}");
        let mut k = Known::default();
        k.track_changes(usize::MAX);
        let mut cache = None;
        // Past the small set, so the matcher is the anchored one and grows in place.
        for i in 0..2000 {
            k.add(value(i).as_bytes(), secret("b-rule"));
        }
        k.refresh(&mut cache);
        assert!(matches!(
            cache.as_ref().unwrap().matcher,
            matcher::Matcher::Large(_)
        ));
        for i in 2000..2100 {
            k.add(value(i).as_bytes(), secret("b-rule"));
        }
        k.add(value(7).as_bytes(), secret("a-rule"));
        k.refresh(&mut cache);
        let grown = cache.unwrap();
        let rebuilt = k.echoes().unwrap();
        for i in [0, 7, 1999, 2000, 2099] {
            let line = format!(r#"{{"a":"say {} now"}}"#, value(i));
            let (g, r) = (grown.line(line.as_bytes()), rebuilt.line(line.as_bytes()));
            assert_eq!(
                g.as_ref().map(|l| &l.line),
                r.as_ref().map(|l| &l.line),
                "{i}"
            );
            assert!(g.is_some(), "{i} is replaced");
        }
        let seven = grown.line(format!("x {}", value(7)).as_bytes()).unwrap();
        assert_eq!(seven.line, b"x [REDACTED:a-rule]");
    }

    #[test]
    fn a_limited_set_counts_what_it_did_not_keep() {
        let mut k = Known::default();
        k.track_changes(2);
        for v in [
            "Zq8xLm3kvR7pW2xY9kT1",
            "Zq8xLm3kvR7pW2xY9kT2",
            "Zq8xLm3kvR7pW2xY9kT3",
        ] {
            k.add(v.as_bytes(), secret("r"));
        }
        assert_eq!((k.len(), k.dropped()), (2, 1));
        // A value known already may still change its replacement.
        k.add(b"Zq8xLm3kvR7pW2xY9kT1", secret("a"));
        assert_eq!(k.get(b"Zq8xLm3kvR7pW2xY9kT1").unwrap().rule, "a");
    }

    #[test]
    fn same_result_whatever_the_order() {
        let mut a = Known::default();
        let mut b = Known::default();
        let s1 = KnownSecret {
            rule: "b-rule".into(),
            placeholder: b"[REDACTED:b-rule]".to_vec(),
            fingerprint: String::new(),
        };
        let s2 = KnownSecret {
            rule: "a-rule".into(),
            placeholder: b"[REDACTED:a-rule]".to_vec(),
            fingerprint: String::new(),
        };
        a.add(b"Zq8xLm3kvR7pW2xY9kT4", s1.clone());
        a.add(b"Zq8xLm3kvR7pW2xY9kT4", s2.clone());
        b.add(b"Zq8xLm3kvR7pW2xY9kT4", s2);
        b.add(b"Zq8xLm3kvR7pW2xY9kT4", s1);
        assert_eq!(a, b);
    }
}
