//! Creating tensors. Every constructor goes through a `Factory`, which holds the explicit
//! placement if one was given; `Tensor::zeros(..)` and friends use the session default.
//! Random values are drawn on the CPU from one seeded stream (`fastrand`'s wyrand), so the same
//! seed gives the same values on every backend.
//!
//! `fastrand` rather than `rand`: notebook cells see the runtime's whole dependency graph
//! through rust-analyzer (inside evcxr), and `rand` + `rand_chacha` + `rand_distr` cost every
//! session's first cell about 2.5 s of analysis on two cores; `fastrand` costs nothing
//! measurable. Normal values come from the Box-Muller transform below.

use crate::allocate::{checked_len, try_alloc};
use crate::buffer::with_dtype;
use crate::buffer::Buffer;
use crate::device::{Client, Device};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::session::resolve_device;
use crate::shape::{normalize_axis, strides};
use crate::tensor::Tensor;

/// Creates tensors on one placement: the one given, or the session default at creation time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Factory {
    device: Option<Device>,
}

/// A factory that places every tensor it creates on `device`.
pub fn on(device: Device) -> Factory {
    Factory {
        device: Some(device),
    }
}

impl Factory {
    /// A factory that follows the session default.
    pub fn session_default() -> Factory {
        Factory { device: None }
    }

    /// The device new tensors go to.
    pub fn device(&self) -> Result<Device> {
        resolve_device("create", self.device, &[])
    }

    fn place(&self, buffer: Buffer, shape: &[usize]) -> Result<Tensor> {
        let device = self.device()?;
        Tensor::from_host(buffer, shape.to_vec(), device)
    }

    /// A tensor holding `data` with `shape`; the length must match.
    pub fn from_vec<T: Element>(&self, data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let expected = checked_len(shape, T::DTYPE)?;
        if data.len() != expected {
            return Err(Error::ElementCount {
                op: "from_vec",
                shape: shape.to_vec(),
                expected,
                len: data.len(),
            });
        }
        self.place(T::into_buffer(data), shape)
    }

    /// A tensor copied from a slice.
    pub fn from_slice<T: Element>(&self, data: &[T], shape: &[usize]) -> Result<Tensor> {
        self.from_vec(data.to_vec(), shape)
    }

    /// A one-dimensional tensor of `dtype` from raw little-endian bytes (Nx's `from_binary`,
    /// on the machines Nx runs on); the length must be a whole number of elements. Reshape it
    /// for another shape.
    pub fn from_binary(&self, bytes: &[u8], dtype: DType) -> Result<Tensor> {
        let size = dtype.size_in_bytes();
        if !bytes.len().is_multiple_of(size) {
            return Err(Error::InvalidArgument {
                op: "from_binary",
                message: format!(
                    "{} bytes are not a whole number of {dtype} elements ({size} bytes each)",
                    bytes.len()
                ),
            });
        }
        let len = bytes.len() / size;
        with_dtype!(dtype, T => {
            drop(crate::allocate::try_reserve::<T>(len, &[len])?);
            let data: Vec<T> = bytes
                .chunks_exact(size)
                .map(|c| {
                    let mut raw = [0u8; std::mem::size_of::<T>()];
                    raw.copy_from_slice(c);
                    T::from_le_bytes(raw)
                })
                .collect();
            self.from_vec(data, &[len])
        })
    }

    /// A rank-0 tensor.
    pub fn scalar<T: Element>(&self, value: T) -> Result<Tensor> {
        self.from_vec(vec![value], &[])
    }

    /// Every element `value` (converted to `dtype`).
    pub fn full(&self, value: f64, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        let n = checked_len(shape, dtype)?;
        let device = self.device()?;
        if matches!(device.client, Client::Cuda | Client::Sim) {
            // Filled where it lives: one element goes over and the device broadcasts it, so a
            // size the device cannot hold is refused by the device (naming it), not by the
            // host on the way, and a large fill costs no host buffer and no copy.
            let one = Buffer::filled(dtype, 1, value, &[])?;
            return Tensor::from_host(one, Vec::new(), device)?.broadcast(shape);
        }
        self.place(Buffer::filled(dtype, n, value, shape)?, shape)
    }

    /// All zeros.
    pub fn zeros(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        self.full(0.0, dtype, shape)
    }

    /// All ones.
    pub fn ones(&self, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        self.full(1.0, dtype, shape)
    }

    /// Counts up along `axis` (or through every element in row-major order when `None`), as
    /// `Nx.iota`.
    pub fn iota(&self, dtype: DType, shape: &[usize], axis: Option<isize>) -> Result<Tensor> {
        let n = checked_len(shape, dtype)?;
        let axis = axis.map(|a| normalize_axis("iota", a, shape)).transpose()?;
        let s = strides(shape);
        let buffer = with_dtype!(dtype, T => {
            let mut v = try_alloc(n, T::ZERO, shape)?;
            for (i, x) in v.iter_mut().enumerate() {
                let k = match axis {
                    None => i,
                    Some(a) => (i / s[a]) % shape[a],
                };
                *x = T::from_i64(k as i64);
            }
            T::into_buffer(v)
        });
        self.place(buffer, shape)
    }

    /// `n` evenly spaced f32 samples from `start` to `stop`, both included, as
    /// `Nx.linspace(start, stop, n: n)`.
    pub fn linspace(&self, start: f64, stop: f64, n: usize) -> Result<Tensor> {
        self.linspace_with(start, stop, n, DType::F32, true)
    }

    /// [`Factory::linspace`] with Nx's options: the dtype, and whether `stop` is the last
    /// sample (`endpoint`; else the step is `(stop - start) / n`). As in Nx, start and stop
    /// are first converted to `dtype`, the samples computed as `iota * step + start` in floats
    /// and converted at the end (so integer samples truncate).
    pub fn linspace_with(
        &self,
        start: f64,
        stop: f64,
        n: usize,
        dtype: DType,
        endpoint: bool,
    ) -> Result<Tensor> {
        if n == 0 {
            return Err(Error::InvalidArgument {
                op: "linspace",
                message: "expected n to be a positive integer, got: 0".into(),
            });
        }
        let ends = self.from_vec(vec![start, stop], &[2])?.as_type(dtype)?;
        let (first, last) = (ends.slice(&[0], &[1], None)?, ends.slice(&[1], &[1], None)?);
        if n == 1 {
            return Ok(first);
        }
        let divisor = if endpoint { n - 1 } else { n };
        let step = last.subtract(&first)?.divide(divisor as f64)?;
        self.iota(dtype, &[n], None)?
            .multiply(&step)?
            .add(&first)?
            .as_type(dtype)
    }

    /// An `n`×`m` u8 mask with 1 at and below diagonal `k` (above the main one when
    /// positive), as `Nx.tri(n, m, k: k)`.
    pub fn tri(&self, n: usize, m: usize, k: isize) -> Result<Tensor> {
        let shape = [n, m];
        let len = checked_len(&shape, DType::U8)?;
        let mut v = try_alloc(len, 0u8, &shape)?;
        for (i, row) in v.chunks_mut(m.max(1)).enumerate().take(n) {
            for (j, x) in row.iter_mut().enumerate() {
                // j <= i + k, in i128 so no offset overflows.
                *x = u8::from((j as i128) <= (i as i128) + (k as i128));
            }
        }
        self.place(Buffer::U8(v), &shape)
    }

    /// The `n`×`n` identity matrix.
    pub fn eye(&self, dtype: DType, n: usize) -> Result<Tensor> {
        let shape = [n, n];
        let len = checked_len(&shape, dtype)?;
        let buffer = with_dtype!(dtype, T => {
            let mut v = try_alloc(len, T::ZERO, &shape)?;
            for i in 0..n {
                v[i * n + i] = T::ONE;
            }
            T::into_buffer(v)
        });
        self.place(buffer, &shape)
    }

    fn random(
        &self,
        seed: u64,
        dtype: DType,
        shape: &[usize],
        mut draw: impl FnMut(&mut fastrand::Rng) -> f64,
    ) -> Result<Tensor> {
        let n = checked_len(shape, dtype)?;
        let mut rng = fastrand::Rng::with_seed(seed);
        let buffer = with_dtype!(dtype, T => {
            let mut v = try_alloc(n, T::ZERO, shape)?;
            for x in v.iter_mut() {
                *x = T::from_f64(draw(&mut rng));
            }
            T::into_buffer(v)
        });
        self.place(buffer, shape)
    }

    /// Uniform values in `[low, high)` from `seed`; integers are rounded down. As in Nx the
    /// bounds must be finite and `low < high`; for an integer dtype both must lie in its range
    /// (`high` may be one past its largest value) and for a float dtype they must be finite in
    /// it, otherwise the values could not be uniform in `[low, high)`: an error says so.
    ///
    /// Not Nx's `Nx.Random`: a generator on the host seeded by `seed`, drawn when the call
    /// runs, so inside `jit` its numbers are fixed when the function is traced. For numbers
    /// that are a function of a key (Nx's and JAX's, on every device, drawn inside compiled
    /// steps) use [`crate::random`].
    pub fn random_uniform(
        &self,
        seed: u64,
        dtype: DType,
        shape: &[usize],
        low: f64,
        high: f64,
    ) -> Result<Tensor> {
        let invalid = |why: String| Error::InvalidArgument {
            op: "random_uniform",
            message: format!("bounds [{low}, {high}) for {dtype}: {why}"),
        };
        if !low.is_finite() || !high.is_finite() {
            return Err(invalid("both bounds must be finite".into()));
        }
        if low >= high {
            return Err(invalid("low must be below high".into()));
        }
        let (min, max_excl) = match dtype {
            DType::F32 => (-(f32::MAX as f64), f32::MAX as f64),
            DType::F64 => (f64::MIN, f64::MAX),
            DType::F16 => (-half::f16::MAX.to_f64(), half::f16::MAX.to_f64()),
            DType::BF16 => (-half::bf16::MAX.to_f64(), half::bf16::MAX.to_f64()),
            // Powers of two, exact in f64: [0, 2^bits) or [-2^(bits-1), 2^(bits-1)).
            int if int.is_unsigned() => (0.0, 2f64.powi(int.bits() as i32)),
            int => (
                -(2f64.powi(int.bits() as i32 - 1)),
                2f64.powi(int.bits() as i32 - 1),
            ),
        };
        if low < min || high > max_excl {
            return Err(invalid(format!("{dtype} holds [{min}, {max_excl}]")));
        }
        let span = high - low;
        if !span.is_finite() {
            return Err(invalid("the width of the interval overflows f64".into()));
        }
        let is_float = dtype.is_float();
        // The largest value of the dtype below `high`: rounding to f32 (or flooring) must not
        // land on `high` itself.
        let below_high = match dtype {
            DType::F32 => (high as f32).next_down() as f64,
            DType::F64 => high.next_down(),
            half if half.is_half() => crate::half_element::largest_below(half, high),
            _ => high.ceil() - 1.0,
        };
        self.random(seed, dtype, shape, |r| {
            let v = (low + r.f64() * span).floor_if(!is_float);
            let rounded = match dtype {
                DType::F32 => v as f32 as f64,
                half if half.is_half() => crate::half_element::rounded(half, v),
                _ => v,
            };
            if rounded >= high {
                below_high
            } else {
                v
            }
        })
    }

    /// Normally distributed values with `mean` and `std` from `seed` (floats only).
    ///
    /// Not Nx's `Nx.Random`: a generator on the host seeded by `seed`, drawn when the call
    /// runs, so inside `jit` its numbers are fixed when the function is traced. For numbers
    /// that are a function of a key (Nx's and JAX's, on every device, drawn inside compiled
    /// steps) use [`crate::random`].
    pub fn random_normal(
        &self,
        seed: u64,
        dtype: DType,
        shape: &[usize],
        mean: f64,
        std: f64,
    ) -> Result<Tensor> {
        if !dtype.is_float() {
            return Err(Error::UnsupportedDType {
                op: "random_normal",
                dtype,
            });
        }
        self.random(seed, dtype, shape, |r| mean + std * standard_normal(r))
    }
}

/// One draw from N(0, 1) by the Box-Muller transform. `1 - u` keeps the logarithm's argument
/// in (0, 1], so a zero draw cannot give infinity.
fn standard_normal(rng: &mut fastrand::Rng) -> f64 {
    let radius = (-2.0 * (1.0 - rng.f64()).ln()).sqrt();
    radius * (std::f64::consts::TAU * rng.f64()).cos()
}

trait FloorIf {
    fn floor_if(self, cond: bool) -> Self;
}

impl FloorIf for f64 {
    fn floor_if(self, cond: bool) -> f64 {
        if cond {
            self.floor()
        } else {
            self
        }
    }
}

/// Constructors on the session default device (see [`Factory`] and [`on`] for explicit ones).
impl Tensor {
    /// A tensor holding `data` with `shape`; the length must match.
    ///
    /// On the session's default device; `on(device).from_vec(..)` places it elsewhere.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Factory::session_default().from_vec(data, shape)
    }
    /// A tensor copied from a slice.
    ///
    /// On the session's default device; `on(device).from_slice(..)` places it elsewhere.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        Factory::session_default().from_slice(data, shape)
    }
    /// A one-dimensional tensor from raw little-endian bytes (Nx's `from_binary`; see
    /// [`Factory::from_binary`]), on the session's default device.
    pub fn from_binary(bytes: &[u8], dtype: DType) -> Result<Tensor> {
        Factory::session_default().from_binary(bytes, dtype)
    }
    /// A rank-0 tensor.
    ///
    /// On the session's default device; `on(device).scalar(..)` places it elsewhere.
    pub fn scalar<T: Element>(value: T) -> Result<Tensor> {
        Factory::session_default().scalar(value)
    }
    /// Every element `value` (converted to `dtype`).
    ///
    /// On the session's default device; `on(device).full(..)` places it elsewhere.
    pub fn full(value: f64, dtype: DType, shape: &[usize]) -> Result<Tensor> {
        Factory::session_default().full(value, dtype, shape)
    }
    /// All zeros.
    ///
    /// On the session's default device; `on(device).zeros(..)` places it elsewhere.
    pub fn zeros(dtype: DType, shape: &[usize]) -> Result<Tensor> {
        Factory::session_default().zeros(dtype, shape)
    }
    /// All ones.
    ///
    /// On the session's default device; `on(device).ones(..)` places it elsewhere.
    pub fn ones(dtype: DType, shape: &[usize]) -> Result<Tensor> {
        Factory::session_default().ones(dtype, shape)
    }
    /// Counts up along `axis` (or through every element in row-major order when `None`), as
    /// `Nx.iota`.
    ///
    /// On the session's default device; `on(device).iota(..)` places it elsewhere.
    pub fn iota(dtype: DType, shape: &[usize], axis: Option<isize>) -> Result<Tensor> {
        Factory::session_default().iota(dtype, shape, axis)
    }
    /// `n` evenly spaced f32 samples from `start` to `stop`, both included, as
    /// `Nx.linspace(start, stop, n: n)`.
    ///
    /// On the session's default device; `on(device).linspace(..)` places it elsewhere.
    pub fn linspace(start: f64, stop: f64, n: usize) -> Result<Tensor> {
        Factory::session_default().linspace(start, stop, n)
    }
    /// [`Factory::linspace`] with Nx's options: the dtype, and whether `stop` is the last
    /// sample (`endpoint`; else the step is `(stop - start) / n`). As in Nx, start and stop
    /// are first converted to `dtype`, the samples computed as `iota * step + start` in floats
    /// and converted at the end (so integer samples truncate).
    ///
    /// On the session's default device; `on(device).linspace_with(..)` places it elsewhere.
    pub fn linspace_with(
        start: f64,
        stop: f64,
        n: usize,
        dtype: DType,
        endpoint: bool,
    ) -> Result<Tensor> {
        Factory::session_default().linspace_with(start, stop, n, dtype, endpoint)
    }
    /// An `n`×`m` u8 mask with 1 at and below diagonal `k` (above the main one when
    /// positive), as `Nx.tri(n, m, k: k)`.
    ///
    /// On the session's default device; `on(device).tri(..)` places it elsewhere.
    pub fn tri(n: usize, m: usize, k: isize) -> Result<Tensor> {
        Factory::session_default().tri(n, m, k)
    }
    /// The `n`×`n` identity matrix.
    ///
    /// On the session's default device; `on(device).eye(..)` places it elsewhere.
    pub fn eye(dtype: DType, n: usize) -> Result<Tensor> {
        Factory::session_default().eye(dtype, n)
    }
    /// Uniform values in `[low, high)` from `seed`; integers are rounded down. As in Nx the
    /// bounds must be finite and `low < high`; for an integer dtype both must lie in its range
    /// (`high` may be one past its largest value) and for a float dtype they must be finite in
    /// it, otherwise the values could not be uniform in `[low, high)`: an error says so.
    ///
    /// On the session's default device; `on(device).random_uniform(..)` places it elsewhere.
    pub fn random_uniform(
        seed: u64,
        dtype: DType,
        shape: &[usize],
        low: f64,
        high: f64,
    ) -> Result<Tensor> {
        Factory::session_default().random_uniform(seed, dtype, shape, low, high)
    }
    /// Normally distributed values with `mean` and `std` from `seed` (floats only).
    ///
    /// On the session's default device; `on(device).random_normal(..)` places it elsewhere.
    pub fn random_normal(
        seed: u64,
        dtype: DType,
        shape: &[usize],
        mean: f64,
        std: f64,
    ) -> Result<Tensor> {
        Factory::session_default().random_normal(seed, dtype, shape, mean, std)
    }
}
