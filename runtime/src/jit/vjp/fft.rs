//! The gradient of the Fourier transform (`Op::Fft`), as Nx's `grad_fft`: a DFT is a linear map
//! whose matrix is symmetric, so its transpose is itself and the gradient of each row is the
//! same transform of the cotangent. Padding and cutting to `:length` are `pad`/`slice` ops
//! recorded by the frontend, which carry their own gradients.

use crate::error::Result;
use crate::ir::Fft;
use crate::tensor::Tensor;

use super::site::Site;

pub(super) fn fft(fft: &Fft, site: &Site<'_>, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    if !site.wants(0) {
        return Ok(vec![None]);
    }
    let g = g.reshape(&[fft.rows, fft.out_width()])?;
    let back = if fft.real_input {
        // The result is the first `length / 2 + 1` rows of the DFT matrix applied to a real
        // signal: the transpose of those rows is the full transform of the cotangent padded
        // with zeros, and a real input keeps its real part (`accumulate` casts it).
        let missing = fft.length.saturating_sub(fft.out_width());
        let padded = g.pad(0, &[(0, 0, 0), (0, i64::try_from(missing).unwrap_or(0), 0)])?;
        padded.fft_rows(Fft {
            real_input: false,
            inverse: false,
            ..*fft
        })?
    } else {
        g.fft_rows(*fft)?
    };
    Ok(vec![Some(back)])
}
