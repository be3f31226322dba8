//! Intel AMX tile products for the pre-fill kernels.
//!
//! An AMX tile product multiplies 16 rows of unsigned bytes (weights) by a block of signed
//! bytes laid out four by four (activations, see [`crate::tiled`]) into 16 × 16 exact 32-bit
//! sums, in one instruction. The CPU must have AMX-INT8, and Linux must grant the process the
//! tile state (`arch_prctl(ARCH_REQ_XCOMP_PERM)`), asked for once. The surrounding scaling
//! code needs AVX-512 (with VNNI, which every CPU with AMX has) too. `CORRIGIBLE_NO_AMX=1`
//! turns the tiles off, to compare kernels.

use std::marker::PhantomData;

/// Rows of every tile product (weights) and columns (activation vectors).
pub(crate) const TILE: usize = 16;

/// Whether a product may run over `k` bytes per weight row: a multiple of 4, at most 64 (the
/// bytes of one tile row), for AMX tiles and the VNNI products alike.
pub(crate) const fn fits(k: usize) -> bool {
    k > 0 && k <= 64 && k.is_multiple_of(4)
}

/// Proof that this process may use AMX tiles: the CPU has AMX-INT8, AVX-512 (F, BW, VL,
/// VNNI), FMA and F16C, and Linux granted the process the tile state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Amx(());

impl Amx {
    /// The tiles, when this CPU and kernel offer them and they are not turned off.
    pub(crate) fn detect() -> Option<Self> {
        static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        USABLE
            .get_or_init(|| std::env::var_os("CORRIGIBLE_NO_AMX").is_none() && os::enable())
            .then_some(Amx(()))
    }

    /// Configures this thread's tiles for products over `k` bytes per weight row (a multiple
    /// of 4, at most 64), until the value returned is dropped.
    pub(crate) fn tiles(self, k: usize) -> Option<Tiles> {
        fits(k).then(|| os::configure(k))?;
        Some(Tiles {
            k,
            _thread: PhantomData,
        })
    }
}

/// This thread's tiles, configured for products over `k` bytes; released when dropped. One
/// at a time per thread: a second configuration replaces the first.
pub(crate) struct Tiles {
    k: usize,
    /// Tile state belongs to one thread.
    _thread: PhantomData<*const ()>,
}

impl Tiles {
    /// `c[i][v] = Σ_j a[i * stride + j] * b[4 * (j / 4) * 16 + 4 * v + j % 4]`, for the 16
    /// weight rows `i` of `k` bytes starting every `stride` bytes of `a`, and `b` holding
    /// `k / 4` rows of 64 bytes (four consecutive values of each of the 16 vectors). Returns
    /// false, writing nothing, when `a` or `b` is too short or `stride` shorter than `k`.
    #[inline]
    pub(crate) fn product(
        &self,
        a: &[u8],
        stride: usize,
        b: &[i8],
        c: &mut [[i32; TILE]; TILE],
    ) -> bool {
        if stride < self.k || a.len() < (TILE - 1) * stride + self.k || b.len() < self.k * TILE {
            return false;
        }
        os::product(a, stride, b, c);
        true
    }
}

impl Tiles {
    /// As [`Tiles::product`] with the operands' signs swapped: signed bytes in the 16 rows
    /// of `a` (activations), unsigned bytes in `b` (weights, four consecutive values of each
    /// of 16 rows per 64-byte row of `b`).
    /// With `SIGNED_B`, the bytes of `b` are signed too.
    #[inline]
    pub(crate) fn product_signed<const SIGNED_B: bool>(
        &self,
        a: &[i8],
        stride: usize,
        b: &[u8],
        c: &mut [[i32; TILE]; TILE],
    ) -> bool {
        if stride < self.k || a.len() < (TILE - 1) * stride + self.k || b.len() < self.k * TILE {
            return false;
        }
        os::product_signed::<SIGNED_B>(a, stride, b, c);
        true
    }
}

/// Products summed per call of [`Tiles::summed_pair`].
pub(crate) const STEPS: usize = 4;

impl Tiles {
    /// Two sums of [`STEPS`] products of [`Tiles::product_signed`] (signed `a`, unsigned
    /// `b`), one per half of `b`, sharing the rows of `a`: `c[h][i][v] = Σ_j a[i * stride +
    /// j] * b[h * k * TILE * STEPS + …]` over `j < STEPS * k`, product `s` reading bytes
    /// `s * k ..` of each row of `a` and the `s`-th run of `k * TILE` bytes of the half. The
    /// sums stay in their tiles across the products and are stored once. Returns false,
    /// writing nothing, when `a` or `b` is too short or `stride` shorter than `STEPS * k`.
    #[inline]
    pub(crate) fn summed_pair(
        &self,
        a: &[i8],
        stride: usize,
        b: &[u8],
        c: &mut [[[i32; TILE]; TILE]; 2],
    ) -> bool {
        let (k, row) = (self.k, STEPS * self.k);
        if stride < row || a.len() < (TILE - 1) * stride + row || b.len() < 2 * row * TILE {
            return false;
        }
        os::summed_pair(a, stride, k, b, c);
        true
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        os::release();
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
#[allow(unsafe_code)]
mod os {
    use std::arch::asm;
    use std::arch::x86_64::{__cpuid, __cpuid_count};

    use super::TILE;

    /// `arch_prctl` code asking for an extended state component.
    const ARCH_REQ_XCOMP_PERM: libc::c_ulong = 0x1023;
    /// The extended state component of the tile data.
    const XFEATURE_XTILEDATA: libc::c_ulong = 18;

    /// Whether the CPU has the features and the kernel granted the tile state.
    pub(super) fn enable() -> bool {
        let features = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c");
        // Leaf 7, EDX: bit 24 AMX-TILE, bit 25 AMX-INT8.
        let amx = __cpuid(0).eax >= 7 && (__cpuid_count(7, 0).edx >> 24) & 3 == 3;
        if !(features && amx) {
            return false;
        }
        // SAFETY: `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)` takes two integers and
        // only changes which state components the process may use.
        let granted = unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            )
        };
        granted == 0
    }

    /// Palette 1: tiles 0 and 3 sums (16 rows of 64 bytes), tile 1 the rows of `k` bytes,
    /// tiles 2 and 5 the columns (`k / 4` rows of 64 bytes).
    #[repr(C, align(64))]
    struct Config([u8; 64]);

    pub(super) fn configure(k: usize) {
        let mut config = Config([0; 64]);
        config.0[0] = 1;
        let colsb = [4 * TILE, k, 4 * TILE, 4 * TILE, 0, 4 * TILE];
        let rows = [TILE, TILE, k / 4, TILE, 0, k / 4];
        for t in 0..6 {
            config.0[16 + 2 * t..18 + 2 * t].copy_from_slice(&(colsb[t] as u16).to_le_bytes());
            config.0[48 + t] = rows[t] as u8;
        }
        // SAFETY: `enable` succeeded (`Tiles` exist only after `Amx::detect`), and the config
        // is a valid palette-1 layout: 64 aligned bytes, rows at most 16, bytes per row at most
        // 64.
        unsafe { asm!("ldtilecfg [{0}]", in(reg) config.0.as_ptr(), options(nostack)) };
    }

    /// One tile product: the sums zeroed, 16 rows of `$a` (`$stride` bytes apart) and
    /// `$b`'s rows of 64 bytes loaded, multiplied by `$instruction` and stored into `$c`.
    macro_rules! tile_product {
        ($instruction:literal, $a:expr, $stride:expr, $b:expr, $c:expr) => {
            // SAFETY: the callers (`Tiles::product`, `Tiles::product_signed`) checked that
            // `$a` holds 16 rows of `k` bytes `$stride` apart and `$b` holds `k / 4` rows of
            // 64 bytes, as configured by `configure` on this thread (a `Tiles` is not
            // `Send`); `$c` is 16 rows of 64 bytes.
            unsafe {
                asm!(
                    "tilezero tmm0",
                    "tileloadd tmm1, [{a} + {stride} * 1]",
                    "tileloadd tmm2, [{b} + {b_stride} * 1]",
                    $instruction,
                    "tilestored [{c} + {b_stride} * 1], tmm0",
                    a = in(reg) $a.as_ptr(),
                    stride = in(reg) $stride,
                    b = in(reg) $b.as_ptr(),
                    b_stride = in(reg) 4 * TILE,
                    c = in(reg) $c.as_mut_ptr(),
                    options(nostack),
                )
            }
        };
    }

    /// `tdpbusd`: unsigned `a` by signed `b`.
    pub(super) fn product(a: &[u8], stride: usize, b: &[i8], c: &mut [[i32; TILE]; TILE]) {
        tile_product!("tdpbusd tmm0, tmm1, tmm2", a, stride, b, c);
    }

    /// `tdpbsud`, or `tdpbssd` with `SIGNED_B`.
    pub(super) fn product_signed<const SIGNED_B: bool>(
        a: &[i8],
        stride: usize,
        b: &[u8],
        c: &mut [[i32; TILE]; TILE],
    ) {
        if SIGNED_B {
            tile_product!("tdpbssd tmm0, tmm1, tmm2", a, stride, b, c);
        } else {
            tile_product!("tdpbsud tmm0, tmm1, tmm2", a, stride, b, c);
        }
    }

    /// [`super::Tiles::summed_pair`], for rows of `k` bytes per product.
    pub(super) fn summed_pair(
        a: &[i8],
        stride: usize,
        k: usize,
        b: &[u8],
        c: &mut [[[i32; TILE]; TILE]; 2],
    ) {
        let half = super::STEPS * k * TILE;
        // Tiles 0 and 3 hold the sums from one block below to the next.
        // SAFETY: the tiles were configured by `configure(k)` on this thread (a `Tiles` is
        // not `Send`); zeroing reads no memory.
        unsafe { asm!("tilezero tmm0", "tilezero tmm3", options(nostack)) };
        for s in 0..super::STEPS {
            // SAFETY: `Tiles::summed_pair` checked that `a` holds 16 rows of `STEPS * k`
            // bytes `stride` apart and `b` two halves of `STEPS` runs of `k / 4` rows of 64
            // bytes, as configured; product `s` reads bytes `s * k ..` of the rows of `a` and
            // the `s`-th run of each half of `b`.
            unsafe {
                asm!(
                    "tileloadd tmm1, [{a} + {stride} * 1]",
                    "tileloadd tmm2, [{low} + {b_stride} * 1]",
                    "tileloadd tmm5, [{high} + {b_stride} * 1]",
                    "tdpbsud tmm0, tmm1, tmm2",
                    "tdpbsud tmm3, tmm1, tmm5",
                    a = in(reg) a[s * k..].as_ptr(),
                    stride = in(reg) stride,
                    low = in(reg) b[s * k * TILE..].as_ptr(),
                    high = in(reg) b[half + s * k * TILE..].as_ptr(),
                    b_stride = in(reg) 4 * TILE,
                    options(nostack),
                )
            };
        }
        // SAFETY: each `c[h]` is 16 rows of 64 bytes, what tiles 0 and 3 hold.
        unsafe {
            asm!(
                "tilestored [{c0} + {b_stride} * 1], tmm0",
                "tilestored [{c1} + {b_stride} * 1], tmm3",
                c0 = in(reg) c[0].as_mut_ptr(),
                c1 = in(reg) c[1].as_mut_ptr(),
                b_stride = in(reg) 4 * TILE,
                options(nostack),
            )
        };
    }

    pub(super) fn release() {
        // SAFETY: releasing the tile state is valid whether or not it is configured.
        unsafe { asm!("tilerelease", options(nostack)) };
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
mod os {
    use super::TILE;

    pub(super) fn enable() -> bool {
        false
    }

    pub(super) fn configure(_k: usize) {}

    pub(super) fn product(_a: &[u8], _stride: usize, _b: &[i8], _c: &mut [[i32; TILE]; TILE]) {}

    pub(super) fn product_signed<const SIGNED_B: bool>(
        _a: &[i8],
        _stride: usize,
        _b: &[u8],
        _c: &mut [[i32; TILE]; TILE],
    ) {
    }

    pub(super) fn summed_pair(
        _a: &[i8],
        _stride: usize,
        _k: usize,
        _b: &[u8],
        _c: &mut [[[i32; TILE]; TILE]; 2],
    ) {
    }

    pub(super) fn release() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Row `i` of the rows `stride` apart read by `a` times column `v` of the 64-byte rows
    /// read by `b` (four values of each of 16 columns a row), over `k` values, in integers.
    fn integer_product(
        a: impl Fn(usize) -> i32,
        b: impl Fn(usize) -> i32,
        (stride, k): (usize, usize),
        (i, v): (usize, usize),
    ) -> i32 {
        (0..k)
            .map(|j| a(i * stride + j) * b(4 * (j / 4) * TILE + 4 * v + j % 4))
            .sum()
    }

    #[test]
    fn a_tile_product_is_the_integer_matrix_product() {
        let Some(amx) = Amx::detect() else {
            eprintln!("skipped: this CPU or kernel offers no AMX tiles");
            return;
        };
        for k in [16, 32, 64] {
            let stride = k + 8;
            let a: Vec<u8> = (0..TILE * stride).map(|i| (i * 7 % 251) as u8).collect();
            let b: Vec<i8> = (0..k * TILE).map(|i| (i * 13 % 255) as u8 as i8).collect();
            let tiles = amx.tiles(k).expect("tiles");
            let mut c = [[0; TILE]; TILE];
            assert!(tiles.product(&a, stride, &b, &mut c));
            for (i, row) in c.iter().enumerate() {
                for (v, &got) in row.iter().enumerate() {
                    let want =
                        integer_product(|x| a[x] as i32, |x| b[x] as i32, (stride, k), (i, v));
                    assert_eq!(got, want, "k {k} row {i} vector {v}");
                }
            }
            assert!(!tiles.product(&a[..15 * stride + k - 1], stride, &b, &mut c));
            assert!(!tiles.product(&a, stride, &b[1..], &mut c));
            assert!(!tiles.product(&a, k - 4, &b, &mut c));
        }
        assert!(amx.tiles(0).is_none() && amx.tiles(66).is_none() && amx.tiles(68).is_none());
    }

    #[test]
    fn summed_pairs_are_the_integer_sums_of_their_products() {
        let Some(amx) = Amx::detect() else {
            eprintln!("skipped: this CPU or kernel offers no AMX tiles");
            return;
        };
        for k in [16, 64] {
            let stride = STEPS * k + 8;
            let a: Vec<i8> = (0..TILE * stride)
                .map(|i| (i * 7 % 251) as u8 as i8)
                .collect();
            let half = STEPS * k * TILE;
            let b: Vec<u8> = (0..2 * half).map(|i| (i * 13 % 255) as u8).collect();
            let tiles = amx.tiles(k).expect("tiles");
            // Twice, so that the second call starts from zero too.
            let mut c = [[[0; TILE]; TILE]; 2];
            for _ in 0..2 {
                assert!(tiles.summed_pair(&a, stride, &b, &mut c));
            }
            for (h, c) in c.iter().enumerate() {
                for (i, row) in c.iter().enumerate() {
                    for (v, &got) in row.iter().enumerate() {
                        let want: i32 = (0..STEPS)
                            .map(|s| {
                                let a = |x: usize| a[s * k + x] as i32;
                                let b = |x: usize| b[h * half + s * k * TILE + x] as i32;
                                integer_product(a, b, (stride, k), (i, v))
                            })
                            .sum();
                        assert_eq!(got, want, "k {k} half {h} row {i} column {v}");
                    }
                }
            }
            let short = &a[..15 * stride + STEPS * k - 1];
            assert!(!tiles.summed_pair(short, stride, &b, &mut c));
            assert!(!tiles.summed_pair(&a, stride, &b[1..], &mut c));
            assert!(!tiles.summed_pair(&a, STEPS * k - 4, &b, &mut c));
        }
    }

    #[test]
    fn a_signed_by_unsigned_tile_product_is_the_integer_matrix_product() {
        let Some(amx) = Amx::detect() else {
            eprintln!("skipped: this CPU or kernel offers no AMX tiles");
            return;
        };
        for k in [16, 32, 64] {
            let stride = k + 8;
            let a: Vec<i8> = (0..TILE * stride)
                .map(|i| (i * 7 % 251) as u8 as i8)
                .collect();
            let b: Vec<u8> = (0..k * TILE).map(|i| (i * 13 % 255) as u8).collect();
            let tiles = amx.tiles(k).expect("tiles");
            let mut c = [[0; TILE]; TILE];
            assert!(tiles.product_signed::<false>(&a, stride, &b, &mut c));
            let mut both = [[0; TILE]; TILE];
            assert!(tiles.product_signed::<true>(&a, stride, &b, &mut both));
            for (i, row) in c.iter().enumerate() {
                for (v, &got) in row.iter().enumerate() {
                    let want =
                        integer_product(|x| a[x] as i32, |x| b[x] as i32, (stride, k), (i, v));
                    assert_eq!(got, want, "k {k} row {i} column {v}");
                    let signed = |x: usize| b[x] as i8 as i32;
                    let signed = integer_product(|x| a[x] as i32, signed, (stride, k), (i, v));
                    assert_eq!(both[i][v], signed, "signed: k {k} row {i} column {v}");
                }
            }
            let short = &a[..15 * stride + k - 1];
            assert!(!tiles.product_signed::<false>(short, stride, &b, &mut c));
            assert!(!tiles.product_signed::<true>(&a, stride, &b[1..], &mut c));
            assert!(!tiles.product_signed::<false>(&a, k - 4, &b, &mut c));
        }
    }
}
