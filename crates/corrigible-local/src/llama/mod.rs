// Derived from candle-transformers 0.11.1, `src/models/quantized_llama.rs`.
// Copyright (c) 2023- The Candle authors (https://github.com/huggingface/candle).
// Licensed under the Apache License, Version 2.0 or the MIT license, at your option.
// Changes for corrigible: dense feed-forward only, a key/value cache that can be cut back to
// a prefix, grouped-query attention without copying keys and values per head, and optional
// re-quantization of the weights at load time.

//! A llama-architecture transformer over quantized GGUF weights, run on the CPU.

mod cache;
mod load;

use candle_core::quantized::QMatMul;
use candle_core::{DType, Device, IndexOp, Module, Result, Tensor};
use candle_nn::Embedding;
use candle_transformers::quantized_nn::RmsNorm;

pub use cache::KvCache;
pub use load::{Hyper, load};

struct Mlp {
    gate: QMatMul,
    up: QMatMul,
    down: QMatMul,
}

impl Mlp {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let gate = candle_nn::ops::silu(&self.gate.forward(x)?)?;
        let up = self.up.forward(x)?;
        self.down.forward(&(gate * up)?)
    }
}

struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    attention_norm: RmsNorm,
    mlp: Mlp,
    ffn_norm: RmsNorm,
    cache: KvCache,
}

/// The rotary position tables.
struct Rope {
    cos: Tensor,
    sin: Tensor,
}

impl Rope {
    fn new(hyper: &Hyper, device: &Device) -> Result<Self> {
        let theta: Vec<f32> = (0..hyper.rope_dim)
            .step_by(2)
            .map(|i| 1f32 / hyper.rope_freq_base.powf(i as f32 / hyper.rope_dim as f32))
            .collect();
        let theta = Tensor::new(theta.as_slice(), device)?;
        let positions = Tensor::arange(0, hyper.context_length as u32, device)?
            .to_dtype(DType::F32)?
            .reshape((hyper.context_length, 1))?;
        let angles = positions.matmul(&theta.reshape((1, theta.elem_count()))?)?;
        Ok(Self {
            cos: angles.cos()?,
            sin: angles.sin()?,
        })
    }

    fn apply(&self, x: &Tensor, pos: usize) -> Result<Tensor> {
        let (_, _, seq_len, _) = x.dims4()?;
        let cos = self.cos.narrow(0, pos, seq_len)?;
        let sin = self.sin.narrow(0, pos, seq_len)?;
        candle_nn::rotary_emb::rope_i(&x.contiguous()?, &cos, &sin)
    }
}

impl Layer {
    fn attention(
        &mut self,
        x: &Tensor,
        mask: Option<&Tensor>,
        pos: usize,
        rope: &Rope,
        hyper: &Hyper,
    ) -> Result<Tensor> {
        let (_, seq_len, _) = x.dims3()?;
        let (n_head, n_kv, hd) = (hyper.n_head, hyper.n_kv_head, hyper.head_dim);
        let q = self
            .wq
            .forward(x)?
            .reshape((1, seq_len, n_head, hd))?
            .transpose(1, 2)?;
        let k = self
            .wk
            .forward(x)?
            .reshape((1, seq_len, n_kv, hd))?
            .transpose(1, 2)?;
        let v = self
            .wv
            .forward(x)?
            .reshape((1, seq_len, n_kv, hd))?
            .transpose(1, 2)?
            .contiguous()?;
        let q = rope.apply(&q, pos)?;
        let k = rope.apply(&k, pos)?;
        let (k, v) = self.cache.append(&k, &v)?;
        let kv_len = k.dim(2)?;

        // Heads sharing one key/value head are stacked as rows of one matrix.
        let n_rep = n_head / n_kv;
        let q = q.reshape((1, n_kv, n_rep * seq_len, hd))?;
        let scale = 1.0 / (hd as f64).sqrt();
        let att = (q.matmul(&k.t()?)? * scale)?;
        let att = match mask {
            None => att,
            Some(mask) => att
                .reshape((1, n_kv, n_rep, seq_len, kv_len))?
                .broadcast_add(mask)?
                .reshape((1, n_kv, n_rep * seq_len, kv_len))?,
        };
        let att = candle_nn::ops::softmax_last_dim(&att)?;
        let y = att.matmul(&v)?;
        let y = y
            .reshape((1, n_head, seq_len, hd))?
            .transpose(1, 2)?
            .reshape((1, seq_len, n_head * hd))?;
        self.wo.forward(&y)
    }
}

/// Additive causal mask `(seq_len, pos + seq_len)`: 0 where a query may look, -inf elsewhere.
fn causal_mask(seq_len: usize, pos: usize, device: &Device) -> Result<Tensor> {
    let kv_len = pos + seq_len;
    let data: Vec<f32> = (0..seq_len)
        .flat_map(|i| (0..kv_len).map(move |j| if j > pos + i { f32::NEG_INFINITY } else { 0.0 }))
        .collect();
    Tensor::from_vec(data, (seq_len, kv_len), device)
}

/// The transformer with its key/value cache.
pub struct Llama {
    embeddings: Embedding,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: QMatMul,
    rope: Rope,
    hyper: Hyper,
    device: Device,
}

impl Llama {
    /// The model's hyper-parameters.
    pub fn hyper(&self) -> &Hyper {
        &self.hyper
    }

    /// Width of the logits: the number of token ids the model knows.
    pub fn vocab_size(&self) -> usize {
        self.embeddings.embeddings().dim(0).unwrap_or(0)
    }

    /// Positions currently held in the key/value cache.
    pub fn cached_len(&self) -> usize {
        self.layers.first().map_or(0, |l| l.cache.len())
    }

    /// Forgets every cached position from `len` on.
    pub fn truncate_cache(&mut self, len: usize) {
        for layer in &mut self.layers {
            layer.cache.truncate(len);
        }
    }

    /// Feeds `tokens` at positions `cached_len()..` and returns the logits after the last one.
    pub fn forward(&mut self, tokens: &[u32]) -> Result<Tensor> {
        let seq_len = tokens.len();
        let pos = self.cached_len();
        if seq_len == 0 {
            candle_core::bail!("forward called with no tokens");
        }
        if pos + seq_len > self.hyper.context_length {
            candle_core::bail!(
                "{} tokens exceed the context window of {}",
                pos + seq_len,
                self.hyper.context_length
            );
        }
        let mask = if seq_len == 1 {
            None
        } else {
            Some(causal_mask(seq_len, pos, &self.device)?)
        };
        let ids = Tensor::new(tokens, &self.device)?.unsqueeze(0)?;
        let mut hidden = self.embeddings.forward(&ids)?;
        for layer in &mut self.layers {
            let x = layer.attention_norm.forward(&hidden)?;
            let x = layer.attention(&x, mask.as_ref(), pos, &self.rope, &self.hyper)?;
            let residual = (x + hidden)?;
            let x = layer.ffn_norm.forward(&residual)?;
            hidden = (layer.mlp.forward(&x)? + residual)?;
        }
        let x = self.norm.forward(&hidden)?;
        let last = x.i((.., seq_len - 1, ..))?;
        self.output.forward(&last)?.squeeze(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_lets_each_query_see_the_prefix_and_itself() -> Result<()> {
        let m = causal_mask(2, 1, &Device::Cpu)?;
        let rows: Vec<Vec<f32>> = m.to_vec2()?;
        assert_eq!(rows[0], [0.0, 0.0, f32::NEG_INFINITY]);
        assert_eq!(rows[1], [0.0, 0.0, 0.0]);
        Ok(())
    }
}
