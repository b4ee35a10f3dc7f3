"""Notebooks 04 to 07 under papermill on a small real CPU run (what `make run` writes) with the
committed H100 records, and the analyses on that run: real verdicts, profiles and sources."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbench_lib.analysis import data, figures, fusion, sources

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("04_results", "05_failures", "06_fusion", "07_explorer")

pytestmark = pytest.mark.slow


def _text(nb: dict) -> str:
    out = []
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            out.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
    return "\n".join(out)


def test_the_cpu_run_records_profiles_and_sources(cpu_run):
    root, run_id = cpu_run
    df = data.load(root, [run_id], committed=False)
    assert len(df) == 11 and df["candidate_source"].notna().all()
    assert all(sources.reference_source(r) for r in df.to_dict("records"))
    t = fusion.fusion_table(df)
    gelu = t[(t["model"] == "torch-compile") & (t["problem"] == "level1/2_Linear_GELU")].iloc[0]
    assert gelu["in_library"] == "addmm" and gelu["replaced"] == "gelu"  # Inductor fuses the epilogue, the GEMM stays a library call
    assert t[(t["model"] == "torch-compile") & (t["problem"] == "level1/1_Scale_Add_ReLU")].iloc[0]["fused_share"] == 1.0


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_on_cpu_and_committed_records(cpu_run, tmp_path, name):
    import papermill as pm

    root, _ = cpu_run
    out = tmp_path / f"{name}.ipynb"
    pm.execute_notebook(str(REPO / "notebooks" / f"{name}.ipynb"), str(out), kernel_name="kbench", cwd=str(REPO / "notebooks"),
                        parameters={"runs_root": str(root), "out_dir": str(tmp_path / "out"), "n_boot": 200} if name == "04_results"
                        else {"runs_root": str(root), "out_dir": str(tmp_path / "out")}, progress_bar=False)
    text = _text(json.loads(out.read_text()))
    from kbench_lib.scoring import committed

    n_committed = len(committed.records()[0])  # every committed record file: solutions and search runs alike
    assert "local: 11 verdicts" in text and f"committed: {n_committed} verdicts" in text
    if name == "04_results":
        assert (tmp_path / "out" / "nvidia-h100-80gb-hbm3" / "fast_p_curve.pdf").is_file()
        assert (tmp_path / "out" / "x86_64" / "results.tex").is_file()
        assert "No data for refinement turns" in text  # said plainly, not drawn empty
    if name == "05_failures":
        assert "expected primary-expression before ‹…› token" in text
    if name == "06_fusion":
        assert (tmp_path / "out" / "x86_64" / "fusion_vs_compile.csv").is_file()
        assert "no record holds device kernels" in text or "launch none" in text


def test_figures_are_the_same_bytes_on_rerun_with_embedded_fonts(tmp_path):
    a = figures.results_figures(data.load(committed=True, local=False), figures.pd.DataFrame(), tmp_path / "a", n_boot=100)
    b = figures.results_figures(data.load(committed=True, local=False), figures.pd.DataFrame(), tmp_path / "b", n_boot=100)
    assert a
    for name, paths in a.items():
        for p, q in zip(paths, b[name]):
            assert p.read_bytes() == q.read_bytes(), p
            if p.suffix == ".pdf":
                pdf = p.read_bytes()
                assert b"/FontFile2" in pdf and b"/Type3" not in pdf  # TrueType fonts embedded (pdf.fonttype 42)
