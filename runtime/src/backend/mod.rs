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

pub mod binary;
pub mod cuda;
pub mod host;

use crate::buffer::Buffer;
use crate::device::{Client, Device};
use crate::dtype::{DType, Element, Float};
use crate::error::{Error, Result};
use crate::memory::Memory;

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
            // NaN propagates, as in Nx.
            BinaryOp::Min => {
                if a.is_nan() || a < b {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Max => {
                if a.is_nan() || a > b {
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
            UnaryOp::Sigmoid => T::ONE.div(T::ONE.add(x.neg().exp())),
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

/// The op set every backend implements. Shapes are validated by the frontend; backends may
/// assume consistent arguments but must not panic on any data values.
pub trait Backend: Send + Sync {
    /// Elementwise `op` of two strided reads of the same dtype over `out_shape`.
    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&Memory, &Strided),
        rhs: (&Memory, &Strided),
        out_shape: &[usize],
    ) -> Result<Memory>;
    /// Elementwise `op`; float-only ops receive float buffers.
    fn unary(&self, op: UnaryOp, x: &Memory) -> Result<Memory>;
    /// Converts every element to `to`.
    fn cast(&self, x: &Memory, to: DType) -> Result<Memory>;
    /// Reduces the (sorted, distinct) `axes` of a tensor of `shape`.
    fn reduce(&self, op: ReduceOp, x: &Memory, shape: &[usize], axes: &[usize]) -> Result<Memory>;
    /// Index of the extremum along `axis`, as s64.
    fn arg_reduce(&self, op: ArgOp, x: &Memory, shape: &[usize], axis: usize) -> Result<Memory>;
    /// `batch` matrix products `[m,k]·[k,n]`; operand `i` of the batch starts at
    /// `i * batch_stride` (0 reuses one matrix for the whole batch).
    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &self,
        lhs: &Memory,
        lhs_batch_stride: usize,
        rhs: &Memory,
        rhs_batch_stride: usize,
        batch: usize,
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Memory>;
    /// Materialises a strided view of shape `out_shape` into a new contiguous buffer.
    fn copy_strided(&self, x: &Memory, view: &Strided, out_shape: &[usize]) -> Result<Memory>;
    /// Gathers `indices` (already checked to be in range) along `axis`.
    fn take(&self, x: &Memory, shape: &[usize], indices: &[usize], axis: usize) -> Result<Memory>;
    /// Joins tensors that agree on every axis but `axis`.
    fn concatenate(&self, parts: &[(&Memory, &[usize])], axis: usize) -> Result<Memory>;
    /// A copy of `x` with the block starting at `start` replaced by `update` (already clamped to
    /// fit).
    fn put_slice(
        &self,
        x: &Memory,
        shape: &[usize],
        update: &Memory,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<Memory>;
}

/// The op set of a backend that computes on host memory (binary, host). Every such backend is a
/// [`Backend`] through the blanket implementation below.
pub trait CpuBackend: Send + Sync {
    /// Elementwise `op` of two strided reads of the same dtype over `out_shape`.
    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&Buffer, &Strided),
        rhs: (&Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Buffer>;
    /// Elementwise `op`; float-only ops receive float buffers.
    fn unary(&self, op: UnaryOp, x: &Buffer) -> Result<Buffer>;
    /// Converts every element to `to`.
    fn cast(&self, x: &Buffer, to: DType) -> Result<Buffer>;
    /// Reduces the (sorted, distinct) `axes` of a tensor of `shape`.
    fn reduce(&self, op: ReduceOp, x: &Buffer, shape: &[usize], axes: &[usize]) -> Result<Buffer>;
    /// Index of the extremum along `axis`, as s64.
    fn arg_reduce(&self, op: ArgOp, x: &Buffer, shape: &[usize], axis: usize) -> Result<Buffer>;
    /// `batch` matrix products `[m,k]·[k,n]`; operand `i` of the batch starts at
    /// `i * batch_stride` (0 reuses one matrix for the whole batch).
    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &self,
        lhs: &Buffer,
        lhs_batch_stride: usize,
        rhs: &Buffer,
        rhs_batch_stride: usize,
        batch: usize,
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Buffer>;
    /// Materialises a strided view of shape `out_shape` into a new contiguous buffer.
    fn copy_strided(&self, x: &Buffer, view: &Strided, out_shape: &[usize]) -> Result<Buffer>;
    /// Gathers `indices` (already checked to be in range) along `axis`.
    fn take(&self, x: &Buffer, shape: &[usize], indices: &[usize], axis: usize) -> Result<Buffer>;
    /// Joins tensors that agree on every axis but `axis`.
    fn concatenate(&self, parts: &[(&Buffer, &[usize])], axis: usize) -> Result<Buffer>;
    /// A copy of `x` with the block starting at `start` replaced by `update` (already clamped to
    /// fit).
    fn put_slice(
        &self,
        x: &Buffer,
        shape: &[usize],
        update: &Buffer,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<Buffer>;
}

/// Unwraps host memory for a CPU backend; device memory reaching one is a frontend bug.
fn host_buffer<'a>(op: &'static str, m: &'a Memory) -> Result<&'a Buffer> {
    m.as_host().ok_or_else(|| Error::InvalidArgument {
        op,
        message: "internal: device memory reached a CPU backend".into(),
    })
}

impl<B: CpuBackend> Backend for B {
    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&Memory, &Strided),
        rhs: (&Memory, &Strided),
        out_shape: &[usize],
    ) -> Result<Memory> {
        let (a, b) = (
            host_buffer(op.name(), lhs.0)?,
            host_buffer(op.name(), rhs.0)?,
        );
        CpuBackend::binary(self, op, (a, lhs.1), (b, rhs.1), out_shape).map(Memory::Host)
    }

    fn unary(&self, op: UnaryOp, x: &Memory) -> Result<Memory> {
        CpuBackend::unary(self, op, host_buffer(op.name(), x)?).map(Memory::Host)
    }

    fn cast(&self, x: &Memory, to: DType) -> Result<Memory> {
        CpuBackend::cast(self, host_buffer("as_type", x)?, to).map(Memory::Host)
    }

    fn reduce(&self, op: ReduceOp, x: &Memory, shape: &[usize], axes: &[usize]) -> Result<Memory> {
        CpuBackend::reduce(self, op, host_buffer("reduce", x)?, shape, axes).map(Memory::Host)
    }

    fn arg_reduce(&self, op: ArgOp, x: &Memory, shape: &[usize], axis: usize) -> Result<Memory> {
        CpuBackend::arg_reduce(self, op, host_buffer("argmax", x)?, shape, axis).map(Memory::Host)
    }

    fn matmul(
        &self,
        lhs: &Memory,
        lhs_batch_stride: usize,
        rhs: &Memory,
        rhs_batch_stride: usize,
        batch: usize,
        m: usize,
        k: usize,
        n: usize,
    ) -> Result<Memory> {
        let (a, b) = (host_buffer("dot", lhs)?, host_buffer("dot", rhs)?);
        CpuBackend::matmul(
            self,
            a,
            lhs_batch_stride,
            b,
            rhs_batch_stride,
            batch,
            m,
            k,
            n,
        )
        .map(Memory::Host)
    }

    fn copy_strided(&self, x: &Memory, view: &Strided, out_shape: &[usize]) -> Result<Memory> {
        CpuBackend::copy_strided(self, host_buffer("copy", x)?, view, out_shape).map(Memory::Host)
    }

    fn take(&self, x: &Memory, shape: &[usize], indices: &[usize], axis: usize) -> Result<Memory> {
        CpuBackend::take(self, host_buffer("take", x)?, shape, indices, axis).map(Memory::Host)
    }

    fn concatenate(&self, parts: &[(&Memory, &[usize])], axis: usize) -> Result<Memory> {
        let parts = parts
            .iter()
            .map(|(m, shape)| Ok((host_buffer("concatenate", m)?, *shape)))
            .collect::<Result<Vec<_>>>()?;
        CpuBackend::concatenate(self, &parts, axis).map(Memory::Host)
    }

    fn put_slice(
        &self,
        x: &Memory,
        shape: &[usize],
        update: &Memory,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<Memory> {
        let (xb, ub) = (
            host_buffer("put_slice", x)?,
            host_buffer("put_slice", update)?,
        );
        CpuBackend::put_slice(self, xb, shape, ub, update_shape, start).map(Memory::Host)
    }
}

/// The backend that computes for a device.
pub fn for_device(device: Device) -> Result<&'static dyn Backend> {
    match device.client {
        Client::Binary => Ok(&binary::BinaryBackend),
        Client::Host => Ok(&host::HostBackend),
        Client::Cuda => Ok(&cuda::CudaBackend),
    }
}

/// Error for a backend handed two buffers of different dtypes (a frontend bug, reported rather
/// than panicking).
pub(crate) fn dtype_mix(op: &'static str, a: DType, b: DType) -> Error {
    Error::InvalidArgument {
        op,
        message: format!("internal: operands reached the backend as {a} and {b}"),
    }
}
