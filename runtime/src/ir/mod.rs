//! The op IR: every operation a backend computes, as plain data with its static arguments,
//! and the scalar meaning of each elementwise op and reduction (so that the backends differ
//! only in how they loop; the cuda kernels restate it in `cuda/kernels.cu`). The frontend
//! (`ops.rs`) builds an [`Op`] after checking shapes, dtypes and placement; `jit` records them
//! and builds [`fused::Fused`] regions; backends compute them. Nothing here knows a backend or
//! a tensor.

pub mod fused;

use crate::dtype::DType;
use crate::element::{Element, Float};
use crate::shape::{numel, without_axes};

/// Elementwise ops of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Subtract,
    /// a * b
    Multiply,
    /// a / b (floats only: the frontend converts integers first, as Nx does)
    Divide,
    /// a ^ b
    Pow,
    /// min(a, b)
    Min,
    /// max(a, b)
    Max,
    /// a == b, as u8
    Equal,
    /// a != b, as u8
    NotEqual,
    /// a < b, as u8
    Less,
    /// a <= b, as u8
    LessEqual,
    /// a > b, as u8
    Greater,
    /// a >= b, as u8
    GreaterEqual,
}

impl BinaryOp {
    /// Every elementwise op of two operands.
    pub const ALL: [BinaryOp; 13] = [
        BinaryOp::Add,
        BinaryOp::Subtract,
        BinaryOp::Multiply,
        BinaryOp::Divide,
        BinaryOp::Pow,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Equal,
        BinaryOp::NotEqual,
        BinaryOp::Less,
        BinaryOp::LessEqual,
        BinaryOp::Greater,
        BinaryOp::GreaterEqual,
    ];

    /// The op's name in error messages.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Subtract => "subtract",
            BinaryOp::Multiply => "multiply",
            BinaryOp::Divide => "divide",
            BinaryOp::Pow => "pow",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
            BinaryOp::Equal => "equal",
            BinaryOp::NotEqual => "not_equal",
            BinaryOp::Less => "less",
            BinaryOp::LessEqual => "less_equal",
            BinaryOp::Greater => "greater",
            BinaryOp::GreaterEqual => "greater_equal",
        }
    }

    /// True for the ops that return u8 truth values.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Equal
                | BinaryOp::NotEqual
                | BinaryOp::Less
                | BinaryOp::LessEqual
                | BinaryOp::Greater
                | BinaryOp::GreaterEqual
        )
    }

    /// The arithmetic meaning (not for comparisons).
    #[inline(always)]
    pub fn arith<T: Element>(self, a: T, b: T) -> T {
        match self {
            BinaryOp::Add => a.add(b),
            BinaryOp::Subtract => a.sub(b),
            BinaryOp::Multiply => a.mul(b),
            BinaryOp::Divide => a.div(b),
            BinaryOp::Pow => a.pow(b),
            // NaN propagates, as in Nx. `|`, not `||`: no branch, so loops over these
            // become vector compares and blends.
            BinaryOp::Min => {
                if a.is_nan() | (a < b) {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Max => {
                if a.is_nan() | (a > b) {
                    a
                } else {
                    b
                }
            }
            _ => a,
        }
    }

    /// The comparison meaning, as 0 or 1.
    #[inline(always)]
    pub fn compare<T: Element>(self, a: T, b: T) -> u8 {
        (match self {
            BinaryOp::Equal => a == b,
            BinaryOp::NotEqual => a != b,
            BinaryOp::Less => a < b,
            BinaryOp::LessEqual => a <= b,
            BinaryOp::Greater => a > b,
            BinaryOp::GreaterEqual => a >= b,
            _ => false,
        }) as u8
    }
}

/// Elementwise ops of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// -x
    Negate,
    /// |x|
    Abs,
    /// -1, 0 or 1
    Sign,
    /// x * x
    Square,
    /// e^x (float)
    Exp,
    /// ln x (float)
    Log,
    /// √x (float)
    Sqrt,
    /// 1/√x (float)
    Rsqrt,
    /// tanh x (float)
    Tanh,
    /// 1/(1+e^-x) (float)
    Sigmoid,
    /// sin x (float)
    Sin,
    /// cos x (float)
    Cos,
    /// ⌊x⌋ (identity on integers)
    Floor,
    /// ⌈x⌉ (identity on integers)
    Ceil,
    /// round half away from zero (identity on integers)
    Round,
}

impl UnaryOp {
    /// Every elementwise op of one operand.
    pub const ALL: [UnaryOp; 15] = [
        UnaryOp::Negate,
        UnaryOp::Abs,
        UnaryOp::Sign,
        UnaryOp::Square,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
    ];

    /// The op's name in error messages.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Negate => "negate",
            UnaryOp::Abs => "abs",
            UnaryOp::Sign => "sign",
            UnaryOp::Square => "square",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
        }
    }

    /// Ops defined only on floats: the frontend converts integer inputs to f32 first (Nx).
    pub fn needs_float(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Sin
                | UnaryOp::Cos
        )
    }

    /// The meaning on any element type (float-only ops are the identity here).
    #[inline(always)]
    pub fn apply<T: Element>(self, x: T) -> T {
        match self {
            UnaryOp::Negate => x.neg(),
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sign => {
                if x > T::ZERO {
                    T::ONE
                } else if x < T::ZERO {
                    T::ONE.neg()
                } else {
                    x
                }
            }
            UnaryOp::Square => x.mul(x),
            _ => x,
        }
    }

    /// The meaning on floats.
    #[inline(always)]
    pub fn apply_float<T: Float>(self, x: T) -> T {
        match self {
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => T::ONE.div(x.sqrt()),
            UnaryOp::Tanh => x.tanh(),
            // e^x / (1 + e^x) below 0: e^-x would overflow past x = -88.7 (f32) and make
            // every smaller result 0 instead of a tiny number.
            UnaryOp::Sigmoid => {
                let e = x.abs().neg().exp();
                let numerator = if x < T::ZERO { e } else { T::ONE };
                numerator.div(T::ONE.add(e))
            }
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => x.round(),
            other => other.apply(x),
        }
    }
}

/// Reductions over axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Σ
    Sum,
    /// Π
    Product,
    /// maximum
    Max,
    /// minimum
    Min,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 4] = [
        ReduceOp::Sum,
        ReduceOp::Product,
        ReduceOp::Max,
        ReduceOp::Min,
    ];

    /// The identity element.
    pub fn identity<T: Element>(self) -> T {
        match self {
            ReduceOp::Sum => T::ZERO,
            ReduceOp::Product => T::ONE,
            ReduceOp::Max => T::LOWEST,
            ReduceOp::Min => T::HIGHEST,
        }
    }

    /// Combines an accumulator with one element.
    #[inline(always)]
    pub fn combine<T: Element>(self, acc: T, x: T) -> T {
        match self {
            ReduceOp::Sum => acc.add(x),
            ReduceOp::Product => acc.mul(x),
            ReduceOp::Max => BinaryOp::Max.arith(acc, x),
            ReduceOp::Min => BinaryOp::Min.arith(acc, x),
        }
    }
}

/// Index-of-extremum reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgOp {
    /// Index of the (first) maximum.
    ArgMax,
    /// Index of the (first) minimum.
    ArgMin,
}

impl ArgOp {
    /// True when `x` should replace the current best `best` (ties keep the first).
    #[inline(always)]
    pub fn better<T: Element>(self, x: T, best: T) -> bool {
        match self {
            ArgOp::ArgMax => x > best || (x.is_nan() && !best.is_nan()),
            ArgOp::ArgMin => x < best || (x.is_nan() && !best.is_nan()),
        }
    }
}

/// A strided read of a buffer: element `coords` of the view is `offset + Σ coords[i]*strides[i]`.
/// Transposes, slices and broadcasts are all such views.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    /// First element.
    pub offset: usize,
    /// Step per axis of the view's shape (0 for a broadcast axis).
    pub strides: Vec<usize>,
}

impl Strided {
    /// The plain row-major reading of a contiguous tensor of `shape`.
    pub fn contiguous(shape: &[usize]) -> Strided {
        Strided {
            offset: 0,
            strides: crate::shape::strides(shape),
        }
    }

    /// True when this view reads a tensor of `shape` in plain row-major order from its first
    /// element (axes of length 1 may have any stride): a backend can then read it as a slice.
    pub fn is_contiguous(&self, shape: &[usize]) -> bool {
        self.offset == 0
            && shape
                .iter()
                .zip(self.strides.iter().zip(crate::shape::strides(shape)))
                .all(|(&d, (&s, c))| d == 1 || s == c)
    }
}

/// The dimensions of a (batched) matrix product: `batch` products `[m,k]·[k,n]`, operand `i`
/// of the batch starting `i * stride` elements in (a stride of 0 reuses one matrix for the
/// whole batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulDims {
    /// Elements between consecutive left matrices.
    pub lhs_batch_stride: usize,
    /// Elements between consecutive right matrices.
    pub rhs_batch_stride: usize,
    /// Number of products.
    pub batch: usize,
    /// Rows of the left matrices.
    pub m: usize,
    /// The contracted dimension.
    pub k: usize,
    /// Columns of the right matrices.
    pub n: usize,
}

/// One operation of the op set with its static arguments: the whole op set, written once.
/// Shapes, axes and views are validated by the frontend (`ops.rs`) before an `Op` is built, so
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
    /// A region of elementwise ops, optionally reduced (built by `jit`). Inputs: one per
    /// [`fused::FusedInput`].
    Fused(std::sync::Arc<fused::Fused>),
}

impl Op {
    /// The op's name in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Binary { op, .. } => op.name(),
            Op::Unary(op) => op.name(),
            Op::Cast(_) => "as_type",
            Op::Reduce { .. } => "reduce",
            Op::ArgReduce {
                op: ArgOp::ArgMax, ..
            } => "argmax",
            Op::ArgReduce {
                op: ArgOp::ArgMin, ..
            } => "argmin",
            Op::Matmul(_) => "dot",
            Op::CopyStrided { .. } => "copy",
            Op::Take { .. } => "take",
            Op::Concatenate { .. } => "concatenate",
            Op::PutSlice { .. } => "put_slice",
            Op::Fused(_) => "fused",
        }
    }

    /// How many inputs the op takes.
    pub fn arity(&self) -> usize {
        match self {
            Op::Binary { .. } | Op::Matmul(_) | Op::PutSlice { .. } => 2,
            Op::Concatenate { shapes, .. } => shapes.len(),
            Op::Fused(f) => f.inputs.len(),
            _ => 1,
        }
    }

    /// The dtype of the result when the (first) input has dtype `input`.
    pub fn out_dtype(&self, input: DType) -> DType {
        match self {
            Op::Binary { op, .. } if op.is_comparison() => DType::U8,
            Op::Cast(to) => *to,
            Op::ArgReduce { .. } => DType::S64,
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
            Op::Binary { out_shape, .. } | Op::CopyStrided { out_shape, .. } => numel(out_shape),
            Op::Unary(_) | Op::Cast(_) | Op::PutSlice { .. } => input_len,
            Op::Reduce { shape, axes, .. } => without(shape, axes),
            Op::ArgReduce { shape, axis, .. } => without(shape, &[*axis]),
            Op::Matmul(d) => numel(&[d.batch, d.m, d.n]),
            Op::Take {
                shape,
                indices,
                axis,
            } => without(shape, &[*axis]).saturating_mul(indices.len()),
            Op::Concatenate { shapes, .. } => shapes
                .iter()
                .fold(0usize, |acc, s| acc.saturating_add(numel(s))),
            Op::Fused(f) => f.out_len(),
        }
    }
}
