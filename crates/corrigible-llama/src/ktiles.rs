//! K-quant matrices times several activation vectors in tiles: 16 weight rows and 16
//! vectors per tile product, one product per sub-block, the products scaled and summed 16
//! vectors at a time with AVX-512. Each block of 16 rows is unpacked to one byte per weight
//! once, for every group of 16 vectors. The products run on AMX tiles where the CPU has them,
//! else on AVX-512 VNNI (`vnni.rs`).

use std::ops::Range;

use super::amx::{Amx, TILE, fits};
use super::kgroups::{self, GROUP, tiles::GroupTiles};
use super::kmatrix::{KFormat, KMatrix};
use super::q8k::{K_BLOCK, Q8KVectors};
use super::vnni::Vnni;

#[cfg(target_arch = "x86_64")]
pub(crate) use avx512::{TileProduct, scaled};

/// A K-quant format whose blocks unpack to unsigned byte weights in sub-blocks.
pub(crate) trait TileFormat: KFormat {
    /// Weights per sub-block: 16 or 32.
    const SUB: usize;

    /// Unpacks `block` into its 256 weights in order, and into `scales[s]` the factors
    /// `(scale, offset)` of sub-block `s`, such that the block's dot product with activations
    /// `dy * y` is `dy * Σ_s (scale Σ w y + offset Σ y)`, sums over the sub-block.
    fn unpack(block: &[u8], weights: &mut [u8], scales: &mut [(f32, f32)]);
}

/// Vectors from which the AMX tile kernels take over from the AVX2 ones.
pub(crate) const TILE_MIN_VECTORS: usize = 8;

/// Vectors from which the VNNI products take over from the AVX2 kernels: with fewer, most of
/// the 16 lanes of each product are empty, and the AVX2 kernel was faster at 8 vectors.
pub(crate) const VNNI_MIN_VECTORS: usize = 12;

/// Rows `rows` of `m` times every vector of `x` into `out`, row-major by weight row, as the
/// other kernels; false, writing nothing, when `x` holds fewer than [`TILE_MIN_VECTORS`] (AMX)
/// or [`VNNI_MIN_VECTORS`], the CPU offers no tiles, `m` is interleaved on a CPU without AMX
/// (the group kernels take it) or the shapes disagree, so that the caller's other kernels run.
pub(crate) fn dot_rows<F: GroupTiles>(
    m: &KMatrix<F>,
    rows: Range<usize>,
    x: &Q8KVectors,
    out: &mut [f32],
) -> bool {
    if x.cols() != m.cols()
        || rows.start > rows.end
        || rows.end > m.rows()
        || out.len() != rows.len() * x.len()
        || K_BLOCK / F::SUB > TILE
    {
        return false;
    }
    let n = x.len();
    if let Some(groups) = m.groups() {
        if n >= TILE_MIN_VECTORS
            && kgroups::tiles::dot::<F>(groups, rows.clone(), x, 0..n, |t, r, dots| {
                for (k, &dot) in dots.iter().enumerate() {
                    out[(r + k - rows.start) * n + t] = dot;
                }
            })
        {
            return true;
        }
        if Amx::detect().is_none() || !F::SIGNED {
            // Without AMX the group kernels (`kgroups::dot_rows`), which read the weights as
            // stored, were faster than the VNNI tile products for 40 and 100 vectors. With
            // unsigned operands the tiles round as the group kernels do, so rows that are not
            // whole groups go to those too, to give the same values.
            return false;
        }
    }
    if let Some(tiles) = Amx::detect().and_then(|amx| amx.tiles(F::SUB)) {
        x.len() >= TILE_MIN_VECTORS && run(m, rows, x, Out::ByRow(out), &tiles)
    } else if let Some(tiles) = Vnni::detect().and_then(|vnni| vnni.tiles(F::SUB)) {
        x.len() >= VNNI_MIN_VECTORS && run(m, rows, x, Out::ByRow(out), &tiles)
    } else {
        false
    }
}

/// Whether this CPU runs the tile kernels (AMX, or AVX-512 VNNI) for a format of `SUB`
/// weights per sub-block.
pub(crate) fn available<F: TileFormat>() -> bool {
    // Asked on every projection: no tiles are configured to find out.
    fits(F::SUB)
        && K_BLOCK / F::SUB <= TILE
        && (Amx::detect().is_some() || Vnni::detect().is_some())
}

/// Whether interleaved matrices run on the kernels that read the vectors in place
/// (`kgroups::tiles`), with no tiled layout of them: on a CPU with AMX tiles.
pub(crate) fn in_place() -> bool {
    Amx::detect().is_some()
}

/// Every row of `m` times the vectors `tokens` of `x` into `out`, by vector: row `r` times
/// vector `t` goes to `out[(t - tokens.start) * stride + r]`, so that a caller can write
/// stacked matrices side by side and split the vectors among threads. `tokens.start` must be
/// a multiple of 16. False, writing nothing, when the CPU offers no tiles or the shapes
/// disagree.
pub(crate) fn dot_tokens<F: GroupTiles>(
    m: &KMatrix<F>,
    tokens: Range<usize>,
    x: &Q8KVectors,
    out: &mut [f32],
    stride: usize,
) -> bool {
    if x.cols() != m.cols()
        || tokens.is_empty()
        || tokens.end > x.len()
        || !tokens.start.is_multiple_of(TILE)
        || stride < m.rows()
        || out.len() < (tokens.len() - 1) * stride + m.rows()
        || K_BLOCK / F::SUB > TILE
    {
        return false;
    }
    if let Some(groups) = m.groups() {
        let first = tokens.start;
        let done =
            kgroups::tiles::dot::<F>(groups, 0..m.rows(), x, tokens.clone(), |t, r, dots| {
                let at = (t - first) * stride + r;
                out[at..at + GROUP].copy_from_slice(dots);
            });
        if done {
            return true;
        }
    }
    let out = Out::ByToken {
        out,
        stride,
        tokens,
    };
    if let Some(tiles) = Amx::detect().and_then(|amx| amx.tiles(F::SUB)) {
        run(m, 0..m.rows(), x, out, &tiles)
    } else if let Some(tiles) = Vnni::detect().and_then(|vnni| vnni.tiles(F::SUB)) {
        run(m, 0..m.rows(), x, out, &tiles)
    } else {
        false
    }
}

/// Where the tile kernel writes its dot products.
enum Out<'a> {
    /// Row-major by weight row, every vector.
    ByRow(&'a mut [f32]),
    /// By vector, `stride` apart, the vectors `tokens` only.
    ByToken {
        out: &'a mut [f32],
        stride: usize,
        tokens: Range<usize>,
    },
}

/// The kernel around the products of `tiles`; the shapes are checked.
#[cfg(target_arch = "x86_64")]
fn run<F: TileFormat, P: TileProduct>(
    m: &KMatrix<F>,
    rows: Range<usize>,
    x: &Q8KVectors,
    out: Out<'_>,
    tiles: &P,
) -> bool {
    // SAFETY: `Amx` and `Vnni`, of which `tiles` is made, exist only on a CPU with AVX-512
    // F, BW, VL and VNNI, FMA and F16C.
    #[allow(unsafe_code)]
    unsafe {
        avx512::product(m, rows, x.tiled(), out, tiles)
    };
    true
}

#[cfg(not(target_arch = "x86_64"))]
fn run<F: TileFormat, P>(
    _m: &KMatrix<F>,
    _rows: Range<usize>,
    _x: &Q8KVectors,
    _out: Out<'_>,
    _tiles: &P,
) -> bool {
    false
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;
    use std::ops::Range;

    use super::{K_BLOCK, KMatrix, Out, TILE, TileFormat};
    use crate::amx::Tiles;
    use crate::kgroups::{GROUP, group_bytes};
    use crate::kmatrix::prefetch;
    use crate::tiled::{SLICE_BYTES, TiledQ8K};

    /// 16 weight rows of one sub-block times 16 activation vectors, scaled and added up.
    pub(crate) trait TileProduct {
        /// For each weight row `i` and vector lane `v`: `sum[i][v] += scale[i] * Σ_j
        /// a[i * stride + j] * b[4 * (j / 4) * 16 + 4 * v + j % 4] + offset[i] * ys[v]`, over
        /// the sub-block's bytes `j`, the integer sums exact. False, changing nothing, when `a`
        /// or `b` is too short.
        ///
        /// # Safety
        /// The CPU has AVX-512 F, BW, VL and VNNI, FMA and F16C (as it does wherever a value
        /// of the implementing type exists).
        #[allow(clippy::too_many_arguments)]
        unsafe fn accumulate(
            &self,
            a: &[u8],
            stride: usize,
            b: &[i8],
            scale: &[f32; TILE],
            offset: &[f32; TILE],
            ys: __m512,
            sum: &mut [__m512; TILE],
        ) -> bool;
    }

    impl TileProduct for Tiles {
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
            let mut sums = [[0i32; TILE]; TILE];
            if !self.product(a, stride, b, &mut sums) {
                return false;
            }
            for (i, sum) in sum.iter_mut().enumerate() {
                // SAFETY: a row of `sums` holds 16 i32; unaligned load.
                let c = unsafe { _mm512_loadu_si512(sums[i].as_ptr().cast()) };
                *sum = scaled(c, scale[i], offset[i], ys, *sum);
            }
            true
        }
    }

    /// `sum + scale * acc + offset * ys`: one weight row's exact sums `acc`, scaled, with its
    /// offset times the vectors' sums `ys`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(crate) fn scaled(acc: __m512i, scale: f32, offset: f32, ys: __m512, sum: __m512) -> __m512 {
        let sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), _mm512_set1_ps(scale), sum);
        _mm512_fmadd_ps(ys, _mm512_set1_ps(offset), sum)
    }

    /// 16 lanes from `x`.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,fma,f16c")]
    fn load(x: &[f32; TILE]) -> __m512 {
        // SAFETY: `x` holds 16 f32; unaligned load.
        unsafe { _mm512_loadu_ps(x.as_ptr()) }
    }

    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(super) fn product<F: TileFormat, P: TileProduct>(
        m: &KMatrix<F>,
        rows: Range<usize>,
        x: &TiledQ8K,
        mut out: Out<'_>,
        tiles: &P,
    ) {
        let n = x.len();
        let groups = match &out {
            Out::ByRow(_) => 0..x.groups(),
            Out::ByToken { tokens, .. } => tokens.start / TILE..tokens.end.div_ceil(TILE),
        };
        let subs = K_BLOCK / F::SUB;
        let mut weights = [0u8; TILE * K_BLOCK];
        // Blocks of an interleaved matrix, gathered: a group's 16 rows, or one row (no
        // format's block is longer than 256 bytes).
        let mut gathered = [0u8; TILE * K_BLOCK];
        let mut one = [0u8; K_BLOCK];
        let mut row_scales = [(0f32, 0f32); TILE];
        // Per sub-block and weight row: the scale and the offset.
        let mut scale = [[0f32; TILE]; TILE];
        let mut offset = [[0f32; TILE]; TILE];
        let mut acc = vec![[[0f32; TILE]; TILE]; groups.len()];
        let mut r0 = rows.start;
        while r0 < rows.end {
            let live = (rows.end - r0).min(TILE);
            acc.fill([[0.0; TILE]; TILE]);
            // Interleaved rows that make one whole group are gathered 16 at a time.
            let group = m
                .groups()
                .filter(|_| r0.is_multiple_of(TILE) && live == TILE && TILE == GROUP);
            for b in 0..x.blocks() {
                let sixteen = &mut gathered[..TILE * F::BLOCK_BYTES];
                let whole = group.is_some_and(|groups| {
                    // Stored one after the other: ask for the group's block after next.
                    let len = group_bytes(F::BLOCK_BYTES);
                    let blocks = groups.group(r0 / TILE);
                    prefetch(blocks.as_ptr().wrapping_add((b + 2) * len), len);
                    groups.blocks_into(r0 / TILE, b, sixteen)
                });
                for i in 0..TILE {
                    let w = &mut weights[i * K_BLOCK..(i + 1) * K_BLOCK];
                    let block = if whole {
                        gathered.get(i * F::BLOCK_BYTES..(i + 1) * F::BLOCK_BYTES)
                    } else {
                        (i < live)
                            .then(|| m.block(r0 + i, b, &mut one[..F::BLOCK_BYTES]))
                            .flatten()
                    };
                    if let Some(block) = block.filter(|_| m.groups().is_none()) {
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
                for (g, acc) in groups.clone().zip(acc.iter_mut()) {
                    let Some(y) = x.block(g, b) else {
                        continue;
                    };
                    let by = if F::SUB == 16 { y.sums16 } else { y.sums32 };
                    let mut sum = [_mm512_setzero_ps(); TILE];
                    for s in 0..subs {
                        let slice = s * F::SUB / 16 * SLICE_BYTES;
                        let ys = by.get(s).map_or(_mm512_setzero_ps(), |v| load(v));
                        // SAFETY: `tiles` exists, so the CPU has the features; the slices hold
                        // the 16 rows and the activations whatever `s` is.
                        let done = unsafe {
                            tiles.accumulate(
                                &weights[F::SUB * s..],
                                K_BLOCK,
                                &y.quants[slice..],
                                &scale[s],
                                &offset[s],
                                ys,
                                &mut sum,
                            )
                        };
                        debug_assert!(done);
                    }
                    let dy = load(y.d);
                    for (acc, sum) in acc.iter_mut().zip(sum) {
                        let a = _mm512_fmadd_ps(sum, dy, load(acc));
                        // SAFETY: `acc` holds 16 f32; unaligned store.
                        unsafe { _mm512_storeu_ps(acc.as_mut_ptr(), a) };
                    }
                }
            }
            match &mut out {
                Out::ByRow(out) => {
                    let done = &mut out[(r0 - rows.start) * n..(r0 - rows.start + live) * n];
                    for (i, o) in done.chunks_exact_mut(n).enumerate() {
                        for (t, o) in o.iter_mut().enumerate() {
                            *o = acc[t / TILE][i][t % TILE];
                        }
                    }
                }
                Out::ByToken {
                    out,
                    stride,
                    tokens,
                } => {
                    let first = groups.start * TILE;
                    for t in tokens.clone() {
                        let at = (t - tokens.start) * *stride + r0 - rows.start;
                        let lane = &acc[(t - first) / TILE];
                        for (o, row) in out[at..at + live].iter_mut().zip(lane) {
                            *o = row[(t - first) % TILE];
                        }
                    }
                }
            }
            r0 += live;
        }
    }
}
