//! `jit`, its cache, fusion and `stream`: compiled results equal eager ones on every device
//! (random graphs of the op set with broadcasting, promotion and reductions), the cache
//! compiles exactly when templates, dtype or device change, and streams keep order, push
//! back, and answer every misuse with an error.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{close, enable_sim, global_settings, random};
use proptest::prelude::*;
use proptest::sample::select;
use tensorbook::testing::is_placeholder;
use tensorbook::Jit;
use tensorbook::{
    jit, jit_apply, jit_cached, on, set_default_device, stream, stream_cached, DType, Device,
    Error, Result, Serving, Tensor,
};

/// One op of a random graph; operands index the values computed so far (inputs first).
#[derive(Clone, Debug)]
enum GraphOp {
    Binary(usize, usize, usize),
    Unary(usize, usize),
    Cast(DType, usize),
    Number(usize, usize, f64),
    Sum(usize, bool),
    Max(usize),
}

const BINARY: [fn(&Tensor, &Tensor) -> Result<Tensor>; 13] = [
    |a, b| a.add(b),
    |a, b| a.subtract(b),
    |a, b| a.multiply(b),
    |a, b| a.divide(b),
    |a, b| a.min(b),
    |a, b| a.max(b),
    |a, b| a.pow(b),
    |a, b| a.less(b),
    |a, b| a.equal(b),
    |a, b| a.greater_equal(b),
    |a, b| a.greater(0)?.select(a, b),
    |a, b| a.remainder(b),
    |a, b| a.atan2(b),
];

const UNARY: [fn(&Tensor) -> Result<Tensor>; 10] = [
    Tensor::negate,
    Tensor::abs,
    Tensor::exp,
    Tensor::tanh,
    Tensor::sigmoid,
    Tensor::square,
    Tensor::sqrt,
    Tensor::log,
    Tensor::floor,
    Tensor::sign,
];

/// Runs a random graph over `args`: each op's result joins the pool; the last is returned.
fn run_graph(ops: &[GraphOp], args: &[Tensor]) -> Result<Tensor> {
    let mut pool: Vec<Tensor> = args.to_vec();
    for op in ops {
        let pick = |i: usize| pool[i % pool.len()].clone();
        let next = match *op {
            GraphOp::Binary(k, a, b) => BINARY[k % BINARY.len()](&pick(a), &pick(b))?,
            GraphOp::Unary(k, a) => UNARY[k % UNARY.len()](&pick(a))?,
            GraphOp::Cast(d, a) => pick(a).as_type(d)?,
            GraphOp::Number(k, a, v) => {
                let x = pick(a);
                match k % 4 {
                    0 => x.add(v)?,
                    1 => x.subtract(v)?,
                    2 => x.multiply(v)?,
                    _ => x.divide(v)?,
                }
            }
            GraphOp::Sum(a, keep) => {
                let x = pick(a);
                let axes: Vec<isize> = if x.rank() == 0 { vec![] } else { vec![-1] };
                if keep {
                    x.sum_keep(&axes)?
                } else {
                    x.sum(&axes)?
                }
            }
            GraphOp::Max(a) => pick(a).reduce_max(..)?,
        };
        pool.push(next);
    }
    pool.pop().ok_or(Error::Serving("empty graph".into()))
}

fn graph_op() -> impl Strategy<Value = GraphOp> {
    prop_oneof![
        4 => (0usize..13, 0usize..16, 0usize..16).prop_map(|(k, a, b)| GraphOp::Binary(k, a, b)),
        3 => (0usize..10, 0usize..16).prop_map(|(k, a)| GraphOp::Unary(k, a)),
        1 => (select(DType::ALL.to_vec()), 0usize..16).prop_map(|(d, a)| GraphOp::Cast(d, a)),
        2 => (0usize..4, 0usize..16, -3.0f64..3.0).prop_map(|(k, a, v)| GraphOp::Number(k, a, v)),
        1 => (0usize..16, any::<bool>()).prop_map(|(a, k)| GraphOp::Sum(a, k)),
        1 => (0usize..16).prop_map(GraphOp::Max),
    ]
}

/// Two input shapes that broadcast against each other.
fn shapes() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    prop::collection::vec(1usize..6, 0..=3).prop_flat_map(|s| {
        let n = s.len();
        (
            Just(s),
            prop::collection::vec(any::<bool>(), n),
            any::<bool>(),
        )
            .prop_map(move |(s, ones, trailing)| {
                let other: Vec<usize> = s
                    .iter()
                    .zip(&ones)
                    .map(|(&d, &one)| if one { 1 } else { d })
                    .collect();
                let other = if trailing && n > 0 {
                    other[1..].to_vec()
                } else {
                    other
                };
                (s, other)
            })
    })
}

fn assert_close(what: &str, eager: &Tensor, compiled: &Tensor) {
    assert_eq!(eager.device(), compiled.device(), "{what}: placement");
    assert_eq!(eager.dtype(), compiled.dtype(), "{what}: dtype");
    assert_eq!(eager.shape(), compiled.shape(), "{what}: shape");
    let (e, c) = (eager.to_f64_vec().unwrap(), compiled.to_f64_vec().unwrap());
    for (i, (x, y)) in e.iter().zip(&c).enumerate() {
        assert!(
            close(eager.dtype(), *x, *y),
            "{what}: element {i}: eager {x}, jit {y}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Jit equals eager on every device, for graphs of the op set built at random (broadcast
    /// operands, mixed dtypes, number literals, reductions in the middle and at the end).
    #[test]
    fn jit_equals_eager_on_every_device(
        (sa, sb) in shapes(),
        da in select(DType::ALL.to_vec()),
        db in select(DType::ALL.to_vec()),
        ops in prop::collection::vec(graph_op(), 1..9),
        seed in any::<u64>(),
    ) {
        enable_sim();
        let inputs = [random(seed, da, &sa), random(seed ^ 7, db, &sb)];
        let graph = Arc::new(ops);
        for device in tensorbook::devices() {
            let placed: Vec<Tensor> = inputs.iter().map(|t| t.backend_copy(device).unwrap()).collect();
            let eager = run_graph(&graph, &placed);
            let g = Arc::clone(&graph);
            let f = jit(move |args: &[Tensor]| run_graph(&g, args)).on(device);
            let compiled = f.call(&placed);
            let what = format!("{graph:?} over {da}{sa:?}, {db}{sb:?} on {device}");
            match (eager, compiled) {
                (Ok(e), Ok(c)) => assert_close(&what, &e, &c),
                (Err(_), Err(Error::Jit { .. })) => {}
                (Ok(_), Err(err)) => panic!("{what}: eager succeeded, jit failed: {err}"),
                (Err(err), Ok(_)) => panic!("{what}: eager failed ({err}), jit succeeded"),
                (Err(_), Err(other)) => panic!("{what}: jit failed without naming the op: {other}"),
            }
        }
    }
}

fn host(shape: &[usize]) -> Tensor {
    on(Device::host(0)).iota(DType::F32, shape, None).unwrap()
}

#[test]
fn the_exla_example_add_then_cached_or_not() {
    let add = jit(|a: &Tensor, b: &Tensor| a.add(b));
    let one = on(Device::host(0)).scalar(1i32).unwrap();
    assert!(!jit_cached(&add, (&one, &one)).unwrap());
    let two = add.call((&one, &one)).unwrap();
    assert_eq!(two.to_vec::<i32>().unwrap(), vec![2]);
    assert_eq!(two.device(), Device::host(0));
    assert!(jit_cached(&add, (&one, &one)).unwrap());
    // Another dtype is another compilation.
    let f = on(Device::host(0)).scalar(1.0f32).unwrap();
    assert!(!jit_cached(&add, (&f, &f)).unwrap());
    assert_eq!(
        add.call((&f, &f)).unwrap().to_vec::<f32>().unwrap(),
        vec![2.0]
    );
    assert!(jit_cached(&add, (&f, &f)).unwrap());
    assert_eq!(add.compilations().len(), 2);
    assert!(
        add.summary().contains("compiled for host:0"),
        "{}",
        add.summary()
    );
}

#[test]
fn later_calls_do_not_run_the_function_again() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = Arc::clone(&calls);
    let f = jit(move |x: &Tensor| {
        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        x.multiply(2.0)?.add(1.0)
    });
    let x = host(&[4]);
    for _ in 0..5 {
        assert_eq!(
            f.call(&x).unwrap().to_vec::<f32>().unwrap(),
            vec![1.0, 3.0, 5.0, 7.0]
        );
    }
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    // A new shape traces again.
    f.call(&host(&[2, 2])).unwrap();
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[test]
fn the_cache_is_per_shape_dtype_and_device() {
    enable_sim();
    let f = jit(|x: &Tensor| x.exp()?.sum(..));
    let x = host(&[3]);
    f.call(&x).unwrap();
    assert!(f.is_cached(&x).unwrap());
    assert!(!f.is_cached(&host(&[4])).unwrap(), "a new shape compiles");
    assert!(
        !f.is_cached(&x.as_type(DType::F64).unwrap()).unwrap(),
        "a new dtype compiles"
    );
    let on_sim = x.backend_copy(Device::sim(0)).unwrap();
    assert!(!f.is_cached(&on_sim).unwrap(), "a new device compiles");
    let r = f.call(&on_sim).unwrap();
    assert_eq!(r.device(), Device::sim(0));
    assert!(f.is_cached(&on_sim).unwrap());
    assert_eq!(f.compiled_for(), vec![Device::host(0), Device::sim(0)]);
    // The explicit device wins over the argument's placement.
    let pinned = f.on(Device::BINARY);
    assert_eq!(pinned.call(&x).unwrap().device(), Device::BINARY);
}

#[test]
fn a_change_of_the_session_default_compiles_for_the_new_device() {
    let _g = global_settings();
    enable_sim();
    let f = jit(|x: &Tensor| x.multiply(3.0));
    // Binary arguments are weak: the call runs on the session default.
    let x = on(Device::BINARY).iota(DType::F32, &[3], None).unwrap();
    set_default_device(Device::host(0)).unwrap();
    assert_eq!(f.call(&x).unwrap().device(), Device::host(0));
    assert!(f.is_cached(&x).unwrap());
    set_default_device(Device::sim(0)).unwrap();
    assert!(
        !f.is_cached(&x).unwrap(),
        "the new default is a new compilation"
    );
    let y = f.call(&x).unwrap();
    assert_eq!(y.device(), Device::sim(0));
    assert!(y.to_string().contains("Backend<sim:0>"));
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0.0, 3.0, 6.0]);
    set_default_device(Device::host(0)).unwrap();
}

#[test]
fn host_fuses_elementwise_chains_and_binary_does_not() {
    let f = jit(|x: &Tensor, w: &Tensor, b: &Tensor| x.multiply(w)?.add(b)?.sigmoid());
    let x = host(&[64, 10]);
    let w = host(&[10]);
    let b = on(Device::host(0)).scalar(0.5f32).unwrap();
    let fused = f.call((&x, &w, &b)).unwrap();
    let eager = x.multiply(&w).unwrap().add(&b).unwrap().sigmoid().unwrap();
    assert_eq!(
        fused.to_vec::<f32>().unwrap(),
        eager.to_vec::<f32>().unwrap()
    );
    let c = &f.compilations()[0];
    assert_eq!(c.stats.fused_regions, 1, "{c:?}");
    assert_eq!(c.stats.fused_ops, 3);
    let on_binary = f.on(Device::BINARY);
    on_binary.call((&x, &w, &b)).unwrap();
    let c = on_binary
        .compilations()
        .into_iter()
        .find(|c| c.device == Device::BINARY)
        .unwrap();
    assert_eq!(c.stats.fused_regions, 0, "binary runs the graph op by op");
}

#[test]
fn a_value_used_twice_inside_a_region_is_fused_once() {
    let f = jit(|a: &Tensor| {
        let x = a.add(1.0)?;
        x.multiply(&x)?.subtract(&x)
    });
    let a = host(&[1000]);
    let got = f.call(&a).unwrap();
    let x = a.add(1.0).unwrap();
    let eager = x.multiply(&x).unwrap().subtract(&x).unwrap();
    assert_eq!(got.to_vec::<f32>().unwrap(), eager.to_vec::<f32>().unwrap());
    let stats = f.compilations()[0].stats;
    // The argument, the literal 1.0, and one fused region.
    assert_eq!(
        (stats.fused_regions, stats.fused_ops, stats.instructions),
        (1, 3, 3),
        "{stats:?}"
    );
}

#[test]
fn fused_reductions_equal_eager_ones_over_large_inputs() {
    // Softmax: a fused max, a fused sum of exponentials, a fused divide; rows across blocks.
    let softmax = jit(|x: &Tensor| {
        let m = x.reduce_max_keep([-1])?;
        let e = x.subtract(&m)?.exp()?;
        e.divide(&e.sum_keep([-1])?)
    });
    for shape in [[3usize, 70_000], [5000, 10]] {
        let x = on(Device::host(0))
            .random_uniform(3, DType::F32, &shape, -4.0, 4.0)
            .unwrap();
        let eager = {
            let m = x.reduce_max_keep([-1]).unwrap();
            let e = x.subtract(&m).unwrap().exp().unwrap();
            e.divide(&e.sum_keep([-1]).unwrap()).unwrap()
        };
        assert_close(
            &format!("softmax {shape:?}"),
            &eager,
            &softmax.call(&x).unwrap(),
        );
    }
    let total = jit(|x: &Tensor| x.multiply(x)?.sum(..));
    let x = on(Device::host(0))
        .random_uniform(5, DType::F64, &[1_000_003], -1.0, 1.0)
        .unwrap();
    let eager = x.multiply(&x).unwrap().sum(..).unwrap();
    assert_close("sum of squares", &eager, &total.call(&x).unwrap());
}

#[test]
fn an_error_inside_the_function_names_the_op() {
    let f = jit(|a: &Tensor, b: &Tensor| a.add(1.0)?.multiply(b)?.dot(b));
    let err = f.call((&host(&[2, 3]), &host(&[2, 3]))).unwrap_err();
    match &err {
        Error::Jit {
            op_index, source, ..
        } => {
            assert_eq!(*op_index, 3, "{err}");
            assert!(source.to_string().starts_with("dot"), "{err}");
        }
        other => panic!("expected a jit error, got {other}"),
    }
    assert!(err.to_string().contains("f32[2][3] on host:0"), "{err}");
    assert!(!jit_cached(&f, (&host(&[2, 3]), &host(&[2, 3]))).unwrap());
}

#[test]
fn reading_a_placeholder_is_an_error_and_printing_one_says_what_it_is() {
    let f = jit(|x: &Tensor| {
        assert!(is_placeholder(x));
        assert!(x.to_string().contains("placeholder of a jit trace"));
        let _ = x.to_vec::<f32>()?;
        Ok(x.clone())
    });
    match f.call(&host(&[2])).unwrap_err() {
        Error::Jit { source, .. } => assert!(matches!(*source, Error::Traced { .. })),
        other => panic!("{other}"),
    }
}

#[test]
fn captured_tensors_are_constants_and_control_flow_runs_at_trace_time() {
    let w = host(&[3]);
    let f = jit(move |x: &Tensor| {
        let mut y = x.clone();
        for _ in 0..3 {
            y = y.add(&w)?;
        }
        if x.rank() == 1 {
            y.multiply(2)
        } else {
            Ok(y)
        }
    });
    assert_eq!(
        f.call(&host(&[3])).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, 8.0, 16.0]
    );
}

#[test]
fn several_outputs_slices_and_nested_jits() {
    let inner = jit(|x: &Tensor| x.add(1.0));
    let outer: Jit<(Tensor, Tensor)> = jit(move |args: &[Tensor]| {
        let y = inner.call(&args[0])?;
        Ok((y.multiply(&args[1])?, y))
    });
    let (a, b) = outer.call([&host(&[2]), &host(&[2])]).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![0.0, 2.0]);
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    let r = jit_apply(|x: &Tensor| x.negate(), &host(&[2])).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![-0.0, -1.0]);
    let wrong = jit(|x: &Tensor| x.negate());
    assert!(wrong.call((&host(&[1]), &host(&[1]))).is_err());
}

#[test]
fn serving_compiles_for_the_default_at_run_time() {
    let _g = global_settings();
    enable_sim();
    let serving = Serving::new(|b: &Tensor| b.multiply(2.0)?.add(1.0)).batch_size(4);
    let input = on(Device::BINARY).iota(DType::F32, &[10, 2], None).unwrap();
    set_default_device(Device::host(0)).unwrap();
    let a = serving.run(&input).unwrap();
    assert_eq!(a.device(), Device::host(0));
    set_default_device(Device::sim(0)).unwrap();
    let b = serving.run(&input).unwrap();
    assert_eq!(b.device(), Device::sim(0));
    assert_eq!(a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert_eq!(
        serving.compiled_for(),
        vec![Device::host(0), Device::sim(0)]
    );
    set_default_device(Device::host(0)).unwrap();
}

fn running_sum() -> Jit<(Tensor, Tensor)> {
    jit(|chunk: &Tensor, acc: &Tensor| {
        let next = acc.add(&chunk.sum(..)?)?;
        Ok((next.clone(), next))
    })
}

#[test]
fn a_stream_keeps_its_state_on_the_device_in_order() {
    enable_sim();
    for device in [Device::host(0), Device::sim(0)] {
        let template = on(device).zeros(DType::S64, &[2]).unwrap();
        let state = on(device).scalar(0i64).unwrap();
        let step = running_sum();
        assert!(!stream_cached(&step, &template, &state).unwrap());
        let s = stream(&step, &template, &state).unwrap();
        assert!(stream_cached(&step, &template, &state).unwrap());
        for (i, expected) in [(1i64, 2i64), (2, 6), (3, 12)] {
            let chunk = on(device).full(i as f64, DType::S64, &[2]).unwrap();
            s.send(&chunk).unwrap();
            let out = s.recv().unwrap();
            assert_eq!(out.device(), device);
            assert_eq!(out.to_vec::<i64>().unwrap(), vec![expected]);
        }
        let last = s.done().unwrap();
        assert_eq!(last.to_vec::<i64>().unwrap(), vec![12]);
        assert_eq!(last.device(), device);
    }
}

/// `jit`, `stream` and `Serving` place themselves by one rule: a pinned device, else the
/// device of the arguments that do not yield, else the session default at call time; binary
/// and rank-0 arguments yield. (A stream over a binary template and state used to run on
/// binary while `jit` over the same arguments compiled for the default.)
#[test]
fn every_compiled_entry_point_follows_one_device_rule() {
    let _g = global_settings();
    enable_sim();
    set_default_device(Device::sim(0)).unwrap();
    let binary = on(Device::BINARY).iota(DType::S64, &[2], None).unwrap();
    let binary_scalar = on(Device::BINARY).scalar(0i64).unwrap();
    let host_scalar = on(Device::host(0)).scalar(5i64).unwrap();

    let f = jit(|x: &Tensor, a: &Tensor| x.add(a));
    let y = f.call((&binary, &host_scalar)).unwrap();
    assert_eq!(y.device(), Device::sim(0));
    assert_eq!(y.to_vec::<i64>().unwrap(), vec![5, 6]);

    let step = running_sum();
    let s = stream(&step, &binary, &binary_scalar).unwrap();
    assert_eq!(s.device(), Device::sim(0));
    s.send(&binary).unwrap();
    let out = s.recv().unwrap();
    assert_eq!(out.device(), Device::sim(0));
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![1]);
    assert_eq!(s.done().unwrap().device(), Device::sim(0));
    let s = stream(&step, &binary, &host_scalar).unwrap();
    assert_eq!(s.device(), Device::sim(0), "a rank-0 state yields too");
    drop(s);

    let serving = Serving::new(|b: &Tensor| b.multiply(2.0)).batch_size(2);
    let rows = on(Device::BINARY).iota(DType::F32, &[3, 2], None).unwrap();
    assert_eq!(serving.run(&rows).unwrap().device(), Device::sim(0));

    // An argument that does not yield decides, for every entry point alike.
    let on_host = on(Device::host(0)).iota(DType::S64, &[2], None).unwrap();
    assert_eq!(
        f.call((&on_host, &binary_scalar)).unwrap().device(),
        Device::host(0)
    );
    let s = stream(&step, &on_host, &binary_scalar).unwrap();
    assert_eq!(s.device(), Device::host(0));
    drop(s);
    assert!(matches!(
        f.call((
            &on_host,
            &on(Device::sim(1)).iota(DType::S64, &[2], None).unwrap()
        )),
        Err(Error::DeviceMismatch { .. })
    ));
    set_default_device(Device::host(0)).unwrap();
}

#[test]
fn every_stream_misuse_is_an_error_not_a_hang() {
    let template = on(Device::host(0)).zeros(DType::F32, &[3]).unwrap();
    let state = on(Device::host(0)).scalar(0.0f32).unwrap();
    let s = stream(running_sum(), &template, &state).unwrap();
    let stream_error = |r: Result<()>| match r {
        Err(Error::Stream(m)) => m,
        other => panic!("expected a stream error, got {other:?}"),
    };
    assert!(matches!(s.recv(), Err(Error::Stream(m)) if m.contains("nothing sent")));
    let wrong = on(Device::host(0)).zeros(DType::F32, &[4]).unwrap();
    assert!(stream_error(s.send(&wrong)).contains("does not match"));
    let wrong_type = on(Device::host(0)).zeros(DType::F64, &[3]).unwrap();
    assert!(stream_error(s.send(&wrong_type)).contains("f64[3]"));
    s.send(&template).unwrap();
    assert!(stream_error(s.send(&template)).contains("not been received"));
    assert!(matches!(s.done(), Err(Error::Stream(m)) if m.contains("not been received")));
    s.recv().unwrap();
    s.done().unwrap();
    assert!(stream_error(s.send(&template)).contains("after done"));
    assert!(matches!(s.recv(), Err(Error::Stream(_))));
    assert!(matches!(s.done(), Err(Error::Stream(_))));
}

#[test]
fn send_waits_for_another_handle_to_receive() {
    let template = on(Device::host(0)).ones(DType::F32, &[4]).unwrap();
    let state = on(Device::host(0)).scalar(0.0f32).unwrap();
    let s = stream(running_sum(), &template, &state).unwrap();
    let receiver = s.clone();
    let consumer = std::thread::spawn(move || {
        let mut got = Vec::new();
        for _ in 0..5 {
            // Slow consumer: the producer must wait for each receive.
            std::thread::sleep(Duration::from_millis(20));
            got.push(receiver.recv().unwrap().to_scalar::<f32>().unwrap());
        }
        got
    });
    for _ in 0..5 {
        s.send(&template).unwrap();
    }
    let got = consumer.join().unwrap();
    assert_eq!(
        got,
        vec![4.0, 8.0, 12.0, 16.0, 20.0],
        "no output lost or reordered"
    );
    assert_eq!(s.done().unwrap().to_scalar::<f32>().unwrap(), 20.0);
}

#[test]
fn hand_written_fused_regions_run_the_same_on_every_device() {
    enable_sim();
    for (name, region, inputs) in common::regions::regions() {
        let reference = tensorbook::testing::run_fused(&region, &inputs, Device::BINARY).unwrap();
        for device in tensorbook::devices() {
            let placed: Vec<Tensor> = inputs
                .iter()
                .map(|t| t.backend_copy(device).unwrap())
                .collect();
            let got = tensorbook::testing::run_fused(&region, &placed, device).unwrap();
            assert_eq!(got.device(), device);
            let on_binary = got.backend_copy(Device::BINARY).unwrap();
            let expected = reference.clone();
            assert_eq!(expected.shape(), on_binary.shape(), "{name} on {device}");
            let (e, g) = (
                expected.to_f64_vec().unwrap(),
                on_binary.to_f64_vec().unwrap(),
            );
            for (i, (x, y)) in e.iter().zip(&g).enumerate() {
                assert!(
                    close(expected.dtype(), *x, *y),
                    "{name} on {device}: element {i}: binary {x}, {device} {y}"
                );
            }
        }
    }
}

/// Indices that are arguments of a compiled function stay on the device as traced values:
/// sorting, the positions of argsort, gathers and scatters by them all compile, and agree
/// with eager calls on every device.
#[test]
fn traced_indices_sort_gather_and_scatter_inside_jit() {
    enable_sim();
    let f: Jit<Vec<Tensor>> = jit(|args: &[Tensor]| {
        let (x, idx) = (&args[0], &args[1]);
        let order = x.argsort(1, tensorbook::Direction::Desc)?;
        let sorted = x.take_along_axis(&order, 1)?;
        let picked = x.gather(idx, ..)?;
        let counts = x.indexed_add(idx, 1.0, ..)?;
        Ok(vec![sorted, picked, counts])
    });
    for device in tensorbook::devices() {
        let x = on(device)
            .from_vec(vec![0.5f32, -1.0, 3.0, 2.0, f32::NAN, 0.0], &[2, 3])
            .unwrap();
        let idx = on(device)
            .from_vec(vec![1i32, 2, 0, 0, 1, 2], &[3, 2])
            .unwrap();
        let out = f.call([&x, &idx]).unwrap();
        let (sorted, picked, counts) = (&out[0], &out[1], &out[2]);
        let eager = x.sort(1, tensorbook::Direction::Desc).unwrap();
        let same = |a: &Tensor, b: &Tensor| {
            let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
            a.iter()
                .zip(&b)
                .all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        };
        assert!(
            same(sorted, &eager),
            "{device}: {sorted:?} against {eager:?}"
        );
        assert_eq!(picked.to_vec::<f32>().unwrap(), [0.0, 0.5, 0.0], "{device}");
        let counts = counts.to_vec::<f32>().unwrap();
        assert_eq!(counts[..4], [1.5, -1.0, 3.0, 2.0], "{device}");
        assert!(
            counts[4].is_nan() && counts[5] == 2.0,
            "{device}: {counts:?}"
        );
    }
}

/// `take` by indices a compiled function receives (a model's embedding lookup inside `jit`):
/// a gather along the axis, equal to the eager `take`, and differentiable with respect to the
/// table (each entry's gradient counts how often it was taken).
#[test]
fn take_by_traced_indices_compiles_and_differentiates() {
    enable_sim();
    let f = jit(|args: &[Tensor]| args[0].take(&args[1], 1));
    let g = tensorbook::grad_wrt(|args: &[Tensor]| args[0].take(&args[1], 1)?.sum(..), &[0]);
    for device in tensorbook::devices() {
        let x = on(device)
            .from_vec((0..12).map(|i| i as f32).collect(), &[3, 4])
            .unwrap();
        let idx = on(device)
            .from_vec(vec![3i32, 0, 3, 1, 2, 2], &[2, 3])
            .unwrap();
        let out = f.call([&x, &idx]).unwrap();
        let eager = x.take(&idx, 1).unwrap();
        assert_eq!(out.shape(), [3, 2, 3], "on {device}");
        assert_eq!(
            out.to_vec::<f32>().unwrap(),
            eager.to_vec::<f32>().unwrap(),
            "on {device}"
        );
        let dx = &g.call([&x, &idx]).unwrap()[0];
        assert_eq!(
            dx.to_vec::<f32>().unwrap(),
            [1.0, 1.0, 2.0, 2.0].repeat(3),
            "on {device}"
        );
    }
}
