//! The discrete Fourier transform as an op: rows transformed one by one. The frontend
//! (`ops/fft.rs`) brings the transformed axis last, pads or cuts it to the length asked for and
//! casts it (to complex, or for a real-input transform to f32 or f64), so a backend sees
//! `[rows, length]`, contiguous.

/// A DFT (or its inverse) of each row of a `[rows, length]` input: complex, or real with
/// `real_input`, whose result is then each row's first `length / 2 + 1` frequencies (the rest
/// are their conjugates), complex.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fft {
    /// How many rows.
    pub rows: usize,
    /// Each row's length.
    pub length: usize,
    /// `ifft`: the conjugate twiddles and the result divided by `length` (Nx's and NumPy's
    /// normalisation).
    pub inverse: bool,
    /// The input is real (f32 or f64) and the result its non-negative frequencies (`rfft`).
    pub real_input: bool,
    /// Parts of a result no larger than this in magnitude become 0 (Nx's `:eps`, default
    /// 1.0e-10: the residue of rounding where the exact result is 0).
    pub eps: f64,
}

impl Fft {
    /// The entries of each result row.
    pub fn out_width(&self) -> usize {
        if self.real_input {
            self.length / 2 + 1
        } else {
            self.length
        }
    }

    /// Each output entry's part `x` after Nx's clean-up.
    pub fn clean(&self, x: f64) -> f64 {
        if x.abs() <= self.eps {
            0.0
        } else {
            x
        }
    }

    /// The reference transform of one row, in f64: the plain sum `X[k] = Σ x[j]·w^(jk)` with
    /// each twiddle computed from `jk mod n` (exact angles, no accumulated rotation).
    pub fn reference_row(&self, row: &[(f64, f64)], out: &mut [(f64, f64)]) {
        let n = self.length;
        let sign = if self.inverse { 1.0 } else { -1.0 };
        let step = sign * 2.0 * std::f64::consts::PI / n as f64;
        for (k, slot) in out.iter_mut().enumerate() {
            let (mut re, mut im) = (0.0, 0.0);
            for (j, &(a, b)) in row.iter().enumerate() {
                // (j * k) mod n without overflow: both are below n.
                let turn = ((j as u128 * k as u128) % n as u128) as f64;
                let (s, c) = (step * turn).sin_cos();
                re += a * c - b * s;
                im += a * s + b * c;
            }
            if self.inverse {
                re /= n as f64;
                im /= n as f64;
            }
            *slot = (self.clean(re), self.clean(im));
        }
    }
}
