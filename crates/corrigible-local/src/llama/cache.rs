//! A key/value cache that grows in place and can be cut back to a prefix.

use candle_core::{Result, Tensor};

/// Room added to a layer's cache each time it grows.
const GROW_BY: usize = 512;

/// The keys and values of one attention layer, `(1, kv_heads, len, head_dim)` each.
#[derive(Debug, Clone, Default)]
pub struct KvCache {
    k: Option<Tensor>,
    v: Option<Tensor>,
    len: usize,
}

impl KvCache {
    /// Positions held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Keeps only the first `len` positions (the storage stays allocated).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    fn capacity(&self) -> usize {
        self.k.as_ref().and_then(|k| k.dim(2).ok()).unwrap_or(0)
    }

    fn grow(&mut self, k: &Tensor, needed: usize) -> Result<()> {
        let cap = needed.div_ceil(GROW_BY) * GROW_BY;
        let mut shape = k.dims().to_vec();
        shape[2] = cap;
        let new_k = Tensor::zeros(shape.as_slice(), k.dtype(), k.device())?;
        let new_v = Tensor::zeros(shape.as_slice(), k.dtype(), k.device())?;
        if let (Some(old_k), Some(old_v)) = (&self.k, &self.v)
            && self.len > 0
        {
            new_k.slice_set(&old_k.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
            new_v.slice_set(&old_v.narrow(2, 0, self.len)?.contiguous()?, 2, 0)?;
        }
        self.k = Some(new_k);
        self.v = Some(new_v);
        Ok(())
    }

    /// Appends `k` and `v` (contiguous, `(1, kv_heads, n, head_dim)`) and returns views of
    /// everything held.
    pub fn append(&mut self, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let n = k.dim(2)?;
        if self.len + n > self.capacity() {
            self.grow(k, self.len + n)?;
        }
        let (Some(all_k), Some(all_v)) = (&self.k, &self.v) else {
            candle_core::bail!("kv cache was not allocated");
        };
        all_k.slice_set(k, 2, self.len)?;
        all_v.slice_set(v, 2, self.len)?;
        self.len += n;
        Ok((all_k.narrow(2, 0, self.len)?, all_v.narrow(2, 0, self.len)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn block(start: f32, n: usize) -> Tensor {
        let data: Vec<f32> = (0..n * 2).map(|i| start + i as f32).collect();
        Tensor::from_vec(data, (1, 1, n, 2), &Device::Cpu).expect("tensor")
    }

    #[test]
    fn truncate_then_append_overwrites_the_tail() -> Result<()> {
        let mut c = KvCache::default();
        c.append(&block(0.0, 3), &block(0.0, 3))?;
        c.truncate(1);
        let (k, _) = c.append(&block(100.0, 1), &block(100.0, 1))?;
        assert_eq!(c.len(), 2);
        let got: Vec<f32> = k.flatten_all()?.to_vec1()?;
        assert_eq!(got, [0.0, 1.0, 100.0, 101.0]);
        Ok(())
    }

    #[test]
    fn grows_past_one_chunk() -> Result<()> {
        let mut c = KvCache::default();
        c.append(&block(0.0, GROW_BY - 1), &block(0.0, GROW_BY - 1))?;
        let (k, _) = c.append(&block(7.0, 3), &block(7.0, 3))?;
        assert_eq!(k.dims(), [1, 1, GROW_BY + 2, 2]);
        let last: Vec<f32> = k.narrow(2, GROW_BY + 1, 1)?.flatten_all()?.to_vec1()?;
        assert_eq!(last, [11.0, 12.0]);
        Ok(())
    }
}
