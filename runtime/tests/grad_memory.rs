//! Training does not leak: a thousand steps of notebook 05's compiled SGD step leave the
//! heap's live bytes (counted by this binary's allocator) and the process's resident memory
//! where a few hundred steps left them (every intermediate of the forward and backward passes
//! is freed). Its own test binary, so no other test allocates beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};

use tensorbook::bench::train::{init_params, one_hot, sgd_step, LAYERS};
use tensorbook::{on, DType, Device, Tensor};

/// The system allocator, counting the bytes that are allocated and not yet freed.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: every call is passed to the system allocator as it came; only the count is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `alloc` and `dealloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn a_thousand_training_steps_keep_memory_flat() {
    let Some(_) = resident_bytes() else {
        println!("skipped: no /proc/self/statm on this system");
        return;
    };
    let host = on(Device::host(0));
    let x = host
        .random_uniform(1, DType::F32, &[256, LAYERS[0]], 0.0, 1.0)
        .unwrap();
    let labels = host
        .random_uniform(2, DType::U8, &[256], 0.0, 10.0)
        .unwrap();
    let y = one_hot(&labels, LAYERS[2]).unwrap();
    let step = sgd_step(0.1);
    let mut params = init_params(Device::host(0), 3).unwrap();
    let mut after = Vec::new();
    let mut live = Vec::new();
    for i in 1..=1000 {
        let mut args: Vec<Tensor> = params.clone();
        args.extend([x.clone(), y.clone()]);
        let out = step.call(&args).unwrap();
        drop(args);
        params = out[1..].to_vec();
        drop(out);
        if i == 300 || i == 1000 {
            after.push(resident_bytes().unwrap_or(0));
            live.push(LIVE.load(Ordering::Relaxed));
        }
    }
    let grew = after[1].saturating_sub(after[0]);
    let live_grew = live[1] - live[0];
    println!(
        "resident after 300 steps {:.1} MiB, after 1000 {:.1} MiB; live heap {} -> {} bytes",
        after[0] as f64 / 1048576.0,
        after[1] as f64 / 1048576.0,
        live[0],
        live[1]
    );
    // The heap holds exactly what it held: a leak of even 16 bytes a step would be 11 KB here
    // (the old bound, 8 MiB of resident memory, let 12 KB a step through).
    assert!(
        live_grew < 1024,
        "the live heap grew by {live_grew} bytes over 700 steps"
    );
    // Memory that is not the heap's (mapped buffers) is held to one step's intermediates.
    assert!(
        grew < 2 << 20,
        "resident memory grew by {grew} bytes over 700 steps"
    );
}
