//! Logical ops, `select`, tests of float classes, clipping and closeness (Nx's `logical_*`,
//! `select`, `is_nan`, `is_infinity`, `clip`, `all_close`). `select` is an op of its own on
//! every backend; the rest are composed of comparisons, `min`/`max` and `select`, so each is
//! exact for NaN (a mask is never multiplied into a value) and comes to every backend, `jit`
//! and the gradient with its parts. Truth values are u8 0 or 1, as in Nx; a value is true
//! when it is not zero (NaN is true).

use crate::dtype::DType;
use crate::error::Result;
use crate::ir::Op;
use crate::session::resolve_device;
use crate::shape::{broadcast_shapes, broadcast_strides, check_shape, names};
use crate::tensor::Tensor;

use super::{merge_number, run, Operand};

/// Nx's defaults for [`Tensor::all_close`].
const RTOL: f64 = 1e-5;
const ATOL: f64 = 1e-8;

impl Tensor {
    /// 1 where this tensor is not zero (NaN included), else 0, as u8.
    fn truth(&self) -> Result<Tensor> {
        self.not_equal(0)
    }

    /// `combine` of this tensor's truth and the right operand's (a tensor's elementwise, a
    /// number's as one 0 or 1).
    fn logical(
        &self,
        rhs: Operand<'_>,
        combine: impl Fn(&Tensor, Operand<'_>) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let lhs = self.truth()?;
        match rhs {
            Operand::Tensor(t) => combine(&lhs, Operand::Tensor(&t.truth()?)),
            Operand::Integer(v) => combine(&lhs, Operand::Integer(i128::from(v != 0))),
            Operand::Float(v) => combine(&lhs, Operand::Integer(i128::from(v != 0.0))),
        }
    }

    /// 1 where both are true (not zero), else 0, as u8; broadcasts (Nx's `logical_and`).
    pub fn logical_and<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.logical(rhs.into(), |a, b| a.multiply(b))
    }

    /// 1 where either is true, else 0, as u8; broadcasts (Nx's `logical_or`).
    pub fn logical_or<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.logical(rhs.into(), |a, b| a.max(b))
    }

    /// 1 where exactly one is true, else 0, as u8; broadcasts (Nx's `logical_xor`).
    pub fn logical_xor<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
        self.logical(rhs.into(), |a, b| a.not_equal(b))
    }

    /// 1 where this tensor is zero, else 0, as u8 (Nx's `logical_not`).
    pub fn logical_not(&self) -> Result<Tensor> {
        self.equal(0)
    }

    /// 1 where an element is NaN, else 0, as u8; integers are never NaN (Nx's `is_nan`).
    pub fn is_nan(&self) -> Result<Tensor> {
        // NaN is the one value unequal to itself.
        self.not_equal(self)
    }

    /// 1 where an element is +inf or -inf, else 0, as u8; integers are never infinite (Nx's
    /// `is_infinity`).
    pub fn is_infinity(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            // All zeros: an integer always equals itself.
            return self.not_equal(self);
        }
        self.abs()?.equal(f64::INFINITY)
    }

    /// `on_true` where this tensor (the predicate) is not zero (NaN included), else `on_false`,
    /// as `Nx.select(pred, on_true, on_false)`: the three broadcast together, and the result has
    /// the merged type of the two choices (numbers merge as in Nx). Exact for every value: no
    /// mask is multiplied in. The gradient goes to the chosen side only.
    pub fn select<'a, 'b>(
        &self,
        on_true: impl Into<Operand<'a>>,
        on_false: impl Into<Operand<'b>>,
    ) -> Result<Tensor> {
        let (on_true, on_false) = (on_true.into(), on_false.into());
        let dtype = match (on_true, on_false) {
            (Operand::Tensor(t), other) => merge_number(t.dtype(), other)?,
            (number, Operand::Tensor(f)) => merge_number(f.dtype(), number)?,
            (number, other) => merge_number(number_dtype(number)?, other)?,
        };
        let (t, f) = (
            self.literal(on_true, dtype)?,
            self.literal(on_false, dtype)?,
        );
        let device = resolve_device("select", None, &[self, &t, &f])?;
        let shape = broadcast_shapes("select", self.shape(), t.shape())?;
        let shape = broadcast_shapes("select", &shape, f.shape())?;
        check_shape("select", &shape, dtype)?;
        let pred = if self.dtype() == DType::U8 {
            self.clone()
        } else {
            self.truth()?
        };
        let (t, f, pred) = (
            t.prepared(dtype, device)?,
            f.prepared(dtype, device)?,
            pred.prepared(DType::U8, device)?,
        );
        let views = [&t, &f, &pred].map(|x| crate::ir::Strided {
            offset: 0,
            strides: broadcast_strides(x.shape(), &shape),
        });
        let names = names::broadcast(
            "select",
            &[&self.names(), &t.names(), &f.names()],
            shape.len(),
        )?;
        let out = run(
            device,
            Op::Select {
                views,
                out_shape: shape.clone(),
            },
            &[&t, &f, &pred],
            shape,
        )?;
        Ok(out.named(names))
    }

    /// Each element limited to `[min, max]` (Nx's `clip`): `min(max(x, min), max)`, with Nx's
    /// type merging of the bounds; NaN stays NaN. As in Nx, the gradient passes to `x` where
    /// `min <= x <= max` (the bounds included) and to a bound where it is exceeded.
    pub fn clip<'a, 'b>(
        &self,
        min: impl Into<Operand<'a>>,
        max: impl Into<Operand<'b>>,
    ) -> Result<Tensor> {
        let (min, max) = (min.into(), max.into());
        let limited = self.max(min)?.min(max)?;
        let inside = self
            .greater_equal(min)?
            .logical_and(&self.less_equal(max)?)?;
        inside.select(&self.as_type(limited.dtype())?, &limited)
    }

    /// Whether every element is within `1e-8 + 1e-5 * |other|` of `other` (Nx's `all_close`
    /// with its defaults), as a u8 scalar. Equal infinities are close; NaN is close to nothing.
    pub fn all_close(&self, other: &Tensor) -> Result<Tensor> {
        self.all_close_with(other, RTOL, ATOL, false)
    }

    /// [`Tensor::all_close`] with Nx's options: relative and absolute tolerances, and whether
    /// NaN is close to NaN.
    pub fn all_close_with(
        &self,
        other: &Tensor,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> Result<Tensor> {
        let bound = other.abs()?.multiply(rtol)?.add(atol)?;
        let within = self.subtract(other)?.abs()?.less_equal(&bound)?;
        // inf - inf is NaN: equal infinities are close by equality.
        let mut close = within.logical_or(&self.equal(other)?)?;
        if equal_nan {
            close = close.logical_or(&self.is_nan()?.logical_and(&other.is_nan()?)?)?;
        }
        close.all(..)
    }
}

/// The dtype Nx gives a number on its own: s32 for an integer that fits (else s64), f32 for a
/// float.
fn number_dtype(number: Operand<'_>) -> Result<DType> {
    match number {
        Operand::Tensor(t) => Ok(t.dtype()),
        Operand::Float(_) => Ok(DType::F32),
        Operand::Integer(_) => merge_number(DType::S32, number),
    }
}
