"""The tutorial notebooks, executed unattended as CI pipelines do it (`jupyter nbconvert
--execute`, in a subprocess like theirs), with assertions on what their outputs show: the
placement signatures, the backends agreeing, the timings table and chart, and no error anywhere.

The executed notebooks are written to target/notebooks/ (like `install/run.sh --headless`)."""
import json
import re
import subprocess
import sys

import nbformat
import pytest

from conftest import BINARY, ROOT

NOTEBOOKS = ROOT / "notebooks"
EXECUTED = ROOT / "target" / "notebooks"


def cuda_here():
    """Whether the kernel's processes find a GPU: `tensorbook clients` in the same environment
    the notebooks' kernels inherit. The notebooks' GPU assertions follow it, so a notebook that
    skips its GPU cells where a GPU is (or claims one where none is) fails."""
    run = subprocess.run([str(BINARY), "clients", "--json"], capture_output=True, text=True,
                         timeout=60, check=True)
    cuda = next(c for c in json.loads(run.stdout)["clients"] if c["client"] == "cuda")
    return cuda["available"], cuda["reason"]


GPU, NO_GPU_REASON = cuda_here()


def execute(name):
    EXECUTED.mkdir(parents=True, exist_ok=True)
    run = subprocess.run(
        [
            sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
            "--ExecutePreprocessor.timeout=900",
            "--ExecutePreprocessor.startup_timeout=120",
            "--output-dir", str(EXECUTED),
            str(NOTEBOOKS / name),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, f"nbconvert failed:\n{run.stderr[-5000:]}"
    return nbformat.read(EXECUTED / name, as_version=4)


def texts(nb):
    """Every output's text (streams, text/plain, text/html, svg) as one list per cell."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            if out["output_type"] == "stream":
                parts.append(out["text"])
            elif out["output_type"] in ("execute_result", "display_data"):
                parts.extend(str(v) for v in out["data"].values())
            elif out["output_type"] == "error":
                parts.append(f"ERROR {out['ename']}: {out['evalue']}")
        cells.append("\n".join(parts))
    return cells


def check_clean(nb):
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", out
            # `?` errors reach stderr: a clean run prints nothing there.
            if out["output_type"] == "stream":
                assert out["name"] == "stdout", f"stderr output: {out['text']!r}"
        if cell.cell_type == "code":
            assert cell.get("execution_count"), f"cell not executed: {cell.source[:80]}"


@pytest.fixture(scope="module")
def nb01():
    return execute("01-matmul-from-scratch.ipynb")


@pytest.fixture(scope="module")
def nb02():
    return execute("02-backends-binary-host-gpu.ipynb")


@pytest.fixture(scope="module")
def nb03():
    return execute("03-where-is-my-tensor.ipynb")


def test_01_matmul_from_scratch(nb01):
    check_clean(nb01)
    out = "\n".join(texts(nb01))
    assert "source: " in out
    assert "x_valid: f32[10000][784] on host:0" in out
    assert "x_train: f32[50000][784] on host:0" in out
    # Every version of the product agrees with the triple loop.
    assert out.count("matches the loops: true") == 4, out
    assert "matches the loops: false" not in out
    assert "binary and host agree: true" in out
    assert "Frobenius norm of m = 16.88194" in out
    assert "Backend<host:0>" in out and "binary" in out
    assert "@ binary" in out and "@ host:0" in out


def test_02_backends(nb02):
    check_clean(nb02)
    cells = texts(nb02)
    out = "\n".join(cells)
    assert "host and binary agree: true" in out
    assert "dot {10000, 784} x {784, 10} @ binary: average" in out
    assert "dot {10000, 784} x {784, 10} @ host:0: average" in out
    assert "binary" in cells[3]  # the copied operand prints its placement
    report = cells[-1]
    assert "<table>" in report and "<svg" in report, report[:500]
    assert "@ binary" in report and "@ host:0" in report
    if GPU:
        assert "@ cuda:0" in report and "No GPU here" not in out
        assert "f32[10000][784] on cuda:0" in out
        assert "cuda and binary agree: true" in out
    else:
        # The reason's first clause: the rest lists what was found, which the kernel's
        # evaluation process (its own search path) may see differently.
        assert f"No GPU here: {NO_GPU_REASON.split(';')[0]}" in out
        assert "cuda and binary agree" not in out


def test_03_where_is_my_tensor(nb03):
    check_clean(nb03)
    out = "\n".join(texts(nb03))
    assert "the closure still runs on: binary" in out
    assert "closure after the switch @ binary" in out
    assert "was deallocated" in out
    assert "operands are on different devices" in out and "host:1" in out
    assert "default binary -> serving ran on binary" in out
    assert "default host   -> serving ran on host:0" in out
    assert ("picked cuda:0" if GPU else "picked host:0") in out
    assert "session default" in out


@pytest.fixture(scope="module")
def nb04():
    return execute("04-jit-and-streams.ipynb")


def test_04_jit_and_streams(nb04):
    check_clean(nb04)
    cells = texts(nb04)
    out = "\n".join(cells)
    # EXLA's examples: cached after the first call, not for a new dtype until it is called.
    assert "cached before the first call: false" in out
    assert "cached after it: true" in out
    assert "f32 arguments cached: false" in out and "after the call: true" in out
    assert "#Function<jit, 2 arguments, compiled for host:0" in out
    assert "failed at its op #3" in out and "dot" in out
    # :vars names the compiled function.
    assert "add    Jit     #Function<jit, 2 arguments, compiled for host:0" in cells[4], cells[4]
    assert "not compiled yet" in cells[4]
    # The streamed running sum, in order, and its misuse errors.
    for line in ["after chunk 1: 2", "after chunk 2: 6", "after chunk 3: 12"]:
        assert line in out
    assert "recv again: stream: recv with nothing sent" in out
    assert "a wrong chunk: stream: the chunk f32[2]" in out
    assert "send after done: stream: send after done" in out
    assert "a new stream of the same step is cached: true" in out
    # Loops and branches in the program: Newton's steps differ with the data, one compilation.
    roots = [l for l in out.splitlines() if l.startswith("sqrt [")]
    assert len(roots) == 2, roots
    assert roots[0].startswith("sqrt [2.0, 9.0] = [1.4142135, 3.0] in "), roots
    steps = [int(l.split(" in ")[1].split()[0]) for l in roots]
    assert steps[0] != steps[1] and min(steps) > 2, roots
    assert "compilations: 1" in out
    assert "small gradient kept: [0.3, 0.4]" in out
    assert "large gradient clipped to norm 1: [0.6, 0.8]" in out
    assert "eagerly, the same: [0.6, 0.8]" in out
    assert "while_loop of 1000 iterations on host: eager" in out
    # vmap of grad: per-example gradients, equal to the loop over the examples.
    assert "per-example gradients: f32[4][3] on host:0, norms [" in out
    assert "equal to a loop over the examples: true" in out
    assert "#Function<vmap, 3 arguments, compiled for host:0" in out
    # Dense layer with softmax: jit agrees with eager on binary and host, both timed.
    assert "binary: jit" in out and "host:0: jit" in out
    assert "dense+softmax jit @ host:0" in out and "dense+softmax eager @ binary" in out
    if GPU:
        assert "cuda:0: jit" in out and "cuda:0: skipped" not in out
    else:
        assert "cuda:0: skipped" in out and "cuda:0: jit" not in out
    assert "<svg" in out
    # The chain benchmark and the serving compiled for each default.
    assert "host:0: jit is" in out and "µs more than the op alone" in out
    assert "first run: f32[6][2] on host:0" in out
    assert "second run: f32[6][2] on binary" in out
    assert "compiled for: binary, host:0" in out


@pytest.fixture(scope="module")
def nb05():
    return execute("05-training-an-mlp.ipynb")


def test_05_training_an_mlp(nb05):
    check_clean(nb05)
    cells = texts(nb05)
    out = "\n".join(cells)
    assert "train: f32[8000][784] on host:0" in out
    assert "valid: f32[2000][784] on host:0" in out
    # The gradient agrees with a finite difference in the notebook's own check.
    line = next(l for l in out.splitlines() if l.startswith("d loss / d w2[3][7]"))
    analytic, numeric = (float(part.split()[-1]) for part in line.split(":")[1].split(","))
    assert abs(analytic - numeric) <= 1e-4, line
    assert "#Function<value_and_grad, any arguments, compiled for host:0" in out
    for epoch in range(1, 6):
        assert f"epoch {epoch}: last batch loss" in out
    # The live chart was redrawn in place: one display, holding the final curve.
    charts = [o for c in nb05.cells for o in c.get("outputs", [])
              if o["output_type"] == "display_data" and "image/svg+xml" in o["data"]]
    assert len(charts) == 1 and "loss per batch" in charts[0]["data"]["image/svg+xml"]
    # The slider, the Stop button and the progress bar are ipywidgets models: nbclient saved
    # their views and their last state (the bar full, nobody having pressed Stop).
    views = [o["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
             for c in nb05.cells for o in c.get("outputs", [])
             if o["output_type"] == "display_data" and "application/vnd.jupyter.widget-view+json" in o["data"]]
    states = nb05.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    models = {states[v]["model_name"]: states[v]["state"] for v in views}
    assert set(models) == {"FloatSliderModel", "ButtonModel", "FloatProgressModel"}, models
    assert models["FloatSliderModel"]["description"] == "learning rate"
    assert models["FloatProgressModel"]["value"] == models["FloatProgressModel"]["max"] > 0
    assert "stopped with the Stop button" not in out
    final = next(l for l in out.splitlines() if l.startswith("final validation accuracy"))
    accuracy = float(final.split(":")[1].split("%")[0])
    # The test command fetches the real digits (install/fetch-mnist.sh fails without them), so
    # the accuracy is always checked.
    assert "SYNTHETIC" not in out, out
    assert accuracy > 90.0, final
    assert "trained: above 90% on digits it never saw" in out
    # Shuffled every epoch from a key, with one compilation of the step; dropout drawn inside
    # the compiled step from its key argument, a new mask each step, still one compilation.
    assert "compilations of the step over 5 epoch(s) of shuffled batches: 1" in out
    for epoch in range(1, 6):
        assert f"dropout epoch {epoch}: validation accuracy" in out
    assert "the step compiled 1 time(s) for 625 keys" in out
    assert "dropout trained: above 90%" in out
    assert "same key, same loss: true; another key, another loss: true" in out
    # The bf16 step (f32 parameters, bf16 computation) trains to the f32 step's bar.
    for epoch in range(1, 6):
        assert f"bf16 epoch {epoch}: validation accuracy" in out
    assert "parameters f32[784][50] on host:0, gradients f32" in out
    assert "bf16 trained: above 90%" in out
    assert re.search(r"step on a batch of 64: f32 [0-9.]+ ms, bf16 [0-9.]+ ms", out), out
    assert "jit" in out and "x eager" in out
    assert "sgd step 784-50-10 x10000 jit @ host:0" in out
    if GPU:
        assert "cuda:0: one epoch" in out and "No GPU here" not in out
    else:
        assert "No GPU here" in out and "cuda:0: one epoch" not in out
    # Several devices: the serving's batches alternate between sim:0 and sim:1 and gather on
    # host:0 with one device's predictions; data-parallel steps land where one device's do.
    lines = out.splitlines()
    batches = [l for l in lines if re.match(r"batch \d+: ", l)]
    assert len(batches) == 8, batches
    assert all(l.endswith(f"on sim:{i % 2}") for i, l in enumerate(batches)), batches
    assert batches[-1] == "batch 8: s32[208] on sim:1", batches
    assert "gathered: s32[2000] on host:0, 100.00% equal to one device's predictions" in out
    assert "batches per device: sim:0 8, sim:1 8" in out
    line = next(l for l in lines if l.startswith("20 steps over sim:0 and sim:1"))
    assert float(line.split()[-1]) < 1e-4, line
    for device in ("sim:0", "sim:1"):
        replica = next(l for l in lines if l.startswith(f"{device}: f32[784][50]"))
        assert replica.count(f"on {device}") == 4, replica
    after = next(l for l in lines if l.startswith("validation accuracy after 20 data-parallel"))
    assert float(after.split(":")[1].split("%")[0]) > 50.0, after


@pytest.fixture(scope="module")
def nb06():
    return execute("06-convolutions.ipynb")


def pictures(cell):
    """The cell's pictures: PNG outputs that are not charts (a chart carries a PNG beside its
    SVG)."""
    return [o for o in cell.get("outputs", [])
            if o["output_type"] in ("execute_result", "display_data")
            and "image/png" in o["data"] and "image/svg+xml" not in o["data"]]


def test_06_convolutions(nb06):
    check_clean(nb06)
    code = [c for c in nb06.cells if c.cell_type == "code"]
    out = "\n".join(texts(nb06))
    assert "train: f32[8000][1][28][28] on host:0" in out
    assert "valid: f32[2000][1][28][28] on host:0" in out
    # Pictures: the digits, the edges, the filters and the mistakes reach the notebook as PNGs.
    pictured = [c.source.splitlines()[0] for c in code if pictures(c)]
    assert len(pictured) == 4, pictured
    assert "f32[1][1][28][28] on host:0 conv f32[2][1][3][3] on host:0 = f32[1][2][26][26] on host:0" in out
    line = next(l for l in out.splitlines() if l.startswith("largest difference between im2col and conv"))
    assert float(line.split(":")[1]) < 1e-5, line
    assert "im2col equals conv" in out
    # Both CNNs trained epoch by epoch, each with its own live chart redrawn in place.
    for epoch in (1, 2, 3):
        assert f"stride-2 CNN, epoch {epoch}: validation accuracy" in out
    for epoch in range(1, 9):
        assert f"pooling CNN, epoch {epoch}: validation accuracy" in out
    charts = [o["data"]["image/svg+xml"] for c in code for o in c.get("outputs", [])
              if o["output_type"] == "display_data" and "image/svg+xml" in o["data"]]
    assert sum("stride-2 CNN" in c for c in charts) == 1 and sum("pooling CNN" in c for c in charts) >= 1
    assert "SYNTHETIC" not in out, out
    final = next(l for l in out.splitlines() if l.startswith("final validation accuracy"))
    accuracy = float(final.split(":")[1].split("%")[0])
    assert accuracy > 97.0, final
    assert "trained: above 97% on digits it never saw" in out
    wrong = next(l for l in out.splitlines() if "held-out digits misclassified" in l)
    assert int(wrong.split()[0]) == round(2000 * (100 - accuracy) / 100), (wrong, final)
    for model in ("stride-2 CNN", "pooling CNN"):
        line = next(l for l in out.splitlines() if l.startswith(f"{model}, batch of 64: eager"))
        assert line.endswith("x eager"), line
    if GPU:
        assert "cuda:0: one epoch" in out and "No GPU here" not in out
    else:
        assert "No GPU here" in out and "cuda:0: one epoch" not in out


@pytest.fixture(scope="module")
def nb07():
    return execute("07-linear-algebra.ipynb")


def test_07_linear_algebra(nb07):
    check_clean(nb07)
    code = [c for c in nb07.cells if c.cell_type == "code"]
    out = "\n".join(texts(nb07))
    lines = out.splitlines()

    def number(prefix, field=-1):
        line = next(l for l in lines if l.startswith(prefix))
        return float(line.replace(",", " ").split()[field].rstrip("%")), line

    assert "digits: f64[2000][784] on host:0" in out
    assert "u f64[2000][784] on host:0, s f64[784] on host:0, vt f64[784][784] on host:0" in out
    explained, line = number("the first 16 components explain", 5)
    assert 50.0 < explained < 100.0, line
    # The principal directions and the rebuilt digits reach the notebook as PNGs.
    pictured = [c.source.splitlines()[0] for c in code if pictures(c)]
    assert len(pictured) == 2, pictured
    gap, line = number("largest difference between eigh's and svd's")
    assert gap < 1e-8, line
    errors = [float(l.split()[-1]) for l in lines if "mean squared reconstruction error" in l]
    assert len(errors) == 3 and errors[0] > errors[1] > errors[2], errors
    line = next(l for l in lines if l.startswith("least squares: slope"))
    slope, intercept = (float(p.split()[-1]) for p in line.split(":")[1].split(","))
    assert abs(slope - 2.5) < 0.2 and abs(intercept + 1.0) < 1.0, line
    agree, line = number("normal equations agree to")
    assert agree < 1e-9, line
    charts = [o["data"]["image/svg+xml"] for c in code for o in c.get("outputs", [])
              if "image/svg+xml" in o.get("data", {})]
    assert any("Residuals of the least-squares line" in c for c in charts), "no residual chart"
    residual, line = number("largest |A·x - b|:")
    assert residual < 1e-10, line
    det, line = number("det(A)·det(A⁻¹) =")
    assert abs(det - 1.0) < 1e-8, line
    qr_error, line = number("largest |Q·R - A|:")
    assert qr_error < 1e-12, line
    gap, line = number("grad of log|det A| against A⁻ᵀ")
    assert gap < 1e-10, line
    # The spectrum: complex, its two peaks the two sines, and irfft gives the signal back.
    assert "spectrum: c128[501] on host:0" in out
    line = next(l for l in lines if l.startswith("strongest frequencies:"))
    assert line.startswith("strongest frequencies: 50 Hz") and ", 120 Hz" in line, line
    gap, line = number("irfft(rfft(signal)) against the signal")
    assert gap < 1e-12, line
    assert any("Amplitude spectrum of the signal" in c for c in charts), "no spectrum chart"
    # Complex matrices: real eigenvalues in c128, the factorisations and the solve rebuild.
    line = next(l for l in lines if l.startswith("eigenvalues of H:"))
    assert "c128[4] on host:0" in line and line.endswith("at most 0.0e0)"), line
    gap, line = number("largest |V·diag(w)·Vᴴ - H|:")
    assert gap < 1e-12, line
    gap, line = number("complex QR: largest |Q·R - B|", 6)
    assert gap < 1e-12, line
    diagonal = line.split("diagonal [")[1].rstrip("]").split(",")
    assert len(diagonal) == 4 and all(float(d) > 0 for d in diagonal), line
    gap, line = number("complex solve: largest |H·X - B|")
    assert gap < 1e-10, line
