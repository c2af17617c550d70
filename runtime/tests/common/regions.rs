//! Fused regions written out by hand, with inputs: every kind of step (arithmetic,
//! comparisons, transcendentals, casts), every way an input is read (in order, broadcast,
//! a scalar, transposed), and reductions over trailing and other axes.

use std::sync::Arc;

use tensorbook::testing::ir::fused::{Arg, Fused, FusedInput, Step, StepOp};
use tensorbook::testing::ir::{BinaryOp, ReduceOp, Strided, UnaryOp};
use tensorbook::{on, DType, Device, Tensor};

use super::{random, with_nans};

fn input(dtype: DType, offset: usize, strides: &[usize]) -> FusedInput {
    FusedInput {
        dtype,
        view: Strided {
            offset,
            strides: strides.to_vec(),
        },
    }
}

fn step(op: StepOp, args: &[Arg], dtype: DType) -> Step {
    Step {
        op,
        args: args.to_vec(),
        dtype,
    }
}

use Arg::{Input as I, Step as S};

/// `(name, region, inputs on binary)`.
pub fn regions() -> Vec<(&'static str, Arc<Fused>, Vec<Tensor>)> {
    let f32_ = DType::F32;
    let out = vec![
        // sigmoid(x * w + c) - x with w broadcast along rows and c a scalar.
        (
            "f32 chain with a broadcast row and a scalar",
            Fused {
                inputs: vec![
                    input(f32_, 0, &[5, 1]),
                    input(f32_, 0, &[0, 1]),
                    input(f32_, 0, &[0, 0]),
                ],
                steps: vec![
                    step(StepOp::Binary(BinaryOp::Multiply), &[I(0), I(1)], f32_),
                    step(StepOp::Binary(BinaryOp::Add), &[S(0), I(2)], f32_),
                    step(StepOp::Unary(UnaryOp::Sigmoid), &[S(1)], f32_),
                    step(StepOp::Binary(BinaryOp::Subtract), &[S(2), I(0)], f32_),
                ],
                shape: vec![3, 5],
                reduce: None,
            },
            vec![
                random(1, f32_, &[3, 5]),
                random(2, f32_, &[5]),
                random(3, f32_, &[]),
            ],
        ),
        // Integers: wrapping pow, a comparison to u8, casts to f64, one input read transposed.
        (
            "s32 pow, a comparison and casts, a transposed input",
            Fused {
                inputs: vec![input(DType::S32, 0, &[3, 1]), input(DType::S32, 0, &[1, 4])],
                steps: vec![
                    step(StepOp::Binary(BinaryOp::Pow), &[I(0), I(1)], DType::S32),
                    step(StepOp::Binary(BinaryOp::Less), &[I(0), I(1)], DType::U8),
                    step(StepOp::Cast(DType::F64), &[S(1)], DType::F64),
                    step(StepOp::Cast(DType::F64), &[S(0)], DType::F64),
                    step(
                        StepOp::Binary(BinaryOp::Multiply),
                        &[S(2), S(3)],
                        DType::F64,
                    ),
                    step(StepOp::Unary(UnaryOp::Negate), &[S(4)], DType::F64),
                ],
                shape: vec![4, 3],
                reduce: None,
            },
            vec![
                random(4, DType::S32, &[4, 3]),
                random(5, DType::S32, &[3, 4]),
            ],
        ),
        // A float to integer cast that saturates, and u8 arithmetic that wraps.
        (
            "saturating casts and wrapping u8",
            Fused {
                inputs: vec![input(f32_, 0, &[1])],
                steps: vec![
                    step(StepOp::Binary(BinaryOp::Multiply), &[I(0), I(0)], f32_),
                    step(StepOp::Cast(DType::U8), &[S(0)], DType::U8),
                    step(StepOp::Binary(BinaryOp::Add), &[S(1), S(1)], DType::U8),
                    step(StepOp::Unary(UnaryOp::Square), &[S(2)], DType::U8),
                ],
                shape: vec![40],
                reduce: None,
            },
            vec![on(Device::BINARY)
                .random_uniform(6, f32_, &[40], -30.0, 30.0)
                .unwrap()],
        ),
        // exp then a sum over the last axis, rows longer than a block of threads.
        (
            "f64 sum of exponentials over rows",
            Fused {
                inputs: vec![input(DType::F64, 0, &[300, 1])],
                steps: vec![step(StepOp::Unary(UnaryOp::Exp), &[I(0)], DType::F64)],
                shape: vec![5, 300],
                reduce: Some((ReduceOp::Sum, vec![1])),
            },
            vec![random(7, DType::F64, &[5, 300])],
        ),
        // max of -|x| over everything, NaN included.
        (
            "f32 max over all axes with NaN",
            Fused {
                inputs: vec![input(f32_, 0, &[7, 1])],
                steps: vec![
                    step(StepOp::Unary(UnaryOp::Abs), &[I(0)], f32_),
                    step(StepOp::Unary(UnaryOp::Negate), &[S(0)], f32_),
                ],
                shape: vec![6, 7],
                reduce: Some((ReduceOp::Max, vec![0, 1])),
            },
            vec![with_nans(&random(8, f32_, &[6, 7]))],
        ),
        // A reduction over the first axis (not trailing): computed, then reduced.
        (
            "s64 product over the first axis",
            Fused {
                inputs: vec![input(DType::S64, 0, &[4, 1]), input(DType::S64, 2, &[0, 0])],
                steps: vec![step(
                    StepOp::Binary(BinaryOp::Max),
                    &[I(0), I(1)],
                    DType::S64,
                )],
                shape: vec![3, 4],
                reduce: Some((ReduceOp::Product, vec![0])),
            },
            vec![random(9, DType::S64, &[3, 4]), random(10, DType::S64, &[3])],
        ),
    ];
    out.into_iter()
        .map(|(n, f, i)| (n, Arc::new(f), i))
        .collect()
}
