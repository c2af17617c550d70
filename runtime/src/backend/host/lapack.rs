//! Host's factorisations and triangular solves through LAPACK, loaded at run time from the
//! system OpenBLAS that `install/blas.sh` installs (OpenBLAS carries LAPACK; reference LAPACK
//! is the second choice), as `blas.rs` loads its BLAS: no build dependency, and the same
//! routines NumPy and SciPy call (`?potrf`, `?getrf`, `?geqrf`/`?orgqr`, `?syevd`, `?gesdd`,
//! `?trsm`). Where none loads, host computes with the reference algorithms instead.
//!
//! LAPACK is column-major and tensors are row-major: a row-major buffer read column-major is
//! the transpose. Symmetric inputs need no copy across (the upper triangle column-major is the
//! lower one row-major); the others are transposed in and out, an O(n²) copy beside O(n³).
//! Results are then brought to the conventions of `ir::linalg` (signs, order).

use std::ffi::{c_char, c_int};
use std::sync::{Mutex, OnceLock};

use libloading::Library;
use rayon::prelude::*;

use crate::allocate::try_alloc;
use crate::backend::linalg_reference::{singular, singular_in};
use crate::buffer::Buffer;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::host_vec::HostVec;
use crate::ir::linalg::{
    eigen_order, largest_is_negative, qr_conventions, svd_signs, Factorization, LinAlg,
};

const CANDIDATES: [&str; 4] = [
    "libopenblas.so.0",
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
    "liblapack.so.3",
    "/usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3",
];

type Ch = *const c_char;
type I = *const c_int;
type Info = *mut c_int;
// Fortran passes every argument by reference, and (gfortran) each character argument's
// length after the others.
pub(super) type Potrf<T> = unsafe extern "C" fn(Ch, I, *mut T, I, Info, usize);
pub(super) type Getrf<T> = unsafe extern "C" fn(I, I, *mut T, I, *mut c_int, Info);
type Getrs<T> = unsafe extern "C" fn(Ch, I, I, *const T, I, *const c_int, *mut T, I, Info, usize);
pub(super) type Geqrf<T> = unsafe extern "C" fn(I, I, *mut T, I, *mut T, *mut T, I, Info);
pub(super) type Orgqr<T> = unsafe extern "C" fn(I, I, I, *mut T, I, *const T, *mut T, I, Info);
type Syevd<T> = unsafe extern "C" fn(
    Ch,
    Ch,
    I,
    *mut T,
    I,
    *mut T,
    *mut T,
    I,
    *mut c_int,
    I,
    Info,
    usize,
    usize,
);
type Gesdd<T> = unsafe extern "C" fn(
    Ch,
    I,
    I,
    *mut T,
    I,
    *mut T,
    *mut T,
    I,
    *mut T,
    I,
    *mut T,
    I,
    *mut c_int,
    Info,
    usize,
);
type Trsm<T> = unsafe extern "C" fn(
    Ch,
    Ch,
    Ch,
    Ch,
    I,
    I,
    *const T,
    *const T,
    I,
    *mut T,
    I,
    usize,
    usize,
    usize,
    usize,
);

/// One precision's routines.
pub(super) struct Routines<T> {
    potrf: Potrf<T>,
    getrf: Getrf<T>,
    getrs: Getrs<T>,
    geqrf: Geqrf<T>,
    orgqr: Orgqr<T>,
    syevd: Syevd<T>,
    gesdd: Gesdd<T>,
    trsm: Trsm<T>,
}

/// An opened LAPACK.
pub(super) struct Lapack {
    single: Routines<f32>,
    double: Routines<f64>,
    /// OpenBLAS's thread count, read and set (`openblas_get_num_threads`/`_set_`), where the
    /// library is OpenBLAS.
    threads: Option<(GetThreads, SetThreads)>,
    /// What was opened.
    pub(super) name: String,
    /// The library itself, which the complex routines (`lapack_complex.rs`) are looked up in.
    pub(super) library: Library,
}

type GetThreads = unsafe extern "C" fn() -> c_int;
type SetThreads = unsafe extern "C" fn(c_int);

/// # Safety
/// `library` must export the routine `name` with the signature `F`.
pub(super) unsafe fn symbol<F: Copy>(library: &Library, name: &str) -> Option<F> {
    let mut bytes = name.as_bytes().to_vec();
    bytes.push(0);
    library.get::<F>(&bytes[..]).ok().map(|s| *s)
}

/// # Safety
/// `library` must be a LAPACK whose `prefix`-routines take `T`.
unsafe fn routines<T>(library: &Library, prefix: char) -> Option<Routines<T>> {
    let name = |routine: &str| format!("{prefix}{routine}_");
    Some(Routines {
        potrf: symbol(library, &name("potrf"))?,
        getrf: symbol(library, &name("getrf"))?,
        getrs: symbol(library, &name("getrs"))?,
        geqrf: symbol(library, &name("geqrf"))?,
        orgqr: symbol(library, &name("orgqr"))?,
        syevd: symbol(library, &name("syevd"))?,
        gesdd: symbol(library, &name("gesdd"))?,
        trsm: symbol(library, &name("trsm"))?,
    })
}

/// OpenBLAS's thread-count accessors, where `library` is OpenBLAS.
///
/// # Safety
/// `library` is a loaded library; these names, where it has them, are OpenBLAS's.
unsafe fn thread_count(library: &Library) -> Option<(GetThreads, SetThreads)> {
    let get = symbol::<GetThreads>(library, "openblas_get_num_threads")?;
    let set = symbol::<SetThreads>(library, "openblas_set_num_threads")?;
    Some((get, set))
}

fn open(name: &str) -> Option<Lapack> {
    // SAFETY: loading the library runs its initialisers (thread pool, CPU detection); the
    // routines have LAPACK's and BLAS's standard Fortran signatures.
    unsafe {
        let library = Library::new(name).ok()?;
        Some(Lapack {
            single: routines(&library, 's')?,
            double: routines(&library, 'd')?,
            threads: thread_count(&library),
            name: name.to_string(),
            library,
        })
    }
}

impl Lapack {
    /// Runs `work` (LAPACK calls from several threads at once) with OpenBLAS on one thread per
    /// call: its threading inside each of many concurrent small calls cost more than it gave
    /// (1000 32x32 eighs: 109 ms one after another, 251 ms shared out with OpenBLAS's threads
    /// left on). The count is process-wide, so overlapping batches (a serving's partitions)
    /// share one setting: the first to start keeps the count there was, the last to end puts
    /// it back, a panic included.
    fn one_thread_each<R>(&self, work: impl FnOnce() -> R) -> R {
        struct OneThread {
            set: SetThreads,
        }
        impl Drop for OneThread {
            fn drop(&mut self) {
                let mut shared = ONE_THREAD.lock().unwrap_or_else(|e| e.into_inner());
                shared.0 -= 1;
                if shared.0 == 0 {
                    // SAFETY: OpenBLAS's setter, given the count it had before.
                    unsafe { (self.set)(shared.1) };
                }
            }
        }
        /// Batches running with one thread, and the count to put back after the last.
        static ONE_THREAD: Mutex<(usize, c_int)> = Mutex::new((0, 0));
        let Some((get, set)) = self.threads else {
            return work();
        };
        {
            let mut shared = ONE_THREAD.lock().unwrap_or_else(|e| e.into_inner());
            if shared.0 == 0 {
                // SAFETY: OpenBLAS's own thread-count accessors, which take and return a count.
                shared.1 = unsafe { get() };
                unsafe { set(1) };
            }
            shared.0 += 1;
        }
        let _restore = OneThread { set };
        work()
    }
}

impl Lapack {
    /// Runs `one(b, dest)` for each matrix `b` of a batch of `batch` (`entries` each), `dest`
    /// its `per` entries of `out`. A small matrix is too little work for OpenBLAS's threads,
    /// so a batch of them is shared out over the cores instead, one thread each (NumPy calls
    /// them one after another).
    pub(super) fn each_matrix<T: Send>(
        &self,
        out: &mut [T],
        per: usize,
        batch: usize,
        entries: usize,
        one: impl Fn(usize, &mut [T]) -> Result<()> + Sync,
    ) -> Result<()> {
        let matrices = out.chunks_mut(per.max(1)).take(batch);
        if batch > 1 && entries <= BATCH_SHARED_UP_TO {
            self.one_thread_each(|| {
                matrices
                    .enumerate()
                    .par_bridge()
                    .try_for_each(|(b, dest)| one(b, dest))
            })
        } else {
            matrices.enumerate().try_for_each(|(b, dest)| one(b, dest))
        }
    }
}

/// The LAPACK host factorises with, opened once per process.
pub(super) fn lapack() -> Option<&'static Lapack> {
    static LAPACK: OnceLock<Option<Lapack>> = OnceLock::new();
    LAPACK
        .get_or_init(|| CANDIDATES.iter().find_map(|name| open(name)))
        .as_ref()
}

/// The name of the LAPACK host's factorisations go through, if one loaded.
pub fn library_name() -> Option<&'static str> {
    lapack().map(|l| l.name.as_str())
}

/// f32 and f64, with their routines.
pub(super) trait LapackFloat: Element {
    #[doc(hidden)]
    fn routines(lapack: &Lapack) -> &Routines<Self>;
}

impl LapackFloat for f32 {
    fn routines(lapack: &Lapack) -> &Routines<f32> {
        &lapack.single
    }
}

impl LapackFloat for f64 {
    fn routines(lapack: &Lapack) -> &Routines<f64> {
        &lapack.double
    }
}

pub(super) fn int(op: &'static str, v: usize) -> Result<c_int> {
    c_int::try_from(v).map_err(|_| Error::InvalidArgument {
        op,
        message: format!("a matrix dimension of {v} is past LAPACK's 32-bit sizes"),
    })
}

pub(super) fn failed(op: &'static str, routine: &str, info: c_int) -> Error {
    Error::InvalidArgument {
        op,
        message: format!("internal: LAPACK's {routine} rejected argument {}", -info),
    }
}

/// Batches of matrices of at most this many entries are factorised in parallel, one matrix
/// per task; larger ones one after another, each with OpenBLAS's own threads.
const BATCH_SHARED_UP_TO: usize = 128 * 128;

/// Runs `op` over its batch through `lapack`.
pub(super) fn run<T: LapackFloat>(lapack: &Lapack, op: &LinAlg, inputs: &[&[T]]) -> Result<Buffer> {
    let per = op.per_matrix();
    let mut out = try_alloc(op.out_len(), T::ZERO, &[op.out_len()])?;
    let r = T::routines(lapack);
    let name = op.name();
    match *op {
        LinAlg::Factor { kind, batch, m, n } => {
            let a = inputs.first().copied().unwrap_or(&[]);
            let one = |b: usize, dest: &mut [T]| -> Result<()> {
                crate::interrupt::check()?;
                let matrix = &a[b * m * n..(b + 1) * m * n];
                match kind {
                    Factorization::Cholesky => cholesky(r.potrf, matrix, n, dest),
                    Factorization::Lu => lu(r.getrf, matrix, n, dest),
                    Factorization::Qr { complete } => {
                        qr((r.geqrf, r.orgqr), matrix, m, n, complete, dest)
                    }
                    Factorization::Eigh => eigh(r, matrix, n, dest),
                    Factorization::Svd { full } => svd(r, matrix, m, n, full, dest),
                }
            };
            lapack.each_matrix(&mut out, per, batch, m.saturating_mul(n), one)?;
        }
        LinAlg::TriangularSolve {
            batch,
            n,
            rows,
            cols,
            left_side,
            lower,
            transpose,
        } => {
            let (a, rhs) = match inputs {
                [a, b] => (*a, *b),
                _ => return Err(failed(name, "trsm", 0)),
            };
            for b in 0..batch {
                crate::interrupt::check()?;
                let matrix = &a[b * n * n..(b + 1) * n * n];
                if (0..n).any(|i| matrix[i * n + i].to_f64() == 0.0) {
                    return Err(singular());
                }
                let dest = &mut out[b * per..(b + 1) * per];
                dest.copy_from_slice(&rhs[b * rows * cols..(b + 1) * rows * cols]);
                if rows == 0 || cols == 0 {
                    continue;
                }
                // Row-major `op(a)·x = b` is column-major `xᵀ·op(a)ᵀ = bᵀ`, and `a`'s buffer
                // read column-major is `aᵀ` (its lower triangle an upper one).
                let side = if left_side { b"R" } else { b"L" };
                let uplo = if lower { b"U" } else { b"L" };
                let trans = if transpose { b"T" } else { b"N" };
                let (mm, nn, ld_a) = (int(name, cols)?, int(name, rows)?, int(name, n)?);
                // SAFETY: `matrix` holds n·n entries and `dest` rows·cols, with the leading
                // dimensions given; the flags are single letters.
                unsafe {
                    (r.trsm)(
                        side.as_ptr().cast(),
                        uplo.as_ptr().cast(),
                        trans.as_ptr().cast(),
                        b"N".as_ptr().cast(),
                        &mm,
                        &nn,
                        &T::ONE,
                        matrix.as_ptr(),
                        &ld_a,
                        dest.as_mut_ptr(),
                        &mm,
                        1,
                        1,
                        1,
                        1,
                    );
                }
            }
        }
        LinAlg::Solve {
            batch,
            n,
            cols,
            transpose,
            strict,
        } => {
            let (a, rhs) = match inputs {
                [a, b] => (*a, *b),
                _ => return Err(failed(name, "getrs", 0)),
            };
            for b in 0..batch {
                crate::interrupt::check()?;
                let dest = &mut out[b * per..(b + 1) * per];
                let solved = solve(
                    r,
                    &a[b * n * n..(b + 1) * n * n],
                    n,
                    &rhs[b * n * cols..(b + 1) * n * cols],
                    cols,
                    transpose,
                    dest,
                )?;
                if !solved {
                    if strict {
                        return Err(singular_in("solve"));
                    }
                    dest.fill(T::from_f64(f64::NAN));
                }
            }
        }
    }
    Ok(T::into_buffer(out))
}

/// `op(a)·x = b` into `x`, by `?getrf` and `?getrs`; `false` when `a` is singular.
fn solve<T: LapackFloat>(
    r: &Routines<T>,
    a: &[T],
    n: usize,
    b: &[T],
    cols: usize,
    transpose: bool,
    x: &mut [T],
) -> Result<bool> {
    if n == 0 || cols == 0 {
        return Ok(true);
    }
    // `a`'s buffer read column-major is `aᵀ`: its LU solves `aᵀ·x = b` as it is and
    // `a·x = b` transposed.
    let mut lu = copied(a)?;
    let mut pivots = scratch::<c_int>(n)?;
    let (ni, ci, mut info) = (int("solve", n)?, int("solve", cols)?, 0);
    // SAFETY: `lu` holds n·n entries, `pivots` n.
    unsafe {
        (r.getrf)(
            &ni,
            &ni,
            lu.as_mut_ptr(),
            &ni,
            pivots.as_mut_ptr(),
            &mut info,
        )
    };
    if info < 0 {
        return Err(failed("solve", "getrf", info));
    }
    if info > 0 {
        return Ok(false);
    }
    let mut columns = if cols == 1 {
        copied(b)?
    } else {
        column_major(b, n, cols, cols)?
    };
    let trans = if transpose { b"N" } else { b"T" };
    // SAFETY: the factors and pivots of getrf above; `columns` holds n·cols entries with
    // leading dimension n.
    unsafe {
        (r.getrs)(
            trans.as_ptr().cast(),
            &ni,
            &ci,
            lu.as_ptr(),
            &ni,
            pivots.as_ptr(),
            columns.as_mut_ptr(),
            &ni,
            &mut info,
            1,
        )
    };
    if info < 0 {
        return Err(failed("solve", "getrs", info));
    }
    if cols == 1 {
        x.copy_from_slice(&columns);
    } else {
        for i in 0..n {
            for j in 0..cols {
                x[i * cols + j] = columns[j * n + i];
            }
        }
    }
    Ok(true)
}

/// `a [rows, cols]` row-major, as a column-major buffer of `rows` leading dimension with
/// `columns` columns (at least `cols`; the rest zero).
pub(super) fn column_major<T: Element>(
    a: &[T],
    rows: usize,
    cols: usize,
    columns: usize,
) -> Result<HostVec<T>> {
    let mut c = scratch::<T>(rows * columns.max(cols))?;
    for i in 0..rows {
        for j in 0..cols {
            c[j * rows + i] = a[i * cols + j];
        }
    }
    Ok(c)
}

/// A zeroed scratch buffer, allocated as every host buffer is (refused, not aborted, past the
/// memory there is).
pub(super) fn scratch<T: Element>(len: usize) -> Result<HostVec<T>> {
    try_alloc(len, T::ZERO, &[len])
}

/// A copy of `a` in a scratch buffer.
pub(super) fn copied<T: Element>(a: &[T]) -> Result<HostVec<T>> {
    let mut c = scratch(a.len())?;
    c.copy_from_slice(a);
    Ok(c)
}

/// `l·lᵀ = a` (`l·lᴴ` of a complex `a`) by `potrf`, the precision's `?potrf`; NaN where `a`
/// is not positive definite.
pub(super) fn cholesky<T: Element>(potrf: Potrf<T>, a: &[T], n: usize, l: &mut [T]) -> Result<()> {
    l.copy_from_slice(a);
    if n == 0 {
        return Ok(());
    }
    let (nn, mut info) = (int("cholesky", n)?, 0);
    // SAFETY: `l` holds n·n entries, leading dimension n.
    unsafe { potrf(b"U".as_ptr().cast(), &nn, l.as_mut_ptr(), &nn, &mut info, 1) };
    if info < 0 {
        return Err(failed("cholesky", "potrf", info));
    }
    if info > 0 {
        l.fill(T::from_parts(f64::NAN, f64::NAN));
        return Ok(());
    }
    for i in 0..n {
        for j in i + 1..n {
            l[i * n + j] = T::ZERO;
        }
    }
    Ok(())
}

/// `a = p·l·u` by `getrf`, the precision's `?getrf`: parts `p`, `l`, `u` and the sign.
pub(super) fn lu<T: Element>(getrf: Getrf<T>, a: &[T], n: usize, out: &mut [T]) -> Result<()> {
    let nn = n * n;
    let mut c = column_major(a, n, n, n)?;
    let mut pivots = scratch::<c_int>(n)?;
    if n > 0 {
        let (ni, mut info) = (int("lu", n)?, 0);
        // SAFETY: `c` holds n·n entries, `pivots` n.
        unsafe {
            getrf(
                &ni,
                &ni,
                c.as_mut_ptr(),
                &ni,
                pivots.as_mut_ptr(),
                &mut info,
            )
        };
        if info < 0 {
            return Err(failed("lu", "getrf", info));
        }
    }
    let mut perm: Vec<usize> = (0..n).collect();
    let mut sign = 1.0;
    for (i, &p) in pivots.iter().enumerate() {
        let p = usize::try_from(p).unwrap_or(1).saturating_sub(1).min(n - 1);
        if p != i {
            perm.swap(i, p);
            sign = -sign;
        }
    }
    let (p, rest) = out.split_at_mut(nn);
    let (l, rest) = rest.split_at_mut(nn);
    let (u, s) = rest.split_at_mut(nn);
    p.fill(T::ZERO);
    for (i, &from) in perm.iter().enumerate() {
        p[from * n + i] = T::ONE;
    }
    for i in 0..n {
        for j in 0..n {
            let v = c[j * n + i];
            l[i * n + j] = match j.cmp(&i) {
                std::cmp::Ordering::Less => v,
                std::cmp::Ordering::Equal => T::ONE,
                std::cmp::Ordering::Greater => T::ZERO,
            };
            u[i * n + j] = if j >= i { v } else { T::ZERO };
        }
    }
    s[0] = T::from_f64(sign);
    Ok(())
}

/// Asks a routine how much workspace it wants (`lwork = -1`).
pub(super) fn workspace<T: Element>(query: impl FnOnce(*mut T, &c_int)) -> usize {
    let mut size = T::ZERO;
    query(&mut size, &-1);
    (size.to_f64().max(1.0)) as usize
}

/// `a = q·r` by `geqrf` and `orgqr` (the precision's `?geqrf` and `?orgqr`, or `?ungqr` for
/// complex matrices), brought to the conventions of `ir::linalg`.
pub(super) fn qr<T: Element>(
    (geqrf, orgqr): (Geqrf<T>, Orgqr<T>),
    a: &[T],
    m: usize,
    n: usize,
    complete: bool,
    out: &mut [T],
) -> Result<()> {
    let k = m.min(n);
    let (qc, rr) = if complete { (m, m) } else { (k, k) };
    let mut c = column_major(a, m, n, qc)?;
    let mut tau = scratch::<T>(k)?;
    let (mi, ni, ki, qi, ld) = (
        int("qr", m)?,
        int("qr", n)?,
        int("qr", k)?,
        int("qr", qc)?,
        int("qr", m.max(1))?,
    );
    if k > 0 {
        let mut info = 0;
        let lwork = workspace::<T>(|w, l| {
            // SAFETY: a workspace query writes only the size into `w`.
            unsafe {
                geqrf(
                    &mi,
                    &ni,
                    c.as_mut_ptr(),
                    &ld,
                    tau.as_mut_ptr(),
                    w,
                    l,
                    &mut info,
                )
            }
        });
        let mut work = scratch::<T>(lwork)?;
        let lw = int("qr", lwork)?;
        // SAFETY: `c` holds m·n entries (leading dimension m), `tau` k, `work` lwork.
        unsafe {
            geqrf(
                &mi,
                &ni,
                c.as_mut_ptr(),
                &ld,
                tau.as_mut_ptr(),
                work.as_mut_ptr(),
                &lw,
                &mut info,
            )
        };
        if info < 0 {
            return Err(failed("qr", "geqrf", info));
        }
    }
    let mut r_out = scratch::<T>(rr * n)?;
    for i in 0..rr.min(m) {
        for j in i..n {
            r_out[i * n + j] = c[j * m + i];
        }
    }
    let mut q = scratch::<T>(m * qc)?;
    if qc > 0 && m > 0 {
        let mut info = 0;
        let lwork = workspace::<T>(|w, l| {
            // SAFETY: as above, a size query.
            unsafe {
                orgqr(
                    &mi,
                    &qi,
                    &ki,
                    c.as_mut_ptr(),
                    &ld,
                    tau.as_ptr(),
                    w,
                    l,
                    &mut info,
                )
            }
        });
        let mut work = scratch::<T>(lwork)?;
        let lw = int("qr", lwork)?;
        // SAFETY: `c` holds m·qc entries (leading dimension m), qc ≥ k reflectors in `tau`.
        unsafe {
            orgqr(
                &mi,
                &qi,
                &ki,
                c.as_mut_ptr(),
                &ld,
                tau.as_ptr(),
                work.as_mut_ptr(),
                &lw,
                &mut info,
            )
        };
        if info < 0 {
            return Err(failed("qr", "orgqr/ungqr", info));
        }
        for i in 0..m {
            for j in 0..qc {
                q[i * qc + j] = c[j * m + i];
            }
        }
    }
    let reflected: Vec<bool> = tau.iter().map(|t| t.to_parts() != (0.0, 0.0)).collect();
    qr_conventions(&mut q, &mut r_out, [m, qc], n, &reflected);
    out[..m * qc].copy_from_slice(&q);
    out[m * qc..].copy_from_slice(&r_out);
    Ok(())
}

/// Whether the lower triangle of `a [n, n]` (what `eigh` reads) holds a NaN or an infinity:
/// then there are no eigenvalues, and `?syevd`/`?heevd` may return NaN or not depending on
/// where its iterations stop, so every entry is NaN, as the reference gives.
pub(super) fn unreadable_lower<T: Element>(a: &[T], n: usize, out: &mut [T]) -> bool {
    let unreadable = (0..n).any(|i| {
        (0..=i).any(|j| {
            let (re, im) = a[i * n + j].to_parts();
            !re.is_finite() || !im.is_finite()
        })
    });
    if unreadable {
        out.fill(T::from_parts(f64::NAN, f64::NAN));
    }
    unreadable
}

fn eigh<T: LapackFloat>(r: &Routines<T>, a: &[T], n: usize, out: &mut [T]) -> Result<()> {
    if n == 0 || unreadable_lower(a, n, out) {
        return Ok(());
    }
    let (w, v) = out.split_at_mut(n);
    let mut c = copied(a)?;
    let (ni, mut info) = (int("eigh", n)?, 0);
    let (mut size, mut isize) = (T::ZERO, 0 as c_int);
    // SAFETY: a workspace query writes only the sizes.
    unsafe {
        (r.syevd)(
            b"V".as_ptr().cast(),
            b"U".as_ptr().cast(),
            &ni,
            c.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            &mut size,
            &-1,
            &mut isize,
            &-1,
            &mut info,
            1,
            1,
        )
    };
    let lwork = size.to_f64().max(1.0) as usize;
    let liwork = usize::try_from(isize).unwrap_or(1).max(1);
    let mut work = scratch::<T>(lwork)?;
    let mut iwork = scratch::<c_int>(liwork)?;
    let (lw, liw) = (int("eigh", lwork)?, int("eigh", liwork)?);
    // SAFETY: `c` holds n·n entries, `w` n, the workspaces their queried sizes.
    unsafe {
        (r.syevd)(
            b"V".as_ptr().cast(),
            b"U".as_ptr().cast(),
            &ni,
            c.as_mut_ptr(),
            &ni,
            w.as_mut_ptr(),
            work.as_mut_ptr(),
            &lw,
            iwork.as_mut_ptr(),
            &liw,
            &mut info,
            1,
            1,
        )
    };
    if info < 0 {
        return Err(failed("eigh", "syevd", info));
    }
    if info > 0 {
        w.fill(T::from_f64(f64::NAN));
        v.fill(T::from_f64(f64::NAN));
        return Ok(());
    }
    // Eigenvectors come as the columns of a column-major matrix, each contiguous: one pass
    // puts them in Nx's order, turned by their sign, as the columns of a row-major one.
    let order = eigen_order(w);
    let values = w.to_vec();
    for (to, &from) in order.iter().enumerate() {
        w[to] = values[from];
        let column = &c[from * n..(from + 1) * n];
        let flip = largest_is_negative(column.iter().copied());
        for (i, &x) in column.iter().enumerate() {
            v[i * n + to] = if flip { T::from_f64(-x.to_f64()) } else { x };
        }
    }
    Ok(())
}

fn svd<T: LapackFloat>(
    r: &Routines<T>,
    a: &[T],
    m: usize,
    n: usize,
    full: bool,
    out: &mut [T],
) -> Result<()> {
    let k = m.min(n);
    let (uc, vr) = if full { (m, n) } else { (k, k) };
    if a.iter().any(|x| !x.to_f64().is_finite()) {
        // No singular values, as the reference says; `?gesdd` itself rejects a NaN entry as
        // an invalid argument.
        out.fill(T::from_f64(f64::NAN));
        return Ok(());
    }
    let (u, rest) = out.split_at_mut(m * uc);
    let (s, vt) = rest.split_at_mut(k);
    if k == 0 {
        // No singular values: u and vt are identities (those that are not empty).
        u.fill(T::ZERO);
        vt.fill(T::ZERO);
        for i in 0..uc.min(m) {
            u[i * uc + i] = T::ONE;
        }
        for i in 0..vr.min(n) {
            vt[i * n + i] = T::ONE;
        }
        return Ok(());
    }
    let mut c = column_major(a, m, n, n)?;
    let mut ucm = scratch::<T>(m * uc)?;
    let mut vtcm = scratch::<T>(vr * n)?;
    let mut iwork = scratch::<c_int>(8 * k)?;
    let job = if full { b"A" } else { b"S" };
    let (mi, ni, ldvt, mut info) = (int("svd", m)?, int("svd", n)?, int("svd", vr)?, 0);
    let lwork = workspace::<T>(|w, l| {
        // SAFETY: a workspace query writes only the size.
        unsafe {
            (r.gesdd)(
                job.as_ptr().cast(),
                &mi,
                &ni,
                c.as_mut_ptr(),
                &mi,
                s.as_mut_ptr(),
                ucm.as_mut_ptr(),
                &mi,
                vtcm.as_mut_ptr(),
                &ldvt,
                w,
                l,
                iwork.as_mut_ptr(),
                &mut info,
                1,
            )
        }
    });
    let mut work = scratch::<T>(lwork)?;
    let lw = int("svd", lwork)?;
    // SAFETY: `c` holds m·n entries (leading dimension m), `s` k, `ucm` m·uc (leading m),
    // `vtcm` vr·n (leading vr), `work` lwork, `iwork` 8k, as gesdd asks.
    unsafe {
        (r.gesdd)(
            job.as_ptr().cast(),
            &mi,
            &ni,
            c.as_mut_ptr(),
            &mi,
            s.as_mut_ptr(),
            ucm.as_mut_ptr(),
            &mi,
            vtcm.as_mut_ptr(),
            &ldvt,
            work.as_mut_ptr(),
            &lw,
            iwork.as_mut_ptr(),
            &mut info,
            1,
        )
    };
    if info < 0 {
        return Err(failed("svd", "gesdd", info));
    }
    if info > 0 {
        for x in u.iter_mut().chain(s.iter_mut()).chain(vt.iter_mut()) {
            *x = T::from_f64(f64::NAN);
        }
        return Ok(());
    }
    for i in 0..m {
        for j in 0..uc {
            u[i * uc + j] = ucm[j * m + i];
        }
    }
    for i in 0..vr {
        for j in 0..n {
            vt[i * n + j] = vtcm[j * vr + i];
        }
    }
    svd_signs(u, vt, [m, uc], [vr, n]);
    Ok(())
}
