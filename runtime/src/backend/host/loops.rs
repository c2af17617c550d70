//! The loops every host kernel family shares: how much work a task gets, parallel writes into
//! reserved capacity (each page first touched by the core that computes it), row-wise walks of
//! strided views, and the elementwise map and zip built on them.

use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::Strided;
use crate::shape::{numel, strides, unravel};

pub(super) use super::parallel::{
    for_each_chunk_mut, for_each_row_mut, map_chunks, map_tasks, par_write, MIN_PER_TASK,
};
use super::{stream, transpose};

/// Offset of the first element of output row `row` (a row is the last axis) in a strided view.
pub(super) fn row_base(
    row: usize,
    out_shape: &[usize],
    view: &Strided,
    coords: &mut [usize],
) -> usize {
    let outer = &out_shape[..out_shape.len().saturating_sub(1)];
    unravel(row, outer, &mut coords[..outer.len()]);
    view.offset
        + coords[..outer.len()]
            .iter()
            .zip(&view.strides)
            .map(|(c, s)| c * s)
            .sum::<usize>()
}

pub(super) fn inner_len(shape: &[usize]) -> usize {
    shape.last().copied().unwrap_or(1)
}

/// Allocates the output and fills it row by row, in parallel over blocks of rows.
pub(super) fn fill_rows<T: Element>(
    out_shape: &[usize],
    f: impl Fn(usize, &mut [T], &mut [usize]) + Sync,
) -> Result<HostVec<T>> {
    let n = numel(out_shape);
    let mut out = try_alloc(n, T::ZERO, out_shape)?;
    let inner = inner_len(out_shape);
    if n == 0 || inner == 0 {
        return Ok(out);
    }
    let rows_per_task = (MIN_PER_TASK / inner).max(1);
    for_each_chunk_mut(&mut out, rows_per_task * inner, |task, block| {
        let mut coords = vec![0; out_shape.len()];
        for (r, row) in block.chunks_mut(inner).enumerate() {
            f(task * rows_per_task + r, row, &mut coords);
        }
    });
    Ok(out)
}

/// Parallel map over a contiguous slice.
pub(super) fn map<T: Element, U: Element>(
    v: &[T],
    f: impl Fn(T) -> U + Sync,
) -> Result<HostVec<U>> {
    if stream::worth_streaming::<U>(v.len()) {
        return stream::par_fill(v.len(), &[v.len()], |start, block: &mut [U]| {
            for (o, &x) in block.iter_mut().zip(&v[start..]) {
                *o = f(x);
            }
        });
    }
    // Reserved, not zeroed: the parallel writes are the first touch of each page.
    // SAFETY: each task writes every slot it is given.
    unsafe {
        par_write(v.len(), &[v.len()], MIN_PER_TASK, |start, slots| {
            for (o, &x) in slots.iter_mut().zip(&v[start..]) {
                o.write(f(x));
            }
        })
    }
}

pub(super) fn zip<T: Element, U: Element>(
    a: &[T],
    va: &Strided,
    b: &[T],
    vb: &Strided,
    shape: &[usize],
    f: impl Fn(T, T) -> U + Sync,
) -> Result<Buffer> {
    let n = numel(shape);
    if va.is_contiguous(shape) && vb.is_contiguous(shape) {
        if stream::worth_streaming::<U>(n) {
            let out = stream::par_fill(n, shape, |start, block: &mut [U]| {
                for (o, (&x, &y)) in block.iter_mut().zip(a[start..].iter().zip(&b[start..])) {
                    *o = f(x, y);
                }
            })?;
            return Ok(U::into_buffer(out));
        }
        // SAFETY: each task writes every slot it is given.
        let out = unsafe {
            par_write(n, shape, MIN_PER_TASK, |start, slots| {
                for (o, (&x, &y)) in slots.iter_mut().zip(a[start..].iter().zip(&b[start..])) {
                    o.write(f(x, y));
                }
            })
        }?;
        return Ok(U::into_buffer(out));
    }
    let (sa, sb) = (
        va.strides.last().copied().unwrap_or(0),
        vb.strides.last().copied().unwrap_or(0),
    );
    let out = fill_rows(shape, |row, o: &mut [U], coords| {
        let len = o.len();
        let ba = row_base(row, shape, va, coords);
        let bb = row_base(row, shape, vb, coords);
        match (sa, sb) {
            (1, 1) => {
                let (x, y) = (&a[ba..ba + len], &b[bb..bb + len]);
                o.iter_mut()
                    .zip(x.iter().zip(y))
                    .for_each(|(o, (&x, &y))| *o = f(x, y));
            }
            (1, 0) => {
                let y = b[bb];
                o.iter_mut()
                    .zip(&a[ba..ba + len])
                    .for_each(|(o, &x)| *o = f(x, y));
            }
            (0, 1) => {
                let x = a[ba];
                o.iter_mut()
                    .zip(&b[bb..bb + len])
                    .for_each(|(o, &y)| *o = f(x, y));
            }
            _ => {
                for (j, o) in o.iter_mut().enumerate() {
                    *o = f(a[ba + j * sa], b[bb + j * sb]);
                }
            }
        }
    })?;
    Ok(U::into_buffer(out))
}

/// `t` where `p` is not 0, else `f`, each read through its view, in parallel over rows.
pub(super) fn choose<T: Element>(
    (t, vt): (&[T], &Strided),
    (f, vf): (&[T], &Strided),
    (p, vp): (&[u8], &Strided),
    shape: &[usize],
) -> Result<Buffer> {
    let step = |v: &Strided| v.strides.last().copied().unwrap_or(0);
    let (st, sf, sp) = (step(vt), step(vf), step(vp));
    let out = fill_rows(shape, |row, o: &mut [T], coords| {
        let bt = row_base(row, shape, vt, coords);
        let bf = row_base(row, shape, vf, coords);
        let bp = row_base(row, shape, vp, coords);
        for (j, o) in o.iter_mut().enumerate() {
            *o = if p[bp + j * sp] != 0 {
                t[bt + j * st]
            } else {
                f[bf + j * sf]
            };
        }
    })?;
    Ok(T::into_buffer(out))
}

pub(super) fn copy_view<T: Element>(
    v: &[T],
    view: &Strided,
    out_shape: &[usize],
) -> Result<HostVec<T>> {
    // Rows as long as memory allows: a conv's kernel gradient swaps batch and channels of
    // [256, c, 2, 2] activations, whose rows of 2 made a copy cost a division per entry.
    let (view, out_shape) = &merged(view, out_shape);
    if let Some(out) = transpose::copy(v, view, out_shape) {
        return out;
    }
    let s = view.strides.last().copied().unwrap_or(0);
    fill_rows(out_shape, |row, o: &mut [T], coords| {
        let base = row_base(row, out_shape, view, coords);
        if s == 1 {
            o.copy_from_slice(&v[base..base + o.len()]);
        } else {
            for (j, o) in o.iter_mut().enumerate() {
                *o = v[base + j * s];
            }
        }
    })
}

/// `view` of `shape` with axes of one left out and neighbouring axes that step through
/// memory as one merged: the same entries in the same order, in fewer and longer rows.
fn merged(view: &Strided, shape: &[usize]) -> (Strided, Vec<usize>) {
    const MERGED_ROW: usize = 4096;
    let (mut sizes, mut steps): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    for (&n, &step) in shape.iter().zip(&view.strides) {
        if n == 1 {
            continue;
        }
        match (sizes.last_mut(), steps.last_mut()) {
            // Rows stay short enough to share out over the cores.
            (Some(outer), Some(outer_step))
                if *outer_step == step * n && *outer * n <= MERGED_ROW =>
            {
                *outer *= n;
                *outer_step = step;
            }
            _ => {
                sizes.push(n);
                steps.push(step);
            }
        }
    }
    if shape.contains(&0) || sizes.is_empty() {
        // Nothing to merge into: an empty shape keeps its zeros, a single entry one axis.
        return (view.clone(), shape.to_vec());
    }
    (
        Strided {
            offset: view.offset,
            strides: steps,
        },
        sizes,
    )
}

/// The view that reads `shape` with its axes reordered by `perm`.
pub(super) fn permuted(shape: &[usize], perm: &[usize]) -> (Strided, Vec<usize>) {
    let s = strides(shape);
    (
        Strided {
            offset: 0,
            strides: perm.iter().map(|&p| s[p]).collect(),
        },
        perm.iter().map(|&p| shape[p]).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(offset: usize, strides: &[usize]) -> Strided {
        Strided {
            offset,
            strides: strides.to_vec(),
        }
    }

    #[test]
    fn axes_that_step_as_one_merge() {
        // [256, c, 2, 2] with batch and channels swapped: rows of 2 become rows of 4.
        let (v, shape) = merged(&view(0, &[4, 12, 2, 1]), &[3, 5, 2, 2]);
        assert_eq!((v.strides, shape), (vec![4, 12, 1], vec![3, 5, 4]));
        // Axes of one go; a broadcast merges with a broadcast; an offset stays.
        let (v, shape) = merged(&view(7, &[0, 0, 9, 1]), &[2, 3, 1, 5]);
        assert_eq!((v.offset, v.strides, shape), (7, vec![0, 1], vec![6, 5]));
        // Empty and single-entry shapes are left as they are.
        assert_eq!(merged(&view(0, &[3, 1]), &[0, 3]).1, vec![0, 3]);
        assert_eq!(merged(&view(0, &[1, 1]), &[1, 1]).1, vec![1, 1]);
    }

    #[test]
    fn merged_copies_equal_the_definition() {
        let v: Vec<f32> = (0..120).map(|x| x as f32).collect();
        let shape = [5, 4, 3, 2];
        // Axes 0 and 1 swapped of a [4, 5, 3, 2] buffer.
        let strided = view(0, &[6, 30, 2, 1]);
        let got = copy_view(&v, &strided, &shape).unwrap();
        let mut want = Vec::new();
        for a in 0..5 {
            for b in 0..4 {
                for c in 0..6 {
                    want.push(v[b * 30 + a * 6 + c]);
                }
            }
        }
        assert_eq!(&got[..], &want[..]);
    }
}
