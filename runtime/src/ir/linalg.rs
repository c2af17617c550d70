//! Matrix factorisations and triangular solves (`Nx.LinAlg`'s blocks) as data, and the
//! conventions that make their results unique where the mathematics leaves a choice (signs of
//! Householder vectors, eigenvectors and singular vectors, the order of eigenvalues), so every
//! backend, whatever library it calls, returns what the reference returns.
//!
//! A factorisation has several results (`q` and `r`, `p`, `l` and `u`, ...); the op returns
//! them in one buffer, matrix by matrix, each matrix's parts one after another
//! ([`LinAlg::parts`]), and the frontend cuts them apart. Matrix-major keeps a batch of them
//! one contiguous run per matrix, so `vmap` folds its batch into the op's.

use crate::element::Element;

/// Which factorisation of a matrix `[m, n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Factorization {
    /// `a = l·lᵀ` of a symmetric positive-definite matrix (its lower triangle is read); a
    /// matrix that is not positive definite gives NaN everywhere. Parts: `l [n, n]`.
    Cholesky,
    /// `a = q·r` by Householder reflections; `r`'s diagonal is non-negative where a reflection
    /// was applied (Nx's choice). Parts: `q [m, k]`, `r [k, n]` (`k = min(m, n)`), or with
    /// `complete` `q [m, m]`, `r [m, n]`.
    Qr {
        /// `q` square.
        complete: bool,
    },
    /// `a = p·l·u` by partial pivoting (the first largest entry of a column is its pivot).
    /// Parts: `p [n, n]`, `l [n, n]`, `u [n, n]`, and the sign of `p`'s determinant `[1, 1]`.
    Lu,
    /// `a = v·diag(w)·vᵀ` of a symmetric matrix (its lower triangle is read); eigenvalues by
    /// magnitude, largest first (Nx's order); each eigenvector's largest entry positive.
    /// Parts: `w [1, n]`, `v [n, n]` (eigenvectors as columns).
    Eigh,
    /// `a = u·diag(s)·vt`, `s` largest first; each row of `vt` has its largest entry positive.
    /// Parts: `u [m, m]`, `s [1, k]`, `vt [n, n]`, or without `full` `u [m, k]`, `vt [k, n]`.
    Svd {
        /// `u` and `vt` square.
        full: bool,
    },
}

/// One linear-algebra op over a batch of matrices, all row-major and contiguous.
#[derive(Clone, Debug, PartialEq)]
pub enum LinAlg {
    /// `batch` matrices `[m, n]` factorised. Input: a `[batch, m, n]`.
    Factor {
        /// Which factorisation.
        kind: Factorization,
        /// How many matrices.
        batch: usize,
        /// Rows.
        m: usize,
        /// Columns.
        n: usize,
    },
    /// `op(a)·x = b` (left side) or `x·op(a) = b`, with `a` triangular and `op` a transpose
    /// or not. A zero on `a`'s diagonal is an error (Nx's "can't solve for singular matrix").
    /// Inputs: a `[batch, n, n]` (only its `lower` or upper triangle is read), b
    /// `[batch, rows, cols]`.
    TriangularSolve {
        /// How many systems.
        batch: usize,
        /// `a`'s size.
        n: usize,
        /// `b`'s (and the result's) rows: `n` on the left side.
        rows: usize,
        /// `b`'s columns: `n` on the right side.
        cols: usize,
        /// Solve `op(a)·x = b` rather than `x·op(a) = b`.
        left_side: bool,
        /// `a` is lower triangular.
        lower: bool,
        /// `op(a)` is `aᵀ`.
        transpose: bool,
    },
    /// `op(a)·x = b` for general square `a` by LU with partial pivoting (LAPACK's `?gesv`),
    /// `op` a transpose or not. A singular `a` (a zero pivot) is an error when `strict`, NaN
    /// for that system otherwise. Inputs: a `[batch, n, n]`, b `[batch, n, cols]`.
    Solve {
        /// How many systems.
        batch: usize,
        /// `a`'s size.
        n: usize,
        /// `b`'s columns.
        cols: usize,
        /// `op(a)` is `aᵀ`.
        transpose: bool,
        /// A singular matrix is an error rather than NaN.
        strict: bool,
    },
}

impl LinAlg {
    /// The op's name in error messages.
    pub fn name(&self) -> &'static str {
        match self {
            LinAlg::Factor { kind, .. } => match kind {
                Factorization::Cholesky => "cholesky",
                Factorization::Qr { .. } => "qr",
                Factorization::Lu => "lu",
                Factorization::Eigh => "eigh",
                Factorization::Svd { .. } => "svd",
            },
            LinAlg::TriangularSolve { .. } => "triangular_solve",
            LinAlg::Solve { .. } => "solve",
        }
    }

    /// How many inputs the op takes.
    pub fn arity(&self) -> usize {
        match self {
            LinAlg::Factor { .. } => 1,
            LinAlg::TriangularSolve { .. } | LinAlg::Solve { .. } => 2,
        }
    }

    /// How many matrices (or systems) the op handles.
    pub fn batch(&self) -> usize {
        match self {
            LinAlg::Factor { batch, .. }
            | LinAlg::TriangularSolve { batch, .. }
            | LinAlg::Solve { batch, .. } => *batch,
        }
    }

    /// The same op over `batch` matrices.
    pub fn with_batch(&self, batch: usize) -> LinAlg {
        let mut op = self.clone();
        match &mut op {
            LinAlg::Factor { batch: b, .. }
            | LinAlg::TriangularSolve { batch: b, .. }
            | LinAlg::Solve { batch: b, .. } => *b = batch,
        }
        op
    }

    /// The shape `[rows, cols]` of each of one matrix's results, in the order the buffer
    /// holds them.
    pub fn parts(&self) -> Vec<[usize; 2]> {
        match *self {
            LinAlg::Factor { kind, m, n, .. } => {
                let k = m.min(n);
                match kind {
                    Factorization::Cholesky => vec![[n, n]],
                    Factorization::Qr { complete: false } => vec![[m, k], [k, n]],
                    Factorization::Qr { complete: true } => vec![[m, m], [m, n]],
                    Factorization::Lu => vec![[n, n], [n, n], [n, n], [1, 1]],
                    Factorization::Eigh => vec![[1, n], [n, n]],
                    Factorization::Svd { full: true } => vec![[m, m], [1, k], [n, n]],
                    Factorization::Svd { full: false } => vec![[m, k], [1, k], [k, n]],
                }
            }
            LinAlg::TriangularSolve { rows, cols, .. } => vec![[rows, cols]],
            LinAlg::Solve { n, cols, .. } => vec![[n, cols]],
        }
    }

    /// The elements of one matrix's results together.
    pub fn per_matrix(&self) -> usize {
        self.parts().iter().fold(0usize, |acc, [r, c]| {
            acc.saturating_add(r.saturating_mul(*c))
        })
    }

    /// The elements of the whole result.
    pub fn out_len(&self) -> usize {
        self.batch().saturating_mul(self.per_matrix())
    }
}

fn negate<T: Element>(x: T) -> T {
    T::from_f64(-x.to_f64())
}

/// Whether the entry of largest magnitude among `values` (the first of equals) is negative:
/// then the vector changes sign.
pub fn largest_is_negative<T: Element>(values: impl Iterator<Item = T>) -> bool {
    let mut best = (0.0f64, false);
    for v in values {
        let v = v.to_f64();
        if v.abs() > best.0 {
            best = (v.abs(), v < 0.0);
        }
    }
    best.1
}

/// Entries of `q` and `r` this close to 0 are 0 (Nx's `eps` for QR).
pub const QR_EPS: f64 = 1e-10;

/// Nx's QR conventions: where reflection `j` was applied (`reflected[j]`) and left `r[j][j]`
/// negative (or, complex, off the positive real axis), row `j` of `r` is multiplied by the
/// unit that makes it positive and column `j` of `q` by that unit's conjugate, so `q·r` is
/// unchanged; then entries within [`QR_EPS`] of 0 (in magnitude) become 0. `q` is `[m, qc]`,
/// `r` `[rr, n]`.
pub fn qr_conventions<T: Element>(
    q: &mut [T],
    r: &mut [T],
    [m, qc]: [usize; 2],
    n: usize,
    reflected: &[bool],
) {
    qr_signs(q, r, [m, qc], n, reflected);
    for x in q.iter_mut().chain(r.iter_mut()) {
        if magnitude(*x) <= QR_EPS {
            *x = T::ZERO;
        }
    }
}

fn qr_signs<T: Element>(
    q: &mut [T],
    r: &mut [T],
    [m, qc]: [usize; 2],
    n: usize,
    reflected: &[bool],
) {
    for (j, _) in reflected.iter().enumerate().filter(|(_, &done)| done) {
        if j >= qc || j >= n {
            continue;
        }
        let Some(d) = unit_to_positive(r[j * n + j].to_parts()) else {
            continue;
        };
        let size = magnitude(r[j * n + j]);
        for x in &mut r[j * n..(j + 1) * n] {
            *x = times(*x, d);
        }
        // Exactly real: the product leaves a rounding's worth of imaginary part.
        if !size.is_nan() {
            r[j * n + j] = T::from_parts(size, 0.0);
        }
        for i in 0..m {
            q[i * qc + j] = times(q[i * qc + j], (d.0, -d.1));
        }
    }
}

/// The unit `d` that turns `z` real and non-negative (`d·z = |z|`), or `None` where `z`
/// already is: -1 for a negative (or NaN) real, `conj(z)/|z|` for a complex `z`.
fn unit_to_positive((re, im): (f64, f64)) -> Option<(f64, f64)> {
    if im == 0.0 {
        return (re < 0.0 || re.is_nan()).then_some((-1.0, 0.0));
    }
    let size = re.hypot(im);
    (size.is_finite() && size > 0.0).then(|| (re / size, -im / size))
}

/// `d·x`; exact for a real `x` and `d = ±1`.
fn times<T: Element>(x: T, (dr, di): (f64, f64)) -> T {
    let (re, im) = x.to_parts();
    if di == 0.0 {
        return T::from_parts(re * dr, im * dr);
    }
    T::from_parts(re * dr - im * di, re * di + im * dr)
}

/// `|x|` of a real or complex entry.
fn magnitude<T: Element>(x: T) -> f64 {
    let (re, im) = x.to_parts();
    re.hypot(im)
}

/// The unit that turns the entry of largest magnitude among `values` (the first of equals)
/// real and positive, or `None` where it already is: an eigenvector's (or singular vector's)
/// sign for real vectors, its phase for complex ones.
pub fn largest_to_positive<T: Element>(values: impl Iterator<Item = T>) -> Option<(f64, f64)> {
    let mut best = (0.0f64, (0.0, 0.0));
    for v in values {
        let size = magnitude(v);
        if size > best.0 {
            best = (size, v.to_parts());
        }
    }
    if best.0 == 0.0 {
        return None;
    }
    unit_to_positive(best.1)
}

/// Where each eigenvalue of Nx's order comes from: by magnitude, largest first (ties: the
/// larger value first, then the earlier).
pub fn eigen_order<T: Element>(w: &[T]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..w.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (w[a].to_f64(), w[b].to_f64());
        y.abs()
            .total_cmp(&x.abs())
            .then(y.total_cmp(&x))
            .then(a.cmp(&b))
    });
    order
}

/// Nx's eigen order: eigenvalues by magnitude, largest first (ties: the larger value first,
/// then the earlier), eigenvectors (columns of `v [n, n]`) with them, each turned so that its
/// largest entry is positive (real vectors change sign, complex ones phase; the eigenvalues of
/// a Hermitian matrix are real, so a complex `w` is ordered by its real parts).
pub fn eigh_order<T: Element>(w: &mut [T], v: &mut [T], n: usize) {
    let order = eigen_order(w);
    let (w0, v0) = (w.to_vec(), v.to_vec());
    for (to, &from) in order.iter().enumerate() {
        w[to] = w0[from];
        let turn = largest_to_positive((0..n).map(|i| v0[i * n + from]));
        for i in 0..n {
            let x = v0[i * n + from];
            v[i * n + to] = turn.map_or(x, |d| times(x, d));
        }
    }
}

/// The SVD's signs: each row of `vt [vr, n]` turned so that its largest entry is positive,
/// the matching column of `u [m, uc]` with it (columns of `u` past `vt`'s rows on their own,
/// by their own largest entry). Singular values must already be in order.
pub fn svd_signs<T: Element>(u: &mut [T], vt: &mut [T], [m, uc]: [usize; 2], [vr, n]: [usize; 2]) {
    for j in 0..uc.max(vr) {
        let flip = if j < vr {
            largest_is_negative(vt[j * n..(j + 1) * n].iter().copied())
        } else {
            largest_is_negative((0..m).map(|i| u[i * uc + j]))
        };
        if !flip {
            continue;
        }
        if j < vr {
            for x in &mut vt[j * n..(j + 1) * n] {
                *x = negate(*x);
            }
        }
        if j < uc {
            for i in 0..m {
                u[i * uc + j] = negate(u[i * uc + j]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_add_up_per_matrix() {
        let op = LinAlg::Factor {
            kind: Factorization::Svd { full: false },
            batch: 3,
            m: 4,
            n: 2,
        };
        assert_eq!(op.parts(), vec![[4, 2], [1, 2], [2, 2]]);
        assert_eq!(op.out_len(), 3 * (8 + 2 + 4));
    }

    #[test]
    fn eigen_order_is_by_magnitude_with_positive_vectors() {
        let mut w = [-1.0f64, 5.0, 2.0];
        let mut v = [1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0];
        eigh_order(&mut w, &mut v, 3);
        assert_eq!(w, [5.0, 2.0, -1.0]);
        assert_eq!(v, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    }
}
