//! Fused regions on the CPU: every step of a region computed over one block of positions at a
//! time (a few KiB per step, in cache), the last step written straight to the output (streamed
//! past the caches when the output is large) or folded into its reduction, on all cores. No
//! step's full-size result ever exists, so a chain of k elementwise ops reads its inputs and
//! writes its output once instead of k times.
//!
//! Each step uses the same scalar meaning as the eager loops (`BinaryOp::arith`,
//! `UnaryOp::apply_float`, the vectorised f32 transcendentals, the same casts), so a fused
//! result equals the eager one element for element; a fused reduction folds in another order.

use std::mem::MaybeUninit;

use super::parallel::{for_each_chunk_mut, map_tasks, par_write, MIN_PER_TASK};
use super::reduce::{self, fold};
use super::{stream, vmath};
use crate::allocate::try_alloc;
use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::host_vec::HostVec;
use crate::ir::fused::{Arg, Fused, StepOp};
use crate::ir::{BinaryOp, ReduceOp, UnaryOp};
use crate::shape::{numel, unravel};

/// Positions per block: 1024 f32 (4 KiB) per step keeps a five-step region in L1 and L2.
const BLOCK: usize = 4096;

/// The result of one step (or a gathered input) over one block.
enum Scratch {
    U8(Vec<u8>),
    U32(Vec<u32>),
    S32(Vec<i32>),
    S64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Scratch {
    /// A block for `dtype`. `run` refuses a region holding any dtype but the fused ones first;
    /// were one to get here, its empty block makes every typed access an error, not a panic.
    fn new(dtype: DType) -> Scratch {
        match dtype {
            DType::U8 => Scratch::U8(vec![0; BLOCK]),
            DType::U32 => Scratch::U32(vec![0; BLOCK]),
            DType::S32 => Scratch::S32(vec![0; BLOCK]),
            DType::S64 => Scratch::S64(vec![0; BLOCK]),
            DType::F32 => Scratch::F32(vec![0.0; BLOCK]),
            DType::F64 => Scratch::F64(vec![0.0; BLOCK]),
            _ => Scratch::U8(Vec::new()),
        }
    }
}

/// `with_dtype!` over the dtypes a region computes in (`ir::fused::FUSED_DTYPES`: the steps
/// are compiled once per dtype, and per pair for casts); another is the planner's bug, an
/// error, unless an `else` says what to do with it (the host's casts fall back to a plain loop).
macro_rules! with_fused_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        with_fused_dtype!($dtype, $t => $body, else return Err(mixed()))
    };
    ($dtype:expr, $t:ident => $body:expr, else $other:expr) => {
        match $dtype {
            DType::U8 => {
                type $t = u8;
                $body
            }
            DType::U32 => {
                type $t = u32;
                $body
            }
            DType::S32 => {
                type $t = i32;
                $body
            }
            DType::S64 => {
                type $t = i64;
                $body
            }
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            _ => $other,
        }
    };
}
pub(super) use with_fused_dtype;

/// The element types a scratch block holds, with typed access to it.
trait Lane: Element {
    fn of(s: &Scratch) -> Result<&[Self]>;
    fn of_mut(s: &mut Scratch) -> Result<&mut [Self]>;
}

macro_rules! lane {
    ($t:ty, $v:ident) => {
        impl Lane for $t {
            fn of(s: &Scratch) -> Result<&[Self]> {
                match s {
                    Scratch::$v(v) => Ok(v),
                    _ => Err(mixed()),
                }
            }
            fn of_mut(s: &mut Scratch) -> Result<&mut [Self]> {
                match s {
                    Scratch::$v(v) => Ok(v),
                    _ => Err(mixed()),
                }
            }
        }
    };
}
lane!(u8, U8);
lane!(u32, U32);
lane!(i32, S32);
lane!(i64, S64);
lane!(f32, F32);
lane!(f64, F64);

fn mixed() -> Error {
    Error::InvalidArgument {
        op: "fused",
        message: "internal: a step's operand has another dtype than the step expects".into(),
    }
}

/// An operand over one block: a run of values, or one value for every position (a scalar
/// broadcast).
#[derive(Clone, Copy)]
enum Src<'a, T> {
    Run(&'a [T]),
    Splat(T),
}

/// How an input is read: in order, as one value, or gathered through its view.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Read {
    InOrder,
    Splat,
    Gather,
}

/// Per-task state: one scratch block per step and per gathered input.
struct Ctx<'a> {
    f: &'a Fused,
    inputs: &'a [&'a Buffer],
    reads: &'a [Read],
    steps: Vec<Scratch>,
    gathered: Vec<Option<Scratch>>,
    coords: Vec<usize>,
}

impl<'a> Ctx<'a> {
    fn new(f: &'a Fused, inputs: &'a [&'a Buffer], reads: &'a [Read]) -> Ctx<'a> {
        Ctx {
            f,
            inputs,
            reads,
            steps: f.steps.iter().map(|s| Scratch::new(s.dtype)).collect(),
            gathered: f
                .inputs
                .iter()
                .zip(reads)
                .map(|(x, r)| (*r == Read::Gather).then(|| Scratch::new(x.dtype)))
                .collect(),
            coords: vec![0; f.shape.len()],
        }
    }

    /// Computes positions `start..start + out.len()` (at most one block) of the region's last
    /// step into `out`.
    fn block<U: LaneDest>(&mut self, start: usize, out: &mut [U]) -> Result<()> {
        let len = out.len();
        for (i, slot) in self.gathered.iter_mut().enumerate() {
            if let Some(s) = slot.as_mut() {
                let view = &self.f.inputs[i].view;
                gather(
                    self.inputs[i],
                    view,
                    &self.f.shape,
                    start,
                    len,
                    s,
                    &mut self.coords,
                )?;
            }
        }
        let last = self.f.steps.len() - 1;
        for k in 0..last {
            let (before, here) = self.steps.split_at_mut(k);
            let operands = Operands {
                f: self.f,
                inputs: self.inputs,
                reads: self.reads,
                gathered: &self.gathered,
                steps: before,
                start,
                len,
            };
            operands.step_into_scratch(k, &mut here[0])?;
        }
        let operands = Operands {
            f: self.f,
            inputs: self.inputs,
            reads: self.reads,
            gathered: &self.gathered,
            steps: &self.steps[..last],
            start,
            len,
        };
        operands.run(last, U::of_dest(out))
    }
}

/// Where a step writes: a scratch block or the output, typed.
enum Dest<'b> {
    U8(&'b mut [u8]),
    U32(&'b mut [u32]),
    S32(&'b mut [i32]),
    S64(&'b mut [i64]),
    F32(&'b mut [f32]),
    F64(&'b mut [f64]),
}

trait AsDest: Sized {
    fn of_dest(s: &mut [Self]) -> Dest<'_>;
    fn from_dest<'b>(d: Dest<'b>) -> Result<&'b mut [Self]>;
}

macro_rules! as_dest {
    ($t:ty, $v:ident) => {
        impl AsDest for $t {
            fn of_dest(s: &mut [Self]) -> Dest<'_> {
                Dest::$v(s)
            }
            fn from_dest<'b>(d: Dest<'b>) -> Result<&'b mut [Self]> {
                match d {
                    Dest::$v(s) => Ok(s),
                    _ => Err(mixed()),
                }
            }
        }
    };
}
as_dest!(u8, U8);
as_dest!(u32, U32);
as_dest!(i32, S32);
as_dest!(i64, S64);
as_dest!(f32, F32);
as_dest!(f64, F64);

trait LaneDest: Lane + AsDest {}
impl<T: Lane + AsDest> LaneDest for T {}

/// What the step being computed can read.
struct Operands<'c> {
    f: &'c Fused,
    inputs: &'c [&'c Buffer],
    reads: &'c [Read],
    gathered: &'c [Option<Scratch>],
    steps: &'c [Scratch],
    start: usize,
    len: usize,
}

impl<'c> Operands<'c> {
    #[inline(always)]
    fn src<T: LaneDest>(&self, arg: Arg) -> Result<Src<'c, T>> {
        let len = self.len;
        match arg {
            Arg::Step(j) => {
                let s = self.steps.get(j).ok_or_else(mixed)?;
                Ok(Src::Run(&T::of(s)?[..len]))
            }
            Arg::Input(i) => {
                let buffer =
                    T::slice_of(self.inputs.get(i).ok_or_else(mixed)?).ok_or_else(mixed)?;
                match self.reads[i] {
                    Read::InOrder => Ok(Src::Run(&buffer[self.start..self.start + len])),
                    Read::Splat => Ok(Src::Splat(
                        *buffer.get(self.f.inputs[i].view.offset).ok_or_else(mixed)?,
                    )),
                    Read::Gather => {
                        let s = self.gathered[i].as_ref().ok_or_else(mixed)?;
                        Ok(Src::Run(&T::of(s)?[..len]))
                    }
                }
            }
        }
    }

    fn step_into_scratch(&self, k: usize, s: &mut Scratch) -> Result<()> {
        let len = self.len;
        let dest = match s {
            Scratch::U8(v) => Dest::U8(&mut v[..len]),
            Scratch::U32(v) => Dest::U32(&mut v[..len]),
            Scratch::S32(v) => Dest::S32(&mut v[..len]),
            Scratch::S64(v) => Dest::S64(&mut v[..len]),
            Scratch::F32(v) => Dest::F32(&mut v[..len]),
            Scratch::F64(v) => Dest::F64(&mut v[..len]),
        };
        self.run(k, dest)
    }

    /// Step `k`, through the copy compiled with AVX2 and FMA where the CPU has them (so the
    /// step loops vectorise 8 f32 wide). The steps' code exists twice in all, not once per
    /// output type: inlined per type it took the runtime's optimised build from about one
    /// minute to five.
    fn run(&self, k: usize, dest: Dest<'_>) -> Result<()> {
        #[cfg(target_arch = "x86_64")]
        if avx2() {
            // SAFETY: the CPU has AVX2 and FMA, which `step_avx2` was compiled for.
            return unsafe { step_avx2(self, k, dest) };
        }
        self.step(k, dest)
    }

    /// Computes step `k` over the block into `dest`.
    #[inline(always)]
    fn step(&self, k: usize, dest: Dest<'_>) -> Result<()> {
        let step = &self.f.steps[k];
        match step.op {
            StepOp::Binary(op) => {
                let dtype = self.f.arg_dtype(step.args[0]);
                with_fused_dtype!(dtype, T => {
                    let a = self.src::<T>(step.args[0])?;
                    let b = self.src::<T>(step.args[1])?;
                    binary(op, a, b, dest)
                })
            }
            StepOp::Unary(op) => match self.f.arg_dtype(step.args[0]) {
                DType::F32 => unary_f32(op, self.src::<f32>(step.args[0])?, f32::from_dest(dest)?),
                DType::F64 => {
                    let x = self.src::<f64>(step.args[0])?;
                    map(x, f64::from_dest(dest)?, |e| op.apply_float(e));
                    Ok(())
                }
                other => with_fused_dtype!(other, T => {
                    let x = self.src::<T>(step.args[0])?;
                    map(x, T::from_dest(dest)?, |e| op.apply(e));
                    Ok(())
                }),
            },
            StepOp::Cast(to) => {
                let from = self.f.arg_dtype(step.args[0]);
                with_fused_dtype!(from, T => {
                    let x = self.src::<T>(step.args[0])?;
                    with_fused_dtype!(to, U => {
                        map(x, U::from_dest(dest)?, crate::element::convert::<T, U>);
                        Ok(())
                    })
                })
            }
        }
    }
}

#[inline(always)]
fn map<T: Copy, U: Copy>(x: Src<'_, T>, out: &mut [U], f: impl Fn(T) -> U) {
    match x {
        Src::Run(v) => out.iter_mut().zip(v).for_each(|(o, &e)| *o = f(e)),
        Src::Splat(e) => {
            let y = f(e);
            out.iter_mut().for_each(|o| *o = y);
        }
    }
}

#[inline(always)]
fn zip<T: Copy, U: Copy>(a: Src<'_, T>, b: Src<'_, T>, out: &mut [U], f: impl Fn(T, T) -> U) {
    match (a, b) {
        (Src::Run(x), Src::Run(y)) => out
            .iter_mut()
            .zip(x.iter().zip(y))
            .for_each(|(o, (&x, &y))| *o = f(x, y)),
        (Src::Run(x), Src::Splat(y)) => out.iter_mut().zip(x).for_each(|(o, &x)| *o = f(x, y)),
        (Src::Splat(x), Src::Run(y)) => out.iter_mut().zip(y).for_each(|(o, &y)| *o = f(x, y)),
        (Src::Splat(x), Src::Splat(y)) => {
            let v = f(x, y);
            out.iter_mut().for_each(|o| *o = v);
        }
    }
}

#[inline(always)]
fn binary<T: LaneDest>(op: BinaryOp, a: Src<'_, T>, b: Src<'_, T>, dest: Dest<'_>) -> Result<()> {
    with_binary_op!(op, f =>
        arith zip(a, b, T::from_dest(dest)?, f),
        cmp zip(a, b, u8::from_dest(dest)?, f));
    Ok(())
}

#[inline(always)]
fn unary_f32(op: UnaryOp, x: Src<'_, f32>, out: &mut [f32]) -> Result<()> {
    match (x, vmath::kernel(op)) {
        (Src::Run(v), Some(kernel)) => {
            // SAFETY: `&mut [f32]` seen as `&mut [MaybeUninit<f32>]` of the same length; the
            // kernel writes only initialised values.
            let slots = unsafe {
                std::slice::from_raw_parts_mut(
                    out.as_mut_ptr().cast::<MaybeUninit<f32>>(),
                    out.len(),
                )
            };
            kernel(v, slots);
        }
        (Src::Splat(e), Some(kernel)) => {
            let mut one = [MaybeUninit::uninit()];
            kernel(&[e], &mut one);
            // SAFETY: the kernel wrote the one slot it was given.
            let y = unsafe { one[0].assume_init() };
            out.iter_mut().for_each(|o| *o = y);
        }
        (x, None) => map(x, out, |e| op.apply_float(e)),
    }
    Ok(())
}

/// Reads positions `start..start + len` of the region through `view` into `s`.
fn gather(
    buffer: &Buffer,
    view: &crate::ir::Strided,
    shape: &[usize],
    start: usize,
    len: usize,
    s: &mut Scratch,
    coords: &mut [usize],
) -> Result<()> {
    with_fused_dtype!(buffer.dtype(), T => {
        let v = T::slice_of(buffer).ok_or_else(mixed)?;
        let out = T::of_mut(s)?;
        gather_typed(v, view, shape, start, &mut out[..len], coords);
        Ok(())
    })
}

fn gather_typed<T: Copy>(
    v: &[T],
    view: &crate::ir::Strided,
    shape: &[usize],
    start: usize,
    out: &mut [T],
    coords: &mut [usize],
) {
    if shape.is_empty() {
        out.iter_mut().for_each(|o| *o = v[view.offset]);
        return;
    }
    unravel(start, shape, coords);
    let mut at = view.offset
        + coords
            .iter()
            .zip(&view.strides)
            .map(|(c, s)| c * s)
            .sum::<usize>();
    let last = shape.len() - 1;
    for o in out.iter_mut() {
        *o = v[at];
        // Odometer step: the last axis moves, carrying into the axes before it.
        let mut axis = last;
        loop {
            coords[axis] += 1;
            at += view.strides[axis];
            if coords[axis] < shape[axis] || axis == 0 {
                break;
            }
            at -= view.strides[axis] * shape[axis];
            coords[axis] = 0;
            axis -= 1;
        }
    }
}

/// Checks the inputs against the region before any element is read: dtypes, and every
/// position each view can reach inside its buffer.
fn check(f: &Fused, inputs: &[&Buffer]) -> Result<Vec<Read>> {
    f.validate()?;
    let bad = |message: String| Error::InvalidArgument {
        op: "fused",
        message: format!("internal: {message}"),
    };
    if inputs.len() != f.inputs.len() {
        return Err(bad(format!(
            "{} inputs for {}",
            inputs.len(),
            f.inputs.len()
        )));
    }
    let n = numel(&f.shape);
    let mut reads = Vec::with_capacity(inputs.len());
    for (i, (b, x)) in inputs.iter().zip(&f.inputs).enumerate() {
        if b.dtype() != x.dtype {
            return Err(bad(format!(
                "input {i} is {}, expected {}",
                b.dtype(),
                x.dtype
            )));
        }
        if n > 0 {
            let reach = f
                .shape
                .iter()
                .zip(&x.view.strides)
                .fold(x.view.offset, |acc, (&d, &s)| {
                    acc.saturating_add((d - 1).saturating_mul(s))
                });
            if reach >= b.len() {
                return Err(bad(format!("input {i} read past its {} elements", b.len())));
            }
        }
        reads.push(if x.view.is_contiguous(&f.shape) {
            Read::InOrder
        } else if x.view.strides.iter().all(|&s| s == 0) {
            Read::Splat
        } else {
            Read::Gather
        });
    }
    Ok(reads)
}

/// Runs a fused region on host buffers.
pub(super) fn run(f: &Fused, inputs: &[&Buffer]) -> Result<Buffer> {
    let reads = check(f, inputs)?;
    match &f.reduce {
        None => {
            with_fused_dtype!(f.out_dtype(), U => Ok(U::into_buffer(fill::<U>(f, inputs, &reads)?)))
        }
        Some((op, axes)) => {
            let rank = f.shape.len();
            let trailing = axes
                .iter()
                .enumerate()
                .all(|(i, &a)| a == rank - axes.len() + i);
            if trailing {
                with_fused_dtype!(f.out_dtype(), U => Ok(U::into_buffer(reduce_rows::<U>(f, inputs, &reads, *op, axes.len())?)))
            } else {
                // Another axis order: the region once into memory, then the usual reduction.
                let full = with_fused_dtype!(f.out_dtype(), U => U::into_buffer(fill::<U>(f, inputs, &reads)?));
                reduce::reduce(*op, &full, &f.shape, axes)
            }
        }
    }
}

/// Every position of the region's last step, on all cores.
fn fill<U: LaneDest>(f: &Fused, inputs: &[&Buffer], reads: &[Read]) -> Result<HostVec<U>> {
    let n = numel(&f.shape);
    let streamed = stream::worth_streaming::<U>(n);
    let failure = std::sync::Mutex::new(None);
    // SAFETY: every task writes every slot it is given (a failed block is zero-filled and the
    // error returned instead of the vector).
    let out = unsafe {
        par_write(
            n,
            &f.shape,
            MIN_PER_TASK,
            |base, slots: &mut [MaybeUninit<U>]| {
                let mut ctx = Ctx::new(f, inputs, reads);
                let mut scratch = [U::ZERO; BLOCK];
                for (b, dst) in slots.chunks_mut(BLOCK).enumerate() {
                    let block = &mut scratch[..dst.len()];
                    if let Err(e) = run_block(&mut ctx, base + b * BLOCK, block) {
                        block.iter_mut().for_each(|x| *x = U::ZERO);
                        *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    }
                    if streamed {
                        stream::write_streaming(block, dst);
                    } else {
                        for (d, &x) in dst.iter_mut().zip(block.iter()) {
                            d.write(x);
                        }
                    }
                }
                if streamed {
                    stream::fence();
                }
            },
        )
    }?;
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn run_block<U: LaneDest>(ctx: &mut Ctx<'_>, start: usize, out: &mut [U]) -> Result<()> {
    ctx.block(start, out)
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn step_avx2(operands: &Operands<'_>, k: usize, dest: Dest<'_>) -> Result<()> {
    operands.step(k, dest)
}

/// A reduction over the last `reduced` axes of the region: each output is its row of
/// positions computed block by block and folded, never stored.
fn reduce_rows<U: LaneDest>(
    f: &Fused,
    inputs: &[&Buffer],
    reads: &[Read],
    op: ReduceOp,
    reduced: usize,
) -> Result<HostVec<U>> {
    let rank = f.shape.len();
    let out_shape = &f.shape[..rank - reduced];
    let rows = numel(out_shape);
    let inner = numel(&f.shape[rank - reduced..]);
    let mut out = try_alloc(rows, op.identity::<U>(), out_shape)?;
    if inner == 0 || rows == 0 {
        return Ok(out);
    }
    // Folds positions `from..to` of the region.
    let fold_span = |ctx: &mut Ctx<'_>, scratch: &mut [U], from: usize, to: usize| -> Result<U> {
        let mut acc = op.identity::<U>();
        let mut at = from;
        while at < to {
            let len = BLOCK.min(to - at);
            let block = &mut scratch[..len];
            run_block(ctx, at, block)?;
            acc = op.combine(acc, fold(op, block));
            at += len;
        }
        Ok(acc)
    };
    if rows >= rayon::current_num_threads() * 4 {
        let per_task = (MIN_PER_TASK / inner).max(1);
        let failure = std::sync::Mutex::new(None);
        for_each_chunk_mut(&mut out, per_task, |task, chunk| {
            let mut ctx = Ctx::new(f, inputs, reads);
            let mut scratch = vec![U::ZERO; BLOCK];
            for (r, o) in chunk.iter_mut().enumerate() {
                let row = task * per_task + r;
                match fold_span(&mut ctx, &mut scratch, row * inner, (row + 1) * inner) {
                    Ok(value) => *o = value,
                    Err(e) => {
                        *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        return;
                    }
                }
            }
        });
        if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
    } else {
        for (row, o) in out.iter_mut().enumerate() {
            let (from, to) = (row * inner, (row + 1) * inner);
            let pieces = inner.div_ceil(MIN_PER_TASK);
            let partials = map_tasks(pieces, |p| {
                let mut ctx = Ctx::new(f, inputs, reads);
                let mut scratch = vec![U::ZERO; BLOCK];
                let a = from + p * MIN_PER_TASK;
                fold_span(&mut ctx, &mut scratch, a, (a + MIN_PER_TASK).min(to))
            })
            .into_iter()
            .collect::<Result<Vec<U>>>()?;
            *o = partials
                .into_iter()
                .fold(op.identity::<U>(), |acc, x| op.combine(acc, x));
        }
    }
    Ok(out)
}
