//! The meaning of the indexed ops, `Op::Gather` and `Op::Scatter`, element by element. They
//! address their data by flat s64 positions that the frontend computes (`ops/indexed.rs`:
//! Nx's `take`, `take_along_axis`, `gather`, `indexed_add`, `indexed_put`), so one kernel per
//! backend serves every axis layout. Positions are data, not checked by the frontend, so each
//! op defines what a position outside its buffer does instead of trusting it.

use crate::element::Element;

/// How an update joins the target's entry in `Op::Scatter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterMode {
    /// Added to it (`indexed_add`; integers wrap). Repeated positions add up.
    Add,
    /// Put in its place (`indexed_put`). Of repeated positions one wins, which one is not
    /// defined (as in Nx: devices write in parallel).
    Put,
}

impl ScatterMode {
    /// The entry after `update` joined `entry`.
    #[inline(always)]
    pub fn combine<T: Element>(self, entry: T, update: T) -> T {
        match self {
            ScatterMode::Add => crate::ir::elementwise::BinaryOp::Add.arith(entry, update),
            ScatterMode::Put => update,
        }
    }
}

/// The slot a position names in a buffer of `len` entries, if it is inside.
#[inline(always)]
pub fn slot(position: i64, len: usize) -> Option<usize> {
    usize::try_from(position).ok().filter(|&p| p < len)
}

/// The entry of `x` at `position`, or 0 outside it: a gather's element. The zero makes the
/// gather the exact adjoint of a scatter-add that skips those positions, which the gradients
/// of both rely on.
#[inline(always)]
pub fn gathered<T: Element>(x: &[T], position: i64) -> T {
    slot(position, x.len()).map_or(T::ZERO, |p| x[p])
}
