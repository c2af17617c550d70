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
use super::graph::{Body, Control, Node, NodeKind, Output};

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
    /// A loop or branch over `inputs` (see [`Control`] for their order); its slot holds a
    /// tuple.
    Control {
        control: Compiled,
        inputs: Vec<usize>,
        slot: usize,
    },
    /// Entry `index` of the tuple in slot `input`.
    Project {
        input: usize,
        index: usize,
        slot: usize,
    },
}

/// A control node with its bodies compiled.
#[derive(Debug)]
pub(crate) enum Compiled {
    While {
        condition: SubProgram,
        body: SubProgram,
    },
    Cond {
        then: SubProgram,
        otherwise: SubProgram,
    },
}

/// A body compiled, and where its captured values are among the control node's inputs.
#[derive(Debug)]
pub(crate) struct SubProgram {
    program: Program,
    captures: std::ops::Range<usize>,
}

/// What a slot holds while a program runs.
#[derive(Clone)]
enum Held {
    One(Arc<Memory>),
    Tuple(Arc<Vec<Arc<Memory>>>),
}

impl Instr {
    fn slot(&self) -> usize {
        match self {
            Instr::Param { slot, .. }
            | Instr::Constant { slot, .. }
            | Instr::Run { slot, .. }
            | Instr::Transfer { slot, .. }
            | Instr::Control { slot, .. }
            | Instr::Project { slot, .. } => *slot,
        }
    }

    fn reads(&self) -> &[usize] {
        match self {
            Instr::Run { inputs, .. } | Instr::Control { inputs, .. } => inputs,
            Instr::Transfer { input, .. } | Instr::Project { input, .. } => {
                std::slice::from_ref(input)
            }
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
                NodeKind::Control(control) => {
                    let lead = match &*control {
                        Control::While { body, .. } => body.outputs.len(),
                        Control::Cond { .. } => 1,
                    };
                    let control = compile_control(&control, lead, fusion)?;
                    let [a, b] = control.programs();
                    for p in [a, b] {
                        stats.ops += p.stats.ops;
                        stats.instructions += p.stats.instructions;
                        stats.fused_regions += p.stats.fused_regions;
                        stats.fused_ops += p.stats.fused_ops;
                    }
                    Instr::Control {
                        control,
                        inputs: node.inputs,
                        slot,
                    }
                }
                NodeKind::Project(index) => Instr::Project {
                    input: node
                        .inputs
                        .first()
                        .copied()
                        .ok_or(internal("a projection without input"))?,
                    index,
                    slot,
                },
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
        stats.instructions += instrs.len();
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
        let args = args
            .iter()
            .map(|a| a.memory())
            .collect::<Result<Vec<_>>>()?;
        let results = self.run_memories(&args)?;
        self.outputs
            .iter()
            .zip(results)
            .map(|(o, m)| {
                let t = Tensor::from_shared(m, o.shape.clone(), o.device)?;
                Ok(t.named(o.names.clone()))
            })
            .collect()
    }

    /// Runs the program on the memory of its arguments and returns its results' memory.
    fn run_memories(&self, args: &[Arc<Memory>]) -> Result<Vec<Arc<Memory>>> {
        let mut slots: Vec<Option<Held>> = vec![None; self.slots];
        for (instr, frees) in self.instrs.iter().zip(&self.frees) {
            let value = match instr {
                Instr::Param { index, .. } => Held::One(Arc::clone(
                    args.get(*index)
                        .ok_or_else(|| internal("an argument missing"))?,
                )),
                Instr::Constant { memory, .. } => Held::One(Arc::clone(memory)),
                Instr::Run {
                    op, inputs, device, ..
                } => {
                    let held = inputs
                        .iter()
                        .map(|&s| one(&slots, s))
                        .collect::<Result<Vec<_>>>()?;
                    let refs: Vec<&Memory> = held.iter().map(|m| &**m).collect();
                    Held::One(Arc::new(dispatch(*device, op, &refs)?))
                }
                Instr::Transfer { input, to, .. } => {
                    Held::One(Arc::new(one(&slots, *input)?.copy_to(*to)?))
                }
                Instr::Control {
                    control, inputs, ..
                } => {
                    let held = inputs
                        .iter()
                        .map(|&s| one(&slots, s))
                        .collect::<Result<Vec<_>>>()?;
                    Held::Tuple(Arc::new(control.run(&held)?))
                }
                Instr::Project { input, index, .. } => match slots.get(*input) {
                    Some(Some(Held::Tuple(t))) => Held::One(Arc::clone(
                        t.get(*index)
                            .ok_or_else(|| internal("a projection past its tuple"))?,
                    )),
                    _ => return Err(internal("a projection of no tuple")),
                },
            };
            slots[instr.slot()] = Some(value);
            for &s in frees {
                slots[s] = None;
            }
        }
        self.outputs.iter().map(|o| one(&slots, o.slot)).collect()
    }
}

fn one(slots: &[Option<Held>], s: usize) -> Result<Arc<Memory>> {
    match slots.get(s) {
        Some(Some(Held::One(m))) => Ok(Arc::clone(m)),
        Some(Some(Held::Tuple(_))) => Err(internal("a tuple read as one value")),
        _ => Err(internal("a slot read before it was written")),
    }
}

/// Compiles a control node's bodies; `lead` inputs come before the first body's captures.
fn compile_control(control: &Control, lead: usize, fusion: bool) -> Result<Compiled> {
    let [a, b] = control.bodies();
    let first = lead..lead + a.captures.len();
    let second = first.end..first.end + b.captures.len();
    let sub = |body: &Body, captures| -> Result<SubProgram> {
        Ok(SubProgram {
            program: Program::build(body.nodes.clone(), body.outputs.clone(), fusion)?,
            captures,
        })
    };
    Ok(match control {
        Control::While { .. } => Compiled::While {
            condition: sub(a, first)?,
            body: sub(b, second)?,
        },
        Control::Cond { .. } => Compiled::Cond {
            then: sub(a, first)?,
            otherwise: sub(b, second)?,
        },
    })
}

impl Compiled {
    fn programs(&self) -> [&Program; 2] {
        match self {
            Compiled::While { condition, body } => [&condition.program, &body.program],
            Compiled::Cond { then, otherwise } => [&then.program, &otherwise.program],
        }
    }

    /// Runs the loop or the branch over the node's inputs; returns the tuple it produces.
    fn run(&self, inputs: &[Arc<Memory>]) -> Result<Vec<Arc<Memory>>> {
        let captured = |sub: &SubProgram| -> Result<&[Arc<Memory>]> {
            inputs
                .get(sub.captures.clone())
                .ok_or_else(|| internal("captures missing"))
        };
        match self {
            Compiled::While { condition, body } => {
                let lead = condition.captures.start;
                let mut state: Vec<Arc<Memory>> = inputs
                    .get(..lead)
                    .ok_or_else(|| internal("the state missing"))?
                    .to_vec();
                let (cond_captures, body_captures) = (captured(condition)?, captured(body)?);
                loop {
                    // A loop of no ops passes no other safe point for an interrupt.
                    crate::interrupt::check()?;
                    let mut args = state.clone();
                    args.extend_from_slice(cond_captures);
                    let go = condition.program.run_memories(&args)?;
                    if !truthy(go.first().ok_or_else(|| internal("no condition"))?)? {
                        return Ok(state);
                    }
                    state.extend_from_slice(body_captures);
                    state = body.program.run_memories(&state)?;
                }
            }
            Compiled::Cond { then, otherwise } => {
                let predicate = inputs.first().ok_or_else(|| internal("no predicate"))?;
                let chosen = if truthy(predicate)? { then } else { otherwise };
                chosen.program.run_memories(captured(chosen)?)
            }
        }
    }
}

/// A scalar's truth as Nx's `while` and `if` read it: anything but zero. Reading it waits for
/// the device (only this one value comes back).
pub(crate) fn truthy(memory: &Memory) -> Result<bool> {
    let host = memory.to_host()?;
    Ok(crate::buffer::with_buffer!(&*host, v => v
        .first()
        .is_some_and(|x| crate::element::Element::to_f64(*x) != 0.0)))
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
