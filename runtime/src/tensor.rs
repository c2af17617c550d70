//! `Tensor`: an immutable, dynamically typed n-dimensional array that knows where it lives.
//! Cloning is cheap (the buffer is shared); `deallocate` and `backend_transfer` free the buffer
//! for every clone, as freeing a device buffer does in EXLA.

use std::sync::{Arc, RwLock};

use crate::buffer::Buffer;
use crate::client::check_device;
use crate::device::Device;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::jit::graph::Placeholder;
use crate::memory::Memory;
use crate::shape::names::{fmt_named_shape, Name};
use crate::shape::numel;

/// What a tensor holds: its elements in memory, or, inside a `jit` trace, a placeholder for
/// the node of the graph that will compute them. Placeholders live here, above memory, so
/// that memory, and with it every backend, only ever sees concrete elements.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// Elements in the memory of the tensor's device.
    Memory(Arc<Memory>),
    /// A node of a graph being traced (no elements yet).
    Placeholder(Arc<Placeholder>),
}

impl Value {
    /// The memory, for a concrete value.
    pub(crate) fn memory(&self) -> Option<&Memory> {
        match self {
            Value::Memory(m) => Some(m),
            Value::Placeholder(_) => None,
        }
    }

    fn kind(&self) -> crate::device::MemoryKind {
        match self {
            Value::Memory(m) => m.kind(),
            Value::Placeholder(p) => p.kind(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Value::Memory(m) => m.len(),
            Value::Placeholder(p) => p.len(),
        }
    }

    fn dtype(&self) -> DType {
        match self {
            Value::Memory(m) => m.dtype(),
            Value::Placeholder(p) => p.dtype(),
        }
    }
}

/// A tensor's value and the device it belongs to.
#[derive(Debug)]
pub(crate) struct Storage {
    device: Device,
    memory: RwLock<Option<Value>>,
}

/// An n-dimensional array with a runtime dtype, shape and placement. `Debug` and `Display`
/// both print the Nx form (see `display.rs`).
#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    shape: Vec<usize>,
    dtype: DType,
    /// The axes' names (Nx's `names:`), one per axis; `None` while every axis is unnamed.
    names: Option<Arc<[Name]>>,
}

impl Tensor {
    /// Wraps memory already computed on `device`. Its length must match the shape and it must
    /// be memory of `device` (the backend contract); a mismatch is reported, not kept.
    pub(crate) fn from_memory(memory: Memory, shape: Vec<usize>, device: Device) -> Result<Tensor> {
        Tensor::from_shared(Arc::new(memory), shape, device)
    }

    pub(crate) fn from_shared(
        memory: Arc<Memory>,
        shape: Vec<usize>,
        device: Device,
    ) -> Result<Tensor> {
        Tensor::from_value(Value::Memory(memory), shape, device)
    }

    /// A placeholder tensor of a trace in progress.
    pub(crate) fn from_placeholder(
        placeholder: Placeholder,
        shape: Vec<usize>,
        device: Device,
    ) -> Result<Tensor> {
        Tensor::from_value(Value::Placeholder(Arc::new(placeholder)), shape, device)
    }

    fn from_value(memory: Value, shape: Vec<usize>, device: Device) -> Result<Tensor> {
        if memory.kind() != device.memory_kind() {
            return Err(Error::Placement {
                op: "tensor",
                device,
                found: memory.kind().to_string(),
            });
        }
        if memory.len() != numel(&shape) {
            return Err(Error::InvalidArgument {
                op: "tensor",
                message: format!(
                    "internal: {} elements computed for shape {}",
                    memory.len(),
                    crate::shape::fmt_shape(&shape)
                ),
            });
        }
        Ok(Tensor {
            dtype: memory.dtype(),
            storage: Arc::new(Storage {
                device,
                memory: RwLock::new(Some(memory)),
            }),
            shape,
            names: None,
        })
    }

    /// Places host elements on `device` (an upload for an accelerator).
    pub(crate) fn from_host(buffer: Buffer, shape: Vec<usize>, device: Device) -> Result<Tensor> {
        Tensor::from_memory(Memory::place(buffer, device)?, shape, device)
    }

    /// This tensor's values on `device`, for an op that runs there: the same tensor when it is
    /// already there, the same memory under the new placement when both devices read the same
    /// memory (binary and host), otherwise a copy through the backend contract (an upload,
    /// a download, or a device to device copy). The source is left as it is.
    pub(crate) fn to_device(&self, device: Device) -> Result<Tensor> {
        if self.device() == device {
            self.value()?;
            return Ok(self.clone());
        }
        match self.value()? {
            Value::Memory(memory) if memory.kind() == device.memory_kind() => {
                Ok(Tensor::from_shared(memory, self.shape.clone(), device)?.named_like(self))
            }
            _ => self.backend_copy(device),
        }
    }

    /// The same buffer seen with another shape of the same element count (reshape, squeeze).
    /// Callers keep the element count (checked by `reshape`).
    pub(crate) fn with_shape(&self, shape: Vec<usize>) -> Tensor {
        Tensor {
            storage: Arc::clone(&self.storage),
            shape,
            dtype: self.dtype,
            names: None,
        }
    }

    /// The tensor's host memory, moved into shared memory first if it is on the heap (a copy,
    /// made once: the tensor's storage then holds the shared copy, so every clone and every
    /// later keep finds it there). `None` for memory of an accelerator.
    pub(crate) fn shared_host_memory(&self) -> Result<Option<Arc<Memory>>> {
        let Value::Memory(memory) = self.value()? else {
            return Ok(None);
        };
        let Some(buffer) = memory.as_host() else {
            return Ok(None);
        };
        if buffer.region().is_some() {
            return Ok(Some(memory));
        }
        let copy = crate::buffer::with_buffer!(buffer, v => {
            let mut out = crate::host_vec::HostVec::shared(v.len()).map_err(|e| {
                Error::Allocation {
                    shape: self.shape.clone(),
                    dtype: self.dtype,
                    bytes: self.byte_size() as u128,
                    reason: format!("shared memory could not be had ({e})"),
                }
            })?;
            out.extend_from_slice(v);
            Element::into_buffer(out)
        });
        let shared = Arc::new(Memory::Host(copy));
        let mut guard = self
            .storage
            .memory
            .write()
            .unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            // Same values, other memory: nobody can tell, and the heap copy goes.
            Some(Value::Memory(current)) if Arc::ptr_eq(current, &memory) => {
                *guard = Some(Value::Memory(Arc::clone(&shared)));
                Ok(Some(shared))
            }
            // Deallocated (or moved) meanwhile.
            _ => Err(self.deallocated()),
        }
    }

    /// The value, or `Deallocated` if it was freed. Ops hold this `Arc` while they run, so a
    /// concurrent `deallocate` frees the memory only once they finish, and no lock is held.
    pub(crate) fn value(&self) -> Result<Value> {
        let guard = self
            .storage
            .memory
            .read()
            .unwrap_or_else(|e| e.into_inner());
        guard.clone().ok_or_else(|| self.deallocated())
    }

    /// The memory, `Deallocated` if it was freed, or `Traced` for a placeholder (whose values
    /// do not exist yet).
    pub(crate) fn memory(&self) -> Result<Arc<Memory>> {
        match self.value()? {
            Value::Memory(m) => Ok(m),
            Value::Placeholder(p) => Err(p.unknown("read")),
        }
    }

    /// Runs `f` on the elements in host memory (copied from a device first), or fails with
    /// `Deallocated` if they were freed.
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Buffer) -> Result<R>) -> Result<R> {
        let memory = self.memory()?;
        let host = memory.to_host()?;
        f(&host)
    }

    /// True when `other` is this tensor or a clone of it (one storage, one shape).
    pub(crate) fn same_value(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage) && self.shape == other.shape
    }

    pub(crate) fn deallocated(&self) -> Error {
        Error::Deallocated {
            device: self.device(),
            dtype: self.dtype,
            shape: self.shape.clone(),
        }
    }

    /// The dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn size(&self) -> usize {
        numel(&self.shape)
    }

    /// The number of elements (`Nx.flat_size`; tensorbook has no vectorized axes, so it is
    /// [`Tensor::size`]).
    pub fn flat_size(&self) -> usize {
        self.size()
    }

    /// The bits the elements take together (`Nx.bit_size`).
    pub fn bit_size(&self) -> usize {
        self.size().saturating_mul(self.dtype.size_in_bytes() * 8)
    }

    /// The axes, `0..rank` (`Nx.axes`).
    pub fn axes(&self) -> Vec<usize> {
        (0..self.rank()).collect()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Where the tensor's memory lives.
    pub fn device(&self) -> Device {
        self.storage.device
    }

    /// Bytes the elements occupy.
    pub fn byte_size(&self) -> usize {
        self.size().saturating_mul(self.dtype.size_in_bytes())
    }

    /// True once `deallocate` or `backend_transfer` freed the memory.
    pub fn is_deallocated(&self) -> bool {
        self.storage
            .memory
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_none()
    }

    /// Waits until every operation that produces this tensor has finished on its device.
    ///
    /// Operations on `binary` and `host` finish before they return; an asynchronous device
    /// (cuda) only enqueues them, so benchmarks call this before they stop the clock. Reading
    /// values (`to_vec`, display, transfers) waits by itself.
    pub fn sync(&self) -> Result<()> {
        match self.value()? {
            Value::Memory(m) => m.sync(),
            Value::Placeholder(_) => Ok(()),
        }
    }

    /// The name of each axis (Nx's `Nx.names/1`), `None` for an unnamed one.
    pub fn names(&self) -> Vec<Name> {
        match &self.names {
            Some(names) => names.to_vec(),
            None => vec![None; self.rank()],
        }
    }

    /// Whether any axis has a name.
    pub fn is_named(&self) -> bool {
        self.names.is_some()
    }

    /// The same tensor with these axis names: one per axis (the op that computed them checked
    /// that). No list is kept when none is named.
    pub(crate) fn named(mut self, names: Vec<Name>) -> Tensor {
        debug_assert_eq!(names.len(), self.rank());
        self.names = if names.iter().any(Option::is_some) && names.len() == self.rank() {
            Some(names.into())
        } else {
            None
        };
        self
    }

    /// This tensor's result with its own names: for ops that keep every axis where it was
    /// (elementwise ops, casts, scans, sorts, slices, pads).
    pub(crate) fn named_like(self, source: &Tensor) -> Tensor {
        if source.names.is_none() || self.rank() != source.rank() {
            return self;
        }
        let names = source.names();
        self.named(names)
    }

    /// The shape with its names, as Nx prints it: `[batch: 2][3]`.
    pub fn shape_text(&self) -> String {
        fmt_named_shape(&self.shape, &self.names())
    }

    /// `f32[2][3] on host:0`: what error messages use to name a tensor.
    pub fn signature(&self) -> String {
        format!("{}{} on {}", self.dtype, self.shape_text(), self.device())
    }

    /// The elements in row-major order; `T` must be the tensor's dtype.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.read(|b| {
            T::slice_of(b)
                .map(|s| s.to_vec())
                .ok_or(Error::DTypeMismatch {
                    op: "to_vec",
                    expected: T::DTYPE,
                    actual: self.dtype,
                    shape: self.shape.clone(),
                })
        })
    }

    /// The value of a tensor with one element.
    pub fn to_scalar<T: Element>(&self) -> Result<T> {
        if self.size() != 1 {
            return Err(Error::InvalidArgument {
                op: "to_scalar",
                message: format!("{} has {} elements, not 1", self.signature(), self.size()),
            });
        }
        self.to_vec::<T>()?
            .first()
            .copied()
            .ok_or_else(|| self.deallocated())
    }

    /// Every element converted to f64 (handy for checks whatever the dtype).
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        self.read(|b| {
            Ok(crate::buffer::with_buffer!(b, v => v.iter().map(|x| x.to_f64()).collect()))
        })
    }

    /// The elements as little-endian bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        self.read(|b| Ok(b.to_le_bytes()))
    }

    /// The elements as raw bytes, row-major and little-endian (Nx's `to_binary`;
    /// [`Tensor::from_binary`] reads them back).
    pub fn to_binary(&self) -> Result<Vec<u8>> {
        self.to_bytes()
    }

    /// A copy on `device`; the source stays valid. Copying to its own device still copies.
    /// The copy is the source backend's (`Backend::copy`: through host memory unless the
    /// backend has a direct path); inside a trace it is recorded as a transfer.
    pub fn backend_copy(&self, device: Device) -> Result<Tensor> {
        check_device(device)?;
        let copy = match self.value()? {
            Value::Memory(memory) => {
                Tensor::from_memory(memory.copy_to(device)?, self.shape.clone(), device)
            }
            Value::Placeholder(p) => {
                Tensor::from_placeholder(p.transfer(device), self.shape.clone(), device)
            }
        };
        Ok(copy?.named_like(self))
    }

    /// Moves the tensor to `device`, then frees the source (every clone of it then prints
    /// `Deallocated`). A no-op returning the same tensor when already there; between devices
    /// that read the same memory (binary and host) nothing is copied.
    pub fn backend_transfer(&self, device: Device) -> Result<Tensor> {
        if device == self.device() {
            self.value()?;
            return Ok(self.clone());
        }
        check_device(device)?;
        let moved = self.to_device(device)?;
        self.deallocate()?;
        Ok(moved)
    }

    /// Frees the memory now. Using the tensor (or any clone) afterwards is an error.
    pub fn deallocate(&self) -> Result<()> {
        let mut guard = self
            .storage
            .memory
            .write()
            .unwrap_or_else(|e| e.into_inner());
        if guard.take().is_none() {
            return Err(self.deallocated());
        }
        Ok(())
    }
}
