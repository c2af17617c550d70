"""The GPU check as a user without a GPU meets it, and `tensorbook clients` on a machine with
CUDA 13 libraries but no driver.

The bundle (install/gpu-bundle.sh, built by install/test.sh before pytest and named by
TENSORBOOK_GPU_BUNDLE) must fit the 64 MiB a GPU machine takes, and run.sh must report every
suite skipped with the reason and exit 0 where there is no GPU, or run them where there is one.
Its program's steps are checked here on the simulated accelerator, so the first GPU run is not
the first run of that code."""
import lzma
import json
import os
import pathlib
import subprocess

import pytest

from conftest import BINARY, ROOT

BUNDLE = os.environ.get("TENSORBOOK_GPU_BUNDLE")
LIMIT = 64 * 1024 * 1024


def clients(env=None):
    run = subprocess.run([str(BINARY), "clients", "--json"], capture_output=True, text=True,
                         timeout=60, env=env, check=True)
    return json.loads(run.stdout)


def gpu_here():
    cuda = next(c for c in clients()["clients"] if c["client"] == "cuda")
    return cuda["available"]


@pytest.fixture(scope="module")
def bundle():
    if not BUNDLE:
        pytest.skip("TENSORBOOK_GPU_BUNDLE is not set: install/test.sh builds the bundle "
                    "(bash install/gpu-bundle.sh) and names it")
    path = pathlib.Path(BUNDLE)
    assert (path / "run.sh").is_file(), f"no bundle at {path}"
    return path


def unpacked(bundle, name, into):
    """The bundle's binary `name` (carried xz-packed, as run.sh unpacks it) as an executable in
    `into`."""
    binary = into / name
    binary.write_bytes(lzma.decompress((bundle / "bin" / f"{name}.xz").read_bytes()))
    binary.chmod(0o755)
    return binary


def test_the_bundle_fits_one_device_call(bundle, tmp_path):
    size = sum(f.stat().st_size for f in bundle.rglob("*") if f.is_file())
    assert 0 < size < LIMIT, f"{size} bytes"
    suites = [l.split()[0] for l in (bundle / "suites.txt").read_text().splitlines() if l.strip()]
    assert {"cuda_device", "conformance", "accelerator", "jit"} <= set(suites)
    for name in suites + ["gpu_check"]:
        binary = unpacked(bundle, name, tmp_path)
        # Stripped: no symbol table left.
        symbols = subprocess.run(["nm", str(binary)], capture_output=True, text=True)
        assert "no symbols" in symbols.stderr or not symbols.stdout.strip(), name


def test_run_sh_reports_each_suite_and_writes_one_report_folder(bundle, tmp_path):
    report = tmp_path / "report"
    run = subprocess.run(["bash", str(bundle / "run.sh"), str(report)], capture_output=True,
                         text=True, timeout=1800, cwd=tmp_path)
    summary = (report / "summary.txt").read_text()
    suites = [l.split()[0] for l in (bundle / "suites.txt").read_text().splitlines() if l.strip()]
    files = sorted(p.name for p in report.iterdir())
    assert len(files) <= 8 and all(p.is_file() for p in report.iterdir()), files
    assert "tensorbook clients" in (report / "environment.txt").read_text()
    figures = json.loads((report / "figures.json").read_text())
    if gpu_here():
        assert run.returncode == 0, run.stdout + run.stderr
        for suite in suites:
            assert f"{suite}: passed" in summary, summary
        assert figures["gpu"] is True
        assert summary.strip().splitlines()[-1] == f"{len(suites) + 1} passed, 0 failed, 0 skipped"
    else:
        # No GPU: each suite said skipped, with the reason; nothing claims a pass.
        assert run.returncode == 0, run.stdout + run.stderr
        for suite in suites + ["gpu_check"]:
            line = next(l for l in summary.splitlines() if l.startswith(f"{suite}:"))
            assert line.startswith(f"{suite}: skipped (no GPU: "), line
            assert "libcuda.so.1" in line, line
        assert summary.strip().splitlines()[-1] == f"0 passed, 0 failed, {len(suites) + 1} skipped"
        assert figures["gpu"] is False and figures["skipped"]


def test_the_gpu_steps_run_on_the_simulated_accelerator(bundle, tmp_path):
    out = tmp_path / "figures.json"
    env = dict(os.environ, TENSORBOOK_SIM_DEVICES="1")
    run = subprocess.run([str(unpacked(bundle, "gpu_check", tmp_path)), "run", str(out), "--device", "sim:0"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    figures = json.loads(out.read_text())
    assert figures["device"] == "sim:0" and figures["gpu"] is True
    steps = {k: v for k, v in figures.items() if isinstance(v, dict) and "ok" in v}
    assert len(steps) == 5 and all(v["ok"] for v in steps.values()), steps
    nb02 = next(v["figures"] for k, v in steps.items() if k.startswith("notebook 02"))
    assert nb02["max_abs_difference_vs_binary"] < 1e-3
    for key in ["launch_only", "synchronised", "with_copy_back"]:
        assert nb02[key]["median_us"] > 0
    assert "FAILED" not in run.stdout


def test_a_bad_device_is_a_usage_error(bundle, tmp_path):
    run = subprocess.run([str(unpacked(bundle, "gpu_check", tmp_path)), "run", "--device", "gpu:zero"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 64 and "--device" in run.stderr


def nvrtc13_dir():
    libs = list((ROOT / ".venv").glob("lib/python3*/site-packages/nvidia/cu13/lib/libnvrtc.so.13"))
    assert libs, "install/python-env.sh installs NVRTC 13 (install/requirements.txt)"
    return libs[0]


def test_clients_name_what_is_missing_beside_cuda_13_libraries():
    """A machine with CUDA 13's libraries in a Python environment (the project's .venv holds
    NVRTC 13 from PyPI) and no driver: cuda is absent because the driver is, and the report
    says that CUDA 13's NVRTC was found there, not that CUDA 12 is needed."""
    nvrtc = nvrtc13_dir()
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}")
    found = clients(env)
    cuda = next(c for c in found["clients"] if c["client"] == "cuda")
    report = found["cuda"]
    if cuda["available"]:
        assert report["driver"]["version"].startswith("CUDA ") and report["gpus"]
        return
    reason = cuda["reason"]
    assert "\n" not in reason
    assert reason.startswith("no NVIDIA driver (libcuda.so.1 not found)"), reason
    assert "NVRTC 13.0 is here" in reason, reason
    assert "CUDA 12" not in reason, reason
    assert report["driver"]["version"] is None and "libcuda.so.1" in report["driver"]["note"]
    assert report["nvrtc"]["version"] == "NVRTC 13.0"
    assert pathlib.Path(report["nvrtc"]["path"]).resolve() == nvrtc.resolve()
    # NVRTC 12 is there too and named as such, not used: the newest major is preferred.
    assert any(o.endswith("libnvrtc.so.12") for o in report["nvrtc"]["others"]), report["nvrtc"]
    assert "libcublas.so.13" in report["cublas"]["note"]
    table = subprocess.run([str(BINARY), "clients"], capture_output=True, text=True, env=env,
                           timeout=60, check=True).stdout
    assert "NVRTC:  NVRTC 13.0 (" in table and "libnvrtc.so.13" in table, table


def test_a_library_newer_than_the_driver_is_passed_over_with_the_reason(tmp_path):
    """A CUDA 12.4 driver (a stand-in `libcuda.so.1` that answers cuDriverGetVersion with
    12040) beside NVRTC 13 and 12: NVRTC 13 is passed over, named, with the driver it needs,
    and NVRTC 12 is used. A stand-in, because the only real drivers here are on GPU machines."""
    nvrtc13_dir()
    source = tmp_path / "driver.c"
    source.write_text("int cuDriverGetVersion(int *v) { *v = 12040; return 0; }\n"
                      "int cuInit(unsigned flags) { return 0; }\n"
                      "int cuDeviceGetCount(int *n) { *n = 1; return 0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), str(source)],
                   check=True, timeout=60)
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}",
               LD_LIBRARY_PATH=str(tmp_path))
    found = clients(env)
    cuda = next(c for c in found["clients"] if c["client"] == "cuda")
    report = found["cuda"]
    assert report["driver"]["version"] == "CUDA 12.4" or report["driver"]["version"].startswith("CUDA 12.4 ("), report
    assert report["driver"]["path"].endswith("libcuda.so.1")
    assert report["nvrtc"]["version"].startswith("NVRTC 12."), report["nvrtc"]
    note = report["nvrtc"]["note"]
    assert "libnvrtc.so.13 is CUDA 13's and needs driver 580 or newer" in note, note
    # Still unavailable (no cuBLAS here), and the reason says so in one line.
    assert not cuda["available"]
    assert cuda["reason"].startswith("cuBLAS: cuBLAS is not installed"), cuda["reason"]
    assert "\n" not in cuda["reason"]


def test_a_driver_that_does_not_start_is_a_reason_not_a_panic(tmp_path):
    """A stand-in `libcuda.so.1` of CUDA 13 (a container's stub, say) whose cuInit fails and
    which lacks most of the driver API: the reason names the failure in one line, and nothing
    panics (cudarc's bindings would, on the first missing call)."""
    source = tmp_path / "driver.c"
    source.write_text("int cuDriverGetVersion(int *v) { *v = 13000; return 0; }\n"
                      "int cuInit(unsigned flags) { return 100; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp_path / "libcuda.so.1"), str(source)],
                   check=True, timeout=60)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    run = subprocess.run([str(BINARY), "clients", "--json"], capture_output=True, text=True,
                         timeout=60, env=env)
    assert run.returncode == 0 and "panicked" not in run.stderr, run.stderr
    found = json.loads(run.stdout)
    cuda = next(c for c in found["clients"] if c["client"] == "cuda")
    assert cuda["reason"] == "the CUDA driver did not start: status 100", cuda
    assert found["cuda"]["driver"]["version"].startswith("CUDA 13.0")
    assert found["cuda"]["gpus"] == []


def test_run_sh_counts_each_suite_from_its_own_output(tmp_path):
    """A suite that crashes before its summary line is reported as such, not with the counts of
    the suite before it (run.sh once took the last `test result:` line of the whole log)."""
    fake = tmp_path / "bundle"
    (fake / "bin").mkdir(parents=True)
    (fake / "run.sh").write_text((ROOT / "install" / "gpu-check" / "run.sh").read_text())
    (fake / "suites.txt").write_text("passes 1\ncrashes 1\n")
    scripts = {
        # A GPU is "found", so every suite runs.
        "gpu_check": '[ "$1" = probe ] && { echo "cuda  available"; exit 0; }\n'
                     'echo "{}" > "$2"; exit 0',
        "passes": 'echo "test result: ok. 7 passed; 0 failed; 0 ignored"; exit 0',
        "crashes": 'echo "running 3 tests"; kill -SEGV $$',
    }
    for name, body in scripts.items():
        path = fake / "bin" / name
        path.write_text("#!/usr/bin/env bash\n" + body + "\n")
        path.chmod(0o755)
    report = tmp_path / "report"
    run = subprocess.run(["bash", str(fake / "run.sh"), str(report)], capture_output=True,
                         text=True, timeout=120, cwd=tmp_path,
                         env=dict(os.environ, PYTHON="/nonexistent/python"))
    summary = (report / "summary.txt").read_text()
    assert run.returncode != 0, summary
    passes = next(l for l in summary.splitlines() if l.startswith("passes:"))
    crashes = next(l for l in summary.splitlines() if l.startswith("crashes:"))
    assert passes.startswith("passes: passed") and "7 passed" in passes, summary
    assert crashes.startswith("crashes: failed"), summary
    assert "7 passed" not in crashes and "no test result" in crashes, summary
