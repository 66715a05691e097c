//! A text as a reader sees it — pieces reassembled, encodings read — and where each of its
//! bytes came from (issue #25).
//!
//! A token can be hidden from every rule by how it is written: broken by an invisible
//! character, written with HTML entities (`&#65;KIA…`, `ghp&#95;…`), percent-encoded once or
//! twice (`ghp%5F…`, `ghp%255F…`), or cut into pieces that code puts together (`"ghp_ab" +
//! "cd…"`, `+` at a line's end, Python's `"AKIA" "…"`, `["ghp_", "…"].join("")`,
//! `` `ghp_${""}…` ``). [`reading`] gives the text as it reads, in passes, each a [`Layer`]
//! that maps its bytes back to the bytes it read: a secret found in the reading is replaced at
//! its span in the text as written (pieces, quotes and joiners between them included), and
//! nothing else of the text changes.
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

/// `text` as a reader sees it, when that differs: invisible characters removed, HTML
/// entities read, a token's percent-encoded characters decoded (once or twice encoded),
/// empty template substitutions dropped, and string literals joined where code puts them
/// together. None when it reads as it is.
pub fn reading(text: &[u8]) -> Option<Reading> {
    let passes: [Pass; 6] = [
        without_invisible_pass,
        html_entities,
        percent_decoded,
        empty_substitutions,
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

/// `&#65;`, `&#x5f;` (a character by its number, `;` required) and `&quot;`, `&apos;`,
/// `&amp;`, `&lt;`, `&gt;` read as the character they stand for.
fn html_entities(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    memchr::memchr(b'&', text)?;
    let mut b = Builder::new(text);
    for p in memchr::memchr_iter(b'&', text) {
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
            continue;
        }
        if t.get(1) != Some(&b'#') {
            continue;
        }
        let (radix, from) = match t.get(2) {
            Some(b'x' | b'X') => (16, 3),
            _ => (10, 2),
        };
        let digits = t[from..]
            .iter()
            .take(8)
            .take_while(|c| (**c as char).is_digit(radix))
            .count();
        if digits == 0 || t.get(from + digits) != Some(&b';') {
            continue;
        }
        let num = std::str::from_utf8(&t[from..from + digits])
            .ok()
            .and_then(|d| u32::from_str_radix(d, radix).ok())
            .and_then(char::from_u32)
            .filter(|c| !c.is_control());
        if let Some(c) = num {
            let mut buf = [0; 4];
            b.put(p, p + from + digits + 1, c.encode_utf8(&mut buf).as_bytes());
        }
    }
    b.finish()
}

/// `%XX` escapes of a token's punctuation (`_ - + / =`) decoded, and `%25XX` (a `%XX` encoded
/// once more) of any of a token's characters; None when there is none.
fn percent_decoded(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    memchr::memchr(b'%', text)?;
    let hex = |c: Option<&u8>| c.and_then(|&c| (c as char).to_digit(16)).map(|d| d as u8);
    let mut b = Builder::new(text);
    for p in memchr::memchr_iter(b'%', text) {
        let byte = |i: usize| match (hex(text.get(i)), hex(text.get(i + 1))) {
            (Some(h), Some(l)) => Some(h * 16 + l),
            _ => None,
        };
        if text[p + 1..].starts_with(b"25") {
            if let Some(c) = byte(p + 3).filter(|&c| tokenish(c)) {
                b.put(p, p + 5, &[c]);
                continue;
            }
        }
        // Only the characters of tokens the prefilter anchors on (see ESCAPE_ANCHORS).
        if let Some(c) = byte(p + 1).filter(|c| matches!(c, b'_' | b'-' | b'+' | b'/' | b'=')) {
            b.put(p, p + 3, &[c]);
        }
    }
    b.finish()
}

/// A template literal's empty substitutions (`` `ghp_${""}…` ``, `${''}`, ``${``}``) dropped
/// where a token's characters stand on both sides.
fn empty_substitutions(text: &[u8]) -> Option<(Vec<u8>, Layer)> {
    let mut b = Builder::new(text);
    for p in memchr::memmem::find_iter(text, b"${") {
        let t = &text[p..];
        let n = [&b"${\"\"}"[..], b"${''}", b"${``}"]
            .iter()
            .find(|s| t.starts_with(s))
            .map(|s| s.len());
        if let Some(n) = n {
            if p > 0 && tokenish(text[p - 1]) && text.get(p + n).is_some_and(|&c| tokenish(c)) {
                b.put(p, p + n, b"");
            }
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
fn is_ansi(t: &[u8]) -> Option<usize> {
    if !t.starts_with(b"\x1b[") {
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
            "\"a\"\"b\"",
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
            "&#", "65", ";", "x5f", "&quot;", "&amp;", "%25", "5F", "%", "41", "\"", "'", "`",
            " + ", "+\n", "\n  ", " ", "join(", "\"\"", ".", "[", "]", "(", ")", ", ", "${", "}",
            "ghp_", "AKIA", "ab", "\u{200B}", "||",
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
