//! Complex numbers and Fourier transforms: Nx's documented examples of `complex`, `real`,
//! `imag`, `conjugate`, `phase`, `fft`, `ifft`, `fft2`, `ifft2`, `rfft` and `irfft`; complex
//! arithmetic, functions, reductions, products and layout on every device against `binary`;
//! the transforms' identities at power-of-two, composite and prime lengths; the errors Nx
//! raises; `jit`, `vmap` and the formats that carry complex values; `Nx.LinAlg`'s complex
//! examples and complex systems solved on every device.

mod common;

use common::{enable_sim, random};
use tensorbook::{
    jit, on, vmap, Complex32, Complex64, Conv, DType, Device, Direction, Fft2Options, FftLength,
    FftOptions, Tensor, TriangularSolve,
};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

/// Each entry's parts, as f64.
fn parts(t: &Tensor) -> Vec<(f64, f64)> {
    t.as_type(DType::C128)
        .unwrap()
        .to_vec::<Complex64>()
        .unwrap()
        .into_iter()
        .map(|z| (z.re, z.im))
        .collect()
}

/// The text of a tensor's entries as Nx prints them (the lines after the header).
fn printed(t: &Tensor) -> String {
    let text = t.to_string();
    let body: Vec<&str> = text.lines().skip(2).map(str::trim).collect();
    body.join(" ").trim_end_matches('>').to_string()
}

/// `actual`'s parts within `tol` of `expected`'s, relative to the largest magnitude in
/// `expected` (a transform's rounding error scales with its whole input, not each entry).
#[track_caller]
fn near(what: &str, expected: &Tensor, actual: &Tensor, tol: f64) {
    assert_eq!(actual.shape(), expected.shape(), "{what}: shape");
    assert_eq!(actual.dtype(), expected.dtype(), "{what}: dtype");
    let (e, a) = (parts(expected), parts(actual));
    let scale = e
        .iter()
        .map(|(re, im)| re.hypot(*im))
        .fold(1.0f64, f64::max);
    for (i, (x, y)) in e.iter().zip(&a).enumerate() {
        let ok = |p: f64, q: f64| (p.is_nan() && q.is_nan()) || (p - q).abs() <= tol * scale;
        assert!(
            ok(x.0, y.0) && ok(x.1, y.1),
            "{what}: element {i} is {y:?}, expected {x:?}"
        );
    }
}

fn tolerance(dtype: DType) -> f64 {
    if dtype == DType::C128 || dtype == DType::F64 {
        1e-10
    } else {
        2e-5
    }
}

/// Random complex values of `dtype` on `binary`.
fn random_complex(seed: u64, dtype: DType, shape: &[usize]) -> Tensor {
    let real = dtype.to_real();
    let re = random(seed, DType::F64, shape).as_type(real).unwrap();
    let im = random(seed + 1000, DType::F64, shape)
        .as_type(real)
        .unwrap();
    re.complex(&im).unwrap()
}

fn ints(v: &[i64], shape: &[usize]) -> Tensor {
    on(Device::BINARY).from_vec(v.to_vec(), shape).unwrap()
}

fn floats(v: &[f32], shape: &[usize]) -> Tensor {
    on(Device::BINARY).from_vec(v.to_vec(), shape).unwrap()
}

#[test]
fn parts_follow_nx_examples() {
    for d in devices() {
        let z = on(d)
            .from_vec(
                vec![Complex32::new(1.0, 2.0), Complex32::new(2.0, -4.0)],
                &[2],
            )
            .unwrap();
        assert_eq!(z.dtype(), DType::C64);
        assert_eq!(printed(&z.real().unwrap()), "[1.0, 2.0]");
        assert_eq!(printed(&z.imag().unwrap()), "[2.0, -4.0]");
        assert_eq!(printed(&z.conjugate().unwrap()), "[1.0-2.0i, 2.0+4.0i]");
        assert_eq!(printed(&z.abs().unwrap()), "[2.236068, 4.472136]");
        assert_eq!(z.abs().unwrap().dtype(), DType::F32);
        let one = on(d).scalar(1i32).unwrap();
        assert_eq!(printed(&one.conjugate().unwrap()), "1.0-0.0i");
        assert_eq!(printed(&one.phase().unwrap()), "0.0");
        assert_eq!(printed(&one.imag().unwrap()), "0.0");
        let phases = on(d)
            .from_vec(
                vec![Complex32::new(1.0, 2.0), Complex32::new(-2.0, 1.0)],
                &[2],
            )
            .unwrap()
            .phase()
            .unwrap();
        assert_eq!(printed(&phases), "[1.1071488, 2.6779451]");
        let built = ints(&[1, 2], &[2])
            .backend_copy(d)
            .unwrap()
            .complex(&ints(&[3, 4], &[2]).backend_copy(d).unwrap())
            .unwrap();
        assert_eq!(built.device(), d);
        assert_eq!(printed(&built), "[1.0+3.0i, 2.0+4.0i]");
        let wide = on(d)
            .scalar(1.0f64)
            .unwrap()
            .complex(&on(d).scalar(2.0f32).unwrap())
            .unwrap();
        assert_eq!(wide.dtype(), DType::C128);
        // The type rules: a float meets c64 in c64, f64 lifts it to c128.
        let sum = z.add(&on(d).scalar(1.5f64).unwrap()).unwrap();
        assert_eq!(sum.dtype(), DType::C128);
        assert_eq!(z.add(1).unwrap().dtype(), DType::C64);

        // Nx's `is_nan`, `is_infinity` and `as_type` examples with complex entries.
        let nan = f32::NAN;
        let special = c64(&[(nan, 0.0), (f32::INFINITY, 0.0), (0.0, nan)], &[3])
            .backend_copy(d)
            .unwrap();
        assert_eq!(printed(&special.is_nan().unwrap()), "[1, 0, 1]", "{d}");
        let infinite = c64(
            &[
                (f32::INFINITY, 0.0),
                (1.0, 0.0),
                (0.0, f32::INFINITY),
                (f32::NEG_INFINITY, 0.0),
            ],
            &[4],
        )
        .backend_copy(d)
        .unwrap();
        assert_eq!(
            printed(&infinite.is_infinity().unwrap()),
            "[1, 0, 1, 1]",
            "{d}"
        );
        let parts = c64(&[(1.0, 2.0), (0.0, 3.0), (4.0, 5.0)], &[3])
            .backend_copy(d)
            .unwrap();
        let real = parts.as_type(DType::F64).unwrap();
        assert_eq!(
            (real.dtype(), printed(&real)),
            (DType::F64, "[1.0, 0.0, 4.0]".into())
        );
        let ints = c64(&[(-1.0, 2.0), (-2.0, 3.0), (3.0, -4.0)], &[3])
            .backend_copy(d)
            .unwrap();
        assert_eq!(
            printed(&ints.as_type(DType::S64).unwrap()),
            "[-1, -2, 3]",
            "{d}"
        );
    }
}

#[test]
fn arithmetic_functions_and_reductions_agree_with_binary() {
    for dtype in [DType::C64, DType::C128] {
        let tol = tolerance(dtype);
        let a = random_complex(1, dtype, &[3, 5]);
        let b = random_complex(2, dtype, &[3, 5]);
        type Case = (
            &'static str,
            fn(&Tensor, &Tensor) -> tensorbook::Result<Tensor>,
        );
        let cases: [Case; 20] = [
            ("add", |a, b| a.add(b)),
            ("subtract", |a, b| a.subtract(b)),
            ("multiply", |a, b| a.multiply(b)),
            ("divide", |a, b| a.divide(b)),
            ("pow", |a, b| a.pow(b)),
            ("exp", |a, _| a.exp()),
            ("log", |a, _| a.log()),
            ("sqrt", |a, _| a.sqrt()),
            ("sin", |a, _| a.sin()),
            ("tanh", |a, _| a.tanh()),
            ("sigmoid", |a, _| a.sigmoid()),
            ("negate", |a, _| a.negate()),
            ("conjugate", |a, _| a.conjugate()),
            ("sum", |a, _| a.sum(0)),
            ("product", |a, _| a.product(1)),
            ("dot", |a, b| a.dot(&b.transpose(..)?)),
            ("transpose", |a, _| a.transpose(..)),
            ("slice", |a, _| a.slice_along_axis(1, 3, 1)),
            ("concatenate", |a, b| {
                Tensor::concatenate(&[a.clone(), b.clone()], 0)
            }),
            ("cumulative_sum", |a, _| a.cumulative_sum(1, false)),
        ];
        for (name, f) in cases {
            let expected = f(&a, &b).unwrap();
            assert_eq!(expected.dtype(), dtype, "{name}");
            for d in devices() {
                let got = f(&a.backend_copy(d).unwrap(), &b.backend_copy(d).unwrap()).unwrap();
                assert_eq!(got.device(), d, "{name}");
                near(&format!("{name} {dtype} on {d}"), &expected, &got, tol);
            }
        }
        // Against the definitions: (1+2i)(3-i) = 5+5i, and e^(iπ) = -1.
        let x = on(Device::BINARY)
            .from_vec(vec![Complex64::new(1.0, 2.0)], &[1])
            .unwrap()
            .as_type(dtype)
            .unwrap();
        let y = on(Device::BINARY)
            .from_vec(vec![Complex64::new(3.0, -1.0)], &[1])
            .unwrap()
            .as_type(dtype)
            .unwrap();
        assert_eq!(parts(&x.multiply(&y).unwrap()), [(5.0, 5.0)]);
        let i_pi = on(Device::BINARY)
            .from_vec(vec![Complex64::new(0.0, std::f64::consts::PI)], &[1])
            .unwrap();
        let e = parts(&i_pi.exp().unwrap())[0];
        assert!((e.0 + 1.0).abs() < 1e-15 && e.1.abs() < 1e-15);
    }
}

#[test]
fn fft_follows_nx_examples() {
    for d in devices() {
        let t = |v: &[i64], shape: &[usize]| ints(v, shape).backend_copy(d).unwrap();
        let fft = t(&[1, 1, 0, 0], &[4]).fft().unwrap();
        assert_eq!(fft.dtype(), DType::C64);
        assert_eq!(fft.device(), d);
        assert_eq!(printed(&fft), "[2.0+0.0i, 1.0-1.0i, 0.0+0.0i, 1.0+1.0i]");
        assert_eq!(
            printed(&t(&[1, 1, 1, 0, 1, 1], &[6]).fft().unwrap()),
            "[5.0+0.0i, 1.0+0.0i, -1.0+0.0i, 1.0+0.0i, -1.0+0.0i, 1.0+0.0i]"
        );
        let m = t(&[1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1], &[2, 6]);
        assert_eq!(
            printed(&m.fft_with(FftOptions::new().axis(-2)).unwrap()),
            "[ [2.0+0.0i, 2.0+0.0i, 2.0+0.0i, 0.0+0.0i, 2.0+0.0i, 2.0+0.0i], \
             [0.0+0.0i, 0.0+0.0i, 0.0+0.0i, 0.0+0.0i, 0.0+0.0i, 0.0+0.0i] ]"
        );
        let four = "[2.0+0.0i, 1.0-1.0i, 0.0+0.0i, 1.0+1.0i]";
        let padded = t(&[1, 1], &[2])
            .fft_with(FftOptions::new().length(4))
            .unwrap();
        assert_eq!(printed(&padded), four);
        let pow2 = t(&[1, 1, 0], &[3])
            .fft_with(FftOptions::new().power_of_two())
            .unwrap();
        assert_eq!(printed(&pow2), four);
        let cut = t(&[1, 1, 0, 0, 2, 3], &[6])
            .fft_with(FftOptions::new().length(4))
            .unwrap();
        assert_eq!(printed(&cut), four);
        let rows = t(&[1, 1, 0, 0, 2, 3, 1, 0, 0, 0, 2, 3], &[2, 6])
            .fft_with(FftOptions::new().length(4))
            .unwrap();
        assert_eq!(
            printed(&rows),
            "[ [2.0+0.0i, 1.0-1.0i, 0.0+0.0i, 1.0+1.0i], [1.0+0.0i, 1.0+0.0i, 1.0+0.0i, 1.0+0.0i] ]"
        );
        // ifft
        let spectrum = on(d)
            .from_vec(
                vec![
                    Complex32::new(2.0, 0.0),
                    Complex32::new(1.0, -1.0),
                    Complex32::new(0.0, 0.0),
                    Complex32::new(1.0, 1.0),
                ],
                &[4],
            )
            .unwrap();
        assert_eq!(
            printed(&spectrum.ifft().unwrap()),
            "[1.0+0.0i, 1.0+0.0i, 0.0+0.0i, 0.0+0.0i]"
        );
        assert_eq!(
            printed(
                &t(&[1, 1], &[2])
                    .ifft_with(FftOptions::new().length(4))
                    .unwrap()
            ),
            "[0.5+0.0i, 0.25+0.25i, 0.0+0.0i, 0.25-0.25i]"
        );
        let m = t(&[5, 1, -1, 1, -1, 1, 5, 1, -1, 1, -1, 1], &[2, 6]);
        assert_eq!(
            printed(&m.ifft_with(FftOptions::new().axis(-2)).unwrap()),
            "[ [5.0+0.0i, 1.0+0.0i, -1.0+0.0i, 1.0+0.0i, -1.0+0.0i, 1.0+0.0i], \
             [0.0+0.0i, 0.0+0.0i, 0.0+0.0i, 0.0+0.0i, 0.0+0.0i, 0.0+0.0i] ]"
        );
    }
}

#[test]
fn fft2_rfft_and_irfft_follow_nx_examples() {
    for d in devices() {
        let t = |v: &[i64], shape: &[usize]| ints(v, shape).backend_copy(d).unwrap();
        assert_eq!(
            printed(&t(&[1, 0, 1, 0, 1, 1, 1, 1], &[2, 4]).fft2().unwrap()),
            "[ [6.0+0.0i, 0.0+0.0i, 2.0+0.0i, 0.0+0.0i], [-2.0+0.0i, 0.0+0.0i, 2.0+0.0i, 0.0+0.0i] ]"
        );
        let cube = t(&[1, 0, 1, 0, 1, 1, 1, 1], &[2, 1, 4]);
        assert_eq!(
            printed(&cube.fft2_with(Fft2Options::new().axes([0, -1])).unwrap()),
            "[ [ [6.0+0.0i, 0.0+0.0i, 2.0+0.0i, 0.0+0.0i] ], \
             [ [-2.0+0.0i, 0.0+0.0i, 2.0+0.0i, 0.0+0.0i] ] ]"
        );
        let sq = t(&[1, 1, 1, 0], &[2, 2]);
        assert_eq!(
            printed(&sq.fft2_with(Fft2Options::new().lengths([2, 4])).unwrap()),
            "[ [3.0+0.0i, 2.0-1.0i, 1.0+0.0i, 2.0+1.0i], [1.0+0.0i, 0.0-1.0i, -1.0+0.0i, 0.0+1.0i] ]"
        );
        let odd = t(&[1, 1, 0, 1, 1, 0, 1, 1, -1], &[3, 3]);
        assert_eq!(
            printed(
                &odd.fft2_with(Fft2Options::new().lengths([FftLength::PowerOfTwo; 2]))
                    .unwrap()
            ),
            "[ [5.0+0.0i, 4.0-3.0i, -1.0+0.0i, 4.0+3.0i], [1.0-2.0i, -2.0-1.0i, 1.0+0.0i, 0.0-1.0i], \
             [1.0+0.0i, 2.0-1.0i, -1.0+0.0i, 2.0+1.0i], [1.0+2.0i, 0.0+1.0i, 1.0+0.0i, -2.0+1.0i] ]"
        );
        assert_eq!(
            printed(&t(&[6, 0, 2, 0, -2, 0, 2, 0], &[2, 4]).ifft2().unwrap()),
            "[ [1.0+0.0i, 0.0+0.0i, 1.0+0.0i, 0.0+0.0i], [1.0+0.0i, 1.0+0.0i, 1.0+0.0i, 1.0+0.0i] ]"
        );
        // rfft
        let f = |v: &[f32], shape: &[usize]| floats(v, shape).backend_copy(d).unwrap();
        assert_eq!(
            printed(&f(&[1.0, 1.0, 0.0, 0.0], &[4]).rfft().unwrap()),
            "[2.0+0.0i, 1.0-1.0i, 0.0+0.0i]"
        );
        assert_eq!(
            printed(&f(&[1.0, 1.0, 1.0, 0.0, 1.0, 1.0], &[6]).rfft().unwrap()),
            "[5.0+0.0i, 1.0+0.0i, -1.0+0.0i, 1.0+0.0i]"
        );
        let m = f(&[1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], &[2, 4]);
        assert_eq!(
            printed(&m.rfft_with(FftOptions::new().axis(-2)).unwrap()),
            "[ [2.0+0.0i, 1.0+0.0i, 0.0+0.0i, 0.0+0.0i], [0.0+0.0i, 1.0+0.0i, 0.0+0.0i, 0.0+0.0i] ]"
        );
        assert_eq!(
            printed(
                &f(&[1.0, 1.0, 0.0], &[3])
                    .rfft_with(FftOptions::new().power_of_two())
                    .unwrap()
            ),
            "[2.0+0.0i, 1.0-1.0i, 0.0+0.0i]"
        );
        // irfft
        let half = on(d)
            .from_vec(
                vec![
                    Complex32::new(2.0, 0.0),
                    Complex32::new(1.0, -1.0),
                    Complex32::new(0.0, 0.0),
                    Complex32::new(4.0, 0.0),
                    Complex32::new(0.0, 0.0),
                    Complex32::new(0.0, 0.0),
                ],
                &[2, 3],
            )
            .unwrap();
        let back = half.irfft().unwrap();
        assert_eq!(back.dtype(), DType::F32);
        assert_eq!(
            printed(&back),
            "[ [1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0] ]"
        );
        assert_eq!(
            printed(&f(&[5.0, 1.0, -1.0, 1.0], &[4]).irfft().unwrap()),
            "[1.0, 1.0, 1.0, 0.0, 1.0, 1.0]"
        );
    }
}

#[test]
fn transforms_agree_with_binary_and_invert() {
    for dtype in [DType::C64, DType::C128] {
        let tol = tolerance(dtype);
        // Power of two, composite, prime, and long composite and prime rows.
        for n in [1usize, 8, 12, 17, 1000, 1009] {
            let x = random_complex(n as u64, dtype, &[3, n]);
            let expected = x.fft().unwrap();
            for d in devices() {
                let here = x.backend_copy(d).unwrap();
                let got = here.fft().unwrap();
                near(&format!("fft {n} {dtype} on {d}"), &expected, &got, tol);
                let back = got.ifft().unwrap();
                near(
                    &format!("ifft(fft) {n} {dtype} on {d}"),
                    &x,
                    &back,
                    10.0 * tol,
                );
            }
        }
    }
    // rfft is fft's first half; irfft inverts it for even and (given the length) odd signals.
    for n in [6usize, 7, 64, 101] {
        let x = random(n as u64, DType::F64, &[2, n]);
        let half = x.rfft().unwrap();
        assert_eq!(half.shape(), &[2, n / 2 + 1]);
        let full = x.fft().unwrap().slice_along_axis(0, n / 2 + 1, 1).unwrap();
        near(&format!("rfft {n}"), &full, &half, 1e-12);
        let narrow = x.as_type(DType::F32).unwrap();
        let narrow_half = narrow.rfft().unwrap();
        assert_eq!(narrow_half.dtype(), DType::C64);
        for d in devices() {
            let here = x.backend_copy(d).unwrap().rfft().unwrap();
            near(&format!("rfft {n} on {d}"), &half, &here, 1e-10);
            let here = narrow.backend_copy(d).unwrap().rfft().unwrap();
            near(&format!("rfft f32 {n} on {d}"), &narrow_half, &here, 2e-5);
            let back = half
                .backend_copy(d)
                .unwrap()
                .irfft_with(FftOptions::new().length(n))
                .unwrap();
            assert_eq!(back.dtype(), DType::F64);
            near(&format!("irfft(rfft) {n} on {d}"), &x, &back, 1e-10);
        }
    }
}

#[test]
fn complex_values_are_refused_where_nx_refuses_them() {
    let z = random_complex(3, DType::C64, &[4]);
    for (what, result) in [
        ("less", z.less(&z)),
        ("max", z.max(&z)),
        ("floor", z.floor()),
        ("erf", z.erf()),
        ("complex", z.complex(&z)),
        ("rfft", z.rfft()),
        ("fft2 of a vector", z.fft2()),
        (
            "fft of a scalar",
            on(Device::BINARY).scalar(1.0f32).unwrap().fft(),
        ),
        ("length 0", z.fft_with(FftOptions::new().length(0))),
        (
            "irfft of one entry",
            z.slice_along_axis(0, 1, 0).unwrap().irfft(),
        ),
    ] {
        let err = result.expect_err(what).to_string();
        assert!(!err.is_empty(), "{what}");
    }
    for (what, result) in [
        ("less", z.less(&z)),
        ("reduce_max", z.reduce_max(..)),
        ("argmax", z.argmax(..)),
        ("sort", z.sort(0, Direction::Asc)),
        ("cumulative_max", z.cumulative_max(0, false)),
    ] {
        let err = result.expect_err(what).to_string();
        assert!(
            err.contains(&format!("Nx.{what}/2 does not support complex inputs")),
            "{what}: {err}"
        );
    }
    assert!(z
        .floor()
        .unwrap_err()
        .to_string()
        .contains("Nx.floor/1 does not support complex inputs"));
    assert!(z
        .rfft()
        .unwrap_err()
        .to_string()
        .contains("expects a real tensor, got type: c64"));
    // A real input's gradient through complex values is real (the cotangent's real part);
    // `tests/grad.rs` checks the values.
    let x = floats(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let g = tensorbook::grad(|x: &Tensor| x.fft()?.abs()?.sum(..))
        .call(&x)
        .unwrap();
    assert_eq!((g[0].dtype(), g[0].shape()), (x.dtype(), x.shape()));
}

/// Products large enough for host's four real GEMMs (a batch against one matrix, and a batch
/// against a batch) agree with binary's loop.
#[test]
fn large_complex_products_agree_with_binary() {
    for dtype in [DType::C64, DType::C128] {
        let a = random_complex(11, dtype, &[2, 48, 40]);
        let one = random_complex(12, dtype, &[40, 56]);
        let many = random_complex(13, dtype, &[2, 40, 56]);
        for b in [&one, &many] {
            let expected = a.matmul(b).unwrap();
            for d in devices() {
                let got = a
                    .backend_copy(d)
                    .unwrap()
                    .matmul(&b.backend_copy(d).unwrap())
                    .unwrap();
                near(
                    &format!("matmul {dtype} {:?} on {d}", b.shape()),
                    &expected,
                    &got,
                    tolerance(dtype),
                );
            }
        }
    }
}

#[test]
fn compiled_and_vectorised_transforms_match_eager() {
    for d in devices() {
        let x = random_complex(7, DType::C64, &[4, 12])
            .backend_copy(d)
            .unwrap();
        let eager = x.fft().unwrap().multiply(&x.conjugate().unwrap()).unwrap();
        let f = jit(|x: &Tensor| x.fft()?.multiply(&x.conjugate()?));
        let compiled = f.call(&x).unwrap();
        near(&format!("jit fft on {d}"), &eager, &compiled, 2e-5);
        let per_row = vmap(|row: &Tensor| row.fft()).call(&x).unwrap();
        near(
            &format!("vmap fft on {d}"),
            &x.fft().unwrap(),
            &per_row,
            2e-5,
        );
    }
}

#[test]
fn complex_tensors_travel_through_npy_and_safetensors() {
    let dir = tempfile::tempdir().unwrap();
    for dtype in [DType::C64, DType::C128] {
        let z = random_complex(9, dtype, &[2, 3]);
        let path = dir.path().join(format!("{dtype}.npy"));
        tensorbook::data::npy::write(&z, &path).unwrap();
        let back = tensorbook::data::npy::read(&path).unwrap();
        assert_eq!(back.dtype(), dtype);
        assert_eq!(parts(&back), parts(&z));
    }
    let z = random_complex(10, DType::C64, &[3]);
    let path = dir.path().join("z.safetensors");
    tensorbook::data::safetensors::write([("z", &z)], &path).unwrap();
    let back = on(Device::BINARY).read_safetensors(&path).unwrap();
    assert_eq!(parts(&back["z"]), parts(&z));
    let wide = random_complex(10, DType::C128, &[3]);
    let err = tensorbook::data::safetensors::write([("w", &wide)], &path).unwrap_err();
    assert!(err.to_string().contains("c128"), "{err}");
}

/// A c64 tensor from (re, im) pairs.
fn c64(values: &[(f32, f32)], shape: &[usize]) -> Tensor {
    let v: Vec<Complex32> = values.iter().map(|&(r, i)| Complex32::new(r, i)).collect();
    on(Device::BINARY).from_vec(v, shape).unwrap()
}

/// `Nx.LinAlg`'s documented examples with complex inputs.
#[test]
fn linear_algebra_follows_nx_complex_examples() {
    for d in devices() {
        let at = |t: Tensor| t.backend_copy(d).unwrap();
        let a = at(c64(
            &[(1.0, 0.0), (0.0, 2.0), (3.0, 0.0), (0.0, -4.0)],
            &[2, 2],
        ));
        let adj = a.adjoint().unwrap();
        assert_eq!(adj.dtype(), DType::C64);
        assert_eq!(
            printed(&adj),
            "[ [1.0-0.0i, 3.0-0.0i], [0.0-2.0i, 0.0+4.0i] ]",
            "{d}"
        );

        let m = at(c64(
            &[(0.0, 3.0), (4.0, 0.0), (4.0, 0.0), (0.0, 0.0)],
            &[2, 2],
        ));
        let n = m.norm_axes(tensorbook::Norm::Default, [0], false).unwrap();
        assert_eq!(
            (n.dtype(), printed(&n)),
            (DType::F32, "[5.0, 4.0]".into()),
            "{d}"
        );
        let m = at(c64(
            &[(0.0, 3.0), (0.0, 0.0), (4.0, 0.0), (0.0, 0.0)],
            &[2, 2],
        ));
        let n = m.norm_of(tensorbook::Norm::NegInf).unwrap();
        assert_eq!(
            (n.dtype(), n.to_scalar::<f32>().unwrap()),
            (DType::F32, 3.0),
            "{d}"
        );
        let l = at(c64(
            &[
                (1.0, 0.0),
                (0.0, 0.0),
                (0.0, 0.0),
                (1.0, 0.0),
                (0.0, 1.0),
                (0.0, 0.0),
                (0.0, 1.0),
                (1.0, 0.0),
                (1.0, 0.0),
            ],
            &[3, 3],
        ));
        let b = at(c64(&[(1.0, 0.0), (-1.0, 0.0), (3.0, 3.0)], &[3]));
        let x = l.triangular_solve(&b, TriangularSolve::new()).unwrap();
        assert_eq!((x.dtype(), x.device()), (DType::C64, d));
        near(
            &format!("triangular_solve on {d}"),
            &c64(&[(1.0, 0.0), (0.0, 2.0), (3.0, 0.0)], &[3]),
            &x.backend_copy(Device::BINARY).unwrap(),
            1e-6,
        );
        let diagonal = at(c64(
            &[
                (1.0, 0.0),
                (0.0, 0.0),
                (0.0, 0.0),
                (0.0, 0.0),
                (0.0, 2.0),
                (0.0, 0.0),
                (0.0, 0.0),
                (0.0, 0.0),
                (3.0, 0.0),
            ],
            &[3, 3],
        ));
        assert_eq!(printed(&diagonal.determinant().unwrap()), "0.0+6.0i");
        let mut v = vec![(0.0f32, 0.0f32); 16];
        v[3] = (1.0, 0.0);
        v[5] = (0.0, 2.0);
        v[10] = (3.0, 0.0);
        v[12] = (1.0, 0.0);
        let det = at(c64(&v, &[4, 4])).determinant().unwrap();
        assert_eq!((det.dtype(), det.device()), (DType::C64, d));
        assert_eq!(parts(&det), [(0.0, -6.0)], "{d}");

        // Nx's refusals, and a clear error where tensorbook has no complex factorisation yet.
        let v = at(c64(&[(1.0, 0.0), (2.0, 0.0)], &[2]));
        assert!(a
            .matrix_rank()
            .unwrap_err()
            .to_string()
            .contains("Nx.LinAlg.matrix_rank/2 is not yet implemented for complex inputs"));
        assert!(a
            .least_squares(&v)
            .unwrap_err()
            .to_string()
            .contains("Nx.LinAlg.least_squares/2 is not yet implemented for complex inputs"));
        let hermitian = at(c64(
            &[(1.0, 0.0), (0.0, -2.0), (0.0, 2.0), (5.0, 0.0)],
            &[2, 2],
        ));
        let l = hermitian.cholesky().unwrap();
        assert_eq!((l.dtype(), l.device()), (DType::C64, d));
        assert_eq!(
            printed(&l),
            "[ [1.0+0.0i, 0.0+0.0i], [0.0+2.0i, 1.0+0.0i] ]",
            "{d}"
        );
        // Nx's own refusal of complex SVDs (and so of pinv).
        for err in [a.svd().map(|_| ()), a.pinv().map(|_| ())] {
            let err = err.unwrap_err().to_string();
            assert!(
                err.contains("Nx.LinAlg.svd/2 is not yet implemented for complex inputs"),
                "{err}"
            );
        }
    }
}

/// The conjugate transpose of each matrix of the last two axes.
fn adjoint(t: &Tensor) -> Tensor {
    t.adjoint().unwrap()
}

/// Complex factorisations on every device: `q·r = a`, `qᴴ·q = I`, `r` upper triangular with a
/// real non-negative diagonal; `h·v = v·diag(w)`, `vᴴ·v = I`, `w` real (in the complex dtype,
/// as Nx gives it) and ordered by magnitude; `l·lᴴ = h`; `p·l·u = a` and the determinant its
/// diagonal's product up to sign; each against `binary`; of a real matrix held as complex, the
/// real factorisation; batched, wide, tall and complete.
#[test]
fn complex_factorisations_hold_their_identities_on_every_device() {
    for dtype in [DType::C64, DType::C128] {
        let tol = if dtype == DType::C64 { 2e-5 } else { 1e-11 };
        for (shape, complete) in [
            (vec![2, 5, 3], false),
            (vec![4, 4], true),
            (vec![3, 5], false),
            (vec![5, 3], true),
        ] {
            let a = random_complex(31, dtype, &shape);
            let (q_ref, r_ref) = if complete {
                a.qr_complete().unwrap()
            } else {
                a.qr().unwrap()
            };
            for d in devices() {
                let what = format!("qr {dtype} {shape:?} complete {complete} on {d}");
                let a = a.backend_copy(d).unwrap();
                let (q, r) = if complete {
                    a.qr_complete().unwrap()
                } else {
                    a.qr().unwrap()
                };
                assert_eq!(
                    (q.dtype(), q.device(), r.dtype()),
                    (dtype, d, dtype),
                    "{what}"
                );
                near(&what, &a, &q.matmul(&r).unwrap(), tol);
                let k = q.shape()[q.rank() - 1];
                let eye = on(d).eye(dtype, k).unwrap();
                let qhq = adjoint(&q).matmul(&q).unwrap();
                near(&what, &eye.broadcast(qhq.shape()).unwrap(), &qhq, tol);
                near(&what, &r.triu(0).unwrap(), &r, 0.0);
                let diagonal = parts(&r.take_diagonal(0).unwrap());
                assert!(
                    diagonal.iter().all(|&(re, im)| re >= 0.0 && im == 0.0),
                    "{what}: {diagonal:?}"
                );
                near(&what, &q_ref, &q, tol * 10.0);
                near(&what, &r_ref, &r, tol * 10.0);
            }
        }
        let real = random(33, DType::F64, &[4, 3])
            .as_type(dtype.to_real())
            .unwrap();
        let (q, r) = real.as_type(dtype).unwrap().qr().unwrap();
        let (qr, rr) = real.qr().unwrap();
        near(
            "qr of a real matrix as complex",
            &qr.as_type(dtype).unwrap(),
            &q,
            tol,
        );
        near(
            "qr of a real matrix as complex",
            &rr.as_type(dtype).unwrap(),
            &r,
            tol,
        );

        // Hermitian positive semi-definite and indefinite, batched.
        let b = random_complex(35, dtype, &[3, 4, 4]);
        let h = b
            .matmul(&adjoint(&b))
            .unwrap()
            .subtract(
                &on(Device::BINARY)
                    .eye(dtype, 4)
                    .unwrap()
                    .multiply(1.5)
                    .unwrap(),
            )
            .unwrap();
        let (w_ref, v_ref) = h.eigh().unwrap();
        for d in devices() {
            let what = format!("eigh {dtype} on {d}");
            let h = h.backend_copy(d).unwrap();
            let (w, v) = h.eigh().unwrap();
            assert_eq!(
                (w.dtype(), v.dtype(), w.device()),
                (dtype, dtype, d),
                "{what}"
            );
            assert_eq!(
                (w.shape(), v.shape()),
                (&[3, 4][..], &[3, 4, 4][..]),
                "{what}"
            );
            let values = parts(&w);
            assert!(
                values.iter().all(|&(_, im)| im == 0.0),
                "{what}: {values:?}"
            );
            for row in values.chunks(4) {
                assert!(
                    row.windows(2).all(|p| p[0].0.abs() >= p[1].0.abs()),
                    "{what}: {row:?}"
                );
            }
            let scaled = v.multiply(&w.new_axis(-2).unwrap()).unwrap();
            near(&what, &h.matmul(&v).unwrap(), &scaled, tol * 10.0);
            let eye = on(d).eye(dtype, 4).unwrap();
            near(
                &what,
                &eye.broadcast(&[3, 4, 4]).unwrap(),
                &adjoint(&v).matmul(&v).unwrap(),
                tol * 10.0,
            );
            near(&what, &w_ref, &w, tol * 10.0);
            near(&what, &v_ref, &v, tol * 100.0);
        }
        // Only the lower triangle is read; of a real symmetric matrix, the real eigh.
        let s = random(37, DType::F64, &[4, 4])
            .as_type(dtype.to_real())
            .unwrap();
        let s = s.add(&s.adjoint().unwrap()).unwrap();
        let (w, v) = s.as_type(dtype).unwrap().tril(0).unwrap().eigh().unwrap();
        let (wr, vr) = s.eigh().unwrap();
        near(
            "eigh of a real matrix as complex",
            &wr.as_type(dtype).unwrap(),
            &w,
            tol * 10.0,
        );
        near(
            "eigh of a real matrix as complex",
            &vr.as_type(dtype).unwrap(),
            &v,
            tol * 10.0,
        );
        // Cholesky and LU of the same matrices, batched: l·lᴴ = h, p·l·u = a.
        let spd = h
            .add(
                &on(Device::BINARY)
                    .eye(dtype, 4)
                    .unwrap()
                    .multiply(4.0)
                    .unwrap(),
            )
            .unwrap();
        let l_ref = spd.cholesky().unwrap();
        let a = random_complex(39, dtype, &[3, 4, 4]);
        let (p_ref, lo_ref, u_ref) = a.lu().unwrap();
        for d in devices() {
            let what = format!("cholesky and lu {dtype} on {d}");
            let (spd, a) = (spd.backend_copy(d).unwrap(), a.backend_copy(d).unwrap());
            let l = spd.cholesky().unwrap();
            assert_eq!((l.dtype(), l.device()), (dtype, d), "{what}");
            near(&what, &spd, &l.matmul(&adjoint(&l)).unwrap(), tol * 10.0);
            near(&what, &l_ref, &l, tol * 10.0);
            let (p, lo, u) = a.lu().unwrap();
            let rebuilt = p.matmul(&lo).unwrap().matmul(&u).unwrap();
            near(&what, &a, &rebuilt, tol * 10.0);
            near(&what, &p_ref, &p, 0.0);
            near(&what, &lo_ref, &lo, tol * 10.0);
            near(&what, &u_ref, &u, tol * 10.0);
            let det = a.determinant().unwrap();
            let from_lu = parts(&u.take_diagonal(0).unwrap().product(-1).unwrap());
            assert_eq!(det.shape(), &[3], "{what}");
            for (i, (x, y)) in parts(&det).iter().zip(&from_lu).enumerate() {
                let size = y.0.hypot(y.1).max(1.0);
                assert!(
                    (x.0.abs() - y.0.abs()).abs() <= tol * 100.0 * size
                        && (x.1.abs() - y.1.abs()).abs() <= tol * 100.0 * size,
                    "{what}: determinant {i}: {x:?} against ±{y:?}"
                );
            }
        }
        // Not positive definite: NaN, as the real op.
        let not_spd = spd.multiply(-1.0).unwrap().cholesky().unwrap();
        assert!(parts(&not_spd)
            .iter()
            .all(|(re, im)| re.is_nan() && im.is_nan()));

        // Compiled and vectorised, as eager.
        let eager = h.eigh().unwrap().1;
        let compiled = jit(|h: &Tensor| Ok(h.eigh()?.1)).call(&h).unwrap();
        near("jit eigh", &eager, &compiled, tol);
        let per_matrix = vmap(|h: &Tensor| Ok(h.qr()?.1)).call(&h).unwrap();
        near("vmap qr", &h.qr().unwrap().1, &per_matrix, tol);
    }
}

/// Complex systems through the real embedding: `a·x = b` and `a·a⁻¹ = I` hold, on every
/// device, for batches and for each of triangular_solve's options.
#[test]
fn complex_systems_solve_on_every_device() {
    for dtype in [DType::C64, DType::C128] {
        let tol = if dtype == DType::C64 { 1e-4 } else { 1e-10 };
        let eye = on(Device::BINARY).eye(dtype, 4).unwrap();
        // Diagonally dominant, so well conditioned.
        let a = random_complex(21, dtype, &[2, 4, 4])
            .add(&eye.multiply(6.0).unwrap())
            .unwrap();
        let b = random_complex(22, dtype, &[2, 4, 3]);
        for d in devices() {
            let (a, b) = (a.backend_copy(d).unwrap(), b.backend_copy(d).unwrap());
            let x = a.solve(&b).unwrap();
            assert_eq!((x.dtype(), x.device()), (dtype, d));
            near(
                &format!("a·solve(a, b) {dtype} on {d}"),
                &b,
                &a.matmul(&x).unwrap(),
                tol,
            );
            let column = b.slice_along_axis(0, 1, -1).unwrap().squeeze([-1]).unwrap();
            let xc = a.solve(&column).unwrap();
            assert_eq!(xc.shape(), &[2, 4]);
            // Determinants: of a real matrix as complex, the real one (LAPACK's LU); and
            // det(a·b) = det(a)·det(b).
            let real = a.real().unwrap();
            let as_complex = real.as_type(dtype).unwrap().determinant().unwrap();
            let expected = real.determinant().unwrap().as_type(dtype).unwrap();
            near(
                &format!("det of real {dtype} on {d}"),
                &expected,
                &as_complex,
                tol,
            );
            let c = b.slice_along_axis(0, 1, -1).unwrap();
            let square = c.matmul(&c.adjoint().unwrap()).unwrap().add(&a).unwrap();
            let product = a.matmul(&square).unwrap().determinant().unwrap();
            let expected = a
                .determinant()
                .unwrap()
                .multiply(&square.determinant().unwrap())
                .unwrap();
            near(
                &format!("det(a·b) {dtype} on {d}"),
                &expected,
                &product,
                tol,
            );
            // LU with partial pivoting: p·l·u = a, l unit lower, u upper, p a permutation.
            let (p, l, u) = a.lu().unwrap();
            assert_eq!((l.dtype(), l.device()), (dtype, d));
            let plu = p.matmul(&l).unwrap().matmul(&u).unwrap();
            near(&format!("p·l·u {dtype} on {d}"), &a, &plu, tol);
            near(
                &format!("u upper {dtype} on {d}"),
                &u.triu(0).unwrap(),
                &u,
                0.0,
            );
            let unit = l.take_diagonal(0).unwrap();
            near(
                &format!("l's diagonal {dtype} on {d}"),
                &on(d).ones(dtype, &[2, 4]).unwrap(),
                &unit,
                0.0,
            );
            near(
                &format!("l lower {dtype} on {d}"),
                &l.tril(0).unwrap(),
                &l,
                0.0,
            );
            let ones = on(d).ones(dtype, &[2, 4]).unwrap();
            near(
                &format!("p's rows {dtype} on {d}"),
                &ones,
                &p.sum([-1]).unwrap(),
                0.0,
            );
            near(
                &format!("p's columns {dtype} on {d}"),
                &ones,
                &p.sum([-2]).unwrap(),
                0.0,
            );
            // A Hermitian positive-definite batch: l·lᴴ = h, l lower with a real diagonal.
            let h = a.matmul(&a.adjoint().unwrap()).unwrap();
            let l = h.cholesky().unwrap();
            near(
                &format!("l·lᴴ {dtype} on {d}"),
                &h,
                &l.matmul(&l.adjoint().unwrap()).unwrap(),
                tol * 10.0,
            );
            near(
                &format!("lower {dtype} on {d}"),
                &l.tril(0).unwrap(),
                &l,
                0.0,
            );
            let inv = a.invert().unwrap();
            let identity = on(d).eye(dtype, 4).unwrap().broadcast(&[2, 4, 4]).unwrap();
            near(
                &format!("a·a⁻¹ {dtype} on {d}"),
                &identity,
                &a.matmul(&inv).unwrap(),
                tol,
            );
            for lower in [true, false] {
                for transpose in [false, true] {
                    for left_side in [true, false] {
                        let options = TriangularSolve::new()
                            .lower(lower)
                            .transpose(transpose)
                            .left_side(left_side);
                        let tri = if lower { a.tril(0) } else { a.triu(0) }.unwrap();
                        let op_a = if transpose {
                            tri.transpose([0, 2, 1]).unwrap()
                        } else {
                            tri
                        };
                        let rhs = if left_side {
                            b.clone()
                        } else {
                            b.transpose([0, 2, 1]).unwrap()
                        };
                        let x = a.triangular_solve(&rhs, options).unwrap();
                        let back = if left_side {
                            op_a.matmul(&x)
                        } else {
                            x.matmul(&op_a)
                        }
                        .unwrap();
                        near(&format!("{options:?} {dtype} on {d}"), &rhs, &back, tol);
                    }
                }
            }
        }
    }
}

/// Nx's complex convolution example on every device; the kernel is not conjugated. A complex
/// convolution with strides, groups and a real operand against the sum of the parts'.
#[test]
fn complex_convolutions_follow_nx() {
    for d in devices() {
        let left = c64(&[(1.0, 1.0), (2.0, 0.0), (3.0, -3.0)], &[1, 1, 3])
            .backend_copy(d)
            .unwrap();
        let right = c64(&[(1.0, 0.0), (0.0, 2.0), (0.0, 3.0)], &[1, 1, 3])
            .backend_copy(d)
            .unwrap();
        let out = left.conv(&right, Conv::new().padding([(2, 2)])).unwrap();
        assert_eq!(
            (out.dtype(), out.shape(), out.device()),
            (DType::C64, &[1, 1, 5][..], d)
        );
        assert_eq!(
            printed(&out),
            "[ [ [-3.0+3.0i, -2.0+8.0i, 10.0+14.0i, 8.0+6.0i, 3.0-3.0i] ] ]",
            "{d}"
        );
        // A real input with a complex kernel is complex; grouped and strided, the parts add up.
        let x = random(41, DType::F64, &[2, 4, 6, 6])
            .backend_copy(d)
            .unwrap();
        let w = random_complex(42, DType::C128, &[6, 2, 3, 3])
            .backend_copy(d)
            .unwrap();
        let options = Conv::new().strides([2, 1]).feature_group_size(2);
        let out = x.conv(&w, options.clone()).unwrap();
        assert_eq!(out.dtype(), DType::C128);
        let re = x.conv(&w.real().unwrap(), options.clone()).unwrap();
        let im = x.conv(&w.imag().unwrap(), options).unwrap();
        near(
            &format!("complex conv on {d}"),
            &re.complex(&im).unwrap(),
            &out,
            1e-12,
        );
    }
}

/// Complex factorisations of what has no answer or no entries: NaN and infinite entries give
/// NaN (or what LAPACK's pivoting gives, the same on every device) without hanging or
/// failing, and so do the real eigh and SVD of the real part (host's `?gesdd` refused a NaN
/// as an invalid argument); empty matrices and an empty batch give empty parts of the right
/// shapes.
#[test]
fn complex_factorisations_of_unreadable_and_empty_matrices() {
    let nan = f32::NAN;
    let bad = c64(
        &[(1.0, 0.0), (nan, 1.0), (nan, 1.0), (f32::INFINITY, 0.0)],
        &[2, 2],
    );
    for d in devices() {
        let a = bad.backend_copy(d).unwrap();
        let (w, v) = a.eigh().unwrap();
        assert!(
            parts(&w)
                .iter()
                .chain(&parts(&v))
                .all(|(re, im)| re.is_nan() && im.is_nan()),
            "eigh on {d}: {:?} {:?}",
            parts(&w),
            parts(&v)
        );
        let l = a.cholesky().unwrap();
        assert!(
            parts(&l).iter().any(|(re, _)| re.is_nan()),
            "cholesky on {d}"
        );
        let (q, r) = a.qr().unwrap();
        assert!(
            parts(&q)
                .iter()
                .chain(&parts(&r))
                .any(|(re, im)| re.is_nan() || im.is_nan()),
            "qr on {d}"
        );
        a.lu().unwrap();
        a.determinant().unwrap();
        // The real factorisations that iterate, of the real parts: NaN, not a hang.
        let real = a.real().unwrap();
        let (w, _) = real.eigh().unwrap();
        assert!(
            parts(&w).iter().all(|(re, _)| re.is_nan()),
            "real eigh on {d}"
        );
        let (_, s, _) = real.svd().unwrap();
        assert!(
            parts(&s).iter().all(|(re, _)| re.is_nan()),
            "real svd on {d}: {:?}",
            parts(&s)
        );
        for (shape, dims) in [(vec![0, 0], 0usize), (vec![0, 3, 3], 3)] {
            let empty = on(d).zeros(DType::C128, &shape).unwrap();
            let (q, r) = empty.qr().unwrap();
            assert_eq!(
                (q.shape().len(), r.shape().len()),
                (shape.len(), shape.len()),
                "{d}"
            );
            let (w, v) = empty.eigh().unwrap();
            assert_eq!(
                (w.shape()[w.rank() - 1], v.shape()),
                (dims, &shape[..]),
                "{d}"
            );
            assert_eq!(empty.cholesky().unwrap().shape(), &shape[..], "{d}");
            let (p, lo, u) = empty.lu().unwrap();
            assert_eq!(
                (p.shape(), lo.shape(), u.shape()),
                (&shape[..], &shape[..], &shape[..]),
                "{d}"
            );
        }
    }
}
