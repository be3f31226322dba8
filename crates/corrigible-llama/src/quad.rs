//! Weight matrices stored by groups of four rows, block by block: a block of four consecutive
//! rows (a quad) is contiguous, so a kernel reads four rows as one sequential stream.

use std::ops::Range;

use super::q8::Q8Vectors;

/// Values per quantization block.
pub const BLOCK: usize = 32;

/// One block of four consecutive rows in one quantization format.
pub trait Quad: Copy {
    /// The format's name, for errors.
    const FORMAT: &'static str;
    /// Bytes of one GGML block of one row.
    const BLOCK_BYTES: usize;
    /// Four rows of zeros (padding of the last group).
    const EMPTY: Self;
    /// Stores `block`, one GGML block of `BLOCK_BYTES` bytes, as row `k` (0..4) of the quad.
    fn set_row(&mut self, k: usize, block: &[u8]);
}

/// Why a matrix (or a set of activation vectors) could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MatrixError {
    /// The row length is not a whole number of blocks.
    #[error("row length {0} is not a multiple of {BLOCK}")]
    RowLength(usize),
    /// The row length is not a whole number of K-quant blocks.
    #[error("row length {0} is not a multiple of 256")]
    KRowLength(usize),
    /// The raw data does not hold `rows` rows of `cols` values.
    #[error("{got} bytes of {format} data for a {rows}x{cols} matrix")]
    DataSize {
        /// The data's format.
        format: &'static str,
        /// Bytes given.
        got: usize,
        /// Rows expected.
        rows: usize,
        /// Values per row expected.
        cols: usize,
    },
}

/// A weight matrix of `rows` rows of `cols` values, stored by groups of four rows (the last
/// group padded with zero rows).
#[derive(Debug, Clone)]
pub struct QuadMatrix<Q> {
    rows: usize,
    cols: usize,
    /// Group after group, each `cols / 32` quads.
    quads: Vec<Q>,
}

impl<Q: Quad> QuadMatrix<Q> {
    /// Reads GGML blocks (`rows * cols / 32` blocks, row-major).
    pub fn from_ggml(data: &[u8], rows: usize, cols: usize) -> Result<Self, MatrixError> {
        if cols == 0 || !cols.is_multiple_of(BLOCK) {
            return Err(MatrixError::RowLength(cols));
        }
        let nb = cols / BLOCK;
        if data.len() != rows * nb * Q::BLOCK_BYTES {
            return Err(MatrixError::DataSize {
                format: Q::FORMAT,
                got: data.len(),
                rows,
                cols,
            });
        }
        let mut quads = vec![Q::EMPTY; rows.div_ceil(4) * nb];
        for (i, block) in data.chunks_exact(Q::BLOCK_BYTES).enumerate() {
            let (r, b) = (i / nb, i % nb);
            quads[(r / 4) * nb + b].set_row(r % 4, block);
        }
        Ok(Self { rows, cols, quads })
    }

    /// Rows (outputs).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values per row (inputs).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Whether rows `rows` times every vector of `x` fit `out`: `x` of this width, `rows`
    /// in range and starting a group of four, `out` of `rows.len() * x.len()` values.
    pub(super) fn fits(&self, rows: &Range<usize>, x: &Q8Vectors, out: &[f32]) -> bool {
        x.cols() == self.cols
            && rows.start.is_multiple_of(4)
            && rows.start <= rows.end
            && rows.end <= self.rows
            && out.len() == rows.len() * x.len()
    }

    /// The quads of group `g` (rows `4g..4g + 4`).
    pub(super) fn group(&self, g: usize) -> &[Q] {
        let nb = self.cols / BLOCK;
        self.quads.get(g * nb..(g + 1) * nb).unwrap_or(&[])
    }
}
