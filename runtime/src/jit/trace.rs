//! Tracing: a jit function runs once on placeholder tensors whose memory is a node of a graph
//! (`Memory::Traced`). Every op the function calls goes through the usual frontend (shape and
//! dtype checks, promotion, placement), and where eager code would hand an `Op` to a backend,
//! the op is recorded instead (`record`). Rust control flow runs at trace time, as in Nx's
//! `defn`; reading a placeholder's values is an error naming it.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use crate::backend::{Backend, Op};
use crate::buffer::Buffer;
use crate::device::{Device, MemoryKind};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::memory::Memory;
use crate::shape::fmt_shape;
use crate::tensor::Tensor;

/// What a node of a traced graph is.
#[derive(Debug)]
pub(crate) enum NodeKind {
    /// Argument `i` of the function.
    Param(usize),
    /// A tensor the function captured or created: its memory, on the node's device.
    Constant(Arc<Memory>),
    /// An op of the op set over earlier nodes.
    Op(Op),
    /// A copy of an earlier node to the node's device (a weak operand moved there).
    Transfer,
}

/// One value of a traced graph.
#[derive(Debug)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub inputs: Vec<usize>,
    pub device: Device,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// The graph a trace records into (shared by every placeholder of that trace).
#[derive(Debug, Default)]
pub(crate) struct Graph {
    nodes: Mutex<Vec<Node>>,
}

impl Graph {
    fn push(&self, node: Node) -> usize {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        nodes.push(node);
        nodes.len() - 1
    }

    /// The nodes recorded so far, taken out of the graph.
    pub(crate) fn take(&self) -> Vec<Node> {
        std::mem::take(&mut *self.nodes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// How many ops have been recorded (the position of the next one, from 0).
    pub(crate) fn ops_recorded(&self) -> usize {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|n| matches!(n.kind, NodeKind::Op(_)))
            .count()
    }
}

/// The memory of a placeholder: a node of a graph being traced.
#[derive(Debug)]
pub struct TracedMemory {
    graph: Arc<Graph>,
    node: usize,
    kind: MemoryKind,
    dtype: DType,
    len: usize,
}

impl TracedMemory {
    /// The memory kind of the device the node's value will live on.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

fn placeholder(
    graph: &Arc<Graph>,
    node: usize,
    dtype: DType,
    shape: Vec<usize>,
    device: Device,
) -> Result<Tensor> {
    let memory = Memory::Traced(TracedMemory {
        graph: Arc::clone(graph),
        node,
        kind: device.memory_kind(),
        dtype,
        len: crate::shape::numel(&shape),
    });
    Tensor::from_memory(memory, shape, device)
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
    let memory = tensor.memory()?;
    match &*memory {
        Memory::Traced(t) if Arc::ptr_eq(&t.graph, graph) => Ok(t.node),
        Memory::Traced(_) => Err(foreign(tensor)),
        _ => Ok(graph.push(Node {
            kind: NodeKind::Constant(Arc::clone(&memory)),
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
/// the placeholder of its result: what `ops.rs` does instead of dispatching while tracing.
pub(crate) fn record(
    device: Device,
    op: Op,
    operands: &[&Tensor],
    memories: &[Arc<Memory>],
    shape: Vec<usize>,
) -> Result<Tensor> {
    let graph = memories
        .iter()
        .find_map(|m| match &**m {
            Memory::Traced(t) => Some(Arc::clone(&t.graph)),
            _ => None,
        })
        .ok_or(Error::InvalidArgument {
            op: "jit",
            message: "internal: an op recorded without a placeholder".into(),
        })?;
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

/// True when any of these memories is a placeholder.
pub(crate) fn any_traced(memories: &[Arc<Memory>]) -> bool {
    memories.iter().any(|m| matches!(**m, Memory::Traced(_)))
}

/// The error for reading a placeholder's values.
fn unknown(op: &'static str, memory: &TracedMemory) -> Error {
    Error::Traced {
        op,
        value: format!("a {} tensor of {} elements", memory.dtype, memory.len),
    }
}

/// The backend of placeholder memory: values cannot be read (they do not exist yet); a copy to
/// another device is recorded as a transfer.
pub(crate) struct TraceBackend;

fn traced<'a>(op: &'static str, memory: &'a Memory) -> Result<&'a TracedMemory> {
    match memory {
        Memory::Traced(t) => Ok(t),
        other => Err(Error::InvalidArgument {
            op,
            message: format!("internal: {} given to the trace backend", other.kind()),
        }),
    }
}

impl Backend for TraceBackend {
    fn execute(&self, _device: Device, op: &Op, inputs: &[&Memory]) -> Result<Memory> {
        let first = inputs.first().ok_or(Error::InvalidArgument {
            op: op.name(),
            message: "internal: an op without inputs".into(),
        })?;
        Err(unknown(op.name(), traced(op.name(), first)?))
    }

    fn upload(&self, _device: Device, _buffer: Buffer) -> Result<Memory> {
        Err(Error::InvalidArgument {
            op: "upload",
            message: "internal: an upload to placeholder memory".into(),
        })
    }

    fn download<'a>(&self, memory: &'a Memory) -> Result<Cow<'a, Buffer>> {
        Err(unknown("read", traced("read", memory)?))
    }

    fn gather(&self, memory: &Memory, _indices: &[usize]) -> Result<Buffer> {
        Err(unknown("read", traced("read", memory)?))
    }

    fn copy(&self, memory: &Memory, from: Device, to: Device) -> Result<Memory> {
        let t = traced("copy", memory)?;
        let shape = {
            let nodes = t.graph.nodes.lock().unwrap_or_else(|e| e.into_inner());
            nodes.get(t.node).map(|n| n.shape.clone())
        }
        .unwrap_or_else(|| vec![t.len]);
        let _ = from;
        let node = t.graph.push(Node {
            kind: NodeKind::Transfer,
            inputs: vec![t.node],
            device: to,
            dtype: t.dtype,
            shape,
        });
        Ok(Memory::Traced(TracedMemory {
            graph: Arc::clone(&t.graph),
            node,
            kind: to.memory_kind(),
            dtype: t.dtype,
            len: t.len,
        }))
    }
}

/// `f32[2][3]`: how a node prints in messages.
pub(crate) fn describe(dtype: DType, shape: &[usize]) -> String {
    format!("{dtype}{}", fmt_shape(shape))
}
