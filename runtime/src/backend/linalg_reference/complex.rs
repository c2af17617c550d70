//! The reference factorisations of complex matrices, in c128 whatever the input's precision:
//! Cholesky–Banachiewicz and cyclic Jacobi for Hermitian eigenproblems here, the complex forms
//! of the real references beside them; LU and Householder QR are the real ones' own code
//! (`lu.rs`, `householder.rs`), generic over the element. Complex
//! solves are composed in the frontend over the real kernels; Nx refuses complex SVDs.
//! Results follow the conventions of [`crate::ir::linalg`]: `l`'s diagonal real, `r`'s real and
//! non-negative where a reflection was applied, eigenvalues real (held in the complex dtype, as
//! Nx holds them), each eigenvector turned so that its largest entry is real and positive.

use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::complex::Complex64 as C;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ir::linalg::{eigh_order, Factorization, LinAlg};

/// Runs `op` (a complex factorisation other than the SVD, which Nx refuses) over its batch: each matrix read as c128, factorised,
/// rounded back once to `T`.
pub(crate) fn run<T: Element>(op: &LinAlg, inputs: &[&[T]]) -> Result<Buffer> {
    let LinAlg::Factor { kind, batch, m, n } = *op else {
        return Err(not_here(op));
    };
    if matches!(kind, Factorization::Svd { .. }) {
        return Err(not_here(op));
    }
    let per = op.per_matrix();
    let mut out = try_alloc(op.out_len(), T::ZERO, &[op.out_len()])?;
    let mut result = vec![C::ZERO; per];
    let a = inputs.first().copied().unwrap_or(&[]);
    for b in 0..batch {
        crate::interrupt::check()?;
        let matrix: Vec<C> = a[b * m * n..(b + 1) * m * n]
            .iter()
            .map(|x| {
                let (re, im) = x.to_parts();
                C::new(re, im)
            })
            .collect();
        match kind {
            Factorization::Cholesky => cholesky(&matrix, n, &mut result),
            Factorization::Lu => super::lu::lu(&matrix, n, &mut result, pivot_size),
            Factorization::Qr { complete } => {
                super::householder::qr(&matrix, m, n, complete, &mut result)
            }
            _ => eigh(&matrix, n, &mut result),
        }
        for (o, r) in out[b * per..(b + 1) * per].iter_mut().zip(&result) {
            *o = T::from_parts(r.re, r.im);
        }
    }
    Ok(T::into_buffer(out))
}

/// NaN in both parts: what a factorisation that cannot be computed gives.
const NAN: C = C::new(f64::NAN, f64::NAN);

/// `l·lᴴ = a` of a Hermitian positive-definite matrix (Cholesky–Banachiewicz; the lower
/// triangle read, the diagonal's imaginary parts dropped as LAPACK's `?potrf` drops them);
/// NaN everywhere where `a` is not positive definite.
fn cholesky(a: &[C], n: usize, l: &mut [C]) {
    l.fill(C::ZERO);
    for j in 0..n {
        let s = a[j * n + j].re - (0..j).map(|k| norm_sqr(l[j * n + k])).sum::<f64>();
        if s.is_nan() || s <= 0.0 {
            l.fill(NAN);
            return;
        }
        let d = s.sqrt();
        l[j * n + j] = C::new(d, 0.0);
        for i in j + 1..n {
            let s = (0..j).fold(a[i * n + j], |acc, k| {
                acc.sub(l[i * n + k].mul(l[j * n + k].conj()))
            });
            l[i * n + j] = scaled(s, 1.0 / d);
        }
    }
}

/// `|re| + |im|`: the magnitude LAPACK's complex pivot search (`i?amax`) compares.
fn pivot_size(z: C) -> f64 {
    z.re.abs() + z.im.abs()
}

fn not_here(op: &LinAlg) -> Error {
    Error::InvalidArgument {
        op: op.name(),
        message: "internal: complex matrices reached a kernel that takes only real ones".into(),
    }
}

fn norm_sqr(z: C) -> f64 {
    z.re * z.re + z.im * z.im
}

fn scaled(z: C, k: f64) -> C {
    C::new(z.re * k, z.im * k)
}

/// The Hermitian matrix whose lower triangle is `a`'s (the diagonal's imaginary parts
/// dropped, as LAPACK's `?heevd` drops them).
fn hermitian_from_lower(a: &[C], n: usize) -> Vec<C> {
    let mut h = vec![C::ZERO; n * n];
    for i in 0..n {
        for j in 0..i {
            h[i * n + j] = a[i * n + j];
            h[j * n + i] = a[i * n + j].conj();
        }
        h[i * n + i] = C::new(a[i * n + i].re, 0.0);
    }
    h
}

/// Cyclic Jacobi: each off-diagonal `h[p][q] = |h_pq|·e^{iθ}` is first made real by turning
/// column `q` by `e^{-iθ}` (and row `q` by its conjugate), then removed by the real rotation
/// of the real reference; the eigenvectors gather both.
fn eigh(a: &[C], n: usize, out: &mut [C]) {
    let unreadable = (0..n).any(|i| {
        (0..=i).any(|j| {
            let z = a[i * n + j];
            !z.re.is_finite() || !z.im.is_finite()
        })
    });
    if unreadable {
        out.fill(NAN);
        return;
    }
    let mut h = hermitian_from_lower(a, n);
    let mut v = vec![C::ZERO; n * n];
    for i in 0..n {
        v[i * n + i] = C::ONE;
    }
    let total: f64 = h.iter().map(|&z| norm_sqr(z)).sum();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| norm_sqr(h[i * n + j]))
            .sum();
        if off <= total * 1e-32 || !off.is_finite() {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let size = h[p * n + q].norm();
                if size == 0.0 {
                    continue;
                }
                let unit = scaled(h[p * n + q], 1.0 / size);
                for k in 0..n {
                    h[k * n + q] = h[k * n + q].mul(unit.conj());
                    v[k * n + q] = v[k * n + q].mul(unit.conj());
                }
                for k in 0..n {
                    h[q * n + k] = h[q * n + k].mul(unit);
                }
                let theta = (h[q * n + q].re - h[p * n + p].re) / (2.0 * size);
                let t = super::jacobi::rotation_tangent(theta);
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                let rotate = |x: C, y: C| {
                    (
                        scaled(x, c).sub(scaled(y, s)),
                        scaled(x, s).add(scaled(y, c)),
                    )
                };
                for k in 0..n {
                    (h[k * n + p], h[k * n + q]) = rotate(h[k * n + p], h[k * n + q]);
                }
                for k in 0..n {
                    (h[p * n + k], h[q * n + k]) = rotate(h[p * n + k], h[q * n + k]);
                }
                for k in 0..n {
                    (v[k * n + p], v[k * n + q]) = rotate(v[k * n + p], v[k * n + q]);
                }
            }
        }
    }
    let mut w: Vec<C> = (0..n).map(|i| C::new(h[i * n + i].re, 0.0)).collect();
    eigh_order(&mut w, &mut v, n);
    out[..n].copy_from_slice(&w);
    out[n..].copy_from_slice(&v);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(a: &[C], b: &[C], m: usize, k: usize, n: usize) -> Vec<C> {
        let mut out = vec![C::ZERO; m * n];
        for i in 0..m {
            for j in 0..n {
                out[i * n + j] =
                    (0..k).fold(C::ZERO, |acc, l| acc.add(a[i * k + l].mul(b[l * n + j])));
            }
        }
        out
    }

    fn adjoint(a: &[C], rows: usize, cols: usize) -> Vec<C> {
        let mut out = vec![C::ZERO; rows * cols];
        for i in 0..rows {
            for j in 0..cols {
                out[j * rows + i] = a[i * cols + j].conj();
            }
        }
        out
    }

    fn close(a: &[C], b: &[C]) -> bool {
        a.iter().zip(b).all(|(x, y)| x.sub(*y).norm() < 1e-10)
    }

    fn sample(m: usize, n: usize) -> Vec<C> {
        (0..m * n)
            .map(|i| {
                C::new(
                    ((i * 7 + 3) % 11) as f64 - 5.0,
                    ((i * 5 + 1) % 7) as f64 - 3.0,
                )
            })
            .collect()
    }

    #[test]
    fn complex_qr_rebuilds_wide_and_tall_matrices_with_a_real_diagonal() {
        for (m, n, complete) in [(4, 3, false), (4, 3, true), (3, 5, false), (3, 3, true)] {
            let a = sample(m, n);
            let (qc, rr) = if complete {
                (m, m)
            } else {
                (m.min(n), m.min(n))
            };
            let mut out = vec![C::ZERO; m * qc + rr * n];
            super::super::householder::qr(&a, m, n, complete, &mut out);
            let (q, r) = out.split_at(m * qc);
            assert!(close(&product(q, r, m, qc, n), &a), "{m}x{n}");
            let qhq = product(&adjoint(q, m, qc), q, qc, m, qc);
            let eye: Vec<C> = (0..qc * qc)
                .map(|i| if i % (qc + 1) == 0 { C::ONE } else { C::ZERO })
                .collect();
            assert!(close(&qhq, &eye), "{m}x{n}");
            for j in 0..rr.min(n) {
                assert!(
                    r[j * n + j].im == 0.0 && r[j * n + j].re >= 0.0,
                    "{m}x{n} {j}: {:?}",
                    r[j * n + j]
                );
            }
        }
    }

    #[test]
    fn complex_eigh_diagonalises_a_hermitian_matrix() {
        let n = 4;
        let b = sample(n, n);
        let h = product(&b, &adjoint(&b, n, n), n, n, n);
        let mut out = vec![C::ZERO; n + n * n];
        eigh(&h, n, &mut out);
        let (w, v) = out.split_at(n);
        let vw: Vec<C> = (0..n * n).map(|i| v[i].mul(w[i % n])).collect();
        assert!(close(&product(&h, v, n, n, n), &vw));
        assert!(w.windows(2).all(|p| p[0].re.abs() >= p[1].re.abs()));
    }
}
