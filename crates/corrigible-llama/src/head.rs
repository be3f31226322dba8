//! Attention of one group of queries over the keys and values of one key/value head.

use half::f16;

use super::vector::{axpy, dot, softmax};

/// The keys and values of one key/value head, each a contiguous run of `head_dim` values per
/// position.
#[derive(Debug, Clone, Copy)]
pub struct HeadView<'a> {
    /// Keys, position after position.
    pub keys: &'a [f16],
    /// Values, position after position.
    pub values: &'a [f16],
    /// Values per position.
    pub head_dim: usize,
    /// Positions attended (the first ones).
    pub len: usize,
}

impl<'a> HeadView<'a> {
    /// The keys and values of the attended positions, cut to what both slices hold.
    fn attended(&self) -> (&'a [f16], &'a [f16], usize) {
        let hd = self.head_dim.max(1);
        let len = self
            .len
            .min(self.keys.len() / hd)
            .min(self.values.len() / hd);
        (&self.keys[..len * hd], &self.values[..len * hd], len)
    }
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
    attend_head_portable(q, view, scale, scores, out);
}

fn attend_head_portable(
    q: &[f32],
    view: HeadView<'_>,
    scale: f32,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let hd = view.head_dim.max(1);
    let (keys, values, len) = view.attended();
    out.fill(0.0);
    scores.clear();
    if len == 0 {
        return;
    }
    scores.resize(len, 0.0);
    let mut row = vec![0f32; hd];
    for (qr, o) in q.chunks_exact(hd).zip(out.chunks_exact_mut(hd)) {
        for (s, k) in scores.iter_mut().zip(keys.chunks_exact(hd)) {
            *s = dot(qr, widen(k, &mut row)) * scale;
        }
        softmax(scores);
        for (s, x) in scores.iter().zip(values.chunks_exact(hd)) {
            axpy(o, *s, widen(x, &mut row));
        }
    }
}

/// `x` widened to f32 in `row` (exactly: every f16 is an f32).
fn widen<'r>(x: &[f16], row: &'r mut [f32]) -> &'r [f32] {
    for (r, x) in row.iter_mut().zip(x) {
        *r = x.to_f32();
    }
    row
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use half::f16;

    use super::HeadView;
    use super::softmax;
    use std::arch::x86_64::*;

    /// [`super::attend_head`] with AVX2, for heads of 64 or 128 values, when the CPU has it:
    /// returns whether it ran. Rounds exactly as the portable code (no fused multiply-add).
    pub(super) fn attend_head(
        q: &[f32],
        view: HeadView<'_>,
        scale: f32,
        scores: &mut Vec<f32>,
        out: &mut [f32],
    ) -> bool {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")) {
            return false;
        }
        match view.head_dim {
            // SAFETY: the CPU supports AVX2 and F16C, checked just above.
            64 => unsafe { attend::<8>(q, view, scale, scores, out) },
            // SAFETY: as above.
            128 => unsafe { attend::<16>(q, view, scale, scores, out) },
            _ => return false,
        }
        true
    }

    /// Attention for heads of `8 * N` values.
    #[target_feature(enable = "avx2,f16c")]
    fn attend<const N: usize>(
        q: &[f32],
        view: HeadView<'_>,
        scale: f32,
        scores: &mut Vec<f32>,
        out: &mut [f32],
    ) {
        let hd = 8 * N;
        let (keys, values, len) = view.attended();
        out.fill(0.0);
        scores.clear();
        if len == 0 {
            return;
        }
        let rows = (q.len() / hd).min(out.len() / hd);
        scores.resize(rows * len, 0.0);
        let (keys8, keys_rest) = keys.split_at(len / 8 * 8 * hd);
        // Keys eight at a time, each block read once (from L1) for every query of the group.
        for (b, block) in keys8.chunks_exact(8 * hd).enumerate() {
            for (r, qr) in q.chunks_exact(hd).take(rows).enumerate() {
                let s = &mut scores[r * len + b * 8..][..8];
                scores8::<N>(qr, block, scale, s);
            }
        }
        let done = len / 8 * 8;
        for (j, k) in keys_rest.chunks_exact(hd).enumerate() {
            for (r, qr) in q.chunks_exact(hd).take(rows).enumerate() {
                scores[r * len + done + j] = dot::<N>(qr, k) * scale;
            }
        }
        for ((row, o), _) in scores
            .chunks_exact_mut(len)
            .zip(out.chunks_exact_mut(hd))
            .zip(0..rows)
        {
            softmax(row);
            weighted_sum::<N>(row, values, o);
        }
    }

    /// `[f32; 8 * N]` as `N` vectors.
    #[target_feature(enable = "avx2,f16c")]
    fn load<const N: usize>(x: &[f32]) -> [__m256; N] {
        let x = &x[..8 * N];
        // SAFETY: `x` holds `8 * N` values, so every unaligned load of eight is in bounds.
        std::array::from_fn(|c| unsafe { _mm256_loadu_ps(x.as_ptr().add(8 * c)) })
    }

    /// `[f16; 8 * N]` widened to `N` vectors of f32.
    #[target_feature(enable = "avx2,f16c")]
    fn load_half<const N: usize>(x: &[f16]) -> [__m256; N] {
        let x = &x[..8 * N];
        // SAFETY: `x` holds `8 * N` f16 values (two bytes each), so every unaligned load of
        // eight (16 bytes) is in bounds.
        std::array::from_fn(|c| unsafe {
            _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr().add(8 * c).cast()))
        })
    }

    /// Sum of the eight lanes, first to last (the order of [`super::dot`]).
    #[target_feature(enable = "avx2,f16c")]
    fn lane_sum(x: __m256) -> f32 {
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` holds eight values; unaligned store.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), x) };
        lanes.iter().sum()
    }

    /// Eight lanes of partial sums of `a[i] * b[i]`, as [`super::dot`] keeps them.
    #[target_feature(enable = "avx2,f16c")]
    fn partial_dot<const N: usize>(a: &[__m256; N], b: &[f16]) -> __m256 {
        let b = load_half::<N>(b);
        let mut acc = _mm256_setzero_ps();
        for c in 0..N {
            acc = _mm256_add_ps(acc, _mm256_mul_ps(a[c], b[c]));
        }
        acc
    }

    /// Dot product of two `8 * N`-value vectors, rounded as [`super::dot`].
    #[target_feature(enable = "avx2,f16c")]
    fn dot<const N: usize>(a: &[f32], b: &[f16]) -> f32 {
        lane_sum(partial_dot::<N>(&load::<N>(a), b))
    }

    /// `out[i] = scale * q · block[i]` for the eight keys of `block`, rounded as
    /// [`super::dot`].
    #[target_feature(enable = "avx2,f16c")]
    fn scores8<const N: usize>(q: &[f32], block: &[f16], scale: f32, out: &mut [f32]) {
        let hd = 8 * N;
        let q = load::<N>(q);
        let a: [__m256; 8] = std::array::from_fn(|i| partial_dot::<N>(&q, &block[i * hd..]));
        // Transpose: row `i` holds lane `i` of every key, so the rows add up lane by lane.
        let t = [
            _mm256_unpacklo_ps(a[0], a[1]),
            _mm256_unpackhi_ps(a[0], a[1]),
            _mm256_unpacklo_ps(a[2], a[3]),
            _mm256_unpackhi_ps(a[2], a[3]),
            _mm256_unpacklo_ps(a[4], a[5]),
            _mm256_unpackhi_ps(a[4], a[5]),
            _mm256_unpacklo_ps(a[6], a[7]),
            _mm256_unpackhi_ps(a[6], a[7]),
        ];
        let u = [
            _mm256_shuffle_ps(t[0], t[2], 0x44),
            _mm256_shuffle_ps(t[0], t[2], 0xEE),
            _mm256_shuffle_ps(t[1], t[3], 0x44),
            _mm256_shuffle_ps(t[1], t[3], 0xEE),
            _mm256_shuffle_ps(t[4], t[6], 0x44),
            _mm256_shuffle_ps(t[4], t[6], 0xEE),
            _mm256_shuffle_ps(t[5], t[7], 0x44),
            _mm256_shuffle_ps(t[5], t[7], 0xEE),
        ];
        let rows = [
            _mm256_permute2f128_ps(u[0], u[4], 0x20),
            _mm256_permute2f128_ps(u[1], u[5], 0x20),
            _mm256_permute2f128_ps(u[2], u[6], 0x20),
            _mm256_permute2f128_ps(u[3], u[7], 0x20),
            _mm256_permute2f128_ps(u[0], u[4], 0x31),
            _mm256_permute2f128_ps(u[1], u[5], 0x31),
            _mm256_permute2f128_ps(u[2], u[6], 0x31),
            _mm256_permute2f128_ps(u[3], u[7], 0x31),
        ];
        let mut sum = rows[0];
        for r in &rows[1..] {
            sum = _mm256_add_ps(sum, *r);
        }
        let s = _mm256_mul_ps(sum, _mm256_set1_ps(scale));
        let out = &mut out[..8];
        // SAFETY: `out` holds eight values; unaligned store.
        unsafe { _mm256_storeu_ps(out.as_mut_ptr(), s) };
    }

    /// `out = Σ weights[j] * values[j]` over the positions of `weights`, rounded as
    /// [`super::axpy`] in turn.
    #[target_feature(enable = "avx2,f16c")]
    fn weighted_sum<const N: usize>(weights: &[f32], values: &[f16], out: &mut [f32]) {
        let mut acc = [_mm256_setzero_ps(); N];
        for (w, x) in weights.iter().zip(values.chunks_exact(8 * N)) {
            let w = _mm256_set1_ps(*w);
            let x = load_half::<N>(x);
            for c in 0..N {
                acc[c] = _mm256_add_ps(acc[c], _mm256_mul_ps(w, x[c]));
            }
        }
        let out = &mut out[..8 * N];
        for (c, a) in acc.iter().enumerate() {
            // SAFETY: `out` holds `8 * N` values; unaligned store of eight at `8 * c`.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(8 * c), *a) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Straightforward attention in f64: per query, scores, softmax, weighted sum.
    fn reference(q: &[f32], view: HeadView<'_>, scale: f32) -> Vec<f32> {
        let hd = view.head_dim;
        let mut out = Vec::new();
        for qr in q.chunks_exact(hd) {
            let s: Vec<f64> = (0..view.len)
                .map(|j| {
                    let k = &view.keys[j * hd..(j + 1) * hd];
                    qr.iter()
                        .zip(k)
                        .map(|(a, b)| *a as f64 * b.to_f64())
                        .sum::<f64>()
                        * scale as f64
                })
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
            let total: f64 = e.iter().sum();
            for d in 0..hd {
                let v: f64 = (0..view.len)
                    .map(|j| e[j] / total * view.values[j * hd + d].to_f64())
                    .sum();
                out.push(v as f32);
            }
        }
        out
    }

    fn values(n: usize, seed: f32) -> Vec<f32> {
        (0..n).map(|i| (i as f32 * seed).sin() * 2.0).collect()
    }

    fn halves(n: usize, seed: f32) -> Vec<f16> {
        values(n, seed).into_iter().map(f16::from_f32).collect()
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "minutes under Miri; the portable path is covered by the smaller tests"
    )]
    fn agrees_with_reference() {
        for hd in [64, 128, 6] {
            for len in [1, 7, 8, 9, 31, 200] {
                let (keys, vals) = (halves(len * hd + 5, 0.37), halves(len * hd, 0.11));
                let q = values(3 * hd, 0.73);
                let view = HeadView {
                    keys: &keys,
                    values: &vals,
                    head_dim: hd,
                    len,
                };
                let scale = 1.0 / (hd as f32).sqrt();
                let mut out = vec![f32::NAN; 3 * hd];
                attend_head(&q, view, scale, &mut Vec::new(), &mut out);
                let mut portable = vec![f32::NAN; 3 * hd];
                attend_head_portable(&q, view, scale, &mut Vec::new(), &mut portable);
                let want = reference(&q, view, scale);
                let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&out), bits(&portable), "hd {hd} len {len}");
                for (got, w) in out.iter().zip(&want) {
                    assert!((got - w).abs() < 1e-4, "hd {hd} len {len}: {got} vs {w}");
                }
            }
        }
    }

    #[test]
    fn one_position_returns_its_value() {
        let view = HeadView {
            keys: &[f16::ONE, f16::from_f32(2.0)],
            values: &[f16::from_f32(5.0), f16::from_f32(6.0)],
            head_dim: 2,
            len: 1,
        };
        let mut out = [0.0; 2];
        attend_head(&[3.0, 4.0], view, 0.5, &mut Vec::new(), &mut out);
        assert_eq!(out, [5.0, 6.0]);
    }

    #[test]
    fn no_position_gives_zeros() {
        let view = HeadView {
            keys: &[],
            values: &[],
            head_dim: 64,
            len: 3,
        };
        let mut out = [1.0; 64];
        attend_head(&[0.5; 64], view, 0.5, &mut Vec::new(), &mut out);
        assert_eq!(out, [0.0; 64]);
    }
}
