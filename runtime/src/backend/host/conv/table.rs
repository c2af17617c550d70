//! Gathering a panel row through a table and the CPU's vector gather: for each fixed
//! coordinate (a tap, or an output position for a kernel's gradient) the input entry every
//! walked coordinate reads, or none (padding, a dilation's gap), made once per convolution.
//! A row of one image's panel is then one masked AVX-512 gather per 16 entries (8 in f64).
//!
//! Why beside `walk`: the CNN's images are 1x1 to 28x28 and mostly read at stride 2, so a
//! walk's runs are 1 to 14 entries long and its bookkeeping per run cost more than the copies
//! (`Walk::fill` was half of a stride-2 16-channel 7x7 convolution's time).

use std::any::TypeId;

use crate::element::Element;
use crate::shape::unravel;

use super::walk::AxisWalk;

/// A table's entries per fixed coordinate at most, and all its entries at most (tables are
/// made per call; beyond these the walk serves).
const MAX_ENTRIES: usize = 1 << 22;

/// Per fixed coordinate, the input offset each walked coordinate reads (`-1`: none), followed
/// by a vector's worth of `-1` so a gather from any walked coordinate reads no index past its
/// row.
pub(super) struct Tables {
    walked: usize,
    /// The entries of an input plane: every offset is below it.
    in_size: usize,
    /// `walked` and the padding after it.
    stride: usize,
    offsets: Vec<i32>,
}

const LANES: usize = 16;

impl Tables {
    /// The tables for every fixed coordinate of `fixed_sizes` (taps, or output positions),
    /// over the walked coordinates of `axes`; `None` where this CPU has no AVX-512, `T` is not
    /// f32 or f64, or offsets or sizes are too large for the tables.
    pub(super) fn new<T: Element>(axes: &[AxisWalk], fixed_sizes: &[usize]) -> Option<Tables> {
        if !available::<T>() || axes.is_empty() || axes.len() != fixed_sizes.len() {
            return None;
        }
        let walked = axes
            .iter()
            .map(|a| a.walked)
            .try_fold(1usize, usize::checked_mul)?;
        let fixed = fixed_sizes
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b))?;
        // Room for a whole vector of indices read from any walked coordinate on.
        let stride = walked.checked_add(LANES)?;
        let in_size = axes
            .iter()
            .map(|a| a.input)
            .try_fold(1usize, usize::checked_mul)?;
        if walked == 0 || stride > MAX_ENTRIES || fixed.checked_mul(stride)? > MAX_ENTRIES {
            return None;
        }
        i32::try_from(in_size).ok()?;
        let mut offsets = vec![-1i32; fixed * stride];
        let (mut f, mut w) = (vec![0; axes.len()], vec![0; axes.len()]);
        let walked_sizes: Vec<usize> = axes.iter().map(|a| a.walked).collect();
        for (t, row) in offsets.chunks_exact_mut(stride).enumerate() {
            unravel(t, fixed_sizes, &mut f);
            for (p, slot) in row[..walked].iter_mut().enumerate() {
                unravel(p, &walked_sizes, &mut w);
                let at = axes
                    .iter()
                    .zip(&f)
                    .zip(&w)
                    .try_fold(0usize, |acc, ((axis, &f), &w)| {
                        axis.source(f, w).map(|s| acc + s * axis.in_stride)
                    });
                if let Some(at) = at {
                    // Below `in_size`, which fits an i32 (checked above).
                    *slot = at as i32;
                }
            }
        }
        Some(Tables {
            walked,
            in_size,
            stride,
            offsets,
        })
    }

    /// `dst[j]` = the entry of `plane` that walked coordinate `from + j` reads under fixed
    /// coordinate `fixed`, or zero.
    pub(super) fn fill<T: Element>(&self, dst: &mut [T], plane: &[T], fixed: usize, from: usize) {
        let row = &self.offsets[fixed * self.stride..(fixed + 1) * self.stride];
        assert!(from + dst.len() <= self.walked, "a gather past its table");
        // The gathers below read `plane` unchecked.
        assert!(plane.len() >= self.in_size, "a gather from a short plane");
        let id = TypeId::of::<T>();
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `new` made tables only where the CPU has AVX-512F/VL and T is f32 or f64 (the
        // arm's TypeId); every offset is -1 or below `in_size`, which `plane` holds;
        // the row holds whole vectors of indices from any `from` on.
        unsafe {
            if id == TypeId::of::<f32>() {
                return gather_f32(
                    dst.as_mut_ptr().cast(),
                    plane.as_ptr().cast(),
                    &row[from..],
                    dst.len(),
                );
            } else if id == TypeId::of::<f64>() {
                return gather_f64(
                    dst.as_mut_ptr().cast(),
                    plane.as_ptr().cast(),
                    &row[from..],
                    dst.len(),
                );
            }
        }
        for (d, &at) in dst.iter_mut().zip(&row[from..]) {
            *d = if at >= 0 { plane[at as usize] } else { T::ZERO };
        }
    }
}

fn available<T: Element>() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let id = TypeId::of::<T>();
        (id == TypeId::of::<f32>() || id == TypeId::of::<f64>())
            && is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512vl")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// # Safety
/// AVX-512F; `dst` holds `len`; `idx` holds `len` rounded up to 16; every non-negative index
/// addresses `plane`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gather_f32(dst: *mut f32, plane: *const f32, idx: &[i32], len: usize) {
    use std::arch::x86_64::*;
    let zero = _mm512_setzero_ps();
    let mut j = 0;
    while j < len {
        let v = _mm512_loadu_si512(idx.as_ptr().add(j).cast());
        let valid = _mm512_cmpge_epi32_mask(v, _mm512_setzero_si512());
        let tail: __mmask16 = if len - j >= 16 {
            0xffff
        } else {
            ((1u32 << (len - j)) - 1) as __mmask16
        };
        let got = _mm512_mask_i32gather_ps::<4>(zero, valid & tail, v, plane.cast());
        _mm512_mask_storeu_ps(dst.add(j), tail, got);
        j += 16;
    }
}

/// # Safety
/// As [`gather_f32`], eight at a time; AVX-512VL also.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl")]
unsafe fn gather_f64(dst: *mut f64, plane: *const f64, idx: &[i32], len: usize) {
    use std::arch::x86_64::*;
    let zero = _mm512_setzero_pd();
    let mut j = 0;
    while j < len {
        let v = _mm256_loadu_si256(idx.as_ptr().add(j).cast());
        let valid = _mm256_cmpge_epi32_mask(v, _mm256_setzero_si256());
        let tail: __mmask8 = if len - j >= 8 {
            0xff
        } else {
            ((1u32 << (len - j)) - 1) as __mmask8
        };
        let got = _mm512_mask_i32gather_pd::<8>(zero, valid & tail, v, plane.cast());
        _mm512_mask_storeu_pd(dst.add(j), tail, got);
        j += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::super::walk::tests::sample_walks;
    use super::*;

    /// Every table's gather against the definition (`AxisWalk::source`), from walked
    /// coordinates inside rows and over lengths that end inside a vector, in both precisions,
    /// with strides, padding on both sides, crops and dilated inputs.
    #[test]
    fn gathers_match_the_definition() {
        if !available::<f32>() {
            println!("skipped: this CPU has no AVX-512F/VL, host gathers by runs");
            return;
        }
        let input = [5usize, 6];
        let plane: Vec<f64> = (0..30).map(|v| v as f64 + 1.0).collect();
        let plane32: Vec<f32> = plane.iter().map(|&v| v as f32).collect();
        for (axes, steps, padding, dilation) in sample_walks(input) {
            let fixed_sizes = [3, 4];
            let tables = Tables::new::<f64>(&axes, &fixed_sizes).expect("small tables");
            let tables32 = Tables::new::<f32>(&axes, &fixed_sizes).expect("small tables");
            let total = 4 * 5;
            for fixed in 0..12 {
                let f = [fixed / 4, fixed % 4];
                let want: Vec<f64> = (0..total)
                    .map(|p| {
                        let (y, x) = (p / 5, p % 5);
                        match (axes[0].source(f[0], y), axes[1].source(f[1], x)) {
                            (Some(i), Some(j)) => plane[i * input[1] + j],
                            _ => 0.0,
                        }
                    })
                    .collect();
                for (from, to) in [(0, total), (3, 17), (7, 8), (5, 5), (1, total)] {
                    let mut got = vec![f64::NAN; to - from];
                    tables.fill(&mut got, &plane, fixed, from);
                    assert_eq!(
                        got,
                        want[from..to],
                        "{steps:?} {padding:?} {dilation} {f:?}"
                    );
                    let mut got32 = vec![f32::NAN; to - from];
                    tables32.fill(&mut got32, &plane32, fixed, from);
                    let want32: Vec<f32> = want[from..to].iter().map(|&v| v as f32).collect();
                    assert_eq!(got32, want32);
                }
            }
        }
        // Other element types, and planes too large for 32-bit offsets, keep the walk.
        assert!(Tables::new::<i32>(&axes_of(4), &[3]).is_none());
        assert!(Tables::new::<f32>(&axes_of(1 << 31), &[3]).is_none());
    }

    fn axes_of(input: usize) -> Vec<AxisWalk> {
        vec![AxisWalk {
            walked: 4,
            walk_step: 1,
            fixed_step: 1,
            padding: 0,
            dilation: 1,
            input,
            in_stride: 1,
        }]
    }
}
