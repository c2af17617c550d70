//! The kernel's state directory, in the system's temporary directory: what the kernel and its
//! evaluation process share beyond pipes — the session file (the session default, which
//! survives a restart of the evaluation process) and the display socket. Named after the
//! kernel's pid, so that a killed kernel's directory is removed by the next kernel.

use std::path::{Path, PathBuf};

use tensorbook::contract::{display, env, session_command, session_file};
use tensorbook::{ClientSpec, Device};

use super::build_cache::PRIVATE_SESSION_PREFIX;
use super::leftovers::{owned_prefix, remove_orphans};
use super::log_line;

const PREFIX: &str = "tensorbook-kernel-";

/// The directory; removed when dropped.
pub struct StateDir {
    dir: tempfile::TempDir,
}

impl StateDir {
    /// Creates this kernel's directory and points the session file there. Dead kernels'
    /// directories are removed in the background (a private session can be large).
    pub fn create() -> Result<StateDir, String> {
        std::thread::spawn(|| {
            remove_orphans(&std::env::temp_dir(), &[PREFIX, PRIVATE_SESSION_PREFIX]);
        });
        let dir = tempfile::Builder::new()
            .prefix(&owned_prefix(PREFIX))
            .tempdir()
            .map_err(|e| format!("cannot create the kernel's state directory: {e}"))?;
        session_file::use_file(&dir.path().join(session_file::FILE_NAME));
        session_command::use_file(&dir.path().join(session_command::FILE_NAME));
        Ok(StateDir { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Where the keep socket is to be bound.
    pub fn keep_socket(&self) -> PathBuf {
        self.path().join(tensorbook::contract::keep::SOCKET_FILE)
    }

    /// Where the display socket is to be bound.
    pub fn display_socket(&self) -> PathBuf {
        self.path().join(display::SOCKET_FILE)
    }
}

/// Sets the session default from the kernelspec's client spec (`TENSORBOOK_CLIENT`). One that
/// cannot be used is not passed over in silence: the session starts on `host:0` and the error
/// (what was asked, why it is unavailable, how to choose) is the warning the first cell shows,
/// as Nx warns of a default backend it cannot use.
pub fn start_session_default() -> Result<Device, String> {
    let wanted = env::default_client();
    match ClientSpec::parse(&wanted).and_then(ClientSpec::apply) {
        Ok(device) => Ok(device),
        Err(e) => {
            let host = Device::host(0);
            let _ = tensorbook::set_default_device(host);
            let warning = format!(
                "warning: the kernel's default client {wanted:?} (TENSORBOOK_CLIENT) cannot be \
                 used: {e}. This session runs on host:0; `:clients` lists what is here and \
                 `:client NAME` chooses.\n"
            );
            log_line(warning.trim_end());
            Err(warning)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_named_after_this_kernel_and_holds_the_session_file() {
        let state = StateDir::create().unwrap();
        let name = state
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with(&owned_prefix(PREFIX)), "{name}");
        assert!(state.display_socket().starts_with(state.path()));
        let device = tensorbook::set_default_device(Device::host(0)).unwrap();
        let written = std::fs::read_to_string(state.path().join(session_file::FILE_NAME));
        assert_eq!(written.unwrap(), device.to_string());
        let path = state.path().to_path_buf();
        drop(state);
        assert!(!path.exists());
    }
}
