//! The graph a `jit` trace records: nodes (parameters, captured constants, ops of the IR,
//! transfers) and the placeholders that stand for them in tensors while the function runs.
//! It knows memory (a constant holds its value) but not tensors, so a tensor can hold a
//! placeholder without an import circle; recording from tensors is `trace.rs`.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::device::{Device, MemoryKind};
use crate::dtype::DType;
use crate::error::Error;
use crate::ir::Op;
use crate::memory::Memory;
use crate::shape::fmt_shape;

/// What a node of a traced graph is.
#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub inputs: Vec<usize>,
    pub device: Device,
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// A result of the traced function: the node (slot) holding it and the tensor it becomes.
#[derive(Debug, Clone)]
pub(crate) struct Output {
    pub slot: usize,
    pub shape: Vec<usize>,
    pub device: Device,
    /// The traced result's axis names, given back to every call's result.
    pub names: Vec<Option<String>>,
}

/// What a layer above attached to a node (how `grad` treats it); opaque here, so that the
/// graph needs no type from above.
pub(crate) type Annotation = Arc<dyn Any + Send + Sync>;

/// The graph a trace records into (shared by every placeholder of that trace).
#[derive(Default)]
pub(crate) struct Graph {
    nodes: Mutex<Vec<Node>>,
    annotations: Mutex<HashMap<usize, Annotation>>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.nodes.lock().map(|n| n.len()).unwrap_or(0))
            .finish()
    }
}

impl Graph {
    pub(crate) fn push(&self, node: Node) -> usize {
        let mut nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        nodes.push(node);
        nodes.len() - 1
    }

    /// The nodes recorded so far, taken out of the graph.
    pub(crate) fn take(&self) -> Vec<Node> {
        std::mem::take(&mut *self.nodes.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// A copy of the nodes recorded so far (constants share their memory).
    pub(crate) fn snapshot(&self) -> Vec<Node> {
        self.nodes.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Attaches `annotation` to node `node` (replacing an earlier one).
    pub(crate) fn annotate(&self, node: usize, annotation: Annotation) {
        self.annotations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(node, annotation);
    }

    /// What was attached to node `node`, if anything.
    pub(crate) fn annotation(&self, node: usize) -> Option<Annotation> {
        self.annotations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&node)
            .cloned()
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

/// What a placeholder tensor holds instead of memory: a node of a graph being traced.
#[derive(Debug)]
pub struct Placeholder {
    pub(crate) graph: Arc<Graph>,
    pub(crate) node: usize,
    kind: MemoryKind,
    dtype: DType,
    len: usize,
}

impl Placeholder {
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

    /// A new placeholder for node `node` of `graph`, whose value will be `dtype[shape]` on
    /// `device`.
    pub(crate) fn new(
        graph: &Arc<Graph>,
        node: usize,
        dtype: DType,
        shape: &[usize],
        device: Device,
    ) -> Placeholder {
        Placeholder {
            graph: Arc::clone(graph),
            node,
            kind: device.memory_kind(),
            dtype,
            len: crate::shape::numel(shape),
        }
    }

    /// Records a copy of this value to device `to` and returns the placeholder of the copy:
    /// what a transfer of a placeholder (a weak operand moved, `backend_copy`) is in a trace.
    pub(crate) fn transfer(&self, to: Device) -> Placeholder {
        let shape = {
            let nodes = self.graph.nodes.lock().unwrap_or_else(|e| e.into_inner());
            nodes.get(self.node).map(|n| n.shape.clone())
        }
        .unwrap_or_else(|| vec![self.len]);
        let node = self.graph.push(Node {
            kind: NodeKind::Transfer,
            inputs: vec![self.node],
            device: to,
            dtype: self.dtype,
            shape,
        });
        Placeholder {
            graph: Arc::clone(&self.graph),
            node,
            kind: to.memory_kind(),
            dtype: self.dtype,
            len: self.len,
        }
    }

    /// The error for reading a placeholder's values (they do not exist yet).
    pub(crate) fn unknown(&self, op: &'static str) -> Error {
        Error::Traced {
            op,
            value: format!("a {} tensor of {} elements", self.dtype, self.len),
        }
    }
}

/// `f32[2][3]`: how a node prints in messages.
pub(crate) fn describe(dtype: DType, shape: &[usize]) -> String {
    format!("{dtype}{}", fmt_shape(shape))
}
