//! Host memory that can outlive the process that allocated it: an anonymous shared-memory file
//! (`memfd`) mapped into this process. A notebook's evaluation process allocates large host
//! tensors here; the kernel keeps a descriptor to the file of every tensor bound to a variable
//! (see [`crate::keep`]), so when the process dies the bytes stay, and the next process maps the
//! same file again: nothing is copied, and the memory goes when the last mapping and the last
//! descriptor are gone.
//!
//! Shared memory is used in the evaluation process (see
//! [`crate::settings::shared_host_memory`]); elsewhere host buffers are ordinary heap vectors.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

/// Host buffers from this size on are allocated in shared memory; smaller ones are copied there
/// only when a variable that holds them is kept (a copy that costs microseconds).
pub const FROM_BYTES: usize = 1 << 20;

/// Mappings from this size on are offered transparent huge pages.
const HUGE_FROM: usize = 2 << 20;

/// One shared-memory file, mapped read-write into this process.
pub struct Region {
    ptr: NonNull<u8>,
    bytes: usize,
    file: OwnedFd,
    /// Set once another process (the kernel) holds the file: from then on its bytes are a
    /// variable's value that a restarted process may map again, so they are never reused.
    pinned: AtomicBool,
}

// SAFETY: the mapping is plain memory owned by this value; access to its bytes is governed by
// the `HostVec` that owns the region (shared reads, exclusive writes through `&mut`).
unsafe impl Send for Region {}
// SAFETY: as above; `&Region` only reads the pointer, the size and the atomic flag.
unsafe impl Sync for Region {}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("bytes", &self.bytes)
            .field("pinned", &self.is_pinned())
            .finish()
    }
}

impl Region {
    /// A new zero-filled file of `bytes` (at least one), mapped. Its pages are allocated on first
    /// touch, as an anonymous mapping's are.
    pub fn create(bytes: usize) -> std::io::Result<Region> {
        let file = rustix::fs::memfd_create(
            "tensorbook-tensor",
            MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING,
        )?;
        // One byte at least: the mapping below is never empty, and all of it is backed.
        rustix::fs::ftruncate(&file, bytes.max(1) as u64)?;
        // A mapped file that shrinks turns reads into SIGBUS: nobody may shrink this one.
        rustix::fs::fcntl_add_seals(&file, SealFlags::SHRINK | SealFlags::SEAL)?;
        Region::map(file, bytes)
    }

    /// Maps a file another process created (a kept tensor handed back by the kernel). Its size
    /// must be at least `bytes`.
    pub fn open(file: OwnedFd, bytes: usize) -> std::io::Result<Region> {
        let size = rustix::fs::fstat(&file)?.st_size;
        if u64::try_from(size).map_or(true, |size| size < bytes as u64) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the shared memory holds {size} bytes, not the {bytes} expected"),
            ));
        }
        let region = Region::map(file, bytes)?;
        region.pin();
        Ok(region)
    }

    fn map(file: OwnedFd, bytes: usize) -> std::io::Result<Region> {
        let len = bytes.max(1);
        // SAFETY: a new shared mapping of a file this value owns, placed where the system
        // chooses; nothing else refers to that address range.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &file,
                0,
            )?
        };
        if len >= HUGE_FROM {
            // Where the system lets shared memory have transparent huge pages on request
            // (`shmem_enabled` = `advise`), streaming reads and first touches cost what they do
            // on the heap; elsewhere (`never`, the usual default) this is refused and ignored.
            // SAFETY: advice on the mapping just made; it changes no contents.
            let _ = unsafe { rustix::mm::madvise(ptr, len, rustix::mm::Advice::LinuxHugepage) };
        }
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| std::io::Error::other("mmap returned a null address"))?;
        Ok(Region {
            ptr,
            bytes: len,
            file,
            pinned: AtomicBool::new(false),
        })
    }

    /// The first byte (page-aligned).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The mapped size.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The shared-memory file, to hand to another process.
    pub fn file(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    /// Marks the bytes as held by another process (see [`Region::is_pinned`]).
    pub fn pin(&self) {
        self.pinned.store(true, Ordering::Release);
    }

    /// True once another process holds the file.
    pub fn is_pinned(&self) -> bool {
        self.pinned.load(Ordering::Acquire)
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the range is the mapping made in `map`, and the owner of this value (a
        // `HostVec`) no longer lends out references into it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.bytes) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_is_zeroed_writable_and_reopened_with_the_same_bytes() {
        let region = Region::create(3 * 4096 + 5).unwrap();
        // SAFETY: the region is mapped read-write for its whole size.
        let bytes = unsafe { std::slice::from_raw_parts_mut(region.as_ptr(), region.bytes()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes[4096] = 7;
        let again = Region::open(region.file().try_clone_to_owned().unwrap(), 4097).unwrap();
        drop(region);
        // SAFETY: as above.
        let seen = unsafe { std::slice::from_raw_parts(again.as_ptr(), again.bytes()) };
        assert_eq!(seen[4096], 7);
        assert!(again.is_pinned());
    }

    #[test]
    fn a_file_smaller_than_claimed_is_refused() {
        let region = Region::create(100).unwrap();
        let e = Region::open(region.file().try_clone_to_owned().unwrap(), 1 << 20).unwrap_err();
        assert!(
            e.to_string().contains("holds 100 bytes, not the 1048576"),
            "{e}"
        );
    }
}
