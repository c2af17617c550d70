//! Complex numbers as Nx has them: `complex`, `real`, `imag`, `conjugate`, `phase`, and the
//! check that refuses complex operands where Nx does (orderings, rounding, bitwise ops).
//! Arithmetic and the float functions on c64/c128 are the ordinary elementwise ops
//! (`elementwise.rs`): each backend computes them with [`crate::Complex`]'s principal branches.

use crate::complex::{Complex32, Complex64};
use crate::create::on;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{Op, UnaryOp};
use crate::session::resolve_device;
use crate::tensor::Tensor;

use super::run;

/// Nx's error for a function of `arity` arguments that has no complex meaning.
pub(crate) fn not_for_complex(op: &'static str, arity: usize, dtype: DType) -> Error {
    Error::InvalidArgument {
        op,
        message: format!("Nx.{op}/{arity} does not support complex inputs (got {dtype})"),
    }
}

impl Tensor {
    /// A complex tensor from real and imaginary parts of one shape (or shapes that
    /// broadcast), as `Nx.complex(re, im)`: c128 when either part is f64, c64 otherwise.
    /// Complex parts are an error, as in Nx.
    pub fn complex(&self, imag: &Tensor) -> Result<Tensor> {
        for part in [self, imag] {
            if part.dtype().is_complex() {
                return Err(not_for_complex("complex", 2, part.dtype()));
            }
        }
        let dtype = self.dtype().promote(imag.dtype()).to_complex();
        let device = resolve_device("complex", None, &[self, imag])?;
        let i = match dtype {
            DType::C128 => on(device).scalar(Complex64::new(0.0, 1.0))?,
            _ => on(device).scalar(Complex32::new(0.0, 1.0))?,
        };
        // Nx's own definition, `imag * i + real`.
        imag.as_type(dtype)?
            .multiply(&i)?
            .add(&self.as_type(dtype)?)
    }

    /// The real part of each entry (`Nx.real`): f32 of c64, f64 of c128; a real float tensor
    /// is itself, an integer one becomes f32.
    pub fn real(&self) -> Result<Tensor> {
        let dtype = self.dtype();
        if dtype.is_complex() || dtype.is_integer() {
            self.as_type(dtype.to_real())
        } else {
            Ok(self.clone())
        }
    }

    /// The imaginary part of each entry (`Nx.imag`), of the real dtype `real` gives; zeros for
    /// a real tensor.
    pub fn imag(&self) -> Result<Tensor> {
        let dtype = self.dtype();
        if !dtype.is_complex() {
            let zeros = on(self.device()).zeros(dtype.to_real(), self.shape())?;
            return Ok(zeros.named_like(self));
        }
        let device = resolve_device("imag", None, &[self])?;
        let parts = run(
            device,
            Op::Unary(UnaryOp::Imag),
            &[self],
            self.shape().to_vec(),
        )?;
        Ok(parts.as_type(dtype.to_real())?.named_like(self))
    }

    /// The complex conjugate of each entry (`Nx.conjugate`): always complex, so a real
    /// tensor's entries gain the imaginary part -0.0, as Nx prints them (`1.0-0.0i`).
    pub fn conjugate(&self) -> Result<Tensor> {
        let device = resolve_device("conjugate", None, &[self])?;
        let z = self.prepared(self.dtype().to_complex(), device)?;
        Ok(run(
            device,
            Op::Unary(UnaryOp::Conjugate),
            &[&z],
            self.shape().to_vec(),
        )?
        .named_like(self))
    }

    /// The angle of each entry in (-π, π] (`Nx.phase`, `atan2(imag, real)`), of the real dtype
    /// `real` gives: 0 for non-negative real numbers, π for negative ones.
    pub fn phase(&self) -> Result<Tensor> {
        // `real` is already a float for every input (integers become f32).
        self.imag()?.atan2(&self.real()?)
    }
}

#[cfg(test)]
mod tests {
    use crate::create::on;
    use crate::device::Device;
    use crate::{Complex32, DType};

    /// Nx's documented examples of `complex`, `real`, `imag`, `conjugate` and `phase`.
    #[test]
    fn the_parts_follow_nx_examples() {
        let f = on(Device::BINARY);
        let z = f
            .from_vec(
                vec![Complex32::new(1.0, 2.0), Complex32::new(2.0, -4.0)],
                &[2],
            )
            .unwrap();
        assert_eq!(z.real().unwrap().to_vec::<f32>().unwrap(), [1.0, 2.0]);
        assert_eq!(z.imag().unwrap().to_vec::<f32>().unwrap(), [2.0, -4.0]);
        assert_eq!(
            z.conjugate().unwrap().to_string(),
            "#Tensor<c64[2]\n  Backend<binary>\n  [1.0-2.0i, 2.0+4.0i]>"
        );
        let one = f.scalar(1i32).unwrap();
        assert_eq!(
            one.conjugate().unwrap().to_string(),
            "#Tensor<c64\n  Backend<binary>\n  1.0-0.0i>"
        );
        let built = f
            .from_vec(vec![1i32, 2], &[2])
            .unwrap()
            .complex(&f.from_vec(vec![3i32, 4], &[2]).unwrap())
            .unwrap();
        assert_eq!(built.dtype(), DType::C64);
        assert_eq!(
            built.to_string(),
            "#Tensor<c64[2]\n  Backend<binary>\n  [1.0+3.0i, 2.0+4.0i]>"
        );
        let phase = z.phase().unwrap().to_vec::<f32>().unwrap();
        assert!((phase[0] - 1.1071488).abs() < 1e-6);
        assert_eq!(one.phase().unwrap().to_vec::<f32>().unwrap(), [0.0]);
        assert_eq!(one.imag().unwrap().dtype(), DType::F32);
    }
}
