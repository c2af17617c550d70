//! Options of the ops that slide a window over spatial axes (`conv`, and the window ops),
//! written as Nx writes them: a padding mode or per-axis `(lo, hi)` pairs, and values given once
//! for every axis or once per axis (`strides: 2`, `strides: [2, 1]`).

use crate::error::{Error, Result};

/// How the spatial axes are padded with zeros before the window slides (Nx's `padding:`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Padding {
    /// None (`:valid`).
    #[default]
    Valid,
    /// `window - 1` in all, the smaller half before (`:same`): with stride 1 the result keeps
    /// the input's size.
    Same,
    /// `(lo, hi)` per spatial axis; negative values crop.
    Explicit(Vec<(i64, i64)>),
}

impl From<Vec<(i64, i64)>> for Padding {
    fn from(pairs: Vec<(i64, i64)>) -> Padding {
        Padding::Explicit(pairs)
    }
}

impl From<&[(i64, i64)]> for Padding {
    fn from(pairs: &[(i64, i64)]) -> Padding {
        Padding::Explicit(pairs.to_vec())
    }
}

impl<const N: usize> From<[(i64, i64); N]> for Padding {
    fn from(pairs: [(i64, i64); N]) -> Padding {
        Padding::Explicit(pairs.to_vec())
    }
}

impl Padding {
    /// The `(lo, hi)` padding of each axis for windows of the (dilated) sizes `window`.
    pub(crate) fn config(&self, op: &'static str, window: &[usize]) -> Result<Vec<(i64, i64)>> {
        match self {
            Padding::Valid => Ok(vec![(0, 0); window.len()]),
            Padding::Same => Ok(window
                .iter()
                .map(|&k| {
                    let total = k.saturating_sub(1) as i64;
                    (total / 2, total - total / 2)
                })
                .collect()),
            Padding::Explicit(pairs) if pairs.len() == window.len() => Ok(pairs.clone()),
            Padding::Explicit(pairs) => Err(Error::InvalidArgument {
                op,
                message: format!(
                    "padding has {} (lo, hi) pairs but there are {} spatial axes",
                    pairs.len(),
                    window.len()
                ),
            }),
        }
    }
}

/// A value for every spatial axis, or one per axis (Nx's integer-or-list options).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PerAxis {
    /// The same value on every axis.
    All(i64),
    /// One value per axis.
    Each(Vec<i64>),
}

macro_rules! per_axis_from {
    ($($t:ty),*) => {$(
        impl From<$t> for PerAxis {
            fn from(v: $t) -> PerAxis {
                PerAxis::All(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
        impl<const N: usize> From<[$t; N]> for PerAxis {
            fn from(v: [$t; N]) -> PerAxis {
                PerAxis::Each(v.iter().map(|&x| i64::try_from(x).unwrap_or(i64::MAX)).collect())
            }
        }
        impl From<&[$t]> for PerAxis {
            fn from(v: &[$t]) -> PerAxis {
                PerAxis::Each(v.iter().map(|&x| i64::try_from(x).unwrap_or(i64::MAX)).collect())
            }
        }
        impl From<Vec<$t>> for PerAxis {
            fn from(v: Vec<$t>) -> PerAxis {
                v.as_slice().into()
            }
        }
    )*};
}

per_axis_from!(i32, i64, usize);

impl PerAxis {
    /// One positive value per axis of `axes` axes; `what` names the option in errors.
    pub(crate) fn resolve(&self, op: &'static str, what: &str, axes: usize) -> Result<Vec<usize>> {
        let values = match self {
            PerAxis::All(v) => vec![*v; axes],
            PerAxis::Each(list) if list.len() == axes => list.clone(),
            PerAxis::Each(list) => {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!(
                        "{what} has {} entries but there are {axes} spatial axes, got {list:?}",
                        list.len()
                    ),
                })
            }
        };
        values
            .iter()
            .map(|&v| usize::try_from(v).ok().filter(|&v| v >= 1))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::InvalidArgument {
                op,
                message: format!("{what} of each axis must be a positive integer, got {values:?}"),
            })
    }
}

/// The size of `n` entries with `dilation - 1` zeros between neighbours.
pub(crate) fn dilated(n: usize, dilation: usize) -> usize {
    match n {
        0 => 0,
        n => (n - 1).saturating_mul(dilation).saturating_add(1),
    }
}

/// How many windows of `window` entries fit, `stride` apart, in `size` entries padded by
/// `(lo, hi)`; Nx's error where none does.
pub(crate) fn window_count(
    op: &'static str,
    size: usize,
    (lo, hi): (i64, i64),
    window: usize,
    stride: usize,
) -> Result<usize> {
    let padded = size as i128 + lo as i128 + hi as i128;
    let room = padded - window as i128;
    if room < 0 {
        return Err(Error::InvalidArgument {
            op,
            message: format!(
                "{op} would result in empty tensor (an axis of {size} padded by ({lo}, {hi}) is \
                 shorter than a window of {window}), which is not currently supported in Nx"
            ),
        });
    }
    usize::try_from(room / stride as i128 + 1).map_err(|_| Error::InvalidArgument {
        op,
        message: format!("padding ({lo}, {hi}) is too large"),
    })
}
