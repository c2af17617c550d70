//! Convolution (`Nx.conv`): Nx's documented examples, every device against `binary` over
//! strides, padding (same, explicit, negative), dilations, groups and permutations in one to
//! three spatial axes, the definition by hand (an im2col product), Nx's errors, and the
//! gradients of input and kernel against central differences.

mod common;

use common::{assert_matches, enable_sim, random};
use tensorbook::{grad, jit, on, Conv, DType, Device, Padding, Result, Tensor};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

#[test]
fn nx_documented_examples() {
    for d in devices() {
        let place = on(d);
        let left = place.iota(DType::S32, &[1, 1, 3, 3], None).unwrap();
        let right = place.iota(DType::S32, &[4, 1, 1, 1], None).unwrap();
        let out = left.conv(&right, Conv::new().strides([1, 1])).unwrap();
        assert_eq!((out.dtype(), out.shape()), (DType::F32, &[1, 4, 3, 3][..]));
        let v = out.to_vec::<f32>().unwrap();
        assert_eq!(
            v[9..18],
            [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
            "on {d}"
        );
        assert_eq!(v[27..], [0.0, 3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0]);

        let right = place.iota(DType::S32, &[4, 1, 2, 1], None).unwrap();
        let options = Conv::new()
            .strides(2)
            .padding(Padding::Same)
            .kernel_dilation([2, 1]);
        let out = left.conv(&right, options).unwrap();
        assert_eq!(out.shape(), &[1, 4, 2, 2], "on {d}");
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            [
                3.0, 5.0, 0.0, 0.0, 9.0, 15.0, 6.0, 10.0, 15.0, 25.0, 12.0, 20.0, 21.0, 35.0, 18.0,
                30.0
            ],
            "on {d}"
        );

        // Explicit padding on one axis (the real part of Nx's complex example).
        let x = place.from_slice(&[1.0f32, 2.0, 3.0], &[1, 1, 3]).unwrap();
        let k = place.from_slice(&[1.0f32, 0.5, -1.0], &[1, 1, 3]).unwrap();
        let out = x.conv(&k, Conv::new().padding([(2, 2)])).unwrap();
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            [-1.0, -1.5, -1.0, 3.5, 3.0],
            "on {d}"
        );
    }
}

/// Inside `jit` a convolution is recorded, compiled beside the elementwise work around it and
/// gives the eager result, on every device.
#[test]
fn compiled_convolutions_equal_eager_ones() {
    let layer = |x: &Tensor, k: &Tensor| -> Result<Tensor> {
        x.conv(k, Conv::new().strides(2).padding(Padding::Same))?
            .max(0.0)?
            .conv(&k.slice(&[0, 0, 0, 0], &[4, 4, 3, 3], None)?, Conv::new())?
            .tanh()
    };
    let compiled = jit(layer);
    for d in devices() {
        let x = random(5, DType::F32, &[2, 4, 9, 9])
            .backend_copy(d)
            .unwrap();
        let k = random(6, DType::F32, &[4, 4, 3, 3])
            .backend_copy(d)
            .unwrap();
        let eager = layer(&x, &k).unwrap();
        let got = compiled.on(d).call((&x, &k)).unwrap();
        assert_matches(
            "jit conv",
            d,
            &eager.backend_copy(Device::BINARY).unwrap(),
            &got,
        );
    }
}

/// One convolution configuration of the conformance sweep.
struct Case {
    input: Vec<usize>,
    kernel: Vec<usize>,
    options: fn() -> Conv,
}

fn cases() -> Vec<Case> {
    let case = |input: &[usize], kernel: &[usize], options: fn() -> Conv| Case {
        input: input.to_vec(),
        kernel: kernel.to_vec(),
        options,
    };
    vec![
        case(&[2, 3, 9], &[4, 3, 3], Conv::new),
        case(&[2, 3, 9], &[4, 3, 3], || {
            Conv::new().strides(2).padding(Padding::Same)
        }),
        case(&[3, 2, 7, 6], &[5, 2, 3, 3], || {
            Conv::new().padding(Padding::Same)
        }),
        case(&[3, 2, 7, 6], &[5, 2, 3, 2], || {
            Conv::new().strides([2, 1]).padding([(1, 2), (-1, 1)])
        }),
        case(&[1, 3, 8, 8], &[4, 3, 3, 3], || {
            Conv::new().kernel_dilation([2, 1]).padding(Padding::Same)
        }),
        case(&[2, 2, 4, 5], &[3, 2, 3, 3], || {
            Conv::new().input_dilation([2, 3]).padding([(2, 2), (1, 0)])
        }),
        case(&[2, 6, 7, 7], &[6, 1, 3, 3], || {
            Conv::new().feature_group_size(6).padding(Padding::Same)
        }),
        case(&[2, 6, 7, 7], &[4, 3, 2, 2], || {
            Conv::new().feature_group_size(2).strides(2)
        }),
        case(&[4, 3, 5, 5], &[6, 3, 3, 3], || {
            Conv::new().batch_group_size(2)
        }),
        case(&[2, 2, 4, 4, 4], &[3, 2, 2, 3, 2], || {
            Conv::new().strides([1, 2, 1]).padding(Padding::Same)
        }),
        // Channels last in, channels last out, the kernel as [h, w, in, out].
        case(&[2, 6, 5, 3], &[3, 3, 3, 4], || {
            Conv::new()
                .input_permutation([0, 3, 1, 2])
                .kernel_permutation([3, 2, 0, 1])
                .output_permutation([0, 3, 1, 2])
        }),
        // Dilated inputs at stride 1 (input gradients; host scatters products, col2im), with
        // groups, batch groups and cropping.
        case(&[2, 4, 5, 6], &[6, 2, 3, 2], || {
            Conv::new()
                .feature_group_size(2)
                .input_dilation([2, 2])
                .padding([(1, 2), (0, -1)])
        }),
        case(&[4, 2, 5], &[4, 2, 3], || {
            Conv::new()
                .batch_group_size(2)
                .input_dilation(3)
                .padding([(2, 2)])
        }),
        // A kernel's gradient: a small output of a large, deep kernel (host walks the kernel's
        // axis and splits the channels over the cores).
        case(&[1, 64, 20, 20], &[4, 64, 16, 16], || {
            Conv::new().padding([(1, 0), (0, 0)])
        }),
        case(&[2, 3, 9, 30], &[2, 3, 4, 25], || {
            Conv::new().kernel_dilation([1, 1]).strides(2)
        }),
        // Several batch entries to a task: a kernel's gradient walked along the kernel, and
        // an input gradient's products side by side.
        case(&[4, 3, 6, 6], &[2, 3, 4, 4], || {
            Conv::new().kernel_dilation(2).padding([(1, 1), (1, 1)])
        }),
        case(&[20, 3, 3, 3], &[4, 3, 3, 3], || {
            Conv::new().input_dilation(2).padding([(1, 2), (1, 2)])
        }),
        // A dilated input read through strides (host gathers it entry by entry).
        case(&[2, 2, 5, 4], &[3, 2, 2, 2], || {
            Conv::new()
                .input_dilation([2, 1])
                .strides([2, 3])
                .padding([(1, 0), (0, 1)])
        }),
        // A first layer of a CNN over 28x28 digits: large enough for host's panels to split.
        case(&[8, 1, 28, 28], &[8, 1, 3, 3], || {
            Conv::new().strides(2).padding([(1, 1), (1, 1)])
        }),
        case(&[4, 8, 14, 14], &[16, 8, 3, 3], || {
            Conv::new().strides(2).padding([(1, 1), (1, 1)])
        }),
    ]
}

#[test]
fn every_device_matches_binary() {
    for (i, c) in cases().iter().enumerate() {
        for dtype in [DType::F32, DType::F64] {
            let x = random(10 + i as u64, dtype, &c.input);
            let k = random(100 + i as u64, dtype, &c.kernel);
            let expected = x.conv(&k, (c.options)()).unwrap();
            for d in devices() {
                let (xd, kd) = (x.backend_copy(d).unwrap(), k.backend_copy(d).unwrap());
                let got = xd.conv(&kd, (c.options)()).unwrap();
                let what = format!("case {i} {dtype} {:?} by {:?}", c.input, c.kernel);
                assert_matches(&what, d, &expected, &got);
            }
        }
    }
}

/// The definition written out: every output entry a dot product of the kernel with the window
/// it covers, the windows gathered by hand (im2col) and multiplied with `dot`.
#[test]
fn a_convolution_is_a_product_with_the_unfolded_input() {
    let (n, c, h, w, o, kh, kw) = (2usize, 3usize, 6usize, 5usize, 4usize, 3usize, 2usize);
    let x = random(7, DType::F64, &[n, c, h, w]);
    let k = random(8, DType::F64, &[o, c, kh, kw]);
    let (oh, ow) = (h - kh + 1, w - kw + 1);
    let xv = x.to_vec::<f64>().unwrap();
    let mut columns = Vec::new();
    for b in 0..n {
        for y in 0..oh {
            for z in 0..ow {
                for ch in 0..c {
                    for i in 0..kh {
                        for j in 0..kw {
                            columns.push(xv[((b * c + ch) * h + y + i) * w + z + j]);
                        }
                    }
                }
            }
        }
    }
    let unfolded = on(Device::BINARY)
        .from_slice(&columns, &[n * oh * ow, c * kh * kw])
        .unwrap();
    let flat_kernel = k.reshape(&[o, c * kh * kw]).unwrap();
    let by_hand = unfolded
        .dot(&flat_kernel.transpose(..).unwrap())
        .unwrap()
        .reshape(&[n, oh, ow, o])
        .unwrap()
        .transpose([0, 3, 1, 2])
        .unwrap();
    for d in devices() {
        let got = x
            .backend_copy(d)
            .unwrap()
            .conv(&k.backend_copy(d).unwrap(), Conv::new())
            .unwrap();
        assert_matches("conv against im2col", d, &by_hand, &got);
    }
}

#[test]
fn nx_errors() {
    let place = on(Device::BINARY);
    let t = |s: &[usize]| place.zeros(DType::F32, s).unwrap();
    let err = |x: Tensor, k: Tensor, o: Conv| x.conv(&k, o).unwrap_err().to_string();
    assert!(err(t(&[2, 3]), t(&[1, 3, 1]), Conv::new()).contains("requires at least rank 3"));
    assert!(err(t(&[1, 3, 4]), t(&[2, 2, 1]), Conv::new())
        .contains("size of input channels divided by feature groups must match"));
    assert!(err(
        t(&[1, 4, 4]),
        t(&[3, 2, 1]),
        Conv::new().feature_group_size(2)
    )
    .contains("must be evenly divisible by feature groups"));
    assert!(err(
        t(&[3, 2, 4]),
        t(&[2, 2, 1]),
        Conv::new().batch_group_size(2)
    )
    .contains("batch groups must evenly divide input batch size"));
    assert!(err(
        t(&[2, 2, 4]),
        t(&[2, 1, 1]),
        Conv::new().batch_group_size(2).feature_group_size(2)
    )
    .contains("either batch groups or feature groups must be 1"));
    assert!(err(t(&[1, 1, 2]), t(&[1, 1, 3]), Conv::new()).contains("would result in empty tensor"));
    assert!(err(
        t(&[1, 1, 4, 4]),
        t(&[1, 1, 2, 2]),
        Conv::new().strides([1, 0])
    )
    .contains("must be a positive integer"));
    assert!(err(
        t(&[1, 1, 4, 4]),
        t(&[1, 1, 2, 2]),
        Conv::new().strides([1, 1, 1])
    )
    .contains("2 spatial axes"));
    assert!(err(
        t(&[1, 1, 4, 4]),
        t(&[1, 1, 2, 2]),
        Conv::new().padding([(0, 0)])
    )
    .contains("padding has 1 (lo, hi) pairs"));
    assert!(err(t(&[1, 1, 4]), t(&[1, 1, 2, 2]), Conv::new()).contains("same rank"));
}

#[test]
fn names_follow_the_input() {
    let x = on(Device::BINARY)
        .zeros(DType::F32, &[2, 5, 5, 3])
        .unwrap()
        .rename(["batch", "height", "width", "channels"])
        .unwrap();
    let k = on(Device::BINARY).zeros(DType::F32, &[4, 3, 3, 3]).unwrap();
    let options = Conv::new()
        .input_permutation(["batch", "channels", "height", "width"])
        .output_permutation(["batch", "channels", "height", "width"]);
    let out = x.conv(&k, options).unwrap();
    assert_eq!(out.shape(), &[2, 3, 3, 4]);
    let names: Vec<_> = out.names().into_iter().map(Option::unwrap).collect();
    assert_eq!(names, ["batch", "height", "width", "channels"]);
}

/// Central differences of a weighted sum of the convolution, with respect to each operand.
fn check_gradients(what: &str, x: &Tensor, k: &Tensor, options: fn() -> Conv) {
    let weighted = move |y: Tensor| -> Result<Tensor> {
        let w = on(y.device())
            .iota(DType::F64, y.shape(), None)?
            .sin()?
            .add(0.5)?;
        y.multiply(&w)?.sum(..)
    };
    let of_x = {
        let k = k.clone();
        move |x: &Tensor| weighted(x.conv(&k.backend_copy(x.device())?, options())?)
    };
    let of_k = {
        let x = x.clone();
        move |k: &Tensor| weighted(x.backend_copy(k.device())?.conv(k, options())?)
    };
    for (name, at, f) in [
        (
            "input",
            x,
            &of_x as &(dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync),
        ),
        ("kernel", k, &of_k),
    ] {
        let expected = central_differences(at, f);
        for d in devices() {
            let here = at.backend_copy(d).unwrap();
            let g = match name {
                "input" => grad(of_x.clone()).call(&here),
                _ => grad(of_k.clone()).call(&here),
            }
            .unwrap()[0]
                .to_vec::<f64>()
                .unwrap();
            for (i, (got, want)) in g.iter().zip(&expected).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-6 * want.abs().max(1.0),
                    "{what}: d/d{name}[{i}] on {d}: {got} against {want}"
                );
            }
        }
    }
}

fn central_differences(at: &Tensor, f: &dyn Fn(&Tensor) -> Result<Tensor>) -> Vec<f64> {
    let h = 1e-6;
    let base = at.to_vec::<f64>().unwrap();
    (0..base.len())
        .map(|i| {
            let value = |delta: f64| {
                let mut v = base.clone();
                v[i] += delta;
                let t = on(Device::BINARY).from_slice(&v, at.shape()).unwrap();
                f(&t).unwrap().to_scalar::<f64>().unwrap()
            };
            (value(h) - value(-h)) / (2.0 * h)
        })
        .collect()
}

/// A gradient check: its name, the input's and the kernel's shapes, the options.
type GradientCase = (
    &'static str,
    &'static [usize],
    &'static [usize],
    fn() -> Conv,
);

#[test]
fn gradients_match_central_differences() {
    enable_sim();
    let cases: Vec<GradientCase> = vec![
        ("plain", &[2, 2, 5], &[3, 2, 2], Conv::new),
        ("stride, same", &[1, 2, 5, 4], &[2, 2, 3, 2], || {
            Conv::new().strides(2).padding(Padding::Same)
        }),
        (
            "negative and uneven padding",
            &[2, 1, 6, 5],
            &[2, 1, 2, 3],
            || Conv::new().padding([(-1, 2), (2, 0)]).strides([1, 2]),
        ),
        ("kernel dilation", &[1, 2, 7], &[2, 2, 3], || {
            Conv::new().kernel_dilation(2).padding([(1, 1)])
        }),
        ("input dilation", &[1, 1, 4, 3], &[2, 1, 3, 2], || {
            Conv::new()
                .input_dilation([2, 1])
                .strides([1, 2])
                .padding([(1, 1), (0, 1)])
        }),
        ("feature groups", &[2, 4, 5], &[6, 2, 2], || {
            Conv::new().feature_group_size(2)
        }),
        ("depthwise", &[1, 3, 4, 4], &[3, 1, 2, 2], || {
            Conv::new().feature_group_size(3).strides(2)
        }),
        ("batch groups", &[4, 2, 5], &[4, 2, 3], || {
            Conv::new().batch_group_size(2).padding(Padding::Same)
        }),
        ("channels last", &[2, 4, 3], &[2, 3, 2], || {
            Conv::new()
                .input_permutation([0, 2, 1])
                .kernel_permutation([2, 1, 0])
                .output_permutation([0, 2, 1])
        }),
    ];
    for (i, (what, xs, ks, options)) in cases.into_iter().enumerate() {
        let x = random(40 + i as u64, DType::F64, xs);
        let k = random(80 + i as u64, DType::F64, ks);
        check_gradients(what, &x, &k, options);
    }
}
