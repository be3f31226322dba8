//! The decode kernel of Q6_K groups.
//!
//! A Q6_K block's 52 words, interleaved, then its 2-byte `d` row by row. In the file, words
//! 0-31 hold the low nibbles, 32-47 the high bit pairs, 48-51 the sixteen signed scales. For
//! half `h` and position `p` (of 8), words `16h + p` and `16h + 8 + p` hold low nibbles and
//! word `32 + 8h + p` the high bits of the values `128h + 32i + 4p + e` (`i` < 4 the quarter,
//! `e` < 4 the byte), as the row kernel reads them 32 bytes at a time. The group block holds
//! these three words on lines `3n`, `3n + 1` and `3n + 2`, `n = 8h + p` ([`line`]), so that the
//! kernels read it from start to end: read in the file's order, three lines 512 bytes apart
//! at a time, Q6_K decoded at about half the bandwidth of Q4_K on an AMD EPYC
//! (`docs/benchmarks.md`). Each lane sums `Σ sc Σ (q - 32) y` exactly in 32 bits for its row,
//! starting each sub-block's sum at `-32 Σ y`.

use super::tiles::{Factors, GroupTiles, Operands};
use super::{Cpu, GROUP, GroupKernel, group_bytes};
use crate::amx::Amx;
use crate::q6k::Q6K;
use crate::q8k::KAct;

impl GroupKernel for Q6K {
    /// AVX-512 VNNI only: on AVX2 the row kernel (`q6k.rs`) was faster than a group kernel
    /// (`docs/benchmarks.md`).
    fn runs_on(cpu: Cpu) -> bool {
        matches!(cpu, Cpu::Vnni(_))
    }

    fn line(w: usize) -> usize {
        line(w)
    }

    fn dot_group<const N: usize>(
        cpu: Cpu,
        ask_ahead: bool,
        blocks: &[u8],
        a: [KAct<'_>; N],
    ) -> [[f32; GROUP]; N] {
        match cpu {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a `Vnni` exists only on a CPU with AVX-512 F, BW, VL, VNNI, FMA, F16C.
            #[allow(unsafe_code)]
            Cpu::Vnni(_) => unsafe { avx512::dot_group(ask_ahead, blocks, a) },
            _ => [[0.0; GROUP]; N],
        }
    }
}

impl GroupTiles for Q6K {
    const SIGNED: bool = true;

    fn operands(_amx: Amx, block: &[u8], tiles: &mut Operands, factors: &mut Factors) -> bool {
        let Some(block) = block.get(..GROUP_BYTES) else {
            return false;
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Amx` exists only on a CPU with AVX-512 F, BW, VL, VNNI, FMA and F16C.
        #[allow(unsafe_code)]
        unsafe {
            avx512::operands(block, tiles, factors)
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (block, tiles, factors);
        true
    }
}

/// Bytes of a group block.
const GROUP_BYTES: usize = group_bytes(<Q6K as crate::kmatrix::KFormat>::BLOCK_BYTES);

/// Offset of the sixteen `d` in a group block, after the 52 words.
const D: usize = 52 * 64;

/// The line of the group block holding word `w` of the file's block: the low nibbles and
/// high bits of position `p` of half `h` next to each other, then the scales.
const fn line(w: usize) -> usize {
    match w {
        0..32 => 3 * (8 * (w / 16) + w % 8) + (w % 16) / 8,
        32..48 => 3 * (w - 32) + 2,
        _ => w,
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::broadcast;
    use super::{D, Factors, GROUP, GROUP_BYTES, Operands};
    use crate::kmatrix::prefetch_ahead;
    use crate::q8k::{K_BLOCK, KAct};

    /// Adds to `sums[v][i]` the products of quarter `i` of half `h` at the positions
    /// `4 half .. 4 half + 4` (the sub-block `8h + 2i + half`), each lane a row, with the
    /// activations of block `y[v]`, asking for the lines ahead when `ask_ahead`. Kept out of
    /// line: inlined, the compiler hoisted the activation broadcasts of a whole block ahead of
    /// their products and spilled them (as in `q4k::pair`).
    ///
    /// # Safety
    /// `p` must point at a whole group block, and each `y` at a block of 256 activations;
    /// `h` and `half` must be below 2.
    #[inline(never)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn quarters<const N: usize>(
        p: *const u8,
        h: usize,
        half: usize,
        y: [*const i8; N],
        mut sums: [[__m512i; 4]; N],
        ask_ahead: bool,
    ) -> [[__m512i; 4]; N] {
        for p4 in 0..4 {
            let at = 4 * half + p4;
            let word = |w: usize| {
                let w = p.wrapping_add(64 * w);
                if ask_ahead {
                    prefetch_ahead(w, 64);
                }
                // SAFETY: `w < 52` lines of the group block (the caller's contract);
                // unaligned load.
                unsafe { _mm512_loadu_si512(w.cast()) }
            };
            let quarters = quarter_words(word, h, at);
            for (i, q) in quarters.into_iter().enumerate() {
                for v in 0..N {
                    // SAFETY: bytes 128h + 32i + 4at .. + 4 (h < 2, i < 4, at < 8) of the
                    // block's 256 activations (the caller's contract).
                    let yv = unsafe { broadcast(y[v].add(128 * h + 32 * i + 4 * at)) };
                    // Values 0..64 times quants -128..128, four per lane, four times, from
                    // -32 Σ y: well inside an i32.
                    sums[v][i] = _mm512_dpbusd_epi32(sums[v][i], q, yv);
                }
            }
        }
        sums
    }

    /// The four quarters (values `0..64`) at position `p` (of 8) of half `h`, each lane a row,
    /// from the lines that `word` loads: quarter `i` holds the values `128h + 32i + 4p .. + 4`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn quarter_words(word: impl Fn(usize) -> __m512i, h: usize, p: usize) -> [__m512i; 4] {
        let low = _mm512_set1_epi8(0x0F);
        let high = _mm512_set1_epi8(0x30);
        let n = 8 * h + p;
        let (l0, l1, hb) = (word(3 * n), word(3 * n + 1), word(3 * n + 2));
        [
            _mm512_or_si512(
                _mm512_and_si512(l0, low),
                _mm512_and_si512(_mm512_slli_epi16::<4>(hb), high),
            ),
            _mm512_or_si512(
                _mm512_and_si512(l1, low),
                _mm512_and_si512(_mm512_slli_epi16::<2>(hb), high),
            ),
            _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi16::<4>(l0), low),
                _mm512_and_si512(hb, high),
            ),
            _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi16::<4>(l1), low),
                _mm512_and_si512(_mm512_srli_epi16::<2>(hb), high),
            ),
        ]
    }

    /// [`super::GroupTiles::operands`] of a whole group block.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(super) fn operands(block: &[u8], tiles: &mut Operands, factors: &mut Factors) {
        assert!(block.len() >= GROUP_BYTES);
        let p = block.as_ptr();
        // SAFETY: the group block holds 52 words of 64 bytes and the `d` (asserted); `w < 52`;
        // unaligned load.
        let word = |w: usize| unsafe { _mm512_loadu_si512(p.add(64 * w).cast()) };
        let out = tiles.as_mut_ptr();
        for h in 0..2 {
            for at in 0..8 {
                let (half, row) = (at / 4, at % 4);
                for (i, q) in quarter_words(word, h, at).into_iter().enumerate() {
                    let s = 8 * h + 2 * i + half;
                    // The signed value `q - 32`: the sums need no offset.
                    let q = _mm512_sub_epi8(q, _mm512_set1_epi8(32));
                    // SAFETY: sub-block `s < 16` holds 256 bytes, row `row < 4` of 64 inside
                    // them; unaligned store.
                    unsafe { _mm512_storeu_si512(out.add(256 * s + 64 * row).cast(), q) };
                }
            }
        }
        // SAFETY: the sixteen `d` (32 bytes) lie at `D` inside the group block.
        let d = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.add(D).cast()) });
        for s in 0..16 {
            // The signed byte `s % 4` of scale word `s / 4`, sign-extended.
            let up = _mm_cvtsi32_si128(24 - 8 * (s % 4) as i32);
            let sc = _mm512_srai_epi32::<24>(_mm512_sll_epi32(word(48 + s / 4), up));
            let scale = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sc));
            // SAFETY: `factors` holds 16 lanes per sub-block; unaligned store.
            unsafe { _mm512_storeu_ps(factors.scale[s].as_mut_ptr(), scale) };
        }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(super) fn dot_group<const N: usize>(
        ask_ahead: bool,
        blocks: &[u8],
        a: [KAct<'_>; N],
    ) -> [[f32; GROUP]; N] {
        let nb = a
            .iter()
            .fold(blocks.len() / GROUP_BYTES, |n, a| n.min(a.blocks()));
        let mut acc = [_mm512_setzero_ps(); N];
        for b in 0..nb {
            let p = blocks[b * GROUP_BYTES..(b + 1) * GROUP_BYTES].as_ptr();
            // SAFETY: the group block holds 52 words of 64 bytes and the `d`; `w < 52`;
            // unaligned load.
            let word = |w: usize| unsafe { _mm512_loadu_si512(p.add(64 * w).cast()) };
            // SAFETY: `b < nb <= a[v].q.len() / 256`.
            let y: [*const i8; N] =
                std::array::from_fn(|v| unsafe { a[v].q.as_ptr().add(b * K_BLOCK) });
            let mut total = [_mm512_setzero_si512(); N];
            for h in 0..2 {
                for half in 0..2 {
                    let sums: [[__m512i; 4]; N] = std::array::from_fn(|v| {
                        std::array::from_fn(|i| {
                            let s = 16 * b + 8 * h + 2 * i + half;
                            _mm512_set1_epi32(-32 * i32::from(a[v].sums16[s]))
                        })
                    });
                    // SAFETY: the group block's words and each vector's block of
                    // activations are readable whole.
                    let sums = unsafe { quarters(p, h, half, y, sums, ask_ahead) };
                    let scales: [__m512i; 4] = std::array::from_fn(|i| {
                        let s = 8 * h + 2 * i + half;
                        // The signed byte `s % 4` of scale word `s / 4`, sign-extended.
                        let up = _mm_cvtsi32_si128(24 - 8 * (s % 4) as i32);
                        _mm512_srai_epi32::<24>(_mm512_sll_epi32(word(48 + s / 4), up))
                    });
                    for (total, sums) in total.iter_mut().zip(&sums) {
                        for (&sum, &scale) in sums.iter().zip(&scales) {
                            *total = _mm512_add_epi32(*total, _mm512_mullo_epi32(sum, scale));
                        }
                    }
                }
            }
            // SAFETY: the sixteen `d` (32 bytes) lie at `D` inside the group block.
            let d = _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(p.add(D).cast()) });
            for v in 0..N {
                let dy = _mm512_set1_ps(a[v].d[b]);
                acc[v] =
                    _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[v]), _mm512_mul_ps(d, dy), acc[v]);
            }
        }
        acc.map(|acc| {
            let mut out = [0f32; GROUP];
            // SAFETY: `out` holds 16 f32; unaligned store.
            unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
            out
        })
    }
}
