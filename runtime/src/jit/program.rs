//! A compiled program: a traced graph turned into instructions for one device (dead nodes
//! dropped, elementwise regions fused where the device fuses), run without calling the
//! function again. Every instruction goes through `memory::dispatch`, so the backend
//! contract holds for compiled code as for eager code.

use std::sync::Arc;

use crate::device::Device;
use crate::error::{Error, Result};
use crate::ir::Op;
use crate::memory::dispatch;
use crate::memory::Memory;
use crate::tensor::Tensor;

use super::fuse;
use super::graph::{Node, NodeKind, Output};

/// One instruction; its result goes to slot `slot` (the node's position in the trace).
#[derive(Debug)]
pub(crate) enum Instr {
    /// Argument `index`.
    Param { index: usize, slot: usize },
    /// A captured or created tensor, already on its device.
    Constant { memory: Arc<Memory>, slot: usize },
    /// An op (possibly a fused region) on `device`.
    Run {
        op: Op,
        inputs: Vec<usize>,
        device: Device,
        slot: usize,
    },
    /// A copy of `input` to `to`.
    Transfer {
        input: usize,
        to: Device,
        slot: usize,
    },
}

impl Instr {
    fn slot(&self) -> usize {
        match self {
            Instr::Param { slot, .. }
            | Instr::Constant { slot, .. }
            | Instr::Run { slot, .. }
            | Instr::Transfer { slot, .. } => *slot,
        }
    }

    fn reads(&self) -> &[usize] {
        match self {
            Instr::Run { inputs, .. } => inputs,
            Instr::Transfer { input, .. } => std::slice::from_ref(input),
            _ => &[],
        }
    }
}

/// What compilation made of a trace (for the display and the benchmark).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Ops the function called (after dropping those whose results were not used).
    pub ops: usize,
    /// Instructions the program runs.
    pub instructions: usize,
    /// Fused regions among them.
    pub fused_regions: usize,
    /// Ops folded into fused regions.
    pub fused_ops: usize,
}

/// A trace compiled for one device.
#[derive(Debug)]
pub(crate) struct Program {
    instrs: Vec<Instr>,
    /// After instruction `i`, the slots read for the last time there (freed early).
    frees: Vec<Vec<usize>>,
    outputs: Vec<Output>,
    slots: usize,
    pub stats: Stats,
}

impl Program {
    /// Compiles traced `nodes` with these outputs; `fusion` merges elementwise regions.
    pub(crate) fn build(nodes: Vec<Node>, outputs: Vec<Output>, fusion: bool) -> Result<Program> {
        let slots = nodes.len();
        let live = live_nodes(&nodes, &outputs);
        let ops = nodes
            .iter()
            .zip(&live)
            .filter(|(n, &l)| l && matches!(n.kind, NodeKind::Op(_)))
            .count();
        let plan = if fusion {
            fuse::plan(&nodes, &live, &outputs)?
        } else {
            fuse::Plan::none(nodes.len())
        };
        let mut instrs = Vec::new();
        let mut stats = Stats {
            ops,
            ..Stats::default()
        };
        for (slot, node) in nodes.into_iter().enumerate() {
            if !live[slot] || plan.absorbed[slot] {
                continue;
            }
            let instr = match node.kind {
                NodeKind::Param(index) => Instr::Param { index, slot },
                NodeKind::Constant(memory) => Instr::Constant { memory, slot },
                NodeKind::Transfer => {
                    let input = node
                        .inputs
                        .first()
                        .copied()
                        .ok_or(internal("a transfer without input"))?;
                    Instr::Transfer {
                        input,
                        to: node.device,
                        slot,
                    }
                }
                NodeKind::Op(op) => match plan.regions.get(&slot) {
                    Some((fused, inputs)) => {
                        stats.fused_regions += 1;
                        stats.fused_ops += fused.steps.len() + usize::from(fused.reduce.is_some());
                        Instr::Run {
                            op: Op::Fused(Arc::clone(fused)),
                            inputs: inputs.clone(),
                            device: node.device,
                            slot,
                        }
                    }
                    None => Instr::Run {
                        op,
                        inputs: node.inputs,
                        device: node.device,
                        slot,
                    },
                },
            };
            instrs.push(instr);
        }
        stats.instructions = instrs.len();
        let frees = last_reads(&instrs, &outputs, slots);
        Ok(Program {
            instrs,
            frees,
            outputs,
            slots,
            stats,
        })
    }

    /// Runs the program on `args` (already on the program's device, matching its templates).
    pub(crate) fn run(&self, args: &[Tensor]) -> Result<Vec<Tensor>> {
        let mut slots: Vec<Option<Arc<Memory>>> = vec![None; self.slots];
        let get = |slots: &[Option<Arc<Memory>>], s: usize| -> Result<Arc<Memory>> {
            slots
                .get(s)
                .and_then(|m| m.clone())
                .ok_or_else(|| internal("a slot read before it was written"))
        };
        for (instr, frees) in self.instrs.iter().zip(&self.frees) {
            let value = match instr {
                Instr::Param { index, .. } => args
                    .get(*index)
                    .ok_or_else(|| internal("an argument missing"))?
                    .memory()?,
                Instr::Constant { memory, .. } => Arc::clone(memory),
                Instr::Run {
                    op, inputs, device, ..
                } => {
                    let held = inputs
                        .iter()
                        .map(|&s| get(&slots, s))
                        .collect::<Result<Vec<_>>>()?;
                    let refs: Vec<&Memory> = held.iter().map(|m| &**m).collect();
                    Arc::new(dispatch(*device, op, &refs)?)
                }
                Instr::Transfer { input, to, .. } => {
                    let m = get(&slots, *input)?;
                    Arc::new(m.copy_to(*to)?)
                }
            };
            slots[instr.slot()] = Some(value);
            for &s in frees {
                slots[s] = None;
            }
        }
        self.outputs
            .iter()
            .map(|o| {
                let t = Tensor::from_shared(get(&slots, o.slot)?, o.shape.clone(), o.device)?;
                Ok(t.named(o.names.clone()))
            })
            .collect()
    }
}

fn internal(what: &str) -> Error {
    Error::InvalidArgument {
        op: "jit",
        message: format!("internal: {what}"),
    }
}

/// Nodes an output depends on.
fn live_nodes(nodes: &[Node], outputs: &[Output]) -> Vec<bool> {
    let mut live = vec![false; nodes.len()];
    let mut stack: Vec<usize> = outputs.iter().map(|o| o.slot).collect();
    while let Some(n) = stack.pop() {
        if n < live.len() && !live[n] {
            live[n] = true;
            stack.extend(nodes[n].inputs.iter().copied());
        }
    }
    live
}

/// For each instruction, the slots it reads for the last time (outputs are never freed).
fn last_reads(instrs: &[Instr], outputs: &[Output], slots: usize) -> Vec<Vec<usize>> {
    let mut last = vec![None; slots];
    for (i, instr) in instrs.iter().enumerate() {
        for &s in instr.reads() {
            if let Some(l) = last.get_mut(s) {
                *l = Some(i);
            }
        }
    }
    for o in outputs {
        if let Some(l) = last.get_mut(o.slot) {
            *l = None;
        }
    }
    let mut frees = vec![Vec::new(); instrs.len()];
    for (s, l) in last.into_iter().enumerate() {
        if let Some(i) = l {
            frees[i].push(s);
        }
    }
    frees
}
