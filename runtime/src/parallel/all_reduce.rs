//! The all-reduce: one value per device in, their sum (or mean) on every one of those devices
//! out, as NCCL's `ncclAllReduce` and XLA's `all-reduce`.
//!
//! It goes through the backend contract: a backend's collective library where it has one
//! (`Backend::all_reduce_sum`: NCCL between GPUs), otherwise the values are copied to the first
//! device (device to device where the backend can copy directly, as sim does; through host
//! memory otherwise), summed there with the op set, and copied back. Devices that read the same
//! memory (binary and the host devices) share one sum instead of copying it.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::jit::is_placeholder;
use crate::memory::{self, Memory};
use crate::tensor::Tensor;

/// How an all-reduce combines the devices' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reduction {
    /// The elementwise sum.
    Sum,
    /// The elementwise mean (float dtypes).
    Mean,
}

/// The sum or mean of `parts` (one tensor per device, distinct devices, one dtype and shape),
/// returned once per device, each on its part's device, in the order given.
///
/// ```
/// use tensorbook::{all_reduce, on, set_host_device_count, DType, Device, Reduction};
/// set_host_device_count(2)?;
/// let a = on(Device::host(0)).iota(DType::F32, &[3], None)?;
/// let b = on(Device::host(1)).iota(DType::F32, &[3], None)?.multiply(3.0)?;
/// let both = all_reduce(&[a, b], Reduction::Mean)?;
/// assert_eq!(both[1].to_vec::<f32>()?, vec![0.0, 2.0, 4.0]);
/// assert_eq!(both[1].device(), Device::host(1));
/// # Ok::<(), tensorbook::Error>(())
/// ```
pub fn all_reduce(parts: &[Tensor], reduction: Reduction) -> Result<Vec<Tensor>> {
    let first = check_parts(parts, reduction)?;
    if parts.len() == 1 {
        return Ok(parts.to_vec());
    }
    let scale = match reduction {
        Reduction::Sum => None,
        Reduction::Mean => Some(1.0 / parts.len() as f64),
    };
    let memories = parts
        .iter()
        .map(Tensor::memory)
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Memory> = memories.iter().map(|m| &**m).collect();
    if let Some(summed) = memory::all_reduce_sum(&refs)? {
        let mut out = Vec::with_capacity(parts.len());
        for (memory, part) in summed.into_iter().zip(parts) {
            let sum = Tensor::from_memory(memory, first.shape().to_vec(), part.device())?;
            out.push(match scale {
                Some(s) => sum.multiply(s)?,
                None => sum,
            });
        }
        return Ok(out);
    }
    through_copies(parts, scale)
}

/// The parts checked: one dtype and shape, distinct usable devices, concrete values.
fn check_parts(parts: &[Tensor], reduction: Reduction) -> Result<&Tensor> {
    let first = parts.first().ok_or_else(|| Error::InvalidArgument {
        op: "all_reduce",
        message: "no tensors given: one per device is needed".into(),
    })?;
    for (i, part) in parts.iter().enumerate() {
        if is_placeholder(part) {
            return Err(Error::InvalidArgument {
                op: "all_reduce",
                message: format!(
                    "{} is a placeholder of a jit trace: an all-reduce combines the results of \
                     compiled calls (see data_parallel), it cannot be traced",
                    part.signature()
                ),
            });
        }
        if part.dtype() != first.dtype() || part.shape() != first.shape() {
            return Err(Error::InvalidArgument {
                op: "all_reduce",
                message: format!(
                    "every device's value must have one dtype and shape: {} and {}",
                    first.signature(),
                    part.signature()
                ),
            });
        }
        if parts[..i].iter().any(|p| p.device() == part.device()) {
            return Err(Error::InvalidArgument {
                op: "all_reduce",
                message: format!(
                    "two values are on {}: give one value per device",
                    part.device()
                ),
            });
        }
        part.value()?;
    }
    if reduction == Reduction::Mean && !first.dtype().is_float() {
        return Err(Error::UnsupportedDType {
            op: "all_reduce (mean)",
            dtype: first.dtype(),
        });
    }
    Ok(first)
}

/// Every part copied to the first device, summed there, and the sum copied back.
fn through_copies(parts: &[Tensor], scale: Option<f64>) -> Result<Vec<Tensor>> {
    let home: Device = parts[0].device();
    let mut sum = parts[0].clone();
    for part in &parts[1..] {
        sum = sum.add(&part.to_device(home)?)?;
    }
    if let Some(s) = scale {
        sum = sum.multiply(s)?;
    }
    parts.iter().map(|p| sum.to_device(p.device())).collect()
}
