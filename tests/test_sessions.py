"""Several sessions at once share one build of the runtime without clashing."""
import pathlib
import subprocess

from jupyter_client.manager import start_new_kernel

from conftest import BINARY, FIRST_CELL_TIMEOUT, install, run_cell, stdout_of


def test_two_kernels_started_at_once_both_work():
    sessions = [start_new_kernel(kernel_name="tensorbook", startup_timeout=60) for _ in range(2)]
    try:
        for i, (_, kc) in enumerate(sessions):
            reply, outputs = run_cell(
                kc,
                f'let t = Tensor::iota(DType::S32, &[3], None)?.add({i})?;\nprintln!("{{:?}}", t.to_vec::<i32>()?);',
                timeout=FIRST_CELL_TIMEOUT,
            )
            assert reply["content"]["status"] == "ok", reply["content"]
            assert stdout_of(outputs).strip() == f"[{i}, {i + 1}, {i + 2}]"
    finally:
        for km, kc in sessions:
            kc.stop_channels()
            km.shutdown_kernel(now=False)


def test_a_finished_session_leaves_no_directory_behind():
    import os

    evcxr = pathlib.Path(os.environ["TENSORBOOK_CACHE_DIR"]) / "evcxr"
    before = {p.name for p in evcxr.glob("session-*")}
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    try:
        reply, _ = run_cell(kc, "let a = 1;", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok"
        assert len({p.name for p in evcxr.glob("session-*")} - before) == 1
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    assert {p.name for p in evcxr.glob("session-*")} - before == set()


def test_a_killed_kernels_directories_are_removed_by_the_next_kernel():
    import os
    import tempfile

    evcxr = pathlib.Path(os.environ["TENSORBOOK_CACHE_DIR"]) / "evcxr"
    temp = pathlib.Path(tempfile.gettempdir())
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    pid = km.provisioner.process.pid
    try:
        reply, _ = run_cell(kc, "let a = 1;", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        # SIGKILL: the kernel gets no chance to clean up.
        km.shutdown_kernel(now=True)
    left = list(evcxr.glob(f"session-{pid}-*")) + list(temp.glob(f"tensorbook-kernel-{pid}-*"))
    assert len(left) == 2, left

    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    try:
        reply, _ = run_cell(kc, "let a = 1;", timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok"
        assert [path for path in left if path.exists()] == []
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def test_an_absent_default_client_is_a_warning_in_the_first_cell():
    """TENSORBOOK_CLIENT (a kernelspec's `--client`) naming a client that is not here is not
    passed over in silence: the first cell says so, and the session runs on host:0."""
    # A kernelspec that names host:9 (this machine has host:0 and host:1).
    install("--name", "tensorbook-host9", "--client", "host:9")
    km, kc = start_new_kernel(kernel_name="tensorbook-host9", startup_timeout=60)
    try:
        reply, outputs = run_cell(kc, 'println!("{}", tensorbook::default_device());',
                                  timeout=FIRST_CELL_TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
        stderr = "".join(m["content"]["text"] for m in outputs
                         if m["msg_type"] == "stream" and m["content"]["name"] == "stderr")
        assert "warning" in stderr and "host:9" in stderr and "TENSORBOOK_CLIENT" in stderr, outputs
        assert stdout_of(outputs).strip() == "host:0", outputs
        # Said once, not before every cell.
        reply, outputs = run_cell(kc, "let b = 2;")
        assert not [m for m in outputs if m["msg_type"] == "stream" and m["content"]["name"] == "stderr"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        subprocess.run([str(BINARY), "kernel", "uninstall", "--name", "tensorbook-host9"],
                       capture_output=True)
