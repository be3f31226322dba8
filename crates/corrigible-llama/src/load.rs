//! Reading a llama or qwen2 GGUF file into a [`Llama`], re-quantizing on the way the
//! formats this crate has no kernel for.

use candle_core::quantized::{GgmlDType, QTensor, gguf_file};
use candle_core::{Device, Result};

use super::embeddings::Embeddings;
use super::linear::{Linear, Part};
use super::mapped::MappedFile;
use super::{Layer, Llama, Rope, Sequence};

/// The longest context the rotary tables are built for, whatever the file declares.
const MAX_CONTEXT: usize = 32_768;

/// How a head's dimensions are paired for the rotary embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// Adjacent pairs `(x[2i], x[2i + 1])`: llama files, whose weights GGUF permutes to match.
    Interleaved,
    /// The two halves `(x[i], x[i + d/2])`: Qwen2 (llama.cpp's NEOX style).
    Halves,
}

/// The hyper-parameters of a llama-family model, read from the GGUF metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Hyper {
    /// Attention heads.
    pub n_head: usize,
    /// Key/value heads (grouped-query attention).
    pub n_kv_head: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Hidden size.
    pub embedding_length: usize,
    /// Dimensions rotated by RoPE.
    pub rope_dim: usize,
    /// RoPE base frequency.
    pub rope_freq_base: f32,
    /// Pairing of the rotated dimensions.
    pub rope_style: RopeStyle,
    /// RMS-norm epsilon.
    pub rms_norm_eps: f64,
    /// Positions the model can attend to.
    pub context_length: usize,
}

fn md_u32(ct: &gguf_file::Content, key: &str) -> Result<usize> {
    match ct.metadata.get(key) {
        Some(v) => Ok(v.to_u32()? as usize),
        None => candle_core::bail!("missing `{key}` in the GGUF metadata"),
    }
}

impl Hyper {
    fn from_gguf(ct: &gguf_file::Content) -> Result<Self> {
        let arch = ct
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        let rope_style = match arch.as_str() {
            "llama" => RopeStyle::Interleaved,
            "qwen2" => RopeStyle::Halves,
            _ => candle_core::bail!(
                "architecture `{arch}` is not supported: expected `llama` or `qwen2`"
            ),
        };
        let key = |name: &str| format!("{arch}.{name}");
        if md_u32(ct, &key("expert_count")).unwrap_or(0) > 1 {
            candle_core::bail!("mixture-of-experts models are not supported");
        }
        let n_head = md_u32(ct, &key("attention.head_count"))?;
        let n_kv_head = md_u32(ct, &key("attention.head_count_kv")).unwrap_or(n_head);
        let embedding_length = md_u32(ct, &key("embedding_length"))?;
        if n_head == 0 || n_kv_head == 0 || n_head % n_kv_head != 0 {
            candle_core::bail!("invalid head counts {n_head}/{n_kv_head}");
        }
        if embedding_length % n_head != 0 {
            candle_core::bail!(
                "embedding length {embedding_length} is not a multiple of {n_head} heads"
            );
        }
        let head_dim = embedding_length / n_head;
        let rms_norm_eps = match ct.metadata.get(&key("attention.layer_norm_rms_epsilon")) {
            Some(v) => v.to_f32()? as f64,
            None => 1e-5,
        };
        let rope_freq_base = ct
            .metadata
            .get(&key("rope.freq_base"))
            .and_then(|v| v.to_f32().ok())
            .unwrap_or(10_000.0);
        Ok(Self {
            n_head,
            n_kv_head,
            head_dim,
            n_layer: md_u32(ct, &key("block_count"))?,
            embedding_length,
            rope_dim: md_u32(ct, &key("rope.dimension_count")).unwrap_or(head_dim),
            rope_freq_base,
            rope_style,
            rms_norm_eps,
            context_length: md_u32(ct, &key("context_length"))
                .unwrap_or(4096)
                .clamp(1, MAX_CONTEXT),
        })
    }
}

/// Formats with no vectorized CPU kernel in candle: decoding with them is several times slower.
/// Q4_1 has this crate's kernel, but only for layers whose parts are all Q4_1.
fn needs_requantizing(dtype: GgmlDType) -> bool {
    matches!(dtype, GgmlDType::Q4_1 | GgmlDType::Q5_0 | GgmlDType::Q5_1)
}

struct Reader<'a> {
    ct: &'a gguf_file::Content,
    file: &'a MappedFile,
    weights: Weights,
}

impl Reader<'_> {
    fn raw(&self, name: &str) -> Result<QTensor> {
        self.file.tensor(self.ct, name)
    }

    /// The matrices `names`, stacked into one layer: read in place when all are K-quants,
    /// regrouped by four rows when all are Q4_1, else each converted as [`Weights`] says.
    fn linear(&self, names: &[String]) -> Result<Linear> {
        let mut stored = Vec::with_capacity(names.len());
        for name in names {
            stored.push(self.file.stored(self.ct, name)?);
        }
        let k = |t: GgmlDType| matches!(t, GgmlDType::Q4K | GgmlDType::Q6K);
        if stored.iter().all(|s| k(s.dtype)) || stored.iter().all(|s| s.dtype == GgmlDType::Q4_1) {
            let parts: Option<Vec<Part>> = stored.iter().map(Part::from_stored).collect();
            if let Some(parts) = parts
                && let Some(linear) = Linear::from_parts(parts)?
            {
                return Ok(linear);
            }
        }
        let mut parts = Vec::with_capacity(names.len());
        for name in names {
            parts.push(self.raw(name)?);
        }
        self.layer(parts)
    }

    /// The layer of `parts`, kept as shipped when all are Q4_1, else each converted.
    fn layer(&self, parts: Vec<QTensor>) -> Result<Linear> {
        if parts.iter().all(|p| p.dtype() == GgmlDType::Q4_1) {
            return Linear::new(parts);
        }
        let mut converted = Vec::with_capacity(parts.len());
        for p in parts {
            converted.push(self.convert(p)?);
        }
        Linear::new(converted)
    }

    fn convert(&self, t: QTensor) -> Result<QTensor> {
        let row = t.shape().dims().last().copied().unwrap_or(0);
        if self.weights == Weights::Requantize
            && needs_requantizing(t.dtype())
            && row % GgmlDType::Q8_0.block_size() == 0
        {
            QTensor::quantize(&t.dequantize(&Device::Cpu)?, GgmlDType::Q8_0)
        } else {
            Ok(t)
        }
    }

    /// The biases of `names` concatenated, or `None` when the file has none of them.
    fn biases(&self, names: &[String]) -> Result<Option<Vec<f32>>> {
        if !names.iter().any(|n| self.ct.tensor_infos.contains_key(n)) {
            return Ok(None);
        }
        let mut out = Vec::new();
        for name in names {
            out.extend(self.norm(name)?);
        }
        Ok(Some(out))
    }

    fn norm(&self, name: &str) -> Result<Vec<f32>> {
        self.raw(name)?
            .dequantize(&Device::Cpu)?
            .flatten_all()?
            .to_vec1()
    }
}

/// Loads the model from a parsed GGUF `ct` whose tensors are in the mapped `file`.
pub fn load(ct: &gguf_file::Content, file: &MappedFile, weights: Weights) -> Result<Llama> {
    let hyper = Hyper::from_gguf(ct)?;
    let r = Reader { ct, file, weights };
    let table = |name: &str| -> Result<Embeddings> {
        if let Some(rows) = Embeddings::rows(&file.stored(ct, name)?, hyper.embedding_length)? {
            return Ok(rows);
        }
        Ok(Embeddings::Table {
            values: r
                .raw(name)?
                .dequantize(&Device::Cpu)?
                .flatten_all()?
                .to_vec1()?,
            width: hyper.embedding_length,
        })
    };
    let embd = "token_embd.weight".to_string();
    let embd_dtype = ct.tensor_infos.get(&embd).map(|i| i.ggml_dtype);
    let (output, embeddings) = if ct.tensor_infos.contains_key("output.weight") {
        (r.linear(&["output.weight".to_string()])?, table(&embd)?)
    } else if embd_dtype == Some(GgmlDType::Q8_0) {
        (r.layer(vec![r.raw(&embd)?])?, Embeddings::Tied)
    } else {
        (r.linear(std::slice::from_ref(&embd))?, table(&embd)?)
    };
    if let Embeddings::Tied = embeddings {
        let mut probe = vec![0f32; hyper.embedding_length];
        if !output.dequantize_row(0, &mut probe) {
            candle_core::bail!("the tied output matrix cannot serve as embeddings");
        }
    }
    let norm = r.norm("output_norm.weight")?;
    let mut layers = Vec::with_capacity(hyper.n_layer);
    for i in 0..hyper.n_layer {
        let p = |name: &str| format!("blk.{i}.{name}.weight");
        let bias = |name: &str| format!("blk.{i}.{name}.bias");
        let layer = Layer {
            qkv: r.linear(&[p("attn_q"), p("attn_k"), p("attn_v")])?,
            qkv_bias: r.biases(&[bias("attn_q"), bias("attn_k"), bias("attn_v")])?,
            wo: r.linear(&[p("attn_output")])?,
            attention_norm: r.norm(&p("attn_norm"))?,
            gate_up: r.linear(&[p("ffn_gate"), p("ffn_up")])?,
            down: r.linear(&[p("ffn_down")])?,
            ffn_norm: r.norm(&p("ffn_norm"))?,
        };
        check_layer(&layer, &hyper)?;
        layers.push(layer);
    }
    if output.cols() != hyper.embedding_length {
        candle_core::bail!("output matrix of width {}", output.cols());
    }
    Ok(Llama {
        embeddings,
        layers,
        norm,
        output,
        rope: Rope::new(&hyper),
        cache: Sequence::new(hyper.n_layer, hyper.n_kv_head, hyper.head_dim),
        hyper,
        buffers: Default::default(),
    })
}

/// Rejects a layer whose matrices do not fit the hyper-parameters.
fn check_layer(l: &Layer, h: &Hyper) -> Result<()> {
    let dim = h.embedding_length;
    let qkv = (h.n_head + 2 * h.n_kv_head) * h.head_dim;
    let ok = l.qkv.rows() == qkv
        && l.qkv.cols() == dim
        && l.wo.rows() == dim
        && l.wo.cols() == h.n_head * h.head_dim
        && l.gate_up.cols() == dim
        && l.gate_up.rows().is_multiple_of(2)
        && l.down.rows() == dim
        && l.down.cols() == l.gate_up.rows() / 2
        && l.qkv_bias.as_ref().is_none_or(|b| b.len() == qkv)
        && l.attention_norm.len() == dim
        && l.ffn_norm.len() == dim
        && h.rope_dim <= h.head_dim;
    if !ok {
        candle_core::bail!("the layer matrices do not match the model's hyper-parameters");
    }
    Ok(())
}

/// Whether the model's weights are used as shipped or re-quantized when loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Weights {
    /// Matrices in formats without a fast CPU kernel (Q5_0, Q5_1, and Q4_1 stacked with another
    /// format) become Q8_0 at load: about 1 s more to load, nearly the same answers, several
    /// times faster decoding. Q4_1 layers otherwise keep their weights and kernel.
    #[default]
    Requantize,
    /// Use every matrix as stored in the file.
    AsShipped,
}
