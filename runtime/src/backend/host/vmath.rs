//! Vectorised f32 transcendentals: exp, log, tanh and sigmoid.
//!
//! libm evaluates these one element at a time through a call (tanh on 10M f32 took 129 ms,
//! 4x numpy). Each function here is branch-free on one lane (special cases are selects, not
//! jumps), so a loop over a slice vectorises; the loops are compiled for AVX-512 and for
//! AVX2+FMA and picked at run time, with the same code as the portable fallback. The AVX-512
//! build (16 lanes, mask registers for the selects; the same operations, so the same bits:
//! checked over all 2^32 inputs) ran 1.5-1.8x faster on one Zen 4 core for 10M f32: exp 6.7
//! -> 4.5 ms, log 12.2 -> 6.9, tanh 11.7 -> 6.8, sigmoid 8.5 -> 5.4; numpy's own AVX-512 log
//! took 8.3 there. `mul_add` is a fused
//! multiply-add in both (an instruction under FMA, libm's correctly rounded `fmaf`
//! otherwise), so both give the same bits.
//!
//! The methods are Cephes' (Moshier): a reduction to a short interval and a minimax
//! polynomial there. Maximum error in ulp against an f64 reference: host's over every f32
//! (all 2^32 bit patterns, measured once with `tests/transcendentals.rs` at stride 1), and
//! beside it glibc's, which `binary` calls, over the stride the test runs every time (every
//! 61st bit pattern plus each special value and 4,000 inputs around each threshold):
//!
//! | function | host, all f32 | glibc, test stride | host's worst input |
//! |---|---|---|---|
//! | exp | 1.023 | 0.502 | 26.716946 (results near 4e11) |
//! | log | 0.827 | 0.809 | 1.413642 (just below √2, where the reduction switches) |
//! | tanh | 1.330 | 2.158 | 0.62830955 (just past 0.625, where the methods meet) |
//! | sigmoid | 2.402 | 2.304 | -4.157294 (e^x's error, then one add and one divide) |
//!
//! NaN in gives NaN out; ±inf, ±0, subnormal inputs and subnormal results are within the
//! same bounds (exp rounds to 0 below -103.97 and to inf above 88.72 as the f32 result does).

use std::mem::MaybeUninit;

use super::parallel::{par_write, MIN_PER_TASK};
use crate::error::Result;
use crate::ir::UnaryOp;

/// 1.5 · 2^23: adding it to a float of magnitude below 2^22 rounds to an integer, which then
/// sits in the low mantissa bits.
const ROUNDER: f32 = 12_582_912.0;
const LOG2E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two so that `n · LN2_HI` is exact for every `n` the reduction produces.
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;

/// 2^n for n in [-126, 127], built from the exponent bits.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits((n.wrapping_add(127) as u32).wrapping_shl(23))
}

/// e^x.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Past 89 the result is inf, below -104 it rounds to 0; clamping keeps the exponent
    // arithmetic in range (and `clamp` passes NaN through).
    let xc = x.clamp(-104.0, 89.0);
    let t = xc.mul_add(LOG2E, ROUNDER);
    let n = t - ROUNDER;
    let ni = (t.to_bits() as i32).wrapping_sub(ROUNDER.to_bits() as i32);
    let r = (-n).mul_add(LN2_HI, xc);
    let r = (-n).mul_add(LN2_LO, r);
    let p = 1.987_569_1e-4_f32
        .mul_add(r, 1.398_199_9e-3)
        .mul_add(r, 8.333_452e-3)
        .mul_add(r, 4.166_579_6e-2)
        .mul_add(r, 0.166_666_65)
        .mul_add(r, 0.5);
    let er = (p * r).mul_add(r, r) + 1.0;
    // 2^n in two factors: n runs from -150 to 129, past what one exponent field holds, and
    // the first product stays normal so the result is rounded once (subnormals included).
    let half = ni >> 1;
    er * pow2(half) * pow2(ni.wrapping_sub(half))
}

/// ln x.
#[inline(always)]
pub(crate) fn log(x: f32) -> f32 {
    // Subnormals are scaled into the normal range first.
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 8_388_608.0 } else { x };
    let bits = xs.to_bits();
    let e = ((bits >> 23) & 0xff) as i32 - 126 - if sub { 23 } else { 0 };
    // m in [0.5, 1), then moved to [√½, √2) so that m - 1 is small either side of 0.
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let low = m < std::f32::consts::FRAC_1_SQRT_2;
    let e = (e - i32::from(low)) as f32;
    let f = if low { m + m - 1.0 } else { m - 1.0 };
    let z = f * f;
    let p = 7.037_683_6e-2_f32
        .mul_add(f, -1.151_461e-1)
        .mul_add(f, 1.167_699_9e-1)
        .mul_add(f, -1.242_014_1e-1)
        .mul_add(f, 1.424_932_3e-1)
        .mul_add(f, -1.666_805_8e-1)
        .mul_add(f, 2.000_071_4e-1)
        .mul_add(f, -2.499_999_4e-1)
        .mul_add(f, 0.333_333_3);
    let y = e.mul_add(LN2_LO, p * f * z);
    let y = z.mul_add(-0.5, y);
    let r = e.mul_add(LN2_HI, f + y);
    if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else {
        r
    }
}

/// tanh x.
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let ax = x.abs();
    // Near 0, an odd polynomial; elsewhere 1 - 2/(e^2|x| + 1), which needs no cancellation
    // guard once |x| ≥ 0.625 (tanh ≥ 0.55) and saturates to 1 as e^2|x| overflows.
    let z = x * x;
    let p = (-5.704_988_7e-3_f32)
        .mul_add(z, 2.063_909e-2)
        .mul_add(z, -5.373_971_6e-2)
        .mul_add(z, 0.133_314_42)
        .mul_add(z, -0.333_332_8);
    let small = (p * z).mul_add(x, x);
    let big = (1.0 - 2.0 / (exp(ax + ax) + 1.0)).copysign(x);
    if ax < 0.625 {
        // ±0 stays ±0 (the polynomial's sum would make -0 into +0).
        if ax == 0.0 {
            x
        } else {
            small
        }
    } else {
        big
    }
}

/// 1 / (1 + e^-x), as e^x / (1 + e^x) for negative x so that e^-x never overflows and tiny
/// results keep their digits (a plain 1/(1+e^-x) is 0 below x = -88.7).
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = exp(-x.abs());
    let numerator = if x < 0.0 { e } else { 1.0 };
    numerator / (1.0 + e)
}

/// Runs one lane function over a slice, writing each result once.
#[inline(always)]
fn lanes(f: impl Fn(f32) -> f32, inp: &[f32], out: &mut [MaybeUninit<f32>]) {
    for (o, &x) in out.iter_mut().zip(inp) {
        o.write(f(x));
    }
}

/// The loops for each op, compiled once per instruction set by this macro.
#[cfg(target_arch = "x86_64")]
macro_rules! vmath_loops {
    ($name:ident, $features:literal) => {
        mod $name {
            use super::*;

            #[target_feature(enable = $features)]
            pub unsafe fn exp_lanes(inp: &[f32], out: &mut [MaybeUninit<f32>]) {
                lanes(exp, inp, out)
            }
            #[target_feature(enable = $features)]
            pub unsafe fn log_lanes(inp: &[f32], out: &mut [MaybeUninit<f32>]) {
                lanes(log, inp, out)
            }
            #[target_feature(enable = $features)]
            pub unsafe fn tanh_lanes(inp: &[f32], out: &mut [MaybeUninit<f32>]) {
                lanes(tanh, inp, out)
            }
            #[target_feature(enable = $features)]
            pub unsafe fn sigmoid_lanes(inp: &[f32], out: &mut [MaybeUninit<f32>]) {
                lanes(sigmoid, inp, out)
            }

            /// This build's loop for `op`.
            ///
            /// # Safety
            /// The loops returned may only run on a CPU with this build's features.
            pub unsafe fn pick(op: UnaryOp) -> Option<Kernel> {
                // SAFETY (each closure): the caller checked the features.
                match op {
                    UnaryOp::Exp => Some(|i, o| unsafe { exp_lanes(i, o) }),
                    UnaryOp::Log => Some(|i, o| unsafe { log_lanes(i, o) }),
                    UnaryOp::Tanh => Some(|i, o| unsafe { tanh_lanes(i, o) }),
                    UnaryOp::Sigmoid => Some(|i, o| unsafe { sigmoid_lanes(i, o) }),
                    _ => None,
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
vmath_loops!(avx2, "avx2,fma");
#[cfg(target_arch = "x86_64")]
vmath_loops!(avx512, "avx2,fma,avx512f,avx512vl,avx512dq,avx512bw");

pub(super) type Kernel = fn(&[f32], &mut [MaybeUninit<f32>]);

/// The fastest loop this CPU runs for `op`, or `None` when `op` is not one of these.
pub(super) fn kernel(op: UnaryOp) -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f")
        && is_x86_feature_detected!("avx512vl")
        && is_x86_feature_detected!("avx512dq")
        && is_x86_feature_detected!("avx512bw")
        && is_x86_feature_detected!("fma")
    {
        // SAFETY: the CPU has the features the build was compiled for.
        return unsafe { avx512::pick(op) };
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the build was compiled for.
        return unsafe { avx2::pick(op) };
    }
    match op {
        UnaryOp::Exp => Some(|i, o| lanes(exp, i, o)),
        UnaryOp::Log => Some(|i, o| lanes(log, i, o)),
        UnaryOp::Tanh => Some(|i, o| lanes(tanh, i, o)),
        UnaryOp::Sigmoid => Some(|i, o| lanes(sigmoid, i, o)),
        _ => None,
    }
}

/// `op` over every element on all cores, or `None` when `op` has no vectorised form here.
pub(super) fn unary(op: UnaryOp, v: &[f32]) -> Option<Result<crate::host_vec::HostVec<f32>>> {
    let f = kernel(op)?;
    if super::stream::worth_streaming::<f32>(v.len()) {
        return Some(super::stream::par_fill(
            v.len(),
            &[v.len()],
            |start, block: &mut [f32]| {
                let inp = &v[start..start + block.len()];
                // SAFETY: `&mut [f32]` to `&mut [MaybeUninit<f32>]` of the same length; the
                // kernel only writes initialised values into it.
                let block = unsafe {
                    std::slice::from_raw_parts_mut(
                        block.as_mut_ptr().cast::<MaybeUninit<f32>>(),
                        block.len(),
                    )
                };
                f(inp, block)
            },
        ));
    }
    // SAFETY: `lanes` writes one result per input, and each task gets as many inputs as slots.
    Some(unsafe {
        par_write(v.len(), &[v.len()], MIN_PER_TASK, |start, slots| {
            f(&v[start..start + slots.len()], slots)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `STRIDE`-th f32 bit pattern; the AVX-512 build was checked once at stride 1 (all
    /// 2^32 patterns, every op) when it was added.
    const STRIDE: u32 = 61;

    /// The AVX-512 build of each loop gives the AVX2 build's bits, so the error table in the
    /// module's docs (measured over every f32 on the AVX2 build) holds for both.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx512_loops_give_the_avx2_bits() {
        if !(is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("fma"))
        {
            println!("skipped: this CPU lacks AVX-512F/VL/DQ/BW");
            return;
        }
        type Loop = unsafe fn(&[f32], &mut [MaybeUninit<f32>]);
        let ops: [(&str, Loop, Loop); 4] = [
            ("exp", avx2::exp_lanes, avx512::exp_lanes),
            ("log", avx2::log_lanes, avx512::log_lanes),
            ("tanh", avx2::tanh_lanes, avx512::tanh_lanes),
            ("sigmoid", avx2::sigmoid_lanes, avx512::sigmoid_lanes),
        ];
        const BATCH: u64 = 1 << 20;
        let total = (1u64 << 32) / STRIDE as u64;
        let mut inp = Vec::with_capacity(BATCH as usize);
        let mut a = vec![MaybeUninit::new(0f32); BATCH as usize];
        let mut b = vec![MaybeUninit::new(0f32); BATCH as usize];
        for start in (0..total).step_by(BATCH as usize) {
            inp.clear();
            inp.extend(
                (start..(start + BATCH).min(total)).map(|i| f32::from_bits(i as u32 * STRIDE)),
            );
            for (name, old, new) in ops {
                // SAFETY: the CPU has AVX2, FMA and the AVX-512 subsets (checked above).
                unsafe {
                    old(&inp, &mut a[..inp.len()]);
                    new(&inp, &mut b[..inp.len()]);
                }
                for (i, x) in inp.iter().enumerate() {
                    // SAFETY: both loops wrote every slot of the first `inp.len()`.
                    let (p, q) = unsafe { (a[i].assume_init(), b[i].assume_init()) };
                    assert!(
                        p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()),
                        "{name}({x:e}): avx2 {p:e}, avx512 {q:e}"
                    );
                }
            }
        }
    }
}
