//! `tensorbook bench`: the runtime's benchmarks in a terminal, with a progress bar.

use tensorbook::bench::{self, MatmulBench, Progress, Runs};
use tensorbook::DType;

use crate::BenchWhat;

/// A terminal progress bar per benchmark (drawn on stderr, so `--json` stays clean).
struct Bar {
    bar: Option<(String, indicatif::ProgressBar)>,
}

impl Progress for Bar {
    fn update(&mut self, label: &str, done: usize, total: usize) {
        let fresh = self.bar.as_ref().is_none_or(|(l, _)| l != label);
        if fresh {
            if let Some((_, old)) = self.bar.take() {
                old.finish();
            }
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{msg:40} [{bar:30}] {pos}/{len} runs {elapsed}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.to_string());
            self.bar = Some((label.to_string(), bar));
        }
        if let Some((_, bar)) = &self.bar {
            bar.set_position(done as u64);
        }
    }

    fn finish(&mut self) {
        if let Some((_, bar)) = self.bar.take() {
            bar.finish();
        }
    }
}

/// Runs `tensorbook bench ...`.
pub fn run(what: BenchWhat) -> Result<(), String> {
    match what {
        BenchWhat::Matmul {
            devices,
            m,
            k,
            n,
            dtype,
            warmup,
            runs,
            json,
            svg,
        } => {
            let config = MatmulBench {
                m,
                k,
                n,
                dtype: if dtype == "f64" {
                    DType::F64
                } else {
                    DType::F32
                },
                devices: bench::parse_devices(&devices).map_err(|e| e.to_string())?,
                runs: Runs {
                    warmup,
                    timed: runs,
                },
                seed: 42,
            };
            let report =
                bench::matmul(&config, &mut Bar { bar: None }).map_err(|e| e.to_string())?;
            if json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.table());
            }
            if let Some(path) = svg {
                let chart = report.svg_chart().map_err(|e| e.to_string())?;
                std::fs::write(&path, chart)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            }
            Ok(())
        }
    }
}
