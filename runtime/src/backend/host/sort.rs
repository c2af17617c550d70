//! Sorting on the host. Lines along the axis are independent, so they sort in parallel; one
//! long line uses rayon's parallel sort instead. Positions (`argsort`) sort (entry, position)
//! pairs, whose order is total, so an unstable sort gives the stable result.

use std::cmp::Ordering;

use rayon::prelude::*;

use crate::allocate::{try_alloc, try_reserve};
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::sorting::in_direction;
use crate::shape::numel;

use super::loops::MIN_PER_TASK;
use super::parallel::{for_each_row_mut, for_each_task, SendPtr};
use super::radix;

/// Numbers a radix sort orders as `ir::sorting` does. Values need no stable order (equal
/// entries are alike, but for a NaN's payload or the sign of a zero), so a radix sort of their
/// bits does, several times faster than a comparison sort (`bench ops`' sort rows).
pub(super) trait RadixSorted: Element {
    /// `line` in ascending order, NaN last.
    fn sort_ascending(line: &mut [Self]);

    /// [`RadixSorted::sort_ascending`] for one long line, on every core where the type has a
    /// parallel sort (`radix.rs`); `Err` when its scratch memory cannot be had.
    fn sort_long_ascending(line: &mut [Self], shape: &[usize]) -> Result<()> {
        let _ = shape;
        Self::sort_ascending(line);
        Ok(())
    }
}

/// Sorts a long line of a 32-bit type on every core, in place: each element's bits become
/// its key (`key`), the keys are sorted with a scratch buffer from the pool (a fresh 40 MB
/// one costs its page faults, a third of the sort), and `unkey` turns them back.
fn sort_by_u32_keys<T: Element>(
    line: &mut [T],
    shape: &[usize],
    key: fn(u32) -> u32,
    unkey: fn(u32) -> u32,
) -> Result<()> {
    let n = line.len();
    let mut scratch = try_alloc(n, T::ZERO, shape)?;
    radix::sort_mapped(as_bits(line), as_bits(&mut scratch), key, unkey);
    crate::buffer_pool::give(T::into_buffer(scratch));
    Ok(())
}

/// The bits of a slice of a 4-byte element type.
fn as_bits<T: Element>(s: &mut [T]) -> &mut [u32] {
    assert!(std::mem::size_of::<T>() == 4 && std::mem::align_of::<T>() >= 4);
    // SAFETY: T is 4 bytes aligned at least as u32 (asserted), every bit pattern is a valid
    // u32, and the returned slice borrows `s` mutably for its whole life.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<u32>(), s.len()) }
}

macro_rules! radix_sorted {
    (integer: $($t:ty),*) => {$(
        impl RadixSorted for $t {
            fn sort_ascending(line: &mut [Self]) {
                radsort::sort(line);
            }
        }
    )*};
    (float: $($t:ty),*) => {$(
        impl RadixSorted for $t {
            fn sort_ascending(line: &mut [Self]) {
                // radsort's total order puts a NaN with its sign bit set first: make every NaN
                // the positive one, which it puts last, as Nx does.
                for x in line.iter_mut().filter(|x| x.is_nan()) {
                    *x = <$t>::NAN.copysign(1.0);
                }
                radsort::sort(line);
            }
        }
    )*};
}
radix_sorted!(integer: u8, u16, u64, i8, i16, i64);

/// Half floats sort by their exact f32 values (dispatch widens them before a sort reaches a
/// backend; this keeps the kernel total).
macro_rules! half_radix_sorted {
    ($($t:ty),*) => {$(
        impl RadixSorted for $t {
            fn sort_ascending(line: &mut [Self]) {
                for x in line.iter_mut().filter(|x| x.is_nan()) {
                    *x = <$t>::NAN;
                }
                radsort::sort_by_key(line, |x| x.to_f32());
            }
        }
    )*};
}
half_radix_sorted!(half::bf16, half::f16);
radix_sorted!(float: f64);

/// Complex values have no order; the frontend refuses to sort them, and this keeps the kernel
/// total (real part, then imaginary part).
macro_rules! complex_sorted {
    ($($t:ty),*) => {$(
        impl RadixSorted for $t {
            fn sort_ascending(line: &mut [Self]) {
                line.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            }
        }
    )*};
}
complex_sorted!(crate::complex::Complex32, crate::complex::Complex64);

impl RadixSorted for i32 {
    fn sort_ascending(line: &mut [Self]) {
        radsort::sort(line);
    }

    fn sort_long_ascending(line: &mut [Self], shape: &[usize]) -> Result<()> {
        sort_by_u32_keys(line, shape, radix::i32_key, radix::i32_of_key)
    }
}

impl RadixSorted for u32 {
    fn sort_ascending(line: &mut [Self]) {
        radsort::sort(line);
    }

    fn sort_long_ascending(line: &mut [Self], shape: &[usize]) -> Result<()> {
        // An unsigned integer's bits already order as its value.
        sort_by_u32_keys(line, shape, |k| k, |k| k)
    }
}

impl RadixSorted for f32 {
    fn sort_ascending(line: &mut [Self]) {
        // radsort's total order puts a NaN with its sign bit set first: make every NaN the
        // positive one, which it puts last, as Nx does.
        for x in line.iter_mut().filter(|x| x.is_nan()) {
            *x = f32::NAN.copysign(1.0);
        }
        radsort::sort(line);
    }

    fn sort_long_ascending(line: &mut [Self], shape: &[usize]) -> Result<()> {
        sort_by_u32_keys(line, shape, radix::f32_key, radix::f32_of_key)
    }
}

fn sort_line<T: RadixSorted>(line: &mut [T], descending: bool) {
    T::sort_ascending(line);
    if descending {
        // NaN, last ascending, comes first, as `in_direction` orders it.
        line.reverse();
    }
}

/// Every line along `axis` of `v` (of `shape`) sorted.
pub(super) fn sort<T: RadixSorted>(
    v: &[T],
    shape: &[usize],
    axis: usize,
    descending: bool,
) -> Result<HostVec<T>> {
    let (len, inner) = (shape[axis], numel(&shape[axis + 1..]));
    if v.len() == len && len >= radix::PARALLEL_FROM {
        let mut out = try_reserve(v.len(), shape)?;
        out.extend_from_slice(v);
        T::sort_long_ascending(&mut out, shape)?;
        if descending {
            out.reverse();
        }
        return Ok(out);
    }
    if inner == 1 && len > 0 {
        let mut out = try_reserve(v.len(), shape)?;
        out.extend_from_slice(v);
        for_each_row_mut(&mut out, len, MIN_PER_TASK / len, |_, line| {
            sort_line(line, descending)
        });
        return Ok(out);
    }
    by_lines(
        v,
        shape,
        axis,
        T::ZERO,
        |line: &mut Vec<(T, usize)>, write| {
            let mut values: Vec<T> = line.iter().map(|&(x, _)| x).collect();
            sort_line(&mut values, descending);
            for (k, &x) in values.iter().enumerate() {
                write(k, x);
            }
        },
    )
}

/// For every line along `axis`, the positions of its entries in sorted order, ties by
/// position (as s64).
pub(super) fn argsort<T: Element>(
    v: &[T],
    shape: &[usize],
    axis: usize,
    descending: bool,
) -> Result<HostVec<i64>> {
    let cmp = |a: &(T, usize), b: &(T, usize)| -> Ordering {
        in_direction(a.0, b.0, descending).then(a.1.cmp(&b.1))
    };
    let len = shape[axis];
    if numel(shape) == len && len > 0 {
        let mut pairs: Vec<(T, usize)> = v.iter().copied().zip(0..).collect();
        pairs.par_sort_unstable_by(cmp);
        let mut out = try_reserve(len, shape)?;
        out.extend(pairs.iter().map(|&(_, p)| p as i64));
        return Ok(out);
    }
    by_lines(v, shape, axis, 0i64, |line, write| {
        line.sort_unstable_by(cmp);
        for (k, &(_, p)) in line.iter().enumerate() {
            write(k, p as i64);
        }
    })
}

/// Runs `sort_line` on each line along `axis` of `v` in parallel, handing it the line's
/// (entry, position) pairs and a writer of the result's entry `k` along that line.
fn by_lines<T: Element, U: Element>(
    v: &[T],
    shape: &[usize],
    axis: usize,
    fill: U,
    sort_line: impl Fn(&mut Vec<(T, usize)>, &dyn Fn(usize, U)) + Sync,
) -> Result<HostVec<U>> {
    let mut out = try_alloc(v.len(), fill, shape)?;
    let (len, inner) = (shape[axis], numel(&shape[axis + 1..]));
    let lines = v.len().checked_div(len).unwrap_or(0);
    let o = SendPtr(out.as_mut_ptr());
    let per_task = (MIN_PER_TASK / len.max(1)).max(1);
    for_each_task(lines.div_ceil(per_task), &|task| {
        let mut line = Vec::with_capacity(len);
        for l in task * per_task..((task + 1) * per_task).min(lines) {
            let at = |k: usize| (l / inner * len + k) * inner + l % inner;
            line.clear();
            line.extend((0..len).map(|k| (v[at(k)], k)));
            sort_line(&mut line, &|k, x| {
                // SAFETY: each task writes only its own lines' entries, all below
                // `v.len()` = `out.len()`.
                unsafe { *o.offset(at(k)) = x };
            });
        }
    });
    Ok(out)
}
