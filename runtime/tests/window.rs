//! Window reductions and the max-pool gradient scatter (`Nx.window_*`): Nx's documented
//! examples on every device, every device against `binary`, errors, and gradients against
//! central differences.

mod common;

use common::{assert_matches, enable_sim, random};
use tensorbook::{grad, on, DType, Device, Padding, Result, Tensor, Window};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

#[test]
fn nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let t = place
            .from_vec(vec![1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6], &[2, 2, 3])
            .unwrap();
        let sum = t.window_sum(&[1, 2, 1], Window::new()).unwrap();
        assert_eq!(sum.shape(), &[2, 1, 3]);
        assert_eq!(sum.to_vec::<i32>().unwrap(), [5, 7, 9, 5, 7, 9], "on {d}");
        let opts = || {
            Window::new()
                .strides([1, 2, 3])
                .padding([(0, 1), (2, 0), (1, 1)])
        };
        let sum = t.window_sum(&[2, 2, 1], opts()).unwrap();
        assert_eq!(
            sum.to_vec::<i32>().unwrap(),
            [0, 0, 0, 18, 0, 0, 0, 9],
            "on {d}"
        );
        let max = t.window_max(&[2, 2, 1], opts()).unwrap();
        let low = i32::MIN;
        assert_eq!(
            max.to_vec::<i32>().unwrap(),
            [low, low, low, 6, low, low, low, 6],
            "on {d}"
        );
        let f = place
            .from_slice(
                &[
                    4.0f32, 2.0, 3.0, 2.0, 5.0, 6.5, 1.2, 2.2, 3.2, 4.0, 5.0, 6.2,
                ],
                &[2, 2, 3],
            )
            .unwrap();
        let opts = || {
            Window::new()
                .strides([2, 1, 1])
                .padding([(1, 1), (0, 0), (1, 1)])
        };
        let max = f.window_max(&[2, 1, 1], opts()).unwrap();
        assert_eq!(max.shape(), &[2, 2, 5]);
        let m = max.to_vec::<f32>().unwrap();
        assert_eq!(
            m[..5],
            [f32::NEG_INFINITY, 4.0, 2.0, 3.0, f32::NEG_INFINITY]
        );
        let t = place
            .from_vec(
                vec![4, 2, 1, 3, 4, 2, 1, 7, 1, 2, 5, 7, 1, 8, 9, 2],
                &[2, 2, 4],
            )
            .unwrap();
        let dilated = || Window::new().strides([2, 1, 1]).dilations([1, 2, 1]);
        let sum = t.window_sum(&[1, 1, 2], dilated()).unwrap();
        assert_eq!(sum.shape(), &[1, 2, 3]);
        assert_eq!(sum.to_vec::<i32>().unwrap(), [6, 3, 4, 6, 3, 8], "on {d}");
        let sum = t
            .window_sum(
                &[1, 1, 2],
                Window::new().strides([2, 1, 1]).dilations([1, 2, 2]),
            )
            .unwrap();
        assert_eq!(sum.to_vec::<i32>().unwrap(), [5, 5, 5, 9], "on {d}");
        let mean = t.window_mean(&[1, 1, 2], dilated()).unwrap();
        assert_eq!(
            mean.to_vec::<f32>().unwrap(),
            [3.0, 1.5, 2.0, 3.0, 1.5, 4.0]
        );

        // The max-pool gradient: each window's source lands on its (first) maximum.
        let t = place
            .from_vec(
                vec![
                    7, 2, 5, 3, 10, 2, 3, 8, 9, 3, 4, 2, 1, 5, 7, 5, 6, 1, 0, 6, 2, 7, 2, 8,
                ],
                &[4, 6],
            )
            .unwrap();
        let source = place.from_vec(vec![2, 6, 3, 1], &[2, 2]).unwrap();
        let scattered = t
            .window_scatter_max(&source, 0, &[2, 3], Window::new().strides([2, 3]))
            .unwrap();
        assert_eq!(
            scattered.to_vec::<i32>().unwrap(),
            [0, 0, 0, 0, 6, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            "on {d}"
        );
        let t = place
            .from_vec(
                vec![7, 2, 5, 3, 8, 3, 8, 9, 3, 4, 1, 5, 7, 5, 6, 0, 6, 2, 10, 2],
                &[4, 5],
            )
            .unwrap();
        let scattered = t
            .window_scatter_max(&source, 0, &[2, 3], Window::new().strides([2, 2]))
            .unwrap();
        assert_eq!(
            scattered.to_vec::<i32>().unwrap(),
            [0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 1, 0],
            "on {d}"
        );
    }
}

#[test]
fn every_device_matches_binary() {
    type Case = (&'static [usize], &'static [usize], fn() -> Window);
    let cases: [Case; 4] = [
        (&[2, 3, 8, 8], &[1, 1, 2, 2], || {
            Window::new().strides([1, 1, 2, 2])
        }),
        (&[2, 3, 7, 6], &[1, 1, 3, 3], || {
            Window::new().strides([1, 1, 2, 2]).padding(Padding::Same)
        }),
        (&[9, 5], &[2, 3], || {
            Window::new().dilations([2, 1]).padding([(1, 0), (0, 2)])
        }),
        (&[4, 4, 4], &[2, 2, 2], || Window::new().strides(2)),
    ];
    for (i, (shape, window, options)) in cases.iter().enumerate() {
        for dtype in [DType::F32, DType::S32] {
            let x = random(i as u64, dtype, shape);
            let reference = |t: &Tensor| -> Vec<Tensor> {
                vec![
                    t.window_sum(window, options()).unwrap(),
                    t.window_mean(window, options()).unwrap(),
                    t.window_max(window, options()).unwrap(),
                    t.window_min(window, options()).unwrap(),
                    t.window_product(window, options()).unwrap(),
                ]
            };
            let expected = reference(&x);
            let source = random(50, dtype, expected[2].shape());
            let scatter = x.window_scatter_max(&source, 0, window, options()).unwrap();
            for d in devices() {
                let here = x.backend_copy(d).unwrap();
                for (j, (e, got)) in expected.iter().zip(reference(&here)).enumerate() {
                    assert_matches(&format!("window case {i} op {j} {dtype}"), d, e, &got);
                }
                let got = here
                    .window_scatter_max(&source.backend_copy(d).unwrap(), 0, window, options())
                    .unwrap();
                assert_matches(&format!("scatter case {i} {dtype}"), d, &scatter, &got);
            }
        }
    }
}

#[test]
fn nx_errors() {
    let t = on(Device::BINARY).zeros(DType::F32, &[1, 2, 3]).unwrap();
    let err = t
        .window_sum(&[2, 1], Window::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rank of shape (3) does not match rank of window (2)"),
        "{err}"
    );
    let err = t
        .window_sum(&[2, 1, 1], Window::new())
        .unwrap_err()
        .to_string();
    assert!(err.contains("would result in empty tensor"), "{err}");
    let err = t
        .window_sum(&[1, 1, 1], Window::new().strides([1, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("strides has 2 entries but there are 3"),
        "{err}"
    );
    let source = on(Device::BINARY).zeros(DType::F32, &[2, 2]).unwrap();
    let err = t
        .window_scatter_max(&source, 0, &[1, 1, 1], Window::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("source must have the shape of the windows"),
        "{err}"
    );
}

/// Pooling gradients against central differences (an input without ties, so max and min are
/// differentiable where they are taken).
#[test]
fn gradients_match_central_differences() {
    type Pool = fn(&Tensor) -> Result<Tensor>;
    let cases: [(&str, Pool); 4] = [
        ("sum", |x| {
            x.window_sum(&[1, 2, 2], Window::new().strides([1, 2, 1]))
        }),
        ("mean", |x| {
            x.window_mean(&[1, 2, 2], Window::new().padding(Padding::Same))
        }),
        ("max", |x| {
            x.window_max(&[1, 2, 2], Window::new().strides([1, 2, 2]))
        }),
        ("min", |x| {
            x.window_min(&[1, 3, 2], Window::new().strides(1).dilations([1, 1, 2]))
        }),
    ];
    let values: Vec<f64> = (0..2 * 4 * 5)
        .map(|i| ((i * 37 % 41) as f64) * 0.1 - 2.0)
        .collect();
    for d in [Device::BINARY, Device::host(0), Device::sim(0)] {
        enable_sim();
        let x = on(d).from_slice(&values, &[2, 4, 5]).unwrap();
        for (name, pool) in cases {
            let f = move |x: &Tensor| {
                let y = pool(x)?;
                let w = on(x.device())
                    .iota(DType::F64, y.shape(), None)?
                    .sin()?
                    .add(0.5)?;
                y.multiply(&w)?.sum(..)
            };
            let g = grad(f).call(&x).unwrap()[0].to_vec::<f64>().unwrap();
            for i in 0..values.len() {
                let at = |delta: f64| {
                    let mut v = values.clone();
                    v[i] += delta;
                    f(&on(d).from_slice(&v, &[2, 4, 5]).unwrap())
                        .unwrap()
                        .to_scalar::<f64>()
                        .unwrap()
                };
                let expected = (at(1e-6) - at(-1e-6)) / 2e-6;
                assert!(
                    (g[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
                    "window_{name} on {d}: x[{i}]: {} against {expected}",
                    g[i]
                );
            }
        }
    }
}

/// `Nx.window_reduce`'s documented examples, on every device and compiled.
#[test]
fn window_reduce_matches_nx_examples() {
    let max = |x: &Tensor, acc: &Tensor| x.max(acc);
    let add = |x: &Tensor, acc: &Tensor| x.add(acc);
    for d in devices() {
        let place = on(d);
        let t = place
            .from_vec(
                vec![1, 2, 3, 4, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 13, 14],
                &[4, 4],
            )
            .unwrap();
        let r = t
            .window_reduce(i32::MIN, &[2, 2], Window::new(), max)
            .unwrap();
        assert_eq!((r.dtype(), r.shape()), (DType::S32, &[3usize, 3][..]));
        assert_eq!(
            r.to_vec::<i32>().unwrap(),
            [5, 6, 7, 8, 9, 10, 12, 13, 14],
            "on {d}"
        );

        let t = place
            .from_vec(vec![1, 2, 3, 4, 5, 6, 7, 8, 9], &[3, 3])
            .unwrap();
        let same = || Window::new().padding(Padding::Same).strides([1, 1]);
        let r = t.window_reduce(i32::MIN, &[2, 2], same(), max).unwrap();
        assert_eq!(
            r.to_vec::<i32>().unwrap(),
            [5, 6, 6, 8, 9, 9, 8, 9, 9],
            "on {d}"
        );

        let t = place.from_vec(vec![1, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let r = t.window_reduce(0, &[1, 2], same(), add).unwrap();
        assert_eq!(r.shape(), &[2, 3]);
        assert_eq!(r.to_vec::<i32>().unwrap(), [3, 5, 3, 9, 11, 6], "on {d}");

        let t = place
            .from_vec(
                vec![4, 2, 1, 3, 4, 2, 1, 7, 1, 2, 5, 7, 1, 8, 9, 2],
                &[2, 2, 4],
            )
            .unwrap();
        let opts = Window::new().strides([2, 1, 1]).dilations([1, 1, 2]);
        let r = t.window_reduce(0, &[1, 1, 2], opts, add).unwrap();
        assert_eq!(r.shape(), &[1, 2, 2]);
        assert_eq!(r.to_vec::<i32>().unwrap(), [5, 5, 5, 9], "on {d}");

        // The initial value is folded into every window, and the reduction need not be one of
        // the five the named window ops cover.
        let x = random(3, DType::F32, &[2, 5, 6]).backend_copy(d).unwrap();
        let sum_of_squares = |x: &Tensor| {
            x.window_reduce(
                0.5,
                &[1, 2, 3],
                Window::new().strides([1, 2, 1]),
                |x, acc| acc.add(&x.multiply(x)?),
            )
        };
        let expected = x
            .multiply(&x)
            .unwrap()
            .window_sum(&[1, 2, 3], Window::new().strides([1, 2, 1]))
            .unwrap()
            .add(0.5)
            .unwrap();
        let eager = sum_of_squares(&x).unwrap();
        assert_matches("window_reduce, a sum of squares", d, &expected, &eager);
        let compiled = tensorbook::jit(sum_of_squares).on(d).call(&x).unwrap();
        assert_matches("window_reduce compiled", d, &eager, &compiled);
    }
}

#[test]
fn window_reduce_errors_and_gradient() {
    let t = on(Device::BINARY).zeros(DType::F32, &[3, 4]).unwrap();
    let acc = on(Device::BINARY).zeros(DType::F32, &[2]).unwrap();
    let err = t
        .window_reduce(&acc, &[2, 2], Window::new(), |x, a| x.add(a))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the initial value must be a number or a scalar tensor, got f32[2]"),
        "{err}"
    );
    let err = t
        .window_reduce(0.0, &[2, 2], Window::new(), |x, _| x.sum(..))
        .unwrap_err()
        .to_string();
    assert!(err.contains("entry by entry"), "{err}");
    let err = t
        .window_reduce(0.0, &[2], Window::new(), |x, a| x.add(a))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rank of shape (2) does not match rank of window (1)"),
        "{err}"
    );

    // d/dx of sum over windows of (acc + x^2) is 2x times the windows each entry is in.
    let values: Vec<f64> = (0..12).map(|i| i as f64 * 0.25 - 1.0).collect();
    for d in [Device::BINARY, Device::host(0)] {
        let x = on(d).from_slice(&values, &[3, 4]).unwrap();
        let f = |x: &Tensor| {
            x.window_reduce(1.0, &[2, 2], Window::new(), |x, acc| {
                acc.add(&x.multiply(x)?)
            })?
            .sum(..)
        };
        let g = grad(f).call(&x).unwrap()[0].to_vec::<f64>().unwrap();
        let windows_over = |i: usize, j: usize| {
            let rows = [1usize, 2, 1][i];
            let cols = [1usize, 2, 2, 1][j];
            (rows * cols) as f64
        };
        for i in 0..3 {
            for j in 0..4 {
                let v = values[i * 4 + j];
                let expected = 2.0 * v * windows_over(i, j);
                assert!(
                    (g[i * 4 + j] - expected).abs() < 1e-12,
                    "on {d} at ({i}, {j}): {} against {expected}",
                    g[i * 4 + j]
                );
            }
        }
    }
}
