//! Nx's `serialize` and `deserialize`: tensors as bytes and back, with every dtype and the
//! axis names. The bytes are a safetensors buffer (written and validated by the `safetensors`
//! crate, as `.safetensors` files are), carrying in its header's metadata what that format
//! lacks: each tensor's axis names, and which tensors are c128, stored as f64 pairs along a
//! last axis of 2 (safetensors has no complex of two f64s).
//!
//! ```
//! use tensorbook::{data::serialize, tensor, Tensor};
//! let a = tensor![1, 2, 3]?;
//! let back = Tensor::deserialize(&a.serialize()?)?;
//! assert_eq!(back.to_vec::<i32>()?, vec![1, 2, 3]);
//!
//! let b = tensor![4.0, 5.0, 6.0]?.rename(vec!["x"])?;
//! let bytes = serialize::all([("a", &a), ("b", &b)])?;
//! let both = serialize::read_all(&bytes)?;
//! assert_eq!(both["b"].names()[0].as_deref(), Some("x"));
//! # Ok::<(), tensorbook::Error>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::safetensors::{decode_all, encode_all};
use crate::create::Factory;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Marks the bytes as this module's (and its layout's version).
const FORMAT_KEY: &str = "tensorbook.serialize";
const FORMAT_VERSION: &str = "1";
/// The name a lone tensor (`Tensor::serialize`) is stored under.
const LONE: &str = "tensor";

/// What errors name as the source of the bytes.
fn source() -> &'static Path {
    Path::new("<serialized tensors>")
}

fn bad(message: impl std::fmt::Display) -> Error {
    super::format_error(source(), "tensorbook serialized tensors", message)
}

fn names_key(name: &str) -> String {
    format!("{name}.names")
}

fn complex_key(name: &str) -> String {
    format!("{name}.c128")
}

/// Named tensors as bytes (Nx's `serialize` of a map of tensors); [`read_all`] gives them
/// back. Names must differ.
pub fn all<'a>(tensors: impl IntoIterator<Item = (&'a str, &'a Tensor)>) -> Result<Vec<u8>> {
    let mut metadata = HashMap::from([(FORMAT_KEY.to_string(), FORMAT_VERSION.to_string())]);
    let mut stored: Vec<(&str, &Tensor)> = Vec::new();
    for (name, t) in tensors {
        if t.is_named() {
            let names: Vec<Option<String>> = t
                .names()
                .iter()
                .map(|n| n.as_ref().map(|n| n.to_string()))
                .collect();
            let json = serde_json::to_string(&names).map_err(bad)?;
            metadata.insert(names_key(name), json);
        }
        if t.dtype() == DType::C128 {
            metadata.insert(complex_key(name), "pairs".into());
        }
        stored.push((name, t));
    }
    encode_all(stored, Some(metadata), source(), true)
}

/// The tensors of [`all`]'s bytes, by name, on the session default device.
pub fn read_all(bytes: &[u8]) -> Result<BTreeMap<String, Tensor>> {
    Factory::session_default().deserialize_all(bytes)
}

impl Factory {
    /// The tensors of [`all`]'s bytes, by name, on this factory's device. Bytes that are not
    /// serialized tensors (truncated, a lying header, another safetensors buffer) are an error.
    pub fn deserialize_all(&self, bytes: &[u8]) -> Result<BTreeMap<String, Tensor>> {
        let (stored, metadata) = decode_all(self, bytes, source(), |metadata, name| {
            metadata.contains_key(&complex_key(name))
        })?;
        if metadata.get(FORMAT_KEY).map(String::as_str) != Some(FORMAT_VERSION) {
            return Err(bad(format!(
                "no `{FORMAT_KEY}: {FORMAT_VERSION}` in the header: these bytes were not written \
                 by `serialize` (a .safetensors file is read by `read_safetensors`)"
            )));
        }
        let mut out = BTreeMap::new();
        for (name, t) in stored {
            let t = match metadata.get(&names_key(&name)) {
                Some(json) => {
                    let names: Vec<Option<String>> = serde_json::from_str(json)
                        .map_err(|e| bad(format!("tensor `{name}`'s axis names: {e}")))?;
                    t.rename(
                        names
                            .iter()
                            .map(|n| n.as_deref())
                            .collect::<Vec<_>>()
                            .as_slice(),
                    )
                    .map_err(|e| bad(format!("tensor `{name}`'s axis names: {e}")))?
                }
                None => t,
            };
            out.insert(name, t);
        }
        Ok(out)
    }

    /// The one tensor of [`Tensor::serialize`]'s bytes, on this factory's device.
    pub fn deserialize(&self, bytes: &[u8]) -> Result<Tensor> {
        let mut all = self.deserialize_all(bytes)?;
        match (all.remove(LONE), all.is_empty()) {
            (Some(t), true) => Ok(t),
            _ => Err(bad(
                "these bytes hold several tensors (`serialize::all`): read them with \
                 `serialize::read_all`",
            )),
        }
    }
}

impl Tensor {
    /// This tensor as bytes, its dtype, shape and axis names included (`Nx.serialize`);
    /// [`Tensor::deserialize`] gives it back. The bytes are a safetensors buffer.
    pub fn serialize(&self) -> Result<Vec<u8>> {
        all([(LONE, self)])
    }

    /// The tensor of [`Tensor::serialize`]'s bytes (`Nx.deserialize`), on the session default
    /// device (`on(device).deserialize(bytes)` places it).
    pub fn deserialize(bytes: &[u8]) -> Result<Tensor> {
        Factory::session_default().deserialize(bytes)
    }
}
