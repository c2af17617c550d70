//! The session default and the one rule for "where does new work go":
//! explicit argument > placement of the operands > the session default.
//!
//! The default is process-wide on purpose. Nx keeps it per process (per Erlang process), so a
//! serving running elsewhere silently fell back to the CPU; here every thread — a serving's
//! workers included — sees the same default.

use std::sync::RwLock;

use crate::client::{self, check_device, client_info};
use crate::contract::session_file;
use crate::device::{Client, Device};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

static DEFAULT: RwLock<Option<Device>> = RwLock::new(None);

/// What a person asks for as the session default — the kernelspec's `--client`,
/// `TENSORBOOK_CLIENT`, the `:client` command: `auto` (the first available of cuda, host,
/// binary, as `EXLA.set_as_nx_default([:cuda, :host])`) or one device (`host`, `host:1`,
/// `cuda`, `binary`, `sim:0`). This is the one parser of such specs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientSpec {
    /// The first available client, fastest first.
    Auto,
    /// One device (a bare client name means its device 0).
    Device(Device),
}

impl std::str::FromStr for ClientSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<ClientSpec> {
        match s.trim() {
            "" | "auto" => Ok(ClientSpec::Auto),
            spec => {
                Device::parse(spec)
                    .map(ClientSpec::Device)
                    .map_err(|e| Error::InvalidArgument {
                        op: "client",
                        message: format!("{e}; or `auto` for the first available of cuda, host"),
                    })
            }
        }
    }
}

impl std::fmt::Display for ClientSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientSpec::Auto => f.write_str("auto"),
            ClientSpec::Device(d) => write!(f, "{d}"),
        }
    }
}

impl ClientSpec {
    /// Parses a spec (see the type's documentation).
    pub fn parse(s: &str) -> Result<ClientSpec> {
        s.parse()
    }

    /// The device this spec picks on this machine, or why it cannot be used.
    pub fn resolve(self) -> Result<Device> {
        match self {
            ClientSpec::Auto => first_available(&Client::PREFERENCE),
            ClientSpec::Device(d) => check_device(d).map(|()| d),
        }
    }

    /// Makes the device this spec picks the session default and returns it.
    pub fn apply(self) -> Result<Device> {
        set_default_device(self.resolve()?)
    }
}

/// The default when nothing chose one: the environment's spec if it names a usable device,
/// else the first available client.
fn initial_default() -> Device {
    let fallback = || first_available(&Client::PREFERENCE).unwrap_or(Device::BINARY);
    ClientSpec::parse(&crate::contract::env::default_client())
        .and_then(ClientSpec::resolve)
        .unwrap_or_else(|_| fallback())
}

fn first_available(clients: &[Client]) -> Result<Device> {
    let mut reasons = Vec::new();
    for &c in clients {
        match client::default_device(c) {
            Ok(d) => return Ok(d),
            Err(e) => reasons.push(format!(
                "{c}: {}",
                client_info(c).reason.unwrap_or(e.to_string())
            )),
        }
    }
    Err(Error::NoClientAvailable {
        wanted: format!(
            "[{}]",
            clients
                .iter()
                .map(|c| c.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        reasons: reasons.join("; "),
    })
}

thread_local! {
    /// The default inside [`with_default_device`] on this thread, over the session's.
    static SCOPED: std::cell::Cell<Option<Device>> = const { std::cell::Cell::new(None) };
}

/// Where new work goes when neither an argument nor an operand says otherwise.
pub fn default_device() -> Device {
    if let Some(d) = SCOPED.with(|s| s.get()) {
        return d;
    }
    if let Some(d) = session_file::read() {
        return d;
    }
    if let Some(d) = *DEFAULT.read().unwrap_or_else(|e| e.into_inner()) {
        return d;
    }
    let mut slot = DEFAULT.write().unwrap_or_else(|e| e.into_inner());
    *slot.get_or_insert_with(initial_default)
}

/// Makes `device` the session default. Existing tensors stay where they are.
pub fn set_default_device(device: Device) -> Result<Device> {
    check_device(device)?;
    *DEFAULT.write().unwrap_or_else(|e| e.into_inner()) = Some(device);
    session_file::write(device);
    Ok(device)
}

/// Runs `f` with `device` as the default on this thread, then puts the previous default back
/// (also when `f` panics), as `Nx.with_default_backend(backend, fun)`: the session default,
/// which other threads and a restarted evaluation process see, is untouched. Calls nest.
/// A device this machine cannot use is an error and `f` does not run.
///
/// ```
/// use tensorbook::{with_default_device, Device, DType, Tensor};
/// let t = with_default_device(Device::BINARY, || Tensor::iota(DType::S32, &[3], None))??;
/// assert_eq!(t.device(), Device::BINARY);
/// # Ok::<(), tensorbook::Error>(())
/// ```
pub fn with_default_device<R>(device: Device, f: impl FnOnce() -> R) -> Result<R> {
    check_device(device)?;
    struct Restore(Option<Device>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(device))));
    Ok(f())
}

/// Makes the first available client of `clients` the session default (its default device) and
/// returns the device chosen, like `EXLA.set_as_nx_default([:cuda, :host])`. When none is
/// available the default is unchanged and the error says why each was refused.
pub fn set_default_client(clients: &[Client]) -> Result<Device> {
    let device = first_available(clients)?;
    set_default_device(device)
}

/// True for operands whose placement yields to the other operands: scalars and `binary`
/// tensors follow, as in Nx.
fn is_weak(t: &Tensor) -> bool {
    t.rank() == 0 || t.device().client == Client::Binary
}

/// The one device of the operands that do not yield (neither rank 0 nor binary), if any; two
/// of them on different devices are an error naming both.
fn strong_device(op: &'static str, operands: &[&Tensor]) -> Result<Option<Device>> {
    let mut chosen: Option<&Tensor> = None;
    for t in operands.iter().filter(|t| !is_weak(t)) {
        match chosen {
            None => chosen = Some(t),
            Some(c) if c.device() != t.device() => {
                return Err(Error::DeviceMismatch {
                    op,
                    lhs: c.signature(),
                    rhs: t.signature(),
                    lhs_device: c.device(),
                })
            }
            _ => {}
        }
    }
    Ok(chosen.map(|t| t.device()))
}

/// Decides where a compiled function (`jit`, `stream`, `Serving`) runs: `explicit` if given;
/// else the common device of its arguments that do not yield; else the session default at
/// call time. Unlike an eager op, arguments that all yield (binary tensors, rank-0 tensors)
/// never choose: the function compiles for the session default, as EXLA's does.
pub fn resolve_compiled_device(
    what: &'static str,
    explicit: Option<Device>,
    args: &[&Tensor],
) -> Result<Device> {
    if let Some(d) = freed_or_explicit(explicit, args)? {
        return Ok(d);
    }
    Ok(strong_device(what, args)?.unwrap_or_else(default_device))
}

/// The first step of both rules: a freed operand is an error (the more useful one than any
/// placement conflict it would cause), then an explicit device wins once it is checked.
fn freed_or_explicit(explicit: Option<Device>, operands: &[&Tensor]) -> Result<Option<Device>> {
    if let Some(t) = operands.iter().find(|t| t.is_deallocated()) {
        return Err(t.deallocated());
    }
    if let Some(d) = explicit {
        check_device(d)?;
        return Ok(Some(d));
    }
    Ok(None)
}

/// Decides where an operation runs: `explicit` if given; else the common device of the
/// operands (scalars and binary tensors follow the others); else the session default.
/// Two operands on different devices are an error naming both and the fix.
pub fn resolve_device(
    op: &'static str,
    explicit: Option<Device>,
    operands: &[&Tensor],
) -> Result<Device> {
    if let Some(d) = freed_or_explicit(explicit, operands)? {
        return Ok(d);
    }
    if let Some(device) = strong_device(op, operands)? {
        return Ok(device);
    }
    // Only weak operands: a non-binary scalar still names a device; all-binary stays binary.
    if let Some(t) = operands
        .iter()
        .find(|t| t.device().client != Client::Binary)
    {
        return Ok(t.device());
    }
    if !operands.is_empty() {
        return Ok(Device::BINARY);
    }
    Ok(default_device())
}
