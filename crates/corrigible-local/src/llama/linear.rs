//! A linear layer, possibly several stacked (query/key/value, gate/up), over plain slices.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};

use std::ops::Range;

use super::parallel::for_each_piece;
use super::q4::Q4Matrix;
use super::q8::{Q8Matrix, Q8Vectors};

/// One or several weight matrices sharing an input; the outputs are concatenated.
pub enum Linear {
    /// Q8_0 weights run by this crate's kernel, the parts' rows stacked in one matrix.
    Q8(Q8Matrix),
    /// Q4_1 weights run by this crate's kernel, the parts' rows stacked in one matrix.
    Q4(Q4Matrix),
    /// Other formats, run by candle one part at a time.
    Candle {
        /// The matrices, each with its output width.
        parts: Vec<(QMatMul, usize)>,
        /// Input width.
        cols: usize,
    },
}

/// Reusable buffers of [`Linear::forward`].
#[derive(Default)]
pub struct Scratch {
    quantized: Q8Vectors,
    by_row: Vec<f32>,
}

fn to_candle_err(e: impl std::error::Error + Send + Sync + 'static) -> candle_core::Error {
    candle_core::Error::wrap(e)
}

impl Linear {
    /// Builds the layer from `parts` (each `(out, in)` with one `in`), stacked in order.
    pub fn new(parts: Vec<QTensor>) -> Result<Self> {
        let mut dims = Vec::with_capacity(parts.len());
        for p in &parts {
            let (rows, cols) = p.shape().dims2()?;
            dims.push((rows, cols));
        }
        let cols = dims.first().map_or(0, |d| d.1);
        if dims.iter().any(|d| d.1 != cols) {
            candle_core::bail!("stacked matrices of different widths: {dims:?}");
        }
        // Parts are stacked by groups of four rows.
        let stackable = dims.iter().rev().skip(1).all(|d| d.0.is_multiple_of(4));
        if stackable && parts.iter().all(|p| p.dtype() == GgmlDType::Q8_0) {
            let mut matrices = Vec::with_capacity(parts.len());
            for (p, (rows, cols)) in parts.iter().zip(&dims) {
                matrices
                    .push(Q8Matrix::from_ggml(&p.data()?, *rows, *cols).map_err(to_candle_err)?);
            }
            return Ok(Linear::Q8(
                Q8Matrix::concat(matrices).map_err(to_candle_err)?,
            ));
        }
        if stackable && parts.iter().all(|p| p.dtype() == GgmlDType::Q4_1) {
            let mut matrices = Vec::with_capacity(parts.len());
            for (p, (rows, cols)) in parts.iter().zip(&dims) {
                matrices
                    .push(Q4Matrix::from_ggml(&p.data()?, *rows, *cols).map_err(to_candle_err)?);
            }
            return Ok(Linear::Q4(
                Q4Matrix::concat(matrices).map_err(to_candle_err)?,
            ));
        }
        let mut out = Vec::with_capacity(parts.len());
        for (p, (rows, _)) in parts.into_iter().zip(dims) {
            out.push((QMatMul::from_qtensor(p)?, rows));
        }
        Ok(Linear::Candle { parts: out, cols })
    }

    /// Output width (all parts).
    pub fn rows(&self) -> usize {
        match self {
            Linear::Q8(m) => m.rows(),
            Linear::Q4(m) => m.rows(),
            Linear::Candle { parts, .. } => parts.iter().map(|p| p.1).sum(),
        }
    }

    /// Input width.
    pub fn cols(&self) -> usize {
        match self {
            Linear::Q8(m) => m.cols(),
            Linear::Q4(m) => m.cols(),
            Linear::Candle { cols, .. } => *cols,
        }
    }

    /// Dequantizes row `r` into `out` (`cols` values) when the weights are Q8_0 and the shapes
    /// agree; returns whether it did.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) -> bool {
        match self {
            Linear::Q8(m) => m.dequantize_row(r, out),
            Linear::Q4(_) | Linear::Candle { .. } => false,
        }
    }

    /// Multiplies the `seq` input vectors of `x` (`seq * cols` values) into `out`, resized to
    /// `seq * rows` values, one output vector after the other.
    pub fn forward(
        &self,
        x: &[f32],
        seq: usize,
        scratch: &mut Scratch,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        let (rows, cols) = (self.rows(), self.cols());
        if x.len() != seq * cols {
            candle_core::bail!("linear input of {} values, expected {seq}x{cols}", x.len());
        }
        out.clear();
        out.resize(seq * rows, 0.0);
        match self {
            Linear::Q8(m) => quantized_forward(x, seq, rows, cols, scratch, out, |r, q, o| {
                m.dot_rows(r, q, o)
            })?,
            Linear::Q4(m) => quantized_forward(x, seq, rows, cols, scratch, out, |r, q, o| {
                m.dot_rows(r, q, o)
            })?,
            Linear::Candle { parts, .. } => {
                let input = Tensor::from_slice(x, (seq, cols), &Device::Cpu)?;
                let mut offset = 0;
                for (mm, width) in parts {
                    let y: Vec<Vec<f32>> = mm.forward(&input)?.to_vec2()?;
                    for (t, row) in y.iter().enumerate() {
                        out[t * rows + offset..t * rows + offset + width].copy_from_slice(row);
                    }
                    offset += width;
                }
            }
        }
        Ok(())
    }
}

/// [`Linear::forward`] for this crate's kernels: quantizes `x`, runs `dot_rows` over pieces of
/// the rows on every thread, and transposes the by-row result into `out` (already sized).
fn quantized_forward(
    x: &[f32],
    seq: usize,
    rows: usize,
    cols: usize,
    scratch: &mut Scratch,
    out: &mut [f32],
    dot_rows: impl Fn(Range<usize>, &Q8Vectors, &mut [f32]) + Sync,
) -> Result<()> {
    scratch.quantized.quantize(x, cols).map_err(to_candle_err)?;
    let q = &scratch.quantized;
    if seq == 1 {
        for_each_piece(out, rows, 1, 4, |items, piece| dot_rows(items, q, piece));
        return Ok(());
    }
    scratch.by_row.clear();
    scratch.by_row.resize(seq * rows, 0.0);
    for_each_piece(&mut scratch.by_row, rows, seq, 4, |items, piece| {
        dot_rows(items, q, piece)
    });
    for (r, row) in scratch.by_row.chunks_exact(seq).enumerate() {
        for (t, v) in row.iter().enumerate() {
            out[t * rows + r] = *v;
        }
    }
    Ok(())
}
