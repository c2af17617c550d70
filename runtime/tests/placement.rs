//! Placement rules on two virtual host devices: the session default, operands' placement,
//! mixed devices, transfers, servings. These change process-wide settings, so each holds the
//! settings lock.

mod common;

use common::global_settings;
use tensorbook::{
    default_device, on, set_default_client, set_default_device, set_host_device_count, Client,
    DType, Device, Error, Leftover, Serving, Tensor,
};

fn two_host_devices() -> std::sync::MutexGuard<'static, ()> {
    let guard = global_settings();
    set_host_device_count(2).unwrap();
    set_default_device(Device::host(0)).unwrap();
    guard
}

#[test]
fn creation_follows_the_session_default_and_explicit_placement_wins() {
    let _g = two_host_devices();
    assert_eq!(
        Tensor::zeros(DType::F32, &[2]).unwrap().device(),
        Device::host(0)
    );
    set_default_device(Device::host(1)).unwrap();
    for t in [
        Tensor::zeros(DType::F32, &[2]).unwrap(),
        Tensor::iota(DType::S64, &[3], None).unwrap(),
        Tensor::random_normal(1, DType::F32, &[3], 0.0, 1.0).unwrap(),
        Tensor::from_vec(vec![1u8, 2], &[2]).unwrap(),
        Tensor::eye(DType::F64, 2).unwrap(),
    ] {
        assert_eq!(t.device(), Device::host(1), "{t}");
    }
    let explicit = on(Device::BINARY).ones(DType::F32, &[2]).unwrap();
    assert_eq!(explicit.device(), Device::BINARY);
    assert!(explicit.to_string().contains("Backend<binary>"));
}

#[test]
fn changing_the_default_never_moves_existing_tensors() {
    let _g = two_host_devices();
    let slow = on(Device::BINARY).iota(DType::F32, &[4, 4], None).unwrap();
    let h0 = Tensor::iota(DType::F32, &[4, 4], None).unwrap();
    set_default_device(Device::host(1)).unwrap();
    assert_eq!(slow.device(), Device::BINARY);
    assert_eq!(h0.device(), Device::host(0));
    // Work on binary tensors stays on binary even though the default is host:1 (blog lesson 1).
    assert_eq!(slow.dot(&slow).unwrap().device(), Device::BINARY);
    assert_eq!(h0.add(&h0).unwrap().device(), Device::host(0));
}

#[test]
fn scalars_and_binary_tensors_follow_the_other_operand() {
    let _g = two_host_devices();
    let h1 = on(Device::host(1)).iota(DType::F32, &[2, 2], None).unwrap();
    let scalar_h0 = on(Device::host(0)).scalar(2.0f32).unwrap();
    let binary = on(Device::BINARY).ones(DType::F32, &[2, 2]).unwrap();
    assert_eq!(h1.multiply(&scalar_h0).unwrap().device(), Device::host(1));
    assert_eq!(scalar_h0.multiply(&h1).unwrap().device(), Device::host(1));
    assert_eq!(binary.add(&h1).unwrap().device(), Device::host(1));
    assert_eq!(h1.dot(&binary).unwrap().device(), Device::host(1));
    assert_eq!(
        Tensor::concatenate(&[binary.clone(), h1.clone()], 0)
            .unwrap()
            .device(),
        Device::host(1)
    );
    assert_eq!(
        h1.add(1.5).unwrap().to_vec::<f32>().unwrap(),
        vec![1.5, 2.5, 3.5, 4.5]
    );
}

#[test]
fn two_devices_are_an_error_naming_both_and_the_fix() {
    let _g = two_host_devices();
    let a = on(Device::host(0)).ones(DType::F32, &[2, 3]).unwrap();
    let b = on(Device::host(1)).ones(DType::F32, &[3]).unwrap();
    let err = a.add(&b).unwrap_err();
    assert!(matches!(err, Error::DeviceMismatch { .. }));
    let msg = err.to_string();
    assert!(msg.contains("f32[2][3] on host:0"), "{msg}");
    assert!(msg.contains("f32[3] on host:1"), "{msg}");
    assert!(msg.contains("backend_transfer"), "{msg}");
    assert!(a.dot(&b.reshape(&[3, 1]).unwrap()).is_err());
    assert!(Tensor::concatenate(&[a.clone(), b.reshape(&[1, 3]).unwrap()], 0).is_err());
    assert!(a.put_slice(&[0, 0], &b.reshape(&[1, 3]).unwrap()).is_err());
    // The fix the message gives works.
    let moved = b.backend_transfer(Device::host(0)).unwrap();
    assert_eq!(a.add(&moved).unwrap().device(), Device::host(0));
}

#[test]
fn transfers_copies_and_deallocation() {
    let _g = two_host_devices();
    let a = on(Device::host(0)).iota(DType::S32, &[3], None).unwrap();
    let alias = a.clone();
    let copy = a.backend_copy(Device::BINARY).unwrap();
    assert_eq!(copy.device(), Device::BINARY);
    assert_eq!(a.to_vec::<i32>().unwrap(), vec![0, 1, 2]);
    let moved = a.backend_transfer(Device::host(1)).unwrap();
    assert_eq!(moved.device(), Device::host(1));
    assert_eq!(moved.to_vec::<i32>().unwrap(), vec![0, 1, 2]);
    assert!(a.is_deallocated() && alias.is_deallocated());
    assert!(alias.to_string().contains("Deallocated"), "{alias}");
    let err = alias.add(&moved).unwrap_err();
    assert!(matches!(err, Error::Deallocated { .. }), "{err}");
    assert!(err.to_string().contains("s32[3] on host:0"), "{err}");
    assert!(alias.deallocate().is_err());
    // Same device: a no-op that keeps the tensor alive.
    let same = moved.backend_transfer(Device::host(1)).unwrap();
    assert!(!moved.is_deallocated());
    assert_eq!(same.to_vec::<i32>().unwrap(), vec![0, 1, 2]);
    copy.deallocate().unwrap();
    assert!(copy.to_vec::<i32>().is_err());
}

#[test]
fn absent_clients_and_devices_are_errors_that_say_why() {
    let _g = two_host_devices();
    let err = on(Device::host(7)).zeros(DType::F32, &[1]).unwrap_err();
    assert!(
        err.to_string().contains("host:7") && err.to_string().contains("2 device"),
        "{err}"
    );
    assert!(set_default_device(Device::host(2)).is_err());
    assert_eq!(default_device(), Device::host(0));
    let cuda = tensorbook::client_info(Client::Cuda);
    if !cuda.available {
        let err = on(Device::cuda(0)).zeros(DType::F32, &[1]).unwrap_err();
        assert!(matches!(err, Error::ClientUnavailable { .. }), "{err}");
        assert!(err.to_string().contains("cuda"), "{err}");
        // [cuda, host] picks host and says so; [cuda] alone is an error and keeps the default.
        assert_eq!(
            set_default_client(&[Client::Cuda, Client::Host]).unwrap(),
            Device::host(0)
        );
        set_default_device(Device::host(1)).unwrap();
        let err = set_default_client(&[Client::Cuda]).unwrap_err();
        assert!(err.to_string().contains("cuda"), "{err}");
        assert_eq!(default_device(), Device::host(1));
        let t = on(Device::host(0)).ones(DType::F32, &[1]).unwrap();
        assert!(t.backend_copy(Device::cuda(0)).is_err());
    }
    assert_eq!(
        set_default_client(&[Client::Binary]).unwrap(),
        Device::BINARY
    );
}

#[test]
fn a_serving_honours_the_session_default_at_run_time() {
    let _g = two_host_devices();
    let serving = Serving::new(|batch: &Tensor| batch.multiply(2)).batch_size(3);
    let input = on(Device::BINARY).iota(DType::F32, &[7, 2], None).unwrap();
    set_default_device(Device::host(1)).unwrap();
    assert_eq!(serving.device().unwrap(), Device::host(1));
    let out = serving.run(&input).unwrap();
    assert_eq!(
        out.device(),
        Device::host(1),
        "the serving ignored the default client"
    );
    assert_eq!(out.shape(), &[7, 2]);
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        (0..14).map(|i| 2.0 * i as f32).collect::<Vec<_>>()
    );
    // Pinned servings stay pinned.
    let pinned = Serving::new(|b: &Tensor| b.add(1))
        .batch_size(4)
        .on(Device::host(0));
    assert_eq!(pinned.run(&input).unwrap().device(), Device::host(0));
    // A function that breaks the batch contract is an error, not a panic.
    let bad = Serving::new(|b: &Tensor| b.sum(..));
    assert!(bad
        .run(&input)
        .unwrap_err()
        .to_string()
        .contains("one row per input row"));
}

#[test]
fn to_batched_stays_on_the_tensors_device() {
    let _g = two_host_devices();
    let t = on(Device::host(1)).iota(DType::S64, &[5], None).unwrap();
    set_default_device(Device::host(0)).unwrap();
    let repeat = t.to_batched(2, Leftover::Repeat).unwrap();
    assert_eq!(repeat.len(), 3);
    assert!(repeat.iter().all(|b| b.device() == Device::host(1)));
    assert_eq!(repeat[2].to_vec::<i64>().unwrap(), vec![4, 0]);
    let discard = t.to_batched(2, Leftover::Discard).unwrap();
    assert_eq!(discard.len(), 2);
    assert!(t.to_batched(0, Leftover::Repeat).is_err());
}

#[test]
fn random_values_are_the_same_on_every_backend() {
    let _g = two_host_devices();
    for device in tensorbook::devices() {
        let u = on(device)
            .random_uniform(42, DType::F32, &[5], 0.0, 1.0)
            .unwrap();
        let n = on(device)
            .random_normal(42, DType::F64, &[5], 0.0, 1.0)
            .unwrap();
        let u0 = on(Device::BINARY)
            .random_uniform(42, DType::F32, &[5], 0.0, 1.0)
            .unwrap();
        let n0 = on(Device::BINARY)
            .random_normal(42, DType::F64, &[5], 0.0, 1.0)
            .unwrap();
        assert_eq!(u.to_vec::<f32>().unwrap(), u0.to_vec::<f32>().unwrap());
        assert_eq!(n.to_vec::<f64>().unwrap(), n0.to_vec::<f64>().unwrap());
        assert!(u
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .all(|v| (0.0..1.0).contains(v)));
    }
    let other = Tensor::random_uniform(43, DType::F32, &[5], 0.0, 1.0).unwrap();
    let first = Tensor::random_uniform(42, DType::F32, &[5], 0.0, 1.0).unwrap();
    assert_ne!(
        other.to_vec::<f32>().unwrap(),
        first.to_vec::<f32>().unwrap()
    );
}

/// `Nx.with_default_backend`: a default for one closure on this thread, restored after it
/// (after a panic too), nested, and not seen by other threads.
#[test]
fn a_scoped_default_holds_for_its_closure_only() {
    let _g = two_host_devices();
    let inside = tensorbook::with_default_device(Device::BINARY, || {
        let outer = Tensor::iota(DType::S32, &[3], None).unwrap();
        let nested = tensorbook::with_default_device(Device::host(1), || {
            Tensor::zeros(DType::F32, &[2]).unwrap()
        })
        .unwrap();
        let elsewhere = std::thread::spawn(default_device).join().unwrap();
        (outer, nested, default_device(), elsewhere)
    })
    .unwrap();
    assert_eq!(inside.0.device(), Device::BINARY);
    assert_eq!(inside.0.to_vec::<i32>().unwrap(), [0, 1, 2]);
    assert_eq!(inside.1.device(), Device::host(1));
    assert_eq!(
        inside.2,
        Device::BINARY,
        "the outer scope after the nested one"
    );
    assert_eq!(
        inside.3,
        Device::host(0),
        "another thread sees the session default"
    );
    assert_eq!(default_device(), Device::host(0));

    let panicked = std::panic::catch_unwind(|| {
        tensorbook::with_default_device(Device::host(1), || panic!("inside")).unwrap()
    });
    assert!(panicked.is_err());
    assert_eq!(default_device(), Device::host(0), "restored after a panic");

    let err = tensorbook::with_default_device(Device::host(7), || unreachable!())
        .unwrap_err()
        .to_string();
    assert!(err.contains("host:7"), "{err}");
    assert_eq!(default_device(), Device::host(0));
}
