//! The cuda backend on a device: transfers between host and every GPU, asynchrony, memory
//! exhaustion, display. Each test needs a CUDA GPU, so each is `#[ignore]`d with that reason:
//! `cargo test` counts them as ignored, never as passed, and `install/test.sh` runs them with
//! `--include-ignored` where `tensorbook clients` finds a GPU (where one is asked for and
//! absent, they fail and say why).

mod common;

use tensorbook::{client_info, on, Client, DType, Device, Tensor};

/// Fails the test with the reason when there is no GPU: these tests run only when asked for.
fn gpu() {
    let info = client_info(Client::Cuda);
    assert!(
        info.available,
        "this test needs a CUDA GPU: {}",
        info.reason.unwrap_or_default()
    );
}

#[test]
#[ignore = "needs a CUDA GPU (install/test.sh runs it where `tensorbook clients` finds one)"]
fn transfers_round_trip_between_host_and_every_gpu() {
    gpu();
    let count = client_info(Client::Cuda).device_count;
    let host = on(Device::host(0))
        .random_uniform(7, DType::F32, &[257, 33], -1.0, 1.0)
        .unwrap();
    let expected = host.to_vec::<f32>().unwrap();
    for id in 0..count {
        let d = host.backend_copy(Device::cuda(id)).unwrap();
        assert_eq!(d.device(), Device::cuda(id));
        assert!(d.to_string().contains(&format!("Backend<cuda:{id}>")));
        assert_eq!(d.to_vec::<f32>().unwrap(), expected);
        let other = Device::cuda((id + 1) % count);
        let moved = d.backend_transfer(other).unwrap();
        assert!(d.is_deallocated() || other == d.device());
        assert_eq!(moved.to_vec::<f32>().unwrap(), expected);
        let back = moved.backend_transfer(Device::host(0)).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), expected);
    }
}

#[test]
#[ignore = "needs a CUDA GPU (install/test.sh runs it where `tensorbook clients` finds one)"]
fn ops_enqueue_and_sync_waits() {
    gpu();
    let a = on(Device::cuda(0))
        .random_uniform(1, DType::F32, &[2048, 2048], -1.0, 1.0)
        .unwrap();
    let start = std::time::Instant::now();
    let c = a.dot(&a).unwrap();
    let enqueued = start.elapsed();
    c.sync().unwrap();
    let done = start.elapsed();
    eprintln!("2048^3 f32 dot: returned after {enqueued:?}, finished after {done:?}");
    let reference = a
        .backend_copy(Device::host(0))
        .unwrap()
        .dot(&a.backend_copy(Device::host(0)).unwrap())
        .unwrap();
    common::assert_matches(
        "dot 2048",
        Device::cuda(0),
        &reference,
        &c.backend_copy(Device::cuda(0)).unwrap(),
    );
}

#[test]
#[ignore = "needs a CUDA GPU (install/test.sh runs it where `tensorbook clients` finds one)"]
fn an_impossible_allocation_is_an_error_and_the_device_keeps_working() {
    gpu();
    let err = on(Device::cuda(0))
        .zeros(DType::F64, &[1 << 20, 1 << 20])
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cuda:0") && text.contains("bytes"), "{text}");
    let t = on(Device::cuda(0)).iota(DType::S64, &[4], None).unwrap();
    assert_eq!(t.sum(..).unwrap().to_scalar::<i64>().unwrap(), 6);
}

#[test]
#[ignore = "needs a CUDA GPU (install/test.sh runs it where `tensorbook clients` finds one)"]
fn display_shows_the_placement_and_only_previewed_values() {
    gpu();
    let t: Tensor = on(Device::cuda(0))
        .iota(DType::F32, &[10000, 784], None)
        .unwrap();
    let text = t.to_string();
    assert!(
        text.starts_with("#Tensor<f32[10000][784]\n  Backend<cuda:0>\n  [\n    [0.0, 1.0,"),
        "{text}"
    );
    t.deallocate().unwrap();
    assert!(t.to_string().contains("Deallocated"));
}

#[test]
#[ignore = "needs a CUDA GPU (install/test.sh runs it where `tensorbook clients` finds one)"]
fn all_reduce_and_partitions_over_every_gpu() {
    gpu();
    let gpus = tensorbook::devices_of(Client::Cuda).unwrap();
    eprintln!("all-reduce: {:?}", tensorbook::nccl_status());
    let parts: Vec<Tensor> = gpus
        .iter()
        .enumerate()
        .map(|(i, &d)| on(d).full(i as f64 + 1.0, DType::F32, &[1 << 20]).unwrap())
        .collect();
    let n = gpus.len() as f32;
    let summed = tensorbook::all_reduce(&parts, tensorbook::Reduction::Sum).unwrap();
    for (t, d) in summed.iter().zip(&gpus) {
        assert_eq!(t.device(), *d);
        let v = t.to_vec::<f32>().unwrap();
        assert!(v.iter().all(|&x| x == n * (n + 1.0) / 2.0), "{d}: {}", v[0]);
    }
    let x = on(Device::host(0))
        .random_uniform(3, DType::F32, &[1000, 64], -1.0, 1.0)
        .unwrap();
    let f = tensorbook::jit(|x: &Tensor| x.multiply(2.0)?.tanh());
    let serving = tensorbook::Serving::of(&f)
        .on(Device::cuda(0))
        .partitions(true)
        .batch_size(100);
    let out = serving.run(&x).unwrap();
    assert_eq!(out.device(), Device::cuda(0));
    let expected = f.on(Device::host(0)).call(&x).unwrap();
    common::assert_matches("partitioned serving", Device::cuda(0), &expected, &out);
    assert_eq!(serving.batches_run().len(), gpus.len());
}
