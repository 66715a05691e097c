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

/// A user record answering tool call `t{i}` with `text`, its `toolUseResult` `extra` (a Read's
/// `file`, an Edit's `structuredPatch`).
fn tool_result_with(i: usize, text: &str, extra: Value) -> String {
    json!({"type": "user", "uuid": format!("r{i}"), "parentUuid": null,
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": text}]},
        "toolUseResult": extra})
    .to_string()
}

/// Issue #25, item 12 (round 3): a single letter of a token percent-encoded (`ghp_ab%63d…`, a
/// URL encoder that escapes more than it must), a `%XX` encoded three times (`%25255F`).
/// Ordinary percent-encoded URLs (`%20`, UTF-8 `%C3%A9`, `%2F` between path words) and a
/// letter encoded where no token is (`q=%41BC`) stay byte for byte.
#[test]
fn percent_encoded_letters_and_triple_encoding() {
    let (gh1, gh2, aws) = (gh_body(60), gh_body(61), aws_body(62));
    let cases = [
        secret(
            "github-pat",
            &format!("ghp_{}%{:02X}{}", &gh1[..2], gh1.as_bytes()[2], &gh1[3..]),
            |s| {
                user(
                    0,
                    &format!("POST https://hooks.example.com/v1/{s}/deliveries"),
                )
            },
        ),
        secret("github-pat", &format!("ghp%25255F{gh2}"), |s| {
            user(
                1,
                &format!("redirect=https%3A%2F%2Fx.example%2F%3Ft%3D{s}&z=1"),
            )
        }),
        secret("aws-access-key-id", &format!("%252541KIA{aws}"), |s| {
            tool_use(
                2,
                "Bash",
                json!({"command": format!("curl 'https://x.example/?id={s}'")}),
            )
        }),
        alike(user(
            3,
            "https://x.example/caf%C3%A9/a%20b?q=%41BC&p=docs%2Fintro%2Fsetup&r=50%25&s=%2525",
        )),
        alike(user(4, "the query was ab%63de%66gh and 100%25 done")),
    ];
    run(&cases);
}

/// An entity by number without its `;` (`&#65KIA…`, which browsers read), one escaped once
/// more (`&amp;#65;KIA…`), and entities and percent-encoding mixed (`ghp&#37;5F…` reads
/// `ghp%5F…`, then `ghp_…`; `ghp%26%2395%3B…` reads `ghp&#95;…`, then `ghp_…`). Entities in
/// prose stay byte for byte.
#[test]
fn entities_without_semicolon_escaped_twice_or_mixed_with_percent() {
    let (a1, a2, g1, g2) = (aws_body(63), aws_body(64), gh_body(65), gh_body(66));
    let cases = [
        secret("aws-access-key-id", &format!("&#65KIA{a1}"), |s| {
            user(0, &format!("aws_access_key_id: {s} (from the page)"))
        }),
        secret("aws-access-key-id", &format!("&amp;#65;KIA{a2}"), |s| {
            user(1, &format!("<pre>key: {s}</pre>"))
        }),
        secret("github-pat", &format!("ghp&#37;5F{g1}"), |s| {
            user(2, &format!("token {s} end"))
        }),
        secret("github-pat", &format!("ghp%26%2395%3B{g2}"), |s| {
            user(3, &format!("GET /cb?t={s}&x=1"))
        }),
        alike(user(
            4,
            "AT&amp;T &#169 2024 &amp;#169; &#38;amp; Tom &amp; Jerry &#8212 q=%26%2338%3B x",
        )),
    ];
    run(&cases);
}

/// Empty splices inside a token: a template's `${ "" }` with blanks, a shell `''` or `""`
/// splice (`gh''p_…`, `'ghp_ab''cd…'`, `"ghp_ab""cd…"`), and C's or the shell's adjacent
/// literals (`"gh" "p_…"`). Shell quoting and C strings without a token stay byte for byte.
#[test]
fn empty_splices_and_adjacent_literals_inside_a_token() {
    let (g0, g1, g2, g3, g4) = (
        gh_body(70),
        gh_body(71),
        gh_body(72),
        gh_body(73),
        gh_body(74),
    );
    let cases = [
        secret(
            "github-pat",
            &format!("ghp_{}${{ \"\" }}{}", &g0[..9], &g0[9..]),
            |s| user(0, &format!("const t = `{s}`;")),
        ),
        secret("github-pat", &format!("gh''p_{g1}"), |s| {
            tool_use(
                1,
                "Bash",
                json!({"command": format!("echo {s} | gh auth login --with-token")}),
            )
        }),
        secret(
            "github-pat",
            &format!("ghp_{}''{}", &g2[..7], &g2[7..]),
            |s| {
                tool_use(
                    2,
                    "Bash",
                    json!({"command": format!("echo '{s}' | gh auth login --with-token")}),
                )
            },
        ),
        secret(
            "github-pat",
            &format!("ghp_{}\"\"{}", &g3[..12], &g3[12..]),
            |s| {
                tool_use(
                    3,
                    "Bash",
                    json!({"command": format!("echo \"{s}\" | gh auth login --with-token")}),
                )
            },
        ),
        secret("github-pat", &format!("gh\" \"p_{g4}"), |s| {
            tool_use(
                4,
                "Write",
                json!({"file_path": "/app/t.c", "content": format!("static const char *t = \"{s}\";\n")}),
            )
        }),
        alike(tool_use(
            5,
            "Bash",
            json!({"command": "echo 'it''s' \"a\"\"b\" '' \"\" x=''; printf \"%s\" \"\\n\"; echo ${ \"\" }"}),
        )),
        alike(tool_use(
            6,
            "Write",
            json!({"file_path": "/app/m.c", "content": "puts(\"hello\" \"world\");\nconst s = `a${ \"\" }b`;\n"}),
        )),
    ];
    run(&cases);
}

/// A backslash-newline continuation inside a token, in a Bash command and in the two lines of
/// an Edit's `structuredPatch` that the continuation wraps it over. Continuations between
/// words stay byte for byte.
#[test]
fn backslash_newline_inside_a_token() {
    let (g0, g1) = (gh_body(75), gh_body(76));
    let (p1, p2) = g1.split_at(14);
    let cases = [
        secret(
            "github-pat",
            &format!("ghp_{}\\\n{}", &g0[..15], &g0[15..]),
            |s| {
                tool_use(
                    0,
                    "Bash",
                    json!({"command": format!("echo {s} | gh auth login --with-token")}),
                )
            },
        ),
        Case {
            line: tool_result_with(
                1,
                "The file /app/login.sh has been updated.",
                json!({"filePath": "/app/login.sh", "structuredPatch": [{"oldStart": 1,
                    "oldLines": 1, "newStart": 1, "newLines": 3, "lines": [" #!/bin/sh",
                    format!("+echo ghp_{p1}\\"), format!("+{p2} | gh auth login --with-token")]}]}),
            ),
            want: tool_result_with(
                1,
                "The file /app/login.sh has been updated.",
                json!({"filePath": "/app/login.sh", "structuredPatch": [{"oldStart": 1,
                    "oldLines": 1, "newStart": 1, "newLines": 3, "lines": [" #!/bin/sh",
                    "+echo [REDACTED:github-pat]", "+[REDACTED:github-pat] | gh auth login --with-token"]}]}),
            ),
        },
        alike(tool_use(
            2,
            "Bash",
            json!({"command": "curl -X POST \\\n  -H 'Accept: a/b' \\\n  https://x.example/v1/items"}),
        )),
    ];
    run(&cases);
}

/// A token spelled in full-width letters (U+FF01–U+FF5E), as a CJK input method types it: it
/// is read width-folded. Full-width punctuation and a short full-width word in CJK prose stay
/// byte for byte.
#[test]
fn full_width_letters_spelling_a_token() {
    let wide = |s: &str| -> String {
        s.chars()
            .map(|c| char::from_u32(c as u32 + 0xFEE0).unwrap())
            .collect()
    };
    let (g, a) = (gh_body(77), aws_body(78));
    let cases = [
        secret("github-pat", &wide(&format!("ghp_{g}")), |s| {
            user(0, &format!("令牌是 {s} 。"))
        }),
        secret("aws-access-key-id", &wide(&format!("AKIA{a}")), |s| {
            user(1, &format!("aws_access_key_id: {s}"))
        }),
        alike(user(
            2,
            "你好，世界！（ＡＢＣ）：ＯＫ　ｔｅｓｔ１２３ “ｑｕｏｔｅ” １０％",
        )),
    ];
    run(&cases);
}

/// A base64 body from a 64-character-line PEM block without its BEGIN/END lines, as an Edit's
/// `old_string` holds it: a PKCS#1 RSA key (`MII…IBAAK…`) and an encrypted PKCS#8 key
/// (`MII…BgkqhkiG9w0BBQ0w`, PBES2). A certificate's and a public key's bodies are no secrets
/// and stay byte for byte.
#[test]
fn private_key_body_without_its_pem_lines() {
    let b64 = ALNUM.to_string() + "+/";
    let lines = |head: &str, seed: u64| -> String {
        let all = head.to_string() + &mixed(&b64, 64 * 4 - head.len(), seed);
        // Four lines of 64, then a short last line.
        let mut out: Vec<&str> = all
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let last = mixed(&b64, 20, seed + 1) + "==";
        out.push(&last);
        out.join("\n")
    };
    let edit = |i: usize, old: &str| {
        tool_use(
            i,
            "Edit",
            json!({"file_path": "/app/deploy.yaml", "old_string": format!("{old}\n"), "new_string": "${KEY_FROM_VAULT}\n"}),
        )
    };
    let cases = [
        secret("private-key-body", &lines("MIIEowIBAAKCAQEA", 80), |s| {
            edit(0, s)
        }),
        secret(
            "private-key-body",
            &lines("MIIFLTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI", 81),
            |s| edit(1, s),
        ),
        alike(edit(2, &lines("MIIC+TCCAeGgAwIBAgIU", 82))),
        alike(edit(
            3,
            &lines("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 83),
        )),
    ];
    run(&cases);
}

/// `.pgpass` lines: in a Read of a file named `.pgpass` on any port (`:5433:`), and a password
/// holding an escaped `\:` (the whole password goes, not what follows the last colon).
/// The file's comment line stays.
#[test]
fn pgpass_lines_on_any_port_and_with_escaped_colons() {
    let (pw1, pw2) = (mixed(ALNUM, 14, 84) + "7", mixed(ALNUM, 12, 85) + "3");
    let read = |i: usize, pw: &str| {
        let body = format!(
            "# hostname:port:database:username:password\ndb.example.com:5433:app:alice:{pw}\n"
        );
        let shown: String = body
            .lines()
            .enumerate()
            .map(|(n, l)| format!("{:>6}\u{2192}{l}\n", n + 1))
            .collect();
        tool_result_with(
            i,
            &shown,
            json!({"type": "text", "file": {"filePath": "/home/u/.pgpass", "content": body,
                "numLines": 2, "startLine": 1, "totalLines": 2}}),
        )
    };
    let escaped = format!("{}\\:{}", &pw2[..5], &pw2[5..]);
    let cases = [
        Case {
            line: read(0, &pw1),
            want: read(0, "[REDACTED:known-value]"),
        },
        secret("pgpass-password", &escaped, |s| {
            tool_result(1, &format!("db.internal:5432:app:bob:{s}\n"))
        }),
        alike(read(2, "")),
    ];
    run(&cases);
}
