//! The training benchmark: one step of plain SGD on the 784-50-10 network of notebook 05
//! (`value_and_grad` of softmax cross-entropy, then the update) over a batch of 10,000 images,
//! eager versus jit on each device, beside JAX's `jit` of the same step on the CPU (XLA, the
//! compiler EXLA uses), timed in the same invocation.

use super::{measure, Progress, Report, Row, Runs};
use crate::client::client_info;
use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::jit::grad::value_and_grad_wrt;
use crate::jit::{jit, Jit};
use crate::tensor::Tensor;

/// Pixels in, hidden units, classes out: fast.ai's network.
pub const LAYERS: [usize; 3] = [784, 50, 10];

/// Softmax cross-entropy of the network's logits against one-hot labels, averaged over the
/// batch: `relu(x·w1 + b1)·w2 + b2`, then log-softmax with the row maximum held constant.
pub fn mlp_loss(params: &[Tensor], x: &Tensor, one_hot: &Tensor) -> Result<Tensor> {
    let [w1, b1, w2, b2] = params else {
        return Err(Error::InvalidArgument {
            op: "mlp_loss",
            message: format!("needs 4 parameters (w1, b1, w2, b2), got {}", params.len()),
        });
    };
    let hidden = x.dot(w1)?.add(b1)?.max(0.0)?;
    let logits = hidden.dot(w2)?.add(b2)?;
    let shifted = logits.subtract(&logits.reduce_max_keep([1])?.stop_grad()?)?;
    let log_softmax = shifted.subtract(&shifted.exp()?.sum_keep([1])?.log()?)?;
    log_softmax.multiply(one_hot)?.sum([1])?.mean(..)?.negate()
}

/// One SGD step as a compiled function of `[w1, b1, w2, b2, x, one_hot]`, returning
/// `[loss, w1', b1', w2', b2']` (the loss before the update).
pub fn sgd_step(learning_rate: f64) -> Jit<Vec<Tensor>> {
    let loss = value_and_grad_wrt(
        |a: &[Tensor]| match a {
            [params @ .., x, one_hot] => mlp_loss(params, x, one_hot),
            _ => Err(Error::InvalidArgument {
                op: "sgd_step",
                message: format!(
                    "needs [w1, b1, w2, b2, x, one_hot], got {} tensors",
                    a.len()
                ),
            }),
        },
        &[0, 1, 2, 3],
    );
    sgd_update(loss, learning_rate)
}

/// A compiled SGD step around `loss` (the value and gradients of a function of `[params..,
/// data..]` with respect to the parameters): `[loss, params - learning_rate * grads..]`.
pub fn sgd_update(loss: Jit<(Tensor, Vec<Tensor>)>, learning_rate: f64) -> Jit<Vec<Tensor>> {
    jit(move |a: &[Tensor]| {
        let (value, grads) = loss.call(a)?;
        let mut out = vec![value];
        for (p, g) in a.iter().zip(&grads) {
            out.push(p.subtract(&g.multiply(learning_rate)?)?);
        }
        Ok(out)
    })
}

/// Seeded parameters of the network on `device` (uniform in ±1/√fan-in, biases 0).
pub fn init_params(device: Device, seed: u64) -> Result<Vec<Tensor>> {
    let place = on(device);
    let mut params = Vec::new();
    for (i, pair) in LAYERS.windows(2).enumerate() {
        let (fan_in, fan_out) = (pair[0], pair[1]);
        let bound = 1.0 / (fan_in as f64).sqrt();
        params.push(place.random_uniform(
            seed + i as u64,
            DType::F32,
            &[fan_in, fan_out],
            -bound,
            bound,
        )?);
        params.push(place.zeros(DType::F32, &[fan_out])?);
    }
    Ok(params)
}

/// Labels (any integer dtype, `{n}`) as one-hot f32 rows `{n, classes}`.
pub fn one_hot(labels: &Tensor, classes: usize) -> Result<Tensor> {
    let n = labels.size();
    let place = on(labels.device());
    let columns = place.iota(DType::S64, &[1, classes], Some(1))?;
    labels
        .as_type(DType::S64)?
        .reshape(&[n, 1])?
        .equal(&columns)?
        .as_type(DType::F32)
}

/// What to run.
#[derive(Clone, Debug)]
pub struct TrainBench {
    /// Devices in order; unavailable ones become skipped rows.
    pub devices: Vec<Device>,
    /// Images per step (10,000 in `bench train`'s target, 256 in `bench conv`'s).
    pub batch: usize,
    /// Warm-up and timed runs.
    pub runs: Runs,
}

impl Default for TrainBench {
    fn default() -> TrainBench {
        TrainBench {
            devices: vec![Device::host(0)],
            batch: 10_000,
            runs: Runs {
                warmup: 2,
                timed: 9,
            },
        }
    }
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct TrainFigures {
    /// Eager and jit rows per device, with notes.
    pub report: Report,
    /// Per device: eager median / jit median.
    pub jit_over_eager: Vec<(Device, f64)>,
    /// Per device and reference (`jax`, `torch`): the reference's median / jit median, for
    /// references that computed the same step.
    pub jit_over_references: Vec<(Device, &'static str, f64)>,
}

/// What a reference library computed and how long it took: its step on the inputs
/// [`write_inputs`] wrote, read back by [`read_reference`].
#[derive(Clone, Debug)]
pub struct Reference {
    /// `jax` or `torch`: the key in the script's JSON and in [`TrainFigures`].
    pub key: &'static str,
    /// The library, its version and where it ran, e.g. `JAX 0.10.2 on TFRT_CPU_0`.
    pub name: String,
    /// Median step in seconds.
    pub median_s: f64,
    /// The loss of its first step.
    pub loss: f64,
    /// `w1, b1, w2, b2` after its first step.
    pub params: Vec<Vec<f32>>,
}

/// The references [`REFERENCE_SCRIPT`] times, as keys of its JSON.
pub const REFERENCES: [&str; 2] = ["jax", "torch"];

/// The inputs every side of the comparison computes with, in order: `w1, b1, w2, b2` (seeded as
/// [`init_params`]), the images `x` and their one-hot labels, all f32 on host.
pub fn inputs(batch: usize) -> Result<Vec<Tensor>> {
    let place = on(Device::host(0));
    let x = place.random_uniform(7, DType::F32, &[batch, LAYERS[0]], 0.0, 1.0)?;
    let labels = place.random_uniform(8, DType::U8, &[batch], 0.0, 10.0)?;
    let mut args = init_params(Device::host(0), 1)?;
    args.push(x);
    args.push(one_hot(&labels, LAYERS[2])?);
    Ok(args)
}

/// File names of [`inputs`] in `dir`, as the reference script reads them.
const INPUT_NAMES: [&str; 6] = ["w1", "b1", "w2", "b2", "x", "one_hot"];

/// Writes [`inputs`] into `dir` as raw little-endian f32 files (`w1.f32`, ..., `one_hot.f32`),
/// which the reference script loads, so that every library steps from the same numbers.
pub fn write_inputs(dir: &std::path::Path, batch: usize) -> Result<()> {
    for (name, tensor) in INPUT_NAMES.iter().zip(inputs(batch)?) {
        let bytes: Vec<u8> = tensor
            .to_vec::<f32>()?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let path = dir.join(format!("{name}.f32"));
        std::fs::write(&path, bytes).map_err(|e| Error::InvalidArgument {
            op: "bench train",
            message: format!("cannot write {}: {e}", path.display()),
        })?;
    }
    Ok(())
}

/// Reads the side `key` of the script's JSON and the parameters it wrote into `dir`
/// (`{key}-w1.f32`, ...), or says why that side has no figures.
pub fn read_reference(
    dir: &std::path::Path,
    key: &'static str,
    json: &serde_json::Value,
) -> std::result::Result<Reference, String> {
    let side = &json[key];
    let (Some(name), Some(median_s), Some(loss)) = (
        side["name"].as_str(),
        side["median_s"].as_f64(),
        side["loss"].as_f64(),
    ) else {
        return Err(json[format!("{key}_error")]
            .as_str()
            .unwrap_or("printed no figures")
            .to_string());
    };
    let mut params = Vec::new();
    for name in &INPUT_NAMES[..4] {
        let path = dir.join(format!("{key}-{name}.f32"));
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        params.push(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        );
    }
    Ok(Reference {
        key,
        name: name.to_string(),
        median_s,
        loss,
        params,
    })
}

/// The reference side: the same network, loss and step as JAX's `jit` (pinned to the CPU) and
/// as PyTorch's eager autograd, each from the inputs in `argv[1]`; each writes its first step's
/// parameters beside them and prints its first loss and median step in one JSON line.
/// PyTorch is timed as its users write a step: `backward()` and an in-place update.
pub const REFERENCE_SCRIPT: &str = r#"
import json, os, sys, time
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np
folder = sys.argv[1]
batch, warmup, timed = (int(a) for a in sys.argv[2:5])
shapes = {"w1": (784, 50), "b1": (50,), "w2": (50, 10), "b2": (10,),
          "x": (batch, 784), "one_hot": (batch, 10)}
def load(name):
    return np.fromfile(os.path.join(folder, name + ".f32"), dtype="<f4").reshape(shapes[name])
params = [load(n) for n in ("w1", "b1", "w2", "b2")]
x, onehot = load("x"), load("one_hot")
def save(key, new):
    for n, a in zip(("w1", "b1", "w2", "b2"), new):
        np.asarray(a, dtype="<f4").tofile(os.path.join(folder, f"{key}-{n}.f32"))
def median(f):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(timed):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]
out = {}
try:
    import jax, jax.numpy as jnp
    def loss(p, x, y):
        w1, b1, w2, b2 = p
        z = jnp.maximum(x @ w1 + b1, 0.0) @ w2 + b2
        z = z - jax.lax.stop_gradient(z.max(axis=1, keepdims=True))
        ls = z - jnp.log(jnp.exp(z).sum(axis=1, keepdims=True))
        return -(ls * y).sum(axis=1).mean()
    @jax.jit
    def step(p, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return value, [a - 0.1 * g for a, g in zip(p, grads)]
    jp, jx, jy = [jnp.asarray(a) for a in params], jnp.asarray(x), jnp.asarray(onehot)
    value, new = jax.block_until_ready(step(jp, jx, jy))
    save("jax", new)
    out["jax"] = {"name": f"JAX {jax.__version__} jit on {jax.devices()[0]}",
                  "loss": float(value),
                  "median_s": median(lambda: jax.block_until_ready(step(jp, jx, jy)))}
except Exception as e:
    out["jax_error"] = f"no JAX: {e}"
try:
    import torch
    tp = [torch.tensor(a, requires_grad=True) for a in params]
    tx, ty = torch.tensor(x), torch.tensor(onehot)
    def tloss():
        w1, b1, w2, b2 = tp
        z = torch.relu(tx @ w1 + b1) @ w2 + b2
        return -(torch.log_softmax(z, 1) * ty).sum(1).mean()
    value = tloss()
    grads = torch.autograd.grad(value, tp)
    with torch.no_grad():
        save("torch", [(a - 0.1 * g).numpy() for a, g in zip(tp, grads)])
    def tstep():
        l = tloss()
        l.backward()
        with torch.no_grad():
            for a in tp:
                a -= 0.1 * a.grad
                a.grad = None
    out["torch"] = {"name": f"PyTorch {torch.__version__} eager ({torch.get_num_threads()} threads)",
                    "loss": float(value), "median_s": median(tstep)}
except Exception as e:
    out["torch_error"] = f"no PyTorch: {e}"
print(json.dumps(out))
"#;

/// How far a reference's first step may land from tensorbook's and still be the same step:
/// f32 sums over 10,000 images in another order differ in the last few bits.
const SAME_LOSS: f64 = 1e-4;
const SAME_PARAMS: f64 = 1e-5;

/// The largest difference between `new` (tensorbook's parameters after the step) and the
/// reference's, or why they cannot be compared.
fn largest_difference(new: &[Tensor], reference: &Reference) -> Result<f64> {
    let mut largest = 0.0f64;
    for (tensor, theirs) in new.iter().zip(&reference.params) {
        let ours = tensor.to_vec::<f32>()?;
        if ours.len() != theirs.len() {
            return Err(Error::InvalidArgument {
                op: "bench train",
                message: format!(
                    "{} wrote {} numbers for a parameter of {}",
                    reference.name,
                    theirs.len(),
                    ours.len()
                ),
            });
        }
        for (a, b) in ours.iter().zip(theirs) {
            largest = largest.max((f64::from(*a) - f64::from(*b)).abs());
        }
    }
    Ok(largest)
}

/// Runs the benchmark beside the references measured on the inputs of [`inputs`] (or why each
/// is missing). A reference whose first step differs from tensorbook's gets no ratio.
pub fn run(
    bench: &TrainBench,
    references: &[std::result::Result<Reference, String>],
    progress: &mut dyn Progress,
) -> Result<TrainFigures> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut jit_over_eager = Vec::new();
    let mut jit_over_references = Vec::new();
    let step = sgd_step(0.1);
    let label = |kind: &str| format!("sgd step 784-50-10 x{} {kind}", bench.batch);
    let on_host = inputs(bench.batch)?;
    for &device in &bench.devices {
        let info = client_info(device.client);
        if !info.available {
            for kind in ["eager", "jit"] {
                rows.push(Row::Skipped {
                    // As a measured row is labelled (`measure` adds the device).
                    label: format!("{} @ {device}", label(kind)),
                    reason: info.reason.clone().unwrap_or_else(|| "unavailable".into()),
                });
            }
            continue;
        }
        let args = on_host
            .iter()
            .map(|t| t.backend_transfer(device))
            .collect::<Result<Vec<_>>>()?;
        let first = |t: Vec<Tensor>| {
            t.into_iter().next().ok_or_else(|| Error::InvalidArgument {
                op: "bench train",
                message: "the step returned nothing".into(),
            })
        };
        let eager_step = step.eager();
        let eager = measure(&label("eager"), bench.runs, progress, || {
            first(eager_step.call(&args)?)
        })?;
        let compiled = measure(&label("jit"), bench.runs, progress, || {
            first(step.call(&args)?)
        })?;
        let loss_eager = first(eager_step.call(&args)?)?.to_scalar::<f32>()?;
        let mut stepped = step.call(&args)?;
        let loss_jit = first(stepped.clone())?.to_scalar::<f32>()?;
        let jit_s = compiled.median().as_secs_f64().max(1e-12);
        let ratio = eager.median().as_secs_f64() / jit_s;
        notes.push(format!(
            "{device}: jit {ratio:.2}x eager (medians {:.2} ms and {:.2} ms); loss {loss_jit:.6} (eager {loss_eager:.6})",
            jit_s * 1e3,
            eager.median().as_secs_f64() * 1e3,
        ));
        jit_over_eager.push((device, ratio));
        let new_params = stepped.split_off(1);
        for reference in references.iter().flatten() {
            let loss_gap = (reference.loss - f64::from(loss_jit)).abs();
            let params_gap = largest_difference(&new_params, reference)?;
            let same =
                loss_gap <= SAME_LOSS * reference.loss.abs().max(1.0) && params_gap <= SAME_PARAMS;
            let r = reference.median_s / jit_s;
            if same {
                notes.push(format!(
                    "{device}: jit {r:.2}x {} ({:.2} ms); the same step: loss {:.6}, parameters within {params_gap:.1e}",
                    reference.name,
                    reference.median_s * 1e3,
                    reference.loss,
                ));
                jit_over_references.push((device, reference.key, r));
            } else {
                notes.push(format!(
                    "{device}: no ratio to {}: its step differs (loss {:.6} against {loss_jit:.6}, parameters by up to {params_gap:.1e})",
                    reference.name, reference.loss,
                ));
            }
        }
        rows.push(Row::Measured(eager));
        rows.push(Row::Measured(compiled));
    }
    for why in references.iter().filter_map(|r| r.as_ref().err()) {
        notes.push(why.clone());
    }
    progress.finish();
    Ok(TrainFigures {
        report: Report {
            title: format!(
                "train: one SGD step of a 784-50-10 network on {} images",
                bench.batch
            ),
            rows,
            notes,
        },
        jit_over_eager,
        jit_over_references,
    })
}
