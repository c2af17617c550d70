//! Reuse of large freed host buffers.
//!
//! A fresh buffer of tens of megabytes comes from `mmap`, and the kernel zeroes each page on
//! first touch: perf showed `clear_page_erms` at 31% of a 10M-element f32 add against 38% for
//! the add itself. glibc cannot be told to keep such blocks (its mmap threshold stops at
//! 32 MiB), so host memory keeps them here instead: when a tensor's host memory is dropped, a
//! buffer from [`FROM_BYTES`] up is kept, and the next request of the same dtype and about the
//! same size takes it back with its pages already mapped.
//!
//! In a notebook's evaluation process large buffers are in shared memory
//! ([`crate::shared_memory`]), which the system backs with 4 KiB pages only (measured in a cell,
//! a 10M-element f32 add on fresh shared memory took 2.7x as long as on heap memory): there
//! buffers are kept from [`crate::shared_memory::FROM_BYTES`] on (cells link the runtime from
//! one shared library, so they share one pool), and never one the kernel holds (a kept
//! variable's value, see [`crate::shared_memory::Region::is_pinned`]).
//!
//! The pool holds at most [`MAX_BUFFERS`] buffers and [`MAX_BYTES`] in all, oldest given up
//! first, so idle memory stays bounded.

use std::sync::Mutex;

use crate::buffer::Buffer;
use crate::element::Element;
use crate::host_vec::HostVec;

/// Buffers smaller than this go back to the allocator (too small for their faults to
/// matter). 1 MiB, not 8: a training step's activations and gradients are 2 MiB each
/// (`{10000, 50}` f32), and glibc handed them back to the system between steps: 25 steps of
/// `tensorbook bench train` took 110,195 page faults with 8 MiB and 8 buffers, 6,659 with
/// 1 MiB and 16.
pub const FROM_BYTES: usize = 1 << 20;

/// Most buffers kept at once (a training step has a dozen such intermediates live).
pub const MAX_BUFFERS: usize = 16;

/// Most bytes kept at once.
pub const MAX_BYTES: usize = 1 << 30;

static POOL: Mutex<Vec<Buffer>> = Mutex::new(Vec::new());

fn capacity_bytes(b: &Buffer) -> usize {
    crate::buffer::with_buffer!(b, v => v.capacity()).saturating_mul(b.dtype().size_in_bytes())
}

/// Keeps `buffer`'s allocation for reuse when it is large enough, else frees it.
pub fn give(mut buffer: Buffer) {
    let bytes = capacity_bytes(&buffer);
    let from = if buffer.region().is_some() {
        crate::shared_memory::FROM_BYTES
    } else {
        FROM_BYTES
    };
    if !(from..=MAX_BYTES).contains(&bytes) {
        return;
    }
    // Shared memory another process holds is a kept variable's value: never written again.
    if buffer.region().is_some_and(|r| r.is_pinned()) {
        return;
    }
    crate::buffer::with_buffer!(&mut buffer, v => v.clear());
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    pool.push(buffer);
    while pool.len() > MAX_BUFFERS || pool.iter().map(capacity_bytes).sum::<usize>() > MAX_BYTES {
        pool.remove(0);
    }
}

/// An empty vector with room for `len` elements from the pool: the smallest kept buffer of
/// `T` that holds `len` without wasting more than a quarter of itself.
pub fn take<T: Element>(len: usize) -> Option<HostVec<T>> {
    let from = if crate::settings::shared_host_memory() {
        crate::shared_memory::FROM_BYTES
    } else {
        FROM_BYTES
    };
    if len.saturating_mul(std::mem::size_of::<T>()) < from {
        return None;
    }
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let fits = |b: &Buffer| {
        T::slice_of(b).is_some() && {
            let cap = capacity_bytes(b) / std::mem::size_of::<T>().max(1);
            cap >= len && cap - len <= cap / 4
        }
    };
    let best = pool
        .iter()
        .enumerate()
        .filter(|(_, b)| fits(b))
        .min_by_key(|(_, b)| capacity_bytes(b))
        .map(|(i, _)| i)?;
    T::vec_of(pool.swap_remove(best)).ok()
}

/// Bytes the pool holds now.
#[cfg(any(test, feature = "test-hooks"))]
pub fn held_bytes() -> usize {
    POOL.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .map(capacity_bytes)
        .sum()
}

/// Frees every kept buffer (memory given back to the system).
pub fn release() {
    POOL.lock().unwrap_or_else(|e| e.into_inner()).clear();
}
