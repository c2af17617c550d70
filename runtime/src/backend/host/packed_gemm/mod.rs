//! Host's own GEMM for large f32/f64 products, built the way BLIS builds one: B is packed in
//! `KC x NC` blocks that all threads share (L3), each `MC x KC` row block of A is packed by
//! the thread that takes it (L2), and a microkernel computes `MR x NR` tiles of C from one
//! micro-panel of each (a B micro-panel stays in L1 while every A micro-panel of the block
//! passes it).
//!
//! Why not the system BLAS: measured on the 2-core AVX2 EPYC the project runs on, one process
//! per library (medians of 9-25 runs; in one process OpenBLAS's spinning threads slow whatever
//! runs next), 1024³ / 2048³ f32: this 183-185 / 188-190 GFLOP/s, Debian's OpenBLAS 0.3.21
//! 181-182 / 184-185, numpy's OpenBLAS 0.3.30 184-187 / 187-188; `tensorbook bench ops` prints
//! host and Debian's OpenBLAS beside numpy in every run. It needs AVX2 and FMA; elsewhere host
//! keeps the system BLAS or the `gemm` crate (this module is only built for x86-64). Where
//! the CPU has AVX-512, tiles are twice as wide ([`kernel::F32x16`], [`kernel::F64x8`]): 1024³
//! f32 went from 13.4 to 7.4 ms (157 to 292 GFLOP/s of a 341 GFLOP/s register peak) on a
//! 2-core Xeon, 1024³ f64 from 39 to 22 ms.

mod kernel;
mod pack;

use std::any::TypeId;
use std::cell::RefCell;
use std::mem::MaybeUninit;

use super::parallel::for_each_task;

use crate::element::Element;
pub use kernel::Kernel;
use kernel::MR;

/// Cache blocking, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocking {
    /// Depth of a packed block.
    pub kc: usize,
    /// Rows of A per packed block (`MC x KC` stays in a core's L2).
    pub mc: usize,
    /// Columns of B per packed block (`KC x NC` stays in the shared L3).
    pub nc: usize,
}

/// The deepest block: 1024³ / 2048³ f32 medians, measured one process per setting, were 176 /
/// 181 GFLOP/s at 256 deep, 181 / 186 at 384, 183 / 188 at 512 and 182 / 180 at 1024 (a
/// 512-deep f32 B micro-panel is L1's 32 KB; deeper blocks write C back less often).
const KC_MAX: usize = 512;
/// The most a B micro-panel (`kc x NR`) may take: 512 deep for every AVX2 tile. The AVX-512
/// f32 tile (NR = 32) measured 1024³ / {10000,784}x{784,50} / {50,10000}x{10000,784} at 9.1 /
/// 6.9 / 13.0 ms with 32 KB (256 deep), 7.4 / 5.8 / 7.5 with 64 KB and 9.7 / 5.1 / 8.1 with
/// 128 KB (1024 deep) on a 2-core Xeon whose L1 holds 48 KB.
const B_PANEL_BYTES: usize = 64 << 10;
/// Rows per A block: 48..144 measured alike (within 1%); 96 x 512 f64 is 384 KB of L2.
const MC: usize = 96;
/// The most bytes one packed B block may take (the thread-local buffer keeps this much).
const B_BLOCK_BYTES: usize = 8 << 20;

/// The blocking for a product of depth `k` in elements of `bytes` bytes.
pub fn blocking(k: usize, nr: usize, bytes: usize) -> Blocking {
    // Equal blocks no deeper than KC_MAX: no thin last block.
    let k = k.max(1);
    let deepest = KC_MAX
        .min(B_PANEL_BYTES / (nr.max(1) * bytes.max(1)))
        .max(1);
    let kc = k.div_ceil(k.div_ceil(deepest));
    let nc = (B_BLOCK_BYTES / bytes.max(1) / kc / nr).max(1) * nr;
    Blocking { kc, mc: MC, nc }
}

/// Whether this CPU can run the microkernels.
pub fn available() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// Products of fewer multiply-adds than this run on the calling thread only: waking the pool
/// costs more than it saves.
const PARALLEL_FROM: usize = 1 << 21;

/// True when f32 and f64 products use the AVX-512 tiles ([`kernel::F32x16`],
/// [`kernel::F64x8`]) on this CPU.
pub fn wide_tiles() -> bool {
    kernel::avx512_available()
}

/// Products of too few rows to share out run on one thread below this many multiply-adds.
const SHARED_FROM_FEW_ROWS: usize = 1 << 26;

/// Whether [`matmul`] takes products of `T` on this CPU.
pub fn supports<T: Element>() -> bool {
    let id = TypeId::of::<T>();
    (id == TypeId::of::<f32>() || id == TypeId::of::<f64>()) && available()
}

/// `out = a · b` for row-major `a: [m,k]`, `b: [k,n]`, `out: [m,n]`, writing every one of
/// `out`'s first `m*n` slots, when [`supports`] `T` and the slices are long enough; `false`
/// (nothing written) otherwise.
pub fn matmul<T: Element>(
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
    out: &mut [MaybeUninit<T>],
) -> bool {
    let (Some(mk), Some(kn), Some(mn)) = (m.checked_mul(k), k.checked_mul(n), m.checked_mul(n))
    else {
        return false;
    };
    if !supports::<T>() || a.len() < mk || b.len() < kn || out.len() < mn {
        return false;
    }
    if m == 0 || n == 0 {
        return true;
    }
    if k == 0 {
        out[..mn].fill(MaybeUninit::new(T::ZERO));
        return true;
    }
    let work = mk.saturating_mul(n);
    let pool = rayon::current_num_threads();
    // Threads share row blocks; with fewer than two MR-row panels per thread most of them
    // wait, and every depth block still pays a round of the pool (the 10-row weight gradient
    // of notebook 05, {10,10000}x{10000,50}: 1.56 ms on both cores, 0.29 ms on one).
    let few_rows = m.div_ceil(MR) < 2 * pool && work < SHARED_FROM_FEW_ROWS;
    let threads = if work >= PARALLEL_FROM && !few_rows {
        pool
    } else {
        1
    };
    let id = TypeId::of::<T>();
    // SAFETY (both arms): T is the element type named by the arm (same TypeId); the CPU has
    // AVX2 and FMA and the lengths were checked.
    unsafe {
        if id == TypeId::of::<f32>() {
            if wide_tiles() {
                run_as::<kernel::F32x16, T>(a, b, out.as_mut_ptr().cast(), m, k, n, threads);
            } else {
                run_as::<f32, T>(a, b, out.as_mut_ptr().cast(), m, k, n, threads);
            }
        } else if wide_tiles() {
            run_as::<kernel::F64x8, T>(a, b, out.as_mut_ptr().cast(), m, k, n, threads);
        } else {
            run_as::<f64, T>(a, b, out.as_mut_ptr().cast(), m, k, n, threads);
        }
    }
    true
}

/// [`gemm`] with `K`'s blocking, for slices of `T`.
///
/// # Safety
/// `T` is `K`; as [`gemm`] otherwise.
unsafe fn run_as<K: Kernel, T>(
    a: &[T],
    b: &[T],
    c: *mut T,
    m: usize,
    k: usize,
    n: usize,
    threads: usize,
) {
    let bl = blocking(k, K::NR, std::mem::size_of::<K>());
    let in_place = in_place_for(m, n, K::NR, std::mem::size_of::<K>());
    let (a, b) = (
        std::slice::from_raw_parts(a.as_ptr().cast::<K>(), a.len()),
        std::slice::from_raw_parts(b.as_ptr().cast::<K>(), b.len()),
    );
    gemm::<K>(a, b, c.cast(), m, k, n, bl, threads, in_place);
}

/// Which operands a product of `m` rows and `n` columns of `bytes`-byte elements reads in
/// place, for tiles `nr` wide. Medians on the 2-core AVX-512 EPYC (f32, GFLOP/s, packed ->
/// in place):
/// - A, when its panels meet at most two of B's (`n <= 2*nr`): 10000x784x64 152 -> 192,
///   4096x1024x64 178 -> 209, 4096x4096x48 122 -> 143, 2048x2048x32 141 -> 184.
/// - B, when A has few rows (each thread then reads its share of B once) and B's rows are
///   short and not a multiple of 128 bytes apart: 50x10000x784 93 -> 118, 150x10000x784
///   155 -> 174, 10x10000x784 42 -> 49. Wide B lost (100x10000x2000 156 -> 155,
///   128x4096x4000 176 -> 154: each row block re-reads a share of B too large for L2), and rows
///   a multiple of 4 KB apart share the same L1 sets (128x4096x4096 178 -> 124,
///   192x1024x1024 187 -> 165).
fn in_place_for(m: usize, n: usize, nr: usize, bytes: usize) -> InPlace {
    let row_bytes = n.saturating_mul(bytes);
    InPlace {
        a: n <= 2 * nr,
        b: m <= 2 * MC && row_bytes <= 4096 && !row_bytes.is_multiple_of(128),
    }
}

#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: the driver hands each thread disjoint rows of C and packed blocks that are only read
// while they are shared.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

/// A 64-byte aligned line of scratch.
#[repr(align(64))]
#[derive(Clone, Copy)]
struct Line(#[allow(dead_code)] [u8; 64]); // only its size and alignment matter

/// A thread's packing buffer, grown on demand and kept: packing into fresh pages would pay a
/// page fault per 4 KB on every product.
struct Scratch(Vec<Line>);

impl Scratch {
    fn ptr<T>(&mut self, len: usize) -> *mut T {
        let lines = (len * std::mem::size_of::<T>()).div_ceil(64);
        if self.0.len() < lines {
            self.0 = vec![Line([0; 64]); lines];
        }
        self.0.as_mut_ptr().cast()
    }
}

thread_local! {
    static A_BLOCK: RefCell<Scratch> = const { RefCell::new(Scratch(Vec::new())) };
    static B_BLOCK: RefCell<Scratch> = const { RefCell::new(Scratch(Vec::new())) };
}

/// Which operands a product reads where they lie instead of packing them first: see
/// [`Kernel::tile`]. [`matmul`] chooses by shape ([`in_place_for`]); every choice computes the
/// same product.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InPlace {
    /// A's full MR-row panels are read from A's rows.
    pub a: bool,
    /// B's full NR-column panels are read from B's rows.
    pub b: bool,
}

/// A block of one operand as the microkernel reads it: packed panels, or the matrix itself
/// with its row stride.
#[derive(Clone, Copy)]
struct Block<T> {
    ptr: *const T,
    ld: usize,
    packed: bool,
}
impl<T> Block<T> {
    /// One panel of the block: in a packed block the panel `packed_at` values in; in the
    /// matrix itself the one `in_place_at` values in where it is `whole`; a partial panel of
    /// the matrix packed into `edge` by `pack` (from the panel's first value), zero-padded.
    ///
    /// # Safety
    /// The offsets address the panel inside the block; `edge` holds a packed panel.
    unsafe fn panel(
        self,
        packed_at: usize,
        in_place_at: usize,
        whole: bool,
        edge: *mut T,
        pack: impl FnOnce(*const T, *mut T),
    ) -> Block<T> {
        if self.packed {
            Block {
                ptr: self.ptr.add(packed_at),
                ..self
            }
        } else if whole {
            Block {
                ptr: self.ptr.add(in_place_at),
                ..self
            }
        } else {
            pack(self.ptr.add(in_place_at), edge);
            Block {
                ptr: edge.cast_const(),
                ld: 0,
                packed: true,
            }
        }
    }
}

// SAFETY: a block is only read while the product runs, by every thread alike.
unsafe impl<T> Send for Block<T> {}
unsafe impl<T> Sync for Block<T> {}

/// `c = a · b` for row-major contiguous `a: [m,k]`, `b: [k,n]`, `c: [m,n]`, `k >= 1`, on
/// rayon's threads (one packs B per thread, row blocks of A go to whichever is free) or, with
/// `threads == 1`, on the calling thread; the operands `in_place` names are read where they
/// lie. C is only written until the first depth block has passed, so it may start
/// uninitialised.
///
/// # Safety
/// The CPU has AVX2 and FMA; `a` and `b` hold at least `m*k` and `k*n` values; `c` addresses
/// `m*n` writable values no one else accesses during the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm<T: Kernel>(
    a: &[T],
    b: &[T],
    c: *mut T,
    m: usize,
    k: usize,
    n: usize,
    bl: Blocking,
    threads: usize,
    in_place: InPlace,
) {
    let nr = T::NR;
    let kc_max = bl.kc.clamp(1, k);
    let nc_max = bl.nc.min(n.div_ceil(nr) * nr).max(nr);
    let threads = threads.max(1);
    // Row blocks of whole MR-row panels, as equal as panels allow, at most `bl.mc` rows (plus
    // one panel) each, and a multiple of the thread count in number: with 11 blocks on two
    // cores one core idled for a block at the end of every depth step (1024³: 175 -> 183
    // GFLOP/s once the count was even).
    let panels_m = m.div_ceil(MR);
    let blocks = panels_m
        .div_ceil((bl.mc / MR).max(1))
        .div_ceil(threads)
        .saturating_mul(threads)
        .min(panels_m);
    let block_rows = |block: usize| -> (usize, usize) {
        let first = block * panels_m / blocks * MR;
        let end = ((block + 1) * panels_m / blocks * MR).min(m);
        (first, end - first)
    };
    let mc_max = panels_m.div_ceil(blocks) * MR;
    let c_ptr = Shared(c);
    let a_ptr = Shared(a.as_ptr().cast_mut());
    // One row block of C's columns `[j_first, j_first + nc)` over depths `[pc, pc + kc)`.
    let row_block = |block: usize, pc: usize, kc: usize, j_first: usize, nc: usize, b: Block<T>| {
        let (a_ptr, c_ptr) = (a_ptr, c_ptr);
        let (ic, mc) = block_rows(block);
        let a_src = a_ptr.0.add(ic * k + pc).cast_const();
        let c = c_ptr.0.add(ic * n + j_first);
        let first = pc == 0;
        if in_place.a {
            let a_block = Block {
                ptr: a_src,
                ld: k,
                packed: false,
            };
            macro_kernel(mc, nc, kc, a_block, b, c, n, first);
            return;
        }
        A_BLOCK.with(|a_block| {
            let a_pack = a_block.borrow_mut().ptr::<T>(mc_max * kc_max);
            pack::pack_a(a_src, k, mc, kc, a_pack);
            let a_block = Block {
                ptr: a_pack.cast_const(),
                ld: MR,
                packed: true,
            };
            macro_kernel(mc, nc, kc, a_block, b, c, n, first);
        });
    };
    if in_place.b {
        // B read where it lies: each thread takes a share of its column panels over the whole
        // depth, so every value of B is read by one thread once (sharing out rows instead had
        // both threads read all of B: {50,10000}x{10000,784} 7.4 -> 8.2 ms) and no pool round
        // separates depth blocks.
        let panels = n.div_ceil(nr);
        let per = panels.div_ceil(threads);
        let columns = |t: usize| {
            let (j0, j1) = ((t * per).min(panels), ((t + 1) * per).min(panels));
            if j0 == j1 {
                return;
            }
            let (j_first, j_end) = (j0 * nr, (j1 * nr).min(n));
            for pc in (0..k).step_by(kc_max) {
                let kc = kc_max.min(k - pc);
                let b_block = Block {
                    ptr: b.as_ptr().add(pc * n + j_first),
                    ld: n,
                    packed: false,
                };
                for block in 0..blocks {
                    row_block(block, pc, kc, j_first, j_end - j_first, b_block);
                }
            }
        };
        if threads == 1 {
            columns(0);
        } else {
            for_each_task(threads, &columns);
        }
        return;
    }
    B_BLOCK.with(|b_block| {
        let b_pack = Shared(b_block.borrow_mut().ptr::<T>(kc_max * nc_max));
        for jc in (0..n).step_by(nc_max) {
            let nc = nc_max.min(n - jc);
            let panels = nc.div_ceil(nr);
            for pc in (0..k).step_by(kc_max) {
                let kc = kc_max.min(k - pc);
                let b_src = Shared(b.as_ptr().add(pc * n + jc).cast_mut());
                let per = panels.div_ceil(threads);
                let pack_b = |t: usize| {
                    let (b_src, b_pack) = (b_src, b_pack);
                    let (j0, j1) = ((t * per).min(panels), ((t + 1) * per).min(panels));
                    pack::pack_b_panels(b_src.0, n, nc, kc, j0, j1, b_pack.0);
                };
                let b_block = Block {
                    ptr: b_pack.0.cast_const(),
                    ld: nr,
                    packed: true,
                };
                // Row blocks are taken by whichever thread is free (rayon's stealing), not split
                // in halves up front: on a shared machine one core is often slower for a while.
                let compute = |block: usize| row_block(block, pc, kc, jc, nc, b_block);
                if threads == 1 {
                    pack_b(0);
                    (0..blocks).for_each(compute);
                } else {
                    for_each_task(threads, &pack_b);
                    for_each_task(blocks, &compute);
                }
            }
        }
    });
}

thread_local! {
    /// A partial panel of an operand read in place, packed with its zero padding (reading it
    /// in place would run past the matrix).
    static EDGE_A: RefCell<Scratch> = const { RefCell::new(Scratch(Vec::new())) };
    static EDGE_B: RefCell<Scratch> = const { RefCell::new(Scratch(Vec::new())) };
}

/// Every tile of an `mc x nc` block of C from blocks of A (`mc x kc`) and B (`kc x nc`).
#[allow(clippy::too_many_arguments)]
unsafe fn macro_kernel<T: Kernel>(
    mc: usize,
    nc: usize,
    kc: usize,
    a: Block<T>,
    b: Block<T>,
    c: *mut T,
    ldc: usize,
    first: bool,
) {
    let nr = T::NR;
    EDGE_A.with(|edge_a| {
        EDGE_B.with(|edge_b| {
            let (mut edge_a, mut edge_b) = (edge_a.borrow_mut(), edge_b.borrow_mut());
            let (edge_a, edge_b) = (edge_a.ptr::<T>(kc * MR), edge_b.ptr::<T>(kc * nr));
            for jp in 0..nc.div_ceil(nr) {
                let cols = nr.min(nc - jp * nr);
                let b_panel = b.panel(jp * nr * kc, jp * nr, cols == nr, edge_b, |src, dst| {
                    pack::pack_b_panels(src, b.ld, cols, kc, 0, 1, dst)
                });
                for ip in 0..mc.div_ceil(MR) {
                    let rows = MR.min(mc - ip * MR);
                    let a_panel = a.panel(
                        ip * MR * kc,
                        ip * MR * a.ld,
                        rows == MR,
                        edge_a,
                        |src, dst| pack::pack_a(src, a.ld, rows, kc, dst),
                    );
                    let tile = c.add(ip * MR * ldc + jp * nr);
                    if rows == MR && cols == nr {
                        run_tile(kc, a_panel, b_panel, tile, ldc, first);
                    } else {
                        edge_tile(kc, a_panel, b_panel, tile, ldc, first, rows, cols);
                    }
                }
            }
        })
    })
}

/// The microkernel instance for where the two panels lie.
#[inline(always)]
unsafe fn run_tile<T: Kernel>(
    kc: usize,
    a: Block<T>,
    b: Block<T>,
    c: *mut T,
    ldc: usize,
    first: bool,
) {
    match (a.packed, b.packed) {
        (true, true) => T::tile::<true, true>(kc, a.ptr, a.ld, b.ptr, b.ld, c, ldc, first),
        (true, false) => T::tile::<true, false>(kc, a.ptr, a.ld, b.ptr, b.ld, c, ldc, first),
        (false, true) => T::tile::<false, true>(kc, a.ptr, a.ld, b.ptr, b.ld, c, ldc, first),
        (false, false) => T::tile::<false, false>(kc, a.ptr, a.ld, b.ptr, b.ld, c, ldc, first),
    }
}

/// A partial tile: computed whole into scratch, then its valid part written to C. Its panels
/// are whole (partial ones were packed with zero padding).
#[allow(clippy::too_many_arguments)]
#[inline(never)]
unsafe fn edge_tile<T: Kernel>(
    kc: usize,
    a: Block<T>,
    b: Block<T>,
    c: *mut T,
    ldc: usize,
    first: bool,
    rows: usize,
    cols: usize,
) {
    // MR x NR values: at most 6 x 32 x 4 = 768 bytes (AVX-512 f32).
    let mut scratch = [Line([0; 64]); 12];
    let tmp: *mut T = scratch.as_mut_ptr().cast();
    run_tile(kc, a, b, tmp, T::NR, true);
    for r in 0..rows {
        for j in 0..cols {
            let v = *tmp.add(r * T::NR + j);
            let d = c.add(r * ldc + j);
            if first {
                *d = v
            } else {
                *d += v
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for p in 0..k {
                for j in 0..n {
                    c[i * n + j] += a[i * k + p] * b[p * n + j];
                }
            }
        }
        c
    }

    /// Every edge at once: rows and columns that fill no tile, depths split into several
    /// blocks, several column blocks, more threads than row panels, for both types.
    #[test]
    fn products_match_a_plain_loop_at_every_edge() {
        if !available() {
            println!("skipped: this CPU has no AVX2+FMA, host does not use this GEMM");
            return;
        }
        let small = Blocking {
            kc: 37,
            mc: 18,
            nc: 48,
        };
        let shapes = [
            (1, 1, 1),
            (5, 3, 7),
            (6, 16, 16),
            (7, 300, 33),
            (13, 513, 17),
            (100, 77, 129),
            (64, 64, 64),
            (1, 1000, 1),
            (200, 5, 300),
        ];
        for (m, k, n) in shapes {
            let a: Vec<f64> = (0..m * k)
                .map(|i| (i * 7 % 13) as f64 * 0.1 - 0.6)
                .collect();
            let b: Vec<f64> = (0..k * n)
                .map(|i| (i * 5 % 11) as f64 * 0.1 - 0.5)
                .collect();
            let want = reference(&a, &b, m, k, n);
            let (a32, b32): (Vec<f32>, Vec<f32>) = (
                a.iter().map(|&x| x as f32).collect(),
                b.iter().map(|&x| x as f32).collect(),
            );
            let places = [(false, false), (true, false), (false, true), (true, true)]
                .map(|(a, b)| InPlace { a, b });
            for (bl, threads, in_place) in [small, blocking(k, 16, 4)]
                .into_iter()
                .flat_map(|bl| [1, 2, 3].map(|t| (bl, t)))
                .flat_map(|(bl, t)| places.map(|p| (bl, t, p)))
            {
                {
                    let mut c = vec![f64::NAN; m * n];
                    // SAFETY: AVX2+FMA checked above; the buffers have the sizes named.
                    unsafe { gemm(&a, &b, c.as_mut_ptr(), m, k, n, bl, threads, in_place) };
                    for (i, (got, want)) in c.iter().zip(&want).enumerate() {
                        assert!(
                            (got - want).abs() < 1e-9,
                            "f64 {m}x{k}x{n} [{i}] {bl:?} {in_place:?}"
                        );
                    }
                    let mut c32 = vec![f32::NAN; m * n];
                    // SAFETY: as above.
                    unsafe { gemm(&a32, &b32, c32.as_mut_ptr(), m, k, n, bl, threads, in_place) };
                    for (i, (got, want)) in c32.iter().zip(&want).enumerate() {
                        let err = (*got as f64 - want).abs();
                        assert!(err < 1e-3 * (1.0 + want.abs()), "f32 {m}x{k}x{n} [{i}]");
                    }
                    if !kernel::avx512_available() {
                        continue;
                    }
                    let wide = |v: &[f32]| v.iter().map(|&x| kernel::F32x16(x)).collect::<Vec<_>>();
                    let (a16, b16) = (wide(&a32), wide(&b32));
                    let mut c16 = vec![kernel::F32x16(f32::NAN); m * n];
                    let bl16 = Blocking {
                        nc: bl.nc.div_ceil(32) * 32,
                        ..bl
                    };
                    // SAFETY: AVX-512F checked; the buffers have the sizes named.
                    unsafe {
                        gemm(
                            &a16,
                            &b16,
                            c16.as_mut_ptr(),
                            m,
                            k,
                            n,
                            bl16,
                            threads,
                            in_place,
                        )
                    };
                    for (i, (got, want)) in c16.iter().zip(&want).enumerate() {
                        let err = (got.0 as f64 - want).abs();
                        assert!(
                            err < 1e-3 * (1.0 + want.abs()),
                            "avx-512 f32 {m}x{k}x{n} [{i}]"
                        );
                    }
                    let (a8, b8) = (
                        a.iter().map(|&x| kernel::F64x8(x)).collect::<Vec<_>>(),
                        b.iter().map(|&x| kernel::F64x8(x)).collect::<Vec<_>>(),
                    );
                    let mut c8 = vec![kernel::F64x8(f64::NAN); m * n];
                    // SAFETY: AVX-512F checked; the buffers have the sizes named (blocks of
                    // 32 columns are whole 16-column panels).
                    unsafe { gemm(&a8, &b8, c8.as_mut_ptr(), m, k, n, bl16, threads, in_place) };
                    for (i, (got, want)) in c8.iter().zip(&want).enumerate() {
                        assert!(
                            (got.0 - want).abs() < 1e-9,
                            "avx-512 f64 {m}x{k}x{n} [{i}] {bl:?} {in_place:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn matmul_refuses_other_types_and_short_buffers() {
        let mut out = [MaybeUninit::new(0i32); 4];
        assert!(!matmul(&[1i32; 4], &[1i32; 4], 2, 2, 2, &mut out));
        let mut out = [MaybeUninit::new(0f32); 4];
        assert!(!matmul(&[1f32; 3], &[1f32; 4], 2, 2, 2, &mut out));
        if available() {
            assert!(matmul(&[1f32; 4], &[2f32; 4], 2, 2, 2, &mut out));
            // SAFETY: matmul wrote all four.
            assert_eq!(out.map(|v| unsafe { v.assume_init() }), [4.0; 4]);
            let mut out = [MaybeUninit::new(7f64); 6];
            assert!(matmul::<f64>(&[], &[], 2, 0, 3, &mut out));
            // SAFETY: initialised above.
            let out = out.map(|v| unsafe { v.assume_init() });
            assert_eq!(out, [0.0; 6], "a product over no depth is zeros");
        }
    }

    #[test]
    fn deep_products_split_into_equal_blocks() {
        assert_eq!(blocking(500, 16, 4).kc, 500);
        assert_eq!(blocking(2048, 16, 4).kc, 512);
        assert_eq!(blocking(1100, 16, 4).kc, 367);
        let bl = blocking(2048, 16, 4);
        assert!(bl.kc * bl.nc * 4 <= B_BLOCK_BYTES && bl.nc.is_multiple_of(16) && bl.nc > 0);
    }
}
