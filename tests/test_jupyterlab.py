"""JupyterLab in a real browser, as a person uses it: pick "Rust (tensorbook)" in the launcher,
run cells with Shift+Enter, interrupt from the toolbar, restart from the Kernel menu.

JupyterLab runs from the project's venv on a free loopback port with a random token; headless
Chromium is Debian's (installed by install/browser.sh), driven by the Python `playwright`
package pointed at it (no browser download). A screenshot goes to target/ on failure."""
import contextlib
import json
import os
import pathlib
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import re
import urllib.parse
import urllib.request

import pytest

from conftest import FIRST_CELL_TIMEOUT, ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (install/requirements.txt)")
if CHROMIUM is None:
    pytest.skip("no chromium on PATH: install/browser.sh installs Debian's", allow_module_level=True)

MS = 1000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    port, token = free_port(), secrets.token_hex(16)
    log = open(root / "jupyterlab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--allow-root", "--LabApp.extension_manager=readonly", "--LabApp.news_url=",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
            break
        except OSError:
            assert proc.poll() is None, (root / "jupyterlab.log").read_text()
            assert time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.5)
    yield base, token
    # JupyterLab shuts its kernels down on SIGTERM; the whole group goes if it does not.
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    log.close()


def shut_down_sessions(base, token):
    """Ends every notebook session (and its kernel), as closing and shutting them down does."""
    with urllib.request.urlopen(f"{base}/api/sessions?token={token}", timeout=5) as r:
        sessions = json.load(r)
    for session in sessions:
        request = urllib.request.Request(f"{base}/api/sessions/{session['id']}?token={token}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


def kernels(base, token):
    with urllib.request.urlopen(f"{base}/api/kernels?token={token}", timeout=5) as r:
        return json.load(r)


def run(page, code, expect, timeout=60):
    """Types `code` into a new last cell, runs it with Shift+Enter, waits until its output
    contains `expect`; returns the output element."""
    cells = page.locator(".jp-Notebook .jp-Cell")
    # Pinned by index: Shift+Enter appends a new cell, which `.last` would then mean.
    cell = cells.nth(cells.count() - 1)
    cell.locator(".cm-content").click()
    page.keyboard.insert_text(code)
    page.keyboard.press("Shift+Enter")
    output = cell.locator(".jp-OutputArea-output")
    sync_api.expect(output.filter(has_text=expect).first).to_be_visible(timeout=timeout * MS)
    return cell


def chart_points(cell):
    """How many points the live chart in `cell`'s output draws (the SVG's polylines), whether
    JupyterLab shows the SVG inline or as an image."""
    img = cell.locator('img[src^="data:image/svg+xml"]')
    if img.count():
        svg = urllib.parse.unquote(img.last.get_attribute("src"))
    else:
        svg = cell.locator("svg").last.evaluate("e => e.outerHTML")
    return sum(len(p.split()) for p in re.findall(r'<polyline[^>]*points="([^"]*)"', svg))


def open_notebook(page, base, token):
    """A new notebook on the tensorbook kernel, in a fresh workspace (`reset`: another test's
    notebook is not reopened)."""
    page.goto(f"{base}/lab?reset&token={token}")
    page.locator('.jp-LauncherCard[data-category="Notebook"][title="Rust (tensorbook)"]').click(timeout=60 * MS)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60 * MS)
    # A cell run before the kernel is connected is dropped by JupyterLab, not queued.
    page.get_by_text("Rust (tensorbook) | Idle").wait_for(timeout=60 * MS)


@contextlib.contextmanager
def notebook_page(base, token, name):
    """A browser page on a new tensorbook notebook; a screenshot `target/<name>-failure.png`
    when the test fails, `target/<name>.png` when it passes. The notebook's session ends with
    it."""
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            open_notebook(page, base, token)
            yield page
            page.screenshot(path=str(ROOT / "target" / f"{name}.png"), full_page=True)
        except Exception:
            shot = ROOT / "target" / f"{name}-failure.png"
            shot.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            raise
        finally:
            browser.close()
            shut_down_sessions(base, token)


def test_widgets_steer_a_running_cell_in_jupyterlab(lab):
    """A slider drawn by jupyterlab_widgets, dragged while a loop runs, changes what the loop
    prints; the Stop button ends it; the live chart grows while it runs."""
    with notebook_page(*lab, "jupyterlab-widgets") as page:
        cell = run(page, 'let rate = widgets::IntSlider::new("rate", 0, 100, 10)?;\nrate', "", FIRST_CELL_TIMEOUT)
        handle = cell.locator(".widget-slider .noUi-handle").first
        handle.wait_for(timeout=60 * MS)
        loop = ('let stop = widgets::Button::new("Stop");\ndisplay(&stop);\n'
                'let chart = widgets::LiveChart::new("loss", "step", "loss")?;\n'
                'let mut seen = rate.value();\nprintln!("rate {seen}");\nlet mut step = 0u32;\n'
                'while !stop.clicked() {\n'
                '    if rate.value() != seen { seen = rate.value(); println!("rate {seen}"); }\n'
                '    chart.push("loss", step as f64, 1.0 / (1.0 + step as f64))?;\n'
                '    step += 1;\n'
                '    tensorbook::sleep(std::time::Duration::from_millis(20))?;\n'
                '}\nchart.flush()?;\nprintln!("stopped at step {step}");')
        running = run(page, loop, "rate 10")
        stop = running.locator("button.jupyter-button", has_text="Stop")
        stop.wait_for(timeout=30 * MS)
        sync_api.expect(running.locator('img[src^="data:image/svg+xml"], svg').first).to_be_visible(timeout=30 * MS)
        time.sleep(0.5)
        points_at_start = chart_points(running)

        # Drag the slider to its right end while the loop runs.
        box = handle.bounding_box()
        track = cell.locator(".widget-slider .noUi-target").first.bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        page.mouse.down()
        page.mouse.move(track["x"] + track["width"] + 20, box["y"] + box["height"] / 2, steps=8)
        page.mouse.up()
        sync_api.expect(running.locator(".jp-OutputArea")).to_contain_text("rate 100", timeout=30 * MS)

        stop.click()
        sync_api.expect(running.locator(".jp-OutputArea")).to_contain_text("stopped at step", timeout=30 * MS)
        points_at_end = chart_points(running)
        assert points_at_end > points_at_start, (points_at_start, points_at_end)
        # The loop's variables are kept.
        run(page, 'println!("kept {}", step > 0);', "kept true")


def test_a_person_uses_tensorbook_in_jupyterlab(lab):
    base, token = lab
    with notebook_page(base, token, "jupyterlab") as page:
        cell = run(page, "let t = Tensor::iota(DType::F32, &[2, 3], None)?;\nt", "Backend<host", FIRST_CELL_TIMEOUT)
        card = cell.locator(".tensorbook-tensor")
        sync_api.expect(card.locator(".tb-header")).to_contain_text("f32[2][3]")
        sync_api.expect(card.locator(".tb-badge")).to_have_text("Backend<host:0>")

        run(page, ":client", "session default: host:0")
        run(page, ":clients", "binary")

        # Output appears while the cell runs, not at its end.
        cell = run(page, 'for i in 0..6 { println!("step {i}"); tensorbook::sleep(std::time::Duration::from_millis(800))?; }', "step 1")
        assert "step 5" not in cell.locator(".jp-OutputArea").inner_text(), "output arrived only at the end"
        sync_api.expect(cell.locator(".jp-OutputArea")).to_contain_text("step 5", timeout=30 * MS)

        # Interrupt a sleeping cell from the toolbar; the tensor is still there.
        cell = run(page, 'println!("sleeping");\nloop { tensorbook::sleep(std::time::Duration::from_millis(100))?; }', "sleeping")
        toolbar = page.locator(".jp-NotebookPanel-toolbar")
        toolbar.locator('[data-command="notebook:interrupt-kernel"]').or_(toolbar.get_by_title("Interrupt the kernel")).first.click()
        sync_api.expect(cell.locator(".jp-OutputArea")).to_contain_text("interrupted by the user", timeout=30 * MS)
        run(page, "t.signature()", "f32[2][3]")

        # Restart from the Kernel menu; the kernel comes back idle.
        page.locator(".lm-MenuBar-itemLabel", has_text="Kernel").click()
        page.locator(".lm-Menu-itemLabel", has_text="Restart Kernel…").first.click()
        page.locator(".jp-Dialog-button.jp-mod-accept").click()
        deadline = time.monotonic() + 120
        while True:
            states = [k["execution_state"] for k in kernels(base, token)]
            if states == ["idle"]:
                break
            assert time.monotonic() < deadline, f"kernel states after restart: {states}"
            time.sleep(0.5)
        run(page, "1 + 1", "2", FIRST_CELL_TIMEOUT)
