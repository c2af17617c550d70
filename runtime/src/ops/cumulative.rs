//! Cumulative scans (`Nx.cumulative_sum`, `_product`, `_max`, `_min`, each with `reverse`) as
//! one op of every backend (composed, Nx's associative scan costs log₂(n) passes over the
//! data), and `diff`, composed of slices as Nx composes it.

use crate::error::{Error, Result};
use crate::ir::{Op, ReduceOp};
use crate::session::resolve_device;
use crate::shape::normalize_axis;
use crate::tensor::Tensor;

use super::axes::OneAxis;
use super::run;

impl Tensor {
    /// The running sum along `axis` (from its end when `reverse`), in this tensor's dtype
    /// (integers wrap), as `Nx.cumulative_sum(t, axis: axis, reverse: reverse)`.
    pub fn cumulative_sum(&self, axis: impl OneAxis, reverse: bool) -> Result<Tensor> {
        self.cumulative(
            ReduceOp::Sum,
            self.axis_position("cumulative_sum", axis)?,
            reverse,
        )
    }

    /// The running product along `axis`, as `Nx.cumulative_product`.
    pub fn cumulative_product(&self, axis: impl OneAxis, reverse: bool) -> Result<Tensor> {
        let axis = self.axis_position("cumulative_product", axis)?;
        self.cumulative(ReduceOp::Product, axis, reverse)
    }

    /// The running maximum along `axis` (NaN, once met, stays), as `Nx.cumulative_max`.
    pub fn cumulative_max(&self, axis: impl OneAxis, reverse: bool) -> Result<Tensor> {
        self.cumulative(
            ReduceOp::Max,
            self.axis_position("cumulative_max", axis)?,
            reverse,
        )
    }

    /// The running minimum along `axis`, as `Nx.cumulative_min`.
    pub fn cumulative_min(&self, axis: impl OneAxis, reverse: bool) -> Result<Tensor> {
        self.cumulative(
            ReduceOp::Min,
            self.axis_position("cumulative_min", axis)?,
            reverse,
        )
    }

    fn cumulative(&self, op: ReduceOp, axis: isize, reverse: bool) -> Result<Tensor> {
        let kernel = Op::Cumulative {
            op,
            shape: self.shape().to_vec(),
            axis: normalize_axis("cumulative", axis, self.shape())?,
            reverse,
        };
        if matches!(op, ReduceOp::Max | ReduceOp::Min) && self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(
                kernel.name(),
                2,
                self.dtype(),
            ));
        }
        let device = resolve_device(kernel.name(), None, &[self])?;
        Ok(run(device, kernel, &[self], self.shape().to_vec())?.named_like(self))
    }

    /// The `order`-th difference along `axis` (`out[i] = x[i + 1] - x[i]`, repeated), as
    /// `Nx.diff(t, order: order, axis: axis)`; each order shortens the axis by one.
    pub fn diff(&self, order: usize, axis: impl OneAxis) -> Result<Tensor> {
        let axis = self.axis_position("diff", axis)?;
        if self.rank() == 0 {
            return Err(Error::InvalidArgument {
                op: "diff",
                message: "cannot compute diff of a scalar".into(),
            });
        }
        let axis = normalize_axis("diff", axis, self.shape())?;
        let size = self.shape()[axis];
        let mut out = self.clone();
        for k in 0..order.min(size) {
            let len = size - k - 1;
            let a = axis as isize;
            out = out
                .slice_along_axis(1, len, a)?
                .subtract(&out.slice_along_axis(0, len, a)?)?;
        }
        Ok(out)
    }
}
