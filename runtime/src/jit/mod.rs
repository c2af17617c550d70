//! Compiled tensor functions, as EXLA's `jit`: a function over tensors is traced once per set of
//! argument templates (dtype, shape, placement) and device into a graph of the op set, compiled
//! for that device (fused where the device fuses), cached, and run from then on without
//! calling the function again.
//!
//! ```
//! use tensorbook::{jit, jit_cached, on, DType, Device, Tensor};
//! let add = jit(|a: &Tensor, b: &Tensor| a.add(b)?.multiply(2.0));
//! let x = on(Device::host(0)).iota(DType::F32, &[3], None)?;
//! assert!(!jit_cached(&add, (&x, &x))?);
//! let y = add.call((&x, &x))?;
//! assert_eq!(y.to_vec::<f32>()?, vec![0.0, 4.0, 8.0]);
//! assert!(jit_cached(&add, (&x, &x))?);
//! # Ok::<(), tensorbook::Error>(())
//! ```
//!
//! Where a call runs follows the one placement rule: the device given with [`Jit::on`] >
//! the arguments' placement (binary arguments are weak and follow) > the session default at
//! call time. A cache entry is per
//! (templates, device), so a call after the session default changed compiles for the new
//! device. Inside the function, tensors are placeholders: ops, shapes, promotion and Rust
//! control flow work as in eager code; reading a value is an error ([`crate::Error::Traced`]),
//! and an error names the op that caused it ([`crate::Error::Jit`]).

pub(crate) mod control;
pub(crate) mod fuse;
pub(crate) mod grad;
pub(crate) mod graph;
pub(crate) mod program;
pub(crate) mod stream;
pub(crate) mod trace;
mod vjp;
pub(crate) mod vmap;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::device::{Client, Device};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::session::resolve_compiled_device;
use crate::tensor::Tensor;

pub use program::Stats;

use graph::Graph;
use graph::Output;
use program::Program;

/// What a jit function returns: one tensor, a pair, or any number of them.
pub trait JitOutput: Sized + Send + 'static {
    /// The tensors, in order.
    fn into_tensors(self) -> Vec<Tensor>;
    /// Rebuilds the value from tensors of the same number.
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self>;
}

fn count_error(expected: usize, got: usize) -> Error {
    Error::InvalidArgument {
        op: "jit",
        message: format!("internal: {got} results for {expected}"),
    }
}

impl JitOutput for Tensor {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self]
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
        let n = tensors.len();
        let mut it = tensors.into_iter();
        match (it.next(), it.next()) {
            (Some(t), None) => Ok(t),
            _ => Err(count_error(1, n)),
        }
    }
}

impl JitOutput for (Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1]
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
        let n = tensors.len();
        let mut it = tensors.into_iter();
        match (it.next(), it.next(), it.next()) {
            (Some(a), Some(b), None) => Ok((a, b)),
            _ => Err(count_error(2, n)),
        }
    }
}

impl JitOutput for (Tensor, Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1, self.2]
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
        let n = tensors.len();
        let mut it = tensors.into_iter();
        match (it.next(), it.next(), it.next(), it.next()) {
            (Some(a), Some(b), Some(c), None) => Ok((a, b, c)),
            _ => Err(count_error(3, n)),
        }
    }
}

impl JitOutput for (Tensor, Tensor, Tensor, Tensor) {
    fn into_tensors(self) -> Vec<Tensor> {
        vec![self.0, self.1, self.2, self.3]
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
        let n = tensors.len();
        let mut it = tensors.into_iter();
        match (it.next(), it.next(), it.next(), it.next(), it.next()) {
            (Some(a), Some(b), Some(c), Some(d), None) => Ok((a, b, c, d)),
            _ => Err(count_error(4, n)),
        }
    }
}

impl JitOutput for (Tensor, Vec<Tensor>) {
    fn into_tensors(self) -> Vec<Tensor> {
        let mut all = vec![self.0];
        all.extend(self.1);
        all
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
        let n = tensors.len();
        let mut it = tensors.into_iter();
        let first = it.next().ok_or_else(|| count_error(1, n))?;
        Ok((first, it.collect()))
    }
}

impl JitOutput for Vec<Tensor> {
    fn into_tensors(self) -> Vec<Tensor> {
        self
    }
    fn from_tensors(tensors: Vec<Tensor>) -> Result<Self> {
        Ok(tensors)
    }
}

/// Marker types telling the closure shapes [`JitFn`] accepts apart.
pub mod arity {
    /// `Fn(&Tensor)`.
    pub struct One;
    /// `Fn(&Tensor, &Tensor)`.
    pub struct Two;
    /// `Fn(&Tensor, &Tensor, &Tensor)`.
    pub struct Three;
    /// `Fn(&Tensor, &Tensor, &Tensor, &Tensor)`.
    pub struct Four;
    /// `Fn(&[Tensor])`: any number of arguments.
    pub struct Slice;
    /// An existing [`super::Jit`] (shares its cache).
    pub struct Compiled;
}

/// A function `jit` can trace: a closure over one to four `&Tensor` arguments, or over
/// `&[Tensor]`, returning `Result` of a [`JitOutput`]. (`A` only tells the shapes apart; write
/// the closure's argument types, `|a: &Tensor, b: &Tensor| ...`.)
pub trait JitFn<A, O>: Send + Sync + 'static {
    /// The number of arguments, or `None` for a slice.
    fn arity(&self) -> Option<usize>;
    /// Calls the function.
    fn apply(&self, args: &[Tensor]) -> Result<O>;
}

macro_rules! jit_fn {
    ($marker:ident, $n:expr, $($i:ident),*) => {
        impl<F, O> JitFn<arity::$marker, O> for F
        where
            F: Fn($(jit_fn!(@ref $i)),*) -> Result<O> + Send + Sync + 'static,
            O: JitOutput,
        {
            fn arity(&self) -> Option<usize> {
                Some($n)
            }
            fn apply(&self, args: &[Tensor]) -> Result<O> {
                match args {
                    [$($i),*] => self($($i),*),
                    _ => Err(arity_error($n, args.len())),
                }
            }
        }
    };
    (@ref $i:ident) => { &Tensor };
}
jit_fn!(One, 1, a0);
jit_fn!(Two, 2, a0, a1);
jit_fn!(Three, 3, a0, a1, a2);
jit_fn!(Four, 4, a0, a1, a2, a3);

impl<F, O> JitFn<arity::Slice, O> for F
where
    F: Fn(&[Tensor]) -> Result<O> + Send + Sync + 'static,
    O: JitOutput,
{
    fn arity(&self) -> Option<usize> {
        None
    }
    fn apply(&self, args: &[Tensor]) -> Result<O> {
        self(args)
    }
}

/// A compiled function is a function `jit`, `grad` and `vmap` can take: traced inside
/// another function, its ops join that trace (so `vmap(grad(f))` and `grad(jit(f))` compose).
impl<O: JitOutput> JitFn<arity::Compiled, O> for Jit<O> {
    fn arity(&self) -> Option<usize> {
        self.inner.arity
    }
    fn apply(&self, args: &[Tensor]) -> Result<O> {
        self.call(args)
    }
}

fn arity_error(expected: usize, got: usize) -> Error {
    Error::InvalidArgument {
        op: "jit",
        message: format!("the function takes {expected} tensors, {got} given"),
    }
}

/// The arguments of a call: `&t`, a tuple of up to four `&Tensor`, `&[Tensor]`, `&[&Tensor]`,
/// an array of `Tensor` or `&Tensor` (by value or by reference: `g.call(&[x, w])`), or a `Vec`
/// of tensors.
pub trait JitArgs {
    /// The tensors, cloned (cheap: tensors share their memory).
    fn tensors(self) -> Vec<Tensor>;
}

impl JitArgs for &Tensor {
    fn tensors(self) -> Vec<Tensor> {
        vec![self.clone()]
    }
}
impl JitArgs for (&Tensor, &Tensor) {
    fn tensors(self) -> Vec<Tensor> {
        vec![self.0.clone(), self.1.clone()]
    }
}
impl JitArgs for (&Tensor, &Tensor, &Tensor) {
    fn tensors(self) -> Vec<Tensor> {
        vec![self.0.clone(), self.1.clone(), self.2.clone()]
    }
}
impl JitArgs for (&Tensor, &Tensor, &Tensor, &Tensor) {
    fn tensors(self) -> Vec<Tensor> {
        vec![
            self.0.clone(),
            self.1.clone(),
            self.2.clone(),
            self.3.clone(),
        ]
    }
}
impl JitArgs for &[Tensor] {
    fn tensors(self) -> Vec<Tensor> {
        self.to_vec()
    }
}
impl JitArgs for &[&Tensor] {
    fn tensors(self) -> Vec<Tensor> {
        self.iter().map(|t| (*t).clone()).collect()
    }
}
impl<const N: usize> JitArgs for [&Tensor; N] {
    fn tensors(self) -> Vec<Tensor> {
        self.iter().map(|t| (*t).clone()).collect()
    }
}
impl<const N: usize> JitArgs for &[Tensor; N] {
    fn tensors(self) -> Vec<Tensor> {
        self.to_vec()
    }
}
impl<const N: usize> JitArgs for [Tensor; N] {
    fn tensors(self) -> Vec<Tensor> {
        self.into()
    }
}
impl<const N: usize> JitArgs for &[&Tensor; N] {
    fn tensors(self) -> Vec<Tensor> {
        self.iter().map(|t| (*t).clone()).collect()
    }
}
impl JitArgs for &Vec<Tensor> {
    fn tensors(self) -> Vec<Tensor> {
        self.clone()
    }
}
impl JitArgs for Vec<Tensor> {
    fn tensors(self) -> Vec<Tensor> {
        self
    }
}

/// An argument's template: what a compilation is specific to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Template {
    /// The element type.
    pub dtype: DType,
    /// The shape.
    pub shape: Vec<usize>,
    /// Where the argument lives.
    pub device: Device,
    /// The axes' names (a compilation names its results from them, as Nx's templates do).
    pub names: Vec<Option<String>>,
}

impl Template {
    /// The template of a tensor.
    pub fn of(t: &Tensor) -> Template {
        Template {
            dtype: t.dtype(),
            shape: t.shape().to_vec(),
            device: t.device(),
            names: if t.is_named() { t.names() } else { Vec::new() },
        }
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{} on {}",
            self.dtype,
            if self.names.is_empty() {
                crate::shape::fmt_shape(&self.shape)
            } else {
                crate::shape::names::fmt_named_shape(&self.shape, &self.names)
            },
            self.device
        )
    }
}

fn fmt_templates(templates: &[Template]) -> String {
    let parts: Vec<String> = templates.iter().map(|t| t.to_string()).collect();
    format!("({})", parts.join(", "))
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    templates: Vec<Template>,
    device: Device,
}

/// A compilation in the cache.
struct Entry {
    program: Arc<Program>,
    compile_time: Duration,
}

/// The traced function, its arguments as a slice.
pub(crate) type Traced<O> = Box<dyn Fn(&[Tensor]) -> Result<O> + Send + Sync>;

struct Inner<O> {
    /// What made it (`jit`, `grad`, `value_and_grad`), for its summary.
    name: &'static str,
    function: Traced<O>,
    arity: Option<usize>,
    cache: Mutex<HashMap<Key, Entry>>,
}

/// A compiled (jit) function: call it with [`Jit::call`]. Cloning shares the cache.
pub struct Jit<O = Tensor> {
    inner: Arc<Inner<O>>,
    device: Option<Device>,
    eager: bool,
}

impl<O> Clone for Jit<O> {
    fn clone(&self) -> Self {
        Jit {
            inner: Arc::clone(&self.inner),
            device: self.device,
            eager: self.eager,
        }
    }
}

/// Makes `f` a compiled function (nothing is traced until the first call).
pub fn jit<A, O: JitOutput>(f: impl JitFn<A, O>) -> Jit<O> {
    let arity = f.arity();
    Jit::traced("jit", arity, Box::new(move |args: &[Tensor]| f.apply(args)))
}

/// Compiles `f` for `args` and runs it once (EXLA's `jit_apply`); nothing is kept.
pub fn jit_apply<A, O: JitOutput>(f: impl JitFn<A, O>, args: impl JitArgs) -> Result<O> {
    jit(f).call(args)
}

/// True when calling `f` with `args` would run a cached compilation (EXLA's `jit_cached?`).
pub fn jit_cached<O: JitOutput>(f: &Jit<O>, args: impl JitArgs) -> Result<bool> {
    f.is_cached(args)
}

/// What a compiled function has been compiled for (for the display and `:vars`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compilation {
    /// The device it runs on.
    pub device: Device,
    /// The arguments' templates.
    pub templates: Vec<Template>,
    /// What the compiler made of the trace.
    pub stats: Stats,
    /// How long tracing and compiling took.
    pub compile_time: Duration,
}

impl<O: JitOutput> Jit<O> {
    /// A compiled function made by `name` from a function of a slice of tensors taking
    /// `arity` of them (any number when `None`).
    pub(crate) fn traced(name: &'static str, arity: Option<usize>, function: Traced<O>) -> Jit<O> {
        Jit {
            inner: Arc::new(Inner {
                name,
                function,
                arity,
                cache: Mutex::new(HashMap::new()),
            }),
            device: None,
            eager: false,
        }
    }

    /// The same function, always compiled for and run on `device` (the explicit option of
    /// the placement rule). Shares the cache.
    pub fn on(&self, device: Device) -> Jit<O> {
        Jit {
            inner: Arc::clone(&self.inner),
            device: Some(device),
            eager: self.eager,
        }
    }

    /// The same function evaluated op by op, as Nx's `Evaluator` runs a `defn` without a
    /// compiler: traced again on every call, nothing fused, nothing cached. What a jit call
    /// is measured against (and how a `grad` runs without compiling).
    pub fn eager(&self) -> Jit<O> {
        Jit {
            inner: Arc::clone(&self.inner),
            device: self.device,
            eager: true,
        }
    }

    /// True for a function made by [`Jit::eager`].
    pub fn is_eager(&self) -> bool {
        self.eager
    }

    /// The device given with [`Jit::on`], if any.
    pub fn pinned_device(&self) -> Option<Device> {
        self.device
    }

    fn key(&self, args: &[Tensor]) -> Result<Key> {
        if let Some(n) = self.inner.arity {
            if n != args.len() {
                return Err(arity_error(n, args.len()));
            }
        }
        let args_refs: Vec<&Tensor> = args.iter().collect();
        let device = resolve_compiled_device("jit", self.device, &args_refs)?;
        Ok(Key {
            templates: args.iter().map(Template::of).collect(),
            device,
        })
    }

    /// True when a call with `args` would run a cached compilation.
    pub fn is_cached(&self, args: impl JitArgs) -> Result<bool> {
        let key = self.key(&args.tensors())?;
        Ok(self.cache().contains_key(&key))
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.inner.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs the function on `args`: the cached compilation for their templates and device, or
    /// a new one (traced and compiled now, then cached).
    pub fn call(&self, args: impl JitArgs) -> Result<O> {
        let args = args.tensors();
        // Called from inside another jit function: its ops join that trace.
        if args.iter().any(is_placeholder) {
            return (self.inner.function)(&args);
        }
        let key = self.key(&args)?;
        let device = key.device;
        let placed = args
            .iter()
            .map(|a| a.to_device(device))
            .collect::<Result<Vec<_>>>()?;
        if self.eager {
            let program = self.compile(&key, &placed, false)?;
            return O::from_tensors(program.run(&placed)?);
        }
        let program = self.program(key, &placed)?;
        O::from_tensors(program.run(&placed)?)
    }

    fn program(&self, key: Key, placed: &[Tensor]) -> Result<Arc<Program>> {
        if let Some(entry) = self.cache().get(&key) {
            return Ok(Arc::clone(&entry.program));
        }
        let started = Instant::now();
        let fusion = key.device.client != Client::Binary;
        let program = Arc::new(self.compile(&key, placed, fusion)?);
        let compile_time = started.elapsed();
        // Two threads compiling the same key at once keep the first.
        let mut cache = self.cache();
        let entry = cache.entry(key).or_insert(Entry {
            program,
            compile_time,
        });
        Ok(Arc::clone(&entry.program))
    }

    fn compile(&self, key: &Key, placed: &[Tensor], fusion: bool) -> Result<Program> {
        let graph = Arc::new(Graph::default());
        let params = placed
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let param = trace::param(&graph, i, a.dtype(), a.shape(), key.device)?;
                Ok(param.named_like(a))
            })
            .collect::<Result<Vec<_>>>()?;
        let tracing = trace::enter(&graph);
        let result = (self.inner.function)(&params).map_err(|e| match e {
            e @ Error::Jit { .. } => e,
            e => Error::Jit {
                op_index: graph.ops_recorded() + 1,
                templates: fmt_templates(&key.templates),
                source: Box::new(e),
            },
        })?;
        let outputs = result
            .into_tensors()
            .iter()
            .map(|t| {
                Ok(Output {
                    slot: trace::node_of(&graph, t)?,
                    shape: t.shape().to_vec(),
                    device: t.device(),
                    names: t.names(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        drop(tracing);
        drop(params);
        Program::build(graph.take(), outputs, fusion)
    }

    /// Every compilation in the cache.
    pub fn compilations(&self) -> Vec<Compilation> {
        let mut list: Vec<Compilation> = self
            .cache()
            .iter()
            .map(|(k, e)| Compilation {
                device: k.device,
                templates: k.templates.clone(),
                stats: e.program.stats,
                compile_time: e.compile_time,
            })
            .collect();
        list.sort_by_key(|c| (c.device.to_string(), fmt_templates(&c.templates)));
        list
    }

    /// The devices it has been compiled for, each once, in order.
    pub fn compiled_for(&self) -> Vec<Device> {
        let mut devices: Vec<Device> = self.compilations().iter().map(|c| c.device).collect();
        devices.dedup();
        devices
    }

    /// Forgets every compilation.
    pub fn clear_cache(&self) {
        self.cache().clear();
    }

    /// One line: what it is and for which devices and templates it has been compiled.
    pub fn summary(&self) -> String {
        let args = match self.inner.arity {
            Some(n) => format!("{n} argument{}", if n == 1 { "" } else { "s" }),
            None => "any arguments".into(),
        };
        let compilations = self.compilations();
        let mut s = format!("#Function<{}, {args}", self.inner.name);
        if self.eager {
            s.push_str(", eager");
        }
        if let Some(d) = self.device {
            s.push_str(&format!(", on {d}"));
        }
        if compilations.is_empty() {
            s.push_str(", not compiled yet>");
            return s;
        }
        s.push_str(", compiled for ");
        let mut parts = Vec::new();
        for device in self.compiled_for() {
            let shapes: Vec<String> = compilations
                .iter()
                .filter(|c| c.device == device)
                .map(|c| {
                    let t: Vec<String> = c
                        .templates
                        .iter()
                        .map(|t| graph::describe(t.dtype, &t.shape))
                        .collect();
                    format!("({})", t.join(", "))
                })
                .collect();
            parts.push(format!("{device} {}", shapes.join(" ")));
        }
        s.push_str(&parts.join("; "));
        s.push('>');
        s
    }
}

impl<O: JitOutput> fmt::Debug for Jit<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

impl<O: JitOutput> fmt::Display for Jit<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

/// True for a tensor that is a placeholder of a trace in progress.
pub fn is_placeholder(t: &Tensor) -> bool {
    matches!(t.value(), Ok(crate::tensor::Value::Placeholder(_)))
}

/// Runs one fused region on `device` over `inputs` (one per [`crate::ir::fused::Fused`]
/// input, already there): how the suites check each backend's fused path against binary's
/// step-by-step reference, with regions written out by hand.
#[cfg(any(test, feature = "test-hooks"))]
pub fn run_fused(
    fused: &crate::ir::fused::Fused,
    inputs: &[Tensor],
    device: Device,
) -> Result<Tensor> {
    fused.validate()?;
    let shape: Vec<usize> = match &fused.reduce {
        None => fused.shape.clone(),
        Some((_, axes)) => crate::shape::without_axes(&fused.shape, axes),
    };
    let held = inputs
        .iter()
        .map(|t| t.to_device(device)?.memory())
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&crate::memory::Memory> = held.iter().map(|m| &**m).collect();
    let op = crate::ir::Op::Fused(Arc::new(fused.clone()));
    let out = crate::memory::dispatch(device, &op, &refs)?;
    Tensor::from_memory(out, shape, device)
}
