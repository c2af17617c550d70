//! Vectorization, as JAX's `vmap` and Nx's `vectorize`: a function written for one example
//! becomes one of a batch. The function is traced once on placeholders of one example's shape;
//! then every recorded op is replayed over the batch by its batching rule (the same op with a
//! leading batch axis: views gain a stride, axes shift by one, products fold the batch into
//! their rows or their own batch, convolutions into theirs, gathers and scatters offset their
//! flat positions per example), so the batch runs as whole-batch ops and no Rust loop runs per
//! example. Values that do not depend on a batched argument stay unbatched (computed once).
//!
//! A `vmap` is a [`Jit`]: compiled and cached, `.eager()` runs it op by op, and it composes with
//! `grad` both ways (`vmap(grad(f))` gives per-example gradients).
//!
//! ```
//! use tensorbook::{on, vmap, Device, Tensor};
//! // One example's squared norm, over a batch of three.
//! let norms = vmap(|x: &Tensor| x.multiply(x)?.sum(..));
//! let xs = on(Device::host(0)).from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 0.0, 1.0], &[3, 2])?;
//! assert_eq!(norms.call(&xs)?.to_vec::<f32>()?, vec![5.0, 25.0, 1.0]);
//! # Ok::<(), tensorbook::Error>(())
//! ```

use std::sync::Arc;

use super::control::trace_body;
use super::graph::{inputs_of, Node, NodeKind};
use super::trace::{self, placeholder_of, record_node};
use super::{Jit, JitFn, JitOutput, Template, Traced};
use crate::create::on;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::{ConvDims, MatmulDims, Op, Strided};
use crate::shape::numel;
use crate::tensor::Tensor;

/// `f` over a batch along axis 0 of every argument (JAX's `vmap(f)`): the results gain a
/// leading axis of the batch's size.
pub fn vmap<A, O: JitOutput>(f: impl JitFn<A, O>) -> Jit<O> {
    build(f, None)
}

/// [`vmap`] with each argument's batch axis given (`None`: the argument is shared by every
/// example), as JAX's `in_axes`.
pub fn vmap_axes<A, O: JitOutput>(f: impl JitFn<A, O>, in_axes: &[Option<usize>]) -> Jit<O> {
    build(f, Some(in_axes.to_vec()))
}

fn build<A, O: JitOutput>(f: impl JitFn<A, O>, in_axes: Option<Vec<Option<usize>>>) -> Jit<O> {
    let arity = f.arity();
    let function: Traced<O> = Box::new(move |args: &[Tensor]| {
        let axes = match &in_axes {
            Some(a) if a.len() != args.len() => {
                return Err(invalid(format!(
                    "{} batch axes given for {} arguments",
                    a.len(),
                    args.len()
                )))
            }
            Some(a) => a.clone(),
            None => vec![Some(0); args.len()],
        };
        let results = batched_call(&|a: &[Tensor]| Ok(f.apply(a)?.into_tensors()), args, &axes)?;
        O::from_tensors(results)
    });
    Jit::traced("vmap", arity, function)
}

/// A value while the trace is replayed over the batch.
#[derive(Clone)]
enum Val {
    /// The same for every example (of one example's shape).
    Shared(Tensor),
    /// One per example, stacked along a new axis 0.
    Batched(Tensor),
    /// A loop's or branch's tuple, one node per example (control nodes are unrolled).
    Tuples(Vec<Tensor>),
}

fn batched_call(
    f: &dyn Fn(&[Tensor]) -> Result<Vec<Tensor>>,
    args: &[Tensor],
    axes: &[Option<usize>],
) -> Result<Vec<Tensor>> {
    let mut size = None;
    let mut moved = Vec::with_capacity(args.len());
    for (i, (t, axis)) in args.iter().zip(axes).enumerate() {
        let Some(axis) = *axis else {
            moved.push(Val::Shared(t.clone()));
            continue;
        };
        if axis >= t.rank() {
            return Err(invalid(format!(
                "argument {i} is {}, which has no axis {axis} to batch over",
                t.signature()
            )));
        }
        let n = t.shape()[axis];
        match size {
            Some(s) if s != n => {
                return Err(invalid(format!(
                    "the batch axes differ in size: {s} and {n} (argument {i}, {})",
                    t.signature()
                )))
            }
            _ => size = Some(n),
        }
        let t = if axis == 0 {
            t.clone()
        } else {
            let mut perm: Vec<usize> = (0..t.rank()).filter(|&a| a != axis).collect();
            perm.insert(0, axis);
            t.transpose(&perm)?
        };
        moved.push(Val::Batched(t));
    }
    let size = size.ok_or_else(|| invalid("no argument is batched".into()))?;
    let parent =
        trace::current().ok_or_else(|| invalid("internal: vmap outside its trace".into()))?;
    // One example's templates: the batched arguments without their batch axis.
    let templates = moved
        .iter()
        .map(|v| {
            let t = t_of(v)?;
            Ok(match v {
                Val::Batched(_) => Template {
                    dtype: t.dtype(),
                    shape: t.shape().get(1..).unwrap_or(&[]).to_vec(),
                    device: t.device(),
                    names: Vec::new(),
                },
                _ => Template::of(t),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let body = trace_body(&parent, &templates, |params| f(params))?;
    let mut values: Vec<Option<Val>> = vec![None; body.nodes.len()];
    let captured = |k: usize| -> Result<Val> {
        let outer = *body
            .captures
            .get(k)
            .ok_or_else(|| internal("a capture missing"))?;
        let node = parent
            .node(outer)
            .ok_or_else(|| internal("a captured node missing"))?;
        Ok(Val::Shared(placeholder_of(&parent, outer, &node)?))
    };
    for (i, node) in body.nodes.iter().enumerate() {
        let inputs = inputs_of(&values, node).ok_or_else(|| internal("an input replayed late"))?;
        let value = match &node.kind {
            NodeKind::Param(p) if *p < moved.len() => moved[*p].clone(),
            NodeKind::Param(p) => captured(*p - moved.len())?,
            NodeKind::Constant(memory) => Val::Shared(Tensor::from_shared(
                Arc::clone(memory),
                node.shape.clone(),
                node.device,
            )?),
            NodeKind::Transfer => match inputs.first() {
                Some(Val::Batched(t)) => Val::Batched(t.backend_copy(node.device)?),
                Some(Val::Shared(t)) => Val::Shared(t.backend_copy(node.device)?),
                _ => return Err(internal("a transfer of no value")),
            },
            NodeKind::Op(op) => batch_op(op, node, &body.nodes, &inputs, size)?,
            NodeKind::Control(_) => batch_control(node, &inputs, size)?,
            NodeKind::Project(k) => match inputs.first() {
                Some(Val::Tuples(nodes)) => {
                    let per_example = nodes
                        .iter()
                        .map(|c| {
                            record_node(
                                NodeKind::Project(*k),
                                std::slice::from_ref(c),
                                node.dtype,
                                node.shape.clone(),
                                node.device,
                            )
                        })
                        .collect::<Result<Vec<_>>>()?;
                    Val::Batched(Tensor::stack(&per_example, 0)?)
                }
                Some(Val::Shared(c)) => Val::Shared(record_node(
                    NodeKind::Project(*k),
                    std::slice::from_ref(c),
                    node.dtype,
                    node.shape.clone(),
                    node.device,
                )?),
                _ => return Err(internal("a projection of no tuple")),
            },
        };
        values[i] = Some(value);
    }
    body.outputs
        .iter()
        .map(|o| {
            let v = values
                .get(o.slot)
                .cloned()
                .flatten()
                .ok_or_else(|| internal("a result missing"))?;
            // A result's shape may be its node's reshaped (a reshape records no op).
            full(&v, size)?.reshape(&with_batch(size, &o.shape))
        })
        .collect()
}

fn t_of(v: &Val) -> Result<&Tensor> {
    match v {
        Val::Shared(t) | Val::Batched(t) => Ok(t),
        Val::Tuples(_) => Err(internal("a tuple used as a value")),
    }
}

/// The value with its batch axis: a shared one broadcast over the batch.
fn full(v: &Val, size: usize) -> Result<Tensor> {
    match v {
        Val::Batched(t) => Ok(t.clone()),
        Val::Shared(t) => {
            let mut shape = vec![size];
            shape.extend_from_slice(t.shape());
            t.broadcast(&shape)
        }
        Val::Tuples(_) => Err(internal("a tuple used as a value")),
    }
}

fn with_batch(size: usize, shape: &[usize]) -> Vec<usize> {
    let mut s = Vec::with_capacity(shape.len() + 1);
    s.push(size);
    s.extend_from_slice(shape);
    s
}

/// `view` reading one example's input, extended to read the batch: a batched input's examples
/// lie `len` apart, a shared input is read again for each.
fn widen(view: &Strided, input: &Val, len: usize) -> Strided {
    let step = if matches!(input, Val::Batched(_)) {
        len
    } else {
        0
    };
    let mut strides = Vec::with_capacity(view.strides.len() + 1);
    strides.push(step);
    strides.extend_from_slice(&view.strides);
    Strided {
        offset: view.offset,
        strides,
    }
}

fn batch_op(op: &Op, node: &Node, nodes: &[Node], inputs: &[Val], size: usize) -> Result<Val> {
    let tensors = inputs.iter().map(t_of).collect::<Result<Vec<_>>>()?;
    let shared = inputs.iter().all(|v| matches!(v, Val::Shared(_)));
    if shared {
        return Ok(Val::Shared(crate::ops::run(
            node.device,
            op.clone(),
            &tensors,
            node.shape.clone(),
        )?));
    }
    let in_len = |k: usize| -> usize {
        node.inputs
            .get(k)
            .and_then(|&j| nodes.get(j))
            .map_or(0, |n| numel(&n.shape))
    };
    let out_shape = with_batch(size, &node.shape);
    let run = |op: Op, operands: &[&Tensor]| -> Result<Val> {
        Ok(Val::Batched(crate::ops::run(
            node.device,
            op,
            operands,
            out_shape.clone(),
        )?))
    };
    let all_full = || -> Result<Vec<Tensor>> { inputs.iter().map(|v| full(v, size)).collect() };
    match op {
        Op::Unary(_) | Op::Cast(_) => run(op.clone(), &tensors),
        Op::Binary {
            op: b,
            lhs,
            rhs,
            out_shape: s,
        } => run(
            Op::Binary {
                op: *b,
                lhs: widen(lhs, &inputs[0], in_len(0)),
                rhs: widen(rhs, &inputs[1], in_len(1)),
                out_shape: with_batch(size, s),
            },
            &tensors,
        ),
        Op::Select {
            views,
            out_shape: s,
        } => run(
            Op::Select {
                views: [
                    widen(&views[0], &inputs[0], in_len(0)),
                    widen(&views[1], &inputs[1], in_len(1)),
                    widen(&views[2], &inputs[2], in_len(2)),
                ],
                out_shape: with_batch(size, s),
            },
            &tensors,
        ),
        Op::CopyStrided { view, out_shape: s } => run(
            Op::CopyStrided {
                view: widen(view, &inputs[0], in_len(0)),
                out_shape: with_batch(size, s),
            },
            &tensors,
        ),
        Op::Reduce { op, shape, axes } => run(
            Op::Reduce {
                op: *op,
                shape: with_batch(size, shape),
                axes: axes.iter().map(|a| a + 1).collect(),
            },
            &tensors,
        ),
        Op::ArgReduce { op, shape, axis } => run(
            Op::ArgReduce {
                op: *op,
                shape: with_batch(size, shape),
                axis: axis + 1,
            },
            &tensors,
        ),
        Op::Cumulative {
            op,
            shape,
            axis,
            reverse,
        } => run(
            Op::Cumulative {
                op: *op,
                shape: with_batch(size, shape),
                axis: axis + 1,
                reverse: *reverse,
            },
            &tensors,
        ),
        Op::Sort {
            shape,
            axis,
            descending,
            indices,
        } => run(
            Op::Sort {
                shape: with_batch(size, shape),
                axis: axis + 1,
                descending: *descending,
                indices: *indices,
            },
            &tensors,
        ),
        Op::Take {
            shape,
            indices,
            axis,
        } => run(
            Op::Take {
                shape: with_batch(size, shape),
                indices: indices.clone(),
                axis: axis + 1,
            },
            &tensors,
        ),
        Op::Concatenate { shapes, axis } => {
            let all = all_full()?;
            let refs: Vec<&Tensor> = all.iter().collect();
            run(
                Op::Concatenate {
                    shapes: shapes.iter().map(|s| with_batch(size, s)).collect(),
                    axis: axis + 1,
                },
                &refs,
            )
        }
        Op::PutSlice {
            shape,
            update_shape,
            start,
        } => {
            let all = all_full()?;
            let refs: Vec<&Tensor> = all.iter().collect();
            run(
                Op::PutSlice {
                    shape: with_batch(size, shape),
                    update_shape: with_batch(size, update_shape),
                    start: with_batch(0, start),
                },
                &refs,
            )
        }
        Op::Matmul(dims) => batch_matmul(dims, false, inputs, size, &run),
        Op::TransposedMatmul(dims) => batch_matmul(dims, true, inputs, size, &run),
        Op::Conv(dims) => batch_conv(dims, node, inputs, size),
        Op::Gather { count } => {
            let data = &inputs[0];
            let positions = match data {
                Val::Batched(_) => offset_positions(&inputs[1], in_len(0), size)?,
                _ => full(&inputs[1], size)?,
            };
            run(
                Op::Gather {
                    count: count.saturating_mul(size),
                },
                &[t_of(data)?, &positions],
            )
        }
        Op::Scatter(mode) => {
            let target = full(&inputs[0], size)?;
            let positions = offset_positions(&inputs[1], in_len(0), size)?;
            let updates = full(&inputs[2], size)?;
            run(Op::Scatter(*mode), &[&target, &positions, &updates])
        }
        Op::LinAlg(l) => {
            // Matrix-major results: the batch of examples folds into the op's own batch.
            let all = all_full()?;
            let refs: Vec<&Tensor> = all.iter().collect();
            run(
                Op::LinAlg(l.with_batch(l.batch().saturating_mul(size))),
                &refs,
            )
        }
        Op::Fft(f) => {
            // Row-major rows: the batch of examples stacks more rows.
            let x = full(&inputs[0], size)?;
            run(
                Op::Fft(crate::ir::Fft {
                    rows: f.rows.saturating_mul(size),
                    ..*f
                }),
                &[&x],
            )
        }
        Op::Fused(_) => Err(internal("a fused region in a trace")),
    }
}

/// One example's flat positions into a tensor of `len` entries, as positions into the batch's
/// stacked tensor: example `b`'s move by `b * len`; a position outside its example's tensor
/// becomes -1, outside the batch's too (so it still reads 0 or is skipped, never a neighbour).
fn offset_positions(positions: &Val, len: usize, size: usize) -> Result<Tensor> {
    let p = full(positions, size)?;
    let device = p.device();
    let rank = p.rank();
    let mut shape = vec![1; rank];
    if let Some(first) = shape.first_mut() {
        *first = size;
    }
    let len = i64::try_from(len).map_err(|_| internal("a tensor too long to index"))?;
    let base = on(device)
        .iota(DType::S64, &shape, Some(0))?
        .multiply(len)?;
    let inside = p.greater_equal(0)?.logical_and(&p.less(len)?)?;
    inside.select(&p.add(&base)?, -1)
}

/// `Op::Matmul` or, `transposed`, `Op::TransposedMatmul` (left matrices `[k,m]`) over the
/// examples.
fn batch_matmul(
    dims: &MatmulDims,
    transposed: bool,
    inputs: &[Val],
    size: usize,
    run: &dyn Fn(Op, &[&Tensor]) -> Result<Val>,
) -> Result<Val> {
    let (lhs, rhs) = (&inputs[0], &inputs[1]);
    let product = |d: MatmulDims| {
        if transposed {
            Op::TransposedMatmul(d)
        } else {
            Op::Matmul(d)
        }
    };
    // The common case, x · W with x batched: the batch's rows are one taller product.
    if let (Val::Batched(l), Val::Shared(r), 1, false) = (lhs, rhs, dims.batch, transposed) {
        return run(
            Op::Matmul(MatmulDims {
                m: dims.m.saturating_mul(size),
                ..*dims
            }),
            &[l, r],
        );
    }
    // Otherwise the batch joins the product's own batch: each operand laid out as the batch's
    // matrices one after the other (a shared operand, or one broadcast inside an example,
    // copied per example first).
    let spread = |v: &Val, stride: usize, rows: usize, cols: usize| -> Result<Tensor> {
        let matrix = rows.saturating_mul(cols);
        let t = t_of(v)?;
        let batched = matches!(v, Val::Batched(_));
        if batched && (dims.batch == 1 || stride == matrix) {
            return Ok(t.clone());
        }
        let example_step = if batched {
            numel(t.shape().get(1..).unwrap_or(&[]))
        } else {
            0
        };
        let shape = vec![size, dims.batch, rows, cols];
        crate::ops::run(
            t.device(),
            Op::CopyStrided {
                view: Strided {
                    offset: 0,
                    strides: vec![example_step, stride, cols, 1],
                },
                out_shape: shape.clone(),
            },
            &[t],
            shape,
        )
    };
    let (lhs_rows, lhs_cols) = if transposed {
        (dims.k, dims.m)
    } else {
        (dims.m, dims.k)
    };
    let l = spread(lhs, dims.lhs_batch_stride, lhs_rows, lhs_cols)?;
    let r = spread(rhs, dims.rhs_batch_stride, dims.k, dims.n)?;
    run(
        product(MatmulDims {
            lhs_batch_stride: dims.m.saturating_mul(dims.k),
            rhs_batch_stride: dims.k.saturating_mul(dims.n),
            batch: dims.batch.saturating_mul(size),
            ..*dims
        }),
        &[&l, &r],
    )
}

fn batch_conv(dims: &ConvDims, node: &Node, inputs: &[Val], size: usize) -> Result<Val> {
    if let (Val::Batched(x), Val::Shared(w), 1) = (&inputs[0], &inputs[1], dims.batch_groups) {
        // The examples' images are one larger batch of the convolution.
        let mut x_shape = vec![dims.batch.saturating_mul(size), dims.channels];
        x_shape.extend_from_slice(&dims.input);
        let x = x.reshape(&x_shape)?;
        let folded = ConvDims {
            batch: dims.batch.saturating_mul(size),
            ..dims.clone()
        };
        let out = crate::ops::run(
            node.device,
            Op::Conv(Box::new(folded.clone())),
            &[&x, w],
            folded.out_shape(),
        )?;
        return Ok(Val::Batched(out.reshape(&with_batch(size, &node.shape))?));
    }
    // Per-example kernels (or batch groups): one convolution per example, stacked.
    let per_example = (0..size)
        .map(|b| {
            let pick = |v: &Val| -> Result<Tensor> {
                match v {
                    Val::Batched(t) => t.slice_along_axis(b, 1, 0)?.squeeze(0),
                    other => Ok(t_of(other)?.clone()),
                }
            };
            let (x, w) = (pick(&inputs[0])?, pick(&inputs[1])?);
            crate::ops::run(
                node.device,
                Op::Conv(Box::new(dims.clone())),
                &[&x, &w],
                node.shape.clone(),
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Val::Batched(Tensor::stack(&per_example, 0)?))
}

/// A loop or branch over batched values: one per example (its trip count or branch may differ
/// between examples), recorded with the same bodies.
fn batch_control(node: &Node, inputs: &[Val], size: usize) -> Result<Val> {
    if inputs.iter().all(|v| matches!(v, Val::Shared(_))) {
        let shared = inputs
            .iter()
            .map(t_of)
            .map(|t| t.cloned())
            .collect::<Result<Vec<_>>>()?;
        return Ok(Val::Shared(record_node(
            node.kind.clone(),
            &shared,
            node.dtype,
            node.shape.clone(),
            node.device,
        )?));
    }
    let per_example = (0..size)
        .map(|b| {
            let picked = inputs
                .iter()
                .map(|v| match v {
                    Val::Batched(t) => t.slice_along_axis(b, 1, 0)?.squeeze(0),
                    other => Ok(t_of(other)?.clone()),
                })
                .collect::<Result<Vec<_>>>()?;
            record_node(
                node.kind.clone(),
                &picked,
                node.dtype,
                node.shape.clone(),
                node.device,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Val::Tuples(per_example))
}

fn invalid(message: String) -> Error {
    Error::InvalidArgument {
        op: "vmap",
        message,
    }
}

fn internal(what: &str) -> Error {
    invalid(format!("internal: {what}"))
}
