//! The order `sort`, `argsort` and `top_k` put entries in, as Nx documents it: numbers by
//! value, NaN after every number (first when descending), and entries that compare equal keep
//! their order in the positions `argsort` returns. `kernels.cu` restates it (`sort_before`).

use std::cmp::Ordering;

use crate::element::Element;

/// `a` against `b` in ascending order: NaN is greater than every number and equal to NaN.
#[inline(always)]
pub fn ascending<T: Element>(a: T, b: T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (false, true) => Ordering::Less,
        (true, false) => Ordering::Greater,
        (true, true) => Ordering::Equal,
    }
}

/// `a` against `b` in the sort's direction (descending is ascending reversed, so NaN first).
#[inline(always)]
pub fn in_direction<T: Element>(a: T, b: T, descending: bool) -> Ordering {
    if descending {
        ascending(b, a)
    } else {
        ascending(a, b)
    }
}

/// A line's positions ordered by their entries in the direction, ties by position: the
/// stable order `argsort` returns. `entry(k)` reads position `k` of the line.
pub fn stable_order<T: Element>(
    len: usize,
    descending: bool,
    entry: impl Fn(usize) -> T,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    // `sort_by` is stable: equal entries stay in position order.
    order.sort_by(|&p, &q| in_direction(entry(p), entry(q), descending));
    order
}
