//! The matching engine: a raw-bytes keyword prefilter and the per-rule regex search.
//!
//! **Prefilter.** Every keyword of every rule is folded (`byte | 0x20`, which maps upper- to
//! lower-case letters) and its anchor is searched for in one SIMD pass over the text as it is
//! (`teddy`); on a CPU without AVX2, in the folded text with SIMD Teddy searchers of at
//! most 16 patterns each (`aho_corasick::packed`) and a pass over rare punctuation bytes. A keyword contained in a longer one serves as the
//! longer one's anchor. Each occurrence is then checked exactly (case-sensitively unless the
//! keyword is case-insensitive) and its rule's [`Confirm`] looks at what follows it. Folding
//! and the checks are exact supersets, so an occurrence a rule could start a match from is
//! never dropped.
//!
//! **Search.** For each rule with occurrences, the regex is run from `occurrence - before`
//! (never before the end of the previous match). Because every match contains a keyword
//! occurrence at most `before` bytes after its start, this finds exactly the matches a plain
//! left-to-right `captures_iter` over the whole text finds ([`Engine::find_all`], the
//! reference the property tests compare against), while touching only the regions around
//! keywords.

use std::cell::RefCell;

use aho_corasick::{packed, AhoCorasick, MatchKind};
use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::util::syntax;
use regex_automata::Input;

use super::checks::{placeholder, Check, Ctx};
use super::confirm::confirm;
use super::rules::{Confirm, Kw};
use super::teddy::{self, fold, folded_eq, Teddy};

/// A compiled rule.
#[derive(Debug)]
pub struct Compiled {
    /// Rule id.
    pub id: String,
    /// Short name.
    pub title: String,
    /// The regex source and, once a keyword of the rule first occurs, the compiled regex: most
    /// of the 70-odd rules never see their keyword in a given file, and compiling them all
    /// costs ~35 ms, which is most of a hook's run on a small session.
    regex: LazyRegex,
    /// Longest possible match, when bounded: the search around a keyword then stops there.
    pub max_len: Option<usize>,
    /// See [`super::rules::Rule::before`].
    pub before: usize,
    /// Post-match checks.
    pub checks: Vec<Check>,
    /// Tried on JSON members too.
    pub field: bool,
    /// Trim blanks and escaped newlines around the secret.
    pub trim: bool,
}

#[derive(Debug)]
struct LazyRegex {
    src: String,
    built: std::sync::OnceLock<Built>,
}

#[derive(Debug)]
struct Built {
    regex: Regex,
    /// Capture groups that hold the secret, in order of preference.
    secret_groups: Vec<usize>,
    /// Capture group of the variable name.
    name_group: Option<usize>,
}

impl Compiled {
    /// Compile the regex now (it is compiled on first use otherwise); errors as on loading.
    pub fn compile_now(&self) -> Result<(), String> {
        if self.regex.built.get().is_none() {
            let built = build(&self.regex.src, BUILTIN_NFA_LIMIT)
                .map_err(|e| format!("rule `{}`: {e}", self.id))?;
            let _ = self.regex.built.set(built);
        }
        Ok(())
    }
}

impl LazyRegex {
    fn get(&self) -> &Built {
        self.built.get_or_init(|| {
            build(&self.src, BUILTIN_NFA_LIMIT)
                .expect("the regex compiled when its rule was loaded")
        })
    }
}

/// Compiled-size limit of the built-in regexes (the largest, JWT's, needs a few MiB).
const BUILTIN_NFA_LIMIT: usize = 64 << 20;

/// Compiled-size limit of a custom rule's regex. A bigger automaton (`[\s\S]{60000}`) makes
/// the lazy DFA give up and every string crawl through the slow engines: seconds per 100 KB.
/// Rules over it are refused when the pipeline loads.
pub const CUSTOM_NFA_LIMIT: usize = 256 << 10;

/// The part of a regex error that does not quote the pattern (which may hold a secret).
pub fn regex_problem(msg: &str) -> String {
    msg.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map(str::to_string)
        .unwrap_or_else(|| "it does not compile".into())
}

fn build(src: &str, nfa_limit: usize) -> Result<Built, String> {
    // Bytes semantics, like `regex::bytes`: may match invalid UTF-8, empty matches anywhere.
    let regex = Regex::builder()
        .syntax(syntax::Config::new().utf8(false))
        .configure(
            Regex::config()
                .utf8_empty(false)
                .nfa_size_limit(Some(nfa_limit))
                .dfa_size_limit(Some(nfa_limit.max(1 << 20))),
        )
        .build(src)
        .map_err(|e| match e.size_limit() {
            Some(limit) => format!(
                "the regex is too big (its automaton exceeds {} KiB): bound its repetitions more tightly",
                limit >> 10
            ),
            None => format!("bad regex: {}", regex_problem(&e.to_string())),
        })?;
    let names: Vec<Option<&str>> = regex
        .group_info()
        .pattern_names(regex_automata::PatternID::ZERO)
        .collect();
    let secret_groups = names
        .iter()
        .enumerate()
        .filter(|(_, n)| n.is_some_and(|n| n.starts_with("secret")))
        .map(|(i, _)| i)
        .collect();
    let name_group = names.iter().position(|n| *n == Some("name"));
    Ok(Built {
        regex,
        secret_groups,
        name_group,
    })
}

/// What [`Compiled::new`] builds a rule from.
pub struct Spec<'a> {
    /// Rule id.
    pub id: &'a str,
    /// Short name.
    pub title: &'a str,
    /// The regex.
    pub regex: &'a str,
    /// Built-in: the regex runs with Unicode off.
    pub builtin: bool,
    /// See [`super::rules::Rule::before`].
    pub before: usize,
    /// Post-match checks.
    pub checks: Vec<Check>,
    /// Tried on JSON members too.
    pub field: bool,
    /// Trim blanks and escaped newlines around the secret.
    pub trim: bool,
}

impl Compiled {
    /// Compile a rule.
    pub fn new(spec: Spec<'_>) -> Result<Compiled, String> {
        let Spec {
            id,
            title,
            regex,
            builtin,
            before,
            checks,
            field,
            trim,
        } = spec;
        let src = if builtin {
            format!("(?-u){regex}")
        } else {
            regex.to_string()
        };
        // Bytes semantics, like `regex::bytes`: may match invalid UTF-8, empty matches anywhere.
        let syn = syntax::Config::new().utf8(false);
        let max_len = syntax::parse_with(&src, &syn)
            .map_err(|e| format!("rule `{id}`: bad regex: {}", regex_problem(&e.to_string())))?
            .properties()
            .maximum_len();
        let regex = LazyRegex {
            src,
            built: std::sync::OnceLock::new(),
        };
        if !builtin {
            // A user's rule must fail when the pipeline loads, not in the middle of a run.
            let built =
                build(&regex.src, CUSTOM_NFA_LIMIT).map_err(|e| format!("rule `{id}`: {e}"))?;
            let _ = regex.built.set(built);
        }
        Ok(Compiled {
            id: id.to_string(),
            title: title.to_string(),
            regex,
            max_len,
            before,
            checks,
            field,
            trim,
        })
    }
}

/// A keyword as the engine takes it.
pub struct KwSpec {
    /// The literal.
    pub text: Vec<u8>,
    /// Matched ASCII-case-insensitively.
    pub ci: bool,
    /// What must follow it.
    pub confirm: Confirm,
}

impl From<&Kw> for KwSpec {
    fn from(k: &Kw) -> KwSpec {
        KwSpec {
            text: k.text.as_bytes().to_vec(),
            ci: k.ci,
            confirm: k.confirm,
        }
    }
}

/// A confirmed keyword occurrence: where it starts and ends, and whose keyword it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    /// Rule index.
    pub rule: u32,
    /// Start of the keyword.
    pub pos: usize,
}

/// A rule match that passed its checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Rule index (also its priority: lower wins).
    pub rule: u32,
    /// The secret's span.
    pub start: usize,
    /// End of the secret.
    pub end: usize,
    /// The whole match's span.
    pub mstart: usize,
    /// End of the whole match.
    pub mend: usize,
}

struct KwEntry {
    bytes: Vec<u8>,
    ci: bool,
    confirm: Confirm,
    rule: u32,
}

/// A keyword holding an anchor, with what rules it out from the bytes next to an occurrence
/// of the anchor: most occurrences of a shared anchor (`key`, `token`) belong to none of the
/// keywords holding it, and the two bytes around it say so without reading the keyword.
#[derive(Debug, Clone, Copy)]
struct Use {
    /// The keyword ([`ESCAPE`]: an escape anchor, `off` then its index).
    kw: u32,
    /// Offset of the anchor inside the keyword.
    off: u32,
    /// The keyword's folded byte before the anchor, or 0 when it starts with it.
    prev: u8,
    /// The keyword's folded byte after the anchor, or 0 when it ends with it.
    next: u8,
    /// The keyword is the anchor (folded, case-insensitive): found once the anchor is.
    whole: bool,
}

impl Use {
    fn new(kw: u32, off: usize, kw_bytes: &[u8], ci: bool, anchor_len: usize) -> Use {
        let at = |i: Option<usize>| i.and_then(|i| kw_bytes.get(i)).map_or(0, |&b| fold(b));
        Use {
            kw,
            off: off as u32,
            prev: at(off.checked_sub(1)),
            next: at(Some(off + anchor_len)),
            whole: ci && kw_bytes.len() == anchor_len,
        }
    }
}

enum Searcher {
    Teddy(packed::Searcher),
    Ac(AhoCorasick),
    /// One short anchor: memmem beats a Teddy pass with a 2-byte fingerprint.
    One(memchr::memmem::Finder<'static>),
}

struct AnchorSet {
    searcher: Searcher,
    /// Anchor ids of this set's patterns.
    anchors: Vec<u32>,
}

/// Compiled rules plus their prefilter.
pub struct Engine {
    /// Rules in priority order.
    pub rules: Vec<Compiled>,
    kws: Vec<KwEntry>,
    /// Per anchor: the keywords holding it.
    uses: Vec<Vec<Use>>,
    sets: Vec<AnchorSet>,
    /// Anchors holding a rare punctuation byte, found from that byte (see [`Special`]).
    special: Option<Special>,
    /// The one-pass filter over the text as it is, when the CPU and the anchors allow it
    /// (else the passes of `sets` and `special` over a folded copy).
    fused: Option<Teddy>,
    /// Folded anchors.
    anchors: Vec<Vec<u8>>,
}

mod reading;
pub use reading::{reading, without_invisible, Reading, INVISIBLE};
mod special;
use special::{Special, SPECIAL_BYTES};

/// Substrings that serve as one anchor for all the keywords containing them (measured on the
/// shared corpus: each occurs about 2 500 times in 20 MB, cheap next to a share of a pass).
const SHARED_ANCHORS: &[&[u8]] = &[b"key", b"sk-"];

/// Raw escapes that could hide a keyword (keywords are ASCII): a `\u00XX` escape, and `/`
/// written as `\/` in `://`; and the invisible characters a token can be broken by (issue #25:
/// a zero-width space pasted inside `ghp_…` hides it from every rule), raw or escaped. A line
/// holding one is scanned string by string, and a string holding an invisible character (or
/// a percent-encoded one) is searched as it reads ([`reading`]).
const ESCAPE_ANCHORS: &[&[u8]] = &[
    b"\\u00",
    b":\\/",
    b":/\\/",
    // The starts of tokens, cut short (the rule's checks want the whole body): a line holding
    // one is walked so that a token split between two strings is found.
    b"ghp_",
    b"gho_",
    b"ghs_",
    b"github_pat_",
    b"glpat-",
    b"sk-ant-",
    b"xoxb-",
    b"xoxp-",
    b"sk_live_",
    b"AKIA",
    "\u{200B}".as_bytes(),
    "\u{200C}".as_bytes(),
    "\u{200D}".as_bytes(),
    "\u{2060}".as_bytes(),
    "\u{FEFF}".as_bytes(),
    "\u{AD}".as_bytes(),
    b"\\u202",
    b"\\u206",
    b"\\u180e",
    b"\\u180E",
    b"\\u034f",
    b"\\u034F",
    b"\\u3164",
    b"\\ufe0f",
    b"\\uFE0F",
    b"\\udb40",
    b"\\uDB40",
    b"\\u200",
    b"\\u2060",
    b"\\ufeff",
    b"\\uFEFF",
    // Percent-encoded characters of tokens (`ghp%5F…`, `sk%2Dant…`, base64's `+ / =`).
    b"%5F",
    b"%5f",
    b"%2D",
    b"%2d",
    b"%2B",
    b"%2b",
    b"%2F",
    b"%2f",
    b"%3D",
    b"%3d",
    // String literals code concatenates (`"ghp_ab" + "cd…"`, `'a' . 'b'`, `'a' || 'b'`), in
    // their spaced forms: `"` as a JSON string holds it (escaped; a raw `" "` is JSON's own
    // syntax), `'` as it is. The unspaced forms and backticks are too common in code to walk
    // every line that holds one; a token start (above) walks those lines anyway.
    b"' + '",
    b"' . '",
    b"' || '",
    b"\\\" + \\\"",
    b"\\\"+\\\"",
    b"\\\" . \\\"",
    b"\\\" || \\\"",
    // Forms code and web pages write tokens in (issue #25, R2/12): `&quot;…&quot;`, `+` at a
    // line's end, empty template substitutions. Pieces that `join("")`, Python's `"a" "b"` or
    // backticks put together are found from the token start the first piece holds (above):
    // anchors of their own (`\" \"`, `join(\"\")`, `` ` + ` ``) sent 9% of the corpus
    // through a second search for 2 lines in 10,000. `&#` and `%25` are looked for apart
    // ([`encoded_forms`]): as anchors (a short window, digits) they cost the one pass 70%.
    // So are the forms of round 3 (a `%XX` letter inside a token, `&amp;#`, `${ `, quote
    // splices and continuations that cut a token's start, full-width runs): on the corpus
    // they send 10 lines in 8,662 (0.12%) through the string walk, all `\" \"` and `\\\n`.
    b"&quot;",
    b"\\\" +\\n",
    b"' +\\n",
    b"${\\\"\\\"}",
    b"${''}",
    // Escaped forms the `\\u00` anchor also finds, that make a string read otherwise.
    b"\\u00ad",
    b"\\u00AD",
    b"\\u001b[",
    b"\\u001B[",
];

/// Whether `text` holds a byte an invisible character starts with (other than those with an
/// anchor of their own: a multi-byte anchor for each would hand the prefilter many false
/// candidates, `…` and `•` among them). A string in which a keyword was found is searched in
/// its reader form when it does.
pub fn may_hide(text: &[u8]) -> bool {
    memchr::memchr3(0xE1, 0xE2, 0xE3, text).is_some()
        || memchr::memchr3(0xCD, 0xEF, 0xF3, text).is_some()
        || memchr::memchr(0x1B, text).is_some()
}

/// [`ESCAPE_ANCHORS`] from here on make a string read otherwise ([`reading`]); those
/// before are escapes that may hide a keyword. A token start counts: its pieces may follow on
/// lines of their own (`"AKIA"\n    "…"`), which no anchor of their own finds.
const VISIBLE_FROM: usize = 3;

/// The token starts are [`ESCAPE_ANCHORS`] from [`VISIBLE_FROM`] up to here.
const TOKEN_STARTS_END: usize = 13;

/// Whether `text` (a decoded string) holds the start of a token: one an escape hid from the
/// prefilter (`\u0067hp_…`) may have its pieces on lines of their own, so the string is
/// searched in its [`reading`] too.
pub fn holds_token_start(text: &[u8]) -> bool {
    ESCAPE_ANCHORS[VISIBLE_FROM..TOKEN_STARTS_END]
        .iter()
        .any(|a| memchr::memmem::find(text, a).is_some())
}

/// Where `line` holds an encoded or spliced form that no anchor finds (`encoded_form`),
/// appended to `out`: a string holding one is searched in its [`reading`]. Two passes apart
/// from the prefilter (see `ESCAPE_ANCHORS`), each for bytes rare in transcripts: `&`, `%`
/// and `$` (0.05% of the bytes with `$`'s share of shell code), then `'`, `\` and the lead
/// byte of full-width forms, where most hits (JSON's own escapes, apostrophes) are dismissed
/// by the next byte. Measured (profiling build, `check -j 1` over the 23 MB corpus, perf):
/// both passes are 5.8% of the CPU, the second most of it (`\` is 1.7% of a transcript's
/// bytes); the Teddy prefilter is 9.6%.
pub fn encoded_forms(line: &[u8], out: &mut Vec<usize>) {
    for p in memchr::memchr3_iter(b'&', b'%', b'$', line) {
        if encoded_form(line, p) {
            out.push(p);
        }
    }
    for p in memchr::memchr3_iter(b'\'', b'\\', 0xEF, line) {
        if spliced_form(line, p) {
            out.push(p);
        }
    }
}

/// Whether an encoded form starts at `p` of a raw line: `&#` (an HTML entity by number:
/// `&#65;KIA…`, `&#65KIA`), `&amp;#` (one escaped again), `%25` (a `%XX` encoded again:
/// `ghp%255F…`), `%26%23` / `%26#` (an entity percent-encoded), a `%XX` letter or digit inside
/// a token (`ghp_ab%63d…`), `${ ` (a spaced empty substitution, `${ "" }`).
fn encoded_form(line: &[u8], p: usize) -> bool {
    let t = &line[p..];
    let tokenish =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/' | b'=');
    let hex = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_hexdigit());
    match t[0] {
        b'&' => {
            t.starts_with(b"&#") || {
                let n = t[1..]
                    .chunks(4)
                    .take(4)
                    .take_while(|c| *c == b"amp;")
                    .count();
                n > 0 && t.get(1 + 4 * n) == Some(&b'#')
            }
        }
        b'%' => {
            t.starts_with(b"%25")
                || t.starts_with(b"%26%23")
                || t.starts_with(b"%26#")
                || (p > 0
                    && reading::word(line[p - 1])
                    && hex(t.get(1))
                    && hex(t.get(2))
                    && t.get(3).is_some_and(|&c| tokenish(c) || c == b'%')
                    && {
                        let d = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                        (d(t[1]) * 16 + d(t[2])).is_ascii_alphanumeric()
                    })
        }
        b'$' => t.starts_with(b"${ "),
        _ => false,
    }
}

/// Whether a splice that hides a token's start starts at `p` of a raw line, a token's
/// character before it and after it: a shell `''` (`gh''p_…`), `\"\"` (a JSON string's
/// `""`), `\" \"` (C's and the shell's adjacent literals, `"gh" "p_…"`), `\\\n` (a backslash
/// at a line's end, `gh\` then `p_…`); or a run of full-width characters of a token
/// ([`reading::full_width_at`]). A splice after a token's start is found from that start (an
/// anchor): this finds the ones that cut it.
fn spliced_form(line: &[u8], p: usize) -> bool {
    let t = &line[p..];
    if t[0] == 0xEF {
        return reading::full_width_at(t);
    }
    let tokenish = |c: Option<&u8>| {
        c.is_some_and(|&c| {
            c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/' | b'=')
        })
    };
    if p == 0 || !tokenish(line.get(p - 1)) {
        return false;
    }
    let forms: [&[u8]; 4] = [b"''", b"\\\"\\\"", b"\\\" \\\"", b"\\\\\\n"];
    forms
        .iter()
        .find(|f| t.starts_with(f))
        .is_some_and(|f| tokenish(t.get(f.len())))
}

/// Whether `t` starts with an anchor that makes a string read otherwise than it is written
/// (an invisible character, a percent-encoded one, concatenated literals): a string holding
/// one is searched in its [`reading`] (as is a string with a keyword that [`may_hide`]).
pub fn visible_trigger(line: &[u8], p: usize) -> bool {
    let t = &line[p..];
    if t.starts_with(b"\\u001b[") || t.starts_with(b"\\u001B[") {
        return ansi_inside_token(line, p);
    }
    encoded_form(line, p)
        || spliced_form(line, p)
        || ESCAPE_ANCHORS[VISIBLE_FROM..]
            .iter()
            .any(|a| t.starts_with(a))
}

/// Whether the escaped terminal control sequence at `p` (`\u001b[…m`) sits inside a token or
/// right after a value's start: a token character (or `=`, `:`, a quote) before it, a token
/// character after it. Colour codes around words (`\u001b[31merror\u001b[0m\n`, a line
/// starting with one) leave the text as it reads, and tool output is full of them: a string
/// is searched again in its reader form only where a code can break a secret apart.
fn ansi_inside_token(line: &[u8], p: usize) -> bool {
    let tokenish =
        |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/' | b'=');
    let before = match p.checked_sub(1).map(|i| line[i]) {
        // An escape before it (`\n`, `\t`, `\"`): a new line or a quote starts there.
        Some(c) if p >= 2 && line[p - 2] == b'\\' => c == b'"' || c == b'\'',
        Some(c) => tokenish(c) || matches!(c, b':' | b'"' | b'\''),
        None => false,
    };
    if !before {
        return false;
    }
    // `\u001b[` (7 bytes), parameters, the final letter, then what follows.
    let rest = &line[p + 7..];
    let n = rest
        .iter()
        .take(16)
        .position(|c| !(c.is_ascii_digit() || *c == b';'));
    match n {
        Some(n) if rest[n].is_ascii_alphabetic() => rest.get(n + 1).is_some_and(|&c| tokenish(c)),
        _ => false,
    }
}

#[test]
fn the_visible_anchors_start_at_the_token_starts() {
    assert_eq!(ESCAPE_ANCHORS[VISIBLE_FROM - 1], b":/\\/");
    assert_eq!(ESCAPE_ANCHORS[VISIBLE_FROM], b"ghp_");
    assert_eq!(ESCAPE_ANCHORS[TOKEN_STARTS_END - 1], b"AKIA");
    assert_eq!(ESCAPE_ANCHORS[TOKEN_STARTS_END], "\u{200B}".as_bytes());
}

/// Hit marker of an escape anchor.
pub const ESCAPE: u32 = u32::MAX;

thread_local! {
    static FOLDED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Engine {
    /// Build the engine for `rules` with `keywords[i]` the keywords of `rules[i]`.
    pub fn new(rules: Vec<Compiled>, keywords: Vec<Vec<KwSpec>>) -> Engine {
        let mut kws = Vec::new();
        for (r, list) in keywords.into_iter().enumerate() {
            for k in list {
                kws.push(KwEntry {
                    bytes: k.text,
                    ci: k.ci,
                    confirm: k.confirm,
                    rule: r as u32,
                });
            }
        }
        // Anchors: unique folded keywords; a keyword containing a shorter anchor uses it.
        // Substrings shared by several keywords and rare enough in transcripts come first:
        // every anchor costs a share of a pass over every byte, every extra occurrence only a
        // check.
        let folded_kws: Vec<Vec<u8>> = kws
            .iter()
            .map(|k| k.bytes.iter().map(|&b| fold(b)).collect())
            .collect();
        let mut anchors: Vec<Vec<u8>> = Vec::new();
        let mut uses: Vec<Vec<Use>> = Vec::new();
        for shared in SHARED_ANCHORS {
            let shared: Vec<u8> = shared.iter().map(|&b| fold(b)).collect();
            let n = folded_kws
                .iter()
                .filter(|k| memchr::memmem::find(k, &shared).is_some())
                .count();
            if n >= 2 {
                anchors.push(shared);
                uses.push(Vec::new());
            }
        }
        for (i, esc) in ESCAPE_ANCHORS.iter().enumerate() {
            let use_ = Use {
                kw: ESCAPE,
                off: i as u32,
                prev: 0,
                next: 0,
                whole: false,
            };
            // An escape that starts with an anchor already there (`\\u00ad` with `\\u00`, the
            // other case of a hex digit, `sk-ant-` with `sk-`) is checked where that anchor is
            // found: every anchor costs the one pass a share, and crowds a bucket.
            let folded: Vec<u8> = esc.iter().map(|&b| fold(b)).collect();
            match anchors.iter().position(|a| folded.starts_with(a)) {
                Some(a) => uses[a].push(use_),
                None => {
                    anchors.push(folded);
                    uses.push(vec![use_]);
                }
            }
        }
        let mut order: Vec<usize> = (0..kws.len()).collect();
        order.sort_by_key(|&i| (kws[i].bytes.len(), kws[i].bytes.to_ascii_lowercase()));
        for i in order {
            let folded = folded_kws[i].clone();
            let found = anchors
                .iter()
                .enumerate()
                .find_map(|(a, an)| memchr::memmem::find(&folded, an).map(|off| (a, off)));
            match found {
                Some((a, off)) => uses[a].push(Use::new(
                    i as u32,
                    off,
                    &kws[i].bytes,
                    kws[i].ci,
                    anchors[a].len(),
                )),
                None => {
                    uses.push(vec![Use::new(
                        i as u32,
                        0,
                        &kws[i].bytes,
                        kws[i].ci,
                        folded.len(),
                    )]);
                    anchors.push(folded);
                }
            }
        }
        // Teddy is fastest with few patterns of similar length: groups of 16, longest first.
        // Anchors shorter than 3 bytes would give a whole group a weak fingerprint: they get
        // a memmem finder each.
        // Anchors holding a special byte go to the special pass (not the escape anchors: those
        // must be reported at their own start, which they are here too, but `:` is common).
        let mut chosen = Vec::new();
        let mut teddy = Vec::new();
        for a in 0..anchors.len() as u32 {
            let an = &anchors[a as usize];
            let sp = SPECIAL_BYTES
                .iter()
                .enumerate()
                .find_map(|(ci, &c)| memchr::memchr(c, an).map(|o| (ci, o)));
            match sp {
                Some((ci, o)) => chosen.push((a, ci, o)),
                None => teddy.push(a),
            }
        }
        // `CCHIST_REDACT_PREFILTER=avx2` or `=passes` picks a slower path than the CPU allows
        // (to measure and compare them).
        let pick = std::env::var("CCHIST_REDACT_PREFILTER").unwrap_or_default();
        let fused = if teddy::available() && pick != "passes" {
            let ids: Vec<u32> = teddy
                .iter()
                .copied()
                .chain(chosen.iter().map(|c| c.0))
                .collect();
            Teddy::new(&anchors, &ids).map(|mut t| {
                t.vbmi &= pick != "avx2";
                t
            })
        } else {
            None
        };
        let special = (!chosen.is_empty()).then(|| Special::new(SPECIAL_BYTES, &anchors, chosen));
        let (short, mut by_len): (Vec<u32>, Vec<u32>) = teddy
            .into_iter()
            .partition(|&a| anchors[a as usize].len() < 3);
        by_len.sort_by_key(|&a| std::cmp::Reverse(anchors[a as usize].len().min(4)));
        let singles = short.iter().map(|&a| AnchorSet {
            searcher: Searcher::One(memchr::memmem::Finder::new(&anchors[a as usize]).into_owned()),
            anchors: vec![a],
        });
        let sets = by_len
            .chunks(16)
            .map(|group| {
                let pats: Vec<&[u8]> = group
                    .iter()
                    .map(|&a| anchors[a as usize].as_slice())
                    .collect();
                let mut b = packed::Config::new()
                    .match_kind(packed::MatchKind::LeftmostFirst)
                    .builder();
                b.extend(pats.iter());
                let searcher = match b.build() {
                    Some(s) => Searcher::Teddy(s),
                    None => Searcher::Ac(
                        AhoCorasick::builder()
                            .match_kind(MatchKind::LeftmostFirst)
                            .build(&pats)
                            .expect("keywords are valid patterns"),
                    ),
                };
                AnchorSet {
                    searcher,
                    anchors: group.to_vec(),
                }
            })
            .chain(singles)
            .collect();
        Engine {
            rules,
            kws,
            uses,
            sets,
            special,
            fused,
            anchors,
        }
    }

    /// Every distinct keyword (lower-cased), for comparisons with other tools.
    pub fn keywords(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .kws
            .iter()
            .map(|k| String::from_utf8_lossy(&k.bytes).to_ascii_lowercase())
            .collect();
        v.sort();
        v.dedup();
        v
    }

    /// Append the confirmed keyword occurrences in `text` to `out` (unsorted, may repeat).
    /// `raw`: `text` is a raw JSON line (escapes are read as such, quotes end strings), and an
    /// escape that could hide a keyword adds a hit with rule [`ESCAPE`]; otherwise `text` is
    /// decoded text.
    pub fn hits(&self, text: &[u8], raw: bool, out: &mut Vec<Hit>) {
        if self.sets.is_empty() && self.special.is_none() {
            return;
        }
        if let Some(td) = &self.fused {
            return self.hits_fused(td, text, raw, out);
        }
        self.hits_passes(text, raw, out);
    }

    /// [`Engine::hits`] by the one-pass filter.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn hits_fused(&self, td: &Teddy, text: &[u8], raw: bool, out: &mut Vec<Hit>) {
        struct S<'a> {
            e: &'a Engine,
            td: &'a Teddy,
            text: &'a [u8],
            raw: bool,
            out: &'a mut Vec<Hit>,
        }
        impl teddy::Sink for S<'_> {
            #[inline(always)]
            fn teddy(&mut self, p: usize, b: usize) {
                for en in self.td.bucket(b) {
                    let Some(start) = p.checked_sub(en.off as usize) else {
                        continue;
                    };
                    let a = en.anchor as usize;
                    if en.at(self.text, start, &self.e.anchors[a]) {
                        self.e.verify(self.text, self.raw, start, a, self.out);
                    }
                }
            }
        }
        td.scan(
            text,
            &mut S {
                e: self,
                td,
                text,
                raw,
                out,
            },
        );
    }

    /// [`Engine::hits`] by the Teddy passes and the special pass over a folded copy (a CPU
    /// without AVX2, or anchors the one-pass filter does not take).
    pub fn hits_passes(&self, text: &[u8], raw: bool, out: &mut Vec<Hit>) {
        if self.sets.is_empty() && self.special.is_none() {
            return;
        }
        FOLDED.with(|f| {
            let mut f = f.borrow_mut();
            f.clear();
            f.extend(text.iter().map(|&b| fold(b)));
            let folded = f.as_slice();
            for set in &self.sets {
                let mut at = 0;
                while at < folded.len() {
                    let p = match &set.searcher {
                        Searcher::Teddy(s) => s
                            .find_in(folded, aho_corasick::Span::from(at..folded.len()))
                            .map(|m| (m.start(), m.pattern().as_usize())),
                        Searcher::Ac(ac) => ac
                            .find(aho_corasick::Input::new(folded).span(at..folded.len()))
                            .map(|m| (m.start(), m.pattern().as_usize())),
                        Searcher::One(f) => f.find(&folded[at..]).map(|i| (at + i, 0)),
                    };
                    let Some((p, pat)) = p else { break };
                    // No anchor contains another, so only the reported one starts at p; others
                    // may start inside it, hence the search resumes at p + 1.
                    self.verify(text, raw, p, set.anchors[pat] as usize, out);
                    at = p + 1;
                }
            }
            if let Some(sp) = &self.special {
                sp.scan(folded, |p, a| self.verify(text, raw, p, a, out));
            }
        });
    }

    fn verify(&self, text: &[u8], raw: bool, p: usize, anchor: usize, out: &mut Vec<Hit>) {
        // The folded bytes around the occurrence (0: none; no folded byte is 0).
        let prev = p.checked_sub(1).map_or(0, |i| fold(text[i]));
        let next = text
            .get(p + self.anchors[anchor].len())
            .map_or(0, |&b| fold(b));
        for u in &self.uses[anchor] {
            if (u.prev != 0 && u.prev != prev) || (u.next != 0 && u.next != next) {
                continue;
            }
            let (k, off) = (u.kw, u.off as usize);
            if k == ESCAPE {
                if raw && text[p..].starts_with(ESCAPE_ANCHORS[off]) {
                    out.push(Hit {
                        rule: ESCAPE,
                        pos: p,
                    });
                }
                continue;
            }
            let kw = &self.kws[k as usize];
            let Some(start) = p.checked_sub(off) else {
                continue;
            };
            let end = start + kw.bytes.len();
            let same = u.whole
                || match text.get(start..end) {
                    None => false,
                    Some(seen) if kw.ci => seen.eq_ignore_ascii_case(&kw.bytes),
                    Some(seen) => seen == kw.bytes.as_slice(),
                };
            if same
                && confirm(
                    kw.confirm,
                    text,
                    start,
                    end,
                    raw,
                    self.rules[kw.rule as usize].field,
                )
            {
                out.push(Hit {
                    rule: kw.rule,
                    pos: start,
                });
            }
        }
    }

    /// The matches (that pass their checks) of the rules that have `hits` in `text`.
    /// `hits` must hold every confirmed occurrence; they are sorted and deduplicated here.
    pub fn find(&self, text: &[u8], hits: &mut Vec<Hit>, out: &mut Vec<Found>) {
        hits.sort_unstable();
        hits.dedup();
        let mut i = 0;
        while i < hits.len() {
            let r = hits[i].rule;
            let j = i + hits[i..].iter().take_while(|h| h.rule == r).count();
            self.find_rule(text, r, &hits[i..j], out);
            i = j;
        }
    }

    fn find_rule(&self, text: &[u8], r: u32, hits: &[Hit], out: &mut Vec<Found>) {
        let rule = &self.rules[r as usize];
        let built = rule.regex.get();
        let mut caps = built.regex.create_captures();
        let mut last_end = 0;
        let mut last_start: Option<usize> = None;
        for h in hits {
            if h.pos < last_end {
                continue; // inside the previous match: no later match contains it
            }
            let from = h.pos.saturating_sub(rule.before).max(last_end);
            if last_start.is_some_and(|ms| ms >= from) {
                continue; // the search from `from` would find the same match
            }
            // A bounded rule's match around this occurrence ends within `max_len` of it.
            let to = rule
                .max_len
                .map_or(text.len(), |l| text.len().min(h.pos.saturating_add(l)));
            built
                .regex
                .search_captures(&Input::new(text).range(from..to), &mut caps);
            let Some(m) = caps.get_match() else {
                if rule.max_len.is_none() {
                    return; // no match at or after `from`, hence none for later occurrences
                }
                continue;
            };
            if rule.max_len.is_some() && m.start() > h.pos {
                continue; // may be cut by the window; a later occurrence finds it whole
            }
            last_start = Some(m.start());
            last_end = m.end();
            if let Some(f) = evaluate(rule, r, text, &caps) {
                out.push(f);
            }
        }
    }

    /// Reference: every match of every rule over the whole of `text`, no prefilter.
    pub fn find_all(&self, text: &[u8], only_field: bool, out: &mut Vec<Found>) {
        for (r, rule) in self.rules.iter().enumerate() {
            if only_field && !rule.field {
                continue;
            }
            for caps in rule.regex.get().regex.captures_iter(text) {
                if let Some(f) = evaluate(rule, r as u32, text, &caps) {
                    out.push(f);
                }
            }
        }
    }
}

fn evaluate(rule: &Compiled, r: u32, text: &[u8], caps: &Captures) -> Option<Found> {
    let m = caps.get_match()?;
    let built = rule.regex.get();
    let s = built
        .secret_groups
        .iter()
        .find_map(|&g| caps.get_group(g))
        .unwrap_or(m.span());
    let (mut start, mut end) = (s.start, s.end);
    if rule.trim {
        (start, end) = trim(text, start, end);
    }
    let secret = &text[start..end];
    if secret.is_empty() || placeholder(secret) {
        return None;
    }
    let name = built
        .name_group
        .and_then(|g| caps.get_group(g))
        .map(|n| &text[n.start..n.end]);
    let cx = Ctx::of(text, start, end, name);
    if !rule.checks.iter().all(|c| c.passes(secret, &cx)) {
        return None;
    }
    Some(Found {
        rule: r,
        start,
        end,
        mstart: m.start(),
        mend: m.end(),
    })
}

/// Trim blanks and (possibly multiply) escaped `\n`, `\r`, `\t` from both ends of a span.
fn trim(t: &[u8], mut s: usize, mut e: usize) -> (usize, usize) {
    loop {
        if s < e && t[s].is_ascii_whitespace() {
            s += 1;
        } else if s < e && t[s] == b'\\' {
            let mut k = s;
            while k < e && t[k] == b'\\' {
                k += 1;
            }
            if k < e && matches!(t[k], b'n' | b'r' | b't') {
                s = k + 1;
            } else {
                break;
            }
        } else {
            break;
        }
    }
    loop {
        if e > s && t[e - 1].is_ascii_whitespace() {
            e -= 1;
        } else if e >= s + 2 && matches!(t[e - 1], b'n' | b'r' | b't') && t[e - 2] == b'\\' {
            e -= 2;
            while e > s && t[e - 1] == b'\\' {
                e -= 1;
            }
        } else {
            break;
        }
    }
    (s, e)
}

/// Keep the best non-overlapping findings: leftmost first, then longest, then by rule priority.
/// Findings whose match touches an existing placeholder (`masks`) are dropped, which keeps
/// redaction idempotent.
pub fn resolve(found: &mut Vec<Found>, masks: &[(usize, usize)]) {
    found.retain(|f| !masks.iter().any(|&(s, e)| f.mstart < e && s < f.mend));
    found.sort_by_key(|f| (f.start, std::cmp::Reverse(f.end), f.rule));
    let mut end = 0;
    found.retain(|f| {
        if f.start >= end {
            end = f.end;
            true
        } else {
            false
        }
    });
}

#[cfg(test)]
mod tests;
