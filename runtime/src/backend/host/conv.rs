//! Convolution on the host as matrix products by panels: for each output batch entry, group
//! and block of output positions, the input entries the block reads are copied into a panel
//! `[channels x taps, positions]` that fits in a core's cache (im2col a block at a time, never
//! the whole unfolded input), and the group's kernel rows times the panel are written straight
//! into the output by the `gemm` crate. Blocks are independent tasks over the cores.

use rayon::prelude::*;

use crate::allocate::try_alloc;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::host_vec::HostVec;
use crate::ir::ConvDims;
use crate::shape::{numel, strides, unravel};

use super::parallel::SendPtr;

/// A panel's size in elements: a quarter of a 1 MiB L2 in f32.
const PANEL: usize = 1 << 16;

/// Along each spatial axis, the input offset (in elements, by that axis' stride) that tap `k`
/// reads for output position `y`, at `[k * outputs + y]` (a tap's positions side by side, as
/// the panel's rows walk them); `None` for padding.
fn source_offsets(d: &ConvDims) -> Vec<Vec<Option<usize>>> {
    let in_strides = strides(&d.input);
    (0..d.input.len())
        .map(|a| {
            let outs = d.output[a];
            (0..outs * d.kernel[a])
                .map(|i| d.source(a, i % outs, i / outs).map(|s| s * in_strides[a]))
                .collect()
        })
        .collect()
}

/// Appends one panel row: the entries of `plane` that tap `k` (per axis) reads for the output
/// positions `from..to`, zeros where it reads padding. The positions are walked as runs along
/// the last axis, so each entry costs one table lookup.
fn push_row<T: Element>(
    row: &mut Vec<T>,
    plane: &[T],
    d: &ConvDims,
    offsets: &[Vec<Option<usize>>],
    k: &[usize],
    (from, to): (usize, usize),
) {
    let last = d.output.len() - 1;
    let outs = d.output[last];
    let line = &offsets[last][k[last] * outs..(k[last] + 1) * outs];
    let mut p = from;
    while p < to {
        let (mut outer, y0) = (p / outs, p % outs);
        let run = (outs - y0).min(to - p);
        let mut base = Some(0);
        for a in (0..last).rev() {
            let y = outer % d.output[a];
            outer /= d.output[a];
            base = base
                .zip(offsets[a][k[a] * d.output[a] + y])
                .map(|(b, o)| b + o);
        }
        match base {
            Some(base) => row.extend(line[y0..y0 + run].iter().map(|o| match o {
                Some(o) => plane[base + o],
                None => T::ZERO,
            })),
            None => row.extend(std::iter::repeat_n(T::ZERO, run)),
        }
        p += run;
    }
}

/// Appends one panel column: the entries of `plane` that every tap reads for the output
/// position `y` (per axis), zeros for padding, walked as runs along the kernel's last axis
/// (`offsets` laid out `[y * taps + k]`). For small outputs of large kernels (a kernel's
/// gradient), where the positions give runs too short to walk.
fn push_column<T: Element>(
    column: &mut Vec<T>,
    plane: &[T],
    d: &ConvDims,
    offsets: &[Vec<Option<usize>>],
    y: &[usize],
) {
    let last = d.kernel.len() - 1;
    let taps = d.kernel[last];
    let line = &offsets[last][y[last] * taps..(y[last] + 1) * taps];
    for outer in 0..numel(&d.kernel[..last]) {
        let mut rest = outer;
        let mut base = Some(0);
        for a in (0..last).rev() {
            let k = rest % d.kernel[a];
            rest /= d.kernel[a];
            base = base
                .zip(offsets[a][y[a] * d.kernel[a] + k])
                .map(|(b, o)| b + o);
        }
        match base {
            Some(base) => column.extend(line.iter().map(|o| match o {
                Some(o) => plane[base + o],
                None => T::ZERO,
            })),
            None => column.extend(std::iter::repeat_n(T::ZERO, taps)),
        }
    }
}

/// [`source_offsets`] laid out `[y * taps + k]`: an output position's taps side by side.
fn offsets_by_position(d: &ConvDims) -> Vec<Vec<Option<usize>>> {
    let in_strides = strides(&d.input);
    (0..d.input.len())
        .map(|a| {
            let taps = d.kernel[a];
            (0..d.output[a] * taps)
                .map(|i| d.source(a, i / taps, i % taps).map(|s| s * in_strides[a]))
                .collect()
        })
        .collect()
}

/// One task's part of the product: the output rows `rows` of group `g` for batch entry `n`
/// and positions `from..to`, summed over the input channels `channels` only.
struct Part {
    n: usize,
    first_out: usize,
    from: usize,
    to: usize,
    channels: std::ops::Range<usize>,
}

/// The convolution of `x` by `w` (f32 or f64).
pub(super) fn conv<T: Element>(x: &[T], w: &[T], d: &ConvDims) -> Result<HostVec<T>> {
    let shape = d.out_shape();
    let mut out = try_alloc(numel(&shape), T::ZERO, &shape)?;
    let (taps, positions) = (numel(&d.kernel), numel(&d.output));
    let depth = d.group_channels() * taps;
    let groups = d.feature_groups.max(d.batch_groups).max(1);
    let rows = d.out_channels / groups;
    if out.is_empty() || depth == 0 {
        return Ok(out);
    }
    let last = d.kernel.len() - 1;
    // Walk whichever side gives the longer runs: the output's last axis, or the kernel's.
    let by_position = d.output[last] < d.kernel[last];
    let block = (PANEL / depth).clamp(16, positions.max(16)).min(positions);
    let blocks = positions.div_ceil(block);
    let offsets = if by_position {
        offsets_by_position(d)
    } else {
        source_offsets(d)
    };
    let in_size = numel(&d.input);
    let tasks = d.out_batch() * groups * blocks;
    // Too few tasks for the cores (a kernel's gradient: one small output, a deep sum):
    // split the channels, each part summed into its own block, added up after.
    let threads = rayon::current_num_threads();
    let splits = if tasks < threads && depth >= 1 << 14 {
        threads.min(d.group_channels()).max(1)
    } else {
        1
    };
    let part = |task: usize| {
        let split = task % splits;
        let task = task / splits;
        let (n, rest) = (task / (groups * blocks), task % (groups * blocks));
        let (g, b) = (rest / blocks, rest % blocks);
        let per = d.group_channels().div_ceil(splits);
        let channels =
            (split * per).min(d.group_channels())..((split + 1) * per).min(d.group_channels());
        Part {
            n,
            first_out: g * rows,
            from: b * block,
            to: ((b + 1) * block).min(positions),
            channels,
        }
    };
    // Fills `panel` with the part's input entries and multiplies the group's kernel rows by it
    // into `target` (rows x width at row stride `row_stride`), adding when `accumulate`.
    let compute = |panel: &mut Vec<T>, p: &Part, target: *mut T, row_stride: usize| -> bool {
        let (first_channel, first_batch) = d.groups_of(p.first_out);
        let width = p.to - p.from;
        let part_depth = p.channels.len() * taps;
        panel.clear();
        if panel.try_reserve(part_depth * width).is_err() {
            return false;
        }
        let image = (first_batch + p.n) * d.channels + first_channel;
        let plane = |c: usize| &x[(image + c) * in_size..(image + c + 1) * in_size];
        let mut at = vec![0; d.kernel.len()];
        if by_position {
            for q in p.from..p.to {
                unravel(q, &d.output, &mut at);
                for c in p.channels.clone() {
                    push_column(panel, plane(c), d, &offsets, &at);
                }
            }
        } else {
            for c in p.channels.clone() {
                for tap in 0..taps {
                    unravel(tap, &d.kernel, &mut at);
                    push_row(panel, plane(c), d, &offsets, &at, (p.from, p.to));
                }
            }
        }
        let lhs = &w[p.first_out * depth + p.channels.start * taps..];
        // The panel is part_depth x width, or width x part_depth when walked by position.
        let (rhs_cs, rhs_rs) = if by_position {
            (part_depth as isize, 1)
        } else {
            (1, width as isize)
        };
        // SAFETY: `lhs` holds rows of `depth` from this part's first channel on (rows x
        // part_depth at row stride `depth`), `panel` part_depth x width entries at the strides
        // above, and the caller gives a target of rows x width at `row_stride` that this task
        // alone writes.
        unsafe {
            gemm::gemm(
                rows,
                width,
                part_depth,
                target,
                1,
                row_stride as isize,
                false,
                lhs.as_ptr(),
                1,
                depth as isize,
                panel.as_ptr(),
                rhs_cs,
                rhs_rs,
                T::ZERO,
                T::ONE,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
        true
    };
    let refused = || Error::InvalidArgument {
        op: "conv",
        message: format!("no memory for a {depth} x {block} panel"),
    };
    if splits == 1 {
        let dst = SendPtr(out.as_mut_ptr());
        let done = (0..tasks)
            .into_par_iter()
            .map_init(Vec::new, |panel: &mut Vec<T>, task| {
                let p = part(task);
                let target = dst.offset((p.n * d.out_channels + p.first_out) * positions + p.from);
                compute(panel, &p, target, positions)
            })
            .all(|done| done);
        return if done { Ok(out) } else { Err(refused()) };
    }
    let partials = (0..tasks * splits)
        .into_par_iter()
        .map_init(Vec::new, |panel: &mut Vec<T>, task| {
            let p = part(task);
            let width = p.to - p.from;
            let mut sum = vec![T::ZERO; rows * width];
            compute(panel, &p, sum.as_mut_ptr(), width).then_some((p, sum))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(refused)?;
    for (p, sum) in partials {
        let width = p.to - p.from;
        for (r, row) in sum.chunks(width.max(1)).enumerate() {
            let start = (p.n * d.out_channels + p.first_out + r) * positions + p.from;
            for (o, &v) in out[start..start + width].iter_mut().zip(row) {
                *o = o.add(v);
            }
        }
    }
    Ok(out)
}
