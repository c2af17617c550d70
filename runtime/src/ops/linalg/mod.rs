//! `Nx.LinAlg`: factorisations (`factorizations.rs`: cholesky, qr, lu, eigh, svd, each one
//! `Op::LinAlg` of every backend), the solvers (`solve.rs`: triangular_solve and solve as
//! ops; invert, determinant, least_squares, pinv, matrix_rank composed), and norms and powers
//! composed of the op set (`norms.rs`: norm, adjoint, matrix_power); `matrices.rs` what they
//! share. Leading axes
//! are a batch of matrices, as Nx batches them; integers become f32 (`Nx.Type.to_floating`),
//! and names are dropped, as Nx drops them.

mod factorizations;
mod matrices;
mod norms;
mod solve;

pub use norms::Norm;
pub use solve::TriangularSolve;
