"""The package as a user installs it: a wheel built from the checkout, installed into a fresh virtual
environment outside it, judges a CPU candidate (its worker, sandbox and records all from the wheel)."""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import kbench_lib

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out, source = tmp_path_factory.mktemp("dist"), tmp_path_factory.mktemp("source")
    # built from a copy: setuptools writes build/ and *.egg-info/ beside the sources it builds
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "kbench_lib", source / "kbench_lib", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source)],
                   check=True, cwd=out, timeout=300)
    [whl] = out.glob("kbench-*.whl")
    return whl


def test_the_wheel_holds_every_module_and_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    package = REPO / "kbench_lib"
    wanted = {p.relative_to(REPO).as_posix() for p in package.rglob("*.py") if "__pycache__" not in p.parts}
    wanted |= {p.relative_to(REPO).as_posix() for p in (package / "generation" / "templates").iterdir() if p.is_file()}
    assert wanted - names == set()
    assert "kbench_lib/__init__.py" in names and f"kbench-{kbench_lib.__version__}.dist-info/METADATA" in names


def test_a_fresh_install_judges_a_cpu_candidate(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    # the dependencies (torch, pandas, ...) from this environment's site-packages, listed as a path only:
    # its own .pth files (the checkout's editable install among them) are not read
    site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    problem, candidate = work / "1_Scale_Add_ReLU.py", work / "scale_add_relu_torch.py"
    problem.write_text((FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py").read_text())
    candidate.write_text((FIXTURES / "candidates" / "scale_add_relu_torch.py").read_text())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["KBENCH_CACHE"] = str(tmp_path / "cache")
    where = subprocess.check_output([str(py), "-c", "import kbench_lib; print(kbench_lib.__file__)"], cwd=work, env=env, text=True)
    assert Path(where.strip()).is_relative_to(site) and not Path(where.strip()).is_relative_to(REPO)
    kbench = venv / "bin" / "kbench"
    assert subprocess.check_output([str(kbench), "--version"], cwd=work, env=env, text=True).strip() == f"kbench {kbench_lib.__version__}"
    res = subprocess.run([str(kbench), "eval", str(problem), str(candidate), "--device", "cpu", "--json", "--seeds", "2",
                          "--timing-budget", "0.2"], cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    verdict = json.loads(res.stdout)
    assert verdict["correct"] is True and verdict["failure"] is None, verdict
