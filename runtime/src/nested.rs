//! Tensors written as nested Rust values: `Tensor::from_nested(vec![vec![1.0, 2.0], vec![3.0,
//! 4.0]])` and the `tensor!` literal (`tensor![[1.0, 2.0], [3.0, 4.0]]`, Nx's `~MAT`). Nested
//! arrays have their shape in their type; nested `Vec`s are checked for ragged rows.

use crate::create::Factory;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// A value that is a tensor's elements: a number, or an array, `Vec` or slice of such values
/// (every one of the same shape).
pub trait Nested {
    /// The element type at the bottom.
    type Elem: Element;
    /// Appends the dimensions below this level to `shape` (the first entry's, for a list).
    fn shape_into(&self, shape: &mut Vec<usize>);
    /// Appends the elements in row-major order, checking every entry against `shape`.
    fn flatten_into(&self, shape: &[usize], out: &mut Vec<Self::Elem>) -> Result<()>;
}

macro_rules! nested_scalar {
    ($($t:ty),*) => {$(
        impl Nested for $t {
            type Elem = $t;
            fn shape_into(&self, _: &mut Vec<usize>) {}
            fn flatten_into(&self, shape: &[usize], out: &mut Vec<$t>) -> Result<()> {
                if !shape.is_empty() {
                    return Err(ragged(shape, &[]));
                }
                out.push(*self);
                Ok(())
            }
        }
    )*};
}
nested_scalar!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

impl<U: Nested> Nested for [U] {
    type Elem = U::Elem;
    fn shape_into(&self, shape: &mut Vec<usize>) {
        shape.push(self.len());
        if let Some(first) = self.first() {
            first.shape_into(shape);
        }
    }
    fn flatten_into(&self, shape: &[usize], out: &mut Vec<U::Elem>) -> Result<()> {
        match shape.split_first() {
            Some((&len, rest)) if len == self.len() => self
                .iter()
                .try_for_each(|entry| entry.flatten_into(rest, out)),
            _ => Err(ragged(shape, &[self.len()])),
        }
    }
}

impl<U: Nested, const N: usize> Nested for [U; N] {
    type Elem = U::Elem;
    fn shape_into(&self, shape: &mut Vec<usize>) {
        self.as_slice().shape_into(shape)
    }
    fn flatten_into(&self, shape: &[usize], out: &mut Vec<U::Elem>) -> Result<()> {
        self.as_slice().flatten_into(shape, out)
    }
}

impl<U: Nested> Nested for Vec<U> {
    type Elem = U::Elem;
    fn shape_into(&self, shape: &mut Vec<usize>) {
        self.as_slice().shape_into(shape)
    }
    fn flatten_into(&self, shape: &[usize], out: &mut Vec<U::Elem>) -> Result<()> {
        self.as_slice().flatten_into(shape, out)
    }
}

fn ragged(expected: &[usize], found: &[usize]) -> Error {
    Error::InvalidArgument {
        op: "from_nested",
        message: format!(
            "the nested lists are ragged: an entry of shape {found:?}... where the first \
             entries give {expected:?}"
        ),
    }
}

impl Factory {
    /// A tensor of the nested value's shape and element type (`f64` stays f64).
    pub fn from_nested<N: Nested + ?Sized>(&self, value: &N) -> Result<Tensor> {
        let mut shape = Vec::new();
        value.shape_into(&mut shape);
        let mut data = Vec::new();
        value.flatten_into(&shape, &mut data)?;
        self.from_vec(data, &shape)
    }

    /// A tensor written as a literal (what the `tensor!` macro expands to): as Nx's
    /// literals, floats become f32 and integers s32 unless `dtype` names another type.
    pub fn literal<N: Nested + ?Sized>(&self, value: &N, dtype: Option<DType>) -> Result<Tensor> {
        let t = self.from_nested(value)?;
        let dtype = dtype.unwrap_or(match t.dtype() {
            DType::F64 => DType::F32,
            DType::S64 => DType::S32,
            other => other,
        });
        t.as_type(dtype)
    }
}

impl Tensor {
    /// See [`Factory::from_nested`] (on the session default device).
    pub fn from_nested<N: Nested + ?Sized>(value: &N) -> Result<Tensor> {
        Factory::session_default().from_nested(value)
    }
}

// `Tensor::try_from(vec![vec![1.0, 2.0], vec![3.0, 4.0]])?` and `vec![..].try_into()?`, as
// `from_nested`: the dtype is the Rust element type's, and ragged rows are an error (hence
// `TryFrom`, not `From`).
impl<U: Nested> TryFrom<Vec<U>> for Tensor {
    type Error = Error;
    fn try_from(value: Vec<U>) -> Result<Tensor> {
        Tensor::from_nested(&value)
    }
}

impl<U: Nested, const N: usize> TryFrom<[U; N]> for Tensor {
    type Error = Error;
    fn try_from(value: [U; N]) -> Result<Tensor> {
        Tensor::from_nested(&value)
    }
}

impl<U: Nested> TryFrom<&[U]> for Tensor {
    type Error = Error;
    fn try_from(value: &[U]) -> Result<Tensor> {
        Tensor::from_nested(value)
    }
}

/// What the `tensor!` macro expands to: the literal on the session default device, in the dtype
/// named (`"f64"`, `"u8"`, ...) or Nx's default for its kind.
#[doc(hidden)]
pub fn literal_tensor<N: Nested + ?Sized>(value: &N, dtype: Option<&str>) -> Result<Tensor> {
    let dtype = dtype
        .map(|name| {
            DType::parse(name).ok_or_else(|| Error::InvalidArgument {
                op: "tensor!",
                message: format!(
                    "{name} is not a dtype (u8, u16, u32, u64, s8, s16, s32, s64, bf16, f16, f32 or f64)"
                ),
            })
        })
        .transpose()?;
    Factory::session_default().literal(value, dtype)
}
