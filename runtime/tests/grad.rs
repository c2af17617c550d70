//! Gradients: `grad` and `value_and_grad` checked against central finite differences over
//! random graphs of the op set (linear algebra included; f64, on binary, host and sim), and against values computed
//! here by hand, without the runtime, for softmax cross-entropy and a two-layer network.

mod common;

use common::{enable_sim, random};
use proptest::prelude::*;
use tensorbook::{
    cond, custom_grad, grad, grad_wrt, jit_cached, on, value_and_grad, value_and_grad_wrt,
    Complex64, Conv, DType, Device, Direction, FftOptions, Padding, Result, Tensor,
    TriangularSolve,
};

/// The devices every gradient is checked on.
fn devices() -> Vec<Device> {
    enable_sim();
    let mut d = vec![Device::BINARY, Device::host(0), Device::sim(0)];
    if tensorbook::devices()
        .iter()
        .any(|d| d.client == tensorbook::Client::Cuda)
    {
        d.push(Device::cuda(0));
    }
    d
}

fn f64s(values: &[f64], shape: &[usize]) -> Tensor {
    on(Device::BINARY).from_slice(values, shape).unwrap()
}

/// One step of a random graph over `[3, 4]` values: each builds a `[3, 4]` result from values
/// computed so far through a different part of the op set.
#[derive(Clone, Debug)]
enum Step {
    Elementwise(usize, usize, usize),
    Smooth(usize, usize),
    Divide(usize, usize),
    BroadcastReduced(usize, usize, usize),
    Products(usize, usize, usize),
    Transposed(usize),
    StridedSlice(usize, usize),
    TakeWithRepeats(usize),
    PutSlice(usize, usize),
    Stacked(usize, usize),
    ScalarScale(usize, usize),
    ProductReduce(usize, usize),
    Convolved(usize, usize, usize),
    Branch(usize, usize, usize),
    LinearAlgebra(usize, usize, usize),
    Spectral(usize, usize, usize),
}

fn step(s: &Step, vals: &[Tensor]) -> Result<Tensor> {
    let v = |i: &usize| &vals[*i % vals.len()];
    match s {
        Step::Elementwise(k, a, b) => match k % 6 {
            0 => v(a).add(v(b)),
            1 => v(a).subtract(v(b)),
            2 => v(a).multiply(v(b)),
            3 => v(a).max(v(b)),
            4 => v(a).atan2(v(b)),
            _ => v(a).min(v(b)),
        },
        Step::Smooth(k, a) => {
            let x = v(a);
            let positive = || x.square()?.add(1.0);
            match k % 11 {
                0 => x.tanh(),
                1 => x.sigmoid(),
                2 => x.sin(),
                3 => x.cos(),
                4 => x.square(),
                5 => x.negate(),
                6 => x.tanh()?.exp(),
                7 => positive()?.log(),
                8 => positive()?.sqrt(),
                9 => positive()?.rsqrt(),
                _ => x.abs(),
            }
        }
        Step::Divide(a, b) => v(a).divide(&v(b).tanh()?.add(1.5)?),
        Step::BroadcastReduced(k, a, b) => match k % 3 {
            0 => v(a).add(&v(b).sum_keep([0])?),
            1 => v(a).multiply(&v(b).mean_keep([1])?),
            _ => v(a).subtract(&v(b).reduce_max_keep([1])?),
        },
        Step::Products(a, b, c) => v(a).dot(&v(b).transpose(..)?)?.dot(v(c))?.multiply(0.3),
        Step::Transposed(a) => v(a).transpose(..)?.reshape(&[3, 4]),
        Step::StridedSlice(a, b) => Tensor::concatenate(&[v(a).clone(), v(b).clone()], 1)?.slice(
            &[0, 1],
            &[3, 7],
            Some(&[1, 2]),
        ),
        Step::TakeWithRepeats(a) => {
            let rows = on(Device::BINARY).from_vec(vec![2i64, 0, 2], &[3])?;
            let cols = on(Device::BINARY).from_vec(vec![3i64, 3, 1, 0], &[4])?;
            v(a).take(&rows, 0)?.take(&cols, 1)
        }
        Step::PutSlice(a, b) => v(a).put_slice(&[1, 1], &v(b).slice(&[0, 0], &[2, 2], None)?),
        Step::Stacked(a, b) => {
            let row = v(b).slice(&[1, 0], &[1, 4], None)?.broadcast(&[3, 4])?;
            Tensor::stack(&[v(a).clone(), row], 0)?.sum([0])
        }
        Step::ScalarScale(a, b) => v(a).multiply(&v(b).tanh()?.sum(..)?),
        Step::ProductReduce(a, b) => v(a).multiply(&v(b).tanh()?.add(1.5)?.product_keep([0])?),
        Step::Convolved(k, a, b) => {
            // The [3, 4] values as images, channels, batches or groups, each form with a
            // kernel cut from another value, shaped back to [3, 4].
            let kernel = |rows: usize, cols: usize, shape: &[usize]| {
                v(b).slice(&[0, 0], &[rows, cols], None)?.reshape(shape)
            };
            let out = match k % 5 {
                0 => v(a).reshape(&[1, 1, 3, 4])?.conv(
                    &kernel(3, 3, &[1, 1, 3, 3])?,
                    Conv::new().padding(Padding::Same),
                )?,
                1 => v(a).reshape(&[1, 1, 3, 4])?.conv(
                    &kernel(3, 3, &[1, 1, 3, 3])?,
                    Conv::new()
                        .input_dilation([1, 2])
                        .strides([1, 2])
                        .padding([(1, 1), (1, 1)]),
                )?,
                2 => v(a).reshape(&[3, 1, 4])?.conv(
                    &kernel(1, 3, &[1, 1, 3])?,
                    Conv::new().kernel_dilation(2).padding([(2, 2)]),
                )?,
                3 => v(a).reshape(&[1, 3, 4])?.conv(
                    &kernel(3, 2, &[3, 1, 2])?,
                    Conv::new().feature_group_size(3).padding([(1, 0)]),
                )?,
                _ => v(a)
                    .reshape(&[2, 2, 3])?
                    .conv(&kernel(2, 4, &[4, 2, 1])?, Conv::new().batch_group_size(2))?,
            };
            out.reshape(&[3, 4])
        }
        Step::LinearAlgebra(k, a, b) => {
            // Factorisations and solves of matrices built from the values to be well
            // conditioned (and, for eigh, with eigenvalues well apart), shaped back to [3, 4].
            let x = v(a).tanh()?;
            let y = v(b).tanh()?;
            let eye = on(x.device()).eye(DType::F64, 3)?;
            let square = |shift: f64| x.slice(&[0, 1], &[3, 3], None)?.add(&eye.multiply(shift)?);
            match k % 8 {
                0 => {
                    // Full rank whatever came before (a strided slice repeats rows, and QR's
                    // gradient solves with R, as Nx's does): R's diagonal stays away from 0.
                    let dominant = on(x.device()).from_slice(
                        &[3.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 0.0, 3.0, 0.0],
                        &[3, 4],
                    )?;
                    let (q, r) = x.add(&dominant)?.qr()?;
                    r.add(&q.dot(&y)?)
                }
                1 => square(3.0)?.triangular_solve(v(b), TriangularSolve::new()),
                2 => square(3.0)?.solve(v(b)),
                3 => {
                    let spd = x.dot(&x.transpose(..)?)?.add(&eye)?;
                    spd.cholesky()?.dot(&y)
                }
                4 => {
                    let spread = on(x.device())
                        .from_slice(&[0.0, 3.0, 6.0], &[3])?
                        .make_diagonal(0)?;
                    let s = x.dot(&x.transpose(..)?)?.multiply(0.09)?.add(&spread)?;
                    let (w, vectors) = s.eigh()?;
                    vectors.multiply(&w)?.dot(&y)
                }
                5 => {
                    let a = square(2.0)?;
                    a.invert()?.dot(v(b))?.multiply(&a.determinant()?)
                }
                6 => {
                    let (_, l, u) = square(3.0)?.lu()?;
                    l.add(&u)?.dot(&y)
                }
                _ => {
                    // Singular values kept apart (about 0, 1.5 and 3) by a fixed spread.
                    let spread = on(x.device()).from_slice(
                        &[3.0, 0.0, 0.0, 0.0, 0.0, 1.5, 0.0, 0.0, 0.0, 0.0, 0.2, 0.0],
                        &[3, 4],
                    )?;
                    let (u, s, vt) = x.multiply(0.2)?.add(&spread)?.svd_reduced()?;
                    u.multiply(&s)?.dot(&vt.square()?)
                }
            }
        }
        Step::Spectral(k, a, b) => {
            // Through complex values and back: transforms, parts, magnitudes and phases, with
            // a complex factor that mixes real and imaginary parts (so a wrong cotangent of
            // either shows).
            let (x, y) = (v(a), v(b));
            let turn = on(x.device()).scalar(Complex64::new(0.6, -0.8))?;
            match k % 6 {
                0 => x.fft()?.multiply(&turn)?.add(1.0)?.abs(),
                1 => x.complex(y)?.multiply(&turn)?.exp()?.conjugate()?.imag(),
                2 => x
                    .fft_with(FftOptions::new().axis(0))?
                    .multiply(&y.ifft()?)?
                    .real(),
                3 => x
                    .rfft()?
                    .multiply(&turn)?
                    .irfft_with(FftOptions::new().length(4)),
                4 => x.complex(&y.tanh()?.add(2.5)?)?.fft2()?.sin()?.phase(),
                _ => x.complex(y)?.sqrt()?.multiply(&y.rfft()?.sum(..)?)?.abs(),
            }
        }
        Step::Branch(k, a, b) => {
            // `cond` on the data: compiled, the program takes one side; the gradient is that
            // side's.
            let (x, y) = (v(a), v(b));
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            let pick = x.sum(..)?.multiply(sign)?.greater(0.0)?;
            cond(
                &pick,
                || x.multiply(y)?.tanh(),
                || x.sin()?.add(&y.dot(&x.transpose(..)?)?.sum_keep([1])?),
            )
        }
    }
}

fn step_strategy() -> impl Strategy<Value = Step> {
    let i = || 0usize..8;
    prop_oneof![
        (i(), i(), i()).prop_map(|(k, a, b)| Step::Elementwise(k, a, b)),
        (0usize..11, i()).prop_map(|(k, a)| Step::Smooth(k, a)),
        (i(), i()).prop_map(|(a, b)| Step::Divide(a, b)),
        (i(), i(), i()).prop_map(|(k, a, b)| Step::BroadcastReduced(k, a, b)),
        (i(), i(), i()).prop_map(|(a, b, c)| Step::Products(a, b, c)),
        i().prop_map(Step::Transposed),
        (i(), i()).prop_map(|(a, b)| Step::StridedSlice(a, b)),
        i().prop_map(Step::TakeWithRepeats),
        (i(), i()).prop_map(|(a, b)| Step::PutSlice(a, b)),
        (i(), i()).prop_map(|(a, b)| Step::Stacked(a, b)),
        (i(), i()).prop_map(|(a, b)| Step::ScalarScale(a, b)),
        (i(), i()).prop_map(|(a, b)| Step::ProductReduce(a, b)),
        (0usize..5, i(), i()).prop_map(|(k, a, b)| Step::Convolved(k, a, b)),
        (i(), i(), i()).prop_map(|(k, a, b)| Step::Branch(k, a, b)),
        (0usize..8, i(), i()).prop_map(|(k, a, b)| Step::LinearAlgebra(k, a, b)),
        (0usize..6, i(), i()).prop_map(|(k, a, b)| Step::Spectral(k, a, b)),
    ]
}

/// The random graph as a function of its two inputs, ending in a weighted sum (a scalar whose
/// gradient is not all ones).
///
/// Each step's result is moved by a small offset of its own, the same at every evaluation (so
/// no derivative changes): without it a step of a value with itself (`b - b`, a strided slice
/// of two copies, a broadcast of a reduction) gives exact zeros or exact symmetries, and a later
/// step can meet a point where it has no derivative (`atan2(0, 0)`, a complex `sqrt` of 0,
/// the phase of a spectrum's exact zero): the gradient there is 0/0 in Nx and JAX as here, and
/// the check would be of that point, not of the rule.
fn graph(steps: &[Step], a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let mut vals = vec![a.clone(), b.clone()];
    for (k, s) in steps.iter().enumerate() {
        let offset = on(a.device()).from_vec(
            (0..12)
                .map(|i| 0.01 * (1.0 + 1.7 * i as f64 + 0.9 * k as f64).sin())
                .collect::<Vec<_>>(),
            &[3, 4],
        )?;
        let next = step(s, &vals)?.add(&offset)?;
        vals.push(next);
    }
    let weights = on(a.device()).from_vec(
        (0..12).map(|i| 0.5 + 0.1 * i as f64).collect::<Vec<_>>(),
        &[3, 4],
    )?;
    vals.last()
        .map(|last| last.multiply(&weights)?.sum(..))
        .unwrap_or_else(|| a.sum(..))
}

/// Central differences of `f` at `inputs`, for each element of each input, with a bound on
/// their own error: the difference from the same estimate at twice the step (where `f` is large
/// or sharply curved, rounding and the step's truncation make differences of this size).
fn finite_differences(
    f: &dyn Fn(&Tensor, &Tensor) -> Result<Tensor>,
    inputs: [&Tensor; 2],
) -> Vec<Vec<(f64, f64)>> {
    let h = 1e-6;
    let base: Vec<Vec<f64>> = inputs.iter().map(|t| t.to_vec::<f64>().unwrap()).collect();
    let shape = inputs[0].shape().to_vec();
    let eval = |which: usize, at: usize, delta: f64| -> f64 {
        let mut moved = base.clone();
        moved[which][at] += delta;
        let (a, b) = (f64s(&moved[0], &shape), f64s(&moved[1], &shape));
        f(&a, &b).unwrap().to_scalar::<f64>().unwrap()
    };
    let central = |w: usize, i: usize, h: f64| (eval(w, i, h) - eval(w, i, -h)) / (2.0 * h);
    (0..2)
        .map(|w| {
            (0..base[w].len())
                .map(|i| {
                    let estimate = central(w, i, h);
                    (estimate, (estimate - central(w, i, 2.0 * h)).abs())
                })
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn gradients_of_random_graphs_match_finite_differences(
        steps in prop::collection::vec(step_strategy(), 1..5),
        seed in 0u64..1000,
    ) {
        let a = random(seed, DType::F64, &[3, 4]);
        let b = random(seed + 1, DType::F64, &[3, 4]);
        let steps_for_fd = steps.clone();
        let expected = finite_differences(
            &move |x: &Tensor, y: &Tensor| graph(&steps_for_fd, x, y),
            [&a, &b],
        );
        let f = value_and_grad(move |x: &Tensor, y: &Tensor| graph(&steps, x, y));
        for device in devices() {
            let (a, b) = (a.backend_copy(device).unwrap(), b.backend_copy(device).unwrap());
            let (_, grads) = f.on(device).call((&a, &b)).unwrap();
            for (w, g) in grads.iter().enumerate() {
                prop_assert_eq!(g.device(), device);
                prop_assert_eq!(g.shape(), &[3, 4]);
                let got = g.to_vec::<f64>().unwrap();
                for (i, (x, (e, error))) in got.iter().zip(&expected[w]).enumerate() {
                    prop_assert!(
                        (x - e).abs() <= 1e-5 * e.abs().max(1.0) + 10.0 * error,
                        "input {} element {} on {}: grad {} vs finite difference {} (± {})",
                        w, i, device, x, e, error
                    );
                }
            }
        }
    }
}

fn softmax_rows(z: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; z.len()];
    for r in 0..rows {
        let row = &z[r * cols..(r + 1) * cols];
        let m = row.iter().cloned().fold(f64::MIN, f64::max);
        let total: f64 = row.iter().map(|v| (v - m).exp()).sum();
        for c in 0..cols {
            out[r * cols + c] = (row[c] - m).exp() / total;
        }
    }
    out
}

/// Mean softmax cross-entropy, written the way a user writes it (log-sum-exp with the max
/// held constant by `stop_grad`).
fn cross_entropy(z: &Tensor, labels: &Tensor) -> Result<Tensor> {
    let m = z.reduce_max_keep([1])?.stop_grad()?;
    let shifted = z.subtract(&m)?;
    let log_sum = shifted.exp()?.sum_keep([1])?.log()?;
    let log_softmax = shifted.subtract(&log_sum)?;
    log_softmax.multiply(labels)?.sum([1])?.mean(..)?.negate()
}

#[test]
fn softmax_cross_entropy_has_the_textbook_gradient() {
    let (rows, cols) = (4, 5);
    let z: Vec<f64> = (0..20).map(|i| ((i * 7) % 11) as f64 * 0.3 - 1.2).collect();
    let labels_of = [1usize, 4, 0, 2];
    let mut y = vec![0.0; 20];
    for (r, &l) in labels_of.iter().enumerate() {
        y[r * cols + l] = 1.0;
    }
    let p = softmax_rows(&z, rows, cols);
    let expected: Vec<f64> = p
        .iter()
        .zip(&y)
        .map(|(p, y)| (p - y) / rows as f64)
        .collect();
    let loss: f64 = (0..rows)
        .map(|r| -p[r * cols + labels_of[r]].ln())
        .sum::<f64>()
        / rows as f64;
    let f = value_and_grad_wrt(cross_entropy, &[0]);
    for device in devices() {
        let zt = f64s(&z, &[rows, cols]).backend_copy(device).unwrap();
        let yt = f64s(&y, &[rows, cols]).backend_copy(device).unwrap();
        let (value, grads) = f.on(device).call((&zt, &yt)).unwrap();
        assert!(
            (value.to_scalar::<f64>().unwrap() - loss).abs() < 1e-12,
            "{device}"
        );
        assert_eq!(grads.len(), 1);
        for (a, e) in grads[0].to_vec::<f64>().unwrap().iter().zip(&expected) {
            assert!((a - e).abs() < 1e-12, "{device}: {a} vs {e}");
        }
    }
}

/// A 2-layer network (relu, then mean squared error), with its gradients derived by hand in
/// plain loops.
#[test]
fn a_two_layer_network_has_the_hand_derived_gradients() {
    let (n, i, h, o) = (4usize, 3usize, 5usize, 2usize);
    let gen = |len: usize, k: f64| -> Vec<f64> {
        (0..len).map(|j| (j as f64 * 1.7 + k).sin() * 0.8).collect()
    };
    let (x, w1, b1, w2, b2, t) = (
        gen(n * i, 0.1),
        gen(i * h, 0.7),
        gen(h, 1.3),
        gen(h * o, 2.1),
        gen(o, 2.9),
        gen(n * o, 3.7),
    );
    // Forward.
    let mut z1 = vec![0.0; n * h];
    for r in 0..n {
        for c in 0..h {
            z1[r * h + c] = b1[c] + (0..i).map(|k| x[r * i + k] * w1[k * h + c]).sum::<f64>();
        }
    }
    let a1: Vec<f64> = z1.iter().map(|v| v.max(0.0)).collect();
    let mut out = vec![0.0; n * o];
    for r in 0..n {
        for c in 0..o {
            out[r * o + c] = b2[c] + (0..h).map(|k| a1[r * h + k] * w2[k * o + c]).sum::<f64>();
        }
    }
    let count = (n * o) as f64;
    let loss: f64 = out
        .iter()
        .zip(&t)
        .map(|(p, t)| (p - t).powi(2))
        .sum::<f64>()
        / count;
    // Backward.
    let d_out: Vec<f64> = out
        .iter()
        .zip(&t)
        .map(|(p, t)| 2.0 * (p - t) / count)
        .collect();
    let mut d_w2 = vec![0.0; h * o];
    let mut d_b2 = vec![0.0; o];
    let mut d_a1 = vec![0.0; n * h];
    for r in 0..n {
        for c in 0..o {
            d_b2[c] += d_out[r * o + c];
            for k in 0..h {
                d_w2[k * o + c] += a1[r * h + k] * d_out[r * o + c];
                d_a1[r * h + k] += w2[k * o + c] * d_out[r * o + c];
            }
        }
    }
    let d_z1: Vec<f64> = d_a1
        .iter()
        .zip(&z1)
        .map(|(d, z)| if *z > 0.0 { *d } else { 0.0 })
        .collect();
    let mut d_w1 = vec![0.0; i * h];
    let mut d_b1 = vec![0.0; h];
    for r in 0..n {
        for c in 0..h {
            d_b1[c] += d_z1[r * h + c];
            for k in 0..i {
                d_w1[k * h + c] += x[r * i + k] * d_z1[r * h + c];
            }
        }
    }
    let f = value_and_grad_wrt(
        |args: &[Tensor]| {
            let (w1, b1, w2, b2, x, t) =
                (&args[0], &args[1], &args[2], &args[3], &args[4], &args[5]);
            let hidden = x.dot(w1)?.add(b1)?.max(0.0)?;
            let out = hidden.dot(w2)?.add(b2)?;
            out.subtract(t)?.square()?.mean(..)
        },
        &[0, 1, 2, 3],
    );
    for device in devices() {
        let put = |v: &[f64], s: &[usize]| f64s(v, s).backend_copy(device).unwrap();
        let args = vec![
            put(&w1, &[i, h]),
            put(&b1, &[h]),
            put(&w2, &[h, o]),
            put(&b2, &[o]),
            put(&x, &[n, i]),
            put(&t, &[n, o]),
        ];
        let (value, grads) = f.on(device).call(&args).unwrap();
        assert!((value.to_scalar::<f64>().unwrap() - loss).abs() < 1e-12);
        for (g, e) in grads.iter().zip([&d_w1, &d_b1, &d_w2, &d_b2]) {
            assert_eq!(g.device(), device);
            for (a, e) in g.to_vec::<f64>().unwrap().iter().zip(e.iter()) {
                assert!((a - e).abs() < 1e-12, "{device}: {a} vs {e}");
            }
        }
        assert!(
            jit_cached(&f.on(device), &args).unwrap(),
            "compiled once per device, then cached"
        );
    }
}

#[test]
fn ties_share_the_gradient_as_in_nx() {
    let x = f64s(&[1.0, 3.0, 3.0, 0.0], &[4]);
    let g = grad(|x: &Tensor| x.reduce_max(..)).call(&x).unwrap();
    assert_eq!(g[0].to_vec::<f64>().unwrap(), vec![0.0, 0.5, 0.5, 0.0]);
    // relu at exactly 0: max(x, 0) ties, each side gets half.
    let g = grad(|x: &Tensor| x.max(0.0)?.sum(..)).call(&x).unwrap();
    assert_eq!(g[0].to_vec::<f64>().unwrap(), vec![1.0, 1.0, 1.0, 0.5]);
}

/// Nx and JAX: the slope of a product at each element is the product of the others, zeros
/// included (it was NaN at a zero, from out / x).
#[test]
fn a_product_at_zeros_has_the_product_of_the_others() {
    for device in devices() {
        let product = grad(|x: &Tensor| x.product(..));
        for (values, expected) in [
            (vec![0.0, 2.0, 3.0], vec![6.0, 0.0, 0.0]),
            (vec![0.0, 0.0, 3.0], vec![0.0, 0.0, 0.0]),
            (vec![1.5, 2.0, -4.0], vec![-8.0, -6.0, 3.0]),
        ] {
            let x = on(device).from_slice(&values, &[3]).unwrap();
            let g = product.call(&x).unwrap();
            assert_eq!(
                g[0].to_vec::<f64>().unwrap(),
                expected,
                "{device} {values:?}"
            );
        }
        // Along an axis: each row on its own.
        let x = on(device)
            .from_slice(&[0.0, 2.0, 3.0, 1.0, 0.0, 0.0], &[2, 3])
            .unwrap();
        let g = grad(|x: &Tensor| x.product([1])?.sum(..)).call(&x).unwrap();
        assert_eq!(
            g[0].to_vec::<f64>().unwrap(),
            vec![6.0, 0.0, 0.0, 0.0, 0.0, 0.0],
            "{device}"
        );
    }
}

/// `g.call(&[x, w])`, a user's first try with two arguments, and the other array forms.
// The borrowed forms are what users write; each must compile.
#[allow(clippy::needless_borrows_for_generic_args)]
#[test]
fn arrays_of_tensors_are_arguments() {
    let x = f64s(&[1.0, 2.0], &[2]);
    let w = f64s(&[3.0, 4.0], &[2]);
    let g = grad(|x: &Tensor, w: &Tensor| x.multiply(w)?.sum(..));
    let by_ref = g.call(&[x.clone(), w.clone()]).unwrap();
    let by_value = g.call([x.clone(), w.clone()]).unwrap();
    let refs = g.call(&[&x, &w]).unwrap();
    for result in [by_ref, by_value, refs] {
        assert_eq!(result[0].to_vec::<f64>().unwrap(), vec![3.0, 4.0]);
        assert_eq!(result[1].to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
    }
}

#[test]
fn casts_and_integers_follow_nx() {
    // Through as_type the gradient comes back in the argument's dtype.
    let x = on(Device::host(0))
        .from_vec(vec![1.5f32, -2.0], &[2])
        .unwrap();
    let g = grad(|x: &Tensor| x.as_type(DType::F64)?.square()?.sum(..))
        .call(&x)
        .unwrap();
    assert_eq!(g[0].dtype(), DType::F32);
    assert_eq!(g[0].to_vec::<f32>().unwrap(), vec![3.0, -4.0]);
    // An integer argument, and integer ops, have a zero gradient.
    let k = on(Device::host(0)).from_vec(vec![3i64, 4], &[2]).unwrap();
    let g = grad(|x: &Tensor, k: &Tensor| {
        x.multiply(&k.as_type(DType::F32)?)?
            .floor()?
            .add(x)?
            .sum(..)
    })
    .call((&x, &k))
    .unwrap();
    assert_eq!(g[0].to_vec::<f32>().unwrap(), vec![1.0, 1.0]);
    assert_eq!(g[1].dtype(), DType::F32);
    assert_eq!(g[1].to_vec::<f32>().unwrap(), vec![0.0, 0.0]);
}

#[test]
fn eager_and_jit_agree_and_only_jit_caches() {
    let f = value_and_grad(|w: &Tensor, x: &Tensor| x.dot(w)?.tanh()?.sum(..));
    let w = random(3, DType::F32, &[6, 2])
        .backend_copy(Device::host(0))
        .unwrap();
    let x = random(4, DType::F32, &[5, 6])
        .backend_copy(Device::host(0))
        .unwrap();
    let eager = f.eager();
    let (ve, ge) = eager.call((&w, &x)).unwrap();
    assert!(!jit_cached(&f, (&w, &x)).unwrap());
    let (vj, gj) = f.call((&w, &x)).unwrap();
    assert!(jit_cached(&f, (&w, &x)).unwrap());
    assert!((ve.to_scalar::<f32>().unwrap() - vj.to_scalar::<f32>().unwrap()).abs() < 1e-5);
    for (a, b) in ge.iter().zip(&gj) {
        for (x, y) in a
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .zip(b.to_vec::<f32>().unwrap())
        {
            assert!((x - y).abs() < 1e-5);
        }
    }
    assert!(f
        .to_string()
        .starts_with("#Function<value_and_grad, 2 arguments"));
    assert!(eager.to_string().contains("eager"));
}

#[test]
fn a_user_rule_and_a_bad_rule() {
    // A straight-through estimator: round forward, identity backward.
    let f = grad(|x: &Tensor| {
        let r = custom_grad(&x.round()?, &[x], |g| Ok(vec![g.clone()]))?;
        r.multiply(x)?.sum(..)
    });
    let x = f64s(&[0.4, 1.6], &[2]);
    // d/dx [round(x) * x] with round's slope taken as 1: x + round(x).
    assert_eq!(
        f.call(&x).unwrap()[0].to_vec::<f64>().unwrap(),
        vec![0.4, 3.6]
    );
    let bad = grad(|x: &Tensor| {
        custom_grad(&x.exp()?, &[x], |g| Ok(vec![g.clone(), g.clone()]))?.sum(..)
    });
    let e = bad.call(&x).unwrap_err().to_string();
    assert!(e.contains("2 tensors for 1 inputs"), "{e}");
    let data_only = grad_wrt(|w: &Tensor, x: &Tensor| w.multiply(x)?.sum(..), &[1]);
    assert_eq!(
        data_only.call((&x, &x)).unwrap()[0]
            .to_vec::<f64>()
            .unwrap(),
        vec![0.4, 1.6]
    );
}

#[test]
fn a_gradient_too_large_to_hold_is_an_error_not_an_abort() {
    // 200,000 repeats of one row: the one-hot matrix that sums them back would be 320 GB.
    let rows = on(Device::BINARY).zeros(DType::S64, &[200_000]).unwrap();
    let f = grad(move |x: &Tensor| x.take(&rows, 0)?.sum(..));
    let x = on(Device::host(0)).zeros(DType::F32, &[200_000]).unwrap();
    let e = f.call(&x).unwrap_err().to_string();
    assert!(e.contains("cannot allocate f64[200000][200000]"), "{e}");
}

/// Every float math function's gradient (Nx's grad.ex rules) against central differences of
/// the function itself, in f64, at points inside its domain, on every device.
#[test]
fn float_math_gradients_match_central_differences() {
    type Op = fn(&Tensor) -> Result<Tensor>;
    let inside = [-0.7, -0.2, 0.3, 0.8];
    let positive = [0.3, 0.9, 1.7, 2.6];
    let above_one = [1.2, 1.6, 2.3, 3.1];
    let cases: [(&str, Op, [f64; 4]); 17] = [
        ("expm1", Tensor::expm1, inside),
        ("log1p", Tensor::log1p, inside),
        ("log2", Tensor::log2, positive),
        ("log10", Tensor::log10, positive),
        ("tan", Tensor::tan, inside),
        ("sinh", Tensor::sinh, inside),
        ("cosh", Tensor::cosh, inside),
        ("asin", Tensor::asin, inside),
        ("acos", Tensor::acos, inside),
        ("atan", Tensor::atan, [-2.0, -0.2, 0.3, 1.9]),
        ("asinh", Tensor::asinh, [-2.0, -0.2, 0.3, 1.9]),
        ("acosh", Tensor::acosh, above_one),
        ("atanh", Tensor::atanh, inside),
        ("cbrt", Tensor::cbrt, [-2.0, -0.3, 0.4, 1.9]),
        ("erf", Tensor::erf, [-1.5, -0.2, 0.3, 1.1]),
        ("erfc", Tensor::erfc, [-1.5, -0.2, 0.3, 1.1]),
        ("erf_inv", Tensor::erf_inv, inside),
    ];
    let h = 1e-6;
    for device in devices() {
        for (name, op, points) in cases {
            let x = on(device).from_slice(&points, &[4]).unwrap();
            let g = grad(move |x: &Tensor| op(x)?.sum(..)).call(&x).unwrap();
            let got = g[0].to_vec::<f64>().unwrap();
            let up = op(&x.add(h).unwrap()).unwrap().to_vec::<f64>().unwrap();
            let down = op(&x.subtract(h).unwrap())
                .unwrap()
                .to_vec::<f64>()
                .unwrap();
            for i in 0..4 {
                let expected = (up[i] - down[i]) / (2.0 * h);
                assert!(
                    (got[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                    "{name}'({}) on {device}: {} against {expected}",
                    points[i],
                    got[i]
                );
            }
        }
    }
}

/// The composed reductions' gradients (they come from their parts' rules) against central
/// differences, element by element, in f64 on every device.
#[test]
fn composed_reductions_have_the_gradients_of_their_definitions() {
    type Reduction = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, Reduction); 4] = [
        ("logsumexp", |x| x.logsumexp([1])?.sum(..)),
        ("variance", |x| x.variance([0], 1)?.sum(..)),
        ("standard_deviation", |x| x.standard_deviation(.., 0)),
        ("weighted_mean", |x| {
            let w = on(x.device()).from_slice(&[0.5, 2.0, 1.0, 3.0, 0.25, 1.5], &[2, 3])?;
            x.weighted_mean(&w, [1])?.sum(..)
        }),
    ];
    let values = [0.3, -1.2, 2.5, 0.7, 1.9, -0.4];
    let h = 1e-6;
    for device in devices() {
        for (name, f) in cases {
            let x = on(device).from_slice(&values, &[2, 3]).unwrap();
            let g = grad(move |x: &Tensor| f(x)).call(&x).unwrap()[0]
                .to_vec::<f64>()
                .unwrap();
            for i in 0..values.len() {
                let at = |delta: f64| {
                    let mut v = values;
                    v[i] += delta;
                    let t = on(device).from_slice(&v, &[2, 3]).unwrap();
                    f(&t).unwrap().to_scalar::<f64>().unwrap()
                };
                let expected = (at(h) - at(-h)) / (2.0 * h);
                assert!(
                    (g[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                    "{name}: d/dx{i} on {device}: {} against {expected}",
                    g[i]
                );
            }
        }
    }
}

/// remainder and atan2 against central differences in each operand (f64, every device), at
/// points of both signs away from remainder's jumps.
#[test]
fn two_operand_math_gradients_match_central_differences() {
    type Op = fn(&Tensor, &Tensor) -> Result<Tensor>;
    let xs = [-7.3, -0.9, 2.2, 5.1];
    let ys = [2.1, -0.4, 0.7, -1.6];
    let cases: [(&str, Op); 2] = [
        ("remainder", |x, y| x.remainder(y)),
        ("atan2", |x, y| x.atan2(y)),
    ];
    let h = 1e-6;
    for device in devices() {
        let x = on(device).from_slice(&xs, &[4]).unwrap();
        let y = on(device).from_slice(&ys, &[4]).unwrap();
        for (name, op) in cases {
            let g = grad(move |x: &Tensor, y: &Tensor| op(x, y)?.sum(..))
                .call((&x, &y))
                .unwrap();
            for k in [0usize, 1] {
                let bump = |d: f64| {
                    let (a, b) = if k == 0 {
                        (x.add(d).unwrap(), y.clone())
                    } else {
                        (x.clone(), y.add(d).unwrap())
                    };
                    op(&a, &b).unwrap().to_vec::<f64>().unwrap()
                };
                let (up, down) = (bump(h), bump(-h));
                let got = g[k].to_vec::<f64>().unwrap();
                for i in 0..4 {
                    let expected = (up[i] - down[i]) / (2.0 * h);
                    assert!(
                        (got[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                        "d {name}/d operand {k} at ({}, {}) on {device}: {} against {expected}",
                        xs[i],
                        ys[i],
                        got[i]
                    );
                }
            }
        }
    }
}

/// `select` sends the gradient to the chosen side only (broadcast sides summed back), and
/// `clip` passes it to `x` from bound to bound inclusive, as Nx's rules.
#[test]
fn select_and_clip_gradients_follow_nx() {
    for device in devices() {
        let place = on(device);
        let x = place
            .from_slice(&[-2.0, -1.0, 0.5, 1.0, 3.0], &[5])
            .unwrap();
        let y = place.from_slice(&[10.0], &[1]).unwrap();
        let g = grad(|x: &Tensor, y: &Tensor| {
            x.greater(0.0)?
                .select(&x.multiply(3.0)?, &y.multiply(x)?)?
                .sum(..)
        })
        .call((&x, &y))
        .unwrap();
        assert_eq!(g[0].to_vec::<f64>().unwrap(), [10.0, 10.0, 3.0, 3.0, 3.0]);
        assert_eq!(g[1].to_vec::<f64>().unwrap(), [-3.0]);
        let c = grad(|x: &Tensor| x.clip(-1.0, 1.0)?.sum(..))
            .call(&x)
            .unwrap();
        assert_eq!(
            c[0].to_vec::<f64>().unwrap(),
            [0.0, 1.0, 1.0, 1.0, 0.0],
            "clip on {device}"
        );
    }
}

/// `grad` of `f` (a scalar function of `x`, f64) against central differences, input by input.
fn check_against_central_differences(
    what: &str,
    x: &Tensor,
    f: impl Fn(&Tensor) -> Result<Tensor> + Clone + Send + Sync + 'static,
) {
    let h = 1e-6;
    let g = grad(f.clone()).call(x).unwrap()[0].to_vec::<f64>().unwrap();
    let base = x.to_vec::<f64>().unwrap();
    for i in 0..base.len() {
        let at = |d: f64| {
            let mut v = base.clone();
            v[i] += d;
            let t = on(x.device()).from_slice(&v, x.shape()).unwrap();
            f(&t).unwrap().to_scalar::<f64>().unwrap()
        };
        let expected = (at(h) - at(-h)) / (2.0 * h);
        assert!(
            (g[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
            "{what}: x[{i}] on {}: {} against {expected}",
            x.device(),
            g[i]
        );
    }
}

/// Gradients through the composed layout functions (pad with interior and a crop, pad_outer
/// by reflection, reverse, tile) against central differences of a weighted sum.
#[test]
fn layout_function_gradients_match_central_differences() {
    let cases: [(&str, UnaryCase); 4] = [
        ("pad", |x| x.pad(0.5, &[(1, -1, 1), (-1, 2, 0)])),
        ("reflect", |x| x.reflect(&[(1, 1), (2, 0)])),
        ("reverse", |x| x.reverse([1])),
        ("tile", |x| x.tile(&[2, 1, 2])),
    ];
    check_weighted_sums(&cases);
}

/// A function of one tensor whose gradient a test checks.
type UnaryCase = fn(&Tensor) -> Result<Tensor>;

/// Each case's result, summed with uneven weights (sines of an iota, all different and none
/// zero), checked against central differences on every device at one [2, 3] input.
fn check_weighted_sums(cases: &[(&'static str, UnaryCase)]) {
    for device in devices() {
        let x = on(device)
            .from_slice(&[0.3, -1.2, 0.7, 2.0, -0.4, 1.1], &[2, 3])
            .unwrap();
        for &(name, op) in cases {
            check_against_central_differences(name, &x, move |x: &Tensor| {
                let y = op(x)?;
                let w = on(x.device())
                    .iota(DType::F64, y.shape(), None)?
                    .sin()?
                    .add(0.5)?;
                y.multiply(&w)?.sum(..)
            });
        }
    }
}

/// The four scans against central differences along either axis and direction (the running
/// maximum and minimum send each entry's gradient to the entry that holds it).
#[test]
fn cumulative_gradients_match_central_differences() {
    for device in devices() {
        let x = on(device)
            .from_slice(&[0.3, -1.2, 0.7, 2.0, -0.4, 1.1], &[2, 3])
            .unwrap();
        for axis in [0isize, 1] {
            for reverse in [false, true] {
                for scan in ["sum", "product", "max", "min"] {
                    let what = format!("cumulative_{scan} axis {axis} reverse {reverse}");
                    check_against_central_differences(&what, &x, move |x: &Tensor| {
                        let y = match scan {
                            "product" => x.cumulative_product(axis, reverse)?,
                            "max" => x.cumulative_max(axis, reverse)?,
                            "min" => x.cumulative_min(axis, reverse)?,
                            _ => x.cumulative_sum(axis, reverse)?,
                        };
                        let w = on(x.device()).iota(DType::F64, y.shape(), None)?.cos()?;
                        y.multiply(&w)?.sum(..)
                    });
                }
            }
        }
        // A tie sends the gradient to one of the equal entries, never to both.
        let ties = on(device).from_slice(&[1.0, 3.0, 3.0, 2.0], &[4]).unwrap();
        let g = grad(|x: &Tensor| x.cumulative_max(0, false)?.sum(..))
            .call(&ties)
            .unwrap();
        assert_eq!(
            g[0].to_vec::<f64>().unwrap(),
            [1.0, 1.0, 2.0, 0.0],
            "on {device}"
        );
        let g = grad(|x: &Tensor| x.cumulative_min(0, true)?.sum(..))
            .call(&ties)
            .unwrap();
        assert_eq!(
            g[0].to_vec::<f64>().unwrap(),
            [1.0, 0.0, 0.0, 3.0],
            "on {device}"
        );
    }
}

/// Gradients through sorting and the indexed ops against central differences: a sort sends
/// each entry's gradient back to its place, a gather's (repeated reads add up) lands where it
/// read, a scatter-add passes to the target and the updates, a put masks the target.
#[test]
fn sort_and_indexed_gradients_match_central_differences() {
    let cases: [(&str, UnaryCase); 11] = [
        ("sort axis 0", |x| x.sort(0, Direction::Asc)),
        ("sort axis 1 desc", |x| x.sort(1, Direction::Desc)),
        ("top_k", |x| Ok(x.top_k(2)?.0)),
        ("median", |x| x.median(1)),
        ("median of all", |x| x.median(..)),
        ("take_along_axis", |x| {
            x.take_along_axis(
                &on(x.device()).from_vec(vec![2i64, 2, 0, 1, 1, 1], &[2, 3])?,
                1,
            )
        }),
        ("gather", |x| {
            x.gather(
                &on(x.device()).from_vec(vec![1i64, 2, 0, 0, 1, 2], &[3, 2])?,
                ..,
            )
        }),
        ("gather slices", |x| {
            x.gather(&on(x.device()).from_vec(vec![1i64, 1, 0], &[3, 1])?, ..)
        }),
        ("indexed_add to the target", |x| {
            let updates = on(x.device()).from_slice(&[0.5, -2.0, 1.5], &[3])?;
            x.indexed_add(
                &on(x.device()).from_vec(vec![0i64, 1, 0, 1, 1, 2], &[3, 2])?,
                &updates,
                ..,
            )
        }),
        ("indexed_put over the target", |x| {
            let updates = on(x.device()).from_slice(&[0.5, -2.0], &[2])?;
            x.indexed_put(
                &on(x.device()).from_vec(vec![0i64, 1, 1, 2], &[2, 2])?,
                &updates,
                ..,
            )
        }),
        ("indexed_add and put of the updates", |x| {
            let target = on(x.device()).zeros(DType::F64, &[4, 2])?;
            let rows = on(x.device()).from_vec(vec![3i64, 0], &[2, 1])?;
            let added = target.indexed_add(&rows, &x.slice(&[0, 0], &[2, 2], None)?, ..)?;
            added.indexed_put(&rows.add(1)?, &x.slice(&[0, 1], &[2, 2], None)?, ..)
        }),
    ];
    check_weighted_sums(&cases);
}

/// Nx's `dot` forms are a transpose, a reshape and the matrix product, the triangles a select
/// and the diagonals a gather or an indexed_put; their gradients come from those rules and
/// must agree with central differences.
#[test]
fn products_triangles_and_diagonals_differentiate() {
    let cases: [(&'static str, UnaryCase); 8] = [
        ("tril", |x| x.tril(0)),
        ("triu above the main diagonal", |x| x.triu(1)),
        ("take_diagonal", |x| x.take_diagonal(1)),
        ("put_diagonal of the diagonal and around it", |x| {
            x.put_diagonal(&x.take_diagonal(0)?.exp()?, 0)
        }),
        ("dot of a rank-3 by x", |x| {
            let cube = on(x.device()).iota(DType::F64, &[2, 2, 2], None)?.sin()?;
            cube.reshape(&[2, 2, 2])?
                .dot(&x.slice(&[0, 0], &[2, 3], None)?)
        }),
        ("dot_axes over axis 0 of both", |x| {
            x.dot_axes(&[0], x, &[0])
        }),
        ("dot_general with a batch axis", |x| {
            let other = on(x.device()).iota(DType::F64, &[2, 3, 4], None)?.cos()?;
            x.dot_general(&[1], &[0], &other, &[1], &[0])
        }),
        ("outer", |x| x.outer(&x.sum([0])?)),
    ];
    check_weighted_sums(&cases);
}

/// A complex tensor of `shape` from its real and imaginary parts.
fn complex_of(device: Device, re: &[f64], im: &[f64], shape: &[usize]) -> Tensor {
    let part = |v: &[f64]| on(device).from_slice(v, shape).unwrap();
    part(re).complex(&part(im)).unwrap()
}

/// The real and imaginary parts of a complex tensor.
fn parts(z: &Tensor) -> (Vec<f64>, Vec<f64>) {
    let part = |t: Tensor| t.as_type(DType::F64).unwrap().to_vec::<f64>().unwrap();
    (part(z.real().unwrap()), part(z.imag().unwrap()))
}

/// Nx's gradient tests of complex functions (`grad_test.exs`: abs, fft and ifft with and
/// without `:length`, composed with cos and exp, and `as_type` taking the real part).
#[test]
fn complex_gradients_follow_nx() {
    let close = |got: &Tensor, re: &[f64], im: &[f64], what: &str| {
        let (r, i) = parts(got);
        for (k, (a, b)) in r.iter().zip(re).chain(i.iter().zip(im)).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                "{what}: part {k}: {a} vs {b}"
            );
        }
    };
    for device in devices() {
        let z = complex_of(device, &[0.0, 0.0, 2.0], &[0.0, 1.0, 0.0], &[3]);
        let g = grad(|z: &Tensor| z.abs()?.sum(..)).call(&z).unwrap();
        assert_eq!(g[0].dtype(), DType::C128);
        close(&g[0], &[0.0, 0.0, 1.0], &[0.0, -1.0, 0.0], "abs");
        let z = complex_of(device, &[0.0, 0.0, 2.0, 0.0], &[0.0, 1.0, 0.0, -3.0], &[4]);
        let g = grad(|z: &Tensor| z.abs()?.pow(2.0)?.sum(..))
            .call(&z)
            .unwrap();
        close(
            &g[0],
            &[0.0, 0.0, 4.0, 0.0],
            &[0.0, -2.0, 0.0, 6.0],
            "abs squared",
        );

        let t = complex_of(
            device,
            &[5.0, 5.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0],
            &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
            &[3, 4],
        )
        .as_type(DType::C64)
        .unwrap();
        let first =
            |v: f64| -> Vec<f64> { (0..12).map(|i| if i % 4 == 0 { v } else { 0.0 }).collect() };
        let zeros = [0.0; 12];
        for (length, fft_scale, ifft_scale) in [(None, 4.0, 1.0), (Some(8usize), 8.0, 1.0)] {
            let options = move || match length {
                Some(n) => FftOptions::new().length(n),
                None => FftOptions::new(),
            };
            let g = grad(move |t: &Tensor| t.fft_with(options())?.sum(..))
                .call(&t)
                .unwrap();
            assert_eq!(g[0].dtype(), DType::C64);
            close(&g[0], &first(fft_scale), &zeros, "grad of sum(fft)");
            let g = grad(move |t: &Tensor| t.ifft_with(options())?.sum(..))
                .call(&t)
                .unwrap();
            close(&g[0], &first(ifft_scale), &zeros, "grad of sum(ifft)");
        }
        let padded = t.pad(0, &[(0, 0, 0), (0, 2, 0)]).unwrap();
        // 18 imaginary parts, all 0 but one.
        let only = |at: usize, v: f64| -> Vec<f64> {
            (0..18).map(|i| if i == at { v } else { 0.0 }).collect()
        };
        let composed = |inverse: bool| {
            grad(move |t: &Tensor| {
                let c = t.cos()?;
                let options = FftOptions::new().length(4);
                let f = if inverse {
                    c.ifft_with(options)?
                } else {
                    c.fft_with(options)?
                };
                f.exp()?.sum(..)
            })
            .call(&padded)
            .unwrap()
            .remove(0)
        };
        close(
            &composed(false),
            &[
                14.16124, 12.1516, 0.0, 0.0, 0.0, 0.0, -2.89999, 0.737196, 0.737196, 0.737196, 0.0,
                0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            ],
            &only(13, -108.54785),
            "fft composed",
        );
        close(
            &composed(true),
            &[
                1.0896463, 0.28715, 0.0, 0.0, 0.0, 0.0, -0.8319124, 0.077385, 0.077385, 0.077385,
                0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            ],
            &only(13, -0.57873374),
            "ifft composed",
        );

        // as_type to a real type takes the real part, so its gradient is the real one.
        let z = complex_of(device, &[1.0, 2.0, 3.0], &[1.0, 1.0, 1.0], &[3]);
        let g = grad(|z: &Tensor| z.as_type(DType::F32)?.cos()?.sum(..))
            .call(&z)
            .unwrap();
        let minus_sin: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|x| -x.sin()).collect();
        close(&g[0], &minus_sin, &[0.0; 3], "as_type");
    }
}

/// Real functions of complex tensors against central differences along both parts: the
/// gradient is `∂L/∂x - i·∂L/∂y` (Nx's and JAX's convention).
#[test]
fn complex_gradients_match_central_differences_along_both_parts() {
    type Loss = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, Loss); 18] = [
        ("abs", |z| z.add(0.5)?.abs()),
        ("exp", |z| z.exp()?.real()),
        ("square, imag", |z| z.square()?.imag()),
        ("conjugate", |z| z.conjugate()?.multiply(&z.sin()?)?.real()),
        ("phase", |z| z.phase()),
        ("fft", |z| z.fft()?.abs()),
        ("ifft along 0", |z| {
            z.ifft_with(FftOptions::new().axis(0))?.imag()
        }),
        ("fft2, log", |z| z.fft2()?.add(7.0)?.log()?.real()),
        ("solve", |z| {
            let shift = on(z.device()).eye(z.dtype(), 2)?.multiply(3.0)?;
            let a = z.slice(&[0, 0], &[2, 2], None)?.add(&shift)?;
            a.solve(z)?.abs()
        }),
        ("cholesky", |z| {
            let shift = on(z.device()).eye(z.dtype(), 2)?.multiply(3.0)?;
            let h = z.matmul(&z.adjoint()?)?.add(&shift)?;
            h.cholesky()?.abs()?.dot(z)?.real()
        }),
        ("determinant", |z| {
            // 4×4, past the closed forms: the pivoted elimination.
            let m = Tensor::concatenate(&[z.clone(), z.sin()?], 0)?;
            let shift = on(z.device()).eye(z.dtype(), 4)?.multiply(2.0)?;
            let h = m.matmul(&m.transpose(..)?)?.add(&shift)?;
            h.determinant()?.multiply(z)?.imag()
        }),
        ("conv", |z| {
            let x = z.reshape(&[1, 1, 6])?;
            let w = z
                .slice(&[0, 0], &[1, 3], None)?
                .sin()?
                .reshape(&[1, 1, 3])?;
            x.conv(&w, tensorbook::Conv::new().padding([(1, 1)]))?
                .imag()
        }),
        ("lu", |z| {
            let shift = on(z.device()).eye(z.dtype(), 3)?.multiply(2.0)?;
            let a = z.transpose(..)?.matmul(&z.sin()?)?.add(&shift)?;
            let (_, l, u) = a.lu()?;
            l.multiply(&u.exp()?)?.imag()
        }),
        ("qr, wide", |z| {
            let (q, r) = z.qr()?;
            q.sin()?.matmul(&r)?.imag()
        }),
        ("qr, tall and complete", |z| {
            let (q, r) = z.transpose(..)?.qr_complete()?;
            // The complete q's last column spans the null space in no particular phase: only
            // the first two carry a gradient.
            Tensor::concatenate(&[q.slice_along_axis(0, 2, 1)?.real()?, r.imag()?], 1)
        }),
        ("eigh, values", |z| {
            let shift = on(z.device()).eye(z.dtype(), 3)?.multiply(3.0)?;
            let (w, _) = z.adjoint()?.matmul(z)?.add(&shift)?.eigh()?;
            w.real()
        }),
        ("eigh, vectors of a lower triangle", |z| {
            let shift = on(z.device()).eye(z.dtype(), 3)?.multiply(3.0)?;
            let h = z.adjoint()?.matmul(z)?.add(&shift)?;
            // The strict upper triangle is not read, so its gradient is 0.
            let h = h.add(&h.triu(1)?.multiply(&z.slice(&[0, 0], &[1, 3], None)?)?)?;
            let (w, v) = h.eigh()?;
            v.multiply(&w.new_axis(0)?)?.imag()
        }),
        ("eigh, vectors' phases", |z| {
            let shift = on(z.device()).eye(z.dtype(), 2)?.multiply(2.0)?;
            let (_, v) = z.matmul(&z.adjoint()?)?.add(&shift)?.eigh()?;
            v.matmul(&z.slice(&[0, 0], &[2, 2], None)?)?.real()
        }),
    ];
    let re = [0.3, -1.2, 0.7, 2.0, -0.4, 1.1];
    let im = [0.9, 0.2, -0.5, -1.3, 0.6, 0.4];
    let h = 1e-6;
    let mut failures = Vec::new();
    for device in devices() {
        for &(name, loss) in &cases {
            // Weighted unevenly, so no entry's gradient is another's.
            let f = move |z: &Tensor| -> Result<Tensor> {
                let y = loss(z)?;
                let w = on(z.device())
                    .iota(DType::F64, y.shape(), None)?
                    .sin()?
                    .add(0.5)?;
                y.multiply(&w)?.sum(..)
            };
            let z = complex_of(device, &re, &im, &[2, 3]);
            let g = grad(f).call(&z).unwrap().remove(0);
            assert_eq!(g.dtype(), DType::C128, "{name}");
            let (gr, gi) = parts(&g);
            let at = |k: usize, part: usize, d: f64| {
                let (mut r, mut i) = (re, im);
                if part == 0 {
                    r[k] += d
                } else {
                    i[k] += d
                }
                f(&complex_of(device, &r, &i, &[2, 3]))
                    .unwrap()
                    .to_scalar::<f64>()
                    .unwrap()
            };
            for k in 0..6 {
                let dx = (at(k, 0, h) - at(k, 0, -h)) / (2.0 * h);
                let dy = (at(k, 1, h) - at(k, 1, -h)) / (2.0 * h);
                for (got, want, part) in [(gr[k], dx, "real"), (gi[k], -dy, "imaginary")] {
                    if (got - want).abs() > 1e-6 * want.abs().max(1.0) {
                        failures.push(format!(
                            "{name} on {device}: {part} part of entry {k}: {got} against {want}"
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
