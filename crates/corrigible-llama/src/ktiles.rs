//! K-quant matrices times several activation vectors on AMX tiles: 16 weight rows and 16
//! vectors per tile product, one product per sub-block, the products scaled and summed 16
//! vectors at a time with AVX-512. Each block of 16 rows is unpacked to one byte per weight
//! once, for every group of 16 vectors.

use std::ops::Range;

use super::amx::{Amx, TILE};
use super::kmatrix::{KFormat, KMatrix};
use super::q8k::{K_BLOCK, Q8KVectors};

/// A K-quant format whose blocks unpack to unsigned byte weights in sub-blocks.
pub(crate) trait TileFormat: KFormat {
    /// Weights per sub-block: 16 or 32.
    const SUB: usize;

    /// Unpacks `block` into its 256 weights in order, and into `scales[s]` the factors
    /// `(scale, offset)` of sub-block `s`, such that the block's dot product with activations
    /// `dy * y` is `dy * Σ_s (scale Σ w y + offset Σ y)`, sums over the sub-block.
    fn unpack(block: &[u8], weights: &mut [u8], scales: &mut [(f32, f32)]);
}

/// Vectors from which the tile kernels, where the CPU has them, take over from the AVX2 ones.
pub(crate) const TILE_MIN_VECTORS: usize = 8;

/// Rows `rows` of `m` times every vector of `x` into `out`, row-major by weight row, as the
/// other kernels; false, writing nothing, when `x` holds fewer than [`TILE_MIN_VECTORS`], the
/// CPU offers no tiles or the shapes disagree, so that the caller's other kernels run.
pub(crate) fn dot_rows<F: TileFormat>(
    m: &KMatrix<F>,
    rows: Range<usize>,
    x: &Q8KVectors,
    out: &mut [f32],
) -> bool {
    let Some(amx) = Amx::detect() else {
        return false;
    };
    if x.len() < TILE_MIN_VECTORS
        || x.cols() != m.cols()
        || rows.start > rows.end
        || rows.end > m.rows()
        || out.len() != rows.len() * x.len()
        || K_BLOCK / F::SUB > TILE
    {
        return false;
    }
    let Some(tiles) = amx.tiles(F::SUB) else {
        return false;
    };
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: an `Amx` exists only on a CPU with AVX-512 F, BW and VL, FMA and F16C.
        #[allow(unsafe_code)]
        unsafe {
            avx512::product(m, rows, x.tiled(), out, &tiles)
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (tiles, out);
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::{K_BLOCK, KMatrix, TILE, TileFormat};
    use crate::amx::Tiles;
    use crate::kmatrix::prefetch;
    use crate::tiled::{SLICE_BYTES, TiledQ8K};

    /// 16 lanes from `x`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,fma,f16c")]
    fn load(x: &[f32; TILE]) -> __m512 {
        // SAFETY: `x` holds 16 f32; unaligned load.
        unsafe { _mm512_loadu_ps(x.as_ptr()) }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,fma,f16c")]
    pub(super) fn product<F: TileFormat>(
        m: &KMatrix<F>,
        rows: Range<usize>,
        x: &TiledQ8K,
        out: &mut [f32],
        tiles: &Tiles,
    ) {
        let n = x.len();
        let subs = K_BLOCK / F::SUB;
        let mut weights = [0u8; TILE * K_BLOCK];
        let mut sums = [[0i32; TILE]; TILE];
        let mut row_scales = [(0f32, 0f32); TILE];
        // Per sub-block and weight row: the scale and the offset.
        let mut scale = [[0f32; TILE]; TILE];
        let mut offset = [[0f32; TILE]; TILE];
        let mut acc = vec![[[0f32; TILE]; TILE]; x.groups()];
        let mut r0 = rows.start;
        while r0 < rows.end {
            let live = (rows.end - r0).min(TILE);
            acc.fill([[0.0; TILE]; TILE]);
            for b in 0..x.blocks() {
                for i in 0..TILE {
                    let w = &mut weights[i * K_BLOCK..(i + 1) * K_BLOCK];
                    let block = (i < live)
                        .then(|| {
                            m.row(r0 + i)
                                .get(b * F::BLOCK_BYTES..(b + 1) * F::BLOCK_BYTES)
                        })
                        .flatten();
                    if let Some(block) = block {
                        // The weight rows are read once, 16 at a time: ask for the row's
                        // block after next while this one is unpacked.
                        prefetch(
                            block.as_ptr().wrapping_add(2 * F::BLOCK_BYTES),
                            F::BLOCK_BYTES,
                        );
                    }
                    row_scales.fill((0.0, 0.0));
                    match block {
                        Some(block) => F::unpack(block, w, &mut row_scales[..subs]),
                        None => w.fill(0),
                    }
                    for s in 0..subs {
                        (scale[s][i], offset[s][i]) = row_scales[s];
                    }
                }
                for (g, acc) in acc.iter_mut().enumerate() {
                    let Some(y) = x.block(g, b) else {
                        continue;
                    };
                    let by = if F::SUB == 16 { y.sums16 } else { y.sums32 };
                    let mut sum = [_mm512_setzero_ps(); TILE];
                    for s in 0..subs {
                        let slice = s * F::SUB / 16 * SLICE_BYTES;
                        // The slices hold the 16 rows and the activations whatever `s` is.
                        let done = tiles.product(
                            &weights[F::SUB * s..],
                            K_BLOCK,
                            &y.quants[slice..],
                            &mut sums,
                        );
                        debug_assert!(done);
                        let ys = by.get(s).map_or(_mm512_setzero_ps(), |v| load(v));
                        for i in 0..TILE {
                            // SAFETY: a row of `sums` holds 16 i32; unaligned load.
                            let c = unsafe { _mm512_loadu_si512(sums[i].as_ptr().cast()) };
                            let c = _mm512_cvtepi32_ps(c);
                            sum[i] = _mm512_fmadd_ps(c, _mm512_set1_ps(scale[s][i]), sum[i]);
                            sum[i] = _mm512_fmadd_ps(ys, _mm512_set1_ps(offset[s][i]), sum[i]);
                        }
                    }
                    let dy = load(y.d);
                    for (acc, sum) in acc.iter_mut().zip(sum) {
                        let a = _mm512_fmadd_ps(sum, dy, load(acc));
                        // SAFETY: `acc` holds 16 f32; unaligned store.
                        unsafe { _mm512_storeu_ps(acc.as_mut_ptr(), a) };
                    }
                }
            }
            let done = &mut out[(r0 - rows.start) * n..(r0 - rows.start + live) * n];
            for (i, o) in done.chunks_exact_mut(n).enumerate() {
                for (t, o) in o.iter_mut().enumerate() {
                    *o = acc[t / TILE][i][t % TILE];
                }
            }
            r0 += live;
        }
    }
}
