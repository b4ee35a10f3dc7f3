"""The explorer notebook in JupyterLab, in a headless Chromium: what a person sees.

Opens notebooks/07_explorer.ipynb (parameterised with a small real CPU run) in a real JupyterLab,
runs every cell from the Run menu, then reads the rendered widget: the candidate count, the verdict
badge, the failure message; picks an outcome in the filter dropdown and a problem, opens the Diff and
Profile tabs; and keeps a screenshot of each step in ``test-artifacts/`` (or ``$KBENCH_ARTIFACTS``).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")  # the notebook tooling: absent on the GPU machine, whose runs collect every file

from browser import JupyterLab, chromium, kernel_names, run_all_cells

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("KBENCH_ARTIFACTS") or REPO / "test-artifacts")

pytestmark = pytest.mark.slow


def _notebook(runs_root: Path, dest: Path) -> Path:
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = load_notebook_node(str(REPO / "notebooks" / "07_explorer.ipynb"))
    kernel = "kbench" if "kbench" in kernel_names() else "python3"
    nb = parameterize_notebook(nb, {"runs_root": str(runs_root), "committed": False}, kernel_name=kernel)
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    path = dest / "explorer.ipynb"
    nbformat.write(nb, path)
    return path


def _dropdown(page, label: str):
    """The <select> of the ipywidgets Dropdown whose description is ``label``."""
    return page.locator(".widget-dropdown").filter(has=page.locator("label", has_text=label)).locator("select")


def test_explorer_in_jupyterlab(cpu_run, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install 'kbench[browser]')")
    browser_path = chromium()
    if browser_path is None:
        pytest.skip("no Chromium on this machine: `make browser` installs Debian's chromium (needs root and apt)")
    runs_root, _ = cpu_run
    _notebook(runs_root, tmp_path)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    with JupyterLab(tmp_path, env) as lab, sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300})
            run_all_cells(page, lab.url("lab/tree/explorer.ipynb"))
            explorer = page.locator(".kb-explorer")
            explorer.wait_for(timeout=180_000)
            explorer.scroll_into_view_if_needed()
            expect = sync_api.expect
            # what a person reads first: how many candidates, the first one's verdict and its compiler message
            expect(explorer.locator(".kb-count")).to_have_text("11 of 11 candidates match", timeout=30_000)
            expect(explorer.locator(".kb-verdict")).to_have_text("compile_error")
            expect(explorer.locator(".kb-message")).to_contain_text("expected primary-expression")
            expect(explorer.locator(".kb-sources")).to_contain_text("class ModelNew")
            page.screenshot(path=str(ARTIFACTS / "explorer-first.png"), full_page=True)
            # filter by outcome: the one candidate that raised
            _dropdown(page, "outcome").select_option("runtime_error")
            expect(explorer.locator(".kb-count")).to_have_text("1 of 11 candidates match")
            expect(explorer.locator(".kb-verdict")).to_have_text("runtime_error")
            expect(explorer.locator(".kb-message")).to_contain_text("ValueError: kernel launch failed on purpose")
            # back to every outcome, then torch.compile on the GEMM problem: its fusion and profile
            _dropdown(page, "outcome").select_option("(any)")
            _dropdown(page, "model").select_option("torch-compile")
            _dropdown(page, "problem").select_option("level1/2_Linear_GELU")
            expect(explorer.locator(".kb-verdict")).to_have_text("trusted")
            expect(explorer.locator(".kb-fusion")).to_contain_text("gelu")
            expect(explorer.locator(".kb-fusion")).to_contain_text("addmm")
            explorer.locator(".lm-TabBar-tab", has_text="Diff").click()
            expect(explorer.locator(".kb-diff")).to_contain_text("+class ModelNew(Model):")
            explorer.locator(".lm-TabBar-tab", has_text="Profile").click()
            expect(explorer.locator(".kb-profile")).to_contain_text("aten::addmm")
            page.screenshot(path=str(ARTIFACTS / "explorer.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "explorer-failure.png"), full_page=True)  # what the page showed when it failed
            raise
        finally:
            browser.close()
    assert (ARTIFACTS / "explorer.png").stat().st_size > 10_000
