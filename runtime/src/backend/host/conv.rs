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
use crate::shape::{numel, strides};

use super::parallel::SendPtr;

/// A panel's size in elements: a quarter of a 1 MiB L2 in f32.
const PANEL: usize = 1 << 16;

/// Along each spatial axis, the input offset (in elements, by that axis' stride) that tap `k`
/// reads for output position `y`, at `[y * taps + k]`; `None` for padding.
fn source_offsets(d: &ConvDims) -> Vec<Vec<Option<usize>>> {
    let in_strides = strides(&d.input);
    (0..d.input.len())
        .map(|a| {
            let (outs, taps) = (d.output[a], d.kernel[a]);
            (0..outs * taps)
                .map(|i| d.source(a, i / taps, i % taps).map(|s| s * in_strides[a]))
                .collect()
        })
        .collect()
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
    let block = (PANEL / depth).clamp(16, positions.max(16)).min(positions);
    let blocks = positions.div_ceil(block);
    let offsets = source_offsets(d);
    let in_size = numel(&d.input);
    let kernel_strides = strides(&d.kernel);
    let out_strides = strides(&d.output);
    let dst = SendPtr(out.as_mut_ptr());
    let tasks = d.out_batch() * groups * blocks;
    let failed = (0..tasks)
        .into_par_iter()
        .map_init(Vec::new, |panel: &mut Vec<T>, task| {
            let (n, rest) = (task / (groups * blocks), task % (groups * blocks));
            let (g, b) = (rest / blocks, rest % blocks);
            let first_out = g * rows;
            let (first_channel, first_batch) = d.groups_of(first_out);
            let (from, to) = (b * block, ((b + 1) * block).min(positions));
            let width = to - from;
            panel.clear();
            if panel.try_reserve(depth * width).is_err() {
                return true;
            }
            let image = (first_batch + n) * d.channels + first_channel;
            for c in 0..d.group_channels() {
                let plane = &x[(image + c) * in_size..(image + c + 1) * in_size];
                for tap in 0..taps {
                    panel.extend((from..to).map(|p| {
                        let mut at = 0;
                        for a in 0..offsets.len() {
                            let (y, k) = (
                                p / out_strides[a] % d.output[a],
                                tap / kernel_strides[a] % d.kernel[a],
                            );
                            match offsets[a][y * d.kernel[a] + k] {
                                Some(o) => at += o,
                                None => return T::ZERO,
                            }
                        }
                        plane[at]
                    }));
                }
            }
            let lhs = &w[first_out * depth..(first_out + rows) * depth];
            let target = dst.offset((n * d.out_channels + first_out) * positions + from);
            // SAFETY: `lhs` is rows x depth and `panel` depth x width, row-major; the target
            // block (rows x width at row stride `positions`) lies inside `out` and belongs to
            // this task alone (its batch entry, its group's channels, its positions).
            unsafe {
                gemm::gemm(
                    rows,
                    width,
                    depth,
                    target,
                    1,
                    positions as isize,
                    false,
                    lhs.as_ptr(),
                    1,
                    depth as isize,
                    panel.as_ptr(),
                    1,
                    width as isize,
                    T::ZERO,
                    T::ONE,
                    false,
                    false,
                    false,
                    gemm::Parallelism::None,
                );
            }
            false
        })
        .any(|failed| failed);
    if failed {
        return Err(Error::InvalidArgument {
            op: "conv",
            message: format!("no memory for a {depth} x {block} panel"),
        });
    }
    Ok(out)
}
