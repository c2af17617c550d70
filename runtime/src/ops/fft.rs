//! Fourier transforms as Nx has them: `fft`, `ifft` (one `Op::Fft` over rows, the axis
//! brought last, padded or cut to `length`), and composed of them as Nx composes them, `fft2`,
//! `ifft2`, `rfft` (the non-redundant half of a real signal's spectrum) and `irfft` (the
//! Hermitian half mirrored back, then the inverse's real part).

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{Fft, Op};
use crate::session::resolve_device;
use crate::shape::{check_shape, normalize_axis, numel};
use crate::tensor::Tensor;

use super::axes::{Axis, OneAxis};
use super::run;

/// Which transform `Tensor::transform` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Transform {
    /// `fft`.
    Forward,
    /// `ifft`.
    Inverse,
    /// `rfft`: a real signal's non-negative frequencies.
    RealForward,
}

/// How long a transform is along its axis (Nx's `:length`): a length (the input padded with
/// zeros or cut to it), or the next power of two at least the axis' size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FftLength {
    /// Exactly this many entries.
    Exactly(usize),
    /// The next power of two (Nx's `:power_of_two`).
    PowerOfTwo,
}

impl From<usize> for FftLength {
    fn from(n: usize) -> Self {
        FftLength::Exactly(n)
    }
}

/// The options of `fft`, `ifft`, `rfft` and `irfft` (Nx's `:length`, `:axis`, `:eps`):
/// `t.fft_with(FftOptions::new().length(4).axis(-2))`.
#[derive(Clone, Debug)]
pub struct FftOptions {
    length: Option<FftLength>,
    axis: Axis,
    eps: f64,
}

impl Default for FftOptions {
    fn default() -> Self {
        FftOptions {
            length: None,
            axis: Axis::Index(-1),
            eps: 1.0e-10,
        }
    }
}

impl FftOptions {
    /// Nx's defaults: the axis' own length, the last axis, `eps` 1.0e-10.
    pub fn new() -> FftOptions {
        FftOptions::default()
    }

    /// The transform's length: the input padded with zeros or cut to it.
    pub fn length(mut self, length: impl Into<FftLength>) -> FftOptions {
        self.length = Some(length.into());
        self
    }

    /// The next power of two at least the axis' size (Nx's `length: :power_of_two`).
    pub fn power_of_two(mut self) -> FftOptions {
        self.length = Some(FftLength::PowerOfTwo);
        self
    }

    /// The axis transformed (a position, negative from the end, or a name).
    pub fn axis(mut self, axis: impl OneAxis) -> FftOptions {
        self.axis = axis.one_axis();
        self
    }

    /// Parts of the result at most this large in magnitude become 0 (the residue of rounding
    /// where the exact value is 0); 0.0 keeps every result as computed.
    pub fn eps(mut self, eps: f64) -> FftOptions {
        self.eps = eps;
        self
    }
}

/// The options of `fft2` and `ifft2` (Nx's `:lengths`, `:axes`, `:eps`):
/// `t.fft2_with(Fft2Options::new().lengths([2, 4]))`.
#[derive(Clone, Debug)]
pub struct Fft2Options {
    lengths: Option<[FftLength; 2]>,
    axes: [Axis; 2],
    eps: f64,
}

impl Default for Fft2Options {
    fn default() -> Self {
        Fft2Options {
            lengths: None,
            axes: [Axis::Index(-2), Axis::Index(-1)],
            eps: 1.0e-10,
        }
    }
}

impl Fft2Options {
    /// Nx's defaults: the axes' own lengths, the last two axes, `eps` 1.0e-10.
    pub fn new() -> Fft2Options {
        Fft2Options::default()
    }

    /// The lengths along the two axes (`[2, 4]`, or `[FftLength::PowerOfTwo; 2]`).
    pub fn lengths<L: Into<FftLength>>(mut self, lengths: [L; 2]) -> Fft2Options {
        let [a, b] = lengths;
        self.lengths = Some([a.into(), b.into()]);
        self
    }

    /// The two axes transformed.
    pub fn axes<A: OneAxis>(mut self, axes: [A; 2]) -> Fft2Options {
        let [a, b] = axes;
        self.axes = [a.one_axis(), b.one_axis()];
        self
    }

    /// As [`FftOptions::eps`].
    pub fn eps(mut self, eps: f64) -> Fft2Options {
        self.eps = eps;
        self
    }
}

/// The length a transform of an axis of `size` entries has.
fn resolve_length(op: &'static str, length: Option<FftLength>, size: usize) -> Result<usize> {
    match length {
        None if size == 0 => Err(Error::InvalidArgument {
            op,
            message: "the transformed axis has no entries; give a positive :length".into(),
        }),
        None => Ok(size),
        Some(FftLength::Exactly(0)) => Err(Error::InvalidArgument {
            op,
            message: "expected an integer or :power_of_two as length, got: 0".into(),
        }),
        Some(FftLength::Exactly(n)) => Ok(n),
        Some(FftLength::PowerOfTwo) => {
            size.max(1)
                .checked_next_power_of_two()
                .ok_or_else(|| Error::InvalidArgument {
                    op,
                    message: format!("no power of two holds {size} entries"),
                })
        }
    }
}

impl Tensor {
    /// The discrete Fourier transform along the last axis (`Nx.fft`): complex, c128 for f64
    /// input and c64 otherwise, any length.
    pub fn fft(&self) -> Result<Tensor> {
        self.fft_with(FftOptions::new())
    }

    /// [`Tensor::fft`] with Nx's options (`length`, `axis`, `eps`).
    pub fn fft_with(&self, options: FftOptions) -> Result<Tensor> {
        self.transform("fft", &options, Transform::Forward)
    }

    /// The inverse transform along the last axis (`Nx.ifft`), divided by the length.
    pub fn ifft(&self) -> Result<Tensor> {
        self.ifft_with(FftOptions::new())
    }

    /// [`Tensor::ifft`] with Nx's options.
    pub fn ifft_with(&self, options: FftOptions) -> Result<Tensor> {
        self.transform("ifft", &options, Transform::Inverse)
    }

    /// The 2-D transform over the last two axes (`Nx.fft2`): the last axis first, then the
    /// one before.
    pub fn fft2(&self) -> Result<Tensor> {
        self.fft2_with(Fft2Options::new())
    }

    /// [`Tensor::fft2`] with Nx's options (`lengths`, `axes`, `eps`).
    pub fn fft2_with(&self, options: Fft2Options) -> Result<Tensor> {
        self.transform2("fft2", options, Transform::Forward)
    }

    /// The inverse 2-D transform (`Nx.ifft2`).
    pub fn ifft2(&self) -> Result<Tensor> {
        self.ifft2_with(Fft2Options::new())
    }

    /// [`Tensor::ifft2`] with Nx's options.
    pub fn ifft2_with(&self, options: Fft2Options) -> Result<Tensor> {
        self.transform2("ifft2", options, Transform::Inverse)
    }

    /// The transform of a real signal, its first `length / 2 + 1` frequencies (`Nx.rfft`):
    /// the rest mirror them.
    pub fn rfft(&self) -> Result<Tensor> {
        self.rfft_with(FftOptions::new())
    }

    /// [`Tensor::rfft`] with Nx's options.
    pub fn rfft_with(&self, options: FftOptions) -> Result<Tensor> {
        let op = "rfft";
        if self.dtype().is_complex() {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "Nx.rfft/2 expects a real tensor, got type: {}",
                    self.dtype()
                ),
            });
        }
        self.transform(op, &options, Transform::RealForward)
    }

    /// The real signal whose spectrum's first half this is (`Nx.irfft`): of length
    /// `2 * (m - 1)` for an axis of `m` entries unless `length` says otherwise (an odd length
    /// needs saying).
    pub fn irfft(&self) -> Result<Tensor> {
        self.irfft_with(FftOptions::new())
    }

    /// [`Tensor::irfft`] with Nx's options (`length` a positive integer).
    pub fn irfft_with(&self, options: FftOptions) -> Result<Tensor> {
        let op = "irfft";
        let axis = self.fft_axis(op, options.axis.clone())?;
        let have = self.shape()[axis];
        let n = match options.length {
            None if have >= 2 => 2 * (have - 1),
            None => {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!(
                        "an axis of {have} entries is no spectrum's half; give a positive \
                         :length"
                    ),
                })
            }
            Some(FftLength::Exactly(n)) if n > 0 => n,
            Some(other) => {
                return Err(Error::InvalidArgument {
                    op,
                    message: format!("expected a positive integer as length, got: {other:?}"),
                })
            }
        };
        let half = n / 2 + 1;
        let a = axis as isize;
        let z = self.as_type(self.dtype().to_complex())?;
        let z = if have > half {
            z.slice_along_axis(0, half, a)?
        } else if have < half {
            let mut config = vec![(0i64, 0i64, 0usize); z.rank()];
            config[axis].1 = i64::try_from(half - have).unwrap_or(i64::MAX);
            z.pad(0, &config)?
        } else {
            z
        };
        let mirrored = n - half;
        let whole = if mirrored > 0 {
            let mirror = z
                .slice_along_axis(1, mirrored, a)?
                .conjugate()?
                .reverse([a])?;
            Tensor::concatenate(&[z, mirror], a)?
        } else {
            z
        };
        let options = FftOptions::new().axis(a).eps(options.eps);
        whole.transform(op, &options, Transform::Inverse)?.real()
    }

    /// `fft` applied to each row of `self`, a contiguous `[rows, length]` tensor of the dtype
    /// the transform reads (complex; f32 or f64 for a real-input one). The gradient rule
    /// (`jit/vjp/fft.rs`) transforms cotangents with it.
    pub(crate) fn fft_rows(&self, fft: Fft) -> Result<Tensor> {
        let device = resolve_device("fft", None, &[self])?;
        run(
            device,
            Op::Fft(fft),
            &[self],
            vec![fft.rows, fft.out_width()],
        )
    }

    /// The axis a 1-D transform runs along, as a position; rank-0 tensors have none.
    fn fft_axis(&self, op: &'static str, axis: Axis) -> Result<usize> {
        if self.rank() == 0 {
            return Err(Error::InvalidArgument {
                op,
                message: "expected a tensor with rank > 0, got a scalar".into(),
            });
        }
        let position = self.axis_position(op, axis)?;
        normalize_axis(op, position, self.shape())
    }

    /// `fft`, `ifft` or `rfft` of `self` along `options.axis`.
    fn transform(&self, op: &'static str, options: &FftOptions, kind: Transform) -> Result<Tensor> {
        let axis = self.fft_axis(op, options.axis.clone())?;
        let size = self.shape()[axis];
        let length = resolve_length(op, options.length, size)?;
        let real_input = kind == Transform::RealForward;
        // A real signal is transformed from f32 (f64 stays f64), a complex one from its own type.
        let dtype = match self.dtype() {
            d if !real_input => d.to_complex(),
            DType::F64 => DType::F64,
            _ => DType::F32,
        };
        let width = if real_input { length / 2 + 1 } else { length };
        let mut out_shape = self.shape().to_vec();
        out_shape[axis] = width;
        check_shape(op, &out_shape, dtype.to_complex())?;
        let device = resolve_device(op, None, &[self])?;
        let last = self.rank() - 1;
        let mut z = self.prepared(dtype, device)?;
        if axis != last {
            let perm: Vec<isize> = (0..=last)
                .filter(|&a| a != axis)
                .chain([axis])
                .map(|a| a as isize)
                .collect();
            z = z.transpose(perm)?;
        }
        if length < size {
            z = z.slice_along_axis(0, length, -1)?;
        } else if length > size {
            let mut config = vec![(0i64, 0i64, 0usize); z.rank()];
            config[last].1 = i64::try_from(length - size).unwrap_or(i64::MAX);
            z = z.pad(0, &config)?;
        }
        let mut moved_shape = z.shape().to_vec();
        let rows = numel(&moved_shape[..last]);
        let fft = Fft {
            rows,
            length,
            inverse: kind == Transform::Inverse,
            real_input,
            eps: options.eps.abs(),
        };
        let done = z.reshape(&[rows, length])?.fft_rows(fft)?;
        moved_shape[last] = width;
        let mut out = done.reshape(&moved_shape)?;
        if axis != last {
            // The inverse of the move: the last axis goes back to `axis`.
            let perm: Vec<isize> = (0..axis)
                .chain([last])
                .chain(axis..last)
                .map(|a| a as isize)
                .collect();
            out = out.transpose(perm)?;
        }
        Ok(out.named_like(self))
    }

    /// `fft2` or `ifft2`: the 1-D transform along the second axis, then the first.
    fn transform2(
        &self,
        op: &'static str,
        options: Fft2Options,
        kind: Transform,
    ) -> Result<Tensor> {
        if self.rank() < 2 {
            return Err(Error::InvalidArgument {
                op,
                message: format!(
                    "expected a tensor with rank > 1, got tensor with rank {}",
                    self.rank()
                ),
            });
        }
        let [a1, a2] = options.axes;
        let first = self.fft_axis(op, a1)?;
        let second = self.fft_axis(op, a2)?;
        if first == second {
            return Err(Error::InvalidArgument {
                op,
                message: format!("expected 2 distinct axes, got axis {first} twice"),
            });
        }
        let [l1, l2] = match options.lengths {
            Some([l1, l2]) => [Some(l1), Some(l2)],
            None => [None, None],
        };
        let along = |t: &Tensor, axis: usize, length: Option<FftLength>| {
            let mut o = FftOptions::new().axis(axis as isize).eps(options.eps);
            o.length = length;
            t.transform(op, &o, kind)
        };
        along(&along(self, second, l2)?, first, l1)
    }
}
