//! A file mapped read-only into memory: how `.safetensors` files are read without a copy of
//! the whole file (each tensor is copied once, from the page cache into its own memory).

use std::fs::File;
use std::path::Path;
use std::ptr::NonNull;

use rustix::mm::{MapFlags, ProtFlags};

use super::io_error;
use crate::error::Result;

/// The bytes of a file, mapped private and read-only until dropped. Another process shrinking
/// the file meanwhile makes reads past its new end fault (SIGBUS), as with every mapped reader;
/// a file that changes size between the open and the map is refused.
pub(crate) struct MappedFile {
    ptr: Option<NonNull<u8>>,
    len: usize,
}

impl MappedFile {
    pub(crate) fn open(path: &Path) -> Result<MappedFile> {
        let file = File::open(path).map_err(|e| io_error(path, e))?;
        let len = file.metadata().map_err(|e| io_error(path, e))?.len();
        let len = usize::try_from(len).map_err(|e| io_error(path, e))?;
        if len == 0 {
            return Ok(MappedFile { ptr: None, len: 0 });
        }
        // SAFETY: a new private read-only mapping of an open file, placed where the system
        // chooses; nothing else refers to that range, and it is unmapped once, on drop.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                &file,
                0,
            )
        }
        .map_err(|e| io_error(path, e))?;
        let mapped = MappedFile {
            ptr: NonNull::new(ptr.cast::<u8>()),
            len,
        };
        let now = std::fs::metadata(path)
            .map_err(|e| io_error(path, e))?
            .len();
        if now != len as u64 {
            return Err(io_error(path, "the file changed size while it was opened"));
        }
        Ok(mapped)
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self.ptr {
            // SAFETY: `len` readable bytes are mapped at `ptr` for as long as `self` lives.
            Some(ptr) => unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.len) },
            None => &[],
        }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        if let Some(ptr) = self.ptr {
            // SAFETY: the range mapped in `open`; `bytes()` borrows end before `self` drops.
            let _ = unsafe { rustix::mm::munmap(ptr.as_ptr().cast(), self.len) };
        }
    }
}
