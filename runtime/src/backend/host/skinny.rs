//! `[m,k]·[k,n]` for small `n` (the blog's `{10000,784}·{784,10}`): a memory-bound product
//! whose cost is one pass over the left operand. General GEMM packs the left operand first,
//! which is a second pass; this kernel streams it once, row blocks across threads, against
//! the transposed right operand held in cache.

use rayon::prelude::*;

use super::MIN_PER_TASK;
use crate::buffer::try_alloc;
use crate::dtype::Element;
use crate::error::Result;

/// Widest output handled here.
pub(super) const MAX_N: usize = 16;

/// One output row, portable: `out[j] = a · bt[j]` for the `n` rows of `bt`, each as `L`
/// lane-wise partial sums added at the end, so the loop vectorises without reassociating a
/// sum mid-loop (no fast-math needed).
fn row_portable<T: Element, const L: usize>(a: &[T], bt: &[T], k: usize, out: &mut [T]) {
    let full = k - k % L;
    for (j, o) in out.iter_mut().enumerate() {
        let col = &bt[j * k..(j + 1) * k];
        let mut acc = [T::ZERO; L];
        for (x, y) in a[..full].chunks_exact(L).zip(col[..full].chunks_exact(L)) {
            for l in 0..L {
                acc[l] = acc[l].add(x[l].mul(y[l]));
            }
        }
        let mut sum = acc.iter().fold(T::ZERO, |s, &v| s.add(v));
        for q in full..k {
            sum = sum.add(a[q].mul(col[q]));
        }
        *o = sum;
    }
}

fn rows_portable<T: Element>(a: &[T], bt: &[T], k: usize, n: usize, out: &mut [T]) {
    for (a, o) in a.chunks_exact(k).zip(out.chunks_exact_mut(n)) {
        row_portable::<T, 8>(a, bt, k, o);
    }
}

/// The f32 kernel for AVX2+FMA (which AVX-512 machines run too).
///
/// Register blocking: each step loads 8 lanes from each of `R` rows of the left operand and
/// from each of `C` columns of the right, and issues `R·C` FMAs. `R = 2, C = 5` holds 10
/// accumulators + 3 operands in AVX2's 16 registers with 7 loads per 10 FMAs; one row
/// against ten columns needed 11 loads per 10, and the auto-vectorised version of that
/// measured 2.9 ms on the blog's shape where the left operand streams in about 1.2 ms.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Rows of the left operand per block.
    const R: usize = 2;
    /// Columns of the right operand per full block.
    const C: usize = 5;
    /// f32 lanes per register.
    const L: usize = 8;
    /// How many rows ahead of the current block of `a` to prefetch.
    const PREFETCH_AHEAD: usize = 2 * R;

    /// Sum of the 8 lanes.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
        _mm_cvtss_f32(s)
    }

    /// `RR` rows of `a` (each `k` long, rows `k` apart) against `CC` rows of `bt` starting at
    /// column `col`; writes the `RR × CC` sums into `out` (rows `n` apart).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `a` holds `RR·k`, `bt` `(col+CC)·k` and `out` `(RR-1)·n +
    /// col + CC` elements (checked by the caller's slicing).
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::needless_range_loop)]
    unsafe fn block<const RR: usize, const CC: usize>(
        a: &[f32],
        bt: &[f32],
        k: usize,
        n: usize,
        col: usize,
        out: &mut [f32],
    ) {
        debug_assert!(a.len() >= RR * k && bt.len() >= (col + CC) * k);
        debug_assert!(out.len() >= (RR - 1) * n + col + CC);
        let full = k - k % L;
        let mut acc = [[_mm256_setzero_ps(); CC]; RR];
        let (pa, pb) = (a.as_ptr(), bt.as_ptr().add(col * k));
        let mut p = 0;
        while p < full {
            let mut x = [_mm256_setzero_ps(); RR];
            for r in 0..RR {
                x[r] = _mm256_loadu_ps(pa.add(r * k + p));
                // The next block's rows, fetched while this one computes: without it the
                // loads of `a` stalled half the loop (the hardware prefetcher keeps less in
                // flight than a plain sum does).
                _mm_prefetch::<_MM_HINT_T0>(pa.wrapping_add(PREFETCH_AHEAD * k + r * k + p).cast());
            }
            for c in 0..CC {
                let y = _mm256_loadu_ps(pb.add(c * k + p));
                for r in 0..RR {
                    acc[r][c] = _mm256_fmadd_ps(x[r], y, acc[r][c]);
                }
            }
            p += L;
        }
        for r in 0..RR {
            for c in 0..CC {
                let mut sum = hsum(acc[r][c]);
                for q in full..k {
                    sum += a[r * k + q] * bt[(col + c) * k + q];
                }
                out[r * n + col + c] = sum;
            }
        }
    }

    /// All `n` columns of `RR` rows: full blocks of `C` columns, then the remainder.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn row_block<const RR: usize>(
        a: &[f32],
        bt: &[f32],
        k: usize,
        n: usize,
        out: &mut [f32],
    ) {
        let full = n - n % C;
        for col in (0..full).step_by(C) {
            block::<RR, C>(a, bt, k, n, col, out);
        }
        match n % C {
            1 => block::<RR, 1>(a, bt, k, n, full, out),
            2 => block::<RR, 2>(a, bt, k, n, full, out),
            3 => block::<RR, 3>(a, bt, k, n, full, out),
            4 => block::<RR, 4>(a, bt, k, n, full, out),
            _ => {}
        }
    }

    /// The rows of one task, [`R`] at a time.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `a.len() / k == out.len() / n` whole rows, `bt` is `n × k`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn rows(a: &[f32], bt: &[f32], k: usize, n: usize, out: &mut [f32]) {
        let blocks = a.len() / (R * k);
        let (a_blocks, a_rest) = a.split_at(blocks * R * k);
        let (out_blocks, out_rest) = out.split_at_mut(blocks * R * n);
        for (a, o) in a_blocks
            .chunks_exact(R * k)
            .zip(out_blocks.chunks_exact_mut(R * n))
        {
            row_block::<R>(a, bt, k, n, o);
        }
        for (a, o) in a_rest.chunks_exact(k).zip(out_rest.chunks_exact_mut(n)) {
            row_block::<1>(a, bt, k, n, o);
        }
    }
}

fn dispatch<T: Element>(a: &[T], bt: &[T], k: usize, n: usize, out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        if let (Some(a), Some(bt)) = (f32_slice(a), f32_slice(bt)) {
            if let Some(out) = f32_slice_mut(out) {
                // SAFETY: the CPU has AVX2 and FMA; the caller passes whole rows of `a` and
                // `out` and the whole `n × k` transposed right operand.
                return unsafe { avx2::rows(a, bt, k, n, out) };
            }
        }
    }
    rows_portable(a, bt, k, n, out)
}

/// `v` as `&[f32]` when `T` is f32.
fn f32_slice<T: Element>(v: &[T]) -> Option<&[f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()).then(|| {
        // SAFETY: T is f32, so the cast is the identity.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<f32>(), v.len()) }
    })
}

/// `v` as `&mut [f32]` when `T` is f32.
fn f32_slice_mut<T: Element>(v: &mut [T]) -> Option<&mut [f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()).then(|| {
        // SAFETY: T is f32, so the cast is the identity.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<f32>(), v.len()) }
    })
}

/// `out = a · b` for `a: [m,k]`, `b: [k,n]`, `n ≤ MAX_N`, all row-major and contiguous.
pub(super) fn matmul<T: Element>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
    out: &mut [T],
) -> Result<()> {
    if m == 0 || n == 0 {
        return Ok(());
    }
    let mut bt = try_alloc(n * k, T::ZERO, &[n, k])?;
    for p in 0..k {
        for j in 0..n {
            bt[j * k + p] = b[p * n + j];
        }
    }
    // An even number of rows per task keeps every task on the two-row kernel but the last.
    let rows_per_task = ((MIN_PER_TASK / k.max(1)).max(4) + 1) & !1;
    out[..m * n]
        .par_chunks_mut(rows_per_task * n)
        .zip(a[..m * k].par_chunks(rows_per_task * k))
        .for_each(|(o, a)| dispatch(a, &bt, k, n, o));
    Ok(())
}
