//! The GPU check's program: notebook 02's and notebook 04's GPU steps and the benchmark rows,
//! as one binary, for machines with a GPU but no Rust toolchain (cells need rustc; this does
//! not). `install/gpu-bundle.sh` packs it with the cuda test suites and `torch_reference.py`;
//! docs/gpu-check.md says how to run it.
//!
//! `gpu_check probe`: the clients and what CUDA was found; exit 0 with a GPU, 2 without.
//! `gpu_check run [FIGURES.json] [--device D]`: every step, each reported on its own line (a
//! failing step does not hide the others); exit 0 when all ran or there is no GPU (then it
//! says so and skips), 1 when a step failed. `--device sim:0` runs the same steps on the
//! simulated accelerator (with `TENSORBOOK_SIM_DEVICES=1`): how the test command checks this
//! program on machines without a GPU.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tensorbook::bench::jit::JitBench;
use tensorbook::bench::{self, MatmulBench, Measurement, Runs, Silent};
use tensorbook::{client_info, on, Client, DType, Device, Direction, Tensor};

type Step = tensorbook::Result<Value>;
/// One step of the check: its name and what it runs on the GPU.
type NamedStep = (&'static str, fn(Device) -> Step);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let mut device = Device::cuda(0);
    let mut rest = Vec::new();
    let mut i = 2;
    while i < args.len() {
        if args[i] == "--device" {
            match args.get(i + 1).map(|d| Device::parse(d)) {
                Some(Ok(d)) => device = d,
                _ => {
                    eprintln!("--device takes a device such as cuda:0 or sim:0");
                    return ExitCode::from(64);
                }
            }
            i += 2;
        } else {
            rest.push(args[i].as_str());
            i += 1;
        }
    }
    match args.get(1).map(String::as_str) {
        Some("probe") => probe(),
        Some("run") => run(rest.first().copied(), device),
        _ => {
            eprintln!("usage: gpu_check probe | gpu_check run [FIGURES.json] [--device D]");
            ExitCode::from(64)
        }
    }
}

fn probe() -> ExitCode {
    println!("{}", tensorbook::notebook::clients_table());
    if client_info(Client::Cuda).available {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

fn run(figures_file: Option<&str>, gpu: Device) -> ExitCode {
    let cuda = client_info(gpu.client);
    let environment: Vec<String> = tensorbook::cuda_report().lines();
    println!("== environment");
    for line in &environment {
        println!("{line}");
    }
    let mut figures = json!({
        "environment": environment,
        "device": gpu.to_string(),
        "gpu": cuda.available,
    });
    let mut failed = 0;
    if !cuda.available {
        let reason = cuda.reason.unwrap_or_default();
        println!("skipped: every GPU step, no {gpu} here: {reason}");
        figures["skipped"] = json!(reason);
    } else {
        let steps: [NamedStep; 5] = [
            ("notebook 02: the blog's product", notebook_02),
            (
                "notebook 04: dense layer with softmax, eager and jit",
                notebook_04,
            ),
            ("bench jit: the five-op chain over 10M f32", jit_chain),
            ("bench matmul: binary, host:0 and the GPU", matmul_rows),
            ("eager ops one by one over 10M f32", eager_ops),
        ];
        for (name, step) in steps {
            println!("== {name}");
            let start = Instant::now();
            let result = std::panic::catch_unwind(|| step(gpu));
            let outcome = match result {
                Ok(Ok(v)) => json!({ "ok": true, "figures": v }),
                Ok(Err(e)) => {
                    failed += 1;
                    println!("FAILED: {e}");
                    json!({ "ok": false, "error": e.to_string() })
                }
                Err(_) => {
                    failed += 1;
                    println!("FAILED: the step panicked");
                    json!({ "ok": false, "error": "panicked" })
                }
            };
            println!("({name}: {:.1} s)", start.elapsed().as_secs_f64());
            figures[name] = outcome;
        }
    }
    if let Some(file) = figures_file {
        let text = serde_json::to_string_pretty(&figures).unwrap_or_default();
        if let Err(e) = std::fs::write(file, text) {
            eprintln!("could not write {file}: {e}");
            failed += 1;
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn summary(m: &Measurement) -> Value {
    println!(
        "{}: median {:.1} µs, min {:.1} µs over {} runs",
        m.label,
        micros(m.median()),
        micros(m.min()),
        m.times.len()
    );
    json!({
        "label": m.label,
        "device": m.device.to_string(),
        "median_us": micros(m.median()),
        "min_us": micros(m.min()),
        "runs_us": m.times.iter().map(|&t| micros(t)).collect::<Vec<_>>(),
    })
}

fn max_difference(a: &Tensor, b: &Tensor) -> tensorbook::Result<f64> {
    let b = b.backend_copy(a.device())?;
    a.subtract(&b)?
        .abs()?
        .reduce_max(..)?
        .to_f64_vec()
        .map(|v| v.first().copied().unwrap_or(f64::NAN))
}

/// Notebook 02's GPU cell: the operands copied to `cuda:0`, the product timed launch-only,
/// synchronised and with the copy back, and checked against binary and host. The data is
/// random of MNIST's shape (the GPU machine has no data set); the product's cost is the same.
fn notebook_02(gpu: Device) -> Step {
    let host = on(Device::host(0));
    let x = host.random_uniform(42, DType::F32, &[10_000, 784], 0.0, 1.0)?;
    let w = host.random_normal(43, DType::F32, &[784, 10], 0.0, 0.05)?;
    let binary_result = x
        .backend_copy(Device::BINARY)?
        .dot(&w.backend_copy(Device::BINARY)?)?;
    let host_result = x.dot(&w)?;
    // The first use of the device creates its context (about 0.1 s); that is not the copy.
    on(gpu).scalar(0.0f32)?.sync()?;
    let start = Instant::now();
    let (xc, wc) = (x.backend_copy(gpu)?, w.backend_copy(gpu)?);
    xc.sync()?;
    wc.sync()?;
    let upload = start.elapsed();
    println!("{}\n{}", xc.signature(), wc.signature());
    println!("copy to {gpu}: {:.1} µs", micros(upload));
    assert_placement(&xc, gpu)?;
    for _ in 0..5 {
        xc.dot(&wc)?.sync()?;
    }
    let mut launch = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let r = xc.dot(&wc)?;
        launch.push(start.elapsed());
        r.sync()?;
    }
    let launch = Measurement {
        label: format!("dot, launch only @ {gpu}"),
        device: gpu,
        times: launch,
    };
    let runs = Runs {
        warmup: 5,
        timed: 50,
    };
    let synced = bench::measure("dot {10000, 784} x {784, 10}", runs, &mut Silent, || {
        xc.dot(&wc)
    })?;
    let copied = bench::measure("dot + copy back", runs, &mut Silent, || {
        xc.dot(&wc)?.backend_transfer(Device::host(0))
    })?;
    let host_timed = bench::measure("dot {10000, 784} x {784, 10}", runs, &mut Silent, || {
        x.dot(&w)
    })?;
    let gpu_result = xc.dot(&wc)?;
    assert_placement(&gpu_result, gpu)?;
    let printed = gpu_result.to_string();
    if !printed.contains(&format!("Backend<{gpu}>")) {
        return Err(tensorbook::Error::InvalidArgument {
            op: "gpu_check",
            message: format!("the result does not print its placement: {printed}"),
        });
    }
    let gpu_host = gpu_result.backend_copy(Device::host(0))?;
    let vs_binary = max_difference(&gpu_host, &binary_result)?;
    let vs_host = max_difference(&gpu_host, &host_result)?;
    println!("max |cuda - binary| = {vs_binary:.3e}; max |cuda - host| = {vs_host:.3e}");
    if vs_binary.is_nan() || vs_binary >= 1e-3 {
        return Err(tensorbook::Error::InvalidArgument {
            op: "gpu_check",
            message: format!("cuda and binary disagree: max |difference| = {vs_binary:.3e}"),
        });
    }
    Ok(json!({
        "upload_us": micros(upload),
        "launch_only": summary(&launch),
        "synchronised": summary(&synced),
        "with_copy_back": summary(&copied),
        "host": summary(&host_timed),
        "max_abs_difference_vs_binary": vs_binary,
        "max_abs_difference_vs_host": vs_host,
    }))
}

fn assert_placement(t: &Tensor, device: Device) -> tensorbook::Result<()> {
    if t.device() == device {
        Ok(())
    } else {
        Err(tensorbook::Error::InvalidArgument {
            op: "gpu_check",
            message: format!("expected a tensor on {device}, got one on {}", t.device()),
        })
    }
}

fn dense_softmax(x: &Tensor, w: &Tensor, b: &Tensor) -> tensorbook::Result<Tensor> {
    let logits = x.dot(w)?.add(b)?;
    let top = logits.reduce_max_keep([-1])?;
    let e = logits.subtract(&top)?.exp()?;
    e.divide(&e.sum_keep([-1])?)
}

/// Notebook 04's dense layer with softmax, eager and jit, on host:0 and cuda:0, each checked
/// against eager.
fn notebook_04(gpu: Device) -> Step {
    let host = on(Device::host(0));
    let x = host.random_uniform(1, DType::F32, &[10_000, 784], 0.0, 1.0)?;
    let w = host.random_normal(2, DType::F32, &[784, 10], 0.0, 0.05)?;
    let b = host.random_normal(3, DType::F32, &[10], 0.0, 0.1)?;
    let forward = tensorbook::jit(|x: &Tensor, w: &Tensor, b: &Tensor| dense_softmax(x, w, b));
    let mut out = serde_json::Map::new();
    let runs = Runs {
        warmup: 2,
        timed: 20,
    };
    for device in [Device::host(0), gpu] {
        let (xd, wd, bd) = (
            x.backend_copy(device)?,
            w.backend_copy(device)?,
            b.backend_copy(device)?,
        );
        let eager = bench::measure("dense+softmax eager", runs, &mut Silent, || {
            dense_softmax(&xd, &wd, &bd)
        })?;
        let compiled = bench::measure("dense+softmax jit", runs, &mut Silent, || {
            forward.on(device).call((&xd, &wd, &bd))
        })?;
        let result = forward.on(device).call((&xd, &wd, &bd))?;
        assert_placement(&result, device)?;
        let diff = max_difference(&result, &dense_softmax(&xd, &wd, &bd)?)?;
        println!(
            "{device}: jit {:.2}x eager, max |jit - eager| = {diff:.1e}",
            eager.median().as_secs_f64() / compiled.median().as_secs_f64()
        );
        if diff.is_nan() || diff > 1e-5 {
            return Err(tensorbook::Error::InvalidArgument {
                op: "gpu_check",
                message: format!("{device}: jit and eager disagree by {diff:.1e}"),
            });
        }
        out.insert(
            device.to_string(),
            json!({ "eager": summary(&eager), "jit": summary(&compiled), "max_abs_difference": diff }),
        );
    }
    println!("{forward}");
    Ok(Value::Object(out))
}

/// `tensorbook bench jit`'s rows: the chain eager and jit on host:0 and cuda:0.
fn jit_chain(gpu: Device) -> Step {
    let figures = bench::jit::run(
        &JitBench {
            devices: vec![Device::host(0), gpu],
            len: 10_000_000,
            runs: Runs {
                warmup: 2,
                timed: 20,
            },
        },
        Err("numpy is not timed by the GPU check".into()),
        &mut Silent,
    )?;
    println!("{}", figures.report.table());
    Ok(json!({
        "report": figures.report.to_json(),
        "jit_speedup_over_eager": figures
            .speedups
            .iter()
            .map(|(d, s)| (d.to_string(), json!(s)))
            .collect::<serde_json::Map<_, _>>(),
        "first_call_us": micros(figures.first_call),
    }))
}

/// `tensorbook bench matmul`'s rows: the blog's product on binary, host:0 and cuda:0.
fn matmul_rows(gpu: Device) -> Step {
    let bench = MatmulBench {
        devices: vec![Device::BINARY, Device::host(0), gpu],
        ..MatmulBench::default()
    };
    let figures = bench::matmul(&bench, &mut Silent)?;
    let report = &figures.report;
    println!("{}", report.table());
    if !figures.disagreements.is_empty() {
        return Err(tensorbook::Error::InvalidArgument {
            op: "bench matmul",
            message: format!(
                "the products disagree: {}",
                figures.disagreements.join("; ")
            ),
        });
    }
    Ok(report.to_json())
}

/// The chain's ops one at a time, each timed to its return (enqueued) and synchronised: where
/// an eager op's time goes on the device, set beside torch's eager chain.
fn eager_ops(gpu: Device) -> Step {
    let place = on(gpu);
    let x = place.random_uniform(1, DType::F32, &[10_000_000], -1.0, 1.0)?;
    let y = place.random_uniform(2, DType::F32, &[10_000_000], 0.5, 2.0)?;
    let t = x.multiply(&y)?;
    t.sync()?;
    let host = on(Device::host(0));
    let a = host
        .random_uniform(1, DType::F32, &[10_000, 784], 0.0, 1.0)?
        .backend_copy(gpu)?;
    let w = host
        .random_normal(2, DType::F32, &[784, 10], 0.0, 0.05)?
        .backend_copy(gpu)?;
    let b = host
        .random_normal(3, DType::F32, &[10], 0.0, 0.1)?
        .backend_copy(gpu)?;
    let logits = dense_softmax(&a, &w, &b)?;
    let top = logits.reduce_max_keep([-1])?;
    let order = x.argsort_as(0, Direction::Asc, DType::S64)?;
    let n = x.size();
    let bins = x
        .add(1.0)?
        .multiply(500.0)?
        .floor()?
        .as_type(DType::S64)?
        .reshape(&[n, 1])?;
    let ones = place.ones(DType::F32, &[n])?;
    let counts = place.zeros(DType::F32, &[1001])?;
    type Case<'a> = (
        &'static str,
        Box<dyn Fn() -> tensorbook::Result<Tensor> + 'a>,
    );
    let cases: Vec<Case> = vec![
        ("scalar to device", Box::new(|| on(gpu).scalar(0.5f32))),
        ("x * y", Box::new(|| x.multiply(&y))),
        ("t + 0.5", Box::new(|| t.add(0.5))),
        ("sigmoid(t)", Box::new(|| t.sigmoid())),
        ("t * 2.0", Box::new(|| t.multiply(2.0))),
        ("t - y", Box::new(|| t.subtract(&y))),
        ("chain", Box::new(|| tensorbook::bench::jit::chain(&x, &y))),
        ("a . w", Box::new(|| a.dot(&w))),
        ("a . w + b", Box::new(|| a.dot(&w)?.add(&b))),
        (
            "max over axis 1 of [10000][10]",
            Box::new(|| logits.reduce_max_keep([-1])),
        ),
        (
            "[10000][10] - [10000][1]",
            Box::new(|| logits.subtract(&top)),
        ),
        ("dense+softmax", Box::new(|| dense_softmax(&a, &w, &b))),
        (
            "select(x > 0, x, y)",
            Box::new(|| x.greater(0.0)?.select(&x, &y)),
        ),
        (
            "cumulative_sum of 10M, one line",
            Box::new(|| x.cumulative_sum(0, false)),
        ),
        (
            "cumulative_sum [10000][784] axis 1",
            Box::new(|| a.cumulative_sum(1, false)),
        ),
        (
            "pad [10000][784] by 1 each side",
            Box::new(|| a.pad(0.0, &[(1, 1, 0), (1, 1, 0)])),
        ),
        (
            "sort of 10M, one line",
            Box::new(|| x.sort(0, Direction::Asc)),
        ),
        (
            "argsort [10000][784] axis 1",
            Box::new(|| a.argsort(1, Direction::Asc)),
        ),
        (
            "take_along_axis 10M",
            Box::new(|| x.take_along_axis(&order, 0)),
        ),
        (
            "indexed_add 10M into 1000 bins",
            Box::new(|| counts.indexed_add(&bins, &ones, ..)),
        ),
    ];
    let mut out = serde_json::Map::new();
    for (name, f) in &cases {
        let (mut enqueued, mut synced) = (Vec::new(), Vec::new());
        for _ in 0..25 {
            let start = Instant::now();
            let r = f()?;
            enqueued.push(micros(start.elapsed()));
            r.sync()?;
            synced.push(micros(start.elapsed()));
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (e, s) = (median(&mut enqueued), median(&mut synced));
        println!(
            "{name} @ {gpu}: returned after {e:.1} µs, finished after {s:.1} µs (medians of 25)"
        );
        out.insert(
            name.to_string(),
            json!({ "enqueued_us": e, "synced_us": s }),
        );
    }
    Ok(Value::Object(out))
}
