//! The cuda backend where it can be checked: its kernels compile with NVRTC wherever libnvrtc
//! loads (no GPU needed), the no-driver path works everywhere, and on a machine with a GPU the
//! device-specific behaviour (transfers, asynchrony, memory) is exercised. The op set itself is
//! covered by `conformance.rs`, which lists cuda devices as soon as the client is available.

mod common;

use tensorbook::backend::cuda;
use tensorbook::{client_info, on, set_default_client, Client, DType, Device, Error, Tensor};

fn gpu() -> bool {
    let info = client_info(Client::Cuda);
    if !info.available {
        eprintln!(
            "skipping: no cuda device here ({})",
            info.reason.unwrap_or_default()
        );
    }
    info.available
}

/// Loads the project's own NVRTC (PyPI's nvidia-cuda-nvrtc-cu12 in `.venv`, pinned in
/// install/requirements.txt) when the system has none. Once a library with the soname
/// `libnvrtc.so.12` is loaded, cudarc's load by name finds it.
fn preload_project_nvrtc() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let Ok(lib_dirs) = std::fs::read_dir(root.join(".venv/lib")) else {
        return;
    };
    for python in lib_dirs.flatten() {
        let lib = python
            .path()
            .join("site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12");
        if lib.exists() {
            // SAFETY: NVIDIA's library; its initialisers only set up NVRTC. Kept loaded for
            // the life of the test process.
            if let Ok(l) = unsafe { libloading::Library::new(&lib) } {
                std::mem::forget(l);
            }
            return;
        }
    }
}

#[test]
fn kernels_compile_with_nvrtc() {
    preload_project_nvrtc();
    let Some(result) = cuda::compile_kernels(Some("compute_90")) else {
        eprintln!(
            "skipping: libnvrtc.so.12 cannot be loaded here (install/python-env.sh installs it \
             into .venv)"
        );
        return;
    };
    let ptx = result.unwrap_or_else(|log| panic!("{log}"));
    for name in cuda::kernels::all_names() {
        assert!(
            ptx.contains(&format!(".entry {name}(")),
            "kernel {name} missing from the PTX"
        );
    }
}

#[test]
fn generated_fused_kernels_compile_with_nvrtc() {
    preload_project_nvrtc();
    for (name, region, _) in common::regions::regions() {
        let kernel = cuda::fused::kernel(&region).unwrap();
        let Some(result) = cuda::compile_source(&kernel.source, Some("compute_90")) else {
            eprintln!("skipping: libnvrtc.so.12 cannot be loaded here");
            return;
        };
        let ptx = result.unwrap_or_else(|log| panic!("{name}: {log}"));
        assert!(
            ptx.contains(&format!(".entry {}(", kernel.name)),
            "{name}: kernel {} missing from the PTX",
            kernel.name
        );
    }
}

#[test]
fn without_a_gpu_cuda_is_unavailable_with_its_reason() {
    let _guard = common::global_settings();
    let info = client_info(Client::Cuda);
    if info.available {
        eprintln!("skipping: this machine has a GPU; the no-driver path is not reachable");
        return;
    }
    let reason = info.reason.expect("an unavailable client says why");
    assert!(!reason.is_empty());
    assert_eq!(info.device_count, 0);
    match on(Device::cuda(0)).zeros(DType::F32, &[2]) {
        Err(Error::ClientUnavailable { client, reason: r }) => {
            assert_eq!(client, Client::Cuda);
            assert_eq!(r, reason);
        }
        other => panic!("expected ClientUnavailable, got {other:?}"),
    }
    let previous = tensorbook::default_device();
    assert_eq!(
        set_default_client(&[Client::Cuda, Client::Host]).unwrap(),
        Device::host(0)
    );
    tensorbook::set_default_device(previous).unwrap();
    let t = on(Device::host(0)).iota(DType::F32, &[3], None).unwrap();
    let err = t.backend_transfer(Device::cuda(0)).unwrap_err();
    assert!(err.to_string().contains("cuda"), "{err}");
    // The failed transfer left the source alone.
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0]);
}

#[test]
fn transfers_round_trip_between_host_and_every_gpu() {
    if !gpu() {
        return;
    }
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
fn ops_enqueue_and_sync_waits() {
    if !gpu() {
        return;
    }
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
fn an_impossible_allocation_is_an_error_and_the_device_keeps_working() {
    if !gpu() {
        return;
    }
    let err = on(Device::cuda(0))
        .zeros(DType::F64, &[1 << 20, 1 << 20])
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("cuda:0") && text.contains("bytes"), "{text}");
    let t = on(Device::cuda(0)).iota(DType::S64, &[4], None).unwrap();
    assert_eq!(t.sum(None, false).unwrap().to_scalar::<i64>().unwrap(), 6);
}

#[test]
fn display_shows_the_placement_and_only_previewed_values() {
    if !gpu() {
        return;
    }
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
