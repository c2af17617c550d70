//! NumPy's `.npz` archives (`np.savez`, `np.savez_compressed`; Nx's `load_numpy_archive!`):
//! a zip of `.npy` files, read through the `zip` crate (stored and deflated members) and each
//! member through the `.npy` reader, which reads no more than its header promises.

use std::collections::BTreeMap;
use std::io::{Seek, Write};
use std::path::Path;

use super::io_error;
use super::npy;
use crate::create::Factory;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn format_error(path: &Path, message: impl std::fmt::Display) -> Error {
    super::format_error(path, "NPZ", message)
}

impl Factory {
    /// Every array of an `.npz` archive, by name (the member's name without `.npy`), on this
    /// factory's device.
    pub fn read_npz(&self, path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
        let mut archive = zip::ZipArchive::new(file).map_err(|e| format_error(path, e))?;
        let mut out = BTreeMap::new();
        for i in 0..archive.len() {
            let member = archive.by_index(i).map_err(|e| format_error(path, e))?;
            if member.is_dir() {
                continue;
            }
            let name = member.name().to_string();
            let key = name.strip_suffix(".npy").unwrap_or(&name).to_string();
            let source = format!("{} (member `{name}`)", path.display());
            let tensor = self.npy_from(member, &source)?;
            if out.insert(key, tensor).is_some() {
                return Err(format_error(
                    path,
                    format!("the member `{name}` appears twice"),
                ));
            }
        }
        Ok(out)
    }
}

/// Every array of an `.npz` archive, on the session default device (see
/// [`Factory::read_npz`]).
pub fn read(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    Factory::session_default().read_npz(path)
}

/// Writes named tensors as an `.npz` archive, each a `name.npy` member: stored as `np.savez`
/// does, or deflated as `np.savez_compressed` with `compressed`.
pub fn write<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    path: impl AsRef<Path>,
    compressed: bool,
) -> Result<()> {
    let path = path.as_ref();
    let file = std::fs::File::create(path).map_err(|e| io_error(path, e))?;
    write_to(tensors, file, compressed, path)
}

fn write_to<'a, W: Write + Seek>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    out: W,
    compressed: bool,
    path: &Path,
) -> Result<()> {
    let method = if compressed {
        zip::CompressionMethod::Deflated
    } else {
        zip::CompressionMethod::Stored
    };
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(method)
        .large_file(false);
    let mut zip = zip::ZipWriter::new(out);
    let mut names = Vec::new();
    for (name, t) in tensors {
        if names.contains(&name) {
            return Err(format_error(
                path,
                format!("the name `{name}` is given twice"),
            ));
        }
        names.push(name);
        let bytes = npy::encode(t)?;
        let options = options.large_file(bytes.len() >= u32::MAX as usize);
        zip.start_file(format!("{name}.npy"), options)
            .map_err(|e| format_error(path, e))?;
        zip.write_all(&bytes).map_err(|e| io_error(path, e))?;
    }
    zip.finish().map_err(|e| format_error(path, e))?;
    Ok(())
}
