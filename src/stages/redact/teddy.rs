//! The one-pass prefilter: every anchor of the keyword set found in one AVX2 pass over the text
//! as it is (no folded copy).
//!
//! Before this, the engine folded each line into a buffer, then ran three Teddy searchers of
//! `aho_corasick::packed` (16 anchors each) and the rare-byte pass over the copy: five passes
//! over every byte. Here one loop does it all, 32 bytes a step:
//!
//! - the bytes at `i`, `i+1`, `i+2`, `i+3` are loaded and folded (`| 0x20`) in registers;
//! - a Teddy filter with 16 buckets (two 8-bit shuffle masks per nibble and position, as in
//!   Hyperscan's and aho-corasick's Teddy) tests a 4-byte window of every letter anchor: each
//!   anchor of 4+ bytes contributes its rarest 4-byte window (by the folded byte frequencies of
//!   transcripts, [`COST`]), at any offset inside it; 3-byte anchors (`key`, `://`, `eyj`) get
//!   buckets of their own whose fourth position accepts anything;
//! - the same folded bytes are compared with the rare punctuation bytes (`~ = _ . -`) of the
//!   other anchors ([`super::scan`]'s special pass), whose neighbours are checked by bitsets.
//!
//! A candidate is verified against the anchor's folded bytes, so the set reported is exactly
//! the occurrences of the anchors, as the old passes reported them (the unit tests compare
//! both with a naive search). Measured on the corpus (1.5 MB sample): about 5 bucket candidates
//! per KB for 0.9 real occurrences; with 8 buckets and prefixes it was 57.
//!
//! Anchors shorter than 3 bytes that hold no special byte (possible with custom keywords), or a
//! CPU without AVX2, keep the previous passes.

/// Folded byte → cost (about −log2 of its frequency in transcripts), for printable ASCII
/// `0x20..0x80`; a window with the highest total cost is the rarest.
const COST: [u8; 96] = [
    4, 16, 5, 10, 13, 16, 14, 10, 9, 9, 9, 8, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 11, 11,
    10, 11, 14, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20,
    20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 20, 8, 4, 6, 5, 5, 4, 6, 6, 6, 5, 7, 7, 5, 6, 4, 5, 5,
    7, 5, 4, 4, 5, 7, 6, 7, 6, 7, 8, 6, 8, 12, 7,
];

fn cost(b: u8) -> u32 {
    match b {
        0x20..=0x7f => COST[(b - 0x20) as usize] as u32,
        _ => 8,
    }
}

/// Bytes of the window each anchor is found by.
const WINDOW: usize = 4;
/// Buckets of a group (two 8-bit masks).
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
                    && (self.len <= 4 || super::scan::folded_eq(&text[start + 4..], &an[4..]))
            }
            None => super::scan::folded_eq(&text[start..], an),
        }
    }
}

/// Teddy over 4-byte windows: 16 buckets for each group of anchors (two groups at most).
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
    /// The filter for `groups` (anchor ids into `anchors`, folded; at most two groups, 16
    /// buckets each); None when an anchor is shorter than 2 bytes or there are none.
    pub(super) fn new(anchors: &[Vec<u8>], groups: &[&[u32]]) -> Option<Teddy> {
        let groups: Vec<&[u32]> = groups.iter().copied().filter(|g| !g.is_empty()).collect();
        if groups.is_empty()
            || groups.len() > 2
            || groups
                .iter()
                .any(|g| g.iter().any(|&a| anchors[a as usize].len() < 2))
        {
            return None;
        }
        let mut t = Teddy {
            masks: [[[[0; 32]; 2]; 4]; WINDOW],
            halves: 2 * groups.len(),
            folded: [[[0; 64]; 4]; WINDOW],
            vbmi: vbmi(),
            buckets: vec![Vec::new(); BUCKETS * groups.len()],
        };
        for (gi, ids) in groups.iter().enumerate() {
            t.group(anchors, ids, gi * BUCKETS);
        }
        Some(t)
    }

    /// Place the anchors `ids` in the 16 buckets from `first`.
    fn group(&mut self, anchors: &[Vec<u8>], ids: &[u32], first: usize) {
        // (window bytes, anchor, offset)
        let mut short = Vec::new();
        let mut long = Vec::new();
        for &a in ids {
            let an = &anchors[a as usize];
            if an.len() < WINDOW {
                short.push((an.clone(), a, 0));
            } else {
                let off = (0..=an.len() - WINDOW)
                    .max_by_key(|&o| {
                        (
                            an[o..o + WINDOW].iter().map(|&b| cost(b)).sum::<u32>(),
                            std::cmp::Reverse(o),
                        )
                    })
                    .expect("an anchor of 4+ bytes has a window");
                long.push((an[off..off + WINDOW].to_vec(), a, off));
            }
        }
        short.sort();
        long.sort();
        // Buckets in proportion to the anchors, at least one for each kind present.
        let total = short.len() + long.len();
        // Short anchors leave their last positions open, which a bucket shares with the others
        // in it: two at most per bucket (on the corpus, 2.7 candidates per KB instead of 17).
        let mut nshort = (BUCKETS * short.len())
            .div_ceil(total)
            .max(short.len().div_ceil(2));
        if !short.is_empty() {
            nshort = nshort.clamp(1, BUCKETS - usize::from(!long.is_empty()));
        }
        let nlong = BUCKETS - nshort;
        let t = self;
        let mut place = |list: &[(Vec<u8>, u32, usize)], first: usize, n: usize| {
            if list.is_empty() {
                return;
            }
            let per = list.len().div_ceil(n);
            for (i, (w, a, off)) in list.iter().enumerate() {
                let b = first + i / per;
                let an = &anchors[*a as usize];
                let n = an.len().min(4);
                let mut head = [0u8; 4];
                head[..n].copy_from_slice(&an[..n]);
                t.buckets[b].push(Entry {
                    anchor: *a,
                    off: *off as u32,
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
                    let m = &mut t.masks[k][half];
                    let e = &mut t.folded[k][half];
                    match w.get(k) {
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
        };
        place(&short, first, nshort.max(1));
        place(&long, first + nshort, nlong.max(1));
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
