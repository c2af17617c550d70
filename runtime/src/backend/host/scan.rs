//! Cumulative scans on the host: each line along the axis is a running combine. Lines are
//! independent, so they run in parallel; where the axis is not the last, a step combines a
//! whole row of `inner` entries with the previous one (a loop the compiler vectorises).

use crate::allocate::try_alloc;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::ReduceOp;
use crate::shape::numel;

use super::loops::MIN_PER_TASK;
use super::parallel::{for_each_chunk_mut, for_each_row_mut, for_each_task, SendPtr};

/// Columns of a non-last axis handled by one task.
const COLUMNS: usize = 4096;

pub(super) fn cumulative<T: Element>(
    op: ReduceOp,
    v: &[T],
    shape: &[usize],
    axis: usize,
    reverse: bool,
) -> Result<HostVec<T>> {
    let mut out = try_alloc(v.len(), T::ZERO, shape)?;
    let len = shape[axis];
    let inner = numel(&shape[axis + 1..]);
    let block = len * inner;
    if block == 0 {
        return Ok(out);
    }
    if inner == 1 {
        for_each_row_mut(&mut out, len, MIN_PER_TASK / len, |r, o| {
            let x = &v[r * len..(r + 1) * len];
            let mut acc = op.identity::<T>();
            in_order(len, reverse, |k, _| {
                acc = op.combine(acc, x[k]);
                o[k] = acc;
            });
        });
        return Ok(out);
    }
    for_each_chunk_mut(&mut out, block, |b, o| {
        let x = &v[b * block..(b + 1) * block];
        // Column chunks of this block, each scanned row by row.
        let o_ptr = SendPtr(o.as_mut_ptr());
        for_each_task(inner.div_ceil(COLUMNS), &|chunk| {
            let (from, to) = (chunk * COLUMNS, ((chunk + 1) * COLUMNS).min(inner));
            let o = o_ptr;
            in_order(len, reverse, |k, prev| {
                for c in from..to {
                    let here = k * inner + c;
                    // SAFETY: chunks cover disjoint columns of `o`, so no two tasks touch
                    // one element; every index is below `block` = `o.len()`.
                    unsafe {
                        let before = prev.map_or(op.identity::<T>(), |p| *o.0.add(p * inner + c));
                        *o.0.add(here) = op.combine(before, x[here]);
                    }
                }
            });
        });
    });
    Ok(out)
}

/// Calls `step(k, previous k)` for each position of a line of `len` in scan order. Generic, so
/// each scan's step is inlined into the loop (with a `dyn` step per element a 10M-entry f32
/// scan took 41 ms, inlined 15 ms, on 2 cores).
#[inline(always)]
fn in_order(len: usize, reverse: bool, mut step: impl FnMut(usize, Option<usize>)) {
    let mut prev = None;
    for j in 0..len {
        let k = if reverse { len - 1 - j } else { j };
        step(k, prev);
        prev = Some(k);
    }
}
