use super::*;
use crate::stages::redact::rules::Val;

fn conf(c: Confirm, t: &[u8], after: &str, raw: bool) -> bool {
    let end = memchr::memmem::find(t, after.as_bytes()).unwrap() + after.len();
    confirm(c, t, end - after.len(), end, raw, true)
}

#[test]
#[ignore = "slow: every line of tests/corpus through the scalar model (2 min in debug)"]
fn slow_prefilter_candidates_stay_few_on_transcripts() {
    // With nibble masks, 23 193 candidates for 6 062 occurrences in 3.6 MB (placed by the
    // byte-table model, about three times as many).
    const NIBBLE_BOUND: usize = 5;
    // Which anchors share a bucket decides how many positions the one-pass filter hands
    // on: placed in sorted order, `sig=`, `whse` and `xai-` shared one and every `sage` of
    // `message` was a candidate. Count on the repository's transcripts.
    let e = &crate::stages::redact::default_redactor().engine;
    let Some(td) = &e.fused else {
        return; // no AVX2: the passes, which have no buckets
    };
    struct Count(usize);
    impl teddy::Sink for Count {
        fn teddy(&mut self, _: usize, _: usize) {
            self.0 += 1;
        }
    }
    let (mut cands, mut real, mut bytes, mut nibble_cands) = (0, 0, 0, 0);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for f in std::fs::read_dir(&d).unwrap() {
            let p = f.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                let data = std::fs::read(&p).unwrap();
                for line in data.split(|&b| b == b'\n') {
                    let exact = td.count_exact(line);
                    // What this CPU's path reports: with the byte tables, the scalar model; with
                    // AVX2, nibble masks, which also accept the cross product of a bucket's
                    // nibbles (placed for that: 1.45 M candidates in 60 MB before, 0.46 M after).
                    let mut simd = Count(0);
                    td.scan(line, &mut simd);
                    if td.vbmi {
                        assert_eq!(simd.0, exact);
                    }
                    cands += exact;
                    nibble_cands += simd.0;
                    real += e
                        .anchors
                        .iter()
                        .map(|an| line.windows(an.len()).filter(|w| folded_eq(w, an)).count())
                        .sum::<usize>();
                    bytes += line.len();
                }
            }
        }
    }
    // 8 884 candidates for 5 178 occurrences in 3.6 MB (17 361 placed in sorted order).
    assert!(bytes > 1 << 20, "the corpus is there");
    // The anchors are placed for this CPU's path: the bound is that path's.
    let (path, cands, bound) = if td.vbmi {
        ("byte tables", cands, 2)
    } else {
        ("nibble masks", nibble_cands, NIBBLE_BOUND)
    };
    assert!(
        cands <= bound * real,
        "{path}: {cands} candidates for {real} occurrences in {bytes} bytes"
    );
}

#[test]
fn prose_keywords_start_a_word() {
    // The rule's `\b` before the keyword: a name part is not prose about a token.
    let p = Confirm::Prose(170);
    assert!(conf(p, b"the token is ab12cd34ef", "token", false));
    assert!(!conf(p, b"input_tokens: 12345678", "token", false));
    assert!(!conf(p, b"csrfToken = x1234567", "Token", false));
    // On a raw line the byte before may be an escape's: `\n`, `\u00e9` decode to a
    // boundary (`\\n` does not, but is left to the regex).
    assert!(conf(p, br"a\ntoken: ab12cd34ef", "token", true));
    assert!(conf(p, br"\u00e9token: ab12cd34ef", "token", true));
    assert!(!conf(p, br"my_token: ab12cd34ef", "token", true));
}

#[test]
fn confirm_tail_and_escapes() {
    use super::super::rules::Class::Alnum;
    assert!(conf(Confirm::Tail(Alnum, 4), b"ghp_abcd", "ghp_", false));
    assert!(!conf(Confirm::Tail(Alnum, 4), b"ghp_abc ", "ghp_", false));
    assert!(conf(
        Confirm::Tail(Alnum, 4),
        br"ghp_ab\u0063d",
        "ghp_",
        true
    ));
    assert!(!conf(
        Confirm::Tail(Alnum, 4),
        br#"ghp_ab\"cd"#,
        "ghp_",
        true
    ));
    assert!(!conf(Confirm::Tail(Alnum, 4), b"ghp_ab", "ghp_", false));
    assert!(!conf(
        Confirm::Tail(Alnum, 4),
        br#"ghp_ab"cd"#,
        "ghp_",
        true
    ));
}

#[test]
fn confirm_assign() {
    let raw = br#"{"input_tokens":123,"api_key":"x","a":"TOKEN= y","b":"my_token","c":"token is","d":"{\"n_tokens\": 5}","e":"{\"the_token\": \"v\"}"}"#;
    let a = |after: &str| conf(Confirm::Assign(30, Val::Any), raw, after, true);
    assert!(!a("input_token"), "a key with a number value");
    assert!(a("api_key"), "a key with a string value");
    assert!(a("TOKEN"), "an assignment inside a value");
    assert!(!a("my_token"), "the string ends");
    assert!(
        !a("token is"[..5].trim_end()) || !a("c\":\"token"),
        "no operator"
    );
    assert!(!a("n_token"), "escaped JSON text with a number value");
    assert!(a("the_token"), "escaped JSON text with a string value");
    let text = b"TOKEN = x; \"input_tokens\": 12, \"a_token\": \"v\"";
    assert!(conf(Confirm::Assign(30, Val::Any), text, "TOKEN", false));
    assert!(!conf(
        Confirm::Assign(30, Val::Any),
        text,
        "input_token",
        false
    ));
    assert!(conf(Confirm::Assign(30, Val::Any), text, "a_token", false));
    assert!(!conf(
        Confirm::Assign(4, Val::Any),
        b"token_aaaaaaaaaaaa=",
        "token",
        false
    ));
}

#[test]
fn confirm_userinfo() {
    assert!(conf(Confirm::UserInfo, b"://user:pw@host", "://", false));
    assert!(conf(Confirm::UserInfo, b"://:pw@host", "://", false));
    assert!(!conf(Confirm::UserInfo, b"://host/path@x", "://", false));
    assert!(!conf(Confirm::UserInfo, b"://user@host", "://", false));
    assert!(conf(
        Confirm::UserInfo,
        br"://user:p\u0041w@host",
        "://",
        true
    ));
    assert!(!conf(Confirm::UserInfo, br#"://host.com\">"#, "://", true));
}

/// Every keyword occurrence, found naively: what `hits` must report with `Confirm::Any`.
fn naive(kws: &[(Vec<u8>, bool)], text: &[u8]) -> Vec<Hit> {
    let mut v = Vec::new();
    for (r, (k, ci)) in kws.iter().enumerate() {
        for pos in 0..text.len().saturating_sub(k.len() - 1) {
            let seen = &text[pos..pos + k.len()];
            if if *ci {
                seen.eq_ignore_ascii_case(k)
            } else {
                seen == k.as_slice()
            } {
                v.push(Hit {
                    rule: r as u32,
                    pos,
                });
            }
        }
    }
    v
}

#[test]
fn prefilter_finds_every_keyword_occurrence() {
    // Every built-in keyword as its own rule, confirmed by anything: `hits` must then
    // report exactly the occurrences a naive search finds, whichever pass (Teddy group,
    // special byte) serves its anchor, at any offset, at both ends of the text, in any
    // case, next to bytes that fold like the special ones (`^` like `~`, DEL like `_`).
    let kws: Vec<(Vec<u8>, bool)> = super::super::rules::RULES
        .iter()
        .flat_map(|r| r.keywords.iter())
        .map(|k| (k.text.as_bytes().to_vec(), k.ci))
        .collect();
    let rules = (0..kws.len())
        .map(|i| {
            Compiled::new(Spec {
                id: &format!("r{i}"),
                title: "",
                regex: "x",
                builtin: false,
                before: 0,
                checks: Vec::new(),
                field: false,
                trim: false,
            })
            .unwrap()
        })
        .collect();
    let specs = kws
        .iter()
        .map(|(t, ci)| {
            vec![KwSpec {
                text: t.clone(),
                ci: *ci,
                confirm: Confirm::Any,
            }]
        })
        .collect();
    let mut engine = Engine::new(rules, specs);
    let filler: &[&[u8]] = &[
        b"a",
        b"_",
        b"-",
        b".",
        b"~",
        b"^",
        b"=",
        b"\x7f",
        b" ",
        b"x_",
        b"_x",
        b"p_a",
        b"sk",
        b"9",
        b"GH",
        b"\"",
        b"\n",
        // Bytes from 0x80 whose low 7 bits are a letter of an anchor (the byte tables read
        // them so), and UTF-8.
        b"\xc1",
        b"\xeb",
        b"\xcb\xd9",
        "é…".as_bytes(),
    ];
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    for round in 0..3000 {
        let mut text = Vec::new();
        for _ in 0..rnd(12) {
            if rnd(3) == 0 {
                let (k, _) = &kws[rnd(kws.len())];
                let k: Vec<u8> = if rnd(2) == 0 {
                    k.to_ascii_uppercase()
                } else {
                    k.clone()
                };
                // Sometimes only part of it: a near miss.
                let cut = if rnd(4) == 0 { rnd(k.len()) } else { k.len() };
                text.extend_from_slice(&k[..cut]);
            } else {
                text.extend_from_slice(filler[rnd(filler.len())]);
            }
        }
        if round % 7 == 0 {
            // Long enough for the 32- and 64-byte SIMD blocks, a keyword across a block
            // edge, near the end of a block, in the padded tail.
            let pad = 20 + rnd(150);
            text.splice(0..0, std::iter::repeat_n(b'z', pad));
            if rnd(2) == 0 {
                let (k, _) = &kws[rnd(kws.len())];
                text.extend_from_slice(k);
                text.extend(std::iter::repeat_n(b'\xff', rnd(70)));
            }
        }
        let mut want = naive(&kws, &text);
        want.sort_unstable();
        want.dedup();
        // Every path: the one-pass filter with byte tables (AVX-512 VBMI) and with nibble
        // masks (AVX2), and the passes over a folded copy.
        let fused = engine.fused.take();
        for path in 0..3 {
            let mut td = None;
            if path < 2 {
                if let Some(mut t) = fused.clone() {
                    if path == 1 {
                        t.vbmi = false;
                    } else if !t.vbmi {
                        continue;
                    }
                    td = Some(t);
                } else {
                    continue;
                }
            }
            engine.fused = td;
            let mut got = Vec::new();
            engine.hits(&text, false, &mut got);
            got.sort_unstable();
            got.dedup();
            assert_eq!(
                got,
                want,
                "path {path}, text {:?}",
                String::from_utf8_lossy(&text)
            );
        }
        engine.fused = fused;
    }
}

#[test]
fn trims_escaped_newlines() {
    let t = br"\n\nABC\\n ";
    assert_eq!(trim(t, 0, t.len()), (4, 7));
}

#[test]
fn resolve_prefers_leftmost_longest_then_priority() {
    let f = |rule, start, end| Found {
        rule,
        start,
        end,
        mstart: start,
        mend: end,
    };
    let mut v = vec![f(5, 10, 20), f(1, 10, 20), f(0, 12, 15), f(2, 30, 40)];
    resolve(&mut v, &[(35, 36)]);
    assert_eq!(v, vec![f(1, 10, 20)]);
}

#[test]
fn a_mailchimp_key_is_found_and_a_user_flag_wakes_no_rule() {
    // `-us` is followed by the data-center number: `--user` and `-usage` (CLI flags, common
    // in tool output) no longer send their strings to the regexes.
    let r = crate::stages::redact::default_redactor();
    let key = format!(
        "{}-us{}",
        "0123456789abcdef".repeat(2).replace('0', "a"),
        12
    );
    let (new, found) = r.redact_text(format!("MAILCHIMP {key} end").as_bytes());
    assert_eq!(found.len(), 1, "the key is found");
    assert!(!String::from_utf8_lossy(&new.unwrap()).contains(&key));
    let mut hits = Vec::new();
    r.engine
        .hits(b"run it with --user alice and -usage", false, &mut hits);
    assert!(hits.is_empty(), "{hits:?}");
}

/// `ESC` then a placeholder (redact's own output after a control character) is not a terminal
/// control sequence: reading it so cut `[REDACTED:…]` and made a second run differ.
#[test]
fn a_placeholder_after_an_escape_is_not_a_control_sequence() {
    use super::reading::without_invisible;
    assert_eq!(
        without_invisible(b"x \x1b[REDACTED:anthropic-api-key] y"),
        None
    );
    assert_eq!(
        without_invisible(b"x \x1b[31mred").as_deref(),
        Some(&b"x red"[..])
    );
}
