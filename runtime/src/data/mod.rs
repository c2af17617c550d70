//! Data files into tensors: IDX (the MNIST format, gzipped or not), NumPy `.npy` and `.npz`,
//! Hugging Face's `.safetensors`, tensors as bytes ([`serialize`]), and the MNIST digits the set-up fetches from a package
//! registry ([`mnist`]).
//!
//! Every reader places its tensor through a [`Factory`](crate::Factory), so loading honours
//! the session default like every other constructor (`on(Device::host(0)).read_npy(path)`
//! places explicitly).

pub mod idx;
mod mapped;
pub mod mnist;
pub mod npy;
pub mod npz;
pub mod safetensors;
pub mod serialize;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::error::{Error, Result};

/// The `Error::Io` for `path`.
pub(crate) fn io_error(path: &Path, error: impl std::fmt::Display) -> Error {
    Error::Io {
        path: path.display().to_string(),
        message: error.to_string(),
    }
}

/// The `Error::Format` for `path`, a file that is not the `format` it should be.
pub(crate) fn format_error(
    path: &Path,
    format: &'static str,
    message: impl std::fmt::Display,
) -> Error {
    Error::Format {
        path: path.display().to_string(),
        format,
        message: message.to_string(),
    }
}

/// Opens a file for reading, transparently gunzipping it when it starts with the gzip magic.
pub(crate) fn open_maybe_gzip(path: &Path) -> Result<Box<dyn Read>> {
    let file = File::open(path).map_err(|e| io_error(path, e))?;
    let mut reader = BufReader::new(file);
    let mut magic = [0u8; 2];
    let gzip = {
        use std::io::BufRead;
        let head = reader.fill_buf().map_err(|e| io_error(path, e))?;
        if head.len() >= 2 {
            magic.copy_from_slice(&head[..2]);
        }
        magic == [0x1f, 0x8b]
    };
    Ok(if gzip {
        Box::new(flate2::read::GzDecoder::new(reader))
    } else {
        Box::new(reader)
    })
}
