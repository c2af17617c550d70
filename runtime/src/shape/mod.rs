//! Shape arithmetic shared by every backend: element counts, row-major strides, broadcasting and
//! axis normalisation. Pure functions over `&[usize]`; no data.
//!
//! Every shape a tensor can have passes [`check_shape`]: rank at most [`MAX_RANK`], and its
//! non-zero dimensions multiply to at most [`MAX_ELEMENTS`] (numpy's rule: zeros are skipped
//! so that an empty tensor cannot hide an overflowing product). Then every stride and every
//! in-range offset of it fits in `usize`, and the byte size of any dtype fits in `isize`, so
//! the arithmetic below needs no checks for valid shapes. It saturates all the same, so that
//! a shape that skipped the check cannot wrap around.

use crate::dtype::DType;
use crate::error::{Error, Result};

pub mod format;
pub mod names;
pub use self::format::fmt_shape;

/// The highest rank a tensor may have (numpy's limit too). Deep enough for any real tensor, and
/// it bounds the recursion of the display and the size of per-axis bookkeeping.
pub const MAX_RANK: usize = 64;

/// The most elements a tensor may have: the count whose f64 bytes still fit in `isize`.
pub const MAX_ELEMENTS: usize = (isize::MAX as usize) / 8;

/// Checks that `shape` is one a tensor may have (see the module docs): an `InvalidArgument`
/// past the rank limit, an `Allocation` error for more elements than any machine can address.
pub fn check_shape(op: &'static str, shape: &[usize], dtype: DType) -> Result<()> {
    if shape.len() > MAX_RANK {
        return Err(Error::InvalidArgument {
            op,
            message: format!(
                "a shape of rank {} is past the rank limit of {MAX_RANK}",
                shape.len()
            ),
        });
    }
    let nonzero = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(1usize, |acc, &d| acc.checked_mul(d));
    match nonzero {
        Some(n) if n <= MAX_ELEMENTS => Ok(()),
        _ => Err(Error::Allocation {
            shape: shape.to_vec(),
            dtype,
            bytes: shape.iter().fold(dtype.size_in_bytes() as u128, |acc, &d| {
                acc.saturating_mul(d as u128)
            }),
            reason: format!("no tensor may have more than {MAX_ELEMENTS} elements"),
        }),
    }
}

/// Number of elements (1 for a scalar); saturates rather than wrapping (see the module docs).
pub fn numel(shape: &[usize]) -> usize {
    if shape.contains(&0) {
        return 0;
    }
    shape.iter().fold(1usize, |acc, &d| acc.saturating_mul(d))
}

/// The axes of a rank-`rank` shape that are not in `axes`, in order.
pub fn kept_axes(rank: usize, axes: &[usize]) -> Vec<usize> {
    (0..rank).filter(|a| !axes.contains(a)).collect()
}

/// The shape left when `axes` are taken out (a reduction's result, or one index of `take`).
pub fn without_axes(shape: &[usize], axes: &[usize]) -> Vec<usize> {
    shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(i))
        .map(|(_, &d)| d)
        .collect()
}

/// Row-major strides in elements; saturating like [`numel`].
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1].saturating_mul(shape[i + 1]);
    }
    s
}

/// The shape two operands broadcast to (NumPy/Nx rules: align on the right, a dimension of 1
/// stretches).
pub fn broadcast_shapes(op: &'static str, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(Error::ShapeMismatch {
                    op,
                    lhs: a.to_vec(),
                    rhs: b.to_vec(),
                    reason: format!(
                        "dimension {} of the result would need both {da} and {db}",
                        i
                    ),
                })
            }
        };
    }
    Ok(out)
}

/// Strides that read a tensor of shape `from` as if it had the (broadcast) shape `to`: stretched
/// and missing dimensions get stride 0.
pub fn broadcast_strides(from: &[usize], to: &[usize]) -> Vec<usize> {
    let own = strides(from);
    // Callers broadcast `from` to `to` first, so `to` is never of lower rank.
    let offset = to.len().saturating_sub(from.len());
    (0..to.len())
        .map(|i| match i.checked_sub(offset).and_then(|j| from.get(j)) {
            Some(&d) if d != 1 => own[i - offset],
            _ => 0,
        })
        .collect()
}

/// Turns a possibly negative axis into an index below `rank`.
pub fn normalize_axis(op: &'static str, axis: isize, shape: &[usize]) -> Result<usize> {
    let rank = shape.len();
    let a = if axis < 0 {
        rank.checked_sub(axis.unsigned_abs())
    } else {
        Some(axis.unsigned_abs())
    };
    a.filter(|&a| a < rank)
        .ok_or_else(|| Error::AxisOutOfRange {
            op,
            axis,
            shape: shape.to_vec(),
        })
}

/// Normalises a list of axes, rejecting duplicates; sorted ascending.
pub fn normalize_axes(op: &'static str, axes: &[isize], shape: &[usize]) -> Result<Vec<usize>> {
    let mut out = axes
        .iter()
        .map(|&a| normalize_axis(op, a, shape))
        .collect::<Result<Vec<_>>>()?;
    out.sort_unstable();
    if out.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::InvalidArgument {
            op,
            message: format!("axes {axes:?} name the same axis twice"),
        });
    }
    Ok(out)
}

/// Splits a linear row-major index into coordinates.
pub fn unravel(mut index: usize, shape: &[usize], coords: &mut [usize]) {
    for i in (0..shape.len()).rev() {
        let d = shape[i].max(1);
        coords[i] = index % d;
        index /= d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(broadcast_shapes("t", &[3, 1], &[4]).unwrap(), vec![3, 4]);
        assert_eq!(broadcast_shapes("t", &[], &[2, 2]).unwrap(), vec![2, 2]);
        let e = broadcast_shapes("add", &[3], &[4]).unwrap_err().to_string();
        assert!(e.contains("[3]") && e.contains("[4]"), "{e}");
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
    }

    #[test]
    fn shapes_are_checked() {
        assert!(check_shape("t", &[usize::MAX, usize::MAX], DType::U8).is_err());
        assert!(check_shape("t", &[0, usize::MAX, usize::MAX], DType::U8).is_err());
        assert!(check_shape("t", &[0, usize::MAX], DType::U8).is_err());
        assert!(check_shape("t", &[0, MAX_ELEMENTS], DType::F64).is_ok());
        assert!(check_shape("t", &[1; MAX_RANK], DType::F64).is_ok());
        assert!(check_shape("t", &[1; MAX_RANK + 1], DType::F64).is_err());
        assert_eq!(numel(&[usize::MAX, 0]), 0);
        assert_eq!(numel(&[usize::MAX, 2]), usize::MAX);
        assert_eq!(normalize_axis("t", isize::MIN, &[2]).ok(), None);
        assert_eq!(normalize_axis("t", -2, &[2, 3]).ok(), Some(0));
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axis("t", -1, &[2, 3]).unwrap(), 1);
        assert!(normalize_axis("t", 2, &[2, 3]).is_err());
        assert!(normalize_axes("t", &[0, -2], &[2, 3]).is_err());
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(fmt_shape(&[10000, 10]), "[10000][10]");
    }
}
