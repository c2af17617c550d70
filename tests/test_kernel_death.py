"""The session outlives the kernel's own death. A kernel killed with SIGKILL (as the OOM killer
does) and started again by jupyter_client on the same connection file takes its session back
from the session keeper: the first cell finds a tensor (same values), a number and a String
defined before the kill, with a message naming what was restored and what was lost. A session
that ends normally leaves nothing: no keeper process, no socket, nothing in /dev/shm or the
temporary directory.

The keeper is found by its command line (`tensorbook kernel keep --socket ...`)."""
import asyncio
import glob
import json
import os
import socket as unix_socket
import signal
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import KernelManager

from conftest import FIRST_CELL_TIMEOUT, TIMEOUT, run_cell, stdout_of

SETUP = """let t = Tensor::from_vec(vec![1.5f32, -2.0, 3.25, 4.0, 5.5, 6.0], &[2, 3])?;
let n: i64 = 1234567;
let s = String::from("survives the kernel");
let big = Tensor::iota(DType::F32, &[1 << 20], None)?;
let handle = std::fs::File::open("/dev/null")?;"""

READ_BACK = 'println!("{:?} {} {} {}", t.to_vec::<f32>()?, n, s, big.sum(..)?.to_vec::<f32>()?[0]);'


def keepers():
    """pid -> command line of every session keeper running."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"keep" in argv and b"--socket" in argv and state != "Z":
            found[int(pid)] = argv
    return found


def shm_entries():
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def start():
    km = KernelManager(kernel_name="tensorbook")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc


def wait_gone(pid, within):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


def foreign_attach(path, attempt):
    """Attaches to a keeper as a process that does not know the key: the keeper's answer."""
    with unix_socket.socket(unix_socket.AF_UNIX, unix_socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(path)
        lines = s.makefile("rwb")
        challenge = json.loads(lines.readline())
        assert challenge["type"] == "challenge" and len(challenge["nonce"]) >= 32, challenge
        lines.write((json.dumps(attempt) + "\n").encode())
        lines.flush()
        answer = json.loads(lines.readline())["type"]
        # Refused, and let go of: no record or descriptor came this way.
        assert lines.readline() == b""
        return answer


def test_a_killed_kernel_restarted_on_its_connection_file_gives_the_session_back():
    shm_before = shm_entries()
    keepers_before = set(keepers())
    km, kc = start()
    try:
        reply, outputs = run_cell(kc, SETUP, timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        reply, outputs = run_cell(kc, READ_BACK)
        before = stdout_of(outputs)
        assert "survives the kernel" in before, outputs
        mine = set(keepers()) - keepers_before
        assert len(mine) == 1, keepers()
        my_sockets = [argv[argv.index(b"--socket") + 1].decode()
                      for pid, argv in keepers().items() if pid in mine]
        assert len(my_sockets) == 1 and os.path.exists(my_sockets[0]), my_sockets
        # The socket's directory is private to this user, and a process that finds the socket
        # but does not know the connection's key cannot take the session.
        assert os.stat(os.path.dirname(my_sockets[0])).st_mode & 0o077 == 0
        for attempt in ({"type": "attach"}, {"type": "attach", "proof": "00" * 32}):
            assert foreign_attach(my_sockets[0], attempt) == "refused"
        reply, outputs = run_cell(kc, READ_BACK)
        assert stdout_of(outputs) == before, outputs
        connection_file = km.connection_file
        old_pid = km.provisioner.pid

        os.kill(old_pid, signal.SIGKILL)
        assert wait_gone(old_pid, 20)
        # What jupyter_client's restarter does when it finds the kernel dead.
        km.restart_kernel(now=True)
        assert km.connection_file == connection_file
        assert km.provisioner.pid != old_pid
        kc.wait_for_ready(timeout=60)

        reply, outputs = run_cell(kc, READ_BACK, timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert stdout_of(outputs) == before, outputs
        notice = "".join(
            m["content"]["text"] for m in outputs
            if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"
        )
        assert "restarted" in notice and "variables restored" in notice, notice
        for name in ("t (f32[2][3]", "n (i64)", "s (String)", "big (f32[1048576]"):
            assert name in notice, notice
        assert "lost: handle" in notice, notice
        # The same keeper serves the new kernel; the session goes on as before.
        assert set(keepers()) - keepers_before == mine
        reply, outputs = run_cell(kc, 'let s2 = format!("{s}!"); s2.len()')
        assert reply["content"]["status"] == "ok", reply["content"]
        new_pid = km.provisioner.pid
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    # A normal shutdown ends the session: its keeper and everything it held are gone.
    for pid in mine:
        assert wait_gone(pid, 20), keepers()
    assert not (set(keepers()) - keepers_before)
    # This session's keeper socket is gone, whatever other sessions' keepers still hold.
    for socket in my_sockets:
        assert not os.path.exists(socket), socket
    assert shm_entries() <= shm_before, shm_entries() - shm_before
    # The kernel's own directories (state and session) go with it.
    assert wait_gone(new_pid, 20)
    leftovers = glob.glob(os.path.join(tempfile.gettempdir(), f"tensorbook-*-{new_pid}-*"))
    assert not leftovers, leftovers


def test_a_restart_asked_for_is_a_fresh_session():
    km, kc = start()
    try:
        reply, _ = run_cell(kc, "let asked = 7;", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        km.restart_kernel(now=False)
        kc.wait_for_ready(timeout=60)
        reply, outputs = run_cell(kc, "asked", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "error", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def test_a_keeper_whose_kernel_never_comes_back_ends_after_the_grace_period():
    keepers_before = set(keepers())
    km = KernelManager(kernel_name="tensorbook")
    km.start_kernel(env=dict(os.environ, TENSORBOOK_SESSION_GRACE="2"))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        reply, _ = run_cell(kc, "let v = vec![1u8; 3];", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        mine = set(keepers()) - keepers_before
        assert len(mine) == 1
        sockets = [argv[argv.index(b"--socket") + 1].decode() for pid, argv in keepers().items() if pid in mine]
        os.kill(km.provisioner.pid, signal.SIGKILL)
        for pid in mine:
            assert wait_gone(pid, 2 + TIMEOUT / 4), keepers()
        for socket in sockets:
            assert not os.path.exists(socket), socket
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


async def _cell(kc, code, timeout=TIMEOUT):
    """Runs `code` on an async client: (reply, iopub messages up to idle)."""
    msg_id = kc.execute(code)
    while True:
        reply = await kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    outputs = []
    while True:
        msg = await kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        outputs.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return reply, outputs


async def _killed_and_auto_restarted():
    from jupyter_client.ioloop import AsyncIOLoopKernelManager

    km = AsyncIOLoopKernelManager(kernel_name="tensorbook")
    await km.start_kernel()
    # jupyter_client's own restarter, as Jupyter Server runs it: it polls the kernel and
    # starts it again on the same connection file when it finds it dead.
    km.start_restarter()
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        reply, _ = await _cell(kc, SETUP, timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        reply, outputs = await _cell(kc, READ_BACK)
        before = stdout_of(outputs)
        old_pid = km.provisioner.pid
        os.kill(old_pid, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while km.provisioner is None or km.provisioner.pid == old_pid:
            assert time.monotonic() < deadline, "the restarter did not start the kernel again"
            await asyncio.sleep(0.2)
        await kc.wait_for_ready(timeout=60)
        reply, outputs = await _cell(kc, READ_BACK, timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert stdout_of(outputs) == before, outputs
    finally:
        km.stop_restarter()
        kc.stop_channels()
        await km.shutdown_kernel(now=False)


def test_jupyter_clients_auto_restarter_brings_the_session_back():
    # In a Python of its own: the restarter needs asyncio and tornado's loop, whose zmq sockets
    # must not outlive it into this process's teardown.
    done = subprocess.run(
        [sys.executable, __file__, "auto-restart"],
        cwd=os.path.dirname(os.path.abspath(__file__)),
        capture_output=True,
        text=True,
        timeout=FIRST_CELL_TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "session back after the auto-restart" in done.stdout, done.stdout + done.stderr


if __name__ == "__main__" and sys.argv[1:] == ["auto-restart"]:
    asyncio.run(_killed_and_auto_restarted())
    print("session back after the auto-restart")
