//! Tracing: a jit function runs once on placeholder tensors, whose value is a node of a graph
//! ([`Placeholder`]) instead of memory. Every op the function calls goes through the usual
//! frontend (shape and dtype checks, promotion, placement), and where eager code would hand an
//! `Op` to a backend, the op is recorded instead (`record`). Rust control flow runs at trace
//! time, as in Nx's `defn`; reading a placeholder's values is an error naming it. Placeholders
//! never reach memory or a backend: the type of a tensor's value keeps them apart.

use std::cell::RefCell;
use std::sync::Arc;

use super::graph::{Graph, Node, NodeKind, Placeholder};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::Op;
use crate::tensor::{Tensor, Value};

thread_local! {
    /// The graphs being traced on this thread, innermost last (a jit function's, then the
    /// bodies of the loops and branches it is tracing).
    static TRACING: RefCell<Vec<Arc<Graph>>> = const { RefCell::new(Vec::new()) };
}

/// While alive, `graph` is the innermost graph traced on this thread: ops record into it even
/// when their operands belong to an enclosing graph (a body captures them), so a branch's work
/// stays in the branch.
pub(crate) struct Tracing(());

/// Makes `graph` the innermost traced graph until the guard is dropped.
pub(crate) fn enter(graph: &Arc<Graph>) -> Tracing {
    TRACING.with(|t| t.borrow_mut().push(Arc::clone(graph)));
    Tracing(())
}

impl Drop for Tracing {
    fn drop(&mut self) {
        TRACING.with(|t| {
            t.borrow_mut().pop();
        });
    }
}

/// The innermost graph traced on this thread, if any.
pub(crate) fn current() -> Option<Arc<Graph>> {
    TRACING.with(|t| t.borrow().last().cloned())
}

fn placeholder(
    graph: &Arc<Graph>,
    node: usize,
    dtype: DType,
    shape: Vec<usize>,
    device: Device,
) -> Result<Tensor> {
    let value = Placeholder::new(graph, node, dtype, &shape, device);
    Tensor::from_placeholder(value, shape, device)
}

/// A placeholder for argument `index` of the function, on `device`.
pub(crate) fn param(
    graph: &Arc<Graph>,
    index: usize,
    dtype: DType,
    shape: &[usize],
    device: Device,
) -> Result<Tensor> {
    let node = graph.push(Node {
        kind: NodeKind::Param(index),
        inputs: Vec::new(),
        device,
        dtype,
        shape: shape.to_vec(),
    });
    placeholder(graph, node, dtype, shape.to_vec(), device)
}

/// The node a tensor stands for in `graph`: its own for a placeholder of this trace, a new
/// constant otherwise.
pub(crate) fn node_of(graph: &Arc<Graph>, tensor: &Tensor) -> Result<usize> {
    match tensor.value()? {
        Value::Placeholder(t) => graph
            .node_for(&t.graph, t.node)
            .ok_or_else(|| foreign(tensor)),
        Value::Memory(memory) => Ok(graph.push(Node {
            kind: NodeKind::Constant(memory),
            inputs: Vec::new(),
            device: tensor.device(),
            dtype: tensor.dtype(),
            shape: tensor.shape().to_vec(),
        })),
    }
}

fn foreign(tensor: &Tensor) -> Error {
    Error::InvalidArgument {
        op: "jit",
        message: format!(
            "{} is a placeholder of another jit trace (a tensor kept from inside a jit \
             function); return it from that function instead",
            tensor.signature()
        ),
    }
}

/// Records `op` on `device` over `operands` (at least one of them a placeholder) and returns
/// the placeholder of its result: what `ops/` does instead of dispatching while tracing.
pub(crate) fn record(
    device: Device,
    op: Op,
    operands: &[&Tensor],
    values: &[Value],
    shape: Vec<usize>,
) -> Result<Tensor> {
    let owners: Vec<&Arc<Graph>> = values
        .iter()
        .filter_map(|v| match v {
            Value::Placeholder(t) => Some(&t.graph),
            Value::Memory(_) => None,
        })
        .collect();
    let graph = match current() {
        Some(inner) if owners.iter().all(|g| inner.within(g)) => inner,
        _ => owners
            .iter()
            .max_by_key(|g| g.depth())
            .map(|g| Arc::clone(g))
            .ok_or(Error::InvalidArgument {
                op: "jit",
                message: "internal: an op recorded without a placeholder".into(),
            })?,
    };
    let inputs = operands
        .iter()
        .map(|t| node_of(&graph, t))
        .collect::<Result<Vec<_>>>()?;
    let first = operands.first().map(|t| t.dtype()).unwrap_or(DType::F32);
    let dtype = op.out_dtype(first);
    let node = graph.push(Node {
        kind: NodeKind::Op(op),
        inputs,
        device,
        dtype,
        shape: shape.clone(),
    });
    placeholder(&graph, node, dtype, shape, device)
}

/// True when any of these values is a placeholder.
pub(crate) fn any_placeholder(values: &[Value]) -> bool {
    values.iter().any(|v| matches!(v, Value::Placeholder(_)))
}

/// A placeholder for node `index` of `graph` (already recorded), with the node's own shape:
/// how `grad` refers to forward values when it records the backward pass.
pub(crate) fn placeholder_of(graph: &Arc<Graph>, index: usize, node: &Node) -> Result<Tensor> {
    placeholder(graph, index, node.dtype, node.shape.clone(), node.device)
}

/// The graph and node of a placeholder tensor; `None` for a tensor with memory.
pub(crate) fn node_ref(tensor: &Tensor) -> Result<Option<(Arc<Graph>, usize)>> {
    Ok(match tensor.value()? {
        Value::Placeholder(p) => Some((Arc::clone(&p.graph), p.node)),
        Value::Memory(_) => None,
    })
}

/// Records a node of `kind` over `inputs` into the innermost traced graph: how a gradient
/// replays a body's loops and branches (whose kinds are not ops) into the graph it records.
pub(crate) fn record_node(
    kind: NodeKind,
    inputs: &[Tensor],
    dtype: DType,
    shape: Vec<usize>,
    device: Device,
) -> Result<Tensor> {
    let graph = current().ok_or(Error::InvalidArgument {
        op: "jit",
        message: "internal: a node recorded outside a trace".into(),
    })?;
    let inputs = inputs
        .iter()
        .map(|t| node_of(&graph, t))
        .collect::<Result<Vec<_>>>()?;
    let node = Node {
        kind,
        inputs,
        device,
        dtype,
        shape,
    };
    let at = graph.push(node.clone());
    placeholder_of(&graph, at, &node)
}
