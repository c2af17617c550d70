//! What the linear-algebra functions share: the batch and matrix shapes of an operand, the
//! float type they compute in, and running one `Op::LinAlg` cut into its parts.

use crate::error::{Error, Result};
use crate::ir::{Factorization, LinAlg, Op};
use crate::session::resolve_device;
use crate::shape::numel;
use crate::tensor::Tensor;

use crate::ops::run;

pub(super) fn invalid(op: &'static str, message: String) -> Error {
    Error::InvalidArgument { op, message }
}

/// The batch shape and the `[m, n]` of `t`'s matrices (its last two axes).
pub(super) fn matrices(op: &'static str, t: &Tensor) -> Result<(Vec<usize>, usize, usize)> {
    let shape = t.shape();
    match shape {
        [batch @ .., m, n] => Ok((batch.to_vec(), *m, *n)),
        _ => Err(invalid(
            op,
            format!(
                "tensor must have at least rank 2, got rank {} with shape {:?}",
                shape.len(),
                shape
            ),
        )),
    }
}

/// The batch shape and size of `t`'s square matrices.
pub(super) fn square(op: &'static str, t: &Tensor) -> Result<(Vec<usize>, usize)> {
    let (batch, m, n) = matrices(op, t)?;
    if m != n {
        return Err(invalid(
            op,
            format!(
                "tensor must be a square matrix or a batch of square matrices, got shape: {:?}",
                t.shape()
            ),
        ));
    }
    Ok((batch, n))
}

/// `t` as the float type a factorisation computes in.
pub(super) fn floating(t: &Tensor) -> Result<Tensor> {
    t.as_type(t.dtype().to_float())
}

/// The shape of a batch of `part`s (`[1, k]` parts are vectors).
fn part_shape(batch: &[usize], [rows, cols]: [usize; 2], vector: bool) -> Vec<usize> {
    let mut shape = batch.to_vec();
    if !vector {
        shape.push(rows);
    }
    shape.push(cols);
    shape
}

/// Which parts of a factorisation's result are vectors per matrix (their one row dropped).
fn vector_parts(kind: Factorization) -> &'static [usize] {
    match kind {
        Factorization::Eigh => &[0],
        Factorization::Svd { .. } => &[1],
        Factorization::Lu => &[3],
        Factorization::Cholesky | Factorization::Qr { .. } => &[],
    }
}

/// Runs `op` over `operands` (float, `op.batch()` matrices each) and cuts its result into
/// one tensor per part, each with the leading axes `batch`; the `vectors` among the parts
/// lose their one row.
pub(super) fn run_parts(
    op: LinAlg,
    operands: &[&Tensor],
    batch: &[usize],
    vectors: &[usize],
) -> Result<Vec<Tensor>> {
    let name = op.name();
    // Complex systems are solved through the real embedding; Nx refuses complex SVDs.
    let complex_kernel = matches!(
        op,
        LinAlg::Factor {
            kind: Factorization::Cholesky
                | Factorization::Lu
                | Factorization::Qr { .. }
                | Factorization::Eigh,
            ..
        }
    );
    if let Some(z) = operands
        .iter()
        .find(|t| t.dtype().is_complex() && !complex_kernel)
    {
        return Err(invalid(
            name,
            format!(
                "Nx.LinAlg.{name}/2 is not yet implemented for complex inputs (got {}), as in \
                 Nx; cholesky, qr, lu, eigh, solve, triangular_solve, invert and determinant \
                 take them",
                z.signature()
            ),
        ));
    }
    let device = resolve_device(name, None, operands)?;
    let (count, per, parts) = (op.batch(), op.per_matrix(), op.parts());
    let out = run(device, Op::LinAlg(op), operands, vec![count, per])?;
    let mut at = 0;
    let mut tensors = Vec::with_capacity(parts.len());
    for (i, [rows, cols]) in parts.iter().copied().enumerate() {
        // Saturating: inside a trace nothing was allocated yet, and the op's own allocation
        // refuses sizes past any memory.
        let len = rows.saturating_mul(cols);
        let vector = vectors.contains(&i);
        let part = out.slice_along_axis(at, len, 1)?;
        tensors.push(part.reshape(&part_shape(batch, [rows, cols], vector))?);
        at = at.saturating_add(len);
    }
    Ok(tensors)
}

/// Factorises every matrix of `t` (`kind` at the sizes of `t`'s last two axes).
pub(super) fn factor(t: &Tensor, kind: Factorization) -> Result<Vec<Tensor>> {
    let name = LinAlg::Factor {
        kind,
        batch: 0,
        m: 0,
        n: 0,
    }
    .name();
    let (batch, m, n) = match kind {
        Factorization::Qr { .. } | Factorization::Svd { .. } => matrices(name, t)?,
        _ => {
            let (batch, n) = square(name, t)?;
            (batch, n, n)
        }
    };
    let x = floating(t)?;
    let op = LinAlg::Factor {
        kind,
        batch: numel(&batch),
        m,
        n,
    };
    run_parts(op, &[&x], &batch, vector_parts(kind))
}

/// Each complex `[.., n, n]` matrix `a` as the real `[.., 2n, 2n]` one `[[re, -im], [im, re]]`:
/// `a·x = b` holds exactly when that matrix times `[re x; im x]` is `[re b; im b]`, so the
/// real solvers solve complex systems (twice the rows of one complex LU's work), composed,
/// so every backend and the gradient take them.
pub(super) fn real_embedding(a: &Tensor) -> Result<Tensor> {
    let (re, im) = (a.real()?, a.imag()?);
    let top = Tensor::concatenate(&[re.clone(), im.negate()?], -1)?;
    let bottom = Tensor::concatenate(&[im, re], -1)?;
    Tensor::concatenate(&[top, bottom], -2)
}

/// `[.., n, m]` complex columns as the real `[.., 2n, m]` ones `[re; im]`.
pub(super) fn stacked_parts(b: &Tensor) -> Result<Tensor> {
    Tensor::concatenate(&[b.real()?, b.imag()?], -2)
}

/// The inverse of [`stacked_parts`]: `[.., 2n, m]` real back to `[.., n, m]` complex.
pub(super) fn from_stacked_parts(x: &Tensor, n: usize) -> Result<Tensor> {
    let re = x.slice_along_axis(0, n, -2)?;
    let im = x.slice_along_axis(n, n, -2)?;
    re.complex(&im)
}
