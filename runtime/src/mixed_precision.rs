//! Mixed precision for training, as Axon's `Axon.MixedPrecision` and PyTorch's autocast: the
//! parameters stay in f32, the forward and backward passes compute in bf16 or f16, and what the
//! step returns (the loss) is f32 again. A [`Policy`] names the three dtypes and casts a tensor
//! to each; the gradient of a cast is the cast back, so the gradients of f32 parameters come
//! out in f32 however the step computed.
//!
//! f16 overflows past 65,504 and flushes gradients under 6e-8 to zero, so an f16 step scales its
//! loss up before the backward pass and its gradients down after ([`DynamicLossScale`], Axon's
//! `:dynamic` loss scale): a step whose gradients are not finite is skipped and the scale
//! halved; after `period` good steps it doubles. bf16 has f32's range and needs none.
//! Everything is tensor ops, so a compiled step carries the scale as arguments and results.
//!
//! ```
//! use tensorbook::{mixed_precision::Policy, tensor, DType};
//! let policy = Policy::bf16();
//! let w = tensor![[0.5, -1.0]].unwrap();
//! let x = policy.compute(&w).unwrap();
//! assert_eq!(x.dtype(), DType::BF16);
//! assert_eq!(policy.output(&x).unwrap().dtype(), DType::F32);
//! ```

use crate::create::on;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The dtypes of a mixed-precision step (Axon's `create_policy(params:, compute:, output:)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// What the parameters are kept (and updated) in.
    pub params: DType,
    /// What the forward and backward passes compute in.
    pub compute: DType,
    /// What the step's results (the loss) are returned in.
    pub output: DType,
}

impl Policy {
    /// A policy of three float dtypes; integer dtypes are an error naming the one given.
    pub fn new(params: DType, compute: DType, output: DType) -> Result<Policy> {
        for (role, dtype) in [("params", params), ("compute", compute), ("output", output)] {
            if !dtype.is_float() {
                return Err(Error::InvalidArgument {
                    op: "mixed_precision::Policy",
                    message: format!(
                        "{role} must be a float dtype (bf16, f16, f32, f64), not {dtype}"
                    ),
                });
            }
        }
        Ok(Policy {
            params,
            compute,
            output,
        })
    }

    /// f32 parameters and results, bf16 computation: the usual policy on recent GPUs and CPUs.
    pub fn bf16() -> Policy {
        Policy {
            params: DType::F32,
            compute: DType::BF16,
            output: DType::F32,
        }
    }

    /// f32 parameters and results, f16 computation (with a [`DynamicLossScale`]).
    pub fn f16() -> Policy {
        Policy {
            params: DType::F32,
            compute: DType::F16,
            output: DType::F32,
        }
    }

    /// `t` in the compute dtype if it is a float tensor; integer tensors (labels, indices) are
    /// returned as they are, as Axon's `cast` leaves them.
    pub fn compute(&self, t: &Tensor) -> Result<Tensor> {
        cast_float(t, self.compute)
    }

    /// `t` in the parameter dtype if it is a float tensor.
    pub fn params(&self, t: &Tensor) -> Result<Tensor> {
        cast_float(t, self.params)
    }

    /// `t` in the output dtype if it is a float tensor.
    pub fn output(&self, t: &Tensor) -> Result<Tensor> {
        cast_float(t, self.output)
    }

    /// Every tensor of `ts` in the compute dtype (see [`Policy::compute`]).
    pub fn compute_all(&self, ts: &[Tensor]) -> Result<Vec<Tensor>> {
        ts.iter().map(|t| self.compute(t)).collect()
    }
}

fn cast_float(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype().is_float() && t.dtype() != dtype {
        t.as_type(dtype)
    } else {
        Ok(t.clone())
    }
}

/// Axon's dynamic loss scale: the loss multiplied by `scale` before the backward pass, the
/// gradients divided by it after; not-finite gradients skip the step and divide the scale by
/// `factor` (not under `min_scale`); `period` finite steps in a row multiply it by `factor`.
/// The state is two rank-0 tensors (the scale, f32, and the finite steps counted, s32) that a
/// compiled step takes as arguments and returns updated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DynamicLossScale {
    /// The first scale (Axon's default: 2^15).
    pub initial: f64,
    /// Finite steps before the scale grows (Axon's default: 2,000).
    pub period: i32,
    /// How much it grows or shrinks by (2).
    pub factor: f64,
    /// The scale never goes under this (1).
    pub min_scale: f64,
}

impl Default for DynamicLossScale {
    fn default() -> Self {
        DynamicLossScale {
            initial: 32768.0,
            period: 2000,
            factor: 2.0,
            min_scale: 1.0,
        }
    }
}

/// What [`DynamicLossScale::unscale`] gives: the gradients divided by the scale, whether they
/// are all finite (a u8 scalar), and the next state.
#[derive(Clone, Debug)]
pub struct Unscaled {
    /// The gradients divided by the scale, each in its own dtype.
    pub grads: Vec<Tensor>,
    /// 1 when every gradient is finite, else 0 (u8, rank 0).
    pub finite: Tensor,
    /// The next scale (f32, rank 0).
    pub scale: Tensor,
    /// The next count of finite steps (s32, rank 0).
    pub count: Tensor,
}

impl DynamicLossScale {
    /// The first state, on `loss`'s device when the step runs (binary rank-0 tensors follow
    /// the other operands): `(scale, count)`.
    pub fn init(&self) -> Result<(Tensor, Tensor)> {
        if !(self.initial.is_finite() && self.initial > 0.0 && self.factor > 1.0 && self.period > 0)
        {
            return Err(Error::InvalidArgument {
                op: "DynamicLossScale::init",
                message: format!(
                    "initial scale {}, factor {} and period {} must be positive (factor above 1)",
                    self.initial, self.factor, self.period
                ),
            });
        }
        let binary = on(crate::device::Device::BINARY);
        Ok((binary.scalar(self.initial as f32)?, binary.scalar(0i32)?))
    }

    /// `loss` times the scale, computed in f32 (an f16 loss would overflow at 65,504).
    pub fn scale(&self, loss: &Tensor, scale: &Tensor) -> Result<Tensor> {
        loss.as_type(DType::F32)?.multiply(scale)
    }

    /// The gradients divided by the scale (in f32, then back to each one's dtype), whether all
    /// are finite, and the next `(scale, count)`.
    pub fn unscale(&self, grads: &[Tensor], scale: &Tensor, count: &Tensor) -> Result<Unscaled> {
        let mut unscaled = Vec::with_capacity(grads.len());
        let mut finite: Option<Tensor> = None;
        for g in grads {
            let g32 = g.as_type(DType::F32)?.divide(scale)?;
            // Inf * 0 and NaN * 0 are NaN, so the sum is 0 exactly when every entry is finite.
            let ok = g32.multiply(0.0)?.sum(..)?.equal(0.0)?;
            finite = Some(match finite {
                None => ok,
                Some(f) => f.logical_and(&ok)?,
            });
            unscaled.push(g32.as_type(g.dtype())?);
        }
        let finite = match finite {
            Some(f) => f,
            None => on(crate::device::Device::BINARY).scalar(1u8)?,
        };
        let counted = count.add(1)?;
        let grow = counted.greater_equal(self.period)?;
        let grown = grow.select(&scale.multiply(self.factor)?, scale)?;
        let shrunk = scale.divide(self.factor)?.max(self.min_scale)?;
        let next_scale = finite.select(&grown, &shrunk)?.as_type(DType::F32)?;
        let next_count = finite
            .logical_and(&grow.logical_not()?)?
            .select(&counted, 0)?
            .as_type(DType::S32)?;
        Ok(Unscaled {
            grads: unscaled,
            finite,
            scale: next_scale,
            count: next_count,
        })
    }
}

/// `updated` where `finite` is 1, else `kept`: a skipped step leaves the parameters as they
/// were.
pub fn keep_if_not_finite(
    finite: &Tensor,
    updated: &[Tensor],
    kept: &[Tensor],
) -> Result<Vec<Tensor>> {
    updated
        .iter()
        .zip(kept)
        .map(|(u, k)| finite.select(u, k))
        .collect()
}
