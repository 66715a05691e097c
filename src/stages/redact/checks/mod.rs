//! Checks that a regex match is a real secret: entropy, checksums, structure, and the
//! placeholder / hash / identifier classes that look like secrets but are not.

mod formats;
pub use formats::b64_whole_groups;
mod names;
#[cfg(test)]
mod tests;

use formats::*;
use names::*;

/// A test applied to a candidate after its rule's regex matched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// Shannon entropy (bits per byte) of the secret is at least this.
    Entropy(f32),
    /// The secret holds an ASCII digit.
    Digit,
    /// The secret is not made only of digits.
    NotAllDigits,
    /// A JWT: the header decodes to a JSON object with `alg`; a payload with `"role":"anon"`
    /// (a public Supabase-style anon key) is not a secret.
    Jwt,
    /// HTTP basic credentials: base64 of printable `user:password`.
    BasicAuth,
    /// An age secret key with a valid bech32 checksum.
    Bech32,
    /// A private-key body holds at least 40 base64 characters.
    PemBody,
    /// The `name` group names a secret (not `…_ID`, `…_URL`, `PUBLIC…`, `max_tokens`, …) and
    /// the value is not a reference to something else (`$VAR`, `process.env.X`, a path).
    SecretName,
    /// The value of a `.env`-style assignment: not a plain number or boolean.
    EnvValue,
    /// The value of a generic assignment. A quoted literal or a value running to the end of
    /// its line is judged by the name (short human passwords count); a value in the middle of
    /// code must look random. Identifiers, references, calls, numbers and type names are not
    /// secrets.
    GenericValue,
    /// The value of a command-line credential: not a reference (`$VAR`), a metavariable
    /// (`PASSWORD`), another flag (`-x`) or a placeholder.
    CliValue,
    /// A header or token value: has a digit (or is long and mixed-case), not a word, an
    /// identifier path or a number.
    TokenLike,
    /// A token-like word in prose: letters and digits, at least 8 characters (6 after a
    /// password word), not a hash, uuid, version, date, path, e-mail or URL.
    ProseValue,
    /// A Discord bot token: its first part is the base64 of a numeric user id.
    DiscordToken,
    /// Upper-case, lower-case letters and digits (or `/`, `+`) all appear: a base64 key,
    /// not a hex hash.
    Mixed,
    /// The secret is none of these published example values (keys printed in a vendor's
    /// public SDK sources or documentation).
    NotOneOf(&'static [&'static str]),
    /// The secret differs from the `name` group (a password equal to the user name is a
    /// product's default login, `neo4j:neo4j`).
    NotName,
    /// The secret is not an HTML entity (`&quot`, `&#34`, `&#x22` before the `;` a rule
    /// takes as the value's end): `password=&quot;…&quot;` on an escaped page quotes the
    /// value, it is not one.
    NotHtmlEntity,
}

/// Where a candidate sits, for the checks that look beyond the secret itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx<'a> {
    /// The rule's `name` group (variable name, credential word).
    pub name: Option<&'a [u8]>,
    /// The secret is enclosed in matching quotes.
    pub quoted: bool,
    /// Nothing but blanks or a comment follows the secret on its line.
    pub line_end: bool,
    /// The byte right after the secret.
    pub next: Option<u8>,
    /// The quoted secret is followed by `:`: it is a JSON key, not a value.
    pub key_like: bool,
}

impl<'a> Ctx<'a> {
    /// The context of `text[start..end]`.
    pub fn of(text: &'a [u8], start: usize, end: usize, name: Option<&'a [u8]>) -> Ctx<'a> {
        let mut p = start;
        while p > 0 && text[p - 1] == b'\\' {
            p -= 1;
        }
        let open = p.checked_sub(1).map(|i| text[i]);
        let mut q = end;
        while q < text.len() && text[q] == b'\\' {
            q += 1;
        }
        let quoted = matches!(open, Some(b'"' | b'\'' | b'`')) && text.get(q) == open.as_ref();
        let mut e = end;
        while e < text.len() && matches!(text[e], b' ' | b'\t') {
            e += 1;
        }
        let rest = &text[e..];
        let line_end = rest.is_empty()
            || matches!(rest[0], b'\n' | b'\r' | b'#')
            || rest.starts_with(b"\\n")
            || rest.starts_with(b"\\r")
            || (e > end && rest.starts_with(b"//"));
        let mut k = q + 1;
        while k < text.len() && matches!(text[k], b' ' | b'\t') {
            k += 1;
        }
        let key_like = quoted && text.get(k) == Some(&b':');
        Ctx {
            key_like,
            name,
            quoted,
            line_end,
            next: text.get(end).copied(),
        }
    }
}

impl Check {
    /// Does `secret` (with the rule's `name` group, if any) pass?
    pub fn passes(self, secret: &[u8], cx: &Ctx<'_>) -> bool {
        let name = cx.name;
        match self {
            Check::Entropy(min) => entropy(secret) >= min,
            Check::Digit => secret.iter().any(u8::is_ascii_digit),
            Check::NotAllDigits => !secret.iter().all(u8::is_ascii_digit),
            Check::Jwt => jwt(secret),
            Check::BasicAuth => basic_auth(secret),
            Check::Bech32 => bech32(secret),
            Check::PemBody => {
                secret
                    .iter()
                    .filter(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/'))
                    .count()
                    >= 40
            }
            Check::SecretName => name.is_none_or(secret_name) && !reference(secret),
            Check::EnvValue => {
                let pw = name.is_some_and(password_name);
                env_value(secret) && (pw || !readable(secret)) && (pw || secret.len() >= 6)
            }
            Check::GenericValue => assign_value(secret, cx),
            Check::CliValue => cli_value(secret),
            Check::TokenLike => token_like(secret),
            Check::ProseValue => prose_value(secret, name.is_some_and(password_name)),
            Check::DiscordToken => discord(secret),
            Check::NotName => name != Some(secret),
            Check::NotHtmlEntity => !html_entity(secret),
            Check::NotOneOf(list) => !list.iter().any(|x| x.as_bytes() == secret),
            Check::Mixed => {
                secret.iter().any(u8::is_ascii_lowercase)
                    && secret.iter().any(u8::is_ascii_uppercase)
                    && secret
                        .iter()
                        .any(|c| c.is_ascii_digit() || matches!(c, b'/' | b'+'))
            }
        }
    }
}

/// Shannon entropy in bits per byte.
pub fn entropy(s: &[u8]) -> f32 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &b in s {
        counts[b as usize] += 1;
    }
    let n = s.len() as f32;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f32 / n;
            -p * p.log2()
        })
        .sum()
}

/// Values that stand for a secret without being one: `YOUR_API_KEY`, `sk-...xxxx`, `<token>`,
/// `${VAR}`, `$VAR`, `{{ secret }}`, `[PASSWORD]`, `********`, `changeme`, one repeated
/// character.
pub fn placeholder(s: &[u8]) -> bool {
    if s.is_empty() {
        return true;
    }
    if s.iter().all(|&c| c == s[0]) || filler(s) || ascending(s) {
        return true;
    }
    if matches!(s[0], b'$' | b'<' | b'%' | b'{' | b'[') {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    // AWS's documented example keys (`AKIAIOSFODNN7EXAMPLE`, `…EXAMPLEKEY`) and their kin.
    if lower.ends_with(b"example") || lower.ends_with(b"examplekey") {
        return true;
    }
    // Masks, templates and placeholder words anywhere in the value: one automaton pass (it
    // was 30 memmem searches, a tenth of the time on secret-dense input).
    static MARKERS: std::sync::OnceLock<aho_corasick::AhoCorasick> = std::sync::OnceLock::new();
    let markers = MARKERS.get_or_init(|| {
        aho_corasick::AhoCorasick::new([
            &b"****"[..],
            b"...",
            "…".as_bytes(),
            b"<",
            b"{{",
            b"${",
            b"your_",
            b"your-",
            b"yourapi",
            b"yourkey",
            b"yoursecret",
            b"yourtoken",
            b"yourpass",
            b"changeme",
            b"change_me",
            b"change-me",
            b"replace_me",
            b"replace-me",
            b"replaceme",
            b"placeholder",
            b"redacted",
            b"dummy",
            b"notreal",
            b"not_real",
            b"not-a-real",
            b"fake_",
            b"fake-",
            b"_here",
            b"-here",
        ])
        .expect("fixed literals build")
    });
    if markers.is_match(&lower) {
        return true;
    }
    // A mask of x's is one case (`sk-...xxxx`, `XXXX-XXXX`); `xXxX` in a random token is chance
    // (1 token in 50k held one, case aside: second adversarial pass).
    if memchr::memmem::find(s, b"xxxx").is_some() || memchr::memmem::find(s, b"XXXX").is_some() {
        return true;
    }
    matches!(
        lower.as_slice(),
        b"password"
            | b"passwd"
            | b"secret"
            | b"token"
            | b"apikey"
            | b"api_key"
            | b"pass"
            | b"null"
            | b"none"
            | b"nil"
            | b"undefined"
            | b"true"
            | b"false"
            | b"string"
            | b"required"
            | b"optional"
            | b"empty"
            | b"test"
            | b"example"
            | b"sample"
            | b"value"
    )
}

/// Mostly one repeated character (`glc_1111111111…1=`): a run of 8 or more copies making
/// up half the value. (Real base64 tokens may hold shorter runs: `AAAAAAAA` for zero bytes.)
fn filler(s: &[u8]) -> bool {
    let (mut run, mut best) = (1, 1);
    for w in s.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        best = best.max(run);
    }
    best >= 8 && best * 2 >= s.len()
}

/// A short keyboard-order sequence (`abcdef123`, `AbCeFG123`, `123456789`): 6 to 16
/// characters, three quarters of neighbouring pairs (case folded) consecutive.
fn ascending(s: &[u8]) -> bool {
    if !(6..=16).contains(&s.len()) {
        return false;
    }
    let f: Vec<u8> = s.iter().map(u8::to_ascii_lowercase).collect();
    let up = f
        .windows(2)
        .filter(|w| w[1] == w[0].wrapping_add(1))
        .count();
    up * 4 >= (f.len() - 1) * 3
}

/// A reference to a secret rather than the secret: `$X`, `${X}`, `process.env.X`,
/// `os.environ[...]`, `settings.api_key`, a file path.
fn reference(s: &[u8]) -> bool {
    if matches!(s.first(), Some(b'$' | b'/' | b'~' | b'@' | b'%')) || s.starts_with(b"./") {
        return true;
    }
    // Dotted identifier path without digits: process.env.API_KEY, config.secret.
    let dotted = s.contains(&b'.')
        && s.split(|&c| c == b'.').all(|part| {
            !part.is_empty()
                && (part[0].is_ascii_alphabetic() || part[0] == b'_')
                && part.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        });
    dotted && !s.iter().any(u8::is_ascii_digit)
}

fn uuid(s: &[u8]) -> bool {
    s.len() == 36
        && s.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn json_number(s: &[u8]) -> bool {
    let t = std::str::from_utf8(s).unwrap_or("x");
    let t = t.strip_prefix('-').unwrap_or(t);
    !t.is_empty()
        && t.as_bytes()[0].is_ascii_digit()
        && t.parse::<f64>().is_ok()
        && t.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
}

fn env_value(s: &[u8]) -> bool {
    !json_number(s)
        && !matches!(
            s.to_ascii_lowercase().as_slice(),
            b"true" | b"false" | b"yes" | b"no" | b"on" | b"off"
        )
}

fn generic_value(s: &[u8], password: bool) -> bool {
    if json_number(s) || uuid(s) {
        return false;
    }
    let letters = s.iter().filter(|c| c.is_ascii_alphabetic()).count();
    let digits = s.iter().filter(|c| c.is_ascii_digit()).count();
    // An identifier or identifier path (`hashed_password`, `this.token`), not a literal.
    if digits == 0
        && s.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
    {
        return false;
    }
    if password {
        return s.len() >= 6 && letters + digits >= 4;
    }
    letters > 0 && digits > 0 && s.len() >= 12 && entropy(s) >= 3.5 && !readable(s)
}

/// Type names and other words that follow a secret-named field in code or schemas.
const TYPE_WORDS: &[&[u8]] = &[
    b"str",
    b"string",
    b"bytes",
    b"secretstr",
    b"secretbytes",
    b"optional",
    b"text",
    b"number",
    b"boolean",
    b"integer",
    b"any",
    b"unknown",
    b"object",
    b"varchar",
    b"char",
    b"hidden",
    b"masked",
    b"secret",
    b"sensitive",
    b"env",
    b"vault",
];

/// A version (`v1.2.3`), a date (`2024-01-31…`) or a time.
fn version_or_date(s: &[u8]) -> bool {
    let t = s.strip_prefix(b"v").unwrap_or(s);
    let dotted = t.contains(&b'.')
        && t.split(|&c| c == b'.')
            .all(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
    let date = s.len() >= 10
        && s[..4].iter().all(u8::is_ascii_digit)
        && s[4] == b'-'
        && s[5..7].iter().all(u8::is_ascii_digit)
        && s[7] == b'-';
    dotted || date
}

/// A word or identifier path (`hashed_password`, `this.token`, `SECRET_KEY`): no digits,
/// only identifier characters.
fn identifier(s: &[u8]) -> bool {
    !s.iter().any(u8::is_ascii_digit)
        && s.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

fn assign_value(s: &[u8], cx: &Ctx<'_>) -> bool {
    if json_number(s) || reference(s) || version_or_date(s) {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    if TYPE_WORDS.contains(&lower.as_slice()) {
        return false;
    }
    let pw = cx.name.is_some_and(password_name);
    if cx.key_like {
        return false;
    }
    if !cx.quoted && matches!(cx.next, Some(b'(' | b'[' | b'{')) {
        return false; // a call, an index, a block: code, not a literal
    }
    if cx.quoted || cx.line_end {
        let words = s.split(|&c| c == b' ').filter(|w| !w.is_empty()).count();
        if s.first().is_some_and(|c| c.is_ascii_whitespace())
            || s.last().is_some_and(|c| c.is_ascii_whitespace())
        {
            return false;
        }
        if pw {
            // "correct horse battery staple" is a password; a sentence is not.
            if words > 4 || (words > 1 && s.iter().any(|c| matches!(c, b',' | b'?' | b'\''))) {
                return false;
            }
            if identifier(s) {
                // A lone word: a password when quoted or on its own line, unless it is the
                // name of something (`user_password`, `DB_PASS`, `this.pw`).
                return s.len() >= 6
                    && !s.contains(&b'.')
                    && (!s.contains(&b'_') || s.iter().any(u8::is_ascii_uppercase))
                    && !s
                        .iter()
                        .all(|c| c.is_ascii_uppercase() || *c == b'_' || *c == b'-');
            }
            return s.len() >= 4;
        }
        if words > 1 || s.len() < 8 || readable(s) {
            return false;
        }
        if identifier(s) {
            let mixed =
                s.iter().any(u8::is_ascii_lowercase) && s.iter().any(u8::is_ascii_uppercase);
            return mixed && s.len() >= 20 && !s.contains(&b'.') && entropy(s) >= 3.5;
        }
        return s.iter().filter(|c| c.is_ascii_alphanumeric()).count() >= 6 && entropy(s) >= 2.5;
    }
    generic_value(s, pw)
}

fn cli_value(s: &[u8]) -> bool {
    if reference(s) || matches!(s[0], b'-' | b'[' | b'{' | b'(' | b'=') {
        return false;
    }
    // A metavariable in usage text: `--password PASSWORD`, `-p PASS`.
    if s.len() >= 3 && s.iter().all(|c| c.is_ascii_uppercase() || *c == b'_') {
        return false;
    }
    !TYPE_WORDS.contains(&s.to_ascii_lowercase().as_slice())
}

fn token_like(s: &[u8]) -> bool {
    if json_number(s) || reference(s) || s.len() < 8 {
        return false;
    }
    let digits = s.iter().any(u8::is_ascii_digit);
    let mixed = s.iter().any(u8::is_ascii_lowercase) && s.iter().any(u8::is_ascii_uppercase);
    (digits || (mixed && s.len() >= 16)) && !readable(s) && entropy(s) >= 2.5
}

fn prose_value(s: &[u8], pw: bool) -> bool {
    let letters = s.iter().filter(|c| c.is_ascii_alphabetic()).count();
    let digits = s.iter().filter(|c| c.is_ascii_digit()).count();
    let lower = s.to_ascii_lowercase();
    let has = |n: &[u8]| memchr::memmem::find(&lower, n).is_some();
    if s.len() < if pw { 6 } else { 8 } || letters < 2 || digits == 0 {
        return false;
    }
    if reference(s)
        || uuid(s)
        || version_or_date(s)
        || has(b"://")
        || s.contains(&b'@') && s.contains(&b'.')
        || s.iter().all(u8::is_ascii_hexdigit)
        || s.iter().filter(|&&c| c == b'/').count() >= 2
        || readable(s)
        || slug(s)
    {
        return false;
    }
    // A file name (`config.yaml`, `id_ed25519.pub`): a dot and a short extension.
    if let Some(d) = s.iter().rposition(|&c| c == b'.') {
        let ext = &s[d + 1..];
        const EXTS: &[&[u8]] = &[
            b"yaml", b"yml", b"json", b"toml", b"txt", b"pub", b"pem", b"key", b"env", b"py",
            b"js", b"ts", b"rs", b"go", b"md", b"sh", b"cfg", b"ini", b"conf", b"log", b"csv",
            b"xml", b"html", b"lock", b"sql", b"crt", b"der", b"zip", b"gz", b"tar", b"rb",
        ];
        if EXTS.contains(&ext.to_ascii_lowercase().as_slice()) {
            return false;
        }
    }
    entropy(s) >= 2.8
}

/// A lower-case identifier of four or more dash-separated parts (a cache key
/// `setup-uv-1-x86_64-unknown-linux-gnu-3.12`, a build id): a name, not a secret.
fn slug(s: &[u8]) -> bool {
    let parts: Vec<&[u8]> = s.split(|&c| c == b'-').collect();
    parts.len() >= 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.iter().all(|&c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'.'
                })
        })
        && parts
            .iter()
            .filter(|p| p.iter().filter(|c| c.is_ascii_alphabetic()).count() >= 2)
            .count()
            >= 2
}

fn discord(s: &[u8]) -> bool {
    let first = s.split(|&c| c == b'.').next().unwrap_or_default();
    b64_decode(first, true)
        .is_some_and(|d| (17..=20).contains(&d.len()) && d.iter().all(u8::is_ascii_digit))
        && entropy(s) >= 3.5
}

/// Words joined by `-`, `_` or `.` (`owner-call-prejoin`, `test-only-secret-base-64-bytes`):
/// a name or a self-describing test value, not a random key or token.
pub fn readable(s: &[u8]) -> bool {
    let parts: Vec<&[u8]> = s.split(|c| matches!(c, b'-' | b'_' | b'.')).collect();
    if parts.len() < 3 {
        return false;
    }
    let word = |p: &[u8]| {
        p.len() >= 2
            && (p.iter().all(u8::is_ascii_lowercase) || p.iter().all(u8::is_ascii_uppercase))
    };
    let number = |p: &[u8]| !p.is_empty() && p.len() <= 3 && p.iter().all(u8::is_ascii_digit);
    let words = parts.iter().filter(|p| word(p)).count();
    parts.iter().all(|p| word(p) || number(p)) && words * 4 >= parts.len() * 3
}

/// `&name`, `&#123` or `&#x7b`: an HTML entity without its `;`.
fn html_entity(s: &[u8]) -> bool {
    match s {
        [b'&', b'#', b'x' | b'X', hex @ ..] => {
            !hex.is_empty() && hex.iter().all(u8::is_ascii_hexdigit)
        }
        [b'&', b'#', dec @ ..] => !dec.is_empty() && dec.iter().all(u8::is_ascii_digit),
        [b'&', name @ ..] => {
            (2..=8).contains(&name.len()) && name.iter().all(u8::is_ascii_alphanumeric)
        }
        _ => false,
    }
}
