//! Doolittle's LU with partial pivoting, real and complex alike.

use crate::element::Element;

/// `a = p·l·u` for `a [n, n]`: the first entry of a column largest by `size` is its pivot
/// (`|x|` for real matrices, LAPACK's `|re| + |im|` for complex ones); a zero column is
/// skipped, leaving a zero pivot. Parts: `p`, `l`, `u` and the permutation's sign.
pub(super) fn lu<T: Element>(a: &[T], n: usize, out: &mut [T], size: fn(T) -> f64) {
    let nn = n * n;
    let mut u = a.to_vec();
    let mut l = vec![T::ZERO; nn];
    let mut perm: Vec<usize> = (0..n).collect();
    let mut sign = 1.0;
    for j in 0..n {
        let mut p = j;
        for i in j + 1..n {
            if size(u[i * n + j]) > size(u[p * n + j]) {
                p = i;
            }
        }
        if p != j {
            for c in 0..n {
                u.swap(p * n + c, j * n + c);
            }
            for c in 0..j {
                l.swap(p * n + c, j * n + c);
            }
            perm.swap(p, j);
            sign = -sign;
        }
        let pivot = u[j * n + j];
        if size(pivot) != 0.0 {
            for i in j + 1..n {
                let f = u[i * n + j].div(pivot);
                l[i * n + j] = f;
                for c in j..n {
                    u[i * n + c] = u[i * n + c].sub(f.mul(u[j * n + c]));
                }
                u[i * n + j] = T::ZERO;
            }
        }
        l[j * n + j] = T::ONE;
    }
    let (p, rest) = out.split_at_mut(nn);
    let (lo, rest) = rest.split_at_mut(nn);
    let (up, s) = rest.split_at_mut(nn);
    p.fill(T::ZERO);
    // Row i of l·u is row perm[i] of a, so a = p·l·u with p[perm[i]][i] = 1.
    for (i, &from) in perm.iter().enumerate() {
        p[from * n + i] = T::ONE;
    }
    lo.copy_from_slice(&l);
    up.copy_from_slice(&u);
    s[0] = T::from_f64(sign);
}
