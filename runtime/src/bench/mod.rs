//! Benchmarks as a library feature: what the notebooks and `tensorbook bench` time with.
//!
//! [`measure`] runs a closure `warmup` times untimed, then `runs` times timed, waiting for the
//! result's device ([`Tensor::sync`]) before each clock stops, so an asynchronous device is
//! timed for its work and not only for the launch. Each [`Measurement`] is labelled with the
//! placement of the tensor the closure returned, never with the session default: the blog's
//! notebooks once labelled a 32-second binary matmul "EXLA" because the label came from a
//! setting. A [`Report`] renders as a text table, an HTML table and a plotters SVG bar chart.
//! [`matmul`] is the blog's comparison: the same operands on every device, timed and checked
//! against each other.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use plotters::prelude::*;

use crate::client::client_info;
use crate::create::on;
use crate::device::Device;
use crate::display::html_escape;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::notebook::{display, DisplayHandle, Displayable, Html};

pub mod conv;
pub mod jit;
pub mod linalg;
pub mod ops;
pub mod peak;
pub mod serving;
pub mod train;
use crate::tensor::Tensor;

/// Hears how a benchmark advances (a notebook display, a terminal progress bar).
pub trait Progress {
    /// `done` of `total` timed runs of `label` have finished (0 when it starts).
    fn update(&mut self, label: &str, done: usize, total: usize);
    /// The benchmark is over.
    fn finish(&mut self) {}
}

/// Progress that goes nowhere.
pub struct Silent;

impl Progress for Silent {
    fn update(&mut self, _: &str, _: usize, _: usize) {}
}

/// Progress as a notebook display updated in place (printed lines outside a kernel).
#[derive(Default)]
pub struct NotebookProgress {
    handle: Option<DisplayHandle>,
    last: Option<Instant>,
}

impl NotebookProgress {
    /// A progress display that appears with the first update.
    pub fn new() -> NotebookProgress {
        NotebookProgress::default()
    }
}

fn progress_html(label: &str, done: usize, total: usize) -> Html {
    Html(format!(
        "<div class=\"tensorbook-progress\"><code>{}</code> <progress value=\"{done}\" max=\"{total}\"></progress> {done}/{total} runs</div>",
        html_escape(label)
    ))
}

impl Progress for NotebookProgress {
    fn update(&mut self, label: &str, done: usize, total: usize) {
        // A frontend repaints for every update: a few per second is enough to look alive.
        let due = self
            .last
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(100) || done == total);
        if !due {
            return;
        }
        self.last = Some(Instant::now());
        let html = progress_html(label, done, total);
        match &self.handle {
            Some(handle) => handle.update(&html),
            None => self.handle = Some(display(&html)),
        }
    }

    fn finish(&mut self) {
        if let Some(handle) = &self.handle {
            handle.update(&Html(
                "<div class=\"tensorbook-progress\">done</div>".into(),
            ));
        }
    }
}

/// How many runs to make.
#[derive(Clone, Copy, Debug)]
pub struct Runs {
    /// Untimed runs first (compilation, caches, page faults).
    pub warmup: usize,
    /// Timed runs.
    pub timed: usize,
}

impl Default for Runs {
    /// The blog's protocol: one warm-up, five timed repetitions.
    fn default() -> Runs {
        Runs {
            warmup: 1,
            timed: 5,
        }
    }
}

/// The timings of one benchmarked closure.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// What was timed.
    pub label: String,
    /// Where the result lived: the placement the label must come from.
    pub device: Device,
    /// One duration per timed run, each ending after the device finished.
    pub times: Vec<Duration>,
}

impl Measurement {
    /// The fastest run.
    pub fn min(&self) -> Duration {
        self.times.iter().copied().min().unwrap_or_default()
    }

    /// The middle run (the mean of the two middle ones for an even count).
    pub fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        match t.len() {
            0 => Duration::ZERO,
            n if n % 2 == 1 => t[n / 2],
            n => (t[n / 2 - 1] + t[n / 2]) / 2,
        }
    }

    /// The average run (the blog's figure).
    pub fn mean(&self) -> Duration {
        if self.times.is_empty() {
            return Duration::ZERO;
        }
        self.total() / self.times.len() as u32
    }

    /// All timed runs together (the blog's other figure).
    pub fn total(&self) -> Duration {
        self.times.iter().sum()
    }
}

/// Times `f`: `runs.warmup` untimed calls, then `runs.timed` timed ones, each waiting for the
/// result's device before the clock stops. The measurement is labelled `label @ <device of the
/// result>`.
pub fn measure(
    label: &str,
    runs: Runs,
    progress: &mut dyn Progress,
    mut f: impl FnMut() -> Result<Tensor>,
) -> Result<Measurement> {
    if runs.timed == 0 {
        return Err(Error::InvalidArgument {
            op: "bench::measure",
            message: "at least one timed run is needed".into(),
        });
    }
    for _ in 0..runs.warmup {
        f()?.sync()?;
    }
    let mut times = Vec::with_capacity(runs.timed);
    let mut device = None;
    progress.update(label, 0, runs.timed);
    for done in 1..=runs.timed {
        let start = Instant::now();
        let result = f()?;
        result.sync()?;
        times.push(start.elapsed());
        device = Some(result.device());
        progress.update(label, done, runs.timed);
    }
    let device = device.unwrap_or_else(|| Device::host(0));
    Ok(Measurement {
        label: format!("{label} @ {device}"),
        device,
        times,
    })
}

/// A row of a report: a measurement, or why there is none (a client that is unavailable).
#[derive(Clone, Debug)]
pub enum Row {
    /// It ran.
    Measured(Measurement),
    /// It could not run here.
    Skipped {
        /// What would have been timed.
        label: String,
        /// Why not (e.g. the cuda client's reason).
        reason: String,
    },
}

/// A set of measurements that renders as a table and a chart.
#[derive(Clone, Debug)]
pub struct Report {
    /// Heading.
    pub title: String,
    /// One row per benchmarked device or variant.
    pub rows: Vec<Row>,
    /// Remarks under the table (e.g. whether the results agree).
    pub notes: Vec<String>,
}

/// What [`matmul`] found: the report, and the devices whose product is outside the stated
/// tolerance of the reference's (each as its note); a tool that prints the report fails when
/// there is any.
#[derive(Clone, Debug)]
pub struct MatmulFigures {
    /// The table, chart and notes.
    pub report: Report,
    /// The notes of the devices that disagree with the reference.
    pub disagreements: Vec<String>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Report {
    /// The measurements that ran.
    pub fn measured(&self) -> impl Iterator<Item = &Measurement> {
        self.rows.iter().filter_map(|r| match r {
            Row::Measured(m) => Some(m),
            Row::Skipped { .. } => None,
        })
    }

    /// The measurement on `device`, if there is one.
    pub fn on(&self, device: Device) -> Option<&Measurement> {
        self.measured().find(|m| m.device == device)
    }

    fn slowest_median(&self) -> Option<Duration> {
        self.measured().map(Measurement::median).max()
    }

    /// Each row as display cells: `Ok([label, runs, min, median, mean, total, speed-up])` for a
    /// measurement (speed-up of medians over the slowest row's: a first run that pays for a
    /// compilation moves the mean, not the median), `Err((label, reason))` for a skipped one.
    fn cells(&self) -> Vec<std::result::Result<[String; 7], (String, String)>> {
        let slowest = self.slowest_median();
        self.rows
            .iter()
            .map(|row| match row {
                Row::Measured(m) => {
                    let speedup = slowest
                        .map(|s| s.as_secs_f64() / m.median().as_secs_f64().max(1e-12))
                        .unwrap_or(1.0);
                    Ok([
                        m.label.clone(),
                        m.times.len().to_string(),
                        format!("{:.4}", ms(m.min())),
                        format!("{:.4}", ms(m.median())),
                        format!("{:.4}", ms(m.mean())),
                        format!("{:.4}", ms(m.total())),
                        format!("{speedup:.1}x"),
                    ])
                }
                Row::Skipped { label, reason } => Err((label.clone(), reason.clone())),
            })
            .collect()
    }

    /// A fixed-width table: min, median, mean, total and speed-up over the slowest row.
    pub fn table(&self) -> String {
        let mut out = format!("{}\n", self.title);
        let _ = writeln!(
            out,
            "{:<44} {:>5} {:>12} {:>12} {:>12} {:>12} {:>9}",
            "benchmark", "runs", "min ms", "median ms", "mean ms", "total ms", "speed-up"
        );
        for row in self.cells() {
            let _ = match row {
                Ok([label, runs, min, median, mean, total, speedup]) => writeln!(
                    out,
                    "{label:<44} {runs:>5} {min:>12} {median:>12} {mean:>12} {total:>12} {speedup:>9}"
                ),
                Err((label, reason)) => writeln!(out, "{label:<44} skipped: {reason}"),
            };
        }
        for note in &self.notes {
            let _ = writeln!(out, "{note}");
        }
        out
    }

    /// The table as HTML.
    pub fn html_table(&self) -> String {
        let mut out = format!(
            "<div class=\"tensorbook-bench\"><b>{}</b><table><thead><tr><th>benchmark</th><th>runs</th><th>min ms</th><th>median ms</th><th>mean ms</th><th>total ms</th><th>speed-up</th></tr></thead><tbody>",
            html_escape(&self.title)
        );
        for row in self.cells() {
            match row {
                Ok(cells) => {
                    out.push_str("<tr>");
                    for (i, cell) in cells.iter().enumerate() {
                        let cell = html_escape(cell);
                        let _ = if i == 0 {
                            write!(out, "<td><code>{cell}</code></td>")
                        } else {
                            write!(out, "<td>{cell}</td>")
                        };
                    }
                    out.push_str("</tr>");
                }
                Err((label, reason)) => {
                    let _ = write!(
                        out,
                        "<tr><td><code>{}</code></td><td colspan=\"6\">skipped: {}</td></tr>",
                        html_escape(&label),
                        html_escape(&reason)
                    );
                }
            }
        }
        out.push_str("</tbody></table>");
        for note in &self.notes {
            let _ = write!(out, "<p>{}</p>", html_escape(note));
        }
        out.push_str("</div>");
        out
    }

    /// A bar chart of the median times on a log scale (binary and cuda differ by 10^4): the
    /// statistic the speed-up column uses.
    pub fn svg_chart(&self) -> Result<String> {
        let bars: Vec<(String, f64)> = self
            .measured()
            .map(|m| (m.label.clone(), ms(m.median()).max(1e-4)))
            .collect();
        let mut svg = String::new();
        if bars.is_empty() {
            return Ok(svg);
        }
        let chart_error = |e: &dyn std::fmt::Display| Error::InvalidArgument {
            op: "bench::svg_chart",
            message: format!("plotting failed: {e}"),
        };
        {
            let height = 80 + 50 * bars.len() as u32;
            let root = SVGBackend::with_string(&mut svg, (760, height)).into_drawing_area();
            root.fill(&WHITE).map_err(|e| chart_error(&e))?;
            let max = bars.iter().map(|b| b.1).fold(f64::MIN, f64::max) * 3.0;
            let min = bars.iter().map(|b| b.1).fold(f64::MAX, f64::min) / 3.0;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!("{} (median ms, log scale)", self.title),
                    ("sans-serif", 16),
                )
                .margin(12)
                .x_label_area_size(30)
                .y_label_area_size(230)
                .build_cartesian_2d((min..max).log_scale(), 0..bars.len())
                .map_err(|e| chart_error(&e))?;
            let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(bars.len())
                .y_label_formatter(&|i| labels.get(*i).cloned().unwrap_or_default())
                .x_desc("milliseconds")
                .draw()
                .map_err(|e| chart_error(&e))?;
            chart
                .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                    let color = Palette99::pick(i).filled();
                    Rectangle::new([(min, i), (*v, i + 1)], color)
                }))
                .map_err(|e| chart_error(&e))?;
            chart
                .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
                    Text::new(format!("{v:.3} ms"), (*v, i), ("sans-serif", 13))
                }))
                .map_err(|e| chart_error(&e))?;
            root.present().map_err(|e| chart_error(&e))?;
        }
        Ok(svg)
    }

    /// The report as JSON (what `tensorbook bench --json` prints).
    pub fn to_json(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .rows
            .iter()
            .map(|row| match row {
                Row::Measured(m) => serde_json::json!({
                    "label": m.label,
                    "device": m.device.to_string(),
                    "runs": m.times.len(),
                    "min_ms": ms(m.min()),
                    "median_ms": ms(m.median()),
                    "mean_ms": ms(m.mean()),
                    "total_ms": ms(m.total()),
                    "times_ms": m.times.iter().map(|t| ms(*t)).collect::<Vec<_>>(),
                }),
                Row::Skipped { label, reason } => {
                    serde_json::json!({ "label": label, "skipped": reason })
                }
            })
            .collect();
        serde_json::json!({ "title": self.title, "rows": rows, "notes": self.notes })
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}

impl Displayable for Report {
    fn mime_bundle(&self) -> Vec<(&'static str, String)> {
        let chart = self.svg_chart().unwrap_or_default();
        vec![
            ("text/plain", self.table()),
            ("text/html", format!("{}{chart}", self.html_table())),
        ]
    }
}

impl Report {
    /// Rich output for evcxr when a report is a cell's last expression.
    pub fn evcxr_display(&self) {
        crate::evcxr_display::emit_bundle(&self.mime_bundle());
    }
}

/// The blog's matmul comparison: `{m, k} x {k, n}` in `dtype` on each device.
#[derive(Clone, Debug)]
pub struct MatmulBench {
    /// Rows of the left operand (10000 in the blog).
    pub m: usize,
    /// The contracted dimension (784).
    pub k: usize,
    /// Columns of the right operand (10).
    pub n: usize,
    /// Element type (f32 in the blog).
    pub dtype: DType,
    /// Where to run it, in order; the first one that runs is the reference for agreement.
    pub devices: Vec<Device>,
    /// Warm-up and timed runs per device.
    pub runs: Runs,
    /// Seed of the operands (identical values on every device).
    pub seed: u64,
}

impl Default for MatmulBench {
    /// The blog's shape on binary, host and cuda.
    fn default() -> MatmulBench {
        MatmulBench {
            m: 10_000,
            k: 784,
            n: 10,
            dtype: DType::F32,
            devices: vec![Device::BINARY, Device::host(0), Device::cuda(0)],
            runs: Runs::default(),
            seed: 42,
        }
    }
}

/// How far two computations of one product may be apart, relative to the sum of the absolute
/// values of the terms of each element (`|a| . |b|`): twice the rounding bound of a sum of `k`
/// products in f64 (`2 k u`, room for k up to ~70,000); in f32, 2^-10, which also admits a GPU's
/// TF32 products (10-bit mantissas) and sums of up to ~8,000 terms.
pub fn matmul_tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => 2f64.powi(-36),
        _ => 2f64.powi(-10),
    }
}

/// The agreement of a device's product with the reference's: a note, and whether every
/// element is within `tolerance * scale` of the reference (`scale` is `|a| . |b|`, element by
/// element).
pub fn matmul_agreement(
    device: Device,
    reference: (Device, &[f64]),
    scale: &[f64],
    values: &[f64],
    tolerance: f64,
) -> (String, bool) {
    let (ref_device, ref_values) = reference;
    let mut diff = 0.0f64;
    let mut worst = 0.0f64;
    let mut agrees = ref_values.len() == values.len();
    for ((r, v), s) in ref_values.iter().zip(values).zip(scale) {
        let d = (r - v).abs();
        diff = diff.max(d);
        // NaN never agrees (it is within no bound).
        let within = d <= tolerance * s.max(f64::MIN_POSITIVE);
        if !within {
            agrees = false;
        }
        if s.is_finite() && *s > 0.0 {
            worst = worst.max(d / s);
        } else if d > 0.0 || d.is_nan() {
            worst = f64::INFINITY;
        }
    }
    let verdict = if agrees {
        "agrees with"
    } else {
        "DISAGREES with"
    };
    (
        format!(
            "{device} {verdict} {ref_device}: max |difference| = {diff:.3e}, {worst:.1e} of \
             |a|.|b| (tolerance {tolerance:.1e})"
        ),
        agrees,
    )
}

/// Runs a [`MatmulBench`]: operands from one seed on every device, each device timed, the
/// results compared with the first device's within [`matmul_tolerance`] (a note per device;
/// a device outside it is a disagreement). A device whose client is unavailable becomes a
/// skipped row with the reason.
pub fn matmul(bench: &MatmulBench, progress: &mut dyn Progress) -> Result<MatmulFigures> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    let mut disagreements = Vec::new();
    // The first device's product and the scale of each element's rounding (|a| . |b|).
    let mut reference: Option<(Device, Vec<f64>, Vec<f64>)> = None;
    let shape = format!(
        "{{{}, {}}} x {{{}, {}}} {}",
        bench.m, bench.k, bench.k, bench.n, bench.dtype
    );
    for &device in &bench.devices {
        let label = format!("dot {shape}");
        let info = client_info(device.client);
        if !info.available {
            rows.push(Row::Skipped {
                label: format!("{label} @ {device}"),
                reason: info.reason.unwrap_or_else(|| "unavailable".into()),
            });
            continue;
        }
        let place = on(device);
        let a = place.random_uniform(bench.seed, bench.dtype, &[bench.m, bench.k], 0.0, 1.0)?;
        let b = place.random_normal(bench.seed + 1, bench.dtype, &[bench.k, bench.n], 0.0, 1.0)?;
        let m = measure(&label, bench.runs, progress, || a.dot(&b))?;
        let values = a.dot(&b)?.to_f64_vec()?;
        match &reference {
            None => {
                let scale = a.abs()?.dot(&b.abs()?)?.to_f64_vec()?;
                reference = Some((device, values, scale));
            }
            Some((ref_device, ref_values, scale)) => {
                let (note, agrees) = matmul_agreement(
                    device,
                    (*ref_device, ref_values),
                    scale,
                    &values,
                    matmul_tolerance(bench.dtype),
                );
                if !agrees {
                    disagreements.push(note.clone());
                }
                notes.push(note);
            }
        }
        rows.push(Row::Measured(m));
    }
    progress.finish();
    Ok(MatmulFigures {
        report: Report {
            title: format!("matmul {shape}"),
            rows,
            notes,
        },
        disagreements,
    })
}

/// Parses `binary,host,cuda` (or `host:1`, `cuda:0`) into devices.
pub fn parse_devices(list: &str) -> Result<Vec<Device>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Device::parse)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(Vec<(usize, usize)>);

    impl Progress for Count {
        fn update(&mut self, _: &str, done: usize, total: usize) {
            self.0.push((done, total));
        }
    }

    #[test]
    fn statistics_of_known_times() {
        let m = Measurement {
            label: "x".into(),
            device: Device::host(0),
            times: [4, 1, 3, 2].map(Duration::from_millis).to_vec(),
        };
        assert_eq!(m.min(), Duration::from_millis(1));
        assert_eq!(m.median(), Duration::from_micros(2500));
        assert_eq!(m.mean(), Duration::from_micros(2500));
        assert_eq!(m.total(), Duration::from_millis(10));
    }

    #[test]
    fn the_label_comes_from_the_result_placement_not_the_default() {
        let t = on(Device::BINARY).iota(DType::F32, &[4], None).unwrap();
        let mut progress = Count(Vec::new());
        let runs = Runs {
            warmup: 1,
            timed: 3,
        };
        let m = measure("add", runs, &mut progress, || t.add(1.0)).unwrap();
        assert_eq!(m.device, Device::BINARY);
        assert_eq!(m.label, "add @ binary");
        assert_eq!(m.times.len(), 3);
        assert_eq!(progress.0, vec![(0, 3), (1, 3), (2, 3), (3, 3)]);
    }

    #[test]
    fn matmul_compares_devices_and_renders() {
        let bench = MatmulBench {
            m: 20,
            k: 8,
            n: 3,
            devices: vec![Device::BINARY, Device::host(0), Device::cuda(0)],
            runs: Runs {
                warmup: 0,
                timed: 2,
            },
            ..MatmulBench::default()
        };
        let figures = matmul(&bench, &mut Silent).unwrap();
        let report = &figures.report;
        let gpu = usize::from(client_info(crate::device::Client::Cuda).available);
        assert_eq!(report.measured().count(), 2 + gpu);
        assert!(report.on(Device::host(0)).is_some());
        assert!(
            report.notes[0].starts_with("host:0 agrees with binary"),
            "{:?}",
            report.notes
        );
        assert!(figures.disagreements.is_empty());
        // With a GPU, its row is measured and checked like host's.
        if client_info(crate::device::Client::Cuda).available {
            assert_eq!(report.measured().count(), 3);
            assert!(report.notes[1].starts_with("cuda:0 agrees with binary"));
        }
        let table = report.table();
        assert!(
            table.contains("@ binary") && table.contains("@ host:0"),
            "{table}"
        );
        if !client_info(crate::device::Client::Cuda).available {
            assert!(table.contains("skipped"), "{table}");
        }
        let bundle = report.mime_bundle();
        let html = &bundle[1].1;
        assert!(html.contains("<table>") && html.contains("<svg"), "{html}");
        assert_eq!(report.to_json()["rows"].as_array().unwrap().len(), 3);
    }

    /// A wrong product is named a disagreement; rounding within the bound is not.
    #[test]
    fn a_wrong_product_disagrees() {
        let reference = [10.0, -3.0, 0.5];
        let scale = [40.0, 12.0, 2.0];
        let tolerance = matmul_tolerance(DType::F32);
        let rounded = [10.0 + 1e-5, -3.0, 0.5 - 1e-6];
        let (note, agrees) = matmul_agreement(
            Device::host(0),
            (Device::BINARY, &reference),
            &scale,
            &rounded,
            tolerance,
        );
        assert!(
            agrees && note.starts_with("host:0 agrees with binary"),
            "{note}"
        );
        for wrong in [[10.0, -3.0, 0.6], [10.0, 3.0, 0.5], [f64::NAN, -3.0, 0.5]] {
            let (note, agrees) = matmul_agreement(
                Device::cuda(0),
                (Device::BINARY, &reference),
                &scale,
                &wrong,
                tolerance,
            );
            assert!(!agrees, "{wrong:?}");
            assert!(note.starts_with("cuda:0 DISAGREES with binary"), "{note}");
        }
        let (_, agrees) = matmul_agreement(
            Device::cuda(0),
            (Device::BINARY, &reference),
            &scale,
            &reference[..2],
            tolerance,
        );
        assert!(!agrees, "a result of another length");
    }

    #[test]
    fn zero_timed_runs_is_an_error() {
        let runs = Runs {
            warmup: 0,
            timed: 0,
        };
        let err = measure("x", runs, &mut Silent, || Tensor::scalar(1.0f32)).unwrap_err();
        assert!(err.to_string().contains("timed run"));
    }

    #[test]
    fn device_lists_parse() {
        let d = parse_devices("binary, host,cuda:1").unwrap();
        assert_eq!(d, vec![Device::BINARY, Device::host(0), Device::cuda(1)]);
        assert!(parse_devices("tpu").is_err());
    }
}
