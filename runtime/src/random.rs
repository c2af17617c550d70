//! Random numbers from keys, as `Nx.Random` (and JAX's `jax.random`): a key is a `u32[2]`
//! tensor, split and folded functionally, and every number is a function of the key alone
//! through threefry2x32 with 20 rounds. Everything here is composed of tensor ops (wrapping u32
//! adds, xors, shifts), so it runs on every device, is recorded by `jit` like any op (a compiled
//! step takes a key and draws from it when it runs, nothing is frozen at trace time), and
//! gives the same bits everywhere: the numbers equal Nx's documented examples and JAX's
//! threefry (with `jax_threefry_partitionable` off, Nx's scheme).
//!
//! ```
//! use tensorbook::{random, DType};
//! let key = random::key(1701).unwrap();
//! let (x, next) = random::uniform(&key, 0.0, 1.0, &[], DType::F32).unwrap();
//! assert_eq!(x.to_scalar::<f32>().unwrap(), 0.9728644);
//! assert_eq!(next.shape(), &[2]);
//! ```

use crate::create::{on, Factory};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::Operand;
use crate::shape::numel;
use crate::tensor::Tensor;

/// Threefry's key-schedule parity constant.
const PARITY: u32 = 0x1BD1_1BDA;
/// The rotations of the even and odd groups of four rounds.
const ROTATIONS: [[u32; 4]; 2] = [[13, 15, 26, 6], [17, 29, 16, 24]];

/// A key from a seed on the session default device, `Nx.Random.key/1`: the seed's high and low
/// 32 bits (`key(12)` is `[0, 12]`).
pub fn key(seed: u64) -> Result<Tensor> {
    key_on(&Factory::session_default(), seed)
}

/// [`key`] on a given place (`random::key_on(&on(Device::cuda(0)), 42)`).
pub fn key_on(place: &Factory, seed: u64) -> Result<Tensor> {
    place.from_vec(vec![(seed >> 32) as u32, seed as u32], &[2])
}

/// `parts` new keys from `key`, as the rows of a `u32[parts][2]` tensor (`Nx.Random.split`).
pub fn split(key: &Tensor, parts: usize) -> Result<Tensor> {
    check_key("split", key)?;
    let count = parts.checked_mul(2).ok_or_else(|| Error::InvalidArgument {
        op: "random::split",
        message: format!("{parts} parts is more keys than a tensor can hold"),
    })?;
    threefry(key, count)?.reshape(&[parts, 2])
}

/// The key folded with `data` (`Nx.Random.fold_in`): an integer, or an integer tensor, whose
/// every entry gives a key (the result has the data's shape and a last axis of 2).
pub fn fold_in<'a>(key: &Tensor, data: impl Into<Operand<'a>>) -> Result<Tensor> {
    check_key("fold_in", key)?;
    let place = on(key.device());
    let data = match data.into() {
        // Any integer as its 64 bits, a negative one two's complement, as Nx casts to u64.
        Operand::Integer(v) => place.from_vec(vec![v as u64], &[])?,
        Operand::Tensor(t) if !t.dtype().is_float() => t.as_type(DType::U64)?,
        other => {
            return Err(Error::InvalidArgument {
                op: "random::fold_in",
                message: format!("the data must be an integer or an integer tensor, got {other:?}"),
            })
        }
    };
    let flat = data.reshape(&[data.size()])?;
    let high = flat.right_shift(32)?.as_type(DType::U32)?;
    let low = flat.bitwise_and(0xFFFF_FFFFu64)?.as_type(DType::U32)?;
    let (x0, x1) = threefry_pair(&high, &low, key)?;
    let mut shape = data.shape().to_vec();
    shape.push(2);
    Tensor::stack(&[x0, x1], -1)?.reshape(&shape)
}

/// Random bits of `shape` from `key` as unsigned integers of `bits` (8, 16, 32 or 64) bits,
/// the source of every distribution below (Nx's `random_bits`).
pub fn bits(key: &Tensor, shape: &[usize], bits: usize) -> Result<Tensor> {
    check_key("bits", key)?;
    let n = numel(shape);
    match bits {
        64 => {
            let halves = threefry(key, n.saturating_mul(2))?
                .reshape(&[2, n])?
                .as_type(DType::U64)?;
            let high = halves.slice_along_axis(0, 1, 0)?.left_shift(32)?;
            let low = halves.slice_along_axis(1, 1, 0)?;
            high.bitwise_or(&low)?.reshape(shape)
        }
        32 => threefry(key, n)?.reshape(shape),
        8 | 16 => threefry(key, n)?
            .as_type(if bits == 8 { DType::U8 } else { DType::U16 })?
            .reshape(shape),
        other => Err(Error::InvalidArgument {
            op: "random::bits",
            message: format!("bit width {other}: 8, 16, 32 or 64"),
        }),
    }
}

/// Uniform floats in `[min, max)` of `shape` and float `dtype`, with the key to use next
/// (`Nx.Random.uniform/4`: the key is split, the second half draws, the first is returned).
pub fn uniform(
    key: &Tensor,
    min: f64,
    max: f64,
    shape: &[usize],
    dtype: DType,
) -> Result<(Tensor, Tensor)> {
    let (next, draw) = halves(key)?;
    Ok((uniform_split(&draw, min, max, shape, dtype)?, next))
}

/// [`uniform`] from a key already split: every bit of the result comes from `key`.
pub fn uniform_split(
    key: &Tensor,
    min: f64,
    max: f64,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    check_key("uniform", key)?;
    let (nbits, mantissa) = match dtype {
        DType::BF16 => (16, 7),
        DType::F16 => (16, 10),
        DType::F32 => (32, 23),
        DType::F64 => (64, 52),
        other => {
            return Err(Error::UnsupportedDType {
                op: "random::uniform",
                dtype: other,
            })
        }
    };
    let place = on(key.device());
    let (min, max) = (place.full(min, dtype, &[])?, place.full(max, dtype, &[])?);
    // Nx sets the top mantissa bits under the exponent of 1.0 and subtracts 1: the value is
    // the mantissa times 2^-mantissa, which this computes exactly without a bitcast.
    let unit = bits(key, shape, nbits)?
        .right_shift(nbits - mantissa)?
        .as_type(dtype)?
        .multiply(2f64.powi(-(mantissa as i32)))?;
    unit.multiply(&max.subtract(&min)?)?.add(&min)?.max(&min)
}

/// Normally distributed floats with `mean` and `standard_deviation` (`Nx.Random.normal/4`),
/// with the key to use next.
pub fn normal(
    key: &Tensor,
    mean: f64,
    standard_deviation: f64,
    shape: &[usize],
    dtype: DType,
) -> Result<(Tensor, Tensor)> {
    let (next, draw) = halves(key)?;
    Ok((
        normal_split(&draw, mean, standard_deviation, shape, dtype)?,
        next,
    ))
}

/// [`normal`] from a key already split: √2·erf⁻¹ of a uniform draw in (-1, 1), as Nx.
pub fn normal_split(
    key: &Tensor,
    mean: f64,
    standard_deviation: f64,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    // The float just above -1, so that erf⁻¹ stays finite.
    let above_minus_one = match dtype {
        DType::BF16 => half::bf16::from_bits(half::bf16::NEG_ONE.to_bits() - 1).to_f64(),
        DType::F16 => half::f16::from_bits(half::f16::NEG_ONE.to_bits() - 1).to_f64(),
        DType::F32 => f64::from(f32::from_bits((-1f32).to_bits() - 1)),
        DType::F64 => f64::from_bits((-1f64).to_bits() - 1),
        other => {
            return Err(Error::UnsupportedDType {
                op: "random::normal",
                dtype: other,
            })
        }
    };
    let u = uniform_split(key, above_minus_one, 1.0, shape, dtype)?;
    let place = on(key.device());
    let normal = place
        .full(2.0, dtype, &[])?
        .sqrt()?
        .multiply(&u.erf_inv()?)?;
    normal
        .multiply(&place.full(standard_deviation, dtype, &[])?)?
        .add(&place.full(mean, dtype, &[])?)
}

/// How [`multivariate_normal`] factors the covariance `C` into `A` with `A·Aᵀ = C` (Nx's
/// `:method`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Decomposition {
    /// `A` the lower Cholesky factor (Nx's default); `C` must be positive definite.
    #[default]
    Cholesky,
    /// `A = U·√S` from the SVD; for a singular (semi-definite) `C`.
    Svd,
    /// `A = V·√W` from the symmetric eigendecomposition; for a singular `C`.
    Eigh,
}

/// Samples of a multivariate normal distribution with `mean` (`[d]`) and `covariance`
/// (`[d, d]`, positive semi-definite), of shape `[..batch, d]`
/// (`Nx.Random.multivariate_normal/4`), with the key to use next. The dtype is `mean`'s and
/// `covariance`'s merged, integers giving f32: cast `mean` to choose another
/// (`mean.as_type(DType::F16)`). `mean + z·Aᵀ` for standard normal `z`, so the numbers are Nx's.
pub fn multivariate_normal(
    key: &Tensor,
    mean: &Tensor,
    covariance: &Tensor,
    batch: &[usize],
    method: Decomposition,
) -> Result<(Tensor, Tensor)> {
    let (next, draw) = halves(key)?;
    Ok((
        multivariate_normal_split(&draw, mean, covariance, batch, method)?,
        next,
    ))
}

/// [`multivariate_normal`] from a key already split.
pub fn multivariate_normal_split(
    key: &Tensor,
    mean: &Tensor,
    covariance: &Tensor,
    batch: &[usize],
    method: Decomposition,
) -> Result<Tensor> {
    const OP: &str = "random::multivariate_normal";
    check_key(OP, key)?;
    let invalid = |message: String| Error::InvalidArgument { op: OP, message };
    let dtype = mean.dtype().promote(covariance.dtype()).to_float();
    if !dtype.is_real_float() {
        return Err(Error::UnsupportedDType { op: OP, dtype });
    }
    if mean.rank() != 1 {
        return Err(invalid(format!(
            "expected mean to have rank 1, got tensor with rank {}",
            mean.rank()
        )));
    }
    if covariance.rank() != 2 {
        return Err(invalid(format!(
            "expected covariance to have rank 2, got tensor with rank {}",
            covariance.rank()
        )));
    }
    let (d, rows, columns) = (
        mean.shape()[0],
        covariance.shape()[0],
        covariance.shape()[1],
    );
    if rows != columns {
        return Err(invalid(format!(
            "expected covariance to be a square matrix, got tensor with shape {:?}",
            covariance.shape()
        )));
    }
    if rows != d {
        return Err(invalid(format!(
            "expected mean and covariance to have the same dimensions, got {d} and {rows}"
        )));
    }
    // The factorisations compute in f32 or f64: a 16-bit request factors in f32, then rounds.
    let factored = if dtype.is_half() { DType::F32 } else { dtype };
    let c = covariance.as_type(factored)?;
    let a = match method {
        Decomposition::Cholesky => c.cholesky()?,
        Decomposition::Svd => {
            let (u, s, _) = c.svd()?;
            u.multiply(&s.sqrt()?)?
        }
        Decomposition::Eigh => {
            let (w, v) = c.eigh()?;
            // A singular covariance's zero eigenvalues come out of the factorisation as ±1e-16
            // or so: negative ones would be NaN under the root (Nx and JAX give NaN samples).
            v.multiply(&w.max(0.0)?.sqrt()?)?
        }
    }
    .as_type(dtype)?;
    let mut shape = batch.to_vec();
    shape.push(d);
    let samples = numel(batch);
    let z = normal_split(key, 0.0, 1.0, &shape, dtype)?.reshape(&[samples, d])?;
    mean.as_type(dtype)?
        .add(&z.dot(&a.transpose(..)?)?)?
        .reshape(&shape)?
        .stop_grad()
}

/// Uniform integers in `[min, max)` of `shape` and integer `dtype` (`Nx.Random.randint/4`),
/// with the key to use next.
pub fn randint(
    key: &Tensor,
    min: i64,
    max: i64,
    shape: &[usize],
    dtype: DType,
) -> Result<(Tensor, Tensor)> {
    let (next, draw) = halves(key)?;
    Ok((randint_split(&draw, min, max, shape, dtype)?, next))
}

/// [`randint`] from a key already split: two words of bits per entry reduced modulo the span
/// without bias toward small values, as Nx (and JAX) do.
pub fn randint_split(
    key: &Tensor,
    min: i64,
    max: i64,
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    check_key("randint", key)?;
    if dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "random::randint",
            dtype,
        });
    }
    if min >= max {
        return Err(Error::InvalidArgument {
            op: "random::randint",
            message: format!("the range [{min}, {max}) is empty"),
        });
    }
    let nbits = dtype.bits();
    let mut words_shape = vec![2];
    words_shape.extend_from_slice(shape);
    let words = bits(key, &words_shape, nbits)?;
    let n = numel(shape);
    let flat = words.reshape(&[2, n])?;
    // The span in the dtype's width, as Nx's `as_type(max - min, {:u, nbits})`.
    let width_mask = if nbits == 64 {
        u64::MAX
    } else {
        (1u64 << nbits) - 1
    };
    let span = (max.wrapping_sub(min) as u64) & width_mask;
    let span = span.max(1);
    // In u64 and wrapping, as Nx computes it (`pow(u64(2), nbits / 2) |> remainder(span)
    // |> pow(2) |> remainder(span)`).
    let multiplier = (1u64 << (nbits / 2)) % span;
    let multiplier = multiplier.wrapping_mul(multiplier) % span;
    let high = flat.slice_along_axis(0, 1, 0)?.as_type(DType::U64)?;
    let low = flat.slice_along_axis(1, 1, 0)?.as_type(DType::U64)?;
    let offset = high
        .remainder(span)?
        .multiply(multiplier)?
        .add(&low.remainder(span)?)?
        .remainder(span)?;
    offset
        .as_type(DType::S64)?
        .add(min)?
        .as_type(dtype)?
        .reshape(shape)
}

/// Gumbel-distributed floats of `shape` and float `dtype` (`Nx.Random.gumbel`), with the key
/// to use next: `-ln(-ln u)` of a uniform draw in `[smallest normal, 1)`.
pub fn gumbel(key: &Tensor, shape: &[usize], dtype: DType) -> Result<(Tensor, Tensor)> {
    let (next, draw) = halves(key)?;
    Ok((gumbel_split(&draw, shape, dtype)?, next))
}

/// [`gumbel`] from a key already split.
pub fn gumbel_split(key: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let smallest = match dtype {
        DType::BF16 => half::bf16::MIN_POSITIVE.to_f64(),
        DType::F16 => half::f16::MIN_POSITIVE.to_f64(),
        DType::F32 => f64::from(f32::MIN_POSITIVE),
        DType::F64 => f64::MIN_POSITIVE,
        other => {
            return Err(Error::UnsupportedDType {
                op: "random::gumbel",
                dtype: other,
            })
        }
    };
    uniform_split(key, smallest, 1.0, shape, dtype)?
        .log()?
        .negate()?
        .log()?
        .negate()
}

/// `tensor` with its entries along `axis` in a random order (`Nx.Random.shuffle`), with the key
/// to use next: one permutation for every line along the axis, or with `independent` one per
/// line. Each round sorts by fresh random words; rounds are added until colliding words are
/// unlikely (`ceil(3 ln n / ln 2^32)`, as Nx and JAX).
pub fn shuffle(
    key: &Tensor,
    tensor: &Tensor,
    axis: isize,
    independent: bool,
) -> Result<(Tensor, Tensor)> {
    check_key("shuffle", key)?;
    if independent {
        return shuffle_lines(key, tensor, axis);
    }
    let len = tensor.axis_size(axis)?;
    let order = on(key.device()).iota(DType::S32, &[len], None)?;
    let (order, next) = shuffle_lines(key, &order, 0)?;
    Ok((tensor.take(&order, axis)?, next))
}

fn shuffle_lines(key: &Tensor, tensor: &Tensor, axis: isize) -> Result<(Tensor, Tensor)> {
    let n = tensor.size() as f64;
    let rounds = (3.0 * n.ln() / f64::from(u32::MAX).ln()).ceil().max(0.0) as usize;
    let (mut out, mut key) = (tensor.clone(), key.clone());
    for _ in 0..rounds {
        let (next, draw) = halves(&key)?;
        let words = bits(&draw, out.shape(), 32)?;
        let order = words.argsort(axis, crate::ops::sort::Direction::Asc)?;
        out = out.take_along_axis(&order, axis)?;
        key = next;
    }
    Ok((out, key))
}

/// `samples` entries of `tensor` drawn uniformly (`Nx.Random.choice/3`), along `axis` or from
/// the flattened tensor when `None`, with replacement or (`replace: false`) without, and the
/// key to use next.
pub fn choice(
    key: &Tensor,
    tensor: &Tensor,
    samples: usize,
    axis: Option<isize>,
    replace: bool,
) -> Result<(Tensor, Tensor)> {
    let (tensor, axis, n) = choice_input(key, tensor, samples, axis, replace)?;
    if replace {
        let (idx, next) = randint(key, 0, n as i64, &[samples], DType::U32)?;
        Ok((tensor.take(&idx, axis)?, next))
    } else {
        let (shuffled, next) = shuffle(key, &tensor, axis, false)?;
        Ok((shuffled.slice_along_axis(0, samples, axis)?, next))
    }
}

/// [`choice`] with the probability of each entry along the axis (`Nx.Random.choice/4`): with
/// replacement by the cumulative sum, without by the Gumbel-top-k trick, as Nx.
pub fn choice_with_probabilities(
    key: &Tensor,
    tensor: &Tensor,
    p: &Tensor,
    samples: usize,
    axis: Option<isize>,
    replace: bool,
) -> Result<(Tensor, Tensor)> {
    let (tensor, axis, n) = choice_input(key, tensor, samples, axis, replace)?;
    if p.shape() != [n] {
        return Err(Error::InvalidArgument {
            op: "random::choice",
            message: format!(
                "the probabilities must have shape [{n}] (one per entry along the axis), got {:?}",
                p.shape()
            ),
        });
    }
    if replace {
        let cumulative = p.cumulative_sum(0, false)?;
        let (u, next) = uniform(key, 0.0, 1.0, &[samples], cumulative.dtype())?;
        let total = cumulative.slice_along_axis(n - 1, 1, 0)?;
        let r = total.multiply(&u.negate()?.add(1)?)?;
        let idx = cumulative
            .new_axis(0)?
            .less_equal(&r.new_axis(1)?)?
            .argmin_with(1, false, crate::ops::reduce::TieBreak::Low, DType::S32)?;
        Ok((tensor.take(&idx, axis)?, next))
    } else {
        let (g, next) = gumbel(key, &[n], p.dtype().to_float())?;
        let scores = g.negate()?.subtract(&p.log()?)?;
        let idx = scores
            .argsort(0, crate::ops::sort::Direction::Asc)?
            .slice_along_axis(0, samples, 0)?;
        Ok((tensor.take(&idx, axis)?, next))
    }
}

/// The tensor to draw from (flattened without an axis), the axis and its length, checked as
/// Nx's `validate_choice_opts`.
fn choice_input(
    key: &Tensor,
    tensor: &Tensor,
    samples: usize,
    axis: Option<isize>,
    replace: bool,
) -> Result<(Tensor, isize, usize)> {
    check_key("choice", key)?;
    let bad = |message: String| Error::InvalidArgument {
        op: "random::choice",
        message,
    };
    if tensor.rank() == 0 {
        return Err(bad("the tensor must have rank 1 or more".into()));
    }
    if samples == 0 {
        return Err(bad("must take at least one sample".into()));
    }
    let (tensor, axis) = match axis {
        Some(a) => (tensor.clone(), a),
        None => (tensor.reshape(&[tensor.size()])?, 0),
    };
    let n = tensor.axis_size(axis)?;
    if n == 0 {
        return Err(bad(format!(
            "nothing to choose from: the axis has no entries (shape {:?})",
            tensor.shape()
        )));
    }
    if !replace && samples > n {
        return Err(bad(format!(
            "cannot take {samples} samples without replacement from {n} entries"
        )));
    }
    Ok((tensor, axis, n))
}

/// The key split in two: (the key to keep, the key to draw from).
fn halves(key: &Tensor) -> Result<(Tensor, Tensor)> {
    let keys = split(key, 2)?;
    Ok((
        keys.slice_along_axis(0, 1, 0)?.reshape(&[2])?,
        keys.slice_along_axis(1, 1, 0)?.reshape(&[2])?,
    ))
}

fn check_key(op: &'static str, key: &Tensor) -> Result<()> {
    if key.shape() != [2] || key.dtype() != DType::U32 {
        return Err(Error::InvalidArgument {
            op,
            message: format!(
                "a key is a u32[2] tensor (random::key(seed)), got {}{:?}",
                key.dtype(),
                key.shape()
            ),
        });
    }
    Ok(())
}

/// `count` words of threefry2x32 output for `key` over the counter 0, 1, 2, ... (Nx's
/// `threefry2x32/2`: the counter split in two halves, the outputs concatenated, an odd count
/// padded by one word that is dropped).
fn threefry(key: &Tensor, count: usize) -> Result<Tensor> {
    let half = count.div_ceil(2);
    let place = on(key.device());
    let mut counter = place.iota(DType::U32, &[count], None)?;
    if count % 2 == 1 {
        // Nx pads an odd counter with a 0 (its output word is dropped below, but its pair's
        // first word is not).
        counter = Tensor::concatenate(&[counter, place.zeros(DType::U32, &[1])?], 0)?;
    }
    let x0 = counter.slice_along_axis(0, half, 0)?;
    let x1 = counter.slice_along_axis(half, half, 0)?;
    let (y0, y1) = threefry_pair(&x0, &x1, key)?;
    Tensor::concatenate(&[y0, y1], 0)?.slice_along_axis(0, count, 0)
}

/// Threefry2x32 with 20 rounds over the word pairs `(x0[i], x1[i])` under `key`.
fn threefry_pair(x0: &Tensor, x1: &Tensor, key: &Tensor) -> Result<(Tensor, Tensor)> {
    let k0 = key.slice_along_axis(0, 1, 0)?.reshape(&[])?;
    let k1 = key.slice_along_axis(1, 1, 0)?.reshape(&[])?;
    let k2 = k0.bitwise_xor(&k1)?.bitwise_xor(PARITY)?;
    let schedule = [k0, k1, k2];
    let mut x0 = x0.add(&schedule[0])?;
    let mut x1 = x1.add(&schedule[1])?;
    for group in 1..=5u32 {
        for &r in &ROTATIONS[(group as usize - 1) % 2] {
            x0 = x0.add(&x1)?;
            let rotated = x1.left_shift(r)?.bitwise_or(&x1.right_shift(32 - r)?)?;
            x1 = rotated.bitwise_xor(&x0)?;
        }
        let g = group as usize;
        x0 = x0.add(&schedule[g % 3])?;
        x1 = x1.add(&schedule[(g + 1) % 3])?.add(group)?;
    }
    Ok((x0, x1))
}
