"""No process outlives its kernel: a kernel shut down or killed while a cell spins in a pure CPU
loop leaves neither itself nor its evaluation process (nor anything they started) behind.
Processes are found by walking /proc's parent links from the kernel, whatever their process
group, before the kernel goes; afterwards each must be gone or a zombie.

The one process meant to outlive a killed kernel is its session keeper, which holds the session
for a kernel started again on the same connection file (test_kernel_death.py); it waits
TENSORBOOK_SESSION_GRACE seconds for one, set short here, and counts among the processes that
must then be gone."""
import os
import signal
import time

import pytest
from jupyter_client.manager import start_new_kernel

from conftest import FIRST_CELL_TIMEOUT, TIMEOUT, stdout_of

# Seconds a killed kernel's session keeper waits for the kernel to come back.
KEEPER_GRACE = 2

SPIN = 'println!("spinning");\nlet mut n: u64 = 0;\nloop { n = n.wrapping_add(1); std::hint::black_box(n); }'


def stat(pid):
    """(parent pid, state, start time) of a process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields start after the last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[1]), fields[0], int(fields[19])


def descendants(root):
    """Every process below `root`, as (pid, start time) so that a reused pid is not mistaken."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = stat(int(name))
            if s:
                children.setdefault(s[0], []).append((int(name), s[2]))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child[0])
    return found


def running(procs):
    """The processes of `procs` that still exist and are not zombies."""
    alive = set()
    for pid, start in procs:
        s = stat(pid)
        if s and s[2] == start and s[1] != "Z":
            alive.add((pid, start))
    return alive


def busy_kernel():
    """A kernel whose cell is spinning, its pid, and the processes below it."""
    km, kc = start_new_kernel(
        kernel_name="tensorbook",
        startup_timeout=60,
        env=dict(os.environ, TENSORBOOK_SESSION_GRACE=str(KEEPER_GRACE)),
    )
    msg_id = kc.execute(SPIN)
    outputs = []
    deadline = time.monotonic() + FIRST_CELL_TIMEOUT
    while "spinning" not in stdout_of(outputs):
        assert time.monotonic() < deadline, outputs
        msg = kc.get_iopub_msg(timeout=FIRST_CELL_TIMEOUT)
        if msg["parent_header"].get("msg_id") == msg_id:
            outputs.append(msg)
    pid = km.provisioner.pid
    below = descendants(pid)
    assert below, "the evaluation process should run below the kernel"
    return km, kc, pid, below


def assert_all_gone(procs, within=20):
    deadline = time.monotonic() + within
    while running(procs) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = running(procs)
    assert not left, f"left behind: {[(pid, open(f'/proc/{pid}/cmdline').read()) for pid, _ in left]}"


def test_shutting_down_a_busy_kernel_leaves_no_process_behind():
    km, kc, pid, below = busy_kernel()
    kc.stop_channels()
    km.shutdown_kernel(now=False)
    assert_all_gone(below | {(pid, stat(pid)[2])} if stat(pid) else below)


def test_killing_a_busy_kernel_leaves_no_process_behind():
    km, kc, pid, below = busy_kernel()
    os.kill(pid, signal.SIGKILL)
    try:
        assert_all_gone(below)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_restarting_a_busy_kernel_ends_the_old_evaluation_process():
    km, kc, pid, below = busy_kernel()
    try:
        km.restart_kernel(now=False)
        assert_all_gone(below)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
