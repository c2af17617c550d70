//! `cargo bench -p tensorbook`: f32 dot on the blog's shape ({10000,784}x{784,10}), 1024³ and
//! 2048³, and elementwise add and sum over 10M elements, on binary and host. Criterion's
//! throughput is set to FLOPs (dot) or elements, so "Gelem/s" reads as GFLOP/s / Gelem/s.
//! For numpy beside each figure, measured in the same run, use `tensorbook bench ops`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tensorbook::{on, DType, Device, Tensor};

/// Set to include the binary backend's 2048³ product.
const SLOW: &str = "TENSORBOOK_BENCH_SLOW";

fn operands(device: Device, m: usize, k: usize, n: usize) -> (Tensor, Tensor) {
    let f = on(device);
    (
        f.random_uniform(1, DType::F32, &[m, k], -1.0, 1.0)
            .expect("lhs"),
        f.random_uniform(2, DType::F32, &[k, n], -1.0, 1.0)
            .expect("rhs"),
    )
}

fn dot(c: &mut Criterion) {
    let mut group = c.benchmark_group("dot_f32");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for (m, k, n) in [(10000, 784, 10), (1024, 1024, 1024), (2048, 2048, 2048)] {
        group.throughput(Throughput::Elements((2 * m * n * k) as u64));
        for device in [Device::BINARY, Device::host(0)] {
            // One binary 2048³ product takes over a minute; criterion wants ten of them.
            if device == Device::BINARY && m == 2048 && std::env::var_os(SLOW).is_none() {
                println!("skipping binary 2048³ (set {SLOW}=1 to include it, ~15 minutes)");
                continue;
            }
            let (a, b) = operands(device, m, k, n);
            let id = BenchmarkId::new(device.to_string(), format!("{m}x{k}.{k}x{n}"));
            group.bench_with_input(id, &(a, b), |bench, (a, b)| {
                bench.iter(|| a.dot(b).expect("dot"))
            });
        }
    }
    group.finish();
}

fn elementwise(c: &mut Criterion) {
    let n = 10_000_000;
    let mut group = c.benchmark_group("elementwise_f32_10M");
    group
        .sample_size(10)
        .throughput(Throughput::Elements(n as u64));
    for device in [Device::BINARY, Device::host(0)] {
        let f = on(device);
        let x = f.random_uniform(3, DType::F32, &[n], -1.0, 1.0).expect("x");
        let y = f.random_uniform(4, DType::F32, &[n], -1.0, 1.0).expect("y");
        group.bench_function(BenchmarkId::new("add", device.to_string()), |b| {
            b.iter(|| x.add(&y).expect("add"))
        });
        group.bench_function(BenchmarkId::new("sum", device.to_string()), |b| {
            b.iter(|| x.sum(..).expect("sum"))
        });
    }
    group.finish();
}

criterion_group!(benches, dot, elementwise);
criterion_main!(benches);
