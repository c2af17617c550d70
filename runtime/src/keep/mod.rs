//! Variables that survive the death of the evaluation process.
//!
//! Every cell that stores variables calls [`keep_variables!`](crate::keep_variables) with each
//! of them (the kernel sets it as evcxr's variable hook). A host tensor's memory is moved into
//! shared memory if it is not there yet (`shared_memory.rs`) and its file goes to the
//! kernel, which holds it; a plain value goes as text ([`value`]); anything else is named as
//! lost, with its type. After a restart the kernel runs a cell that binds each variable again
//! with [`restore_tensor`] or [`restore_value`]: a tensor maps the same memory (no copy).
//!
//! Outside a tensorbook kernel (no keep socket) keeping does nothing.

pub mod value;

use std::mem::ManuallyDrop;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::buffer::{Buffer, HostVec};
use crate::contract::env;
use crate::contract::keep::{self as socket, Kept, LineStream, Request, Value};
use crate::device::Device;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::memory::Memory;
use crate::shape::{check_shape, numel};
use crate::shared_memory::Region;
use crate::tensor::Tensor;
pub use value::KeptValue;

/// How long a cell waits for the kernel to take its variables.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One variable as a cell hands it over.
struct Captured {
    name: String,
    type_name: &'static str,
    what: What,
}

enum What {
    Tensor(Tensor),
    Plain(String),
    Lost(String),
}

/// The variables of one cell, gathered by [`keep_variables!`](crate::keep_variables).
///
/// Its methods are not generic on purpose: the macro expands in every cell, and each generic
/// line it instantiates there is compiled again for every cell (the first version, which built
/// a `Vec` of captures and formatted messages in the cell, cost ~40 ms of rustc per cell).
/// The captures sit in a `ManuallyDrop` so that the cell's drop glue for a `Batch` (needed
/// should a capture panic) is one call of the `Drop` impl below, compiled here, not the glue
/// of `Vec<Captured>`, tensors and strings compiled into the cell.
#[derive(Default)]
pub struct Batch {
    captured: ManuallyDrop<Vec<Captured>>,
}

impl Drop for Batch {
    fn drop(&mut self) {
        // SAFETY: `captured` is not used again; `send` takes it out before the batch drops.
        unsafe { ManuallyDrop::drop(&mut self.captured) }
    }
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// A tensor, kept with its memory.
    pub fn tensor(&mut self, name: &str, tensor: &Tensor) {
        self.push(
            name,
            std::any::type_name::<Tensor>(),
            What::Tensor(tensor.clone()),
        );
    }

    /// A plain value of `bytes` bytes, kept as the text `encode` gives, up to
    /// [`value::MAX_BYTES`].
    pub fn value(
        &mut self,
        name: &str,
        type_name: &'static str,
        bytes: usize,
        encode: &dyn Fn() -> String,
    ) {
        let what = if bytes > value::MAX_BYTES {
            What::Lost(format!(
                "{bytes} bytes, more than the {} kept for a plain value (a tensor keeps any size)",
                value::MAX_BYTES
            ))
        } else {
            What::Plain(encode())
        };
        self.push(name, type_name, what);
    }

    /// Anything else: named as lost, with its type.
    pub fn other(&mut self, name: &str, type_name: &'static str) {
        self.push(
            name,
            type_name,
            What::Lost(
                "only tensors, numbers, bool, char, String and Vecs of numbers are kept".into(),
            ),
        );
    }

    fn push(&mut self, name: &str, type_name: &'static str, what: What) {
        self.captured.push(Captured {
            name: name.to_string(),
            type_name,
            what,
        });
    }

    /// Hands the batch to the kernel; never fails the cell (a problem is printed on stderr).
    pub fn send(mut self) {
        send(std::mem::take(&mut *self.captured));
    }
}

/// How [`keep_variables!`](crate::keep_variables) tells tensors, plain values and everything
/// else apart at compile time: method resolution tries `ViaTensor` (on `&&Probe`), then
/// `ViaValue` (on `&Probe`), then `ViaOther` (on `Probe`), so each variable takes the most
/// specific way its type allows.
pub mod probe {
    use super::{Batch, KeptValue};
    use crate::tensor::Tensor;

    /// A variable being looked at.
    pub struct Probe<'a, T: ?Sized>(pub &'a T);

    /// Tensors: kept with their memory.
    pub trait ViaTensor {
        /// Adds the variable `name` to `batch`.
        fn capture(&self, name: &str, batch: &mut Batch);
    }
    impl ViaTensor for &&Probe<'_, Tensor> {
        fn capture(&self, name: &str, batch: &mut Batch) {
            batch.tensor(name, self.0);
        }
    }

    /// Plain values: kept as text, up to [`super::value::MAX_BYTES`].
    pub trait ViaValue {
        /// Adds the variable `name` to `batch`.
        fn capture(&self, name: &str, batch: &mut Batch);
    }
    impl<T: KeptValue> ViaValue for &Probe<'_, T> {
        #[inline]
        fn capture(&self, name: &str, batch: &mut Batch) {
            let value = self.0;
            batch.value(name, std::any::type_name::<T>(), value.bytes(), &|| {
                value.encode()
            });
        }
    }

    /// Everything else: named as lost.
    pub trait ViaOther {
        /// Adds the variable `name` to `batch`.
        fn capture(&self, name: &str, batch: &mut Batch);
    }
    impl<T: ?Sized> ViaOther for Probe<'_, T> {
        #[inline]
        fn capture(&self, name: &str, batch: &mut Batch) {
            batch.other(name, std::any::type_name::<T>());
        }
    }
}

/// Hands the kernel what it needs to bring back each `(name, &value)` after a restart of the
/// evaluation process. Generated code calls this at the end of every cell that stores
/// variables; it never fails the cell (a problem is printed on stderr).
#[macro_export]
macro_rules! keep_variables {
    ($(($name:expr, $value:expr)),* $(,)?) => {{
        #[allow(unused_imports)]
        use $crate::keep::probe::{ViaOther as _, ViaTensor as _, ViaValue as _};
        let mut batch = $crate::keep::Batch::new();
        $((&&&$crate::keep::probe::Probe($value)).capture($name, &mut batch);)*
        batch.send();
    }};
}

/// Sends captured variables to the kernel (see [`keep_variables!`](crate::keep_variables)).
fn send(captured: Vec<Captured>) {
    let Some(path) = env::path(env::KEEP_SOCKET) else {
        return;
    };
    if let Err(e) = send_to(&path, captured) {
        eprintln!(
            "[tensorbook] the kernel could not keep this cell's variables for a restart: {e}"
        );
    }
}

fn connect(path: &Path) -> std::io::Result<LineStream> {
    let stream = UnixStream::connect(path)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    Ok(LineStream::new(stream))
}

fn send_to(path: &Path, captured: Vec<Captured>) -> std::io::Result<()> {
    let mut stream = connect(path)?;
    for variable in captured {
        let (value, memory) = match variable.what {
            What::Plain(text) => (Value::Plain { text }, None),
            What::Lost(why) => (Value::Lost { why }, None),
            What::Tensor(t) => match tensor_value(&t) {
                Ok((value, memory)) => (value, memory),
                Err(why) => (Value::Lost { why }, None),
            },
        };
        let kept = Kept {
            name: variable.name,
            type_name: variable.type_name.to_string(),
            value,
        };
        let region = memory.as_deref().and_then(region_of);
        if let Some(region) = region {
            // From now on these bytes are the variable's value in the kernel's eyes.
            region.pin();
        }
        stream.send(&Request::Keep(kept).to_line(), region.map(Region::file))?;
    }
    stream.send(&Request::Done.to_line(), None)?;
    match stream.receive()? {
        Some(line) if line == socket::DONE => Ok(()),
        other => Err(std::io::Error::other(format!(
            "the kernel answered {other:?} instead of `{}`",
            socket::DONE
        ))),
    }
}

fn region_of(memory: &Memory) -> Option<&Region> {
    memory.as_host().and_then(Buffer::region)
}

/// A tensor's description and its shared host memory, or why it cannot be kept.
fn tensor_value(
    t: &Tensor,
) -> std::result::Result<(Value, Option<std::sync::Arc<Memory>>), String> {
    if t.is_deallocated() {
        return Err("the tensor was deallocated".into());
    }
    let memory = t.shared_host_memory().map_err(|e| e.to_string())?;
    let Some(memory) = memory else {
        return Err(format!(
            "{} memory ends with the evaluation process (backend_transfer to host to keep it)",
            t.device()
        ));
    };
    Ok((
        Value::Tensor {
            dtype: t.dtype().to_string(),
            shape: t.shape().to_vec(),
            device: t.device().to_string(),
            len: memory.len(),
            names: if t.is_named() { t.names() } else { Vec::new() },
        },
        Some(memory),
    ))
}

fn restore_error(name: &str, message: impl std::fmt::Display) -> Error {
    Error::InvalidArgument {
        op: "restore",
        message: format!("variable `{name}`: {message}"),
    }
}

/// What the kernel keeps under `name`, with its memory for a tensor.
fn take(name: &str) -> Result<(Kept, Option<OwnedFd>)> {
    let path = env::path(env::KEEP_SOCKET)
        .ok_or_else(|| restore_error(name, "not inside a tensorbook kernel"))?;
    let io = |e: std::io::Error| restore_error(name, format!("the kernel did not answer ({e})"));
    let mut stream = connect(&path).map_err(io)?;
    stream
        .send(
            &Request::Take {
                name: name.to_string(),
            }
            .to_line(),
            None,
        )
        .map_err(io)?;
    let line = stream
        .receive()
        .map_err(io)?
        .ok_or_else(|| restore_error(name, "the kernel closed the socket"))?;
    let kept = socket::parse_take_answer(&line)
        .map_err(|e| restore_error(name, e))?
        .ok_or_else(|| restore_error(name, "the kernel keeps nothing under this name"))?;
    let fd = if kept.has_memory() {
        Some(
            stream
                .take_fd()
                .ok_or_else(|| restore_error(name, "the kernel sent no memory"))?,
        )
    } else {
        None
    };
    Ok((kept, fd))
}

/// The tensor the kernel keeps under `name`, on the same memory (nothing is copied).
pub fn restore_tensor(name: &str) -> Result<Tensor> {
    let (kept, fd) = take(name)?;
    let (
        Value::Tensor {
            dtype,
            shape,
            device,
            len,
            names,
        },
        Some(fd),
    ) = (kept.value, fd)
    else {
        return Err(restore_error(name, "it was not kept as a tensor"));
    };
    let dtype =
        DType::parse(&dtype).ok_or_else(|| restore_error(name, format!("dtype {dtype}")))?;
    let device = Device::parse(&device)?;
    check_shape("restore", &shape, dtype)?;
    if numel(&shape) != len {
        return Err(restore_error(name, "its shape and length disagree"));
    }
    let bytes = len.saturating_mul(dtype.size_in_bytes());
    let region = Region::open(fd, bytes).map_err(|e| restore_error(name, e))?;
    let buffer =
        crate::buffer::with_dtype!(dtype, T => T::into_buffer(HostVec::<T>::over(region, len)));
    let tensor = Tensor::from_memory(Memory::Host(buffer), shape, device)?;
    if names.is_empty() {
        Ok(tensor)
    } else {
        tensor.rename(names)
    }
}

/// The plain value the kernel keeps under `name`, as a `T` (the type it was kept with).
pub fn restore_value<T: KeptValue>(name: &str) -> Result<T> {
    let (kept, _) = take(name)?;
    let Value::Plain { text } = kept.value else {
        return Err(restore_error(name, "it was not kept as a plain value"));
    };
    if kept.type_name != std::any::type_name::<T>() {
        return Err(restore_error(
            name,
            format!(
                "kept as {}, asked for as {}",
                kept.type_name,
                std::any::type_name::<T>()
            ),
        ));
    }
    T::decode(&text).ok_or_else(|| restore_error(name, "its kept text does not decode"))
}
