//! How a shape prints in messages and in the display: apart from the shape arithmetic, so that
//! the error type can name shapes without depending on the checks that return it.

/// Formats a shape as Nx does: `[2][3]`; a scalar has no brackets.
pub fn fmt_shape(shape: &[usize]) -> String {
    shape.iter().map(|d| format!("[{d}]")).collect()
}
