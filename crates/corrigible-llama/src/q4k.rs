//! Q4_K weight rows times Q8_K activations.
//!
//! A Q4_K block holds 256 weights in eight sub-blocks of 32: an f16 scale `d` and minimum
//! `dmin`, twelve bytes packing a 6-bit scale `sc` and a 6-bit minimum `m` per sub-block,
//! then 128 bytes of nibbles (byte `l` of the `j`-th 32 bytes holds value `64j + l` low and
//! `64j + 32 + l` high). A weight is `d * sc * q - dmin * m`, so a block's dot product with
//! activations `dy * y` is `dy * (d * Σ sc Σ q y - dmin * Σ m Σ y)`: exact integer sums per
//! block, and the sums by 32 that the activations carry.

use std::ops::Range;

use half::f16;

use super::kmatrix::{KFormat, KMatrix, Kernel};
use super::ktiles::{self, TileFormat};
use super::q8k::{K_BLOCK, KAct, Q8KVectors};

/// The Q4_K format.
#[derive(Debug, Clone, Copy)]
pub struct Q4K;

impl KFormat for Q4K {
    const FORMAT: &'static str = "Q4_K";
    /// `d`, `dmin`, 12 bytes of scales and minimums, 128 bytes of nibbles.
    const BLOCK_BYTES: usize = 4 + 12 + K_BLOCK / 2;
}

/// A weight matrix in Q4_K.
pub type Q4KMatrix = KMatrix<Q4K>;

impl Q4KMatrix {
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

/// The six-bit scales and minimums of the eight sub-blocks, unpacked from their 12 bytes:
/// bytes 0-3 hold the low six bits of scales 0-3, bytes 4-7 those of minimums 0-3, bytes 8-11
/// the low four bits of scales 4-7 (low nibble) and minimums 4-7 (high nibble), and the top
/// two bits of bytes 0-7 the high two bits of scales and minimums 4-7.
#[inline(always)]
fn scales_mins(packed: &[u8]) -> ([u8; 8], [u8; 8]) {
    let word = |i: usize| {
        packed
            .get(4 * i..4 * i + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (w0, w1, w2) = (word(0), word(1), word(2));
    let low6 = 0x3f3f_3f3f;
    let low4 = 0x0f0f_0f0f;
    let top2 = 0x0303_0303;
    let scales_hi = (w2 & low4) | (((w0 >> 6) & top2) << 4);
    let mins_hi = ((w2 >> 4) & low4) | (((w1 >> 6) & top2) << 4);
    let join = |lo: u32, hi: u32| {
        let (lo, hi) = (lo.to_le_bytes(), hi.to_le_bytes());
        [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1], hi[2], hi[3]]
    };
    (join(w0 & low6, scales_hi), join(w1 & low6, mins_hi))
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

fn dot_row(row: &[u8], a: KAct<'_>) -> f32 {
    let mut acc = 0f32;
    let blocks = row.chunks_exact(Q4K::BLOCK_BYTES);
    for (b, block) in blocks.take(a.blocks()).enumerate() {
        let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
        let dmin = f16::from_le_bytes([block[2], block[3]]).to_f32();
        let (sc, m) = scales_mins(&block[4..16]);
        let y = &a.q[b * K_BLOCK..(b + 1) * K_BLOCK];
        let mut sum = 0i32;
        for (j, q) in block[16..].chunks_exact(32).enumerate() {
            let (lo, hi) = y[64 * j..64 * j + 64].split_at(32);
            let (mut sl, mut sh) = (0i32, 0i32);
            for ((&q, &l), &h) in q.iter().zip(lo).zip(hi) {
                sl += (q & 0x0F) as i32 * l as i32;
                sh += (q >> 4) as i32 * h as i32;
            }
            sum += sc[2 * j] as i32 * sl + sc[2 * j + 1] as i32 * sh;
        }
        let mins: i32 = m
            .iter()
            .zip(&a.sums32[b * 8..b * 8 + 8])
            .map(|(&m, &s)| m as i32 * s as i32)
            .sum();
        acc += a.d[b] * (d * sum as f32 - dmin * mins as f32);
    }
    acc
}

impl TileFormat for Q4K {
    const SUB: usize = 32;

    fn unpack(block: &[u8], weights: &mut [u8], scales: &mut [(f32, f32)]) {
        let Some(nibbles) = block.get(16..Q4K::BLOCK_BYTES) else {
            return;
        };
        for (q, w) in nibbles.chunks_exact(32).zip(weights.chunks_exact_mut(64)) {
            let (lo, hi) = w.split_at_mut(32);
            for ((&q, lo), hi) in q.iter().zip(lo).zip(hi) {
                *lo = q & 0x0F;
                *hi = q >> 4;
            }
        }
        let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
        let dmin = f16::from_le_bytes([block[2], block[3]]).to_f32();
        let (sc, m) = scales_mins(&block[4..16]);
        for ((s, &sc), &m) in scales.iter_mut().zip(&sc).zip(&m) {
            *s = (d * sc as f32, -dmin * m as f32);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{K_BLOCK, KAct, Kernel, Q4K, scales_mins};
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

    /// A shuffle that spreads the i16 in lane `s` of each 128-bit half over the whole half.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn spread(s: usize) -> __m256i {
        let lo = (2 * s) as i16;
        _mm256_set1_epi16(((lo + 1) << 8) | lo)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn dot<const R: usize, const N: usize>(w: [&[u8]; R], x: [KAct<'_>; N]) -> [[f32; R]; N] {
        let nb = w
            .iter()
            .fold(usize::MAX, |n, r| n.min(r.len() / Q4K::BLOCK_BYTES));
        let nb = x.iter().fold(nb, |n, a| n.min(a.blocks()));
        let mask = _mm256_set1_epi8(0x0F);
        let mut acc = [[_mm256_setzero_ps(); R]; N];
        for b in 0..nb {
            for k in 0..R {
                let block = &w[k][b * Q4K::BLOCK_BYTES..(b + 1) * Q4K::BLOCK_BYTES];
                prefetch_ahead(block.as_ptr(), Q4K::BLOCK_BYTES);
                let (sc, m) = scales_mins(&block[4..16]);
                // SAFETY: `sc` and `m` hold eight bytes each; unaligned loads of 8 bytes.
                let (sc, m) = unsafe {
                    (
                        _mm_cvtepu8_epi16(_mm_loadl_epi64(sc.as_ptr().cast())),
                        _mm_cvtepu8_epi16(_mm_loadl_epi64(m.as_ptr().cast())),
                    )
                };
                let sc = _mm256_broadcastsi128_si256(sc);
                let dm = _mm_cvtph_ps(_mm_cvtsi32_si128(i32::from_le_bytes([
                    block[0], block[1], block[2], block[3],
                ])));
                let mut sums = [_mm256_setzero_si256(); N];
                for j in 0..4 {
                    // SAFETY: the block holds 144 bytes; bytes 16 + 32j .. 48 + 32j (j < 4)
                    // lie inside it; unaligned load.
                    let q = unsafe { _mm256_loadu_si256(block.as_ptr().add(16 + 32 * j).cast()) };
                    let lo = _mm256_and_si256(q, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), mask);
                    let s_lo = _mm256_shuffle_epi8(sc, spread(2 * j));
                    let s_hi = _mm256_shuffle_epi8(sc, spread(2 * j + 1));
                    for v in 0..N {
                        // SAFETY: `b < nb <= x[v].q.len() / 256`, so bytes
                        // `256b + 64j .. 256b + 64j + 64` lie inside `x[v].q`; unaligned loads.
                        let (y_lo, y_hi) = unsafe {
                            let y = x[v].q.as_ptr().add(b * K_BLOCK + 64 * j);
                            (
                                _mm256_loadu_si256(y.cast()),
                                _mm256_loadu_si256(y.add(32).cast()),
                            )
                        };
                        // Nibbles (0..16) times quants (-127..128): a pair of products stays
                        // within 2 * 15 * 128 = 3840, far from saturating an i16.
                        let p_lo = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y_lo), s_lo);
                        let p_hi = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y_hi), s_hi);
                        sums[v] = _mm256_add_epi32(sums[v], _mm256_add_epi32(p_lo, p_hi));
                    }
                }
                for v in 0..N {
                    let a = x[v];
                    // SAFETY: `b < nb <= a.sums32.len() / 8`; unaligned load of 8 i16.
                    let s32 = unsafe { _mm_loadu_si128(a.sums32.as_ptr().add(8 * b).cast()) };
                    let mins = _mm_cvtepi32_ps(_mm_madd_epi16(m, s32));
                    // d * dy in lane 0, dmin * dy in lane 1.
                    let scale = _mm_mul_ps(dm, _mm_set1_ps(a.d[b]));
                    let d = _mm256_broadcastss_ps(scale);
                    let dmin = _mm256_broadcastss_ps(_mm_movehdup_ps(scale));
                    let acc = &mut acc[v][k];
                    *acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums[v]), *acc);
                    *acc = _mm256_fnmadd_ps(dmin, _mm256_set_m128(_mm_setzero_ps(), mins), *acc);
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
        let by_rows = Q4KMatrix::new(Bytes::owned(bytes), rows, cols).expect("matrix");
        let interleaved = by_rows.clone().interleaved();
        assert_eq!(
            interleaved.is_interleaved(),
            crate::kgroups::wanted::<Q4K>(rows)
        );
        for m in [by_rows, interleaved] {
            check_paths(&m, dense, rows, cols);
        }
    }

    fn check_paths(m: &Q4KMatrix, dense: &[f32], rows: usize, cols: usize) {
        for n in [1, 2, 7, 19] {
            let x = vectors(n, cols, 40 + n as u64);
            let mut fast = vec![0f32; rows * n];
            m.dot_rows(0..rows, &x, &mut fast);
            let mut portable = vec![0f32; rows * n];
            m.dot_rows_with(0..rows, &x, &mut portable, &Portable);
            let mut shifted = vec![0f32; (rows - 1) * n];
            m.dot_rows(1..rows, &x, &mut shifted);
            assert_eq!(shifted, fast[n..], "rows 1.. of {n} vectors");
            for r in 0..rows {
                for t in 0..n {
                    let (want, size) = reference(dense, cols, &x, r, t);
                    let tol = 1e-5 * size.max(1e-3);
                    for (path, got) in
                        [("fast", fast[r * n + t]), ("portable", portable[r * n + t])]
                    {
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
        let (bytes, dense) = candle_blocks(GgmlDType::Q4K, rows, cols, 31);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a minute under Miri, where only the portable path runs"
    )]
    fn kernels_match_candles_dequantization_over_several_tiles_of_rows() {
        let (rows, cols) = (37, 512);
        let (bytes, dense) = candle_blocks(GgmlDType::Q4K, rows, cols, 35);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "a minute under Miri, where only the portable path runs"
    )]
    fn kernels_match_candles_dequantization_on_whole_groups_of_rows() {
        let (rows, cols) = (48, 768);
        let (bytes, dense) = candle_blocks(GgmlDType::Q4K, rows, cols, 41);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    fn kernels_match_candles_dequantization_on_random_blocks() {
        let (rows, cols) = (6, 512);
        let bytes = random_blocks(rows * cols / K_BLOCK, Q4K::BLOCK_BYTES, &[0, 2], 32);
        let dense = candle_dequantize(&bytes, GgmlDType::Q4K, rows * cols);
        check(bytes, &dense, rows, cols);
    }

    #[test]
    fn extreme_blocks_do_not_saturate() {
        let (rows, cols) = (16, 256);
        let mut bytes = vec![0xFFu8; rows * Q4K::BLOCK_BYTES];
        for block in bytes.chunks_exact_mut(Q4K::BLOCK_BYTES) {
            block[..2].copy_from_slice(&f16::from_f32(0.5).to_le_bytes());
            block[2..4].copy_from_slice(&f16::from_f32(-0.25).to_le_bytes());
        }
        let dense = candle_dequantize(&bytes, GgmlDType::Q4K, rows * cols);
        let mut x = Q8KVectors::default();
        let xs: Vec<f32> = (0..cols)
            .map(|i| if i % 2 == 0 { -1.0 } else { 1.0 })
            .collect();
        x.quantize(&xs, cols).expect("quantize");
        let m = Q4KMatrix::new(Bytes::owned(bytes), rows, cols).expect("matrix");
        for m in [m.clone(), m.interleaved()] {
            let mut out = vec![0f32; rows];
            m.dot_rows(0..rows, &x, &mut out);
            for (r, &got) in out.iter().enumerate() {
                let (want, size) = reference(&dense, cols, &x, r, 0);
                assert!((got as f64 - want).abs() <= 1e-5 * size, "{got} vs {want}");
            }
        }
    }

    #[test]
    fn a_row_range_gives_the_same_values_and_bad_shapes_write_nothing() {
        let (rows, cols) = (7, 256);
        let (bytes, _) = candle_blocks(GgmlDType::Q4K, rows, cols, 33);
        let m = Q4KMatrix::new(Bytes::owned(bytes), rows, cols).expect("matrix");
        let x = vectors(1, cols, 34);
        let mut all = vec![0f32; rows];
        m.dot_rows(0..rows, &x, &mut all);
        let mut part = vec![0f32; 4];
        m.dot_rows(3..7, &x, &mut part);
        assert_eq!(part, all[3..7]);
        let mut untouched = vec![7f32; 4];
        m.dot_rows(4..8, &x, &mut untouched);
        m.dot_rows(0..4, &vectors(1, 512, 35), &mut untouched);
        assert_eq!(untouched, [7.0; 4]);
    }
}
