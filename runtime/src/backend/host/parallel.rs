//! Work split across cores: the smallest task worth a thread, and parallel writes into
//! reserved capacity, so that each page is first touched by the core that computes it.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::allocate::try_reserve;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;

/// Below this many elements per task, threading costs more than it saves.
pub(super) const MIN_PER_TASK: usize = 1 << 15;

/// A vector of `len` elements written on all cores, `chunk` slots per task: `write(start,
/// slots)` gets the uninitialised slots from `start` on. Writing into the reserved capacity
/// makes each page's first touch a useful write, on the core that computes it.
///
/// # Safety
/// `write` must initialise every slot it is given.
pub(super) unsafe fn par_write<U: Element>(
    len: usize,
    shape: &[usize],
    chunk: usize,
    write: impl Fn(usize, &mut [MaybeUninit<U>]) + Sync,
) -> Result<HostVec<U>> {
    let chunk = chunk.max(1);
    let mut out = try_reserve::<U>(len, shape)?;
    out.spare_capacity_mut()[..len]
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each(|(task, slots)| write(task * chunk, slots));
    // SAFETY: the chunks cover the first `len` slots and the caller's `write` initialised each.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// A raw pointer handed to parallel tasks that write disjoint parts of one buffer.
#[derive(Clone, Copy)]
pub(super) struct SendPtr<T>(pub(super) *mut T);
// SAFETY: used only for disjoint writes (see the call sites).
unsafe impl<T> Send for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer `k` elements on. A method, so that a closure using it captures the whole
    /// `SendPtr` (which is `Sync`) rather than its raw pointer field.
    pub(super) fn offset(self, k: usize) -> *mut T {
        self.0.wrapping_add(k)
    }
}
// SAFETY: as above.
unsafe impl<T> Sync for SendPtr<T> {}
