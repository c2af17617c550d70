//! The cuda backend (`cuda:N`): cudarc with dynamic loading, so the runtime builds and runs
//! where no CUDA is installed and the client is then unavailable with the reason. Dot goes
//! through cuBLAS (f32, f64); every other op is an NVRTC-compiled kernel from `kernels.cu`.
//! Ops are enqueued on the device's stream and return at once, as in EXLA: reading values,
//! transfers and `Tensor::sync` wait.

mod blas;
mod buffer;
mod device;
mod driver;
pub mod fused;
pub mod kernels;
mod libraries;
mod nccl;
mod nvrtc;
mod probe;
pub use driver::Gpu;
#[cfg(any(test, feature = "test-hooks"))]
pub use nvrtc::{Nvrtc, Target};
pub use probe::{probe, report, Component, CudaReport};

/// NCCL's version and file when it can be loaded, or why not (the all-reduce then goes
/// through copies).
pub fn nccl_status() -> std::result::Result<String, String> {
    nccl::status()
        .as_ref()
        .map(|n| n.description.clone())
        .map_err(Clone::clone)
}

use std::any::Any;
use std::borrow::Cow;

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut, PushKernelArg};

use blas::{BlasFloat, GemmShape};
pub use buffer::CudaBuffer;
use buffer::{CudaData, CudaElement};
use device::{elementwise_config, row_config, tile_config, CudaDevice};

use super::{route, Backend, Kernels};
use crate::buffer::with_dtype;
use crate::buffer::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ir::fused::Fused;
use crate::ir::{
    ArgOp, BinaryOp, ConvDims, MatmulDims, Op, ReduceOp, ScatterMode, Strided, UnaryOp,
};
use crate::shape::{numel, strides};

/// Opens the NVRTC at `path` (`libnvrtc.so.12` or `.13`), as the backend would: the tests
/// compile every kernel with each major's NVRTC, which needs no GPU.
#[cfg(any(test, feature = "test-hooks"))]
pub fn nvrtc_at(path: &std::path::Path) -> std::result::Result<Nvrtc, String> {
    let candidate = libraries::Candidate {
        file: path.to_path_buf(),
        major: None,
    };
    libraries::load(&candidate).and_then(Nvrtc::bind)
}

/// The cuda backend.
pub struct CudaBackend;

/// Copies host elements to `cuda:ordinal`.
pub(crate) fn upload(buffer: &Buffer, shape: &[usize], ordinal: usize) -> Result<CudaBuffer> {
    let dev = device::device(ordinal)?;
    let data = with_dtype!(buffer.dtype(), T => {
        let host = T::host(buffer).ok_or_else(|| internal("upload"))?;
        let mut slice = dev.alloc::<T>(host.len(), shape)?;
        if !host.is_empty() {
            dev.stream
                .memcpy_htod(host, &mut slice)
                .map_err(|e| dev.error("copy to device", e))?;
        }
        T::wrap(slice)
    });
    Ok(CudaBuffer {
        ordinal,
        len: buffer.len(),
        data,
    })
}

/// Copies every element to host memory, after the work producing them has finished.
pub(crate) fn download(buffer: &CudaBuffer) -> Result<Buffer> {
    let dev = device::device(buffer.ordinal)?;
    with_dtype!(buffer.dtype(), T => {
        let slice = T::slice(&buffer.data).ok_or_else(|| internal("download"))?;
        let mut host = crate::allocate::try_alloc(buffer.len, T::ZERO, &[buffer.len])?;
        if !host.is_empty() {
            dev.stream
                .memcpy_dtoh(&slice.slice(..buffer.len), &mut host[..])
                .map_err(|e| dev.error("copy to host", e))?;
        }
        dev.synchronize()?;
        Ok(T::into_buffer(host))
    })
}

/// The elements at `indices`, gathered on the device so only they are copied back.
pub(crate) fn gather(buffer: &CudaBuffer, indices: &[usize]) -> Result<Buffer> {
    let picked = CudaBackend.take_flat(buffer, indices)?;
    download(&picked)
}

/// Waits for the work that produces `buffer`.
pub(crate) fn sync(buffer: &CudaBuffer) -> Result<()> {
    device::device(buffer.ordinal)?.synchronize()
}

fn internal(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        message: "internal: cuda memory of an unexpected dtype".into(),
    }
}

fn typed<'a, T: CudaElement>(op: &'static str, b: &'a CudaBuffer) -> Result<&'a CudaSlice<T>> {
    T::slice(&b.data).ok_or_else(|| super::dtype_mix(op, T::DTYPE, b.dtype()))
}

/// Enqueues kernel `$name` over a launch config with the given arguments. Every argument
/// must be a reference to a named local: the builder keeps pointers until the launch.
macro_rules! launch {
    ($dev:expr, $name:expr, $cfg:expr; $($arg:expr),* $(,)?) => {{
        let func = $dev.function(&$name)?;
        let mut builder = $dev.stream.launch_builder(&func);
        $( builder.arg($arg); )*
        // SAFETY: the arguments match the kernel's signature in kernels.cu (checked by the
        // names, which encode op and dtype), and every buffer holds the elements the kernel
        // indexes (shapes are validated by the frontend).
        unsafe { builder.launch($cfg) }.map_err(|e| $dev.error("launch", format!("{}: {e}", $name)))?;
    }};
}

/// Entries a thread scans in a chunked cumulative op (see `scan_chunks_body` in kernels.cu).
const SCAN_CHUNK: u64 = 128;

fn op_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "cumulative_sum",
        ReduceOp::Product => "cumulative_product",
        ReduceOp::Max => "cumulative_max",
        ReduceOp::Min => "cumulative_min",
    }
}

fn out(ordinal: usize, len: usize, data: CudaData) -> CudaBuffer {
    CudaBuffer { ordinal, len, data }
}

impl CudaBackend {
    /// `x[indices]` of a flat buffer.
    fn take_flat(&self, x: &CudaBuffer, indices: &[usize]) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("display", x)?;
            CudaData::from(self.take_typed(dev, src, 1, x.len(), 1, indices)?)
        });
        Ok(CudaBuffer {
            ordinal: x.ordinal,
            len: indices.len(),
            data,
        })
    }

    /// `[outer, len, inner]` -> `[outer, indices.len(), inner]`.
    fn take_typed<T: CudaElement>(
        &self,
        dev: &CudaDevice,
        x: &CudaSlice<T>,
        outer: usize,
        len: usize,
        inner: usize,
        indices: &[usize],
    ) -> Result<CudaSlice<T>> {
        let total = outer * indices.len() * inner;
        let mut o = dev.alloc::<T>(total, &[outer, indices.len(), inner])?;
        if total > 0 {
            let idx: Vec<u64> = indices.iter().map(|&i| i as u64).collect();
            let idx = dev
                .stream
                .clone_htod(&idx)
                .map_err(|e| dev.error("take", e))?;
            let (t, l, i, c) = (total as u64, len as u64, inner as u64, indices.len() as u64);
            let name = kernels::named("take", T::DTYPE);
            launch!(dev, name, elementwise_config(total); &t, &l, &i, &c, &idx, x, &mut o);
        }
        Ok(o)
    }

    fn copy_strided_typed<T: CudaElement>(
        &self,
        dev: &CudaDevice,
        x: &CudaSlice<T>,
        view: &Strided,
        out_shape: &[usize],
    ) -> Result<CudaSlice<T>> {
        let n = numel(out_shape);
        let mut o = dev.alloc::<T>(n, out_shape)?;
        if n > 0 {
            let (s, views) = kernels::shape_and_views("copy", out_shape, &[view])?;
            let (nn, v) = (n as u64, views[0]);
            let name = kernels::named("copy_strided", T::DTYPE);
            launch!(dev, name, elementwise_config(n); &nn, &s, &v, x, &mut o);
        }
        Ok(o)
    }

    fn matmul_typed<T: CudaElement>(
        &self,
        dev: &CudaDevice,
        a: &CudaSlice<T>,
        b: &CudaSlice<T>,
        d: MatmulDims,
    ) -> Result<CudaSlice<T>> {
        let MatmulDims {
            lhs_batch_stride: sa,
            rhs_batch_stride: sb,
            batch,
            m,
            k,
            n,
        } = d;
        let shape = [batch, m, n];
        let total = batch * m * n;
        if total == 0 {
            return dev.alloc::<T>(0, &shape);
        }
        if k == 0 {
            let mut o = dev.alloc::<T>(total, &shape)?;
            dev.stream
                .memset_zeros(&mut o)
                .map_err(|e| dev.error("dot", e))?;
            return Ok(o);
        }
        let mut o = dev.alloc::<T>(total, &shape)?;
        let shape4 = [batch, m, k, n];
        if let (Some(a), Some(b), Some(c)) = (as_float(a), as_float(b), as_float_mut(&mut o)) {
            gemm::<f32>(dev, a, sa, b, sb, shape4, c)?;
        } else if let (Some(a), Some(b), Some(c)) = (as_float(a), as_float(b), as_float_mut(&mut o))
        {
            gemm::<f64>(dev, a, sa, b, sb, shape4, c)?;
        } else {
            let dims = [batch, m, k, n, sa, sb].map(|d| d as u64);
            let [bb, mm, kk, nn, ssa, ssb] = dims;
            let name = kernels::named("matmul", T::DTYPE);
            launch!(dev, name, elementwise_config(total); &bb, &mm, &kk, &nn, &ssa, &ssb, a, b, &mut o);
        }
        Ok(o)
    }
}

/// The slice as `CudaSlice<F>` when `T` is `F`: cuBLAS takes concrete float types, and a
/// checked downcast keeps the dtype dispatch free of `unsafe`.
fn as_float<F: 'static, T: 'static>(s: &CudaSlice<T>) -> Option<&CudaSlice<F>> {
    (s as &dyn Any).downcast_ref()
}

/// See [`as_float`].
fn as_float_mut<F: 'static, T: 'static>(s: &mut CudaSlice<T>) -> Option<&mut CudaSlice<F>> {
    (s as &mut dyn Any).downcast_mut()
}

/// Row-major `C[b] = A[b]·B[b]` through column-major cuBLAS: the column-major reading of a
/// row-major matrix is its transpose, so cuBLAS computes `Cᵀ = Bᵀ·Aᵀ` with the operands swapped
/// and m and n exchanged; no copy, no transpose flag.
#[allow(clippy::too_many_arguments)]
fn gemm<F: BlasFloat + cudarc::driver::DeviceRepr>(
    dev: &CudaDevice,
    a: &CudaSlice<F>,
    sa: usize,
    b: &CudaSlice<F>,
    sb: usize,
    [batch, m, k, n]: [usize; 4],
    c: &mut CudaSlice<F>,
) -> Result<()> {
    let int = |v: usize| {
        i32::try_from(v).map_err(|_| Error::InvalidArgument {
            op: "dot",
            message: format!("cuBLAS takes dimensions below 2^31; got {v}"),
        })
    };
    let stride = |v: usize| {
        i64::try_from(v).map_err(|_| Error::InvalidArgument {
            op: "dot",
            message: format!("cuBLAS takes strides below 2^63; got {v}"),
        })
    };
    let shape = GemmShape {
        m: int(n)?,
        n: int(m)?,
        k: int(k)?,
        lda: int(n)?,
        ldb: int(k)?,
        ldc: int(n)?,
        batch: int(batch)?,
        stride_a: stride(sb)?,
        stride_b: stride(sa)?,
        stride_c: stride(m.saturating_mul(n))?,
    };
    dev.with_blas(|handle| {
        let (pb, _b) = b.device_ptr(&dev.stream);
        let (pa, _a) = a.device_ptr(&dev.stream);
        let (pc, _c) = c.device_ptr_mut(&dev.stream);
        // SAFETY: the slices hold `batch` (or one, with stride 0) matrices of the sizes in
        // `shape`, as the frontend validated, on this device, whose context is current.
        unsafe { F::gemm(handle, shape, pb as *const F, pa as *const F, pc as *mut F) }
    })
}

impl<T: CudaElement> From<CudaSlice<T>> for CudaData {
    fn from(s: CudaSlice<T>) -> CudaData {
        T::wrap(s)
    }
}

impl Backend for CudaBackend {
    type Buffer = CudaBuffer;

    fn execute(&self, _device: Device, op: &Op, inputs: &[&CudaBuffer]) -> Result<CudaBuffer> {
        // `memory::dispatch` checked that every input is memory of this device.
        route(self, op, inputs)
    }

    fn upload(&self, device: Device, buffer: Buffer) -> Result<CudaBuffer> {
        upload(&buffer, &[buffer.len()], device.id)
    }

    fn download<'a>(&self, memory: &'a CudaBuffer) -> Result<Cow<'a, Buffer>> {
        Ok(Cow::Owned(download(memory)?))
    }

    fn gather(&self, memory: &CudaBuffer, indices: &[usize]) -> Result<Buffer> {
        gather(memory, indices)
    }

    fn sync(&self, memory: &CudaBuffer) -> Result<()> {
        sync(memory)
    }

    fn all_reduce_sum(&self, parts: &[&CudaBuffer]) -> Result<Option<Vec<CudaBuffer>>> {
        nccl::all_reduce_sum(parts)
    }

    fn copy(&self, memory: &CudaBuffer, to: Device) -> Result<CudaBuffer> {
        peer_copy(memory, to.id)
    }
}

/// A copy of `buffer` on `cuda:to`, device to device: once the work producing it is done on
/// its own GPU, the destination's stream copies it peer to peer (the driver takes NVLink or
/// PCIe, or stages through its own buffers where the two GPUs have no peer access); the host's
/// memory is never involved.
pub(crate) fn peer_copy(buffer: &CudaBuffer, to: usize) -> Result<CudaBuffer> {
    let src = device::device(buffer.ordinal)?;
    let dst = device::device(to)?;
    src.synchronize()?;
    let data = with_dtype!(buffer.dtype(), T => {
        let from = T::slice(&buffer.data).ok_or_else(|| internal("copy"))?;
        let mut slice = dst.alloc::<T>(buffer.len, &[buffer.len])?;
        if buffer.len > 0 {
            let bytes = buffer
                .len
                .checked_mul(std::mem::size_of::<T>())
                .ok_or_else(|| internal("copy"))?;
            let (from_address, read) = from.device_ptr(&src.stream);
            let (to_address, write) = slice.device_ptr_mut(&dst.stream);
            dst.copy_from_peer(to_address, src, from_address, bytes)?;
            drop((read, write));
        }
        T::wrap(slice)
    });
    Ok(CudaBuffer {
        ordinal: to,
        len: buffer.len,
        data,
    })
}

/// The op set on device memory, one method per [`Op`] variant.
impl Kernels for CudaBackend {
    type Buffer = CudaBuffer;

    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&CudaBuffer, &Strided),
        rhs: (&CudaBuffer, &Strided),
        out_shape: &[usize],
    ) -> Result<CudaBuffer> {
        let (a, b) = (lhs.0, rhs.0);
        let dev = device::device(a.ordinal)?;
        let n = numel(out_shape);
        let layout = kernels::binary_layout(out_shape, lhs.1, rhs.1);
        let (s, views) = kernels::shape_and_views(op.name(), out_shape, &[lhs.1, rhs.1])?;
        let (va, vb, nn) = (views[0], views[1], n as u64);
        let name = kernels::binary_name(op, a.dtype());
        let data = with_dtype!(a.dtype(), T => {
            let (x, y) = (typed::<T>(op.name(), a)?, typed::<T>(op.name(), b)?);
            if op.is_comparison() {
                let mut o = dev.alloc::<u8>(n, out_shape)?;
                if n > 0 {
                    launch!(dev, name, elementwise_config(n); &nn, &s, &va, &vb, &layout, x, y, &mut o);
                }
                CudaData::from(o)
            } else {
                let mut o = dev.alloc::<T>(n, out_shape)?;
                if n > 0 {
                    launch!(dev, name, elementwise_config(n); &nn, &s, &va, &vb, &layout, x, y, &mut o);
                }
                CudaData::from(o)
            }
        });
        Ok(out(a.ordinal, n, data))
    }

    fn select(
        &self,
        on_true: (&CudaBuffer, &Strided),
        on_false: (&CudaBuffer, &Strided),
        pred: (&CudaBuffer, &Strided),
        out_shape: &[usize],
    ) -> Result<CudaBuffer> {
        let (t, f, p) = (on_true.0, on_false.0, pred.0);
        let dev = device::device(t.ordinal)?;
        let n = numel(out_shape);
        let views = [on_true.1, on_false.1, pred.1];
        let layout = kernels::operand_layout(out_shape, &views);
        let (s, v) = kernels::shape_and_views("select", out_shape, &views)?;
        let (vt, vf, vp, nn) = (v[0], v[1], v[2], n as u64);
        let mask = typed::<u8>("select", p)?;
        let data = with_dtype!(t.dtype(), T => {
            let (x, y) = (typed::<T>("select", t)?, typed::<T>("select", f)?);
            let mut o = dev.alloc::<T>(n, out_shape)?;
            if n > 0 {
                let name = kernels::named("select", T::DTYPE);
                launch!(dev, name, elementwise_config(n); &nn, &s, &vt, &vf, &vp, &layout, x, y, mask, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(t.ordinal, n, data))
    }

    fn cumulative(
        &self,
        op: ReduceOp,
        x: &CudaBuffer,
        shape: &[usize],
        axis: usize,
        reverse: bool,
    ) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let n = x.len();
        let len = shape[axis] as u64;
        let inner = numel(&shape[axis + 1..]) as u64;
        let lines = (n as u64).checked_div(len).unwrap_or(0);
        let backwards = i32::from(reverse);
        let chunked = inner == 1 && len >= SCAN_CHUNK * 16 && lines < 4096;
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>(op_name(op), x)?;
            let mut o = dev.alloc::<T>(n, shape)?;
            let name = kernels::cumulative_name(op, T::DTYPE);
            if chunked {
                let (chunk, chunks) = (SCAN_CHUNK, len.div_ceil(SCAN_CHUNK));
                let count = (lines * chunks) as usize;
                let mut totals = dev.alloc::<T>(count, &[lines as usize, chunks as usize])?;
                launch!(dev, format!("{name}_chunks"), elementwise_config(count); &lines, &len, &chunk, &chunks, &backwards, src, &mut o, &mut totals);
                let totals = out(x.ordinal, count, CudaData::from(totals));
                let scanned = self.cumulative(op, &totals, &[lines as usize, chunks as usize], 1, false)?;
                let scanned = typed::<T>(op_name(op), &scanned)?;
                launch!(dev, format!("{name}_carry"), elementwise_config(n); &lines, &len, &chunk, &chunks, &backwards, scanned, &mut o);
            } else if lines > 0 {
                launch!(dev, name, elementwise_config(lines as usize); &lines, &len, &inner, &backwards, src, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(x.ordinal, n, data))
    }

    fn sort(
        &self,
        x: &CudaBuffer,
        shape: &[usize],
        axis: usize,
        descending: bool,
        indices: bool,
    ) -> Result<CudaBuffer> {
        let op = if indices { "argsort" } else { "sort" };
        let dev = device::device(x.ordinal)?;
        let n = x.len();
        let len = shape[axis] as u64;
        let inner = numel(&shape[axis + 1..]) as u64;
        let lines = (n as u64).checked_div(len).unwrap_or(0);
        let width = len.max(1).next_power_of_two();
        let threads = (lines * (width / 2)) as usize;
        let desc = i32::from(descending);
        let tile = width.min(kernels::SORT_TILE);
        let plan = kernels::sort_plan(width, tile);
        let (tiles, tile_threads) = (lines * (width / tile), (tile / 2) as u32);
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>(op, x)?;
            let mut keys = dev.alloc::<T>(n, shape)?;
            if n > 0 {
                dev.stream.memcpy_dtod(src, &mut keys).map_err(|e| dev.error(op, e))?;
            }
            let mut pos = if indices { Some(dev.alloc::<i64>(n, shape)?) } else { None };
            if let Some(p) = pos.as_mut().filter(|_| n > 0) {
                launch!(dev, "sort_positions", elementwise_config(n); &lines, &len, &inner, p);
            }
            let tiles_name = kernels::named(&format!("{op}_tiles"), T::DTYPE);
            let step_name = kernels::named(&format!("{op}_step"), T::DTYPE);
            for launch in plan.iter().filter(|_| n > 0 && len > 1) {
                match (launch, pos.as_mut()) {
                    (kernels::SortLaunch::Tiles { merge_size }, Some(p)) => {
                        launch!(dev, tiles_name, tile_config(tiles, tile_threads); &lines, &len, &inner, &width, &tile, merge_size, &desc, &mut keys, p);
                    }
                    (kernels::SortLaunch::Tiles { merge_size }, None) => {
                        launch!(dev, tiles_name, tile_config(tiles, tile_threads); &lines, &len, &inner, &width, &tile, merge_size, &desc, &mut keys);
                    }
                    (kernels::SortLaunch::Step { size, half, flip }, Some(p)) => {
                        launch!(dev, step_name, elementwise_config(threads); &lines, &len, &inner, &width, size, half, flip, &desc, &mut keys, p);
                    }
                    (kernels::SortLaunch::Step { size, half, flip }, None) => {
                        launch!(dev, step_name, elementwise_config(threads); &lines, &len, &inner, &width, size, half, flip, &desc, &mut keys);
                    }
                }
            }
            match pos {
                Some(p) => CudaData::from(p),
                None => CudaData::from(keys),
            }
        });
        Ok(out(x.ordinal, n, data))
    }

    fn gather(&self, x: &CudaBuffer, positions: &CudaBuffer) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let n = positions.len();
        let (nn, len) = (n as u64, x.len() as u64);
        let pos = typed::<i64>("gather", positions)?;
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("gather", x)?;
            let mut o = dev.alloc::<T>(n, &[n])?;
            if n > 0 {
                launch!(dev, kernels::named("gather", T::DTYPE), elementwise_config(n); &nn, &len, pos, src, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(x.ordinal, n, data))
    }

    fn scatter(
        &self,
        mode: ScatterMode,
        target: &CudaBuffer,
        positions: &CudaBuffer,
        updates: &CudaBuffer,
    ) -> Result<CudaBuffer> {
        let op = match mode {
            ScatterMode::Add => "indexed_add",
            ScatterMode::Put => "indexed_put",
        };
        let dev = device::device(target.ordinal)?;
        let (len, n) = (target.len(), positions.len().min(updates.len()));
        let (nn, ll, add) = (n as u64, len as u64, i32::from(mode == ScatterMode::Add));
        let pos = typed::<i64>(op, positions)?;
        let data = with_dtype!(target.dtype(), T => {
            let src = typed::<T>(op, target)?;
            let upd = typed::<T>(op, updates)?;
            let mut o = dev.alloc::<T>(len, &[len])?;
            if len > 0 {
                dev.stream.memcpy_dtod(src, &mut o).map_err(|e| dev.error(op, e))?;
            }
            if n > 0 && len > 0 {
                launch!(dev, kernels::named("scatter", T::DTYPE), elementwise_config(n); &nn, &ll, &add, pos, upd, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(target.ordinal, len, data))
    }

    fn unary(&self, op: UnaryOp, x: &CudaBuffer) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let name = kernels::unary_name(op, x.dtype()).ok_or(Error::UnsupportedDType {
            op: op.name(),
            dtype: x.dtype(),
        })?;
        let n = x.len();
        let nn = n as u64;
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>(op.name(), x)?;
            let mut o = dev.alloc::<T>(n, &[n])?;
            if n > 0 {
                launch!(dev, name, elementwise_config(n); &nn, src, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(x.ordinal, n, data))
    }

    fn cast(&self, x: &CudaBuffer, to: DType) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let name = kernels::cast_name(x.dtype(), to);
        let n = x.len();
        let nn = n as u64;
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("as_type", x)?;
            with_dtype!(to, U => {
                let mut o = dev.alloc::<U>(n, &[n])?;
                if n > 0 {
                    launch!(dev, name, elementwise_config(n); &nn, src, &mut o);
                }
                CudaData::from(o)
            })
        });
        Ok(out(x.ordinal, n, data))
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &CudaBuffer,
        shape: &[usize],
        axes: &[usize],
    ) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let kept = crate::shape::kept_axes(shape.len(), axes);
        let rows: usize = kept.iter().map(|&a| shape[a]).product();
        let row_len: usize = axes.iter().map(|&a| shape[a]).product();
        // The reduced axes must be the trailing ones, in order, for the row kernel; otherwise
        // they are moved there first.
        let trailing = axes
            .iter()
            .enumerate()
            .all(|(i, &a)| a == shape.len() - axes.len() + i);
        let perm: Vec<usize> = kept.iter().chain(axes).copied().collect();
        let src_strides = strides(shape);
        let view = Strided {
            offset: 0,
            strides: perm.iter().map(|&a| src_strides[a]).collect(),
        };
        let permuted_shape: Vec<usize> = perm.iter().map(|&a| shape[a]).collect();
        let name = kernels::reduce_name(op, x.dtype());
        let (r, l) = (rows as u64, row_len as u64);
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("reduce", x)?;
            let moved;
            let rows_src = if trailing {
                src
            } else {
                moved = self.copy_strided_typed(dev, src, &view, &permuted_shape)?;
                &moved
            };
            let mut o = dev.alloc::<T>(rows, &[rows])?;
            if rows > 0 {
                launch!(dev, name, row_config(rows); &r, &l, rows_src, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(x.ordinal, rows, data))
    }

    fn arg_reduce(
        &self,
        op: ArgOp,
        x: &CudaBuffer,
        shape: &[usize],
        axis: usize,
    ) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let outer: usize = shape[..axis].iter().product();
        let len = shape[axis];
        let inner: usize = shape[axis + 1..].iter().product();
        let n = outer * inner;
        let (o_, l_, i_) = (outer as u64, len as u64, inner as u64);
        let want_max = i32::from(op == ArgOp::ArgMax);
        let name = kernels::named("arg", x.dtype());
        let mut o = dev.alloc::<i64>(n, &[n])?;
        with_dtype!(x.dtype(), T => {
            let src = typed::<T>("argmax", x)?;
            if n > 0 && len > 0 {
                launch!(dev, name, elementwise_config(n); &o_, &l_, &i_, &want_max, src, &mut o);
            }
        });
        Ok(out(x.ordinal, n, CudaData::from(o)))
    }

    #[allow(clippy::too_many_arguments)]
    fn matmul(&self, a: &CudaBuffer, b: &CudaBuffer, d: MatmulDims) -> Result<CudaBuffer> {
        let dev = device::device(a.ordinal)?;
        let data = with_dtype!(a.dtype(), T => {
            let (x, y) = (typed::<T>("dot", a)?, typed::<T>("dot", b)?);
            CudaData::from(self.matmul_typed(dev, x, y, d)?)
        });
        Ok(out(a.ordinal, d.batch * d.m * d.n, data))
    }

    fn conv(&self, input: &CudaBuffer, kernel: &CudaBuffer, d: &ConvDims) -> Result<CudaBuffer> {
        let dev = device::device(input.ordinal)?;
        let shape = d.out_shape();
        let n = numel(&shape);
        let arg = kernels::conv_arg(d)?;
        let data = match input.dtype() {
            DType::F32 | DType::F64 => with_dtype!(input.dtype(), T => {
                let (x, w) = (typed::<T>("conv", input)?, typed::<T>("conv", kernel)?);
                let mut o = dev.alloc::<T>(n, &shape)?;
                if n > 0 {
                    let (nn, name) = (n as u64, kernels::named("conv", T::DTYPE));
                    launch!(dev, name, elementwise_config(n); &nn, &arg, x, w, &mut o);
                }
                CudaData::from(o)
            }),
            other => {
                return Err(Error::InvalidArgument {
                    op: "conv",
                    message: format!("internal: a {other} convolution reached the backend"),
                })
            }
        };
        Ok(out(input.ordinal, n, data))
    }

    fn copy_strided(
        &self,
        x: &CudaBuffer,
        view: &Strided,
        out_shape: &[usize],
    ) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("copy", x)?;
            CudaData::from(self.copy_strided_typed(dev, src, view, out_shape)?)
        });
        Ok(out(x.ordinal, numel(out_shape), data))
    }

    fn take(
        &self,
        x: &CudaBuffer,
        shape: &[usize],
        indices: &[usize],
        axis: usize,
    ) -> Result<CudaBuffer> {
        let dev = device::device(x.ordinal)?;
        let outer: usize = shape[..axis].iter().product();
        let inner: usize = shape[axis + 1..].iter().product();
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("take", x)?;
            CudaData::from(self.take_typed(dev, src, outer, shape[axis], inner, indices)?)
        });
        Ok(out(x.ordinal, outer * indices.len() * inner, data))
    }

    fn concatenate(&self, parts: &[(&CudaBuffer, &[usize])], axis: usize) -> Result<CudaBuffer> {
        let first = parts.first().ok_or(Error::InvalidArgument {
            op: "concatenate",
            message: "nothing to concatenate".into(),
        })?;
        let first_buffer = first.0;
        let dev = device::device(first_buffer.ordinal)?;
        let mut out_shape = first.1.to_vec();
        out_shape[axis] = parts.iter().map(|p| p.1[axis]).sum();
        let inner: usize = out_shape[axis + 1..].iter().product();
        let total = numel(&out_shape);
        let out_row = (out_shape[axis] * inner) as u64;
        let data = with_dtype!(first_buffer.dtype(), T => {
            let mut o = dev.alloc::<T>(total, &out_shape)?;
            let name = kernels::named("place_rows", T::DTYPE);
            let mut offset = 0u64;
            for (memory, shape) in parts {
                let src = typed::<T>("concatenate", memory)?;
                let n = numel(shape);
                let part_row = (shape[axis] * inner) as u64;
                let nn = n as u64;
                if n > 0 {
                    launch!(dev, name, elementwise_config(n); &nn, &part_row, &out_row, &offset, src, &mut o);
                }
                offset += part_row;
            }
            CudaData::from(o)
        });
        Ok(out(first_buffer.ordinal, total, data))
    }

    fn put_slice(
        &self,
        x: &CudaBuffer,
        shape: &[usize],
        update: &CudaBuffer,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<CudaBuffer> {
        let u = update;
        let dev = device::device(x.ordinal)?;
        let dst_strides = strides(shape);
        let view = Strided {
            offset: start.iter().zip(&dst_strides).map(|(s, st)| s * st).sum(),
            strides: dst_strides,
        };
        let n = numel(update_shape);
        let data = with_dtype!(x.dtype(), T => {
            let src = typed::<T>("put_slice", x)?;
            let upd = typed::<T>("put_slice", u)?;
            let mut o = dev.alloc::<T>(x.len, shape)?;
            if x.len > 0 {
                dev.stream
                    .memcpy_dtod(src, &mut o)
                    .map_err(|e| dev.error("put_slice", e))?;
            }
            if n > 0 {
                let (s, views) = kernels::shape_and_views("put_slice", update_shape, &[&view])?;
                let (nn, v) = (n as u64, views[0]);
                let name = kernels::named("scatter_strided", T::DTYPE);
                launch!(dev, name, elementwise_config(n); &nn, &s, &v, upd, &mut o);
            }
            CudaData::from(o)
        });
        Ok(out(x.ordinal, x.len, data))
    }

    /// Factorisations and triangular solves go through host memory and host's LAPACK for
    /// now: the matrices are copied over, factorised, and the results copied back (cuSOLVER,
    /// loaded as cuBLAS is, is the next step, and needs a GPU to be checked against).
    fn linalg(&self, op: &crate::ir::LinAlg, given: &[&CudaBuffer]) -> Result<CudaBuffer> {
        let ordinal = given.first().map_or(0, |b| b.ordinal);
        let host: Vec<Buffer> = given.iter().map(|b| download(b)).collect::<Result<_>>()?;
        let refs: Vec<&Buffer> = host.iter().collect();
        let computed = super::host::HostBackend.linalg(op, &refs)?;
        upload(&computed, &[computed.len()], ordinal)
    }

    /// Through host memory and host's FFT until cuFFT is bound (as the factorisations above).
    fn fft(&self, x: &CudaBuffer, f: &crate::ir::Fft) -> Result<CudaBuffer> {
        let host = download(x)?;
        let computed = super::host::HostBackend.fft(&host, f)?;
        upload(&computed, &[computed.len()], x.ordinal)
    }

    /// A fused region as one generated kernel (`fused.rs`); a region that does not fit one
    /// runs step by step with the kernels above.
    fn fused(&self, f: &Fused, given: &[&CudaBuffer]) -> Result<CudaBuffer> {
        let ordinal = match given.first() {
            Some(m) => m.ordinal,
            None => 0,
        };
        let device = Device::cuda(ordinal);
        let Ok(kernel) = fused::kernel(f) else {
            return crate::ir::stepwise::run_stepwise(f, given, |op, ins| {
                self.execute(device, op, ins)
            });
        };
        let dev = device::device(ordinal)?;
        let func = dev.generated(&kernel.name, &kernel.source)?;
        let buffers = given;
        let mut inputs = fused::FusedInputsArg {
            pointers: [0; fused::MAX_INPUTS],
        };
        for (slot, (b, x)) in inputs
            .pointers
            .iter_mut()
            .zip(buffers.iter().zip(&f.inputs))
        {
            if b.dtype() != x.dtype || b.ordinal != ordinal {
                return Err(super::dtype_mix("fused", x.dtype, b.dtype()));
            }
            *slot = with_dtype!(b.dtype(), T => {
                // Event tracking is off (one stream), so the guard records nothing.
                let (ptr, _guard) = typed::<T>("fused", b)?.device_ptr(&dev.stream);
                ptr
            });
        }
        let len = if kernel.rows.is_some() {
            kernel.n as usize
        } else {
            numel(&f.shape)
        };
        let cfg = match kernel.rows {
            Some(_) => row_config(kernel.n as usize),
            None => elementwise_config(len),
        };
        let data = with_dtype!(kernel.out_dtype, T => {
            let mut o = dev.alloc::<T>(len, &f.shape)?;
            if len > 0 {
                let (n, row_len) = (kernel.n, kernel.row_len);
                let mut builder = dev.stream.launch_builder(&func);
                builder.arg(&n);
                builder.arg(&row_len);
                builder.arg(&kernel.shape);
                builder.arg(&kernel.views);
                builder.arg(&inputs);
                builder.arg(&mut o);
                // SAFETY: the arguments are the generated kernel's fixed signature; every input
                // pointer is a live buffer of the dtype and length its view reads (the frontend
                // validated the shapes), and the output holds `len` elements of its dtype.
                unsafe { builder.launch(cfg) }
                    .map_err(|e| dev.error("launch", format!("{}: {e}", kernel.name)))?;
            }
            CudaData::from(o)
        });
        let memory = out(ordinal, len, data);
        match &kernel.then_reduce {
            None => Ok(memory),
            Some((op, axes)) => self.reduce(*op, &memory, &f.shape, axes),
        }
    }
}
