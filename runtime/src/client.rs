//! Clients: which backends exist on this machine, how many devices each has, and why one is
//! unavailable. Asking for an absent client is an error that says why, never a fallback.

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

fn cuda_status() -> &'static std::result::Result<usize, String> {
    crate::backend::cuda::probe()
}

/// The state of one client.
pub fn client_info(client: Client) -> ClientInfo {
    let (available, device_count, reason) = match client {
        Client::Binary => (true, 1, None),
        Client::Host => (true, crate::settings::host_device_count(), None),
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

pub use crate::backend::cuda::{Component as CudaComponent, CudaReport, Gpu};

/// What the cuda client found here: the driver, cuBLAS and NVRTC in use (paths and versions,
/// for CUDA 12 or 13) or why none is, and each GPU's name, memory and compute capability.
pub fn cuda_report() -> &'static CudaReport {
    crate::backend::cuda::report()
}

/// How an all-reduce between cuda devices goes: NCCL's version and file when it can be loaded,
/// else why not (the all-reduce then goes through copies).
pub fn nccl_status() -> std::result::Result<String, String> {
    crate::backend::cuda::nccl_status()
}

/// The state of every client: cuda, sim, host, binary.
pub fn clients() -> Vec<ClientInfo> {
    Client::ALL.iter().map(|&c| client_info(c)).collect()
}

/// Every device of every available client, binary first: what the conformance suite iterates.
pub fn devices() -> Vec<Device> {
    let mut out = vec![Device::BINARY];
    for client in Client::ALL.into_iter().filter(|&c| c != Client::Binary) {
        out.extend(devices_of(client).unwrap_or_default());
    }
    out
}

/// Every device of `client`, in order, or why the client is unavailable.
pub fn devices_of(client: Client) -> Result<Vec<Device>> {
    let info = client_info(client);
    if !info.available {
        return Err(Error::ClientUnavailable {
            client,
            reason: info.reason.unwrap_or_default(),
        });
    }
    Ok((0..info.device_count)
        .map(|id| Device { client, id })
        .collect())
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
