//! `Memory`: where a tensor's elements are, one variant per kind of backend buffer (candle's
//! `Storage`), and the routing from it to the backend that owns them. The CPU backends (binary,
//! host) keep a [`Buffer`] in host memory; the cuda backend keeps a [`CudaBuffer`] on one GPU;
//! the simulated accelerator a [`SimBuffer`] that only its own queue can read.
//!
//! [`dispatch`] is the one placement check: matching the inputs' variants against the device
//! is what hands each backend its own buffer type, so a backend cannot receive another's.

use std::borrow::Cow;

use crate::backend::binary::BinaryBackend;
use crate::backend::cuda::{CudaBackend, CudaBuffer};
use crate::backend::host::HostBackend;
use crate::backend::sim::{SimBackend, SimBuffer};
use crate::backend::Backend;
use crate::buffer::Buffer;
use crate::device::{Client, Device, MemoryKind};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::Op;

/// A tensor's elements, row-major, in the memory of the device that owns them.
#[derive(Debug)]
pub enum Memory {
    /// Host memory (binary and host devices).
    Host(Buffer),
    /// Memory on a cuda device.
    Cuda(CudaBuffer),
    /// Memory of a simulated accelerator.
    Sim(SimBuffer),
}

/// Large host buffers go to [`crate::buffer_pool`] for the next tensor of their size.
impl Drop for Memory {
    fn drop(&mut self) {
        if let Memory::Host(b) = self {
            crate::buffer_pool::give(std::mem::replace(
                b,
                Buffer::U8(crate::host_vec::HostVec::new()),
            ));
        }
    }
}

impl Memory {
    /// Puts the host elements of a tensor where `device` keeps its memory (an upload for an
    /// accelerator).
    pub fn place(buffer: Buffer, device: Device) -> Result<Memory> {
        Ok(match device.client {
            Client::Binary => Memory::Host(BinaryBackend.upload(device, buffer)?),
            Client::Host => Memory::Host(HostBackend.upload(device, buffer)?),
            Client::Cuda => Memory::Cuda(CudaBackend.upload(device, buffer)?),
            Client::Sim => Memory::Sim(SimBackend.upload(device, buffer)?),
        })
    }

    /// Which memory this is.
    pub fn kind(&self) -> MemoryKind {
        match self {
            Memory::Host(_) => MemoryKind::Host,
            Memory::Cuda(c) => MemoryKind::Cuda(c.ordinal()),
            Memory::Sim(s) => MemoryKind::Sim(s.device_id()),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Memory::Host(b) => b.dtype(),
            Memory::Cuda(c) => c.dtype(),
            Memory::Sim(s) => s.dtype(),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Memory::Host(b) => b.len(),
            Memory::Cuda(c) => c.len(),
            Memory::Sim(s) => s.len(),
        }
    }

    /// The host buffer, when the elements are in host memory.
    pub fn as_host(&self) -> Option<&Buffer> {
        match self {
            Memory::Host(b) => Some(b),
            _ => None,
        }
    }

    /// Every element in host memory: borrowed when already there, otherwise copied from the
    /// device once the work that produces it has finished.
    pub fn to_host(&self) -> Result<Cow<'_, Buffer>> {
        match self {
            Memory::Host(b) => HostBackend.download(b),
            Memory::Cuda(c) => CudaBackend.download(c),
            Memory::Sim(s) => SimBackend.download(s),
        }
    }

    /// The elements at `indices` (row-major positions), in that order. On a device only these
    /// elements cross to the host: the display of a large tensor stays cheap.
    pub fn gather(&self, indices: &[usize]) -> Result<Buffer> {
        match self {
            Memory::Host(b) => HostBackend.gather(b, indices),
            Memory::Cuda(c) => CudaBackend.gather(c, indices),
            Memory::Sim(s) => SimBackend.gather(s, indices),
        }
    }

    /// Waits for the work that produces these elements (a no-op in host memory).
    pub fn sync(&self) -> Result<()> {
        match self {
            Memory::Host(b) => HostBackend.sync(b),
            Memory::Cuda(c) => CudaBackend.sync(c),
            Memory::Sim(s) => SimBackend.sync(s),
        }
    }

    /// A copy in the memory of device `to`: the owning backend's own path between two of its
    /// devices, otherwise through host memory.
    pub fn copy_to(&self, to: Device) -> Result<Memory> {
        match (self, to.client) {
            (Memory::Cuda(c), Client::Cuda) => Ok(Memory::Cuda(CudaBackend.copy(c, to)?)),
            (Memory::Sim(s), Client::Sim) => Ok(Memory::Sim(SimBackend.copy(s, to)?)),
            _ => Memory::place(crate::allocate::owned(self.to_host()?)?, to),
        }
    }
}

/// The elementwise sum of `parts` (one per device, distinct devices of one backend) left on
/// each of their devices, through the backend's collective library; `None` when there is none
/// for them, and the caller reduces through copies and [`dispatch`]. Only cuda has one
/// (NCCL between GPUs): the other backends keep `Backend::all_reduce_sum`'s default.
pub fn all_reduce_sum(parts: &[&Memory]) -> Result<Option<Vec<Memory>>> {
    let cuda: Option<Vec<&CudaBuffer>> = parts
        .iter()
        .map(|m| match m {
            Memory::Cuda(c) => Some(c),
            _ => None,
        })
        .collect();
    let Some(buffers) = cuda else {
        return Ok(None);
    };
    let summed = CudaBackend.all_reduce_sum(&buffers)?;
    Ok(summed.map(|v| v.into_iter().map(Memory::Cuda).collect()))
}

/// Runs `op` on `device`: the one place where placement is checked. Every input must be
/// memory of `device`; a stray one is a typed [`Error::Placement`] naming the op, the device
/// and the memory found (a frontend bug: weak operands are moved before they get here).
pub fn dispatch(device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory> {
    // Every operation passes here: the safe point where an interrupted cell stops.
    crate::interrupt::check()?;
    if inputs.len() != op.arity() {
        return Err(Error::InvalidArgument {
            op: op.name(),
            message: format!(
                "internal: {} inputs given, {} expected",
                inputs.len(),
                op.arity()
            ),
        });
    }
    // Before any route: the wide one runs casts first, which would otherwise report a stray
    // operand as theirs.
    if let Some(stray) = inputs.iter().find(|m| m.kind() != device.memory_kind()) {
        return Err(stray_error(op, device, stray));
    }
    if device.client == Client::Cuda && touches_complex(op, inputs) {
        return through_host(device, op, inputs);
    }
    if let Some(half) = half_operands(op, inputs)? {
        if !computes_halves(device, op, inputs) {
            return through_wide(device, op, inputs, half);
        }
    }
    execute(device, op, inputs)
}

/// True when `device`'s backend computes `op` on half operands in one pass of its own (host's
/// elementwise ops), rounding as the wide route does.
fn computes_halves(device: Device, op: &Op, inputs: &[&Memory]) -> bool {
    if device.client != Client::Host {
        return false;
    }
    let buffers: Option<Vec<&Buffer>> = inputs
        .iter()
        .map(|m| match m {
            Memory::Host(b) => Some(b),
            _ => None,
        })
        .collect();
    buffers.is_some_and(|b| HostBackend::computes_halves(op, &b))
}

/// The half dtype (bf16 or f16) an op computes on, if any. Casts convert halves themselves;
/// every other op with a half operand computes through a wider float.
fn half_operands(op: &Op, inputs: &[&Memory]) -> Result<Option<DType>> {
    if matches!(op, Op::Cast(_)) {
        return Ok(None);
    }
    let mut halves = inputs.iter().map(|m| m.dtype()).filter(|d| d.is_half());
    let Some(half) = halves.next() else {
        return Ok(None);
    };
    if let Some(other) = halves.find(|&d| d != half) {
        return Err(Error::InvalidArgument {
            op: op.name(),
            message: format!("internal: operands of {half} and {other} meet unpromoted"),
        });
    }
    if matches!(op, Op::Fused(_)) {
        return Err(Error::InvalidArgument {
            op: op.name(),
            message: format!("internal: a fused region was given {half} operands"),
        });
    }
    Ok(Some(half))
}

/// Runs `op` on half operands as Nx's backends and XLA do on CPUs: each half operand widened
/// (exactly) to f32, f64 on `binary` so the reference rounds once per op, the op computed
/// there (sums and products accumulate in the wide type), and a wide result rounded back to
/// `half` to nearest even. Results of other dtypes (comparisons, indices) are the op's own.
fn through_wide(device: Device, op: &Op, inputs: &[&Memory], half: DType) -> Result<Memory> {
    let wide = if device.client == Client::Binary {
        DType::F64
    } else {
        DType::F32
    };
    let widened = inputs
        .iter()
        .map(|&m| {
            (m.dtype() == half)
                .then(|| execute(device, &Op::Cast(wide), &[m]))
                .transpose()
        })
        .collect::<Result<Vec<Option<Memory>>>>()?;
    let refs: Vec<&Memory> = widened
        .iter()
        .zip(inputs)
        .map(|(w, &m)| w.as_ref().unwrap_or(m))
        .collect();
    let out = execute(device, op, &refs)?;
    if out.dtype() == wide {
        execute(device, &Op::Cast(half), &[&out])
    } else {
        Ok(out)
    }
}

/// True when `op` reads or writes c64 or c128 values.
fn touches_complex(op: &Op, inputs: &[&Memory]) -> bool {
    inputs.iter().any(|m| m.dtype().is_complex())
        || matches!(op, Op::Cast(to) if to.is_complex())
        || matches!(op, Op::Fft(_))
}

/// Runs `op` for an accelerator with no kernels for it (the GPU's for complex values, until
/// they are written): the inputs downloaded, host's kernels run, the result uploaded back.
/// Slower than the device, never wrong, and the result stays where the operands were.
fn through_host(device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory> {
    let buffers = inputs
        .iter()
        .map(|m| m.to_host())
        .collect::<Result<Vec<Cow<'_, Buffer>>>>()?;
    let refs: Vec<&Buffer> = buffers.iter().map(|b| b.as_ref()).collect();
    let out = HostBackend.execute(Device::host(0), op, &refs)?;
    Memory::place(out, device)
}

/// The placement error for `found`, an input of `op` that is not memory of `device`.
fn stray_error(op: &Op, device: Device, found: &Memory) -> Error {
    Error::Placement {
        op: op.name(),
        device,
        found: found.kind().to_string(),
    }
}

/// [`dispatch`] past its checks: each input as the device's own buffer type, and the
/// backend's execute.
fn execute(device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory> {
    let stray = |m: &Memory| stray_error(op, device, m);
    match device.client {
        Client::Binary | Client::Host => {
            let buffers = own(inputs, stray, |m| match m {
                Memory::Host(b) => Some(b),
                _ => None,
            })?;
            let out = if device.client == Client::Binary {
                BinaryBackend.execute(device, op, &buffers)?
            } else {
                HostBackend.execute(device, op, &buffers)?
            };
            Ok(Memory::Host(out))
        }
        Client::Cuda => {
            let buffers = own(inputs, stray, |m| match m {
                Memory::Cuda(c) => Some(c),
                _ => None,
            })?;
            Ok(Memory::Cuda(CudaBackend.execute(device, op, &buffers)?))
        }
        Client::Sim => {
            let buffers = own(inputs, stray, |m| match m {
                Memory::Sim(s) => Some(s),
                _ => None,
            })?;
            Ok(Memory::Sim(SimBackend.execute(device, op, &buffers)?))
        }
    }
}

/// Each input's buffer of the device's kind, or the error naming the first that is not.
fn own<'a, B>(
    inputs: &[&'a Memory],
    stray: impl Fn(&Memory) -> Error,
    pick: impl Fn(&'a Memory) -> Option<&'a B>,
) -> Result<Vec<&'a B>> {
    inputs
        .iter()
        .map(|&m| pick(m).ok_or_else(|| stray(m)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{BinaryOp, Strided};

    /// A stray operand is the op's placement error, on every route: the wide route for half
    /// operands runs casts first, which must not take the error as theirs.
    #[test]
    fn a_stray_half_operand_is_the_ops_own_placement_error() {
        let x = Memory::Host(Buffer::F16(vec![half::f16::ONE; 2].into()));
        let op = Op::Binary {
            op: BinaryOp::Add,
            lhs: Strided::contiguous(&[2]),
            rhs: Strided::contiguous(&[2]),
            out_shape: vec![2],
        };
        let e = dispatch(Device::sim(0), &op, &[&x, &x]).unwrap_err();
        assert!(
            matches!(&e, Error::Placement { op: "add", found, .. } if found == "host memory"),
            "{e:?}"
        );
    }
}
