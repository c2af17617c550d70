//! `Memory`: where a tensor's elements are. The CPU backends (binary, host) keep a [`Buffer`] in
//! host memory; the cuda backend keeps a [`CudaBuffer`] on one GPU. Reading values, transfers
//! and the display go through here, so they work the same whatever the placement.

use std::borrow::Cow;

use crate::backend::cuda::{self, CudaBuffer};
use crate::buffer::Buffer;
use crate::device::{Client, Device};
use crate::dtype::DType;
use crate::error::Result;

/// A tensor's elements, row-major, in the memory of the device that owns them.
#[derive(Debug)]
pub enum Memory {
    /// Host memory (binary and host devices).
    Host(Buffer),
    /// Memory on a cuda device.
    Cuda(CudaBuffer),
}

impl Memory {
    /// Puts the host elements of a tensor of `shape` where `device` keeps its memory (an
    /// upload for cuda).
    pub fn place(buffer: Buffer, shape: &[usize], device: Device) -> Result<Memory> {
        match device.client {
            Client::Binary | Client::Host => Ok(Memory::Host(buffer)),
            Client::Cuda => Ok(Memory::Cuda(cuda::upload(&buffer, shape, device.id)?)),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Memory::Host(b) => b.dtype(),
            Memory::Cuda(c) => c.dtype(),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Memory::Host(b) => b.len(),
            Memory::Cuda(c) => c.len(),
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
            Memory::Cuda(_) => None,
        }
    }

    /// Every element in host memory: borrowed when already there, otherwise copied from the
    /// device once the work that produces it has finished.
    pub fn to_host(&self) -> Result<Cow<'_, Buffer>> {
        match self {
            Memory::Host(b) => Ok(Cow::Borrowed(b)),
            Memory::Cuda(c) => Ok(Cow::Owned(cuda::download(c)?)),
        }
    }

    /// The elements at `indices` (row-major positions), in that order. On a device only these
    /// elements cross to the host: the display of a large tensor stays cheap.
    pub fn gather(&self, indices: &[usize]) -> Result<Buffer> {
        match self {
            Memory::Host(b) => Ok(b.gather(indices)),
            Memory::Cuda(c) => cuda::gather(c, indices),
        }
    }

    /// Waits for the work that produces these elements (a no-op in host memory).
    pub fn sync(&self) -> Result<()> {
        match self {
            Memory::Host(_) => Ok(()),
            Memory::Cuda(c) => cuda::sync(c),
        }
    }
}
