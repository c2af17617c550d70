//! NCCL, the collective library of NVIDIA GPUs: the all-reduce of data-parallel steps between
//! the GPUs of one machine.
//!
//! The types are cudarc's bindings (`cudarc::nccl::sys`); the six calls used are loaded here,
//! at run time like the rest of CUDA, because cudarc's loader tries `libnccl.so`, `.so.12`,
//! `.so.11`, ... and never `libnccl.so.2`, the one name every NCCL package installs (the
//! `libnccl2` packages and the `nvidia-nccl-cu12`/`-cu13` wheels ship no `libnccl.so`). The
//! file is looked for where `libraries.rs` looks for the rest of CUDA.
//! Without NCCL the all-reduce goes through copies (`crate::parallel`), so its absence is a
//! line in `tensorbook clients`, never an error.

use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{DevicePtr, DevicePtrMut, SyncOnDrop};
use cudarc::nccl::sys::{cudaStream_t, ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t};
use libloading::Library;

use super::buffer::{CudaBuffer, CudaData, CudaElement};
use super::device;
use super::libraries::{self, Kind};
use crate::buffer::with_dtype;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};

type GetVersion = unsafe extern "C" fn(*mut c_int) -> ncclResult_t;
type CommInitAll = unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> ncclResult_t;
type AllReduce = unsafe extern "C" fn(
    *const std::ffi::c_void,
    *mut std::ffi::c_void,
    usize,
    ncclDataType_t,
    ncclRedOp_t,
    ncclComm_t,
    cudaStream_t,
) -> ncclResult_t;
type Group = unsafe extern "C" fn() -> ncclResult_t;
type CommDestroy = unsafe extern "C" fn(ncclComm_t) -> ncclResult_t;
type ErrorString = unsafe extern "C" fn(ncclResult_t) -> *const c_char;

/// The loaded library and the calls the all-reduce makes.
pub(crate) struct Nccl {
    /// Which file was loaded and its version, for `tensorbook clients`.
    pub(crate) description: String,
    comm_init_all: CommInitAll,
    all_reduce: AllReduce,
    group_start: Group,
    group_end: Group,
    comm_destroy: CommDestroy,
    error_string: ErrorString,
    // Kept last: the function pointers above point into it.
    _library: Library,
}

/// NCCL if it can be loaded here, or why not. Decided once per process.
pub(crate) fn status() -> &'static std::result::Result<Nccl, String> {
    static STATUS: OnceLock<std::result::Result<Nccl, String>> = OnceLock::new();
    STATUS.get_or_init(|| {
        std::panic::catch_unwind(load)
            .unwrap_or_else(|_| Err("the NCCL library found here could not be used".into()))
    })
}

fn load() -> std::result::Result<Nccl, String> {
    let mut tried = Vec::new();
    for candidate in libraries::candidates(Kind::Nccl) {
        match libraries::load(&candidate) {
            Ok(loaded) => return bind(loaded),
            Err(e) => tried.push(e),
        }
    }
    Err(format!(
        "NCCL is not installed (libnccl.so.2 neither on the loader's path nor in the CUDA \
         folders and NVIDIA pip packages searched); the all-reduce goes through copies{}",
        if tried.len() > 1 {
            format!(" ({})", tried[1..].join("; "))
        } else {
            String::new()
        }
    ))
}

fn bind(loaded: libraries::Loaded) -> std::result::Result<Nccl, String> {
    let name = loaded.path.display().to_string();
    // SAFETY: the types above are NCCL 2's signatures; the library outlives the pointers
    // (it is kept in the same struct).
    unsafe {
        let get_version: GetVersion = loaded.symbol("ncclGetVersion")?;
        let mut version: c_int = 0;
        let description = if get_version(&mut version) == ncclResult_t::ncclSuccess {
            // NCCL 2.x encodes major*10000 + minor*100 + patch.
            format!(
                "NCCL {}.{}.{} ({name})",
                version / 10000,
                version % 10000 / 100,
                version % 100
            )
        } else {
            format!("NCCL ({name})")
        };
        Ok(Nccl {
            description,
            comm_init_all: loaded.symbol("ncclCommInitAll")?,
            all_reduce: loaded.symbol("ncclAllReduce")?,
            group_start: loaded.symbol("ncclGroupStart")?,
            group_end: loaded.symbol("ncclGroupEnd")?,
            comm_destroy: loaded.symbol("ncclCommDestroy")?,
            error_string: loaded.symbol("ncclGetErrorString")?,
            _library: loaded.library,
        })
    }
}

impl Nccl {
    /// An NCCL result as the runtime's error on `device`.
    fn check(&self, op: &'static str, device: Device, result: ncclResult_t) -> Result<()> {
        if result == ncclResult_t::ncclSuccess {
            return Ok(());
        }
        // SAFETY: NCCL returns a static string for every result code.
        let message = unsafe { libraries::static_text((self.error_string)(result)) }
            .unwrap_or_else(|| format!("{result:?}"));
        Err(Error::Device {
            op,
            device,
            message: format!("NCCL: {message}"),
        })
    }
}

/// One communicator per GPU of a set, made together by `ncclCommInitAll`.
struct Communicators(Vec<ncclComm_t>);

// SAFETY: the communicators are only used while the mutex that holds them is locked, and NCCL
// allows a communicator to be used from any thread when calls are not concurrent.
unsafe impl Send for Communicators {}

impl Drop for Communicators {
    fn drop(&mut self) {
        if let Ok(nccl) = status() {
            for &comm in &self.0 {
                // SAFETY: each was made by ncclCommInitAll and is destroyed once.
                unsafe { (nccl.comm_destroy)(comm) };
            }
        }
    }
}

/// The communicators of each set of GPUs used so far (making them costs a rendezvous).
fn communicators() -> &'static Mutex<HashMap<Vec<usize>, Communicators>> {
    static COMMS: OnceLock<Mutex<HashMap<Vec<usize>, Communicators>>> = OnceLock::new();
    COMMS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// NCCL's name for a dtype; none for 16-bit integers, which NCCL has no type for, and for half
/// floats, which NCCL would sum in 16 bits (both take the copying route instead, whose sums
/// compute in f32 and round once).
fn nccl_type(dtype: DType) -> Option<ncclDataType_t> {
    Some(match dtype {
        DType::U8 => ncclDataType_t::ncclUint8,
        DType::U32 => ncclDataType_t::ncclUint32,
        DType::U64 => ncclDataType_t::ncclUint64,
        DType::S8 => ncclDataType_t::ncclInt8,
        DType::S32 => ncclDataType_t::ncclInt32,
        DType::S64 => ncclDataType_t::ncclInt64,
        DType::F32 => ncclDataType_t::ncclFloat32,
        DType::F64 => ncclDataType_t::ncclFloat64,
        // NCCL has no complex type; a complex sum is two float sums of the interleaved parts.
        DType::U16 | DType::S16 | DType::BF16 | DType::F16 | DType::C64 | DType::C128 => {
            return None
        }
    })
}

/// The address NCCL reads `buffer` at, and the guard that records the read on the buffer's
/// event when dropped: it must live until NCCL's work is queued, so that a later writer of
/// the buffer waits for the all-reduce, not for the moment the address was taken.
fn read_address<'a>(
    buffer: &'a CudaBuffer,
    stream: &'a cudarc::driver::CudaStream,
) -> (CUdeviceptr, SyncOnDrop<'a>) {
    match &buffer.data {
        CudaData::U8(s) => s.device_ptr(stream),
        CudaData::U16(s) => s.device_ptr(stream),
        CudaData::U32(s) => s.device_ptr(stream),
        CudaData::U64(s) => s.device_ptr(stream),
        CudaData::S8(s) => s.device_ptr(stream),
        CudaData::S16(s) => s.device_ptr(stream),
        CudaData::S32(s) => s.device_ptr(stream),
        CudaData::S64(s) => s.device_ptr(stream),
        CudaData::BF16(s) => s.device_ptr(stream),
        CudaData::F16(s) => s.device_ptr(stream),
        CudaData::F32(s) => s.device_ptr(stream),
        CudaData::F64(s) => s.device_ptr(stream),
        CudaData::C64(s) => s.device_ptr(stream),
        CudaData::C128(s) => s.device_ptr(stream),
    }
}

/// The address NCCL writes `buffer` at, taken through the mutable accessor (which orders the
/// write after earlier readers and records it as the buffer's last write), with its guard,
/// held as [`read_address`]'s is.
fn write_address<'a>(
    buffer: &'a mut CudaBuffer,
    stream: &'a cudarc::driver::CudaStream,
) -> (CUdeviceptr, SyncOnDrop<'a>) {
    match &mut buffer.data {
        CudaData::U8(s) => s.device_ptr_mut(stream),
        CudaData::U16(s) => s.device_ptr_mut(stream),
        CudaData::U32(s) => s.device_ptr_mut(stream),
        CudaData::U64(s) => s.device_ptr_mut(stream),
        CudaData::S8(s) => s.device_ptr_mut(stream),
        CudaData::S16(s) => s.device_ptr_mut(stream),
        CudaData::S32(s) => s.device_ptr_mut(stream),
        CudaData::S64(s) => s.device_ptr_mut(stream),
        CudaData::BF16(s) => s.device_ptr_mut(stream),
        CudaData::F16(s) => s.device_ptr_mut(stream),
        CudaData::F32(s) => s.device_ptr_mut(stream),
        CudaData::F64(s) => s.device_ptr_mut(stream),
        CudaData::C64(s) => s.device_ptr_mut(stream),
        CudaData::C128(s) => s.device_ptr_mut(stream),
    }
}

/// The sum of `parts` (one per GPU, distinct GPUs, one dtype and length) on every one of
/// them, through one NCCL all-reduce; `None` when NCCL is absent.
pub(crate) fn all_reduce_sum(parts: &[&CudaBuffer]) -> Result<Option<Vec<CudaBuffer>>> {
    let Ok(nccl) = status() else {
        return Ok(None);
    };
    let Some(first) = parts.first() else {
        return Ok(Some(Vec::new()));
    };
    let (dtype, len) = (first.dtype(), first.len());
    let Some(nccl_dtype) = nccl_type(dtype) else {
        return Ok(None);
    };
    let ordinals: Vec<usize> = parts.iter().map(|p| p.ordinal()).collect();
    let mut key = ordinals.clone();
    key.sort_unstable();
    key.dedup();
    if key.len() != ordinals.len() || parts.iter().any(|p| p.dtype() != dtype || p.len() != len) {
        return Ok(None);
    }
    let devices = ordinals
        .iter()
        .map(|&o| device::device(o))
        .collect::<Result<Vec<_>>>()?;
    let mut outputs = devices
        .iter()
        .map(|dev| {
            let data = with_dtype!(dtype, T => T::wrap(dev.alloc::<T>(len, &[len])?));
            Ok(CudaBuffer {
                ordinal: dev.ordinal,
                len,
                data,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let first_device = Device::cuda(ordinals[0]);
    let mut comms = communicators().lock().unwrap_or_else(|e| e.into_inner());
    if !comms.contains_key(&ordinals) {
        let list = ordinals
            .iter()
            .map(|&o| {
                c_int::try_from(o).map_err(|_| Error::DeviceNotFound {
                    device: Device::cuda(o),
                    count: devices.len(),
                })
            })
            .collect::<Result<Vec<c_int>>>()?;
        let count = c_int::try_from(list.len()).unwrap_or(c_int::MAX);
        let mut made: Vec<ncclComm_t> = vec![std::ptr::null_mut(); list.len()];
        // SAFETY: `made` has room for one communicator per listed device.
        let result = unsafe { (nccl.comm_init_all)(made.as_mut_ptr(), count, list.as_ptr()) };
        nccl.check("all_reduce", first_device, result)?;
        comms.insert(ordinals.clone(), Communicators(made));
    }
    let set = comms.get(&ordinals).ok_or_else(|| Error::Device {
        op: "all_reduce",
        device: first_device,
        message: "internal: NCCL communicators missing".into(),
    })?;
    {
        // The guards of every address, dropped only after the group is queued (below).
        let mut guards = Vec::with_capacity(2 * devices.len());
        let mut addresses = Vec::with_capacity(devices.len());
        for ((part, output), dev) in parts.iter().zip(outputs.iter_mut()).zip(&devices) {
            let (input, read) = read_address(part, &dev.stream);
            let (result, write) = write_address(output, &dev.stream);
            addresses.push((input, result));
            guards.push(read);
            guards.push(write);
        }
        // SAFETY: one all-reduce per communicator inside one group, as NCCL requires when one
        // thread drives several GPUs; every pointer is a live buffer of `len` elements on the
        // communicator's device (borrowed, with its guard, until the group is queued), ordered
        // on that device's stream after the work producing it.
        unsafe {
            nccl.check("all_reduce", first_device, (nccl.group_start)())?;
            let mut launched = Ok(());
            for (i, dev) in devices.iter().enumerate() {
                let (input, result) = addresses[i];
                let result = (nccl.all_reduce)(
                    input as *const std::ffi::c_void,
                    result as *mut std::ffi::c_void,
                    len,
                    nccl_dtype,
                    ncclRedOp_t::ncclSum,
                    set.0[i],
                    dev.stream.cu_stream() as cudaStream_t,
                );
                if launched.is_ok() {
                    launched = nccl.check("all_reduce", Device::cuda(dev.ordinal), result);
                }
            }
            let ended = nccl.check("all_reduce", first_device, (nccl.group_end)());
            launched?;
            ended?;
        }
        drop(guards);
    }
    Ok(Some(outputs))
}
