//! The rare-byte pass: anchors that hold a byte rare in transcripts are found from that byte
//! with one SIMD pass, instead of a Teddy pass of their own.

use super::*;

/// Bytes rare in transcripts (0.01 to 1.2 % of the shared corpus), folded, rarest first. An
/// anchor holding one of them is not given to a Teddy pass: every occurrence of the anchor
/// holds the byte, so one SIMD pass over these bytes, with a look at the two bytes around each
/// one, finds them all. About half the anchors hold one (`ghp_`, `glpat-`, `hvs.`, `sig=`,
/// `q~`), which saves four Teddy passes of seven.
pub(super) const SPECIAL_BYTES: &[u8] = &[
    b'~' | 0x20,
    b'=' | 0x20,
    b'_' | 0x20,
    b'.' | 0x20,
    b'-' | 0x20,
];

/// No special byte (in [`Special::class`]).
const NONE: u8 = u8::MAX;

/// The anchors found from a special byte.
pub(super) struct Special {
    /// The special bytes, padded with the first one.
    bytes: [u8; 5],
    /// Per byte value: its index in `bytes`, or [`NONE`].
    class: [u8; 256],
    /// Per special byte: (anchor, offset of the byte in it).
    entries: [Vec<(u32, usize)>; 5],
    /// Per special byte: some anchor has it where a neighbour of the occurrence cannot be
    /// checked by the bitsets (a 2-byte anchor): every occurrence is verified.
    always: [bool; 5],
    /// Bitsets over (byte, byte) pairs mixed with the special byte: the two bytes before the
    /// special byte, the one before and after, the two after. An occurrence whose pairs are
    /// all absent starts no anchor.
    before: Box<[u64; 1024]>,
    around: Box<[u64; 1024]>,
    after: Box<[u64; 1024]>,
    /// Folded anchors.
    anchors: Vec<Vec<u8>>,
}

#[inline(always)]
fn pair_key(c: u8, x: u8, y: u8) -> usize {
    (((x as usize) << 8) | y as usize) ^ ((c as usize) << 5)
}

fn bit_set(b: &mut [u64; 1024], k: usize) {
    b[(k >> 6) & 1023] |= 1 << (k & 63);
}

#[inline(always)]
fn bit_get(b: &[u64; 1024], k: usize) -> u64 {
    b[(k >> 6) & 1023] >> (k & 63) & 1
}

impl Special {
    /// `chosen`: (anchor, index of its special byte in `bytes`, offset of that byte in it).
    pub(super) fn new(
        bytes: &[u8],
        anchors: &[Vec<u8>],
        chosen: Vec<(u32, usize, usize)>,
    ) -> Special {
        let mut s = Special {
            bytes: [bytes[0]; 5],
            class: [NONE; 256],
            entries: Default::default(),
            always: [false; 5],
            before: Box::new([0; 1024]),
            around: Box::new([0; 1024]),
            after: Box::new([0; 1024]),
            anchors: anchors.to_vec(),
        };
        for (i, &c) in bytes.iter().enumerate() {
            s.bytes[i] = c;
            s.class[c as usize] = i as u8;
        }
        for (a, ci, o) in chosen {
            let an = &anchors[a as usize];
            let c = bytes[ci];
            s.entries[ci].push((a, o));
            if o >= 1 && o + 1 < an.len() {
                bit_set(&mut s.around, pair_key(c, an[o - 1], an[o + 1]));
            } else if o >= 2 {
                bit_set(&mut s.before, pair_key(c, an[o - 2], an[o - 1]));
            } else if o == 0 && an.len() >= 3 {
                bit_set(&mut s.after, pair_key(c, an[1], an[2]));
            } else {
                s.always[ci] = true;
            }
        }
        s
    }

    /// Report every occurrence of its anchors in `folded` (start, anchor).
    pub(super) fn scan(&self, folded: &[u8], mut report: impl FnMut(usize, usize)) {
        let mut i = 0;
        #[cfg(target_arch = "x86_64")]
        while i + 32 <= folded.len() {
            let mut m = special_mask32(&self.bytes, &folded[i..i + 32]);
            while m != 0 {
                let p = i + m.trailing_zeros() as usize;
                m &= m - 1;
                self.at(folded, p, &mut report);
            }
            i += 32;
        }
        while i < folded.len() {
            self.at(folded, i, &mut report);
            i += 1;
        }
    }

    /// Report the anchors holding their special byte at `folded[p]`, if it is one. `folded`
    /// may also be the text as it is: every byte read is folded here (folding is idempotent).
    #[inline(always)]
    fn at(&self, folded: &[u8], p: usize, report: &mut impl FnMut(usize, usize)) {
        let c = fold(folded[p]);
        let ci = self.class[c as usize];
        if ci == NONE {
            return;
        }
        let ci = ci as usize;
        if !self.always[ci] {
            let (b2, b1, a1, a2) = if p >= 2 && p + 2 < folded.len() {
                (
                    fold(folded[p - 2]),
                    fold(folded[p - 1]),
                    fold(folded[p + 1]),
                    fold(folded[p + 2]),
                )
            } else {
                // Near an end: a missing byte is 0, which no anchor holds.
                let at = |i: Option<usize>| i.and_then(|i| folded.get(i)).map_or(0, |&b| fold(b));
                (
                    at(p.checked_sub(2)),
                    at(p.checked_sub(1)),
                    at(Some(p + 1)),
                    at(Some(p + 2)),
                )
            };
            let any = bit_get(&self.around, pair_key(c, b1, a1))
                | bit_get(&self.before, pair_key(c, b2, b1))
                | bit_get(&self.after, pair_key(c, a1, a2));
            if any == 0 {
                return;
            }
        }
        self.verify(folded, p, ci, report);
    }

    #[inline(never)]
    fn verify(&self, folded: &[u8], p: usize, ci: usize, report: &mut impl FnMut(usize, usize)) {
        for &(a, o) in &self.entries[ci] {
            let Some(start) = p.checked_sub(o) else {
                continue;
            };
            let an = &self.anchors[a as usize];
            // The first byte rules out most entries without a call to memcmp.
            if fold(folded[start]) == an[0] && folded_eq(&folded[start..], an) {
                report(start, a as usize);
            }
        }
    }
}

/// Bit `i` set: `chunk[i]` is one of `bytes` (SSE2, which every x86-64 has).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special_mask32(bytes: &[u8; 5], chunk: &[u8]) -> u32 {
    use std::arch::x86_64::*;
    assert!(chunk.len() >= 32);
    // SAFETY: SSE2 is part of the x86-64 baseline; the loads are unaligned and within `chunk`
    // (32 bytes checked above).
    unsafe {
        let half = |ptr: *const u8| {
            let v = _mm_loadu_si128(ptr as *const __m128i);
            let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            let m = _mm_or_si128(
                _mm_or_si128(eq(bytes[0]), eq(bytes[1])),
                _mm_or_si128(_mm_or_si128(eq(bytes[2]), eq(bytes[3])), eq(bytes[4])),
            );
            _mm_movemask_epi8(m) as u32 & 0xffff
        };
        half(chunk.as_ptr()) | half(chunk.as_ptr().add(16)) << 16
    }
}
