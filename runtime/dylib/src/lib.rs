//! The tensorbook runtime as one shared library (`libtensorbook_dylib.so`) for notebook cells.
//!
//! evcxr builds every cell as a shared object of its own. Linked against the runtime's rlib,
//! each cell would carry a private copy of the runtime and its dependencies: most of a trivial
//! cell's build went into that link, and every cell had its own copy of the runtime's statics
//! (the GPU contexts and compiled kernels among them). A cell that names this crate
//! (`use tensorbook_dylib as _;`, in the kernel's prelude) gets the runtime from this one
//! library instead, because rustc links a crate that an upstream dylib already contains from
//! that dylib. Cells keep naming items through `tensorbook::`.

pub use tensorbook;
