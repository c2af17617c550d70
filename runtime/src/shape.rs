//! Shape arithmetic shared by every backend: element counts, row-major strides, broadcasting and
//! axis normalisation. Pure functions over `&[usize]`; no data.

use crate::error::{Error, Result};

/// Formats a shape as Nx does: `[2][3]`; a scalar has no brackets.
pub fn fmt_shape(shape: &[usize]) -> String {
    shape.iter().map(|d| format!("[{d}]")).collect()
}

/// Number of elements (1 for a scalar).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// Row-major strides in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
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
    let offset = to.len() - from.len();
    (0..to.len())
        .map(|i| {
            if i < offset || from[i - offset] == 1 {
                0
            } else {
                own[i - offset]
            }
        })
        .collect()
}

/// Turns a possibly negative axis into an index below `rank`.
pub fn normalize_axis(op: &'static str, axis: isize, shape: &[usize]) -> Result<usize> {
    let rank = shape.len() as isize;
    let a = if axis < 0 { axis + rank } else { axis };
    if a < 0 || a >= rank {
        return Err(Error::AxisOutOfRange {
            op,
            axis,
            shape: shape.to_vec(),
        });
    }
    Ok(a as usize)
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
    fn axes() {
        assert_eq!(normalize_axis("t", -1, &[2, 3]).unwrap(), 1);
        assert!(normalize_axis("t", 2, &[2, 3]).is_err());
        assert!(normalize_axes("t", &[0, -2], &[2, 3]).is_err());
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(fmt_shape(&[10000, 10]), "[10000][10]");
    }
}
