//! `[k,m]ᵀ·[k,n]` f32 products with the left matrices read where they lie (AVX-512): a
//! layer's weight gradient `xᵀ·g`, where `x` is the batch (`[10000, 784]` in notebook 05) and
//! `g` the gradient at the layer's output (`[10000, 50]`).
//!
//! The plain product needs the left operand as `[m,k]`, so the weight gradient used to be
//! computed as `(gᵀ·x)ᵀ`: `g` copied transposed, then a product whose right operand, the
//! batch, the packed GEMM reads in place a few columns at a time, 3,136 bytes between rows (on
//! the 2-core Zen 4: 9.5 ms for 784 MFLOP). Here the vectors run along `m`, the batch's own
//! rows: a 32 x 10 tile of the result takes, per depth step, two 16-lane loads from one row of
//! `x` and ten broadcasts from one row of `g`, and each thread walks its columns of `x` a depth
//! block at a time (the block's strips stay in L1 while the ten-column panels of `g` pass
//! them): 7.3 ms for the same product (medians of seven; the copy and the packed GEMM 10.4 in
//! the same run).

use std::arch::x86_64::*;

use crate::allocate::try_reserve;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::MatmulDims;

use super::parallel::{for_each_task, SendPtr};

/// Rows of a tile (two 16-lane vectors along `m`).
const MR: usize = 32;
/// Columns of a tile (broadcasts of one row of the right operand).
const NR: usize = 10;
/// Depth of a block: its strips of the left operand (`KC x 32` f32, 16 KB) stay in L1 while
/// the right operand's panels pass them. 64 to 512 measured alike on the 2-core Zen 4.
const KC: usize = 128;
/// Products of fewer multiply-adds take the transposing copy: below this the copy is cheap.
const FROM: usize = 1 << 18;
/// Wider products take the transposing copy and the packed GEMM, and so do products of fewer
/// than 32 rows (a tile's lanes mostly idle). Medians of seven on the 2-core Zen 4, this kernel
/// against the copy: `[10000,784]ᵀ·[10000,n]` 7.3 / 10.4 ms at n = 50, 27.3 / 25.4 at 256,
/// 100 / 90 at 1000; `[2000,2000]ᵀ·[2000,100]` 4.9 / 5.7; `[10000,50]ᵀ·[10000,10]` 0.16 /
/// 0.37; `[10000,16]ᵀ·[10000,500]` 4.2 / 2.3.
const MOST_COLUMNS: usize = 128;
/// The most floats of sums one task keeps (4 MB; notebook 05's weight gradient needs 83 KB).
const SUMS_FLOATS: usize = 1 << 20;
/// Products of fewer multiply-adds run on the calling thread only.
const PARALLEL_FROM: usize = 1 << 21;

/// `batch` products `aᵀ·b` for `a` of `[k,m]` and `b` of `[k,n]` matrices, when this CPU has
/// AVX-512 and the product is large enough to gain from it; `None` otherwise.
pub(super) fn products(a: &[f32], b: &[f32], d: MatmulDims) -> Option<Result<HostVec<f32>>> {
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    let work = m.checked_mul(k)?.checked_mul(n)?;
    if work < FROM || m < MR || n > MOST_COLUMNS || k == 0 || !is_x86_feature_detected!("avx512f") {
        return None;
    }
    // Every matrix must lie inside its operand (the frontend made them so; checked here, as
    // the loops below read through raw pointers).
    let last = batch.checked_sub(1)?;
    let a_end = sa.checked_mul(last)?.checked_add(k.checked_mul(m)?)?;
    let b_end = sb.checked_mul(last)?.checked_add(k.checked_mul(n)?)?;
    if a.len() < a_end || b.len() < b_end {
        return None;
    }
    let shape = [batch, m, n];
    let len = batch.checked_mul(m * n)?;
    let mut out = match try_reserve::<f32>(len, &shape) {
        Ok(out) => out,
        Err(e) => return Some(Err(e)),
    };
    let c = SendPtr(out.spare_capacity_mut().as_mut_ptr().cast::<f32>());
    let tiles = m.div_ceil(MR);
    let threads = if work >= PARALLEL_FROM {
        rayon::current_num_threads().clamp(1, tiles)
    } else {
        1
    };
    for bi in 0..batch {
        let (a, b) = (&a[bi * sa..], &b[bi * sb..]);
        let c = SendPtr(c.offset(bi * m * n));
        let run = |t: usize| {
            let (first, last) = (t * tiles / threads, (t + 1) * tiles / threads);
            let product = Operands { a, b, c, m, k, n };
            // SAFETY: AVX-512 is present; the tiles `first..last` of this product are this
            // task's alone, and every read lies inside `a` and `b` (checked above).
            unsafe { tiles_of(product, first..last) };
        };
        if threads == 1 {
            run(0);
        } else {
            for_each_task(threads, &run);
        }
    }
    // SAFETY: every product wrote each of its m*n entries (each task its tiles' rows, at the
    // end of each group of tiles).
    unsafe { out.set_len(len) };
    Some(Ok(out))
}

/// One product of [`products`]: `c = aᵀ·b`, `a` of `[k,m]`, `b` of `[k,n]`, `c` of `[m,n]`.
#[derive(Clone, Copy)]
struct Operands<'a> {
    a: &'a [f32],
    b: &'a [f32],
    c: SendPtr<f32>,
    m: usize,
    k: usize,
    n: usize,
}

/// The rows `32·tiles.start .. 32·tiles.end` (at most `m`) of `c = aᵀ·b`, depth block by depth
/// block. The sums stay in a column-major block of this task's own (a tile's columns lie as the
/// tile's registers hold them, so a depth block adds to them with whole-vector loads and
/// stores: written into `c` after each block, the scattered single-float updates of a
/// row-major `c` took most of the time), copied into `c` once at the end.
#[target_feature(enable = "avx512f")]
unsafe fn tiles_of(product: Operands<'_>, tiles: std::ops::Range<usize>) {
    let n = product.n;
    // [tile][column][32 rows], for a group of tiles at a time: a group reads only its own
    // columns of `a`, so groups read nothing twice, and the scratch stays bounded whatever `m`.
    let group = (SUMS_FLOATS / (n * MR)).max(1);
    let mut sums = vec![0f32; group.min(tiles.len()) * n * MR];
    let mut start = tiles.start;
    while start < tiles.end {
        let end = tiles.end.min(start + group);
        sums.fill(0.0);
        tile_group(product, start..end, &mut sums);
        start = end;
    }
}

/// [`tiles_of`] for the tiles `tiles`, whose sums `sums` holds (zeroed).
#[target_feature(enable = "avx512f")]
unsafe fn tile_group(product: Operands<'_>, tiles: std::ops::Range<usize>, sums: &mut [f32]) {
    let Operands { a, b, c, m, k, n } = product;
    let c = c.offset(0);
    let mut p = 0;
    while p < k {
        let depth = KC.min(k - p);
        for (slot, index) in tiles.clone().enumerate() {
            let row = index * MR;
            let rows = MR.min(m - row);
            let mut col = 0;
            while col < n {
                let cols = NR.min(n - col);
                // SAFETY (for the caller's): rows `row..row + rows` and columns `col..col +
                // cols` of rows `p..p + depth` are inside `a` and `b`; the masked loads read
                // no lane past `rows`; the sums of this tile's columns `col..col + cols` are
                // inside `sums`.
                let (at, bt) = (a.as_ptr().add(p * m + row), b.as_ptr().add(p * n + col));
                let st = sums.as_mut_ptr().add((slot * n + col) * MR);
                macro_rules! with_cols {
                    ($($nr:literal)*) => {
                        match cols {
                            $($nr => tile::<$nr>(depth, at, m, bt, n, st, rows),)*
                            _ => unreachable!("a tile has 1 to {NR} columns"),
                        }
                    };
                }
                with_cols!(1 2 3 4 5 6 7 8 9 10);
                col += cols;
            }
        }
        p += depth;
    }
    for (slot, index) in tiles.enumerate() {
        let row = index * MR;
        let rows = MR.min(m - row);
        for j in 0..n {
            let column = &sums[(slot * n + j) * MR..][..rows];
            for (i, &v) in column.iter().enumerate() {
                c.add((row + i) * n + j).write(v);
            }
        }
    }
}

/// One `rows x NC` tile (rows <= 32): adds `Σ_p a[p][i]·b[p][j]` over `depth` rows of `a`
/// (stride `lda`) and `b` (stride `ldb`) to `sums`, `NC` columns of 32 floats.
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const NC: usize>(
    depth: usize,
    a: *const f32,
    lda: usize,
    b: *const f32,
    ldb: usize,
    sums: *mut f32,
    rows: usize,
) {
    let mask = |lanes: usize| -> __mmask16 {
        if lanes >= 16 {
            0xffff
        } else {
            ((1u32 << lanes) - 1) as __mmask16
        }
    };
    let (low, high) = (mask(rows), mask(rows.saturating_sub(16)));
    let mut lo = [_mm512_setzero_ps(); NC];
    let mut hi = [_mm512_setzero_ps(); NC];
    let (mut pa, mut pb) = (a, b);
    for _ in 0..depth {
        let x0 = _mm512_maskz_loadu_ps(low, pa);
        let x1 = _mm512_maskz_loadu_ps(high, pa.add(16));
        for j in 0..NC {
            let g = _mm512_set1_ps(*pb.add(j));
            lo[j] = _mm512_fmadd_ps(x0, g, lo[j]);
            hi[j] = _mm512_fmadd_ps(x1, g, hi[j]);
        }
        pa = pa.add(lda);
        pb = pb.add(ldb);
    }
    for j in 0..NC {
        let column = sums.add(j * MR);
        _mm512_storeu_ps(column, _mm512_add_ps(_mm512_loadu_ps(column), lo[j]));
        let column = column.add(16);
        _mm512_storeu_ps(column, _mm512_add_ps(_mm512_loadu_ps(column), hi[j]));
    }
}
