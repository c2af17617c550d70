//! The gradient of `Op::Conv` with respect to its input and its kernel, each itself a
//! convolution (XLA's transposed convolutions, as JAX derives them): the input's gradient
//! convolves the result's gradient with the kernel reversed and its channel axes swapped,
//! strides becoming input dilation; the kernel's gradient convolves the input (batch and
//! channels swapped) with the result's gradient as the kernel, strides becoming kernel
//! dilation. Feature groups of one are batch groups of the other.

use crate::error::Result;
use crate::ir::ConvDims;
use crate::ops::conv::ConvSpec;
use crate::ops::spatial::dilated;
use crate::tensor::Tensor;

use super::site::Site;

/// The gradients of the input and the kernel (each only where wanted) given `g`, the
/// gradient of the result.
pub(super) fn conv(d: &ConvDims, site: &Site<'_>, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let (x, w) = (site.input(0)?, site.input(1)?);
    let g = g.reshape(&d.out_shape())?;
    let x = x.reshape(&in_shape(d))?;
    let w = w.reshape(&kernel_shape(d))?;
    let gx = if site.wants(0) {
        Some(input_gradient(d, &w, &g)?)
    } else {
        None
    };
    let gw = if site.wants(1) {
        Some(kernel_gradient(d, &x, &g)?)
    } else {
        None
    };
    Ok(vec![gx, gw])
}

fn in_shape(d: &ConvDims) -> Vec<usize> {
    let mut s = vec![d.batch, d.channels];
    s.extend_from_slice(&d.input);
    s
}

fn kernel_shape(d: &ConvDims) -> Vec<usize> {
    let mut s = vec![d.out_channels, d.group_channels()];
    s.extend_from_slice(&d.kernel);
    s
}

/// `t` with axes `a` and `b` swapped.
fn swapped(t: &Tensor, a: usize, b: usize) -> Result<Tensor> {
    let mut order: Vec<usize> = (0..t.rank()).collect();
    order.swap(a, b);
    t.transpose(&order)
}

/// Axis 0 of `t` split into `[groups, rest]` and the `groups` part merged into axis 1 as its
/// major part (JAX's `_reshape_axis_out_of(0)` then `_reshape_axis_into(0, 1)`).
fn group_into_axis_1(t: &Tensor, groups: usize) -> Result<Tensor> {
    let s = t.shape();
    let mut split = vec![groups, s[0] / groups];
    split.extend_from_slice(&s[1..]);
    let moved = swapped(&t.reshape(&split)?, 0, 1)?;
    let mut merged = vec![s[0] / groups, groups * s[1]];
    merged.extend_from_slice(&s[2..]);
    moved.reshape(&merged)
}

/// The input's gradient: `g` convolved with the kernel reversed along its spatial axes, its
/// channel axes swapped (groups moved into the channels first), with the strides as input
/// dilation and the padding that puts every tap back where it read.
fn input_gradient(d: &ConvDims, w: &Tensor, g: &Tensor) -> Result<Tensor> {
    let spatial = d.input.len();
    let (groups, grouped) = match (d.feature_groups, d.batch_groups) {
        (fg, _) if fg > 1 => (fg, group_into_axis_1(w, fg)?),
        (_, bg) if bg > 1 => (bg, group_into_axis_1(w, bg)?),
        _ => (1, w.clone()),
    };
    let axes: Vec<usize> = (2..spatial + 2).collect();
    let kernel = swapped(&grouped, 0, 1)?.reverse(&axes)?;
    let padding = (0..spatial)
        .map(|a| {
            let input = dilated(d.input[a], d.input_dilation[a]) as i64;
            let window = dilated(d.kernel[a], d.kernel_dilation[a]) as i64;
            let out = dilated(d.output[a], d.strides[a]) as i64;
            let before = window - d.padding_lo[a] - 1;
            (before, input + window - 1 - out - before)
        })
        .collect();
    let spec = ConvSpec {
        strides: d.input_dilation.clone(),
        padding,
        input_dilation: d.strides.clone(),
        kernel_dilation: d.kernel_dilation.clone(),
        feature_groups: groups,
        batch_groups: 1,
    };
    let out = g.conv_canonical(&kernel, &spec)?;
    if d.batch_groups <= 1 {
        return Ok(out);
    }
    // Batch groups: the result's channels hold each group's batch entries; move them back.
    let bg = d.batch_groups;
    let s = out.shape().to_vec();
    let mut split = vec![s[0], bg, s[1] / bg];
    split.extend_from_slice(&s[2..]);
    let moved = swapped(&out.reshape(&split)?, 0, 1)?;
    let mut merged = vec![bg * s[0], s[1] / bg];
    merged.extend_from_slice(&s[2..]);
    moved.reshape(&merged)
}

/// The kernel's gradient: the input with batch and channels swapped, convolved with `g`
/// (batch and channels swapped) as the kernel, strides and kernel dilation exchanged; feature
/// groups become batch groups and the other way round.
fn kernel_gradient(d: &ConvDims, x: &Tensor, g: &Tensor) -> Result<Tensor> {
    let spatial = d.input.len();
    let padding = (0..spatial)
        .map(|a| {
            let input = dilated(d.input[a], d.input_dilation[a]) as i64;
            let window = dilated(d.kernel[a], d.kernel_dilation[a]) as i64;
            let out = dilated(d.output[a], d.strides[a]) as i64;
            let lo = d.padding_lo[a];
            (lo, (out - input) + (window - lo - 1))
        })
        .collect();
    let spec = ConvSpec {
        strides: d.kernel_dilation.clone(),
        padding,
        input_dilation: d.input_dilation.clone(),
        kernel_dilation: d.strides.clone(),
        feature_groups: d.batch_groups,
        batch_groups: d.feature_groups,
    };
    let out = swapped(x, 0, 1)?.conv_canonical(&swapped(g, 0, 1)?, &spec)?;
    swapped(&out, 0, 1)
}
