//! A small JSON string scanner over raw bytes: every string's byte span, whether it is an
//! object key, and the path to it; plus decoding, re-encoding (as JavaScript's
//! `JSON.stringify` writes strings) and JSON-path globs.
//!
//! The scanner never allocates per string and keeps its own stack (no recursion), so a
//! hostile, deeply nested line cannot overflow the call stack.

use std::fmt::Write as _;

/// Escape flags of a scanned string.
pub mod esc {
    /// The string holds at least one backslash escape.
    pub const ANY: u8 = 1;
    /// The string holds a `\u` escape.
    pub const U: u8 = 2;
    /// The string holds a `\/` escape.
    pub const SLASH: u8 = 4;
}

/// One string token: the bytes between its quotes are `line[start..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tok {
    /// First byte after the opening quote.
    pub start: usize,
    /// Index of the closing quote.
    pub end: usize,
    /// [`esc`] flags.
    pub flags: u8,
    /// True for an object key.
    pub is_key: bool,
}

/// One level of nesting around a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Inside an object; the key of the current member, when seen (raw span and flags).
    Obj(Option<(usize, usize, u8)>),
    /// Inside an array, at this index.
    Arr(usize),
}

/// The line is not one well-formed JSON value (at this byte offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed(pub usize);

/// Scan `b`, calling `f` for every string (keys and values) with the enclosing frames.
///
/// Structure is checked (brackets, colons, commas); numbers and literals are skipped without
/// validation and escapes are only delimited, since the caller decodes the strings it needs.
pub fn walk(b: &[u8], mut f: impl FnMut(&Tok, &[Frame])) -> Result<(), Malformed> {
    walk_until(b, usize::MAX, |t, fr| f(t, fr))
}

/// Like [`walk`], but stop (successfully) at the first string starting after `stop`: the
/// caller needs nothing past it, and the rest of the line is not checked.
pub fn walk_until(
    b: &[u8],
    stop: usize,
    mut f: impl FnMut(&Tok, &[Frame]),
) -> Result<(), Malformed> {
    #[derive(Clone, Copy)]
    enum St {
        Value,
        After,
        KeyOrEnd,
        Key,
        Colon,
        ValueOrEnd,
    }
    let n = b.len();
    let mut stack: Vec<Frame> = Vec::new();
    let mut st = St::Value;
    let mut i = 0;
    loop {
        while i < n && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        match st {
            St::Value => {
                let Some(&c) = b.get(i) else {
                    return Err(Malformed(i));
                };
                match c {
                    b'{' => {
                        stack.push(Frame::Obj(None));
                        st = St::KeyOrEnd;
                        i += 1;
                    }
                    b'[' => {
                        stack.push(Frame::Arr(0));
                        st = St::ValueOrEnd;
                        i += 1;
                    }
                    b'"' => {
                        // Past `stop`, only the value of a member whose key started before it.
                        let member = matches!(stack.last(), Some(Frame::Obj(Some((ks, _, _)))) if *ks <= stop);
                        if i > stop && !member {
                            return Ok(());
                        }
                        let (end, flags) = string_end(b, i + 1).ok_or(Malformed(i))?;
                        let tok = Tok {
                            start: i + 1,
                            end,
                            flags,
                            is_key: false,
                        };
                        f(&tok, &stack);
                        i = end + 1;
                        st = St::After;
                    }
                    _ => {
                        let s = i;
                        while i < n
                            && !matches!(
                                b[i],
                                b',' | b'}'
                                    | b']'
                                    | b' '
                                    | b'\t'
                                    | b'\n'
                                    | b'\r'
                                    | b'"'
                                    | b'{'
                                    | b'['
                                    | b':'
                            )
                        {
                            i += 1;
                        }
                        // Only `true`, `false`, `null` and numbers: a bare word (a token alone
                        // on a line that is not JSON) is text, redacted as such.
                        if i == s || !scalar(&b[s..i]) {
                            return Err(Malformed(s));
                        }
                        st = St::After;
                    }
                }
            }
            St::After => {
                let Some(top) = stack.last_mut() else {
                    return if i == n { Ok(()) } else { Err(Malformed(i)) };
                };
                match (b.get(i), top) {
                    (Some(b','), Frame::Obj(k)) => {
                        *k = None;
                        st = St::Key;
                    }
                    (Some(b','), Frame::Arr(idx)) => {
                        *idx += 1;
                        st = St::Value;
                    }
                    (Some(b'}'), Frame::Obj(_)) | (Some(b']'), Frame::Arr(_)) => {
                        stack.pop();
                    }
                    _ => return Err(Malformed(i)),
                }
                i += 1;
            }
            St::KeyOrEnd | St::Key => {
                match b.get(i) {
                    Some(b'}') if matches!(st, St::KeyOrEnd) => {
                        stack.pop();
                        st = St::After;
                        i += 1;
                        continue;
                    }
                    Some(b'"') if i > stop => return Ok(()),
                    Some(b'"') => {}
                    _ => return Err(Malformed(i)),
                }
                let (end, flags) = string_end(b, i + 1).ok_or(Malformed(i))?;
                let tok = Tok {
                    start: i + 1,
                    end,
                    flags,
                    is_key: true,
                };
                f(&tok, &stack);
                if let Some(Frame::Obj(k)) = stack.last_mut() {
                    *k = Some((tok.start, tok.end, flags));
                }
                i = end + 1;
                st = St::Colon;
            }
            St::Colon => {
                if b.get(i) != Some(&b':') {
                    return Err(Malformed(i));
                }
                i += 1;
                st = St::Value;
            }
            St::ValueOrEnd => {
                if b.get(i) == Some(&b']') {
                    stack.pop();
                    st = St::After;
                    i += 1;
                } else {
                    st = St::Value;
                }
            }
        }
    }
}

/// Index of the quote closing a string whose content starts at `i`, and its escape flags.
fn string_end(b: &[u8], mut i: usize) -> Option<(usize, u8)> {
    let mut flags = 0;
    loop {
        i += memchr::memchr2(b'"', b'\\', &b[i..])?;
        if b[i] == b'"' {
            return Some((i, flags));
        }
        flags |= esc::ANY;
        match b.get(i + 1)? {
            b'u' => flags |= esc::U,
            b'/' => flags |= esc::SLASH,
            _ => {}
        }
        i += 2;
    }
}

/// A JSON literal or number (leniently: digits, sign, point and exponent in any order).
fn scalar(b: &[u8]) -> bool {
    matches!(b, b"true" | b"false" | b"null")
        || (matches!(b[0], b'-' | b'0'..=b'9')
            && b.iter()
                .all(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')))
}

/// Decode the raw content of a JSON string into `out` (cleared first). Lone surrogates are kept
/// as their 3-byte generalized UTF-8 form so that [`encode`] writes them back as `\uXXXX`.
/// Returns false on an invalid escape.
pub fn decode(raw: &[u8], out: &mut Vec<u8>) -> bool {
    decode_mapped(raw, out, &mut [])
}

/// [`decode`], and turn `at` (sorted offsets into `raw`) into offsets into `out`: the decoded
/// position of each raw byte, the start of what its escape decodes to for a byte inside one.
pub fn decode_mapped(raw: &[u8], out: &mut Vec<u8>, at: &mut [usize]) -> bool {
    out.clear();
    out.reserve(raw.len());
    let mut i = 0;
    // The offsets not yet mapped.
    let mut next = 0;
    // Map the offsets below `end`: plain bytes `shift` bytes further in `raw` than in `out`,
    // or (`shift` None) bytes of an escape whose bytes start at `out_len`.
    let mut map = |end: usize, out_len: usize, shift: Option<usize>| {
        while next < at.len() && at[next] < end {
            at[next] = shift.map_or(out_len, |d| at[next] - d);
            next += 1;
        }
    };
    while i < raw.len() {
        let Some(p) = memchr::memchr(b'\\', &raw[i..]) else {
            map(usize::MAX, 0, Some(i - out.len()));
            out.extend_from_slice(&raw[i..]);
            break;
        };
        map(i + p, 0, Some(i - out.len()));
        out.extend_from_slice(&raw[i..i + p]);
        i += p;
        let Some(&e) = raw.get(i + 1) else {
            return false;
        };
        i += 2;
        let c = match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let Some(hi) = hex4(raw, i) else {
                    return false;
                };
                i += 4;
                let mut cp = hi;
                if (0xD800..0xDC00).contains(&hi)
                    && raw.get(i) == Some(&b'\\')
                    && raw.get(i + 1) == Some(&b'u')
                {
                    if let Some(lo) = hex4(raw, i + 2).filter(|lo| (0xDC00..0xE000).contains(lo)) {
                        cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                        i += 6;
                    }
                }
                map(i, out.len(), None);
                push_code_point(cp, out);
                continue;
            }
            _ => return false,
        };
        map(i, out.len(), None);
        out.push(c);
    }
    map(usize::MAX, out.len(), None);
    true
}

fn hex4(raw: &[u8], i: usize) -> Option<u32> {
    let s = raw.get(i..i + 4)?;
    let mut v = 0u32;
    for &c in s {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

fn push_code_point(cp: u32, out: &mut Vec<u8>) {
    // Generalized UTF-8: surrogates get the same 3-byte shape as other BMP code points.
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

/// Append `text` JSON-escaped as JavaScript's `JSON.stringify` does (without the quotes): `"`,
/// `\`, `\b \f \n \r \t`, other control characters as `\u00XX`, lone surrogates as `\uXXXX`;
/// everything else is copied as is.
pub fn encode(text: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    let mut run = 0;
    while i < text.len() {
        let c = text[i];
        let esc: Option<&[u8]> = match c {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            _ => None,
        };
        let surrogate =
            c == 0xED && text.get(i + 1).is_some_and(|&d| d >= 0xA0) && i + 2 < text.len();
        if esc.is_none() && c >= 0x20 && !surrogate {
            i += 1;
            continue;
        }
        out.extend_from_slice(&text[run..i]);
        if let Some(e) = esc {
            out.extend_from_slice(e);
            i += 1;
        } else if surrogate {
            let cp = 0xD000 | ((text[i + 1] as u32 & 0x3F) << 6) | (text[i + 2] as u32 & 0x3F);
            let _ = write!(Hex(out), "\\u{cp:04x}");
            i += 3;
        } else {
            let _ = write!(Hex(out), "\\u{c:04x}");
            i += 1;
        }
        run = i;
    }
    out.extend_from_slice(&text[run..]);
}

struct Hex<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Hex<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seg {
    /// An object member.
    Key(String),
    /// An array element.
    Idx(usize),
}

/// The path of a value whose enclosing frames are `frames` (keys decoded from `line`).
pub fn path_of(line: &[u8], frames: &[Frame]) -> Vec<Seg> {
    path_renamed(line, frames, |_| None)
}

/// Like [`path_of`], with the keys starting at offsets for which `renamed` answers replaced
/// by its answer (a key that was itself a secret appears redacted).
pub fn path_renamed(
    line: &[u8],
    frames: &[Frame],
    renamed: impl Fn(usize) -> Option<String>,
) -> Vec<Seg> {
    let mut buf = Vec::new();
    frames
        .iter()
        .filter_map(|f| match *f {
            Frame::Arr(i) => Some(Seg::Idx(i)),
            Frame::Obj(Some((s, _, _))) if renamed(s).is_some() => renamed(s).map(Seg::Key),
            Frame::Obj(Some((s, e, flags))) => {
                let raw = &line[s..e];
                let key = if flags == 0 || !decode(raw, &mut buf) {
                    String::from_utf8_lossy(raw).into_owned()
                } else {
                    String::from_utf8_lossy(&buf).into_owned()
                };
                Some(Seg::Key(key))
            }
            Frame::Obj(None) => None,
        })
        .collect()
}

/// Content blocks (`…content[i]`) on `path`, added to `blocks`: a change there removes a
/// thinking block (its signature would no longer verify).
pub fn content_blocks(path: &[Seg], blocks: &mut Vec<Vec<Seg>>) {
    for (i, seg) in path.iter().enumerate() {
        if seg == &Seg::Key("content".into()) && matches!(path.get(i + 1), Some(Seg::Idx(_))) {
            blocks.push(path[..i + 2].to_vec());
        }
    }
}

/// Render a path as `$.message.content[0].text` (keys that are not identifiers as `["k"]`).
pub fn render(path: &[Seg]) -> String {
    let mut s = String::from("$");
    for seg in path {
        match seg {
            Seg::Idx(i) => {
                let _ = write!(s, "[{i}]");
            }
            Seg::Key(k) if is_ident(k) => {
                s.push('.');
                s.push_str(k);
            }
            Seg::Key(k) => {
                s.push('[');
                s.push_str(&serde_json::to_string(k).unwrap_or_default());
                s.push(']');
            }
        }
    }
    s
}

fn is_ident(k: &str) -> bool {
    let mut c = k.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == '$')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == '$' || x == '-')
}

/// A JSON-path glob: `$.toolUseResult`, `$.message.content[*].input.command`, `**.signature`.
///
/// `*` is any one key or index, `[*]` any index, `**` any number of steps. A glob allows the
/// values at the paths it matches and everything beneath them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathGlob(Vec<GlobSeg>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum GlobSeg {
    Key(String),
    Idx(usize),
    AnyIdx,
    AnyOne,
    AnyMany,
}

impl PathGlob {
    /// Parse a glob; the error says what is wrong.
    pub fn parse(text: &str) -> Result<PathGlob, String> {
        let mut rest = text.trim();
        rest = rest.strip_prefix('$').unwrap_or(rest);
        let mut segs = Vec::new();
        let mut first = true;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let close = r
                    .find(']')
                    .ok_or_else(|| format!("`{text}`: missing `]`"))?;
                let inner = &r[..close];
                segs.push(match inner {
                    "*" => GlobSeg::AnyIdx,
                    _ if inner.starts_with('"') => GlobSeg::Key(
                        serde_json::from_str(inner).map_err(|e| format!("`{text}`: {e}"))?,
                    ),
                    _ => GlobSeg::Idx(inner.parse().map_err(|_| {
                        format!("`{text}`: `[{inner}]` is not an index, `*` or a quoted key")
                    })?),
                });
                rest = &r[close + 1..];
            } else {
                let r = match rest.strip_prefix('.') {
                    Some(r) => r,
                    None if first => rest,
                    None => return Err(format!("`{text}`: expected `.` or `[` at `{rest}`")),
                };
                let end = r.find(['.', '[']).unwrap_or(r.len());
                let name = &r[..end];
                if name.is_empty() {
                    return Err(format!("`{text}`: empty step"));
                }
                segs.push(match name {
                    "*" => GlobSeg::AnyOne,
                    "**" => GlobSeg::AnyMany,
                    _ => GlobSeg::Key(name.to_string()),
                });
                rest = &r[end..];
            }
            first = false;
        }
        if segs.is_empty() {
            return Err(format!(
                "`{text}`: empty path (use `**` to allow everything)"
            ));
        }
        Ok(PathGlob(segs))
    }

    /// True when the glob matches `path` or one of its ancestors.
    pub fn allows(&self, path: &[Seg]) -> bool {
        fn go(g: &[GlobSeg], p: &[Seg]) -> bool {
            let Some((first, rest)) = g.split_first() else {
                return true; // matched an ancestor (or the path itself)
            };
            match first {
                GlobSeg::AnyMany => (0..=p.len()).any(|k| go(rest, &p[k..])),
                _ => {
                    let Some((s, prest)) = p.split_first() else {
                        return false;
                    };
                    let ok = match (first, s) {
                        (GlobSeg::AnyOne, _) => true,
                        (GlobSeg::AnyIdx, Seg::Idx(_)) => true,
                        (GlobSeg::Idx(a), Seg::Idx(b)) => a == b,
                        (GlobSeg::Key(a), Seg::Key(b)) => a == b,
                        _ => false,
                    };
                    ok && go(rest, prest)
                }
            }
        }
        go(&self.0, path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(line: &str) -> Vec<(String, bool, String)> {
        let mut out = Vec::new();
        walk(line.as_bytes(), |t, frames| {
            let mut buf = Vec::new();
            assert!(decode(&line.as_bytes()[t.start..t.end], &mut buf));
            out.push((
                String::from_utf8(buf).unwrap(),
                t.is_key,
                render(&path_of(line.as_bytes(), frames)),
            ));
        })
        .unwrap();
        out
    }

    #[test]
    fn decode_maps_raw_offsets_to_decoded_ones() {
        // Every offset of a raw string holding each kind of escape, checked against decoding
        // the raw bytes before the byte (or before the escape holding it).
        let raw = br#"ab\ncd\"e\u00e9f\ud83d\ude00g\\h\/i\uD800j"#;
        let mut at: Vec<usize> = (0..raw.len()).collect();
        let mut out = Vec::new();
        assert!(decode_mapped(raw, &mut out, &mut at));
        let mut whole = Vec::new();
        assert!(decode(raw, &mut whole));
        assert_eq!(out, whole);
        // Where each escape starts and how long it is in `raw`.
        let mut starts = vec![0; raw.len()];
        let mut k = 0;
        while k < raw.len() {
            let len = match (raw[k], raw.get(k + 1)) {
                (b'\\', Some(b'u')) if raw[k..].starts_with(br"\ud83d\u") => 12,
                (b'\\', Some(b'u')) => 6,
                (b'\\', _) => 2,
                _ => 1,
            };
            starts[k..k + len].iter_mut().for_each(|s| *s = k);
            k += len;
        }
        for (i, &d) in at.iter().enumerate() {
            let mut prefix = Vec::new();
            assert!(decode(&raw[..starts[i]], &mut prefix));
            assert_eq!(d, prefix.len(), "raw offset {i}");
        }
    }

    #[test]
    fn walks_keys_values_and_paths() {
        let s = strings(r#"{"a":"x","b":[1,"y",{"c\"d":"z\n"}],"e":{},"f":[],"g":null}"#);
        assert_eq!(
            s,
            vec![
                ("a".into(), true, "$".into()),
                ("x".into(), false, "$.a".into()),
                ("b".into(), true, "$".into()),
                ("y".into(), false, "$.b[1]".into()),
                ("c\"d".into(), true, "$.b[2]".into()),
                ("z\n".into(), false, "$.b[2][\"c\\\"d\"]".into()),
                ("e".into(), true, "$".into()),
                ("f".into(), true, "$".into()),
                ("g".into(), true, "$".into()),
            ]
        );
    }

    #[test]
    fn rejects_malformed_lines() {
        for bad in [
            r#"{"a":"x""#,
            r#"{"a" "x"}"#,
            r#"{"a":"x"} x"#,
            r#"[1,2"#,
            "",
            r#"{"a":}"#,
            r#"{"a":"\"#,
        ] {
            assert!(walk(bad.as_bytes(), |_, _| {}).is_err(), "{bad}");
        }
        assert!(walk(b" [1, true, \"x\"] ", |_, _| {}).is_ok());
    }

    #[test]
    fn decode_encode_round_trip_like_json_stringify() {
        let raw = r#"a\"b\\c\/d\n\t\u0001\u00e9\ud83d\ude00\ud800x"#;
        let mut d = Vec::new();
        assert!(decode(raw.as_bytes(), &mut d));
        let mut e = Vec::new();
        encode(&d, &mut e);
        assert_eq!(
            String::from_utf8_lossy(&e),
            "a\\\"b\\\\c/d\\n\\t\\u0001é😀\\ud800x"
        );
        // What serde_json decodes, we decode too.
        let v: String = serde_json::from_str(&format!(
            "\"{}\"",
            String::from_utf8_lossy(&e).replace("\\ud800", "")
        ))
        .unwrap();
        assert!(v.starts_with("a\"b\\c/d\n\t\u{1}é😀"));
        assert!(!decode(br"\x", &mut d));
        assert!(!decode(br"\u12", &mut d));
    }

    #[test]
    fn globs_allow_paths_and_subtrees() {
        let p = vec![
            Seg::Key("message".into()),
            Seg::Key("content".into()),
            Seg::Idx(2),
            Seg::Key("input".into()),
            Seg::Key("command".into()),
        ];
        for (g, ok) in [
            ("$.message", true),
            ("$.message.content[*].input.command", true),
            ("$.message.content[2]", true),
            ("$.message.content[1]", false),
            ("message.*.*.input", true),
            ("**.command", true),
            ("**.text", false),
            ("$.toolUseResult", false),
            ("$[\"message\"].content", true),
        ] {
            assert_eq!(PathGlob::parse(g).unwrap().allows(&p), ok, "{g}");
        }
        for bad in ["", "$", "$.a[", "$.a[x]", "$..a"] {
            assert!(PathGlob::parse(bad).is_err(), "{bad}");
        }
    }
}
