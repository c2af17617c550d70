//! `Nx.LinAlg` (factorisations, solvers, norms, powers): Nx's documented examples on every
//! device, the identities each factorisation must satisfy on random, ill-conditioned,
//! singular, non-square, empty and batched inputs, every device against `binary`, the errors
//! Nx raises, `jit` and `vmap`, and gradients against central differences.

// Nx's documented results are kept digit for digit, √2 among them.
#![allow(clippy::approx_constant)]

mod common;

use common::{conform, enable_sim};
use tensorbook::{on, DType, Device, Norm, Tensor, TriangularSolve};

fn devices() -> Vec<Device> {
    enable_sim();
    tensorbook::devices()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_f64_vec().unwrap()
}

/// Asserts `t` holds `expected` within `tol` (absolute, and relative past 1), with its shape.
#[track_caller]
fn near(what: &str, t: &Tensor, shape: &[usize], expected: &[f64], tol: f64) {
    assert_eq!(t.shape(), shape, "{what}: shape");
    let got = values(t);
    assert_eq!(got.len(), expected.len(), "{what}: length");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        let ok = (g.is_nan() && e.is_nan()) || (g - e).abs() <= tol * e.abs().max(1.0);
        assert!(
            ok,
            "{what}: element {i} is {g}, expected {e} (all: {got:?})"
        );
    }
}

fn f32s(d: Device, v: &[f64], shape: &[usize]) -> Tensor {
    on(d)
        .from_vec(v.iter().map(|x| *x as f32).collect(), shape)
        .unwrap()
}

fn ints(d: Device, v: &[i32], shape: &[usize]) -> Tensor {
    on(d).from_vec(v.to_vec(), shape).unwrap()
}

const TOL: f64 = 2e-6;

#[test]
fn cholesky_follows_nx_examples() {
    for d in devices() {
        let l = f32s(d, &[20.0, 17.6, 17.6, 16.0], &[2, 2])
            .cholesky()
            .unwrap();
        assert_eq!(l.dtype(), DType::F32);
        assert_eq!(l.device(), d);
        near(
            "cholesky",
            &l,
            &[2, 2],
            &[4.472136, 0.0, 3.9354796, 0.71554184],
            TOL,
        );
        let batch = f32s(d, &[2.0, 3.0, 3.0, 5.0, 1.0, 0.0, 0.0, 1.0], &[2, 2, 2]);
        near(
            "batched cholesky",
            &batch.cholesky().unwrap(),
            &[2, 2, 2],
            &[1.4142135, 0.0, 2.1213205, 0.7071065, 1.0, 0.0, 0.0, 1.0],
            TOL,
        );
        let t = f32s(
            d,
            &[
                6., 3., 4., 8., 3., 6., 5., 1., 4., 5., 10., 7., 8., 1., 7., 25.,
            ],
            &[4, 4],
        );
        near(
            "cholesky 4x4",
            &t.cholesky().unwrap(),
            &[4, 4],
            &[
                2.4494898, 0.0, 0.0, 0.0, 1.2247448, 2.1213202, 0.0, 0.0, 1.6329931, 1.4142138,
                2.309401, 0.0, 3.2659862, -1.4142134, 1.5877135, 3.132491,
            ],
            TOL,
        );
        let err = ints(d, &[1, 2, 3, 4, 5, 6], &[2, 3])
            .cholesky()
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("tensor must be a square matrix or a batch of square matrices"),
            "{err}"
        );
        let not_definite = f32s(d, &[1.0, 2.0, 2.0, 1.0], &[2, 2]).cholesky().unwrap();
        assert!(values(&not_definite).iter().all(|x| x.is_nan()));
    }
}

#[test]
fn triangular_solve_follows_nx_examples() {
    for d in devices() {
        let a = ints(
            d,
            &[3, 0, 0, 0, 2, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1],
            &[4, 4],
        );
        let x = a
            .triangular_solve(&ints(d, &[4, 2, 4, 2], &[4]), TriangularSolve::new())
            .unwrap();
        assert_eq!(x.dtype(), DType::F32);
        near(
            "ts",
            &x,
            &[4],
            &[1.3333334, -0.6666667, 2.6666667, -1.3333334],
            TOL,
        );
        let a = on(d)
            .from_vec(vec![1.0f64, 0., 0., 1., 1., 0., 1., 1., 1.], &[3, 3])
            .unwrap();
        let x = a
            .triangular_solve(&ints(d, &[1, 2, 1], &[3]), TriangularSolve::new())
            .unwrap();
        assert_eq!(x.dtype(), DType::F64);
        near("ts f64", &x, &[3], &[1.0, 1.0, -1.0], 1e-12);
        let a = ints(d, &[1, 0, 0, 1, 1, 0, 0, 1, 1], &[3, 3]);
        let b = ints(d, &[1, 2, 3, 2, 2, 4, 2, 0, 1], &[3, 3]);
        near(
            "ts matrix",
            &a.triangular_solve(&b, TriangularSolve::new()).unwrap(),
            &[3, 3],
            &[1., 2., 3., 1., 0., 1., 1., 0., 0.],
            TOL,
        );
        let a = ints(
            d,
            &[1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 2, 0, 0, 0, 3],
            &[4, 4],
        );
        near(
            "ts upper",
            &a.triangular_solve(
                &ints(d, &[2, 4, 2, 4], &[4]),
                TriangularSolve::new().lower(false),
            )
            .unwrap(),
            &[4],
            &[-1.3333334, 2.6666667, -0.6666667, 1.3333334],
            TOL,
        );
        let a = ints(d, &[1, 0, 0, 1, 1, 0, 1, 2, 1], &[3, 3]);
        let b = ints(d, &[0, 2, 1, 1, 1, 0, 3, 3, 1], &[3, 3]);
        near(
            "ts right",
            &a.triangular_solve(&b, TriangularSolve::new().left_side(false))
                .unwrap(),
            &[3, 3],
            &[-1., 0., 1., 0., 1., 0., 1., 1., 1.],
            TOL,
        );
        let a64 = on(d)
            .from_vec(vec![1.0f64, 1., 1., 0., 1., 1., 0., 0., 1.], &[3, 3])
            .unwrap();
        near(
            "ts transposed upper",
            &a64.triangular_solve(
                &ints(d, &[1, 2, 1], &[3]),
                TriangularSolve::new().transpose(true).lower(false),
            )
            .unwrap(),
            &[3],
            &[1.0, 1.0, -1.0],
            1e-12,
        );
        let b = ints(d, &[0, 1, 3, 2, 1, 3], &[2, 3]);
        near(
            "ts right, rows",
            &a.triangular_solve(&b, TriangularSolve::new().left_side(false))
                .unwrap(),
            &[2, 3],
            &[2., -5., 3., 4., -5., 3.],
            TOL,
        );
        let b = ints(d, &[0, 2, 3, 0, 0, 0], &[3, 2]);
        near(
            "ts left, columns",
            &a.triangular_solve(&b, TriangularSolve::new()).unwrap(),
            &[3, 2],
            &[0., 2., 3., -2., -6., 2.],
            TOL,
        );
        let a = ints(d, &[1, 0, 2, 3, 4, 0, 5, 6], &[2, 2, 2]);
        let b = ints(d, &[2, -1, 3, 7], &[2, 2]);
        near(
            "ts batched vectors",
            &a.triangular_solve(&b, TriangularSolve::new()).unwrap(),
            &[2, 2],
            &[2.0, -1.6666666, 0.75, 0.5416667],
            TOL,
        );
        let wide = ints(d, &[3, 0, 0, 0, 2, 1, 0, 0], &[2, 4]);
        let err = wide
            .triangular_solve(&ints(d, &[4, 2, 4, 2], &[4]), TriangularSolve::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected a square matrix or a batch of square matrices"),
            "{err}"
        );
        let a = ints(
            d,
            &[3, 0, 0, 0, 2, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
            &[4, 4],
        );
        let err = a
            .triangular_solve(&ints(d, &[4], &[1]), TriangularSolve::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("incompatible dimensions for a and b on triangular solve"),
            "{err}"
        );
        let singular = ints(
            d,
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
            &[4, 4],
        );
        let err = singular
            .triangular_solve(&ints(d, &[4, 2, 4, 2], &[4]), TriangularSolve::new())
            .and_then(|x| x.to_f64_vec().map(|_| x))
            .unwrap_err()
            .to_string();
        assert!(err.contains("can't solve for singular matrix"), "{err}");
    }
}

#[test]
fn solve_invert_and_determinant_follow_nx_examples() {
    for d in devices() {
        let a = ints(
            d,
            &[1, 3, 2, 1, 2, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1],
            &[4, 4],
        );
        near(
            "solve",
            &a.solve(&ints(d, &[-3, 0, 4, -2], &[4])).unwrap(),
            &[4],
            &[1.0, -2.0, 3.0000002, -4.0],
            1e-5,
        );
        let a = ints(d, &[1, 0, 1, 1, 1, 0, 0, 1, 1], &[3, 3]);
        let b = ints(d, &[2, 2, 3, 2, 2, 4, 2, 0, 1], &[3, 3]);
        near(
            "solve matrix",
            &a.solve(&b).unwrap(),
            &[3, 3],
            &[1., 2., 3., 1., 0., 1., 1., 0., 0.],
            1e-5,
        );
        let a = ints(d, &[14, 10, 9, 9, 4, 11, 2, 3], &[2, 2, 2]);
        let b = ints(d, &[2, 4, 3, 2, 1, 5, -3, -1], &[2, 2, 2]);
        near(
            "solve batched",
            &a.solve(&b).unwrap(),
            &[2, 2, 2],
            &[
                -0.3333333, 0.44444442, 0.6666666, -0.2222222, -3.6, -2.6, 1.4, 1.4,
            ],
            1e-5,
        );
        let err = ints(d, &[1, 0, 0, 1], &[2, 2])
            .solve(&ints(d, &[4, 2, 4, 2], &[4]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`b` tensor has incompatible dimensions"),
            "{err}"
        );
        let err = ints(d, &[3, 0, 0, 0, 2, 1, 0, 0, 1, 1, 1, 1], &[3, 4])
            .solve(&ints(d, &[4], &[1]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`a` tensor has incompatible dimensions"),
            "{err}"
        );

        let a = ints(
            d,
            &[1, 2, 1, 1, 0, 1, 0, 1, 0, 0, 1, 1, 0, 0, 0, 1],
            &[4, 4],
        );
        let inv = a.invert().unwrap();
        near(
            "invert",
            &inv,
            &[4, 4],
            &[
                1., -2., -1., 2., 0., 1., 0., -1., 0., 0., 1., -1., 0., 0., 0., 1.,
            ],
            1e-6,
        );
        let eye = [
            1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1.,
        ];
        near("a·a⁻¹", &a.dot(&inv).unwrap(), &[4, 4], &eye, 1e-6);
        let batch = ints(d, &[1, 2, 0, 1, 1, 1, 0, 1], &[2, 2, 2]);
        near(
            "invert batched",
            &batch.invert().unwrap(),
            &[2, 2, 2],
            &[1., -2., 0., 1., 1., -1., 0., 1.],
            1e-6,
        );
        let singular = ints(
            d,
            &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
            &[4, 4],
        );
        assert!(values(&singular.invert().unwrap())
            .iter()
            .all(|x| x.is_nan()));
        let err = ints(d, &[3, 0, 0, 0, 2, 1, 0, 0], &[2, 4])
            .invert()
            .unwrap_err()
            .to_string();
        assert!(err.contains("invert/1 expects a square matrix"), "{err}");

        let det = |v: &[f64], n: usize| f32s(d, v, &[n, n]).determinant().unwrap();
        near(
            "det 2",
            &ints(d, &[1, 2, 3, 4], &[2, 2]).determinant().unwrap(),
            &[],
            &[-2.0],
            0.0,
        );
        near(
            "det 3",
            &det(&[1., 2., 3., 1., -2., 3., 7., 8., 9.], 3),
            &[],
            &[48.0],
            0.0,
        );
        near(
            "det dependent",
            &det(&[1., 0., 3., 0.], 2),
            &[],
            &[0.0],
            0.0,
        );
        near(
            "det dependent 3",
            &det(&[1., 2., 3., -1., -2., -3., 4., 5., 6.], 3),
            &[],
            &[0.0],
            0.0,
        );
        near(
            "det 4",
            &det(
                &[
                    1., 0., 0., 0., 0., 1., 2., 3., 0., 1., -2., 3., 0., 7., 8., 9.,
                ],
                4,
            ),
            &[],
            &[48.0],
            1e-5,
        );
        let five = [
            0., 0., 0., 0., -1., 0., 1., 2., 3., 0., 0., 1., -2., 3., 0., 0., 7., 8., 9., 0., 1.,
            0., 0., 0., 0.,
        ];
        near("det 5", &det(&five, 5), &[], &[48.0], 1e-5);
        let batched = f32s(d, &[2., 0., 0., 3., 1., 2., 3., 4.], &[2, 2, 2]);
        near(
            "det batched",
            &batched.determinant().unwrap(),
            &[2],
            &[6.0, -2.0],
            0.0,
        );
    }
}

#[test]
fn qr_follows_nx_examples() {
    for d in devices() {
        let (q, r) = ints(d, &[-3, 2, 1, 0, 1, 1, 0, 0, -1], &[3, 3])
            .qr()
            .unwrap();
        near(
            "q",
            &q,
            &[3, 3],
            &[1., 0., 0., 0., 1., 0., 0., 0., 1.],
            1e-6,
        );
        near(
            "r",
            &r,
            &[3, 3],
            &[-3., 2., 1., 0., 1., 1., 0., 0., -1.],
            1e-6,
        );
        let t = ints(d, &[3, 2, 1, 0, 1, 1, 0, 0, 1, 0, 0, 1], &[4, 3]);
        let (q, r) = t.qr().unwrap();
        near(
            "tall q",
            &q,
            &[4, 3],
            &[
                1., 0., 0., 0., 1., 0., 0., 0., 0.7071068, 0., 0., 0.70710677,
            ],
            1e-6,
        );
        near(
            "tall r",
            &r,
            &[3, 3],
            &[3., 2., 1., 0., 1., 1., 0., 0., 1.4142135],
            1e-6,
        );
        let t = ints(d, &[3, 2, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0], &[4, 3]);
        let (q, r) = t.qr_complete().unwrap();
        let eye4 = [
            1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1., 0., 0., 0., 0., 1.,
        ];
        near("complete q", &q, &[4, 4], &eye4, 1e-6);
        near(
            "complete r",
            &r,
            &[4, 3],
            &[3., 2., 1., 0., 1., 1., 0., 0., 1., 0., 0., 0.],
            1e-6,
        );
        let batch = ints(
            d,
            &[-3, 2, 1, 0, 1, 1, 0, 0, -1, 3, 2, 1, 0, 1, 1, 0, 0, 1],
            &[2, 3, 3],
        );
        let (qs, rs) = batch.qr().unwrap();
        assert_eq!(qs.shape(), &[2, 3, 3]);
        near(
            "batched r",
            &rs,
            &[2, 3, 3],
            &[
                -3., 2., 1., 0., 1., 1., 0., 0., -1., 3., 2., 1., 0., 1., 1., 0., 0., 1.,
            ],
            1e-6,
        );
        let err = ints(d, &[1, 2, 3, 4, 5], &[5])
            .qr()
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tensor must have at least rank 2, got rank 1"),
            "{err}"
        );
    }
}

#[test]
fn eigh_svd_and_lu_follow_nx_examples() {
    for d in devices() {
        let (w, v) = ints(d, &[1, 0, 0, 2], &[2, 2]).eigh().unwrap();
        near("eigenvalues", &w, &[2], &[2.0, 1.0], 1e-6);
        near("eigenvectors", &v, &[2, 2], &[0., 1., 1., 0.], 1e-6);
        let (w, v) = ints(d, &[2, 5, 5, 6, 1, 0, 0, 4], &[2, 2, 2])
            .eigh()
            .unwrap();
        near(
            "batched eigenvalues",
            &w.round().unwrap(),
            &[2, 2],
            &[9.0, -1.0, 4.0, 1.0],
            1e-5,
        );
        near(
            "batched eigenvectors",
            &v,
            &[2, 2, 2],
            &[
                0.56062883,
                0.8280672,
                0.8280672,
                -0.56062883,
                0.,
                1.,
                1.,
                0.,
            ],
            1e-5,
        );
        let (w, _) = ints(d, &[0, 1, 2, 1, 0, 2, 2, 2, 3], &[3, 3])
            .eigh()
            .unwrap();
        near(
            "eigenvalues 3",
            &w.round().unwrap(),
            &[3],
            &[5.0, -1.0, -1.0],
            1e-5,
        );
        let err = ints(d, &[1, 2, 3, 4, 5, 6], &[2, 3])
            .eigh()
            .unwrap_err()
            .to_string();
        assert!(err.contains("square matrix"), "{err}");

        let (u, s, vt) = ints(d, &[1, 0, 0, 0, 1, 0, 0, 0, -1], &[3, 3])
            .svd()
            .unwrap();
        near(
            "u",
            &u,
            &[3, 3],
            &[1., 0., 0., 0., 1., 0., 0., 0., -1.],
            1e-6,
        );
        near("s", &s, &[3], &[1., 1., 1.], 1e-6);
        near(
            "vt",
            &vt,
            &[3, 3],
            &[1., 0., 0., 0., 1., 0., 0., 0., 1.],
            1e-6,
        );
        let t = ints(d, &[2, 0, 0, 0, 3, 0, 0, 0, -1, 0, 0, 0], &[4, 3]);
        let (u, s, vt) = t.svd().unwrap();
        near(
            "tall u",
            &u,
            &[4, 4],
            &[
                0., 1., 0., 0., 1., 0., 0., 0., 0., 0., -1., 0., 0., 0., 0., 1.,
            ],
            1e-6,
        );
        near("tall s", &s, &[3], &[3., 2., 1.], 1e-6);
        near(
            "tall vt",
            &vt,
            &[3, 3],
            &[0., 1., 0., 1., 0., 0., 0., 0., 1.],
            1e-6,
        );
        let (u, _, _) = t.svd_reduced().unwrap();
        near(
            "reduced u",
            &u,
            &[4, 3],
            &[0., 1., 0., 1., 0., 0., 0., 0., -1., 0., 0., 0.],
            1e-6,
        );

        let t = ints(d, &[1, 2, 3, 4, 5, 6, 7, 8, 9], &[3, 3]);
        let (p, l, u) = t.lu().unwrap();
        assert_eq!(p.dtype(), DType::S32);
        assert_eq!(values(&p), [0., 1., 0., 0., 0., 1., 1., 0., 0.]);
        near(
            "l",
            &l,
            &[3, 3],
            &[1., 0., 0., 0.14285715, 1., 0., 0.5714286, 0.5, 1.],
            1e-6,
        );
        near(
            "u",
            &u,
            &[3, 3],
            &[7., 8., 9., 0., 0.8571428, 1.7142856, 0., 0., 0.],
            1e-6,
        );
        let rebuilt = p.dot(&l).unwrap().dot(&u).unwrap();
        near(
            "p·l·u",
            &rebuilt,
            &[3, 3],
            &[1., 2., 3., 4., 5., 6., 7., 8., 9.],
            1e-6,
        );
        let (p, l, u) = ints(d, &[1, 0, 1, -1, 0, -1, 1, 1, 1], &[3, 3])
            .lu()
            .unwrap();
        assert_eq!(values(&p), [1., 0., 0., 0., 0., 1., 0., 1., 0.]);
        near(
            "l 2",
            &l,
            &[3, 3],
            &[1., 0., 0., 1., 1., 0., -1., 0., 1.],
            1e-6,
        );
        near(
            "u 2",
            &u,
            &[3, 3],
            &[1., 0., 1., 0., 1., 0., 0., 0., 0.],
            1e-6,
        );
        let batch = ints(
            d,
            &[9, 8, 7, 6, 5, 4, 3, 2, 1, -1, 0, -1, 1, 0, 1, 1, 1, 1],
            &[2, 3, 3],
        );
        let (p, l, u) = batch.lu().unwrap();
        assert_eq!(
            values(&p),
            [1., 0., 0., 0., 0., 1., 0., 1., 0., 1., 0., 0., 0., 0., 1., 0., 1., 0.]
        );
        near(
            "batched l",
            &l,
            &[2, 3, 3],
            &[
                1., 0., 0., 0.33333334, 1., 0., 0.6666667, 0.5, 1., 1., 0., 0., -1., 1., 0., -1.,
                0., 1.,
            ],
            1e-5,
        );
        near(
            "batched u",
            &u,
            &[2, 3, 3],
            &[
                9.,
                8.,
                7.,
                0.,
                -0.66666675,
                -1.3333335,
                0.,
                0.,
                0.,
                -1.,
                0.,
                -1.,
                0.,
                1.,
                0.,
                0.,
                0.,
                0.,
            ],
            1e-5,
        );
    }
}

#[test]
fn norms_powers_and_pseudo_inverses_follow_nx_examples() {
    for d in devices() {
        let v = ints(d, &[3, 4], &[2]);
        near("2-norm", &v.norm().unwrap(), &[], &[5.0], 1e-6);
        near("1-norm", &v.norm_of(Norm::P(1)).unwrap(), &[], &[7.0], 1e-6);
        let w = ints(d, &[3, -4], &[2]);
        near("inf", &w.norm_of(Norm::Inf).unwrap(), &[], &[4.0], 0.0);
        near(
            "neg inf",
            &w.norm_of(Norm::NegInf).unwrap(),
            &[],
            &[3.0],
            0.0,
        );
        near(
            "0-norm",
            &ints(d, &[3, -4, 0, 0], &[4]).norm_of(Norm::P(0)).unwrap(),
            &[],
            &[2.0],
            0.0,
        );
        let m = ints(d, &[3, -1, 2, -4], &[2, 2]);
        near("-1", &m.norm_of(Norm::P(-1)).unwrap(), &[], &[5.0], 0.0);
        let m = ints(d, &[3, -2, 2, -4], &[2, 2]);
        near("1", &m.norm_of(Norm::P(1)).unwrap(), &[], &[6.0], 0.0);
        near(
            "neg inf m",
            &m.norm_of(Norm::NegInf).unwrap(),
            &[],
            &[5.0],
            0.0,
        );
        near("inf m", &m.norm_of(Norm::Inf).unwrap(), &[], &[6.0], 0.0);
        let m = ints(d, &[3, 0, 0, -4], &[2, 2]);
        near(
            "frobenius",
            &m.norm_of(Norm::Frobenius).unwrap(),
            &[],
            &[5.0],
            1e-6,
        );
        near("default m", &m.norm().unwrap(), &[], &[5.0], 1e-6);
        let diag = ints(d, &[1, 0, 0, 0, -4, 0, 0, 0, 9], &[3, 3]);
        near(
            "nuclear",
            &diag.norm_of(Norm::Nuclear).unwrap(),
            &[],
            &[14.0],
            1e-5,
        );
        near("-2", &diag.norm_of(Norm::P(-2)).unwrap(), &[], &[1.0], 1e-5);
        let rows = ints(d, &[3, 4, 0, -4], &[2, 2]);
        near(
            "axes",
            &rows.norm_axes(Norm::Default, [1], false).unwrap(),
            &[2],
            &[5.0, 4.0],
            1e-6,
        );
        near(
            "zeros",
            &ints(d, &[0, 0, 0, 0], &[2, 2]).norm().unwrap(),
            &[],
            &[0.0],
            0.0,
        );
        let err = v.norm_of(Norm::Frobenius).unwrap_err().to_string();
        assert!(
            err.contains("expected a 2-D tensor for ord: :frobenius, got a 1-D tensor"),
            "{err}"
        );

        let m = ints(d, &[1, 2, 3, 4], &[2, 2]);
        let p0 = m.matrix_power(0).unwrap();
        assert_eq!(p0.dtype(), DType::S32);
        assert_eq!(p0.to_vec::<i32>().unwrap(), [1, 0, 0, 1]);
        assert_eq!(
            m.matrix_power(6).unwrap().to_vec::<i32>().unwrap(),
            [5743, 8370, 12555, 18298]
        );
        near(
            "power -1",
            &m.matrix_power(-1).unwrap(),
            &[2, 2],
            &[-2.0, 1.0, 1.5, -0.5],
            1e-5,
        );
        let iota = ints(d, &[0, 1, 2, 3, 4, 5, 6, 7], &[2, 2, 2]);
        assert_eq!(
            iota.matrix_power(3).unwrap().to_vec::<i32>().unwrap(),
            [6, 11, 22, 39, 514, 615, 738, 883]
        );
        near(
            "power -3",
            &iota.matrix_power(-3).unwrap(),
            &[2, 2, 2],
            &[
                -4.875, 1.375, 2.75, -0.75, -110.37471, 76.87479, 92.24976, -64.24983,
            ],
            1e-4,
        );
        let eye = on(d).eye(DType::S32, 3).unwrap();
        assert_eq!(values(&eye.matrix_power(65535).unwrap()), values(&eye));

        near(
            "pinv scalar",
            &on(d).scalar(2i32).unwrap().pinv().unwrap(),
            &[],
            &[0.5],
            0.0,
        );
        near(
            "pinv 0",
            &on(d).scalar(0i32).unwrap().pinv().unwrap(),
            &[],
            &[0.0],
            0.0,
        );
        near(
            "pinv vector",
            &ints(d, &[0, 1, 2], &[3]).pinv().unwrap(),
            &[3],
            &[0.0, 0.2, 0.4],
            1e-6,
        );
        near(
            "pinv zeros",
            &ints(d, &[0, 0, 0], &[3]).pinv().unwrap(),
            &[3],
            &[0.0; 3],
            0.0,
        );
        near(
            "pinv",
            &ints(d, &[1, 1, 3, 4], &[2, 2]).pinv().unwrap(),
            &[2, 2],
            &[4.0, -1.0, -3.0, 1.0],
            1e-4,
        );
        near(
            "pinv tall",
            &f32s(d, &[0.5, 0., 0., 1., 0.5, 0.], &[3, 2])
                .pinv()
                .unwrap(),
            &[2, 3],
            &[1., 0., 1., 0., 1., 0.],
            1e-5,
        );
        near(
            "least squares",
            &ints(d, &[1, 2, 2, 3], &[2, 2])
                .least_squares(&ints(d, &[1, 2], &[2]))
                .unwrap(),
            &[2],
            &[1.0, 0.0],
            1e-5,
        );
        near(
            "least squares line",
            &ints(d, &[0, 1, 1, 1, 2, 1, 3, 1], &[4, 2])
                .least_squares(&f32s(d, &[-1., 0.2, 0.9, 2.1], &[4]))
                .unwrap(),
            &[2],
            &[1.0, -0.95],
            1e-5,
        );
        near(
            "least squares wide",
            &ints(d, &[1, 2, 3, 4, 5, 6], &[2, 3])
                .least_squares(&ints(d, &[1, 2], &[2]))
                .unwrap(),
            &[3],
            &[-0.055555582, 0.111111075, 0.27777776],
            1e-5,
        );
        let rank = |v: &[i32], shape: &[usize]| ints(d, v, shape).matrix_rank().unwrap();
        let r = rank(&[1, 2, 3, 4], &[2, 2]);
        assert_eq!(r.dtype(), DType::U32);
        assert_eq!(r.to_vec::<u32>().unwrap(), [2]);
        assert_eq!(
            values(&rank(&[1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 4], &[3, 4])),
            [2.0]
        );
        assert_eq!(
            values(&rank(&[1, 1, 1, 2, 2, 2, 8, 9, 10, -2, 1, 5], &[4, 3])),
            [3.0]
        );
    }
}

/// A random `[.., m, n]` f64 matrix batch on binary.
fn matrix(seed: u64, shape: &[usize]) -> Tensor {
    common::random(seed, DType::F64, shape)
}

/// `a·aᵀ + n·I`: symmetric positive definite, batched as `a`.
fn spd(a: &Tensor) -> Tensor {
    let n = a.shape()[a.rank() - 1];
    let batch: Vec<isize> = (0..a.rank() as isize - 2).collect();
    let r = a.rank() as isize;
    let gram = a
        .dot_general(&[r - 1], &batch, a, &[r - 1], &batch)
        .unwrap();
    let eye = on(a.device()).eye(a.dtype(), n).unwrap();
    gram.add(&eye.multiply(n as f64).unwrap()).unwrap()
}

fn batch_axes(t: &Tensor) -> Vec<isize> {
    (0..t.rank() as isize - 2).collect()
}

/// `a·b` over the batch axes.
fn product(a: &Tensor, b: &Tensor) -> Tensor {
    let (r, batch) = (a.rank() as isize, batch_axes(a));
    a.dot_general(&[r - 1], &batch, b, &[r - 2], &batch)
        .unwrap()
}

#[track_caller]
fn same(what: &str, a: &Tensor, b: &Tensor, tol: f64) {
    near(what, a, b.shape(), &values(b), tol);
}

#[test]
fn factorisations_satisfy_their_identities_on_every_device() {
    let shapes: [&[usize]; 5] = [&[6, 6], &[3, 5, 5], &[2, 2, 7, 4], &[4, 7], &[1, 1]];
    for d in devices() {
        for (seed, shape) in shapes.iter().enumerate() {
            let a = matrix(seed as u64, shape).backend_transfer(d).unwrap();
            let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
            let what = |f: &str| format!("{f} of {shape:?} on {d}");
            for complete in [false, true] {
                let (q, r) = if complete { a.qr_complete() } else { a.qr() }.unwrap();
                same(&what("q·r"), &product(&q, &r), &a, 1e-12);
                let qtq = product(&q.adjoint().unwrap(), &q);
                let k = q.shape()[q.rank() - 1];
                let eye = on(d)
                    .eye(DType::F64, k)
                    .unwrap()
                    .broadcast(qtq.shape())
                    .unwrap();
                same(&what("qᵀ·q"), &qtq, &eye, 1e-12);
                assert_eq!(
                    values(&r.tril(-1).unwrap())
                        .iter()
                        .filter(|x| **x != 0.0)
                        .count(),
                    0
                );
            }
            for full in [false, true] {
                let (u, s, vt) = if full { a.svd() } else { a.svd_reduced() }.unwrap();
                let k = m.min(n);
                let us = u
                    .slice_along_axis(0, k, -1)
                    .unwrap()
                    .multiply(&s.new_axis(-2).unwrap())
                    .unwrap();
                let rebuilt = product(&us, &vt.slice_along_axis(0, k, -2).unwrap());
                same(&what("u·s·vt"), &rebuilt, &a, 1e-12);
                let sorted = values(&s);
                for pair in sorted.chunks(k.max(1)) {
                    assert!(
                        pair.windows(2).all(|w| w[0] >= w[1]),
                        "{}: {pair:?}",
                        what("s order")
                    );
                }
                let utu = product(&u.adjoint().unwrap(), &u);
                let eye = on(d).eye(DType::F64, u.shape()[u.rank() - 1]).unwrap();
                same(
                    &what("uᵀ·u"),
                    &utu,
                    &eye.broadcast(utu.shape()).unwrap(),
                    1e-12,
                );
            }
            if m != n {
                continue;
            }
            let (p, l, u) = a.lu().unwrap();
            same(&what("p·l·u"), &product(&product(&p, &l), &u), &a, 1e-12);
            let s = spd(&a);
            let chol = s.cholesky().unwrap();
            same(
                &what("l·lᵀ"),
                &product(&chol, &chol.adjoint().unwrap()),
                &s,
                1e-12,
            );
            let (w, v) = s.eigh().unwrap();
            let vw = v.multiply(&w.new_axis(-2).unwrap()).unwrap();
            same(
                &what("v·w·vᵀ"),
                &product(&vw, &v.adjoint().unwrap()),
                &s,
                1e-11,
            );
            let b = matrix(
                50 + seed as u64,
                &[&shape[..shape.len() - 1], &[3]].concat(),
            )
            .backend_transfer(d)
            .unwrap();
            let x = a.solve(&b).unwrap();
            same(&what("a·x = b"), &product(&a, &x), &b, 1e-10);
            let inv = a.invert().unwrap();
            let eye = on(d)
                .eye(DType::F64, n)
                .unwrap()
                .broadcast(a.shape())
                .unwrap();
            same(&what("a·a⁻¹"), &product(&a, &inv), &eye, 1e-10);
            let det = a.determinant().unwrap();
            let u_diag = u.take_diagonal(0).unwrap().product(-1).unwrap();
            let sign = values(&p.determinant().unwrap());
            let expected: Vec<f64> = values(&u_diag)
                .iter()
                .zip(&sign)
                .map(|(x, s)| x * s)
                .collect();
            near(&what("det"), &det, u_diag.shape(), &expected, 1e-10);
        }
    }
}

#[test]
fn every_device_agrees_with_binary() {
    let a = matrix(7, &[3, 6, 6]);
    let tall = matrix(8, &[2, 7, 3]);
    let wide = matrix(9, &[3, 7]);
    let s = spd(&a);
    let b = matrix(10, &[3, 6, 2]);
    conform("cholesky", std::slice::from_ref(&s), |t| t[0].cholesky());
    conform("lu: u", std::slice::from_ref(&a), |t| Ok(t[0].lu()?.2));
    conform("lu: l", std::slice::from_ref(&a), |t| Ok(t[0].lu()?.1));
    for x in [&a, &tall, &wide] {
        conform("qr: r", std::slice::from_ref(x), |t| Ok(t[0].qr()?.1));
        conform("qr: q", std::slice::from_ref(x), |t| {
            Ok(t[0].qr_complete()?.0)
        });
        conform("svd: s", std::slice::from_ref(x), |t| Ok(t[0].svd()?.1));
        conform("svd: u", std::slice::from_ref(x), |t| {
            Ok(t[0].svd_reduced()?.0)
        });
        // Past the k-th, rows of a full vt span the null space in no particular basis.
        let k = x.shape()[x.rank() - 2].min(x.shape()[x.rank() - 1]);
        conform("svd: vt", std::slice::from_ref(x), move |t| {
            t[0].svd()?.2.slice_along_axis(0, k, -2)
        });
    }
    conform("eigh: w", std::slice::from_ref(&s), |t| Ok(t[0].eigh()?.0));
    conform("eigh: v", std::slice::from_ref(&s), |t| Ok(t[0].eigh()?.1));
    conform("solve", &[a.clone(), b.clone()], |t| t[0].solve(&t[1]));
    conform("invert", std::slice::from_ref(&a), |t| t[0].invert());
    conform("determinant", std::slice::from_ref(&a), |t| {
        t[0].determinant()
    });
    conform("pinv", std::slice::from_ref(&tall), |t| t[0].pinv());
    for (lower, left_side, transpose) in [
        (true, true, false),
        (false, false, true),
        (true, false, false),
        (false, true, true),
    ] {
        let options = TriangularSolve::new()
            .lower(lower)
            .left_side(left_side)
            .transpose(transpose);
        let rhs = if left_side {
            b.clone()
        } else {
            b.adjoint().unwrap()
        };
        conform("triangular_solve", &[s.clone(), rhs], move |t| {
            t[0].triangular_solve(&t[1], options)
        });
    }
    // f32 through LAPACK's single-precision routines against the reference in f64.
    let a32 = a.as_type(DType::F32).unwrap();
    conform("qr f32", std::slice::from_ref(&a32), |t| Ok(t[0].qr()?.1));
    conform("svd f32", std::slice::from_ref(&a32), |t| Ok(t[0].svd()?.1));
    conform("solve f32", &[a32, b.as_type(DType::F32).unwrap()], |t| {
        t[0].solve(&t[1])
    });
}

#[test]
fn hard_inputs_keep_their_promises() {
    for d in devices() {
        // Hilbert matrices are as ill-conditioned as small matrices get (8×8: about 1e10).
        let n = 8;
        let hilbert: Vec<f64> = (0..n * n)
            .map(|k| 1.0 / ((k / n + k % n + 1) as f64))
            .collect();
        let h = on(d).from_vec(hilbert, &[n, n]).unwrap();
        let (q, r) = h.qr().unwrap();
        same(&format!("hilbert q·r on {d}"), &product(&q, &r), &h, 1e-14);
        let (u, s, vt) = h.svd().unwrap();
        same(
            &format!("hilbert u·s·vt on {d}"),
            &product(&u.multiply(&s.new_axis(0).unwrap()).unwrap(), &vt),
            &h,
            1e-14,
        );
        let l = h.cholesky().unwrap();
        same(
            &format!("hilbert l·lᵀ on {d}"),
            &product(&l, &l.adjoint().unwrap()),
            &h,
            1e-14,
        );
        let cond = values(&s);
        assert!(cond[0] / cond[n - 1] > 1e9, "{cond:?}");
        // A singular matrix: LU still factorises, rank and pseudo-inverse see it.
        let singular = ints(d, &[1, 2, 3, 2, 4, 6, 1, 0, 1], &[3, 3])
            .as_type(DType::F64)
            .unwrap();
        let (p, l, u) = singular.lu().unwrap();
        same(
            "singular p·l·u",
            &product(&product(&p.as_type(DType::F64).unwrap(), &l), &u),
            &singular,
            1e-12,
        );
        assert_eq!(values(&singular.matrix_rank().unwrap()), [2.0]);
        near(
            "singular det",
            &singular.determinant().unwrap(),
            &[],
            &[0.0],
            1e-12,
        );
        let err = singular
            .solve(&ints(d, &[1, 2, 3], &[3]))
            .and_then(|x| x.to_f64_vec().map(|_| x))
            .unwrap_err()
            .to_string();
        assert!(err.contains("singular"), "{err}");
        let pinv = singular.pinv().unwrap();
        // The Moore–Penrose conditions: a·a⁺·a = a.
        same(
            "a·a⁺·a",
            &product(&product(&singular, &pinv), &singular),
            &singular,
            1e-12,
        );
        // Empty: no matrices, and 0×0 matrices.
        for shape in [&[0usize, 3, 3][..], &[2, 0, 0]] {
            let e = on(d).zeros(DType::F32, shape).unwrap();
            assert_eq!(e.cholesky().unwrap().shape(), shape);
            let (q, r) = e.qr().unwrap();
            assert_eq!((q.shape(), r.shape()), (shape, shape));
            let (w, v) = e.eigh().unwrap();
            assert_eq!((w.shape(), v.shape()), (&shape[..2], shape));
            assert_eq!(e.svd().unwrap().1.shape(), &shape[..2]);
            assert_eq!(e.invert().unwrap().shape(), shape);
            let det = e.determinant().unwrap();
            assert_eq!(det.shape(), &shape[..1]);
            assert!(values(&det).iter().all(|x| *x == 1.0));
        }
        let (q, r) = on(d)
            .zeros(DType::F32, &[3, 0])
            .unwrap()
            .qr_complete()
            .unwrap();
        assert_eq!((q.shape(), r.shape()), (&[3usize, 3][..], &[3usize, 0][..]));
        // Half precision computes in f32 and rounds once.
        let h16 = f32s(d, &[4.0, 2.0, 2.0, 3.0], &[2, 2])
            .as_type(DType::BF16)
            .unwrap();
        let l = h16.cholesky().unwrap();
        assert_eq!(l.dtype(), DType::BF16);
        near(
            "bf16 cholesky",
            &l,
            &[2, 2],
            &[2.0, 0.0, 1.0, 1.4140625],
            0.0,
        );
    }
}

#[test]
fn linalg_compiles_and_maps_over_a_batch() {
    for d in devices() {
        let a = matrix(21, &[4, 5, 5]).backend_transfer(d).unwrap();
        let b = matrix(22, &[4, 5]).backend_transfer(d).unwrap();
        let f = tensorbook::jit(|t: &[Tensor]| {
            let (q, r) = t[0].qr()?;
            let x = t[0].solve(&t[1])?;
            let det = t[0].determinant()?;
            Ok(vec![q, r, x, det, t[0].svd()?.1, t[0].invert()?])
        });
        let compiled = f.call(&[a.clone(), b.clone()]).unwrap();
        let eager = f.eager().call(&[a.clone(), b.clone()]).unwrap();
        for (c, e) in compiled.iter().zip(&eager) {
            same(&format!("jit on {d}"), c, e, 1e-12);
        }
        let per_example = tensorbook::vmap(|t: &Tensor| {
            let s = t.svd()?.1;
            s.add(&t.determinant()?)
        });
        let mapped = per_example.call(&a).unwrap();
        let direct = a
            .svd()
            .unwrap()
            .1
            .add(&a.determinant().unwrap().new_axis(-1).unwrap())
            .unwrap();
        same(&format!("vmap on {d}"), &mapped, &direct, 1e-12);
        // A shared right-hand side, broadcast to every example's solves.
        let solves = tensorbook::vmap_axes(
            |t: &Tensor, rhs: &Tensor| {
                let x = t.solve(rhs)?;
                t.triangular_solve(&x, TriangularSolve::new().lower(false))
            },
            &[Some(0), None],
        );
        let mapped = solves
            .call((
                &a,
                &b.slice_along_axis(0, 1, 0).unwrap().squeeze(0).unwrap(),
            ))
            .unwrap();
        let rhs = b
            .slice_along_axis(0, 1, 0)
            .unwrap()
            .broadcast(&[4, 5])
            .unwrap();
        let direct = a
            .triangular_solve(&a.solve(&rhs).unwrap(), TriangularSolve::new().lower(false))
            .unwrap();
        same(&format!("vmap of solves on {d}"), &mapped, &direct, 1e-10);
    }
}

/// `grad` of `f` at `x` (f64) against central differences, element by element.
fn check_gradient(what: &str, x: &Tensor, f: fn(&Tensor) -> tensorbook::Result<Tensor>) {
    let h = 1e-6;
    let weighted = move |t: &Tensor| -> tensorbook::Result<Tensor> {
        let y = f(t)?;
        let w = on(t.device())
            .iota(DType::F64, y.shape(), None)?
            .sin()?
            .add(0.5)?;
        y.multiply(&w)?.sum(..)
    };
    let g = tensorbook::grad(weighted).call(x).unwrap()[0]
        .to_vec::<f64>()
        .unwrap();
    let base = x.to_vec::<f64>().unwrap();
    for i in 0..base.len() {
        let at = |delta: f64| {
            let mut v = base.clone();
            v[i] += delta;
            let t = on(x.device()).from_slice(&v, x.shape()).unwrap();
            weighted(&t).unwrap().to_scalar::<f64>().unwrap()
        };
        let expected = (at(h) - at(-h)) / (2.0 * h);
        assert!(
            (g[i] - expected).abs() <= 1e-6 * expected.abs().max(1.0),
            "{what}: x[{i}] on {}: grad {} against {expected}",
            x.device(),
            g[i]
        );
    }
}

/// `x` plus `k` on the diagonal of each matrix (well away from singular).
fn shifted(x: &Tensor, k: f64) -> tensorbook::Result<Tensor> {
    let n = x.shape()[x.rank() - 1];
    x.add(&on(x.device()).eye(DType::F64, n)?.multiply(k)?)
}

#[test]
fn gradients_match_central_differences() {
    type Case = (
        &'static str,
        &'static [usize],
        fn(&Tensor) -> tensorbook::Result<Tensor>,
    );
    let cases: [Case; 18] = [
        ("svd", &[3, 3], |x| {
            let (u, s, vt) = x.svd_reduced()?;
            u.add(&vt)?.add(&s)
        }),
        ("svd tall", &[2, 5, 3], |x| {
            let (u, s, vt) = x.svd_reduced()?;
            Tensor::concatenate(&[u.sum([1])?, s, vt.sum([1])?], 1)
        }),
        ("svd wide", &[3, 5], |x| {
            let (u, s, vt) = x.svd_reduced()?;
            Tensor::concatenate(&[u.sum([0])?, s, vt.sum([0])?], 0)
        }),
        ("full svd's values and pinv", &[4, 3], |x| {
            let (_, s, _) = x.svd()?;
            x.pinv()?.sum([1])?.add(&s)
        }),
        ("cholesky", &[3, 3], |x| {
            shifted(&x.dot(&x.transpose(..)?)?, 1.0)?.cholesky()
        }),
        ("cholesky reads the lower triangle", &[3, 3], |x| {
            shifted(x, 4.0)?.cholesky()
        }),
        ("qr square", &[3, 3], |x| {
            let (q, r) = x.qr()?;
            q.add(&r)
        }),
        ("qr tall", &[2, 4, 3], |x| {
            let (q, r) = x.qr()?;
            Tensor::concatenate(&[q.sum([2])?, r.sum([2])?], 1)
        }),
        ("qr wide", &[3, 4], |x| {
            let (q, r) = x.qr()?;
            q.sum(..)?.add(&r)
        }),
        ("eigh", &[3, 3], |x| {
            let s = shifted(&x.dot(&x.transpose(..)?)?, 0.5)?;
            let (w, v) = s.eigh()?;
            v.multiply(&w)
        }),
        ("lu", &[3, 3], |x| {
            let (_, l, u) = shifted(x, 3.0)?.lu()?;
            l.add(&u)
        }),
        ("triangular_solve lower", &[3, 4], |x| {
            let a = shifted(&x.slice_along_axis(0, 3, 1)?, 3.0)?;
            a.triangular_solve(x, TriangularSolve::new())
        }),
        ("triangular_solve upper, right, transposed", &[4, 4], |x| {
            let a = shifted(x, 3.0)?;
            let b = x.slice_along_axis(0, 2, 0)?;
            a.triangular_solve(
                &b,
                TriangularSolve::new()
                    .lower(false)
                    .left_side(false)
                    .transpose(true),
            )
        }),
        ("solve", &[3, 4], |x| {
            let a = shifted(&x.slice_along_axis(0, 3, 1)?, 2.0)?;
            a.solve(&x.slice_along_axis(1, 3, 1)?)
        }),
        ("invert", &[2, 3, 3], |x| shifted(x, 2.0)?.invert()),
        ("determinant 3x3", &[3, 3], |x| x.determinant()),
        ("determinant 4x4", &[2, 4, 4], |x| {
            shifted(x, 2.0)?.determinant()
        }),
        ("norms", &[3, 4], |x| {
            let f = x.norm()?;
            let rows = x.norm_axes(Norm::P(3), [1], false)?;
            rows.add(&f)?.add(&x.norm_of(Norm::Inf)?)
        }),
    ];
    for d in devices() {
        for (seed, (what, shape, f)) in cases.iter().enumerate() {
            let x = matrix(100 + seed as u64, shape)
                .backend_transfer(d)
                .unwrap();
            check_gradient(what, &x, *f);
        }
    }
}

#[test]
fn non_finite_entries_end_in_nan_or_an_error_never_a_hang() {
    for d in devices() {
        for bad in [f64::NAN, f64::INFINITY] {
            let mut v: Vec<f64> = (0..16)
                .map(|k| (k as f64 * 0.37).sin() + if k % 5 == 0 { 4.0 } else { 0.0 })
                .collect();
            v[5] = bad;
            let a = on(d).from_vec(v, &[4, 4]).unwrap();
            let b = on(d).from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[4]).unwrap();
            let results: Vec<(&str, tensorbook::Result<Tensor>)> = vec![
                ("cholesky", a.cholesky()),
                ("qr", a.qr().map(|p| p.1)),
                ("lu", a.lu().map(|p| p.2)),
                ("eigh", a.eigh().map(|p| p.0)),
                ("svd", a.svd().map(|p| p.1)),
                ("solve", a.solve(&b)),
                ("invert", a.invert()),
                ("determinant", a.determinant()),
                (
                    "triangular_solve",
                    a.triangular_solve(&b, TriangularSolve::new()),
                ),
            ];
            for (what, r) in results {
                match r.and_then(|t| t.to_f64_vec()) {
                    // NaN reaches the result; an infinity may cancel out of it (a solve's
                    // limit is finite), and either way the call returns.
                    Ok(values) => assert!(
                        !bad.is_nan() || values.iter().any(|x| !x.is_finite()),
                        "{what} of a matrix holding {bad} on {d}: all finite {values:?}"
                    ),
                    Err(e) => assert!(
                        e.to_string().contains(what) || e.to_string().contains("singular"),
                        "{what}: {e}"
                    ),
                }
            }
        }
        // Larger matrices take LAPACK's blocked paths (divide and conquer in ?gesdd, ?syevd).
        let mut big = matrix(77, &[150, 150]).to_f64_vec().unwrap();
        big[150 * 40 + 7] = f64::NAN;
        let big = on(d).from_vec(big, &[150, 150]).unwrap();
        for (what, r) in [
            ("svd", big.svd().map(|p| p.1)),
            ("eigh", big.eigh().map(|p| p.0)),
        ] {
            if let Ok(values) = r.and_then(|t| t.to_f64_vec()) {
                assert!(values.iter().any(|x| x.is_nan()), "{what} on {d}: NaN lost");
            }
        }
    }
}
