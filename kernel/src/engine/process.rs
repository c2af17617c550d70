//! Control of the processes a cell involves: the builds evcxr starts (cargo, or rustc alone
//! between cells) and the evaluation process that runs the cell.
//!
//! An interrupt stops a build at once — every compiler under it is killed and the cell fails,
//! the session untouched — and sends the running cell SIGINT, which the evaluation process
//! turns into the runtime's interrupt flag (see [`super::evaluation_process`]).

use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when an interrupt killed the cell's build, so that its error reads as an interrupt
/// rather than as whatever evcxr made of a compiler that vanished. One engine per process.
static BUILD_STOPPED: AtomicBool = AtomicBool::new(false);
static INTERRUPT_SENT: AtomicBool = AtomicBool::new(false);

/// One row of the process table.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ProcessEntry {
    pid: u32,
    ppid: u32,
    command: String,
}

/// Reads one `/proc/<pid>/stat`: `pid (comm) state ppid ...`. The command may hold spaces
/// and parentheses, so the fields after it are found from the last ')'.
fn parse_stat(stat: &str) -> Option<ProcessEntry> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat[..open].trim().parse().ok()?;
    let command = stat.get(open + 1..close)?.to_string();
    let ppid = stat[close + 1..].split_whitespace().nth(1)?.parse().ok()?;
    Some(ProcessEntry { pid, ppid, command })
}

fn process_table() -> Vec<ProcessEntry> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|stat| parse_stat(&stat))
        .collect()
}

/// The builds started by `parent` (cargo or rustc, its children) and every process under them.
fn builds_under(table: &[ProcessEntry], parent: u32) -> Vec<u32> {
    let mut doomed: Vec<u32> = table
        .iter()
        .filter(|p| p.ppid == parent && (p.command == "cargo" || p.command == "rustc"))
        .map(|p| p.pid)
        .collect();
    let mut i = 0;
    while let Some(&next) = doomed.get(i) {
        doomed.extend(table.iter().filter(|p| p.ppid == next).map(|p| p.pid));
        i += 1;
    }
    doomed
}

fn signal(pid: u32, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: sending a signal has no memory effects in this process.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Kills the builds this process started, so that an interrupt during a long build returns
/// at once; remembers that it did (see [`build_was_stopped`]).
pub fn stop_builds() {
    let doomed = builds_under(&process_table(), std::process::id());
    if !doomed.is_empty() {
        BUILD_STOPPED.store(true, Ordering::SeqCst);
    }
    for pid in doomed {
        signal(pid, libc::SIGKILL);
    }
}

/// Forgets a stopped build and a sent interrupt: called as each cell starts.
pub fn reset_build_stopped() {
    BUILD_STOPPED.store(false, Ordering::SeqCst);
    INTERRUPT_SENT.store(false, Ordering::SeqCst);
}

/// Whether [`stop_builds`] killed a build since the cell started.
pub fn build_was_stopped() -> bool {
    BUILD_STOPPED.load(Ordering::SeqCst)
}

/// Asks the evaluation process to stop its cell at the runtime's next safe point.
/// Remembers that it did (see [`interrupt_was_sent`]).
pub fn interrupt(evaluation_process: &Child) {
    INTERRUPT_SENT.store(true, Ordering::SeqCst);
    signal(evaluation_process.id(), libc::SIGINT);
}

/// Whether [`interrupt`] was called since the cell started.
pub fn interrupt_was_sent() -> bool {
    INTERRUPT_SENT.load(Ordering::SeqCst)
}

/// Raises this process's soft limit on open descriptors to its hard limit. Every host tensor of
/// 1 MiB or more in a notebook is a shared-memory file with a descriptor in the evaluation
/// process, and every kept variable's tensor one in the kernel: a session with a few thousand
/// live tensors would otherwise run into the usual soft limit of 1024 (the runtime then falls
/// back to heap memory, which a restart cannot keep without a copy).
pub fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid pointer to a plain struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: u32, ppid: u32, command: &str) -> ProcessEntry {
        ProcessEntry {
            pid,
            ppid,
            command: command.into(),
        }
    }

    #[test]
    fn stat_lines_with_odd_commands_parse() {
        assert_eq!(
            parse_stat("42 (rustc) S 7 42 42 0 -1"),
            Some(entry(42, 7, "rustc"))
        );
        assert_eq!(
            parse_stat("43 (a b) c)) R 9 1"),
            Some(entry(43, 9, "a b) c)"))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn only_builds_of_this_process_and_their_children_are_stopped() {
        let table = [
            entry(10, 1, "cargo"),      // our build
            entry(11, 10, "rustc"),     // its compiler
            entry(12, 11, "cc"),        // the linker under it
            entry(20, 1, "rustc"),      // rustc run alone (evcxr's replayed command)
            entry(30, 1, "tensorbook"), // the evaluation process: never a build
            entry(40, 2, "cargo"),      // someone else's build
            entry(41, 40, "rustc"),
        ];
        let mut doomed = builds_under(&table, 1);
        doomed.sort();
        assert_eq!(doomed, vec![10, 11, 12, 20]);
    }

    #[test]
    fn this_process_appears_in_the_real_table() {
        let me = std::process::id();
        assert!(process_table().iter().any(|p| p.pid == me));
    }
}
