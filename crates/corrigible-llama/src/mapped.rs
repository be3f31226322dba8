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

    /// Drops the pages of `range` (offsets into these bytes, widened to whole pages) from
    /// this process's resident memory once their bytes have been copied elsewhere; they are
    /// read again from the file, unchanged, if they are ever touched again.
    #[allow(unsafe_code)]
    pub(crate) fn release(&self, range: Range<usize>) {
        #[allow(irrefutable_let_patterns)]
        let Source::Mapped(map) = &self.source else {
            return;
        };
        let start = self.range.start.saturating_add(range.start);
        let end = self
            .range
            .start
            .saturating_add(range.end)
            .min(self.range.end);
        if start >= end {
            return;
        }
        // SAFETY: the mapping is read-only, so no page of it was ever written: after
        // MADV_DONTNEED a read faults the file's same bytes back in, and what any borrow of
        // the mapping sees does not change. The range lies inside the mapping (memmap2
        // widens it to the page boundary below, still inside).
        #[cfg(unix)]
        unsafe {
            let _ =
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start);
        }
        #[cfg(not(unix))]
        let _ = map;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The resident pages of the process's mapping of `path`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn resident_kib(path: &Path) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let name = path.display().to_string();
        let mut inside = false;
        let mut kib = 0;
        for line in smaps.lines() {
            if line.contains('-') && line.split_whitespace().count() >= 5 {
                inside = line.ends_with(&name);
            } else if inside && let Some(rest) = line.strip_prefix("Rss:") {
                kib += rest
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .unwrap_or(0);
            }
        }
        kib
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot map a file")]
    fn released_pages_leave_memory_and_read_back_unchanged() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("weights.bin");
        let data: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).expect("write");
        let file = MappedFile::open(&path).expect("map");
        let bytes = Bytes {
            source: Source::Mapped(Arc::clone(&file.map)),
            range: 4096..data.len(),
        };
        let sum: u64 = bytes.iter().map(|&b| u64::from(b)).sum();
        #[cfg(target_os = "linux")]
        let before = resident_kib(&path);
        bytes.release(0..bytes.len());
        #[cfg(target_os = "linux")]
        {
            let after = resident_kib(&path);
            assert!(
                after + 3000 < before,
                "{before} kB resident before, {after} after"
            );
        }
        assert_eq!(bytes.iter().map(|&b| u64::from(b)).sum::<u64>(), sum);
        assert_eq!(bytes[..], data[4096..]);
        let (from, to) = (10, 5);
        bytes.release(from..to);
        bytes.release(0..usize::MAX);
    }
}
