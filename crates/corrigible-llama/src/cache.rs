//! A key/value cache that grows in place and can be cut back to a prefix.

use half::f16;

/// The keys and values of one attention layer, head after head: the keys (and the values) of
/// one key/value head are one contiguous slice, position after position. They are held in
/// f16, as llama.cpp's default cache: half the memory traffic of attention over long contexts.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    head_dim: usize,
    k: Vec<Vec<f16>>,
    v: Vec<Vec<f16>>,
}

impl KvCache {
    /// An empty cache of `n_head` key/value heads of `head_dim` values.
    pub fn new(n_head: usize, head_dim: usize) -> Self {
        Self {
            head_dim,
            k: vec![Vec::new(); n_head],
            v: vec![Vec::new(); n_head],
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.k
            .first()
            .and_then(|k| k.len().checked_div(self.head_dim))
            .unwrap_or(0)
    }

    /// Whether no position is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps only the first `len` positions (the storage stays allocated).
    pub fn truncate(&mut self, len: usize) {
        for x in self.k.iter_mut().chain(&mut self.v) {
            x.truncate(len * self.head_dim);
        }
    }

    /// Appends one position's keys and values (`n_head * head_dim` values each, head after
    /// head; longer input is cut, shorter padded with zeros), rounded to the nearest f16.
    pub fn push(&mut self, k: &[f32], v: &[f32]) {
        let hd = self.head_dim;
        for (heads, x) in [(&mut self.k, k), (&mut self.v, v)] {
            for (h, head) in heads.iter_mut().enumerate() {
                let src = x.get(h * hd..).unwrap_or(&[]);
                head.extend(
                    src.iter()
                        .map(|&x| f16::from_f32(x))
                        .chain(std::iter::repeat(f16::ZERO))
                        .take(hd),
                );
            }
        }
    }

    /// The keys of key/value head `head` at every position held (empty past the last head).
    pub fn keys(&self, head: usize) -> &[f16] {
        self.k.get(head).map_or(&[], Vec::as_slice)
    }

    /// The values of key/value head `head` at every position held (empty past the last head).
    pub fn values(&self, head: usize) -> &[f16] {
        self.v.get(head).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_then_push_overwrites_the_tail() {
        let mut c = KvCache::new(2, 1);
        for i in 0..3 {
            let x = [i as f32, i as f32 + 0.5];
            c.push(&x, &x);
        }
        c.truncate(1);
        c.push(&[100.0, 101.0], &[7.0, 8.0]);
        assert_eq!(c.len(), 2);
        let f = |x: &[f16]| x.iter().map(|v| v.to_f32()).collect::<Vec<_>>();
        assert_eq!(f(c.keys(0)), [0.0, 100.0]);
        assert_eq!(f(c.keys(1)), [0.5, 101.0]);
        assert_eq!(f(c.values(0)), [0.0, 7.0]);
        assert_eq!(f(c.values(1)), [0.5, 8.0]);
        assert!(c.keys(2).is_empty());
    }
}
