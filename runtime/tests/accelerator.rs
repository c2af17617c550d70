//! The placement rules and the backend contract on accelerators: devices whose memory no other
//! backend can read and whose work is queued. Each test body runs on every accelerator present
//! (`sim:0` always, `cuda:0` when a GPU is), so the host-side decisions of the cuda backend are
//! exercised on machines without one. Tests that change process-wide settings hold the
//! settings lock; the sim-only ones (queue gate, memory limit, transfer counters) come last.

mod common;

use common::{accelerators, enable_sim, global_settings};
use tensorbook::testing::sim;
use tensorbook::{
    on, set_default_device, set_sim_memory_limit, DType, Device, Error, Leftover, Serving, Tensor,
};

#[test]
fn binary_and_scalar_operands_follow_an_accelerator_tensor() {
    let _g = global_settings();
    for device in accelerators() {
        let x = on(device).iota(DType::F32, &[2, 3], None).unwrap();
        let binary = on(Device::BINARY).ones(DType::F32, &[2, 3]).unwrap();
        let row = on(Device::BINARY).iota(DType::F32, &[3], None).unwrap();
        let scalar = on(Device::host(0)).scalar(10.0f32).unwrap();
        let cases: Vec<(&str, Tensor, Vec<f32>)> = vec![
            (
                "binary + accel",
                binary.add(&x).unwrap(),
                vec![1., 2., 3., 4., 5., 6.],
            ),
            (
                "accel - binary",
                x.subtract(&binary).unwrap(),
                vec![-1., 0., 1., 2., 3., 4.],
            ),
            (
                "accel * binary row",
                x.multiply(&row).unwrap(),
                vec![0., 1., 4., 0., 4., 10.],
            ),
            (
                "host scalar * accel",
                scalar.multiply(&x).unwrap(),
                vec![0., 10., 20., 30., 40., 50.],
            ),
            (
                "accel + literal",
                x.add(0.5).unwrap(),
                vec![0.5, 1.5, 2.5, 3.5, 4.5, 5.5],
            ),
            (
                "accel max binary",
                x.max(&binary).unwrap(),
                vec![1., 1., 2., 3., 4., 5.],
            ),
        ];
        for (what, t, expected) in cases {
            assert_eq!(t.device(), device, "{what}");
            assert!(t.to_string().contains(&format!("Backend<{device}>")), "{t}");
            assert_eq!(t.to_vec::<f32>().unwrap(), expected, "{what} on {device}");
        }
        // A binary integer tensor that must also change dtype: moved, then converted there.
        let ints = on(Device::BINARY).iota(DType::S32, &[3], None).unwrap();
        let mixed = x.add(&ints).unwrap();
        assert_eq!((mixed.device(), mixed.dtype()), (device, DType::F32));
        assert_eq!(mixed.to_vec::<f32>().unwrap(), vec![0., 2., 4., 3., 5., 7.]);
        // dot, concatenate, put_slice and take with weak operands.
        let w = on(Device::BINARY).ones(DType::F32, &[3, 2]).unwrap();
        let product = x.dot(&w).unwrap();
        assert_eq!(product.device(), device);
        assert_eq!(product.to_vec::<f32>().unwrap(), vec![3., 3., 12., 12.]);
        let joined = Tensor::concatenate(&[binary.clone(), x.clone()], 0).unwrap();
        assert_eq!(joined.device(), device);
        assert_eq!(joined.shape(), &[4, 3]);
        let patched = x.put_slice(
            &[1, 1],
            &on(Device::BINARY).zeros(DType::F32, &[1, 2]).unwrap(),
        );
        assert_eq!(
            patched.unwrap().to_vec::<f32>().unwrap(),
            vec![0., 1., 2., 3., 0., 0.]
        );
        let idx = on(Device::BINARY).from_vec(vec![2i64, 0], &[2]).unwrap();
        assert_eq!(
            x.take(&idx, 1).unwrap().to_vec::<f32>().unwrap(),
            vec![2., 0., 5., 3.]
        );
        // The sources are untouched: following is a copy, not a move.
        assert_eq!(binary.device(), Device::BINARY);
        assert!(!binary.is_deallocated());
    }
}

#[test]
fn an_accelerator_scalar_follows_a_host_tensor() {
    let _g = global_settings();
    for device in accelerators() {
        let h = on(Device::host(0)).iota(DType::F64, &[3], None).unwrap();
        let s = on(device).scalar(2.0f64).unwrap();
        let out = h.multiply(&s).unwrap();
        assert_eq!(out.device(), Device::host(0));
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![0., 2., 4.]);
    }
}

#[test]
fn two_strong_placements_are_an_error_naming_both() {
    let _g = global_settings();
    for device in accelerators() {
        let a = on(device).ones(DType::F32, &[2]).unwrap();
        let h = on(Device::host(0)).ones(DType::F32, &[2]).unwrap();
        let err = a.add(&h).unwrap_err();
        assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&device.to_string()) && msg.contains("host:0"),
            "{msg}"
        );
        // The fix the message gives works.
        let moved = h.backend_transfer(device).unwrap();
        assert_eq!(
            a.add(&moved).unwrap().to_vec::<f32>().unwrap(),
            vec![2., 2.]
        );
    }
    enable_sim();
    let s0 = on(Device::sim(0)).ones(DType::F32, &[2]).unwrap();
    let s1 = on(Device::sim(1)).ones(DType::F32, &[2]).unwrap();
    assert!(matches!(s0.add(&s1), Err(Error::DeviceMismatch { .. })));
    let moved = s1.backend_transfer(Device::sim(0)).unwrap();
    assert!(s1.is_deallocated());
    assert_eq!(s0.add(&moved).unwrap().device(), Device::sim(0));
}

#[test]
fn transfers_copies_and_deallocation_on_an_accelerator() {
    let _g = global_settings();
    for device in accelerators() {
        let h = on(Device::host(0)).iota(DType::S64, &[4], None).unwrap();
        let up = h.backend_copy(device).unwrap();
        assert_eq!(up.device(), device);
        assert_eq!(up.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
        let moved = up.backend_transfer(Device::BINARY).unwrap();
        assert!(up.is_deallocated());
        assert!(up.to_string().contains("Deallocated"), "{up}");
        assert!(matches!(up.sum(..), Err(Error::Deallocated { .. })));
        assert_eq!(moved.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
        let again = moved.backend_copy(device).unwrap();
        again.deallocate().unwrap();
        assert!(again.deallocate().is_err());
    }
}

#[test]
fn the_session_default_and_servings_honour_an_accelerator() {
    let _g = global_settings();
    for device in accelerators() {
        set_default_device(device).unwrap();
        for t in [
            Tensor::zeros(DType::F32, &[2]).unwrap(),
            Tensor::iota(DType::S32, &[3], None).unwrap(),
            Tensor::random_uniform(3, DType::F32, &[3], 0.0, 1.0).unwrap(),
            Tensor::eye(DType::F64, 2).unwrap(),
        ] {
            assert_eq!(t.device(), device, "{t}");
        }
        let serving = Serving::new(|b: &Tensor| b.multiply(3)).batch_size(4);
        let input = on(Device::BINARY).iota(DType::F32, &[7, 2], None).unwrap();
        let out = serving.run(&input).unwrap();
        assert_eq!(
            out.device(),
            device,
            "the serving ignored the default client"
        );
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            (0..14).map(|i| 3.0 * i as f32).collect::<Vec<_>>()
        );
        let empty = on(Device::BINARY).zeros(DType::F32, &[0, 2]).unwrap();
        let none = serving.run(&empty).unwrap();
        assert_eq!((none.shape(), none.device()), (&[0usize, 2][..], device));
        let batches = out.to_batched(3, Leftover::Repeat).unwrap();
        assert!(batches.iter().all(|b| b.device() == device));
        assert_eq!(
            batches[2].to_vec::<f32>().unwrap(),
            vec![36., 39., 0., 3., 6., 9.]
        );
    }
    set_default_device(Device::host(0)).unwrap();
}

#[test]
fn sim_work_is_queued_and_reads_wait_for_it() {
    let _g = global_settings();
    enable_sim();
    let x = on(Device::sim(1)).iota(DType::F32, &[1000], None).unwrap();
    sim::pause(1).unwrap();
    let y = x.multiply(2).unwrap().add(1).unwrap();
    // The ops returned, but the device has not run them.
    assert!(sim::pending(1) >= 2, "pending: {}", sim::pending(1));
    let resume = std::thread::spawn(|| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        sim::resume(1).unwrap();
    });
    // Reading waits for the queue (and would wait forever if it did not resume).
    let values = y.to_vec::<f32>().unwrap();
    resume.join().unwrap();
    assert_eq!(values[999], 1999.0);
    assert_eq!(sim::pending(1), 0);
    y.sync().unwrap();
}

#[test]
fn sim_memory_runs_out_as_a_typed_error_and_freeing_gives_it_back() {
    let _g = global_settings();
    enable_sim();
    set_sim_memory_limit(1 << 20);
    let a = on(Device::sim(0)).zeros(DType::F32, &[150_000]).unwrap(); // 600 kB
    let err = on(Device::sim(0))
        .zeros(DType::F32, &[150_000])
        .unwrap_err();
    assert!(matches!(err, Error::DeviceAllocation { .. }), "{err}");
    assert!(err.to_string().contains("sim:0"), "{err}");
    // Work that would need more memory fails when queued, not later.
    assert!(matches!(a.add(1.0), Err(Error::DeviceAllocation { .. })));
    a.deallocate().unwrap();
    let b = on(Device::sim(0)).zeros(DType::F32, &[150_000]).unwrap();
    assert!(b.add(1.0).unwrap_err().to_string().contains("in use"));
    drop(b);
    assert_eq!(sim::memory_in_use(0), 0);
    set_sim_memory_limit(1 << 30);
}

#[test]
fn a_display_moves_only_the_printed_elements_off_the_device() {
    let _g = global_settings();
    enable_sim();
    let big = on(Device::sim(0))
        .random_uniform(1, DType::F32, &[1000, 1000], 0.0, 1.0)
        .unwrap()
        .exp()
        .unwrap();
    let before = sim::bytes_to_host(0);
    let text = big.to_string();
    let html = big.to_html();
    let moved = sim::bytes_to_host(0) - before;
    assert!(
        text.contains("Backend<sim:0>") && html.contains("sim:0"),
        "{text}"
    );
    // 10 x 10 previewed values, twice (text and HTML), 4 bytes each.
    assert!(moved <= 2 * 100 * 4, "{moved} bytes crossed for a preview");
    assert_eq!(big.to_vec::<f32>().unwrap().len(), 1_000_000);
}
