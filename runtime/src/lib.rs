//! # tensorbook runtime
//!
//! Tensors that always know where they live. Modelled on Elixir's Nx + EXLA:
//!
//! * a [`Tensor`] has a runtime [`DType`], a shape and a placement ([`Device`]: `binary`,
//!   `host:0`, `cuda:0`) and prints it (`Backend<host:0>`);
//! * the session has one default device ([`set_default_client`], [`default_device`]) that
//!   every constructor, op, batch and [`Serving`] honours through one rule
//!   ([`resolve_device`]): explicit argument > operands' placement > session default;
//! * operands on two different devices are an error naming both, never a silent copy;
//! * every failure a user can cause is an [`Error`] naming shapes, dtypes and placements.
//!
//! ```
//! use tensorbook::{on, Device, DType, Tensor};
//! let a = on(Device::host(0)).iota(DType::F32, &[2, 3], None)?;
//! let b = a.transpose(..)?;
//! let c = a.dot(&b)?;
//! assert_eq!(c.to_vec::<f32>()?, vec![5.0, 14.0, 14.0, 50.0]);
//! assert!(c.to_string().contains("Backend<host:0>"));
//! # Ok::<(), tensorbook::Error>(())
//! ```

#![warn(missing_docs)]

// The modules are private: what a user names is re-exported below. The public modules are the
// runtime's faces towards the kernel and the cells (`contract`, `keep`, `notebook`, `widgets`,
// `cell_runtime`) and its tools (`bench`, `data`); test hooks are in `testing`, behind the
// `test-hooks` feature the runtime's own suites enable.
mod allocate;
mod backend;
pub mod bench;
mod buffer;
mod buffer_pool;
pub mod cell_runtime;
mod chart;
mod client;
mod complex;
mod complex_element;
pub mod contract;
mod create;
pub mod data;
mod device;
mod display;
mod dtype;
mod element;
mod error;
mod evcxr_display;
mod half_element;
mod host_memory;
mod host_vec;
mod image;
mod interrupt;
mod ir;
mod jit;
pub mod keep;
mod memory;
pub mod mixed_precision;
mod nested;
pub mod notebook;
mod ops;
mod parallel;
pub mod prelude;
/// Random numbers from keys (`Nx.Random`): threefry2x32, the same on every device and inside
/// `jit`.
pub mod random;
mod raster;
mod serving;
mod session;
mod settings;
mod shape;
mod shared_memory;
mod special;
mod tensor;
#[cfg(feature = "test-hooks")]
pub mod testing;
pub mod widgets;

pub use chart::line_chart;
pub use client::{
    client_info, clients, cuda_report, devices, devices_of, nccl_status, ClientInfo, CudaComponent,
    CudaReport, Gpu,
};
pub use complex::{Complex, Complex32, Complex64};
pub use create::{on, Factory};
pub use device::{Client, Device, MemoryKind};
pub use display::{print_limit, set_print_limit};
pub use dtype::DType;
pub use element::{Element, Float};
pub use error::{Error, Result};
/// The Rust types of `bf16` and `f16` elements (`to_vec::<f16>()`, `f16::from_f32(0.5)`).
pub use half::{bf16, f16};
pub use image::{show_images, Image, ImageGrid, Titles};
pub use interrupt::sleep;
pub use jit::control::{cond, fori_loop, while_loop};
pub use jit::grad::{custom_grad, grad, grad_wrt, value_and_grad, value_and_grad_wrt};
pub use jit::stream::{stream, stream_cached, Stream};
pub use jit::vmap::{vmap, vmap_axes};
pub use jit::{
    arity, jit, jit_apply, jit_cached, Compilation, Jit, JitArgs, JitFn, JitOutput, Stats, Template,
};
pub use nested::{literal_tensor, Nested};
pub use notebook::{
    clear_output, display, input, input_password, keep_output_flowing, DisplayHandle, Displayable,
    Html, Svg,
};
pub use ops::axes::{Axes, Axis, IntoAxes, IntoAxis, OneAxis};
pub use ops::conv::Conv;
pub use ops::fft::{Fft2Options, FftLength, FftOptions};
pub use ops::linalg::{Norm, TriangularSolve};
pub use ops::names::IntoNames;
pub use ops::pad::PadMode;
pub use ops::reduce::TieBreak;
pub use ops::shape::SplitAt;
pub use ops::sort::Direction;
pub use ops::spatial::{Padding, PerAxis};
pub use ops::window::Window;
pub use ops::{merge_number, Leftover, Operand};
pub use parallel::all_reduce::{all_reduce, Reduction};
pub use parallel::data_parallel::{data_parallel, Combine, DataParallel};
pub use parallel::Partitions;
pub use serving::Serving;
pub use session::{
    default_device, resolve_compiled_device, resolve_device, set_default_client,
    set_default_device, with_default_device, ClientSpec,
};
pub use settings::{
    set_host_device_count, set_host_memory_limit, set_shared_host_memory, set_sim_device_count,
    set_sim_device_memory_limit, set_sim_memory_limit,
};
pub use tensor::Tensor;

/// A tensor literal on the session default device, as Nx's `~MAT`/`Nx.tensor`: nested
/// brackets give the shape, floats become f32 and integers s32, and a leading dtype chooses
/// another (`tensor![f64; [1, 2], [3, 4]]`). A `Result`, so a cell writes `tensor![..]?`.
///
/// ```
/// let t = tensorbook::tensor![[1.0, 2.0], [3.0, 4.0]].unwrap();
/// assert_eq!((t.shape(), t.dtype()), (&[2, 2][..], tensorbook::DType::F32));
/// let s = tensorbook::tensor![f64; 1, 2, 3].unwrap();
/// assert_eq!(s.to_vec::<f64>().unwrap(), [1.0, 2.0, 3.0]);
/// ```
#[macro_export]
macro_rules! tensor {
    ($dtype:ident; $($x:expr),+ $(,)?) => {
        $crate::literal_tensor(&[$($x),+], Some(stringify!($dtype)))
    };
    ($($x:expr),+ $(,)?) => {
        $crate::literal_tensor(&[$($x),+], None)
    };
}
