//! A text as a reader sees it — pieces reassembled, encodings read — and where each of its
//! bytes came from (issue #25).
//!
//! A token can be hidden from every rule by how it is written: broken by an invisible
//! character, spelled in full-width letters (`ｇｈｐ＿…`), written with HTML entities
//! (`&#65;KIA…`, `ghp&#95;…`, `&#65KIA…`, `&amp;#65;…`), percent-encoded once or more
//! (`ghp%5F…`, `ghp_ab%63d…`, `ghp%255F…`, `%25255F`), with both mixed (`&#37;5F`,
//! `%26%2395%3B`), or cut into pieces that code puts together (`"ghp_ab" + "cd…"`, `+` at a
//! line's end, Python's and C's `"AKIA" "…"`, `["ghp_", "…"].join("")`, `` `ghp_${""}…` ``,
//! the shell's `gh''p_…`, a backslash-newline inside it). [`reading`] gives the text as it
//! reads, in passes — one per form, its one home here; the raw-line triggers that send a
//! string here are in `scan.rs` (`encoded_forms`, the escape anchors) — each a [`Layer`] that
//! maps its bytes back to the bytes it read: a secret found in the reading is replaced at its
//! span in the text as written (pieces, quotes and joiners between them included), and
//! nothing else of the text changes.
//!
//! Each pass reads a form only where it can be a token's (a token's characters on both sides
//! of a splice, a decoded character a token's, a run of full-width letters): a look-alike
//! (`it''s`, `%20`, `&#169 2024`, CJK punctuation) may still read otherwise, but then shows no
//! more secrets than it does as written, and is searched as it is.
//!
//! The reading is searched by the same rules and checks as a plain text, so a reassembled
//! value is a secret only when it would be one written plainly. Callers search it only where
//! the prefilter saw a trigger ([`super::visible_trigger`]) and keep it only when it shows
//! more secrets than the text as written.

/// Characters that show nothing and break a token apart: zero-width space, non-joiner and
/// joiner, word joiner, the byte-order mark (zero-width no-break space), the soft hyphen,
/// direction marks and embeddings, invisible operators, the Mongolian vowel separator, the
/// combining grapheme joiner, the Hangul filler, the emoji variation selector (and the tag
/// characters, U+E0000–U+E007F).
pub const INVISIBLE: [char; 25] = [
    '\u{200B}', '\u{200C}', '\u{200D}', '\u{2060}', '\u{FEFF}', '\u{AD}', '\u{200E}', '\u{200F}',
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2061}', '\u{2062}', '\u{2063}',
    '\u{2064}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{180E}', '\u{034F}', '\u{3164}',
    '\u{FE0F}',
];

/// A text as it reads, and the way back to the text as written.
pub struct Reading {
    /// The text as it reads.
    pub text: Vec<u8>,
    /// The passes that changed something, in order: `layers[0]` maps its output to the text
    /// as written, each later one to the output of the one before.
    layers: Vec<Layer>,
}

impl Reading {
    /// The offset in the text as written where a span starting at `x` of the reading starts.
    pub fn start(&self, x: usize) -> usize {
        self.layers.iter().rev().fold(x, |x, l| l.start(x))
    }

    /// The offset in the text as written where a span ending at `x` (exclusive) of the
    /// reading ends: a decoded byte's span ends after all it was read from.
    pub fn end(&self, x: usize) -> usize {
        self.layers.iter().rev().fold(x, |x, l| l.end(x))
    }
}

/// One pass's map: its output in pieces, each copied from its input or standing for a span
/// of it (an entity, a `%XX` code, the joiner between two literals: empty).
struct Layer {
    pieces: Vec<Piece>,
    out_len: usize,
    src_len: usize,
}

#[derive(Clone, Copy)]
struct Piece {
    /// Where it starts in the output, and its length there.
    out: usize,
    len: usize,
    /// What it was read from in the input.
    src: usize,
    src_len: usize,
    /// Copied byte for byte (else it stands for its source whole).
    copy: bool,
}

impl Layer {
    /// The piece holding output byte `x` (`x < out_len`).
    fn at(&self, x: usize) -> &Piece {
        let i = self.pieces.partition_point(|p| p.out + p.len <= x);
        &self.pieces[i]
    }

    fn start(&self, x: usize) -> usize {
        if x >= self.out_len {
            return self.src_len;
        }
        let p = self.at(x);
        if p.copy {
            p.src + (x - p.out)
        } else {
            p.src
        }
    }

    fn end(&self, x: usize) -> usize {
        if x == 0 {
            return self.start(0);
        }
        let p = self.at(x - 1);
        if p.copy {
            p.src + (x - p.out)
        } else {
            p.src + p.src_len
        }
    }
}

/// Builds one pass's output and [`Layer`]: the input is copied but where [`Builder::put`]
/// says otherwise. Nothing is allocated until it does.
struct Builder<'a> {
    src: &'a [u8],
    out: Vec<u8>,
    pieces: Vec<Piece>,
    /// Input read so far.
    at: usize,
}

impl<'a> Builder<'a> {
    fn new(src: &'a [u8]) -> Builder<'a> {
        Builder {
            src,
            out: Vec::new(),
            pieces: Vec::new(),
            at: 0,
        }
    }

    /// The input up to `p` copied, then `bytes` in place of `src[p..q]`. Spans before what
    /// was read already are ignored.
    fn put(&mut self, p: usize, q: usize, bytes: &[u8]) {
        if p < self.at || q < p {
            return;
        }
        if self.pieces.is_empty() {
            self.out.reserve(self.src.len());
        }
        self.copy_to(p);
        self.pieces.push(Piece {
            out: self.out.len(),
            len: bytes.len(),
            src: p,
            src_len: q - p,
            copy: false,
        });
        self.out.extend_from_slice(bytes);
        self.at = q;
    }

    fn copy_to(&mut self, p: usize) {
        if p > self.at {
            self.pieces.push(Piece {
                out: self.out.len(),
                len: p - self.at,
                src: self.at,
                src_len: p - self.at,
                copy: true,
            });
            self.out.extend_from_slice(&self.src[self.at..p]);
            self.at = p;
        }
    }

    /// The output and its layer; None when nothing was put.
    fn finish(mut self) -> Option<(Vec<u8>, Layer)> {
        if self.pieces.is_empty() {
            return None;
        }
        self.copy_to(self.src.len());
        let layer = Layer {
            pieces: self.pieces,
            out_len: self.out.len(),
            src_len: self.src.len(),
        };
        Some((self.out, layer))
    }
}

/// One pass of a reading: its output and layer, when it changed something.
type Pass = fn(&[u8]) -> Option<(Vec<u8>, Layer)>;

/// `text` as a reader sees it, when that differs: invisible characters removed, full-width
/// letters folded, HTML entities read, a token's percent-encoded characters decoded (encoded
/// once or more), empty template substitutions and quote splices dropped, line
/// continuations inside a token undone, and string literals joined where code puts them
/// together. None when it reads as it is.
///
/// One pass per form, in the order a writer stacks them: an entity may stand for a `%`
/// (`&#37;5F`), so entities are read before percent-encoding; a percent-encoded entity
/// (`%26%2395%3B`) is read by the percent pass itself.
pub fn reading(text: &[u8]) -> Option<Reading> {
    let passes: [Pass; 9] = [
        without_invisible_pass,
        full_width_folded,
        html_entities,
        percent_decoded,
        empty_substitutions,
        quote_splices,
        continuations,
        joined_arrays,
        literals_joined,
    ];
    let mut cur: Option<Vec<u8>> = None;
    let mut layers = Vec::new();
    for pass in passes {
        if let Some((out, layer)) = pass(cur.as_deref().unwrap_or(text)) {
            cur = Some(out);
            layers.push(layer);
        }
    }
    cur.map(|text| Reading { text, layers })
}

/// A token's characters: where pieces meet, both sides hold one.
fn tokenish(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'/' | b'=')
}

/// A character of a token's body that no URL or query uses as a delimiter.
pub(super) fn word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-')
}

/// Blanks (between the pieces of code that joins literals).
fn blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// The most blanks looked past between two pieces, and the most line breaks.
const MAX_BLANKS: usize = 64;
const MAX_BREAKS: usize = 4;

/// Where the blanks and line breaks from `i` end. After a line break, the prefix a tool puts
/// before each line is looked past too: Read's line number (`     2→`, `2\t`), grep's
/// `path:12:` or `path-12-`, a diff's `+` or `-`.
fn skip_blanks(t: &[u8], i: usize) -> usize {
    let mut k = i.min(t.len());
    let (mut blanks, mut breaks) = (0, 0);
    while k < t.len() && blanks < MAX_BLANKS {
        match t[k] {
            b' ' | b'\t' | b'\r' => k += 1,
            b'\n' if breaks < MAX_BREAKS => {
                breaks += 1;
                k += 1 + line_prefix(&t[k + 1..]);
            }
            _ => break,
        }
        blanks += 1;
    }
    k
}

/// The length of the prefix a tool writes before a line of a file (see [`skip_blanks`]).
fn line_prefix(t: &[u8]) -> usize {
    let spaces = t.iter().take(8).take_while(|&&c| c == b' ').count();
    let digits = t[spaces..]
        .iter()
        .take(9)
        .take_while(|c| c.is_ascii_digit())
        .count();
    if digits > 0 {
        let rest = &t[spaces + digits..];
        if rest.starts_with("\u{2192}".as_bytes()) {
            return spaces + digits + 3;
        }
        if rest.first() == Some(&b'\t') {
            return spaces + digits + 1;
        }
    }
    // grep: a path (no blank, quote or colon), then `:12:`; or `-12-` ending the path.
    let run = t
        .iter()
        .take(256)
        .take_while(|&&c| !blank(c) && !quote(c) && c != b':')
        .count();
    let digits_before = |end: usize| {
        t[..end]
            .iter()
            .rev()
            .take(9)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    if run > 0 && t.get(run) == Some(&b':') {
        let n = t[run + 1..]
            .iter()
            .take(9)
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n > 0 && t.get(run + 1 + n) == Some(&b':') {
            return run + n + 2;
        }
    }
    if run >= 4 && t[run - 1] == b'-' {
        let n = digits_before(run - 1);
        if n > 0 && run - 1 - n >= 2 && t[run - 2 - n] == b'-' {
            return run;
        }
    }
    usize::from(matches!(t.first(), Some(b'+' | b'-')))
}

/// The most times `&` of an entity is itself written `&amp;` (`&amp;#65;`, `&amp;amp;#65;`).
const MAX_AMP: usize = 3;

/// `&#65;`, `&#x5f;` (a character by its number) and `&quot;`, `&apos;`, `&amp;`, `&lt;`,
/// `&gt;` read as the character they stand for. A numeric entity is read too when its `&` is
/// escaped again (`&amp;#65;`: a page quoting a page), and without its `;` inside a token
/// (`&#65KIA…`, which browsers read): the character a token's, a token's character after it.
fn html_entities(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    memchr::memchr(b'&', text)?;
    let mut b = Builder::new(text);
    for p in memchr::memchr_iter(b'&', text) {
        if let Some((n, c)) = numeric_entity(&text[p..]) {
            let mut buf = [0; 4];
            b.put(p, p + n, c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let t = &text[p..];
        let named: &[(&[u8], u8)] = &[
            (b"&quot;", b'"'),
            (b"&apos;", b'\''),
            (b"&amp;", b'&'),
            (b"&lt;", b'<'),
            (b"&gt;", b'>'),
        ];
        if let Some((n, c)) = named.iter().find(|(n, _)| t.starts_with(n)) {
            b.put(p, p + n.len(), &[*c]);
        }
    }
    b.finish()
}

/// The numeric entity `t` starts with (`&#65;`, `&#x5f;`, `&amp;#65;`, `&#65` before a
/// token's character): its length and character (see [`html_entities`]).
fn numeric_entity(t: &[u8]) -> Option<(usize, char)> {
    let mut at = 1;
    while t[at..].starts_with(b"amp;") && at < 1 + 4 * MAX_AMP {
        at += 4;
    }
    if t.get(at) != Some(&b'#') {
        return None;
    }
    let (radix, from) = match t.get(at + 1) {
        Some(b'x' | b'X') => (16, at + 2),
        _ => (10, at + 1),
    };
    let digits = t[from..]
        .iter()
        .take(8)
        .take_while(|c| (**c as char).is_digit(radix))
        .count();
    if digits == 0 {
        return None;
    }
    let c = std::str::from_utf8(&t[from..from + digits])
        .ok()
        .and_then(|d| u32::from_str_radix(d, radix).ok())
        .and_then(char::from_u32)
        .filter(|c| !c.is_control())?;
    let end = from + digits;
    if t.get(end) == Some(&b';') {
        return Some((end + 1, c));
    }
    // No `;`: only a token's character inside a token.
    let inside = c.is_ascii() && tokenish(c as u8) && t.get(end).is_some_and(|&n| tokenish(n));
    inside.then_some((end, c))
}

/// The most times a `%XX` is looked at as encoded again (`%2541`, `%252541`, …).
const MAX_PERCENT_AGAIN: usize = 4;

/// `%XX` escapes decoded where they stand for a token's character: its punctuation
/// (`_ - + / =`) anywhere, a letter or digit inside a token (`ghp_ab%63d…`, a token's
/// characters on both sides); a `%XX` encoded again once or more (`%2541`, `%25255F`) for any
/// of a token's characters; and an entity percent-encoded (`%26%2395%3B`, `%26#95;`: a page's
/// `&#95;` put in a URL) for the token's character it stands for. None when there is none.
fn percent_decoded(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    memchr::memchr(b'%', text)?;
    let hex = |c: Option<&u8>| c.and_then(|&c| (c as char).to_digit(16)).map(|d| d as u8);
    let mut b = Builder::new(text);
    for p in memchr::memchr_iter(b'%', text) {
        let byte = |i: usize| match (hex(text.get(i)), hex(text.get(i + 1))) {
            (Some(h), Some(l)) => Some(h * 16 + l),
            _ => None,
        };
        let t = &text[p..];
        if let Some((n, c)) = percent_entity(t) {
            b.put(p, p + n, &[c]);
            continue;
        }
        // `%` then `25` once or more (each a `%` encoded once more), then the code.
        let again = (0..MAX_PERCENT_AGAIN)
            .take_while(|i| t[1 + 2 * i..].starts_with(b"25"))
            .count();
        let decoded = (1..=again)
            .rev()
            .find_map(|m| byte(p + 1 + 2 * m).filter(|&c| tokenish(c)).map(|c| (m, c)));
        if let Some((m, c)) = decoded {
            b.put(p, p + 3 + 2 * m, &[c]);
            continue;
        }
        // Only the characters of tokens the prefilter anchors on (see ESCAPE_ANCHORS), and
        // letters and digits inside a token: a letter, digit, `_` or `-` before (not a
        // query's `=`, a path's `/`), a token's character after.
        let inside = p > 0
            && word(text[p - 1])
            && text.get(p + 3).is_some_and(|&c| tokenish(c) || c == b'%');
        if let Some(c) = byte(p + 1).filter(|&c| {
            matches!(c, b'_' | b'-' | b'+' | b'/' | b'=') || (inside && c.is_ascii_alphanumeric())
        }) {
            b.put(p, p + 3, &[c]);
        }
    }
    b.finish()
}

/// The percent-encoded numeric entity `t` starts with (`%26%2395%3B`, `%26#95;`, `%26%23x5F%3B`)
/// when it stands for a token's character: its length and that character.
fn percent_entity(t: &[u8]) -> Option<(usize, u8)> {
    let rest = t.strip_prefix(b"%26")?;
    let hash = if rest.starts_with(b"%23") {
        3
    } else if rest.first() == Some(&b'#') {
        1
    } else {
        return None;
    };
    let at = 3 + hash;
    let (radix, from) = match t.get(at) {
        Some(b'x' | b'X') => (16, at + 1),
        _ => (10, at),
    };
    let digits = t[from..]
        .iter()
        .take(6)
        .take_while(|c| (**c as char).is_digit(radix))
        .count();
    let end = from + digits;
    let semi = if t[end..].starts_with(b"%3B") || t[end..].starts_with(b"%3b") {
        3
    } else if t.get(end) == Some(&b';') {
        1
    } else {
        return None;
    };
    let c = std::str::from_utf8(&t[from..end])
        .ok()
        .and_then(|d| u32::from_str_radix(d, radix).ok())
        .and_then(|c| u8::try_from(c).ok())
        .filter(|&c| tokenish(c))?;
    (digits > 0).then_some((end + semi, c))
}

/// A template literal's empty substitutions (`` `ghp_${""}…` ``, `${''}`, ``${``}``, with
/// blanks inside: `${ "" }`) dropped where a token's characters stand on both sides.
fn empty_substitutions(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    let mut b = Builder::new(text);
    for p in memchr::memmem::find_iter(text, b"${") {
        if let Some(n) = empty_substitution(&text[p..]) {
            if p > 0 && tokenish(text[p - 1]) && text.get(p + n).is_some_and(|&c| tokenish(c)) {
                b.put(p, p + n, b"");
            }
        }
    }
    b.finish()
}

/// The length of the empty substitution `t` starts with: `${`, blanks, an empty literal,
/// blanks, `}`.
fn empty_substitution(t: &[u8]) -> Option<usize> {
    let spaces = |i: usize| i + t[i..].iter().take(8).take_while(|&&c| c == b' ').count();
    let k = spaces(2);
    let q = *t.get(k)?;
    if !quote(q) || t.get(k + 1) != Some(&q) {
        return None;
    }
    let k = spaces(k + 2);
    (t.get(k) == Some(&b'}')).then_some(k + 1)
}

/// An empty literal spliced into a word: the shell's `gh''p_…` and `'ghp_ab''cd…'` (`''`
/// closes a quoted part and opens the next), `"ghp_ab""cd…"`, dropped where a token's
/// characters stand on both sides (SQL's and CSV's doubled quote, `it''s`, reads as a quote
/// there, but the text then holds no token either way).
fn quote_splices(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    let mut b = Builder::new(text);
    for p in memchr::memchr2_iter(b'\'', b'"', text) {
        let q = text[p];
        if p > 0
            && tokenish(text[p - 1])
            && text.get(p + 1) == Some(&q)
            && text.get(p + 2).is_some_and(|&c| tokenish(c))
        {
            b.put(p, p + 2, b"");
        }
    }
    b.finish()
}

/// A line continuation inside a token (`ghp_abc\` at a line's end, `def…` on the next: the
/// shell, C and Python join them): the backslash and the line break dropped, and the prefix a
/// tool puts before the next line (see [`skip_blanks`]), where a token's characters stand on
/// both sides.
fn continuations(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    let mut b = Builder::new(text);
    for p in memchr::memmem::find_iter(text, b"\\\n") {
        if p == 0 || !tokenish(text[p - 1]) {
            continue;
        }
        let mut q = p + 2;
        q += line_prefix(&text[q..]);
        if text.get(q).is_some_and(|&c| tokenish(c)) {
            b.put(p, q, b"");
        }
    }
    b.finish()
}

/// A literal's body: a token's characters up to the closing quote `q` (from `i`); its end.
fn body_end(t: &[u8], i: usize, q: u8) -> Option<usize> {
    let n = t[i..].iter().take_while(|&&c| tokenish(c)).count();
    (t.get(i + n) == Some(&q)).then_some(i + n)
}

/// The quotes a literal may be written in.
fn quote(c: u8) -> bool {
    matches!(c, b'"' | b'\'' | b'`')
}

/// Arrays of literals joined with an empty separator read as one literal:
/// `["ghp_", "…"].join("")` (JavaScript) and `"".join(["AKIA", "…"])` (Python, a list or a
/// tuple). The literals' bodies must be a token's characters.
fn joined_arrays(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    let mut b = Builder::new(text);
    for p in memchr::memmem::find_iter(text, b"join(") {
        let Some(pieces) = js_join(text, p).or_else(|| py_join(text, p)) else {
            continue;
        };
        for w in pieces.windows(2) {
            b.put(w[0].1, w[1].0, b"");
        }
    }
    b.finish()
}

/// The bodies (start, end) of `[…].join("")`'s literals, `p` at `join(`.
fn js_join(t: &[u8], p: usize) -> Option<Vec<(usize, usize)>> {
    // `].join("")`: the separator empty.
    let sep = t.get(p + 5..p + 8)?;
    if !(quote(sep[0]) && sep[1] == sep[0] && sep[2] == b')') || p < 2 || t[p - 1] != b'.' {
        return None;
    }
    let mut k = p - 1; // `]` is before k
    if t[k - 1] != b']' {
        return None;
    }
    k -= 1;
    let mut pieces = Vec::new();
    // Walk back: blanks, a trailing comma (the first time), `"body"`, blanks, `,` or `[`.
    let back_blanks = |mut k: usize| {
        let mut n = 0;
        while k > 0 && blank(t[k - 1]) && n < MAX_BLANKS {
            k -= 1;
            n += 1;
        }
        k
    };
    k = back_blanks(k);
    if k > 0 && t[k - 1] == b',' {
        k = back_blanks(k - 1);
    }
    loop {
        let q = *t.get(k.checked_sub(1)?)?;
        if !quote(q) {
            return None;
        }
        let end = k - 1;
        let n = t[..end].iter().rev().take_while(|&&c| tokenish(c)).count();
        let start = end - n;
        if start == 0 || t[start - 1] != q {
            return None;
        }
        pieces.push((start, end));
        k = back_blanks(start - 1);
        match t.get(k.checked_sub(1)?)? {
            b',' => k = back_blanks(k - 1),
            b'[' => break,
            _ => return None,
        }
    }
    pieces.reverse();
    (pieces.len() >= 2).then_some(pieces)
}

/// The bodies (start, end) of `"".join([…])`'s literals, `p` at `join(`.
fn py_join(t: &[u8], p: usize) -> Option<Vec<(usize, usize)>> {
    // `"".join(`: the separator empty.
    if p < 3 || t[p - 1] != b'.' || !quote(t[p - 2]) || t[p - 3] != t[p - 2] {
        return None;
    }
    let mut k = skip_blanks(t, p + 5);
    let close = match t.get(k)? {
        b'[' => b']',
        b'(' => b')',
        _ => return None,
    };
    k = skip_blanks(t, k + 1);
    let mut pieces = Vec::new();
    loop {
        let q = *t.get(k)?;
        if !quote(q) {
            return None;
        }
        let end = body_end(t, k + 1, q)?;
        pieces.push((k + 1, end));
        k = skip_blanks(t, end + 1);
        match *t.get(k)? {
            b',' => {
                k = skip_blanks(t, k + 1);
                if t.get(k) == Some(&close) {
                    break;
                }
            }
            c if c == close => break,
            _ => return None,
        }
    }
    (pieces.len() >= 2).then_some(pieces)
}

/// Quoted literals joined where code puts them together: `"a" + "b"`, `'a' . 'b'` (PHP),
/// `'a' || 'b'` (SQL), with `"`, `'` or a backtick, blanks and line breaks around the
/// operator (`"a" +\n  "b"`, `"a"\n  + "b"`); and `"a" "b"` (Python's implicit
/// concatenation, at least one blank or line break between, no backticks). Read `"ab"` when
/// the characters on both sides are a token's.
fn literals_joined(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    const OPS: &[&[u8]] = &[b"+", b"||", b"."];
    let mut b = Builder::new(text);
    for i in memchr::memchr3_iter(b'"', b'\'', b'`', text) {
        if i == 0 || !tokenish(text[i - 1]) {
            continue;
        }
        let q = text[i];
        let k = skip_blanks(text, i + 1);
        let op = OPS.iter().find(|op| text[k..].starts_with(op));
        let j = match op {
            Some(op) => skip_blanks(text, k + op.len()),
            // Implicit concatenation: blanks between, and quotes a backtick is not.
            None if k > i + 1 && q != b'`' => k,
            None => continue,
        };
        if j + 1 < text.len() && text[j] == q && tokenish(text[j + 1]) {
            b.put(i, j + 1, b"");
        }
    }
    b.finish()
}

/// The fewest full-width characters in a run of a token's characters that is folded: CJK
/// prose holds full-width punctuation and short full-width words (`ＯＫ`), no run this long.
pub const FULL_WIDTH_RUN: usize = 8;

/// The ASCII character the full-width form (U+FF01–U+FF5E) `t` starts with stands for, when
/// it is a token's.
fn full_width_char(t: &[u8]) -> Option<u8> {
    let cp = match *t {
        [0xEF, b1 @ (0xBC | 0xBD), b2, ..] if b2 & 0xC0 == 0x80 => {
            0xF000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F)
        }
        _ => return None,
    };
    let c = u8::try_from(cp.checked_sub(0xFEE0)?).ok()?;
    ((0xFF01..=0xFF5E).contains(&cp) && tokenish(c)).then_some(c)
}

/// How many full-width characters of a token the run of a token's characters (full-width or
/// not) that starts at `t` holds, and where it ends.
fn full_width_run(t: &[u8]) -> (usize, usize) {
    let (mut k, mut wide) = (0, 0);
    while k < t.len() {
        if full_width_char(&t[k..]).is_some() {
            wide += 1;
            k += 3;
        } else if tokenish(t[k]) {
            k += 1;
        } else {
            break;
        }
    }
    (wide, k)
}

/// Whether a run of [`FULL_WIDTH_RUN`] full-width characters of a token starts at `t` (the
/// trigger for [`full_width_folded`]).
pub fn full_width_at(t: &[u8]) -> bool {
    full_width_run(t).0 >= FULL_WIDTH_RUN
}

/// A token spelled in full-width forms (`ｇｈｐ＿…`, U+FF01–U+FF5E, as a CJK input method
/// types Latin letters) read as NFKC's width folding reads it: each character folded to its
/// ASCII one, in a run of a token's characters holding at least [`FULL_WIDTH_RUN`] of them.
/// Nothing else of NFKC: only the view the rules search is folded, the text keeps its form.
fn full_width_folded(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    memchr::memchr(0xEF, text)?;
    let mut b = Builder::new(text);
    let mut p = 0;
    while let Some(off) = memchr::memchr(0xEF, &text[p..]) {
        p += off;
        // The run's start: back over a token's ASCII characters before it.
        let start = p - text[..p].iter().rev().take_while(|&&c| tokenish(c)).count();
        let (wide, len) = full_width_run(&text[start..]);
        if wide < FULL_WIDTH_RUN {
            p += 1;
            continue;
        }
        let mut k = start;
        while k < start + len {
            match full_width_char(&text[k..]) {
                Some(c) => {
                    b.put(k, k + 3, &[c]);
                    k += 3;
                }
                None => k += 1,
            }
        }
        p = start + len;
    }
    b.finish()
}

/// `text` without its [`INVISIBLE`] characters; None when it holds none.
pub fn without_invisible(text: &[u8]) -> Option<Vec<u8>> {
    without_invisible_pass(text).map(|(t, _)| t)
}

fn without_invisible_pass(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    let lead = |c: u8| matches!(c, 0x1B | 0xC2 | 0xCD | 0xE1 | 0xE2 | 0xE3 | 0xEF | 0xF3);
    let mut b = Builder::new(text);
    let mut p = 0;
    while let Some(off) = next_lead(&text[p..], lead) {
        p += off;
        match invisible_len(&text[p..]) {
            Some(n) => {
                b.put(p, p + n, b"");
                p += n;
            }
            None => p += 1,
        }
    }
    b.finish()
}

/// The length of the terminal control sequence (`ESC [ … letter`) `t` starts with, if it does.
/// A placeholder right after an `ESC` is not one: `ESC [ R` would read as a control sequence
/// and cut `[REDACTED:…]` to `EDACTED:…]`, so a second run over redact's own output would read
/// something else there (redact would not be idempotent).
fn is_ansi(t: &[u8]) -> Option<usize> {
    if !t.starts_with(b"\x1b[") || t[2..].starts_with(b"REDACTED") {
        return None;
    }
    let n = t[2..]
        .iter()
        .take(16)
        .position(|c| !(c.is_ascii_digit() || *c == b';'))?;
    t[2 + n].is_ascii_alphabetic().then_some(3 + n)
}

/// The first position in `t` whose byte is `lead`: 16 bytes at a time skip what is plain
/// ASCII without an escape byte (most of a transcript), which the compiler does in SIMD.
#[inline]
fn next_lead(t: &[u8], lead: impl Fn(u8) -> bool) -> Option<usize> {
    let mut chunks = t.chunks_exact(16);
    let mut at = 0;
    for c in chunks.by_ref() {
        if c.iter()
            .fold(false, |acc, &b| acc | (b >= 0xC2) | (b == 0x1B))
        {
            if let Some(i) = c.iter().position(|&b| lead(b)) {
                return Some(at + i);
            }
        }
        at += 16;
    }
    chunks
        .remainder()
        .iter()
        .position(|&b| lead(b))
        .map(|i| at + i)
}

/// The length of the invisible character ([`INVISIBLE`], a tag character, a terminal control
/// sequence) `t` starts with, if it does: the character decoded once, not compared with each.
fn invisible_len(t: &[u8]) -> Option<usize> {
    if t.first() == Some(&0x1B) {
        return is_ansi(t);
    }
    let (cp, n) = match *t {
        [b0 @ 0xC2..=0xDF, b1, ..] => ((u32::from(b0 & 0x1F) << 6) | u32::from(b1 & 0x3F), 2),
        [b0 @ 0xE0..=0xEF, b1, b2, ..] => (
            (u32::from(b0 & 0x0F) << 12) | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F),
            3,
        ),
        [b0 @ 0xF0..=0xF4, b1, b2, b3, ..] => (
            (u32::from(b0 & 0x07) << 18)
                | (u32::from(b1 & 0x3F) << 12)
                | (u32::from(b2 & 0x3F) << 6)
                | u32::from(b3 & 0x3F),
            4,
        ),
        _ => return None,
    };
    let invisible = (0xE0000..=0xE007F).contains(&cp)
        || char::from_u32(cp).is_some_and(|c| INVISIBLE.contains(&c));
    invisible.then_some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reading, and the span of the text as written that `needle` of the reading covers.
    fn span(text: &str, needle: &str) -> (String, String) {
        let r = reading(text.as_bytes()).expect("reads otherwise");
        let at = memchr::memmem::find(&r.text, needle.as_bytes()).expect("in the reading");
        let (s, e) = (r.start(at), r.end(at + needle.len()));
        (
            String::from_utf8(r.text.clone()).unwrap(),
            text[s..e].to_string(),
        )
    }

    #[test]
    fn each_form_reads_as_one_token_and_maps_back_to_all_its_pieces() {
        let body = "abcdefghij0123456789";
        let cases = [
            (
                format!("x &#65;KIA{body} y"),
                format!("AKIA{body}"),
                format!("&#65;KIA{body}"),
            ),
            (
                format!("x ghp&#x5F;{body}."),
                format!("ghp_{body}"),
                format!("ghp&#x5F;{body}"),
            ),
            (
                format!("?t=ghp%255F{body}&"),
                format!("ghp_{body}"),
                format!("ghp%255F{body}"),
            ),
            (
                format!("?t=%2541K{body}&"),
                format!("AK{body}"),
                format!("%2541K{body}"),
            ),
            (
                format!("t = [\"ghp_\", \"{body}\"].join(\"\");"),
                format!("ghp_{body}"),
                format!("ghp_\", \"{body}"),
            ),
            (
                format!("t = ''.join(('AK', 'IA', '{body}',))"),
                format!("AKIA{body}"),
                format!("AK', 'IA', '{body}"),
            ),
            (
                format!("k = \"sk-\" +\n  \"{body}\";"),
                format!("sk-{body}"),
                format!("sk-\" +\n  \"{body}"),
            ),
            (
                format!("k = (\n \"AKIA\"\n \"{body}\"\n)"),
                format!("AKIA{body}"),
                format!("AKIA\"\n \"{body}"),
            ),
            (
                format!("`ghp_${{\"\"}}{body}`"),
                format!("ghp_{body}"),
                format!("ghp_${{\"\"}}{body}"),
            ),
            (
                format!("`AKIA` + `{body}`"),
                format!("AKIA{body}"),
                format!("AKIA` + `{body}"),
            ),
            (
                format!("     1\u{2192}k = \"sk-\" +\n     2\u{2192}  \"{body}\""),
                format!("sk-{body}"),
                format!("sk-\" +\n     2\u{2192}  \"{body}"),
            ),
            (
                format!("a.py:3:k = (\"AKIA\"\na.py-4-  \"{body}\")"),
                format!("AKIA{body}"),
                format!("AKIA\"\na.py-4-  \"{body}"),
            ),
            (
                format!("+k = \"ghp_\" +\n+  \"{body}\""),
                format!("ghp_{body}"),
                format!("ghp_\" +\n+  \"{body}"),
            ),
            (
                format!("a\u{200B}b &#65;{body}"),
                format!("A{body}"),
                format!("&#65;{body}"),
            ),
            (
                format!("x &#65KIA{body} y"),
                format!("AKIA{body}"),
                format!("&#65KIA{body}"),
            ),
            (
                format!("x &amp;amp;#65;KIA{body} y"),
                format!("AKIA{body}"),
                format!("&amp;amp;#65;KIA{body}"),
            ),
            (
                format!("/v1/ghp_ab%63d{body}/x"),
                format!("ghp_abcd{body}"),
                format!("ghp_ab%63d{body}"),
            ),
            (
                format!("?t=ghp%25255F{body}&"),
                format!("ghp_{body}"),
                format!("ghp%25255F{body}"),
            ),
            (
                format!("t ghp&#37;5F{body} u"),
                format!("ghp_{body}"),
                format!("ghp&#37;5F{body}"),
            ),
            (
                format!("?t=ghp%26%2395%3B{body}&"),
                format!("ghp_{body}"),
                format!("ghp%26%2395%3B{body}"),
            ),
            (
                format!("`ghp_${{ '' }}{body}`"),
                format!("ghp_{body}"),
                format!("ghp_${{ '' }}{body}"),
            ),
            (
                format!("echo gh''p_{body}"),
                format!("ghp_{body}"),
                format!("gh''p_{body}"),
            ),
            (
                format!("echo \"ghp_ab\"\"{body}\""),
                format!("ghp_ab{body}"),
                format!("ghp_ab\"\"{body}"),
            ),
            (
                format!("t = \"gh\" \"p_{body}\";"),
                format!("ghp_{body}"),
                format!("gh\" \"p_{body}"),
            ),
            (
                format!("echo ghp_ab\\\n     2\u{2192}{body}"),
                format!("ghp_ab{body}"),
                format!("ghp_ab\\\n     2\u{2192}{body}"),
            ),
            (
                format!("令牌 ｇｈｐ＿ａｂｃｄ{body} 。"),
                format!("ghp_abcd{body}"),
                format!("ｇｈｐ＿ａｂｃｄ{body}"),
            ),
        ];
        for (text, reads, written) in cases {
            let (r, got) = span(&text, &reads);
            assert_eq!(got, written, "{text:?} reads {r:?}");
        }
    }

    #[test]
    fn text_that_reads_as_written_has_no_reading() {
        for t in [
            "plain text, 100% sure & done",
            "a %2520 b %25zz &#; &#xZZ; &nbsp; &# 65;",
            "[\"a\", \"b\"].join(\", \") and \", \".join([\"a\", \"b\"])",
            "`${name}` and `${\"\"}` alone",
            "\"a\" + b and \"x\" \" y\"",
            "\"a\" \"\" b c'' ''d",
            "q=%41BC 50%25 caf%C3%A9 &#169 2024 &#38 x ${ name } a\\ \n b",
            "你好，世界！（ＡＢＣ）：ＯＫ　ｔｅｓｔ１２３",
        ] {
            assert!(
                reading(t.as_bytes()).is_none(),
                "{t:?} reads {:?}",
                reading(t.as_bytes()).map(|r| String::from_utf8_lossy(&r.text).into_owned())
            );
        }
    }

    /// Texts made of the pieces every pass reads, mixed: a reading is shorter than its text,
    /// and its spans map back inside the text, in order (as the fuzz target checks on any
    /// bytes).
    #[test]
    fn every_span_of_a_reading_maps_back_in_order() {
        let parts = [
            "&#",
            "65",
            ";",
            "x5f",
            "&quot;",
            "&amp;",
            "%25",
            "5F",
            "%",
            "41",
            "\"",
            "'",
            "`",
            " + ",
            "+\n",
            "\n  ",
            " ",
            "join(",
            "\"\"",
            ".",
            "[",
            "]",
            "(",
            ")",
            ", ",
            "${",
            "}",
            "ghp_",
            "AKIA",
            "ab",
            "\u{200B}",
            "||",
            "''",
            "\\\n",
            "%2525",
            "&amp;",
            "%26%23",
            "${ ",
            "ｇｈｐ＿ａｂｃｄ",
            "&#65",
        ];
        let mut x: u64 = 7;
        let mut read = 0;
        for _ in 0..3000 {
            let mut t = String::new();
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            for _ in 0..(x >> 60) + 4 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                t.push_str(parts[(x >> 33) as usize % parts.len()]);
            }
            let Some(r) = reading(t.as_bytes()) else {
                continue;
            };
            read += 1;
            assert!(r.text.len() < t.len(), "{t:?}");
            let mut last = 0;
            for i in 0..=r.text.len() {
                let (s, e) = (r.start(i), r.end(i));
                assert!(s >= last && s <= t.len(), "{t:?} at {i}");
                assert!(
                    e <= t.len() && (i == 0 || e >= r.start(i - 1)),
                    "{t:?} at {i}"
                );
                last = s;
            }
        }
        assert!(read > 1000, "{read} of 3000 read otherwise");
    }
}
