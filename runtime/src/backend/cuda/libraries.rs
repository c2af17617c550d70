//! Where CUDA's libraries are on this machine, for CUDA 12 and CUDA 13 alike, found at run
//! time.
//!
//! cudarc's loader is built for one CUDA version and asks for `libcublas.so.12`-style names,
//! so a machine with only CUDA 13 would look CUDA-less. Here each library is looked for under
//! the names of both majors, in the places CUDA is installed: the loader's own search
//! (`LD_LIBRARY_PATH`, ldconfig), `CUDA_HOME`/`CUDA_PATH`, the NVIDIA pip packages of the
//! Python environments in reach (where torch and JAX find theirs), `/usr/local/cuda*` and the
//! driver's usual folders. Which of the files found is used is decided in `probe.rs`, against
//! the driver's version.

use std::path::{Path, PathBuf};

use libloading::Library;

use crate::settings;

/// The CUDA majors whose libraries are used, newest first.
pub(crate) const MAJORS: [u32; 2] = [13, 12];

/// A library the cuda backend loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The driver API (`libcuda.so.1`), one name for every CUDA version.
    Driver,
    /// cuBLAS: dot.
    Blas,
    /// NVRTC: every kernel, compiled at run time.
    Nvrtc,
    /// NCCL: all-reduce between GPUs (optional).
    Nccl,
}

impl Kind {
    /// The name people know the library by.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::Driver => "driver",
            Kind::Blas => "cuBLAS",
            Kind::Nvrtc => "NVRTC",
            Kind::Nccl => "NCCL",
        }
    }

    /// Its file names, each with the CUDA major it belongs to (`None`: any).
    pub(crate) fn file_names(self) -> Vec<(String, Option<u32>)> {
        let per_major = |stem: &str| {
            MAJORS
                .iter()
                .map(|&m| (format!("lib{stem}.so.{m}"), Some(m)))
                .collect()
        };
        match self {
            Kind::Driver => vec![("libcuda.so.1".into(), None)],
            Kind::Nccl => vec![("libnccl.so.2".into(), None)],
            Kind::Blas => per_major("cublas"),
            Kind::Nvrtc => per_major("nvrtc"),
        }
    }
}

/// A file to try: a bare name, left to the loader's own search, or a path found here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The file name (bare) or its path.
    pub(crate) file: PathBuf,
    /// The CUDA major its name says, when it has one.
    pub(crate) major: Option<u32>,
}

impl Candidate {
    /// The file's name without folders.
    pub(crate) fn name(&self) -> String {
        self.file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// Every file of `kind` worth trying, newest major first; for each name the loader's own
/// search comes first (what the user configured), then the folders of [`search_dirs`].
pub(crate) fn candidates(kind: Kind) -> Vec<Candidate> {
    let dirs = search_dirs();
    let mut out: Vec<Candidate> = Vec::new();
    for (name, major) in kind.file_names() {
        out.push(Candidate {
            file: PathBuf::from(&name),
            major,
        });
        for dir in &dirs {
            let file = dir.join(&name);
            if file.is_file() && !out.iter().any(|c| same_file(&c.file, &file)) {
                out.push(Candidate { file, major });
            }
        }
    }
    out
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The folders searched beyond the loader's own path, in order, each once and only those
/// that exist.
pub(crate) fn search_dirs() -> Vec<PathBuf> {
    let locations = settings::cuda_locations();
    let mut dirs = Vec::new();
    for root in &locations.toolkits {
        for sub in ["lib64", "lib", "targets/x86_64-linux/lib"] {
            dirs.push(root.join(sub));
        }
    }
    dirs.extend(python_library_dirs(&locations));
    dirs.push("/usr/local/cuda/lib64".into());
    // Versioned toolkits side by side: the newest first.
    let mut toolkits: Vec<PathBuf> = read_dir_names(Path::new("/usr/local"))
        .into_iter()
        .filter(|n| n.starts_with("cuda-"))
        .map(|n| Path::new("/usr/local").join(n).join("lib64"))
        .collect();
    toolkits.sort_by(|a, b| b.cmp(a));
    dirs.extend(toolkits);
    // Where containers and WSL put the driver.
    for d in [
        "/usr/local/nvidia/lib64",
        "/usr/local/nvidia/lib",
        "/usr/lib/wsl/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib64",
    ] {
        dirs.push(d.into());
    }
    // Each folder once, however it is reached (a venv's `lib64` is a link to its `lib`).
    let mut seen = Vec::new();
    dirs.retain(|d| match std::fs::canonicalize(d) {
        Ok(real) if real.is_dir() && !seen.contains(&real) => {
            seen.push(real);
            true
        }
        _ => false,
    });
    dirs
}

/// The `lib` folders of NVIDIA's pip packages (`nvidia/cu13/lib`, `nvidia/cublas/lib`, ...)
/// in the Python environments in reach: the activated virtual or conda environment, every
/// Python on `PATH` (the environment a venv's `bin` belongs to, not the interpreter it links
/// to), the user's site and the system's.
fn python_library_dirs(locations: &settings::CudaLocations) -> Vec<PathBuf> {
    let mut prefixes = locations.python_prefixes.clone();
    if let Some(home) = &locations.home {
        prefixes.push(home.join(".local"));
    }
    prefixes.push("/usr/local".into());
    prefixes.push("/usr".into());
    let mut out = Vec::new();
    for prefix in prefixes {
        for lib in ["lib", "lib64"] {
            let lib = prefix.join(lib);
            for python in read_dir_names(&lib) {
                if !python.starts_with("python3") {
                    continue;
                }
                for packages in ["site-packages", "dist-packages"] {
                    let nvidia = lib.join(&python).join(packages).join("nvidia");
                    let mut names = read_dir_names(&nvidia);
                    names.sort();
                    out.extend(names.into_iter().map(|n| nvidia.join(n).join("lib")));
                }
            }
        }
    }
    out
}

fn read_dir_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// A library loaded for good, with the file it came from.
pub(crate) struct Loaded {
    /// The open library (never closed: function pointers into it are kept).
    pub(crate) library: Library,
    /// The file, resolved through the loader when it was found by name.
    pub(crate) path: PathBuf,
}

impl Loaded {
    /// The call `name` of the library, or an error naming the file and the call.
    ///
    /// # Safety
    /// `T` is the call's C signature, and the value is used only while `self.library` is
    /// loaded (callers keep the library beside the pointers).
    pub(crate) unsafe fn symbol<T: Copy>(&self, name: &str) -> std::result::Result<T, String> {
        let symbol = format!("{name}\0");
        // SAFETY: the caller's promise.
        unsafe { self.library.get::<T>(symbol.as_bytes()) }
            .map(|s| *s)
            .map_err(|_| format!("{} lacks {name}", self.path.display()))
    }
}

/// The text of a static string a CUDA library returned (an error's name); `None` for null.
///
/// # Safety
/// `text` is null or points to a NUL-terminated string that outlives the call.
pub(crate) unsafe fn static_text(text: *const std::ffi::c_char) -> Option<String> {
    // SAFETY: the caller's promise; null is checked.
    (!text.is_null()).then(|| {
        unsafe { std::ffi::CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    })
}

/// Opens `candidate`. A library found in a folder of its own gets the libraries it opens by
/// name loaded first from the same folder (cuBLAS needs cuBLASLt; NVRTC opens its builtins
/// when it compiles), since that folder may not be on the loader's path: once a library is
/// loaded, the loader finds it by its name.
pub(crate) fn load(candidate: &Candidate) -> std::result::Result<Loaded, String> {
    if let Some(dir) = candidate
        .file
        .parent()
        .filter(|_| candidate.file.is_absolute())
    {
        for companion in companions(dir, &candidate.name()) {
            // SAFETY: NVIDIA's library; loading it only runs its own initialisers. Kept
            // loaded for the process, as the library beside it refers to it.
            if let Ok(l) = unsafe { Library::new(&companion) } {
                std::mem::forget(l);
            }
        }
    }
    // SAFETY: loading a CUDA library runs only its own initialisers; failure is an Err.
    let library = unsafe { Library::new(&candidate.file) }
        .map_err(|e| format!("{}: {e}", candidate.file.display()))?;
    let path = if candidate.file.is_absolute() {
        candidate.file.clone()
    } else {
        mapped_path(&candidate.name()).unwrap_or_else(|| candidate.file.clone())
    };
    Ok(Loaded { library, path })
}

/// The files beside `name` in `dir` that it opens by name: `libcublasLt.so.<major>` for
/// `libcublas.so.<major>`, `libnvrtc-builtins.so.<major>.<minor>` for `libnvrtc.so.<major>`.
fn companions(dir: &Path, name: &str) -> Vec<PathBuf> {
    if let Some(major) = name.strip_prefix("libcublas.so.") {
        let lt = dir.join(format!("libcublasLt.so.{major}"));
        return if lt.is_file() { vec![lt] } else { Vec::new() };
    }
    if let Some(major) = name.strip_prefix("libnvrtc.so.") {
        let prefix = format!("libnvrtc-builtins.so.{major}.");
        return read_dir_names(dir)
            .into_iter()
            .filter(|n| n.starts_with(&prefix))
            .map(|n| dir.join(n))
            .collect();
    }
    Vec::new()
}

/// The file the loader mapped for `name` (the loader resolves names through its cache and
/// symbolic links; `/proc/self/maps` shows where it landed).
fn mapped_path(name: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(Path::new)
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(name))
        })
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cover_both_majors_newest_first() {
        let names: Vec<String> = Kind::Nvrtc.file_names().into_iter().map(|n| n.0).collect();
        assert_eq!(names, ["libnvrtc.so.13", "libnvrtc.so.12"]);
        assert_eq!(Kind::Nccl.file_names()[0].0, "libnccl.so.2");
        assert_eq!(Kind::Driver.file_names()[0].0, "libcuda.so.1");
    }

    #[test]
    fn the_loaders_own_search_comes_first_for_each_name() {
        let c = candidates(Kind::Blas);
        assert_eq!(c[0].file, PathBuf::from("libcublas.so.13"));
        assert!(c.iter().any(|c| c.file == Path::new("libcublas.so.12")));
    }

    #[test]
    fn a_missing_library_is_an_error_naming_the_file() {
        let c = Candidate {
            file: "/nonexistent/libcublas.so.13".into(),
            major: Some(13),
        };
        let Err(e) = load(&c) else {
            panic!("loaded a file that does not exist")
        };
        assert!(e.contains("/nonexistent/libcublas.so.13"), "{e}");
    }
}
