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
    /// A loop or a branch the program runs (`control.rs`): its bodies are graphs of their own.
    /// Its value is a tuple, read by `Project` nodes.
    Control(Arc<Control>),
    /// Entry `k` of the tuple its one input (a `Control` node) produces.
    Project(usize),
}

/// A function traced into a graph of its own, to be run by a `Control` node any number of
/// times: its parameters are the values the node passes in, then the values it captured from
/// the enclosing graphs.
#[derive(Debug, Clone)]
pub(crate) struct Body {
    pub nodes: Vec<Node>,
    pub outputs: Vec<Output>,
    /// The enclosing graph's nodes passed as parameters after the explicit ones, in order.
    pub captures: Vec<usize>,
    /// Annotations of the body's nodes (`stop_grad` inside a branch), for its gradient.
    pub annotations: HashMap<usize, Annotation>,
}

/// What a `Control` node runs. Its inputs are, in order: the loop's initial state (or the
/// branch's predicate), then each body's captures.
#[derive(Debug, Clone)]
pub(crate) enum Control {
    /// `state = body(state)` while `condition(state)` is not zero; the result is the state.
    While { condition: Body, body: Body },
    /// `then` when the predicate (a scalar) is not zero, else `otherwise`.
    Cond { then: Body, otherwise: Body },
}

impl Control {
    /// The bodies, in the order their captures follow the node's first inputs.
    pub(crate) fn bodies(&self) -> [&Body; 2] {
        match self {
            Control::While { condition, body } => [condition, body],
            Control::Cond { then, otherwise } => [then, otherwise],
        }
    }
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
    /// The graph this one is a body of (a loop's or a branch's), if any.
    parent: Option<Arc<Graph>>,
    /// Parameters before the captured ones.
    explicit_params: usize,
    /// The parent's nodes this graph captured (with the parameter node standing for each), in
    /// the order of their parameters.
    captures: Mutex<Vec<(usize, usize)>>,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.nodes.lock().map(|n| n.len()).unwrap_or(0))
            .finish()
    }
}

impl Graph {
    /// A graph for a body of a loop or branch recorded inside `parent`, whose first
    /// `explicit_params` parameters are given by the control node; values of `parent` (or of
    /// its ancestors) used inside become captured parameters after them.
    pub(crate) fn body_of(parent: &Arc<Graph>, explicit_params: usize) -> Graph {
        Graph {
            parent: Some(Arc::clone(parent)),
            explicit_params,
            ..Graph::default()
        }
    }

    /// True when `other` is this graph or one it is (transitively) a body of.
    pub(crate) fn within(self: &Arc<Graph>, other: &Arc<Graph>) -> bool {
        let mut at = Some(self);
        while let Some(g) = at {
            if Arc::ptr_eq(g, other) {
                return true;
            }
            at = g.parent.as_ref();
        }
        false
    }

    /// How many graphs enclose this one.
    pub(crate) fn depth(&self) -> usize {
        self.parent.as_ref().map_or(0, |p| p.depth() + 1)
    }

    /// The node standing for `node` of graph `owner` in this graph: itself when `owner` is this
    /// graph, a captured parameter when `owner` encloses it (captured through every graph in
    /// between), `None` when `owner` does not enclose it.
    pub(crate) fn node_for(self: &Arc<Graph>, owner: &Arc<Graph>, node: usize) -> Option<usize> {
        if Arc::ptr_eq(self, owner) {
            return Some(node);
        }
        let parent = self.parent.as_ref()?;
        let outer = parent.node_for(owner, node)?;
        let mut captures = self.captures.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&(_, local)) = captures.iter().find(|(o, _)| *o == outer) {
            return Some(local);
        }
        let template = parent.node(outer)?;
        let local = self.push(Node {
            kind: NodeKind::Param(self.explicit_params + captures.len()),
            inputs: Vec::new(),
            ..template
        });
        captures.push((outer, local));
        Some(local)
    }

    /// Node `index`'s description (kind and inputs included).
    pub(crate) fn node(&self, index: usize) -> Option<Node> {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(index)
            .cloned()
    }

    /// The traced body: its nodes (taken out), the results, what it captured and its
    /// annotations.
    pub(crate) fn finish(&self, outputs: Vec<Output>) -> Body {
        Body {
            nodes: self.take(),
            outputs,
            captures: self
                .captures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|&(outer, _)| outer)
                .collect(),
            annotations: self
                .annotations
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

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

/// The values of `node`'s inputs among `values` (one per node of its graph), as a walk in
/// trace order has them: `None` when one is not there yet.
pub(crate) fn inputs_of<T: Clone>(values: &[Option<T>], node: &Node) -> Option<Vec<T>> {
    node.inputs
        .iter()
        .map(|&j| values.get(j).cloned().flatten())
        .collect()
}

/// `f32[2][3]`: how a node prints in messages.
pub(crate) fn describe(dtype: DType, shape: &[usize]) -> String {
    format!("{dtype}{}", fmt_shape(shape))
}
