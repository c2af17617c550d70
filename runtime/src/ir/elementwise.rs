//! The op IR's vocabulary: the elementwise ops, reductions and index reductions with the scalar
//! meaning of each (so that backends differ only in how they loop), the strided views ops read
//! through, and the dimensions of a matrix product.

use crate::element::{Element, Float};

/// Elementwise ops of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// a + b
    Add,
    /// a - b
    Subtract,
    /// a * b
    Multiply,
    /// a / b (floats only: the frontend converts integers first, as Nx does)
    Divide,
    /// a ^ b
    Pow,
    /// min(a, b)
    Min,
    /// max(a, b)
    Max,
    /// a == b, as u8
    Equal,
    /// a != b, as u8
    NotEqual,
    /// a < b, as u8
    Less,
    /// a <= b, as u8
    LessEqual,
    /// a > b, as u8
    Greater,
    /// a >= b, as u8
    GreaterEqual,
    /// remainder with the sign of a (fmod on floats)
    Remainder,
    /// a / b rounded toward zero (integers only)
    Quotient,
    /// the angle of the point (b, a) (floats)
    Atan2,
    /// a & b (integers only)
    BitwiseAnd,
    /// a | b (integers only)
    BitwiseOr,
    /// a ^ b (integers only)
    BitwiseXor,
    /// a << b (integers only)
    LeftShift,
    /// a >> b, arithmetic on signed types (integers only)
    RightShift,
}

impl BinaryOp {
    /// Every elementwise op of two operands.
    pub const ALL: [BinaryOp; 21] = [
        BinaryOp::Add,
        BinaryOp::Subtract,
        BinaryOp::Multiply,
        BinaryOp::Divide,
        BinaryOp::Pow,
        BinaryOp::Min,
        BinaryOp::Max,
        BinaryOp::Equal,
        BinaryOp::NotEqual,
        BinaryOp::Less,
        BinaryOp::LessEqual,
        BinaryOp::Greater,
        BinaryOp::GreaterEqual,
        BinaryOp::Remainder,
        BinaryOp::Quotient,
        BinaryOp::Atan2,
        BinaryOp::BitwiseAnd,
        BinaryOp::BitwiseOr,
        BinaryOp::BitwiseXor,
        BinaryOp::LeftShift,
        BinaryOp::RightShift,
    ];

    /// The op's name in error messages.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Subtract => "subtract",
            BinaryOp::Multiply => "multiply",
            BinaryOp::Divide => "divide",
            BinaryOp::Pow => "pow",
            BinaryOp::Min => "min",
            BinaryOp::Max => "max",
            BinaryOp::Equal => "equal",
            BinaryOp::NotEqual => "not_equal",
            BinaryOp::Less => "less",
            BinaryOp::LessEqual => "less_equal",
            BinaryOp::Greater => "greater",
            BinaryOp::GreaterEqual => "greater_equal",
            BinaryOp::Remainder => "remainder",
            BinaryOp::Quotient => "quotient",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::BitwiseAnd => "bitwise_and",
            BinaryOp::BitwiseOr => "bitwise_or",
            BinaryOp::BitwiseXor => "bitwise_xor",
            BinaryOp::LeftShift => "left_shift",
            BinaryOp::RightShift => "right_shift",
        }
    }

    /// Ops defined only on integers (Nx raises for floats).
    pub fn integer_only(self) -> bool {
        matches!(
            self,
            BinaryOp::Quotient
                | BinaryOp::BitwiseAnd
                | BinaryOp::BitwiseOr
                | BinaryOp::BitwiseXor
                | BinaryOp::LeftShift
                | BinaryOp::RightShift
        )
    }

    /// Ops defined only on floats: integer operands are converted first (Nx).
    pub fn needs_float(self) -> bool {
        matches!(self, BinaryOp::Divide | BinaryOp::Atan2)
    }

    /// Ops with a meaning on complex values: arithmetic and equality (Nx raises for orderings,
    /// `min`/`max`, `remainder`, `atan2` and the integer ops).
    pub fn defined_for_complex(self) -> bool {
        matches!(
            self,
            BinaryOp::Add
                | BinaryOp::Subtract
                | BinaryOp::Multiply
                | BinaryOp::Divide
                | BinaryOp::Pow
                | BinaryOp::Equal
                | BinaryOp::NotEqual
        )
    }

    /// Whether the op exists for `dtype` (the kernels instantiated for it).
    pub fn defined_for(self, dtype: crate::dtype::DType) -> bool {
        if dtype.is_float() {
            !self.integer_only()
        } else {
            !self.needs_float()
        }
    }

    /// True for the ops that return u8 truth values.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Equal
                | BinaryOp::NotEqual
                | BinaryOp::Less
                | BinaryOp::LessEqual
                | BinaryOp::Greater
                | BinaryOp::GreaterEqual
        )
    }

    /// The arithmetic meaning (not for comparisons).
    #[inline(always)]
    pub fn arith<T: Element>(self, a: T, b: T) -> T {
        match self {
            BinaryOp::Add => a.add(b),
            BinaryOp::Subtract => a.sub(b),
            BinaryOp::Multiply => a.mul(b),
            BinaryOp::Divide => a.div(b),
            BinaryOp::Pow => a.pow(b),
            // NaN propagates, as in Nx. `|`, not `||`: no branch, so loops over these
            // become vector compares and blends.
            BinaryOp::Min => {
                if a.is_nan() | (a < b) {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Max => {
                if a.is_nan() | (a > b) {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Remainder => a.rem(b),
            BinaryOp::Quotient => a.quot(b),
            BinaryOp::Atan2 => a.atan2(b),
            BinaryOp::BitwiseAnd => a.bit_and(b),
            BinaryOp::BitwiseOr => a.bit_or(b),
            BinaryOp::BitwiseXor => a.bit_xor(b),
            BinaryOp::LeftShift => a.shift_left(b),
            BinaryOp::RightShift => a.shift_right(b),
            _ => a,
        }
    }

    /// The comparison meaning, as 0 or 1.
    #[inline(always)]
    pub fn compare<T: Element>(self, a: T, b: T) -> u8 {
        (match self {
            BinaryOp::Equal => a == b,
            BinaryOp::NotEqual => a != b,
            BinaryOp::Less => a < b,
            BinaryOp::LessEqual => a <= b,
            BinaryOp::Greater => a > b,
            BinaryOp::GreaterEqual => a >= b,
            _ => false,
        }) as u8
    }
}

/// Elementwise ops of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// -x
    Negate,
    /// |x|
    Abs,
    /// -1, 0 or 1
    Sign,
    /// x * x
    Square,
    /// e^x (float)
    Exp,
    /// ln x (float)
    Log,
    /// √x (float)
    Sqrt,
    /// 1/√x (float)
    Rsqrt,
    /// tanh x (float)
    Tanh,
    /// 1/(1+e^-x) (float)
    Sigmoid,
    /// sin x (float)
    Sin,
    /// cos x (float)
    Cos,
    /// ⌊x⌋ (identity on integers)
    Floor,
    /// ⌈x⌉ (identity on integers)
    Ceil,
    /// round half away from zero (identity on integers)
    Round,
    /// e^x - 1, exact near 0 (float)
    Expm1,
    /// ln(1 + x), exact near 0 (float)
    Log1p,
    /// log₂ x (float)
    Log2,
    /// log₁₀ x (float)
    Log10,
    /// tan x (float)
    Tan,
    /// sinh x (float)
    Sinh,
    /// cosh x (float)
    Cosh,
    /// arcsin x (float)
    Asin,
    /// arccos x (float)
    Acos,
    /// arctan x (float)
    Atan,
    /// arsinh x (float)
    Asinh,
    /// arcosh x (float)
    Acosh,
    /// artanh x (float)
    Atanh,
    /// ∛x (float)
    Cbrt,
    /// the error function (float)
    Erf,
    /// 1 - erf x, exact in the tail (float)
    Erfc,
    /// the inverse of erf on (-1, 1) (float)
    ErfInv,
    /// every bit flipped (integers only)
    BitwiseNot,
    /// the leading zero bits (integers only)
    CountLeadingZeros,
    /// the one bits (integers only)
    PopulationCount,
    /// the complex conjugate `re - im·i` (the value itself for real types)
    Conjugate,
    /// the imaginary part, as a complex value with no imaginary part (0 for real types);
    /// `Tensor::imag` casts it to the real dtype
    Imag,
}

impl UnaryOp {
    /// Every elementwise op of one operand.
    pub const ALL: [UnaryOp; 37] = [
        UnaryOp::Negate,
        UnaryOp::Abs,
        UnaryOp::Sign,
        UnaryOp::Square,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Expm1,
        UnaryOp::Log1p,
        UnaryOp::Log2,
        UnaryOp::Log10,
        UnaryOp::Tan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Asinh,
        UnaryOp::Acosh,
        UnaryOp::Atanh,
        UnaryOp::Cbrt,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::ErfInv,
        UnaryOp::BitwiseNot,
        UnaryOp::CountLeadingZeros,
        UnaryOp::PopulationCount,
        UnaryOp::Conjugate,
        UnaryOp::Imag,
    ];

    /// The op's name in error messages.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Negate => "negate",
            UnaryOp::Abs => "abs",
            UnaryOp::Sign => "sign",
            UnaryOp::Square => "square",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Tan => "tan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Asinh => "asinh",
            UnaryOp::Acosh => "acosh",
            UnaryOp::Atanh => "atanh",
            UnaryOp::Cbrt => "cbrt",
            UnaryOp::Erf => "erf",
            UnaryOp::Erfc => "erfc",
            UnaryOp::ErfInv => "erf_inv",
            UnaryOp::BitwiseNot => "bitwise_not",
            UnaryOp::CountLeadingZeros => "count_leading_zeros",
            UnaryOp::PopulationCount => "population_count",
            UnaryOp::Conjugate => "conjugate",
            UnaryOp::Imag => "imag",
        }
    }

    /// Ops with a meaning on complex values (Nx raises for the others: rounding, the error
    /// function family, bitwise ops).
    pub fn defined_for_complex(self) -> bool {
        !self.integer_only()
            && !matches!(
                self,
                UnaryOp::Floor
                    | UnaryOp::Ceil
                    | UnaryOp::Round
                    | UnaryOp::Erf
                    | UnaryOp::Erfc
                    | UnaryOp::ErfInv
            )
    }

    /// Ops defined only on integers (Nx raises for floats).
    pub fn integer_only(self) -> bool {
        matches!(
            self,
            UnaryOp::BitwiseNot | UnaryOp::CountLeadingZeros | UnaryOp::PopulationCount
        )
    }

    /// Ops defined only on floats: the frontend converts integer inputs to f32 first (Nx).
    pub fn needs_float(self) -> bool {
        matches!(
            self,
            UnaryOp::Exp
                | UnaryOp::Log
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Expm1
                | UnaryOp::Log1p
                | UnaryOp::Log2
                | UnaryOp::Log10
                | UnaryOp::Tan
                | UnaryOp::Sinh
                | UnaryOp::Cosh
                | UnaryOp::Asin
                | UnaryOp::Acos
                | UnaryOp::Atan
                | UnaryOp::Asinh
                | UnaryOp::Acosh
                | UnaryOp::Atanh
                | UnaryOp::Cbrt
                | UnaryOp::Erf
                | UnaryOp::Erfc
                | UnaryOp::ErfInv
        )
    }

    /// The meaning on any element type (float-only ops are the identity here).
    #[inline(always)]
    pub fn apply<T: Element>(self, x: T) -> T {
        match self {
            UnaryOp::Negate => x.neg(),
            UnaryOp::Abs => x.abs(),
            UnaryOp::Sign => {
                if x > T::ZERO {
                    T::ONE
                } else if x < T::ZERO {
                    T::ONE.neg()
                } else {
                    x
                }
            }
            UnaryOp::Square => x.mul(x),
            UnaryOp::BitwiseNot => x.bit_not(),
            UnaryOp::CountLeadingZeros => x.leading_zeros_of(),
            UnaryOp::PopulationCount => x.ones_of(),
            UnaryOp::Imag => T::ZERO,
            _ => x,
        }
    }

    /// The meaning on complex values: the float meaning with the principal branches, and the
    /// ops whose real definitions compare (sign, sigmoid) or keep parts apart (conjugate,
    /// imaginary part) written for the complex plane. The frontend refuses the rest (rounding,
    /// erf, bitwise).
    #[inline(always)]
    pub fn apply_complex<T: Float>(self, x: T) -> T {
        match self {
            UnaryOp::Conjugate | UnaryOp::Imag => {
                let (re, im) = x.to_parts();
                if self == UnaryOp::Conjugate {
                    T::from_parts(re, -im)
                } else {
                    T::from_parts(im, 0.0)
                }
            }
            // z / |z|, and 0 at 0 (Nx's sign of a complex number).
            UnaryOp::Sign => {
                if x == T::ZERO {
                    x
                } else {
                    x.div(x.abs())
                }
            }
            UnaryOp::Sigmoid => T::ONE.div(T::ONE.add(x.neg().exp())),
            other => other.apply_float(x),
        }
    }

    /// The meaning on floats.
    #[inline(always)]
    pub fn apply_float<T: Float>(self, x: T) -> T {
        match self {
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => T::ONE.div(x.sqrt()),
            UnaryOp::Tanh => x.tanh(),
            // e^x / (1 + e^x) below 0: e^-x would overflow past x = -88.7 (f32) and make
            // every smaller result 0 instead of a tiny number.
            UnaryOp::Sigmoid => {
                let e = x.abs().neg().exp();
                let numerator = if x < T::ZERO { e } else { T::ONE };
                numerator.div(T::ONE.add(e))
            }
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Round => x.round(),
            UnaryOp::Expm1 => x.exp_m1(),
            UnaryOp::Log1p => x.ln_1p(),
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
            other => other.apply(x),
        }
    }
}

/// Reductions over axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Σ
    Sum,
    /// Π
    Product,
    /// maximum
    Max,
    /// minimum
    Min,
}

impl ReduceOp {
    /// Every reduction.
    pub const ALL: [ReduceOp; 4] = [
        ReduceOp::Sum,
        ReduceOp::Product,
        ReduceOp::Max,
        ReduceOp::Min,
    ];

    /// The identity element.
    pub fn identity<T: Element>(self) -> T {
        match self {
            ReduceOp::Sum => T::ZERO,
            ReduceOp::Product => T::ONE,
            ReduceOp::Max => T::LOWEST,
            ReduceOp::Min => T::HIGHEST,
        }
    }

    /// Combines an accumulator with one element.
    #[inline(always)]
    pub fn combine<T: Element>(self, acc: T, x: T) -> T {
        match self {
            ReduceOp::Sum => acc.add(x),
            ReduceOp::Product => acc.mul(x),
            ReduceOp::Max => BinaryOp::Max.arith(acc, x),
            ReduceOp::Min => BinaryOp::Min.arith(acc, x),
        }
    }
}

/// Index-of-extremum reductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgOp {
    /// Index of the (first) maximum.
    ArgMax,
    /// Index of the (first) minimum.
    ArgMin,
}

impl ArgOp {
    /// True when `x` should replace the current best `best` (ties keep the first).
    #[inline(always)]
    pub fn better<T: Element>(self, x: T, best: T) -> bool {
        match self {
            ArgOp::ArgMax => x > best || (x.is_nan() && !best.is_nan()),
            ArgOp::ArgMin => x < best || (x.is_nan() && !best.is_nan()),
        }
    }
}

/// A strided read of a buffer: element `coords` of the view is `offset + Σ coords[i]*strides[i]`.
/// Transposes, slices and broadcasts are all such views.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    /// First element.
    pub offset: usize,
    /// Step per axis of the view's shape (0 for a broadcast axis).
    pub strides: Vec<usize>,
}

impl Strided {
    /// The plain row-major reading of a contiguous tensor of `shape`.
    pub fn contiguous(shape: &[usize]) -> Strided {
        Strided {
            offset: 0,
            strides: crate::shape::strides(shape),
        }
    }

    /// Where in the buffer the entry at `coords` lies.
    pub fn offset_at(&self, coords: &[usize]) -> usize {
        self.offset
            + coords
                .iter()
                .zip(&self.strides)
                .map(|(c, s)| c * s)
                .sum::<usize>()
    }

    /// True when this view reads a tensor of `shape` in plain row-major order from its first
    /// element (axes of length 1 may have any stride): a backend can then read it as a slice.
    pub fn is_contiguous(&self, shape: &[usize]) -> bool {
        self.offset == 0
            && shape
                .iter()
                .zip(self.strides.iter().zip(crate::shape::strides(shape)))
                .all(|(&d, (&s, c))| d == 1 || s == c)
    }
}

/// The dimensions of a (batched) matrix product: `batch` products `[m,k]·[k,n]`, operand `i`
/// of the batch starting `i * stride` elements in (a stride of 0 reuses one matrix for the
/// whole batch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatmulDims {
    /// Elements between consecutive left matrices.
    pub lhs_batch_stride: usize,
    /// Elements between consecutive right matrices.
    pub rhs_batch_stride: usize,
    /// Number of products.
    pub batch: usize,
    /// Rows of the left matrices.
    pub m: usize,
    /// The contracted dimension.
    pub k: usize,
    /// Columns of the right matrices.
    pub n: usize,
}
