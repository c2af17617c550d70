//! cuBLAS, opened from a file of either major (`libcublas.so.12` or `.13`): the products of
//! `dot`. Bound here rather than through cudarc, whose loader is fixed to one major's names;
//! the calls used (`cublasCreate_v2`, `cublas[SD]gemm_v2`, `cublas[SD]gemmStridedBatched`, ...)
//! keep their signatures in cuBLAS 12 and 13.

use std::ffi::{c_int, c_void};
use std::path::PathBuf;

use libloading::Library;

use super::libraries::{static_text, Loaded};

type Handle = *mut c_void;
type Status = c_int;
/// `cublasOperation_t`: `CUBLAS_OP_N` is 0 in every version.
const OP_N: c_int = 0;

type Create = unsafe extern "C" fn(*mut Handle) -> Status;
type Destroy = unsafe extern "C" fn(Handle) -> Status;
type SetStream = unsafe extern "C" fn(Handle, *mut c_void) -> Status;
type GetProperty = unsafe extern "C" fn(c_int, *mut c_int) -> Status;
type StatusString = unsafe extern "C" fn(Status) -> *const std::ffi::c_char;
type Gemm<F> = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const F,
    *const F,
    c_int,
    *const F,
    c_int,
    *const F,
    *mut F,
    c_int,
) -> Status;
type GemmBatched<F> = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const F,
    *const F,
    c_int,
    i64,
    *const F,
    c_int,
    i64,
    *const F,
    *mut F,
    c_int,
    i64,
    c_int,
) -> Status;

/// One cuBLAS library, opened.
pub struct Blas {
    /// Its version, `(major, minor, patch)`.
    pub version: (i32, i32, i32),
    /// The file it was loaded from.
    pub path: PathBuf,
    create: Create,
    destroy: Destroy,
    set_stream: SetStream,
    status_string: Option<StatusString>,
    sgemm: Gemm<f32>,
    dgemm: Gemm<f64>,
    sgemm_batched: GemmBatched<f32>,
    dgemm_batched: GemmBatched<f64>,
    // Kept last: the function pointers above point into it.
    _library: Library,
}

impl Blas {
    /// Binds the calls of a loaded cuBLAS; an error names the missing call.
    pub(crate) fn bind(loaded: Loaded) -> std::result::Result<Blas, String> {
        // SAFETY: each type above is the call's C signature in cuBLAS 12 and 13; the library
        // outlives the pointers (kept in the same struct).
        unsafe {
            let property: GetProperty = loaded.symbol("cublasGetProperty")?;
            let mut version = [0; 3];
            for (kind, slot) in version.iter_mut().enumerate() {
                // libraryPropertyType: MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2.
                property(kind as c_int, slot);
            }
            Ok(Blas {
                version: (version[0], version[1], version[2]),
                path: loaded.path.clone(),
                create: loaded.symbol("cublasCreate_v2")?,
                destroy: loaded.symbol("cublasDestroy_v2")?,
                set_stream: loaded.symbol("cublasSetStream_v2")?,
                // Absent before cuBLAS 11.4, so optional.
                status_string: loaded.symbol("cublasGetStatusString").ok(),
                sgemm: loaded.symbol("cublasSgemm_v2")?,
                dgemm: loaded.symbol("cublasDgemm_v2")?,
                sgemm_batched: loaded.symbol("cublasSgemmStridedBatched")?,
                dgemm_batched: loaded.symbol("cublasDgemmStridedBatched")?,
                _library: loaded.library,
            })
        }
    }

    /// `"cuBLAS 13.0.2"`.
    pub fn describe(&self) -> String {
        let (a, b, c) = self.version;
        format!("cuBLAS {a}.{b}.{c}")
    }

    fn check(&self, status: Status) -> std::result::Result<(), String> {
        if status == 0 {
            return Ok(());
        }
        let text = self
            .status_string
            // SAFETY: cuBLAS returns a static string for every status.
            .and_then(|f| unsafe { static_text(f(status)) })
            .unwrap_or_else(|| format!("status {status}"));
        Err(format!("{}: {text}", self.describe()))
    }

    /// A handle whose work goes to `stream` (a `CUstream`). The device's context must be
    /// current on this thread.
    pub(crate) fn handle(
        &'static self,
        stream: *mut c_void,
    ) -> std::result::Result<BlasHandle, String> {
        let mut raw: Handle = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the caller made the context current.
        self.check(unsafe { (self.create)(&mut raw) })?;
        let handle = BlasHandle { raw, blas: self };
        // SAFETY: a live handle and the caller's live stream.
        self.check(unsafe { (self.set_stream)(raw, stream) })?;
        Ok(handle)
    }
}

/// A cuBLAS handle bound to one device's stream.
pub(crate) struct BlasHandle {
    raw: Handle,
    blas: &'static Blas,
}

// SAFETY: the handle is only used with its device's context made current first, and cuBLAS
// allows a handle on any thread as long as calls are not concurrent: the device's one stream
// and the handle's mutex in `device.rs` serialise them.
unsafe impl Send for BlasHandle {}
// SAFETY: as above.
unsafe impl Sync for BlasHandle {}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // SAFETY: made by `cublasCreate_v2`, destroyed once.
        unsafe { (self.blas.destroy)(self.raw) };
    }
}

/// The shape of one column-major product (cuBLAS's order).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GemmShape {
    pub(crate) m: c_int,
    pub(crate) n: c_int,
    pub(crate) k: c_int,
    pub(crate) lda: c_int,
    pub(crate) ldb: c_int,
    pub(crate) ldc: c_int,
    /// Matrices, with the distance between consecutive ones (elements).
    pub(crate) batch: c_int,
    pub(crate) stride_a: i64,
    pub(crate) stride_b: i64,
    pub(crate) stride_c: i64,
}

/// The element types cuBLAS multiplies here.
pub(crate) trait BlasFloat: Copy {
    /// `C = A·B` (column-major, no transposes), one matrix or a strided batch.
    ///
    /// # Safety
    /// `a`, `b` and `c` are device pointers of the current context holding the matrices
    /// `shape` describes.
    unsafe fn gemm(
        handle: &BlasHandle,
        shape: GemmShape,
        a: *const Self,
        b: *const Self,
        c: *mut Self,
    ) -> std::result::Result<(), String>;
}

/// `BlasFloat` for one type through its cuBLAS calls (`S` or `D`).
macro_rules! blas_float {
    ($t:ty, $gemm:ident, $batched:ident) => {
        impl BlasFloat for $t {
            unsafe fn gemm(
                h: &BlasHandle,
                s: GemmShape,
                a: *const $t,
                b: *const $t,
                c: *mut $t,
            ) -> std::result::Result<(), String> {
                let (one, zero): ($t, $t) = (1.0, 0.0);
                // SAFETY: the caller's promise about the pointers; `h` is a live handle.
                let status = unsafe {
                    if s.batch == 1 {
                        (h.blas.$gemm)(
                            h.raw, OP_N, OP_N, s.m, s.n, s.k, &one, a, s.lda, b, s.ldb, &zero, c,
                            s.ldc,
                        )
                    } else {
                        (h.blas.$batched)(
                            h.raw, OP_N, OP_N, s.m, s.n, s.k, &one, a, s.lda, s.stride_a, b, s.ldb,
                            s.stride_b, &zero, c, s.ldc, s.stride_c, s.batch,
                        )
                    }
                };
                h.blas.check(status)
            }
        }
    };
}

blas_float!(f32, sgemm, sgemm_batched);
blas_float!(f64, dgemm, dgemm_batched);
