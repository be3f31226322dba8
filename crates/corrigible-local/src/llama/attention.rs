//! Causal grouped-query attention of new positions over the key/value cache.

use super::cache::KvCache;
use super::load::Hyper;
use super::parallel::for_each_piece;
use super::vector::{HeadView, attend_head};

/// Attends the queries of the `seq` new positions (at `pos..pos + seq`, their keys and values
/// already in `cache`) and writes `seq * n_head * head_dim` values to `out`.
///
/// `qkv` holds, per position, the rotated queries of every head, then keys and values.
pub fn attend(qkv: &[f32], cache: &KvCache, h: &Hyper, pos: usize, seq: usize, out: &mut Vec<f32>) {
    let hd = h.head_dim;
    let (q_width, kv_width) = (h.n_head * hd, h.n_kv_head * hd);
    let qkv_width = q_width + 2 * kv_width;
    let n_rep = h.n_head / h.n_kv_head.max(1);
    let scale = (1.0 / (hd as f64).sqrt()) as f32;
    let (keys, values) = (cache.keys(), cache.values());
    out.clear();
    out.resize(seq * q_width, 0.0);
    // One item per position and key/value head: the queries sharing that head together.
    let group = n_rep * hd;
    for_each_piece(out, seq * h.n_kv_head, group, 1, |items, piece| {
        let mut scores = Vec::new();
        for (item, o) in items.zip(piece.chunks_exact_mut(group)) {
            let (t, kv_head) = (item / h.n_kv_head, item % h.n_kv_head);
            let start = t * qkv_width + kv_head * group;
            let Some(q) = qkv.get(start..start + group) else {
                return;
            };
            let view = HeadView {
                keys,
                values,
                stride: kv_width,
                offset: kv_head * hd,
                head_dim: hd,
                len: (pos + t + 1).min(keys.len() / kv_width.max(1)),
            };
            attend_head(q, view, scale, &mut scores, o);
        }
    });
}
