//! K-quant weight rows interleaved sixteen at a time, for decode with AVX-512 VNNI (or, for
//! Q4_K, AVX2), the products of fewer vectors than the AMX tile kernels take, and pre-fill
//! split by rows on a CPU without AMX.
//!
//! Decode multiplies every weight row with one activation vector. Read row by row, each
//! block's sums end in a horizontal add, and its scales are unpacked one row at a time. Here
//! the blocks `b` of sixteen consecutive rows are stored together, word by word: 64 bytes
//! hold the same four bytes of all sixteen blocks, so that one 512-bit register holds one
//! 32-bit lane per row. `vpdpbusd` with four activation bytes broadcast to every lane then
//! adds four products to each row's sum, and the sixteen sums come out in the sixteen lanes,
//! scaled sixteen rows at a time. The stored bytes are the file's, moved, with the same size
//! (padded to whole cache lines); the file's pages are released from memory as each matrix
//! is interleaved, so the weights are held once.

use std::ops::Range;

use super::kmatrix::KFormat;
use super::mapped::Bytes;
use super::q8k::{K_BLOCK, KAct, Q8KVectors};
use super::vnni::Vnni;

mod q4k;
mod q6k;
pub(crate) mod tiles;

/// Rows interleaved together: one 32-bit lane each in a 512-bit register.
pub(crate) const GROUP: usize = 16;

/// Bytes of a cache line; every group block starts on one.
const LINE: usize = 64;

/// The bytes of 16 blocks interleaved, padded to whole cache lines.
pub(crate) const fn group_bytes(block_bytes: usize) -> usize {
    (GROUP * block_bytes).div_ceil(LINE) * LINE
}

/// Whole 32-bit words a block of any format has at most.
const MAX_WORDS: usize = LINE;

/// The order of a group block's lines: word `w` of the 16 blocks fills line `lines[w]`, in
/// the order the format's decode kernel reads them ([`GroupKernel::line`]).
#[derive(Debug, Clone, Copy)]
struct Lines([u8; MAX_WORDS]);

impl Lines {
    /// The lines of format `F`.
    fn of<F: GroupKernel>() -> Self {
        Self(std::array::from_fn(|w| {
            let words = F::BLOCK_BYTES / 4;
            if w < words { F::line(w) as u8 } else { w as u8 }
        }))
    }

    /// Where byte `j` of the block of row `k` (of 16) goes in a group block of `block_bytes`
    /// blocks: the block's whole 32-bit words each on its line, 16 rows each, then the bytes
    /// left over (Q6_K's final 2-byte scale), row by row.
    #[inline]
    fn at(&self, block_bytes: usize, k: usize, j: usize) -> usize {
        let words = block_bytes / 4;
        if j < 4 * words {
            LINE * usize::from(self.0[j / 4]) + 4 * k + j % 4
        } else {
            LINE * words + (block_bytes - 4 * words) * k + (j - 4 * words)
        }
    }
}

/// Four activation bytes as one 32-bit lane, in every lane: the operand that the group
/// kernels' `vpdpbusd` multiplies with a word of 16 rows.
///
/// # Safety
/// `y` must point at four readable bytes.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn broadcast(y: *const i8) -> std::arch::x86_64::__m512i {
    // SAFETY: four readable bytes (the caller's contract); unaligned read.
    std::arch::x86_64::_mm512_set1_epi32(unsafe { y.cast::<i32>().read_unaligned() })
}

/// Four activation bytes as one 32-bit lane, in every lane of a 256-bit register.
///
/// # Safety
/// `y` must point at four readable bytes.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn broadcast8(y: *const i8) -> std::arch::x86_64::__m256i {
    // SAFETY: four readable bytes (the caller's contract); unaligned read.
    std::arch::x86_64::_mm256_set1_epi32(unsafe { y.cast::<i32>().read_unaligned() })
}

/// The instructions a CPU offers the group kernels.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Cpu {
    /// AVX-512 with VNNI: the 16 rows of a group in one register.
    Vnni(Vnni),
    /// AVX2, FMA and F16C: eight rows per register, a group in two.
    Avx2(Avx2),
}

impl Cpu {
    /// The best this CPU offers, if any.
    pub(crate) fn detect() -> Option<Self> {
        Vnni::detect()
            .map(Cpu::Vnni)
            .or_else(|| Avx2::detect().map(Cpu::Avx2))
    }

    /// Every kind this CPU offers, best first: the tests run each.
    #[cfg(test)]
    fn all() -> Vec<Self> {
        let avx2 = Avx2::detect().map(Cpu::Avx2);
        Vnni::detect()
            .map(Cpu::Vnni)
            .into_iter()
            .chain(avx2)
            .collect()
    }
}

/// Proof that the CPU has AVX2, FMA and F16C.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Avx2(());

impl Avx2 {
    /// The instructions, when this CPU has them.
    pub(crate) fn detect() -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
        {
            return Some(Avx2(()));
        }
        None
    }
}

/// Whether the group kernels ask for the bytes ahead of the block they read
/// (`kmatrix::prefetch_ahead`). Not on AMD CPUs, whose hardware prefetchers follow a group
/// block's lines, read from start to end, by themselves: there the asks slow decoding down
/// (`docs/benchmarks.md`).
/// `CORRIGIBLE_GROUP_PREFETCH=1` or `=0` decides instead.
fn ask_ahead() -> bool {
    static ASK: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASK.get_or_init(
        || match std::env::var("CORRIGIBLE_GROUP_PREFETCH").as_deref() {
            Ok("1") => true,
            Ok("0") => false,
            _ => !amd(),
        },
    )
}

/// Whether the CPU is AMD's, by its vendor string.
fn amd() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let id = std::arch::x86_64::__cpuid(0);
        vendor_is_amd([id.ebx, id.edx, id.ecx])
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether CPUID leaf 0's vendor registers, EBX, EDX and ECX in that order, spell AMD's name.
fn vendor_is_amd(registers: [u32; 3]) -> bool {
    let vendor: Vec<u8> = registers.iter().flat_map(|r| r.to_le_bytes()).collect();
    vendor == b"AuthenticAMD"
}

/// A K-quant format with kernels over interleaved groups.
pub(crate) trait GroupKernel: KFormat {
    /// Whether the format has a group kernel on `cpu`.
    fn runs_on(cpu: Cpu) -> bool;

    /// The line of a group block that holds word `w` of the 16 blocks: the order in which
    /// the kernels read them, so that they read each group block from start to end. A
    /// permutation of the block's whole words.
    fn line(w: usize) -> usize {
        w
    }

    /// The 16 rows of the group blocks `blocks` times each vector of `a`, over the blocks all
    /// of them hold: `out[v][k]` is row `k` times vector `v`; asking for the bytes ahead when
    /// `ask_ahead` ([`ask_ahead`]). Zeros when the format has no kernel on `cpu`
    /// ([`GroupKernel::runs_on`]).
    fn dot_group<const N: usize>(
        cpu: Cpu,
        ask_ahead: bool,
        blocks: &[u8],
        a: [KAct<'_>; N],
    ) -> [[f32; GROUP]; N];
}

/// Vectors one kernel call reads together with AVX-512 VNNI, whose 32 registers hold the
/// sums of 8 (4 a call: pre-fill about 10% slower on an AMD EPYC, `docs/benchmarks.md`).
const VNNI_VECTORS: usize = 8;
/// Vectors one kernel call reads together with AVX2, whose 16 registers hold the sums of 4
/// (8 a call: pre-fill about 10% slower).
const AVX2_VECTORS: usize = 4;

/// Whether matrices of `F` with `rows` rows are interleaved on this CPU: it has the group
/// kernels of `F`, and the rows fill whole groups.
pub(crate) fn wanted<F: GroupKernel>(rows: usize) -> bool {
    rows > 0 && rows.is_multiple_of(GROUP) && Cpu::detect().is_some_and(F::runs_on)
}

/// Rows `rows` of `groups` times every vector of `x` into `out`, row-major by weight row:
/// `out[(r - rows.start) * x.len() + t]` is row `r` times vector `t`. A group only partly
/// inside `rows` is computed whole and cut. Nothing is written when the shapes disagree.
pub(crate) fn dot_rows<F: GroupKernel>(
    groups: &Groups,
    rows: Range<usize>,
    x: &Q8KVectors,
    out: &mut [f32],
) {
    let n = x.len();
    if rows.start > rows.end || rows.end > groups.rows() || out.len() != rows.len() * n {
        return;
    }
    let row_groups = rows.start / GROUP..rows.end.div_ceil(GROUP);
    dot::<F>(groups, row_groups, x, 0..n, |g, t, dots| {
        let first = (g * GROUP).max(rows.start);
        let end = ((g + 1) * GROUP).min(rows.end);
        for r in first..end {
            for (v, dots) in dots.iter().enumerate() {
                out[(r - rows.start) * n + t + v] = dots[r - g * GROUP];
            }
        }
    });
}

/// The groups `row_groups` of `groups` times the vectors `tokens` of `x`: `put(g, t, dots)`
/// gets the 16 rows of group `g` times the vectors from `t` on, `dots[v]` for vector `t + v`,
/// once for each group and vector. False, putting nothing, when the CPU lacks the group
/// kernels or the shapes disagree.
fn dot<F: GroupKernel>(
    groups: &Groups,
    row_groups: Range<usize>,
    x: &Q8KVectors,
    tokens: Range<usize>,
    put: impl FnMut(usize, usize, &[[f32; GROUP]]),
) -> bool {
    Cpu::detect().is_some_and(|cpu| dot_on::<F>(cpu, groups, row_groups, x, tokens, put))
}

/// [`dot`] on the kernels of `cpu`.
fn dot_on<F: GroupKernel>(
    cpu: Cpu,
    groups: &Groups,
    row_groups: Range<usize>,
    x: &Q8KVectors,
    tokens: Range<usize>,
    put: impl FnMut(usize, usize, &[[f32; GROUP]]),
) -> bool {
    if !F::runs_on(cpu)
        || row_groups.start > row_groups.end
        || row_groups.end * GROUP > groups.rows()
        || tokens.start > tokens.end
        || tokens.end > x.len()
        || x.cols() != groups.blocks * K_BLOCK
        || groups.block_bytes != F::BLOCK_BYTES
    {
        return false;
    }
    match cpu {
        Cpu::Vnni(_) => dot_by::<F, VNNI_VECTORS>(cpu, groups, row_groups, x, tokens, put),
        Cpu::Avx2(_) => dot_by::<F, AVX2_VECTORS>(cpu, groups, row_groups, x, tokens, put),
    }
    true
}

/// [`dot_on`], checked, `STEP` vectors a kernel call, then the 1 to 7 left over in one.
fn dot_by<F: GroupKernel, const STEP: usize>(
    cpu: Cpu,
    groups: &Groups,
    row_groups: Range<usize>,
    x: &Q8KVectors,
    tokens: Range<usize>,
    mut put: impl FnMut(usize, usize, &[[f32; GROUP]]),
) {
    const { assert!(STEP <= 8) };
    let ahead = ask_ahead();
    for g in row_groups {
        let blocks = groups.group(g);
        let mut t = tokens.start;
        while t + STEP <= tokens.end {
            put(
                g,
                t,
                &F::dot_group(cpu, ahead, blocks, vectors::<STEP>(x, t)),
            );
            t += STEP;
        }
        match tokens.end - t {
            1 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<1>(x, t))),
            2 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<2>(x, t))),
            3 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<3>(x, t))),
            4 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<4>(x, t))),
            5 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<5>(x, t))),
            6 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<6>(x, t))),
            7 => put(g, t, &F::dot_group(cpu, ahead, blocks, vectors::<7>(x, t))),
            _ => {}
        }
    }
}

/// The `N` vectors of `x` from `t` on.
fn vectors<const N: usize>(x: &Q8KVectors, t: usize) -> [KAct<'_>; N] {
    std::array::from_fn(|v| x.vector(t + v))
}

/// Interleaves the groups from `first` on of the rows in `bytes` into `out`, whole groups of
/// `blocks` blocks of `block_bytes` with their words on `lines`.
fn copy_groups(
    bytes: &[u8],
    (block_bytes, lines): (usize, &Lines),
    blocks: usize,
    first: usize,
    out: &mut [u8],
) {
    let (row_bytes, group) = (blocks * block_bytes, group_bytes(block_bytes));
    let words = block_bytes / 4;
    for (g, rows_out) in out.chunks_exact_mut(blocks * group).enumerate() {
        let from = (first + g) * GROUP * row_bytes;
        for k in 0..GROUP {
            let Some(row) = bytes.get(from + k * row_bytes..from + (k + 1) * row_bytes) else {
                return;
            };
            for (block, out) in row
                .chunks_exact(block_bytes)
                .zip(rows_out.chunks_exact_mut(group))
            {
                for (w, word) in block.chunks_exact(4).enumerate() {
                    let to = lines.at(block_bytes, k, 4 * w);
                    out[to..to + 4].copy_from_slice(word);
                }
                let tail = &block[4 * words..];
                let to = lines.at(block_bytes, k, 4 * words);
                out[to..to + tail.len()].copy_from_slice(tail);
            }
        }
    }
}

/// A K-quant matrix's rows, 16 at a time, each group's blocks one after the other.
pub(crate) struct Groups {
    /// Memory with room to start on a cache line.
    buf: Vec<u8>,
    /// Offset of the first group in `buf`.
    start: usize,
    /// Bytes of all the groups.
    len: usize,
    /// Blocks per row.
    blocks: usize,
    rows: usize,
    block_bytes: usize,
    /// Where each word of the blocks lies.
    lines: Lines,
}

impl Groups {
    /// Interleaves the `rows` rows of `blocks` blocks of `F` held in `bytes`, releasing the
    /// pages of `bytes` from memory as they are copied; `None` unless the rows fill whole
    /// groups and `bytes` holds exactly them.
    pub(crate) fn interleave<F: GroupKernel>(
        bytes: &Bytes,
        rows: usize,
        blocks: usize,
    ) -> Option<Self> {
        let block_bytes = F::BLOCK_BYTES;
        let row_bytes = blocks * block_bytes;
        if rows == 0 || !rows.is_multiple_of(GROUP) || bytes.len() != rows * row_bytes {
            return None;
        }
        let (group, lines) = (group_bytes(block_bytes), Lines::of::<F>());
        let len = rows / GROUP * blocks * group;
        let mut buf = vec![0u8; len + LINE];
        let start = buf.as_ptr().align_offset(LINE).min(LINE);
        // Copied and released by about 4 MiB of the source, so that the copy and the source
        // are never both held whole.
        let per_piece = ((4 << 20) / (GROUP * row_bytes).max(1)).max(1);
        let out = &mut buf[start..start + len];
        let pieces = out
            .chunks_mut(per_piece * blocks * group)
            .enumerate()
            .map(|(i, piece)| (i * per_piece, piece));
        for (first, piece) in pieces {
            copy_groups(bytes, (block_bytes, &lines), blocks, first, piece);
            let end = first + piece.len() / (blocks * group);
            bytes.release(first * GROUP * row_bytes..end * GROUP * row_bytes);
        }
        bytes.release(0..bytes.len());
        Some(Self {
            buf,
            start,
            len,
            blocks,
            rows,
            block_bytes,
            lines,
        })
    }

    /// Rows held.
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }

    fn all(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    /// The group blocks of rows `16 g .. 16 g + 16`, block after block (empty past the end).
    pub(crate) fn group(&self, g: usize) -> &[u8] {
        let len = self.blocks * group_bytes(self.block_bytes);
        self.all().get(g * len..(g + 1) * len).unwrap_or(&[])
    }

    /// Writes block `b` of the 16 rows of group `g` into `out`, one after the other as the
    /// file holds them; false, writing nothing, past the end or when `out` is not 16 blocks
    /// long.
    pub(crate) fn blocks_into(&self, g: usize, b: usize, out: &mut [u8]) -> bool {
        let group = group_bytes(self.block_bytes);
        let Some(blocks) = self
            .group(g)
            .get(b * group..(b + 1) * group)
            .filter(|_| b < self.blocks && out.len() == GROUP * self.block_bytes)
        else {
            return false;
        };
        let words = self.block_bytes / 4;
        let (body, tails) = blocks.split_at(LINE * words);
        for w in 0..words {
            let line = usize::from(self.lines.0[w]);
            for (word, block) in body[LINE * line..LINE * (line + 1)]
                .chunks_exact(4)
                .zip(out.chunks_exact_mut(self.block_bytes))
            {
                block[4 * w..4 * w + 4].copy_from_slice(word);
            }
        }
        let tail = self.block_bytes - 4 * words;
        if tail > 0 {
            for (from, block) in tails
                .chunks_exact(tail)
                .zip(out.chunks_exact_mut(self.block_bytes))
            {
                block[4 * words..].copy_from_slice(from);
            }
        }
        true
    }

    /// Writes block `b` of row `r` into `out` as the file holds it; false, writing nothing,
    /// past the end or when `out` is not one block long.
    pub(crate) fn block_into(&self, r: usize, b: usize, out: &mut [u8]) -> bool {
        let group = group_bytes(self.block_bytes);
        let Some(blocks) = self
            .group(r / GROUP)
            .get(b * group..(b + 1) * group)
            .filter(|_| b < self.blocks && out.len() == self.block_bytes)
        else {
            return false;
        };
        let (k, words) = (r % GROUP, self.block_bytes / 4);
        for (w, word) in out.chunks_exact_mut(4).enumerate() {
            let from = self.lines.at(self.block_bytes, k, 4 * w);
            word.copy_from_slice(&blocks[from..from + 4]);
        }
        let from = self.lines.at(self.block_bytes, k, 4 * words);
        let tail = &mut out[4 * words..];
        let len = tail.len();
        tail.copy_from_slice(&blocks[from..from + len]);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of 10 bytes, their two whole words in reverse order.
    struct Odd;
    impl KFormat for Odd {
        const FORMAT: &'static str = "odd";
        const BLOCK_BYTES: usize = 10;
    }
    impl GroupKernel for Odd {
        fn runs_on(_cpu: Cpu) -> bool {
            false
        }

        fn line(w: usize) -> usize {
            1 - w
        }

        fn dot_group<const N: usize>(
            _: Cpu,
            _: bool,
            _: &[u8],
            _: [KAct<'_>; N],
        ) -> [[f32; GROUP]; N] {
            [[0.0; GROUP]; N]
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    #[cfg_attr(miri, ignore = "Miri's CPUID is not the machine's")]
    fn the_vendor_is_the_one_linux_reports() {
        if std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("vgpreload")) {
            eprintln!("skipped: under valgrind, whose CPUID names a vendor of its own");
            return;
        }
        let info = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let Some(vendor) = info.lines().find_map(|l| l.strip_prefix("vendor_id")) else {
            eprintln!("skipped: /proc/cpuinfo names no vendor");
            return;
        };
        let vendor = vendor.trim_start_matches([' ', '\t', ':']).trim();
        assert_eq!(amd(), vendor == "AuthenticAMD", "{vendor}");
    }

    /// The registers as CPUID returns them on AMD's and Intel's CPUs.
    #[test]
    fn the_vendor_registers_read_in_cpuid_order() {
        assert!(vendor_is_amd([0x6874_7541, 0x6974_6e65, 0x444d_4163]));
        assert!(!vendor_is_amd([0x756e_6547, 0x4965_6e69, 0x6c65_746e]));
        assert!(!vendor_is_amd([0x6874_7541, 0x444d_4163, 0x6974_6e65]));
    }

    #[test]
    fn every_byte_has_its_own_place_in_the_group() {
        let formats = [
            (Odd::BLOCK_BYTES, Lines::of::<Odd>()),
            (crate::q4k::Q4K::BLOCK_BYTES, Lines::of::<crate::q4k::Q4K>()),
            (crate::q6k::Q6K::BLOCK_BYTES, Lines::of::<crate::q6k::Q6K>()),
        ];
        for (block_bytes, lines) in formats {
            let mut seen = vec![false; group_bytes(block_bytes)];
            for k in 0..GROUP {
                for j in 0..block_bytes {
                    let i = lines.at(block_bytes, k, j);
                    assert!(
                        !seen[i],
                        "{block_bytes}: row {k} byte {j} lands on a taken byte"
                    );
                    seen[i] = true;
                }
            }
        }
    }

    #[test]
    fn rows_come_back_as_stored() {
        let (rows, blocks) = (48, 3);
        let data: Vec<u8> = (0..rows * blocks * Odd::BLOCK_BYTES)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let groups = Groups::interleave::<Odd>(&Bytes::owned(data.clone()), rows, blocks).unwrap();
        assert!(
            Groups::interleave::<Odd>(&Bytes::owned(data[1..].to_vec()), rows, blocks).is_none()
        );
        assert_eq!(groups.all().as_ptr().align_offset(LINE), 0);
        let mut block = [0u8; 10];
        for r in 0..rows {
            for b in 0..blocks {
                assert!(groups.block_into(r, b, &mut block));
                let at = (r * blocks + b) * 10;
                assert_eq!(block[..], data[at..at + 10]);
            }
        }
        let mut sixteen = [0u8; 16 * 10];
        for g in 0..rows / GROUP {
            for b in 0..blocks {
                assert!(groups.blocks_into(g, b, &mut sixteen));
                for (k, block) in sixteen.chunks_exact(10).enumerate() {
                    let at = ((g * GROUP + k) * blocks + b) * 10;
                    assert_eq!(block[..], data[at..at + 10]);
                }
            }
        }
        assert!(!groups.blocks_into(rows / GROUP, 0, &mut sixteen));
        assert!(!groups.block_into(rows, 0, &mut block));
        assert!(!groups.block_into(0, blocks, &mut block));
        assert!(groups.group(rows / GROUP).is_empty());
    }

    /// The group kernels over every count of vectors a call can leave over, against candle's
    /// dequantization, with sub-ranges of groups and vectors giving the same bits.
    fn group_kernels_agree<F: GroupKernel>(
        dtype: candle_core::quantized::GgmlDType,
        f16_at: &[usize],
        seed: u64,
    ) {
        use crate::kmatrix::KMatrix;
        use crate::kmatrix::tests::{candle_dequantize, random_blocks, reference, vectors};
        let cpus: Vec<Cpu> = Cpu::all().into_iter().filter(|&c| F::runs_on(c)).collect();
        if cpus.is_empty() {
            eprintln!("skipped: this CPU has no group kernel of {}", F::FORMAT);
            return;
        }
        let (rows, cols) = (3 * GROUP, 768);
        let bytes = random_blocks(rows * cols / K_BLOCK, F::BLOCK_BYTES, f16_at, seed);
        let dense = candle_dequantize(&bytes, dtype, rows * cols);
        let m = KMatrix::<F>::new(Bytes::owned(bytes), rows, cols)
            .expect("matrix")
            .interleaved();
        let groups = m.groups().expect("interleaved");
        // Each count's products on the first kind of CPU: the others give the same bits.
        let mut first: Vec<(usize, Vec<f32>)> = Vec::new();
        let counts = || (1..=9).chain([12, 19, 40]);
        for (cpu, n) in cpus.iter().flat_map(|&c| counts().map(move |n| (c, n))) {
            let x = vectors(n, cols, seed + n as u64);
            let mut all = vec![f32::NAN; rows * n];
            assert!(dot_on::<F>(
                cpu,
                groups,
                0..rows / GROUP,
                &x,
                0..n,
                |g, t, dots| {
                    for (v, dots) in dots.iter().enumerate() {
                        for (k, &dot) in dots.iter().enumerate() {
                            assert!(all[(g * GROUP + k) * n + t + v].is_nan(), "put twice");
                            all[(g * GROUP + k) * n + t + v] = dot;
                        }
                    }
                }
            ));
            for r in 0..rows {
                for t in 0..n {
                    let (want, size) = reference(&dense, cols, &x, r, t);
                    let got = all[r * n + t];
                    assert!(
                        (got as f64 - want).abs() <= 1e-5 * size.max(1e-3),
                        "{cpu:?}: row {r} vector {t} of {n}: {got} vs {want}"
                    );
                }
            }
            match first.iter().find(|(m, _)| *m == n) {
                Some((_, bits)) => assert!(
                    bits.iter()
                        .zip(&all)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{cpu:?} and the first kind disagree on {n} vectors"
                ),
                None => first.push((n, all.clone())),
            }
            let tokens = n / 3..n;
            let mut seen = vec![false; 2 * GROUP * tokens.len()];
            assert!(dot_on::<F>(
                cpu,
                groups,
                1..3,
                &x,
                tokens.clone(),
                |g, t, dots| {
                    for (v, dots) in dots.iter().enumerate() {
                        for (k, &dot) in dots.iter().enumerate() {
                            let r = g * GROUP + k;
                            assert_eq!(dot.to_bits(), all[r * n + t + v].to_bits());
                            seen[(r - GROUP) * tokens.len() + t + v - tokens.start] = true;
                        }
                    }
                }
            ));
            assert!(seen.iter().all(|&s| s), "every row and vector of {n}");
        }
        let x = vectors(5, cols, seed);
        let never = |_: usize, _: usize, _: &[[f32; GROUP]]| panic!("put");
        for cpu in Cpu::all().into_iter().filter(|&c| !F::runs_on(c)) {
            assert!(!dot_on::<F>(cpu, groups, 0..3, &x, 0..5, never), "{cpu:?}");
        }
        assert!(!dot::<F>(groups, 0..4, &x, 0..5, never));
        assert!(!dot::<F>(groups, 0..3, &x, 0..6, never));
        assert!(!dot::<F>(groups, 0..3, &vectors(5, 512, 1), 0..5, never));
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no AVX-512")]
    fn q4k_group_kernels_agree_at_every_count_of_vectors() {
        group_kernels_agree::<crate::q4k::Q4K>(candle_core::quantized::GgmlDType::Q4K, &[0, 2], 61);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri runs no AVX-512")]
    fn q6k_group_kernels_agree_at_every_count_of_vectors() {
        group_kernels_agree::<crate::q6k::Q6K>(candle_core::quantized::GgmlDType::Q6K, &[208], 62);
    }
}
