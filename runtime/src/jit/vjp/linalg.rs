//! The gradients of the factorisations and the triangular solve.

use crate::error::{Error, Result};
use crate::ir::LinAlg;
use crate::tensor::Tensor;

use super::Site;

pub(super) fn linalg(op: &LinAlg, _site: &Site<'_>, _g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    Err(Error::InvalidArgument {
        op: op.name(),
        message: "no gradient yet".into(),
    })
}
