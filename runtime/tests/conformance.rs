//! The conformance suite: every op on every available device against the `binary` reference,
//! over random shapes and dtypes. A new backend is covered as soon as `tensorbook::devices()`
//! lists its devices; nothing here names a backend.

mod common;

use common::{conform, conform_failing, random, with_nans};
use proptest::prelude::*;
use proptest::sample::select;
use tensorbook::{Axes, DType, Direction, Error, Leftover, PadMode, Tensor};

/// The real dtypes: most ops here (orderings, rounding, `max`) have no complex meaning, and
/// the ops that do are checked on c64 and c128 on every device by `tests/complex.rs`. Casts
/// below go to every dtype, complex ones included.
fn dtype() -> impl Strategy<Value = DType> {
    select(
        DType::ALL
            .into_iter()
            .filter(|d| !d.is_complex())
            .collect::<Vec<_>>(),
    )
}

fn shape(max_rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..5, 0..=max_rank)
}

/// A shape and a second shape that broadcasts against it.
fn broadcast_pair() -> impl Strategy<Value = (Vec<usize>, Vec<usize>)> {
    shape(4).prop_flat_map(|s| {
        let n = s.len();
        (
            Just(s),
            0..=n,
            prop::collection::vec(any::<bool>(), n),
            any::<bool>(),
        )
            .prop_map(|(s, drop, ones, swap)| {
                let other: Vec<usize> = s[drop..]
                    .iter()
                    .zip(&ones[drop..])
                    .map(|(&d, &one)| if one { 1 } else { d })
                    .collect();
                if swap {
                    (other, s)
                } else {
                    (s, other)
                }
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn elementwise_binary((sa, sb) in broadcast_pair(), da in dtype(), db in dtype(), seed in any::<u64>()) {
        let inputs = [random(seed, da, &sa), random(seed ^ 1, db, &sb)];
        type Op = fn(&Tensor, &Tensor) -> tensorbook::Result<Tensor>;
        let ops: [(&str, Op); 15] = [
            ("add", |a, b| a.add(b)),
            ("subtract", |a, b| a.subtract(b)),
            ("multiply", |a, b| a.multiply(b)),
            ("divide", |a, b| a.divide(b)),
            ("pow", |a, b| a.pow(b)),
            ("min", |a, b| a.min(b)),
            ("max", |a, b| a.max(b)),
            ("equal", |a, b| a.equal(b)),
            ("not_equal", |a, b| a.not_equal(b)),
            ("less", |a, b| a.less(b)),
            ("less_equal", |a, b| a.less_equal(b)),
            ("greater", |a, b| a.greater(b)),
            ("greater_equal", |a, b| a.greater_equal(b)),
            ("remainder", |a, b| a.remainder(b)),
            ("atan2", |a, b| a.atan2(b)),
        ];
        for (name, op) in ops {
            conform(&format!("{name} {da}{sa:?} {db}{sb:?}"), &inputs, |t| op(&t[0], &t[1]));
        }
        // Integer-only: on floats every device refuses them alike.
        let integer: [(&str, Op); 6] = [
            ("quotient", |a, b| a.quotient(b)),
            ("bitwise_and", |a, b| a.bitwise_and(b)),
            ("bitwise_or", |a, b| a.bitwise_or(b)),
            ("bitwise_xor", |a, b| a.bitwise_xor(b)),
            ("left_shift", |a, b| a.left_shift(b)),
            ("right_shift", |a, b| a.right_shift(b)),
        ];
        for (name, op) in integer {
            let what = format!("{name} {da}{sa:?} {db}{sb:?}");
            if da.promote(db).is_float() {
                conform_failing(&what, &inputs, |t| op(&t[0], &t[1]), |e| e.to_string().contains("integer tensors"));
            } else {
                conform(&what, &inputs, |t| op(&t[0], &t[1]));
            }
        }
        conform("add number", &inputs, |t| t[0].add(2.5));
        conform(&format!("select {da}{sa:?} {db}{sb:?}"), &inputs, |t| {
            t[0].greater(0)?.select(&t[0], &t[1])
        });
        conform("select numbers", &inputs, |t| t[1].select(1, -2.5));
        conform("clip", &inputs, |t| t[0].clip(-1, 1));
        conform("logical_and", &inputs, |t| t[0].logical_and(&t[1]));
        conform("logical_or", &inputs, |t| t[0].logical_or(&t[1]));
        conform("logical_xor", &inputs, |t| t[0].logical_xor(&t[1]));
        conform("logical_not", &inputs, |t| t[0].logical_not());
        conform("is_nan", &inputs, |t| t[0].as_type(DType::F32)?.divide(&t[1])?.is_nan());
        conform("is_infinity", &inputs, |t| t[0].as_type(DType::F32)?.divide(&t[1])?.is_infinity());
        conform("all_close", &inputs, |t| t[0].all_close(&t[1]));
        conform("multiply integer", &inputs, |t| t[0].multiply(3));
    }

    #[test]
    fn unary_and_cast(s in shape(4), d in dtype(), seed in any::<u64>()) {
        let inputs = [random(seed, d, &s)];
        type Op = fn(&Tensor) -> tensorbook::Result<Tensor>;
        let ops: [(&str, Op); 32] = [
            ("negate", Tensor::negate), ("abs", Tensor::abs), ("sign", Tensor::sign),
            ("square", Tensor::square), ("exp", Tensor::exp), ("log", Tensor::log),
            ("sqrt", Tensor::sqrt), ("rsqrt", Tensor::rsqrt), ("tanh", Tensor::tanh),
            ("sigmoid", Tensor::sigmoid), ("sin", Tensor::sin), ("cos", Tensor::cos),
            ("floor", Tensor::floor), ("ceil", Tensor::ceil), ("round", Tensor::round),
            ("expm1", Tensor::expm1), ("log1p", Tensor::log1p), ("log2", Tensor::log2),
            ("log10", Tensor::log10), ("tan", Tensor::tan), ("sinh", Tensor::sinh),
            ("cosh", Tensor::cosh), ("asin", Tensor::asin), ("acos", Tensor::acos),
            ("atan", Tensor::atan), ("asinh", Tensor::asinh), ("acosh", Tensor::acosh),
            ("atanh", Tensor::atanh), ("cbrt", Tensor::cbrt), ("erf", Tensor::erf),
            ("erfc", Tensor::erfc), ("erf_inv", Tensor::erf_inv),
        ];
        for (name, op) in ops {
            conform(&format!("{name} {d}{s:?}"), &inputs, |t| op(&t[0]));
        }
        let integer: [(&str, Op); 3] = [
            ("bitwise_not", Tensor::bitwise_not),
            ("count_leading_zeros", Tensor::count_leading_zeros),
            ("population_count", Tensor::population_count),
        ];
        for (name, op) in integer {
            let what = format!("{name} {d}{s:?}");
            if d.is_float() {
                conform_failing(&what, &inputs, |t| op(&t[0]), |e| e.to_string().contains("integer tensors"));
            } else {
                conform(&what, &inputs, |t| op(&t[0]));
            }
        }
        for to in DType::ALL {
            conform(&format!("as_type {d}->{to}"), &inputs, |t| t[0].as_type(to));
        }
    }

    #[test]
    fn reductions(s in shape(4), d in dtype(), seed in any::<u64>(), mask in any::<u8>(), keep in any::<bool>()) {
        let inputs = [random(seed, d, &s)];
        let axes: Vec<isize> = (0..s.len()).filter(|i| mask & (1 << i) != 0).map(|i| i as isize).collect();
        let which = if mask & 0x80 != 0 { Axes::All } else { Axes::Listed(axes.clone()) };
        // Each reduction as `name(axes)` or its `name_keep(axes)` twin.
        type Reduction = fn(&Tensor, Axes) -> tensorbook::Result<Tensor>;
        let reductions: [(&str, Reduction, Reduction); 11] = [
            ("sum", |t, a| t.sum(a), |t, a| t.sum_keep(a)),
            ("product", |t, a| t.product(a), |t, a| t.product_keep(a)),
            ("reduce_max", |t, a| t.reduce_max(a), |t, a| t.reduce_max_keep(a)),
            ("reduce_min", |t, a| t.reduce_min(a), |t, a| t.reduce_min_keep(a)),
            ("mean", |t, a| t.mean(a), |t, a| t.mean_keep(a)),
            ("all", |t, a| t.all(a), |t, a| t.all_keep(a)),
            ("any", |t, a| t.any(a), |t, a| t.any_keep(a)),
            ("logsumexp", |t, a| t.logsumexp(a), |t, a| t.logsumexp_keep(a)),
            ("variance", |t, a| t.variance(a, 1), |t, a| t.variance_keep(a, 1)),
            ("standard_deviation", |t, a| t.standard_deviation(a, 0), |t, a| t.standard_deviation_keep(a, 0)),
            ("weighted_mean", |t, a| t.weighted_mean(&t.abs()?.add(1)?, a), |t, a| t.weighted_mean_keep(&t.abs()?.add(1)?, a)),
        ];
        for (name, plain, kept) in reductions {
            let op = if keep { kept } else { plain };
            conform(&format!("{name} {d}{s:?} {which:?} keep {keep}"), &inputs, |t| op(&t[0], which.clone()));
        }
        let axis = if s.is_empty() { None } else { Some((mask as usize % s.len()) as isize) };
        conform(&format!("median {d}{s:?} {axis:?} keep {keep}"), &inputs, |t| match (axis, keep) {
            (Some(a), true) => t[0].median_keep(a),
            (Some(a), false) => t[0].median(a),
            (None, _) => t[0].median(..),
        });
                for (name, max) in [("argmax", true), ("argmin", false)] {
            conform(&format!("{name} {d}{s:?} {axis:?} keep {keep}"), &inputs, |t| {
                let tie = tensorbook::TieBreak::Low;
                match (axis, max) {
                    (Some(a), true) => t[0].argmax_with(a, keep, tie, DType::S32),
                    (Some(a), false) => t[0].argmin_with(a, keep, tie, DType::S32),
                    (None, true) => t[0].argmax_with(.., keep, tie, DType::S32),
                    (None, false) => t[0].argmin_with(.., keep, tie, DType::S32),
                }
            });
        }
    }

    #[test]
    fn dot(batch in shape(2), m in 1usize..6, k in 1usize..6, n in 1usize..6, d in dtype(), ra in 1usize..4, rb in 1usize..4, seed in any::<u64>()) {
        let make = |rank: usize, mat: Vec<usize>| -> Vec<usize> {
            match rank { 1 => vec![mat[0]], 2 => mat, _ => batch.iter().copied().chain(mat).collect() }
        };
        let sa = make(ra, if ra == 1 { vec![k] } else { vec![m, k] });
        let sb = make(rb, if rb == 1 { vec![k] } else { vec![k, n] });
        let inputs = [random(seed, d, &sa), random(seed ^ 7, d, &sb)];
        conform(&format!("matmul {d}{sa:?}.{sb:?}"), &inputs, |t| t[0].matmul(&t[1]));
        conform(&format!("dot {d}{sa:?}.{sb:?}"), &inputs, |t| t[0].dot(&t[1]));
    }

    #[test]
    fn layout(s in shape(4), d in dtype(), seed in any::<u64>(), pick in any::<u64>()) {
        let inputs = [random(seed, d, &s)];
        let rank = s.len();
        let mut perm: Vec<usize> = (0..rank).collect();
        for i in (1..rank).rev() { perm.swap(i, (pick as usize >> i) % (i + 1)); }
        conform(&format!("transpose {s:?} {perm:?}"), &inputs, |t| t[0].transpose(&perm));
        conform(&format!("transpose {s:?}"), &inputs, |t| t[0].transpose(..));
        let start: Vec<usize> = s.iter().enumerate().map(|(i, &dim)| (pick as usize >> (2 * i)) % dim).collect();
        let steps: Vec<usize> = (0..rank).map(|i| 1 + (pick as usize >> (3 * i + 1)) % 2).collect();
        let spans: Vec<usize> = (0..rank).map(|i| s[i] - start[i]).collect();
        conform(&format!("slice {s:?} {start:?} {spans:?} {steps:?}"), &inputs, |t| t[0].slice(&start, &spans, Some(&steps)));
        // A start past what fits is moved back (Nx), so the full length always fits.
        conform(&format!("slice clipped {s:?} {start:?}"), &inputs, |t| t[0].slice(&start, &s, None));
        let lengths: Vec<usize> = (0..rank).map(|i| (s[i] - start[i]).div_ceil(steps[i])).collect();
        let mut big = vec![2];
        big.extend(&s);
        conform(&format!("broadcast {s:?}"), &inputs, |t| t[0].broadcast(&big));
        conform(&format!("new_axis+squeeze {s:?}"), &inputs, |t| t[0].new_axis(-1)?.squeeze(..));
        let update = random(seed ^ 3, d, &lengths);
        let with_update = [inputs[0].clone(), update];
        conform(&format!("put_slice {s:?} {start:?}"), &with_update, |t| t[0].put_slice(&start, &t[1]));
        if rank > 0 {
            let axis = (pick as usize) % rank;
            let mut other = s.clone();
            other[axis] = 1 + (pick as usize >> 8) % 3;
            let parts = [inputs[0].clone(), random(seed ^ 5, DType::F32, &other)];
            conform(&format!("concatenate {s:?} {other:?} axis {axis}"), &parts, |t| Tensor::concatenate(t, axis as isize));
            let pair = [inputs[0].clone(), random(seed ^ 9, d, &s)];
            conform(&format!("stack {s:?} axis {axis}"), &pair, |t| Tensor::stack(t, axis as isize));
            let idx: Vec<i64> = (0..4).map(|i| ((pick >> (4 * i)) as usize % s[axis]) as i64).collect();
            let indices = tensorbook::on(tensorbook::Device::BINARY).from_vec(idx, &[2, 2]).unwrap();
            let with_idx = [inputs[0].clone(), indices];
            conform(&format!("take {s:?} axis {axis}"), &with_idx, |t| t[0].take(&t[1], axis as isize));
            conform(&format!("reverse {s:?} axis {axis}"), &inputs, |t| t[0].reverse([axis as isize]));
            let (from, len) = ((pick as usize >> 12) % s[axis], 1 + (pick as usize >> 16) % s[axis]);
            conform(&format!("slice_along_axis {s:?} {from}+{len} axis {axis}"), &inputs, |t| t[0].slice_along_axis(from, len, axis as isize));
            let widths: Vec<(usize, usize)> = (0..rank).map(|i| ((pick as usize >> i) % 2, (pick as usize >> (i + 5)) % 3)).collect();
            conform(&format!("reflect {s:?} {widths:?}"), &inputs, |t| t[0].reflect(&widths));
            let signed: Vec<(i64, i64)> = widths.iter().map(|&(l, h)| (l as i64, h as i64)).collect();
            for mode in [PadMode::Cyclic, PadMode::Mirror, PadMode::Replicate] {
                conform(&format!("pad_outer {mode:?} {s:?} {signed:?}"), &inputs, |t| t[0].pad_outer_with(mode, &signed));
            }
            if rank == 1 {
                let offset = (pick % 3) as isize - 1;
                conform(&format!("make_diagonal {s:?} {offset}"), &inputs, |t| t[0].make_diagonal(offset));
            }
            if rank >= 2 {
                let k = (pick % 5) as isize - 2;
                conform(&format!("tril {s:?} {k}"), &inputs, |t| t[0].tril(k));
                conform(&format!("triu {s:?} {k}"), &inputs, |t| t[0].triu(k));
                conform(&format!("take_diagonal {s:?}"), &inputs, |t| t[0].take_diagonal(0));
                conform(&format!("covariance {s:?}"), &inputs, |t| t[0].covariance(1));
            }
            if rank == 2 {
                let with_diagonal = [inputs[0].clone(), random(seed ^ 11, d, &[s[0].min(s[1])])];
                conform(&format!("put_diagonal {s:?}"), &with_diagonal, |t| t[0].put_diagonal(&t[1], 0));
            }
            let reverse = pick & 1 == 1;
            conform(&format!("cumulative_sum {s:?} axis {axis} {reverse}"), &inputs, |t| t[0].cumulative_sum(axis as isize, reverse));
            conform(&format!("cumulative_product {s:?} axis {axis} {reverse}"), &inputs, |t| t[0].cumulative_product(axis as isize, reverse));
            conform(&format!("cumulative_max {s:?} axis {axis} {reverse}"), &inputs, |t| t[0].cumulative_max(axis as isize, reverse));
            conform(&format!("cumulative_min {s:?} axis {axis} {reverse}"), &inputs, |t| t[0].cumulative_min(axis as isize, reverse));
            conform(&format!("diff {s:?} axis {axis}"), &inputs, |t| t[0].diff(2, axis as isize));
            conform(&format!("flatten {s:?}"), &inputs, |t| t[0].flatten(..));
            let nans = [with_nans(&inputs[0]).as_type(d).unwrap()];
            for direction in [Direction::Asc, Direction::Desc] {
                conform(&format!("sort {s:?} axis {axis} {direction:?}"), &nans, |t| t[0].sort(axis as isize, direction));
                conform(&format!("argsort {s:?} axis {axis} {direction:?}"), &nans, |t| t[0].argsort(axis as isize, direction));
            }
            conform(&format!("top_k {s:?}"), &nans, |t| Ok(t[0].top_k(1 + (pick as usize >> 6) % s[rank - 1])?.0));
            let binary = tensorbook::on(tensorbook::Device::BINARY);
            // Along the axis: indices one past each end too (clamped).
            let mut ishape = s.clone();
            ishape[axis] = 1 + (pick as usize >> 9) % 4;
            let n: usize = ishape.iter().product();
            let idx: Vec<i64> = (0..n).map(|i| ((pick >> (i % 60)) as i64 + i as i64) % (s[axis] as i64 + 2) - 1).collect();
            let along = [inputs[0].clone(), binary.from_vec(idx, &ishape).unwrap()];
            conform(&format!("take_along_axis {s:?} {ishape:?} axis {axis}"), &along, |t| t[0].take_along_axis(&t[1], axis as isize));
            // Gather: three rows of coordinates for the first `k` axes.
            let k = 1 + (pick as usize >> 14) % rank;
            let coords: Vec<i64> = (0..3 * k).map(|i| ((pick >> (2 * i)) as usize % s[i % k]) as i64).collect();
            let gather_idx = binary.from_vec(coords.clone(), &[3, k]).unwrap();
            let gathered = [inputs[0].clone(), gather_idx.clone()];
            conform(&format!("gather {s:?} k {k}"), &gathered, |t| t[0].gather(&t[1], ..));
            // Scatters: repeated rows add up; puts go to distinct rows (which of repeated puts
            // wins is not defined), plus one row outside the target, skipped.
            let mut window = vec![3];
            window.extend(&s[k..]);
            let updates = random(seed ^ 11, d, &window);
            let adds = [inputs[0].clone(), gather_idx, updates.clone()];
            conform(&format!("indexed_add {s:?} k {k}"), &adds, |t| t[0].indexed_add(&t[1], &t[2], ..));
            let mut distinct: Vec<i64> = (0..k).map(|i| if i == 0 { 0 } else { coords[i] }).collect();
            distinct.extend((0..k).map(|i| if i == 0 { s[0] as i64 } else { 0 }));
            distinct.extend((0..k).map(|i| if i > 0 { coords[k + i] } else if s[0] > 1 { s[0] as i64 - 1 } else { -1 }));
            let puts = [inputs[0].clone(), binary.from_vec(distinct, &[3, k]).unwrap(), updates];
            conform(&format!("indexed_put {s:?} k {k}"), &puts, |t| t[0].indexed_put(&t[1], &t[2], ..));
            let config: Vec<(i64, i64, usize)> = (0..rank)
                .map(|i| {
                    let bits = (pick >> (5 * i + 20)) as i64;
                    (bits % 3 - 1, (bits >> 2) % 3 - 1, (bits >> 4) as usize % 2)
                })
                .collect();
            conform_or_refused(&format!("pad {s:?} {config:?}"), &inputs, |t| t[0].pad(-1.5, &config));
            let outer: Vec<(i64, i64)> = config.iter().map(|&(l, h, _)| (l + 1, h + 1)).collect();
            for mode in [PadMode::Cyclic, PadMode::Mirror, PadMode::Reflect, PadMode::Replicate] {
                conform_or_refused(&format!("pad_outer {mode:?} {s:?} {outer:?}"), &inputs, |t| t[0].pad_outer_with(mode, &outer));
            }
            let reps: Vec<usize> = (0..rank.min(3)).map(|i| 1 + (pick as usize >> (2 * i + 40)) % 2).collect();
            conform(&format!("tile {s:?} {reps:?}"), &inputs, |t| t[0].tile(&reps));
            let size = 1 + (pick as usize >> 12) % 3;
            for leftover in [Leftover::Repeat, Leftover::Discard] {
                conform(&format!("to_batched {s:?} {size} {leftover:?}"), &inputs, |t| {
                    let batches = t[0].to_batched(size, leftover)?;
                    if batches.is_empty() { return tensorbook::on(t[0].device()).zeros(d, &[0]); }
                    Tensor::concatenate(&batches, 0)
                });
            }
        }
    }
}

/// Shapes large enough to take the host backend's parallel and gemm paths.
#[test]
fn large_shapes_take_the_fast_paths() {
    println!(
        "host's system BLAS: {:?}",
        tensorbook::testing::blas_library()
    );
    let a = random(1, DType::F32, &[300, 784]);
    let w = random(2, DType::F32, &[784, 10]);
    conform("dot [300,784].[784,10]", &[a.clone(), w], |t| {
        t[0].dot(&t[1])
    });
    // Scans: columns in several chunks of host's (inner 5000), and long lines in parallel.
    for (shape, axis) in [(&[3usize, 5000][..], 0isize), (&[4, 30_000][..], 1)] {
        let x = [random(13, DType::S32, shape)];
        for reverse in [false, true] {
            conform(
                &format!("cumulative_sum {shape:?} axis {axis} {reverse}"),
                &x,
                |t| t[0].cumulative_sum(axis, reverse),
            );
            conform(
                &format!("cumulative_max {shape:?} axis {axis} {reverse}"),
                &x,
                |t| t[0].cumulative_max(axis, reverse),
            );
        }
    }
    // Sorts: long lines in parallel, one line through the parallel sort, columns of a
    // non-last axis, ties (argsort must keep their order) and NaNs.
    for (shape, axis) in [
        (&[4usize, 30_000][..], 1isize),
        (&[100_000][..], 0),
        // Past host's parallel radix sort's threshold (1 << 17), and its in-cache parts.
        (&[300_000][..], 0),
        (&[3000, 40][..], 0),
    ] {
        for dtype in [DType::F32, DType::S32] {
            let x = [with_nans(&random(17, dtype, shape)).as_type(dtype).unwrap()];
            for direction in [Direction::Asc, Direction::Desc] {
                conform(
                    &format!("sort {dtype} {shape:?} axis {axis} {direction:?}"),
                    &x,
                    |t| t[0].sort(axis, direction),
                );
                conform(
                    &format!("argsort {dtype} {shape:?} axis {axis} {direction:?}"),
                    &x,
                    |t| t[0].argsort(axis, direction),
                );
            }
        }
    }
    // Many repeated positions in one scatter-add (atomics on cuda).
    let target = random(19, DType::F32, &[50]);
    let positions = tensorbook::on(tensorbook::Device::BINARY)
        .from_vec(
            (0..20_000)
                .map(|i| (i * 7 % 53) as i64 - 1)
                .collect::<Vec<_>>(),
            &[20_000, 1],
        )
        .unwrap();
    let updates = random(20, DType::F32, &[20_000]);
    conform(
        "indexed_add 20000 updates into 50",
        &[target, positions, updates],
        |t| t[0].indexed_add(&t[1], &t[2], ..),
    );
    let bytes = random(21, DType::U8, &[13]);
    let byte_positions = tensorbook::on(tensorbook::Device::BINARY)
        .from_vec(
            (0..500).map(|i| (i % 13) as i64).collect::<Vec<_>>(),
            &[500, 1],
        )
        .unwrap();
    let byte_updates = random(22, DType::U8, &[500]);
    conform(
        "indexed_add u8 (wrapping, byte atomics)",
        &[bytes, byte_positions, byte_updates],
        |t| t[0].indexed_add(&t[1], &t[2], ..),
    );
    // Over 64^3 multiply-adds: the system BLAS when one loads (tests/builtin_gemm.rs covers
    // the gemm crate), at sizes no blocking divides evenly.
    for dtype in [DType::F32, DType::F64] {
        let x = random(9, dtype, &[130, 150]);
        let y = random(10, dtype, &[150, 141]);
        conform(
            &format!("dot {dtype:?} [130,150].[150,141]"),
            &[x, y],
            |t| t[0].dot(&t[1]),
        );
    }
    // Deeper than one packed block (k > 512: C is written, then added to), and wider than
    // any tile divides, through host's packed GEMM where the CPU runs it.
    for dtype in [DType::F32, DType::F64] {
        let x = random(11, dtype, &[70, 1030]);
        let y = random(12, dtype, &[1030, 37]);
        conform(
            &format!("dot {dtype:?} [70,1030].[1030,37]"),
            &[x, y],
            |t| t[0].dot(&t[1]),
        );
    }
    let b = random(3, DType::F64, &[4, 96, 64]);
    let c = random(4, DType::F64, &[64, 80]);
    conform("batched matmul f64", &[b.clone(), c.clone()], |t| {
        t[0].matmul(&t[1])
    });
    conform("dot f64 [4,96,64].[64,80]", &[b, c], |t| t[0].dot(&t[1]));
    let u = random(13, DType::F32, &[3, 5, 7, 4]);
    let v = random(14, DType::F32, &[3, 4, 2, 5]);
    conform(
        "dot_general batch [0], contract [3] with [1]",
        &[u, v],
        |t| t[0].dot_general(&[3, 1], &[0], &t[1], &[1, 3], &[0]),
    );
    let i = random(5, DType::S32, &[70, 50]);
    let j = random(6, DType::S32, &[50, 40]);
    conform("dot s32", &[i, j], |t| t[0].dot(&t[1]));
    let row = random(7, DType::F32, &[784]);
    let inputs = [a, row];
    conform("add broadcast row", &inputs, |t| t[0].add(&t[1]));
    conform("sum all", &inputs, |t| t[0].sum(..));
    conform("sum axis 0", &inputs, |t| t[0].sum_keep([0]));
    conform("mean axis 1", &inputs, |t| t[0].mean([1]));
    conform("argmax axis 0", &inputs, |t| t[0].argmax(0));
    conform("transpose", &inputs, |t| t[0].transpose(..));
    conform("exp", &inputs, |t| t[0].exp());
    conform("less", &inputs, |t| t[0].less(&t[1]));
    let big = random(8, DType::F32, &[1 << 17]);
    conform("sum 128k", &[big], |t| t[0].sum(..));
}

/// A left operand whose contracted axis leads (`dot(x, [0], g, [0])`, a layer's weight
/// gradient) is read transposed where it lies: host's AVX-512 tiles of 32 rows by 10 columns
/// at their remainders (70 = 2·32 + 6 and 33 rows, 23, 13 and 1 columns), depths over several
/// 128-deep blocks, the parallel split, the small products and f64 that copy the smaller side
/// transposed instead, integers, and batch axes; every device against binary, and host against
/// the product of an explicit transpose.
#[test]
fn products_with_the_left_operand_transposed() {
    let shapes = [
        (300, 70, 23),
        (1000, 300, 1),
        (1000, 33, 10),
        (512, 40, 13),
        (2000, 100, 50),
        (257, 64, 1),
        (130, 5, 31),
        (3, 40, 40),
        // More tiles per thread than one group of sums holds (256 at 128 columns).
        (2, 20000, 128),
    ];
    for (k, m, n) in shapes {
        for dtype in [DType::F32, DType::F64, DType::S32] {
            let x = random(31, dtype, &[k, m]);
            let g = random(32, dtype, &[k, n]);
            let what = format!("dot([{k},{m}], [0], [{k},{n}], [0]) {dtype:?}");
            conform(&what, &[x.clone(), g.clone()], |t| {
                t[0].dot_axes(&[0], &t[1], &[0])
            });
            let direct = x.dot_axes(&[0], &g, &[0]).unwrap();
            let explicit = x.transpose(..).unwrap().dot(&g).unwrap();
            assert_eq!(direct.shape(), &[m, n]);
            let gap = direct
                .subtract(&explicit)
                .unwrap()
                .abs()
                .unwrap()
                .reduce_max(..)
                .unwrap()
                .as_type(DType::F64)
                .unwrap()
                .to_scalar::<f64>()
                .unwrap();
            let bound = if dtype == DType::F32 { 1e-3 } else { 1e-9 };
            assert!(
                gap <= bound,
                "{what}: {gap} from the explicit transpose's product"
            );
        }
    }
    let x = random(33, DType::F32, &[3, 400, 45]);
    let g = random(34, DType::F32, &[3, 400, 21]);
    conform(
        "dot_general batch [0], contract [1] with [1]",
        &[x, g],
        |t| t[0].dot_general(&[1], &[0], &t[1], &[1], &[0]),
    );
}

/// Products with a narrow right operand take host's streaming kernel, which works on blocks of
/// two rows and five columns with eight-lane vectors: every width it handles (1..=16, full
/// blocks and each remainder), an odd row count (a last single row), a depth that is not a
/// multiple of eight (a scalar tail) and spans three depth chunks, in both float types.
#[test]
fn skinny_products_every_width() {
    for dtype in [DType::F32, DType::F64] {
        let a = random(11, dtype, &[61, 601]);
        for n in 1..=16 {
            let b = random(12 + n as u64, dtype, &[601, n]);
            conform(
                &format!("dot {dtype:?} [61,601].[601,{n}]"),
                &[a.clone(), b],
                |t| t[0].dot(&t[1]),
            );
        }
    }
}

/// Whole-vector arg reductions split the vector across cores: the first of equal bests and the
/// first NaN must still win, wherever the chunk boundaries fall.
#[test]
fn long_vectors_arg_reduce_to_the_first_best() {
    let n = 300_000;
    let mut values: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32).collect();
    values[70_001] = 5000.0;
    values[150_000] = 5000.0;
    values[200_000] = -5.0;
    values[260_000] = -5.0;
    let ties = Tensor::from_vec(values.clone(), &[n]).unwrap();
    conform("argmax ties", std::slice::from_ref(&ties), |t| {
        t[0].argmax(..)
    });
    conform("argmin ties", std::slice::from_ref(&ties), |t| {
        t[0].argmin(..)
    });
    values[140_000] = f32::NAN;
    values[290_000] = f32::NAN;
    let nans = Tensor::from_vec(values, &[2, n / 2]).unwrap();
    conform("argmax NaN", std::slice::from_ref(&nans), |t| {
        t[0].argmax(..)
    });
    conform("argmin NaN rows", std::slice::from_ref(&nans), |t| {
        t[0].argmin(1)
    });
    let flat = nans.reshape(&[n]).unwrap();
    assert_eq!(
        flat.argmax(..).unwrap().to_vec::<i32>().unwrap(),
        vec![140_000]
    );
}

/// Transposes large enough for host's tiled copy (bands of 128 output rows, tiles of 16
/// columns), with partial bands and tiles, a batch axis, and 1-, 4- and 8-byte elements.
#[test]
fn tiled_transposes() {
    let cases: [(DType, &[usize], &[usize]); 4] = [
        (DType::F32, &[2, 150, 140], &[0, 2, 1]),
        (DType::F64, &[300, 200], &[1, 0]),
        (DType::U8, &[17, 129], &[1, 0]),
        (DType::S32, &[3, 40, 260], &[2, 0, 1]),
    ];
    for (dtype, shape, perm) in cases {
        let x = random(40, dtype, shape);
        conform(
            &format!("transpose {dtype:?} {shape:?} {perm:?}"),
            &[x],
            |t| t[0].transpose(perm),
        );
    }
}

/// Host finds a row's extremum block by block (1024 elements) and searches only a block that
/// beats the best so far: ties across blocks, ±0, NaN before and after the maximum, constant
/// and monotone rows must still give the serial scan's answer.
#[test]
fn arg_reductions_across_blocks() {
    let width = 3000;
    let mut rows = vec![vec![0.0f32; width]; 6];
    for (j, x) in rows[0].iter_mut().enumerate() {
        *x = (j % 7) as f32;
    }
    rows[0][1500] = 9.0;
    rows[0][2900] = 9.0;
    rows[1].iter_mut().for_each(|x| *x = -1.0);
    rows[1][10] = -0.0;
    rows[1][2000] = 0.0;
    rows[2][5] = 4.0;
    rows[2][2500] = f32::NAN;
    rows[3][1030] = f32::NAN;
    rows[3][2] = f32::NAN;
    rows[4].iter_mut().for_each(|x| *x = 3.0);
    for (j, x) in rows[5].iter_mut().enumerate() {
        *x = -(j as f32);
    }
    let data: Vec<f32> = rows.concat();
    let t = Tensor::from_vec(data, &[6, width]).unwrap();
    let inputs = [t];
    conform("argmax rows across blocks", &inputs, |t| t[0].argmax(1));
    conform("argmin rows across blocks", &inputs, |t| t[0].argmin(1));
    let host = inputs[0].backend_copy(tensorbook::Device::host(0)).unwrap();
    assert_eq!(
        host.argmax(1).unwrap().to_vec::<i32>().unwrap(),
        vec![1500, 10, 2500, 2, 0, 0]
    );
}

#[test]
fn conformance_covers_every_available_device() {
    common::enable_sim();
    let devices = tensorbook::devices();
    println!("conformance suite devices: {devices:?}");
    assert!(devices.contains(&tensorbook::Device::host(0)));
    assert!(devices.contains(&tensorbook::Device::sim(0)));
    assert!(devices.contains(&tensorbook::Device::sim(1)));
    if !tensorbook::client_info(tensorbook::Client::Cuda).available {
        println!(
            "skipping cuda in the conformance suite: {}",
            tensorbook::client_info(tensorbook::Client::Cuda)
                .reason
                .unwrap_or_default()
        );
    }
}

/// Failures are part of the contract too: each device refuses the same bad call with the same
/// kind of error (an op that fails everywhere for the wrong reason no longer agrees).
#[test]
fn bad_calls_fail_alike_everywhere() {
    let a = random(21, DType::F32, &[3, 4]);
    let b = random(22, DType::F32, &[5, 2]);
    let inputs = [a, b];
    conform_failing(
        "dot with mismatched inner dimensions",
        &inputs,
        |t| t[0].dot(&t[1]),
        |e| matches!(e, Error::ShapeMismatch { .. }),
    );
    conform_failing(
        "reshape to another element count",
        &inputs,
        |t| t[0].reshape(&[5]),
        |e| matches!(e, Error::ShapeMismatch { .. }),
    );
    conform_failing(
        "argmax over an axis that does not exist",
        &inputs,
        |t| t[0].argmax(7),
        |e| matches!(e, Error::AxisOutOfRange { .. }),
    );
}

/// [`conform`] where binary may refuse the case (a padding that leaves a negative size, an empty
/// axis padded from itself): then every device refuses it alike.
fn conform_or_refused(
    what: &str,
    inputs: &[Tensor],
    op: impl Fn(&[Tensor]) -> tensorbook::Result<Tensor>,
) {
    if op(inputs).is_ok() {
        conform(what, inputs, op);
    } else {
        conform_failing(what, inputs, op, |e| {
            matches!(e, Error::InvalidArgument { .. })
        });
    }
}
