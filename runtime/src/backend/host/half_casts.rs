//! Casts between the half floats and f32, the two conversions every op on a half tensor pays
//! (dispatch widens its operands to f32 and rounds its result back): f16 through F16C's
//! conversions where the CPU has them (the `half` crate's slice conversions choose at run
//! time), bf16 by moving bits, both in parallel blocks.

use std::mem::MaybeUninit;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use super::loops::map;
use super::parallel::{par_write, MIN_PER_TASK};
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::Result;

/// Elements converted through a stack block at a time: F16C converts 8 per instruction, and
/// the block keeps the slice conversion's output in L1 before it is copied out.
const BLOCK: usize = 512;

/// The cast of `x` to `to` when it is one of the half <-> f32 conversions, else `None`.
pub(super) fn cast(x: &Buffer, to: DType) -> Option<Result<Buffer>> {
    Some(match (x, to) {
        (Buffer::F16(v), DType::F32) => {
            blocks(v, |src, dst: &mut [f32]| src.convert_to_f32_slice(dst)).map(Buffer::F32)
        }
        (Buffer::F32(v), DType::F16) => {
            blocks(v, |src, dst: &mut [f16]| dst.convert_from_f32_slice(src)).map(Buffer::F16)
        }
        // bf16 is the top half of an f32: widening is a shift, narrowing rounds to nearest
        // even on the bits (both loops vectorise).
        (Buffer::BF16(v), DType::F32) => {
            map(v, |h: bf16| f32::from_bits((h.to_bits() as u32) << 16)).map(Buffer::F32)
        }
        (Buffer::F32(v), DType::BF16) => map(v, bf16::from_f32).map(Buffer::BF16),
        _ => return None,
    })
}

/// `convert` applied to `v` a block at a time, blocks in parallel.
fn blocks<T: Element, U: Element>(
    v: &[T],
    convert: impl Fn(&[T], &mut [U]) + Sync,
) -> Result<crate::host_vec::HostVec<U>> {
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
