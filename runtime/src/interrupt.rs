//! Cooperative interruption of a running notebook cell.
//!
//! Jupyter's interrupt should stop a cell without losing the session's variables, so the
//! kernel does not kill the evaluation process: it sends it SIGINT, whose handler (installed
//! by the kernel binary, which *is* the evaluation process) only raises a flag. The runtime
//! checks that flag at its own safe points — every tensor operation (benchmark runs included),
//! every 4096 elements of the binary backend's loops, [`sleep`] and `input` — and answers with
//! [`Error::Interrupted`], which a cell's `?` turns into an ordinary error.
//!
//! Every cell is a separate library with its own copy of this crate's statics, so the flag
//! cannot be a static here: the evaluation process publishes its address in
//! an environment variable (see [`crate::contract::interrupt_flag`]). Outside a kernel there is no flag and
//! every check passes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

fn flag() -> Option<&'static AtomicBool> {
    static FLAG: OnceLock<Option<usize>> = OnceLock::new();
    let address = (*FLAG.get_or_init(crate::contract::interrupt_flag::address))?;
    // SAFETY: the address was published by this very process (the pid matches) for a leaked,
    // never-freed AtomicBool, so it is valid and aligned for the rest of the process's life.
    Some(unsafe { &*(address as *const AtomicBool) })
}

/// Returns [`Error::Interrupted`] if the user interrupted the cell, and clears the request so
/// that the next cell starts clean.
pub fn check() -> Result<()> {
    match flag() {
        Some(f) if f.swap(false, Ordering::Relaxed) => Err(Error::Interrupted),
        _ => Ok(()),
    }
}

/// Sleeps like `std::thread::sleep`, but returns [`Error::Interrupted`] as soon as the cell is
/// interrupted (std's sleep resumes after the signal, so a cell sleeping in it is only
/// stopped by restarting the evaluation process).
pub fn sleep(duration: Duration) -> Result<()> {
    let end = Instant::now() + duration;
    loop {
        check()?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(10)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_kernel_nothing_is_interrupted() {
        assert!(check().is_ok());
        assert!(sleep(Duration::from_millis(1)).is_ok());
    }
}
