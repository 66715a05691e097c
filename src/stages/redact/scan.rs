//! The matching engine: a raw-bytes keyword prefilter and the per-rule regex search.
//!
//! **Prefilter.** Every keyword of every rule is folded (`byte | 0x20`, which maps upper- to
//! lower-case letters) and searched for in the folded text with SIMD Teddy searchers of at most
//! 16 patterns each (`aho_corasick::packed`). A keyword contained in a longer one serves as the
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
use super::rules::{Confirm, Kw, Val};

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
    /// Per anchor: (keyword, offset of the anchor inside the keyword).
    uses: Vec<Vec<(u32, usize)>>,
    sets: Vec<AnchorSet>,
}

/// Substrings that serve as one anchor for all the keywords containing them (measured on the
/// shared corpus: each occurs about 2 500 times in 20 MB, cheap next to a share of a pass).
const SHARED_ANCHORS: &[&[u8]] = &[b"key", b"sk-"];

/// Raw escapes that could hide a keyword (keywords are ASCII): a `\u00XX` escape, and `/`
/// written as `\/` in `://`. A line holding one is scanned string by string.
const ESCAPE_ANCHORS: &[&[u8]] = &[b"\\u00", b":\\/", b":/\\/"];

/// Hit marker of an escape anchor.
pub const ESCAPE: u32 = u32::MAX;

thread_local! {
    static FOLDED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn fold(b: u8) -> u8 {
    b | 0x20
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
        let mut uses: Vec<Vec<(u32, usize)>> = Vec::new();
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
            anchors.push(esc.iter().map(|&b| fold(b)).collect());
            uses.push(vec![(ESCAPE, i)]);
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
                Some((a, off)) => uses[a].push((i as u32, off)),
                None => {
                    anchors.push(folded);
                    uses.push(vec![(i as u32, 0)]);
                }
            }
        }
        // Teddy is fastest with few patterns of similar length: groups of 16, longest first.
        // Anchors shorter than 3 bytes would give a whole group a weak fingerprint: they get
        // a memmem finder each.
        let (short, mut by_len): (Vec<u32>, Vec<u32>) =
            (0..anchors.len() as u32).partition(|&a| anchors[a as usize].len() < 3);
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
        if self.sets.is_empty() {
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
        });
    }

    fn verify(&self, text: &[u8], raw: bool, p: usize, anchor: usize, out: &mut Vec<Hit>) {
        for &(k, off) in &self.uses[anchor] {
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
            let Some(seen) = text.get(start..end) else {
                continue;
            };
            let same = if kw.ci {
                seen.eq_ignore_ascii_case(&kw.bytes)
            } else {
                seen == kw.bytes.as_slice()
            };
            if same
                && confirm(
                    kw.confirm,
                    text,
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

/// Reads the characters after a keyword. In a raw JSON line (`raw`), escapes are decoded and
/// an unescaped quote ends the string; in decoded text every byte is itself.
#[derive(Clone, Copy)]
struct After<'a> {
    t: &'a [u8],
    i: usize,
    raw: bool,
}

enum Ch {
    /// A character.
    C(u8),
    /// End of the text, or (raw) the unescaped quote ending the string, at `After::i`.
    End,
    /// A `\u` escape or an invalid one: cannot judge cheaply.
    Unknown,
}

impl After<'_> {
    fn next(&mut self) -> Ch {
        let Some(&c) = self.t.get(self.i) else {
            return Ch::End;
        };
        if !self.raw {
            self.i += 1;
            return Ch::C(c);
        }
        match c {
            b'"' => Ch::End,
            b'\\' => {
                let d = match self.t.get(self.i + 1) {
                    Some(b'"') => b'"',
                    Some(b'\\') => b'\\',
                    Some(b'/') => b'/',
                    Some(b'n') => b'\n',
                    Some(b'r') => b'\r',
                    Some(b't') => b'\t',
                    Some(b'b') => 0x08,
                    Some(b'f') => 0x0c,
                    _ => return Ch::Unknown,
                };
                self.i += 2;
                Ch::C(d)
            }
            _ => {
                self.i += 1;
                Ch::C(c)
            }
        }
    }

    /// (raw) At the quote closing a string: is it a key whose value is a string?
    fn key_with_string_value(&self) -> bool {
        let t = self.t;
        let mut i = self.i + 1;
        let ws = |i: &mut usize| {
            while *i < t.len() && matches!(t[*i], b' ' | b'\t' | b'\n' | b'\r') {
                *i += 1;
            }
        };
        ws(&mut i);
        if t.get(i) != Some(&b':') {
            return false;
        }
        i += 1;
        ws(&mut i);
        t.get(i) == Some(&b'"')
    }
}

/// Does what follows a keyword occurrence (ending at `end`) allow a match of its rule?
/// `raw`: `t` is a raw JSON line; `field`: the rule also reads JSON members.
fn confirm(c: Confirm, t: &[u8], end: usize, raw: bool, field: bool) -> bool {
    let mut a = After { t, i: end, raw };
    match c {
        Confirm::Any => true,
        Confirm::Tail(class, n) => tail(&mut a, None, |b| class.has(b), n as usize),
        Confirm::Spaced(class, n) => loop {
            match a.next() {
                Ch::C(b' ' | b'\t') => continue,
                Ch::C(x) => break tail(&mut a, Some(x), |b| class.has(b), n as usize),
                Ch::End => break n == 0,
                Ch::Unknown => break true,
            }
        },
        Confirm::Assign(n, v) => assign(&mut a, n as usize, v, field, false),
        Confirm::AssignWord(n, v) => assign(&mut a, n as usize, v, field, true),
        Confirm::UserInfo => userinfo(&mut a),
        Confirm::Flag(n) => flag(&mut a, n as usize),
        Confirm::Prose(n) => prose(&mut a, n as usize),
        Confirm::AuthBasic => auth_basic(&mut a),
        Confirm::CurlUser => curl_user(&mut a),
        Confirm::JwtHeader => jwt_header(&mut a),
        Confirm::Lit(lits, class, n) => {
            let mut got = Vec::with_capacity(8);
            let longest = lits.iter().map(|l| l.len()).max().unwrap_or(0);
            while got.len() < longest {
                match a.next() {
                    Ch::C(c) => got.push(c),
                    Ch::Unknown => return true,
                    Ch::End => break,
                }
                if let Some(l) = lits.iter().find(|l| l.as_bytes() == got.as_slice()) {
                    let mut b = a;
                    if tail(&mut b, None, |x| class.has(x), n as usize) {
                        return true;
                    }
                    let _ = l;
                }
            }
            false
        }
    }
}

/// `[A-Za-z0-9_-]{10,2000}\.eyJ`
fn jwt_header(a: &mut After<'_>) -> bool {
    let mut k = 0;
    loop {
        match a.next() {
            Ch::Unknown => return true,
            Ch::C(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' => {
                k += 1;
                if k > 2000 {
                    return false;
                }
            }
            Ch::C(b'.') if k >= 10 => break,
            _ => return false,
        }
    }
    for want in *b"eyJ" {
        match a.next() {
            Ch::Unknown => return true,
            Ch::C(c) if c == want => {}
            _ => return false,
        }
    }
    true
}

/// Up to `n` more flag-name bytes (`[A-Za-z0-9_-]`), then `=` or a blank.
fn flag(a: &mut After<'_>, n: usize) -> bool {
    let mut k = 0;
    loop {
        match a.next() {
            Ch::Unknown => return true,
            Ch::C(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' => {
                k += 1;
                if k > n {
                    return false;
                }
            }
            Ch::C(b'=' | b' ' | b'\t') => return true,
            _ => return false,
        }
    }
}

/// The keyword ends a word (an `s` may follow) with a blank, `:` or `=`, and a digit follows
/// within `n` characters on the same line.
fn prose(a: &mut After<'_>, n: usize) -> bool {
    let mut c = a.next();
    if matches!(c, Ch::C(b's' | b'S')) {
        c = a.next();
    }
    // The rule goes on with `[ \t]*[:=]` or `[ \t]+`: a JSON key (`"tokens":`) or a word
    // going on (`keyboard`) cannot start a match.
    let mut buf = Vec::with_capacity(n);
    match c {
        Ch::Unknown => return true,
        Ch::C(x @ (b' ' | b'\t' | b':' | b'=')) => buf.push(x),
        _ => return false,
    }
    for _ in 0..n {
        match a.next() {
            Ch::Unknown => return true,
            Ch::End | Ch::C(b'\n') => break,
            Ch::C(x) => buf.push(x),
        }
    }
    if !buf.iter().any(u8::is_ascii_digit) {
        return false;
    }
    // Then an operator right away, or a verb (`is`, `was`, `set to`, …) after a blank.
    let lead = buf.iter().position(|&x| x != b' ' && x != b'\t');
    if lead.is_some_and(|i| matches!(buf[i], b':' | b'=')) {
        return true;
    }
    const VERBS: &[&[u8]] = &[
        b"is", b"was", b"are", b"were", b"=", b":", b"to", b"as", b"be", b"read",
    ];
    buf.windows(2).enumerate().any(|(i, w)| {
        matches!(w[0], b' ' | b'\t')
            && VERBS.iter().any(|v| {
                buf[i + 1..]
                    .get(..v.len())
                    .is_some_and(|x| x.eq_ignore_ascii_case(v))
            })
    })
}

fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `[\s'"]{0,3}[:=][\s'"]{0,3}basic`
fn auth_basic(a: &mut After<'_>) -> bool {
    let mut c = a.next();
    for round in 0..2 {
        let mut k = 0;
        while k < 3 && matches!(c, Ch::C(x) if is_blank(x) || x == b'\'' || x == b'"') {
            c = a.next();
            k += 1;
        }
        match c {
            Ch::Unknown => return true,
            Ch::C(b':' | b'=') if round == 0 => c = a.next(),
            _ if round == 1 => break,
            _ => return false,
        }
    }
    for want in *b"basic" {
        match c {
            Ch::Unknown => return true,
            Ch::C(x) if x.eq_ignore_ascii_case(&want) => c = a.next(),
            _ => return false,
        }
    }
    true
}

/// A blank, then within 400 characters (no `|`, `;`, `&`) a blank and `-u` or `--user`.
fn curl_user(a: &mut After<'_>) -> bool {
    match a.next() {
        Ch::Unknown => return true,
        Ch::C(x) if is_blank(x) => {}
        _ => return false,
    }
    let mut buf = vec![b' '];
    for _ in 0..412 {
        match a.next() {
            Ch::Unknown => return true,
            Ch::End | Ch::C(b'|' | b';' | b'&') => break,
            Ch::C(b'\n') if !matches!(buf.last(), Some(b'\\' | b'\r')) => break,
            Ch::C(x) => buf.push(x),
        }
    }
    buf.windows(4)
        .any(|w| is_blank(w[0]) && &w[1..3] == b"-u" && matches!(w[3], b' ' | b'\t' | b'='))
        || buf
            .windows(8)
            .any(|w| is_blank(w[0]) && &w[1..7] == b"--user" && matches!(w[7], b' ' | b'\t' | b'='))
}

/// At least `n` characters of the class (`first` is the one already read, if any).
fn tail(a: &mut After<'_>, first: Option<u8>, class: impl Fn(u8) -> bool, n: usize) -> bool {
    let mut k = 0;
    let mut next = first.map(Ch::C);
    while k < n {
        match next.take().unwrap_or_else(|| a.next()) {
            Ch::C(c) if class(c) => k += 1,
            Ch::Unknown => return true,
            _ => return false,
        }
    }
    true
}

fn assign(a: &mut After<'_>, n: usize, val: Val, field: bool, word: bool) -> bool {
    let mut k = 0;
    let mut c = loop {
        match a.next() {
            Ch::C(c) if word && k == 0 && c.is_ascii_lowercase() => return false,
            Ch::C(c) if c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-') => {
                k += 1;
                if k > n {
                    return false;
                }
            }
            other => break other,
        }
    };
    let mut blanks = 0;
    let mut quotes = 0;
    let mut typed = false;
    loop {
        match c {
            Ch::Unknown => return true,
            Ch::End => return a.raw && field && a.key_with_string_value(),
            Ch::C(
                x @ (b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | b'\'' | b'"' | b']' | b'\\'),
            ) if blanks < 4 => {
                blanks += 1;
                quotes += usize::from(x == b'"' || x == b'\'');
                c = a.next();
            }
            Ch::C(b':')
                if blanks == 1 && quotes == 1 && json_non_string_follows(&mut a.clone()) =>
            {
                return false
            }
            Ch::C(b',') if quotes > 0 => return value(a, val),
            Ch::C(b'=' | b':' | b'?' | b'|' | b'.') => return value(a, val),
            // A type between name and operator: `var apiToken string = …`.
            Ch::C(x @ (b'&' | b's' | b'S')) if blanks > 0 && quotes == 0 && !typed => {
                let mut w = vec![x.to_ascii_lowercase()];
                c = loop {
                    match a.next() {
                        Ch::C(y) if y.is_ascii_alphabetic() && w.len() < 7 => {
                            w.push(y.to_ascii_lowercase())
                        }
                        other => break other,
                    }
                };
                if !matches!(w.as_slice(), b"str" | b"string" | b"&str" | b"&string") {
                    return false;
                }
                typed = true;
            }
            Ch::C(_) => return false,
        }
    }
}

/// After an assignment operator: the rest of the operator (`=>`, `:=`, `::=`, `??=`, `||=`, `.=`), up to 5
/// blanks or quotes, then the value.
fn value(a: &mut After<'_>, val: Val) -> bool {
    let Val::Of(class, min) = val else {
        return true;
    };
    // The value may itself start with `=` or `>`: try it both as part of the operator and not.
    let mut b = *a;
    if value_at(&mut b, class, min as usize) {
        return true;
    }
    let mut c = a.next();
    let mut k = 0;
    while k < 3 && matches!(c, Ch::C(b'=' | b'>' | b'?' | b'|' | b':')) {
        c = a.next();
        k += 1;
    }
    value_from(a, c, class, min as usize)
}

fn value_at(a: &mut After<'_>, class: super::rules::Class, min: usize) -> bool {
    let c = a.next();
    value_from(a, c, class, min)
}

fn value_from(a: &mut After<'_>, mut c: Ch, class: super::rules::Class, min: usize) -> bool {
    let mut k = 0;
    while k < 6
        && matches!(
            c,
            Ch::C(b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | b'\'' | b'"' | b'`' | b'\\')
        )
    {
        if matches!(c, Ch::C(b'\'' | b'"' | b'`')) {
            return true; // a quoted value may hold anything
        }
        c = a.next();
        k += 1;
    }
    match c {
        Ch::Unknown => true,
        Ch::C(x) => tail(a, Some(x), |b| class.has(b), min),
        Ch::End => min == 0,
    }
}

/// After a member's colon (`"name": …` inside text): a number, `true`, `false`, `null`,
/// object or array, complete up to a delimiter: anything but a string.
fn json_non_string_follows(a: &mut After<'_>) -> bool {
    let mut c = a.next();
    while matches!(c, Ch::C(b' ' | b'\t' | b'\n' | b'\r')) {
        c = a.next();
    }
    let mut word = Vec::new();
    match c {
        Ch::C(b'{' | b'[') => return true,
        Ch::C(x) if x.is_ascii_alphanumeric() || x == b'-' => word.push(x),
        _ => return false,
    }
    let end = loop {
        match a.next() {
            Ch::C(x) if x.is_ascii_alphanumeric() || matches!(x, b'.' | b'+' | b'-') => {
                word.push(x)
            }
            Ch::C(x) => break Some(x),
            Ch::End => break None,
            Ch::Unknown => return false,
        }
    };
    let scalar = matches!(word.as_slice(), b"true" | b"false" | b"null")
        || (word[0].is_ascii_digit() || word[0] == b'-')
            && word
                .iter()
                .all(|x| x.is_ascii_digit() || matches!(x, b'.' | b'e' | b'E' | b'+' | b'-'));
    scalar
        && matches!(
            end,
            None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
        )
}

/// `user:password@` follows within 400 characters.
fn userinfo(a: &mut After<'_>) -> bool {
    let mut colon = false;
    for _ in 0..400 {
        match a.next() {
            Ch::Unknown => return true,
            Ch::End => return false,
            Ch::C(b'@') => return colon,
            Ch::C(b':') => colon = true,
            Ch::C(
                b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c | b'/' | b'"' | b'\'' | b'<' | b'>'
                | b'\\',
            ) => return false,
            Ch::C(_) => {}
        }
    }
    false
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
mod tests {
    use super::*;

    fn conf(c: Confirm, t: &[u8], after: &str, raw: bool) -> bool {
        let end = memchr::memmem::find(t, after.as_bytes()).unwrap() + after.len();
        confirm(c, t, end, raw, true)
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
}
