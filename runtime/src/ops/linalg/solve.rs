//! Solvers: `triangular_solve` and `solve` (each one [`Op::LinAlg`](crate::ir::Op) of every
//! backend: LAPACK's `?trsm` and `?getrf`/`?getrs` on host), and composed as Nx composes them
//! `invert` (solve against the identity), `determinant` (closed forms to 3×3, the LU's
//! diagonal beyond, complex matrices' too), `pinv` and
//! `least_squares` (SVD) and `matrix_rank`. Complex systems are solved as real ones twice the
//! size (`matrices::real_embedding`).

use crate::create::on;
use crate::dtype::DType;
use crate::error::Result;
use crate::ir::{Factorization, LinAlg};
use crate::session::resolve_device;
use crate::shape::numel;
use crate::tensor::Tensor;

use super::matrices::{
    factor, floating, from_stacked_parts, invalid, matrices, real_embedding, run_parts, square,
    stacked_parts,
};

/// The options of [`Tensor::triangular_solve`] (Nx's `lower`, `left_side`, `transform_a`):
/// `TriangularSolve::new()` is Nx's default (lower, left side, `a` as it is).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TriangularSolve {
    lower: bool,
    left_side: bool,
    transpose: bool,
}

impl Default for TriangularSolve {
    fn default() -> Self {
        TriangularSolve {
            lower: true,
            left_side: true,
            transpose: false,
        }
    }
}

impl TriangularSolve {
    /// Lower triangular, `a·x = b`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `a` is lower (`true`, the default) or upper triangular; only that triangle is
    /// read.
    pub fn lower(mut self, lower: bool) -> Self {
        self.lower = lower;
        self
    }

    /// Solve `a·x = b` (`true`, the default) or `x·a = b`.
    pub fn left_side(mut self, left_side: bool) -> Self {
        self.left_side = left_side;
        self
    }

    /// Use `aᵀ` for `a` (Nx's `transform_a: :transpose`).
    pub fn transpose(mut self, transpose: bool) -> Self {
        self.transpose = transpose;
        self
    }
}

/// `b` seen as a batch of matrices for a solve with `n`×`n` matrices batched as `batch`:
/// `[.., n]` is one column (one row on the right side). `None` when the shapes do not fit.
fn as_systems(batch: &[usize], n: usize, b: &[usize], left_side: bool) -> Option<[usize; 2]> {
    match b {
        [lead @ .., last] if lead == batch && *last == n => {
            Some(if left_side { [n, 1] } else { [1, n] })
        }
        [lead @ .., rows, cols] if lead == batch => {
            let fits = if left_side { *rows == n } else { *cols == n };
            fits.then_some([*rows, *cols])
        }
        _ => None,
    }
}

/// `triangular_solve` of complex `a` (`[.., n, n]`) and `b` (as [`as_systems`] reads it):
/// the triangle `options` names, turned as they say, solved through [`real_embedding`]. A zero
/// on the diagonal makes the system singular, which `solve` reports as the real op does.
fn complex_triangular_solve(
    a: &Tensor,
    b: &Tensor,
    batch: &[usize],
    [rows, cols]: [usize; 2],
    options: TriangularSolve,
) -> Result<Tensor> {
    let triangle = if options.lower {
        a.tril(0)?
    } else {
        a.triu(0)?
    };
    let last_two = |t: &Tensor| -> Result<Tensor> {
        let r = t.rank() as isize;
        let mut order: Vec<isize> = (0..r).collect();
        order.swap((r - 2) as usize, (r - 1) as usize);
        t.transpose(order)
    };
    let op_a = if options.transpose {
        last_two(&triangle)?
    } else {
        triangle
    };
    let systems = b.reshape(&[batch, &[rows, cols]].concat())?;
    let x = if options.left_side {
        op_a.solve(&systems)?
    } else {
        // x·A = b is Aᵀ·xᵀ = bᵀ.
        last_two(&last_two(&op_a)?.solve(&last_two(&systems)?)?)?
    };
    x.reshape(b.shape())
}

impl Tensor {
    /// `x` with `a·x = b` for this lower-triangular `a` (`Nx.LinAlg.triangular_solve(a, b)`),
    /// or as `options` say: upper triangular, `x·a = b`, `aᵀ` for `a`. `b` is `[.., n]` (one
    /// system) or `[.., n, m]` (`[.., m, n]` on the right side), with `a`'s batch axes. A zero
    /// on the diagonal is an error ("can't solve for singular matrix", as Nx's).
    pub fn triangular_solve(&self, b: &Tensor, options: TriangularSolve) -> Result<Tensor> {
        const OP: &str = "triangular_solve";
        let (batch, m, n) = matrices(OP, self)?;
        if m != n {
            return Err(invalid(
                OP,
                format!(
                    "triangular_solve/3 expected a square matrix or a batch of square matrices, got tensor with shape: {:?}",
                    self.shape()
                ),
            ));
        }
        let Some([rows, cols]) = as_systems(&batch, n, b.shape(), options.left_side) else {
            return Err(invalid(
                OP,
                format!(
                    "incompatible dimensions for a and b on triangular solve ({} and {})",
                    self.signature(),
                    b.signature()
                ),
            ));
        };
        let dtype = self.dtype().promote(b.dtype()).to_float();
        let (a, rhs) = (self.as_type(dtype)?, b.as_type(dtype)?);
        if dtype.is_complex() {
            return complex_triangular_solve(&a, &rhs, &batch, [rows, cols], options);
        }
        let op = LinAlg::TriangularSolve {
            batch: numel(&batch),
            n,
            rows,
            cols,
            left_side: options.left_side,
            lower: options.lower,
            transpose: options.transpose,
        };
        let mut parts = run_parts(op, &[&a, &rhs], &batch, &[])?;
        let x = parts
            .pop()
            .ok_or_else(|| invalid(OP, "internal: no result".into()))?;
        x.reshape(b.shape())
    }

    /// `x` with `a·x = b` for this square `a` (`Nx.LinAlg.solve`): `b` is `[.., n]` or
    /// `[.., n, m]`, with `a`'s batch axes. By LU with partial pivoting, as Nx solves; a
    /// singular `a` is an error ("can't solve for singular matrix").
    pub fn solve(&self, b: &Tensor) -> Result<Tensor> {
        self.solve_as(b, true)
    }

    fn solve_as(&self, b: &Tensor, strict: bool) -> Result<Tensor> {
        const OP: &str = "solve";
        let (batch, m, n) = matrices(OP, self)?;
        if m != n {
            return Err(invalid(
                OP,
                format!(
                    "`a` tensor has incompatible dimensions, expected a square matrix or a batch of square matrices, got: {:?}",
                    self.shape()
                ),
            ));
        }
        if as_systems(&batch, n, b.shape(), true).is_none() {
            return Err(invalid(
                OP,
                format!(
                    "`b` tensor has incompatible dimensions, expected {:?} or {:?}, got: {:?}",
                    [&batch[..], &[n, n]].concat(),
                    [&batch[..], &[n]].concat(),
                    b.shape()
                ),
            ));
        }
        let dtype = self.dtype().promote(b.dtype()).to_float();
        let a = self.as_type(dtype)?;
        let column = b.rank() == self.rank() - 1;
        let rhs = if column { b.new_axis(-1)? } else { b.clone() }.as_type(dtype)?;
        if dtype.is_complex() {
            let x = real_embedding(&a)?.solve_as(&stacked_parts(&rhs)?, strict)?;
            return from_stacked_parts(&x, n)?.reshape(b.shape());
        }
        let op = LinAlg::Solve {
            batch: numel(&batch),
            n,
            cols: rhs.shape().last().copied().unwrap_or(1),
            transpose: false,
            strict,
        };
        let mut parts = run_parts(op, &[&a, &rhs], &batch, &[])?;
        let x = parts
            .pop()
            .ok_or_else(|| invalid(OP, "internal: no result".into()))?;
        x.reshape(b.shape())
    }

    /// `op(a)·x = b` for `a [B, n, n]` and `b [B, n, cols]` as they are (the gradient's
    /// solves), a singular `a` an error.
    pub(crate) fn solve_batch(&self, b: &Tensor, transpose: bool) -> Result<Tensor> {
        let (batch, n) = square("solve", self)?;
        let cols = b.shape().last().copied().unwrap_or(1);
        let op = LinAlg::Solve {
            batch: numel(&batch),
            n,
            cols,
            transpose,
            strict: true,
        };
        let mut parts = run_parts(op, &[self, b], &batch, &[])?;
        parts
            .pop()
            .ok_or_else(|| invalid("solve", "internal: no result".into()))
    }

    /// The inverse of each square matrix (`Nx.LinAlg.invert`): `solve` against the identity.
    /// A singular matrix gives NaN, as Nx's.
    pub fn invert(&self) -> Result<Tensor> {
        let (batch, n) = square("invert", self).map_err(|_| {
            invalid(
                "invert",
                format!(
                    "invert/1 expects a square matrix or a batch of square matrices, got tensor with shape: {:?}",
                    self.shape()
                ),
            )
        })?;
        let a = floating(self)?;
        let device = resolve_device("invert", None, &[&a])?;
        let eye = on(device)
            .eye(a.dtype(), n)?
            .broadcast(&[&batch[..], &[n, n]].concat())?;
        a.solve_as(&eye, false)
    }

    /// The determinant of each square matrix (`Nx.LinAlg.determinant`): the closed formulas
    /// for 2×2 and 3×3, as Nx, otherwise the product of the LU's diagonal with the
    /// permutation's sign.
    pub fn determinant(&self) -> Result<Tensor> {
        let (batch, n) = square("determinant", self)?;
        let a = floating(self)?;
        let at = |i: usize, j: usize| -> Result<Tensor> {
            a.slice_along_axis(i, 1, -2)?
                .slice_along_axis(j, 1, -1)?
                .reshape(&batch)
        };
        match n {
            0 => on(resolve_device("determinant", None, &[&a])?).full(1.0, a.dtype(), &batch),
            1 => at(0, 0),
            2 => at(0, 0)?
                .multiply(&at(1, 1)?)?
                .subtract(&at(0, 1)?.multiply(&at(1, 0)?)?),
            3 => {
                let minor = |r: [usize; 2], c: [usize; 2]| -> Result<Tensor> {
                    at(r[0], c[0])?
                        .multiply(&at(r[1], c[1])?)?
                        .subtract(&at(r[0], c[1])?.multiply(&at(r[1], c[0])?)?)
                };
                at(0, 0)?
                    .multiply(&minor([1, 2], [1, 2])?)?
                    .subtract(&at(0, 1)?.multiply(&minor([1, 2], [0, 2])?)?)?
                    .add(&at(0, 2)?.multiply(&minor([1, 2], [0, 1])?)?)
            }
            _ => {
                let mut parts = factor(&a, Factorization::Lu)?;
                let sign = parts.remove(3).reshape(&batch)?;
                let u = parts.remove(2);
                u.take_diagonal(0)?.product(-1)?.multiply(&sign)
            }
        }
    }

    /// The Moore–Penrose pseudo-inverse (`Nx.LinAlg.pinv`, `eps` 1e-10 as Nx's default):
    /// `1/x` of a scalar, `xᵀ/‖x‖²` of a vector, `v·diag(1/s)·uᵀ` of a matrix (singular
    /// values below `eps` dropped); all zeros give zeros.
    pub fn pinv(&self) -> Result<Tensor> {
        self.pinv_with(1e-10)
    }

    /// [`Tensor::pinv`] with Nx's `eps`.
    pub fn pinv_with(&self, eps: f64) -> Result<Tensor> {
        let a = floating(self)?;
        let zero = a.abs()?.less_equal(eps)?.all(..)?;
        let inverse = match a.rank() {
            0 => (1.0 / &a.equal(0.0)?.select(1.0, &a)?)?,
            1 => a.divide(&a.norm()?.square()?)?,
            _ => {
                let (u, s, vt) = a.svd_reduced()?;
                let small = s.abs()?.less(eps)?;
                let s_inv = small.select(0.0, &(1.0 / &small.select(1.0, &s)?)?)?;
                let sut = s_inv.new_axis(-1)?.multiply(&u.adjoint()?)?;
                let batch: Vec<isize> = (0..a.rank() as isize - 2).collect();
                vt.adjoint()?
                    .dot_general(&[-1], &batch, &sut, &[-2], &batch)?
            }
        };
        zero.select(0.0, &inverse)
    }

    /// The least-squares solution `x` of `a·x ≈ b` (`Nx.LinAlg.least_squares`, `eps` 1e-15):
    /// `pinv(a)·b`, for a matrix `a` and a vector `b`.
    pub fn least_squares(&self, b: &Tensor) -> Result<Tensor> {
        const OP: &str = "least_squares";
        if self.rank() != 2 {
            return Err(invalid(
                OP,
                format!(
                    "tensor of 1st argument must have rank 2, got rank {} with shape {:?}",
                    self.rank(),
                    self.shape()
                ),
            ));
        }
        if b.rank() != 1 {
            return Err(invalid(
                OP,
                format!(
                    "tensor of 2nd argument must have rank 1, got rank {} with shape {:?}",
                    b.rank(),
                    b.shape()
                ),
            ));
        }
        if self.shape()[0] != b.shape()[0] {
            return Err(invalid(
                OP,
                format!(
                    "the number of rows of the matrix as the 1st argument and the number of columns of the vector as the 2nd argument must be the same, got 1st argument shape {:?} and 2nd argument shape {:?}",
                    self.shape(),
                    b.shape()
                ),
            ));
        }
        if self.dtype().is_complex() {
            return Err(invalid(
                OP,
                "Nx.LinAlg.least_squares/2 is not yet implemented for complex inputs".into(),
            ));
        }
        self.pinv_with(1e-15)?.dot(b)
    }

    /// The number of singular values above `1e-7 · max(m, n) · the largest`
    /// (`Nx.LinAlg.matrix_rank`), as u32, of a matrix.
    pub fn matrix_rank(&self) -> Result<Tensor> {
        self.matrix_rank_with(1e-7)
    }

    /// [`Tensor::matrix_rank`] with Nx's `eps`.
    pub fn matrix_rank_with(&self, eps: f64) -> Result<Tensor> {
        if self.rank() != 2 {
            return Err(invalid(
                "matrix_rank",
                format!(
                    "tensor must have rank 2, got rank {} with shape {:?}",
                    self.rank(),
                    self.shape()
                ),
            ));
        }
        if self.dtype().is_complex() {
            return Err(invalid(
                "matrix_rank",
                "Nx.LinAlg.matrix_rank/2 is not yet implemented for complex inputs".into(),
            ));
        }
        let (_, s, _) = self.svd_reduced()?;
        let largest = self.shape().iter().copied().max().unwrap_or(0) as f64;
        let tolerance = s.reduce_max(..)?.multiply(eps * largest)?;
        s.greater(&tolerance)?.sum(..)?.as_type(DType::U32)
    }
}
