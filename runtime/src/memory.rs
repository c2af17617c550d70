//! `Memory`: where a tensor's elements are. The CPU backends (binary, host) keep a [`Buffer`] in
//! host memory; the cuda backend keeps a [`CudaBuffer`] on one GPU; the simulated accelerator a
//! [`SimBuffer`] that only its own queue can read. Reading values, transfers and the display go
//! through the owning backend's half of the contract (download, gather, sync), so they work the
//! same whatever the placement.

use std::borrow::Cow;

use crate::backend::cuda::CudaBuffer;
use crate::backend::sim::SimBuffer;
use crate::backend::{self, for_memory};
use crate::buffer::Buffer;
use crate::device::{Device, MemoryKind};
use crate::dtype::DType;
use crate::error::Result;

/// A tensor's elements, row-major, in the memory of the device that owns them.
#[derive(Debug)]
pub enum Memory {
    /// Host memory (binary and host devices).
    Host(Buffer),
    /// Memory on a cuda device.
    Cuda(CudaBuffer),
    /// Memory of a simulated accelerator.
    Sim(SimBuffer),
    /// A placeholder's: a node of a graph `jit` is tracing (no values yet).
    Traced(crate::jit::trace::TracedMemory),
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
        backend::for_device(device)?.upload(device, buffer)
    }

    /// Which memory this is.
    pub fn kind(&self) -> MemoryKind {
        match self {
            Memory::Host(_) => MemoryKind::Host,
            Memory::Cuda(c) => MemoryKind::Cuda(c.ordinal()),
            Memory::Sim(s) => MemoryKind::Sim(s.device_id()),
            Memory::Traced(t) => t.kind(),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Memory::Host(b) => b.dtype(),
            Memory::Cuda(c) => c.dtype(),
            Memory::Sim(s) => s.dtype(),
            Memory::Traced(t) => t.dtype(),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Memory::Host(b) => b.len(),
            Memory::Cuda(c) => c.len(),
            Memory::Sim(s) => s.len(),
            Memory::Traced(t) => t.len(),
        }
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        for_memory(self).download(self)
    }

    /// The elements at `indices` (row-major positions), in that order. On a device only these
    /// elements cross to the host: the display of a large tensor stays cheap.
    pub fn gather(&self, indices: &[usize]) -> Result<Buffer> {
        for_memory(self).gather(self, indices)
    }

    /// Waits for the work that produces these elements (a no-op in host memory).
    pub fn sync(&self) -> Result<()> {
        for_memory(self).sync(self)
    }
}
