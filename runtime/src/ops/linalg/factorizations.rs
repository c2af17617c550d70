//! The factorisations: each one [`Op::LinAlg`](crate::ir::Op) over the batch (LAPACK on host,
//! the reference algorithms on binary), its parts cut apart by `super::run_parts`; of complex
//! matrices, `cholesky` and `lu` composed of the op set until complex kernels exist.

use crate::create::on;
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::Factorization;
use crate::ops::reduce::TieBreak;
use crate::session::resolve_device;
use crate::tensor::Tensor;

use super::matrices::{factor, square};

fn two(mut parts: Vec<Tensor>) -> Result<(Tensor, Tensor)> {
    let second = parts.pop();
    let first = parts.pop();
    match (first, second) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err(super::matrices::invalid(
            "linalg",
            "internal: a part is missing".into(),
        )),
    }
}

/// The Cholesky factor of each Hermitian positive-definite complex matrix (`l·lᴴ = a`, `l`'s
/// diagonal real and positive), composed column by column (Cholesky–Crout: column `j` is
/// `(a[:, j] - l[:, :j]·conj(l[j, :j])) / l[j, j]` below the diagonal), so every backend and
/// the gradient take it; `n` steps of a matrix-vector product, written for the notebook sizes
/// complex factorisations come in until a complex kernel exists. Only the lower triangle is
/// read; a matrix that is not positive definite gives NaN, as the real op.
fn complex_cholesky(a: &Tensor) -> Result<Tensor> {
    let (batch, n) = square("cholesky", a)?;
    let device = resolve_device("cholesky", None, &[a])?;
    let place = on(device);
    let rows = place.iota(DType::S64, &[n], None)?;
    let mut columns: Vec<Tensor> = Vec::with_capacity(n);
    for j in 0..n {
        let mut column = a.slice_along_axis(j, 1, -1)?;
        if j > 0 {
            let done = Tensor::stack(&columns, -1)?;
            // conj(l[j, :j]) as a column: the adjoint of row j.
            let row = done.slice_along_axis(j, 1, -2)?;
            column = column.subtract(&done.matmul(&row.adjoint()?)?)?;
        }
        let pivot = column.slice_along_axis(j, 1, -2)?.real()?.sqrt()?;
        let pivot_z = pivot.as_type(a.dtype())?;
        let below = rows.greater(j as i64)?.new_axis(-1)?;
        let at = rows.equal(j as i64)?.new_axis(-1)?;
        let scaled = column.divide(&pivot_z)?;
        let diagonal = pivot_z.broadcast(&[&batch[..], &[n, 1]].concat())?;
        let column = at.select(&diagonal, &below.select(&scaled, 0.0)?)?;
        columns.push(column.squeeze([-1])?);
    }
    if n == 0 {
        return Ok(a.clone());
    }
    Tensor::stack(&columns, -1)
}

/// The LU factorisation of complex matrices and the determinant it gives.
pub(super) struct ComplexLu {
    /// `p·l·u = a`.
    pub p: Tensor,
    pub l: Tensor,
    pub u: Tensor,
    /// The product of the pivots, negated per row swap.
    pub determinant: Tensor,
}

/// The LU factorisation of each complex `[.., n, n]` matrix: Gaussian elimination with partial
/// pivoting written with the op set (each step picks the row of the largest magnitude, swaps
/// it up with its multipliers so far, flipping the determinant's sign, and eliminates below;
/// a zero column is skipped, leaving a zero pivot). Composed until a complex LU kernel exists,
/// so every backend and the gradient take it; `n` steps.
pub(super) fn complex_lu(a: &Tensor) -> Result<ComplexLu> {
    let (batch, n) = square("lu", a)?;
    let device = resolve_device("lu", None, &[a])?;
    let place = on(device);
    let lead = |tail: &[usize]| -> Vec<usize> { [&batch[..], tail].concat() };
    let iota = place.iota(DType::S64, &[n], None)?;
    let rows = iota.broadcast(&lead(&[n]))?;
    let mut u = a.clone();
    let mut multipliers = place.zeros(a.dtype(), &lead(&[n, n]))?;
    let mut order = rows.clone();
    let mut determinant = place.ones(a.dtype(), &batch)?;
    for j in 0..n {
        let column = u.slice_along_axis(j, 1, -1)?.squeeze([-1])?;
        let pivot_row = rows
            .greater_equal(j as i64)?
            .select(&column.abs()?, -1.0)?
            .argmax_with(-1, true, TieBreak::Low, DType::S64)?;
        let swap = rows.equal(j as i64)?.select(
            &pivot_row,
            &rows.equal(&pivot_row)?.select(j as i64, &rows)?,
        )?;
        let swap_rows = swap.new_axis(-1)?.broadcast(u.shape())?;
        u = u.take_along_axis(&swap_rows, -2)?;
        multipliers = multipliers.take_along_axis(&swap_rows, -2)?;
        order = order.take_along_axis(&swap, -1)?;
        let swapped = pivot_row.squeeze([-1])?.not_equal(j as i64)?;
        let pivot = u.slice_along_axis(j, 1, -2)?.slice_along_axis(j, 1, -1)?;
        determinant = determinant
            .multiply(&pivot.reshape(&batch)?)?
            .multiply(&swapped.select(-1.0, 1.0)?)?;
        let safe = pivot.equal(0.0)?.select(1.0, &pivot)?;
        let factors = rows
            .greater(j as i64)?
            .new_axis(-1)?
            .select(&u.slice_along_axis(j, 1, -1)?.divide(&safe)?, 0.0)?;
        u = u.subtract(&factors.multiply(&u.slice_along_axis(j, 1, -2)?)?)?;
        let at_j = iota.equal(j as i64)?.as_type(a.dtype())?;
        multipliers = multipliers.add(&factors.multiply(&at_j)?)?;
    }
    let eye = place.eye(a.dtype(), n)?;
    // Row i of p·(l·u) is row order[i] of a: p[r, i] = 1 where order[i] = r.
    let p = iota
        .new_axis(-1)?
        .equal(&order.new_axis(-2)?)?
        .as_type(a.dtype())?;
    Ok(ComplexLu {
        p,
        l: multipliers.add(&eye)?,
        // Below the diagonal only rounding residue of the eliminations is left.
        u: u.triu(0)?,
        determinant,
    })
}

impl Tensor {
    /// The lower-triangular `l` with `l·lᵀ = self` for each symmetric positive-definite matrix
    /// of the last two axes (`Nx.LinAlg.cholesky`); only the lower triangle is read. A matrix
    /// that is not positive definite gives NaN.
    pub fn cholesky(&self) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return complex_cholesky(self);
        }
        let mut parts = factor(self, Factorization::Cholesky)?;
        parts
            .pop()
            .ok_or_else(|| super::matrices::invalid("cholesky", "internal: no result".into()))
    }

    /// `(q, r)` with `q·r = self`, `q` with orthonormal columns `[.., m, k]` and `r` upper
    /// triangular `[.., k, n]` (`k = min(m, n)`), as `Nx.LinAlg.qr(t)` (mode `:reduced`):
    /// Householder reflections, `r`'s diagonal non-negative where one was applied, entries
    /// within 1e-10 of 0 set to 0 (Nx's `eps`).
    pub fn qr(&self) -> Result<(Tensor, Tensor)> {
        self.qr_in(false)
    }

    /// [`Tensor::qr`] with a square `q` `[.., m, m]` and `r` `[.., m, n]` (Nx's
    /// `mode: :complete`).
    pub fn qr_complete(&self) -> Result<(Tensor, Tensor)> {
        self.qr_in(true)
    }

    fn qr_in(&self, complete: bool) -> Result<(Tensor, Tensor)> {
        two(factor(self, Factorization::Qr { complete })?)
    }

    /// `(p, l, u)` with `p·l·u = self` for each square matrix (`Nx.LinAlg.lu`): partial
    /// pivoting, `l` unit lower triangular, `u` upper triangular, `p` a permutation matrix in
    /// this tensor's dtype.
    pub fn lu(&self) -> Result<(Tensor, Tensor, Tensor)> {
        if self.dtype().is_complex() {
            let ComplexLu { p, l, u, .. } = complex_lu(self)?;
            return Ok((p, l, u));
        }
        let mut parts = factor(self, Factorization::Lu)?;
        parts.truncate(3);
        let (l, u) = (parts.remove(1), parts.remove(1));
        let p = parts.remove(0).as_type(self.dtype())?;
        Ok((p, l, u))
    }

    /// `(eigenvalues, eigenvectors)` of each symmetric matrix (`Nx.LinAlg.eigh`; its lower
    /// triangle is read): `self = v·diag(w)·vᵀ`, eigenvalues by magnitude, largest first, as
    /// Nx orders them, eigenvectors the columns of `v`, each with its largest entry positive.
    pub fn eigh(&self) -> Result<(Tensor, Tensor)> {
        two(factor(self, Factorization::Eigh)?)
    }

    /// `(u, s, vt)` with `u·diag(s)·vt = self` (`Nx.LinAlg.svd`, `full_matrices?: true`): `u`
    /// `[.., m, m]`, `s` `[.., k]` largest first, `vt` `[.., n, n]`; each row of `vt` with its
    /// largest entry positive.
    pub fn svd(&self) -> Result<(Tensor, Tensor, Tensor)> {
        self.svd_in(true)
    }

    /// [`Tensor::svd`] with `u` `[.., m, k]` and `vt` `[.., k, n]` (`full_matrices?: false`).
    pub fn svd_reduced(&self) -> Result<(Tensor, Tensor, Tensor)> {
        self.svd_in(false)
    }

    fn svd_in(&self, full: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let mut parts = factor(self, Factorization::Svd { full })?;
        if parts.len() != 3 {
            return Err(super::matrices::invalid(
                "svd",
                "internal: a part is missing".into(),
            ));
        }
        let vt = parts.remove(2);
        let s = parts.remove(1);
        Ok((parts.remove(0), s, vt))
    }
}
