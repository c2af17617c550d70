//! The optimised CPU backend (`host:N`): contiguous fast paths, row-wise strided loops the
//! compiler can vectorise, rayon across both cores. f32/f64 dot: a streaming kernel for
//! narrow products (`skinny`); from 64³ host's own packed AVX2 GEMM (`packed_gemm`, ~185
//! GFLOP/s on 1024³-2048³ f32, on a par with numpy's OpenBLAS), or the system BLAS (`blas`)
//! on CPUs without AVX2+FMA or when `TENSORBOOK_BLAS` names one; the `gemm` crate otherwise.

use super::Kernels;
use crate::allocate::try_alloc;
use crate::buffer::with_buffer;
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::Result;
use crate::ir::fused::Fused;
use crate::ir::{
    ArgOp, BinaryOp, ConvDims, MatmulDims, Op, ReduceOp, ScatterMode, Strided, UnaryOp,
};
use crate::shape::{numel, strides, unravel};

mod blas;
mod conv;
mod fft;
mod fused;
mod halves;
mod indexed;
mod lapack;
mod lapack_complex;
mod loops;
mod matmul;
mod parallel;
mod radix;
mod reduce;
mod scan;
mod sort;
pub use blas::library_name as blas_library;
pub use lapack::library_name as lapack_library;
#[cfg(target_arch = "x86_64")]
mod packed_gemm;
mod skinny;
mod stream;
mod transpose;
#[cfg(target_arch = "x86_64")]
mod transposed_gemm;
mod vmath;

/// The optimised CPU backend (`host`).
pub struct HostBackend;

impl HostBackend {
    /// True when host computes `op` on its bf16/f16 operands itself, in one pass of blocks
    /// widened to f32 and rounded back (`halves.rs`), instead of `memory::dispatch`'s wide
    /// route of three passes. The result is the same.
    pub fn computes_halves(op: &Op, inputs: &[&Buffer]) -> bool {
        halves::computes(op, inputs)
    }
}

use loops::*;
use matmul::{gemm_complex, gemm_float, matmul_int, COMPLEX_GEMM_FROM};
pub use matmul::{gemm_name, system_blas_dot};

/// Whether a complex product is large enough for [`gemm_complex`].
fn complex_gemm(d: MatmulDims) -> bool {
    d.m.saturating_mul(d.n).saturating_mul(d.k) >= COMPLEX_GEMM_FROM
}

super::host_buffer_backend!(HostBackend);

/// The op set on host buffers, one method per [`Op`](crate::ir::Op) variant.
impl Kernels for HostBackend {
    type Buffer = Buffer;

    fn fused(&self, f: &Fused, given: &[&Buffer]) -> Result<Buffer> {
        fused::run(f, given)
    }

    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&Buffer, &Strided),
        rhs: (&Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Buffer> {
        if lhs.1.is_contiguous(out_shape) && rhs.1.is_contiguous(out_shape) {
            if let Some(done) = halves::binary(op, lhs.0, rhs.0) {
                return done;
            }
        }
        same_dtype!(op.name(), lhs.0, rhs.0, |a, b| {
            with_binary_op!(op, f =>
                arith zip(a, lhs.1, b, rhs.1, out_shape, f),
                cmp zip(a, lhs.1, b, rhs.1, out_shape, f))
        })
    }

    fn select(
        &self,
        on_true: (&Buffer, &Strided),
        on_false: (&Buffer, &Strided),
        pred: (&Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Buffer> {
        let p = super::predicate(pred.0)?;
        same_dtype!("select", on_true.0, on_false.0, |t, f| loops::choose(
            (t, on_true.1),
            (f, on_false.1),
            (p, pred.1),
            out_shape
        ))
    }

    fn cumulative(
        &self,
        op: ReduceOp,
        x: &Buffer,
        shape: &[usize],
        axis: usize,
        reverse: bool,
    ) -> Result<Buffer> {
        with_buffer!(x, v => Ok(Element::into_buffer(scan::cumulative(op, v, shape, axis, reverse)?)))
    }

    fn sort(
        &self,
        x: &Buffer,
        shape: &[usize],
        axis: usize,
        descending: bool,
        indices: bool,
    ) -> Result<Buffer> {
        with_buffer!(x, v => Ok(if indices {
            Buffer::S64(sort::argsort(v, shape, axis, descending)?)
        } else {
            Element::into_buffer(sort::sort(v, shape, axis, descending)?)
        }))
    }

    fn gather(&self, x: &Buffer, positions: &Buffer) -> Result<Buffer> {
        let p = super::positions("gather", positions)?;
        with_buffer!(x, v => Ok(Element::into_buffer(indexed::gather(v, p)?)))
    }

    fn scatter(
        &self,
        mode: ScatterMode,
        target: &Buffer,
        positions: &Buffer,
        updates: &Buffer,
    ) -> Result<Buffer> {
        let p = super::positions("scatter", positions)?;
        same_dtype!("scatter", target, updates, |t, u| Ok(Element::into_buffer(
            indexed::scatter(mode, t, p, u)?
        )))
    }

    fn unary(&self, op: UnaryOp, x: &Buffer) -> Result<Buffer> {
        if let Some(done) = halves::unary(op, x) {
            return done;
        }
        Ok(match x {
            Buffer::F32(v) => match vmath::unary(op, v) {
                Some(out) => Buffer::F32(out?),
                None => Buffer::F32(map(v, |e| op.apply_float(e))?),
            },
            Buffer::F64(v) => Buffer::F64(map(v, |e| op.apply_float(e))?),
            Buffer::BF16(v) => Buffer::BF16(map(v, |e| op.apply_float(e))?),
            Buffer::F16(v) => Buffer::F16(map(v, |e| op.apply_float(e))?),
            Buffer::U8(v) => Buffer::U8(map(v, |e| op.apply(e))?),
            Buffer::U16(v) => Buffer::U16(map(v, |e| op.apply(e))?),
            Buffer::U32(v) => Buffer::U32(map(v, |e| op.apply(e))?),
            Buffer::U64(v) => Buffer::U64(map(v, |e| op.apply(e))?),
            Buffer::S8(v) => Buffer::S8(map(v, |e| op.apply(e))?),
            Buffer::S16(v) => Buffer::S16(map(v, |e| op.apply(e))?),
            Buffer::S32(v) => Buffer::S32(map(v, |e| op.apply(e))?),
            Buffer::S64(v) => Buffer::S64(map(v, |e| op.apply(e))?),
            Buffer::C64(v) => Buffer::C64(map(v, |e| op.apply_complex(e))?),
            Buffer::C128(v) => Buffer::C128(map(v, |e| op.apply_complex(e))?),
        })
    }

    fn cast(&self, x: &Buffer, to: DType) -> Result<Buffer> {
        // Parallel loops between the dtypes programs compute in (`ir::fused::FUSED_DTYPES`);
        // casts involving u16, u64, s8 or s16 take the reference's plain loop, since a parallel
        // loop for each of the 100 pairs of dtypes lengthened the optimised build for
        // conversions that are rare. `convert` picks its path from the types, so each loop is
        // a single conversion the compiler vectorises.
        if let Some(done) = halves::cast(x, to) {
            return done;
        }
        let plain = || super::binary::BinaryBackend.cast(x, to);
        fused::with_fused_dtype!(x.dtype(), T => {
            let v = T::slice_of(x).ok_or_else(|| super::dtype_mix("cast", T::DTYPE, x.dtype()))?;
            fused::with_fused_dtype!(to, U => Ok(U::into_buffer(
                map(v, crate::element::convert::<T, U>)?
            )), else plain())
        }, else plain())
    }

    fn reduce(&self, op: ReduceOp, x: &Buffer, shape: &[usize], axes: &[usize]) -> Result<Buffer> {
        reduce::reduce(op, x, shape, axes)
    }

    fn arg_reduce(&self, op: ArgOp, x: &Buffer, shape: &[usize], axis: usize) -> Result<Buffer> {
        reduce::arg_reduce(op, x, shape, axis)
    }

    fn matmul(&self, lhs: &Buffer, rhs: &Buffer, d: MatmulDims) -> Result<Buffer> {
        Ok(match (lhs, rhs) {
            (Buffer::F32(a), Buffer::F32(b)) => Buffer::F32(gemm_float(a, b, d)?),
            (Buffer::F64(a), Buffer::F64(b)) => Buffer::F64(gemm_float(a, b, d)?),
            (Buffer::C64(a), Buffer::C64(b)) if complex_gemm(d) => {
                Buffer::C64(gemm_complex(a, b, d)?)
            }
            (Buffer::C128(a), Buffer::C128(b)) if complex_gemm(d) => {
                Buffer::C128(gemm_complex(a, b, d)?)
            }
            _ => same_dtype!("dot", lhs, rhs, |a, b| Element::into_buffer(matmul_int(
                a, b, d
            )?)),
        })
    }

    /// Large f32 products read the left matrices where they lie (`transposed_gemm`, AVX-512);
    /// the rest copy the smaller side transposed for the plain product.
    fn transposed_matmul(&self, lhs: &Buffer, rhs: &Buffer, d: MatmulDims) -> Result<Buffer> {
        #[cfg(target_arch = "x86_64")]
        if let (Buffer::F32(a), Buffer::F32(b)) = (lhs, rhs) {
            if let Some(out) = transposed_gemm::products(a, b, d) {
                return Ok(Buffer::F32(out?));
            }
        }
        crate::backend::transposed_matmul_by_copy(self, lhs, rhs, d)
    }

    fn linalg(&self, op: &crate::ir::LinAlg, inputs: &[&Buffer]) -> Result<Buffer> {
        use crate::backend::linalg_reference::{float_inputs, run_buffers, FloatInputs};
        let Some(library) = lapack::lapack() else {
            return run_buffers(op, inputs);
        };
        match float_inputs(op, inputs)? {
            FloatInputs::F32(x) => lapack::run(library, op, &x),
            FloatInputs::F64(x) => lapack::run(library, op, &x),
            FloatInputs::C64(x) => {
                lapack_complex::run(op, &x).unwrap_or_else(|| run_buffers(op, inputs))
            }
            FloatInputs::C128(x) => {
                lapack_complex::run(op, &x).unwrap_or_else(|| run_buffers(op, inputs))
            }
        }
    }

    fn fft(&self, x: &Buffer, f: &crate::ir::Fft) -> Result<Buffer> {
        fft::fft(x, f)
    }

    fn conv(&self, input: &Buffer, kernel: &Buffer, dims: &ConvDims) -> Result<Buffer> {
        match (input, kernel) {
            (Buffer::F32(x), Buffer::F32(w)) => Ok(Buffer::F32(conv::conv(x, w, dims)?)),
            (Buffer::F64(x), Buffer::F64(w)) => Ok(Buffer::F64(conv::conv(x, w, dims)?)),
            (x, w) => Err(crate::error::Error::InvalidArgument {
                op: "conv",
                message: format!(
                    "internal: a {} input and a {} kernel reached the backend (floats only)",
                    x.dtype(),
                    w.dtype()
                ),
            }),
        }
    }

    fn copy_strided(&self, x: &Buffer, view: &Strided, out_shape: &[usize]) -> Result<Buffer> {
        with_buffer!(x, v => Ok(Element::into_buffer(copy_view(v, view, out_shape)?)))
    }

    fn take(&self, x: &Buffer, shape: &[usize], indices: &[usize], axis: usize) -> Result<Buffer> {
        let inner: usize = shape[axis + 1..].iter().product();
        let mut out_shape = shape.to_vec();
        out_shape[axis] = indices.len();
        let len = indices.len().max(1);
        // A row per outer index, each index's `inner` values copied in turn: a row (and a
        // division, and a copy call) per index cost 7-8 ns an entry when `inner` is 1 (a
        // kernel flipped along its last axis for an input gradient: 140 us for 18,432 entries).
        let row = len.saturating_mul(inner);
        with_buffer!(x, v => {
            let mut out = try_alloc(numel(&out_shape), Element::ZERO, &out_shape)?;
            if inner > 0 && !indices.is_empty() {
                for_each_row_mut(&mut out, row, MIN_PER_TASK / row.max(1), |outer, o| {
                    let base = outer * shape[axis] * inner;
                    if inner == 1 {
                        for (o, &i) in o.iter_mut().zip(indices) {
                            *o = v[base + i];
                        }
                        return;
                    }
                    for (o, &i) in o.chunks_exact_mut(inner).zip(indices) {
                        o.copy_from_slice(&v[base + i * inner..base + (i + 1) * inner]);
                    }
                });
            }
            Ok(Element::into_buffer(out))
        })
    }

    fn concatenate(&self, parts: &[(&Buffer, &[usize])], axis: usize) -> Result<Buffer> {
        let mut out_shape = parts[0].1.to_vec();
        out_shape[axis] = parts.iter().map(|p| p.1[axis]).sum();
        let inner: usize = out_shape[axis + 1..].iter().product();
        let row = out_shape[axis] * inner;
        let dtype = parts[0].0.dtype();
        crate::buffer::with_dtype!(dtype, T => {
            let typed: Vec<(&[T], usize)> = parts
                .iter()
                .map(|p| {
                    T::slice_of(p.0)
                        .map(|s| (s, p.1[axis] * inner))
                        .ok_or_else(|| super::dtype_mix("concatenate", dtype, p.0.dtype()))
                })
                .collect::<Result<_>>()?;
            let mut out = try_alloc(numel(&out_shape), T::ZERO, &out_shape)?;
            if row > 0 {
                for_each_row_mut(&mut out, row, MIN_PER_TASK / row, |o, dst| {
                    let mut at = 0;
                    for (src, width) in &typed {
                        dst[at..at + width].copy_from_slice(&src[o * width..(o + 1) * width]);
                        at += width;
                    }
                });
            }
            Ok(T::into_buffer(out))
        })
    }

    fn put_slice(
        &self,
        x: &Buffer,
        shape: &[usize],
        update: &Buffer,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<Buffer> {
        let mut out = x.try_clone()?;
        let dst_strides = strides(shape);
        let inner = inner_len(update_shape);
        same_dtype!("put_slice", &mut out, update, |o, u| {
            if inner > 0 && !u.is_empty() {
                let outer = &update_shape[..update_shape.len().saturating_sub(1)];
                let mut c = vec![0; outer.len()];
                for (r, src) in u.chunks(inner).enumerate() {
                    unravel(r, outer, &mut c);
                    let at: usize = (0..update_shape.len())
                        .map(|d| (c.get(d).copied().unwrap_or(0) + start[d]) * dst_strides[d])
                        .sum();
                    o[at..at + inner].copy_from_slice(src);
                }
            }
        });
        Ok(out)
    }
}
