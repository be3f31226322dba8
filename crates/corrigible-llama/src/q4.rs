//! Q4_1 weight matrices times Q8_0-quantized activations, four weight rows per pass.
//!
//! Each weight is `d * q + m` with `q` in 0..16, so a block's dot product with activations
//! `dx * qx` is `d * dx * Σ q qx + m * dx * Σ qx`, as GGML's `vec_dot_q4_1_q8_1`: an exact
//! integer sum per block and row, plus the block sum the activations carry. The weights keep
//! the file's f16 scales and nibbles, so nothing is rounded twice.

use std::ops::Range;

use half::f16;

use super::q8::Q8Vectors;
use super::quad::{BLOCK, Quad, QuadMatrix};

/// One block of four consecutive weight rows: their four scales then four minimums (f16, as in
/// the file), then their 16 bytes of nibbles each (byte `j` holds value `j` in its low nibble
/// and value `j + 16` in its high nibble).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct Q4Quad {
    dm: [f16; 8],
    q: [[u8; BLOCK / 2]; 4],
}

impl Quad for Q4Quad {
    const FORMAT: &'static str = "Q4_1";
    /// An f16 scale, an f16 minimum, 16 bytes of two nibbles each.
    const BLOCK_BYTES: usize = 4 + BLOCK / 2;
    const EMPTY: Self = Self {
        dm: [f16::ZERO; 8],
        q: [[0; BLOCK / 2]; 4],
    };

    fn set_row(&mut self, k: usize, block: &[u8]) {
        self.dm[k] = f16::from_le_bytes([block[0], block[1]]);
        self.dm[4 + k] = f16::from_le_bytes([block[2], block[3]]);
        self.q[k].copy_from_slice(&block[4..]);
    }
}

/// One quantized activation vector as the kernels read it: block scales, block sums, quants.
#[derive(Debug, Clone, Copy)]
struct Act<'a> {
    d: &'a [f32],
    s: &'a [f32],
    q: &'a [i8],
}

impl<'a> Act<'a> {
    fn of(x: &'a Q8Vectors, t: usize) -> Self {
        let (d, q) = x.vector(t);
        Self { d, s: x.sums(t), q }
    }
}

/// A weight matrix in Q4_1, by groups of four rows.
pub type Q4Matrix = QuadMatrix<Q4Quad>;

impl Q4Matrix {
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
        self.dot_rows_with(rows, x, out, dot_group_scalar::<1>, dot_group_scalar::<2>);
    }

    /// The loop of [`Self::dot_rows`] (shapes already checked) around four-row kernels of one
    /// vector and of two (which unpack each weight once for both).
    #[inline(always)]
    fn dot_rows_with(
        &self,
        rows: Range<usize>,
        x: &Q8Vectors,
        out: &mut [f32],
        one: impl Fn(&[Q4Quad], [Act<'_>; 1]) -> [[f32; 4]; 1],
        two: impl Fn(&[Q4Quad], [Act<'_>; 2]) -> [[f32; 4]; 2],
    ) {
        let n = x.len();
        let mut r = rows.start;
        let mut o = 0;
        while r < rows.end {
            let count = (rows.end - r).min(4);
            let group = self.group(r / 4);
            let mut store = |t: usize, dots: [f32; 4]| {
                for (k, d) in dots.iter().take(count).enumerate() {
                    if let Some(slot) = out.get_mut(o + k * n + t) {
                        *slot = *d;
                    }
                }
            };
            let mut t = 0;
            while t + 1 < n {
                let [a, b] = two(group, [Act::of(x, t), Act::of(x, t + 1)]);
                store(t, a);
                store(t + 1, b);
                t += 2;
            }
            if t < n {
                let [a] = one(group, [Act::of(x, t)]);
                store(t, a);
            }
            r += count;
            o += count * n;
        }
    }
}

/// The portable kernel: exact integer sums per block, scaled and summed in f32, for each of
/// `N` vectors.
fn dot_group_scalar<const N: usize>(w: &[Q4Quad], x: [Act<'_>; N]) -> [[f32; 4]; N] {
    x.map(|x| {
        let mut acc = [0f32; 4];
        for (((quad, &dx), &sx), xb) in w.iter().zip(x.d).zip(x.s).zip(x.q.chunks_exact(BLOCK)) {
            let (lo, hi) = xb.split_at(BLOCK / 2);
            for (k, (acc, q)) in acc.iter_mut().zip(&quad.q).enumerate() {
                let sum: i32 = q
                    .iter()
                    .zip(lo.iter().zip(hi))
                    .map(|(&b, (&l, &h))| (b & 0x0F) as i32 * l as i32 + (b >> 4) as i32 * h as i32)
                    .sum();
                *acc += quad.dm[k].to_f32() * dx * sum as f32 + quad.dm[4 + k].to_f32() * sx;
            }
        }
        acc
    })
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    use std::ops::Range;

    use super::{Act, BLOCK, Q4Matrix, Q4Quad, Q8Vectors};

    /// Bytes read ahead of the kernel: a few quads.
    const PREFETCH: usize = 16 * std::mem::size_of::<Q4Quad>();

    /// [`Q4Matrix::dot_rows`] with the AVX2 kernel, when the CPU has AVX2, FMA and F16C:
    /// returns whether it ran.
    pub(super) fn dot_rows(
        m: &Q4Matrix,
        rows: Range<usize>,
        x: &Q8Vectors,
        out: &mut [f32],
    ) -> bool {
        if !(is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c"))
        {
            return false;
        }
        // SAFETY: the CPU supports AVX2, FMA and F16C, checked just above.
        unsafe { dot_rows_avx2(m, rows, x, out) };
        true
    }

    /// The loop with the kernel inlined.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn dot_rows_avx2(m: &Q4Matrix, rows: Range<usize>, x: &Q8Vectors, out: &mut [f32]) {
        m.dot_rows_with(
            rows,
            x,
            out,
            |w, x| dot_group::<1>(w, x),
            |w, x| dot_group::<2>(w, x),
        );
    }

    /// The integer dot products of two rows' nibbles, split into low `ql` and high `qh` (16
    /// bytes of each row per lane), with one block of activations, its first half repeated in
    /// `lo` and its second in `hi`: four partial sums of the first row, then four of the second.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn pair_sums(ql: __m256i, qh: __m256i, lo: __m256i, hi: __m256i) -> __m256 {
        // Unsigned nibbles times signed bytes in [-127, 127]: four products per i16 lane stay
        // within 4 * 15 * 127 = 7620, far from saturating.
        let sum = _mm256_add_epi16(_mm256_maddubs_epi16(ql, lo), _mm256_maddubs_epi16(qh, hi));
        _mm256_cvtepi32_ps(_mm256_madd_epi16(sum, _mm256_set1_epi16(1)))
    }

    /// The four rows' dot products from the accumulators of rows 0-1, rows 2-3 and minimums.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn finish(acc01: __m256, acc23: __m256, acc_min: __m256) -> [f32; 4] {
        let (mut a01, mut a23, mut am) = ([0f32; 8], [0f32; 8], [0f32; 8]);
        // SAFETY: each array holds eight f32; unaligned stores.
        unsafe {
            _mm256_storeu_ps(a01.as_mut_ptr(), acc01);
            _mm256_storeu_ps(a23.as_mut_ptr(), acc23);
            _mm256_storeu_ps(am.as_mut_ptr(), acc_min);
        }
        let half = |a: &[f32]| (a[0] + a[1]) + (a[2] + a[3]);
        [
            half(&a01[..4]) + am[4],
            half(&a01[4..]) + am[5],
            half(&a23[..4]) + am[6],
            half(&a23[4..]) + am[7],
        ]
    }

    /// The block dot products of four rows with each of `N` vectors, each weight block
    /// unpacked once.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn dot_group<const N: usize>(w: &[Q4Quad], x: [Act<'_>; N]) -> [[f32; 4]; N] {
        let nb = x.iter().fold(w.len(), |n, a| {
            n.min(a.d.len()).min(a.s.len()).min(a.q.len() / BLOCK)
        });
        let mask = _mm256_set1_epi8(0x0F);
        let rows01 = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
        let rows23 = _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3);
        let mut acc01 = [_mm256_setzero_ps(); N];
        let mut acc23 = [_mm256_setzero_ps(); N];
        let mut acc_min = [_mm256_setzero_ps(); N];
        for (b, quad) in w.iter().enumerate().take(nb) {
            let ahead = (quad as *const Q4Quad).cast::<i8>().wrapping_add(PREFETCH);
            // Only a hint: prefetching any address is harmless, even past the matrix.
            _mm_prefetch::<_MM_HINT_T0>(ahead);
            // SAFETY: `dm` is eight f16 values, 16 bytes; unaligned load.
            let dm = _mm256_cvtph_ps(unsafe { _mm_loadu_si128(quad.dm.as_ptr().cast()) });
            // SAFETY: `q` is four arrays of 16 bytes, contiguous (64 bytes); unaligned loads
            // of rows 0-1 and rows 2-3.
            let (q01, q23) = unsafe {
                let q = quad.q.as_ptr().cast::<__m256i>();
                (_mm256_loadu_si256(q), _mm256_loadu_si256(q.add(1)))
            };
            let (l01, h01) = (
                _mm256_and_si256(q01, mask),
                _mm256_and_si256(_mm256_srli_epi16::<4>(q01), mask),
            );
            let (l23, h23) = (
                _mm256_and_si256(q23, mask),
                _mm256_and_si256(_mm256_srli_epi16::<4>(q23), mask),
            );
            for v in 0..N {
                let a = x[v];
                // SAFETY: `b < nb <= a.q.len() / 32`, so bytes `b * 32 .. b * 32 + 32` lie
                // inside `a.q`; unaligned loads.
                let (lo, hi) = unsafe {
                    let y = a.q.as_ptr().add(b * BLOCK).cast::<__m128i>();
                    (
                        _mm256_broadcastsi128_si256(_mm_loadu_si128(y)),
                        _mm256_broadcastsi128_si256(_mm_loadu_si128(y.add(1))),
                    )
                };
                // d_k * dx in lanes 0..4, m_k * sx in lanes 4..8.
                let scale = _mm256_mul_ps(
                    dm,
                    _mm256_setr_m128(_mm_set1_ps(a.d[b]), _mm_set1_ps(a.s[b])),
                );
                acc_min[v] = _mm256_add_ps(acc_min[v], scale);
                acc01[v] = _mm256_fmadd_ps(
                    _mm256_permutevar8x32_ps(scale, rows01),
                    pair_sums(l01, h01, lo, hi),
                    acc01[v],
                );
                acc23[v] = _mm256_fmadd_ps(
                    _mm256_permutevar8x32_ps(scale, rows23),
                    pair_sums(l23, h23, lo, hi),
                    acc23[v],
                );
            }
        }
        let mut out = [[0f32; 4]; N];
        for v in 0..N {
            out[v] = finish(acc01[v], acc23[v], acc_min[v]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::q8::tests::noise;
    use super::super::quad::MatrixError;
    use super::*;
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};

    fn quantized(w: &[f32], rows: usize, cols: usize) -> (Q4Matrix, QTensor) {
        let t = Tensor::from_slice(w, (rows, cols), &Device::Cpu).expect("tensor");
        let q = QTensor::quantize(&t, GgmlDType::Q4_1).expect("quantize");
        let m = Q4Matrix::from_ggml(&q.data().expect("data"), rows, cols).expect("matrix");
        (m, q)
    }

    fn vectors(n: usize, cols: usize, seed: u64) -> Q8Vectors {
        let mut x = Q8Vectors::default();
        let xs: Vec<f32> = noise(n * cols, seed).iter().map(|v| v * 3.0).collect();
        x.quantize(&xs, cols).expect("quantize");
        x
    }

    /// The exact reference: weights dequantized by candle, times the dequantized activations,
    /// in f64.
    fn reference(q: &QTensor, x: &Q8Vectors, r: usize, t: usize) -> f64 {
        let w: Vec<Vec<f32>> = q
            .dequantize(&Device::Cpu)
            .and_then(|t| t.to_vec2())
            .expect("dequantize");
        let (xd, xq) = x.vector(t);
        w[r].iter()
            .enumerate()
            .map(|(i, &w)| w as f64 * xq[i] as f64 * xd[i / BLOCK] as f64)
            .sum()
    }

    fn close(a: f32, b: f64) -> bool {
        (a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0)
    }

    #[test]
    fn kernels_match_a_dequantized_reference() {
        let (rows, cols, n) = (11, 96, 3);
        let (m, q) = quantized(&noise(rows * cols, 1), rows, cols);
        let x = vectors(n, cols, 2);
        let mut out = vec![0f32; rows * n];
        m.dot_rows(0..rows, &x, &mut out);
        for r in 0..rows {
            let group = m.group(r / 4);
            for t in 0..n {
                let [scalar] = dot_group_scalar(group, [Act::of(&x, t)]);
                let scalar = scalar[r % 4];
                let want = reference(&q, &x, r, t);
                assert!(
                    close(out[r * n + t], want),
                    "{r} {t}: {} vs {want}",
                    out[r * n + t]
                );
                assert!(close(scalar, want), "{r} {t}: {scalar} vs {want}");
                assert!((out[r * n + t] - scalar).abs() <= 1e-5 * scalar.abs().max(1.0));
            }
        }
    }

    #[test]
    fn extreme_values_do_not_saturate() {
        let (rows, cols) = (5, 64);
        let w: Vec<f32> = (0..rows * cols)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let (m, q) = quantized(&w, rows, cols);
        let xs: Vec<f32> = (0..cols)
            .map(|i| if i % 3 == 0 { -2.0 } else { 2.0 })
            .collect();
        let mut x = Q8Vectors::default();
        x.quantize(&xs, cols).expect("quantize");
        let mut out = vec![0f32; rows];
        m.dot_rows(0..rows, &x, &mut out);
        for (r, &v) in out.iter().enumerate() {
            let want = reference(&q, &x, r, 0);
            assert!(close(v, want), "{r}: {v} vs {want}");
        }
    }

    #[test]
    fn a_row_range_gives_the_same_values() {
        let (rows, cols) = (9, 64);
        let (m, _) = quantized(&noise(rows * cols, 3), rows, cols);
        let x = vectors(1, cols, 4);
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
        // Candle rounds each activation block sum (up to about 10 here) to f16, a relative 2^-11,
        // where this kernel keeps it in f32: over 18 blocks with minimums near -1, a few
        // hundredths.
        for t in 0..n {
            for r in 0..rows {
                let (a, b) = (out[r * n + t], want[t][r]);
                assert!(
                    (a - b).abs() <= 0.05 + 1e-4 * b.abs(),
                    "{t} {r}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn bad_shapes_are_errors_not_panics() {
        assert_eq!(
            Q4Matrix::from_ggml(&[0; 10], 1, 32).err(),
            Some(MatrixError::DataSize {
                format: "Q4_1",
                got: 10,
                rows: 1,
                cols: 32
            })
        );
        assert_eq!(
            Q4Matrix::from_ggml(&[], 1, 31).err(),
            Some(MatrixError::RowLength(31))
        );
        let (m, _) = quantized(&noise(64, 7), 2, 32);
        let x = vectors(1, 64, 8);
        let mut out = [7f32; 2];
        m.dot_rows(0..2, &x, &mut out);
        assert_eq!(out, [7.0, 7.0]);
    }
}
