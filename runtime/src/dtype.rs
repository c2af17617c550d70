//! The runtime element type `DType` and the promotion rules used when two dtypes meet in one
//! operation (Nx's rules). The Rust types behind each dtype are in [`crate::element`].

use std::fmt;

/// The element type of a tensor, named as Nx names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Unsigned 8-bit integer (`u8`); also the result type of comparisons.
    U8,
    /// Signed 32-bit integer (`s32`).
    S32,
    /// Signed 64-bit integer (`s64`).
    S64,
    /// 32-bit float (`f32`).
    F32,
    /// 64-bit float (`f64`).
    F64,
}

impl DType {
    /// Every dtype the runtime has, in promotion order.
    pub const ALL: [DType; 5] = [DType::U8, DType::S32, DType::S64, DType::F32, DType::F64];

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::U8 => 1,
            DType::S32 | DType::F32 => 4,
            DType::S64 | DType::F64 => 8,
        }
    }

    /// True for f32 and f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// The type both operands are converted to before a binary op, as in Nx: floats win over
    /// integers, the wider type wins within a kind.
    pub fn promote(self, other: DType) -> DType {
        self.max(other)
    }

    /// The float type an integer is converted to for float-only ops (exp, divide, mean...).
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }

    /// The result type of sum and product, Nx's `Nx.Type.to_aggregate`: signed integers keep
    /// 32 bits (wrapping as Nx wraps) unless they already have 64, floats keep their type. Nx
    /// sums `u8` into `u32`; tensorbook has no `u32` yet, so `u8` sums into `s64`, which holds
    /// every `u32` total exactly (it differs from Nx only past 2^32, where `u32` wraps).
    pub fn accumulator(self) -> DType {
        match self {
            DType::U8 => DType::S64,
            other => other,
        }
    }

    /// Parses the Nx name (`"f32"`, `"s64"`, ...).
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "u8" => DType::U8,
            "s32" | "i32" => DType::S32,
            "s64" | "i64" => DType::S64,
            "f32" => DType::F32,
            "f64" => DType::F64,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DType::U8 => "u8",
            DType::S32 => "s32",
            DType::S64 => "s64",
            DType::F32 => "f32",
            DType::F64 => "f64",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_nx() {
        assert_eq!(DType::U8.promote(DType::S32), DType::S32);
        assert_eq!(DType::S64.promote(DType::F32), DType::F32);
        assert_eq!(DType::F32.promote(DType::F64), DType::F64);
        assert_eq!(DType::S32.to_float(), DType::F32);
        assert_eq!(DType::U8.accumulator(), DType::S64);
        assert_eq!(DType::S32.accumulator(), DType::S32);
        assert_eq!(DType::S64.accumulator(), DType::S64);
    }
}
