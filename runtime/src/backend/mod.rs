//! Backends: the op set of [`crate::ir`], computed once per place of computation. `binary` is
//! the reference (plain loops, one thread); `host` is the optimised CPU; `cuda` runs on NVIDIA
//! GPUs through cudarc; `sim` is a simulated accelerator (host code behind a queue, its own
//! memory). Each backend is typed on its own buffer ([`Backend::Buffer`]): it cannot be handed
//! another backend's memory, and knows nothing of tensors, placements of other clients or the
//! enum that holds every kind of memory (`crate::memory`, which routes to the backends).

/// Matches two buffers that must share a dtype, binding their typed vectors.
macro_rules! same_dtype {
    ($op:expr, $a:expr, $b:expr, |$x:ident, $y:ident| $body:expr) => {
        match ($a, $b) {
            ($crate::buffer::Buffer::U8($x), $crate::buffer::Buffer::U8($y)) => $body,
            ($crate::buffer::Buffer::U16($x), $crate::buffer::Buffer::U16($y)) => $body,
            ($crate::buffer::Buffer::U32($x), $crate::buffer::Buffer::U32($y)) => $body,
            ($crate::buffer::Buffer::U64($x), $crate::buffer::Buffer::U64($y)) => $body,
            ($crate::buffer::Buffer::S8($x), $crate::buffer::Buffer::S8($y)) => $body,
            ($crate::buffer::Buffer::S16($x), $crate::buffer::Buffer::S16($y)) => $body,
            ($crate::buffer::Buffer::S32($x), $crate::buffer::Buffer::S32($y)) => $body,
            ($crate::buffer::Buffer::S64($x), $crate::buffer::Buffer::S64($y)) => $body,
            ($crate::buffer::Buffer::F32($x), $crate::buffer::Buffer::F32($y)) => $body,
            ($crate::buffer::Buffer::F64($x), $crate::buffer::Buffer::F64($y)) => $body,
            ($crate::buffer::Buffer::C64($x), $crate::buffer::Buffer::C64($y)) => $body,
            ($crate::buffer::Buffer::C128($x), $crate::buffer::Buffer::C128($y)) => $body,
            (a, b) => return Err($crate::backend::dtype_mix($op, a.dtype(), b.dtype())),
        }
    };
}

/// Runs `$body` with `$f` bound to a closure for one fixed `BinaryOp`, so that each op gets its
/// own monomorphised (and vectorisable) loop instead of a `match` per element. `$arith` is for
/// ops returning the element type, `$cmp` for comparisons returning u8.
macro_rules! with_binary_op {
    ($op:expr, $f:ident => arith $arith:expr, cmp $cmp:expr) => {{
        use $crate::ir::BinaryOp as B;
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
            B::Remainder => {
                let $f = |x, y| B::Remainder.arith(x, y);
                $arith
            }
            B::Quotient => {
                let $f = |x, y| B::Quotient.arith(x, y);
                $arith
            }
            B::Atan2 => {
                let $f = |x, y| B::Atan2.arith(x, y);
                $arith
            }
            B::BitwiseAnd => {
                let $f = |x, y| B::BitwiseAnd.arith(x, y);
                $arith
            }
            B::BitwiseOr => {
                let $f = |x, y| B::BitwiseOr.arith(x, y);
                $arith
            }
            B::BitwiseXor => {
                let $f = |x, y| B::BitwiseXor.arith(x, y);
                $arith
            }
            B::LeftShift => {
                let $f = |x, y| B::LeftShift.arith(x, y);
                $arith
            }
            B::RightShift => {
                let $f = |x, y| B::RightShift.arith(x, y);
                $arith
            }
        }
    }};
}

pub mod binary;
pub mod cuda;
pub mod host;
pub(crate) mod linalg_reference;
pub mod sim;

use std::borrow::Cow;

use crate::buffer::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::fused::Fused;
use crate::ir::{
    ArgOp, BinaryOp, ConvDims, Fft, LinAlg, MatmulDims, Op, ReduceOp, ScatterMode, Strided, UnaryOp,
};

/// The backend contract: what a place of computation does with memory of its own kind.
///
/// Typed on its buffer, so the memory a backend receives is its own by construction; which of
/// its devices the memory is on is checked where the memory enum is matched
/// (`crate::memory::dispatch`), the one placement check. Upload and download are part of the
/// contract; a copy between two devices of one backend goes through [`Backend::copy`].
pub trait Backend: Send + Sync {
    /// The backend's memory: host [`Buffer`]s for binary and host, device buffers otherwise.
    type Buffer;

    /// Runs one op of the op set on `device`. `inputs` has [`Op::arity`] entries, all of them
    /// memory of `device`. An asynchronous backend may return before the work is done; reading
    /// the result waits for it.
    fn execute(&self, device: Device, op: &Op, inputs: &[&Self::Buffer]) -> Result<Self::Buffer>;
    /// Puts host elements into `device`'s memory (a copy to the device for an accelerator).
    fn upload(&self, device: Device, buffer: Buffer) -> Result<Self::Buffer>;
    /// Every element in host memory, once the work producing them has finished: borrowed when
    /// the memory already is host memory.
    fn download<'a>(&self, memory: &'a Self::Buffer) -> Result<Cow<'a, Buffer>>;
    /// The elements at row-major `indices`, in that order: only they cross to the host (the
    /// display of a large tensor stays cheap).
    fn gather(&self, memory: &Self::Buffer, indices: &[usize]) -> Result<Buffer> {
        self.download(memory)?.gather(indices)
    }
    /// Waits for the work that produces `memory` and reports its failure, if any.
    fn sync(&self, _memory: &Self::Buffer) -> Result<()> {
        Ok(())
    }
    /// A copy of `memory` on another device `to` of this backend. The default goes through
    /// host memory; a backend with a direct path overrides it (cuda: peer to peer; sim: queued
    /// on the target).
    fn copy(&self, memory: &Self::Buffer, to: Device) -> Result<Self::Buffer> {
        self.upload(to, crate::allocate::owned(self.download(memory)?)?)
    }
    /// The elementwise sum of `parts` (one buffer on each of several distinct devices of this
    /// backend, one dtype and length), left on every one of them: an all-reduce through the
    /// backend's collective library. `None` when it has none here; the caller then reduces
    /// through [`Backend::copy`] and the op set.
    fn all_reduce_sum(&self, _parts: &[&Self::Buffer]) -> Result<Option<Vec<Self::Buffer>>> {
        Ok(None)
    }
}

/// The op set as one method per [`Op`] variant, over a backend's buffer type: what binary,
/// host and cuda implement, and [`route`] calls. Shapes, axes and views were validated by the
/// frontend, so an implementation may rely on them matching its inputs' lengths; it must still
/// not panic on any element value.
pub trait Kernels {
    /// The memory the kernels read and write.
    type Buffer;

    /// Elementwise `op` of two strided reads of one dtype over `out_shape`.
    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&Self::Buffer, &Strided),
        rhs: (&Self::Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Self::Buffer>;
    /// `on_true` where the u8 `pred` is not 0, else `on_false` (one dtype), each read through
    /// its view over `out_shape`.
    fn select(
        &self,
        on_true: (&Self::Buffer, &Strided),
        on_false: (&Self::Buffer, &Strided),
        pred: (&Self::Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Self::Buffer>;
    /// The running `op` along `axis` of `x` of `shape`, from the end when `reverse`.
    fn cumulative(
        &self,
        op: ReduceOp,
        x: &Self::Buffer,
        shape: &[usize],
        axis: usize,
        reverse: bool,
    ) -> Result<Self::Buffer>;
    /// Every line along `axis` of `x` of `shape` sorted (`ir::sorting`), or with `indices`
    /// the positions (s64) the sorted entries came from, in a stable order.
    fn sort(
        &self,
        x: &Self::Buffer,
        shape: &[usize],
        axis: usize,
        descending: bool,
        indices: bool,
    ) -> Result<Self::Buffer>;
    /// The entries of `x` (flat) at the s64 `positions` (`ir::indexed::gathered`).
    fn gather(&self, x: &Self::Buffer, positions: &Self::Buffer) -> Result<Self::Buffer>;
    /// A copy of `target` with `updates` combined in at the s64 `positions` (those outside
    /// skipped).
    fn scatter(
        &self,
        mode: ScatterMode,
        target: &Self::Buffer,
        positions: &Self::Buffer,
        updates: &Self::Buffer,
    ) -> Result<Self::Buffer>;
    /// Elementwise `op` of one operand.
    fn unary(&self, op: UnaryOp, x: &Self::Buffer) -> Result<Self::Buffer>;
    /// Every element converted to `to`.
    fn cast(&self, x: &Self::Buffer, to: DType) -> Result<Self::Buffer>;
    /// Reduces the (sorted, distinct) `axes` of `x` of `shape`.
    fn reduce(
        &self,
        op: ReduceOp,
        x: &Self::Buffer,
        shape: &[usize],
        axes: &[usize],
    ) -> Result<Self::Buffer>;
    /// The index of the extremum along `axis`, as s64.
    fn arg_reduce(
        &self,
        op: ArgOp,
        x: &Self::Buffer,
        shape: &[usize],
        axis: usize,
    ) -> Result<Self::Buffer>;
    /// Batched matrix products.
    fn matmul(
        &self,
        lhs: &Self::Buffer,
        rhs: &Self::Buffer,
        dims: MatmulDims,
    ) -> Result<Self::Buffer>;
    /// Batched `[k,m]ᵀ·[k,n]` products ([`Op::TransposedMatmul`]). A backend that does not
    /// read the left matrices transposed itself copies the smaller side transposed and runs
    /// its plain product ([`transposed_matmul_by_copy`]).
    fn transposed_matmul(
        &self,
        lhs: &Self::Buffer,
        rhs: &Self::Buffer,
        dims: MatmulDims,
    ) -> Result<Self::Buffer> {
        transposed_matmul_by_copy(self, lhs, rhs, dims)
    }
    /// The convolution of `input` by `kernel` (`ir::conv`), both of one float dtype.
    fn conv(
        &self,
        input: &Self::Buffer,
        kernel: &Self::Buffer,
        dims: &ConvDims,
    ) -> Result<Self::Buffer>;
    /// A strided view materialised into a contiguous buffer.
    fn copy_strided(
        &self,
        x: &Self::Buffer,
        view: &Strided,
        out_shape: &[usize],
    ) -> Result<Self::Buffer>;
    /// Gathers `indices` (in range) along `axis` of `x` of `shape`.
    fn take(
        &self,
        x: &Self::Buffer,
        shape: &[usize],
        indices: &[usize],
        axis: usize,
    ) -> Result<Self::Buffer>;
    /// Joins the parts (each with its shape, equal but for `axis`).
    fn concatenate(&self, parts: &[(&Self::Buffer, &[usize])], axis: usize)
        -> Result<Self::Buffer>;
    /// A copy of `x` with the block at `start` replaced by `update`.
    fn put_slice(
        &self,
        x: &Self::Buffer,
        shape: &[usize],
        update: &Self::Buffer,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<Self::Buffer>;
    /// A factorisation or triangular solve over a batch of float matrices (`ir::linalg`).
    fn linalg(&self, op: &LinAlg, inputs: &[&Self::Buffer]) -> Result<Self::Buffer>;
    /// The DFT of each row of a complex `[rows, length]` input (`ir::fft`).
    fn fft(&self, x: &Self::Buffer, fft: &Fft) -> Result<Self::Buffer>;
    /// A fused region (one input per [`Fused::inputs`]).
    fn fused(&self, f: &Fused, inputs: &[&Self::Buffer]) -> Result<Self::Buffer>;
}

/// Routes an [`Op`] to the kernel of its variant, checking the number of inputs.
pub fn route<K: Kernels + ?Sized>(kernels: &K, op: &Op, given: &[&K::Buffer]) -> Result<K::Buffer> {
    match op {
        Op::Binary {
            op: b,
            lhs,
            rhs,
            out_shape,
        } => {
            let [x, y] = op_inputs(op, given)?;
            kernels.binary(*b, (x, lhs), (y, rhs), out_shape)
        }
        Op::Select { views, out_shape } => {
            let [t, f, p] = op_inputs(op, given)?;
            kernels.select((t, &views[0]), (f, &views[1]), (p, &views[2]), out_shape)
        }
        Op::Unary(u) => {
            let [x] = op_inputs(op, given)?;
            kernels.unary(*u, x)
        }
        Op::Cumulative {
            op: r,
            shape,
            axis,
            reverse,
        } => {
            let [x] = op_inputs(op, given)?;
            kernels.cumulative(*r, x, shape, *axis, *reverse)
        }
        Op::Sort {
            shape,
            axis,
            descending,
            indices,
        } => {
            let [x] = op_inputs(op, given)?;
            kernels.sort(x, shape, *axis, *descending, *indices)
        }
        Op::Gather { .. } => {
            let [x, p] = op_inputs(op, given)?;
            kernels.gather(x, p)
        }
        Op::Scatter(mode) => {
            let [t, p, u] = op_inputs(op, given)?;
            kernels.scatter(*mode, t, p, u)
        }
        Op::Cast(to) => {
            let [x] = op_inputs(op, given)?;
            kernels.cast(x, *to)
        }
        Op::Reduce { op: r, shape, axes } => {
            let [x] = op_inputs(op, given)?;
            kernels.reduce(*r, x, shape, axes)
        }
        Op::ArgReduce { op: a, shape, axis } => {
            let [x] = op_inputs(op, given)?;
            kernels.arg_reduce(*a, x, shape, *axis)
        }
        Op::Matmul(dims) => {
            let [x, y] = op_inputs(op, given)?;
            kernels.matmul(x, y, *dims)
        }
        Op::TransposedMatmul(dims) => {
            let [x, y] = op_inputs(op, given)?;
            kernels.transposed_matmul(x, y, *dims)
        }
        Op::Conv(dims) => {
            let [x, w] = op_inputs(op, given)?;
            kernels.conv(x, w, dims)
        }
        Op::CopyStrided { view, out_shape } => {
            let [x] = op_inputs(op, given)?;
            kernels.copy_strided(x, view, out_shape)
        }
        Op::Take {
            shape,
            indices,
            axis,
        } => {
            let [x] = op_inputs(op, given)?;
            kernels.take(x, shape, indices, *axis)
        }
        Op::Concatenate { shapes, axis } => {
            if shapes.len() != given.len() || shapes.is_empty() {
                return Err(internal_arity(op, given.len()));
            }
            let parts: Vec<(&K::Buffer, &[usize])> = given
                .iter()
                .copied()
                .zip(shapes.iter().map(|s| s.as_slice()))
                .collect();
            kernels.concatenate(&parts, *axis)
        }
        Op::PutSlice {
            shape,
            update_shape,
            start,
        } => {
            let [x, u] = op_inputs(op, given)?;
            kernels.put_slice(x, shape, u, update_shape, start)
        }
        Op::LinAlg(l) => {
            if given.len() != l.arity() {
                return Err(internal_arity(op, given.len()));
            }
            kernels.linalg(l, given)
        }
        Op::Fft(f) => {
            let [x] = op_inputs(op, given)?;
            kernels.fft(x, f)
        }
        Op::Fused(f) => {
            if given.len() != f.inputs.len() {
                return Err(internal_arity(op, given.len()));
            }
            kernels.fused(f, given)
        }
    }
}

/// The u8 elements of a select's predicate (the frontend makes it u8; anything else is a
/// frontend bug, reported).
/// The s64 positions of a gather or scatter (the frontend converts them).
pub(crate) fn positions<'a>(op: &'static str, positions: &'a Buffer) -> Result<&'a [i64]> {
    match positions {
        Buffer::S64(p) => Ok(p),
        other => Err(Error::InvalidArgument {
            op,
            message: format!("internal: {} positions reached the backend", other.dtype()),
        }),
    }
}

pub(crate) fn predicate(pred: &Buffer) -> Result<&[u8]> {
    match pred {
        Buffer::U8(p) => Ok(p),
        other => Err(Error::InvalidArgument {
            op: "select",
            message: format!(
                "internal: a {} predicate reached the backend",
                other.dtype()
            ),
        }),
    }
}

/// `[k,m]ᵀ·[k,n]` through a transposing copy and the plain product: of the left matrices, or,
/// for one product whose left matrix is larger than the right one and the result together (a
/// weight gradient `xᵀ·g` of a large batch `x`), of those two instead, as `(gᵀ·x)ᵀ`.
pub(crate) fn transposed_matmul_by_copy<K: Kernels + ?Sized>(
    kernels: &K,
    lhs: &K::Buffer,
    rhs: &K::Buffer,
    d: MatmulDims,
) -> Result<K::Buffer> {
    let MatmulDims {
        lhs_batch_stride,
        batch,
        m,
        k,
        n,
        ..
    } = d;
    let view = |strides: Vec<usize>| Strided { offset: 0, strides };
    let lhs_elements = k.saturating_mul(m);
    let others = k.saturating_mul(n).saturating_add(m.saturating_mul(n));
    if batch == 1 && lhs_elements > others {
        let rhs_t = kernels.copy_strided(rhs, &view(vec![1, n]), &[n, k])?;
        let product = kernels.matmul(
            &rhs_t,
            lhs,
            MatmulDims {
                lhs_batch_stride: 0,
                rhs_batch_stride: 0,
                batch: 1,
                m: n,
                k,
                n: m,
            },
        )?;
        return kernels.copy_strided(&product, &view(vec![1, m]), &[m, n]);
    }
    let (lhs_t, stride) = if lhs_batch_stride == 0 {
        (kernels.copy_strided(lhs, &view(vec![1, m]), &[m, k])?, 0)
    } else {
        let shape = [batch, m, k];
        let copy = kernels.copy_strided(lhs, &view(vec![lhs_batch_stride, 1, m]), &shape)?;
        (copy, lhs_elements)
    };
    kernels.matmul(
        &lhs_t,
        rhs,
        MatmulDims {
            lhs_batch_stride: stride,
            ..d
        },
    )
}

/// The inputs of an op, checked against its arity (a mismatch is a frontend bug, reported).
fn op_inputs<'a, T: ?Sized, const N: usize>(op: &Op, given: &[&'a T]) -> Result<[&'a T; N]> {
    <[&T; N]>::try_from(given).map_err(|_| internal_arity(op, given.len()))
}

fn internal_arity(op: &Op, given: usize) -> Error {
    Error::InvalidArgument {
        op: op.name(),
        message: format!("internal: {given} inputs given, {} expected", op.arity()),
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

/// The [`Backend`] half of a backend that computes on host [`Buffer`]s with its [`Kernels`]:
/// binary and host share it (their memory is the same, so the device only names the pool).
macro_rules! host_buffer_backend {
    ($backend:ty) => {
        impl $crate::backend::Backend for $backend {
            type Buffer = $crate::buffer::Buffer;

            fn execute(
                &self,
                _device: $crate::device::Device,
                op: &$crate::ir::Op,
                inputs: &[&$crate::buffer::Buffer],
            ) -> $crate::error::Result<$crate::buffer::Buffer> {
                $crate::backend::route(self, op, inputs)
            }

            fn upload(
                &self,
                _device: $crate::device::Device,
                buffer: $crate::buffer::Buffer,
            ) -> $crate::error::Result<$crate::buffer::Buffer> {
                Ok(buffer)
            }

            fn download<'a>(
                &self,
                memory: &'a $crate::buffer::Buffer,
            ) -> $crate::error::Result<std::borrow::Cow<'a, $crate::buffer::Buffer>> {
                Ok(std::borrow::Cow::Borrowed(memory))
            }
        }
    };
}
pub(crate) use host_buffer_backend;
