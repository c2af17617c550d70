//! The op set as methods on `Tensor`. Each op validates shapes, dtypes and axes (every result
//! shape passes `check_shape`), asks [`resolve_device`] where to run, moves weak operands there
//! and converts dtypes as Nx does, then hands an [`Op`] to [`dispatch`], which checks
//! placement once. Nothing here loops over elements.
//!
//! Where tensorbook deliberately differs from Nx, the method's docs say so.

use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{ArgOp, BinaryOp, MatmulDims, Op, ReduceOp, Strided, UnaryOp};
use crate::memory::{dispatch, Memory};
use crate::session::resolve_device;
use crate::shape::{
    broadcast_shapes, broadcast_strides, check_shape, fmt_shape, normalize_axes, normalize_axis,
    numel, strides, MAX_RANK,
};
use crate::tensor::{Tensor, Value};

/// The right-hand side of an elementwise op: a tensor, or a Rust number that becomes a weakly
/// typed scalar. The number's type merges with the tensor's as `Nx.Type.merge_number` does:
/// the tensor keeps its type when the number fits it, an integer that does not fit widens it
/// (`u8 + 300` is s32, `u8 + -1` is s32, `s32 + 3_000_000_000` is s64; Nx would pick u16, s16
/// and s64, and tensorbook has no 16-bit types, so it takes the next one that holds them), and
/// a float makes an integer tensor f32.
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
number_operand!(Integer: i64, i32, u8, u32, u64);

impl From<usize> for Operand<'_> {
    fn from(v: usize) -> Self {
        // usize is at most 64 bits on every target Rust supports.
        Operand::Integer(v as i128)
    }
}

/// The dtype a number literal and a tensor of `dtype` meet in (`Nx.Type.merge_number`, mapped
/// onto tensorbook's dtypes), or an error for an integer no dtype holds.
pub fn merge_number(dtype: DType, number: Operand<'_>) -> Result<DType> {
    let fits = |v: i128, d: DType| match d {
        DType::U8 => u8::try_from(v).is_ok(),
        DType::S32 => i32::try_from(v).is_ok(),
        DType::S64 => i64::try_from(v).is_ok(),
        DType::F32 | DType::F64 => true,
    };
    match number {
        Operand::Tensor(t) => Ok(dtype.promote(t.dtype())),
        _ if dtype.is_float() => Ok(dtype),
        Operand::Float(_) => Ok(DType::F32),
        Operand::Integer(v) => [dtype, DType::S32, DType::S64]
            .into_iter()
            .filter(|&d| d >= dtype)
            .find(|&d| fits(v, d))
            .ok_or_else(|| Error::InvalidArgument {
                op: "number",
                message: format!(
                    "the integer {v} fits no integer dtype (the widest is s64); write it as a float"
                ),
            }),
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
fn run(device: Device, op: Op, operands: &[&Tensor], shape: Vec<usize>) -> Result<Tensor> {
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
    /// This tensor on `device` (moved there if it is a weak operand) and of `dtype`.
    fn prepared(&self, dtype: DType, device: Device) -> Result<Tensor> {
        let here = self.to_device(device)?;
        if here.dtype() == dtype {
            return Ok(here);
        }
        let shape = here.shape().to_vec();
        run(device, Op::Cast(dtype), &[&here], shape)
    }

    /// Materialises a strided view of this tensor on its device.
    fn view(&self, op: &'static str, view: Strided, shape: Vec<usize>) -> Result<Tensor> {
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

    /// Converts this tensor to `dtype` (the same tensor when it already has that dtype:
    /// tensors are immutable, so nothing is copied).
    pub fn as_type(&self, dtype: DType) -> Result<Tensor> {
        let device = resolve_device("as_type", None, &[self])?;
        self.prepared(dtype, device)
    }

    /// A rank-0 tensor of `dtype` holding a number literal, exactly when the dtype holds it.
    fn literal(&self, number: Operand<'_>, dtype: DType) -> Result<Tensor> {
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
        if op == BinaryOp::Divide {
            dtype = dtype.to_float();
        }
        let out_shape = broadcast_shapes(op.name(), self.shape(), rhs.shape())?;
        check_shape(op.name(), &out_shape, dtype)?;
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
        run(device, kernel, &[&a, &b], out_shape)
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
    }

    fn unary_op(&self, op: UnaryOp) -> Result<Tensor> {
        let device = resolve_device(op.name(), None, &[self])?;
        let dtype = if op.needs_float() {
            self.dtype().to_float()
        } else {
            self.dtype()
        };
        let x = self.prepared(dtype, device)?;
        run(device, Op::Unary(op), &[&x], self.shape().to_vec())
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
    }

    fn reduce_op(
        &self,
        op: ReduceOp,
        name: &'static str,
        axes: Option<&[isize]>,
        keep_axes: bool,
        dtype: DType,
    ) -> Result<Tensor> {
        let axes = self.reduced_axes(name, axes)?;
        let device = resolve_device(name, None, &[self])?;
        let x = self.prepared(dtype, device)?;
        let shape = reduced_shape(self.shape(), &axes, keep_axes);
        let kernel = Op::Reduce {
            op,
            shape: self.shape().to_vec(),
            axes,
        };
        run(device, kernel, &[&x], shape)
    }

    fn reduced_axes(&self, name: &'static str, axes: Option<&[isize]>) -> Result<Vec<usize>> {
        match axes {
            Some(a) => normalize_axes(name, a, self.shape()),
            None => Ok((0..self.rank()).collect()),
        }
    }

    /// Sum over `axes` (all when `None`); integers sum in s64.
    pub fn sum(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(
            ReduceOp::Sum,
            "sum",
            axes,
            keep_axes,
            self.dtype().accumulator(),
        )
    }

    /// Product over `axes` (all when `None`); integers multiply in s64.
    pub fn product(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(
            ReduceOp::Product,
            "product",
            axes,
            keep_axes,
            self.dtype().accumulator(),
        )
    }

    /// Maximum over `axes` (all when `None`). Over zero elements it is the dtype's lowest
    /// value (-Inf for floats), the reduction's identity, as in Nx.
    pub fn reduce_max(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Max, "reduce_max", axes, keep_axes, self.dtype())
    }

    /// Minimum over `axes` (all when `None`). Over zero elements it is the dtype's highest
    /// value (Inf for floats), as in Nx.
    pub fn reduce_min(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Min, "reduce_min", axes, keep_axes, self.dtype())
    }

    /// Mean over `axes` (all when `None`); integers average as f32. The mean of zero elements
    /// is NaN (0 / 0), as in Nx.
    pub fn mean(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        let reduced = self.reduced_axes("mean", axes)?;
        let count = numel(&reduced.iter().map(|&a| self.shape()[a]).collect::<Vec<_>>());
        let total = self.reduce_op(
            ReduceOp::Sum,
            "mean",
            axes,
            keep_axes,
            self.dtype().to_float(),
        )?;
        total.divide(count)
    }

    fn arg_op(
        &self,
        op: ArgOp,
        name: &'static str,
        axis: Option<isize>,
        keep_axes: bool,
    ) -> Result<Tensor> {
        let (x, axis) = match axis {
            Some(a) => (self.clone(), normalize_axis(name, a, self.shape())?),
            None => (self.reshape(&[self.size()])?, 0),
        };
        if x.shape()[axis] == 0 {
            return Err(Error::InvalidArgument {
                op: name,
                message: format!("axis {axis} of {} is empty", self.signature()),
            });
        }
        let device = resolve_device(name, None, &[self])?;
        let shape = match (keep_axes, x.rank() == self.rank()) {
            (true, true) => reduced_shape(self.shape(), &[axis], true),
            (true, false) => vec![1; self.rank()],
            (false, _) => reduced_shape(x.shape(), &[axis], false),
        };
        let kernel = Op::ArgReduce {
            op,
            shape: x.shape().to_vec(),
            axis,
        };
        run(device, kernel, &[&x], shape)
    }

    /// Index of the first maximum along `axis` (over all elements, flattened, when `None`), s64.
    pub fn argmax(&self, axis: Option<isize>, keep_axes: bool) -> Result<Tensor> {
        self.arg_op(ArgOp::ArgMax, "argmax", axis, keep_axes)
    }

    /// Index of the first minimum along `axis` (over all elements, flattened, when `None`), s64.
    pub fn argmin(&self, axis: Option<isize>, keep_axes: bool) -> Result<Tensor> {
        self.arg_op(ArgOp::ArgMin, "argmin", axis, keep_axes)
    }

    /// Matrix product with NumPy `matmul` semantics: 1-D·1-D is the inner product, 2-D·2-D the
    /// matrix product, and higher ranks are batches of matrices whose batch dimensions
    /// broadcast. A scalar operand multiplies.
    pub fn dot(&self, rhs: &Tensor) -> Result<Tensor> {
        if self.rank() == 0 || rhs.rank() == 0 {
            return self.multiply(rhs);
        }
        let device = resolve_device("dot", None, &[self, rhs])?;
        let dtype = self.dtype().promote(rhs.dtype());
        let a_shape: Vec<usize> = if self.rank() == 1 {
            vec![1, self.shape()[0]]
        } else {
            self.shape().to_vec()
        };
        let b_shape: Vec<usize> = if rhs.rank() == 1 {
            vec![rhs.shape()[0], 1]
        } else {
            rhs.shape().to_vec()
        };
        let (ra, rb) = (a_shape.len(), b_shape.len());
        let (m, k) = (a_shape[ra - 2], a_shape[ra - 1]);
        let (k2, n) = (b_shape[rb - 2], b_shape[rb - 1]);
        if k != k2 {
            return Err(Error::ShapeMismatch {
                op: "dot",
                lhs: self.shape().to_vec(),
                rhs: rhs.shape().to_vec(),
                reason: format!(
                    "the contracted axes differ: {k} (last axis of the left) vs {k2} ({} of the right)",
                    if rhs.rank() == 1 { "only axis" } else { "second-to-last axis" }
                ),
            });
        }
        let batch = broadcast_shapes("dot", &a_shape[..ra - 2], &b_shape[..rb - 2])?;
        let mut shape = batch.clone();
        if self.rank() > 1 {
            shape.push(m);
        }
        if rhs.rank() > 1 {
            shape.push(n);
        }
        // Two empty operands can have a product that is not empty ([2^31,0]·[0,2^31]).
        check_shape("dot", &shape, dtype)?;
        let mut full = batch.clone();
        full.extend([m, n]);
        check_shape("dot", &full, dtype)?;
        let a = self.prepared(dtype, device)?.with_shape(a_shape);
        let b = rhs.prepared(dtype, device)?.with_shape(b_shape);
        let (a, sa) = batch_operand(a, &batch, [m, k])?;
        let (b, sb) = batch_operand(b, &batch, [k, n])?;
        let kernel = Op::Matmul(MatmulDims {
            lhs_batch_stride: sa,
            rhs_batch_stride: sb,
            batch: numel(&batch),
            m,
            k,
            n,
        });
        run(device, kernel, &[&a, &b], shape)
    }

    /// The same elements with another shape of the same size (shares the buffer).
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        self.value()?;
        check_shape("reshape", shape, self.dtype())?;
        if numel(shape) != self.size() {
            return Err(Error::ShapeMismatch {
                op: "reshape",
                lhs: self.shape().to_vec(),
                rhs: shape.to_vec(),
                reason: format!(
                    "{} elements cannot be viewed as {}",
                    self.size(),
                    numel(shape)
                ),
            });
        }
        Ok(self.with_shape(shape.to_vec()))
    }

    /// Reorders the axes: `axes[i]` is the input axis that becomes axis `i`; `None` reverses.
    pub fn transpose(&self, axes: Option<&[usize]>) -> Result<Tensor> {
        let perm: Vec<usize> = match axes {
            Some(a) => a.to_vec(),
            None => (0..self.rank()).rev().collect(),
        };
        let mut seen = perm.clone();
        seen.sort_unstable();
        if seen != (0..self.rank()).collect::<Vec<_>>() {
            return Err(Error::InvalidArgument {
                op: "transpose",
                message: format!(
                    "{perm:?} is not a permutation of the axes of {}",
                    self.signature()
                ),
            });
        }
        let s = strides(self.shape());
        let view = Strided {
            offset: 0,
            strides: perm.iter().map(|&p| s[p]).collect(),
        };
        self.view(
            "transpose",
            view,
            perm.iter().map(|&p| self.shape()[p]).collect(),
        )
    }

    /// Removes the given axes of size 1 (every size-1 axis when `None`).
    pub fn squeeze(&self, axes: Option<&[isize]>) -> Result<Tensor> {
        let axes = match axes {
            Some(a) => normalize_axes("squeeze", a, self.shape())?,
            None => (0..self.rank()).filter(|&i| self.shape()[i] == 1).collect(),
        };
        if let Some(&bad) = axes.iter().find(|&&a| self.shape()[a] != 1) {
            return Err(Error::InvalidArgument {
                op: "squeeze",
                message: format!(
                    "axis {bad} of {} has size {}, not 1",
                    self.signature(),
                    self.shape()[bad]
                ),
            });
        }
        self.reshape(&reduced_shape(self.shape(), &axes, false))
    }

    /// Inserts an axis of size 1 before `axis` (`-1` appends).
    pub fn new_axis(&self, axis: isize) -> Result<Tensor> {
        if self.rank() >= MAX_RANK {
            return Err(Error::InvalidArgument {
                op: "new_axis",
                message: format!(
                    "{} already has the highest rank a tensor may have ({MAX_RANK})",
                    self.signature()
                ),
            });
        }
        let mut extended = self.shape().to_vec();
        extended.push(1);
        let at = normalize_axis("new_axis", axis, &extended)?;
        let mut shape = self.shape().to_vec();
        shape.insert(at, 1);
        self.reshape(&shape)
    }

    /// Broadcasts to `shape` by NumPy/Nx rules.
    pub fn broadcast(&self, shape: &[usize]) -> Result<Tensor> {
        check_shape("broadcast", shape, self.dtype())?;
        let out = broadcast_shapes("broadcast", self.shape(), shape)?;
        if out != shape {
            return Err(Error::ShapeMismatch {
                op: "broadcast",
                lhs: self.shape().to_vec(),
                rhs: shape.to_vec(),
                reason: "the target has fewer or smaller dimensions".into(),
            });
        }
        let view = Strided {
            offset: 0,
            strides: broadcast_strides(self.shape(), shape),
        };
        self.view("broadcast", view, shape.to_vec())
    }

    /// The block starting at `start` spanning `lengths` elements per axis, taking every
    /// `steps[i]`-th of them (1 when `None`), as `Nx.slice`: axis `i` of the result has
    /// `ceil(lengths[i] / steps[i])` elements, and a start that would run past the end is
    /// moved back so that the block fits (`slice(&[5], &[2], None)` of 6 elements is
    /// elements 4 and 5). A length above the axis or a step of 0 is an error. Unlike Nx, a
    /// length of 0 is allowed and gives an empty axis.
    pub fn slice(
        &self,
        start: &[usize],
        lengths: &[usize],
        steps: Option<&[usize]>,
    ) -> Result<Tensor> {
        let rank = self.rank();
        let ones = vec![1; rank];
        let steps = steps.unwrap_or(&ones);
        if start.len() != rank || lengths.len() != rank || steps.len() != rank {
            return Err(Error::InvalidArgument {
                op: "slice",
                message: format!(
                    "{} needs {rank} start indices, lengths and steps; got {}, {} and {}",
                    self.signature(),
                    start.len(),
                    lengths.len(),
                    steps.len()
                ),
            });
        }
        let s = strides(self.shape());
        let mut offset = 0usize;
        let mut view_strides = Vec::with_capacity(rank);
        let mut shape = Vec::with_capacity(rank);
        for i in 0..rank {
            let (dim, len, step) = (self.shape()[i], lengths[i], steps[i]);
            if step == 0 || len > dim {
                return Err(Error::InvalidArgument {
                    op: "slice",
                    message: format!(
                        "axis {i}: length {len} and step {step} do not fit size {dim} of {} \
                         (the length must be at most the size, the step at least 1)",
                        self.signature()
                    ),
                });
            }
            let first = start[i].min(dim - len);
            let count = len.div_ceil(step);
            // In range for a valid shape: first < dim, and step < len <= dim when count > 1.
            offset = offset.saturating_add(first.saturating_mul(s[i]));
            view_strides.push(if count > 1 {
                s[i].saturating_mul(step)
            } else {
                0
            });
            shape.push(count);
        }
        let view = Strided {
            offset,
            strides: view_strides,
        };
        self.view("slice", view, shape)
    }

    /// A copy with the block at `start` replaced by `update`, in the type both merge to (as
    /// `Nx.put_slice`: an f32 update into an s32 tensor gives f32). As in Nx the start is moved
    /// back so that the update fits.
    pub fn put_slice(&self, start: &[usize], update: &Tensor) -> Result<Tensor> {
        if update.rank() != self.rank() || start.len() != self.rank() {
            return Err(Error::ShapeMismatch {
                op: "put_slice",
                lhs: self.shape().to_vec(),
                rhs: update.shape().to_vec(),
                reason: format!(
                    "the update and the {} start indices must have rank {}",
                    start.len(),
                    self.rank()
                ),
            });
        }
        if update.shape().iter().zip(self.shape()).any(|(u, d)| u > d) {
            return Err(Error::ShapeMismatch {
                op: "put_slice",
                lhs: self.shape().to_vec(),
                rhs: update.shape().to_vec(),
                reason: "the update is larger than the tensor".into(),
            });
        }
        let device = resolve_device("put_slice", None, &[self, update])?;
        let dtype = self.dtype().promote(update.dtype());
        let (x, update) = (
            self.prepared(dtype, device)?,
            update.prepared(dtype, device)?,
        );
        let start: Vec<usize> = (0..self.rank())
            .map(|i| start[i].min(self.shape()[i] - update.shape()[i]))
            .collect();
        let kernel = Op::PutSlice {
            shape: self.shape().to_vec(),
            update_shape: update.shape().to_vec(),
            start,
        };
        run(device, kernel, &[&x, &update], self.shape().to_vec())
    }

    /// Joins tensors along `axis`; every other axis must agree. Dtypes promote.
    pub fn concatenate(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::InvalidArgument {
            op: "concatenate",
            message: "needs at least one tensor".into(),
        })?;
        let axis = normalize_axis("concatenate", axis, first.shape())?;
        let mut joined = 0usize;
        for t in tensors {
            let fits = t.rank() == first.rank()
                && (0..first.rank()).all(|i| i == axis || t.shape()[i] == first.shape()[i]);
            if !fits {
                return Err(Error::ShapeMismatch {
                    op: "concatenate",
                    lhs: first.shape().to_vec(),
                    rhs: t.shape().to_vec(),
                    reason: format!("every axis but {axis} must agree"),
                });
            }
            joined = joined.saturating_add(t.shape()[axis]);
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let device = resolve_device("concatenate", None, &refs)?;
        let dtype = tensors
            .iter()
            .fold(first.dtype(), |d, t| d.promote(t.dtype()));
        let mut shape = first.shape().to_vec();
        shape[axis] = joined;
        check_shape("concatenate", &shape, dtype)?;
        let converted = tensors
            .iter()
            .map(|t| t.prepared(dtype, device))
            .collect::<Result<Vec<_>>>()?;
        let kernel = Op::Concatenate {
            shapes: converted.iter().map(|t| t.shape().to_vec()).collect(),
            axis,
        };
        run(device, kernel, &converted.iter().collect::<Vec<_>>(), shape)
    }

    /// Stacks tensors of one shape along a new axis.
    pub fn stack(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        if let Some(t) = tensors.iter().find(|t| t.shape() != tensors[0].shape()) {
            return Err(Error::ShapeMismatch {
                op: "stack",
                lhs: tensors[0].shape().to_vec(),
                rhs: t.shape().to_vec(),
                reason: "stacked tensors must have one shape".into(),
            });
        }
        let expanded = tensors
            .iter()
            .map(|t| t.new_axis(axis))
            .collect::<Result<Vec<_>>>()?;
        Tensor::concatenate(&expanded, axis)
    }

    /// Gathers entries along `axis` at integer `indices`; the result's shape replaces that axis
    /// by the indices' shape.
    pub fn take(&self, indices: &Tensor, axis: isize) -> Result<Tensor> {
        let axis = normalize_axis("take", axis, self.shape())?;
        if indices.dtype().is_float() {
            return Err(Error::UnsupportedDType {
                op: "take (indices)",
                dtype: indices.dtype(),
            });
        }
        let device = resolve_device("take", None, &[self, indices])?;
        let mut shape = self.shape()[..axis].to_vec();
        shape.extend_from_slice(indices.shape());
        shape.extend_from_slice(&self.shape()[axis + 1..]);
        check_shape("take", &shape, self.dtype())?;
        let dim = self.shape()[axis];
        // Exact for every integer dtype (no trip through f64).
        let idx = indices
            .as_type(DType::S64)?
            .to_vec::<i64>()?
            .into_iter()
            .map(|i| {
                usize::try_from(i)
                    .ok()
                    .filter(|&u| u < dim)
                    .ok_or_else(|| Error::InvalidArgument {
                        op: "take",
                        message: format!(
                            "index {i} is out of range for axis {axis} of {} (size {dim})",
                            self.signature()
                        ),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let kernel = Op::Take {
            shape: self.shape().to_vec(),
            indices: idx,
            axis,
        };
        run(device, kernel, &[self], shape)
    }

    /// Splits axis 0 into batches of `batch_size`, on this tensor's device. The last, short
    /// batch is padded from the start (`Repeat`, cycling as often as needed) or dropped
    /// (`Discard`), as `Nx.to_batched`.
    pub fn to_batched(&self, batch_size: usize, leftover: Leftover) -> Result<Vec<Tensor>> {
        if batch_size == 0 || self.rank() == 0 {
            return Err(Error::InvalidArgument {
                op: "to_batched",
                message: format!("needs a batch size above 0 and a tensor of rank 1 or more; got {batch_size} and {}", self.signature()),
            });
        }
        resolve_device("to_batched", None, &[self])?;
        let total = self.shape()[0];
        let mut batch_shape = self.shape().to_vec();
        batch_shape[0] = batch_size;
        if !total.is_multiple_of(batch_size) && leftover == Leftover::Repeat {
            check_shape("to_batched", &batch_shape, self.dtype())?;
        }
        let mut out = Vec::new();
        let mut at = 0;
        while at < total {
            let len = batch_size.min(total - at);
            if len < batch_size && leftover == Leftover::Discard {
                break;
            }
            out.push(self.batch_from(at, batch_size)?);
            at += len;
        }
        Ok(out)
    }

    /// The batch of `batch_size` rows from row `at` (below the row count), padded from the
    /// start when it runs past the end: one batch of `to_batched(.., Repeat)`.
    pub(crate) fn batch_from(&self, at: usize, batch_size: usize) -> Result<Tensor> {
        let total = self.shape().first().copied().unwrap_or(0);
        if at >= total {
            return Err(Error::InvalidArgument {
                op: "to_batched",
                message: format!("internal: row {at} of {}", self.signature()),
            });
        }
        let mut start = vec![0; self.rank()];
        start[0] = at;
        if batch_size <= total - at {
            let mut lengths = self.shape().to_vec();
            lengths[0] = batch_size;
            return self.slice(&start, &lengths, None);
        }
        // The rows at..total, then rows from the start again, as one gather.
        let mut rows = try_alloc(batch_size, 0i64, &[batch_size])?;
        for (i, r) in rows.iter_mut().enumerate() {
            *r = ((at + i) % total) as i64;
        }
        let rows = Tensor::from_host(Buffer::S64(rows), vec![batch_size], Device::BINARY)?;
        self.take(&rows, 0)
    }
}

fn reduced_shape(shape: &[usize], axes: &[usize], keep_axes: bool) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keep_axes) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Lays out one operand of a batched product as `batch` matrices: returns the tensor and the
/// distance between consecutive matrices (0 when one matrix serves every batch entry).
fn batch_operand(t: Tensor, batch: &[usize], mat: [usize; 2]) -> Result<(Tensor, usize)> {
    let own_batch = &t.shape()[..t.rank() - 2];
    if numel(own_batch) == 1 {
        return Ok((t, 0));
    }
    let stride = mat[0].saturating_mul(mat[1]);
    if own_batch == batch {
        return Ok((t, stride));
    }
    let mut full = batch.to_vec();
    full.extend_from_slice(&mat);
    let b = t.broadcast(&full).map_err(|_| Error::ShapeMismatch {
        op: "dot",
        lhs: t.shape().to_vec(),
        rhs: full.clone(),
        reason: format!("batch dimensions {} do not broadcast", fmt_shape(own_batch)),
    })?;
    Ok((b, stride))
}
