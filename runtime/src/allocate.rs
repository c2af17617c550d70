//! Host allocation: every host buffer a tensor gets is reserved here, against the memory
//! limit ([`crate::host_memory`]) and the pool of freed buffers ([`crate::buffer_pool`]), so that
//! running out of memory is an `Error::Allocation` naming the request, never an abort.

use crate::buffer::with_buffer;
use crate::buffer::with_dtype;
use crate::buffer::{Buffer, HostVec};
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};

/// Reserves room for `len` elements (length 0) without aborting when memory runs out: an
/// impossible size, or one above what this machine can give (see [`crate::host_memory`]),
/// comes back as `Error::Allocation` naming the request, before any page is touched. Callers
/// that fill the vector in parallel use this directly, so the first touch of each page happens
/// in parallel.
pub fn try_reserve<T: Element>(len: usize, shape: &[usize]) -> Result<HostVec<T>> {
    let refused = |reason: String| Error::Allocation {
        shape: shape.to_vec(),
        dtype: T::DTYPE,
        bytes: (len as u128) * (T::DTYPE.size_in_bytes() as u128),
        reason,
    };
    let bytes = len
        .checked_mul(T::DTYPE.size_in_bytes())
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or_else(|| refused("larger than any address space".into()))?;
    heap_padding::once();
    if let Some(v) = crate::buffer_pool::take::<T>(len) {
        return Ok(v);
    }
    if crate::host_memory::admit(bytes).is_err() {
        // Kept buffers count as used memory; give them back before refusing.
        crate::buffer_pool::release();
        crate::host_memory::admit(bytes).map_err(refused)?;
    }
    if bytes >= crate::shared_memory::FROM_BYTES && crate::settings::shared_host_memory() {
        // Out of descriptors (or memfd refused): heap memory still computes; keeping the
        // tensor through a restart then costs one copy.
        if let Ok(v) = HostVec::shared(len) {
            return Ok(v);
        }
    }
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|e| refused(format!("the system refused it ({e})")))?;
    huge_pages::advise(v.as_mut_ptr().cast(), bytes);
    Ok(HostVec::from(v))
}

/// glibc keeps freed memory at the top of its heaps for reuse instead of handing it back to
/// the system and faulting it in again. By default it keeps 128 KiB: a CNN training step's
/// activations below [`crate::buffer_pool::FROM_BYTES`] (a `[256, 16, 7, 7]` f32 tensor is
/// 800 KB) and the convolutions' panels went back to the system between ops and were paged in
/// again, zeroed by the kernel, on their next use: `bench conv` (30 runs) took 20,600 page
/// faults, 40,600 once the bias gradients stopped making one transposed copy a step. With
/// 16 MiB kept per heap (a heap per thread that allocates), set once before the first host
/// buffer: 8,600 either way, and a smaller peak resident size (52.8 against 57.7 MB).
mod heap_padding {
    /// The most free memory a heap keeps at its top.
    const TOP_PAD: usize = 16 << 20;
    /// Blocks from this size on are mapped for themselves (glibc's largest threshold). Setting
    /// any of these fixes glibc's threshold, which otherwise follows the largest mapped block
    /// freed; left at its 128 KiB start, every block between it and the pool's 1 MiB was a
    /// fresh mapping (20,000 faults with the padding alone).
    const MMAP_THRESHOLD: usize = 32 << 20;

    pub fn once() {
        static DONE: std::sync::Once = std::sync::Once::new();
        DONE.call_once(set);
    }

    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn set() {
        const M_TOP_PAD: std::ffi::c_int = -2;
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        // SAFETY: mallopt only changes glibc's allocation policy; a refusal returns 0, and the
        // defaults stay, which only costs page faults.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD as std::ffi::c_int);
            mallopt(M_TOP_PAD, TOP_PAD as std::ffi::c_int);
        }
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    fn set() {}
}

/// Transparent huge pages for large buffers. A fresh buffer is paged in as it is first
/// written; in 4 KiB pages a 40 MB output takes ten thousand page faults, which cost an
/// elementwise op on ten million elements more than its arithmetic. Where the system leaves
/// huge pages to the program (`madvise` mode, Linux's default), asking for them before the
/// first touch makes that about twenty 2 MiB faults.
mod huge_pages {
    /// Buffers from this size on are advised (smaller ones hold few whole huge pages).
    const FROM: usize = 8 << 20;
    const PAGE: usize = 4096;

    #[cfg(target_os = "linux")]
    pub fn advise(ptr: *mut u8, bytes: usize) {
        const MADV_HUGEPAGE: std::ffi::c_int = 14;
        extern "C" {
            fn madvise(
                addr: *mut std::ffi::c_void,
                len: usize,
                advice: std::ffi::c_int,
            ) -> std::ffi::c_int;
        }
        if bytes < FROM {
            return;
        }
        // madvise wants a page-aligned start; the allocation's first partial page is left as
        // it is.
        let address = ptr as usize;
        let (Some(start), Some(end)) = (
            address.checked_next_multiple_of(PAGE),
            address.checked_add(bytes).map(|end| end & !(PAGE - 1)),
        ) else {
            return;
        };
        if end > start {
            // SAFETY: the range lies inside an allocation this thread owns and has not touched;
            // MADV_HUGEPAGE is advice about how to back it, it changes no contents and no
            // mapping, and a refusal (THP off) only returns an error, which is ignored.
            unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn advise(_ptr: *mut u8, _bytes: usize) {}
}

/// Allocates a vector of `len` copies of `fill`, with the same errors as [`try_reserve`].
pub fn try_alloc<T: Element>(len: usize, fill: T, shape: &[usize]) -> Result<HostVec<T>> {
    let mut v = try_reserve(len, shape)?;
    v.resize(len, fill);
    Ok(v)
}

/// The number of elements of a shape after [`crate::shape::check_shape`], or its error.
pub fn checked_len(shape: &[usize], dtype: DType) -> Result<usize> {
    crate::shape::check_shape("create", shape, dtype)?;
    Ok(crate::shape::numel(shape))
}

/// Host elements as an owned buffer: moved when already owned, otherwise copied with the
/// checks of [`try_reserve`] (what a copy through host memory uploads).
pub fn owned(host: std::borrow::Cow<'_, Buffer>) -> Result<Buffer> {
    match host {
        std::borrow::Cow::Borrowed(b) => b.try_clone(),
        std::borrow::Cow::Owned(b) => Ok(b),
    }
}

impl Buffer {
    /// A buffer of `len` copies of `value` (converted from f64) of the given dtype.
    pub fn filled(dtype: DType, len: usize, value: f64, shape: &[usize]) -> Result<Buffer> {
        with_dtype!(dtype, T => Ok(T::into_buffer(try_alloc(len, T::from_f64(value), shape)?)))
    }

    /// A new buffer holding the elements at `indices`, in that order: the display reads only
    /// what it prints through this. An index past the end is an error, not a panic.
    pub fn gather(&self, indices: &[usize]) -> Result<Buffer> {
        let len = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= len) {
            return Err(Error::InvalidArgument {
                op: "gather",
                message: format!("index {bad} is past the end of {len} elements"),
            });
        }
        with_buffer!(self, v => {
            let mut out = try_reserve(indices.len(), &[indices.len()])?;
            out.extend(indices.iter().map(|&i| v[i]));
            Ok(Element::into_buffer(out))
        })
    }

    /// A copy, allocated with the same checks as [`try_reserve`] (a plain `clone` aborts the
    /// process when memory runs out).
    pub fn try_clone(&self) -> Result<Buffer> {
        with_buffer!(self, v => {
            let mut out = try_reserve(v.len(), &[v.len()])?;
            out.extend_from_slice(v);
            Ok(Element::into_buffer(out))
        })
    }
}
