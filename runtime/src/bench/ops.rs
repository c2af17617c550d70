//! `tensorbook bench ops`: one row per class of op (dot, elementwise, transcendental, reduction,
//! conversion, transpose), timed on each device and set beside numpy's figure for the same
//! work, measured in the same invocation by [`NUMPY_SCRIPT`] right after the devices' runs of
//! the same row (see [`Reference`]).
//!
//! The case names are the join key between the two sides.

use std::time::Duration;

use super::{measure, Progress, Runs};
use crate::create::on;
use crate::device::{Client, Device};
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::sort::Direction;
use crate::tensor::Tensor;

/// The numpy side: reads case names on stdin (one per line), prints one JSON object of median
/// seconds. Kept in the binary, so a relocated `tensorbook` needs no checkout to run it.
pub const NUMPY_SCRIPT: &str = include_str!("../../benches/numpy_ops.py");

/// Work above this (flops or elements) is left out on `binary` by default: at the reference's
/// speed one run would take minutes.
const BINARY_WORK_LIMIT: f64 = 2.0e9;

/// What a cell says when `binary` leaves a row out.
const SKIPPED: &str = "skipped";

/// Rows named `<numpy's row> via system BLAS` time host's product through the system's
/// OpenBLAS/BLIS instead of host's own GEMM, against numpy's figure for the same row: the
/// measurement behind host's choice, repeated on every run.
const VIA_SYSTEM_BLAS: &str = " via system BLAS";

/// The numpy row a case is compared with.
pub fn numpy_name(case: &str) -> &str {
    case.strip_suffix(VIA_SYSTEM_BLAS).unwrap_or(case)
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct OpCase {
    /// The row's name, shared with numpy's script.
    pub name: &'static str,
    /// Flops (dot) or elements (everything else) per run.
    pub work: f64,
    /// The unit `work` is counted in.
    pub unit: &'static str,
}

const M: usize = 10_000_000;

/// Every row, in table order.
pub fn cases() -> Vec<OpCase> {
    let dot = |name, m: usize, k: usize, n: usize| OpCase {
        name,
        work: 2.0 * (m * k * n) as f64,
        unit: "GFLOP/s",
    };
    let elements = |name, n: usize| OpCase {
        name,
        work: n as f64,
        unit: "Gelem/s",
    };
    vec![
        dot("dot f32 {10000,784}x{784,10}", 10_000, 784, 10),
        // The skinny dot is memory-bound: the time to read its left operand once is its floor.
        elements("stream {10000,784} f32 once (sum)", 10_000 * 784),
        dot("dot f32 1024^3", 1024, 1024, 1024),
        dot("dot f32 2048^3", 2048, 2048, 2048),
        dot("dot f64 1024^3", 1024, 1024, 1024),
        // After host's own: OpenBLAS's threads spin for a while after each call, which would
        // take cycles from the rows timed next.
        dot("dot f32 1024^3 via system BLAS", 1024, 1024, 1024),
        dot("dot f32 2048^3 via system BLAS", 2048, 2048, 2048),
        dot("dot f64 1024^3 via system BLAS", 1024, 1024, 1024),
        elements("add f32 10M", M),
        elements("multiply f32 10M", M),
        elements("divide f32 10M", M),
        elements("add f64 10M", M),
        elements("exp f32 10M", M),
        elements("log f32 10M", M),
        elements("tanh f32 10M", M),
        elements("sigmoid f32 10M", M),
        elements("sum f32 10M", M),
        elements("reduce_max f32 10M", M),
        elements("argmax f32 10M", M),
        elements("as_type f32->f64 10M", M),
        elements("cumulative_sum f32 10M", M),
        elements("logsumexp f32 10M", M),
        elements("erf f32 10M (scipy)", M),
        elements("sort f32 10M", M),
        elements("argsort f32 10M (stable)", M),
        elements("sort f32 {10000,784} axis 1", 10_000 * 784),
        elements("take_along_axis f32 10M", M),
        elements("indexed_add f32 10M into 1000 bins", M),
        elements("transpose f32 10000x10000", 100_000_000),
        dot("dot f16 512^3", 512, 512, 512),
        dot("dot bf16 512^3 (ml_dtypes)", 512, 512, 512),
        elements("add f16 10M", M),
        elements("add bf16 10M (ml_dtypes)", M),
        elements("exp f16 10M", M),
        elements("sum f16 10M", M),
        elements("as_type f32->f16 10M", M),
        elements("as_type f32->bf16 10M (ml_dtypes)", M),
    ]
}

fn uniform(
    device: Device,
    seed: u64,
    dtype: DType,
    shape: &[usize],
    lo: f64,
    hi: f64,
) -> Result<Tensor> {
    on(device).random_uniform(seed, dtype, shape, lo, hi)
}

/// The timed closure of a `via system BLAS` row: `a · b` through the system BLAS, the result
/// made a tensor on `device` as host's own product's is.
fn system_blas_product<T: crate::element::Element>(
    device: Device,
    a: &Tensor,
    b: &Tensor,
    [m, k, n]: [usize; 3],
) -> Result<Box<dyn FnMut() -> Result<Tensor>>> {
    let (a, b) = (a.to_vec::<T>()?, b.to_vec::<T>()?);
    Ok(Box::new(move || {
        let out = crate::backend::host::system_blas_dot(&a, &b, m, k, n).ok_or_else(|| {
            crate::error::Error::InvalidArgument {
                op: "bench ops",
                message: "no system BLAS loads".into(),
            }
        })?;
        on(device).from_vec(out, &[m, n])
    }))
}

/// The half dtype a row names: bf16 where its name says so, else f16.
fn half_named(case: &str) -> DType {
    if case.contains("bf16") {
        DType::BF16
    } else {
        DType::F16
    }
}

/// One case's timed closure on one device.
type TimedOp = Box<dyn FnMut() -> Result<Tensor>>;

/// The reference's median for `case` over `runs.timed` runs (after its one warm-up run).
pub fn time_reference(reference: &mut dyn Reference, case: &str, runs: Runs) -> Cell {
    time_reference_for(reference, case, runs, Duration::ZERO)
}

/// [`time_reference`], with runs added past `runs.timed` until they add up to `least`; the
/// first run's time decides how many.
fn time_reference_for(
    reference: &mut dyn Reference,
    case: &str,
    runs: Runs,
    least: Duration,
) -> Cell {
    if !reference.prepare(case)? {
        return Err("not measured".to_string());
    }
    let first = reference.time_once()?;
    let count = runs_filling(least, first, runs.timed.max(1));
    let mut times = std::iter::once(Ok(first))
        .chain((1..count).map(|_| reference.time_once()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[times.len() / 2])
}

/// Each side of a row runs at least this long (past `--runs`, which stays the least count).
/// Freshly drawn operands run slow here for their first 10-30 ms (host's argmax of 10M f32:
/// 1.8 ms on the first run after the draw, 0.7 ms from about the tenth), and nine runs of a
/// 1 ms op sat inside that stretch: memory-bound rows moved between 0.8x and 1.4x numpy from
/// one invocation to the next, and settled at 1.4-1.7x with 101 runs.
const LEAST_TIMED: Duration = Duration::from_millis(250);

/// Runs of the shortest rows are capped, so that an op of a microsecond does not take
/// a quarter of a second of calls into the clock.
const MOST_RUNS: usize = 2000;

/// How many runs of about `one` each add up to `least`: never fewer than `at_least`, never
/// more than [`MOST_RUNS`] unless `at_least` asks for more.
fn runs_filling(least: Duration, one: Duration, at_least: usize) -> usize {
    let fill = least.as_nanos() / one.as_nanos().max(1) + 1;
    let fill = usize::try_from(fill).unwrap_or(usize::MAX).min(MOST_RUNS);
    fill.max(at_least)
}

/// Times `f` on its device like [`measure`], with the runs extended to [`LEAST_TIMED`]; the
/// first warm-up run's time decides how many.
fn measure_filling(
    label: &str,
    runs: Runs,
    progress: &mut dyn Progress,
    f: &mut dyn FnMut() -> Result<Tensor>,
) -> Result<super::Measurement> {
    let start = std::time::Instant::now();
    f()?.sync()?;
    let first = start.elapsed();
    let rest = Runs {
        warmup: runs.warmup.saturating_sub(1),
        timed: runs_filling(LEAST_TIMED, first, runs.timed),
    };
    measure(label, rest, progress, f)
}

/// Builds the operands of `case` on `device` and returns the timed closure.
fn prepare(case: &OpCase, device: Device) -> Result<TimedOp> {
    let dot = |dtype, m, k, n| -> Result<Box<dyn FnMut() -> Result<Tensor>>> {
        let a = uniform(device, 1, dtype, &[m, k], -1.0, 1.0)?;
        let b = uniform(device, 2, dtype, &[k, n], -1.0, 1.0)?;
        Ok(Box::new(move || a.dot(&b)))
    };
    let via_blas =
        |dtype, m: usize, k: usize, n: usize| -> Result<Box<dyn FnMut() -> Result<Tensor>>> {
            if device.client != Client::Host {
                return Err(crate::error::Error::InvalidArgument {
                    op: "bench ops",
                    message: "the system BLAS rows are host's".into(),
                });
            }
            let a = uniform(device, 1, dtype, &[m, k], -1.0, 1.0)?;
            let b = uniform(device, 2, dtype, &[k, n], -1.0, 1.0)?;
            match dtype {
                DType::F64 => system_blas_product::<f64>(device, &a, &b, [m, k, n]),
                _ => system_blas_product::<f32>(device, &a, &b, [m, k, n]),
            }
        };
    let vector = |seed, dtype, lo, hi| uniform(device, seed, dtype, &[M], lo, hi);
    Ok(match case.name {
        "dot f32 {10000,784}x{784,10}" => dot(DType::F32, 10_000, 784, 10)?,
        "dot f32 1024^3" => dot(DType::F32, 1024, 1024, 1024)?,
        "dot f32 2048^3" => dot(DType::F32, 2048, 2048, 2048)?,
        "dot f64 1024^3" => dot(DType::F64, 1024, 1024, 1024)?,
        "dot f32 1024^3 via system BLAS" => via_blas(DType::F32, 1024, 1024, 1024)?,
        "dot f32 2048^3 via system BLAS" => via_blas(DType::F32, 2048, 2048, 2048)?,
        "dot f64 1024^3 via system BLAS" => via_blas(DType::F64, 1024, 1024, 1024)?,
        "stream {10000,784} f32 once (sum)" => {
            let a = uniform(device, 1, DType::F32, &[10_000, 784], -1.0, 1.0)?;
            Box::new(move || a.sum(..))
        }
        "add f32 10M" | "multiply f32 10M" | "divide f32 10M" | "add f64 10M" => {
            let dtype = if case.name.contains("f64") {
                DType::F64
            } else {
                DType::F32
            };
            let x = vector(1, dtype, -1.0, 1.0)?;
            let y = vector(2, dtype, 0.5, 2.0)?;
            match case.name.split(' ').next() {
                Some("multiply") => Box::new(move || x.multiply(&y)),
                Some("divide") => Box::new(move || x.divide(&y)),
                _ => Box::new(move || x.add(&y)),
            }
        }
        "exp f32 10M" => {
            let x = vector(1, DType::F32, -10.0, 10.0)?;
            Box::new(move || x.exp())
        }
        "log f32 10M" => {
            let x = vector(1, DType::F32, 1e-3, 1e3)?;
            Box::new(move || x.log())
        }
        "tanh f32 10M" => {
            let x = vector(1, DType::F32, -5.0, 5.0)?;
            Box::new(move || x.tanh())
        }
        "sigmoid f32 10M" => {
            let x = vector(1, DType::F32, -10.0, 10.0)?;
            Box::new(move || x.sigmoid())
        }
        "sum f32 10M" | "reduce_max f32 10M" | "argmax f32 10M" => {
            let x = vector(1, DType::F32, -1.0, 1.0)?;
            match case.name.split(' ').next() {
                Some("reduce_max") => Box::new(move || x.reduce_max(..)),
                Some("argmax") => Box::new(move || x.argmax(..)),
                _ => Box::new(move || x.sum(..)),
            }
        }
        "cumulative_sum f32 10M" => {
            let x = vector(1, DType::F32, -1.0, 1.0)?;
            Box::new(move || x.cumulative_sum(0, false))
        }
        "logsumexp f32 10M" => {
            let x = vector(1, DType::F32, -10.0, 10.0)?;
            Box::new(move || x.logsumexp(..))
        }
        "erf f32 10M (scipy)" => {
            let x = vector(1, DType::F32, -3.0, 3.0)?;
            Box::new(move || x.erf())
        }
        "sort f32 10M" | "argsort f32 10M (stable)" => {
            let x = vector(1, DType::F32, -1.0, 1.0)?;
            if case.name.starts_with("argsort") {
                Box::new(move || x.argsort_as(0, Direction::Asc, DType::S64))
            } else {
                Box::new(move || x.sort(0, Direction::Asc))
            }
        }
        "sort f32 {10000,784} axis 1" => {
            let a = uniform(device, 1, DType::F32, &[10_000, 784], -1.0, 1.0)?;
            Box::new(move || a.sort(1, Direction::Asc))
        }
        "take_along_axis f32 10M" => {
            let x = vector(1, DType::F32, -1.0, 1.0)?;
            // A permutation: the positions that sort another random vector.
            let order =
                vector(2, DType::F32, -1.0, 1.0)?.argsort_as(0, Direction::Asc, DType::S64)?;
            Box::new(move || x.take_along_axis(&order, 0))
        }
        "indexed_add f32 10M into 1000 bins" => {
            let bins = vector(1, DType::F32, 0.0, 1000.0)?
                .floor()?
                .as_type(DType::S64)?
                .reshape(&[M, 1])?;
            let ones = on(device).ones(DType::F32, &[M])?;
            let counts = on(device).zeros(DType::F32, &[1000])?;
            Box::new(move || counts.indexed_add(&bins, &ones, ..))
        }
        "as_type f32->f64 10M" => {
            let x = vector(1, DType::F32, -1.0, 1.0)?;
            Box::new(move || x.as_type(DType::F64))
        }
        "dot f16 512^3" => dot(DType::F16, 512, 512, 512)?,
        "dot bf16 512^3 (ml_dtypes)" => dot(DType::BF16, 512, 512, 512)?,
        "add f16 10M" | "add bf16 10M (ml_dtypes)" => {
            let x = vector(1, half_named(case.name), -1.0, 1.0)?;
            let y = vector(2, half_named(case.name), 0.5, 2.0)?;
            Box::new(move || x.add(&y))
        }
        "exp f16 10M" => {
            let x = vector(1, DType::F16, -10.0, 10.0)?;
            Box::new(move || x.exp())
        }
        "sum f16 10M" => {
            let x = vector(1, DType::F16, -1.0, 1.0)?;
            Box::new(move || x.sum(..))
        }
        "as_type f32->f16 10M" | "as_type f32->bf16 10M (ml_dtypes)" => {
            let to = half_named(case.name);
            let x = vector(1, DType::F32, -1.0, 1.0)?;
            Box::new(move || x.as_type(to))
        }
        "transpose f32 10000x10000" => {
            let x = uniform(device, 1, DType::F32, &[10_000, 10_000], -1.0, 1.0)?;
            Box::new(move || x.transpose(..))
        }
        other => {
            return Err(crate::error::Error::InvalidArgument {
                op: "bench ops",
                message: format!("no benchmark named {other:?}"),
            })
        }
    })
}

/// One cell of the table: a median, or why there is none.
pub type Cell = std::result::Result<Duration, String>;

/// The results: per case, per device, and numpy's.
#[derive(Clone, Debug)]
pub struct OpsReport {
    /// The machine's CPU and its vector extensions.
    pub cpu: String,
    /// The devices, in column order.
    pub devices: Vec<Device>,
    /// One row per case: its medians per device, and numpy's.
    pub rows: Vec<(OpCase, Vec<Cell>, Cell)>,
    /// Why numpy has no figures, when it has none.
    pub numpy_note: Option<String>,
    /// The measured f32 FMA peak of all cores, GFLOP/s (see [`super::peak`]).
    pub peak_gflops: Option<f64>,
}

/// numpy's side of the measurement: one case at a time, so that numpy times each row right
/// after the devices have, in the same conditions.
///
/// Timing all of numpy first and the devices afterwards put a minute between the two figures
/// of a row; on a shared 2-core VM memory bandwidth and clocks drift over that span. Runs are
/// not alternated one by one: each side's runs evict the other's operands from L3, and
/// OpenBLAS's threads, spinning after numpy's product, took a core from host's next run
/// (measured: host's dot 1024^3 at 0.59x numpy alternated, 1.0x in blocks).
pub trait Reference {
    /// Draws the operands of `case` and makes one untimed run; `Ok(false)` when the reference
    /// does not know the case.
    fn prepare(&mut self, case: &str) -> std::result::Result<bool, String>;
    /// Times one run of the prepared case.
    fn time_once(&mut self) -> std::result::Result<Duration, String>;
}

/// How long to leave the machine idle after a block of BLAS products (numpy's, or host's via
/// the system BLAS) before the other side's: OpenBLAS's threads keep spinning for a while after
/// each call (2^28 cycles by default, under 0.1 s here) and on two cores would take cycles from
/// the runs timed next.
const AFTER_BLAS: Duration = Duration::from_millis(200);

/// Times every case whose name contains `filter` on each device, then on numpy (see
/// [`Reference`]), each side for at least `runs.timed` runs and `LEAST_TIMED`, and reports
/// the medians. `numpy` is the reference, or why there is none.
pub fn run(
    devices: &[Device],
    filter: &str,
    runs: Runs,
    mut numpy: std::result::Result<&mut dyn Reference, String>,
    progress: &mut dyn Progress,
) -> Result<OpsReport> {
    let mut rows = Vec::new();
    for case in cases().into_iter().filter(|c| c.name.contains(filter)) {
        let settle = if case.unit == "GFLOP/s" {
            AFTER_BLAS
        } else {
            Duration::ZERO
        };
        let mut cells = Vec::new();
        for &device in devices {
            let cell = if device.client == Client::Binary && case.work > BINARY_WORK_LIMIT {
                Err(SKIPPED.to_string())
            } else if case.name.ends_with(VIA_SYSTEM_BLAS) && device.client != Client::Host {
                Err("host only".to_string())
            } else {
                let timed = prepare(&case, device)
                    .and_then(|mut f| measure_filling(case.name, runs, progress, &mut *f));
                timed.map(|m| m.median()).map_err(|e| e.to_string())
            };
            cells.push(cell);
        }
        let numpy_cell = match &mut numpy {
            Ok(reference) => {
                std::thread::sleep(settle);
                let cell =
                    time_reference_for(&mut **reference, numpy_name(case.name), runs, LEAST_TIMED);
                std::thread::sleep(settle);
                cell
            }
            Err(_) => Err("-".to_string()),
        };
        rows.push((case, cells, numpy_cell));
    }
    progress.finish();
    let measures_dot = rows
        .iter()
        .any(|(c, _, _): &(OpCase, _, _)| c.unit == "GFLOP/s");
    Ok(OpsReport {
        cpu: cpu_summary(),
        devices: devices.to_vec(),
        numpy_note: numpy.err(),
        peak_gflops: measures_dot.then(super::peak::fma_peak_gflops).flatten(),
        rows,
    })
}

/// `model name` and the SIMD flags that matter here, from /proc/cpuinfo.
pub fn cpu_summary() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        info.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let flags = field("flags");
    let simd: Vec<&str> = flags
        .split_whitespace()
        .filter(|f| {
            [
                "sse4_2",
                "avx",
                "avx2",
                "fma",
                "avx512f",
                "avx512bw",
                "avx512_bf16",
            ]
            .contains(f)
        })
        .collect();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!(
        "{} ({cores} cores; {})",
        field("model name"),
        simd.join(" ")
    )
}

fn ms(cell: &Cell) -> String {
    match cell {
        Ok(d) => format!("{:.3}", d.as_secs_f64() * 1e3),
        Err(why) => why.clone(),
    }
}

impl OpsReport {
    /// The side-by-side table: milliseconds per device and numpy, then each device's speed
    /// relative to numpy (above 1: faster than numpy) and its rate.
    pub fn table(&self) -> String {
        let mut header = vec!["op".to_string()];
        header.extend(self.devices.iter().map(|d| format!("{d} ms")));
        header.push("numpy ms".into());
        header.extend(self.devices.iter().map(|d| format!("{d}/numpy")));
        header.push("rate (first device)".into());
        let mut lines = vec![header];
        for (case, cells, numpy) in &self.rows {
            let mut line = vec![case.name.to_string()];
            line.extend(cells.iter().map(ms));
            line.push(ms(numpy));
            for cell in cells {
                line.push(match (cell, numpy) {
                    (Ok(ours), Ok(theirs)) => {
                        format!(
                            "{:.2}x",
                            theirs.as_secs_f64() / ours.as_secs_f64().max(1e-12)
                        )
                    }
                    _ => "-".into(),
                });
            }
            line.push(match cells.first() {
                Some(Ok(d)) => {
                    let rate = case.work / d.as_secs_f64().max(1e-12) / 1e9;
                    match self.peak_gflops {
                        Some(peak) if case.unit == "GFLOP/s" => {
                            // An f64 FMA does half the lanes of an f32 one.
                            let (peak, which) = if case.name.contains("f64") {
                                (peak / 2.0, "f64 peak")
                            } else {
                                (peak, "peak")
                            };
                            format!(
                                "{rate:.2} {} ({:.0}% of {which})",
                                case.unit,
                                100.0 * rate / peak
                            )
                        }
                        _ => format!("{rate:.2} {}", case.unit),
                    }
                }
                _ => "-".into(),
            });
            lines.push(line);
        }
        let widths: Vec<usize> = (0..lines[0].len())
            .map(|i| {
                lines
                    .iter()
                    .map(|l| l.get(i).map_or(0, |c| c.len()))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = format!("ops on {}\n", self.cpu);
        if let Some(peak) = self.peak_gflops {
            out.push_str(&format!(
                "f32 FMA peak, all cores (register-only loop): {peak:.1} GFLOP/s\n"
            ));
            out.push_str(&format!(
                "host dot: n <= 16 streaming kernel; from 64^3 {}\n",
                crate::backend::host::gemm_name()
            ));
        }
        for line in &lines {
            let cells: Vec<String> = line
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (c, w))| {
                    if i == 0 {
                        format!("{c:<w$}")
                    } else {
                        format!("{c:>w$}")
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        if self
            .rows
            .iter()
            .any(|(_, cells, _)| cells.iter().any(|c| matches!(c, Err(e) if e == SKIPPED)))
        {
            out.push_str("skipped: binary leaves out rows above 2e9 flops or elements (minutes each at the reference's speed)\n");
        }
        if let Some(note) = &self.numpy_note {
            out.push_str(&format!("numpy: {note}\n"));
        }
        out
    }

    /// The figures as JSON: per case, seconds per device and numpy's.
    pub fn to_json(&self) -> serde_json::Value {
        let secs = |c: &Cell| match c {
            Ok(d) => serde_json::json!(d.as_secs_f64()),
            Err(why) => serde_json::json!({ "skipped": why }),
        };
        serde_json::json!({
            "cpu": self.cpu,
            "devices": self.devices.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
            "rows": self.rows.iter().map(|(case, cells, numpy)| serde_json::json!({
                "op": case.name,
                "work": case.work,
                "unit": case.unit,
                "seconds": cells.iter().map(secs).collect::<Vec<_>>(),
                "numpy_seconds": secs(numpy),
            })).collect::<Vec<_>>(),
            "numpy_note": self.numpy_note,
            "fma_peak_gflops": self.peak_gflops,
            "host_blas": crate::backend::host::blas_library(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_prepares_and_numpy_knows_every_name() {
        for case in cases() {
            assert!(
                NUMPY_SCRIPT.contains(&format!("\"{}\"", numpy_name(case.name))),
                "{}",
                case.name
            );
        }
        // Only the small ones are run here: the big ones take seconds each.
        let case = cases()
            .into_iter()
            .find(|c| c.name == "dot f32 {10000,784}x{784,10}")
            .unwrap();
        assert!(prepare(&case, Device::host(0)).is_ok());
    }

    /// A reference whose every run takes `each`, counting the runs it was asked for.
    struct Fixed {
        each: Duration,
        runs: usize,
    }

    impl Reference for Fixed {
        fn prepare(&mut self, _case: &str) -> std::result::Result<bool, String> {
            Ok(true)
        }
        fn time_once(&mut self) -> std::result::Result<Duration, String> {
            self.runs += 1;
            Ok(self.each)
        }
    }

    #[test]
    fn short_rows_run_until_they_fill_the_least_time_and_long_ones_keep_the_count() {
        let runs = Runs {
            warmup: 1,
            timed: 9,
        };
        let least = Duration::from_millis(250);
        for (each, want) in [(1, 251), (100, 9), (30, 9), (20, 13)] {
            let mut numpy = Fixed {
                each: Duration::from_millis(each),
                runs: 0,
            };
            let median = time_reference_for(&mut numpy, "add f32 10M", runs, least);
            assert_eq!(median, Ok(Duration::from_millis(each)));
            assert_eq!(numpy.runs, want, "{each} ms runs");
        }
        // A run that reads as no time at all is capped, and the least count always holds.
        assert_eq!(runs_filling(least, Duration::ZERO, 9), MOST_RUNS);
        assert_eq!(
            runs_filling(least, Duration::ZERO, MOST_RUNS + 1),
            MOST_RUNS + 1
        );
        assert_eq!(runs_filling(Duration::ZERO, Duration::from_secs(1), 5), 5);
    }

    #[test]
    fn the_table_puts_numpy_beside_each_device() {
        let report = OpsReport {
            cpu: "test cpu".into(),
            devices: vec![Device::host(0)],
            rows: vec![(
                cases()
                    .into_iter()
                    .find(|c| c.name == "add f32 10M")
                    .unwrap(),
                vec![Ok(Duration::from_millis(5))],
                Ok(Duration::from_millis(10)),
            )],
            numpy_note: None,
            peak_gflops: None,
        };
        let table = report.table();
        assert!(table.contains("add f32 10M"), "{table}");
        assert!(table.contains("2.00x"), "{table}");
        assert!(table.contains("2.00 Gelem/s"), "{table}");
    }
}
