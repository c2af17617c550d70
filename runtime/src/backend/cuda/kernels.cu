// tensorbook's cuda kernels, compiled at run time by NVRTC (no CUDA toolkit at build time).
// Every kernel mirrors the scalar meaning in `backend/mod.rs` and `dtype.rs`, so that cuda
// agrees with the binary reference: integer arithmetic wraps, float-to-integer casts saturate
// (NaN gives 0, as Rust's `as` does), min/max propagate NaN, argmax/argmin keep the first.
// Kernel instantiations (`extern "C"` names) are appended by `kernels.rs`.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;
typedef float f32;
typedef double f64;
typedef unsigned long long index_t;
// Half floats are their 16 bits: the only kernels that take them are casts and copies
// (`memory::dispatch` computes every other op on them in f32), so no half arithmetic or
// `cuda_fp16.h` is needed, and the same conversions run in the CPU emulation.
struct f16 { unsigned short bits; };
struct bf16 { unsigned short bits; };

#define MAX_RANK 12

// A tensor shape (row-major) and a strided reading of a buffer: element `coords` of the view
// is `offset + sum(coords[d] * strides[d])`. Passed by value; `kernels.rs` has the twins.
struct Shape {
    unsigned int rank;
    unsigned int pad;
    index_t dims[MAX_RANK];
};

struct View {
    index_t offset;
    index_t strides[MAX_RANK];
};

// Unrolled over MAX_RANK so that every index into `s` and `v` is a constant: a runtime index
// into a by-value kernel parameter makes each thread copy the structs to local memory first,
// which made a 10M-element binary op take 1.1 ms on an H100 where a unary op took 52 µs.
__device__ __forceinline__ index_t view_offset(const Shape& s, const View& v, index_t i) {
    index_t off = v.offset;
#pragma unroll
    for (int d = MAX_RANK - 1; d >= 0; --d) {
        if (d < (int)s.rank) {
            index_t dim = s.dims[d];
            off += (i % dim) * v.strides[d];
            i /= dim;
        }
    }
    return off;
}

#define GRID_STRIDE(i, n) \
    for (index_t i = (index_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (index_t)gridDim.x * blockDim.x)

// ---- element semantics -------------------------------------------------------------------

// Narrow types compute in unsigned int: u16 * u16 in C++'s promoted `int` could overflow.
template <typename T> struct Unsigned { typedef T type; };
template <> struct Unsigned<u16> { typedef unsigned int type; };
template <> struct Unsigned<s8> { typedef unsigned int type; };
template <> struct Unsigned<s16> { typedef unsigned int type; };
template <> struct Unsigned<s32> { typedef unsigned int type; };
template <> struct Unsigned<s64> { typedef unsigned long long type; };

template <typename T> struct Limits;
template <> struct Limits<u8> {
    __device__ static u8 lowest() { return 0; }
    __device__ static u8 highest() { return 255; }
};
template <> struct Limits<u16> {
    __device__ static u16 lowest() { return 0; }
    __device__ static u16 highest() { return 0xffff; }
};
template <> struct Limits<u32> {
    __device__ static u32 lowest() { return 0; }
    __device__ static u32 highest() { return 0xffffffffu; }
};
template <> struct Limits<u64> {
    __device__ static u64 lowest() { return 0; }
    __device__ static u64 highest() { return 0xffffffffffffffffULL; }
};
template <> struct Limits<s8> {
    __device__ static s8 lowest() { return (s8)-128; }
    __device__ static s8 highest() { return 127; }
};
template <> struct Limits<s16> {
    __device__ static s16 lowest() { return (s16)-32768; }
    __device__ static s16 highest() { return 32767; }
};
template <> struct Limits<s32> {
    __device__ static s32 lowest() { return (s32)0x80000000; }
    __device__ static s32 highest() { return 0x7fffffff; }
};
template <> struct Limits<s64> {
    __device__ static s64 lowest() { return (s64)0x8000000000000000ULL; }
    __device__ static s64 highest() { return 0x7fffffffffffffffLL; }
};
template <> struct Limits<f32> {
    __device__ static f32 lowest() { return __int_as_float((int)0xff800000u); }
    __device__ static f32 highest() { return __int_as_float((int)0x7f800000u); }
};
template <> struct Limits<f64> {
    __device__ static f64 lowest() { return __longlong_as_double(0xfff0000000000000ULL); }
    __device__ static f64 highest() { return __longlong_as_double(0x7ff0000000000000ULL); }
};

template <typename T> __device__ __forceinline__ bool is_nan(T) { return false; }
template <> __device__ __forceinline__ bool is_nan<f32>(f32 x) { return x != x; }
template <> __device__ __forceinline__ bool is_nan<f64>(f64 x) { return x != x; }

// Integer arithmetic in the unsigned twin: wraps like Rust's wrapping_* without signed
// overflow (undefined behaviour in C++).
template <typename T> __device__ __forceinline__ T w_add(T a, T b) {
    typedef typename Unsigned<T>::type U;
    return (T)(U)((U)a + (U)b);
}
template <typename T> __device__ __forceinline__ T w_sub(T a, T b) {
    typedef typename Unsigned<T>::type U;
    return (T)(U)((U)a - (U)b);
}
template <typename T> __device__ __forceinline__ T w_mul(T a, T b) {
    typedef typename Unsigned<T>::type U;
    return (T)(U)((U)a * (U)b);
}
__device__ __forceinline__ f32 w_add(f32 a, f32 b) { return a + b; }
__device__ __forceinline__ f64 w_add(f64 a, f64 b) { return a + b; }
__device__ __forceinline__ f32 w_sub(f32 a, f32 b) { return a - b; }
__device__ __forceinline__ f64 w_sub(f64 a, f64 b) { return a - b; }
__device__ __forceinline__ f32 w_mul(f32 a, f32 b) { return a * b; }
__device__ __forceinline__ f64 w_mul(f64 a, f64 b) { return a * b; }

// Integer division is never reached through the API (Nx divides integers as floats); kept
// total like `checked_div(..).unwrap_or(0)`.
template <typename T> __device__ __forceinline__ T e_div(T a, T b) {
    if (b == 0) return 0;
    if (b == (T)-1 && a == Limits<T>::lowest() && Limits<T>::lowest() != 0) return 0;
    return a / b;
}
__device__ __forceinline__ f32 e_div(f32 a, f32 b) { return a / b; }
__device__ __forceinline__ f64 e_div(f64 a, f64 b) { return a / b; }

// Integer power as `Element::pow`: negative exponents give 1, ±1 or 0 (XLA's rule); otherwise
// wrapping exponentiation by squaring over the whole exponent.
template <typename T> __device__ __forceinline__ T e_pow(T base, T e) {
    if (e < 0) {
        s64 b = (s64)base;
        if (b == 1) return 1;
        if (b == -1) return (((unsigned long long)(s64)e & 1ULL) == 0) ? (T)1 : base;
        return 0;
    }
    unsigned long long n = (unsigned long long)(s64)e;
    T acc = 1;
    T b = base;
    while (n > 0) {
        if (n & 1) acc = w_mul(acc, b);
        n >>= 1;
        if (n > 0) b = w_mul(b, b);
    }
    return acc;
}
__device__ __forceinline__ f32 e_pow(f32 a, f32 b) { return powf(a, b); }
__device__ __forceinline__ f64 e_pow(f64 a, f64 b) { return pow(a, b); }

// Remainder with the dividend's sign, as `Element::rem`: an integer by 0 gives the dividend,
// and MIN % -1 is 0 (C++ leaves both undefined).
template <typename T> __device__ __forceinline__ T e_rem(T a, T b) {
    if (b == 0) return a;
    if (Limits<T>::lowest() != 0 && b == (T)-1) return 0;
    return a % b;
}
__device__ __forceinline__ f32 e_rem(f32 a, f32 b) { return fmodf(a, b); }
__device__ __forceinline__ f64 e_rem(f64 a, f64 b) { return fmod(a, b); }

// Integer division toward zero, as `Element::quot`: by 0 every bit set, MIN / -1 wraps.
template <typename T> __device__ __forceinline__ T e_quot(T a, T b) {
    if (b == 0) return (T)-1;
    if (Limits<T>::lowest() != 0 && b == (T)-1) return w_sub((T)0, a);
    return a / b;
}

__device__ __forceinline__ f32 e_atan2(f32 a, f32 b) { return atan2f(a, b); }
__device__ __forceinline__ f64 e_atan2(f64 a, f64 b) { return atan2(a, b); }

// Shifts as `Element::shift_left`/`shift_right`: the count read as unsigned, and past the
// width 0 (left) or the sign fill (right; arithmetic on signed types).
template <typename T> __device__ __forceinline__ T e_shl(T a, T b) {
    typedef typename Unsigned<T>::type U;
    unsigned long long n = (unsigned long long)(s64)b;
    if (n >= sizeof(T) * 8) return 0;
    return (T)(U)((U)a << n);
}
template <typename T> __device__ __forceinline__ T e_shr(T a, T b) {
    unsigned long long n = (unsigned long long)(s64)b;
    if (n >= sizeof(T) * 8) return a < 0 ? (T)-1 : (T)0;
    return (T)(a >> n);
}

__device__ __forceinline__ u8 e_clz(u8 x) { return (u8)(__clz((int)(unsigned int)x) - 24); }
__device__ __forceinline__ u16 e_clz(u16 x) { return (u16)(__clz((int)(unsigned int)x) - 16); }
__device__ __forceinline__ u32 e_clz(u32 x) { return (u32)__clz((int)x); }
__device__ __forceinline__ u64 e_clz(u64 x) { return (u64)__clzll((long long)x); }
__device__ __forceinline__ s8 e_clz(s8 x) { return (s8)(__clz((int)(unsigned int)(u8)x) - 24); }
__device__ __forceinline__ s16 e_clz(s16 x) { return (s16)(__clz((int)(unsigned int)(u16)x) - 16); }
__device__ __forceinline__ s32 e_clz(s32 x) { return (s32)__clz(x); }
__device__ __forceinline__ s64 e_clz(s64 x) { return (s64)__clzll(x); }
__device__ __forceinline__ u8 e_popc(u8 x) { return (u8)__popc((unsigned int)x); }
__device__ __forceinline__ u16 e_popc(u16 x) { return (u16)__popc((unsigned int)x); }
__device__ __forceinline__ u32 e_popc(u32 x) { return (u32)__popc(x); }
__device__ __forceinline__ u64 e_popc(u64 x) { return (u64)__popcll(x); }
__device__ __forceinline__ s8 e_popc(s8 x) { return (s8)__popc((unsigned int)(u8)x); }
__device__ __forceinline__ s16 e_popc(s16 x) { return (s16)__popc((unsigned int)(u16)x); }
__device__ __forceinline__ s32 e_popc(s32 x) { return (s32)__popc((unsigned int)x); }
__device__ __forceinline__ s64 e_popc(s64 x) { return (s64)__popcll((unsigned long long)x); }

template <typename T> __device__ __forceinline__ T e_min(T a, T b) {
    return (is_nan(a) || a < b) ? a : b;
}
template <typename T> __device__ __forceinline__ T e_max(T a, T b) {
    return (is_nan(a) || a > b) ? a : b;
}

template <typename T> __device__ __forceinline__ T e_neg(T x) { return w_sub((T)0, x); }
__device__ __forceinline__ f32 e_neg(f32 x) { return -x; }
__device__ __forceinline__ f64 e_neg(f64 x) { return -x; }
template <typename T> __device__ __forceinline__ T e_abs(T x) { return x < 0 ? e_neg(x) : x; }
__device__ __forceinline__ f32 e_abs(f32 x) { return fabsf(x); }
__device__ __forceinline__ f64 e_abs(f64 x) { return fabs(x); }
template <typename T> __device__ __forceinline__ T e_sign(T x) {
    return x > 0 ? (T)1 : (x < 0 ? e_neg((T)1) : x);
}

// ---- op functors (names match `BinaryOp` / `UnaryOp` / `ReduceOp` in Rust) ------------------

#define ARITH(NAME, EXPR) \
    struct b_##NAME { template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return EXPR; } };
ARITH(add, w_add(a, b))
ARITH(subtract, w_sub(a, b))
ARITH(multiply, w_mul(a, b))
ARITH(divide, e_div(a, b))
ARITH(pow, e_pow(a, b))
ARITH(min, e_min(a, b))
ARITH(max, e_max(a, b))
ARITH(remainder, e_rem(a, b))
ARITH(quotient, e_quot(a, b))
ARITH(atan2, e_atan2(a, b))
ARITH(bitwise_and, (T)(a & b))
ARITH(bitwise_or, (T)(a | b))
ARITH(bitwise_xor, (T)(a ^ b))
ARITH(left_shift, e_shl(a, b))
ARITH(right_shift, e_shr(a, b))

#define COMPARE(NAME, EXPR) \
    struct b_##NAME { template <typename T> __device__ __forceinline__ u8 operator()(T a, T b) const { return (EXPR) ? 1 : 0; } };
COMPARE(equal, a == b)
COMPARE(not_equal, a != b)
COMPARE(less, a < b)
COMPARE(less_equal, a <= b)
COMPARE(greater, a > b)
COMPARE(greater_equal, a >= b)

#define UNARY(NAME, EXPR) \
    struct u_##NAME { template <typename T> __device__ __forceinline__ T operator()(T x) const { return EXPR; } };
UNARY(negate, e_neg(x))
UNARY(abs, e_abs(x))
UNARY(sign, e_sign(x))
UNARY(square, w_mul(x, x))
// On real types; complex values never reach the GPU's kernels (dispatch runs them on host).
UNARY(conjugate, x)
UNARY(imag, (T)0)
UNARY(exp, exp(x))
UNARY(log, log(x))
UNARY(sqrt, sqrt(x))
UNARY(rsqrt, (T)1 / sqrt(x))
UNARY(tanh, tanh(x))
// e^x / (1 + e^x) below 0 keeps tiny results that 1/(1+e^-x) would flush to 0.
UNARY(sigmoid, x < (T)0 ? exp(x) / ((T)1 + exp(x)) : (T)1 / ((T)1 + exp(-x)))
UNARY(sin, sin(x))
UNARY(cos, cos(x))
UNARY(floor, floor(x))
UNARY(ceil, ceil(x))
UNARY(round, round(x))
UNARY(bitwise_not, (T)~x)
UNARY(count_leading_zeros, e_clz(x))
UNARY(population_count, e_popc(x))
// Float math beyond the functions above: one overload per width, f32 through CUDA's
// f-suffixed functions and f64 through the plain ones, so no call depends on the C++ overloads
// a toolchain may or may not declare for float.
#define MATH1(NAME, F32, F64) \
    __device__ __forceinline__ f32 m_##NAME(f32 x) { return F32(x); } \
    __device__ __forceinline__ f64 m_##NAME(f64 x) { return F64(x); }
MATH1(expm1, expm1f, expm1)
MATH1(log1p, log1pf, log1p)
MATH1(log2, log2f, log2)
MATH1(log10, log10f, log10)
MATH1(tan, tanf, tan)
MATH1(sinh, sinhf, sinh)
MATH1(cosh, coshf, cosh)
MATH1(asin, asinf, asin)
MATH1(acos, acosf, acos)
MATH1(atan, atanf, atan)
MATH1(asinh, asinhf, asinh)
MATH1(acosh, acoshf, acosh)
MATH1(atanh, atanhf, atanh)
MATH1(cbrt, cbrtf, cbrt)
MATH1(erf, erff, erf)
MATH1(erfc, erfcf, erfc)
MATH1(erf_inv, erfinvf, erfinv)
UNARY(expm1, m_expm1(x))
UNARY(log1p, m_log1p(x))
UNARY(log2, m_log2(x))
UNARY(log10, m_log10(x))
UNARY(tan, m_tan(x))
UNARY(sinh, m_sinh(x))
UNARY(cosh, m_cosh(x))
UNARY(asin, m_asin(x))
UNARY(acos, m_acos(x))
UNARY(atan, m_atan(x))
UNARY(asinh, m_asinh(x))
UNARY(acosh, m_acosh(x))
UNARY(atanh, m_atanh(x))
UNARY(cbrt, m_cbrt(x))
UNARY(erf, m_erf(x))
UNARY(erfc, m_erfc(x))
UNARY(erf_inv, m_erf_inv(x))
// Integers: rounding is the identity.
UNARY(int_floor, x)
UNARY(int_ceil, x)
UNARY(int_round, x)

struct r_sum {
    template <typename T> __device__ static T identity() { return (T)0; }
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return w_add(a, b); }
};
struct r_product {
    template <typename T> __device__ static T identity() { return (T)1; }
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return w_mul(a, b); }
};
struct r_max {
    template <typename T> __device__ static T identity() { return Limits<T>::lowest(); }
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return e_max(a, b); }
};
struct r_min {
    template <typename T> __device__ static T identity() { return Limits<T>::highest(); }
    template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return e_min(a, b); }
};

// ---- casts: Rust's `as` through i64 (integers) or f64 (floats), as the binary backend does ----

template <typename To> __device__ __forceinline__ To from_i64(s64 v) { return (To)v; }
template <> __device__ __forceinline__ u8 from_i64<u8>(s64 v) { return (u8)(unsigned long long)v; }
template <> __device__ __forceinline__ u16 from_i64<u16>(s64 v) { return (u16)(unsigned long long)v; }
template <> __device__ __forceinline__ u32 from_i64<u32>(s64 v) { return (u32)(unsigned long long)v; }
template <> __device__ __forceinline__ u64 from_i64<u64>(s64 v) { return (u64)v; }
template <> __device__ __forceinline__ s8 from_i64<s8>(s64 v) { return (s8)(u8)(unsigned long long)v; }
template <> __device__ __forceinline__ s16 from_i64<s16>(s64 v) {
    return (s16)(u16)(unsigned long long)v;
}
template <> __device__ __forceinline__ s32 from_i64<s32>(s64 v) {
    return (s32)(unsigned int)(unsigned long long)v;
}

template <typename To> __device__ __forceinline__ To from_f64(f64 v) { return (To)v; }
template <> __device__ __forceinline__ u8 from_f64<u8>(f64 v) {
    if (v != v) return 0;
    if (v <= 0.0) return 0;
    if (v >= 255.0) return 255;
    return (u8)v;
}
template <> __device__ __forceinline__ u16 from_f64<u16>(f64 v) {
    if (v != v) return 0;
    if (v <= 0.0) return 0;
    if (v >= 65535.0) return 65535;
    return (u16)v;
}
template <> __device__ __forceinline__ u32 from_f64<u32>(f64 v) {
    if (v != v) return 0;
    if (v <= 0.0) return 0;
    if (v >= 4294967295.0) return Limits<u32>::highest();
    return (u32)v;
}
template <> __device__ __forceinline__ u64 from_f64<u64>(f64 v) {
    if (v != v) return 0;
    if (v <= 0.0) return 0;
    if (v >= 18446744073709551616.0) return Limits<u64>::highest();
    return (u64)v;
}
template <> __device__ __forceinline__ s8 from_f64<s8>(f64 v) {
    if (v != v) return 0;
    if (v <= -128.0) return Limits<s8>::lowest();
    if (v >= 127.0) return Limits<s8>::highest();
    return (s8)v;
}
template <> __device__ __forceinline__ s16 from_f64<s16>(f64 v) {
    if (v != v) return 0;
    if (v <= -32768.0) return Limits<s16>::lowest();
    if (v >= 32767.0) return Limits<s16>::highest();
    return (s16)v;
}
template <> __device__ __forceinline__ s32 from_f64<s32>(f64 v) {
    if (v != v) return 0;
    if (v <= -2147483648.0) return Limits<s32>::lowest();
    if (v >= 2147483647.0) return Limits<s32>::highest();
    return (s32)v;
}
template <> __device__ __forceinline__ s64 from_f64<s64>(f64 v) {
    if (v != v) return 0;
    if (v <= -9223372036854775808.0) return Limits<s64>::lowest();
    if (v >= 9223372036854775808.0) return Limits<s64>::highest();
    return (s64)v;
}

// ---- half floats: exact widening, and rounding to nearest even straight from f64 -----------
// A half with `man` mantissa bits and exponent bias `bias` (f16: 10, 15; bf16: 7, 127).

__device__ __forceinline__ f64 widen_half(unsigned short h, int man, int bias) {
    const int all_ones = 2 * bias + 1;
    unsigned long long sign = (unsigned long long)(h >> 15) << 63;
    int e = (h >> man) & all_ones;
    unsigned long long m = h & ((1u << man) - 1);
    if (e == all_ones) return __longlong_as_double((long long)(sign | 0x7ff0000000000000ULL | (m << (52 - man))));
    if (e == 0) {
        // A subnormal is m units of 2^(1 - bias - man), exact in f64.
        f64 unit = __longlong_as_double((long long)((unsigned long long)(1 - bias - man + 1023) << 52));
        f64 r = (f64)m * unit;
        return sign ? -r : r;
    }
    return __longlong_as_double(
        (long long)(sign | ((unsigned long long)(e - bias + 1023) << 52) | (m << (52 - man))));
}

__device__ __forceinline__ unsigned short round_to_half(f64 v, int man, int bias) {
    const unsigned int all_ones = 2 * bias + 1;
    unsigned long long b = (unsigned long long)__double_as_longlong(v);
    unsigned short sign = (unsigned short)((b >> 48) & 0x8000);
    unsigned long long a = b & 0x7fffffffffffffffULL;
    unsigned short inf = (unsigned short)(all_ones << man);
    if (a >= 0x7ff0000000000000ULL) {
        if (a == 0x7ff0000000000000ULL) return sign | inf;
        // NaN stays NaN: quiet, with the top of its payload.
        return sign | inf | (1u << (man - 1)) | (unsigned short)((a >> (52 - man)) & ((1u << man) - 1));
    }
    int e = (int)(a >> 52) - 1023;
    int min_exp = 1 - bias;
    // f64 subnormals and anything under half the smallest half subnormal round to zero.
    if ((a >> 52) == 0 || e < min_exp - man - 1) return sign;
    if (e > bias) return sign | inf;
    unsigned long long m = (a & 0xfffffffffffffULL) | (1ULL << 52);
    int shift = e >= min_exp ? 52 - man : 52 - man + (min_exp - e);
    unsigned long long q = m >> shift;
    unsigned long long rest = m & ((1ULL << shift) - 1);
    unsigned long long halfway = 1ULL << (shift - 1);
    if (rest > halfway || (rest == halfway && (q & 1))) q++;
    // A carry out of the mantissa moves into the exponent (up to infinity), as it should.
    if (e >= min_exp) return sign | (unsigned short)(((unsigned long long)(e + bias) << man) + (q - (1ULL << man)));
    return sign | (unsigned short)q;
}

template <> __device__ __forceinline__ f16 from_f64<f16>(f64 v) { f16 r; r.bits = round_to_half(v, 10, 15); return r; }
template <> __device__ __forceinline__ bf16 from_f64<bf16>(f64 v) { bf16 r; r.bits = round_to_half(v, 7, 127); return r; }
template <> __device__ __forceinline__ f16 from_i64<f16>(s64 v) { return from_f64<f16>((f64)v); }
template <> __device__ __forceinline__ bf16 from_i64<bf16>(s64 v) { return from_f64<bf16>((f64)v); }

template <typename From, typename To> struct Cast {
    __device__ static To apply(From x) { return from_i64<To>((s64)x); }
};
// u64 past 2^63 would turn negative through s64: to a float it converts directly, to another
// integer its low bits are the same either way.
template <typename To> __device__ __forceinline__ To from_u64(u64 v) { return from_i64<To>((s64)v); }
template <> __device__ __forceinline__ f32 from_u64<f32>(u64 v) { return (f32)v; }
template <> __device__ __forceinline__ f64 from_u64<f64>(u64 v) { return (f64)v; }
template <> __device__ __forceinline__ f16 from_u64<f16>(u64 v) { return from_f64<f16>((f64)v); }
template <> __device__ __forceinline__ bf16 from_u64<bf16>(u64 v) { return from_f64<bf16>((f64)v); }
template <typename To> struct Cast<u64, To> {
    __device__ static To apply(u64 x) { return from_u64<To>(x); }
};
template <typename To> struct Cast<f32, To> {
    __device__ static To apply(f32 x) { return from_f64<To>((f64)x); }
};
template <typename To> struct Cast<f64, To> {
    __device__ static To apply(f64 x) { return from_f64<To>(x); }
};
template <typename To> struct Cast<f16, To> {
    __device__ static To apply(f16 x) { return from_f64<To>(widen_half(x.bits, 10, 15)); }
};
template <typename To> struct Cast<bf16, To> {
    __device__ static To apply(bf16 x) { return from_f64<To>(widen_half(x.bits, 7, 127)); }
};

// ---- kernel bodies ----------------------------------------------------------------------

// Where operand `i` of a binary op reads element `i` of the output: `layout` has bit `in_order`
// set when the operand's view is the output's own order, bit `repeated` when it is one element
// repeated (a number broadcast); only other views pay for the division per axis.
__device__ __forceinline__ index_t operand_at(int layout, int in_order, int repeated,
                                              const Shape& s, const View& v, index_t i) {
    if (layout & in_order) return i;
    if (layout & repeated) return v.offset;
    return view_offset(s, v, i);
}

template <typename T, typename R, typename Op>
__device__ void binary_body(index_t n, const Shape& s, const View& va, const View& vb,
                            int layout, const T* a, const T* b, R* out) {
    Op op;
    if ((layout & 3) == 3) {
        GRID_STRIDE(i, n) { out[i] = op(a[i], b[i]); }
    } else {
        GRID_STRIDE(i, n) {
            out[i] = op(a[operand_at(layout, 1, 4, s, va, i)], b[operand_at(layout, 2, 8, s, vb, i)]);
        }
    }
}

// `t` where `p` is not 0, else `f`; `layout` as binary_body's, for operands t, f, p: bits 1, 2
// and 4 read in order, bits 8, 16 and 32 one element repeated.
template <typename T>
__device__ void select_body(index_t n, const Shape& s, const View& vt, const View& vf,
                            const View& vp, int layout, const T* t, const T* f, const u8* p,
                            T* out) {
    GRID_STRIDE(i, n) {
        out[i] = p[operand_at(layout, 4, 32, s, vp, i)] ? t[operand_at(layout, 1, 8, s, vt, i)]
                                                         : f[operand_at(layout, 2, 16, s, vf, i)];
    }
}

template <typename T, typename Op>
__device__ void unary_body(index_t n, const T* x, T* out) {
    Op op;
    GRID_STRIDE(i, n) { out[i] = op(x[i]); }
}

template <typename From, typename To>
__device__ void cast_body(index_t n, const From* x, To* out) {
    GRID_STRIDE(i, n) { out[i] = Cast<From, To>::apply(x[i]); }
}

template <typename T>
__device__ void copy_strided_body(index_t n, const Shape& s, const View& v, const T* x, T* out) {
    GRID_STRIDE(i, n) { out[i] = x[view_offset(s, v, i)]; }
}

// out[view(i)] = x[i]: put_slice writes its update block through this.
template <typename T>
__device__ void scatter_strided_body(index_t n, const Shape& s, const View& v, const T* x, T* out) {
    GRID_STRIDE(i, n) { out[view_offset(s, v, i)] = x[i]; }
}

// One block per row of `row_len` contiguous elements; a tree in shared memory combines the
// threads' partial results. Launched with REDUCE_THREADS threads.
#define REDUCE_THREADS 256
template <typename T, typename Op>
__device__ void reduce_rows_body(index_t rows, index_t row_len, const T* x, T* out) {
    __shared__ T partial[REDUCE_THREADS];
    Op op;
    for (index_t row = blockIdx.x; row < rows; row += gridDim.x) {
        T acc = Op::template identity<T>();
        const T* base = x + row * row_len;
        for (index_t j = threadIdx.x; j < row_len; j += blockDim.x) acc = op(acc, base[j]);
        partial[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned int width = blockDim.x / 2; width > 0; width /= 2) {
            if (threadIdx.x < width) partial[threadIdx.x] = op(partial[threadIdx.x], partial[threadIdx.x + width]);
            __syncthreads();
        }
        if (threadIdx.x == 0) out[row] = partial[0];
        __syncthreads();
    }
}

// Index of the first extremum along the middle axis of [outer, len, inner].
template <typename T>
__device__ void arg_body(index_t outer, index_t len, index_t inner, int want_max, const T* x, s64* out) {
    GRID_STRIDE(i, outer * inner) {
        index_t o = i / inner, in = i % inner;
        const T* base = x + o * len * inner + in;
        T best = base[0];
        s64 at = 0;
        for (index_t j = 1; j < len; ++j) {
            T v = base[j * inner];
            bool better = want_max ? (v > best || (is_nan(v) && !is_nan(best)))
                                   : (v < best || (is_nan(v) && !is_nan(best)));
            if (better) {
                best = v;
                at = (s64)j;
            }
        }
        out[i] = at;
    }
}

// Integer matrix products (floats go through cuBLAS): one thread per output element.
template <typename T>
__device__ void matmul_body(index_t batch, index_t m, index_t k, index_t n, index_t sa, index_t sb,
                            const T* a, const T* b, T* out) {
    GRID_STRIDE(idx, batch * m * n) {
        index_t bi = idx / (m * n), rest = idx % (m * n);
        index_t i = rest / n, j = rest % n;
        const T* ar = a + bi * sa + i * k;
        const T* bc = b + bi * sb + j;
        T acc = 0;
        for (index_t p = 0; p < k; ++p) acc = w_add(acc, w_mul(ar[p], bc[p * n]));
        out[idx] = acc;
    }
}

// out[o, j, in] = x[o, idx[j], in] over [outer, len, inner] -> [outer, count, inner].
template <typename T>
__device__ void take_body(index_t total, index_t len, index_t inner, index_t count,
                          const index_t* idx, const T* x, T* out) {
    GRID_STRIDE(i, total) {
        index_t in = i % inner, j = (i / inner) % count, o = i / (inner * count);
        out[i] = x[(o * len + idx[j]) * inner + in];
    }
}

// Copies one part of a concatenation: rows of `part_row` elements land `offset` elements into
// rows of `out_row` elements.
template <typename T>
__device__ void place_rows_body(index_t n, index_t part_row, index_t out_row, index_t offset,
                                const T* x, T* out) {
    GRID_STRIDE(i, n) { out[(i / part_row) * out_row + offset + i % part_row] = x[i]; }
}

// One thread per line along the axis (outer x inner lines), scanning its `len` entries in
// order: the running combine of `Op`, from the last entry back when `reverse`.
template <typename T, typename Op>
__device__ void cumulative_body(index_t lines, index_t len, index_t inner, int reverse,
                                const T* x, T* out) {
    Op op;
    GRID_STRIDE(l, lines) {
        index_t base = (l / inner) * len * inner + l % inner;
        T acc = Op::template identity<T>();
        for (index_t j = 0; j < len; ++j) {
            index_t at = base + (reverse ? len - 1 - j : j) * inner;
            acc = op(acc, x[at]);
            out[at] = acc;
        }
    }
}

// Few long contiguous lines: one thread per line would leave the GPU idle (a 10M-entry line
// took 516 ms on an H100). Each line is cut into `chunks` chunks of `chunk` entries (counted in
// scan order); a thread scans one chunk and leaves its total in `totals` (lines x chunks),
// the totals are scanned in turn, and each entry past the first chunk takes in the scanned
// total of the chunks before its own.
template <typename T, typename Op>
__device__ void scan_chunks_body(index_t lines, index_t len, index_t chunk, index_t chunks,
                                 int reverse, const T* x, T* out, T* totals) {
    Op op;
    GRID_STRIDE(t, lines * chunks) {
        index_t l = t / chunks, from = (t % chunks) * chunk;
        index_t to = from + chunk < len ? from + chunk : len;
        T acc = Op::template identity<T>();
        for (index_t j = from; j < to; ++j) {
            index_t at = l * len + (reverse ? len - 1 - j : j);
            acc = op(acc, x[at]);
            out[at] = acc;
        }
        totals[t] = acc;
    }
}

template <typename T, typename Op>
__device__ void scan_carry_body(index_t lines, index_t len, index_t chunk, index_t chunks,
                                int reverse, const T* scanned, T* out) {
    Op op;
    GRID_STRIDE(i, lines * len) {
        index_t l = i / len, k = i % len;
        index_t c = (reverse ? len - 1 - k : k) / chunk;
        if (c > 0) out[i] = op(scanned[l * chunks + c - 1], out[i]);
    }
}

// ---- sorting (Nx's order, as `ir/sorting.rs`: NaN after every number, first descending) ----

template <typename T> __device__ __forceinline__ bool sort_before(T a, T b, int descending) {
    if (descending) { T t = a; a = b; b = t; }
    return !is_nan(a) && (is_nan(b) || a < b);
}

// Entry k of line l, the lines of [outer, len, inner] running along the middle axis.
__device__ __forceinline__ index_t line_at(index_t l, index_t len, index_t inner, index_t k) {
    if (inner == 1) return l * len + k;
    return (l / inner) * len * inner + l % inner + k * inner;
}

// Puts entries `pa` < `pb` in order: entry pb first when it sorts before pa, or, with
// positions, when they tie and its position is the smaller (the order is then total, and the
// result the stable one).
template <typename T>
__device__ __forceinline__ void compare_exchange(T* keys, s64* pos, index_t pa, index_t pb,
                                                 int descending) {
    T ka = keys[pa], kb = keys[pb];
    bool swap = sort_before(kb, ka, descending);
    if (pos) {
        s64 ia = pos[pa], ib = pos[pb];
        swap = swap || (!sort_before(ka, kb, descending) && ib < ia);
        if (swap) { pos[pa] = ib; pos[pb] = ia; }
    }
    if (swap) { keys[pa] = kb; keys[pb] = ka; }
}

// The entries pair `q` of a step compares. Block sizes and distances are powers of two, so
// masks and shifts stand in for 64-bit divisions, which cost tens of instructions each on a
// GPU (the sort's steps are mostly this arithmetic).
__device__ __forceinline__ void sort_pair(index_t q, index_t size, index_t half, int flip,
                                          index_t* a, index_t* b) {
    if (flip) {
        index_t h = size >> 1, i = q & (h - 1), start = (q & ~(h - 1)) << 1;
        *a = start + i;
        *b = start + size - 1 - i;
    } else {
        *a = ((q & ~(half - 1)) << 1) | (q & (half - 1));
        *b = *a + half;
    }
}

// One compare-exchange step of a bitonic sort of every line, each padded to `width` (a power
// of two) with entries that come after all others and so never move: a pair whose second
// entry is padding is skipped. `flip` (the first step of merging blocks of `size`) pairs
// entry i of a block with its mirror image, which leaves every block ascending, so the
// padding stays at the end; the other steps pair entries `half` apart. With positions, ties
// go by position: the order is total and the result is the stable one, as argsort promises.
// One launch per step keeps each thread's work independent of the others'.
template <typename T>
__device__ void sort_step_body(index_t lines, index_t len, index_t inner, index_t width,
                               index_t size, index_t half, int flip, int descending, T* keys,
                               s64* pos) {
    index_t pairs = width / 2;
    int shift = __ffsll((long long)pairs) - 1;
    GRID_STRIDE(t, lines * pairs) {
        index_t l = t >> shift, q = t & (pairs - 1), a, b;
        sort_pair(q, size, half, flip, &a, &b);
        if (b >= len) continue;
        compare_exchange(keys, pos, line_at(l, len, inner, a), line_at(l, len, inner, b),
                         descending);
    }
}

#define SORT_TILE 2048

// The steps of the network that stay inside one tile of `tile` entries (a power of two, at
// most SORT_TILE) run in shared memory, one block per tile, with a barrier between steps: a
// line of up to SORT_TILE entries sorts in one launch instead of one launch per step, and a
// longer one leaves to global memory only the steps whose pairs cross tiles. With
// `merge_size` 0 the block runs every block size up to the tile; otherwise it finishes the
// merge of blocks of `merge_size` (the steps `half` below the tile).
template <typename T>
__device__ __forceinline__ void tile_step(T* sk, s64* sp, index_t base, index_t len,
                                          index_t tile, index_t size, index_t half, int flip,
                                          int descending, bool with_pos) {
    for (index_t q = threadIdx.x; q < tile / 2; q += blockDim.x) {
        index_t a, b;
        sort_pair(q, size, half, flip, &a, &b);
        if (base + b >= len) continue;
        compare_exchange(sk, with_pos ? sp : (s64*)0, a, b, descending);
    }
    __syncthreads();
}

template <typename T>
__device__ void sort_tiles_body(index_t lines, index_t len, index_t inner, index_t width,
                                index_t tile, index_t merge_size, int descending, T* keys,
                                s64* pos) {
    __shared__ T sk[SORT_TILE];
    __shared__ s64 sp[SORT_TILE];
    bool with_pos = pos != 0;
    index_t tiles = width / tile;
    for (index_t blk = blockIdx.x; blk < lines * tiles; blk += gridDim.x) {
        index_t l = blk / tiles, base = (blk % tiles) * tile;
        for (index_t e = threadIdx.x; e < tile; e += blockDim.x) {
            if (base + e >= len) continue;
            index_t at = line_at(l, len, inner, base + e);
            sk[e] = keys[at];
            if (with_pos) sp[e] = pos[at];
        }
        __syncthreads();
        if (merge_size == 0) {
            for (index_t size = 2; size <= tile; size *= 2) {
                tile_step(sk, sp, base, len, tile, size, 0, 1, descending, with_pos);
                for (index_t half = size / 4; half >= 1; half /= 2)
                    tile_step(sk, sp, base, len, tile, size, half, 0, descending, with_pos);
            }
        } else {
            for (index_t half = tile / 2; half >= 1; half /= 2)
                tile_step(sk, sp, base, len, tile, merge_size, half, 0, descending, with_pos);
        }
        for (index_t e = threadIdx.x; e < tile; e += blockDim.x) {
            if (base + e >= len) continue;
            index_t at = line_at(l, len, inner, base + e);
            keys[at] = sk[e];
            if (with_pos) pos[at] = sp[e];
        }
        __syncthreads();
    }
}

// ---- gathers and scatters by flat position (`ir/indexed.rs`) -------------------------------

template <typename T>
__device__ void gather_body(index_t n, index_t len, const s64* pos, const T* x, T* out) {
    GRID_STRIDE(i, n) {
        s64 p = pos[i];
        out[i] = (p >= 0 && (index_t)p < len) ? x[p] : (T)0;
    }
}

template <typename T> __device__ __forceinline__ void atomic_add(T* at, T v) { atomicAdd(at, v); }
template <> __device__ __forceinline__ void atomic_add<s64>(s64* at, s64 v) {
    // Two's complement: the unsigned sum wraps as the signed one does.
    atomicAdd((unsigned long long*)at, (unsigned long long)v);
}
template <> __device__ __forceinline__ void atomic_add<u64>(u64* at, u64 v) {
    atomicAdd((unsigned long long*)at, (unsigned long long)v);
}
// No 8- or 16-bit atomics: a compare-and-swap on the aligned word holding the element, changing
// only its bytes (allocations are aligned to 256 bytes, so the word is inside one).
template <typename T> __device__ __forceinline__ void atomic_add_narrow(T* at, T v) {
    unsigned int* word = (unsigned int*)((unsigned long long)at & ~3ull);
    unsigned int shift = (unsigned int)((unsigned long long)at & 3ull) * 8u;
    unsigned int mask = sizeof(T) == 1 ? 0xffu : 0xffffu;
    unsigned int old = *word, seen;
    do {
        seen = old;
        unsigned int part = ((seen >> shift) + (unsigned int)v) & mask;
        old = atomicCAS(word, seen, (seen & ~(mask << shift)) | (part << shift));
    } while (old != seen);
}
template <> __device__ __forceinline__ void atomic_add<u8>(u8* at, u8 v) { atomic_add_narrow(at, v); }
template <> __device__ __forceinline__ void atomic_add<s8>(s8* at, s8 v) { atomic_add_narrow(at, v); }
template <> __device__ __forceinline__ void atomic_add<u16>(u16* at, u16 v) { atomic_add_narrow(at, v); }
template <> __device__ __forceinline__ void atomic_add<s16>(s16* at, s16 v) { atomic_add_narrow(at, v); }

// Each update joins the output (already a copy of the target) at its position; positions
// outside are skipped. Adds are atomic, so repeated positions add up (in no fixed order).
template <typename T>
__device__ void scatter_body(index_t n, index_t len, int add, const s64* pos, const T* upd,
                             T* out) {
    GRID_STRIDE(i, n) {
        s64 p = pos[i];
        if (p < 0 || (index_t)p >= len) continue;
        if (add) atomic_add(out + p, upd[i]);
        else out[p] = upd[i];
    }
}

// One thread per output entry of a general convolution (`ir/conv.rs`): the input is
// [batch, channels, spatial...], the kernel [out_channels, channels / feature_groups,
// spatial...], the output [batch / batch_groups, out_channels, spatial...]. The sum runs over
// the group's channels and the kernel's taps; a tap that lands on padding or between dilated
// input entries reads nothing.
#define MAX_SPATIAL 8
struct Conv {
    index_t spatial, channels, out_channels, out_batch, group_channels, feature_groups,
        batch_groups, pad;
    index_t input[MAX_SPATIAL], kernel[MAX_SPATIAL], output[MAX_SPATIAL], strides[MAX_SPATIAL],
        input_dilation[MAX_SPATIAL], kernel_dilation[MAX_SPATIAL];
    s64 padding_lo[MAX_SPATIAL];
};

template <typename T>
__device__ void conv_body(index_t n, Conv c, const T* x, const T* w, T* out) {
    index_t out_size = 1, in_size = 1, taps = 1;
#pragma unroll
    for (int d = 0; d < MAX_SPATIAL; ++d) {
        if (d < (int)c.spatial) {
            out_size *= c.output[d];
            in_size *= c.input[d];
            taps *= c.kernel[d];
        }
    }
    index_t per_feature_group = c.out_channels / c.feature_groups;
    index_t per_batch_group = c.out_channels / c.batch_groups;
    GRID_STRIDE(i, n) {
        index_t pos = i % out_size, o = (i / out_size) % c.out_channels;
        index_t batch = (o / per_batch_group) * c.out_batch + i / out_size / c.out_channels;
        index_t first_channel = (o / per_feature_group) * c.group_channels;
        T acc = 0;
        for (index_t t = 0; t < taps; ++t) {
            index_t rest_p = pos, rest_t = t, at = 0, scale = 1;
            bool inside = true;
#pragma unroll
            for (int d = MAX_SPATIAL - 1; d >= 0; --d) {
                if (d < (int)c.spatial && inside) {
                    index_t y = rest_p % c.output[d], k = rest_t % c.kernel[d];
                    rest_p /= c.output[d];
                    rest_t /= c.kernel[d];
                    s64 p = (s64)(y * c.strides[d] + k * c.kernel_dilation[d]) - c.padding_lo[d];
                    s64 dil = (s64)c.input_dilation[d];
                    if (p < 0 || p % dil != 0 || (index_t)(p / dil) >= c.input[d]) {
                        inside = false;
                    } else {
                        at += (index_t)(p / dil) * scale;
                        scale *= c.input[d];
                    }
                }
            }
            if (!inside) continue;
            for (index_t ch = 0; ch < c.group_channels; ++ch) {
                acc += x[(batch * c.channels + first_channel + ch) * in_size + at] *
                       w[(o * c.group_channels + ch) * taps + t];
            }
        }
        out[i] = acc;
    }
}

#define CONV_KERNEL(T) \
    extern "C" __global__ void conv_##T(index_t n, Conv c, const T* x, const T* w, T* out) { \
        conv_body<T>(n, c, x, w, out); }
#define CUMULATIVE_KERNEL(NAME, OP, T) \
    extern "C" __global__ void NAME(index_t lines, index_t len, index_t inner, int reverse, \
                                    const T* x, T* out) { \
        cumulative_body<T, OP>(lines, len, inner, reverse, x, out); } \
    extern "C" __global__ void NAME##_chunks(index_t lines, index_t len, index_t chunk, \
                                             index_t chunks, int reverse, const T* x, T* out, \
                                             T* totals) { \
        scan_chunks_body<T, OP>(lines, len, chunk, chunks, reverse, x, out, totals); } \
    extern "C" __global__ void NAME##_carry(index_t lines, index_t len, index_t chunk, \
                                            index_t chunks, int reverse, const T* scanned, \
                                            T* out) { \
        scan_carry_body<T, OP>(lines, len, chunk, chunks, reverse, scanned, out); }
#define BINARY_KERNEL(NAME, OP, T, R) \
    extern "C" __global__ void NAME(index_t n, Shape s, View va, View vb, int layout, \
                                    const T* a, const T* b, R* out) { \
        binary_body<T, R, OP>(n, s, va, vb, layout, a, b, out); }
#define UNARY_KERNEL(NAME, OP, T) \
    extern "C" __global__ void NAME(index_t n, const T* x, T* out) { unary_body<T, OP>(n, x, out); }
#define CAST_KERNEL(NAME, FROM, TO) \
    extern "C" __global__ void NAME(index_t n, const FROM* x, TO* out) { cast_body<FROM, TO>(n, x, out); }
#define REDUCE_KERNEL(NAME, OP, T) \
    extern "C" __global__ void NAME(index_t rows, index_t row_len, const T* x, T* out) { \
        reduce_rows_body<T, OP>(rows, row_len, x, out); }
#define ARG_KERNEL(NAME, T) \
    extern "C" __global__ void NAME(index_t outer, index_t len, index_t inner, int want_max, \
                                    const T* x, s64* out) { arg_body<T>(outer, len, inner, want_max, x, out); }
#define MATMUL_KERNEL(NAME, T) \
    extern "C" __global__ void NAME(index_t batch, index_t m, index_t k, index_t n, index_t sa, \
                                    index_t sb, const T* a, const T* b, T* out) { \
        matmul_body<T>(batch, m, k, n, sa, sb, a, b, out); }
#define LAYOUT_KERNELS(T) \
    extern "C" __global__ void copy_strided_##T(index_t n, Shape s, View v, const T* x, T* out) { \
        copy_strided_body<T>(n, s, v, x, out); } \
    extern "C" __global__ void select_##T(index_t n, Shape s, View vt, View vf, View vp, int layout, \
                                          const T* t, const T* f, const u8* p, T* out) { \
        select_body<T>(n, s, vt, vf, vp, layout, t, f, p, out); } \
    extern "C" __global__ void scatter_strided_##T(index_t n, Shape s, View v, const T* x, T* out) { \
        scatter_strided_body<T>(n, s, v, x, out); } \
    extern "C" __global__ void take_##T(index_t total, index_t len, index_t inner, index_t count, \
                                        const index_t* idx, const T* x, T* out) { \
        take_body<T>(total, len, inner, count, idx, x, out); } \
    extern "C" __global__ void place_rows_##T(index_t n, index_t part_row, index_t out_row, \
                                              index_t offset, const T* x, T* out) { \
        place_rows_body<T>(n, part_row, out_row, offset, x, out); } \
    extern "C" __global__ void sort_step_##T(index_t lines, index_t len, index_t inner, \
                                             index_t width, index_t size, index_t half, int flip, \
                                             int descending, T* keys) { \
        sort_step_body<T>(lines, len, inner, width, size, half, flip, descending, keys, 0); } \
    extern "C" __global__ void argsort_step_##T(index_t lines, index_t len, index_t inner, \
                                                index_t width, index_t size, index_t half, \
                                                int flip, int descending, T* keys, s64* pos) { \
        sort_step_body<T>(lines, len, inner, width, size, half, flip, descending, keys, pos); } \
    extern "C" __global__ void sort_tiles_##T(index_t lines, index_t len, index_t inner, \
                                              index_t width, index_t tile, index_t merge_size, \
                                              int descending, T* keys) { \
        sort_tiles_body<T>(lines, len, inner, width, tile, merge_size, descending, keys, 0); } \
    extern "C" __global__ void argsort_tiles_##T(index_t lines, index_t len, index_t inner, \
                                                 index_t width, index_t tile, \
                                                 index_t merge_size, int descending, T* keys, \
                                                 s64* pos) { \
        sort_tiles_body<T>(lines, len, inner, width, tile, merge_size, descending, keys, pos); } \
    extern "C" __global__ void gather_##T(index_t n, index_t len, const s64* pos, const T* x, \
                                          T* out) { \
        gather_body<T>(n, len, pos, x, out); } \
    extern "C" __global__ void scatter_##T(index_t n, index_t len, int add, const s64* pos, \
                                           const T* upd, T* out) { \
        scatter_body<T>(n, len, add, pos, upd, out); }
// What half floats need besides casts: a strided copy and the take a display reads through.
#define MOVE_KERNELS(T) \
    extern "C" __global__ void copy_strided_##T(index_t n, Shape s, View v, const T* x, T* out) { \
        copy_strided_body<T>(n, s, v, x, out); } \
    extern "C" __global__ void take_##T(index_t total, index_t len, index_t inner, index_t count, \
                                        const index_t* idx, const T* x, T* out) { \
        take_body<T>(total, len, inner, count, idx, x, out); }
// The positions an argsort starts from: entry k of every line is k.
#define SORT_POSITIONS_KERNEL \
    extern "C" __global__ void sort_positions(index_t lines, index_t len, index_t inner, \
                                              s64* pos) { \
        GRID_STRIDE(i, lines * len) { pos[line_at(i / len, len, inner, i % len)] = (s64)(i % len); } }
