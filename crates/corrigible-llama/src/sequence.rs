//! One sequence's key/value caches, one per layer: what a batched forward pass keeps apart for
//! each of the sequences it runs together.

use crate::cache::KvCache;

/// The keys and values of one sequence, layer after layer. Made by [`crate::Llama::sequence`]
/// for one model; a sequence of another shape is refused by the forward pass.
#[derive(Debug, Clone, Default)]
pub struct Sequence {
    pub(crate) layers: Vec<KvCache>,
}

impl Sequence {
    /// An empty sequence of `n_layer` layers of `n_kv_head` heads of `head_dim` values.
    pub(crate) fn new(n_layer: usize, n_kv_head: usize, head_dim: usize) -> Self {
        Self {
            layers: (0..n_layer)
                .map(|_| KvCache::new(n_kv_head, head_dim))
                .collect(),
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.layers.first().map_or(0, KvCache::len)
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every position from `len` on (the storage stays allocated).
    pub fn truncate(&mut self, len: usize) {
        for layer in &mut self.layers {
            layer.truncate(len);
        }
    }

    /// Bytes held by the keys and values of the positions held.
    pub fn bytes(&self) -> usize {
        self.layers.iter().map(KvCache::bytes).sum()
    }
}

/// One sequence's share of a batched forward pass: its caches, and the tokens fed at its next
/// positions.
pub struct Step<'a> {
    /// The sequence's caches; the tokens' keys and values are appended to them.
    pub sequence: &'a mut Sequence,
    /// The tokens, at least one.
    pub tokens: &'a [u32],
}
