//! The token embedding table: read from the output matrix when the model ties the two, kept
//! as stored in the file, or held dequantized.

use std::borrow::Cow;

use candle_core::quantized::{GgmlDType, QStorage, QTensor};
use candle_core::{Device, Result};

use super::linear::Linear;
use super::mapped::{Bytes, Stored, with_aligned};

/// Where the embedding of a token comes from.
pub enum Embeddings {
    /// The model ties its embeddings to the output matrix, held in Q8_0: a row is dequantized
    /// when a token is fed, and no second copy of the table is kept (about 110 MiB for
    /// SmolLM2's 49152 × 576).
    Tied,
    /// The table as stored in the file, read in place (Qwen2.5-1.5B: 151936 × 1536 in Q4_K,
    /// 125 MiB of the file instead of 890 MiB as f32, and only the rows of tokens seen are
    /// ever read): a row is dequantized, by candle, when a token is fed.
    Rows {
        /// The stored rows, one after the other.
        bytes: Bytes,
        /// Their format.
        dtype: GgmlDType,
        /// Bytes per row.
        row_bytes: usize,
        /// Rows held.
        rows: usize,
    },
    /// The table dequantized to f32, one row of `width` values per token.
    Table {
        /// Row after row.
        values: Vec<f32>,
        /// Values per row.
        width: usize,
    },
}

impl Embeddings {
    /// The table `t` (`rows × width`) kept as stored, or `None` when its rows cannot be read
    /// one by one in place: a width other than `width`, or rows not aligned for the blocks.
    pub fn rows(t: &Stored, width: usize) -> Result<Option<Self>> {
        let [cols, rows] = t.dims[..] else {
            return Ok(None);
        };
        if cols != width {
            return Ok(None);
        }
        let bytes = t.bytes.clone();
        let row_bytes = bytes.len().checked_div(rows).unwrap_or(0);
        // Every block type is at most 4-byte aligned; candle asserts it when reading blocks.
        let aligned = row_bytes.is_multiple_of(4) && (bytes.as_ptr() as usize).is_multiple_of(4);
        if row_bytes == 0 || row_bytes * rows != bytes.len() || !aligned {
            return Ok(None);
        }
        Ok(Some(Embeddings::Rows {
            bytes,
            dtype: t.dtype,
            row_bytes,
            rows,
        }))
    }

    /// Rows held: the number of token ids the model knows.
    pub fn vocab(&self, output: &Linear) -> usize {
        match self {
            Embeddings::Tied => output.rows(),
            Embeddings::Rows { rows, .. } => *rows,
            Embeddings::Table { values, width } => values.len().checked_div(*width).unwrap_or(0),
        }
    }

    /// Writes the embeddings of `tokens`, one row after the other, into `out` (`width` values
    /// each).
    pub fn lookup(
        &self,
        output: &Linear,
        tokens: &[u32],
        width: usize,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        out.clear();
        out.resize(tokens.len() * width, 0.0);
        let vocab = self.vocab(output);
        for (&token, row) in tokens.iter().zip(out.chunks_exact_mut(width.max(1))) {
            let t = token as usize;
            if t >= vocab {
                candle_core::bail!("token id {token} is outside the vocabulary of {vocab}");
            }
            let found = match self {
                Embeddings::Tied => output.dequantize_row(t, row),
                Embeddings::Rows {
                    bytes,
                    dtype,
                    row_bytes,
                    ..
                } => match bytes.get(t * row_bytes..(t + 1) * row_bytes) {
                    Some(src) => dequantize_row(src, *dtype, row)?,
                    None => false,
                },
                Embeddings::Table { values, .. } => values
                    .get(t * width..(t + 1) * width)
                    .map(|src| row.copy_from_slice(src))
                    .is_some(),
            };
            if !found {
                candle_core::bail!("no embedding of width {width} for token {token}");
            }
        }
        Ok(())
    }
}

/// Dequantizes one stored row `src` of `dtype` into `out`; `false` if the sizes disagree.
fn dequantize_row(src: &[u8], dtype: GgmlDType, out: &mut [f32]) -> Result<bool> {
    let values: Vec<f32> = with_aligned(src, |src| {
        let storage = QStorage::from_data(Cow::Borrowed(src), &Device::Cpu, dtype)?;
        QTensor::new(storage, (out.len(),))?
            .dequantize(&Device::Cpu)?
            .to_vec1()
    })?;
    if values.len() != out.len() {
        return Ok(false);
    }
    out.copy_from_slice(&values);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use candle_core::Tensor;

    use super::*;

    #[test]
    fn stored_rows_read_as_the_dequantized_table() {
        let (rows, width) = (5, 512);
        let values: Vec<f32> = (0..rows * width)
            .map(|i| (i as f32 * 0.173).sin() * 2.0)
            .collect();
        let dense = Tensor::from_vec(values, (rows, width), &Device::Cpu).unwrap();
        for dtype in [GgmlDType::Q4K, GgmlDType::Q6K, GgmlDType::Q8_0] {
            let q = QTensor::quantize(&dense, dtype).unwrap();
            let stored = Embeddings::rows(&Stored::owned(&q).unwrap(), width)
                .unwrap()
                .expect("aligned rows");
            let table = Embeddings::Table {
                values: q
                    .dequantize(&Device::Cpu)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1()
                    .unwrap(),
                width,
            };
            let output = Linear::new(vec![q]).unwrap();
            let tokens = [4, 0, 2, 2];
            let (mut a, mut b) = (Vec::new(), Vec::new());
            stored.lookup(&output, &tokens, width, &mut a).unwrap();
            table.lookup(&output, &tokens, width, &mut b).unwrap();
            assert_eq!(a, b, "{dtype:?}");
            assert_eq!(stored.vocab(&output), rows);
            assert!(stored.lookup(&output, &[5], width, &mut a).is_err());
        }
    }

    #[test]
    fn another_width_is_not_read_in_place() {
        let dense = Tensor::zeros((2, 256), candle_core::DType::F32, &Device::Cpu).unwrap();
        let q = QTensor::quantize(&dense, GgmlDType::Q4K).unwrap();
        assert!(
            Embeddings::rows(&Stored::owned(&q).unwrap(), 512)
                .unwrap()
                .is_none()
        );
    }
}
