//! Axes as a cell writes them, the one shape every reduction, index reduction and median
//! takes: a single axis (`t.sum(0)`, `t.sum(-1)`), several (`t.sum([0, 1])`, `t.sum(&axes)`),
//! or all of them (`t.sum(..)`, Nx's default when `axes:` is left out). Negative axes count
//! from the end. Keeping the reduced axes with size 1 (Nx's `keep_axes: true`) is the
//! method's `_keep` twin (`t.sum_keep([1])`), so no call carries a bare `true` or `false`.

use std::ops::RangeFull;

/// Which axes an operation works on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axes {
    /// Every axis (`..`).
    All,
    /// These axes (negative ones count from the end).
    Listed(Vec<isize>),
}

impl Axes {
    /// The form the ops take internally: `None` for every axis.
    pub(crate) fn as_option(&self) -> Option<&[isize]> {
        match self {
            Axes::All => None,
            Axes::Listed(axes) => Some(axes),
        }
    }
}

/// What a reduction accepts as its axes: `..`, one integer, or an array, slice or `Vec` of
/// them.
pub trait IntoAxes {
    /// The axes this value names.
    fn into_axes(self) -> Axes;
}

/// What an index reduction (`argmax`, `median`, ...) accepts as its axis: `..` (the flattened
/// tensor, Nx's default) or one integer.
pub trait IntoAxis {
    /// The axis, or `None` for the flattened tensor.
    fn into_axis(self) -> Option<isize>;
}

impl IntoAxes for Axes {
    fn into_axes(self) -> Axes {
        self
    }
}

impl IntoAxes for RangeFull {
    fn into_axes(self) -> Axes {
        Axes::All
    }
}

impl IntoAxis for RangeFull {
    fn into_axis(self) -> Option<isize> {
        None
    }
}

/// An axis number as `isize`; one too large for it names no axis (`isize::MAX`), which the
/// op then reports as out of range.
fn axis_number<T: TryInto<isize>>(axis: T) -> isize {
    axis.try_into().unwrap_or(isize::MAX)
}

macro_rules! integer_axes {
    ($($t:ty),*) => {$(
        impl IntoAxis for $t {
            fn into_axis(self) -> Option<isize> {
                Some(axis_number(self))
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
        assert_eq!(usize::MAX.into_axis(), Some(isize::MAX));
        assert_eq!((..).into_axis(), None);
    }
}
