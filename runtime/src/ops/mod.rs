//! The op set as methods on `Tensor`. Each op validates shapes, dtypes and axes (every result
//! shape passes `check_shape`), asks [`resolve_device`] where to run, moves weak operands there
//! and converts dtypes as Nx does, then hands an [`Op`] to [`dispatch`], which checks
//! placement once. Nothing here loops over elements.
//!
//! Where tensorbook deliberately differs from Nx, the method's docs say so.
//!
//! One family per file, as in `ir/` and `backend/host/`: `elementwise.rs` (casts, the binary
//! and unary ops with Nx's promotion), `reduce.rs` (reductions, index reductions and those
//! composed of them), `logical.rs` (logical ops, `is_nan`, `clip`, `all_close`), `matmul.rs`
//! (`dot`), `shape.rs` (reshape, flatten, transpose, tile, reverse, slices, splits, joins,
//! gathers, batches), `pad.rs` (`pad`, `pad_outer`, `reflect`), `cumulative.rs` (scans and
//! `diff`), `sort.rs` (`sort`, `argsort`, `top_k`, `median`, `mode`), `indexed.rs`
//! (`take_along_axis`, `gather`, `indexed_add`, `indexed_put` by flat positions). This file holds
//! what they share: operands, number literals, and `run`.

pub(crate) mod axes;
mod complex;
pub(crate) mod conv;
mod cumulative;
mod diagonal;
mod elementwise;
pub(crate) mod fft;
mod indexed;
pub(crate) mod linalg;
mod logical;
mod matmul;
pub(crate) mod names;
mod operators;
pub(crate) mod pad;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod sort;
pub(crate) mod spatial;
pub(crate) mod window;

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{Op, Strided};
use crate::memory::{dispatch, Memory};
use crate::session::resolve_device;
use crate::shape::check_shape;
use crate::tensor::{Tensor, Value};

/// The right-hand side of an elementwise op: a tensor, or a Rust number that becomes a weakly
/// typed scalar. The number's type merges with the tensor's as `Nx.Type.merge_number` does:
/// the tensor keeps its type when the number fits it, an integer that does not fit widens it
/// (`u8 + 300` is u16, `u8 + -1` is s16, `s32 + 3_000_000_000` is s64), and a float makes an
/// integer tensor f32.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// A tensor.
    Tensor(&'a Tensor),
    /// An integer literal, kept exact (no trip through f64).
    Integer(i128),
    /// A float literal.
    Float(f64),
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}

macro_rules! number_operand {
    ($variant:ident: $($t:ty),*) => {$(
        impl From<$t> for Operand<'_> {
            fn from(v: $t) -> Self {
                Operand::$variant(v.into())
            }
        }
    )*};
}
number_operand!(Float: f64, f32);
number_operand!(Integer: i64, i32, i16, i8, u8, u16, u32, u64);

impl From<usize> for Operand<'_> {
    fn from(v: usize) -> Self {
        // usize is at most 64 bits on every target Rust supports.
        Operand::Integer(v as i128)
    }
}

/// The dtype a number literal and a tensor of `dtype` meet in (`Nx.Type.merge_number`, mapped
/// onto tensorbook's dtypes), or an error for an integer no dtype holds.
pub fn merge_number(dtype: DType, number: Operand<'_>) -> Result<DType> {
    let too_wide = |v: i128| {
        Error::InvalidArgument {
        op: "number",
        message: format!(
            "the integer {v} fits no integer dtype (s64 and u64 are the widest); write it as a float"
        ),
    }
    };
    match number {
        Operand::Tensor(t) => Ok(dtype.promote(t.dtype())),
        _ if dtype.is_float() => Ok(dtype),
        Operand::Float(_) => Ok(DType::F32),
        // An unsigned tensor keeps its kind for a non-negative number (widening to hold it);
        // a negative one makes it signed at twice its width, as Nx's `merge_number` does.
        Operand::Integer(v) if dtype.is_unsigned() && v >= 0 => {
            [DType::U8, DType::U16, DType::U32, DType::U64]
                .into_iter()
                .find(|&d| d.bits() >= dtype.bits() && fits(v, d))
                .ok_or_else(|| too_wide(v))
        }
        Operand::Integer(v) => {
            let at_least = if dtype.is_unsigned() {
                (dtype.bits() * 2).min(64)
            } else {
                dtype.bits()
            };
            [DType::S8, DType::S16, DType::S32, DType::S64]
                .into_iter()
                .find(|&d| d.bits() >= at_least && fits(v, d))
                .ok_or_else(|| too_wide(v))
        }
    }
}

/// True when the integer `v` is a value of the integer dtype `d`.
fn fits(v: i128, d: DType) -> bool {
    match d {
        DType::U8 => u8::try_from(v).is_ok(),
        DType::U16 => u16::try_from(v).is_ok(),
        DType::U32 => u32::try_from(v).is_ok(),
        DType::U64 => u64::try_from(v).is_ok(),
        DType::S8 => i8::try_from(v).is_ok(),
        DType::S16 => i16::try_from(v).is_ok(),
        DType::S32 => i32::try_from(v).is_ok(),
        DType::S64 => i64::try_from(v).is_ok(),
        DType::BF16 | DType::F16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 => true,
    }
}

/// What happens to the last, incomplete batch in [`Tensor::to_batched`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Fill it with entries from the start of the tensor (Nx's `:repeat`).
    Repeat,
    /// Drop it (Nx's `:discard`).
    Discard,
}

/// Runs `op` on `device` over operands already moved there and wraps the result of `shape`.
/// Inside a jit function (an operand is a placeholder) the op is recorded instead. Placement
/// is checked once, by `memory::dispatch`: an operand elsewhere is its typed error.
pub(crate) fn run(
    device: Device,
    op: Op,
    operands: &[&Tensor],
    shape: Vec<usize>,
) -> Result<Tensor> {
    let values = operands
        .iter()
        .map(|t| t.value())
        .collect::<Result<Vec<_>>>()?;
    if crate::jit::trace::any_placeholder(&values) {
        return crate::jit::trace::record(device, op, operands, &values, shape);
    }
    let memories: Vec<&Memory> = values.iter().filter_map(Value::memory).collect();
    let out = dispatch(device, &op, &memories)?;
    Tensor::from_memory(out, shape, device)
}

impl Tensor {
    /// This tensor on `device` (moved there if it is a weak operand) and of `dtype`.
    pub(super) fn prepared(&self, dtype: DType, device: Device) -> Result<Tensor> {
        let here = self.to_device(device)?;
        if here.dtype() == dtype {
            return Ok(here);
        }
        let shape = here.shape().to_vec();
        Ok(run(device, Op::Cast(dtype), &[&here], shape)?.named_like(self))
    }

    /// Materialises a strided view of this tensor on its device.
    pub(super) fn view(
        &self,
        op: &'static str,
        view: Strided,
        shape: Vec<usize>,
    ) -> Result<Tensor> {
        check_shape(op, &shape, self.dtype())?;
        let device = resolve_device(op, None, &[self])?;
        run(
            device,
            Op::CopyStrided {
                view,
                out_shape: shape.clone(),
            },
            &[self],
            shape,
        )
    }
}
