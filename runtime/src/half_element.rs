//! `bf16` and `f16` as [`Element`]s. Each value converts exactly to f64; every operation here
//! computes in f64 and rounds once to the 16-bit type (round to nearest even), which is the
//! reference the backends are checked against. Backends never compute in 16 bits:
//! `memory::dispatch` widens half operands to f32 (f64 on `binary`), runs the op there and
//! rounds the result, so these methods serve casts, creation, display and the host-side
//! conversions.

use half::{bf16, f16};

use crate::dtype::DType;
use crate::element::{Element, Float};

/// The shortest decimal that reads back as the same 16-bit value, as Nx prints `~VEC[0.1]f16`
/// (`0.1`, where the f32 form of the same value would be `0.099975586`).
fn shortest(v: f64, back: impl Fn(f64) -> f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Inf" } else { "-Inf" }.into();
    }
    // Five significant digits always read back as the same f16 or bf16; fewer often do.
    for digits in 1..=5 {
        let text = format!("{:.*e}", digits - 1, v);
        if let Ok(parsed) = text.parse::<f64>() {
            if back(parsed) == v {
                return format!("{parsed:?}");
            }
        }
    }
    format!("{v:?}")
}

/// The bits of `v` rounded once to nearest even into a half float with `man` mantissa bits and
/// exponent bias `bias` (f16: 10, 15; bf16: 7, 127). The `half` crate's `from_f64` drops the
/// low 32 bits of the f64 first, which decides some values just past a tie the wrong way
/// (`0x1.0100000000001p-126` to bf16); `kernels.cu` has the same routine for the GPU.
fn round_to_half(v: f64, man: u32, bias: i32) -> u16 {
    let all_ones = (2 * bias + 1) as u16;
    let b = v.to_bits();
    let sign = ((b >> 48) & 0x8000) as u16;
    let a = b & 0x7fff_ffff_ffff_ffff;
    let inf = all_ones << man;
    if a >= 0x7ff0_0000_0000_0000 {
        if a == 0x7ff0_0000_0000_0000 {
            return sign | inf;
        }
        // NaN stays NaN: quiet, with the top of its payload.
        let payload = ((a >> (52 - man)) & ((1 << man) - 1)) as u16;
        return sign | inf | (1 << (man - 1)) | payload;
    }
    let e = (a >> 52) as i32 - 1023;
    let min_exp = 1 - bias;
    // f64 subnormals, and anything under half the smallest half subnormal, round to zero.
    if (a >> 52) == 0 || e < min_exp - man as i32 - 1 {
        return sign;
    }
    if e > bias {
        return sign | inf;
    }
    let m = (a & 0xf_ffff_ffff_ffff) | (1 << 52);
    let shift = if e >= min_exp {
        52 - man
    } else {
        52 - man + (min_exp - e) as u32
    };
    let mut q = m >> shift;
    let rest = m & ((1 << shift) - 1);
    let halfway = 1u64 << (shift - 1);
    if rest > halfway || (rest == halfway && q & 1 == 1) {
        q += 1;
    }
    if e >= min_exp {
        // A carry out of the mantissa moves into the exponent (up to infinity).
        sign | ((((e + bias) as u64) << man) + q - (1 << man)) as u16
    } else {
        sign | q as u16
    }
}

/// `v` rounded once to nearest even to f16.
pub(crate) fn f16_of(v: f64) -> f16 {
    f16::from_bits(round_to_half(v, 10, 15))
}

/// `v` rounded once to nearest even to bf16.
pub(crate) fn bf16_of(v: f64) -> bf16 {
    bf16::from_bits(round_to_half(v, 7, 127))
}

/// `x` rounded to the half dtype `dtype`, as f64 (`x` itself for any other dtype).
pub(crate) fn rounded(dtype: DType, x: f64) -> f64 {
    match dtype {
        DType::F16 => f16_of(x).to_f64(),
        DType::BF16 => bf16_of(x).to_f64(),
        _ => x,
    }
}

/// The largest value of the half dtype `dtype` below the finite `x`.
pub(crate) fn largest_below(dtype: DType, x: f64) -> f64 {
    let mut r = rounded(dtype, x);
    if r >= x {
        // One step down in the 16-bit pattern's order: toward zero for positive values, away
        // from it for negative ones (-0 steps to the smallest negative subnormal).
        let bits = match dtype {
            DType::BF16 => bf16_of(r).to_bits(),
            _ => f16_of(r).to_bits(),
        };
        let down = if r > 0.0 {
            bits - 1
        } else if bits == 0 {
            0x8001
        } else {
            bits + 1
        };
        r = match dtype {
            DType::BF16 => bf16::from_bits(down).to_f64(),
            _ => f16::from_bits(down).to_f64(),
        };
    }
    r
}

macro_rules! half_element {
    ($t:ty, $d:expr, $variant:ident, $of:ident) => {
        impl Element for $t {
            const DTYPE: DType = $d;
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            fn to_i64(self) -> i64 {
                <$t>::to_f64(self) as i64
            }
            fn from_f64(v: f64) -> Self {
                $of(v)
            }
            fn from_i64(v: i64) -> Self {
                // Every i64 within f16's range and every s32 is exact in f64, so this rounds
                // once; only s64s past 2^53 round twice.
                $of(v as f64)
            }
            fn to_u64(self) -> u64 {
                <$t>::to_f64(self) as u64
            }
            fn from_u64(v: u64) -> Self {
                $of(v as f64)
            }
            fn add(self, o: Self) -> Self {
                $of(self.to_f64() + o.to_f64())
            }
            fn sub(self, o: Self) -> Self {
                $of(self.to_f64() - o.to_f64())
            }
            fn mul(self, o: Self) -> Self {
                $of(self.to_f64() * o.to_f64())
            }
            fn div(self, o: Self) -> Self {
                $of(self.to_f64() / o.to_f64())
            }
            fn pow(self, o: Self) -> Self {
                $of(self.to_f64().powf(o.to_f64()))
            }
            fn neg(self) -> Self {
                -self
            }
            fn abs(self) -> Self {
                Self::from_bits(self.to_bits() & 0x7fff)
            }
            fn rem(self, o: Self) -> Self {
                $of(self.to_f64() % o.to_f64())
            }
            fn quot(self, o: Self) -> Self {
                $of((self.to_f64() / o.to_f64()).trunc())
            }
            fn atan2(self, o: Self) -> Self {
                $of(self.to_f64().atan2(o.to_f64()))
            }
            crate::element::float_bit_ops!();
            fn format(self) -> String {
                shortest(self.to_f64(), |x| $of(x).to_f64())
            }
            crate::element::buffer_place!($variant);
        }

        impl Float for $t {
            fn exp(self) -> Self {
                $of(self.to_f64().exp())
            }
            fn ln(self) -> Self {
                $of(self.to_f64().ln())
            }
            fn sqrt(self) -> Self {
                $of(self.to_f64().sqrt())
            }
            fn tanh(self) -> Self {
                $of(self.to_f64().tanh())
            }
            fn sin(self) -> Self {
                $of(self.to_f64().sin())
            }
            fn cos(self) -> Self {
                $of(self.to_f64().cos())
            }
            fn floor(self) -> Self {
                $of(self.to_f64().floor())
            }
            fn ceil(self) -> Self {
                $of(self.to_f64().ceil())
            }
            fn round(self) -> Self {
                $of(self.to_f64().round())
            }
            fn exp_m1(self) -> Self {
                $of(self.to_f64().exp_m1())
            }
            fn ln_1p(self) -> Self {
                $of(self.to_f64().ln_1p())
            }
            fn log2(self) -> Self {
                $of(self.to_f64().log2())
            }
            fn log10(self) -> Self {
                $of(self.to_f64().log10())
            }
            fn tan(self) -> Self {
                $of(self.to_f64().tan())
            }
            fn sinh(self) -> Self {
                $of(self.to_f64().sinh())
            }
            fn cosh(self) -> Self {
                $of(self.to_f64().cosh())
            }
            fn asin(self) -> Self {
                $of(self.to_f64().asin())
            }
            fn acos(self) -> Self {
                $of(self.to_f64().acos())
            }
            fn atan(self) -> Self {
                $of(self.to_f64().atan())
            }
            fn asinh(self) -> Self {
                $of(self.to_f64().asinh())
            }
            fn acosh(self) -> Self {
                $of(self.to_f64().acosh())
            }
            fn atanh(self) -> Self {
                $of(self.to_f64().atanh())
            }
            fn cbrt(self) -> Self {
                $of(self.to_f64().cbrt())
            }
            fn erf(self) -> Self {
                $of(Float::erf(self.to_f64()))
            }
            fn erfc(self) -> Self {
                $of(Float::erfc(self.to_f64()))
            }
            fn erf_inv(self) -> Self {
                $of(Float::erf_inv(self.to_f64()))
            }
        }
    };
}

half_element!(bf16, DType::BF16, BF16, bf16_of);
half_element!(f16, DType::F16, F16, f16_of);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_print_their_shortest_form() {
        assert_eq!(f16_of(0.1).format(), "0.1");
        assert_eq!(bf16_of(0.1).format(), "0.1");
        assert_eq!(f16_of(1.0).format(), "1.0");
        // 65500 reads back as f16 65504 (Nx's Ryu gives the same digits, written 6.55e4).
        assert_eq!(f16::MAX.format(), "65500.0");
        assert_eq!(f16_of(1e6).format(), "Inf");
        assert_eq!(bf16::NAN.format(), "NaN");
        assert_eq!(f16_of(-0.0).format(), "-0.0");
    }

    #[test]
    fn arithmetic_rounds_once_to_nearest_even() {
        // 2049 is halfway between f16's 2048 and 2050: ties go to the even 2048.
        let a = f16_of(2048.0);
        assert_eq!(Element::add(a, f16::ONE).to_f64(), 2048.0);
        assert_eq!(Element::add(a, f16_of(3.0)).to_f64(), 2052.0);
        assert_eq!(Element::mul(f16::MAX, f16_of(2.0)), f16::INFINITY);
        // Just past a tie: the low bits of the f64 decide (the half crate drops them).
        let past_tie = f64::from_bits(0x3810_1000_0000_0001);
        assert_eq!(bf16_of(past_tie).to_bits(), 0x0081);
    }
}
