//! Reductions over axes (`sum`, `product`, `reduce_max`, `reduce_min`, `mean`) and index
//! reductions (`argmax`, `argmin`), with Nx's axes and `keep_axes`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{ArgOp, Op, ReduceOp};
use crate::session::resolve_device;
use crate::shape::{normalize_axes, normalize_axis, numel};
use crate::tensor::Tensor;

use super::run;

impl Tensor {
    fn reduce_op(
        &self,
        op: ReduceOp,
        name: &'static str,
        axes: Option<&[isize]>,
        keep_axes: bool,
        dtype: DType,
    ) -> Result<Tensor> {
        let axes = self.reduced_axes(name, axes)?;
        let device = resolve_device(name, None, &[self])?;
        let x = self.prepared(dtype, device)?;
        let shape = reduced_shape(self.shape(), &axes, keep_axes);
        let kernel = Op::Reduce {
            op,
            shape: self.shape().to_vec(),
            axes,
        };
        run(device, kernel, &[&x], shape)
    }

    fn reduced_axes(&self, name: &'static str, axes: Option<&[isize]>) -> Result<Vec<usize>> {
        match axes {
            Some(a) => normalize_axes(name, a, self.shape()),
            None => Ok((0..self.rank()).collect()),
        }
    }

    /// Sum over `axes` (all when `None`); integers sum in s64.
    pub fn sum(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(
            ReduceOp::Sum,
            "sum",
            axes,
            keep_axes,
            self.dtype().accumulator(),
        )
    }

    /// Product over `axes` (all when `None`); integers multiply in s64.
    pub fn product(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(
            ReduceOp::Product,
            "product",
            axes,
            keep_axes,
            self.dtype().accumulator(),
        )
    }

    /// Maximum over `axes` (all when `None`). Over zero elements it is the dtype's lowest
    /// value (-Inf for floats), the reduction's identity, as in Nx.
    pub fn reduce_max(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Max, "reduce_max", axes, keep_axes, self.dtype())
    }

    /// Minimum over `axes` (all when `None`). Over zero elements it is the dtype's highest
    /// value (Inf for floats), as in Nx.
    pub fn reduce_min(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Min, "reduce_min", axes, keep_axes, self.dtype())
    }

    /// Mean over `axes` (all when `None`); integers average as f32. The mean of zero elements
    /// is NaN (0 / 0), as in Nx.
    pub fn mean(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        let reduced = self.reduced_axes("mean", axes)?;
        let count = numel(&reduced.iter().map(|&a| self.shape()[a]).collect::<Vec<_>>());
        let total = self.reduce_op(
            ReduceOp::Sum,
            "mean",
            axes,
            keep_axes,
            self.dtype().to_float(),
        )?;
        total.divide(count)
    }

    fn arg_op(
        &self,
        op: ArgOp,
        name: &'static str,
        axis: Option<isize>,
        keep_axes: bool,
    ) -> Result<Tensor> {
        let (x, axis) = match axis {
            Some(a) => (self.clone(), normalize_axis(name, a, self.shape())?),
            None => (self.reshape(&[self.size()])?, 0),
        };
        if x.shape()[axis] == 0 {
            return Err(Error::InvalidArgument {
                op: name,
                message: format!("axis {axis} of {} is empty", self.signature()),
            });
        }
        let device = resolve_device(name, None, &[self])?;
        let shape = match (keep_axes, x.rank() == self.rank()) {
            (true, true) => reduced_shape(self.shape(), &[axis], true),
            (true, false) => vec![1; self.rank()],
            (false, _) => reduced_shape(x.shape(), &[axis], false),
        };
        let kernel = Op::ArgReduce {
            op,
            shape: x.shape().to_vec(),
            axis,
        };
        run(device, kernel, &[&x], shape)
    }

    /// Index of the first maximum along `axis` (over all elements, flattened, when `None`), s64.
    pub fn argmax(&self, axis: Option<isize>, keep_axes: bool) -> Result<Tensor> {
        self.arg_op(ArgOp::ArgMax, "argmax", axis, keep_axes)
    }

    /// Index of the first minimum along `axis` (over all elements, flattened, when `None`), s64.
    pub fn argmin(&self, axis: Option<isize>, keep_axes: bool) -> Result<Tensor> {
        self.arg_op(ArgOp::ArgMin, "argmin", axis, keep_axes)
    }
}

pub(super) fn reduced_shape(shape: &[usize], axes: &[usize], keep_axes: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keep_axes) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}
