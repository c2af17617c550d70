//! `tensorbook::random` against Nx's documented examples (`Nx.Random`'s doctests) and JAX's
//! threefry (values printed by JAX 0.10.2 in `.venv` with `jax_threefry_partitionable` off, the
//! scheme Nx implements), on every device, eagerly and inside `jit`, where the numbers must
//! come from the key argument of each call, not from the trace.

mod common;

use common::enable_sim;
use tensorbook::{jit, on, random, DType, Device, Tensor};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

fn key_on(d: Device, seed: u64) -> Tensor {
    random::key_on(&on(d), seed).unwrap()
}

fn u32s(t: &Tensor) -> Vec<u32> {
    assert_eq!(t.dtype(), DType::U32, "{t:?}");
    t.to_vec::<u32>().unwrap()
}

#[test]
fn keys_split_and_fold_as_nx_and_jax() {
    for d in devices() {
        assert_eq!(u32s(&key_on(d, 12)), [0, 12]);
        assert_eq!(u32s(&key_on(d, 999_999_999_999)), [232, 3_567_587_327]);
        let key = key_on(d, 1701);
        let two = random::split(&key, 2).unwrap();
        assert_eq!(two.shape(), &[2, 2]);
        assert_eq!(
            u32s(&two),
            [56_197_195, 1_801_093_307, 961_309_823, 1_704_866_707],
            "split on {d}"
        );
        assert_eq!(
            u32s(&random::split(&key, 4).unwrap()),
            [
                4_000_152_724,
                2_030_591_747,
                2_287_976_877,
                2_598_630_646,
                2_426_625_787,
                580_268_518,
                3_136_765_380,
                433_355_682
            ]
        );
        // An odd number of words (JAX's `random.bits(key, (5,))`): the counter's padding word.
        assert_eq!(
            u32s(&random::bits(&key, &[5], 32).unwrap()),
            [
                927_208_350,
                3_916_705_582,
                3_729_489_864,
                676_898_860,
                3_164_047_411
            ]
        );
        let k42 = key_on(d, 42);
        assert_eq!(
            u32s(&random::fold_in(&k42, 99).unwrap()),
            [2_015_327_502, 1_351_855_566]
        );
        assert_eq!(
            u32s(&random::fold_in(&k42, 1234).unwrap()),
            [1_356_445_167, 2_917_756_949]
        );
        let data = on(d).from_vec(vec![1i32, 99, 1234, 13], &[2, 2]).unwrap();
        let folded = random::fold_in(&k42, &data).unwrap();
        assert_eq!(folded.shape(), &[2, 2, 2]);
        assert_eq!(
            u32s(&folded),
            [
                64_467_757,
                2_916_123_636,
                2_015_327_502,
                1_351_855_566,
                1_356_445_167,
                2_917_756_949,
                3_514_951_389,
                229_662_949
            ]
        );
        assert_eq!(folded.device(), d);
    }
}

/// Half-precision draws as Nx makes them (`random_bits` with `bit_width: 16` is each threefry
/// word cut to its low 16 bits; JAX packs two draws per word, so its own f16 draws differ):
/// the top mantissa bits of each, the scaling computed in the half type. The expected bits are
/// Nx's recipe run by JAX 0.10.2 (threefry words of `split(key)[1]`, then Nx's steps in
/// jnp.float16/bfloat16); `normal` to one unit in the last place (erf⁻¹ in f32 is not XLA's
/// polynomial), on every device.
#[test]
fn half_precision_draws_follow_nx() {
    for d in devices() {
        let draw = random::split(&key_on(d, 1701), 2)
            .unwrap()
            .slice_along_axis(1, 1, 0)
            .unwrap()
            .reshape(&[2])
            .unwrap();
        // Per dtype: uniform [0, 1) of 5, uniform [-2, 3) of 4, normal of 4, as bits.
        type Expected = (DType, [u16; 5], [u16; 4], [u16; 4]);
        let cases: [Expected; 2] = [
            (
                DType::F16,
                [0x3a08, 0x3930, 0x3ab0, 0x32e0, 0x2e40],
                [0xbd4e, 0xbd3f, 0xb91a, 0x3d8e],
                [0xbc69, 0xbc5c, 0xb8d6, 0x3764],
            ),
            (
                DType::BF16,
                [0x3f40, 0x3f26, 0x3f56, 0x3e58, 0x3dc0],
                [0xbfab, 0xbfab, 0xbf2c, 0x3fae],
                [0xbf8d, 0xbf8d, 0xbf1f, 0x3ee6],
            ),
        ];
        let words = |t: Tensor| -> Vec<u16> {
            t.to_binary()
                .unwrap()
                .chunks(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect()
        };
        for (dtype, unit, ranged, normal) in cases {
            let u = random::uniform_split(&draw, 0.0, 1.0, &[5], dtype).unwrap();
            assert_eq!(u.dtype(), dtype);
            assert_eq!(words(u), unit, "uniform {dtype} on {d}");
            let r = random::uniform_split(&draw, -2.0, 3.0, &[4], dtype).unwrap();
            assert_eq!(words(r), ranged, "uniform [-2, 3) {dtype} on {d}");
            let n = words(random::normal_split(&draw, 0.0, 1.0, &[4], dtype).unwrap());
            for (ours, jax) in n.iter().zip(normal) {
                assert!(
                    ours.abs_diff(jax) <= 1,
                    "normal {dtype} on {d}: {n:x?} vs JAX {normal:x?}"
                );
            }
            let (g, _) = random::gumbel(&draw, &[64], dtype).unwrap();
            assert!(
                g.is_nan()
                    .unwrap()
                    .any(..)
                    .unwrap()
                    .to_scalar::<u8>()
                    .unwrap()
                    == 0
            );
        }
    }
}

#[test]
fn distributions_follow_nx_documented_examples() {
    for d in devices() {
        let key = key_on(d, 1701);
        let (x, next) = random::uniform(&key, 0.0, 1.0, &[], DType::F32).unwrap();
        assert_eq!(x.to_scalar::<f32>().unwrap(), 0.972_864_4, "uniform on {d}");
        assert_eq!(
            u32s(&next),
            [56_197_195, 1_801_093_307],
            "the key to use next"
        );
        // JAX: uniform(split(key)[1], (3,)).
        let draw = random::split(&key, 2)
            .unwrap()
            .slice_along_axis(1, 1, 0)
            .unwrap();
        let draw = draw.reshape(&[2]).unwrap();
        assert_eq!(
            random::uniform_split(&draw, 0.0, 1.0, &[3], DType::F32)
                .unwrap()
                .to_vec::<f32>()
                .unwrap(),
            [0.021_928_906, 0.588_917_85, 0.894_779_44]
        );

        let (n, _) = random::normal(&key_on(d, 42), 0.0, 1.0, &[], DType::F32).unwrap();
        let n = n.to_scalar::<f32>().unwrap();
        assert!((n - 1.369_469_5).abs() <= 2e-7, "normal on {d}: {n}");
        let (wide, _) = random::normal(&key_on(d, 1337), 10.0, 5.0, &[1000], DType::F32).unwrap();
        let mean = wide.mean(..).unwrap().to_scalar::<f32>().unwrap();
        let std = wide
            .standard_deviation(.., 0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!((mean - 9.700_222).abs() < 1e-4, "mean {mean} on {d}");
        assert!(
            (std - 5.051_416_4).abs() < 1e-4,
            "standard deviation {std} on {d}"
        );

        let (r, _) = random::randint(&key, 1, 100, &[], DType::S32).unwrap();
        assert_eq!(
            (r.dtype(), r.to_scalar::<i32>().unwrap()),
            (DType::S32, 91),
            "randint on {d}"
        );
        let (r, _) = random::randint(&key, 1, 100, &[3, 2], DType::U32).unwrap();
        assert_eq!(u32s(&r), [9, 20, 19, 6, 71, 15]);

        let (f64s, _) = random::uniform(&key, -2.0, 3.0, &[1000], DType::F64).unwrap();
        let v = f64s.to_vec::<f64>().unwrap();
        assert!(v.iter().all(|&x| (-2.0..3.0).contains(&x)));
        let (u64s, _) = random::randint(&key, -5, 5, &[1000], DType::S64).unwrap();
        let v = u64s.to_vec::<i64>().unwrap();
        assert!(v.iter().all(|&x| (-5..5).contains(&x)) && v.contains(&-5) && v.contains(&4));
    }
}

#[test]
fn shuffle_choice_and_gumbel_follow_nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let ints = |t: &Tensor| t.to_vec::<i32>().unwrap();
        let rows = place.iota(DType::S32, &[3, 4], Some(0)).unwrap();
        let (shuffled, _) = random::shuffle(&key_on(d, 42), &rows, 0, false).unwrap();
        assert_eq!(
            ints(&shuffled),
            [2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1],
            "shuffle on {d}"
        );
        let columns = place.iota(DType::S32, &[3, 4], Some(1)).unwrap();
        let (shuffled, _) = random::shuffle(&key_on(d, 10), &columns, 1, true).unwrap();
        assert_eq!(ints(&shuffled), [2, 1, 3, 0, 3, 0, 1, 2, 2, 3, 0, 1]);

        let t = place.iota(DType::S32, &[4, 3], None).unwrap();
        let k1 = key_on(d, 1);
        let (drawn, _) = random::choice(&k1, &t, 4, Some(0), true).unwrap();
        assert_eq!(
            ints(&drawn),
            [6, 7, 8, 9, 10, 11, 6, 7, 8, 0, 1, 2],
            "choice on {d}"
        );
        let (drawn, _) = random::choice(&k1, &t, 4, Some(0), false).unwrap();
        assert_eq!(ints(&drawn), [3, 4, 5, 9, 10, 11, 6, 7, 8, 0, 1, 2]);
        let k2 = key_on(d, 2);
        let flat = place.iota(DType::S32, &[3, 2], None).unwrap();
        assert_eq!(
            ints(&random::choice(&k2, &flat, 1, None, true).unwrap().0),
            [4]
        );
        assert_eq!(
            ints(&random::choice(&k2, &flat, 6, None, false).unwrap().0),
            [2, 0, 4, 5, 1, 3]
        );

        let p = place.from_vec(vec![0.1f32, 0.7, 0.2], &[3]).unwrap();
        let (drawn, _) = random::choice_with_probabilities(&k1, &t, &p, 3, Some(1), true).unwrap();
        assert_eq!(
            ints(&drawn),
            [1, 0, 1, 4, 3, 4, 7, 6, 7, 10, 9, 10],
            "p on {d}"
        );
        let (drawn, _) = random::choice_with_probabilities(&k1, &t, &p, 3, Some(1), false).unwrap();
        assert_eq!(ints(&drawn), [1, 2, 0, 4, 5, 3, 7, 8, 6, 10, 11, 9]);
        let t23 = place.iota(DType::S32, &[2, 3], None).unwrap();
        let p6 = place
            .from_vec(vec![0.01f32, 0.1, 0.19, 0.6, 0.05, 0.05], &[6])
            .unwrap();
        let pick = |samples, replace| {
            ints(
                &random::choice_with_probabilities(&k2, &t23, &p6, samples, None, replace)
                    .unwrap()
                    .0,
            )
        };
        assert_eq!(pick(1, true), [3]);
        assert_eq!(pick(6, true), [3, 3, 3, 0, 3, 3]);
        assert_eq!(pick(6, false), [3, 1, 2, 5, 4, 0]);

        let (g, _) = random::gumbel(&k1, &[], DType::F32).unwrap();
        let g = g.to_scalar::<f32>().unwrap();
        assert!((g + 0.729_461).abs() < 1e-6, "gumbel {g} on {d}");
        let (g, _) = random::gumbel(&k1, &[2, 3], DType::F32).unwrap();
        let expected = [
            0.624_793_8,
            -0.217_407_18,
            0.767_832_76,
            0.777_840_44,
            4.089_530_5,
            0.302_909_02,
        ];
        for (x, e) in g.to_vec::<f32>().unwrap().iter().zip(expected) {
            assert!(
                (x - e).abs() <= 1e-6 * e.abs().max(1.0),
                "gumbel {x} vs {e} on {d}"
            );
        }
    }
}

/// The largest distance between the empirical CDF of `x` and `cdf` (the Kolmogorov-Smirnov
/// statistic), with `cdf` given as a tensor function of the sorted draws.
fn ks_statistic(x: &Tensor, cdf: impl Fn(&Tensor) -> Tensor) -> f64 {
    let n = x.size();
    let sorted = x
        .as_type(DType::F64)
        .unwrap()
        .sort(0, tensorbook::Direction::Asc)
        .unwrap();
    let f = cdf(&sorted).to_vec::<f64>().unwrap();
    f.iter()
        .enumerate()
        .map(|(i, &fi)| {
            (fi - i as f64 / n as f64)
                .abs()
                .max(((i + 1) as f64 / n as f64 - fi).abs())
        })
        .fold(0.0, f64::max)
}

/// Each distribution's moments and shape at a fixed key: a Kolmogorov-Smirnov bound (the 0.1%
/// critical value, 1.95/√n), a chi-square bound for `randint` (9 degrees of freedom, 0.1%:
/// 27.9), and `shuffle` and `choice` without replacement give permutations.
#[test]
fn draws_have_the_distributions_they_claim() {
    let place = on(Device::host(0));
    let key = random::key_on(&place, 2024).unwrap();
    let n = 100_000;
    let bound = 1.95 / (n as f64).sqrt();
    let stats = |t: &Tensor| {
        let t = t.as_type(DType::F64).unwrap();
        (
            t.mean(..).unwrap().to_scalar::<f64>().unwrap(),
            t.variance(.., 0).unwrap().to_scalar::<f64>().unwrap(),
        )
    };

    let (u, _) = random::uniform(&key, 0.0, 1.0, &[n], DType::F32).unwrap();
    let (mean, var) = stats(&u);
    assert!(
        (mean - 0.5).abs() < 0.005 && (var - 1.0 / 12.0).abs() < 0.002,
        "{mean} {var}"
    );
    let d = ks_statistic(&u, |s| s.clone());
    assert!(d < bound, "uniform: KS {d} >= {bound}");

    let (z, _) = random::normal(&key, 0.0, 1.0, &[n], DType::F64).unwrap();
    let (mean, var) = stats(&z);
    assert!(
        mean.abs() < 0.015 && (var - 1.0).abs() < 0.02,
        "{mean} {var}"
    );
    let phi = |s: &Tensor| {
        s.multiply(std::f64::consts::FRAC_1_SQRT_2)
            .unwrap()
            .erf()
            .unwrap()
            .add(1.0)
            .unwrap()
            .multiply(0.5)
            .unwrap()
    };
    let d = ks_statistic(&z, phi);
    assert!(d < bound, "normal: KS {d} >= {bound}");

    let (g, _) = random::gumbel(&key, &[n], DType::F64).unwrap();
    let (mean, var) = stats(&g);
    let euler = 0.577_215_664_9;
    let pi2_6 = std::f64::consts::PI.powi(2) / 6.0;
    assert!(
        (mean - euler).abs() < 0.02 && (var - pi2_6).abs() < 0.05,
        "{mean} {var}"
    );
    let gumbel_cdf = |s: &Tensor| {
        s.negate()
            .unwrap()
            .exp()
            .unwrap()
            .negate()
            .unwrap()
            .exp()
            .unwrap()
    };
    let d = ks_statistic(&g, gumbel_cdf);
    assert!(d < bound, "gumbel: KS {d} >= {bound}");

    let (r, _) = random::randint(&key, 0, 10, &[n], DType::S32).unwrap();
    let mut counts = [0f64; 10];
    for v in r.to_vec::<i32>().unwrap() {
        counts[v as usize] += 1.0;
    }
    let expected = n as f64 / 10.0;
    let chi2: f64 = counts
        .iter()
        .map(|c| (c - expected).powi(2) / expected)
        .sum();
    assert!(chi2 < 27.9, "randint: chi-square {chi2} over {counts:?}");

    let t = place.iota(DType::S32, &[1000], None).unwrap();
    let (shuffled, _) = random::shuffle(&key, &t, 0, false).unwrap();
    let order = shuffled.to_vec::<i32>().unwrap();
    assert_ne!(order, (0..1000).collect::<Vec<_>>(), "shuffled");
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..1000).collect::<Vec<_>>(), "a permutation");
    let (picked, _) = random::choice(&key, &t, 1000, None, false).unwrap();
    let mut picked = picked.to_vec::<i32>().unwrap();
    picked.sort_unstable();
    assert_eq!(
        picked,
        (0..1000).collect::<Vec<_>>(),
        "without replacement, each once"
    );
}

/// A compiled step that takes a key draws from that key when it runs: different keys give
/// different numbers from one cached program, equal to the eager ones.
#[test]
fn inside_jit_the_numbers_come_from_the_key_argument() {
    for d in devices() {
        let step = jit(|key: &Tensor| random::normal(key, 0.0, 1.0, &[4], DType::F32));
        let mut key = key_on(d, 7);
        let mut seen = Vec::new();
        let mut programs = Vec::new();
        for _ in 0..3 {
            let out = step.call(&key).unwrap();
            let (eager, eager_next) = random::normal(&key, 0.0, 1.0, &[4], DType::F32).unwrap();
            let compiled = out.0.to_vec::<f32>().unwrap();
            let expected = eager.to_vec::<f32>().unwrap();
            for (c, e) in compiled.iter().zip(&expected) {
                assert!((c - e).abs() <= 1e-6, "jit {c} vs eager {e} on {d}");
            }
            assert_eq!(u32s(&out.1), u32s(&eager_next));
            assert!(!seen.contains(&compiled), "a draw repeated on {d}");
            seen.push(compiled);
            key = out.1;
            programs.push(step.compilations().len());
        }
        // A binary key is weak: the first call runs where the session default is and returns
        // its key there, so that device's program may be a second one; then no more.
        assert_eq!(
            programs[1], programs[2],
            "one program for every key on {d}: {programs:?}"
        );
    }
}

#[test]
fn bad_keys_and_ranges_are_errors() {
    let place = on(Device::host(0));
    let not_a_key = place.from_vec(vec![1i32, 2], &[2]).unwrap();
    let err = random::split(&not_a_key, 2).unwrap_err().to_string();
    assert!(err.contains("u32[2]") && err.contains("s32"), "{err}");
    let key = random::key_on(&place, 1).unwrap();
    assert!(random::uniform(&key, 0.0, 1.0, &[2], DType::S32).is_err());
    assert!(random::randint(&key, 5, 5, &[2], DType::S32).is_err());
    assert!(random::randint(&key, 0, 5, &[2], DType::F32).is_err());
    assert!(random::bits(&key, &[2], 12).is_err());
    assert!(random::fold_in(&key, 1.5).is_err());
    assert!(random::split(&key, usize::MAX).is_err());
    let t = place.iota(DType::S32, &[3], None).unwrap();
    assert!(random::choice(&key, &t, 4, None, false).is_err());
    assert!(random::choice(&key, &t, 0, None, true).is_err());
    let p = place.from_vec(vec![0.5f32, 0.5], &[2]).unwrap();
    let err = random::choice_with_probabilities(&key, &t, &p, 1, None, true).unwrap_err();
    assert!(err.to_string().contains("[3]"), "{err}");
    let empty = place.zeros(DType::F32, &[0, 2]).unwrap();
    let p0 = place.zeros(DType::F32, &[0]).unwrap();
    assert!(random::choice(&key, &empty, 1, Some(0), true).is_err());
    assert!(random::choice_with_probabilities(&key, &empty, &p0, 1, Some(0), true).is_err());
    let (nothing, _) = random::uniform(&key, 0.0, 1.0, &[0, 3], DType::F32).unwrap();
    assert_eq!(nothing.shape(), &[0, 3]);
    let (same, _) = random::shuffle(&key, &empty, 0, false).unwrap();
    assert_eq!(same.shape(), &[0, 2]);
}

/// `Nx.Random.multivariate_normal`'s documented examples (Cholesky, the default), on every
/// device and compiled; to a unit or two in the last place, as `normal` (whose erf⁻¹ is not
/// XLA's polynomial).
#[test]
fn multivariate_normal_matches_nx_examples() {
    use random::Decomposition::Cholesky;
    let close = |got: &[f64], expected: &[f64], tol: f64, what: &str| {
        assert_eq!(got.len(), expected.len(), "{what}");
        for (g, e) in got.iter().zip(expected) {
            assert!(
                (g - e).abs() <= tol * e.abs().max(1.0),
                "{what}: {got:?} against {expected:?}"
            );
        }
    };
    for d in devices() {
        let place = on(d);
        let key = key_on(d, 12);
        let (x, next) = random::multivariate_normal(
            &key,
            &place.from_vec(vec![0], &[1]).unwrap(),
            &place.from_vec(vec![1], &[1, 1]).unwrap(),
            &[],
            Cholesky,
        )
        .unwrap();
        assert_eq!((x.dtype(), x.shape()), (DType::F32, &[1usize][..]));
        close(
            &x.to_f64_vec().unwrap(),
            &[0.73592794],
            1e-6,
            &format!("1-d on {d}"),
        );
        assert_eq!(next.shape(), &[2]);

        let mean = place.from_vec(vec![0, 0], &[2]).unwrap();
        let identity = place.from_vec(vec![1, 0, 0, 1], &[2, 2]).unwrap();
        let (x, _) = random::multivariate_normal(&key, &mean, &identity, &[], Cholesky).unwrap();
        close(
            &x.to_f64_vec().unwrap(),
            &[-1.3425945, -0.4081206],
            1e-6,
            &format!("2-d on {d}"),
        );

        let (x, _) = random::multivariate_normal(
            &key,
            &place
                .from_vec(vec![0], &[1])
                .unwrap()
                .as_type(DType::F16)
                .unwrap(),
            &place.from_vec(vec![1], &[1, 1]).unwrap(),
            &[3, 2],
            Cholesky,
        )
        .unwrap();
        assert_eq!((x.dtype(), x.shape()), (DType::F16, &[3usize, 2, 1][..]));
        close(
            &x.to_f64_vec().unwrap(),
            &[0.327, 0.2177, 0.3167, 0.11096, 0.5396, -0.8857],
            2e-3,
            &format!("f16 on {d}"),
        );

        let (m, c) = (mean.clone(), identity.clone());
        let batched =
            move |key: &Tensor| random::multivariate_normal(key, &m, &c, &[3, 2], Cholesky);
        let (x, _) = batched(&key).unwrap();
        assert_eq!(x.shape(), &[3, 2, 2]);
        let expected = [
            0.989145,
            1.0795186,
            -0.9467806,
            1.4781388,
            2.2095864,
            -1.5294564,
            -0.79339206,
            1.1211957,
            0.10976296,
            -0.9959557,
            0.4754556,
            1.1413804,
        ];
        close(
            &x.to_f64_vec().unwrap(),
            &expected,
            1e-6,
            &format!("batched on {d}"),
        );
        let compiled = jit(batched.clone()).call(&key).unwrap();
        close(
            &compiled.0.to_f64_vec().unwrap(),
            &expected,
            1e-6,
            &format!("compiled on {d}"),
        );
    }
}

/// Every method gives samples of the covariance asked for (a singular one too, for the SVD and
/// eigh), and bad shapes are Nx's errors.
#[test]
fn multivariate_normal_methods_and_errors() {
    use random::Decomposition;
    let place = on(Device::host(0));
    let mean = place.from_slice(&[1.0f64, -2.0, 0.5], &[3]).unwrap();
    let definite = place
        .from_slice(&[2.0f64, 0.6, -0.4, 0.6, 1.0, 0.3, -0.4, 0.3, 0.5], &[3, 3])
        .unwrap();
    // Rank 2: the third coordinate is the sum of the first two.
    let singular = place
        .from_slice(&[1.0f64, 0.5, 1.5, 0.5, 2.0, 2.5, 1.5, 2.5, 4.0], &[3, 3])
        .unwrap();
    let n = 40_000;
    for (covariance, methods) in [
        (
            &definite,
            &[
                Decomposition::Cholesky,
                Decomposition::Svd,
                Decomposition::Eigh,
            ][..],
        ),
        (&singular, &[Decomposition::Svd, Decomposition::Eigh][..]),
    ] {
        let c = covariance.to_vec::<f64>().unwrap();
        for &method in methods {
            let x = random::multivariate_normal_split(
                &key_on(Device::host(0), 5),
                &mean,
                covariance,
                &[n],
                method,
            )
            .unwrap();
            assert_eq!(x.shape(), &[n, 3]);
            let centred = x.subtract(&x.mean_keep([0]).unwrap()).unwrap();
            let empirical = centred
                .transpose(..)
                .unwrap()
                .dot(&centred)
                .unwrap()
                .divide(n as f64)
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            let means = x.mean([0]).unwrap().to_vec::<f64>().unwrap();
            for (i, (m, e)) in means.iter().zip([1.0, -2.0, 0.5]).enumerate() {
                assert!((m - e).abs() < 0.05, "{method:?}: mean {i} {m} against {e}");
            }
            for (i, (g, e)) in empirical.iter().zip(&c).enumerate() {
                assert!(
                    (g - e).abs() < 0.06,
                    "{method:?}: covariance {i} {g} against {e}"
                );
            }
        }
    }

    let key = key_on(Device::BINARY, 1);
    let b = on(Device::BINARY);
    let vector = b.from_slice(&[0.0f32, 0.0], &[2]).unwrap();
    let square = b.from_slice(&[1.0f32, 0.0, 0.0, 1.0], &[2, 2]).unwrap();
    let cases = [
        (
            square.clone(),
            square.clone(),
            "expected mean to have rank 1, got tensor with rank 2",
        ),
        (
            vector.clone(),
            vector.clone(),
            "expected covariance to have rank 2, got tensor with rank 1",
        ),
        (
            vector.clone(),
            b.zeros(DType::F32, &[2, 3]).unwrap(),
            "expected covariance to be a square matrix, got tensor with shape [2, 3]",
        ),
        (
            b.zeros(DType::F32, &[3]).unwrap(),
            square.clone(),
            "expected mean and covariance to have the same dimensions, got 3 and 2",
        ),
    ];
    for (mean, covariance, message) in cases {
        let err =
            random::multivariate_normal(&key, &mean, &covariance, &[], Decomposition::Cholesky)
                .unwrap_err()
                .to_string();
        assert!(err.contains(message), "{err}");
    }
}
