"""JupyterLab in a real browser, as a person uses it: pick "Rust (tensorbook)" in the launcher,
run cells with Shift+Enter, interrupt from the toolbar, restart from the Kernel menu.

JupyterLab runs from the project's venv on a free loopback port with a random token; headless
Chromium is Debian's (installed by install/browser.sh), driven by the Python `playwright`
package pointed at it (no browser download). A screenshot goes to target/ on failure."""
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


def test_a_person_uses_tensorbook_in_jupyterlab(lab):
    base, token = lab
    shot = ROOT / "target" / "jupyterlab-failure.png"
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            page.goto(f"{base}/lab?token={token}")
            page.locator('.jp-LauncherCard[data-category="Notebook"][title="Rust (tensorbook)"]').click(timeout=60 * MS)
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60 * MS)
            # A cell run before the kernel is connected is dropped by JupyterLab, not queued.
            page.get_by_text("Rust (tensorbook) | Idle").wait_for(timeout=60 * MS)

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
            page.screenshot(path=str(ROOT / "target" / "jupyterlab.png"), full_page=True)
        except Exception:
            shot.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            raise
        finally:
            browser.close()
