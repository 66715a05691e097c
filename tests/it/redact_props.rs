//! Property tests of the redactor on generated JSONL lines whose strings mix secret-like
//! fragments, placeholders and every kind of JSON escape (`\"`, `\\`, `\/`, `\n`, `\u00XX`,
//! surrogate pairs):
//!
//! - the prefilter never skips a line the full scan (every rule over every string) would
//!   change, and both give the same output;
//! - redacting is idempotent;
//! - output lines are valid JSON with only the redacted strings changed;
//! - lines without findings are left byte-identical.

use std::sync::OnceLock;

use cchist::stages::redact::{rules, RedactOptions, Redactor, RuleSelection};
use proptest::prelude::*;
use serde_json::Value;

fn redactors() -> &'static [Redactor; 2] {
    static R: OnceLock<[Redactor; 2]> = OnceLock::new();
    R.get_or_init(|| {
        let all = RedactOptions {
            rules: RuleSelection {
                only: Some(rules::RULES.iter().map(|r| r.id.to_string()).collect()),
                ..RuleSelection::default()
            },
            ..RedactOptions::default()
        };
        [
            Redactor::new(&RedactOptions::default()).unwrap(),
            Redactor::new(&all).unwrap(),
        ]
    })
}

/// Pieces that make rules fire, nearly fire, or must stay untouched.
fn fragment() -> impl Strategy<Value = String> {
    let sep = "[ =:\"'\n\t,;/@]{0,3}";
    prop_oneof![
        "[a-zA-Z0-9 _.:=/@-]{0,24}",
        "[\"\\\\/\n\t\u{1}\u{1b}é😀\u{2028}]{1,3}",
        "[A-Za-z0-9]{30,40}".prop_map(|b| format!("{}{b}", "ghp_")),
        "[A-Z2-7]{14,17}".prop_map(|b| format!("{}{b}", "AKIA")),
        "[A-Za-z0-9_-]{30,100}".prop_map(|b| format!("{}{b}", "sk-ant-api03-")),
        "[A-Za-z0-9]{8,30}".prop_map(|b| format!("{}{b}", "xoxb-1234567890-1234567890-")),
        "[A-Za-z0-9_-]{20,40}".prop_map(|b| format!("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.{b}")),
        ("(API_KEY|DB_PASSWORD|token|secret|apiKey|aws_secret_access_key|password|input_tokens|tokenizer|SMTP_PASS)", sep, "[A-Za-z0-9+/=_.!#-]{0,44}")
            .prop_map(|(n, s, v)| format!("{n}{s}{v}")),
        ("(https|postgres|redis)", "[a-z]{0,6}", "[A-Za-z0-9!$]{0,12}", "[a-z.]{0,10}")
            .prop_map(|(sc, u, p, h)| format!("{sc}://{u}:{p}@{h}")),
        ("(RSA |OPENSSH |)", "(\n|\\\\n|)", "[A-Za-z0-9+/=\n]{0,120}", "(-----END (RSA |OPENSSH |)PRIVATE KEY-----|)")
            .prop_map(|(k, nl, b, e)| format!("-----BEGIN {k}PRIVATE KEY-----{nl}{b}{e}")),
        "[A-Za-z0-9]{10,50}".prop_map(|b| format!("Authorization: Bearer {b}")),
        ("(HEROKU_API_KEY|twilio_token|MAILGUN_KEY|cloudflare_api_token)", sep, "[0-9a-f-]{30,40}").prop_map(|(n, s, v)| format!("{n}{s}{v}")),
        ("(mnemonic|seed_phrase)", sep, "([a-z]{3,8} ){10,13}").prop_map(|(n, s, v)| format!("{n}{s}{v}")),
        ("(AccountKey|SharedAccessKey|sig|:_authToken|Password)", "[=: ]{1,2}", "[A-Za-z0-9+/%=;]{5,100}").prop_map(|(n, s, v)| format!("{n}{s}{v}")),
        ("curl (-s )?(-u|--user)[ =]", "[a-z]{1,5}", "(:[a-z0-9]{0,10})?").prop_map(|(c, u, p)| format!("{c}{u}{p} x")),
        "[A-Za-z0-9/+]{0,50}".prop_map(|b| format!("hooks.slack.com/services/{b}")),
        "[A-Za-z0-9/+\n]{0,150}".prop_map(|b| format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\n{b}")),
        "[A-Za-z0-9/+]{0,100}".prop_map(|b| format!("\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{b}\\n-----END PRIVATE KEY-----\\n\"")),
        ("(--password|--db-password|-p|--pwd)", "[ =]{0,2}", "['\"]?", "[A-Za-z0-9!$#]{0,14}").prop_map(|(f, s, q, v)| format!("cmd {f}{s}{q}{v}{q}")),
        ("(mysql -u root -p|sshpass -p |redis-cli -a |docker login -u x -p |htpasswd -b f u )", "[A-Za-z0-9!'$]{0,12}").prop_map(|(c, v)| format!("{c}{v}")),
        ("(Authorization|X-Api-Key|PRIVATE-TOKEN|x-auth-token)", "[:= \"']{1,3}", "(token |Bearer |Basic |Bot |)", "[A-Za-z0-9+/=._-]{0,40}").prop_map(|(h, s, sc, v)| format!("{h}{s}{sc}{v}")),
        ("(the |my )?(password|key|token|secret)s?", "( is| was set to|:| for prod is)? ", "[A-Za-z0-9!#.]{0,20}", "[.,]? ").prop_map(|(a, w, v, e)| format!("{a}{w}{v}{e}")),
        ("(id_|%3D|x|\\n|)", "(AKIA|ASIA|ACCA)", "[A-Z0-9]{14,17}", "( |)", "[A-Za-z0-9/+]{0,41}").prop_map(|(p, k, b, s, t)| format!("{p}{k}{b}{s}{t}")),
        ("(twilio|TWILIO_AUTH_TOKEN=|mailgun|key-|discord|bot.run\\(')", "[ =:\"'(]{0,3}", "(SK|M|)", "[0-9a-fA-F._-]{0,40}").prop_map(|(c, s, p, v)| format!("{c}{s}{p}{v}")),
        "[A-Za-z0-9]{30,40}".prop_map(|b| format!("{{\"k\":\"\\u0067hp_{b}\"}}")),
        Just("+-----BEGIN RSA PRIVATE KEY-----".to_string()),
        "[A-Za-z0-9+/]{0,70}".prop_map(|b| format!("+{b}")),
        Just("+-----END RSA PRIVATE KEY-----".to_string()),
        Just("[REDACTED:github-pat]".to_string()),
        Just("[REDACTED:env-secret-assignment:0123abcd]".to_string()),
        Just("YOUR_API_KEY ${TOKEN} <token> sk-...xxxx".to_string()),
        "[0-9a-f]{40}",
        Just("550e8400-e29b-41d4-a716-446655440000".to_string()),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..6).prop_map(|v| v.concat())
}

fn value() -> impl Strategy<Value = Value> {
    let key = "(text|content|apiKey|password|input_tokens|thinking|type|command|x-api-key|DB_PASSWORD|a\"b|\u{e9}|Authorization|lines|ghp_[A-Za-z0-9]{36}|AKIA[A-Z0-9]{16})";
    let leaf = prop_oneof![
        4 => text().prop_map(Value::String),
        1 => any::<i32>().prop_map(Value::from),
        1 => Just(Value::Null),
        1 => Just(Value::Bool(true)),
    ];
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key, inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// Writes JSON like a mix of writers would: each character may be escaped in any legal way.
struct Writer {
    seed: u64,
    /// Out of 16: how often an optional escape is used.
    odds: u64,
}

impl Writer {
    fn roll(&mut self) -> bool {
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        self.seed % 16 < self.odds
    }

    fn string(&mut self, s: &str, out: &mut String) {
        out.push('"');
        for c in s.chars() {
            let u = |cp: u32, out: &mut String| out.push_str(&format!("\\u{cp:04x}"));
            match c {
                '"' | '\\' if self.roll() => u(c as u32, out),
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '/' if self.roll() => out.push_str("\\/"),
                '\n' if !self.roll() => out.push_str("\\n"),
                '\t' if !self.roll() => out.push_str("\\t"),
                c if (c as u32) < 0x20 => u(c as u32, out),
                c if self.roll() && self.roll() => {
                    let mut b = [0u16; 2];
                    for unit in c.encode_utf16(&mut b) {
                        u(*unit as u32, out);
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }

    fn value(&mut self, v: &Value, out: &mut String) {
        match v {
            Value::String(s) => self.string(s, out),
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.value(x, out);
                }
                out.push(']');
            }
            Value::Object(o) => {
                out.push('{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.string(k, out);
                    out.push(':');
                    self.value(x, out);
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
}

fn line() -> impl Strategy<Value = String> {
    (value(), any::<u64>(), 0u64..8).prop_map(|(v, seed, odds)| {
        let mut w = Writer {
            seed: seed | 1,
            odds,
        };
        let mut out = String::new();
        w.value(
            &serde_json::json!({ "type": "user", "message": { "content": v } }),
            &mut out,
        );
        out
    })
}

/// The strings of a JSON value, in order.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(format!("key:{k}"));
            strings(x, out)
        }),
        other => out.push(other.to_string()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn prefilter_agrees_with_the_full_scan(l in line()) {
        for r in redactors() {
            let fast = r.redact_line(l.as_bytes());
            let full = r.redact_line_unfiltered(l.as_bytes());
            if full.line.is_some() {
                prop_assert!(fast.line.is_some(), "prefilter skipped a line the full scan changes: {l}");
            }
            prop_assert_eq!(&fast.line, &full.line, "line {}", l);
            prop_assert_eq!(fast.findings.len(), full.findings.len());
        }
    }

    #[test]
    fn redaction_is_idempotent_valid_and_minimal(l in line()) {
        let before: Value = serde_json::from_str(&l).unwrap();
        for r in redactors() {
            let res = r.redact_line(l.as_bytes());
            match &res.line {
                None => prop_assert!(res.findings.is_empty()),
                Some(out) => {
                    prop_assert!(!res.findings.is_empty());
                    let after: Value = serde_json::from_slice(out).map_err(|e| TestCaseError::fail(format!("invalid JSON out: {e}: {}", String::from_utf8_lossy(out))))?;
                    let again = r.redact_line(out);
                    prop_assert!(again.line.is_none(), "not idempotent: {} -> {}", String::from_utf8_lossy(out), String::from_utf8_lossy(&again.line.unwrap()));
                    // Same shape and keys; only strings holding a finding differ.
                    let (mut a, mut b) = (Vec::new(), Vec::new());
                    strings(&before, &mut a);
                    strings(&after, &mut b);
                    prop_assert_eq!(a.len(), b.len());
                    // A key block split over patch lines is one finding for all its lines.
                    let changed = a.iter().zip(&b).filter(|(x, y)| x != y).count();
                    prop_assert!(changed >= 1);
                    prop_assert!(a.iter().zip(&b).all(|(x, y)| x == y || y.contains("[REDACTED:")));
                }
            }
        }
    }
}

#[test]
fn zz_generator_stats() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let (mut n, mut changed, mut esc) = (0, 0, 0);
    for _ in 0..300 {
        let l = line().new_tree(&mut runner).unwrap().current();
        n += 1;
        if redactors()[0].redact_line(l.as_bytes()).line.is_some() {
            changed += 1;
        }
        if l.contains("\\u") {
            esc += 1;
        }
    }
    eprintln!("{n} lines, {changed} changed, {esc} with \\u");
}
