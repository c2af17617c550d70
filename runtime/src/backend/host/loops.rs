//! The loops every host kernel family shares: how much work a task gets, parallel writes into
//! reserved capacity (each page first touched by the core that computes it), row-wise walks of
//! strided views, and the elementwise map and zip built on them.

use std::mem::MaybeUninit;

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

/// The offsets where successive rows (a row is the last axis) of `shape` start in each of
/// `N` strided views, found by carrying the outer coordinates from row to row: short rows
/// (a bias added over `[256, 64, 2, 2]` has rows of 4) made a division per axis and view for
/// every row the larger part of the work.
pub(super) struct RowBases<'a, const N: usize> {
    outer: &'a [usize],
    steps: [&'a [usize]; N],
    coords: Vec<usize>,
    bases: [usize; N],
}

impl<'a, const N: usize> RowBases<'a, N> {
    /// Positioned at row `first`.
    pub(super) fn new(views: [&'a Strided; N], shape: &'a [usize], first: usize) -> Self {
        let outer = &shape[..shape.len().saturating_sub(1)];
        let mut coords = vec![0; outer.len()];
        unravel(first, outer, &mut coords);
        let bases = views.map(|v| v.offset_at(&coords));
        RowBases {
            outer,
            steps: views.map(|v| &v.strides[..]),
            coords,
            bases,
        }
    }

    /// The current row's offsets, then a step to the next row.
    pub(super) fn next_row(&mut self) -> [usize; N] {
        let here = self.bases;
        for axis in (0..self.outer.len()).rev() {
            self.coords[axis] += 1;
            for (b, s) in self.bases.iter_mut().zip(&self.steps) {
                *b += s[axis];
            }
            if self.coords[axis] < self.outer[axis] {
                break;
            }
            // Past the axis's end: back to its start, and carry one into the next axis out
            // (past the last row the bases are left wrapped; nothing reads them).
            for (b, s) in self.bases.iter_mut().zip(&self.steps) {
                *b -= s[axis] * self.outer[axis];
            }
            self.coords[axis] = 0;
        }
        here
    }
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

/// Fills a new output row by row, in parallel over blocks of rows, as [`fill_rows`] but
/// without zeroing it first: the rows' writes are each page's first touch.
///
/// `f` gets a block of whole rows and the first one's index.
///
/// # Safety
/// `f` writes every slot of the block it is given.
pub(super) unsafe fn write_rows<T: Element>(
    out_shape: &[usize],
    f: impl Fn(usize, &mut [MaybeUninit<T>]) + Sync,
) -> Result<HostVec<T>> {
    let n = numel(out_shape);
    let inner = inner_len(out_shape);
    if n == 0 || inner == 0 {
        return try_alloc(n, T::ZERO, out_shape);
    }
    let rows_per_task = (MIN_PER_TASK / inner).max(1);
    // SAFETY: chunks are whole rows, each written whole by `f`, as the caller promises.
    unsafe {
        par_write(n, out_shape, rows_per_task * inner, |start, block| {
            f(start / inner, block)
        })
    }
}

/// Rows shorter than this are written a plane at a time (see [`write_planes`]).
const SHORT_ROW: usize = 16;

/// The largest plane [`write_planes`] takes: many planes to a task, tasks for every core.
const PLANE: usize = 4096;

/// The row length of `shape` where its rows are short enough to be written a plane of its last
/// two axes at a time, else `None`.
pub(super) fn short_rows(shape: &[usize]) -> Option<usize> {
    let [.., rows, inner] = *shape else {
        return None;
    };
    (inner < SHORT_ROW && rows > 1 && rows.saturating_mul(inner) <= PLANE && numel(shape) > 0)
        .then_some(inner)
}

/// Fills a new output a plane of its last two axes at a time, in parallel over blocks of
/// planes, `each` given the plane's first offset in each of `views` and the plane's slots.
/// For short rows (a bias added over `[256, 64, 2, 2]`, the kernel gradient's batch/channel
/// swap of the same shape): the per-row bookkeeping of [`write_rows`] cost more than the rows'
/// few entries.
///
/// # Safety
/// `shape` has [`short_rows`], and `each` writes every slot of the plane it is given.
pub(super) unsafe fn write_planes<T: Element, const N: usize>(
    views: [&Strided; N],
    shape: &[usize],
    each: impl Fn([usize; N], &mut [MaybeUninit<T>]) + Sync,
) -> Result<HostVec<T>> {
    let rank = shape.len();
    let plane = numel(&shape[rank.saturating_sub(2)..]).max(1);
    let planes = &shape[..rank.saturating_sub(1)];
    let per_task = (MIN_PER_TASK / plane).max(1);
    // SAFETY: chunks are whole planes, each written whole by `each`, as the caller promises.
    unsafe {
        par_write(numel(shape), shape, per_task * plane, |start, block| {
            let mut bases = RowBases::new(views, planes, start / plane);
            for p in block.chunks_mut(plane) {
                each(bases.next_row(), p);
            }
        })
    }
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
    let ([va, vb], shape) = &merged_views([va, vb], shape);
    let (sa, sb) = (
        va.strides.last().copied().unwrap_or(0),
        vb.strides.last().copied().unwrap_or(0),
    );
    let inner = inner_len(shape);
    if let Some(inner) = short_rows(shape) {
        let second = |v: &Strided| v.strides[v.strides.len() - 2];
        let (ta, tb) = (second(va), second(vb));
        // SAFETY: each row of each plane is written whole.
        let out = unsafe {
            write_planes([va, vb], shape, |[ba, bb], plane: &mut [MaybeUninit<U>]| {
                for (i, o) in plane.chunks_mut(inner).enumerate() {
                    let (ba, bb) = (ba + i * ta, bb + i * tb);
                    for (j, o) in o.iter_mut().enumerate() {
                        o.write(f(a[ba + j * sa], b[bb + j * sb]));
                    }
                }
            })
        }?;
        return Ok(U::into_buffer(out));
    }
    // SAFETY: every arm writes each slot of its row.
    let out = unsafe {
        write_rows(shape, |first, block: &mut [MaybeUninit<U>]| {
            let mut rows = RowBases::new([va, vb], shape, first);
            for o in block.chunks_mut(inner) {
                let len = o.len();
                let [ba, bb] = rows.next_row();
                match (sa, sb) {
                    (1, 1) => {
                        let (x, y) = (&a[ba..ba + len], &b[bb..bb + len]);
                        o.iter_mut()
                            .zip(x.iter().zip(y))
                            .for_each(|(o, (&x, &y))| _ = o.write(f(x, y)));
                    }
                    (1, 0) => {
                        let y = b[bb];
                        o.iter_mut()
                            .zip(&a[ba..ba + len])
                            .for_each(|(o, &x)| _ = o.write(f(x, y)));
                    }
                    (0, 1) => {
                        let x = a[ba];
                        o.iter_mut()
                            .zip(&b[bb..bb + len])
                            .for_each(|(o, &y)| _ = o.write(f(x, y)));
                    }
                    _ => {
                        for (j, o) in o.iter_mut().enumerate() {
                            o.write(f(a[ba + j * sa], b[bb + j * sb]));
                        }
                    }
                }
            }
        })
    }?;
    Ok(U::into_buffer(out))
}

/// `t` where `p` is not 0, else `f`, each read through its view, in parallel over rows.
pub(super) fn choose<T: Element>(
    (t, vt): (&[T], &Strided),
    (f, vf): (&[T], &Strided),
    (p, vp): (&[u8], &Strided),
    shape: &[usize],
) -> Result<Buffer> {
    let ([vt, vf, vp], shape) = &merged_views([vt, vf, vp], shape);
    let step = |v: &Strided| v.strides.last().copied().unwrap_or(0);
    let (st, sf, sp) = (step(vt), step(vf), step(vp));
    let inner = inner_len(shape);
    // SAFETY: each slot of each row is written.
    let out = unsafe {
        write_rows(shape, |first, block: &mut [MaybeUninit<T>]| {
            let mut rows = RowBases::new([vt, vf, vp], shape, first);
            for o in block.chunks_mut(inner) {
                let [bt, bf, bp] = rows.next_row();
                for (j, o) in o.iter_mut().enumerate() {
                    o.write(if p[bp + j * sp] != 0 {
                        t[bt + j * st]
                    } else {
                        f[bf + j * sf]
                    });
                }
            }
        })
    }?;
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
    if let Some(inner) = short_rows(out_shape) {
        let t = view.strides[view.strides.len() - 2];
        // SAFETY: each row of each plane is written whole.
        return unsafe {
            write_planes([view], out_shape, |[base], plane: &mut [MaybeUninit<T>]| {
                for (i, o) in plane.chunks_mut(inner).enumerate() {
                    let base = base + i * t;
                    for (j, o) in o.iter_mut().enumerate() {
                        o.write(v[base + j * s]);
                    }
                }
            })
        };
    }
    let inner = inner_len(out_shape);
    // SAFETY: each slot of each row is written.
    unsafe {
        write_rows(out_shape, |first, block: &mut [MaybeUninit<T>]| {
            let mut rows = RowBases::new([view], out_shape, first);
            for o in block.chunks_mut(inner) {
                let [base] = rows.next_row();
                if s == 1 {
                    for (o, &x) in o.iter_mut().zip(&v[base..base + inner]) {
                        o.write(x);
                    }
                } else {
                    for (j, o) in o.iter_mut().enumerate() {
                        o.write(v[base + j * s]);
                    }
                }
            }
        })
    }
}

/// `view` of `shape` with axes of one left out and neighbouring axes that step through
/// memory as one merged: the same entries in the same order, in fewer and longer rows.
fn merged(view: &Strided, shape: &[usize]) -> (Strided, Vec<usize>) {
    let ([view], shape) = merged_views([view], shape);
    (view, shape)
}

/// [`merged`] for views read together (the operands of one elementwise op): two neighbouring
/// axes merge where they step as one in every view, so each view reads the same entries in
/// the same order. A bias broadcast over `[256, 8, 14, 14]` reads rows of 196 instead of 14,
/// and a scalar rows as long as [`MERGED_ROW`]: per-row bookkeeping (an unravel per view)
/// made such ops five times slower than on equal shapes.
pub(super) fn merged_views<const N: usize>(
    views: [&Strided; N],
    shape: &[usize],
) -> ([Strided; N], Vec<usize>) {
    let mut sizes: Vec<usize> = Vec::new();
    let mut steps: [Vec<usize>; N] = std::array::from_fn(|_| Vec::new());
    for (axis, &n) in shape.iter().enumerate() {
        if n == 1 {
            continue;
        }
        let step = |v: usize| views[v].strides.get(axis).copied().unwrap_or(0);
        let merges = sizes.last().is_some_and(|&outer| {
            // Rows stay short enough to share out over the cores.
            outer.saturating_mul(n) <= MERGED_ROW
                && (0..N).all(|v| {
                    step(v)
                        .checked_mul(n)
                        .is_some_and(|m| steps[v].last() == Some(&m))
                })
        });
        if merges {
            if let Some(outer) = sizes.last_mut() {
                *outer *= n;
            }
            for (v, s) in steps.iter_mut().enumerate() {
                if let Some(last) = s.last_mut() {
                    *last = step(v);
                }
            }
        } else {
            sizes.push(n);
            for (v, s) in steps.iter_mut().enumerate() {
                s.push(step(v));
            }
        }
    }
    if shape.contains(&0) || sizes.is_empty() {
        // Nothing to merge into: an empty shape keeps its zeros, a single entry one axis.
        return (views.map(Strided::clone), shape.to_vec());
    }
    let mut steps = steps.into_iter();
    (
        views.map(|v| Strided {
            offset: v.offset,
            strides: steps.next().unwrap_or_default(),
        }),
        sizes,
    )
}

/// The longest row [`merged_views`] makes.
const MERGED_ROW: usize = 4096;

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
        // Views merge where both step as one: a bias over [n, c, h, w] has rows of h * w.
        let (views, shape) = merged_views(
            [&view(0, &[392, 49, 7, 1]), &view(0, &[0, 1, 0, 0])],
            &[9, 8, 7, 7],
        );
        assert_eq!(shape, vec![9, 8, 49]);
        assert_eq!(views.map(|v| v.strides), [vec![392, 49, 1], vec![0, 1, 0]]);
        // Empty and single-entry shapes are left as they are.
        assert_eq!(merged(&view(0, &[3, 1]), &[0, 3]).1, vec![0, 3]);
        assert_eq!(merged(&view(0, &[1, 1]), &[1, 1]).1, vec![1, 1]);
    }

    /// Entry `coords` of a view, by its definition.
    fn at(v: &Strided, shape: &[usize], flat: usize) -> usize {
        let mut coords = vec![0; shape.len()];
        unravel(flat, shape, &mut coords);
        v.offset_at(&coords)
    }

    /// Broadcasts, transposes and offsets read together, over outputs of many tasks (rows
    /// found by carrying from a task's first row on) and rows of one to thousands.
    #[test]
    fn zips_and_choices_read_each_entry_as_defined() {
        let a: Vec<f64> = (0..200_000).map(|x| x as f64).collect();
        let b: Vec<f64> = (0..200_000).map(|x| (x * 7 % 1000) as f64 * 1e-3).collect();
        let p: Vec<u8> = (0..200_000).map(|x| (x % 3 == 0) as u8).collect();
        let cases: [(&[usize], Strided, Strided); 7] = [
            // A bias over [n, c, h, w], and the bias first.
            (
                &[256, 8, 7, 7],
                view(0, &[392, 49, 7, 1]),
                view(3, &[0, 1, 0, 0]),
            ),
            // A scalar, and rows of one.
            (&[3000, 1], view(5, &[1, 0]), view(9, &[0, 0])),
            // A transpose beside a broadcast row.
            (&[64, 3, 5], view(0, &[1, 320, 64]), view(0, &[0, 5, 1])),
            // Short rows over many outer axes.
            (
                &[40, 30, 2, 2],
                view(1, &[120, 4, 2, 1]),
                view(0, &[0, 1, 0, 0]),
            ),
            // Every axis broadcast in one of the two.
            (&[50, 60], view(0, &[0, 0]), view(2, &[60, 1])),
            // Batch and channels swapped, rows of three written a plane at a time over tasks
            // of unequal planes.
            (&[70, 256, 3], view(0, &[3, 210, 1]), view(4, &[1, 0, 0])),
            // Planes too large to take whole: rows of three, row by row.
            (&[3, 2000, 3], view(2, &[3, 9, 1]), view(0, &[0, 3, 1])),
        ];
        for (shape, va, vb) in cases {
            let n = numel(shape);
            let got = zip(&a, &va, &b, &vb, shape, |x, y| x + y).unwrap();
            let Buffer::F64(got) = got else {
                panic!("f64 in, f64 out")
            };
            let chosen = choose((&a, &va), (&b, &vb), (&p, &vb), shape).unwrap();
            let Buffer::F64(chosen) = chosen else {
                panic!("f64 in, f64 out")
            };
            let copied = copy_view(&a, &va, shape).unwrap();
            for i in 0..n {
                let (x, y) = (a[at(&va, shape, i)], b[at(&vb, shape, i)]);
                assert_eq!(got[i], x + y, "{shape:?} [{i}]");
                let want = if p[at(&vb, shape, i)] != 0 { x } else { y };
                assert_eq!(chosen[i], want, "{shape:?} [{i}]");
                assert_eq!(copied[i], x, "{shape:?} [{i}]");
            }
        }
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
