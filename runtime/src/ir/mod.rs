//! The op IR: every operation a backend computes, as plain data with its static arguments,
//! and the scalar meaning of each elementwise op and reduction (so that the backends differ
//! only in how they loop; the cuda kernels restate it in `cuda/kernels.cu`). The frontend
//! (`ops/`) builds an [`Op`] after checking shapes, dtypes and placement; `jit` records them
//! and builds [`fused::Fused`] regions; backends compute them. Nothing here knows a backend or
//! a tensor.

pub mod conv;
pub mod elementwise;
pub mod fft;
pub mod fused;
pub mod indexed;
pub mod linalg;
pub mod sorting;
pub mod stepwise;

pub use conv::ConvDims;
pub use elementwise::{ArgOp, BinaryOp, MatmulDims, ReduceOp, Strided, UnaryOp};
pub use fft::Fft;
pub use indexed::ScatterMode;
pub use linalg::{Factorization, LinAlg};

use crate::dtype::DType;
use crate::shape::{numel, without_axes};

/// One operation of the op set with its static arguments: the whole op set, written once.
/// Shapes, axes and views are validated by the frontend (`ops/`) before an `Op` is built, so
/// a backend may rely on them being consistent with its inputs' lengths; it must still not
/// panic on any element value. Being plain data, an `Op` can be queued (the `sim` device runs
/// it later on its own thread) or recorded.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Elementwise `op` of two strided reads of one dtype over `out_shape`. Inputs: lhs, rhs.
    Binary {
        /// The elementwise op.
        op: BinaryOp,
        /// How the left operand is read.
        lhs: Strided,
        /// How the right operand is read.
        rhs: Strided,
        /// The (broadcast) shape of the result.
        out_shape: Vec<usize>,
    },
    /// Elementwise choice: `on_true` where the u8 predicate is not 0, else `on_false`, each
    /// read through its view over `out_shape`. Inputs: on_true, on_false (one dtype), pred.
    Select {
        /// How on_true, on_false and pred are read, in that order.
        views: [Strided; 3],
        /// The (broadcast) shape of the result.
        out_shape: Vec<usize>,
    },
    /// Elementwise `op`; float-only ops receive float memory. Input: x.
    Unary(UnaryOp),
    /// Every element converted to the dtype. Input: x.
    Cast(DType),
    /// Reduces the (sorted, distinct) `axes` of an input of `shape`. Input: x.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// The input's shape.
        shape: Vec<usize>,
        /// The axes reduced.
        axes: Vec<usize>,
    },
    /// Index of the extremum along `axis`, as s64. Input: x.
    ArgReduce {
        /// Which extremum.
        op: ArgOp,
        /// The input's shape.
        shape: Vec<usize>,
        /// The axis searched (not empty).
        axis: usize,
    },
    /// `batch` products `[m,k]·[k,n]`. Inputs: lhs, rhs.
    Matmul(MatmulDims),
    /// `batch` products `[k,m]ᵀ·[k,n]`: the left matrices are read transposed where they lie
    /// (a layer's weight gradient `xᵀ·g` reads the batch `x` in its own order instead of
    /// copying it or its gradient transposed first). Inputs: lhs (`[batch?, k, m]`), rhs.
    TransposedMatmul(MatmulDims),
    /// A general convolution ([`conv`]: layouts, padding, dilations, groups), float only.
    /// Inputs: input, kernel.
    Conv(Box<ConvDims>),
    /// The running `op` along `axis` of an input of `shape` (from the end when `reverse`):
    /// entry `k` combines entries `0..=k` (or `k..`). Input: x.
    Cumulative {
        /// The combining reduction.
        op: ReduceOp,
        /// The input's (and the result's) shape.
        shape: Vec<usize>,
        /// The axis scanned.
        axis: usize,
        /// Scan from the last entry back.
        reverse: bool,
    },
    /// The entries of every line along `axis` of an input of `shape` in order
    /// ([`sorting::in_direction`]: NaN after every number), or with `indices` the positions
    /// they came from along the axis, as s64, in a stable order (ties keep their order).
    /// Input: x.
    Sort {
        /// The input's (and the result's) shape.
        shape: Vec<usize>,
        /// The axis sorted.
        axis: usize,
        /// Largest first.
        descending: bool,
        /// The positions (s64) instead of the values.
        indices: bool,
    },
    /// The entries of x (read flat) at the s64 `positions` ([`indexed::gathered`]: 0 where a
    /// position is outside x); the result has the positions' element count. Inputs: x,
    /// positions.
    Gather {
        /// How many positions (the result's element count).
        count: usize,
    },
    /// A copy of target (read flat) with each update combined into it at its s64 position
    /// ([`ScatterMode`]); positions outside target are skipped. Inputs: target, positions,
    /// updates (one per position, target's dtype).
    Scatter(ScatterMode),
    /// Materialises a strided view into a new contiguous buffer. Input: x.
    CopyStrided {
        /// How the input is read.
        view: Strided,
        /// The view's shape.
        out_shape: Vec<usize>,
    },
    /// Gathers `indices` (in range) along `axis` of an input of `shape`. Input: x.
    Take {
        /// The input's shape.
        shape: Vec<usize>,
        /// Positions along `axis`.
        indices: Vec<usize>,
        /// The axis.
        axis: usize,
    },
    /// Joins inputs of the given shapes (equal but for `axis`). Inputs: one per shape.
    Concatenate {
        /// Each input's shape.
        shapes: Vec<Vec<usize>>,
        /// The axis joined along.
        axis: usize,
    },
    /// A copy of x with the block at `start` replaced by update (it fits). Inputs: x, update.
    PutSlice {
        /// The shape of x.
        shape: Vec<usize>,
        /// The shape of the update.
        update_shape: Vec<usize>,
        /// Where the update goes (already moved back so that it fits).
        start: Vec<usize>,
    },
    /// A factorisation or triangular solve of a batch of float matrices ([`linalg`]). Inputs:
    /// one or two per [`LinAlg::arity`].
    LinAlg(LinAlg),
    /// A discrete Fourier transform of each row of a complex `[rows, length]` input ([`fft`]).
    Fft(Fft),
    /// A region of elementwise ops, optionally reduced (built by `jit`). Inputs: one per
    /// [`fused::FusedInput`].
    Fused(std::sync::Arc<fused::Fused>),
}

impl Op {
    /// The op's name in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Binary { op, .. } => op.name(),
            Op::Select { .. } => "select",
            Op::Cumulative { op, .. } => match op {
                ReduceOp::Sum => "cumulative_sum",
                ReduceOp::Product => "cumulative_product",
                ReduceOp::Max => "cumulative_max",
                ReduceOp::Min => "cumulative_min",
            },
            Op::Unary(op) => op.name(),
            Op::Cast(_) => "as_type",
            Op::Reduce { .. } => "reduce",
            Op::ArgReduce {
                op: ArgOp::ArgMax, ..
            } => "argmax",
            Op::ArgReduce {
                op: ArgOp::ArgMin, ..
            } => "argmin",
            Op::Matmul(_) | Op::TransposedMatmul(_) => "dot",
            Op::Conv(_) => "conv",
            Op::CopyStrided { .. } => "copy",
            Op::Take { .. } => "take",
            Op::Sort { indices: false, .. } => "sort",
            Op::Sort { indices: true, .. } => "argsort",
            Op::Gather { .. } => "gather",
            Op::Scatter(ScatterMode::Add) => "indexed_add",
            Op::Scatter(ScatterMode::Put) => "indexed_put",
            Op::Concatenate { .. } => "concatenate",
            Op::PutSlice { .. } => "put_slice",
            Op::LinAlg(l) => l.name(),
            Op::Fft(f) if f.inverse => "ifft",
            Op::Fft(_) => "fft",
            Op::Fused(_) => "fused",
        }
    }

    /// How many inputs the op takes.
    pub fn arity(&self) -> usize {
        match self {
            Op::Binary { .. }
            | Op::Matmul(_)
            | Op::TransposedMatmul(_)
            | Op::Conv(_)
            | Op::PutSlice { .. }
            | Op::Gather { .. } => 2,
            Op::Scatter(_) => 3,
            Op::Concatenate { shapes, .. } => shapes.len(),
            Op::Select { .. } => 3,
            Op::Fused(f) => f.inputs.len(),
            Op::LinAlg(l) => l.arity(),
            _ => 1,
        }
    }

    /// The dtype of the result when the (first) input has dtype `input`.
    pub fn out_dtype(&self, input: DType) -> DType {
        match self {
            Op::Binary { op, .. } if op.is_comparison() => DType::U8,
            Op::Cast(to) => *to,
            Op::Fft(_) => input.to_complex(),
            Op::ArgReduce { .. } | Op::Sort { indices: true, .. } => DType::S64,
            Op::Fused(f) => f.out_dtype(),
            _ => input,
        }
    }

    /// The number of elements of the result when the (first) input has `input_len` elements.
    /// Shapes were validated by the frontend, so no product here can overflow; they saturate
    /// all the same.
    pub fn out_len(&self, input_len: usize) -> usize {
        let without = |shape: &[usize], axes: &[usize]| numel(&without_axes(shape, axes));
        match self {
            Op::Binary { out_shape, .. }
            | Op::CopyStrided { out_shape, .. }
            | Op::Select { out_shape, .. } => numel(out_shape),
            Op::Unary(_)
            | Op::Cast(_)
            | Op::PutSlice { .. }
            | Op::Cumulative { .. }
            | Op::Sort { .. }
            | Op::Scatter(_) => input_len,
            Op::Fft(f) => f.rows.saturating_mul(f.out_width()),
            Op::Gather { count } => *count,
            Op::Reduce { shape, axes, .. } => without(shape, axes),
            Op::ArgReduce { shape, axis, .. } => without(shape, &[*axis]),
            Op::Matmul(d) | Op::TransposedMatmul(d) => numel(&[d.batch, d.m, d.n]),
            Op::Conv(d) => numel(&d.out_shape()),
            Op::Take {
                shape,
                indices,
                axis,
            } => without(shape, &[*axis]).saturating_mul(indices.len()),
            Op::Concatenate { shapes, .. } => shapes
                .iter()
                .fold(0usize, |acc, s| acc.saturating_add(numel(s))),
            Op::LinAlg(l) => l.out_len(),
            Op::Fused(f) => f.out_len(),
        }
    }
}
