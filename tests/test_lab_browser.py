"""The kernel lab in JupyterLab, in a headless Chromium: what a person sees.

A small notebook judges the fixture problem on the CPU three ways: a correct kernel with
``--background`` (its view: the progress bar, then the verdict rendered in place), while it judges a
wrong one in a cell that waits (the verdict: status, message, the configurations' table), then the
lab run's History widget (the attempts' table, the best attempt, the two dropdowns and the diff).
Run from JupyterLab's Run menu, as a person would, and read in the page; a screenshot of each goes to
``test-artifacts/`` (or ``$KBENCH_ARTIFACTS``).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")  # the notebook tooling: absent on the GPU machine, whose runs collect every file

from browser import JupyterLab, chromium, kernel_names, run_all_cells
from conftest import FIXTURES

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("KBENCH_ARTIFACTS") or REPO / "test-artifacts")
PROBLEM = FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py"
# a C++ kernel (the cpp backend, built in about a second): a trusted attempt for the history, where a
# plain-PyTorch candidate is a library passthrough
KERNEL = (FIXTURES.parent / "adversarial" / "legit" / "elementwise_cpp.py").read_text()
WRONG = (FIXTURES / "candidates" / "scale_add_relu_wrong.py").read_text()

pytestmark = pytest.mark.slow


def _notebook(runs_root: Path, dest: Path) -> Path:
    options = f"{PROBLEM} --device cpu --no-timing --runs-root {runs_root} --run-id web"
    kernel = "kbench" if "kbench" in kernel_names() else "python3"
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext kbench_lib.lab"),
        nbformat.v4.new_code_cell(f"%%kbench {options} --background\n{KERNEL}"),
        nbformat.v4.new_code_cell("h = _"),
        nbformat.v4.new_code_cell(f"%%kbench {options}\n{WRONG}"),
        nbformat.v4.new_code_cell("from kbench_lib.reports import lab_history\n"
                                  "h.result(timeout=120)\n"
                                  f"lab_history.History('web', {str(runs_root)!r}).widget"),
    ]
    path = dest / "lab.ipynb"
    nbformat.write(nb, path)
    return path


def test_the_lab_in_jupyterlab(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install 'kbench[browser]')")
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no Chromium on this machine: `make browser` installs Debian's chromium (needs root and apt)")
    _notebook(tmp_path / "runs", tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH")]))}
    with JupyterLab(tmp_path, env) as lab, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1600})
            run_all_cells(page, lab.url("lab/tree/lab.ipynb"))
            expect = sync_api.expect
            cells = page.locator(".jp-Notebook .jp-Cell")
            # the background judgement's view: its own verdict, rendered in place when it was done
            view = page.locator(".kb-lab-judgement")
            view.wait_for(timeout=60_000)
            expect(view).to_contain_text("CORRECT", timeout=60_000)
            expect(view).to_contain_text("judged in")
            expect(view.locator("table")).to_contain_text("tol_needed")
            # the cell that waited: the wrong kernel's verdict and its configurations
            wrong = cells.nth(3).locator(".jp-OutputArea")
            expect(wrong).to_contain_text("FAILED (output_mismatch)", timeout=60_000)
            expect(wrong.locator("table")).to_contain_text("configuration")
            expect(wrong.locator("table")).to_contain_text("default")
            page.screenshot(path=str(ARTIFACTS / "lab-verdicts.png"), full_page=True)
            # the History widget: both attempts, the best trusted one, the diff between them
            history = cells.nth(4).locator(".jp-OutputArea")
            expect(history).to_contain_text("best trusted attempt", timeout=60_000)
            expect(history.locator("table.dataframe")).to_contain_text("output_mismatch")
            expect(history.locator("label", has_text="from")).to_be_visible()
            expect(history.locator(".widget-button")).to_contain_text("save 'to' for folder:")
            history.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "lab-history.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "lab-failure.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert (ARTIFACTS / "lab-history.png").stat().st_size > 10_000
