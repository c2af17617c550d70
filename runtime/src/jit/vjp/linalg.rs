//! The gradients of the factorisations and the triangular solve, written with the op set
//! (triangular solves and batched products), as Nx and JAX write them: the triangular solve
//! and the solve by solving with the transpose; Cholesky by Murray's formula (Nx's `cholesky_grad`); QR by
//! Walter and Lehmann's (arXiv 2009.10071, eq. 3 and proposition 2, Nx's `qr_grad`); eigh by
//! Giles' (Nx's `eigh_grad`, distinct eigenvalues); LU by `P·L⁻ᵀ·(tril₋₁(Lᵀ·L̄) +
//! triu(Ū·Uᵀ))·U⁻ᵀ` (square matrices). Cholesky and eigh read the lower triangle only, so the
//! gradient of the symmetric matrix lands on it: entries below the diagonal twice the
//! symmetric part, none above. The SVD by Townsend's ("Differentiating the singular value
//! decomposition", 2016; distinct singular values): the columns of a full SVD's `u` and rows
//! of its `vt` past the k-th span a null space in no particular basis and carry no gradient.
//! Complex `cholesky`, `lu`, `qr` and `eigh` take the same rules with conjugate transposes (the
//! cotangents conjugated in and out), plus what their conventions add: QR's diagonal term keeps only its
//! real part (r's diagonal is real), and each eigenvector's phase (its largest entry real)
//! moves with the matrix (`eigenvector_phase`).

use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Factorization, LinAlg};
use crate::ops::linalg::TriangularSolve;
use crate::tensor::Tensor;

use super::site::Site;

/// `a·b` for `[B, .., ..]` batches.
fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    a.dot_general(&[2], &[0], b, &[1], &[0])
}

/// The conjugate transpose of each matrix of a `[B, .., ..]` batch (for real matrices the
/// transpose).
fn t(a: &Tensor) -> Result<Tensor> {
    let transposed = a.transpose([0, 2, 1])?;
    match a.dtype().is_complex() {
        true => transposed.conjugate(),
        false => Ok(transposed),
    }
}

/// `a` conjugated where complex.
fn conj(a: &Tensor) -> Result<Tensor> {
    match a.dtype().is_complex() {
        true => a.conjugate(),
        false => Ok(a.clone()),
    }
}

/// The parts of a `[B, per]` result (or its gradient), each `[B, rows, cols]`.
fn parts(op: &LinAlg, x: &Tensor) -> Result<Vec<Tensor>> {
    let b = op.batch();
    let mut at = 0;
    let mut out = Vec::new();
    for [rows, cols] in op.parts() {
        let len = rows.saturating_mul(cols);
        out.push(x.slice_along_axis(at, len, 1)?.reshape(&[b, rows, cols])?);
        at = at.saturating_add(len);
    }
    Ok(out)
}

/// The gradient of a function that reads only the lower triangle of a symmetric matrix,
/// given the gradient `s` with respect to the whole symmetric matrix.
fn onto_lower(s: &Tensor) -> Result<Tensor> {
    let sym = s.add(&t(s)?)?.multiply(0.5)?;
    sym.tril(-1)?.multiply(2.0)?.add(&sym.triu(0)?.tril(0)?)
}

pub(super) fn linalg(op: &LinAlg, site: &Site<'_>, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let result = parts(op, site.result)?;
    let grads = parts(op, g)?;
    match *op {
        LinAlg::TriangularSolve {
            batch,
            n,
            rows,
            cols,
            left_side,
            lower,
            transpose,
            ..
        } => {
            let a = site.input(0)?.reshape(&[batch, n, n])?;
            let (x, gx) = (&result[0], &grads[0]);
            let back = TriangularSolve::new()
                .lower(lower)
                .left_side(left_side)
                .transpose(!transpose);
            let gb = a.triangular_solve(gx, back)?;
            // The gradient with respect to op(a), then to a, on a's triangle.
            let g_op = if left_side {
                mm(&gb, &t(x)?)?
            } else {
                mm(&t(x)?, &gb)?
            }
            .negate()?;
            let ga = if transpose { t(&g_op)? } else { g_op };
            let ga = if lower { ga.tril(0)? } else { ga.triu(0)? };
            let gb = if site.wants(1) {
                Some(gb.reshape(&[batch, rows, cols])?)
            } else {
                None
            };
            Ok(vec![Some(ga), gb])
        }
        LinAlg::Solve {
            batch,
            n,
            cols,
            transpose,
            ..
        } => {
            let a = site.input(0)?.reshape(&[batch, n, n])?;
            let (x, gx) = (&result[0], &grads[0]);
            let gb = a.solve_batch(gx, !transpose)?;
            let ga = if transpose {
                mm(x, &t(&gb)?)?
            } else {
                mm(&gb, &t(x)?)?
            }
            .negate()?;
            let gb = if site.wants(1) {
                Some(gb.reshape(&[batch, n, cols])?)
            } else {
                None
            };
            Ok(vec![Some(ga), gb])
        }
        LinAlg::Factor { kind, .. } => {
            // The rules below are the complex ones with conjugate transposes, written for
            // cotangents that are conjugate to this crate's (and JAX's, Nx's) `∂L/∂x - i∂L/∂y`:
            // conjugated in, then out. For real matrices both are no-ops. Complex matrices
            // are refused by the SVD.
            let grads: Vec<Tensor> = grads.iter().map(conj).collect::<Result<_>>()?;
            let grad = match kind {
                Factorization::Cholesky => cholesky(&result[0], &grads[0])?,
                Factorization::Eigh => eigh(&result[0], &result[1], &grads[0], &grads[1])?,
                Factorization::Qr { .. } => qr(&result[0], &result[1], &grads[0], &grads[1])?,
                Factorization::Lu => lu(&result[0], &result[1], &result[2], &grads[1], &grads[2])?,
                Factorization::Svd { .. } => svd(
                    [&result[0], &result[1], &result[2]],
                    [&grads[0], &grads[1], &grads[2]],
                )?,
            };
            Ok(vec![Some(conj(&grad)?)])
        }
    }
}

fn cholesky(l: &Tensor, gl: &Tensor) -> Result<Tensor> {
    let n = l.shape()[1];
    let eye = crate::create::on(l.device()).eye(l.dtype(), n)?;
    let phi = mm(&t(l)?, &gl.tril(0)?)?.divide(&eye.add(1.0)?)?.tril(0)?;
    let lower = TriangularSolve::new();
    // l⁻ᴴ·phi: the transposed solve with conj(l).
    let s = conj(l)?.triangular_solve(&phi, lower.transpose(true))?;
    let s = l.triangular_solve(&s, lower.left_side(false))?;
    onto_lower(&s)
}

fn eigh(w: &Tensor, v: &Tensor, gw: &Tensor, gv: &Tensor) -> Result<Tensor> {
    let n = v.shape()[1];
    let eye = crate::create::on(v.device()).eye(v.dtype(), n)?;
    let (gw, gv) = match v.dtype().is_complex() {
        // The eigenvalues are real: only the real part of their cotangent moves anything.
        true => (
            gw.real()?.as_type(v.dtype())?,
            gv.add(&eigenvector_phase(v, gv)?)?,
        ),
        false => (gw.clone(), gv.clone()),
    };
    let (gw, gv) = (&gw, &gv);
    // w is [B, 1, n]: f[i][j] = 1 / (w_j - w_i) off the diagonal, 0 on it.
    let f = (1.0 / &eye.add(w)?.subtract(&t(w)?)?)?.subtract(&eye)?;
    let middle = t(gw)?.multiply(&eye)?.add(&f.multiply(&mm(&t(v)?, gv)?)?)?;
    let s = mm(&mm(v, &middle)?, &t(v)?)?;
    onto_lower(&s)
}

/// The part of a complex eigenvector's cotangent that its phase convention adds. Each column
/// `j` of `v` is turned so that its largest entry (row `k`) is real and positive, so a change
/// `dv` of the unturned vectors (Giles' rule, where `vᴴ·dv` has a zero diagonal) comes with the
/// turn `i·φ_j·v_j`, `φ_j = -Im(dv_kj)/v_kj`, that keeps that entry real; carried back, that
/// is `i·Im(Σ_l conj(ḡ_lj)·v_lj)/v_kj` added to the cotangent at `[k, j]`.
fn eigenvector_phase(v: &Tensor, gv: &Tensor) -> Result<Tensor> {
    let dtype = v.dtype();
    let largest = v.abs()?.argmax_keep(1)?;
    let rows = crate::create::on(v.device()).iota(DType::S32, v.shape(), Some(1))?;
    let at_largest = rows.equal(&largest)?.as_type(dtype)?;
    let size = at_largest.multiply(v)?.sum_keep(1)?.real()?;
    let beta = gv
        .conjugate()?
        .multiply(v)?
        .sum_keep(1)?
        .imag()?
        .divide(&size)?;
    let turn = beta.multiply(0.0)?.complex(&beta)?;
    at_largest.multiply(&turn)
}

fn qr(q: &Tensor, r: &Tensor, gq: &Tensor, gr: &Tensor) -> Result<Tensor> {
    let (m, n) = (q.shape()[1], r.shape()[2]);
    if m < n {
        // a = q·[u | v]: u square, v the columns past m.
        let (u, gu) = (r.slice_along_axis(0, m, 2)?, gr.slice_along_axis(0, m, 2)?);
        let (v, gv) = (
            r.slice_along_axis(m, n - m, 2)?,
            gr.slice_along_axis(m, n - m, 2)?,
        );
        let y = mm(q, &v)?;
        let gq = gq.add(&mm(&y, &t(&gv)?)?)?;
        let gx = qr_square(q, &u, &gq, &gu)?;
        let gy = mm(q, &gv)?;
        return Tensor::concatenate(&[gx, gy], 2);
    }
    qr_square(q, r, gq, gr)
}

fn qr_square(q: &Tensor, r: &Tensor, gq: &Tensor, gr: &Tensor) -> Result<Tensor> {
    let n = r.shape()[2];
    let r_square = r.slice_along_axis(0, n, 1)?;
    let mut m = mm(r, &t(gr)?)?.subtract(&mm(&t(gq)?, q)?)?;
    // copyltu: the lower triangle mirrored above. Of a complex m, only the diagonal's real
    // part: r's diagonal is held real, so qᴴ·dq has an imaginary diagonal, which takes the
    // imaginary part.
    let diagonal = m.triu(0)?.tril(0)?;
    let diagonal = match m.dtype().is_complex() {
        true => diagonal.real()?.as_type(m.dtype())?,
        false => diagonal,
    };
    m = m.tril(-1)?.add(&t(&m.tril(-1)?)?)?.add(&diagonal)?;
    let b = gq.add(&mm(q, &m)?)?.slice_along_axis(0, n, 2)?;
    // b·r⁻ᴴ: x·rᴴ = b with r upper triangular.
    conj(&r_square)?.triangular_solve(
        &b,
        TriangularSolve::new()
            .lower(false)
            .left_side(false)
            .transpose(true),
    )
}

fn lu(p: &Tensor, l: &Tensor, u: &Tensor, gl: &Tensor, gu: &Tensor) -> Result<Tensor> {
    let inner = mm(&t(l)?, gl)?.tril(-1)?.add(&mm(gu, &t(u)?)?.triu(0)?)?;
    let lower = TriangularSolve::new();
    // l⁻ᴴ·inner·u⁻ᴴ.
    let x = conj(l)?.triangular_solve(&inner, lower.transpose(true))?;
    let x = conj(u)?.triangular_solve(&x, lower.lower(false).left_side(false).transpose(true))?;
    mm(p, &x)
}

fn svd(result: [&Tensor; 3], grads: [&Tensor; 3]) -> Result<Tensor> {
    let [u, s, vt] = result;
    let [gu, gs, gvt] = grads;
    let k = s.shape()[2];
    let (u, gu) = (u.slice_along_axis(0, k, 2)?, gu.slice_along_axis(0, k, 2)?);
    let (vt, gvt) = (
        vt.slice_along_axis(0, k, 1)?,
        gvt.slice_along_axis(0, k, 1)?,
    );
    let (v, gv) = (t(&vt)?, t(&gvt)?);
    let eye = crate::create::on(s.device()).eye(s.dtype(), k)?;
    // s is [B, 1, k] (a row); its transpose a column.
    let (s_row, s_col) = (s.clone(), t(s)?);
    let s2 = s.square()?;
    // f[i][j] = 1 / (s_j² - s_i²) off the diagonal, 0 on it.
    let f = (1.0 / &eye.add(&s2)?.subtract(&t(&s2)?)?)?.subtract(&eye)?;
    let utgu = mm(&t(&u)?, &gu)?;
    let vtgv = mm(&t(&v)?, &gv)?;
    let j = f.multiply(&utgu.subtract(&t(&utgu)?)?)?;
    let kk = f.multiply(&vtgv.subtract(&t(&vtgv)?)?)?;
    let middle = j
        .multiply(&s_row)?
        .add(&s_col.multiply(&kk)?)?
        .add(&eye.multiply(&t(gs)?)?)?;
    let inside = mm(&mm(&u, &middle)?, &vt)?;
    // What leaves the span of u (tall) and of v (wide).
    let off_u = gu.subtract(&mm(&u, &utgu)?)?.divide(&s_row)?;
    let off_v = gvt.subtract(&mm(&mm(&gvt, &v)?, &vt)?)?.divide(&s_col)?;
    inside.add(&mm(&off_u, &vt)?)?.add(&mm(&u, &off_v)?)
}
