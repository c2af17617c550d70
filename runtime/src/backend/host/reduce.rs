//! Host reductions: sums, products and extrema folded in vector lanes, and argmax/argmin with
//! one-pass AVX2 / AVX-512 scans over long rows.

use crate::allocate::try_alloc;
use crate::buffer::{with_buffer, Buffer};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::{ArgOp, BinaryOp, ReduceOp};
use crate::shape::numel;

use super::loops::*;

/// Folds a contiguous slice with independent lane accumulators so that the loop vectorises;
/// the op is matched once, outside the loop, and the loop compiled for AVX2 where the CPU has
/// it (the baseline build left max/min as scalar SSE compares: 2.1-3.0 ms for 10M f32, where
/// reading them takes about 1.6).
pub(super) fn fold<T: Element>(op: ReduceOp, v: &[T]) -> T {
    let id = op.identity::<T>();
    match op {
        ReduceOp::Sum => fold_fast(v, id, |a, x| a.add(x)),
        ReduceOp::Product => fold_fast(v, id, |a, x| a.mul(x)),
        ReduceOp::Max | ReduceOp::Min => {
            #[cfg(target_arch = "x86_64")]
            if let Some(x) = extremum_f32(op, v) {
                return x;
            }
            let cmp = if op == ReduceOp::Max {
                BinaryOp::Max
            } else {
                BinaryOp::Min
            };
            fold_fast(v, id, |a, x| cmp.arith(a, x))
        }
    }
}

/// max/min of a long f32 slice with `vmaxps`/`vminps` and a separate NaN flag: the generic
/// fold combines through a compare, a NaN test and a blend per vector (`bench ops`, 10M f32:
/// 1.9 ms where a sum took 0.9; 1.3 ms this way). `None` where it does not apply.
#[cfg(target_arch = "x86_64")]
pub(super) fn extremum_f32<T: Element>(op: ReduceOp, v: &[T]) -> Option<T> {
    if T::DTYPE != DType::F32 || v.len() < 256 || !is_x86_feature_detected!("avx2") {
        return None;
    }
    // SAFETY: T is f32 (its dtype says so), so the slice is reinterpreted as itself.
    let v32: &[f32] = unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), v.len()) };
    // SAFETY: the CPU has AVX2.
    let x = unsafe { extremum_f32_avx2(op == ReduceOp::Max, v32) };
    // SAFETY: as above, T is f32.
    Some(unsafe { std::mem::transmute_copy::<f32, T>(&x) })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn extremum_f32_avx2(max: bool, v: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    const VECS: usize = 4;
    let init = if max {
        f32::NEG_INFINITY
    } else {
        f32::INFINITY
    };
    let mut acc = [_mm256_set1_ps(init); VECS];
    let mut nan = _mm256_setzero_ps();
    let chunks = v.chunks_exact(8 * VECS);
    let rest = chunks.remainder();
    for c in chunks {
        for (i, a) in acc.iter_mut().enumerate() {
            let x = _mm256_loadu_ps(c.as_ptr().add(8 * i));
            nan = _mm256_or_ps(nan, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
            *a = if max {
                _mm256_max_ps(x, *a)
            } else {
                _mm256_min_ps(x, *a)
            };
        }
    }
    if _mm256_movemask_ps(nan) != 0 || rest.iter().any(|x| x.is_nan()) {
        return f32::NAN;
    }
    // The accumulators folded lane-wise first: a scalar pass over all 32 lanes cost argmax,
    // which calls this per 4 KB block, a fifth of its time.
    let folded = if max {
        _mm256_max_ps(_mm256_max_ps(acc[0], acc[1]), _mm256_max_ps(acc[2], acc[3]))
    } else {
        _mm256_min_ps(_mm256_min_ps(acc[0], acc[1]), _mm256_min_ps(acc[2], acc[3]))
    };
    let mut lanes = [0f32; 8];
    _mm256_storeu_ps(lanes.as_mut_ptr(), folded);
    let pick = |a: f32, b: f32| if (b > a) == max && b != a { b } else { a };
    lanes.iter().chain(rest).fold(init, |a, &b| pick(a, b))
}

pub(super) fn fold_fast<T: Element>(v: &[T], id: T, f: impl Fn(T, T) -> T + Copy) -> T {
    // Short rows (a reduction over a small last axis) stay inline: the call through the
    // target-feature boundary would cost more than their few elements.
    #[cfg(target_arch = "x86_64")]
    if v.len() >= 256 && is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, which `fold_avx2` was compiled for.
        return unsafe { fold_avx2(v, id, f) };
    }
    fold_lanes(v, id, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn fold_avx2<T: Element>(v: &[T], id: T, f: impl Fn(T, T) -> T + Copy) -> T {
    fold_lanes(v, id, f)
}

/// Sixteen lanes: two AVX2 registers of f32, four of f64, enough to hide the latency of
/// the combining instruction.
#[inline(always)]
pub(super) fn fold_lanes<T: Element>(v: &[T], id: T, f: impl Fn(T, T) -> T + Copy) -> T {
    const LANES: usize = 16;
    // The same order as below without first combining sixteen idle lanes, which was most of
    // the work for rows shorter than the lanes (a softmax's ten logits per image).
    if v.len() < LANES {
        return v.iter().fold(id, |a, &x| f(a, x));
    }
    let mut lanes = [id; LANES];
    let chunks = v.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (l, &x) in lanes.iter_mut().zip(c) {
            *l = f(*l, x);
        }
    }
    let acc = lanes.iter().fold(id, |a, &l| f(a, l));
    rest.iter().fold(acc, |a, &x| f(a, x))
}

pub(super) fn reduce_typed<T: Element>(
    op: ReduceOp,
    v: &[T],
    shape: &[usize],
    axes: &[usize],
) -> Result<Buffer> {
    Ok(T::into_buffer(reduce_vec(op, v, shape, axes)?))
}

fn reduce_vec<T: Element>(
    op: ReduceOp,
    v: &[T],
    shape: &[usize],
    axes: &[usize],
) -> Result<HostVec<T>> {
    let kept = crate::shape::kept_axes(shape.len(), axes);
    if let Some(layout) = Columns::of(shape, axes) {
        let out_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
        return reduce_columns(op, v, layout, &out_shape);
    }
    // Reduced axes at the end and more before a kept one (a convolution's bias gradient, the
    // sum over [0, 2, 3] of [n, c, h, w]): two reductions where the values lie instead of a
    // transpose of the whole input that brings the reduced axes together (355 us of the CNN
    // step's [256, 8, 14, 14] bias gradient against 104). The leading axes go first where
    // they lie together, as columns whatever the trailing runs' length (runs of four, a
    // [256, 64, 2, 2] gradient, folded one by one took 2 ns an entry); else the runs first.
    let trailing = axes
        .iter()
        .rev()
        .zip((0..shape.len()).rev())
        .take_while(|(&a, b)| a == *b)
        .count();
    if trailing > 0 && trailing < axes.len() {
        let (leading, ends) = axes.split_at(axes.len() - trailing);
        if Columns::of(shape, leading).is_some() {
            let rest = crate::shape::without_axes(shape, leading);
            let gone = leading.len();
            let ends: Vec<usize> = ends.iter().map(|&a| a - gone).collect();
            let partial = reduce_vec(op, v, shape, leading)?;
            return reduce_vec(op, &partial, &rest, &ends);
        }
        let runs = reduce_vec(op, v, shape, ends)?;
        return reduce_vec(op, &runs, &shape[..shape.len() - trailing], leading);
    }
    let perm: Vec<usize> = kept.iter().chain(axes).copied().collect();
    let transposed;
    let data: &[T] = if perm.iter().enumerate().all(|(i, &p)| i == p) {
        v
    } else {
        let (view, tshape) = permuted(shape, &perm);
        transposed = copy_view(v, &view, &tshape)?;
        &transposed
    };
    let out_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
    let outer = numel(&out_shape);
    let inner: usize = axes.iter().map(|&a| shape[a]).product();
    let mut out = try_alloc(outer, op.identity::<T>(), &out_shape)?;
    if inner == 0 {
        return Ok(out);
    }
    if outer >= rayon::current_num_threads() * 4 || inner < MIN_PER_TASK {
        for_each_row_mut(&mut out, 1, MIN_PER_TASK / inner, |o, r| {
            r[0] = fold(op, &data[o * inner..(o + 1) * inner])
        });
    } else {
        for (o, r) in out.iter_mut().enumerate() {
            let row = &data[o * inner..(o + 1) * inner];
            *r = map_chunks(row, MIN_PER_TASK, |_, c| fold(op, c))
                .into_iter()
                .fold(op.identity::<T>(), |a, b| op.combine(a, b));
        }
    }
    Ok(out)
}

/// A reduction whose axes lie together before at least one kept axis: `pre` blocks of `rows`
/// rows of `cols` kept values each (a batch's column sum, `sum([0])` of `{10000, 50}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Columns {
    pre: usize,
    rows: usize,
    cols: usize,
}

impl Columns {
    fn of(shape: &[usize], axes: &[usize]) -> Option<Columns> {
        let (&first, &last) = (axes.first()?, axes.last()?);
        let together = axes.windows(2).all(|w| w[1] == w[0] + 1);
        (together && last + 1 < shape.len()).then(|| Columns {
            pre: numel(&shape[..first]),
            rows: numel(&shape[first..=last]),
            cols: numel(&shape[last + 1..]),
        })
    }
}

/// Rows folded into the kept values element by element, so the loop runs along contiguous
/// columns: the general route transposed the reduced axes to the end first (`sum([0])` of a
/// `{10000, 50}` f32 gradient, the bias gradient of every dense layer: 0.72 ms, a copy and a
/// fold of 50 short-lived rows). Each task folds a run of rows; runs combine in order.
fn reduce_columns<T: Element>(
    op: ReduceOp,
    v: &[T],
    Columns { pre, rows, cols }: Columns,
    out_shape: &[usize],
) -> Result<HostVec<T>> {
    let mut out = try_alloc(pre.saturating_mul(cols), op.identity::<T>(), out_shape)?;
    if rows == 0 || cols == 0 {
        return Ok(out);
    }
    let block = rows * cols;
    let rows_per_task = (MIN_PER_TASK / cols).max(1);
    let runs = rows.div_ceil(rows_per_task);
    if pre >= rayon::current_num_threads() || runs == 1 {
        for_each_row_mut(&mut out, cols, MIN_PER_TASK / block, |o, acc| {
            fold_rows(op, acc, &v[o * block..(o + 1) * block])
        });
        return Ok(out);
    }
    for (o, acc) in out.chunks_mut(cols).enumerate() {
        let block = &v[o * block..(o + 1) * block];
        let partials: Vec<Result<HostVec<T>>> = map_tasks(runs, |r| {
            let mut part = try_alloc(cols, op.identity::<T>(), &[cols])?;
            let end = ((r + 1) * rows_per_task).min(rows);
            fold_rows(op, &mut part, &block[r * rows_per_task * cols..end * cols]);
            Ok(part)
        });
        for part in partials {
            let part = part?;
            fold_rows(op, acc, &part);
        }
    }
    Ok(out)
}

/// `acc[j] = op(acc[j], row[j])` for each row of `rows` in turn (rows as long as `acc`), the op
/// matched outside the loop so that it vectorises.
fn fold_rows<T: Element>(op: ReduceOp, acc: &mut [T], rows: &[T]) {
    fn each<T: Element>(acc: &mut [T], rows: &[T], f: impl Fn(T, T) -> T) {
        for row in rows.chunks_exact(acc.len()) {
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = f(*a, x);
            }
        }
    }
    match op {
        ReduceOp::Sum => each(acc, rows, |a, x| a.add(x)),
        ReduceOp::Product => each(acc, rows, |a, x| a.mul(x)),
        ReduceOp::Max => each(acc, rows, |a, x| BinaryOp::Max.arith(a, x)),
        ReduceOp::Min => each(acc, rows, |a, x| BinaryOp::Min.arith(a, x)),
    }
}

pub(super) fn arg_typed<T: Element>(
    op: ArgOp,
    v: &[T],
    shape: &[usize],
    axis: usize,
) -> Result<Buffer> {
    let mut perm: Vec<usize> = (0..shape.len()).filter(|&a| a != axis).collect();
    perm.push(axis);
    let transposed;
    let data: &[T] = if axis + 1 == shape.len() {
        v
    } else {
        let (view, tshape) = permuted(shape, &perm);
        transposed = copy_view(v, &view, &tshape)?;
        &transposed
    };
    let len = shape[axis];
    let outer: usize = perm[..perm.len() - 1].iter().map(|&a| shape[a]).product();
    let mut out = try_alloc(outer, 0i64, &[outer])?;
    if outer < rayon::current_num_threads() && len >= 2 * MIN_PER_TASK {
        // Few long rows (argmax of a whole vector): each row split across the cores.
        for (o, r) in out.iter_mut().enumerate() {
            *r = arg_of_long_row(op, &data[o * len..(o + 1) * len]) as i64;
        }
    } else if let Some(min_len) = MIN_PER_TASK.checked_div(len) {
        for_each_row_mut(&mut out, 1, min_len, |o, r| {
            r[0] = arg_of_row(op, &data[o * len..(o + 1) * len]) as i64
        });
    }
    Ok(Buffer::S64(out))
}

/// The index of the best element of a row (the first of equals; the first NaN beats all).
///
/// The row is scanned in L1-sized blocks: a block's extremum comes from the vectorised
/// [`fold`], and only a block whose extremum beats the best so far is searched for the
/// position, which on most data is a few blocks of the row. A plain compare-and-branch scan
/// ran at half numpy's speed.
pub(super) fn arg_of_row<T: Element>(op: ArgOp, row: &[T]) -> usize {
    const BLOCK: usize = 1024;
    #[cfg(target_arch = "x86_64")]
    if let Some(at) = arg_f32(op, row) {
        return at;
    }
    let Some(&first) = row.first() else {
        return 0;
    };
    let reduce = match op {
        ArgOp::ArgMax => ReduceOp::Max,
        ArgOp::ArgMin => ReduceOp::Min,
    };
    let (mut best, mut best_value) = (0, first);
    for (b, block) in row.chunks(BLOCK).enumerate() {
        let extremum = fold(reduce, block);
        if !op.better(extremum, best_value) {
            continue;
        }
        // `fold` returns NaN when the block holds one, else an element's value.
        let at = block
            .iter()
            .position(|&x| {
                if extremum.is_nan() {
                    x.is_nan()
                } else {
                    x == extremum
                }
            })
            .unwrap_or(0);
        best = b * BLOCK + at;
        best_value = block[at];
        if best_value.is_nan() {
            break;
        }
    }
    best
}

/// [`arg_of_row`] for long f32 rows in one vectorised pass; `None` where it does not apply.
#[cfg(target_arch = "x86_64")]
pub(super) fn arg_f32<T: Element>(op: ArgOp, row: &[T]) -> Option<usize> {
    // Step numbers (one per vector, so at most len / 8) are i32 lanes.
    if T::DTYPE != DType::F32
        || row.len() < 256
        || row.len() / 8 >= i32::MAX as usize
        || !is_x86_feature_detected!("avx2")
    {
        return None;
    }
    // SAFETY: T is f32 (its dtype says so), so the slice is reinterpreted as itself.
    let row: &[f32] = unsafe { std::slice::from_raw_parts(row.as_ptr().cast(), row.len()) };
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F; the row has fewer than i32::MAX vectors of 8.
        return Some(unsafe { arg_f32_avx512(op == ArgOp::ArgMax, row) });
    }
    // SAFETY: the CPU has AVX2; the row has fewer than i32::MAX vectors of 8.
    Some(unsafe { arg_f32_avx2(op == ArgOp::ArgMax, row) })
}

/// [`arg_f32_avx2`] in 16 lanes with mask registers. Blocks of two vectors are only compared
/// with the best so far (an unordered compare, so a NaN also counts as better); the rare
/// block that beats it updates values and steps. The masked moves of the old every-vector
/// update formed a compare-move chain per register: 17 Gelem/s per core on L2-resident rows
/// against 25 with the compare-only loop (from DRAM both run at the memory's speed).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn arg_f32_avx512(max: bool, v: &[f32]) -> usize {
    use std::arch::x86_64::*;
    const VECS: usize = 2;
    const STEP: usize = 16 * VECS;
    let init = if max {
        f32::NEG_INFINITY
    } else {
        f32::INFINITY
    };
    let mut best = _mm512_set1_ps(init);
    let mut seen = _mm512_setzero_si512();
    let blocks = v.len() / STEP;
    for b in 0..blocks {
        let p = v.as_ptr().add(b * STEP);
        let x = [_mm512_loadu_ps(p), _mm512_loadu_ps(p.add(16))];
        let beats = if max {
            _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(x[0], best)
                | _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(x[1], best)
        } else {
            _mm512_cmp_ps_mask::<_CMP_NGE_UQ>(x[0], best)
                | _mm512_cmp_ps_mask::<_CMP_NGE_UQ>(x[1], best)
        };
        if beats == 0 {
            continue;
        }
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x[0], x[0])
            | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x[1], x[1]);
        if nan != 0 {
            // No earlier block held a NaN: it would have ended the pass there.
            return b * STEP + v[b * STEP..].iter().position(|x| x.is_nan()).unwrap_or(0);
        }
        for (j, &x) in x.iter().enumerate() {
            let better = if max {
                _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, best)
            } else {
                _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, best)
            };
            best = _mm512_mask_mov_ps(best, better, x);
            let step = _mm512_set1_epi32((b * VECS + j) as i32);
            seen = _mm512_mask_mov_epi32(seen, better, step);
        }
    }
    let mut values = [0f32; 16];
    let mut steps_seen = [0i32; 16];
    _mm512_storeu_ps(values.as_mut_ptr(), best);
    _mm512_storeu_si512(steps_seen.as_mut_ptr().cast(), seen);
    resolve_lanes(max, v, &values, &steps_seen, blocks * STEP)
}

/// The first best of row `v` from a lane-wise pass: lane `l` of `values.len()` lanes holds
/// the best of elements `l, l + lanes, ...` before `done`, first seen at step
/// `steps_seen[l]`; the elements from `done` on are scanned.
pub(super) fn resolve_lanes(
    max: bool,
    v: &[f32],
    values: &[f32],
    steps_seen: &[i32],
    done: usize,
) -> usize {
    let lanes = values.len();
    // A lane never improved on its start value holds it only if its elements all equal it,
    // and then its step 0 points at the first of them: every lane names a real element.
    let mut at = 0;
    let mut at_value = v[0];
    for (lane, (&value, &step)) in values.iter().zip(steps_seen).enumerate() {
        let index = step as usize * lanes + lane;
        let better = if max {
            value > at_value
        } else {
            value < at_value
        };
        if better || (value == at_value && index < at) {
            (at, at_value) = (index, value);
        }
    }
    for (i, &x) in v.iter().enumerate().skip(done) {
        if x.is_nan() {
            return i;
        }
        if if max { x > at_value } else { x < at_value } {
            (at, at_value) = (i, x);
        }
    }
    at
}

/// The first best of an f32 row (the first NaN if there is one) in one pass: each lane keeps
/// its best value and the step where that value was first seen (a strict compare keeps the
/// first of equals), and the lanes are resolved at the end. A block of four vectors that
/// does not beat the best so far (on most data, all but a few) costs four compares and no
/// update. Scanning blocks for their extremum and rescanning the ones that improved ran at
/// 0.5-0.8x numpy's argmax; this runs at reduce_max's speed, bounded by memory.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn arg_f32_avx2(max: bool, v: &[f32]) -> usize {
    use std::arch::x86_64::*;
    const VECS: usize = 4;
    const STEP: usize = 8 * VECS;
    let init = if max {
        f32::NEG_INFINITY
    } else {
        f32::INFINITY
    };
    let mut best = _mm256_set1_ps(init);
    let mut seen = _mm256_setzero_si256();
    let blocks = v.len() / STEP;
    for b in 0..blocks {
        let p = v.as_ptr().add(b * STEP);
        let x: [__m256; VECS] = std::array::from_fn(|j| _mm256_loadu_ps(p.add(8 * j)));
        let beat = |x: __m256| {
            if max {
                _mm256_cmp_ps::<_CMP_NLE_UQ>(x, best)
            } else {
                _mm256_cmp_ps::<_CMP_NGE_UQ>(x, best)
            }
        };
        let beats = _mm256_or_ps(
            _mm256_or_ps(beat(x[0]), beat(x[1])),
            _mm256_or_ps(beat(x[2]), beat(x[3])),
        );
        if _mm256_movemask_ps(beats) == 0 {
            continue;
        }
        if x.iter()
            .any(|&x| _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_UNORD_Q>(x, x)) != 0)
        {
            // No earlier block held a NaN: it would have ended the pass there.
            return b * STEP + v[b * STEP..].iter().position(|x| x.is_nan()).unwrap_or(0);
        }
        for (j, &x) in x.iter().enumerate() {
            let better = if max {
                _mm256_cmp_ps::<_CMP_GT_OQ>(x, best)
            } else {
                _mm256_cmp_ps::<_CMP_LT_OQ>(x, best)
            };
            best = _mm256_blendv_ps(best, x, better);
            let step = _mm256_set1_epi32((b * VECS + j) as i32);
            seen = _mm256_blendv_epi8(seen, step, _mm256_castps_si256(better));
        }
    }
    let mut values = [0f32; 8];
    let mut steps_seen = [0i32; 8];
    _mm256_storeu_ps(values.as_mut_ptr(), best);
    _mm256_storeu_si256(steps_seen.as_mut_ptr().cast(), seen);
    resolve_lanes(max, v, &values, &steps_seen, blocks * STEP)
}

/// [`arg_of_row`] over chunks in parallel. Each chunk's winner is the first best of its chunk,
/// and winners are combined left to right with the same strict `better`, so the result is the
/// first best of the row, as the serial scan finds it.
pub(super) fn arg_of_long_row<T: Element>(op: ArgOp, row: &[T]) -> usize {
    map_chunks(row, MIN_PER_TASK, |c, chunk| {
        c * MIN_PER_TASK + arg_of_row(op, chunk)
    })
    .into_iter()
    .reduce(|a, b| if op.better(row[b], row[a]) { b } else { a })
    .unwrap_or(0)
}

/// Reduces the (sorted, distinct) `axes` of `x` of `shape`.
pub(super) fn reduce(op: ReduceOp, x: &Buffer, shape: &[usize], axes: &[usize]) -> Result<Buffer> {
    with_buffer!(x, v => reduce_typed(op, v, shape, axes))
}

/// The index of the extremum along `axis`, as s64.
pub(super) fn arg_reduce(op: ArgOp, x: &Buffer, shape: &[usize], axis: usize) -> Result<Buffer> {
    with_buffer!(x, v => arg_typed(op, v, shape, axis))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column route against a plain loop over every layout it takes (one block and many,
    /// runs of rows folded in parallel and combined), for each op, with a NaN among the values
    /// max and min must return.
    #[test]
    fn columns_fold_as_a_plain_loop() {
        let cases: [(&[usize], &[usize]); 6] = [
            (&[10000, 50], &[0]),
            (&[100000, 3], &[0]),
            (&[4, 300, 7], &[1]),
            (&[2, 3, 4000, 5], &[1, 2]),
            (&[1, 1], &[0]),
            (&[0, 4], &[0]),
        ];
        for (shape, axes) in cases {
            let layout = Columns::of(shape, axes).expect("a column layout");
            let len = numel(shape);
            let mut v: Vec<f64> = (0..len)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 64.0)
                .collect();
            if len > 7 {
                v[7] = f64::NAN;
            }
            for op in [
                ReduceOp::Sum,
                ReduceOp::Product,
                ReduceOp::Max,
                ReduceOp::Min,
            ] {
                let kept: Vec<usize> = crate::shape::kept_axes(shape.len(), axes)
                    .iter()
                    .map(|&a| shape[a])
                    .collect();
                let got = reduce_columns(op, &v, layout, &kept).expect("fits");
                let Columns { pre, rows, cols } = layout;
                for o in 0..pre {
                    for j in 0..cols {
                        let want = (0..rows).fold(op.identity::<f64>(), |acc, r| {
                            op.combine(acc, v[(o * rows + r) * cols + j])
                        });
                        let got = got[o * cols + j];
                        let close = got == want
                            || (got.is_nan() && want.is_nan())
                            || (got - want).abs() <= 1e-9 * (1.0 + want.abs());
                        assert!(
                            close,
                            "{op:?} {shape:?} {axes:?} [{o}, {j}]: {got} vs {want}"
                        );
                    }
                }
            }
        }
        assert_eq!(
            Columns::of(&[3, 4], &[1]),
            None,
            "the last axis reduced is a row fold"
        );
        assert_eq!(
            Columns::of(&[3, 4, 5], &[0, 2]),
            None,
            "axes apart are transposed"
        );
    }

    /// Axes apart (a bias gradient's [0, 2, 3], the trailing runs short or long, leading axes
    /// together or not, values with a NaN) against a plain loop over every entry, each op.
    #[test]
    fn axes_apart_fold_as_a_plain_loop() {
        let cases: [(&[usize], &[usize]); 7] = [
            (&[256, 8, 14, 14], &[0, 2, 3]),
            (&[256, 64, 2, 2], &[0, 2, 3]),
            (&[3, 5, 7], &[0, 2]),
            (&[2, 3, 4, 5, 6], &[0, 2, 4]),
            (&[4, 3, 5, 2], &[0, 1, 3]),
            (&[7, 1, 9], &[0, 2]),
            (&[5, 0, 3], &[0, 2]),
        ];
        for (shape, axes) in cases {
            let len = numel(shape);
            let mut v: Vec<f64> = (0..len)
                .map(|i| ((i * 37 % 101) as f64 - 50.0) / 64.0)
                .collect();
            if len > 11 {
                v[11] = f64::NAN;
            }
            let kept = crate::shape::kept_axes(shape.len(), axes);
            let out_shape: Vec<usize> = kept.iter().map(|&a| shape[a]).collect();
            for op in [
                ReduceOp::Sum,
                ReduceOp::Product,
                ReduceOp::Max,
                ReduceOp::Min,
            ] {
                let got = reduce_vec(op, &v, shape, axes).expect("fits");
                let mut want = vec![op.identity::<f64>(); numel(&out_shape)];
                let mut at = vec![0; shape.len()];
                for (i, &x) in v.iter().enumerate() {
                    crate::shape::unravel(i, shape, &mut at);
                    let o = kept.iter().fold(0, |o, &a| o * shape[a] + at[a]);
                    want[o] = op.combine(want[o], x);
                }
                assert_eq!(got.len(), want.len(), "{op:?} {shape:?} {axes:?}");
                for (o, (&got, &want)) in got.iter().zip(&want).enumerate() {
                    let close = got == want
                        || (got.is_nan() && want.is_nan())
                        || (got - want).abs() <= 1e-9 * (1.0 + want.abs());
                    assert!(close, "{op:?} {shape:?} {axes:?} [{o}]: {got} vs {want}");
                }
            }
        }
    }

    /// The first best by a plain scan: what Nx's argmax/argmin return (first NaN wins).
    fn arg_scan(op: ArgOp, row: &[f32]) -> usize {
        let mut at = 0;
        for (i, &x) in row.iter().enumerate() {
            if op.better(x, row[at]) {
                at = i;
            }
        }
        at
    }

    /// The one-pass vector argmax/argmin (AVX-512 and AVX2) against the scan: ties (the first wins, across lanes
    /// and steps), a NaN in a lane or in the tail, rows of infinities, every tail length.
    #[test]
    fn the_vector_arg_matches_the_scan() {
        for len in [256, 257, 300, 1000, 4096 + 31] {
            let wave: Vec<f32> = (0..len).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
            let mut rows = vec![
                wave.clone(),
                vec![1.0; len],
                vec![f32::NEG_INFINITY; len],
                vec![f32::INFINITY; len],
                (0..len).map(|i| i as f32).collect(),
                (0..len).map(|i| -(i as f32)).collect(),
                // Many ties, and new bests in any vector of a block.
                (0..len).map(|i| ((i * 7919) % 13) as f32).collect(),
                (0..len).map(|i| ((i * i) % 257) as f32 * 0.5).collect(),
            ];
            for at in [0, 5, 37, len - 1] {
                let mut nan = wave.clone();
                nan[at] = f32::NAN;
                nan[len / 2] = f32::NAN;
                rows.push(nan);
            }
            for row in &rows {
                for op in [ArgOp::ArgMax, ArgOp::ArgMin] {
                    let want = arg_scan(op, row);
                    assert_eq!(arg_of_row(op, row), want, "{op:?} len {len}");
                    // The AVX2 pass too where the dispatch picked AVX-512.
                    #[cfg(target_arch = "x86_64")]
                    if is_x86_feature_detected!("avx2") {
                        // SAFETY: the CPU has AVX2; the row is short.
                        let got = unsafe { arg_f32_avx2(op == ArgOp::ArgMax, row) };
                        assert_eq!(got, want, "avx2 {op:?} len {len}");
                    }
                }
            }
        }
    }

    /// The vector max/min against the scalar fold: NaN anywhere (a vector lane, the scalar
    /// tail) wins, infinities and all-negative inputs are kept, every tail length.
    #[test]
    fn vector_extrema_match_the_scalar_fold() {
        for len in [256usize, 257, 300, 1000, 4099] {
            let base: Vec<f32> = (0..len).map(|i| -1e3 - ((i * 37) % 101) as f32).collect();
            let mut cases = vec![base.clone()];
            for at in [0, len / 2, len - 1] {
                let mut v = base.clone();
                v[at] = f32::NAN;
                cases.push(v);
                let mut v = base.clone();
                v[at] = f32::INFINITY;
                v[(at + 1) % len] = f32::NEG_INFINITY;
                cases.push(v);
            }
            for v in cases {
                for (op, cmp) in [
                    (ReduceOp::Max, BinaryOp::Max),
                    (ReduceOp::Min, BinaryOp::Min),
                ] {
                    let want = v.iter().fold(op.identity::<f32>(), |a, &x| cmp.arith(a, x));
                    let got = fold(op, &v);
                    assert!(
                        got == want || (got.is_nan() && want.is_nan()),
                        "{op:?} of {len}: {got} != {want}"
                    );
                }
            }
        }
    }
}
