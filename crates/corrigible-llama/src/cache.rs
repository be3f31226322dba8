//! A key/value cache that grows in place and can be cut back to a prefix.

use std::io::{self, Read, Write};

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

    /// Bytes held by the keys and values of the positions held.
    pub fn bytes(&self) -> usize {
        self.k.iter().chain(&self.v).map(Vec::len).sum::<usize>() * std::mem::size_of::<f16>()
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

    /// Writes the keys, then the values, of the first `len` positions (at most those held),
    /// head after head, as little-endian f16: what [`KvCache::read_from`] reads back.
    pub fn write_to(&self, len: usize, out: &mut impl Write) -> io::Result<()> {
        let n = len.min(self.len()) * self.head_dim;
        let mut bytes = Vec::with_capacity(2 * n);
        for head in self.k.iter().chain(&self.v) {
            bytes.clear();
            for x in &head[..n] {
                bytes.extend_from_slice(&x.to_le_bytes());
            }
            out.write_all(&bytes)?;
        }
        Ok(())
    }

    /// Replaces what is held by `len` positions read as [`KvCache::write_to`] wrote them.
    pub fn read_from(&mut self, len: usize, input: &mut impl Read) -> io::Result<()> {
        let n = len * self.head_dim;
        let mut bytes = vec![0u8; 2 * n];
        for head in self.k.iter_mut().chain(&mut self.v) {
            input.read_exact(&mut bytes)?;
            head.clear();
            head.extend(
                bytes
                    .chunks_exact(2)
                    .map(|b| f16::from_le_bytes([b[0], b[1]])),
            );
        }
        Ok(())
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

    #[test]
    fn what_is_written_reads_back_cut_to_the_length_asked() {
        let mut c = KvCache::new(2, 2);
        for i in 0..3 {
            let x = [i as f32, 0.5, -(i as f32), 2.0];
            c.push(&x, &x.map(|v| v * 10.0));
        }
        let mut bytes = Vec::new();
        c.write_to(2, &mut bytes).expect("write");
        assert_eq!(bytes.len(), 2 * 2 * 2 * 2 * 2);
        let mut back = KvCache::new(2, 2);
        back.read_from(2, &mut bytes.as_slice()).expect("read");
        c.truncate(2);
        assert_eq!(back.len(), 2);
        for h in 0..2 {
            assert_eq!(back.keys(h), c.keys(h));
            assert_eq!(back.values(h), c.values(h));
        }
        let short = &bytes[..bytes.len() - 1];
        assert!(KvCache::new(2, 2).read_from(2, &mut &short[..]).is_err());
    }
}
