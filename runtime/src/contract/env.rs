//! Every environment variable tensorbook reads or sets, and the only code that reads them.
//!
//! Three groups: what the kernel sets for its evaluation process (the kernel<->cell contract),
//! what a kernelspec sets for the kernel, and settings a person may set.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

// --- Set by the kernel for the process that evaluates cells.

/// The session file (see [`super::session_file`]).
pub const SESSION_FILE: &str = "TENSORBOOK_SESSION_FILE";
/// The kernel's display socket (see [`super::display`]).
pub const DISPLAY_SOCKET: &str = "TENSORBOOK_DISPLAY_SOCKET";
/// The file a session command is written to (see [`super::session_command`]).
pub const SESSION_COMMAND: &str = "TENSORBOOK_SESSION_COMMAND";
/// The kernel's keep socket (see [`super::keep`]).
pub const KEEP_SOCKET: &str = "TENSORBOOK_KEEP_SOCKET";
/// The evaluation process's interrupt flag (see [`super::interrupt_flag`]).
pub const INTERRUPT_FLAG: &str = "TENSORBOOK_INTERRUPT_FLAG";
/// Set once the output flusher runs: each cell has its own copy of the runtime's statics, the
/// environment is what they share.
pub const OUTPUT_FLUSHER: &str = "TENSORBOOK_OUTPUT_FLUSHER";
/// Set by evcxr in the process that evaluates cells.
pub const EVCXR_IS_RUNTIME: &str = "EVCXR_IS_RUNTIME";
/// Where evcxr keeps the session's crate (set by the kernel to its build-cache session).
pub const EVCXR_TMPDIR: &str = "EVCXR_TMPDIR";
/// The dynamic loader's search path: the toolchain's `libstd` and the runtime's dylib.
pub const LIBRARY_PATH: &str = "LD_LIBRARY_PATH";
/// Where programs are found (the kernel looks for `ld.lld` there).
pub const SEARCH_PATH: &str = "PATH";

// --- Set by a kernelspec (`tensorbook kernel install`).

/// The session's initial default client (`auto`, `host`, `cuda:1`, ...).
pub const CLIENT: &str = "TENSORBOOK_CLIENT";
/// The kernelspec's name (its history file is named after it).
pub const KERNEL_NAME: &str = "TENSORBOOK_KERNEL_NAME";

// --- Settings.

/// Seconds a session's keeper waits for a killed kernel to come back before it lets the
/// session's variables go (default 120).
pub const SESSION_GRACE: &str = "TENSORBOOK_SESSION_GRACE";
/// Number of virtual host devices (default 1).
pub const HOST_DEVICES: &str = "TENSORBOOK_HOST_DEVICES";
/// Number of simulated accelerator devices (default 0: off).
pub const SIM_DEVICES: &str = "TENSORBOOK_SIM_DEVICES";
/// Memory of each simulated device (`512M`, `2G`; default 1 GiB).
pub const SIM_MEMORY: &str = "TENSORBOOK_SIM_MEMORY";
/// Cap on one host allocation (`8G`; default: the memory the machine has available).
pub const HOST_MEMORY_LIMIT: &str = "TENSORBOOK_HOST_MEMORY_LIMIT";
/// The BLAS library host's large f32/f64 products call instead of host's own packed GEMM: a
/// file name or path, or `none` for the built-in `gemm` crate only (unset: the packed GEMM on
/// AVX2+FMA CPUs, the system OpenBLAS or BLIS elsewhere).
pub const BLAS: &str = "TENSORBOOK_BLAS";
/// `1` or `0`: large host buffers in shared memory (default: only in the evaluation process).
pub const SHARED_HOST_MEMORY: &str = "TENSORBOOK_SHARED_HOST_MEMORY";
/// Fraction of each GPU's memory a session may take (0 < f <= 1).
pub const CUDA_MEMORY_FRACTION: &str = "TENSORBOOK_CUDA_MEMORY_FRACTION";
/// Root of tensorbook's caches (runtime build, CUDA PTX).
pub const CACHE_DIR: &str = "TENSORBOOK_CACHE_DIR";
/// Where the notebooks' data sets are (`<dir>/mnist`).
pub const DATA_DIR: &str = "TENSORBOOK_DATA_DIR";
/// Set to `1` to let the notebooks' data fall back to seeded synthetic pixels when no MNIST
/// files are found (otherwise that is an error saying how to fetch them).
pub const SYNTHETIC_DATA: &str = "TENSORBOOK_SYNTHETIC_DATA";
/// Where the kernel keeps execution history.
pub const HISTORY_DIR: &str = "TENSORBOOK_HISTORY_DIR";
/// The runtime crate's sources, when not the ones the kernel was built from or carries.
pub const RUNTIME_PATH: &str = "TENSORBOOK_RUNTIME_PATH";
/// The Python that `tensorbook kernel install --sys-prefix` asks for its prefix.
pub const PYTHON: &str = "TENSORBOOK_PYTHON";
/// The Python with the benchmarks' reference libraries (JAX, PyTorch) for `bench train` and
/// `bench conv` (default: `./.venv-references`, which `install/references-env.sh` makes, else
/// the numpy Python).
pub const REFERENCES_PYTHON: &str = "TENSORBOOK_REFERENCES_PYTHON";

// --- The platform's and Jupyter's, read for the same purposes.

/// The user's cache directory (XDG).
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
/// The user's data directory (XDG).
pub const XDG_DATA_HOME: &str = "XDG_DATA_HOME";
/// The user's private runtime directory (XDG), where keeper sockets go when it is set.
pub const XDG_RUNTIME_DIR: &str = "XDG_RUNTIME_DIR";
/// The secret a session keeper checks an attaching kernel's proof against; set by the kernel
/// for the keeper it starts (never in a kernelspec), and taken out of the keeper's environment
/// at once.
pub const KEEPER_SECRET: &str = "TENSORBOOK_KEEPER_SECRET";
/// The user's home.
pub const HOME: &str = "HOME";
/// Jupyter's user data directory, when moved.
pub const JUPYTER_DATA_DIR: &str = "JUPYTER_DATA_DIR";
/// Extra directories Jupyter searches for kernelspecs.
pub const JUPYTER_PATH: &str = "JUPYTER_PATH";
/// A CUDA toolkit's root: its `lib64` is searched for cuBLAS and NVRTC.
pub const CUDA_HOME: &str = "CUDA_HOME";
/// The same, as NVIDIA's installers and Windows name it.
pub const CUDA_PATH: &str = "CUDA_PATH";
/// An activated Python virtual environment: its NVIDIA pip packages are searched for CUDA.
pub const VIRTUAL_ENV: &str = "VIRTUAL_ENV";
/// An activated conda environment, searched likewise.
pub const CONDA_PREFIX: &str = "CONDA_PREFIX";

/// A variable's text, trimmed; `None` when unset, empty or not Unicode.
pub fn text(name: &str) -> Option<String> {
    let value = std::env::var(name).ok()?;
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_string())
}

/// A variable as a path; `None` when unset or empty.
pub fn path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A variable's raw value, for values that are passed on (search paths).
pub fn raw(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// Whether a variable is set at all.
pub fn is_set(name: &str) -> bool {
    std::env::var_os(name).is_some()
}

/// Sets a variable for this process and the processes it starts. Only called before threads
/// that read the environment exist, or for values every reader accepts at any time.
pub fn set(name: &str, value: impl AsRef<OsStr>) {
    std::env::set_var(name, value);
}

/// Removes a variable from this process's environment.
pub fn remove(name: &str) {
    std::env::remove_var(name);
}

/// `123`, `64K`, `512M`, `8G`, `1T` (binary multiples) as bytes.
pub fn parse_bytes(text: &str) -> Option<u64> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last()?.to_ascii_uppercase() {
        'K' => (&t[..t.len() - 1], 10),
        'M' => (&t[..t.len() - 1], 20),
        'G' => (&t[..t.len() - 1], 30),
        'T' => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1u64 << shift)
}

/// [`HOST_DEVICES`], when set to a positive count.
pub fn host_devices() -> Option<usize> {
    text(HOST_DEVICES)?.parse().ok().filter(|&n| n > 0)
}

/// [`SIM_DEVICES`] (0 when unset or invalid).
pub fn sim_devices() -> usize {
    text(SIM_DEVICES).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// [`SIM_MEMORY`] in bytes, when set.
pub fn sim_memory() -> Option<u64> {
    parse_bytes(&text(SIM_MEMORY)?)
}

/// [`HOST_MEMORY_LIMIT`] in bytes, when set.
pub fn host_memory_limit() -> Option<u64> {
    parse_bytes(&text(HOST_MEMORY_LIMIT)?)
}

/// [`BLAS`], when set.
pub fn blas() -> Option<String> {
    text(BLAS)
}

/// [`CUDA_MEMORY_FRACTION`], when set to a fraction in (0, 1].
pub fn cuda_memory_fraction() -> Option<f64> {
    text(CUDA_MEMORY_FRACTION)?
        .parse::<f64>()
        .ok()
        .filter(|f| *f > 0.0 && *f <= 1.0)
}

/// The root of tensorbook's caches: [`CACHE_DIR`], else `$XDG_CACHE_HOME/tensorbook`, else
/// `~/.cache/tensorbook`.
pub fn cache_dir() -> Option<PathBuf> {
    path(CACHE_DIR).or_else(|| {
        let base = path(XDG_CACHE_HOME).or_else(|| path(HOME).map(|h| h.join(".cache")))?;
        Some(base.join("tensorbook"))
    })
}

/// Where the kernel keeps history: [`HISTORY_DIR`], else `$XDG_DATA_HOME/tensorbook/history`,
/// else `~/.local/share/tensorbook/history`.
pub fn history_dir() -> Option<PathBuf> {
    path(HISTORY_DIR).or_else(|| {
        let base =
            path(XDG_DATA_HOME).or_else(|| path(HOME).map(|h| h.join(".local").join("share")))?;
        Some(base.join("tensorbook").join("history"))
    })
}

/// The user's home directory.
pub fn home_dir() -> Option<PathBuf> {
    path(HOME)
}

/// [`DATA_DIR`], when set.
pub fn data_dir() -> Option<PathBuf> {
    path(DATA_DIR)
}

/// Whether the user asked for synthetic data where real data is missing ([`SYNTHETIC_DATA`]).
pub fn synthetic_data_allowed() -> bool {
    text(SYNTHETIC_DATA).is_some_and(|v| v.trim() == "1")
}

/// The session's initial default client spec ([`CLIENT`]; `auto` when unset).
pub fn default_client() -> String {
    text(CLIENT).unwrap_or_else(|| "auto".into())
}

/// The kernelspec's name ([`KERNEL_NAME`]; `tensorbook` when unset).
pub fn kernel_name() -> String {
    text(KERNEL_NAME).unwrap_or_else(|| "tensorbook".into())
}

/// [`RUNTIME_PATH`], when set.
pub fn runtime_path() -> Option<PathBuf> {
    path(RUNTIME_PATH)
}

/// [`SESSION_GRACE`] as a duration, when set to a number of seconds (fractions allowed).
pub fn session_grace() -> Option<std::time::Duration> {
    text(SESSION_GRACE)?
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 86_400.0)
        .map(std::time::Duration::from_secs_f64)
}

/// [`PYTHON`], else `python3`.
pub fn python() -> String {
    text(PYTHON).unwrap_or_else(|| "python3".into())
}

/// Whether host buffers go to shared memory, when set (`1`/`true`/`on` or `0`/`false`/`off`).
pub fn shared_host_memory() -> Option<bool> {
    match text(SHARED_HOST_MEMORY)?
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "1" | "true" | "on" | "yes" => Some(true),
        "0" | "false" | "off" | "no" => Some(false),
        _ => None,
    }
}

/// True inside the process evcxr evaluates cells in.
pub fn in_evaluation_process() -> bool {
    is_set(EVCXR_IS_RUNTIME)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_bytes("123"), Some(123));
        assert_eq!(parse_bytes(" 64k "), Some(64 << 10));
        assert_eq!(parse_bytes("512M"), Some(512 << 20));
        assert_eq!(parse_bytes("8G"), Some(8 << 30));
        assert_eq!(parse_bytes("1T"), Some(1 << 40));
        assert_eq!(parse_bytes("99999999999T"), None);
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes(""), None);
    }
}
