//! Layout: reshape, flatten, transpose, squeeze, new axes, broadcast, tile, reverse, slices,
//! splits, joins, gathers and batches. Views are materialised by one strided copy; nothing here
//! loops over elements.

use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{Op, Strided};
use crate::session::resolve_device;
use crate::shape::{
    broadcast_shapes, broadcast_strides, check_shape, names, normalize_axes, normalize_axis, numel,
    strides, MAX_RANK,
};
use crate::tensor::Tensor;

use super::axes::{IntoAxes, OneAxis};
use super::reduce::reduced_shape;
use super::{run, Leftover};

impl Tensor {
    /// The same elements with another shape of the same size (shares the buffer).
    pub fn reshape(&self, shape: &[usize]) -> Result<Tensor> {
        self.value()?;
        check_shape("reshape", shape, self.dtype())?;
        if numel(shape) != self.size() {
            return Err(Error::ShapeMismatch {
                op: "reshape",
                lhs: self.shape().to_vec(),
                rhs: shape.to_vec(),
                reason: format!(
                    "{} elements cannot be viewed as {}",
                    self.size(),
                    numel(shape)
                ),
            });
        }
        Ok(self.with_shape(shape.to_vec()))
    }

    /// Reorders the axes, as `Nx.transpose(t, axes: axes)`: `axes[i]` (a position, negative
    /// from the end, or a name) is the input axis that becomes axis `i`; `..` reverses them
    /// (`m.transpose(..)` is the matrix transpose).
    pub fn transpose(&self, axes: impl IntoAxes) -> Result<Tensor> {
        let perm: Vec<usize> = match self.axis_positions("transpose", axes)? {
            Some(a) => a
                .iter()
                .map(|&x| normalize_axis("transpose", x, self.shape()))
                .collect::<Result<_>>()?,
            None => (0..self.rank()).rev().collect(),
        };
        if perm.len() != self.rank() {
            return Err(Error::InvalidArgument {
                op: "transpose",
                message: format!(
                    "expected length of permutation ({}) to match rank of shape ({}) of {}",
                    perm.len(),
                    self.rank(),
                    self.signature()
                ),
            });
        }
        let mut seen = perm.clone();
        seen.sort_unstable();
        if seen != (0..self.rank()).collect::<Vec<_>>() {
            return Err(Error::InvalidArgument {
                op: "transpose",
                message: format!(
                    "{perm:?} is not a permutation of the axes of {}",
                    self.signature()
                ),
            });
        }
        let s = strides(self.shape());
        let view = Strided {
            offset: 0,
            strides: perm.iter().map(|&p| s[p]).collect(),
        };
        let names = names::permute(&self.names(), &perm);
        Ok(self
            .view(
                "transpose",
                view,
                perm.iter().map(|&p| self.shape()[p]).collect(),
            )?
            .named(names))
    }

    /// Removes the given axes of size 1 (every size-1 axis for `..`), as `Nx.squeeze`.
    pub fn squeeze(&self, axes: impl IntoAxes) -> Result<Tensor> {
        let axes = match self.axis_positions("squeeze", axes)? {
            Some(a) => normalize_axes("squeeze", &a, self.shape())?,
            None => (0..self.rank()).filter(|&i| self.shape()[i] == 1).collect(),
        };
        if let Some(&bad) = axes.iter().find(|&&a| self.shape()[a] != 1) {
            return Err(Error::InvalidArgument {
                op: "squeeze",
                message: format!(
                    "axis {bad} of {} has size {}, not 1",
                    self.signature(),
                    self.shape()[bad]
                ),
            });
        }
        let names = names::reduce(&self.names(), &axes, false);
        Ok(self
            .reshape(&reduced_shape(self.shape(), &axes, false))?
            .named(names))
    }

    /// Inserts an axis of size 1 before `axis` (`-1` appends).
    pub fn new_axis(&self, axis: isize) -> Result<Tensor> {
        if self.rank() >= MAX_RANK {
            return Err(Error::InvalidArgument {
                op: "new_axis",
                message: format!(
                    "{} already has the highest rank a tensor may have ({MAX_RANK})",
                    self.signature()
                ),
            });
        }
        let mut extended = self.shape().to_vec();
        extended.push(1);
        let at = normalize_axis("new_axis", axis, &extended)?;
        let mut shape = self.shape().to_vec();
        shape.insert(at, 1);
        let mut names = self.names();
        names.insert(at, None);
        Ok(self.reshape(&shape)?.named(names))
    }

    /// Broadcasts to `shape` by NumPy/Nx rules.
    pub fn broadcast(&self, shape: &[usize]) -> Result<Tensor> {
        check_shape("broadcast", shape, self.dtype())?;
        let out = broadcast_shapes("broadcast", self.shape(), shape)?;
        if out != shape {
            return Err(Error::ShapeMismatch {
                op: "broadcast",
                lhs: self.shape().to_vec(),
                rhs: shape.to_vec(),
                reason: "the target has fewer or smaller dimensions".into(),
            });
        }
        let view = Strided {
            offset: 0,
            strides: broadcast_strides(self.shape(), shape),
        };
        self.view("broadcast", view, shape.to_vec())
    }

    /// The block starting at `start` spanning `lengths` elements per axis, taking every
    /// `steps[i]`-th of them (1 when `None`), as `Nx.slice`: axis `i` of the result has
    /// `ceil(lengths[i] / steps[i])` elements, and a start that would run past the end is
    /// moved back so that the block fits (`slice(&[5], &[2], None)` of 6 elements is
    /// elements 4 and 5). A length above the axis or a step of 0 is an error. Unlike Nx, a
    /// length of 0 is allowed and gives an empty axis.
    pub fn slice(
        &self,
        start: &[usize],
        lengths: &[usize],
        steps: Option<&[usize]>,
    ) -> Result<Tensor> {
        let rank = self.rank();
        let ones = vec![1; rank];
        let steps = steps.unwrap_or(&ones);
        if start.len() != rank || lengths.len() != rank || steps.len() != rank {
            return Err(Error::InvalidArgument {
                op: "slice",
                message: format!(
                    "{} needs {rank} start indices, lengths and steps; got {}, {} and {}",
                    self.signature(),
                    start.len(),
                    lengths.len(),
                    steps.len()
                ),
            });
        }
        let s = strides(self.shape());
        let mut offset = 0usize;
        let mut view_strides = Vec::with_capacity(rank);
        let mut shape = Vec::with_capacity(rank);
        for i in 0..rank {
            let (dim, len, step) = (self.shape()[i], lengths[i], steps[i]);
            if step == 0 || len > dim {
                return Err(Error::InvalidArgument {
                    op: "slice",
                    message: format!(
                        "axis {i}: length {len} and step {step} do not fit size {dim} of {} \
                         (the length must be at most the size, the step at least 1)",
                        self.signature()
                    ),
                });
            }
            let first = start[i].min(dim - len);
            let count = len.div_ceil(step);
            // In range for a valid shape: first < dim, and step < len <= dim when count > 1.
            offset = offset.saturating_add(first.saturating_mul(s[i]));
            view_strides.push(if count > 1 {
                s[i].saturating_mul(step)
            } else {
                0
            });
            shape.push(count);
        }
        let view = Strided {
            offset,
            strides: view_strides,
        };
        Ok(self.view("slice", view, shape)?.named_like(self))
    }

    /// A copy with the block at `start` replaced by `update`, in the type both merge to (as
    /// `Nx.put_slice`: an f32 update into an s32 tensor gives f32). As in Nx the start is moved
    /// back so that the update fits.
    pub fn put_slice(&self, start: &[usize], update: &Tensor) -> Result<Tensor> {
        if update.rank() != self.rank() || start.len() != self.rank() {
            return Err(Error::ShapeMismatch {
                op: "put_slice",
                lhs: self.shape().to_vec(),
                rhs: update.shape().to_vec(),
                reason: format!(
                    "the update and the {} start indices must have rank {}",
                    start.len(),
                    self.rank()
                ),
            });
        }
        if update.shape().iter().zip(self.shape()).any(|(u, d)| u > d) {
            return Err(Error::ShapeMismatch {
                op: "put_slice",
                lhs: self.shape().to_vec(),
                rhs: update.shape().to_vec(),
                reason: "the update is larger than the tensor".into(),
            });
        }
        let names = names::broadcast("put_slice", &[&self.names(), &update.names()], self.rank())?;
        let device = resolve_device("put_slice", None, &[self, update])?;
        let dtype = self.dtype().promote(update.dtype());
        let (x, update) = (
            self.prepared(dtype, device)?,
            update.prepared(dtype, device)?,
        );
        let start: Vec<usize> = (0..self.rank())
            .map(|i| start[i].min(self.shape()[i] - update.shape()[i]))
            .collect();
        let kernel = Op::PutSlice {
            shape: self.shape().to_vec(),
            update_shape: update.shape().to_vec(),
            start,
        };
        Ok(run(device, kernel, &[&x, &update], self.shape().to_vec())?.named(names))
    }

    /// Joins tensors along `axis`; every other axis must agree. Dtypes promote.
    pub fn concatenate(tensors: &[Tensor], axis: impl OneAxis) -> Result<Tensor> {
        let first = tensors.first().ok_or_else(|| Error::InvalidArgument {
            op: "concatenate",
            message: "needs at least one tensor".into(),
        })?;
        let axis = first.axis_position("concatenate", axis)?;
        let axis = normalize_axis("concatenate", axis, first.shape())?;
        let mut joined = 0usize;
        for t in tensors {
            let fits = t.rank() == first.rank()
                && (0..first.rank()).all(|i| i == axis || t.shape()[i] == first.shape()[i]);
            if !fits {
                return Err(Error::ShapeMismatch {
                    op: "concatenate",
                    lhs: first.shape().to_vec(),
                    rhs: t.shape().to_vec(),
                    reason: format!("every axis but {axis} must agree"),
                });
            }
            joined = joined.saturating_add(t.shape()[axis]);
        }
        let all_names: Vec<_> = tensors.iter().map(Tensor::names).collect();
        let name_refs: Vec<&[_]> = all_names.iter().map(Vec::as_slice).collect();
        let names = names::broadcast("concatenate", &name_refs, first.rank())?;
        let refs: Vec<&Tensor> = tensors.iter().collect();
        let device = resolve_device("concatenate", None, &refs)?;
        let dtype = tensors
            .iter()
            .fold(first.dtype(), |d, t| d.promote(t.dtype()));
        let mut shape = first.shape().to_vec();
        shape[axis] = joined;
        check_shape("concatenate", &shape, dtype)?;
        let converted = tensors
            .iter()
            .map(|t| t.prepared(dtype, device))
            .collect::<Result<Vec<_>>>()?;
        let kernel = Op::Concatenate {
            shapes: converted.iter().map(|t| t.shape().to_vec()).collect(),
            axis,
        };
        Ok(run(device, kernel, &converted.iter().collect::<Vec<_>>(), shape)?.named(names))
    }

    /// Stacks tensors of one shape along a new axis.
    pub fn stack(tensors: &[Tensor], axis: isize) -> Result<Tensor> {
        if let Some(t) = tensors.iter().find(|t| t.shape() != tensors[0].shape()) {
            return Err(Error::ShapeMismatch {
                op: "stack",
                lhs: tensors[0].shape().to_vec(),
                rhs: t.shape().to_vec(),
                reason: "stacked tensors must have one shape".into(),
            });
        }
        let expanded = tensors
            .iter()
            .map(|t| t.new_axis(axis))
            .collect::<Result<Vec<_>>>()?;
        Tensor::concatenate(&expanded, axis)
    }

    /// Gathers entries along `axis` at integer `indices`; the result's shape replaces that axis
    /// by the indices' shape.
    pub fn take(&self, indices: &Tensor, axis: impl OneAxis) -> Result<Tensor> {
        let axis = normalize_axis("take", self.axis_position("take", axis)?, self.shape())?;
        if indices.dtype().is_float() {
            return Err(Error::UnsupportedDType {
                op: "take (indices)",
                dtype: indices.dtype(),
            });
        }
        let device = resolve_device("take", None, &[self, indices])?;
        let mut shape = self.shape()[..axis].to_vec();
        shape.extend_from_slice(indices.shape());
        shape.extend_from_slice(&self.shape()[axis + 1..]);
        check_shape("take", &shape, self.dtype())?;
        let dim = self.shape()[axis];
        if crate::jit::is_placeholder(indices) {
            return self.take_traced(indices, axis, shape);
        }
        // Exact for every integer dtype (no trip through f64).
        let idx = indices
            .as_type(DType::S64)?
            .to_vec::<i64>()?
            .into_iter()
            .map(|i| {
                usize::try_from(i)
                    .ok()
                    .filter(|&u| u < dim)
                    .ok_or_else(|| Error::InvalidArgument {
                        op: "take",
                        message: format!(
                            "index {i} is out of range for axis {axis} of {} (size {dim})",
                            self.signature()
                        ),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        let names = self.take_names(indices, axis);
        let kernel = Op::Take {
            shape: self.shape().to_vec(),
            indices: idx,
            axis,
        };
        Ok(run(device, kernel, &[self], shape)?.named(names))
    }

    /// The names of `take`'s result: the indices' axes' names where `axis` was.
    fn take_names(&self, indices: &Tensor, axis: usize) -> Vec<names::Name> {
        let own = self.names();
        let mut names = own[..axis].to_vec();
        names.extend(indices.names());
        names.extend_from_slice(&own[axis + 1..]);
        names
    }

    /// `take` with indices a compiled function computes (their values are not known while it
    /// is traced): a gather along the axis, so it compiles and differentiates as one. As in
    /// XLA, an index outside the axis is clamped to it instead of reported.
    fn take_traced(&self, indices: &Tensor, axis: usize, shape: Vec<usize>) -> Result<Tensor> {
        let (pre, dim) = (numel(&self.shape()[..axis]), self.shape()[axis]);
        let post = numel(&self.shape()[axis + 1..]);
        let k = indices.size();
        let rows = self.reshape(&[pre, dim, post])?;
        let at = indices.reshape(&[1, k, 1])?.broadcast(&[pre, k, post])?;
        let names = self.take_names(indices, axis);
        Ok(rows.take_along_axis(&at, 1)?.reshape(&shape)?.named(names))
    }

    /// The entries at `positions` (each below the axis' size) along `axis`, on this tensor's
    /// device: a gather whose positions the frontend computed.
    pub(super) fn take_positions(&self, positions: Vec<usize>, axis: usize) -> Result<Tensor> {
        let device = resolve_device("take", None, &[self])?;
        let mut shape = self.shape().to_vec();
        shape[axis] = positions.len();
        check_shape("take", &shape, self.dtype())?;
        let kernel = Op::Take {
            shape: self.shape().to_vec(),
            indices: positions,
            axis,
        };
        Ok(run(device, kernel, &[self], shape)?.named_like(self))
    }

    /// The consecutive `axes` (all of them for `..`) merged into one, as `Nx.flatten`.
    pub fn flatten(&self, axes: impl IntoAxes) -> Result<Tensor> {
        let all: Vec<usize> = (0..self.rank()).collect();
        let axes = match self.axis_positions("flatten", axes)? {
            Some(a) => a
                .iter()
                .map(|&x| normalize_axis("flatten", x, self.shape()))
                .collect::<Result<Vec<_>>>()?,
            None => all,
        };
        if axes.windows(2).any(|w| w[1] != w[0] + 1) {
            return Err(Error::InvalidArgument {
                op: "flatten",
                message: format!("flatten axes must be consecutive, got {axes:?}"),
            });
        }
        let (Some(&first), Some(&last)) = (axes.first(), axes.last()) else {
            return self.reshape(&[self.size()]);
        };
        let mut shape = self.shape()[..first].to_vec();
        shape.push(numel(&self.shape()[first..=last]));
        shape.extend_from_slice(&self.shape()[last + 1..]);
        // As Nx: the axes left keep their names, the merged one has none.
        let own = self.names();
        let mut names = own[..first].to_vec();
        names.push(None);
        names.extend_from_slice(&own[last + 1..]);
        Ok(self.reshape(&shape)?.named(names))
    }

    /// The elements in reverse order along `axes` (every axis for `..`), as `Nx.reverse`.
    pub fn reverse(&self, axes: impl IntoAxes) -> Result<Tensor> {
        let axes = match self.axis_positions("reverse", axes)? {
            Some(a) => normalize_axes("reverse", &a, self.shape())?,
            None => (0..self.rank()).collect(),
        };
        let mut out = self.clone();
        for axis in axes {
            let n = self.shape()[axis];
            if n > 1 {
                out = out.take_positions((0..n).rev().collect(), axis)?;
            }
        }
        Ok(out)
    }

    /// The tensor repeated `repetitions[i]` times along axis `i`, as `Nx.tile`: fewer
    /// repetitions than axes apply to the last axes, more add leading axes.
    pub fn tile(&self, repetitions: &[usize]) -> Result<Tensor> {
        if repetitions.contains(&0) {
            return Err(Error::InvalidArgument {
                op: "tile",
                message: format!(
                    "repetitions must be integers of at least 1, got: {repetitions:?}"
                ),
            });
        }
        let rank = self.rank().max(repetitions.len());
        let mut dims = vec![1; rank - self.rank()];
        dims.extend_from_slice(self.shape());
        let mut reps = vec![1; rank - repetitions.len()];
        reps.extend_from_slice(repetitions);
        let interleave = |a: &[usize], b: &[usize]| -> Vec<usize> {
            a.iter().zip(b).flat_map(|(&x, &y)| [x, y]).collect()
        };
        let out: Vec<usize> = dims
            .iter()
            .zip(&reps)
            .map(|(d, r)| d.saturating_mul(*r))
            .collect();
        check_shape("tile", &out, self.dtype())?;
        self.reshape(&interleave(&vec![1; rank], &dims))?
            .broadcast(&interleave(&reps, &dims))?
            .reshape(&out)
    }

    /// `len` entries from `start` along `axis` (the other axes whole), as
    /// `Nx.slice_along_axis`; a start that would run past the end moves back, as in `slice`.
    pub fn slice_along_axis(&self, start: usize, len: usize, axis: impl OneAxis) -> Result<Tensor> {
        self.slice_along_axis_by(start, len, axis, 1)
    }

    /// [`Tensor::slice_along_axis`] taking every `stride`-th entry of the span.
    pub fn slice_along_axis_by(
        &self,
        start: usize,
        len: usize,
        axis: impl OneAxis,
        stride: usize,
    ) -> Result<Tensor> {
        let axis = self.axis_position("slice_along_axis", axis)?;
        let axis = normalize_axis("slice_along_axis", axis, self.shape())?;
        let mut starts = vec![0; self.rank()];
        let mut lengths = self.shape().to_vec();
        let mut steps = vec![1; self.rank()];
        starts[axis] = start;
        lengths[axis] = len;
        steps[axis] = stride;
        self.slice(&starts, &lengths, Some(&steps))
    }

    /// The tensor cut in two along `axis` at `at`, as `Nx.split`: an index (from the end when
    /// negative) or a fraction of the axis (`ceil(fraction * size)` entries go left). Both
    /// parts must be non-empty.
    pub fn split(&self, at: impl Into<SplitAt>, axis: impl OneAxis) -> Result<(Tensor, Tensor)> {
        let axis = normalize_axis("split", self.axis_position("split", axis)?, self.shape())?;
        let size = self.shape()[axis];
        let inside = |i: i128| (i > 0 && i < size as i128).then_some(i as usize);
        let left = match at.into() {
            SplitAt::Index(i) => inside(if i < 0 {
                size as i128 + i as i128
            } else {
                i as i128
            })
            .ok_or_else(|| Error::InvalidArgument {
                op: "split",
                message: format!(
                    "split must be an integer greater than zero and less than the length \
                         of the given axis (index {i}, axis {axis} of size {size})"
                ),
            })?,
            SplitAt::Fraction(f) => inside((f * size as f64).ceil() as i128)
                .filter(|_| f.is_finite())
                .ok_or_else(|| Error::InvalidArgument {
                    op: "split",
                    message: format!(
                        "split must be a float such that 0 < ceil(split * axis_size) < \
                         axis_size (split {f}, axis {axis} of size {size})"
                    ),
                })?,
        };
        let a = axis as isize;
        Ok((
            self.slice_along_axis(0, left, a)?,
            self.slice_along_axis(left, size - left, a)?,
        ))
    }

    /// Splits axis 0 into batches of `batch_size`, on this tensor's device. The last, short
    /// batch is padded from the start (`Repeat`, cycling as often as needed) or dropped
    /// (`Discard`), as `Nx.to_batched`.
    pub fn to_batched(&self, batch_size: usize, leftover: Leftover) -> Result<Vec<Tensor>> {
        if batch_size == 0 || self.rank() == 0 {
            return Err(Error::InvalidArgument {
                op: "to_batched",
                message: format!("needs a batch size above 0 and a tensor of rank 1 or more; got {batch_size} and {}", self.signature()),
            });
        }
        resolve_device("to_batched", None, &[self])?;
        let total = self.shape()[0];
        let mut batch_shape = self.shape().to_vec();
        batch_shape[0] = batch_size;
        if !total.is_multiple_of(batch_size) && leftover == Leftover::Repeat {
            check_shape("to_batched", &batch_shape, self.dtype())?;
        }
        let mut out = Vec::new();
        let mut at = 0;
        while at < total {
            let len = batch_size.min(total - at);
            if len < batch_size && leftover == Leftover::Discard {
                break;
            }
            out.push(self.batch_from(at, batch_size)?);
            at += len;
        }
        Ok(out)
    }

    /// The batch of `batch_size` rows from row `at` (below the row count), padded from the
    /// start when it runs past the end: one batch of `to_batched(.., Repeat)`.
    pub(crate) fn batch_from(&self, at: usize, batch_size: usize) -> Result<Tensor> {
        let total = self.shape().first().copied().unwrap_or(0);
        if at >= total {
            return Err(Error::InvalidArgument {
                op: "to_batched",
                message: format!("internal: row {at} of {}", self.signature()),
            });
        }
        let mut start = vec![0; self.rank()];
        start[0] = at;
        if batch_size <= total - at {
            let mut lengths = self.shape().to_vec();
            lengths[0] = batch_size;
            return self.slice(&start, &lengths, None);
        }
        // The rows at..total, then rows from the start again, as one gather.
        let mut rows = try_alloc(batch_size, 0i64, &[batch_size])?;
        for (i, r) in rows.iter_mut().enumerate() {
            *r = ((at + i) % total) as i64;
        }
        let rows = Tensor::from_host(Buffer::S64(rows), vec![batch_size], Device::BINARY)?;
        self.take(&rows, 0)
    }
}

/// Where [`Tensor::split`] cuts: an index along the axis (from its end when negative) or a
/// fraction of its length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SplitAt {
    /// Entries before this index go left.
    Index(i64),
    /// `ceil(fraction * size)` entries go left.
    Fraction(f64),
}

impl From<i32> for SplitAt {
    fn from(i: i32) -> Self {
        SplitAt::Index(i.into())
    }
}

impl From<i64> for SplitAt {
    fn from(i: i64) -> Self {
        SplitAt::Index(i)
    }
}

impl From<usize> for SplitAt {
    fn from(i: usize) -> Self {
        SplitAt::Index(i64::try_from(i).unwrap_or(i64::MAX))
    }
}

impl From<f64> for SplitAt {
    fn from(f: f64) -> Self {
        SplitAt::Fraction(f)
    }
}
