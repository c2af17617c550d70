//! Host's factorisations of complex matrices through LAPACK's `c`/`z` routines (`?potrf`,
//! `?getrf`, `?geqrf` and `?ungqr`, `?heevd`), looked up in the LAPACK `lapack.rs` opened, as NumPy and SciPy call
//! them. A LAPACK without them (none that OpenBLAS ships) leaves host on the complex reference
//! algorithms. Results are brought to the conventions of `ir::linalg` (phases, order).
//!
//! As in `lapack.rs`, a row-major buffer read column-major is the transpose, not the
//! conjugate transpose: a Hermitian matrix's buffer read so is its conjugate, whose
//! eigenvectors are the conjugates of the matrix's own.

use std::ffi::{c_char, c_int};
use std::sync::OnceLock;

use super::lapack::{
    cholesky, copied, failed, int, lapack, lu, qr, scratch, symbol, unreadable_lower, Geqrf, Getrf,
    Lapack, Orgqr, Potrf,
};
use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::complex::{Complex32, Complex64};
use crate::element::Element;
use crate::error::Result;
use crate::ir::linalg::{eigh_order, Factorization, LinAlg};

type Ch = *const c_char;
type I = *const c_int;
type Info = *mut c_int;
type Heevd<Z, R> = unsafe extern "C" fn(
    Ch,
    Ch,
    I,
    *mut Z,
    I,
    *mut R,
    *mut Z,
    I,
    *mut R,
    I,
    *mut c_int,
    I,
    Info,
    usize,
    usize,
);

/// One precision's complex routines; `R` is its real part's type.
pub(super) struct ComplexRoutines<Z, R> {
    potrf: Potrf<Z>,
    getrf: Getrf<Z>,
    geqrf: Geqrf<Z>,
    ungqr: Orgqr<Z>,
    heevd: Heevd<Z, R>,
}

/// The complex routines of the opened LAPACK.
pub(super) struct ComplexLapack {
    single: ComplexRoutines<Complex32, f32>,
    double: ComplexRoutines<Complex64, f64>,
}

/// # Safety
/// `lapack` must be a LAPACK whose `prefix`-routines take `Z` (and `R` for real arrays).
unsafe fn routines<Z, R>(lapack: &Lapack, prefix: char) -> Option<ComplexRoutines<Z, R>> {
    let name = |routine: &str| format!("{prefix}{routine}_");
    Some(ComplexRoutines {
        potrf: symbol(&lapack.library, &name("potrf"))?,
        getrf: symbol(&lapack.library, &name("getrf"))?,
        geqrf: symbol(&lapack.library, &name("geqrf"))?,
        ungqr: symbol(&lapack.library, &name("ungqr"))?,
        heevd: symbol(&lapack.library, &name("heevd"))?,
    })
}

/// The LAPACK and its complex routines, looked up once per process.
fn complex_lapack() -> Option<(&'static Lapack, &'static ComplexLapack)> {
    static COMPLEX: OnceLock<Option<ComplexLapack>> = OnceLock::new();
    let lapack = lapack()?;
    let complex = COMPLEX
        .get_or_init(|| {
            // SAFETY: `c` and `z` are LAPACK's single and double complex prefixes, with
            // its standard Fortran signatures.
            unsafe {
                Some(ComplexLapack {
                    single: routines(lapack, 'c')?,
                    double: routines(lapack, 'z')?,
                })
            }
        })
        .as_ref()?;
    Some((lapack, complex))
}

/// c64 and c128, with their routines.
pub(super) trait LapackComplex: Element {
    #[doc(hidden)]
    type Real: Element;
    #[doc(hidden)]
    fn routines(lapack: &ComplexLapack) -> &ComplexRoutines<Self, Self::Real>;
}

impl LapackComplex for Complex32 {
    type Real = f32;
    fn routines(lapack: &ComplexLapack) -> &ComplexRoutines<Complex32, f32> {
        &lapack.single
    }
}

impl LapackComplex for Complex64 {
    type Real = f64;
    fn routines(lapack: &ComplexLapack) -> &ComplexRoutines<Complex64, f64> {
        &lapack.double
    }
}

/// Runs a complex factorisation through LAPACK; `None` where no LAPACK with complex routines
/// loaded, or for any other op (the caller computes with the reference then).
pub(super) fn run<Z: LapackComplex>(op: &LinAlg, inputs: &[&[Z]]) -> Option<Result<Buffer>> {
    let LinAlg::Factor { kind, batch, m, n } = *op else {
        return None;
    };
    if matches!(kind, Factorization::Svd { .. }) {
        return None;
    }
    let (lapack, complex) = complex_lapack()?;
    let r = Z::routines(complex);
    let run = || -> Result<Buffer> {
        let per = op.per_matrix();
        let mut out = try_alloc(op.out_len(), Z::ZERO, &[op.out_len()])?;
        let a = inputs.first().copied().unwrap_or(&[]);
        let one = |b: usize, dest: &mut [Z]| -> Result<()> {
            crate::interrupt::check()?;
            let matrix = &a[b * m * n..(b + 1) * m * n];
            match kind {
                Factorization::Cholesky => cholesky(r.potrf, matrix, n, dest),
                Factorization::Lu => lu(r.getrf, matrix, n, dest),
                Factorization::Qr { complete } => {
                    qr((r.geqrf, r.ungqr), matrix, m, n, complete, dest)
                }
                _ => eigh(r, matrix, n, dest),
            }
        };
        lapack.each_matrix(&mut out, per, batch, m.saturating_mul(n), one)?;
        Ok(Z::into_buffer(out))
    };
    Some(run())
}

fn eigh<Z: LapackComplex>(
    r: &ComplexRoutines<Z, Z::Real>,
    a: &[Z],
    n: usize,
    out: &mut [Z],
) -> Result<()> {
    if n == 0 || unreadable_lower(a, n, out) {
        return Ok(());
    }
    let mut c = copied(a)?;
    let mut w = scratch::<Z::Real>(n)?;
    let (ni, mut info) = (int("eigh", n)?, 0);
    let (mut size, mut rsize, mut isize) = (Z::ZERO, Z::Real::ZERO, 0 as c_int);
    // SAFETY: a workspace query writes only the sizes.
    unsafe {
        (r.heevd)(
            b"V".as_ptr().cast(),
            b"U".as_ptr().cast(),
            &ni,
            c.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            &mut size,
            &-1,
            &mut rsize,
            &-1,
            &mut isize,
            &-1,
            &mut info,
            1,
            1,
        )
    };
    let lwork = size.to_f64().max(1.0) as usize;
    let lrwork = rsize.to_f64().max(1.0) as usize;
    let liwork = usize::try_from(isize).unwrap_or(1).max(1);
    let mut work = scratch::<Z>(lwork)?;
    let mut rwork = scratch::<Z::Real>(lrwork)?;
    let mut iwork = scratch::<c_int>(liwork)?;
    let (lw, lrw, liw) = (
        int("eigh", lwork)?,
        int("eigh", lrwork)?,
        int("eigh", liwork)?,
    );
    // SAFETY: `c` holds n·n entries, `w` n, the workspaces their queried sizes.
    unsafe {
        (r.heevd)(
            b"V".as_ptr().cast(),
            b"U".as_ptr().cast(),
            &ni,
            c.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &lw,
            rwork.as_mut_ptr(),
            &lrw,
            iwork.as_mut_ptr(),
            &liw,
            &mut info,
            1,
            1,
        )
    };
    if info < 0 {
        return Err(failed("eigh", "heevd", info));
    }
    let (values, vectors) = out.split_at_mut(n);
    if info > 0 {
        values.fill(Z::from_parts(f64::NAN, f64::NAN));
        vectors.fill(Z::from_parts(f64::NAN, f64::NAN));
        return Ok(());
    }
    // Column `j` of `c` (contiguous) is an eigenvector of the conjugate matrix: conjugated,
    // it is the matrix's own. Put in Nx's order and turned by `eigh_order`.
    for (j, value) in values.iter_mut().enumerate() {
        *value = Z::from_parts(w[j].to_f64(), 0.0);
    }
    for j in 0..n {
        for i in 0..n {
            let (re, im) = c[j * n + i].to_parts();
            vectors[i * n + j] = Z::from_parts(re, -im);
        }
    }
    eigh_order(values, vectors, n);
    Ok(())
}
