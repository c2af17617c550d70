//! The names a notebook cell has in scope (the kernel's prelude is `use
//! tensorbook::prelude::*;`): tensors and their options, constructors, gradients, the
//! compiler, the session's devices, displays, charts and widgets. A glob, so a cell's own
//! `fn loss` or `struct Model` shadows a name here instead of clashing with it. `Result` stays
//! out (it would hide the standard one); cells write `tensorbook::Result`.

pub use crate::chart::line_chart;
pub use crate::client::{clients, devices};
pub use crate::complex::{Complex, Complex32, Complex64};
pub use crate::create::on;
pub use crate::device::{Client, Device};
pub use crate::dtype::DType;
pub use crate::image::{show_images, Image, ImageGrid};
pub use crate::jit::control::{cond, fori_loop, while_loop};
pub use crate::jit::grad::{custom_grad, grad, grad_wrt, value_and_grad, value_and_grad_wrt};
pub use crate::jit::stream::stream;
pub use crate::jit::vmap::{vmap, vmap_axes};
pub use crate::jit::{jit, jit_cached, Jit};
pub use crate::notebook::{clear_output, display, DisplayHandle, Html, Svg};
pub use crate::ops::axes::Axis;
pub use crate::ops::conv::Conv;
pub use crate::ops::fft::{Fft2Options, FftLength, FftOptions};
pub use crate::ops::linalg::{Norm, TriangularSolve};
pub use crate::ops::pad::PadMode;
pub use crate::ops::reduce::TieBreak;
pub use crate::ops::shape::SplitAt;
pub use crate::ops::sort::Direction;
pub use crate::ops::spatial::Padding;
pub use crate::ops::window::Window;
pub use crate::ops::Leftover;
pub use crate::random;
pub use crate::serving::Serving;
pub use crate::session::{
    default_device, set_default_client, set_default_device, with_default_device,
};
pub use crate::settings::set_sim_device_count;
pub use crate::tensor;
pub use crate::tensor::Tensor;
pub use crate::widgets::{self, LiveChart};
pub use crate::{bf16, f16};
