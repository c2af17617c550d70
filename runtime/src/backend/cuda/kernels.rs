//! The cuda kernels' source and the arguments they take. `kernels.cu` holds the element
//! semantics and kernel bodies; this file lists the instantiations (one `extern "C"` kernel per
//! op and dtype), so the source compiled by NVRTC and the names the backend launches come from
//! one place.

use cudarc::driver::DeviceRepr;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ir::conv::MAX_SPATIAL;
use crate::ir::{BinaryOp, ConvDims, ReduceOp, Strided, UnaryOp};

/// The most axes a strided view may keep after merging; `kernels.cu` has the same constant.
pub const MAX_RANK: usize = 12;

const BODY: &str = include_str!("kernels.cu");

/// The element semantics and kernel bodies (`kernels.cu`) without instantiations: what
/// generated kernels are written against.
pub fn body() -> &'static str {
    BODY
}

/// The kernel for an elementwise op of two `dtype` operands.
pub fn binary_name(op: BinaryOp, dtype: DType) -> String {
    format!("binary_{}_{dtype}", op.name())
}

/// The functor a unary op uses on `dtype`, or `None` where the op is not defined (float-only
/// ops on integers: the frontend converts first).
pub fn unary_functor(op: UnaryOp, dtype: DType) -> Option<String> {
    match (dtype.is_float(), op) {
        (true, op) if op.integer_only() => None,
        (true, _) => Some(format!("u_{}", op.name())),
        (false, UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round) => {
            Some(format!("u_int_{}", op.name()))
        }
        (false, op) if op.needs_float() => None,
        (false, op) => Some(format!("u_{}", op.name())),
    }
}

/// The kernel for a unary op on `dtype`, if there is one.
pub fn unary_name(op: UnaryOp, dtype: DType) -> Option<String> {
    unary_functor(op, dtype).map(|_| format!("unary_{}_{dtype}", op.name()))
}

/// The kernel converting `from` to `to`.
pub fn cast_name(from: DType, to: DType) -> String {
    format!("cast_{from}_{to}")
}

fn reduce_op_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum => "sum",
        ReduceOp::Product => "product",
        ReduceOp::Max => "max",
        ReduceOp::Min => "min",
    }
}

/// The `layout` argument of a binary or select kernel: for operand `k` of `views`, bit `k` when
/// it reads the output's own order, bit `k + views.len()` when it is one element repeated (a
/// number broadcast): the two cases that need no index arithmetic.
pub fn operand_layout(shape: &[usize], views: &[&Strided]) -> i32 {
    let n = views.len();
    views.iter().enumerate().fold(0, |bits, (k, v)| {
        if v.is_contiguous(shape) {
            bits | 1 << k
        } else if shape
            .iter()
            .zip(&v.strides)
            .all(|(&d, &s)| d == 1 || s == 0)
        {
            bits | 1 << (k + n)
        } else {
            bits
        }
    })
}

/// [`operand_layout`] of a binary kernel's two operands.
pub fn binary_layout(shape: &[usize], lhs: &Strided, rhs: &Strided) -> i32 {
    operand_layout(shape, &[lhs, rhs])
}

/// The row-reduction kernel for `op` on `dtype`.
pub fn reduce_name(op: ReduceOp, dtype: DType) -> String {
    format!("reduce_{}_{dtype}", reduce_op_name(op))
}

/// The cumulative-scan kernel for `op` on `dtype`.
pub fn cumulative_name(op: ReduceOp, dtype: DType) -> String {
    format!("cumulative_{}_{dtype}", reduce_op_name(op))
}

/// The kernel for a layout operation (`copy_strided`, `scatter_strided`, `take`, `place_rows`,
/// `select`, `sort_step`, `argsort_step`, `sort_tiles`, `argsort_tiles`, `gather`, `scatter`)
/// or the integer matmul (`matmul`) on `dtype`.
pub fn named(kind: &str, dtype: DType) -> String {
    format!("{kind}_{dtype}")
}

/// The most entries one block sorts in shared memory (`SORT_TILE` in kernels.cu).
pub const SORT_TILE: u64 = 2048;

/// One launch of a sort over lines padded to a power of two (`sort_tiles_body` and
/// `sort_step_body` in kernels.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortLaunch {
    /// `sort_tiles`: each tile sorted in shared memory (`merge_size` 0), or the steps of the
    /// merge of blocks of `merge_size` that stay inside a tile.
    Tiles {
        /// The size of the merged blocks, 0 for the whole sort of each tile.
        merge_size: u64,
    },
    /// `sort_step`: one step whose pairs cross tiles, in global memory.
    Step {
        /// The size of the merged blocks.
        size: u64,
        /// The distance of a pair (unused by the mirror step).
        half: u64,
        /// The mirror step that starts each merge.
        flip: i32,
    },
}

/// The launches that sort lines padded to `width` with tiles of `tile` entries (both powers
/// of two, `tile` at most `width` and [`SORT_TILE`]): the tiles sorted, then for each larger
/// block size its steps across tiles and the rest inside them.
pub fn sort_plan(width: u64, tile: u64) -> Vec<SortLaunch> {
    let mut plan = vec![SortLaunch::Tiles { merge_size: 0 }];
    let mut size = tile.saturating_mul(2);
    while size <= width && size > tile {
        plan.push(SortLaunch::Step {
            size,
            half: 0,
            flip: 1,
        });
        let mut half = size / 4;
        while half >= tile {
            plan.push(SortLaunch::Step {
                size,
                half,
                flip: 0,
            });
            half /= 2;
        }
        plan.push(SortLaunch::Tiles { merge_size: size });
        size = size.saturating_mul(2);
    }
    plan
}

/// The full source handed to NVRTC: the bodies plus one instantiation per kernel name above.
pub fn source() -> String {
    let mut s = String::from(BODY);
    s.push('\n');
    for dtype in kernel_dtypes() {
        if dtype.is_half() {
            // Halves only convert and move: dispatch computes every other op on them in f32.
            for to in kernel_dtypes() {
                s.push_str(&format!(
                    "CAST_KERNEL({}, {dtype}, {to})\n",
                    cast_name(dtype, to)
                ));
            }
            s.push_str(&format!("MOVE_KERNELS({dtype})\n"));
            continue;
        }
        for op in BinaryOp::ALL.into_iter().filter(|op| op.defined_for(dtype)) {
            let out = if op.is_comparison() { DType::U8 } else { dtype };
            s.push_str(&format!(
                "BINARY_KERNEL({}, b_{}, {dtype}, {out})\n",
                binary_name(op, dtype),
                op.name()
            ));
        }
        for op in UnaryOp::ALL {
            if let (Some(name), Some(functor)) = (unary_name(op, dtype), unary_functor(op, dtype)) {
                s.push_str(&format!("UNARY_KERNEL({name}, {functor}, {dtype})\n"));
            }
        }
        for to in kernel_dtypes() {
            s.push_str(&format!(
                "CAST_KERNEL({}, {dtype}, {to})\n",
                cast_name(dtype, to)
            ));
        }
        for op in ReduceOp::ALL {
            s.push_str(&format!(
                "REDUCE_KERNEL({}, r_{}, {dtype})\n",
                reduce_name(op, dtype),
                reduce_op_name(op)
            ));
            s.push_str(&format!(
                "CUMULATIVE_KERNEL({}, r_{}, {dtype})\n",
                cumulative_name(op, dtype),
                reduce_op_name(op)
            ));
        }
        s.push_str(&format!("ARG_KERNEL({}, {dtype})\n", named("arg", dtype)));
        if !dtype.is_float() {
            s.push_str(&format!(
                "MATMUL_KERNEL({}, {dtype})\n",
                named("matmul", dtype)
            ));
        } else {
            s.push_str(&format!("CONV_KERNEL({dtype})\n"));
        }
        s.push_str(&format!("LAYOUT_KERNELS({dtype})\n"));
    }
    s.push_str("SORT_POSITIONS_KERNEL\n");
    s
}

/// The dtypes the GPU's kernels are written for: every one but c64 and c128, whose ops run
/// on host for now (`memory::dispatch`).
fn kernel_dtypes() -> impl Iterator<Item = DType> {
    DType::ALL.into_iter().filter(|d| !d.is_complex())
}

/// Every kernel name the source defines (the NVRTC check looks for each in the PTX).
#[cfg(any(test, feature = "test-hooks"))]
pub fn all_names() -> Vec<String> {
    let mut names = Vec::new();
    for dtype in kernel_dtypes() {
        if dtype.is_half() {
            names.extend(kernel_dtypes().map(|to| cast_name(dtype, to)));
            names.extend(["copy_strided", "take"].map(|kind| named(kind, dtype)));
            continue;
        }
        names.extend(
            BinaryOp::ALL
                .iter()
                .filter(|op| op.defined_for(dtype))
                .map(|&op| binary_name(op, dtype)),
        );
        names.extend(UnaryOp::ALL.iter().filter_map(|&op| unary_name(op, dtype)));
        names.extend(kernel_dtypes().map(|to| cast_name(dtype, to)));
        names.extend(ReduceOp::ALL.iter().map(|&op| reduce_name(op, dtype)));
        for op in ReduceOp::ALL {
            let name = cumulative_name(op, dtype);
            names.extend([format!("{name}_chunks"), format!("{name}_carry"), name]);
        }
        names.push(named("arg", dtype));
        if !dtype.is_float() {
            names.push(named("matmul", dtype));
        } else {
            names.push(named("conv", dtype));
        }
        for kind in [
            "copy_strided",
            "scatter_strided",
            "take",
            "place_rows",
            "select",
            "sort_step",
            "argsort_step",
            "sort_tiles",
            "argsort_tiles",
            "gather",
            "scatter",
        ] {
            names.push(named(kind, dtype));
        }
    }
    names.push("sort_positions".into());
    names
}

/// `Conv` in `kernels.cu`: a convolution's dimensions (`ir::ConvDims`) by value, every field
/// 8 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ConvArg {
    spatial: u64,
    channels: u64,
    out_channels: u64,
    out_batch: u64,
    group_channels: u64,
    feature_groups: u64,
    batch_groups: u64,
    pad: u64,
    input: [u64; MAX_SPATIAL],
    kernel: [u64; MAX_SPATIAL],
    output: [u64; MAX_SPATIAL],
    strides: [u64; MAX_SPATIAL],
    input_dilation: [u64; MAX_SPATIAL],
    kernel_dilation: [u64; MAX_SPATIAL],
    padding_lo: [i64; MAX_SPATIAL],
}

// SAFETY: `repr(C)` plain data of 8-byte fields, laid out as `Conv` in `kernels.cu`.
unsafe impl DeviceRepr for ConvArg {}

/// The kernel argument of a convolution; its spatial rank is at most `MAX_SPATIAL` (the
/// frontend's limit).
pub fn conv_arg(d: &ConvDims) -> Result<ConvArg> {
    let spatial = d.input.len();
    if spatial > MAX_SPATIAL {
        return Err(Error::InvalidArgument {
            op: "conv",
            message: format!("{spatial} spatial axes; the cuda kernel takes {MAX_SPATIAL}"),
        });
    }
    let fill = |values: &[usize]| {
        let mut out = [1u64; MAX_SPATIAL];
        for (slot, &v) in out.iter_mut().zip(values) {
            *slot = v as u64;
        }
        out
    };
    let mut padding_lo = [0i64; MAX_SPATIAL];
    padding_lo[..spatial].copy_from_slice(&d.padding_lo);
    Ok(ConvArg {
        spatial: spatial as u64,
        channels: d.channels as u64,
        out_channels: d.out_channels as u64,
        out_batch: d.out_batch() as u64,
        group_channels: d.group_channels() as u64,
        feature_groups: d.feature_groups.max(1) as u64,
        batch_groups: d.batch_groups.max(1) as u64,
        pad: 0,
        input: fill(&d.input),
        kernel: fill(&d.kernel),
        output: fill(&d.output),
        strides: fill(&d.strides),
        input_dilation: fill(&d.input_dilation),
        kernel_dilation: fill(&d.kernel_dilation),
        padding_lo,
    })
}

/// `Shape` in `kernels.cu`: passed by value, so a launch needs no upload of its metadata.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ShapeArg {
    rank: u32,
    pad: u32,
    dims: [u64; MAX_RANK],
}

/// `View` in `kernels.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ViewArg {
    offset: u64,
    strides: [u64; MAX_RANK],
}

impl ViewArg {
    /// A view of nothing, for unused slots of fixed-size arrays of views.
    pub const UNUSED: ViewArg = ViewArg {
        offset: 0,
        strides: [0; MAX_RANK],
    };
}

// SAFETY: both are `repr(C)` plain data laid out as the C structs in `kernels.cu` (u32, u32,
// then u64 arrays: no implicit padding on either side).
unsafe impl DeviceRepr for ShapeArg {}
unsafe impl DeviceRepr for ViewArg {}

/// A shape and views of it with axes of extent 1 dropped and neighbouring axes merged wherever
/// every view reads them as one run; what is left must fit in `MAX_RANK` axes.
pub fn shape_and_views(
    op: &'static str,
    shape: &[usize],
    views: &[&Strided],
) -> Result<(ShapeArg, Vec<ViewArg>)> {
    let mut dims: Vec<usize> = Vec::new();
    let mut strides: Vec<Vec<usize>> = vec![Vec::new(); views.len()];
    for (axis, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let mergeable = !dims.is_empty()
            && views.iter().zip(&strides).all(|(v, s)| {
                // The previous kept axis steps over exactly this axis' run.
                s.last().copied() == Some(v.strides[axis] * d)
            });
        if mergeable {
            let last = dims.len() - 1;
            dims[last] *= d;
            for (v, s) in views.iter().zip(strides.iter_mut()) {
                s[last] = v.strides[axis];
            }
        } else {
            dims.push(d);
            for (v, s) in views.iter().zip(strides.iter_mut()) {
                s.push(v.strides[axis]);
            }
        }
    }
    if dims.len() > MAX_RANK {
        return Err(Error::InvalidArgument {
            op,
            message: format!(
                "the cuda backend reads strided views of at most {MAX_RANK} axes that cannot be \
                 merged; this one has {} (shape {shape:?})",
                dims.len()
            ),
        });
    }
    let mut shape_arg = ShapeArg {
        rank: dims.len() as u32,
        pad: 0,
        dims: [1; MAX_RANK],
    };
    for (slot, &d) in shape_arg.dims.iter_mut().zip(&dims) {
        *slot = d as u64;
    }
    let view_args = views
        .iter()
        .zip(&strides)
        .map(|(v, s)| {
            let mut arg = ViewArg {
                offset: v.offset as u64,
                strides: [0; MAX_RANK],
            };
            for (slot, &st) in arg.strides.iter_mut().zip(s) {
                *slot = st as u64;
            }
            arg
        })
        .collect();
    Ok((shape_arg, view_args))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_views_merge_into_one_axis() {
        let shape = [2, 3, 4];
        let v = Strided::contiguous(&shape);
        let (s, views) = shape_and_views("t", &shape, &[&v]).unwrap();
        assert_eq!(s.rank, 1);
        assert_eq!(s.dims[0], 24);
        assert_eq!(views[0].strides[0], 1);
    }

    #[test]
    fn a_broadcast_axis_stays_apart() {
        // [2,3] + [3] broadcast: the left is contiguous, the right repeats each row.
        let shape = [2, 3];
        let a = Strided::contiguous(&shape);
        let b = Strided {
            offset: 0,
            strides: vec![0, 1],
        };
        let (s, views) = shape_and_views("t", &shape, &[&a, &b]).unwrap();
        assert_eq!((s.rank, s.dims[0], s.dims[1]), (2, 2, 3));
        assert_eq!((views[1].strides[0], views[1].strides[1]), (0, 1));
    }

    #[test]
    fn transposes_keep_their_axes() {
        let shape = [3, 2];
        let t = Strided {
            offset: 0,
            strides: vec![1, 3],
        };
        let (s, views) = shape_and_views("t", &shape, &[&t]).unwrap();
        assert_eq!(s.rank, 2);
        assert_eq!((views[0].strides[0], views[0].strides[1]), (1, 3));
    }

    #[test]
    fn kernel_names_are_unique_and_instantiated() {
        let src = source();
        let names = all_names();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        for name in names
            .iter()
            .filter(|n| n.starts_with("binary_") || n.starts_with("cast_"))
        {
            assert!(src.contains(&format!("({name},")), "{name}");
        }
    }
}
