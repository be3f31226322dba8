//! K-quant weight matrices kept in the file's layout, row after row, so that they are read in
//! place from the mapped file. A kernel reads several rows per pass for one activation vector
//! (decode), or four rows for four vectors at a time (prefill), unpacking each weight block
//! once per pass. On a CPU with AMX or AVX-512 VNNI, prefill of several vectors goes to the tile
//! kernels of `ktiles.rs` instead (`ktiles::TILE_MIN_VECTORS`, `ktiles::VNNI_MIN_VECTORS`).

use std::marker::PhantomData;
use std::ops::Range;

use super::mapped::Bytes;
use super::q8k::{K_BLOCK, KAct, Q8KVectors};
use super::quad::MatrixError;

/// How far ahead of the block a kernel reads, in bytes, it asks for the bytes that follow
/// (further on in the row, or the rows after it). The hardware prefetchers alone left decode
/// waiting on memory: on Qwen2.5-Coder-1.5B asking nearly doubled decode speed, and 16 KiB
/// ahead beat 4 KiB on an AMD EPYC (`docs/benchmarks.md`).
const PREFETCH_AHEAD: usize = 16384;

/// Asks the CPU to bring the `len` bytes [`PREFETCH_AHEAD`] past `at` into its caches. A
/// prefetch never faults, so the address may lie past the end of the weights.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse")]
pub(crate) fn prefetch_ahead(at: *const u8, len: usize) {
    prefetch(at.wrapping_add(PREFETCH_AHEAD), len);
}

/// Asks the CPU to bring the `len` bytes at `at` into its caches; any address will do.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse")]
pub(crate) fn prefetch(at: *const u8, len: usize) {
    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
    for line in (0..len).step_by(64) {
        _mm_prefetch::<_MM_HINT_T0>(at.wrapping_add(line).cast());
    }
}

/// Weight rows a pre-fill kernel call reads together.
const PREFILL_ROWS: usize = 4;
/// Activation vectors a pre-fill kernel call reads together.
const PREFILL_VECTORS: usize = 4;

/// A K-quant block format.
pub trait KFormat {
    /// The format's name, for errors.
    const FORMAT: &'static str;
    /// Bytes of one block of 256 values.
    const BLOCK_BYTES: usize;
}

/// Dot products of `R` weight rows with `N` activation vectors.
pub trait Kernel {
    /// `out[v][k]` is row `k` of `w` times vector `v` of `x`, over the blocks all of them hold.
    fn dot<const R: usize, const N: usize>(&self, w: [&[u8]; R], x: [KAct<'_>; N])
    -> [[f32; R]; N];
}

/// A weight matrix of `rows` rows of `cols` values in the K-quant format `F`, as stored.
#[derive(Clone)]
pub struct KMatrix<F> {
    rows: usize,
    cols: usize,
    bytes: Bytes,
    format: PhantomData<F>,
}

impl<F: KFormat> std::fmt::Debug for KMatrix<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}x{}", F::FORMAT, self.rows, self.cols)
    }
}

impl<F: KFormat> KMatrix<F> {
    /// The matrix whose blocks, `rows * cols / 256` of them row-major, are `bytes`.
    pub fn new(bytes: Bytes, rows: usize, cols: usize) -> Result<Self, MatrixError> {
        if cols == 0 || !cols.is_multiple_of(K_BLOCK) {
            return Err(MatrixError::KRowLength(cols));
        }
        if bytes.len() != rows * (cols / K_BLOCK) * F::BLOCK_BYTES {
            return Err(MatrixError::DataSize {
                format: F::FORMAT,
                got: bytes.len(),
                rows,
                cols,
            });
        }
        Ok(Self {
            rows,
            cols,
            bytes,
            format: PhantomData,
        })
    }

    /// Rows (outputs).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Values per row (inputs).
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Whether the weights are read in place from the mapped file.
    pub fn is_mapped(&self) -> bool {
        self.bytes.is_mapped()
    }

    /// The blocks of row `r` (empty past the last row).
    pub fn row(&self, r: usize) -> &[u8] {
        let len = self.cols / K_BLOCK * F::BLOCK_BYTES;
        self.bytes.get(r * len..(r + 1) * len).unwrap_or(&[])
    }

    /// Dot products of rows `rows` with every vector of `x` by `kernel`, written row-major by
    /// weight row: `out[(r - rows.start) * x.len() + t]` is row `r` times vector `t`.
    ///
    /// Nothing is written when the shapes disagree (`x` of another width, `out` of another
    /// size, rows out of range).
    pub(super) fn dot_rows_with<K: Kernel>(
        &self,
        rows: Range<usize>,
        x: &Q8KVectors,
        out: &mut [f32],
        kernel: &K,
    ) {
        let n = x.len();
        if x.cols() != self.cols
            || rows.start > rows.end
            || rows.end > self.rows
            || out.len() != rows.len() * n
        {
            return;
        }
        if n == 1 {
            let a = x.vector(0);
            let mut r = rows.start;
            for o in out.chunks_exact_mut(4) {
                let w = [
                    self.row(r),
                    self.row(r + 1),
                    self.row(r + 2),
                    self.row(r + 3),
                ];
                let [dots] = kernel.dot(w, [a]);
                o.copy_from_slice(&dots);
                r += 4;
            }
            for o in out.chunks_exact_mut(4).into_remainder() {
                let [[dot]] = kernel.dot([self.row(r)], [a]);
                *o = dot;
                r += 1;
            }
            return;
        }
        let start = rows.start;
        let mut r = start;
        while r + PREFILL_ROWS <= rows.end {
            self.prefill_tile::<PREFILL_ROWS, K>(r, r - start, x, out, kernel);
            r += PREFILL_ROWS;
        }
        for r in r..rows.end {
            self.prefill_tile::<1, K>(r, r - start, x, out, kernel);
        }
    }

    /// Rows `r .. r + RT` times every vector of `x`, into `out` from output row `o`.
    #[inline]
    fn prefill_tile<const RT: usize, K: Kernel>(
        &self,
        r: usize,
        o: usize,
        x: &Q8KVectors,
        out: &mut [f32],
        kernel: &K,
    ) {
        let n = x.len();
        let w: [&[u8]; RT] = std::array::from_fn(|k| self.row(r + k));
        let mut put = |t: usize, dots: &[[f32; RT]]| {
            for (v, dots) in dots.iter().enumerate() {
                for (k, &d) in dots.iter().enumerate() {
                    if let Some(slot) = out.get_mut((o + k) * n + t + v) {
                        *slot = d;
                    }
                }
            }
        };
        let mut t = 0;
        while t + PREFILL_VECTORS <= n {
            let v: [KAct<'_>; PREFILL_VECTORS] = std::array::from_fn(|i| x.vector(t + i));
            put(t, &kernel.dot(w, v));
            t += PREFILL_VECTORS;
        }
        for t in t..n {
            put(t, &kernel.dot(w, [x.vector(t)]));
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use candle_core::quantized::{GgmlDType, QTensor};
    use candle_core::{Device, Tensor};

    use super::super::q8::tests::noise;
    use super::*;

    /// Weights quantized by candle, and candle's dequantization of them.
    pub(in super::super) fn candle_blocks(
        dtype: GgmlDType,
        rows: usize,
        cols: usize,
        seed: u64,
    ) -> (Vec<u8>, Vec<f32>) {
        let w: Vec<f32> = noise(rows * cols, seed)
            .iter()
            .enumerate()
            .map(|(i, v)| v * (1.0 + (i / 64 % 7) as f32))
            .collect();
        let t = Tensor::from_slice(&w, (rows, cols), &Device::Cpu).expect("tensor");
        let q = QTensor::quantize(&t, dtype).expect("quantize");
        let dense = q
            .dequantize(&Device::Cpu)
            .and_then(|t| t.flatten_all())
            .and_then(|t| t.to_vec1())
            .expect("dequantize");
        (q.data().expect("data").into_owned(), dense)
    }

    /// Random bytes as blocks of `block_bytes`, each with finite f16 values at `f16_at`
    /// (scales of any sign and size up to about 1, as in real files).
    pub(in super::super) fn random_blocks(
        n: usize,
        block_bytes: usize,
        f16_at: &[usize],
        seed: u64,
    ) -> Vec<u8> {
        let raw = noise(n * block_bytes, seed);
        let mut bytes: Vec<u8> = raw.iter().map(|v| ((v + 1.0) * 128.0) as u8).collect();
        for (b, block) in bytes.chunks_exact_mut(block_bytes).enumerate() {
            for (i, &at) in f16_at.iter().enumerate() {
                let v = raw[b * block_bytes + i] * 0.05;
                block[at..at + 2].copy_from_slice(&half::f16::from_f32(v).to_le_bytes());
            }
        }
        bytes
    }

    /// Candle's dequantization of raw `bytes` in `dtype`.
    pub(in super::super) fn candle_dequantize(
        bytes: &[u8],
        dtype: GgmlDType,
        n: usize,
    ) -> Vec<f32> {
        use candle_core::quantized::QStorage;
        super::super::mapped::with_aligned(bytes, |bytes| {
            let storage =
                QStorage::from_data(std::borrow::Cow::Borrowed(bytes), &Device::Cpu, dtype)
                    .expect("storage");
            QTensor::new(storage, (n,))
                .and_then(|t| t.dequantize(&Device::Cpu))
                .and_then(|t| t.to_vec1())
                .expect("dequantize")
        })
    }

    /// Row `r` of `dense` (rows of `cols`) times vector `t` of `x` dequantized, in f64, and
    /// the sum of the products' magnitudes (the scale of the rounding errors).
    pub(in super::super) fn reference(
        dense: &[f32],
        cols: usize,
        x: &Q8KVectors,
        r: usize,
        t: usize,
    ) -> (f64, f64) {
        let a = x.vector(t);
        let (mut sum, mut size) = (0f64, 0f64);
        for (i, &w) in dense[r * cols..(r + 1) * cols].iter().enumerate() {
            let p = w as f64 * a.q[i] as f64 * a.d[i / K_BLOCK] as f64;
            sum += p;
            size += p.abs();
        }
        (sum, size)
    }

    pub(in super::super) fn vectors(n: usize, cols: usize, seed: u64) -> Q8KVectors {
        let mut x = Q8KVectors::default();
        let xs: Vec<f32> = noise(n * cols, seed).iter().map(|v| v * 3.0).collect();
        x.quantize(&xs, cols).expect("quantize");
        x
    }

    struct Zero;
    impl KFormat for Zero {
        const FORMAT: &'static str = "test";
        const BLOCK_BYTES: usize = 4;
    }

    #[test]
    fn bad_shapes_are_errors_not_panics() {
        assert_eq!(
            KMatrix::<Zero>::new(Bytes::owned(vec![0; 8]), 2, 128).err(),
            Some(MatrixError::KRowLength(128))
        );
        assert_eq!(
            KMatrix::<Zero>::new(Bytes::owned(vec![0; 7]), 2, 256).err(),
            Some(MatrixError::DataSize {
                format: "test",
                got: 7,
                rows: 2,
                cols: 256
            })
        );
        let m = KMatrix::<Zero>::new(Bytes::owned(vec![0; 8]), 2, 256).expect("matrix");
        assert!(m.row(2).is_empty());
        assert_eq!(m.row(1).len(), 4);
    }
}
