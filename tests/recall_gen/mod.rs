//! A labeled generator of transcript records for measuring redaction (issue #14).
//!
//! Positives: secret *kinds* (each a format written from its documentation, placed in a
//! realistic snippet: a command, a config line, a header, a sentence) × *positions* in a Claude
//! Code transcript (user prompt, assistant text, thinking, tool_use command, tool_result text,
//! toolUseResult stdout, Read output, grep output, Edit newString, structuredPatch lines,
//! stringified JSON, object key, queued prompt) × *encodings* of the JSONL line (plain, a
//! `\u00XX` escape inside the secret, stringified JSON one level down, stringified JSON whose
//! inner escape hides the secret).
//!
//! Look-alikes: classes of values that look like secrets and are not (AWS's documented
//! examples, placeholders, references, public keys, hashes, ids, signatures, images, type
//! hints, usage text) placed in the same positions; they must come out byte-identical.
//!
//! Secrets are random at every run's seed; none is a literal in the repository.

use serde_json::{json, Value};

/// Deterministic pseudo-random strings (xorshift).
pub struct Gen(pub u64);

pub const UPPER_NUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const HEX: &str = "0123456789abcdef";
pub const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const WORDISH: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

impl Gen {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn s(&mut self, n: usize, alphabet: &str) -> String {
        let a = alphabet.as_bytes();
        (0..n)
            .map(|_| a[(self.next() % a.len() as u64) as usize] as char)
            .collect()
    }
    /// Random over the alphabet, with at least one digit and one letter of each case present
    /// when the alphabet has them (real keys virtually always do).
    pub fn key(&mut self, n: usize, alphabet: &str) -> String {
        loop {
            let s = self.s(n, alphabet);
            let ok =
                |f: fn(&u8) -> bool| !alphabet.bytes().any(|c| f(&c)) || s.bytes().any(|c| f(&c));
            if ok(u8::is_ascii_digit) && ok(u8::is_ascii_lowercase) && ok(u8::is_ascii_uppercase) {
                return s;
            }
        }
    }
    pub fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        v[(self.next() % v.len() as u64) as usize]
    }
    pub fn uuid(&mut self) -> String {
        format!(
            "{}-{}-4{}-a{}-{}",
            self.s(8, HEX),
            self.s(4, HEX),
            self.s(3, HEX),
            self.s(3, HEX),
            self.s(12, HEX)
        )
    }
}

fn b64(data: &[u8], url: bool) -> String {
    let a = if url {
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    } else {
        B64
    }
    .as_bytes();
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = c.len();
        let v = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= n {
                out.push(a[(v >> (18 - 6 * i) & 63) as usize] as char);
            } else if !url {
                out.push('=');
            }
        }
    }
    out
}

/// A secret in its snippet.
pub struct Planted {
    pub snippet: String,
    pub secret: String,
}

type KindFn = fn(&mut Gen) -> Planted;
type LookFn = fn(&mut Gen) -> String;
/// Builds a record around (snippet, secret).
pub type PosFn = fn(&str, &str) -> Value;
/// Writes a record as a raw line, given the secret (or snippet) it must disguise.
pub type EncFn = fn(&Value, &str) -> String;

fn p(snippet: String, secret: String) -> Planted {
    Planted { snippet, secret }
}

fn pem(g: &mut Gen, kind: &str) -> (String, String) {
    let lines: Vec<String> = (0..8).map(|_| g.s(64, B64)).collect();
    let body = lines.join("\n") + "\n" + &g.s(24, B64) + "==";
    (
        format!("-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----\n"),
        body,
    )
}

fn human_password(g: &mut Gen) -> String {
    let w = g.pick(&[
        "Tulip", "harbor", "Maple", "river", "Falcon", "sunset", "Copper",
    ]);
    let x = g.pick(&["!", "#", ".", "", "$", "-"]);
    let v = g.pick(&["blue", "Stone", "moon", "Forest", "kite"]);
    let n = 2 + (g.next() % 3) as usize;
    format!("{w}{}{x}{v}", g.s(n, "0123456789"))
}

/// The positive kinds: (name, maker).
pub fn kinds() -> Vec<(&'static str, KindFn)> {
    vec![
        // Tokens in the forms code and web pages write them (issue #25, R2/12): the secret is
        // the token as it reads; no half of it may be left.
        ("token with an html entity", |g| {
            let b = g.key(36, ALNUM);
            p(format!("<pre>token: ghp&#95;{b}</pre>"), format!("ghp_{b}"))
        }),
        ("token percent-encoded twice", |g| {
            let b = g.key(36, ALNUM);
            p(
                format!("GET /cb?next=%2Fhook%3Ft%3Dghp%255F{b}&x=1"),
                format!("ghp_{b}"),
            )
        }),
        ("token joined from an array", |g| {
            let b = g.key(16, UPPER_NUM);
            p(
                format!(
                    "key = \"\".join([\"AKIA\", \"{}\", \"{}\"])",
                    &b[..8],
                    &b[8..]
                ),
                format!("AKIA{b}"),
            )
        }),
        ("token cut by + at a line end", |g| {
            let b = g.key(93, WORDISH);
            p(
                format!("const k = \"sk-ant-api03-\" +\n  \"{b}AA\";"),
                format!("sk-ant-api03-{b}AA"),
            )
        }),
        ("token in implicit concatenation", |g| {
            let b = g.key(36, ALNUM);
            p(
                format!(
                    "TOKEN = (\n    \"ghp_{}\"\n    \"{}\"\n)",
                    &b[..18],
                    &b[18..]
                ),
                format!("ghp_{b}"),
            )
        }),
        ("github-pat env", |g| {
            let t = format!("ghp_{}", g.key(36, ALNUM));
            p(format!("export GITHUB_TOKEN={t}"), t)
        }),
        ("github fine-grained in prose", |g| {
            let t = format!("github_pat_{}_{}", g.key(22, ALNUM), g.key(59, ALNUM));
            p(format!("I created {t} for the CI job."), t)
        }),
        ("gitlab glpat header", |g| {
            let t = format!("glpat-{}", g.key(20, WORDISH));
            p(format!("curl --header \"PRIVATE-TOKEN: {t}\" https://gitlab.example.com/api/v4/projects"), t)
        }),
        ("anthropic key in prompt", |g| {
            let t = format!("sk-ant-api03-{}AA", g.key(93, WORDISH));
            p(format!("use this key {t} for the tests"), t)
        }),
        ("openai project key", |g| {
            let t = format!("sk-proj-{}", g.key(120, WORDISH));
            p(format!("OPENAI_API_KEY=\"{t}\""), t)
        }),
        ("aws key id any upper tail", |g| {
            let t = format!(
                "{}{}",
                g.pick(&["AKIA", "ASIA", "ABIA", "ACCA"]),
                g.key(16, UPPER_NUM)
            );
            p(format!("the access key id is {t} in us-east-1"), t)
        }),
        ("aws key id glued", |g| {
            let t = format!("AKIA{}", g.key(16, UPPER_NUM));
            p(format!("aws_key=id_{t};region=eu-west-1"), t)
        }),
        ("aws secret next to key id", |g| {
            let id = format!("AKIA{}", g.key(16, UPPER_NUM));
            let t = g.key(40, B64);
            p(format!("{id} {t}"), t)
        }),
        ("aws secret access key ini", |g| {
            let t = g.key(40, B64);
            p(
                format!(
                    "[default]\naws_access_key_id = AKIA{}\naws_secret_access_key = {t}\n",
                    g.key(16, UPPER_NUM)
                ),
                t,
            )
        }),
        ("slack bot token", |g| {
            let t = format!(
                "xoxb-{}-{}-{}",
                g.s(12, "0123456789"),
                g.s(13, "0123456789"),
                g.key(24, ALNUM)
            );
            p(format!("SLACK_BOT_TOKEN={t}"), t)
        }),
        ("stripe live key", |g| {
            let t = format!("sk_live_{}", g.key(24, ALNUM));
            p(format!("stripe.api_key = \"{t}\""), t)
        }),
        ("google api key url", |g| {
            let t = format!("AIza{}", g.key(35, WORDISH));
            p(
                format!("https://maps.googleapis.com/maps/api/geocode/json?address=x&key={t}"),
                t,
            )
        }),
        ("jwt bearer", |g| {
            let h = b64(br#"{"alg":"HS256","typ":"JWT"}"#, true);
            let pl = b64(
                format!(r#"{{"sub":"{}","exp":1900000000}}"#, g.s(8, "0123456789")).as_bytes(),
                true,
            );
            let t = format!("{h}.{pl}.{}", g.key(43, WORDISH));
            p(
                format!("curl -H \"Authorization: Bearer {t}\" https://api.example.com/me"),
                t,
            )
        }),
        ("rsa private key", |g| {
            let (block, body) = pem(g, "RSA ");
            p(block, body)
        }),
        ("pkcs8 private key", |g| {
            let (block, body) = pem(g, "");
            p(format!("key.pem:\n{block}"), body)
        }),
        ("openssh private key", |g| {
            let (block, body) = pem(g, "OPENSSH ");
            p(block, body)
        }),
        ("postgres url password", |g| {
            let t = g.key(14, ALNUM);
            p(
                format!("DATABASE_URL=postgres://app:{t}@db.internal:5432/app"),
                t,
            )
        }),
        ("https url credentials", |g| {
            let t = g.key(20, ALNUM);
            p(
                format!("git clone https://deploy:{t}@git.example.com/team/repo.git"),
                t,
            )
        }),
        ("cli --password quoted", |g| {
            let t = human_password(g);
            p(
                format!("mongosh \"mongodb://db:27017\" --username admin --password '{t}'"),
                t,
            )
        }),
        ("cli --password=", |g| {
            let t = human_password(g);
            p(format!("pg_dump --dbname=app --password={t} > dump.sql"), t)
        }),
        ("mysql -p glued", |g| {
            let t = human_password(g);
            p(
                format!("mysql -h 127.0.0.1 -u root -p{t} shop < schema.sql"),
                t,
            )
        }),
        ("mysql -p quoted", |g| {
            let t = human_password(g);
            p(format!("mysqldump -uroot -p'{t}' --all-databases"), t)
        }),
        ("sshpass -p", |g| {
            let t = human_password(g);
            p(format!("sshpass -p '{t}' ssh deploy@10.0.0.5 uptime"), t)
        }),
        ("redis-cli -a", |g| {
            let t = human_password(g);
            p(format!("redis-cli -h cache.local -a {t} PING"), t)
        }),
        ("curl -u", |g| {
            let t = human_password(g);
            p(
                format!("curl -s -u admin:{t} https://jenkins.local/api/json"),
                t,
            )
        }),
        ("PGPASSWORD prefix", |g| {
            let t = human_password(g);
            p(format!("PGPASSWORD={t} psql -h db -U app -c 'select 1'"), t)
        }),
        ("docker login -p", |g| {
            let t = human_password(g);
            p(format!("docker login -u ci -p {t} registry.example.com"), t)
        }),
        ("htpasswd -b", |g| {
            let t = human_password(g);
            p(format!("htpasswd -bc /etc/nginx/.htpasswd admin {t}"), t)
        }),
        ("yaml internal_api_key", |g| {
            let t = g.key(32, ALNUM);
            p(
                format!("service:\n  internal_api_key: {t}\n  timeout: 30\n"),
                t,
            )
        }),
        ("yaml auth_token human", |g| {
            let t = human_password(g);
            p(format!("auth:\n  auth_token: {t}\n"), t)
        }),
        ("ini password", |g| {
            let t = human_password(g);
            p(format!("[database]\nuser = app\npassword = {t}\n"), t)
        }),
        ("toml api_key", |g| {
            let t = g.key(28, ALNUM);
            p(format!("[provider]\napi_key = \"{t}\"\n"), t)
        }),
        ("json API_BEARER", |g| {
            let t = g.key(30, WORDISH);
            p(
                format!("{{\n  \"API_BEARER\": \"{t}\",\n  \"region\": \"eu\"\n}}"),
                t,
            )
        }),
        ("dotenv SMTP_PASSWORD", |g| {
            let t = human_password(g);
            p(
                format!("SMTP_HOST=mail.example.com\nSMTP_PASSWORD={t}\n"),
                t,
            )
        }),
        ("python app.config SECRET_KEY", |g| {
            let t = g.key(24, ALNUM);
            p(format!("app.config['SECRET_KEY'] = '{t}'"), t)
        }),
        ("js const secret", |g| {
            let t = g.key(26, ALNUM);
            p(format!("const clientSecret = \"{t}\";"), t)
        }),
        ("ruby hash password", |g| {
            let t = human_password(g);
            p(format!("ActiveRecord::Base.establish_connection(adapter: 'mysql2', :password => '{t}')"), t)
        }),
        ("grep output token", |g| {
            let t = g.key(24, ALNUM);
            p(format!("config/app.yml:12:  token: {t}"), t)
        }),
        ("diff line password", |g| {
            let t = human_password(g);
            p(format!("@@ -1,2 +1,3 @@\n db:\n+  password = {t}\n"), t)
        }),
        ("authorization token scheme", |g| {
            let t = g.s(40, HEX);
            p(
                format!("curl -H 'Authorization: token {t}' https://api.github.com/user"),
                t,
            )
        }),
        ("authorization basic", |g| {
            let t = b64(format!("admin:{}", human_password(g)).as_bytes(), false);
            p(format!("GET /api HTTP/1.1\nAuthorization: Basic {t}\n"), t)
        }),
        ("authorization Bot", |g| {
            let t = g.key(48, WORDISH);
            p(format!("headers = {{\"Authorization\": \"Bot {t}\"}}"), t)
        }),
        ("x-api-key header", |g| {
            let t = g.s(32, HEX);
            p(
                format!("curl https://api.example.com/v1 -H \"X-Api-Key: {t}\""),
                t,
            )
        }),
        ("twilio auth token", |g| {
            let t = g.s(32, HEX);
            p(
                format!(
                    "from twilio.rest import Client\nclient = Client(\"AC{}\", \"{t}\")",
                    g.s(32, HEX)
                ),
                t,
            )
        }),
        ("twilio api key SK", |g| {
            let t = format!("SK{}", g.s(32, HEX));
            p(format!("TWILIO_API_KEY={t}"), t)
        }),
        ("mailgun key-", |g| {
            let t = format!("key-{}", g.s(32, HEX));
            p(format!("requests.post(url, auth=(\"api\", \"{t}\"))"), t)
        }),
        ("heroku legacy uuid", |g| {
            let t = g.uuid();
            p(format!("export HEROKU_API_KEY={t}"), t)
        }),
        ("discord bot token", |g| {
            let id = format!("1{}", g.s(17, "0123456789"));
            let t = format!(
                "{}.{}.{}",
                b64(id.as_bytes(), true),
                g.key(6, WORDISH),
                g.key(38, WORDISH)
            );
            p(
                format!("bot = commands.Bot(command_prefix='!')\nbot.run('{t}')"),
                t,
            )
        }),
        ("prose password is", |g| {
            let t = human_password(g);
            p(
                format!("The staging password is {t} and it rotates monthly."),
                t,
            )
        }),
        ("prose key set to", |g| {
            let t = g.key(16, ALNUM);
            p(format!("ok, the key is set to {t} now"), t)
        }),
        ("glued after %3D", |g| {
            let t = format!("ghp_{}", g.key(36, ALNUM));
            p(format!("https://example.com/cb?state=x&token%3D{t}&y=1"), t)
        }),
        ("literal \\n before key", |g| {
            let t = format!("AKIA{}", g.key(16, UPPER_NUM));
            p(format!("{{\"log\":\"starting\\n{t}\\nready\"}}"), t)
        }),
        ("sendgrid key", |g| {
            let t = format!("SG.{}.{}", g.key(22, WORDISH), g.key(43, WORDISH));
            p(format!("sg = SendGridAPIClient('{t}')"), t)
        }),
        ("npmrc auth token", |g| {
            let t = format!("npm_{}", g.key(36, ALNUM));
            p(format!("//registry.npmjs.org/:_authToken={t}"), t)
        }),
        ("azure storage account key", |g| {
            let t = format!("{}==", g.key(86, B64));
            p(format!("DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={t};EndpointSuffix=core.windows.net"), t)
        }),
        ("huggingface token", |g| {
            let t = format!(
                "hf_{}",
                g.key(34, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
            );
            p(format!("huggingface-cli login --token {t}"), t)
        }),
        ("password with spaces quoted", |g| {
            let t = format!(
                "{} horse {} staple",
                g.pick(&["correct", "purple", "silent"]),
                g.pick(&["battery", "lantern", "orbit"])
            );
            p(format!("wifi:\n  password: \"{t}\"\n"), t)
        }),
        ("telegram bot token", |g| {
            let t = format!("{}:AA{}", g.s(10, "0123456789"), g.key(33, WORDISH));
            p(format!("https://api.telegram.org/bot{t}/getUpdates"), t)
        }),
        ("private-token header", |g| {
            let t = g.key(20, WORDISH);
            p(format!("PRIVATE-TOKEN: {t}"), t)
        }),
        // Contexts missed at the first occurrence until issue #24, item 4.
        ("yaml *_pass quoted", |g| {
            let t = human_password(g);
            p(format!("mail:\n  smtp_pass: '{t}'\n  port: 587\n"), t)
        }),
        ("toml admin_pass", |g| {
            let t = g.key(14, ALNUM);
            p(format!("[admin]\nadmin_pass = \"{t}\"\n"), t)
        }),
        ("--token flag spaced", |g| {
            let t = g.key(24, ALNUM);
            p(
                format!("deployctl deploy --project web --token {t} --prod"),
                t,
            )
        }),
        ("uuid key to gh secret set", |g| {
            let t = format!(
                "{}-{}-4{}-a{}-{}",
                g.s(8, "0123456789abcdef"),
                g.s(4, "0123456789abcdef"),
                g.s(3, "0123456789abcdef"),
                g.s(3, "0123456789abcdef"),
                g.s(12, "0123456789abcdef")
            );
            p(format!("gh secret set HEROKU_API_KEY --body '{t}'"), t)
        }),
        ("prose bearer set to", |g| {
            let t = g.key(20, ALNUM);
            p(
                format!("Done: the bearer is set to {t} for the staging client."),
                t,
            )
        }),
        ("curl Token header", |g| {
            let t = g.key(16, "0123456789abcdef");
            p(
                format!("curl -XPOST http://localhost:8080/api/tasks -H \"Token: {t}\""),
                t,
            )
        }),
        ("mailchimp key", |g| {
            let t = format!(
                "{}-us{}",
                g.key(32, "0123456789abcdef"),
                g.s(2, "123456789")
            );
            p(format!("client.set_config({{\"api_key\": \"{t}\"}})"), t)
        }),
    ]
}

/// The look-alike classes: (name, maker of a snippet that must stay byte-identical).
pub fn lookalikes() -> Vec<(&'static str, LookFn)> {
    vec![
        // The forms a reader sees (HTML entities, twice percent-encoded, pieces code joins),
        // holding no secret: read, they are still none.
        ("html-escaped markup", |_| {
            "&lt;input type=&quot;password&quot; value=&quot;&quot;&gt; it&#39;s &#8230; &amp; more"
                .into()
        }),
        ("double-encoded url", |_| {
            "https://example.com/?next=%252Fhome%253Fq%253D1%2520x".into()
        }),
        ("joined words", |_| {
            "name = \"\".join([\"first\", \"last\"]); c = [\"red\", \"blue\"].join(\"\")".into()
        }),
        ("concatenated words", |_| {
            "msg = (\"Hello, \"\n    \"world\") + \"x\" \"y\"; s = \"a\" +\n  \"b\"".into()
        }),
        ("template pieces", |_| {
            "const a = `pre${\"\"}fix` + `x`;".into()
        }),
        ("aws documented example id", |_| {
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE".into()
        }),
        ("aws documented example pair", |_| {
            "AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into()
        }),
        ("aws example secret env", |g| {
            format!("AWS_SECRET_ACCESS_KEY={}EXAMPLEKEY", g.s(30, ALNUM))
        }),
        ("placeholder db url", |_| {
            "postgres://user:password@localhost/db".into()
        }),
        ("YOUR_API_KEY", |_| {
            "export OPENAI_API_KEY=YOUR_API_KEY".into()
        }),
        ("<token>", |_| {
            "curl -H \"Authorization: Bearer <token>\" https://api.example.com".into()
        }),
        ("xxxx", |_| "api_key: xxxxxxxxxxxxxxxx".into()),
        ("changeme", |_| "password = changeme".into()),
        ("${VAR}", |_| "token: ${GITHUB_TOKEN}".into()),
        ("$VAR", |_| {
            "docker login -u ci -p $REGISTRY_PASSWORD registry.example.com".into()
        }),
        ("os.environ", |_| "api_key = os.environ[\"API_KEY\"]".into()),
        ("ENV.fetch", |_| {
            "password = ENV.fetch(\"DB_PASSWORD\")".into()
        }),
        ("masked key", |g| {
            format!("OPENAI_API_KEY=sk-…{}", g.s(4, ALNUM))
        }),
        ("public key pem", |g| {
            format!(
                "-----BEGIN PUBLIC KEY-----\n{}\n{}\n-----END PUBLIC KEY-----",
                g.s(64, B64),
                g.s(40, B64)
            )
        }),
        ("certificate pem", |g| {
            format!(
                "-----BEGIN CERTIFICATE-----\n{}\n{}\n-----END CERTIFICATE-----",
                g.s(64, B64),
                g.s(64, B64)
            )
        }),
        ("ssh public key", |g| {
            format!(
                "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{} me@laptop",
                g.s(43, B64)
            )
        }),
        ("git sha", |g| {
            format!("commit {}\nAuthor: A <a@example.com>", g.s(40, HEX))
        }),
        ("sha256 digest", |g| {
            format!("image@sha256:{}", g.s(64, HEX))
        }),
        ("uuid ids", |g| {
            format!("session {} parent {}", g.uuid(), g.uuid())
        }),
        ("message and tool ids", |g| {
            format!("msg_01{} toolu_01{}", g.s(22, ALNUM), g.s(22, ALNUM))
        }),
        ("npm integrity", |g| {
            format!("\"integrity\": \"sha512-{}==\"", g.s(86, B64))
        }),
        ("token counts", |_| {
            "\"input_tokens\": 1234, \"max_tokens\": 4096".into()
        }),
        ("python type hints", |_| {
            "class Settings:\n    password: str\n    api_key: Optional[str] = None\n".into()
        }),
        ("ts type", |_| {
            "interface Creds { token: string; secret: string }".into()
        }),
        ("code reference", |_| {
            "const token = await getToken();\nconst secret = config.secret;".into()
        }),
        ("password prose no value", |_| {
            "Reset your password at https://example.com/reset and try again.".into()
        }),
        ("key prose file", |_| {
            "the key is stored in config.yaml next to id_ed25519.pub".into()
        }),
        ("docker password-stdin", |_| {
            "echo $PAT | docker login ghcr.io -u me --password-stdin".into()
        }),
        ("mysql -p prompt", |_| "mysql -u root -p shop".into()),
        ("pass-like names", |_| {
            "first_pass: done\nbypass: enabled\npass_count = 3".into()
        }),
        ("token count flags", |_| {
            "llm --max-tokens 4096 --token-file ~/.config/tok --api-key $API_KEY".into()
        }),
        ("gh pr body", |_| {
            "gh pr create --title 'Token refresh' --body 'Fixes the token refresh of 3 clients'"
                .into()
        }),
        ("bearer prose no value", |_| {
            "the bearer is set to expire at 10:00".into()
        }),
        ("usage metavar", |_| {
            "usage: tool --password PASSWORD --user USER".into()
        }),
        ("bearer env ref", |_| {
            "curl -H \"Authorization: Bearer $TOKEN\" https://x.example.com".into()
        }),
        ("twilio account sid", |g| {
            format!("TWILIO_ACCOUNT_SID=AC{}", g.s(32, HEX))
        }),
        ("file secret ref", |_| {
            "DB_PASSWORD_FILE=/run/secrets/db\nSECRET_NAME=prod-db".into()
        }),
        ("supabase anon jwt", |g| {
            let h = b64(br#"{"alg":"HS256","typ":"JWT"}"#, true);
            let pl = b64(br#"{"role":"anon","iss":"supabase"}"#, true);
            format!(
                "NEXT_PUBLIC_SUPABASE_ANON_KEY={h}.{pl}.{}",
                g.s(43, WORDISH)
            )
        }),
        ("version in prose", |_| {
            "the token format changed in v2.14.3 last year".into()
        }),
        ("hex color and css", |_| {
            "color: #1a2b3c; background: url(/img/bg.png)".into()
        }),
        ("key-value prose", |_| {
            "a key-value store keeps 128 keys per node".into()
        }),
    ]
}

/// Positions of a snippet in a transcript record: (name, maker of the record).
pub fn positions() -> Vec<(&'static str, PosFn)> {
    vec![
        (
            "user prompt",
            |s, _| json!({"type":"user","message":{"role":"user","content":s},"uuid":"u1"}),
        ),
        (
            "assistant text",
            |s, _| json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":s}]},"uuid":"a1"}),
        ),
        (
            "thinking",
            |s, _| json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"thinking","thinking":s,"signature":"RXVpZ2h0"},{"type":"text","text":"done"}]},"uuid":"a2"}),
        ),
        (
            "tool_use command",
            |s, _| json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":s,"description":"run"}}]},"uuid":"a3"}),
        ),
        (
            "tool_result text",
            |s, _| json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":s}]},"uuid":"u2"}),
        ),
        (
            "toolUseResult stdout",
            |s, _| json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]},"toolUseResult":{"stdout":s,"stderr":"","interrupted":false},"uuid":"u3"}),
        ),
        ("Read output", |s, _| {
            let numbered: String = s
                .split('\n')
                .enumerate()
                .map(|(i, l)| format!("{:>6}→{l}\n", i + 1))
                .collect();
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":numbered}]},"toolUseResult":{"type":"text","file":{"filePath":"/p/config","content":s,"numLines":3}},"uuid":"u4"})
        }),
        ("grep output", |s, _| {
            let out: String = s
                .split('\n')
                .enumerate()
                .map(|(i, l)| format!("src/settings.py:{}:{l}\n", i + 10))
                .collect();
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_3","content":out}]},"uuid":"u5"})
        }),
        (
            "Edit newString",
            |s, _| json!({"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_4","name":"Edit","input":{"file_path":"/p/a.cfg","old_string":"x = 1","new_string":s}}]},"uuid":"a4"}),
        ),
        ("structuredPatch", |s, _| {
            let mut lines = vec![Value::from(" [section]")];
            lines.extend(s.split('\n').map(|l| Value::from(format!("+{l}"))));
            json!({"type":"user","toolUseResult":{"filePath":"/p/a.cfg","oldString":"x = 1","newString":s,"structuredPatch":[{"oldStart":1,"oldLines":1,"newStart":1,"newLines":3,"lines":lines}]},"uuid":"u6"})
        }),
        ("stringified JSON", |s, _| {
            let inner = json!({"result":{"output":s,"exitCode":0}}).to_string();
            json!({"type":"user","toolUseResult":inner,"uuid":"u7"})
        }),
        (
            "queued prompt",
            |s, _| json!({"type":"queue-operation","operation":"enqueue","content":s}),
        ),
        (
            "object key",
            |_, secret| json!({"type":"user","toolUseResult":{"counts":{secret:3,"other":1}},"uuid":"u8"}),
        ),
    ]
}

/// Encodings of the line: (name, encoder). The encoder gets the record, the secret (or the
/// snippet, for look-alikes) and returns the raw line.
pub fn encodings() -> Vec<(&'static str, EncFn)> {
    vec![
        ("plain", |v, _| v.to_string()),
        ("\\u00XX in the secret", |v, secret| {
            let raw = v.to_string();
            escape_first(&raw, secret)
        }),
        ("stringified one level down", |v, _| {
            json!({"type":"user","toolUseResult":{"content":v.to_string()},"uuid":"w1"}).to_string()
        }),
        ("stringified, inner \\u00XX", |v, secret| {
            let inner = escape_first(&v.to_string(), secret);
            json!({"type":"user","toolUseResult":{"content":inner},"uuid":"w2"}).to_string()
        }),
    ]
}

/// Write the first letter of the secret's first occurrence as a `\u00XX` escape.
fn escape_first(raw: &str, secret: &str) -> String {
    let first = secret.split('\n').next().unwrap_or(secret);
    let needle: String = first.chars().take(12).collect();
    let enc = serde_json::to_string(&needle).unwrap();
    let enc = &enc[1..enc.len() - 1];
    match raw.find(enc) {
        Some(i) => {
            let (a, b) = raw.split_at(i);
            let c = b.as_bytes()[0];
            if c.is_ascii_alphanumeric() {
                format!("{a}\\u{:04x}{}", c, &b[1..])
            } else {
                raw.to_string()
            }
        }
        None => raw.to_string(),
    }
}

/// Every string in `v` (keys too), and recursively the strings of any string that is itself
/// JSON: what a reader of the output could see.
pub fn visible_text(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
            if let Ok(inner) = serde_json::from_str::<Value>(s) {
                if inner.is_object() || inner.is_array() {
                    visible_text(&inner, out);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| visible_text(x, out)),
        Value::Object(m) => {
            for (k, x) in m {
                out.push_str(k);
                out.push('\n');
                visible_text(x, out);
            }
        }
        _ => {}
    }
}

/// Is any part of `secret` left in `text`? Each line of the secret is checked, and for a
/// one-line secret every window of half its length (a partial redaction leaves one).
pub fn leaks(text: &str, secret: &str) -> bool {
    let pieces: Vec<&str> = secret.split('\n').filter(|l| l.len() >= 8).collect();
    if pieces.len() > 1 {
        return pieces.iter().any(|l| text.contains(l));
    }
    if text.contains(secret) {
        return true;
    }
    let b = secret.as_bytes();
    let w = (b.len() / 2).max(8);
    b.len() >= 12 && (0..=b.len() - w).any(|i| text.contains(&secret[i..i + w]))
}
