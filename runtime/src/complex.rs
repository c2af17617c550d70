//! `Complex`: the element of c64 and c128 as plain data (two floats, real part first, as Nx,
//! NumPy, C and CUDA lay them out), with its bytes. Its arithmetic and its place among the
//! elements are `complex_element.rs`.

/// A complex number: `re + im·i`. `c64` holds two f32s, `c128` two f64s.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, PartialOrd)]
pub struct Complex<R> {
    /// The real part.
    pub re: R,
    /// The imaginary part.
    pub im: R,
}

/// The parts of `z` in memory order, `[re0, im0, re1, im1, ...]`: a complex matrix read as
/// a real one with twice the columns.
pub(crate) fn interleaved<R: Copy>(z: &[Complex<R>]) -> &[R] {
    // SAFETY: `Complex<R>` is `repr(C)` with two fields of type `R`, so it has `R`'s alignment,
    // no padding, and the size of two `R`s; the slice covers exactly `2 * z.len()` of them.
    unsafe { std::slice::from_raw_parts(z.as_ptr().cast::<R>(), z.len() * 2) }
}

/// A `c64` element.
pub type Complex32 = Complex<f32>;
/// A `c128` element.
pub type Complex64 = Complex<f64>;

impl<R> Complex<R> {
    /// `re + im·i`.
    pub const fn new(re: R, im: R) -> Self {
        Complex { re, im }
    }
}

macro_rules! complex_bytes {
    ($r:ty) => {
        impl Complex<$r> {
            /// The little-endian bytes: the real part's, then the imaginary part's.
            pub fn to_le_bytes(self) -> [u8; 2 * std::mem::size_of::<$r>()] {
                let mut out = [0u8; 2 * std::mem::size_of::<$r>()];
                let (re, im) = out.split_at_mut(std::mem::size_of::<$r>());
                re.copy_from_slice(&self.re.to_le_bytes());
                im.copy_from_slice(&self.im.to_le_bytes());
                out
            }

            /// From little-endian bytes (the real part's first).
            pub fn from_le_bytes(raw: [u8; 2 * std::mem::size_of::<$r>()]) -> Self {
                Self::from_halves(raw, <$r>::from_le_bytes)
            }

            /// From big-endian bytes (each part big-endian, the real part first, as NumPy's
            /// `>c8` is).
            pub fn from_be_bytes(raw: [u8; 2 * std::mem::size_of::<$r>()]) -> Self {
                Self::from_halves(raw, <$r>::from_be_bytes)
            }

            fn from_halves(
                raw: [u8; 2 * std::mem::size_of::<$r>()],
                part: fn([u8; std::mem::size_of::<$r>()]) -> $r,
            ) -> Self {
                let mut re = [0u8; std::mem::size_of::<$r>()];
                let mut im = [0u8; std::mem::size_of::<$r>()];
                re.copy_from_slice(&raw[..std::mem::size_of::<$r>()]);
                im.copy_from_slice(&raw[std::mem::size_of::<$r>()..]);
                Complex::new(part(re), part(im))
            }
        }
    };
}

complex_bytes!(f32);
complex_bytes!(f64);
