//! Gathering a panel's entries from one input plane: along each spatial axis the input entry
//! read at a walked coordinate `w`, with the other side's coordinate `f` fixed, is
//! `(f * fixed_step + w * walk_step - padding) / input_dilation`, so the walked coordinates
//! that read the input (not padding) are one interval per axis. A row of the panel is then a
//! strided copy per run of the last axis into zeros: no table, no per-entry test.
//! (A table lookup per entry, and a run walk that went through it when runs were short, was
//! 22-31% of `bench conv`'s CNN step, whose images are 1x1 to 28x28.)

use crate::element::Element;
use crate::ir::ConvDims;

/// One spatial axis of a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct AxisWalk {
    /// The walked coordinates: the output's size on this axis, or the kernel's.
    pub walked: usize,
    /// Input entries (dilated) between walked neighbours: the stride, or the kernel dilation.
    pub walk_step: usize,
    /// Input entries (dilated) between neighbours of the fixed side.
    pub fixed_step: usize,
    /// The padding before the axis (negative crops).
    pub padding: i64,
    /// One more than the zeros between input entries.
    pub dilation: usize,
    /// The input's size on this axis.
    pub input: usize,
    /// Elements between neighbouring input entries along this axis.
    pub in_stride: usize,
}

/// The axes of a walk along the output (a panel row per channel and tap: im2col), or along
/// the kernel (a panel column per channel and output position, for the kernel's gradient,
/// whose output is a few positions and whose "kernel" is an image).
pub(super) fn axes(d: &ConvDims, along_kernel: bool) -> Vec<AxisWalk> {
    let mut in_stride = 1;
    let mut axes: Vec<AxisWalk> = (0..d.input.len())
        .rev()
        .map(|a| {
            let (walked, walk_step, fixed_step) = if along_kernel {
                (d.kernel[a], d.kernel_dilation[a], d.strides[a])
            } else {
                (d.output[a], d.strides[a], d.kernel_dilation[a])
            };
            let axis = AxisWalk {
                walked,
                walk_step,
                fixed_step,
                padding: d.padding_lo[a],
                dilation: d.input_dilation[a].max(1),
                input: d.input[a],
                in_stride,
            };
            in_stride *= d.input[a];
            axis
        })
        .collect();
    axes.reverse();
    axes
}

/// Along one axis with the fixed coordinate `f`: the first walked coordinate's dilated input
/// index, and the interval of walked coordinates that read input entries (dilation one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Reach {
    origin: i64,
    lo: usize,
    hi: usize,
}

impl AxisWalk {
    fn reach(&self, f: usize) -> Reach {
        let origin = (f * self.fixed_step) as i64 - self.padding;
        let step = self.walk_step.max(1) as i64;
        let input = self.input as i64;
        let walked = self.walked as i64;
        // w reads an entry when 0 <= origin + w * step < input.
        let lo = if origin >= 0 {
            0
        } else {
            (-origin + step - 1) / step
        };
        let hi = if origin >= input {
            0
        } else {
            (input - origin + step - 1) / step
        };
        let (lo, hi) = (lo.min(walked), hi.min(walked));
        Reach {
            origin,
            lo: lo as usize,
            hi: hi.max(lo) as usize,
        }
    }

    /// The input index walked coordinate `w` reads, if it reads one (any dilation).
    pub(super) fn source(&self, f: usize, w: usize) -> Option<usize> {
        let at = (f * self.fixed_step + w * self.walk_step) as i64 - self.padding;
        let at = usize::try_from(at).ok()?;
        (at % self.dilation == 0 && at / self.dilation < self.input).then_some(at / self.dilation)
    }
}

/// A walk with the other side's coordinates fixed: per axis, the interval of walked
/// coordinates that read the input. Made once per tap (or output position) and used for every
/// channel and batch entry.
#[derive(Clone, Debug)]
pub(super) struct Walk {
    reach: [Reach; MAX_AXES],
    fixed: Vec<usize>,
    /// Some axis has a dilated input: entry by entry.
    dilated: bool,
}

/// Spatial axes a walk takes by runs; more go entry by entry.
const MAX_AXES: usize = 8;

impl Walk {
    pub(super) fn new(axes: &[AxisWalk], fixed: &[usize]) -> Walk {
        let empty = Reach {
            origin: 0,
            lo: 0,
            hi: 0,
        };
        let mut walk = Walk {
            reach: [empty; MAX_AXES],
            fixed: fixed.to_vec(),
            dilated: axes.len() > MAX_AXES || axes.iter().any(|a| a.dilation > 1),
        };
        for (a, (axis, &f)) in axes.iter().zip(fixed).take(MAX_AXES).enumerate() {
            walk.reach[a] = axis.reach(f);
        }
        walk
    }

    /// Writes into `dst` the entries of `plane` at the walked flat indices
    /// `from..from + dst.len()` (over the `walked` sizes, last axis fastest), leaving the
    /// entries that read padding as they are: `dst` comes zeroed, one memset for a whole panel
    /// (a call to memset per short run of padding cost more than the copies).
    pub(super) fn fill<T: Element>(
        &self,
        dst: &mut [T],
        plane: &[T],
        axes: &[AxisWalk],
        from: usize,
    ) {
        let Some(last) = axes.len().checked_sub(1) else {
            return;
        };
        if self.dilated {
            return gather_dilated(dst, plane, axes, &self.fixed, from);
        }
        let width = axes[last].walked.max(1);
        if last == 1 && from.is_multiple_of(width) && dst.len().is_multiple_of(width) {
            return self.fill_rows(dst, plane, axes, from / width);
        }
        let mut coords = [0usize; MAX_AXES];
        let mut rest = from;
        for a in (0..axes.len()).rev() {
            let n = axes[a].walked.max(1);
            coords[a] = rest % n;
            rest /= n;
        }
        let lane = &axes[last];
        let (step, len) = (lane.walk_step, lane.walked);
        let r = self.reach[last];
        let mut o = 0;
        while o < dst.len() {
            let first = coords[last];
            let run = (len - first).min(dst.len() - o);
            let out = &mut dst[o..o + run];
            // The outer axes' input offset, if every outer coordinate reads an entry.
            let mut base = Some(0usize);
            for a in 0..last {
                let (c, q) = (coords[a], self.reach[a]);
                if c < q.lo || c >= q.hi {
                    base = None;
                    break;
                }
                let at = (q.origin + (c * axes[a].walk_step) as i64) as usize;
                base = base.map(|b| b + at * axes[a].in_stride);
            }
            if let Some(base) = base {
                let end = first + run;
                let lo = r.lo.clamp(first, end);
                let hi = r.hi.clamp(lo, end);
                if hi > lo {
                    let begin = base + (r.origin + (lo * step) as i64) as usize;
                    copy_run(&mut out[lo - first..hi - first], plane, begin, step);
                }
            }
            o += run;
            // The next run starts at the last axis' first coordinate of the next outer position.
            coords[last] = 0;
            for a in (0..last).rev() {
                coords[a] += 1;
                if coords[a] < axes[a].walked {
                    break;
                }
                coords[a] = 0;
            }
        }
    }
}

/// `dst[j] = plane[begin + j * step]`: one run of a panel's row.
fn copy_run<T: Element>(dst: &mut [T], plane: &[T], begin: usize, step: usize) {
    let Some(last) = dst.len().checked_sub(1) else {
        return;
    };
    if step == 1 {
        dst.copy_from_slice(&plane[begin..begin + dst.len()]);
    } else {
        strided_copy(dst, &plane[begin..begin + last * step + 1], step);
    }
}

/// `dst[j] = source[j * step]`; `source` ends at the last entry read.
fn strided_copy<T: Element>(dst: &mut [T], source: &[T], step: usize) {
    // An index per entry: `step_by`'s bookkeeping was half of the panel's time.
    for (j, d) in dst.iter_mut().enumerate() {
        *d = source[j * step];
    }
}

impl Walk {
    /// [`Walk::fill`] of whole rows of a 2-D walk from row `first_row` on: the common case
    /// (a whole image's row of the panel), without the general walk's bookkeeping per run.
    fn fill_rows<T: Element>(
        &self,
        dst: &mut [T],
        plane: &[T],
        axes: &[AxisWalk],
        first_row: usize,
    ) {
        let (outer, inner) = (&axes[0], &axes[1]);
        let (ro, ri) = (self.reach[0], self.reach[1]);
        let width = inner.walked;
        let step = inner.walk_step;
        let count = ri.hi - ri.lo;
        for (y, row) in dst.chunks_exact_mut(width).enumerate() {
            let y = first_row + y;
            if y < ro.lo || y >= ro.hi || count == 0 {
                continue;
            }
            let base = (ro.origin + (y * outer.walk_step) as i64) as usize * outer.in_stride;
            let begin = base + (ri.origin + (ri.lo * step) as i64) as usize;
            copy_run(&mut row[ri.lo..ri.hi], plane, begin, step);
        }
    }
}

/// Fills `dst` with the entries of `plane` at the walked flat indices `from..from + dst.len()`
/// with `fixed` the other side's coordinates (a [`Walk`] made and used once).
#[cfg(test)]
fn gather<T: Element>(dst: &mut [T], plane: &[T], axes: &[AxisWalk], fixed: &[usize], from: usize) {
    Walk::new(axes, fixed).fill(dst, plane, axes, from);
}

/// [`gather`] for a dilated input (a strided convolution's input gradient through a strided
/// window, a transposed convolution with strides): an entry at a time.
fn gather_dilated<T: Element>(
    dst: &mut [T],
    plane: &[T],
    axes: &[AxisWalk],
    fixed: &[usize],
    from: usize,
) {
    let mut coords = vec![0usize; axes.len()];
    for (i, slot) in dst.iter_mut().enumerate() {
        let mut rest = from + i;
        for a in (0..axes.len()).rev() {
            let n = axes[a].walked.max(1);
            coords[a] = rest % n;
            rest /= n;
        }
        let at = axes
            .iter()
            .zip(fixed)
            .zip(&coords)
            .try_fold(0usize, |acc, ((axis, &f), &w)| {
                axis.source(f, w).map(|s| acc + s * axis.in_stride)
            });
        *slot = at.map_or(T::ZERO, |at| plane[at]);
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    fn axis(walked: usize, walk_step: usize, padding: i64, input: usize) -> AxisWalk {
        AxisWalk {
            walked,
            walk_step,
            fixed_step: 1,
            padding,
            dilation: 1,
            input,
            in_stride: 1,
        }
    }

    #[test]
    fn reach_is_the_interval_that_reads_the_input() {
        // 7 outputs at stride 2 over 14 inputs, padding 1: tap 0 reads -1, 1, ..., 11.
        let a = axis(7, 2, 1, 14);
        assert_eq!((a.reach(0).lo, a.reach(0).hi), (1, 7));
        assert_eq!(
            (a.reach(2).lo, a.reach(2).hi),
            (0, 7),
            "tap 2 reads 1, 3, ..., 13"
        );
        // Past the input on both sides, and a crop.
        let b = axis(3, 1, 5, 2);
        assert_eq!((b.reach(0).lo, b.reach(0).hi), (3, 3));
        let c = axis(4, 1, -2, 4);
        assert_eq!((c.reach(0).lo, c.reach(0).hi), (0, 2));
    }

    /// 2-D walks of 4 x 5 coordinates over a `input` plane with strides, padding on both
    /// sides, crops and dilated inputs; each with its steps, padding and dilation.
    #[allow(clippy::type_complexity)]
    pub(in crate::backend::host::conv) fn sample_walks(
        input: [usize; 2],
    ) -> Vec<(Vec<AxisWalk>, [usize; 2], [i64; 2], usize)> {
        let mut walks = Vec::new();
        for (steps, padding) in [([1, 1], [0, 0]), ([2, 3], [1, 2]), ([2, 1], [-1, 3])] {
            for dilation in [1, 2] {
                let axes: Vec<AxisWalk> = (0..2)
                    .map(|a| AxisWalk {
                        walked: 4 + a,
                        walk_step: steps[a],
                        fixed_step: 2,
                        padding: padding[a],
                        dilation,
                        input: input[a],
                        in_stride: if a == 0 { input[1] } else { 1 },
                    })
                    .collect();
                walks.push((axes, steps, padding, dilation));
            }
        }
        walks
    }

    /// Every walk against the definition, entry by entry, over ranges that start and end
    /// inside runs.
    #[test]
    fn gather_matches_the_definition() {
        let input = [5usize, 6];
        let plane: Vec<f64> = (0..30).map(|v| v as f64 + 1.0).collect();
        for (axes, steps, padding, dilation) in sample_walks(input) {
            let total = 4 * 5;
            for fixed in [[0, 0], [1, 2], [3, 1]] {
                let want: Vec<f64> = (0..total)
                    .map(|p| {
                        let (y, x) = (p / 5, p % 5);
                        match (axes[0].source(fixed[0], y), axes[1].source(fixed[1], x)) {
                            (Some(i), Some(j)) => plane[i * input[1] + j],
                            _ => 0.0,
                        }
                    })
                    .collect();
                for (from, to) in [(0, total), (3, 17), (7, 8), (5, 5)] {
                    let mut got = vec![0.0; to - from];
                    gather(&mut got, &plane, &axes, &fixed, from);
                    assert_eq!(
                        got,
                        want[from..to],
                        "{steps:?} {padding:?} {dilation} {fixed:?}"
                    );
                }
            }
        }
    }
}
