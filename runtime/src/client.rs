//! Clients: which backends exist on this machine, how many devices each has, and why one is
//! unavailable. Asking for an absent client is an error that says why, never a fallback.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::device::{Client, Device};
use crate::error::{Error, Result};

/// What a client reports about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client.
    pub client: Client,
    /// Whether tensors can be placed on it.
    pub available: bool,
    /// Number of devices (0 when unavailable).
    pub device_count: usize,
    /// The device new work goes to when only the client is named.
    pub default_device_id: usize,
    /// Why it is unavailable, when it is.
    pub reason: Option<String>,
}

/// Host devices are virtual (they share the CPU) so that every placement rule — including
/// "two different devices are an error" — can be exercised on a machine without a GPU.
static HOST_DEVICES: AtomicUsize = AtomicUsize::new(0);

/// The environment variable that sets the number of virtual host devices at start-up.
pub const HOST_DEVICES_ENV: &str = "TENSORBOOK_HOST_DEVICES";

fn host_device_count() -> usize {
    match HOST_DEVICES.load(Ordering::Relaxed) {
        0 => {
            let n = std::env::var(HOST_DEVICES_ENV)
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .filter(|&n| n > 0)
                .unwrap_or(1);
            // Another thread may have configured it meanwhile; keep theirs.
            let _ = HOST_DEVICES.compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed);
            HOST_DEVICES.load(Ordering::Relaxed)
        }
        n => n,
    }
}

/// Sets how many virtual host devices exist (`host:0` .. `host:{n-1}`). Existing tensors keep
/// their placement; shrinking below a placement in use makes new work there an error.
///
/// The count is also written to `TENSORBOOK_HOST_DEVICES` in this process's environment: a
/// notebook links a fresh copy of the runtime (and of its statics) into every cell, and the
/// environment is what later cells share.
pub fn set_host_device_count(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "set_host_device_count",
            message: "the host client needs at least one device".into(),
        });
    }
    HOST_DEVICES.store(n, Ordering::Relaxed);
    std::env::set_var(HOST_DEVICES_ENV, n.to_string());
    Ok(())
}

fn cuda_status() -> &'static std::result::Result<usize, String> {
    crate::backend::cuda::probe()
}

/// The state of one client.
pub fn client_info(client: Client) -> ClientInfo {
    let (available, device_count, reason) = match client {
        Client::Binary => (true, 1, None),
        Client::Host => (true, host_device_count(), None),
        Client::Cuda => match cuda_status() {
            Ok(n) => (true, *n, None),
            Err(why) => (false, 0, Some(why.clone())),
        },
        Client::Sim => match crate::backend::sim::status() {
            Ok(n) => (true, n, None),
            Err(why) => (false, 0, Some(why)),
        },
    };
    ClientInfo {
        client,
        available,
        device_count,
        default_device_id: 0,
        reason,
    }
}

/// The state of every client: cuda, sim, host, binary.
pub fn clients() -> Vec<ClientInfo> {
    Client::ALL.iter().map(|&c| client_info(c)).collect()
}

/// Every device of every available client, binary first: what the conformance suite iterates.
pub fn devices() -> Vec<Device> {
    let mut out = vec![Device::BINARY];
    for info in clients() {
        if info.available && info.client != Client::Binary {
            out.extend((0..info.device_count).map(|id| Device {
                client: info.client,
                id,
            }));
        }
    }
    out
}

/// Checks that a device can take tensors now.
pub fn check_device(device: Device) -> Result<()> {
    let info = client_info(device.client);
    if !info.available {
        return Err(Error::ClientUnavailable {
            client: device.client,
            reason: info.reason.unwrap_or_default(),
        });
    }
    if device.id >= info.device_count {
        return Err(Error::DeviceNotFound {
            device,
            count: info.device_count,
        });
    }
    Ok(())
}

/// The client's default device, or why it cannot be used.
pub fn default_device(client: Client) -> Result<Device> {
    let info = client_info(client);
    let device = Device {
        client,
        id: info.default_device_id,
    };
    check_device(device)?;
    Ok(device)
}
