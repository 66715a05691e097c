//! The other half of redacting a line or a text: private-key blocks split over strings, the
//! placeholders, and the splice of the replacements into the bytes.

use super::line::{decoded, spliced, LineState, MAX_ROUNDS};
use super::*;

impl Redactor {
    /// A string of an array that carries a private-key block one line per string (the
    /// `lines` of an Edit's `structuredPatch`, each prefixed by `+`, `-` or a space). Opens
    /// the block at its BEGIN line; replaces each body line's base64 while it is open.
    /// True when the string was handled here.
    pub(super) fn pem_line(
        &self,
        line: &[u8],
        tok: &Tok,
        frames: &[Frame],
        st: &mut LineState,
    ) -> bool {
        let Some(rule) = self.pem_rule else {
            return false;
        };
        // Blocks are split over the strings of one array: other strings take no part.
        if !matches!(frames.last(), Some(Frame::Arr(_))) {
            st.pem = None;
            return false;
        }
        // Which array this string is in: depth and the frame around the array.
        let array = (frames.len(), frames.len().checked_sub(2).map(|i| frames[i]));
        if st.pem.is_some_and(|a| a != array) {
            st.pem = None;
        }
        let raw = &line[tok.start..tok.end];
        // The markers read as decoded: `\u0020` may stand for the space of `-----BEGIN `, and a
        // redaction elsewhere in the string writes it back as a plain space, which the next run
        // would then see.
        let text = match tok.flags & esc::U {
            0 => std::borrow::Cow::Borrowed(raw),
            _ => decoded(raw, tok.flags).unwrap_or(std::borrow::Cow::Borrowed(raw)),
        };
        let has = |n: &[u8]| memchr::memmem::find(&text, n).is_some();
        if st.pem.is_none() {
            // Open: a key's BEGIN line with neither its END nor a placeholder after it (a
            // block redacted whole, up to a mismatched END, must stay closed on the next run).
            let open = has(b"PRIVATE KEY")
                && memchr::memmem::rfind(&text, b"-----BEGIN ").is_some_and(|b| {
                    let after = &text[b..];
                    memchr::memmem::find(after, b"-----END ").is_none()
                        && !self.placeholder_re.is_match(after)
                });
            if open {
                st.pem = Some(array);
                st.pem_reported = false;
            }
            return false;
        }
        if has(b"-----END ") || has(b"-----BEGIN ") {
            st.pem = None;
            return false;
        }
        let body = match raw.first() {
            Some(b'+' | b'-' | b' ') => &raw[1..],
            _ => raw,
        };
        let body = body.trim_ascii();
        let is_b64 = body.len() >= 8
            && body
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
        if !is_b64 {
            return false;
        }
        let p = json::path_renamed(line, frames, |at| st.keys.get(&at).cloned());
        if self.allow_paths.iter().any(|g| g.allows(&p)) {
            return true;
        }
        // `body` is a sub-slice of `raw` (base64 needs no escapes): its offset in the line.
        let start = tok.start + (body.as_ptr() as usize - raw.as_ptr() as usize);
        let end = start + body.len();
        if !st.pem_reported {
            st.pem_reported = true;
            st.findings.push(LineFinding {
                rule,
                path: Some(p.clone()),
                offset: start - tok.start,
                len: body.len(),
                fingerprint: self.fingerprint(body),
                secret: SecretBytes::new(body),
            });
        } else {
            st.secrets.push((rule, SecretBytes::new(body)));
        }
        let mut enc = Vec::new();
        let found = [Found {
            rule: rule as u32,
            start: 0,
            end: body.len(),
            mstart: 0,
            mend: body.len(),
        }];
        enc.extend_from_slice(&self.replace(body, &found));
        st.edits.push((start, end, enc));
        for (i, seg) in p.iter().enumerate() {
            if seg == &Seg::Key("content".into()) && matches!(p.get(i + 1), Some(Seg::Idx(_))) {
                st.blocks.push(p[..i + 2].to_vec());
            }
        }
        true
    }

    /// Allowlist, placeholders already there, overlaps.
    pub(super) fn finish(&self, text: &[u8], found: &mut Vec<Found>) {
        found.retain(|f| {
            let secret = &text[f.start..f.end];
            !self.allow_values.contains(secret)
                && !self.allow_regexes.iter().any(|r| r.is_match(secret))
        });
        if found.is_empty() {
            return;
        }
        let masks: Vec<(usize, usize)> = self
            .placeholder_re
            .find_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect();
        scan::resolve(found, &masks);
    }

    /// The placeholder that replaces the secret `f` of `text`.
    pub(super) fn placeholder(&self, text: &[u8], f: &Found) -> Vec<u8> {
        let mut out = Vec::new();
        self.put_placeholder(text, f, &mut out);
        out
    }

    /// The placeholder that replaces `secret` when rule `rule` found it: what its other
    /// occurrences in the session become too (the same pseudonym when keyed).
    pub fn placeholder_of(&self, rule: usize, secret: &[u8]) -> Vec<u8> {
        let f = Found {
            rule: rule as u32,
            start: 0,
            end: secret.len(),
            mstart: 0,
            mend: secret.len(),
        };
        self.placeholder(secret, &f)
    }

    pub(super) fn put_placeholder(&self, text: &[u8], f: &Found, out: &mut Vec<u8>) {
        let id = &self.engine.rules[f.rule as usize].id;
        self.put_placeholder_named(id, &text[f.start..f.end], out);
    }

    /// The placeholder of `secret` under the rule id `id` (one that no rule index names:
    /// [`super::super::known::KNOWN_VALUE_RULE`]).
    pub fn placeholder_named(&self, id: &str, secret: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.put_placeholder_named(id, secret, &mut out);
        out
    }

    pub(super) fn put_placeholder_named(&self, id: &str, secret: &[u8], out: &mut Vec<u8>) {
        for p in &self.template {
            match p {
                Part::Lit(s) => out.extend_from_slice(s.as_bytes()),
                Part::Rule => out.extend_from_slice(id.as_bytes()),
                Part::Hash => {
                    // `{hash}` is refused without a configured key.
                    let k = self.key.as_deref().unwrap_or_default();
                    out.extend_from_slice(keyed_hash(k, secret).as_bytes());
                }
            }
        }
    }

    /// [`Redactor::replace`] of a string this search owns, in its own buffer: the string and
    /// its replaced copy were both held while the copy was made (a 200 MB string with one
    /// key took 400 MB for the second search).
    pub(super) fn replace_owned(&self, mut text: Vec<u8>, found: &[Found]) -> Vec<u8> {
        let phs: Vec<Vec<u8>> = found
            .iter()
            .map(|f| {
                let mut ph = Vec::new();
                self.put_placeholder(&text, f, &mut ph);
                ph
            })
            .collect();
        splice_in_place(
            &mut text,
            found
                .iter()
                .zip(&phs)
                .map(|(f, ph)| (f.start, f.end, &ph[..])),
        );
        text
    }

    pub(super) fn replace(&self, text: &[u8], found: &[Found]) -> Vec<u8> {
        // Room for placeholders longer than their secrets (`[REDACTED:aws-access-key-id]` for
        // a 20-byte key): a vector grown past its capacity doubles, and a 100 MB string would
        // take 200 MB.
        let per: usize = self
            .template
            .iter()
            .map(|p| match p {
                Part::Lit(s) => s.len(),
                Part::Rule => 80,
                Part::Hash => 8,
            })
            .sum();
        let mut out = Vec::with_capacity(text.len() + found.len() * per);
        let mut at = 0;
        for f in found {
            out.extend_from_slice(&text[at..f.start]);
            self.put_placeholder(text, f, &mut out);
            at = f.end;
        }
        out.extend_from_slice(&text[at..]);
        out
    }

    pub(super) fn text(&self, text: &[u8], full: bool) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        // A token broken by invisible characters, written with HTML entities, percent-encoded
        // or cut into pieces that code joins is searched as it reads ([`scan::reading`]):
        // when that finds more, each secret found there is replaced at its span in the text
        // as written, and nothing else changes.
        let plain = self.text_visible(text, full);
        if let Some(r) = scan::reading(text) {
            let (spans, findings) = self.read_secrets(&r, full);
            if findings.len() > plain.1.len() {
                return (Some(spliced(text, &spans)), findings);
            }
        }
        plain
    }

    pub(super) fn text_visible(
        &self,
        text: &[u8],
        full: bool,
    ) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        let mut cur = std::borrow::Cow::Borrowed(text);
        let mut findings = Vec::new();
        // Where the placeholders of earlier rounds sit, so a later round's finding is reported
        // at its offset in `text`, not in the text as those rounds left it.
        let mut placed: Placed = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let mut found = Vec::new();
            if full {
                self.engine.find_all(&cur, false, &mut found);
            } else {
                let mut hits = Vec::new();
                self.engine.hits(&cur, false, &mut hits);
                if hits.is_empty() {
                    break;
                }
                self.engine.find(&cur, &mut hits, &mut found);
            }
            self.finish(&cur, &mut found);
            if found.is_empty() {
                break;
            }
            findings.extend(found.iter().map(|f| {
                let offset = to_original(&placed, f.start, false);
                LineFinding {
                    rule: f.rule as usize,
                    path: None,
                    offset,
                    len: to_original(&placed, f.end, true) - offset,
                    fingerprint: self.fingerprint(&cur[f.start..f.end]),
                    secret: SecretBytes::new(&cur[f.start..f.end]),
                }
            }));
            let spans: Vec<(usize, usize, usize)> = found
                .iter()
                .map(|f| {
                    let mut ph = Vec::new();
                    self.put_placeholder(&cur, f, &mut ph);
                    (f.start, f.end, ph.len())
                })
                .collect();
            placed = replaced(&placed, &spans);
            cur = std::borrow::Cow::Owned(self.replace(&cur, &found));
        }
        match cur {
            std::borrow::Cow::Owned(v) => (Some(v), findings),
            std::borrow::Cow::Borrowed(_) => (None, findings),
        }
    }

    /// Redact a plain text (a `tool-results/*.txt` file): the new text when something changed,
    /// and the findings (offsets into `text`).
    pub fn redact_text(&self, text: &[u8]) -> (Option<Vec<u8>>, Vec<LineFinding>) {
        self.text(text, false)
    }
}

/// The placeholders in a text as the rounds so far left it: each one's start and end there,
/// and the span of the original text it stands for. Sorted, disjoint.
type Placed = Vec<(usize, usize, usize, usize)>;

/// The offset in the original text of offset `x` of the current text. Inside a placeholder it
/// is the start (or, for an `end`, the end) of what the placeholder replaced.
fn to_original(placed: &Placed, x: usize, end: bool) -> usize {
    let mut delta: isize = 0; // current offset minus original offset, after the last passed
    for &(ca, cb, oa, ob) in placed {
        if x >= cb {
            delta = cb as isize - ob as isize;
            continue;
        }
        if x <= ca {
            break;
        }
        return if end { ob } else { oa };
    }
    (x as isize - delta) as usize
}

/// `placed` after this round replaced `spans` (`start, end` in the current text, and the
/// length of the placeholder written there; sorted, disjoint): a placeholder a new one covers
/// is absorbed into it.
fn replaced(placed: &Placed, spans: &[(usize, usize, usize)]) -> Placed {
    let mut out = Vec::with_capacity(placed.len() + spans.len());
    let mut shift: isize = 0; // new offset minus current offset, over the spans passed
    let mut old = placed.iter().copied().peekable();
    let at = |x: usize, shift: isize| (x as isize + shift) as usize;
    for &(s, e, len) in spans {
        while let Some(&(ca, cb, oa, ob)) = old.peek() {
            if cb <= s {
                out.push((at(ca, shift), at(cb, shift), oa, ob));
            } else if ca >= e {
                break;
            }
            old.next();
        }
        let ns = at(s, shift);
        out.push((
            ns,
            ns + len,
            to_original(placed, s, false),
            to_original(placed, e, true),
        ));
        shift += len as isize - (e - s) as isize;
    }
    out.extend(old.map(|(ca, cb, oa, ob)| (at(ca, shift), at(cb, shift), oa, ob)));
    out
}

/// Replace in `buf` each span `(start, end, with)` (sorted, disjoint) by `with`, without a
/// second buffer: each run of text between spans is moved once to where it ends up (those
/// moving left first, from the left; then those moving right, from the right: no run is
/// overwritten before it has moved), then the replacements are written.
pub(super) fn splice_in_place<'a>(
    buf: &mut Vec<u8>,
    spans: impl Iterator<Item = (usize, usize, &'a [u8])> + Clone,
) {
    let old = buf.len();
    // The runs of kept text: (from, to, where they go), and where each replacement goes.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    let mut puts: Vec<(usize, &[u8])> = Vec::new();
    let (mut read, mut write) = (0usize, 0usize);
    for (s, e, w) in spans.clone() {
        runs.push((read, s, write));
        write += s - read;
        puts.push((write, w));
        write += w.len();
        read = e;
    }
    runs.push((read, old, write));
    let new = write + (old - read);
    if new > old {
        buf.resize(new, 0);
    }
    for &(from, to, at) in runs.iter().filter(|r| r.2 < r.0) {
        buf.copy_within(from..to, at);
    }
    for &(from, to, at) in runs.iter().rev().filter(|r| r.2 > r.0) {
        buf.copy_within(from..to, at);
    }
    for (at, w) in puts {
        buf[at..at + w.len()].copy_from_slice(w);
    }
    buf.truncate(new);
}

#[cfg(test)]
mod splice_tests {
    use super::splice_in_place;

    #[test]
    fn splicing_in_place_equals_splicing_into_a_copy() {
        let text = b"0123456789abcdefghij".to_vec();
        let cases: Vec<Vec<(usize, usize, &[u8])>> = vec![
            vec![],
            vec![(0, 3, b"X")],
            vec![(2, 4, b"LONGER-THAN")],
            vec![(0, 0, b"ab"), (20, 20, b"yz")],
            vec![(1, 2, b"[R]"), (5, 9, b""), (10, 20, b"#")],
            vec![(1, 2, b""), (5, 6, b"++++++"), (19, 20, b"!!")],
            vec![(0, 20, b"")],
            vec![(3, 4, b"[REDACTED:a]"), (6, 15, b"[R]"), (16, 17, b"++")],
        ];
        for spans in cases {
            let mut want = Vec::new();
            let mut at = 0;
            for (s, e, w) in &spans {
                want.extend_from_slice(&text[at..*s]);
                want.extend_from_slice(w);
                at = *e;
            }
            want.extend_from_slice(&text[at..]);
            let mut got = text.clone();
            splice_in_place(&mut got, spans.iter().copied());
            assert_eq!(got, want, "{spans:?}");
        }
    }
}
