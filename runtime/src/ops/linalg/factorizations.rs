//! The factorisations: each one [`Op::LinAlg`](crate::ir::Op) over the batch (LAPACK on host,
//! the reference algorithms on binary), its parts cut apart by `super::run_parts`; complex
//! matrices through the same ops (LAPACK's complex routines, the complex references), but for
//! the SVD, which Nx refuses them.

use crate::error::Result;
use crate::ir::Factorization;
use crate::tensor::Tensor;

use super::matrices::factor;

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

impl Tensor {
    /// The lower-triangular `l` with `l·lᵀ = self` for each symmetric positive-definite matrix
    /// of the last two axes (`Nx.LinAlg.cholesky`); only the lower triangle is read. A matrix
    /// that is not positive definite gives NaN.
    pub fn cholesky(&self) -> Result<Tensor> {
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
