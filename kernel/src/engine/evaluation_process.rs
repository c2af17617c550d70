//! Set-up of the evaluation process: the copy of this binary that evcxr starts to run cells in.
//!
//! Two things evcxr keeps to itself are made visible to the kernel here, before evcxr's own
//! loop takes over the process:
//!
//! * **Interrupts.** SIGINT only raises a flag (published to the runtime, see
//!   `tensorbook::interrupt`), so the kernel can stop a cell at the runtime's next safe point
//!   without killing the process and every variable with it.
//! * **`?` errors.** evcxr reports an `Err` returned through `?` by printing it on stderr and a
//!   private marker on stdout that it consumes itself, so the cell looks successful. stdout is
//!   routed through a pipe read here; on evcxr's marker a `markers::USER_ERROR` line goes to
//!   stderr, where the kernel turns it into the cell's error. The same reader clears a pending
//!   interrupt when a cell completes, so that it cannot leak into the next cell.
//! * **Cells that never reach a safe point.** stdin is relayed too, so this process knows when
//!   a cell runs (from evcxr's `LOAD_AND_RUN` to its completion line). A cell still running
//!   [`GRACE`] after SIGINT (a pure CPU loop, std's sleep) ends the process; evcxr starts a new
//!   one and the kernel reports which variables were lost.
//! * **A kernel that is gone.** stdin is a pipe whose other end only the kernel holds, so it
//!   reaches end of file exactly when the kernel exits, is killed (even by SIGKILL or the OOM
//!   killer) or drops this process. evcxr's own loop reads it only between cells; the relay
//!   reads it all the time and ends the process at once, so a cell spinning in a loop cannot
//!   outlive its kernel and burn a core until reboot.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tensorbook::contract::{env, interrupt_flag, markers};

/// How long a cell may keep running after an interrupt before the process is ended.
pub const GRACE: Duration = Duration::from_secs(2);

/// Exit status of a process ended because its cell ignored an interrupt.
pub const INTERRUPT_EXIT_STATUS: i32 = 130;

/// Where the relays record what the process is doing.
struct CellState {
    /// The runtime's interrupt flag (cleared by the runtime when it stops, and at completion).
    flag: &'static AtomicBool,
    /// Raised by the signal handler for the watchdog, which clears it.
    signalled: AtomicBool,
    /// Cells started (`LOAD_AND_RUN` lines relayed).
    started: AtomicU64,
    /// Cells completed.
    completed: AtomicU64,
}

/// Prepares this process if evcxr started it to run cells; does nothing otherwise. Must run
/// before any other thread exists (it sets environment variables).
pub fn prepare() {
    if !env::in_evaluation_process() {
        return;
    }
    let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    interrupt_flag::publish(flag);
    let state: &'static CellState = Box::leak(Box::new(CellState {
        flag,
        signalled: AtomicBool::new(false),
        started: AtomicU64::new(0),
        completed: AtomicU64::new(0),
    }));
    // SAFETY: the handler only stores to atomics, which is async-signal-safe.
    let handler = unsafe {
        signal_hook_registry::register(libc::SIGINT, move || {
            state.flag.store(true, Ordering::SeqCst);
            state.signalled.store(true, Ordering::SeqCst);
        })
    };
    if let Err(e) = handler {
        eprintln!("[tensorbook] interrupts will restart the evaluation process: {e}");
    }
    if let Err(e) = route_stdin(state) {
        eprintln!("[tensorbook] interrupted cells cannot be stopped: {e}");
        return;
    }
    if let Err(e) = route_stdout(state) {
        eprintln!("[tensorbook] `?` errors will not be reported as errors: {e}");
    }
    let watchdog = std::thread::Builder::new()
        .name("interrupt-watchdog".into())
        .spawn(move || watch(state));
    if let Err(e) = watchdog {
        eprintln!("[tensorbook] interrupted cells cannot be stopped: {e}");
    }
}

/// Ends the process when a cell is still running [`GRACE`] after an interrupt.
fn watch(state: &'static CellState) {
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if !state.signalled.swap(false, Ordering::SeqCst) {
            continue;
        }
        let started = state.started.load(Ordering::SeqCst);
        if state.completed.load(Ordering::SeqCst) >= started {
            // Between cells (evcxr is compiling): the flag stops the next cell at its first op.
            continue;
        }
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline {
            if state.completed.load(Ordering::SeqCst) >= started {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if state.completed.load(Ordering::SeqCst) < started {
            eprintln!(
                "[tensorbook] the cell did not stop within {} s of the interrupt (no runtime call, \
                 print or tensorbook::sleep to stop at): ending the evaluation process",
                GRACE.as_secs()
            );
            std::process::exit(INTERRUPT_EXIT_STATUS);
        }
    }
}

/// Replaces descriptor `fd` with the given end of a new pipe and returns the original
/// descriptor as a file.
fn replace_descriptor(fd: i32, with: &impl AsRawFd) -> std::io::Result<File> {
    // SAFETY: plain descriptor calls on descriptors this process owns; on failure nothing has
    // been replaced.
    let original = unsafe { libc::dup(fd) };
    if original < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if unsafe { libc::dup2(with.as_raw_fd(), fd) } < 0 {
        let e = std::io::Error::last_os_error();
        unsafe { libc::close(original) };
        return Err(e);
    }
    // SAFETY: `original` is a fresh descriptor that nothing else owns.
    Ok(unsafe { File::from_raw_fd(original) })
}

/// Copies `from` to `to` line by line on a thread of its own, showing each line to `watch`
/// before it is passed on.
fn relay(
    name: &str,
    from: impl std::io::Read + Send + 'static,
    mut to: impl Write + Send + 'static,
    watch: impl Fn(&[u8]) + Send + 'static,
    at_end: impl FnOnce() + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let mut lines = BufReader::new(from);
            let mut line = Vec::new();
            loop {
                line.clear();
                match lines.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return at_end(),
                    Ok(_) => {}
                }
                watch(line.strip_suffix(b"\n").unwrap_or(&line));
                if to.write_all(&line).and_then(|_| to.flush()).is_err() {
                    return;
                }
            }
        })?;
    Ok(())
}

fn route_stdin(state: &'static CellState) -> std::io::Result<()> {
    let (reader, writer) = std::io::pipe()?;
    let stdin = replace_descriptor(0, &reader)?;
    drop(reader);
    relay(
        "stdin-relay",
        stdin,
        writer,
        move |line| {
            if line.starts_with(b"LOAD_AND_RUN ") {
                state.started.fetch_add(1, Ordering::SeqCst);
            }
        },
        end_with_the_kernel,
    )
}

/// Exit status of an evaluation process that ended because its kernel was gone.
pub const ORPHANED_EXIT_STATUS: i32 = 129;

/// Ends this process now: its kernel closed stdin or no longer exists. `_exit` rather than
/// `exit`: the main thread may be inside a user's cell, and nothing of this process's state
/// is wanted any more (there is nobody left to read it).
fn end_with_the_kernel() {
    // SAFETY: _exit is async-signal-safe and always allowed; it does not return.
    unsafe { libc::_exit(ORPHANED_EXIT_STATUS) }
}

fn route_stdout(state: &'static CellState) -> std::io::Result<()> {
    let (reader, writer) = std::io::pipe()?;
    let stdout = replace_descriptor(1, &writer)?;
    drop(writer);
    std::thread::Builder::new()
        .name("stdout-relay".into())
        .spawn(move || {
            relay_stdout(reader, stdout, move |line| {
                if line == markers::EVCXR_ERROR_OCCURRED.as_bytes() {
                    // stderr first, then a stdout line saying so: evcxr's end-of-stderr mark
                    // is written by the cell's thread and can reach stderr before this, but
                    // stdout stays in order with the cell's completion.
                    eprintln!("{}", markers::USER_ERROR);
                    return Some(markers::USER_ERROR_FOLLOWS);
                }
                if line == markers::EVCXR_EXECUTION_COMPLETE.as_bytes() {
                    state.flag.store(false, Ordering::SeqCst);
                    state.completed.fetch_add(1, Ordering::SeqCst);
                }
                None
            })
        })?;
    Ok(())
}

/// How long an unfinished line waits for its newline before it is passed on anyway.
const PARTIAL_LINE_WAIT: Duration = Duration::from_millis(50);

/// Copies stdout line by line like [`relay`], and passes on the start of a line that stays
/// unfinished for [`PARTIAL_LINE_WAIT`] (`print!` without a newline) as a
/// `markers::PARTIAL_LINE` line: evcxr passes stdout on line by line, so the text travels as a
/// line of its own and the kernel shows it without a newline. `watch` sees each whole line
/// first and may return a line to send ahead of it.
fn relay_stdout(
    from: std::io::PipeReader,
    mut to: File,
    watch: impl Fn(&[u8]) -> Option<&'static str>,
) {
    use std::io::Read;
    let mut from = from;
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if !pending.is_empty() && !readable(&from, PARTIAL_LINE_WAIT) {
            let mut line = markers::PARTIAL_LINE.as_bytes().to_vec();
            line.append(&mut pending);
            line.push(b'\n');
            if to.write_all(&line).and_then(|_| to.flush()).is_err() {
                return;
            }
            continue;
        }
        let n = match from.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if let Some(ahead) = watch(&line[..line.len() - 1]) {
                if writeln!(to, "{ahead}").is_err() {
                    return;
                }
            }
            if to.write_all(&line).and_then(|_| to.flush()).is_err() {
                return;
            }
        }
    }
}

/// Waits up to `timeout` for data (or the end) on `fd`.
fn readable(fd: &impl AsRawFd, timeout: Duration) -> bool {
    let mut poll = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for a descriptor this process owns.
    let ready = unsafe { libc::poll(&mut poll, 1, timeout.as_millis() as libc::c_int) };
    // An interrupted poll (SIGINT) counts as quiet: at worst a partial line goes out early.
    ready > 0
}
