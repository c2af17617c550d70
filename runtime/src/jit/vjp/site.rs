//! What a gradient rule sees of the op it differentiates, and the error for a broken trace.

use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// What a rule may read: the forward values of the op's inputs and of its result, as
/// placeholders of the trace, and which inputs want a gradient.
pub(crate) struct Site<'a> {
    /// The op's inputs, each with its node's shape.
    pub inputs: &'a [Tensor],
    /// The op's result, with the node's shape.
    pub result: &'a Tensor,
    /// For each input: does a gradient have to flow there?
    pub wanted: &'a [bool],
    /// Where the op ran.
    pub device: Device,
}

impl Site<'_> {
    pub(super) fn input(&self, i: usize) -> Result<&Tensor> {
        self.inputs
            .get(i)
            .ok_or_else(|| internal(format!("input {i} missing")))
    }

    pub(super) fn wants(&self, i: usize) -> bool {
        self.wanted.get(i).copied().unwrap_or(false)
    }

    pub(super) fn zeros(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        on(self.device).zeros(dtype, shape)
    }
}

pub(crate) fn internal(message: impl Into<String>) -> Error {
    Error::InvalidArgument {
        op: "grad",
        message: format!("internal: {}", message.into()),
    }
}
