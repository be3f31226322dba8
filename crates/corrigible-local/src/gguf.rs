//! Reading a GGUF file's header (metadata and tensor table) so that a hostile or damaged file
//! is an error, never a panic or an allocation the file cannot back.
//!
//! candle's reader bounds its lengths by the file size, but divides by `general.alignment`
//! (a zero panics) and trusts each tensor's shape and offset until the tensor is read. The
//! alignment is checked by a walk over the metadata before candle reads it, and every tensor
//! of the table is checked to lie within the file before any is read.

use std::io::{Read, Seek, SeekFrom};

use candle_core::quantized::gguf_file;

use crate::error::LocalError;

/// Deepest array nesting walked (candle allows less).
const MAX_DEPTH: usize = 8;

fn bad(message: impl Into<String>) -> LocalError {
    LocalError::Unsupported(format!("GGUF: {}", message.into()))
}

/// Reads the metadata and tensor table of the GGUF file behind `reader`, checking that the
/// data alignment is not zero and that every tensor it lists lies within the file.
pub fn read_header<R: Read + Seek>(reader: &mut R) -> Result<gguf_file::Content, LocalError> {
    let io = |e: std::io::Error| bad(e.to_string());
    let start = reader.stream_position().map_err(io)?;
    let file_len = reader.seek(SeekFrom::End(0)).map_err(io)?;
    reader.seek(SeekFrom::Start(start)).map_err(io)?;
    Walker {
        reader: &mut *reader,
        file_len,
        wide: true,
    }
    .check_alignment()?;
    reader.seek(SeekFrom::Start(start)).map_err(io)?;
    let content = gguf_file::Content::read(reader).map_err(|e| bad(e.to_string()))?;
    for (name, info) in &content.tensor_infos {
        check_tensor(name, info, content.tensor_data_offset, file_len)?;
    }
    Ok(content)
}

/// Reads and checks what a GGUF file declares besides its weights: the header and tensor
/// table, the tokenizer and the chat template.
pub fn check_gguf<R: Read + Seek>(reader: &mut R) -> Result<(), LocalError> {
    let content = read_header(reader)?;
    crate::tokenizer::Tokenizer::from_gguf(&content)?;
    crate::template::ChatTemplate::from_gguf(&content, "", "")?;
    Ok(())
}

/// Checks that `info`'s data, at `data_offset + info.offset`, fits in `file_len` bytes.
fn check_tensor(
    name: &str,
    info: &gguf_file::TensorInfo,
    data_offset: u64,
    file_len: u64,
) -> Result<(), LocalError> {
    let elements = info
        .shape
        .dims()
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| bad(format!("tensor `{name}`: its shape overflows")))?;
    let block = info.ggml_dtype.block_size();
    if block == 0 || !elements.is_multiple_of(block) {
        return Err(bad(format!(
            "tensor `{name}`: {elements} elements are not whole blocks of {block}"
        )));
    }
    let bytes = (elements / block)
        .checked_mul(info.ggml_dtype.type_size())
        .and_then(|b| u64::try_from(b).ok());
    let end = data_offset
        .checked_add(info.offset)
        .zip(bytes)
        .and_then(|(start, bytes)| start.checked_add(bytes));
    match end {
        Some(end) if end <= file_len => Ok(()),
        _ => Err(bad(format!(
            "tensor `{name}` lies beyond the end of the file ({file_len} bytes)"
        ))),
    }
}

/// A read-only walk over the metadata that finds `general.alignment`.
struct Walker<'a, R> {
    reader: &'a mut R,
    file_len: u64,
    /// Lengths are u64 (GGUF v2 and v3), not u32 (v1).
    wide: bool,
}

impl<R: Read + Seek> Walker<'_, R> {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], LocalError> {
        let mut buf = [0u8; N];
        self.reader
            .read_exact(&mut buf)
            .map_err(|_| bad("the header ends early"))?;
        Ok(buf)
    }

    fn u32(&mut self) -> Result<u32, LocalError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }

    fn length(&mut self) -> Result<u64, LocalError> {
        if self.wide {
            Ok(u64::from_le_bytes(self.bytes()?))
        } else {
            Ok(u64::from(self.u32()?))
        }
    }

    fn skip(&mut self, n: u64) -> Result<(), LocalError> {
        let here = self
            .reader
            .stream_position()
            .map_err(|e| bad(e.to_string()))?;
        match here.checked_add(n) {
            Some(end) if end <= self.file_len => {
                self.reader
                    .seek(SeekFrom::Start(end))
                    .map_err(|e| bad(e.to_string()))?;
                Ok(())
            }
            _ => Err(bad("a length runs past the end of the file")),
        }
    }

    /// A key: its bytes when short enough to be one this walk looks for, else skipped.
    fn key(&mut self) -> Result<Vec<u8>, LocalError> {
        let len = self.length()?;
        if len > 64 {
            self.skip(len)?;
            return Ok(Vec::new());
        }
        let mut buf = vec![0u8; len as usize];
        self.reader
            .read_exact(&mut buf)
            .map_err(|_| bad("the header ends early"))?;
        Ok(buf)
    }

    /// The size of a fixed-size value type, or `None` for strings and arrays.
    fn fixed_size(value_type: u32) -> Result<Option<u64>, LocalError> {
        Ok(Some(match value_type {
            0 | 1 | 7 => 1,
            2 | 3 => 2,
            4..=6 => 4,
            10..=12 => 8,
            8 | 9 => return Ok(None),
            other => return Err(bad(format!("unknown value type {other}"))),
        }))
    }

    /// Skips one value of `value_type`, or returns it when it is an integer.
    fn value(&mut self, value_type: u32, depth: usize) -> Result<Option<i64>, LocalError> {
        if depth > MAX_DEPTH {
            return Err(bad("arrays nested too deep"));
        }
        match value_type {
            0 => Ok(Some(i64::from(self.bytes::<1>()?[0]))),
            1 => Ok(Some(i64::from(i8::from_le_bytes(self.bytes()?)))),
            2 => Ok(Some(i64::from(u16::from_le_bytes(self.bytes()?)))),
            3 => Ok(Some(i64::from(i16::from_le_bytes(self.bytes()?)))),
            4 => Ok(Some(i64::from(self.u32()?))),
            5 => Ok(Some(i64::from(i32::from_le_bytes(self.bytes()?)))),
            8 => {
                let len = self.length()?;
                self.skip(len)?;
                Ok(None)
            }
            9 => {
                let element = self.u32()?;
                let len = self.length()?;
                match Self::fixed_size(element)? {
                    Some(size) => self.skip(
                        len.checked_mul(size)
                            .ok_or_else(|| bad("an array overflows"))?,
                    )?,
                    None => {
                        for _ in 0..len {
                            self.value(element, depth + 1)?;
                        }
                    }
                }
                Ok(None)
            }
            other => {
                let size = Self::fixed_size(other)?.unwrap_or(0);
                self.skip(size)?;
                Ok(None)
            }
        }
    }

    /// Walks the metadata; a `general.alignment` of zero is an error.
    fn check_alignment(&mut self) -> Result<(), LocalError> {
        if &self.bytes::<4>()? != b"GGUF" {
            return Err(bad("not a GGUF file (bad magic)"));
        }
        let version = self.u32()?;
        self.wide = version != 1;
        let _tensors = self.length()?;
        let entries = self.length()?;
        for _ in 0..entries {
            let key = self.key()?;
            let value_type = self.u32()?;
            let value = self.value(value_type, 0)?;
            if key == b"general.alignment" && value == Some(0) {
                return Err(bad("general.alignment is 0"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    fn string(s: &str) -> Vec<u8> {
        let mut out = (s.len() as u64).to_le_bytes().to_vec();
        out.extend(s.as_bytes());
        out
    }

    fn header(kvs: &[(&str, u32, Vec<u8>)], tensors: &[(&str, &[u64], u32, u64)]) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend((tensors.len() as u64).to_le_bytes());
        out.extend((kvs.len() as u64).to_le_bytes());
        for (key, value_type, value) in kvs {
            out.extend(string(key));
            out.extend(value_type.to_le_bytes());
            out.extend(value);
        }
        for (name, dims, dtype, offset) in tensors {
            out.extend(string(name));
            out.extend((dims.len() as u32).to_le_bytes());
            for d in *dims {
                out.extend(d.to_le_bytes());
            }
            out.extend(dtype.to_le_bytes());
            out.extend(offset.to_le_bytes());
        }
        out.resize(out.len().next_multiple_of(32) + 64, 0);
        out
    }

    #[test]
    fn a_small_valid_header_reads() {
        let bytes = header(
            &[("general.architecture", 8, string("llama"))],
            &[("t", &[4, 2], 0, 0)],
        );
        let ct = read_header(&mut Cursor::new(bytes)).unwrap();
        assert_eq!(ct.tensor_infos.len(), 1);
    }

    #[test]
    fn zero_alignment_is_an_error_not_a_panic() {
        let bytes = header(
            &[("general.alignment", 4, 0u32.to_le_bytes().to_vec())],
            &[],
        );
        let e = read_header(&mut Cursor::new(bytes)).unwrap_err();
        assert!(e.to_string().contains("alignment"), "{e}");
    }

    #[test]
    fn a_tensor_past_the_end_is_an_error() {
        let bytes = header(&[], &[("t", &[1 << 20], 0, 0)]);
        let e = read_header(&mut Cursor::new(bytes)).unwrap_err();
        assert!(e.to_string().contains("beyond the end"), "{e}");
    }

    #[test]
    fn a_shape_that_overflows_is_an_error() {
        let bytes = header(&[], &[("t", &[u64::MAX / 2, 4, 4], 0, 0)]);
        assert!(read_header(&mut Cursor::new(bytes)).is_err());
    }

    #[test]
    fn an_offset_that_overflows_is_an_error() {
        let bytes = header(&[], &[("t", &[2], 0, u64::MAX - 1)]);
        assert!(read_header(&mut Cursor::new(bytes)).is_err());
    }

    fn strings(items: &[&str]) -> Vec<u8> {
        let mut out = 8u32.to_le_bytes().to_vec();
        out.extend((items.len() as u64).to_le_bytes());
        for item in items {
            out.extend(string(item));
        }
        out
    }

    #[test]
    fn a_merge_longer_than_every_token_is_an_error_not_a_panic() {
        let bytes = header(
            &[
                ("tokenizer.ggml.model", 8, string("gpt2")),
                ("tokenizer.ggml.tokens", 9, strings(&["a", "b"])),
                ("tokenizer.ggml.merges", 9, strings(&["a b"])),
                (
                    "tokenizer.ggml.eos_token_id",
                    4,
                    1u32.to_le_bytes().to_vec(),
                ),
            ],
            &[],
        );
        let e = check_gguf(&mut Cursor::new(bytes)).unwrap_err();
        assert!(e.to_string().contains("merge `a b`"), "{e}");
    }
}
