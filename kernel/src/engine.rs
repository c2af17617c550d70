//! The evaluation engine: one evcxr `CommandContext` owned by a dedicated thread. Requests come
//! in over a channel and answers go back on one-shot channels, so the protocol side never
//! blocks on compilation (kernel_info is answered while evcxr is still starting).

use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use tokio::sync::oneshot;

use crate::build_cache::{self, Fill, SessionDir};
use crate::evaluation_process::{
    GRACE, INTERRUPT_EXIT_STATUS, PARTIAL_LINE_MARKER, USER_ERROR_MARKER,
};

/// Which output stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// stdout
    Stdout,
    /// stderr
    Stderr,
}

impl Stream {
    /// The Jupyter stream name.
    pub fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// One piece of a running cell's output, in the order the cell produced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// Text on stdout or stderr.
    Text(Stream, String),
    /// A block of rich content the cell printed in evcxr's markers (`EVCXR_BEGIN_CONTENT mime`
    /// ... `EVCXR_END_CONTENT`) before its final value: one display_data at its place.
    Display {
        /// The mime type.
        mime: String,
        /// The content.
        content: String,
    },
}

/// Receives output while a cell runs.
pub type OutputSink = Arc<dyn Fn(Output) + Send + Sync>;

/// A failed cell, as Jupyter reports it.
#[derive(Clone, Debug)]
pub struct CellError {
    /// Error class (`CompilationError`, `Panic`, ...).
    pub ename: String,
    /// One-line summary.
    pub evalue: String,
    /// The readable report, one entry per line.
    pub traceback: Vec<String>,
}

/// What a successful cell produced: its final value as a mime bundle (may be empty).
pub type CellData = Vec<(String, String)>;

/// A completion answer, in byte offsets of the cell.
pub struct CompletionAnswer {
    /// Candidates.
    pub matches: Vec<String>,
    /// Start of the replaced range.
    pub start: usize,
    /// End of the replaced range.
    pub end: usize,
}

/// Answers a cell's request for input (prompt, whether it is a password) with the line typed.
pub type InputReader = Arc<dyn Fn(String, bool) -> String + Send + Sync>;

enum Request {
    Execute(
        String,
        Option<InputReader>,
        oneshot::Sender<Result<CellData, CellError>>,
    ),
    Complete(
        String,
        usize,
        oneshot::Sender<Result<CompletionAnswer, String>>,
    ),
    Inspect(
        String,
        usize,
        oneshot::Sender<Result<(String, String), String>>,
    ),
    Vars(oneshot::Sender<Vec<Variable>>),
}

/// Handle to the evaluation thread.
pub struct Engine {
    requests: mpsc::Sender<Request>,
    child: Arc<Mutex<Option<Arc<Mutex<Child>>>>>,
    /// Whether a cell is being built or run.
    busy: Arc<AtomicBool>,
}

/// Where the runtime crate's sources are, for `:dep tensorbook`.
fn runtime_path() -> PathBuf {
    std::env::var_os("TENSORBOOK_RUNTIME_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../runtime")))
}

/// The runtime crate's directory, canonical so that every session names it the same way.
pub fn runtime_dir() -> PathBuf {
    let path = runtime_path();
    path.canonicalize().unwrap_or(path)
}

/// Started with every evaluation process: `print!` without a newline shows while a cell runs.
const OUTPUT_FLUSHER: &str = "tensorbook::keep_output_flowing();";

/// Code run before the first cell: build settings, the runtime as a dependency, and its names
/// in scope. Cells name the runtime as `tensorbook` but link it from `tensorbook_dylib` (see
/// that crate): evcxr keeps the `use ... as _` item in every cell.
pub fn prelude() -> String {
    let runtime = runtime_dir();
    format!(
        ":opt {}\n:linker {}\n:dep tensorbook = {{ path = {:?} }}\n:dep tensorbook-dylib = {{ path = {:?} }}\nuse tensorbook_dylib as _;\nuse tensorbook::{{clear_output, display, on, Client, DType, Device, Html, Leftover, Serving, Svg, Tensor}};\n{OUTPUT_FLUSHER}",
        build_cache::CELL_OPT_LEVEL,
        build_cache::linker(),
        runtime.to_string_lossy(),
        runtime.join("dylib").to_string_lossy(),
    )
}

fn cell_error(error: evcxr::Error) -> CellError {
    match error {
        evcxr::Error::CompilationErrors(errors) => {
            let evalue = errors
                .first()
                .map(|e| e.message())
                .unwrap_or_else(|| "compilation failed".into());
            let traceback = errors
                .iter()
                .flat_map(|e| {
                    let text = if e.is_from_user_code() {
                        e.rendered()
                    } else {
                        e.message()
                    };
                    text.lines().map(str::to_string).collect::<Vec<_>>()
                })
                .collect();
            CellError {
                ename: "CompilationError".into(),
                evalue,
                traceback,
            }
        }
        evcxr::Error::SubprocessTerminated(msg) => CellError {
            ename: "EvaluationProcessTerminated".into(),
            evalue: msg.clone(),
            traceback: vec![
                msg,
                "The evaluation process was restarted; variables defined so far are lost.".into(),
            ],
        },
        other => {
            let msg = other.to_string();
            let ename = if msg.to_lowercase().contains("panic") {
                "Panic"
            } else {
                "Error"
            };
            CellError {
                ename: ename.into(),
                evalue: msg.lines().next().unwrap_or("").to_string(),
                traceback: msg.lines().map(str::to_string).collect(),
            }
        }
    }
}

impl Engine {
    /// Starts the evaluation thread; evcxr and the prelude start in the background and the
    /// first request waits for them.
    pub fn start(sink: OutputSink, cache: Option<Arc<SessionDir>>) -> Engine {
        let (tx, rx) = mpsc::channel::<Request>();
        let child: Arc<Mutex<Option<Arc<Mutex<Child>>>>> = Arc::default();
        let child_slot = Arc::clone(&child);
        let busy = Arc::new(AtomicBool::new(false));
        let busy_flag = Arc::clone(&busy);
        thread::Builder::new()
            .name("evcxr".into())
            .spawn(move || run(rx, sink, child_slot, busy_flag, cache))
            .ok();
        Engine {
            requests: tx,
            child,
            busy,
        }
    }

    fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> oneshot::Receiver<T> {
        let (tx, rx) = oneshot::channel();
        // If the thread is gone the receiver reports it as a closed channel.
        let _ = self.requests.send(make(tx));
        rx
    }

    /// Runs a cell; `input` answers its requests for input (None: they get an empty line).
    pub async fn execute(
        &self,
        code: String,
        input: Option<InputReader>,
    ) -> Result<CellData, CellError> {
        self.ask(|tx| Request::Execute(code, input, tx))
            .await
            .unwrap_or_else(|_| Err(gone()))
    }

    /// Completions at a byte offset.
    pub async fn complete(&self, code: String, pos: usize) -> Result<CompletionAnswer, String> {
        self.ask(|tx| Request::Complete(code, pos, tx))
            .await
            .unwrap_or_else(|_| Err("the evaluation engine stopped".into()))
    }

    /// Hover information at a byte offset: (plain text, html).
    pub async fn inspect(&self, code: String, pos: usize) -> Result<(String, String), String> {
        self.ask(|tx| Request::Inspect(code, pos, tx))
            .await
            .unwrap_or_else(|_| Err("the evaluation engine stopped".into()))
    }

    /// Variables defined so far, with their types (and, for tensors, what they hold).
    pub async fn vars(&self) -> Vec<Variable> {
        self.ask(Request::Vars).await.unwrap_or_default()
    }

    /// Interrupts the cell being built or run; returns whether there was one.
    ///
    /// A build is stopped at once (cargo and its compilers are killed; the cell fails and the
    /// session is untouched). A running cell gets SIGINT, which stops it at the runtime's next
    /// safe point with the session intact; if it is still running [`GRACE`] later the
    /// evaluation process ends itself (see `evaluation_process`).
    pub fn interrupt(&self) -> bool {
        if !self.busy.load(Ordering::SeqCst) {
            return false;
        }
        kill_builds();
        let slot = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(child) = slot.as_ref() {
            let pid = child.lock().unwrap_or_else(|e| e.into_inner()).id();
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: sending a signal has no memory effects in this process.
                unsafe { libc::kill(pid, libc::SIGINT) };
            }
        }
        true
    }
}

/// Set when an interrupt killed the cell's build, so that its error reads as an interrupt
/// rather than as whatever evcxr made of a compiler that vanished. One engine per process.
static BUILD_STOPPED: AtomicBool = AtomicBool::new(false);

/// Kills the builds evcxr started (cargo with every compiler under it, or rustc alone), so
/// that an interrupt during a long build returns at once.
fn kill_builds() {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    let mut parent_of = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces, so split after the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parent_of.push((pid, ppid, comm));
        }
    }
    let mut doomed: Vec<u32> = parent_of
        .iter()
        // rustc too: the patched evcxr runs it without cargo between cells.
        .filter(|(_, ppid, comm)| *ppid == me && (comm == "cargo" || comm == "rustc"))
        .map(|(pid, _, _)| *pid)
        .collect();
    let mut i = 0;
    while i < doomed.len() {
        let parent = doomed[i];
        doomed.extend(
            parent_of
                .iter()
                .filter(|(_, ppid, _)| *ppid == parent)
                .map(|(pid, _, _)| *pid),
        );
        i += 1;
    }
    if !doomed.is_empty() {
        BUILD_STOPPED.store(true, Ordering::SeqCst);
    }
    for pid in doomed {
        if let Ok(pid) = libc::pid_t::try_from(pid) {
            // SAFETY: sending a signal has no memory effects in this process.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// The error of a cell that returned an `Err` through `?`; the message was printed on stderr.
fn user_error(lines: Vec<String>) -> CellError {
    let lines: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
    let interrupted = lines
        .iter()
        .any(|l| l.contains(&tensorbook::Error::Interrupted.to_string()));
    CellError {
        ename: if interrupted { "Interrupted" } else { "Error" }.into(),
        evalue: lines
            .last()
            .cloned()
            .unwrap_or_else(|| "the cell returned an error through `?`".into()),
        traceback: lines,
    }
}

/// Says why the evaluation process ended and which variables went with it; what the kernel
/// owns (the session default client, `:dep`s, `use`s and items) is still in place.
fn explain_restart(error: &mut CellError, lost: &[String]) {
    let interrupted = error
        .evalue
        .contains(&format!("exit status: {INTERRUPT_EXIT_STATUS}"));
    let mut lost = lost.to_vec();
    lost.sort();
    let lost = if lost.is_empty() {
        "no variables were lost".to_string()
    } else {
        format!("variables lost: {}", lost.join(", "))
    };
    if interrupted {
        error.ename = "Interrupted".into();
        error.evalue = format!(
            "the cell ignored the interrupt for {} s, so the evaluation process was restarted; {lost}",
            GRACE.as_secs()
        );
    } else {
        error.evalue = format!("the evaluation process ended and was restarted; {lost}");
    }
    error.traceback = vec![
        error.evalue.clone(),
        "kept: the session default client, :dep crates, use statements, fn/struct items".into(),
    ];
}

/// Code whose completion makes rust-analyzer (inside evcxr) do the work a session's first `let`
/// would otherwise wait for: inference, and the trait impls of every crate the cells can see.
const WARM_UP: &str = "let _tensorbook_warm_up = 1; _tensorbook_warm_up.";

/// Does the first cell's analysis while the person is still reading the notebook: the engine
/// starts with the kernel, and measured on two cores this moves about 5 s out of the first cell
/// (which then takes as long as any other). A cell sent at once waits no longer than before: it
/// needs the same analysis, which rust-analyzer keeps.
fn warm_analysis(ctx: &mut evcxr::CommandContext) {
    if let Err(e) = ctx.completions(WARM_UP, WARM_UP.len()) {
        log_line(&format!("analysis warm-up failed (cells still work): {e}"));
    }
}

/// Kernel-side diagnostics go to the kernel's stderr (Jupyter's log), never to a cell.
fn log_line(text: &str) {
    eprintln!("[tensorbook] {text}");
}

fn gone() -> CellError {
    CellError {
        ename: "EngineStopped".into(),
        evalue: "the evaluation engine stopped".into(),
        traceback: vec!["the evaluation engine stopped; restart the kernel".into()],
    }
}

/// A panic seen on the evaluation process's stderr: evcxr reports a panicking cell as a
/// success with a backtrace on stderr, so the kernel recognises the panic message and turns it
/// into the cell's error (the backtrace frames are evcxr's own, and are dropped).
#[derive(Clone, Debug, Default)]
pub struct PanicReport {
    /// `thread '...' panicked at src/lib.rs:3:1:`
    pub location: String,
    /// The panic message lines.
    pub message: Vec<String>,
}

/// What the evaluation process's stderr said about the current cell, beyond what is shown.
#[derive(Default)]
struct CellReport {
    /// The cell panicked.
    panic: Option<PanicReport>,
    /// The cell returned an `Err` through `?`: the stderr lines the cell printed up to then
    /// (evcxr prints the error just before its marker).
    user_error: Option<Vec<String>>,
    /// The user's stderr lines of this cell, kept for `user_error` (bounded).
    stderr: Vec<String>,
    /// What `tensorbook::notebook::describe_variables` printed (JSON), for `:vars`.
    variables: Option<String>,
}

/// A variable of the session, as `:vars` lists it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its Rust type, as evcxr infers it.
    pub ty: String,
    /// For a tensor: `f32[2][3] on host:0, 24 bytes` (or why it is unknown).
    pub tensor: Option<String>,
}

fn is_tensor_type(ty: &str) -> bool {
    ty == "Tensor" || ty.ends_with("::Tensor")
}

/// `f32[2][3] on host:0, 24 bytes` from one entry of `describe_variables`' JSON.
fn tensor_summary(entry: &serde_json::Value) -> String {
    let dims: String = entry["shape"]
        .as_array()
        .map(|a| a.iter().map(|d| format!("[{d}]")).collect())
        .unwrap_or_default();
    let mut text = format!(
        "{}{dims} on {}, {} bytes",
        entry["dtype"].as_str().unwrap_or("?"),
        entry["device"].as_str().unwrap_or("?"),
        entry["bytes"]
    );
    if entry["deallocated"].as_bool() == Some(true) {
        text.push_str(" (deallocated)");
    }
    text
}

#[derive(Default)]
enum StderrState {
    #[default]
    Normal,
    Message,
    Backtrace,
}

/// Splits stderr into what the user printed and panic reports.
#[derive(Default)]
struct StderrFilter {
    state: StderrState,
}

impl StderrFilter {
    /// Returns the line to show, or None when it belongs to a panic report or is a marker.
    fn line(&mut self, line: String, report: &Mutex<CellReport>) -> Option<String> {
        let mut report = report.lock().unwrap_or_else(|e| e.into_inner());
        let report = &mut *report;
        let slot = &mut report.panic;
        match self.state {
            StderrState::Normal if line == USER_ERROR_MARKER => {
                report.user_error = Some(report.stderr.clone());
                None
            }
            StderrState::Normal
                if line.starts_with("thread '") && line.contains(" panicked at ") =>
            {
                *slot = Some(PanicReport {
                    location: line,
                    message: Vec::new(),
                });
                self.state = StderrState::Message;
                None
            }
            StderrState::Normal => {
                if report.stderr.len() < 200 {
                    report.stderr.push(line.clone());
                }
                Some(line)
            }
            StderrState::Message if line == "stack backtrace:" => {
                self.state = StderrState::Backtrace;
                None
            }
            StderrState::Message if line.starts_with("note: run with `RUST_BACKTRACE") => {
                self.state = StderrState::Normal;
                None
            }
            StderrState::Message => {
                if let Some(report) = slot.as_mut() {
                    report.message.push(line);
                }
                None
            }
            StderrState::Backtrace => {
                if line.starts_with("note: ") {
                    self.state = StderrState::Normal;
                }
                None
            }
        }
    }
}

/// Passes a stdout line on: a content block as display data, the kernel's own `:vars`
/// description to the report, anything else as text.
fn stdout_line(line: String, report: &Mutex<CellReport>, sink: &OutputSink) {
    if let Some(json) = line.strip_prefix(tensorbook::notebook::VARIABLES_MARKER) {
        report.lock().unwrap_or_else(|e| e.into_inner()).variables = Some(json.to_string());
        return;
    }
    if let Some(block) = line.strip_prefix(evcxr::DISPLAY_DATA_LINE_PREFIX) {
        if let Some(display) = display_block(block) {
            return sink(display);
        }
    }
    sink(Output::Text(Stream::Stdout, stdout_text(line)))
}

/// A content block forwarded by the vendored evcxr (`{"mime": ..., "content": ...}`).
fn display_block(json: &str) -> Option<Output> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    Some(Output::Display {
        mime: value.get("mime")?.as_str()?.to_string(),
        content: value.get("content")?.as_str()?.to_string(),
    })
}

/// The text a stdout line stands for: an unfinished line (see [`PARTIAL_LINE_MARKER`]) goes
/// out as it is, so `print!("loading...")` shows before its newline.
fn stdout_text(line: String) -> String {
    match line.strip_prefix(PARTIAL_LINE_MARKER) {
        Some(partial) => partial.to_string(),
        None => format!("{line}\n"),
    }
}

/// Forwards the evaluation process's output to the sink as it arrives. A flush request
/// (sent when a cell finishes) drains what is still queued — stderr arrives on its own thread
/// in evcxr, so a short quiet period is awaited — and is acknowledged only after everything was
/// handed to the sink: the cell's output always precedes its result and the idle status.
fn forward(
    stdout: crossbeam_channel::Receiver<String>,
    stderr: crossbeam_channel::Receiver<String>,
    flush: crossbeam_channel::Receiver<mpsc::Sender<()>>,
    sink: OutputSink,
    report: Arc<Mutex<CellReport>>,
) {
    thread::spawn(move || {
        let mut err = HeldStderr::default();
        loop {
            err.release_if_old(&sink);
            crossbeam_channel::select! {
                recv(stdout) -> line => match line {
                    Ok(line) => stdout_line(line, &report, &sink),
                    Err(_) => return,
                },
                recv(stderr) -> line => match line {
                    Ok(line) => err.push(line, &report, &sink),
                    Err(_) => return,
                },
                recv(flush) -> ack => {
                    let Ok(ack) = ack else { return };
                    let mut quiet = 0;
                    while quiet < 3 {
                        let mut any = false;
                        while let Ok(line) = stdout.try_recv() {
                            stdout_line(line, &report, &sink);
                            any = true;
                        }
                        while let Ok(line) = stderr.try_recv() {
                            err.push(line, &report, &sink);
                            any = true;
                        }
                        if any {
                            quiet = 0;
                        } else {
                            quiet += 1;
                            thread::sleep(std::time::Duration::from_millis(3));
                        }
                    }
                    err.release(&sink);
                    let _ = ack.send(());
                }
                default(HeldStderr::WAIT) => {}
            }
        }
    });
}

/// The user's stderr on its way to the frontend, one line behind: evcxr prints a `?` error on
/// stderr just before its marker, and that line becomes the cell's error instead of being shown
/// twice (once as output, once as the error). A held line goes out after [`HeldStderr::WAIT`]
/// or with the next line.
#[derive(Default)]
struct HeldStderr {
    filter: StderrFilter,
    held: Option<(String, std::time::Instant)>,
}

impl HeldStderr {
    const WAIT: std::time::Duration = std::time::Duration::from_millis(20);

    fn push(&mut self, line: String, report: &Mutex<CellReport>, sink: &OutputSink) {
        let is_marker = line == USER_ERROR_MARKER;
        let shown = self.filter.line(line, report);
        if is_marker {
            // The held line is the error's message: it is reported as the error.
            self.held = None;
            return;
        }
        if let Some(text) = shown {
            self.release(sink);
            self.held = Some((text, std::time::Instant::now()));
        }
    }

    fn release_if_old(&mut self, sink: &OutputSink) {
        if matches!(&self.held, Some((_, at)) if at.elapsed() >= Self::WAIT) {
            self.release(sink);
        }
    }

    fn release(&mut self, sink: &OutputSink) {
        if let Some((text, _)) = self.held.take() {
            sink(Output::Text(Stream::Stderr, format!("{text}\n")));
        }
    }
}

/// The session's variables for `:vars`. Tensors are described by the evaluation process (one
/// small hidden cell: their dtype, shape and placement exist only there); the answer is kept
/// until the next cell runs, so repeated `:vars` cost nothing.
fn describe(
    ctx: &mut evcxr::CommandContext,
    report: &Mutex<CellReport>,
    flush: &dyn Fn(),
    described: &mut Option<(u64, Vec<Variable>)>,
    cells_run: u64,
) -> Vec<Variable> {
    if let Some((at, vars)) = described.as_ref() {
        if *at == cells_run {
            return vars.clone();
        }
    }
    let mut vars: Vec<Variable> = ctx
        .variables_and_types()
        .map(|(name, ty)| Variable {
            name: name.to_string(),
            ty: ty.to_string(),
            tensor: None,
        })
        .collect();
    vars.sort();
    let tensors: Vec<&str> = vars
        .iter()
        .filter(|v| is_tensor_type(&v.ty))
        .map(|v| v.name.as_str())
        .collect();
    if tensors.is_empty() {
        return vars;
    }
    let args: Vec<String> = tensors.iter().map(|n| format!("({n:?}, &{n})")).collect();
    let code = format!(
        "tensorbook::notebook::describe_variables(&[{}]);",
        args.join(", ")
    );
    report.lock().unwrap_or_else(|e| e.into_inner()).variables = None;
    let ran = ctx.execute(&code);
    flush();
    let json = report
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .variables
        .take();
    let entries: Vec<serde_json::Value> = match (ran, json) {
        (Ok(_), Some(json)) => serde_json::from_str(&json).unwrap_or_default(),
        (Err(e), _) => {
            log_line(&format!(":vars could not describe the tensors: {e}"));
            Vec::new()
        }
        (Ok(_), None) => Vec::new(),
    };
    for var in vars.iter_mut().filter(|v| is_tensor_type(&v.ty)) {
        let entry = entries.iter().find(|e| e["name"] == var.name.as_str());
        var.tensor = Some(match entry {
            Some(entry) => tensor_summary(entry),
            None => "(could not be described)".into(),
        });
    }
    *described = Some((cells_run, vars.clone()));
    vars
}

/// Byte offsets where evcxr's completion range lies, clamped to char boundaries of `code`.
fn clamp(code: &str, mut at: usize) -> usize {
    at = at.min(code.len());
    while !code.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn run(
    rx: mpsc::Receiver<Request>,
    sink: OutputSink,
    child_slot: Arc<Mutex<Option<Arc<Mutex<Child>>>>>,
    busy: Arc<AtomicBool>,
    cache: Option<Arc<SessionDir>>,
) {
    // A session that finds the shared build copies it; the first one builds it (below).
    let claim = cache.as_ref().and_then(|dir| match dir.fill() {
        Ok(Fill::FromTemplate | Fill::Alone) => None,
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
    let started = evcxr::CommandContext::new().and_then(|(mut ctx, outputs)| {
        forward(
            outputs.stdout,
            outputs.stderr,
            flush_rx,
            Arc::clone(&sink),
            report_slot,
        );
        ctx.execute(&prelude())?;
        Ok(ctx)
    });
    if let (Ok(_), Some(dir), Some(lock)) = (&started, &cache, claim) {
        if let Err(e) = dir.publish(lock) {
            log_line(&format!(
                "could not publish the runtime build for later sessions: {e}"
            ));
        }
    }
    let mut ctx = match started {
        Ok(ctx) => ctx,
        Err(e) => {
            let error = CellError {
                ename: "EngineStartFailed".into(),
                evalue: format!("evcxr could not start: {e}"),
                traceback: e.to_string().lines().map(str::to_string).collect(),
            };
            for request in rx {
                match request {
                    Request::Execute(_, _, tx) => drop(tx.send(Err(error.clone()))),
                    Request::Complete(_, _, tx) => drop(tx.send(Err(error.evalue.clone()))),
                    Request::Inspect(_, _, tx) => drop(tx.send(Err(error.evalue.clone()))),
                    Request::Vars(tx) => drop(tx.send(Vec::new())),
                }
            }
            return;
        }
    };
    *child_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctx.process_handle());
    warm_analysis(&mut ctx);
    // Tensor descriptions for `:vars`, valid until the next cell runs.
    let mut described: Option<(u64, Vec<Variable>)> = None;
    let mut cells_run: u64 = 0;
    for request in rx {
        match request {
            Request::Execute(code, input, tx) => {
                cells_run += 1;
                *report.lock().unwrap_or_else(|e| e.into_inner()) = CellReport::default();
                let before: Vec<String> = ctx
                    .variables_and_types()
                    .map(|(name, _)| name.to_string())
                    .collect();
                BUILD_STOPPED.store(false, Ordering::SeqCst);
                busy.store(true, Ordering::SeqCst);
                let mut callbacks = evcxr::EvalCallbacks {
                    input_reader: &|request| match &input {
                        Some(reader) => reader(request.prompt, request.is_password),
                        None => String::new(),
                    },
                };
                let result = ctx.execute_with_callbacks(&code, &mut callbacks);
                busy.store(false, Ordering::SeqCst);
                let mut restarted = false;
                let result = result
                    .map(|out| {
                        let mut data: CellData = out.content_by_mime_type.into_iter().collect();
                        data.sort();
                        // A cell ending in a block or `if` evaluates to `()`: nothing to show.
                        if data.len() == 1 && data[0].0 == "text/plain" && data[0].1.trim() == "()"
                        {
                            data.clear();
                        }
                        data
                    })
                    .map_err(|e| {
                        let mut error = cell_error(e);
                        if BUILD_STOPPED.load(Ordering::SeqCst) {
                            error.ename = "Interrupted".into();
                            error.evalue = "the build was interrupted; the cell did not run".into();
                        }
                        if error.ename == "EvaluationProcessTerminated" {
                            restarted = true;
                            explain_restart(&mut error, &before);
                        }
                        error
                    });
                if restarted {
                    // The new process needs its output flusher again (the prelude's `use`s and
                    // `:dep`s are kept by evcxr itself).
                    if let Err(e) = ctx.execute(OUTPUT_FLUSHER) {
                        log_line(&format!("output flusher not restarted: {e}"));
                    }
                }
                // evcxr may have restarted its process: keep interrupt pointed at the live one.
                *child_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(ctx.process_handle());
                flush();
                let cell = std::mem::take(&mut *report.lock().unwrap_or_else(|e| e.into_inner()));
                let result = match (result, cell.panic, cell.user_error) {
                    (Ok(_), Some(report), _) => Err(CellError {
                        ename: "Panic".into(),
                        evalue: report.message.join("\n"),
                        traceback: std::iter::once(report.location)
                            .chain(report.message)
                            .collect(),
                    }),
                    (Ok(_), None, Some(lines)) => Err(user_error(lines)),
                    (other, _, _) => other,
                };
                let _ = tx.send(result);
            }
            Request::Complete(code, pos, tx) => {
                let answer = ctx
                    .completions(&code, clamp(&code, pos))
                    .map(|c| CompletionAnswer {
                        matches: c.completions.into_iter().map(|c| c.code).collect(),
                        start: clamp(&code, c.start_offset),
                        end: clamp(&code, c.end_offset),
                    })
                    .map_err(|e| e.to_string());
                let _ = tx.send(answer);
            }
            Request::Inspect(code, pos, tx) => {
                let _ = tx.send(
                    ctx.hover_at(&code, clamp(&code, pos))
                        .map_err(|e| e.to_string()),
                );
            }
            Request::Vars(tx) => {
                let vars = describe(&mut ctx, &report, &flush, &mut described, cells_run);
                let _ = tx.send(vars);
            }
        }
    }
}
