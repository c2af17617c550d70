//! NumPy `.npy` files through the `npyz` crate: any endianness, C or Fortran order on read;
//! little-endian C order on write.

use std::io::BufReader;
use std::path::Path;

use npyz::WriterBuilder;

use super::io_error;
use crate::create::Factory;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn format_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Format {
        path: path.display().to_string(),
        format: "NPY",
        message: message.to_string(),
    }
}

impl Factory {
    /// Reads a `.npy` file of `u1`, `i1`/`i2`/`i4` (as `s32`), `i8` (as `s64`), `f4` or `f8`
    /// elements into a tensor of its shape.
    pub fn read_npy(&self, path: impl AsRef<Path>) -> Result<Tensor> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|e| io_error(path, e))?;
        let npy = npyz::NpyFile::new(BufReader::new(file)).map_err(|e| format_error(path, e))?;
        let fortran = npy.order() == npyz::Order::Fortran;
        let mut shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
        // Fortran order is C order of the reversed shape: read that, then transpose back.
        if fortran {
            shape.reverse();
        }
        let npyz::DType::Plain(ty) = npy.dtype() else {
            return Err(format_error(path, "structured arrays are not supported"));
        };
        let err = |e| format_error(path, e);
        let tensor = match (ty.type_char(), ty.size_field()) {
            (npyz::TypeChar::Uint, 1) => self.from_vec(npy.into_vec::<u8>().map_err(err)?, &shape),
            (npyz::TypeChar::Int, 1) => self.from_vec(
                npy.into_vec::<i8>()
                    .map_err(err)?
                    .into_iter()
                    .map(i32::from)
                    .collect(),
                &shape,
            ),
            (npyz::TypeChar::Int, 2) => self.from_vec(
                npy.into_vec::<i16>()
                    .map_err(err)?
                    .into_iter()
                    .map(i32::from)
                    .collect(),
                &shape,
            ),
            (npyz::TypeChar::Int, 4) => self.from_vec(npy.into_vec::<i32>().map_err(err)?, &shape),
            (npyz::TypeChar::Int, 8) => self.from_vec(npy.into_vec::<i64>().map_err(err)?, &shape),
            (npyz::TypeChar::Float, 4) => {
                self.from_vec(npy.into_vec::<f32>().map_err(err)?, &shape)
            }
            (npyz::TypeChar::Float, 8) => {
                self.from_vec(npy.into_vec::<f64>().map_err(err)?, &shape)
            }
            _ => {
                return Err(format_error(
                    path,
                    format!("element type {ty} has no tensorbook dtype (u8, s32, s64, f32, f64)"),
                ))
            }
        }?;
        if fortran && tensor.rank() > 1 {
            let axes: Vec<usize> = (0..tensor.rank()).rev().collect();
            tensor.transpose(Some(&axes))
        } else {
            Ok(tensor)
        }
    }
}

/// Reads a `.npy` file onto the session default device (see [`Factory::read_npy`]).
pub fn read(path: impl AsRef<Path>) -> Result<Tensor> {
    Factory::session_default().read_npy(path)
}

fn write_all<T: npyz::Serialize + npyz::AutoSerialize>(
    data: Vec<T>,
    shape: &[u64],
    path: &Path,
) -> std::io::Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(file)
        .begin_nd()?;
    writer.extend(data)?;
    writer.finish()
}

/// Writes a tensor as a little-endian, C-order `.npy` file (`np.load` reads it).
pub fn write(tensor: &Tensor, path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    let shape: Vec<u64> = tensor.shape().iter().map(|&d| d as u64).collect();
    let written = match tensor.dtype() {
        DType::U8 => write_all(tensor.to_vec::<u8>()?, &shape, path),
        DType::S32 => write_all(tensor.to_vec::<i32>()?, &shape, path),
        DType::S64 => write_all(tensor.to_vec::<i64>()?, &shape, path),
        DType::F32 => write_all(tensor.to_vec::<f32>()?, &shape, path),
        DType::F64 => write_all(tensor.to_vec::<f64>()?, &shape, path),
    };
    written.map_err(|e| io_error(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{on, Device};

    #[test]
    fn round_trips_every_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let host = on(Device::host(0));
        let tensors = [
            host.from_vec(vec![1u8, 2, 3, 4, 5, 6], &[2, 3]).unwrap(),
            host.from_vec(vec![-1i32, 2], &[2]).unwrap(),
            host.from_vec(vec![i64::MIN, 0], &[1, 2]).unwrap(),
            host.from_vec(vec![0.5f32; 8], &[2, 2, 2]).unwrap(),
            host.from_vec(vec![-0.25f64], &[]).unwrap(),
        ];
        for (i, t) in tensors.iter().enumerate() {
            let path = dir.path().join(format!("t{i}.npy"));
            write(t, &path).unwrap();
            let back = host.read_npy(&path).unwrap();
            assert_eq!(back.shape(), t.shape());
            assert_eq!(back.dtype(), t.dtype());
            assert_eq!(back.to_bytes().unwrap(), t.to_bytes().unwrap());
        }
    }

    /// A file `np.save` wrote in Fortran order and big-endian: `np.asfortranarray(np.arange(6,
    /// dtype='>i4').reshape(2, 3))`.
    #[test]
    fn reads_fortran_order_big_endian() {
        let dir = tempfile::tempdir().unwrap();
        let header = "{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }";
        let mut header = header.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        // Column-major: 0 3 1 4 2 5.
        for v in [0i32, 3, 1, 4, 2, 5] {
            bytes.extend_from_slice(&v.to_be_bytes());
        }
        let path = dir.path().join("f.npy");
        std::fs::write(&path, bytes).unwrap();
        let t = on(Device::host(0)).read_npy(&path).unwrap();
        assert_eq!(t.shape(), &[2, 3]);
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn garbage_is_a_format_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk.npy");
        std::fs::write(&path, b"not numpy").unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("junk.npy") && err.contains("NPY"), "{err}");
    }
}
