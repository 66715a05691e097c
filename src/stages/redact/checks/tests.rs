use super::*;

#[test]
fn entropy_of_known_strings() {
    assert_eq!(entropy(b"aaaa"), 0.0);
    assert!((entropy(b"abcd") - 2.0).abs() < 1e-6);
    assert!(entropy(b"AKIAIOSFODNN7EXAMPLE") > 3.5);
}

#[test]
fn placeholders() {
    for p in [
        "YOUR_API_KEY",
        "sk-...xxxx",
        "<token>",
        "${VAR}",
        "$VAR",
        "{{ secrets.X }}",
        "********",
        "changeme",
        "aaaaaaaa",
        "password",
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ] {
        assert!(placeholder(p.as_bytes()), "{p}");
    }
    for s in ["AKIAIOSFODNN7EXAMPL3", "hunter22"] {
        assert!(!placeholder(s.as_bytes()), "{s}");
    }
}

#[test]
fn names() {
    for n in [
        "DB_PASSWORD",
        "apiKey",
        "GITHUB_TOKEN",
        "client_secret",
        "AWS_SECRET_ACCESS_KEY",
        "stripeSecretKey",
        "x-api-key",
        "secret",
    ] {
        assert!(secret_name(n.as_bytes()), "{n}");
    }
    for n in [
        "input_tokens",
        "TOKEN_URL",
        "max_tokens",
        "SECRET_NAME",
        "primary_key",
        "NEXT_PUBLIC_ANON_KEY",
        "tokenizer",
        "keyboard",
    ] {
        assert!(!secret_name(n.as_bytes()), "{n}");
    }
}

#[test]
fn generic_values() {
    assert!(generic_value(b"a8Zk2Lq9Xw4Vb7Nm3Pc6", false));
    assert!(!generic_value(b"process_env_KEY", false));
    assert!(!generic_value(
        b"550e8400-e29b-41d4-a716-446655440000",
        false
    ));
    assert!(!generic_value(b"123456789012345", false));
    assert!(generic_value(b"hunter22", true));
    assert!(!generic_value(b"hashed_password", true));
}

#[test]
fn readable_values() {
    assert!(readable(b"owner-call-prejoin"));
    assert!(readable(
        b"test-only-secret-base-minimum-64-bytes-long-enough"
    ));
    assert!(!readable(b"a8Zk2Lq9-Xw4Vb7Nm-3Pc6"));
    assert!(!readable(b"prod-db"));
}

#[test]
fn jwt_and_basic() {
    let h = "eyJhbGciOiJIUzI1NiJ9";
    let p = "eyJzdWIiOiIxMjM0NTY3ODkwIn0";
    assert!(jwt(format!("{h}.{p}.sig").as_bytes()));
    assert!(!jwt(format!("{p}.{p}.sig").as_bytes()));
    let anon = "eyJyb2xlIjoiYW5vbiJ9";
    assert!(!jwt(format!("{h}.{anon}.sig").as_bytes()));
    // A header damaged in a copy before a payload of claims; not before a bare object.
    assert!(jwt(
        format!("eyJhbGciOieeeiIsInR5cCI6IkpXVCJ9.{p}.sig").as_bytes()
    ));
    assert!(!jwt(b"eyJhbGciOieeeiIsInR5cCI6IkpXVCJ9.eyJhIjoxfQ.sig"));
    assert!(basic_auth(b"dXNlcjpwYXNz"));
    assert!(!basic_auth(b"ZnVuY3Rpb25hbGl0eQ"));
}

#[test]
fn bech32_checksum() {
    // BIP-173 test vector.
    assert!(bech32(b"A12UEL5L"));
    assert!(!bech32(b"A12UEL5X"));
}

#[test]
fn cache_keys_are_not_prose_secrets() {
    assert!(slug(b"setup-uv-1-x86_64-unknown-linux-gnu-3.12-abc123"));
    assert!(!prose_value(
        b"setup-uv-1-x86_64-unknown-linux-gnu-3.12-abc123",
        false
    ));
    assert!(prose_value(b"Rq8vLz2WmN5kTb3Y", false));
    assert!(!slug(b"Tulip4471!harbor"));
}

/// The last word naming a secret decides (second adversarial pass: `SERVICE`, `CACHE`,
/// `STREAM`, `PREVIEW`, `ERROR` anywhere in a name used to veto it).
#[test]
fn the_last_secret_word_of_a_name_decides() {
    use super::names::secret_name;
    for yes in [
        "SUPABASE_SERVICE_ROLE_KEY",
        "REDIS_CACHE_PASSWORD",
        "STREAM_API_SECRET",
        "NEXT_PREVIEW_SECRET",
        "SENTRY_ERROR_TOKEN",
        "TOKEN0",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
    ] {
        assert!(secret_name(yes.as_bytes()), "{yes}");
    }
    for no in [
        "TOKEN_CACHE",
        "API_KEY_ID",
        "SECRET_NAME",
        "MAX_TOKENS",
        "CSRF_TOKEN",
        "NEXT_PUBLIC_API_KEY",
        "SUPABASE_ANON_KEY",
        "PASSWORD_MIN_LENGTH",
    ] {
        assert!(!secret_name(no.as_bytes()), "{no}");
    }
}

/// A mask of x's is one case; mixed-case x's in a random token are chance, not a mask.
#[test]
fn only_a_same_case_run_of_x_is_a_mask() {
    use super::placeholder;
    assert!(placeholder(b"sk-...xxxx"));
    assert!(placeholder(b"A3-XXXXXX-XXXXXX"));
    assert!(!placeholder(b"Qw7rT9xXxXk2Lm8Zp4Vb6Nc1"));
}
