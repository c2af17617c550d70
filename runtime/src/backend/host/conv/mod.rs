//! Convolution on the host as matrix products by panels. The product's columns are the
//! output's (batch entry, position) pairs of one group; a block of them, across batch entries
//! where images are small, gets the input entries it reads copied into a panel
//! `[channels x taps, columns]` that fits in a core's cache (im2col a block at a time, never the
//! whole unfolded input; `walk` by runs, or `table` by the CPU's vector gather where runs are
//! short), and the group's kernel rows times the panel go to the output through the `gemm`
//! crate. Blocks are independent tasks over the cores. A dilated input at
//! stride one (a strided convolution's input gradient) takes `scattered` instead.

mod product;
mod scattered;
mod table;
mod walk;

use rayon::prelude::*;

use crate::allocate::{try_alloc, try_reserve};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::host_vec::HostVec;
use crate::ir::ConvDims;
use crate::shape::{numel, unravel};

use super::parallel::SendPtr;
use product::product;

/// A panel's size in elements: 1 MiB in f32, half an L2 of 2 MiB (a quarter of a 1 MiB L2
/// measured up to 1.6x slower: blocks of 81 columns for a 5x5 kernel over 32 channels).
const PANEL: usize = 1 << 18;

/// One task's part of the product: columns `from..to` (flat over batch entry and output
/// position) of the output rows of the group starting at `first_out`, summed over the input
/// channels `channels` only.
struct Part {
    first_out: usize,
    from: usize,
    to: usize,
    channels: std::ops::Range<usize>,
}

/// A part's columns within one batch entry: entry `n`, positions `p0..p0 + len`, at column
/// `offset` of the part.
struct Segment {
    n: usize,
    p0: usize,
    len: usize,
    offset: usize,
}

fn segments(from: usize, to: usize, positions: usize) -> impl Iterator<Item = Segment> {
    let mut col = from;
    std::iter::from_fn(move || {
        (col < to).then(|| {
            let (n, p0) = (col / positions, col % positions);
            let len = (positions - p0).min(to - col);
            let segment = Segment {
                n,
                p0,
                len,
                offset: col - from,
            };
            col += len;
            segment
        })
    })
}

/// The convolution of `x` by `w` (f32 or f64).
pub(super) fn conv<T: Element>(x: &[T], w: &[T], d: &ConvDims) -> Result<HostVec<T>> {
    let shape = d.out_shape();
    let taps = numel(&d.kernel);
    let depth = d.group_channels() * taps;
    if numel(&shape) == 0 || depth == 0 {
        return try_alloc(numel(&shape), T::ZERO, &shape);
    }
    if d.strides.iter().all(|&s| s == 1) && d.input_dilation.iter().any(|&s| s > 1) {
        let out = try_alloc(numel(&shape), T::ZERO, &shape)?;
        return scattered::scattered(x, w, d, out);
    }
    panels(x, w, d)
}

/// The panel products of [`conv`].
fn panels<T: Element>(x: &[T], w: &[T], d: &ConvDims) -> Result<HostVec<T>> {
    let shape = d.out_shape();
    let len = numel(&shape);
    let (taps, positions) = (numel(&d.kernel), numel(&d.output));
    let depth = d.group_channels() * taps;
    let groups = d.feature_groups.max(d.batch_groups).max(1);
    let rows = d.out_channels / groups;
    let last = d.kernel.len() - 1;
    // Walk whichever side gives the longer runs: the output's last axis, or the kernel's (a
    // kernel's gradient, whose few output positions give runs too short to walk).
    let along_kernel = d.output[last] < d.kernel[last];
    let axes = walk::axes(d, along_kernel);
    let tap_walks: Vec<walk::Walk> = if along_kernel {
        Vec::new()
    } else {
        let mut at = vec![0; d.kernel.len()];
        (0..taps)
            .map(|tap| {
                unravel(tap, &d.kernel, &mut at);
                walk::Walk::new(&axes, &at)
            })
            .collect()
    };
    // The vector gather's tables where the CPU has one, unless the last axis is walked in long
    // contiguous runs, which copies take faster (64 images of 16x28x28 by a 3x3 kernel: 4.2
    // ms by runs, 4.4-4.6 through tables; at 14x14 tables won, 8.4 -> 8.0 ms, and at stride
    // two, 16x7x7 by 3x3: 0.76-0.94 -> 0.57-0.66 ms).
    let long_runs = axes
        .last()
        .is_some_and(|a| a.walk_step == 1 && a.walked >= 16);
    let tables = if long_runs {
        None
    } else if along_kernel {
        table::Tables::new::<T>(&axes, &d.output)
    } else {
        table::Tables::new::<T>(&axes, &d.kernel)
    };
    let in_size = numel(&d.input);
    let columns = d.out_batch() * positions;
    let threads = rayon::current_num_threads();
    // A panel of at most `PANEL` entries, and a few blocks per core where there are columns enough.
    let block = (PANEL / depth)
        .min(columns.div_ceil(4 * threads))
        .max(16)
        .min(columns);
    // Whole batch entries to a block where an entry's positions fit in one: rows of whole
    // images are the walk's fast case.
    let block = if positions <= block {
        block / positions * positions
    } else {
        block
    };
    let blocks = columns.div_ceil(block);
    let tasks = groups * blocks;
    // Too few tasks for the cores (a kernel's gradient: one small output, a deep sum):
    // split the channels, each part summed into its own block, added up after.
    let splits = if tasks < threads && depth >= 1 << 14 {
        threads.min(d.group_channels()).max(1)
    } else {
        1
    };
    let part = |task: usize| {
        let split = task % splits;
        let task = task / splits;
        let (g, b) = (task / blocks, task % blocks);
        let per = d.group_channels().div_ceil(splits);
        let channels =
            (split * per).min(d.group_channels())..((split + 1) * per).min(d.group_channels());
        Part {
            first_out: g * rows,
            from: b * block,
            to: ((b + 1) * block).min(columns),
            channels,
        }
    };
    // Fills `panel` with the part's input entries and multiplies the group's kernel rows by it
    // into `target` (rows x width at row stride `row_stride`).
    let compute = |panel: &mut Vec<T>, p: &Part, target: *mut T, row_stride: usize| -> bool {
        let (first_channel, first_batch) = d.groups_of(p.first_out);
        let width = p.to - p.from;
        let part_depth = p.channels.len() * taps;
        let need = part_depth * width;
        if tables.is_some() && panel.len() >= need {
            // The tables write every entry, padding included: what the last part left is
            // overwritten (zeroing each panel was 5% of the CNN step).
            panel.truncate(need);
        } else {
            panel.clear();
            if panel.try_reserve(need).is_err() {
                return false;
            }
            // Zeros for the padding the walk leaves.
            panel.resize(need, T::ZERO);
        }
        let plane = |n: usize, c: usize| {
            let image = (first_batch + n) * d.channels + first_channel + c;
            &x[image * in_size..(image + 1) * in_size]
        };
        let mut at = vec![0; d.kernel.len()];
        for s in segments(p.from, p.to, positions) {
            if let Some(tables) = &tables {
                if along_kernel {
                    for q in 0..s.len {
                        for (i, c) in p.channels.clone().enumerate() {
                            let column = (s.offset + q) * part_depth + i * taps;
                            let dst = &mut panel[column..column + taps];
                            tables.fill(dst, plane(s.n, c), s.p0 + q, 0);
                        }
                    }
                } else {
                    for (i, c) in p.channels.clone().enumerate() {
                        let plane = plane(s.n, c);
                        for tap in 0..taps {
                            let row = (i * taps + tap) * width + s.offset;
                            tables.fill(&mut panel[row..row + s.len], plane, tap, s.p0);
                        }
                    }
                }
            } else if along_kernel {
                for q in 0..s.len {
                    unravel(s.p0 + q, &d.output, &mut at);
                    let walk = walk::Walk::new(&axes, &at);
                    for (i, c) in p.channels.clone().enumerate() {
                        let column = (s.offset + q) * part_depth + i * taps;
                        walk.fill(&mut panel[column..column + taps], plane(s.n, c), &axes, 0);
                    }
                }
            } else {
                for (i, c) in p.channels.clone().enumerate() {
                    let plane = plane(s.n, c);
                    for (tap, walk) in tap_walks.iter().enumerate() {
                        let row = (i * taps + tap) * width + s.offset;
                        walk.fill(&mut panel[row..row + s.len], plane, &axes, s.p0);
                    }
                }
            }
        }
        let lhs = &w[p.first_out * depth + p.channels.start * taps..];
        // The panel is part_depth x width, or width x part_depth when walked along the kernel.
        let (rhs_cs, rhs_rs) = if along_kernel {
            (part_depth as isize, 1)
        } else {
            (1, width as isize)
        };
        // SAFETY: `lhs` holds rows of `depth` from this part's first channel on (rows x
        // part_depth at row stride `depth`), `panel` part_depth x width entries at the strides
        // above, and the caller gives a target of rows x width at `row_stride` that this task
        // alone writes.
        unsafe {
            product(
                (rows, width, part_depth),
                (target, row_stride),
                (lhs.as_ptr(), depth),
                (panel.as_ptr(), rhs_cs, rhs_rs),
            );
        }
        true
    };
    let refused = || Error::InvalidArgument {
        op: "conv",
        message: format!("no memory for a {depth} x {block} panel"),
    };
    // Where in `out` a part's segment starts, and the row stride there.
    let place = |p: &Part, s: &Segment| (s.n * d.out_channels + p.first_out) * positions + s.p0;
    if splits == 1 {
        // Every entry of the output is some part's to write (a product into it, or a copy from
        // a part's block): reserved, not zeroed first on one thread.
        let mut out = try_reserve::<T>(len, &shape)?;
        let dst = SendPtr(out.spare_capacity_mut().as_mut_ptr().cast::<T>());
        let done = (0..tasks)
            .into_par_iter()
            .map_init(
                || (Vec::new(), Vec::new()),
                |(panel, sum): &mut (Vec<T>, Vec<T>), task| {
                    let p = part(task);
                    let width = p.to - p.from;
                    let one_entry = (p.to - 1) / positions == p.from / positions;
                    if one_entry {
                        let first = segments(p.from, p.to, positions).next();
                        return first.is_some_and(|s| {
                            compute(panel, &p, dst.offset(place(&p, &s)), positions)
                        });
                    }
                    // Columns of several batch entries: the product goes to a block first,
                    // each entry's part of it to its place in the output after. The product
                    // writes the whole block, so what a last part left needs no zeroing.
                    if sum.len() >= rows * width {
                        sum.truncate(rows * width);
                    } else {
                        sum.clear();
                        if sum.try_reserve(rows * width).is_err() {
                            return false;
                        }
                        sum.resize(rows * width, T::ZERO);
                    }
                    if !compute(panel, &p, sum.as_mut_ptr(), width) {
                        return false;
                    }
                    for s in segments(p.from, p.to, positions) {
                        let at = place(&p, &s);
                        for r in 0..rows {
                            let from = &sum[r * width + s.offset..r * width + s.offset + s.len];
                            // SAFETY: batch entry s.n's rows of this group at positions
                            // s.p0..s.p0 + s.len lie in `out`, and only this task writes them.
                            let to = unsafe {
                                std::slice::from_raw_parts_mut(
                                    dst.offset(at + r * positions),
                                    s.len,
                                )
                            };
                            to.copy_from_slice(from);
                        }
                    }
                    true
                },
            )
            .all(|done| done);
        if !done {
            return Err(refused());
        }
        // SAFETY: the parts cover every output channel at every (batch entry, position), and
        // each wrote its block whole (the product of a part writes every entry of its target).
        unsafe { out.set_len(len) };
        return Ok(out);
    }
    let mut out = try_alloc(len, T::ZERO, &shape)?;
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
        for s in segments(p.from, p.to, positions) {
            let at = place(&p, &s);
            for r in 0..rows {
                let from = &sum[r * width + s.offset..r * width + s.offset + s.len];
                let to = &mut out[at + r * positions..at + r * positions + s.len];
                for (o, &v) in to.iter_mut().zip(from) {
                    *o = o.add(v);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_columns_at_batch_entries() {
        let got: Vec<_> = segments(5, 19, 6)
            .map(|s| (s.n, s.p0, s.len, s.offset))
            .collect();
        assert_eq!(
            got,
            [(0, 5, 1, 0), (1, 0, 6, 1), (2, 0, 6, 7), (3, 0, 1, 13)]
        );
        assert_eq!(segments(4, 4, 6).count(), 0);
    }
}
