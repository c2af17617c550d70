//! `[m,k]·[k,n]` for small `n` (the blog's `{10000,784}·{784,10}`): a memory-bound product
//! whose cost is one pass over the left operand. General GEMM packs the left operand first,
//! which is a second pass; this kernel streams it once, row blocks across threads, against
//! the transposed right operand held in cache.

use super::parallel::{for_each_chunk_mut, MIN_PER_TASK};
use crate::allocate::try_alloc;
use crate::element::Element;
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

/// The f32 kernels, one module per instruction set, written once by this macro.
///
/// Register blocking: each step loads 8 lanes from each of `R` rows of the left operand and
/// from each of `C` columns of the right, and issues `R·C` FMAs. On AVX2 (16 registers)
/// `R = 2, C = 5` holds 10 accumulators + 3 operands with 7 loads per 10 FMAs; one row
/// against ten columns needed 11 loads per 10 (measured no faster even written by hand).
/// With AVX-512VL the same 256-bit instructions reach 32 registers, and `R = 4, C = 5` holds
/// 20 accumulators with 9 loads per 20 FMAs: 5-6% faster on the blog's shape on a Zen 4
/// (binaries alternated over 10 rounds, medians: two threads 1.15 against 1.21 ms, one
/// thread 2.30 against 2.45). `R = 2, C = 10` was no faster, and 512-bit vectors slower:
/// Zen 4 splits them in two anyway, and the horizontal sums double.
///
/// Depth blocking: the transposed right operand of the blog's shape is 10 x 784 f32 = 31 KB,
/// which does not stay in L1 beside the streamed rows, so its loads came from L2. Rows are
/// taken in groups of `G`; each group runs through the depth in chunks of at most `KC` (a
/// 10 KB slice of the right operand), its accumulators kept in memory between chunks.
/// Measured on the blog's shape through `bench ops`, old and new binaries alternated:
/// 1.45-1.49 ms -> 1.29-1.36 ms, together with the base pointers hoisted out of the loop (see
/// `block`). KC 512 and groups of 4 rows measured 5-15% slower.
#[cfg(target_arch = "x86_64")]
macro_rules! skinny_kernel {
    ($name:ident, $features:literal, $rows:literal) => {
        pub(super) mod $name {
            use std::arch::x86_64::*;

            /// Rows of the left operand per block.
            const R: usize = $rows;
            /// Columns of the right operand per full block.
            const C: usize = 5;
            /// f32 lanes per register.
            const L: usize = 8;
            /// Rows per group (a multiple of `R`).
            const G: usize = 8;
            /// Greatest depth of a chunk (a multiple of `L`).
            const KC: usize = 256;
            /// How many rows ahead of the current block of `a` to prefetch.
            const PREFETCH_AHEAD: usize = 4;

            /// Per row of a group, one accumulator per output column.
            type Acc = [[__m256; super::MAX_N]; G];

            /// Sum of the 8 lanes.
            #[target_feature(enable = $features)]
            unsafe fn hsum(v: __m256) -> f32 {
                let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
                let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
                let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
                _mm_cvtss_f32(s)
            }

            /// Depth `[p0, p1)` of rows `r..r+RR` of the group (`a` at the group's first
            /// row, rows `k` apart) against columns `col..col+CC` of `bt`, added to `acc`.
            ///
            /// # Safety
            /// The CPU has the module's features; `a` holds `(r+RR)·k`, `bt` `(col+CC)·k`
            /// elements; `p1 ≤ k` and `p1 - p0` is a multiple of `L`.
            #[target_feature(enable = $features)]
            #[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
            unsafe fn block<const RR: usize, const CC: usize>(
                a: &[f32],
                bt: &[f32],
                k: usize,
                r: usize,
                col: usize,
                p0: usize,
                p1: usize,
                acc: &mut Acc,
            ) {
                debug_assert!(a.len() >= (r + RR) * k && bt.len() >= (col + CC) * k && p1 <= k);
                let mut sums = [[_mm256_setzero_ps(); CC]; RR];
                for i in 0..RR {
                    for c in 0..CC {
                        sums[i][c] = acc[r + i][col + c];
                    }
                }
                // Every address as a base pointer plus the one running offset, computed
                // once: with the column offsets recomputed in the loop the compiler spilled
                // them to the stack.
                let rows: [*const f32; RR] = std::array::from_fn(|i| a.as_ptr().add((r + i) * k));
                let ahead: [*const f32; RR] =
                    std::array::from_fn(|i| rows[i].wrapping_add(PREFETCH_AHEAD * k));
                let cols: [*const f32; CC] =
                    std::array::from_fn(|c| bt.as_ptr().add((col + c) * k));
                let mut p = p0;
                while p < p1 {
                    let mut x = [_mm256_setzero_ps(); RR];
                    for i in 0..RR {
                        x[i] = _mm256_loadu_ps(rows[i].add(p));
                        // Rows further on, fetched while these compute: without it the
                        // loads of `a` stalled half the loop (the hardware prefetcher keeps
                        // less in flight than a plain sum does).
                        _mm_prefetch::<_MM_HINT_T0>(ahead[i].wrapping_add(p).cast());
                    }
                    for c in 0..CC {
                        let y = _mm256_loadu_ps(cols[c].add(p));
                        for i in 0..RR {
                            sums[i][c] = _mm256_fmadd_ps(x[i], y, sums[i][c]);
                        }
                    }
                    p += L;
                }
                for i in 0..RR {
                    for c in 0..CC {
                        acc[r + i][col + c] = sums[i][c];
                    }
                }
            }

            /// Depth `[p0, p1)` of `RR` rows against all `n` columns: full blocks of `C`
            /// columns, then the remainder.
            #[target_feature(enable = $features)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn rows_chunk<const RR: usize>(
                a: &[f32],
                bt: &[f32],
                k: usize,
                n: usize,
                r: usize,
                p0: usize,
                p1: usize,
                acc: &mut Acc,
            ) {
                let full = n - n % C;
                for col in (0..full).step_by(C) {
                    block::<RR, C>(a, bt, k, r, col, p0, p1, acc);
                }
                match n % C {
                    1 => block::<RR, 1>(a, bt, k, r, full, p0, p1, acc),
                    2 => block::<RR, 2>(a, bt, k, r, full, p0, p1, acc),
                    3 => block::<RR, 3>(a, bt, k, r, full, p0, p1, acc),
                    4 => block::<RR, 4>(a, bt, k, r, full, p0, p1, acc),
                    _ => {}
                }
            }

            /// The rows of one task, `G` at a time.
            ///
            /// # Safety
            /// The CPU has the module's features; `a.len() / k == out.len() / n` whole
            /// rows, `bt` is `n × k`, `n ≤ MAX_N`.
            #[target_feature(enable = $features)]
            pub unsafe fn rows(a: &[f32], bt: &[f32], k: usize, n: usize, out: &mut [f32]) {
                let full = k - k % L;
                for (a, out) in a.chunks(G * k).zip(out.chunks_mut(G * n)) {
                    let g = a.len() / k;
                    let mut acc: Acc = [[_mm256_setzero_ps(); super::MAX_N]; G];
                    // Equal chunks of at most KC: 784 in 256s left a 16-deep chunk paying a
                    // block's fixed cost (accumulators in and out) for two steps; equal
                    // chunks measured 3-4% faster on the blog's shape, cold and hot.
                    let steps = full / L;
                    let chunks = steps.div_ceil(KC / L).max(1);
                    let per = (steps.div_ceil(chunks) * L).max(L);
                    for p0 in (0..full).step_by(per) {
                        let p1 = (p0 + per).min(full);
                        let mut r = 0;
                        while r + R <= g {
                            rows_chunk::<R>(a, bt, k, n, r, p0, p1, &mut acc);
                            r += R;
                        }
                        while r + 2 <= g {
                            rows_chunk::<2>(a, bt, k, n, r, p0, p1, &mut acc);
                            r += 2;
                        }
                        if r < g {
                            rows_chunk::<1>(a, bt, k, n, r, p0, p1, &mut acc);
                        }
                    }
                    for r in 0..g {
                        for c in 0..n {
                            let mut sum = hsum(acc[r][c]);
                            for q in full..k {
                                sum += a[r * k + q] * bt[c * k + q];
                            }
                            out[r * n + c] = sum;
                        }
                    }
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
skinny_kernel!(avx2, "avx2,fma", 2);
#[cfg(target_arch = "x86_64")]
skinny_kernel!(avx512, "avx2,fma,avx512f,avx512vl", 4);

/// Which kernel this CPU runs, asked once.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kernel {
    Avx512,
    Avx2,
    Portable,
}

#[cfg(target_arch = "x86_64")]
fn kernel() -> Kernel {
    static KERNEL: std::sync::OnceLock<Kernel> = std::sync::OnceLock::new();
    *KERNEL.get_or_init(|| {
        let fma = is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma");
        if fma && is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl") {
            Kernel::Avx512
        } else if fma {
            Kernel::Avx2
        } else {
            Kernel::Portable
        }
    })
}

fn dispatch<T: Element>(a: &[T], bt: &[T], k: usize, n: usize, out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    if let (Some(a), Some(bt)) = (f32_slice(a), f32_slice(bt)) {
        if let Some(out) = f32_slice_mut(out) {
            // SAFETY: `kernel()` checked the CPU's features for each module; the caller
            // passes whole rows of `a` and `out` and the whole `n × k` transposed right
            // operand.
            match kernel() {
                Kernel::Avx512 => return unsafe { avx512::rows(a, bt, k, n, out) },
                Kernel::Avx2 => return unsafe { avx2::rows(a, bt, k, n, out) },
                Kernel::Portable => return rows_portable(a, bt, k, n, out),
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
    // The transposed right operand starts on a cache line, so that no 32-byte load of it
    // straddles two (the allocator gives 16 bytes): measured 3% on the blog's shape.
    const LINE: usize = 64;
    let pad = LINE / std::mem::size_of::<T>();
    let mut store = try_alloc(n * k + pad, T::ZERO, &[n, k])?;
    let start = store.as_ptr().align_offset(LINE).min(pad);
    let bt = &mut store[start..start + n * k];
    for p in 0..k {
        for j in 0..n {
            bt[j * k + p] = b[p * n + j];
        }
    }
    let bt = &*bt;
    // Whole groups of 8 rows per task keep every task on the widest row block but the last
    // (42 rows left 2 per task to the two-row block: 8 rows per task measured 3% faster).
    let rows_per_task = ((MIN_PER_TASK / k.max(1)).max(8) + 7) & !7;
    let a = &a[..m * k];
    for_each_chunk_mut(&mut out[..m * n], rows_per_task * n, |t, o| {
        let from = t * rows_per_task * k;
        dispatch(
            &a[from..(from + rows_per_task * k).min(a.len())],
            bt,
            k,
            n,
            o,
        )
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain f64 loop: the reference every kernel is checked against.
    fn reference(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let s: f64 = (0..k)
                    .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                    .sum();
                out[i * n + j] = s as f32;
            }
        }
        out
    }

    /// Every kernel this CPU can run, on row counts that leave every remainder of the row
    /// blocks and groups, every column remainder up to MAX_N, depths with a scalar tail, one
    /// chunk, several equal chunks.
    #[test]
    fn every_kernel_matches_a_plain_loop() {
        for (m, k) in [
            (1, 8),
            (3, 9),
            (7, 17),
            (13, 256),
            (21, 263),
            (42, 784),
            (37, 1030),
        ] {
            for n in 1..=MAX_N {
                let a: Vec<f32> = (0..m * k)
                    .map(|i| ((i * 7) % 13) as f32 / 13.0 - 0.5)
                    .collect();
                let b: Vec<f32> = (0..k * n)
                    .map(|i| ((i * 5) % 11) as f32 / 11.0 - 0.5)
                    .collect();
                let want = reference(&a, &b, m, k, n);
                let mut bt = vec![0f32; n * k];
                for p in 0..k {
                    for j in 0..n {
                        bt[j * k + p] = b[p * n + j];
                    }
                }
                let mut kernels: Vec<(&str, Vec<f32>)> = Vec::new();
                let mut out = vec![0f32; m * n];
                rows_portable(&a, &bt, k, n, &mut out);
                kernels.push(("portable", out));
                #[cfg(target_arch = "x86_64")]
                {
                    if kernel() != Kernel::Portable {
                        let mut out = vec![0f32; m * n];
                        // SAFETY: the CPU has AVX2 and FMA (the kernel choice says so).
                        unsafe { avx2::rows(&a, &bt, k, n, &mut out) };
                        kernels.push(("avx2", out));
                    }
                    if kernel() == Kernel::Avx512 {
                        let mut out = vec![0f32; m * n];
                        // SAFETY: the CPU has AVX-512F/VL (the kernel choice says so).
                        unsafe { avx512::rows(&a, &bt, k, n, &mut out) };
                        kernels.push(("avx512", out));
                    } else {
                        println!("avx512 kernel not checked: this CPU lacks AVX-512F/VL");
                    }
                }
                let mut through = vec![0f32; m * n];
                matmul(&a, &b, m, k, n, &mut through).unwrap();
                kernels.push(("matmul", through));
                for (name, got) in kernels {
                    for (g, w) in got.iter().zip(&want) {
                        assert!(
                            (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                            "{name} [{m},{k}]x[{k},{n}]: {g} vs {w}"
                        );
                    }
                }
            }
        }
    }
}
