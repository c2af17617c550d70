//! Axes as a cell writes them, the one shape every op with Nx's `axes:` option takes
//! (reductions, `transpose`, `squeeze`, `flatten`, `reverse`, `gather`, `indexed_add`,
//! `indexed_put`; index reductions and the ops over one axis take one): a single axis
//! (`t.sum(0)`, `t.sum(-1)`), several (`t.sum([0, 1])`, `t.sum(&axes)`), or Nx's default when
//! `axes:` is left out (`t.sum(..)`: every axis; `t.transpose(..)`: reversed; `t.gather(&i,
//! ..)`: the leading ones). Negative axes count from the end. Keeping the reduced axes with
//! size 1 (Nx's `keep_axes: true`) is the method's `_keep` twin (`t.sum_keep([1])`), so no call
//! carries a bare `true` or `false`.
//!
//! Wherever an axis goes, its name may go instead (`t.sum("x")`, `t.sum(["batch", "x"])`,
//! `t.sort("x", ..)`), as every Nx `axis:`/`axes:` option takes an atom; a name the tensor does
//! not have is Nx's error naming the names it has. Positions and names mix in an array of
//! [`Axis`] (`t.transpose([Axis::from(2), 1.into(), "batch".into()])`), as Nx's
//! `axes: [2, 1, :batch]`.

use std::ops::RangeFull;

use crate::error::Result;
use crate::shape::names;
use crate::tensor::Tensor;

/// One axis: its position (negative counts from the end) or its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axis {
    /// The axis at this position.
    Index(isize),
    /// The axis with this name.
    Name(String),
}

/// Which axes an operation works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axes {
    /// Every axis (`..`).
    All,
    /// These axes (negative ones count from the end).
    Listed(Vec<isize>),
    /// The axes with these names.
    Named(Vec<String>),
    /// Positions and names mixed, as Nx allows (`axes: [2, 1, :batch]`).
    Mixed(Vec<Axis>),
}

/// What a reduction accepts as its axes: `..`, one integer or name, or an array, slice or
/// `Vec` of them.
pub trait IntoAxes {
    /// The axes this value names.
    fn into_axes(self) -> Axes;
}

/// What an op over one axis (`sort`, `cumulative_sum`, `concatenate`, ...) accepts as it: an
/// integer or a name.
pub trait OneAxis {
    /// The axis.
    fn one_axis(self) -> Axis;
}

/// What an index reduction (`argmax`, `median`, ...) accepts as its axis: `..` (the flattened
/// tensor, Nx's default), one integer or one name.
pub trait IntoAxis {
    /// The axis, or `None` for the flattened tensor.
    fn into_axis(self) -> Option<Axis>;
}

impl<T: OneAxis> IntoAxis for T {
    fn into_axis(self) -> Option<Axis> {
        Some(self.one_axis())
    }
}

impl OneAxis for Axis {
    fn one_axis(self) -> Axis {
        self
    }
}

impl Tensor {
    /// The position of `axis` (still possibly negative: the op normalises it with its own
    /// error), or the error for a name this tensor does not have.
    pub(crate) fn axis_position(&self, op: &'static str, axis: impl OneAxis) -> Result<isize> {
        match axis.one_axis() {
            Axis::Index(i) => Ok(i),
            // A position is below MAX_RANK, so it fits in isize.
            Axis::Name(n) => Ok(names::find(op, &self.names(), &n)? as isize),
        }
    }

    /// [`Tensor::axis_position`] for an axis that may be `..` (`None`).
    pub(crate) fn optional_axis(
        &self,
        op: &'static str,
        axis: impl IntoAxis,
    ) -> Result<Option<isize>> {
        axis.into_axis()
            .map(|a| self.axis_position(op, a))
            .transpose()
    }

    /// The positions of `axes`, `None` for every axis: the form the ops take internally.
    pub(crate) fn axis_positions(
        &self,
        op: &'static str,
        axes: impl IntoAxes,
    ) -> Result<Option<Vec<isize>>> {
        match axes.into_axes() {
            Axes::All => Ok(None),
            Axes::Listed(list) => Ok(Some(list)),
            Axes::Named(list) => {
                let names = self.names();
                list.iter()
                    .map(|n| Ok(names::find(op, &names, n)? as isize))
                    .collect::<Result<Vec<_>>>()
                    .map(Some)
            }
            Axes::Mixed(list) => list
                .into_iter()
                .map(|a| self.axis_position(op, a))
                .collect::<Result<Vec<_>>>()
                .map(Some),
        }
    }
}

impl IntoAxes for Axes {
    fn into_axes(self) -> Axes {
        self
    }
}

impl<const N: usize> IntoAxes for [Axis; N] {
    fn into_axes(self) -> Axes {
        Axes::Mixed(self.into())
    }
}

impl IntoAxes for Vec<Axis> {
    fn into_axes(self) -> Axes {
        Axes::Mixed(self)
    }
}

impl From<&str> for Axis {
    fn from(name: &str) -> Axis {
        Axis::Name(name.to_string())
    }
}

impl From<String> for Axis {
    fn from(name: String) -> Axis {
        Axis::Name(name)
    }
}

impl IntoAxes for RangeFull {
    fn into_axes(self) -> Axes {
        Axes::All
    }
}

impl IntoAxis for RangeFull {
    fn into_axis(self) -> Option<Axis> {
        None
    }
}

impl OneAxis for &str {
    fn one_axis(self) -> Axis {
        Axis::Name(self.to_string())
    }
}

impl OneAxis for String {
    fn one_axis(self) -> Axis {
        Axis::Name(self)
    }
}

impl OneAxis for &String {
    fn one_axis(self) -> Axis {
        Axis::Name(self.clone())
    }
}

impl IntoAxes for &str {
    fn into_axes(self) -> Axes {
        Axes::Named(vec![self.to_string()])
    }
}

impl IntoAxes for String {
    fn into_axes(self) -> Axes {
        Axes::Named(vec![self])
    }
}

impl<const N: usize> IntoAxes for [&str; N] {
    fn into_axes(self) -> Axes {
        Axes::Named(self.iter().map(|s| s.to_string()).collect())
    }
}

impl IntoAxes for &[&str] {
    fn into_axes(self) -> Axes {
        Axes::Named(self.iter().map(|s| s.to_string()).collect())
    }
}

impl IntoAxes for Vec<&str> {
    fn into_axes(self) -> Axes {
        self.as_slice().into_axes()
    }
}

impl IntoAxes for Vec<String> {
    fn into_axes(self) -> Axes {
        Axes::Named(self)
    }
}

/// An axis number as `isize`; one too large for it names no axis (`isize::MAX`), which the
/// op then reports as out of range.
fn axis_number<T: TryInto<isize>>(axis: T) -> isize {
    axis.try_into().unwrap_or(isize::MAX)
}

macro_rules! integer_axes {
    ($($t:ty),*) => {$(
        impl OneAxis for $t {
            fn one_axis(self) -> Axis {
                Axis::Index(axis_number(self))
            }
        }
        impl From<$t> for Axis {
            fn from(axis: $t) -> Axis {
                Axis::Index(axis_number(axis))
            }
        }
        impl IntoAxes for $t {
            fn into_axes(self) -> Axes {
                Axes::Listed(vec![axis_number(self)])
            }
        }
        impl<const N: usize> IntoAxes for [$t; N] {
            fn into_axes(self) -> Axes {
                Axes::Listed(self.into_iter().map(axis_number).collect())
            }
        }
        impl<const N: usize> IntoAxes for &[$t; N] {
            fn into_axes(self) -> Axes {
                Axes::Listed(self.iter().copied().map(axis_number).collect())
            }
        }
        impl IntoAxes for &[$t] {
            fn into_axes(self) -> Axes {
                Axes::Listed(self.iter().copied().map(axis_number).collect())
            }
        }
        impl IntoAxes for Vec<$t> {
            fn into_axes(self) -> Axes {
                Axes::Listed(self.into_iter().map(axis_number).collect())
            }
        }
        impl IntoAxes for &Vec<$t> {
            fn into_axes(self) -> Axes {
                self.as_slice().into_axes()
            }
        }
    )*};
}

integer_axes!(i32, i64, isize, usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_form_names_its_axes() {
        assert_eq!((..).into_axes(), Axes::All);
        assert_eq!(1.into_axes(), Axes::Listed(vec![1]));
        assert_eq!([0, -1].into_axes(), Axes::Listed(vec![0, -1]));
        let v: Vec<usize> = vec![2, 0];
        assert_eq!((&v).into_axes(), Axes::Listed(vec![2, 0]));
        assert_eq!((&v[..1]).into_axes(), Axes::Listed(vec![2]));
        assert_eq!(usize::MAX.into_axis(), Some(Axis::Index(isize::MAX)));
        assert_eq!("x".into_axis(), Some(Axis::Name("x".into())));
        assert_eq!(
            ["b", "x"].into_axes(),
            Axes::Named(vec!["b".into(), "x".into()])
        );
        assert_eq!((..).into_axis(), None);
        assert_eq!(
            [Axis::from(2), 1.into(), "batch".into()].into_axes(),
            Axes::Mixed(vec![
                Axis::Index(2),
                Axis::Index(1),
                Axis::Name("batch".into())
            ])
        );
    }
}
