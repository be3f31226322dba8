//! Q8_0 weight matrices times Q8_0-quantized activations, four weight rows per pass.
//!
//! The arithmetic mirrors candle's Q8_0 `vec_dot` block by block (exact integer block sums,
//! one fused multiply-add per block into eight float lanes, the same horizontal sum), so on
//! AVX2 machines each dot product is bit-identical to candle's; other CPUs use a scalar loop.

use std::ops::Range;

use half::f16;

pub use super::quad::BLOCK;
use super::quad::{MatrixError, Quad, QuadMatrix};

/// Activations quantized to Q8_0, several vectors of one length: per block a scale (the f16
/// value candle stores, widened), 32 signed bytes, and the scale times their sum (as Q8_1's
/// `s`, for kernels of weights with an offset).
#[derive(Debug, Clone, Default)]
pub struct Q8Vectors {
    cols: usize,
    scales: Vec<f32>,
    sums: Vec<f32>,
    quants: Vec<i8>,
}

impl Q8Vectors {
    /// Quantizes `x`, a whole number of vectors of `cols` values, replacing the content.
    pub fn quantize(&mut self, x: &[f32], cols: usize) -> Result<(), MatrixError> {
        if cols == 0 || !cols.is_multiple_of(BLOCK) {
            return Err(MatrixError::RowLength(cols));
        }
        self.cols = cols;
        let n = x.len() / BLOCK * BLOCK;
        self.scales.clear();
        self.scales.resize(n / BLOCK, 0.0);
        self.sums.clear();
        self.sums.resize(n / BLOCK, 0.0);
        self.quants.clear();
        self.quants.resize(n, 0);
        #[cfg(target_arch = "x86_64")]
        if avx2::quantize(x, &mut self.scales, &mut self.sums, &mut self.quants) {
            return Ok(());
        }
        quantize_blocks(x, &mut self.scales, &mut self.sums, &mut self.quants);
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

    /// Vector `i`: its block scales and its quants.
    pub(super) fn vector(&self, i: usize) -> (&[f32], &[i8]) {
        let nb = self.cols / BLOCK;
        (
            &self.scales[i * nb..(i + 1) * nb],
            &self.quants[i * self.cols..(i + 1) * self.cols],
        )
    }

    /// The block sums of vector `i`: each block's scale times the sum of its quants.
    pub(super) fn sums(&self, i: usize) -> &[f32] {
        let nb = self.cols / BLOCK;
        &self.sums[i * nb..(i + 1) * nb]
    }
}

/// One block of four consecutive weight rows: their scales, then their 32 quants each, so that
/// the kernel reads the matrix as one sequential stream.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct Q8Quad {
    d: [f32; 4],
    q: [[i8; BLOCK]; 4],
}

impl Quad for Q8Quad {
    const FORMAT: &'static str = "Q8_0";
    /// An f16 scale then 32 signed bytes.
    const BLOCK_BYTES: usize = 2 + BLOCK;
    const EMPTY: Self = Self {
        d: [0.0; 4],
        q: [[0; BLOCK]; 4],
    };

    fn set_row(&mut self, k: usize, block: &[u8]) {
        self.d[k] = f16::from_le_bytes([block[0], block[1]]).to_f32();
        for (q, &byte) in self.q[k].iter_mut().zip(&block[2..]) {
            *q = byte as i8;
        }
    }
}

/// A weight matrix in Q8_0 (scales widened to f32), by groups of four rows.
pub type Q8Matrix = QuadMatrix<Q8Quad>;

impl Q8Matrix {
    /// Dot products of rows `rows` (starting at a multiple of four) with every vector of `x`,
    /// written row-major by weight row: `out[(r - rows.start) * x.len() + t]` is row `r` times
    /// vector `t`.
    ///
    /// Nothing is written when the shapes disagree (`x` of another width, `out` of another
    /// size, rows out of range or not starting a group of four).
    pub fn dot_rows(&self, rows: Range<usize>, x: &Q8Vectors, out: &mut [f32]) {
        if !self.fits(&rows, x, out) {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2::dot_rows(self, rows.clone(), x, out) {
            return;
        }
        self.dot_rows_with(rows, x, out, dot_group_scalar);
    }

    /// The loop of [`Self::dot_rows`] (shapes already checked) around a four-row `kernel`.
    #[inline(always)]
    fn dot_rows_with(
        &self,
        rows: Range<usize>,
        x: &Q8Vectors,
        out: &mut [f32],
        kernel: impl Fn(&[Q8Quad], &[f32], &[i8]) -> [f32; 4],
    ) {
        let n = x.len();
        let mut r = rows.start;
        let mut o = 0;
        while r < rows.end {
            let count = (rows.end - r).min(4);
            let group = self.group(r / 4);
            for t in 0..n {
                let (xd, xq) = x.vector(t);
                let dots = kernel(group, xd, xq);
                for (k, d) in dots.iter().take(count).enumerate() {
                    if let Some(slot) = out.get_mut(o + k * n + t) {
                        *slot = *d;
                    }
                }
            }
            r += count;
            o += count * n;
        }
    }

    /// Dequantizes row `r` into `out` (`cols` values), as candle's `to_float` would: each
    /// quant times its block's scale. Returns false, writing nothing, when `r` is out of range
    /// or `out` has another length.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) -> bool {
        if r >= self.rows() || out.len() != self.cols() {
            return false;
        }
        for (quad, o) in self.group(r / 4).iter().zip(out.chunks_exact_mut(BLOCK)) {
            let d = quad.d[r % 4];
            for (o, &q) in o.iter_mut().zip(&quad.q[r % 4]) {
                *o = q as f32 * d;
            }
        }
        true
    }
}

/// Quantizes the blocks of `x` into `scales`, `sums` and `quants` (as many blocks as all four
/// hold).
#[inline(always)]
fn quantize_blocks(x: &[f32], scales: &mut [f32], sums: &mut [f32], quants: &mut [i8]) {
    for (((block, scale), sum), q) in x
        .chunks_exact(BLOCK)
        .zip(scales.iter_mut())
        .zip(sums.iter_mut())
        .zip(quants.chunks_exact_mut(BLOCK))
    {
        // As candle's `BlockQ8_0::from_float`: scale from the largest magnitude, rounding half
        // away from zero with the unrounded inverse scale.
        let amax = block.iter().fold(0f32, |m, v| m.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        *scale = f16::from_f32(d).to_f32();
        for (q, &v) in q.iter_mut().zip(block) {
            *q = f32::round(v * id) as i8;
        }
        *sum = *scale * q.iter().map(|&v| v as i32).sum::<i32>() as f32;
    }
}

/// The portable kernel: exact integer sums per block, scaled and summed in f32.
fn dot_group_scalar(w: &[Q8Quad], xd: &[f32], xq: &[i8]) -> [f32; 4] {
    let mut acc = [0f32; 4];
    for ((quad, &dx), xb) in w.iter().zip(xd).zip(xq.chunks_exact(BLOCK)) {
        for ((acc, q), d) in acc.iter_mut().zip(&quad.q).zip(quad.d) {
            let sum: i32 = q.iter().zip(xb).map(|(&a, &c)| a as i32 * c as i32).sum();
            *acc += d * dx * sum as f32;
        }
    }
    acc
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use std::ops::Range;

    use super::{BLOCK, Q8Matrix, Q8Quad, Q8Vectors};

    /// Bytes read ahead of the kernel: a few quads.
    const PREFETCH: usize = 4 * std::mem::size_of::<Q8Quad>();

    /// [`Q8Matrix::dot_rows`] with the AVX2 kernel, when the CPU has AVX2 and FMA: returns
    /// whether it ran.
    pub(super) fn dot_rows(
        m: &Q8Matrix,
        rows: Range<usize>,
        x: &Q8Vectors,
        out: &mut [f32],
    ) -> bool {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return false;
        }
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { dot_rows_avx2(m, rows, x, out) };
        true
    }

    /// [`super::quantize_blocks`] compiled for AVX2 (vector rounding), when the CPU has it:
    /// returns whether it ran.
    pub(super) fn quantize(
        x: &[f32],
        scales: &mut [f32],
        sums: &mut [f32],
        quants: &mut [i8],
    ) -> bool {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return false;
        }
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { quantize_avx2(x, scales, sums, quants) };
        true
    }

    #[target_feature(enable = "avx2,fma")]
    fn quantize_avx2(x: &[f32], scales: &mut [f32], sums: &mut [f32], quants: &mut [i8]) {
        super::quantize_blocks(x, scales, sums, quants);
    }

    /// The loop with the kernel inlined.
    #[target_feature(enable = "avx2,fma")]
    fn dot_rows_avx2(m: &Q8Matrix, rows: Range<usize>, x: &Q8Vectors, out: &mut [f32]) {
        m.dot_rows_with(rows, x, out, |w, xd, xq| dot_group(w, xd, xq));
    }

    /// Horizontal sum of eight lanes, in candle's order.
    #[target_feature(enable = "avx2,fma")]
    fn hsum(x: __m256) -> f32 {
        let r = _mm256_extractf128_ps(x, 1);
        let r = _mm_add_ps(r, _mm256_castps256_ps128(x));
        let r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        let r = _mm_add_ss(r, _mm_movehdup_ps(r));
        _mm_cvtss_f32(r)
    }

    /// The block dot products of four rows with one vector.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn dot_group(w: &[Q8Quad], xd: &[f32], xq: &[i8]) -> [f32; 4] {
        let nb = w.len().min(xd.len()).min(xq.len() / BLOCK);
        let ones = _mm256_set1_epi16(1);
        let mut acc = [_mm256_setzero_ps(); 4];
        for b in 0..nb {
            let quad = &w[b];
            let ahead = (quad as *const Q8Quad).cast::<i8>().wrapping_add(PREFETCH);
            // Only a hint: prefetching any address is harmless, even past the matrix.
            _mm_prefetch::<_MM_HINT_T0>(ahead);
            // SAFETY: `b < nb <= xq.len() / 32`, so bytes `b * 32 .. b * 32 + 32` lie inside
            // `xq`; unaligned load.
            let y = unsafe { _mm256_loadu_si256(xq.as_ptr().add(b * BLOCK).cast()) };
            let ay = _mm256_sign_epi8(y, y);
            let dy = xd[b];
            for ((acc, q), d) in acc.iter_mut().zip(&quad.q).zip(quad.d) {
                // SAFETY: `q` is an array of exactly 32 bytes; unaligned load.
                let x = unsafe { _mm256_loadu_si256(q.as_ptr().cast()) };
                // |y| * sign(x, y) = x * y per byte; quantized values lie in [-127, 127], so a
                // pair of products (at most 2 * 127 * 127 = 32258) never saturates an i16.
                let sx = _mm256_sign_epi8(x, y);
                let dot = _mm256_maddubs_epi16(ay, sx);
                let sum = _mm256_cvtepi32_ps(_mm256_madd_epi16(ones, dot));
                *acc = _mm256_fmadd_ps(_mm256_set1_ps(d * dy), sum, *acc);
            }
        }
        [hsum(acc[0]), hsum(acc[1]), hsum(acc[2]), hsum(acc[3])]
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};

    /// A deterministic pseudo-random sequence in [-1, 1).
    pub(in super::super) fn noise(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn quantized(w: &[f32], rows: usize, cols: usize) -> (Q8Matrix, QTensor) {
        let t = Tensor::from_slice(w, (rows, cols), &Device::Cpu).expect("tensor");
        let q = QTensor::quantize(&t, GgmlDType::Q8_0).expect("quantize");
        let m = Q8Matrix::from_ggml(&q.data().expect("data"), rows, cols).expect("matrix");
        (m, q)
    }

    /// The exact reference: dequantized values multiplied in f64.
    fn reference(m: &Q8Matrix, x: &Q8Vectors, r: usize, t: usize) -> f64 {
        let (xd, xq) = x.vector(t);
        let group = m.group(r / 4);
        (0..m.cols())
            .map(|i| {
                let quad = &group[i / BLOCK];
                let w = quad.q[r % 4][i % BLOCK] as f64 * quad.d[r % 4] as f64;
                w * xq[i] as f64 * xd[i / BLOCK] as f64
            })
            .sum()
    }

    #[test]
    fn kernel_matches_a_scalar_reference() {
        let (rows, cols, n) = (11, 96, 3);
        let (m, _) = quantized(&noise(rows * cols, 1), rows, cols);
        let mut x = Q8Vectors::default();
        x.quantize(&noise(n * cols, 2), cols).expect("quantize");
        let mut out = vec![0f32; rows * n];
        m.dot_rows(0..rows, &x, &mut out);
        let mut scalar = vec![0f32; rows * n];
        for r in 0..rows {
            let group = m.group(r / 4);
            for t in 0..n {
                let (xd, xq) = x.vector(t);
                scalar[r * n + t] = dot_group_scalar(group, xd, xq)[r % 4];
                let want = reference(&m, &x, r, t);
                assert!((out[r * n + t] as f64 - want).abs() < 1e-4, "{r} {t}");
                assert!((scalar[r * n + t] as f64 - want).abs() < 1e-4, "{r} {t}");
            }
        }
    }

    #[test]
    fn a_dequantized_row_is_candles() {
        let (rows, cols) = (9, 64);
        let (m, q) = quantized(&noise(rows * cols, 5), rows, cols);
        let want: Vec<Vec<f32>> = q
            .dequantize(&Device::Cpu)
            .and_then(|t| t.to_vec2())
            .expect("dequantize");
        let mut row = vec![0f32; cols];
        for (r, want) in want.iter().enumerate() {
            assert!(m.dequantize_row(r, &mut row));
            assert_eq!(&row, want);
        }
        assert!(!m.dequantize_row(rows, &mut row));
        assert!(!m.dequantize_row(0, &mut row[1..]));
    }

    #[test]
    fn a_row_range_gives_the_same_values() {
        let (rows, cols) = (9, 64);
        let (m, _) = quantized(&noise(rows * cols, 3), rows, cols);
        let mut x = Q8Vectors::default();
        x.quantize(&noise(cols, 4), cols).expect("quantize");
        let mut all = vec![0f32; rows];
        m.dot_rows(0..rows, &x, &mut all);
        let mut part = vec![0f32; 5];
        m.dot_rows(4..9, &x, &mut part);
        assert_eq!(part, all[4..9]);
        let mut untouched = vec![0f32; 4];
        m.dot_rows(5..9, &x, &mut untouched);
        assert_eq!(untouched, [0.0; 4]);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "candle's threaded matmul: its barrier pool breaks Stacked Borrows, and it is slow under Miri"
    )]
    fn kernel_equals_candle_on_a_small_matrix() {
        let (rows, cols) = (8, 128);
        let w = noise(rows * cols, 5);
        let (m, q) = quantized(&w, rows, cols);
        let xs = noise(cols, 6);
        let mut x = Q8Vectors::default();
        x.quantize(&xs, cols).expect("quantize");
        let mut out = vec![0f32; rows];
        m.dot_rows(0..rows, &x, &mut out);
        let mm = QMatMul::from_qtensor(q).expect("qmatmul");
        let input = Tensor::from_slice(&xs, (1, cols), &Device::Cpu).expect("tensor");
        let want: Vec<f32> = mm
            .forward(&input)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .expect("candle");
        for (a, b) in out.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "candle's threaded matmul: its barrier pool breaks Stacked Borrows, and it is slow under Miri"
    )]
    fn several_vectors_equal_candle() {
        let (rows, cols, n) = (12, 576, 20);
        let w = noise(rows * cols, 9);
        let (m, q) = quantized(&w, rows, cols);
        let xs: Vec<f32> = noise(n * cols, 10).iter().map(|v| v * 3.0).collect();
        let mut x = Q8Vectors::default();
        x.quantize(&xs, cols).expect("quantize");
        let mut out = vec![0f32; rows * n];
        m.dot_rows(0..rows, &x, &mut out);
        let mm = QMatMul::from_qtensor(q).expect("qmatmul");
        let input = Tensor::from_slice(&xs, (n, cols), &Device::Cpu).expect("tensor");
        let want: Vec<Vec<f32>> = mm
            .forward(&input)
            .and_then(|t| t.to_vec2())
            .expect("candle");
        for t in 0..n {
            for r in 0..rows {
                let (a, b) = (out[r * n + t], want[t][r]);
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "{t} {r}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors_not_panics() {
        assert_eq!(
            Q8Matrix::from_ggml(&[0; 10], 1, 32).err(),
            Some(MatrixError::DataSize {
                format: "Q8_0",
                got: 10,
                rows: 1,
                cols: 32
            })
        );
        assert!(Q8Vectors::default().quantize(&[0.0; 31], 31).is_err());
        let (m, _) = quantized(&noise(64, 7), 2, 32);
        let mut x = Q8Vectors::default();
        x.quantize(&noise(64, 8), 64).expect("quantize");
        let mut out = [7f32; 2];
        m.dot_rows(0..2, &x, &mut out);
        assert_eq!(out, [7.0, 7.0]);
    }
}
