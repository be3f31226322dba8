//! A key/value cache that grows in place and can be cut back to a prefix.

/// The keys and values of one attention layer, position after position, each position holding
/// `width` values (every key/value head in turn).
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    width: usize,
    k: Vec<f32>,
    v: Vec<f32>,
}

impl KvCache {
    /// An empty cache of positions `width` values wide.
    pub fn new(width: usize) -> Self {
        Self {
            width,
            k: Vec::new(),
            v: Vec::new(),
        }
    }

    /// Positions held.
    pub fn len(&self) -> usize {
        self.k.len().checked_div(self.width).unwrap_or(0)
    }

    /// Keeps only the first `len` positions (the storage stays allocated).
    pub fn truncate(&mut self, len: usize) {
        self.k.truncate(len * self.width);
        self.v.truncate(len * self.width);
    }

    /// Appends one position's keys and values (`width` values each; longer input is cut).
    pub fn push(&mut self, k: &[f32], v: &[f32]) {
        let w = self.width;
        self.k
            .extend(k.iter().copied().chain(std::iter::repeat(0.0)).take(w));
        self.v
            .extend(v.iter().copied().chain(std::iter::repeat(0.0)).take(w));
    }

    /// The keys of every position held.
    pub fn keys(&self) -> &[f32] {
        &self.k
    }

    /// The values of every position held.
    pub fn values(&self) -> &[f32] {
        &self.v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_then_push_overwrites_the_tail() {
        let mut c = KvCache::new(2);
        for i in 0..3 {
            let x = [i as f32, i as f32 + 0.5];
            c.push(&x, &x);
        }
        c.truncate(1);
        c.push(&[100.0, 101.0], &[7.0, 8.0]);
        assert_eq!(c.len(), 2);
        assert_eq!(c.keys(), [0.0, 0.5, 100.0, 101.0]);
        assert_eq!(c.values(), [0.0, 0.5, 7.0, 8.0]);
    }
}
