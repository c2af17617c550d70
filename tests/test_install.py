"""The kernel as `cargo install` leaves it: the binary copied to a directory of its own, a
kernelspec installed by that copy, and the kernel started by jupyter_client from an unrelated
working directory. `TENSORBOOK_RELOCATE_BIN` picks the binary to copy (default: the one the
tests use; a release build works the same way)."""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile

from jupyter_client.manager import start_new_kernel

from conftest import (
    BINARY, FIRST_CELL_TIMEOUT, ROOT, _prefix, run_cell, standard_library_source, stdout_of,
)


def test_a_relocated_binary_installs_a_kernelspec_and_runs_cells():
    source = pathlib.Path(os.environ.get("TENSORBOOK_RELOCATE_BIN", BINARY))
    with tempfile.TemporaryDirectory(prefix="tensorbook-installed-") as home:
        bin_dir = pathlib.Path(home, "bin")
        bin_dir.mkdir()
        relocated = bin_dir / "tensorbook"
        shutil.copy2(source, relocated)
        subprocess.run(
            [str(relocated), "kernel", "install", "--prefix", _prefix, "--name", "tb-relocated",
             "--display-name", "Rust (relocated)", "--client", "host"],
            check=True, capture_output=True, text=True,
        )
        spec = json.loads(pathlib.Path(_prefix, "share/jupyter/kernels/tb-relocated/kernel.json").read_text())
        assert spec["argv"][0] == str(relocated)
        elsewhere = pathlib.Path(home, "work")
        elsewhere.mkdir()
        km, kc = start_new_kernel(kernel_name="tb-relocated", startup_timeout=60, cwd=str(elsewhere))
        try:
            reply, outputs = run_cell(
                kc,
                'let t = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;\n'
                'println!("{}", std::env::current_dir().unwrap().display());\n'
                't.sum(..).unwrap()',
                timeout=FIRST_CELL_TIMEOUT,
            )
            assert reply["content"]["status"] == "ok", reply["content"]
            assert stdout_of(outputs).strip() == str(elsewhere)
            result = [m for m in outputs if m["msg_type"] == "execute_result"]
            assert result and "6" in result[0]["content"]["data"]["text/plain"]
            assert "Backend<host:0>" in result[0]["content"]["data"]["text/plain"]
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=False)
            subprocess.run([str(relocated), "kernel", "uninstall", "--name", "tb-relocated"],
                           capture_output=True)


def test_a_kernel_without_the_runtime_sources_says_where_it_looked():
    env = dict(os.environ, TENSORBOOK_RUNTIME_PATH="/nonexistent/runtime")
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60, env=env)
    try:
        reply, outputs = run_cell(kc, "let x = 1;", timeout=FIRST_CELL_TIMEOUT)
        content = reply["content"]
        assert content["status"] == "error"
        assert content["ename"] == "EngineStartFailed"
        assert "/nonexistent/runtime" in content["evalue"]
        assert "TENSORBOOK_RUNTIME_PATH" in content["evalue"]
        # The kernel keeps serving: kernel_info and session commands still answer.
        kc.kernel_info()
        assert kc.get_shell_msg(timeout=30)["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def test_kernel_prepare_leaves_the_runtime_build_ready_and_nothing_else():
    # install/test.sh runs it before the Jupyter tests, so here the cache usually holds the
    # build already and this is the quick path; alone it builds it (minutes).
    evcxr = pathlib.Path(os.environ["TENSORBOOK_CACHE_DIR"]) / "evcxr"
    prepare = subprocess.Popen(
        [str(BINARY), "kernel", "prepare"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    stdout, stderr = prepare.communicate(timeout=FIRST_CELL_TIMEOUT)
    assert prepare.returncode == 0, stderr
    assert "is ready in" in stdout, stdout
    templates = [d for d in evcxr.iterdir() if d.name.startswith("template-") and d.is_dir()]
    assert templates
    if standard_library_source() is not None:
        # rust-analyzer's project model, which sessions copied from the template load without
        # the cargo and rustc processes of a load (vendored evcxr patch 29).
        for template in templates:
            model = json.loads((template / "evcxr-project-model.json").read_text())
            assert (template / "Cargo.toml").read_text() == model["cargo_toml"]
            assert any(p["name"] == "tensorbook" for p in model["metadata"]["packages"])
            assert any(p["name"] == "core" for p in model["sysroot_metadata"]["packages"])
    left = [d.name for d in evcxr.iterdir() if d.name.startswith(f"session-{prepare.pid}-")]
    assert not left, f"prepare left its session directory behind: {left}"
    # The first cell of a new kernel starts from that build: no compiling of the runtime.
    km, kc = start_new_kernel(kernel_name="tensorbook", startup_timeout=60)
    try:
        reply, _ = run_cell(kc, "let t = Tensor::iota(DType::F32, &[3], None)?;", timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_kernel_prepare_says_when_there_is_no_cache_to_prepare():
    # A cache inside a cargo project is refused (cargo would take a session for a member).
    inside = ROOT / "target" / "prepare-inside-the-project"
    done = subprocess.run(
        [str(BINARY), "kernel", "prepare"], capture_output=True, text=True, timeout=120,
        env={**os.environ, "TENSORBOOK_CACHE_DIR": str(inside)},
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "unusable" in done.stderr and str(inside) in done.stderr, done.stderr

