//! IDX files (Yann LeCun's MNIST format): a big-endian header with the element type and the
//! dimensions, then the elements, big-endian. Files ending in `.gz` or starting with the gzip
//! magic are decompressed on the fly.

use std::io::{Read, Write};
use std::path::Path;

use super::{io_error, open_maybe_gzip};
use crate::create::Factory;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn format_error(path: &Path, message: impl Into<String>) -> Error {
    super::format_error(path, "IDX", message.into())
}

/// Bytes per element of the IDX format's element types, by their type byte.
fn element_width(code: u8) -> Option<usize> {
    match code {
        0x08 | 0x09 => Some(1),
        0x0B => Some(2),
        0x0C | 0x0D => Some(4),
        0x0E => Some(8),
        _ => None,
    }
}

/// Decodes big-endian elements of `N` bytes each.
fn big_endian<const N: usize, T>(bytes: &[u8], decode: impl Fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|chunk| {
            let mut raw = [0u8; N];
            raw.copy_from_slice(chunk);
            decode(raw)
        })
        .collect()
}

impl Factory {
    /// Reads an IDX file (gzipped or not) into a tensor of its shape: `u8` images stay `u8`,
    /// `i8`/`i16`/`i32` become `s8`/`s16`/`s32`, floats keep their width.
    pub fn read_idx(&self, path: impl AsRef<Path>) -> Result<Tensor> {
        let path = path.as_ref();
        let mut reader = open_maybe_gzip(path)?;
        let mut header = [0u8; 4];
        reader
            .read_exact(&mut header)
            .map_err(|e| format_error(path, format!("no header ({e})")))?;
        if header[0] != 0 || header[1] != 0 {
            return Err(format_error(
                path,
                format!(
                    "magic starts with {:02x} {:02x}, not 00 00",
                    header[0], header[1]
                ),
            ));
        }
        let width = element_width(header[2]).ok_or_else(|| {
            format_error(path, format!("unknown element type 0x{:02x}", header[2]))
        })?;
        let mut shape = Vec::with_capacity(header[3] as usize);
        for _ in 0..header[3] {
            let mut dim = [0u8; 4];
            reader
                .read_exact(&mut dim)
                .map_err(|e| format_error(path, format!("truncated dimensions ({e})")))?;
            shape.push(u32::from_be_bytes(dim) as usize);
        }
        let count = shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| format_error(path, format!("dimensions {shape:?} overflow")))?;
        let mut bytes = Vec::new();
        reader
            .take((count as u64).saturating_mul(width as u64))
            .read_to_end(&mut bytes)
            .map_err(|e| io_error(path, e))?;
        if Some(bytes.len()) != count.checked_mul(width) {
            return Err(format_error(
                path,
                format!(
                    "header promises {count} elements of {width} bytes for shape {shape:?}, the file holds {} bytes",
                    bytes.len()
                ),
            ));
        }
        match header[2] {
            0x08 => self.from_vec(bytes, &shape),
            0x09 => self.from_vec(bytes.iter().map(|&b| b as i8).collect::<Vec<_>>(), &shape),
            0x0B => self.from_vec(big_endian(&bytes, i16::from_be_bytes), &shape),
            0x0C => self.from_vec(big_endian(&bytes, i32::from_be_bytes), &shape),
            0x0D => self.from_vec(big_endian(&bytes, f32::from_be_bytes), &shape),
            _ => self.from_vec(big_endian(&bytes, f64::from_be_bytes), &shape),
        }
    }
}

/// Reads an IDX file onto the session default device (see [`Factory::read_idx`]).
pub fn read(path: impl AsRef<Path>) -> Result<Tensor> {
    Factory::session_default().read_idx(path)
}

/// Writes a `u8`, `s8`, `s16`, `s32`, `f32` or `f64` tensor (IDX's element types) as an IDX
/// file, gzipped when the name ends in `.gz`.
pub fn write(tensor: &Tensor, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let (code, body): (u8, Vec<u8>) = match tensor.dtype() {
        DType::U8 => (0x08, tensor.to_vec::<u8>()?),
        DType::S8 => (
            0x09,
            tensor.to_vec::<i8>()?.iter().map(|&v| v as u8).collect(),
        ),
        DType::S16 => (
            0x0B,
            tensor
                .to_vec::<i16>()?
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
        ),
        DType::S32 => (
            0x0C,
            tensor
                .to_vec::<i32>()?
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
        ),
        DType::F32 => (
            0x0D,
            tensor
                .to_vec::<f32>()?
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
        ),
        DType::F64 => (
            0x0E,
            tensor
                .to_vec::<f64>()?
                .iter()
                .flat_map(|v| v.to_be_bytes())
                .collect(),
        ),
        dtype => {
            return Err(Error::UnsupportedDType {
                op: "idx::write",
                dtype,
            })
        }
    };
    if tensor.rank() > 255 || tensor.shape().iter().any(|&d| d > u32::MAX as usize) {
        return Err(Error::InvalidArgument {
            op: "idx::write",
            message: format!("shape {:?} does not fit the IDX header", tensor.shape()),
        });
    }
    let mut out = vec![0, 0, code, tensor.rank() as u8];
    for &d in tensor.shape() {
        out.extend_from_slice(&(d as u32).to_be_bytes());
    }
    out.extend_from_slice(&body);
    let file = std::fs::File::create(path).map_err(|e| io_error(path, e))?;
    let gz = path.extension().is_some_and(|e| e == "gz");
    let result = if gz {
        let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::default());
        encoder
            .write_all(&out)
            .and_then(|_| encoder.finish().map(drop))
    } else {
        let mut file = file;
        file.write_all(&out)
    };
    result.map_err(|e| io_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{on, Device};

    #[test]
    fn round_trips_every_dtype_gzipped_and_plain() {
        let dir = tempfile::tempdir().unwrap();
        let host = on(Device::host(0));
        let tensors = [
            host.from_vec(vec![0u8, 7, 255, 3, 4, 5], &[2, 3]).unwrap(),
            host.from_vec(vec![-1i32, 2, i32::MAX], &[3]).unwrap(),
            host.from_vec(vec![0.5f32, -2.25], &[1, 2]).unwrap(),
            host.from_vec(vec![1e300f64], &[1, 1, 1]).unwrap(),
        ];
        for (i, t) in tensors.iter().enumerate() {
            for name in [format!("t{i}.idx"), format!("t{i}.idx.gz")] {
                let path = dir.path().join(name);
                write(t, &path).unwrap();
                let back = host.read_idx(&path).unwrap();
                assert_eq!(back.shape(), t.shape());
                assert_eq!(back.dtype(), t.dtype());
                assert_eq!(back.to_bytes().unwrap(), t.to_bytes().unwrap());
            }
        }
    }

    #[test]
    fn truncated_and_foreign_files_are_format_errors() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short.idx");
        std::fs::write(&short, [0, 0, 0x08, 1, 0, 0, 0, 9, 1, 2]).unwrap();
        let err = read(&short).unwrap_err().to_string();
        assert!(
            err.contains("9 elements") && err.contains("2 bytes"),
            "{err}"
        );
        let foreign = dir.path().join("foreign.idx");
        std::fs::write(&foreign, b"PK\x03\x04").unwrap();
        assert!(read(&foreign)
            .unwrap_err()
            .to_string()
            .contains("not a valid IDX file"));
        let missing = read(dir.path().join("missing.idx"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("missing.idx"), "{missing}");
    }
}
