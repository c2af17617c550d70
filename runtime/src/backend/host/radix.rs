//! A parallel radix sort of 32-bit keys, for one long line (`sort` of a flat tensor). The
//! first pass splits the keys by their top 8 bits (each thread counts and scatters its own
//! chunk, so equal keys keep their order); each part is then sorted on its own, in parallel:
//! split again by the next 8 bits while it is larger than a core's cache, then by
//! least-significant-digit passes that stay in that cache. A plain LSD sort (radsort, used for
//! short lines) scatters the whole line to memory four times, one core at a time; on 10M f32
//! that was 0.5x numpy's sort, this is what `bench ops` shows now.

use rayon::prelude::*;

use super::parallel::SendPtr;

/// Below this many keys one thread sorts them (the passes' bookkeeping would cost more).
pub(super) const PARALLEL_FROM: usize = 1 << 17;

/// A part this small (256 KiB of keys) is sorted by LSD passes in a core's cache.
const IN_CACHE: usize = 1 << 16;

/// Sorts `keys` ascending, stably, using `scratch` (of the same length) as the second buffer.
#[cfg(test)]
pub(super) fn sort_u32(keys: &mut [u32], scratch: &mut [u32]) {
    sort_mapped(keys, scratch, |k| k, |k| k);
}

/// Sorts `values` (bits of some 32-bit type) by `key` of each, stably, using `scratch` (of the
/// same length); `unkey` turns a key back into its value. The first pass reads the values and
/// the last writes them, so the keys cost no passes over memory of their own.
pub(super) fn sort_mapped(
    values: &mut [u32],
    scratch: &mut [u32],
    key: fn(u32) -> u32,
    unkey: fn(u32) -> u32,
) {
    debug_assert_eq!(values.len(), scratch.len());
    let sizes = scatter_by_digit(values, scratch, key, |k| (k >> 24) as usize);
    for_each_part(values, scratch, sizes, move |part_values, part_keys| {
        sort_below(part_keys, part_values, 24);
        for (v, &k) in part_values.iter_mut().zip(part_keys.iter()) {
            *v = unkey(k);
        }
    });
}

/// Runs `f` in parallel on the parts of `a` and `b` of these sizes, in order.
fn for_each_part(
    a: &mut [u32],
    b: &mut [u32],
    sizes: [usize; 256],
    f: impl Fn(&mut [u32], &mut [u32]) + Sync,
) {
    let mut parts = Vec::with_capacity(256);
    let (mut rest_a, mut rest_b) = (a, b);
    for size in sizes {
        let (part_a, tail_a) = rest_a.split_at_mut(size);
        let (part_b, tail_b) = rest_b.split_at_mut(size);
        parts.push((part_a, part_b));
        rest_a = tail_a;
        rest_b = tail_b;
    }
    parts
        .into_par_iter()
        .for_each(|(part_a, part_b)| f(part_a, part_b));
}

/// Sorts `a` by its bits below `top` (the bits above are equal across `a`), using `b` as the
/// scratch buffer; the result is in `a`.
fn sort_below(a: &mut [u32], b: &mut [u32], top: u32) {
    if top == 0 || a.len() < 2 {
        return;
    }
    if a.len() <= IN_CACHE || top <= 8 {
        lsd(a, b, top);
        return;
    }
    let shift = top - 8;
    let sizes = scatter_by_digit(a, b, |k| k, move |k| ((k >> shift) & 0xff) as usize);
    // Each part, now in `b`, is sorted by the bits below its digit, with the same part of
    // `a` as its scratch, then copied back.
    for_each_part(a, b, sizes, move |part_a, part_b| {
        sort_below(part_b, part_a, shift);
        part_a.copy_from_slice(part_b);
    });
}

/// Moves `map` of each of `from` into `to` grouped by its `digit` (0..256), in order within
/// each group, every thread scattering its own chunk; returns the groups' sizes.
fn scatter_by_digit(
    from: &[u32],
    to: &mut [u32],
    map: impl Fn(u32) -> u32 + Sync,
    digit: impl Fn(u32) -> usize + Sync,
) -> [usize; 256] {
    let n = from.len();
    let chunks = if n >= PARALLEL_FROM {
        rayon::current_num_threads().clamp(1, 64)
    } else {
        1
    };
    let chunk = n.div_ceil(chunks).max(1);
    let counts: Vec<[usize; 256]> = from
        .par_chunks(chunk)
        .map(|part| {
            let mut c = [0usize; 256];
            for &k in part {
                c[digit(map(k))] += 1;
            }
            c
        })
        .collect();
    let mut sizes = [0usize; 256];
    let mut starts = vec![[0usize; 256]; counts.len()];
    let mut at = 0usize;
    for d in 0..256 {
        for (p, c) in counts.iter().enumerate() {
            starts[p][d] = at;
            at += c[d];
            sizes[d] += c[d];
        }
    }
    let out = SendPtr(to.as_mut_ptr());
    from.par_chunks(chunk)
        .zip(starts.into_par_iter())
        .for_each(|(part, mut next)| {
            for &k in part {
                let k = map(k);
                let d = digit(k);
                // SAFETY: the starts partition 0..n among the chunks and digits, and each chunk
                // writes exactly its count of each digit from its start, so every write is in
                // bounds and no two writes meet.
                unsafe { *out.offset(next[d]) = k };
                next[d] += 1;
            }
        });
    sizes
}

/// Least-significant-digit passes of 8 bits over the bits below `top`, on one thread; the
/// result is in `a`.
fn lsd(a: &mut [u32], b: &mut [u32], top: u32) {
    let (mut from, mut to) = (a, b);
    let mut in_a = true;
    let mut shift = 0;
    while shift < top {
        let s = shift;
        let digit = move |k: u32| ((k >> s) & 0xff) as usize;
        let mut counts = [0usize; 256];
        for &k in from.iter() {
            counts[digit(k)] += 1;
        }
        shift += 8;
        // A pass where every key has one digit moves nothing.
        if counts.contains(&from.len()) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut at = 0;
        for d in 0..256 {
            next[d] = at;
            at += counts[d];
        }
        for &k in from.iter() {
            let d = digit(k);
            to[next[d]] = k;
            next[d] += 1;
        }
        std::mem::swap(&mut from, &mut to);
        in_a = !in_a;
    }
    if !in_a {
        // The sorted keys are in the scratch buffer.
        to.copy_from_slice(from);
    }
}

/// The key of an `f32`'s bits whose unsigned order is the floats' total order with every NaN
/// last (Nx's order).
pub(super) fn f32_key(bits: u32) -> u32 {
    let bits = if f32::from_bits(bits).is_nan() {
        f32::NAN.to_bits() & 0x7fff_ffff
    } else {
        bits
    };
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// The `f32` bits of a key from [`f32_key`].
pub(super) fn f32_of_key(k: u32) -> u32 {
    if k & 0x8000_0000 != 0 {
        k & 0x7fff_ffff
    } else {
        !k
    }
}

/// The key of an `i32`'s bits whose unsigned order is the integers' order.
pub(super) fn i32_key(bits: u32) -> u32 {
    bits ^ 0x8000_0000
}

/// The `i32` bits of a key from [`i32_key`].
pub(super) fn i32_of_key(k: u32) -> u32 {
    k ^ 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_floats_with_nan_last_and_invert() {
        let xs = [
            f32::NEG_INFINITY,
            -2.5,
            -0.0,
            0.0,
            1e-30,
            3.0,
            f32::INFINITY,
            f32::NAN,
        ];
        let key = |x: f32| f32_key(x.to_bits());
        for w in xs.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(key(-f32::NAN), key(f32::NAN));
        for x in &xs[..7] {
            assert_eq!(f32_of_key(key(*x)), x.to_bits());
        }
        let int = |x: i32| i32_key(x as u32);
        assert!(int(i32::MIN) < int(-1) && int(-1) < int(0));
        assert_eq!(i32_of_key(int(-7)) as i32, -7);
    }

    #[test]
    fn a_parallel_sort_matches_the_standard_sort() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut keys: Vec<u32> = (0..300_001)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Some narrow ranges, so that passes are skipped too.
                if i % 3 == 0 {
                    (state % 1000) as u32
                } else {
                    state as u32
                }
            })
            .collect();
        let mut expected = keys.clone();
        expected.sort_unstable();
        let mut scratch = vec![0; keys.len()];
        sort_u32(&mut keys, &mut scratch);
        assert_eq!(keys, expected);
        let mut small: Vec<u32> = (0..1000).map(|i| 999 - i).collect();
        let mut scratch = vec![0; 1000];
        sort_u32(&mut small, &mut scratch);
        assert_eq!(small, (0..1000).collect::<Vec<_>>());
    }
}
