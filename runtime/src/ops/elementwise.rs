//! Elementwise ops: casts, the binary ops with Nx's type promotion and number literals, and
//! the unary ops (float-only ones take integers as f32, as Nx does).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{BinaryOp, Op, Strided, UnaryOp};
use crate::session::resolve_device;
use crate::shape::{broadcast_shapes, broadcast_strides, check_shape, names};
use crate::tensor::Tensor;

use super::{merge_number, run, Operand};

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name<'a>(&self, rhs: impl Into<Operand<'a>>) -> Result<Tensor> {
            self.binary_op(BinaryOp::$op, rhs.into())
        }
    )*};
}

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> Result<Tensor> {
            self.unary_op(UnaryOp::$op)
        }
    )*};
}

impl Tensor {
    /// Converts this tensor to `dtype` (the same tensor when it already has that dtype:
    /// tensors are immutable, so nothing is copied).
    pub fn as_type(&self, dtype: DType) -> Result<Tensor> {
        let device = resolve_device("as_type", None, &[self])?;
        self.prepared(dtype, device)
    }

    /// A rank-0 tensor of `dtype` holding a number literal, exactly when the dtype holds it.
    pub(super) fn literal(&self, number: Operand<'_>, dtype: DType) -> Result<Tensor> {
        let buffer = match number {
            Operand::Integer(v) => crate::buffer::with_dtype!(dtype, T => {
                use crate::element::Element;
                // merge_number chose a dtype that holds v; floats round as `as` does.
                let value = if dtype.is_float() { T::from_f64(v as f64) } else { T::from_i64(v as i64) };
                T::into_buffer(vec![value])
            }),
            Operand::Float(v) => crate::buffer::with_dtype!(dtype, T => {
                use crate::element::Element;
                T::into_buffer(vec![T::from_f64(v)])
            }),
            Operand::Tensor(t) => return Ok(t.clone()),
        };
        Tensor::from_host(buffer, Vec::new(), self.device())
    }

    fn binary_op(&self, op: BinaryOp, rhs: Operand<'_>) -> Result<Tensor> {
        let mut dtype = merge_number(self.dtype(), rhs).map_err(|e| match e {
            Error::InvalidArgument { message, .. } => Error::InvalidArgument {
                op: op.name(),
                message,
            },
            other => other,
        })?;
        let rhs = self.literal(rhs, dtype)?;
        let device = resolve_device(op.name(), None, &[self, &rhs])?;
        if op.needs_float() {
            dtype = dtype.to_float();
        }
        if op.integer_only() && dtype.is_float() {
            return Err(integer_only(op.name(), dtype));
        }
        if dtype.is_complex() && !op.defined_for_complex() {
            return Err(super::complex::not_for_complex(op.name(), 2, dtype));
        }
        let out_shape = broadcast_shapes(op.name(), self.shape(), rhs.shape())?;
        check_shape(op.name(), &out_shape, dtype)?;
        let out_names =
            names::broadcast(op.name(), &[&self.names(), &rhs.names()], out_shape.len())?;
        let (a, b) = (self.prepared(dtype, device)?, rhs.prepared(dtype, device)?);
        let kernel = Op::Binary {
            op,
            lhs: Strided {
                offset: 0,
                strides: broadcast_strides(a.shape(), &out_shape),
            },
            rhs: Strided {
                offset: 0,
                strides: broadcast_strides(b.shape(), &out_shape),
            },
            out_shape: out_shape.clone(),
        };
        Ok(run(device, kernel, &[&a, &b], out_shape)?.named(out_names))
    }

    binary_methods! {
        /// Elementwise `self + rhs` with broadcasting.
        add => Add,
        /// Elementwise `self - rhs` with broadcasting.
        subtract => Subtract,
        /// Elementwise `self * rhs` with broadcasting.
        multiply => Multiply,
        /// Elementwise `self / rhs`; integers are divided as f32, as in Nx.
        divide => Divide,
        /// Elementwise `self ^ rhs`.
        pow => Pow,
        /// Elementwise minimum (see `reduce_min` for the reduction).
        min => Min,
        /// Elementwise maximum (see `reduce_max` for the reduction).
        max => Max,
        /// Elementwise `==`, as u8 0/1.
        equal => Equal,
        /// Elementwise `!=`, as u8 0/1.
        not_equal => NotEqual,
        /// Elementwise `<`, as u8 0/1.
        less => Less,
        /// Elementwise `<=`, as u8 0/1.
        less_equal => LessEqual,
        /// Elementwise `>`, as u8 0/1.
        greater => Greater,
        /// Elementwise `>=`, as u8 0/1.
        greater_equal => GreaterEqual,
        /// The remainder of `self / rhs` with the sign of `self` (C's `fmod` on floats), as
        /// `Nx.remainder`; an integer by 0 gives `self`.
        remainder => Remainder,
        /// Integer division rounding toward zero, as `Nx.quotient`; floats are an error. An
        /// integer by 0 gives every bit set (-1 signed), as XLA.
        quotient => Quotient,
        /// The angle of the point `(rhs, self)` in (-π, π], as `Nx.atan2` (integers become f32).
        atan2 => Atan2,
        /// Bitwise and (integers only, as Nx).
        bitwise_and => BitwiseAnd,
        /// Bitwise or (integers only).
        bitwise_or => BitwiseOr,
        /// Bitwise exclusive or (integers only).
        bitwise_xor => BitwiseXor,
        /// `self << rhs` (integers only); shifting past the width gives 0.
        left_shift => LeftShift,
        /// `self >> rhs`, arithmetic on signed and logical on unsigned types (integers only);
        /// past the width, the sign fill.
        right_shift => RightShift,
    }

    fn unary_op(&self, op: UnaryOp) -> Result<Tensor> {
        let device = resolve_device(op.name(), None, &[self])?;
        if op.integer_only() && self.dtype().is_float() {
            return Err(integer_only(op.name(), self.dtype()));
        }
        let dtype = if op.needs_float() {
            self.dtype().to_float()
        } else {
            self.dtype()
        };
        if dtype.is_complex() && !op.defined_for_complex() {
            return Err(super::complex::not_for_complex(op.name(), 1, dtype));
        }
        let x = self.prepared(dtype, device)?;
        let out = run(device, Op::Unary(op), &[&x], self.shape().to_vec())?;
        // |z| of a complex number is real (Nx): the magnitude, computed as a complex value
        // with no imaginary part, then its real part.
        let out = if op == UnaryOp::Abs && dtype.is_complex() {
            out.as_type(dtype.to_real())?
        } else {
            out
        };
        Ok(out.named_like(self))
    }

    unary_methods! {
        /// `-x`.
        negate => Negate,
        /// `|x|`.
        abs => Abs,
        /// -1, 0 or 1.
        sign => Sign,
        /// `x * x`.
        square => Square,
        /// `e^x` (integers become f32).
        exp => Exp,
        /// Natural logarithm (integers become f32).
        log => Log,
        /// Square root (integers become f32).
        sqrt => Sqrt,
        /// `1/√x` (integers become f32).
        rsqrt => Rsqrt,
        /// Hyperbolic tangent (integers become f32).
        tanh => Tanh,
        /// Logistic sigmoid (integers become f32).
        sigmoid => Sigmoid,
        /// Sine (integers become f32).
        sin => Sin,
        /// Cosine (integers become f32).
        cos => Cos,
        /// Round down.
        floor => Floor,
        /// Round up.
        ceil => Ceil,
        /// Round half away from zero.
        round => Round,
        /// `e^x - 1`, exact for small `x` (integers become f32).
        expm1 => Expm1,
        /// `ln(1 + x)`, exact for small `x` (integers become f32).
        log1p => Log1p,
        /// Base-2 logarithm (integers become f32).
        log2 => Log2,
        /// Base-10 logarithm (integers become f32).
        log10 => Log10,
        /// Tangent (integers become f32).
        tan => Tan,
        /// Hyperbolic sine (integers become f32).
        sinh => Sinh,
        /// Hyperbolic cosine (integers become f32).
        cosh => Cosh,
        /// Inverse sine, NaN outside [-1, 1] (integers become f32).
        asin => Asin,
        /// Inverse cosine, NaN outside [-1, 1] (integers become f32).
        acos => Acos,
        /// Inverse tangent (integers become f32).
        atan => Atan,
        /// Inverse hyperbolic sine (integers become f32).
        asinh => Asinh,
        /// Inverse hyperbolic cosine, NaN below 1 (integers become f32).
        acosh => Acosh,
        /// Inverse hyperbolic tangent, ±inf at ±1 (integers become f32).
        atanh => Atanh,
        /// Cube root, negative for negative `x` (integers become f32).
        cbrt => Cbrt,
        /// The error function (integers become f32).
        erf => Erf,
        /// The complementary error function `1 - erf(x)`, exact in the tail (integers become f32).
        erfc => Erfc,
        /// The inverse error function: ±inf at ±1, NaN outside (integers become f32).
        erf_inv => ErfInv,
        /// Every bit flipped (integers only, as Nx).
        bitwise_not => BitwiseNot,
        /// The leading zero bits of each element, in its dtype (integers only).
        count_leading_zeros => CountLeadingZeros,
        /// The one bits of each element, in its dtype (integers only).
        population_count => PopulationCount,
    }

    /// The logarithm of each element to `base`, `ln x / ln base` (Nx's `log/2`; integers
    /// become f32).
    pub fn log_base(&self, base: f64) -> Result<Tensor> {
        if base <= 0.0 || base == 1.0 {
            return Err(Error::InvalidArgument {
                op: "log",
                message: format!(
                    "expected base to be greater than 0 and different than 1, got: {base}"
                ),
            });
        }
        self.log()?.divide(base.ln())
    }
}

/// The error Nx raises for a bitwise op or `quotient` on floats.
fn integer_only(op: &'static str, dtype: DType) -> Error {
    let who = if op == "quotient" {
        "quotient expects"
    } else {
        "bitwise operators expect"
    };
    Error::InvalidArgument {
        op,
        message: format!(
            "{who} integer tensors as inputs and outputs an integer tensor, got: {dtype}"
        ),
    }
}
