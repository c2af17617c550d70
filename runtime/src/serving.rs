//! `Serving`: runs a user function over batches of inputs on one device. Unless given a device
//! it runs on the session default *as it is when `run` is called* — the Nx bug this project
//! exists not to have is a serving that ran on the CPU although CUDA was the default.
//!
//! The function runs through [`crate::jit`]: compiled for the device of each run (the seed's
//! scenario with a compiler in the path), once per batch shape, so a switch of the default
//! between two runs compiles for the new device and the result's placement shows it.

use crate::device::Device;
use crate::error::{Error, Result};
use crate::jit::{arity, jit, Jit, JitFn};
use crate::ops::Leftover;
use crate::session::resolve_compiled_device;
use crate::tensor::Tensor;

/// A batched computation bound to a placement.
pub struct Serving {
    function: Jit<Tensor>,
    batch_size: usize,
    device: Option<Device>,
}

impl Serving {
    /// A serving of `function` (a closure `|batch: &Tensor| ...`, or a [`Jit`]) with batches
    /// of 32 on the session default device.
    pub fn new(function: impl JitFn<arity::One, Tensor>) -> Self {
        Serving {
            function: jit(function),
            batch_size: 32,
            device: None,
        }
    }

    /// A serving of an existing compiled function (sharing its cache).
    pub fn of(function: &Jit<Tensor>) -> Self {
        Serving {
            function: function.clone(),
            batch_size: 32,
            device: None,
        }
    }

    /// The devices the function has been compiled for so far.
    pub fn compiled_for(&self) -> Vec<Device> {
        self.function.compiled_for()
    }

    /// The compiled function.
    pub fn function(&self) -> &Jit<Tensor> {
        &self.function
    }

    /// Sets the batch size.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Pins the serving to `device` instead of the session default.
    pub fn on(mut self, device: Device) -> Self {
        self.device = Some(device);
        self
    }

    /// Where the next `run` will compute: the pinned device, else the session default now.
    pub fn device(&self) -> Result<Device> {
        resolve_compiled_device("serving", self.device, &[])
    }

    /// Splits `input` along axis 0 into batches, copies each to the serving's device (the
    /// serving owns its placement, as an Nx serving does), applies the function and joins the
    /// results, dropping the padding of the last batch.
    ///
    /// An input of zero rows gives the function's result on that empty batch (zero rows), so
    /// a serving over nothing returns an empty result of the right shape and dtype.
    pub fn run(&self, input: &Tensor) -> Result<Tensor> {
        let device = self.device()?;
        let total = input.shape().first().copied().unwrap_or(0);
        if total == 0 && input.rank() > 0 {
            let placed = input.backend_copy(device)?;
            let out = self.apply(device, &placed)?;
            if out.rank() == 0 || out.shape()[0] != 0 {
                return Err(Error::Serving(format!(
                    "the function must return one row per input row (0 rows), returned {}",
                    out.signature()
                )));
            }
            return Ok(out);
        }
        let mut outputs = Vec::new();
        for batch in input.to_batched(self.batch_size, Leftover::Repeat)? {
            let placed = if batch.device() == device {
                batch
            } else {
                batch.backend_copy(device)?
            };
            let out = self.apply(device, &placed)?;
            if out.rank() == 0 || out.shape()[0] != self.batch_size {
                return Err(Error::Serving(format!(
                    "the function must return one row per input row ({} rows), returned {}",
                    self.batch_size,
                    out.signature()
                )));
            }
            outputs.push(out);
        }
        let joined = Tensor::concatenate(&outputs, 0)?;
        let mut lengths = joined.shape().to_vec();
        lengths[0] = total;
        joined.slice(&vec![0; joined.rank()], &lengths, None)
    }

    fn apply(&self, device: Device, batch: &Tensor) -> Result<Tensor> {
        self.function
            .on(device)
            .call(batch)
            .map_err(|e| Error::Serving(e.to_string()))
    }
}
