//! The literal matcher behind [`super::Echoes`]: leftmost-longest, non-overlapping occurrences
//! of a set of byte strings.
//!
//! A session knows a handful of secrets; an attacker's (or a generated) input can make it know
//! a million. Aho-Corasick is the fastest matcher for the first (its SIMD prefilter) and the
//! wrong one for the second: its automaton costs ~20 KB per 40-byte token with its hex and
//! base64 forms (50k distinct keys in a 6 MB file took 24 s and 941 MB to build), and it cannot
//! grow, so a stream that learns keys chunk after chunk rebuilt it each time. Above
//! [`SMALL_SET`] patterns the set is kept as [`Anchored`] instead: each pattern indexed by its
//! first [`ANCHOR`] bytes, a bitset in front of the index, memory linear in the patterns'
//! bytes, and `extend` in place. Both give the same matches (a property test holds them to it);
//! `benches/known_matcher.rs` measures where one overtakes the other.

use aho_corasick::{AhoCorasick, MatchKind};

/// Up to this many patterns Aho-Corasick is used (measured by `benches/known_matcher.rs`).
pub const SMALL_SET: usize = 4096;

/// Past 100 patterns the crate builds a contiguous NFA, as a DFA's table grows with states ×
/// byte classes; but a session that knows a few hundred secrets (each with its hex and base64
/// forms) has its echo search run over every byte of its output with no SIMD prefilter to
/// skip ahead, where the DFA's one lookup per byte is much faster than the NFA's transitions
/// (`benches/known_matcher.rs`). Up to this many bytes of patterns (as many states at most:
/// a few MiB of table for token alphabets) the DFA is built.
pub const DFA_BYTES: usize = 48 * 1024;

/// Leftmost-longest matcher over a set of byte strings.
#[derive(Clone)]
pub enum Matcher {
    /// Aho-Corasick over a small set.
    Small(AhoCorasick),
    /// Aho-Corasick over a small set of long patterns, run only where [`Sampled`]'s q-gram
    /// filter says one may start.
    Sampled(Sampled),
    /// The anchored index over a large one.
    Large(Anchored),
}

impl Matcher {
    /// A matcher of `pats` (each at least 4 bytes); pattern ids are their indexes (a pattern
    /// the anchored index has no room for is not matched: see [`BUCKET`]).
    pub fn new(pats: &[Vec<u8>]) -> Matcher {
        if pats.len() <= SMALL_SET {
            Matcher::small(pats)
        } else {
            Matcher::anchored(pats)
        }
    }

    /// The Aho-Corasick matcher of `pats`, whatever their number: a full DFA while the
    /// patterns hold at most [`DFA_BYTES`] bytes, else the crate's own choice.
    pub fn small(pats: &[Vec<u8>]) -> Matcher {
        let bytes: usize = pats.iter().map(Vec::len).sum();
        let kind = (bytes <= DFA_BYTES).then_some(aho_corasick::AhoCorasickKind::DFA);
        match Sampled::of(pats, Self::aho_corasick(pats, kind)) {
            Ok(sampled) => Matcher::Sampled(sampled),
            Err(ac) => Matcher::Small(ac),
        }
    }

    /// Aho-Corasick of `pats` of the given kind (`None`: the crate picks).
    pub fn aho_corasick(
        pats: &[Vec<u8>],
        kind: Option<aho_corasick::AhoCorasickKind>,
    ) -> AhoCorasick {
        AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(kind)
            .build(pats)
            .expect("literal patterns build")
    }

    /// The anchored matcher of `pats`, whatever their number.
    pub fn anchored(pats: &[Vec<u8>]) -> Matcher {
        let mut a = Anchored::default();
        for p in pats {
            a.push_at(p);
        }
        Matcher::Large(a)
    }

    /// Call `f(start, end, pattern)` for each leftmost-longest, non-overlapping occurrence.
    pub fn for_each(&self, text: &[u8], mut f: impl FnMut(usize, usize, usize)) {
        match self {
            Matcher::Small(ac) => {
                for m in ac.find_iter(text) {
                    f(m.start(), m.end(), m.pattern().as_usize());
                }
            }
            Matcher::Sampled(m) => m.for_each(text, f),
            Matcher::Large(a) => a.for_each(text, f),
        }
    }
}

/// A sampled q-gram filter in front of Aho-Corasick (after Wu and Manber).
///
/// Aho-Corasick's SIMD prefilter works from a few start or rare bytes; tokens start with any
/// byte, so past a few dozen of them it has none and its automaton reads every byte of the
/// output — a fifth of `redact`'s time on a file that knows 77 values (the peers' dense file).
/// Every pattern is at least `m` bytes, so an occurrence starts with one of the patterns'
/// `m`-byte prefixes, and that prefix holds a whole 4-byte gram starting at a multiple of
/// `stride = m - Q + 1`. The filter hashes only those grams, one every `stride` bytes, against
/// a bitset of the prefixes' grams; on a hit it looks up the `stride` starts the gram allows
/// in the set of prefixes, and only from a start found there does the automaton run, over the
/// window the longest pattern could fill (windows that meet are merged). Those windows hold
/// every occurrence whole and no occurrence crosses from one to another, so the matches,
/// leftmost-longest, are those of a run over the whole text (a property test holds it).
#[derive(Clone)]
pub struct Sampled {
    ac: AhoCorasick,
    /// One bit per gram hash ([`Q_BITS`] bits) of the prefixes.
    bits: Vec<u64>,
    /// The patterns' first `m` bytes.
    prefixes: foldhash::HashSet<Box<[u8]>>,
    /// `m`: the shortest pattern's length.
    m: usize,
    /// The longest pattern's length.
    longest: usize,
}

/// Bytes of a sampled gram.
const Q: usize = 4;
/// Bits of a gram's hash (a 32 KiB bitset).
const Q_BITS: u32 = 18;
/// The filter is used from this many patterns (below it Aho-Corasick's own prefilter has
/// few enough start bytes to skip ahead) …
const SAMPLE_MIN_PATTERNS: usize = 16;
/// … when every pattern is at least this long (a stride of 9 bytes and more).
const SAMPLE_MIN_LEN: usize = 12;

fn gram_slot(g: &[u8]) -> usize {
    let x = u32::from_le_bytes(g[..Q].try_into().expect("a gram"));
    (x.wrapping_mul(0x9E37_79B1) >> (32 - Q_BITS)) as usize
}

impl Sampled {
    /// The filter of `pats` in front of `ac` (built over the same patterns), when sampling
    /// pays.
    fn of(pats: &[Vec<u8>], ac: AhoCorasick) -> Result<Sampled, AhoCorasick> {
        let Some(m) = pats.iter().map(Vec::len).min() else {
            return Err(ac);
        };
        if pats.len() < SAMPLE_MIN_PATTERNS || m < SAMPLE_MIN_LEN {
            return Err(ac);
        }
        let mut bits = vec![0u64; (1 << Q_BITS) / 64];
        let mut prefixes = foldhash::HashSet::default();
        for p in pats {
            for g in p[..m].windows(Q) {
                let s = gram_slot(g);
                bits[s / 64] |= 1 << (s % 64);
            }
            prefixes.insert(Box::from(&p[..m]));
        }
        let longest = pats.iter().map(Vec::len).max().unwrap_or(m);
        Ok(Sampled {
            ac,
            bits,
            prefixes,
            m,
            longest,
        })
    }

    fn for_each(&self, text: &[u8], mut f: impl FnMut(usize, usize, usize)) {
        let (m, stride) = (self.m, self.m - Q + 1);
        let mut open: Option<(usize, usize)> = None;
        let mut run = |(a, b): (usize, usize)| {
            for x in self.ac.find_iter(&text[a..b]) {
                f(a + x.start(), a + x.end(), x.pattern().as_usize());
            }
        };
        // A start `p` the prefixes hold opens the window an occurrence from it can fill.
        let mut found = |p: usize| {
            let w = (p, (p + self.longest).min(text.len()));
            open = match open {
                // Windows that meet are one: a match may span both.
                Some((oa, ob)) if w.0 <= ob => Some((oa, ob.max(w.1))),
                Some(before) => {
                    run(before);
                    Some(w)
                }
                None => Some(w),
            };
        };
        let mut j = 0;
        while j + Q <= text.len() {
            let s = gram_slot(&text[j..j + Q]);
            if self.bits[s / 64] & (1 << (s % 64)) != 0 {
                // The gram at `j` lies in a prefix starting from `j - (m - Q)` to `j`.
                for p in j.saturating_sub(m - Q)..=j {
                    if p + m <= text.len() && self.prefixes.contains(&text[p..p + m]) {
                        found(p);
                    }
                }
            }
            j += stride;
        }
        if let Some(w) = open {
            run(w);
        }
    }
}

/// Patterns indexed by a hash of their first [`ANCHOR`] bytes (all of them when shorter):
/// one table per length up to [`ANCHOR`], so that every probe is one hash of a fixed window.
/// Tokens share prefixes (`ghp_`, `sk-ant-api03-`, hex of `ghp_`): 24 bytes tell them apart, and a
/// bucket holds at most [`BUCKET`] patterns, so no input makes a probe long.
#[derive(Default, Clone)]
pub struct Anchored {
    pats: Vec<Box<[u8]>>,
    /// Longest window first: the first table with a match holds the longest one.
    tables: Vec<Table>,
}

#[derive(Clone)]
struct Table {
    /// The window: the patterns' length (shorter than [`ANCHOR`]), or [`ANCHOR`].
    len: usize,
    /// Window hash → the ids of the patterns it starts.
    index: foldhash::HashMap<u64, Vec<u32>>,
    /// One bit per hash: most positions of a text are rejected here, in cache.
    bits: Vec<u64>,
}

/// Bytes of a pattern its window covers at most. Every known value is at least
/// [`super::MIN_LEN`] bytes.
pub const ANCHOR: usize = 24;

/// At most this many patterns share a window; more are not added (an input built to make one
/// window match a million values would otherwise make every probe a million comparisons).
pub const BUCKET: usize = 1024;

/// Bits of the hash the bitset is indexed by (32 KiB a table).
const BITS: u32 = 18;

/// The hash of `b[..len]` (`b` holds at least `len` bytes, `len` from 4 to [`ANCHOR`]): every
/// byte of the window, from two or three overlapping loads — constant time.
fn window(b: &[u8], len: usize) -> u64 {
    let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| {
        u64::from(u32::from_le_bytes(
            b[at..at + 4].try_into().expect("4 bytes"),
        ))
    };
    let (x, y, z) = match len {
        ..=7 => (u32_at(0), u32_at(len - 4), 0),
        8..=15 => (u64_at(0), u64_at(len - 8), 0),
        _ => (u64_at(0), u64_at(len / 2 - 4), u64_at(len - 8)),
    };
    let h = x.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ y.rotate_left(21).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
        ^ z.rotate_left(43)
        ^ len as u64;
    h ^ (h >> 29).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

fn slot(h: u64) -> usize {
    (h >> (64 - BITS)) as usize
}

impl Table {
    fn has(&self, h: u64) -> bool {
        let s = slot(h);
        self.bits[s / 64] & (1 << (s % 64)) != 0
    }
}

impl Anchored {
    fn table_len(p: &[u8]) -> usize {
        p.len().min(ANCHOR)
    }

    /// The id of pattern `p` when it holds it.
    pub fn id_of(&self, p: &[u8]) -> Option<usize> {
        let len = Self::table_len(p);
        let t = self.tables.iter().find(|t| t.len == len)?;
        let ids = t.index.get(&window(p, len))?;
        ids.iter()
            .map(|&i| i as usize)
            .find(|&i| &*self.pats[i] == p)
    }

    /// Add `p` (at least 4 bytes); its id, or None when its window's bucket is full.
    pub fn push(&mut self, p: &[u8]) -> Option<usize> {
        assert!(p.len() >= 4, "a pattern shorter than a window");
        let len = Self::table_len(p);
        let at = match self.tables.iter().position(|t| t.len == len) {
            Some(i) => i,
            None => {
                self.tables.push(Table {
                    len,
                    index: Default::default(),
                    bits: vec![0; 1 << (BITS - 6)],
                });
                self.tables.sort_by_key(|t| std::cmp::Reverse(t.len));
                self.tables
                    .iter()
                    .position(|t| t.len == len)
                    .expect("added")
            }
        };
        let t = &mut self.tables[at];
        let h = window(p, len);
        let ids = t.index.entry(h).or_default();
        if ids.len() >= BUCKET {
            return None;
        }
        let id = self.pats.len();
        ids.push(id as u32);
        let s = slot(h);
        t.bits[s / 64] |= 1 << (s % 64);
        self.pats.push(p.into());
        Some(id)
    }

    /// Add `p` keeping ids equal to indexes in the caller's list: a pattern with no room is
    /// kept as an empty placeholder that matches nothing.
    pub fn push_at(&mut self, p: &[u8]) -> usize {
        match self.push(p) {
            Some(id) => id,
            None => {
                self.pats.push(Box::default());
                self.pats.len() - 1
            }
        }
    }

    /// As [`Matcher::for_each`].
    pub fn for_each(&self, text: &[u8], mut f: impl FnMut(usize, usize, usize)) {
        let Some(shortest) = self.tables.last().map(|t| t.len) else {
            return;
        };
        let mut i = 0;
        while i + shortest <= text.len() {
            let rest = &text[i..];
            let mut best: Option<usize> = None;
            for t in &self.tables {
                if rest.len() < t.len {
                    continue;
                }
                let h = window(rest, t.len);
                if !t.has(h) {
                    continue;
                }
                let Some(ids) = t.index.get(&h) else { continue };
                // The longest pattern here; among equally long ones, the first added
                // (Aho-Corasick's leftmost-longest picks the same).
                for id in ids.iter().map(|&id| id as usize) {
                    let p = &self.pats[id];
                    if rest.starts_with(p) && best.is_none_or(|b| self.pats[b].len() < p.len()) {
                        best = Some(id);
                    }
                }
                // Tables go from the longest window down: a match here is longer than any
                // in the tables after.
                if best.is_some() {
                    break;
                }
            }
            match best {
                Some(id) => {
                    let end = i + self.pats[id].len();
                    f(i, end, id);
                    i = end;
                }
                None => i += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(m: &Matcher, text: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        m.for_each(text, |s, e, p| out.push((s, e, p)));
        out
    }

    fn anchored(pats: &[Vec<u8>]) -> Matcher {
        Matcher::anchored(pats)
    }

    fn small(pats: &[Vec<u8>]) -> Matcher {
        Matcher::small(pats)
    }

    #[test]
    fn longest_wins_at_the_leftmost_start() {
        let pats = vec![b"abcd".to_vec(), b"abcdef".to_vec(), b"cdefgh".to_vec()];
        let text = b"xxabcdefgh abcdX";
        assert_eq!(all(&anchored(&pats), text), all(&small(&pats), text));
        assert_eq!(all(&anchored(&pats), text), vec![(2, 8, 1), (11, 15, 0)]);
    }

    #[test]
    fn a_large_set_is_anchored_and_finds_its_own() {
        let pats: Vec<Vec<u8>> = (0..SMALL_SET + 10)
            .map(|i| format!("key{i:06}x").into_bytes())
            .collect();
        let m = Matcher::new(&pats);
        assert!(matches!(m, Matcher::Large(_)));
        assert_eq!(all(&m, b"a key004100x b"), vec![(2, 12, 4100)]);
    }

    /// Tokens of one kind share a long prefix; they stay apart, and a window shared by more
    /// than [`BUCKET`] patterns takes no more (so a probe stays short).
    #[test]
    fn shared_prefixes_stay_apart_and_a_full_bucket_takes_no_more() {
        let pats: Vec<Vec<u8>> = (0..3000)
            .map(|i| format!("sk-ant-api03-{i:08}-rest-of-it").into_bytes())
            .collect();
        let m = Matcher::anchored(&pats);
        assert_eq!(
            all(&m, b"x sk-ant-api03-00002999-rest-of-it"),
            vec![(2, 34, 2999)]
        );
        let same: Vec<Vec<u8>> = (0..BUCKET + 1)
            .map(|i| format!("{}{i:05}", "A".repeat(ANCHOR)).into_bytes())
            .collect();
        let m = Matcher::anchored(&same);
        let last = format!("{}{:05}", "A".repeat(ANCHOR), BUCKET);
        assert!(all(&m, last.as_bytes()).is_empty(), "the bucket was full");
        let first = format!("{}00000", "A".repeat(ANCHOR));
        assert_eq!(all(&m, first.as_bytes()), vec![(0, ANCHOR + 5, 0)]);
    }

    fn plain(pats: &[Vec<u8>]) -> Matcher {
        Matcher::Small(Matcher::aho_corasick(pats, None))
    }

    #[test]
    fn many_long_patterns_are_sampled() {
        let pats: Vec<Vec<u8>> = (0..20)
            .map(|i| format!("token-{i:02}-abcdefgh").into_bytes())
            .collect();
        assert!(matches!(Matcher::small(&pats), Matcher::Sampled(_)));
        let text = b"x token-07-abcdefgh token-19-abcdefghtoken-00-abcdefgh";
        assert_eq!(all(&Matcher::small(&pats), text), all(&plain(&pats), text));
        assert_eq!(all(&Matcher::small(&pats), text).len(), 3);
    }

    proptest! {
        // Patterns over a small alphabet, long enough to be sampled, with shared pieces so
        // that occurrences overlap, nest and meet across sampled windows.
        #[test]
        fn sampled_matches_as_aho_corasick_does(
            pats in proptest::collection::vec(proptest::collection::vec(b'a'..=b'c', 12..30), 16..24),
            text in proptest::collection::vec(b'a'..=b'd', 0..600),
            cut in 0usize..40,
        ) {
            let mut uniq: Vec<Vec<u8>> = Vec::new();
            for p in pats {
                if !uniq.contains(&p) {
                    uniq.push(p);
                }
            }
            // Plant a few patterns so that there is something to find.
            let mut text = text;
            for p in uniq.iter().step_by(5) {
                let at = (cut * 7 + p.len()) % (text.len() + 1);
                text.splice(at..at, p.iter().copied());
            }
            let m = Matcher::small(&uniq);
            if uniq.len() >= SAMPLE_MIN_PATTERNS {
                prop_assert!(matches!(m, Matcher::Sampled(_)));
            }
            prop_assert_eq!(all(&m, &text), all(&plain(&uniq), &text));
        }

        // Small alphabet so that patterns overlap and share anchors often.
        #[test]
        fn anchored_matches_as_aho_corasick_does(
            pats in proptest::collection::vec(proptest::collection::vec(b'a'..=b'd', 4..9), 1..12),
            text in proptest::collection::vec(b'a'..=b'e', 0..200),
        ) {
            let mut uniq: Vec<Vec<u8>> = Vec::new();
            for p in pats {
                if !uniq.contains(&p) {
                    uniq.push(p);
                }
            }
            prop_assert_eq!(all(&anchored(&uniq), &text), all(&small(&uniq), &text));
        }
    }
}
