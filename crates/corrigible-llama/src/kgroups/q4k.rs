//! The decode kernel of Q4_K groups.
//!
//! A Q4_K block's 36 words, interleaved: word 0 holds `d` and `dmin`, words 1-3 the packed
//! six-bit scales and minimums (`q4k::scales_mins`), words 4-35 the nibbles, four bytes of
//! the file's 128 at a time: byte `i` of word `4 + 8j + c` holds value `64j + 4c + i` in its
//! low nibble and `64j + 32 + 4c + i` in its high one. Each lane sums `Σ sc Σ q y` and
//! `Σ m Σ y` exactly in 32 bits for its row, as the row kernels do.

use super::tiles::{Factors, GroupTiles, Operands};
use super::{Cpu, GROUP, GroupKernel, group_bytes};
use crate::amx::Amx;
use crate::q4k::Q4K;
use crate::q8k::KAct;

impl GroupKernel for Q4K {
    fn runs_on(_cpu: Cpu) -> bool {
        true
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
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Avx2` exists only on a CPU with AVX2, FMA and F16C.
            #[allow(unsafe_code)]
            Cpu::Avx2(_) => unsafe { avx2::dot_group(ask_ahead, blocks, a) },
            #[cfg(not(target_arch = "x86_64"))]
            _ => [[0.0; GROUP]; N],
        }
    }
}

impl GroupTiles for Q4K {
    const SIGNED: bool = false;

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
const GROUP_BYTES: usize = group_bytes(<Q4K as crate::kmatrix::KFormat>::BLOCK_BYTES);

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;

    use super::super::broadcast;
    use super::{Factors, GROUP, GROUP_BYTES, Operands};
    use crate::kmatrix::prefetch_ahead;
    use crate::q8k::{K_BLOCK, KAct};

    /// The six-bit value of sub-block `s` in each lane, from the words `low` (its low six bits
    /// for `s < 4`, its top two bits for `s >= 4`) and `high` (low or high nibbles for
    /// `s >= 4`, at `nibble` 0 or 4).
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn six_bits(low: __m512i, high: __m512i, s: usize, nibble: i32) -> __m512i {
        if s < 4 {
            let v = _mm512_srl_epi32(low, _mm_cvtsi32_si128(8 * s as i32));
            _mm512_and_si512(v, _mm512_set1_epi32(0x3F))
        } else {
            let t = 8 * (s as i32 - 4);
            let lo = _mm512_srl_epi32(high, _mm_cvtsi32_si128(t + nibble));
            let hi = _mm512_srl_epi32(low, _mm_cvtsi32_si128(t + 6));
            _mm512_or_si512(
                _mm512_and_si512(lo, _mm512_set1_epi32(0x0F)),
                _mm512_slli_epi32::<4>(_mm512_and_si512(hi, _mm512_set1_epi32(0x03))),
            )
        }
    }

    /// The sums of the low nibbles times the values `0..32` and of the high nibbles times
    /// `32..64`, each lane a row, of the 8 words at `q` and the activations at each `y`,
    /// asking for the lines ahead when `ask_ahead`. Kept out of line: inlined, the compiler
    /// hoisted all 64 activation broadcasts of a block ahead of their products and spilled
    /// them, and decode ran about 15% slower.
    ///
    /// # Safety
    /// `q` must point at 8 readable words of 64 bytes, and each `y` at 64 readable bytes.
    #[inline(never)]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn pair<const N: usize>(
        q: *const u8,
        y: [*const i8; N],
        ask_ahead: bool,
    ) -> ([__m512i; N], [__m512i; N]) {
        let low = _mm512_set1_epi8(0x0F);
        let mut lo_sum = [_mm512_setzero_si512(); N];
        let mut hi_sum = [_mm512_setzero_si512(); N];
        for c in 0..8 {
            let at = q.wrapping_add(64 * c);
            if ask_ahead {
                prefetch_ahead(at, 64);
            }
            // SAFETY: word `c` of the 8 (the caller's contract); unaligned load.
            let q = unsafe { _mm512_loadu_si512(at.cast()) };
            let lo = _mm512_and_si512(q, low);
            let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(q), low);
            for v in 0..N {
                // SAFETY: bytes 4c .. 4c + 36 (c < 8) of the 64 at `y[v]`.
                let (y_lo, y_hi) =
                    unsafe { (broadcast(y[v].add(4 * c)), broadcast(y[v].add(32 + 4 * c))) };
                // Nibbles (0..16) times quants (-128..128), four per lane and eight times: at
                // most 32 * 15 * 128 = 61,440.
                lo_sum[v] = _mm512_dpbusd_epi32(lo_sum[v], lo, y_lo);
                hi_sum[v] = _mm512_dpbusd_epi32(hi_sum[v], hi, y_hi);
            }
        }
        (lo_sum, hi_sum)
    }

    /// Each byte of `x` times the 32-bit lane's `scale` (below 16, as the bytes are), the
    /// products below 256.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn times(x: __m512i, scale: __m512i) -> __m512i {
        let by = _mm512_or_si512(scale, _mm512_slli_epi32::<16>(scale));
        let even = _mm512_set1_epi16(0x00FF);
        let low = _mm512_mullo_epi16(_mm512_and_si512(x, even), by);
        let high = _mm512_mullo_epi16(_mm512_srli_epi16::<8>(x), by);
        _mm512_or_si512(low, _mm512_slli_epi16::<8>(high))
    }

    /// [`super::GroupTiles::operands`] of a whole group block: sub-block `s`'s nibbles times
    /// the low four bits of its scale from `512 s` on, times the top two from `4096 + 512 s`
    /// on.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(super) fn operands(block: &[u8], tiles: &mut Operands, factors: &mut Factors) {
        assert!(block.len() >= GROUP_BYTES);
        let p = block.as_ptr();
        // SAFETY: the group block holds 36 words of 64 bytes (asserted); `w < 36`; unaligned.
        let word = |w: usize| unsafe { _mm512_loadu_si512(p.add(64 * w).cast()) };
        let (dm, w0, w1, w2) = (word(0), word(1), word(2), word(3));
        let low = _mm512_set1_epi8(0x0F);
        let out = tiles.as_mut_ptr();
        let half = 2 * 512 * 4;
        let scales: [__m512i; 8] = std::array::from_fn(|s| six_bits(w0, w2, s, 0));
        for j in 0..4 {
            let (s_lo, s_hi) = (scales[2 * j], scales[2 * j + 1]);
            let four = _mm512_set1_epi32(0x0F);
            let parts = [
                (_mm512_and_si512(s_lo, four), _mm512_and_si512(s_hi, four)),
                (_mm512_srli_epi32::<4>(s_lo), _mm512_srli_epi32::<4>(s_hi)),
            ];
            for c in 0..8 {
                let q = word(4 + 8 * j + c);
                let lo = _mm512_and_si512(q, low);
                let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(q), low);
                for (h, (by_lo, by_hi)) in parts.iter().enumerate() {
                    // SAFETY: sub-blocks 2j and 2j + 1 (< 8) hold 512 bytes each in each
                    // half of `tiles` (8192 bytes), row `c < 8` of 64 inside them; unaligned
                    // stores.
                    unsafe {
                        let at = out.add(h * half);
                        _mm512_storeu_si512(at.add(512 * 2 * j + 64 * c).cast(), times(lo, *by_lo));
                        _mm512_storeu_si512(
                            at.add(512 * (2 * j + 1) + 64 * c).cast(),
                            times(hi, *by_hi),
                        );
                    }
                }
            }
        }
        let d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
        let dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(dm)));
        // SAFETY: `factors` holds 16 lanes per row; unaligned stores.
        unsafe {
            _mm512_storeu_ps(factors.d.as_mut_ptr(), d);
            _mm512_storeu_ps(factors.dmin.as_mut_ptr(), dmin);
        }
        for s in 0..8 {
            let m = _mm512_cvtepi32_ps(six_bits(w1, w2, s, 4));
            // SAFETY: as above.
            unsafe { _mm512_storeu_ps(factors.min[s].as_mut_ptr(), m) };
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
            // SAFETY: the group block holds 36 words of 64 bytes; `w < 36`; unaligned load.
            let word = |w: usize| unsafe { _mm512_loadu_si512(p.add(64 * w).cast()) };
            let (dm, w0, w1, w2) = (word(0), word(1), word(2), word(3));
            // SAFETY: `b < nb <= a[v].q.len() / 256`.
            let y: [*const i8; N] =
                std::array::from_fn(|v| unsafe { a[v].q.as_ptr().add(b * K_BLOCK) });
            let mut total = [_mm512_setzero_si512(); N];
            for j in 0..4 {
                // SAFETY: words 4 + 8j .. 12 + 8j lie in the group block, and bytes 64j ..
                // 64j + 64 of each vector's block of activations.
                let (lo_sum, hi_sum) =
                    unsafe { pair(p.add(64 * (4 + 8 * j)), y.map(|y| y.add(64 * j)), ask_ahead) };
                let s_lo = six_bits(w0, w2, 2 * j, 0);
                let s_hi = six_bits(w0, w2, 2 * j + 1, 0);
                for v in 0..N {
                    let lo = _mm512_mullo_epi32(lo_sum[v], s_lo);
                    let hi = _mm512_mullo_epi32(hi_sum[v], s_hi);
                    total[v] = _mm512_add_epi32(total[v], _mm512_add_epi32(lo, hi));
                }
            }
            let mut mins = [_mm512_setzero_si512(); N];
            for s in 0..8 {
                let m = six_bits(w1, w2, s, 4);
                for v in 0..N {
                    let by = _mm512_set1_epi32(i32::from(a[v].sums32[8 * b + s]));
                    mins[v] = _mm512_add_epi32(mins[v], _mm512_mullo_epi32(m, by));
                }
            }
            let d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(dm));
            let dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32::<16>(dm)));
            for v in 0..N {
                let dy = _mm512_set1_ps(a[v].d[b]);
                let t = _mm512_cvtepi32_ps(total[v]);
                acc[v] = _mm512_fmadd_ps(t, _mm512_mul_ps(d, dy), acc[v]);
                let m = _mm512_cvtepi32_ps(mins[v]);
                acc[v] = _mm512_fnmadd_ps(m, _mm512_mul_ps(dmin, dy), acc[v]);
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

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use super::super::broadcast8;
    use super::{GROUP, GROUP_BYTES};
    use crate::kmatrix::prefetch_ahead;
    use crate::q8k::{K_BLOCK, KAct};

    /// Rows per 256-bit register: a group is two halves of a 64-byte word.
    const HALF: usize = GROUP / 2;

    /// [`super::avx512`]'s six-bit values of sub-block `s`, for the eight rows of a half.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn six_bits(low: __m256i, high: __m256i, s: usize, nibble: i32) -> __m256i {
        if s < 4 {
            let v = _mm256_srl_epi32(low, _mm_cvtsi32_si128(8 * s as i32));
            _mm256_and_si256(v, _mm256_set1_epi32(0x3F))
        } else {
            let t = 8 * (s as i32 - 4);
            let lo = _mm256_srl_epi32(high, _mm_cvtsi32_si128(t + nibble));
            let hi = _mm256_srl_epi32(low, _mm_cvtsi32_si128(t + 6));
            _mm256_or_si256(
                _mm256_and_si256(lo, _mm256_set1_epi32(0x0F)),
                _mm256_slli_epi32::<4>(_mm256_and_si256(hi, _mm256_set1_epi32(0x03))),
            )
        }
    }

    /// `d` and `dmin` of eight rows, from the half word holding each row's two f16.
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    fn factors(dm: __m256i) -> (__m256, __m256) {
        // Per 128 bits: the four `d`, then the four `dmin`.
        let split = _mm256_setr_epi8(
            0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15, 0, 1, 4, 5, 8, 9, 12, 13, 2, 3,
            6, 7, 10, 11, 14, 15,
        );
        let v = _mm256_permute4x64_epi64::<0b11_01_10_00>(_mm256_shuffle_epi8(dm, split));
        (
            _mm256_cvtph_ps(_mm256_castsi256_si128(v)),
            _mm256_cvtph_ps(_mm256_extracti128_si256::<1>(v)),
        )
    }

    /// `Σ sc Σ q y` of sub-blocks `2j` and `2j + 1` for eight rows, one per lane, from the
    /// 8 half words at `q` (64 bytes apart) and the activations at each `y`; `s_lo` and `s_hi`
    /// hold each row's scale in both 16-bit halves of its lane. Out of line, as the AVX-512
    /// kernel's `pair`.
    ///
    /// # Safety
    /// `q` must point at 8 readable half words 64 bytes apart, and each `y` at 64 readable
    /// bytes.
    #[inline(never)]
    #[target_feature(enable = "avx2")]
    unsafe fn pair<const N: usize>(
        q: *const u8,
        y: [*const i8; N],
        s_lo: __m256i,
        s_hi: __m256i,
        ask_ahead: bool,
    ) -> [__m256i; N] {
        let low = _mm256_set1_epi8(0x0F);
        let mut lo_sum = [_mm256_setzero_si256(); N];
        let mut hi_sum = [_mm256_setzero_si256(); N];
        for c in 0..8 {
            let at = q.wrapping_add(64 * c);
            if ask_ahead {
                prefetch_ahead(at, 64);
            }
            // SAFETY: half word `c` of the 8 (the caller's contract); unaligned load.
            let q = unsafe { _mm256_loadu_si256(at.cast()) };
            let lo = _mm256_and_si256(q, low);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), low);
            for v in 0..N {
                // SAFETY: bytes 4c .. 4c + 36 (c < 8) of the 64 at `y[v]`.
                let (y_lo, y_hi) = unsafe {
                    (
                        broadcast8(y[v].add(4 * c)),
                        broadcast8(y[v].add(32 + 4 * c)),
                    )
                };
                // A pair of nibble products stays within 2 * 15 * 128 = 3,840, and eight of
                // them within 30,720: the 16-bit sums neither saturate nor overflow.
                lo_sum[v] = _mm256_add_epi16(lo_sum[v], _mm256_maddubs_epi16(lo, y_lo));
                hi_sum[v] = _mm256_add_epi16(hi_sum[v], _mm256_maddubs_epi16(hi, y_hi));
            }
        }
        std::array::from_fn(|v| {
            let lo = _mm256_madd_epi16(lo_sum[v], s_lo);
            _mm256_add_epi32(lo, _mm256_madd_epi16(hi_sum[v], s_hi))
        })
    }

    /// The AVX-512 kernel's `dot_group`, eight rows at a time: the same exact integer sums,
    /// scaled and summed in the same order.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) fn dot_group<const N: usize>(
        ask_ahead: bool,
        blocks: &[u8],
        a: [KAct<'_>; N],
    ) -> [[f32; GROUP]; N] {
        let nb = a
            .iter()
            .fold(blocks.len() / GROUP_BYTES, |n, a| n.min(a.blocks()));
        let both = |x: __m256i| _mm256_or_si256(x, _mm256_slli_epi32::<16>(x));
        let mut acc = [[_mm256_setzero_ps(); N]; 2];
        for b in 0..nb {
            // SAFETY: `b < nb <= a[v].q.len() / 256`.
            let y: [*const i8; N] =
                std::array::from_fn(|v| unsafe { a[v].q.as_ptr().add(b * K_BLOCK) });
            for (h, acc) in acc.iter_mut().enumerate() {
                let p = blocks[b * GROUP_BYTES..(b + 1) * GROUP_BYTES].as_ptr();
                // SAFETY: the group block holds 36 words of 64 bytes; `w < 36`, `h < 2`;
                // unaligned load of a half word.
                let word = |w: usize| unsafe { _mm256_loadu_si256(p.add(64 * w + 32 * h).cast()) };
                let (dm, w0, w1, w2) = (word(0), word(1), word(2), word(3));
                let mut total = [_mm256_setzero_si256(); N];
                for j in 0..4 {
                    let s_lo = both(six_bits(w0, w2, 2 * j, 0));
                    let s_hi = both(six_bits(w0, w2, 2 * j + 1, 0));
                    // SAFETY: words 4 + 8j .. 12 + 8j lie in the group block, their half `h`
                    // 32 bytes in, and bytes 64j .. 64j + 64 of each vector's block.
                    let sums = unsafe {
                        let q = p.add(64 * (4 + 8 * j) + 32 * h);
                        pair(q, y.map(|y| y.add(64 * j)), s_lo, s_hi, ask_ahead && h == 0)
                    };
                    for v in 0..N {
                        total[v] = _mm256_add_epi32(total[v], sums[v]);
                    }
                }
                // Two sub-blocks per `vpmaddwd`: each lane holds the row's minimums of
                // sub-blocks `2k` and `2k + 1` as two 16-bit values, and the activations'
                // sums over them are next to each other in `sums32`.
                let mut mins = [_mm256_setzero_si256(); N];
                for k in 0..4 {
                    let m = _mm256_or_si256(
                        six_bits(w1, w2, 2 * k, 4),
                        _mm256_slli_epi32::<16>(six_bits(w1, w2, 2 * k + 1, 4)),
                    );
                    for v in 0..N {
                        let sums = &a[v].sums32[8 * b + 2 * k..8 * b + 2 * k + 2];
                        let by = _mm256_set1_epi32(
                            i32::from(sums[0] as u16) | (i32::from(sums[1] as u16) << 16),
                        );
                        mins[v] = _mm256_add_epi32(mins[v], _mm256_madd_epi16(m, by));
                    }
                }
                let (d, dmin) = factors(dm);
                for v in 0..N {
                    let dy = _mm256_set1_ps(a[v].d[b]);
                    let t = _mm256_cvtepi32_ps(total[v]);
                    acc[v] = _mm256_fmadd_ps(t, _mm256_mul_ps(d, dy), acc[v]);
                    let m = _mm256_cvtepi32_ps(mins[v]);
                    acc[v] = _mm256_fnmadd_ps(m, _mm256_mul_ps(dmin, dy), acc[v]);
                }
            }
        }
        let mut out = [[0f32; GROUP]; N];
        for (h, acc) in acc.iter().enumerate() {
            for v in 0..N {
                // SAFETY: `out[v]` holds 16 f32, `h < 2`; unaligned store of 8 from `8h`.
                unsafe { _mm256_storeu_ps(out[v].as_mut_ptr().add(HALF * h), acc[v]) };
            }
        }
        out
    }
}
