//! The one-pass prefilter: every anchor of the keyword set found in one SIMD pass over the
//! text as it is (no folded copy).
//!
//! Before this, the engine folded each line into a buffer, then ran three Teddy searchers of
//! `aho_corasick::packed` (16 anchors each) and a rare-byte pass over the copy: five passes
//! over every byte. Here one loop does it all. It is Teddy (as in Hyperscan and aho-corasick)
//! over 4-byte windows: every anchor is found by a window of it (its rarest 4 bytes; 3-byte
//! anchors such as `key`, `://` and `eyj` by themselves, their fourth place open), placed in
//! one of 16 or 32 buckets; a position is a candidate for a bucket when each of its 4 bytes,
//! folded (`| 0x20`), is one of the bytes the bucket's windows hold at that place.
//!
//! - With AVX-512 VBMI, 64 positions a step: per place, one 64-entry table of bucket bits
//!   looked up by the byte's folded 6-bit index ([`fold_index`], `vpermb`); with AVX2, 32 a
//!   step: two 4-bit shuffle masks per place and 8 buckets.
//! - Which anchors share a bucket decides how many candidates there are: they also match the
//!   cross product of their windows. [`Teddy::place`] estimates it with a Markov chain over
//!   the byte pairs of transcripts ([`super::bigrams`]). On the corpus (279 MB, 656 k real
//!   occurrences): 1.12 M candidates; 1.72 M placed in sorted order by single-byte costs.
//!
//! A candidate is verified against the anchor's folded bytes, so the set reported is exactly
//! the occurrences of the anchors, as the old passes reported them (the unit tests compare
//! every path with a naive search).
//!
//! Anchors shorter than 2 bytes (possible with custom keywords), or a CPU without AVX2, keep
//! the previous passes.

/// Bytes of the window each anchor is found by.
const WINDOW: usize = 4;
/// Buckets of a group (two 8-bit masks); there are one or two groups.
const BUCKETS: usize = 16;

/// An anchor in a bucket.
#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    /// Anchor id.
    pub anchor: u32,
    /// Offset of its window in it.
    pub off: u32,
    /// Its first bytes (up to 4, folded, little-endian) and the mask of those bytes: a
    /// candidate is rejected with one compare.
    pub head: u32,
    /// See `head`.
    pub mask: u32,
    /// Its length.
    pub len: u32,
}

impl Entry {
    /// Does the folded anchor `an` (this entry's) start at `start` in `text` (unfolded)?
    #[inline(always)]
    pub(super) fn at(&self, text: &[u8], start: usize, an: &[u8]) -> bool {
        match text.get(start..start + 4) {
            Some(w) => {
                let w = u32::from_le_bytes(w.try_into().expect("4 bytes")) | 0x2020_2020;
                w & self.mask == self.head
                    && (self.len <= 4 || folded_eq(&text[start + 4..], &an[4..]))
            }
            None => folded_eq(&text[start..], an),
        }
    }
}

/// Teddy over 4-byte windows, 16 or 32 buckets.
#[derive(Clone)]
pub(super) struct Teddy {
    /// Per window position `k` and 8 buckets: (low-nibble mask, high-nibble mask), each 16
    /// bytes repeated in both 128-bit lanes.
    masks: [[[[u8; 32]; 2]; 4]; WINDOW],
    /// Masks in use (2 per group).
    halves: usize,
    /// The same as byte tables (AVX-512 VBMI): per position `k` and 8 buckets, the bucket bits
    /// of each folded ASCII byte, at its [`fold_index`].
    folded: [[[u8; 64]; 4]; WINDOW],
    /// Use the byte tables ([`vbmi`]).
    pub(super) vbmi: bool,
    /// Per bucket: (anchor id, offset of its window in it).
    buckets: Vec<Vec<Entry>>,
}

impl Teddy {
    /// The filter for the anchors `ids` (into `anchors`, folded): 16 buckets, or 32 for more
    /// than 16 anchors. None when an anchor is shorter than 2 bytes or there are none.
    pub(super) fn new(anchors: &[Vec<u8>], ids: &[u32]) -> Option<Teddy> {
        if ids.is_empty() || ids.iter().any(|&a| anchors[a as usize].len() < 2) {
            return None;
        }
        let groups = if ids.len() > BUCKETS { 2 } else { 1 };
        let mut t = Teddy {
            masks: [[[[0; 32]; 2]; 4]; WINDOW],
            halves: 2 * groups,
            folded: [[[0; 64]; 4]; WINDOW],
            vbmi: vbmi(),
            buckets: vec![Vec::new(); BUCKETS * groups],
        };
        t.place(anchors, ids);
        Some(t)
    }

    /// Place the anchors `ids` in the buckets, so that few positions are candidates.
    ///
    /// Each anchor is found by its rarest 4-byte window (3-byte anchors by themselves, their
    /// fourth place open). A bucket reports a position when each of its 4 bytes is one of the
    /// bucket's bytes at that place, so anchors sharing a bucket also report the cross product
    /// of their windows: `sig=`, `whse` and `xai-` together report every `sage` of `message`.
    /// Greedily, most frequent window first, each anchor goes to the bucket where it adds the
    /// least expected work: the chance that a position matches the bucket (by the byte-pair
    /// frequencies of transcripts, [`Chain`]) times the anchors a candidate is checked against.
    fn place(&mut self, anchors: &[Vec<u8>], ids: &[u32]) {
        let chain = Chain::get();
        // Per place, the folded bytes (their 6-bit indexes) a window or bucket accepts.
        type Sets = [u64; WINDOW];
        let window = |w: &[u8]| -> Sets {
            std::array::from_fn(|k| w.get(k).map_or(u64::MAX, |&c| 1 << fold_index(c)))
        };
        // (window, anchor, offset of the window in it)
        let mut list: Vec<(Sets, u32, usize)> = ids
            .iter()
            .map(|&a| {
                let an = &anchors[a as usize];
                let off = (0..=an.len().saturating_sub(WINDOW))
                    .min_by(|&x, &y| {
                        let p =
                            |o: usize| chain.chance(&window(&an[o..(o + WINDOW).min(an.len())]));
                        p(x).total_cmp(&p(y)).then(x.cmp(&y))
                    })
                    .expect("an anchor has a window");
                (window(&an[off..(off + WINDOW).min(an.len())]), a, off)
            })
            .collect();
        // Most frequent first (ties: by anchor, for a stable layout).
        list.sort_by_cached_key(|x| (std::cmp::Reverse(chain.chance(&x.0).to_bits()), x.1));
        let n = self.buckets.len();
        let mut sets: Vec<Sets> = vec![[0; WINDOW]; n];
        let mut count = vec![0usize; n];
        // A candidate costs its report and one check per anchor of the bucket.
        let work = |s: &Sets, count: usize| {
            if count == 0 {
                0.0
            } else {
                chain.chance(s) * (1.0 + 0.5 * count as f64)
            }
        };
        let union = |a: &Sets, b: &Sets| -> Sets { std::array::from_fn(|k| a[k] | b[k]) };
        // Without the byte tables, a place is matched by its low and high nibbles apart (two
        // shuffles): a bucket accepts every byte whose nibbles are each some window's, the
        // cross product of its windows' nibbles. Placed by the exact model, the AVX2 path
        // handed on 1.45 M candidates for 60 MB of transcripts.
        type Nibbles = [(u16, u16); WINDOW];
        const OPEN: (u16, u16) = (u16::MAX, u16::MAX);
        let nibbles = |an: &[u8], off: usize| -> Nibbles {
            std::array::from_fn(|k| {
                an.get(off + k)
                    .map_or(OPEN, |&c| (1 << (c & 15), 1 << ((c | 0x20) >> 4)))
            })
        };
        // By nibbles (low, high) of a folded byte: the 6-bit indexes of the bytes that have them.
        let mut by_nibbles = [[0u64; 16]; 16];
        for b in 0..=255u8 {
            let c = b | 0x20;
            by_nibbles[(c & 15) as usize][(c >> 4) as usize] |= 1 << fold_index(b);
        }
        let bits = |m: u16| (0..16).filter(move |i| m >> i & 1 == 1);
        let accepted = |n: &Nibbles| -> Sets {
            std::array::from_fn(|k| {
                if n[k] == OPEN {
                    return u64::MAX;
                }
                bits(n[k].0)
                    .flat_map(|lo| bits(n[k].1).map(move |hi| (lo, hi)))
                    .fold(0u64, |acc, (lo, hi)| acc | by_nibbles[lo][hi])
            })
        };
        let join = |a: &Nibbles, b: &Nibbles| -> Nibbles {
            std::array::from_fn(|k| (a[k].0 | b[k].0, a[k].1 | b[k].1))
        };
        let exact = self.vbmi;
        let mut nibs: Vec<Nibbles> = vec![[(0, 0); WINDOW]; n];
        // The work of each bucket as it is.
        let mut now = vec![0.0; n];
        for (w, a, off) in list {
            let wn = nibbles(&anchors[a as usize], off);
            let matched = |b: usize| {
                if exact {
                    union(&sets[b], &w)
                } else {
                    accepted(&join(&nibs[b], &wn))
                }
            };
            let (grown, b) = (0..n)
                .map(|b| (work(&matched(b), count[b] + 1), b))
                .min_by(|x, y| {
                    (x.0 - now[x.1])
                        .total_cmp(&(y.0 - now[y.1]))
                        .then(x.1.cmp(&y.1))
                })
                .expect("there are buckets");
            sets[b] = union(&sets[b], &w);
            nibs[b] = join(&nibs[b], &wn);
            count[b] += 1;
            now[b] = grown;
            self.add(anchors, b, a, off);
        }
    }

    /// Put anchor `a`, found by its window at `off`, in bucket `b`.
    fn add(&mut self, anchors: &[Vec<u8>], b: usize, a: u32, off: usize) {
        let an = &anchors[a as usize];
        let n = an.len().min(4);
        let mut head = [0u8; 4];
        head[..n].copy_from_slice(&an[..n]);
        self.buckets[b].push(Entry {
            anchor: a,
            off: off as u32,
            head: u32::from_le_bytes(head),
            mask: if n == 4 {
                u32::MAX
            } else {
                (1u32 << (8 * n)) - 1
            },
            len: an.len() as u32,
        });
        let (half, bit) = (b / 8, 1u8 << (b % 8));
        for k in 0..WINDOW {
            let m = &mut self.masks[k][half];
            let e = &mut self.folded[k][half];
            match an.get(off + k) {
                Some(&c) => {
                    for lane in [0, 16] {
                        m[0][lane + (c & 15) as usize] |= bit;
                        m[1][lane + (c >> 4) as usize] |= bit;
                    }
                    e[fold_index(c)] |= bit;
                }
                // A short anchor: anything may follow.
                None => {
                    for x in m.iter_mut().flat_map(|m| m.iter_mut()) {
                        *x |= bit;
                    }
                    for x in e.iter_mut() {
                        *x |= bit;
                    }
                }
            }
        }
    }
}

/// A Markov chain over folded bytes ([`fold_index`]) from the byte-pair frequencies of
/// transcripts ([`super::bigrams`]): the chance that a position starts a window.
struct Chain {
    /// Frequency of each byte.
    one: [f64; 64],
    /// Chance of byte `c` after byte `p`: `next[p][c]`.
    next: [[f64; 64]; 64],
}

impl Chain {
    fn get() -> &'static Chain {
        static CHAIN: std::sync::OnceLock<Chain> = std::sync::OnceLock::new();
        CHAIN.get_or_init(|| {
            let pair: Vec<[f64; 64]> = super::bigrams::BIGRAM_COST
                .iter()
                .map(|row| row.map(|c| (-(c as f64) / 2.0).exp2()))
                .collect();
            let mut one = [0.0; 64];
            let mut next = [[0.0; 64]; 64];
            for p in 0..64 {
                let sum: f64 = pair[p].iter().sum();
                one[p] = sum;
                for c in 0..64 {
                    next[p][c] = pair[p][c] / sum;
                }
            }
            let total: f64 = one.iter().sum();
            one.iter_mut().for_each(|x| *x /= total);
            Chain { one, next }
        })
    }

    /// The chance that a position's bytes are in `sets` (per place, a bit per folded byte;
    /// all bits: any byte).
    fn chance(&self, sets: &[u64; WINDOW]) -> f64 {
        // The set bits of `m`, lowest first.
        let bits = |mut m: u64| {
            std::iter::from_fn(move || {
                (m != 0).then(|| {
                    let c = m.trailing_zeros() as usize;
                    m &= m - 1;
                    c
                })
            })
        };
        let mut v = [0.0; 64];
        for c in bits(sets[0]) {
            v[c] = self.one[c];
        }
        for k in 1..WINDOW {
            if sets[k] == u64::MAX {
                // Any byte from here on: the chance so far.
                break;
            }
            let mut w = [0.0; 64];
            for c in bits(sets[k]) {
                w[c] = bits(sets[k - 1]).map(|p| v[p] * self.next[p][c]).sum();
            }
            v = w;
        }
        v.iter().sum()
    }
}

/// The index of byte `b` in the 64-entry tables: the 64 ASCII bytes that differ once folded
/// (`| 0x20`) get 64 different indexes (the low 5 bits, and bit 5 set when bit 6 is clear), so
/// one table entry serves `A` and `a`, `\n` and `*`. A byte from 0x80 reads the entry of its
/// low 7 bits: a superset of what it matches (only the open positions of short anchors, which
/// every entry has), so at worst a candidate more.
#[inline(always)]
pub(super) fn fold_index(b: u8) -> usize {
    ((b & 0x1f) | (!(b >> 1) & 0x20)) as usize
}

/// What [`Teddy::scan`] reports to.
pub(super) trait Sink {
    /// A candidate: anchors of `bucket` whose window may start at `p`.
    fn teddy(&mut self, p: usize, bucket: usize);
}

/// True when this CPU has AVX-512 VBMI (byte tables of 64 folded entries: an exact filter).
fn vbmi() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512vbmi") && std::is_x86_feature_detected!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// ASCII case folding as the anchors are stored (`| 0x20`): the scanner's and Teddy's one
/// rule, kept here, below the scanner that uses Teddy.
#[inline(always)]
pub(super) fn fold(b: u8) -> u8 {
    b | 0x20
}

/// `text` starts with the folded `anchor` once folded.
#[inline(always)]
pub(super) fn folded_eq(text: &[u8], anchor: &[u8]) -> bool {
    text.len() >= anchor.len() && text.iter().zip(anchor).all(|(&t, &a)| fold(t) == a)
}

/// True when this CPU runs [`Teddy::scan`].
pub(super) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl Teddy {
    /// The candidates (position and bucket) of the byte tables over `text`, one position at a
    /// time: what the AVX-512 path reports, on any CPU (the AVX2 path's nibble masks report a
    /// superset).
    #[cfg(test)]
    pub(super) fn count_exact(&self, text: &[u8]) -> usize {
        (0..text.len())
            .map(|i| {
                (0..self.halves)
                    .map(|h| {
                        (0..WINDOW).fold(0xFFu8, |acc, k| {
                            // Past the end: the padding byte of the SIMD paths.
                            let b = text.get(i + k).copied().unwrap_or(0xFF);
                            acc & self.folded[k][h][fold_index(b)]
                        })
                    })
                    .map(|m| m.count_ones() as usize)
                    .sum::<usize>()
            })
            .sum()
    }

    /// The anchors of `bucket` with their window offsets.
    pub(super) fn bucket(&self, b: usize) -> &[Entry] {
        &self.buckets[b]
    }

    /// One pass over `text`: every candidate. Call only when [`available`].
    pub(super) fn scan(&self, text: &[u8], sink: &mut impl Sink) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller checked `available()` (AVX2).
        unsafe {
            match (self.halves, self.vbmi) {
                (2, true) => self.scan_vbmi::<2>(text, sink),
                (_, true) => self.scan_vbmi::<4>(text, sink),
                (2, false) => self.scan_avx2::<2>(text, sink),
                (_, false) => self.scan_avx2::<4>(text, sink),
            }
        };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (text, sink);
            unreachable!("scan needs AVX2")
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn scan_avx2<const H: usize>(&self, text: &[u8], sink: &mut impl Sink) {
        use std::arch::x86_64::*;
        // SAFETY (every load and store below): 32 bytes within the array or slice named.
        let ld = |m: &[u8; 32]| unsafe { _mm256_loadu_si256(m.as_ptr() as *const __m256i) };
        let masks: [[[__m256i; 2]; H]; WINDOW] = std::array::from_fn(|k| {
            std::array::from_fn(|h| [ld(&self.masks[k][h][0]), ld(&self.masks[k][h][1])])
        });
        let fold = _mm256_set1_epi8(0x20);
        let nib = _mm256_set1_epi8(0x0f);
        let zero = _mm256_setzero_si256();
        // Candidates of the 32 positions from `ptr` (which must have 32 + 3 readable bytes):
        // per 8 buckets, a byte of bucket bits per position; and a bit per position.
        let block = |ptr: *const u8| {
            let mut acc = [_mm256_set1_epi8(-1); H];
            for (k, mk) in masks.iter().enumerate() {
                // SAFETY: `ptr` has 32 + 3 readable bytes (see the callers).
                let v = unsafe { _mm256_loadu_si256(ptr.add(k) as *const __m256i) };
                let v = _mm256_or_si256(v, fold);
                let lo = _mm256_and_si256(v, nib);
                let hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
                for h in 0..H {
                    let m = _mm256_and_si256(
                        _mm256_shuffle_epi8(mk[h][0], lo),
                        _mm256_shuffle_epi8(mk[h][1], hi),
                    );
                    acc[h] = _mm256_and_si256(acc[h], m);
                }
            }
            let mut any = acc[0];
            for a in &acc[1..] {
                any = _mm256_or_si256(any, *a);
            }
            let bits = !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(any, zero)) as u32);
            (acc, bits)
        };
        let mut report = |base: usize, bits: u32, acc: [__m256i; H]| {
            let mut bytes = [[0u8; 32]; H];
            for h in 0..H {
                // SAFETY: see above.
                unsafe { _mm256_storeu_si256(bytes[h].as_mut_ptr() as *mut __m256i, acc[h]) };
            }
            report_lanes(&bytes, u64::from(bits), base, sink);
        };
        let mut i = 0;
        while i + 32 + WINDOW - 1 <= text.len() {
            let (acc, bits) = block(text[i..].as_ptr());
            if bits != 0 {
                report(i, bits, acc);
            }
            i += 32;
        }
        // The last positions: from a padded copy (0xFF folds to itself and is in no anchor).
        while i < text.len() {
            let mut buf = [0xFFu8; 32 + WINDOW - 1];
            let n = (text.len() - i).min(buf.len());
            buf[..n].copy_from_slice(&text[i..i + n]);
            let (acc, bits) = block(buf.as_ptr());
            let valid = if text.len() - i >= 32 {
                u32::MAX
            } else {
                (1u32 << (text.len() - i)) - 1
            };
            if bits & valid != 0 {
                report(i, bits & valid, acc);
            }
            i += 32;
        }
    }

    // The AVX-512 intrinsics are stable since Rust 1.89 (the crate's `rust-version`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
    fn scan_vbmi<const H: usize>(&self, text: &[u8], sink: &mut impl Sink) {
        use std::arch::x86_64::*;
        // SAFETY (every load and store below): 64 bytes within the array or slice named.
        let ld = |m: &[u8; 64]| unsafe { _mm512_loadu_si512(m.as_ptr() as *const _) };
        // One 64-entry table per position and 8 buckets (16 registers at most, so the loop
        // keeps them all in registers; 128-entry tables took two each and were spilled).
        let tabs: [[__m512i; H]; WINDOW] =
            std::array::from_fn(|k| std::array::from_fn(|h| ld(&self.folded[k][h])));
        let low5 = _mm512_set1_epi8(0x1f);
        // Candidates of the 64 positions from `ptr` (which must have 64 + 3 readable bytes).
        let block = |ptr: *const u8| {
            let mut acc = [_mm512_set1_epi8(-1); H];
            for (k, tk) in tabs.iter().enumerate() {
                // SAFETY: `ptr` has 64 + 3 readable bytes (see the callers).
                let v = unsafe { _mm512_loadu_si512(ptr.add(k) as *const _) };
                // The table index of each byte ([`fold_index`]): its low 5 bits, and bit 5 set
                // when bit 6 is clear (`low5 ? v : !(v >> 1)` bit by bit).
                let idx = _mm512_ternarylogic_epi32::<0xB1>(v, _mm512_srli_epi16::<1>(v), low5);
                for h in 0..H {
                    acc[h] = _mm512_and_si512(acc[h], _mm512_permutexvar_epi8(idx, tk[h]));
                }
            }
            let mut any = acc[0];
            for a in &acc[1..] {
                any = _mm512_or_si512(any, *a);
            }
            (acc, _mm512_test_epi8_mask(any, any))
        };
        let mut report = |base: usize, bits: u64, acc: [__m512i; H]| {
            let mut bytes = [[0u8; 64]; H];
            for h in 0..H {
                // SAFETY: see above.
                unsafe { _mm512_storeu_si512(bytes[h].as_mut_ptr() as *mut _, acc[h]) };
            }
            report_lanes(&bytes, bits, base, sink);
        };
        let mut i = 0;
        while i + 64 + WINDOW - 1 <= text.len() {
            let (acc, bits) = block(text[i..].as_ptr());
            if bits != 0 {
                report(i, bits, acc);
            }
            i += 64;
        }
        while i < text.len() {
            let mut buf = [0xFFu8; 64 + WINDOW - 1];
            let n = (text.len() - i).min(buf.len());
            buf[..n].copy_from_slice(&text[i..i + n]);
            let (acc, bits) = block(buf.as_ptr());
            let valid = if text.len() - i >= 64 {
                u64::MAX
            } else {
                (1u64 << (text.len() - i)) - 1
            };
            if bits & valid != 0 {
                report(i, bits & valid, acc);
            }
            i += 64;
        }
    }
}

/// Hand each candidate of one block to `sink`: `bits` marks the lanes (positions from `base`)
/// where some bucket matched, `bytes[h][lane]` holds buckets `8h..8h+8` of that lane.
#[inline(always)]
fn report_lanes<const L: usize, const H: usize>(
    bytes: &[[u8; L]; H],
    bits: u64,
    base: usize,
    sink: &mut impl Sink,
) {
    let mut m = bits;
    while m != 0 {
        let j = m.trailing_zeros() as usize;
        m &= m - 1;
        let mut b = 0u32;
        for (h, by) in bytes.iter().enumerate() {
            b |= (by[j] as u32) << (8 * h);
        }
        while b != 0 {
            let k = b.trailing_zeros() as usize;
            b &= b - 1;
            sink.teddy(base + j, k);
        }
    }
}
