//! How much host memory one allocation may take. A request larger than the machine can give
//! would otherwise succeed (Linux overcommits) and then fill memory page by page for a minute
//! before the OOM killer ends the session; it is refused up front instead, with
//! `Error::Allocation`. The limit is the cap set by [`set_host_memory_limit`] or
//! `TENSORBOOK_HOST_MEMORY_LIMIT` (bytes, or with a `K`/`M`/`G`/`T` suffix) when there is one,
//! else the memory the kernel reports available (`MemAvailable` in `/proc/meminfo`).
//!
//! The check applies to one allocation at a time, not to the sum of live tensors: available
//! memory already falls as tensors are held.

use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable holding a cap on one host allocation, e.g. `8G`.
pub const HOST_MEMORY_LIMIT_ENV: &str = "TENSORBOOK_HOST_MEMORY_LIMIT";

/// Requests below this are not checked: reading `/proc/meminfo` costs more than they do, and
/// they cannot exhaust a machine one at a time.
const CHECK_FROM: usize = 64 << 20;

/// `u64::MAX`: not read yet; `0`: no cap (use available memory); else the cap in bytes.
static CAP: AtomicU64 = AtomicU64::new(u64::MAX);

/// Caps one host allocation at `bytes` (`None`: the machine's available memory decides).
pub fn set_host_memory_limit(bytes: Option<u64>) {
    CAP.store(bytes.unwrap_or(0).min(u64::MAX - 1), Ordering::Relaxed);
}

/// The cap set by the user, if any.
pub fn host_memory_limit() -> Option<u64> {
    let mut cap = CAP.load(Ordering::Relaxed);
    if cap == u64::MAX {
        cap = std::env::var(HOST_MEMORY_LIMIT_ENV)
            .ok()
            .and_then(|v| parse_bytes(&v))
            .unwrap_or(0)
            .min(u64::MAX - 1);
        CAP.store(cap, Ordering::Relaxed);
    }
    (cap != 0).then_some(cap)
}

/// `123`, `64K`, `512M`, `8G`, `1T` (binary multiples) as bytes.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 10),
        'M' => (&t[..t.len() - 1], 20),
        'G' => (&t[..t.len() - 1], 30),
        'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1u64 << shift)
}

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
    if let Some(cap) = host_memory_limit() {
        if wanted > cap {
            return Err(format!(
                "over the host memory limit of {cap} bytes ({HOST_MEMORY_LIMIT_ENV} or set_host_memory_limit)"
            ));
        }
        return Ok(());
    }
    match available() {
        Some(free) if wanted > free => Err(format!(
            "this machine has {free} bytes available (set {HOST_MEMORY_LIMIT_ENV} to choose the limit)"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("123"), Some(123));
        assert_eq!(parse_bytes("64k"), Some(64 << 10));
        assert_eq!(parse_bytes(" 8G "), Some(8 << 30));
        assert_eq!(parse_bytes("x"), None);
        assert_eq!(parse_bytes("99999999999T"), None);
    }
}
