//! Demultiplexes the evaluation process's output. evcxr hands over stdout and stderr as
//! lines; among the user's text they carry marker lines (see `tensorbook::contract::markers`),
//! evcxr's content blocks, panic reports and `:vars` answers. Text goes to the sink in order,
//! the rest becomes the cell's [`CellReport`].

use std::sync::{mpsc, Arc, Mutex};
use std::thread;

use tensorbook::contract::markers::{
    EVCXR_PANIC_NOTIFICATION, PARTIAL_LINE, USER_ERROR, USER_ERROR_FOLLOWS,
};
use tensorbook::contract::session_command;
use tensorbook::contract::variables::{self, TensorDescription};

use super::{Output, OutputSink, Stream};

/// A panic report seen on the evaluation process's stderr (the panic hook's lines; backtrace
/// frames are evcxr's own, and are dropped). Whether it fails the cell is decided by the cell's
/// boundary, not by the report: a panic the cell or the runtime caught (`catch_unwind`, a
/// joined thread, a serving's partition) is shown as the cell's stderr, and only a panic that
/// unwound out of the cell (evcxr's notification on stdout) becomes the cell's error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PanicReport {
    /// `thread '...' panicked at src/lib.rs:3:1:`
    pub location: String,
    /// The panic message lines.
    pub message: Vec<String>,
}

/// What the evaluation process's stderr said about the current cell, beyond what is shown.
#[derive(Default)]
pub(crate) struct CellReport {
    /// The cell panicked: set at the cell's end, from the boundary's notification and the
    /// last report (see [`PanicReport`]).
    pub panic: Option<PanicReport>,
    /// Panic reports of this cell not yet shown or made the error, oldest first.
    pub panics: Vec<PanicReport>,
    /// evcxr said the cell's code unwound out of the cell.
    pub unwound: bool,
    /// The cell returned an `Err` through `?`: the stderr lines the cell printed up to then
    /// (evcxr prints the error just before its marker).
    pub user_error: Option<Vec<String>>,
    /// stdout said a `?` error's marker is on its way on stderr (see
    /// `markers::USER_ERROR_FOLLOWS`): a flush waits for it.
    pub user_error_follows: bool,
    /// The user's stderr lines of this cell, kept for `user_error` (bounded).
    pub stderr: Vec<String>,
    /// Where the last `?` error of the cell was returned, as evcxr printed it before the
    /// error (`src/lib.rs:41:5`; evcxr patch 19).
    pub user_error_at: Option<String>,
    /// What `tensorbook::notebook::describe_variables` printed, for `:vars`.
    pub variables: Option<Vec<TensorDescription>>,
    /// A session command's answer (`tensorbook_session_command`).
    pub session_command: Option<Result<String, String>>,
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
        let slot = &mut report.panics;
        match self.state {
            StderrState::Normal if line == USER_ERROR => {
                report.user_error = Some(report.stderr.clone());
                None
            }
            StderrState::Normal if line.starts_with(evcxr::CommandContext::USER_ERROR_LOCATION) => {
                let at = &line[evcxr::CommandContext::USER_ERROR_LOCATION.len()..];
                report.user_error_at = Some(at.to_string());
                // The error's own lines start here.
                report.stderr.clear();
                None
            }
            StderrState::Normal
                if line.starts_with("thread '") && line.contains(" panicked at ") =>
            {
                slot.push(PanicReport {
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
                if let Some(report) = slot.last_mut() {
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
    if line == EVCXR_PANIC_NOTIFICATION {
        report.lock().unwrap_or_else(|e| e.into_inner()).unwound = true;
        return;
    }
    if line == USER_ERROR_FOLLOWS {
        report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .user_error_follows = true;
        return;
    }
    if let Some(answer) = session_command::from_line(&line) {
        report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .session_command = Some(answer);
        return;
    }
    if let Some(described) = variables::from_line(&line) {
        report.lock().unwrap_or_else(|e| e.into_inner()).variables = Some(described);
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

/// The text a stdout line stands for: an unfinished line (see [`PARTIAL_LINE`]) goes
/// out as it is, so `print!("loading...")` shows before its newline.
fn stdout_text(line: String) -> String {
    match line.strip_prefix(PARTIAL_LINE) {
        Some(partial) => partial.to_string(),
        None => format!("{line}\n"),
    }
}

/// Forwards the evaluation process's output to the sink as it arrives. A flush request
/// (sent when a cell finishes) drains what is still queued — stderr arrives on its own thread
/// in evcxr, so a short quiet period is awaited — and is acknowledged only after everything was
/// handed to the sink: the cell's output always precedes its result and the idle status.
pub(crate) fn forward(
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
                    // evcxr returns from a cell once its stdout and stderr are in the channels
                    // (vendored patch 13); one short quiet round still lets the output of a
                    // process that died mid-line arrive.
                    let mut quiet = 0;
                    while quiet < 1 {
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
                            thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                    // A `?` error whose stderr marker is still on its way: wait for it
                    // (bounded: a process that died has no more to say).
                    let deadline = std::time::Instant::now() + USER_ERROR_WAIT;
                    while awaiting_user_error(&report) {
                        let left = deadline.saturating_duration_since(std::time::Instant::now());
                        match stderr.recv_timeout(left) {
                            Ok(line) => err.push(line, &report, &sink),
                            Err(_) => break,
                        }
                    }
                    err.release(&sink);
                    settle_panics(&report, &sink);
                    let _ = ack.send(());
                }
                default(HeldStderr::WAIT) => {}
            }
        }
    });
}

/// At a cell's end: when the cell unwound, its last panic report is the cell's error (or a
/// report without text, when a hook of the cell's printed none); every other report was a
/// panic something caught, and is shown as the stderr it was.
fn settle_panics(report: &Mutex<CellReport>, sink: &OutputSink) {
    let mut report = report.lock().unwrap_or_else(|e| e.into_inner());
    let mut panics = std::mem::take(&mut report.panics);
    if std::mem::take(&mut report.unwound) {
        report.panic = Some(panics.pop().unwrap_or_else(|| PanicReport {
            location: "the cell panicked (the panic hook printed no report)".into(),
            message: Vec::new(),
        }));
    }
    drop(report);
    for caught in panics {
        let mut text = caught.location;
        text.push('\n');
        for line in caught.message {
            text.push_str(&line);
            text.push('\n');
        }
        sink(Output::Text(Stream::Stderr, text));
    }
}

/// How long a flush waits for a `?` error's stderr marker that stdout announced.
const USER_ERROR_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Whether stdout announced a `?` error whose stderr marker has not arrived yet.
fn awaiting_user_error(report: &Mutex<CellReport>) -> bool {
    let report = report.lock().unwrap_or_else(|e| e.into_inner());
    report.user_error_follows && report.user_error.is_none()
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
        let is_marker = line == USER_ERROR;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink that records what it is given.
    fn recorder() -> (OutputSink, Arc<Mutex<Vec<Output>>>) {
        let seen: Arc<Mutex<Vec<Output>>> = Arc::default();
        let into = Arc::clone(&seen);
        let sink: OutputSink = Arc::new(move |o| into.lock().unwrap().push(o));
        (sink, seen)
    }

    /// The race the stdout announcement closes: the flush runs before the `?` error's stderr
    /// marker has arrived, and still reports the error.
    #[test]
    fn a_flush_waits_for_an_announced_user_error() {
        let (sink, _seen) = recorder();
        let report = Arc::new(Mutex::new(CellReport::default()));
        let (out_tx, out_rx) = crossbeam_channel::unbounded();
        let (err_tx, err_rx) = crossbeam_channel::unbounded();
        let (flush_tx, flush_rx) = crossbeam_channel::unbounded();
        forward(out_rx, err_rx, flush_rx, sink, Arc::clone(&report));
        out_tx.send(USER_ERROR_FOLLOWS.to_string()).unwrap();
        let (ack_tx, ack_rx) = mpsc::channel();
        flush_tx.send(ack_tx).unwrap();
        thread::sleep(std::time::Duration::from_millis(30));
        err_tx.send("Error: interrupted".into()).unwrap();
        err_tx.send(USER_ERROR.into()).unwrap();
        ack_rx.recv().unwrap();
        let user_error = report.lock().unwrap().user_error.clone();
        assert_eq!(user_error.unwrap().last().unwrap(), "Error: interrupted");
    }

    #[test]
    fn a_panic_report_is_taken_out_of_stderr() {
        let report = Mutex::new(CellReport::default());
        let mut filter = StderrFilter::default();
        let lines = [
            "before",
            "thread '<unnamed>' panicked at src/lib.rs:3:1:",
            "index out of bounds",
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
            "after",
        ];
        let shown: Vec<String> = lines
            .iter()
            .filter_map(|l| filter.line(l.to_string(), &report))
            .collect();
        assert_eq!(shown, vec!["before", "after"]);
        let panic = report.lock().unwrap().panics.last().cloned().unwrap();
        assert_eq!(panic.location, lines[1]);
        assert_eq!(panic.message, vec!["index out of bounds"]);
    }

    fn panic_lines(err: &crossbeam_channel::Sender<String>, message: &str) {
        err.send("thread 'main' panicked at src/lib.rs:3:1:".into())
            .unwrap();
        err.send(message.into()).unwrap();
        err.send(
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace".into(),
        )
        .unwrap();
    }

    /// Runs one cell's output through `forward`: stderr's panic reports, and whether evcxr
    /// said the cell unwound; returns what was shown and the cell's panic.
    fn one_cell(reports: &[&str], unwound: bool) -> (Vec<Output>, Option<PanicReport>) {
        let (sink, seen) = recorder();
        let report = Arc::new(Mutex::new(CellReport::default()));
        let (out_tx, out_rx) = crossbeam_channel::unbounded();
        let (err_tx, err_rx) = crossbeam_channel::unbounded();
        let (flush_tx, flush_rx) = crossbeam_channel::unbounded();
        forward(out_rx, err_rx, flush_rx, sink, Arc::clone(&report));
        for message in reports {
            panic_lines(&err_tx, message);
        }
        out_tx.send("caught true".into()).unwrap();
        if unwound {
            out_tx.send(EVCXR_PANIC_NOTIFICATION.into()).unwrap();
        }
        thread::sleep(std::time::Duration::from_millis(30));
        let (ack_tx, ack_rx) = mpsc::channel();
        flush_tx.send(ack_tx).unwrap();
        ack_rx.recv().unwrap();
        let panic = report.lock().unwrap().panic.clone();
        let shown = seen.lock().unwrap().clone();
        (shown, panic)
    }

    #[test]
    fn a_caught_panic_is_output_and_leaves_the_cell_ok() {
        let (shown, panic) = one_cell(&["x"], false);
        assert_eq!(panic, None);
        assert!(shown.contains(&Output::Text(
            Stream::Stderr,
            "thread 'main' panicked at src/lib.rs:3:1:\nx\n".into()
        )));
        assert!(shown.contains(&Output::Text(Stream::Stdout, "caught true\n".into())));
    }

    #[test]
    fn the_panic_that_unwound_out_of_the_cell_is_its_error() {
        let (shown, panic) = one_cell(&["caught earlier", "the last"], true);
        assert_eq!(panic.unwrap().message, vec!["the last"]);
        let texts: Vec<&Output> = shown
            .iter()
            .filter(|o| matches!(o, Output::Text(Stream::Stderr, _)))
            .collect();
        assert_eq!(texts.len(), 1, "{shown:?}");
        let (_, panic) = one_cell(&[], true);
        assert!(panic.unwrap().location.contains("no report"));
    }

    #[test]
    fn a_question_mark_error_replaces_the_line_that_printed_it() {
        let (sink, seen) = recorder();
        let report = Mutex::new(CellReport::default());
        let mut err = HeldStderr::default();
        err.push("warning: shown".into(), &report, &sink);
        err.push("Error: file missing".into(), &report, &sink);
        err.push(USER_ERROR.into(), &report, &sink);
        err.release(&sink);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![Output::Text(Stream::Stderr, "warning: shown\n".into())]
        );
        let user_error = report.lock().unwrap().user_error.clone().unwrap();
        assert_eq!(user_error.last().unwrap(), "Error: file missing");
    }

    #[test]
    fn stdout_lines_become_text_display_data_or_the_vars_answer() {
        let (sink, seen) = recorder();
        let report = Mutex::new(CellReport::default());
        stdout_line("hello".into(), &report, &sink);
        stdout_line(format!("{PARTIAL_LINE}loading..."), &report, &sink);
        let block = serde_json::json!({ "mime": "text/html", "content": "<b>x</b>" });
        stdout_line(
            format!("{}{block}", evcxr::DISPLAY_DATA_LINE_PREFIX),
            &report,
            &sink,
        );
        let described = variables::to_line(&[TensorDescription {
            name: "t".into(),
            dtype: "f32".into(),
            shape: vec![2],
            device: "host:0".into(),
            bytes: 8,
            deallocated: false,
            other: None,
        }]);
        stdout_line(described, &report, &sink);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                Output::Text(Stream::Stdout, "hello\n".into()),
                Output::Text(Stream::Stdout, "loading...".into()),
                Output::Display {
                    mime: "text/html".into(),
                    content: "<b>x</b>".into()
                },
            ]
        );
        let vars = report.lock().unwrap().variables.clone().unwrap();
        assert_eq!(vars[0].name, "t");
    }
}
