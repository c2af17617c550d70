//! `Fused`: a region of elementwise ops (and optionally one reduction over their result)
//! handed to a backend as one op of the op set, so that a backend able to compute it in one
//! pass (host: cache-sized blocks, no full-size intermediates) can, and every other backend
//! runs it step by step with its own ops ([`run_stepwise`]), which is also the reference the
//! fused code is checked against.
//!
//! `jit` builds these from traced graphs (`crate::jit::fuse`); nothing else does.

use super::elementwise::{BinaryOp, ReduceOp, Strided, UnaryOp};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::{numel, without_axes};

/// The dtypes a fused region may hold: the floats, and the integers numerical programs compute
/// in (u8 masks and images, u32 random bits, s32 and s64 indices). The host compiles every
/// step for every pair of them (casts) twice (with and without AVX2); all ten dtypes took the
/// runtime's optimised build from 1.5 to 4.6 minutes on two cores, so ops on u16, u64, s8 and
/// s16 run one op at a time instead.
pub const FUSED_DTYPES: [DType; 6] = [
    DType::U8,
    DType::U32,
    DType::S32,
    DType::S64,
    DType::F32,
    DType::F64,
];

/// True when a fused region may compute in `dtype` (see [`FUSED_DTYPES`]).
pub fn fuses(dtype: DType) -> bool {
    FUSED_DTYPES.contains(&dtype)
}

/// How one input of a fused region is read over the region's shape.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedInput {
    /// The input's dtype.
    pub dtype: DType,
    /// Element `coords` of the region reads input element `offset + Σ coords·strides` (a
    /// broadcast has stride 0).
    pub view: Strided,
}

/// What a step computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOp {
    /// An elementwise op of two operands of one dtype.
    Binary(BinaryOp),
    /// An elementwise op of one operand (float-only ops get float operands).
    Unary(UnaryOp),
    /// A conversion to the dtype.
    Cast(DType),
}

/// An operand of a step: an input of the region, or the result of an earlier step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg {
    /// Input `i` of the region, read through its view.
    Input(usize),
    /// The result of step `j` (`j` before the step that reads it).
    Step(usize),
}

/// One elementwise op of the region.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The op.
    pub op: StepOp,
    /// One operand for unary ops and casts, two for binary ops.
    pub args: Vec<Arg>,
    /// The dtype of the result.
    pub dtype: DType,
}

/// A fused region: steps over `shape`, the last one its result, reduced over `reduce` if set.
#[derive(Clone, Debug, PartialEq)]
pub struct Fused {
    /// The inputs, in the order the op receives their memory.
    pub inputs: Vec<FusedInput>,
    /// The steps, in an order where every operand comes first.
    pub steps: Vec<Step>,
    /// The shape every step computes over.
    pub shape: Vec<usize>,
    /// A reduction of the last step's result over these (sorted, distinct) axes of `shape`.
    pub reduce: Option<(ReduceOp, Vec<usize>)>,
}

impl Fused {
    /// The dtype of the result.
    pub fn out_dtype(&self) -> DType {
        self.steps.last().map(|s| s.dtype).unwrap_or(DType::F32)
    }

    /// The number of elements of the result.
    pub fn out_len(&self) -> usize {
        match &self.reduce {
            None => numel(&self.shape),
            Some((_, axes)) => numel(&without_axes(&self.shape, axes)),
        }
    }

    /// Checks what a backend relies on: operands that exist and come first, one or two of
    /// them as the op needs, views within the shape's rank. (Built by `jit` only, but a
    /// backend must not index out of range whatever it is given.)
    pub fn validate(&self) -> Result<()> {
        let bad = |message: String| Error::InvalidArgument {
            op: "fused",
            message: format!("internal: {message}"),
        };
        if self.steps.is_empty() {
            return Err(bad("a fused region without steps".into()));
        }
        for input in &self.inputs {
            if input.view.strides.len() != self.shape.len() {
                return Err(bad("an input view of another rank than the region".into()));
            }
        }
        let dtypes = self.inputs.iter().map(|x| x.dtype);
        if let Some(d) = dtypes
            .chain(self.steps.iter().map(|s| s.dtype))
            .find(|&d| !fuses(d))
        {
            return Err(bad(format!("a fused region computing in {d}")));
        }
        for (k, step) in self.steps.iter().enumerate() {
            let want = match step.op {
                StepOp::Binary(_) => 2,
                _ => 1,
            };
            if step.args.len() != want {
                return Err(bad(format!("step {k} has {} operands", step.args.len())));
            }
            for arg in &step.args {
                match *arg {
                    Arg::Input(i) if i < self.inputs.len() => {}
                    Arg::Step(j) if j < k => {}
                    other => return Err(bad(format!("step {k} reads {other:?}"))),
                }
            }
        }
        if let Some((_, axes)) = &self.reduce {
            if axes.iter().any(|&a| a >= self.shape.len()) {
                return Err(bad("a reduced axis out of range".into()));
            }
        }
        Ok(())
    }

    /// The dtype of an operand.
    pub fn arg_dtype(&self, arg: Arg) -> DType {
        match arg {
            Arg::Input(i) => self.inputs.get(i).map(|x| x.dtype),
            Arg::Step(j) => self.steps.get(j).map(|s| s.dtype),
        }
        .unwrap_or(DType::F32)
    }
}
