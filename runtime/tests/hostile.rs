//! Hostile inputs: every op, on every device, over shapes with huge and zero dimensions, starts,
//! lengths, steps and indices near `usize::MAX`, and ranks past the limit, must return a value
//! or an `Error`: never panic, never crash. `install/test.sh` runs this in the release profile
//! too, where integer overflow would wrap silently instead of panicking.
//!
//! Host allocations are capped at 256 MiB here, so that a hostile shape that happens to be
//! possible cannot take the machine's memory (the cap is part of what is tested).

mod common;

use common::enable_sim;
use proptest::prelude::*;
use proptest::sample::select;
use tensorbook::{on, set_host_memory_limit, DType, Device, Leftover, Result, Tensor};

/// Sizes that break unchecked arithmetic, and ordinary ones.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0usize..4,
        2 => select(vec![
            usize::MAX,
            usize::MAX - 1,
            usize::MAX / 2,
            usize::MAX / 2 + 1,
            isize::MAX as usize,
            1 << 32,
            (1 << 32) + 1,
            1 << 62,
            1 << 60,
            (1 << 60) - 1,
            1 << 31,
            65_536,
        ]),
    ]
}

fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        4 => prop::collection::vec(size(), 0..5),
        1 => prop::collection::vec(0usize..3, 60..70),
    ]
}

fn axis() -> impl Strategy<Value = isize> {
    prop_oneof![
        -3isize..4,
        select(vec![isize::MIN, isize::MAX, isize::MIN + 1])
    ]
}

fn dtype() -> impl Strategy<Value = DType> {
    select(DType::ALL.to_vec())
}

fn devices() -> Vec<Device> {
    enable_sim();
    set_host_memory_limit(Some(256 << 20));
    tensorbook::devices()
}

/// Shows a result the way a notebook would, which must not fail either.
fn shown(r: Result<Tensor>) {
    if let Ok(t) = r {
        let text = t.to_string();
        assert!(text.len() < 4 << 20, "a display of {} bytes", text.len());
        let _ = t.to_html();
        let _ = t.sync();
    }
}

/// Small tensors of every kind to be hostile to: empty, scalar, ordinary.
fn victims(device: Device, dtype: DType) -> Vec<Tensor> {
    let f = on(device);
    vec![
        f.zeros(dtype, &[0]).unwrap(),
        f.zeros(dtype, &[2, 0, 3]).unwrap(),
        f.ones(dtype, &[]).unwrap(),
        f.iota(dtype, &[2, 3], None).unwrap(),
        f.iota(dtype, &[4], None).unwrap(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn creation_never_panics(s in shape(), d in dtype(), n in size(), seed in any::<u64>()) {
        for device in devices() {
            let f = on(device);
            shown(f.zeros(d, &s));
            shown(f.full(f64::MAX, d, &s));
            shown(f.iota(d, &s, Some(-1)));
            shown(f.iota(d, &s, None));
            shown(f.eye(d, n));
            shown(f.random_uniform(seed, d, &s, -1.0, 1.0));
            shown(f.random_normal(seed, d, &s, 0.0, 1.0));
            shown(f.from_vec(Vec::<f32>::new(), &s));
        }
    }

    #[test]
    fn shape_ops_never_panic(s in shape(), d in dtype(), a in axis(), n in size(), k in size()) {
        for device in devices() {
            for t in victims(device, d) {
                shown(t.reshape(&s));
                shown(t.broadcast(&s));
                shown(t.new_axis(a));
                shown(t.squeeze([a]));
                shown(t.transpose(&s));
                let start = vec![n; t.rank()];
                let lengths = vec![k; t.rank()];
                shown(t.slice(&start, &lengths, Some(&vec![n; t.rank()])));
                shown(t.slice(&start, t.shape(), Some(&vec![k; t.rank()])));
                shown(t.slice(&start, &lengths, None));
                shown(t.put_slice(&start, &t));
                if let Ok(empty) = t.reshape(&s) {
                    shown(empty.sum([a]));
                    shown(empty.mean_keep(..));
                    shown(empty.argmax(a));
                    shown(empty.reduce_max(..));
                    shown(empty.exp());
                    shown(empty.add(&empty));
                    shown(empty.dot(&empty));
                    shown(empty.transpose(..));
                    shown(Tensor::concatenate(&[empty.clone(), empty.clone(), t.clone()], a));
                    shown(Tensor::stack(&[empty.clone(), empty], a));
                }
                if let Ok(batches) = t.to_batched(n, Leftover::Repeat) {
                    batches.into_iter().for_each(|b| shown(Ok(b)));
                }
                let _ = t.to_batched(k, Leftover::Discard);
            }
        }
    }

    #[test]
    fn elementwise_dot_and_indexing_never_panic(d in dtype(), e in dtype(), n in size(), big in any::<i64>(), x in any::<f64>()) {
        for device in devices() {
            for t in victims(device, d) {
                for u in victims(device, e) {
                    shown(t.add(&u));
                    shown(t.pow(&u));
                    shown(t.divide(&u));
                    shown(t.dot(&u));
                    shown(t.less(&u));
                }
                shown(t.add(big));
                shown(t.pow(big));
                shown(t.multiply(x));
                shown(t.subtract(u64::MAX));
                shown(t.greater_equal(n));
                let idx = on(Device::BINARY).from_vec(vec![big, -1, i64::MAX, 0], &[2, 2]).unwrap();
                shown(t.take(&idx, 0));
                shown(t.take(&idx, -1));
                // Indices as data: extreme values clamp or are skipped, never index memory.
                shown(t.take_along_axis(&idx, 0));
                shown(t.gather(&idx, ..));
                shown(t.indexed_add(&idx, big, ..));
                shown(t.indexed_put(&idx, x, [0, -1]));
                shown(t.sort(-1, tensorbook::Direction::Desc));
                shown(t.argsort(0, tensorbook::Direction::Asc));
                shown(t.top_k(n).map(|(values, _)| values));
                shown(t.median(0));
                shown(t.mode_keep(..));
                shown(t.as_type(e));
                shown(t.backend_copy(Device::BINARY));
            }
        }
    }
}

/// A tensor of the highest rank prints quickly and boundedly; one rank more is an error.
#[test]
fn the_rank_limit_bounds_shapes_and_the_display() {
    for device in devices() {
        let deep = on(device).ones(DType::F32, &[1; 64]).unwrap();
        assert!(deep.to_string().len() < 20_000);
        assert!(deep.new_axis(0).is_err());
        assert!(deep.reshape(&[1; 65]).is_err());
        assert!(on(device).zeros(DType::U8, &[1; 65]).is_err());
        // 2^59 empty lists if the display walked the whole shape.
        let wide_empty = on(device)
            .zeros(DType::U8, &[vec![2; 59], vec![0]].concat())
            .unwrap();
        assert!(wide_empty.to_string().len() < 4 << 20);
    }
}

/// The issue's own examples.
#[test]
fn overflowing_shapes_are_errors_not_wrapped_sizes() {
    for device in devices() {
        let t = on(device).iota(DType::F32, &[4], None).unwrap();
        let empty = on(device).zeros(DType::F32, &[0]).unwrap();
        assert!(empty.reshape(&[usize::MAX, usize::MAX, 0]).is_err());
        assert!(t.broadcast(&[usize::MAX, usize::MAX, 4]).is_err());
        assert!(t.slice(&[1], &[2], Some(&[usize::MAX])).is_ok());
        assert!(t.slice(&[usize::MAX], &[usize::MAX], None).is_err());
        let a = on(device).zeros(DType::F32, &[1 << 31, 0]).unwrap();
        let b = on(device).zeros(DType::F32, &[0, 1 << 31]).unwrap();
        assert!(
            a.dot(&b).is_err(),
            "a [2^31, 2^31] product of empty tensors"
        );
        // Larger than the machine (or the cap): refused before a page is touched.
        assert!(on(device).zeros(DType::F64, &[3_000_000_000]).is_err());
    }
}
