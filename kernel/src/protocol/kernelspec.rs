//! Kernelspecs: where Jupyter looks for them (the same rules as `jupyter_core.paths`) and
//! writing, listing and removing ours.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use tensorbook::contract::env;

const LOGO_32: &[u8] = include_bytes!("../../../install/logos/logo-32x32.png");
const LOGO_64: &[u8] = include_bytes!("../../../install/logos/logo-64x64.png");

/// Which Jupyter data directory a kernelspec goes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The user's data directory (`JUPYTER_DATA_DIR`, else `~/.local/share/jupyter`).
    User,
    /// `sys.prefix/share/jupyter` of the Python on PATH (a venv's, when one is active).
    SysPrefix,
    /// `DIR/share/jupyter`.
    Prefix(PathBuf),
}

/// An error installing or removing a kernelspec, with the path involved.
#[derive(Debug)]
pub struct SpecError(pub String);

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

fn user_data_dir() -> Result<PathBuf, SpecError> {
    if let Some(dir) = env::path(env::JUPYTER_DATA_DIR) {
        return Ok(dir);
    }
    let home = env::home_dir().ok_or_else(|| SpecError("cannot find the home directory".into()))?;
    Ok(if cfg!(target_os = "macos") {
        home.join("Library/Jupyter")
    } else {
        env::path(env::XDG_DATA_HOME)
            .unwrap_or_else(|| home.join(".local/share"))
            .join("jupyter")
    })
}

/// `sys.prefix` of the Python Jupyter runs on: `$TENSORBOOK_PYTHON`, else `python3` on PATH.
fn sys_prefix() -> Result<PathBuf, SpecError> {
    let python = env::python();
    let out = Command::new(&python)
        .args(["-c", "import sys; print(sys.prefix)"])
        .output()
        .map_err(|e| {
            SpecError(format!(
                "--sys-prefix needs Python to find sys.prefix; running {python}: {e}"
            ))
        })?;
    if !out.status.success() {
        return Err(SpecError(format!("{python} could not print sys.prefix")));
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

impl Location {
    /// The `.../share/jupyter` directory.
    pub fn data_dir(&self) -> Result<PathBuf, SpecError> {
        match self {
            Location::User => user_data_dir(),
            Location::SysPrefix => Ok(sys_prefix()?.join("share/jupyter")),
            Location::Prefix(dir) => Ok(dir.join("share/jupyter")),
        }
    }
}

/// Every directory Jupyter searches for kernelspecs, in its order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(paths) = env::raw(env::JUPYTER_PATH) {
        dirs.extend(std::env::split_paths(&paths));
    }
    if let Ok(d) = user_data_dir() {
        dirs.push(d);
    }
    if let Ok(p) = sys_prefix() {
        dirs.push(p.join("share/jupyter"));
    }
    dirs.push(PathBuf::from("/usr/local/share/jupyter"));
    dirs.push(PathBuf::from("/usr/share/jupyter"));
    dirs.into_iter().map(|d| d.join("kernels")).collect()
}

/// What to write into kernel.json.
pub struct Spec<'a> {
    /// Directory name (`jupyter console --kernel NAME`).
    pub name: &'a str,
    /// Shown in launchers.
    pub display_name: &'a str,
    /// The session default client every session of this spec starts with.
    pub client: &'a str,
}

/// Writes the kernelspec directory (kernel.json and logos) and returns it. Idempotent.
pub fn install(spec: &Spec<'_>, location: &Location) -> Result<PathBuf, SpecError> {
    if spec.name.is_empty()
        || !spec
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._".contains(c))
    {
        return Err(SpecError(format!(
            "kernel name {:?} must be letters, digits, '-', '.' or '_'",
            spec.name
        )));
    }
    let exe = std::env::current_exe()
        .map_err(|e| SpecError(format!("cannot find this executable: {e}")))?;
    let dir = location.data_dir()?.join("kernels").join(spec.name);
    let kernel_json = json!({
        "argv": [exe.to_string_lossy(), "kernel", "run", "--connection-file", "{connection_file}"],
        "display_name": spec.display_name,
        "language": "rust",
        "interrupt_mode": "message",
        "env": {
            env::CLIENT: spec.client,
            env::KERNEL_NAME: spec.name,
        },
        "metadata": { "tensorbook": { "client": spec.client } },
    });
    let write = |path: &Path, bytes: &[u8]| {
        std::fs::write(path, bytes)
            .map_err(|e| SpecError(format!("cannot write {}: {e}", path.display())))
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| SpecError(format!("cannot create {}: {e}", dir.display())))?;
    let text = serde_json::to_string_pretty(&kernel_json).map_err(|e| SpecError(e.to_string()))?;
    write(&dir.join("kernel.json"), text.as_bytes())?;
    write(&dir.join("logo-32x32.png"), LOGO_32)?;
    write(&dir.join("logo-64x64.png"), LOGO_64)?;
    Ok(dir)
}

/// Removes the kernelspec `name` from every searched directory it is in.
pub fn uninstall(name: &str) -> Result<Vec<PathBuf>, SpecError> {
    let mut removed = Vec::new();
    for dir in search_dirs() {
        let spec = dir.join(name);
        if spec.join("kernel.json").is_file() {
            std::fs::remove_dir_all(&spec)
                .map_err(|e| SpecError(format!("cannot remove {}: {e}", spec.display())))?;
            removed.push(spec);
        }
    }
    if removed.is_empty() {
        return Err(SpecError(format!("no kernelspec named {name:?} was found")));
    }
    Ok(removed)
}

/// Every installed tensorbook kernelspec: (name, directory, display name, client).
pub fn list() -> Vec<(String, PathBuf, String, String)> {
    let mut out = Vec::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read_to_string(path.join("kernel.json")) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            if v["metadata"]["tensorbook"].is_object() {
                out.push((
                    entry.file_name().to_string_lossy().into_owned(),
                    path.clone(),
                    v["display_name"].as_str().unwrap_or("").to_string(),
                    v["metadata"]["tensorbook"]["client"]
                        .as_str()
                        .unwrap_or("auto")
                        .to_string(),
                ));
            }
        }
    }
    out
}
