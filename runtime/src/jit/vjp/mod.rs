//! The derivative of every op of the op set, as a vector-Jacobian product: given the gradient
//! `g` of an op's result, the gradient of each of its inputs, written with the op set itself
//! (so the backward pass is recorded into the same trace, compiled and fused like the forward).
//!
//! Each rule works on the shapes the op saw (its static arguments), and returns contributions
//! with the element count of the input's node; `grad.rs` reshapes them to the node's shape and
//! sums contributions to one node. Ops whose gradient is zero (comparisons, argmax/argmin,
//! sign/floor/ceil/round, integer values), as in Nx, never reach here: `grad.rs` does not let a
//! gradient flow through them.

mod complex;
mod conv;
mod fft;
mod linalg;
mod site;

pub(crate) use site::{internal, Site};

use crate::allocate::{checked_len, try_alloc};
use crate::buffer::Buffer;
use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{BinaryOp, MatmulDims, Op, ReduceOp, ScatterMode, Strided, UnaryOp};
use crate::ops::sort::Direction;
use crate::shape::{numel, strides};
use crate::tensor::Tensor;

/// The gradient of each input of `op` (`None` where none is wanted), given the gradient `g`
/// of its result.
pub(crate) fn vjp(op: &Op, site: &Site<'_>, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    match op {
        Op::Binary {
            op,
            lhs,
            rhs,
            out_shape,
        } => binary(*op, [lhs, rhs], out_shape, site, g),
        Op::Select { views, out_shape } => select(views, out_shape, site, g),
        Op::Cumulative {
            op,
            shape,
            axis,
            reverse,
        } => Ok(vec![Some(cumulative(
            *op, shape, *axis, *reverse, site, g,
        )?)]),
        Op::Unary(op) => Ok(vec![Some(unary(*op, site, g)?)]),
        Op::Cast(_) => {
            let x = site.input(0)?;
            Ok(vec![Some(g.as_type(x.dtype())?)])
        }
        Op::Reduce { op, shape, axes } => Ok(vec![Some(reduce(*op, shape, axes, site, g)?)]),
        Op::Matmul(dims) => matmul(dims, site, g),
        Op::TransposedMatmul(dims) => transposed_matmul(dims, site, g),
        Op::Conv(dims) => conv::conv(dims, site, g),
        Op::CopyStrided { view, out_shape } => {
            let len = site.input(0)?.size();
            Ok(vec![Some(unview(view, out_shape, len, site, g)?)])
        }
        Op::Take {
            shape,
            indices,
            axis,
        } => Ok(vec![Some(take(shape, indices, *axis, site, g)?)]),
        Op::Concatenate { shapes, axis } => {
            let mut at = 0usize;
            let mut out = Vec::with_capacity(shapes.len());
            for (i, s) in shapes.iter().enumerate() {
                let mut start = vec![0; s.len()];
                if let Some(a) = start.get_mut(*axis) {
                    *a = at;
                }
                at = at.saturating_add(s.get(*axis).copied().unwrap_or(0));
                out.push(if site.wants(i) {
                    Some(g.slice(&start, s, None)?)
                } else {
                    None
                });
            }
            Ok(out)
        }
        Op::PutSlice {
            shape,
            update_shape,
            start,
        } => {
            let g = g.reshape(shape)?;
            let gx = if site.wants(0) {
                let hole = site.zeros(g.dtype(), update_shape)?;
                Some(g.put_slice(start, &hole)?)
            } else {
                None
            };
            let gu = if site.wants(1) {
                Some(g.slice(start, update_shape, None)?)
            } else {
                None
            };
            Ok(vec![gx, gu])
        }
        Op::Sort {
            shape,
            axis,
            descending,
            indices: false,
        } => Ok(vec![Some(sort(shape, *axis, *descending, site, g)?)]),
        Op::Gather { .. } => {
            // Each read entry's gradient lands where it was read from (0 for positions outside,
            // which read nothing).
            let (x, positions) = (site.input(0)?, site.input(1)?);
            let gx =
                site.zeros(g.dtype(), x.shape())?
                    .scatter_flat(ScatterMode::Add, positions, g)?;
            Ok(vec![Some(gx), None])
        }
        Op::Scatter(mode) => {
            let positions = site.input(1)?;
            let gt = if !site.wants(0) {
                None
            } else if *mode == ScatterMode::Add {
                Some(g.clone())
            } else {
                // A put overwrites: the target's entries there no longer reach the result.
                let hole = site.zeros(g.dtype(), positions.shape())?;
                Some(g.scatter_flat(ScatterMode::Put, positions, &hole)?)
            };
            let gu = if site.wants(2) {
                Some(g.gather_flat(positions)?)
            } else {
                None
            };
            Ok(vec![gt, None, gu])
        }
        Op::ArgReduce { .. } | Op::Sort { indices: true, .. } => Ok(vec![None]),
        Op::LinAlg(l) => linalg::linalg(l, site, g),
        Op::Fft(f) => fft::fft(f, site, g),
        Op::Fused(_) => Err(internal("a fused region in a trace being differentiated")),
    }
}

/// `out_shape` with the axes `view` broadcasts along (stride 0) of size 1: what the view reads
/// once they are summed.
fn unbroadcast_shape(view: &Strided, out_shape: &[usize]) -> Vec<usize> {
    out_shape
        .iter()
        .zip(&view.strides)
        .map(|(&d, &s)| if s == 0 { 1 } else { d })
        .collect()
}

/// The shape an operand of a broadcasting binary op had: axes it was broadcast along (stride
/// 0) have size 1. Binary ops read their operands with offset 0 and broadcast strides only.
fn operand_shape(view: &Strided, out_shape: &[usize], len: usize) -> Result<Vec<usize>> {
    let shape = unbroadcast_shape(view, out_shape);
    if view.offset != 0 || numel(&shape) != len {
        return Err(internal(format!(
            "a binary operand read as {view:?} over {out_shape:?} is not a broadcast"
        )));
    }
    Ok(shape)
}

/// Sums `g` (of `out_shape`) back to an operand that was broadcast to it.
fn unbroadcast(g: Tensor, operand: &[usize]) -> Result<Tensor> {
    let axes: Vec<isize> = g
        .shape()
        .iter()
        .zip(operand)
        .enumerate()
        .filter(|(_, (&o, &d))| d == 1 && o != 1)
        .map(|(i, _)| i as isize)
        .collect();
    if axes.is_empty() {
        Ok(g)
    } else {
        g.sum_keep(&axes)
    }
}

fn mask(condition: Tensor, dtype: DType) -> Result<Tensor> {
    condition.as_type(dtype)
}

fn binary(
    op: BinaryOp,
    views: [&Strided; 2],
    out_shape: &[usize],
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Vec<Option<Tensor>>> {
    let (x, y) = (site.input(0)?, site.input(1)?);
    let xs = operand_shape(views[0], out_shape, x.size())?;
    let ys = operand_shape(views[1], out_shape, y.size())?;
    let (x, y) = (x.reshape(&xs)?, y.reshape(&ys)?);
    let out = site.result.reshape(out_shape)?;
    let g = g.reshape(out_shape)?;
    let dt = g.dtype();
    let (gx, gy): (Option<Tensor>, Option<Tensor>) = match op {
        BinaryOp::Add => (Some(g.clone()), Some(g)),
        BinaryOp::Subtract => (Some(g.clone()), Some(g.negate()?)),
        BinaryOp::Multiply => (Some(g.multiply(&y)?), Some(g.multiply(&x)?)),
        BinaryOp::Divide => (
            Some(g.divide(&y)?),
            Some(g.multiply(&out)?.divide(&y)?.negate()?),
        ),
        BinaryOp::Pow => {
            let dx = if site.wants(0) {
                Some(g.multiply(&y)?.multiply(&x.pow(&y.subtract(1.0)?)?)?)
            } else {
                None
            };
            // log(x) where x != 0 and 0 where x == 0, as Nx: 0^y has no slope in y there.
            let dy = if site.wants(1) {
                let safe = x.add(&mask(x.equal(0.0)?, dt)?)?;
                Some(g.multiply(&out)?.multiply(&safe.log()?)?)
            } else {
                None
            };
            (dx, dy)
        }
        BinaryOp::Max | BinaryOp::Min => {
            // Nx's tie rule: where both operands equal the result, each gets half.
            let at_x = mask(x.equal(&out)?, dt)?;
            let at_y = mask(y.equal(&out)?, dt)?;
            (
                Some(g.multiply(&at_x)?.divide(&at_y.add(1.0)?)?),
                Some(g.multiply(&at_y)?.divide(&at_x.add(1.0)?)?),
            )
        }
        // x rem y = x - trunc(x / y)·y, so the slope in y is -trunc(x / y) = -(x - out) / y.
        // Nx's grad.ex writes floor, which is the slope only where x / y >= 0.
        BinaryOp::Remainder => (
            Some(g.clone()),
            Some(g.multiply(&x.subtract(&out)?.divide(&y)?.negate()?)?),
        ),
        BinaryOp::Atan2 => {
            let den = x.square()?.add(&y.square()?)?;
            (
                Some(g.multiply(&y.divide(&den)?)?),
                Some(g.multiply(&x.divide(&den)?.negate()?)?),
            )
        }
        BinaryOp::Quotient => {
            return Err(Error::InvalidArgument {
                op: "grad",
                message: "cannot compute the gradient of quotient (integer division has no \
                          slope; Nx raises too): use divide and floor for a float result"
                    .into(),
            })
        }
        _ => (None, None),
    };
    let finish = |want: bool, d: Option<Tensor>, shape: &[usize]| -> Result<Option<Tensor>> {
        match (want, d) {
            (true, Some(d)) => Ok(Some(unbroadcast(d, shape)?)),
            _ => Ok(None),
        }
    };
    Ok(vec![
        finish(site.wants(0), gx, &xs)?,
        finish(site.wants(1), gy, &ys)?,
    ])
}

/// Nx's rule: each choice gets the gradient where it was chosen; the predicate none.
fn select(
    views: &[Strided; 3],
    out_shape: &[usize],
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Vec<Option<Tensor>>> {
    let shape_of = |k: usize| -> Result<Vec<usize>> {
        operand_shape(&views[k], out_shape, site.input(k)?.size())
    };
    let pred = site.input(2)?.reshape(&shape_of(2)?)?;
    let g = g.reshape(out_shape)?;
    let side = |k: usize| -> Result<Option<Tensor>> {
        if !site.wants(k) {
            return Ok(None);
        }
        let chosen = if k == 0 {
            pred.select(&g, 0.0)?
        } else {
            pred.select(0.0, &g)?
        };
        Ok(Some(unbroadcast(chosen, &shape_of(k)?)?))
    };
    Ok(vec![side(0)?, side(1)?, None])
}

/// A running sum passes each output's gradient to every input it summed: the scan of `g` the
/// other way. A running product's slope in `x[i]` is `Σ_{j ≥ i} g[j] out[j] / x[i]`, exact
/// where no `x` is 0 (at a 0 it is not finite). Running max and min are not differentiated
/// yet: an error says so rather than a wrong gradient.
/// A sort moves entries: each sorted entry's gradient goes back to where it came from (the
/// positions a stable argsort gives, which agree with the sort up to ties, and tied entries
/// are equal, so either order gives the same gradient).
fn sort(
    shape: &[usize],
    axis: usize,
    descending: bool,
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Tensor> {
    let x = site.input(0)?.reshape(shape)?;
    let direction = if descending {
        Direction::Desc
    } else {
        Direction::Asc
    };
    let order = x.argsort_as(axis as isize, direction, DType::S64)?;
    let positions = x.along_axis_positions(&order, axis)?;
    site.zeros(g.dtype(), shape)?
        .scatter_flat(ScatterMode::Add, &positions, &g.reshape(shape)?)
}

fn cumulative(
    op: ReduceOp,
    shape: &[usize],
    axis: usize,
    reverse: bool,
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Tensor> {
    let g = g.reshape(shape)?;
    let a = axis as isize;
    match op {
        ReduceOp::Sum => g.cumulative_sum(a, !reverse),
        ReduceOp::Product => {
            let x = site.input(0)?.reshape(shape)?;
            let out = site.result.reshape(shape)?;
            g.multiply(&out)?.cumulative_sum(a, !reverse)?.divide(&x)
        }
        ReduceOp::Max | ReduceOp::Min => {
            // Each running extreme is an entry of x: its gradient goes there. The running
            // extreme changes only where an entry equals it (a NaN, once met, is the extreme),
            // so the last such entry up to each position (the first from the end, reversed)
            // holds it. Of equal entries the latest one takes the gradient; Nx's scan splits
            // it between ties, a choice of subgradient that agrees everywhere else.
            let x = site.input(0)?.reshape(shape)?;
            let out = site.result.reshape(shape)?;
            let here = x.equal(&out)?.logical_or(&x.is_nan()?)?;
            let iota = on(site.device).iota(DType::S64, shape, Some(a))?;
            let sources = if reverse {
                let past_the_end = shape.get(axis).copied().unwrap_or(0);
                here.select(&iota, past_the_end)?.cumulative_min(a, true)?
            } else {
                here.select(&iota, -1)?.cumulative_max(a, false)?
            };
            let positions = x.along_axis_positions(&sources, axis)?;
            site.zeros(g.dtype(), shape)?
                .scatter_flat(ScatterMode::Add, &positions, &g)
        }
    }
}

fn unary(op: UnaryOp, site: &Site<'_>, g: &Tensor) -> Result<Tensor> {
    let x = site.input(0)?;
    let out = site.result.reshape(x.shape())?;
    let g = g.reshape(x.shape())?;
    let dt = g.dtype();
    match op {
        UnaryOp::Negate => g.negate(),
        UnaryOp::Abs if x.dtype().is_complex() => complex::abs(site, &g),
        // Nx: the slope of |x| is 1 from 0 on.
        UnaryOp::Abs => g.multiply(
            &mask(x.greater_equal(0.0)?, dt)?
                .multiply(2.0)?
                .subtract(1.0)?,
        ),
        UnaryOp::Square => g.multiply(x)?.multiply(2.0),
        UnaryOp::Exp => g.multiply(&out),
        UnaryOp::Log => g.divide(x),
        UnaryOp::Sqrt => g.multiply(0.5)?.divide(&out),
        // d x^-1/2 = -1/2 x^-3/2 = -1/2 out^3
        UnaryOp::Rsqrt => g.multiply(&out.multiply(&out)?.multiply(&out)?.multiply(-0.5)?),
        UnaryOp::Tanh => g.multiply(&out.multiply(&out)?.negate()?.add(1.0)?),
        UnaryOp::Sigmoid => g.multiply(&out)?.multiply(&out.negate()?.add(1.0)?),
        UnaryOp::Sin => g.multiply(&x.cos()?),
        UnaryOp::Cos => g.multiply(&x.sin()?.negate()?),
        // Nx's grad.ex rules for the rest of the float math, each written with the op set.
        UnaryOp::Expm1 => g.multiply(&out.add(1.0)?),
        UnaryOp::Log1p => g.divide(&x.add(1.0)?),
        UnaryOp::Log2 => g.divide(&x.multiply(std::f64::consts::LN_2)?),
        UnaryOp::Log10 => g.divide(&x.multiply(std::f64::consts::LN_10)?),
        UnaryOp::Tan => g.multiply(&out.square()?.add(1.0)?),
        UnaryOp::Sinh => g.multiply(&x.cosh()?),
        UnaryOp::Cosh => g.multiply(&x.sinh()?),
        UnaryOp::Asin => g.multiply(&one_minus_square(x)?.rsqrt()?),
        UnaryOp::Acos => g.multiply(&one_minus_square(x)?.rsqrt()?)?.negate(),
        UnaryOp::Atan => g.divide(&x.square()?.add(1.0)?),
        UnaryOp::Asinh => g.multiply(&x.square()?.add(1.0)?.rsqrt()?),
        UnaryOp::Acosh => g.multiply(&x.square()?.subtract(1.0)?.rsqrt()?),
        UnaryOp::Atanh => g.divide(&one_minus_square(x)?),
        UnaryOp::Cbrt => g.divide(&out.square()?.multiply(3.0)?),
        UnaryOp::Erf => g.multiply(&erf_slope(x)?),
        UnaryOp::Erfc => g.multiply(&erf_slope(x)?)?.negate(),
        // d erf⁻¹(y) = √π/2 · e^(erf⁻¹(y)²)
        UnaryOp::ErfInv => g.multiply(
            &out.square()?
                .exp()?
                .multiply(std::f64::consts::PI.sqrt() / 2.0)?,
        ),
        UnaryOp::Conjugate => g.conjugate(),
        UnaryOp::Imag => complex::imag(site, &g),
        UnaryOp::Sign
        | UnaryOp::Floor
        | UnaryOp::Ceil
        | UnaryOp::Round
        | UnaryOp::BitwiseNot
        | UnaryOp::CountLeadingZeros
        | UnaryOp::PopulationCount => site.zeros(dt, x.shape()),
    }
}

/// `1 - x²`.
fn one_minus_square(x: &Tensor) -> Result<Tensor> {
    x.square()?.negate()?.add(1.0)
}

/// erf's slope, `2/√π · e^(-x²)`.
fn erf_slope(x: &Tensor) -> Result<Tensor> {
    x.square()?
        .negate()?
        .exp()?
        .multiply(std::f64::consts::FRAC_2_SQRT_PI)
}

fn reduce(
    op: ReduceOp,
    shape: &[usize],
    axes: &[usize],
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Tensor> {
    let kept: Vec<usize> = shape
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    let g = g.reshape(&kept)?;
    let x = site.input(0)?.reshape(shape)?;
    let out = site.result.reshape(&kept)?;
    match op {
        ReduceOp::Sum => g.broadcast(shape),
        // Nx's rule: the slope at each element is the product of the others. Without zeros
        // that is out / x; with one zero it is the product of the non-zeros at the zero and
        // 0 elsewhere; with two or more it is 0 everywhere. Written without a division by a
        // zero, so no NaN or infinity appears to be masked away.
        ReduceOp::Product => {
            let dt = g.dtype();
            let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            let zero = mask(x.equal(0.0)?, dt)?;
            // x with every zero replaced by 1: its product is that of the non-zeros.
            let nonzero = x.add(&zero)?;
            let others = nonzero.product_keep(&axes)?;
            let zeros = zero.sum_keep(&axes)?;
            let none = mask(zeros.equal(0.0)?, dt)?;
            let one = mask(zeros.equal(1.0)?, dt)?;
            let without_zeros = others.divide(&nonzero)?.multiply(&none)?;
            let at_the_zero = zero.multiply(&others)?.multiply(&one)?;
            g.multiply(&without_zeros.add(&at_the_zero)?)
        }
        ReduceOp::Max | ReduceOp::Min => {
            // Nx's tie rule: the gradient is shared equally by every element equal to the
            // extremum.
            let at = mask(x.equal(&out)?, g.dtype())?;
            let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            let count = at.sum_keep(&axes)?;
            g.multiply(&at)?.divide(&count)
        }
    }
}

fn matmul(dims: &MatmulDims, site: &Site<'_>, g: &Tensor) -> Result<Vec<Option<Tensor>>> {
    let MatmulDims {
        lhs_batch_stride,
        rhs_batch_stride,
        batch,
        m,
        k,
        n,
    } = *dims;
    let a = matrices(site.input(0)?, batch, lhs_batch_stride, m, k)?;
    let b = matrices(site.input(1)?, batch, rhs_batch_stride, k, n)?;
    let g = matrices(g, batch, 1, m, n)?;
    // A transpose is a copy, so g·Bᵀ transposes whichever side is smaller (g·Bᵀ = (B·gᵀ)ᵀ).
    let two_d = batch == 1;
    let da = if site.wants(0) {
        let product = if two_d && k.saturating_mul(n) > m.saturating_mul(n + k) {
            last_two(&b.matmul(&last_two(&g)?)?)?
        } else {
            g.matmul(&last_two(&b)?)?
        };
        Some(summed_if_served(product, lhs_batch_stride == 0)?)
    } else {
        None
    };
    let db = if site.wants(1) {
        // Aᵀ·g reads A transposed where it lies (a layer's inputs, the batch): a backend
        // without such a product copies the smaller side instead, as `(gᵀ·A)ᵀ` where A is
        // the larger.
        let product = if two_d {
            a.reshape(&[1, m, k])?
                .transposed_matmul(&g.reshape(&[1, m, n])?)?
                .reshape(&[k, n])?
        } else {
            last_two(&a)?.matmul(&g)?
        };
        Some(summed_if_served(product, rhs_batch_stride == 0)?)
    } else {
        None
    };
    Ok(vec![da, db])
}

/// `c = aᵀ·b` with `a` stored `[k,m]`: `da = b·gᵀ` (as `a` is stored) and `db = a·g`, neither
/// reading `a` transposed.
fn transposed_matmul(
    dims: &MatmulDims,
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Vec<Option<Tensor>>> {
    let MatmulDims {
        lhs_batch_stride,
        rhs_batch_stride,
        batch,
        m,
        k,
        n,
    } = *dims;
    let g = matrices(g, batch, 1, m, n)?;
    let da = if site.wants(0) {
        let b = matrices(site.input(1)?, batch, rhs_batch_stride, k, n)?;
        Some(summed_if_served(
            b.matmul(&last_two(&g)?)?,
            lhs_batch_stride == 0,
        )?)
    } else {
        None
    };
    let db = if site.wants(1) {
        let a = matrices(site.input(0)?, batch, lhs_batch_stride, k, m)?;
        Some(summed_if_served(a.matmul(&g)?, rhs_batch_stride == 0)?)
    } else {
        None
    };
    Ok(vec![da, db])
}

/// An operand of `batch` products as its matrices: `[rows, cols]` where there is one product
/// or one matrix served every product (`stride` 0), `[batch, rows, cols]` otherwise.
fn matrices(t: &Tensor, batch: usize, stride: usize, rows: usize, cols: usize) -> Result<Tensor> {
    if stride == 0 || batch == 1 {
        t.reshape(&[rows, cols])
    } else {
        t.reshape(&[batch, rows, cols])
    }
}

/// A product's gradient summed over the batch where one matrix served every entry of it.
fn summed_if_served(d: Tensor, served: bool) -> Result<Tensor> {
    if served && d.rank() == 3 {
        d.sum([0])
    } else {
        Ok(d)
    }
}

/// `t` with its last two axes swapped.
fn last_two(t: &Tensor) -> Result<Tensor> {
    let r = t.rank();
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    t.transpose(&perm)
}

/// The gradient through a strided view (transpose, broadcast, slice) of an input of `len`
/// elements: broadcast axes summed, then the view undone, as a transpose when the view is a
/// permutation of the whole input, otherwise by placing each element where it was read from
/// (a `take` from the gradient and one zero).
fn unview(
    view: &Strided,
    out_shape: &[usize],
    len: usize,
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Tensor> {
    let g = g.reshape(out_shape)?;
    let g = unbroadcast(g, &unbroadcast_shape(view, out_shape))?;
    // The axes that move: size above 1 (a summed broadcast axis now has size 1).
    let axes: Vec<(usize, usize)> = g
        .shape()
        .iter()
        .zip(&view.strides)
        .filter(|(&d, _)| d > 1)
        .map(|(&d, &s)| (d, s))
        .collect();
    let dims: Vec<usize> = axes.iter().map(|&(d, _)| d).collect();
    let g = g.reshape(&dims)?;
    let mut order: Vec<usize> = (0..axes.len()).collect();
    order.sort_by(|&i, &j| axes[j].1.cmp(&axes[i].1));
    let sorted_dims: Vec<usize> = order.iter().map(|&i| axes[i].0).collect();
    let sorted_strides: Vec<usize> = order.iter().map(|&i| axes[i].1).collect();
    if view.offset == 0 && numel(&dims) == len && strides(&sorted_dims) == sorted_strides {
        let identity = order.iter().enumerate().all(|(i, &o)| i == o);
        return if identity { Ok(g) } else { g.transpose(&order) };
    }
    // Where each element of the view was read from; a view the frontend builds never reads
    // one element twice once broadcast axes are summed.
    let count = numel(&dims);
    let axis_strides: Vec<usize> = axes.iter().map(|&(_, s)| s).collect();
    let mut source = try_alloc(len, count as i64, &[len])?;
    let mut coords = vec![0usize; dims.len()];
    for i in 0..count {
        crate::shape::unravel(i, &dims, &mut coords);
        let at = coords
            .iter()
            .zip(&axis_strides)
            .fold(view.offset, |acc, (&c, &s)| {
                acc.saturating_add(c.saturating_mul(s))
            });
        match source.get_mut(at) {
            Some(slot) if *slot == count as i64 => *slot = i as i64,
            _ => {
                return Err(internal(format!(
                    "the view {view:?} of {len} elements reads element {at} twice or past the end"
                )))
            }
        }
    }
    let flat = g.reshape(&[count])?;
    let padded = Tensor::concatenate(&[flat, site.zeros(g.dtype(), &[1])?], 0)?;
    let indices = Tensor::from_host(Buffer::S64(source), vec![len], Device::BINARY)?;
    padded.take(&indices, 0)
}

/// The gradient through `take`: each gathered entry goes back to where it came from; entries
/// taken twice add up (a product with a one-hot matrix), entries taken once are a `take` of the
/// gradient and a zero slab.
fn take(
    shape: &[usize],
    indices: &[usize],
    axis: usize,
    site: &Site<'_>,
    g: &Tensor,
) -> Result<Tensor> {
    let dim = shape.get(axis).copied().unwrap_or(0);
    let pre = numel(&shape[..axis]);
    let post = numel(&shape[axis + 1..]);
    let taken = indices.len();
    let g = g.reshape(&[pre, taken, post])?;
    let mut first = vec![None; dim];
    let mut distinct = true;
    for (i, &j) in indices.iter().enumerate() {
        match first.get_mut(j) {
            Some(slot @ None) => *slot = Some(i),
            Some(Some(_)) => distinct = false,
            None => return Err(internal(format!("take index {j} out of {dim}"))),
        }
    }
    let back = if distinct {
        let zero = site.zeros(g.dtype(), &[pre, 1, post])?;
        let padded = Tensor::concatenate(&[g, zero], 1)?;
        let source: Vec<i64> = first
            .iter()
            .map(|f| f.map_or(taken as i64, |i| i as i64))
            .collect();
        let source = on(Device::BINARY).from_vec(source, &[dim])?;
        padded.take(&source, 1)?
    } else {
        // Checked like any tensor the user asks for: many repeated indices of a long axis make
        // a matrix too large to hold, which is an error, not an abort.
        let shape = [dim, taken];
        let mut one_hot = try_alloc(checked_len(&shape, DType::F64)?, 0.0f64, &shape)?;
        for (i, &j) in indices.iter().enumerate() {
            if let Some(v) = one_hot.get_mut(j.saturating_mul(taken).saturating_add(i)) {
                *v = 1.0;
            }
        }
        let one_hot = Tensor::from_host(Buffer::F64(one_hot), shape.to_vec(), site.device)?
            .as_type(g.dtype())?;
        one_hot.matmul(&g)?
    };
    back.reshape(shape)
}
