//! Training does not leak: a thousand steps of notebook 05's compiled SGD step leave the
//! process's resident memory where a few hundred steps left it (every intermediate of the
//! forward and backward passes is freed). Its own test binary, so no other test allocates
//! beside it.

use tensorbook::bench::train::{init_params, one_hot, sgd_step, LAYERS};
use tensorbook::{on, DType, Device, Tensor};

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
    for i in 1..=1000 {
        let mut args: Vec<Tensor> = params.clone();
        args.extend([x.clone(), y.clone()]);
        let out = step.call(&args).unwrap();
        params = out[1..].to_vec();
        if i == 300 || i == 1000 {
            after.push(resident_bytes().unwrap_or(0));
        }
    }
    let grew = after[1].saturating_sub(after[0]);
    println!(
        "resident after 300 steps {:.1} MiB, after 1000 {:.1} MiB",
        after[0] as f64 / 1048576.0,
        after[1] as f64 / 1048576.0
    );
    // One step's intermediates are about 2 MiB; a leak of one of them per step would add
    // hundreds of MiB over 700 steps.
    assert!(
        grew < 8 << 20,
        "resident memory grew by {grew} bytes over 700 steps"
    );
}
