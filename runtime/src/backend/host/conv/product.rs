//! The one matrix product the convolution paths make, on the calling thread (the tasks are
//! already spread over the cores).

use crate::element::Element;

/// `dst = lhs · rhs` on this thread, for `(m, n, k)`: `dst` m x n at a row stride, `lhs` m x k
/// at a row stride, `rhs` k x n at the column and row strides given. Every entry of `dst` is
/// written and none read (zeros where `k` is 0), so it may start uninitialised.
///
/// # Safety
/// Each pointer must hold its matrix at its strides, and `dst` be written by no one else.
pub(super) unsafe fn product<T: Element>(
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (*mut T, usize),
    (lhs, lhs_rs): (*const T, usize),
    (rhs, rhs_cs, rhs_rs): (*const T, isize, isize),
) {
    // SAFETY: as the caller promises.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            false,
            lhs,
            1,
            lhs_rs as isize,
            rhs,
            rhs_cs,
            rhs_rs,
            T::ZERO,
            T::ONE,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}
