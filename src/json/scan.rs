//! A validating JSON scanner over one line that allocates nothing.
//!
//! `transcript::record::Header::parse` walks a record with it: the few fields a structural
//! stage needs are read in place, everything else (message text, tool output, base64) is
//! skipped in one pass. Strings are skipped 32 bytes at a time with SSE2 compares, which is
//! what makes a session-scoped pipeline run near memory speed; serde_json's `IgnoredAny`
//! path visits every byte of every string several times over a header's nested `RawValue`s.
//!
//! The scanner accepts exactly RFC 8259 JSON, like serde_json (the differential tests in
//! `header.rs` hold it to that), except that, like serde_json when it skips a string, it
//! does not insist that `\u` escapes pair their surrogates. UTF-8 is checked once per line by
//! the caller.

/// Why a line is not JSON (the scanner only needs to say *that* it is not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotJson;

/// What a scan step yields: the value, or [`NotJson`] where the bytes stop being JSON.
pub type Scan<T> = Result<T, NotJson>;

/// A JSON string as written: the bytes between the quotes, escapes undecoded.
#[derive(Debug, Clone, Copy)]
pub struct RawStr<'a> {
    /// The bytes between the quotes.
    pub body: &'a [u8],
    /// The body plus the closing quote (what the old header code called the raw text).
    pub with_close: &'a [u8],
    /// True when the body holds a backslash escape.
    pub escaped: bool,
}

impl<'a> RawStr<'a> {
    /// The decoded string; `None` for an escape that does not decode (a lone surrogate).
    pub fn decode(&self) -> Option<String> {
        if !self.escaped {
            return std::str::from_utf8(self.body).ok().map(str::to_string);
        }
        let mut quoted = Vec::with_capacity(self.body.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(self.body);
        quoted.push(b'"');
        serde_json::from_slice(&quoted).ok()
    }

    /// True when the decoded string equals `s` (which holds no character JSON must escape).
    pub fn is(&self, s: &str) -> bool {
        if self.escaped {
            self.decode().as_deref() == Some(s)
        } else {
            self.body == s.as_bytes()
        }
    }
}

/// A position in one line of JSON.
pub struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
    /// Length of the longest string body seen so far (escapes counted as written).
    pub longest_string: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `b`.
    pub fn new(b: &'a [u8]) -> Self {
        Cursor {
            b,
            i: 0,
            longest_string: 0,
        }
    }

    /// Skip JSON whitespace.
    #[inline]
    pub fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            if !matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    /// Move the cursor to byte `i` of its line (the start of a value found earlier).
    pub fn skip_to(&mut self, i: usize) {
        self.i = i;
    }

    /// The byte offset of the cursor in its line.
    pub fn pos(&self) -> usize {
        self.i
    }

    /// True when only whitespace is left.
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    #[inline]
    fn expect(&mut self, c: u8) -> Scan<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(NotJson)
        }
    }

    /// Read a string (the cursor must be at its opening quote, after whitespace).
    pub fn string(&mut self) -> Scan<RawStr<'a>> {
        self.expect(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            self.i = find_special(self.b, self.i);
            match self.b.get(self.i) {
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    self.escape()?;
                }
                // A control character, or the line ended inside the string.
                _ => return Err(NotJson),
            }
        }
        let body = &self.b[start..self.i];
        self.i += 1;
        self.longest_string = self.longest_string.max(body.len());
        Ok(RawStr {
            body,
            with_close: &self.b[start..self.i],
            escaped,
        })
    }

    fn escape(&mut self) -> Scan<()> {
        // At the backslash.
        match self.b.get(self.i + 1) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.i += 2,
            Some(b'u') => {
                let hex = self.b.get(self.i + 2..self.i + 6).ok_or(NotJson)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(NotJson);
                }
                self.i += 6;
            }
            _ => return Err(NotJson),
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> Scan<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(NotJson)
        }
    }

    fn digits(&mut self) -> usize {
        let n = self.b[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        self.i += n;
        n
    }

    fn number(&mut self) -> Scan<()> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(NotJson),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(NotJson);
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(NotJson);
            }
        }
        Ok(())
    }

    /// A scalar value (string, number, literal); `Ok(None)` when the next value is a container.
    fn scalar(&mut self) -> Scan<Option<()>> {
        match self.peek().ok_or(NotJson)? {
            b'"' => self.string().map(|_| Some(())),
            b't' => self.literal(b"true").map(Some),
            b'f' => self.literal(b"false").map(Some),
            b'n' => self.literal(b"null").map(Some),
            b'-' | b'0'..=b'9' => self.number().map(Some),
            b'{' | b'[' => Ok(None),
            _ => Err(NotJson),
        }
    }

    /// Read `true` / `false` / anything else (skipped): true only for `true`.
    pub fn flag(&mut self) -> Scan<bool> {
        if self.peek() == Some(b't') {
            self.literal(b"true")?;
            return Ok(true);
        }
        self.skip_value()?;
        Ok(false)
    }

    /// A string value, or `None` (and the value skipped) for any other type.
    pub fn opt_string(&mut self) -> Scan<Option<RawStr<'a>>> {
        if self.peek() == Some(b'"') {
            return self.string().map(Some);
        }
        self.skip_value()?;
        Ok(None)
    }

    /// Skip one value of any type and depth (no recursion: a hostile line may nest deeply).
    pub fn skip_value(&mut self) -> Scan<()> {
        let mut stack = Nesting::default();
        loop {
            // A value starts here.
            if self.scalar()?.is_none() {
                let open = self.b[self.i];
                self.i += 1;
                let close = if open == b'{' { b'}' } else { b']' };
                if self.peek() == Some(close) {
                    self.i += 1;
                } else {
                    stack.push(open == b'{');
                    if open == b'{' {
                        self.key()?;
                    }
                    continue;
                }
            }
            // After a value: close finished containers, or move to the next member.
            loop {
                let Some(in_object) = stack.top() else {
                    return Ok(());
                };
                match self.peek() {
                    Some(b',') => {
                        self.i += 1;
                        if in_object {
                            self.key()?;
                        }
                        break;
                    }
                    Some(b'}') if in_object => {
                        self.i += 1;
                        stack.pop();
                    }
                    Some(b']') if !in_object => {
                        self.i += 1;
                        stack.pop();
                    }
                    _ => return Err(NotJson),
                }
            }
        }
    }

    fn key(&mut self) -> Scan<RawStr<'a>> {
        let k = self.string()?;
        self.expect(b':')?;
        Ok(k)
    }

    /// Walk the members of an object (the cursor at `{`): `member` gets each key and must
    /// consume its value.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, RawStr<'a>) -> Scan<()>,
    ) -> Scan<()> {
        self.expect(b'{')?;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            let k = self.key()?;
            member(self, k)?;
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(NotJson),
            }
        }
    }

    /// Walk the elements of an array (the cursor at `[`): `element` must consume each one.
    pub fn array(&mut self, mut element: impl FnMut(&mut Self) -> Scan<()>) -> Scan<()> {
        self.expect(b'[')?;
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(NotJson),
            }
        }
    }
}

/// The open containers of [`Cursor::skip_value`]: a bit per level, on the heap only when a
/// value nests deeper than 128 levels.
#[derive(Default)]
struct Nesting {
    bits: u128,
    depth: usize,
    deep: Vec<bool>,
}

impl Nesting {
    fn push(&mut self, object: bool) {
        if self.depth < 128 {
            self.bits = (self.bits & !(1 << self.depth)) | (u128::from(object) << self.depth);
        } else {
            self.deep.push(object);
        }
        self.depth += 1;
    }

    fn pop(&mut self) {
        self.depth -= 1;
        if self.depth >= 128 {
            self.deep.pop();
        }
    }

    fn top(&self) -> Option<bool> {
        match self.depth {
            0 => None,
            d if d > 128 => self.deep.last().copied(),
            d => Some(self.bits >> (d - 1) & 1 == 1),
        }
    }
}

/// Index of the first `"`, `\` or control character at or after `i` (or `b.len()`).
#[inline]
fn find_special(b: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        find_special_sse2(b, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        find_special_scalar(b, i)
    }
}

fn find_special_scalar(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    b.len()
}

#[cfg(target_arch = "x86_64")]
fn find_special_sse2(b: &[u8], mut i: usize) -> usize {
    // SSE2 is part of the x86_64 baseline, so no runtime detection is needed.
    use std::arch::x86_64::*;
    // SAFETY: every load reads 16 bytes at `i` or `i + 16` only while `i + 32 <= b.len()`
    // (or `i + 16 <= b.len()` in the second loop), so all reads are inside `b`.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let control = _mm_set1_epi8(0x1f);
        let special = |v: __m128i| {
            // v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v.
            let ctl = _mm_cmpeq_epi8(_mm_min_epu8(v, control), v);
            _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                ctl,
            )
        };
        let p = b.as_ptr();
        while i + 32 <= b.len() {
            let a = special(_mm_loadu_si128(p.add(i) as *const __m128i));
            let c = special(_mm_loadu_si128(p.add(i + 16) as *const __m128i));
            let m = _mm_movemask_epi8(a) as u32 | ((_mm_movemask_epi8(c) as u32) << 16);
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 32;
        }
        while i + 16 <= b.len() {
            let m = _mm_movemask_epi8(special(_mm_loadu_si128(p.add(i) as *const __m128i)));
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
    }
    find_special_scalar(b, i)
}

/// Index of the quote that closes the string whose contents start at `i` (just after its
/// opening quote), skipping escapes with a SIMD search for the next quote or backslash; `None`
/// when the string is unterminated.
pub fn string_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    loop {
        i += memchr::memchr2(b'"', b'\\', bytes.get(i..)?)?;
        if bytes[i] == b'"' {
            return Some(i);
        }
        i += 2; // an escape: its second byte cannot end the string
    }
}

/// Where the value of the top-level `key` of an object line is (the last one, when a key
/// repeats, as a parsed value keeps the last); `None` when absent or not a JSON object.
pub fn top_field_span(line: &[u8], key: &str) -> Option<std::ops::Range<usize>> {
    let mut c = Cursor::new(line);
    let mut span = None;
    c.object(|c, k| {
        c.ws();
        let from = c.i;
        c.skip_value()?;
        if k.is(key) {
            span = Some(from..c.i);
        }
        Ok(())
    })
    .ok()?;
    c.at_end().then_some(span)?
}

/// The JSON text, as written, of `field` in the first block of `message.content` whose `type`
/// is `kind` and whose `id_key` is the string `id`; `None` when there is none (or the line is
/// not JSON). Reads nothing into memory.
pub fn block_field<'a>(
    line: &'a [u8],
    kind: &str,
    id_key: &str,
    id: &str,
    field: &str,
) -> Option<&'a [u8]> {
    let mut c = Cursor::new(line);
    let mut found = None;
    content_blocks(
        &mut c,
        |c, _| c.skip_value(),
        |c| {
            if found.is_some() || c.peek() != Some(b'{') {
                return c.skip_value();
            }
            let (mut is_kind, mut is_id, mut span) = (false, false, None);
            c.object(|c, key| {
                let matches = |s: Option<RawStr<'_>>, want: &str| s.is_some_and(|s| s.is(want));
                if key.is("type") {
                    is_kind = matches(c.opt_string()?, kind);
                } else if key.is(id_key) {
                    is_id = matches(c.opt_string()?, id);
                } else if key.is(field) {
                    c.ws();
                    let from = c.i;
                    c.skip_value()?;
                    span = Some(from..c.i);
                } else {
                    c.skip_value()?;
                }
                Ok(())
            })?;
            if is_kind && is_id {
                found = span;
            }
            Ok(())
        },
    )
    .ok()?;
    found.map(|r| &line[r])
}

/// Walk the record object at the cursor: `block` gets each element of `message.content` when
/// it is a list, `other` every top-level member but `message` (both consume what they get).
pub fn content_blocks<'a>(
    c: &mut Cursor<'a>,
    mut other: impl FnMut(&mut Cursor<'a>, RawStr<'a>) -> Scan<()>,
    mut block: impl FnMut(&mut Cursor<'a>) -> Scan<()>,
) -> Scan<()> {
    c.object(|c, key| {
        if !key.is("message") || c.peek() != Some(b'{') {
            return other(c, key);
        }
        c.object(|c, key| {
            if !key.is("content") || c.peek() != Some(b'[') {
                return c.skip_value();
            }
            c.array(&mut block)
        })
    })
}

/// True when `b` is one valid JSON value (whitespace around it allowed) in valid UTF-8.
pub fn is_json(b: &[u8]) -> bool {
    if std::str::from_utf8(b).is_err() {
        return false;
    }
    let mut c = Cursor::new(b);
    c.skip_value().is_ok() && c.at_end()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn serde_ok(b: &[u8]) -> bool {
        let mut de = serde_json::Deserializer::from_slice(b);
        de.disable_recursion_limit();
        let ok = serde::de::IgnoredAny::deserialize(serde_stacker::Deserializer::new(&mut de))
            .is_ok()
            && de.end().is_ok();
        ok && std::str::from_utf8(b).is_ok()
    }

    use serde::Deserialize;

    #[test]
    fn agrees_with_serde_on_edge_cases() {
        let cases: &[&[u8]] = &[
            b"{}",
            b" { } ",
            b"[]",
            b"[1,2,]",
            b"{\"a\":1,}",
            b"{\"a\" 1}",
            b"{a:1}",
            b"\"\\u12g4\"",
            b"\"\\ud800\"",
            b"\"\\x\"",
            b"\"a\tb\"",
            b"\"a\x7fb\"",
            b"01",
            b"-",
            b"-0.5e+3",
            b"1.",
            b"1e",
            b".5",
            b"tru",
            b"nul",
            b"[[[[]]]]",
            b"[[[[]]]",
            b"{\"a\":[{\"b\":{}}]}",
            b"{} {}",
            b"",
            b"   ",
            b"\"abc",
            b"\"\xff\"",
        ];
        for c in cases {
            assert_eq!(is_json(c), serde_ok(c), "{:?}", String::from_utf8_lossy(c));
        }
    }

    #[test]
    fn deep_nesting_does_not_recurse() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(is_json(deep.as_bytes()));
        let broken = format!("{}{}", "[{\"a\":".repeat(50_000), "1");
        assert!(!is_json(broken.as_bytes()));
    }

    #[test]
    fn simd_and_scalar_find_the_same_byte() {
        let mut text = vec![b'a'; 100];
        for at in 0..100 {
            for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                text[at] = special;
                for start in [0, 1, 15, 16, 17, 31, 33] {
                    assert_eq!(
                        find_special(&text, start),
                        find_special_scalar(&text, start),
                        "at {at} start {start}"
                    );
                }
                text[at] = b'a';
            }
        }
        // Bytes >= 0x80 are not control characters.
        assert_eq!(find_special(&[0xc3; 40], 0), 40);
    }

    proptest! {
        #[test]
        fn validity_matches_serde(s in "[\\[\\]{}\":,0-9a-z\\\\. \\-+eE\t\u{1}é]{0,40}") {
            prop_assert_eq!(is_json(s.as_bytes()), serde_ok(s.as_bytes()), "{:?}", s);
        }

        #[test]
        fn generated_values_are_json(v in arb_json()) {
            let text = serde_json::to_string(&v).unwrap();
            prop_assert!(is_json(text.as_bytes()));
            let mut c = Cursor::new(text.as_bytes());
            c.skip_value().unwrap();
            prop_assert!(c.at_end());
        }
    }

    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(serde_json::Value::from),
            ".*".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(6, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
                prop::collection::btree_map(".*", inner, 0..8)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
