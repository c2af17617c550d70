//! A fused region run one step at a time with a backend's own ops: how `binary` (the
//! reference) and `cuda` (for a region no generated kernel covers) run it.

use super::fused::{Arg, Fused, StepOp};
use super::{Op, Strided};
use crate::error::{Error, Result};

/// Runs a fused region one step at a time with a backend's own ops (`exec` runs one op on
/// that backend's memory), materialising every step: how `binary` (the reference) and `cuda`
/// run it. Each step is the very op eager code would have run, so the result is the eager one.
pub fn run_stepwise<M>(
    fused: &Fused,
    inputs: &[&M],
    exec: impl Fn(&Op, &[&M]) -> Result<M>,
) -> Result<M> {
    fused.validate()?;
    if inputs.len() != fused.inputs.len() {
        return Err(Error::InvalidArgument {
            op: "fused",
            message: format!(
                "internal: {} inputs given, {} expected",
                inputs.len(),
                fused.inputs.len()
            ),
        });
    }
    let shape = &fused.shape;
    let plain = Strided::contiguous(shape);
    let mut results: Vec<M> = Vec::with_capacity(fused.steps.len());
    // Inputs a unary step or a cast reads through a view: materialised first, once.
    let mut materialised: Vec<Option<M>> = (0..inputs.len()).map(|_| None).collect();
    for step in &fused.steps {
        let out = match step.op {
            StepOp::Binary(op) => {
                let (x, vx) = operand(fused, inputs, &results, &plain, step.args[0]);
                let (y, vy) = operand(fused, inputs, &results, &plain, step.args[1]);
                exec(
                    &Op::Binary {
                        op,
                        lhs: vx,
                        rhs: vy,
                        out_shape: shape.clone(),
                    },
                    &[x, y],
                )?
            }
            StepOp::Unary(_) | StepOp::Cast(_) => {
                let x: &M = match step.args[0] {
                    Arg::Step(j) => &results[j],
                    Arg::Input(i) if fused.inputs[i].view.is_contiguous(shape) => inputs[i],
                    Arg::Input(i) => {
                        if materialised[i].is_none() {
                            let copy = exec(
                                &Op::CopyStrided {
                                    view: fused.inputs[i].view.clone(),
                                    out_shape: shape.clone(),
                                },
                                &[inputs[i]],
                            )?;
                            materialised[i] = Some(copy);
                        }
                        materialised[i].as_ref().ok_or(Error::InvalidArgument {
                            op: "fused",
                            message: "internal: an input not materialised".into(),
                        })?
                    }
                };
                let op = match step.op {
                    StepOp::Unary(u) => Op::Unary(u),
                    StepOp::Cast(d) => Op::Cast(d),
                    StepOp::Binary(_) => unreachable_binary()?,
                };
                exec(&op, &[x])?
            }
        };
        results.push(out);
    }
    let last = results.pop().ok_or(Error::InvalidArgument {
        op: "fused",
        message: "internal: a fused region without steps".into(),
    })?;
    match &fused.reduce {
        None => Ok(last),
        Some((op, axes)) => exec(
            &Op::Reduce {
                op: *op,
                shape: shape.clone(),
                axes: axes.clone(),
            },
            &[&last],
        ),
    }
}

/// A binary step's operand with the view it is read through.
fn operand<'a, M>(
    fused: &Fused,
    inputs: &[&'a M],
    results: &'a [M],
    plain: &Strided,
    arg: Arg,
) -> (&'a M, Strided) {
    match arg {
        Arg::Input(i) => (inputs[i], fused.inputs[i].view.clone()),
        Arg::Step(j) => (&results[j], plain.clone()),
    }
}

fn unreachable_binary() -> Result<Op> {
    Err(Error::InvalidArgument {
        op: "fused",
        message: "internal: a binary step among unary ones".into(),
    })
}
