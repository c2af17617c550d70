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
    /// Per device: JAX's median / jit median, when JAX was timed.
    pub jit_over_jax: Vec<(Device, f64)>,
}

/// The JAX side: the same network, loss and step under `jax.jit` on the CPU, on random data of
/// the same shapes; prints one JSON line with JAX's version and the median step in seconds.
pub const JAX_SCRIPT: &str = r#"
import json, sys, time
try:
    import jax, jax.numpy as jnp, numpy as np
except Exception as e:
    print(json.dumps({"error": f"no JAX: {e}"})); sys.exit(0)
batch, warmup, timed = (int(a) for a in sys.argv[1:4])
rng = np.random.default_rng(0)
x = jnp.asarray(rng.random((batch, 784), dtype=np.float32))
y = jax.nn.one_hot(jnp.asarray(rng.integers(0, 10, batch)), 10, dtype=jnp.float32)
def init(fan_in, fan_out):
    b = 1 / fan_in ** 0.5
    return [jnp.asarray(rng.uniform(-b, b, (fan_in, fan_out)).astype(np.float32)),
            jnp.zeros((fan_out,), jnp.float32)]
params = init(784, 50) + init(50, 10)
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
for _ in range(warmup):
    jax.block_until_ready(step(params, x, y))
times = []
for _ in range(timed):
    t = time.perf_counter()
    jax.block_until_ready(step(params, x, y))
    times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"jax": jax.__version__, "device": str(jax.devices()[0]),
                  "median_s": times[len(times) // 2]}))
"#;

/// Runs the benchmark; `jax` is JAX's median step in seconds, or why there is none.
pub fn run(
    bench: &TrainBench,
    jax: std::result::Result<f64, String>,
    progress: &mut dyn Progress,
) -> Result<TrainFigures> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut jit_over_eager = Vec::new();
    let mut jit_over_jax = Vec::new();
    let step = sgd_step(0.1);
    let label = |kind: &str| format!("sgd step 784-50-10 x{} {kind}", bench.batch);
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
        let place = on(device);
        let x = place.random_uniform(7, DType::F32, &[bench.batch, LAYERS[0]], 0.0, 1.0)?;
        let labels = place.random_uniform(8, DType::U8, &[bench.batch], 0.0, 10.0)?;
        let mut args = init_params(device, 1)?;
        args.push(x);
        args.push(one_hot(&labels, LAYERS[2])?);
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
        let loss_jit = first(step.call(&args)?)?.to_scalar::<f32>()?;
        let ratio = eager.median().as_secs_f64() / compiled.median().as_secs_f64().max(1e-12);
        notes.push(format!(
            "{device}: jit {ratio:.2}x eager (medians {:.2} ms and {:.2} ms); loss {loss_jit:.6} (eager {loss_eager:.6})",
            compiled.median().as_secs_f64() * 1e3,
            eager.median().as_secs_f64() * 1e3,
        ));
        jit_over_eager.push((device, ratio));
        if let Ok(jax) = jax {
            let r = jax / compiled.median().as_secs_f64().max(1e-12);
            notes.push(format!(
                "{device}: jit {r:.2}x JAX's jit on the CPU ({:.2} ms)",
                jax * 1e3
            ));
            jit_over_jax.push((device, r));
        }
        rows.push(Row::Measured(eager));
        rows.push(Row::Measured(compiled));
    }
    if let Err(why) = &jax {
        notes.push(format!("JAX: {why}"));
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
        jit_over_jax,
    })
}
