//! The cuda backend where no GPU is needed: its kernels compile with the NVRTC of CUDA 12 and
//! of CUDA 13, and the no-driver path works. What needs a device (transfers, asynchrony,
//! memory) is in `cuda_device.rs`; the op set itself is covered by `conformance.rs`, which
//! lists cuda devices as soon as the client is available.

mod common;

use std::path::PathBuf;

use tensorbook::testing::cuda::{self, Nvrtc, Target};
use tensorbook::{client_info, on, set_default_client, Client, DType, Device, Error};

/// The project's NVRTC of `major`: PyPI's `nvidia-cuda-nvrtc-cu12` (`nvidia/cuda_nvrtc/lib`)
/// and `nvidia-cuda-nvrtc` 13 (`nvidia/cu13/lib`) in `.venv`, pinned in
/// install/requirements.txt. Missing is a failure: the test command installs both.
fn project_nvrtc(major: u32) -> Nvrtc {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let package = if major >= 13 { "cu13" } else { "cuda_nvrtc" };
    let file = std::fs::read_dir(root.join(".venv/lib"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| {
            python.path().join(format!(
                "site-packages/nvidia/{package}/lib/libnvrtc.so.{major}"
            ))
        })
        .find(|f| f.exists())
        .unwrap_or_else(|| {
            panic!(
                "libnvrtc.so.{major} is not in .venv: run install/python-env.sh, which installs \
                 NVRTC 12 and 13 from install/requirements.txt"
            )
        });
    let nvrtc = cuda::nvrtc_at(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(nvrtc.version.0 as u32, major, "{}", file.display());
    nvrtc
}

/// The targets every kernel is built for: machine code for the H100/H200 the GPU checks run on
/// (what the backend loads there), and PTX for the A100's architecture, which the driver of an
/// A100 or any newer GPU compiles. Machine code for sm_80 as well was a third full
/// compile of every kernel per NVRTC (about 40 s of the test command on two cores) for what
/// the compute_80 PTX already checks: NVVM rejects what sm_80 lacks.
fn targets() -> [Target; 2] {
    [
        Target::Cubin("sm_90".into()),
        Target::Ptx(Some("compute_80".into())),
    ]
}

/// Whether `image` defines the kernel `name`: PTX names it in an `.entry`, a CUBIN (an ELF
/// file) in its symbol table.
fn defines(image: &[u8], target: &Target, name: &str) -> bool {
    match target {
        Target::Ptx(_) => String::from_utf8_lossy(image).contains(&format!(".entry {name}(")),
        Target::Cubin(_) => {
            image.starts_with(b"\x7fELF")
                && image.windows(name.len() + 2).any(|w| {
                    w[0] == 0 && &w[1..=name.len()] == name.as_bytes() && w[name.len() + 1] == 0
                })
        }
    }
}

fn every_op_kernel_compiles_with(major: u32) {
    let nvrtc = project_nvrtc(major);
    let source = cuda::kernels::source();
    for target in targets() {
        let image = nvrtc
            .compile(&source, "tensorbook_kernels.cu", &target)
            .unwrap_or_else(|log| panic!("{log}"));
        for name in cuda::kernels::all_names() {
            assert!(
                defines(&image, &target, &name),
                "{}: kernel {name} missing from the {target}",
                nvrtc.describe()
            );
        }
    }
}

fn every_fused_kernel_compiles_with(major: u32) {
    let nvrtc = project_nvrtc(major);
    let regions = common::regions::regions();
    assert!(!regions.is_empty());
    for (name, region, _) in regions {
        let kernel = cuda::fused::kernel(&region).unwrap();
        for target in targets() {
            let image = nvrtc
                .compile(&kernel.source, &format!("{}.cu", kernel.name), &target)
                .unwrap_or_else(|log| panic!("{name}: {log}"));
            assert!(
                defines(&image, &target, &kernel.name),
                "{name}: {}: kernel {} missing from the {target}",
                nvrtc.describe(),
                kernel.name
            );
        }
    }
}

#[test]
fn every_op_kernel_compiles_with_nvrtc_12() {
    every_op_kernel_compiles_with(12);
}

#[test]
fn every_op_kernel_compiles_with_nvrtc_13() {
    every_op_kernel_compiles_with(13);
}

#[test]
fn every_generated_fused_kernel_compiles_with_nvrtc_12() {
    every_fused_kernel_compiles_with(12);
}

#[test]
fn every_generated_fused_kernel_compiles_with_nvrtc_13() {
    every_fused_kernel_compiles_with(13);
}

#[test]
fn a_rejected_kernel_is_an_error_with_nvrtcs_log() {
    let nvrtc = project_nvrtc(13);
    let err = nvrtc
        .compile(
            "extern \"C\" __global__ void k(float* x) { x[0] = undeclared; }",
            "bad.cu",
            &Target::Cubin("sm_90".into()),
        )
        .unwrap_err();
    assert!(
        err.contains("NVRTC 13.") && err.contains("undeclared"),
        "{err}"
    );
}

#[test]
fn cuda_is_available_exactly_when_a_gpu_is_reported() {
    let _guard = common::global_settings();
    let info = client_info(Client::Cuda);
    let report = tensorbook::cuda_report();
    if info.available {
        // With a GPU: every device is named with its memory and compute capability, and the
        // libraries in use with their versions.
        assert_eq!(report.gpus.len(), info.device_count);
        assert!(report
            .gpus
            .iter()
            .all(|g| g.memory_bytes > 0 && g.compute_capability.0 >= 5));
        for c in [&report.driver, &report.blas, &report.nvrtc] {
            assert!(c.version.is_some() && c.path.is_some(), "{c:?}");
        }
        return;
    }
    let reason = info.reason.expect("an unavailable client says why");
    assert!(!reason.is_empty() && !reason.contains('\n'), "{reason}");
    assert!(!reason.contains("CUDA 12 needed"), "{reason}");
    assert_eq!(info.device_count, 0);
    assert!(report.gpus.is_empty());
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
