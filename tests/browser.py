"""A real JupyterLab in a real headless browser, for tests that check what a person sees.

:func:`chromium` finds the OS's Chromium (Debian's ``chromium`` package; ``make browser`` installs
it); Playwright's Python API drives it through ``executable_path`` (Playwright's own browser
download is never used). :class:`JupyterLab` starts ``jupyter lab`` on 127.0.0.1 with a private
token and private config, settings and workspace folders, so no earlier session's layout or a
news prompt changes the page.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium() -> str | None:
    """The browser binary: ``$KBENCH_CHROMIUM`` or the first of :data:`CANDIDATES` on PATH."""
    env = os.environ.get("KBENCH_CHROMIUM")
    if env and Path(env).is_file():
        return env
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kernel_names() -> set[str]:
    jupyter = Path(sys.executable).parent / "jupyter"
    r = subprocess.run([str(jupyter), "kernelspec", "list", "--json"], capture_output=True, text=True, timeout=60)
    return set(json.loads(r.stdout).get("kernelspecs", {})) if r.returncode == 0 else set()


def run_all_cells(page, url: str, tries: int = 3) -> None:
    """Opens the notebook at ``url``, waits for its kernel (the status bar says Idle), then Run >
    Run All Cells, as a person would; again if the first cell has not started within 30 s (the
    menu can answer before the kernel takes requests)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(url)
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=90_000)
    page.locator(".jp-StatusBar-TextItem", has_text="Idle").first.wait_for(timeout=120_000)
    for _ in range(tries):
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        try:
            page.locator(".jp-InputPrompt", has_text="[1]").first.wait_for(timeout=30_000)
            return
        except PlaywrightTimeout:
            continue


class JupyterLab:
    """``with JupyterLab(root, env) as lab: lab.url("lab/tree/x.ipynb")``."""

    def __init__(self, root: Path, env: dict | None = None, timeout_s: float = 90):
        self.root, self.timeout_s = Path(root), timeout_s
        self.port, self.token = free_port(), secrets.token_hex(16)
        private = self.root / ".jupyter-private"
        (private / "config" / "labconfig").mkdir(parents=True, exist_ok=True)
        # the news prompt would cover part of the page; nothing else is changed
        (private / "config" / "labconfig" / "page_config.json").write_text(
            json.dumps({"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
        self.env = {**os.environ, **(env or {}), "JUPYTER_CONFIG_DIR": str(private / "config"),
                    "JUPYTERLAB_SETTINGS_DIR": str(private / "settings"), "JUPYTERLAB_WORKSPACES_DIR": str(private / "workspaces"),
                    "JUPYTER_RUNTIME_DIR": str(private / "runtime")}
        self.log = self.root / "jupyter-lab.log"
        self.proc: subprocess.Popen | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def __enter__(self):
        jupyter = Path(sys.executable).parent / "jupyter"
        cmd = [str(jupyter), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root}", "--ServerApp.open_browser=False", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")  # CI machines run as root
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=self.env, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"jupyter lab did not answer in {self.timeout_s} s:\n{self.log.read_text()[-3000:]}")

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # the server and the kernels it started, nothing else
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
