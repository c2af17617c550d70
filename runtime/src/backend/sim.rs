//! The simulated accelerator: client `sim`, devices `sim:0`, `sim:1`, ... Off unless enabled
//! ([`set_sim_device_count`](crate::set_sim_device_count) or `TENSORBOOK_SIM_DEVICES=N`), and never chosen by `auto`.
//!
//! It behaves like a GPU in every way the host side of a backend can observe, so that the
//! decisions the cuda backend depends on (which memory goes where, when to wait, what happens
//! when memory runs out) are tested on machines without one:
//! - **its own memory**: a [`SimBuffer`] is readable only through this backend's download,
//!   gather and sync; handing it to another backend is an `Error::Placement`, as handing host
//!   memory to cuda would be;
//! - **a queue per device**: ops return at once and run later, in order, on the device's own
//!   thread (computed by the host backend's code); reading values, transfers and `sync` wait;
//!   a failure inside queued work surfaces when the result is read, as on a GPU;
//! - **a memory limit per device** ([`set_sim_memory_limit`](crate::set_sim_memory_limit), `TENSORBOOK_SIM_MEMORY`, default
//!   1 GiB): allocation is decided when work is queued, freed when the last reference to a
//!   buffer goes (stream-ordered, like cuda's pool), and exceeding it is
//!   `Error::DeviceAllocation`;
//! - **counted transfers** ([`bytes_to_host`]), so a test can show that a display moves only
//!   the elements it prints; and a gate ([`pause`], [`resume`]) that holds a device's queue, so
//!   a test can observe work that has been queued but not run.

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use super::host::HostBackend;
use super::Backend;
use crate::buffer::Buffer;
use crate::contract::env;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::Op;
use crate::settings;

/// The number of simulated devices (0 when off).
pub fn device_count() -> usize {
    settings::sim_device_count()
}

/// The number of devices, or why the client is unavailable.
pub fn status() -> std::result::Result<usize, String> {
    match device_count() {
        0 => Err(format!(
            "the simulated accelerator is off (set {}=N or call set_sim_device_count(N))",
            env::SIM_DEVICES
        )),
        n => Ok(n),
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// One simulated device: its queue, its memory accounting and its counters.
struct SimDevice {
    id: usize,
    queue: Sender<Job>,
    used: AtomicU64,
    to_host: AtomicU64,
    /// Bytes copied in from other simulated devices without crossing the host.
    from_peers: AtomicU64,
    /// Ops queued on the device so far (what a test counts to see that work went there).
    ops: AtomicU64,
    pending: AtomicUsize,
    paused: Mutex<bool>,
    unpaused: Condvar,
}

impl SimDevice {
    fn start(id: usize) -> Result<Arc<SimDevice>> {
        let (queue, jobs) = mpsc::channel::<Job>();
        let device = Arc::new(SimDevice {
            id,
            queue,
            used: AtomicU64::new(0),
            to_host: AtomicU64::new(0),
            from_peers: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            pending: AtomicUsize::new(0),
            paused: Mutex::new(false),
            unpaused: Condvar::new(),
        });
        let worker = Arc::downgrade(&device);
        std::thread::Builder::new()
            .name(format!("tensorbook-sim-{id}"))
            .spawn(move || {
                for job in jobs {
                    if let Some(dev) = worker.upgrade() {
                        let mut paused = dev.paused.lock().unwrap_or_else(|e| e.into_inner());
                        while *paused {
                            paused = dev.unpaused.wait(paused).unwrap_or_else(|e| e.into_inner());
                        }
                        // Counted off before the job runs: the job publishes its result, and
                        // whoever reads that result must already see it off the count.
                        dev.pending.fetch_sub(1, Ordering::AcqRel);
                    }
                    job();
                }
            })
            .map_err(|e| Error::Device {
                op: "start",
                device: Device::sim(id),
                message: format!("cannot start the device's queue thread: {e}"),
            })?;
        Ok(device)
    }

    fn device(&self) -> Device {
        Device::sim(self.id)
    }

    /// Takes `bytes` of the device's memory, or fails as a GPU allocation would.
    fn reserve(self: &Arc<Self>, bytes: u64, dtype: DType, len: usize) -> Result<Reservation> {
        let limit = settings::sim_memory_limit_of(self.id);
        let mut used = self.used.load(Ordering::Acquire);
        loop {
            let after = used.checked_add(bytes).filter(|&a| a <= limit);
            let Some(after) = after else {
                return Err(Error::DeviceAllocation {
                    device: self.device(),
                    shape: vec![len],
                    dtype,
                    bytes: u128::from(bytes),
                    reason: format!("{used} of its {limit} bytes are in use"),
                });
            };
            match self
                .used
                .compare_exchange(used, after, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    return Ok(Reservation {
                        device: Arc::clone(self),
                        bytes,
                    })
                }
                Err(now) => used = now,
            }
        }
    }

    fn enqueue(&self, job: Job) -> Result<()> {
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.queue.send(job).map_err(|_| {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            Error::Device {
                op: "enqueue",
                device: self.device(),
                message: "the device's queue thread has stopped".into(),
            }
        })
    }
}

/// Device memory held by one buffer; given back when the buffer is dropped.
struct Reservation {
    device: Arc<SimDevice>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.device.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

fn registry() -> &'static Mutex<Vec<Option<Arc<SimDevice>>>> {
    static DEVICES: OnceLock<Mutex<Vec<Option<Arc<SimDevice>>>>> = OnceLock::new();
    DEVICES.get_or_init(|| Mutex::new(Vec::new()))
}

/// The device `sim:id`, started on first use.
fn device(id: usize) -> Result<Arc<SimDevice>> {
    let count = device_count();
    if id >= count {
        return Err(match status() {
            Err(reason) => Error::ClientUnavailable {
                client: crate::device::Client::Sim,
                reason,
            },
            Ok(count) => Error::DeviceNotFound {
                device: Device::sim(id),
                count,
            },
        });
    }
    let mut devices = registry().lock().unwrap_or_else(|e| e.into_inner());
    if devices.len() <= id {
        devices.resize(id + 1, None);
    }
    if let Some(d) = &devices[id] {
        return Ok(Arc::clone(d));
    }
    let started = SimDevice::start(id)?;
    devices[id] = Some(Arc::clone(&started));
    Ok(started)
}

/// A value that queued work fills in later; readers wait for it.
struct Slot {
    value: OnceLock<Result<Buffer>>,
    lock: Mutex<()>,
    filled: Condvar,
}

impl Slot {
    fn ready(buffer: Buffer) -> Arc<Slot> {
        let slot = Slot::empty();
        let _ = slot.value.set(Ok(buffer));
        slot
    }

    fn empty() -> Arc<Slot> {
        Arc::new(Slot {
            value: OnceLock::new(),
            lock: Mutex::new(()),
            filled: Condvar::new(),
        })
    }

    fn fill(&self, value: Result<Buffer>) {
        let _ = self.value.set(value);
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.filled.notify_all();
    }

    fn wait(&self) -> &Result<Buffer> {
        loop {
            if let Some(v) = self.value.get() {
                return v;
            }
            let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            if self.value.get().is_none() {
                drop(self.filled.wait(guard).unwrap_or_else(|e| e.into_inner()));
            }
        }
    }
}

/// Elements in the memory of one simulated device. Only [`SimBackend`] can read them.
pub struct SimBuffer {
    device: Arc<SimDevice>,
    len: usize,
    dtype: DType,
    slot: Arc<Slot>,
    _memory: Reservation,
}

impl SimBuffer {
    /// The device id (`sim:N`).
    pub fn device_id(&self) -> usize {
        self.device.id
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Waits for the elements; a failure of the work that produces them is returned here.
    fn wait(&self, op: &'static str) -> Result<&Buffer> {
        self.slot.wait().as_ref().map_err(|e| Error::Device {
            op,
            device: self.device.device(),
            message: e.to_string(),
        })
    }
}

impl fmt::Debug for SimBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SimBuffer(sim:{}, {} x {})",
            self.device.id, self.len, self.dtype
        )
    }
}

/// Bytes copied from `sim:id` to the host so far (downloads and gathers).
#[cfg(any(test, feature = "test-hooks"))]
pub fn bytes_to_host(id: usize) -> u64 {
    device(id)
        .map(|d| d.to_host.load(Ordering::Acquire))
        .unwrap_or(0)
}

/// Bytes of `sim:id`'s memory held by live buffers.
#[cfg(any(test, feature = "test-hooks"))]
pub fn memory_in_use(id: usize) -> u64 {
    device(id)
        .map(|d| d.used.load(Ordering::Acquire))
        .unwrap_or(0)
}

/// Ops queued on `sim:id` so far (every op, whether it has run yet or not).
#[cfg(any(test, feature = "test-hooks"))]
pub fn ops_queued(id: usize) -> u64 {
    device(id)
        .map(|d| d.ops.load(Ordering::Acquire))
        .unwrap_or(0)
}

/// Bytes copied into `sim:id` from other simulated devices, device to device.
#[cfg(any(test, feature = "test-hooks"))]
pub fn bytes_from_peers(id: usize) -> u64 {
    device(id)
        .map(|d| d.from_peers.load(Ordering::Acquire))
        .unwrap_or(0)
}

/// Ops queued on `sim:id` that have not started yet (held by [`pause`], or waiting their turn).
#[cfg(any(test, feature = "test-hooks"))]
pub fn pending(id: usize) -> usize {
    device(id)
        .map(|d| d.pending.load(Ordering::Acquire))
        .unwrap_or(0)
}

/// Holds `sim:id`'s queue: work is accepted but not run until [`resume`] (for tests that
/// observe queued work). Reading a value of a paused device waits until it resumes.
#[cfg(any(test, feature = "test-hooks"))]
pub fn pause(id: usize) -> Result<()> {
    let d = device(id)?;
    *d.paused.lock().unwrap_or_else(|e| e.into_inner()) = true;
    Ok(())
}

/// Lets `sim:id`'s queue run again.
#[cfg(any(test, feature = "test-hooks"))]
pub fn resume(id: usize) -> Result<()> {
    let d = device(id)?;
    *d.paused.lock().unwrap_or_else(|e| e.into_inner()) = false;
    d.unpaused.notify_all();
    Ok(())
}

/// The simulated accelerator's backend.
pub struct SimBackend;

impl Backend for SimBackend {
    type Buffer = SimBuffer;

    fn execute(&self, device: Device, op: &Op, inputs: &[&SimBuffer]) -> Result<SimBuffer> {
        let dev = self::device(device.id)?;
        let first = inputs.first().ok_or_else(|| Error::InvalidArgument {
            op: op.name(),
            message: "internal: an op without inputs".into(),
        })?;
        let dtype = op.out_dtype(first.dtype);
        let len = op.out_len(first.len);
        let bytes = (len as u64).saturating_mul(dtype.size_in_bytes() as u64);
        let memory = dev.reserve(bytes, dtype, len)?;
        let slot = Slot::empty();
        let sources: Vec<Arc<Slot>> = inputs.iter().map(|b| Arc::clone(&b.slot)).collect();
        let (job_op, job_slot) = (op.clone(), Arc::clone(&slot));
        dev.ops.fetch_add(1, Ordering::AcqRel);
        dev.enqueue(Box::new(move || {
            let computed = sources
                .iter()
                .map(|s| s.wait().as_ref().map_err(Clone::clone))
                .collect::<Result<Vec<&Buffer>>>()
                .and_then(|buffers| HostBackend.execute(Device::host(0), &job_op, &buffers))
                .and_then(|out| {
                    if out.len() == len && out.dtype() == dtype {
                        Ok(out)
                    } else {
                        Err(Error::InvalidArgument {
                            op: job_op.name(),
                            message: format!(
                                "internal: {} elements of {} computed, {len} of {dtype} reserved",
                                out.len(),
                                out.dtype()
                            ),
                        })
                    }
                });
            job_slot.fill(computed);
        }))?;
        Ok(SimBuffer {
            device: dev,
            len,
            dtype,
            slot,
            _memory: memory,
        })
    }

    fn upload(&self, device: Device, buffer: Buffer) -> Result<SimBuffer> {
        let dev = self::device(device.id)?;
        let (len, dtype) = (buffer.len(), buffer.dtype());
        let bytes = (len as u64).saturating_mul(dtype.size_in_bytes() as u64);
        let memory = dev.reserve(bytes, dtype, len)?;
        Ok(SimBuffer {
            device: dev,
            len,
            dtype,
            slot: Slot::ready(buffer),
            _memory: memory,
        })
    }

    fn download<'a>(&self, s: &'a SimBuffer) -> Result<Cow<'a, Buffer>> {
        let copy = s.wait("copy to host")?.try_clone()?;
        let bytes = (copy.len() as u64).saturating_mul(copy.dtype().size_in_bytes() as u64);
        s.device.to_host.fetch_add(bytes, Ordering::AcqRel);
        Ok(Cow::Owned(copy))
    }

    fn gather(&self, s: &SimBuffer, indices: &[usize]) -> Result<Buffer> {
        let picked = s.wait("gather")?.gather(indices)?;
        let bytes = (picked.len() as u64).saturating_mul(picked.dtype().size_in_bytes() as u64);
        s.device.to_host.fetch_add(bytes, Ordering::AcqRel);
        Ok(picked)
    }

    fn sync(&self, s: &SimBuffer) -> Result<()> {
        s.wait("sync").map(|_| ())
    }

    /// Device to device, as a GPU's peer copy: queued on the target, which waits for the
    /// source's value without the host reading it. No wait can close a circle: a copy only
    /// waits for work queued before it.
    fn copy(&self, s: &SimBuffer, to: Device) -> Result<SimBuffer> {
        let dev = self::device(to.id)?;
        let bytes = (s.len as u64).saturating_mul(s.dtype.size_in_bytes() as u64);
        let memory = dev.reserve(bytes, s.dtype, s.len)?;
        let slot = Slot::empty();
        let (source, job_slot) = (Arc::clone(&s.slot), Arc::clone(&slot));
        let (target, from) = (Arc::clone(&dev), s.device.device());
        dev.enqueue(Box::new(move || {
            let copied = match source.wait() {
                Ok(buffer) => buffer.try_clone(),
                Err(e) => Err(Error::Device {
                    op: "copy between devices",
                    device: from,
                    message: e.to_string(),
                }),
            };
            if copied.is_ok() {
                target.from_peers.fetch_add(bytes, Ordering::AcqRel);
            }
            job_slot.fill(copied);
        }))?;
        Ok(SimBuffer {
            device: dev,
            len: s.len,
            dtype: s.dtype,
            slot,
            _memory: memory,
        })
    }
}
