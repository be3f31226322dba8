//! AVX-512 VNNI products in the shape of the AMX tile products, for CPUs with AVX-512 but no
//! AMX: the same 16 weight rows by 16 activation vectors ([`crate::tiled`]) into 16 × 16 exact
//! 32-bit sums, so that the tile kernels of `ktiles.rs` run unchanged around them.
//!
//! A 64-byte row of the tiled activations holds four consecutive values of each of the 16
//! vectors, one 32-bit lane per vector: `vpdpbusd` with four weight bytes broadcast to every
//! lane adds 64 products at once, and the 16 lanes of a weight row's sum are its 16 vectors.
//! `CORRIGIBLE_NO_VNNI=1` turns these products off, to compare kernels.

use super::amx::{TILE, fits};

/// Proof that the CPU has AVX-512 F, BW, VL and VNNI, FMA and F16C (the products and the
/// scaling code around them), and that the products are not turned off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Vnni(());

impl Vnni {
    /// The products, when this CPU offers them and they are not turned off.
    pub(crate) fn detect() -> Option<Self> {
        static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        USABLE
            .get_or_init(|| std::env::var_os("CORRIGIBLE_NO_VNNI").is_none() && kernel::supported())
            .then_some(Vnni(()))
    }

    /// Products over `k` bytes per weight row (a multiple of 4, at most 64).
    pub(crate) fn tiles(self, k: usize) -> Option<VnniTiles> {
        fits(k).then_some(VnniTiles { k })
    }
}

/// Products over `k` bytes per weight row, the counterpart of [`crate::amx::Tiles`]; made
/// only by [`Vnni::tiles`], so only on a CPU with the features.
#[derive(Debug, Clone, Copy)]
pub(crate) struct VnniTiles {
    k: usize,
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod kernel {
    use std::arch::x86_64::*;

    use super::{TILE, VnniTiles};
    use crate::ktiles::{TileProduct, scaled};

    /// Miri runs none of these instructions.
    pub(super) fn supported() -> bool {
        !cfg!(miri)
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    }

    impl TileProduct for VnniTiles {
        #[inline]
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
        unsafe fn accumulate(
            &self,
            a: &[u8],
            stride: usize,
            b: &[i8],
            scale: &[f32; TILE],
            offset: &[f32; TILE],
            ys: __m512,
            sum: &mut [__m512; TILE],
        ) -> bool {
            let k = self.k;
            if stride < k || a.len() < (TILE - 1) * stride + k || b.len() < k * TILE {
                return false;
            }
            let (a, b) = (a.as_ptr(), b.as_ptr());
            // SAFETY: the CPU has the features (the caller's contract); `a` holds 16 rows of
            // `k` bytes `stride` apart and `b` holds `k / 4` rows of 64 bytes, `k` a multiple
            // of 4 up to 64 (`Vnni::tiles`).
            unsafe {
                match k {
                    16 => rows::<16>(a, stride, b, scale, offset, ys, sum),
                    32 => rows::<32>(a, stride, b, scale, offset, ys, sum),
                    _ => any(k, a, stride, b, scale, offset, ys, sum),
                }
            }
            true
        }
    }

    /// The products for a `K` known at compile time, the activations held in registers.
    ///
    /// # Safety
    /// The CPU has the features; `a` is readable for `15 * stride + K` bytes and `b` for
    /// `16 * K` bytes; `K` is a multiple of 4 up to 64.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows<const K: usize>(
        a: *const u8,
        stride: usize,
        b: *const i8,
        scale: &[f32; TILE],
        offset: &[f32; TILE],
        ys: __m512,
        sum: &mut [__m512; TILE],
    ) {
        let mut y = [_mm512_setzero_si512(); 16];
        for (r, y) in y.iter_mut().enumerate().take(K / 4) {
            // SAFETY: row `r < K / 4` of 64 bytes lies inside `b`; unaligned load.
            *y = unsafe { _mm512_loadu_si512(b.add(64 * r).cast()) };
        }
        for (i, sum) in sum.iter_mut().enumerate() {
            let mut acc = _mm512_setzero_si512();
            for (r, &y) in y.iter().enumerate().take(K / 4) {
                // SAFETY: bytes `4r .. 4r + 4` of row `i < 16` lie inside `a`; unaligned read.
                let w = unsafe { a.add(i * stride + 4 * r).cast::<i32>().read_unaligned() };
                acc = _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(w), y);
            }
            *sum = scaled(acc, scale[i], offset[i], ys, *sum);
        }
    }

    /// The products for any `k`.
    ///
    /// # Safety
    /// As [`rows`], with `k` for `K`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn any(
        k: usize,
        a: *const u8,
        stride: usize,
        b: *const i8,
        scale: &[f32; TILE],
        offset: &[f32; TILE],
        ys: __m512,
        sum: &mut [__m512; TILE],
    ) {
        for (i, sum) in sum.iter_mut().enumerate() {
            let mut acc = _mm512_setzero_si512();
            for r in 0..k / 4 {
                // SAFETY: as in `rows`.
                let (w, y) = unsafe {
                    (
                        a.add(i * stride + 4 * r).cast::<i32>().read_unaligned(),
                        _mm512_loadu_si512(b.add(64 * r).cast()),
                    )
                };
                acc = _mm512_dpbusd_epi32(acc, _mm512_set1_epi32(w), y);
            }
            *sum = scaled(acc, scale[i], offset[i], ys, *sum);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod kernel {
    pub(super) fn supported() -> bool {
        false
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
#[allow(unsafe_code)]
mod tests {
    use std::arch::x86_64::*;

    use super::*;
    use crate::ktiles::TileProduct;

    /// `tiles`' sums for unit scales, no offsets and zero sums to start from, as integers.
    fn product(
        tiles: &VnniTiles,
        a: &[u8],
        stride: usize,
        b: &[i8],
    ) -> Option<[[i32; TILE]; TILE]> {
        // SAFETY: `tiles` exists, so the CPU has the features.
        let mut sum = unsafe { [_mm512_setzero_ps(); TILE] };
        // SAFETY: as above.
        let done = unsafe {
            tiles.accumulate(
                a,
                stride,
                b,
                &[1.0; TILE],
                &[0.0; TILE],
                _mm512_setzero_ps(),
                &mut sum,
            )
        };
        done.then(|| {
            sum.map(|s| {
                let mut lanes = [0f32; TILE];
                // SAFETY: `lanes` holds 16 f32; unaligned store.
                unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), s) };
                lanes.map(|x| x as i32)
            })
        })
    }

    #[test]
    fn products_are_the_integer_matrix_product_scaled_and_offset() {
        let Some(vnni) = Vnni::detect() else {
            eprintln!("skipped: this CPU offers no AVX-512 VNNI");
            return;
        };
        for k in [4, 16, 32, 64] {
            let stride = k + 8;
            let a: Vec<u8> = (0..TILE * stride).map(|i| (i * 7 % 251) as u8).collect();
            let b: Vec<i8> = (0..k * TILE).map(|i| (i * 13 % 255) as u8 as i8).collect();
            let tiles = vnni.tiles(k).expect("tiles");
            let c = product(&tiles, &a, stride, &b).expect("product");
            for (i, row) in c.iter().enumerate() {
                for (v, &got) in row.iter().enumerate() {
                    let want: i32 = (0..k)
                        .map(|j| {
                            a[i * stride + j] as i32 * b[4 * (j / 4) * TILE + 4 * v + j % 4] as i32
                        })
                        .sum();
                    assert_eq!(got, want, "k {k} row {i} vector {v}");
                }
            }
            assert!(product(&tiles, &a[..15 * stride + k - 1], stride, &b).is_none());
            assert!(product(&tiles, &a, stride, &b[1..]).is_none());
            assert!(product(&tiles, &a, k - 4, &b).is_none());
        }
        assert!(vnni.tiles(0).is_none() && vnni.tiles(6).is_none() && vnni.tiles(68).is_none());

        // Scales, offsets and what the sums held before.
        let (k, stride) = (16, 16);
        let a: Vec<u8> = (0..TILE * stride).map(|i| (i % 5) as u8).collect();
        let b: Vec<i8> = (0..k * TILE).map(|i| (i % 7) as i8 - 3).collect();
        let exact = product(&vnni.tiles(k).expect("tiles"), &a, stride, &b).expect("product");
        let scale: [f32; TILE] = std::array::from_fn(|i| 0.5 + i as f32);
        let offset: [f32; TILE] = std::array::from_fn(|i| -(i as f32) / 4.0);
        let ys: [f32; TILE] = std::array::from_fn(|v| v as f32 * 3.0);
        // SAFETY: `vnni` exists, so the CPU has AVX-512.
        let mut sum = unsafe { [_mm512_set1_ps(2.0); TILE] };
        // SAFETY: `vnni` exists, so the CPU has the features; `ys` holds 16 f32.
        let done = unsafe {
            vnni.tiles(k).expect("tiles").accumulate(
                &a,
                stride,
                &b,
                &scale,
                &offset,
                _mm512_loadu_ps(ys.as_ptr()),
                &mut sum,
            )
        };
        assert!(done);
        for (i, s) in sum.iter().enumerate() {
            let mut lanes = [0f32; TILE];
            // SAFETY: `lanes` holds 16 f32; unaligned store.
            unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), *s) };
            for (v, &got) in lanes.iter().enumerate() {
                let want = 2.0 + scale[i] * exact[i][v] as f32 + offset[i] * ys[v];
                assert!(
                    (got - want).abs() <= 1e-3 * want.abs().max(1.0),
                    "row {i} vector {v}: {got} against {want}"
                );
            }
        }
    }
}
