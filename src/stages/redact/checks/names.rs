//! Variable names: which name a secret (`api_key`, `DB_PASSWORD`), which only look like
//! one (`token_count`, `key_path`). The name decides an assignment's fate.

/// Split a variable name into lowercase words (`_`, `-`, `.`, camelCase).
pub(super) fn words(name: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for &c in name {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase() as char);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

pub(super) const SECRET_WORDS: &[&str] = &[
    "bearer",
    "secret",
    "secrets",
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "token",
    "apikey",
    "credential",
    "credentials",
    "creds",
    "privatekey",
    "secretkey",
    "accesskey",
    "authkey",
    "mnemonic",
];
pub(super) const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "access",
    "private",
    "secret",
    "auth",
    "master",
    "signing",
    "encryption",
    "client",
    "app",
    "service",
    "admin",
    "license",
    "account",
    "session",
    "shared",
    "storage",
    "bot",
    "webhook",
    "consumer",
    "subscription",
    "deploy",
    "role",
];
pub(super) const NOT_SECRET_WORDS: &[&str] = &[
    // Anti-forgery nonces, public in every page; a JWT library's package name.
    "csrf",
    "xsrf",
    "jsonwebtoken",
    "id",
    "ids",
    "name",
    "names",
    "url",
    "uri",
    "urls",
    "endpoint",
    "file",
    "path",
    "dir",
    "length",
    "len",
    "size",
    "count",
    "type",
    "types",
    "header",
    "prefix",
    "limit",
    "expiry",
    "expires",
    "expiration",
    "ttl",
    "version",
    "format",
    "field",
    "hash",
    "sha",
    "digest",
    "checksum",
    "integrity",
    "fingerprint",
    "mode",
    "enabled",
    "max",
    "min",
    "usage",
    "tokens",
    "tokenizer",
    "tokenize",
    "input",
    "output",
    "index",
    "position",
    "timeout",
    "pair",
    "public",
    "publishable",
    "anon",
    "env",
    "var",
    "method",
    "scope",
    "scopes",
    "region",
    "algorithm",
    "alg",
    "policy",
    "manager",
    "store",
    "vault",
    "provider",
    "rotation",
    "ref",
    "reference",
    "hint",
    "label",
    "description",
    "schema",
    "required",
    "placeholder",
    "pattern",
    "regex",
    "validation",
    "budget",
    "cost",
    "price",
    "rate",
    "estimate",
    "estimated",
    "remaining",
    "reset",
    "used",
    "total",
    "cache",
    "cached",
    "stream",
    "streaming",
    "counter",
    "kind",
    "issuer",
    "audience",
    "exists",
    "present",
    "set",
    "loaded",
    "missing",
    "valid",
    "invalid",
    "error",
    "status",
    "generator",
    "generate",
    "service",
    "handler",
    "helper",
    "util",
    "utils",
    "mask",
    "masked",
    "display",
    "preview",
];

/// Words that make a name no secret wherever they stand: a public or anonymous key, an
/// anti-forgery nonce, a library's name.
const ALWAYS_NOT_SECRET: &[&str] = &[
    "csrf",
    "xsrf",
    "jsonwebtoken",
    "public",
    "publishable",
    "anon",
];

/// Does a variable name name a secret? The last word that names one decides: a word for
/// something else after it (`TOKEN_CACHE`, `API_KEY_ID`, `SECRET_NAME`) makes the name
/// that other thing; before it (`REDIS_CACHE_PASSWORD`, `SUPABASE_SERVICE_ROLE_KEY`,
/// `STREAM_API_SECRET`) it only says whose secret it is. A digit glued on (`TOKEN0`) counts as
/// the word.
pub(super) fn secret_name(name: &[u8]) -> bool {
    let w: Vec<String> = words(name)
        .into_iter()
        .map(|x| x.trim_end_matches(|c: char| c.is_ascii_digit()).to_string())
        .filter(|x| !x.is_empty())
        .collect();
    if w.iter().any(|x| ALWAYS_NOT_SECRET.contains(&x.as_str())) {
        return false;
    }
    let names_secret = |i: usize, x: &String| {
        SECRET_WORDS.contains(&x.as_str())
            // Glued names: PGPASSWORD, MYSQL_PWD's kin, authtoken, clientsecret.
            || ["password", "passwd", "passphrase", "token", "secret", "apikey"]
                .iter()
                .any(|s| x.len() > s.len() && x.ends_with(s))
            || (x == "key" && i > 0 && KEY_QUALIFIERS.contains(&w[i - 1].as_str()))
            || (x == "key" && w.len() == 1)
    };
    let Some(last) = w
        .iter()
        .enumerate()
        .rev()
        .find(|(i, x)| names_secret(*i, x))
        .map(|(i, _)| i)
    else {
        return false;
    };
    !w[last + 1..]
        .iter()
        .any(|x| NOT_SECRET_WORDS.contains(&x.as_str()))
}

pub(super) fn password_name(name: &[u8]) -> bool {
    words(name).iter().any(|w| {
        matches!(w.as_str(), "pass" | "pwd" | "pw")
            || w.ends_with("password")
            || w.ends_with("passwd")
            || w.ends_with("passphrase")
            || w.ends_with("passcode")
    })
}
