//! Backends: one op set, implemented once per place of computation. `binary` is the reference
//! (plain loops, one thread); `host` is the optimised CPU; `cuda` runs on NVIDIA GPUs through
//! cudarc. The scalar meaning of each op lives here, next to the op enums, so that the backends
//! differ only in how they loop (the cuda kernels restate it in `cuda/kernels.cu`).

/// Matches two buffers that must share a dtype, binding their typed vectors.
macro_rules! same_dtype {
    ($op:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            ($crate::buffer::Buffer::U8($x), $crate::buffer::Buffer::U8($y)) => $body,
            ($crate::buffer::Buffer::S32($x), $crate::buffer::Buffer::S32($y)) => $body,
            ($crate::buffer::Buffer::S64($x), $crate::buffer::Buffer::S64($y)) => $body,
            ($crate::buffer::Buffer::F32($x), $crate::buffer::Buffer::F32($y)) => $body,
            ($crate::buffer::Buffer::F64($x), $crate::buffer::Buffer::F64($y)) => $body,
            (a, b) => return Err($crate::backend::dtype_mix($op, a.dtype(), b.dtype())),
        }
    };
}

/// Runs `$body` with `$f` bound to a closure for one fixed `BinaryOp`, so that each op gets its
/// own monomorphised (and vectorisable) loop instead of a `match` per element. `$arith` is for
/// ops returning the element type, `$cmp` for comparisons returning u8.
macro_rules! with_binary_op {
    ($op:expr, $f:ident => arith $arith:expr, cmp $cmp:expr) => {{
        use $crate::backend::BinaryOp as B;
        match $op {
            B::Add => {
                let $f = |x, y| B::Add.arith(x, y);
                $arith
            }
            B::Subtract => {
                let $f = |x, y| B::Subtract.arith(x, y);
                $arith
            }
            B::Multiply => {
                let $f = |x, y| B::Multiply.arith(x, y);
                $arith
            }
            B::Divide => {
                let $f = |x, y| B::Divide.arith(x, y);
                $arith
            }
            B::Pow => {
                let $f = |x, y| B::Pow.arith(x, y);
                $arith
            }
            B::Min => {
                let $f = |x, y| B::Min.arith(x, y);
                $arith
            }
            B::Max => {
                let $f = |x, y| B::Max.arith(x, y);
                $arith
            }
            B::Equal => {
                let $f = |x, y| B::Equal.compare(x, y);
                $cmp
            }
            B::NotEqual => {
                let $f = |x, y| B::NotEqual.compare(x, y);
                $cmp
            }
            B::Less => {
                let $f = |x, y| B::Less.compare(x, y);
                $cmp
            }
            B::LessEqual => {
                let $f = |x, y| B::LessEqual.compare(x, y);
                $cmp
            }
            B::Greater => {
                let $f = |x, y| B::Greater.compare(x, y);
                $cmp
            }
            B::GreaterEqual => {
                let $f = |x, y| B::GreaterEqual.compare(x, y);
                $cmp
            }
        }
    }};
}

/// The routing from an [`Op`] to a backend's per-op methods of the usual names (`binary`,
/// `unary`, `cast`, ...), over whatever memory type the backend computes on: written once for
/// binary, host and cuda.
macro_rules! route_op {
    ($self:ident, $op:expr, $given:expr) => {{
        let given = $given;
        let op: &$crate::backend::Op = $op;
        use $crate::backend::Op;
        match op {
            Op::Binary {
                op: b,
                lhs,
                rhs,
                out_shape,
            } => {
                let [x, y] = $crate::backend::op_inputs(op, given)?;
                $self.binary(*b, (x, lhs), (y, rhs), out_shape)
            }
            Op::Unary(u) => {
                let [x] = $crate::backend::op_inputs(op, given)?;
                $self.unary(*u, x)
            }
            Op::Cast(to) => {
                let [x] = $crate::backend::op_inputs(op, given)?;
                $self.cast(x, *to)
            }
            Op::Reduce { op: r, shape, axes } => {
                let [x] = $crate::backend::op_inputs(op, given)?;
                $self.reduce(*r, x, shape, axes)
            }
            Op::ArgReduce { op: a, shape, axis } => {
                let [x] = $crate::backend::op_inputs(op, given)?;
                $self.arg_reduce(*a, x, shape, *axis)
            }
            Op::Matmul {
                lhs_batch_stride,
                rhs_batch_stride,
                batch,
                m,
                k,
                n,
            } => {
                let [x, y] = $crate::backend::op_inputs(op, given)?;
                $self.matmul(
                    x,
                    *lhs_batch_stride,
                    y,
                    *rhs_batch_stride,
                    *batch,
                    *m,
                    *k,
                    *n,
                )
            }
            Op::CopyStrided { view, out_shape } => {
                let [x] = $crate::backend::op_inputs(op, given)?;
                $self.copy_strided(x, view, out_shape)
            }
            Op::Take {
                shape,
                indices,
                axis,
            } => {
                let [x] = $crate::backend::op_inputs(op, given)?;
                $self.take(x, shape, indices, *axis)
            }
            Op::Concatenate { shapes, axis } => {
                if shapes.len() != given.len() || shapes.is_empty() {
                    return Err($crate::error::Error::InvalidArgument {
                        op: "concatenate",
                        message: "internal: one shape per input expected".into(),
                    });
                }
                let parts: Vec<(_, &[usize])> = given
                    .iter()
                    .copied()
                    .zip(shapes.iter().map(|s| s.as_slice()))
                    .collect();
                $self.concatenate(&parts, *axis)
            }
            Op::PutSlice {
                shape,
                update_shape,
                start,
            } => {
                let [x, u] = $crate::backend::op_inputs(op, given)?;
                $self.put_slice(x, shape, u, update_shape, start)
            }
            Op::Fused(f) => {
                if given.len() != f.inputs.len() {
                    return Err($crate::error::Error::InvalidArgument {
                        op: "fused",
                        message: "internal: one memory per fused input expected".into(),
                    });
                }
                $self.fused(f, given)
            }
        }
    }};
}

pub mod binary;
pub mod cuda;
pub mod fused;
pub mod host;
pub mod sim;

use std::borrow::Cow;

use crate::buffer::Buffer;
use crate::device::{Client, Device};
use crate::dtype::{DType, Element, Float};
use crate::error::{Error, Result};
use crate::memory::Memory;
use crate::shape::numel;

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
    /// `batch` products `[m,k]·[k,n]`; operand `i` of the batch starts at `i * stride` (0 reuses
    /// one matrix for the whole batch). Inputs: lhs, rhs.
    Matmul {
        /// Elements between consecutive left matrices.
        lhs_batch_stride: usize,
        /// Elements between consecutive right matrices.
        rhs_batch_stride: usize,
        /// Number of products.
        batch: usize,
        /// Rows of the left matrices.
        m: usize,
        /// The contracted dimension.
        k: usize,
        /// Columns of the right matrices.
        n: usize,
    },
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
            Op::Matmul { .. } => "dot",
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
            Op::Binary { .. } | Op::Matmul { .. } | Op::PutSlice { .. } => 2,
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
        let without = |shape: &[usize], axes: &[usize]| {
            numel(
                &shape
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !axes.contains(i))
                    .map(|(_, &d)| d)
                    .collect::<Vec<_>>(),
            )
        };
        match self {
            Op::Binary { out_shape, .. } | Op::CopyStrided { out_shape, .. } => numel(out_shape),
            Op::Unary(_) | Op::Cast(_) | Op::PutSlice { .. } => input_len,
            Op::Reduce { shape, axes, .. } => without(shape, axes),
            Op::ArgReduce { shape, axis, .. } => without(shape, &[*axis]),
            Op::Matmul { batch, m, n, .. } => numel(&[*batch, *m, *n]),
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

/// The backend contract. A backend computes for the devices of one client, on memory of its
/// own kind ([`Memory::Host`] for binary and host, [`Memory::Cuda`], [`Memory::Sim`]).
///
/// The invariant: **the memory a backend receives belongs to the device it runs on.** Placement
/// is decided once by `resolve_device`; weak operands (binary tensors, rank-0 tensors, number
/// literals) are moved to that device first; [`dispatch`] checks every input once with a typed
/// [`Error::Placement`] before calling [`Backend::execute`]. Upload, download and device to
/// device copy are part of the contract; the copy defaults to a round trip through host memory.
pub trait Backend: Send + Sync {
    /// Runs one op of the op set on `device`. `inputs` has [`Op::arity`] entries, all of them
    /// memory of `device`. An asynchronous backend may return before the work is done; reading
    /// the result waits for it.
    fn execute(&self, device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory>;
    /// Puts host elements into `device`'s memory (a copy to the device for an accelerator).
    fn upload(&self, device: Device, buffer: Buffer) -> Result<Memory>;
    /// Every element in host memory, once the work producing them has finished: borrowed when
    /// the memory already is host memory.
    fn download<'a>(&self, memory: &'a Memory) -> Result<Cow<'a, Buffer>>;
    /// The elements at row-major `indices`, in that order: only they cross to the host (the
    /// display of a large tensor stays cheap).
    fn gather(&self, memory: &Memory, indices: &[usize]) -> Result<Buffer> {
        self.download(memory)?.gather(indices)
    }
    /// Waits for the work that produces `memory` and reports its failure, if any.
    fn sync(&self, _memory: &Memory) -> Result<()> {
        Ok(())
    }
    /// A copy of `memory` (of device `from`) in the memory of device `to`. The default goes
    /// through host memory; a backend with a direct path overrides it.
    fn copy(&self, memory: &Memory, from: Device, to: Device) -> Result<Memory> {
        let _ = from;
        let host = self.download(memory)?;
        let owned = match host {
            Cow::Borrowed(b) => b.try_clone()?,
            Cow::Owned(b) => b,
        };
        for_device(to)?.upload(to, owned)
    }
}

/// A backend that computes on host memory (binary, host): it implements the op set once, on
/// [`Buffer`]s, and is a [`Backend`] through the implementation below. The `sim` device runs
/// the same code on its own thread.
pub trait HostMemoryBackend: Send + Sync {
    /// Runs one op on host buffers (`inputs` has [`Op::arity`] entries).
    fn run(&self, op: &Op, inputs: &[&Buffer]) -> Result<Buffer>;
}

impl<B: HostMemoryBackend> Backend for B {
    fn execute(&self, device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory> {
        let buffers = inputs
            .iter()
            .map(|m| {
                m.as_host().ok_or_else(|| Error::Placement {
                    op: op.name(),
                    device,
                    found: m.kind().to_string(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.run(op, &buffers).map(Memory::Host)
    }

    fn upload(&self, _device: Device, buffer: Buffer) -> Result<Memory> {
        Ok(Memory::Host(buffer))
    }

    fn download<'a>(&self, memory: &'a Memory) -> Result<Cow<'a, Buffer>> {
        memory
            .as_host()
            .map(Cow::Borrowed)
            .ok_or_else(|| Error::Placement {
                op: "download",
                device: Device::host(0),
                found: memory.kind().to_string(),
            })
    }
}

/// The inputs of an op, checked against its arity (a mismatch is a frontend bug, reported).
pub(crate) fn op_inputs<'a, T, const N: usize>(op: &Op, given: &[&'a T]) -> Result<[&'a T; N]> {
    <[&T; N]>::try_from(given).map_err(|_| Error::InvalidArgument {
        op: op.name(),
        message: format!("internal: {} inputs given, {N} expected", given.len()),
    })
}

/// The backend that computes for a device.
pub fn for_device(device: Device) -> Result<&'static dyn Backend> {
    Ok(match device.client {
        Client::Binary => &binary::BinaryBackend,
        Client::Host => &host::HostBackend,
        Client::Cuda => &cuda::CudaBackend,
        Client::Sim => &sim::SimBackend,
    })
}

/// The backend that owns memory of this kind (for reading it back).
pub fn for_memory(memory: &Memory) -> &'static dyn Backend {
    match memory {
        Memory::Host(_) => &host::HostBackend,
        Memory::Cuda(_) => &cuda::CudaBackend,
        Memory::Sim(_) => &sim::SimBackend,
        Memory::Traced(_) => &crate::jit::trace::TraceBackend,
    }
}

/// Runs `op` on `device`: the one place where the backend contract is checked. Every input
/// must be memory of `device`'s kind; otherwise the typed error names the op, the device and
/// the memory found (a frontend bug: weak operands are moved before they get here).
pub fn dispatch(device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory> {
    // Every operation passes here: the safe point where an interrupted cell stops.
    crate::interrupt::check()?;
    let expected = device.memory_kind();
    if let Some(stray) = inputs.iter().find(|m| m.kind() != expected) {
        return Err(Error::Placement {
            op: op.name(),
            device,
            found: stray.kind().to_string(),
        });
    }
    if inputs.len() != op.arity() {
        return Err(Error::InvalidArgument {
            op: op.name(),
            message: format!(
                "internal: {} inputs given, {} expected",
                inputs.len(),
                op.arity()
            ),
        });
    }
    for_device(device)?.execute(device, op, inputs)
}

/// Error for a backend handed two buffers of different dtypes (a frontend bug, reported rather
/// than panicking).
pub(crate) fn dtype_mix(op: &'static str, a: DType, b: DType) -> Error {
    Error::InvalidArgument {
        op,
        message: format!("internal: operands reached the backend as {a} and {b}"),
    }
}
