//! `Serving`: runs a user function over batches of inputs on one device. Unless given a device
//! it runs on the session default *as it is when `run` is called* — the Nx bug this project
//! exists not to have is a serving that ran on the CPU although CUDA was the default.
//!
//! The function runs through [`crate::jit`]: compiled for the device of each run (the seed's
//! scenario with a compiler in the path), once per batch shape, so a switch of the default
//! between two runs compiles for the new device and the result's placement shows it.
//!
//! With partitions (EXLA's `partitions: true`) the batches are spread over several devices,
//! one partition per device, running at once: batch `i` goes to partition `i mod n`, each
//! partition's function is compiled for its device, and the results are gathered in batch
//! order on the serving's device (the pinned one, else the session default), where a
//! one-device serving would have left them. [`Serving::run_batches`] leaves each batch's
//! result where it was computed instead, as EXLA does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::device::{Client, Device};
use crate::error::{Error, Result};
use crate::jit::{arity, jit, Jit, JitFn};
use crate::ops::Leftover;
use crate::parallel::{on_each, Partitions};
use crate::session::resolve_compiled_device;
use crate::tensor::Tensor;

/// A batched computation bound to a placement.
pub struct Serving {
    function: Jit<Tensor>,
    batch_size: usize,
    device: Option<Device>,
    partitions: Option<Partitions>,
    /// Batches run on each device so far, over every run, by (client, id).
    batches_run: Arc<Mutex<BTreeMap<(Client, usize), usize>>>,
}

impl Serving {
    /// A serving of `function` (a closure `|batch: &Tensor| ...`, or a [`Jit`]) with batches
    /// of 32 on the session default device.
    pub fn new(function: impl JitFn<arity::One, Tensor>) -> Self {
        Serving::of(&jit(function))
    }

    /// A serving of an existing compiled function (sharing its cache).
    pub fn of(function: &Jit<Tensor>) -> Self {
        Serving {
            function: function.clone(),
            batch_size: 32,
            device: None,
            partitions: None,
            batches_run: Arc::default(),
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

    /// Pins the serving to `device` instead of the session default. With partitions, this
    /// picks the client (and the device the results are gathered on).
    pub fn on(mut self, device: Device) -> Self {
        self.device = Some(device);
        self
    }

    /// One partition per device of the serving's client (EXLA's `partitions: true`): every
    /// GPU of a cuda default, every `sim` or `host` device. `false` goes back to one device.
    pub fn partitions(mut self, on: bool) -> Self {
        self.partitions = on.then_some(Partitions::AllOfClient);
        self
    }

    /// One partition on each of `devices`, in this order (they may belong to any clients).
    pub fn partitioned_over(mut self, devices: &[Device]) -> Self {
        self.partitions = Some(Partitions::Devices(devices.to_vec()));
        self
    }

    /// Where the next `run` gathers its result (and, without partitions, computes): the
    /// pinned device, else the session default now.
    pub fn device(&self) -> Result<Device> {
        resolve_compiled_device("serving", self.device, &[])
    }

    /// The devices the next `run` computes on, one partition each.
    pub fn partition_devices(&self) -> Result<Vec<Device>> {
        let device = self.device()?;
        match &self.partitions {
            None => Ok(vec![device]),
            Some(p) => p.resolve(device),
        }
    }

    /// One line: batch size, placement or partitions, and the compiled function.
    pub fn summary(&self) -> String {
        let placement = match (&self.partitions, self.device) {
            (Some(p), _) => format!("partitioned over {p}"),
            (None, Some(d)) => format!("on {d}"),
            (None, None) => "on the session default".into(),
        };
        format!(
            "#Serving<batches of {}, {placement}, {}>",
            self.batch_size,
            self.function.summary()
        )
    }

    /// How many batches each device has run so far (over every run), in device order.
    pub fn batches_run(&self) -> Vec<(Device, usize)> {
        self.batches_run
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(&(client, id), &n)| (Device { client, id }, n))
            .collect()
    }

    /// Splits `input` along axis 0 into batches, copies each to the device that runs it (the
    /// serving owns its placement, as an Nx serving does), applies the function and joins the
    /// results in order on [`Serving::device`], dropping the padding of the last batch.
    ///
    /// An input of zero rows gives the function's result on that empty batch (zero rows), so
    /// a serving over nothing returns an empty result of the right shape and dtype.
    pub fn run(&self, input: &Tensor) -> Result<Tensor> {
        let home = self.device()?;
        let outputs = self.run_batches(input)?;
        if let [only] = outputs.as_slice() {
            return only.to_device(home);
        }
        let moved = outputs
            .iter()
            .map(|t| t.to_device(home))
            .collect::<Result<Vec<_>>>()?;
        Tensor::concatenate(&moved, 0)
    }

    /// As [`Serving::run`], but each batch's result is left on the device that computed it
    /// (EXLA's way), in batch order, the last one without its padding.
    pub fn run_batches(&self, input: &Tensor) -> Result<Vec<Tensor>> {
        let devices = self.partition_devices()?;
        let total = input.shape().first().copied().unwrap_or(0);
        if total == 0 && input.rank() > 0 {
            let device = devices[0];
            let placed = input.backend_copy(device)?;
            let out = self.apply(device, &placed)?;
            if out.rank() == 0 || out.shape()[0] != 0 {
                return Err(rows_error(0, &out));
            }
            return Ok(vec![out]);
        }
        if self.batch_size == 0 || input.rank() == 0 {
            // to_batched's error, which names both.
            input.to_batched(self.batch_size, Leftover::Repeat)?;
        }
        let count = total.div_ceil(self.batch_size);
        let partitioned = self.partitions.is_some();
        let n = devices.len();
        // Each partition cuts its own batches, so that no device waits for the others' slices.
        let per_device = on_each(&devices, |p, device| {
            let mut done = Vec::new();
            for i in (p..count).step_by(n) {
                let out = input
                    .batch_from(i * self.batch_size, self.batch_size)
                    .and_then(|batch| self.run_batch(device, &batch))
                    .map_err(|e| {
                        if partitioned {
                            Error::Partition {
                                what: format!("batch {} of {count}", i + 1),
                                device,
                                source: Box::new(e),
                            }
                        } else {
                            e
                        }
                    })?;
                done.push((i, out));
            }
            Ok(done)
        });
        let mut slots: Vec<Option<Tensor>> = vec![None; count];
        let mut ran = Vec::with_capacity(n);
        for (device, result) in devices.iter().zip(per_device) {
            let done = result?;
            ran.push((*device, done.len()));
            for (i, out) in done {
                slots[i] = Some(out);
            }
        }
        self.count(&ran);
        let mut outputs = slots
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::Serving("internal: a batch was not run".into()))?;
        let kept = total - (count - 1) * self.batch_size;
        if let Some(last) = outputs.last_mut() {
            if kept < self.batch_size {
                let mut lengths = last.shape().to_vec();
                lengths[0] = kept;
                *last = last.slice(&vec![0; last.rank()], &lengths, None)?;
            }
        }
        Ok(outputs)
    }

    fn run_batch(&self, device: Device, batch: &Tensor) -> Result<Tensor> {
        let placed = if batch.device() == device {
            batch.clone()
        } else {
            batch.backend_copy(device)?
        };
        let out = self.apply(device, &placed)?;
        if out.rank() == 0 || out.shape()[0] != self.batch_size {
            return Err(rows_error(self.batch_size, &out));
        }
        Ok(out)
    }

    fn count(&self, ran: &[(Device, usize)]) {
        let mut counts = self.batches_run.lock().unwrap_or_else(|e| e.into_inner());
        for &(device, n) in ran {
            *counts.entry((device.client, device.id)).or_insert(0) += n;
        }
    }

    fn apply(&self, device: Device, batch: &Tensor) -> Result<Tensor> {
        self.function
            .on(device)
            .call(batch)
            .map_err(|e| Error::Serving(e.to_string()))
    }
}

fn rows_error(rows: usize, out: &Tensor) -> Error {
    Error::Serving(format!(
        "the function must return one row per input row ({rows} rows), returned {}",
        out.signature()
    ))
}

impl std::fmt::Debug for Serving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}
