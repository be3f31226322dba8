//! Activations quantized to GGML's Q8_K, the partner format of the K-quant weight kernels:
//! blocks of 256 values, each an f32 scale, 256 signed bytes and the sums of its quants by 16
//! and by 32 (the latter for the minimums of Q4_K).

use std::sync::OnceLock;

use super::parallel::for_each_piece;
use super::quad::MatrixError;
use super::tiled::TiledQ8K;

/// Values per K-quant block (GGML's `QK_K`).
pub const K_BLOCK: usize = 256;

/// Several activation vectors of one length in Q8_K, quantized exactly as candle's
/// `BlockQ8K::from_float` (so that a dot product with a K-quant row is the reference's).
#[derive(Debug, Clone, Default)]
pub struct Q8KVectors {
    cols: usize,
    scales: Vec<f32>,
    quants: Vec<i8>,
    /// Sums of 16 consecutive quants, 16 per block.
    sums16: Vec<i16>,
    /// Sums of 32 consecutive quants, 8 per block.
    sums32: Vec<i16>,
    /// The same vectors laid out for tile products, built by the first kernel that asks.
    tiled: OnceLock<TiledQ8K>,
}

/// One quantized vector as the kernels read it.
#[derive(Debug, Clone, Copy)]
pub struct KAct<'a> {
    /// Block scales.
    pub d: &'a [f32],
    /// Quants, 256 per block.
    pub q: &'a [i8],
    /// Sums by 16, 16 per block.
    pub sums16: &'a [i16],
    /// Sums by 32, 8 per block.
    pub sums32: &'a [i16],
}

impl KAct<'_> {
    /// Whole blocks held by every part.
    pub fn blocks(&self) -> usize {
        self.d
            .len()
            .min(self.q.len() / K_BLOCK)
            .min(self.sums16.len() / 16)
            .min(self.sums32.len() / 8)
    }
}

impl Q8KVectors {
    /// Quantizes `x`, a whole number of vectors of `cols` values, replacing the content.
    pub fn quantize(&mut self, x: &[f32], cols: usize) -> Result<(), MatrixError> {
        if cols == 0 || !cols.is_multiple_of(K_BLOCK) {
            return Err(MatrixError::KRowLength(cols));
        }
        self.cols = cols;
        self.tiled = OnceLock::new();
        let n = x.len() / cols * cols;
        let nb = n / K_BLOCK;
        // Every value is written below: only new room is zeroed.
        self.scales.resize(nb, 0.0);
        self.quants.resize(n, 0);
        self.sums16.resize(nb * 16, 0);
        self.sums32.resize(nb * 8, 0);
        let nb_row = cols / K_BLOCK;
        // One part per vector, quantized on every thread.
        let mut parts: Vec<_> = x[..n]
            .chunks_exact(cols)
            .zip(self.scales.chunks_exact_mut(nb_row))
            .zip(self.quants.chunks_exact_mut(cols))
            .zip(
                self.sums16
                    .chunks_exact_mut(16 * nb_row)
                    .zip(self.sums32.chunks_exact_mut(8 * nb_row)),
            )
            .collect();
        let vectors = parts.len();
        for_each_piece(&mut parts, vectors, 1, 1, |_, parts| {
            for (((x, d), q), (s16, s32)) in parts {
                quantize_vector(x, d, q, s16, s32);
            }
        });
        Ok(())
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.quants.len().checked_div(self.cols).unwrap_or(0)
    }

    /// Values per vector.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Every vector's quants, one vector after the other.
    pub(crate) fn quants(&self) -> &[i8] {
        &self.quants
    }

    /// The vectors laid out for tile products (built once per quantization).
    pub(crate) fn tiled(&self) -> &TiledQ8K {
        self.tiled.get_or_init(|| TiledQ8K::new(self))
    }

    /// Vector `i` (empty parts past the last one).
    pub fn vector(&self, i: usize) -> KAct<'_> {
        let nb = self.cols / K_BLOCK;
        KAct {
            d: self.scales.get(i * nb..(i + 1) * nb).unwrap_or(&[]),
            q: self
                .quants
                .get(i * self.cols..(i + 1) * self.cols)
                .unwrap_or(&[]),
            sums16: self
                .sums16
                .get(i * nb * 16..(i + 1) * nb * 16)
                .unwrap_or(&[]),
            sums32: self.sums32.get(i * nb * 8..(i + 1) * nb * 8).unwrap_or(&[]),
        }
    }
}

/// One vector's blocks: their scales `d`, quants `q` and sums by 16 and by 32.
fn quantize_vector(x: &[f32], d: &mut [f32], q: &mut [i8], s16: &mut [i16], s32: &mut [i16]) {
    for (((block, d), q), (s16, s32)) in x
        .chunks_exact(K_BLOCK)
        .zip(d)
        .zip(q.chunks_exact_mut(K_BLOCK))
        .zip(s16.chunks_exact_mut(16).zip(s32.chunks_exact_mut(8)))
    {
        *d = quantize(block, q);
        for (s, q) in s16.iter_mut().zip(q.chunks_exact(16)) {
            *s = q.iter().map(|&v| v as i16).sum();
        }
        for (s, pair) in s32.iter_mut().zip(s16.chunks_exact(2)) {
            *s = pair[0] + pair[1];
        }
    }
}

/// [`quantize_block`], eight values at a time where the CPU has AVX2.
fn quantize(x: &[f32], q: &mut [i8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let (Ok(x), Ok(q)) = (
        <&[f32; K_BLOCK]>::try_from(x),
        <&mut [i8; K_BLOCK]>::try_from(&mut *q),
    ) && let Some(d) = avx2::quantize_block(x, q)
    {
        return d;
    }
    quantize_block(x, q)
}

/// Quantizes one block as candle does: the scale maps the value of largest magnitude to
/// -127, every value is rounded half away from zero; returns the block's scale.
fn quantize_block(x: &[f32], q: &mut [i8]) -> f32 {
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        q.fill(0);
        return 0.0;
    }
    let iscale = -127f32 / max;
    for (q, &v) in q.iter_mut().zip(x) {
        *q = round_half_away(iscale * v).clamp(-128, 127) as i8;
    }
    1.0 / iscale
}

/// `y.round()` as an integer for `|y|` well below 2^31 (and 0 for NaN), in operations that
/// vectorize: the truncation is exact, and so is the fraction left, since `y` and its
/// truncation are within a factor of two of each other.
#[inline(always)]
fn round_half_away(y: f32) -> i32 {
    let t = y as i32;
    let frac = y - t as f32;
    if frac >= 0.5 {
        t + 1
    } else if frac <= -0.5 {
        t - 1
    } else {
        t
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use super::K_BLOCK;

    /// [`super::quantize_block`] on AVX2, the same values bit for bit; `None` where the CPU
    /// has no AVX2 (or under Miri).
    pub(super) fn quantize_block(x: &[f32; K_BLOCK], q: &mut [i8; K_BLOCK]) -> Option<f32> {
        static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        let supported = *SUPPORTED.get_or_init(|| !cfg!(miri) && is_x86_feature_detected!("avx2"));
        // SAFETY: the CPU has AVX2, checked just above.
        supported.then(|| unsafe { block(x, q) })
    }

    #[target_feature(enable = "avx2")]
    fn block(x: &[f32; K_BLOCK], q: &mut [i8; K_BLOCK]) -> f32 {
        let load = |i: usize| {
            // SAFETY: `i + 8 <= K_BLOCK` at every call below; unaligned load.
            unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) }
        };
        let magnitude = |v: __m256| _mm256_andnot_ps(_mm256_set1_ps(-0.0), v);
        // `max(a, b)` answers `b` when `a` is NaN: NaN values are passed over, as the scalar
        // search passes them over.
        let mut most = _mm256_setzero_ps();
        for i in (0..K_BLOCK).step_by(8) {
            most = _mm256_max_ps(magnitude(load(i)), most);
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds 8 f32; unaligned store.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), most) };
        let amax = lanes.into_iter().fold(0f32, f32::max);
        if amax == 0.0 {
            q.fill(0);
            return 0.0;
        }
        // The first value of that magnitude, as the scalar search finds.
        let wanted = _mm256_set1_ps(amax);
        let mut max = amax;
        for i in (0..K_BLOCK).step_by(8) {
            let hits = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(magnitude(load(i)), wanted));
            if hits != 0 {
                max = x[i + hits.trailing_zeros() as usize];
                break;
            }
        }
        let iscale = -127f32 / max;
        let scale = _mm256_set1_ps(iscale);
        let rounded = |i: usize| {
            let y = _mm256_mul_ps(scale, load(i));
            let t = _mm256_cvttps_epi32(y);
            let frac = _mm256_sub_ps(y, _mm256_cvtepi32_ps(t));
            // The comparisons' lanes are all ones (-1) where they hold.
            let up = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(frac, _mm256_set1_ps(0.5)));
            let down = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(frac, _mm256_set1_ps(-0.5)));
            let t = _mm256_add_epi32(_mm256_sub_epi32(t, up), down);
            // NaN rounds to 0, as `as i32` does.
            let nan = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_UNORD_Q>(y, y));
            _mm256_andnot_si256(nan, t)
        };
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for i in (0..K_BLOCK).step_by(32) {
            // Saturating packs clamp to -128..=127 as the scalar `clamp` does; they interleave
            // the 128-bit lanes, which the permutation puts back in order.
            let low = _mm256_packs_epi32(rounded(i), rounded(i + 8));
            let high = _mm256_packs_epi32(rounded(i + 16), rounded(i + 24));
            let bytes = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(low, high), order);
            // SAFETY: `i + 32 <= K_BLOCK` bytes of `q`; unaligned store.
            unsafe { _mm256_storeu_si256(q.as_mut_ptr().add(i).cast(), bytes) };
        }
        1.0 / iscale
    }
}

#[cfg(test)]
mod tests {
    use super::super::q8::tests::noise;
    use super::*;
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    #[test]
    fn rounding_is_half_away_from_zero_as_rounds() {
        let mut ys: Vec<f32> = (-2600..=2600).map(|i| i as f32 / 20.0).collect();
        ys.extend([
            0.49999997,
            -0.49999997,
            0.5,
            -0.5,
            1.5,
            -2.5,
            126.5,
            -127.5,
            f32::MIN_POSITIVE,
            -0.0,
        ]);
        ys.extend(noise(1000, 5).iter().map(|v| v * 130.0));
        for y in ys {
            assert_eq!(round_half_away(y), y.round() as i32, "{y}");
        }
        assert_eq!(round_half_away(f32::NAN), 0);
    }

    #[test]
    fn blocks_are_candles_q8k() {
        let cols = 512;
        let mut x: Vec<f32> = noise(3 * cols, 21).iter().map(|v| v * 5.0).collect();
        x[300] = -9.0;
        x[cols..cols + K_BLOCK].fill(0.0);
        let mut ours = Q8KVectors::default();
        ours.quantize(&x, cols).expect("quantize");
        assert_eq!(ours.len(), 3);
        let t = Tensor::from_slice(&x, (3, cols), &Device::Cpu).expect("tensor");
        let data = QTensor::quantize(&t, GgmlDType::Q8K)
            .and_then(|q| q.data().map(|d| d.into_owned()))
            .expect("candle");
        // candle's block: f32 scale, 256 quants, 16 sums of 16 (i16).
        let block_bytes = 4 + K_BLOCK + 32;
        for (b, theirs) in data.chunks_exact(block_bytes).enumerate() {
            let v = ours.vector(b / 2);
            let k = b % 2;
            let d = f32::from_le_bytes([theirs[0], theirs[1], theirs[2], theirs[3]]);
            assert_eq!(v.d[k], d, "block {b}");
            let q: Vec<i8> = theirs[4..4 + K_BLOCK].iter().map(|&b| b as i8).collect();
            assert_eq!(&v.q[k * K_BLOCK..(k + 1) * K_BLOCK], &q[..], "block {b}");
            for j in 0..16 {
                let s = &theirs[4 + K_BLOCK + 2 * j..];
                assert_eq!(v.sums16[k * 16 + j], i16::from_le_bytes([s[0], s[1]]));
            }
            for j in 0..8 {
                let want = v.sums16[k * 16 + 2 * j] + v.sums16[k * 16 + 2 * j + 1];
                assert_eq!(v.sums32[k * 8 + j], want);
            }
        }
    }

    #[test]
    fn the_vector_quantizer_gives_the_scalar_ones_values() {
        let mut blocks: Vec<Vec<f32>> = (0..40)
            .map(|i| {
                noise(K_BLOCK, 100 + i)
                    .iter()
                    .map(|v| v * 10f32.powi(i as i32 % 9 - 4))
                    .collect()
            })
            .collect();
        let special = [
            (7, f32::NAN),
            (3, f32::INFINITY),
            (200, f32::NEG_INFINITY),
            (255, -0.0),
            (0, f32::MIN_POSITIVE),
        ];
        for (b, &(at, v)) in special.iter().enumerate() {
            blocks[b][at] = v;
        }
        // Both signs of the largest magnitude: the first one sets the scale.
        blocks[6][10] = -8.0;
        blocks[6][20] = 8.0;
        blocks[7][10] = 8.0;
        blocks[7][20] = -8.0;
        // Values whose scaled form is a tie, and a block of zeros with a NaN.
        blocks[8] = (0..K_BLOCK).map(|i| (i as f32 - 127.0) / 2.0).collect();
        blocks[9] = vec![0.0; K_BLOCK];
        blocks[10] = vec![0.0; K_BLOCK];
        blocks[10][5] = f32::NAN;
        blocks[11] = vec![f32::NAN; K_BLOCK];
        for (b, x) in blocks.iter().enumerate() {
            let (mut scalar, mut vector) = ([0i8; K_BLOCK], [0i8; K_BLOCK]);
            let d = quantize_block(x, &mut scalar);
            let got = quantize(x, &mut vector);
            assert_eq!(got.to_bits(), d.to_bits(), "block {b}: scale");
            assert_eq!(vector, scalar, "block {b}");
        }
    }

    #[test]
    fn a_row_length_off_the_block_is_an_error() {
        assert_eq!(
            Q8KVectors::default().quantize(&[0.0; 128], 128),
            Err(MatrixError::KRowLength(128))
        );
        let v = Q8KVectors::default();
        assert_eq!(v.vector(3).blocks(), 0);
    }
}
