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

/// `gate[i] = silu(gate[i]) * up[i]`.
pub fn silu_mul(gate: &mut [f32], up: &[f32]) {
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

/// Where one head reads its keys and values in a position-major cache.
#[derive(Debug, Clone, Copy)]
pub struct HeadView<'a> {
    /// Keys of every position.
    pub keys: &'a [f32],
    /// Values of every position.
    pub values: &'a [f32],
    /// Values per position (all heads).
    pub stride: usize,
    /// Offset of this head in a position.
    pub offset: usize,
    /// Values per head.
    pub head_dim: usize,
    /// Positions attended.
    pub len: usize,
}

/// Attention of the queries `q` (one or more of `view.head_dim` values, all reading the same
/// key/value head) over the first `view.len` positions: softmax of the scaled dot products,
/// then the weighted sums of values into `out`, one after the other (`scores` is scratch).
pub fn attend_head(
    q: &[f32],
    view: HeadView<'_>,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if avx2::attend_head(q, view, scale, scores, out) {
        return;
    }
    attend_head_with(q, view, scale, scores, out);
}

#[inline(always)]
fn attend_head_with(
    q: &[f32],
    v: HeadView<'_>,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let hd = v.head_dim.max(1);
    let n = q.len() / hd;
    scores.clear();
    if v.len == 0 {
        return;
    }
    scores.resize(n * v.len, 0.0);
    // Each key is read once for all the queries that share it.
    for j in 0..v.len {
        let start = j * v.stride + v.offset;
        let Some(k) = v.keys.get(start..start + hd) else {
            break;
        };
        for (r, qr) in q.chunks_exact(hd).enumerate() {
            scores[r * v.len + j] = dot(qr, k) * scale;
        }
    }
    for row in scores.chunks_exact_mut(v.len) {
        softmax(row);
    }
    out.fill(0.0);
    for j in 0..v.len {
        let start = j * v.stride + v.offset;
        let Some(x) = v.values.get(start..start + hd) else {
            break;
        };
        for (r, o) in out.chunks_exact_mut(hd).enumerate() {
            axpy(o, scores[r * v.len + j], x);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use super::HeadView;

    /// [`super::attend_head`] compiled for AVX2 and FMA, when the CPU has them: returns
    /// whether it ran.
    pub(super) fn attend_head(
        q: &[f32],
        view: HeadView<'_>,
        scale: f32,
        scores: &mut Vec<f32>,
        out: &mut [f32],
    ) -> bool {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return false;
        }
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { attend_head_avx2(q, view, scale, scores, out) };
        true
    }

    #[target_feature(enable = "avx2,fma")]
    fn attend_head_avx2(
        q: &[f32],
        view: HeadView<'_>,
        scale: f32,
        scores: &mut Vec<f32>,
        out: &mut [f32],
    ) {
        super::attend_head_with(q, view, scale, scores, out);
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
    fn one_position_returns_its_value() {
        let keys = [0.0, 0.0, 1.0, 2.0];
        let values = [0.0, 0.0, 5.0, 6.0];
        let view = HeadView {
            keys: &keys,
            values: &values,
            stride: 4,
            offset: 2,
            head_dim: 2,
            len: 1,
        };
        let mut out = [0.0; 2];
        attend_head(&[3.0, 4.0], view, 0.5, &mut Vec::new(), &mut out);
        assert_eq!(out, [5.0, 6.0]);
    }

    #[test]
    fn softmax_sums_to_one() {
        let mut x = [1.0, 2.0, 3.0, f32::NEG_INFINITY];
        softmax(&mut x);
        assert!((x.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert_eq!(x[3], 0.0);
    }

    #[test]
    fn rope_rotates_pairs() {
        let mut x = [1.0, 0.0, 0.0, 1.0];
        rope_interleaved(&mut x, &[0.0, 1.0], &[1.0, 0.0]);
        assert_eq!(x, [0.0, 1.0, 0.0, 1.0]);
    }
}
