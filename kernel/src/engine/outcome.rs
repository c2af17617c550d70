//! What became of a failed cell, in the engine's own terms. The engine decides the kind from
//! what it knows as a fact (evcxr's typed error, the panic guard's report, the `?` marker,
//! whether it stopped a build or sent an interrupt, whether the process had to be restarted),
//! never from the wording of a message; `protocol/` words each kind for Jupyter.

use super::compile_report::CellError;
use super::output::PanicReport;
use super::text_limits::Refusal;
use super::CellData;

/// Why a cell failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellFailure {
    /// rustc refused the cell.
    Compile {
        /// The first error's message.
        summary: String,
        /// Every error, rendered, line by line.
        report: Vec<String>,
    },
    /// The cell panicked.
    Panic {
        /// `thread '...' panicked at src/lib.rs:3:1:`
        location: String,
        /// The panic's message, line by line.
        message: Vec<String>,
    },
    /// The cell returned an `Err` through `?`.
    UserError {
        /// What it printed of the error, line by line.
        lines: Vec<String>,
        /// Where in the cell the `?` is ("cell line 3, column 9: `...`"), when known.
        at: Option<String>,
    },
    /// The cell was interrupted.
    Interrupted(Interruption),
    /// The evaluation process ended during the cell and a new one took its place.
    ProcessDied(ProcessDeath),
    /// The kernel refused the cell's text before any parser saw it.
    Refused(Refusal),
    /// A session command (`:client`, `:clients`, `:quit`) could not be carried out.
    SessionCommand(String),
    /// The engine could not evaluate the cell.
    Engine {
        /// What went wrong in the engine.
        kind: EngineFailure,
        /// Its message.
        message: String,
    },
}

/// How the engine itself failed a cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineFailure {
    /// evcxr did not start (the message says why); no cell can run in this kernel.
    StartFailed,
    /// The evaluation thread is gone.
    Stopped,
    /// The engine panicked on this cell (caught: the session goes on).
    Panicked,
    /// evcxr reported an error of its own (lost variables after a type redefinition, ...).
    Evcxr,
}

/// How a cell was interrupted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interruption {
    /// The build was stopped: the cell did not run.
    Build,
    /// The cell stopped at the runtime's next safe point and returned the interrupt through
    /// `?`: what it printed, line by line.
    Cell(Vec<String>),
}

/// The end of an evaluation process during a cell, and what its successor has back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessDeath {
    /// What evcxr said of the end.
    pub why: String,
    /// True when the kernel sent an interrupt the cell ignored, so the process was ended.
    pub ignored_interrupt: bool,
    /// The variables bound again in the new process, each as `name (type)`.
    pub restored: Vec<String>,
    /// The variables lost, each with the reason.
    pub lost: Vec<String>,
}

impl ProcessDeath {
    /// `variables restored: a (Tensor), ...` or that there were none.
    pub fn restored_text(&self) -> String {
        restored_text(&self.restored)
    }

    /// `variables lost: b, ...` (names only; `lost` has the reasons) or that none were.
    pub fn lost_text(&self) -> String {
        lost_text(&self.lost)
    }
}

/// How a restore's restored variables are named, in a restart's error and a revival's notice.
pub fn restored_text(restored: &[String]) -> String {
    if restored.is_empty() {
        "no variables to restore".to_string()
    } else {
        format!("variables restored: {}", restored.join(", "))
    }
}

/// How a restore's lost variables are named (each entry starts with the name).
pub fn lost_text(lost: &[String]) -> String {
    if lost.is_empty() {
        return "no variables were lost".to_string();
    }
    let names: Vec<&str> = lost
        .iter()
        .map(|l| l.split(' ').next().unwrap_or_default())
        .collect();
    format!("variables lost: {}", names.join(", "))
}

/// What evcxr reported for a cell, reduced to what the classification needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvcxrFailure {
    /// Compilation errors: the first message and the whole rendered report.
    Compile {
        /// The first error's message.
        summary: String,
        /// Every error, line by line.
        report: Vec<String>,
    },
    /// The evaluation process ended.
    ProcessEnded(String),
    /// Anything else evcxr reports.
    Other(String),
}

impl From<evcxr::Error> for EvcxrFailure {
    fn from(error: evcxr::Error) -> EvcxrFailure {
        match error {
            evcxr::Error::CompilationErrors(errors) => {
                let errors: Vec<CellError> = errors.iter().map(CellError::from_evcxr).collect();
                EvcxrFailure::Compile {
                    summary: errors
                        .first()
                        .map(CellError::summary)
                        .unwrap_or_else(|| "compilation failed".into()),
                    report: errors.iter().flat_map(CellError::report).collect(),
                }
            }
            evcxr::Error::SubprocessTerminated(why) => EvcxrFailure::ProcessEnded(why),
            other => EvcxrFailure::Other(other.to_string()),
        }
    }
}

/// What the engine knew when evcxr returned, besides evcxr's own answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signals {
    /// An interrupt stopped the cell's build.
    pub build_stopped: bool,
    /// An interrupt was sent to the evaluation process while the cell ran.
    pub interrupt_sent: bool,
}

/// Step one of a cell's outcome: evcxr's answer and the interrupt signals. A process that
/// ended comes back as [`CellFailure::ProcessDied`] with nothing restored yet: the session
/// restores and fills it in.
pub fn from_evcxr(
    answer: Result<CellData, EvcxrFailure>,
    signals: Signals,
) -> Result<CellData, CellFailure> {
    answer.map_err(|failure| match failure {
        _ if signals.build_stopped => CellFailure::Interrupted(Interruption::Build),
        EvcxrFailure::Compile { summary, report } => CellFailure::Compile { summary, report },
        EvcxrFailure::ProcessEnded(why) => CellFailure::ProcessDied(ProcessDeath {
            why,
            ignored_interrupt: signals.interrupt_sent,
            ..ProcessDeath::default()
        }),
        EvcxrFailure::Other(message) => CellFailure::Engine {
            kind: EngineFailure::Evcxr,
            message,
        },
    })
}

/// Step two: what the evaluation process's stderr said of a cell evcxr ran. A panic report or
/// a `?` error turns a finished cell into a failure; a `?` error after an interrupt is the
/// interrupt.
pub fn with_cell_report(
    result: Result<CellData, CellFailure>,
    panic: Option<PanicReport>,
    user_error: Option<Vec<String>>,
    signals: Signals,
) -> Result<CellData, CellFailure> {
    let data = result?;
    if let Some(report) = panic {
        return Err(CellFailure::Panic {
            location: report.location,
            message: report.message,
        });
    }
    match user_error {
        Some(lines) => {
            let lines: Vec<String> = lines.into_iter().filter(|l| !l.trim().is_empty()).collect();
            Err(if signals.interrupt_sent {
                CellFailure::Interrupted(Interruption::Cell(lines))
            } else {
                CellFailure::UserError { lines, at: None }
            })
        }
        None => Ok(data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Signals = Signals {
        build_stopped: false,
        interrupt_sent: false,
    };

    fn compile() -> EvcxrFailure {
        EvcxrFailure::Compile {
            summary: "cannot find value `x`".into(),
            report: vec!["error[E0425]: cannot find value `x`".into()],
        }
    }

    #[test]
    fn evcxr_answers_become_kinds_by_type_not_by_wording() {
        assert!(matches!(
            from_evcxr(Err(compile()), QUIET),
            Err(CellFailure::Compile { .. })
        ));
        // A message that mentions a panic is still evcxr's error, not a panic of the cell.
        assert_eq!(
            from_evcxr(Err(EvcxrFailure::Other("panic in analysis".into())), QUIET),
            Err(CellFailure::Engine {
                kind: EngineFailure::Evcxr,
                message: "panic in analysis".into()
            })
        );
        assert_eq!(from_evcxr(Ok(vec![]), QUIET), Ok(vec![]));
    }

    #[test]
    fn a_stopped_build_is_an_interrupt_whatever_evcxr_says() {
        let signals = Signals {
            build_stopped: true,
            interrupt_sent: true,
        };
        assert_eq!(
            from_evcxr(Err(compile()), signals),
            Err(CellFailure::Interrupted(Interruption::Build))
        );
    }

    #[test]
    fn a_process_ended_after_an_interrupt_ignored_it() {
        let ended = || Err(EvcxrFailure::ProcessEnded("exit status: 130".into()));
        let Err(CellFailure::ProcessDied(death)) = from_evcxr(
            ended(),
            Signals {
                build_stopped: false,
                interrupt_sent: true,
            },
        ) else {
            panic!("a process death");
        };
        assert!(death.ignored_interrupt && death.restored.is_empty());
        let Err(CellFailure::ProcessDied(death)) = from_evcxr(ended(), QUIET) else {
            panic!("a process death");
        };
        assert!(!death.ignored_interrupt);
    }

    #[test]
    fn the_cell_report_turns_a_finished_cell_into_its_failure() {
        let panic = PanicReport {
            location: "thread 'main' panicked at src/lib.rs:3:1:".into(),
            message: vec!["boom".into()],
        };
        assert_eq!(
            with_cell_report(Ok(vec![]), Some(panic), None, QUIET),
            Err(CellFailure::Panic {
                location: "thread 'main' panicked at src/lib.rs:3:1:".into(),
                message: vec!["boom".into()],
            })
        );
        let printed = || Some(vec!["Error: bad shape".into(), "  ".into()]);
        assert_eq!(
            with_cell_report(Ok(vec![]), None, printed(), QUIET),
            Err(CellFailure::UserError {
                lines: vec!["Error: bad shape".into()],
                at: None
            })
        );
        assert_eq!(
            with_cell_report(
                Ok(vec![]),
                None,
                printed(),
                Signals {
                    build_stopped: false,
                    interrupt_sent: true
                }
            ),
            Err(CellFailure::Interrupted(Interruption::Cell(vec![
                "Error: bad shape".into()
            ])))
        );
        // An earlier failure stands; a clean cell stays clean.
        assert_eq!(
            with_cell_report(
                Err(CellFailure::SessionCommand("x".into())),
                None,
                printed(),
                QUIET
            ),
            Err(CellFailure::SessionCommand("x".into()))
        );
        assert_eq!(
            with_cell_report(
                Ok(vec![("text/plain".into(), "1".into())]),
                None,
                None,
                QUIET
            ),
            Ok(vec![("text/plain".into(), "1".into())])
        );
    }
}
