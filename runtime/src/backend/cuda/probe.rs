//! Whether cuda can be used on this machine, and with what: the driver, cuBLAS and NVRTC of
//! CUDA 12 or CUDA 13 (`libraries.rs` finds the files), chosen so that the driver runs them,
//! and the GPUs. Decided once per process (per notebook cell: each has its own copy), without
//! touching anything in cudarc that panics when a library is missing.

use std::path::PathBuf;
use std::sync::OnceLock;

use super::blas::Blas;
use super::driver::{Driver, Gpu};
use super::libraries::{self, Candidate, Kind};
use super::nvrtc::Nvrtc;

/// The oldest driver API the backend accepts (CUDA 12.0); the driver calls used all exist
/// since 12.0 and are kept by 13.
const MIN_DRIVER_VERSION: i32 = 12000;

/// What the cuda client found on this machine, for `tensorbook clients` and `:clients`.
#[derive(Clone, Debug, Default)]
pub struct CudaReport {
    /// The driver (`libcuda.so.1`).
    pub driver: Component,
    /// cuBLAS.
    pub blas: Component,
    /// NVRTC.
    pub nvrtc: Component,
    /// The GPUs the driver reports.
    pub gpus: Vec<Gpu>,
}

/// One library: the file in use and its version, or why none is.
#[derive(Clone, Debug, Default)]
pub struct Component {
    /// The file in use.
    pub path: Option<PathBuf>,
    /// Its version (`CUDA 13.0`, `cuBLAS 13.0.2`, `NVRTC 13.0`).
    pub version: Option<String>,
    /// Why none is in use, or what was passed over.
    pub note: Option<String>,
    /// Other files of the same library found here and not used.
    pub others: Vec<PathBuf>,
}

impl Component {
    /// One line: the version and file, or the note.
    pub fn line(&self) -> String {
        let mut line = match (&self.version, &self.path, &self.note) {
            (Some(v), Some(p), _) => format!("{v} ({})", p.display()),
            (Some(v), None, _) => v.clone(),
            (None, _, Some(note)) => note.clone(),
            (None, _, None) => "not found".to_string(),
        };
        if let (Some(note), Some(_)) = (&self.note, &self.version) {
            line.push_str(&format!("; passed over: {note}"));
        }
        if !self.others.is_empty() {
            let others: Vec<String> = self
                .others
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            line.push_str(&format!("; also here: {}", others.join(", ")));
        }
        line
    }
}

impl CudaReport {
    /// The report as lines: driver, libraries, GPUs.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![
            format!("driver: {}", self.driver.line()),
            format!("cuBLAS: {}", self.blas.line()),
            format!("NVRTC:  {}", self.nvrtc.line()),
        ];
        for g in &self.gpus {
            out.push(format!(
                "cuda:{}: {}, {:.1} GiB, compute capability {}.{}",
                g.ordinal,
                g.name,
                g.memory_bytes as f64 / (1u64 << 30) as f64,
                g.compute_capability.0,
                g.compute_capability.1
            ));
        }
        out
    }
}

/// The libraries in use when cuda is available.
pub(crate) struct Setup {
    /// `cuDriverGetVersion`: 13000 for CUDA 13.0.
    pub(crate) driver_version: i32,
    pub(crate) blas: Blas,
    pub(crate) nvrtc: Nvrtc,
    pub(crate) device_count: usize,
}

struct State {
    setup: std::result::Result<Setup, String>,
    report: CudaReport,
    /// The same as `setup`, as the client API states it.
    status: std::result::Result<usize, String>,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| {
        // A library may still misbehave when called; the probe must not panic.
        std::panic::catch_unwind(discover).unwrap_or_else(|_| {
            let why = "the CUDA libraries found here could not be used".to_string();
            State {
                setup: Err(why.clone()),
                report: CudaReport::default(),
                status: Err(why),
            }
        })
    })
}

/// Whether cuda can be used here: the number of devices, or why not, in one line.
pub fn probe() -> &'static std::result::Result<usize, String> {
    &state().status
}

/// What was found: driver, libraries, GPUs.
pub fn report() -> &'static CudaReport {
    &state().report
}

/// The libraries in use, when cuda is available.
pub(crate) fn setup() -> std::result::Result<&'static Setup, &'static str> {
    state().setup.as_ref().map_err(String::as_str)
}

/// The oldest driver release that runs CUDA `major`.
fn minimum_driver(major: u32) -> &'static str {
    if major >= 13 {
        "580"
    } else {
        "525"
    }
}

fn cuda_version(v: i32) -> String {
    format!("CUDA {}.{}", v / 1000, v % 1000 / 10)
}

fn discover() -> State {
    let mut report = CudaReport::default();
    let driver = Driver::find();
    let max_major = driver
        .as_ref()
        .ok()
        .map(|d| u32::try_from(d.version / 1000).unwrap_or(0));
    match &driver {
        Ok(d) => {
            report.driver.path = Some(d.path.clone());
            report.driver.version = Some(match kernel_module_release() {
                Some(release) => format!("{} (driver {release})", cuda_version(d.version)),
                None => cuda_version(d.version),
            });
        }
        Err(why) => report.driver.note = Some(why.clone()),
    }
    let blas = choose(Kind::Blas, max_major, Blas::bind, &mut report.blas, |b| {
        (b.describe(), b.path.clone())
    });
    let nvrtc = choose(
        Kind::Nvrtc,
        max_major,
        Nvrtc::bind,
        &mut report.nvrtc,
        |n| (n.describe(), n.path.clone()),
    );
    let setup = (|| {
        let driver = driver.as_ref().map_err(|_| {
            // One line naming what is missing and what is here.
            let mut why = "no NVIDIA driver (libcuda.so.1 not found)".to_string();
            for (label, c) in [("cuBLAS", &report.blas), ("NVRTC", &report.nvrtc)] {
                match &c.version {
                    Some(v) => why.push_str(&format!("; {v} is here")),
                    None => why.push_str(&format!("; no {label}")),
                }
            }
            why
        })?;
        let version = driver.version;
        if version < MIN_DRIVER_VERSION {
            return Err(format!(
                "the NVIDIA driver supports {}; tensorbook needs CUDA 12.0 or newer (driver 525+)",
                cuda_version(version)
            ));
        }
        // The driver's own failures first: without a GPU the libraries do not matter.
        let device_count = driver.start()?;
        let blas = blas.map_err(|why| format!("cuBLAS: {why}"))?;
        let nvrtc = nvrtc.map_err(|why| format!("NVRTC: {why}"))?;
        Ok(Setup {
            driver_version: version,
            blas,
            nvrtc,
            device_count,
        })
    })();
    if let (Ok(s), Ok(d)) = (&setup, &driver) {
        report.gpus = (0..s.device_count).filter_map(|i| d.gpu(i)).collect();
    }
    if let Ok(d) = driver {
        // Kept loaded for the process: cudarc opens `libcuda.so.1` by name, which then finds
        // this one even when its folder is not on the loader's path.
        std::mem::forget(d);
    }
    let status = setup.as_ref().map(|s| s.device_count).map_err(Clone::clone);
    State {
        setup,
        report,
        status,
    }
}

/// The first file of `kind` that the driver can run (its major at most `max_major`) and that
/// binds; the report records it, the files passed over and why.
fn choose<T>(
    kind: Kind,
    max_major: Option<u32>,
    bind: impl Fn(libraries::Loaded) -> std::result::Result<T, String>,
    component: &mut Component,
    describe: impl Fn(&T) -> (String, PathBuf),
) -> std::result::Result<T, String> {
    let mut passed_over = Vec::new();
    let mut chosen = None;
    for candidate in libraries::candidates(kind) {
        if chosen.is_some() {
            if candidate.file.is_absolute() && Some(&candidate.file) != component.path.as_ref() {
                component.others.push(candidate.file.clone());
            }
            continue;
        }
        let too_new = matches!((candidate.major, max_major), (Some(m), Some(max)) if m > max);
        if too_new {
            if let Some(why) = mismatch(&candidate, max_major) {
                passed_over.push(why);
            }
            continue;
        }
        match libraries::load(&candidate).and_then(&bind) {
            Ok(lib) => {
                let (version, path) = describe(&lib);
                component.version = Some(version);
                component.path = Some(path);
                chosen = Some(lib);
            }
            // A bare name that the loader does not know is not news.
            Err(_) if !candidate.file.is_absolute() => {}
            Err(why) => passed_over.push(why),
        }
    }
    if !passed_over.is_empty() {
        component.note = Some(passed_over.join("; "));
    }
    chosen.ok_or_else(|| {
        if passed_over.is_empty() {
            let names: Vec<String> = kind.file_names().into_iter().map(|n| n.0).collect();
            let why = format!(
                "{} is not installed ({} neither on the loader's path nor in the CUDA folders \
                 and NVIDIA pip packages searched)",
                kind.label(),
                names.join(", ")
            );
            component.note = Some(why.clone());
            why
        } else {
            passed_over.join("; ")
        }
    })
}

/// Why a library of a newer major than the driver's is not used; `None` when no such file
/// is here after all.
fn mismatch(candidate: &Candidate, max_major: Option<u32>) -> Option<String> {
    let major = candidate.major?;
    if !candidate.file.is_absolute() {
        // Present on the loader's path? Only loading tells.
        libraries::load(candidate).ok()?;
    }
    Some(format!(
        "{} is CUDA {major}'s and needs driver {} or newer, this driver runs CUDA {}",
        candidate.file.display(),
        minimum_driver(major),
        max_major.unwrap_or(0)
    ))
}

/// The kernel module's release (`580.159.03`), when the system says.
fn kernel_module_release() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    text.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}
