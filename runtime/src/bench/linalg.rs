//! The linear-algebra benchmark: `svd`, `qr`, `cholesky`, `solve` and `eigh` of f64 matrices
//! and the product, `qr`, `cholesky` and `eigh` of c128 ones at 256, 512 and 1024 per device, beside
//! NumPy's `numpy.linalg`
//! and `@` (the same LAPACK routines and zgemm, from NumPy's own OpenBLAS) timed in the same
//! invocation by [`REFERENCE_SCRIPT`]; and
//! `fft`/`rfft` of an f64 signal of 2^20 entries and of a prime length beside `numpy.fft`.

use super::{measure, Progress, Report, Row};
use crate::client::client_info;
use crate::create::on;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// The matrix sizes.
pub const SIZES: [usize; 3] = [256, 512, 1024];

/// The functions, as NumPy names them.
pub const FUNCTIONS: [&str; 9] = [
    "svd",
    "qr",
    "cholesky",
    "solve",
    "eigh",
    "dot_c128",
    "qr_c128",
    "cholesky_c128",
    "eigh_c128",
];

/// The signal lengths of the FFT rows: a power of two and a prime (Bluestein's or Rader's
/// algorithm, where a radix-2 FFT cannot go).
pub const FFT_LENGTHS: [usize; 2] = [1 << 20, 1_000_003];

/// The transforms, as NumPy names them.
pub const TRANSFORMS: [&str; 2] = ["fft", "rfft"];

/// What to run.
#[derive(Clone, Debug)]
pub struct LinalgBench {
    /// Devices in order.
    pub devices: Vec<Device>,
    /// The sizes (a subset of [`SIZES`] or others).
    pub sizes: Vec<usize>,
    /// The FFT rows' signal lengths ([`FFT_LENGTHS`], or none).
    pub fft_lengths: Vec<usize>,
    /// Warm-up and timed runs.
    pub runs: super::Runs,
}

/// NumPy's medians, keyed by row label (`"svd 256"`), with NumPy's version and BLAS core.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reference {
    /// `NumPy 2.3.1 (OpenBLAS 0.3.29, SkylakeX)`.
    pub name: String,
    /// `(label, median seconds)`.
    pub medians: Vec<(String, f64)>,
}

/// NumPy's side: the same functions on the same kinds of matrices (random, made symmetric
/// positive definite for cholesky and eigh), one JSON line with the medians and which
/// OpenBLAS kernel NumPy uses.
pub const REFERENCE_SCRIPT: &str = r#"
import json, sys, time, ctypes, glob, os
sizes = [int(s) for s in sys.argv[1].split(",") if s]
warmup, timed = int(sys.argv[2]), int(sys.argv[3])
lengths = [int(s) for s in sys.argv[4].split(",") if s] if len(sys.argv) > 4 else []
try:
    import numpy as np
except Exception as e:
    print(json.dumps({"error": f"no numpy: {e}"})); sys.exit(0)
core = "?"
try:
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "libscipy_openblas*"))
    lib = ctypes.CDLL(libs[0])
    f = lib.scipy_openblas_get_corename64_
    f.restype = ctypes.c_char_p
    core = f().decode()
except Exception:
    pass
def median(f):
    for _ in range(warmup):
        f()
    times = []
    for _ in range(timed):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]
rng = np.random.default_rng(0)
out = {}
for n in sizes:
    a = rng.uniform(-1, 1, (n, n))
    spd = a @ a.T + n * np.eye(n)
    b = rng.uniform(-1, 1, n)
    out[f"svd {n}"] = median(lambda: np.linalg.svd(a))
    out[f"qr {n}"] = median(lambda: np.linalg.qr(a))
    out[f"cholesky {n}"] = median(lambda: np.linalg.cholesky(spd))
    out[f"solve {n}"] = median(lambda: np.linalg.solve(a, b))
    out[f"eigh {n}"] = median(lambda: np.linalg.eigh(spd))
    z = a + 1j * rng.uniform(-1, 1, (n, n))
    out[f"dot_c128 {n}"] = median(lambda: z @ z)
    hermitian = z @ z.conj().T + n * np.eye(n)
    out[f"qr_c128 {n}"] = median(lambda: np.linalg.qr(z))
    out[f"cholesky_c128 {n}"] = median(lambda: np.linalg.cholesky(hermitian))
    out[f"eigh_c128 {n}"] = median(lambda: np.linalg.eigh(hermitian))
for n in lengths:
    x = rng.uniform(-1, 1, n)
    out[f"fft {n}"] = median(lambda: np.fft.fft(x))
    out[f"rfft {n}"] = median(lambda: np.fft.rfft(x))
print(json.dumps({"name": f"NumPy {np.__version__} (OpenBLAS core {core})", "medians": out}))
"#;

/// One timed function of the matrices.
type Case<'a> = Box<dyn Fn() -> Result<Tensor> + 'a>;

fn label(function: &str, n: usize) -> String {
    format!("{function} {n}")
}

/// The rows of `functions` at `n` on a `device` that is not available, with the reason.
fn skipped(functions: &[&str], n: usize, device: Device, reason: &Option<String>) -> Vec<Row> {
    functions
        .iter()
        .map(|f| Row::Skipped {
            label: format!("{} @ {device}", label(f, n)),
            reason: reason.clone().unwrap_or_else(|| "unavailable".into()),
        })
        .collect()
}

/// The note comparing a measured row with NumPy's median of the same label, if there is one.
fn ratio(
    device: Device,
    row: &str,
    m: &super::Measurement,
    numpy: &std::result::Result<Reference, String>,
) -> Option<String> {
    let reference = numpy.as_ref().ok()?;
    let (_, theirs) = reference.medians.iter().find(|(l, _)| *l == row)?;
    let ours = m.median().as_secs_f64();
    Some(format!(
        "{device}: {row} at {:.2}x {} ({:.2} ms against {:.2} ms)",
        theirs / ours.max(1e-12),
        reference.name,
        ours * 1e3,
        theirs * 1e3
    ))
}

/// Runs the benchmark beside NumPy's medians (or why there are none).
pub fn run(
    bench: &LinalgBench,
    numpy: &std::result::Result<Reference, String>,
    progress: &mut dyn Progress,
) -> Result<Report> {
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    if let Some(library) = crate::backend::host::lapack_library() {
        notes.push(format!("host's LAPACK: {library}"));
    } else {
        notes.push("host's LAPACK: none loaded, host uses the reference algorithms".into());
    }
    for &device in &bench.devices {
        let info = client_info(device.client);
        for &n in &bench.sizes {
            if !info.available {
                rows.extend(skipped(&FUNCTIONS, n, device, &info.reason));
                continue;
            }
            let place = on(device);
            let a = place.random_uniform(n as u64, DType::F64, &[n, n], -1.0, 1.0)?;
            let eye = place.eye(DType::F64, n)?.multiply(n as f64)?;
            let spd = a.dot(&a.transpose(..)?)?.add(&eye)?;
            let b = place.random_uniform(n as u64 + 1, DType::F64, &[n], -1.0, 1.0)?;
            let imag = place.random_uniform(n as u64 + 2, DType::F64, &[n, n], -1.0, 1.0)?;
            let z = a.complex(&imag)?;
            let hermitian = z.dot(&z.adjoint()?)?.add(&eye)?;
            let cases: [(&str, Case<'_>); 9] = [
                ("svd", Box::new(|| Ok(a.svd()?.1))),
                ("qr", Box::new(|| Ok(a.qr()?.1))),
                ("cholesky", Box::new(|| spd.cholesky())),
                ("solve", Box::new(|| a.solve(&b))),
                ("eigh", Box::new(|| Ok(spd.eigh()?.0))),
                ("dot_c128", Box::new(|| z.dot(&z))),
                ("qr_c128", Box::new(|| Ok(z.qr()?.1))),
                ("cholesky_c128", Box::new(|| hermitian.cholesky())),
                ("eigh_c128", Box::new(|| Ok(hermitian.eigh()?.0))),
            ];
            for (name, f) in cases.iter() {
                let row = label(name, n);
                let m = measure(&row, bench.runs, progress, f)?;
                notes.extend(ratio(device, &row, &m, numpy));
                rows.push(Row::Measured(m));
            }
        }
        for &n in &bench.fft_lengths {
            if !info.available {
                rows.extend(skipped(&TRANSFORMS, n, device, &info.reason));
                continue;
            }
            let x = on(device).random_uniform(n as u64, DType::F64, &[n], -1.0, 1.0)?;
            let cases: [(&str, Case<'_>); 2] = [
                ("fft", Box::new(|| x.fft())),
                ("rfft", Box::new(|| x.rfft())),
            ];
            for (name, f) in cases.iter() {
                let row = label(name, n);
                let m = measure(&row, bench.runs, progress, f)?;
                notes.extend(ratio(device, &row, &m, numpy));
                rows.push(Row::Measured(m));
            }
        }
    }
    if let Err(why) = numpy {
        notes.push(format!("NumPy: {why}"));
    }
    progress.finish();
    Ok(Report {
        title: "linalg: f64 factorisations, solves and FFTs, beside NumPy in the same run".into(),
        rows,
        notes,
    })
}
