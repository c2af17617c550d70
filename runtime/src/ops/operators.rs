//! `+ - * /` and unary `-` as Rust operators, over `&Tensor`, `Tensor`, `Result<Tensor>` and
//! numbers, each the method of the same name (Nx's promotion, broadcasting and placement), so
//! that `(&x * 2.0 + &b)?` is one expression with one `?`. An operator returns the method's
//! `Result`: a shape or dtype error is a value, never a panic.
//!
//! What Rust's orphan rule allows, and so what works: a tensor (`&Tensor` or `Tensor`) with a
//! tensor, a result or a number on either side, and a `Result<Tensor>` with a tensor on its
//! right. A result beside a number (`&x * 2.0 + 1.0`) cannot be implemented here (neither
//! `Result` nor `f64` is this crate's): write `(&x * 2.0)? + 1.0`. candle chose the same shape of API for the same reason.
//! Comparisons and logical ops stay methods, as in Nx.
//!
//! Inside this file `std::ops::Add` and its kin are in scope, and a trait method taking
//! `self` by value would win method resolution over the inherent one taking `&self`: every
//! call here names the inherent method (`Tensor::add(&self, rhs)`). Cells do not import these
//! traits, so `t.add(x)` there stays the method.

use std::ops::{Add, Div, Mul, Neg, Sub};

use crate::error::Result;
use crate::tensor::Tensor;

use super::{merge_number, Operand};

/// `number op tensor`: the number becomes a weak scalar of the type both merge to (as a
/// method's number on the right does), then the op runs in its own order.
fn number_first<'a>(
    number: Operand<'a>,
    tensor: &Tensor,
    op: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let dtype = merge_number(tensor.dtype(), number)?;
    let scalar = tensor.literal(number, dtype)?;
    op(&scalar, tensor)
}

macro_rules! operator {
    ($trait:ident, $fn:ident, $method:ident) => {
        impl<'a, R: Into<Operand<'a>>> $trait<R> for &Tensor {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: R) -> Result<Tensor> {
                Tensor::$method(&self, rhs)
            }
        }

        impl<'a, R: Into<Operand<'a>>> $trait<R> for Tensor {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: R) -> Result<Tensor> {
                Tensor::$method(&self, rhs)
            }
        }

        impl $trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: Tensor) -> Result<Tensor> {
                Tensor::$method(&self, &rhs)
            }
        }

        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: Tensor) -> Result<Tensor> {
                Tensor::$method(&self, &rhs)
            }
        }

        impl $trait<Result<Tensor>> for &Tensor {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: Result<Tensor>) -> Result<Tensor> {
                Tensor::$method(&self, &rhs?)
            }
        }

        impl $trait<Result<Tensor>> for Tensor {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: Result<Tensor>) -> Result<Tensor> {
                Tensor::$method(&self, &rhs?)
            }
        }

        impl $trait<&Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: &Tensor) -> Result<Tensor> {
                Tensor::$method(&self?, rhs)
            }
        }

        impl $trait<Tensor> for Result<Tensor> {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: Tensor) -> Result<Tensor> {
                Tensor::$method(&self?, &rhs)
            }
        }

        // A number on the left only as Rust's literals default (f64, i32): with more types,
        // `2.0 - &x` would not know which `2.0` it is.
        operator!(@numbers $trait, $fn, $method: f64, i32);
    };
    (@numbers $trait:ident, $fn:ident, $method:ident: $($number:ty),*) => {$(
        impl $trait<&Tensor> for $number {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: &Tensor) -> Result<Tensor> {
                number_first(self.into(), rhs, |a, b| Tensor::$method(a, b))
            }
        }

        impl $trait<Tensor> for $number {
            type Output = Result<Tensor>;
            fn $fn(self, rhs: Tensor) -> Result<Tensor> {
                number_first(self.into(), &rhs, |a, b| Tensor::$method(a, b))
            }
        }

    )*};
}

operator!(Add, add, add);
operator!(Sub, sub, subtract);
operator!(Mul, mul, multiply);
operator!(Div, div, divide);

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::negate(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        Tensor::negate(&self)
    }
}
