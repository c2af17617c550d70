//! Several devices at once: partitioned servings, the all-reduce and data-parallel compiled
//! functions, on the simulated accelerator (`sim:0..3`: memory of its own, queued work) and
//! the virtual host devices (`host:0..1`), each checked against one device doing all the work.
//! Every test holds one lock: they change process-wide settings (device counts, a device's
//! memory, the session default) and count work per device.

use std::sync::{Mutex, MutexGuard};

use tensorbook::bench::train::{init_params, one_hot, sgd_step};
use tensorbook::testing::sim;
use tensorbook::{
    all_reduce, data_parallel, jit, nccl_status, on, set_default_device, set_host_device_count,
    set_sim_device_count, set_sim_device_memory_limit, value_and_grad_wrt, Combine, DType, Device,
    Error, Jit, Reduction, Serving, Tensor,
};

fn setup() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    set_sim_device_count(4);
    set_host_device_count(2).unwrap();
    guard
}

fn sims(n: usize) -> Vec<Device> {
    (0..n).map(Device::sim).collect()
}

fn hosts() -> Vec<Device> {
    vec![Device::host(0), Device::host(1)]
}

fn assert_close(what: &str, expected: &Tensor, actual: &Tensor, tol: f64) {
    assert_eq!(expected.shape(), actual.shape(), "{what}: shape");
    let (e, a) = (expected.to_f64_vec().unwrap(), actual.to_f64_vec().unwrap());
    for (i, (x, y)) in e.iter().zip(&a).enumerate() {
        assert!(
            (x - y).abs() <= tol * x.abs().max(1.0),
            "{what}: element {i}: one device gives {x}, several give {y}"
        );
    }
}

/// A small network layer: what a serving typically runs.
fn layer() -> Jit<Tensor> {
    jit(|x: &Tensor| {
        let w = on(x.device())
            .iota(DType::F32, &[8, 5], None)?
            .multiply(0.01)?;
        x.dot(&w)?.add(1.0)?.tanh()
    })
}

fn input(rows: usize) -> Tensor {
    on(Device::host(0))
        .random_uniform(7, DType::F32, &[rows, 8], -1.0, 1.0)
        .unwrap()
}

#[test]
fn a_partitioned_serving_equals_one_device_and_uses_every_device() {
    let _g = setup();
    for devices in [sims(4), sims(2), hosts()] {
        let x = input(100);
        let single = Serving::of(&layer())
            .on(devices[0])
            .batch_size(8)
            .run(&x)
            .unwrap();
        let queued_before: Vec<u64> = (0..4).map(sim::ops_queued).collect();
        let serving = Serving::of(&layer())
            .partitioned_over(&devices)
            .on(devices[0])
            .batch_size(8);
        let out = serving.run(&x).unwrap();
        assert_close(&format!("serving over {devices:?}"), &single, &out, 1e-6);
        assert_eq!(out.device(), devices[0], "gathered on the serving's device");
        // 13 batches of 8 (the last padded) dealt round robin.
        let ran = serving.batches_run();
        assert_eq!(ran.len(), devices.len(), "{ran:?}");
        for (device, batches) in &ran {
            assert!(devices.contains(device));
            assert!(
                *batches >= 13 / devices.len(),
                "{device}: {batches} batches"
            );
        }
        assert_eq!(ran.iter().map(|r| r.1).sum::<usize>(), 13);
        let mut compiled = serving.compiled_for();
        compiled.sort_by_key(|d| d.to_string());
        let mut expected = devices.clone();
        expected.sort_by_key(|d| d.to_string());
        assert_eq!(compiled, expected);
        // The devices themselves saw the work.
        for d in devices
            .iter()
            .filter(|d| d.client == tensorbook::Client::Sim)
        {
            assert!(
                sim::ops_queued(d.id) > queued_before[d.id],
                "{d} ran no op of the serving"
            );
        }
    }
}

#[test]
fn run_batches_leaves_each_result_where_it_was_computed() {
    let _g = setup();
    let serving = Serving::of(&layer())
        .partitioned_over(&sims(3))
        .on(Device::host(0))
        .batch_size(10);
    let x = input(45);
    let parts = serving.run_batches(&x).unwrap();
    let placements: Vec<String> = parts.iter().map(|t| t.device().to_string()).collect();
    assert_eq!(placements, ["sim:0", "sim:1", "sim:2", "sim:0", "sim:1"]);
    let rows: Vec<usize> = parts.iter().map(|t| t.shape()[0]).collect();
    assert_eq!(
        rows,
        [10, 10, 10, 10, 5],
        "the last batch without its padding"
    );
    assert!(
        serving.summary().starts_with(
            "#Serving<batches of 10, partitioned over [sim:0, sim:1, sim:2], #Function<jit"
        ),
        "{}",
        serving.summary()
    );
    // `run` gathers on the pinned device, host:0 here.
    let all = serving.run(&x).unwrap();
    assert_eq!(all.device(), Device::host(0));
    assert_eq!(all.shape(), &[45, 5]);
}

#[test]
fn partitions_follow_the_client_of_the_session_default() {
    let _g = setup();
    let before = tensorbook::default_device();
    set_default_device(Device::sim(1)).unwrap();
    let serving = Serving::of(&layer()).partitions(true).batch_size(4);
    let devices = serving.partition_devices();
    let out = serving.run(&input(30));
    set_default_device(Device::host(1)).unwrap();
    let on_host = serving.partition_devices();
    set_default_device(before).unwrap();
    assert_eq!(devices.unwrap(), sims(4));
    let out = out.unwrap();
    assert_eq!(
        out.device(),
        Device::sim(1),
        "gathered on the session default"
    );
    assert_eq!(on_host.unwrap(), hosts());
    assert_eq!(serving.batches_run().len(), 4);
}

#[test]
fn a_full_device_fails_its_partition_with_an_error_naming_it() {
    let _g = setup();
    // sim:3 gets 16 KiB: a batch's input fits, its result (16 x 512 f32, 32 KiB) does not.
    set_sim_device_memory_limit(3, Some(16 << 10)).unwrap();
    let wide = jit(|x: &Tensor| {
        let w = on(x.device()).ones(DType::F32, &[8, 512])?;
        x.dot(&w)
    });
    let serving = Serving::of(&wide)
        .partitioned_over(&sims(4))
        .on(Device::sim(0))
        .batch_size(16);
    let x = input(128);
    let failed = serving.run(&x);
    let dp = data_parallel(&wide, &sims(4))
        .unwrap()
        .split(&[0])
        .combine(&[Combine::Concat]);
    let replica_failed = dp.call(&input(256));
    set_sim_device_memory_limit(3, None).unwrap();
    let err = failed.unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::Partition { device, .. } if device == Device::sim(3)));
    assert!(
        text.contains("sim:3") && text.contains("batch 4 of 8"),
        "{text}"
    );
    assert!(text.contains("cannot allocate"), "{text}");
    let err = replica_failed.unwrap_err();
    assert!(err.to_string().contains("replica 4 of 4 on sim:3"), "{err}");
    // Nothing else was lost: the same serving runs once the device has room again.
    let ok = serving.run(&x).unwrap();
    assert_eq!(ok.shape(), &[128, 512]);
    assert_eq!(ok.to_vec::<f32>().unwrap().len(), 128 * 512);
}

#[test]
fn a_panicking_partition_is_an_error_of_its_device() {
    let _g = setup();
    let serving = Serving::new(|x: &Tensor| {
        if x.device() == Device::sim(2) {
            panic!("no luck on this one");
        }
        x.multiply(2.0)
    })
    .partitioned_over(&sims(3))
    .on(Device::sim(0))
    .batch_size(4);
    let err = serving.run(&input(12)).unwrap_err().to_string();
    assert!(err.contains("sim:2") && err.contains("no luck"), "{err}");
}

#[test]
fn partition_lists_are_checked() {
    let _g = setup();
    let twice = Serving::of(&layer()).partitioned_over(&[Device::sim(0), Device::sim(0)]);
    assert!(twice
        .run(&input(4))
        .unwrap_err()
        .to_string()
        .contains("listed twice"));
    let absent = Serving::of(&layer()).partitioned_over(&[Device::sim(0), Device::sim(9)]);
    assert!(matches!(
        absent.run(&input(4)),
        Err(Error::DeviceNotFound { .. })
    ));
    let none = Serving::of(&layer()).partitioned_over(&[]);
    assert!(none.run(&input(4)).is_err());
}

#[test]
fn all_reduce_sums_and_averages_on_every_device() {
    let _g = setup();
    let cases: Vec<Vec<Device>> = vec![
        sims(4),
        hosts(),
        vec![Device::sim(0), Device::host(1), Device::BINARY],
    ];
    for devices in cases {
        let parts: Vec<Tensor> = devices
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                on(d)
                    .iota(DType::F64, &[2, 3], None)
                    .unwrap()
                    .multiply(i as f64 + 1.0)
                    .unwrap()
            })
            .collect();
        let n = devices.len() as f64;
        let factor = n * (n + 1.0) / 2.0;
        let sums = all_reduce(&parts, Reduction::Sum).unwrap();
        let means = all_reduce(&parts, Reduction::Mean).unwrap();
        for (i, &d) in devices.iter().enumerate() {
            assert_eq!(sums[i].device(), d);
            assert_eq!(means[i].device(), d);
            let expected: Vec<f64> = (0..6).map(|v| v as f64 * factor).collect();
            assert_eq!(sums[i].to_vec::<f64>().unwrap(), expected, "{d}");
            let mean: Vec<f64> = expected.iter().map(|v| v / n).collect();
            assert_eq!(means[i].to_vec::<f64>().unwrap(), mean, "{d}");
        }
    }
}

#[test]
fn all_reduce_between_sim_devices_never_crosses_the_host() {
    let _g = setup();
    let parts: Vec<Tensor> = sims(4)
        .iter()
        .map(|&d| on(d).ones(DType::F32, &[1000]).unwrap())
        .collect();
    let to_host: Vec<u64> = (0..4).map(sim::bytes_to_host).collect();
    let from_peers = sim::bytes_from_peers(0);
    let out = all_reduce(&parts, Reduction::Sum).unwrap();
    for t in &out {
        t.sync().unwrap();
    }
    assert_eq!((0..4).map(sim::bytes_to_host).collect::<Vec<_>>(), to_host);
    assert_eq!(sim::bytes_from_peers(0) - from_peers, 3 * 4000);
    assert_eq!(out[3].to_vec::<f32>().unwrap(), vec![4.0; 1000]);
}

#[test]
fn all_reduce_refuses_what_cannot_be_combined() {
    let _g = setup();
    let a = on(Device::sim(0)).ones(DType::F32, &[3]).unwrap();
    let b = on(Device::sim(1)).ones(DType::F32, &[4]).unwrap();
    let same = on(Device::sim(0)).ones(DType::F32, &[3]).unwrap();
    let ints = [
        on(Device::sim(0)).ones(DType::S32, &[3]).unwrap(),
        on(Device::sim(1)).ones(DType::S32, &[3]).unwrap(),
    ];
    let shape = all_reduce(&[a.clone(), b], Reduction::Sum).unwrap_err();
    assert!(shape.to_string().contains("f32[3]") && shape.to_string().contains("f32[4]"));
    let twice = all_reduce(&[a, same], Reduction::Sum).unwrap_err();
    assert!(
        twice.to_string().contains("two values are on sim:0"),
        "{twice}"
    );
    assert!(all_reduce(&[], Reduction::Sum).is_err());
    assert!(matches!(
        all_reduce(&ints, Reduction::Mean),
        Err(Error::UnsupportedDType { .. })
    ));
    assert_eq!(
        all_reduce(&ints, Reduction::Sum).unwrap()[1]
            .to_vec::<i32>()
            .unwrap(),
        vec![2, 2, 2]
    );
}

#[test]
fn nccl_is_found_or_named_as_missing_without_a_panic() {
    match nccl_status() {
        Ok(found) => assert!(found.starts_with("NCCL"), "{found}"),
        Err(why) => assert!(why.contains("libnccl.so.2"), "{why}"),
    }
}

/// Notebook 05's step: `[w1, b1, w2, b2, x, one_hot]` in, `[loss, w1', b1', w2', b2']` out.
fn training_data(rows: usize) -> (Vec<Tensor>, Tensor, Tensor) {
    let params = init_params(Device::host(0), 3).unwrap();
    let place = on(Device::host(0));
    let x = place
        .random_uniform(11, DType::F32, &[rows, 784], 0.0, 1.0)
        .unwrap();
    let labels = place
        .random_uniform(12, DType::F32, &[rows], 0.0, 10.0)
        .unwrap()
        .floor()
        .unwrap()
        .as_type(DType::S64)
        .unwrap();
    (params, x, one_hot(&labels, 10).unwrap())
}

fn train(
    step: impl Fn(&[Tensor]) -> Vec<Tensor>,
    params: &[Tensor],
    x: &Tensor,
    y: &Tensor,
    steps: usize,
) -> Vec<Tensor> {
    let mut params = params.to_vec();
    let mut losses = Vec::new();
    for _ in 0..steps {
        let mut args = params.clone();
        args.push(x.clone());
        args.push(y.clone());
        let out = step(&args);
        losses.push(out[0].clone());
        params = out[1..].to_vec();
    }
    params.extend(losses);
    params
}

#[test]
fn a_data_parallel_step_gives_the_parameters_of_one_device_on_the_whole_batch() {
    let _g = setup();
    let step = sgd_step(0.5);
    // 96 rows split evenly, 90 over 4 devices (23, 23, 22, 22) weighed by rows.
    for rows in [96, 90] {
        let (params, x, y) = training_data(rows);
        let one = train(
            |a| step.on(Device::host(0)).call(a).unwrap(),
            &params,
            &x,
            &y,
            3,
        );
        for devices in [sims(2), sims(4), hosts()] {
            let parallel = data_parallel(&step, &devices).unwrap().split(&[4, 5]);
            let many = train(|a| parallel.call(a).unwrap(), &params, &x, &y, 3);
            for (i, (e, a)) in one.iter().zip(&many).enumerate() {
                assert_close(
                    &format!("{rows} rows over {devices:?}, output {i}"),
                    e,
                    a,
                    1e-5,
                );
            }
            assert_eq!(many[0].device(), devices[0]);
            assert!(
                format!("{parallel:?}").starts_with(&format!(
                    "#DataParallel<over [{}], split [4, 5], #Function<jit",
                    devices
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                "{parallel:?}"
            );
            // Every replica ends the step with the same parameters, bit for bit.
            let replicas = parallel.replicas();
            assert_eq!(replicas.len(), devices.len());
            for (device, values) in &replicas {
                assert_eq!(values.len(), 5);
                for (k, v) in values.iter().enumerate() {
                    assert_eq!(v.device(), *device);
                    assert_eq!(
                        v.to_vec::<f32>().unwrap(),
                        replicas[0].1[k].to_vec::<f32>().unwrap(),
                        "output {k} on {device}"
                    );
                }
            }
        }
    }
}

#[test]
fn value_and_grad_over_devices_equals_the_whole_batch_gradient() {
    let _g = setup();
    let loss = value_and_grad_wrt(
        |a: &[Tensor]| tensorbook::bench::train::mlp_loss(&a[..4], &a[4], &a[5]),
        &[0, 1, 2, 3],
    );
    let (params, x, y) = training_data(64);
    let mut args = params.clone();
    args.push(x);
    args.push(y);
    let (value, grads) = loss.on(Device::host(0)).call(&args).unwrap();
    let parallel = data_parallel(&loss, &sims(4)).unwrap().split(&[4, 5]);
    let (p_value, p_grads) = parallel.call(&args).unwrap();
    assert_close("loss", &value, &p_value, 1e-5);
    for (g, p) in grads.iter().zip(&p_grads) {
        assert_close("gradient", g, p, 1e-5);
        assert_eq!(p.device(), Device::sim(0));
    }
}

#[test]
fn fed_back_parameters_stay_on_their_devices() {
    let _g = setup();
    let step = sgd_step(0.1);
    let (params, x, y) = training_data(32);
    let parallel = data_parallel(&step, &sims(2)).unwrap().split(&[4, 5]);
    let mut args = params.clone();
    args.extend([x.clone(), y.clone()]);
    let out = parallel.call(&args).unwrap();
    let mut next = out[1..].to_vec();
    next.extend([x, y]);
    for t in &next {
        t.sync().unwrap();
    }
    // The second step finds sim:1's copy of each parameter: only the batch half and the
    // all-reduce cross devices, not the 40,000 parameters twice.
    let peers = sim::bytes_from_peers(1);
    parallel.call(&next).unwrap();
    let moved = sim::bytes_from_peers(1) - peers;
    let params_bytes: u64 = out[1..].iter().map(|t| t.byte_size() as u64).sum();
    assert!(moved <= params_bytes + 4, "{moved} bytes copied into sim:1");
}

#[test]
fn per_example_outputs_are_joined_in_batch_order() {
    let _g = setup();
    let predict = jit(|x: &Tensor| x.multiply(10.0));
    let parallel = data_parallel(&predict, &sims(3))
        .unwrap()
        .split(&[0])
        .combine(&[Combine::Concat]);
    let x = on(Device::host(0)).iota(DType::F32, &[7, 1], None).unwrap();
    let out = parallel.call(&x).unwrap();
    assert_eq!(out.device(), Device::sim(0));
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        vec![0., 10., 20., 30., 40., 50., 60.]
    );
}

#[test]
fn data_parallel_misuse_is_a_clear_error() {
    let _g = setup();
    let f = jit(|x: &Tensor| x.sum(..));
    let x = on(Device::host(0)).iota(DType::F32, &[3, 2], None).unwrap();
    let unsplit = data_parallel(&f, &sims(2)).unwrap();
    assert!(unsplit
        .call(&x)
        .unwrap_err()
        .to_string()
        .contains(".split("));
    let small = data_parallel(&f, &sims(4)).unwrap().split(&[0]);
    assert!(small
        .call(&x)
        .unwrap_err()
        .to_string()
        .contains("3 rows cannot be split over 4 devices"));
    let out_of_range = data_parallel(&f, &sims(2)).unwrap().split(&[3]);
    assert!(out_of_range.call(&x).is_err());
    let ints = jit(|x: &Tensor| x.as_type(DType::S32)?.sum(..));
    let mean_of_ints = data_parallel(&ints, &sims(2)).unwrap().split(&[0]);
    assert!(mean_of_ints
        .call(&x)
        .unwrap_err()
        .to_string()
        .contains("Combine::Sum"));
    assert!(data_parallel(&f, &[]).is_err());
}
