//! Large outputs written with non-temporal (streaming) stores.
//!
//! An ordinary store to a line not in cache first reads the line from memory (read for
//! ownership), so `c = a + b` on arrays larger than the caches moves four arrays' worth of
//! bytes, not three. Streaming stores skip that read. Each task computes a block into an
//! L1-resident scratch buffer and streams it out; small outputs, which stay in cache and are
//! read back soon, keep ordinary stores (the callers decide by [`worth_streaming`]).

use std::mem::MaybeUninit;

use super::parallel::{par_write, MIN_PER_TASK};
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;

/// Outputs from this size on are streamed: past what the caches of this class of machine
/// hold, so nothing is lost by bypassing them.
const FROM_BYTES: usize = 8 << 20;

/// Scratch block per step: 4 KiB, well inside L1 beside the inputs' lines.
const BLOCK_BYTES: usize = 4096;

/// True when an output of `len` elements of `U` is large enough to stream.
pub(super) fn worth_streaming<U>(len: usize) -> bool {
    len.saturating_mul(std::mem::size_of::<U>()) >= FROM_BYTES
}

/// A vector of `len` elements whose element `i` is what `produce(start, block)` writes at
/// `block[i - start]`, produced block by block on all cores and streamed to memory.
pub(super) fn par_fill<U: Element>(
    len: usize,
    shape: &[usize],
    produce: impl Fn(usize, &mut [U]) + Sync,
) -> Result<HostVec<U>> {
    let per_block = (BLOCK_BYTES / std::mem::size_of::<U>().max(1)).max(1);
    // SAFETY: `write_streaming` writes every element of each block of the task's slots, and
    // `fence` makes the streamed stores visible before the task joins.
    unsafe {
        par_write(len, shape, MIN_PER_TASK, |base, dst| {
            let mut scratch = vec![U::ZERO; per_block];
            for (b, dst) in dst.chunks_mut(per_block).enumerate() {
                let block = &mut scratch[..dst.len()];
                produce(base + b * per_block, block);
                write_streaming(block, dst);
            }
            fence();
        })
    }
}

/// Copies `src` to `dst` (same length), streaming every whole 16-byte aligned piece.
pub(super) fn write_streaming<U: Element>(src: &[U], dst: &mut [MaybeUninit<U>]) {
    let bytes = std::mem::size_of_val(src);
    let (s, d) = (src.as_ptr().cast::<u8>(), dst.as_mut_ptr().cast::<u8>());
    // Bytes before the first 16-byte boundary of the destination, and whole pieces after it.
    let head = (d as usize).wrapping_neg() % 16;
    let head = head.min(bytes);
    let pieces = (bytes - head) / 16;
    // SAFETY: `src` and `dst` are distinct allocations of `bytes` bytes each (the scratch
    // buffer and the output); every offset below stays under `bytes`, and the streamed
    // pointer is 16-byte aligned by construction of `head`.
    unsafe {
        std::ptr::copy_nonoverlapping(s, d, head);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
            for i in 0..pieces {
                let at = head + i * 16;
                let v = _mm_loadu_si128(s.add(at).cast::<__m128i>());
                _mm_stream_si128(d.add(at).cast::<__m128i>(), v);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        std::ptr::copy_nonoverlapping(s.add(head), d.add(head), pieces * 16);
        let done = head + pieces * 16;
        std::ptr::copy_nonoverlapping(s.add(done), d.add(done), bytes - done);
    }
}

/// Orders this thread's streamed stores before anything it does next (streaming stores are
/// weakly ordered; the join that ends a task must not publish the buffer before them).
pub(super) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of x86-64; sfence has no operands.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}
