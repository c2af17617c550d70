//! `tensorbook bench`: the runtime's benchmarks in a terminal, with a progress bar.

use std::io::Write;
use std::process::{Command, Stdio};

use tensorbook::bench::{
    self, conv, jit, linalg, ops, serving, train, MatmulBench, Progress, Runs,
};
use tensorbook::contract::env;
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

/// Results that disagree make a failed run (the table was printed first).
fn verdict(disagreements: &[String]) -> Result<(), String> {
    if disagreements.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the results disagree: {}",
            disagreements.join("; ")
        ))
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
            let figures =
                bench::matmul(&config, &mut Bar { bar: None }).map_err(|e| e.to_string())?;
            let report = &figures.report;
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
            verdict(&figures.disagreements)
        }
        BenchWhat::Ops {
            devices,
            filter,
            runs,
            python,
            json,
        } => {
            let devices = bench::parse_devices(&devices).map_err(|e| e.to_string())?;
            let mut server = NumpyServer::start(python);
            let numpy = match &mut server {
                Ok(server) => Ok(server as &mut dyn ops::Reference),
                Err(why) => Err(why.clone()),
            };
            let runs = Runs {
                warmup: 1,
                timed: runs,
            };
            let report = ops::run(&devices, &filter, runs, numpy, &mut Bar { bar: None })
                .map_err(|e| e.to_string())?;
            if json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.table());
            }
            Ok(())
        }
        BenchWhat::Jit {
            devices,
            len,
            runs,
            python,
            json,
        } => {
            let devices = bench::parse_devices(&devices).map_err(|e| e.to_string())?;
            // numpy's chain has the size of the Rust one only at the default length.
            let numpy = if len == 10_000_000 {
                NumpyServer::start(python).and_then(|mut server| {
                    let runs = Runs {
                        warmup: 1,
                        timed: runs,
                    };
                    ops::time_reference(&mut server, jit::NUMPY_CASE, runs)
                        .map(|median| median.as_secs_f64())
                })
            } else {
                Err(format!(
                    "left out (numpy times the chain at 10000000 elements, not {len})"
                ))
            };
            let config = jit::JitBench {
                devices,
                len,
                runs: Runs {
                    warmup: 1,
                    timed: runs,
                },
            };
            let figures =
                jit::run(&config, numpy, &mut Bar { bar: None }).map_err(|e| e.to_string())?;
            if json {
                let mut value = figures.report.to_json();
                value["jit_over_eager"] = per_device(&figures.speedups);
                value["jit_over_numpy"] = per_device(&figures.versus_numpy);
                value["cache_hit_overhead_us"] =
                    serde_json::json!(figures.cache_hit_overhead.as_secs_f64() * 1e6);
                value["cache_hit_call_us"] =
                    serde_json::json!(figures.cache_hit_call.as_secs_f64() * 1e6);
                value["first_call_ms"] = serde_json::json!(figures.first_call.as_secs_f64() * 1e3);
                value["trace_and_compile_ms"] =
                    serde_json::json!(figures.trace_and_compile.as_secs_f64() * 1e3);
                value["while_loop_eager_ms"] =
                    serde_json::json!(figures.while_loop_eager.as_secs_f64() * 1e3);
                value["while_loop_jit_ms"] =
                    serde_json::json!(figures.while_loop_jit.as_secs_f64() * 1e3);
                println!("{value}");
            } else {
                print!("{}", figures.report.table());
            }
            Ok(())
        }
        BenchWhat::Train {
            devices,
            batch,
            runs,
            python,
            json,
        } => {
            let config = train::TrainBench {
                devices: bench::parse_devices(&devices).map_err(|e| e.to_string())?,
                batch,
                runs: Runs {
                    warmup: 2,
                    timed: runs,
                },
            };
            let references = time_train_references(python, &config);
            let figures = train::run(&config, &references, &mut Bar { bar: None })
                .map_err(|e| e.to_string())?;
            if json {
                let mut value = figures.report.to_json();
                value["jit_over_eager"] = per_device(&figures.jit_over_eager);
                for key in train::REFERENCES {
                    let ratios: Vec<_> = figures
                        .jit_over_references
                        .iter()
                        .filter(|(_, k, _)| *k == key)
                        .map(|(d, _, r)| (*d, *r))
                        .collect();
                    value[format!("jit_over_{key}")] = per_device(&ratios);
                }
                println!("{value}");
            } else {
                print!("{}", figures.report.table());
            }
            Ok(())
        }
        BenchWhat::Conv {
            devices,
            batch,
            runs,
            python,
            json,
        } => {
            let config = conv::ConvBench {
                devices: bench::parse_devices(&devices).map_err(|e| e.to_string())?,
                batch,
                runs: Runs {
                    warmup: 2,
                    timed: runs,
                },
            };
            let references = time_conv_references(python, &config);
            let figures = conv::run(&config, &references, &mut Bar { bar: None })
                .map_err(|e| e.to_string())?;
            if json {
                let mut value = figures.report.to_json();
                value["jit_over_eager"] = per_device(&figures.jit_over_eager);
                value["step_over_references"] = figures
                    .step_over_references
                    .iter()
                    .map(|(d, name, r)| serde_json::json!({"device": d.to_string(), "reference": name, "ratio": r}))
                    .collect();
                println!("{value}");
            } else {
                print!("{}", figures.report.table());
            }
            Ok(())
        }
        BenchWhat::Linalg {
            devices,
            sizes,
            fft_lengths,
            runs,
            python,
            json,
        } => {
            let list = |what: &str, text: &str| {
                text.split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| s.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| format!("{what}: {e}"))
            };
            let config = linalg::LinalgBench {
                devices: bench::parse_devices(&devices).map_err(|e| e.to_string())?,
                sizes: list("--sizes", &sizes)?,
                fft_lengths: list("--fft-lengths", &fft_lengths)?,
                runs: Runs {
                    warmup: 1,
                    timed: runs,
                },
            };
            let numpy = time_linalg_reference(python, &config);
            let report =
                linalg::run(&config, &numpy, &mut Bar { bar: None }).map_err(|e| e.to_string())?;
            if json {
                println!("{}", report.to_json());
            } else {
                print!("{}", report.table());
            }
            Ok(())
        }
        BenchWhat::Serving {
            devices,
            rows,
            batch,
            runs,
            json,
        } => {
            let config = serving::ServingBench {
                devices: bench::parse_devices(&devices).map_err(|e| e.to_string())?,
                rows,
                batch,
                runs: Runs {
                    warmup: 1,
                    timed: runs,
                },
            };
            let figures =
                serving::run(&config, &mut Bar { bar: None }).map_err(|e| e.to_string())?;
            if json {
                let mut value = figures.report.to_json();
                value["one_device_images_per_s"] = serde_json::json!(figures.one_device);
                value["partitioned_images_per_s"] = serde_json::json!(figures.partitioned);
                value["partitioned_over_one_device"] = serde_json::json!(figures.speedup());
                println!("{value}");
            } else {
                print!("{}", figures.report.table());
            }
            Ok(())
        }
    }
}

/// The JSON a reference script prints as its last line, run as `python -c script args..`;
/// why there is none, in words, when it cannot run, prints no JSON, or reports an `error`.
fn reference_json(
    python: &str,
    script: &str,
    args: &[String],
) -> Result<serde_json::Value, String> {
    let output = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().last().unwrap_or("");
    let value: serde_json::Value = serde_json::from_str(line).map_err(|_| {
        let err = String::from_utf8_lossy(&output.stderr);
        format!(
            "{python} printed no timing: {}",
            err.lines().last().unwrap_or("no output")
        )
    })?;
    if let Some(why) = value["error"].as_str() {
        return Err(format!("skipped: {why} ({python})"));
    }
    Ok(value)
}

/// JAX's and PyTorch's steps for `bench train`, from [`train::REFERENCE_SCRIPT`] run with the
/// references' Python on the inputs [`train::write_inputs`] wrote, or why each is missing.
fn time_train_references(
    python: Option<String>,
    config: &train::TrainBench,
) -> Vec<Result<train::Reference, String>> {
    let python = python_for_references(python);
    if python == "none" {
        return vec![Err("JAX and PyTorch: left out (--python none)".into())];
    }
    let folder = match tempfile::tempdir() {
        Ok(folder) => folder,
        Err(e) => {
            return vec![Err(format!(
                "JAX and PyTorch: no folder for the inputs: {e}"
            ))]
        }
    };
    if let Err(e) = train::write_inputs(folder.path(), config.batch) {
        return vec![Err(format!("JAX and PyTorch: {e}"))];
    }
    let args = [
        folder.path().display().to_string(),
        config.batch.to_string(),
        config.runs.warmup.to_string(),
        config.runs.timed.max(1).to_string(),
    ];
    let value = match reference_json(&python, train::REFERENCE_SCRIPT, &args) {
        Ok(value) => value,
        Err(why) => return vec![Err(format!("JAX and PyTorch: {why}"))],
    };
    train::REFERENCES
        .iter()
        .map(|key| {
            let reference = train::read_reference(folder.path(), key, &value);
            if let Ok(r) = &reference {
                eprintln!("{} ({python})", r.name);
            }
            reference.map_err(|why| format!("{why} ({python})"))
        })
        .collect()
}

/// JAX's and PyTorch's medians for `bench conv`, from [`conv::REFERENCE_SCRIPT`] run with the
/// chosen Python, or why each is missing.
fn time_conv_references(
    python: Option<String>,
    config: &conv::ConvBench,
) -> Vec<Result<conv::Reference, String>> {
    let python = python_for_references(python);
    if python == "none" {
        return vec![Err("JAX and PyTorch: left out (--python none)".into())];
    }
    let args = [
        config.batch.to_string(),
        config.runs.warmup.to_string(),
        config.runs.timed.max(1).to_string(),
        conv::shapes_json(),
    ];
    let value = match reference_json(&python, conv::REFERENCE_SCRIPT, &args) {
        Ok(value) => value,
        Err(why) => return vec![Err(why)],
    };
    ["jax", "torch"]
        .iter()
        .map(|key| {
            let side = &value[*key];
            let parsed = side["name"]
                .as_str()
                .zip(side["step"].as_f64())
                .map(|(name, step)| conv::Reference {
                    name: name.to_string(),
                    forward: side["forward"]
                        .as_array()
                        .map(|a| a.iter().filter_map(|v| v.as_f64()).collect())
                        .unwrap_or_default(),
                    step,
                });
            parsed.ok_or_else(|| {
                let why = value[format!("{key}_error")]
                    .as_str()
                    .unwrap_or("no figures");
                format!("{why} ({python})")
            })
        })
        .collect()
}

/// NumPy's medians for `bench linalg`, from [`linalg::REFERENCE_SCRIPT`], or why there are
/// none.
fn time_linalg_reference(
    python: Option<String>,
    config: &linalg::LinalgBench,
) -> Result<linalg::Reference, String> {
    let python = python_for_numpy(python);
    if python == "none" {
        return Err("left out (--python none)".into());
    }
    let joined = |v: &[usize]| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let args = [
        joined(&config.sizes),
        config.runs.warmup.to_string(),
        config.runs.timed.max(1).to_string(),
        joined(&config.fft_lengths),
    ];
    let value = reference_json(&python, linalg::REFERENCE_SCRIPT, &args)?;
    let medians = value["medians"]
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_f64().map(|s| (k.clone(), s)))
                .collect()
        })
        .unwrap_or_default();
    Ok(linalg::Reference {
        name: value["name"].as_str().unwrap_or("NumPy").to_string(),
        medians,
    })
}

/// `{"host:0": ratio, ...}`.
fn per_device(ratios: &[(tensorbook::Device, f64)]) -> serde_json::Value {
    ratios
        .iter()
        .map(|(d, r)| (d.to_string(), serde_json::json!(r)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// The Python to run JAX and PyTorch with: `--python`, else `TENSORBOOK_REFERENCES_PYTHON`,
/// else the references' environment `install/references-env.sh` makes (`.venv-references`)
/// when run from a checkout that has one, else the numpy Python.
fn python_for_references(chosen: Option<String>) -> String {
    chosen
        .or_else(|| env::text(env::REFERENCES_PYTHON))
        .or_else(|| {
            let venv = std::path::Path::new(".venv-references/bin/python");
            venv.is_file().then(|| venv.display().to_string())
        })
        .unwrap_or_else(|| python_for_numpy(None))
}

/// The Python to run numpy with: `--python`, else `TENSORBOOK_PYTHON`, else the project's
/// `.venv` when run from a checkout, else `python3`.
fn python_for_numpy(chosen: Option<String>) -> String {
    chosen
        .or_else(|| env::text(env::PYTHON))
        .or_else(|| {
            let venv = std::path::Path::new(".venv/bin/python");
            venv.is_file().then(|| venv.display().to_string())
        })
        .unwrap_or_else(|| "python3".into())
}

/// numpy's side of `bench ops` and `bench jit`: [`ops::NUMPY_SCRIPT`] in `--serve` mode, asked
/// for one case at a time (for `bench ops` right after the devices have timed it; see
/// [`ops::Reference`]).
struct NumpyServer {
    python: String,
    child: std::process::Child,
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

impl NumpyServer {
    /// Starts the script with the chosen Python, or says why numpy is left out.
    fn start(python: Option<String>) -> Result<NumpyServer, String> {
        let python = python_for_numpy(python);
        if python == "none" {
            return Err("left out (--python none)".into());
        }
        let mut child = Command::new(&python)
            .args(["-c", ops::NUMPY_SCRIPT, "--serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {python}: {e}"))?;
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(format!("cannot talk to {python}"));
        };
        let mut server = NumpyServer {
            python,
            child,
            to,
            from: std::io::BufReader::new(from),
        };
        let hello = server.answer()?;
        let version = serde_json::from_str::<serde_json::Value>(&hello)
            .ok()
            .and_then(|v| v["numpy"].as_str().map(str::to_string))
            .ok_or_else(|| format!("{} printed no numpy version: {hello}", server.python))?;
        eprintln!("numpy {version} ({})", server.python);
        Ok(server)
    }

    /// Sends one command and reads its one-line answer; a dead script is reported with the
    /// last line of its stderr (the Python error, e.g. no numpy).
    fn ask(&mut self, command: &str) -> Result<String, String> {
        writeln!(self.to, "{command}")
            .and_then(|()| self.to.flush())
            .map_err(|e| format!("cannot talk to {}: {e}", self.python))?;
        self.answer()
    }

    fn answer(&mut self) -> Result<String, String> {
        use std::io::{BufRead, Read};
        let mut line = String::new();
        match self.from.read_line(&mut line) {
            Ok(n) if n > 0 => Ok(line.trim().to_string()),
            _ => {
                let mut err = String::new();
                if let Some(stderr) = self.child.stderr.as_mut() {
                    let _ = stderr.read_to_string(&mut err);
                }
                Err(format!(
                    "{} failed: {}",
                    self.python,
                    err.lines().last().unwrap_or("it exited")
                ))
            }
        }
    }
}

impl ops::Reference for NumpyServer {
    fn prepare(&mut self, case: &str) -> Result<bool, String> {
        match self.ask(&format!("case {case}"))?.as_str() {
            "ready" => Ok(true),
            "unknown" => Ok(false),
            other => Err(format!("numpy: {other}")),
        }
    }

    fn time_once(&mut self) -> Result<std::time::Duration, String> {
        let answer = self.ask("run")?;
        answer
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(std::time::Duration::from_secs_f64)
            .ok_or_else(|| format!("numpy: {answer}"))
    }
}

impl Drop for NumpyServer {
    fn drop(&mut self) {
        // Closing stdin ends the script's loop; kill covers a script stuck in a run.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disagreement_fails_the_run() {
        assert!(verdict(&[]).is_ok());
        let error =
            verdict(&["cuda:0 DISAGREES with binary: max |difference| = 1".into()]).unwrap_err();
        assert!(error.contains("cuda:0 DISAGREES with binary"), "{error}");
    }
}
