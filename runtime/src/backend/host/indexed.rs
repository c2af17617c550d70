//! Gathers and scatters by flat positions on the host. A gather writes each output entry on
//! its own, so it runs on all cores; a scatter runs in position order on one core, which
//! keeps repeated positions deterministic (sums in the same order, the last put wins) and
//! costs little beside the copy of the target it starts from.

use crate::allocate::try_reserve;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::indexed::{gathered, slot};
use crate::ir::ScatterMode;

use super::parallel::{par_write, MIN_PER_TASK};

pub(super) fn gather<T: Element>(x: &[T], positions: &[i64]) -> Result<HostVec<T>> {
    let n = positions.len();
    // SAFETY: every slot handed over is written.
    unsafe {
        par_write(n, &[n], MIN_PER_TASK, |start, slots| {
            for (k, slot) in slots.iter_mut().enumerate() {
                slot.write(gathered(x, positions[start + k]));
            }
        })
    }
}

pub(super) fn scatter<T: Element>(
    mode: ScatterMode,
    target: &[T],
    positions: &[i64],
    updates: &[T],
) -> Result<HostVec<T>> {
    let mut out = try_reserve(target.len(), &[target.len()])?;
    out.extend_from_slice(target);
    for (&p, &u) in positions.iter().zip(updates) {
        if let Some(k) = slot(p, out.len()) {
            out[k] = mode.combine(out[k], u);
        }
    }
    Ok(out)
}
