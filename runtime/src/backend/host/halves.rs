//! bf16 and f16 on the host. Every op on half operands may take `memory::dispatch`'s wide
//! route (widen to f32, compute, round back: three passes over memory); the elementwise ops
//! here take one instead: each task widens a block that fits in L1 to f32, computes it with
//! the f32 kernels, and rounds it back before touching the next, so a half op reads and
//! writes 16-bit memory once, as numpy's float16 loops do. The result is the wide route's:
//! computed in f32, rounded once to nearest even. Widening and narrowing use F16C for f16
//! where the CPU has it (the `half` crate's slice conversions choose at run time) and bit
//! moves for bf16. The casts between halves and f32 are here too.

use std::mem::MaybeUninit;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use super::loops::map;
use super::parallel::{par_write, MIN_PER_TASK};
use super::vmath;
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::{BinaryOp, Op, UnaryOp};

/// Elements converted and computed a block at a time: F16C converts 8 per instruction, and
/// three f32 blocks of this size stay in L1.
const BLOCK: usize = 512;

/// A half float's conversions of a block to and from f32.
pub(super) trait HalfBlock: Element {
    /// `src` exactly, as f32.
    fn widen(src: &[Self], dst: &mut [f32]);
    /// `src` rounded to nearest even.
    fn narrow(src: &[f32], dst: &mut [Self]);
}

impl HalfBlock for f16 {
    fn widen(src: &[Self], dst: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if wide_conversions() {
            // SAFETY: AVX-512F is present (checked above); the slices have equal lengths.
            return unsafe { avx512::widen(src.reinterpret_cast(), dst) };
        }
        src.convert_to_f32_slice(dst)
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        #[cfg(target_arch = "x86_64")]
        if wide_conversions() {
            // SAFETY: as above.
            return unsafe { avx512::narrow(src, dst.reinterpret_cast_mut()) };
        }
        dst.convert_from_f32_slice(src)
    }
}

/// Whether the CPU converts 16 halves per instruction (AVX-512F's `vcvtph2ps`/`vcvtps2ph`);
/// the `half` crate's F16C path converts 4 or 8.
#[cfg(target_arch = "x86_64")]
fn wide_conversions() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| is_x86_feature_detected!("avx512f"))
}

/// f16 <-> f32 sixteen at a time; the rounding is the hardware's nearest-even, as F16C's.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use half::f16;

    /// # Safety
    /// The CPU must have AVX-512F; `dst` is at least as long as `src`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn widen(src: &[u16], dst: &mut [f32]) {
        let n = src.len().min(dst.len());
        let whole = n - n % 16;
        for i in (0..whole).step_by(16) {
            // SAFETY: i + 16 <= n, within both slices; unaligned loads and stores.
            unsafe {
                let h = _mm256_loadu_si256(src.as_ptr().add(i).cast());
                _mm512_storeu_ps(dst.as_mut_ptr().add(i), _mm512_cvtph_ps(h));
            }
        }
        for i in whole..n {
            dst[i] = f16::from_bits(src[i]).to_f32();
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F; `dst` is at least as long as `src`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn narrow(src: &[f32], dst: &mut [u16]) {
        let n = src.len().min(dst.len());
        let whole = n - n % 16;
        for i in (0..whole).step_by(16) {
            // SAFETY: as in `widen`.
            unsafe {
                let x = _mm512_loadu_ps(src.as_ptr().add(i));
                let h = _mm512_cvtps_ph::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(x);
                _mm256_storeu_si256(dst.as_mut_ptr().add(i).cast(), h);
            }
        }
        for i in whole..n {
            dst[i] = f16::from_f32(src[i]).to_bits();
        }
    }
}

impl HalfBlock for bf16 {
    // bf16 is the top half of an f32: widening is a shift, narrowing rounds on the bits (both
    // loops vectorise).
    fn widen(src: &[Self], dst: &mut [f32]) {
        for (d, s) in dst.iter_mut().zip(src) {
            *d = f32::from_bits((s.to_bits() as u32) << 16);
        }
    }
    fn narrow(src: &[f32], dst: &mut [Self]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = bf16::from_f32(s);
        }
    }
}

/// True when the host computes `op` on these half operands itself, block by block: unary
/// ops, and arithmetic between two operands read in order (no broadcast, no strides).
pub(super) fn computes(op: &Op, inputs: &[&Buffer]) -> bool {
    let halves = inputs.iter().all(|b| b.dtype().is_half());
    halves
        && match op {
            Op::Unary(_) => true,
            Op::Binary {
                op,
                lhs,
                rhs,
                out_shape,
            } => {
                !op.is_comparison() && lhs.is_contiguous(out_shape) && rhs.is_contiguous(out_shape)
            }
            _ => false,
        }
}

/// The cast of `x` to `to` when it is one of the half <-> f32 conversions, else `None`.
pub(super) fn cast(x: &Buffer, to: DType) -> Option<Result<Buffer>> {
    Some(match (x, to) {
        (Buffer::F16(v), DType::F32) => converted(v, f16::widen).map(Buffer::F32),
        (Buffer::F32(v), DType::F16) => converted(v, f16::narrow).map(Buffer::F16),
        (Buffer::BF16(v), DType::F32) => {
            map(v, |h: bf16| f32::from_bits((h.to_bits() as u32) << 16)).map(Buffer::F32)
        }
        (Buffer::F32(v), DType::BF16) => map(v, bf16::from_f32).map(Buffer::BF16),
        _ => return None,
    })
}

/// A unary op on a half buffer, block by block through the f32 kernels.
pub(super) fn unary(op: UnaryOp, x: &Buffer) -> Option<Result<Buffer>> {
    Some(match x {
        Buffer::F16(v) => unary_blocks(op, v).map(Buffer::F16),
        Buffer::BF16(v) => unary_blocks(op, v).map(Buffer::BF16),
        _ => return None,
    })
}

/// An arithmetic op between two half buffers of one length, block by block in f32; `None`
/// for anything else (comparisons, other dtypes), which takes the general path.
pub(super) fn binary(op: BinaryOp, a: &Buffer, b: &Buffer) -> Option<Result<Buffer>> {
    if op.is_comparison() || a.len() != b.len() {
        return None;
    }
    Some(match (a, b) {
        (Buffer::F16(a), Buffer::F16(b)) => binary_blocks(op, a, b).map(Buffer::F16),
        (Buffer::BF16(a), Buffer::BF16(b)) => binary_blocks(op, a, b).map(Buffer::BF16),
        _ => return None,
    })
}

fn unary_blocks<H: HalfBlock>(op: UnaryOp, v: &[H]) -> Result<HostVec<H>> {
    let kernel = vmath::kernel(op);
    blocks(v.len(), |start, wide: &mut [f32], out: &mut [f32]| {
        H::widen(&v[start..start + wide.len()], wide);
        match kernel {
            Some(f) => {
                // SAFETY: `&mut [f32]` as `&mut [MaybeUninit<f32>]` of the same length; the
                // kernel writes every slot with an initialised value.
                let slots = unsafe {
                    std::slice::from_raw_parts_mut(
                        out.as_mut_ptr().cast::<MaybeUninit<f32>>(),
                        out.len(),
                    )
                };
                f(wide, slots)
            }
            None => {
                for (o, &x) in out.iter_mut().zip(wide.iter()) {
                    *o = op.apply_float(x);
                }
            }
        }
    })
}

fn binary_blocks<H: HalfBlock>(op: BinaryOp, a: &[H], b: &[H]) -> Result<HostVec<H>> {
    blocks(a.len(), |start, wide: &mut [f32], out: &mut [f32]| {
        let n = wide.len();
        H::widen(&a[start..start + n], wide);
        let mut rhs = [0f32; BLOCK];
        H::widen(&b[start..start + n], &mut rhs[..n]);
        let rhs = &rhs[..n];
        with_binary_op!(op, f =>
        arith for ((o, &x), &y) in out.iter_mut().zip(wide.iter()).zip(rhs) {
            *o = f(x, y);
        },
        cmp for ((o, &x), &y) in out.iter_mut().zip(wide.iter()).zip(rhs) {
            *o = f32::from(f(x, y));
        })
    })
}

/// `len` half results, each block computed by `compute(start, wide, out)` (which fills `wide`
/// from its inputs at `start` and writes the f32 results into `out`) and narrowed, blocks in
/// parallel tasks.
fn blocks<H: HalfBlock>(
    len: usize,
    compute: impl Fn(usize, &mut [f32], &mut [f32]) + Sync,
) -> Result<HostVec<H>> {
    // SAFETY: each task writes every slot it is given, block by block (the last one short).
    unsafe {
        par_write(len, &[len], MIN_PER_TASK, |start, slots| {
            let (mut wide, mut out) = ([0f32; BLOCK], [0f32; BLOCK]);
            for (k, slots) in slots.chunks_mut(BLOCK).enumerate() {
                let n = slots.len();
                compute(start + k * BLOCK, &mut wide[..n], &mut out[..n]);
                // Narrowed straight into the result: `MaybeUninit<H>` has `H`'s layout, and
                // `narrow` writes every slot without reading any.
                let slots =
                    std::slice::from_raw_parts_mut(slots.as_mut_ptr().cast::<H>(), slots.len());
                H::narrow(&out[..n], slots);
            }
        })
    }
}

/// `convert` applied to `v` a block at a time, blocks in parallel.
fn converted<T: Element, U: Element>(
    v: &[T],
    convert: impl Fn(&[T], &mut [U]) + Sync,
) -> Result<HostVec<U>> {
    let per_task = MIN_PER_TASK.max(BLOCK);
    // SAFETY: each task writes every slot it is given (block by block, the last one short).
    unsafe {
        par_write(v.len(), &[v.len()], per_task, |start, slots| {
            let mut block = [U::ZERO; BLOCK];
            for (k, out) in slots.chunks_mut(BLOCK).enumerate() {
                let from = start + k * BLOCK;
                let n = out.len();
                convert(&v[from..from + n], &mut block[..n]);
                for (o, &x) in out.iter_mut().zip(&block[..n]) {
                    *o = MaybeUninit::new(x);
                }
            }
        })
    }
}
