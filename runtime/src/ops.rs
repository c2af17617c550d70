//! The op set as methods on `Tensor`. Each op validates shapes, dtypes and axes, asks
//! [`resolve_device`] where to run, converts dtypes as Nx does, and hands buffers to that
//! device's backend. Nothing here loops over elements.

use crate::backend::{self, ArgOp, Backend, BinaryOp, ReduceOp, Strided, UnaryOp};
use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::session::resolve_device;
use crate::shape::{
    broadcast_shapes, broadcast_strides, fmt_shape, normalize_axes, normalize_axis, numel, strides,
};
use crate::tensor::Tensor;

/// The right-hand side of an elementwise op: a tensor, or a Rust number that becomes a weakly
/// typed scalar (an integer literal takes the tensor's dtype; a float literal makes an integer
/// tensor f32), as Nx does with number literals.
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    /// A tensor.
    Tensor(&'a Tensor),
    /// A number literal.
    Number {
        /// The value.
        value: f64,
        /// Whether it was written as a float.
        float: bool,
    },
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Self {
        Operand::Tensor(t)
    }
}

macro_rules! number_operand {
    ($($t:ty => $float:expr),*) => {$(
        impl From<$t> for Operand<'_> {
            fn from(v: $t) -> Self {
                Operand::Number { value: v as f64, float: $float }
            }
        }
    )*};
}
number_operand!(f64 => true, f32 => true, i64 => false, i32 => false, u8 => false, usize => false);

/// What happens to the last, incomplete batch in [`Tensor::to_batched`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftover {
    /// Fill it with entries from the start of the tensor (Nx's `:repeat`).
    Repeat,
    /// Drop it (Nx's `:discard`).
    Discard,
}

fn backend_of(device: Device) -> Result<&'static dyn Backend> {
    // Every operation passes here: the safe point where an interrupted cell stops.
    crate::interrupt::check()?;
    backend::for_device(device)
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
    /// Converts to `dtype` on `device` (no copy when already of that type).
    fn converted(&self, dtype: DType, device: Device) -> Result<Tensor> {
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        let out = backend_of(device)?.cast(&*self.memory()?, dtype)?;
        Ok(Tensor::from_memory(out, self.shape().to_vec(), device))
    }

    /// Materialises a strided view of this tensor on its device.
    fn view(&self, op: &'static str, view: Strided, shape: Vec<usize>) -> Result<Tensor> {
        let device = resolve_device(op, None, &[self])?;
        let out = backend_of(device)?.copy_strided(&*self.memory()?, &view, &shape)?;
        Ok(Tensor::from_memory(out, shape, device))
    }

    /// Converts this tensor to `dtype` (the same tensor when it already has that dtype:
    /// tensors are immutable, so nothing is copied).
    pub fn as_type(&self, dtype: DType) -> Result<Tensor> {
        let device = resolve_device("as_type", None, &[self])?;
        self.converted(dtype, device)
    }

    fn binary_op(&self, op: BinaryOp, rhs: Operand<'_>) -> Result<Tensor> {
        let number;
        let rhs = match rhs {
            Operand::Tensor(t) => t,
            Operand::Number { value, float } => {
                let dtype = if float && !self.dtype().is_float() {
                    DType::F32
                } else {
                    self.dtype()
                };
                number = on(self.device()).full(value, dtype, &[])?;
                &number
            }
        };
        let device = resolve_device(op.name(), None, &[self, rhs])?;
        let mut dtype = self.dtype().promote(rhs.dtype());
        if op == BinaryOp::Divide {
            dtype = dtype.to_float();
        }
        let out_shape = broadcast_shapes(op.name(), self.shape(), rhs.shape())?;
        let (a, b) = (
            self.converted(dtype, device)?,
            rhs.converted(dtype, device)?,
        );
        let va = Strided {
            offset: 0,
            strides: broadcast_strides(a.shape(), &out_shape),
        };
        let vb = Strided {
            offset: 0,
            strides: broadcast_strides(b.shape(), &out_shape),
        };
        let out = backend_of(device)?.binary(
            op,
            (&*a.memory()?, &va),
            (&*b.memory()?, &vb),
            &out_shape,
        )?;
        Ok(Tensor::from_memory(out, out_shape, device))
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
        let x = if op.needs_float() {
            self.converted(self.dtype().to_float(), device)?
        } else {
            self.clone()
        };
        let out = backend_of(device)?.unary(op, &*x.memory()?)?;
        Ok(Tensor::from_memory(out, self.shape().to_vec(), device))
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
    }

    fn reduce_op(
        &self,
        op: ReduceOp,
        name: &'static str,
        axes: Option<&[isize]>,
        keep_axes: bool,
        dtype: DType,
    ) -> Result<Tensor> {
        let axes = match axes {
            Some(a) => normalize_axes(name, a, self.shape())?,
            None => (0..self.rank()).collect(),
        };
        let device = resolve_device(name, None, &[self])?;
        let x = self.converted(dtype, device)?;
        let out = backend_of(device)?.reduce(op, &*x.memory()?, self.shape(), &axes)?;
        let shape = reduced_shape(self.shape(), &axes, keep_axes);
        Ok(Tensor::from_memory(out, shape, device))
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

    /// Maximum over `axes` (all when `None`).
    pub fn reduce_max(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Max, "reduce_max", axes, keep_axes, self.dtype())
    }

    /// Minimum over `axes` (all when `None`).
    pub fn reduce_min(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        self.reduce_op(ReduceOp::Min, "reduce_min", axes, keep_axes, self.dtype())
    }

    /// Mean over `axes` (all when `None`); integers average as f32.
    pub fn mean(&self, axes: Option<&[isize]>, keep_axes: bool) -> Result<Tensor> {
        let total = self.reduce_op(
            ReduceOp::Sum,
            "mean",
            axes,
            keep_axes,
            self.dtype().to_float(),
        )?;
        let count = (self.size() / total.size().max(1)).max(1);
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
        let out = backend_of(device)?.arg_reduce(op, &*x.memory()?, x.shape(), axis)?;
        let shape = match (keep_axes, x.rank() == self.rank()) {
            (true, true) => reduced_shape(self.shape(), &[axis], true),
            (true, false) => vec![1; self.rank()],
            (false, _) => reduced_shape(x.shape(), &[axis], false),
        };
        Ok(Tensor::from_memory(out, shape, device))
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
        let nbatch = numel(&batch);
        let a = self.converted(dtype, device)?.with_shape(a_shape.clone());
        let b = rhs.converted(dtype, device)?.with_shape(b_shape.clone());
        let (a, sa) = batch_operand(a, &batch, [m, k])?;
        let (b, sb) = batch_operand(b, &batch, [k, n])?;
        let out =
            backend_of(device)?.matmul(&*a.memory()?, sa, &*b.memory()?, sb, nbatch, m, k, n)?;
        let mut shape = batch;
        if self.rank() > 1 {
            shape.push(m);
        }
        if rhs.rank() > 1 {
            shape.push(n);
        }
        Ok(Tensor::from_memory(out, shape, device))
    }

    /// The same elements with another shape of the same size (shares the buffer).
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        self.memory()?;
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
        let mut extended = self.shape().to_vec();
        extended.push(1);
        let at = normalize_axis("new_axis", axis, &extended)?;
        let mut shape = self.shape().to_vec();
        shape.insert(at, 1);
        self.reshape(&shape)
    }

    /// Broadcasts to `shape` by NumPy/Nx rules.
    pub fn broadcast(&self, shape: &[usize]) -> Result<Tensor> {
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

    /// The block starting at `start` with `lengths` elements per axis, taking every
    /// `strides[i]`-th element (1 when `None`).
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
                    "{} needs {rank} start indices, lengths and strides; got {}, {} and {}",
                    self.signature(),
                    start.len(),
                    lengths.len(),
                    steps.len()
                ),
            });
        }
        let s = strides(self.shape());
        let mut offset = 0;
        for i in 0..rank {
            let dim = self.shape()[i];
            let last = start[i] + lengths[i].saturating_sub(1) * steps[i];
            if steps[i] == 0 || (lengths[i] > 0 && last >= dim) || start[i] > dim {
                return Err(Error::InvalidArgument {
                    op: "slice",
                    message: format!(
                        "axis {i}: start {}, length {} and stride {} do not fit size {dim} of {}",
                        start[i],
                        lengths[i],
                        steps[i],
                        self.signature()
                    ),
                });
            }
            offset += start[i] * s[i];
        }
        let view = Strided {
            offset,
            strides: (0..rank).map(|i| s[i] * steps[i]).collect(),
        };
        self.view("slice", view, lengths.to_vec())
    }

    /// A copy with the block at `start` replaced by `update` (converted to this dtype). As in Nx
    /// the start is moved back so that the update fits.
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
        let update = update.converted(self.dtype(), device)?;
        let start: Vec<usize> = (0..self.rank())
            .map(|i| start[i].min(self.shape()[i] - update.shape()[i]))
            .collect();
        let out = backend_of(device)?.put_slice(
            &*self.memory()?,
            self.shape(),
            &*update.memory()?,
            update.shape(),
            &start,
        )?;
        Ok(Tensor::from_memory(out, self.shape().to_vec(), device))
    }

    /// Joins tensors along `axis`; every other axis must agree. Dtypes promote.
    pub fn concatenate(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::InvalidArgument {
            op: "concatenate",
            message: "needs at least one tensor".into(),
        })?;
        let axis = normalize_axis("concatenate", axis, first.shape())?;
        for t in &tensors[1..] {
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
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let device = resolve_device("concatenate", None, &refs)?;
        let dtype = tensors
            .iter()
            .fold(first.dtype(), |d, t| d.promote(t.dtype()));
        let converted = tensors
            .iter()
            .map(|t| t.converted(dtype, device))
            .collect::<Result<Vec<_>>>()?;
        let buffers = converted
            .iter()
            .map(|t| t.memory())
            .collect::<Result<Vec<_>>>()?;
        let parts: Vec<(&crate::memory::Memory, &[usize])> = buffers
            .iter()
            .zip(&converted)
            .map(|(b, t)| (&**b, t.shape()))
            .collect();
        let out = backend_of(device)?.concatenate(&parts, axis)?;
        let mut shape = first.shape().to_vec();
        shape[axis] = converted.iter().map(|t| t.shape()[axis]).sum();
        Ok(Tensor::from_memory(out, shape, device))
    }

    /// Stacks tensors of one shape along a new axis.
    pub fn stack(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        let expanded = tensors
            .iter()
            .map(|t| t.new_axis(axis))
            .collect::<Result<Vec<_>>>()?;
        if let Some(t) = tensors.iter().find(|t| t.shape() != tensors[0].shape()) {
            return Err(Error::ShapeMismatch {
                op: "stack",
                lhs: tensors[0].shape().to_vec(),
                rhs: t.shape().to_vec(),
                reason: "stacked tensors must have one shape".into(),
            });
        }
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
        let dim = self.shape()[axis];
        let idx = indices
            .to_f64_vec()?
            .into_iter()
            .map(|i| {
                let i = i as i64;
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
        let out = backend_of(device)?.take(&*self.memory()?, self.shape(), &idx, axis)?;
        let mut shape = self.shape()[..axis].to_vec();
        shape.extend_from_slice(indices.shape());
        shape.extend_from_slice(&self.shape()[axis + 1..]);
        Ok(Tensor::from_memory(out, shape, device))
    }

    /// Splits axis 0 into batches of `batch_size`, on this tensor's device. The last, short
    /// batch is padded from the start (`Repeat`) or dropped (`Discard`), as `Nx.to_batched`.
    pub fn to_batched(&self, batch_size: usize, leftover: Leftover) -> Result<Vec<Tensor>> {
        if batch_size == 0 || self.rank() == 0 {
            return Err(Error::InvalidArgument {
                op: "to_batched",
                message: format!("needs a batch size above 0 and a tensor of rank 1 or more; got {batch_size} and {}", self.signature()),
            });
        }
        resolve_device("to_batched", None, &[self])?;
        let total = self.shape()[0];
        let mut out = Vec::new();
        let mut at = 0;
        while at < total {
            let len = batch_size.min(total - at);
            if len < batch_size && leftover == Leftover::Discard {
                break;
            }
            let mut start = vec![0; self.rank()];
            start[0] = at;
            let mut lengths = self.shape().to_vec();
            lengths[0] = len;
            let mut batch = self.slice(&start, &lengths, None)?;
            if len < batch_size {
                let mut fill = batch_size - len;
                let mut parts = vec![batch];
                while fill > 0 {
                    let take = fill.min(total);
                    let mut l = self.shape().to_vec();
                    l[0] = take;
                    parts.push(self.slice(&vec![0; self.rank()], &l, None)?);
                    fill -= take;
                }
                batch = Tensor::concatenate(&parts, 0)?;
            }
            out.push(batch);
            at += len;
        }
        Ok(out)
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
    if own_batch == batch {
        return Ok((t, mat[0] * mat[1]));
    }
    let mut full = batch.to_vec();
    full.extend_from_slice(&mat);
    let b = t.broadcast(&full).map_err(|_| Error::ShapeMismatch {
        op: "dot",
        lhs: t.shape().to_vec(),
        rhs: full.clone(),
        reason: format!("batch dimensions {} do not broadcast", fmt_shape(own_batch)),
    })?;
    Ok((b, mat[0] * mat[1]))
}
