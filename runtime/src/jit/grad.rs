//! Gradients, as Nx's `grad` and `value_and_grad`: reverse mode over the traced graph.
//!
//! A gradient function is a [`Jit`]: the function is traced on placeholders, and then the
//! backward pass walks the recorded nodes from the result to the arguments, writing each op's
//! derivative (`vjp.rs`) with the op set itself. Those ops are recorded into the same trace, so
//! the forward and backward passes compile, fuse and cache together, and run where the
//! arguments are, like any `jit`.
//!
//! ```
//! use tensorbook::{value_and_grad, on, DType, Device, Tensor};
//! let f = value_and_grad(|x: &Tensor| x.multiply(x)?.sum(..));
//! let x = on(Device::host(0)).from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! let (value, grads) = f.call(&x)?;
//! assert_eq!(value.to_scalar::<f32>()?, 14.0);
//! assert_eq!(grads[0].to_vec::<f32>()?, vec![2.0, 4.0, 6.0]);
//! # Ok::<(), tensorbook::Error>(())
//! ```
//!
//! Every op has its derivative. Those whose gradient is zero in Nx are zero here too and stop
//! the gradient: comparisons, `argmax`/`argmin`, `sign`, `floor`, `ceil`, `round`, and any
//! integer value. [`Tensor::stop_grad`] stops it by hand; [`custom_grad`] replaces it.

use std::collections::HashMap;
use std::sync::Arc;

use super::control::cond;
use super::graph::{inputs_of, Body, Control, Graph, Node, NodeKind};
use super::trace::{node_ref, placeholder_of, record, record_node};
use super::vjp::{internal, vjp, Site};
use super::{Jit, JitFn, Traced};
use crate::create::on;
use crate::error::{Error, Result};
use crate::ir::{Op, Strided, UnaryOp};
use crate::tensor::Tensor;

/// The gradient function of `f` (a function of tensors returning a scalar): called like `f`,
/// it returns the gradient with respect to every argument, each of its argument's shape.
pub fn grad<A>(f: impl JitFn<A, Tensor>) -> Jit<Vec<Tensor>> {
    differentiate("grad", f, None, |_, grads| grads)
}

/// [`grad`] with respect to the arguments at positions `wrt` only (in that order), as JAX's
/// `argnums`: the others are data, and no gradient is computed for them.
pub fn grad_wrt<A>(f: impl JitFn<A, Tensor>, wrt: &[usize]) -> Jit<Vec<Tensor>> {
    differentiate("grad", f, Some(wrt.to_vec()), |_, grads| grads)
}

/// The value of `f` and its gradient with respect to every argument, from one trace (the
/// forward pass is shared).
pub fn value_and_grad<A>(f: impl JitFn<A, Tensor>) -> Jit<(Tensor, Vec<Tensor>)> {
    differentiate("value_and_grad", f, None, |value, grads| (value, grads))
}

/// [`value_and_grad`] with respect to the arguments at positions `wrt` only (in that order).
pub fn value_and_grad_wrt<A>(
    f: impl JitFn<A, Tensor>,
    wrt: &[usize],
) -> Jit<(Tensor, Vec<Tensor>)> {
    differentiate("value_and_grad", f, Some(wrt.to_vec()), |value, grads| {
        (value, grads)
    })
}

fn differentiate<A, O: super::JitOutput>(
    name: &'static str,
    f: impl JitFn<A, Tensor>,
    wrt: Option<Vec<usize>>,
    shape: fn(Tensor, Vec<Tensor>) -> O,
) -> Jit<O> {
    let arity = f.arity();
    let function: Traced<O> = Box::new(move |args: &[Tensor]| {
        let chosen: Vec<usize> = match &wrt {
            Some(w) => w.clone(),
            None => (0..args.len()).collect(),
        };
        if let Some(&bad) = chosen.iter().find(|&&i| i >= args.len()) {
            return Err(Error::InvalidArgument {
                op: name,
                message: format!(
                    "argument {bad} was chosen, but the function was given {} argument{}",
                    args.len(),
                    if args.len() == 1 { "" } else { "s" }
                ),
            });
        }
        let value = f.apply(args)?;
        let targets: Vec<&Tensor> = chosen.iter().filter_map(|&i| args.get(i)).collect();
        let grads = backward(name, &value, &targets)?;
        Ok(shape(value, grads))
    });
    Jit::traced(name, arity, function)
}

/// What `stop_grad` and `custom_grad` attach to their node.
enum Rule {
    /// No gradient flows through.
    Stop,
    /// The gradient of `inputs` is `rule(g)` instead of what flows through the node.
    Custom {
        inputs: Vec<usize>,
        rule: CustomRule,
    },
}

type CustomRule = Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync>;

fn rule_of(graph: &Graph, node: usize) -> Option<Arc<Rule>> {
    graph
        .annotation(node)
        .and_then(|a| a.downcast::<Rule>().ok())
}

/// True for an op whose gradient is zero in Nx: it stops the gradient.
fn stops_gradient(op: &Op) -> bool {
    match op {
        Op::Binary { op, .. } => op.is_comparison(),
        Op::Unary(op) => matches!(
            op,
            UnaryOp::Sign | UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round
        ),
        Op::ArgReduce { .. } | Op::Sort { indices: true, .. } => true,
        _ => false,
    }
}

fn scalar_error(name: &'static str, value: &Tensor) -> Error {
    Error::InvalidArgument {
        op: name,
        message: format!(
            "the function must return a float scalar (rank 0) to be differentiated; it returned \
             {} (reduce it with sum or mean first)",
            value.signature()
        ),
    }
}

/// The gradient of the scalar `value` with respect to each of `targets` (placeholders of the
/// trace that computed it), recorded into that trace.
fn backward(name: &'static str, value: &Tensor, targets: &[&Tensor]) -> Result<Vec<Tensor>> {
    if value.rank() != 0 || !value.dtype().is_float() {
        return Err(scalar_error(name, value));
    }
    let seed = on(value.device()).ones(value.dtype(), &[])?;
    propagate(name, &[(value.clone(), seed)], targets)
}

/// The gradient with respect to each of `targets` of the values in `seeds`, each weighted by
/// its cotangent (a vector-Jacobian product), recorded into the trace that computed them.
fn propagate(
    name: &'static str,
    seeds: &[(Tensor, Tensor)],
    targets: &[&Tensor],
) -> Result<Vec<Tensor>> {
    let zeros = |t: &Tensor| on(t.device()).zeros(t.dtype().to_float(), t.shape());
    let target_nodes = targets
        .iter()
        .map(|t| node_ref(t))
        .collect::<Result<Vec<_>>>()?;
    let mut seed_nodes = Vec::with_capacity(seeds.len());
    for (value, cotangent) in seeds {
        if let Some(r) = node_ref(value)? {
            seed_nodes.push((r, cotangent));
        }
    }
    let Some(((graph, _), _)) = seed_nodes.first() else {
        // The result depends on no argument: every gradient is zero.
        return targets.iter().map(|t| zeros(t)).collect();
    };
    let graph = Arc::clone(graph);
    let mut wanted_nodes = Vec::with_capacity(targets.len());
    for (t, r) in targets.iter().zip(&target_nodes) {
        match r {
            Some((g, node)) if Arc::ptr_eq(g, &graph) => wanted_nodes.push(*node),
            _ => {
                return Err(Error::InvalidArgument {
                    op: name,
                    message: format!(
                        "{} is not an argument traced with the function (inside a jit \
                         function, differentiate with respect to traced tensors only)",
                        t.signature()
                    ),
                })
            }
        }
    }
    let nodes = graph.snapshot();
    let out = seed_nodes.iter().map(|((_, n), _)| *n).max().unwrap_or(0);
    let needs = flows(&graph, &nodes, &wanted_nodes, out);
    let mut grads: Vec<Option<Tensor>> = vec![None; nodes.len()];
    for ((g, node), cotangent) in &seed_nodes {
        if !Arc::ptr_eq(g, &graph) {
            return Err(internal("values to differentiate from two traces"));
        }
        accumulate(&mut grads, &nodes, *node, (*cotangent).clone())?;
    }
    // Cotangents of a loop's or branch's results, by entry, gathered from its projections.
    let mut tuples: HashMap<usize, Vec<Option<Tensor>>> = HashMap::new();
    for i in (0..=out).rev() {
        if !needs[i] {
            continue;
        }
        let node = &nodes[i];
        if let NodeKind::Control(control) = &node.kind {
            let cotangents = tuples.remove(&i).unwrap_or_default();
            for (j, c) in control_contributions(&graph, &nodes, &needs, node, control, cotangents)?
            {
                accumulate(&mut grads, &nodes, j, c)?;
            }
            continue;
        }
        let g = if wanted_nodes.contains(&i) {
            grads[i].clone()
        } else {
            grads[i].take()
        };
        let Some(g) = g else { continue };
        if let NodeKind::Project(k) = node.kind {
            let from = node.inputs.first().copied().unwrap_or(i);
            let entries = tuples.entry(from).or_default();
            if entries.len() <= k {
                entries.resize(k + 1, None);
            }
            entries[k] = Some(match entries[k].take() {
                Some(sum) => sum.add(&g)?,
                None => g,
            });
            continue;
        }
        let contributions = contributions(&graph, &nodes, &needs, i, node, &g)?;
        for (j, c) in contributions {
            if let Some(c) = c {
                accumulate(&mut grads, &nodes, j, c)?;
            }
        }
    }
    targets
        .iter()
        .zip(&wanted_nodes)
        .map(|(t, &node)| match &grads[node] {
            Some(g) => g.reshape(t.shape()),
            None => zeros(t),
        })
        .collect()
}

/// Adds `c` to the gradient of node `j`, in that node's shape and dtype.
fn accumulate(grads: &mut [Option<Tensor>], nodes: &[Node], j: usize, c: Tensor) -> Result<()> {
    let into = nodes.get(j).ok_or_else(|| internal("input node missing"))?;
    let c = c.reshape(&into.shape)?;
    let c = if c.dtype() == into.dtype {
        c
    } else {
        c.as_type(into.dtype)?
    };
    grads[j] = Some(match grads[j].take() {
        Some(sum) => sum.add(&c)?,
        None => c,
    });
    Ok(())
}

/// The gradient through a loop or branch node: for a branch, a branch of the gradients (the
/// program differentiates only the branch it takes); a loop is not differentiated.
fn control_contributions(
    graph: &Arc<Graph>,
    nodes: &[Node],
    needs: &[bool],
    node: &Node,
    control: &Control,
    cotangents: Vec<Option<Tensor>>,
) -> Result<Vec<(usize, Tensor)>> {
    let Control::Cond { then, otherwise } = control else {
        return Err(Error::InvalidArgument {
            op: "grad",
            message: "the gradient flows through a while_loop, which is not differentiated \
                      (its trip count is known only when it runs): stop_grad what enters the \
                      loop, or write a loop of a fixed number of steps as a Rust loop, which \
                      the trace unrolls"
                .into(),
        });
    };
    let input = |p: usize| -> Result<Tensor> {
        let j = *node
            .inputs
            .get(p)
            .ok_or_else(|| internal("input missing"))?;
        let n = nodes.get(j).ok_or_else(|| internal("input node missing"))?;
        placeholder_of(graph, j, n)
    };
    let predicate = input(0)?;
    let mut seeds = Vec::new();
    for (k, o) in otherwise.outputs.iter().enumerate() {
        let dtype = otherwise
            .nodes
            .get(o.slot)
            .map(|n| n.dtype)
            .ok_or_else(|| internal("a branch's result missing"))?;
        let ct = match cotangents.get(k).cloned().flatten() {
            Some(c) => Some(c),
            None if dtype.is_float() => Some(on(o.device).zeros(dtype, &o.shape)?),
            None => None,
        };
        seeds.push(ct);
    }
    let first = 1..1 + then.captures.len();
    let second = first.end..first.end + otherwise.captures.len();
    let wanted: Vec<usize> = (1..node.inputs.len())
        .filter(|&p| node.inputs.get(p).is_some_and(|&j| needs[j]))
        .collect();
    let inputs = (0..node.inputs.len())
        .map(input)
        .collect::<Result<Vec<_>>>()?;
    let branch = |body: &Body, range: std::ops::Range<usize>| -> Result<Vec<Tensor>> {
        let captured = inputs
            .get(range.clone())
            .ok_or_else(|| internal("captures missing"))?;
        let (outputs, params) = replay(body, captured)?;
        let seeds: Vec<(Tensor, Tensor)> = outputs
            .into_iter()
            .zip(&seeds)
            .filter_map(|(o, s)| s.clone().map(|s| (o, s)))
            .collect();
        let targets: Vec<&Tensor> = params.iter().collect();
        let grads = propagate("grad", &seeds, &targets)?;
        wanted
            .iter()
            .map(|&p| {
                if range.contains(&p) {
                    grads
                        .get(p - range.start)
                        .cloned()
                        .ok_or_else(|| internal("a capture's gradient missing"))
                } else {
                    let t = &inputs[p];
                    on(t.device()).zeros(t.dtype(), t.shape())
                }
            })
            .collect()
    };
    let grads: Vec<Tensor> = cond(
        &predicate,
        || branch(then, first),
        || branch(otherwise, second),
    )?;
    wanted
        .iter()
        .zip(grads)
        .map(|(&p, g)| Ok((node.inputs[p], g)))
        .collect()
}

/// Records a traced body again into the innermost trace, its parameters standing for
/// `captured` (through an identity each, so the gradient has nodes to reach): the body's
/// results and those identities.
fn replay(body: &Body, captured: &[Tensor]) -> Result<(Vec<Tensor>, Vec<Tensor>)> {
    let mut values: Vec<Option<Tensor>> = vec![None; body.nodes.len()];
    let mut params: Vec<Tensor> = Vec::with_capacity(captured.len());
    for t in captured {
        params.push(identity(t)?);
    }
    for (i, node) in body.nodes.iter().enumerate() {
        let inputs =
            inputs_of(&values, node).ok_or_else(|| internal("a body's input replayed late"))?;
        let value = match &node.kind {
            NodeKind::Param(p) => params
                .get(*p)
                .cloned()
                .ok_or_else(|| internal("a body's parameter missing"))?,
            NodeKind::Constant(memory) => {
                Tensor::from_shared(Arc::clone(memory), node.shape.clone(), node.device)?
            }
            NodeKind::Op(op) => {
                let refs: Vec<&Tensor> = inputs.iter().collect();
                let vals = inputs
                    .iter()
                    .map(|t| t.value())
                    .collect::<Result<Vec<_>>>()?;
                let out = record(node.device, op.clone(), &refs, &vals, node.shape.clone())?;
                if let Some(annotation) = body.annotations.get(&i) {
                    match annotation.clone().downcast::<Rule>().ok().as_deref() {
                        Some(Rule::Stop) => {
                            if let Some((g, n)) = node_ref(&out)? {
                                g.annotate(n, Arc::new(Rule::Stop));
                            }
                        }
                        _ => {
                            return Err(Error::InvalidArgument {
                                op: "custom_grad",
                                message: "a custom_grad inside a cond branch is not \
                                          differentiated through the branch; apply it outside \
                                          the cond"
                                    .into(),
                            })
                        }
                    }
                }
                out
            }
            NodeKind::Transfer => inputs
                .first()
                .ok_or_else(|| internal("a transfer without input"))?
                .backend_copy(node.device)?,
            kind @ (NodeKind::Control(_) | NodeKind::Project(_)) => record_node(
                kind.clone(),
                &inputs,
                node.dtype,
                node.shape.clone(),
                node.device,
            )?,
        };
        values[i] = Some(value);
    }
    let outputs = body
        .outputs
        .iter()
        .map(|o| {
            values
                .get(o.slot)
                .cloned()
                .flatten()
                .ok_or_else(|| internal("a body's result missing"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((outputs, params))
}

/// The same values as a new node of the innermost trace.
fn identity(t: &Tensor) -> Result<Tensor> {
    let shape = t.shape().to_vec();
    let copy = Op::CopyStrided {
        view: Strided::contiguous(&shape),
        out_shape: shape.clone(),
    };
    record(t.device(), copy, &[t], &[t.value()?], shape)
}

/// For each node: does the gradient of the result flow from it to a wanted node?
fn flows(graph: &Graph, nodes: &[Node], wanted: &[usize], out: usize) -> Vec<bool> {
    let mut needs = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate().take(out + 1) {
        if wanted.contains(&i) {
            needs[i] = node.dtype.is_float();
            continue;
        }
        if !node.dtype.is_float() && !matches!(node.kind, NodeKind::Control(_)) {
            continue;
        }
        let from_inputs = |inputs: &[usize]| inputs.iter().any(|&j| needs[j]);
        needs[i] = match rule_of(graph, i).as_deref() {
            Some(Rule::Stop) => false,
            Some(Rule::Custom { inputs, .. }) => from_inputs(inputs),
            None => match &node.kind {
                NodeKind::Op(op) if stops_gradient(op) => false,
                NodeKind::Op(_)
                | NodeKind::Transfer
                | NodeKind::Control(_)
                | NodeKind::Project(_) => from_inputs(&node.inputs),
                NodeKind::Param(_) | NodeKind::Constant(_) => false,
            },
        };
    }
    needs
}

/// The gradient `g` of node `i` passed to its inputs: (input node, its gradient or none).
fn contributions(
    graph: &Arc<Graph>,
    nodes: &[Node],
    needs: &[bool],
    i: usize,
    node: &Node,
    g: &Tensor,
) -> Result<Vec<(usize, Option<Tensor>)>> {
    if let Some(rule) = rule_of(graph, i) {
        if let Rule::Custom { inputs, rule } = &*rule {
            let given = rule(g)?;
            if given.len() != inputs.len() {
                return Err(Error::InvalidArgument {
                    op: "custom_grad",
                    message: format!(
                        "the gradient rule returned {} tensors for {} inputs",
                        given.len(),
                        inputs.len()
                    ),
                });
            }
            return Ok(inputs
                .iter()
                .zip(given)
                .map(|(&j, c)| (j, needs[j].then_some(c)))
                .collect());
        }
        return Ok(Vec::new());
    }
    match &node.kind {
        NodeKind::Op(op) => {
            let inputs = node
                .inputs
                .iter()
                .map(|&j| {
                    let n = nodes.get(j).ok_or_else(|| internal("input node missing"))?;
                    placeholder_of(graph, j, n)
                })
                .collect::<Result<Vec<_>>>()?;
            let result = placeholder_of(graph, i, node)?;
            let wanted: Vec<bool> = node.inputs.iter().map(|&j| needs[j]).collect();
            let site = Site {
                inputs: &inputs,
                result: &result,
                wanted: &wanted,
                device: node.device,
            };
            let given = vjp(op, &site, g)?;
            Ok(node
                .inputs
                .iter()
                .zip(given)
                .zip(wanted)
                .map(|((&j, c), w)| (j, c.filter(|_| w)))
                .collect())
        }
        NodeKind::Transfer => {
            let j = node
                .inputs
                .first()
                .copied()
                .ok_or_else(|| internal("a transfer without input"))?;
            let from = nodes.get(j).ok_or_else(|| internal("input node missing"))?;
            Ok(vec![(j, Some(g.backend_copy(from.device)?))])
        }
        // Projections and control nodes are handled by `propagate`.
        NodeKind::Param(_)
        | NodeKind::Constant(_)
        | NodeKind::Control(_)
        | NodeKind::Project(_) => Ok(Vec::new()),
    }
}

/// Records an identity of `t` as a new node carrying `rule` (inside a trace), or returns `t`
/// (outside one, where there is nothing to differentiate).
fn marked(t: &Tensor, rule: impl FnOnce() -> Result<Rule>) -> Result<Tensor> {
    if node_ref(t)?.is_none() {
        return Ok(t.clone());
    }
    let out = identity(t)?;
    // The identity may be in a body inside `t`'s trace (a stop_grad inside a branch).
    let Some((graph, node)) = node_ref(&out)? else {
        return Err(internal("an identity recorded without a node"));
    };
    graph.annotate(node, Arc::new(rule()?));
    Ok(out)
}

impl Tensor {
    /// The same values, through which no gradient flows (Nx's `stop_grad`): inside a
    /// differentiated function, what depends on it is treated as a constant.
    pub fn stop_grad(&self) -> Result<Tensor> {
        marked(self, || Ok(Rule::Stop))
    }
}

/// `result`, whose gradient with respect to `inputs` is given by `rule` instead of being
/// derived through the ops that computed it (Nx's `custom_grad`): `rule` receives the
/// gradient of `result` (of its shape) and returns one gradient per input, each of that
/// input's shape. Outside a differentiated function it is `result` itself.
pub fn custom_grad(
    result: &Tensor,
    inputs: &[&Tensor],
    rule: impl Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync + 'static,
) -> Result<Tensor> {
    let graph = match node_ref(result)? {
        Some((graph, _)) => graph,
        None => return Ok(result.clone()),
    };
    let mut nodes = Vec::with_capacity(inputs.len());
    for t in inputs {
        match node_ref(t)? {
            Some((g, node)) if Arc::ptr_eq(&g, &graph) => nodes.push(node),
            _ => {
                return Err(Error::InvalidArgument {
                    op: "custom_grad",
                    message: format!(
                        "{} is not a value of the trace that computed {}",
                        t.signature(),
                        result.signature()
                    ),
                })
            }
        }
    }
    marked(result, move || {
        Ok(Rule::Custom {
            inputs: nodes,
            rule: Arc::new(rule),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Device;
    use crate::dtype::DType;

    fn host() -> crate::create::Factory {
        on(Device::host(0))
    }

    #[test]
    fn square_sum_has_slope_two_x() {
        let f = value_and_grad(|x: &Tensor| x.multiply(x)?.sum(..));
        let x = host().from_vec(vec![1.0f64, -2.0, 3.0], &[3]).unwrap();
        let (v, g) = f.call(&x).unwrap();
        assert_eq!(v.to_scalar::<f64>().unwrap(), 14.0);
        assert_eq!(g[0].to_vec::<f64>().unwrap(), vec![2.0, -4.0, 6.0]);
    }

    #[test]
    fn a_result_that_is_not_a_scalar_is_an_error_naming_it() {
        let f = grad(|x: &Tensor| x.multiply(2.0));
        let x = host().from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let e = f.call(&x).unwrap_err().to_string();
        assert!(e.contains("scalar") && e.contains("f32[2]"), "{e}");
    }

    #[test]
    fn stop_grad_and_comparisons_stop_the_gradient() {
        let f = grad(|x: &Tensor| {
            let stopped = x.stop_grad()?.multiply(x)?;
            let mask = x.greater(0.0)?.as_type(DType::F64)?;
            stopped.add(&mask.multiply(x)?)?.sum(..)
        });
        let x = host().from_vec(vec![2.0f64, -1.0], &[2]).unwrap();
        // d/dx [c*x + [x>0]*x] with c = x held constant: c + [x>0].
        assert_eq!(
            f.call(&x).unwrap()[0].to_vec::<f64>().unwrap(),
            vec![3.0, -1.0]
        );
    }

    #[test]
    fn custom_grad_replaces_the_derivative() {
        let f = grad(|x: &Tensor| {
            let y = x.exp()?;
            let y = custom_grad(&y, &[x], |g| Ok(vec![g.multiply(10.0)?]))?;
            y.sum(..)
        });
        let x = host().from_vec(vec![0.0f64, 1.0], &[2]).unwrap();
        assert_eq!(
            f.call(&x).unwrap()[0].to_vec::<f64>().unwrap(),
            vec![10.0, 10.0]
        );
    }

    #[test]
    fn only_the_chosen_arguments_are_differentiated() {
        let f = grad_wrt(|w: &Tensor, x: &Tensor| x.dot(w)?.sum(..), &[0]);
        let w = host().from_vec(vec![1.0f32, 2.0], &[2, 1]).unwrap();
        let x = host()
            .from_vec(vec![3.0f32, 4.0, 5.0, 6.0], &[2, 2])
            .unwrap();
        let g = f.call((&w, &x)).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].shape(), &[2, 1]);
        assert_eq!(g[0].to_vec::<f32>().unwrap(), vec![8.0, 10.0]);
        let bad = grad_wrt(|w: &Tensor| w.sum(..), &[3]);
        let e = bad.call(&w).unwrap_err().to_string();
        assert!(e.contains("argument 3"), "{e}");
    }
}
