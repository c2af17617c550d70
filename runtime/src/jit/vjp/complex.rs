//! The rules for the elementwise ops that are not holomorphic on complex values (`abs`,
//! `conjugate`, `imag`). Every other rule is written for both: with the convention Nx and JAX
//! share, a holomorphic op's cotangent is `g·f'(z)` (no conjugation), so the real rules hold
//! as written. For a real loss of complex `z = x + iy` the gradient is `∂L/∂x - i·∂L/∂y`.

use crate::complex::{Complex32, Complex64};
use crate::create::on;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

use super::site::Site;

/// `|z|` as a complex value with no imaginary part (the op before the frontend's cast to
/// real): Nx's rule `re(g)·conj(z) / |z|`, and 0 where `z` is 0.
pub(super) fn abs(site: &Site<'_>, g: &Tensor) -> Result<Tensor> {
    let z = site.input(0)?;
    let out = site.result.reshape(z.shape())?;
    let at_zero = out.equal(0.0)?.as_type(out.dtype())?;
    g.real()?
        .multiply(&z.conjugate()?)?
        .divide(&out.add(&at_zero)?)
}

/// `imag(z)` (as a complex value with no imaginary part) is `(z - conj(z)) / 2i`, so its
/// cotangent is `-i·re(g)`; a real input has no imaginary part to move.
pub(super) fn imag(site: &Site<'_>, g: &Tensor) -> Result<Tensor> {
    let z = site.input(0)?;
    let minus_i = match g.dtype() {
        DType::C128 => on(site.device).scalar(Complex64::new(0.0, -1.0))?,
        DType::C64 => on(site.device).scalar(Complex32::new(0.0, -1.0))?,
        real => return site.zeros(real, z.shape()),
    };
    g.real()?.multiply(&minus_i)
}
