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

/// Does a variable name name a secret?
pub(super) fn secret_name(name: &[u8]) -> bool {
    let w = words(name);
    if w.iter().any(|x| NOT_SECRET_WORDS.contains(&x.as_str())) {
        return false;
    }
    w.iter().enumerate().any(|(i, x)| {
        SECRET_WORDS.contains(&x.as_str())
            // Glued names: PGPASSWORD, MYSQL_PWD's kin, authtoken, clientsecret.
            || ["password", "passwd", "passphrase", "token", "secret", "apikey"]
                .iter()
                .any(|s| x.len() > s.len() && x.ends_with(s))
            || (x == "key" && i > 0 && KEY_QUALIFIERS.contains(&w[i - 1].as_str()))
            || (x == "key" && w.len() == 1)
    })
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
