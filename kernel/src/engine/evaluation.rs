//! The evaluation thread: owns evcxr's `CommandContext`, starts it with the prelude (from the
//! shared runtime build when there is one), runs cells and turns what evcxr and the output
//! demultiplexer report into a cell's data or its [`CellFailure`].

use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use tensorbook::contract::{env, session_command};

use super::build_cache::{self, Fill, SessionDir};
use super::outcome::{self, CellFailure, EngineFailure, EvcxrFailure, Signals};
use super::output::{forward, CellReport};
use super::runtime_location::{self, GeneratedLocation};
use super::variables::{describe, Variable};
use super::vault::{restore_code, Plan, Variable as KeptVariable, Vault};
use super::{
    log_line, process, AnalysisError, CellData, CompletionAnswer, InputReader, Output, OutputSink,
    Request, Revival, Stream,
};

/// Where the runtime crate's sources are, for `:dep tensorbook`.
fn runtime_path() -> PathBuf {
    env::runtime_path()
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime")))
}

/// The runtime crate's directory, canonical so that every session names it the same way.
pub fn runtime_dir() -> PathBuf {
    let path = runtime_path();
    path.canonicalize().unwrap_or(path)
}

/// Checks that the runtime's sources are where the prelude will point cargo, so that a kernel
/// whose checkout is gone says so instead of failing inside cargo.
fn runtime_sources() -> Result<(), String> {
    let dir = runtime_dir();
    if dir.join("Cargo.toml").is_file() {
        Ok(())
    } else {
        Err(format!(
            "the runtime's sources are not at {} (the checkout this kernel was built from); \
             set {} to the `runtime` directory of a tensorbook checkout",
            dir.display(),
            env::RUNTIME_PATH
        ))
    }
}

/// Started with every evaluation process: `print!` without a newline shows while a cell runs.
const OUTPUT_FLUSHER: &str = "tensorbook::keep_output_flowing();";

/// The dependencies rust-analyzer loads of the runtime and of what it re-exports (vendored
/// evcxr patch 23): those whose items the API hands to cells (`pub use half::{bf16, f16}`), and
/// `cfg-if`, through which `half` declares its items. The others (gemm, cudarc, plotters,
/// resvg, zip, ...; `half`'s zerocopy, rand, ...) serve inside; a cell names nothing of theirs.
/// Measured on 2 cores: 149 crates and 5.4-6.0 s before the first completion could answer, 23
/// and 3.4 s.
const ANALYSIS_DEPENDENCIES: &[(&str, &[&str])] =
    &[("tensorbook", &["half"]), ("half", &["cfg-if"])];

/// Code run before the first cell: build settings, the runtime as a dependency, and its names
/// in scope: the prelude's glob (a cell's own `fn grad` shadows it) and the types by name as
/// well, which is what makes rust-analyzer write a variable's type as `Tensor` rather than
/// `tensorbook::Tensor` (in `:vars` and in the code evcxr generates). Cells name the runtime as `tensorbook` but link it from `tensorbook_dylib` (see
/// that crate): evcxr keeps the `use ... as _` item in every cell.
pub fn prelude() -> String {
    let runtime = runtime_dir();
    format!(
        ":opt {}\n:linker {}\n:dep tensorbook = {{ path = {:?} }}\n:dep tensorbook-dylib = {{ path = {:?} }}\nuse tensorbook_dylib as _;\nuse tensorbook::prelude::*;\nuse tensorbook::{{Client, DType, Device, Direction, Html, Jit, Leftover, PadMode, Serving, Svg, Tensor, TieBreak}};\n{OUTPUT_FLUSHER}",
        build_cache::CELL_OPT_LEVEL,
        build_cache::linker(),
        runtime.to_string_lossy(),
        runtime.join("dylib").to_string_lossy(),
    )
}

/// The session's variables as evcxr knows them now.
fn variables_now(ctx: &evcxr::CommandContext) -> Vec<KeptVariable> {
    ctx.variables()
        .map(|(name, ty, is_mut)| KeptVariable {
            name: name.to_string(),
            ty: ty.to_string(),
            is_mut,
        })
        .collect()
}

/// Binds again, in the new evaluation process, every variable of `before` the vault keeps; the
/// output flusher starts in the same cell. Variables whose restore fails move to `lost`.
fn restore(
    ctx: &mut evcxr::CommandContext,
    vault: Option<&Vault>,
    before: &[KeptVariable],
) -> Plan {
    let mut plan = match vault {
        Some(vault) => restore_code(vault, before),
        None => Plan {
            lost: before
                .iter()
                .map(|v| format!("{} ({}): the kernel keeps no variables", v.name, v.ty))
                .collect(),
            ..Plan::default()
        },
    };
    let code = format!("{}{OUTPUT_FLUSHER}", plan.code);
    let all_at_once = ctx.execute(&code);
    if let Err(e) = all_at_once {
        log_line(&format!(
            "restoring the variables at once failed, one by one now: {e}"
        ));
        let lines: Vec<String> = plan.code.lines().map(str::to_string).collect();
        let restored = std::mem::take(&mut plan.restored);
        for (line, what) in lines.iter().zip(restored) {
            match ctx.execute(line) {
                Ok(_) => plan.restored.push(what),
                Err(e) => plan.lost.push(format!(
                    "{what}: {}",
                    e.to_string()
                        .lines()
                        .next()
                        .unwrap_or("could not be restored")
                )),
            }
        }
        if let Err(e) = ctx.execute(OUTPUT_FLUSHER) {
            log_line(&format!("output flusher not restarted: {e}"));
        }
    }
    plan
}

/// Byte offsets where evcxr's completion range lies, clamped to char boundaries of `code`.
fn clamp(code: &str, mut at: usize) -> usize {
    at = at.min(code.len());
    while !code.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// What the evaluation thread starts with besides its channels.
pub(crate) struct Start {
    /// The session's copy of the runtime build.
    pub cache: Option<Arc<SessionDir>>,
    /// The vault of kept variables.
    pub vault: Option<Arc<Vault>>,
    /// A killed kernel's session to take back.
    pub revival: Option<Revival>,
    /// Said on stderr before the first cell (a default client that could not be used).
    pub notice: Option<String>,
}

pub(crate) fn run(
    rx: mpsc::Receiver<Request>,
    sink: OutputSink,
    child_slot: Arc<Mutex<Option<Arc<Mutex<Child>>>>>,
    busy: Arc<AtomicBool>,
    start: Start,
) {
    let Start {
        cache,
        vault,
        revival,
        notice,
    } = start;
    // A session that finds the shared build copies it; the first one builds it (below).
    let mut from_template = false;
    let claim = cache.as_ref().and_then(|dir| match dir.fill() {
        Ok(Fill::FromTemplate) => {
            from_template = true;
            None
        }
        Ok(Fill::Alone) => None,
        Ok(Fill::Build(lock)) => Some(lock),
        Err(e) => {
            log_line(&format!(
                "build cache unavailable, building from scratch: {e}"
            ));
            None
        }
    });
    let (flush_tx, flush_rx) = crossbeam_channel::unbounded::<mpsc::Sender<()>>();
    let flush = move || {
        let (ack_tx, ack_rx) = mpsc::channel();
        if flush_tx.send(ack_tx).is_ok() {
            let _ = ack_rx.recv_timeout(std::time::Duration::from_secs(5));
        }
    };
    let report: Arc<Mutex<CellReport>> = Arc::default();
    let report_slot = Arc::clone(&report);
    let started = runtime_sources().and_then(|()| {
        // Without evcxr's own first build (of `42`): the prelude is the first, ~0.5 s sooner.
        evcxr::CommandContext::new_unchecked()
            .and_then(|(mut ctx, outputs)| {
                // Cells call the runtime's compiled variable store instead of compiling evcxr's
                // into each one (vendored evcxr patch 7).
                ctx.set_cell_runtime(Some("tensorbook::cell_runtime".into()));
                // A fresh session's first completion waits for rust-analyzer to read every
                // crate it loads (vendored evcxr patch 23): fewer crates.
                for (package, dependencies) in ANALYSIS_DEPENDENCIES {
                    ctx.set_analysis_dependencies(package, dependencies);
                }
                if vault.is_some() {
                    ctx.set_variable_hook(Some("tensorbook::keep_variables".into()));
                }
                forward(
                    outputs.stdout,
                    outputs.stderr,
                    flush_rx,
                    Arc::clone(&sink),
                    report_slot,
                );
                // The analysis starts now, on the template's crate graph, while the prelude
                // builds (vendored evcxr patches 24 and 26): the prelude rewrites the same
                // Cargo.toml, so the graph loads once, and a session's first Tab waits ~0.3 s
                // less for the price of ~0.05 s on the first cell. Without a template the
                // session's crate does not exist yet (the analysis would write its own
                // src/lib.rs): the call after the prelude starts it.
                if from_template {
                    ctx.warm_analysis();
                }
                ctx.execute(&prelude())?;
                ctx.warm_analysis();
                Ok(ctx)
            })
            .map_err(|e| format!("evcxr could not start: {e}"))
    });
    if let (Ok(ctx), Some(dir), Some(lock)) = (&started, &cache, claim) {
        // Sessions copied from the template then load rust-analyzer's crate graph without the
        // ~15 cargo and rustc processes of a load (vendored evcxr patch 29): their first Tab
        // waits on that graph. A model that could not be saved only costs them the processes.
        match ctx.save_project_model() {
            Ok(Ok(())) => {}
            Ok(Err(why)) => log_line(&format!("project model not saved in the template: {why}")),
            Err(e) => log_line(&format!("project model not saved in the template: {e:#}")),
        }
        if let Err(e) = dir.publish(lock) {
            log_line(&format!(
                "could not publish the runtime build for later sessions: {e}"
            ));
        }
    }
    let ctx = match started {
        Ok(ctx) => ctx,
        Err(e) => {
            let first_line = e.lines().next().unwrap_or_default().to_string();
            let error = CellFailure::Engine {
                kind: EngineFailure::StartFailed,
                message: e,
            };
            let analysis = AnalysisError {
                ename: "EngineStartFailed".into(),
                evalue: first_line.clone(),
            };
            for request in rx {
                match request {
                    Request::Execute(_, _, tx) => drop(tx.send(Err(error.clone()))),
                    Request::Complete(_, _, tx) => drop(tx.send(Err(analysis.clone()))),
                    Request::Inspect(_, _, tx) => drop(tx.send(Err(analysis.clone()))),
                    Request::Vars(tx) => drop(tx.send(Vec::new())),
                    Request::SessionCommand(_, tx) => drop(tx.send(Err(first_line.clone()))),
                }
            }
            return;
        }
    };
    *child_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctx.process_handle());
    // rust-analyzer warms itself on a background thread after each cell (vendored evcxr
    // patch 8): the first cell no longer waits for it.
    let mut session = Session {
        ctx,
        sink,
        child_slot,
        busy,
        cache,
        vault,
        report,
        flush: Box::new(flush),
        described: None,
        cells_run: 0,
        notice,
        timing: None,
    };
    if let Some(revival) = revival {
        session.revive(revival);
    }
    // A panic inside evcxr or rust-analyzer (third-party code, on this thread) costs the one
    // request it happened in: the thread, and with it the session, goes on.
    for request in rx {
        match request {
            Request::Execute(code, input, tx) => {
                let result = contained(|| session.execute(&code, input)).unwrap_or_else(|why| {
                    session.busy.store(false, Ordering::SeqCst);
                    Err(CellFailure::Engine {
                        kind: EngineFailure::Panicked,
                        message: why,
                    })
                });
                let _ = tx.send(result);
            }
            Request::Complete(code, pos, tx) => {
                let answer = contained(|| session.complete(&code, pos))
                    .unwrap_or_else(|why| Err(analysis_panicked("completion", &why)));
                let _ = tx.send(answer);
            }
            Request::Inspect(code, pos, tx) => {
                let answer = contained(|| session.inspect(&code, pos))
                    .unwrap_or_else(|why| Err(analysis_panicked("inspection", &why)));
                let _ = tx.send(answer);
            }
            Request::Vars(tx) => {
                let _ = tx.send(contained(|| session.vars()).unwrap_or_default());
            }
            Request::SessionCommand(command, tx) => {
                let answer = contained(|| session.session_command(&command))
                    .unwrap_or_else(|why| Err(format!("the session command failed: {why}")));
                let _ = tx.send(answer);
            }
        }
    }
}

/// `:timing`'s report: the cell's time, then each of evcxr's phases.
fn timing_text<'a>(
    took: std::time::Duration,
    phases: impl Iterator<Item = (&'a str, std::time::Duration)>,
) -> String {
    let mut text = format!("Took {}ms\n", took.as_millis());
    for (name, duration) in phases {
        text.push_str(&format!("  {name}: {}ms\n", duration.as_millis()));
    }
    text
}

/// Runs `f`, turning a panic into its message.
fn contained<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

fn analysis_panicked(what: &str, why: &str) -> AnalysisError {
    log_line(&format!("{what} panicked in rust-analyzer: {why}"));
    AnalysisError {
        ename: "AnalysisFailed".into(),
        evalue: format!(
            "rust-analyzer failed on this {what} request ({why}); nothing else is affected"
        ),
    }
}

/// The evaluation thread's state once evcxr has started.
struct Session {
    ctx: evcxr::CommandContext,
    sink: OutputSink,
    child_slot: Arc<Mutex<Option<Arc<Mutex<Child>>>>>,
    busy: Arc<AtomicBool>,
    cache: Option<Arc<SessionDir>>,
    vault: Option<Arc<Vault>>,
    report: Arc<Mutex<CellReport>>,
    /// Waits until the output demultiplexer has passed on everything printed so far.
    flush: Box<dyn Fn()>,
    /// Tensor descriptions for `:vars`, valid until the next cell runs.
    described: Option<(u64, Vec<Variable>)>,
    cells_run: u64,
    /// Said on stderr before the next cell runs (the session came back from its keeper).
    notice: Option<String>,
    /// `:timing`'s report of the last cell, shown after its output.
    timing: Option<String>,
}

impl Session {
    /// Binds again the variables of a session whose kernel was killed, and says so before the
    /// first cell.
    fn revive(&mut self, revival: Revival) {
        let plan = restore(&mut self.ctx, self.vault.as_deref(), &revival.variables);
        self.mirror();
        let mut text = format!(
            "The kernel was restarted after it ended unexpectedly (killed or crashed); {}; {}.\n",
            outcome::restored_text(&plan.restored),
            outcome::lost_text(&plan.lost)
        );
        for lost in &plan.lost {
            text.push_str(&format!("lost: {lost}\n"));
        }
        for note in &revival.notes {
            text.push_str(&format!("{note}\n"));
        }
        log_line(text.trim_end());
        let earlier = self.notice.take().unwrap_or_default();
        self.notice = Some(earlier + &text);
    }

    /// Sends the session keeper what the last cell changed.
    fn mirror(&self) {
        if let Some(vault) = &self.vault {
            let now = variables_now(&self.ctx);
            let default = tensorbook::contract::session_file::read().map(|d| d.to_string());
            vault.mirror(&now, default);
        }
    }

    fn execute(&mut self, code: &str, input: Option<InputReader>) -> Result<CellData, CellFailure> {
        if let Some(notice) = self.notice.take() {
            (self.sink)(Output::Text(Stream::Stderr, notice));
        }
        self.cells_run += 1;
        *self.report.lock().unwrap_or_else(|e| e.into_inner()) = CellReport::default();
        let before = variables_now(&self.ctx);
        let answer = self.run_in_evcxr(code, input);
        let signals = Signals {
            build_stopped: process::build_was_stopped(),
            interrupt_sent: process::interrupt_was_sent(),
        };
        let result = match outcome::from_evcxr(answer, signals) {
            Err(CellFailure::ProcessDied(mut death)) => {
                // The new process gets the variables back and its output flusher
                // again (the prelude's `use`s and `:dep`s are kept by evcxr itself).
                let plan = restore(&mut self.ctx, self.vault.as_deref(), &before);
                death.restored = plan.restored;
                death.lost = plan.lost;
                Err(CellFailure::ProcessDied(death))
            }
            other => other,
        };
        self.after_cell();
        let cell = std::mem::take(&mut *self.report.lock().unwrap_or_else(|e| e.into_inner()));
        let result = outcome::with_cell_report(result, cell.panic, cell.user_error, signals);
        self.placed_in_cell(result, code, cell.user_error_at.as_deref())
    }

    /// A panic's and a `?` error's location in the cell's own lines (evcxr maps the generated
    /// crate's line back; code evcxr generated keeps Rust's location).
    fn placed_in_cell(
        &self,
        result: Result<CellData, CellFailure>,
        code: &str,
        user_error_at: Option<&str>,
    ) -> Result<CellData, CellFailure> {
        let place = |text: &str| {
            GeneratedLocation::find(text).and_then(|g| self.ctx.cell_position(g.line, g.column))
        };
        match result {
            Err(CellFailure::Panic { location, message }) => Err(CellFailure::Panic {
                location: runtime_location::panic_location(&location, code, place(&location)),
                message,
            }),
            Err(CellFailure::UserError { lines, .. }) => Err(CellFailure::UserError {
                lines,
                at: user_error_at
                    .and_then(place)
                    .map(|(line, column)| runtime_location::describe(code, line, column)),
            }),
            other => other,
        }
    }

    /// Runs the cell in evcxr: its final value as a mime bundle, or what evcxr reported.
    fn run_in_evcxr(
        &mut self,
        code: &str,
        input: Option<InputReader>,
    ) -> Result<CellData, EvcxrFailure> {
        process::reset_build_stopped();
        self.busy.store(true, Ordering::SeqCst);
        let mut callbacks = evcxr::EvalCallbacks {
            input_reader: &|request| match &input {
                Some(reader) => reader(request.prompt, request.is_password),
                None => String::new(),
            },
        };
        let result = self.ctx.execute_with_callbacks(code, &mut callbacks);
        self.busy.store(false, Ordering::SeqCst);
        if let Ok(out) = &result {
            // Only for code evcxr ran: a command (`:timing` itself) has no phases.
            self.timing = out.timing.filter(|_| !out.phases.is_empty()).map(|took| {
                let phases = out.phases.iter().map(|p| (p.name.as_str(), p.duration));
                timing_text(took, phases)
            });
        }
        result.map_err(EvcxrFailure::from).map(|out| {
            let mut data: CellData = out.content_by_mime_type.into_iter().collect();
            data.sort();
            // A cell ending in a block or `if` evaluates to `()`: nothing to show.
            if data.len() == 1 && data[0].0 == "text/plain" && data[0].1.trim() == "()" {
                data.clear();
            }
            data
        })
    }

    /// What every cell ends with: the vault follows evcxr and is mirrored to the keeper,
    /// interrupt points at the live process, and the output is flushed.
    fn after_cell(&mut self) {
        if let Some(vault) = &self.vault {
            // Dropped, shadowed by a non-variable, or cleared: their memory may go.
            let now = variables_now(&self.ctx);
            vault.retain(|name| now.iter().any(|v| v.name == name));
        }
        self.mirror();
        // evcxr may have restarted its process: keep interrupt pointed at the live one.
        *self.child_slot.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(self.ctx.process_handle());
        (self.flush)();
        // After the cell's own output, as evcxr_jupyter shows it.
        if let Some(timing) = self.timing.take() {
            (self.sink)(Output::Text(Stream::Stdout, timing));
        }
    }

    fn complete(&mut self, code: &str, pos: usize) -> Result<CompletionAnswer, AnalysisError> {
        self.ctx
            .completions(code, clamp(code, pos))
            .map(|c| {
                let mut items = c.completions;
                // A type's own methods before the blanket trait ones (`into`, `borrow`, ...),
                // each group in alphabetical order (rust-analyzer's is the declarations').
                items.sort_by(|a, b| (a.from_trait, &a.label).cmp(&(b.from_trait, &b.label)));
                CompletionAnswer {
                    types: items
                        .iter()
                        .map(|i| (i.kind.to_string(), i.detail.clone().unwrap_or_default()))
                        .collect(),
                    matches: items.into_iter().map(|i| i.code).collect(),
                    start: clamp(code, c.start_offset),
                    end: clamp(code, c.end_offset),
                }
            })
            .map_err(|e| AnalysisError {
                ename: "CompletionFailed".into(),
                evalue: e.to_string(),
            })
    }

    fn inspect(&mut self, code: &str, pos: usize) -> Result<(String, String), AnalysisError> {
        self.ctx
            .hover_at(code, clamp(code, pos))
            .map_err(|e| AnalysisError {
                ename: "InspectionFailed".into(),
                evalue: e.to_string(),
            })
    }

    /// The runtime's shared library, which every cell links (build_cache.rs).
    fn runtime_dylib(&self) -> Option<PathBuf> {
        self.cache
            .as_ref()
            .and_then(|dir| dir.library_dir())
            .map(|dir| dir.join("libtensorbook_dylib.so"))
            .filter(|path| path.is_file())
    }

    /// Answers `:client`/`:clients` in the evaluation process (nothing compiled): what a cell
    /// set there (the simulated accelerator, host devices) is what the command sees. Without
    /// the runtime's library (a session without the shared build) the kernel answers itself.
    fn session_command(&mut self, command: &str) -> Result<String, String> {
        let Some(dylib) = self.runtime_dylib() else {
            return tensorbook::notebook::session_command(command);
        };
        session_command::write_request(command)
            .map_err(|e| format!("cannot hand the command to the evaluation process: {e}"))?;
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .session_command = None;
        let ran = self.ctx.call_function(&dylib, "tensorbook_session_command");
        (self.flush)();
        let answer = self
            .report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .session_command
            .take();
        match (answer, ran) {
            (Some(answer), _) => answer,
            (None, Err(e)) => Err(format!("the evaluation process did not answer: {e}")),
            (None, Ok(_)) => Err("the evaluation process gave no answer".into()),
        }
    }

    fn vars(&mut self) -> Vec<Variable> {
        let runtime_dylib = self.runtime_dylib();
        describe(
            &mut self.ctx,
            &self.report,
            &self.flush,
            &mut self.described,
            self.cells_run,
            runtime_dylib.as_deref(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::ANALYSIS_DEPENDENCIES;
    use std::path::Path;

    fn rust_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("the runtime's sources are readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                rust_files(&path, found);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }

    /// A crate the runtime re-exports that the analysis left out would leave completion blind
    /// to what a cell names through it (`f16::` after `pub use half::f16`).
    #[test]
    fn the_analysis_loads_every_dependency_the_runtime_re_exports() {
        let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime");
        let manifest = std::fs::read_to_string(runtime.join("Cargo.toml"))
            .expect("the runtime's manifest is readable");
        let dependencies: Vec<String> = manifest
            .split("[dependencies]")
            .nth(1)
            .expect("the runtime's manifest has dependencies")
            .lines()
            .take_while(|line| !line.starts_with('['))
            .filter_map(|line| line.split(['.', '=', ' ']).next())
            .filter(|name| !name.is_empty() && !name.starts_with('#'))
            .map(|name| name.replace('-', "_"))
            .collect();
        assert!(dependencies.iter().any(|d| d == "half"), "{dependencies:?}");
        let loaded = ANALYSIS_DEPENDENCIES
            .iter()
            .find(|(package, _)| *package == "tensorbook")
            .map(|(_, loaded)| *loaded)
            .expect("the runtime's entry");
        let mut files = Vec::new();
        rust_files(&runtime.join("src"), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a runtime source is readable");
            for dependency in &dependencies {
                let re_exported = [
                    format!("pub use {dependency}::"),
                    format!("pub use ::{dependency}::"),
                ]
                .iter()
                .any(|pattern| text.contains(pattern.as_str()));
                assert!(
                    !re_exported || loaded.contains(&dependency.as_str()),
                    "{} re-exports `{dependency}`, which rust-analyzer does not load: add it to \
                     ANALYSIS_DEPENDENCIES",
                    file.display()
                );
            }
        }
    }
}
