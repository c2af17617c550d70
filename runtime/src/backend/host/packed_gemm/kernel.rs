//! Register-blocked microkernels: an `MR x NR` tile of C held in twelve AVX2 registers while
//! packed panels of A (MR values per step) and B (NR values per step) stream past.
//!
//! Six rows by two vectors is the shape that fits AVX2's sixteen registers: twelve
//! accumulators, two B vectors and one broadcast A value. Each step issues twelve FMAs against
//! two vector loads and six broadcasts, so the two FMA ports, not the load ports, set the pace
//! (with both panels in L1 the tile runs at 100 of the measured 101 GFLOP/s per core).

use std::arch::x86_64::*;

/// Rows of C per microkernel call.
pub const MR: usize = 6;

/// Steps of the inner loop per iteration: fewer loop branches and one prefetch per four steps.
const UNROLL: usize = 4;

/// How far ahead (in A values) the A panel is prefetched from L2.
const A_AHEAD: usize = 64;

/// The element types with a microkernel, and their tile widths.
pub trait Kernel: Copy + Send + Sync + std::ops::AddAssign + 'static {
    /// Columns of C per microkernel call (two vectors).
    const NR: usize;
    /// Zero, for padding partial panels.
    const ZERO: Self;
    /// `c[r*ldc + j] (+)= sum_p A[r][p] * B[p][j]` for the tile: written when `first`, added to
    /// otherwise. A packed panel (`A_PACKED`) holds `A[r][p]` at `a[p*MR + r]`, else `a` is the
    /// matrix itself read in place, `A[r][p]` at `a[r*lda + p]`; likewise a packed B panel holds
    /// `B[p][j]` at `b[p*NR + j]`, else at `b[p*ldb + j]`. Packing pays where a panel is read
    /// many times; a skinny product reads each of the big operand's panels once or twice, and
    /// copying it first costs more than the reads it makes sequential.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA (AVX-512F for [`F32x16`]); `a` addresses MR rows and `b`
    /// `kc` rows of NR values as laid out above, a packed `b` 32-byte (64 for [`F32x16`])
    /// aligned; `c` addresses MR rows of NR values `ldc` apart.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile<const A_PACKED: bool, const B_PACKED: bool>(
        kc: usize,
        a: *const Self,
        lda: usize,
        b: *const Self,
        ldb: usize,
        c: *mut Self,
        ldc: usize,
        first: bool,
    );

    /// One full A panel: `dst[p*MR + r] = rows[r][p]` for `p < kc`.
    ///
    /// # Safety
    /// Each row addresses `kc` values; `dst` holds `kc*MR`; the CPU has AVX2 and FMA.
    unsafe fn pack_a_panel(rows: &[*const Self; MR], kc: usize, dst: *mut Self) {
        let mut d = dst;
        for p in 0..kc {
            for (r, s) in rows.iter().enumerate() {
                *d.add(r) = *s.add(p);
            }
            d = d.add(MR);
        }
    }
}

/// f32 panels eight columns at a time: an 8x8 register transpose (two rows of zeros), each
/// column stored as eight values of which the next store overwrites the last two.
#[target_feature(enable = "avx2,fma")]
unsafe fn pack_a_panel_f32(rows: &[*const f32; MR], kc: usize, dst: *mut f32) {
    let keep6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    let mut p = 0;
    while p + 8 <= kc {
        let r0 = _mm256_loadu_ps(rows[0].add(p));
        let r1 = _mm256_loadu_ps(rows[1].add(p));
        let r2 = _mm256_loadu_ps(rows[2].add(p));
        let r3 = _mm256_loadu_ps(rows[3].add(p));
        let r4 = _mm256_loadu_ps(rows[4].add(p));
        let r5 = _mm256_loadu_ps(rows[5].add(p));
        let z = _mm256_setzero_ps();
        // Interleave pairs of rows, then pairs of pairs: lane j of column c ends up in t*.
        let a0 = _mm256_unpacklo_ps(r0, r1);
        let a1 = _mm256_unpackhi_ps(r0, r1);
        let a2 = _mm256_unpacklo_ps(r2, r3);
        let a3 = _mm256_unpackhi_ps(r2, r3);
        let a4 = _mm256_unpacklo_ps(r4, r5);
        let a5 = _mm256_unpackhi_ps(r4, r5);
        let b0 = _mm256_shuffle_ps::<0x44>(a0, a2);
        let b1 = _mm256_shuffle_ps::<0xEE>(a0, a2);
        let b2 = _mm256_shuffle_ps::<0x44>(a1, a3);
        let b3 = _mm256_shuffle_ps::<0xEE>(a1, a3);
        let b4 = _mm256_shuffle_ps::<0x44>(a4, z);
        let b5 = _mm256_shuffle_ps::<0xEE>(a4, z);
        let b6 = _mm256_shuffle_ps::<0x44>(a5, z);
        let b7 = _mm256_shuffle_ps::<0xEE>(a5, z);
        let cols = [
            _mm256_permute2f128_ps::<0x20>(b0, b4),
            _mm256_permute2f128_ps::<0x20>(b1, b5),
            _mm256_permute2f128_ps::<0x20>(b2, b6),
            _mm256_permute2f128_ps::<0x20>(b3, b7),
            _mm256_permute2f128_ps::<0x31>(b0, b4),
            _mm256_permute2f128_ps::<0x31>(b1, b5),
            _mm256_permute2f128_ps::<0x31>(b2, b6),
            _mm256_permute2f128_ps::<0x31>(b3, b7),
        ];
        let d = dst.add(p * MR);
        for (j, col) in cols.iter().enumerate().take(7) {
            _mm256_storeu_ps(d.add(j * MR), *col);
        }
        _mm256_maskstore_ps(d.add(7 * MR), keep6, cols[7]);
        p += 8;
    }
    for p in p..kc {
        for (r, s) in rows.iter().enumerate() {
            *dst.add(p * MR + r) = *s.add(p);
        }
    }
}

/// A `tile` function: the MR x (two vectors) tile for one vector width, written once for
/// every width and element type.
macro_rules! tile_fn {
    ($name:ident, $feature:literal, $t:ty, $lanes:expr, $vec:ty, $zero:ident, $load:ident,
     $loadu:ident, $storeu:ident, $add:ident, $fma:ident, $bcast:expr) => {
        #[target_feature(enable = $feature)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name<const A_PACKED: bool, const B_PACKED: bool>(
            kc: usize,
            a: *const $t,
            lda: usize,
            b: *const $t,
            ldb: usize,
            c: *mut $t,
            ldc: usize,
            first: bool,
        ) {
            let mut acc: [[$vec; 2]; MR] = [[$zero(); 2]; MR];
            // C's rows are touched once, at the end: start fetching them now.
            for r in 0..MR {
                _mm_prefetch::<_MM_HINT_T0>(c.add(r * ldc) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(c.add(r * ldc + 2 * $lanes - 1) as *const i8);
            }
            // Where step `s` of the current group reads, and how far a group moves each operand.
            let (a_step, a_row) = if A_PACKED { (MR, 1) } else { (1, lda) };
            let b_step = if B_PACKED { 2 * $lanes } else { ldb };
            let (mut a, mut b) = (a, b);
            macro_rules! step {
                ($s:expr) => {{
                    let (b0, b1) = if B_PACKED {
                        (
                            $load(b.add($s * b_step)),
                            $load(b.add($s * b_step + $lanes)),
                        )
                    } else {
                        (
                            $loadu(b.add($s * b_step)),
                            $loadu(b.add($s * b_step + $lanes)),
                        )
                    };
                    for (r, row) in acc.iter_mut().enumerate() {
                        let x = $bcast(a.add($s * a_step + r * a_row));
                        row[0] = $fma(x, b0, row[0]);
                        row[1] = $fma(x, b1, row[1]);
                    }
                }};
            }
            for _ in 0..kc / UNROLL {
                if A_PACKED {
                    _mm_prefetch::<_MM_HINT_T0>(a.add(A_AHEAD) as *const i8);
                }
                step!(0);
                step!(1);
                step!(2);
                step!(3);
                a = a.add(UNROLL * a_step);
                b = b.add(UNROLL * b_step);
            }
            for _ in 0..kc % UNROLL {
                step!(0);
                a = a.add(a_step);
                b = b.add(b_step);
            }
            for (r, row) in acc.iter().enumerate() {
                let p = c.add(r * ldc);
                if first {
                    $storeu(p, row[0]);
                    $storeu(p.add($lanes), row[1]);
                } else {
                    $storeu(p, $add($loadu(p), row[0]));
                    $storeu(p.add($lanes), $add($loadu(p.add($lanes)), row[1]));
                }
            }
        }
    };
}

macro_rules! avx2_kernel {
    ($t:ty, $lanes:expr, $inner:ident $(, $pack:item)*) => {
        impl Kernel for $t {
            const NR: usize = 2 * $lanes;
            const ZERO: Self = 0.0;
            $($pack)*
            #[inline]
            unsafe fn tile<const A_PACKED: bool, const B_PACKED: bool>(
                kc: usize,
                a: *const Self,
                lda: usize,
                b: *const Self,
                ldb: usize,
                c: *mut Self,
                ldc: usize,
                first: bool,
            ) {
                $inner::<A_PACKED, B_PACKED>(kc, a, lda, b, ldb, c, ldc, first)
            }
        }
    };
}

tile_fn!(
    tile_f32,
    "avx2,fma",
    f32,
    8,
    __m256,
    _mm256_setzero_ps,
    _mm256_load_ps,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_add_ps,
    _mm256_fmadd_ps,
    |p: *const f32| _mm256_broadcast_ss(&*p)
);
tile_fn!(
    tile_f64,
    "avx2,fma",
    f64,
    4,
    __m256d,
    _mm256_setzero_pd,
    _mm256_load_pd,
    _mm256_loadu_pd,
    _mm256_storeu_pd,
    _mm256_add_pd,
    _mm256_fmadd_pd,
    |p: *const f64| _mm256_broadcast_sd(&*p)
);
tile_fn!(
    tile_f32x16,
    "avx512f",
    f32,
    16,
    __m512,
    _mm512_setzero_ps,
    _mm512_load_ps,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_add_ps,
    _mm512_fmadd_ps,
    |p: *const f32| _mm512_set1_ps(*p)
);
tile_fn!(
    tile_f64x8,
    "avx512f",
    f64,
    8,
    __m512d,
    _mm512_setzero_pd,
    _mm512_load_pd,
    _mm512_loadu_pd,
    _mm512_storeu_pd,
    _mm512_add_pd,
    _mm512_fmadd_pd,
    |p: *const f64| _mm512_set1_pd(*p)
);

avx2_kernel!(
    f32,
    8,
    tile_f32,
    unsafe fn pack_a_panel(rows: &[*const f32; MR], kc: usize, dst: *mut f32) {
        pack_a_panel_f32(rows, kc, dst)
    }
);
avx2_kernel!(f64, 4, tile_f64);

/// An AVX-512 kernel type: the bits of `$t` in a type of its own, because the tile width is a
/// constant of the kernel's type.
macro_rules! wide_kernel {
    ($(#[$doc:meta])* $name:ident, $t:ty, $nr:expr, $inner:ident $(, $pack:item)*) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        #[repr(transparent)]
        pub struct $name(pub $t);

        impl std::ops::AddAssign for $name {
            fn add_assign(&mut self, other: $name) {
                self.0 += other.0;
            }
        }

        impl Kernel for $name {
            const NR: usize = $nr;
            const ZERO: Self = $name(0.0);

            #[inline]
            unsafe fn tile<const A_PACKED: bool, const B_PACKED: bool>(
                kc: usize,
                a: *const Self,
                lda: usize,
                b: *const Self,
                ldb: usize,
                c: *mut Self,
                ldc: usize,
                first: bool,
            ) {
                $inner::<A_PACKED, B_PACKED>(kc, a.cast(), lda, b.cast(), ldb, c.cast(), ldc, first)
            }

            $($pack)*
        }
    };
}

wide_kernel!(
    /// f32 on CPUs with AVX-512: the same 6-row tile, two 16-lane vectors wide (NR = 32), so each
    /// step issues twelve 512-bit FMAs. A distinct type (the same bits as f32) because the tile
    /// width is a constant of the kernel's type. Measured on a 2-core AVX-512 Xeon, whose register
    /// loop peaks at 341 GFLOP/s against 170 for AVX2: see `docs/performance.md`.
    F32x16,
    f32,
    32,
    tile_f32x16,
    unsafe fn pack_a_panel(rows: &[*const Self; MR], kc: usize, dst: *mut Self) {
        let rows: [*const f32; MR] = std::array::from_fn(|r| rows[r].cast());
        pack_a_panel_f32(&rows, kc, dst.cast())
    }
);

/// True when this CPU runs the AVX-512 tiles ([`F32x16`], [`F64x8`]).
pub fn avx512_available() -> bool {
    is_x86_feature_detected!("avx512f")
}

wide_kernel!(
    /// f64 on CPUs with AVX-512: as [`F32x16`], two 8-lane vectors wide (NR = 16). 1024³ f64 on a
    /// 2-core AVX-512 Xeon: see `docs/performance.md`.
    F64x8,
    f64,
    16,
    tile_f64x8
);
