//! The engine: evaluates cells with evcxr and knows nothing of Jupyter's wire protocol (the
//! `protocol` module turns what it returns into messages). It is evcxr's own split: the
//! evaluation context apart from the Jupyter front.
//!
//! One evcxr `CommandContext` is owned by a dedicated thread ([`evaluation`]). Requests come in
//! over a channel and answers go back on one-shot channels, so the protocol side never blocks
//! on compilation (kernel_info is answered while evcxr is still starting).
//!
//! | module | job |
//! |---|---|
//! | [`evaluation`] | the evcxr thread: prelude, cells, errors, restarts |
//! | [`output`] | demultiplexes the evaluation process's stdout/stderr into output, panics, `?` errors, `:vars` answers |
//! | [`process`] | control of the processes a cell involves: stopping builds, interrupting the cell |
//! | [`evaluation_process`] | the set-up of the evaluation process itself (the same binary) |
//! | [`build_cache`], [`leftovers`] | the shared runtime build and removal of dead kernels' directories |
//! | [`state_dir`] | the kernel's state directory: session file, display and keep sockets |
//! | [`vault`] | the variables kept through a restart of the evaluation process, and the cell that restores them |
//! | [`keeper`] | the session keeper: a process that holds the vault's copy while a killed kernel is restarted |
//! | [`variables`] | `:vars`' descriptions |
//! | [`commands`] | session commands answered without compiling (`:client`, `:clients`, `:help`) |
//! | [`text_limits`] | what the kernel agrees to parse: a cell's size and nesting, the parsing threads' stacks |

pub mod build_cache;
pub mod commands;
pub mod compile_report;
pub mod evaluation;
pub mod evaluation_process;
pub mod keeper;
pub mod leftovers;
pub mod outcome;
pub mod output;
pub mod private_dir;
pub mod process;
pub mod runtime_location;
pub mod session;
pub mod state_dir;
pub mod text_limits;
pub mod variables;
pub mod vault;

use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use tokio::sync::oneshot;

use build_cache::SessionDir;
use commands::Command;
pub use outcome::{CellFailure, EngineFailure};
pub use variables::Variable;

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

/// What a successful cell produced: its final value as a mime bundle (may be empty).
pub type CellData = Vec<(String, String)>;

/// A completion answer, in byte offsets of the cell.
pub struct CompletionAnswer {
    /// Candidates: the type's own items first, then those of traits.
    pub matches: Vec<String>,
    /// For each candidate, its kind (`function`, `module`, ...) and signature, for JupyterLab's
    /// `_jupyter_types_experimental` metadata.
    pub types: Vec<(String, String)>,
    /// Start of the replaced range.
    pub start: usize,
    /// End of the replaced range.
    pub end: usize,
}

/// A session taken back from the keeper of a kernel that was killed: the vault already holds
/// its records; the engine binds its variables again after the prelude.
pub struct Revival {
    /// The session's variables as the killed kernel's evcxr knew them.
    pub variables: Vec<vault::Variable>,
    /// What could not be taken back beyond variables (an unavailable default client).
    pub notes: Vec<String>,
}

impl Revival {
    /// Puts a keeper's snapshot into the vault and the session default into place.
    pub fn adopt(vault: &vault::Vault, snapshot: keeper::Snapshot) -> Revival {
        let mut notes = Vec::new();
        if let Some(client) = &snapshot.default_client {
            let applied = tensorbook::ClientSpec::parse(client).and_then(|s| s.apply());
            if let Err(e) = applied {
                notes.push(format!(
                    "the session default {client} is unavailable now: {e}"
                ));
            }
        }
        vault.adopt(snapshot.records.into_values());
        Revival {
            variables: snapshot.variables,
            notes,
        }
    }
}

/// Why a completion or inspection has no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnalysisError {
    /// The error class (`CellTooDeep`, `AnalysisPanicked`, ...).
    pub ename: String,
    /// What was wrong, for the user.
    pub evalue: String,
}

impl AnalysisError {
    fn stopped() -> AnalysisError {
        AnalysisError {
            ename: "EngineStopped".into(),
            evalue: "the evaluation engine stopped".into(),
        }
    }
}

impl From<text_limits::Refusal> for AnalysisError {
    fn from(refusal: text_limits::Refusal) -> AnalysisError {
        AnalysisError {
            ename: refusal.ename().into(),
            evalue: refusal.to_string(),
        }
    }
}

/// Answers a cell's request for input (prompt, whether it is a password) with the line typed.
pub type InputReader = Arc<dyn Fn(String, bool) -> String + Send + Sync>;

pub(crate) enum Request {
    Execute(
        String,
        Option<InputReader>,
        oneshot::Sender<Result<CellData, CellFailure>>,
    ),
    Complete(
        String,
        usize,
        oneshot::Sender<Result<CompletionAnswer, AnalysisError>>,
    ),
    Inspect(
        String,
        usize,
        oneshot::Sender<Result<(String, String), AnalysisError>>,
    ),
    Vars(oneshot::Sender<Vec<Variable>>),
    SessionCommand(String, oneshot::Sender<Result<String, String>>),
}

/// Handle to the evaluation thread.
pub struct Engine {
    requests: mpsc::Sender<Request>,
    child: Arc<Mutex<Option<Arc<Mutex<Child>>>>>,
    /// Whether a cell is being built or run.
    busy: Arc<AtomicBool>,
    /// Where output goes (session commands print through it too).
    sink: OutputSink,
}

impl Engine {
    /// Starts the evaluation thread; evcxr and the prelude start in the background and the
    /// first request waits for them.
    pub fn start(
        sink: OutputSink,
        cache: Option<Arc<SessionDir>>,
        vault: Option<Arc<vault::Vault>>,
        revival: Option<Revival>,
        notice: Option<String>,
    ) -> Engine {
        let (tx, rx) = mpsc::channel::<Request>();
        let child: Arc<Mutex<Option<Arc<Mutex<Child>>>>> = Arc::default();
        let child_slot = Arc::clone(&child);
        let busy = Arc::new(AtomicBool::new(false));
        let busy_flag = Arc::clone(&busy);
        // Parsing and analysis run on this thread: its stack holds the deepest tree
        // `text_limits` admits.
        thread::Builder::new()
            .name("evcxr".into())
            .stack_size(text_limits::EVALUATION_STACK)
            .spawn({
                let sink = Arc::clone(&sink);
                move || {
                    let session = evaluation::Start {
                        cache,
                        vault,
                        revival,
                        notice,
                    };
                    evaluation::run(rx, sink, child_slot, busy_flag, session)
                }
            })
            .ok();
        Engine {
            requests: tx,
            child,
            busy,
            sink,
        }
    }

    fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Request) -> oneshot::Receiver<T> {
        let (tx, rx) = oneshot::channel();
        // If the thread is gone the receiver reports it as a closed channel.
        let _ = self.requests.send(make(tx));
        rx
    }

    /// Runs a cell; `input` answers its requests for input (None: they get an empty line).
    /// The kernel's own session commands are answered here, without the evaluation thread.
    pub async fn execute(
        &self,
        code: String,
        input: Option<InputReader>,
    ) -> Result<CellData, CellFailure> {
        if let Err(refusal) = text_limits::check_cell(&code) {
            return Err(CellFailure::Refused(refusal));
        }
        if let Some(command) = commands::parse(&code) {
            let printed = match command {
                Command::Client(arg) => self.session_command(format!("client {arg}")).await,
                Command::Clients => self.session_command("clients".into()).await,
                Command::Vars => Ok(variables::table(&self.vars().await)),
                Command::Help => Ok(commands::HELP.to_string()),
                Command::Quit => Err(commands::QUIT.to_string()),
            };
            return match printed {
                Ok(text) => {
                    (self.sink)(Output::Text(Stream::Stdout, format!("{text}\n")));
                    Ok(Vec::new())
                }
                Err(e) => Err(CellFailure::SessionCommand(e)),
            };
        }
        self.ask(|tx| Request::Execute(code, input, tx))
            .await
            .unwrap_or_else(|_| Err(gone()))
    }

    /// A session command answered in the evaluation process, where the session's state is.
    async fn session_command(&self, command: String) -> Result<String, String> {
        self.ask(|tx| Request::SessionCommand(command, tx))
            .await
            .unwrap_or_else(|_| Err("the evaluation engine stopped".into()))
    }

    /// Completions at a byte offset (clamped to the code and to a char boundary).
    pub async fn complete(
        &self,
        code: String,
        pos: usize,
    ) -> Result<CompletionAnswer, AnalysisError> {
        text_limits::check_analysis(&code)?;
        let pos = text_limits::floor_char_boundary(&code, pos);
        self.ask(|tx| Request::Complete(code, pos, tx))
            .await
            .unwrap_or_else(|_| Err(AnalysisError::stopped()))
    }

    /// Hover information at a byte offset: (plain text, html).
    pub async fn inspect(
        &self,
        code: String,
        pos: usize,
    ) -> Result<(String, String), AnalysisError> {
        text_limits::check_analysis(&code)?;
        let pos = text_limits::floor_char_boundary(&code, pos);
        self.ask(|tx| Request::Inspect(code, pos, tx))
            .await
            .unwrap_or_else(|_| Err(AnalysisError::stopped()))
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
        process::stop_builds();
        let slot = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(child) = slot.as_ref() {
            process::interrupt(&child.lock().unwrap_or_else(|e| e.into_inner()));
        }
        true
    }
}

/// Kernel-side diagnostics go to the kernel's stderr (Jupyter's log), never to a cell.
pub(crate) fn log_line(text: &str) {
    eprintln!("[tensorbook] {text}");
}

fn gone() -> CellFailure {
    CellFailure::Engine {
        kind: EngineFailure::Stopped,
        message: String::new(),
    }
}
