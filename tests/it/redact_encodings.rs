//! Issue #25, item R2/12: secrets encoded or cut into pieces the way code and web pages write
//! them — HTML entities, a URL encoded twice, `join()` of pieces, `+` across a line break,
//! Python's implicit concatenation, template literals. `check` reports each, and `redact`
//! replaces the whole secret, pieces and joiners included, and changes no other byte; look-alikes
//! (a join of words, entities in prose) stay byte for byte, and a second run changes nothing.
//!
//! Fake secrets are built at run time, so no token-shaped literal sits in the source.

use serde_json::{json, Value};

use crate::common::cchist;

/// `n` characters of `alphabet`, mixed by a fixed LCG: a token body that looks random to the
/// rules' entropy checks.
fn mixed(alphabet: &str, n: usize, seed: u64) -> String {
    let a: Vec<char> = alphabet.chars().collect();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            a[((x >> 33) % a.len() as u64) as usize]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// The body of a fake GitHub token (it is `ghp_` and this).
fn gh_body(seed: u64) -> String {
    mixed(ALNUM, 36, seed)
}

/// The body of a fake AWS access key id (it is `AKIA` and this).
fn aws_body(seed: u64) -> String {
    mixed("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16, seed)
}

/// The body of a fake Anthropic key (it is `sk-ant-api03-` and this).
fn ant_body(seed: u64) -> String {
    mixed(&(ALNUM.to_string() + "-_"), 93, seed) + "AA"
}

/// A user record whose content is `content`.
fn user(i: usize, content: &str) -> String {
    json!({"type": "user", "uuid": format!("u{i}"), "parentUuid": null,
        "message": {"role": "user", "content": content}})
    .to_string()
}

/// An assistant record calling `tool` with `input`.
fn tool_use(i: usize, tool: &str, input: Value) -> String {
    json!({"type": "assistant", "uuid": format!("a{i}"), "parentUuid": null,
        "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": tool, "input": input}]}})
    .to_string()
}

/// A user record answering tool call `t{i}` with `text`.
fn tool_result(i: usize, text: &str) -> String {
    json!({"type": "user", "uuid": format!("r{i}"), "parentUuid": null,
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": text}]}})
    .to_string()
}

/// One line of a case: the line as written, and what `redact` must make of it (the line
/// itself for a look-alike, which `check` must not report either).
struct Case {
    line: String,
    want: String,
}

/// A line holding a secret: `make(piece)` is the line, with the secret's encoded form as
/// `piece`; `redact` must write `make("[REDACTED:rule]")`.
fn secret(rule: &str, encoded: &str, make: impl Fn(&str) -> String) -> Case {
    Case {
        line: make(encoded),
        want: make(&format!("[REDACTED:{rule}]")),
    }
}

/// A line nothing must change.
fn alike(line: String) -> Case {
    Case {
        want: line.clone(),
        line,
    }
}

/// Write the cases as one file; `check` reports exactly the lines that hold a secret, and
/// `redact` gives each line its `want`; redacting that output again changes nothing.
fn run(cases: &[Case]) {
    let text: String = cases.iter().map(|c| c.line.clone() + "\n").collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, &text).unwrap();
    let check = cchist()
        .args(["check", "--json"])
        .arg(&file)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&check.stdout).unwrap();
    let mut found: Vec<u64> = report["files"][0]["findings"]
        .as_array()
        .map(|a| a.iter().map(|f| f["line"].as_u64().unwrap()).collect())
        .unwrap_or_default();
    found.sort();
    found.dedup();
    let want: Vec<u64> = (1..=cases.len() as u64)
        .filter(|&n| {
            let c = &cases[n as usize - 1];
            c.line != c.want
        })
        .collect();
    assert_eq!(found, want, "lines check reports");
    let out = cchist().arg("redact").arg(&file).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = String::from_utf8(out.stdout).unwrap();
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got.len(), cases.len());
    for (i, (g, c)) in got.iter().zip(cases).enumerate() {
        assert_eq!(*g, c.want, "line {} redacted as wanted", i + 1);
    }
    let again = dir.path().join("t.jsonl");
    std::fs::write(&again, &out).unwrap();
    let out2 = cchist().arg("redact").arg(&again).output().unwrap();
    assert_eq!(String::from_utf8(out2.stdout).unwrap(), out, "a second run");
}

/// `&#65;KIA…`, `ghp&#95;…`, `ghp&#x5f;…`: an entity inside a token; `&quot;Bearer …&quot;`,
/// `&lt;…&gt;`, `password=&quot;…&quot;`: entities around one (the entity is no password).
#[test]
fn html_entities_inside_or_around_a_token() {
    let (aws, gh1, gh2, gh3, gh4) = (aws_body(1), gh_body(2), gh_body(3), gh_body(4), gh_body(5));
    let pw = mixed(ALNUM, 18, 6) + "7";
    let cases = [
        secret(
            "aws-access-key-id",
            &format!("&#65;KIA{aws}"),
            |s| user(0, &format!("aws_access_key_id: {s} (from the page)")),
        ),
        secret("github-pat", &format!("ghp&#95;{gh1}"), |s| {
            user(1, &format!("<code>{s}</code>"))
        }),
        secret("github-pat", &format!("ghp&#x5f;{gh2}"), |s| {
            user(2, &format!("token {s}"))
        }),
        secret("github-pat", &format!("ghp_{gh3}"), |s| {
            user(3, &format!("-H &quot;Authorization: Bearer {s}&quot;"))
        }),
        secret("github-pat", &format!("ghp_{gh4}"), |s| {
            user(4, &format!("&lt;{s}&gt;"))
        }),
        secret("generic-high-entropy", &pw, |s| {
            user(5, &format!("config: password=&quot;{s}&quot;"))
        }),
        alike(user(
            6,
            "Tom &amp; Jerry &#8212; &lt;b&gt;bold&lt;/b&gt; &quot;quoted&quot; &#65;BC &apos;x&apos;",
        )),
        alike(user(7, "password=&quot;&quot; and &#112;assword")),
        // The entity hides the name a rule looks for: `api_key = "…"` as it reads.
        secret("generic-high-entropy", &pw, |s| {
            user(9, &format!("api&#95;key = &quot;{s}&quot;"))
        }),
        // Tool output of a fetched page, with the entity in a plain-text line of its own.
        secret("github-pat", &format!("ghp&#95;{}", gh_body(8)), |s| {
            format!("fetched: {s} end")
        }),
    ];
    run(&cases);
}

/// `%255F` reads `%5F`, then `_`; `%2541` reads `%41`, then `A`: a token in a URL query
/// encoded twice.
#[test]
fn double_percent_encoding() {
    let (gh, aws) = (gh_body(10), aws_body(11));
    let cases = [
        secret("github-pat", &format!("ghp%255F{gh}"), |s| {
            user(
                0,
                &format!("GET https://ci.example.com/hook?next=%2Fapi%3Ftoken%3D{s}&x=1"),
            )
        }),
        secret("aws-access-key-id", &format!("%2541KIA{aws}"), |s| {
            tool_use(
                1,
                "Bash",
                json!({"command": format!("curl 'https://x.example/?id={s}&y=2'")}),
            )
        }),
        alike(user(2, "https://x.example/?q=a%2520b%252Fc%2541&r=%255F")),
    ];
    run(&cases);
}

/// `["ghp_", "…"].join("")` (JavaScript) and `"".join(["AKIA", "…"])` (Python).
#[test]
fn join_of_pieces() {
    let (gh, aws) = (gh_body(20), aws_body(21));
    let (g1, g2) = gh.split_at(17);
    let cases = [
        secret("github-pat", &format!("ghp_\", \"{g1}\", \"{g2}"), |s| {
            tool_use(
                0,
                "Write",
                json!({"file_path": "/app/t.js", "content": format!("const t = [\"{s}\"].join(\"\");\nmodule.exports = t;\n")}),
            )
        }),
        secret("aws-access-key-id", &format!("AKIA', '{aws}"), |s| {
            tool_use(
                1,
                "Bash",
                json!({"command": format!("python3 -c \"k = ''.join(['{s}'])\"")}),
            )
        }),
        secret("aws-access-key-id", &format!("AKIA\", \"{aws}"), |s| {
            user(2, &format!("key = \"\".join([\"{s}\"])"))
        }),
        alike(user(
            3,
            "print(\", \".join([\"alpha\", \"beta\"])); [\"foo\", \"bar\"].join(\"\")",
        )),
        alike(user(
            4,
            "\"\".join([\"ghp_\", \"short\"]) and [\"AKIA\", \"ABC\"].join(\"\")",
        )),
    ];
    run(&cases);
}

/// `"sk-ant-api03-" +\n  "…"`: `+` and a line break between the pieces, in a Write's content
/// and a Bash command (the line break a JSON `\n`).
#[test]
fn plus_across_a_line_break() {
    let (ant, gh) = (ant_body(30), gh_body(31));
    let cases = [
        secret(
            "anthropic-api-key",
            &format!("sk-ant-api03-\" +\n  \"{ant}"),
            |s| {
                tool_use(
                    0,
                    "Write",
                    json!({"file_path": "/app/k.js", "content": format!("const k = \"{s}\";\n")}),
                )
            },
        ),
        secret("github-pat", &format!("ghp_' +\n    '{gh}"), |s| {
            tool_use(
                1,
                "Bash",
                json!({"command": format!("node -e \"const t = '{s}'; go(t)\"")}),
            )
        }),
        alike(tool_use(
            2,
            "Write",
            json!({"file_path": "/app/m.js", "content": "const msg = \"hello \" +\n  \"world\";\nconst n = 'a' +\n 'b';\n"}),
        )),
        // As Read shows the file: a line number before each line.
        secret(
            "anthropic-api-key",
            &format!("sk-ant-api03-\" +\n     2\u{2192}  \"{}", ant_body(32)),
            |s| tool_result(3, &format!("     1\u{2192}const k = \"{s}\";\n")),
        ),
        alike(tool_result(
            4,
            "     1\u{2192}const msg = \"hello \" +\n     2\u{2192}  \"world\";\n",
        )),
    ];
    run(&cases);
}

/// `"AKIA" "…"` on one line, and pieces on lines of their own inside parentheses.
#[test]
fn python_implicit_concatenation() {
    let (aws, gh) = (aws_body(40), gh_body(41));
    let cases = [
        secret("aws-access-key-id", &format!("AKIA\" \"{aws}"), |s| {
            user(0, &format!("k = \"{s}\""))
        }),
        secret(
            "github-pat",
            &format!("ghp_\"\n    \"{}\"\n    \"{}", &gh[..20], &gh[20..]),
            |s| {
                tool_use(
                    1,
                    "Write",
                    json!({"file_path": "/app/k.py", "content": format!("TOKEN = (\n    \"{s}\"\n)\n")}),
                )
            },
        ),
        // The token's start written `\u0041` in the file: the escape hid it from the prefilter.
        Case {
            line: user(4, &format!("k = (\n  \"AKIA\"\n  \"{}\"\n)", aws_body(42)))
                .replace("AKIA", "\\u0041KIA"),
            want: user(4, "k = (\n  \"[REDACTED:aws-access-key-id]\"\n)"),
        },
        alike(user(2, "print(\"hello\" \"world\")")),
        alike(tool_use(
            3,
            "Write",
            json!({"file_path": "/app/m.py", "content": "MSG = (\n    \"first part \"\n    \"second part\"\n)\n"}),
        )),
    ];
    run(&cases);
}

/// `` `ghp_${""}…` `` and `` `AKIA` + `…` ``.
#[test]
fn template_literal_pieces() {
    let (gh, aws) = (gh_body(50), aws_body(51));
    let cases = [
        secret("github-pat", &format!("ghp_${{\"\"}}{gh}"), |s| {
            user(0, &format!("const t = `{s}`;"))
        }),
        secret("aws-access-key-id", &format!("AKIA` + `{aws}"), |s| {
            tool_use(
                1,
                "Write",
                json!({"file_path": "/app/a.js", "content": format!("const k = `{s}`;\n")}),
            )
        }),
        alike(user(2, "const s = `hello ${name}` + `world`; `a${\"\"}b`")),
    ];
    run(&cases);
}
