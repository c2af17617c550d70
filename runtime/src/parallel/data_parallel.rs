//! Data parallelism, as PyTorch's DistributedDataParallel and Nx's sharded jit: a compiled
//! function replicated on several devices, the batch split along its first axis between
//! them, and the replicas' results combined: all-reduced (every device ends with the same
//! values, e.g. the same parameters after a training step) or joined back into one batch.
//!
//! ```
//! use tensorbook::{data_parallel, jit, on, set_host_device_count, DType, Device, Tensor};
//! set_host_device_count(2)?;
//! // The mean of a batch's rows, computed as two halves on two devices.
//! let mean_rows = jit(|x: &Tensor| x.mean([0]));
//! let parallel = data_parallel(&mean_rows, &[Device::host(0), Device::host(1)])?.split(&[0]);
//! let x = on(Device::host(0)).iota(DType::F64, &[4, 2], None)?;
//! let mean = parallel.call(&x)?;
//! assert_eq!(mean.to_vec::<f64>()?, mean_rows.call(&x)?.to_vec::<f64>()?);
//! # Ok::<(), tensorbook::Error>(())
//! ```
//!
//! A `Mean` weighs each replica by its rows, so a function that averages over its batch (a
//! loss, its gradient, an SGD step built on them) gives the whole batch's value even when the
//! batch does not split evenly. Arguments that are not split are copied to every device once
//! per call, except values this function all-reduced on its previous call: those are used
//! where they already are, so parameters fed back step after step never move.

use std::sync::Mutex;

use super::all_reduce::{all_reduce, Reduction};
use super::{check_devices, on_each};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::jit::{Jit, JitArgs, JitOutput};
use crate::tensor::Tensor;

/// How one output of a data-parallel function combines the replicas' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combine {
    /// The mean over the batch: each replica weighed by its rows, all-reduced (the default).
    Mean,
    /// The sum over replicas, all-reduced.
    Sum,
    /// The replicas' values joined along axis 0 on the first device, in batch order (for
    /// per-example outputs such as predictions).
    Concat,
}

/// A compiled function replicated over devices: see the module documentation.
pub struct DataParallel<O: JitOutput> {
    function: Jit<O>,
    devices: Vec<Device>,
    split: Vec<usize>,
    combine: Vec<Combine>,
    /// The previous call's all-reduced outputs, each on every device.
    replicas: Mutex<Vec<Vec<Tensor>>>,
}

/// `function` replicated over `devices` (in order; results are returned on the first). Say
/// which arguments hold the batch with [`DataParallel::split`].
pub fn data_parallel<O: JitOutput>(
    function: &Jit<O>,
    devices: &[Device],
) -> Result<DataParallel<O>> {
    check_devices(devices)?;
    Ok(DataParallel {
        function: function.clone(),
        devices: devices.to_vec(),
        split: Vec::new(),
        combine: Vec::new(),
        replicas: Mutex::new(Vec::new()),
    })
}

impl<O: JitOutput> DataParallel<O> {
    /// The arguments (by position) split along their first axis between the devices; the
    /// others are given whole to every replica.
    pub fn split(mut self, arguments: &[usize]) -> Self {
        self.split = arguments.to_vec();
        self
    }

    /// How each output is combined, in output order (every output is a [`Combine::Mean`]
    /// unless set).
    pub fn combine(mut self, outputs: &[Combine]) -> Self {
        self.combine = outputs.to_vec();
        self
    }

    /// The devices, in order.
    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The replicated function.
    pub fn function(&self) -> &Jit<O> {
        &self.function
    }

    /// The previous call's all-reduced outputs on every device: one list per device, in
    /// device order, each with that device's copy of every all-reduced output.
    pub fn replicas(&self) -> Vec<(Device, Vec<Tensor>)> {
        let kept = self.kept();
        self.devices
            .iter()
            .enumerate()
            .map(|(i, &d)| (d, kept.iter().filter_map(|r| r.get(i).cloned()).collect()))
            .collect()
    }

    /// One line: the devices, the split arguments and the compiled function.
    pub fn summary(&self) -> String {
        let devices: Vec<String> = self.devices.iter().map(Device::to_string).collect();
        format!(
            "#DataParallel<over [{}], split {:?}, {}>",
            devices.join(", "),
            self.split,
            self.function.summary()
        )
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Vec<Tensor>>> {
        self.replicas.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs one replica per device on its share of the batch, all at once, and combines the
    /// outputs (each on the first device). A replica that fails fails the call with an error
    /// naming its device; the others' work is dropped and every device stays usable.
    pub fn call(&self, args: impl JitArgs) -> Result<O> {
        let args = args.tensors();
        let shards = self.shards(&args)?;
        let mirrors = self.mirrors(&args);
        let n = self.devices.len();
        let results = on_each(&self.devices, |i, device| {
            let (start, rows) = shards[i];
            let placed = args
                .iter()
                .enumerate()
                .map(|(j, a)| {
                    if self.split.contains(&j) {
                        let mut begin = vec![0; a.rank()];
                        begin[0] = start;
                        let mut lengths = a.shape().to_vec();
                        lengths[0] = rows;
                        a.slice(&begin, &lengths, None)?.to_device(device)
                    } else if let Some(copies) = &mirrors[j] {
                        Ok(copies[i].clone())
                    } else {
                        a.to_device(device)
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(self.function.on(device).call(placed)?.into_tensors())
        });
        let mut outputs = Vec::with_capacity(n);
        for (i, result) in results.into_iter().enumerate() {
            outputs.push(result.map_err(|e| Error::Partition {
                what: format!("replica {} of {n}", i + 1),
                device: self.devices[i],
                source: Box::new(e),
            })?);
        }
        let total: usize = shards.iter().map(|s| s.1).sum();
        let count = outputs.first().map_or(0, Vec::len);
        if !self.combine.is_empty() && self.combine.len() != count {
            return Err(Error::InvalidArgument {
                op: "data_parallel",
                message: format!(
                    "{} ways to combine outputs were given for a function of {count} outputs",
                    self.combine.len()
                ),
            });
        }
        let mut results = Vec::with_capacity(count);
        let mut kept = Vec::new();
        for k in 0..count {
            let parts: Vec<Tensor> = outputs.iter().map(|o| o[k].clone()).collect();
            let how = self.combine.get(k).copied().unwrap_or(Combine::Mean);
            if how == Combine::Mean && !parts[0].dtype().is_float() {
                return Err(output_error(
                    k,
                    Error::UnsupportedDType {
                        op: "a mean over replicas (use Combine::Sum or Combine::Concat)",
                        dtype: parts[0].dtype(),
                    },
                ));
            }
            let per_device = match how {
                Combine::Concat => {
                    results.push(self.concat(&parts, k)?);
                    continue;
                }
                Combine::Sum => all_reduce(&parts, Reduction::Sum)?,
                Combine::Mean if shards.iter().all(|s| s.1 * n == total) => {
                    all_reduce(&parts, Reduction::Mean).map_err(|e| output_error(k, e))?
                }
                Combine::Mean => {
                    let weighted = parts
                        .iter()
                        .zip(&shards)
                        .map(|(p, s)| p.multiply(s.1 as f64 / total as f64))
                        .collect::<Result<Vec<_>>>()?;
                    all_reduce(&weighted, Reduction::Sum)?
                }
            };
            results.push(per_device[0].clone());
            kept.push(per_device);
        }
        *self.kept() = kept;
        O::from_tensors(results)
    }

    /// `(first row, rows)` of each device's share of the batch: as equal as can be, the
    /// first devices taking one row more when it does not divide.
    fn shards(&self, args: &[Tensor]) -> Result<Vec<(usize, usize)>> {
        let n = self.devices.len();
        if self.split.is_empty() {
            return Err(Error::InvalidArgument {
                op: "data_parallel",
                message: "say which arguments hold the batch, e.g. `.split(&[2, 3])`".into(),
            });
        }
        let mut rows: Option<(usize, &Tensor)> = None;
        for &j in &self.split {
            let a = args.get(j).ok_or_else(|| Error::InvalidArgument {
                op: "data_parallel",
                message: format!(
                    "argument {j} is to be split, but the call has {} arguments",
                    args.len()
                ),
            })?;
            let Some(&first) = a.shape().first() else {
                return Err(Error::InvalidArgument {
                    op: "data_parallel",
                    message: format!("argument {j} ({}) has no axis to split", a.signature()),
                });
            };
            match rows {
                Some((r, other)) if r != first => {
                    return Err(Error::InvalidArgument {
                        op: "data_parallel",
                        message: format!(
                            "the split arguments disagree on the batch: {} and {}",
                            other.signature(),
                            a.signature()
                        ),
                    })
                }
                _ => rows = Some((first, a)),
            }
        }
        let total = rows.map_or(0, |r| r.0);
        if total < n {
            return Err(Error::InvalidArgument {
                op: "data_parallel",
                message: format!(
                    "a batch of {total} rows cannot be split over {n} devices: each needs a row"
                ),
            });
        }
        let (base, extra) = (total / n, total % n);
        let mut start = 0;
        Ok((0..n)
            .map(|i| {
                let rows = base + usize::from(i < extra);
                let shard = (start, rows);
                start += rows;
                shard
            })
            .collect())
    }

    /// For each argument that is the first device's copy of an output all-reduced by the
    /// previous call, every device's copy.
    fn mirrors(&self, args: &[Tensor]) -> Vec<Option<Vec<Tensor>>> {
        let kept = self.kept();
        args.iter()
            .enumerate()
            .map(|(j, a)| {
                if self.split.contains(&j) {
                    return None;
                }
                kept.iter()
                    .find(|copies| {
                        copies.first().is_some_and(|c| c.same_value(a))
                            && copies.iter().all(|c| c.value().is_ok())
                    })
                    .cloned()
            })
            .collect()
    }

    /// The replicas' values of output `k` joined along axis 0 on the first device.
    fn concat(&self, parts: &[Tensor], k: usize) -> Result<Tensor> {
        let home = self.devices[0];
        let moved = parts
            .iter()
            .map(|p| p.to_device(home))
            .collect::<Result<Vec<_>>>()?;
        Tensor::concatenate(&moved, 0).map_err(|e| output_error(k, e))
    }
}

impl<O: JitOutput> std::fmt::Debug for DataParallel<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}

fn output_error(k: usize, e: Error) -> Error {
    Error::InvalidArgument {
        op: "data_parallel",
        message: format!("output {k} could not be combined: {e}"),
    }
}
