//! How much host memory one allocation may take. A request larger than the machine can give
//! would otherwise succeed (Linux overcommits) and then fill memory page by page for a minute
//! before the OOM killer ends the session; it is refused up front instead, with
//! `Error::Allocation`. The limit is the cap from [`crate::settings`] when there is one
//! ([`set_host_memory_limit`](crate::set_host_memory_limit) or `TENSORBOOK_HOST_MEMORY_LIMIT`:
//! bytes, or with a `K`/`M`/`G`/`T` suffix), else the memory the kernel reports available
//! (`MemAvailable` in `/proc/meminfo`).
//!
//! The check applies to one allocation at a time, not to the sum of live tensors: available
//! memory already falls as tensors are held.

use crate::contract::env;

/// Requests below this are not checked: reading `/proc/meminfo` costs more than they do, and
/// they cannot exhaust a machine one at a time.
const CHECK_FROM: usize = 64 << 20;

/// The memory the kernel says can be allocated without swapping, in bytes.
pub fn available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Admits an allocation of `bytes`, or says why it is refused.
pub(crate) fn admit(bytes: usize) -> Result<(), String> {
    if bytes < CHECK_FROM {
        return Ok(());
    }
    let wanted = bytes as u64;
    if let Some(cap) = crate::settings::host_memory_limit() {
        if wanted > cap {
            return Err(format!(
                "over the host memory limit of {cap} bytes ({} or set_host_memory_limit)",
                env::HOST_MEMORY_LIMIT
            ));
        }
        return Ok(());
    }
    match available() {
        Some(free) if wanted > free => Err(format!(
            "this machine has {free} bytes available (set {} to choose the limit)",
            env::HOST_MEMORY_LIMIT
        )),
        _ => Ok(()),
    }
}
