//! The matrix product (`dot`), with NumPy `matmul`'s batching and broadcasting.

use crate::error::{Error, Result};
use crate::ir::{MatmulDims, Op};
use crate::session::resolve_device;
use crate::shape::{broadcast_shapes, check_shape, fmt_shape, numel};
use crate::tensor::Tensor;

use super::run;

impl Tensor {
    /// Matrix product with NumPy `matmul` semantics: 1-D·1-D is the inner product, 2-D·2-D the
    /// matrix product, and higher ranks are batches of matrices whose batch dimensions
    /// broadcast. A scalar operand multiplies.
    pub fn dot(&self, rhs: &Tensor) -> Result<Tensor> {
        if self.rank() == 0 || rhs.rank() == 0 {
            return self.multiply(rhs);
        }
        let device = resolve_device("dot", None, &[self, rhs])?;
        let dtype = self.dtype().promote(rhs.dtype());
        let a_shape: Vec<usize> = if self.rank() == 1 {
            vec![1, self.shape()[0]]
        } else {
            self.shape().to_vec()
        };
        let b_shape: Vec<usize> = if rhs.rank() == 1 {
            vec![rhs.shape()[0], 1]
        } else {
            rhs.shape().to_vec()
        };
        let (ra, rb) = (a_shape.len(), b_shape.len());
        let (m, k) = (a_shape[ra - 2], a_shape[ra - 1]);
        let (k2, n) = (b_shape[rb - 2], b_shape[rb - 1]);
        if k != k2 {
            return Err(Error::ShapeMismatch {
                op: "dot",
                lhs: self.shape().to_vec(),
                rhs: rhs.shape().to_vec(),
                reason: format!(
                    "the contracted axes differ: {k} (last axis of the left) vs {k2} ({} of the right)",
                    if rhs.rank() == 1 { "only axis" } else { "second-to-last axis" }
                ),
            });
        }
        let batch = broadcast_shapes("dot", &a_shape[..ra - 2], &b_shape[..rb - 2])?;
        let mut shape = batch.clone();
        if self.rank() > 1 {
            shape.push(m);
        }
        if rhs.rank() > 1 {
            shape.push(n);
        }
        // Two empty operands can have a product that is not empty ([2^31,0]·[0,2^31]).
        check_shape("dot", &shape, dtype)?;
        let mut full = batch.clone();
        full.extend([m, n]);
        check_shape("dot", &full, dtype)?;
        let a = self.prepared(dtype, device)?.with_shape(a_shape);
        let b = rhs.prepared(dtype, device)?.with_shape(b_shape);
        let (a, sa) = batch_operand(a, &batch, [m, k])?;
        let (b, sb) = batch_operand(b, &batch, [k, n])?;
        let kernel = Op::Matmul(MatmulDims {
            lhs_batch_stride: sa,
            rhs_batch_stride: sb,
            batch: numel(&batch),
            m,
            k,
            n,
        });
        run(device, kernel, &[&a, &b], shape)
    }
}

/// Lays out one operand of a batched product as `batch` matrices: returns the tensor and the
/// distance between consecutive matrices (0 when one matrix serves every batch entry).
fn batch_operand(t: Tensor, batch: &[usize], mat: [usize; 2]) -> Result<(Tensor, usize)> {
    let own_batch = &t.shape()[..t.rank() - 2];
    if numel(own_batch) == 1 {
        return Ok((t, 0));
    }
    let stride = mat[0].saturating_mul(mat[1]);
    if own_batch == batch {
        return Ok((t, stride));
    }
    let mut full = batch.to_vec();
    full.extend_from_slice(&mat);
    let b = t.broadcast(&full).map_err(|_| Error::ShapeMismatch {
        op: "dot",
        lhs: t.shape().to_vec(),
        rhs: full.clone(),
        reason: format!("batch dimensions {} do not broadcast", fmt_shape(own_batch)),
    })?;
    Ok((b, stride))
}
