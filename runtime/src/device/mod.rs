//! Placement values: which client a tensor's memory belongs to and which of its devices.
//! Reading them from text (`"cuda:1"`) is in [`parse`].

use std::fmt;

/// A place where tensors can live and be computed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Client {
    /// The pure-Rust reference backend (one thread, plain loops), like Nx.BinaryBackend.
    Binary,
    /// The optimised CPU client (SIMD GEMM, multithreaded).
    Host,
    /// NVIDIA GPUs through cudarc.
    Cuda,
    /// The simulated accelerator (off unless enabled, see `backend/sim.rs`): memory of
    /// its own kind, work queued on its own thread, a memory limit. It exists so that what the
    /// cuda backend decides on the host side is tested on machines without a GPU.
    Sim,
}

impl Client {
    /// Every client, in the order `auto` prefers them (fastest first). The simulated
    /// accelerator is never picked by `auto`: it is only used when named.
    pub const PREFERENCE: [Client; 3] = [Client::Cuda, Client::Host, Client::Binary];

    /// Every client, as `clients()` lists them.
    pub const ALL: [Client; 4] = [Client::Cuda, Client::Sim, Client::Host, Client::Binary];

    /// The client's name as printed and parsed.
    pub fn name(self) -> &'static str {
        match self {
            Client::Binary => "binary",
            Client::Host => "host",
            Client::Cuda => "cuda",
            Client::Sim => "sim",
        }
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One device of one client: `host:0`, `cuda:1`, or `binary` (which has a single device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    /// The client the device belongs to.
    pub client: Client,
    /// The device's ordinal within its client (always 0 for binary).
    pub id: usize,
}

impl Device {
    /// The binary (reference) backend.
    pub const BINARY: Device = Device {
        client: Client::Binary,
        id: 0,
    };

    /// `host:id`.
    pub fn host(id: usize) -> Device {
        Device {
            client: Client::Host,
            id,
        }
    }

    /// `cuda:id`.
    pub fn cuda(id: usize) -> Device {
        Device {
            client: Client::Cuda,
            id,
        }
    }

    /// `sim:id` (the simulated accelerator).
    pub fn sim(id: usize) -> Device {
        Device {
            client: Client::Sim,
            id,
        }
    }

    /// The kind of memory this device's tensors live in: binary and every host device share
    /// host memory; each cuda and sim device has its own.
    pub fn memory_kind(self) -> MemoryKind {
        match self.client {
            Client::Binary | Client::Host => MemoryKind::Host,
            Client::Cuda => MemoryKind::Cuda(self.id),
            Client::Sim => MemoryKind::Sim(self.id),
        }
    }
}

/// Which memory a tensor's elements are in. Two devices of one kind read each other's memory
/// directly (a binary tensor is host memory, so `host:1` can use it as it is); any other pair
/// needs a copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Host memory (binary and host devices).
    Host,
    /// The memory of one GPU.
    Cuda(usize),
    /// The memory of one simulated accelerator.
    Sim(usize),
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryKind::Host => f.write_str("host memory"),
            MemoryKind::Cuda(id) => write!(f, "memory of cuda:{id}"),
            MemoryKind::Sim(id) => write!(f, "memory of sim:{id}"),
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.client {
            Client::Binary => f.write_str("binary"),
            c => write!(f, "{c}:{}", self.id),
        }
    }
}

pub mod parse;
