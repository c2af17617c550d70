//! The session file: the session default, shared by the kernel (`:client`) and the process that
//! evaluates cells, and kept across restarts of that process. It holds one device name
//! (`host:0`); its path is in [`super::env::SESSION_FILE`].

use std::path::Path;

use crate::device::Device;

/// The file's name in the kernel's state directory.
pub const FILE_NAME: &str = "default-client";

/// Points this process and the ones it starts at `path`.
pub fn use_file(path: &Path) {
    super::env::set(super::env::SESSION_FILE, path);
}

/// The default stored in the session file, if there is a readable, valid one.
pub fn read() -> Option<Device> {
    let path = super::env::path(super::env::SESSION_FILE)?;
    let text = std::fs::read_to_string(path).ok()?;
    Device::parse(text.trim()).ok()
}

/// Stores `device` as the session default (best effort: the in-process default is already
/// set; a kernel that cannot write its own state directory says so when it creates it).
pub fn write(device: Device) {
    if let Some(path) = super::env::path(super::env::SESSION_FILE) {
        let _ = std::fs::write(path, device.to_string());
    }
}
