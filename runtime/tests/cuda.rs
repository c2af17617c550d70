//! The cuda backend where no GPU is needed: its kernels compile with NVRTC wherever libnvrtc
//! loads, and the no-driver path works. What needs a device (transfers, asynchrony, memory) is
//! in `cuda_device.rs`; the op set itself is covered by `conformance.rs`, which lists cuda
//! devices as soon as the client is available.

mod common;

use tensorbook::testing::cuda;
use tensorbook::{client_info, on, set_default_client, Client, DType, Device, Error};

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
