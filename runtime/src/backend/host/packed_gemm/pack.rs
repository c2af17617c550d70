//! Packing: copying a block of A or B into the order the microkernel reads it, so that every
//! load in the inner loop is sequential and every partial panel is padded with zeros.

use super::kernel::{Kernel, MR};

/// Rows `[0, mc)` x columns `[0, kc)` of row-major `a` (row stride `lda`) into panels of MR
/// rows, each stored column by column: `dst[panel*kc*MR + p*MR + r]`.
///
/// # Safety
/// `a` addresses `mc` rows of `kc` values `lda` apart; `dst` holds `mc.div_ceil(MR)*MR*kc`.
pub unsafe fn pack_a<T: Kernel>(a: *const T, lda: usize, mc: usize, kc: usize, dst: *mut T) {
    let mut d = dst;
    for i in (0..mc).step_by(MR) {
        let rows = MR.min(mc - i);
        let src: [*const T; MR] = std::array::from_fn(|r| a.add((i + r.min(rows - 1)) * lda));
        if rows == MR {
            T::pack_a_panel(&src, kc, d);
            d = d.add(kc * MR);
        } else {
            for p in 0..kc {
                for (r, s) in src.iter().enumerate() {
                    *d.add(r) = if r < rows { *s.add(p) } else { T::ZERO };
                }
                d = d.add(MR);
            }
        }
    }
}

/// Panels `[j0, j1)` of a `kc x nc` block of row-major `b` (row stride `ldb`), `cols` columns
/// in all: row-chunk by row-chunk, so every row of `b` is read as one sequential run.
///
/// # Safety
/// `b` addresses `kc` rows of `nc` values `ldb` apart; `dst` holds `nc.div_ceil(NR)*NR*kc`.
#[allow(clippy::too_many_arguments)]
pub unsafe fn pack_b_panels<T: Kernel>(
    b: *const T,
    ldb: usize,
    nc: usize,
    kc: usize,
    j0: usize,
    j1: usize,
    dst: *mut T,
) {
    const ROWS: usize = 8;
    let nr = T::NR;
    for p0 in (0..kc).step_by(ROWS) {
        let rows = ROWS.min(kc - p0);
        for jp in j0..j1 {
            let cols = nr.min(nc - jp * nr);
            let d = dst.add(jp * nr * kc + p0 * nr);
            let s = b.add(p0 * ldb + jp * nr);
            for p in 0..rows {
                let (s, d) = (s.add(p * ldb), d.add(p * nr));
                if cols == nr {
                    std::ptr::copy_nonoverlapping(s, d, nr);
                } else {
                    std::ptr::copy_nonoverlapping(s, d, cols);
                    for j in cols..nr {
                        *d.add(j) = T::ZERO;
                    }
                }
            }
        }
    }
}
