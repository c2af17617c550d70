//! `Stream`: a compiled function that stays on its device and consumes chunks, as
//! `EXLA.stream` and `Nx.Stream`: `send(chunk)` runs the step on the chunk and the state,
//! `recv()` takes the step's output, `done()` ends the stream and returns the final state.
//! The state never leaves the device between chunks.
//!
//! Backpressure: a `send` waits while the previous output has not been received. Waiting only
//! makes sense when another handle (a clone on another thread) can receive it; with no other
//! handle the wait could never end, so it is an error instead, as is every other misuse: a
//! chunk that does not match the template, `send` after `done`, `recv` with nothing sent,
//! `done` with an output not received. Waits end on an interrupt.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::{arity, jit, Jit, JitFn, Template};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::session::resolve_compiled_device;
use crate::tensor::Tensor;

/// The step of a stream: a closure `|chunk: &Tensor, state: &Tensor| -> Result<(output, new
/// state)>`, or a [`Jit`] of one (given by reference, it shares its cache with the stream).
pub trait StreamStep<A> {
    /// The step as a compiled function.
    fn into_jit(self) -> Jit<(Tensor, Tensor)>;
}

impl<A, F: JitFn<A, (Tensor, Tensor)>> StreamStep<A> for F {
    fn into_jit(self) -> Jit<(Tensor, Tensor)> {
        jit(self)
    }
}

impl StreamStep<arity::Compiled> for &Jit<(Tensor, Tensor)> {
    fn into_jit(self) -> Jit<(Tensor, Tensor)> {
        self.clone()
    }
}

struct State {
    state: Option<Tensor>,
    pending: Option<Tensor>,
    done: bool,
    chunks: u64,
}

struct Inner {
    step: Jit<(Tensor, Tensor)>,
    template: Template,
    device: Device,
    state: Mutex<State>,
    changed: Condvar,
}

/// A running stream; clones are handles to the same stream (one thread may send while
/// another receives).
#[derive(Clone)]
pub struct Stream {
    inner: Arc<Inner>,
}

/// Starts a stream of `step` over chunks like `chunk_template` (dtype and shape; its values
/// are not used), with `initial_state` moved to the stream's device. The device follows the
/// rule of every compiled function (`resolve_compiled_device`): template and state that are
/// binary or rank 0 yield to the session default, as `jit`'s arguments do. The step is
/// compiled now.
pub fn stream<A>(
    step: impl StreamStep<A>,
    chunk_template: &Tensor,
    initial_state: &Tensor,
) -> Result<Stream> {
    let step = step.into_jit();
    let (device, chunk, state) = placed(&step, chunk_template, initial_state)?;
    let template = Template::of(&chunk);
    // Compiled at the start, as EXLA does; the outputs are thrown away.
    let step = step.on(device);
    step.call((&chunk, &state))?;
    Ok(Stream {
        inner: Arc::new(Inner {
            step,
            template,
            device,
            state: Mutex::new(State {
                state: Some(state),
                pending: None,
                done: false,
                chunks: 0,
            }),
            changed: Condvar::new(),
        }),
    })
}

/// True when a stream of `step` with this template and state would find its compilation in
/// `step`'s cache.
pub fn stream_cached(
    step: &Jit<(Tensor, Tensor)>,
    chunk_template: &Tensor,
    initial_state: &Tensor,
) -> Result<bool> {
    let (device, chunk, state) = placed(step, chunk_template, initial_state)?;
    step.on(device).is_cached((&chunk, &state))
}

/// The stream's device (the rule of every compiled function over the template and the
/// state: binary and rank-0 ones yield to the session default) and both moved there.
fn placed(
    step: &Jit<(Tensor, Tensor)>,
    chunk_template: &Tensor,
    initial_state: &Tensor,
) -> Result<(Device, Tensor, Tensor)> {
    let device = resolve_compiled_device(
        "stream",
        step.pinned_device(),
        &[chunk_template, initial_state],
    )?;
    Ok((
        device,
        chunk_template.to_device(device)?,
        initial_state.to_device(device)?,
    ))
}

impl Stream {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// True when another handle of this stream exists (someone who could receive or send).
    fn shared(&self) -> bool {
        Arc::strong_count(&self.inner) > 1
    }

    /// Waits on the stream's condition, for at most a moment, stopping on an interrupt.
    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> Result<MutexGuard<'a, State>> {
        crate::interrupt::check()?;
        let (guard, _) = self
            .inner
            .changed
            .wait_timeout(guard, Duration::from_millis(50))
            .unwrap_or_else(|e| e.into_inner());
        Ok(guard)
    }

    /// The device the stream runs on.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// How many chunks have been sent.
    pub fn chunks_sent(&self) -> u64 {
        self.lock().chunks
    }

    /// Runs the step on `chunk` and the state. Waits while the previous output has not been
    /// received (an error when no other handle could receive it).
    pub fn send(&self, chunk: &Tensor) -> Result<()> {
        let template = &self.inner.template;
        if chunk.dtype() != template.dtype || chunk.shape() != template.shape.as_slice() {
            return Err(Error::Stream(format!(
                "the chunk {} does not match the stream's template {}",
                chunk.signature(),
                template
            )));
        }
        let mut guard = self.lock();
        loop {
            if guard.done {
                return Err(Error::Stream("send after done".into()));
            }
            if guard.pending.is_none() {
                break;
            }
            if !self.shared() {
                return Err(Error::Stream(
                    "the previous output has not been received: call recv() first (send waits \
                     only while another handle of the stream can receive)"
                        .into(),
                ));
            }
            guard = self.wait(guard)?;
        }
        let state = guard
            .state
            .clone()
            .ok_or(Error::Stream("no state".into()))?;
        let placed = chunk.to_device(self.inner.device)?;
        let (out, next) = self.inner.step.call((&placed, &state))?;
        guard.state = Some(next);
        guard.pending = Some(out);
        guard.chunks += 1;
        self.inner.changed.notify_all();
        Ok(())
    }

    /// The output of the last chunk sent. With nothing sent, an error, unless another handle
    /// could still send (then it waits).
    pub fn recv(&self) -> Result<Tensor> {
        let mut guard = self.lock();
        loop {
            if let Some(out) = guard.pending.take() {
                self.inner.changed.notify_all();
                return Ok(out);
            }
            if guard.done {
                return Err(Error::Stream(
                    "recv after done: nothing left to receive".into(),
                ));
            }
            if !self.shared() {
                return Err(Error::Stream(
                    "recv with nothing sent: send a chunk first".into(),
                ));
            }
            guard = self.wait(guard)?;
        }
    }

    /// Ends the stream and returns the final state (still on the stream's device). An error
    /// while an output has not been received, or when the stream is already done.
    pub fn done(&self) -> Result<Tensor> {
        let mut guard = self.lock();
        if guard.done {
            return Err(Error::Stream("done twice".into()));
        }
        if guard.pending.is_some() {
            return Err(Error::Stream(
                "an output has not been received: call recv() before done()".into(),
            ));
        }
        guard.done = true;
        self.inner.changed.notify_all();
        guard.state.take().ok_or(Error::Stream("no state".into()))
    }

    /// One line: device, template, chunks sent, and whether it is done.
    pub fn summary(&self) -> String {
        let g = self.lock();
        format!(
            "#Stream<on {}, chunks {}, {} sent{}>",
            self.inner.device,
            self.inner.template,
            g.chunks,
            if g.done { ", done" } else { "" }
        )
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}
