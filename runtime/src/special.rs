//! Special functions the standard library lacks, for [`crate::element::Float`]: the error
//! function and its complement (from `libm`, the Rust port of musl's, correctly rounded to
//! about 1 ulp), and its inverse, which no well-kept crate offers for both widths.
//!
//! The inverse starts from Giles' polynomial approximation ("Approximating the erfinv
//! function", GPU Computing Gems, 2011; the one XLA and hence Nx's EXLA use for f32) and
//! refines it with Halley steps on `erf` (or on `erfc` in the tails, where `erf(x)` is within
//! an ulp of ±1 and cannot tell neighbours apart) until they no longer move it: two in the
//! body, a few more far in the tails.

/// erf on f32.
pub fn erf_f32(x: f32) -> f32 {
    libm::erff(x)
}

/// erfc on f32.
pub fn erfc_f32(x: f32) -> f32 {
    libm::erfcf(x)
}

/// erf on f64.
pub fn erf_f64(x: f64) -> f64 {
    libm::erf(x)
}

/// erfc on f64.
pub fn erfc_f64(x: f64) -> f64 {
    libm::erfc(x)
}

/// The inverse of erf on f32 (computed in f64 and rounded once).
pub fn erf_inv_f32(y: f32) -> f32 {
    erf_inv_f64(f64::from(y)) as f32
}

/// Giles' single-precision approximation of erf⁻¹(y), |y| < 1.
fn giles(y: f64) -> f64 {
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let p = if w < 5.0 {
        let w = w - 2.5;
        [
            2.810_226_36e-08,
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    } else {
        let w = w.sqrt() - 3.0;
        [
            -0.000_200_214_257,
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ]
        .iter()
        .fold(0.0, |p, c| c + p * w)
    };
    p * y
}

/// The inverse of erf on f64: ±inf at ±1, NaN outside [-1, 1] and for NaN.
pub fn erf_inv_f64(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if y == 0.0 {
        return y;
    }
    // Work on |y|: erf is odd.
    let a = y.abs();
    let mut x = giles(a);
    let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
    // Two steps from Giles' start reach f64's precision in the body; far in the tails
    // (beyond f32's range, where the polynomial extrapolates) a few more may be needed.
    for _ in 0..6 {
        // f(x) = erf(x) - a, written through erfc in the tail where 1 - a is exact.
        let f = if a < 0.5 {
            libm::erf(x) - a
        } else {
            (1.0 - a) - libm::erfc(x)
        };
        let slope = two_over_sqrt_pi * (-x * x).exp();
        if slope == 0.0 || !f.is_finite() {
            break;
        }
        let step = f / slope;
        // Halley: erf'' / erf' = -2x.
        let change = step / (1.0 + x * step);
        x -= change;
        if change.abs() <= f64::EPSILON * x.abs() {
            break;
        }
    }
    x.copysign(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_inv_inverts_erf_in_both_widths() {
        for i in -999..=999 {
            let y = f64::from(i) / 1000.0;
            let x = erf_inv_f64(y);
            assert!(
                (libm::erf(x) - y).abs() <= 2e-16,
                "{y}: erf({x}) = {}",
                libm::erf(x)
            );
            let x32 = erf_inv_f32(y as f32);
            assert!((libm::erff(x32) - y as f32).abs() <= 2e-7, "{y}");
        }
        // The tail, where erf(x) is within an ulp of 1: erfc is inverted instead.
        for k in [1e-3, 1e-8, 1e-12, 1e-15] {
            let y: f64 = 1.0 - k;
            // 1 - y is exact (Sterbenz); k itself is not representable as 1 - y.
            let k = 1.0 - y;
            let x = erf_inv_f64(y);
            assert!((libm::erfc(x) / k - 1.0).abs() < 1e-12, "1 - {k}: {x}");
        }
        assert_eq!(erf_inv_f64(1.0), f64::INFINITY);
        assert_eq!(erf_inv_f64(-1.0), f64::NEG_INFINITY);
        assert!(erf_inv_f64(1.5).is_nan() && erf_inv_f64(f64::NAN).is_nan());
        assert_eq!(erf_inv_f64(0.0), 0.0);
        // Nx's documented example: erf_inv(0.10000000149011612) (0.1 in f32) = 0.08885598927736282.
        assert!((erf_inv_f32(0.1) - 0.088_855_99).abs() < 1e-7);
    }

    #[test]
    fn erf_and_erfc_at_known_values() {
        assert!((erf_f64(0.5) - 0.520_499_877_813_046_5).abs() < 1e-16);
        assert!((erfc_f64(3.0) - 2.209_049_699_858_544e-5).abs() < 1e-20);
        assert!((erf_f32(0.5) - 0.520_499_9).abs() < 1e-7);
        assert_eq!(erf_f64(f64::INFINITY), 1.0);
        assert_eq!(erfc_f32(f32::NEG_INFINITY), 2.0);
    }
}
