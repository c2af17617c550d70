//! The pool of large freed host buffers (`buffer_pool`): a dropped tensor's memory is reused by
//! the next result of its size with every value rewritten, and what the pool keeps is bounded.
//! One test, so that nothing else in this process touches the pool meanwhile.

mod common;

use common::{conform, random};
use tensorbook::testing::buffer_pool::{held_bytes, release, MAX_BUFFERS, MAX_BYTES};
use tensorbook::{on, DType, Device};

#[test]
fn freed_large_buffers_are_reused_with_fresh_values_and_bounded() {
    release();
    let host = on(Device::host(0));
    let n = 4 << 20; // 16 MiB of f32
    let first = host.iota(DType::F32, &[n], None).unwrap();
    drop(first);
    assert!(
        held_bytes() >= n * 4,
        "a dropped 16 MiB tensor is kept: {} bytes held",
        held_bytes()
    );
    // The next results of that size take the kept buffer: every element must be the new op's.
    let a = random(31, DType::F32, &[n]);
    let b = random(32, DType::F32, &[n]);
    conform("add over a reused buffer", &[a.clone(), b], |t| {
        t[0].add(&t[1])
    });
    conform("exp over a reused buffer", std::slice::from_ref(&a), |t| {
        t[0].exp()
    });
    conform(
        "as_type over a reused buffer",
        std::slice::from_ref(&a),
        |t| t[0].as_type(DType::F64),
    );
    conform(
        "multiply, odd length",
        &[random(33, DType::F32, &[n + 3])],
        |t| t[0].multiply(&t[0]),
    );

    let many: Vec<_> = (0..MAX_BUFFERS + 4)
        .map(|_| host.iota(DType::F32, &[n], None).unwrap())
        .collect();
    drop(many);
    assert!(held_bytes() <= MAX_BYTES);
    assert!(held_bytes() <= MAX_BUFFERS * (n * 4 + (n * 4) / 4));
    release();
    assert_eq!(held_bytes(), 0, "release gives every kept buffer back");
}
