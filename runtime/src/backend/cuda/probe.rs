//! Whether cuda can be used on this machine, decided once per process without touching
//! anything in cudarc that panics when a library is missing.

use std::sync::OnceLock;

/// The oldest driver API the backend accepts (CUDA 12.0); cudarc's bindings are for 12.8 and
/// the calls used here all exist since 12.0.
const MIN_DRIVER_VERSION: i32 = 12000;

/// Whether cuda can be used here: the number of devices, or why not. Checked once per process
/// (per notebook cell: each has its own copy), before anything that would panic in cudarc when
/// a library is missing.
pub fn probe() -> &'static std::result::Result<usize, String> {
    static STATUS: OnceLock<std::result::Result<usize, String>> = OnceLock::new();
    STATUS.get_or_init(|| {
        // cudarc panics when a symbol is missing from a library it did load; a probe must not.
        std::panic::catch_unwind(probe_now)
            .unwrap_or_else(|_| Err("the CUDA libraries found here could not be used".into()))
    })
}

fn probe_now() -> std::result::Result<usize, String> {
    // SAFETY: these only try to dlopen the libraries by name.
    let (driver, blas, nvrtc) = unsafe {
        (
            cudarc::driver::sys::is_culib_present(),
            cudarc::cublas::sys::is_culib_present(),
            cudarc::nvrtc::sys::is_culib_present(),
        )
    };
    if !driver {
        return Err("no NVIDIA driver: libcuda.so could not be loaded".into());
    }
    if !blas {
        return Err(
            "the NVIDIA driver is installed but cuBLAS (libcublas.so.12) is not found; \
                    install the CUDA 12 runtime libraries or add them to LD_LIBRARY_PATH"
                .into(),
        );
    }
    if !nvrtc {
        return Err(
            "the NVIDIA driver is installed but NVRTC (libnvrtc.so.12) is not found; \
                    install the CUDA 12 runtime libraries or add them to LD_LIBRARY_PATH"
                .into(),
        );
    }
    cudarc::driver::result::init().map_err(|e| format!("the CUDA driver did not start: {e}"))?;
    let mut version = 0;
    // SAFETY: a plain query into a valid local.
    unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) }
        .result()
        .map_err(|e| format!("the CUDA driver's version is unknown: {e}"))?;
    if version < MIN_DRIVER_VERSION {
        return Err(format!(
            "the NVIDIA driver supports CUDA {}.{}; tensorbook needs 12.0 or newer",
            version / 1000,
            version % 1000 / 10
        ));
    }
    match cudarc::driver::CudaContext::device_count() {
        Ok(n) if n > 0 => Ok(n as usize),
        Ok(_) => Err("the NVIDIA driver reports no GPU".into()),
        Err(e) => Err(format!("the NVIDIA driver reports no GPU: {e}")),
    }
}
