//! Work over several devices at once, as EXLA's partitioned servings and Nx's sharded jit:
//! which devices take part ([`Partitions`]), running one piece of work per device
//! concurrently ([`on_each`]), combining the devices' values ([`all_reduce`]) and compiled
//! functions replicated over devices with the batch split between them ([`DataParallel`]).
//!
//! Each device gets a thread of its own for the length of a call: tracing, compiling and
//! queueing its work happen side by side, and an accelerator's queue never waits for another
//! device's host-side work.

pub(crate) mod all_reduce;
pub(crate) mod data_parallel;

use std::fmt;

use crate::client::{check_device, devices_of};
use crate::device::Device;
use crate::error::{Error, Result};

/// Which devices a partitioned serving or a data-parallel function uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Partitions {
    /// Every device of the client the work would otherwise run on (the pinned device's
    /// client, else the session default's), decided at each call: EXLA's `partitions: true`.
    AllOfClient,
    /// These devices, in this order.
    Devices(Vec<Device>),
}

impl Partitions {
    /// The devices for work that would run on `device` alone, each checked.
    pub fn resolve(&self, device: Device) -> Result<Vec<Device>> {
        let devices = match self {
            Partitions::AllOfClient => devices_of(device.client)?,
            Partitions::Devices(list) => list.clone(),
        };
        check_devices(&devices)?;
        Ok(devices)
    }
}

impl fmt::Display for Partitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Partitions::AllOfClient => f.write_str("every device of the client"),
            Partitions::Devices(list) => {
                let names: Vec<String> = list.iter().map(Device::to_string).collect();
                write!(f, "[{}]", names.join(", "))
            }
        }
    }
}

/// Checks a list of devices for work split between them: not empty, each usable, none twice.
pub(crate) fn check_devices(devices: &[Device]) -> Result<()> {
    if devices.is_empty() {
        return Err(Error::InvalidArgument {
            op: "partitions",
            message: "no devices given: name at least one".into(),
        });
    }
    for (i, d) in devices.iter().enumerate() {
        check_device(*d)?;
        if devices[..i].contains(d) {
            return Err(Error::InvalidArgument {
                op: "partitions",
                message: format!("{d} is listed twice: each device takes one partition"),
            });
        }
    }
    Ok(())
}

/// Runs `work(i, devices[i])` for every device, each on a thread of its own and all at once,
/// and returns each result in device order. A panic in one device's work is that device's
/// error; the others still finish. One device runs on the calling thread.
pub(crate) fn on_each<T: Send>(
    devices: &[Device],
    work: impl Fn(usize, Device) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    if let [only] = devices {
        return vec![work(0, *only)];
    }
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .iter()
            .enumerate()
            .map(|(i, &device)| {
                let spawned = std::thread::Builder::new()
                    .name(format!("tensorbook-{device}"))
                    .spawn_scoped(scope, move || work(i, device));
                (device, spawned)
            })
            .collect();
        handles
            .into_iter()
            .map(|(device, spawned)| match spawned {
                Ok(handle) => handle.join().unwrap_or_else(|panic| {
                    Err(Error::InvalidArgument {
                        op: "partition",
                        message: format!("the work on {device} panicked: {}", panic_text(&panic)),
                    })
                }),
                Err(e) => Err(Error::Device {
                    op: "partition",
                    device,
                    message: format!("no thread could be started for it: {e}"),
                }),
            })
            .collect()
    })
}

fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
