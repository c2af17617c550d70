//! The partitioned serving's benchmark: notebook 05's network predicting a set of images in
//! small batches, served by one device and then by one partition per device, in the same run,
//! as rows per second. Small batches are where partitions pay on a CPU: a batch of 64 is too
//! little work to share out among cores, so one device keeps one core busy while partitions
//! keep one each.

use super::{measure, Progress, Report, Row, Runs};
use crate::client::client_info;
use crate::create::on;
use crate::device::{Client, Device};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::jit::{jit, Jit};
use crate::serving::Serving;
use crate::settings::{host_device_count, set_host_device_count, set_sim_device_count};
use crate::tensor::Tensor;

use super::train::{init_params, LAYERS};

/// What to run.
#[derive(Clone, Debug)]
pub struct ServingBench {
    /// The partitions' devices; the first also serves alone.
    pub devices: Vec<Device>,
    /// Images served per run.
    pub rows: usize,
    /// Images per batch.
    pub batch: usize,
    /// Warm-up and timed runs.
    pub runs: Runs,
}

impl Default for ServingBench {
    fn default() -> ServingBench {
        ServingBench {
            devices: vec![Device::host(0), Device::host(1)],
            rows: 10_000,
            batch: 64,
            runs: Runs {
                warmup: 1,
                timed: 7,
            },
        }
    }
}

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct ServingFigures {
    /// The two rows (one device, partitioned) with notes.
    pub report: Report,
    /// Images per second served by the first device alone.
    pub one_device: f64,
    /// Images per second served by the partitions.
    pub partitioned: f64,
}

impl ServingFigures {
    /// Partitioned throughput over one device's.
    pub fn speedup(&self) -> f64 {
        self.partitioned / self.one_device.max(1e-12)
    }
}

/// The network's logits for a batch: `relu(x·w1 + b1)·w2 + b2` with seeded parameters held as
/// constants (binary tensors, which follow the device each partition compiles for).
pub fn predict() -> Result<Jit<Tensor>> {
    let params = init_params(Device::BINARY, 1)?;
    Ok(jit(move |x: &Tensor| {
        let [w1, b1, w2, b2] = params.as_slice() else {
            return Err(Error::InvalidArgument {
                op: "bench serving",
                message: "internal: four parameters expected".into(),
            });
        };
        x.dot(w1)?.add(b1)?.max(0.0)?.dot(w2)?.add(b2)
    }))
}

/// Makes the virtual devices the bench names exist (`host:1` needs two host devices, `sim:3`
/// four simulated ones): they are a setting, not hardware.
fn enable(devices: &[Device]) -> Result<()> {
    for d in devices {
        match d.client {
            Client::Host if d.id >= host_device_count() => set_host_device_count(d.id + 1)?,
            Client::Sim if d.id >= crate::settings::sim_device_count() => {
                set_sim_device_count(d.id + 1)
            }
            _ => {}
        }
    }
    Ok(())
}

/// Runs the benchmark.
pub fn run(bench: &ServingBench, progress: &mut dyn Progress) -> Result<ServingFigures> {
    enable(&bench.devices)?;
    let first = *bench
        .devices
        .first()
        .ok_or_else(|| Error::InvalidArgument {
            op: "bench serving",
            message: "no devices given".into(),
        })?;
    let names: Vec<String> = bench.devices.iter().map(Device::to_string).collect();
    let label = |how: &str| {
        format!(
            "serving 784-50-10 {} images, batches of {} {how}",
            bench.rows, bench.batch
        )
    };
    for d in &bench.devices {
        let info = client_info(d.client);
        if !info.available {
            let reason = info.reason.unwrap_or_else(|| "unavailable".into());
            return Ok(ServingFigures {
                report: Report {
                    title: "serving: one device against partitions".into(),
                    rows: vec![Row::Skipped {
                        label: label(&format!("over {}", names.join(","))),
                        reason,
                    }],
                    notes: Vec::new(),
                },
                one_device: 0.0,
                partitioned: 0.0,
            });
        }
    }
    let images = on(first).random_uniform(5, DType::F32, &[bench.rows, LAYERS[0]], 0.0, 1.0)?;
    let function = predict()?;
    let alone = Serving::of(&function).on(first).batch_size(bench.batch);
    let spread = Serving::of(&function)
        .on(first)
        .partitioned_over(&bench.devices)
        .batch_size(bench.batch);
    let one = measure(&label("on one device"), bench.runs, progress, || {
        alone.run(&images)
    })?;
    let many = measure(
        &label(&format!("partitioned over {}", names.join(","))),
        bench.runs,
        progress,
        || spread.run(&images),
    )?;
    let (a, b) = (alone.run(&images)?, spread.run(&images)?);
    let differ = a.subtract(&b)?.abs()?.reduce_max(..)?.to_scalar::<f32>()?;
    let per_second = |m: &super::Measurement| bench.rows as f64 / m.median().as_secs_f64();
    let (one_device, partitioned) = (per_second(&one), per_second(&many));
    let counts: Vec<String> = spread
        .batches_run()
        .iter()
        .map(|(d, n)| format!("{d} {n}"))
        .collect();
    let notes = vec![
        format!(
            "partitioned {:.2}x one device: {:.0} against {:.0} images/s (medians)",
            partitioned / one_device.max(1e-12),
            partitioned,
            one_device
        ),
        format!(
            "batches run per device (warm-ups included): {}",
            counts.join(", ")
        ),
        format!("largest difference between the two results: {differ:e}"),
    ];
    progress.finish();
    Ok(ServingFigures {
        report: Report {
            title: "serving: one device against partitions".into(),
            rows: vec![Row::Measured(one), Row::Measured(many)],
            notes,
        },
        one_device,
        partitioned,
    })
}
