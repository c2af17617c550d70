//! Hooks for the runtime's own test suites, behind the `test-hooks` feature (which they enable
//! through a dev-dependency on this crate): internals a user never needs, exposed so that the
//! suites can check them against the reference. Nothing outside the runtime's tests uses them.

/// The op IR, for regions written out by hand.
pub mod ir {
    pub use crate::ir::*;
}

/// The simulated accelerator's queue gate and counters.
pub mod sim {
    pub use crate::backend::sim::{
        bytes_from_peers, bytes_to_host, memory_in_use, ops_queued, pause, pending, resume,
    };
}

/// The cuda backend's kernels and their compilation, checked without a GPU.
pub mod cuda {
    pub use crate::backend::cuda::{fused, kernels};
    pub use crate::backend::cuda::{nvrtc_at, probe, Nvrtc, Target};
}

/// The pool of freed host buffers.
pub mod buffer_pool {
    pub use crate::buffer_pool::{held_bytes, release, MAX_BUFFERS, MAX_BYTES};
}

pub use crate::backend::host::{blas_library, lapack_library};
pub use crate::host_memory::available as available_host_memory;
pub use crate::jit::{is_placeholder, run_fused};
pub use crate::shape::{broadcast_shapes, broadcast_strides, strides};
