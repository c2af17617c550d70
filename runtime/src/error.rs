//! The one error type of the runtime. Every message names the shapes, dtypes and placements
//! involved, so that a notebook user can fix the cell from the message alone.

use crate::device::{Client, Device};
use crate::dtype::DType;
use crate::shape::format::fmt_shape;

/// Result with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the runtime because of what a user asked for.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// Two shapes that must agree do not.
    #[error("{op}: shapes {} and {} are incompatible: {reason}", fmt_shape(.lhs), fmt_shape(.rhs))]
    ShapeMismatch {
        /// The operation.
        op: &'static str,
        /// The first shape.
        lhs: Vec<usize>,
        /// The second shape.
        rhs: Vec<usize>,
        /// Why they do not fit.
        reason: String,
    },
    /// Data does not fill the requested shape.
    #[error("{op}: {len} elements cannot fill shape {} ({expected} elements)", fmt_shape(.shape))]
    ElementCount {
        /// The operation.
        op: &'static str,
        /// The requested shape.
        shape: Vec<usize>,
        /// Its element count.
        expected: usize,
        /// The number of elements given.
        len: usize,
    },
    /// An axis index outside the tensor's rank.
    #[error("{op}: axis {axis} is out of range for shape {} (rank {})", fmt_shape(.shape), .shape.len())]
    AxisOutOfRange {
        /// The operation.
        op: &'static str,
        /// The axis asked for.
        axis: isize,
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// An argument that is wrong for a reason other than shape or axis.
    #[error("{op}: {message}")]
    InvalidArgument {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The tensor's dtype is not the one the caller asked for.
    #[error("{op}: the tensor is {actual}{}, not {expected}", fmt_shape(.shape))]
    DTypeMismatch {
        /// The operation.
        op: &'static str,
        /// The dtype asked for.
        expected: DType,
        /// The tensor's dtype.
        actual: DType,
        /// The tensor's shape.
        shape: Vec<usize>,
    },
    /// The op does not exist for this dtype.
    #[error("{op} is not supported for dtype {dtype}")]
    UnsupportedDType {
        /// The operation.
        op: &'static str,
        /// The dtype given.
        dtype: DType,
    },
    /// The user interrupted the cell (Jupyter's interrupt); the session's variables are kept.
    #[error("interrupted by the user; the session's variables are kept")]
    Interrupted,
    /// Operands live on two different devices.
    #[error(
        "{op}: operands are on different devices:\n  {lhs}\n  {rhs}\nmove one first, e.g. `rhs.backend_transfer(Device::parse(\"{lhs_device}\")?)?`"
    )]
    DeviceMismatch {
        /// The operation.
        op: &'static str,
        /// Signature of the first operand (dtype, shape, placement).
        lhs: String,
        /// Signature of the second operand.
        rhs: String,
        /// Where the first operand lives (the suggested destination).
        lhs_device: Device,
    },
    /// A client that cannot be used on this machine.
    #[error("client {client} is unavailable: {reason}")]
    ClientUnavailable {
        /// The client.
        client: Client,
        /// Why (no driver, no device, not built).
        reason: String,
    },
    /// No client in a preference list could be used.
    #[error("none of the clients {wanted} is available: {reasons}")]
    NoClientAvailable {
        /// The clients asked for, in order.
        wanted: String,
        /// Why each was refused.
        reasons: String,
    },
    /// A device id beyond the client's device count.
    #[error("device {device} does not exist: client {} has {count} device(s)", .device.client)]
    DeviceNotFound {
        /// The device asked for.
        device: Device,
        /// How many devices the client has.
        count: usize,
    },
    /// The tensor's memory was freed by `deallocate` or `backend_transfer`.
    #[error("the tensor {dtype}{} on {device} was deallocated (by deallocate or backend_transfer); use the tensor backend_transfer returned", fmt_shape(.shape))]
    Deallocated {
        /// Where it lived.
        device: Device,
        /// Its dtype.
        dtype: DType,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// Host memory for a tensor could not be obtained: the size does not exist on any machine,
    /// or it is more than this one can give (its available memory, or the cap set with
    /// `set_host_memory_limit` / `TENSORBOOK_HOST_MEMORY_LIMIT`). Decided before any page is
    /// touched.
    #[error("cannot allocate {dtype}{} ({bytes} bytes): {reason}", fmt_shape(.shape))]
    Allocation {
        /// The shape asked for.
        shape: Vec<usize>,
        /// The dtype asked for.
        dtype: DType,
        /// The bytes that would be needed.
        bytes: u128,
        /// Why it was refused.
        reason: String,
    },
    /// A backend was handed memory that does not belong to the device it runs on. The frontend
    /// moves every weak operand before dispatch, so this names a bug in tensorbook, with both
    /// placements.
    #[error("{op} on {device} was handed {found}: the backend contract requires memory of {device} (internal error; please report it)")]
    Placement {
        /// The operation.
        op: &'static str,
        /// The device the op runs on.
        device: Device,
        /// The memory it was handed.
        found: String,
    },
    /// A device could not allocate memory for a tensor (out of memory, or over the memory
    /// fraction the session allows).
    #[error("cannot allocate {dtype}{} ({bytes} bytes) on {device}: {reason}", fmt_shape(.shape))]
    DeviceAllocation {
        /// Where the memory was wanted.
        device: Device,
        /// The shape asked for.
        shape: Vec<usize>,
        /// The dtype asked for.
        dtype: DType,
        /// The bytes that would be needed.
        bytes: u128,
        /// Why it failed, with the device's free and allowed memory where known.
        reason: String,
    },
    /// A device reported a failure (a driver, cuBLAS or NVRTC error).
    #[error("{op} on {device} failed: {message}")]
    Device {
        /// The operation.
        op: &'static str,
        /// The device.
        device: Device,
        /// The driver's message.
        message: String,
    },
    /// The values of a tensor being traced by `jit` were asked for: they exist only when the
    /// compiled function runs.
    #[error(
        "{op}: {value} is a placeholder of a jit trace: its values exist only when the compiled \
         function runs (return the tensor from the function, or call it outside jit)"
    )]
    Traced {
        /// What asked for the values.
        op: &'static str,
        /// The placeholder.
        value: String,
    },
    /// A jit function failed while it was traced; `op_index` counts the ops it had called.
    #[error("jit: the function failed at its op #{op_index} while being traced for {templates}: {source}")]
    Jit {
        /// The position (from 1) of the op that failed among the ops the function called.
        op_index: usize,
        /// The arguments' templates the trace was for.
        templates: String,
        /// The op's error.
        source: Box<Error>,
    },
    /// A stream was misused (a chunk that does not match, send after done, ...).
    #[error("stream: {0}")]
    Stream(String),
    /// A closure given to a `Serving` failed.
    #[error("serving: {0}")]
    Serving(String),
    /// One device of a partitioned serving or of a data-parallel call failed. The other
    /// devices' work for that call is dropped; every device, and the session, stay usable.
    #[error("{what} on {device} failed: {source}")]
    Partition {
        /// Which part of the work (`batch 3 of 8`, `replica 1 of 4`).
        what: String,
        /// The device it ran on.
        device: Device,
        /// What went wrong there.
        source: Box<Error>,
    },
    /// A file could not be read or written.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// A data file is not in the format it claims (IDX, NPY, the npm digits).
    #[error("{path}: not a valid {format} file: {message}")]
    Format {
        /// The file.
        path: String,
        /// The format expected.
        format: &'static str,
        /// What is wrong with it.
        message: String,
    },
}
