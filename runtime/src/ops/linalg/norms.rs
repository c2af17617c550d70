//! Norms, the adjoint and matrix powers, composed of the op set as Nx composes them (so every
//! backend and the gradient come with them); the nuclear and spectral norms take the SVD.

use crate::create::on;
use crate::error::Result;
use crate::ops::axes::IntoAxes;
use crate::session::resolve_device;
use crate::tensor::Tensor;

use super::matrices::{invalid, square};

/// Which norm [`Tensor::norm_of`] computes (Nx's `:ord`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Norm {
    /// Nx's `ord: nil`: the 2-norm of a vector, the Frobenius norm of a matrix.
    Default,
    /// `ord: p`: `(Σ|x|^p)^(1/p)` of a vector (`0` counts the non-zero entries); of a matrix
    /// `1`/`-1` the largest/smallest column sum of `|x|`, `2`/`-2` the largest/smallest
    /// singular value.
    P(i32),
    /// `ord: :inf`: the largest `|x|` (matrix: the largest row sum of `|x|`).
    Inf,
    /// `ord: :neg_inf`: the smallest `|x|` (matrix: the smallest row sum).
    NegInf,
    /// `ord: :frobenius` (matrices).
    Frobenius,
    /// `ord: :nuclear`: the sum of the singular values (matrices).
    Nuclear,
}

impl Tensor {
    /// The 2-norm of a vector, the Frobenius norm of a matrix (`Nx.LinAlg.norm(t)`), as a
    /// float scalar.
    pub fn norm(&self) -> Result<Tensor> {
        self.norm_of(Norm::Default)
    }

    /// `Nx.LinAlg.norm(t, ord: ord)` of a vector or matrix.
    pub fn norm_of(&self, ord: Norm) -> Result<Tensor> {
        self.norm_over(ord, None, false)
    }

    /// `Nx.LinAlg.norm(t, ord: ord, axes: axes, keep_axes: keep)`: a vector norm of each line
    /// along `axes` (`ord` `Default`, `P` or the infinities).
    pub fn norm_axes(&self, ord: Norm, axes: impl IntoAxes, keep: bool) -> Result<Tensor> {
        let axes = self.axis_positions("norm", axes)?;
        self.norm_over(ord, axes.as_deref(), keep)
    }

    fn norm_over(&self, ord: Norm, axes: Option<&[isize]>, keep: bool) -> Result<Tensor> {
        const OP: &str = "norm";
        let rank = self.rank();
        if rank != 1 && rank != 2 {
            return Err(invalid(
                OP,
                format!(
                    "expected 1-D or 2-D tensor, got tensor with shape {:?}",
                    self.shape()
                ),
            ));
        }
        // A norm is real: of a complex tensor, in its parts' type (Nx).
        let out = self.dtype().to_float().to_real();
        let abs = self.abs()?;
        let matrix = rank == 2 && axes.is_none();
        let result = match ord {
            Norm::Default => self.p_norm(2, axes, keep)?,
            Norm::Frobenius if rank == 2 => self.p_norm(2, axes, keep)?,
            Norm::Frobenius => {
                return Err(invalid(
                    OP,
                    "expected a 2-D tensor for ord: :frobenius, got a 1-D tensor".into(),
                ))
            }
            Norm::Nuclear if rank == 2 => self.svd_reduced()?.1.sum(..)?,
            Norm::Nuclear => {
                return Err(invalid(
                    OP,
                    "nuclear norm not supported for rank != 2".into(),
                ))
            }
            Norm::Inf | Norm::NegInf => {
                let lines = if matrix { abs.sum(1)? } else { abs };
                let over = if matrix { None } else { axes };
                if ord == Norm::Inf {
                    lines.reduce_max_over(over, keep)?
                } else {
                    lines.reduce_min_over(over, keep)?
                }
            }
            Norm::P(p @ (1 | -1)) if matrix => {
                let columns = abs.sum(0)?;
                if p == 1 {
                    columns.reduce_max(..)?
                } else {
                    columns.reduce_min(..)?
                }
            }
            Norm::P(p @ (2 | -2)) if matrix => {
                let s = self.svd_reduced()?.1;
                if p == 2 {
                    s.reduce_max(..)?
                } else {
                    s.reduce_min(..)?
                }
            }
            Norm::P(p) if matrix => {
                return Err(invalid(
                    OP,
                    format!("invalid :ord for 2-D tensor, got: {p}"),
                ))
            }
            Norm::P(0) => self.not_equal(0)?.sum_over(axes, keep)?,
            Norm::P(p) => self.p_norm(p, axes, keep)?,
        };
        result.as_type(out)
    }

    /// `(Σ(|x|/c)^p)^(1/p)·c` with `c` the largest `|x|` (1 where that is 0), as Nx scales it
    /// against overflow.
    fn p_norm(&self, p: i32, axes: Option<&[isize]>, keep: bool) -> Result<Tensor> {
        let abs = self.abs()?.as_type(self.dtype().to_float().to_real())?;
        let largest = abs.reduce_max_over(axes, true)?;
        let scale = largest.greater(0.0)?.select(&largest, 1.0)?;
        let sum = abs
            .divide(&scale)?
            .pow(f64::from(p))?
            .sum_over(axes, true)?
            .pow(1.0 / f64::from(p))?
            .multiply(&scale)?;
        if keep {
            Ok(sum)
        } else {
            match axes {
                Some(axes) => sum.squeeze(axes.to_vec()),
                None => sum.reshape(&[]),
            }
        }
    }

    /// The conjugate transpose of the last two axes (`Nx.LinAlg.adjoint`); for real tensors
    /// the transpose. Below rank 2, the tensor itself.
    pub fn adjoint(&self) -> Result<Tensor> {
        let rank = self.rank();
        if rank < 2 {
            return Ok(self.clone());
        }
        let mut order: Vec<isize> = (0..rank as isize).collect();
        order.swap(rank - 2, rank - 1);
        let turned = self.transpose(order)?;
        if self.dtype().is_complex() {
            turned.conjugate()
        } else {
            Ok(turned)
        }
    }

    /// Each square matrix to the integer `power` by repeated squaring
    /// (`Nx.LinAlg.matrix_power`): `0` is the identity (in this tensor's dtype), a negative
    /// power inverts first.
    pub fn matrix_power(&self, power: i64) -> Result<Tensor> {
        let (batch, n) = square("matrix_power", self).map_err(|_| {
            invalid(
                "matrix_power",
                format!(
                    "matrix_power/2 expects a square matrix or a batch of square matrices, got tensor with shape: {:?}",
                    self.shape()
                ),
            )
        })?;
        if power < 0 {
            return self.invert()?.matrix_power(power.unsigned_abs() as i64);
        }
        let device = resolve_device("matrix_power", None, &[self])?;
        let shape = [&batch[..], &[n, n]].concat();
        let eye = || -> Result<Tensor> { on(device).eye(self.dtype(), n)?.broadcast(&shape) };
        if power == 0 {
            return eye();
        }
        let batch_axes: Vec<isize> = (0..batch.len() as isize).collect();
        let rank = self.rank() as isize;
        let product = |a: &Tensor, b: &Tensor| -> Result<Tensor> {
            a.dot_general(&[rank - 1], &batch_axes, b, &[rank - 2], &batch_axes)
        };
        let (mut result, mut base, mut rest): (Option<Tensor>, Tensor, u64) =
            (None, self.clone(), power.unsigned_abs());
        while rest > 0 {
            if rest & 1 == 1 {
                result = Some(match result {
                    Some(r) => product(&r, &base)?,
                    None => base.clone(),
                });
            }
            rest >>= 1;
            if rest > 0 {
                base = product(&base, &base)?;
            }
        }
        result.map_or_else(eye, Ok)
    }
}
