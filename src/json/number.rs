//! Numbers that survive an edit as they were written, without serde_json's
//! `arbitrary_precision`.
//!
//! A record a stage edits as a [`Value`] is parsed and serialized again. Plain serde_json keeps
//! integers exact (u64/i64) but turns every other number into an `f64` and writes it its own way
//! (`1e5` → `100000.0`, `1.50` → `1.5`, a 30-digit integer rounded). `arbitrary_precision` would
//! keep the text, but it is a crate-wide feature: Cargo unifies it into every crate of a
//! dependent's build, and it breaks their `#[serde(flatten)]` maps of numbers. So cchist keeps the
//! text itself:
//!
//! - [`write()`] formats floats as JavaScript's `JSON.stringify` does (Claude Code is a Node
//!   program: every number it writes is in that form, so the form is also what a value a stage
//!   computes should look like);
//! - [`parse`] finds the rare number whose text that formatting would not reproduce (another
//!   writer's `1.0`, `1E5`, an integer beyond 64 bits) and holds it in the value as a marked
//!   string, which [`write()`] puts back as the original number text. A stage walking the value sees
//!   such a number as a string; every byte reader (redaction, the writer) sees the exact text.

use std::io;
use std::sync::OnceLock;

use serde::Serialize;
use serde_json::ser::Formatter;
use serde_json::Value;

/// The first characters of a held number's marker: two private-use characters, then a per-process
/// random nonce, so no string read from input can pass for one (an input string equal to a marker
/// would otherwise be written out as raw JSON).
fn marker() -> &'static str {
    static MARKER: OnceLock<String> = OnceLock::new();
    MARKER.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x6363_6869_7374);
        format!("\u{E000}\u{E001}{:016x}:", h.finish())
    })
}

/// Parse `bytes` (one JSON value) into a [`Value`] whose numbers [`write()`] writes back as they
/// were in `bytes`. `parse_plain` is the caller's parser (depth limits are its business).
pub fn parse(
    bytes: &[u8],
    parse_plain: impl FnOnce(&[u8]) -> Result<Value, String>,
) -> Result<Value, String> {
    let mut v = parse_plain(bytes)?;
    let tokens = number_tokens(bytes);
    if tokens.iter().all(|t| is_canonical(t)) {
        return Ok(v);
    }
    // Walk the value in document order beside the tokens (`preserve_order` keeps objects in
    // input order). A repeated key leaves fewer numbers in the value than in the text: then the
    // two cannot be matched and the value is kept as parsed.
    if count_numbers(&v) == tokens.len() {
        let mut next = tokens.iter();
        hold(&mut v, &mut next);
    }
    Ok(v)
}

/// Serialize `v` as compact JSON: floats as JavaScript writes them, held numbers as read.
pub fn write<W: io::Write>(out: W, v: &Value) -> io::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(out, ExactFormatter::default());
    v.serialize(&mut ser).map_err(io::Error::other)
}

/// [`write()`] into a new vector.
pub fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write(&mut out, v).expect("writing a Value to memory cannot fail");
    out
}

/// The number tokens of a JSON text, in order (strings skipped).
fn number_tokens(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => match super::scan::string_end(bytes, i + 1) {
                Some(end) => i = end + 1,
                None => return out,
            },
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                {
                    i += 1;
                }
                out.push(&bytes[start..i]);
            }
            _ => i += 1,
        }
    }
    out
}

/// Whether [`write()`] writes this number token back as it is.
fn is_canonical(t: &[u8]) -> bool {
    // The common case, cheaply: a plain integer of at most 18 digits, no leading zero, not -0.
    let digits = t.strip_prefix(b"-").unwrap_or(t);
    if !digits.is_empty() && digits.len() <= 18 && digits.iter().all(u8::is_ascii_digit) {
        return (digits[0] != b'0' || digits.len() == 1) && t != b"-0";
    }
    let Ok(text) = std::str::from_utf8(t) else {
        return false;
    };
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Number(_)) => to_vec(&v) == t,
        _ => false,
    }
}

fn count_numbers(v: &Value) -> usize {
    match v {
        Value::Number(_) => 1,
        Value::Array(a) => a.iter().map(count_numbers).sum(),
        Value::Object(m) => m.values().map(count_numbers).sum(),
        _ => 0,
    }
}

fn hold<'a>(v: &mut Value, tokens: &mut impl Iterator<Item = &'a &'a [u8]>) {
    match v {
        Value::Number(_) => {
            let t = tokens.next().expect("counted");
            if !is_canonical(t) {
                let text = std::str::from_utf8(t).expect("a number token is ASCII");
                *v = Value::String(format!("{}{text}", marker()));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|e| hold(e, tokens)),
        Value::Object(m) => m.values_mut().for_each(|e| hold(e, tokens)),
        _ => {}
    }
}

/// A held number's text when `s` is a marker followed by a valid JSON number.
fn held_number(s: &str) -> Option<&str> {
    let text = s.strip_prefix(marker())?;
    serde_json::from_str::<serde::de::IgnoredAny>(text).ok()?;
    text.bytes()
        .all(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        .then_some(text)
}

/// serde_json's compact formatter, but floats in JavaScript's form and held numbers unquoted.
/// A string's opening quote is written late: a held number arrives as one unescaped fragment
/// (its characters need no escape), and then no quote is written at all.
#[derive(Default)]
struct ExactFormatter {
    /// `begin_string` was called and nothing of the string is written yet.
    pending_quote: bool,
    /// The current string was a held number: its closing quote is not written either.
    in_held: bool,
}

impl ExactFormatter {
    fn open<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if std::mem::take(&mut self.pending_quote) {
            w.write_all(b"\"")?;
        }
        Ok(())
    }
}

impl Formatter for ExactFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        w.write_all(js_number(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }

    fn begin_string<W: ?Sized + io::Write>(&mut self, _: &mut W) -> io::Result<()> {
        self.pending_quote = true;
        self.in_held = false;
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        if self.pending_quote {
            if let Some(text) = held_number(fragment) {
                self.pending_quote = false;
                self.in_held = true;
                return w.write_all(text.as_bytes());
            }
        }
        self.open(w)?;
        w.write_all(fragment.as_bytes())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        self.open(w)?;
        serde_json::ser::CompactFormatter.write_char_escape(w, escape)
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if std::mem::take(&mut self.in_held) {
            return Ok(());
        }
        self.open(w)?;
        w.write_all(b"\"")
    }
}

/// `value` as JavaScript's `Number.prototype.toString` writes it (ECMA-262 Number::toString):
/// the shortest digits that read back as the same number, in fixed notation from 1e-7 to 1e21,
/// else as `d.ddde+N`.
pub fn js_number(value: f64) -> String {
    if !value.is_finite() {
        return "null".into(); // what JSON.stringify writes for them
    }
    if value == 0.0 {
        return "0".into(); // -0 too, as JavaScript writes it
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde-7`.
    let sci = format!("{:e}", value.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().expect("an integer exponent") + 1;
    let mut s = String::with_capacity(k as usize + 8);
    if value < 0.0 {
        s.push('-');
    }
    if k <= n && n <= 21 {
        s.push_str(&digits);
        s.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        s.push_str(&digits[..n as usize]);
        s.push('.');
        s.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        s.push_str("0.");
        s.extend(std::iter::repeat_n('0', (-n) as usize));
        s.push_str(&digits);
    } else {
        s.push_str(&digits[..1]);
        if k > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if n - 1 < 0 { '-' } else { '+' });
        s.push_str(&(n - 1).abs().to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(b: &[u8]) -> Result<Value, String> {
        serde_json::from_slice(b).map_err(|e| e.to_string())
    }

    #[test]
    fn floats_are_written_as_javascript_writes_them() {
        for (v, js) in [
            (0.1, "0.1"),
            (100.0, "100"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (1e21, "1e+21"),
            (123456789012345680000.0, "123456789012345680000"),
            (-2.5, "-2.5"),
            (-0.0, "0"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (0.0000012345, "0.0000012345"),
            (1.2345e-7, "1.2345e-7"),
        ] {
            assert_eq!(js_number(v), js, "{v:e}");
        }
    }

    #[test]
    fn every_number_is_written_back_as_it_was_read() {
        let line = br#"{"a":1.0,"b":1e5,"c":1.50,"d":123456789012345678901234567890,"e":-0,"f":0.000001,"g":1E-7,"h":[2.50,{"i":7}],"j":"1.0","k":18446744073709551615,"l":-9223372036854775808,"m":0.1}"#;
        let v = parse(line, plain).unwrap();
        assert_eq!(
            String::from_utf8(to_vec(&v)).unwrap(),
            std::str::from_utf8(line).unwrap()
        );
    }

    #[test]
    fn a_canonical_record_is_parsed_as_plain_values() {
        let v = parse(br#"{"a":1,"b":0.25,"c":[1e+21]}"#, plain).unwrap();
        assert!(v["a"].is_u64() && v["b"].is_f64() && v["c"][0].is_f64());
    }

    #[test]
    fn a_string_shaped_like_a_marker_is_written_as_a_string() {
        // The nonce is private to the process: an input string cannot carry it. Even the right
        // marker followed by something other than a number stays a quoted string.
        for s in [
            "\u{E000}\u{E001}0000000000000000:1".to_string(),
            format!("{}1,\"x\":2", marker()),
        ] {
            let v = Value::String(s.clone());
            let back: Value = serde_json::from_slice(&to_vec(&v)).unwrap();
            assert_eq!(back, Value::String(s));
        }
    }

    #[test]
    fn strings_with_escapes_are_written_as_serde_json_writes_them() {
        let v: Value = serde_json::from_str(r#"{"k\n":"a\"b\\c\u0001é","e":""}"#).unwrap();
        assert_eq!(to_vec(&v), serde_json::to_vec(&v).unwrap());
    }

    #[test]
    fn repeated_keys_keep_the_value_as_parsed() {
        let v = parse(br#"{"a":1.0,"a":2.0}"#, plain).unwrap();
        assert_eq!(to_vec(&v), br#"{"a":2}"#);
    }
}
