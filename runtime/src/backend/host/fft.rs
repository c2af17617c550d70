//! Fourier transforms through `rustfft` (mixed-radix for lengths of small factors, Rader's and
//! Bluestein's algorithms for large primes, AVX where the CPU has it), rows in parallel, and
//! real-input ones through `realfft` (a length-n real transform computed as a complex one of
//! n/2: half the work of transforming the signal as complex values). A plan per length is made
//! once and kept by the crates' planners.

use std::sync::{Arc, Mutex, OnceLock};

use super::parallel::for_each_chunk_mut;
use realfft::RealFftPlanner;
use rustfft::num_complex::Complex as FftComplex;
use rustfft::{FftNum, FftPlanner};

use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::complex::Complex;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ir::Fft;

/// A float rustfft computes in, with the planners its plans come from.
trait Planned: FftNum {
    fn planner() -> &'static Mutex<FftPlanner<Self>>;
    fn real_planner() -> &'static Mutex<RealFftPlanner<Self>>;
}

macro_rules! planned {
    ($t:ty) => {
        impl Planned for $t {
            fn planner() -> &'static Mutex<FftPlanner<Self>> {
                static PLANNER: OnceLock<Mutex<FftPlanner<$t>>> = OnceLock::new();
                PLANNER.get_or_init(|| Mutex::new(FftPlanner::new()))
            }
            fn real_planner() -> &'static Mutex<RealFftPlanner<Self>> {
                static PLANNER: OnceLock<Mutex<RealFftPlanner<$t>>> = OnceLock::new();
                PLANNER.get_or_init(|| Mutex::new(RealFftPlanner::new()))
            }
        }
    };
}
planned!(f32);
planned!(f64);

/// The transform of each row of `x` (`[fft.rows, fft.length]`, c64 or c128; f32 or f64 for a
/// real-input transform).
pub(super) fn fft(x: &Buffer, fft: &Fft) -> Result<Buffer> {
    match x {
        Buffer::C64(v) if !fft.real_input => Ok(Buffer::C64(rows(v, fft)?)),
        Buffer::C128(v) if !fft.real_input => Ok(Buffer::C128(rows(v, fft)?)),
        Buffer::F32(v) if fft.real_input => Ok(Buffer::C64(real_rows(v, fft)?)),
        Buffer::F64(v) if fft.real_input => Ok(Buffer::C128(real_rows(v, fft)?)),
        other => Err(Error::InvalidArgument {
            op: "fft",
            message: format!("internal: a {} input reached the backend", other.dtype()),
        }),
    }
}

fn rows<R: Planned + Element>(
    x: &[Complex<R>],
    fft: &Fft,
) -> Result<crate::host_vec::HostVec<Complex<R>>>
where
    Complex<R>: Element,
{
    let n = fft.length;
    rows_fit(x.len(), fft)?;
    let mut out = try_alloc(x.len(), Complex::<R>::ZERO, &[fft.rows, n])?;
    out.copy_from_slice(x);
    if n == 0 || out.is_empty() {
        return Ok(out);
    }
    let plan = {
        let mut planner = R::planner().lock().unwrap_or_else(|e| e.into_inner());
        if fft.inverse {
            planner.plan_fft_inverse(n)
        } else {
            planner.plan_fft_forward(n)
        }
    };
    let scratch_len = plan.get_inplace_scratch_len();
    let scale = if fft.inverse { 1.0 / n as f64 } else { 1.0 };
    let clean = |x: R| -> R { <R as Element>::from_f64(fft.clean(Element::to_f64(x) * scale)) };
    // Rows of a few thousand entries or more per task: one row's transform is too little work
    // to hand to another core below that.
    let rows_per_task = (8192 / n).max(1);
    for_each_chunk_mut(as_fft(&mut out), n * rows_per_task, |_, block| {
        let mut scratch =
            vec![FftComplex::new(<R as Element>::ZERO, <R as Element>::ZERO); scratch_len];
        for row in block.chunks_mut(n) {
            Arc::clone(&plan).process_with_scratch(row, &mut scratch);
            for z in row.iter_mut() {
                *z = FftComplex::new(clean(z.re), clean(z.im));
            }
        }
    });
    Ok(out)
}

/// The non-negative frequencies of each real row.
fn real_rows<R: Planned + Element>(
    x: &[R],
    fft: &Fft,
) -> Result<crate::host_vec::HostVec<Complex<R>>>
where
    Complex<R>: Element,
{
    let (n, width) = (fft.length, fft.out_width());
    rows_fit(x.len(), fft)?;
    let zero = <R as Element>::ZERO;
    let mut out = try_alloc(
        fft.rows.saturating_mul(width),
        Complex::new(zero, zero),
        &[fft.rows, width],
    )?;
    if n == 0 || out.is_empty() {
        return Ok(out);
    }
    let plan = R::real_planner()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .plan_fft_forward(n);
    let scratch_len = plan.get_scratch_len();
    let clean = |x: R| -> R { <R as Element>::from_f64(fft.clean(Element::to_f64(x))) };
    let rows_per_task = (8192 / n).max(1);
    let failed = std::sync::atomic::AtomicBool::new(false);
    for_each_chunk_mut(as_fft(&mut out), width * rows_per_task, |t, block| {
        let source = &x[t * n * rows_per_task..];
        // The transform uses its input as scratch: each row is copied in first.
        let mut input = vec![zero; n];
        let mut scratch = vec![FftComplex::new(zero, zero); scratch_len];
        for (row, signal) in block.chunks_mut(width).zip(source.chunks(n)) {
            input.copy_from_slice(signal);
            if plan
                .process_with_scratch(&mut input, row, &mut scratch)
                .is_err()
            {
                failed.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            for z in row.iter_mut() {
                *z = FftComplex::new(clean(z.re), clean(z.im));
            }
        }
    });
    if failed.into_inner() {
        return Err(Error::InvalidArgument {
            op: "rfft",
            message: format!("internal: a row of {n} did not fit the real transform's plan"),
        });
    }
    Ok(out)
}

/// rustfft panics on a buffer that is not whole rows: an input of another length (a frontend
/// bug) is an error instead.
fn rows_fit(len: usize, fft: &Fft) -> Result<()> {
    if Some(len) == fft.rows.checked_mul(fft.length) {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "fft",
            message: format!(
                "internal: {len} entries given for {} rows of {}",
                fft.rows, fft.length
            ),
        })
    }
}

/// Our complex elements seen as rustfft's: both are `repr(C)` pairs of the same float, real
/// part first.
fn as_fft<R>(v: &mut [Complex<R>]) -> &mut [FftComplex<R>] {
    assert_eq!(
        std::mem::size_of::<Complex<R>>(),
        std::mem::size_of::<FftComplex<R>>()
    );
    assert_eq!(
        std::mem::align_of::<Complex<R>>(),
        std::mem::align_of::<FftComplex<R>>()
    );
    // SAFETY: both types are `repr(C)` structs of two `R`s in the same order with the same
    // size and alignment (asserted), and the slice borrows `v` mutably for its whole life.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<FftComplex<R>>(), v.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rustfft's rows agree with the reference sum, forward and inverse, at a power of two, a
    /// composite and a prime length.
    #[test]
    fn rows_match_the_reference_sum() {
        for n in [8usize, 12, 17] {
            let x: Vec<Complex<f64>> = (0..2 * n)
                .map(|i| Complex::new((i as f64 * 0.7).sin(), (i as f64 * 0.3).cos()))
                .collect();
            for inverse in [false, true] {
                let op = Fft {
                    rows: 2,
                    length: n,
                    inverse,
                    real_input: false,
                    eps: 0.0,
                };
                let got = rows(&x, &op).unwrap();
                for r in 0..2 {
                    let row: Vec<(f64, f64)> =
                        x[r * n..][..n].iter().map(|z| (z.re, z.im)).collect();
                    let mut want = vec![(0.0, 0.0); n];
                    op.reference_row(&row, &mut want);
                    for (g, w) in got[r * n..][..n].iter().zip(&want) {
                        assert!((g.re - w.0).abs() < 1e-12 && (g.im - w.1).abs() < 1e-12);
                    }
                }
            }
        }
    }

    /// The real-input rows are the complex transform's first halves, even and odd lengths.
    #[test]
    fn real_rows_are_the_first_half_of_the_complex_transform() {
        for n in [1usize, 2, 7, 16, 30] {
            let x: Vec<f64> = (0..3 * n).map(|i| (i as f64 * 0.37).sin() + 0.2).collect();
            let op = Fft {
                rows: 3,
                length: n,
                inverse: false,
                real_input: true,
                eps: 0.0,
            };
            let got = real_rows(&x, &op).unwrap();
            let width = n / 2 + 1;
            assert_eq!(got.len(), 3 * width);
            for r in 0..3 {
                let row: Vec<(f64, f64)> = x[r * n..][..n].iter().map(|&v| (v, 0.0)).collect();
                let mut want = vec![(0.0, 0.0); n];
                op.reference_row(&row, &mut want);
                for (g, w) in got[r * width..][..width].iter().zip(&want) {
                    assert!(
                        (g.re - w.0).abs() < 1e-12 && (g.im - w.1).abs() < 1e-12,
                        "{n}"
                    );
                }
            }
        }
    }
}
