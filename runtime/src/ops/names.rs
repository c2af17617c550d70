//! Naming and finding axes: `rename` (Nx's `rename/2`, and the `names:` option of Nx's
//! constructors: `tensor![[1, 2], [3, 4]]?.rename(["x", "y"])?`), `axis_index`, `axis_size`
//! and `compatible`. How each op carries names to its result is its own file's business; the
//! rules live in `shape::names`.

use crate::error::{Error, Result};
use crate::shape::names::Name;
use crate::shape::normalize_axis;
use crate::tensor::Tensor;

use super::axes::OneAxis;

/// Axis names as a cell writes them: `["batch", "x"]` (every axis named), or with `None` for
/// an unnamed axis (`[Some("batch"), None]`), as an array, slice or `Vec`.
pub trait IntoNames {
    /// One entry per axis.
    fn into_names(self) -> Vec<Name>;
}

impl<const N: usize> IntoNames for [&str; N] {
    fn into_names(self) -> Vec<Name> {
        self.iter().map(|s| Some(s.to_string())).collect()
    }
}

impl<const N: usize> IntoNames for [Option<&str>; N] {
    fn into_names(self) -> Vec<Name> {
        self.iter().map(|s| s.map(str::to_string)).collect()
    }
}

impl IntoNames for &[&str] {
    fn into_names(self) -> Vec<Name> {
        self.iter().map(|s| Some(s.to_string())).collect()
    }
}

impl IntoNames for &[Option<&str>] {
    fn into_names(self) -> Vec<Name> {
        self.iter().map(|s| s.map(str::to_string)).collect()
    }
}

impl IntoNames for Vec<&str> {
    fn into_names(self) -> Vec<Name> {
        self.as_slice().into_names()
    }
}

impl IntoNames for Vec<String> {
    fn into_names(self) -> Vec<Name> {
        self.into_iter().map(Some).collect()
    }
}

impl IntoNames for Vec<Name> {
    fn into_names(self) -> Vec<Name> {
        self
    }
}

impl IntoNames for &[Name] {
    fn into_names(self) -> Vec<Name> {
        self.to_vec()
    }
}

impl Tensor {
    /// This tensor with its axes named (Nx's `rename(t, names)`): one name (or `None`) per
    /// axis. The elements are shared, not copied. Names then travel with the tensor as Nx
    /// carries them (see `docs/functions.md`), any `axis`/`axes` argument takes them, and the
    /// signature prints them (`f32[batch: 2][x: 3]`).
    pub fn rename(&self, names: impl IntoNames) -> Result<Tensor> {
        let names = names.into_names();
        if names.len() != self.rank() {
            return Err(Error::InvalidArgument {
                op: "rename",
                message: format!(
                    "invalid names for tensor of rank {}, when specifying names every dimension must have a name or be nil (got {} names for {})",
                    self.rank(),
                    names.len(),
                    self.signature()
                ),
            });
        }
        if let Some(empty) = names.iter().flatten().find(|n| n.is_empty()) {
            return Err(Error::InvalidArgument {
                op: "rename",
                message: format!("an axis name may not be empty, got {empty:?}"),
            });
        }
        self.value()?;
        Ok(self.clone().named(names))
    }

    /// The size of `axis` (negative counts from the end, or a name), as `Nx.axis_size`.
    pub fn axis_size(&self, axis: impl OneAxis) -> Result<usize> {
        let axis = self.axis_position("axis_size", axis)?;
        let axis = normalize_axis("axis_size", axis, self.shape())?;
        Ok(self.shape()[axis])
    }

    /// The position of `axis` (an index, negative from the end, or a name), as
    /// `Nx.axis_index(t, axis)`.
    pub fn axis_index(&self, axis: impl OneAxis) -> Result<usize> {
        let position = self.axis_position("axis_index", axis)?;
        normalize_axis("axis_index", position, self.shape())
    }

    /// Whether `other` has this tensor's dtype and shape, and names that agree where both
    /// axes are named, as `Nx.compatible?(a, b)` (what a compiled function's arguments must
    /// be).
    pub fn compatible(&self, other: &Tensor) -> bool {
        self.dtype() == other.dtype()
            && self.shape() == other.shape()
            && self
                .names()
                .iter()
                .zip(other.names())
                .all(|(a, b)| a.is_none() || b.is_none() || *a == b)
    }
}
