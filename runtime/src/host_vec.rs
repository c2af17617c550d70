//! `HostVec`: the growable array inside a host [`crate::buffer::Buffer`]. It is a `Vec` on the
//! heap, or the same thing over a [`Region`] of shared memory that a restarted evaluation
//! process can map again (see [`crate::shared_memory`]). Backends see slices and the few `Vec`
//! methods they fill outputs with; which memory is underneath is decided once, at allocation
//! (`allocate::try_reserve`).

use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};

use crate::shared_memory::Region;

/// Elements a `HostVec` can hold: plain values with no drop and no invalid bit patterns among
/// zeroes (a shared region starts zero-filled and is handed between processes as bytes).
pub trait Plain: Copy + Send + Sync + 'static {}
impl Plain for u8 {}
impl Plain for u16 {}
impl Plain for u32 {}
impl Plain for u64 {}
impl Plain for i8 {}
impl Plain for i16 {}
impl Plain for i32 {}
impl Plain for i64 {}
impl Plain for f32 {}
impl Plain for f64 {}
impl Plain for half::bf16 {}
impl Plain for half::f16 {}

/// A contiguous array of `T` on the heap or in shared memory.
pub struct HostVec<T: Plain> {
    repr: Repr<T>,
}

enum Repr<T: Plain> {
    Heap(Vec<T>),
    Shared {
        region: Region,
        len: usize,
        capacity: usize,
        _elements: PhantomData<T>,
    },
}

impl<T: Plain> HostVec<T> {
    /// An empty heap vector.
    pub const fn new() -> HostVec<T> {
        HostVec {
            repr: Repr::Heap(Vec::new()),
        }
    }

    /// An empty vector with room for `capacity` elements in a new shared region.
    pub fn shared(capacity: usize) -> std::io::Result<HostVec<T>> {
        let bytes = capacity
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| std::io::Error::other("larger than any address space"))?;
        Ok(HostVec::over(Region::create(bytes)?, 0))
    }

    /// The first `len` elements of `region` (whose bytes must be valid `T`s there, as every
    /// bit pattern of a [`Plain`] type is).
    pub fn over(region: Region, len: usize) -> HostVec<T> {
        let capacity = region.bytes() / std::mem::size_of::<T>().max(1);
        HostVec {
            repr: Repr::Shared {
                region,
                len: len.min(capacity),
                capacity,
                _elements: PhantomData,
            },
        }
    }

    /// The shared region underneath, if the elements are in shared memory.
    pub fn region(&self) -> Option<&Region> {
        match &self.repr {
            Repr::Heap(_) => None,
            Repr::Shared { region, .. } => Some(region),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Heap(v) => v.len(),
            Repr::Shared { len, .. } => *len,
        }
    }

    /// True when there is no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements that fit without growing.
    pub fn capacity(&self) -> usize {
        match &self.repr {
            Repr::Heap(v) => v.capacity(),
            Repr::Shared { capacity, .. } => *capacity,
        }
    }

    fn base(&self) -> *mut T {
        match &self.repr {
            Repr::Heap(v) => v.as_ptr().cast_mut(),
            Repr::Shared { region, .. } => region.as_ptr().cast(),
        }
    }

    /// Sets the length.
    ///
    /// # Safety
    /// `len` is at most the capacity and the first `len` elements are initialised.
    pub unsafe fn set_len(&mut self, new_len: usize) {
        match &mut self.repr {
            // SAFETY: the caller's promise is `Vec::set_len`'s.
            Repr::Heap(v) => unsafe { v.set_len(new_len) },
            Repr::Shared { len, .. } => *len = new_len,
        }
    }

    /// The room after the elements, for writing before `set_len`.
    pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<T>] {
        match &mut self.repr {
            Repr::Heap(v) => v.spare_capacity_mut(),
            Repr::Shared {
                region,
                len,
                capacity,
                ..
            } => {
                // SAFETY: slots `len..capacity` lie inside the mapping, which `&mut self` lends
                // out exclusively; `MaybeUninit` makes no claim about their contents.
                unsafe {
                    std::slice::from_raw_parts_mut(
                        region.as_ptr().cast::<MaybeUninit<T>>().add(*len),
                        *capacity - *len,
                    )
                }
            }
        }
    }

    /// Makes room for `additional` more elements: a shared vector that must grow moves to the
    /// heap (only a vector filled past what was reserved for it does, which backends avoid).
    fn reserve(&mut self, additional: usize) {
        if self.capacity() - self.len() >= additional {
            return;
        }
        if let Repr::Shared { .. } = self.repr {
            let mut heap = Vec::with_capacity(self.len().saturating_add(additional));
            heap.extend_from_slice(self);
            self.repr = Repr::Heap(heap);
        }
        if let Repr::Heap(v) = &mut self.repr {
            v.reserve(additional);
        }
    }

    /// Appends one element.
    pub fn push(&mut self, value: T) {
        if let Repr::Heap(v) = &mut self.repr {
            return v.push(value);
        }
        self.reserve(1);
        let len = self.len();
        self.spare_capacity_mut()[0].write(value);
        // SAFETY: slot `len` was just written and lies within the capacity.
        unsafe { self.set_len(len + 1) };
    }

    /// Appends every element of `values`.
    pub fn extend_from_slice(&mut self, values: &[T]) {
        if let Repr::Heap(v) = &mut self.repr {
            return v.extend_from_slice(values);
        }
        self.reserve(values.len());
        let len = self.len();
        for (slot, &x) in self.spare_capacity_mut().iter_mut().zip(values) {
            slot.write(x);
        }
        // SAFETY: the first `values.len()` spare slots were just written.
        unsafe { self.set_len(len + values.len()) };
    }

    /// Resizes to `new_len`, filling new slots with `value`.
    pub fn resize(&mut self, new_len: usize, value: T) {
        if let Repr::Heap(v) = &mut self.repr {
            return v.resize(new_len, value);
        }
        let len = self.len();
        if new_len > len {
            self.reserve(new_len - len);
            for slot in &mut self.spare_capacity_mut()[..new_len - len] {
                slot.write(value);
            }
        }
        // SAFETY: shrinking, or every slot up to `new_len` was just written.
        unsafe { self.set_len(new_len) };
    }

    /// Removes every element, keeping the memory.
    pub fn clear(&mut self) {
        // SAFETY: zero elements are always initialised.
        unsafe { self.set_len(0) };
    }

    /// The elements as a heap `Vec` (moved when they are on the heap, copied from shared
    /// memory otherwise).
    pub fn into_vec(self) -> Vec<T> {
        match self.repr {
            Repr::Heap(v) => v,
            Repr::Shared { .. } => self.to_vec(),
        }
    }
}

impl<T: Plain> Default for HostVec<T> {
    fn default() -> Self {
        HostVec::new()
    }
}

impl<T: Plain> From<Vec<T>> for HostVec<T> {
    fn from(v: Vec<T>) -> HostVec<T> {
        HostVec {
            repr: Repr::Heap(v),
        }
    }
}

impl<T: Plain> Extend<T> for HostVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        if let Repr::Heap(v) = &mut self.repr {
            return v.extend(values);
        }
        let mut values = values.into_iter();
        let len = self.len();
        // Straight into the reserved room while it lasts, then one by one.
        let mut written = 0;
        for (slot, x) in self.spare_capacity_mut().iter_mut().zip(values.by_ref()) {
            slot.write(x);
            written += 1;
        }
        // SAFETY: the first `written` spare slots were just written.
        unsafe { self.set_len(len + written) };
        for x in values {
            self.push(x);
        }
    }
}

impl<T: Plain> FromIterator<T> for HostVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(values: I) -> HostVec<T> {
        HostVec::from(values.into_iter().collect::<Vec<T>>())
    }
}

impl<T: Plain> Deref for HostVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match &self.repr {
            Repr::Heap(v) => v,
            // SAFETY: the first `len` elements are initialised and inside the mapping, which
            // lives as long as `self`.
            Repr::Shared { len, .. } => unsafe { std::slice::from_raw_parts(self.base(), *len) },
        }
    }
}

impl<T: Plain> DerefMut for HostVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        let base = self.base();
        match &mut self.repr {
            Repr::Heap(v) => v,
            // SAFETY: as in `deref`, and `&mut self` makes the borrow exclusive.
            Repr::Shared { len, .. } => unsafe { std::slice::from_raw_parts_mut(base, *len) },
        }
    }
}

/// A copy on the heap (a shared vector's copy is not shared: only `try_reserve` decides that).
impl<T: Plain> Clone for HostVec<T> {
    fn clone(&self) -> HostVec<T> {
        HostVec::from(self.to_vec())
    }
}

impl<T: Plain + PartialEq> PartialEq for HostVec<T> {
    fn eq(&self, other: &HostVec<T>) -> bool {
        **self == **other
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for HostVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<'a, T: Plain> IntoIterator for &'a HostVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_vector_fills_like_a_vec_and_grows_onto_the_heap() {
        let mut v = HostVec::<f32>::shared(8).unwrap();
        assert!(v.region().is_some());
        assert_eq!(v.capacity(), 8);
        v.push(1.0);
        v.extend_from_slice(&[2.0, 3.0]);
        v.extend([4.0, 5.0]);
        v.resize(7, 9.0);
        assert_eq!(&v[..], &[1.0, 2.0, 3.0, 4.0, 5.0, 9.0, 9.0]);
        assert!(v.region().is_some(), "filled within what was reserved");
        v.extend(std::iter::repeat_n(0.5, 2000));
        assert!(v.region().is_none(), "grew past the region");
        assert_eq!(v.len(), 2007);
        assert_eq!(v[6], 9.0);
        assert_eq!(v.clone(), v);
    }

    #[test]
    fn spare_capacity_then_set_len() {
        let mut v = HostVec::<i64>::shared(3).unwrap();
        for (i, slot) in v.spare_capacity_mut()[..3].iter_mut().enumerate() {
            slot.write(i as i64 * 10);
        }
        // SAFETY: three slots written.
        unsafe { v.set_len(3) };
        assert_eq!(v.into_vec(), vec![0, 10, 20]);
    }
}
