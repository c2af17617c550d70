//! One GPU as the cuda backend uses it: its context, the stream every op is enqueued on, the
//! cuBLAS handle, the kernels (compiled by NVRTC once per machine to CUBIN for the GPU's own
//! architecture, cached on disk) and allocation with an optional memory fraction.
//!
//! A notebook links a fresh copy of the runtime into every cell, so every cell has its own
//! copy of these statics. They stay consistent because everything here is per process in the
//! driver: the primary context, the legacy default stream (so work from every cell is ordered
//! on one queue) and the stream-ordered memory pool the fraction is measured on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    sys, CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
    LaunchConfig,
};
use cudarc::nvrtc::Ptx;

use super::blas::BlasHandle;
use super::kernels;
use super::nvrtc::{Nvrtc, Target};
use super::probe::{setup, Setup};
use crate::contract::env;
use crate::device::Device;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::settings;

/// Threads per block for elementwise kernels, and the block size `kernels.cu` reduces with.
const THREADS: u32 = 256;
/// A grid never needs more blocks than this: the kernels stride over the rest.
const MAX_BLOCKS: u64 = 1 << 16;

/// One GPU, ready to take work.
pub(crate) struct CudaDevice {
    pub(crate) ordinal: usize,
    ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    blas: OnceLock<std::result::Result<Mutex<BlasHandle>, String>>,
    module: OnceLock<std::result::Result<Arc<CudaModule>, String>>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    /// Generated kernels (one module each), by name.
    generated: Mutex<HashMap<String, CudaFunction>>,
    memory_fraction: Option<f64>,
}

/// The device `cuda:ordinal`, set up on first use. The caller has checked availability.
pub(crate) fn device(ordinal: usize) -> Result<&'static CudaDevice> {
    static DEVICES: OnceLock<Vec<OnceLock<std::result::Result<CudaDevice, String>>>> =
        OnceLock::new();
    let count = setup().map(|s| s.device_count).unwrap_or(0);
    let slots = DEVICES.get_or_init(|| (0..count).map(|_| OnceLock::new()).collect());
    let d = Device::cuda(ordinal);
    let slot = slots
        .get(ordinal)
        .ok_or(Error::DeviceNotFound { device: d, count })?;
    slot.get_or_init(|| CudaDevice::open(ordinal))
        .as_ref()
        .map_err(|message| Error::Device {
            op: "open",
            device: d,
            message: message.clone(),
        })
}

impl CudaDevice {
    fn open(ordinal: usize) -> std::result::Result<CudaDevice, String> {
        let ctx = CudaContext::new(ordinal).map_err(|e| e.to_string())?;
        // One stream per device, so cudarc's per-buffer events (for ordering across streams)
        // are pure overhead.
        // SAFETY: every buffer of this backend is used on the one stream below.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        // A cap on this process's share of each GPU; nothing is preallocated either way, so
        // several sessions can share one GPU.
        let memory_fraction = settings::cuda_memory_fraction();
        keep_freed_memory(&ctx);
        Ok(CudaDevice {
            ordinal,
            ctx,
            stream,
            blas: OnceLock::new(),
            module: OnceLock::new(),
            functions: Mutex::new(HashMap::new()),
            generated: Mutex::new(HashMap::new()),
            memory_fraction,
        })
    }

    fn placement(&self) -> Device {
        Device::cuda(self.ordinal)
    }

    /// A driver failure of `op` on this device as the runtime's error.
    pub(crate) fn error(&self, op: &'static str, e: impl std::fmt::Display) -> Error {
        Error::Device {
            op,
            device: self.placement(),
            message: e.to_string(),
        }
    }

    /// Queues on this device's stream a copy of `bytes` from `from` (an address on `source`,
    /// whose work producing it is finished) to `to` (an address on this device).
    pub(crate) fn copy_from_peer(
        &self,
        to: sys::CUdeviceptr,
        source: &CudaDevice,
        from: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.error("copy between GPUs", e))?;
        // SAFETY: both addresses are live allocations of at least `bytes` on their contexts
        // (the caller holds both buffers), and the stream is this context's.
        unsafe {
            sys::cuMemcpyPeerAsync(
                to,
                self.ctx.cu_ctx(),
                from,
                source.ctx.cu_ctx(),
                bytes,
                self.stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| self.error("copy between GPUs", e))
    }

    /// The libraries in use (set when this device was opened).
    fn setup(&self) -> Result<&'static Setup> {
        setup().map_err(|why| self.error("open", why))
    }

    /// Runs `f` with this device's cuBLAS handle (bound to its stream), its context current on
    /// this thread; one caller at a time, as a cuBLAS handle requires.
    pub(crate) fn with_blas<R>(
        &self,
        f: impl FnOnce(&BlasHandle) -> std::result::Result<R, String>,
    ) -> Result<R> {
        let blas = &self.setup()?.blas;
        self.ctx
            .bind_to_thread()
            .map_err(|e| self.error("cublas init", e))?;
        let handle = self
            .blas
            .get_or_init(|| {
                blas.handle(self.stream.cu_stream() as *mut std::ffi::c_void)
                    .map(Mutex::new)
            })
            .as_ref()
            .map_err(|e| self.error("cublas init", e))?;
        let handle = handle.lock().unwrap_or_else(|e| e.into_inner());
        f(&handle).map_err(|e| self.error("dot (cuBLAS)", e))
    }

    /// The kernel called `name` (see `kernels.rs`).
    pub(crate) fn function(&self, name: &str) -> Result<CudaFunction> {
        let mut cache = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = cache.get(name) {
            return Ok(f.clone());
        }
        let module = self
            .module
            .get_or_init(|| self.load_module())
            .as_ref()
            .map_err(|e| self.error("compile kernels", e))?;
        let f = module
            .load_function(name)
            .map_err(|e| self.error("load kernel", format!("{name}: {e}")))?;
        cache.insert(name.to_string(), f.clone());
        Ok(f)
    }

    fn load_module(&self) -> std::result::Result<Arc<CudaModule>, String> {
        let image = self.compile(&kernels::source(), "tensorbook_kernels")?;
        self.ctx.load_module(image).map_err(|e| e.to_string())
    }

    /// `source` compiled for this GPU: CUBIN for its architecture, which loads on any driver
    /// of NVRTC's major; PTX only when this NVRTC cannot build for the GPU (one newer than
    /// it), and then only if the driver is at least as new as NVRTC, since the driver
    /// refuses PTX from a newer compiler.
    fn compile(&self, source: &str, stem: &str) -> std::result::Result<Ptx, String> {
        let setup = setup().map_err(str::to_string)?;
        let nvrtc = &setup.nvrtc;
        let (major, minor) = self.ctx.compute_capability().map_err(|e| e.to_string())?;
        let cubin = Target::Cubin(format!("sm_{major}{minor}"));
        match cached_image(nvrtc, source, stem, &cubin) {
            Ok(image) => Ok(image),
            Err(why) if why.contains("--gpu-architecture") || why.contains("invalid value") => {
                let (a, b) = nvrtc.version;
                if a * 1000 + b * 10 > setup.driver_version {
                    return Err(format!(
                        "{} cannot build for sm_{major}{minor}, and its PTX is newer than this \
                         driver (CUDA {}.{}) loads: install an NVRTC for this GPU or a newer \
                         driver",
                        nvrtc.describe(),
                        setup.driver_version / 1000,
                        setup.driver_version % 1000 / 10
                    ));
                }
                cached_image(nvrtc, source, stem, &Target::Ptx(None))
            }
            Err(why) => Err(why),
        }
    }

    /// A generated kernel (`name` in `source`): compiled by NVRTC once per machine (the image
    /// on disk) and loaded once per process.
    pub(crate) fn generated(&self, name: &str, source: &str) -> Result<CudaFunction> {
        let mut cache = self.generated.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = cache.get(name) {
            return Ok(f.clone());
        }
        let image = self
            .compile(source, name)
            .map_err(|e| self.error("compile kernels", format!("{name}: {e}")))?;
        let module = self
            .ctx
            .load_module(image)
            .map_err(|e| self.error("load kernel", format!("{name}: {e}")))?;
        let f = module
            .load_function(name)
            .map_err(|e| self.error("load kernel", format!("{name}: {e}")))?;
        cache.insert(name.to_string(), f.clone());
        Ok(f)
    }

    /// Room for `len` elements (at least one), not initialised (every kernel writes its whole
    /// output).
    pub(crate) fn alloc<T: Element + DeviceRepr>(
        &self,
        len: usize,
        shape: &[usize],
    ) -> Result<CudaSlice<T>> {
        let bytes = len as u128 * T::DTYPE.size_in_bytes() as u128;
        let refuse = |reason: String| Error::DeviceAllocation {
            device: self.placement(),
            shape: shape.to_vec(),
            dtype: T::DTYPE,
            bytes,
            reason,
        };
        if let Some(fraction) = self.memory_fraction {
            let total = self.ctx.total_mem().map_err(|e| self.error("alloc", e))? as u128;
            let allowed = (total as f64 * fraction) as u128;
            let used = self.pool_used().unwrap_or(0) as u128;
            if used + bytes > allowed {
                return Err(refuse(format!(
                    "{used} bytes in use by this process, {allowed} allowed \
                     ({}={fraction} of {total})",
                    env::CUDA_MEMORY_FRACTION
                )));
            }
        }
        // SAFETY: the memory is uninitialised; callers launch a kernel or copy that writes
        // every element before anything reads it.
        unsafe { self.stream.alloc::<T>(len.max(1)) }.map_err(|e| {
            let (free, total) = self.ctx.mem_get_info().unwrap_or((0, 0));
            if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                refuse(format!(
                    "out of device memory ({free} of {total} bytes free)"
                ))
            } else {
                refuse(e.to_string())
            }
        })
    }

    /// Bytes this process holds in the device's stream-ordered pool (every cell's buffers).
    fn pool_used(&self) -> std::result::Result<u64, DriverError> {
        let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
        let mut used: u64 = 0;
        // SAFETY: plain queries of driver-owned objects; both out-pointers are valid locals.
        unsafe {
            sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device()).result()?;
            sys::cuMemPoolGetAttribute(
                pool,
                sys::CUmemPool_attribute_enum::CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                &mut used as *mut u64 as *mut std::ffi::c_void,
            )
            .result()?;
        }
        Ok(used)
    }

    /// Waits for every op enqueued so far.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| self.error("synchronize", e))
    }
}

/// Lets the device's stream-ordered pool keep up to a quarter of the GPU's memory once freed.
/// The pool's default threshold is 0: every synchronisation hands all freed memory back to the
/// driver, so the next eager op maps fresh pages, which made an eager op on 10M f32 cost about
/// 1 ms instead of tens of µs (measured on an H100, docs/gpu-check.md). A quarter rather than
/// everything (as torch's caching allocator keeps) leaves the rest to other sessions on the GPU.
/// Best effort: a driver without pools allocates synchronously and has nothing to keep.
fn keep_freed_memory(ctx: &CudaContext) {
    let Ok(total) = ctx.total_mem() else { return };
    let mut threshold = (total / 4) as u64;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: plain calls on driver-owned objects; both pointers are valid locals and the
    // attribute takes a u64.
    unsafe {
        if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device())
            .result()
            .is_ok()
        {
            let _ = sys::cuMemPoolSetAttribute(
                pool,
                sys::CUmemPool_attribute_enum::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                &mut threshold as *mut u64 as *mut std::ffi::c_void,
            );
        }
    }
}

/// A grid for `n` independent elements.
pub(crate) fn elementwise_config(n: usize) -> LaunchConfig {
    let blocks = (n as u64).div_ceil(THREADS as u64).clamp(1, MAX_BLOCKS) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A grid of one block per row (at most `MAX_BLOCKS`; the kernel strides over the rest).
pub(crate) fn row_config(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((rows as u64).clamp(1, MAX_BLOCKS) as u32, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A grid of one block of `threads` threads per tile (at most `MAX_BLOCKS`; the kernel strides
/// over the rest).
pub(crate) fn tile_config(tiles: u64, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (tiles.clamp(1, MAX_BLOCKS) as u32, 1, 1),
        block_dim: (threads.max(1), 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Where compiled kernels are kept between processes.
fn image_cache_dir() -> Option<PathBuf> {
    settings::kernel_cache_dir()
}

/// The compiled image (CUBIN or PTX) of `source` for `target`: from the disk cache when this
/// exact source was compiled before by this NVRTC (every notebook cell loads the module again,
/// and NVRTC takes seconds), else compiled now and stored as `<stem>-<hash>.<cubin|ptx>`.
fn cached_image(
    nvrtc: &Nvrtc,
    source: &str,
    stem: &str,
    target: &Target,
) -> std::result::Result<Ptx, String> {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (source, target, nvrtc.version).hash(&mut hasher);
    let file = image_cache_dir().map(|d| {
        d.join(format!(
            "{stem}-{:016x}.{}",
            hasher.finish(),
            target.extension()
        ))
    });
    if let Some(bytes) = file.as_ref().and_then(|f| std::fs::read(f).ok()) {
        if !bytes.is_empty() {
            return Ok(image(bytes, target));
        }
    }
    let bytes = nvrtc.compile(source, &format!("{stem}.cu"), target)?;
    if let Some(file) = file {
        // Best effort: a cache that cannot be written only costs the next process a compile.
        // Written aside and renamed, so a concurrent reader never sees half a file.
        let _ = (|| -> std::io::Result<()> {
            let dir = file.parent().unwrap_or(std::path::Path::new("."));
            std::fs::create_dir_all(dir)?;
            let tmp = dir.join(format!(".{stem}-{}.tmp", std::process::id()));
            std::fs::write(&tmp, &bytes)?;
            std::fs::rename(&tmp, &file)
        })();
    }
    Ok(image(bytes, target))
}

/// NVRTC's output as what the driver loads.
fn image(bytes: Vec<u8>, target: &Target) -> Ptx {
    match target {
        Target::Cubin(_) => Ptx::from_binary(bytes),
        Target::Ptx(_) => {
            let text = String::from_utf8_lossy(&bytes);
            Ptx::from_src(text.trim_end_matches('\0').to_string())
        }
    }
}
