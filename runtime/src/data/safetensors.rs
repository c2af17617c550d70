//! Hugging Face's `.safetensors` files, read and written through the `safetensors` crate
//! (its reader validates the header: offsets contiguous, inside the file, sizes matching the
//! shapes and dtypes, no overflow). A file is mapped, not read into a copy; each tensor is
//! copied once into its own memory on the factory's device.
//!
//! ```
//! use tensorbook::{data::safetensors, on, Device};
//! let host = on(Device::host(0));
//! let w = host.from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let b = host.from_vec(vec![7i64], &[1])?;
//! let path = std::env::temp_dir().join(format!("doc-{}.safetensors", std::process::id()));
//! safetensors::write([("w", &w), ("b", &b)], &path)?;
//! let back = host.read_safetensors(&path)?;
//! assert_eq!(back["w"].to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0]);
//! assert_eq!(back["b"].to_vec::<i64>()?, vec![7]);
//! # std::fs::remove_file(&path).ok();
//! # Ok::<(), tensorbook::Error>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use ::safetensors::tensor::{Dtype, TensorView};
use ::safetensors::SafeTensors;

use super::io_error;
use super::mapped::MappedFile;
use super::npy::decode;
use crate::buffer::with_dtype;
use crate::create::Factory;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn format_error(path: &Path, message: impl std::fmt::Display) -> Error {
    super::format_error(path, "safetensors", message)
}

fn dtype_of(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::BOOL | Dtype::U8 => DType::U8,
        Dtype::U16 => DType::U16,
        Dtype::U32 => DType::U32,
        Dtype::U64 => DType::U64,
        Dtype::I8 => DType::S8,
        Dtype::I16 => DType::S16,
        Dtype::I32 => DType::S32,
        Dtype::I64 => DType::S64,
        Dtype::BF16 => DType::BF16,
        Dtype::F16 => DType::F16,
        Dtype::F32 => DType::F32,
        Dtype::F64 => DType::F64,
        Dtype::C64 => DType::C64,
        _ => return None,
    })
}

fn safetensors_dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::U8 => Dtype::U8,
        DType::U16 => Dtype::U16,
        DType::U32 => Dtype::U32,
        DType::U64 => Dtype::U64,
        DType::S8 => Dtype::I8,
        DType::S16 => Dtype::I16,
        DType::S32 => Dtype::I32,
        DType::S64 => Dtype::I64,
        DType::BF16 => Dtype::BF16,
        DType::F16 => Dtype::F16,
        DType::F32 => Dtype::F32,
        DType::F64 => Dtype::F64,
        DType::C64 => Dtype::C64,
        // The format names no complex of two f64s.
        DType::C128 => return None,
    })
}

impl Factory {
    /// Every tensor of a `.safetensors` file, by name, on this factory's device. A dtype
    /// tensorbook has no type for (f8, complex, bool) is an error naming the tensor.
    pub fn read_safetensors(&self, path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
        let path = path.as_ref();
        let file = MappedFile::open(path)?;
        Ok(decode_all(self, file.bytes(), path, |_, _| false)?.0)
    }
}

/// The tensors of safetensors `bytes` (a file's, or [`crate::data::serialize`]'s) on
/// `place`'s device, with the header's metadata; errors name `path`. A tensor for which
/// `c128_pairs(metadata, name)` holds is f64 pairs along a last axis of 2, read as c128 (the
/// same bytes), as [`encode_all`] writes c128 for it.
pub(super) fn decode_all(
    place: &Factory,
    bytes: &[u8],
    path: &Path,
    c128_pairs: impl Fn(&HashMap<String, String>, &str) -> bool,
) -> Result<(BTreeMap<String, Tensor>, HashMap<String, String>)> {
    let parsed = SafeTensors::deserialize(bytes).map_err(|e| format_error(path, e))?;
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| format_error(path, e))?;
    let metadata = header.metadata().clone().unwrap_or_default();
    let mut out = BTreeMap::new();
    for (name, view) in parsed.tensors() {
        let mut shape = view.shape().to_vec();
        let dtype = if c128_pairs(&metadata, &name) {
            if view.dtype() != Dtype::F64 || shape.pop() != Some(2) {
                return Err(format_error(
                    path,
                    format!(
                        "tensor `{name}` is marked c128 but is {:?}{:?}, not f64 pairs",
                        view.dtype(),
                        view.shape()
                    ),
                ));
            }
            DType::C128
        } else {
            dtype_of(view.dtype()).ok_or_else(|| {
                format_error(
                    path,
                    format!(
                        "tensor `{name}` is {:?}, which tensorbook has no dtype for",
                        view.dtype()
                    ),
                )
            })?
        };
        let data = view.data();
        drop(crate::allocate::try_reserve::<u8>(data.len(), &shape)?);
        let tensor = with_dtype!(dtype, T => place.from_vec(
            decode(data, false, T::from_le_bytes, T::from_be_bytes),
            &shape,
        ))
        .map_err(|e| format_error(path, format!("tensor `{name}`: {e}")))?;
        out.insert(name, tensor);
    }
    Ok((out, metadata))
}

/// Every tensor of a `.safetensors` file, on the session default device (see
/// [`Factory::read_safetensors`]).
pub fn read(path: impl AsRef<Path>) -> Result<BTreeMap<String, Tensor>> {
    Factory::session_default().read_safetensors(path)
}

/// Writes named tensors as a `.safetensors` file (Python's `safetensors.numpy.load_file` and
/// `safetensors.torch.load_file` read it). Names must differ.
pub fn write<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    path: impl AsRef<Path>,
) -> Result<()> {
    let path = path.as_ref();
    let bytes = encode_all(tensors, None, path, false)?;
    std::fs::write(path, bytes).map_err(|e| io_error(path, e))
}

/// Named tensors and header `metadata` as safetensors bytes; errors name `path`. With
/// `c128_pairs`, a c128 tensor is written as f64 pairs along a new last axis of 2 (the same
/// bytes), which safetensors has a type for.
pub(super) fn encode_all<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>,
    metadata: Option<HashMap<String, String>>,
    path: &Path,
    c128_pairs: bool,
) -> Result<Vec<u8>> {
    let mut named: Vec<(&str, Vec<u8>, &Tensor)> = Vec::new();
    for (name, t) in tensors {
        if named.iter().any(|(n, _, _)| *n == name) {
            return Err(format_error(
                path,
                format!("the name `{name}` is given twice"),
            ));
        }
        named.push((name, t.to_bytes()?, t));
    }
    let views = named
        .iter()
        .map(|(name, bytes, t)| {
            if c128_pairs && t.dtype() == DType::C128 {
                let mut pairs = t.shape().to_vec();
                pairs.push(2);
                return TensorView::new(Dtype::F64, pairs, bytes)
                    .map(|v| (*name, v))
                    .map_err(|e| format_error(path, format!("tensor `{name}`: {e}")));
            }
            let dtype = safetensors_dtype(t.dtype()).ok_or_else(|| {
                format_error(
                    path,
                    format!(
                        "tensor `{name}` is {}, which safetensors has no type for: write c64 \
                         (`as_type(DType::C64)`) or .npy",
                        t.dtype()
                    ),
                )
            })?;
            TensorView::new(dtype, t.shape().to_vec(), bytes)
                .map(|v| (*name, v))
                .map_err(|e| format_error(path, format!("tensor `{name}`: {e}")))
        })
        .collect::<Result<Vec<_>>>()?;
    ::safetensors::serialize(views, metadata).map_err(|e| format_error(path, e))
}
