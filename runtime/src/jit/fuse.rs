//! Fusion: which elementwise nodes of a trace become one [`Fused`] op.
//!
//! A region grows from a root (an elementwise node) back through inputs that are elementwise,
//! of the root's exact shape and device, read in plain order, and read by nothing outside the
//! region (so no member's result is needed elsewhere). A reduction whose input is such a root takes
//! the region along (the reduction folds blocks as they are computed). A lone elementwise op
//! stays as it is: fusing it would gain nothing.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Result;
use crate::ir::fused::{fuses, Arg, Fused, FusedInput, Step, StepOp};
use crate::ir::{Op, Strided};

use super::graph::{Node, NodeKind, Output};

/// The fusion decisions for a trace.
pub(crate) struct Plan {
    /// Nodes computed inside some region (no instruction of their own).
    pub absorbed: Vec<bool>,
    /// For the node that runs a region (its root, or the reduction over it): the region and
    /// the nodes whose values it reads, in input order.
    pub regions: HashMap<usize, (Arc<Fused>, Vec<usize>)>,
}

impl Plan {
    /// No fusion (the binary backend runs the graph op by op).
    pub(crate) fn none(len: usize) -> Plan {
        Plan {
            absorbed: vec![false; len],
            regions: HashMap::new(),
        }
    }
}

fn step_op(op: &Op) -> Option<StepOp> {
    match op {
        Op::Binary { op, .. } => Some(StepOp::Binary(*op)),
        Op::Unary(u) => Some(StepOp::Unary(*u)),
        Op::Cast(d) => Some(StepOp::Cast(*d)),
        _ => None,
    }
}

/// An elementwise op a fused region can hold: its operands and result all in
/// [`crate::ir::fused::FUSED_DTYPES`].
fn is_elementwise(nodes: &[Node], node: &Node) -> bool {
    matches!(&node.kind, NodeKind::Op(op) if step_op(op).is_some())
        && fuses(node.dtype)
        && node
            .inputs
            .iter()
            .all(|&i| nodes.get(i).is_some_and(|x| fuses(x.dtype)))
}

/// How `consumer` reads its `k`-th input, over the consumer's shape.
fn view_of(consumer: &Node, k: usize) -> Strided {
    match &consumer.kind {
        NodeKind::Op(Op::Binary { lhs, rhs, .. }) => {
            if k == 0 {
                lhs.clone()
            } else {
                rhs.clone()
            }
        }
        _ => Strided::contiguous(&consumer.shape),
    }
}

/// Who reads each node: `(consumer, operand position)` among the live nodes.
fn consumers(nodes: &[Node], live: &[bool]) -> Vec<Vec<(usize, usize)>> {
    let mut readers = vec![Vec::new(); nodes.len()];
    for (n, node) in nodes.iter().enumerate() {
        if live[n] {
            for (k, &i) in node.inputs.iter().enumerate() {
                readers[i].push((n, k));
            }
        }
    }
    readers
}

/// Decides the regions of a trace (`live`: nodes an output depends on).
pub(crate) fn plan(nodes: &[Node], live: &[bool], outputs: &[Output]) -> Result<Plan> {
    let readers = consumers(nodes, live);
    let mut is_output = vec![false; nodes.len()];
    for o in outputs {
        // An output is needed as it is: never absorbed into another node's region.
        is_output[o.slot] = true;
    }
    let mut plan = Plan {
        absorbed: vec![false; nodes.len()],
        regions: HashMap::new(),
    };
    for n in (0..nodes.len()).rev() {
        if !live[n] || plan.absorbed[n] {
            continue;
        }
        let node = &nodes[n];
        // A reduction over a region: the region's root is its input.
        let (root, reduce) = match &node.kind {
            NodeKind::Op(Op::Reduce { op, shape, axes }) => {
                let Some(&input) = node.inputs.first() else {
                    continue;
                };
                let r = &nodes[input];
                let only_reader = readers[input].len() == 1 && !is_output[input];
                if !is_elementwise(nodes, r)
                    || !only_reader
                    || r.shape != *shape
                    || r.device != node.device
                {
                    continue;
                }
                (input, Some((*op, axes.clone())))
            }
            _ if is_elementwise(nodes, node) => (n, None),
            _ => continue,
        };
        let members = grow(nodes, &readers, &is_output, &plan.absorbed, root);
        if members.len() < 2 && reduce.is_none() {
            continue;
        }
        let (fused, inputs) = build(nodes, &members, reduce);
        for &m in &members {
            plan.absorbed[m] = true;
        }
        plan.absorbed[n] = false;
        plan.regions.insert(n, (Arc::new(fused), inputs));
    }
    Ok(plan)
}

/// The members of the region rooted at `root`, in trace order: going back from the root,
/// every elementwise node of its shape and device whose readers are all members reading it in
/// order (so a value used twice inside the region, `x * x`, is computed once, in the region).
fn grow(
    nodes: &[Node],
    readers: &[Vec<(usize, usize)>],
    is_output: &[bool],
    absorbed: &[bool],
    root: usize,
) -> Vec<usize> {
    let shape = &nodes[root].shape;
    let device = nodes[root].device;
    let mut member = vec![false; root + 1];
    member[root] = true;
    for i in (0..root).rev() {
        let node = &nodes[i];
        let joins = is_elementwise(nodes, node)
            && !absorbed[i]
            && !is_output[i]
            && node.shape == *shape
            && node.device == device
            && !readers[i].is_empty()
            && readers[i].iter().all(|&(c, k)| {
                c <= root && member[c] && view_of(&nodes[c], k).is_contiguous(shape)
            });
        member[i] = joins;
    }
    (0..=root).filter(|&i| member[i]).collect()
}

/// The fused op for `members` (sorted) and the nodes it reads.
fn build(
    nodes: &[Node],
    members: &[usize],
    reduce: Option<(crate::ir::ReduceOp, Vec<usize>)>,
) -> (Fused, Vec<usize>) {
    let root = *members.last().unwrap_or(&0);
    let shape = nodes[root].shape.clone();
    let mut inputs: Vec<FusedInput> = Vec::new();
    let mut input_nodes: Vec<usize> = Vec::new();
    let mut steps = Vec::with_capacity(members.len());
    for &m in members {
        let node = &nodes[m];
        let NodeKind::Op(op) = &node.kind else {
            continue;
        };
        let Some(sop) = step_op(op) else {
            continue;
        };
        let args = node
            .inputs
            .iter()
            .enumerate()
            .map(|(k, &i)| match members.iter().position(|&x| x == i) {
                Some(p) => Arg::Step(p),
                None => {
                    let view = view_of(node, k);
                    let at = input_nodes
                        .iter()
                        .zip(&inputs)
                        .position(|(&n, x)| n == i && x.view == view);
                    Arg::Input(at.unwrap_or_else(|| {
                        input_nodes.push(i);
                        inputs.push(FusedInput {
                            dtype: nodes[i].dtype,
                            view,
                        });
                        inputs.len() - 1
                    }))
                }
            })
            .collect();
        steps.push(Step {
            op: sop,
            args,
            dtype: node.dtype,
        });
    }
    (
        Fused {
            inputs,
            steps,
            shape,
            reduce,
        },
        input_nodes,
    )
}
