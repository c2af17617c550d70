//! `CudaBuffer`: a tensor's elements in one GPU's memory, one variant per dtype. Dropping it
//! frees the memory (stream-ordered, so work still reading it finishes first).

use std::fmt;

use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

use crate::buffer::Buffer;
use crate::complex::{Complex32, Complex64};
use crate::dtype::DType;
use crate::element::Element;

/// Typed device memory.
pub(crate) enum CudaData {
    U8(CudaSlice<u8>),
    U16(CudaSlice<u16>),
    U32(CudaSlice<u32>),
    U64(CudaSlice<u64>),
    S8(CudaSlice<i8>),
    S16(CudaSlice<i16>),
    S32(CudaSlice<i32>),
    S64(CudaSlice<i64>),
    BF16(CudaSlice<half::bf16>),
    F16(CudaSlice<half::f16>),
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    C64(CudaSlice<Complex32>),
    C128(CudaSlice<Complex64>),
}

/// Elements on the cuda device `ordinal`. `len` may be less than the allocation: an empty
/// tensor still holds one element of device memory (the driver refuses zero-byte requests).
pub struct CudaBuffer {
    pub(crate) ordinal: usize,
    pub(crate) len: usize,
    pub(crate) data: CudaData,
}

impl CudaBuffer {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match &self.data {
            CudaData::U8(_) => DType::U8,
            CudaData::U16(_) => DType::U16,
            CudaData::U32(_) => DType::U32,
            CudaData::U64(_) => DType::U64,
            CudaData::S8(_) => DType::S8,
            CudaData::S16(_) => DType::S16,
            CudaData::S32(_) => DType::S32,
            CudaData::S64(_) => DType::S64,
            CudaData::BF16(_) => DType::BF16,
            CudaData::F16(_) => DType::F16,
            CudaData::F32(_) => DType::F32,
            CudaData::F64(_) => DType::F64,
            CudaData::C64(_) => DType::C64,
            CudaData::C128(_) => DType::C128,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The device ordinal (`cuda:N`).
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
}

impl fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CudaBuffer(cuda:{}, {} x {})",
            self.ordinal,
            self.dtype(),
            self.len()
        )
    }
}

/// The element types the cuda backend stores: ties a Rust type to its `CudaData` variant.
pub(crate) trait CudaElement: Element + DeviceRepr + ValidAsZeroBits + Unpin {
    fn wrap(slice: CudaSlice<Self>) -> CudaData;
    fn slice(data: &CudaData) -> Option<&CudaSlice<Self>>;
    fn host(buffer: &Buffer) -> Option<&[Self]>;
}

macro_rules! cuda_element {
    ($t:ty, $variant:ident) => {
        impl CudaElement for $t {
            fn wrap(slice: CudaSlice<Self>) -> CudaData {
                CudaData::$variant(slice)
            }
            fn slice(data: &CudaData) -> Option<&CudaSlice<Self>> {
                match data {
                    CudaData::$variant(s) => Some(s),
                    _ => None,
                }
            }
            fn host(buffer: &Buffer) -> Option<&[Self]> {
                match buffer {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}

cuda_element!(u8, U8);
cuda_element!(u16, U16);
cuda_element!(u32, U32);
cuda_element!(u64, U64);
cuda_element!(i8, S8);
cuda_element!(i16, S16);
cuda_element!(i32, S32);
cuda_element!(i64, S64);
cuda_element!(half::bf16, BF16);
cuda_element!(half::f16, F16);
cuda_element!(f32, F32);
cuda_element!(f64, F64);
cuda_element!(Complex32, C64);
cuda_element!(Complex64, C128);

// SAFETY: `Complex` is `repr(C)`, two floats and no padding: the layout of CUDA's
// `cuComplex`/`cuDoubleComplex`, and all-zero bits are 0+0i.
unsafe impl DeviceRepr for Complex32 {}
unsafe impl ValidAsZeroBits for Complex32 {}
unsafe impl DeviceRepr for Complex64 {}
unsafe impl ValidAsZeroBits for Complex64 {}
