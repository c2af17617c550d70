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

/// Runs `task(i)` for every `i` in `0..tasks` on the pool, split as rayon splits a range.
///
/// The loops' one instantiation of rayon's machinery. Every generic caller (a loop per op and
/// dtype) hands its closure over as `dyn`, an indirect call per task of thousands of elements,
/// instead of compiling its own copy of rayon's join, bridge and job code: with a copy per
/// call site those made a third of the runtime's machine code (2,420 instances of
/// `join_context`'s closure alone) and of its build time.
pub(super) fn for_each_task(tasks: usize, task: &(dyn Fn(usize) + Sync)) {
    (0..tasks).into_par_iter().for_each(task);
}

/// `each(i, part)` for the `i`th of `out`'s parts of `chunk` elements (the last may be
/// shorter), on all cores: `par_chunks_mut(chunk).enumerate().for_each(..)` through
/// [`for_each_task`].
pub(super) fn for_each_chunk_mut<T: Send>(
    out: &mut [T],
    chunk: usize,
    each: impl Fn(usize, &mut [T]) + Sync,
) {
    let chunk = chunk.max(1);
    let len = out.len();
    let base = SendPtr(out.as_mut_ptr());
    for_each_task(len.div_ceil(chunk), &|i| {
        let start = i * chunk;
        // SAFETY: task `i` alone gets the `chunk` (or, last, fewer) elements from `start`, all
        // inside `out`, which the caller's exclusive borrow keeps alive until every task has
        // returned.
        let part =
            unsafe { std::slice::from_raw_parts_mut(base.offset(start), chunk.min(len - start)) };
        each(i, part)
    });
}

/// `each(r, row)` for every row of `row` elements of `out` (`r` counts rows), on all cores,
/// at least `min_rows` rows to a task: `par_chunks_mut(row).with_min_len(min_rows)
/// .enumerate().for_each(..)` through [`for_each_task`].
pub(super) fn for_each_row_mut<T: Send>(
    out: &mut [T],
    row: usize,
    min_rows: usize,
    each: impl Fn(usize, &mut [T]) + Sync,
) {
    let (row, per_task) = (row.max(1), min_rows.max(1));
    for_each_chunk_mut(out, row.saturating_mul(per_task), |task, block| {
        for (r, part) in block.chunks_mut(row).enumerate() {
            each(task * per_task + r, part)
        }
    });
}

/// `f(i)` for every `i` in `0..tasks`, on all cores, in order.
pub(super) fn map_tasks<R: Send>(tasks: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let mut slots: Vec<Option<R>> = (0..tasks).map(|_| None).collect();
    for_each_chunk_mut(&mut slots, 1, |i, slot| slot[0] = Some(f(i)));
    slots.into_iter().flatten().collect()
}

/// `f(i, part)` for the `i`th of `v`'s parts of `chunk` elements (the last may be shorter),
/// on all cores, in order: `par_chunks(chunk).enumerate().map(..).collect()`.
pub(super) fn map_chunks<T: Sync, R: Send>(
    v: &[T],
    chunk: usize,
    f: impl Fn(usize, &[T]) -> R + Sync,
) -> Vec<R> {
    let chunk = chunk.max(1);
    map_tasks(v.len().div_ceil(chunk), |i| {
        let start = i * chunk;
        f(i, &v[start..(start + chunk).min(v.len())])
    })
}

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
    for_each_chunk_mut(
        &mut out.spare_capacity_mut()[..len],
        chunk,
        |task, slots| write(task * chunk, slots),
    );
    // SAFETY: the chunks cover the first `len` slots and the caller's `write` initialised each.
    unsafe { out.set_len(len) };
    Ok(out)
}

/// A raw pointer handed to parallel tasks that write disjoint parts of one buffer.
pub(super) struct SendPtr<T>(pub(super) *mut T);
// Copy whatever `T` is (a derive would ask `T: Copy`): it is a pointer.
impl<T> Clone for SendPtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SendPtr<T> {}
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
