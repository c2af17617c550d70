//! Values, display and errors of the public API on known inputs.

use tensorbook::{on, DType, Device, Error, Tensor};

fn host() -> tensorbook::Factory {
    on(Device::host(0))
}

#[test]
fn known_values() {
    let a = host()
        .from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])
        .unwrap();
    assert_eq!(
        a.sum([1]).unwrap().to_vec::<f32>().unwrap(),
        vec![6.0, 15.0]
    );
    assert_eq!(a.sum_keep([0]).unwrap().shape(), &[1, 3]);
    assert_eq!(a.mean(..).unwrap().to_scalar::<f32>().unwrap(), 3.5);
    assert_eq!(a.argmax(1).unwrap().to_vec::<i32>().unwrap(), vec![2, 2]);
    assert_eq!(a.argmin(..).unwrap().to_scalar::<i32>().unwrap(), 0);
    assert_eq!(
        a.transpose(..).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    let v = host().from_vec(vec![1.0f32, 1.0, 1.0], &[3]).unwrap();
    assert_eq!(a.dot(&v).unwrap().to_vec::<f32>().unwrap(), vec![6.0, 15.0]);
    assert_eq!(v.dot(&v).unwrap().shape(), &[] as &[usize]);
    let i = host().from_vec(vec![7i32, 2], &[2]).unwrap();
    assert_eq!(i.divide(2).unwrap().dtype(), DType::F32);
    assert_eq!(i.sum(..).unwrap().dtype(), DType::S32);
    assert_eq!(i.exp().unwrap().dtype(), DType::F32);
    assert_eq!(i.less(5).unwrap().to_vec::<u8>().unwrap(), vec![0, 1]);
    assert_eq!(i.add(0.5).unwrap().to_vec::<f32>().unwrap(), vec![7.5, 2.5]);
    // Nx: lengths are spans of the input; a step of 2 over 3 columns keeps 2 of them.
    let s = a.slice(&[0, 0], &[2, 3], Some(&[1, 2])).unwrap();
    assert_eq!(s.shape(), &[2, 2]);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![1.0, 3.0, 4.0, 6.0]);
    let p = a
        .put_slice(
            &[1, 2],
            &host().from_vec(vec![9.0f32, 9.0], &[1, 2]).unwrap(),
        )
        .unwrap();
    assert_eq!(
        p.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 9.0, 9.0]
    );
    let idx = host().from_vec(vec![2i64, 0], &[2]).unwrap();
    assert_eq!(
        a.take(&idx, 1).unwrap().to_vec::<f32>().unwrap(),
        vec![3.0, 1.0, 6.0, 4.0]
    );
    let eye = host().eye(DType::S32, 2).unwrap();
    assert_eq!(eye.to_vec::<i32>().unwrap(), vec![1, 0, 0, 1]);
    let io = host().iota(DType::S32, &[2, 3], Some(1)).unwrap();
    assert_eq!(io.to_vec::<i32>().unwrap(), vec![0, 1, 2, 0, 1, 2]);
    assert_eq!(a.to_bytes().unwrap().len(), 24);
}

#[test]
fn display_matches_nx() {
    let a = host().from_vec(vec![0i32, 1, 2, 3], &[2, 2]).unwrap();
    assert_eq!(
        a.to_string(),
        "#Tensor<s32[2][2]\n  Backend<host:0>\n  [\n    [0, 1],\n    [2, 3]\n  ]>"
    );
    let s = on(Device::BINARY).scalar(0.1f32).unwrap();
    assert_eq!(s.to_string(), "#Tensor<f32\n  Backend<binary>\n  0.1>");
    let f = host()
        .from_vec(vec![1.0f64, f64::NAN, f64::NEG_INFINITY], &[3])
        .unwrap();
    assert!(f.to_string().ends_with("[1.0, NaN, -Inf]>"), "{f}");
    let big = host().zeros(DType::F32, &[10000, 10]).unwrap();
    let text = big.to_string();
    assert!(
        text.starts_with("#Tensor<f32[10000][10]\n  Backend<host:0>\n  [\n    [0.0, 0.0,"),
        "{text}"
    );
    assert!(text.contains("    ...\n  ]>"), "{text}");
    assert!(text.lines().count() < 20, "{text}");
    let wide = host().zeros(DType::U8, &[1, 100]).unwrap();
    assert!(wide.to_string().contains("0, ...]"), "{wide}");
    let html = big.to_html();
    assert!(
        html.contains("f32[10000][10]")
            && html.contains("Backend&lt;host:0&gt;")
            && html.contains("<table"),
        "{html}"
    );
    let bundle = a.mime_bundle();
    assert_eq!(bundle[0].0, "text/plain");
    assert_eq!(bundle[1].0, "text/html");
    let cube = host().zeros(DType::F32, &[2, 2, 2]).unwrap();
    assert!(
        cube.to_html().contains("<pre>"),
        "rank-3 tensors show their text form"
    );
}

#[test]
fn user_errors_are_values_that_name_shapes_and_dtypes() {
    let a = host().ones(DType::F32, &[2, 3]).unwrap();
    let b = host().ones(DType::F32, &[4, 5]).unwrap();
    let msg = a.add(&b).unwrap_err().to_string();
    assert!(msg.contains("[2][3]") && msg.contains("[4][5]"), "{msg}");
    let msg = a.dot(&b).unwrap_err().to_string();
    assert!(
        msg.contains("dot") && msg.contains("3") && msg.contains("4"),
        "{msg}"
    );
    assert!(matches!(a.sum([2]), Err(Error::AxisOutOfRange { .. })));
    assert!(matches!(a.reshape(&[7]), Err(Error::ShapeMismatch { .. })));
    assert!(matches!(
        a.to_vec::<f64>(),
        Err(Error::DTypeMismatch { .. })
    ));
    assert!(a.transpose([0, 0]).is_err());
    assert!(a.slice(&[0, 0], &[3, 3], None).is_err());
    assert!(a.slice(&[0, 0], &[2, 3], Some(&[0, 1])).is_err());
    assert!(a.squeeze([0]).is_err());
    assert!(a.broadcast(&[3]).is_err());
    assert!(a
        .take(&host().from_vec(vec![5i64], &[1]).unwrap(), 0)
        .is_err());
    assert!(a
        .take(&host().from_vec(vec![-1i64], &[1]).unwrap(), 0)
        .is_err());
    assert!(a.take(&a, 0).is_err());
    assert!(Tensor::concatenate(&[], 0).is_err());
    assert!(host().from_vec(vec![1.0f32; 5], &[2, 3]).is_err());
    assert!(host().random_normal(1, DType::S32, &[2], 0.0, 1.0).is_err());
    assert!(host()
        .random_uniform(1, DType::F32, &[2], 1.0, 1.0)
        .is_err());
    assert!(a.argmax(5).is_err());
    assert!(host()
        .zeros(DType::F32, &[0, 3])
        .unwrap()
        .argmax(0)
        .is_err());
}

#[test]
fn an_impossible_allocation_is_an_error_not_an_abort() {
    for device in tensorbook::devices() {
        let err = on(device)
            .zeros(DType::F32, &[1_000_000, 1_000_000, 1_000])
            .unwrap_err();
        assert!(matches!(err, Error::Allocation { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("f32[1000000][1000000][1000]"), "{msg}");
        let overflow = on(device).ones(DType::F64, &[usize::MAX, 2]).unwrap_err();
        assert!(matches!(overflow, Error::Allocation { .. }), "{overflow}");
    }
    // Broadcasting to an impossible shape fails the same way.
    let one = host().ones(DType::F32, &[1]).unwrap();
    assert!(one.broadcast(&[1_000_000, 1_000_000, 1_000]).is_err());
}

/// A size that exists but is more than this machine has (the 24 GB of f64 on a 24 GiB
/// machine) is refused before a page is touched, naming the memory available, where Linux's
/// overcommit would have said yes and then filled memory for a minute.
#[test]
fn an_allocation_larger_than_the_machine_is_refused_up_front() {
    let Some(available) = tensorbook::testing::available_host_memory() else {
        println!("skipped: /proc/meminfo has no MemAvailable here");
        return;
    };
    let elements = (available / 8 + (1 << 27)) as usize; // 1 GiB more than available
    for device in [Device::BINARY, Device::host(0)] {
        let err = on(device).zeros(DType::F64, &[elements]).unwrap_err();
        assert!(matches!(err, Error::Allocation { .. }), "{err}");
        assert!(err.to_string().contains("available"), "{err}");
        let x = on(device).ones(DType::F64, &[1]).unwrap();
        assert!(x.broadcast(&[elements]).is_err());
    }
    // A cap set by the user decides instead of the machine.
    tensorbook::set_host_memory_limit(Some(64 << 20));
    let capped = host().zeros(DType::F64, &[10_000_000]).unwrap_err();
    assert!(capped.to_string().contains("limit"), "{capped}");
    tensorbook::set_host_memory_limit(None);
    assert!(host().zeros(DType::F64, &[10_000_000]).is_ok());
}

#[test]
fn integer_edge_cases_do_not_panic() {
    let i = host().from_vec(vec![i32::MIN, -1, 0], &[3]).unwrap();
    let z = host().from_vec(vec![0i32, 0, 0], &[3]).unwrap();
    assert!(i.abs().is_ok() && i.negate().is_ok());
    assert!(i.divide(&z).unwrap().to_vec::<f32>().unwrap()[2].is_nan());
    assert!(i
        .pow(&host().from_vec(vec![-2i32, 40, 3], &[3]).unwrap())
        .is_ok());
    let u = host().from_vec(vec![250u8], &[1]).unwrap();
    assert_eq!(u.add(10).unwrap().to_vec::<u8>().unwrap(), vec![4]);
}

/// Mean and standard deviation of a tensor's elements.
fn moments(t: &Tensor) -> (f64, f64) {
    let v = t.to_f64_vec().unwrap();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// 200,000 draws: the sample moments of a correct generator are within 0.01 of the true ones
/// with overwhelming probability (standard error about 0.002), and the seed fixes the values.
#[test]
fn random_values_have_the_asked_distribution_and_follow_the_seed() {
    let n = 200_000;
    let normal = host().random_normal(7, DType::F64, &[n], 3.0, 2.0).unwrap();
    let (mean, std) = moments(&normal);
    assert!(
        (mean - 3.0).abs() < 0.02 && (std - 2.0).abs() < 0.02,
        "{mean} {std}"
    );
    let uniform = host()
        .random_uniform(7, DType::F64, &[n], -1.0, 3.0)
        .unwrap();
    let (mean, std) = moments(&uniform);
    // Uniform on [a, b): mean (a + b) / 2, standard deviation (b - a) / sqrt(12).
    assert!(
        (mean - 1.0).abs() < 0.02 && (std - 4.0 / 12f64.sqrt()).abs() < 0.02,
        "{mean} {std}"
    );
    let v = uniform.to_f64_vec().unwrap();
    assert!(v.iter().all(|x| (-1.0..3.0).contains(x)));
    let digits = host()
        .random_uniform(8, DType::U8, &[n], 0.0, 10.0)
        .unwrap()
        .to_vec::<u8>()
        .unwrap();
    for d in 0..10u8 {
        let share = digits.iter().filter(|&&x| x == d).count() as f64 / n as f64;
        assert!((share - 0.1).abs() < 0.005, "digit {d}: {share}");
    }
    let again = host().random_normal(7, DType::F64, &[n], 3.0, 2.0).unwrap();
    assert_eq!(again.to_bytes().unwrap(), normal.to_bytes().unwrap());
    let other = host().random_normal(8, DType::F64, &[n], 3.0, 2.0).unwrap();
    assert_ne!(other.to_bytes().unwrap(), normal.to_bytes().unwrap());
}

/// `+ - * /` and unary `-` as the methods of the same name: tensors, results and numbers on
/// either side, Nx's promotion, one `?` for a whole expression, errors as values.
#[test]
fn operators_are_the_methods_with_one_question_mark() -> tensorbook::Result<()> {
    let x = host().from_vec(vec![1.0f32, -2.0, 3.0], &[3])?;
    let b = host().from_vec(vec![0.5f32], &[1])?;
    let y = (&x * 2.0 + &b)?;
    assert_eq!(y.to_vec::<f32>()?, [2.5, -3.5, 6.5]);
    assert_eq!((2.0 - &x)?.to_vec::<f32>()?, [1.0, 4.0, -1.0]);
    assert_eq!((6.0 / &x)?.to_vec::<f32>()?, [6.0, -3.0, 2.0]);
    assert_eq!((-&x)?.to_vec::<f32>()?, [-1.0, 2.0, -3.0]);
    assert_eq!((&x - (&x * &x))?.to_vec::<f32>()?, [0.0, -6.0, -6.0]);
    assert_eq!(((&x * 2.0)? / 4)?.to_vec::<f32>()?, [0.5, -1.0, 1.5]);
    // Integers promote as the methods do: s32 / s32 is f32, a float number makes f32.
    let i = host().from_vec(vec![4i32, 6], &[2])?;
    assert_eq!((&i / 4)?.dtype(), DType::F32);
    assert_eq!((1 + &i)?.to_vec::<i32>()?, [5, 7]);
    assert_eq!((&i * 0.5)?.dtype(), DType::F32);
    // Owned tensors work too, and an error anywhere is the expression's error.
    let z = (x.clone() + b.clone())?;
    assert_eq!(z.to_vec::<f32>()?, [1.5, -1.5, 3.5]);
    let bad = &x + &host().from_vec(vec![1.0f32, 2.0], &[2])?;
    assert!(matches!(bad, Err(Error::ShapeMismatch { .. })), "{bad:?}");
    assert!((&x * 2.0 + &host().zeros(DType::F32, &[4])?).is_err());
    Ok(())
}

/// Every way a cell writes axes names the same reduction: one integer, an array, a slice, a
/// `Vec`, negative axes, and `..` for all of them; `_keep` keeps the reduced axes.
#[test]
fn axes_are_written_as_nx_writes_them() {
    let t = host()
        .from_vec((1..=24).map(|x| x as f32).collect(), &[2, 3, 4])
        .unwrap();
    let values = |r: tensorbook::Result<Tensor>| {
        let r = r.unwrap();
        (r.shape().to_vec(), r.to_vec::<f32>().unwrap())
    };
    let by_axis_1 = values(t.sum([1]));
    assert_eq!(by_axis_1.0, [2, 4]);
    assert_eq!(values(t.sum(1)), by_axis_1);
    assert_eq!(values(t.sum(-2)), by_axis_1);
    let array_ref: &[i32; 1] = &[1];
    assert_eq!(values(t.sum(array_ref)), by_axis_1);
    let axes: Vec<isize> = vec![1];
    assert_eq!(values(t.sum(&axes)), by_axis_1);
    assert_eq!(values(t.sum(axes[..].as_ref())), by_axis_1);
    let unsigned: Vec<usize> = vec![0, 2];
    assert_eq!(values(t.sum(&unsigned)), values(t.sum([0, -1])));
    assert_eq!(values(t.sum(..)), (vec![], vec![300.0]));
    assert_eq!(values(t.sum([0, 1, 2])), values(t.sum(..)));
    assert_eq!(t.sum_keep([1]).unwrap().shape(), &[2, 1, 4]);
    assert_eq!(t.mean_keep(..).unwrap().shape(), &[1, 1, 1]);
    assert_eq!(
        values(t.argmax(2).unwrap().as_type(DType::F32)),
        (vec![2, 3], vec![3.0; 6])
    );
    assert_eq!(t.argmax_keep(-1).unwrap().shape(), &[2, 3, 1]);
    assert_eq!(t.argmin(..).unwrap().to_scalar::<i32>().unwrap(), 0);
    assert_eq!(values(t.median(..)), (vec![], vec![12.5]));
    assert_eq!(t.variance_keep([0, 2], 1).unwrap().shape(), &[1, 3, 1]);
    let err = t.sum([3]).unwrap_err().to_string();
    assert!(err.contains("axis 3") || err.contains('3'), "{err}");
    assert!(t.sum([1, 1]).is_err(), "an axis named twice");
    assert!(
        t.argmax(usize::MAX).is_err(),
        "an axis past isize names no axis"
    );
}
