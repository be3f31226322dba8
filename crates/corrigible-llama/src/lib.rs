// Derived from candle-transformers 0.11.1, `src/models/quantized_llama.rs`.
// Copyright (c) 2023- The Candle authors (https://github.com/huggingface/candle).
// Licensed under the Apache License, Version 2.0 or the MIT license, at your option.
// Changes for corrigible: dense feed-forward only, a key/value cache that can be cut back to
// a prefix, optional re-quantization of the weights at load time, and a forward pass on plain
// slices with this crate's Q8_0, Q4_1, Q4_K and Q6_K kernels over weights mapped from the file instead of candle tensor operations, and the
// qwen2 variant (q/k/v biases, rotary pairs of halves) as in `src/models/quantized_qwen2.rs`.

//! corrigible-llama: the inference engine of corrigible's embedded model.
//!
//! A llama-family transformer (llama, qwen2) over quantized GGUF weights, run on the CPU:
//! [`load`] reads the weights from a [`MappedFile`] (K-quant matrices are used in place), and
//! [`Llama::forward`] runs the tokens through them with this crate's Q8_0, Q4_1, Q4_K and Q6_K
//! kernels (AVX2 detected at run time, with a portable path; AMX tiles or AVX-512 VNNI for
//! K-quant prefill) on a small thread pool of [`inference_threads`]. All of the workspace's
//! `unsafe` code is here, each block in the module that needs it with a SAFETY note.
#![deny(missing_docs)]

mod amx;
mod attention;
mod cache;
mod embeddings;
mod head;
mod kgroups;
mod kmatrix;
mod ktiles;
mod linear;
mod load;
mod mapped;
mod parallel;
mod q4;
mod q4k;
mod q6k;
mod q8;
mod q8k;
mod quad;
mod sequence;
mod tiled;
mod vector;
mod vnni;

use std::io::{self, Read, Write};

use candle_core::Result;

pub use cache::KvCache;
pub use load::{Hyper, RopeStyle, Weights, load};
pub use mapped::MappedFile;
pub use parallel::inference_threads;
pub use sequence::{Sequence, Step};

use embeddings::Embeddings;
use linear::{Linear, Scratch};
use parallel::for_each_piece;
use vector::{add_assign, rms_norm, rope_halves, rope_interleaved, silu_mul};

/// The first bytes of a file written by [`Llama::save_cache`].
const CACHE_MAGIC: &[u8; 8] = b"CRGKV\0\0\x01";

struct Layer {
    /// Queries, keys and values stacked.
    qkv: Linear,
    /// Biases added to the stacked queries, keys and values (Qwen2), if the file has them.
    qkv_bias: Option<Vec<f32>>,
    wo: Linear,
    /// Gate and up projections stacked.
    gate_up: Linear,
    down: Linear,
    attention_norm: Vec<f32>,
    ffn_norm: Vec<f32>,
}

/// The rotary position tables, `context_length` rows of `rope_dim / 2` angles.
struct Rope {
    cos: Vec<f32>,
    sin: Vec<f32>,
    half: usize,
    style: RopeStyle,
}

impl Rope {
    fn new(hyper: &Hyper) -> Self {
        let theta: Vec<f32> = (0..hyper.rope_dim)
            .step_by(2)
            .map(|i| 1f32 / hyper.rope_freq_base.powf(i as f32 / hyper.rope_dim as f32))
            .collect();
        let half = theta.len();
        let mut cos = Vec::with_capacity(hyper.context_length * half);
        let mut sin = Vec::with_capacity(hyper.context_length * half);
        for p in 0..hyper.context_length {
            for t in &theta {
                let angle = p as f32 * t;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        Self {
            cos,
            sin,
            half,
            style: hyper.rope_style,
        }
    }

    /// Rotates one head's vector `x` for position `pos`.
    fn apply(&self, x: &mut [f32], pos: usize) {
        let range = pos * self.half..(pos + 1) * self.half;
        if let (Some(cos), Some(sin)) = (self.cos.get(range.clone()), self.sin.get(range)) {
            match self.style {
                RopeStyle::Interleaved => rope_interleaved(x, cos, sin),
                RopeStyle::Halves => {
                    let rotated = 2 * self.half;
                    if let Some(x) = x.get_mut(..rotated) {
                        rope_halves(x, cos, sin);
                    }
                }
            }
        }
    }
}

/// The activations of one forward pass, kept between calls to avoid reallocating.
#[derive(Default)]
struct Buffers {
    hidden: Vec<f32>,
    normed: Vec<f32>,
    qkv: Vec<f32>,
    attended: Vec<f32>,
    projected: Vec<f32>,
    gate_up: Vec<f32>,
    activated: Vec<f32>,
    logits: Vec<f32>,
    /// One sequence's attention output, when several share the pass.
    attended_one: Vec<f32>,
    /// The last position's hidden state of each sequence.
    last: Vec<f32>,
    scratch: Scratch,
}

/// The transformer, with the key/value caches of its own sequence: [`Llama::forward`] feeds
/// that one, [`Llama::forward_batch`] any number of [`Sequence`]s in one pass.
pub struct Llama {
    /// The token embeddings.
    embeddings: Embeddings,
    layers: Vec<Layer>,
    norm: Vec<f32>,
    output: Linear,
    rope: Rope,
    hyper: Hyper,
    buffers: Buffers,
    cache: Sequence,
}

fn norm_rows(x: &[f32], weight: &[f32], eps: f32, width: usize, out: &mut Vec<f32>) {
    let rows = x.len() / width;
    // Every value is written below: only new room is zeroed.
    out.resize(rows * width, 0.0);
    for_each_piece(out, rows, width, 1, |rows, out| {
        for (r, o) in rows.zip(out.chunks_exact_mut(width)) {
            rms_norm(&x[r * width..(r + 1) * width], weight, eps, o);
        }
    });
}

/// `out`, one row of `ff` values per token, set to `silu(gate) * up` of each token's row of
/// `gate_up` (`ff` gate values, then `ff` up values).
fn activate_rows(gate_up: &[f32], ff: usize, out: &mut Vec<f32>) {
    let rows = gate_up.len() / (2 * ff);
    out.resize(rows * ff, 0.0);
    for_each_piece(out, rows, ff, 1, |rows, out| {
        for (r, o) in rows.zip(out.chunks_exact_mut(ff)) {
            let (gate, up) = gate_up[2 * r * ff..2 * (r + 1) * ff].split_at(ff);
            o.copy_from_slice(gate);
            silu_mul(o, up);
        }
    });
}

impl Llama {
    /// The model's hyper-parameters.
    pub fn hyper(&self) -> &Hyper {
        &self.hyper
    }

    /// Width of the logits: the number of token ids the model knows.
    pub fn vocab_size(&self) -> usize {
        self.embeddings.vocab(&self.output)
    }

    /// Whether every matrix, the output head included, holds the file's bytes once: read in
    /// place from the mapping, or interleaved from it for decode.
    pub fn all_from_file(&self) -> bool {
        self.output.is_from_file()
            && self.layers.iter().all(|l| {
                [&l.qkv, &l.wo, &l.gate_up, &l.down]
                    .iter()
                    .all(|m| m.is_from_file())
            })
    }

    /// Positions currently held in the key/value cache.
    pub fn cached_len(&self) -> usize {
        self.cache.len()
    }

    /// Forgets every cached position from `len` on.
    pub fn truncate_cache(&mut self, len: usize) {
        self.cache.truncate(len);
    }

    /// An empty sequence of this model's shape, for [`Llama::forward_batch`].
    pub fn sequence(&self) -> Sequence {
        Sequence::new(self.layers.len(), self.hyper.n_kv_head, self.hyper.head_dim)
    }

    /// Exchanges the model's own sequence (the one [`Llama::forward`], the cache's save and
    /// load use) with `other`.
    pub fn swap_sequence(&mut self, other: &mut Sequence) {
        std::mem::swap(&mut self.cache, other);
    }

    /// Writes the keys and values of the first `len` cached positions (at most those held),
    /// after a header naming the cache's shape: what [`Llama::load_cache`] reads back into a
    /// model of the same shape.
    pub fn save_cache(&self, len: usize, out: &mut impl Write) -> io::Result<()> {
        let len = len.min(self.cached_len());
        out.write_all(CACHE_MAGIC)?;
        for n in [
            self.layers.len(),
            self.hyper.n_kv_head,
            self.hyper.head_dim,
            len,
        ] {
            out.write_all(&(n as u64).to_le_bytes())?;
        }
        for layer in &self.cache.layers {
            layer.write_to(len, out)?;
        }
        Ok(())
    }

    /// Replaces the cache with one written by [`Llama::save_cache`], and returns the positions
    /// it holds. A cache of another shape, one longer than the context window, or cut short is
    /// an [`io::ErrorKind::InvalidData`] error, and leaves the cache empty.
    pub fn load_cache(&mut self, input: &mut impl Read) -> io::Result<usize> {
        let result = self.read_cache(input);
        if result.is_err() {
            self.truncate_cache(0);
        }
        result
    }

    fn read_cache(&mut self, input: &mut impl Read) -> io::Result<usize> {
        let invalid = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let mut magic = [0u8; CACHE_MAGIC.len()];
        input.read_exact(&mut magic)?;
        if magic != *CACHE_MAGIC {
            return Err(invalid("not a key/value cache file".into()));
        }
        let mut shape = [0usize; 4];
        for n in &mut shape {
            let mut word = [0u8; 8];
            input.read_exact(&mut word)?;
            *n = usize::try_from(u64::from_le_bytes(word)).unwrap_or(usize::MAX);
        }
        let [layers, heads, head_dim, len] = shape;
        let expected = [self.layers.len(), self.hyper.n_kv_head, self.hyper.head_dim];
        if [layers, heads, head_dim] != expected {
            return Err(invalid(format!(
                "a cache of {layers} layers, {heads} heads of {head_dim}, for a model of {} layers, {} heads of {}",
                expected[0], expected[1], expected[2]
            )));
        }
        if len > self.hyper.context_length {
            return Err(invalid(format!(
                "a cache of {len} positions, past the context window of {}",
                self.hyper.context_length
            )));
        }
        if self.cache.layers.len() != layers {
            self.cache = self.sequence();
        }
        for layer in &mut self.cache.layers {
            layer.read_from(len, input)?;
        }
        Ok(len)
    }

    /// Feeds `tokens` at positions `cached_len()..` and returns the logits after the last one.
    pub fn forward(&mut self, tokens: &[u32]) -> Result<&[f32]> {
        let mut own = std::mem::take(&mut self.cache);
        let fed = self.run(&mut [Step {
            sequence: &mut own,
            tokens,
        }]);
        self.cache = own;
        fed?;
        Ok(&self.buffers.logits)
    }

    /// Feeds each step's tokens at its sequence's next positions, all in one pass (each weight
    /// read once for every token of every sequence), and returns the logits after each step's
    /// last token, step after step ([`Llama::vocab_size`] values each). The logits of a step
    /// are those [`Llama::forward`] gives for the same tokens on the same cache. On an error
    /// no sequence is changed.
    pub fn forward_batch(&mut self, steps: &mut [Step<'_>]) -> Result<&[f32]> {
        self.run(steps)?;
        Ok(&self.buffers.logits)
    }

    fn run(&mut self, steps: &mut [Step<'_>]) -> Result<()> {
        if steps.is_empty() {
            candle_core::bail!("forward called with no sequence");
        }
        let h = &self.hyper;
        for step in steps.iter() {
            if step.tokens.is_empty() {
                candle_core::bail!("forward called with no tokens");
            }
            if step.sequence.layers.len() != self.layers.len() {
                candle_core::bail!(
                    "a sequence of {} layers, for a model of {}",
                    step.sequence.layers.len(),
                    self.layers.len()
                );
            }
            let end = step.sequence.len() + step.tokens.len();
            if end > h.context_length {
                candle_core::bail!(
                    "{end} tokens exceed the context window of {}",
                    h.context_length
                );
            }
        }
        let starts: Vec<usize> = steps.iter().map(|s| s.sequence.len()).collect();
        let fed = self.layers_forward(steps, &starts);
        if fed.is_err() {
            for (step, &start) in steps.iter_mut().zip(&starts) {
                step.sequence.truncate(start);
            }
        }
        fed
    }

    fn layers_forward(&mut self, steps: &mut [Step<'_>], starts: &[usize]) -> Result<()> {
        let tokens: Vec<u32> = steps.iter().flat_map(|s| s.tokens).copied().collect();
        let rows = tokens.len();
        let b = &mut self.buffers;
        let h = &self.hyper;
        let dim = h.embedding_length;
        self.embeddings
            .lookup(&self.output, &tokens, dim, &mut b.hidden)?;
        let eps = h.rms_norm_eps as f32;
        let (q_width, kv_width) = (h.n_head * h.head_dim, h.n_kv_head * h.head_dim);
        // One sequence alone has its attention written in place.
        let alone = steps.len() == 1;
        for (l, layer) in self.layers.iter().enumerate() {
            norm_rows(&b.hidden, &layer.attention_norm, eps, dim, &mut b.normed);
            layer
                .qkv
                .forward(&b.normed, rows, &mut b.scratch, &mut b.qkv)?;
            let qkv_width = layer.qkv.rows();
            let mut first = 0;
            for (step, &pos) in steps.iter_mut().zip(starts) {
                let seq = step.tokens.len();
                let block = &mut b.qkv[first * qkv_width..(first + seq) * qkv_width];
                let cache = &mut step.sequence.layers[l];
                for (t, row) in block.chunks_exact_mut(qkv_width).enumerate() {
                    if let Some(bias) = &layer.qkv_bias {
                        add_assign(row, bias);
                    }
                    let (q, kv) = row.split_at_mut(q_width);
                    let (k, v) = kv.split_at_mut(kv_width);
                    for head in q
                        .chunks_exact_mut(h.head_dim)
                        .chain(k.chunks_exact_mut(h.head_dim))
                    {
                        self.rope.apply(head, pos + t);
                    }
                    cache.push(k, v);
                }
                first += seq;
            }
            if alone {
                let seq = steps[0].tokens.len();
                let cache = &steps[0].sequence.layers[l];
                attention::attend(&b.qkv, cache, h, starts[0], seq, &mut b.attended);
            } else {
                // Single positions (decoding) share one share-out among the threads; longer
                // steps (pre-filling) attend on their own.
                b.attended.resize(rows * q_width, 0.0);
                let mut singles = Vec::new();
                let mut first = 0;
                for (step, &pos) in steps.iter().zip(starts) {
                    let seq = step.tokens.len();
                    let cache = &step.sequence.layers[l];
                    if seq == 1 {
                        singles.push((first, cache, pos));
                    } else {
                        let block = &b.qkv[first * qkv_width..(first + seq) * qkv_width];
                        attention::attend(block, cache, h, pos, seq, &mut b.attended_one);
                        b.attended[first * q_width..(first + seq) * q_width]
                            .copy_from_slice(&b.attended_one);
                    }
                    first += seq;
                }
                attention::attend_each(&b.qkv, &singles, h, &mut b.attended_one);
                for (&(row, _, _), one) in singles.iter().zip(b.attended_one.chunks_exact(q_width))
                {
                    b.attended[row * q_width..(row + 1) * q_width].copy_from_slice(one);
                }
            }
            layer
                .wo
                .forward(&b.attended, rows, &mut b.scratch, &mut b.projected)?;
            add_assign(&mut b.hidden, &b.projected);

            norm_rows(&b.hidden, &layer.ffn_norm, eps, dim, &mut b.normed);
            layer
                .gate_up
                .forward(&b.normed, rows, &mut b.scratch, &mut b.gate_up)?;
            activate_rows(&b.gate_up, layer.gate_up.rows() / 2, &mut b.activated);
            layer
                .down
                .forward(&b.activated, rows, &mut b.scratch, &mut b.projected)?;
            add_assign(&mut b.hidden, &b.projected);
        }
        b.last.clear();
        let mut end = 0;
        for step in steps.iter() {
            end += step.tokens.len();
            b.last
                .extend_from_slice(&b.hidden[(end - 1) * dim..end * dim]);
        }
        norm_rows(&b.last, &self.norm, eps, dim, &mut b.normed);
        self.output
            .forward(&b.normed, steps.len(), &mut b.scratch, &mut b.logits)?;
        Ok(())
    }
}
