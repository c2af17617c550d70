//! Padding: `pad` (low, high and interior widths, negative edges crop), `pad_outer` with a
//! value or one of Nx's periodic modes, and `reflect`. All composed: constant padding joins
//! broadcast blocks of the pad value and slices (the interior through a reshape), periodic
//! modes gather along each axis, so every backend, `jit` and the gradient come with the parts.

use crate::error::{Error, Result};
use crate::session::resolve_device;
use crate::shape::check_shape;
use crate::tensor::Tensor;

use super::{merge_number, Operand};

/// How [`Tensor::pad_outer_with`] fills the border from the tensor's own values (Nx's
/// `pad_outer` modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// The values again, in order (`[0, 1, 2]` by 2 on the left: `[1, 2, 0, 1, 2]`).
    Cyclic,
    /// Reversed, the edge repeated (`[2, 1, 0, 0, 1, 2]`).
    Mirror,
    /// Reversed, the edge not repeated (`[2, 1, 0, 1, 2]`).
    Reflect,
    /// The edge value (`[0, 0, 0, 1, 2]`).
    Replicate,
}

impl PadMode {
    /// The position along an axis of `n` (> 0) read for padded position `j`, counted from the
    /// first original entry (negative to its left).
    fn source(self, j: i64, n: i64) -> i64 {
        let period = |p: i64| j.rem_euclid(p);
        match self {
            PadMode::Cyclic => period(n),
            PadMode::Mirror => {
                let m = period(2 * n);
                if m < n {
                    m
                } else {
                    2 * n - 1 - m
                }
            }
            PadMode::Reflect if n == 1 => 0,
            PadMode::Reflect => {
                let m = period(2 * (n - 1));
                if m < n {
                    m
                } else {
                    2 * (n - 1) - m
                }
            }
            PadMode::Replicate => j.clamp(0, n - 1),
        }
    }

    fn name(self) -> &'static str {
        match self {
            PadMode::Cyclic => "cyclic",
            PadMode::Mirror => "mirror",
            PadMode::Reflect => "reflect",
            PadMode::Replicate => "replicate",
        }
    }
}

impl Tensor {
    /// Pads each axis `i` with `config[i] = (low, high, interior)` entries of `value`, as
    /// `Nx.pad`: `interior` entries between neighbours, then `low` before and `high` after;
    /// a negative `low` or `high` removes that many from the (interior-padded) edge. The
    /// result has the merged type of the tensor and the value.
    pub fn pad<'a>(
        &self,
        value: impl Into<Operand<'a>>,
        config: &[(i64, i64, usize)],
    ) -> Result<Tensor> {
        let value = value.into();
        self.check_padding("pad", config.len())?;
        let dtype = merge_number(self.dtype(), value)?;
        let fill = self.literal(value, dtype)?;
        if fill.rank() != 0 {
            return Err(Error::InvalidArgument {
                op: "pad",
                message: format!("padding value must be a scalar, got {}", fill.signature()),
            });
        }
        let out = padded_shape(self.shape(), config)?;
        check_shape("pad", &out, dtype)?;
        let device = resolve_device("pad", None, &[self, &fill])?;
        let fill = fill.prepared(dtype, device)?;
        let mut x = self.prepared(dtype, device)?;
        for (axis, &(low, high, interior)) in config.iter().enumerate() {
            x = pad_axis(&x, &fill, axis, low, high, interior)?;
        }
        Ok(x.named_like(self))
    }

    /// [`Tensor::pad`] without interior padding: `config[i] = (low, high)`, as `Nx.pad_outer`
    /// with a value.
    pub fn pad_outer<'a>(
        &self,
        value: impl Into<Operand<'a>>,
        config: &[(i64, i64)],
    ) -> Result<Tensor> {
        let full: Vec<(i64, i64, usize)> = config.iter().map(|&(l, h)| (l, h, 0)).collect();
        self.pad(value, &full)
    }

    /// Pads each axis `i` by `config[i] = (low, high)` entries taken from the tensor itself
    /// by `mode`, as `Nx.pad_outer` with `:cyclic`, `:mirror`, `:reflect` or `:replicate`; a
    /// negative width crops.
    pub fn pad_outer_with(&self, mode: PadMode, config: &[(i64, i64)]) -> Result<Tensor> {
        self.check_padding("pad_outer", config.len())?;
        let full: Vec<(i64, i64, usize)> = config.iter().map(|&(l, h)| (l, h, 0)).collect();
        let out = padded_shape(self.shape(), &full)?;
        check_shape("pad_outer", &out, self.dtype())?;
        let mut x = self.clone();
        for (axis, (&(low, _), &len)) in config.iter().zip(&out).enumerate() {
            let n = self.shape()[axis];
            if len == n && low == 0 {
                continue;
            }
            if n == 0 {
                return Err(Error::InvalidArgument {
                    op: "pad_outer",
                    message: format!(
                        "cannot pad the empty axis {axis} of {} by {}: it has no values to repeat",
                        self.signature(),
                        mode.name()
                    ),
                });
            }
            let (n, len) = (n as i64, len as i64);
            let positions = (0..len).map(|k| mode.source(k - low, n) as usize).collect();
            x = x.take_positions(positions, axis)?;
        }
        Ok(x)
    }

    /// A padding configuration must have one entry per axis.
    fn check_padding(&self, op: &'static str, entries: usize) -> Result<()> {
        if entries == self.rank() {
            return Ok(());
        }
        Err(Error::InvalidArgument {
            op,
            message: format!(
                "expected a padding configuration of {} entries for {}, got {entries}",
                self.rank(),
                self.signature()
            ),
        })
    }

    /// Pads by reflection without repeating the edge, as the deprecated `Nx.reflect`
    /// (`pad_outer_with(PadMode::Reflect, ..)`).
    pub fn reflect(&self, config: &[(usize, usize)]) -> Result<Tensor> {
        let signed = config
            .iter()
            .map(|&(l, h)| Ok((width(l)?, width(h)?)))
            .collect::<Result<Vec<_>>>()?;
        self.pad_outer_with(PadMode::Reflect, &signed)
    }
}

fn width(w: usize) -> Result<i64> {
    i64::try_from(w).map_err(|_| Error::InvalidArgument {
        op: "pad",
        message: format!("a padding width of {w} is larger than any tensor"),
    })
}

/// The shape after padding, or the error naming the axis that would have a negative size.
fn padded_shape(shape: &[usize], config: &[(i64, i64, usize)]) -> Result<Vec<usize>> {
    shape
        .iter()
        .zip(config)
        .enumerate()
        .map(|(axis, (&n, &(low, high, interior)))| {
            let n = n as i128;
            let size = n + low as i128 + high as i128 + interior as i128 * (n - 1).max(0);
            usize::try_from(size).map_err(|_| Error::InvalidArgument {
                op: "pad",
                message: format!(
                    "padding ({low}, {high}, {interior}) of axis {axis} (size {n}) leaves {size} entries"
                ),
            })
        })
        .collect()
}

/// One axis padded: interior first, then the positive edges joined, then the negative ones
/// cropped (so a crop wider than the data eats into the other edge's padding, as XLA's).
fn pad_axis(
    x: &Tensor,
    fill: &Tensor,
    axis: usize,
    low: i64,
    high: i64,
    interior: usize,
) -> Result<Tensor> {
    let block = |len: usize, like: &Tensor| -> Result<Tensor> {
        let mut shape = like.shape().to_vec();
        shape[axis] = len;
        fill.broadcast(&shape)
    };
    let mut x = x.clone();
    let n = x.shape()[axis];
    if interior > 0 && n > 1 {
        let a = axis as isize;
        let column = x.new_axis(a + 1)?;
        let mut gap_shape = column.shape().to_vec();
        gap_shape[axis + 1] = interior;
        let joined = Tensor::concatenate(&[column, fill.broadcast(&gap_shape)?], a + 1)?;
        let mut spread = x.shape().to_vec();
        spread[axis] = n * (1 + interior);
        x = joined
            .reshape(&spread)?
            .slice_along_axis(0, spread[axis] - interior, a)?;
    }
    let mut parts = Vec::new();
    if low > 0 {
        parts.push(block(low as usize, &x)?);
    }
    let inner = x.shape()[axis];
    parts.push(x);
    if high > 0 {
        parts.push(block(high as usize, &parts[0])?);
    }
    let joined = if parts.len() == 1 {
        parts.remove(0)
    } else {
        Tensor::concatenate(&parts, axis as isize)?
    };
    let skip = (-low).max(0) as usize;
    let total = joined.shape()[axis];
    let len = (low as i128 + high as i128 + inner as i128).max(0) as usize;
    if skip == 0 && len == total {
        return Ok(joined);
    }
    joined.slice_along_axis(skip, len, axis as isize)
}
