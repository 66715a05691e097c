//! The built-in secret rules. Each rule's `description` is its user documentation
//! (`cchist rules --long` prints it).
//!
//! A rule is a regex plus the literal keywords that every match contains, so that a raw-bytes
//! prefilter can skip lines holding none of them. Invariants, checked by tests:
//!
//! - every match contains one of the rule's keywords, starting at most `before` bytes after
//!   the match start;
//! - keywords hold no `"`, `\` or control characters (JSON escaping leaves them intact);
//! - a keyword's [`Confirm`] never rejects a keyword occurrence that starts a match: it may
//!   only look at what follows the keyword, and a backslash (a possible escape) always passes.
//!
//! Built-in regexes run with Unicode off (`(?-u)`): `\w`, `\b` and `\s` are ASCII.
//! The secret is the named group `secret` (or `secret2`, for a second alternative), else the
//! whole match; a group `name` holds the variable name of assignment rules.
//!
//! Order matters: when two rules find overlapping secrets, the earlier rule wins.

use super::checks::Check;

/// Bytes a [`Confirm::Tail`] accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `[A-Z0-9]`
    Upper,
    /// `[A-Za-z0-9]`
    Alnum,
    /// `[0-9]`
    Digits,
    /// `[A-Za-z0-9_]`
    Word,
    /// `[A-Za-z0-9_-]`
    WordDash,
    /// `[0-9a-fA-F]`
    Hex,
    /// `[A-Za-z0-9+/=%]`
    B64,
    /// `[A-Za-z0-9_=+/.~-]` (bearer tokens and their relatives)
    Token,
    /// `[A-Za-z0-9+/=_.~!@#%^*-]` (values of generic assignments)
    Generic,
    /// Anything but blanks, quotes, backticks and `;|&<>(),\` (values of `.env` lines)
    Unquoted,
}

impl Class {
    /// Is `c` in the class?
    pub fn has(self, c: u8) -> bool {
        match self {
            Class::Upper => c.is_ascii_uppercase() || c.is_ascii_digit(),
            Class::Alnum => c.is_ascii_alphanumeric(),
            Class::Digits => c.is_ascii_digit(),
            Class::Word => c.is_ascii_alphanumeric() || c == b'_',
            Class::WordDash => c.is_ascii_alphanumeric() || c == b'_' || c == b'-',
            Class::Hex => c.is_ascii_hexdigit(),
            Class::B64 => c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'%'),
            Class::Token => {
                c.is_ascii_alphanumeric()
                    || matches!(c, b'_' | b'=' | b'+' | b'/' | b'.' | b'~' | b'-')
            }
            Class::Generic => {
                c.is_ascii_alphanumeric()
                    || matches!(
                        c,
                        b'+' | b'/'
                            | b'='
                            | b'_'
                            | b'.'
                            | b'~'
                            | b'!'
                            | b'@'
                            | b'#'
                            | b'%'
                            | b'^'
                            | b'*'
                            | b'-'
                    )
            }
            Class::Unquoted => !matches!(
                c,
                b' ' | b'\t'
                    | b'\n'
                    | b'\r'
                    | 0x0b
                    | 0x0c
                    | b'\''
                    | b'"'
                    | b'`'
                    | b';'
                    | b'|'
                    | b'&'
                    | b'<'
                    | b'>'
                    | b'('
                    | b')'
                    | b','
                    | b'\\'
            ),
        }
    }
}

/// A cheap, sound test of what follows a keyword occurrence, run on the raw line before any
/// JSON is parsed. It only rejects occurrences that cannot start a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    /// Always passes.
    Any,
    /// At least `n` bytes of the class follow the keyword.
    Tail(Class, u16),
    /// Spaces or tabs, then at least `n` bytes of the class.
    Spaced(Class, u16),
    /// An assignment: up to `n` more name bytes (`[\w.-]`), up to 3 quotes or blanks, an
    /// operator (`=`, `:`, `?`, `|`, or `,` after a quote), up to 5 quotes or blanks, then the
    /// value. A JSON member whose value is a number, literal, object or array
    /// (`"input_tokens":12`) is rejected.
    Assign(u16, Val),
    /// Like `Assign`, and the keyword ends a word: no lower-case letter follows it.
    AssignWord(u16, Val),
    /// The userinfo of a URL: `user:password@` within 400 bytes after `://`.
    UserInfo,
    /// A command-line flag: up to `n` more name bytes (`[\w-]`), then `=` or a blank.
    Flag(u16),
    /// A word ends (an `s` may follow) with a blank, `:` or `=`, and a digit follows within
    /// `n` bytes on its line.
    Prose(u16),
    /// `[\s'"]{0,3}[:=][\s'"]{0,3}basic` (case-insensitive) follows `authorization`.
    AuthBasic,
    /// A blank then `-u` or `--user` within the same command (400 bytes, no `\n|;&`).
    CurlUser,
    /// The rest of a JWT header (10 to 2000 base64url bytes), a dot and `eyJ`.
    JwtHeader,
    /// One of the literals, then at least `n` bytes of the class.
    Lit(&'static [&'static str], Class, u16),
}

/// What an assignment's value must start with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Val {
    /// Anything.
    Any,
    /// At least this many bytes of the class.
    Of(Class, u16),
}

/// A keyword: a literal every match of its rule contains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kw {
    /// The literal.
    pub text: &'static str,
    /// Matched ASCII-case-insensitively.
    pub ci: bool,
    /// What must follow it.
    pub confirm: Confirm,
}

const fn cs(text: &'static str, confirm: Confirm) -> Kw {
    Kw {
        text,
        ci: false,
        confirm,
    }
}

const fn ci(text: &'static str, confirm: Confirm) -> Kw {
    Kw {
        text,
        ci: true,
        confirm,
    }
}

/// A built-in secret rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Stable id, used in `[REDACTED:<id>]`, in config and in reports.
    pub id: &'static str,
    /// Short name for reports.
    pub title: &'static str,
    /// What the rule finds (the user documentation).
    pub description: &'static str,
    /// The regex (bytes, Unicode off).
    pub regex: &'static str,
    /// Keywords; every match contains one.
    pub keywords: &'static [Kw],
    /// Largest distance from a match's start to the keyword it contains.
    pub before: usize,
    /// Tests on the secret after the regex matched.
    pub checks: &'static [Check],
    /// On unless disabled.
    pub default_on: bool,
    /// Also tried on JSON members (`"apiKey": "…"`) as `key": "value`.
    pub field: bool,
    /// Trim blanks and escaped newlines around the secret (key blocks).
    pub trim: bool,
}

const BASE: Rule = Rule {
    id: "",
    title: "",
    description: "",
    regex: "",
    keywords: &[],
    before: 0,
    checks: &[],
    default_on: true,
    field: false,
    trim: false,
};

use Check::*;
use Class::*;
use Confirm::*;
use Val::Of;

const ANY: Val = Val::Any;
const ENV: Val = Val::Of(Class::Unquoted, 4);
// One byte: after the first, a value may hold `$` and `?`, which the class leaves out.
const GEN: Val = Val::Of(Class::Generic, 1);

macro_rules! assign_rule {
    ($prefix:literal, $value:literal) => {
        concat!(
            $prefix,
            r#"[\w.-]{0,40}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"]{0,5}"#,
            $value
        )
    };
}

/// Every built-in rule, in priority order.
pub static RULES: &[Rule] = &[
    Rule {
        id: "aws-access-key-id",
        title: "AWS access key ID",
        description: "An AWS access key ID (`AKIA…`, `ASIA…` temporary, `ABIA…`/`ACCA…` service keys): the prefix and 16 upper-case letters or digits, also glued to a word, an escape or a `%XX` code. AWS's documented examples (`AKIAIOSFODNN7EXAMPLE`, anything ending in `EXAMPLE`) are left alone.",
        regex: r"(?:^|[^A-Z0-9]|%[0-9A-Fa-f]{2})(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?:[^A-Z0-9]|$)",
        keywords: &[cs("AKIA", Tail(Upper, 16)), cs("ASIA", Tail(Upper, 16)), cs("ABIA", Tail(Upper, 16)), cs("ACCA", Tail(Upper, 16))],
        before: 3,
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "aws-secret-access-key",
        title: "AWS secret access key",
        description: "A 40-character AWS secret access key assigned to an AWS-style name (`AWS_SECRET_ACCESS_KEY=…`, `aws_secret_access_key = …` in ~/.aws/credentials, `\"SecretAccessKey\": \"…\"` in STS output).",
        regex: r#"(?i:aws_?secret(?:_?access)?(?:_?key)?|secret_?access_?key)[\w.-]{0,20}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"]{0,5}(?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
        keywords: &[
            ci("aws_secret", Assign(30, Of(B64, 40))),
            ci("awssecret", Assign(30, Of(B64, 40))),
            ci("secret_access", Assign(24, Of(B64, 40))),
            ci("secretaccess", Assign(24, Of(B64, 40))),
        ],
        before: 4,
        checks: &[Entropy(3.5)],
        field: true,
        ..BASE
    },
    Rule {
        id: "aws-secret-near-key-id",
        title: "AWS secret access key next to its key ID",
        description: "A 40-character base64 value (upper, lower case and digits) within 100 characters of an AWS access key ID in the same string, with no name before it (`AKIA… wJalr…` pasted together).",
        regex: r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?s:.){0,100}?[^A-Za-z0-9/+=](?P<secret>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)|(?:^|[^A-Za-z0-9/+=])(?P<secret2>[A-Za-z0-9/+]{40})[^A-Za-z0-9/+=](?s:.){0,100}?(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
        keywords: &[cs("AKIA", Tail(Upper, 16)), cs("ASIA", Tail(Upper, 16)), cs("ABIA", Tail(Upper, 16)), cs("ACCA", Tail(Upper, 16))],
        before: 142,
        checks: &[Mixed, Entropy(4.0)],
        ..BASE
    },
    Rule {
        id: "aws-session-token",
        title: "AWS session token",
        description: "A temporary AWS session token assigned to `AWS_SESSION_TOKEN` / `aws_session_token` or sent as `X-Amz-Security-Token`.",
        regex: r#"(?i:aws_?session_?token|x-amz-security-token)[\w.-]{0,20}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"]{0,5}(?P<secret>[A-Za-z0-9/+=]{100,})"#,
        keywords: &[
            ci("session_token", Assign(20, Of(B64, 100))),
            ci("sessiontoken", Assign(20, Of(B64, 100))),
            ci("security-token", Assign(20, Of(B64, 100))),
        ],
        before: 16,
        checks: &[Entropy(4.0)],
        field: true,
        ..BASE
    },
    Rule {
        id: "github-pat",
        title: "GitHub personal access token (classic)",
        description: "A classic GitHub personal access token: `ghp_` and 36 alphanumerics.",
        regex: r"ghp_[0-9A-Za-z]{36}\b",
        keywords: &[cs("ghp_", Tail(Alnum, 36))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "github-fine-grained-pat",
        title: "GitHub fine-grained personal access token",
        description: "A fine-grained GitHub personal access token: `github_pat_` and 82 word characters.",
        regex: r"github_pat_\w{82}\b",
        keywords: &[cs("github_pat_", Tail(Word, 82))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "github-app-token",
        title: "GitHub App token",
        description: "A GitHub App user-to-server (`ghu_`) or installation (`ghs_`) token, as in `GITHUB_TOKEN` inside Actions.",
        regex: r"gh[us]_[0-9A-Za-z]{36}\b",
        keywords: &[cs("ghu_", Tail(Alnum, 36)), cs("ghs_", Tail(Alnum, 36))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "github-oauth-token",
        title: "GitHub OAuth access token",
        description: "A GitHub OAuth access token (`gho_`), as stored by `gh auth login`.",
        regex: r"gho_[0-9A-Za-z]{36}\b",
        keywords: &[cs("gho_", Tail(Alnum, 36))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "github-refresh-token",
        title: "GitHub refresh token",
        description: "A GitHub App refresh token (`ghr_`).",
        regex: r"ghr_[0-9A-Za-z]{36,76}\b",
        keywords: &[cs("ghr_", Tail(Alnum, 36))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "gitlab-pat",
        title: "GitLab personal access token",
        description: "A GitLab personal, project or group access token (`glpat-`), including the routable format with a `.xx…` suffix.",
        regex: r"glpat-[\w-]{20,300}(?:\.[0-9a-z]{9})?",
        keywords: &[cs("glpat-", Tail(WordDash, 20))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "gitlab-token",
        title: "GitLab CI/runner/deploy token",
        description: "Other GitLab tokens: pipeline trigger (`glptt-`), runner authentication (`glrt-`) and deploy (`gldt-`) tokens.",
        regex: r"(?:glptt-[0-9a-f]{40}|glrt-[\w-]{20,300}(?:\.[0-9a-z]{9})?|gldt-[\w-]{20,300})",
        keywords: &[cs("glptt-", Tail(Hex, 40)), cs("glrt-", Tail(WordDash, 20)), cs("gldt-", Tail(WordDash, 20))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "anthropic-api-key",
        title: "Anthropic API key",
        description: "An Anthropic API key (the prefix `sk-ant-api03-`, then about 95 characters).",
        regex: r"sk-ant-api\d\d-[\w-]{32,1000}",
        keywords: &[cs("sk-ant-", Tail(WordDash, 38))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "anthropic-admin-key",
        title: "Anthropic Admin API key",
        description: "An Anthropic Admin API key (`sk-ant-admin01-…`), which manages an organization.",
        regex: r"sk-ant-admin\d\d-[\w-]{32,1000}",
        keywords: &[cs("sk-ant-", Tail(WordDash, 38))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "anthropic-oauth-token",
        title: "Anthropic OAuth token",
        description: "A Claude OAuth access or refresh token (`sk-ant-oat01-…`, `sk-ant-ort01-…`), as used by Claude Code subscriptions.",
        regex: r"sk-ant-o[ar]t\d\d-[\w-]{32,300}",
        keywords: &[cs("sk-ant-", Tail(WordDash, 38))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "openai-api-key",
        title: "OpenAI API key",
        description: "An OpenAI API key carrying the `T3BlbkFJ` marker: legacy `sk-…`, and project/service/admin keys of that generation.",
        regex: r"\bsk-(?:(?:proj|svcacct|admin)-)?[\w-]{20,200}T3BlbkFJ[\w-]{20,200}",
        keywords: &[cs("T3BlbkFJ", Tail(WordDash, 20))],
        before: 211,
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "openai-project-key",
        title: "OpenAI project API key",
        description: "An OpenAI project API key (`sk-proj-…`).",
        regex: r"sk-proj-[\w-]{40,300}",
        keywords: &[cs("sk-proj-", Tail(WordDash, 40))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "openai-service-key",
        title: "OpenAI service account key",
        description: "An OpenAI service account key (`sk-svcacct-…`).",
        regex: r"sk-svcacct-[\w-]{40,300}",
        keywords: &[cs("sk-svcacct-", Tail(WordDash, 40))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "openai-admin-key",
        title: "OpenAI admin key",
        description: "An OpenAI admin key (`sk-admin-…`).",
        regex: r"sk-admin-[\w-]{40,300}",
        keywords: &[cs("sk-admin-", Tail(WordDash, 40))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "openrouter-api-key",
        title: "OpenRouter API key",
        description: "An OpenRouter API key (`sk-or-v1-` and 64 hex digits).",
        regex: r"sk-or-v1-[0-9a-f]{64}\b",
        keywords: &[cs("sk-or-v1-", Tail(Hex, 64))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "groq-api-key",
        title: "Groq API key",
        description: "A Groq API key (`gsk_` and 52 alphanumerics).",
        regex: r"gsk_[A-Za-z0-9]{52}\b",
        keywords: &[cs("gsk_", Tail(Alnum, 52))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "xai-api-key",
        title: "xAI API key",
        description: "An xAI (Grok) API key (`xai-` and 80 alphanumerics).",
        regex: r"xai-[A-Za-z0-9]{80}\b",
        keywords: &[cs("xai-", Tail(Alnum, 80))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "perplexity-api-key",
        title: "Perplexity API key",
        description: "A Perplexity API key (`pplx-` and 48 alphanumerics).",
        regex: r"pplx-[A-Za-z0-9]{48}\b",
        keywords: &[cs("pplx-", Tail(Alnum, 48))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "huggingface-token",
        title: "Hugging Face token",
        description: "A Hugging Face user access token (`hf_`) or organization API token (`api_org_`).",
        regex: r"\b(?:hf|api_org)_[A-Za-z]{34}\b",
        keywords: &[cs("hf_", Tail(Alnum, 34)), cs("api_org_", Tail(Alnum, 34))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "replicate-api-token",
        title: "Replicate API token",
        description: "A Replicate API token (`r8_` and 37 alphanumerics).",
        regex: r"\br8_[A-Za-z0-9]{37}\b",
        keywords: &[cs("r8_", Tail(Alnum, 37))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "slack-bot-token",
        title: "Slack bot token",
        description: "A Slack bot token (`xoxb-…`), current (`xoxb-<team>-<bot>-<secret>`) and legacy (`xoxb-<id>-<secret>`).",
        regex: r"xoxb-[0-9]{8,14}-[A-Za-z0-9-]{18,255}",
        keywords: &[cs("xox", Lit(&["a-", "b-", "e-", "e.", "o-", "p-", "r-", "s-"], Token, 8))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "slack-user-token",
        title: "Slack user token",
        description: "A Slack user token (`xoxp-…`, `xoxe-…`).",
        regex: r"xox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9-]{28,34}",
        keywords: &[cs("xox", Lit(&["a-", "b-", "e-", "e.", "o-", "p-", "r-", "s-"], Token, 8))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "slack-app-token",
        title: "Slack app-level token",
        description: "A Slack app-level token (`xapp-1-…`).",
        regex: r"(?i)\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+",
        keywords: &[ci("xapp-", Tail(WordDash, 7))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "slack-legacy-token",
        title: "Slack legacy token",
        description: "A legacy Slack workspace, OAuth or refresh token (`xoxa-`, `xoxo-`, `xoxs-`, `xoxr-`).",
        regex: r"(?:^|[^A-Za-z0-9-])(?P<secret>xox[aors]-(?:\d-)?[0-9A-Za-z-]{8,255})",
        keywords: &[cs("xox", Lit(&["a-", "b-", "e-", "e.", "o-", "p-", "r-", "s-"], Token, 8))],
        before: 1,
        checks: &[Entropy(3.0), Digit],
        ..BASE
    },
    Rule {
        id: "slack-config-token",
        title: "Slack configuration token",
        description: "A Slack app configuration access or refresh token (`xoxe.xoxp-1-…`, `xoxe-1-…`).",
        regex: r"xoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{146,166}",
        keywords: &[cs("xox", Lit(&["a-", "b-", "e-", "e.", "o-", "p-", "r-", "s-"], Token, 8))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "slack-webhook-url",
        title: "Slack incoming webhook URL",
        description: "The secret path of a Slack incoming webhook or workflow trigger (`https://hooks.slack.com/services/T…/B…/…`); anyone holding it can post to the channel.",
        regex: r"(?i)hooks\.slack\.com/(?P<secret>(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,200})",
        keywords: &[ci("hooks.slack.com", Any)],
        ..BASE
    },
    Rule {
        id: "stripe-secret-key",
        title: "Stripe secret or restricted key",
        description: "A Stripe secret (`sk_live_`, `sk_test_`, `sk_prod_`) or restricted (`rk_…`) API key.",
        regex: r"[rs]k_(?:test|live|prod)_[A-Za-z0-9]{10,247}\b",
        keywords: &[cs("k_live_", Tail(Alnum, 10)), cs("k_test_", Tail(Alnum, 10)), cs("k_prod_", Tail(Alnum, 10))],
        before: 1,
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "stripe-webhook-secret",
        title: "Stripe webhook signing secret",
        description: "A Stripe webhook signing secret (`whsec_…`).",
        regex: r"whsec_[A-Za-z0-9+/=]{32,100}",
        keywords: &[cs("whsec_", Tail(B64, 32))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "google-api-key",
        title: "Google API key",
        description: "A Google (GCP, Firebase, Gemini, Maps) API key: `AIza` and 35 characters, not inside a longer base64 run. The example keys published in Firebase's public SDK sources are left alone.",
        regex: r"(?:^|[^A-Za-z0-9+/]|\\[nrt]|%[0-9A-Fa-f]{2})(?P<secret>AIza[\w-]{35})(?:[^\w-]|$)",
        keywords: &[cs("AIza", Tail(WordDash, 35))],
        before: 3,
        checks: &[Entropy(3.5), NotOneOf(FIREBASE_SDK_EXAMPLE_KEYS)],
        ..BASE
    },
    Rule {
        id: "google-oauth-client-secret",
        title: "Google OAuth client secret",
        description: "A Google OAuth client secret (`GOCSPX-…`).",
        regex: r"(?P<secret>GOCSPX-[\w-]{28})(?:[^\w-]|$)",
        keywords: &[cs("GOCSPX-", Tail(WordDash, 28))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "google-oauth-access-token",
        title: "Google OAuth access token",
        description: "A Google OAuth 2.0 access token (`ya29.…`), as printed by `gcloud auth print-access-token`.",
        regex: r"ya29\.[\w-]{30,}",
        keywords: &[cs("ya29.", Tail(WordDash, 30))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "gcp-service-account-key",
        title: "GCP service account private key",
        description: "The `private_key` of a Google Cloud service account key file (JSON), with its newlines still escaped as `\\n`.",
        regex: r#""private_key"[ \t]{0,4}:[ \t]{0,4}"(?P<secret>-----BEGIN (?:RSA )?PRIVATE KEY-----(?:[A-Za-z0-9+/=\s]|\\+[rnt]){64,}?-----END (?:RSA )?PRIVATE KEY-----(?:\\+n)?)""#,
        keywords: &[cs("PRIVATE KEY", Any)],
        before: 40,
        checks: &[PemBody],
        ..BASE
    },
    Rule {
        id: "openssh-private-key",
        title: "OpenSSH private key",
        description: "An OpenSSH private key block (`-----BEGIN OPENSSH PRIVATE KEY-----`), with real or JSON-escaped newlines; a cut-off block is redacted up to where it stops. The BEGIN/END lines are kept.",
        regex: r"-----BEGIN OPENSSH PRIVATE KEY-----(?:\s|\\+[rnt])*(?:(?P<secret>(?s:.){16,}?)(?:\s|\\+[rnt])*-----END OPENSSH PRIVATE KEY-----|(?P<secret2>(?:[A-Za-z0-9+/=]|\s|\\+[rnt]){64,}))",
        keywords: &[cs("PRIVATE KEY", Any)],
        before: 19,
        checks: &[PemBody],
        trim: true,
        ..BASE
    },
    Rule {
        id: "pgp-private-key",
        title: "PGP private key block",
        description: "An armored PGP/GPG private key block (`-----BEGIN PGP PRIVATE KEY BLOCK-----`).",
        regex: r"-----BEGIN PGP PRIVATE KEY BLOCK-----(?:\s|\\+[rnt])*(?:(?P<secret>(?s:.){16,}?)(?:\s|\\+[rnt])*-----END PGP PRIVATE KEY BLOCK-----|(?P<secret2>(?:[A-Za-z0-9+/=:. -]|\s|\\+[rnt]){64,}))",
        keywords: &[cs("PRIVATE KEY", Any)],
        before: 15,
        checks: &[PemBody],
        trim: true,
        ..BASE
    },
    Rule {
        id: "private-key",
        title: "Private key (PEM)",
        description: "A PEM private key block: PKCS#8 (`-----BEGIN PRIVATE KEY-----`), RSA, EC, DSA or encrypted, with real or JSON-escaped newlines; a cut-off block is redacted up to where it stops. The BEGIN/END lines are kept. Public keys and certificates are not secrets.",
        regex: r"-----BEGIN (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----(?:\s|\\+[rnt])*(?:(?P<secret>(?s:.){16,}?)(?:\s|\\+[rnt])*-----END (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----|(?P<secret2>(?:[A-Za-z0-9+/=]|\s|\\+[rnt]){64,}))",
        keywords: &[cs("PRIVATE KEY", Any)],
        before: 21,
        checks: &[PemBody],
        trim: true,
        ..BASE
    },
    Rule {
        id: "private-key-body",
        title: "Private key body without its PEM lines",
        description: "The base64 body of a private key whose `-----BEGIN`/`-----END` lines were cut off (`sed 1d key.pem`, a key pasted into a variable or a secret store, an Edit's `old_string` holding the body's lines): PKCS#8 (`MII…IBADAN…`), PKCS#1 RSA (`MII…IBAAK…`), encrypted PKCS#8 (`MII…BgkqhkiG9w0BBQ0w…`, PBES2; `MII…BgoqhkiG9w0BDAE…`, PKCS#12 PBE), SEC1 EC (`MHcCAQEEI…`, `MIGkAgEBBDA…`) and OpenSSH (`b3BlbnNzaC1rZXktdjE…`), 100+ base64 characters on one line or many. Told apart by the structure the key's first bytes encode (a version number, an encryption scheme), not by `MII` alone: public keys and certificates (`MII…CCA…`, `MII…ANBgkqhkiG9w0BAQEF…`) start otherwise and are left alone.",
        regex: r"(?:^|[^A-Za-z0-9+/])(?P<secret>(?:MII[A-Za-z0-9+/]{3}IBA(?:D?AN|AK)|MII[A-Za-z0-9+/]{5}(?:BgkqhkiG9w0BBQ0w|BgoqhkiG9w0BDAE)|MHcCAQEEI|MIGkAgEBBDA|b3BlbnNzaC1rZXktdjE)[A-Za-z0-9+/=\r\n]{100,})",
        keywords: &[cs("IBADAN", Any), cs("IBAAK", Any), cs("BgkqhkiG9w0BBQ0w", Any), cs("BgoqhkiG9w0BDAE", Any), cs("MHcCAQEEI", Any), cs("MIGkAgEBBDA", Any), cs("b3BlbnNzaC1rZXktdjE", Any)],
        before: 9,
        checks: &[PemBody],
        trim: true,
        ..BASE
    },
    Rule {
        id: "azure-storage-account-key",
        title: "Azure storage account key",
        description: "An Azure storage account key in a connection string (`AccountKey=…==`).",
        regex: r"(?i)\bAccountKey[ \t]{0,2}=[ \t]{0,2}(?P<secret>[A-Za-z0-9+/]{86}==)",
        keywords: &[ci("accountkey", Assign(0, Of(B64, 86)))],
        ..BASE
    },
    Rule {
        id: "azure-sas-token",
        title: "Azure shared access signature",
        description: "The `sig=` signature of an Azure shared access signature (SAS) URL or token.",
        regex: r"[?&]sig=(?P<secret>[A-Za-z0-9%+/=]{40,150})",
        keywords: &[cs("sig=", Tail(B64, 40))],
        before: 1,
        checks: &[Entropy(4.0)],
        ..BASE
    },
    Rule {
        id: "azure-shared-access-key",
        title: "Azure shared access key",
        description: "A `SharedAccessKey=` / `SharedKey=` in an Azure Service Bus, Event Hubs or IoT Hub connection string.",
        regex: r"(?i)\bShared(?:Access)?Key[ \t]{0,2}=[ \t]{0,2}(?P<secret>[A-Za-z0-9+/]{40,90}={0,2})",
        keywords: &[ci("sharedaccesskey", Assign(0, Of(B64, 40))), ci("sharedkey", Assign(0, Of(B64, 40)))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "azure-ad-client-secret",
        title: "Azure AD client secret",
        description: "A Microsoft Entra ID (Azure AD) application client secret (`…Q~…`, 40 characters).",
        regex: r#"(?:^|[\\'"`\s>=:(,)])(?P<secret>[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'"`\s<),])"#,
        keywords: &[cs("Q~", Tail(Token, 31))],
        before: 5,
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "twilio-credentials",
        title: "Twilio API key or auth token",
        description: "A Twilio API key (`SK` and 32 hex digits) or auth token (32 hex digits) within 300 characters after the word Twilio (a Twilio-named variable, a `twilio` client call, a config block).",
        regex: r#"(?i:twilio)(?s:.){0,300}?[\s=:(,'"`](?P<secret>SK[0-9a-fA-F]{32}|[0-9a-f]{32})\b"#,
        keywords: &[ci("twilio", Any)],
        checks: &[NotAllDigits, Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "mailchimp-api-key",
        title: "Mailchimp API key",
        description: "A Mailchimp (Marketing API) key: 32 hex characters, `-us` and the data-center number (`…-us18`).",
        regex: r"\b(?P<secret>[0-9a-f]{32}-us[0-9]{1,2})\b",
        // The data-center number follows `-us` (`--user`, `-usage` are not one).
        keywords: &[cs("-us", Tail(Digits, 1))],
        before: 32,
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "sendgrid-api-key",
        title: "SendGrid API key",
        description: "A SendGrid API key (`SG.` + 22 + `.` + 43 characters).",
        regex: r"SG\.[\w-]{22}\.[\w-]{43}",
        keywords: &[cs("SG.", Tail(WordDash, 22))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "mailgun-api-key",
        title: "Mailgun API key",
        description: "A Mailgun private API key (`key-` and 32 hex digits, anywhere) or webhook signing key assigned to a Mailgun-named variable.",
        regex: concat!(assign_rule!(r"(?i:mailgun)", r"(?P<secret>(?:key-)?[0-9a-f]{32}(?:-[0-9a-f]{8}-[0-9a-f]{8})?)\b"), r"|(?P<secret2>key-[0-9a-f]{32})\b"),
        keywords: &[ci("mailgun", Assign(40, Of(WordDash, 32))), cs("key-", Tail(Hex, 32))],
        checks: &[NotAllDigits, Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "discord-bot-token",
        title: "Discord bot token",
        description: "A Discord bot token (three dot-separated parts, the first the base64 of the bot's numeric id) within 300 characters after the word Discord, or passed to `.run(`/`.login(`.",
        regex: r#"(?:(?i:discord)(?s:.){0,300}?[^\w.-]|\.(?:run|login)\(['"`])(?P<secret>[MNO][\w-]{23,27}\.[\w-]{6,7}\.[\w-]{27,40})(?:[^\w.-]|$)"#,
        keywords: &[ci("discord", Any), cs(".run(", Lit(&["'", "\"", "`"], WordDash, 24)), cs(".login(", Lit(&["'", "\"", "`"], WordDash, 24))],
        checks: &[DiscordToken],
        ..BASE
    },
    Rule {
        id: "discord-webhook-url",
        title: "Discord webhook URL",
        description: "The id and token of a Discord webhook URL (`https://discord.com/api/webhooks/<id>/<token>`).",
        regex: r"(?i)https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/(?P<secret>\d{17,20}/[\w-]{60,68})",
        keywords: &[ci("discord", Any)],
        before: 15,
        ..BASE
    },
    Rule {
        id: "telegram-bot-token",
        title: "Telegram bot token",
        description: "A Telegram Bot API token (`<bot id>:AA…`, 35 characters after the colon), also inside `https://api.telegram.org/bot<token>/…` URLs.",
        regex: r"(?:\b|bot)(?P<secret>\d{8,10}:AA[\w-]{33})(?:[^\w-]|$)",
        keywords: &[cs(":AA", Tail(WordDash, 33))],
        before: 13,
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "npm-access-token",
        title: "npm access token",
        description: "An npm access token (`npm_` and 36 alphanumerics).",
        regex: r"npm_[A-Za-z0-9]{36}\b",
        keywords: &[cs("npm_", Tail(Alnum, 36))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "npmrc-auth-token",
        title: ".npmrc auth token",
        description: "An `_authToken=` / `_auth=` credential in an `.npmrc` (any registry).",
        regex: r#":_auth(?:Token)?[ \t]{0,2}=[ \t]{0,2}(?P<secret>[^\s'"]{8,512})"#,
        keywords: &[cs(":_auth", Assign(5, ANY))],
        checks: &[NotAllDigits],
        ..BASE
    },
    Rule {
        id: "pypi-upload-token",
        title: "PyPI upload token",
        description: "A PyPI API token (`pypi-AgEIcHlwaS5vcmc…`).",
        regex: r"pypi-AgEIcHlwaS5vcmc[\w-]{50,1000}",
        keywords: &[cs("pypi-AgEIcHlwaS5vcmc", Tail(WordDash, 50))],
        ..BASE
    },
    Rule {
        id: "heroku-api-key",
        title: "Heroku API key",
        description: "A Heroku API key: the newer `HRKU-AA…` format, or a UUID assigned to a Heroku-named variable (`HEROKU_API_KEY=…`).",
        regex: r#"(?i:heroku)[\w.-]{0,40}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"]{0,5}(?P<secret>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b|(?P<secret2>HRKU-AA[\w-]{58})"#,
        keywords: &[ci("heroku", Assign(40, Of(WordDash, 36))), cs("HRKU-AA", Tail(WordDash, 58))],
        ..BASE
    },
    Rule {
        id: "digitalocean-token",
        title: "DigitalOcean token",
        description: "A DigitalOcean personal access (`dop_v1_`), OAuth (`doo_v1_`) or refresh (`dor_v1_`) token.",
        regex: r"do[opr]_v1_[a-f0-9]{64}\b",
        keywords: &[cs("_v1_", Tail(Hex, 64))],
        before: 3,
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "vault-token",
        title: "HashiCorp Vault token",
        description: "A HashiCorp Vault service (`hvs.…`) or batch (`hvb.…`) token.",
        regex: r"hv[sb]\.[\w-]{90,400}",
        keywords: &[cs("hvs.", Tail(WordDash, 90)), cs("hvb.", Tail(WordDash, 90))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "databricks-token",
        title: "Databricks access token",
        description: "A Databricks personal access token (`dapi` and 32 hex digits).",
        regex: r"dapi[a-f0-9]{32}(?:-\d)?\b",
        keywords: &[cs("dapi", Tail(Hex, 32))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "jwt",
        title: "JSON Web Token",
        description: "A signed JSON Web Token (`eyJ….eyJ….…`) whose header names an algorithm; bearer tokens and session cookies are often JWTs. A token whose payload says `\"role\":\"anon\"` (a public anon key) is left alone.",
        regex: r"(?:\b|\\[nrt]|%[0-9A-Fa-f]{2}|_)(?P<secret>eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})",
        keywords: &[cs("eyJ", JwtHeader)],
        before: 3,
        checks: &[Jwt],
        ..BASE
    },
    Rule {
        id: "age-secret-key",
        title: "age secret key",
        description: "An age encryption secret key (`AGE-SECRET-KEY-1…`) with a valid bech32 checksum.",
        regex: r"\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b",
        keywords: &[cs("AGE-SECRET-KEY-1", Tail(Upper, 58))],
        checks: &[Bech32],
        ..BASE
    },
    Rule {
        id: "shopify-token",
        title: "Shopify token",
        description: "A Shopify access token or shared secret (`shpat_`, `shpca_`, `shppa_`, `shpss_`).",
        regex: r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b",
        keywords: &[cs("shp", Lit(&["at_", "ca_", "pa_", "ss_"], Hex, 32))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "linear-api-key",
        title: "Linear API key",
        description: "A Linear API key (`lin_api_` and 40 alphanumerics). Off by default (enable it to use it).",
        regex: r"lin_api_[A-Za-z0-9]{40}\b",
        keywords: &[cs("lin_api_", Tail(Alnum, 40))],
        checks: &[Entropy(3.5)],
        default_on: false,
        ..BASE
    },
    Rule {
        id: "notion-token",
        title: "Notion integration token",
        description: "A Notion integration token (`ntn_…`).",
        regex: r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b",
        keywords: &[cs("ntn_", Tail(Alnum, 46))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "supabase-token",
        title: "Supabase secret",
        description: "A Supabase personal access token (`sbp_…`) or secret API key (`sb_secret_…`).",
        regex: r"(?:sbp_[a-f0-9]{40}|sb_secret_[\w-]{20,100})\b",
        keywords: &[cs("sbp_", Tail(Hex, 40)), cs("sb_secret_", Tail(WordDash, 20))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "atlassian-api-token",
        title: "Atlassian API token",
        description: "An Atlassian (Jira, Confluence) API token (`ATATT3…`). Off by default (enable it to use it).",
        regex: r"ATATT3[\w=-]{180,200}",
        keywords: &[cs("ATATT3", Tail(Token, 180))],
        checks: &[Entropy(3.5)],
        default_on: false,
        ..BASE
    },
    Rule {
        id: "dockerhub-pat",
        title: "Docker Hub access token",
        description: "A Docker Hub personal access token (`dckr_pat_…`). Off by default (enable it to use it).",
        regex: r"\b(?P<secret>dckr_pat_[\w-]{27})(?:[^\w-]|$)",
        keywords: &[cs("dckr_pat_", Tail(WordDash, 27))],
        checks: &[Entropy(3.0)],
        default_on: false,
        ..BASE
    },
    Rule {
        id: "sentry-token",
        title: "Sentry auth token",
        description: "A Sentry user (`sntryu_`) or organization (`sntrys_`) auth token.",
        regex: r"sntry[us]_[\w=+/]{40,400}",
        keywords: &[cs("sntry", Tail(Token, 42))],
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "grafana-token",
        title: "Grafana token",
        description: "A Grafana service account token (`glsa_`) or Grafana Cloud token (`glc_`).",
        regex: r"(?:glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|glc_[A-Za-z0-9+/]{32,400}={0,2})",
        keywords: &[cs("glsa_", Tail(Word, 41)), cs("glc_", Tail(B64, 32))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "planetscale-token",
        title: "PlanetScale token or password",
        description: "A PlanetScale API token, OAuth token or database password (`pscale_tkn_`, `pscale_oauth_`, `pscale_pw_`). Off by default (enable it to use it).",
        regex: r"pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64}",
        keywords: &[cs("pscale_", Tail(Token, 34))],
        checks: &[Entropy(3.0)],
        default_on: false,
        ..BASE
    },
    Rule {
        id: "square-token",
        title: "Square token",
        description: "A Square access token or application secret (`sq0atp-…`, `sq0csp-…`).",
        regex: r"sq0(?:atp|csp)-[\w-]{22,60}",
        keywords: &[cs("sq0", Lit(&["atp-", "csp-"], WordDash, 22))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "cloudflare-api-token",
        title: "Cloudflare API token",
        description: "A Cloudflare API token or global API key assigned to a Cloudflare-named variable.",
        regex: assign_rule!(r"(?i:cloudflare)", r"(?P<secret>[\w-]{37,40})(?:[^\w-]|$)"),
        keywords: &[ci("cloudflare", Assign(40, Of(WordDash, 37)))],
        checks: &[Entropy(3.5), SecretName],
        ..BASE
    },
    Rule {
        id: "1password-service-account-token",
        title: "1Password service account token",
        description: "A 1Password service account token (`ops_eyJ…`, a base64 JSON document of 250+ characters), as set in `OP_SERVICE_ACCOUNT_TOKEN`.",
        regex: r"ops_eyJ[A-Za-z0-9+/]{250,}={0,3}",
        keywords: &[cs("ops_eyJ", Tail(B64, 250))],
        checks: &[Entropy(4.0)],
        ..BASE
    },
    Rule {
        id: "1password-secret-key",
        title: "1Password secret key",
        description: "A 1Password account secret key (`A3-XXXXXX-XXXXXX-XXXXX-XXXXX-XXXXX-XXXXX`, upper-case letters and digits; the second and third groups may be joined).",
        regex: r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b",
        keywords: &[cs("A3-", Tail(Upper, 6))],
        checks: &[Entropy(3.8)],
        ..BASE
    },
    Rule {
        id: "aws-bedrock-api-key",
        title: "Amazon Bedrock API key",
        description: "An Amazon Bedrock API key: long-lived (`ABSK` and 109–269 base64 characters) or short-lived (`bedrock-api-key-` and a base64 presigned URL).",
        // The long-term key's prefix is split in two so that this file holds no key-shaped text.
        regex: concat!(r"(?:^|[^A-Za-z0-9+/])(?P<secret>ABSK[A-Za-z0-9+/]{109,269}={0,2})(?:[^A-Za-z0-9+/=]|$)|(?P<secret2>bedrock-api-key-", r"YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&_.-]*)"),
        keywords: &[cs("ABSK", Tail(B64, 109)), cs("bedrock-api-key-", Tail(B64, 28))],
        before: 1,
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "facebook-access-token",
        title: "Facebook access token",
        description: "A Facebook (Meta) page or user access token (`EAAM…`/`EAAC…` and 100+ alphanumerics), and an app access token (`<app id>|<app secret>`) near the word Facebook.",
        regex: r"(?:^|[^A-Za-z0-9])(?P<secret>EAA[MC][A-Za-z0-9]{100,2048})(?:[^A-Za-z0-9]|$)|(?i:facebook)(?s:.){0,100}?[^\w|](?P<secret2>\d{15,16}(?:\||%7[Cc])[\w-]{27,40})(?:[^\w-]|$)",
        keywords: &[cs("EAAM", Tail(Alnum, 100)), cs("EAAC", Tail(Alnum, 100)), ci("facebook", Any)],
        before: 1,
        checks: &[Entropy(3.5)],
        ..BASE
    },
    Rule {
        id: "flyio-access-token",
        title: "Fly.io access token",
        description: "A Fly.io API or deploy token: macaroons `fm1a_`/`fm1r_`/`fm2_` (with their `FlyV1 ` scheme and comma-joined third-party caveats) and `fo1_` OAuth tokens.",
        regex: r"(?:^|[^\w+/])(?P<secret>(?:FlyV1[ \t]{1,4})?(?:fm1[ar]|fm2)_[A-Za-z0-9+/]{100,}={0,3}(?:,(?:fm1[ar]|fm2)_[A-Za-z0-9+/]{20,}={0,3})*|fo1_[\w-]{43})",
        keywords: &[cs("fm1", Lit(&["a_", "r_"], B64, 100)), cs("fm2_", Tail(B64, 100)), cs("fo1_", Tail(WordDash, 43))],
        before: 10,
        checks: &[Entropy(4.0)],
        ..BASE
    },
    Rule {
        id: "sourcegraph-access-token",
        title: "Sourcegraph access token",
        description: "A Sourcegraph access token (`sgp_` with an optional instance id or `local_`, then 40 hex digits), or 40 hex digits assigned to a Sourcegraph-named variable.",
        regex: r#"\b(?P<secret>sgp_(?:[a-fA-F0-9]{16}_|local_)?[a-fA-F0-9]{40})\b|(?i:sourcegraph)[\w.-]{0,40}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"]{0,5}(?P<secret2>[a-fA-F0-9]{40})\b"#,
        keywords: &[cs("sgp_", Tail(Word, 40)), ci("sourcegraph", Assign(40, Of(Hex, 40)))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "sidekiq-secret",
        title: "Sidekiq Pro/Enterprise credentials",
        description: "The `user:password` of Sidekiq Pro/Enterprise's gem server (`BUNDLE_GEMS__CONTRIBSYS__COM`, `BUNDLE_ENTERPRISE__CONTRIBSYS__COM`, `https://x:y@gems.contribsys.com`).",
        regex: r#"(?i)\bBUNDLE_(?:ENTERPRISE|GEMS)__CONTRIBSYS__COM[\s'"]{0,3}(?:=|:=|:)[\s'"]{0,5}(?P<secret>[a-f0-9]{8}:[a-f0-9]{8})\b|(?i)https?://(?P<secret2>[a-f0-9]{8}:[a-f0-9]{8})@(?:gems|enterprise)\.contribsys\.com"#,
        keywords: &[ci("contribsys", Any)],
        before: 40,
        ..BASE
    },
    Rule {
        id: "sumologic-credentials",
        title: "Sumo Logic access ID or key",
        description: "A Sumo Logic access ID (`su` and 12 alphanumerics) or access key (64 alphanumerics) assigned to a Sumo-named variable.",
        regex: r#"(?-i:[Ss]umo|SUMO)[\w.-]{0,40}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"]{0,5}(?:(?P<secret>su[A-Za-z0-9]{12})|(?P<secret2>[A-Za-z0-9]{64}))\b"#,
        keywords: &[ci("sumo", Assign(40, Of(Alnum, 14)))],
        checks: &[Entropy(3.0), Digit],
        ..BASE
    },
    Rule {
        id: "intra42-client-secret",
        title: "42 Intra client secret",
        description: "A 42 school Intra API client secret (`s-s4t2ud-`/`s-s4t2af-` and 64 hex digits).",
        regex: r"\bs-s4t2(?:ud|af)-[a-fA-F0-9]{64}\b",
        keywords: &[cs("s-s4t2", Tail(WordDash, 67))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "sonarqube-token",
        title: "SonarQube token",
        description: "A SonarQube/SonarCloud token (`squ_`, `sqp_`, `sqa_` or none, and 40 characters) assigned to `SONAR_TOKEN`, `sonar.login` and kin.",
        regex: r#"(?i)\bsonar[_.-]?(?:login|token)[\w.-]{0,20}[\s'"]{0,3}(?:=|:{1,3}=|\?=|=>|:)[\s'"]{0,5}(?P<secret>(?:squ_|sqp_|sqa_)?[a-z0-9=_-]{40})(?:[^\w=-]|$)"#,
        keywords: &[ci("sonar", Assign(30, Of(WordDash, 40)))],
        checks: &[Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "saas-api-key-uuid",
        title: "Service API key (UUID format)",
        description: "A UUID-shaped API key assigned to a variable named for a service that issues such keys: Snyk (`SNYK_TOKEN`), HubSpot, MessageBird (also its 25-character keys). A UUID elsewhere is an id and stays.",
        regex: r#"(?i)(?:\bsnyk[_.-]?(?:(?:api|oauth)[_.-]?)?(?:key|token)|hubspot|message[_-]?bird)[\w.-]{0,40}[\s'"]{0,3}(?:=|:{1,3}=|\?=|=>|:)[\s'"]{0,5}(?:(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})|(?P<secret2>[a-z0-9]{25}))\b"#,
        keywords: &[ci("snyk", Assign(40, Of(WordDash, 25))), ci("hubspot", Assign(40, Of(WordDash, 25))), ci("bird", Assign(40, Of(WordDash, 25)))],
        before: 8,
        ..BASE
    },
    Rule {
        id: "db-connection-string",
        title: "Database connection string password",
        description: "The password in a database URL (`postgres://user:password@host`, MySQL, MariaDB, MongoDB, Redis, AMQP, SQL Server, ClickHouse, Neo4j, CouchDB).",
        regex: r#"(?i)\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|cockroachdb|clickhouse|neo4j(?:\+s)?|couchdb)://[^\s:@/'"<>\\]{0,128}:(?P<secret>[^\s@/'"<>\\]{1,256})@"#,
        keywords: &[cs("://", UserInfo)],
        before: 14,
        ..BASE
    },
    Rule {
        id: "url-credentials",
        title: "Credentials in a URL",
        description: "The password of `scheme://user:password@host` in any other URL (HTTP, git, FTP, SMTP, …), such as a git remote with a token in it.",
        regex: r#"\b[A-Za-z][A-Za-z0-9+.-]{0,20}://[^\s:@/'"<>\\]{0,128}:(?P<secret>[^\s@/'"<>\\]{1,256})@[^\s@/'"<>\\]"#,
        keywords: &[cs("://", UserInfo)],
        before: 22,
        checks: &[NotAllDigits],
        ..BASE
    },
    Rule {
        id: "connection-string-password",
        title: "Password in a connection string",
        description: "`Password=…;` in an ADO.NET/ODBC/JDBC connection string, and `password=` in a URL query.",
        regex: r##"(?i)(?:(?:^|[;\s"'])password[ \t]{0,2}=[ \t]{0,2}(?P<secret>[^;'"\s]{1,256})[ \t]{0,2};|[?&]passw(?:or)?d=(?P<secret2>[^&\s'"#;]{1,256}))"##,
        keywords: &[ci("passw", Assign(3, ANY))],
        before: 1,
        checks: &[NotHtmlEntity],
        ..BASE
    },
    Rule {
        id: "authorization-bearer",
        title: "Bearer token",
        description: "The token of an `Authorization: Bearer …` header (or any `Bearer <token>`).",
        regex: r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{16,})",
        keywords: &[ci("bearer", Spaced(Token, 16))],
        checks: &[Digit, Entropy(3.0)],
        ..BASE
    },
    Rule {
        id: "authorization-basic",
        title: "Basic auth credentials",
        description: "The base64 `user:password` of an `Authorization: Basic …` header.",
        regex: r#"(?i)\bauthorization[\s'"]{0,3}[:=][\s'"]{0,3}basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"#,
        keywords: &[ci("authorization", AuthBasic)],
        checks: &[BasicAuth],
        ..BASE
    },
    Rule {
        id: "docker-config-auth",
        title: "Registry credentials in a Docker config",
        description: "The base64 `user:password` of an `auth` member (`~/.docker/config.json`'s `\"auths\": {\"ghcr.io\": {\"auth\": …}}`, `.dockercfg`, a Kubernetes `dockerconfigjson`): it decodes to printable `user:password`.",
        regex: r#"(?i)\bauth(?:\\?['"])?[ \t]{0,3}[:=][ \t]{0,3}(?:\\?['"])?(?P<secret>[A-Za-z0-9+/]{12,}={0,2})"#,
        keywords: &[ci("auth", AssignWord(2, ANY))],
        checks: &[BasicAuth],
        ..BASE
    },
    Rule {
        id: "pgpass-password",
        title: "PostgreSQL .pgpass password",
        description: "The password of a `.pgpass` line (`host:port:database:user:password`, port 5432, 6432 or `*`), as a Read or `cat ~/.pgpass` shows it, its escaped `\\:` and `\\\\` included. A Read, Write or Edit of a file named `.pgpass` makes the password of its lines on any port a known secret of the session.",
        regex: r#"(?:^|\n|\\[nr]|")[ \t]*(?:\d{1,7}(?:→|\\u2192|\t|\\t)[ \t]*)?[A-Za-z0-9_.*-]{1,253}:(?:\d{2,5}|\*):[^:\s\\"]{1,63}:[^:\s\\"]{1,63}:(?P<secret>(?:[^\s\\":]|\\\\?[:\\]){4,256})(?:\\[nr]|[ \t]*(?:\r?\n|"|$))"#,
        keywords: &[cs(":5432:", Any), cs(":6432:", Any), cs(":*:", Any)],
        before: 300,
        checks: &[CliValue, NotAllDigits],
        ..BASE
    },
    Rule {
        id: "curl-user-password",
        title: "curl user password",
        description: "The password of `curl -u user:password` / `--user user:password` (parts quoted or not, across `\\` line continuations), and a token given as the user with an empty password (`-u \"token:\"`). A password equal to the user name (`neo4j:neo4j`, a product's default) is left alone.",
        regex: r#"\bcurl(?:\s(?:[^\n|;&]|\\\r?\n){0,400}?)?\s(?:-u|--user)(?:[ \t]+|=)['"]?(?:(?P<name>[^:\s'"<>]{0,128})['"]?:['"]?(?P<secret>[^\s'"<>`]{3,256})|(?P<secret2>[^:\s'"`]{8,256}):['"]?(?:\s|$))"#,
        keywords: &[cs("curl", CurlUser)],
        checks: &[NotAllDigits, NotName],
        ..BASE
    },
    Rule {
        id: "cli-password-flag",
        title: "Password flag on a command line",
        description: "The value of a `--password`/`--passwd`/`--pass`/`--pwd`/`--passphrase` flag (also `--db-password` and kin), as `--password=x`, `--password x` or quoted, in commands, scripts and their echoes. Metavariables (`--password PASSWORD`), references and placeholders are left alone.",
        regex: r#"(?i)(?:^|[\s'"`(=])--?(?P<name>(?:[a-z0-9]+-){0,4}(?:password|passwd|passphrase|pass|pwd))(?:=|[ \t]+)(?:'(?P<secret>[^'\n\r]{1,256})'|"(?P<secret2>[^"\n\r\\]{1,256})"|(?P<secret3>[^\s'"`;|&<>()\\]{1,256}))"#,
        keywords: &[ci("-pass", Flag(20)), ci("-pwd", Flag(0))],
        before: 48,
        checks: &[CliValue],
        ..BASE
    },
    Rule {
        id: "cli-secret-flag",
        title: "Token flag on a command line",
        description: "The value of a `--token` / `--api-key` / `--secret` / `--access-key` / `--auth-key` / `--bearer` flag (also `--github-token`, `--client-secret` and kin), as `--token x`, `--token=x` or quoted, when the value looks like a token or is a UUID-format key. Counts (`--max-tokens 4096`), `--token-file PATH`, metavariables and references are left alone.",
        regex: r#"(?i)(?:^|[\s'"`(=])--(?P<name>(?:[a-z0-9]+-){0,4}(?:token|api-?key|secret|access-?key|auth-?key|bearer))(?:=|[ \t]+)(?:'(?P<secret>[^'\n\r]{8,256})'|"(?P<secret2>[^"\n\r\\]{8,256})"|(?P<secret3>[^\s'"`;|&<>()\\]{8,256}))"#,
        keywords: &[
            ci("-token", Flag(0)),
            ci("-api-key", Flag(0)),
            ci("-apikey", Flag(0)),
            ci("-secret", Flag(0)),
            ci("-access-key", Flag(0)),
            ci("-accesskey", Flag(0)),
            ci("-auth-key", Flag(0)),
            ci("-authkey", Flag(0)),
            ci("-bearer", Flag(0)),
        ],
        before: 48,
        checks: &[SecretName, TokenLike],
        ..BASE
    },
    Rule {
        id: "cli-password-arg",
        title: "Password argument of a client tool",
        description: "The password given to a client tool: `mysql -pSecret` / `-p'x'` (MySQL, MariaDB tools), `sshpass -p x`, `redis-cli -a x`, `docker login -p x`, `gh secret set NAME --body x`, `htpasswd -b file user pass`.",
        regex: r#"\b(?:(?:mysql(?:dump|admin|import|show|check|pump|sh)?|mariadb(?:-dump|-admin)?)\b[^\n|;&]{0,300}?\s-p|sshpass(?:[ \t]{1,32}-[a-oq-zA-Z]\S*)*[ \t]{1,32}-p[ \t]{0,32}|redis-cli\b[^\n|;&]{0,300}?\s-a[ \t]{1,32}|docker login\b[^\n|;&]{0,300}?\s-p[ \t]{1,32}|gh[ \t]{1,32}secret[ \t]{1,32}set\b[^\n|;&]{0,300}?\s(?:--body|-b)(?:=|[ \t]{1,32})|htpasswd(?:[ \t]{1,32}-[a-zA-Z]+)*?[ \t]{1,32}-[a-zA-Z]*b[a-zA-Z]*(?:[ \t]{1,32}-[a-zA-Z]+)*(?:[ \t]{1,32}[^\s-]\S*){2}[ \t]{1,32})(?:'(?P<secret>[^'\n\r]{1,128})'|"(?P<secret2>[^"\n\r\\]{1,128})"|(?P<secret3>[^\s'"`;|&<>()\\]{1,128}))"#,
        keywords: &[cs("mysql", Any), cs("mariadb", Any), cs("sshpass", Any), cs("redis-cli", Any), cs("docker login", Any), cs("gh secret", Any), cs("htpasswd", Any)],
        checks: &[CliValue],
        ..BASE
    },
    Rule {
        id: "http-auth-header",
        title: "HTTP authorization header",
        description: "The credentials of an `Authorization:` / `Proxy-Authorization:` header of any scheme (`token`, `Bearer`, `Basic`, `Bot`, `Digest`, none) and of API-key headers (`X-Api-Key`, `PRIVATE-TOKEN`, `X-Auth-Token`, `X-…-Key`; after curl's `-H` any header named `Token`, `…apikey…`, `…-key…`, `…-token…` or `…-secret…`: `-H \"apikey: …\"`), in curl `-H` arguments, HTTP dumps, code and JSON header maps.",
        regex: r#"(?i)(?:\b(?:proxy-)?authorization[\s'"]{0,3}[:=][\s'"]{0,3}(?:[A-Za-z][\w-]{1,24}[ \t]{1,32})?(?P<secret>[\w.~+/=:-]{8,})|\b(?P<name>x-[\w-]{0,40}?(?:key|token|secret)|(?:private|job|deploy)-token|ocp-apim-subscription-key)[\s'"]{0,3}:[ \t'"]{0,3}(?P<secret2>[\w.~+/=-]{8,})|(?:^|\s)(?:-H|--header)[ \t]{1,32}['"]?(?:[\w-]{0,40}?(?:-key|-token|-secret|apikey)|token)[\w-]{0,20}[ \t]{0,2}:[ \t]{0,3}(?P<secret3>[\w.~+/=-]{8,}))"#,
        keywords: &[ci("authorization", Assign(0, ANY)), ci("-key", Assign(0, ANY)), ci("-token", Assign(0, ANY)), ci("-secret", Assign(0, ANY)), ci("apikey", Assign(20, ANY)), ci("token", AssignWord(20, ANY))],
        before: 60,
        checks: &[TokenLike],
        field: true,
        ..BASE
    },
    Rule {
        id: "netrc-password",
        title: ".netrc password",
        description: "The password of a `.netrc` entry (the word after `password` in `machine … login … password …`), as used by curl, git and Heroku.",
        regex: r#"\bmachine[ \t]{1,32}\S{1,100}(?:\s{1,20}login[ \t]{1,32}\S{1,100})?\s{1,20}password[ \t]{1,32}(?P<secret>[^\s'"]{1,256})"#,
        keywords: &[cs("password", Flag(0))],
        before: 260,
        checks: &[CliValue],
        ..BASE
    },
    Rule {
        id: "crypto-mnemonic",
        title: "Wallet recovery phrase",
        description: "A BIP-39 style mnemonic (12–24 words) assigned to a `MNEMONIC`, `SEED_PHRASE` or `RECOVERY_PHRASE` variable.",
        regex: r#"(?i:mnemonic|(?:seed|recovery|secret)[_ .-]?phrase)[\w.-]{0,20}[\s'"]{0,3}(?:=|:=|=>|:)[\s'"`]{0,5}(?P<secret>(?:[a-z]{3,8}[ \t]){11,23}[a-z]{3,8})\b"#,
        keywords: &[ci("mnemonic", Assign(24, Of(Alnum, 3))), ci("phrase", Assign(24, Of(Alnum, 3)))],
        before: 10,
        field: true,
        ..BASE
    },
    Rule {
        id: "env-secret-assignment",
        title: "Secret in an environment assignment",
        description: "A `.env`-style assignment of a secret-named upper-case variable (`DB_PASSWORD=…`, `export STRIPE_KEY=…`, `SMTP_PASS=…`). Names for non-secrets (`…_ID`, `…_URL`, `…_FILE`, `PUBLIC_…`, `MAX_TOKENS`) and references (`$VAR`, `${VAR}`, paths) are left alone.",
        regex: r#"\b(?P<name>[A-Z0-9_]{0,60}?(?:SECRET|PASSWORD|PASSWD|TOKEN|BEARER|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?|AUTH_?KEY|_PASS|_PWD|_KEY)[A-Z0-9_]{0,40})[ \t]{0,2}=[ \t]{0,2}['"]?(?P<secret>[^\s'"`;|&<>(),\\]{4,512})"#,
        keywords: &[
            cs("SECRET", Assign(40, ENV)),
            cs("PASSW", Assign(44, ENV)),
            cs("TOKEN", Assign(40, ENV)),
            cs("_KEY", Assign(40, ENV)),
            cs("APIKEY", Assign(40, ENV)),
            cs("ACCESSKEY", Assign(40, ENV)),
            cs("PRIVATEKEY", Assign(40, ENV)),
            cs("AUTHKEY", Assign(40, ENV)),
            cs("CREDENTIAL", Assign(41, ENV)),
            cs("BEARER", Assign(40, ENV)),
            cs("_PASS", Assign(40, ENV)),
            cs("_PWD", Assign(40, ENV)),
        ],
        before: 72,
        checks: &[SecretName, EnvValue],
        ..BASE
    },
    Rule {
        id: "generic-high-entropy",
        title: "High-entropy secret assignment",
        description: "A value assigned to a secret-named variable, key or JSON member in any style (YAML, INI, TOML, JSON, `.env`, Python, JS, Ruby; also in Read output, grep output and diff lines): a quoted literal or a value ending its line counts by its name (passwords from 4 characters), a value inside code must look random (letters and digits, 12+ characters, entropy ≥ 3.5). Placeholders, references (`$VAR`, `os.environ[…]`, `ENV.fetch(…)`), calls, identifiers, numbers and type names are left alone.",
        regex: r#"(?i)(?P<name>[\w.-]{0,40}?(?:(?:secret|passw(?:or)?d|passphrase|api[_.-]?key|access[_.-]?key|auth[_.-]?key|private[_.-]?key|credentials?|bearer)[\w.-]{0,30}|token(?:(?-i:[A-Z0-9_.-])[\w.-]{0,29})?|pass(?:(?-i:[A-Z0-9_.-])[\w.-]{0,29})?))(?:[ \t]{1,2}&?str(?:ing)?)?(?:[\s'"\]\\]{0,4}(?:=|:{1,3}=|=>|:|\?\??=|\|\|=|\.=)|['"][ \t]{0,2},)(?:[ \t]{0,3}(?:"(?P<secret>[^"\\\n\r]{4,512})"|'(?P<secret2>[^'\\\n\r]{4,512})'|`(?P<secret3>[^`\\\n\r]{4,512})`|\\"(?P<secret4>[^"\\\n\r]{4,512})\\")|[ \t'"`\\]{0,6}(?P<secret5>[A-Za-z0-9+/=_.~!@#%^*-][A-Za-z0-9+/=_.~!@#%^*$?-]{3,511}))"#,
        keywords: &[
            ci("secret", Assign(30, GEN)),
            ci("passw", Assign(33, GEN)),
            // `smtp_pass:`, `admin_pass =`: the bare word, never `passage` or `passed`.
            ci("pass", AssignWord(30, GEN)),
            ci("passphrase", Assign(30, GEN)),
            ci("token", AssignWord(30, GEN)),
            ci("apikey", Assign(30, GEN)),
            ci("api_key", Assign(30, GEN)),
            ci("api-key", Assign(30, GEN)),
            ci("api.key", Assign(30, GEN)),
            ci("accesskey", Assign(30, GEN)),
            ci("access_key", Assign(30, GEN)),
            ci("access-key", Assign(30, GEN)),
            ci("access.key", Assign(30, GEN)),
            ci("authkey", Assign(30, GEN)),
            ci("auth_key", Assign(30, GEN)),
            ci("auth-key", Assign(30, GEN)),
            ci("auth.key", Assign(30, GEN)),
            ci("privatekey", Assign(30, GEN)),
            ci("private_key", Assign(30, GEN)),
            ci("private-key", Assign(30, GEN)),
            ci("private.key", Assign(30, GEN)),
            ci("credential", Assign(31, GEN)),
            ci("bearer", Assign(30, GEN)),
        ],
        before: 52,
        checks: &[SecretName, GenericValue],
        field: true,
        ..BASE
    },
    Rule {
        id: "prose-secret",
        title: "Secret in prose",
        description: "A token-like word (letters and digits, 8+ characters, 6+ after a password word) within five words after a credential word in prose: \"the password is Tulip4471!harbor\", \"the key is set to Rq8vLz2WmN5kTb3Y\", \"the bearer is set to …\", \"token: …\". Hashes, uuids, versions, dates, paths, e-mails and URLs are left alone.",
        regex: r#"(?i)\b(?P<name>password|passphrase|passcode|secret|token|key|bearer|credentials?)s?\b(?:[ \t]{0,32}[:=]|[ \t]{1,32}(?:\S{1,20}[ \t]{1,32}){0,5}?(?:is|was|are|were|=|:|to|as|be|reads?)(?:[ \t]{0,32}:)?)[ \t]{1,32}['"`(]?(?P<secret>[A-Za-z!@#$%^&*+=/~_-]{0,40}\d(?:[\w!@#$%^&*+=/~.-]{0,100}[\w!@#$%^&*+=/~-])?)(?:['"`)]?[.,;:!?]{0,2}(?:\s|$))"#,
        keywords: &[ci("password", Prose(170)), ci("passphrase", Prose(170)), ci("passcode", Prose(170)), ci("secret", Prose(170)), ci("token", Prose(170)), ci("key", Prose(170)), ci("bearer", Prose(170)), ci("credential", Prose(170))],
        checks: &[ProseValue],
        ..BASE
    },
];

/// Google API keys printed in Firebase's public Android SDK sources (examples and test
/// fixtures): published, so not secrets, like AWS's `…EXAMPLE` keys.
const FIREBASE_SDK_EXAMPLE_KEYS: &[&str] = &[
    "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
    "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
    "AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
    "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
    "AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
    "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
    "AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
    "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
    "AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
    "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
    "AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
    "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
    "AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
    "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
    "AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
    "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
];

/// Look up a built-in rule by id.
pub fn find(id: &str) -> Option<&'static Rule> {
    RULES.iter().find(|r| r.id == id)
}
