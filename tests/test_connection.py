"""Any connection file jupyter_client can write works, and any broken one is a one-line error
with a non-zero exit, never a panic: the `ipc` transport (Unix sockets instead of TCP ports),
unknown transports, unresolvable addresses, ports in use, unreadable files."""
import json
import os
import socket
import subprocess
import tempfile

import pytest
from jupyter_client.manager import KernelManager

from conftest import BINARY, FIRST_CELL_TIMEOUT, run_cell, stdout_of


def test_an_ipc_kernel_runs_cells():
    with tempfile.TemporaryDirectory(prefix="tb-ipc-") as tmp:
        km = KernelManager(kernel_name="tensorbook", transport="ipc", ip=os.path.join(tmp, "kernel"))
        km.start_kernel()
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=60)
            reply, outputs = run_cell(
                kc, 'println!("{}", Tensor::iota(DType::S32, &[3], None)?.sum(..)?);',
                timeout=FIRST_CELL_TIMEOUT,
            )
            assert reply["content"]["status"] == "ok", reply["content"]
            assert "3" in stdout_of(outputs)
            assert any(name.startswith("kernel-") for name in os.listdir(tmp))
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)


def connection(**fields):
    info = {
        "shell_port": 0, "iopub_port": 0, "stdin_port": 0, "control_port": 0, "hb_port": 0,
        "ip": "127.0.0.1", "key": "k", "transport": "tcp", "signature_scheme": "hmac-sha256",
    }
    info.update(fields)
    return info


@pytest.fixture(scope="module")
def busy_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    yield s.getsockname()[1]
    s.close()


@pytest.mark.parametrize("what,fields,expected", [
    ("unknown transport", {"transport": "udp"}, "udp"),
    ("unresolvable address", {"ip": "999.1.1.1", "shell_port": 1}, "999.1.1.1"),
    ("ipc path in a missing directory", {"transport": "ipc", "ip": "/nonexistent/dir/k", "shell_port": 1}, "/nonexistent/dir/k"),
    ("not json", None, "invalid connection file"),
    ("port in use", "busy", "in use"),
])
def test_a_bad_connection_file_is_a_one_line_error(tmp_path, busy_port, what, fields, expected):
    path = tmp_path / "connection.json"
    if fields is None:
        path.write_text("{ not json")
    elif fields == "busy":
        path.write_text(json.dumps(connection(shell_port=busy_port)))
    else:
        path.write_text(json.dumps(connection(**fields)))
    done = subprocess.run([str(BINARY), "kernel", "run", "--connection-file", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0, what
    lines = done.stderr.strip().splitlines()
    assert "panicked" not in done.stderr, done.stderr
    assert len(lines) == 1 and expected in lines[0], (what, done.stderr)


def test_an_unreadable_connection_file_is_a_one_line_error(tmp_path):
    done = subprocess.run([str(BINARY), "kernel", "run", "--connection-file", str(tmp_path / "absent.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "absent.json" in done.stderr and "panicked" not in done.stderr
