//! Reductions over axes (`sum`, `product`, `reduce_max`, `reduce_min`, `mean`) and index
//! reductions (`argmax`, `argmin`), with Nx's axes and `keep_axes`.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{ArgOp, Op, ReduceOp};
use crate::session::resolve_device;
use crate::shape::{names, normalize_axes, normalize_axis, numel};
use crate::tensor::Tensor;

use super::axes::{IntoAxes, IntoAxis};
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
        if matches!(op, ReduceOp::Max | ReduceOp::Min) && dtype.is_complex() {
            return Err(super::complex::not_for_complex(name, 2, dtype));
        }
        let axes = self.reduced_axes(name, axes)?;
        let device = resolve_device(name, None, &[self])?;
        let x = self.prepared(dtype, device)?;
        let shape = reduced_shape(self.shape(), &axes, keep_axes);
        let names = names::reduce(&self.names(), &axes, keep_axes);
        let kernel = Op::Reduce {
            op,
            shape: self.shape().to_vec(),
            axes,
        };
        Ok(run(device, kernel, &[&x], shape)?.named(names))
    }

    fn reduced_axes(&self, name: &'static str, axes: Option<&[isize]>) -> Result<Vec<usize>> {
        match axes {
            Some(a) => normalize_axes(name, a, self.shape()),
            None => Ok((0..self.rank()).collect()),
        }
    }

    /// Sum over `axes` (all when `None`); integer sums are `s32`, `u32` or `s64` and wrap, as
    /// Nx's do (see [`DType::accumulator`]).
    pub(crate) fn sum_over(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(
            ReduceOp::Sum,
            "sum",
            axes,
            keep_axes,
            self.dtype().accumulator(),
        )
    }

    /// Product over `axes` (all when `None`); the result type is sum's.
    pub(crate) fn product_over(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
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
    pub(crate) fn reduce_max_over(
        &self,
        axes: Option<&[isize]>,
        keep_axes: bool,
    ) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Max, "reduce_max", axes, keep_axes, self.dtype())
    }

    /// Minimum over `axes` (all when `None`). Over zero elements it is the dtype's highest
    /// value (Inf for floats), as in Nx.
    pub(crate) fn reduce_min_over(
        &self,
        axes: Option<&[isize]>,
        keep_axes: bool,
    ) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Min, "reduce_min", axes, keep_axes, self.dtype())
    }

    /// Mean over `axes` (all when `None`); integers average as f32. The mean of zero elements
    /// is NaN (0 / 0), as in Nx.
    pub(crate) fn mean_over(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
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

    /// Whether every element along `axes` is non-zero (NaN is), as u8 0 or 1 (Nx's `all`);
    /// 1 over no elements.
    pub(crate) fn all_over(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        // The minimum of a 0/1 mask; over no elements its identity (255) is capped to 1.
        self.not_equal(0)?.reduce_min_over(axes, keep_axes)?.min(1)
    }

    /// Whether any element along `axes` is non-zero (NaN is), as u8 0 or 1 (Nx's `any`); 0
    /// over no elements.
    pub(crate) fn any_over(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.not_equal(0)?.reduce_max_over(axes, keep_axes)
    }

    /// `log(sum(exp(x)))` over `axes` without overflow (Nx's `logsumexp`): the largest element
    /// is taken out first. Integers become f32. Over no elements it is -inf.
    pub(crate) fn logsumexp_over(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        let reduced = self.reduced_axes("logsumexp", axes)?;
        let x = self.as_type(self.dtype().to_float())?;
        // The shift is kept finite: a slice of -inf (or +inf, or nothing) then shifts by ∓MAX,
        // which exp and log carry to the right infinity instead of inf - inf = NaN.
        let big = if x.dtype() == DType::F64 {
            f64::MAX
        } else {
            f64::from(f32::MAX)
        };
        let shift = x.reduce_max_over(axes, true)?.max(-big)?.min(big)?;
        let total = x
            .subtract(&shift)?
            .exp()?
            .sum_over(axes, true)?
            .log()?
            .add(&shift)?;
        if keep_axes {
            Ok(total)
        } else {
            let axes: Vec<isize> = reduced.iter().map(|&a| a as isize).collect();
            total.squeeze(&axes)
        }
    }

    /// The variance over `axes` (Nx's `variance`): the mean of squared deviations from the
    /// mean, divided by `n - ddof` instead of `n` (`ddof: 1` is the sample variance).
    /// Integers become f32.
    pub(crate) fn variance_over(
        &self,
        axes: Option<&[isize]>,
        keep_axes: bool,
        ddof: usize,
    ) -> Result<Tensor> {
        let reduced = self.reduced_axes("variance", axes)?;
        let count = numel(&reduced.iter().map(|&a| self.shape()[a]).collect::<Vec<_>>());
        let mean = self.mean_over(axes, true)?;
        let squares = self.subtract(&mean)?.square()?.sum_over(axes, keep_axes)?;
        // As Nx: n - ddof may be 0 (inf or NaN) or negative.
        squares.divide(count as f64 - ddof as f64)
    }

    /// The standard deviation over `axes`: the square root of [`Tensor::variance`] with the
    /// same `ddof` (Nx's `standard_deviation`).
    pub(crate) fn standard_deviation_over(
        &self,
        axes: Option<&[isize]>,
        keep_axes: bool,
        ddof: usize,
    ) -> Result<Tensor> {
        self.variance_over(axes, keep_axes, ddof)?.sqrt()
    }

    /// The covariance matrix of the rows of this `[..., n, d]` tensor (leading axes are
    /// batches), each pair of columns summed over the `n` rows around their mean and divided
    /// by `n - ddof`, as `Nx.covariance(t, ddof: ddof)`.
    pub fn covariance(&self, ddof: usize) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::InvalidArgument {
                op: "covariance",
                message: format!(
                    "expected input tensor of rank at least 2, got {}",
                    self.rank()
                ),
            });
        }
        self.covariance_around(&self.mean_over(Some(&[-2]), false)?, ddof)
    }

    /// [`Tensor::covariance`] around a given column mean of shape `[..., d]` (its batch axes
    /// broadcast with this tensor's), as `Nx.covariance(t, mean, ddof: ddof)`.
    pub fn covariance_around(&self, mean: &Tensor, ddof: usize) -> Result<Tensor> {
        let rank = self.rank();
        if rank < 2 || mean.rank() == 0 {
            return Err(Error::InvalidArgument {
                op: "covariance",
                message: format!(
                    "expected input of rank at least 2 and a mean of rank at least 1, got {} and {}",
                    self.signature(),
                    mean.signature()
                ),
            });
        }
        let n = self.shape()[rank - 2];
        let centred = self.subtract(&mean.new_axis(-2)?)?;
        let mut swap: Vec<usize> = (0..centred.rank()).collect();
        swap.swap(centred.rank() - 2, centred.rank() - 1);
        centred
            .transpose(&swap)?
            .matmul(&centred)?
            .divide(n as f64 - ddof as f64)
    }

    /// The mean over `axes` weighted by `weights` (the same shape, or one that broadcasts to
    /// it): `sum(x * w) / sum(w)` (Nx's `weighted_mean`). Integers become f32.
    pub(crate) fn weighted_mean_over(
        &self,
        weights: &Tensor,
        axes: Option<&[isize]>,
        keep_axes: bool,
    ) -> Result<Tensor> {
        let weights = weights.broadcast(self.shape())?;
        let total = self.multiply(&weights)?.sum_over(axes, keep_axes)?;
        total.divide(&weights.sum_over(axes, keep_axes)?)
    }

    fn arg_op(
        &self,
        op: ArgOp,
        name: &'static str,
        axis: Option<isize>,
        keep_axis: bool,
        tie_break: TieBreak,
        dtype: DType,
    ) -> Result<Tensor> {
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(name, 2, self.dtype()));
        }
        if dtype.is_float() {
            return Err(Error::InvalidArgument {
                op: name,
                message: format!("type: must be an integer type, got {dtype}"),
            });
        }
        // With no axis Nx reduces the flattened tensor to a scalar, whatever keep_axis says.
        let keep_axis = keep_axis && axis.is_some();
        let (x, axis) = match axis {
            Some(a) => (self.clone(), normalize_axis(name, a, self.shape())?),
            None => (self.reshape(&[self.size()])?, 0),
        };
        let length = x.shape()[axis];
        if length == 0 {
            return Err(Error::InvalidArgument {
                op: name,
                message: format!("axis {axis} of {} is empty", self.signature()),
            });
        }
        let device = resolve_device(name, None, &[self])?;
        let shape = reduced_shape(x.shape(), &[axis], keep_axis);
        // The kernels keep the first of equal candidates; the last one is the first of the
        // reversed axis, counted back from the end.
        let x = match tie_break {
            TieBreak::Low => x,
            TieBreak::High => x.reverse([axis as isize])?,
        };
        let kernel = Op::ArgReduce {
            op,
            shape: x.shape().to_vec(),
            axis,
        };
        let index = run(device, kernel, &[&x], shape)?;
        let index = match tie_break {
            TieBreak::Low => index,
            TieBreak::High => index.negate()?.add(length - 1)?,
        };
        // The flattened tensor (no axis) reduces to a scalar, which has no names.
        let names = match x.rank() == self.rank() {
            true => names::reduce(&self.names(), &[axis], keep_axis),
            false => Vec::new(),
        };
        Ok(index.as_type(dtype)?.named(names))
    }

    /// Index of the first maximum along `axis` (`t.argmax(1)`; of the flattened tensor with
    /// `..`), as s32: Nx's `argmax(t, axis:)`. A NaN is the maximum.
    pub fn argmax(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.argmax_with(axis, false, TieBreak::Low, DType::S32)
    }

    /// [`Tensor::argmax`] keeping the reduced axis with size 1 (Nx's `keep_axis: true`).
    pub fn argmax_keep(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.argmax_with(axis, true, TieBreak::Low, DType::S32)
    }

    /// Index of the first minimum along `axis` (`t.argmin(1)`; of the flattened tensor with
    /// `..`), as s32: Nx's `argmin(t, axis:)`. A NaN is the minimum.
    pub fn argmin(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.argmin_with(axis, false, TieBreak::Low, DType::S32)
    }

    /// [`Tensor::argmin`] keeping the reduced axis with size 1 (Nx's `keep_axis: true`).
    pub fn argmin_keep(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.argmin_with(axis, true, TieBreak::Low, DType::S32)
    }

    /// `argmax` with Nx's `tie_break:` (which of equal maxima) and `type:` (an integer dtype).
    pub fn argmax_with(
        &self,
        axis: impl IntoAxis,
        keep_axis: bool,
        tie_break: TieBreak,
        dtype: DType,
    ) -> Result<Tensor> {
        let axis = self.optional_axis("argmax", axis)?;
        self.arg_op(ArgOp::ArgMax, "argmax", axis, keep_axis, tie_break, dtype)
    }

    /// `argmin` with Nx's `tie_break:` (which of equal minima) and `type:` (an integer dtype).
    pub fn argmin_with(
        &self,
        axis: impl IntoAxis,
        keep_axis: bool,
        tie_break: TieBreak,
        dtype: DType,
    ) -> Result<Tensor> {
        let axis = self.optional_axis("argmin", axis)?;
        self.arg_op(ArgOp::ArgMin, "argmin", axis, keep_axis, tie_break, dtype)
    }
}

/// Which of several equal extremes `argmax_with`/`argmin_with` report (Nx's `tie_break:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// The lowest index (`:low`, Nx's default).
    #[default]
    Low,
    /// The highest index (`:high`).
    High,
}

// The public forms of a reduction over axes: `name(axes)` and `name_keep(axes)`, each the
// crate's `name_over(Option<&[isize]>, keep)`.
macro_rules! reductions {
    ($($name:ident, $keep:ident, $over:ident, $doc:literal;)*) => {
        impl Tensor {$(
            #[doc = concat!($doc, " `axes` is `0`, `[0, 1]`, `&axes` or `..` for all of them; negative axes count from the end.")]
            pub fn $name(&self, axes: impl IntoAxes) -> Result<Tensor> {
                self.$over(self.axis_positions(stringify!($name), axes)?.as_deref(), false)
            }
            #[doc = concat!("[`Tensor::", stringify!($name), "`] keeping each reduced axis with size 1 (Nx's `keep_axes: true`), ready to broadcast against this tensor.")]
            pub fn $keep(&self, axes: impl IntoAxes) -> Result<Tensor> {
                self.$over(self.axis_positions(stringify!($name), axes)?.as_deref(), true)
            }
        )*}
    };
}

reductions! {
    sum, sum_keep, sum_over, "The sum over `axes` (Nx's `sum`): integers sum into s32 (signed), u32 (unsigned) or s64 (64-bit) and wrap, as Nx's.";
    product, product_keep, product_over, "The product over `axes` (Nx's `product`), of sum's type.";
    reduce_max, reduce_max_keep, reduce_max_over, "The maximum over `axes` (Nx's `reduce_max`); over no elements, the type's lowest value (-inf).";
    reduce_min, reduce_min_keep, reduce_min_over, "The minimum over `axes` (Nx's `reduce_min`); over no elements, the type's highest value (inf).";
    mean, mean_keep, mean_over, "The mean over `axes` (Nx's `mean`); integers average as f32, no elements give NaN.";
    all, all_keep, all_over, "Whether every element over `axes` is non-zero (NaN is), u8 0 or 1 (Nx's `all`).";
    any, any_keep, any_over, "Whether any element over `axes` is non-zero, u8 0 or 1 (Nx's `any`).";
    logsumexp, logsumexp_keep, logsumexp_over, "`log(sum(exp(t)))` over `axes` without overflow (Nx's `logsumexp`); integers become f32.";
}

impl Tensor {
    /// The variance over `axes` (as [`Tensor::sum`] takes them), Nx's `variance(t, axes:,
    /// ddof:)`: squared deviations from the mean summed and divided by `n - ddof` (`ddof` 1
    /// is the sample variance). Integers become f32.
    pub fn variance(&self, axes: impl IntoAxes, ddof: usize) -> Result<Tensor> {
        self.variance_over(
            self.axis_positions("variance", axes)?.as_deref(),
            false,
            ddof,
        )
    }

    /// [`Tensor::variance`] keeping each reduced axis with size 1.
    pub fn variance_keep(&self, axes: impl IntoAxes, ddof: usize) -> Result<Tensor> {
        self.variance_over(
            self.axis_positions("variance", axes)?.as_deref(),
            true,
            ddof,
        )
    }

    /// Nx's `standard_deviation(t, axes:, ddof:)`: the square root of [`Tensor::variance`].
    pub fn standard_deviation(&self, axes: impl IntoAxes, ddof: usize) -> Result<Tensor> {
        self.standard_deviation_over(
            self.axis_positions("standard_deviation", axes)?.as_deref(),
            false,
            ddof,
        )
    }

    /// [`Tensor::standard_deviation`] keeping each reduced axis with size 1.
    pub fn standard_deviation_keep(&self, axes: impl IntoAxes, ddof: usize) -> Result<Tensor> {
        self.standard_deviation_over(
            self.axis_positions("standard_deviation", axes)?.as_deref(),
            true,
            ddof,
        )
    }

    /// The mean over `axes` weighted by `weights` (this shape, or one that broadcasts to it):
    /// `sum(t * w) / sum(w)`, Nx's `weighted_mean(t, weights, axes:)`.
    pub fn weighted_mean(&self, weights: &Tensor, axes: impl IntoAxes) -> Result<Tensor> {
        self.weighted_mean_over(
            weights,
            self.axis_positions("weighted_mean", axes)?.as_deref(),
            false,
        )
    }

    /// [`Tensor::weighted_mean`] keeping each reduced axis with size 1.
    pub fn weighted_mean_keep(&self, weights: &Tensor, axes: impl IntoAxes) -> Result<Tensor> {
        self.weighted_mean_over(
            weights,
            self.axis_positions("weighted_mean", axes)?.as_deref(),
            true,
        )
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
