//! Q6_K weight rows times Q8_K activations.
//!
//! A Q6_K block holds 256 weights in sixteen sub-blocks of 16: 128 bytes of low nibbles, 64
//! bytes of high bit pairs, sixteen signed 8-bit scales `sc`, then an f16 scale `d`. A weight
//! is `d * sc * (q - 32)` with `q` in 0..64, so a block's dot product with activations
//! `dy * y` is `dy * d * (Σ sc Σ q y - 32 Σ sc Σ y)`: exact integer sums per block, and the
//! sums by 16 that the activations carry.
//!
//! Within each half of 128 values, byte `l` (of 32) of the low nibbles' first 32 bytes holds
//! values `l` (low nibble) and `64 + l` (high), of their next 32 bytes values `32 + l` and
//! `96 + l`; byte `l` of the half's 32 bytes of high bits holds, two bits each from the
//! lowest, those of values `l`, `32 + l`, `64 + l` and `96 + l`.

use std::ops::Range;

use half::f16;

use super::kmatrix::{KFormat, KMatrix, Kernel};
use super::ktiles::{self, TileFormat};
use super::q8k::{K_BLOCK, KAct, Q8KVectors};

/// The Q6_K format.
#[derive(Debug, Clone, Copy)]
pub struct Q6K;

impl KFormat for Q6K {
    const FORMAT: &'static str = "Q6_K";
    /// 128 bytes of low nibbles, 64 of high bits, 16 scales, `d`.
    const BLOCK_BYTES: usize = K_BLOCK / 2 + K_BLOCK / 4 + 16 + 2;
}

/// Offset of the high bits in a block.
const QH: usize = K_BLOCK / 2;
/// Offset of the scales in a block.
const SCALES: usize = QH + K_BLOCK / 4;
/// Offset of `d` in a block.
const D: usize = SCALES + 16;

/// A weight matrix in Q6_K.
pub type Q6KMatrix = KMatrix<Q6K>;

impl Q6KMatrix {
    /// Dot products of rows `rows` with every vector of `x`, written row-major by weight row:
    /// `out[(r - rows.start) * x.len() + t]` is row `r` times vector `t`. Nothing is written
    /// when the shapes disagree.
    pub fn dot_rows(&self, rows: Range<usize>, x: &Q8KVectors, out: &mut [f32]) {
        if ktiles::dot_rows(self, rows.clone(), x, out) || self.dot_groups(rows.clone(), x, out) {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(kernel) = avx2::Avx2::detect() {
            self.dot_rows_with(rows, x, out, &kernel);
            return;
        }
        self.dot_rows_with(rows, x, out, &Portable);
    }
}

impl TileFormat for Q6K {
    const SUB: usize = 16;

    fn unpack(block: &[u8], weights: &mut [u8], scales: &mut [(f32, f32)]) {
        if block.len() < Q6K::BLOCK_BYTES || weights.len() < K_BLOCK {
            return;
        }
        for half in 0..2 {
            let (low, high) = (&block[64 * half..64 * half + 64], &block[QH + 32 * half..]);
            let w = &mut weights[128 * half..128 * half + 128];
            for l in 0..32 {
                let (l0, l1, h) = (low[l], low[32 + l], high[l]);
                w[l] = (l0 & 0x0F) | ((h & 3) << 4);
                w[32 + l] = (l1 & 0x0F) | (((h >> 2) & 3) << 4);
                w[64 + l] = (l0 >> 4) | (((h >> 4) & 3) << 4);
                w[96 + l] = (l1 >> 4) | (((h >> 6) & 3) << 4);
            }
        }
        let d = f16::from_le_bytes([block[D], block[D + 1]]).to_f32();
        for (s, &sc) in scales.iter_mut().zip(&block[SCALES..D]) {
            let scale = d * sc as i8 as f32;
            *s = (scale, -32.0 * scale);
        }
    }
}

/// The portable kernel: exact integer sums per block, scaled and summed in f32.
struct Portable;

impl Kernel for Portable {
    fn dot<const R: usize, const N: usize>(
        &self,
        w: [&[u8]; R],
        x: [KAct<'_>; N],
    ) -> [[f32; R]; N] {
        x.map(|a| w.map(|row| dot_row(row, a)))
    }
}

/// The unsigned 6-bit value `i` (0..256) of `block`.
#[inline(always)]
fn value(block: &[u8], i: usize) -> i32 {
    let (half, i) = (i / 128, i % 128);
    let (quarter, l) = (i / 32, i % 32);
    let low = block[64 * half + 32 * (quarter % 2) + l];
    let low = if quarter < 2 { low & 0x0F } else { low >> 4 };
    let high = (block[QH + 32 * half + l] >> (2 * quarter)) & 3;
    (low | (high << 4)) as i32
}

fn dot_row(row: &[u8], a: KAct<'_>) -> f32 {
    let mut acc = 0f32;
    let blocks = row.chunks_exact(Q6K::BLOCK_BYTES);
    for (b, block) in blocks.take(a.blocks()).enumerate() {
        let d = f16::from_le_bytes([block[D], block[D + 1]]).to_f32();
        let y = &a.q[b * K_BLOCK..(b + 1) * K_BLOCK];
        let mut sum = 0i32;
        for (s, (&sc, &bias)) in block[SCALES..D]
            .iter()
            .zip(&a.sums16[b * 16..b * 16 + 16])
            .enumerate()
        {
            let dot: i32 = (16 * s..16 * s + 16)
                .map(|i| value(block, i) * y[i] as i32)
                .sum();
            sum += sc as i8 as i32 * (dot - 32 * bias as i32);
        }
        acc += a.d[b] * d * sum as f32;
    }
    acc
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{D, K_BLOCK, KAct, Kernel, Q6K, QH, SCALES};
    use crate::kmatrix::{KFormat, prefetch_ahead};

    /// The AVX2 kernel; a value exists only on a CPU with AVX2, FMA and F16C.
    pub(super) struct Avx2(());

    impl Avx2 {
        pub(super) fn detect() -> Option<Self> {
            (is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c"))
            .then_some(Avx2(()))
        }
    }

    impl Kernel for Avx2 {
        #[inline]
        fn dot<const R: usize, const N: usize>(
            &self,
            w: [&[u8]; R],
            x: [KAct<'_>; N],
        ) -> [[f32; R]; N] {
            // SAFETY: `Avx2` is only built by `detect`, on a CPU with AVX2, FMA and F16C.
            unsafe { dot(w, x) }
        }
    }

    /// Horizontal sum of eight lanes.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum(x: __m256) -> f32 {
        let r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
        let r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        let r = _mm_add_ss(r, _mm_movehdup_ps(r));
        _mm_cvtss_f32(r)
    }

    /// A byte shuffle of the sixteen scales giving scale `2c` eight times, then `2c + 1`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn pair(c: usize) -> __m128i {
        let (a, b) = ((2 * c) as i8, (2 * c + 1) as i8);
        _mm_setr_epi8(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn dot<const R: usize, const N: usize>(w: [&[u8]; R], x: [KAct<'_>; N]) -> [[f32; R]; N] {
        let nb = w
            .iter()
            .fold(usize::MAX, |n, r| n.min(r.len() / Q6K::BLOCK_BYTES));
        let nb = x.iter().fold(nb, |n, a| n.min(a.blocks()));
        let low = _mm256_set1_epi8(0x0F);
        let high = _mm256_set1_epi8(0x30);
        let mut acc = [[_mm256_setzero_ps(); R]; N];
        for b in 0..nb {
            for k in 0..R {
                let block = &w[k][b * Q6K::BLOCK_BYTES..(b + 1) * Q6K::BLOCK_BYTES];
                let p = block.as_ptr();
                prefetch_ahead(p, Q6K::BLOCK_BYTES);
                // SAFETY: the block holds 210 bytes, the scales at 192..208; unaligned load.
                let scales = unsafe { _mm_loadu_si128(p.add(SCALES).cast()) };
                let sc16 = _mm256_cvtepi8_epi16(scales);
                let d = _mm_cvtph_ps(_mm_cvtsi32_si128(
                    u16::from_le_bytes([block[D], block[D + 1]]) as i32,
                ));
                let mut sums = [_mm256_setzero_si256(); N];
                for v in 0..N {
                    // SAFETY: `b < nb <= x[v].sums16.len() / 16`; unaligned load of 16 i16.
                    let s16 =
                        unsafe { _mm256_loadu_si256(x[v].sums16.as_ptr().add(16 * b).cast()) };
                    // 32 Σ sc Σ y, subtracted up front.
                    sums[v] = _mm256_sub_epi32(
                        sums[v],
                        _mm256_slli_epi32::<5>(_mm256_madd_epi16(sc16, s16)),
                    );
                }
                for half in 0..2 {
                    // SAFETY: bytes 64h .. 64h + 64 (low nibbles) and 128 + 32h .. 160 + 32h
                    // (high bits), h < 2, lie inside the block; unaligned loads.
                    let (l0, l1, hb) = unsafe {
                        (
                            _mm256_loadu_si256(p.add(64 * half).cast()),
                            _mm256_loadu_si256(p.add(64 * half + 32).cast()),
                            _mm256_loadu_si256(p.add(QH + 32 * half).cast()),
                        )
                    };
                    let quarters = [
                        _mm256_or_si256(
                            _mm256_and_si256(l0, low),
                            _mm256_and_si256(_mm256_slli_epi16::<4>(hb), high),
                        ),
                        _mm256_or_si256(
                            _mm256_and_si256(l1, low),
                            _mm256_and_si256(_mm256_slli_epi16::<2>(hb), high),
                        ),
                        _mm256_or_si256(
                            _mm256_and_si256(_mm256_srli_epi16::<4>(l0), low),
                            _mm256_and_si256(hb, high),
                        ),
                        _mm256_or_si256(
                            _mm256_and_si256(_mm256_srli_epi16::<4>(l1), low),
                            _mm256_and_si256(_mm256_srli_epi16::<2>(hb), high),
                        ),
                    ];
                    for (i, q) in quarters.into_iter().enumerate() {
                        let c = 4 * half + i;
                        let s = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pair(c)));
                        for v in 0..N {
                            // SAFETY: `b < nb <= x[v].q.len() / 256`, so bytes
                            // `256b + 32c .. 256b + 32c + 32` (c < 8) lie inside `x[v].q`.
                            let y = unsafe {
                                _mm256_loadu_si256(x[v].q.as_ptr().add(b * K_BLOCK + 32 * c).cast())
                            };
                            // Values 0..64 times quants -127..128: a pair of products stays
                            // within 2 * 63 * 128 = 16128, inside an i16.
                            let dot = _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), s);
                            sums[v] = _mm256_add_epi32(sums[v], dot);
                        }
                    }
                }
                for v in 0..N {
                    let scale = _mm256_broadcastss_ps(_mm_mul_ps(d, _mm_set1_ps(x[v].d[b])));
                    acc[v][k] = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(sums[v]), acc[v][k]);
                }
            }
        }
        let mut out = [[0f32; R]; N];
        for v in 0..N {
            for k in 0..R {
                out[v][k] = hsum(acc[v][k]);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::GgmlDType;

    use super::super::kmatrix::tests::{
        candle_blocks, candle_dequantize, random_blocks, reference, vectors,
    };
    use super::super::mapped::Bytes;
    use super::*;

    /// Every path on `rows` rows, stored by rows and, on a CPU with the group kernels and
    /// rows that fill whole groups, interleaved.
    fn check(bytes: Vec<u8>, dense: &[f32], rows: usize, cols: usize) {
        let by_rows = Q6KMatrix::new(Bytes::owned(bytes), rows, cols).expect("matrix");
        let interleaved = by_rows.clone().interleaved();
        assert_eq!(
            interleaved.is_interleaved(),
            crate::kgroups::wanted::<Q6K>(rows)
        );
        for m in [by_rows, interleaved] {
            check_paths(&m, dense, rows, cols);
        }
    }

    fn check_paths(m: &Q6KMatrix, dense: &[f32], rows: usize, cols: usize) {
        for n in [1, 2, 7, 19] {
            let x = vectors(n, cols, 50 + n as u64);
            let mut fast = vec![0f32; rows * n];
            m.dot_rows(0..rows, &x, &mut fast);
            let mut portable = vec![0f32; rows * n];
            m.dot_rows_with(0..rows, &x, &mut portable, &Portable);
            // On AMX, rows of whole groups run on the group tiles and rows 1.. on the
            // gathering tile kernel, whose Q6_K rounding differs in the last bits: each is
            // held to the reference.
            let mut shifted = vec![0f32; (rows - 1) * n];
            m.dot_rows(1..rows, &x, &mut shifted);
            for r in 0..rows {
                for t in 0..n {
                    let (want, size) = reference(dense, cols, &x, r, t);
                    let tol = 1e-5 * size.max(1e-3);
                    let moved = if r > 0 {
                        shifted[(r - 1) * n + t]
                    } else {
                        fast[t]
                    };
                    for (path, got) in [
                        ("fast", fast[r * n + t]),
                        ("portable", portable[r * n + t]),
                        ("rows 1..", moved),
                    ] {
                        assert!(
                            (got as f64 - want).abs() <= tol,
                            "{path} row {r} vector {t} of {n}: {got} vs {want} (scale {size})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn kernels_match_candles_dequantization_on_quantized_weights() {
        let (rows, cols) = (9, 768);
        let (bytes, dense) = candle_blocks(GgmlDType::Q6K, rows, cols, 61);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a minute under Miri, where only the portable path runs"
    )]
    fn kernels_match_candles_dequantization_over_several_tiles_of_rows() {
        let (rows, cols) = (37, 512);
        let (bytes, dense) = candle_blocks(GgmlDType::Q6K, rows, cols, 63);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a minute under Miri, where only the portable path runs"
    )]
    fn kernels_match_candles_dequantization_on_whole_groups_of_rows() {
        let (rows, cols) = (48, 768);
        let (bytes, dense) = candle_blocks(GgmlDType::Q6K, rows, cols, 71);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    fn kernels_match_candles_dequantization_on_random_blocks() {
        let (rows, cols) = (6, 512);
        let bytes = random_blocks(rows * cols / K_BLOCK, Q6K::BLOCK_BYTES, &[D], 62);
        let dense = candle_dequantize(&bytes, GgmlDType::Q6K, rows * cols);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    fn extreme_blocks_do_not_overflow() {
        let (rows, cols) = (16, 256);
        let mut bytes = vec![0xFFu8; rows * Q6K::BLOCK_BYTES];
        for (r, block) in bytes.chunks_exact_mut(Q6K::BLOCK_BYTES).enumerate() {
            // Scales of -128 (row 0) or 127 (others), values all 63.
            block[SCALES..D].fill(if r == 0 { 0x80 } else { 0x7F });
            block[D..].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
        }
        let dense = candle_dequantize(&bytes, GgmlDType::Q6K, rows * cols);
        let mut x = Q8KVectors::default();
        let xs: Vec<f32> = (0..cols).map(|i| if i == 0 { 1.0 } else { -1.0 }).collect();
        x.quantize(&xs, cols).expect("quantize");
        let m = Q6KMatrix::new(Bytes::owned(bytes), rows, cols).expect("matrix");
        for m in [m.clone(), m.interleaved()] {
            let mut out = vec![0f32; rows];
            m.dot_rows(0..rows, &x, &mut out);
            for (r, &got) in out.iter().enumerate() {
                let (want, size) = reference(&dense, cols, &x, r, 0);
                assert!((got as f64 - want).abs() <= 1e-5 * size, "{got} vs {want}");
            }
        }
    }
}
