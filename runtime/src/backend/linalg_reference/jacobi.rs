//! What the real and the complex Jacobi eigensolvers share.

/// The smaller root `t` of `t² + 2θt - 1 = 0`: the tangent of a Jacobi rotation.
pub(super) fn rotation_tangent(theta: f64) -> f64 {
    let sign = if theta >= 0.0 { 1.0 } else { -1.0 };
    sign / (theta.abs() + (theta * theta + 1.0).sqrt())
}
