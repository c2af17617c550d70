"""Fixtures that run the real `tensorbook` kernel through jupyter_client.

The kernelspec is written by `tensorbook kernel install --prefix` into a temporary directory
that JUPYTER_PATH points at, so every test also exercises the install command.
"""
import gc
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest
import zmq
import zmq.utils.garbage as zmq_garbage
from jupyter_client.client import KernelClient
from jupyter_client.manager import start_new_kernel

ROOT = pathlib.Path(__file__).resolve().parent.parent
BINARY = pathlib.Path(os.environ.get("TENSORBOOK_BIN", ROOT / "target" / "debug" / "tensorbook"))
# The first cell of a session waits for evcxr to start and to build the runtime once.
FIRST_CELL_TIMEOUT = 900
TIMEOUT = 120

_prefix = tempfile.mkdtemp(prefix="tensorbook-spec-")
os.environ["JUPYTER_PATH"] = os.path.join(_prefix, "share", "jupyter")
os.environ["TENSORBOOK_HISTORY_DIR"] = os.path.join(_prefix, "history")
os.environ.setdefault("TENSORBOOK_HOST_DEVICES", "2")
# The runtime build every session copies (kernel/src/build_cache.rs), built once by the first
# test that starts a kernel. Outside the repository (cargo would take the session crates for
# members of this workspace), and under $HOME like a user's ~/.cache/tensorbook: beside a
# rustup toolchain in $HOME is where cell libraries once failed to load.
os.environ.setdefault("TENSORBOOK_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "tensorbook-test"))


def install(*args):
    if not BINARY.exists():
        pytest.exit(f"{BINARY} is missing: build it first (cargo build)", returncode=2)
    return subprocess.run(
        [str(BINARY), "kernel", "install", "--prefix", _prefix, *args],
        check=True,
        capture_output=True,
        text=True,
    )


install()


def pytest_sessionfinish(session, exitstatus):
    shutil.rmtree(_prefix, ignore_errors=True)


def pytest_unconfigure(config):
    # A client whose channels still run has a heartbeat thread polling its socket: closing the
    # socket under it aborts libzmq ("pfd.revents & POLLIN", signaler.cpp), so stop those first.
    for obj in gc.get_objects():
        if isinstance(obj, KernelClient) and obj.channels_running:
            obj.stop_channels()
    # pyzmq's garbage collector has a thread polling a socket of its own context: stop it the
    # way it stops itself at exit, before its context is destroyed under it below (the same
    # abort; it showed in about one run in three).
    zmq_garbage.gc.stop()
    # jupyter_client leaves some sockets unclosed in its contexts; pyzmq's Context.__del__ then
    # blocks in zmq_ctx_term at interpreter exit and pytest never returns (CI ran into its time
    # limit after "33 passed"). Close every context's sockets ourselves, without lingering.
    for obj in gc.get_objects():
        if isinstance(obj, zmq.Context) and not obj.closed:
            obj.destroy(linger=0)


def session_with(setup):
    """A module's kernel whose first cell is `setup`: yields (km, kc), shuts it down after."""
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    reply, _ = run_cell(kc, setup, timeout=FIRST_CELL_TIMEOUT)
    assert reply["content"]["status"] == "ok", reply["content"]
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def error_of(reply, outputs):
    """The error content of a failed cell, checked to match its iopub error message."""
    content = reply["content"]
    assert content["status"] == "error", content
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert errors and errors[0]["ename"] == content["ename"], (errors, content)
    return content


def run_cell(kc, code, timeout=TIMEOUT, **kwargs):
    """Executes `code` and returns (reply, iopub messages up to idle)."""
    msg_id = kc.execute(code, **kwargs)
    reply = kc.get_shell_msg(timeout=timeout)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=timeout)
    return reply, iopub_until_idle(kc, msg_id, timeout=timeout)


def iopub_until_idle(kc, msg_id, outputs=None, timeout=TIMEOUT):
    """The iopub messages of request `msg_id` up to its idle status, after `outputs`."""
    outputs = [] if outputs is None else outputs
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        outputs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return outputs


def wait_printed(kc, msg_id, text, seen, others=None, timeout=TIMEOUT):
    """Reads iopub until request `msg_id` has printed `text`; keeps its messages in `seen`
    and, when given, what other requests caused in `others`."""
    deadline = time.monotonic() + timeout
    while text not in stdout_of(seen):
        assert time.monotonic() < deadline, f"{text!r} never printed: {seen}"
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            seen.append(msg)
        elif others is not None:
            others.append(msg)


def stdout_of(outputs):
    return "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def started_kernel():
    """A new kernel past its first (slow) cell, for a fixture to yield and then close."""
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    reply, _ = run_cell(kc, "let warm_up = 1;", timeout=FIRST_CELL_TIMEOUT)
    assert reply["content"]["status"] == "ok", reply["content"]
    yield km, kc
    kc.stop_channels()
    km.shutdown_kernel(now=False)


@pytest.fixture(scope="session")
def kernel():
    yield from started_kernel()


def shell_replies(kc, msg_ids, timeout=TIMEOUT):
    """Replies to every id in msg_ids, whatever order they arrive in."""
    replies = {}
    while set(msg_ids) - set(replies):
        reply = kc.get_shell_msg(timeout=timeout)
        replies[reply["parent_header"].get("msg_id")] = reply
    return [replies[i] for i in msg_ids]


def shell_reply(kc, msg_id, timeout=TIMEOUT):
    """The reply to msg_id (other replies on the way are dropped)."""
    return shell_replies(kc, [msg_id], timeout)[0]


def standard_library_source():
    """The toolchain's library source (rustup's rust-src, which install/rust-src.sh adds), or
    None."""
    sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    library = pathlib.Path(sysroot) / "lib" / "rustlib" / "src" / "rust" / "library"
    return library if (library / "Cargo.toml").is_file() else None
