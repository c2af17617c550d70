//! Convolution, Nx's `conv`: 1-, 2-, 3-D (and more) spatial axes, strides, padding, input and
//! kernel dilations, feature and batch groups, and the input/kernel/output permutations. The
//! frontend puts both operands in the one layout `Op::Conv` computes (`ir/conv.rs`) and the
//! result back in the asked-for one; the gradient rules (`jit/vjp/conv.rs`) call
//! [`Tensor::conv_canonical`] again, as XLA's transposed convolutions.

use crate::error::{Error, Result};
use crate::ir::conv::MAX_SPATIAL;
use crate::ir::{ConvDims, Op};
use crate::session::resolve_device;
use crate::shape::{check_shape, fmt_shape};
use crate::tensor::Tensor;

use super::axes::{Axes, IntoAxes};
use super::run;
use super::spatial::{dilated, window_count, Padding, PerAxis};

/// Nx's `conv` options, built up from [`Conv::new`] (every option at Nx's default):
/// `x.conv(&k, Conv::new().strides(2).padding(Padding::Same))`.
#[derive(Clone, Debug, Default)]
pub struct Conv {
    strides: Option<PerAxis>,
    padding: Padding,
    input_dilation: Option<PerAxis>,
    kernel_dilation: Option<PerAxis>,
    feature_group_size: Option<usize>,
    batch_group_size: Option<usize>,
    input_permutation: Option<Axes>,
    kernel_permutation: Option<Axes>,
    output_permutation: Option<Axes>,
}

impl Conv {
    /// Nx's defaults: stride 1, no padding, no dilation, one group, channels first.
    pub fn new() -> Conv {
        Conv::default()
    }

    /// The window's step: one for every spatial axis (`2`) or one per axis (`[2, 1]`).
    pub fn strides(mut self, strides: impl Into<PerAxis>) -> Conv {
        self.strides = Some(strides.into());
        self
    }

    /// [`Padding::Valid`] (the default), [`Padding::Same`], or `(lo, hi)` per spatial axis
    /// (`[(1, 1), (0, 2)]`, negative crops).
    pub fn padding(mut self, padding: impl Into<Padding>) -> Conv {
        self.padding = padding.into();
        self
    }

    /// `d - 1` zeros between input entries (a transposed convolution), per axis or for all.
    pub fn input_dilation(mut self, dilation: impl Into<PerAxis>) -> Conv {
        self.input_dilation = Some(dilation.into());
        self
    }

    /// `d - 1` zeros between kernel taps (an atrous convolution), per axis or for all.
    pub fn kernel_dilation(mut self, dilation: impl Into<PerAxis>) -> Conv {
        self.kernel_dilation = Some(dilation.into());
        self
    }

    /// Channel groups (Nx's `feature_group_size`): the input's channels and the kernel's
    /// output channels split into this many groups, each convolved alone; as many groups as
    /// channels is a depthwise convolution.
    pub fn feature_group_size(mut self, groups: usize) -> Conv {
        self.feature_group_size = Some(groups);
        self
    }

    /// Batch groups (Nx's `batch_group_size`): the input's batch and the kernel's output
    /// channels split into groups.
    pub fn batch_group_size(mut self, groups: usize) -> Conv {
        self.batch_group_size = Some(groups);
        self
    }

    /// Where the input's batch, channel and spatial axes are (`[0, 3, 1, 2]` for channels
    /// last), by position or name.
    pub fn input_permutation(mut self, axes: impl IntoAxes) -> Conv {
        self.input_permutation = Some(axes.into_axes());
        self
    }

    /// Where the kernel's output channel, input channel and spatial axes are.
    pub fn kernel_permutation(mut self, axes: impl IntoAxes) -> Conv {
        self.kernel_permutation = Some(axes.into_axes());
        self
    }

    /// Where the result's batch, channel and spatial axes go (names are the input's).
    pub fn output_permutation(mut self, axes: impl IntoAxes) -> Conv {
        self.output_permutation = Some(axes.into_axes());
        self
    }
}

/// A convolution in the canonical layout: what `Op::Conv` needs beyond its operands' shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConvSpec {
    pub strides: Vec<usize>,
    pub padding: Vec<(i64, i64)>,
    pub input_dilation: Vec<usize>,
    pub kernel_dilation: Vec<usize>,
    pub feature_groups: usize,
    pub batch_groups: usize,
}

impl Tensor {
    /// The convolution of this tensor by `kernel`, as `Nx.conv(t, kernel, opts)`: by default
    /// this tensor is `[batch, channels, spatial...]` and the kernel `[out_channels,
    /// channels, spatial...]`, the result `[batch, out_channels, spatial...]`, in the floating
    /// type of the two. The kernel is not reversed (a cross-correlation, as in Nx and every
    /// deep-learning library). Differentiable in both operands.
    pub fn conv(&self, kernel: &Tensor, options: Conv) -> Result<Tensor> {
        let op = "conv";
        for (what, t) in [("input", self), ("kernel", kernel)] {
            if t.rank() < 3 {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!(
                        "{what} shape in conv requires at least rank 3, shape {} has rank {}",
                        fmt_shape(t.shape()),
                        t.rank()
                    ),
                });
            }
        }
        if self.rank() != kernel.rank() {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "the input {} and the kernel {} must have the same rank",
                    self.signature(),
                    kernel.signature()
                ),
            });
        }
        let rank = self.rank();
        let spatial = rank - 2;
        if spatial > MAX_SPATIAL {
            return Err(Error::InvalidArgument {
                op,
                message: format!("{spatial} spatial axes; convolutions take at most {MAX_SPATIAL}"),
            });
        }
        let dtype = self.dtype().promote(kernel.dtype()).to_float();
        let device = resolve_device(op, None, &[self, kernel])?;
        if dtype.is_complex() {
            return complex_conv(
                &self.prepared(dtype, device)?,
                &kernel.prepared(dtype, device)?,
                options,
            );
        }
        let input_order = permutation(self, "input_permutation", &options.input_permutation)?;
        let kernel_order = permutation(kernel, "kernel_permutation", &options.kernel_permutation)?;
        // As Nx: the output permutation is written against the input's names.
        let output_order = permutation(self, "output_permutation", &options.output_permutation)?;
        let x = reordered(&self.prepared(dtype, device)?, &input_order)?;
        let w = reordered(&kernel.prepared(dtype, device)?, &kernel_order)?;
        let every = |o: &Option<PerAxis>, what| {
            o.clone()
                .unwrap_or(PerAxis::All(1))
                .resolve(op, what, spatial)
        };
        let strides = every(&options.strides, "strides")?;
        let input_dilation = every(&options.input_dilation, "input dilation")?;
        let kernel_dilation = every(&options.kernel_dilation, "kernel dilation")?;
        let window: Vec<usize> = (0..spatial)
            .map(|a| dilated(w.shape()[a + 2], kernel_dilation[a]))
            .collect();
        let spec = ConvSpec {
            padding: options.padding.config(op, &window)?,
            strides,
            input_dilation,
            kernel_dilation,
            feature_groups: options.feature_group_size.unwrap_or(1),
            batch_groups: options.batch_group_size.unwrap_or(1),
        };
        let canonical = x.conv_canonical(&w, &spec)?;
        let mut inverse = vec![0; rank];
        for (i, &o) in output_order.iter().enumerate() {
            inverse[o] = i;
        }
        reordered(&canonical, &inverse)
    }

    /// The convolution of a `[batch, channels, spatial...]` tensor by an `[out_channels,
    /// channels / groups, spatial...]` kernel of the same float type, as [`ConvSpec`] says,
    /// checked as Nx checks it; the result is `[batch / batch_groups, out_channels,
    /// spatial...]`, named as this tensor.
    pub(crate) fn conv_canonical(&self, w: &Tensor, spec: &ConvSpec) -> Result<Tensor> {
        let op = "conv";
        let (x_shape, w_shape) = (self.shape(), w.shape());
        let spatial = x_shape.len() - 2;
        let (batch, channels) = (x_shape[0], x_shape[1]);
        let (out_channels, group_channels) = (w_shape[0], w_shape[1]);
        let (fg, bg) = (spec.feature_groups, spec.batch_groups);
        let shapes = format!("{} and {}", fmt_shape(x_shape), fmt_shape(w_shape));
        let refuse = |message: String| Err(Error::InvalidArgument { op, message });
        if fg == 0 || bg == 0 {
            return refuse(format!(
                "group sizes must be positive, got feature groups {fg} and batch groups {bg}"
            ));
        }
        if fg != 1 && bg != 1 {
            return refuse(format!(
                "either batch groups or feature groups must be 1, got batch_groups = {bg} and \
                 feature_groups = {fg}"
            ));
        }
        if batch % bg != 0 {
            return refuse(format!(
                "batch groups must evenly divide input batch size got rem({bg}, {batch}) != 0"
            ));
        }
        if out_channels % fg != 0 || out_channels % bg != 0 {
            let groups = fg.max(bg);
            return refuse(format!(
                "size of kernel output channels must be evenly divisible by {} groups got \
                 rem({out_channels}, {groups}) != 0 for kernel with shape {}",
                if fg > 1 { "feature" } else { "batch" },
                fmt_shape(w_shape)
            ));
        }
        if group_channels.checked_mul(fg) != Some(channels) {
            return refuse(format!(
                "size of input channels divided by feature groups must match size of kernel \
                 channels, got {channels} / {fg} != {group_channels} for shapes {shapes}"
            ));
        }
        let mut output = Vec::with_capacity(spatial);
        for a in 0..spatial {
            let size = dilated(x_shape[a + 2], spec.input_dilation[a]);
            let window = dilated(w_shape[a + 2], spec.kernel_dilation[a]);
            output.push(window_count(
                op,
                size,
                spec.padding[a],
                window,
                spec.strides[a],
            )?);
        }
        let dims = ConvDims {
            batch,
            channels,
            out_channels,
            input: x_shape[2..].to_vec(),
            kernel: w_shape[2..].to_vec(),
            output,
            strides: spec.strides.clone(),
            padding_lo: spec.padding.iter().map(|p| p.0).collect(),
            input_dilation: spec.input_dilation.clone(),
            kernel_dilation: spec.kernel_dilation.clone(),
            feature_groups: fg,
            batch_groups: bg,
        };
        let shape = dims.out_shape();
        check_shape(op, &shape, self.dtype())?;
        let device = resolve_device(op, None, &[self, w])?;
        let names = self.names();
        Ok(run(device, Op::Conv(Box::new(dims)), &[self, w], shape)?.named(names))
    }
}

/// The convolution of complex tensors, as Nx convolves them (the kernel not conjugated): four
/// real convolutions of the parts, `re = xr∗wr - xi∗wi`, `im = xr∗wi + xi∗wr`, composed so
/// that every backend and the gradient take it.
fn complex_conv(x: &Tensor, w: &Tensor, options: Conv) -> Result<Tensor> {
    let (xr, xi, wr, wi) = (x.real()?, x.imag()?, w.real()?, w.imag()?);
    let re = xr
        .conv(&wr, options.clone())?
        .subtract(&xi.conv(&wi, options.clone())?)?;
    let im = xr
        .conv(&wi, options.clone())?
        .add(&xi.conv(&wr, options)?)?;
    re.complex(&im)
}

/// The permutation an option names (positions or names of `t`), or the identity.
fn permutation(t: &Tensor, what: &'static str, axes: &Option<Axes>) -> Result<Vec<usize>> {
    let rank = t.rank();
    let Some(axes) = axes else {
        return Ok((0..rank).collect());
    };
    let order: Vec<usize> = match t.axis_positions("conv", axes.clone())? {
        None => (0..rank).collect(),
        Some(list) => list
            .iter()
            .map(|&a| crate::shape::normalize_axis("conv", a, t.shape()))
            .collect::<Result<_>>()?,
    };
    let mut seen = order.clone();
    seen.sort_unstable();
    if seen != (0..rank).collect::<Vec<_>>() {
        return Err(Error::InvalidArgument {
            op: "conv",
            message: format!(
                "{what} {order:?} is not a permutation of the axes of {}",
                t.signature()
            ),
        });
    }
    Ok(order)
}

/// `t` transposed by `order`, or `t` itself for the identity.
fn reordered(t: &Tensor, order: &[usize]) -> Result<Tensor> {
    if order.iter().enumerate().all(|(i, &o)| i == o) {
        return Ok(t.clone());
    }
    t.transpose(order)
}
