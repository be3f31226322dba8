//! K-quant weight matrices kept in the file's layout, row after row, so that they are read in
//! place from the mapped file, or interleaved by groups of 16 rows on a CPU with AVX-512 VNNI
//! (`kgroups`), whose kernels then take every product the tile kernels do not. Read by rows,
//! a kernel reads several rows per pass for one activation vector (decode), or four rows for
//! four vectors at a time (prefill), unpacking each weight block once per pass. On a CPU with
//! AMX or AVX-512 VNNI, prefill of several vectors goes to the tile kernels of `ktiles.rs`
//! (`ktiles::TILE_MIN_VECTORS`, `ktiles::VNNI_MIN_VECTORS`).

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use super::kgroups::{self, GroupKernel, Groups};
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
/// Activation vectors a pre-fill kernel call reads together (then half as many, then one).
const PREFILL_VECTORS: usize = 8;

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

/// A weight matrix of `rows` rows of `cols` values in the K-quant format `F`, as stored or
/// interleaved for decode.
#[derive(Clone)]
pub struct KMatrix<F> {
    rows: usize,
    cols: usize,
    layout: Layout,
    format: PhantomData<F>,
}

/// Where a matrix's blocks are.
#[derive(Clone)]
enum Layout {
    /// Row after row, as the file stores them.
    Rows(Bytes),
    /// Sixteen rows at a time, interleaved (`kgroups`).
    Groups(Arc<Groups>),
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
            layout: Layout::Rows(bytes),
            format: PhantomData,
        })
    }

    /// The matrix interleaved by groups of 16 rows when this CPU has the decode kernel of
    /// `F` and the rows fill whole groups, releasing the file's pages; else as it was.
    pub fn interleaved(self) -> Self
    where
        F: GroupKernel,
    {
        match &self.layout {
            Layout::Rows(bytes) if kgroups::wanted::<F>(self.rows) => {
                match Groups::interleave::<F>(bytes, self.rows, self.cols / K_BLOCK) {
                    Some(groups) => Self {
                        layout: Layout::Groups(Arc::new(groups)),
                        ..self
                    },
                    None => self,
                }
            }
            _ => self,
        }
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
        matches!(&self.layout, Layout::Rows(bytes) if bytes.is_mapped())
    }

    /// Whether the rows are interleaved for decode.
    pub fn is_interleaved(&self) -> bool {
        matches!(self.layout, Layout::Groups(_))
    }

    /// The interleaved rows, if they are.
    pub(crate) fn groups(&self) -> Option<&Groups> {
        match &self.layout {
            Layout::Groups(groups) => Some(groups),
            Layout::Rows(_) => None,
        }
    }

    fn row_bytes(&self) -> usize {
        self.cols / K_BLOCK * F::BLOCK_BYTES
    }

    /// The blocks of row `r` as stored row after row (empty past the last row, and for an
    /// interleaved matrix: see [`KMatrix::block`]).
    pub fn row(&self, r: usize) -> &[u8] {
        let len = self.row_bytes();
        match &self.layout {
            Layout::Rows(bytes) => bytes.get(r * len..(r + 1) * len).unwrap_or(&[]),
            Layout::Groups(_) => &[],
        }
    }

    /// Block `b` of row `r` in the file's layout: in place, or gathered into `scratch` (one
    /// block long) from the groups. `None` past the end.
    pub(crate) fn block<'a>(
        &'a self,
        r: usize,
        b: usize,
        scratch: &'a mut [u8],
    ) -> Option<&'a [u8]> {
        match &self.layout {
            Layout::Rows(_) => self
                .row(r)
                .get(b * F::BLOCK_BYTES..(b + 1) * F::BLOCK_BYTES),
            Layout::Groups(groups) => groups.block_into(r, b, scratch).then_some(&*scratch),
        }
    }

    /// Rows `r .. r + count` in the file's layout, one after the other: in place, or gathered
    /// into `scratch`. Rows past the end are left out.
    fn rows_of<'a>(&'a self, r: usize, count: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        let len = self.row_bytes();
        let end = (r + count).min(self.rows);
        match &self.layout {
            Layout::Rows(bytes) => bytes.get(r * len..end * len).unwrap_or(&[]),
            Layout::Groups(groups) => {
                scratch.clear();
                scratch.resize(end.saturating_sub(r) * len, 0);
                for (i, row) in scratch.chunks_exact_mut(len.max(1)).enumerate() {
                    for (b, block) in row.chunks_exact_mut(F::BLOCK_BYTES).enumerate() {
                        groups.block_into(r + i, b, block);
                    }
                }
                scratch
            }
        }
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
        let mut scratch = Vec::new();
        if n == 1 {
            let a = x.vector(0);
            let mut r = rows.start;
            for o in out.chunks_exact_mut(4) {
                let [dots] = kernel.dot(self.rows_array::<4>(r, &mut scratch), [a]);
                o.copy_from_slice(&dots);
                r += 4;
            }
            for o in out.chunks_exact_mut(4).into_remainder() {
                let [[dot]] = kernel.dot(self.rows_array::<1>(r, &mut scratch), [a]);
                *o = dot;
                r += 1;
            }
            return;
        }
        let start = rows.start;
        let mut r = start;
        while r + PREFILL_ROWS <= rows.end {
            let w = self.rows_array::<PREFILL_ROWS>(r, &mut scratch);
            prefill_tile(w, r - start, x, out, kernel);
            r += PREFILL_ROWS;
        }
        for r in r..rows.end {
            prefill_tile(
                self.rows_array::<1>(r, &mut scratch),
                r - start,
                x,
                out,
                kernel,
            );
        }
    }

    /// Rows `r .. r + R` as [`KMatrix::rows_of`] gives them, one slice each (empty past the
    /// end).
    fn rows_array<'a, const R: usize>(
        &'a self,
        r: usize,
        scratch: &'a mut Vec<u8>,
    ) -> [&'a [u8]; R] {
        let len = self.row_bytes();
        let all = self.rows_of(r, R, scratch);
        std::array::from_fn(|k| all.get(k * len..(k + 1) * len).unwrap_or(&[]))
    }

    /// Rows `rows` times every vector of `x` on the interleaved groups, written as
    /// [`KMatrix::dot_rows_with`] writes them; false, writing nothing, when the rows are not
    /// interleaved.
    pub(crate) fn dot_groups(&self, rows: Range<usize>, x: &Q8KVectors, out: &mut [f32]) -> bool
    where
        F: GroupKernel,
    {
        let Some(groups) = self.groups() else {
            return false;
        };
        kgroups::dot_rows::<F>(groups, rows, x, out);
        true
    }
}

/// Rows `w` (from output row `o`) times every vector of `x`, into `out`.
#[inline]
fn prefill_tile<const RT: usize, K: Kernel>(
    w: [&[u8]; RT],
    o: usize,
    x: &Q8KVectors,
    out: &mut [f32],
    kernel: &K,
) {
    let n = x.len();
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
    if t + PREFILL_VECTORS / 2 <= n {
        let v: [KAct<'_>; PREFILL_VECTORS / 2] = std::array::from_fn(|i| x.vector(t + i));
        put(t, &kernel.dot(w, v));
        t += PREFILL_VECTORS / 2;
    }
    for t in t..n {
        put(t, &kernel.dot(w, [x.vector(t)]));
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
