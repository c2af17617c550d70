//! The reference factorisations and triangular solves ([`LinAlg`]): textbook algorithms in
//! f64, one matrix at a time, chosen for being plainly right (Cholesky–Banachiewicz, Doolittle
//! with partial pivoting, LAPACK's Householder reflections, cyclic Jacobi for eigenvalues,
//! one-sided Jacobi for singular values). `binary` computes with them; `host` falls back on
//! them where no LAPACK loads. Complex `qr` and `eigh` have their own (`complex.rs`). Results
//! follow the conventions of [`crate::ir::linalg`].

use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::complex::{Complex32, Complex64};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ir::linalg::{eigh_order, svd_signs, Factorization, LinAlg};

use jacobi::rotation_tangent;

mod complex;
mod householder;
mod jacobi;
mod lu;

/// The error of a triangular solve whose matrix has a zero on its diagonal (Nx's words).
pub(crate) fn singular() -> Error {
    singular_in("triangular_solve")
}

/// The error of `op` given a singular matrix (Nx's words).
pub(crate) fn singular_in(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        message: "can't solve for singular matrix".into(),
    }
}

/// The float slices of a linear-algebra op's inputs, all of one float or complex dtype (the
/// frontend casts them; anything else is a frontend bug, reported).
pub(crate) enum FloatInputs<'a> {
    /// f32 matrices.
    F32(Vec<&'a [f32]>),
    /// f64 matrices.
    F64(Vec<&'a [f64]>),
    /// c64 matrices.
    C64(Vec<&'a [Complex32]>),
    /// c128 matrices.
    C128(Vec<&'a [Complex64]>),
}

/// Sorts a linear-algebra op's inputs by precision.
pub(crate) fn float_inputs<'a>(op: &LinAlg, inputs: &[&'a Buffer]) -> Result<FloatInputs<'a>> {
    let wrong = |b: &Buffer| Error::InvalidArgument {
        op: op.name(),
        message: format!(
            "internal: a {} matrix reached the backend (floats and complex only)",
            b.dtype()
        ),
    };
    match inputs.first() {
        Some(Buffer::F32(_)) => inputs
            .iter()
            .map(|b| match b {
                Buffer::F32(x) => Ok(&x[..]),
                other => Err(wrong(other)),
            })
            .collect::<Result<_>>()
            .map(FloatInputs::F32),
        Some(Buffer::F64(_)) => inputs
            .iter()
            .map(|b| match b {
                Buffer::F64(x) => Ok(&x[..]),
                other => Err(wrong(other)),
            })
            .collect::<Result<_>>()
            .map(FloatInputs::F64),
        Some(Buffer::C64(_)) => inputs
            .iter()
            .map(|b| match b {
                Buffer::C64(x) => Ok(&x[..]),
                other => Err(wrong(other)),
            })
            .collect::<Result<_>>()
            .map(FloatInputs::C64),
        Some(Buffer::C128(_)) => inputs
            .iter()
            .map(|b| match b {
                Buffer::C128(x) => Ok(&x[..]),
                other => Err(wrong(other)),
            })
            .collect::<Result<_>>()
            .map(FloatInputs::C128),
        Some(other) => Err(wrong(other)),
        None => Err(Error::InvalidArgument {
            op: op.name(),
            message: "internal: no input".into(),
        }),
    }
}

/// Runs `op` on host buffers with the reference algorithms.
pub(crate) fn run_buffers(op: &LinAlg, inputs: &[&Buffer]) -> Result<Buffer> {
    match float_inputs(op, inputs)? {
        FloatInputs::F32(x) => run(op, &x),
        FloatInputs::F64(x) => run(op, &x),
        FloatInputs::C64(x) => complex::run(op, &x),
        FloatInputs::C128(x) => complex::run(op, &x),
    }
}

/// Runs `op` over its batch: each matrix read as f64, computed, rounded back once to `T`.
pub(crate) fn run<T: Element>(op: &LinAlg, inputs: &[&[T]]) -> Result<Buffer> {
    let per = op.per_matrix();
    let mut out = try_alloc(op.out_len(), T::ZERO, &[op.out_len()])?;
    let mut result = vec![0.0f64; per];
    match *op {
        LinAlg::Factor { kind, batch, m, n } => {
            let a = inputs.first().copied().unwrap_or(&[]);
            for b in 0..batch {
                crate::interrupt::check()?;
                let matrix: Vec<f64> = a[b * m * n..(b + 1) * m * n]
                    .iter()
                    .map(|x| x.to_f64())
                    .collect();
                factor(kind, m, n, &matrix, &mut result);
                for (o, r) in out[b * per..(b + 1) * per].iter_mut().zip(&result) {
                    *o = T::from_f64(*r);
                }
            }
        }
        LinAlg::TriangularSolve {
            batch,
            n,
            rows,
            cols,
            left_side,
            lower,
            transpose,
        } => {
            let (a, rhs) = match inputs {
                [a, b] => (*a, *b),
                _ => return Err(singular()),
            };
            for b in 0..batch {
                crate::interrupt::check()?;
                let wide = |x: &[T]| x.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
                let matrix = wide(&a[b * n * n..(b + 1) * n * n]);
                let given = wide(&rhs[b * rows * cols..(b + 1) * rows * cols]);
                let x = triangular_solve(
                    &matrix,
                    n,
                    &given,
                    [rows, cols],
                    left_side,
                    lower,
                    transpose,
                )?;
                for (o, r) in out[b * per..(b + 1) * per].iter_mut().zip(&x) {
                    *o = T::from_f64(*r);
                }
            }
        }
        LinAlg::Solve {
            batch,
            n,
            cols,
            transpose,
            strict,
        } => {
            let (a, rhs) = match inputs {
                [a, b] => (*a, *b),
                _ => return Err(singular_in("solve")),
            };
            for b in 0..batch {
                crate::interrupt::check()?;
                let wide = |x: &[T]| x.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
                let matrix = wide(&a[b * n * n..(b + 1) * n * n]);
                let given = wide(&rhs[b * n * cols..(b + 1) * n * cols]);
                let x = match solve(&matrix, n, &given, cols, transpose) {
                    Some(x) => x,
                    None if strict => return Err(singular_in("solve")),
                    None => vec![f64::NAN; n * cols],
                };
                for (o, r) in out[b * per..(b + 1) * per].iter_mut().zip(&x) {
                    *o = T::from_f64(*r);
                }
            }
        }
    }
    Ok(T::into_buffer(out))
}

/// `op(a)·x = b` for `a [n, n]` and `b [n, cols]` by Gaussian elimination with partial
/// pivoting (the first largest entry of a column is its pivot); `None` at a zero pivot.
fn solve(a: &[f64], n: usize, b: &[f64], cols: usize, transpose: bool) -> Option<Vec<f64>> {
    let mut m = if transpose {
        transposed(a, n, n)
    } else {
        a.to_vec()
    };
    let mut x = b.to_vec();
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if m[i * n + j].abs() > m[p * n + j].abs() {
                p = i;
            }
        }
        if m[p * n + j] == 0.0 {
            return None;
        }
        if p != j {
            for c in 0..n {
                m.swap(p * n + c, j * n + c);
            }
            for c in 0..cols {
                x.swap(p * cols + c, j * cols + c);
            }
        }
        for i in j + 1..n {
            let f = m[i * n + j] / m[j * n + j];
            for c in j..n {
                m[i * n + c] -= f * m[j * n + c];
            }
            for c in 0..cols {
                x[i * cols + c] -= f * x[j * cols + c];
            }
        }
    }
    for i in (0..n).rev() {
        for c in 0..cols {
            let s: f64 = (i + 1..n).map(|k| m[i * n + k] * x[k * cols + c]).sum();
            x[i * cols + c] = (x[i * cols + c] - s) / m[i * n + i];
        }
    }
    Some(x)
}

/// One matrix `a [m, n]` factorised into `out` (the parts of [`LinAlg::parts`], in order).
fn factor(kind: Factorization, m: usize, n: usize, a: &[f64], out: &mut [f64]) {
    // The Jacobi iterations stop on a non-finite off-diagonal sum and would return the
    // untouched diagonal: a matrix holding NaN or an infinity has no eigen- or singular values.
    let unreadable = match kind {
        // eigh reads the lower triangle only.
        Factorization::Eigh => (0..n).any(|i| (0..=i).any(|j| !a[i * n + j].is_finite())),
        Factorization::Svd { .. } => a.iter().any(|x| !x.is_finite()),
        _ => false,
    };
    if unreadable {
        out.fill(f64::NAN);
        return;
    }
    match kind {
        Factorization::Cholesky => cholesky(a, n, out),
        Factorization::Lu => lu::lu(a, n, out, f64::abs),
        Factorization::Qr { complete } => householder::qr(a, m, n, complete, out),
        Factorization::Eigh => eigh(a, n, out),
        Factorization::Svd { full } => svd(a, m, n, full, out),
    }
}

fn cholesky(a: &[f64], n: usize, l: &mut [f64]) {
    l.fill(0.0);
    for j in 0..n {
        let s = a[j * n + j] - (0..j).map(|k| l[j * n + k] * l[j * n + k]).sum::<f64>();
        if s.is_nan() || s <= 0.0 {
            l.fill(f64::NAN);
            return;
        }
        let d = s.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let s = a[i * n + j] - (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum::<f64>();
            l[i * n + j] = s / d;
        }
    }
}

/// The symmetric matrix whose lower triangle is `a`'s.
fn symmetric_from_lower(a: &[f64], n: usize) -> Vec<f64> {
    let mut s = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            s[i * n + j] = a[i * n + j];
            s[j * n + i] = a[i * n + j];
        }
    }
    s
}

fn eigh(a: &[f64], n: usize, out: &mut [f64]) {
    let mut s = symmetric_from_lower(a, n);
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    let total: f64 = s.iter().map(|x| x * x).sum();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..i).map(move |j| (i, j)))
            .map(|(i, j)| s[i * n + j] * s[i * n + j])
            .sum();
        if off <= total * 1e-32 || !off.is_finite() {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q];
                if apq == 0.0 {
                    continue;
                }
                let t = rotation_tangent((s[q * n + q] - s[p * n + p]) / (2.0 * apq));
                let c = 1.0 / (t * t + 1.0).sqrt();
                let sn = t * c;
                for k in 0..n {
                    let (x, y) = (s[k * n + p], s[k * n + q]);
                    s[k * n + p] = c * x - sn * y;
                    s[k * n + q] = sn * x + c * y;
                }
                for k in 0..n {
                    let (x, y) = (s[p * n + k], s[q * n + k]);
                    s[p * n + k] = c * x - sn * y;
                    s[q * n + k] = sn * x + c * y;
                }
                for k in 0..n {
                    let (x, y) = (v[k * n + p], v[k * n + q]);
                    v[k * n + p] = c * x - sn * y;
                    v[k * n + q] = sn * x + c * y;
                }
            }
        }
    }
    let mut w: Vec<f64> = (0..n).map(|i| s[i * n + i]).collect();
    eigh_order(&mut w, &mut v, n);
    out[..n].copy_from_slice(&w);
    out[n..].copy_from_slice(&v);
}

/// The SVD of a tall matrix `a [m, n]` (`m >= n`) by one-sided Jacobi: `u [m, uc]`
/// (orthonormal, completed past the non-zero singular values), `s [n]` largest first,
/// `v [n, n]` (right singular vectors as columns).
fn svd_tall(a: &[f64], m: usize, n: usize, uc: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut w = a.to_vec();
    let mut v = vec![0.0; n * n];
    for i in 0..n {
        v[i * n + i] = 1.0;
    }
    for _sweep in 0..100 {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for i in 0..m {
                    let (x, y) = (w[i * n + p], w[i * n + q]);
                    alpha += x * x;
                    beta += y * y;
                    gamma += x * y;
                }
                if gamma == 0.0 || gamma.abs() <= 1e-16 * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let t = rotation_tangent((beta - alpha) / (2.0 * gamma));
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for i in 0..m {
                    let (x, y) = (w[i * n + p], w[i * n + q]);
                    w[i * n + p] = c * x - s * y;
                    w[i * n + q] = s * x + c * y;
                }
                for i in 0..n {
                    let (x, y) = (v[i * n + p], v[i * n + q]);
                    v[i * n + p] = c * x - s * y;
                    v[i * n + q] = s * x + c * y;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n)
        .map(|j| (0..m).map(|i| w[i * n + j].powi(2)).sum::<f64>().sqrt())
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let s: Vec<f64> = order.iter().map(|&j| norms[j]).collect();
    let mut u = vec![0.0; m * uc];
    let mut filled = vec![false; uc];
    let largest = s.first().copied().unwrap_or(0.0);
    for (to, &from) in order.iter().enumerate().take(uc) {
        if norms[from] > largest * 1e-300 && norms[from] > 0.0 {
            for i in 0..m {
                u[i * uc + to] = w[i * n + from] / norms[from];
            }
            filled[to] = true;
        }
    }
    complete_columns(&mut u, m, uc, &mut filled);
    let mut v_sorted = vec![0.0; n * n];
    for (to, &from) in order.iter().enumerate() {
        for i in 0..n {
            v_sorted[i * n + to] = v[i * n + from];
        }
    }
    (u, s, v_sorted)
}

/// Fills the columns of `u [m, uc]` not yet `filled` with unit vectors orthogonal to every
/// other column: Gram–Schmidt (twice) of the axis vector that keeps the most of itself.
fn complete_columns(u: &mut [f64], m: usize, uc: usize, filled: &mut [bool]) {
    for slot in 0..uc {
        if filled[slot] {
            continue;
        }
        let mut best: Option<(f64, Vec<f64>)> = None;
        for axis in 0..m {
            let mut x = vec![0.0; m];
            x[axis] = 1.0;
            for _ in 0..2 {
                for c in (0..uc).filter(|&c| filled[c]) {
                    let dot: f64 = (0..m).map(|i| u[i * uc + c] * x[i]).sum();
                    for (i, xi) in x.iter_mut().enumerate() {
                        *xi -= dot * u[i * uc + c];
                    }
                }
            }
            let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
            if best.as_ref().is_none_or(|(b, _)| norm > *b) {
                best = Some((norm, x));
            }
        }
        if let Some((norm, x)) = best.filter(|(norm, _)| *norm > 0.0) {
            for i in 0..m {
                u[i * uc + slot] = x[i] / norm;
            }
            filled[slot] = true;
        }
    }
}

fn transposed(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; a.len()];
    for i in 0..rows {
        for j in 0..cols {
            t[j * rows + i] = a[i * cols + j];
        }
    }
    t
}

fn svd(a: &[f64], m: usize, n: usize, full: bool, out: &mut [f64]) {
    let k = m.min(n);
    let (u, s, vt, uc, vr) = if m >= n {
        let uc = if full { m } else { k };
        let (u, s, v) = svd_tall(a, m, n, uc);
        (u, s, transposed(&v, n, n), uc, n)
    } else {
        // aᵀ = u'·s·v'ᵀ, so a = v'·s·u'ᵀ.
        let vr = if full { n } else { k };
        let (u2, s, v2) = svd_tall(&transposed(a, m, n), n, m, vr);
        (v2, s, transposed(&u2, n, vr), m, vr)
    };
    let (mut u, mut vt) = (u, vt);
    svd_signs(&mut u, &mut vt, [m, uc], [vr, n]);
    out[..m * uc].copy_from_slice(&u);
    out[m * uc..m * uc + k].copy_from_slice(&s[..k]);
    out[m * uc + k..].copy_from_slice(&vt);
}

/// `op(a)·x = b` (or `x·op(a) = b`) for triangular `a [n, n]` and `b [rows, cols]`.
pub(crate) fn triangular_solve(
    a: &[f64],
    n: usize,
    b: &[f64],
    [rows, cols]: [usize; 2],
    left_side: bool,
    lower: bool,
    transpose: bool,
) -> Result<Vec<f64>> {
    // Every case is a left-side solve `t·y = c`: on the right side `x·op(a) = b` is
    // `op(a)ᵀ·xᵀ = bᵀ`: `a` is read transposed when exactly one of the two transposes
    // applies. Each transpose turns a lower triangle into an upper one.
    let flip = transpose == left_side;
    let t_lower = lower != flip;
    let mut t = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let (r, c) = if flip { (j, i) } else { (i, j) };
            let inside = if lower { c <= r } else { c >= r };
            if inside {
                t[i * n + j] = a[r * n + c];
            }
        }
    }
    if (0..n).any(|i| t[i * n + i] == 0.0) {
        return Err(singular());
    }
    let (c, width) = if left_side {
        (b.to_vec(), cols)
    } else {
        (transposed(b, rows, cols), rows)
    };
    let mut y = c;
    let order: Vec<usize> = if t_lower {
        (0..n).collect()
    } else {
        (0..n).rev().collect()
    };
    for &i in &order {
        for col in 0..width {
            let mut s = y[i * width + col];
            let known: Box<dyn Iterator<Item = usize>> = if t_lower {
                Box::new(0..i)
            } else {
                Box::new(i + 1..n)
            };
            for k in known {
                s -= t[i * n + k] * y[k * width + col];
            }
            y[i * width + col] = s / t[i * n + i];
        }
    }
    Ok(if left_side {
        y
    } else {
        transposed(&y, cols, rows)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn product(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn svd_of_wide_and_tall_matrices_rebuilds_them() {
        let a = [3.0, 1.0, 2.0, -1.0, 0.5, 4.0];
        for (m, n) in [(2, 3), (3, 2)] {
            for full in [false, true] {
                let k = m.min(n);
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                let mut out = vec![0.0; m * uc + k + vr * n];
                svd(&a, m, n, full, &mut out);
                let (u, rest) = out.split_at(m * uc);
                let (s, vt) = rest.split_at(k);
                let mut us = vec![0.0; m * vr];
                for i in 0..m {
                    for j in 0..k {
                        us[i * vr + j] = u[i * uc + j] * s[j];
                    }
                }
                assert!(
                    close(&product(&us, vt, m, vr, n), &a),
                    "{m}x{n} full {full}"
                );
            }
        }
    }

    #[test]
    fn right_side_transposed_solve_matches_its_definition() {
        let a = [2.0, 0.0, 0.0, 1.0, 3.0, 0.0, -1.0, 2.0, 4.0];
        let b = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let x = triangular_solve(&a, 3, &b, [2, 3], false, true, true).unwrap_or_default();
        let at = transposed(&a, 3, 3);
        assert!(close(&product(&x, &at, 2, 3, 3), &b));
    }
}
