//! `c64` and `c128` as [`Element`]s: [`Complex`], a pair of floats (real part first, as Nx,
//! NumPy and C lay them out), with the principal branches of the complex functions (those of
//! C99's `<complex.h>`, NumPy and Nx). Every backend's generic loops compute on these; the
//! ops that have no complex meaning (comparisons, rounding, bitwise, `remainder`, `erf`) are
//! refused by the frontend, and are total here so that nothing can panic. The type itself is
//! plain data in `complex.rs`, which buffers name without reaching these impls.

use std::fmt;

use crate::complex::Complex;
use crate::dtype::DType;
use crate::element::{buffer_place, float_bit_ops, Element, Float};

impl<R: fmt::Debug + Copy> fmt::Debug for Complex<R>
where
    Complex<R>: Element,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.format())
    }
}

/// Nx's form of one part: shortest round trip, `NaN`, `Inf`.
fn part<R: Element>(x: R) -> String {
    x.format()
}

macro_rules! complex_element {
    ($r:ty, $d:expr, $variant:ident) => {
        impl crate::host_vec::Plain for Complex<$r> {}

        impl Complex<$r> {
            /// `|z|`, without overflow for large parts.
            pub fn norm(self) -> $r {
                self.re.hypot(self.im)
            }

            /// The angle of `z` from the positive real axis, in (-π, π].
            pub fn arg(self) -> $r {
                self.im.atan2(self.re)
            }

            /// `re - im·i`.
            pub fn conj(self) -> Self {
                Complex::new(self.re, -self.im)
            }

            fn i_times(self) -> Self {
                Complex::new(-self.im, self.re)
            }

            fn minus_i_times(self) -> Self {
                Complex::new(self.im, -self.re)
            }

            fn scale(self, k: $r) -> Self {
                Complex::new(self.re * k, self.im * k)
            }

            fn real(x: $r) -> Self {
                Complex::new(x, 0.0)
            }
        }

        impl Element for Complex<$r> {
            const DTYPE: DType = $d;
            const ZERO: Self = Complex::new(0.0, 0.0);
            const ONE: Self = Complex::new(1.0, 0.0);
            const LOWEST: Self = Complex::new(<$r>::NEG_INFINITY, 0.0);
            const HIGHEST: Self = Complex::new(<$r>::INFINITY, 0.0);

            fn is_nan(self) -> bool {
                self.re.is_nan() || self.im.is_nan()
            }
            fn to_f64(self) -> f64 {
                self.re as f64
            }
            fn to_i64(self) -> i64 {
                self.re as i64
            }
            fn from_f64(v: f64) -> Self {
                Self::real(v as $r)
            }
            fn from_i64(v: i64) -> Self {
                Self::real(v as $r)
            }
            fn to_u64(self) -> u64 {
                self.re as u64
            }
            fn from_u64(v: u64) -> Self {
                Self::real(v as $r)
            }
            fn to_parts(self) -> (f64, f64) {
                (self.re as f64, self.im as f64)
            }
            fn from_parts(re: f64, im: f64) -> Self {
                Complex::new(re as $r, im as $r)
            }
            fn add(self, o: Self) -> Self {
                Complex::new(self.re + o.re, self.im + o.im)
            }
            fn sub(self, o: Self) -> Self {
                Complex::new(self.re - o.re, self.im - o.im)
            }
            fn mul(self, o: Self) -> Self {
                Complex::new(
                    self.re * o.re - self.im * o.im,
                    self.re * o.im + self.im * o.re,
                )
            }
            /// Smith's algorithm: the divisor's larger part divides first, so neither `c² + d²`
            /// nor the products overflow where the quotient does not.
            fn div(self, o: Self) -> Self {
                let (a, b, c, d) = (self.re, self.im, o.re, o.im);
                if c.abs() >= d.abs() {
                    if c == 0.0 && d == 0.0 {
                        return Complex::new(a / c, b / c);
                    }
                    let r = d / c;
                    let den = c + d * r;
                    Complex::new((a + b * r) / den, (b - a * r) / den)
                } else {
                    let r = c / d;
                    let den = c * r + d;
                    Complex::new((a * r + b) / den, (b * r - a) / den)
                }
            }
            fn pow(self, o: Self) -> Self {
                if o == Self::ZERO {
                    return Self::ONE;
                }
                if self == Self::ZERO {
                    return if o.re > 0.0 && o.im == 0.0 {
                        Self::ZERO
                    } else {
                        Complex::new(<$r>::NAN, <$r>::NAN)
                    };
                }
                Float::exp(o.mul(Float::ln(self)))
            }
            fn neg(self) -> Self {
                Complex::new(-self.re, -self.im)
            }
            fn abs(self) -> Self {
                Self::real(self.norm())
            }
            fn rem(self, _: Self) -> Self {
                self
            }
            fn quot(self, _: Self) -> Self {
                self
            }
            fn atan2(self, _: Self) -> Self {
                self
            }
            float_bit_ops!();
            /// Nx's form: `1.0+2.0i`, `1.0-0.0i` (the imaginary part's sign as its sign bit).
            fn format(self) -> String {
                let sign = if self.im.is_sign_negative() && !self.im.is_nan() {
                    '-'
                } else {
                    '+'
                };
                format!("{}{}{}i", part(self.re), sign, part(self.im.abs()))
            }
            buffer_place!($variant);
        }

        impl Float for Complex<$r> {
            fn exp(self) -> Self {
                let m = self.re.exp();
                if self.im == 0.0 {
                    return Complex::new(m, self.im);
                }
                Complex::new(m * self.im.cos(), m * self.im.sin())
            }
            fn ln(self) -> Self {
                Complex::new(self.norm().ln(), self.arg())
            }
            /// The principal root (real part at least 0), by the half-angle formulas that lose
            /// nothing to cancellation.
            fn sqrt(self) -> Self {
                let (a, b) = (self.re, self.im);
                if a == 0.0 && b == 0.0 {
                    return Complex::new(0.0, b);
                }
                let t = ((a.abs() + self.norm()) / 2.0).sqrt();
                if a >= 0.0 {
                    Complex::new(t, b / (2.0 * t))
                } else {
                    Complex::new(b.abs() / (2.0 * t), t.copysign(b))
                }
            }
            fn tanh(self) -> Self {
                // (sinh 2a + i sin 2b) / (cosh 2a + cos 2b), with the limit for large |a|.
                let (a2, b2) = (2.0 * self.re, 2.0 * self.im);
                if a2.abs() > 40.0 {
                    return Complex::new((1.0 as $r).copysign(self.re), 0.0);
                }
                let den = a2.cosh() + b2.cos();
                Complex::new(a2.sinh() / den, b2.sin() / den)
            }
            fn sin(self) -> Self {
                let (a, b) = (self.re, self.im);
                Complex::new(a.sin() * b.cosh(), a.cos() * b.sinh())
            }
            fn cos(self) -> Self {
                let (a, b) = (self.re, self.im);
                Complex::new(a.cos() * b.cosh(), -(a.sin() * b.sinh()))
            }
            fn floor(self) -> Self {
                Complex::new(self.re.floor(), self.im.floor())
            }
            fn ceil(self) -> Self {
                Complex::new(self.re.ceil(), self.im.ceil())
            }
            fn round(self) -> Self {
                Complex::new(self.re.round(), self.im.round())
            }
            fn exp_m1(self) -> Self {
                Float::exp(self).sub(Self::ONE)
            }
            fn ln_1p(self) -> Self {
                Float::ln(self.add(Self::ONE))
            }
            fn log2(self) -> Self {
                Float::ln(self).scale(std::f64::consts::LOG2_E as $r)
            }
            fn log10(self) -> Self {
                Float::ln(self).scale(std::f64::consts::LOG10_E as $r)
            }
            fn tan(self) -> Self {
                // tan z = -i tanh(i z)
                Float::tanh(self.i_times()).minus_i_times()
            }
            fn sinh(self) -> Self {
                let (a, b) = (self.re, self.im);
                Complex::new(a.sinh() * b.cos(), a.cosh() * b.sin())
            }
            fn cosh(self) -> Self {
                let (a, b) = (self.re, self.im);
                Complex::new(a.cosh() * b.cos(), a.sinh() * b.sin())
            }
            fn asin(self) -> Self {
                // asin z = -i asinh(i z)
                Float::asinh(self.i_times()).minus_i_times()
            }
            fn acos(self) -> Self {
                let half_pi = Self::real(std::f64::consts::FRAC_PI_2 as $r);
                half_pi.sub(Float::asin(self))
            }
            fn atan(self) -> Self {
                // atan z = -i atanh(i z)
                Float::atanh(self.i_times()).minus_i_times()
            }
            fn asinh(self) -> Self {
                // ln(z + sqrt(z² + 1))
                let root = Float::sqrt(self.mul(self).add(Self::ONE));
                Float::ln(self.add(root))
            }
            fn acosh(self) -> Self {
                // ln(z + sqrt(z + 1)·sqrt(z - 1)): the principal branch (C99's cacosh)
                let root = Float::sqrt(self.add(Self::ONE)).mul(Float::sqrt(self.sub(Self::ONE)));
                Float::ln(self.add(root))
            }
            fn atanh(self) -> Self {
                // (ln(1 + z) - ln(1 - z)) / 2
                let up = Float::ln(Self::ONE.add(self));
                let down = Float::ln(Self::ONE.sub(self));
                up.sub(down).scale(0.5)
            }
            fn cbrt(self) -> Self {
                if self == Self::ZERO {
                    return self;
                }
                Float::exp(Float::ln(self).scale(1.0 / 3.0))
            }
            fn erf(self) -> Self {
                Self::real(Float::erf(self.re))
            }
            fn erfc(self) -> Self {
                Self::real(Float::erfc(self.re))
            }
            fn erf_inv(self) -> Self {
                Self::real(Float::erf_inv(self.re))
            }
        }
    };
}

complex_element!(f32, DType::C64, C64);
complex_element!(f64, DType::C128, C128);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complex::{Complex32, Complex64};

    fn close(a: Complex64, b: Complex64) -> bool {
        (a.re - b.re).abs() < 1e-12 && (a.im - b.im).abs() < 1e-12
    }

    #[test]
    fn complexes_print_like_nx() {
        assert_eq!(Complex32::new(1.0, 2.0).format(), "1.0+2.0i");
        assert_eq!(Complex32::new(1.0, -0.0).format(), "1.0-0.0i");
        assert_eq!(Complex64::new(0.25, -0.25).format(), "0.25-0.25i");
        assert_eq!(Complex32::new(f32::INFINITY, f32::NAN).format(), "Inf+NaNi");
    }

    #[test]
    fn arithmetic_and_principal_branches() {
        let z = Complex64::new(3.0, 4.0);
        assert_eq!(Element::abs(z), Complex64::new(5.0, 0.0));
        assert_eq!(z.mul(z.conj()), Complex64::new(25.0, 0.0));
        assert!(close(z.div(z), Complex64::ONE));
        assert!(close(
            Complex64::new(1.0, 0.0).div(Complex64::new(0.0, 1e300)),
            Complex64::new(0.0, -1e-300)
        ));
        assert!(close(
            Float::sqrt(Complex64::new(-4.0, 0.0)),
            Complex64::new(0.0, 2.0)
        ));
        assert!(close(
            Float::sqrt(Complex64::new(-4.0, -0.0)),
            Complex64::new(0.0, -2.0)
        ));
        let pi = std::f64::consts::PI;
        assert!(close(
            Float::exp(Complex64::new(0.0, pi)),
            Complex64::new(-1.0, 1.2246467991473532e-16)
        ));
        for w in [
            Complex64::new(0.3, -0.7),
            Complex64::new(-2.0, 0.5),
            Complex64::new(1.5, 2.5),
        ] {
            assert!(close(Float::exp(Float::ln(w)), w), "{w:?}");
            assert!(close(Float::sin(Float::asin(w)), w), "{w:?}");
            assert!(close(Float::cos(Float::acos(w)), w), "{w:?}");
            assert!(close(Float::tan(Float::atan(w)), w), "{w:?}");
            assert!(close(Float::sinh(Float::asinh(w)), w), "{w:?}");
            assert!(close(Float::cosh(Float::acosh(w)), w), "{w:?}");
            assert!(close(Float::tanh(Float::atanh(w)), w), "{w:?}");
            assert!(close(w.pow(Complex64::new(2.0, 0.0)), w.mul(w)), "{w:?}");
        }
    }
}
