//! How host routes a matrix product: narrow products to the streaming `skinny` kernel, large
//! f32/f64 ones to host's packed GEMM (AVX2+FMA) or the system BLAS, the rest to the `gemm`
//! crate; large complex products to the system BLAS's complex GEMM or one real GEMM; integer
//! and small complex products through parallel i-k-j loops.

use crate::allocate::{try_alloc, try_reserve};
use crate::complex::{interleaved, Complex};
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::MatmulDims;
use crate::shape::numel;

use super::blas::{self, packed_gemm_chosen};
use super::loops::*;
#[cfg(target_arch = "x86_64")]
use super::packed_gemm;
use super::skinny;

/// Products of at least this many multiply-adds go to the packed GEMM or the system BLAS:
/// below it the `gemm` crate's unpacked product costs less than packing.
pub(super) const BLAS_FROM: usize = 1 << 18;

/// `batch` products of `[m,k]` and `[k,n]` matrices through the packed GEMM, into an output
/// that is never zero-filled (the GEMM writes every value); `None` where it does not apply.
pub(super) fn packed_products<T: Element>(
    a: &[T],
    b: &[T],
    d: MatmulDims,
) -> Option<Result<HostVec<T>>> {
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    #[cfg(target_arch = "x86_64")]
    {
        if !packed_gemm_chosen() || !packed_gemm::supports::<T>() {
            return None;
        }
        let shape = [batch, m, n];
        let len = numel(&shape);
        let mut out = match try_reserve::<T>(len, &shape) {
            Ok(out) => out,
            Err(e) => return Some(Err(e)),
        };
        let slots = &mut out.spare_capacity_mut()[..len];
        for bi in 0..batch {
            let (lhs, rhs) = (&a[bi * sa..bi * sa + m * k], &b[bi * sb..bi * sb + k * n]);
            let dst = &mut slots[bi * m * n..(bi + 1) * m * n];
            if !packed_gemm::matmul(lhs, rhs, m, k, n, dst) {
                return Some(Err(crate::error::Error::InvalidArgument {
                    op: "dot",
                    message: format!(
                        "host's packed GEMM refused a {m}x{k} by {k}x{n} {:?} product",
                        T::DTYPE
                    ),
                }));
            }
        }
        // SAFETY: each of the `batch` products wrote all of its m*n slots, which together are
        // the first `len`.
        unsafe { out.set_len(len) };
        Some(Ok(out))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, b, d);
        None
    }
}

/// What host's products from 64³ multiply-adds go through, for `tensorbook bench`'s header.
pub fn gemm_name() -> String {
    if packed_gemm_chosen() {
        #[cfg(target_arch = "x86_64")]
        let wide = packed_gemm::wide_tiles();
        #[cfg(not(target_arch = "x86_64"))]
        let wide = false;
        return if wide {
            "host's packed GEMM (AVX-512 f32 and f64 tiles)".to_string()
        } else {
            "host's packed AVX2+FMA GEMM".to_string()
        };
    }
    match blas::blas() {
        Some(b) => format!("the system BLAS ({})", b.name),
        None => "the gemm crate (no system BLAS loaded)".to_string(),
    }
}

/// `a · b` of two row-major f32/f64 matrices through the first system BLAS that loads,
/// whatever host's products go through: `tensorbook bench ops` sets it beside host's own.
/// `None` when no system BLAS loads or the operands are not matrices of one float type.
pub fn system_blas_dot<T: Element>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
) -> Option<Vec<T>> {
    let blas = blas::system_blas()?;
    let mut out = vec![T::ZERO; m.checked_mul(n)?];
    blas.gemm(a, b, m, k, n, &mut out).then_some(out)
}

/// f32/f64 products through the skinny kernel, the system BLAS or `gemm`; row-major means
/// column stride 1, row stride = width.
pub(super) fn gemm_float<T: Element>(a: &[T], b: &[T], d: MatmulDims) -> Result<HostVec<T>> {
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    let work = m.saturating_mul(n).saturating_mul(k);
    if work >= BLAS_FROM && n > skinny::MAX_N {
        if let Some(out) = packed_products(a, b, d) {
            return out;
        }
    }
    let mut out = try_alloc(numel(&[batch, m, n]), T::ZERO, &[batch, m, n])?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(out);
    }
    let parallelism = if m.saturating_mul(n).saturating_mul(k) >= 1 << 18 {
        gemm::Parallelism::Rayon(rayon::current_num_threads())
    } else {
        gemm::Parallelism::None
    };
    for bi in 0..batch {
        let (lhs, rhs) = (&a[bi * sa..bi * sa + m * k], &b[bi * sb..bi * sb + k * n]);
        let dst = &mut out[bi * m * n..(bi + 1) * m * n];
        if n <= skinny::MAX_N && m * k >= MIN_PER_TASK {
            skinny::matmul(lhs, rhs, m, k, n, dst)?;
            continue;
        }
        if m.saturating_mul(n).saturating_mul(k) >= BLAS_FROM {
            if let Some(blas) = blas::blas() {
                if blas.gemm(lhs, rhs, m, k, n, dst) {
                    continue;
                }
            }
        }
        // SAFETY: the three slices hold exactly m*k, k*n and m*n elements, and the strides
        // (row-major, column stride 1) keep every access inside them.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst.as_mut_ptr(),
                1,
                n as isize,
                false,
                lhs.as_ptr(),
                1,
                k as isize,
                rhs.as_ptr(),
                1,
                n as isize,
                T::ZERO,
                T::ONE,
                false,
                false,
                false,
                parallelism,
            );
        }
    }
    Ok(out)
}

/// Integer products: i-k-j loops, parallel over output rows.
pub(super) fn matmul_int<T: Element>(a: &[T], b: &[T], d: MatmulDims) -> Result<HostVec<T>> {
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    fill_rows(&[batch * m, n], |row, o: &mut [T], _| {
        let (bi, i) = (row / m.max(1), row % m.max(1));
        for p in 0..k {
            let x = a[bi * sa + i * k + p];
            let brow = &b[bi * sb + p * n..bi * sb + (p + 1) * n];
            for (o, &y) in o.iter_mut().zip(brow) {
                *o = o.add(x.mul(y));
            }
        }
    })
}

/// Complex products of at least this many multiply-adds go through a real GEMM: below it,
/// building the real right-hand side costs more than the generic loop saves.
pub(super) const COMPLEX_GEMM_FROM: usize = 1 << 15;

/// A complex product: the system BLAS's `cgemm`/`zgemm` where one loads, else
/// [`real_product`]. Either sums the same products as the generic loop: no Gauss trick, which
/// saves a quarter of the work at the cost of cancellation in the imaginary part.
pub(super) fn gemm_complex<R: Element>(
    a: &[Complex<R>],
    b: &[Complex<R>],
    d: MatmulDims,
) -> Result<HostVec<Complex<R>>>
where
    Complex<R>: Element,
{
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    // The system BLAS's own complex GEMM where one loads (measured 1.00-1.13x NumPy's zgemm
    // at 256-1024, where the real route below reached 0.47-0.98x).
    if let Some(blas) = blas::blas() {
        let mut out = try_alloc(
            numel(&[batch, m, n]),
            Complex::new(R::ZERO, R::ZERO),
            &[batch, m, n],
        )?;
        let mut done = true;
        for (bi, dst) in out.chunks_mut((m * n).max(1)).enumerate().take(batch) {
            let (lhs, rhs) = (&a[bi * sa..bi * sa + m * k], &b[bi * sb..bi * sb + k * n]);
            if !blas.complex_gemm(lhs, rhs, m, k, n, dst) {
                done = false;
                break;
            }
        }
        if done {
            return Ok(out);
        }
    }
    real_product(a, b, d)
}

/// [`gemm_complex`] without a BLAS, as one real product. An `[m, k]` complex matrix is, in
/// memory, an `[m, 2k]` real one (each row's parts interleaved); against the `[2k, 2n]` real
/// matrix whose `2×2` blocks are `[[re, im], [-im, re]]` of `b`'s entries, the real product is
/// the complex result, interleaved the same way. So the left side and the result are used as
/// they lie, only `b` is rewritten (twice its size), and the multiply-adds of four real
/// products run in one large real GEMM (packed), faster than four of a quarter the size.
fn real_product<R: Element>(
    a: &[Complex<R>],
    b: &[Complex<R>],
    d: MatmulDims,
) -> Result<HostVec<Complex<R>>>
where
    Complex<R>: Element,
{
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    let b_batches = if sb == 0 { 1 } else { batch };
    let (rows, cols) = (k.saturating_mul(2), n.saturating_mul(2));
    let block = rows.saturating_mul(cols);
    let total = block.saturating_mul(b_batches);
    let mut wide = try_alloc(total, R::ZERO, &[b_batches, rows, cols])?;
    for (bi, out) in wide.chunks_mut(block.max(1)).enumerate().take(b_batches) {
        let from = &b[bi * sb..bi * sb + k * n];
        for p in 0..k {
            let (upper, lower) = out[2 * p * cols..(2 * p + 2) * cols].split_at_mut(cols);
            for (q, z) in from[p * n..(p + 1) * n].iter().enumerate() {
                upper[2 * q] = z.re;
                upper[2 * q + 1] = z.im;
                lower[2 * q] = R::ZERO.sub(z.im);
                lower[2 * q + 1] = z.re;
            }
        }
    }
    let real = MatmulDims {
        lhs_batch_stride: sa.saturating_mul(2),
        rhs_batch_stride: if sb == 0 { 0 } else { block },
        batch,
        m,
        k: rows,
        n: cols,
    };
    let product = gemm_float(interleaved(a), &wide, real)?;
    drop(wide);
    let len = numel(&[batch, m, n]);
    let mut out = try_alloc(len, Complex::new(R::ZERO, R::ZERO), &[batch, m, n])?;
    for (o, pair) in out.iter_mut().zip(product.chunks_exact(2)) {
        *o = Complex::new(pair[0], pair[1]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real route (taken where no BLAS loads) against the generic loop, for a batch
    /// against one matrix and a batch against a batch.
    #[test]
    fn the_real_route_of_complex_products_matches_the_loop() {
        let (batch, m, k, n) = (2usize, 5usize, 7usize, 3usize);
        let z = |seed: usize, len: usize| -> Vec<Complex<f64>> {
            (0..len)
                .map(|i| {
                    let t = (seed * 131 + i * 17) as f64;
                    Complex::new((t * 0.37).sin(), (t * 0.73).cos())
                })
                .collect()
        };
        let a = z(1, batch * m * k);
        for sb in [0, k * n] {
            let b = z(2, if sb == 0 { k * n } else { batch * k * n });
            let d = MatmulDims {
                lhs_batch_stride: m * k,
                rhs_batch_stride: sb,
                batch,
                m,
                k,
                n,
            };
            let expected = matmul_int(&a, &b, d).unwrap();
            let got = real_product(&a, &b, d).unwrap();
            assert_eq!(got.len(), expected.len());
            for (x, y) in got.iter().zip(expected.iter()) {
                assert!((x.re - y.re).abs() < 1e-12 && (x.im - y.im).abs() < 1e-12);
            }
        }
    }
}
