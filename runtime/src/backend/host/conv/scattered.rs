//! A convolution of a dilated input at stride one (a strided convolution's input gradient, a
//! transposed convolution), computed without the dilation's zeros: every kernel tap times
//! every real input entry is one matrix product (the group's kernel as `[out_channels x taps,
//! channels]` by the input's `[channels, positions]`), and each product lands on the output
//! position that tap of that entry reaches (col2im). im2col would multiply `dilation^axes`
//! times as many zeros. Small images are taken several batch entries to a product (their
//! channels side by side), as one image of a CNN's last layers is a product of one column.

use rayon::prelude::*;

use crate::element::Element;
use crate::error::{Error, Result};
use crate::host_vec::HostVec;
use crate::ir::ConvDims;
use crate::shape::{numel, strides, unravel};

use super::product::product;
use crate::backend::host::parallel::SendPtr;

/// The products one task holds at once, in elements: 1 MiB of f32.
const PRODUCTS: usize = 1 << 18;

pub(super) fn scattered<T: Element>(
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
    // Per tap, each input entry that reaches an output position through it, and that
    // position: (input entry, output position), both flat.
    let out_strides = strides(&d.output);
    let mut k = vec![0; d.kernel.len()];
    let mut i = vec![0; d.input.len()];
    let hits: Vec<Vec<(usize, usize)>> = (0..taps)
        .map(|t| {
            unravel(t, &d.kernel, &mut k);
            (0..in_size)
                .filter_map(|e| {
                    unravel(e, &d.input, &mut i);
                    (0..d.input.len())
                        .try_fold(0, |q, a| {
                            let at = (i[a] * d.input_dilation[a]) as i64 + d.padding_lo[a]
                                - (k[a] * d.kernel_dilation[a]) as i64;
                            let at = usize::try_from(at).ok().filter(|&at| at < d.output[a])?;
                            Some(q + at * out_strides[a])
                        })
                        .map(|q| (e, q))
                })
                .collect()
        })
        .collect();
    // One batch entry's products: every tap times every input entry, which can exceed any
    // tensor.
    let per_entry = rows
        .checked_mul(taps)
        .and_then(|n| n.checked_mul(in_size))
        .ok_or_else(|| Error::InvalidArgument {
            op: "conv",
            message: format!("{rows} x {taps} x {in_size} products do not fit in memory"),
        })?;
    let batch = d.out_batch();
    let threads = rayon::current_num_threads();
    // Entries per task: products within PRODUCTS, and a few tasks per core where the batch
    // allows.
    let entries = (PRODUCTS / per_entry.max(1))
        .min(batch.div_ceil(4 * threads))
        .clamp(1, batch.max(1));
    let blocks = batch.div_ceil(entries);
    let dst = SendPtr(out.as_mut_ptr());
    let tasks = blocks * groups;
    let done = (0..tasks)
        .into_par_iter()
        .map_init(
            || (Vec::new(), Vec::new()),
            |(cols, side): &mut (Vec<T>, Vec<T>), task| {
                let (b, g) = (task / groups, task % groups);
                let (n0, n1) = (b * entries, ((b + 1) * entries).min(batch));
                let width = (n1 - n0) * in_size;
                let first_out = g * rows;
                let (first_channel, first_batch) = d.groups_of(first_out);
                let image = |n: usize| {
                    let at = ((first_batch + n) * d.channels + first_channel) * in_size;
                    &x[at..at + channels * in_size]
                };
                // The block's input as [channels, entries x positions]: in place for one
                // entry, side by side for several.
                let rhs = if n1 - n0 == 1 {
                    image(n0)
                } else {
                    side.clear();
                    if side.try_reserve(channels * width).is_err() {
                        return false;
                    }
                    for c in 0..channels {
                        for n in n0..n1 {
                            side.extend_from_slice(&image(n)[c * in_size..(c + 1) * in_size]);
                        }
                    }
                    &side[..]
                };
                // Reserved, not zeroed: the product writes every entry without reading it
                // (zeroing them was 4% of the CNN step).
                let need = rows * taps * width;
                cols.clear();
                if cols.try_reserve(need).is_err() {
                    return false;
                }
                let lhs = &wt[first_out * taps * channels..];
                // SAFETY: `lhs` holds (rows x taps) x channels, `rhs` channels x width
                // (contiguous), `cols` room for (rows x taps) x width, all of which the
                // product writes (it reads no entry of its destination).
                unsafe {
                    product(
                        (rows * taps, width, channels),
                        (cols.as_mut_ptr(), width),
                        (lhs.as_ptr(), channels),
                        (rhs.as_ptr(), 1, width as isize),
                    );
                    cols.set_len(need);
                }
                for n in n0..n1 {
                    let base = (n * d.out_channels + first_out) * positions;
                    for r in 0..rows {
                        // SAFETY: batch entry n's output rows of this group lie in `out`, and
                        // only this task writes them.
                        let row = unsafe {
                            std::slice::from_raw_parts_mut(
                                dst.offset(base + r * positions),
                                positions,
                            )
                        };
                        for (t, hits) in hits.iter().enumerate() {
                            let at = (r * taps + t) * width + (n - n0) * in_size;
                            let col = &cols[at..at + in_size];
                            for &(e, q) in hits {
                                row[q] = row[q].add(col[e]);
                            }
                        }
                    }
                }
                true
            },
        )
        .all(|done| done);
    if !done {
        return Err(Error::InvalidArgument {
            op: "conv",
            message: format!("no memory for {rows} x {taps} x {in_size} products"),
        });
    }
    Ok(out)
}
