//! The blog's comparison in a terminal: `{10000, 784} x {784, 10}` f32 on the binary reference
//! and on the host client, five timed repetitions each after a warm-up, with each operand's
//! placement printed (the label comes from the tensor, never from the default setting).
//!
//! `cargo run --release -p tensorbook --example blog_matmul`

use std::time::Instant;

use tensorbook::{on, DType, Device, Tensor};

fn time(label: &str, x: &Tensor, w: &Tensor) -> tensorbook::Result<(f64, Tensor)> {
    let result = x.dot(w)?; // warm-up
    let reps = 5;
    let start = Instant::now();
    for _ in 0..reps {
        x.dot(w)?;
    }
    let avg = start.elapsed().as_secs_f64() * 1e3 / reps as f64;
    println!(
        "{label:<8} x: {:<8} w: {:<8} average {avg:>10.3} ms  ({:.1} GFLOP/s)",
        x.device(),
        w.device(),
        2.0 * 10000.0 * 784.0 * 10.0 / (avg * 1e6)
    );
    Ok((avg, result))
}

fn main() -> tensorbook::Result<()> {
    let mut rows = Vec::new();
    for device in [Device::BINARY, Device::host(0)] {
        let f = on(device);
        let x = f.random_uniform(0, DType::F32, &[10000, 784], 0.0, 1.0)?;
        let w = f.random_normal(1, DType::F32, &[784, 10], 0.0, 1.0)?;
        rows.push(time(&device.to_string(), &x, &w)?);
    }
    let (binary_ms, reference) = &rows[0];
    let (host_ms, host) = &rows[1];
    let max_diff = reference
        .to_f64_vec()?
        .iter()
        .zip(host.to_f64_vec()?)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    println!(
        "host is {:.0}x faster than binary; largest difference {max_diff:.2e}",
        binary_ms / host_ms
    );
    println!("{host}");
    Ok(())
}
