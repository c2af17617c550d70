//! Nx's semantics where tensorbook used to differ, each test naming the Nx rule it checks, on
//! every device (binary, host, the simulated accelerator, cuda when present).

mod common;

use common::enable_sim;
use tensorbook::{on, Axis, DType, Device, Direction, Error, PadMode, Serving, Tensor};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

/// `Nx.Type.merge_number/2`: a number keeps the tensor's type when it fits and widens it when
/// it does not (u8 + 256 is u16, u8 + -1 is s16, as Nx's documented examples). Integer
/// literals are exact: no trip through f64.
#[test]
fn number_literals_merge_like_nx_type_merge_number() {
    for d in devices() {
        let u = on(d).from_vec(vec![0u8, 100, 255], &[3]).unwrap();
        let minus = u.add(-1).unwrap();
        assert_eq!(minus.dtype(), DType::S16, "u8 + -1 on {d}");
        assert_eq!(minus.to_vec::<i16>().unwrap(), vec![-1, 99, 254]);
        let plus = u.add(300).unwrap();
        assert_eq!(
            plus.to_vec::<u16>().unwrap(),
            vec![300, 400, 555],
            "u8 + 300 on {d}"
        );
        // Nx.Type.merge_number's documented examples.
        for (dtype, number, expected) in [
            (DType::U8, 255i64, DType::U8),
            (DType::U8, 256, DType::U16),
            (DType::U8, -32768, DType::S16),
            (DType::U8, -32769, DType::S32),
            (DType::S8, 127, DType::S8),
            (DType::S8, -128, DType::S8),
            (DType::S8, 128, DType::S16),
            (DType::S8, -129, DType::S16),
            (DType::U64, -1337, DType::S64),
        ] {
            let t = on(d).zeros(dtype, &[2]).unwrap();
            assert_eq!(
                t.add(number).unwrap().dtype(),
                expected,
                "{dtype} + {number}"
            );
        }
        let big = on(d).from_vec(vec![u64::MAX, 1], &[2]).unwrap();
        assert_eq!(
            big.add(u64::MAX).unwrap().to_vec::<u64>().unwrap(),
            vec![u64::MAX - 1, 0],
            "u64 wraps on {d}"
        );
        // A number that fits keeps the type, and arithmetic wraps as in Nx.
        let small = u.add(1).unwrap();
        assert_eq!(
            (small.dtype(), small.to_vec::<u8>().unwrap()),
            (DType::U8, vec![1, 101, 0])
        );
        let s = on(d).from_vec(vec![1i32, -2], &[2]).unwrap();
        let wide = s.add(3_000_000_000i64).unwrap();
        assert_eq!(wide.dtype(), DType::S64, "s32 + 3e9 on {d}");
        assert_eq!(
            wide.to_vec::<i64>().unwrap(),
            vec![3_000_000_001, 2_999_999_998]
        );
        let l = on(d).from_vec(vec![0i64, 1], &[2]).unwrap();
        let exact = l.add(9_007_199_254_740_993i64).unwrap();
        assert_eq!(
            exact.to_vec::<i64>().unwrap(),
            vec![9_007_199_254_740_993, 9_007_199_254_740_994],
            "2^53 + 1 must not round through f64 on {d}"
        );
        // Comparisons with out-of-range literals compare the values, not clamped ones.
        assert_eq!(u.less(300).unwrap().to_vec::<u8>().unwrap(), vec![1, 1, 1]);
        assert_eq!(
            u.greater(-1).unwrap().to_vec::<u8>().unwrap(),
            vec![1, 1, 1]
        );
        assert_eq!(u.equal(256).unwrap().to_vec::<u8>().unwrap(), vec![0, 0, 0]);
        // A float makes an integer tensor f32; a float tensor keeps its type.
        assert_eq!(s.add(0.5).unwrap().dtype(), DType::F32);
        let f = on(d).from_vec(vec![1.0f64], &[1]).unwrap();
        assert_eq!(f.add(1).unwrap().dtype(), DType::F64);
        // No dtype holds u64::MAX: an error that says so, not a wrapped value.
        let err = l.add(u64::MAX).unwrap_err();
        assert!(err.to_string().contains("18446744073709551615"), "{err}");
    }
}

/// `Nx.mean/2` divides the sum by the number of elements: over zero elements that is 0/0, NaN.
#[test]
fn the_mean_of_nothing_is_nan() {
    for d in devices() {
        let empty = on(d).zeros(DType::F32, &[0]).unwrap();
        assert!(
            empty.mean(..).unwrap().to_scalar::<f32>().unwrap().is_nan(),
            "{d}"
        );
        let rows = on(d).zeros(DType::S32, &[2, 0]).unwrap();
        let per_row = rows.mean([1]).unwrap();
        assert_eq!(per_row.shape(), &[2]);
        assert!(
            per_row.to_vec::<f32>().unwrap().iter().all(|v| v.is_nan()),
            "{d}"
        );
        assert_eq!(rows.mean([0]).unwrap().shape(), &[0]);
        // Not empty: the mean of a row of an [2,3] tensor divides by 3, not by 6/2.
        let t = on(d).iota(DType::F32, &[2, 3], None).unwrap();
        assert_eq!(
            t.mean_keep([1]).unwrap().to_vec::<f32>().unwrap(),
            vec![1.0, 4.0]
        );
    }
}

/// `Nx.put_slice/3`: the result has the merged type of the tensor and the update.
#[test]
fn put_slice_returns_the_merged_type() {
    for d in devices() {
        let t = on(d).zeros(DType::S32, &[2, 2]).unwrap();
        let update = on(d).from_vec(vec![1.5f32, 2.5], &[1, 2]).unwrap();
        let out = t.put_slice(&[1, 0], &update).unwrap();
        assert_eq!(out.dtype(), DType::F32, "{d}");
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.5, 2.5]);
        // Nx moves a start that would run past the end back so that the update fits.
        let clipped = t.put_slice(&[9, 9], &update).unwrap();
        assert_eq!(clipped.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.5, 2.5]);
    }
}

/// `Nx.pow/2` on integers (XLA's semantics): wrapping exponentiation over the whole exponent,
/// and for negative exponents 1 for base 1, ±1 for base -1 by parity, 0 otherwise.
#[test]
fn integer_pow_uses_the_whole_exponent() {
    let big = (1i64 << 32) + 1;
    let expected = (0..32)
        .fold(3i64, |b: i64, _| b.wrapping_mul(b))
        .wrapping_mul(3);
    for d in devices() {
        let base = on(d).from_vec(vec![3i64, -1, -1, 2, 1, 0], &[6]).unwrap();
        let exp = on(d)
            .from_vec(vec![big, i64::MIN + 1, -4, -1, -7, 5], &[6])
            .unwrap();
        assert_eq!(
            base.pow(&exp).unwrap().to_vec::<i64>().unwrap(),
            vec![expected, -1, 1, 0, 1, 0],
            "{d}"
        );
        let s = on(d).from_vec(vec![-1i32, 2], &[2]).unwrap();
        assert_eq!(
            s.pow(-3).unwrap().to_vec::<i32>().unwrap(),
            vec![-1, 0],
            "{d}"
        );
    }
}

/// `Nx.slice/4`: lengths are spans of the input, the result has `ceil(length / stride)`
/// elements per axis, and a start past what fits is clipped back, never an error.
#[test]
fn slice_clips_its_start_and_strides_over_the_span() {
    for d in devices() {
        let t = on(d).from_vec(vec![1i64, 2, 3, 4, 5, 6], &[6]).unwrap();
        assert_eq!(
            t.slice(&[5], &[2], None).unwrap().to_vec::<i64>().unwrap(),
            vec![5, 6],
            "{d}"
        );
        assert_eq!(
            t.slice(&[99], &[3], None).unwrap().to_vec::<i64>().unwrap(),
            vec![4, 5, 6]
        );
        assert_eq!(
            t.slice(&[0], &[6], Some(&[4]))
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            vec![1, 5]
        );
        assert_eq!(
            t.slice(&[1], &[5], Some(&[2]))
                .unwrap()
                .to_vec::<i64>()
                .unwrap(),
            vec![2, 4, 6]
        );
        assert!(
            t.slice(&[0], &[7], None).is_err(),
            "a length past the axis is an error"
        );
        assert!(
            t.slice(&[0], &[2], Some(&[0])).is_err(),
            "a stride of 0 is an error"
        );
    }
}

/// `Nx.Random.uniform`: values in `[min, max)` with finite bounds that the type can hold.
#[test]
fn random_uniform_bounds_must_be_finite_and_fit_the_type() {
    let f = on(Device::host(0));
    for (dtype, low, high) in [
        (DType::F32, 0.0, f64::INFINITY),
        (DType::F64, f64::NEG_INFINITY, 0.0),
        (DType::F32, 0.0, 1e39),
        (DType::U8, 0.0, 300.0),
        (DType::U8, -1.0, 10.0),
        (DType::S32, -1e10, 0.0),
        (DType::F64, -1.7e308, 1.7e308),
        (DType::F32, 1.0, 1.0),
    ] {
        let err = f.random_uniform(1, dtype, &[4], low, high).unwrap_err();
        assert!(
            matches!(err, Error::InvalidArgument { .. }),
            "{dtype} [{low}, {high}): {err}"
        );
    }
    let bytes = f
        .random_uniform(1, DType::U8, &[10_000], 0.0, 256.0)
        .unwrap();
    let v = bytes.to_vec::<u8>().unwrap();
    assert!(v.contains(&255) && v.contains(&0));
    // Rounding to f32 must not produce the excluded upper bound.
    let narrow = f
        .random_uniform(2, DType::F32, &[100_000], 1.0, 1.0 + 1e-7)
        .unwrap();
    assert!(narrow
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|&x| (1.0..1.0 + 1e-7).contains(&(x as f64))));
}

/// An `Nx.Serving` over an empty batch returns an empty result rather than failing.
#[test]
fn a_serving_over_zero_rows_returns_an_empty_result() {
    let serving = Serving::new(|b: &Tensor| b.sum_keep([1])).on(Device::host(0));
    let out = serving
        .run(&on(Device::BINARY).zeros(DType::F32, &[0, 5]).unwrap())
        .unwrap();
    assert_eq!(out.shape(), &[0, 1]);
    assert_eq!(out.device(), Device::host(0));
}

/// |got - exact| / |exact|, printed (the figures the issue notes quote).
fn relative_error(what: &str, got: f64, exact: f64) -> f64 {
    let error = ((got - exact) / exact).abs();
    println!("{what}: relative error {error:.1e}");
    error
}

/// A reference should not be the least accurate backend: binary's f32 sums and dots are
/// pairwise, within a few ulps of an f64 sum where a sequential f32 sum drifts by ~1e-5.
#[test]
fn binary_sums_and_dots_accumulate_pairwise() {
    let n = 10_000_000;
    let x = on(Device::BINARY)
        .random_uniform(9, DType::F32, &[n], 0.0, 1.0)
        .unwrap();
    let exact: f64 = x.to_vec::<f32>().unwrap().iter().map(|&v| v as f64).sum();
    for d in [Device::BINARY, Device::host(0)] {
        let t = x.backend_copy(d).unwrap();
        let sum = t.sum(..).unwrap().to_scalar::<f32>().unwrap() as f64;
        let error = relative_error(&format!("f32 sum of {n} on {d}"), sum, exact);
        assert!(error < 1e-6, "sum on {d}: {sum} vs {exact}");
    }
    let ones = on(Device::BINARY).ones(DType::F32, &[n]).unwrap();
    let dot = x.dot(&ones).unwrap().to_scalar::<f32>().unwrap() as f64;
    let error = relative_error(&format!("f32 dot of {n} on binary"), dot, exact);
    assert!(error < 1e-6, "binary dot: {dot} vs {exact}");
}

/// Nx's documented examples for the float math functions (`Nx.expm1(1)` ... `Nx.erf_inv(0.1)`):
/// integers become f32, and the values are Nx's, on every device.
#[test]
fn float_math_follows_nx_documented_examples() {
    use std::f32::consts::{FRAC_PI_4, LN_2};
    type Op = fn(&Tensor) -> tensorbook::Result<Tensor>;
    // (function, integer argument or None, float argument, Nx's f32 result)
    let examples: [(&str, Op, Option<i32>, f32, f32); 17] = [
        ("expm1", Tensor::expm1, Some(1), 1.0, 1.718_281_7),
        ("log1p", Tensor::log1p, Some(1), 1.0, LN_2),
        ("log2", Tensor::log2, Some(2), 2.0, 1.0),
        ("log10", Tensor::log10, Some(10), 10.0, 1.0),
        ("tan", Tensor::tan, Some(1), 1.0, 1.557_407_7),
        ("sinh", Tensor::sinh, Some(1), 1.0, 1.175_201_2),
        ("cosh", Tensor::cosh, Some(1), 1.0, 1.543_080_6),
        ("asin", Tensor::asin, None, 0.1, 0.100_167_4),
        ("acos", Tensor::acos, None, 0.1, 1.470_628_9),
        ("atan", Tensor::atan, Some(1), 1.0, FRAC_PI_4),
        ("asinh", Tensor::asinh, Some(1), 1.0, 0.881_373_6),
        ("acosh", Tensor::acosh, Some(1), 1.0, 0.0),
        ("atanh", Tensor::atanh, None, 0.1, 0.100_335_35),
        ("cbrt", Tensor::cbrt, Some(1), 1.0, 1.0),
        ("erf", Tensor::erf, Some(1), 1.0, 0.842_700_8),
        ("erfc", Tensor::erfc, Some(1), 1.0, 0.157_299_2),
        ("erf_inv", Tensor::erf_inv, None, 0.1, 0.088_855_99),
    ];
    for d in devices() {
        for (name, op, int, float, expected) in examples {
            let mut inputs = vec![on(d).scalar(float).unwrap()];
            if let Some(i) = int {
                inputs.push(on(d).scalar(i).unwrap());
            }
            for x in inputs {
                let y = op(&x).unwrap();
                assert_eq!(y.dtype(), DType::F32, "{name} of {} on {d}", x.dtype());
                assert_eq!(y.device(), d);
                let got = y.to_scalar::<f32>().unwrap();
                assert!(
                    (got - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                    "{name}({float}) on {d}: {got}, Nx gives {expected}"
                );
            }
        }
        // Edges: the domains' ends as Nx (XLA) gives them.
        let ends = on(d).from_vec(vec![-1.0f64, 1.0, 2.0], &[3]).unwrap();
        let inv = ends.erf_inv().unwrap().to_vec::<f64>().unwrap();
        assert_eq!(inv[..2], [f64::NEG_INFINITY, f64::INFINITY], "{d}");
        assert!(inv[2].is_nan(), "{d}");
        let at = ends.atanh().unwrap().to_vec::<f64>().unwrap();
        assert_eq!(at[..2], [f64::NEG_INFINITY, f64::INFINITY], "{d}");
        // Exact near 0, where exp(x) - 1 and log(1 + x) lose every digit.
        let tiny = on(d).from_vec(vec![1e-10f64], &[1]).unwrap();
        let e = tiny.expm1().unwrap().to_vec::<f64>().unwrap()[0];
        assert!((e / 1.00000000005e-10 - 1.0).abs() < 1e-15, "{e} on {d}");
        let l = tiny.log1p().unwrap().to_vec::<f64>().unwrap()[0];
        assert!((l / 9.9999999995e-11 - 1.0).abs() < 1e-15, "{l} on {d}");
    }
}

/// Nx's documented examples for the reductions composed of others: `all`, `any`, `logsumexp`,
/// `variance` (with `ddof`), `standard_deviation`, `weighted_mean`, on every device.
#[test]
fn composed_reductions_follow_nx_documented_examples() {
    let f32s = |t: Tensor| t.to_vec::<f32>().unwrap();
    let near = |got: Vec<f32>, want: &[f32], what: &str| {
        assert_eq!(got.len(), want.len(), "{what}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                "{what}: {got:?}, Nx gives {want:?}"
            );
        }
    };
    for d in devices() {
        let place = on(d);
        let v = place.from_vec(vec![0i32, 1, 2], &[3]).unwrap();
        let all = v.all(..).unwrap();
        assert_eq!(
            (all.dtype(), all.to_vec::<u8>().unwrap()),
            (DType::U8, vec![0])
        );
        assert_eq!(v.any(..).unwrap().to_vec::<u8>().unwrap(), vec![1]);
        let m = place.from_vec(vec![-1i32, 0, 1, 2, 3, 4], &[2, 3]).unwrap();
        assert_eq!(m.all([1]).unwrap().to_vec::<u8>().unwrap(), vec![0, 1]);
        let kept = m.all_keep([1]).unwrap();
        assert_eq!(kept.shape(), &[2, 1]);
        let zeros = place.from_vec(vec![-1i32, 0, 1, 0, 0, 0], &[2, 3]).unwrap();
        assert_eq!(zeros.any([1]).unwrap().to_vec::<u8>().unwrap(), vec![1, 0]);
        // Over no elements: all is 1, any is 0 (and NaN counts as non-zero).
        let empty = place.from_vec(Vec::<f32>::new(), &[0]).unwrap();
        assert_eq!(empty.all(..).unwrap().to_vec::<u8>().unwrap(), vec![1]);
        assert_eq!(empty.any(..).unwrap().to_vec::<u8>().unwrap(), vec![0]);
        let nan = place.from_vec(vec![f32::NAN], &[1]).unwrap();
        assert_eq!(nan.all(..).unwrap().to_vec::<u8>().unwrap(), vec![1]);

        let six = place.from_vec(vec![1i32, 2, 3, 4, 5, 6], &[6]).unwrap();
        let lse = six.logsumexp(..).unwrap();
        assert_eq!((lse.dtype(), lse.shape().to_vec()), (DType::F32, vec![]));
        near(f32s(lse), &[6.456_193_4], "logsumexp");
        let grid = six.reshape(&[3, 2]).unwrap();
        near(
            f32s(grid.logsumexp([0]).unwrap()),
            &[5.142_932, 6.142_932],
            "logsumexp axes [0]",
        );
        let rows = grid.logsumexp_keep([1]).unwrap();
        assert_eq!(rows.shape(), &[3, 1]);
        near(
            f32s(rows),
            &[2.313_261_7, 4.313_261_5, 6.313_261_5],
            "logsumexp axes [1]",
        );
        // No overflow where exp alone would: and a slice of -inf is -inf, not NaN.
        let wide = place
            .from_vec(
                vec![1000.0f32, 1000.0, f32::NEG_INFINITY, f32::NEG_INFINITY],
                &[2, 2],
            )
            .unwrap();
        let got = f32s(wide.logsumexp([1]).unwrap());
        assert!(
            (got[0] - (1000.0 + std::f32::consts::LN_2)).abs() < 1e-3,
            "{got:?}"
        );
        assert_eq!(got[1], f32::NEG_INFINITY, "{got:?}");

        let t = place.from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
        near(f32s(t.variance(.., 0).unwrap()), &[1.25], "variance");
        near(
            f32s(t.variance(.., 1).unwrap()),
            &[1.666_666_6],
            "variance ddof 1",
        );
        near(
            f32s(t.variance([0], 0).unwrap()),
            &[1.0, 1.0],
            "variance axes [0]",
        );
        let kept = t.variance_keep([1], 0).unwrap();
        assert_eq!(kept.shape(), &[2, 1]);
        near(f32s(kept), &[0.25, 0.25], "variance axes [1] keep");
        near(
            f32s(t.standard_deviation(.., 0).unwrap()),
            &[1.118_034],
            "std",
        );
        near(
            f32s(t.standard_deviation(.., 1).unwrap()),
            &[1.290_994_4],
            "std ddof 1",
        );

        let one = place.scalar(1i32).unwrap();
        near(
            f32s(one.weighted_mean(&one, ..).unwrap()),
            &[1.0],
            "weighted_mean",
        );
        let x = place.from_vec(vec![1i32, 2, 3], &[3]).unwrap();
        let w = place.from_vec(vec![3i32, 2, 1], &[3]).unwrap();
        near(
            f32s(x.weighted_mean(&w, ..).unwrap()),
            &[1.666_666_6],
            "weighted_mean",
        );
    }
}

/// Nx's documented examples for the logical ops, `is_nan`, `is_infinity`, `clip` and
/// `all_close`, on every device.
#[test]
fn logical_ops_and_clip_follow_nx_documented_examples() {
    let u8s = |t: Tensor| {
        assert_eq!(t.dtype(), DType::U8);
        t.to_vec::<u8>().unwrap()
    };
    for d in devices() {
        let place = on(d);
        let v = place.from_vec(vec![-1i32, 0, 1], &[3]).unwrap();
        assert_eq!(u8s(v.logical_and(1).unwrap()), vec![1, 0, 1]);
        assert_eq!(u8s(v.logical_or(0).unwrap()), vec![1, 0, 1]);
        assert_eq!(u8s(v.logical_xor(0).unwrap()), vec![1, 0, 1]);
        assert_eq!(u8s(v.logical_not().unwrap()), vec![0, 1, 0]);
        let row = place.from_vec(vec![-1i32, 0, 1], &[1, 3]).unwrap();
        let col = place.from_vec(vec![-1i32, 0, 1], &[3, 1]).unwrap();
        let and = row.logical_and(&col).unwrap();
        assert_eq!(and.shape(), &[3, 3]);
        assert_eq!(u8s(and), vec![1, 0, 1, 0, 0, 0, 1, 0, 1]);
        assert_eq!(
            u8s(row.logical_xor(&col).unwrap()),
            vec![0, 1, 0, 1, 0, 1, 0, 1, 0]
        );
        let floats = place.from_vec(vec![-1.0f32, 0.0, 1.0], &[1, 3]).unwrap();
        assert_eq!(
            u8s(floats.logical_and(&col).unwrap()),
            vec![1, 0, 1, 0, 0, 0, 1, 0, 1]
        );
        assert_eq!(u8s(floats.logical_not().unwrap()), vec![0, 1, 0]);
        // NaN is true: a mask, not a multiplication, decides.
        let nan = place.from_vec(vec![f32::NAN, 0.0], &[2]).unwrap();
        assert_eq!(u8s(nan.logical_and(1.0).unwrap()), vec![1, 0]);

        let classes = place.from_vec(vec![f32::NAN, 1.0, 0.0], &[3]).unwrap();
        assert_eq!(u8s(classes.is_nan().unwrap()), vec![1, 0, 0]);
        let inf = place
            .from_vec(
                vec![f32::INFINITY, f32::NAN, f32::NEG_INFINITY, 1.0, 0.0],
                &[5],
            )
            .unwrap();
        assert_eq!(u8s(inf.is_infinity().unwrap()), vec![1, 0, 1, 0, 0]);
        let ints = place.from_vec(vec![1i32, 2], &[2]).unwrap();
        assert_eq!(u8s(ints.is_infinity().unwrap()), vec![0, 0]);
        assert_eq!(u8s(ints.is_nan().unwrap()), vec![0, 0]);

        let t = place.from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let clipped = t.clip(2, 4).unwrap();
        assert_eq!(clipped.dtype(), DType::S32);
        assert_eq!(clipped.to_vec::<i32>().unwrap(), vec![2, 2, 3, 4, 4, 4]);
        let mixed = t.clip(2.0, 3).unwrap();
        assert_eq!(mixed.dtype(), DType::F32);
        assert_eq!(
            mixed.to_vec::<f32>().unwrap(),
            vec![2.0, 2.0, 3.0, 3.0, 3.0, 3.0]
        );
        let with_nan = place.from_vec(vec![f32::NAN, -5.0, 5.0], &[3]).unwrap();
        let c = with_nan.clip(-1.0, 1.0).unwrap().to_vec::<f32>().unwrap();
        assert!(c[0].is_nan() && c[1..] == [-1.0, 1.0], "{c:?}");

        let a = place.from_vec(vec![1.0e10f64, 1.0e-7], &[2]).unwrap();
        let b = place.from_vec(vec![1.00001e10f64, 1.0e-8], &[2]).unwrap();
        assert_eq!(u8s(a.all_close(&b).unwrap()), vec![0]);
        let a = place.from_vec(vec![1.0e-8f64, 1.0e-8], &[2]).unwrap();
        let b = place.from_vec(vec![1.0e-8f64, 1.0e-9], &[2]).unwrap();
        let close = a.all_close(&b).unwrap();
        assert_eq!(close.shape(), &[] as &[usize]);
        assert_eq!(u8s(close), vec![1]);
        let n = place.from_vec(vec![1.0f32, f32::NAN], &[2]).unwrap();
        assert_eq!(u8s(n.all_close(&n).unwrap()), vec![0]);
        assert_eq!(
            u8s(n.all_close_with(&n, 1e-5, 1e-8, true).unwrap()),
            vec![1]
        );
        let i = place.from_vec(vec![f32::INFINITY, 1.0], &[2]).unwrap();
        assert_eq!(u8s(i.all_close(&i).unwrap()), vec![1]);
    }
}

/// `Nx.remainder`, `Nx.quotient`, `Nx.atan2`, the bitwise ops and shifts, and `Nx.log/2`, with
/// the values of Nx's documented examples (Nx's s8/u8 operands become s32 here: tensorbook has
/// no 8-bit signed or 16-bit types).
#[test]
fn integer_and_two_operand_math_follow_nx_documented_examples() {
    let s32s = |t: Tensor| {
        assert_eq!(t.dtype(), DType::S32);
        t.to_vec::<i32>().unwrap()
    };
    for d in devices() {
        let place = on(d);
        let ints = |v: Vec<i32>, s: &[usize]| place.from_vec(v, s).unwrap();
        let floats = |v: Vec<f32>, s: &[usize]| place.from_vec(v, s).unwrap();
        let two = place.scalar(2i32).unwrap();

        assert_eq!(
            s32s(ints(vec![1, 2, 3], &[3]).remainder(2).unwrap()),
            [1, 0, 1]
        );
        let r = two.remainder(&floats(vec![1.0, 2.0, 3.0], &[3])).unwrap();
        assert_eq!(
            (r.dtype(), r.to_vec::<f32>().unwrap()),
            (DType::F32, vec![0.0, 0.0, 2.0])
        );
        let left = ints(vec![10, 20], &[2, 1]);
        let right = ints(vec![3, 4], &[1, 2]);
        assert_eq!(s32s(left.remainder(&right).unwrap()), [1, 2, 2, 0]);
        // The sign of the dividend: -11 rem 10 is -1, 9 rem 10 is 9.
        assert_eq!(
            s32s(ints(vec![-11, 9], &[2]).remainder(10).unwrap()),
            [-1, 9]
        );

        assert_eq!(
            s32s(ints(vec![2, 4, 5], &[3]).quotient(2).unwrap()),
            [1, 2, 2]
        );
        let ten = place.scalar(10i32).unwrap();
        assert_eq!(
            s32s(ten.quotient(&ints(vec![1, 2, 3], &[3])).unwrap()),
            [10, 5, 3]
        );
        let q = ints(vec![10, 20], &[1, 2]).quotient(&ints(vec![1, 2], &[2, 1]));
        assert_eq!(s32s(q.unwrap()), [10, 20, 5, 10]);
        let err = floats(vec![1.0], &[1]).quotient(2).unwrap_err().to_string();
        assert!(
            err.contains("quotient expects integer tensors") && err.contains("f32"),
            "{err}"
        );

        let a = place.scalar(1i32).unwrap().atan2(2).unwrap();
        assert_eq!(a.dtype(), DType::F32);
        assert!((a.to_scalar::<f32>().unwrap() - 0.463_647_6).abs() < 1e-6);
        let a = ints(vec![1, 2, 3], &[3])
            .atan2(1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        for (x, e) in a
            .iter()
            .zip([std::f32::consts::FRAC_PI_4, 1.107_148_8, 1.249_045_7])
        {
            assert!((x - e).abs() < 1e-6, "{a:?}");
        }
        let zeros_col = place.from_vec(vec![-0.0f64, 0.0], &[2, 1]).unwrap();
        let zeros_row = place.from_vec(vec![-0.0f64, 0.0], &[2]).unwrap();
        let z = zeros_col
            .atan2(&zeros_row)
            .unwrap()
            .to_vec::<f64>()
            .unwrap();
        let pi = std::f64::consts::PI;
        assert_eq!(z, [-pi, -0.0, pi, 0.0]);
        assert!(z[1].is_sign_negative() && z[3].is_sign_positive());

        let bits = ints(vec![0, 0, 1, 1], &[4]);
        let other = ints(vec![0, 1, 0, 1], &[4]);
        assert_eq!(s32s(bits.bitwise_and(&other).unwrap()), [0, 0, 0, 1]);
        assert_eq!(s32s(bits.bitwise_or(&other).unwrap()), [0, 1, 1, 1]);
        assert_eq!(s32s(bits.bitwise_xor(&other).unwrap()), [0, 1, 1, 0]);
        assert_eq!(
            s32s(ints(vec![0, 1, 2], &[3]).bitwise_and(1).unwrap()),
            [0, 1, 0]
        );
        assert_eq!(
            s32s(ints(vec![0, -1, -2], &[3]).bitwise_and(-1).unwrap()),
            [0, -1, -2]
        );
        assert_eq!(
            s32s(ints(vec![0, -1, -2], &[3]).bitwise_or(-1).unwrap()),
            [-1, -1, -1]
        );
        assert_eq!(
            s32s(ints(vec![1, 2, 3], &[3]).bitwise_xor(2).unwrap()),
            [3, 0, 1]
        );
        let err = bits.bitwise_and(1.0).unwrap_err().to_string();
        assert!(
            err.contains("bitwise operators expect integer tensors"),
            "{err}"
        );

        assert_eq!(
            s32s(ints(vec![1, 2, 3], &[3]).left_shift(2).unwrap()),
            [4, 8, 12]
        );
        let shifts = ints(vec![1, 2, 3, 4], &[4]);
        let l = ints(vec![1, 1, -1, -1], &[4]).left_shift(&shifts).unwrap();
        assert_eq!(s32s(l), [2, 4, -8, -16]);
        assert_eq!(
            s32s(ints(vec![2, 4, 8], &[3]).right_shift(2).unwrap()),
            [0, 1, 2]
        );
        let r = ints(vec![16, 32, -64, -128], &[4])
            .right_shift(&shifts)
            .unwrap();
        assert_eq!(s32s(r), [8, 8, -8, -8]);
        // Past the width: 0 to the left, the sign to the right (XLA).
        let far = ints(vec![1, -1], &[2]);
        assert_eq!(s32s(far.left_shift(40).unwrap()), [0, 0]);
        assert_eq!(s32s(far.right_shift(40).unwrap()), [0, -1]);

        let b = ints(vec![-1, 0, 1], &[3]).bitwise_not().unwrap();
        assert_eq!(s32s(b), [0, -1, -2]);
        let u = place.from_vec(vec![0u8, 1, 254, 255], &[4]).unwrap();
        assert_eq!(
            u.bitwise_not().unwrap().to_vec::<u8>().unwrap(),
            [255, 254, 1, 0]
        );
        assert_eq!(
            s32s(ints(vec![-128], &[1]).population_count().unwrap()),
            [25]
        );
        assert_eq!(
            s32s(ints(vec![0, 1, 254, 255], &[4]).population_count().unwrap()),
            [0, 1, 7, 8]
        );
        let clz = ints(vec![0, 0xF, 0xFF, 0xFFFF, 1, -1], &[6]).count_leading_zeros();
        assert_eq!(s32s(clz.unwrap()), [32, 28, 24, 16, 31, 0]);
        let wide = place.from_vec(vec![0i64, 0xF, 0xFF, 0xFFFF], &[4]).unwrap();
        assert_eq!(
            wide.count_leading_zeros().unwrap().to_vec::<i64>().unwrap(),
            [64, 60, 56, 48]
        );
        let bytes = place
            .from_vec(vec![0u8, 1, 2, 4, 8, 16, 32, 64, 128], &[9])
            .unwrap();
        assert_eq!(
            bytes.count_leading_zeros().unwrap().to_vec::<u8>().unwrap(),
            [8, 7, 6, 5, 4, 3, 2, 1, 0]
        );
        let err = floats(vec![0.0, 1.0], &[2])
            .population_count()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bitwise operators expect integer tensors"),
            "{err}"
        );

        let l = floats(vec![8.0, 100.0], &[2])
            .log_base(2.0)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(
            (l[0] - 3.0).abs() < 1e-6 && (l[1] - 6.643_856).abs() < 1e-5,
            "{l:?}"
        );
        let err = floats(vec![1.0], &[1])
            .log_base(1.0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("different than 1"), "{err}");
    }
}

/// `Nx.select` with the values of Nx's documented examples, numbers as choices, NaN as a
/// predicate (true: not zero) and as a value (kept exactly, where a mask multiplied in would
/// spread it), and `clip` built on it.
#[test]
fn select_follows_nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let x = place.from_vec(vec![2i32, 4, 6, 8, 10], &[5]).unwrap();
        let y = place.from_vec(vec![1i32, 6, 2, 11, 2], &[5]).unwrap();
        let odd = place.from_vec(vec![1i32, 3, 5, 7, 9], &[5]).unwrap();
        let two = place.scalar(2i32).unwrap();
        let s = x.greater(&y).unwrap().select(&two, &odd).unwrap();
        assert_eq!(s.dtype(), DType::S32);
        assert_eq!(s.to_vec::<i32>().unwrap(), [2, 3, 2, 7, 2]);

        let pred = place.from_vec(vec![0u8, 1, 2], &[3]).unwrap();
        let zeros = place.from_vec(vec![0i32, 0, 0], &[3]).unwrap();
        let ones = place.from_vec(vec![1i32, 1, 1], &[3]).unwrap();
        assert_eq!(
            pred.select(&zeros, &ones).unwrap().to_vec::<i32>().unwrap(),
            [1, 0, 0]
        );
        let pred = place.from_vec(vec![0i32, 1, 0], &[3]).unwrap();
        let twos = place.from_vec(vec![2.0f32, 2.0, 2.0], &[3]).unwrap();
        let m = pred.select(&ones, &twos).unwrap();
        assert_eq!(
            (m.dtype(), m.to_vec::<f32>().unwrap()),
            (DType::F32, vec![2.0, 1.0, 2.0])
        );

        // Numbers on both sides, broadcast against a [2, 3] predicate.
        let grid = place.from_vec(vec![0i32, 1, 0, 1, 1, 0], &[2, 3]).unwrap();
        let n = grid.select(1, 0).unwrap();
        assert_eq!((n.dtype(), n.shape()), (DType::S32, &[2, 3][..]));
        assert_eq!(n.to_vec::<i32>().unwrap(), [0, 1, 0, 1, 1, 0]);
        let f = grid.select(1, 0.5).unwrap();
        assert_eq!(f.dtype(), DType::F32);
        let col = place.from_vec(vec![2i32, 3], &[2, 1]).unwrap();
        let b = grid.select(1, &col).unwrap();
        assert_eq!(b.to_vec::<i32>().unwrap(), [2, 1, 2, 1, 1, 3]);

        let v = place
            .from_vec(vec![f32::NAN, 1.0, f32::INFINITY], &[3])
            .unwrap();
        let nan_pred = v.select(1.0, 0.0).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(nan_pred, [1.0, 1.0, 1.0]);
        let keep = v
            .is_nan()
            .unwrap()
            .select(0.0, &v)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert_eq!(keep, [0.0, 1.0, f32::INFINITY]);

        let err = grid
            .select(&place.from_vec(vec![1i32, 2], &[2]).unwrap(), 0)
            .unwrap_err();
        assert!(matches!(err, Error::ShapeMismatch { .. }), "{err}");
    }
}

/// flatten, reverse, tile, slice_along_axis, split, pad, pad_outer (a value and each mode)
/// and reflect with the values of Nx's documented examples.
#[test]
fn layout_functions_follow_nx_documented_examples() {
    let ints = |t: Tensor| t.to_vec::<i32>().unwrap();
    let shape = |t: &Tensor| t.shape().to_vec();
    for d in devices() {
        let place = on(d);
        let iota = |shape: &[usize]| place.iota(DType::S32, shape, None).unwrap();

        let t = iota(&[1, 2, 3]);
        let f = t.flatten([1, 2]).unwrap();
        assert_eq!((shape(&f), ints(f)), (vec![1, 6], vec![0, 1, 2, 3, 4, 5]));
        assert_eq!(t.flatten(..).unwrap().shape(), &[6]);
        let err = t.flatten([0, 2]).unwrap_err().to_string();
        assert!(err.contains("flatten axes must be consecutive"), "{err}");

        let m = place.from_vec(vec![1i32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        assert_eq!(ints(m.reverse(..).unwrap()), [6, 5, 4, 3, 2, 1]);
        assert_eq!(ints(m.reverse([0]).unwrap()), [4, 5, 6, 1, 2, 3]);
        assert_eq!(ints(m.reverse([-1]).unwrap()), [3, 2, 1, 6, 5, 4]);
        let cube = place.iota(DType::F32, &[2, 2, 2], None).unwrap();
        let r = cube.reverse([0, 2]).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(r, [5.0, 4.0, 7.0, 6.0, 1.0, 0.0, 3.0, 2.0]);

        let a = place.from_vec(vec![0i32, 1, 2], &[3]).unwrap();
        assert_eq!(ints(a.tile(&[2]).unwrap()), [0, 1, 2, 0, 1, 2]);
        let b = a.tile(&[2, 2]).unwrap();
        assert_eq!(b.shape(), &[2, 6]);
        let c = place
            .from_vec(vec![1i32, 2, 3, 4], &[4])
            .unwrap()
            .tile(&[4, 1])
            .unwrap();
        assert_eq!((shape(&c), ints(c).len()), (vec![4, 4], 16));
        let grows = m.tile(&[1, 3, 1]).unwrap();
        assert_eq!(grows.shape(), &[1, 6, 3]);
        assert_eq!(ints(grows)[..9], [1, 2, 3, 4, 5, 6, 1, 2, 3]);
        assert!(a.tile(&[0]).is_err());

        let s = iota(&[2, 5]).slice_along_axis(1, 2, 1).unwrap();
        assert_eq!(ints(s), [1, 2, 6, 7]);
        let s = iota(&[2, 5]).slice_along_axis_by(0, 3, -1, 2).unwrap();
        assert_eq!(ints(s), [0, 2, 5, 7]);

        let t = iota(&[3, 4]);
        let (l, r) = t.split(2, 0).unwrap();
        assert_eq!((l.shape(), r.shape()), (&[2, 4][..], &[1, 4][..]));
        assert_eq!(ints(r), [8, 9, 10, 11]);
        let (l, r) = t.split(2, 1).unwrap();
        assert_eq!(
            (ints(l), ints(r)),
            (vec![0, 1, 4, 5, 8, 9], vec![2, 3, 6, 7, 10, 11])
        );
        let (l, _) = t.split(0.5, 0).unwrap();
        assert_eq!(l.shape(), &[2, 4]);
        let (l, r) = t.split(0.75, 1).unwrap();
        assert_eq!((shape(&l), ints(r)), (vec![3, 3], vec![3, 7, 11]));
        let v = place.from_vec(vec![1i32, 2, 3, 4], &[4]).unwrap();
        let (l, r) = v.split(-1, 0).unwrap();
        assert_eq!((ints(l), ints(r)), (vec![1, 2, 3], vec![4]));
        assert!(v.split(4, 0).is_err() && v.split(0, 0).is_err() && v.split(1.0, 0).is_err());

        let one = place.scalar(1i32).unwrap();
        assert_eq!(ints(one.pad(0, &[]).unwrap()), [1]);
        assert_eq!(
            ints(a.add(1).unwrap().pad(0, &[(1, 1, 0)]).unwrap()),
            [0, 1, 2, 3, 0]
        );
        let p = m.pad(0, &[(0, 0, 1), (0, 0, 1)]).unwrap();
        assert_eq!(p.shape(), &[3, 5]);
        assert_eq!(ints(p), [1, 0, 2, 0, 3, 0, 0, 0, 0, 0, 4, 0, 5, 0, 6]);
        let interior = place.from_vec(vec![10i32, 20, 30], &[3]).unwrap();
        let p = interior.pad(0, &[(2, 3, 1)]).unwrap();
        assert_eq!(ints(p), [0, 0, 10, 0, 20, 0, 30, 0, 0, 0]);
        let cube = place
            .from_vec((1..=8).collect::<Vec<i32>>(), &[2, 2, 2])
            .unwrap();
        let p = cube.pad(0, &[(1, 0, 0), (1, 1, 0), (0, 1, 0)]).unwrap();
        assert_eq!(p.shape(), &[3, 4, 3]);
        let back = p.pad(0, &[(-1, 0, 0), (-1, -1, 0), (0, -1, 0)]).unwrap();
        assert_eq!(ints(back), (1..=8).collect::<Vec<i32>>());
        let crop = place.from_vec(vec![0i32, 1, 2, 3, 0], &[5]).unwrap();
        assert_eq!(ints(crop.pad(0, &[(-1, -1, 0)]).unwrap()), [1, 2, 3]);
        let both = place
            .from_vec(vec![0i32, 1, 2, 3, 0, 4, 5, 6], &[2, 4])
            .unwrap();
        assert_eq!(
            ints(both.pad(0, &[(0, 0, 0), (-1, 1, 0)]).unwrap()),
            [1, 2, 3, 0, 4, 5, 6, 0]
        );
        let fl = place
            .from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])
            .unwrap();
        let p = fl.pad(0, &[(-1, 2, 0), (1, -1, 0)]).unwrap();
        assert_eq!(p.dtype(), DType::F32);
        assert_eq!(
            p.to_vec::<f32>().unwrap(),
            [0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(
            m.pad(0.5, &[(1, 0, 0), (0, 0, 0)]).unwrap().dtype(),
            DType::F32
        );
        assert!(m.pad(0, &[(0, 0, 0)]).is_err());
        assert!(m.pad(0, &[(-3, 0, 0), (0, 0, 0)]).is_err());

        let sq = place
            .from_vec((1..=9).collect::<Vec<i32>>(), &[3, 3])
            .unwrap();
        assert_eq!(ints(sq.pad_outer(0, &[(-1, -1), (-1, -1)]).unwrap()), [5]);
        assert_eq!(
            ints(sq.pad_outer(0, &[(1, -1), (1, -1)]).unwrap()),
            [0, 0, 0, 0, 1, 2, 0, 4, 5]
        );
        assert_eq!(
            ints(a.pad_outer_with(PadMode::Cyclic, &[(3, 1)]).unwrap()),
            [0, 1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            ints(a.pad_outer_with(PadMode::Mirror, &[(3, 3)]).unwrap()),
            [2, 1, 0, 0, 1, 2, 2, 1, 0]
        );
        assert_eq!(
            ints(a.pad_outer_with(PadMode::Reflect, &[(3, 1)]).unwrap()),
            [1, 2, 1, 0, 1, 2, 1]
        );
        assert_eq!(
            ints(a.pad_outer_with(PadMode::Replicate, &[(3, 1)]).unwrap()),
            [0, 0, 0, 0, 1, 2, 2]
        );
        let xy = place.from_vec(vec![0i32, 1, 2, 3, 4, 5], &[2, 3]).unwrap();
        assert_eq!(
            ints(
                xy.pad_outer_with(PadMode::Cyclic, &[(2, 0), (2, 1)])
                    .unwrap()
            ),
            [1, 2, 0, 1, 2, 0, 4, 5, 3, 4, 5, 3, 1, 2, 0, 1, 2, 0, 4, 5, 3, 4, 5, 3]
        );
        assert_eq!(
            ints(
                xy.pad_outer_with(PadMode::Mirror, &[(1, 1), (2, 2)])
                    .unwrap()
            ),
            [1, 0, 0, 1, 2, 2, 1, 1, 0, 0, 1, 2, 2, 1, 4, 3, 3, 4, 5, 5, 4, 4, 3, 3, 4, 5, 5, 4]
        );
        assert_eq!(
            ints(xy.reflect(&[(2, 0), (2, 1)]).unwrap()),
            [2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4, 2, 1, 0, 1, 2, 1, 5, 4, 3, 4, 5, 4]
        );
        let rep = xy
            .pad_outer_with(PadMode::Replicate, &[(2, 2), (2, 2)])
            .unwrap();
        assert_eq!(rep.shape(), &[6, 7]);
        assert_eq!(ints(rep)[..7], [0, 0, 0, 1, 2, 2, 2]);
    }
}

/// linspace with Nx's documented examples, the inspection functions, nested literals and
/// `tensor!`.
#[test]
fn creation_and_inspection_follow_nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let l = place.linspace(5.0, 8.0, 5).unwrap();
        assert_eq!(l.dtype(), DType::F32);
        assert_eq!(l.to_vec::<f32>().unwrap(), [5.0, 5.75, 6.5, 7.25, 8.0]);
        let l = place
            .linspace_with(0.0, 10.0, 5, DType::F32, false)
            .unwrap();
        assert_eq!(l.to_vec::<f32>().unwrap(), [0.0, 2.0, 4.0, 6.0, 8.0]);
        let l = place.linspace_with(0.0, 24.0, 8, DType::U8, true).unwrap();
        assert_eq!(l.to_vec::<u8>().unwrap(), [0, 3, 6, 10, 13, 17, 20, 24]);
        let l = place
            .linspace_with(0.0, 24.0, 8, DType::S32, false)
            .unwrap();
        assert_eq!(l.to_vec::<i32>().unwrap(), [0, 3, 6, 9, 12, 15, 18, 21]);
        assert_eq!(
            place
                .linspace(0.0, 10.0, 1)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [0.0]
        );
        assert!(place.linspace(0.0, 1.0, 0).is_err());

        let t = place.zeros(DType::F32, &[2, 3]).unwrap();
        assert_eq!(
            (t.flat_size(), t.bit_size(), t.axes()),
            (6, 192, vec![0, 1])
        );
        assert_eq!((t.axis_size(0).unwrap(), t.axis_size(-1).unwrap()), (2, 3));
        assert!(t.axis_size(2).is_err());
        assert_eq!(place.zeros(DType::U8, &[3]).unwrap().bit_size(), 24);

        let n = place
            .from_nested(&vec![vec![1.0, 2.0], vec![3.0, 4.0]])
            .unwrap();
        assert_eq!((n.shape(), n.dtype()), (&[2, 2][..], DType::F64));
        let err = place
            .from_nested(&vec![vec![1, 2], vec![3]])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ragged"), "{err}");
        let cube = place
            .from_nested(&[[[1u8, 2], [3, 4]], [[5, 6], [7, 8]]])
            .unwrap();
        assert_eq!(cube.shape(), &[2, 2, 2]);
    }
    let m = tensorbook::tensor![[1.0, 2.0], [3.0, 4.0]].unwrap();
    assert_eq!((m.shape(), m.dtype()), (&[2, 2][..], DType::F32));
    assert_eq!(m.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
    let v = tensorbook::tensor![1, 2, 3].unwrap();
    assert_eq!((v.shape(), v.dtype()), (&[3][..], DType::S32));
    let w = tensorbook::tensor![u8; [1, 2], [3, 4]].unwrap();
    assert_eq!(w.dtype(), DType::U8);
    // Nested Vecs and arrays convert as `from_nested` reads them; ragged rows are the error.
    let t = Tensor::try_from(vec![vec![1.0f32, 2.0], vec![3.0, 4.0]]).unwrap();
    assert_eq!((t.shape(), t.dtype()), (&[2, 2][..], DType::F32));
    let a: Tensor = [[1i32, 2, 3], [4, 5, 6]].try_into().unwrap();
    assert_eq!(a.to_vec::<i32>().unwrap(), [1, 2, 3, 4, 5, 6]);
    assert!(Tensor::try_from(vec![vec![1, 2], vec![3]]).is_err());
    let s = Tensor::try_from(&[0.5f64, 1.5][..]).unwrap();
    assert_eq!(s.shape(), &[2]);
}

/// The cumulative scans and `diff` with the values of Nx's documented examples.
#[test]
fn cumulative_ops_and_diff_follow_nx_documented_examples() {
    let ints = |t: Tensor| {
        assert_eq!(t.dtype(), DType::S32);
        t.to_vec::<i32>().unwrap()
    };
    for d in devices() {
        let place = on(d);
        let v = |x: Vec<i32>, s: &[usize]| place.from_vec(x, s).unwrap();
        let iota = place.iota(DType::S32, &[3, 3], None).unwrap();
        assert_eq!(
            ints(v(vec![1, 2, 3, 4], &[4]).cumulative_sum(0, false).unwrap()),
            [1, 3, 6, 10]
        );
        assert_eq!(
            ints(iota.cumulative_sum(0, false).unwrap()),
            [0, 1, 2, 3, 5, 7, 9, 12, 15]
        );
        assert_eq!(
            ints(iota.cumulative_sum(1, false).unwrap()),
            [0, 1, 3, 3, 7, 12, 6, 13, 21]
        );
        assert_eq!(
            ints(iota.cumulative_sum(0, true).unwrap()),
            [9, 12, 15, 9, 11, 13, 6, 7, 8]
        );
        assert_eq!(
            ints(iota.cumulative_sum(1, true).unwrap()),
            [3, 3, 2, 12, 9, 5, 21, 15, 8]
        );
        assert_eq!(
            ints(
                v(vec![1, 2, 3, 4], &[4])
                    .cumulative_product(0, false)
                    .unwrap()
            ),
            [1, 2, 6, 24]
        );
        assert_eq!(
            ints(iota.cumulative_product(0, false).unwrap()),
            [0, 1, 2, 0, 4, 10, 0, 28, 80]
        );
        assert_eq!(
            ints(v(vec![3, 4, 2, 1], &[4]).cumulative_min(0, false).unwrap()),
            [3, 3, 2, 1]
        );
        assert_eq!(
            ints(v(vec![3, 4, 2, 1], &[4]).cumulative_max(0, false).unwrap()),
            [3, 4, 4, 4]
        );
        let m = v(vec![2, 3, 1, 1, 3, 2, 2, 1, 3], &[3, 3]);
        assert_eq!(
            ints(m.cumulative_min(0, false).unwrap()),
            [2, 3, 1, 1, 3, 1, 1, 1, 1]
        );
        assert_eq!(
            ints(m.cumulative_max(1, false).unwrap()),
            [2, 3, 3, 1, 3, 3, 2, 2, 3]
        );
        assert_eq!(
            ints(m.cumulative_max(1, true).unwrap()),
            [3, 3, 1, 3, 3, 2, 3, 3, 3]
        );
        let nan = place.from_vec(vec![1.0f32, f32::NAN, 3.0], &[3]).unwrap();
        let c = nan
            .cumulative_max(0, false)
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        assert!(c[0] == 1.0 && c[1].is_nan() && c[2].is_nan(), "{c:?}");
        let wrap = place.from_vec(vec![200u8, 100], &[2]).unwrap();
        assert_eq!(
            wrap.cumulative_sum(0, false)
                .unwrap()
                .to_vec::<u8>()
                .unwrap(),
            [200, 44]
        );
        assert!(place
            .scalar(1i32)
            .unwrap()
            .cumulative_sum(0, false)
            .is_err());

        let x = v(vec![1, 2, 4, 7, 0], &[5]);
        assert_eq!(ints(x.diff(1, -1).unwrap()), [1, 2, 3, -7]);
        assert_eq!(ints(x.diff(2, -1).unwrap()), [1, 1, -10]);
        assert_eq!(ints(x.diff(0, -1).unwrap()), [1, 2, 4, 7, 0]);
        let rows = v(vec![1, 3, 6, 10, 0, 5, 6, 8], &[2, 4]);
        assert_eq!(ints(rows.diff(1, -1).unwrap()), [2, 3, 4, 5, 1, 2]);
        let d0 = rows.diff(1, 0).unwrap();
        assert_eq!(d0.shape(), &[1, 4]);
        assert_eq!(ints(d0), [-1, 2, 0, -2]);
        assert!(place.scalar(1i32).unwrap().diff(1, 0).is_err());
    }
}

/// `Nx.covariance` with the values of Nx's documented examples.
#[test]
fn covariance_follows_nx_documented_examples() {
    let close = |t: Tensor, e: &[f32]| {
        assert_eq!(t.dtype(), DType::F32);
        let v = t.to_vec::<f32>().unwrap();
        assert!(
            v.iter().zip(e).all(|(a, b)| (a - b).abs() < 1e-5),
            "{v:?} against {e:?}"
        );
    };
    for d in devices() {
        let place = on(d);
        let x = place.from_vec(vec![1i32, 2, 3, 4, 5, 6], &[3, 2]).unwrap();
        let c = x.covariance(0).unwrap();
        assert_eq!(c.shape(), &[2, 2]);
        close(c, &[2.666_666_7; 4]);
        close(x.covariance(1).unwrap(), &[4.0; 4]);
        let batched = place
            .from_vec((1..=12).collect::<Vec<i32>>(), &[2, 3, 2])
            .unwrap();
        let c = batched.covariance(0).unwrap();
        assert_eq!(c.shape(), &[2, 2, 2]);
        close(c, &[2.666_666_7; 8]);
        let mean = place.from_vec(vec![4i32, 3], &[2]).unwrap();
        close(
            x.covariance_around(&mean, 0).unwrap(),
            &[3.666_666_7, 1.666_666_6, 1.666_666_6, 3.666_666_7],
        );
        let err = place
            .from_vec(vec![1i32, 2], &[2])
            .unwrap()
            .covariance(0)
            .unwrap_err();
        assert!(err.to_string().contains("rank at least 2"), "{err}");
    }
}

/// `Nx.sort`, `argsort`, `top_k`, `median` and `mode`: the documented examples, NaN's place
/// included, on every device.
#[test]
fn sorting_follows_nx_documented_examples() {
    let ints = |t: Tensor| {
        assert_eq!(t.dtype(), DType::S32, "{t:?}");
        t.to_vec::<i32>().unwrap()
    };
    let floats = |t: Tensor| t.to_vec::<f32>().unwrap();
    let same = |a: Vec<f32>, b: &[f32]| {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!(x == y || (x.is_nan() && y.is_nan()), "{a:?} against {b:?}");
        }
    };
    for d in devices() {
        let place = on(d);
        let v = |x: Vec<i32>, s: &[usize]| place.from_vec(x, s).unwrap();
        let f = |x: Vec<f32>, s: &[usize]| place.from_vec(x, s).unwrap();
        assert_eq!(
            ints(
                v(vec![16, 23, 42, 4, 8, 15], &[6])
                    .sort(0, Direction::Asc)
                    .unwrap()
            ),
            [4, 8, 15, 16, 23, 42]
        );
        let t = v(vec![3, 1, 7, 2, 5, 4], &[2, 3]);
        assert_eq!(ints(t.sort(0, Direction::Asc).unwrap()), [2, 1, 4, 3, 5, 7]);
        assert_eq!(ints(t.sort(1, Direction::Asc).unwrap()), [1, 3, 7, 2, 4, 5]);
        let cube = v(
            vec![4, 5, 2, 2, 5, 3, 5, 0, 2, 1, 9, 8, 2, 1, 3, 2, 1, 4],
            &[2, 3, 3],
        );
        assert_eq!(
            ints(cube.sort(0, Direction::Asc).unwrap()),
            [1, 5, 2, 2, 1, 3, 2, 0, 2, 4, 9, 8, 2, 5, 3, 5, 1, 4]
        );
        assert_eq!(
            ints(cube.sort(1, Direction::Asc).unwrap()),
            [2, 0, 2, 4, 5, 2, 5, 5, 3, 1, 1, 3, 2, 1, 4, 2, 9, 8]
        );
        assert_eq!(
            ints(cube.sort(2, Direction::Asc).unwrap()),
            [2, 4, 5, 2, 3, 5, 0, 2, 5, 1, 8, 9, 1, 2, 3, 1, 2, 4]
        );
        let specials = f(vec![f32::NAN, f32::NEG_INFINITY, 0.0, f32::INFINITY], &[4]);
        same(
            floats(specials.sort(0, Direction::Asc).unwrap()),
            &[f32::NEG_INFINITY, 0.0, f32::INFINITY, f32::NAN],
        );
        same(
            floats(specials.sort(0, Direction::Desc).unwrap()),
            &[f32::NAN, f32::INFINITY, 0.0, f32::NEG_INFINITY],
        );

        assert_eq!(
            ints(
                v(vec![16, 23, 42, 4, 8, 15], &[6])
                    .argsort(0, Direction::Asc)
                    .unwrap()
            ),
            [3, 4, 5, 0, 1, 2]
        );
        assert_eq!(
            ints(t.argsort(0, Direction::Asc).unwrap()),
            [1, 0, 1, 0, 1, 0]
        );
        assert_eq!(
            ints(t.argsort(1, Direction::Asc).unwrap()),
            [1, 0, 2, 0, 2, 1]
        );
        let unsigned = t.argsort_as(1, Direction::Asc, DType::U8).unwrap();
        assert_eq!(unsigned.to_vec::<u8>().unwrap(), [1, 0, 2, 0, 2, 1]);
        assert_eq!(
            ints(cube.argsort(0, Direction::Asc).unwrap()),
            [1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 1]
        );
        assert_eq!(
            ints(cube.argsort(1, Direction::Asc).unwrap()),
            [1, 2, 0, 0, 0, 2, 2, 1, 1, 0, 1, 1, 1, 2, 2, 2, 0, 0]
        );
        let specials = f(vec![f32::NAN, f32::NEG_INFINITY, f32::INFINITY, 0.0], &[4]);
        assert_eq!(
            ints(specials.argsort(0, Direction::Asc).unwrap()),
            [1, 3, 2, 0]
        );
        assert_eq!(
            ints(specials.argsort(0, Direction::Desc).unwrap()),
            [0, 2, 3, 1]
        );

        let (values, indices) = v(vec![1, 2, 3, 4, 5], &[5]).top_k(2).unwrap();
        assert_eq!((ints(values), ints(indices)), (vec![5, 4], vec![4, 3]));
        let (values, indices) = f(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
            .top_k(1)
            .unwrap();
        assert_eq!(values.shape(), &[2, 1]);
        assert_eq!(
            (floats(values), ints(indices)),
            (vec![3.0, 6.0], vec![2, 2])
        );
        let (values, indices) = specials.top_k(3).unwrap();
        same(floats(values), &[f32::NAN, f32::INFINITY, 0.0]);
        assert_eq!(ints(indices), [0, 2, 3]);
        let err = v(vec![1, 2, 3, 4, 5], &[5])
            .top_k(6)
            .unwrap_err()
            .to_string();
        assert!(err.contains("size=5 and k=6"), "{err}");
        let err = v(vec![1], &[]).top_k(1).unwrap_err().to_string();
        assert!(err.contains("at least rank 1"), "{err}");

        let scalar = |t: Tensor| (t.dtype(), t.shape().to_vec(), t.to_f64_vec().unwrap());
        assert_eq!(
            scalar(v(vec![42], &[]).median(..).unwrap()),
            (DType::S32, vec![], vec![42.0])
        );
        assert_eq!(
            scalar(v(vec![1, 2, 3], &[3]).median(..).unwrap()),
            (DType::S32, vec![], vec![2.0])
        );
        assert_eq!(
            scalar(v(vec![1, 2], &[2]).median(..).unwrap()),
            (DType::F32, vec![], vec![1.5])
        );
        let iota = place.iota(DType::S32, &[2, 3, 3], None).unwrap();
        assert_eq!(scalar(iota.median(..).unwrap()).2, [8.5]);
        let m = v(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
        assert_eq!(
            scalar(m.median(0).unwrap()),
            (DType::F32, vec![3], vec![2.5, 3.5, 4.5])
        );
        assert_eq!(
            scalar(m.median(1).unwrap()),
            (DType::S32, vec![2], vec![2.0, 5.0])
        );
        let iota = place.iota(DType::S32, &[2, 2, 3], None).unwrap();
        assert_eq!(
            scalar(iota.median(0).unwrap()),
            (DType::F32, vec![2, 3], vec![3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
        );
        let t3 = v(vec![1, 2, 2, 3, 4, 2, 4, 5, 2, 7, 9, 2], &[2, 2, 3]);
        assert_eq!(
            scalar(t3.median(-1).unwrap()),
            (DType::S32, vec![2, 2], vec![2.0, 3.0, 4.0, 7.0])
        );
        assert_eq!(t3.median_keep(-1).unwrap().shape(), &[2, 2, 1]);

        assert_eq!(scalar(v(vec![42], &[]).mode(..).unwrap()).2, [42.0]);
        assert_eq!(
            scalar(v(vec![1], &[1, 1]).mode(..).unwrap()),
            (DType::S32, vec![], vec![1.0])
        );
        assert_eq!(
            scalar(v(vec![1, 2, 2, 3, 5], &[5]).mode(..).unwrap()).2,
            [2.0]
        );
        let two = v(vec![1, 2, 2, 3, 5, 1, 1, 76, 8, 1], &[2, 5]);
        assert_eq!(scalar(two.mode(..).unwrap()).2, [1.0]);
        assert_eq!(
            scalar(two.mode(0).unwrap()),
            (DType::S32, vec![5], vec![1.0, 1.0, 2.0, 3.0, 1.0])
        );
        assert_eq!(scalar(two.mode(1).unwrap()).2, [2.0, 1.0]);
        assert_eq!(
            scalar(v(vec![1], &[1, 1, 1]).mode(1).unwrap()),
            (DType::S32, vec![1, 1], vec![1.0])
        );
        assert_eq!(two.mode_keep(1).unwrap().shape(), &[2, 1]);
    }
}

/// `Nx.take_along_axis`, `gather`, `indexed_add` and `indexed_put`: the documented examples,
/// type promotion and error cases, on every device.
#[test]
fn indexed_ops_follow_nx_documented_examples() {
    let ints = |t: Tensor| {
        assert_eq!(t.dtype(), DType::S32, "{t:?}");
        t.to_vec::<i32>().unwrap()
    };
    for d in devices() {
        let place = on(d);
        let v = |x: Vec<i32>, s: &[usize]| place.from_vec(x, s).unwrap();
        let t = v(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
        let idx = v(vec![0, 0, 2, 2, 1, 1, 2, 2, 1, 1, 0, 0], &[2, 6]);
        assert_eq!(
            ints(t.take_along_axis(&idx, 1).unwrap()),
            [1, 1, 3, 3, 2, 2, 6, 6, 5, 5, 4, 4]
        );
        let idx = v(vec![0, 1, 1, 1, 0, 0, 0, 1, 0], &[3, 3]);
        assert_eq!(
            ints(t.take_along_axis(&idx, 0).unwrap()),
            [1, 5, 6, 4, 2, 3, 1, 5, 3]
        );
        let tensor = v(vec![1, 2, 3, 4, 5, 6], &[1, 3, 2]);
        let idx1 = tensor.argsort(1, Direction::Desc).unwrap();
        assert_eq!(ints(idx1.clone()), [2, 2, 1, 1, 0, 0]);
        assert_eq!(
            ints(tensor.take_along_axis(&idx1, 1).unwrap()),
            [5, 6, 3, 4, 1, 2]
        );
        let idx2 = tensor.argsort(2, Direction::Desc).unwrap();
        assert_eq!(ints(idx2.clone()), [1, 0, 1, 0, 1, 0]);
        assert_eq!(
            ints(tensor.take_along_axis(&idx2, 2).unwrap()),
            [2, 1, 4, 3, 6, 5]
        );
        let floats_idx = place.from_vec(vec![2.0f32, 1.0, 2.0], &[3, 1]).unwrap();
        let err = place
            .iota(DType::S32, &[3, 3], None)
            .unwrap()
            .take_along_axis(&floats_idx, 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("indices must be an integer tensor"), "{err}");

        let t = v(vec![1, 2, 3, 4], &[2, 2]);
        assert_eq!(
            ints(t.gather(&v(vec![1, 1, 0, 1, 1, 0], &[3, 2]), ..).unwrap()),
            [4, 2, 3]
        );
        let g = t
            .gather(&v(vec![1, 1, 0, 0, 1, 0, 0, 1], &[2, 2, 2]), ..)
            .unwrap();
        assert_eq!(g.shape(), &[2, 2]);
        assert_eq!(ints(g), [4, 1, 3, 2]);
        let t = v(vec![1, 2, 11, 12, 101, 102, 111, 112], &[2, 2, 2]);
        assert_eq!(
            ints(
                t.gather(&v(vec![0, 0, 0, 0, 1, 1, 1, 1, 1], &[3, 3]), ..)
                    .unwrap()
            ),
            [1, 12, 112]
        );
        let t = v(vec![1, 2, 3, 3, 4, 5], &[2, 3]);
        let g = t.gather(&v(vec![1, 0], &[2, 1]), ..).unwrap();
        assert_eq!(g.shape(), &[2, 3]);
        assert_eq!(ints(g), [3, 4, 5, 1, 2, 3]);
        let t = v(vec![1, 2, 3, 4, 5, 6], &[2, 3]);
        let g = t.gather(&v(vec![1, 0, 2, 1], &[4, 1]), [1]).unwrap();
        assert_eq!(g.shape(), &[4, 2]);
        assert_eq!(ints(g), [2, 5, 1, 4, 3, 6, 2, 5]);
        let t = place.iota(DType::S32, &[2, 1, 3], None).unwrap();
        let g = t.gather(&v(vec![1, 0, 2], &[1, 3, 1]), [2]).unwrap();
        assert_eq!(g.shape(), &[1, 3, 2, 1]);
        assert_eq!(ints(g), [1, 4, 0, 3, 2, 5]);
        let err = v(vec![1, 2, 3, 4], &[2, 2])
            .gather(&place.from_vec(vec![0.0f32, 0.0], &[1, 2]).unwrap(), ..)
            .unwrap_err()
            .to_string();
        assert!(err.contains("indices must be an integer tensor"), "{err}");
        let err = place
            .iota(DType::S32, &[3], None)
            .unwrap()
            .gather(&v(vec![0], &[]), ..)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected indices rank to be at least 1"),
            "{err}"
        );
        // Reads clamp each index to its axis, as Nx and XLA do.
        assert_eq!(
            ints(t.gather(&v(vec![5, -3, 9], &[1, 3]), ..).unwrap()),
            [5]
        );

        let col = v(vec![1, 2], &[2, 1]);
        assert_eq!(
            ints(col.indexed_add(&v(vec![1, 0], &[2]), 8, ..).unwrap()),
            [1, 10]
        );
        let iota = place.iota(DType::S32, &[1, 2, 3], None).unwrap();
        let indices = v(vec![0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 2, 0, 1, 2], &[5, 3]);
        let added = iota
            .indexed_add(&indices, &v(vec![1, 3, 1, -2, 5], &[5]), ..)
            .unwrap();
        assert_eq!(ints(added), [2, 1, 0, 3, 7, 10]);
        let one_f = place.from_vec(vec![1.0f32], &[1]).unwrap();
        let twice = v(vec![0, 0], &[2, 1]);
        let promoted = one_f.indexed_add(&twice, &v(vec![1, 1], &[2]), ..).unwrap();
        assert_eq!(
            (promoted.dtype(), promoted.to_vec::<f32>().unwrap()),
            (DType::F32, vec![3.0])
        );
        let floats = place.from_vec(vec![1.0f32, 1.0], &[2]).unwrap();
        let promoted = v(vec![1], &[1]).indexed_add(&twice, &floats, ..).unwrap();
        assert_eq!(
            (promoted.dtype(), promoted.to_vec::<f32>().unwrap()),
            (DType::F32, vec![3.0])
        );
        let wide = place.from_vec(vec![1i64, 1], &[2]).unwrap();
        let promoted = v(vec![1], &[1]).indexed_add(&twice, &wide, ..).unwrap();
        assert_eq!(
            (promoted.dtype(), promoted.to_vec::<i64>().unwrap()),
            (DType::S64, vec![3])
        );
        let err = col
            .indexed_add(&v(vec![1, 2, 3], &[1, 1, 3]), &v(vec![0], &[1]), ..)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("indices must be a rank 1 or 2 tensor, got: 3"),
            "{err}"
        );
        let err = col
            .indexed_add(&v(vec![1, 2], &[1, 2]), &v(vec![0, 1], &[2]), ..)
            .unwrap_err()
            .to_string();
        assert!(err.contains("leading axis of indices"), "{err}");
        let err = v(vec![1, 2, 3], &[1, 3])
            .indexed_add(&v(vec![0], &[1, 1]), &v(vec![1, 2, 3, 4, 5], &[1, 5]), ..)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("must be less than or equal to the axis"),
            "{err}"
        );

        assert_eq!(
            ints(col.indexed_put(&v(vec![1, 0], &[2]), 10, ..).unwrap()),
            [1, 10]
        );
        let zeros = v(vec![0, 0, 0], &[3]);
        let put = zeros
            .indexed_put(&v(vec![1, 2], &[2, 1]), &v(vec![2, 4], &[2]), ..)
            .unwrap();
        assert_eq!(ints(put), [0, 2, 4]);
        let indices = v(vec![0, 0, 0, 0, 1, 1, 0, 0, 2], &[3, 3]);
        let put = iota
            .indexed_put(&indices, &v(vec![1, 3, -2], &[3]), ..)
            .unwrap();
        assert_eq!(ints(put), [1, 1, -2, 3, 3, 5]);
        let t = place.iota(DType::S32, &[1, 3, 2], None).unwrap();
        let put = t
            .indexed_put(
                &v(vec![0, 0, 0, 2], &[2, 2]),
                &v(vec![0, 10, 40, 50], &[2, 2]),
                ..,
            )
            .unwrap();
        assert_eq!(ints(put), [0, 10, 2, 3, 40, 50]);
        let put = iota
            .indexed_put(
                &v(vec![0, 0, 0, 2], &[2, 2]),
                &v(vec![0, 30, 20, 50], &[2, 2]),
                [0, 2],
            )
            .unwrap();
        assert_eq!(ints(put), [0, 1, 20, 30, 4, 50]);
        let err = iota
            .indexed_put(&v(vec![0, 1, 2], &[1, 3]), 10, [1, 0, 2])
            .unwrap_err()
            .to_string();
        assert!(err.contains(":axes must be an ordered list"), "{err}");
        // An update whose indices fall outside the target is skipped, as in XLA.
        let skipped = zeros
            .indexed_add(&v(vec![3, -1, 1], &[3, 1]), &v(vec![7, 7, 7], &[3]), ..)
            .unwrap();
        assert_eq!(ints(skipped), [0, 7, 0]);
    }
}

/// Nx's other integer types (`u16`, `u32`, `u64`, `s8`, `s16`) on every device: sums of
/// narrow unsigned integers are u32 (`Nx.Type.to_aggregate`), arithmetic wraps at the type's
/// width, right shifts are logical on unsigned and arithmetic on signed types, casts follow
/// Rust's `as` (which is XLA's convert: wrap between integers, saturate from floats, round to
/// the nearest float, u64 past 2^63 included), and mixed tensors promote by `Nx.Type.merge`.
#[test]
fn narrow_and_unsigned_integer_types_follow_nx() {
    for d in devices() {
        let place = on(d);
        let bytes = place.full(255.0, DType::U8, &[1000]).unwrap();
        let total = bytes.sum(..).unwrap();
        assert_eq!(
            (total.dtype(), total.to_scalar::<u32>().unwrap()),
            (DType::U32, 255_000),
            "u8 sums into u32 on {d}"
        );
        let words = place.from_vec(vec![60_000u16, 60_000], &[2]).unwrap();
        let product = words.product(..).unwrap();
        assert_eq!(
            (product.dtype(), product.to_scalar::<u32>().unwrap()),
            (DType::U32, 3_600_000_000),
        );
        let u64s = place.from_vec(vec![u64::MAX, 2], &[2]).unwrap();
        assert_eq!(
            u64s.sum(..).unwrap().dtype(),
            DType::S64,
            "Nx sums u64 into s64"
        );
        assert_eq!(u64s.sum(..).unwrap().to_scalar::<i64>().unwrap(), 1);

        let small = place.from_vec(vec![127i8, -128], &[2]).unwrap();
        assert_eq!(small.add(1).unwrap().to_vec::<i8>().unwrap(), [-128, -127]);
        assert_eq!(
            small.negate().unwrap().to_vec::<i8>().unwrap(),
            [-127, -128]
        );
        assert_eq!(small.abs().unwrap().to_vec::<i8>().unwrap(), [127, -128]);

        let top = place.from_vec(vec![0x8000_0000u32, 1], &[2]).unwrap();
        let signed = place.from_vec(vec![i32::MIN, 1], &[2]).unwrap();
        let by31 = |t: &Tensor| t.right_shift(31).unwrap();
        assert_eq!(
            by31(&top).to_vec::<u32>().unwrap(),
            [1, 0],
            "logical on {d}"
        );
        assert_eq!(
            by31(&signed).to_vec::<i32>().unwrap(),
            [-1, 0],
            "arithmetic on {d}"
        );
        assert_eq!(
            top.population_count().unwrap().to_vec::<u32>().unwrap(),
            [1, 1]
        );
        let one16 = place.from_vec(vec![1u16, 0], &[2]).unwrap();
        assert_eq!(
            one16
                .count_leading_zeros()
                .unwrap()
                .to_vec::<u16>()
                .unwrap(),
            [15, 16]
        );
        assert_eq!(
            place
                .from_vec(vec![-1i8, 1], &[2])
                .unwrap()
                .count_leading_zeros()
                .unwrap()
                .to_vec::<i8>()
                .unwrap(),
            [0, 7]
        );

        // Casts, each against Rust's own `as`.
        let to = |t: &Tensor, dtype| t.as_type(dtype).unwrap();
        let big = place.from_vec(vec![u64::MAX, 1 << 63, 3], &[3]).unwrap();
        assert_eq!(
            to(&big, DType::F32).to_vec::<f32>().unwrap(),
            [u64::MAX as f32, (1u64 << 63) as f32, 3.0]
        );
        assert_eq!(
            to(&big, DType::S64).to_vec::<i64>().unwrap(),
            [-1, i64::MIN, 3]
        );
        assert_eq!(
            to(&big, DType::U16).to_vec::<u16>().unwrap(),
            [u16::MAX, 0, 3]
        );
        let floats = place
            .from_vec(vec![-1.5f32, 1e10, f32::NAN, 300.7, -200.0], &[5])
            .unwrap();
        for dtype in [
            DType::U8,
            DType::U16,
            DType::U32,
            DType::U64,
            DType::S8,
            DType::S16,
        ] {
            let expected: Vec<f64> = [-1.5f32, 1e10, f32::NAN, 300.7, -200.0]
                .iter()
                .map(|&x| match dtype {
                    DType::U8 => x as u8 as f64,
                    DType::U16 => x as u16 as f64,
                    DType::U32 => x as u32 as f64,
                    DType::U64 => x as u64 as f64,
                    DType::S8 => x as i8 as f64,
                    _ => x as i16 as f64,
                })
                .collect();
            assert_eq!(
                to(&floats, dtype).to_f64_vec().unwrap(),
                expected,
                "f32 -> {dtype} on {d}"
            );
        }
        assert_eq!(
            to(&small, DType::U64).to_vec::<u64>().unwrap(),
            [127, u64::MAX - 127],
            "s8 sign-extends into u64"
        );

        // Nx.Type.merge: u8 with s8 is s16, u32 with s32 is s64.
        let u = place.from_vec(vec![200u8], &[1]).unwrap();
        let s = place.from_vec(vec![-100i8], &[1]).unwrap();
        let mixed = u.add(&s).unwrap();
        assert_eq!(
            (mixed.dtype(), mixed.to_vec::<i16>().unwrap()),
            (DType::S16, vec![100])
        );
        let u32s = place.from_vec(vec![4_000_000_000u32], &[1]).unwrap();
        let s32s = place.from_vec(vec![-1i32], &[1]).unwrap();
        let wide = u32s.multiply(&s32s).unwrap();
        assert_eq!(
            (wide.dtype(), wide.to_vec::<i64>().unwrap()),
            (DType::S64, vec![-4_000_000_000])
        );

        // Ordering ops on the full unsigned range (no trip through a signed type).
        let order = place.from_vec(vec![u32::MAX, 0, 1 << 31, 7], &[4]).unwrap();
        assert_eq!(
            order
                .sort(0, Direction::Asc)
                .unwrap()
                .to_vec::<u32>()
                .unwrap(),
            [0, 7, 1 << 31, u32::MAX]
        );
        assert_eq!(order.argmax(..).unwrap().to_scalar::<i32>().unwrap(), 0);
        assert_eq!(
            order.reduce_max(..).unwrap().to_scalar::<u32>().unwrap(),
            u32::MAX
        );
        assert_eq!(
            place
                .iota(DType::U16, &[3], None)
                .unwrap()
                .to_vec::<u16>()
                .unwrap(),
            [0, 1, 2]
        );
    }
}

/// `Nx.Type.to_aggregate`: integer sums and products keep 32 bits (and wrap there); 64-bit
/// stays 64-bit. `argmax`/`argmin` answer s32 unless `type:` says otherwise, and
/// `tie_break: :high` picks the last of equal extremes (Nx's documented examples).
#[test]
fn aggregate_types_and_argmax_options_follow_nx() {
    use tensorbook::TieBreak;
    for d in devices() {
        let place = on(d);
        let s32 = place.from_vec(vec![1i32, 2, 3], &[3]).unwrap();
        let sum = s32.sum(..).unwrap();
        assert_eq!(
            (sum.dtype(), sum.to_scalar::<i32>().unwrap()),
            (DType::S32, 6)
        );
        let big = place.from_vec(vec![i32::MAX, 1], &[2]).unwrap();
        assert_eq!(
            big.sum(..).unwrap().to_scalar::<i32>().unwrap(),
            i32::MIN,
            "s32 sums wrap as Nx's do"
        );
        let product = s32.product([0]).unwrap();
        assert_eq!(product.dtype(), DType::S32);
        let s64 = place.from_vec(vec![1i64, 2], &[2]).unwrap();
        assert_eq!(s64.sum(..).unwrap().dtype(), DType::S64);
        let f = place.from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        assert_eq!(f.sum(..).unwrap().dtype(), DType::F32);

        let t = place
            .from_vec(vec![4i32, 2, 3, 1, -5, 3, 6, 2, 3, 4, 8, 3], &[2, 2, 3])
            .unwrap();
        let i32s = |t: Tensor| {
            assert_eq!(t.dtype(), DType::S32, "{t:?}");
            t.to_vec::<i32>().unwrap()
        };
        assert_eq!(i32s(t.argmax(..).unwrap()), [10]);
        assert_eq!(i32s(t.argmax(0).unwrap()), [1, 0, 0, 1, 1, 0]);
        assert_eq!(i32s(t.argmax(1).unwrap()), [0, 0, 0, 0, 1, 0]);
        assert_eq!(i32s(t.argmax(2).unwrap()), [0, 2, 0, 1]);
        let high = t.argmax_with(1, false, TieBreak::High, DType::S64).unwrap();
        assert_eq!(high.dtype(), DType::S64);
        assert_eq!(high.to_vec::<i64>().unwrap(), [0, 0, 1, 0, 1, 1]);
        assert_eq!(t.argmax_keep(1).unwrap().shape(), &[2, 1, 3]);
        // Without an axis the result is a scalar whatever keep_axis says.
        assert_eq!(t.argmax_keep(..).unwrap().shape(), &[] as &[usize]);
        let vector = place.from_vec(vec![3i32, 9, 1], &[3]).unwrap();
        assert_eq!(vector.argmax_keep(..).unwrap().shape(), &[] as &[usize]);
        assert_eq!(vector.argmax_keep(0).unwrap().shape(), &[1]);
        assert_eq!(i32s(t.argmin(..).unwrap()), [4]);
        assert_eq!(i32s(t.argmin(0).unwrap()), [0, 0, 0, 0, 0, 0]);
        assert_eq!(i32s(t.argmin(1).unwrap()), [1, 1, 0, 1, 0, 0]);
        assert_eq!(i32s(t.argmin(2).unwrap()), [1, 1, 1, 2]);
        let high = t.argmin_with(1, false, TieBreak::High, DType::U8).unwrap();
        assert_eq!(high.to_vec::<u8>().unwrap(), [1, 1, 1, 1, 0, 1]);
        let nan = place.from_vec(vec![2.0f32, f32::NAN, 4.0], &[3]).unwrap();
        assert_eq!(i32s(nan.argmax(..).unwrap()), [1]);
        let err = t
            .argmax_with(.., false, TieBreak::Low, DType::F32)
            .unwrap_err()
            .to_string();
        assert!(err.contains("argmax") && err.contains("f32"), "{err}");
    }
}

/// `Nx.dot/2`, `dot/4` and `dot/6` as documented: the last axis of the left meets the
/// second-to-last of the right and every other axis stays; contraction and batch axes pair
/// in order; the errors are Nx's. `matmul` keeps NumPy's broadcasting batches.
#[test]
fn dot_follows_nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let v = |x: Vec<i32>, s: &[usize]| place.from_vec(x, s).unwrap();
        let ints = |t: Tensor| {
            assert_eq!(t.dtype(), DType::S32, "{t:?}");
            (t.shape().to_vec(), t.to_vec::<i32>().unwrap())
        };
        let cube = v(
            vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            &[2, 3, 3],
        );
        let right = v(vec![1, 2, 3, 3, 4, 5, 5, 6, 7], &[1, 3, 3]);
        let (shape, values) = ints(cube.dot(&right).unwrap());
        assert_eq!(shape, [2, 3, 1, 3]);
        assert_eq!(
            values,
            [22, 28, 34, 49, 64, 79, 76, 100, 124, 22, 28, 34, 49, 64, 79, 76, 100, 124]
        );
        let left = v(vec![1, 2, 3, 4, 5, 6, 7, 8], &[2, 2, 2]);
        assert_eq!(
            ints(left.dot(&v(vec![5, 10], &[2])).unwrap()),
            (vec![2, 2], vec![25, 55, 85, 115])
        );
        assert_eq!(
            ints(
                v(vec![5, 10], &[2])
                    .dot(&v(vec![1, 2, 3, 4, 5, 6], &[2, 3]))
                    .unwrap()
            ),
            (vec![3], vec![45, 60, 75])
        );
        let mixed = v(vec![1, 2, 3, 4, 5, 6], &[2, 3])
            .dot(
                &place
                    .from_vec(vec![7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0], &[3, 2])
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(mixed.dtype(), DType::F32);
        assert_eq!(mixed.to_vec::<f32>().unwrap(), [58.0, 64.0, 139.0, 154.0]);

        let t1 = v(vec![1, 2, 3, 4], &[2, 2]);
        let t2 = v(vec![10, 20, 30, 40], &[2, 2]);
        let four = |a: isize, b: isize| ints(t1.dot_axes(&[a], &t2, &[b]).unwrap()).1;
        assert_eq!(four(0, 0), [100, 140, 140, 200]);
        assert_eq!(four(0, 1), [70, 150, 100, 220]);
        assert_eq!(four(1, 0), [70, 100, 150, 220]);
        assert_eq!(four(1, 1), [50, 110, 110, 250]);
        assert_eq!(
            ints(t1.dot_axes(&[0, 1], &t2, &[0, 1]).unwrap()),
            (vec![], vec![300])
        );
        let (shape, values) = ints(t1.dot_axes(&[], &t2, &[]).unwrap());
        assert_eq!(shape, [2, 2, 2, 2]);
        assert_eq!(&values[..8], [10, 20, 30, 40, 20, 40, 60, 80]);
        let f1 = place
            .from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3])
            .unwrap();
        let f2 = place
            .from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], &[3, 2])
            .unwrap();
        assert_eq!(
            f1.dot_axes(&[0, 1], &f2, &[1, 0])
                .unwrap()
                .to_scalar::<f32>()
                .unwrap(),
            50.0
        );

        let u = v(vec![1, 2], &[2, 1, 1]);
        let w = v(vec![3, 4], &[2, 1, 1]);
        assert_eq!(
            ints(u.dot_general(&[2], &[0], &w, &[2], &[0]).unwrap()),
            (vec![2, 1, 1], vec![3, 8])
        );
        let u = v(vec![1, 1, 2, 2], &[2, 1, 2]);
        let w = v(vec![3, 3, 4, 4], &[2, 2, 1]);
        assert_eq!(
            ints(u.dot_general(&[2], &[0], &w, &[1], &[0]).unwrap()),
            (vec![2, 1, 1], vec![6, 16])
        );
        let message = |r: tensorbook::Result<Tensor>| r.unwrap_err().to_string();
        let cases = [
            (
                message(u.dot_general(&[2], &[0], &w, &[1], &[])),
                "right tensor must be batched if left tensor is batched",
            ),
            (
                message(u.dot_general(&[2], &[], &w, &[1], &[0])),
                "left tensor must be batched if right tensor is batched",
            ),
            (
                message(u.dot_general(&[2], &[1], &w, &[1], &[0])),
                "batch axes must be successive dimensions starting from 0, got [1]",
            ),
            (
                message(u.dot_general(&[0], &[0], &w, &[1], &[0])),
                "cannot be in contract axes",
            ),
            (
                message(v(vec![1, 2, 3], &[3]).dot(&v(vec![1, 2], &[2]))),
                "dimension 0 of left-side (3) does not equal dimension 0 of right-side (2)",
            ),
        ];
        for (got, want) in cases {
            assert!(got.contains(want), "{got} should say {want}");
        }

        assert_eq!(
            ints(
                v(vec![1, 2, 3], &[3])
                    .outer(&v(vec![10, 20], &[2]))
                    .unwrap()
            ),
            (vec![3, 2], vec![10, 20, 20, 40, 30, 60])
        );
        let batched = place
            .iota(DType::F32, &[8, 1, 4, 5], None)
            .unwrap()
            .matmul(&place.iota(DType::F32, &[3, 5, 6], None).unwrap())
            .unwrap();
        assert_eq!(batched.shape(), &[8, 3, 4, 6]);
    }
}

/// `Nx.tri`, `tril`, `triu`, `take_diagonal`, `make_diagonal` and `put_diagonal` on Nx's
/// documented examples, errors included.
#[test]
fn triangles_and_diagonals_follow_nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let v = |x: Vec<i32>, s: &[usize]| place.from_vec(x, s).unwrap();
        let ints = |t: Tensor| (t.shape().to_vec(), t.to_vec::<i32>().unwrap());
        let m = v((1..=9).collect(), &[3, 3]);
        assert_eq!(ints(m.tril(0).unwrap()).1, [1, 0, 0, 4, 5, 0, 7, 8, 9]);
        assert_eq!(ints(m.tril(1).unwrap()).1, [1, 2, 0, 4, 5, 6, 7, 8, 9]);
        assert_eq!(ints(m.triu(0).unwrap()).1, [1, 2, 3, 0, 5, 6, 0, 0, 9]);
        assert_eq!(ints(m.triu(1).unwrap()).1, [0, 2, 3, 0, 0, 6, 0, 0, 0]);
        let batch = place.iota(DType::S32, &[2, 3, 4], None).unwrap();
        let (shape, low) = ints(batch.tril(0).unwrap());
        assert_eq!(shape, [2, 3, 4]);
        assert_eq!(&low[12..], [12, 0, 0, 0, 16, 17, 0, 0, 20, 21, 22, 0]);
        let err = place
            .iota(DType::S32, &[6], None)
            .unwrap()
            .tril(0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("at least 2 dimensions"), "{err}");
        let tri = place.tri(3, 3, 0).unwrap();
        assert_eq!(tri.dtype(), DType::U8);
        assert_eq!(tri.to_vec::<u8>().unwrap(), [1, 0, 0, 1, 1, 0, 1, 1, 1]);
        assert_eq!(
            place.tri(3, 3, 1).unwrap().to_vec::<u8>().unwrap(),
            [1, 1, 0, 1, 1, 1, 1, 1, 1]
        );

        let iota = |s: &[usize]| place.iota(DType::S32, s, None).unwrap();
        assert_eq!(
            ints(iota(&[3, 3]).take_diagonal(0).unwrap()),
            (vec![3], vec![0, 4, 8])
        );
        assert_eq!(ints(iota(&[3, 3]).take_diagonal(1).unwrap()).1, [1, 5]);
        assert_eq!(ints(iota(&[3, 3]).take_diagonal(-1).unwrap()).1, [3, 7]);
        assert_eq!(
            ints(iota(&[3, 2, 2]).take_diagonal(0).unwrap()),
            (vec![3, 2], vec![0, 3, 4, 7, 8, 11])
        );
        assert_eq!(
            ints(iota(&[3, 2, 2]).take_diagonal(-1).unwrap()),
            (vec![3, 1], vec![2, 6, 10])
        );
        let message = |r: tensorbook::Result<Tensor>| r.unwrap_err().to_string();
        for (got, want) in [
            (
                message(iota(&[3]).take_diagonal(0)),
                "take_diagonal/2 expects tensor of rank 2 or higher, got tensor of rank: 1",
            ),
            (
                message(iota(&[3, 3]).take_diagonal(3)),
                "offset must be less than length of axis 1 when positive, got: 3",
            ),
            (
                message(iota(&[3, 3]).take_diagonal(-4)),
                "absolute value of offset must be less than length of axis 0 when negative, got: -4",
            ),
            (
                message(v(vec![0, 0, 0, 1], &[2, 2]).make_diagonal(0)),
                "make_diagonal/2 expects tensor of rank 1, got tensor of rank: 2",
            ),
            (
                message(iota(&[3, 3, 3]).put_diagonal(&iota(&[3]), 0)),
                "put_diagonal/3 expects tensor of rank 2, got tensor of rank: 3",
            ),
            (
                message(iota(&[3, 3]).put_diagonal(&iota(&[3, 3]), 0)),
                "put_diagonal/3 expects diagonal of rank 1, got tensor of rank: 2",
            ),
            (
                message(iota(&[3, 3]).put_diagonal(&iota(&[2]), 0)),
                "expected diagonal tensor of length: 3, got diagonal tensor of length: 2",
            ),
            (
                message(iota(&[3, 3]).put_diagonal(&iota(&[3]), 1)),
                "expected diagonal tensor of length: 2, got diagonal tensor of length: 3",
            ),
        ] {
            assert!(got.contains(want), "{got} should say {want}");
        }

        let (shape, square) = ints(v(vec![1, 2, 3, 4], &[4]).make_diagonal(0).unwrap());
        assert_eq!(shape, [4, 4]);
        assert_eq!(square, [1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 4]);
        let (_, above) = ints(v(vec![1, 2, 3], &[3]).make_diagonal(1).unwrap());
        assert_eq!(above, [0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 3, 0, 0, 0, 0]);
        let (shape, far) = ints(v(vec![1, 2, 3], &[3]).make_diagonal(-4).unwrap());
        assert_eq!(shape, [7, 7]);
        assert_eq!(
            (far[28], far[36], far[44], far.iter().sum::<i32>()),
            (1, 2, 3, 6)
        );

        let zeros = |s: &[usize]| place.zeros(DType::S32, s).unwrap();
        assert_eq!(
            ints(
                zeros(&[4, 3])
                    .put_diagonal(&v(vec![1, 2, 3], &[3]), 0)
                    .unwrap()
            )
            .1,
            [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]
        );
        assert_eq!(
            ints(
                zeros(&[4, 3])
                    .put_diagonal(&v(vec![1, 2], &[2]), 1)
                    .unwrap()
            )
            .1,
            [0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(
            ints(
                zeros(&[4, 3])
                    .put_diagonal(&v(vec![1, 2, 3], &[3]), -1)
                    .unwrap()
            )
            .1,
            [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        );
    }
}

/// Axis names (Nx's `names:`): carried by the ops as `Nx.Shape` carries them, taken wherever
/// an axis is, printed in the signature; the examples are Nx's own.
#[test]
fn axis_names_follow_nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let v = |x: Vec<i32>, s: &[usize]| place.from_vec(x, s).unwrap();
        let iota = |s: &[usize]| place.iota(DType::S32, s, None).unwrap();
        let typed = |t: &Tensor| format!("{}{}", t.dtype(), t.shape_text());
        let xy = iota(&[2, 3]).rename(["x", "y"]).unwrap();
        assert_eq!(typed(&xy), "s32[x: 2][y: 3]", "on {d}");
        assert!(format!("{xy:?}").contains("s32[x: 2][y: 3]"));
        assert_eq!(xy.names(), [Some("x".to_string()), Some("y".to_string())]);
        let batch = iota(&[3, 3]).rename([Some("batch"), None]).unwrap();
        assert_eq!(typed(&batch), "s32[batch: 3][3]");
        // Elementwise: a number keeps the names; broadcast axes take the other side's name.
        let data = v(vec![1, 2, 3], &[3]).rename(["data"]).unwrap();
        assert_eq!(typed(&data.add(1.0).unwrap()), "f32[data: 3]");
        assert_eq!(typed(&data.negate().unwrap()), "s32[data: 3]");
        let left = v(vec![1, 2, 3, 4], &[2, 2]).rename(["x", "y"]).unwrap();
        let right = v(vec![10, 20, 30, 40], &[2, 2])
            .rename([None, Some("y")])
            .unwrap();
        assert_eq!(typed(&left.add(&right).unwrap()), "s32[x: 2][y: 2]");
        let col = v(vec![1, 2], &[2, 1]).rename([None, Some("y")]).unwrap();
        let row = v(vec![10, 20], &[1, 2]).rename([Some("x"), None]).unwrap();
        assert_eq!(typed(&col.subtract(&row).unwrap()), "s32[x: 2][y: 2]");
        let flat = v(vec![-1, 0, 1], &[3]).rename(["data"]).unwrap();
        let column = v(vec![-1, 0, 1], &[3, 1]);
        assert_eq!(typed(&flat.logical_or(&column).unwrap()), "u8[3][data: 3]");
        let clash = v(vec![1, 2], &[2]).rename(["x"]).unwrap();
        let err = clash
            .add(&v(vec![1, 2], &[2]).rename(["y"]).unwrap())
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("cannot merge name :x on axis 0 with name :y on axis 0"),
            "{err}"
        );
        // Reductions take names and drop (or keep) the reduced axes' names.
        let xyz = iota(&[2, 2, 3]).rename(["x", "y", "z"]).unwrap();
        let sum = xyz.sum(["x"]).unwrap();
        assert_eq!(typed(&sum), "s32[y: 2][z: 3]");
        assert_eq!(sum.to_vec::<i32>().unwrap(), [6, 8, 10, 12, 14, 16]);
        assert_eq!(typed(&xyz.sum("y").unwrap()), "s32[x: 2][z: 3]");
        assert_eq!(typed(&xyz.mean_keep(-1).unwrap()), "f32[x: 2][y: 2][z: 1]");
        assert_eq!(
            typed(&xyz.reduce_min_keep(["x", "z"]).unwrap()),
            "s32[x: 1][y: 2][z: 1]"
        );
        assert_eq!(typed(&xyz.median("x").unwrap()), "f32[y: 2][z: 3]");
        assert_eq!(typed(&xyz.argmin(1).unwrap()), "s32[x: 2][z: 3]");
        assert_eq!(
            typed(&xyz.argmax_keep("z").unwrap()),
            "s32[x: 2][y: 2][z: 1]"
        );
        assert_eq!(typed(&xyz.argmax(..).unwrap()), "s32");
        let all = v(vec![-1, 0, 1, 2, 3, 4], &[2, 3])
            .rename(["x", "y"])
            .unwrap()
            .all(["y"])
            .unwrap();
        assert_eq!(
            (typed(&all), all.to_vec::<u8>().unwrap()),
            ("u8[x: 2]".to_string(), vec![0, 1])
        );
        let missing = xyz.sum("w").unwrap_err();
        assert!(
            missing
                .to_string()
                .contains("name :w not found in tensor with names [:x, :y, :z]"),
            "{missing}"
        );
        // Products: the free axes' names, left then right.
        let ij = v(vec![1, 2, 3, 4, 5, 6], &[2, 3])
            .rename(["i", "j"])
            .unwrap();
        let kl = v(vec![7, 8, 9, 10, 11, 12], &[3, 2])
            .rename(["x", "y"])
            .unwrap();
        let product = ij.dot(&kl).unwrap();
        assert_eq!(typed(&product), "s32[i: 2][y: 2]");
        assert_eq!(product.to_vec::<i32>().unwrap(), [58, 64, 139, 154]);
        let ijk = iota(&[2, 2, 2]).rename(["i", "j", "k"]).unwrap();
        let x = v(vec![5, 10], &[2]).rename(["x"]).unwrap();
        assert_eq!(typed(&ijk.dot(&x).unwrap()), "s32[i: 2][j: 2]");
        let cube = iota(&[2, 3, 3]).rename(["x", "y", "z"]).unwrap();
        let other = iota(&[1, 3, 3]).rename(["i", "j", "k"]).unwrap();
        assert_eq!(
            typed(&cube.dot(&other).unwrap()),
            "s32[x: 2][y: 3][i: 1][k: 3]"
        );
        let twice = ij.dot(&v(vec![1; 6], &[3, 2]).rename(["j", "i"]).unwrap());
        assert!(twice.unwrap_err().to_string().contains("duplicate names"));
        let outer = v(vec![1, 2, 3], &[3])
            .rename(["x"])
            .unwrap()
            .outer(&v(vec![100], &[]))
            .unwrap();
        assert_eq!(typed(&outer), "s32[x: 3][1]");
        // Layout: transpose permutes names, reshape and broadcast drop them, slices keep them.
        let bxy = iota(&[2, 3, 4]).rename(["batch", "x", "y"]).unwrap();
        assert_eq!(
            typed(&bxy.transpose([2, 1, 0]).unwrap()),
            "s32[y: 4][x: 3][batch: 2]"
        );
        let zyx = iota(&[2, 3, 4])
            .rename(["x", "y", "z"])
            .unwrap()
            .transpose(..);
        let zyx = zyx.unwrap();
        assert_eq!(typed(&zyx), "s32[z: 4][y: 3][x: 2]");
        assert_eq!(zyx.to_vec::<i32>().unwrap()[..6], [0, 12, 4, 16, 8, 20]);
        let mixed = bxy
            .transpose([Axis::from(2), 1.into(), "batch".into()])
            .unwrap();
        assert_eq!(typed(&mixed), "s32[y: 4][x: 3][batch: 2]");
        assert_eq!(
            typed(&bxy.transpose(["y", "batch", "x"]).unwrap()),
            "s32[y: 4][batch: 2][x: 3]"
        );
        let short = iota(&[2, 2])
            .rename(["batch", "x"])
            .unwrap()
            .transpose(["batch"]);
        assert!(short
            .unwrap_err()
            .to_string()
            .contains("expected length of permutation (1) to match rank of shape (2)"),);
        let squeezed = v(vec![1, 2, 3], &[1, 3]).rename(["x", "y"]).unwrap();
        assert_eq!(typed(&squeezed.squeeze(["x"]).unwrap()), "s32[y: 3]");
        let columns = v(vec![1, 2], &[2, 1]).rename(["x", "y"]).unwrap();
        assert_eq!(typed(&columns.squeeze("y").unwrap()), "s32[x: 2]");
        let rows = v(vec![1, 2, 3, 4, 5, 6], &[2, 3])
            .rename(["x", "y"])
            .unwrap();
        let flipped = rows.reverse(["x"]).unwrap();
        assert_eq!(
            (typed(&flipped), flipped.to_vec::<i32>().unwrap()),
            ("s32[x: 2][y: 3]".to_string(), vec![4, 5, 6, 1, 2, 3])
        );
        assert_eq!(
            rows.reverse("y").unwrap().to_vec::<i32>().unwrap(),
            [3, 2, 1, 6, 5, 4]
        );
        let picked = rows
            .gather(&place.from_vec(vec![2i64, 0], &[2, 1]).unwrap(), ["y"])
            .unwrap();
        assert_eq!(picked.to_vec::<i32>().unwrap(), [3, 6, 1, 4]);
        assert_eq!(
            typed(&bxy.flatten(["x", "y"]).unwrap()),
            "s32[batch: 2][12]"
        );
        assert_eq!(typed(&bxy.reshape(&[6, 4]).unwrap()), "s32[6][4]");
        assert_eq!(typed(&left.broadcast(&[2, 2]).unwrap()), "s32[2][2]");
        assert_eq!(typed(&bxy.flatten([1, 2]).unwrap()), "s32[batch: 2][12]");
        let xy25 = iota(&[2, 5]).rename(["x", "y"]).unwrap();
        assert_eq!(
            typed(&xy25.slice_along_axis(0, 1, "x").unwrap()),
            "s32[x: 1][y: 5]"
        );
        assert_eq!(typed(&data.pad(0, &[(1, 1, 0)]).unwrap()), "s32[data: 5]");
        assert_eq!(typed(&left.clip(2, 4).unwrap()), "s32[x: 2][y: 2]");
        let joined = Tensor::concatenate(
            &[
                iota(&[1, 3, 2]).rename(["x", "y", "z"]).unwrap(),
                iota(&[1, 1, 2]).rename(["x", "y", "z"]).unwrap(),
                iota(&[1, 2, 2]).rename(["x", "y", "z"]).unwrap(),
            ],
            "y",
        )
        .unwrap();
        assert_eq!(typed(&joined), "s32[x: 1][y: 6][z: 2]");
        let sorted = iota(&[4, 3, 2])
            .rename(["x", "y", "z"])
            .unwrap()
            .sort("x", Direction::Desc)
            .unwrap();
        assert_eq!(typed(&sorted), "s32[x: 4][y: 3][z: 2]");
        assert_eq!(
            typed(&xy.cumulative_sum("y", false).unwrap()),
            "s32[x: 2][y: 3]"
        );
        assert_eq!(xy.axis_size("y").unwrap(), 3);
        let bxy_named = iota(&[100, 10, 20]).rename(["batch", "x", "y"]).unwrap();
        assert_eq!(bxy_named.axis_index("x").unwrap(), 1);
        assert_eq!(bxy_named.axis_index(-1).unwrap(), 2);
        assert!(bxy_named.axis_index("z").is_err() && bxy_named.axis_index(3).is_err());
        let plain = iota(&[3, 2]);
        let rows = plain.rename(["rows", "columns"]).unwrap();
        assert!(plain.compatible(&rows) && rows.compatible(&rows));
        assert!(!rows.compatible(&plain.rename(["rows", "cols"]).unwrap()));
        assert!(!plain.compatible(&iota(&[2, 3])));
        assert_eq!(typed(&xy.new_axis(1).unwrap()), "s32[x: 2][1][y: 3]");
        assert_eq!(
            typed(&xy.new_axis(0).unwrap().squeeze(..).unwrap()),
            "s32[x: 2][y: 3]"
        );
        let choice = v(vec![0], &[]).select(
            &v(vec![1, 2], &[1, 2]).rename(["x", "y"]).unwrap(),
            &v(vec![3, 4], &[2, 1]).rename(["x", "y"]).unwrap(),
        );
        assert_eq!(typed(&choice.unwrap()), "s32[x: 2][y: 2]");
        // Names travel to other devices and through a compiled function.
        assert_eq!(
            typed(&xy.backend_copy(Device::BINARY).unwrap()),
            "s32[x: 2][y: 3]"
        );
        let f = tensorbook::jit(|a: &[Tensor]| a[0].exp()?.sum("y"));
        let out = f.call([&xy]).unwrap();
        assert_eq!(typed(&out), "f32[x: 2]", "jit on {d}");
        assert!(xy.rename(["x"]).is_err());
    }
}
