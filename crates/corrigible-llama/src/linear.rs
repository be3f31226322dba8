//! A linear layer, possibly several stacked (query/key/value, gate/up), over plain slices.

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{Device, Module, Result, Tensor};

use std::cell::RefCell;
use std::ops::Range;

use super::amx::TILE;
use super::kgroups::GROUP;
use super::ktiles;
use super::mapped::Stored;
use super::parallel::{Threads, for_each_piece, inference_threads};
use super::q4::Q4Matrix;
use super::q4k::{Q4K, Q4KMatrix};
use super::q6k::{Q6K, Q6KMatrix};
use super::q8::{Q8Matrix, Q8Vectors};
use super::q8k::Q8KVectors;

/// One weight matrix run by this crate's kernels.
pub enum Part {
    /// Q8_0, by groups of four rows.
    Q8(Q8Matrix),
    /// Q4_1, by groups of four rows.
    Q4(Q4Matrix),
    /// Q4_K, read in place from the file.
    Q4K(Q4KMatrix),
    /// Q6_K, read in place from the file.
    Q6K(Q6KMatrix),
}

impl Part {
    /// The matrix of `stored` when this crate has a kernel for its format and shape (Q8_0 and
    /// Q4_1 rows are regrouped by four, K-quant rows stay in the file).
    pub fn from_stored(stored: &Stored) -> Option<Self> {
        let [cols, rows] = stored.dims[..] else {
            return None;
        };
        let bytes = &stored.bytes;
        match stored.dtype {
            GgmlDType::Q8_0 => Q8Matrix::from_ggml(bytes, rows, cols).ok().map(Part::Q8),
            GgmlDType::Q4_1 => Q4Matrix::from_ggml(bytes, rows, cols).ok().map(Part::Q4),
            GgmlDType::Q4K => Q4KMatrix::new(bytes.clone(), rows, cols)
                .ok()
                .map(|m| Part::Q4K(m.interleaved())),
            GgmlDType::Q6K => Q6KMatrix::new(bytes.clone(), rows, cols)
                .ok()
                .map(|m| Part::Q6K(m.interleaved())),
            _ => None,
        }
    }

    /// The matrix of a candle tensor in Q8_0 or Q4_1 (weights re-quantized at load).
    fn from_qtensor(t: &QTensor) -> Result<Option<Self>> {
        let (rows, cols) = t.shape().dims2()?;
        Ok(match t.dtype() {
            GgmlDType::Q8_0 => Some(Part::Q8(
                Q8Matrix::from_ggml(&t.data()?, rows, cols).map_err(to_candle_err)?,
            )),
            GgmlDType::Q4_1 => Some(Part::Q4(
                Q4Matrix::from_ggml(&t.data()?, rows, cols).map_err(to_candle_err)?,
            )),
            _ => None,
        })
    }

    fn rows(&self) -> usize {
        match self {
            Part::Q8(m) => m.rows(),
            Part::Q4(m) => m.rows(),
            Part::Q4K(m) => m.rows(),
            Part::Q6K(m) => m.rows(),
        }
    }

    fn cols(&self) -> usize {
        match self {
            Part::Q8(m) => m.cols(),
            Part::Q4(m) => m.cols(),
            Part::Q4K(m) => m.cols(),
            Part::Q6K(m) => m.cols(),
        }
    }

    fn is_interleaved(&self) -> bool {
        match self {
            Part::Q4K(m) => m.is_interleaved(),
            Part::Q6K(m) => m.is_interleaved(),
            Part::Q8(_) | Part::Q4(_) => false,
        }
    }

    fn is_k(&self) -> bool {
        matches!(self, Part::Q4K(_) | Part::Q6K(_))
    }

    /// Whether the weights are the file's bytes, read in place from the mapping or
    /// interleaved from it, held once.
    fn is_from_file(&self) -> bool {
        match self {
            Part::Q4K(m) => m.is_mapped() || m.is_interleaved(),
            Part::Q6K(m) => m.is_mapped() || m.is_interleaved(),
            Part::Q8(_) | Part::Q4(_) => false,
        }
    }

    /// Whether [`Part::dot_tokens`] runs here.
    fn by_tokens(&self) -> bool {
        match self {
            Part::Q4K(_) => ktiles::available::<Q4K>(),
            Part::Q6K(_) => ktiles::available::<Q6K>(),
            Part::Q8(_) | Part::Q4(_) => false,
        }
    }

    /// Every row times the vectors `tokens`, by vector `stride` apart (`ktiles::dot_tokens`).
    fn dot_tokens(
        &self,
        tokens: Range<usize>,
        x: &Activations,
        out: &mut [f32],
        stride: usize,
    ) -> bool {
        match self {
            Part::Q4K(m) => ktiles::dot_tokens(m, tokens, &x.q8k, out, stride),
            Part::Q6K(m) => ktiles::dot_tokens(m, tokens, &x.q8k, out, stride),
            Part::Q8(_) | Part::Q4(_) => false,
        }
    }

    fn dot_rows(&self, rows: Range<usize>, x: &Activations, out: &mut [f32]) {
        match self {
            Part::Q8(m) => m.dot_rows(rows, &x.q8, out),
            Part::Q4(m) => m.dot_rows(rows, &x.q8, out),
            Part::Q4K(m) => m.dot_rows(rows, &x.q8k, out),
            Part::Q6K(m) => m.dot_rows(rows, &x.q8k, out),
        }
    }
}

/// One or several weight matrices sharing an input; the outputs are concatenated.
pub enum Linear {
    /// Matrices run by this crate's kernels, in one pass over all their rows.
    Kernels {
        /// The matrices, each but the last with a multiple of four rows.
        parts: Vec<Part>,
        /// Input width.
        cols: usize,
    },
    /// Other formats, run by candle one part at a time.
    Candle {
        /// The matrices, each with its output width.
        parts: Vec<(QMatMul, usize)>,
        /// Input width.
        cols: usize,
    },
}

/// The input vectors quantized for the kernels that need them.
#[derive(Default)]
struct Activations {
    q8: Q8Vectors,
    q8k: Q8KVectors,
}

/// Reusable buffers of [`Linear::forward`].
#[derive(Default)]
pub struct Scratch {
    quantized: Activations,
}

fn to_candle_err(e: impl std::error::Error + Send + Sync + 'static) -> candle_core::Error {
    candle_core::Error::wrap(e)
}

impl Linear {
    /// Builds the layer from `parts` (each `(out, in)` with one `in`), stacked in order.
    pub fn new(parts: Vec<QTensor>) -> Result<Self> {
        let mut kernels = Vec::with_capacity(parts.len());
        for p in &parts {
            match Part::from_qtensor(p)? {
                Some(k) => kernels.push(k),
                None => break,
            }
        }
        if kernels.len() == parts.len()
            && let Some(linear) = Self::from_parts(kernels)?
        {
            return Ok(linear);
        }
        let mut out = Vec::with_capacity(parts.len());
        let mut cols = None;
        for p in parts {
            let (rows, c) = p.shape().dims2()?;
            if *cols.get_or_insert(c) != c {
                candle_core::bail!("stacked matrices of different widths");
            }
            out.push((QMatMul::from_qtensor(p)?, rows));
        }
        Ok(Linear::Candle {
            parts: out,
            cols: cols.unwrap_or(0),
        })
    }

    /// The layer of this crate's kernels over `parts`, or `None` when they cannot be stacked:
    /// a part other than the last whose row count is not a multiple of four.
    pub fn from_parts(parts: Vec<Part>) -> Result<Option<Self>> {
        let cols = parts.first().map_or(0, Part::cols);
        if parts.iter().any(|p| p.cols() != cols) {
            candle_core::bail!("stacked matrices of different widths");
        }
        let stackable = parts
            .iter()
            .rev()
            .skip(1)
            .all(|p| p.rows().is_multiple_of(4));
        Ok(stackable.then_some(Linear::Kernels { parts, cols }))
    }

    /// Output width (all parts).
    pub fn rows(&self) -> usize {
        match self {
            Linear::Kernels { parts, .. } => parts.iter().map(Part::rows).sum(),
            Linear::Candle { parts, .. } => parts.iter().map(|p| p.1).sum(),
        }
    }

    /// Input width.
    pub fn cols(&self) -> usize {
        match self {
            Linear::Kernels { cols, .. } | Linear::Candle { cols, .. } => *cols,
        }
    }

    /// Whether every weight is the file's bytes, read in place or interleaved, held once.
    pub fn is_from_file(&self) -> bool {
        match self {
            Linear::Kernels { parts, .. } => parts.iter().all(Part::is_from_file),
            Linear::Candle { .. } => false,
        }
    }

    /// Dequantizes row `r` into `out` (`cols` values) when the layer is a single Q8_0 matrix
    /// and the shapes agree; returns whether it did.
    pub fn dequantize_row(&self, r: usize, out: &mut [f32]) -> bool {
        match self {
            Linear::Kernels { parts, .. } => match &parts[..] {
                [Part::Q8(m)] => m.dequantize_row(r, out),
                _ => false,
            },
            Linear::Candle { .. } => false,
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
        // Every kernel below writes every value: only new room is zeroed.
        out.resize(seq * rows, 0.0);
        match self {
            Linear::Kernels { parts, .. } => {
                let a = &mut scratch.quantized;
                if parts.iter().any(|p| !p.is_k()) {
                    a.q8.quantize(x, cols).map_err(to_candle_err)?;
                }
                if parts.iter().any(Part::is_k) {
                    a.q8k.quantize(x, cols).map_err(to_candle_err)?;
                }
                let a = &scratch.quantized;
                if seq >= BY_TOKENS_MIN && parts.iter().all(Part::by_tokens) {
                    by_tokens(seq, rows, parts, a, out);
                    return Ok(());
                }
                let dot_rows = |items: Range<usize>, piece: &mut [f32]| {
                    let mut first = 0;
                    for p in parts {
                        let end = first + p.rows();
                        let (from, to) = (items.start.max(first), items.end.min(end));
                        if from < to {
                            let o =
                                &mut piece[(from - items.start) * seq..(to - items.start) * seq];
                            p.dot_rows(from - first..to - first, a, o);
                        }
                        first = end;
                    }
                };
                // Pieces of whole groups where rows are interleaved (`kgroups`), so that no
                // group is computed twice and the tile kernels find their 16 rows in one.
                let align = if parts.iter().any(Part::is_interleaved) {
                    GROUP
                } else {
                    4
                };
                by_rows(Threads::shared(), seq, rows, align, out, dot_rows);
            }
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

/// Vectors from which stacked K-quant matrices on tiles split the vectors among the threads
/// (each thread reads every weight row) instead of the rows (each thread reads every vector).
/// Split by vectors, the threads write the output in its order, with no copy from a buffer;
/// with too few groups of 16 vectors, one thread would get more of them than another.
const BY_TOKENS_MIN: usize = 128;

/// Every row of `parts`, stacked, times the `seq` vectors of `x` into `out` (`seq` rows of
/// `rows` values), one share of the groups of 16 vectors per thread.
fn by_tokens(seq: usize, rows: usize, parts: &[Part], x: &Activations, out: &mut [f32]) {
    // Built here once, before the threads read it, unless every part reads the vectors in
    // place (interleaved rows on AMX tiles).
    if !parts
        .iter()
        .all(|p| p.is_interleaved() && ktiles::in_place())
    {
        x.q8k.tiled();
    }
    let share = seq.div_ceil(TILE).div_ceil(inference_threads()) * TILE;
    for_each_piece(out, seq, rows, share, |tokens, piece| {
        let mut offset = 0;
        for p in parts {
            let done = p.dot_tokens(tokens.clone(), x, &mut piece[offset..], rows);
            debug_assert!(done, "the tile kernels refused their shapes");
            offset += p.rows();
        }
    });
}

/// Runs `dot_rows` over pieces of the `rows` output rows on every thread and writes each
/// result into `out` (already sized), `seq` vectors of `rows` values.
///
/// The kernels write row by row (each row holding its `seq` values): a thread runs them on
/// [`ROWS_PER_CALL`] rows at a time into a buffer that stays in its cache, then copies the
/// values into its columns of `out`.
fn by_rows(
    threads: Threads,
    seq: usize,
    rows: usize,
    align: usize,
    out: &mut [f32],
    dot_rows: impl Fn(Range<usize>, &mut [f32]) + Sync,
) {
    if seq == 1 {
        for_each_piece(out, rows, 1, align, dot_rows);
        return;
    }
    let per_call = ROWS_PER_CALL.div_ceil(align) * align;
    threads.for_each_column_piece(out, seq, rows, align, |columns, slices| {
        BY_ROW.with_borrow_mut(|by_row| {
            for first in columns.clone().step_by(per_call) {
                let end = (first + per_call).min(columns.end);
                by_row.clear();
                by_row.resize((end - first) * seq, 0.0);
                dot_rows(first..end, by_row);
                let at = first - columns.start;
                for (t, slice) in slices.iter_mut().enumerate() {
                    let Some(to) = slice.get_mut(at..at + end - first) else {
                        continue;
                    };
                    for (k, v) in to.iter_mut().enumerate() {
                        *v = by_row[k * seq + t];
                    }
                }
            }
        });
    });
}

thread_local! {
    /// Each thread's buffer of [`by_rows`], kept between calls.
    static BY_ROW: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Output rows a thread computes together before copying them into their columns: their
/// values for a few hundred vectors stay in its cache.
const ROWS_PER_CALL: usize = 128;

#[cfg(test)]
mod tests {
    use candle_core::quantized::GgmlDType;

    use super::super::kmatrix::tests::candle_blocks;
    use super::super::mapped::Bytes;
    use super::super::q8::tests::noise;
    use super::*;

    fn part(dtype: GgmlDType, rows: usize, cols: usize, seed: u64) -> Part {
        let (bytes, _) = candle_blocks(dtype, rows, cols, seed);
        match dtype {
            GgmlDType::Q4K => Part::Q4K(Q4KMatrix::new(Bytes::owned(bytes), rows, cols).unwrap()),
            GgmlDType::Q6K => Part::Q6K(Q6KMatrix::new(Bytes::owned(bytes), rows, cols).unwrap()),
            GgmlDType::Q8_0 => Part::Q8(Q8Matrix::from_ggml(&bytes, rows, cols).unwrap()),
            _ => Part::Q4(Q4Matrix::from_ggml(&bytes, rows, cols).unwrap()),
        }
    }

    #[test]
    fn rows_computed_a_few_at_a_time_land_in_their_columns() {
        let cases = [
            (150, 7, 16),
            (131, 3, 4),
            (64, 2, 16),
            (5, 9, 4),
            (3100, 3, 16),
            (1000, 2, 4),
        ];
        for (rows, seq, align) in cases {
            let mut out = vec![-1.0; rows * seq];
            by_rows(
                Threads::helped(),
                seq,
                rows,
                align,
                &mut out,
                |items, by_row| {
                    assert!(items.start.is_multiple_of(align), "{items:?}");
                    assert!(items.len() <= ROWS_PER_CALL, "{items:?}");
                    assert_eq!(by_row.len(), items.len() * seq);
                    for (k, r) in items.enumerate() {
                        for t in 0..seq {
                            by_row[k * seq + t] = (r * 1000 + t) as f32;
                        }
                    }
                },
            );
            for t in 0..seq {
                for r in 0..rows {
                    assert_eq!(
                        out[t * rows + r],
                        (r * 1000 + t) as f32,
                        "{rows}x{seq} at {t},{r}"
                    );
                }
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "minutes under Miri; the portable path is covered by the smaller tests"
    )]
    fn stacked_parts_of_different_formats_give_the_rows_of_each() {
        let cols = 512;
        let shapes = [
            (GgmlDType::Q4K, 12),
            (GgmlDType::Q8_0, 8),
            (GgmlDType::Q6K, 4),
            (GgmlDType::Q4_1, 5),
        ];
        for seq in [1, 6] {
            let x = noise(seq * cols, 70);
            let mut scratch = Scratch::default();
            let mut want = Vec::new();
            for (i, &(dtype, rows)) in shapes.iter().enumerate() {
                let one = Linear::from_parts(vec![part(dtype, rows, cols, i as u64)])
                    .unwrap()
                    .unwrap();
                let mut out = Vec::new();
                one.forward(&x, seq, &mut scratch, &mut out).unwrap();
                want.push((rows, out));
            }
            let parts = shapes
                .iter()
                .enumerate()
                .map(|(i, &(dtype, rows))| part(dtype, rows, cols, i as u64))
                .collect();
            let stacked = Linear::from_parts(parts).unwrap().unwrap();
            assert_eq!(stacked.rows(), 29);
            let mut out = Vec::new();
            stacked.forward(&x, seq, &mut scratch, &mut out).unwrap();
            for t in 0..seq {
                let mut offset = 0;
                for (rows, part) in &want {
                    assert_eq!(
                        out[t * 29 + offset..t * 29 + offset + rows],
                        part[t * rows..(t + 1) * rows],
                        "vector {t}, rows from {offset}"
                    );
                    offset += rows;
                }
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "minutes under Miri, where no tile kernel runs")]
    fn long_inputs_split_by_vectors_give_what_the_rows_give() {
        let (cols, seq) = (512, BY_TOKENS_MIN + 22);
        let shapes = [(GgmlDType::Q4K, 20), (GgmlDType::Q6K, 13)];
        let make = || {
            shapes
                .iter()
                .enumerate()
                .map(|(i, &(dtype, rows))| part(dtype, rows, cols, 9 + i as u64))
                .collect::<Vec<_>>()
        };
        let x = noise(seq * cols, 71);
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        let stacked = Linear::from_parts(make()).unwrap().unwrap();
        stacked.forward(&x, seq, &mut scratch, &mut out).unwrap();
        let mut quantized = Activations::default();
        quantized.q8k.quantize(&x, cols).unwrap();
        let mut offset = 0;
        for p in make() {
            let rows = p.rows();
            let mut by_row = vec![0.0; rows * seq];
            p.dot_rows(0..rows, &quantized, &mut by_row);
            for t in 0..seq {
                for r in 0..rows {
                    assert_eq!(
                        out[t * 33 + offset + r],
                        by_row[r * seq + t],
                        "vector {t}, row {}",
                        offset + r
                    );
                }
            }
            offset += rows;
        }
        assert!(out.iter().any(|&v| v != 0.0));
    }

    #[test]
    fn parts_are_stacked_only_by_whole_groups_of_four() {
        let parts = vec![
            part(GgmlDType::Q4K, 5, 256, 1),
            part(GgmlDType::Q4K, 4, 256, 2),
        ];
        assert!(Linear::from_parts(parts).unwrap().is_none());
        let parts = vec![
            part(GgmlDType::Q4K, 4, 256, 1),
            part(GgmlDType::Q6K, 4, 512, 2),
        ];
        assert!(Linear::from_parts(parts).is_err());
    }
}
