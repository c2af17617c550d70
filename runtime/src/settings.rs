//! The runtime's settings: each one set by a call (`set_sim_device_count`, ...) or, until then,
//! read once from the environment through [`crate::contract::env`]. This module is where the
//! runtime's environment ends: tensors, ops and backends take their settings from here and
//! never read the environment themselves.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::contract::env;
use crate::error::{Error, Result};

/// Marks a setting not read yet.
const UNREAD: u64 = u64::MAX;

/// A setting's value: the one set, else read once from the environment by `read`.
fn setting(slot: &AtomicU64, read: impl FnOnce() -> u64) -> u64 {
    match slot.load(Ordering::Relaxed) {
        UNREAD => {
            let value = read().min(UNREAD - 1);
            // Another thread may have set it meanwhile; keep theirs.
            let _ = slot.compare_exchange(UNREAD, value, Ordering::Relaxed, Ordering::Relaxed);
            slot.load(Ordering::Relaxed)
        }
        value => value,
    }
}

/// A count as stored in a slot.
fn stored(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(UNREAD - 1).min(UNREAD - 1)
}

/// A stored count as a count (a `u64` that does not fit a `usize` is capped).
fn count(slot: &AtomicU64, read: impl FnOnce() -> usize) -> usize {
    usize::try_from(setting(slot, || stored(read()))).unwrap_or(usize::MAX)
}

static HOST_DEVICES: AtomicU64 = AtomicU64::new(UNREAD);
static SIM_DEVICES: AtomicU64 = AtomicU64::new(UNREAD);
static SIM_MEMORY: AtomicU64 = AtomicU64::new(UNREAD);
/// `0`: no cap (the machine's available memory decides).
static HOST_MEMORY_CAP: AtomicU64 = AtomicU64::new(UNREAD);

/// Each simulated device's memory unless set: 1 GiB.
const DEFAULT_SIM_MEMORY: u64 = 1 << 30;

/// The number of virtual host devices (default 1). Host devices are virtual (they share the
/// CPU) so that every placement rule — "two different devices are an error" included — can be
/// exercised on a machine without a GPU.
pub fn host_device_count() -> usize {
    count(&HOST_DEVICES, || env::host_devices().unwrap_or(1))
}

/// Sets how many virtual host devices exist (`host:0` .. `host:{n-1}`). Existing tensors keep
/// their placement; shrinking below a placement in use makes new work there an error.
///
/// The count is also written to this process's environment (`TENSORBOOK_HOST_DEVICES`): a
/// notebook links a fresh copy of the runtime (and of its statics) into every cell, and the
/// environment is what later cells share.
pub fn set_host_device_count(n: usize) -> Result<()> {
    if n == 0 {
        return Err(Error::InvalidArgument {
            op: "set_host_device_count",
            message: "the host client needs at least one device".into(),
        });
    }
    HOST_DEVICES.store(stored(n), Ordering::Relaxed);
    env::set(env::HOST_DEVICES, n.to_string());
    Ok(())
}

/// The number of simulated devices (0, the default: the client is off).
pub fn sim_device_count() -> usize {
    count(&SIM_DEVICES, env::sim_devices)
}

/// Enables `n` simulated devices (`sim:0` .. `sim:{n-1}`); 0 turns the client off. Tensors
/// already on a device that no longer exists keep their values; new work there is an error.
/// Written to this process's environment too (`TENSORBOOK_SIM_DEVICES`), for the notebook's
/// later cells, as [`set_host_device_count`] does.
pub fn set_sim_device_count(n: usize) {
    SIM_DEVICES.store(stored(n), Ordering::Relaxed);
    env::set(env::SIM_DEVICES, n.to_string());
}

/// Each simulated device's memory, in bytes (default 1 GiB).
pub fn sim_memory_limit() -> u64 {
    setting(&SIM_MEMORY, || {
        env::sim_memory().unwrap_or(DEFAULT_SIM_MEMORY)
    })
}

/// Sets each simulated device's memory, in bytes. Applies to allocations made from now on.
pub fn set_sim_memory_limit(bytes: u64) {
    SIM_MEMORY.store(bytes.min(UNREAD - 1), Ordering::Relaxed);
}

/// Limits set for single simulated devices, by id (`None`: the common limit applies).
static SIM_MEMORY_OF: std::sync::Mutex<Vec<Option<u64>>> = std::sync::Mutex::new(Vec::new());

/// The memory of `sim:id`, in bytes: its own limit if one was set, else the common one.
pub fn sim_memory_limit_of(id: usize) -> u64 {
    let own = SIM_MEMORY_OF
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(id)
        .copied()
        .flatten();
    own.unwrap_or_else(sim_memory_limit)
}

/// Gives the simulated device `sim:id` its own memory size in bytes (`None`: back to the common
/// one), as the GPUs of one machine can differ. Applies to allocations made from now on.
pub fn set_sim_device_memory_limit(id: usize, bytes: Option<u64>) -> Result<()> {
    // A table indexed by id: an absurd id must not become an absurd allocation.
    const MAX_ID: usize = 1 << 12;
    if id >= MAX_ID {
        return Err(Error::InvalidArgument {
            op: "set_sim_device_memory_limit",
            message: format!("sim:{id} is beyond the {MAX_ID} simulated devices there can be"),
        });
    }
    let mut limits = SIM_MEMORY_OF.lock().unwrap_or_else(|e| e.into_inner());
    if limits.len() <= id {
        limits.resize(id + 1, None);
    }
    limits[id] = bytes.map(|b| b.min(UNREAD - 1));
    Ok(())
}

/// The cap on one host allocation set by the user, if any.
pub fn host_memory_limit() -> Option<u64> {
    let cap = setting(&HOST_MEMORY_CAP, || env::host_memory_limit().unwrap_or(0));
    (cap != 0).then_some(cap)
}

/// Caps one host allocation at `bytes` (`None`: the machine's available memory decides).
pub fn set_host_memory_limit(bytes: Option<u64>) {
    HOST_MEMORY_CAP.store(bytes.unwrap_or(0).min(UNREAD - 1), Ordering::Relaxed);
}

static SHARED_HOST_MEMORY: AtomicU64 = AtomicU64::new(UNREAD);

/// Whether large host buffers are allocated in shared memory ([`crate::shared_memory`]), where
/// the kernel can keep a variable's tensor through the death of the process: in a notebook's
/// evaluation process, unless `TENSORBOOK_SHARED_HOST_MEMORY` says otherwise (`1` turns it on
/// elsewhere too, which is how benchmarks measure what it costs).
pub fn shared_host_memory() -> bool {
    setting(&SHARED_HOST_MEMORY, || {
        u64::from(env::shared_host_memory().unwrap_or_else(env::in_evaluation_process))
    }) != 0
}

/// Turns shared host memory on or off for allocations from now on.
pub fn set_shared_host_memory(on: bool) {
    SHARED_HOST_MEMORY.store(u64::from(on), Ordering::Relaxed);
}

/// Where host's large f32/f64 products come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostBlas {
    /// Host's own packed GEMM where the CPU has AVX2 and FMA, else the first of the system's
    /// OpenBLAS or BLIS that loads, else the `gemm` crate.
    Default,
    /// Only the `gemm` crate (`TENSORBOOK_BLAS=none`).
    Builtin,
    /// This library (a file name the loader searches for, or a path).
    Library(String),
}

/// The BLAS choice from `TENSORBOOK_BLAS`, read when host first multiplies matrices.
pub fn host_blas() -> HostBlas {
    match env::blas() {
        None => HostBlas::Default,
        Some(v) if v.eq_ignore_ascii_case("none") => HostBlas::Builtin,
        Some(v) => HostBlas::Library(v),
    }
}

/// The fraction of each GPU's memory this process may take, if capped. Nothing is
/// preallocated either way, so several sessions can share one GPU.
pub fn cuda_memory_fraction() -> Option<f64> {
    env::cuda_memory_fraction()
}

/// Where compiled GPU kernels are kept between processes.
pub fn kernel_cache_dir() -> Option<PathBuf> {
    Some(env::cache_dir()?.join("cuda"))
}

/// Where the environment says CUDA may be installed, for `backend::cuda::libraries`.
pub(crate) struct CudaLocations {
    /// Toolkit roots: `CUDA_HOME`, `CUDA_PATH`.
    pub(crate) toolkits: Vec<PathBuf>,
    /// Python environments' prefixes: the activated virtual and conda environments, then the
    /// parent of every `PATH` folder holding a `python3` or `python`.
    pub(crate) python_prefixes: Vec<PathBuf>,
    /// The user's home (its `.local` holds `pip install --user` packages).
    pub(crate) home: Option<PathBuf>,
}

/// Reads [`CudaLocations`] from the environment.
pub(crate) fn cuda_locations() -> CudaLocations {
    let toolkits = [env::CUDA_HOME, env::CUDA_PATH]
        .into_iter()
        .filter_map(env::path)
        .collect();
    let mut python_prefixes: Vec<PathBuf> = [env::VIRTUAL_ENV, env::CONDA_PREFIX]
        .into_iter()
        .filter_map(env::path)
        .collect();
    if let Some(path) = env::raw(env::SEARCH_PATH) {
        for dir in std::env::split_paths(&path) {
            let has_python = ["python3", "python"].iter().any(|p| dir.join(p).is_file());
            if let (true, Some(prefix)) = (has_python, dir.parent()) {
                python_prefixes.push(prefix.to_path_buf());
            }
        }
    }
    CudaLocations {
        toolkits,
        python_prefixes,
        home: env::path(env::HOME),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_value_wins_over_the_environment_and_zero_hosts_is_refused() {
        assert!(set_host_device_count(0).is_err());
        let before = sim_memory_limit();
        set_sim_memory_limit(12345);
        assert_eq!(sim_memory_limit(), 12345);
        set_sim_memory_limit(before);
    }
}
