//! Sorting (`Nx.sort`, `argsort`, `top_k`) as one op of every backend (`Op::Sort`: Nx's
//! order, NaN after every number), and the statistics Nx builds on a sort, `median` and
//! `mode`, composed as Nx composes them.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{Op, ScatterMode};
use crate::session::resolve_device;
use crate::shape::normalize_axis;
use crate::tensor::Tensor;

use super::axes::{IntoAxis, OneAxis};
use super::run;

/// Which end of a sort comes first (Nx's `direction:`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Direction {
    /// Smallest first; NaN last (`:asc`, Nx's default).
    #[default]
    Asc,
    /// Largest first; NaN first (`:desc`).
    Desc,
}

impl Tensor {
    /// This tensor sorted along `axis`, as `Nx.sort(t, axis: axis, direction: direction)`:
    /// NaN sorts after every number (before them in `Direction::Desc`). The gradient goes back
    /// to each entry's original place.
    pub fn sort(&self, axis: impl OneAxis, direction: Direction) -> Result<Tensor> {
        self.sort_op(self.axis_position("sort", axis)?, direction, false)
    }

    /// The positions along `axis` that put this tensor in order (as s32, Nx's default), as
    /// `Nx.argsort(t, axis: axis, direction: direction, stable: true)`: entries that compare
    /// equal keep their order (always; Nx's `stable: false` allows any order of them, so this
    /// is one of its answers). `take_along_axis` applies them.
    pub fn argsort(&self, axis: impl OneAxis, direction: Direction) -> Result<Tensor> {
        self.argsort_as(axis, direction, DType::S32)
    }

    /// [`Tensor::argsort`] with Nx's `type:` option: the positions as integer `dtype`.
    pub fn argsort_as(
        &self,
        axis: impl OneAxis,
        direction: Direction,
        dtype: DType,
    ) -> Result<Tensor> {
        if dtype.is_float() {
            return Err(Error::UnsupportedDType {
                op: "argsort (type)",
                dtype,
            });
        }
        let axis = self.axis_position("argsort", axis)?;
        let positions = self.sort_op(axis, direction, true)?;
        if dtype == DType::S64 {
            Ok(positions)
        } else {
            positions.as_type(dtype)
        }
    }

    fn sort_op(&self, axis: isize, direction: Direction, indices: bool) -> Result<Tensor> {
        let name = if indices { "argsort" } else { "sort" };
        if self.dtype().is_complex() {
            return Err(super::complex::not_for_complex(name, 2, self.dtype()));
        }
        let kernel = Op::Sort {
            shape: self.shape().to_vec(),
            axis: normalize_axis(name, axis, self.shape())?,
            descending: direction == Direction::Desc,
            indices,
        };
        let device = resolve_device(name, None, &[self])?;
        Ok(run(device, kernel, &[self], self.shape().to_vec())?.named_like(self))
    }

    /// `axis` normalised and its size, which a statistic along it needs to be above 0.
    fn nonempty_axis(&self, op: &'static str, axis: isize) -> Result<(usize, usize)> {
        let a = normalize_axis(op, axis, self.shape())?;
        match self.shape()[a] {
            0 => Err(Error::InvalidArgument {
                op,
                message: format!("axis {a} of {} is empty", self.signature()),
            }),
            n => Ok((a, n)),
        }
    }

    /// The `k` largest entries along the last axis and their positions (s32), largest first,
    /// as `Nx.top_k(t, k: k)`: NaN counts as the largest, and equal entries come in order of
    /// position.
    pub fn top_k(&self, k: usize) -> Result<(Tensor, Tensor)> {
        let Some(&size) = self.shape().last() else {
            return Err(Error::InvalidArgument {
                op: "top_k",
                message: "top_k input must have at least rank 1".into(),
            });
        };
        if k == 0 || k > size {
            return Err(Error::InvalidArgument {
                op: "top_k",
                message: format!(
                    "top_k input last axis size must be greater than or equal to k, got \
                     size={size} and k={k} (k must be at least 1)"
                ),
            });
        }
        let positions = self
            .sort_op(-1, Direction::Desc, true)?
            .slice_along_axis(0, k, -1)?;
        let values = self.take_along_axis(&positions, -1)?;
        Ok((values, positions.as_type(DType::S32)?))
    }

    /// The middle entry (the mean of the two middle ones for an even count, then a float)
    /// along `axis` (`t.median(0)`), or of every entry (`t.median(..)`), as
    /// `Nx.median(t, axis:)`.
    pub fn median(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.median_over(self.optional_axis("median", axis)?, false)
    }

    /// [`Tensor::median`] keeping the reduced axis with size 1 (Nx's `keep_axis: true`).
    pub fn median_keep(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.median_over(self.optional_axis("median", axis)?, true)
    }

    /// The most frequent entry along `axis` (`t.mode(0)`), or of every entry (`t.mode(..)`),
    /// the smallest of equally frequent ones, as `Nx.mode(t, axis:)`.
    pub fn mode(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.mode_over(self.optional_axis("mode", axis)?, false)
    }

    /// [`Tensor::mode`] keeping the reduced axis with size 1 (Nx's `keep_axis: true`).
    pub fn mode_keep(&self, axis: impl IntoAxis) -> Result<Tensor> {
        self.mode_over(self.optional_axis("mode", axis)?, true)
    }

    fn median_over(&self, axis: Option<isize>, keep_axis: bool) -> Result<Tensor> {
        let Some(axis) = axis else {
            let sorted = self.flatten(..)?.sort(0, Direction::Asc)?;
            let n = sorted.size();
            if n == 0 {
                return Err(Error::InvalidArgument {
                    op: "median",
                    message: format!("{} has no entries", self.signature()),
                });
            }
            let at = |k: usize| sorted.slice_along_axis(k, 1, 0)?.reshape(&[]);
            return if n % 2 == 1 {
                at(n / 2)
            } else {
                at(n / 2 - 1)?.add(&at(n / 2)?)?.divide(2)
            };
        };
        let (_, n) = self.nonempty_axis("median", axis)?;
        let sorted = self.sort(axis, Direction::Asc)?;
        if n % 2 == 1 {
            let middle = sorted.slice_along_axis(n / 2, 1, axis)?;
            if keep_axis {
                Ok(middle)
            } else {
                middle.squeeze([axis])
            }
        } else {
            sorted
                .slice_along_axis(n / 2 - 1, 2, axis)?
                .mean_over(Some(&[axis]), keep_axis)
        }
    }

    fn mode_over(&self, axis: Option<isize>, keep_axis: bool) -> Result<Tensor> {
        let Some(axis) = axis else {
            if self.rank() == 0 {
                return if keep_axis {
                    self.new_axis(-1)
                } else {
                    Ok(self.clone())
                };
            }
            let m = self.flatten(..)?.mode(0)?;
            return if keep_axis {
                m.reshape(&vec![1; self.rank()])
            } else {
                Ok(m)
            };
        };
        let (a, n) = self.nonempty_axis("mode", axis)?;
        let sorted = self.sort(axis, Direction::Asc)?;
        // Entries of one value are neighbours once sorted: number the runs along the axis.
        let starts = sorted
            .slice_along_axis(1, n - 1, axis)?
            .not_equal(&sorted.slice_along_axis(0, n - 1, axis)?)?
            .as_type(DType::S64)?;
        let mut first_shape = self.shape().to_vec();
        first_shape[a] = 1;
        let device = resolve_device("mode", None, &[self])?;
        let run_of = Tensor::concatenate(
            &[
                crate::create::on(device).zeros(DType::S64, &first_shape)?,
                starts,
            ],
            axis,
        )?
        .cumulative_sum(axis, false)?;
        // Each run's length, at the run's number along the axis; the longest and first wins.
        let ones = crate::create::on(device).ones(DType::S64, self.shape())?;
        let zeros = crate::create::on(device).zeros(DType::S64, self.shape())?;
        let positions = zeros.along_axis_positions(&run_of, a)?;
        let lengths = zeros.scatter_flat(ScatterMode::Add, &positions, &ones)?;
        let longest = lengths.argmax_keep(axis)?;
        let first = run_of.equal(&longest)?.argmax_keep(axis)?;
        let m = sorted.take_along_axis(&first, axis)?;
        if keep_axis {
            Ok(m)
        } else {
            m.squeeze([axis])
        }
    }
}
