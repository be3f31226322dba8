//! The f32 vector operations of a transformer step, on plain slices.

/// Dot product of `a` and `b` (over the shorter length), eight partial sums.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `y += a * x`, element-wise over the shorter length.
#[inline(always)]
pub fn axpy(y: &mut [f32], a: f32, x: &[f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * x;
    }
}

/// RMS normalization of `x` scaled by `weight`, as candle's `rms_norm`.
pub fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let sum2: f32 = x.iter().map(|v| v * v).sum();
    let m = (sum2 / x.len().max(1) as f32 + eps).sqrt();
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = *v / m * *w;
    }
}

/// Softmax in place.
pub fn softmax(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2::softmax(x) {
        return;
    }
    softmax_portable(x);
}

fn softmax_portable(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    for v in x.iter_mut() {
        *v /= sum;
    }
}

/// Rotates consecutive pairs `(x[2i], x[2i+1])` by the angles whose cosines and sines are
/// `cos[i]`, `sin[i]` (candle's `rope_i`); dimensions past the tables are left alone.
pub fn rope_interleaved(x: &mut [f32], cos: &[f32], sin: &[f32]) {
    for ((pair, c), s) in x.chunks_exact_mut(2).zip(cos).zip(sin) {
        let (a, b) = (pair[0], pair[1]);
        pair[0] = a * c - b * s;
        pair[1] = a * s + b * c;
    }
}

/// Rotates `x` as pairs of its two halves (`x[i]`, `x[i + half]`), the NEOX layout of Qwen2.
pub fn rope_halves(x: &mut [f32], cos: &[f32], sin: &[f32]) {
    let half = cos.len().min(x.len() / 2);
    let (first, second) = x.split_at_mut(half);
    for (((a, b), c), s) in first.iter_mut().zip(second.iter_mut()).zip(cos).zip(sin) {
        let (x0, x1) = (*a, *b);
        *a = x0 * c - x1 * s;
        *b = x0 * s + x1 * c;
    }
}

/// `gate[i] = silu(gate[i]) * up[i]`.
pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx2::silu_mul(gate, up) {
        return;
    }
    silu_mul_portable(gate, up);
}

fn silu_mul_portable(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + (-*g).exp()) * u;
    }
}

/// `y += x`, element-wise.
pub fn add_assign(y: &mut [f32], x: &[f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += x;
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::*;

    fn supported() -> bool {
        is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
    }

    /// [`super::softmax`] with a vector `exp`, when the CPU has AVX2 and FMA: returns whether
    /// it ran.
    pub(super) fn softmax(x: &mut [f32]) -> bool {
        if !supported() {
            return false;
        }
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { softmax_avx2(x) };
        true
    }

    /// [`super::silu_mul`] with a vector `exp`, when the CPU has AVX2 and FMA: returns whether
    /// it ran.
    pub(super) fn silu_mul(gate: &mut [f32], up: &[f32]) -> bool {
        if !supported() {
            return false;
        }
        // SAFETY: as above.
        unsafe { silu_mul_avx2(gate, up) };
        true
    }

    /// `e^x` per lane within two ulps (Cephes' `expf`: a degree-5 polynomial on the reduced
    /// argument, scaled by a power of two); inputs are clamped to ±88.376, `-inf` gives 0.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn exp(x: __m256) -> __m256 {
        let x = _mm256_min_ps(x, _mm256_set1_ps(88.376_26));
        let x = _mm256_max_ps(x, _mm256_set1_ps(-88.376_26));
        let n = _mm256_floor_ps(_mm256_fmadd_ps(
            x,
            _mm256_set1_ps(std::f32::consts::LOG2_E),
            _mm256_set1_ps(0.5),
        ));
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693_359_4), x);
        let r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.121_944_4e-4), r);
        let mut p = _mm256_set1_ps(1.987_569_1e-4);
        for c in [
            1.398_199_9e-3,
            8.333_452e-3,
            4.166_579_6e-2,
            1.666_666_5e-1,
            5e-1,
        ] {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let p = _mm256_fmadd_ps(
            p,
            _mm256_mul_ps(r, r),
            _mm256_add_ps(r, _mm256_set1_ps(1.0)),
        );
        let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(
            _mm256_cvtps_epi32(n),
            _mm256_set1_epi32(127),
        ));
        _mm256_mul_ps(p, _mm256_castsi256_ps(scale))
    }

    #[target_feature(enable = "avx2,fma")]
    fn softmax_avx2(x: &mut [f32]) {
        let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let m = _mm256_set1_ps(max);
        let mut total = _mm256_setzero_ps();
        let mut chunks = x.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds exactly eight f32; unaligned load and store.
            unsafe {
                let e = exp(_mm256_sub_ps(_mm256_loadu_ps(c.as_ptr()), m));
                total = _mm256_add_ps(total, e);
                _mm256_storeu_ps(c.as_mut_ptr(), e);
            }
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds eight f32; unaligned store.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), total) };
        let mut sum: f32 = lanes.iter().sum();
        for v in chunks.into_remainder() {
            *v = (*v - max).exp();
            sum += *v;
        }
        let inv = 1.0 / sum;
        for v in x.iter_mut() {
            *v *= inv;
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn silu_mul_avx2(gate: &mut [f32], up: &[f32]) {
        let n = gate.len().min(up.len());
        let (gate, up) = (&mut gate[..n], &up[..n]);
        let one = _mm256_set1_ps(1.0);
        let mut g8 = gate.chunks_exact_mut(8);
        let mut u8 = up.chunks_exact(8);
        for (g, u) in (&mut g8).zip(&mut u8) {
            // SAFETY: `g` and `u` hold exactly eight f32 each; unaligned loads and store.
            unsafe {
                let x = _mm256_loadu_ps(g.as_ptr());
                let e = exp(_mm256_sub_ps(_mm256_setzero_ps(), x));
                let silu = _mm256_div_ps(x, _mm256_add_ps(one, e));
                _mm256_storeu_ps(
                    g.as_mut_ptr(),
                    _mm256_mul_ps(silu, _mm256_loadu_ps(u.as_ptr())),
                );
            }
        }
        super::silu_mul_portable(g8.into_remainder(), u8.remainder());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_agrees_with_f64() {
        let a: Vec<f32> = (0..75).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..75).map(|i| (i as f32 * 0.11).cos()).collect();
        let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        assert!((dot(&a, &b) as f64 - exact).abs() < 1e-4);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut x = [1.0, 2.0, 3.0, f32::NEG_INFINITY];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(x[3], 0.0);
    }

    #[test]
    fn vector_paths_agree_with_the_portable_ones() {
        let x: Vec<f32> = (0..203).map(|i| (i as f32 * 0.731).sin() * 40.0).collect();
        let up: Vec<f32> = (0..203).map(|i| (i as f32 * 0.29).cos()).collect();
        let (mut a, mut b) = (x.clone(), x.clone());
        silu_mul(&mut a, &up);
        silu_mul_portable(&mut b, &up);
        for (a, b) in a.iter().zip(&b) {
            assert!((a - b).abs() <= 4e-7 * b.abs().max(1e-3), "{a} vs {b}");
        }
        let (mut a, mut b) = (x.clone(), x);
        softmax(&mut a);
        softmax_portable(&mut b);
        for (a, b) in a.iter().zip(&b) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1e-30), "{a} vs {b}");
        }
        let mut extremes = [-1e30, -100.0, 0.0, 100.0, 1e30, 1.0, 2.0, 3.0];
        silu_mul(&mut extremes, &[1.0; 8]);
        assert!(extremes.iter().all(|v| v.is_finite()), "{extremes:?}");
        assert!(extremes[..3].iter().all(|v| v.abs() < 1e-8), "{extremes:?}");
        assert_eq!(extremes[3..5], [100.0, 1e30]);
    }

    #[test]
    fn rope_rotates_pairs() {
        let mut x = [1.0, 0.0, 0.0, 1.0];
        rope_interleaved(&mut x, &[0.0, 1.0], &[1.0, 0.0]);
        assert_eq!(x, [0.0, 1.0, 0.0, 1.0]);
    }

    #[test]
    fn rope_rotates_halves() {
        // Pairs (x[0], x[2]) by 90 degrees and (x[1], x[3]) by 0.
        let mut x = [1.0, 0.0, 0.0, 1.0];
        rope_halves(&mut x, &[0.0, 1.0], &[1.0, 0.0]);
        assert_eq!(x, [0.0, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn rope_styles_agree_on_permuted_layouts() {
        let x: Vec<f32> = (0..8).map(|i| i as f32 + 1.0).collect();
        let (cos, sin) = ([0.6, 0.8, 0.0, 1.0], [0.8, 0.6, 1.0, 0.0]);
        let mut interleaved = x.clone();
        rope_interleaved(&mut interleaved, &cos, &sin);
        let mut halves: Vec<f32> = (0..4)
            .map(|i| x[2 * i])
            .chain((0..4).map(|i| x[2 * i + 1]))
            .collect();
        rope_halves(&mut halves, &cos, &sin);
        for i in 0..4 {
            assert_eq!(halves[i], interleaved[2 * i]);
            assert_eq!(halves[i + 4], interleaved[2 * i + 1]);
        }
    }
}
