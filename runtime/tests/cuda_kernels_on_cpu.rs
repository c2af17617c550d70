//! The cuda kernels' semantics, checked without a GPU: `kernels.cu` (with the backend's own
//! instantiations) is compiled by the host C++ compiler against a small shim for CUDA's
//! built-ins, and each kernel is run on the CPU, one emulated thread at a time over a grid of
//! several blocks, against the binary reference. This catches wrong element semantics
//! (wrapping, saturating casts, NaN rules, integer pow), indexing and argument order. Kernels
//! that share memory within a block (the sort's tiles) run with all the block's threads at
//! once, as OS threads meeting at a real barrier for `__syncthreads`. What it cannot catch
//! (warp scheduling, memory ordering between blocks, cuBLAS) needs a GPU, where
//! `conformance.rs` runs every op on cuda.

mod common;

use std::ffi::c_void;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use common::{close, random, with_nans};
use tensorbook::testing::cuda;
use tensorbook::testing::cuda::kernels::{self, ShapeArg, ViewArg};
use tensorbook::testing::ir::{BinaryOp, ReduceOp, Strided, UnaryOp};
use tensorbook::testing::{broadcast_shapes, broadcast_strides, strides};
use tensorbook::{on, DType, Device, Direction, Tensor, TieBreak};

/// CUDA's built-ins for a host compiler. `blockIdx`, `threadIdx`, `blockDim` and `gridDim` are
/// globals the test sets before each emulated thread.
const SHIM: &str = r#"
#include <cmath>
#include <cstring>
#include <pthread.h>
struct dim3_ { unsigned int x, y, z; };
// threadIdx is each emulated thread's own; the rest are set once per block.
extern "C" { dim3_ blockIdx, blockDim, gridDim; }
thread_local dim3_ threadIdx;
extern "C" void emulate_thread(unsigned int x) { threadIdx.x = x; threadIdx.y = 0; threadIdx.z = 0; }
// A block whose threads run together meets here; one thread at a time needs no barrier.
static pthread_barrier_t block_barrier;
static bool cooperative = false;
extern "C" void emulate_cooperative(unsigned int threads) {
    if (cooperative) pthread_barrier_destroy(&block_barrier);
    cooperative = threads > 0;
    if (cooperative) pthread_barrier_init(&block_barrier, nullptr, threads);
}
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
inline void __syncthreads() { if (cooperative) pthread_barrier_wait(&block_barrier); }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
inline long long __double_as_longlong(double d) { long long i; std::memcpy(&i, &d, 8); return i; }
using std::exp; using std::log; using std::sqrt; using std::tanh; using std::sin; using std::cos;
using std::floor; using std::ceil; using std::round; using std::pow;
// CUDA's erfinv has no C counterpart: the same method as the runtime's reference (Giles'
// approximation, Halley steps on erf, or erfc in the tails, until they stop moving it).
inline double erfinv(double y) {
    if (std::isnan(y) || std::fabs(y) > 1.0) return NAN;
    if (std::fabs(y) == 1.0) return std::copysign(INFINITY, y);
    if (y == 0.0) return y;
    double a = std::fabs(y);
    double w = -std::log((1.0 - a) * (1.0 + a));
    static const double lo[] = {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
        0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941};
    static const double hi[] = {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
        0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682};
    const double* c = w < 5.0 ? lo : hi;
    w = w < 5.0 ? w - 2.5 : std::sqrt(w) - 3.0;
    double p = 0.0;
    for (int i = 0; i < 9; i++) p = c[i] + p * w;
    double x = p * a;
    for (int k = 0; k < 6; k++) {
        double f = a < 0.5 ? std::erf(x) - a : (1.0 - a) - std::erfc(x);
        double slope = 1.1283791670955126 * std::exp(-x * x);
        if (slope == 0.0 || !std::isfinite(f)) break;
        double step = f / slope;
        double change = step / (1.0 + x * step);
        x -= change;
        if (std::fabs(change) <= 2.220446049250313e-16 * std::fabs(x)) break;
    }
    return std::copysign(x, y);
}
inline float erfinvf(float y) { return (float)erfinv((double)y); }
using std::fmod; using std::atan2;
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
// One emulated thread runs at a time, so an atomic is a plain update.
template <typename T> inline T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
inline unsigned int atomicCAS(unsigned int* p, unsigned int expected, unsigned int v) {
    unsigned int old = *p; if (old == expected) *p = v; return old;
}
"#;

#[repr(C)]
#[derive(Clone, Copy)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

/// The dtypes the kernels compute in: half floats only convert and move on the device
/// (`memory::dispatch` computes on them in f32), checked by the cast tests; complex values
/// have no kernels (dispatch runs their ops on host).
fn computed_dtypes() -> impl Iterator<Item = DType> {
    kernel_dtypes().filter(|d| !d.is_half())
}

/// The dtypes the GPU's kernels are written for: every one but c64 and c128.
fn kernel_dtypes() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|d| !d.is_complex())
}

struct Emulated {
    lib: libloading::Library,
}

/// The kernels built for the CPU (built once per test process). No C++ compiler is a failure.
fn emulated() -> &'static Mutex<Emulated> {
    static LIB: OnceLock<Mutex<Emulated>> = OnceLock::new();
    LIB.get_or_init(|| Mutex::new(build("kernels", &kernels::source())))
}

/// `source` compiled for the CPU against the shim into `<tag>.so`.
fn build(tag: &str, source: &str) -> Emulated {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cuda-kernels-on-cpu");
    std::fs::create_dir_all(&dir).expect("the target's temporary directory");
    let src = dir.join(format!("{tag}.cpp"));
    let so = dir.join(format!("{tag}.so"));
    std::fs::write(&src, format!("{SHIM}\n{source}")).expect("the kernels' C++ source");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let status = std::process::Command::new(&cxx)
        .args(["-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o"])
        .arg(&so)
        .arg(&src)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{cxx} could not compile {tag} for the CPU: {s}"),
        // Without a compiler nothing here would be checked, and a pass would claim it was:
        // the set-up installs g++ (Debian's build-essential), so its absence is a failure.
        Err(e) => panic!(
            "no C++ compiler to run the cuda kernels on the CPU ({cxx}: {e}); install g++ \
             (apt-get install g++) or name one in CXX"
        ),
    }
    // SAFETY: a library we just built from our own source; no initialisers beyond C++'s.
    let lib = unsafe { libloading::Library::new(&so) }.expect("load the emulated kernels");
    Emulated { lib }
}

impl Emulated {
    fn set(&self, name: &[u8], value: Dim3) {
        // SAFETY: the shim defines these four globals as `dim3_`, laid out as `Dim3`.
        unsafe {
            let sym: libloading::Symbol<*mut Dim3> = self.lib.get(name).expect("shim global");
            **sym = value;
        }
    }

    fn set_thread(&self, t: u32) {
        // SAFETY: the shim defines `emulate_thread(unsigned int)`.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(u32)> =
                self.lib.get(b"emulate_thread").expect("shim function");
            f(t)
        }
    }

    fn set_cooperative(&self, threads: u32) {
        // SAFETY: the shim defines `emulate_cooperative(unsigned int)`.
        unsafe {
            let f: libloading::Symbol<unsafe extern "C" fn(u32)> =
                self.lib.get(b"emulate_cooperative").expect("shim function");
            f(threads)
        }
    }

    /// Runs `call` once per thread of a `grid` x `block` launch, one thread at a time.
    fn launch<F: Copy>(&self, name: &str, grid: u32, block: u32, call: impl Fn(F)) {
        // SAFETY: `F` is the kernel's signature as the caller states it from kernels.cu.
        let f: F = unsafe { *self.lib.get::<F>(name.as_bytes()).expect(name) };
        let dim = |x| Dim3 { x, y: 1, z: 1 };
        self.set(b"gridDim", dim(grid));
        self.set(b"blockDim", dim(block));
        for b in 0..grid {
            for t in 0..block {
                self.set(b"blockIdx", dim(b));
                self.set_thread(t);
                call(f);
            }
        }
    }

    /// Runs a launch whose blocks share memory: each block's threads run at once, on OS
    /// threads meeting at the shim's barrier, and the blocks one after another. `call` gets
    /// raw addresses as integers, so that it can cross threads.
    fn launch_cooperative<F: Copy + Send + Sync>(
        &self,
        name: &str,
        grid: u32,
        block: u32,
        call: impl Fn(F) + Sync,
    ) {
        // SAFETY: as in `launch`.
        let f: F = unsafe { *self.lib.get::<F>(name.as_bytes()).expect(name) };
        let dim = |x| Dim3 { x, y: 1, z: 1 };
        self.set(b"gridDim", dim(grid));
        self.set(b"blockDim", dim(block));
        self.set_cooperative(block);
        for b in 0..grid {
            self.set(b"blockIdx", dim(b));
            std::thread::scope(|scope| {
                for t in 0..block {
                    let call = &call;
                    scope.spawn(move || {
                        self.set_thread(t);
                        call(f);
                    });
                }
            });
        }
        self.set_cooperative(0);
    }
}

/// A tensor's elements as raw memory (u64 words keep any dtype aligned).
fn raw(t: &Tensor) -> Vec<u64> {
    let bytes = t.to_bytes().unwrap();
    let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
    // SAFETY: the words hold at least `bytes.len()` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr() as *mut u8, bytes.len())
    };
    words
}

fn output(dtype: DType, len: usize) -> Vec<u64> {
    vec![0u64; (len * dtype.size_in_bytes()).div_ceil(8).max(1)]
}

fn values(dtype: DType, words: &[u64], len: usize) -> Vec<f64> {
    let p = words.as_ptr() as *const u8;
    // SAFETY: `words` holds `len` elements of `dtype` written by a kernel.
    unsafe {
        (0..len)
            .map(|i| match dtype {
                DType::U8 => *p.add(i) as f64,
                DType::U16 => *(p as *const u16).add(i) as f64,
                DType::U32 => *(p as *const u32).add(i) as f64,
                DType::U64 => *(p as *const u64).add(i) as f64,
                DType::S8 => *(p as *const i8).add(i) as f64,
                DType::S16 => *(p as *const i16).add(i) as f64,
                DType::S32 => *(p as *const i32).add(i) as f64,
                DType::S64 => *(p as *const i64).add(i) as f64,
                DType::F32 => *(p as *const f32).add(i) as f64,
                DType::F64 => *(p as *const f64).add(i),
                DType::F16 => tensorbook::f16::from_bits(*(p as *const u16).add(i)).to_f64(),
                DType::BF16 => tensorbook::bf16::from_bits(*(p as *const u16).add(i)).to_f64(),
                DType::C64 | DType::C128 => panic!("no kernel writes complex values"),
            })
            .collect()
    }
}

fn check(what: &str, expected: &Tensor, got: &[u64]) {
    let e = expected.to_f64_vec().unwrap();
    let g = values(expected.dtype(), got, e.len());
    for (i, (x, y)) in e.iter().zip(&g).enumerate() {
        // A half is only ever rounded once, so the kernel's must be the reference's bits
        // (zeros keep their sign; NaN is any NaN).
        let same = if expected.dtype().is_half() {
            x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan())
        } else {
            close(expected.dtype(), *x, *y)
        };
        assert!(
            same,
            "{what}: element {i}: binary gives {x}, the cuda kernel gives {y}"
        );
    }
}

fn binary_reference(op: BinaryOp, a: &Tensor, b: &Tensor) -> Tensor {
    match op {
        BinaryOp::Add => a.add(b),
        BinaryOp::Subtract => a.subtract(b),
        BinaryOp::Multiply => a.multiply(b),
        BinaryOp::Divide => a.divide(b),
        BinaryOp::Pow => a.pow(b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::Equal => a.equal(b),
        BinaryOp::NotEqual => a.not_equal(b),
        BinaryOp::Less => a.less(b),
        BinaryOp::LessEqual => a.less_equal(b),
        BinaryOp::Greater => a.greater(b),
        BinaryOp::GreaterEqual => a.greater_equal(b),
        BinaryOp::Remainder => a.remainder(b),
        BinaryOp::Quotient => a.quotient(b),
        BinaryOp::Atan2 => a.atan2(b),
        BinaryOp::BitwiseAnd => a.bitwise_and(b),
        BinaryOp::BitwiseOr => a.bitwise_or(b),
        BinaryOp::BitwiseXor => a.bitwise_xor(b),
        BinaryOp::LeftShift => a.left_shift(b),
        BinaryOp::RightShift => a.right_shift(b),
    }
    .unwrap()
}

type BinaryKernel = unsafe extern "C" fn(
    u64,
    ShapeArg,
    ViewArg,
    ViewArg,
    i32,
    *const c_void,
    *const c_void,
    *mut c_void,
);
type MapKernel = unsafe extern "C" fn(u64, *const c_void, *mut c_void);
type ReduceKernel = unsafe extern "C" fn(u64, u64, *const c_void, *mut c_void);
type ArgKernel = unsafe extern "C" fn(u64, u64, u64, i32, *const c_void, *mut c_void);
type MatmulKernel =
    unsafe extern "C" fn(u64, u64, u64, u64, u64, u64, *const c_void, *const c_void, *mut c_void);
type StridedKernel = unsafe extern "C" fn(u64, ShapeArg, ViewArg, *const c_void, *mut c_void);
type TakeKernel = unsafe extern "C" fn(u64, u64, u64, u64, *const u64, *const c_void, *mut c_void);
type SelectKernel = unsafe extern "C" fn(
    u64,
    ShapeArg,
    ViewArg,
    ViewArg,
    ViewArg,
    i32,
    *const c_void,
    *const c_void,
    *const c_void,
    *mut c_void,
);
type CumulativeKernel = unsafe extern "C" fn(u64, u64, u64, i32, *const c_void, *mut c_void);
type ChunksKernel =
    unsafe extern "C" fn(u64, u64, u64, u64, i32, *const c_void, *mut c_void, *mut c_void);
type CarryKernel = unsafe extern "C" fn(u64, u64, u64, u64, i32, *const c_void, *mut c_void);
type PlaceKernel = unsafe extern "C" fn(u64, u64, u64, u64, *const c_void, *mut c_void);

#[test]
fn elementwise_binary_kernels_match_binary() {
    let k = emulated();
    let k = k.lock().unwrap_or_else(|e| e.into_inner());
    // Same shape (both in order), a broadcast (one in order, one strided; both strided), and a
    // number on either side (one element repeated).
    let cases: [(&[usize], &[usize]); 5] = [
        (&[3, 5], &[3, 5]),
        (&[2, 3, 4], &[3, 1]),
        (&[4], &[2, 1]),
        (&[2, 3], &[]),
        (&[1, 1], &[3, 2]),
    ];
    for dtype in computed_dtypes() {
        for (seed, (sa, sb)) in cases.iter().enumerate() {
            let a = with_nans(&random(seed as u64, dtype, sa));
            let b = random(seed as u64 + 100, dtype, sb);
            let shape = broadcast_shapes("t", sa, sb).unwrap();
            let va = Strided {
                offset: 0,
                strides: broadcast_strides(sa, &shape),
            };
            let vb = Strided {
                offset: 0,
                strides: broadcast_strides(sb, &shape),
            };
            let layout = kernels::binary_layout(&shape, &va, &vb);
            let (s, views) = kernels::shape_and_views("t", &shape, &[&va, &vb]).unwrap();
            let n: usize = shape.iter().product();
            for op in BinaryOp::ALL {
                if !op.defined_for(dtype) {
                    continue; // the frontend converts or refuses these operands
                }
                let expected = binary_reference(op, &a, &b);
                let (ra, rb) = (raw(&a), raw(&b));
                let mut o = output(expected.dtype(), n);
                let op_ptr = o.as_mut_ptr() as *mut c_void;
                k.launch(
                    &kernels::binary_name(op, dtype),
                    2,
                    3,
                    |f: BinaryKernel| unsafe {
                        f(
                            n as u64,
                            s,
                            views[0],
                            views[1],
                            layout,
                            ra.as_ptr() as _,
                            rb.as_ptr() as _,
                            op_ptr,
                        )
                    },
                );
                check(
                    &format!("{} {dtype} {sa:?} {sb:?}", op.name()),
                    &expected,
                    &o,
                );
            }
        }
    }
}

#[test]
fn unary_kernels_match_binary() {
    let k = emulated();
    let k = k.lock().unwrap_or_else(|e| e.into_inner());
    for dtype in computed_dtypes() {
        let mut x = with_nans(&random(3, dtype, &[4, 6]));
        if dtype == DType::S32 {
            // Wrapping at the edge: -(-2^31) and |-2^31| stay -2^31, as in Rust.
            x = on(Device::BINARY)
                .from_vec(vec![i32::MIN, -5, 0, 7, i32::MAX, 2], &[6])
                .unwrap();
        }
        if dtype.is_float() {
            x = x.multiply(2.7).unwrap(); // halves and beyond for round, negatives for sqrt/log
        }
        for op in UnaryOp::ALL {
            let Some(name) = kernels::unary_name(op, dtype) else {
                assert!(
                    (op.needs_float() && !dtype.is_float())
                        || (op.integer_only() && dtype.is_float())
                );
                continue;
            };
            let expected = match op {
                UnaryOp::Negate => x.negate(),
                UnaryOp::Abs => x.abs(),
                UnaryOp::Sign => x.sign(),
                UnaryOp::Square => x.square(),
                UnaryOp::Exp => x.exp(),
                UnaryOp::Log => x.log(),
                UnaryOp::Sqrt => x.sqrt(),
                UnaryOp::Rsqrt => x.rsqrt(),
                UnaryOp::Tanh => x.tanh(),
                UnaryOp::Sigmoid => x.sigmoid(),
                UnaryOp::Sin => x.sin(),
                UnaryOp::Cos => x.cos(),
                UnaryOp::Floor => x.floor(),
                UnaryOp::Ceil => x.ceil(),
                UnaryOp::Round => x.round(),
                UnaryOp::Expm1 => x.expm1(),
                UnaryOp::Log1p => x.log1p(),
                UnaryOp::Log2 => x.log2(),
                UnaryOp::Log10 => x.log10(),
                UnaryOp::Tan => x.tan(),
                UnaryOp::Sinh => x.sinh(),
                UnaryOp::Cosh => x.cosh(),
                UnaryOp::Asin => x.asin(),
                UnaryOp::Acos => x.acos(),
                UnaryOp::Atan => x.atan(),
                UnaryOp::Asinh => x.asinh(),
                UnaryOp::Acosh => x.acosh(),
                UnaryOp::Atanh => x.atanh(),
                UnaryOp::Cbrt => x.cbrt(),
                UnaryOp::Erf => x.erf(),
                UnaryOp::Erfc => x.erfc(),
                UnaryOp::ErfInv => x.erf_inv(),
                UnaryOp::BitwiseNot => x.bitwise_not(),
                UnaryOp::CountLeadingZeros => x.count_leading_zeros(),
                UnaryOp::PopulationCount => x.population_count(),
                // A real value is its own conjugate and has no imaginary part.
                UnaryOp::Conjugate => Ok(x.clone()),
                UnaryOp::Imag => on(Device::BINARY).zeros(dtype, x.shape()),
            }
            .unwrap();
            let rx = raw(&x);
            let mut o = output(dtype, x.size());
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            k.launch(&name, 2, 3, |f: MapKernel| unsafe {
                f(x.size() as u64, rx.as_ptr() as _, op_ptr)
            });
            check(&format!("{} {dtype}", op.name()), &expected, &o);
        }
    }
}

/// The 65,536 values of a half dtype, in bit order.
fn every_pattern(dtype: DType) -> Tensor {
    let bytes: Vec<u8> = (0..=u16::MAX).flat_map(|b| b.to_le_bytes()).collect();
    on(Device::BINARY).from_binary(&bytes, dtype).unwrap()
}

/// f64 values around every rounding decision of f16 and bf16: each binade's halfway points
/// (exact ties, and a hair above and below), the subnormal range and its underflow to zero,
/// the largest finite values and the overflow to infinity, NaN and infinities.
fn rounding_cases() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        65504.0,
        65519.99,
        65520.0,
        -65520.0,
        (2.0 - 2f64.powi(-7)) * 2f64.powi(127),
        (2.0 - 2f64.powi(-8)) * 2f64.powi(127),
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        1e-300,
    ];
    for (man, bias) in [(10, 15), (7, 127)] {
        for e in -(bias + man + 2)..=(bias + 1) {
            let ulp = 2f64.powi(e - man);
            for k in [1.0, 3.0, 5.0, 1023.0] {
                let tie = 2f64.powi(e) + (k - 0.5) * ulp;
                for x in [tie, tie.next_up(), tie.next_down(), 2f64.powi(e)] {
                    v.extend([x, -x]);
                }
            }
        }
    }
    v
}

#[test]
fn casts_saturate_and_wrap_like_rust() {
    let k = emulated();
    let k = k.lock().unwrap_or_else(|e| e.into_inner());
    let specials = vec![
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e10,
        -1e10,
        3e19,
        -3e19,
        300.7,
        -3.5,
        2.5,
        255.5,
        256.0,
        -0.0,
        0.9999,
        2147483647.5,
        -2147483648.7,
        65537.0,
    ];
    let sources: Vec<Tensor> = [DType::F64, DType::F32]
        .into_iter()
        .map(|d| {
            on(Device::BINARY)
                .from_vec(specials.clone(), &[specials.len()])
                .unwrap()
                .as_type(d)
                .unwrap()
        })
        .chain([
            // Every 16-bit pattern as f16 and as bf16, to every dtype.
            every_pattern(DType::F16),
            every_pattern(DType::BF16),
            // Values that round to each half: ties either way, subnormals, overflow.
            on(Device::BINARY)
                .from_vec(rounding_cases(), &[rounding_cases().len()])
                .unwrap(),
            on(Device::BINARY)
                .from_vec(rounding_cases(), &[rounding_cases().len()])
                .unwrap()
                .as_type(DType::F32)
                .unwrap(),
            on(Device::BINARY)
                .from_vec(vec![i64::MIN, -1, 255, 256, 1 << 40, i64::MAX, -129], &[7])
                .unwrap(),
            on(Device::BINARY)
                .from_vec(vec![i32::MIN, -1, 255, 256, 70000, i32::MAX], &[6])
                .unwrap(),
            on(Device::BINARY)
                .from_vec(vec![0u8, 1, 127, 128, 255], &[5])
                .unwrap(),
        ])
        .collect();
    for x in &sources {
        for to in kernel_dtypes() {
            let expected = x.as_type(to).unwrap();
            let rx = raw(x);
            let mut o = output(to, x.size());
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            k.launch(
                &kernels::cast_name(x.dtype(), to),
                2,
                3,
                |f: MapKernel| unsafe { f(x.size() as u64, rx.as_ptr() as _, op_ptr) },
            );
            check(&format!("cast {} -> {to}", x.dtype()), &expected, &o);
        }
    }
}

#[test]
fn reductions_and_arg_reductions_match_binary() {
    let k = emulated();
    let k = k.lock().unwrap_or_else(|e| e.into_inner());
    for dtype in computed_dtypes() {
        for (rows, len) in [(5usize, 7usize), (1, 40), (3, 0)] {
            let x = with_nans(&random(rows as u64, dtype, &[rows, len]));
            for op in [
                ReduceOp::Sum,
                ReduceOp::Product,
                ReduceOp::Max,
                ReduceOp::Min,
            ] {
                let input = match op {
                    ReduceOp::Sum | ReduceOp::Product => x.as_type(dtype.accumulator()).unwrap(),
                    _ => x.clone(),
                };
                let axes: &[isize] = &[1];
                let expected = match op {
                    ReduceOp::Sum => input.sum(axes),
                    ReduceOp::Product => input.product(axes),
                    ReduceOp::Max => input.reduce_max(axes),
                    ReduceOp::Min => input.reduce_min(axes),
                }
                .unwrap();
                let rx = raw(&input);
                let mut o = output(input.dtype(), rows);
                let op_ptr = o.as_mut_ptr() as *mut c_void;
                // One thread per block: the shared-memory tree needs real threads.
                k.launch(
                    &kernels::reduce_name(op, input.dtype()),
                    2,
                    1,
                    |f: ReduceKernel| unsafe {
                        f(rows as u64, len as u64, rx.as_ptr() as _, op_ptr)
                    },
                );
                check(
                    &format!("reduce {op:?} {} [{rows},{len}]", input.dtype()),
                    &expected,
                    &o,
                );
            }
        }
        let x = with_nans(&random(9, dtype, &[2, 5, 3]));
        for want_max in [1, 0] {
            // The kernel writes s64 positions; the s32 of argmax is a cast after it.
            let expected = if want_max == 1 {
                x.argmax_with(1, false, TieBreak::Low, DType::S64)
            } else {
                x.argmin_with(1, false, TieBreak::Low, DType::S64)
            }
            .unwrap();
            let rx = raw(&x);
            let mut o = output(DType::S64, 6);
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            k.launch(&kernels::named("arg", dtype), 2, 3, |f: ArgKernel| unsafe {
                f(2, 5, 3, want_max, rx.as_ptr() as _, op_ptr)
            });
            check(&format!("arg (max={want_max}) {dtype}"), &expected, &o);
        }
    }
}

#[test]
fn integer_matmul_and_layout_kernels_match_binary() {
    let k = emulated();
    let k = k.lock().unwrap_or_else(|e| e.into_inner());
    for dtype in computed_dtypes() {
        if !dtype.is_float() {
            // A batch of two against one shared right operand (batch stride 0).
            let a = random(1, dtype, &[2, 3, 4]);
            let b = random(2, dtype, &[4, 5]);
            let expected = a.dot(&b).unwrap();
            let (ra, rb) = (raw(&a), raw(&b));
            let mut o = output(dtype, 30);
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            k.launch(
                &kernels::named("matmul", dtype),
                2,
                3,
                |f: MatmulKernel| unsafe {
                    f(
                        2,
                        3,
                        4,
                        5,
                        12,
                        0,
                        ra.as_ptr() as _,
                        rb.as_ptr() as _,
                        op_ptr,
                    )
                },
            );
            check(&format!("matmul {dtype}"), &expected, &o);
        }

        let x = random(3, dtype, &[2, 3, 4]);
        let rx = raw(&x);
        // copy_strided: a transpose.
        let perm = [2usize, 0, 1];
        let src = strides(x.shape());
        let view = Strided {
            offset: 0,
            strides: perm.iter().map(|&p| src[p]).collect(),
        };
        let out_shape: Vec<usize> = perm.iter().map(|&p| x.shape()[p]).collect();
        let expected = x.transpose(perm).unwrap();
        let (s, v) = kernels::shape_and_views("t", &out_shape, &[&view]).unwrap();
        let mut o = output(dtype, 24);
        let op_ptr = o.as_mut_ptr() as *mut c_void;
        k.launch(
            &kernels::named("copy_strided", dtype),
            2,
            3,
            |f: StridedKernel| unsafe { f(24, s, v[0], rx.as_ptr() as _, op_ptr) },
        );
        check(&format!("copy_strided {dtype}"), &expected, &o);

        // select: a [2,3,4] choice against a [3,1] one under a [4] predicate, and a number
        // (one element repeated) on the false side.
        let other = random(7, dtype, &[3, 1]);
        let mask = on(Device::BINARY)
            .from_vec(vec![1u8, 0, 3, 0], &[4])
            .unwrap();
        let (ro, rm) = (raw(&other), raw(&mask));
        let number = random(8, dtype, &[]);
        let rn = raw(&number);
        for (what, f_tensor, f_raw) in [("tensor", &other, &ro), ("number", &number, &rn)] {
            let expected = mask.select(&x, f_tensor).unwrap();
            let shape = x.shape().to_vec();
            let views: Vec<Strided> = [x.shape(), f_tensor.shape(), mask.shape()]
                .iter()
                .map(|s| Strided {
                    offset: 0,
                    strides: broadcast_strides(s, &shape),
                })
                .collect();
            let refs: Vec<&Strided> = views.iter().collect();
            let layout = kernels::operand_layout(&shape, &refs);
            let (s, v) = kernels::shape_and_views("t", &shape, &refs).unwrap();
            let mut o = output(dtype, 24);
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            k.launch(
                &kernels::named("select", dtype),
                2,
                3,
                |f: SelectKernel| unsafe {
                    f(
                        24,
                        s,
                        v[0],
                        v[1],
                        v[2],
                        layout,
                        rx.as_ptr() as _,
                        f_raw.as_ptr() as _,
                        rm.as_ptr() as _,
                        op_ptr,
                    )
                },
            );
            check(&format!("select {what} {dtype}"), &expected, &o);
        }

        // cumulative scans along the middle axis, both ways.
        for op in [
            ReduceOp::Sum,
            ReduceOp::Product,
            ReduceOp::Max,
            ReduceOp::Min,
        ] {
            for reverse in [false, true] {
                let expected = match op {
                    ReduceOp::Sum => x.cumulative_sum(1, reverse),
                    ReduceOp::Product => x.cumulative_product(1, reverse),
                    ReduceOp::Max => x.cumulative_max(1, reverse),
                    ReduceOp::Min => x.cumulative_min(1, reverse),
                }
                .unwrap();
                let mut o = output(dtype, 24);
                let op_ptr = o.as_mut_ptr() as *mut c_void;
                k.launch(
                    &kernels::cumulative_name(op, dtype),
                    2,
                    3,
                    |f: CumulativeKernel| unsafe {
                        f(8, 3, 4, i32::from(reverse), rx.as_ptr() as _, op_ptr)
                    },
                );
                check(
                    &format!("cumulative {op:?} {reverse} {dtype}"),
                    &expected,
                    &o,
                );
            }
        }

        // The chunked scan of long lines: chunks, their totals scanned, the carry.
        let long = random(14, dtype, &[2, 1000]);
        let rl = raw(&long);
        let (chunk, chunks) = (128u64, 8u64);
        for op in [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min] {
            for reverse in [false, true] {
                let scan = |t: &Tensor, axis: isize, rev: bool| match op {
                    ReduceOp::Sum => t.cumulative_sum(axis, rev),
                    ReduceOp::Max => t.cumulative_max(axis, rev),
                    _ => t.cumulative_min(axis, rev),
                };
                let expected = scan(&long, 1, reverse).unwrap();
                let name = kernels::cumulative_name(op, dtype);
                let mut o = output(dtype, 2000);
                let mut totals = output(dtype, 16);
                let (op_ptr, tp) = (
                    o.as_mut_ptr() as *mut c_void,
                    totals.as_mut_ptr() as *mut c_void,
                );
                let back = i32::from(reverse);
                k.launch(&format!("{name}_chunks"), 2, 3, |f: ChunksKernel| unsafe {
                    f(2, 1000, chunk, chunks, back, rl.as_ptr() as _, op_ptr, tp)
                });
                let sums = on(Device::BINARY)
                    .from_vec(values(dtype, &totals, 16), &[2, 8])
                    .unwrap()
                    .as_type(dtype)
                    .unwrap();
                let scanned = raw(&scan(&sums, 1, false).unwrap());
                k.launch(&format!("{name}_carry"), 2, 3, |f: CarryKernel| unsafe {
                    f(2, 1000, chunk, chunks, back, scanned.as_ptr() as _, op_ptr)
                });
                check(
                    &format!("chunked cumulative {op:?} {reverse} {dtype}"),
                    &expected,
                    &o,
                );
            }
        }

        // take along the middle axis.
        let idx = [2usize, 0, 2, 1];
        let idx_t = on(Device::BINARY)
            .from_vec(idx.iter().map(|&i| i as i64).collect::<Vec<_>>(), &[4])
            .unwrap();
        let expected = x.take(&idx_t, 1).unwrap();
        let idx64: Vec<u64> = idx.iter().map(|&i| i as u64).collect();
        let mut o = output(dtype, 32);
        let op_ptr = o.as_mut_ptr() as *mut c_void;
        k.launch(
            &kernels::named("take", dtype),
            2,
            3,
            |f: TakeKernel| unsafe { f(32, 3, 4, 4, idx64.as_ptr(), rx.as_ptr() as _, op_ptr) },
        );
        check(&format!("take {dtype}"), &expected, &o);

        // concatenate along axis 1: [2,3,4] ++ [2,1,4].
        let y = random(4, dtype, &[2, 1, 4]);
        let ry = raw(&y);
        let expected = Tensor::concatenate(&[x.clone(), y.clone()], 1).unwrap();
        let mut o = output(dtype, 32);
        let op_ptr = o.as_mut_ptr() as *mut c_void;
        let out_row = 4 * 4;
        for (part, raw_part, part_row, offset) in [(&x, &rx, 12u64, 0u64), (&y, &ry, 4, 12)] {
            k.launch(
                &kernels::named("place_rows", dtype),
                2,
                3,
                |f: PlaceKernel| unsafe {
                    f(
                        part.size() as u64,
                        part_row,
                        out_row,
                        offset,
                        raw_part.as_ptr() as _,
                        op_ptr,
                    )
                },
            );
        }
        check(&format!("concatenate {dtype}"), &expected, &o);

        // put_slice: a [2,2] block into [4,5] at [1,2] (scatter through a strided view).
        let base = random(5, dtype, &[4, 5]);
        let update = random(6, dtype, &[2, 2]);
        let expected = base.put_slice(&[1, 2], &update).unwrap();
        let mut o = raw(&base);
        let op_ptr = o.as_mut_ptr() as *mut c_void;
        let view = Strided {
            offset: 5 + 2,
            strides: vec![5, 1],
        };
        let (s, v) = kernels::shape_and_views("t", &[2, 2], &[&view]).unwrap();
        let ru = raw(&update);
        k.launch(
            &kernels::named("scatter_strided", dtype),
            2,
            3,
            |f: StridedKernel| unsafe { f(4, s, v[0], ru.as_ptr() as _, op_ptr) },
        );
        check(&format!("put_slice {dtype}"), &expected, &o);
    }
}

type SortStepKernel = unsafe extern "C" fn(u64, u64, u64, u64, u64, u64, i32, i32, *mut c_void);
type ArgsortStepKernel =
    unsafe extern "C" fn(u64, u64, u64, u64, u64, u64, i32, i32, *mut c_void, *mut i64);
type PositionsKernel = unsafe extern "C" fn(u64, u64, u64, *mut i64);
type SortTilesKernel = unsafe extern "C" fn(u64, u64, u64, u64, u64, u64, i32, *mut c_void);
type ArgsortTilesKernel =
    unsafe extern "C" fn(u64, u64, u64, u64, u64, u64, i32, *mut c_void, *mut i64);
type GatherKernel = unsafe extern "C" fn(u64, u64, *const i64, *const c_void, *mut c_void);
type ScatterKernel = unsafe extern "C" fn(u64, u64, i32, *const i64, *const c_void, *mut c_void);

/// The bitonic sort network (values, and positions with ties by position) along the middle
/// axis of lines whose length is no power of two, NaNs included; the gather with positions
/// outside; the scatter-add and put with repeated and outside positions (the atomics, and
/// the byte-wide compare-and-swap add on u8).
#[test]
fn sort_gather_and_scatter_kernels_match_binary() {
    let k = emulated().lock().unwrap();
    for dtype in computed_dtypes() {
        let x = with_nans(&random(31, dtype, &[2, 37, 3]))
            .as_type(dtype)
            .unwrap();
        // Tiles smaller than a line (steps across tiles, merges inside them) and one tile
        // holding the whole line.
        for tile in [8, 64] {
            emulated_sort(&k, &x, 1, tile, &format!("tile {tile}"));
        }
        let t = random(32, dtype, &[10]);
        let rt = raw(&t);
        let positions = [3i64, -1, 9, 10, 0, 3, i64::MIN];
        let tv = t.to_f64_vec().unwrap();
        let gathered: Vec<f64> = positions
            .iter()
            .map(|&p| {
                usize::try_from(p)
                    .ok()
                    .and_then(|p| tv.get(p))
                    .copied()
                    .unwrap_or(0.0)
            })
            .collect();
        let expected = on(Device::BINARY)
            .from_vec(gathered, &[7])
            .unwrap()
            .as_type(dtype)
            .unwrap();
        let mut o = output(dtype, 7);
        let op_ptr = o.as_mut_ptr() as *mut c_void;
        k.launch(
            &kernels::named("gather", dtype),
            2,
            3,
            |f: GatherKernel| unsafe { f(7, 10, positions.as_ptr(), rt.as_ptr() as _, op_ptr) },
        );
        check(&format!("gather {dtype}"), &expected, &o);

        let updates = random(33, dtype, &[7]);
        let ru = raw(&updates);
        let index = on(Device::BINARY)
            .from_vec(positions.to_vec(), &[7, 1])
            .unwrap();
        for add in [1, 0] {
            let expected = if add == 1 {
                t.indexed_add(&index, &updates, ..)
            } else {
                t.indexed_put(&index, &updates, ..)
            }
            .unwrap();
            let mut o = rt.clone();
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            k.launch(
                &kernels::named("scatter", dtype),
                2,
                3,
                |f: ScatterKernel| unsafe {
                    f(7, 10, add, positions.as_ptr(), ru.as_ptr() as _, op_ptr)
                },
            );
            check(&format!("scatter add={add} {dtype}"), &expected, &o);
        }
    }
}

/// Sorts `x` along `axis` with the launches the backend makes (`kernels::sort_plan`) on the
/// emulated kernels, values and positions both ways, against binary.
fn emulated_sort(k: &Emulated, x: &Tensor, axis: usize, tile: u64, what: &str) {
    let shape = x.shape();
    let dtype = x.dtype();
    let n = x.size();
    let len = shape[axis] as u64;
    let inner: usize = shape[axis + 1..].iter().product();
    let (lines, inner) = (n as u64 / len, inner as u64);
    let width = len.next_power_of_two();
    let rx = raw(x);
    for direction in [Direction::Asc, Direction::Desc] {
        let desc = i32::from(direction == Direction::Desc);
        for positions in [false, true] {
            let kind = if positions { "argsort" } else { "sort" };
            let mut keys = rx.clone();
            let mut pos = vec![0i64; n];
            let (kp, pp) = (keys.as_mut_ptr() as usize, pos.as_mut_ptr() as usize);
            if positions {
                k.launch("sort_positions", 2, 3, |f: PositionsKernel| unsafe {
                    f(lines, len, inner, pp as *mut i64)
                });
            }
            let tiles = (lines * (width / tile)) as u32;
            for launch in kernels::sort_plan(width, tile) {
                match launch {
                    kernels::SortLaunch::Tiles { merge_size } => {
                        let name = kernels::named(&format!("{kind}_tiles"), dtype);
                        let threads = (tile / 2) as u32;
                        if positions {
                            k.launch_cooperative(
                                &name,
                                tiles.min(3),
                                threads,
                                |f: ArgsortTilesKernel| unsafe {
                                    f(
                                        lines,
                                        len,
                                        inner,
                                        width,
                                        tile,
                                        merge_size,
                                        desc,
                                        kp as *mut c_void,
                                        pp as *mut i64,
                                    )
                                },
                            );
                        } else {
                            k.launch_cooperative(
                                &name,
                                tiles.min(3),
                                threads,
                                |f: SortTilesKernel| unsafe {
                                    f(
                                        lines,
                                        len,
                                        inner,
                                        width,
                                        tile,
                                        merge_size,
                                        desc,
                                        kp as *mut c_void,
                                    )
                                },
                            );
                        }
                    }
                    kernels::SortLaunch::Step { size, half, flip } => {
                        let name = kernels::named(&format!("{kind}_step"), dtype);
                        if positions {
                            k.launch(&name, 2, 3, |f: ArgsortStepKernel| unsafe {
                                f(
                                    lines,
                                    len,
                                    inner,
                                    width,
                                    size,
                                    half,
                                    flip,
                                    desc,
                                    kp as *mut c_void,
                                    pp as *mut i64,
                                )
                            });
                        } else {
                            k.launch(&name, 2, 3, |f: SortStepKernel| unsafe {
                                f(
                                    lines,
                                    len,
                                    inner,
                                    width,
                                    size,
                                    half,
                                    flip,
                                    desc,
                                    kp as *mut c_void,
                                )
                            });
                        }
                    }
                }
            }
            if positions {
                let expected = x.argsort_as(axis as isize, direction, DType::S64).unwrap();
                assert_eq!(
                    pos,
                    expected.to_vec::<i64>().unwrap(),
                    "argsort {dtype} {direction:?} {what}"
                );
            } else {
                check(
                    &format!("sort {dtype} {direction:?} {what}"),
                    &x.sort(axis as isize, direction).unwrap(),
                    &keys,
                );
            }
        }
    }
}

/// A line longer than a tile of the real size: a block of 1024 threads per tile, merges of
/// tiles through global steps.
#[test]
fn a_line_longer_than_a_tile_sorts_through_merges() {
    let k = emulated().lock().unwrap();
    let x = with_nans(&random(35, DType::F32, &[5000]))
        .as_type(DType::F32)
        .unwrap();
    emulated_sort(&k, &x, 0, kernels::SORT_TILE, "5000 entries");
}

type FusedKernelFn = unsafe extern "C" fn(
    u64,
    u64,
    ShapeArg,
    cuda::fused::FusedViewsArg,
    cuda::fused::FusedInputsArg,
    *mut c_void,
);

/// Each generated kernel of a fused region (one module per region, as on a GPU) run on the
/// CPU against binary's step-by-step run of the same region.
#[test]
fn generated_fused_kernels_match_binary() {
    for (i, (name, region, inputs)) in common::regions::regions().into_iter().enumerate() {
        let kernel = cuda::fused::kernel(&region).unwrap();
        let k = build(&format!("fused-{i}"), &kernel.source);
        // The kernel's part: the region, folded per row when the reduction is trailing.
        let expected = match &kernel.then_reduce {
            None => tensorbook::testing::run_fused(&region, &inputs, Device::BINARY).unwrap(),
            Some(_) => {
                let mut whole = (*region).clone();
                whole.reduce = None;
                tensorbook::testing::run_fused(&whole, &inputs, Device::BINARY).unwrap()
            }
        };
        let raws: Vec<Vec<u64>> = inputs.iter().map(raw).collect();
        let mut pointers = cuda::fused::FusedInputsArg {
            pointers: [0; cuda::fused::MAX_INPUTS],
        };
        for (slot, r) in pointers.pointers.iter_mut().zip(&raws) {
            *slot = r.as_ptr() as u64;
        }
        let len = expected.size();
        let mut o = output(kernel.out_dtype, len);
        let op_ptr = o.as_mut_ptr() as *mut c_void;
        // A reduction's rows are one block each; one thread per block keeps the emulated
        // shared-memory tree trivial (threads run one after another here).
        let (grid, block) = if kernel.rows.is_some() {
            (2, 1)
        } else {
            (3, 4)
        };
        let (n, row_len, shape, views) = (kernel.n, kernel.row_len, kernel.shape, kernel.views);
        k.launch(&kernel.name, grid, block, |f: FusedKernelFn| unsafe {
            f(n, row_len, shape, views, pointers, op_ptr)
        });
        check(&format!("generated kernel for {name}"), &expected, &o);
    }
}

type ConvKernel =
    unsafe extern "C" fn(u64, kernels::ConvArg, *const c_void, *const c_void, *mut c_void);

/// The direct convolution kernel against binary's `conv`, the dimensions written out as the
/// frontend builds them: strides with same padding, feature groups with a dilated kernel and
/// cropping, batch groups over a dilated input, three spatial axes.
#[test]
fn convolution_kernel_matches_binary() {
    use tensorbook::testing::ir::ConvDims;
    use tensorbook::{Conv, Padding};
    let k = emulated();
    let k = k.lock().unwrap_or_else(|e| e.into_inner());
    let dims = |x: &[usize], w: &[usize], out: &[usize], strides: &[usize], lo: &[i64]| ConvDims {
        batch: x[0],
        channels: x[1],
        out_channels: w[0],
        input: x[2..].to_vec(),
        kernel: w[2..].to_vec(),
        output: out.to_vec(),
        strides: strides.to_vec(),
        padding_lo: lo.to_vec(),
        input_dilation: vec![1; x.len() - 2],
        kernel_dilation: vec![1; x.len() - 2],
        feature_groups: 1,
        batch_groups: 1,
    };
    let cases: Vec<(Vec<usize>, Vec<usize>, Conv, ConvDims)> = vec![
        (
            vec![2, 3, 7, 6],
            vec![4, 3, 3, 3],
            Conv::new().strides(2).padding(Padding::Same),
            dims(&[2, 3, 7, 6], &[4, 3, 3, 3], &[4, 3], &[2, 2], &[1, 1]),
        ),
        (
            vec![2, 4, 9],
            vec![6, 2, 2],
            Conv::new()
                .feature_group_size(2)
                .kernel_dilation(3)
                .padding([(-1, 2)]),
            ConvDims {
                kernel_dilation: vec![3],
                feature_groups: 2,
                ..dims(&[2, 4, 9], &[6, 2, 2], &[7], &[1], &[-1])
            },
        ),
        (
            vec![4, 2, 5],
            vec![4, 2, 3],
            Conv::new()
                .batch_group_size(2)
                .input_dilation(2)
                .padding([(2, 1)]),
            ConvDims {
                input_dilation: vec![2],
                batch_groups: 2,
                ..dims(&[4, 2, 5], &[4, 2, 3], &[10], &[1], &[2])
            },
        ),
        (
            vec![1, 2, 4, 3, 5],
            vec![3, 2, 2, 2, 3],
            Conv::new().strides([1, 2, 1]),
            dims(
                &[1, 2, 4, 3, 5],
                &[3, 2, 2, 2, 3],
                &[3, 1, 3],
                &[1, 2, 1],
                &[0, 0, 0],
            ),
        ),
    ];
    for dtype in [DType::F32, DType::F64] {
        for (i, (xs, ws, options, d)) in cases.iter().enumerate() {
            let x = random(60 + i as u64, dtype, xs);
            let w = random(70 + i as u64, dtype, ws);
            let expected = x.conv(&w, options.clone()).unwrap();
            assert_eq!(
                expected.shape(),
                d.out_shape(),
                "case {i}: the dimensions by hand"
            );
            let n = expected.size();
            let (rx, rw) = (raw(&x), raw(&w));
            let mut o = output(dtype, n);
            let op_ptr = o.as_mut_ptr() as *mut c_void;
            let arg = kernels::conv_arg(d).unwrap();
            k.launch(
                &kernels::named("conv", dtype),
                3,
                7,
                |f: ConvKernel| unsafe {
                    f(n as u64, arg, rx.as_ptr() as _, rw.as_ptr() as _, op_ptr)
                },
            );
            check(&format!("conv case {i} {dtype}"), &expected, &o);
        }
    }
}
