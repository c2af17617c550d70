//! `Element`: the Rust type behind each [`DType`], its arithmetic (wrapping on integers, as
//! XLA's is, so that no element value can make an op panic) and its place in a [`Buffer`].

use std::fmt;

use crate::buffer::with_buffer;
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::host_vec::{HostVec, Plain};

/// A Rust type that can be a tensor element. Arithmetic on integers wraps (as XLA's does) so that
/// no user input can make an op panic.
pub trait Element:
    Copy + Send + Sync + PartialOrd + PartialEq + Default + fmt::Debug + Plain + 'static
{
    /// The dtype this Rust type stands for.
    const DTYPE: DType;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest value (negative infinity for floats): the identity of max.
    const LOWEST: Self;
    /// The largest value (infinity for floats): the identity of min.
    const HIGHEST: Self;

    /// True for a float NaN (never for integers).
    fn is_nan(self) -> bool;
    /// Converts to f64 (exact for every value of every type but the largest s64s).
    fn to_f64(self) -> f64;
    /// Converts to i64 (`as` semantics: floats truncate and saturate).
    fn to_i64(self) -> i64;
    /// Converts from f64 with Rust's `as` semantics (saturating, NaN becomes 0 for integers).
    fn from_f64(v: f64) -> Self;
    /// Converts from i64 with wrapping semantics for integers.
    fn from_i64(v: i64) -> Self;
    /// Converts to u64 (`as` semantics); what a `u64` past `i64::MAX` converts through.
    fn to_u64(self) -> u64;
    /// Converts from u64 with `as` semantics (wrapping for integers, nearest for floats).
    fn from_u64(v: u64) -> Self;
    /// The real and imaginary parts (a real value's imaginary part is 0).
    fn to_parts(self) -> (f64, f64) {
        (self.to_f64(), 0.0)
    }
    /// From real and imaginary parts: a real type keeps the real part, as Nx's `as_type` does.
    fn from_parts(re: f64, _im: f64) -> Self {
        Self::from_f64(re)
    }
    /// Addition (wrapping for integers).
    fn add(self, o: Self) -> Self;
    /// Subtraction (wrapping for integers).
    fn sub(self, o: Self) -> Self;
    /// Multiplication (wrapping for integers).
    fn mul(self, o: Self) -> Self;
    /// Division; only ever called on floats (integer divide goes through a float type).
    fn div(self, o: Self) -> Self;
    /// Power. For integers a negative exponent gives 0 except for bases 1 and -1.
    fn pow(self, o: Self) -> Self;
    /// Negation (wrapping for integers, so `-0u8 == 0` and `-1u8 == 255`).
    fn neg(self) -> Self;
    /// Absolute value (wrapping for integers).
    fn abs(self) -> Self;
    /// Remainder with the dividend's sign (C's `fmod` on floats); an integer by 0 gives the
    /// dividend, as XLA's does.
    fn rem(self, o: Self) -> Self;
    /// Integer division rounding toward zero (wrapping; by 0 every bit set, as XLA's). Floats
    /// never get here: the frontend refuses them.
    fn quot(self, o: Self) -> Self;
    /// The angle of the point `(o, self)` (floats; integers are converted first).
    fn atan2(self, o: Self) -> Self;
    /// Bitwise and, or, xor (integers; floats are refused by the frontend).
    fn bit_and(self, o: Self) -> Self;
    /// Bitwise or.
    fn bit_or(self, o: Self) -> Self;
    /// Bitwise exclusive or.
    fn bit_xor(self, o: Self) -> Self;
    /// Shift left by `o` bits; `o` read as unsigned, and a shift past the width gives 0 (XLA).
    fn shift_left(self, o: Self) -> Self;
    /// Shift right by `o` bits, arithmetic on signed types and logical on unsigned; past the
    /// width, the sign fill (XLA).
    fn shift_right(self, o: Self) -> Self;
    /// Every bit flipped.
    fn bit_not(self) -> Self;
    /// Leading zero bits, in this type.
    fn leading_zeros_of(self) -> Self;
    /// One bits, in this type.
    fn ones_of(self) -> Self;
    /// Formats the value as Nx prints it: shortest round-trip form, `NaN`, `Inf`, `-Inf`.
    fn format(self) -> String;
    /// Wraps a vector of this type into a host buffer.
    fn into_buffer(v: impl Into<HostVec<Self>>) -> Buffer;
    /// Borrows the elements of a buffer if it holds this type.
    fn slice_of(b: &Buffer) -> Option<&[Self]>;
    /// The vector inside a buffer if it holds this type, else the buffer back.
    fn vec_of(b: Buffer) -> Result<HostVec<Self>, Buffer>;
}

/// The bitwise ops of a float element: refused by the frontend, total here (the float's value
/// unchanged) so that nothing can panic. Shared with the half floats' impls.
macro_rules! float_bit_ops {
    () => {
        fn bit_and(self, _: Self) -> Self {
            self
        }
        fn bit_or(self, _: Self) -> Self {
            self
        }
        fn bit_xor(self, _: Self) -> Self {
            self
        }
        fn shift_left(self, _: Self) -> Self {
            self
        }
        fn shift_right(self, _: Self) -> Self {
            self
        }
        fn bit_not(self) -> Self {
            self
        }
        fn leading_zeros_of(self) -> Self {
            self
        }
        fn ones_of(self) -> Self {
            self
        }
    };
}

/// An element type's place in a [`Buffer`]: the variant that holds it, shared by the float and
/// integer impls below and the half floats'.
macro_rules! buffer_place {
    ($variant:ident) => {
        fn into_buffer(v: impl Into<$crate::host_vec::HostVec<Self>>) -> $crate::buffer::Buffer {
            $crate::buffer::Buffer::$variant(v.into())
        }
        fn vec_of(
            b: $crate::buffer::Buffer,
        ) -> Result<$crate::host_vec::HostVec<Self>, $crate::buffer::Buffer> {
            match b {
                $crate::buffer::Buffer::$variant(v) => Ok(v),
                other => Err(other),
            }
        }
        fn slice_of(b: &$crate::buffer::Buffer) -> Option<&[Self]> {
            match b {
                $crate::buffer::Buffer::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}
pub(crate) use {buffer_place, float_bit_ops};

macro_rules! float_element {
    ($t:ty, $d:expr, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn to_u64(self) -> u64 {
                self as u64
            }
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn div(self, o: Self) -> Self {
                self / o
            }
            fn pow(self, o: Self) -> Self {
                self.powf(o)
            }
            fn neg(self) -> Self {
                -self
            }
            fn abs(self) -> Self {
                self.abs()
            }
            fn rem(self, o: Self) -> Self {
                self % o
            }
            // The integer-only ops are refused for floats by the frontend; total here so that
            // nothing can panic.
            fn quot(self, o: Self) -> Self {
                (self / o).trunc()
            }
            fn atan2(self, o: Self) -> Self {
                <$t>::atan2(self, o)
            }
            float_bit_ops!();
            fn format(self) -> String {
                if self.is_nan() {
                    "NaN".into()
                } else if self.is_infinite() {
                    if self > 0.0 { "Inf" } else { "-Inf" }.into()
                } else {
                    // Debug is Rust's shortest round-trip form and keeps the ".0" Nx shows.
                    format!("{:?}", self)
                }
            }
            buffer_place!($variant);
        }
    };
}

macro_rules! int_element {
    ($t:ty, $d:expr, $variant:ident) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            fn is_nan(self) -> bool {
                false
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            fn to_u64(self) -> u64 {
                self as u64
            }
            fn from_u64(v: u64) -> Self {
                v as $t
            }
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn div(self, o: Self) -> Self {
                // Never reached through the public API (integer divide is done in floats); kept
                // total so that no input can panic.
                self.checked_div(o).unwrap_or(0)
            }
            /// XLA's integer power: a negative exponent gives 1 for base 1, ±1 for base -1
            /// (by the exponent's parity) and 0 otherwise; a non-negative one wraps, by
            /// squaring over the whole exponent (2^64 steps would be needed otherwise).
            fn pow(self, o: Self) -> Self {
                let e = o as i128;
                if e < 0 {
                    return match self as i128 {
                        1 => 1,
                        -1 if e & 1 == 0 => 1,
                        -1 => self,
                        _ => 0,
                    };
                }
                let (mut n, mut base, mut acc) = (e as u128, self, 1 as $t);
                while n > 0 {
                    if n & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    n >>= 1;
                    if n > 0 {
                        base = base.wrapping_mul(base);
                    }
                }
                acc
            }
            fn neg(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[allow(unused_comparisons)]
            fn abs(self) -> Self {
                if self < 0 {
                    self.neg()
                } else {
                    self
                }
            }
            fn rem(self, o: Self) -> Self {
                if o == 0 {
                    self
                } else {
                    self.wrapping_rem(o)
                }
            }
            fn quot(self, o: Self) -> Self {
                if o == 0 {
                    !0
                } else {
                    self.wrapping_div(o)
                }
            }
            fn atan2(self, o: Self) -> Self {
                Self::from_f64((self as f64).atan2(o as f64))
            }
            fn bit_and(self, o: Self) -> Self {
                self & o
            }
            fn bit_or(self, o: Self) -> Self {
                self | o
            }
            fn bit_xor(self, o: Self) -> Self {
                self ^ o
            }
            fn shift_left(self, o: Self) -> Self {
                u32::try_from(o as u64)
                    .ok()
                    .and_then(|n| self.checked_shl(n))
                    .unwrap_or(0)
            }
            #[allow(unused_comparisons)]
            fn shift_right(self, o: Self) -> Self {
                let fill = if self < 0 { !0 } else { 0 };
                u32::try_from(o as u64)
                    .ok()
                    .and_then(|n| self.checked_shr(n))
                    .unwrap_or(fill)
            }
            fn bit_not(self) -> Self {
                !self
            }
            fn leading_zeros_of(self) -> Self {
                self.leading_zeros() as $t
            }
            fn ones_of(self) -> Self {
                self.count_ones() as $t
            }
            fn format(self) -> String {
                self.to_string()
            }
            buffer_place!($variant);
        }
    };
}

/// `x` converted to `U` as Rust's `as` converts: integers wrap into narrower integers (and
/// sign-extend into wider ones), floats saturate into integers (NaN is 0), anything rounds to
/// the nearest float. The path is chosen by the types alone, so a loop over it stays one
/// conversion the compiler vectorises.
#[inline(always)]
pub fn convert<T: Element, U: Element>(x: T) -> U {
    if T::DTYPE.is_complex() || U::DTYPE.is_complex() {
        let (re, im) = x.to_parts();
        U::from_parts(re, im)
    } else if T::DTYPE.is_float() {
        U::from_f64(x.to_f64())
    } else if T::DTYPE == DType::U64 {
        U::from_u64(x.to_u64())
    } else {
        U::from_i64(x.to_i64())
    }
}

/// Float-only math, implemented by f32 and f64.
pub trait Float: Element {
    /// e^x.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Round up.
    fn ceil(self) -> Self;
    /// Round half away from zero.
    fn round(self) -> Self;
    /// e^x - 1, exact near 0.
    fn exp_m1(self) -> Self;
    /// ln(1 + x), exact near 0.
    fn ln_1p(self) -> Self;
    /// log₂ x.
    fn log2(self) -> Self;
    /// log₁₀ x.
    fn log10(self) -> Self;
    /// tan x.
    fn tan(self) -> Self;
    /// sinh x.
    fn sinh(self) -> Self;
    /// cosh x.
    fn cosh(self) -> Self;
    /// arcsin x.
    fn asin(self) -> Self;
    /// arccos x.
    fn acos(self) -> Self;
    /// arctan x.
    fn atan(self) -> Self;
    /// arsinh x.
    fn asinh(self) -> Self;
    /// arcosh x.
    fn acosh(self) -> Self;
    /// artanh x.
    fn atanh(self) -> Self;
    /// ∛x.
    fn cbrt(self) -> Self;
    /// the error function.
    fn erf(self) -> Self;
    /// 1 - erf x, exact in the tail.
    fn erfc(self) -> Self;
    /// the inverse of erf on (-1, 1).
    fn erf_inv(self) -> Self;
}

macro_rules! float_math {
    ($t:ty, $erf:ident, $erfc:ident, $erf_inv:ident) => {
        impl Float for $t {
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            fn round(self) -> Self {
                <$t>::round(self)
            }
            fn exp_m1(self) -> Self {
                <$t>::exp_m1(self)
            }
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            fn log10(self) -> Self {
                <$t>::log10(self)
            }
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            fn sinh(self) -> Self {
                <$t>::sinh(self)
            }
            fn cosh(self) -> Self {
                <$t>::cosh(self)
            }
            fn asin(self) -> Self {
                <$t>::asin(self)
            }
            fn acos(self) -> Self {
                <$t>::acos(self)
            }
            fn atan(self) -> Self {
                <$t>::atan(self)
            }
            fn asinh(self) -> Self {
                <$t>::asinh(self)
            }
            fn acosh(self) -> Self {
                <$t>::acosh(self)
            }
            fn atanh(self) -> Self {
                <$t>::atanh(self)
            }
            fn cbrt(self) -> Self {
                <$t>::cbrt(self)
            }
            fn erf(self) -> Self {
                crate::special::$erf(self)
            }
            fn erfc(self) -> Self {
                crate::special::$erfc(self)
            }
            fn erf_inv(self) -> Self {
                crate::special::$erf_inv(self)
            }
        }
    };
}

float_math!(f32, erf_f32, erfc_f32, erf_inv_f32);
float_math!(f64, erf_f64, erfc_f64, erf_inv_f64);
float_element!(f32, DType::F32, F32);
float_element!(f64, DType::F64, F64);
int_element!(u8, DType::U8, U8);
int_element!(u16, DType::U16, U16);
int_element!(u32, DType::U32, U32);
int_element!(u64, DType::U64, U64);
int_element!(i8, DType::S8, S8);
int_element!(i16, DType::S16, S16);
int_element!(i32, DType::S32, S32);
int_element!(i64, DType::S64, S64);

impl Buffer {
    /// Element `i` as f64 (used by tests and the display of single values).
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        with_buffer!(self, v => v.get(i).map(|x| x.to_f64()))
    }

    /// Element `i` formatted as Nx prints it.
    pub fn format_at(&self, i: usize) -> String {
        with_buffer!(self, v => v.get(i).map(|x| x.format()).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_arithmetic_never_panics() {
        assert_eq!(Element::add(200u8, 100), 44);
        assert_eq!(Element::abs(i32::MIN), i32::MIN);
        assert_eq!(Element::pow(2i64, -1), 0);
        assert_eq!(Element::pow(-1i32, -3), -1);
        assert_eq!(Element::div(7u8, 0), 0);
        // Exponents past u32::MAX: 3^(2^32 + 1) mod 2^64 is 3 * (3^(2^32) mod 2^64).
        let big = (1i64 << 32) + 1;
        let expected = (0..32).fold(3i64, |b, _| b.wrapping_mul(b)).wrapping_mul(3);
        assert_eq!(Element::pow(3i64, big), expected);
        assert_eq!(Element::pow(-1i64, i64::MIN + 1), -1);
        assert_eq!(Element::pow(-1i64, i64::MIN), 1);
        assert_eq!(Element::pow(-1i32, -7), -1);
        assert_eq!(Element::pow(2u8, 9), 0);
    }

    #[test]
    fn floats_print_like_nx() {
        assert_eq!(1.0f32.format(), "1.0");
        assert_eq!(0.1f32.format(), "0.1");
        assert_eq!(f64::NAN.format(), "NaN");
        assert_eq!(f32::NEG_INFINITY.format(), "-Inf");
    }
}
