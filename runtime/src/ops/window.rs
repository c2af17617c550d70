//! Window reductions (Nx's `window_sum`, `window_mean`, `window_max`, `window_min`,
//! `window_product`: pooling; `window_reduce`, the reduction a closure) and the scatter of a
//! max- or min-pool's gradient (`window_scatter_max`, `window_scatter_min`). Each is composed,
//! as the gradient and every backend then come free: the tensor is padded with the reduction's
//! identity, and every tap of the window is one strided slice of it, combined elementwise
//! (fused inside `jit`).

use crate::create::on;
use crate::error::{Error, Result};
use crate::ir::BinaryOp;
use crate::tensor::Tensor;

use super::spatial::{dilated, window_count, Padding, PerAxis};
use super::Operand;

/// Nx's window options: `strides`, `padding` and `window_dilations`, from [`Window::new`]
/// (stride 1, no padding, no dilation): `t.window_max(&[1, 1, 2, 2], Window::new().strides([1,
/// 1, 2, 2]))` is a 2x2 max-pool of a `[batch, channels, h, w]` tensor.
#[derive(Clone, Debug, Default)]
pub struct Window {
    strides: Option<PerAxis>,
    padding: Padding,
    dilations: Option<PerAxis>,
}

impl Window {
    /// Stride 1, no padding, no dilation.
    pub fn new() -> Window {
        Window::default()
    }

    /// The step between windows: one for every axis or one per axis.
    pub fn strides(mut self, strides: impl Into<PerAxis>) -> Window {
        self.strides = Some(strides.into());
        self
    }

    /// [`Padding::Valid`] (the default), [`Padding::Same`] or `(lo, hi)` per axis, filled
    /// with the reduction's identity (0, 1, the lowest or the highest value).
    pub fn padding(mut self, padding: impl Into<Padding>) -> Window {
        self.padding = padding.into();
        self
    }

    /// `d - 1` entries skipped between a window's taps (Nx's `window_dilations`).
    pub fn dilations(mut self, dilations: impl Into<PerAxis>) -> Window {
        self.dilations = Some(dilations.into());
        self
    }
}

/// A window laid over a tensor: the padded tensor, the result's shape, and for each tap the
/// strided slice of the padded tensor it reads.
struct Layout {
    padding: Vec<(i64, i64)>,
    output: Vec<usize>,
    strides: Vec<usize>,
    dilations: Vec<usize>,
    window: Vec<usize>,
}

impl Layout {
    fn new(op: &'static str, t: &Tensor, window: &[usize], options: &Window) -> Result<Layout> {
        let rank = t.rank();
        if window.len() != rank {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "invalid window dimensions, rank of shape ({rank}) does not match rank of \
                     window ({})",
                    window.len()
                ),
            });
        }
        if let Some(&bad) = window.iter().find(|&&w| w == 0) {
            return Err(Error::InvalidArgument {
                op,
                message: format!("window dimensions must be positive, got {bad} in {window:?}"),
            });
        }
        let every = |o: &Option<PerAxis>, what| {
            o.clone().unwrap_or(PerAxis::All(1)).resolve(op, what, rank)
        };
        let strides = every(&options.strides, "strides")?;
        let dilations = every(&options.dilations, "window dilations")?;
        let spans: Vec<usize> = (0..rank)
            .map(|a| dilated(window[a], dilations[a]))
            .collect();
        let padding = options.padding.config(op, &spans)?;
        let output = (0..rank)
            .map(|a| window_count(op, t.shape()[a], padding[a], spans[a], strides[a]))
            .collect::<Result<Vec<_>>>()?;
        Ok(Layout {
            padding,
            output,
            strides,
            dilations,
            window: window.to_vec(),
        })
    }

    /// The padded tensor's slice that tap `k` (per axis) reads for every output position.
    fn tap(&self, padded: &Tensor, k: &[usize]) -> Result<Tensor> {
        let start: Vec<usize> = (0..k.len()).map(|a| k[a] * self.dilations[a]).collect();
        // Nx's slice lengths are spans of the source, strided after.
        let spans: Vec<usize> = (0..k.len())
            .map(|a| dilated(self.output[a], self.strides[a]))
            .collect();
        padded.slice(&start, &spans, Some(&self.strides))
    }

    /// Every tap, in row-major order of the window.
    fn taps(&self) -> Vec<Vec<usize>> {
        let count: usize = self.window.iter().product();
        (0..count)
            .map(|mut i| {
                let mut k = vec![0; self.window.len()];
                for a in (0..k.len()).rev() {
                    k[a] = i % self.window[a];
                    i /= self.window[a];
                }
                k
            })
            .collect()
    }

    fn pad_config(&self) -> Vec<(i64, i64, usize)> {
        self.padding.iter().map(|&(lo, hi)| (lo, hi, 0)).collect()
    }
}

impl Tensor {
    /// `op` folded over every tap of each window of `t` padded with `fill`.
    fn window_fold(
        &self,
        name: &'static str,
        window: &[usize],
        options: &Window,
        fill: Operand<'_>,
        op: BinaryOp,
    ) -> Result<Tensor> {
        let layout = Layout::new(name, self, window, options)?;
        let padded = self.pad(fill, &layout.pad_config())?;
        let mut acc: Option<Tensor> = None;
        for k in layout.taps() {
            let tap = layout.tap(&padded, &k)?;
            acc = Some(match acc {
                None => tap,
                Some(a) => match op {
                    BinaryOp::Add => a.add(&tap)?,
                    BinaryOp::Multiply => a.multiply(&tap)?,
                    BinaryOp::Max => a.max(&tap)?,
                    _ => a.min(&tap)?,
                },
            });
        }
        Ok(acc.unwrap_or(padded).named_like(self))
    }

    /// The sum over each window of `window` entries (one size per axis), as
    /// `Nx.window_sum(t, window, opts)`; the result keeps the type.
    pub fn window_sum(&self, window: &[usize], options: Window) -> Result<Tensor> {
        self.window_fold("window_sum", window, &options, 0.into(), BinaryOp::Add)
    }

    /// The mean over each window (the sum divided by the window's size, padding included), as
    /// `Nx.window_mean`; integers average as floats.
    pub fn window_mean(&self, window: &[usize], options: Window) -> Result<Tensor> {
        let size: usize = window.iter().product();
        self.window_sum(window, options)?.divide(size)
    }

    /// The product over each window, as `Nx.window_product` (padding is 1).
    pub fn window_product(&self, window: &[usize], options: Window) -> Result<Tensor> {
        self.window_fold(
            "window_product",
            window,
            &options,
            1.into(),
            BinaryOp::Multiply,
        )
    }

    /// The maximum over each window (max-pooling), as `Nx.window_max`; padding is the type's
    /// lowest value.
    pub fn window_max(&self, window: &[usize], options: Window) -> Result<Tensor> {
        let lowest = on(self.device()).full(f64::NEG_INFINITY, self.dtype(), &[])?;
        self.window_fold(
            "window_max",
            window,
            &options,
            (&lowest).into(),
            BinaryOp::Max,
        )
    }

    /// The minimum over each window, as `Nx.window_min`; padding is the type's highest value.
    pub fn window_min(&self, window: &[usize], options: Window) -> Result<Tensor> {
        let highest = on(self.device()).full(f64::INFINITY, self.dtype(), &[])?;
        self.window_fold(
            "window_min",
            window,
            &options,
            (&highest).into(),
            BinaryOp::Min,
        )
    }

    /// `fun` folded over each window, starting from `acc`, as `Nx.window_reduce(t, acc,
    /// window, opts, fun)`: a window's result is `fun(x_n, ... fun(x_2, fun(x_1, acc)))` over
    /// its entries in row-major order, the padding filled with `acc`, in this tensor's dtype.
    /// `fun` gets every window's k-th entry at once (a tensor of the result's shape) and the
    /// accumulator so far, and must combine them entry by entry:
    /// `t.window_reduce(i32::MIN, &[2, 2], Window::new(), |x, acc| x.max(acc))`.
    /// Composed of taps like the other window ops, so it runs on every device, inside `jit`,
    /// and is differentiable where `fun` is.
    pub fn window_reduce<'a, F>(
        &self,
        acc: impl Into<Operand<'a>>,
        window: &[usize],
        options: Window,
        mut fun: F,
    ) -> Result<Tensor>
    where
        F: FnMut(&Tensor, &Tensor) -> Result<Tensor>,
    {
        const OP: &str = "window_reduce";
        let layout = Layout::new(OP, self, window, &options)?;
        let acc = acc.into();
        let dtype = super::merge_number(self.dtype(), acc)?;
        let init = self.literal(acc, dtype)?;
        if init.rank() != 0 {
            return Err(Error::InvalidArgument {
                op: OP,
                message: format!(
                    "the initial value must be a number or a scalar tensor, got {}",
                    init.signature()
                ),
            });
        }
        let padded = self.pad(&init, &layout.pad_config())?;
        let mut folded = init.broadcast(&layout.output)?;
        for k in layout.taps() {
            let tap = layout.tap(&padded, &k)?;
            folded = fun(&tap, &folded)?;
            if folded.shape() != layout.output.as_slice() {
                return Err(Error::InvalidArgument {
                    op: OP,
                    message: format!(
                        "the reduction must combine its two arguments entry by entry: given \
                         two tensors of shape {:?} it returned {}",
                        layout.output,
                        folded.signature()
                    ),
                });
            }
        }
        folded.as_type(self.dtype()).map(|t| t.named_like(self))
    }

    /// `init` plus, at the maximum of each window of this tensor (the first, where several
    /// tie), the entry of `source` for that window, summed where windows overlap; as
    /// `Nx.window_scatter_max(t, source, init, window, opts)`, the gradient of max-pooling.
    /// `source` has the shape of [`Tensor::window_max`]'s result.
    pub fn window_scatter_max<'a>(
        &self,
        source: &Tensor,
        init: impl Into<Operand<'a>>,
        window: &[usize],
        options: Window,
    ) -> Result<Tensor> {
        self.window_scatter(
            "window_scatter_max",
            source,
            init.into(),
            window,
            &options,
            true,
        )
    }

    /// As [`Tensor::window_scatter_max`] at each window's minimum (`Nx.window_scatter_min`).
    pub fn window_scatter_min<'a>(
        &self,
        source: &Tensor,
        init: impl Into<Operand<'a>>,
        window: &[usize],
        options: Window,
    ) -> Result<Tensor> {
        self.window_scatter(
            "window_scatter_min",
            source,
            init.into(),
            window,
            &options,
            false,
        )
    }

    fn window_scatter(
        &self,
        name: &'static str,
        source: &Tensor,
        init: Operand<'_>,
        window: &[usize],
        options: &Window,
        max: bool,
    ) -> Result<Tensor> {
        let layout = Layout::new(name, self, window, options)?;
        if source.shape() != layout.output.as_slice() {
            return Err(Error::ShapeMismatch {
                op: name,
                lhs: source.shape().to_vec(),
                rhs: layout.output.clone(),
                reason: format!(
                    "source must have the shape of the windows of {}",
                    self.signature()
                ),
            });
        }
        let edge = if max {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        };
        let fill = on(self.device()).full(edge, self.dtype(), &[])?;
        let padded = self.pad(&fill, &layout.pad_config())?;
        let best = if max {
            self.window_max(window, options.clone())?
        } else {
            self.window_min(window, options.clone())?
        };
        let zero = on(self.device()).full(0.0, source.dtype(), &[])?;
        let padded_shape = padded.shape().to_vec();
        // Each window's source goes to its first tap holding the extremum: `taken` marks the
        // windows already served.
        let mut taken = best.not_equal(&best)?;
        let mut total: Option<Tensor> = None;
        for k in layout.taps() {
            let hit = layout
                .tap(&padded, &k)?
                .equal(&best)?
                .logical_and(&taken.logical_not()?)?;
            taken = taken.logical_or(&hit)?;
            let share = hit.select(source, &zero)?;
            // Back to the padded tensor's positions: the slice's step becomes interior
            // padding, its start the padding before.
            let config: Vec<(i64, i64, usize)> = (0..k.len())
                .map(|a| {
                    let start = (k[a] * layout.dilations[a]) as i64;
                    let span = dilated(layout.output[a], layout.strides[a]) as i64;
                    (
                        start,
                        padded_shape[a] as i64 - start - span,
                        layout.strides[a] - 1,
                    )
                })
                .collect();
            let placed = share.pad(0, &config)?;
            total = Some(match total {
                None => placed,
                Some(t) => t.add(&placed)?,
            });
        }
        let scattered = match total {
            Some(t) => t,
            None => on(self.device()).zeros(source.dtype(), &padded_shape)?,
        };
        // The padding's share is dropped: crop it off again.
        let crop: Vec<(i64, i64, usize)> = layout
            .padding
            .iter()
            .map(|&(lo, hi)| (-lo, -hi, 0))
            .collect();
        scattered.pad(0, &crop)?.add(init)
    }
}
