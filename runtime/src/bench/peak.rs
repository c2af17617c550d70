//! The machine's f32 multiply-add peak, measured: a loop of independent FMAs on registers
//! only, on every core at once. GEMM rows are reported as a fraction of it.

use std::time::Instant;

/// Independent accumulator chains per core: enough to cover the FMA latency on both ports.
const CHAINS: usize = 12;

/// GFLOP/s of f32 FMAs on all cores (two flops per lane per FMA), or `None` where this CPU has
/// no FMA unit the runtime knows how to drive.
pub fn fma_peak_gflops() -> Option<f64> {
    let per_core = lanes()?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let iters: u64 = 10_000_000;
    let flops = (threads as f64) * (iters as f64) * (CHAINS * per_core * 2) as f64;
    // The best of several short runs: a peak is what the cores reach when nothing else runs
    // (shared machines take cycles away now and then).
    let best = (0..5)
        .map(|_| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(move || std::hint::black_box(run(iters)));
                }
            });
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    Some(flops / best / 1e9)
}

/// f32 lanes per FMA on this CPU.
fn lanes() -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            return Some(16);
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            return Some(8);
        }
    }
    None
}

fn run(iters: u64) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked above).
            return unsafe { x86::fma512(iters) };
        }
        if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { x86::fma256(iters) };
        }
    }
    let _ = iters;
    0.0
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::CHAINS;

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma256(iters: u64) -> f32 {
        let a = _mm256_set1_ps(0.999_999);
        let b = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(1.0); CHAINS];
        for _ in 0..iters {
            for r in acc.iter_mut() {
                *r = _mm256_fmadd_ps(*r, a, b);
            }
        }
        let mut total = 0.0;
        for r in acc {
            let mut lanes = [0.0f32; 8];
            _mm256_storeu_ps(lanes.as_mut_ptr(), r);
            total += lanes.iter().sum::<f32>();
        }
        total
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma512(iters: u64) -> f32 {
        let a = _mm512_set1_ps(0.999_999);
        let b = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        for _ in 0..iters {
            for r in acc.iter_mut() {
                *r = _mm512_fmadd_ps(*r, a, b);
            }
        }
        acc.iter().map(|r| _mm512_reduce_add_ps(*r)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_is_measured_where_the_cpu_has_fma() {
        match lanes() {
            Some(_) => {
                let peak = fma_peak_gflops().expect("measured");
                // Any x86 core with FMA does well above 1 GFLOP/s of f32 FMAs.
                assert!(peak > 1.0, "{peak}");
            }
            None => println!("no FMA unit the runtime drives here: peak not measured"),
        }
    }
}
