//! Loops and branches that run where the data are, as `while` and `if` inside Nx's `defn`.
//!
//! Outside a trace, [`while_loop`] and [`cond`] are the Rust loop and branch over eager ops.
//! Inside one (a `jit`, `grad` or `stream` function), each body is traced once into a graph of
//! its own (values of the enclosing trace it uses become captured parameters) and the loop or
//! branch becomes one node of the trace, so the compiled program decides at run time: the trip
//! count may depend on the data, and one compilation serves every input. Only the condition's
//! scalar is read back from the device.
//!
//! ```
//! use tensorbook::{jit, on, while_loop, Device, Tensor};
//! // Newton's method for a square root, until the step is below a tolerance.
//! let sqrt = jit(|a: &Tensor| {
//!     let (x, _) = while_loop(
//!         (a.clone(), a.clone()),
//!         |(_, step)| step.abs()?.greater(1e-6),
//!         |(x, _)| {
//!             let next = x.add(&a.divide(x)?)?.multiply(0.5)?;
//!             Ok((next.clone(), next.subtract(x)?))
//!         },
//!     )?;
//!     Ok(x)
//! });
//! let a = on(Device::host(0)).from_vec(vec![2.0f64], &[])?;
//! assert!((sqrt.call(&a)?.to_scalar::<f64>()? - 2f64.sqrt()).abs() < 1e-12);
//! # Ok::<(), tensorbook::Error>(())
//! ```

use std::sync::Arc;

use super::graph::{describe, Body, Control, Graph, Node, NodeKind, Output};
use super::program::truthy;
use super::trace::{self, node_of};
use super::{JitOutput, Template};
use crate::error::{Error, Result};
use crate::tensor::{Tensor, Value};

/// Runs `body` on the state while `condition` of the state is not zero, and returns the last
/// state (Nx's `while`). The state is a tensor or a tuple (or `Vec`) of tensors; `body`
/// returns one of the same dtypes and shapes, `condition` a scalar of any dtype (0 is false).
/// Inside a compiled function the loop is part of the program (traced once, run on the
/// device); outside, it is a Rust loop.
pub fn while_loop<S, C, B>(initial: S, condition: C, body: B) -> Result<S>
where
    S: JitOutput + Clone,
    C: Fn(&S) -> Result<Tensor>,
    B: Fn(&S) -> Result<S>,
{
    let Some(parent) = trace::current() else {
        return eager_while(initial, condition, body);
    };
    let initial = initial.into_tensors();
    if initial.is_empty() {
        return Err(invalid("while_loop", "the state holds no tensor".into()));
    }
    let templates: Vec<Template> = initial.iter().map(Template::of).collect();
    let condition_body = trace_body(&parent, &templates, |params| {
        let state = S::from_tensors(params.to_vec())?;
        let c = condition(&state)?;
        check_predicate("while_loop", "the condition", &c)?;
        Ok(vec![c])
    })?;
    let loop_body = trace_body(&parent, &templates, |params| {
        let state = S::from_tensors(params.to_vec())?;
        let next = body(&state)?.into_tensors();
        check_same(
            "while_loop",
            "the body",
            "the initial state",
            &initial,
            &next,
        )?;
        Ok(next)
    })?;
    let results = record_control(
        &parent,
        Control::While {
            condition: condition_body,
            body: loop_body,
        },
        &initial,
    )?;
    let results = results
        .into_iter()
        .zip(&initial)
        .map(|(r, i)| r.named_like(i))
        .collect();
    S::from_tensors(results)
}

/// Runs `body(i, state)` for `i` in `range` (an `s64` scalar each time), as JAX's `fori_loop`
/// and Nx's `while state, i <- a..b`: a [`while_loop`] over the counter and the state, so the
/// loop is in the program and the range may be long without a long trace.
pub fn fori_loop<S, B>(range: std::ops::Range<i64>, initial: S, body: B) -> Result<S>
where
    S: JitOutput + Clone,
    B: Fn(&Tensor, &S) -> Result<S>,
{
    let state = initial.into_tensors();
    let device = state
        .first()
        .map(|t| t.device())
        .ok_or_else(|| invalid("fori_loop", "the state holds no tensor".into()))?;
    let place = crate::create::on(device);
    let mut with_counter = vec![place.from_vec(vec![range.start], &[])?];
    with_counter.extend(state);
    let end = place.from_vec(vec![range.end], &[])?;
    let mut done = while_loop(
        with_counter,
        |s| s[0].less(&end),
        |s| {
            let (i, rest) = s.split_first().ok_or_else(|| internal("no counter"))?;
            let next = body(i, &S::from_tensors(rest.to_vec())?)?;
            let mut out = vec![i.add(1)?];
            out.extend(next.into_tensors());
            Ok(out)
        },
    )?;
    done.remove(0);
    S::from_tensors(done)
}

fn eager_while<S, C, B>(initial: S, condition: C, body: B) -> Result<S>
where
    S: JitOutput + Clone,
    C: Fn(&S) -> Result<Tensor>,
    B: Fn(&S) -> Result<S>,
{
    let templates = initial.clone().into_tensors();
    let mut state = initial;
    loop {
        crate::interrupt::check()?;
        let c = condition(&state)?;
        check_predicate("while_loop", "the condition", &c)?;
        if !truthy(&*c.memory()?)? {
            return Ok(state);
        }
        let next = body(&state)?;
        check_same(
            "while_loop",
            "the body",
            "the initial state",
            &templates,
            &next.clone().into_tensors(),
        )?;
        state = next;
    }
}

/// `then()` when `predicate` (a scalar of any dtype) is not zero, `otherwise()` when it is
/// (Nx's `if`). Inside a compiled function with a traced predicate both branches are traced
/// and the program runs the one the predicate chooses; they must return tensors of the same
/// dtypes and shapes. Otherwise it is a Rust `if`.
pub fn cond<O, T, E>(predicate: &Tensor, then: T, otherwise: E) -> Result<O>
where
    O: JitOutput,
    T: FnOnce() -> Result<O>,
    E: FnOnce() -> Result<O>,
{
    check_predicate("cond", "the predicate", predicate)?;
    let parent = match predicate.value()? {
        Value::Placeholder(_) => trace::current(),
        Value::Memory(_) => None,
    };
    // A predicate with a value (or outside any trace) decides now, as a Rust `if`.
    let Some(parent) = parent else {
        return if truthy(&*predicate.memory()?)? {
            then()
        } else {
            otherwise()
        };
    };
    let then_body = trace_body(&parent, &[], |_| Ok(then()?.into_tensors()))?;
    let otherwise_body = trace_body(&parent, &[], |_| Ok(otherwise()?.into_tensors()))?;
    let shapes = |b: &Body| -> Vec<String> {
        b.outputs
            .iter()
            .map(|o| {
                let dtype = b.nodes.get(o.slot).map(|n| n.dtype);
                dtype.map_or_else(String::new, |d| describe(d, &o.shape))
            })
            .collect()
    };
    let (a, b) = (shapes(&then_body), shapes(&otherwise_body));
    if a != b {
        return Err(invalid(
            "cond",
            format!(
                "both branches must return tensors of the same dtypes and shapes: the first \
                 returned ({}), the second ({})",
                a.join(", "),
                b.join(", ")
            ),
        ));
    }
    let results = record_control(
        &parent,
        Control::Cond {
            then: then_body,
            otherwise: otherwise_body,
        },
        std::slice::from_ref(predicate),
    )?;
    O::from_tensors(results)
}

/// Records `control` into `parent` over `lead` (the state or the predicate) and the bodies'
/// captures; returns a placeholder for each of its results.
pub(crate) fn record_control(
    parent: &Arc<Graph>,
    control: Control,
    lead: &[Tensor],
) -> Result<Vec<Tensor>> {
    let mut inputs = lead
        .iter()
        .map(|t| node_of(parent, t))
        .collect::<Result<Vec<_>>>()?;
    let [a, b] = control.bodies();
    inputs.extend(a.captures.iter().chain(&b.captures));
    let outputs: Vec<(Node, Vec<Option<String>>)> = control.bodies()[1]
        .outputs
        .iter()
        .map(|o| {
            let node = control.bodies()[1]
                .nodes
                .get(o.slot)
                .ok_or_else(|| internal("a body's result missing"))?;
            // The result's own shape: a reshape records no op, so its node may have another.
            let node = Node {
                shape: o.shape.clone(),
                ..node.clone()
            };
            Ok((node, o.names.clone()))
        })
        .collect::<Result<_>>()?;
    let device = outputs
        .first()
        .map(|(n, _)| n.device)
        .or_else(|| lead.first().map(|t| t.device()))
        .ok_or_else(|| internal("a control node with no value"))?;
    let node = parent.push(Node {
        kind: NodeKind::Control(Arc::new(control)),
        inputs,
        device,
        dtype: outputs
            .first()
            .map_or(crate::dtype::DType::U8, |(n, _)| n.dtype),
        shape: Vec::new(),
    });
    outputs
        .into_iter()
        .enumerate()
        .map(|(k, (out, names))| {
            let project = Node {
                kind: NodeKind::Project(k),
                inputs: vec![node],
                device: out.device,
                dtype: out.dtype,
                shape: out.shape,
            };
            let at = parent.push(project.clone());
            let t = trace::placeholder_of(parent, at, &project)?;
            Ok(if names.iter().any(Option::is_some) {
                t.named(names)
            } else {
                t
            })
        })
        .collect()
}

/// Traces `f` into a body of `parent` whose explicit parameters have the templates of
/// `explicit`.
pub(crate) fn trace_body(
    parent: &Arc<Graph>,
    explicit: &[Template],
    f: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<Body> {
    let graph = Arc::new(Graph::body_of(parent, explicit.len()));
    let params = explicit
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let p = trace::param(&graph, i, t.dtype, &t.shape, t.device)?;
            Ok(if t.names.is_empty() {
                p
            } else {
                p.named(t.names.clone())
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let outputs = {
        let _inside = trace::enter(&graph);
        let results = f(&params)?;
        results
            .iter()
            .enumerate()
            .map(|(k, t)| {
                // A result made on another device (a constant) joins the loop's device.
                let t = match explicit.get(k) {
                    Some(e) if e.device != t.device() => t.to_device(e.device)?,
                    _ => t.clone(),
                };
                Ok(Output {
                    slot: node_of(&graph, &t)?,
                    shape: t.shape().to_vec(),
                    device: t.device(),
                    names: t.names(),
                })
            })
            .collect::<Result<Vec<_>>>()?
    };
    drop(params);
    Ok(graph.finish(outputs))
}

fn check_predicate(op: &'static str, what: &str, t: &Tensor) -> Result<()> {
    if t.rank() == 0 {
        return Ok(());
    }
    Err(invalid(
        op,
        format!(
            "{what} must be a scalar tensor (0 is false, anything else true), got {}",
            t.signature()
        ),
    ))
}

fn check_same(
    op: &'static str,
    what: &str,
    against: &str,
    expected: &[Tensor],
    got: &[Tensor],
) -> Result<()> {
    let describe_all = |ts: &[Tensor]| -> String {
        ts.iter()
            .map(|t| describe(t.dtype(), t.shape()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let same = expected.len() == got.len()
        && expected
            .iter()
            .zip(got)
            .all(|(e, g)| e.dtype() == g.dtype() && e.shape() == g.shape());
    if same {
        return Ok(());
    }
    Err(invalid(
        op,
        format!(
            "{what} must return tensors of the dtypes and shapes of {against}: it returned \
             ({}) for ({})",
            describe_all(got),
            describe_all(expected)
        ),
    ))
}

fn invalid(op: &'static str, message: String) -> Error {
    Error::InvalidArgument { op, message }
}

fn internal(what: &str) -> Error {
    invalid("jit", format!("internal: {what}"))
}
