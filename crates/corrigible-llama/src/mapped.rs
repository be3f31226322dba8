//! The GGUF file mapped into memory, so that weights kept in their stored layout are read in
//! place: the kernel's pages are shared with the page cache, and rows never touched (most of a
//! large embedding table) are never read from disk.

use std::fs::File;
use std::io::Cursor;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use candle_core::quantized::{GgmlDType, QTensor, gguf_file};
use candle_core::{Device, Result};
use memmap2::Mmap;

/// A whole GGUF file, mapped read-only.
#[derive(Clone)]
pub struct MappedFile {
    map: Arc<Mmap>,
}

impl MappedFile {
    /// Maps the file at `path`.
    #[allow(unsafe_code)]
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = File::open(path)?;
        // SAFETY: the mapping is read-only and private to this process. Like llama.cpp and
        // candle's safetensors loader, it relies on the model file not being truncated or
        // rewritten while the model is loaded; corrigible never writes to it.
        let map = unsafe { Mmap::map(&file)? };
        Ok(Self { map: Arc::new(map) })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// A reader over the file, for candle's GGUF parser.
    pub fn reader(&self) -> Cursor<&[u8]> {
        Cursor::new(self.bytes())
    }

    /// Tensor `name` of `ct` copied out by candle.
    pub fn tensor(&self, ct: &gguf_file::Content, name: &str) -> Result<QTensor> {
        ct.tensor(&mut self.reader(), name, &Device::Cpu)
    }

    /// The stored bytes of tensor `name`, in place, with its format and dimensions (GGUF
    /// order: the row length first).
    pub fn stored(&self, ct: &gguf_file::Content, name: &str) -> Result<Stored> {
        let Some(info) = ct.tensor_infos.get(name) else {
            candle_core::bail!("no tensor `{name}` in the file");
        };
        let dtype = info.ggml_dtype;
        let count = info.shape.elem_count();
        if !count.is_multiple_of(dtype.block_size()) {
            candle_core::bail!("tensor `{name}` is not a whole number of blocks");
        }
        let len = count / dtype.block_size() * dtype.type_size();
        let start = usize::try_from(ct.tensor_data_offset.saturating_add(info.offset))
            .unwrap_or(usize::MAX);
        let range = start..start.saturating_add(len);
        if range.end > self.map.len() || range.end == usize::MAX {
            candle_core::bail!("tensor `{name}` lies past the end of the file");
        }
        let mut dims = info.shape.dims().to_vec();
        dims.reverse();
        Ok(Stored {
            bytes: Bytes {
                source: Source::Mapped(Arc::clone(&self.map)),
                range,
            },
            dtype,
            dims,
        })
    }
}

/// A tensor's bytes as stored, its format and its dimensions, the row length first.
#[derive(Clone)]
pub struct Stored {
    /// The blocks, row after row.
    pub bytes: Bytes,
    /// Their format.
    pub dtype: GgmlDType,
    /// Values per row, then rows (then further dimensions).
    pub dims: Vec<usize>,
}

/// Calls `f` with `src` at an 8-byte-aligned address, copying it there when it is not: candle
/// reads quantized blocks in place and asserts their alignment, which a file's layout or a
/// `Vec<u8>` does not promise.
pub(crate) fn with_aligned<R>(src: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    if src.as_ptr().align_offset(8) == 0 {
        return f(src);
    }
    let mut padded = vec![0u8; src.len() + 8];
    let at = padded.as_ptr().align_offset(8).min(8);
    padded[at..at + src.len()].copy_from_slice(src);
    f(&padded[at..at + src.len()])
}

#[cfg(test)]
impl Stored {
    /// A copy of candle's tensor `t`.
    pub fn owned(t: &QTensor) -> Result<Self> {
        let mut dims = t.shape().dims().to_vec();
        dims.reverse();
        Ok(Self {
            bytes: Bytes::owned(t.data()?.into_owned()),
            dtype: t.dtype(),
            dims,
        })
    }
}

/// Read-only bytes, either a range of a mapped file or owned.
#[derive(Clone)]
pub struct Bytes {
    source: Source,
    range: Range<usize>,
}

#[derive(Clone)]
enum Source {
    Mapped(Arc<Mmap>),
    #[cfg(test)]
    Owned(Arc<[u8]>),
}

impl Bytes {
    /// Owned bytes (weights built in memory, as in tests).
    #[cfg(test)]
    pub fn owned(data: Vec<u8>) -> Self {
        let range = 0..data.len();
        Self {
            source: Source::Owned(data.into()),
            range,
        }
    }

    /// Whether the bytes are read in place from a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.source, Source::Mapped(_))
    }
}

impl Deref for Bytes {
    type Target = [u8];

    // Outside tests the only source is a mapping.
    #[allow(clippy::infallible_destructuring_match)]
    fn deref(&self) -> &[u8] {
        let all: &[u8] = match &self.source {
            Source::Mapped(m) => m,
            #[cfg(test)]
            Source::Owned(v) => v,
        };
        all.get(self.range.clone()).unwrap_or(&[])
    }
}
