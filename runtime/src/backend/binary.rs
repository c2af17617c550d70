//! The reference backend: one thread, plain loops, every element addressed through its
//! coordinates. Slow on purpose-free grounds: it is the yardstick the other backends are checked
//! against, so it favours being obviously right over being fast.

use super::{route, Kernels};
use crate::allocate::{try_alloc, try_reserve};
use crate::buffer::with_buffer;
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::Result;
use crate::host_vec::HostVec;
use crate::ir::fused::Fused;
use crate::ir::{indexed, sorting};
use crate::ir::{ArgOp, BinaryOp, ConvDims, MatmulDims, ReduceOp, ScatterMode, Strided, UnaryOp};
use crate::shape::{numel, strides, unravel, without_axes};

/// The pure-Rust reference backend (`binary`).
pub struct BinaryBackend;

fn offset(coords: &[usize], view: &Strided) -> usize {
    view.offset_at(coords)
}

/// Builds a vector element by element from a function of the linear index.
fn build<T: Element>(
    n: usize,
    shape: &[usize],
    mut f: impl FnMut(usize) -> T,
) -> Result<HostVec<T>> {
    let mut out = try_alloc(n, T::ZERO, shape)?;
    for (i, o) in out.iter_mut().enumerate() {
        // The reference backend can take seconds on one op; let an interrupt stop it midway.
        if i % 4096 == 0 {
            crate::interrupt::check()?;
        }
        *o = f(i);
    }
    Ok(out)
}

fn zip<T: Element, U: Element>(
    a: &[T],
    va: &Strided,
    b: &[T],
    vb: &Strided,
    shape: &[usize],
    f: impl Fn(T, T) -> U,
) -> Result<Buffer> {
    let mut c = vec![0; shape.len()];
    let out = build(numel(shape), shape, |i| {
        unravel(i, shape, &mut c);
        f(a[offset(&c, va)], b[offset(&c, vb)])
    })?;
    Ok(U::into_buffer(out))
}

fn select<T: Element>(
    (t, vt): (&[T], &Strided),
    (f, vf): (&[T], &Strided),
    (p, vp): (&[u8], &Strided),
    shape: &[usize],
) -> Result<Buffer> {
    let mut c = vec![0; shape.len()];
    let out = build(numel(shape), shape, |i| {
        unravel(i, shape, &mut c);
        if p[offset(&c, vp)] != 0 {
            t[offset(&c, vt)]
        } else {
            f[offset(&c, vf)]
        }
    })?;
    Ok(T::into_buffer(out))
}

fn cast_to<T: Element, U: Element>(v: &[T]) -> Result<Buffer> {
    let out = build(v.len(), &[v.len()], |i| {
        crate::element::convert::<T, U>(v[i])
    })?;
    Ok(U::into_buffer(out))
}

/// Combines `xs` pairwise (halves, recursively, down to runs of 8): the rounding error of an
/// f32 sum grows with the logarithm of the count instead of the count, so the reference is not
/// the least accurate backend (10M-element sums: 1.6e-5 relative error sequentially).
fn pairwise<T: Element>(op: ReduceOp, xs: &[T]) -> T {
    if xs.len() <= 8 {
        return xs.iter().fold(op.identity(), |acc, &x| op.combine(acc, x));
    }
    let (left, right) = xs.split_at(xs.len() / 2);
    op.combine(pairwise(op, left), pairwise(op, right))
}

fn reduce_typed<T: Element>(
    op: ReduceOp,
    v: &[T],
    shape: &[usize],
    axes: &[usize],
) -> Result<Buffer> {
    let out_shape = without_axes(shape, axes);
    let in_strides = strides(shape);
    let kept = crate::shape::kept_axes(shape.len(), axes);
    let reduced: Vec<usize> = axes.iter().map(|&a| shape[a]).collect();
    let count = numel(&reduced);
    // An empty result needs no scratch, however long the reduced axes would be.
    let mut run = try_reserve::<T>(if out_shape.contains(&0) { 0 } else { count }, &reduced)?;
    let (mut oc, mut rc) = (vec![0; out_shape.len()], vec![0; reduced.len()]);
    let out = build(numel(&out_shape), &out_shape, |o| {
        unravel(o, &out_shape, &mut oc);
        let base: usize = kept.iter().zip(&oc).map(|(&a, &c)| c * in_strides[a]).sum();
        run.clear();
        for j in 0..count {
            unravel(j, &reduced, &mut rc);
            let at: usize = axes.iter().zip(&rc).map(|(&a, &c)| c * in_strides[a]).sum();
            run.push(v[base + at]);
        }
        pairwise(op, &run)
    })?;
    Ok(T::into_buffer(out))
}

fn arg_typed<T: Element>(op: ArgOp, v: &[T], shape: &[usize], axis: usize) -> Result<Buffer> {
    let out_shape = without_axes(shape, &[axis]);
    let in_strides = strides(shape);
    let mut c = vec![0; out_shape.len()];
    let out = build(numel(&out_shape), &out_shape, |o| {
        unravel(o, &out_shape, &mut c);
        let mut full: Vec<usize> = c.clone();
        full.insert(axis, 0);
        let base: usize = full.iter().zip(&in_strides).map(|(a, s)| a * s).sum();
        let mut best = 0usize;
        for j in 1..shape[axis] {
            if op.better(
                v[base + j * in_strides[axis]],
                v[base + best * in_strides[axis]],
            ) {
                best = j;
            }
        }
        best as i64
    })?;
    Ok(Buffer::S64(out))
}

/// Each output entry as the definition reads: the sum over its group's channels and the
/// kernel's taps of input times kernel, taps that read padding left out.
fn conv_typed<T: Element>(x: &[T], w: &[T], d: &ConvDims) -> Result<Buffer> {
    let shape = d.out_shape();
    let (spatial, taps) = (d.input.len(), numel(&d.kernel));
    let (in_size, out_size) = (numel(&d.input), numel(&d.output));
    let group_channels = d.group_channels();
    let mut products = try_reserve::<T>(group_channels.saturating_mul(taps), &[taps])?;
    let (mut y, mut k) = (vec![0; spatial], vec![0; spatial]);
    let out = build(numel(&shape), &shape, |idx| {
        let (n, o) = (
            idx / out_size / d.out_channels,
            idx / out_size % d.out_channels,
        );
        unravel(idx % out_size, &d.output, &mut y);
        let (first_channel, first_batch) = d.groups_of(o);
        let batch = first_batch + n;
        products.clear();
        for c in 0..group_channels {
            for tap in 0..taps {
                unravel(tap, &d.kernel, &mut k);
                let mut at = 0;
                let inside = (0..spatial).all(|a| match d.source(a, y[a], k[a]) {
                    Some(i) => {
                        at = at * d.input[a] + i;
                        true
                    }
                    None => false,
                });
                if inside {
                    let input = x[(batch * d.channels + first_channel + c) * in_size + at];
                    let weight = w[(o * group_channels + c) * taps + tap];
                    products.push(input.mul(weight));
                }
            }
        }
        pairwise(ReduceOp::Sum, &products)
    })?;
    Ok(T::into_buffer(out))
}

fn matmul_typed<T: Element>(a: &[T], b: &[T], d: MatmulDims) -> Result<Buffer> {
    products_typed(a, b, d, false)
}

/// Entry `[i, j]` of product `bi` is the pairwise sum over `p` of `a[i, p]·b[p, j]`, where the
/// left matrix is stored `[m, k]`, or `[k, m]` when `lhs_transposed`.
fn products_typed<T: Element>(
    a: &[T],
    b: &[T],
    d: MatmulDims,
    lhs_transposed: bool,
) -> Result<Buffer> {
    let MatmulDims {
        lhs_batch_stride: sa,
        rhs_batch_stride: sb,
        batch,
        m,
        k,
        n,
    } = d;
    let shape = [batch, m, n];
    let mut products = try_reserve::<T>(if numel(&shape) == 0 { 0 } else { k }, &[k])?;
    let out = build(numel(&shape), &shape, |idx| {
        let (bi, rest) = (idx / (m * n), idx % (m * n));
        let (i, j) = (rest / n, rest % n);
        products.clear();
        let lhs = |p: usize| {
            if lhs_transposed {
                a[bi * sa + p * m + i]
            } else {
                a[bi * sa + i * k + p]
            }
        };
        products.extend((0..k).map(|p| lhs(p).mul(b[bi * sb + p * n + j])));
        pairwise(ReduceOp::Sum, &products)
    })?;
    Ok(T::into_buffer(out))
}

super::host_buffer_backend!(BinaryBackend);

/// The op set on host buffers, one method per [`Op`](crate::ir::Op) variant.
impl Kernels for BinaryBackend {
    type Buffer = Buffer;

    /// A fused region, one materialised step at a time: the reference for every fusion.
    fn fused(&self, f: &Fused, given: &[&Buffer]) -> Result<Buffer> {
        crate::ir::stepwise::run_stepwise(f, given, |op, ins| route(self, op, ins))
    }

    fn binary(
        &self,
        op: BinaryOp,
        lhs: (&Buffer, &Strided),
        rhs: (&Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Buffer> {
        same_dtype!(op.name(), lhs.0, rhs.0, |a, b| {
            with_binary_op!(op, f =>
                arith zip(a, lhs.1, b, rhs.1, out_shape, f),
                cmp zip(a, lhs.1, b, rhs.1, out_shape, f))
        })
    }

    fn select(
        &self,
        on_true: (&Buffer, &Strided),
        on_false: (&Buffer, &Strided),
        pred: (&Buffer, &Strided),
        out_shape: &[usize],
    ) -> Result<Buffer> {
        let p = super::predicate(pred.0)?;
        same_dtype!("select", on_true.0, on_false.0, |t, f| select(
            (t, on_true.1),
            (f, on_false.1),
            (p, pred.1),
            out_shape
        ))
    }

    fn cumulative(
        &self,
        op: ReduceOp,
        x: &Buffer,
        shape: &[usize],
        axis: usize,
        reverse: bool,
    ) -> Result<Buffer> {
        let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
        with_buffer!(x, v => {
            let mut out = v.to_vec();
            for line in 0..numel(shape) / (len * inner).max(1) {
                for i in 0..inner {
                    let at = |k: usize| (line * len + k) * inner + i;
                    let order: Vec<usize> =
                        if reverse { (0..len).rev().collect() } else { (0..len).collect() };
                    let mut acc = op.identity();
                    for k in order {
                        acc = op.combine(acc, v[at(k)]);
                        out[at(k)] = acc;
                    }
                }
            }
            Ok(Element::into_buffer(out))
        })
    }

    fn sort(
        &self,
        x: &Buffer,
        shape: &[usize],
        axis: usize,
        descending: bool,
        indices: bool,
    ) -> Result<Buffer> {
        let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
        let lines = numel(shape) / (len * inner).max(1);
        with_buffer!(x, v => {
            let mut values = v.to_vec();
            let mut positions = vec![0i64; if indices { v.len() } else { 0 }];
            for line in 0..lines {
                for i in 0..inner {
                    let at = |k: usize| (line * len + k) * inner + i;
                    let order = sorting::stable_order(len, descending, |k| v[at(k)]);
                    for (k, &from) in order.iter().enumerate() {
                        if indices {
                            positions[at(k)] = from as i64;
                        } else {
                            values[at(k)] = v[at(from)];
                        }
                    }
                }
            }
            Ok(if indices { Buffer::S64(positions.into()) } else { Element::into_buffer(values) })
        })
    }

    fn gather(&self, x: &Buffer, positions: &Buffer) -> Result<Buffer> {
        let p = super::positions("gather", positions)?;
        with_buffer!(x, v => Ok(Element::into_buffer(
            p.iter().map(|&q| indexed::gathered(v, q)).collect::<Vec<_>>()
        )))
    }

    fn scatter(
        &self,
        mode: ScatterMode,
        target: &Buffer,
        positions: &Buffer,
        updates: &Buffer,
    ) -> Result<Buffer> {
        let p = super::positions("scatter", positions)?;
        same_dtype!("scatter", target, updates, |t, u| {
            let mut out = t.to_vec();
            for (&q, &update) in p.iter().zip(u.iter()) {
                if let Some(k) = indexed::slot(q, out.len()) {
                    out[k] = mode.combine(out[k], update);
                }
            }
            Ok(Element::into_buffer(out))
        })
    }

    fn unary(&self, op: UnaryOp, x: &Buffer) -> Result<Buffer> {
        let n = x.len();
        Ok(match x {
            Buffer::F32(v) => Buffer::F32(build(n, &[n], |i| op.apply_float(v[i]))?),
            Buffer::F64(v) => Buffer::F64(build(n, &[n], |i| op.apply_float(v[i]))?),
            Buffer::BF16(v) => Buffer::BF16(build(n, &[n], |i| op.apply_float(v[i]))?),
            Buffer::F16(v) => Buffer::F16(build(n, &[n], |i| op.apply_float(v[i]))?),
            Buffer::U8(v) => Buffer::U8(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::U16(v) => Buffer::U16(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::U32(v) => Buffer::U32(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::U64(v) => Buffer::U64(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::S8(v) => Buffer::S8(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::S16(v) => Buffer::S16(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::S32(v) => Buffer::S32(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::S64(v) => Buffer::S64(build(n, &[n], |i| op.apply(v[i]))?),
            Buffer::C64(v) => Buffer::C64(build(n, &[n], |i| op.apply_complex(v[i]))?),
            Buffer::C128(v) => Buffer::C128(build(n, &[n], |i| op.apply_complex(v[i]))?),
        })
    }

    fn cast(&self, x: &Buffer, to: DType) -> Result<Buffer> {
        with_buffer!(x, v => crate::buffer::with_dtype!(to, U => cast_to::<_, U>(v)))
    }

    fn reduce(&self, op: ReduceOp, x: &Buffer, shape: &[usize], axes: &[usize]) -> Result<Buffer> {
        with_buffer!(x, v => reduce_typed(op, v, shape, axes))
    }

    fn arg_reduce(&self, op: ArgOp, x: &Buffer, shape: &[usize], axis: usize) -> Result<Buffer> {
        with_buffer!(x, v => arg_typed(op, v, shape, axis))
    }

    fn matmul(&self, lhs: &Buffer, rhs: &Buffer, d: MatmulDims) -> Result<Buffer> {
        same_dtype!("dot", lhs, rhs, |a, b| matmul_typed(a, b, d))
    }

    /// The plain sums with the left matrices read transposed: the reference for every
    /// backend's way of doing it.
    fn transposed_matmul(&self, lhs: &Buffer, rhs: &Buffer, d: MatmulDims) -> Result<Buffer> {
        same_dtype!("dot", lhs, rhs, |a, b| products_typed(a, b, d, true))
    }

    fn linalg(&self, op: &crate::ir::LinAlg, inputs: &[&Buffer]) -> Result<Buffer> {
        super::linalg_reference::run_buffers(op, inputs)
    }

    /// The plain sum of each row, in f64 (`Fft::reference_row`): O(n²), the reference. A
    /// real-input transform is the complex one's first half.
    fn fft(&self, x: &Buffer, f: &crate::ir::Fft) -> Result<Buffer> {
        let wanted = x.dtype().is_complex() || (f.real_input && x.dtype().is_real_float());
        if !wanted || x.dtype().is_half() {
            return Err(crate::error::Error::InvalidArgument {
                op: "fft",
                message: format!("internal: a {} input reached the backend", x.dtype()),
            });
        }
        let (n, width) = (f.length, f.out_width());
        let mut rows: Vec<Vec<(f64, f64)>> = Vec::new();
        with_buffer!(x, v => {
            for row in v.chunks(n.max(1)).take(f.rows) {
                let mut done = vec![(0.0, 0.0); n];
                let parts: Vec<(f64, f64)> = row.iter().map(|z| z.to_parts()).collect();
                f.reference_row(&parts, &mut done);
                done.truncate(width);
                rows.push(done);
            }
        });
        crate::buffer::with_dtype!(x.dtype().to_complex(), U => {
            let mut out = try_reserve::<U>(f.rows.saturating_mul(width), &[f.rows, width])?;
            out.extend(rows.iter().flatten().map(|&(re, im)| U::from_parts(re, im)));
            Ok(U::into_buffer(out))
        })
    }

    fn conv(&self, input: &Buffer, kernel: &Buffer, dims: &ConvDims) -> Result<Buffer> {
        same_dtype!("conv", input, kernel, |x, w| conv_typed(x, w, dims))
    }

    fn copy_strided(&self, x: &Buffer, view: &Strided, out_shape: &[usize]) -> Result<Buffer> {
        with_buffer!(x, v => {
            let mut c = vec![0; out_shape.len()];
            let out = build(numel(out_shape), out_shape, |i| {
                unravel(i, out_shape, &mut c);
                v[offset(&c, view)]
            })?;
            Ok(Element::into_buffer(out))
        })
    }

    fn take(&self, x: &Buffer, shape: &[usize], indices: &[usize], axis: usize) -> Result<Buffer> {
        let mut out_shape = shape.to_vec();
        out_shape[axis] = indices.len();
        let src = Strided::contiguous(shape);
        with_buffer!(x, v => {
            let mut c = vec![0; out_shape.len()];
            let out = build(numel(&out_shape), &out_shape, |i| {
                unravel(i, &out_shape, &mut c);
                c[axis] = indices[c[axis]];
                v[offset(&c, &src)]
            })?;
            Ok(Element::into_buffer(out))
        })
    }

    fn concatenate(&self, parts: &[(&Buffer, &[usize])], axis: usize) -> Result<Buffer> {
        let mut out_shape = parts[0].1.to_vec();
        out_shape[axis] = parts.iter().map(|p| p.1[axis]).sum();
        let dtype = parts[0].0.dtype();
        crate::buffer::with_dtype!(dtype, T => {
            let typed: Vec<&[T]> = parts
                .iter()
                .map(|p| T::slice_of(p.0).ok_or_else(|| super::dtype_mix("concatenate", dtype, p.0.dtype())))
                .collect::<Result<_>>()?;
            let mut c = vec![0; out_shape.len()];
            let out = build(numel(&out_shape), &out_shape, |i| {
                unravel(i, &out_shape, &mut c);
                let mut part = 0;
                while c[axis] >= parts[part].1[axis] {
                    c[axis] -= parts[part].1[axis];
                    part += 1;
                }
                typed[part][offset(&c, &Strided::contiguous(parts[part].1))]
            })?;
            Ok(T::into_buffer(out))
        })
    }

    fn put_slice(
        &self,
        x: &Buffer,
        shape: &[usize],
        update: &Buffer,
        update_shape: &[usize],
        start: &[usize],
    ) -> Result<Buffer> {
        let mut out = x.try_clone()?;
        let dst_strides = strides(shape);
        same_dtype!("put_slice", &mut out, update, |o, u| {
            let mut c = vec![0; update_shape.len()];
            for (i, &val) in u.iter().enumerate() {
                unravel(i, update_shape, &mut c);
                let at: usize = c
                    .iter()
                    .zip(start)
                    .zip(&dst_strides)
                    .map(|((ci, s), st)| (ci + s) * st)
                    .sum();
                o[at] = val;
            }
        });
        Ok(out)
    }
}
