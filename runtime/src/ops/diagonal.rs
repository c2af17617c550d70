//! Triangles and diagonals of matrices: `tril`, `triu` (a `tri` mask and `select`),
//! `take_diagonal` (a `gather`), `make_diagonal` and `put_diagonal` (an `indexed_put`), as
//! Nx composes them, so every backend, `jit` and the gradient come from those ops. The mask
//! constructor `tri` is in `create.rs` with the other constructors.

use crate::create::on;
use crate::error::{Error, Result};
use crate::session::resolve_device;
use crate::tensor::Tensor;

/// Where the diagonal at `offset` of a `rows`×`columns` matrix starts and how long it is.
fn diagonal_span(rows: usize, columns: usize, offset: isize) -> (usize, usize, usize) {
    let (row, column) = if offset >= 0 {
        (0, offset.unsigned_abs())
    } else {
        (offset.unsigned_abs(), 0)
    };
    let length = rows.saturating_sub(row).min(columns.saturating_sub(column));
    (row, column, length)
}

/// Nx's `validate_diag_offset!`: the diagonal must start inside the matrix.
fn check_offset(op: &'static str, rows: usize, columns: usize, offset: isize) -> Result<()> {
    let message = if offset >= 0 && offset.unsigned_abs() >= columns {
        format!("offset must be less than length of axis 1 when positive, got: {offset}")
    } else if offset < 0 && offset.unsigned_abs() >= rows {
        format!(
            "absolute value of offset must be less than length of axis 0 when negative, got: {offset}"
        )
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument { op, message })
}

fn rank_error(op: &'static str, what: &str, t: &Tensor) -> Error {
    Error::InvalidArgument {
        op,
        message: format!(
            "{op} expects {what}, got tensor of rank: {} ({})",
            t.rank(),
            t.signature()
        ),
    }
}

/// The `[length, 2]` (row, column) pairs of a diagonal, as s64 on `t`'s device.
fn diagonal_indices(t: &Tensor, start: (usize, usize), length: usize) -> Result<Tensor> {
    let device = resolve_device("diagonal", None, &[t])?;
    let pairs: Vec<i64> = (0..length)
        .flat_map(|i| [start.0 + i, start.1 + i])
        .map(|x| i64::try_from(x).unwrap_or(i64::MAX))
        .collect();
    on(device).from_vec(pairs, &[length, 2])
}

impl Tensor {
    /// The lower triangle of the last two axes (entries above diagonal `k` become 0), as
    /// `Nx.tril(t, k: k)`; `k > 0` keeps diagonals above the main one.
    pub fn tril(&self, k: isize) -> Result<Tensor> {
        let mask = self.triangle_mask("tril", k)?;
        mask.select(self, 0)
    }

    /// The upper triangle of the last two axes (entries below diagonal `k` become 0), as
    /// `Nx.triu(t, k: k)`.
    pub fn triu(&self, k: isize) -> Result<Tensor> {
        let mask = self.triangle_mask("triu", k.saturating_sub(1))?;
        mask.select(0, self)
    }

    fn triangle_mask(&self, op: &'static str, k: isize) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(rank_error(op, "a tensor with at least 2 dimensions", self));
        }
        let (rows, columns) = (self.shape()[self.rank() - 2], self.shape()[self.rank() - 1]);
        let device = resolve_device(op, None, &[self])?;
        on(device).tri(rows, columns, k)?.broadcast(self.shape())
    }

    /// The diagonal at `offset` of the last two axes (above the main one when positive), as
    /// `Nx.take_diagonal(t, offset: offset)`: `[.., n, m]` gives `[.., length]`.
    pub fn take_diagonal(&self, offset: isize) -> Result<Tensor> {
        let op = "take_diagonal";
        if self.rank() < 2 {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "take_diagonal/2 expects tensor of rank 2 or higher, got tensor of rank: {}",
                    self.rank()
                ),
            });
        }
        let rank = self.rank();
        let (rows, columns) = (self.shape()[rank - 2], self.shape()[rank - 1]);
        check_offset(op, rows, columns, offset)?;
        let (row, column, length) = diagonal_span(rows, columns, offset);
        let indices = diagonal_indices(self, (row, column), length)?;
        let matrix_axes = [rank as isize - 2, rank as isize - 1];
        // gather puts the diagonal first, before the batch axes it leaves.
        let gathered = self.gather(&indices, matrix_axes)?;
        let mut order: Vec<usize> = (1..rank - 1).collect();
        order.push(0);
        gathered.transpose(&order)
    }

    /// A square matrix with this vector on diagonal `offset` and 0 elsewhere, as
    /// `Nx.make_diagonal(t, offset: offset)`: `n` values make an `n + |offset|` square.
    pub fn make_diagonal(&self, offset: isize) -> Result<Tensor> {
        let op = "make_diagonal";
        if self.rank() != 1 {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "make_diagonal/2 expects tensor of rank 1, got tensor of rank: {}",
                    self.rank()
                ),
            });
        }
        let side = self.size().saturating_add(offset.unsigned_abs());
        let device = resolve_device(op, None, &[self])?;
        let square = on(device).zeros(self.dtype(), &[side, side])?;
        let (row, column, length) = diagonal_span(side, side, offset);
        let indices = diagonal_indices(self, (row, column), length)?;
        square.indexed_put(&indices, self, ..)
    }

    /// This matrix with `diagonal` written on diagonal `offset`, as
    /// `Nx.put_diagonal(t, diagonal, offset: offset)`; `diagonal` is exactly as long as that
    /// diagonal. The result has the merged type of the two.
    pub fn put_diagonal(&self, diagonal: &Tensor, offset: isize) -> Result<Tensor> {
        let op = "put_diagonal";
        if self.rank() != 2 {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "put_diagonal/3 expects tensor of rank 2, got tensor of rank: {}",
                    self.rank()
                ),
            });
        }
        if diagonal.rank() != 1 {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "put_diagonal/3 expects diagonal of rank 1, got tensor of rank: {}",
                    diagonal.rank()
                ),
            });
        }
        let (rows, columns) = (self.shape()[0], self.shape()[1]);
        check_offset(op, rows, columns, offset)?;
        let (row, column, length) = diagonal_span(rows, columns, offset);
        if diagonal.size() != length {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "expected diagonal tensor of length: {length}, got diagonal tensor of length: {}",
                    diagonal.size()
                ),
            });
        }
        let indices = diagonal_indices(self, (row, column), length)?;
        self.indexed_put(&indices, diagonal, ..)
    }
}

#[cfg(test)]
mod tests {
    use super::diagonal_span;

    #[test]
    fn spans_start_on_the_right_edge() {
        assert_eq!(diagonal_span(3, 3, 0), (0, 0, 3));
        assert_eq!(diagonal_span(3, 3, 1), (0, 1, 2));
        assert_eq!(diagonal_span(3, 3, -1), (1, 0, 2));
        assert_eq!(diagonal_span(4, 3, -1), (1, 0, 3));
        assert_eq!(diagonal_span(4, 3, 5), (0, 5, 0));
    }
}
