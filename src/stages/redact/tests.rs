//! Per-rule tests (a true positive and a near miss for every rule), the not-secret classes,
//! and line-level behaviour. Fake secrets are built at run time from a seeded generator and
//! string pieces, so that no secret-looking literal sits in the repository.

use super::*;

/// Deterministic pseudo-random strings (xorshift), so tests are reproducible.
struct Gen(u64);

impl Gen {
    fn s(&mut self, n: usize, alphabet: &str) -> String {
        let a = alphabet.as_bytes();
        (0..n)
            .map(|_| {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                a[(self.0 % a.len() as u64) as usize] as char
            })
            .collect()
    }
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const LOWER_ALNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &str = "0123456789abcdef";
const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64(data: &[u8], url: bool) -> String {
    let a = if url { B64URL } else { B64 }.as_bytes();
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = c.len();
        let v = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..=n {
            out.push(a[((v >> (18 - 6 * i)) & 63) as usize] as char);
        }
        if !url {
            out.push_str(&"=".repeat(3 - n));
        }
    }
    out
}

/// A bech32 string with a valid checksum.
fn bech32(hrp: &str, data: &[u8]) -> String {
    const CHARSET: &[u8] = b"qpzry9x8gf2tvdw0s3jn54khce6mua7l";
    fn polymod(v: &[u8]) -> u32 {
        const GEN: [u32; 5] = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
        let mut chk = 1u32;
        for &x in v {
            let b = chk >> 25;
            chk = ((chk & 0x1ffffff) << 5) ^ x as u32;
            for (i, g) in GEN.iter().enumerate() {
                if (b >> i) & 1 == 1 {
                    chk ^= g;
                }
            }
        }
        chk
    }
    let h = hrp.to_ascii_lowercase();
    let mut v: Vec<u8> = h.bytes().map(|c| c >> 5).collect();
    v.push(0);
    v.extend(h.bytes().map(|c| c & 31));
    v.extend_from_slice(data);
    v.extend_from_slice(&[0; 6]);
    let m = polymod(&v) ^ 1;
    let mut out = format!("{h}1");
    for &d in data {
        out.push(CHARSET[d as usize] as char);
    }
    for i in 0..6 {
        out.push(CHARSET[((m >> (5 * (5 - i))) & 31) as usize] as char);
    }
    out
}

/// Every built-in rule, on or off by default.
fn all_rules() -> Redactor {
    let opts = RedactOptions {
        rules: RuleSelection {
            only: Some(rules::RULES.iter().map(|r| r.id.to_string()).collect()),
            ..RuleSelection::default()
        },
        ..RedactOptions::default()
    };
    Redactor::new(&opts).unwrap()
}

/// (rule, secret) of every finding in `text`.
fn found(r: &Redactor, text: &str) -> Vec<(String, String)> {
    let (_, f) = r.redact_text(text.as_bytes());
    f.iter()
        .map(|f| {
            (
                r.rule_id(f.rule).to_string(),
                text[f.offset..f.offset + f.len].to_string(),
            )
        })
        .collect()
}

struct Case {
    rule: &'static str,
    /// Text holding the secret, and the secret (the replaced part).
    hit: (String, String),
    /// Text the rule must not flag.
    miss: String,
}

fn cases() -> Vec<Case> {
    let mut g = Gen(0x9e3779b97f4a7c15);
    let mut v = Vec::new();
    let mut add = |rule: &'static str, text: String, secret: String, miss: String| {
        v.push(Case {
            rule,
            hit: (text, secret),
            miss,
        })
    };
    let k = |parts: &[&str]| parts.concat();

    let akid = k(&["AKIA", &g.s(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")]);
    add(
        "aws-access-key-id",
        format!("aws_access_key_id = {akid}"),
        akid.clone(),
        format!("id {}", &akid[..19]),
    );
    add(
        "aws-access-key-id",
        format!("url?id%3D{akid}&x=1"),
        akid.clone(),
        format!("id {}EXAMPLE", &akid[..13]),
    );
    let sk = g.s(20, ALNUM) + "/" + &g.s(19, ALNUM);
    add(
        "aws-secret-near-key-id",
        format!("creds: {akid} {sk}"),
        sk.clone(),
        format!("sha {akid} {}", g.s(40, HEX)),
    );
    add(
        "aws-secret-access-key",
        format!("AWS_SECRET_ACCESS_KEY={sk}\n"),
        sk.clone(),
        format!("AWS_REGION_NAME={}\n", &sk[..39]),
    );
    let st = g.s(180, B64);
    add(
        "aws-session-token",
        format!("aws_session_token = {st}"),
        st.clone(),
        format!("aws_session_token = {}", &st[..60]),
    );
    let t = k(&["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"]);
    add(
        "github-pat",
        format!("token {t} end"),
        t.clone(),
        format!("token {} end", &t[..39]),
    );
    let t = k(&[
        "github_pat_",
        &g.s(
            82,
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz0123456789",
        ),
    ]);
    add(
        "github-fine-grained-pat",
        format!("{t}\n"),
        t.clone(),
        format!("{} x", &t[..80]),
    );
    let t = k(&["ghs_", &g.s(36, ALNUM)]);
    add(
        "github-app-token",
        format!("x={t}"),
        t.clone(),
        format!("x={}", &t[..30]),
    );
    let t = k(&["gho_", &g.s(36, ALNUM)]);
    add(
        "github-oauth-token",
        format!("x={t}"),
        t.clone(),
        format!("x={}", &t[..24]),
    );
    let t = k(&["ghr_", &g.s(76, ALNUM)]);
    add(
        "github-refresh-token",
        format!("x={t}"),
        t.clone(),
        format!("x={}", &t[..24]),
    );
    let t = k(&["glpat-", &g.s(20, ALNUM)]);
    add(
        "gitlab-pat",
        format!("x={t}"),
        t.clone(),
        "x=glpat-xxxxxxxxxxxxxxxxxxxx".into(),
    );
    let t = k(&["glptt-", &g.s(40, HEX)]);
    add(
        "gitlab-token",
        format!("x={t}"),
        t.clone(),
        format!("x={}", &t[..45]),
    );
    let t = k(&["sk-ant-", "api03-", &g.s(93, ALNUM), "AA"]);
    add(
        "anthropic-api-key",
        format!("ANTHROPIC={t}"),
        t.clone(),
        "key sk-ant-api03-short".into(),
    );
    let t = k(&["sk-ant-", "admin01-", &g.s(93, ALNUM), "AA"]);
    add(
        "anthropic-admin-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..30]),
    );
    let t = k(&["sk-ant-", "oat01-", &g.s(95, ALNUM)]);
    add(
        "anthropic-oauth-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..30]),
    );
    let t = k(&["sk-", &g.s(20, ALNUM), "T3Blbk", "FJ", &g.s(20, ALNUM)]);
    add(
        "openai-api-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", t.replace("T3BlbkFJ", "T3BlbkFX")),
    );
    let t = k(&["sk-", "proj-", &g.s(156, ALNUM)]);
    add(
        "openai-project-key",
        format!("k {t}"),
        t.clone(),
        "k sk-proj-...xxxx".into(),
    );
    let t = k(&["sk-", "svcacct-", &g.s(60, ALNUM)]);
    add(
        "openai-service-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..30]),
    );
    let t = k(&["sk-", "admin-", &g.s(60, ALNUM)]);
    add(
        "openai-admin-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..30]),
    );
    let t = k(&["sk-or-", "v1-", &g.s(64, HEX)]);
    add(
        "openrouter-api-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..60]),
    );
    let t = k(&["gsk_", &g.s(52, ALNUM)]);
    add(
        "groq-api-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..50]),
    );
    let t = k(&["xai-", &g.s(80, ALNUM)]);
    add(
        "xai-api-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..70]),
    );
    let t = k(&["pplx-", &g.s(48, ALNUM)]);
    add(
        "perplexity-api-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..40]),
    );
    let t = k(&["hf_", &g.s(34, LETTERS)]);
    add(
        "huggingface-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}9", &t[..35]),
    );
    let t = k(&["r8_", &g.s(37, ALNUM)]);
    add(
        "replicate-api-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..30]),
    );
    let t = k(&["xoxb-", "1234567890-", "1234567890123-", &g.s(24, ALNUM)]);
    add(
        "slack-bot-token",
        format!("k {t}"),
        t.clone(),
        "k xoxb-123-abc".into(),
    );
    let t = k(&["xoxp-", "1234567890-1234567890-1234567890-", &g.s(32, HEX)]);
    add(
        "slack-user-token",
        format!("k {t}"),
        t.clone(),
        "k xoxp-1234-5678".into(),
    );
    let t = k(&["xapp-", "1-A0123456789-1234567890123-", &g.s(64, HEX)]);
    add(
        "slack-app-token",
        format!("k {t}"),
        t.clone(),
        "k xapp-x-y".into(),
    );
    let t = k(&["xoxs-", &g.s(40, ALNUM)]);
    add(
        "slack-legacy-token",
        format!("k {t}"),
        t.clone(),
        "k xoxs-abc".into(),
    );
    let t = k(&["xoxe.", "xoxp-1-", &g.s(150, ALNUM)]);
    add(
        "slack-config-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..40]),
    );
    let p = k(&["services/", "T00000000/B00000000/", &g.s(24, ALNUM)]);
    add(
        "slack-webhook-url",
        format!("url https://hooks.slack.com/{p} end"),
        p,
        "url https://hooks.slack.com/services/T000/B000".into(),
    );
    let t = k(&["sk_", "live_", &g.s(24, ALNUM)]);
    add(
        "stripe-secret-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", t.replacen("sk_", "pk_", 1)),
    );
    let t = k(&["whsec_", &g.s(32, ALNUM)]);
    add(
        "stripe-webhook-secret",
        format!("k {t}"),
        t.clone(),
        "k whsec_short".into(),
    );
    let t = k(&["AIza", &g.s(35, ALNUM)]);
    add(
        "google-api-key",
        format!("k {t}\""),
        t.clone(),
        format!("k {}\"", &t[..38]),
    );
    let t = k(&["GOCSPX-", &g.s(28, ALNUM)]);
    add(
        "google-oauth-client-secret",
        format!("k {t} "),
        t.clone(),
        format!("k {} ", &t[..30]),
    );
    let t = k(&["ya29.", &g.s(60, ALNUM)]);
    add(
        "google-oauth-access-token",
        format!("k {t}"),
        t.clone(),
        "k ya29.short".into(),
    );
    let body: Vec<String> = (0..6).map(|_| g.s(64, B64)).collect();
    let pem = k(&[
        "-----BEGIN PRIVATE KEY-----\\n",
        &body.join("\\n"),
        "\\n-----END PRIVATE KEY-----\\n",
    ]);
    add(
        "gcp-service-account-key",
        format!("{{\n  \"type\": \"service_account\",\n  \"private_key\": \"{pem}\",\n}}"),
        pem,
        format!("\"private_key_id\": \"{}\"", g.s(40, HEX)),
    );
    let body = (0..8).map(|_| g.s(70, B64)).collect::<Vec<_>>().join("\n");
    add(
        "openssh-private-key",
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"),
        body,
        format!(
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} user@host",
            g.s(43, B64)
        ),
    );
    let body = (0..8).map(|_| g.s(64, B64)).collect::<Vec<_>>().join("\n");
    add(
        "pgp-private-key",
        format!("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{body}\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"),
        format!("{body}\n=AbCd"),
        format!("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n{body}\n-----END PGP PUBLIC KEY BLOCK-----"),
    );
    let body = (0..8).map(|_| g.s(64, B64)).collect::<Vec<_>>().join("\\n");
    add(
        "private-key",
        format!("cat key.pem\\n-----BEGIN RSA PRIVATE KEY-----\\n{body}\\n-----END RSA PRIVATE KEY-----\\n"),
        body.clone(),
        format!("-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----"),
    );
    let t = k(&[&g.s(86, B64), "=="]);
    add(
        "azure-storage-account-key",
        format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={t};EndpointSuffix=core.windows.net"),
        t.clone(),
        format!("AccountKey={}==", &t[..40]),
    );
    let t = k(&[&g.s(43, ALNUM), "%3D"]);
    add(
        "azure-sas-token",
        format!("https://a.blob.core.windows.net/c/b?sv=2021-06-08&sp=r&se=2030-01-01&sig={t}"),
        t.clone(),
        "https://a.blob.core.windows.net/c/b?sv=2021-06-08&sig=short".into(),
    );
    let t = k(&[&g.s(43, ALNUM), "="]);
    add(
        "azure-shared-access-key",
        format!(
            "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={t}"
        ),
        t.clone(),
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey"
            .into(),
    );
    let t = k(&["abc", "8Q~", &g.s(34, ALNUM)]);
    add(
        "azure-ad-client-secret",
        format!("secret: {t} "),
        t.clone(),
        "x 8Q~abc ".into(),
    );
    let t = g.s(32, HEX);
    add(
        "twilio-credentials",
        format!("TWILIO_AUTH_TOKEN={t}"),
        t.clone(),
        format!("TWILIO_ACCOUNT_SID=AC{t}"),
    );
    let t = k(&["SG.", &g.s(22, ALNUM), ".", &g.s(43, ALNUM)]);
    add(
        "sendgrid-api-key",
        format!("k {t}"),
        t.clone(),
        format!("msg.{}", &g.s(22, LOWER_ALNUM)),
    );
    let t = k(&["key-", &g.s(32, HEX)]);
    add(
        "mailgun-api-key",
        format!("MAILGUN_API_KEY={t}"),
        t.clone(),
        "MAILGUN_DOMAIN=mg.example.com".into(),
    );
    // The first part of a Discord bot token is the base64 of the bot's numeric id.
    let id = k(&["1", &g.s(17, "0123456789")]);
    let t = k(&[
        b64(id.as_bytes(), true).trim_end_matches('='),
        ".",
        &g.s(6, ALNUM),
        ".",
        &g.s(27, ALNUM),
    ]);
    add(
        "discord-bot-token",
        format!("the discord bot: client.run('{t}')"),
        t.clone(),
        format!(
            "discord cache key {}.{}.{}",
            &g.s(24, ALNUM),
            &g.s(6, ALNUM),
            &g.s(27, ALNUM)
        ),
    );
    let t = k(&["123456789012345678/", &g.s(68, ALNUM)]);
    add(
        "discord-webhook-url",
        format!("https://discord.com/api/webhooks/{t}"),
        t.clone(),
        "https://discord.com/api/webhooks".into(),
    );
    let t = k(&["123456789", ":AA", &g.s(33, ALNUM)]);
    add(
        "telegram-bot-token",
        format!("bot{t} x", t = &t),
        t.clone(),
        format!("bot 123456789:AB{} x", g.s(33, ALNUM)),
    );
    let t = k(&["npm_", &g.s(36, ALNUM)]);
    add(
        "npm-access-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..38]),
    );
    let t = g.s(36, HEX);
    add(
        "npmrc-auth-token",
        format!("//registry.npmjs.org/:_authToken={t}\n"),
        t,
        "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n".into(),
    );
    let t = k(&["pypi-", "AgEIcHlwaS5vcmc", &g.s(70, ALNUM)]);
    add(
        "pypi-upload-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..30]),
    );
    let t = "5d9e2f8a-1b3c-4d5e-8f9a-0b1c2d3e4f5a".to_string();
    add(
        "heroku-api-key",
        format!("HEROKU_API_KEY={t}"),
        t.clone(),
        format!("sessionId={t}"),
    );
    let t = k(&["dop_", "v1_", &g.s(64, HEX)]);
    add(
        "digitalocean-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..60]),
    );
    let t = k(&["hvs.", &g.s(95, ALNUM)]);
    add(
        "vault-token",
        format!("k {t}"),
        t.clone(),
        "k hvs.short".into(),
    );
    let t = k(&["dapi", &g.s(32, HEX)]);
    add(
        "databricks-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..34]),
    );
    let h = b64(br#"{"alg":"HS256","typ":"JWT"}"#, true);
    let sig = g.s(43, B64URL);
    let t = format!(
        "{h}.{}.{sig}",
        b64(br#"{"sub":"1234567890","name":"x"}"#, true)
    );
    add(
        "jwt",
        format!("token={t}"),
        t,
        format!(
            "token={h}.{}.{sig}",
            b64(br#"{"role":"anon","iss":"s"}"#, true)
        ),
    );
    let data: Vec<u8> = g
        .s(52, "abcdefghijklmnopqrstuvwxyzabcdef")
        .bytes()
        .map(|b| b % 32)
        .collect();
    let t = bech32("AGE-SECRET-KEY-", &data).to_ascii_uppercase();
    let bad = format!(
        "{}{}",
        &t[..t.len() - 1],
        if t.ends_with('Q') { 'P' } else { 'Q' }
    );
    add(
        "age-secret-key",
        format!("# key\n{t}\n"),
        t.clone(),
        format!("# key\n{bad}\n"),
    );
    let t = k(&["shpat_", &g.s(32, HEX)]);
    add(
        "shopify-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..36]),
    );
    let t = k(&["lin_", "api_", &g.s(40, ALNUM)]);
    add(
        "linear-api-key",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..40]),
    );
    let t = k(&["ntn_", "12345678901", &g.s(35, ALNUM)]);
    add(
        "notion-token",
        format!("k {t}"),
        t.clone(),
        "k ntn_abc".into(),
    );
    let t = k(&["sbp_", &g.s(40, HEX)]);
    add(
        "supabase-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..43]),
    );
    let t = k(&["ATATT3", &g.s(186, ALNUM)]);
    add(
        "atlassian-api-token",
        format!("k {t}"),
        t.clone(),
        format!("k {}", &t[..60]),
    );
    let t = k(&["dckr_", "pat_", &g.s(27, ALNUM)]);
    add(
        "dockerhub-pat",
        format!("k {t} "),
        t.clone(),
        format!("k {} ", &t[..30]),
    );
    let t = k(&["sntryu_", &g.s(64, HEX)]);
    add(
        "sentry-token",
        format!("k {t}"),
        t.clone(),
        "k sntryu_short".into(),
    );
    let t = k(&["glsa_", &g.s(32, ALNUM), "_", &g.s(8, HEX)]);
    add(
        "grafana-token",
        format!("k {t}"),
        t.clone(),
        "k glsa_short".into(),
    );
    let t = k(&["pscale_", "tkn_", &g.s(43, ALNUM)]);
    add(
        "planetscale-token",
        format!("k {t}"),
        t.clone(),
        "k pscale_tkn_short".into(),
    );
    let t = k(&["sq0", "atp-", &g.s(22, ALNUM)]);
    add(
        "square-token",
        format!("k {t}"),
        t.clone(),
        "k sq0atp-short".into(),
    );
    let t = g.s(40, ALNUM);
    add(
        "cloudflare-api-token",
        format!("CLOUDFLARE_API_TOKEN={t}"),
        t.clone(),
        format!("CLOUDFLARE_ACCOUNT_ID={}", g.s(32, HEX)),
    );
    add(
        "db-connection-string",
        "DATABASE_URL=postgres://admin:S3cr3tP4ss@db.internal:5432/app".into(),
        "S3cr3tP4ss".into(),
        "postgres://admin:${PGPASSWORD}@db.internal:5432/app".into(),
    );
    add(
        "url-credentials",
        "git remote add o https://deploy:t0k3nV4lu3x@git.example.com/repo.git".into(),
        "t0k3nV4lu3x".into(),
        "see https://git.example.com:8443/repo and a@b.c".into(),
    );
    add(
        "connection-string-password",
        "Server=db;Database=app;User Id=sa;Password=Pa55w0rd!;".into(),
        "Pa55w0rd!".into(),
        "Server=db;Database=app;User Id=sa;Password=${DB_PASS};".into(),
    );
    let t = g.s(40, ALNUM);
    add(
        "authorization-bearer",
        format!("curl -H 'Authorization: Bearer {t}' x"),
        t.clone(),
        "uses Bearer token authentication".into(),
    );
    let t = b64(b"admin:hunter22", false);
    add(
        "authorization-basic",
        format!("Authorization: Basic {t}"),
        t.clone(),
        format!("Authorization: Basic {}", b64(b"nocolonhere", false)),
    );
    add(
        "curl-user-password",
        "curl -s -u admin:hunter2pw https://x".into(),
        "hunter2pw".into(),
        "curl -u admin https://x".into(),
    );
    let words =
        "abandon ability able about above absent absorb abstract absurd abuse access accident";
    add(
        "crypto-mnemonic",
        format!("MNEMONIC=\"{words}\""),
        words.into(),
        "MNEMONIC=\"abandon ability able about above\"".into(),
    );
    add(
        "env-secret-assignment",
        "export DB_PASSWORD=hunter22\n".into(),
        "hunter22".into(),
        "DB_PASSWORD_FILE=/run/secrets/db\n".into(),
    );
    let t = k(&[&g.s(16, ALNUM), "9Z", &g.s(14, ALNUM)]);
    add(
        "generic-high-entropy",
        format!("const config = {{ apiKey: \"{t}\" }};"),
        t.clone(),
        "const config = { apiKey: process.env.API_KEY };".into(),
    );

    let pw = g.s(10, ALNUM) + "!";
    add(
        "cli-password-flag",
        format!("mongosh --host db --password '{pw}' --quiet"),
        pw.clone(),
        "mysqldump --password PASSWORD --password-stdin".into(),
    );
    add(
        "cli-password-arg",
        format!("mysql -u root -p{pw} app"),
        pw.clone(),
        "mysql -u root -p app".into(),
    );
    add(
        "cli-password-arg",
        format!("htpasswd -bc /etc/nginx/.htpasswd admin {pw}"),
        pw.clone(),
        "htpasswd -c /etc/nginx/.htpasswd admin".into(),
    );
    let tok = g.s(40, HEX);
    add(
        "http-auth-header",
        format!("curl -H 'Authorization: token {tok}' https://api.example.com"),
        tok.clone(),
        "curl -H 'Authorization: Bearer $TOKEN' https://api.example.com".into(),
    );
    let pt = g.s(20, ALNUM) + "9";
    add(
        "http-auth-header",
        format!("PRIVATE-TOKEN: {pt}"),
        pt.clone(),
        "PRIVATE-TOKEN: <your_access_token>".into(),
    );
    let np = g.s(12, ALNUM) + "4";
    add(
        "netrc-password",
        format!("machine api.heroku.com\n  login me@example.com\n  password {np}"),
        np.clone(),
        "machine learning is hard".into(),
    );
    add(
        "prose-secret",
        "the password is Tulip4471!harbor.".into(),
        "Tulip4471!harbor".into(),
        "the password is stored in config.yaml".into(),
    );

    // Widened forms (issue #14, breadth): legacy Slack bot tokens, whole long tokens, curl
    // across line continuations, header maps after -H, Makefile/PHP/typed assignments.
    let t = format!("xoxb-{}-{}", g.s(12, "0123456789"), g.s(24, ALNUM));
    add(
        "slack-bot-token",
        format!("\"bot_token\": \"{t}\""),
        t.clone(),
        format!("xoxb-{}", g.s(12, "0123456789")),
    );
    let t = format!(
        "xoxs-{}-{}-{}-{}",
        g.s(10, "0123456789"),
        g.s(11, "0123456789"),
        g.s(12, "0123456789"),
        g.s(64, HEX)
    );
    add(
        "slack-legacy-token",
        format!("\"access_token\": \"{t}\""),
        t.clone(),
        "2018-250-xoxo-indieweb-1.jpg".into(),
    );
    let pw = g.s(16, ALNUM);
    add(
        "curl-user-password",
        format!("curl -k -X POST https://h/x \\\n  -d 'world' \\\n  -u developer:{pw}"),
        pw.clone(),
        format!("curl -k https://h/x\necho -u developer:{pw}"),
    );
    let t = g.s(24, ALNUM) + "7";
    add(
        "curl-user-password",
        format!("curl --user 'api:{t}' https://api.example.net/v2"),
        t.clone(),
        "curl --user api:api https://api.example.net/v2".into(),
    );
    let t = format!(
        "{}-{}-4{}-a{}-{}",
        g.s(8, HEX),
        g.s(4, HEX),
        g.s(3, HEX),
        g.s(3, HEX),
        g.s(12, HEX)
    );
    add(
        "http-auth-header",
        format!("curl -X GET \\\n  -H \"apikey: {t}\" \\\n  -H \"Accept: application/json\""),
        t.clone(),
        "curl -X GET -H \"apikey: $API_KEY\" -H \"Accept: $FORMAT\"".into(),
    );
    let t = g.s(30, ALNUM) + "9";
    add(
        "generic-high-entropy",
        format!("var genericToken string = \"{t}\""),
        t.clone(),
        "var genericToken string = os.Getenv(\"TOKEN\")".into(),
    );
    add(
        "generic-high-entropy",
        format!("$genericToken .= \"{t}\""),
        t.clone(),
        "$genericToken .= $suffix;".into(),
    );
    add(
        "generic-high-entropy",
        format!("generic_TOKEN :::= \"{t}\""),
        t.clone(),
        "generic_TOKEN :::= $(shell cat token.txt)".into(),
    );

    // Vendor formats (issue #14, breadth).
    let t = k(&["ops_", "eyJ", &g.s(300, B64)]);
    add(
        "1password-service-account-token",
        format!("export OP_SERVICE_ACCOUNT_TOKEN={t}"),
        t.clone(),
        format!("export OP_SERVICE_ACCOUNT_TOKEN={}...", &t[..40]),
    );
    let up = "ABCDEFGHJKLMNPQRSTVWXYZ23456789";
    let t = format!(
        "A3-{}-{}-{}-{}-{}-{}",
        g.s(6, up),
        g.s(6, up),
        g.s(5, up),
        g.s(5, up),
        g.s(5, up),
        g.s(5, up)
    );
    add(
        "1password-secret-key",
        format!("secret key: {t}"),
        t.clone(),
        "A3-XXXXXX-XXXXXX-XXXXX-XXXXX-XXXXX-XXXXX".into(),
    );
    let t = k(&["ABSK", &g.s(130, B64)]);
    add(
        "aws-bedrock-api-key",
        format!("AWS_BEARER_TOKEN_BEDROCK={t}"),
        t.clone(),
        format!("k {}", &t[..60]),
    );
    let t = k(&["EAAM", &g.s(150, ALNUM)]);
    add(
        "facebook-access-token",
        format!("page token {t}"),
        t.clone(),
        format!("checksum: eaac{}", g.s(120, HEX)),
    );
    let t = format!("{}|{}", g.s(16, "0123456789"), g.s(27, B64URL));
    add(
        "facebook-access-token",
        format!("facebook app token {t}"),
        t.clone(),
        format!("graph token {t}"),
    );
    let t = k(&["FlyV1 ", "fm2_", &g.s(160, B64), ",fm2_", &g.s(60, B64)]);
    add(
        "flyio-access-token",
        format!("FLY_API_TOKEN: {t}"),
        t.clone(),
        format!("fm2_{}", "x".repeat(120)),
    );
    let t = k(&["sgp_", "local_", &g.s(40, HEX)]);
    add(
        "sourcegraph-access-token",
        format!("SRC_ACCESS_TOKEN={t}"),
        t.clone(),
        format!("sgp_local_{}", &t[10..30]),
    );
    let t = format!("{}:{}", g.s(8, HEX), g.s(8, HEX));
    add(
        "sidekiq-secret",
        format!("export BUNDLE_GEMS__CONTRIBSYS__COM={t}"),
        t.clone(),
        "export BUNDLE_GEMS__CONTRIBSYS__COM=$SIDEKIQ_CREDS".into(),
    );
    let t = k(&["su", &g.s(12, ALNUM)]);
    add(
        "sumologic-credentials",
        format!("SUMO_ACCESS_ID = \"{t}\""),
        t.clone(),
        format!("sumOfExposures = {};", g.s(64, ALNUM)),
    );
    let t = k(&["s-s4t2", "ud-", &g.s(64, HEX)]);
    add(
        "intra42-client-secret",
        format!("secret {t}"),
        t.clone(),
        format!("secret {}", &t[..40]),
    );
    let t = k(&["sqp_", &g.s(40, HEX)]);
    add(
        "sonarqube-token",
        format!("SONAR_TOKEN ?= \"{t}\""),
        t.clone(),
        "sonar.login=${env.SONAR_TOKEN}".into(),
    );
    let t = format!(
        "{}-{}-{}-{}-{}",
        g.s(8, HEX),
        g.s(4, HEX),
        g.s(4, HEX),
        g.s(4, HEX),
        g.s(12, HEX)
    );
    add(
        "saas-api-key-uuid",
        format!("SNYK_TOKEN ::= \"{t}\""),
        t.clone(),
        format!("snyk_org_id: {t} is an org id, see request_id = {t}"),
    );

    let t = g.s(32, "0123456789abcdef") + "-us18";
    add(
        "mailchimp-api-key",
        format!("MAILCHIMP_KEY = \"{t}\""),
        t.clone(),
        format!("{}-usage", g.s(32, "0123456789abcdef")),
    );
    let t = g.s(16, "0123456789abcdef");
    add(
        "http-auth-header",
        format!("curl -XPOST http://h/api -H \"Token: {t}\" -d x=1"),
        t.clone(),
        "curl -XPOST http://h/api -H \"Token-Type: bearer\"".into(),
    );

    // Encoded forms (issue #25, item 12).
    let cred = b64(format!("deploy:{}", g.s(24, ALNUM)).as_bytes(), false);
    add(
        "docker-config-auth",
        format!("{{\"auths\": {{\"ghcr.io\": {{\"auth\": \"{cred}\"}}}}}}"),
        cred.clone(),
        format!("{{\"auth\": \"{}\"}}", b64(b"no colon in this one", false)),
    );
    let pw = g.s(14, ALNUM) + "5";
    add(
        "pgpass-password",
        format!("db.internal:5432:app:appuser:{pw}\n*:*:*:postgres:{pw}x"),
        pw.clone(),
        "root:x:0:0:root:/root:/bin/bash\nlocalhost:5432:app:user".into(),
    );
    let body = format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{}", g.s(200, B64));
    add(
        "private-key-body",
        format!("$ sed 1d key.pem | head -3\n{body}"),
        body.clone(),
        format!(
            "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{}",
            g.s(200, B64)
        ),
    );

    // Contexts missed at the first occurrence (issue #24, item 4): `*_pass` keys in YAML and
    // TOML, token flags with a space, a UUID-format key handed to `gh secret set`, a bearer
    // named in prose.
    let pw = g.s(12, ALNUM) + "7";
    add(
        "generic-high-entropy",
        format!("smtp:\n  smtp_pass: '{pw}'\n"),
        pw.clone(),
        "first_pass: done\nbypass: enabled\ncompass = \"north\"\n".into(),
    );
    add(
        "generic-high-entropy",
        format!("admin_pass = \"{pw}\""),
        pw.clone(),
        "pass_count = 3".into(),
    );
    let tok = g.s(20, ALNUM) + "3";
    add(
        "cli-secret-flag",
        format!("deployctl --token {tok} --prod"),
        tok.clone(),
        "llm --max-tokens 4096 --token-file ~/.config/tok --api-key $API_KEY".into(),
    );
    add(
        "cli-secret-flag",
        format!("tool --api-key '{t}'"),
        t.clone(),
        "tool --api-key API_KEY".into(),
    );
    add(
        "cli-password-arg",
        format!("gh secret set SENTRY_DSN_KEY --body '{t}'"),
        t.clone(),
        "gh secret set SENTRY_DSN_KEY --body \"$SENTRY_DSN_KEY\"".into(),
    );
    add(
        "prose-secret",
        format!("the bearer is set to {tok} now"),
        tok.clone(),
        "the bearer is set to expire at 10:00".into(),
    );
    v
}

#[test]
fn every_rule_has_a_true_positive_and_a_near_miss() {
    let r = all_rules();
    let cases = cases();
    for rule in rules::RULES {
        assert!(
            cases.iter().any(|c| c.rule == rule.id),
            "no test case for rule `{}`",
            rule.id
        );
    }
    for c in &cases {
        let (text, secret) = &c.hit;
        let f = found(&r, text);
        assert!(
            f.iter().any(|(id, s)| id == c.rule && s == secret),
            "rule `{}` missed its true positive; found {f:?}",
            c.rule
        );
        let (new, _) = r.redact_text(text.as_bytes());
        let new = String::from_utf8(new.unwrap()).unwrap();
        assert!(
            !new.contains(secret.as_str()),
            "rule `{}`: secret survives: {new}",
            c.rule
        );
        let m = found(&r, &c.miss);
        assert!(
            !m.iter().any(|(id, _)| id == c.rule),
            "rule `{}` flagged its near miss: {m:?}",
            c.rule
        );
    }
}

#[test]
fn every_built_in_regex_compiles() {
    // Built-in regexes compile on first use; this is where a bad one would fail.
    for rule in &all_rules().engine.rules {
        rule.compile_now().unwrap();
    }
}

#[test]
fn at_least_forty_rules_with_docs_and_valid_keywords() {
    assert!(rules::RULES.len() >= 40);
    let mut ids = std::collections::HashSet::new();
    for r in rules::RULES {
        assert!(ids.insert(r.id), "duplicate id {}", r.id);
        assert!(r.description.len() > 20 && !r.title.is_empty(), "{}", r.id);
        assert!(!r.keywords.is_empty(), "{}", r.id);
        for k in r.keywords {
            assert!(
                k.text.len() >= 2 && k.text.is_ascii(),
                "{}: {:?}",
                r.id,
                k.text
            );
            assert!(
                !k.text.contains(['"', '\\']) && !k.text.chars().any(|c| c.is_control()),
                "{}",
                r.id
            );
        }
    }
}

/// Every true positive's match holds a keyword at most `before` bytes after its start.
#[test]
fn keywords_sit_within_before_of_the_match_start() {
    let r = all_rules();
    for c in cases() {
        let rule = rules::find(c.rule).unwrap();
        let text = &c.hit.0;
        let mut all = Vec::new();
        r.engine.find_all(text.as_bytes(), false, &mut all);
        for f in all.iter().filter(|f| r.rule_id(f.rule as usize) == c.rule) {
            let m = &text.as_bytes()[f.mstart..f.mend];
            let ok = rule.keywords.iter().any(|k| {
                let (hay, needle) = if k.ci {
                    (
                        m.to_ascii_lowercase(),
                        k.text.to_ascii_lowercase().into_bytes(),
                    )
                } else {
                    (m.to_vec(), k.text.as_bytes().to_vec())
                };
                memchr::memmem::find(&hay, &needle).is_some_and(|p| p <= rule.before)
            });
            assert!(
                ok,
                "rule `{}`: no keyword within {} bytes of the match start",
                c.rule, rule.before
            );
        }
    }
}

#[test]
fn not_secrets_are_left_alone() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(7);
    let image = b64(g.s(120_000, ALNUM).as_bytes(), false);
    let integrity = b64(g.s(64, ALNUM).as_bytes(), false);
    let texts = [
        "export OPENAI_API_KEY=YOUR_API_KEY".to_string(),
        "OPENAI_API_KEY=sk-...xxxx".into(),
        "API_KEY=<token>".into(),
        "GITHUB_TOKEN=${GITHUB_TOKEN}".into(),
        "GITHUB_TOKEN=$GITHUB_TOKEN".into(),
        "password: \"********\"".into(),
        "token = \"{{ secrets.NPM_TOKEN }}\"".into(),
        format!("\"sessionId\": \"{}\", \"uuid\": \"550e8400-e29b-41d4-a716-446655440000\"", "8c1f9a1e-2b3c-4d5e-9f00-112233445566"),
        format!("commit {} Merge branch", g.s(40, HEX)),
        format!("sha256:{} and md5 {}", g.s(64, HEX), g.s(32, HEX)),
        format!("{{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"{image}\"}}"),
        format!("\"integrity\": \"sha512-{integrity}\""),
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----".into(),
        "\"input_tokens\": 12345, \"cache_read_input_tokens\": 67890, \"max_tokens\": 4096".into(),
        "const token = await getToken(); const secret = config.secret;".into(),
        "Use the tokenizer: tokens = tokenizer.encode(text)".into(),
        "TOKENIZERS_PARALLELISM=false MAX_TOKENS=4096 SECRET_NAME=prod-db".into(),
        "NEXT_PUBLIC_SUPABASE_ANON_KEY=eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoiYW5vbiJ9.abcdefghijklmnop".into(),
        "password = hashed_password".into(),
        "[REDACTED:github-pat] and API_KEY=[REDACTED:env-secret-assignment]".into(),
        // Traps of the breadth work: a Google-key look-alike inside a longer base64 run, a
        // Firebase SDK example key, keyboard-order and filler values, empty values followed
        // by another line, a Slack-like word in a file name, a user's default password.
        format!("{}AIza{}", g.s(40, ALNUM), g.s(40, ALNUM)),
        "Firebase SDK example key AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY".into(),
        "SUMO_ACCESS_KEY: AbCeFG123".into(),
        "   API_KEY=\"glc_111111111111111111111111111111111111111111=\"".into(),
        "GITHUB_API_KEY=\nDYNATRACE_API_KEY=".into(),
        "snowflake.password=\njdbc.snowflake.url=".into(),
        "https://indieweb.org/images/3/35/2018-250-xoxo-indieweb-1.jpg".into(),
        "curl --user neo4j:neo4j http://localhost:7474/db/data/".into(),
        "curl http://127.0.0.1:5000/file --user user:pass --digest".into(),
        "gh pr create --title 'Token refresh' --body 'Fixes the token refresh of 3 clients'".into(),
        "cargo run -- --token-limit 4000 --secret-name prod-db".into(),
        "pass: true\nsurpass: 12\nbypass_cache = yes".into(),
        "curl --user neo4j:[PASSWORD] http://[IP]:7474/db/data/".into(),
        "csrf-token=Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7+V4eUrLfpuyOuxmiW9rhROG/Whikle15syazJOkrjJa3U2AbhIvUw==".into(),
    ];
    for t in &texts {
        let f = found(&r, t);
        assert!(
            f.is_empty(),
            "flagged {:?} in {}",
            f,
            &t[..t.len().min(120)]
        );
    }
}

#[test]
fn example_keys_from_docs_are_kept() {
    // AWS documents AKIAIOSFODNN7EXAMPLE and its secret: look-alikes, kept as they are.
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let id = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
    let sk = ["wJalrXUtnFEMI/K7MDENG/", "bPxRfiCYEXAMPLEKEY"].concat();
    let f = found(
        &r,
        &format!("aws_access_key_id = {id}\naws_secret_access_key = {sk}\n{id} {sk}"),
    );
    assert_eq!(f, vec![]);
}

fn line_of(v: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap()
}

/// A match a later round finds (the first match took the newline that starts the next
/// `.pgpass` line) is reported at its offset in the original text.
#[test]
fn findings_of_later_rounds_are_at_their_original_offsets() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let (a, b) = (
        ["Qx7", "Lm2Rt9Vw4Kp"].concat(),
        ["Zt8", "Hn3Jq6Bw1Ys"].concat(),
    );
    let text = format!("db.internal:5432:app:appuser:{a}\n*:*:*:postgres:{b}\n");
    let f = found(&r, &text);
    let secrets: Vec<&str> = f.iter().map(|(_, s)| s.as_str()).collect();
    assert!(
        secrets.contains(&a.as_str()) && secrets.contains(&b.as_str()),
        "{f:?}"
    );
}

#[test]
fn only_changed_strings_are_spliced() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let line = format!(r#"{{"n":1.50,"a":"caf\u00e9","b":"x {t} y","c":"k\/v"}}"#);
    let res = r.redact_line(line.as_bytes());
    let out = String::from_utf8(res.line.unwrap()).unwrap();
    assert_eq!(
        out,
        r#"{"n":1.50,"a":"caf\u00e9","b":"x [REDACTED:github-pat] y","c":"k\/v"}"#
    );
    assert_eq!(res.findings.len(), 1);
    assert_eq!(json::render(res.findings[0].path.as_ref().unwrap()), "$.b");
}

#[test]
fn a_string_repeated_in_a_line_is_redacted_at_every_place() {
    // Tool output is kept twice (message content and `toolUseResult`): the second copy takes
    // the first one's result. Each copy is reported at its own path, redacted alike, and the
    // result is what the full scan gives; a copy under a secret-named key (where a member rule
    // may see more) and one inside thinking are searched on their own.
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(11);
    let t = ["ghp_", &g.s(36, ALNUM)].concat();
    let body = format!("build ok\\nGITHUB_TOKEN={t}\\nDEBUG=1\\nmore output that is long enough");
    let line = format!(
        r#"{{"message":{{"content":[{{"type":"tool_result","content":"{body}"}},{{"type":"thinking","thinking":"{body}"}}]}},"toolUseResult":{{"stdout":"{body}","password":"{body}"}},"x":"{body}"}}"#
    );
    let res = r.redact_line(line.as_bytes());
    assert_eq!(res, r.redact_line_unfiltered(line.as_bytes()));
    let out = String::from_utf8(res.line.clone().unwrap()).unwrap();
    assert!(!out.contains(&t), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first = v["message"]["content"][0]["content"].as_str().unwrap();
    for p in ["/message/content/1/thinking", "/toolUseResult/stdout", "/x"] {
        assert_eq!(v.pointer(p).unwrap().as_str().unwrap(), first, "{p}");
    }
    let paths: Vec<String> = res
        .findings
        .iter()
        .map(|f| json::render(f.path.as_ref().unwrap()))
        .collect();
    for p in [
        "$.message.content[0].content",
        "$.message.content[1].thinking",
        "$.toolUseResult.stdout",
        "$.toolUseResult.password",
        "$.x",
    ] {
        assert!(paths.iter().any(|x| x == p), "{p} not in {paths:?}");
    }
    assert_eq!(res.blocks.len(), 2, "{:?}", res.blocks);
}

#[test]
fn a_plain_string_is_edited_where_its_secrets_are() {
    // A string without escapes is edited at its secrets only (the rest of a long string is not
    // copied and re-encoded); the bytes come out as re-encoding the whole string gives them.
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(5);
    let t1 = ["ghp_", &g.s(36, ALNUM)].concat();
    let t2 = ["ghp_", &g.s(36, ALNUM)].concat();
    let mid = "é ".repeat(5000);
    let line = format!(r#"{{"a":"x {t1} {mid} {t2} y","b":"ok"}}"#);
    let out = r.redact_line(line.as_bytes()).line.unwrap();
    let want =
        format!(r#"{{"a":"x [REDACTED:github-pat] {mid} [REDACTED:github-pat] y","b":"ok"}}"#);
    assert_eq!(String::from_utf8(out).unwrap(), want);
    // A raw control byte (invalid JSON, read leniently) is re-encoded with the whole string.
    let line = format!("{{\"a\":\"x {t1}\ty\"}}");
    let out = r.redact_line(line.as_bytes()).line.unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"a":"x [REDACTED:github-pat]\ty"}"#
    );
}

#[test]
fn a_string_with_the_encoders_own_escapes_is_edited_where_its_secrets_are() {
    // Escapes the encoder writes itself (`\n`, `\"`, `\\`, `\t`) stand for one byte each: the
    // string is edited at its secrets, and the bytes come out as re-encoding it whole gives
    // them (a 200 MB string with newlines was decoded, replaced into a copy, re-encoded whole).
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(6);
    let t1 = ["ghp_", &g.s(36, ALNUM)].concat();
    let t2 = ["ghp_", &g.s(36, ALNUM)].concat();
    let mid = "l\\n\\\"é\\\" ".repeat(3000);
    let line = format!(r#"{{"a":"x\n\"q\" {t1}\\ {mid}\t{t2}\n y","b":"ok"}}"#);
    let out = r.redact_line(line.as_bytes()).line.unwrap();
    let want = format!(
        r#"{{"a":"x\n\"q\" [REDACTED:github-pat]\\ {mid}\t[REDACTED:github-pat]\n y","b":"ok"}}"#
    );
    assert_eq!(String::from_utf8(out).unwrap(), want);
    // Other escapes (`\/`, `\u0041`) are written as the encoder writes them: the string is
    // re-encoded whole.
    let line = format!(r#"{{"a":"a\/b \u0041 {t1}\n"}}"#);
    let out = r.redact_line(line.as_bytes()).line.unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        r#"{"a":"a/b A [REDACTED:github-pat]\n"}"#
    );
}

#[test]
fn secrets_hidden_by_escapes_are_found() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    // `g` written as \u0067 and `/` as \/.
    let line = br#"{"a":"\u0067hp_0123456789abcdefghijABCDEFGHIJ012345","b":"https:\/\/u:pw0rd1234@h.example"}"#;
    let res = r.redact_line(line);
    let ids: Vec<&str> = res.findings.iter().map(|f| r.rule_id(f.rule)).collect();
    assert_eq!(ids, vec!["github-pat", "url-credentials"]);
    let out = res.line.unwrap();
    assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
}

#[test]
fn json_members_named_like_secrets_are_redacted() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(3);
    let v = g.s(28, ALNUM) + "7";
    let line = line_of(
        serde_json::json!({"input": {"apiKey": v, "db_password": "hunter22", "input_tokens": 5, "token_count": "12345678901234567890"}}),
    );
    let res = r.redact_line(&line);
    let out: serde_json::Value = serde_json::from_slice(&res.line.unwrap()).unwrap();
    assert_eq!(out["input"]["apiKey"], "[REDACTED:generic-high-entropy]");
    assert_eq!(
        out["input"]["db_password"],
        "[REDACTED:generic-high-entropy]"
    );
    assert_eq!(out["input"]["token_count"], "12345678901234567890");
}

#[test]
fn thinking_blocks_with_secrets_are_flagged_for_removal() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let line = line_of(serde_json::json!({"type":"assistant","message":{"content":[
        {"type":"thinking","thinking": format!("the token is {t}"),"signature":"c2ln"},
        {"type":"text","text":"ok"}]}}));
    let res = r.redact_line(&line);
    assert_eq!(
        res.blocks,
        vec![vec![
            Seg::Key("message".into()),
            Seg::Key("content".into()),
            Seg::Idx(0)
        ]]
    );
}

#[test]
fn invalid_lines_are_redacted_as_text() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let line = format!(r#"{{"a":"x {t}"#);
    let res = r.redact_line(line.as_bytes());
    assert_eq!(res.line.unwrap(), br#"{"a":"x [REDACTED:github-pat]"#);
    assert_eq!(res.findings[0].path, None);
}

#[test]
fn pseudonyms_are_keyed_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    std::fs::write(&key, "k1-0123456789abcdef\n").unwrap();
    let mk = |p: &Path| {
        Redactor::new(&RedactOptions {
            pseudonymize: true,
            key_file: Some(p.to_path_buf()),
            ..RedactOptions::default()
        })
        .unwrap()
    };
    let r = mk(&key);
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let (a, _) = r.redact_text(format!("{t} {t}").as_bytes());
    let a = String::from_utf8(a.unwrap()).unwrap();
    let (x, y) = a.split_once(' ').unwrap();
    assert_eq!(x, y);
    assert!(
        x.starts_with("[REDACTED:github-pat:") && x.len() == "[REDACTED:github-pat:]".len() + 8,
        "{x}"
    );
    std::fs::write(&key, "k2-0123456789abcdef").unwrap();
    let (b, _) = mk(&key).redact_text(t.as_bytes());
    assert_ne!(String::from_utf8(b.unwrap()).unwrap(), x);
    // Idempotent.
    assert!(r.redact_text(a.as_bytes()).0.is_none());
    // No key: an error that says what to do.
    let err = Redactor::new(&RedactOptions {
        pseudonymize: true,
        key_file: Some(dir.path().join("missing")),
        ..RedactOptions::default()
    })
    .err()
    .unwrap();
    assert!(err.key.as_deref() == Some("key_file"), "{err}");
}

#[test]
fn config_selects_rules_custom_rules_and_allowlists() {
    let opts: RedactOptions = toml::from_str(
        r#"
        rules = { disable = ["github-pat"] }
        custom = [{ id = "acme-token", regex = 'acme_[a-z0-9]{16}', keywords = ["acme_"] }]
        allow = { values = ["AKIAIOSFODNN7EXAMPLE"], paths = ["$.skip"] }
        "#,
    )
    .unwrap();
    let r = Redactor::new(&opts).unwrap();
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let akid = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
    let line = line_of(
        serde_json::json!({"a": t, "b": "acme_0123456789abcdef", "c": akid, "skip": "acme_0123456789abcdef"}),
    );
    let res = r.redact_line(&line);
    let ids: Vec<&str> = res.findings.iter().map(|f| r.rule_id(f.rule)).collect();
    assert_eq!(ids, vec!["acme-token"]);
    for bad in [
        r#"rules = { disable = ["nope"] }"#,
        r#"custom = [{ id = "x", regex = "(", keywords = ["ab"] }]"#,
        r#"custom = [{ id = "x", regex = "ab", keywords = [] }]"#,
        r#"custom = [{ id = "x", regex = "ab", keywords = ["a\"b"] }]"#,
        r#"replacement = "[{nope}]""#,
        r#"allow = { paths = ["$.a["] }"#,
    ] {
        let o: RedactOptions = toml::from_str(bad).unwrap();
        assert!(Redactor::new(&o).is_err(), "{bad}");
    }
    assert!(toml::from_str::<RedactOptions>("rulez = {}").is_err());
}

#[test]
fn secrets_as_object_keys_are_redacted_and_paths_show_them_redacted() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let t = ["ghp_", "0123456789abcdefghij", "ABCDEFGHIJ012345"].concat();
    let line = format!(r#"{{"m":{{"{t}":{{"x":"{t}"}},"k":1}}}}"#);
    let res = r.redact_line(line.as_bytes());
    let out = String::from_utf8(res.line.unwrap()).unwrap();
    assert_eq!(
        out,
        r#"{"m":{"[REDACTED:github-pat]":{"x":"[REDACTED:github-pat]"},"k":1}}"#
    );
    let paths: Vec<String> = res
        .findings
        .iter()
        .map(|f| json::render(f.path.as_ref().unwrap()))
        .collect();
    assert_eq!(
        paths,
        vec![
            r#"$.m["[REDACTED:github-pat]"]"#,
            r#"$.m["[REDACTED:github-pat]"].x"#
        ]
    );
    assert!(paths.iter().all(|p| !p.contains(&t)));
}

#[test]
fn stringified_json_with_escaped_escapes_is_searched() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(11);
    let tail = g.s(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    // The outer string decodes to {"k":"\u0041KIA…"}: the key id is hidden twice.
    let line = format!(r#"{{"a":"{{\"k\":\"\\u0041KIA{tail}\"}}"}}"#);
    let res = r.redact_line(line.as_bytes());
    let out = String::from_utf8(res.line.unwrap()).unwrap();
    assert_eq!(out, r#"{"a":"{\"k\":\"[REDACTED:aws-access-key-id]\"}"}"#);
    assert!(r.redact_line(out.as_bytes()).line.is_none());
}

#[test]
fn key_blocks_split_over_patch_lines_are_redacted() {
    let r = Redactor::new(&RedactOptions::default()).unwrap();
    let mut g = Gen(12);
    let (b1, b2) = (g.s(64, B64), g.s(40, B64));
    let line = line_of(
        serde_json::json!({"toolUseResult": {"structuredPatch": [{"lines": [
        " context", "+-----BEGIN RSA PRIVATE KEY-----", format!("+{b1}"), format!("+{b2}"),
        "+-----END RSA PRIVATE KEY-----", " after"]}]}}),
    );
    let res = r.redact_line(&line);
    let out: serde_json::Value = serde_json::from_slice(&res.line.unwrap()).unwrap();
    let lines = &out["toolUseResult"]["structuredPatch"][0]["lines"];
    assert_eq!(lines[2], "+[REDACTED:private-key]");
    assert_eq!(lines[3], "+[REDACTED:private-key]");
    assert_eq!(lines[5], " after");
    assert_eq!(res.findings.len(), 1);
}

#[test]
fn custom_regexes_over_the_size_limit_are_refused_by_rule_id() {
    let load = |toml_text: &str| {
        let o: RedactOptions = toml::from_str(toml_text).unwrap();
        Redactor::new(&o).err().map(|e| e.to_string())
    };
    let err = load(r#"custom = [{ id = "huge", regex = '[\s\S]{60000}', keywords = ["ab"] }]"#)
        .expect("refused");
    assert!(err.contains("`huge`") && err.contains("too big"), "{err}");
    assert!(!err.contains("60000"), "the pattern is not echoed: {err}");
    assert!(load(r#"custom = [{ id = "ok", regex = 'acme_[a-z0-9]{32}[\s\S]{0,200}', keywords = ["acme_"] }]"#).is_none());
    let err = load(r#"allow = { regexes = ['([hunter2-secret'] }"#).expect("refused");
    assert!(!err.contains("hunter2"), "{err}");
    assert!(err.contains("#1"), "{err}");
}

#[test]
fn option_errors_do_not_echo_values() {
    let table: toml::Table =
        toml::from_str(r#"allow = { values = "hunter2-the-real-one" }"#).unwrap();
    let err = build(table).err().unwrap().to_string();
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn stages_with_the_same_options_share_one_redactor() {
    let table: toml::Table =
        toml::from_str("rules = { disable = [\"generic-secret\"] }").unwrap_or_default();
    let opts = RedactOptions::default();
    let a = shared_redactor(table.to_string(), &opts).unwrap();
    let b = shared_redactor(table.to_string(), &opts).unwrap();
    assert!(std::sync::Arc::ptr_eq(&a, &b));
    let c = shared_redactor("other = 1".into(), &opts).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&a, &c));
}

#[test]
fn a_curl_password_in_markdown_code_ends_at_the_backtick() {
    // An unquoted shell word cannot hold a backtick (it starts a command substitution), and
    // the model writes commands as inline code: the backtick closes the code, not the password.
    let r = all_rules();
    let pw = ["Zk8p", "W2qL"].concat();
    let curl: Vec<_> = found(&r, &format!("run `curl -u admin:{pw}` first"))
        .into_iter()
        .filter(|(rule, _)| rule == "curl-user-password")
        .collect();
    assert_eq!(curl, [("curl-user-password".to_string(), pw)]);
    // Documentation of the rule itself is no finding: `pass` is a placeholder word.
    assert!(found(&r, "the password of `curl -u user:pass`).").is_empty());
}

/// A file name that reads as a secret takes the placeholder in a form a file system and a
/// shell take, its extension and plain parts kept, the suffix offset after the placeholder;
/// a plain name takes none.
#[test]
fn a_secret_file_name_takes_a_file_safe_placeholder() {
    let t = format!("ghp_{}", "Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm9");
    let (name, at) = super::file_safe_name(&format!("{t}.txt")).unwrap();
    assert_eq!((name.as_str(), at), ("REDACTED-github-pat.txt", 19));
    let (name, _) = super::file_safe_name(&format!("agent-{t}.meta.json")).unwrap();
    assert_eq!(name, "agent-REDACTED-github-pat.meta.json");
    assert_eq!(super::file_safe_name("toolu_01ABCdef.txt"), None);
    assert_eq!(super::file_safe_name("agent-a4ca7529859c158c2.jsonl"), None);
}

/// An HTML entity before the `;` a connection string's password ends at is no password
/// (`password=&quot;…&quot;` on an escaped page quotes the value); a password that starts
/// with `&` still is one.
#[test]
fn an_html_entity_is_no_connection_string_password() {
    let r = all_rules();
    for t in [
        "password=&quot;&quot;",
        "Password=&#34;;",
        "x;password=&#x22;;",
    ] {
        let f = found(&r, t);
        assert!(
            !f.iter().any(|(id, _)| id == "connection-string-password"),
            "{t}: {f:?}"
        );
    }
    let f = found(&r, "Server=db;Password=&Pa55w0rd!;");
    assert!(
        f.iter()
            .any(|(id, s)| id == "connection-string-password" && s == "&Pa55w0rd!"),
        "{f:?}"
    );
}
