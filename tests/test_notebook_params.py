"""Notebook parameters as papermill gives them: ``-p NAME VALUE`` hands a structure over as a string,
which the notebooks read as the list or dict they declare (kbench_lib.core.params); the README's
papermill line runs as written."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kbench_lib.core.params import ParameterError, structured

from conftest import REPO


def test_a_string_from_papermill_becomes_the_declared_structure():
    assert structured('{"reference": 0}', dict, "models") == {"reference": 0}
    assert structured("{'reference': 2}", dict, "models") == {"reference": 2}
    assert structured('["level1", "level2"]', list, "levels") == ["level1", "level2"]
    assert structured("level1", list, "levels") == ["level1"]
    assert structured(("a",), list, "x") == ["a"] and structured([], list, "x") == [] and structured({}, dict, "y") == {}
    for bad, kind in (("{bad", dict), ('["a"]', dict), ("{'a': 1}", list), (3, list)):
        with pytest.raises(ParameterError) as e:
            structured(bad, kind, "p")
        assert "\n" not in str(e.value) and str(e.value).startswith("parameter p:")


def test_every_notebook_reads_its_structured_parameters_through_structured():
    import json

    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        params = next(("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), "")
        names = re.findall(r"^(\w+): (?:list|dict) =", params, re.M)
        code = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        for name in names:
            assert f'structured({name}, ' in code, f"{nb.name}: parameter {name} is not read through kbench_lib.core.params.structured"


def test_the_readmes_papermill_line_runs_as_written(tmp_path):
    line = re.search(r"`(papermill notebooks/01_evaluate\.ipynb [^`]+)`", (REPO / "README.md").read_text()).group(1)
    argv = shlex.split(line)
    argv[0] = str(Path(sys.executable).with_name("papermill"))
    (tmp_path / "notebooks").symlink_to(REPO / "notebooks")
    env = {**os.environ, "KBENCH_RUNS_ROOT": str(tmp_path / "runs")}
    out = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "out.ipynb").exists() and any((tmp_path / "runs").glob("*/records/part-*.parquet"))
    _figures_are_readable(tmp_path / "out.ipynb")


def _figures_are_readable(executed: Path) -> None:
    """Every figure the executed notebook shows: a PNG at the style's resolution, shown at a width
    where the style's smallest label reads at 9 pt or more."""
    import base64
    import json

    from kbench_lib.reports import plots

    shown = [(base64.b64decode(o["data"]["image/png"]), o.get("metadata", {}).get("image/png", {}).get("width"))
             for cell in json.loads(executed.read_text())["cells"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
    assert shown, "the executed notebook shows no figure"
    for png, width in shown:
        pixels = int.from_bytes(png[16:20], "big")
        assert pixels >= plots.COLUMN * plots.STYLE["savefig.dpi"] * 0.8, pixels  # a column wide at 300 dpi, not 100
        assert width and plots.displayed_label_pt(width / pixels) >= 9, (width, pixels)
