//! The driver API calls the probe makes, bound from the `libcuda.so.1` that `libraries.rs`
//! found, so that a broken or stand-in driver (a container's stub, a library missing a call)
//! is a one-line reason rather than a panic inside cudarc, whose bindings panic on a missing
//! symbol. cudarc drives the GPU only once these calls have succeeded.

use std::ffi::{c_char, c_int, c_uint, CStr};
use std::path::PathBuf;

use super::libraries::{self, static_text, Kind, Loaded};
use cudarc::driver::sys::CUdevice_attribute;

type Status = c_int;
type GetVersion = unsafe extern "C" fn(*mut c_int) -> Status;
type Init = unsafe extern "C" fn(c_uint) -> Status;
type GetCount = unsafe extern "C" fn(*mut c_int) -> Status;
type DeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> Status;
type GetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> Status;
type TotalMem = unsafe extern "C" fn(*mut usize, c_int) -> Status;
type GetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> Status;
type ErrorName = unsafe extern "C" fn(Status, *mut *const c_char) -> Status;

/// One GPU.
#[derive(Clone, Debug)]
pub struct Gpu {
    /// Its ordinal (`cuda:N`).
    pub ordinal: usize,
    /// The name the driver gives it.
    pub name: String,
    /// Its memory in bytes.
    pub memory_bytes: u64,
    /// Its compute capability, `(major, minor)`.
    pub compute_capability: (i32, i32),
}

/// The driver found here.
pub(crate) struct Driver {
    /// Its file.
    pub(crate) path: PathBuf,
    /// `cuDriverGetVersion`: 13000 for CUDA 13.0.
    pub(crate) version: i32,
    loaded: Loaded,
}

impl Driver {
    /// The first `libcuda.so.1` that loads and tells its version, or why there is none.
    pub(crate) fn find() -> std::result::Result<Driver, String> {
        for candidate in libraries::candidates(Kind::Driver) {
            let Ok(loaded) = libraries::load(&candidate) else {
                continue;
            };
            // SAFETY: the driver API's signature; used while `loaded` lives.
            let Ok(get_version) = (unsafe { loaded.symbol::<GetVersion>("cuDriverGetVersion") })
            else {
                continue;
            };
            let mut version = 0;
            // SAFETY: a valid out-pointer.
            if unsafe { get_version(&mut version) } != 0 {
                continue;
            }
            return Ok(Driver {
                path: loaded.path.clone(),
                version,
                loaded,
            });
        }
        let dirs = libraries::search_dirs();
        Err(format!(
            "no NVIDIA driver: libcuda.so.1 is neither on the loader's path nor in {}",
            if dirs.is_empty() {
                "any CUDA folder".to_string()
            } else {
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    }

    fn call<T: Copy>(&self, name: &str) -> std::result::Result<T, String> {
        // SAFETY: each caller names the call with its driver API signature as `T`; the
        // library lives as long as `self`.
        unsafe { self.loaded.symbol(name) }.map_err(|why| format!("the driver at {why}"))
    }

    /// `CUDA_ERROR_NO_DEVICE (100)`, as the driver names a status.
    fn describe(&self, status: Status) -> String {
        let name = self.call::<ErrorName>("cuGetErrorName").ok().and_then(|f| {
            let mut text: *const c_char = std::ptr::null();
            // SAFETY: a valid out-pointer; the driver returns a static string.
            // SAFETY: as above; `static_text` checks for null.
            (unsafe { f(status, &mut text) } == 0)
                .then(|| unsafe { static_text(text) })
                .flatten()
        });
        match name {
            Some(name) => format!("{name} ({status})"),
            None => format!("status {status}"),
        }
    }

    /// Starts the driver (`cuInit`) and counts the GPUs; an error says why in one line.
    pub(crate) fn start(&self) -> std::result::Result<usize, String> {
        let init: Init = self.call("cuInit")?;
        // SAFETY: cuInit takes flags 0.
        let status = unsafe { init(0) };
        if status != 0 {
            return Err(format!(
                "the CUDA driver did not start: {}",
                self.describe(status)
            ));
        }
        let count: GetCount = self.call("cuDeviceGetCount")?;
        let mut n = 0;
        // SAFETY: a valid out-pointer.
        let status = unsafe { count(&mut n) };
        match (status, usize::try_from(n)) {
            (0, Ok(n)) if n > 0 => Ok(n),
            (0, _) => Err("the NVIDIA driver reports no GPU".into()),
            (s, _) => Err(format!(
                "the NVIDIA driver reports no GPU: {}",
                self.describe(s)
            )),
        }
    }

    /// Name, memory and compute capability of GPU `ordinal` (after [`Driver::start`]).
    pub(crate) fn gpu(&self, ordinal: usize) -> Option<Gpu> {
        let get: DeviceGet = self.call("cuDeviceGet").ok()?;
        let get_name: GetName = self.call("cuDeviceGetName").ok()?;
        let total_mem: TotalMem = self.call("cuDeviceTotalMem_v2").ok()?;
        let attribute: GetAttribute = self.call("cuDeviceGetAttribute").ok()?;
        let mut dev = 0;
        let mut name = [0 as c_char; 256];
        let (mut memory, mut major, mut minor) = (0usize, 0, 0);
        let ok = [
            // SAFETY: valid out-pointers and buffer sizes; `dev` comes from cuDeviceGet.
            unsafe { get(&mut dev, c_int::try_from(ordinal).ok()?) },
            // SAFETY: as above.
            unsafe { get_name(name.as_mut_ptr(), 256, dev) },
            // SAFETY: as above.
            unsafe { total_mem(&mut memory, dev) },
            // SAFETY: as above.
            unsafe {
                attribute(
                    &mut major,
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as c_int,
                    dev,
                )
            },
            // SAFETY: as above.
            unsafe {
                attribute(
                    &mut minor,
                    CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as c_int,
                    dev,
                )
            },
        ]
        .iter()
        .all(|&s| s == 0);
        if !ok {
            return None;
        }
        // SAFETY: NUL-terminated by the driver within the buffer.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        Some(Gpu {
            ordinal,
            name,
            memory_bytes: memory as u64,
            compute_capability: (major, minor),
        })
    }
}
