//! Products: Nx's `dot` in its three forms (`dot`, `dot_axes`, `dot_general`: contraction
//! and batch axes), `outer`, and NumPy's `matmul` (batch dimensions that broadcast). Every
//! form lowers to the batched matrix-product kernel (`Op::Matmul`) after a transpose and a
//! reshape, or, where the left operand's contracted axes lead (`xᵀ·g`), to the product that
//! reads it transposed in place (`Op::TransposedMatmul`).

use crate::error::{Error, Result};
use crate::ir::{MatmulDims, Op};
use crate::session::resolve_device;
use crate::shape::names::{self, Name};
use crate::shape::{broadcast_shapes, check_shape, fmt_shape, normalize_axis, numel};
use crate::tensor::Tensor;

use super::run;

impl Tensor {
    /// Nx's `dot/2`: sums the products over the last axis of `self` and the second-to-last
    /// of `rhs` (its only axis when it is a vector), keeping every other axis: `[2,3]·[3,4]`
    /// is `[2,4]`, `[2,3,3]·[1,3,3]` is `[2,3,1,3]`. A scalar operand multiplies. For batches
    /// of matrices that broadcast, as NumPy's `@`, use [`Tensor::matmul`].
    pub fn dot(&self, rhs: &Tensor) -> Result<Tensor> {
        let (n, m) = (self.rank(), rhs.rank());
        if n == 0 || m == 0 {
            return self.multiply(rhs);
        }
        let (a, b) = (n - 1, m.saturating_sub(2));
        if self.shape()[a] != rhs.shape()[b] {
            return Err(contraction_mismatch(self, a, rhs, b));
        }
        match (n, m) {
            // Up to rank 2 on the right both products agree, and `matmul` avoids a transpose.
            (_, 1) | (1, 2) | (2, 2) => {
                let names = product_names(&self.names(), &[a], &rhs.names(), &[b]);
                names::check_unique("dot", &names)?;
                Ok(self.matmul(rhs)?.named(names))
            }
            _ => self.dot_axes(&[a as isize], rhs, &[b as isize]),
        }
    }

    /// Nx's `dot/4`: sums the products over `axes` of `self` paired in order with `rhs_axes`
    /// of `rhs`; the result has the remaining axes of `self`, then those of `rhs`. With no
    /// axes it is the outer product of the two shapes.
    pub fn dot_axes(&self, axes: &[isize], rhs: &Tensor, rhs_axes: &[isize]) -> Result<Tensor> {
        self.dot_general(axes, &[], rhs, rhs_axes, &[])
    }

    /// Nx's `dot/6` (XLA's `dot_general`): `dot_axes` computed independently for each entry of
    /// the batch axes, which must be the leading axes of both (`[0]`, `[0, 1]`, ...) with equal
    /// sizes. The result is the batch axes, then the free axes of `self`, then of `rhs`.
    pub fn dot_general(
        &self,
        axes: &[isize],
        batch_axes: &[isize],
        rhs: &Tensor,
        rhs_axes: &[isize],
        rhs_batch_axes: &[isize],
    ) -> Result<Tensor> {
        let plan = DotPlan::new(self, axes, batch_axes, rhs, rhs_axes, rhs_batch_axes)?;
        let dims =
            |t: &Tensor, axes: &[usize]| -> usize { axes.iter().map(|&a| t.shape()[a]).product() };
        let batch = dims(self, &plan.lhs_batch);
        let (free_l, contracted) = (dims(self, &plan.lhs_free), dims(self, &plan.lhs_contract));
        let free_r = dims(rhs, &plan.rhs_free);
        let lhs_order = [&plan.lhs_batch[..], &plan.lhs_free, &plan.lhs_contract].concat();
        let rhs_order = [&plan.rhs_batch[..], &plan.rhs_contract, &plan.rhs_free].concat();
        let right = arranged(rhs, &rhs_order, &[batch, contracted, free_r])?;
        // A left operand whose contracted axes come before its free ones (a weight gradient,
        // `dot(x, [0], g, [0])`) is read transposed where it lies rather than copied.
        let lhs_order_t = [&plan.lhs_batch[..], &plan.lhs_contract, &plan.lhs_free].concat();
        let product = if !in_order(&lhs_order) && in_order(&lhs_order_t) {
            self.reshape(&[batch, contracted, free_l])?
                .transposed_matmul(&right)?
        } else {
            arranged(self, &lhs_order, &[batch, free_l, contracted])?.matmul(&right)?
        };
        let mut shape: Vec<usize> = plan.lhs_batch.iter().map(|&a| self.shape()[a]).collect();
        shape.extend(plan.lhs_free.iter().map(|&a| self.shape()[a]));
        shape.extend(plan.rhs_free.iter().map(|&a| rhs.shape()[a]));
        let lhs_gone = [&plan.lhs_batch[..], &plan.lhs_contract].concat();
        let rhs_gone = [&plan.rhs_batch[..], &plan.rhs_contract].concat();
        let mut names: Vec<Name> = plan
            .lhs_batch
            .iter()
            .map(|&a| self.names()[a].clone())
            .collect();
        names.extend(product_names(
            &self.names(),
            &lhs_gone,
            &rhs.names(),
            &rhs_gone,
        ));
        names::check_unique("dot", &names)?;
        Ok(product.reshape(&shape)?.named(names))
    }

    /// `selfᵀ·rhs` per batch entry for `self` of `[batch, k, m]` and `rhs` of `[batch, k, n]`:
    /// `[batch, m, n]`, with `self` read transposed where it lies (`Op::TransposedMatmul`).
    /// Both operands already arranged by the caller (`dot_general`, the gradient of `dot`).
    pub(crate) fn transposed_matmul(&self, rhs: &Tensor) -> Result<Tensor> {
        let (&[batch, k, m], &[batch_r, k_r, n]) = (self.shape(), rhs.shape()) else {
            return Err(Error::InvalidArgument {
                op: "dot",
                message: format!(
                    "internal: a transposed product of {} and {}",
                    fmt_shape(self.shape()),
                    fmt_shape(rhs.shape())
                ),
            });
        };
        if batch != batch_r || k != k_r {
            return Err(contraction_mismatch(self, 1, rhs, 1));
        }
        let device = resolve_device("dot", None, &[self, rhs])?;
        let dtype = self.dtype().promote(rhs.dtype());
        let shape = vec![batch, m, n];
        check_shape("dot", &shape, dtype)?;
        let a = self.prepared(dtype, device)?;
        let b = rhs.prepared(dtype, device)?;
        let kernel = Op::TransposedMatmul(MatmulDims {
            lhs_batch_stride: k.saturating_mul(m),
            rhs_batch_stride: k.saturating_mul(n),
            batch,
            m,
            k,
            n,
        });
        run(device, kernel, &[&a, &b], shape)
    }

    /// Nx's `outer`: every element of `self` (flattened) times every element of `rhs`, as a
    /// `[size of self, size of rhs]` matrix.
    pub fn outer(&self, rhs: &Tensor) -> Result<Tensor> {
        let column = self.reshape(&[self.size(), 1])?;
        // As Nx: the first name of the left and the last of the right.
        let names = vec![
            self.names().first().cloned().flatten(),
            rhs.names().last().cloned().flatten(),
        ];
        Ok(column
            .multiply(&rhs.reshape(&[1, rhs.size()])?)?
            .named(names))
    }

    /// NumPy's `matmul` (`@`): 1-D·1-D is the inner product, 2-D·2-D the matrix product, and
    /// higher ranks are batches of matrices whose batch dimensions broadcast (`[8,1,4,5]` @
    /// `[3,5,6]` is `[8,3,4,6]`). A scalar operand multiplies. Nx's own product is
    /// [`Tensor::dot`].
    pub fn matmul(&self, rhs: &Tensor) -> Result<Tensor> {
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

/// The axes of a `dot_general`, checked as Nx checks them and split into batch, contracted
/// and free axes of each side (free axes in their own order).
struct DotPlan {
    lhs_batch: Vec<usize>,
    lhs_contract: Vec<usize>,
    lhs_free: Vec<usize>,
    rhs_batch: Vec<usize>,
    rhs_contract: Vec<usize>,
    rhs_free: Vec<usize>,
}

impl DotPlan {
    fn new(
        lhs: &Tensor,
        axes: &[isize],
        batch_axes: &[isize],
        rhs: &Tensor,
        rhs_axes: &[isize],
        rhs_batch_axes: &[isize],
    ) -> Result<DotPlan> {
        let invalid = |message: String| Error::InvalidArgument { op: "dot", message };
        let listed = |t: &Tensor, axes: &[isize]| -> Result<Vec<usize>> {
            axes.iter()
                .map(|&a| normalize_axis("dot", a, t.shape()))
                .collect()
        };
        let (lc, lb) = (listed(lhs, axes)?, listed(lhs, batch_axes)?);
        let (rc, rb) = (listed(rhs, rhs_axes)?, listed(rhs, rhs_batch_axes)?);
        match (lb.is_empty(), rb.is_empty()) {
            (true, false) => {
                return Err(invalid(
                    "left tensor must be batched if right tensor is batched".into(),
                ))
            }
            (false, true) => {
                return Err(invalid(
                    "right tensor must be batched if left tensor is batched".into(),
                ))
            }
            _ => {}
        }
        let leading: Vec<usize> = (0..lb.len()).collect();
        for (side, batch) in [("left", &lb), ("right", &rb)] {
            if !batch.is_empty() && *batch != leading {
                return Err(invalid(format!(
                    "invalid dot batch axis for the {side} tensor, batch axes must be successive dimensions starting from 0, got {batch:?}"
                )));
            }
        }
        let sizes = |t: &Tensor, axes: &[usize]| -> Vec<usize> {
            axes.iter().map(|&a| t.shape()[a]).collect()
        };
        if sizes(lhs, &lb) != sizes(rhs, &rb) {
            return Err(Error::ShapeMismatch {
                op: "dot",
                lhs: lhs.shape().to_vec(),
                rhs: rhs.shape().to_vec(),
                reason: format!(
                    "batch axes {lb:?} of the left have sizes {:?}, batch axes {rb:?} of the right {:?}",
                    sizes(lhs, &lb),
                    sizes(rhs, &rb)
                ),
            });
        }
        for (side, batch, contract) in [("left", &lb, &lc), ("right", &rb, &rc)] {
            if batch.iter().any(|a| contract.contains(a)) {
                return Err(invalid(format!(
                    "dot batch axes for {side} tensor ({batch:?}) cannot be in contract axes ({contract:?})"
                )));
            }
            let mut seen = contract.to_vec();
            seen.sort_unstable();
            if seen.windows(2).any(|w| w[0] == w[1]) {
                return Err(invalid(format!(
                    "the {side} contract axes {contract:?} name the same axis twice"
                )));
            }
        }
        if lc.len() != rc.len() {
            return Err(invalid(format!(
                "the left contracts {} axes ({lc:?}) and the right {} ({rc:?}); they pair in order",
                lc.len(),
                rc.len()
            )));
        }
        for (&a, &b) in lc.iter().zip(&rc) {
            if lhs.shape()[a] != rhs.shape()[b] {
                return Err(contraction_mismatch(lhs, a, rhs, b));
            }
        }
        let free = |rank: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
            (0..rank)
                .filter(|a| !batch.contains(a) && !contract.contains(a))
                .collect()
        };
        Ok(DotPlan {
            lhs_free: free(lhs.rank(), &lb, &lc),
            rhs_free: free(rhs.rank(), &rb, &rc),
            lhs_batch: lb,
            lhs_contract: lc,
            rhs_batch: rb,
            rhs_contract: rc,
        })
    }
}

/// The names of a product's free axes: the left's without `lhs_gone`, then the right's without
/// `rhs_gone` (the caller checks the whole list for Nx's duplicate-names error).
fn product_names(lhs: &[Name], lhs_gone: &[usize], rhs: &[Name], rhs_gone: &[usize]) -> Vec<Name> {
    let free = |names: &[Name], gone: &[usize]| -> Vec<Name> {
        names
            .iter()
            .enumerate()
            .filter(|(i, _)| !gone.contains(i))
            .map(|(_, n)| n.clone())
            .collect()
    };
    let mut out = free(lhs, lhs_gone);
    out.extend(free(rhs, rhs_gone));
    out
}

/// Nx's words for contracted axes of different lengths.
fn contraction_mismatch(lhs: &Tensor, a: usize, rhs: &Tensor, b: usize) -> Error {
    Error::ShapeMismatch {
        op: "dot",
        lhs: lhs.shape().to_vec(),
        rhs: rhs.shape().to_vec(),
        reason: format!(
            "dimension {a} of left-side ({}) does not equal dimension {b} of right-side ({})",
            lhs.shape()[a],
            rhs.shape()[b]
        ),
    }
}

/// Whether `order` leaves every axis where it is.
fn in_order(order: &[usize]) -> bool {
    order.iter().enumerate().all(|(i, &a)| i == a)
}

/// `t` with its axes in `order` (no copy when they already are), viewed as `shape`.
fn arranged(t: &Tensor, order: &[usize], shape: &[usize]) -> Result<Tensor> {
    let moved = if in_order(order) {
        t.clone()
    } else {
        t.transpose(order)?
    };
    moved.reshape(shape)
}
