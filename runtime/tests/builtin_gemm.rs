//! Host's products without a system BLAS: this test binary turns the BLAS off before host's
//! first product (`TENSORBOOK_BLAS=none`, read once per process), so the `gemm` crate path is
//! checked against `binary` even on machines where the conformance suite goes through
//! OpenBLAS. The conformance suite covers the BLAS path wherever one loads.

mod common;

use common::{conform, random};
use tensorbook::contract::env;
use tensorbook::DType;

#[test]
fn products_without_a_system_blas_match_binary() {
    env::set(env::BLAS, "none");
    for dtype in [DType::F32, DType::F64] {
        let a = random(21, dtype, &[130, 150]);
        let b = random(22, dtype, &[150, 141]);
        conform(
            &format!("dot {dtype:?} [130,150].[150,141]"),
            &[a, b],
            |t| t[0].dot(&t[1]),
        );
    }
    assert_eq!(
        tensorbook::testing::blas_library(),
        None,
        "TENSORBOOK_BLAS=none leaves host on the gemm crate"
    );
}
