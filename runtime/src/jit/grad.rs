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

use std::sync::Arc;

use super::graph::{Graph, Node, NodeKind};
use super::trace::{node_ref, placeholder_of, record};
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
    let zeros = |t: &Tensor| on(t.device()).zeros(t.dtype().to_float(), t.shape());
    let target_nodes = targets
        .iter()
        .map(|t| node_ref(t))
        .collect::<Result<Vec<_>>>()?;
    let Some((graph, out)) = node_ref(value)? else {
        // The result depends on no argument: every gradient is zero.
        return targets.iter().map(|t| zeros(t)).collect();
    };
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
    let needs = flows(&graph, &nodes, &wanted_nodes, out);
    let mut grads: Vec<Option<Tensor>> = vec![None; nodes.len()];
    let seed_node = nodes
        .get(out)
        .ok_or_else(|| internal("result node missing"))?;
    grads[out] = Some(on(seed_node.device).ones(seed_node.dtype, &seed_node.shape)?);
    for i in (0..=out).rev() {
        if !needs[i] {
            continue;
        }
        let g = if wanted_nodes.contains(&i) {
            grads[i].clone()
        } else {
            grads[i].take()
        };
        let Some(g) = g else { continue };
        let node = &nodes[i];
        let contributions = contributions(&graph, &nodes, &needs, i, node, &g)?;
        for (j, c) in contributions {
            let Some(c) = c else { continue };
            let into = &nodes[j];
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

/// For each node: does the gradient of the result flow from it to a wanted node?
fn flows(graph: &Graph, nodes: &[Node], wanted: &[usize], out: usize) -> Vec<bool> {
    let mut needs = vec![false; nodes.len()];
    for (i, node) in nodes.iter().enumerate().take(out + 1) {
        if wanted.contains(&i) {
            needs[i] = node.dtype.is_float();
            continue;
        }
        if !node.dtype.is_float() {
            continue;
        }
        let from_inputs = |inputs: &[usize]| inputs.iter().any(|&j| needs[j]);
        needs[i] = match rule_of(graph, i).as_deref() {
            Some(Rule::Stop) => false,
            Some(Rule::Custom { inputs, .. }) => from_inputs(inputs),
            None => match &node.kind {
                NodeKind::Op(op) if stops_gradient(op) => false,
                NodeKind::Op(_) | NodeKind::Transfer => from_inputs(&node.inputs),
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
        NodeKind::Param(_) | NodeKind::Constant(_) => Ok(Vec::new()),
    }
}

/// Records an identity of `t` as a new node carrying `rule` (inside a trace), or returns `t`
/// (outside one, where there is nothing to differentiate).
fn marked(t: &Tensor, rule: impl FnOnce() -> Result<Rule>) -> Result<Tensor> {
    let Some((graph, _)) = node_ref(t)? else {
        return Ok(t.clone());
    };
    let shape = t.shape().to_vec();
    let copy = Op::CopyStrided {
        view: Strided::contiguous(&shape),
        out_shape: shape.clone(),
    };
    let out = record(t.device(), copy, &[t], &[t.value()?], shape)?;
    let Some((_, node)) = node_ref(&out)? else {
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
