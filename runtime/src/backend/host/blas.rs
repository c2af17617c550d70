//! The system BLAS for host's large f32/f64 products, loaded at run time.
//!
//! Host's own packed GEMM (`super::packed_gemm`) takes large products where the CPU has AVX2
//! and FMA; the system BLAS serves CPUs without them, and any library `TENSORBOOK_BLAS` names.
//! Measured on the 2-core AVX2 EPYC the project runs on, 2048³ f32: the `gemm` crate reached
//! about 120 GFLOP/s, Debian's OpenBLAS 0.3.21 (`libopenblas0-pthread`, which
//! `install/setup.sh` installs) about 180, BLIS (`libblis4-pthread`, the second choice) 179.
//! Neither library is a build dependency: it is opened with `dlopen` on first use, as `cudarc`
//! opens CUDA, and when none loads (or `TENSORBOOK_BLAS=none`) host keeps the `gemm` crate.

use std::ffi::{c_int, c_void};
use std::sync::OnceLock;

use libloading::Library;

use crate::complex::Complex;
use crate::element::Element;
use crate::settings::{self, HostBlas};

/// CBLAS's row-major layout and no-transpose flags.
const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;

/// Libraries tried in order when `TENSORBOOK_BLAS` is not set.
const CANDIDATES: [&str; 4] = [
    "libopenblas.so.0",
    "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
    "libblis.so.4",
    "/usr/lib/x86_64-linux-gnu/blis-pthread/libblis.so.4",
];

/// CBLAS's `?gemm`: layout, transposes, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc.
type Gemm<T> = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    T,
    *const T,
    c_int,
    *const T,
    c_int,
    T,
    *mut T,
    c_int,
);

/// CBLAS's `cgemm`/`zgemm`: as [`Gemm`], with alpha and beta passed by address.
type ComplexGemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    *const c_void,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
);

/// An opened BLAS: its GEMMs and the name it was opened by.
pub(super) struct Blas {
    sgemm: Gemm<f32>,
    dgemm: Gemm<f64>,
    /// `cblas_cgemm` and `cblas_zgemm`, where the library has them.
    cgemm: Option<ComplexGemm>,
    zgemm: Option<ComplexGemm>,
    /// What was opened (for `tensorbook bench`'s header).
    pub(super) name: String,
    /// Keeps the symbols above valid.
    _library: Library,
}

fn open(name: &str) -> Option<Blas> {
    // SAFETY: loading a BLAS runs its initialisers, which only set up its thread pool and
    // CPU detection; the symbols have CBLAS's standard signatures.
    unsafe {
        let library = Library::new(name).ok()?;
        let sgemm = *library.get::<Gemm<f32>>(b"cblas_sgemm\0").ok()?;
        let dgemm = *library.get::<Gemm<f64>>(b"cblas_dgemm\0").ok()?;
        let cgemm = library
            .get::<ComplexGemm>(b"cblas_cgemm\0")
            .ok()
            .map(|f| *f);
        let zgemm = library
            .get::<ComplexGemm>(b"cblas_zgemm\0")
            .ok()
            .map(|f| *f);
        Some(Blas {
            sgemm,
            dgemm,
            cgemm,
            zgemm,
            name: name.to_string(),
            _library: library,
        })
    }
}

/// The BLAS host's large products go through, opened once per process: the library
/// `TENSORBOOK_BLAS` names, else (unless it says `none`) the first system BLAS that loads.
/// Host's own packed GEMM goes first where it runs (`super::packed_gemm_chosen`).
pub(super) fn blas() -> Option<&'static Blas> {
    static BLAS: OnceLock<Option<Blas>> = OnceLock::new();
    match choice() {
        HostBlas::Builtin => None,
        HostBlas::Library(name) => BLAS.get_or_init(|| open(name)).as_ref(),
        HostBlas::Default => system_blas(),
    }
}

/// `TENSORBOOK_BLAS`, read when host first multiplies matrices and kept for the process.
pub(super) fn choice() -> &'static HostBlas {
    static CHOICE: OnceLock<HostBlas> = OnceLock::new();
    CHOICE.get_or_init(settings::host_blas)
}

/// The first of the system's OpenBLAS or BLIS that loads, whatever host chose.
pub(super) fn system_blas() -> Option<&'static Blas> {
    static SYSTEM: OnceLock<Option<Blas>> = OnceLock::new();
    SYSTEM
        .get_or_init(|| CANDIDATES.iter().find_map(|name| open(name)))
        .as_ref()
}

/// The name of the BLAS host's large products go through, or `None` when they go through
/// host's own packed GEMM or the `gemm` crate.
pub fn library_name() -> Option<&'static str> {
    if packed_gemm_chosen() {
        return None;
    }
    blas().map(|b| b.name.as_str())
}

impl Blas {
    /// `out = a · b` for row-major `a: [m,k]`, `b: [k,n]`, `out: [m,n]`, when `T` is f32 or
    /// f64 and every dimension fits CBLAS's `int`; `false` (nothing written) otherwise.
    pub(super) fn gemm<T: Element>(
        &self,
        a: &[T],
        b: &[T],
        m: usize,
        k: usize,
        n: usize,
        out: &mut [T],
    ) -> bool {
        let (Ok(mi), Ok(ki), Ok(ni)) = (c_int::try_from(m), c_int::try_from(k), c_int::try_from(n))
        else {
            return false;
        };
        if a.len() < m * k || b.len() < k * n || out.len() < m * n {
            return false;
        }
        let id = std::any::TypeId::of::<T>();
        // SAFETY (both): T is the function's element type, so the types are the same.
        let f: Gemm<T> = if id == std::any::TypeId::of::<f32>() {
            unsafe { std::mem::transmute_copy(&self.sgemm) }
        } else if id == std::any::TypeId::of::<f64>() {
            unsafe { std::mem::transmute_copy(&self.dgemm) }
        } else {
            return false;
        };
        // SAFETY: the slices hold m·k, k·n and m·n elements (checked above), row-major with
        // leading dimensions k, n and n (at least 1, as CBLAS requires).
        unsafe {
            f(
                ROW_MAJOR,
                NO_TRANS,
                NO_TRANS,
                mi,
                ni,
                ki,
                T::ONE,
                a.as_ptr(),
                ki.max(1),
                b.as_ptr(),
                ni.max(1),
                T::ZERO,
                out.as_mut_ptr(),
                ni.max(1),
            );
        }
        true
    }
}

impl Blas {
    /// `out = a · b` for complex row-major matrices (`cgemm` for c64, `zgemm` for c128), when
    /// the library has the routine and every dimension fits CBLAS's `int`; `false` (nothing
    /// written) otherwise.
    pub(super) fn complex_gemm<R: Element>(
        &self,
        a: &[Complex<R>],
        b: &[Complex<R>],
        m: usize,
        k: usize,
        n: usize,
        out: &mut [Complex<R>],
    ) -> bool {
        let (Ok(mi), Ok(ki), Ok(ni)) = (c_int::try_from(m), c_int::try_from(k), c_int::try_from(n))
        else {
            return false;
        };
        if a.len() < m * k || b.len() < k * n || out.len() < m * n {
            return false;
        }
        let id = std::any::TypeId::of::<R>();
        let f = if id == std::any::TypeId::of::<f32>() {
            self.cgemm
        } else if id == std::any::TypeId::of::<f64>() {
            self.zgemm
        } else {
            None
        };
        let Some(f) = f else { return false };
        let (one, zero) = (
            Complex::new(R::ONE, R::ZERO),
            Complex::new(R::ZERO, R::ZERO),
        );
        // SAFETY: R is f32 for cgemm and f64 for zgemm (checked above), and `Complex<R>` is
        // two `R`s, real part first, as CBLAS's complex types; the slices hold m·k, k·n and
        // m·n elements, row-major with leading dimensions k, n and n (at least 1).
        unsafe {
            f(
                ROW_MAJOR,
                NO_TRANS,
                NO_TRANS,
                mi,
                ni,
                ki,
                (&one as *const Complex<R>).cast(),
                a.as_ptr().cast(),
                ki.max(1),
                b.as_ptr().cast(),
                ni.max(1),
                (&zero as *const Complex<R>).cast(),
                out.as_mut_ptr().cast(),
                ni.max(1),
            );
        }
        true
    }
}

/// Whether host's large products go through its own packed GEMM: the default where the CPU
/// has AVX2 and FMA, unless `TENSORBOOK_BLAS` names a library or `none`.
pub(super) fn packed_gemm_chosen() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        *choice() == crate::settings::HostBlas::Default && super::packed_gemm::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
