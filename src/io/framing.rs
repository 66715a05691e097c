//! Line framing: split a byte buffer into JSONL lines, remembering each terminator.
//!
//! A line's body never includes its terminator, so `body + term.bytes()` reproduces the input
//! exactly, line after line. The last line of a file may have no terminator.

/// How a line ended in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    /// `\n`
    Lf,
    /// `\r\n`
    CrLf,
    /// End of input without a newline (a truncated or unterminated last line).
    None,
}

impl Term {
    /// The bytes of this terminator.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Term::Lf => b"\n",
            Term::CrLf => b"\r\n",
            Term::None => b"",
        }
    }
}

/// One framed line, borrowed from the input buffer.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a> {
    /// The line's bytes without its terminator.
    pub body: &'a [u8],
    /// How the line ended.
    pub term: Term,
    /// 1-based line number in the input.
    pub number: usize,
}

/// Iterator over the lines of a buffer.
///
/// ```
/// use cchist::io::framing::{lines, Term};
/// let v: Vec<_> = lines(b"a\r\nb\nc", 1).map(|l| (l.body, l.term)).collect();
/// assert_eq!(v, vec![(&b"a"[..], Term::CrLf), (&b"b"[..], Term::Lf), (&b"c"[..], Term::None)]);
/// ```
pub fn lines(buf: &[u8], first_number: usize) -> Lines<'_> {
    Lines {
        rest: buf,
        number: first_number,
    }
}

/// See [`lines`].
pub struct Lines<'a> {
    rest: &'a [u8],
    number: usize,
}

impl<'a> Lines<'a> {}

/// Split one line off `buf`; `None` when `buf` holds no complete line.
pub fn split_complete(buf: &[u8]) -> Option<(&[u8], Term, usize)> {
    let nl = memchr::memchr(b'\n', buf)?;
    let (body, term) = if nl > 0 && buf[nl - 1] == b'\r' {
        (&buf[..nl - 1], Term::CrLf)
    } else {
        (&buf[..nl], Term::Lf)
    };
    Some((body, term, nl + 1))
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let number = self.number;
        self.number += 1;
        match split_complete(self.rest) {
            Some((body, term, used)) => {
                self.rest = &self.rest[used..];
                Some(Line { body, term, number })
            }
            None => {
                let body = self.rest;
                self.rest = &[];
                Some(Line {
                    body,
                    term: Term::None,
                    number,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for l in lines(input, 1) {
            out.extend_from_slice(l.body);
            out.extend_from_slice(l.term.bytes());
        }
        out
    }

    #[test]
    fn reproduces_input() {
        for case in [
            &b""[..],
            b"\n",
            b"\r\n",
            b"a",
            b"a\n",
            b"a\r\nb",
            b"\r",
            b"a\r",
            b"\n\n\r\n",
            b"\0\0\n",
        ] {
            assert_eq!(roundtrip(case), case);
        }
    }

    #[test]
    fn numbers_lines_from_one() {
        let n: Vec<_> = lines(b"x\ny\n", 1).map(|l| l.number).collect();
        assert_eq!(n, vec![1, 2]);
    }

    #[test]
    fn lone_cr_stays_in_body() {
        let l: Vec<_> = lines(b"a\rb\n", 1).collect();
        assert_eq!(l[0].body, b"a\rb");
        assert_eq!(l[0].term, Term::Lf);
    }
}
