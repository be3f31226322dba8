//! The token embedding table: read from the output matrix when the model ties the two, or
//! held dequantized.

use candle_core::Result;

use super::linear::Linear;

/// Where the embedding of a token comes from.
pub enum Embeddings {
    /// The model ties its embeddings to the output matrix, held in Q8_0: a row is dequantized
    /// when a token is fed, and no second copy of the table is kept (about 110 MiB for
    /// SmolLM2's 49152 × 576).
    Tied,
    /// The table dequantized to f32, one row of `width` values per token.
    Table {
        /// Row after row.
        values: Vec<f32>,
        /// Values per row.
        width: usize,
    },
}

impl Embeddings {
    /// Rows held: the number of token ids the model knows.
    pub fn vocab(&self, output: &Linear) -> usize {
        match self {
            Embeddings::Tied => output.rows(),
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
