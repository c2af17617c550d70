//! The session default and the one rule for "where does new work go":
//! explicit argument > placement of the operands > the session default.
//!
//! The default is process-wide on purpose. Nx keeps it per process (per Erlang process), so a
//! serving running elsewhere silently fell back to the CPU; here every thread — a serving's
//! workers included — sees the same default.

use std::sync::RwLock;

use crate::client::{self, check_device, client_info};
use crate::device::{Client, Device};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The environment variable that picks the initial default client (`auto`, `host`, `cuda`,
/// `binary`, or a device such as `host:1`); the kernelspec's `--client` sets it.
pub const DEFAULT_CLIENT_ENV: &str = "TENSORBOOK_CLIENT";

/// The environment variable naming a file that holds the session default. A notebook kernel
/// sets it so that the kernel (`:client`) and the process evaluating cells share one default,
/// which also survives a restart of that process.
pub const SESSION_FILE_ENV: &str = "TENSORBOOK_SESSION_FILE";

static DEFAULT: RwLock<Option<Device>> = RwLock::new(None);

/// The default stored in the session file, if there is a readable, valid one.
fn from_session_file() -> Option<Device> {
    let path = std::env::var_os(SESSION_FILE_ENV)?;
    let text = std::fs::read_to_string(path).ok()?;
    Device::parse(text.trim()).ok()
}

fn to_session_file(device: Device) {
    if let Some(path) = std::env::var_os(SESSION_FILE_ENV) {
        // Best effort: the in-process default is already set; a kernel that cannot write its
        // own session file reports that itself.
        let _ = std::fs::write(path, device.to_string());
    }
}

fn initial_default() -> Device {
    let wanted = std::env::var(DEFAULT_CLIENT_ENV).unwrap_or_default();
    match wanted.trim() {
        "" | "auto" => first_available(&Client::PREFERENCE).unwrap_or(Device::BINARY),
        spec => Device::parse(spec)
            .ok()
            .filter(|d| check_device(*d).is_ok())
            .unwrap_or_else(|| first_available(&Client::PREFERENCE).unwrap_or(Device::BINARY)),
    }
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

/// Where new work goes when neither an argument nor an operand says otherwise.
pub fn default_device() -> Device {
    if let Some(d) = from_session_file() {
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
    to_session_file(device);
    Ok(device)
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

/// Decides where an operation runs: `explicit` if given; else the common device of the
/// operands (scalars and binary tensors follow the others); else the session default.
/// Two operands on different devices are an error naming both and the fix.
pub fn resolve_device(
    op: &'static str,
    explicit: Option<Device>,
    operands: &[&Tensor],
) -> Result<Device> {
    // A freed operand is the more useful error than any placement conflict it would cause.
    if let Some(t) = operands.iter().find(|t| t.is_deallocated()) {
        return Err(t.deallocated());
    }
    if let Some(d) = explicit {
        check_device(d)?;
        return Ok(d);
    }
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
    if let Some(t) = chosen {
        return Ok(t.device());
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
