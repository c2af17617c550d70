//! The compiler's benchmark: a five-op elementwise chain over 10M f32, eager versus jit on each
//! device beside numpy's figure for the same chain; the overhead of a call that hits the cache;
//! the first call's trace-and-compile time.
//!
//! The chain is `sigmoid(x * y + 0.5) * 2 - y` (multiply, add, sigmoid, multiply, subtract):
//! the memory-bound shape of a dense layer's activation that eager code (and numpy) runs as
//! five passes over memory with full-size intermediates, and a fused program as one.

use std::time::{Duration, Instant};

use super::{measure, Progress, Report, Row, Runs};
use crate::client::client_info;
use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::jit::control::while_loop;
use crate::jit::jit;
use crate::tensor::Tensor;

/// Iterations of the loop benchmark.
pub const LOOP_ITERATIONS: i32 = 1_000;

/// A damped update of a 1,024-entry state, [`LOOP_ITERATIONS`] times under `while_loop`: what
/// a loop costs per iteration when each step is small (eager: a Rust loop that reads the
/// condition back every time; jit: the program's own loop).
pub fn damped_loop(x: &Tensor) -> Result<Tensor> {
    let count = on(x.device()).from_vec(vec![0i32], &[])?;
    let (x, _) = while_loop(
        (x.clone(), count),
        |(_, i)| i.less(LOOP_ITERATIONS),
        |(x, i)| Ok((x.multiply(0.999)?.add(0.001)?.tanh()?, i.add(1)?)),
    )?;
    Ok(x)
}

/// The numpy case name of the chain (the join key with `numpy_ops.py`).
pub const NUMPY_CASE: &str = "chain5 f32 10M";

/// The chain, as ordinary tensor code: what eager runs and what jit traces.
pub fn chain(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    x.multiply(y)?
        .add(0.5)?
        .sigmoid()?
        .multiply(2.0)?
        .subtract(y)
}

/// What to run.
#[derive(Clone, Debug)]
pub struct JitBench {
    /// Devices in order; unavailable ones become skipped rows.
    pub devices: Vec<Device>,
    /// Elements per operand (10M in the target).
    pub len: usize,
    /// Warm-up and timed runs.
    pub runs: Runs,
}

impl Default for JitBench {
    fn default() -> JitBench {
        JitBench {
            devices: vec![Device::host(0)],
            len: 10_000_000,
            runs: Runs {
                warmup: 1,
                timed: 7,
            },
        }
    }
}

/// The figures of one run of the benchmark.
#[derive(Clone, Debug)]
pub struct JitFigures {
    /// The rows (eager and jit per device) with notes: ratios, agreement, numpy.
    pub report: Report,
    /// Per device: eager median / jit median.
    pub speedups: Vec<(Device, f64)>,
    /// Per device: numpy median / jit median, when numpy was timed.
    pub versus_numpy: Vec<(Device, f64)>,
    /// A call of a compiled `add` on two scalars that hits the cache, less the same op
    /// eagerly (medians per call).
    pub cache_hit_overhead: Duration,
    /// The cache-hit call itself.
    pub cache_hit_call: Duration,
    /// The first call of the chain on the first device: trace, compile, run.
    pub first_call: Duration,
    /// Of which tracing and compiling.
    pub trace_and_compile: Duration,
    /// [`damped_loop`] on host: eagerly and compiled (medians per call).
    pub while_loop_eager: Duration,
    /// See `while_loop_eager`.
    pub while_loop_jit: Duration,
}

/// Per-call median of `f` over `batches` batches of `per_batch` calls.
fn per_call(
    batches: usize,
    per_batch: u32,
    mut f: impl FnMut() -> Result<Tensor>,
) -> Result<Duration> {
    let mut times = Vec::with_capacity(batches);
    for _ in 0..batches {
        let start = Instant::now();
        for _ in 0..per_batch {
            f()?;
        }
        times.push(start.elapsed() / per_batch);
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Runs the benchmark; `numpy` is numpy's median for [`NUMPY_CASE`] in seconds, or why there
/// is none.
pub fn run(
    bench: &JitBench,
    numpy: std::result::Result<f64, String>,
    progress: &mut dyn Progress,
) -> Result<JitFigures> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut speedups = Vec::new();
    let mut versus_numpy = Vec::new();
    let mut first_call = None;
    let compiled = jit(|x: &Tensor, y: &Tensor| chain(x, y));
    for &device in &bench.devices {
        let info = client_info(device.client);
        if !info.available {
            for kind in ["eager", "jit"] {
                rows.push(Row::Skipped {
                    label: format!("chain5 f32 {} {kind} @ {device}", bench.len),
                    reason: info.reason.clone().unwrap_or_else(|| "unavailable".into()),
                });
            }
            continue;
        }
        let place = on(device);
        let x = place.random_uniform(1, DType::F32, &[bench.len], -1.0, 1.0)?;
        let y = place.random_uniform(2, DType::F32, &[bench.len], 0.5, 2.0)?;
        let start = Instant::now();
        let first = compiled.call((&x, &y))?;
        first.sync()?;
        let first_time = start.elapsed();
        if first_call.is_none() {
            let compile = compiled
                .compilations()
                .into_iter()
                .find(|c| c.device == device)
                .map(|c| c.compile_time)
                .unwrap_or_default();
            first_call = Some((first_time, compile));
        }
        let eager = measure(
            &format!("chain5 f32 {} eager", bench.len),
            bench.runs,
            progress,
            || chain(&x, &y),
        )?;
        let fused = measure(
            &format!("chain5 f32 {} jit", bench.len),
            bench.runs,
            progress,
            || compiled.call((&x, &y)),
        )?;
        let diff = chain(&x, &y)?
            .to_f64_vec()?
            .iter()
            .zip(first.to_f64_vec()?)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f64, f64::max);
        let ratio = eager.median().as_secs_f64() / fused.median().as_secs_f64().max(1e-12);
        notes.push(format!(
            "{device}: jit {ratio:.2}x eager (medians {:.2} ms and {:.2} ms); max |jit - eager| = {diff:.1e}",
            fused.median().as_secs_f64() * 1e3,
            eager.median().as_secs_f64() * 1e3,
        ));
        speedups.push((device, ratio));
        if let Ok(np) = numpy {
            let r = np / fused.median().as_secs_f64().max(1e-12);
            notes.push(format!(
                "{device}: jit {r:.2}x numpy ({:.2} ms), eager {:.2}x numpy",
                np * 1e3,
                np / eager.median().as_secs_f64().max(1e-12)
            ));
            versus_numpy.push((device, r));
        }
        rows.push(Row::Measured(eager));
        rows.push(Row::Measured(fused));
    }
    if let Err(why) = &numpy {
        notes.push(format!("numpy: {why}"));
    }
    // The cache-hit overhead: a compiled add of two scalars against the same add eagerly.
    let host = on(Device::host(0));
    let (a, b) = (host.scalar(1.0f32)?, host.scalar(1.0f32)?);
    let add = jit(|a: &Tensor, b: &Tensor| a.add(b));
    add.call((&a, &b))?;
    let call = per_call(15, 2000, || add.call((&a, &b)))?;
    let eager_add = per_call(15, 2000, || a.add(&b))?;
    let overhead = call.saturating_sub(eager_add);
    notes.push(format!(
        "cache-hit call: jit add(1, 1) {:.1} µs, eager {:.1} µs: overhead {:.1} µs",
        call.as_secs_f64() * 1e6,
        eager_add.as_secs_f64() * 1e6,
        overhead.as_secs_f64() * 1e6
    ));
    let x = host.random_uniform(3, DType::F32, &[1024], -1.0, 1.0)?;
    let looped = jit(|x: &Tensor| damped_loop(x));
    let want = looped.call(&x)?;
    let loop_eager = per_call(7, 1, || damped_loop(&x))?;
    let loop_jit = per_call(7, 1, || looped.call(&x))?;
    let loop_diff = damped_loop(&x)?
        .to_f64_vec()?
        .iter()
        .zip(want.to_f64_vec()?)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f64, f64::max);
    notes.push(format!(
        "while_loop of {LOOP_ITERATIONS} iterations (x = tanh(0.999 x + 0.001), 1,024 f32) on \
         host: eager {:.2} ms, jit {:.2} ms ({:.2}x); max |jit - eager| = {loop_diff:.1e}",
        loop_eager.as_secs_f64() * 1e3,
        loop_jit.as_secs_f64() * 1e3,
        loop_eager.as_secs_f64() / loop_jit.as_secs_f64().max(1e-12)
    ));
    let (first_call, trace_and_compile) = first_call.unwrap_or_default();
    notes.push(format!(
        "first call of the chain: {:.2} ms, of which trace and compile {:.3} ms",
        first_call.as_secs_f64() * 1e3,
        trace_and_compile.as_secs_f64() * 1e3
    ));
    progress.finish();
    Ok(JitFigures {
        report: Report {
            title: format!("jit: sigmoid(x * y + 0.5) * 2 - y over {} f32", bench.len),
            rows,
            notes,
        },
        speedups,
        versus_numpy,
        cache_hit_overhead: overhead,
        cache_hit_call: call,
        first_call,
        trace_and_compile,
        while_loop_eager: loop_eager,
        while_loop_jit: loop_jit,
    })
}
