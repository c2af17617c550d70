//! The runtime element type `DType` and the promotion rules used when two dtypes meet in one
//! operation (Nx's rules). The Rust types behind each dtype are in [`crate::element`].

use std::fmt;

/// The element type of a tensor, named as Nx names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// Unsigned 8-bit integer (`u8`); also the result type of comparisons.
    U8,
    /// Unsigned 16-bit integer (`u16`).
    U16,
    /// Unsigned 32-bit integer (`u32`): random keys, and the sum of smaller unsigned integers.
    U32,
    /// Unsigned 64-bit integer (`u64`).
    U64,
    /// Signed 8-bit integer (`s8`).
    S8,
    /// Signed 16-bit integer (`s16`).
    S16,
    /// Signed 32-bit integer (`s32`).
    S32,
    /// Signed 64-bit integer (`s64`).
    S64,
    /// Brain float (`bf16`): f32's exponent range with 8 significant bits. Stored in 16 bits;
    /// every op but a cast computes in a wider float and rounds once (`memory::dispatch`).
    BF16,
    /// IEEE half precision (`f16`), stored and computed as `bf16` is.
    F16,
    /// 32-bit float (`f32`).
    F32,
    /// 64-bit float (`f64`).
    F64,
    /// Complex of two f32s (`c64`): real part, then imaginary part.
    C64,
    /// Complex of two f64s (`c128`).
    C128,
}

/// A dtype's kind, in the order Nx's `merge` ranks kinds: unsigned below signed below brain
/// float below float below complex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Unsigned,
    Signed,
    BrainFloat,
    Float,
    Complex,
}

impl DType {
    /// Every dtype the runtime has: unsigned, signed, then float, each narrowest first.
    pub const ALL: [DType; 14] = [
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::S8,
        DType::S16,
        DType::S32,
        DType::S64,
        DType::BF16,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// Size of one element in bytes.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::U8 | DType::S8 => 1,
            DType::U16 | DType::S16 | DType::BF16 | DType::F16 => 2,
            DType::U32 | DType::S32 | DType::F32 => 4,
            DType::U64 | DType::S64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    fn kind(self) -> Kind {
        match self {
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => Kind::Unsigned,
            DType::S8 | DType::S16 | DType::S32 | DType::S64 => Kind::Signed,
            DType::BF16 => Kind::BrainFloat,
            DType::F16 | DType::F32 | DType::F64 => Kind::Float,
            DType::C64 | DType::C128 => Kind::Complex,
        }
    }

    /// The dtype of `kind` with `bits` bits (integers up to 64, floats 16 to 64, complex 64
    /// and 128).
    fn of(kind: Kind, bits: usize) -> DType {
        match (kind, bits) {
            (Kind::Unsigned, 0..=8) => DType::U8,
            (Kind::Unsigned, 9..=16) => DType::U16,
            (Kind::Unsigned, 17..=32) => DType::U32,
            (Kind::Unsigned, _) => DType::U64,
            (Kind::Signed, 0..=8) => DType::S8,
            (Kind::Signed, 9..=16) => DType::S16,
            (Kind::Signed, 17..=32) => DType::S32,
            (Kind::Signed, _) => DType::S64,
            (Kind::BrainFloat, _) => DType::BF16,
            (Kind::Float, 0..=16) => DType::F16,
            (Kind::Float, 17..=32) => DType::F32,
            (Kind::Float, _) => DType::F64,
            (Kind::Complex, 0..=64) => DType::C64,
            (Kind::Complex, _) => DType::C128,
        }
    }

    /// Size of one element in bits.
    pub fn bits(self) -> usize {
        self.size_in_bytes() * 8
    }

    /// True for the float dtypes, complex ones included as Nx's `float?` includes them: bf16,
    /// f16, f32, f64, c64 and c128.
    pub fn is_float(self) -> bool {
        matches!(self.kind(), Kind::Float | Kind::BrainFloat | Kind::Complex)
    }

    /// True for c64 and c128.
    pub fn is_complex(self) -> bool {
        self.kind() == Kind::Complex
    }

    /// True for the floats that are not complex.
    pub fn is_real_float(self) -> bool {
        self.is_float() && !self.is_complex()
    }

    /// The complex dtype this one computes in where a complex result is wanted (Nx's
    /// `to_complex`): f64 becomes c128, complex stays, everything else c64.
    pub fn to_complex(self) -> DType {
        match self {
            DType::C64 | DType::C128 => self,
            DType::F64 => DType::C128,
            _ => DType::C64,
        }
    }

    /// The real dtype of a complex one's parts (Nx's `to_real`): c64 is f32, c128 is f64; a real
    /// float stays, an integer becomes f32.
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d if d.is_float() => d,
            _ => DType::F32,
        }
    }

    /// True for bf16 and f16: stored in 16 bits, computed in a wider float.
    pub fn is_half(self) -> bool {
        matches!(self, DType::BF16 | DType::F16)
    }

    /// True for the integer dtypes, signed or not.
    pub fn is_integer(self) -> bool {
        matches!(self.kind(), Kind::Unsigned | Kind::Signed)
    }

    /// True for u8, u16, u32 and u64.
    pub fn is_unsigned(self) -> bool {
        self.kind() == Kind::Unsigned
    }

    /// The type both operands are converted to before a binary op, Nx's `Nx.Type.merge`: the
    /// wider type within a kind; floats win over integers and IEEE floats over brain floats
    /// (so `bf16 + f16` is `f16`, as in Nx; JAX would say f32); an unsigned and a signed
    /// integer meet in a signed type twice the unsigned one's width (at most 64 bits), so
    /// `u8 + s8` is `s16` and `u32 + s32` is `s64`.
    pub fn promote(self, other: DType) -> DType {
        let (low, high) = if self.kind() <= other.kind() {
            (self, other)
        } else {
            (other, self)
        };
        match (low.kind(), high.kind()) {
            (a, b) if a == b => DType::of(a, low.bits().max(high.bits())),
            (Kind::Unsigned, Kind::Signed) => {
                DType::of(Kind::Signed, (low.bits() * 2).min(64).max(high.bits()))
            }
            // A real float's parts must fit: f64 with c64 is c128.
            (Kind::Float, Kind::Complex) => {
                DType::of(Kind::Complex, (low.bits() * 2).max(high.bits()))
            }
            _ => high,
        }
    }

    /// The float type an integer is converted to for float-only ops (exp, divide, mean...).
    pub fn to_float(self) -> DType {
        if self.is_float() {
            self
        } else {
            DType::F32
        }
    }

    /// The result type of sum and product, Nx's `Nx.Type.to_aggregate`: unsigned integers
    /// narrower than 64 bits sum into `u32`, signed ones into `s32` (wrapping as Nx wraps), the
    /// 64-bit ones into `s64` (`u64` too, as in Nx), floats keep their type.
    pub fn accumulator(self) -> DType {
        match self {
            DType::U8 | DType::U16 | DType::U32 => DType::U32,
            DType::S8 | DType::S16 | DType::S32 => DType::S32,
            DType::U64 | DType::S64 => DType::S64,
            float => float,
        }
    }

    /// Parses the Nx name (`"f32"`, `"s64"`, `"u32"`...).
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "u8" => DType::U8,
            "u16" => DType::U16,
            "u32" => DType::U32,
            "u64" => DType::U64,
            "s8" | "i8" => DType::S8,
            "s16" | "i16" => DType::S16,
            "s32" | "i32" => DType::S32,
            "s64" | "i64" => DType::S64,
            "bf16" => DType::BF16,
            "f16" => DType::F16,
            "f32" => DType::F32,
            "f64" => DType::F64,
            "c64" => DType::C64,
            "c128" => DType::C128,
            _ => return None,
        })
    }

    /// The Nx name.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "u8",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::S8 => "s8",
            DType::S16 => "s16",
            DType::S32 => "s32",
            DType::S64 => "s64",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::C64 => "c64",
            DType::C128 => "c128",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
        assert_eq!(DType::U8.accumulator(), DType::U32);
        assert_eq!(DType::S32.accumulator(), DType::S32);
        assert_eq!(DType::S64.accumulator(), DType::S64);
    }

    /// `Nx.Type.merge`'s documented examples and the unsigned/signed rule.
    #[test]
    fn mixed_integer_promotion_follows_nx() {
        use DType::*;
        assert_eq!(U8.promote(S8), S16);
        assert_eq!(S8.promote(U8), S16);
        assert_eq!(U16.promote(S8), S32);
        assert_eq!(U32.promote(S32), S64);
        assert_eq!(U64.promote(S8), S64);
        assert_eq!(U8.promote(S64), S64);
        assert_eq!(U8.promote(U32), U32);
        assert_eq!(S16.promote(S8), S16);
        assert_eq!(U64.promote(F32), F32);
        assert_eq!(S8.promote(F64), F64);
        for a in DType::ALL {
            for b in DType::ALL {
                assert_eq!(a.promote(b), b.promote(a), "{a} {b}");
            }
        }
        assert_eq!(U8.promote(BF16), BF16);
        assert_eq!(S64.promote(BF16), BF16);
        assert_eq!(F32.promote(BF16), F32);
        assert_eq!(F64.promote(BF16), F64);
        assert_eq!(BF16.promote(F16), F16);
        assert_eq!(F16.promote(F32), F32);
        assert_eq!(S8.promote(F16), F16);
        assert_eq!(BF16.to_float(), BF16);
        assert_eq!(F16.accumulator(), F16);
        assert_eq!(U16.accumulator(), U32);
        assert_eq!(U64.accumulator(), S64);
        assert_eq!(S8.accumulator(), S32);
    }

    /// `Nx.Type.merge`'s documented complex examples, `to_complex` and `to_real`.
    #[test]
    fn complex_promotion_follows_nx() {
        use DType::*;
        assert_eq!(F16.promote(C64), C64);
        assert_eq!(F32.promote(C64), C64);
        assert_eq!(F64.promote(C64), C128);
        assert_eq!(C64.promote(F32), C64);
        assert_eq!(C128.promote(C64), C128);
        assert_eq!(BF16.promote(C64), C64);
        assert_eq!(S64.promote(C64), C64);
        assert_eq!(U8.promote(C128), C128);
        assert_eq!(F64.to_complex(), C128);
        assert_eq!(S32.to_complex(), C64);
        assert_eq!(C128.to_real(), F64);
        assert_eq!(C64.to_real(), F32);
        assert_eq!(S8.to_real(), F32);
        assert_eq!(C64.accumulator(), C64);
        assert!(C64.is_float() && !C64.is_real_float() && !C64.is_integer());
    }
}
