//! Q8_K activations rearranged for AMX tile products: vectors in groups of 16, and within a
//! group, for every run of 16 values, four rows of 64 bytes that hold four consecutive values
//! of each of the 16 vectors. The scales and the sums by 16 and by 32 are kept as f32, one
//! lane per vector, so that the kernels scale 16 vectors at a time.

use super::amx::TILE;
use super::parallel::for_each_piece;
use super::q8k::{K_BLOCK, Q8KVectors};

/// Bytes of one run of 16 values of 16 vectors.
pub(crate) const SLICE_BYTES: usize = 16 * TILE;

/// Runs of 16 values per block.
const SLICES: usize = K_BLOCK / 16;

/// [`Q8KVectors`] laid out for tile products; vectors past the last of a group are zero.
#[derive(Debug, Clone, Default)]
pub(crate) struct TiledQ8K {
    vectors: usize,
    blocks: usize,
    /// Per group and block: 16 slices of [`SLICE_BYTES`].
    quants: Vec<i8>,
    /// Per group and block: the 16 vectors' scales.
    d: Vec<[f32; TILE]>,
    /// Per group and block: 16 sums by 16, each over the 16 vectors.
    sums16: Vec<[f32; TILE]>,
    /// Per group and block: 8 sums by 32, each over the 16 vectors.
    sums32: Vec<[f32; TILE]>,
}

/// One group's block, as the kernels read it.
pub(crate) struct TiledBlock<'a> {
    /// 16 slices of [`SLICE_BYTES`]; slice `c` holds values `16c .. 16c + 16`.
    pub quants: &'a [i8],
    /// Each vector's scale.
    pub d: &'a [f32; TILE],
    /// Sums of values `16c .. 16c + 16`, for `c` in 0..16.
    pub sums16: &'a [[f32; TILE]],
    /// Sums of values `32s .. 32s + 32`, for `s` in 0..8.
    pub sums32: &'a [[f32; TILE]],
}

impl TiledQ8K {
    /// The tiled form of `x`.
    pub(crate) fn new(x: &Q8KVectors) -> Self {
        let n = x.len();
        let blocks = x.cols() / K_BLOCK;
        let groups = n.div_ceil(TILE);
        let mut t = TiledQ8K {
            vectors: n,
            blocks,
            quants: vec![0; groups * blocks * SLICES * SLICE_BYTES],
            d: vec![[0.0; TILE]; groups * blocks],
            sums16: vec![[0.0; TILE]; groups * blocks * SLICES],
            sums32: vec![[0.0; TILE]; groups * blocks * 8],
        };
        // One part per group of 16 vectors, laid out on every thread.
        let mut parts: Vec<_> = t
            .quants
            .chunks_exact_mut(blocks * SLICES * SLICE_BYTES)
            .zip(t.d.chunks_exact_mut(blocks))
            .zip(
                t.sums16
                    .chunks_exact_mut(blocks * SLICES)
                    .zip(t.sums32.chunks_exact_mut(blocks * 8)),
            )
            .enumerate()
            .collect();
        for_each_piece(&mut parts, groups, 1, 1, |_, parts| {
            for (g, ((quants, d), (sums16, sums32))) in parts {
                for v in 0..TILE.min(n - *g * TILE) {
                    let a = x.vector(*g * TILE + v);
                    for b in 0..blocks.min(a.blocks()) {
                        d[b][v] = a.d[b];
                        let q = &a.q[b * K_BLOCK..(b + 1) * K_BLOCK];
                        let out =
                            &mut quants[b * SLICES * SLICE_BYTES..(b + 1) * SLICES * SLICE_BYTES];
                        for (c, (run, slice)) in q
                            .chunks_exact(16)
                            .zip(out.chunks_exact_mut(SLICE_BYTES))
                            .enumerate()
                        {
                            for (row, four) in run.chunks_exact(4).enumerate() {
                                slice[row * 4 * TILE + 4 * v..row * 4 * TILE + 4 * v + 4]
                                    .copy_from_slice(four);
                            }
                            sums16[b * SLICES + c][v] = a.sums16[b * SLICES + c] as f32;
                        }
                        for s in 0..8 {
                            sums32[b * 8 + s][v] = a.sums32[b * 8 + s] as f32;
                        }
                    }
                }
            }
        });
        drop(parts);
        t
    }

    /// Vectors held.
    pub(crate) fn len(&self) -> usize {
        self.vectors
    }

    /// Groups of 16 vectors.
    pub(crate) fn groups(&self) -> usize {
        self.vectors.div_ceil(TILE)
    }

    /// Blocks per vector.
    pub(crate) fn blocks(&self) -> usize {
        self.blocks
    }

    /// Block `b` of group `g` (`None` past the end).
    pub(crate) fn block(&self, g: usize, b: usize) -> Option<TiledBlock<'_>> {
        if b >= self.blocks || g >= self.groups() {
            return None;
        }
        let gb = g * self.blocks + b;
        Some(TiledBlock {
            quants: self
                .quants
                .get(gb * SLICES * SLICE_BYTES..(gb + 1) * SLICES * SLICE_BYTES)?,
            d: self.d.get(gb)?,
            sums16: self.sums16.get(gb * SLICES..(gb + 1) * SLICES)?,
            sums32: self.sums32.get(gb * 8..(gb + 1) * 8)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::kmatrix::tests::vectors;
    use super::*;

    #[test]
    fn every_value_lands_in_its_slice_row_and_lane() {
        let x = vectors(19, 512, 3);
        let t = TiledQ8K::new(&x);
        assert_eq!((t.len(), t.groups(), t.blocks()), (19, 2, 2));
        for i in 0..32 {
            let (g, v) = (i / TILE, i % TILE);
            for b in 0..2 {
                let block = t.block(g, b).expect("block");
                for j in 0..K_BLOCK {
                    let (c, row, byte) = (j / 16, j % 16 / 4, j % 4);
                    let got = block.quants[c * SLICE_BYTES + row * 4 * TILE + 4 * v + byte];
                    let want = if i < 19 {
                        x.vector(i).q[b * K_BLOCK + j]
                    } else {
                        0
                    };
                    assert_eq!(got, want, "vector {i} block {b} value {j}");
                }
                let want_d = if i < 19 { x.vector(i).d[b] } else { 0.0 };
                assert_eq!(block.d[v], want_d);
                if i < 19 {
                    let a = x.vector(i);
                    assert_eq!(block.sums16[5][v], a.sums16[b * 16 + 5] as f32);
                    assert_eq!(block.sums32[7][v], a.sums32[b * 8 + 7] as f32);
                }
            }
        }
        assert!(t.block(2, 0).is_none() && t.block(0, 2).is_none());
    }
}
