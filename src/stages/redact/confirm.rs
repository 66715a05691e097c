//! The prefilter's second step: after a keyword occurrence, a cheap and sound look at what
//! follows it ([`Confirm`]), on the raw JSON line (escapes read as such, a quote ends the
//! string) or on decoded text. A confirm only rejects occurrences that cannot start a match of
//! the keyword's rule.

use super::rules::{Confirm, Val};

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

/// Does what follows a keyword occurrence (`start..end`) allow a match of its rule?
/// `raw`: `t` is a raw JSON line; `field`: the rule also reads JSON members.
pub(super) fn confirm(
    c: Confirm,
    t: &[u8],
    start: usize,
    end: usize,
    raw: bool,
    field: bool,
) -> bool {
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
        Confirm::Prose(n) => word_starts(t, start, raw) && prose(&mut a, n as usize),
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

/// Skip flag-name bytes (`[A-Za-z0-9_-]`), at most `max`: their count and the character after
/// them, or the verdict when the text cannot be judged (`true`) or the run is too long.
fn name_run(a: &mut After<'_>, max: usize) -> Result<(usize, Ch), bool> {
    let mut k = 0;
    loop {
        match a.next() {
            Ch::Unknown => return Err(true),
            Ch::C(c) if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' => {
                k += 1;
                if k > max {
                    return Err(false);
                }
            }
            c => return Ok((k, c)),
        }
    }
}

/// `[A-Za-z0-9_-]{10,2000}\.eyJ`
fn jwt_header(a: &mut After<'_>) -> bool {
    match name_run(a, 2000) {
        Err(verdict) => return verdict,
        Ok((k, Ch::C(b'.'))) if k >= 10 => {}
        Ok(_) => return false,
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
    match name_run(a, n) {
        Err(verdict) => verdict,
        Ok((_, c)) => matches!(c, Ch::C(b'=' | b' ' | b'\t')),
    }
}

/// A word starts at `start` (the rule's `\b` before the keyword): no ASCII letter, digit or
/// `_` before it (`input_tokens`, `csrfToken` and `thread_key` are not prose about a token or
/// key). On a raw line a byte before may belong to an escape (`\ntoken`, `\u00e9token`), which
/// decodes to something else: with a backslash among the 6 bytes before, the word may start.
fn word_starts(t: &[u8], start: usize, raw: bool) -> bool {
    let Some(&b) = start.checked_sub(1).and_then(|i| t.get(i)) else {
        return true;
    };
    if !(b.is_ascii_alphanumeric() || b == b'_') {
        return true;
    }
    raw && t[start.saturating_sub(6)..start].contains(&b'\\')
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
    let first = match c {
        Ch::Unknown => return true,
        Ch::C(x @ (b' ' | b'\t' | b':' | b'=')) => x,
        _ => return false,
    };
    let mut buf = Vec::with_capacity(n + 1);
    buf.push(first);
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
