//! Cache-blocked copies of transposed views.
//!
//! A transpose read row by row walks the source down a column: every element is on a
//! different cache line (and, for wide matrices, a different page), so `{10000,10000}` f32
//! ran at 0.25 Gelem/s, no faster than `binary`. Copying tile by tile keeps a tile's source
//! lines in L1 while all their elements are used.

use std::mem::MaybeUninit;

use super::parallel::for_each_chunk_mut;

use crate::allocate::try_reserve;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::Strided;
use crate::shape::{numel, unravel};

/// Output rows per task: each source line run read is this long (512 B of f32), long
/// enough for the prefetchers and for few page walks per byte.
const BAND: usize = 128;

/// Output columns per tile: `BAND × TILE` elements, whose source and destination lines fit
/// L1 together.
const TILE: usize = 16;

/// The copy of `view` when its last two output axes read the source transposed (the
/// second-last contiguous, the last strided) and both are at least a tile long; `None` for
/// every other view, which the row-wise copy handles well.
pub(super) fn copy<T: Element>(
    v: &[T],
    view: &Strided,
    out_shape: &[usize],
) -> Option<Result<HostVec<T>>> {
    let rank = out_shape.len();
    if rank < 2 || view.strides.len() != rank {
        return None;
    }
    let (rows, cols) = (out_shape[rank - 2], out_shape[rank - 1]);
    let (row_step, col_step) = (view.strides[rank - 2], view.strides[rank - 1]);
    if row_step != 1 || col_step <= 1 || rows < BAND || cols < TILE {
        return None;
    }
    let outer = &out_shape[..rank - 2];
    let plane = rows * cols;
    let len = numel(out_shape);
    Some(try_reserve::<T>(len, out_shape).map(|mut out| {
        let mut coords = vec![0; outer.len()];
        for (p, dst) in out.spare_capacity_mut()[..len]
            .chunks_mut(plane)
            .enumerate()
        {
            unravel(p, outer, &mut coords);
            let base = view.offset
                + coords
                    .iter()
                    .zip(&view.strides)
                    .map(|(c, s)| c * s)
                    .sum::<usize>();
            for_each_chunk_mut(dst, BAND * cols, |t, band| {
                copy_band(v, base + t * BAND, col_step, cols, band)
            });
        }
        // SAFETY: the planes cover the first `len` slots and `copy_band` wrote each.
        unsafe { out.set_len(len) };
        out
    }))
}

/// One band of output rows (`band.len() / cols` of them, starting at source offset `base`),
/// tile by tile: for each tile the source lines are read contiguously down the rows.
fn copy_band<T: Element>(
    v: &[T],
    base: usize,
    col_step: usize,
    cols: usize,
    band: &mut [MaybeUninit<T>],
) {
    let rows = band.len() / cols;
    for c0 in (0..cols).step_by(TILE) {
        let c1 = (c0 + TILE).min(cols);
        for c in c0..c1 {
            let src = &v[base + c * col_step..base + c * col_step + rows];
            for (r, &x) in src.iter().enumerate() {
                band[r * cols + c].write(x);
            }
        }
    }
}
