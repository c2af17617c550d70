//! evcxr's rich-display hook for the runtime's values: what a cell ending in a tensor, a
//! compiled function or a stream shows. evcxr calls `evcxr_display` on a cell's last value when
//! the type has one; the bundle goes out between evcxr's content markers, which the kernel
//! turns into the cell's rich result. Kept apart so that the core (tensors, ops, backends,
//! the compiler, the display's text and HTML) knows no notebook.

use crate::image::{Image, ImageGrid};
use crate::jit::stream::Stream;
use crate::jit::{Jit, JitOutput};
use crate::notebook::{Displayable, Html, Svg};
use crate::tensor::Tensor;

/// Prints a mime bundle between evcxr's content markers.
pub(crate) fn emit_bundle(bundle: &[(&'static str, String)]) {
    for (mime, content) in bundle {
        print!("{}", crate::contract::markers::content_block(mime, content));
    }
}

impl Tensor {
    /// The notebook display: the Nx text and an HTML table.
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&self.mime_bundle());
    }
}

impl<O: JitOutput> Jit<O> {
    /// The notebook display (what evcxr shows when a cell ends with a compiled function).
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&[("text/plain", self.summary())]);
    }
}

impl Stream {
    /// The notebook display.
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&[("text/plain", self.summary())]);
    }
}

impl Svg {
    /// The notebook display: the picture (SVG, and PNG for frontends that draw no SVG).
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&self.mime_bundle());
    }
}

impl Html {
    /// The notebook display: the HTML, rendered.
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&self.mime_bundle());
    }
}

impl Image {
    /// The notebook display: the PNG.
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&self.mime_bundle());
    }
}

impl ImageGrid {
    /// The notebook display: the grid's PNG (and the titled figures).
    #[doc(hidden)]
    pub fn evcxr_display(&self) {
        emit_bundle(&self.mime_bundle());
    }
}
