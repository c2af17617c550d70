"""Notebooks parameterised the way pipelines run them: papermill injects a cell of Rust `let`s
after the cell tagged `parameters` (python/tensorbook-papermill), and the notebook runs with
the new values."""
import json
import subprocess
import sys

import nbformat
import pytest
from papermill.translators import translate_parameters

from conftest import ROOT, run_cell, stdout_of

EXECUTED = ROOT / "target" / "notebooks"

VALUES = {
    "epochs": 3,
    "offset": -2,
    "lr": 0.1,
    "name": 'a "quoted"\\ word\n\x01',
    "plot": True,
    "limit": None,
    "sizes": [784, 50, 10],
    "weights": {"w": 0.5},
}


def test_parameters_become_rust_lets_for_the_kernel_and_the_language():
    code = translate_parameters("tensorbook", "rust", VALUES)
    assert code.splitlines() == [
        "// Parameters",
        "let epochs = 3_usize;",
        "let offset = -2_i64;",
        "let lr = 0.1_f64;",
        'let name = "a \\"quoted\\"\\\\ word\\n\\u{1}";',
        "let plot = true;",
        "let limit: Option<()> = None;",
        "let sizes = vec![784_usize, 50_usize, 10_usize];",
        'let weights = std::collections::HashMap::from([("w", 0.5_f64)]);',
    ]
    # Registered for the language too, as papermill looks it up for other Rust kernels.
    assert translate_parameters("evcxr", "rust", {"n": 1}).endswith("let n = 1_usize;\n")


def test_the_injected_code_compiles_with_the_types_a_notebook_declares(kernel):
    _, kc = kernel
    reply, outputs = run_cell(kc, translate_parameters("tensorbook", "rust", VALUES))
    assert reply["content"]["status"] == "ok", reply["content"]
    check = (
        "let e: usize = epochs; let o: i64 = offset; let l: f64 = lr; let s: &str = name;\n"
        "let p: bool = plot; let n: Option<()> = limit; let v: Vec<usize> = sizes.clone();\n"
        'println!("{e} {o} {l} {p} {n:?} {v:?} {:?} {}", s, weights["w"]);'
    )
    reply, outputs = run_cell(kc, check)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs).strip() == (
        '3 -2 0.1 true None [784, 50, 10] "a \\"quoted\\"\\\\ word\\n\\u{1}" 0.5'
    )


def test_a_notebook_runs_through_papermill_with_parameters():
    """As the issue's pipeline does it: the training notebook, one epoch instead of five."""
    EXECUTED.mkdir(parents=True, exist_ok=True)
    out = EXECUTED / "05-papermill.ipynb"
    run = subprocess.run(
        [
            sys.executable, "-m", "papermill",
            str(ROOT / "notebooks" / "05-training-an-mlp.ipynb"), str(out),
            "-p", "epochs", "1",
            "--execution-timeout", "900", "--start-timeout", "120",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert run.returncode == 0, f"papermill failed:\n{run.stderr[-5000:]}"
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and "let epochs = 1_usize;" in injected[0].source
    position = nb.cells.index(injected[0])
    assert "parameters" in nb.cells[position - 1].metadata.get("tags", [])
    streams = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", output
            if output["output_type"] == "stream":
                streams.append(output["text"])
    text = "".join(streams)
    # One epoch ran, not the notebook's five.
    assert "epoch 1: last batch loss" in text and "epoch 2:" not in text, text[-2000:]
    assert "after 1 epoch(s)" in text
    assert json.loads(json.dumps(nb.metadata.get("papermill", {}).get("parameters"))) == {
        "epochs": 1
    }
