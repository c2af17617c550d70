//! Plain values a restarted evaluation process gets back: numbers, `bool`, `char`, `String`
//! and vectors of numbers or bools, each encoded as text no larger than [`MAX_BYTES`].

/// The largest plain value kept, in bytes of memory: larger data belongs in a tensor, whose
/// memory is kept without a copy.
pub const MAX_BYTES: usize = 1 << 20;

/// A value that survives a restart of the evaluation process as text.
pub trait KeptValue: Sized + 'static {
    /// The bytes the value occupies (checked against [`MAX_BYTES`] before encoding).
    fn bytes(&self) -> usize;
    /// The value as text, exactly (floats by their bits).
    fn encode(&self) -> String;
    /// The value back from [`KeptValue::encode`]'s text.
    fn decode(text: &str) -> Option<Self>;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl KeptValue for $t {
            fn bytes(&self) -> usize {
                std::mem::size_of::<$t>()
            }
            fn encode(&self) -> String {
                self.to_string()
            }
            fn decode(text: &str) -> Option<Self> {
                text.parse().ok()
            }
        }
    )*};
}
integer!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool);

macro_rules! float {
    ($($t:ty => $bits:ty),*) => {$(
        impl KeptValue for $t {
            fn bytes(&self) -> usize {
                std::mem::size_of::<$t>()
            }
            fn encode(&self) -> String {
                format!("{:x}", self.to_bits())
            }
            fn decode(text: &str) -> Option<Self> {
                <$bits>::from_str_radix(text, 16).ok().map(<$t>::from_bits)
            }
        }
    )*};
}
float!(f32 => u32, f64 => u64);

impl KeptValue for char {
    fn bytes(&self) -> usize {
        4
    }
    fn encode(&self) -> String {
        u32::from(*self).to_string()
    }
    fn decode(text: &str) -> Option<Self> {
        char::from_u32(text.parse().ok()?)
    }
}

impl KeptValue for String {
    fn bytes(&self) -> usize {
        self.len()
    }
    fn encode(&self) -> String {
        self.clone()
    }
    fn decode(text: &str) -> Option<Self> {
        Some(text.to_string())
    }
}

/// Elements of a kept vector: the fixed-size values above.
pub trait KeptElement: KeptValue {}

macro_rules! element {
    ($($t:ty),*) => {$( impl KeptElement for $t {} )*};
}
element!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, bool, f32, f64, char);

impl<T: KeptElement> KeptValue for Vec<T> {
    fn bytes(&self) -> usize {
        self.len().saturating_mul(std::mem::size_of::<T>())
    }
    fn encode(&self) -> String {
        self.iter().map(T::encode).collect::<Vec<_>>().join(",")
    }
    fn decode(text: &str) -> Option<Self> {
        if text.is_empty() {
            return Some(Vec::new());
        }
        text.split(',').map(T::decode).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<T: KeptValue + PartialEq + std::fmt::Debug>(v: T) {
        assert_eq!(T::decode(&v.encode()), Some(v));
    }

    #[test]
    fn values_come_back_exactly() {
        round_trip(-5i32);
        round_trip(u128::MAX);
        round_trip(true);
        round_trip('é');
        round_trip(String::from("with, commas\nand lines"));
        round_trip(0.1f64);
        round_trip(-0.0f32);
        round_trip(vec![1.5f32, f32::INFINITY, -0.0]);
        round_trip(Vec::<u8>::new());
        round_trip(vec![true, false]);
        let nan = f64::decode(&f64::NAN.encode()).unwrap();
        assert!(nan.is_nan());
        assert_eq!(i32::decode("nonsense"), None);
    }
}
