//! Products of interleaved groups with many activation vectors on AMX tiles, for pre-fill.
//!
//! A tile product multiplies 16 rows of signed bytes by 16 columns of unsigned bytes, each
//! 64-byte row of the second operand holding four consecutive values of each column. A word
//! of a group block is such a row: four bytes of each of 16 weight rows. So the weights
//! enter as they are stored, their nibbles or six-bit values split out a whole 64-byte word
//! at a time ([`GroupTiles::operands`]), and the activations are read in place, 16 vectors
//! at once, `cols` bytes apart. Each product gives 16 vectors by 16 weight rows, one vector
//! per row of sums with one lane per weight row, so that a weight row's factors are one
//! register for every vector, and a vector's 16 outputs are stored together.
//!
//! Q4_K's operands are its nibbles times their sub-block's six-bit scale, split in two
//! because the products must stay below 256: times the scale's low four bits, and times its
//! top two. The products of a whole block then add up on the tiles, two sums per 16 vectors
//! and 16 rows instead of one per sub-block of 32, and the arithmetic is the decode group
//! kernel's (`super::q4k`), lane for lane: the same exact sums, scaled in the same order, so
//! that pre-fill and decode give the same bits. Q6_K's operands are its values less 32,
//! signed (`tdpbssd`), so that its sums need no offset; its eight-bit scales leave no room
//! to fold them in, so each sub-block of 16 is a product of its own, scaled.

use std::ops::Range;

use super::{GROUP, Groups, group_bytes};
use crate::amx::{Amx, STEPS, TILE};
use crate::ktiles::TileFormat;
use crate::q8k::{K_BLOCK, Q8KVectors};

/// The weights of one group block as tile operands: sub-block `s`'s `SUB / 4` rows of 64
/// bytes from `s * 16 * SUB` on; for a format of unsigned operands, two such runs, the values
/// times the low and the high bits of their sub-block's scale ([`GroupTiles::SIGNED`]).
pub(crate) type Operands = [u8; 2 * TILE * K_BLOCK];

/// Per weight row, the factors of a group block's exact sums.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Factors {
    /// Signed operands: per sub-block, the scale of the integer sums.
    pub(crate) scale: [[f32; GROUP]; TILE],
    /// Unsigned operands: the block's scale of the sums.
    pub(crate) d: [f32; GROUP],
    /// Unsigned operands: the block's scale of the minimums' sum.
    pub(crate) dmin: [f32; GROUP],
    /// Unsigned operands: per sub-block, the minimum, which multiplies the activations' sum
    /// over the sub-block.
    pub(crate) min: [[f32; GROUP]; TILE],
}

/// Groups of 16 weight rows computed before their outputs are written.
const ROW_GROUPS: usize = 4;

/// A K-quant format whose group blocks split into tile operands.
pub(crate) trait GroupTiles: TileFormat {
    /// Whether the operands are signed bytes, with no offsets (Q6_K's values less 32), one
    /// product per sub-block scaled by [`Factors::scale`]; or unsigned ones (Q4_K's), each
    /// value times the low four bits of its sub-block's scale and, in a second run, times the
    /// bits above them, so that a whole block is summed exactly on the tiles in two sums,
    /// the second worth 16 times the first, and the minimums' sums are added apart.
    const SIGNED: bool;

    /// Writes the operands and the factors of the group block at the start of `block`;
    /// false, writing nothing, when `block` is shorter than a group block.
    fn operands(amx: Amx, block: &[u8], tiles: &mut Operands, factors: &mut Factors) -> bool;
}

/// Rows `rows` (whole groups) of `groups` times the vectors `tokens` of `x`: `write(t, r,
/// dots)` gets rows `r .. r + 16` times vector `t`, once for each. False when the CPU offers
/// no tiles or the shapes disagree, both found before anything is written, so that the
/// caller's other kernels run.
pub(crate) fn dot<F: GroupTiles>(
    groups: &Groups,
    rows: Range<usize>,
    x: &Q8KVectors,
    tokens: Range<usize>,
    mut write: impl FnMut(usize, usize, &[f32; GROUP]),
) -> bool {
    let cols = x.cols();
    let blocks = cols / K_BLOCK;
    if !rows.start.is_multiple_of(GROUP)
        || !rows.end.is_multiple_of(GROUP)
        || rows.start > rows.end
        || rows.end > groups.rows()
        || blocks != groups.blocks
        || groups.block_bytes != F::BLOCK_BYTES
        || tokens.is_empty()
        || tokens.end > x.len()
        || K_BLOCK / F::SUB > TILE
    {
        return false;
    }
    let Some(amx) = Amx::detect() else {
        return false;
    };
    let k = if F::SIGNED { F::SUB } else { K_BLOCK / STEPS };
    let Some(tiles) = amx.tiles(k) else {
        return false;
    };
    let subs = K_BLOCK / F::SUB;
    let n = tokens.len();
    let vector_groups = n.div_ceil(TILE);
    // Per group of vectors, block and vector: the activations' scale, and their sums over
    // each sub-block.
    let mut dy = vec![0f32; vector_groups * blocks * TILE];
    let mut ys = vec![0f32; vector_groups * blocks * TILE * subs];
    for (i, t) in tokens.clone().enumerate() {
        let (tg, v) = (i / TILE, i % TILE);
        let a = x.vector(t);
        for b in 0..blocks.min(a.blocks()) {
            dy[(tg * blocks + b) * TILE + v] = a.d[b];
            let sums = if F::SUB == 16 {
                &a.sums16[16 * b..16 * b + 16]
            } else {
                &a.sums32[8 * b..8 * b + 8]
            };
            let at = ((tg * blocks + b) * TILE + v) * subs;
            for (y, &s) in ys[at..at + subs].iter_mut().zip(sums) {
                *y = f32::from(s);
            }
        }
    }
    let quants = x.quants();
    let group_len = group_bytes(F::BLOCK_BYTES);
    let mut operands = [0u8; 2 * TILE * K_BLOCK];
    let mut factors = Factors::default();
    // The last vectors, when fewer than 16, one block at a time with zeros after them.
    let mut pad = [0i8; TILE * K_BLOCK];
    // Sums per group of vectors and group of rows, for a few groups of rows at a time:
    // written together, a vector's outputs fill whole neighbouring cache lines.
    let mut acc = vec![[[0f32; GROUP]; TILE]; vector_groups * ROW_GROUPS];
    let row_groups = rows.start / GROUP..rows.end / GROUP;
    for first in row_groups.clone().step_by(ROW_GROUPS) {
        let these = first..(first + ROW_GROUPS).min(row_groups.end);
        acc.fill([[0.0; GROUP]; TILE]);
        for g in these.clone() {
            let group = groups.group(g);
            for b in 0..blocks {
                let Some(block) = group.get(b * group_len..(b + 1) * group_len) else {
                    return false;
                };
                if !F::operands(amx, block, &mut operands, &mut factors) {
                    return false;
                }
                for tg in 0..vector_groups {
                    let t0 = tokens.start + TILE * tg;
                    let live = (tokens.end - t0).min(TILE);
                    let (a, stride) = if live == TILE {
                        (&quants[t0 * cols + b * K_BLOCK..], cols)
                    } else {
                        for (v, row) in pad.chunks_exact_mut(K_BLOCK).enumerate() {
                            match x.vector(t0 + v).q.get(b * K_BLOCK..(b + 1) * K_BLOCK) {
                                Some(q) if v < live => row.copy_from_slice(q),
                                _ => row.fill(0),
                            }
                        }
                        (&pad[..], K_BLOCK)
                    };
                    let at = (tg * blocks + b) * TILE;
                    let block = Block {
                        a,
                        stride,
                        operands: &operands,
                        factors: &factors,
                        ys: &ys[at * subs..(at + TILE) * subs],
                        dy: &dy[at..at + TILE],
                        next: quants
                            .get((t0 + TILE) * cols + b * K_BLOCK..)
                            .map_or(std::ptr::null(), <[i8]>::as_ptr),
                    };
                    let acc = &mut acc[tg * ROW_GROUPS + g - first];
                    if !block.accumulate::<F>(&tiles, amx, acc) {
                        return false;
                    }
                }
            }
        }
        for (tg, sums) in acc.chunks_exact(ROW_GROUPS).enumerate() {
            let t0 = tokens.start + TILE * tg;
            for (t, v) in (t0..tokens.end).zip(0..TILE) {
                for (g, sums) in these.clone().zip(sums) {
                    write(t, g * GROUP, &sums[v]);
                }
            }
        }
    }
    true
}

/// One block of one group of weight rows and 16 vectors: what the products read.
struct Block<'a> {
    /// The vectors' quants of the block, `stride` apart.
    a: &'a [i8],
    stride: usize,
    operands: &'a Operands,
    factors: &'a Factors,
    /// Per vector, its sums over each sub-block.
    ys: &'a [f32],
    /// Per vector, its scale.
    dy: &'a [f32],
    /// Where the next 16 vectors' block starts, `stride` apart, to be asked for early: too
    /// far apart for the CPU to guess. Any address will do.
    next: *const i8,
}

impl Block<'_> {
    /// Adds the block's dot products to `acc` (by vector, one lane per weight row); false,
    /// adding nothing, when a slice is too short.
    fn accumulate<F: GroupTiles>(
        &self,
        tiles: &crate::amx::Tiles,
        _amx: Amx,
        acc: &mut [[f32; GROUP]; TILE],
    ) -> bool {
        let subs = K_BLOCK / F::SUB;
        if self.ys.len() < TILE * subs
            || self.dy.len() < TILE
            || self.a.len() < (TILE - 1) * self.stride + K_BLOCK
        {
            return false;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: an `Amx` exists only on a CPU with AVX-512 F, BW, VL, VNNI, FMA and
            // F16C; the lengths are checked above.
            #[allow(unsafe_code)]
            unsafe {
                if F::SIGNED {
                    avx512::accumulate_signed(self, tiles, F::SUB, acc)
                } else {
                    avx512::accumulate_summed(self, tiles, F::SUB, acc)
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (tiles, acc);
            false
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{Block, GROUP, K_BLOCK, TILE};
    use crate::amx::Tiles;
    use crate::kmatrix::prefetch;

    /// The products of a block of signed operands: one per sub-block, each scaled.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(super) fn accumulate_signed(
        block: &Block<'_>,
        tiles: &Tiles,
        sub: usize,
        acc: &mut [[f32; GROUP]; TILE],
    ) -> bool {
        let subs = K_BLOCK / sub;
        prefetch_next(block);
        let mut sum = [_mm512_setzero_ps(); TILE];
        let mut sums = [[0i32; GROUP]; TILE];
        for s in 0..subs {
            let b = &block.operands[s * TILE * sub..];
            if !tiles.product_signed::<true>(&block.a[s * sub..], block.stride, b, &mut sums) {
                return false;
            }
            // SAFETY: each row holds 16 lanes; unaligned load.
            let scale = unsafe { _mm512_loadu_ps(block.factors.scale[s].as_ptr()) };
            for (v, sum) in sum.iter_mut().enumerate() {
                // SAFETY: a row of `sums` holds 16 i32; unaligned load.
                let c = _mm512_cvtepi32_ps(unsafe { _mm512_loadu_si512(sums[v].as_ptr().cast()) });
                *sum = _mm512_fmadd_ps(c, scale, *sum);
            }
        }
        for (v, acc) in acc.iter_mut().enumerate() {
            // SAFETY: `acc` rows hold 16 f32; unaligned load and store.
            unsafe {
                let a = _mm512_fmadd_ps(
                    sum[v],
                    _mm512_set1_ps(block.dy[v]),
                    _mm512_loadu_ps(acc.as_ptr()),
                );
                _mm512_storeu_ps(acc.as_mut_ptr(), a);
            }
        }
        true
    }

    /// The products of a block of unsigned operands, summed whole on the tiles: per vector,
    /// `d * dy * Σ sc Σ q y - dmin * dy * Σ m Σ y`, rounded as the decode kernel rounds it
    /// (`super::super::q4k`), the integer sums exact and the minimums' sum exact in `f32`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")]
    pub(super) fn accumulate_summed(
        block: &Block<'_>,
        tiles: &Tiles,
        sub: usize,
        acc: &mut [[f32; GROUP]; TILE],
    ) -> bool {
        const SUBS: usize = 8;
        if K_BLOCK / sub != SUBS || block.ys.len() < TILE * SUBS {
            return false;
        }
        prefetch_next(block);
        let mut sums = [[[0i32; GROUP]; TILE]; 2];
        if !tiles.summed_pair(block.a, block.stride, block.operands, &mut sums) {
            return false;
        }
        let f = block.factors;
        // SAFETY: each row of factors holds 16 lanes; unaligned loads.
        let (d, dmin) = unsafe {
            (
                _mm512_loadu_ps(f.d.as_ptr()),
                _mm512_loadu_ps(f.dmin.as_ptr()),
            )
        };
        let ys = block.ys.chunks_exact(SUBS);
        for ((v, acc), ys) in acc.iter_mut().enumerate().zip(ys) {
            // SAFETY: rows of `sums` hold 16 i32; unaligned loads.
            let (low, high) = unsafe {
                (
                    _mm512_loadu_si512(sums[0][v].as_ptr().cast()),
                    _mm512_loadu_si512(sums[1][v].as_ptr().cast()),
                )
            };
            let t = _mm512_cvtepi32_ps(_mm512_add_epi32(low, _mm512_slli_epi32::<4>(high)));
            let mut m = _mm512_setzero_ps();
            for (min, &y) in f.min.iter().zip(ys) {
                // SAFETY: as above.
                let min = unsafe { _mm512_loadu_ps(min.as_ptr()) };
                m = _mm512_fmadd_ps(min, _mm512_set1_ps(y), m);
            }
            let dy = _mm512_set1_ps(block.dy[v]);
            // SAFETY: `acc` rows hold 16 f32; unaligned load and store.
            unsafe {
                let a = _mm512_fmadd_ps(t, _mm512_mul_ps(d, dy), _mm512_loadu_ps(acc.as_ptr()));
                let a = _mm512_fnmadd_ps(m, _mm512_mul_ps(dmin, dy), a);
                _mm512_storeu_ps(acc.as_mut_ptr(), a);
            }
        }
        true
    }

    /// Asks for the next 16 vectors' block of activations.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn prefetch_next(block: &Block<'_>) {
        for v in 0..TILE {
            prefetch(block.next.wrapping_add(v * block.stride).cast(), K_BLOCK);
        }
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::GgmlDType;

    use super::*;
    use crate::kmatrix::tests::{candle_dequantize, random_blocks, reference, vectors};
    use crate::kmatrix::{KFormat, KMatrix};
    use crate::ktiles;
    use crate::mapped::Bytes;
    use crate::q4k::Q4K;
    use crate::q6k::Q6K;

    /// The kernel on interleaved rows against the row-gathering tile kernel on the same rows
    /// stored by rows, against the group kernels (bit for bit, for unsigned operands) and
    /// against candle's dequantization.
    fn agrees<F: GroupTiles + super::super::GroupKernel>(
        dtype: GgmlDType,
        f16_at: &[usize],
        seed: u64,
    ) {
        if Amx::detect().is_none() {
            eprintln!("skipped: this CPU or kernel offers no AMX tiles");
            return;
        }
        // Five groups of rows: more than are summed before being written.
        let (rows, cols) = (5 * GROUP, 768);
        let bytes = random_blocks(rows * cols / K_BLOCK, F::BLOCK_BYTES, f16_at, seed);
        let dense = candle_dequantize(&bytes, dtype, rows * cols);
        let by_rows = KMatrix::<F>::new(Bytes::owned(bytes.clone()), rows, cols).expect("matrix");
        let groups_m = KMatrix::<F>::new(Bytes::owned(bytes), rows, cols)
            .expect("matrix")
            .interleaved();
        let groups = groups_m.groups().expect("interleaved");
        for n in [8, 16, 19, 40] {
            let x = vectors(n, cols, seed + n as u64);
            // Row-major by weight row, as `ktiles::dot_rows` writes.
            let mut ours = vec![f32::NAN; rows * n];
            assert!(dot::<F>(groups, 0..rows, &x, 0..n, |t, r, dots| {
                for (k, &dot) in dots.iter().enumerate() {
                    ours[(r + k) * n + t] = dot;
                }
            }));
            let mut gathered = vec![0f32; rows * n];
            assert!(ktiles::dot_rows(&by_rows, 0..rows, &x, &mut gathered));
            let mut decoded = vec![0f32; rows * n];
            super::super::dot_rows::<F>(groups, 0..rows, &x, &mut decoded);
            for r in 0..rows {
                for t in 0..n {
                    let (a, b) = (ours[r * n + t], gathered[r * n + t]);
                    let (want, size) = reference(&dense, cols, &x, r, t);
                    // The same exact sums, scaled in another order: within the rounding.
                    let tol = 1e-6 * size.max(1e-3);
                    assert!((a as f64 - b as f64).abs() <= tol, "row {r} vector {t}");
                    if !F::SIGNED {
                        // Rounded as the decode kernels round them.
                        let c = decoded[r * n + t];
                        assert_eq!(a.to_bits(), c.to_bits(), "row {r} vector {t}: {a} vs {c}");
                    }
                    let got = ours[r * n + t] as f64;
                    assert!(
                        (got - want).abs() <= 1e-5 * size.max(1e-3),
                        "row {r} vector {t}"
                    );
                }
            }
            // The last groups of rows, for the vectors from 16 on.
            if n > TILE {
                let mut seen = vec![false; (rows - GROUP) * (n - TILE)];
                assert!(dot::<F>(groups, GROUP..rows, &x, TILE..n, |t, r, dots| {
                    for (k, &dot) in dots.iter().enumerate() {
                        assert_eq!(dot.to_bits(), ours[(r + k) * n + t].to_bits());
                        seen[(r + k - GROUP) * (n - TILE) + t - TILE] = true;
                    }
                }));
                assert!(seen.iter().all(|&s| s), "every row and vector once");
            }
        }
        let x = vectors(19, cols, seed);
        let never = |_: usize, _: usize, _: &[f32; GROUP]| panic!("written");
        assert!(!dot::<F>(groups, 0..rows - 1, &x, 0..19, never));
        assert!(!dot::<F>(groups, 8..rows, &x, 0..19, never));
        assert!(!dot::<F>(groups, 0..rows + GROUP, &x, 0..19, never));
        assert!(!dot::<F>(groups, 0..rows, &x, 0..20, never));
        assert!(!dot::<F>(groups, 0..rows, &x, 3..3, never));
        assert!(!dot::<F>(
            groups,
            0..rows,
            &vectors(19, 512, 1),
            0..19,
            never
        ));
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no AMX tiles")]
    fn q4k_groups_on_tiles_give_the_gathered_rows_values() {
        agrees::<Q4K>(GgmlDType::Q4K, &[0, 2], 51);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no AMX tiles")]
    fn q6k_groups_on_tiles_give_the_gathered_rows_values() {
        agrees::<Q6K>(GgmlDType::Q6K, &[208], 52);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no AMX tiles")]
    fn extreme_blocks_do_not_saturate() {
        if Amx::detect().is_none() {
            eprintln!("skipped: this CPU or kernel offers no AMX tiles");
            return;
        }
        let (rows, cols, n) = (16, 256, 19);
        let mut x = Q8KVectors::default();
        let xs: Vec<f32> = (0..n * cols)
            .map(|i| if i % 2 == 0 { -1.0 } else { 1.0 })
            .collect();
        x.quantize(&xs, cols).expect("quantize");
        let mut q4 = vec![0xFFu8; rows * Q4K::BLOCK_BYTES];
        for block in q4.chunks_exact_mut(Q4K::BLOCK_BYTES) {
            block[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
            block[2..4].copy_from_slice(&half::f16::from_f32(-0.25).to_le_bytes());
        }
        let mut q6 = vec![0xFFu8; rows * Q6K::BLOCK_BYTES];
        for block in q6.chunks_exact_mut(Q6K::BLOCK_BYTES) {
            // Every scale -128, `d` 0.5.
            block[192..208].fill(0x80);
            block[208..210].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
        }
        for (bytes, dtype) in [(q4, GgmlDType::Q4K), (q6, GgmlDType::Q6K)] {
            let dense = candle_dequantize(&bytes, dtype, rows * cols);
            let mut out = vec![0f32; rows * n];
            let mut write = |t: usize, r: usize, dots: &[f32; GROUP]| {
                for (k, &dot) in dots.iter().enumerate() {
                    out[(r + k) * n + t] = dot;
                }
            };
            let done = if dtype == GgmlDType::Q4K {
                let m = KMatrix::<Q4K>::new(Bytes::owned(bytes), rows, cols)
                    .expect("matrix")
                    .interleaved();
                dot::<Q4K>(m.groups().expect("groups"), 0..rows, &x, 0..n, &mut write)
            } else {
                let m = KMatrix::<Q6K>::new(Bytes::owned(bytes), rows, cols)
                    .expect("matrix")
                    .interleaved();
                dot::<Q6K>(m.groups().expect("groups"), 0..rows, &x, 0..n, &mut write)
            };
            assert!(done);
            for r in 0..rows {
                for t in 0..n {
                    let (want, size) = reference(&dense, cols, &x, r, t);
                    let got = out[r * n + t] as f64;
                    assert!(
                        (got - want).abs() <= 1e-5 * size,
                        "{dtype:?}: {got} vs {want}"
                    );
                }
            }
        }
    }
}
