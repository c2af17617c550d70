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

/// A line of offsets along the last axis that is zeros (padding), then entries evenly spaced,
/// then zeros: every line is, unless the input is dilated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Affine {
    lead: usize,
    count: usize,
    start: usize,
    step: usize,
}

impl Affine {
    fn of(line: &[Option<usize>]) -> Option<Affine> {
        let lead = line.iter().position(Option::is_some).unwrap_or(line.len());
        let count = line[lead..].iter().take_while(|o| o.is_some()).count();
        let tail = &line[lead + count..];
        let entries: Vec<usize> = line[lead..lead + count].iter().flatten().copied().collect();
        let start = entries.first().copied().unwrap_or(0);
        let step = match entries.as_slice() {
            [a, b, ..] => b.checked_sub(*a)?,
            _ => 1,
        };
        let even = entries
            .windows(2)
            .all(|w| w[0].checked_add(step) == Some(w[1]));
        (even && tail.iter().all(Option::is_none)).then_some(Affine {
            lead,
            count,
            start,
            step,
        })
    }
}

/// Per axis, the input offsets a panel's walk reads (see [`source_offsets`]), and each line
/// of the last axis' table as an [`Affine`] run where it is one.
struct Offsets {
    table: Vec<Vec<Option<usize>>>,
    lines: Vec<Option<Affine>>,
}

impl Offsets {
    fn new(table: Vec<Vec<Option<usize>>>, walked: &[usize]) -> Offsets {
        let len = walked.last().copied().unwrap_or(1).max(1);
        let lines = table
            .last()
            .map(|last| last.chunks(len).map(Affine::of).collect())
            .unwrap_or_default();
        Offsets { table, lines }
    }
}

/// Runs shorter than this are read through the table even on an [`Affine`] line.
const AFFINE_FROM: usize = 8;

/// Appends the entries of `plane` one panel row or column reads, zeros where it reads
/// padding: the flat indices `from..to` over the `walked` sizes (the output's, for a row of one
/// tap; the kernel's, for a column of one output position), with `fixed` the other side's
/// coordinate on each axis and `offsets[a]` laid out `[fixed * walked[a] + coordinate]`.
/// Indices are walked as runs along the last axis; a run of an [`Affine`] line is zeros and a
/// strided copy (a plain copy at stride 1), any other costs a table lookup per entry (the
/// lookups were 31% of `bench conv`'s CNN step).
fn push_entries<T: Element>(
    dst: &mut Vec<T>,
    plane: &[T],
    offsets: &Offsets,
    walked: &[usize],
    fixed: &[usize],
    (from, to): (usize, usize),
) {
    let table = &offsets.table;
    let last = walked.len() - 1;
    let len = walked[last];
    let line = &table[last][fixed[last] * len..(fixed[last] + 1) * len];
    let affine = offsets.lines[fixed[last]];
    let mut p = from;
    while p < to {
        let (mut outer, first) = (p / len, p % len);
        let run = (len - first).min(to - p);
        let mut base = Some(0);
        for a in (0..last).rev() {
            let at = outer % walked[a];
            outer /= walked[a];
            base = base
                .zip(table[a][fixed[a] * walked[a] + at])
                .map(|(b, o)| b + o);
        }
        match (base, affine) {
            // Short runs stay on the table: their zeros and copy cost more than the lookups.
            (Some(base), Some(f)) if run >= AFFINE_FROM => {
                let (lo, hi) = (
                    first.clamp(f.lead, f.lead + f.count),
                    (first + run).clamp(f.lead, f.lead + f.count),
                );
                dst.extend(std::iter::repeat_n(T::ZERO, lo - first));
                if hi > lo {
                    let begin = base + f.start + (lo - f.lead) * f.step;
                    if f.step == 1 {
                        dst.extend_from_slice(&plane[begin..begin + (hi - lo)]);
                    } else {
                        // Chunks of a slice have a trusted length: one reservation, no pushes.
                        let end = begin + (hi - lo - 1) * f.step + 1;
                        dst.extend(plane[begin..end].chunks(f.step).map(|c| c[0]));
                    }
                }
                dst.extend(std::iter::repeat_n(T::ZERO, first + run - hi));
            }
            (Some(base), _) => dst.extend(line[first..first + run].iter().map(|o| match o {
                Some(o) => plane[base + o],
                None => T::ZERO,
            })),
            (None, _) => dst.extend(std::iter::repeat_n(T::ZERO, run)),
        }
        p += run;
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
    if d.strides.iter().all(|&s| s == 1) && d.input_dilation.iter().any(|&s| s > 1) {
        return scattered(x, w, d, out);
    }
    let last = d.kernel.len() - 1;
    // Walk whichever side gives the longer runs: the output's last axis, or the kernel's.
    let by_position = d.output[last] < d.kernel[last];
    let block = (PANEL / depth).clamp(16, positions.max(16)).min(positions);
    let blocks = positions.div_ceil(block);
    let offsets = if by_position {
        Offsets::new(offsets_by_position(d), &d.kernel)
    } else {
        Offsets::new(source_offsets(d), &d.output)
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
                    // A column: every tap for one output position (a kernel's gradient, whose
                    // positions give runs too short to walk).
                    push_entries(panel, plane(c), &offsets, &d.kernel, &at, (0, taps));
                }
            }
        } else {
            for c in p.channels.clone() {
                for tap in 0..taps {
                    unravel(tap, &d.kernel, &mut at);
                    push_entries(panel, plane(c), &offsets, &d.output, &at, (p.from, p.to));
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

/// A convolution of a dilated input at stride 1 (a strided convolution's input gradient, a
/// transposed convolution), computed without the dilation's zeros: for each batch entry and
/// group, every kernel tap times every real input entry is one matrix product (the group's
/// kernel as `[out_channels x taps, channels]` by the input's `[channels, positions]`, read in
/// place), and each product lands on the output position that tap of that entry reaches
/// (col2im). im2col would multiply `dilation^axes` times as many zeros.
fn scattered<T: Element>(
    x: &[T],
    w: &[T],
    d: &ConvDims,
    mut out: HostVec<T>,
) -> Result<HostVec<T>> {
    let (taps, positions) = (numel(&d.kernel), numel(&d.output));
    let in_size = numel(&d.input);
    let groups = d.feature_groups.max(d.batch_groups).max(1);
    let rows = d.out_channels / groups;
    let channels = d.group_channels();
    // The kernel as [(out channel, tap), channel], per group.
    let mut wt = vec![T::ZERO; d.out_channels * taps * channels];
    for o in 0..d.out_channels {
        for c in 0..channels {
            for t in 0..taps {
                wt[(o * taps + t) * channels + c] = w[(o * channels + c) * taps + t];
            }
        }
    }
    // Per axis, the output position input entry `i` reaches through tap `k`, at [k * n + i].
    let reach: Vec<Vec<Option<usize>>> = (0..d.input.len())
        .map(|a| {
            let n = d.input[a];
            (0..n * d.kernel[a])
                .map(|j| {
                    let (k, i) = (j / n, j % n);
                    let q = (i * d.input_dilation[a]) as i64 + d.padding_lo[a]
                        - (k * d.kernel_dilation[a]) as i64;
                    usize::try_from(q).ok().filter(|&q| q < d.output[a])
                })
                .collect()
        })
        .collect();
    // A task's products: every tap times every input entry, which can exceed any tensor.
    let products = rows
        .checked_mul(taps)
        .and_then(|n| n.checked_mul(in_size))
        .ok_or_else(|| Error::InvalidArgument {
            op: "conv",
            message: format!("{rows} x {taps} x {in_size} products do not fit in memory"),
        })?;
    let out_strides = strides(&d.output);
    let dst = SendPtr(out.as_mut_ptr());
    let tasks = d.out_batch() * groups;
    let done = (0..tasks)
        .into_par_iter()
        .map_init(Vec::new, |cols: &mut Vec<T>, task| {
            let (n, g) = (task / groups, task % groups);
            let first_out = g * rows;
            let (first_channel, first_batch) = d.groups_of(first_out);
            let image = &x[((first_batch + n) * d.channels + first_channel) * in_size..];
            cols.clear();
            if cols.try_reserve(products).is_err() {
                return false;
            }
            cols.resize(products, T::ZERO);
            let lhs = &wt[first_out * taps * channels..];
            // SAFETY: `lhs` holds (rows x taps) x channels, the input entry's group
            // channels x in_size (contiguous), `cols` (rows x taps) x in_size.
            unsafe {
                gemm::gemm(
                    rows * taps,
                    in_size,
                    channels,
                    cols.as_mut_ptr(),
                    1,
                    in_size as isize,
                    false,
                    lhs.as_ptr(),
                    1,
                    channels as isize,
                    image.as_ptr(),
                    1,
                    in_size as isize,
                    T::ZERO,
                    T::ONE,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            let base = (n * d.out_channels + first_out) * positions;
            let last = d.input.len() - 1;
            let line = d.input[last];
            let mut k = vec![0; d.kernel.len()];
            for r in 0..rows {
                for t in 0..taps {
                    unravel(t, &d.kernel, &mut k);
                    let col = &cols[(r * taps + t) * in_size..(r * taps + t + 1) * in_size];
                    let reach_last = &reach[last][k[last] * line..(k[last] + 1) * line];
                    // Runs along the input's last axis: the outer axes' place once a run.
                    for (outer, run) in col.chunks(line.max(1)).enumerate() {
                        let mut rest = outer;
                        let mut q = Some(0);
                        for a in (0..last).rev() {
                            let i = rest % d.input[a];
                            rest /= d.input[a];
                            q = q
                                .zip(reach[a][k[a] * d.input[a] + i])
                                .map(|(q, p)| q + p * out_strides[a]);
                        }
                        let Some(q) = q else { continue };
                        for (&v, p) in run.iter().zip(reach_last) {
                            if let Some(p) = p {
                                // SAFETY: the position lies in this task's rows of `out`
                                // (batch entry n, its group's channels), written by it alone.
                                unsafe {
                                    let slot = dst.offset(base + r * positions + q + p);
                                    *slot = (*slot).add(v);
                                }
                            }
                        }
                    }
                }
            }
            true
        })
        .all(|done| done);
    if !done {
        return Err(Error::InvalidArgument {
            op: "conv",
            message: format!("no memory for {rows} x {taps} x {in_size} products"),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_padding_and_even_steps_are_affine() {
        let line = [None, Some(0), Some(2), Some(4), None, None];
        assert_eq!(
            Affine::of(&line),
            Some(Affine {
                lead: 1,
                count: 3,
                start: 0,
                step: 2
            })
        );
        let single = [None, None, Some(5)];
        assert_eq!(
            Affine::of(&single).map(|f| (f.lead, f.count, f.start)),
            Some((2, 1, 5))
        );
        assert_eq!(Affine::of(&[None, None]).map(|f| f.count), Some(0));
        // A dilated input: holes between entries, or uneven steps, take the table.
        assert_eq!(Affine::of(&[Some(0), None, Some(1)]), None);
        assert_eq!(Affine::of(&[Some(0), Some(1), Some(3)]), None);
        assert_eq!(Affine::of(&[Some(3), Some(1)]), None, "steps go forward");
    }
}
