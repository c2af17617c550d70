//! The convolution benchmark: single 2-D convolutions forward (3x3 and 5x5 kernels, stride 1
//! and 2, 1 to 64 channels), and one SGD step (forward, backward, update) of notebook 06's CNN
//! (five stride-2 3x3 convolutions, 28x28 digits down to 10 logits) at batch 256, eager and
//! jit per device, beside JAX's `jit` (XLA's CPU convolutions) and PyTorch on the CPU (oneDNN)
//! when the chosen Python has them, timed in the same invocation.

use super::{measure, Progress, Report, Row};
use crate::client::client_info;
use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::jit::grad::value_and_grad_wrt;
use crate::jit::Jit;
use crate::ops::conv::Conv;
use crate::tensor::Tensor;

use super::train::{one_hot, sgd_update};

/// The CNN's channels, from the digit's one to the ten logits.
pub const CHANNELS: [usize; 6] = [1, 8, 16, 32, 64, 10];

/// One forward convolution of the benchmark: input `[n, c, h, w]`, kernel `[o, c, k, k]`,
/// stride, padding `k / 2` on every side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Batch, channels, height, width.
    pub input: [usize; 4],
    /// Output channels.
    pub out_channels: usize,
    /// Kernel side.
    pub kernel: usize,
    /// Stride on both axes.
    pub stride: usize,
}

impl ConvShape {
    fn label(&self) -> String {
        let [n, c, h, w] = self.input;
        format!(
            "conv {n}x{c}x{h}x{w} by {}x{c}x{k}x{k} /{}",
            self.out_channels,
            self.stride,
            k = self.kernel
        )
    }

    fn options(&self) -> Conv {
        let p = (self.kernel / 2) as i64;
        Conv::new().strides(self.stride).padding([(p, p), (p, p)])
    }
}

/// The forward shapes: the CNN's first and a middle layer at batch 256, then wider layers.
pub const SHAPES: [ConvShape; 6] = [
    ConvShape {
        input: [256, 1, 28, 28],
        out_channels: 8,
        kernel: 3,
        stride: 2,
    },
    ConvShape {
        input: [256, 16, 7, 7],
        out_channels: 32,
        kernel: 3,
        stride: 2,
    },
    ConvShape {
        input: [64, 1, 28, 28],
        out_channels: 16,
        kernel: 5,
        stride: 1,
    },
    ConvShape {
        input: [64, 16, 28, 28],
        out_channels: 32,
        kernel: 3,
        stride: 1,
    },
    ConvShape {
        input: [64, 32, 14, 14],
        out_channels: 64,
        kernel: 5,
        stride: 1,
    },
    ConvShape {
        input: [64, 64, 14, 14],
        out_channels: 64,
        kernel: 3,
        stride: 2,
    },
];

/// The CNN's logits: each layer a stride-2 3x3 convolution (padding 1) plus a bias, ReLU
/// between layers; `[n, 1, 28, 28]` digits become `[n, 10]`.
pub fn cnn_logits(params: &[Tensor], x: &Tensor) -> Result<Tensor> {
    if !params.len().is_multiple_of(2) || params.is_empty() {
        return Err(Error::InvalidArgument {
            op: "cnn_logits",
            message: format!("needs kernel and bias pairs, got {} tensors", params.len()),
        });
    }
    let layers = params.len() / 2;
    let mut h = x.clone();
    for (i, pair) in params.chunks(2).enumerate() {
        let (k, b) = (&pair[0], &pair[1]);
        let bias = b.reshape(&[1, b.size(), 1, 1])?;
        h = h
            .conv(k, Conv::new().strides(2).padding([(1, 1), (1, 1)]))?
            .add(&bias)?;
        if i + 1 < layers {
            h = h.max(0.0)?;
        }
    }
    let n = h.shape()[0];
    h.reshape(&[n, h.size() / n.max(1)])
}

/// Softmax cross-entropy of the CNN's logits against one-hot labels, averaged over the batch.
pub fn cnn_loss(params: &[Tensor], x: &Tensor, one_hot: &Tensor) -> Result<Tensor> {
    let logits = cnn_logits(params, x)?;
    let log_softmax = logits.subtract(&logits.logsumexp_keep([1])?)?;
    log_softmax.multiply(one_hot)?.sum([1])?.mean(..)?.negate()
}

/// Seeded kernels and zero biases for [`CHANNELS`] on `device` (uniform in ±1/√fan-in).
pub fn init_cnn(device: Device, seed: u64) -> Result<Vec<Tensor>> {
    let place = on(device);
    let mut params = Vec::new();
    for (i, pair) in CHANNELS.windows(2).enumerate() {
        let (c, o) = (pair[0], pair[1]);
        let bound = 1.0 / ((c * 9) as f64).sqrt();
        params.push(place.random_uniform(
            seed + i as u64,
            DType::F32,
            &[o, c, 3, 3],
            -bound,
            bound,
        )?);
        params.push(place.zeros(DType::F32, &[o])?);
    }
    Ok(params)
}

/// One SGD step of the CNN as a compiled function of `[k1, b1, ..., x, one_hot]`, returning
/// `[loss, k1', b1', ...]` (the loss before the update).
pub fn cnn_step(learning_rate: f64) -> Jit<Vec<Tensor>> {
    let wanted: Vec<usize> = (0..2 * (CHANNELS.len() - 1)).collect();
    let loss = value_and_grad_wrt(
        |a: &[Tensor]| match a {
            [params @ .., x, one_hot] => cnn_loss(params, x, one_hot),
            _ => Err(Error::InvalidArgument {
                op: "cnn_step",
                message: format!("needs the parameters, x and one_hot, got {}", a.len()),
            }),
        },
        &wanted,
    );
    sgd_update(loss, learning_rate)
}

/// What to run: the devices, the images per training step (256 in the target) and the runs.
pub type ConvBench = super::train::TrainBench;

/// Median seconds of one library's side: each forward shape (as [`SHAPES`]) and the step.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    /// The library and its version, e.g. `JAX 0.10.2`.
    pub name: String,
    /// One median per forward shape.
    pub forward: Vec<f64>,
    /// The training step's median.
    pub step: f64,
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct ConvFigures {
    /// Rows per device, with notes.
    pub report: Report,
    /// Per device: eager step median / jit step median.
    pub jit_over_eager: Vec<(Device, f64)>,
    /// Per device and reference: the reference's step median / the jit step median.
    pub step_over_references: Vec<(Device, String, f64)>,
}

/// The reference side: the same convolutions and CNN step under `jax.jit` and in PyTorch on
/// the CPU (each left out with the reason when its library is missing); prints one JSON line.
pub const REFERENCE_SCRIPT: &str = r#"
import json, sys, time
batch, warmup, timed = (int(a) for a in sys.argv[1:4])
shapes = json.loads(sys.argv[4])
channels = [1, 8, 16, 32, 64, 10]
out = {}
def median(f):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(timed):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]
try:
    import numpy as np
    rng = np.random.default_rng(0)
    x = rng.random((batch, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, batch)
    onehot = np.eye(10, dtype=np.float32)[labels]
    params = []
    for c, o in zip(channels, channels[1:]):
        b = 1 / (c * 9) ** 0.5
        params += [rng.uniform(-b, b, (o, c, 3, 3)).astype(np.float32), np.zeros(o, np.float32)]
except Exception as e:
    print(json.dumps({"error": f"no numpy: {e}"})); sys.exit(0)
try:
    import jax, jax.numpy as jnp
    def conv(h, k, s, p):
        return jax.lax.conv_general_dilated(h, k, (s, s), [(p, p), (p, p)])
    fwd = []
    for s in shapes:
        n, c, hh, ww = s["input"]
        xi = jnp.asarray(rng.random((n, c, hh, ww), dtype=np.float32))
        ki = jnp.asarray(rng.random((s["out"], c, s["k"], s["k"]), dtype=np.float32))
        f = jax.jit(lambda a, b, s=s: conv(a, b, s["stride"], s["k"] // 2))
        fwd.append(median(lambda: jax.block_until_ready(f(xi, ki))))
    def loss(p, x, y):
        h = x
        for i in range(0, len(p), 2):
            h = conv(h, p[i], 2, 1) + p[i + 1].reshape(1, -1, 1, 1)
            if i + 2 < len(p):
                h = jnp.maximum(h, 0.0)
        z = h.reshape(h.shape[0], -1)
        ls = z - jax.scipy.special.logsumexp(z, axis=1, keepdims=True)
        return -(ls * y).sum(axis=1).mean()
    @jax.jit
    def step(p, x, y):
        v, g = jax.value_and_grad(loss)(p, x, y)
        return v, [a - 0.1 * d for a, d in zip(p, g)]
    jp, jx, jy = [jnp.asarray(a) for a in params], jnp.asarray(x), jnp.asarray(onehot)
    out["jax"] = {"name": f"JAX {jax.__version__}", "forward": fwd,
                  "step": median(lambda: jax.block_until_ready(step(jp, jx, jy)))}
except Exception as e:
    out["jax_error"] = f"no JAX: {e}"
try:
    import torch
    torch.set_grad_enabled(False)
    fwd = []
    for s in shapes:
        n, c, hh, ww = s["input"]
        xi = torch.rand(n, c, hh, ww)
        ki = torch.rand(s["out"], c, s["k"], s["k"])
        fwd.append(median(lambda: torch.nn.functional.conv2d(xi, ki, stride=s["stride"], padding=s["k"] // 2)))
    torch.set_grad_enabled(True)
    tp = [torch.tensor(a, requires_grad=True) for a in params]
    tx, ty = torch.tensor(x), torch.tensor(onehot)
    def tstep():
        h = tx
        for i in range(0, len(tp), 2):
            h = torch.nn.functional.conv2d(h, tp[i], tp[i + 1], stride=2, padding=1)
            if i + 2 < len(tp):
                h = torch.relu(h)
        z = h.reshape(h.shape[0], -1)
        l = -(torch.log_softmax(z, 1) * ty).sum(1).mean()
        l.backward()
        with torch.no_grad():
            for a in tp:
                a -= 0.1 * a.grad
                a.grad = None
    out["torch"] = {"name": f"PyTorch {torch.__version__} ({torch.get_num_threads()} threads)",
                    "forward": fwd, "step": median(tstep)}
except Exception as e:
    out["torch_error"] = f"no PyTorch: {e}"
print(json.dumps(out))
"#;

/// The shapes as the reference script reads them (`argv[4]`).
pub fn shapes_json() -> String {
    let list: Vec<String> = SHAPES
        .iter()
        .map(|s| {
            format!(
                "{{\"input\": {:?}, \"out\": {}, \"k\": {}, \"stride\": {}}}",
                s.input, s.out_channels, s.kernel, s.stride
            )
        })
        .collect();
    format!("[{}]", list.join(", "))
}

/// Runs the benchmark beside the references measured (or why each is missing).
pub fn run(
    bench: &ConvBench,
    references: &[std::result::Result<Reference, String>],
    progress: &mut dyn Progress,
) -> Result<ConvFigures> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut jit_over_eager = Vec::new();
    let mut step_over_references = Vec::new();
    let step = cnn_step(0.1);
    let step_label = |kind: &str| format!("cnn sgd step x{} {kind}", bench.batch);
    for &device in &bench.devices {
        let info = client_info(device.client);
        if !info.available {
            let labels = SHAPES
                .iter()
                .map(ConvShape::label)
                .chain(["eager", "jit"].map(step_label));
            for label in labels {
                rows.push(Row::Skipped {
                    label: format!("{label} @ {device}"),
                    reason: info.reason.clone().unwrap_or_else(|| "unavailable".into()),
                });
            }
            continue;
        }
        let place = on(device);
        for (i, shape) in SHAPES.iter().enumerate() {
            let [n, c, h, w] = shape.input;
            let x = place.random_uniform(20 + i as u64, DType::F32, &[n, c, h, w], 0.0, 1.0)?;
            let k = place.random_uniform(
                40 + i as u64,
                DType::F32,
                &[shape.out_channels, c, shape.kernel, shape.kernel],
                0.0,
                1.0,
            )?;
            let m = measure(&shape.label(), bench.runs, progress, || {
                x.conv(&k, shape.options())
            })?;
            for reference in references.iter().flatten() {
                if let Some(theirs) = reference.forward.get(i) {
                    notes.push(format!(
                        "{device}: {} at {:.2}x {} ({:.3} ms against {:.3} ms)",
                        shape.label(),
                        theirs / m.median().as_secs_f64().max(1e-12),
                        reference.name,
                        m.median().as_secs_f64() * 1e3,
                        theirs * 1e3
                    ));
                }
            }
            rows.push(Row::Measured(m));
        }
        let x = place.random_uniform(7, DType::F32, &[bench.batch, 1, 28, 28], 0.0, 1.0)?;
        let labels = place.random_uniform(8, DType::U8, &[bench.batch], 0.0, 10.0)?;
        let mut args = init_cnn(device, 1)?;
        args.push(x);
        args.push(one_hot(&labels, 10)?);
        let first = |t: Vec<Tensor>| {
            t.into_iter().next().ok_or_else(|| Error::InvalidArgument {
                op: "bench conv",
                message: "the step returned nothing".into(),
            })
        };
        let eager_step = step.eager();
        let eager = measure(&step_label("eager"), bench.runs, progress, || {
            first(eager_step.call(&args)?)
        })?;
        let compiled = measure(&step_label("jit"), bench.runs, progress, || {
            first(step.call(&args)?)
        })?;
        let loss_eager = first(eager_step.call(&args)?)?.to_scalar::<f32>()?;
        let loss_jit = first(step.call(&args)?)?.to_scalar::<f32>()?;
        let jit_s = compiled.median().as_secs_f64().max(1e-12);
        let ratio = eager.median().as_secs_f64() / jit_s;
        notes.push(format!(
            "{device}: step jit {ratio:.2}x eager (medians {:.2} ms and {:.2} ms); loss {loss_jit:.6} (eager {loss_eager:.6})",
            jit_s * 1e3,
            eager.median().as_secs_f64() * 1e3,
        ));
        jit_over_eager.push((device, ratio));
        for reference in references.iter().flatten() {
            let r = reference.step / jit_s;
            notes.push(format!(
                "{device}: step jit {r:.2}x {} ({:.2} ms)",
                reference.name,
                reference.step * 1e3
            ));
            step_over_references.push((device, reference.name.clone(), r));
        }
        rows.push(Row::Measured(eager));
        rows.push(Row::Measured(compiled));
    }
    for why in references.iter().filter_map(|r| r.as_ref().err()) {
        notes.push(why.clone());
    }
    progress.finish();
    Ok(ConvFigures {
        report: Report {
            title: format!(
                "conv: 2-D convolutions forward, and one SGD step of a five-layer CNN on {} digits",
                bench.batch
            ),
            rows,
            notes,
        },
        jit_over_eager,
        step_over_references,
    })
}
