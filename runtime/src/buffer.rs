//! `Buffer`: the elements of a tensor in host memory, one variant per dtype. Backends that run on
//! the CPU (binary, host) compute on buffers directly; a device backend uploads and downloads them.

use crate::dtype::DType;
pub use crate::host_vec::HostVec;

/// Contiguous, row-major elements of one dtype.
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    /// `u8` elements.
    U8(HostVec<u8>),
    /// `u16` elements.
    U16(HostVec<u16>),
    /// `u32` elements.
    U32(HostVec<u32>),
    /// `u64` elements.
    U64(HostVec<u64>),
    /// `s8` elements.
    S8(HostVec<i8>),
    /// `s16` elements.
    S16(HostVec<i16>),
    /// `s32` elements.
    S32(HostVec<i32>),
    /// `s64` elements.
    S64(HostVec<i64>),
    /// `bf16` elements.
    BF16(HostVec<half::bf16>),
    /// `f16` elements.
    F16(HostVec<half::f16>),
    /// `f32` elements.
    F32(HostVec<f32>),
    /// `f64` elements.
    F64(HostVec<f64>),
    /// `c64` elements.
    C64(HostVec<crate::complex::Complex32>),
    /// `c128` elements.
    C128(HostVec<crate::complex::Complex64>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a buffer, whatever its dtype.
macro_rules! with_buffer {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::buffer::Buffer::U8($v) => $body,
            $crate::buffer::Buffer::U16($v) => $body,
            $crate::buffer::Buffer::U32($v) => $body,
            $crate::buffer::Buffer::U64($v) => $body,
            $crate::buffer::Buffer::S8($v) => $body,
            $crate::buffer::Buffer::S16($v) => $body,
            $crate::buffer::Buffer::S32($v) => $body,
            $crate::buffer::Buffer::S64($v) => $body,
            $crate::buffer::Buffer::BF16($v) => $body,
            $crate::buffer::Buffer::F16($v) => $body,
            $crate::buffer::Buffer::F32($v) => $body,
            $crate::buffer::Buffer::F64($v) => $body,
            $crate::buffer::Buffer::C64($v) => $body,
            $crate::buffer::Buffer::C128($v) => $body,
        }
    };
}

/// Runs `$body` with the type alias `$t` set to the Rust type of a dtype.
macro_rules! with_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::U8 => {
                type $t = u8;
                $body
            }
            $crate::dtype::DType::U16 => {
                type $t = u16;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $t = u32;
                $body
            }
            $crate::dtype::DType::U64 => {
                type $t = u64;
                $body
            }
            $crate::dtype::DType::S8 => {
                type $t = i8;
                $body
            }
            $crate::dtype::DType::S16 => {
                type $t = i16;
                $body
            }
            $crate::dtype::DType::S32 => {
                type $t = i32;
                $body
            }
            $crate::dtype::DType::S64 => {
                type $t = i64;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $t = ::half::bf16;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $t = ::half::f16;
                $body
            }
            $crate::dtype::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::dtype::DType::C64 => {
                type $t = $crate::complex::Complex32;
                $body
            }
            $crate::dtype::DType::C128 => {
                type $t = $crate::complex::Complex64;
                $body
            }
        }
    };
}
pub(crate) use {with_buffer, with_dtype};

impl Buffer {
    /// The dtype of the elements.
    pub fn dtype(&self) -> DType {
        match self {
            Buffer::U8(_) => DType::U8,
            Buffer::U16(_) => DType::U16,
            Buffer::U32(_) => DType::U32,
            Buffer::U64(_) => DType::U64,
            Buffer::S8(_) => DType::S8,
            Buffer::S16(_) => DType::S16,
            Buffer::S32(_) => DType::S32,
            Buffer::S64(_) => DType::S64,
            Buffer::BF16(_) => DType::BF16,
            Buffer::F16(_) => DType::F16,
            Buffer::F32(_) => DType::F32,
            Buffer::F64(_) => DType::F64,
            Buffer::C64(_) => DType::C64,
            Buffer::C128(_) => DType::C128,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        with_buffer!(self, v => v.len())
    }

    /// The shared memory holding the elements, if they are in shared memory.
    pub fn region(&self) -> Option<&crate::shared_memory::Region> {
        with_buffer!(self, v => v.region())
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements as little-endian bytes.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            Buffer::U8(v) => v.to_vec(),
            other => with_buffer!(other, v => v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        }
    }
}
