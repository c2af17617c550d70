//! Accuracy of the f32 transcendentals on every device, in ulp against an f64 reference, over
//! the whole f32 range: a stride through all 2^32 bit patterns (both signs, subnormals,
//! every exponent) plus each special value and the neighbourhood of every threshold (overflow,
//! the start of subnormal results, underflow to 0, where tanh saturates and where its two
//! methods meet). The bounds sit just above the maxima measured on `host` and on glibc (which
//! `binary` calls), documented in `backend/host/vmath.rs`: a change that loses accuracy fails.

use tensorbook::{devices, on, Device, Tensor};

/// Every `STRIDE`-th bit pattern (a prime, so that the low mantissa bits vary too).
const STRIDE: u64 = 61;

/// Inputs per tensor.
const BATCH: usize = 1 << 22;

/// The distance from `got` to the exact `want` in units of f32's last place at `want`
/// (subnormal spacing below the normal range), 0 when both are the same special value.
fn ulps(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let rounded = want as f32;
    if got == rounded {
        return 0.0;
    }
    if got.is_infinite() || rounded.is_infinite() {
        return f64::INFINITY;
    }
    let exponent = (want.abs().log2().floor() as i32).clamp(-126, 127);
    let ulp = 2f64.powi(exponent - 23);
    (got as f64 - want).abs() / ulp
}

/// The special cases: fixed values, then 2000 neighbours either side of each of `edges` and
/// of their negatives.
fn specials(edges: &[f32]) -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
    ];
    for &edge in edges {
        for sign in [1.0f32, -1.0] {
            let center = (edge * sign).to_bits() as i64;
            v.extend((center - 2000..center + 2000).map(|b| f32::from_bits(b as u32)));
        }
    }
    v
}

/// The inputs in tensor-sized batches: the special cases, then every `STRIDE`-th bit pattern.
fn batches(edges: &[f32]) -> impl Iterator<Item = Vec<f32>> {
    let strided = (1u64 << 32) / STRIDE;
    let per_batch = BATCH as u64;
    std::iter::once(specials(edges)).chain((0..strided.div_ceil(per_batch)).map(move |b| {
        (b * per_batch..((b + 1) * per_batch).min(strided))
            .map(|i| f32::from_bits((i * STRIDE) as u32))
            .collect()
    }))
}

/// The largest error of `op` on `device` over `xs`, and the input where it occurs.
fn worst(
    device: Device,
    edges: &[f32],
    op: fn(&Tensor) -> tensorbook::Result<Tensor>,
    reference: fn(f64) -> f64,
) -> (f64, f32, f32) {
    let mut worst = (0.0, 0.0, 0.0);
    for chunk in batches(edges) {
        let t = on(device)
            .from_vec(chunk.to_vec(), &[chunk.len()])
            .expect("inputs");
        let out: Vec<f32> = op(&t).expect("op").to_vec().expect("results");
        for (&x, &y) in chunk.iter().zip(&out) {
            let e = ulps(y, reference(x as f64));
            if e > worst.0 || (e.is_nan() && !worst.0.is_nan()) {
                worst = (e, x, y);
            }
        }
    }
    worst
}

fn check(
    name: &str,
    bound: f64,
    edges: &[f32],
    op: fn(&Tensor) -> tensorbook::Result<Tensor>,
    reference: fn(f64) -> f64,
) {
    let mut failures = Vec::new();
    for device in devices() {
        let (err, x, y) = worst(device, edges, op, reference);
        println!("{name} on {device}: max {err:.3} ulp at x = {x:e} (gave {y:e})");
        if err > bound {
            failures.push(format!(
                "{name} on {device}: {err} ulp at x = {x:e} ({:#010x}): gave {y:e}, exact {:e}",
                x.to_bits(),
                reference(x as f64)
            ));
        }
    }
    assert!(failures.is_empty(), "over {bound} ulp: {failures:#?}");
}

fn sigmoid(x: f64) -> f64 {
    if x < 0.0 {
        let e = x.exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + (-x).exp())
    }
}

#[test]
fn exp_within_bound_over_all_f32() {
    let edges = [88.722_83, 87.336_54, 103.972_08, 103.278_93, 0.0];
    check("exp", 1.05, &edges, |t| t.exp(), f64::exp);
}

#[test]
fn log_within_bound_over_all_f32() {
    let edges = [1.0, f32::MIN_POSITIVE, std::f32::consts::FRAC_1_SQRT_2, 2.0];
    check("log", 1.0, &edges, |t| t.log(), f64::ln);
}

#[test]
fn tanh_within_bound_over_all_f32() {
    let edges = [0.625, 9.010_913, 44.361_42, 1e-4];
    check("tanh", 2.2, &edges, |t| t.tanh(), f64::tanh);
}

#[test]
fn sigmoid_within_bound_over_all_f32() {
    let edges = [88.722_83, 103.972_08, 87.336_54, 16.635_532, 0.0];
    check("sigmoid", 2.45, &edges, |t| t.sigmoid(), sigmoid);
}
