//! Causal grouped-query attention of new positions over the key/value cache.

use super::cache::KvCache;
use super::head::{HeadView, attend_head};
use super::load::Hyper;
use super::parallel::for_each_piece;

/// Attends the queries of the `seq` new positions (at `pos..pos + seq`, their keys and values
/// already in `cache`) and writes `seq * n_head * head_dim` values to `out`.
///
/// `qkv` holds, per position, the rotated queries of every head, then keys and values.
pub fn attend(qkv: &[f32], cache: &KvCache, h: &Hyper, pos: usize, seq: usize, out: &mut Vec<f32>) {
    let hd = h.head_dim;
    let (q_width, kv_width) = (h.n_head * hd, h.n_kv_head * hd);
    let qkv_width = q_width + 2 * kv_width;
    let n_rep = (h.n_head / h.n_kv_head.max(1)).max(1);
    let scale = (1.0 / (hd as f64).sqrt()) as f32;
    out.clear();
    out.resize(seq * q_width, 0.0);
    // One item per position and key/value head (the queries sharing it read each key once),
    // or, for a single position, per query head so that the threads share the work evenly.
    let per_item = if seq == 1 { 1 } else { n_rep };
    let items_per_pos = h.n_head / per_item;
    let item_len = per_item * hd;
    for_each_piece(out, seq * items_per_pos, item_len, 1, |items, piece| {
        let mut scores = Vec::new();
        for (item, o) in items.zip(piece.chunks_exact_mut(item_len)) {
            let (t, first) = (item / items_per_pos, item % items_per_pos * per_item);
            let start = t * qkv_width + first * hd;
            let Some(q) = qkv.get(start..start + item_len) else {
                return;
            };
            let kv_head = first / n_rep;
            let view = HeadView {
                keys: cache.keys(kv_head),
                values: cache.values(kv_head),
                head_dim: hd,
                len: pos + t + 1,
            };
            attend_head(q, view, scale, &mut scores, o);
        }
    });
}

/// One new position of each of several sequences, attended in one share-out among the
/// threads: `rows[i]` is `(row, cache, pos)`, the position's row of `qkv` and its sequence's
/// cache and position (its key and value already in the cache). Writes `rows.len() * n_head *
/// head_dim` values to `out`, row after row, each as [`attend`] writes it for one position.
pub fn attend_each(qkv: &[f32], rows: &[(usize, &KvCache, usize)], h: &Hyper, out: &mut Vec<f32>) {
    let hd = h.head_dim;
    let (q_width, kv_width) = (h.n_head * hd, h.n_kv_head * hd);
    let qkv_width = q_width + 2 * kv_width;
    let n_rep = (h.n_head / h.n_kv_head.max(1)).max(1);
    let scale = (1.0 / (hd as f64).sqrt()) as f32;
    out.clear();
    out.resize(rows.len() * q_width, 0.0);
    for_each_piece(out, rows.len() * h.n_head, hd, 1, |items, piece| {
        let mut scores = Vec::new();
        for (item, o) in items.zip(piece.chunks_exact_mut(hd)) {
            let ((row, cache, pos), head) = (rows[item / h.n_head], item % h.n_head);
            let start = row * qkv_width + head * hd;
            let Some(q) = qkv.get(start..start + hd) else {
                return;
            };
            let kv_head = head / n_rep;
            let view = HeadView {
                keys: cache.keys(kv_head),
                values: cache.values(kv_head),
                head_dim: hd,
                len: pos + 1,
            };
            attend_head(q, view, scale, &mut scores, o);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hyper(n_head: usize, n_kv_head: usize, head_dim: usize) -> Hyper {
        Hyper {
            n_head,
            n_kv_head,
            head_dim,
            n_layer: 1,
            embedding_length: n_head * head_dim,
            rope_dim: head_dim,
            rope_freq_base: 10_000.0,
            rope_style: super::super::RopeStyle::Interleaved,
            rms_norm_eps: 1e-5,
            context_length: 64,
        }
    }

    /// Straightforward causal attention over position-major keys and values, in f64.
    fn reference(qkv: &[f32], h: &Hyper, keys: &[f32], values: &[f32], pos: usize) -> Vec<f32> {
        let hd = h.head_dim;
        let (q_width, kv_width) = (h.n_head * hd, h.n_kv_head * hd);
        let n_rep = h.n_head / h.n_kv_head;
        let mut out = Vec::new();
        for (t, row) in qkv.chunks_exact(q_width + 2 * kv_width).enumerate() {
            for head in 0..h.n_head {
                let q = &row[head * hd..(head + 1) * hd];
                let off = head / n_rep * hd;
                let len = pos + t + 1;
                let s: Vec<f64> = (0..len)
                    .map(|j| {
                        let k = &keys[j * kv_width + off..][..hd];
                        let d: f64 = q.iter().zip(k).map(|(a, b)| *a as f64 * *b as f64).sum();
                        d / (hd as f64).sqrt()
                    })
                    .collect();
                let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|x| (x - max).exp()).collect();
                let total: f64 = e.iter().sum();
                for d in 0..hd {
                    let v: f64 = (0..len)
                        .map(|j| e[j] / total * values[j * kv_width + off + d] as f64)
                        .sum();
                    out.push(v as f32);
                }
            }
        }
        out
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "minutes under Miri; the portable path is covered by the smaller tests"
    )]
    fn agrees_with_reference() {
        for (n_head, n_kv_head, hd) in [(9, 3, 64), (4, 4, 8), (6, 2, 128)] {
            let h = hyper(n_head, n_kv_head, hd);
            let (q_width, kv_width) = (n_head * hd, n_kv_head * hd);
            let qkv_width = q_width + 2 * kv_width;
            let total = 45;
            let all: Vec<f32> = (0..total * qkv_width)
                .map(|i| (i as f32 * 0.013).sin() * 3.0)
                .collect();
            for (pos, seq) in [(0, 1), (0, 13), (13, 1), (13, 32), (44, 1)] {
                let mut cache = KvCache::new(n_kv_head, hd);
                let (mut keys, mut values) = (Vec::new(), Vec::new());
                // The reference reads the values as the cache holds them, rounded to f16.
                for row in all.chunks_exact(qkv_width).take(pos + seq) {
                    let (k, v) = row[q_width..].split_at(kv_width);
                    cache.push(k, v);
                    keys.extend(k.iter().map(|&x| half::f16::from_f32(x).to_f32()));
                    values.extend(v.iter().map(|&x| half::f16::from_f32(x).to_f32()));
                }
                let qkv = &all[pos * qkv_width..(pos + seq) * qkv_width];
                let mut out = Vec::new();
                attend(qkv, &cache, &h, pos, seq, &mut out);
                let want = reference(qkv, &h, &keys, &values, pos);
                assert_eq!(out.len(), want.len());
                for (got, w) in out.iter().zip(&want) {
                    assert!(
                        (got - w).abs() < 1e-4,
                        "{n_head}/{n_kv_head}x{hd} at {pos}+{seq}"
                    );
                }
            }
        }
    }
}
