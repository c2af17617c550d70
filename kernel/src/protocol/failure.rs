//! A failed cell in Jupyter's words: the `ename`, `evalue` and `traceback` of an error reply
//! and of the `error` message on iopub, for each kind of [`CellFailure`] the engine reports.

use crate::engine::evaluation_process::GRACE;
use crate::engine::outcome::{CellFailure, EngineFailure, Interruption, ProcessDeath};

/// The three fields Jupyter shows for a failed cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JupyterError {
    /// The error class (`CompilationError`, `Panic`, `Interrupted`, ...).
    pub ename: String,
    /// One-line summary.
    pub evalue: String,
    /// The readable report, one entry per line.
    pub traceback: Vec<String>,
}

impl JupyterError {
    fn new(ename: &str, evalue: String, traceback: Vec<String>) -> JupyterError {
        JupyterError {
            ename: ename.into(),
            evalue,
            traceback,
        }
    }

    /// The fields as JSON, for a reply or an iopub message.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "ename": self.ename,
            "evalue": self.evalue,
            "traceback": self.traceback,
        })
    }
}

/// How Jupyter shows `failure`.
pub fn jupyter_error(failure: &CellFailure) -> JupyterError {
    match failure {
        CellFailure::Compile { summary, report } => {
            JupyterError::new("CompilationError", summary.clone(), report.clone())
        }
        CellFailure::Panic { location, message } => JupyterError::new(
            "Panic",
            message.join("\n"),
            std::iter::once(location.clone())
                .chain(message.iter().cloned())
                .collect(),
        ),
        CellFailure::UserError { lines, at } => JupyterError::new(
            "Error",
            last_or(lines, "the cell returned an error through `?`"),
            lines
                .iter()
                .cloned()
                .chain(at.iter().map(|at| format!("  at {at}")))
                .collect(),
        ),
        CellFailure::Interrupted(Interruption::Build) => {
            let why = "the build was interrupted; the cell did not run".to_string();
            JupyterError::new("Interrupted", why.clone(), vec![why])
        }
        CellFailure::Interrupted(Interruption::Cell(lines)) => JupyterError::new(
            "Interrupted",
            last_or(lines, "the cell was interrupted"),
            lines.clone(),
        ),
        CellFailure::ProcessDied(death) => process_died(death),
        CellFailure::Refused(refusal) => JupyterError::new(
            refusal.ename(),
            refusal.to_string(),
            vec![
                refusal.to_string(),
                "the cell did not run; the session is unchanged".into(),
            ],
        ),
        CellFailure::SessionCommand(message) => JupyterError::new(
            "SessionCommandError",
            message.clone(),
            vec![message.clone()],
        ),
        CellFailure::Engine { kind, message } => match kind {
            EngineFailure::StartFailed => JupyterError::new(
                "EngineStartFailed",
                message.lines().next().unwrap_or_default().to_string(),
                message.lines().map(str::to_string).collect(),
            ),
            EngineFailure::Stopped => JupyterError::new(
                "EngineStopped",
                "the evaluation engine stopped".into(),
                vec!["the evaluation engine stopped; restart the kernel".into()],
            ),
            EngineFailure::Panicked => JupyterError::new(
                "KernelError",
                format!(
                    "the evaluation engine failed on this cell ({message}); the cell may not \
                     have run, the session goes on"
                ),
                vec![format!(
                    "panic in the kernel's evaluation engine: {message}"
                )],
            ),
            EngineFailure::Evcxr => JupyterError::new(
                "Error",
                message.lines().next().unwrap_or("").to_string(),
                message.lines().map(str::to_string).collect(),
            ),
        },
    }
}

fn last_or(lines: &[String], otherwise: &str) -> String {
    lines.last().cloned().unwrap_or_else(|| otherwise.into())
}

/// Says why the evaluation process ended, which variables the new one has again and which
/// were lost (by name and type); what the kernel owns is still in place.
fn process_died(death: &ProcessDeath) -> JupyterError {
    let (restored, lost) = (death.restored_text(), death.lost_text());
    let (ename, evalue) = if death.ignored_interrupt {
        (
            "Interrupted",
            format!(
                "the cell ignored the interrupt for {} s, so the evaluation process was restarted; {restored}; {lost}",
                GRACE.as_secs()
            ),
        )
    } else {
        (
            "EvaluationProcessTerminated",
            format!("the evaluation process ended and was restarted; {restored}; {lost}"),
        )
    };
    let mut traceback = vec![evalue.clone(), format!("why it ended: {}", death.why)];
    traceback.extend(death.lost.iter().map(|l| format!("lost: {l}")));
    traceback.push(
        "kept: the session default client, :dep crates, use statements, fn/struct items".into(),
    );
    JupyterError::new(ename, evalue, traceback)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_ename() {
        let cases = [
            (
                CellFailure::Compile {
                    summary: "s".into(),
                    report: vec!["r".into()],
                },
                "CompilationError",
            ),
            (
                CellFailure::Panic {
                    location: "at".into(),
                    message: vec!["boom".into()],
                },
                "Panic",
            ),
            (
                CellFailure::UserError {
                    lines: vec!["Error: x".into()],
                    at: Some("cell line 1, column 1".into()),
                },
                "Error",
            ),
            (CellFailure::Interrupted(Interruption::Build), "Interrupted"),
            (
                CellFailure::Interrupted(Interruption::Cell(vec!["Error: interrupted".into()])),
                "Interrupted",
            ),
            (
                CellFailure::ProcessDied(ProcessDeath::default()),
                "EvaluationProcessTerminated",
            ),
            (
                CellFailure::ProcessDied(ProcessDeath {
                    ignored_interrupt: true,
                    ..ProcessDeath::default()
                }),
                "Interrupted",
            ),
            (
                CellFailure::SessionCommand("no".into()),
                "SessionCommandError",
            ),
            (
                CellFailure::Engine {
                    kind: EngineFailure::StartFailed,
                    message: "evcxr could not start".into(),
                },
                "EngineStartFailed",
            ),
            (
                CellFailure::Engine {
                    kind: EngineFailure::Panicked,
                    message: "oops".into(),
                },
                "KernelError",
            ),
        ];
        for (failure, ename) in cases {
            let shown = jupyter_error(&failure);
            assert_eq!(shown.ename, ename, "{failure:?}");
            assert!(!shown.traceback.is_empty(), "{failure:?}");
        }
    }

    #[test]
    fn a_death_names_what_came_back_and_what_was_lost() {
        let shown = jupyter_error(&CellFailure::ProcessDied(ProcessDeath {
            why: "signal: 11 (SIGSEGV)".into(),
            ignored_interrupt: false,
            restored: vec!["a (Tensor)".into()],
            lost: vec!["b (Rc<u8>): not kept".into()],
        }));
        assert_eq!(
            shown.evalue,
            "the evaluation process ended and was restarted; variables restored: a (Tensor); \
             variables lost: b"
        );
        assert!(shown
            .traceback
            .contains(&"why it ended: signal: 11 (SIGSEGV)".to_string()));
        assert!(shown
            .traceback
            .contains(&"lost: b (Rc<u8>): not kept".to_string()));
    }

    #[test]
    fn a_panic_shows_its_message_and_where() {
        let shown = jupyter_error(&CellFailure::Panic {
            location: "thread 'main' panicked at src/lib.rs:3:1:".into(),
            message: vec!["boom after f32[4]".into()],
        });
        assert_eq!(shown.evalue, "boom after f32[4]");
        assert_eq!(
            shown.traceback[0],
            "thread 'main' panicked at src/lib.rs:3:1:"
        );
    }
}
