//! Reads and writes at tensors of indices: `Nx.take_along_axis`, `gather`, `indexed_add` and
//! `indexed_put`. Each computes the flat positions it touches with the op set (iotas, clamps,
//! products by strides), so one backend op of each kind, `Op::Gather` and `Op::Scatter`,
//! serves every layout of axes; indices may be traced inside `jit` (nothing is read back to
//! the host), and the gradients come from those two ops (each is the other's adjoint,
//! `jit/vjp.rs`). As in Nx (XLA's rule), a read clamps each index to its axis and an update
//! whose indices fall outside the target is skipped.

use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{Op, ScatterMode};
use crate::session::resolve_device;
use crate::shape::{check_shape, normalize_axis, numel, strides};
use crate::tensor::Tensor;

use super::axes::{IntoAxes, OneAxis};
use super::{merge_number, run, Operand};

fn integer_indices(op: &'static str, indices: &Tensor) -> Result<()> {
    if indices.dtype().is_float() {
        return Err(Error::InvalidArgument {
            op,
            message: format!("indices must be an integer tensor, got {}", indices.dtype()),
        });
    }
    Ok(())
}

fn axis_size(shape: &[usize], axis: usize) -> i64 {
    i64::try_from(shape[axis]).unwrap_or(i64::MAX)
}

/// Coordinate `0..dim` along axis `at` of a rank-`rank` result, shaped to broadcast over it.
fn coordinate(device: Device, rank: usize, at: usize, dim: usize) -> Result<Tensor> {
    let mut shape = vec![1; rank];
    shape[at] = dim;
    on(device).iota(DType::S64, &[dim], None)?.reshape(&shape)
}

/// Integer `indices` as s64, each limited to `0..size` (`clip` without its select, which only
/// matters for gradients, and indices have none).
fn clamped(indices: &Tensor, shape: &[usize], axis: usize) -> Result<Tensor> {
    let last = (axis_size(shape, axis) - 1).max(0);
    indices.as_type(DType::S64)?.max(0)?.min(last)
}

/// Coordinate `j` of each row of `indices` (`k` coordinates in its last axis): with one
/// coordinate, the indices themselves (no copy of a slice).
fn column(indices: &Tensor, j: usize, k: usize) -> Result<Tensor> {
    if k == 1 {
        Ok(indices.clone())
    } else {
        indices.slice_along_axis(j, 1, -1)
    }
}

/// One coordinate tensor per axis of `shape`, broadcasting to `out_shape` (the `lead` axes
/// of the index rows, then one per axis not indexed): for axis `d` of `axes`, column `j` of
/// the s64 `idx` (`k` columns) shaped as the lead axes, passed through `indexed(d, column)`
/// (a clamp for reads, a range mask for writes); for an axis not indexed, `0..` its size in
/// `out_shape`.
fn coordinates(
    device: Device,
    shape: &[usize],
    axes: &[usize],
    (idx, k, lead): (&Tensor, usize, &[usize]),
    out_shape: &[usize],
    mut indexed: impl FnMut(usize, Tensor) -> Result<Tensor>,
) -> Result<Vec<Tensor>> {
    let rank = out_shape.len();
    let mut column_shape = lead.to_vec();
    column_shape.resize(rank, 1);
    let mut kept = 0;
    (0..shape.len())
        .map(|d| match axes.iter().position(|&a| a == d) {
            Some(j) => indexed(d, column(idx, j, k)?.reshape(&column_shape)?),
            None => {
                let at = lead.len() + kept;
                kept += 1;
                coordinate(device, rank, at, out_shape[at])
            }
        })
        .collect()
}

/// The flat (row-major) positions in a tensor of `shape` of the entries whose coordinates
/// along each axis are `coords` (s64, broadcasting together to `out_shape`).
fn flat_positions(shape: &[usize], coords: &[Tensor], out_shape: &[usize]) -> Result<Tensor> {
    let mut total: Option<Tensor> = None;
    for (c, &stride) in coords.iter().zip(&strides(shape)) {
        let term = if stride == 1 {
            c.clone()
        } else {
            c.multiply(i64::try_from(stride).unwrap_or(i64::MAX))?
        };
        total = Some(match total {
            Some(t) => t.add(&term)?,
            None => term,
        });
    }
    match total {
        Some(t) if t.shape() == out_shape => Ok(t),
        Some(t) => t.broadcast(out_shape),
        None => Err(Error::InvalidArgument {
            op: "gather",
            message: "internal: no coordinates".into(),
        }),
    }
}

impl Tensor {
    /// The entries of this tensor (read flat) at the s64 `positions`, in their shape.
    pub(crate) fn gather_flat(&self, positions: &Tensor) -> Result<Tensor> {
        let device = resolve_device("gather", None, &[self, positions])?;
        let positions = positions.prepared(DType::S64, device)?;
        let shape = positions.shape().to_vec();
        check_shape("gather", &shape, self.dtype())?;
        let kernel = Op::Gather {
            count: numel(&shape),
        };
        run(
            device,
            kernel,
            &[&self.to_device(device)?, &positions],
            shape,
        )
    }

    /// A copy of this tensor with `updates` (one per position, this dtype) combined in at the
    /// flat s64 `positions`; positions outside are skipped.
    pub(crate) fn scatter_flat(
        &self,
        mode: ScatterMode,
        positions: &Tensor,
        updates: &Tensor,
    ) -> Result<Tensor> {
        let op = Op::Scatter(mode).name();
        let device = resolve_device(op, None, &[self, positions, updates])?;
        if positions.size() != updates.size() {
            return Err(Error::ShapeMismatch {
                op,
                lhs: positions.shape().to_vec(),
                rhs: updates.shape().to_vec(),
                reason: "one update per position".into(),
            });
        }
        let positions = positions.prepared(DType::S64, device)?;
        let updates = updates.prepared(self.dtype(), device)?;
        let target = self.to_device(device)?;
        let shape = self.shape().to_vec();
        run(
            device,
            Op::Scatter(mode),
            &[&target, &positions, &updates],
            shape,
        )
    }

    /// The flat positions of `indices` (integers, this tensor's rank) along `axis`, with every
    /// other coordinate its own: what `take_along_axis` reads and its adjoint writes.
    /// Indices are clamped to the axis.
    pub(crate) fn along_axis_positions(&self, indices: &Tensor, axis: usize) -> Result<Tensor> {
        let op = "take_along_axis";
        integer_indices(op, indices)?;
        if indices.rank() != self.rank()
            || indices
                .shape()
                .iter()
                .zip(self.shape())
                .enumerate()
                .any(|(d, (&i, &s))| d != axis && i > s)
        {
            return Err(Error::ShapeMismatch {
                op,
                lhs: self.shape().to_vec(),
                rhs: indices.shape().to_vec(),
                reason: format!(
                    "indices must have the tensor's rank and, but for axis {axis}, no axis \
                     longer than the tensor's"
                ),
            });
        }
        if self.shape()[axis] == 0 && indices.size() > 0 {
            return Err(Error::InvalidArgument {
                op,
                message: format!("axis {axis} of {} is empty", self.signature()),
            });
        }
        let device = resolve_device(op, None, &[self, indices])?;
        let out_shape = indices.shape().to_vec();
        let rank = out_shape.len();
        let coords = (0..rank)
            .map(|d| {
                if d == axis {
                    clamped(&indices.to_device(device)?, self.shape(), axis)
                } else {
                    coordinate(device, rank, d, out_shape[d])
                }
            })
            .collect::<Result<Vec<_>>>()?;
        flat_positions(self.shape(), &coords, &out_shape)
    }

    /// The entries at `indices` along `axis`, every other coordinate its own, as
    /// `Nx.take_along_axis(t, indices, axis: axis)`: `indices` (integers) has this tensor's
    /// rank and gives the result's shape; the positions `argsort` returns put a tensor in
    /// order. Indices outside the axis are clamped to it, as in Nx.
    pub fn take_along_axis(&self, indices: &Tensor, axis: impl OneAxis) -> Result<Tensor> {
        let axis = self.axis_position("take_along_axis", axis)?;
        let axis = normalize_axis("take_along_axis", axis, self.shape())?;
        let positions = self.along_axis_positions(indices, axis)?;
        Ok(self.gather_flat(&positions)?.named_like(self))
    }

    /// The entries (or slices) at `indices`, as `Nx.gather(t, indices, axes: axes)`: the last
    /// axis of `indices` holds one coordinate per axis of `axes` (sorted; the leading axes of
    /// this tensor for `..`, Nx's default); the result's shape is the indices' without their last axis,
    /// followed by the axes of this tensor that `axes` leaves out. Indices are clamped to
    /// their axes.
    pub fn gather(&self, indices: &Tensor, axes: impl IntoAxes) -> Result<Tensor> {
        let op = "gather";
        let axes = self.axis_positions(op, axes)?;
        integer_indices(op, indices)?;
        if indices.rank() == 0 {
            return Err(Error::InvalidArgument {
                op,
                message: "expected indices rank to be at least 1, got: 0".into(),
            });
        }
        let k = indices.shape()[indices.rank() - 1];
        let axes = indexed_axes(op, self.shape(), k, axes.as_deref())?;
        let device = resolve_device(op, None, &[self, indices])?;
        let batch = &indices.shape()[..indices.rank() - 1];
        let kept: Vec<usize> = (0..self.rank()).filter(|d| !axes.contains(d)).collect();
        let mut out_shape = batch.to_vec();
        out_shape.extend(kept.iter().map(|&d| self.shape()[d]));
        check_shape(op, &out_shape, self.dtype())?;
        if numel(&out_shape) > 0 && axes.iter().any(|&a| self.shape()[a] == 0) {
            return Err(Error::InvalidArgument {
                op,
                message: format!("{} has an empty indexed axis", self.signature()),
            });
        }
        let idx = indices.to_device(device)?.as_type(DType::S64)?;
        let coords = coordinates(
            device,
            self.shape(),
            &axes,
            (&idx, k, batch),
            &out_shape,
            |d, c| clamped(&c, self.shape(), d),
        )?;
        let positions = flat_positions(self.shape(), &coords, &out_shape)?;
        self.gather_flat(&positions)
    }

    /// This tensor with `updates` added at `indices`, as `Nx.indexed_add(t, indices,
    /// updates, axes: axes)`: `indices` is `[n, k]` (one row of coordinates per update, for
    /// the `k` axes of `axes`, the leading ones for `..`) or `[k]` for one scalar update;
    /// `updates` is `[n, ...]`, each a slice over the remaining axes starting at 0 (no longer
    /// than them). Repeated indices add up; an update whose indices fall outside is skipped.
    /// The result has the merged type of the two.
    pub fn indexed_add<'a>(
        &self,
        indices: &Tensor,
        updates: impl Into<Operand<'a>>,
        axes: impl IntoAxes,
    ) -> Result<Tensor> {
        Ok(self
            .indexed(ScatterMode::Add, indices, updates.into(), axes)?
            .named_like(self))
    }

    /// This tensor with `updates` put at `indices`, as `Nx.indexed_put` (the arguments as in
    /// [`Tensor::indexed_add`]). Of repeated indices one update wins; which one is not
    /// defined, as in Nx.
    pub fn indexed_put<'a>(
        &self,
        indices: &Tensor,
        updates: impl Into<Operand<'a>>,
        axes: impl IntoAxes,
    ) -> Result<Tensor> {
        Ok(self
            .indexed(ScatterMode::Put, indices, updates.into(), axes)?
            .named_like(self))
    }

    fn indexed(
        &self,
        mode: ScatterMode,
        indices: &Tensor,
        updates: Operand<'_>,
        axes: impl IntoAxes,
    ) -> Result<Tensor> {
        let op = Op::Scatter(mode).name();
        let axes = self.axis_positions(op, axes)?;
        integer_indices(op, indices)?;
        let dtype = merge_number(self.dtype(), updates)?;
        let updates = self.literal(updates, dtype)?;
        let (indices, updates) = match indices.rank() {
            1 => {
                if updates.rank() != 0 {
                    return Err(Error::InvalidArgument {
                        op,
                        message: format!(
                            "rank-1 indices {} update one entry: the update must be a scalar, \
                             got {}",
                            indices.signature(),
                            updates.signature()
                        ),
                    });
                }
                (indices.new_axis(0)?, updates.new_axis(0)?)
            }
            2 => (indices.clone(), updates),
            r => {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!("indices must be a rank 1 or 2 tensor, got: {r}"),
                })
            }
        };
        let (n, k) = (indices.shape()[0], indices.shape()[1]);
        let axes = indexed_axes(op, self.shape(), k, axes.as_deref())?;
        let kept: Vec<usize> = (0..self.rank()).filter(|d| !axes.contains(d)).collect();
        // A number (or scalar) updates every entry of every indexed slice.
        let updates = if updates.rank() == 0 {
            let mut shape = vec![n];
            shape.extend(kept.iter().map(|&d| self.shape()[d]));
            updates.broadcast(&shape)?
        } else {
            updates
        };
        if updates.shape()[0] != n {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "expected the leading axis of indices ({}) and leading axis of updates ({}) \
                     to match",
                    crate::shape::fmt_shape(indices.shape()),
                    crate::shape::fmt_shape(updates.shape())
                ),
            });
        }
        let window = &updates.shape()[1..];
        if window.len() != kept.len() {
            return Err(Error::ShapeMismatch {
                op,
                lhs: self.shape().to_vec(),
                rhs: updates.shape().to_vec(),
                reason: format!(
                    "updates must be [n] followed by one axis per axis not indexed ({} of them)",
                    kept.len()
                ),
            });
        }
        for (j, (&w, &d)) in window.iter().zip(&kept).enumerate() {
            if w > self.shape()[d] {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!(
                        "axis ({}) of updates ({}) must be less than or equal to the axis ({d}) \
                         of {})",
                        j + 1,
                        crate::shape::fmt_shape(updates.shape()),
                        crate::shape::fmt_shape(self.shape())
                    ),
                });
            }
        }
        let device = resolve_device(op, None, &[self, &indices, &updates])?;
        let target = self.prepared(dtype, device)?;
        let idx = indices.to_device(device)?.as_type(DType::S64)?;
        let out_shape = updates.shape().to_vec();
        let mut inside: Option<Tensor> = None;
        let coords = coordinates(
            device,
            self.shape(),
            &axes,
            (&idx, k, &[n]),
            &out_shape,
            |d, c| {
                // A coordinate outside its axis could name another entry's flat position;
                // one along axis 0 of stride 1 cannot (no product to wrap, nothing after it
                // to alias), and the backend skips its positions outside by itself.
                if d > 0 || numel(&self.shape()[1..]) != 1 {
                    let ok = c
                        .greater_equal(0)?
                        .logical_and(&c.less(axis_size(self.shape(), d))?)?;
                    inside = Some(match inside.take() {
                        Some(all) => all.logical_and(&ok)?,
                        None => ok,
                    });
                }
                Ok(c)
            },
        )?;
        let positions = flat_positions(self.shape(), &coords, &out_shape)?;
        let positions = match inside {
            Some(ok) => ok.select(&positions, -1i64)?,
            None => positions,
        };
        // scatter_flat converts the updates to the target's (merged) dtype.
        target.scatter_flat(mode, &positions, &updates)
    }
}

/// The axes `k` index coordinates point to: `axes` normalised (sorted and distinct, as Nx
/// requires), or the leading `k` axes.
fn indexed_axes(
    op: &'static str,
    shape: &[usize],
    k: usize,
    axes: Option<&[isize]>,
) -> Result<Vec<usize>> {
    let axes = match axes {
        Some(a) => a
            .iter()
            .map(|&x| normalize_axis(op, x, shape))
            .collect::<Result<Vec<_>>>()?,
        None => (0..k.min(shape.len())).collect(),
    };
    if axes.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::InvalidArgument {
            op,
            message: ":axes must be an ordered list".into(),
        });
    }
    if axes.len() != k {
        return Err(Error::InvalidArgument {
            op,
            message: format!(
                "the last axis of indices holds {k} coordinates but {} axes are indexed ({axes:?} \
                 of shape {})",
                axes.len(),
                crate::shape::fmt_shape(shape)
            ),
        });
    }
    Ok(axes)
}
