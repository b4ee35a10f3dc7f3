import hashlib
from pathlib import Path

import pandas as pd
import pytest

from kbench_lib.reports import plots
from kbench_lib.suite import devices, roofline
from kbench_lib.suite.problems import load_problem

REPO = Path(__file__).resolve().parents[1]


def test_flops_and_bytes_of_a_linear(fixtures):
    p = load_problem(fixtures / "problems" / "level1" / "2_Linear_GELU.py")
    c = roofline.count(p)
    assert c["flops"] == 2 * 256 * 1024 * 1024  # the GEMM; FLOP counter ignores elementwise ops
    expect = 4 * (256 * 1024 + 1024 * 1024 + 1024 + 256 * 1024)
    assert c["bytes"] == expect


def test_an_input_set_is_sized_without_allocating_it(fixtures):
    p = load_problem(fixtures / "problems" / "level1" / "1_Scale_Add_ReLU.py")  # two N x M float32 inputs
    assert roofline.input_set_bytes(p) == 2 * 4096 * 4096 * 4
    assert roofline.input_set_bytes(p, dict(p.small)) == 2 * 64 * 96 * 4


def test_sol_ms_takes_the_larger_bound():
    spec = devices.DEVICES["h100-sxm"]
    t, bound = roofline.sol_ms(67e12 * 1e-3, 1.0, spec)
    assert t == pytest.approx(1.0) and bound == "compute"
    t, bound = roofline.sol_ms(1.0, 3.35e12 * 2e-3, spec)
    assert t == pytest.approx(2.0) and bound == "memory"
    assert devices.spec_for("NVIDIA H100 80GB HBM3") is spec
    assert devices.spec_for("some cpu") is None


def test_each_variant_has_its_own_speed_of_light(fixtures):
    """A variant's bound comes from its own sizes (what its timings are checked against)."""
    p = load_problem(fixtures / "derived" / "1_Row_Sum.py")
    dev = "NVIDIA H100 80GB HBM3"
    default = roofline.problem_sol_ms(p, dev)
    assert default == roofline.config_sol_ms(p, p.declared_configs()[0].overrides, dev)
    assert len(p.configs(device="cuda")) == 3
    for cfg in p.configs(device="cuda")[1:]:
        c, d = roofline.count(p, cfg.overrides), roofline.count(p)
        assert roofline.config_sol_ms(p, cfg.overrides, dev) == pytest.approx(default * c["bytes"] / d["bytes"])
    assert roofline.config_sol_ms(p, None, "some cpu") is None


def test_measured_ceilings_replace_datasheet_peaks_only_where_measured():
    sheet = devices.spec_for("NVIDIA H100 80GB HBM3")
    m = devices.measured_spec_for("NVIDIA H100 80GB HBM3")
    assert m.fp32_tflops == 51.6 and m.bandwidth_tbs == 3.04
    assert m.bf16_tflops == sheet.bf16_tflops  # not measured: the datasheet stays
    # a measured ceiling is lower than the datasheet, so the bound it gives is longer
    assert roofline.sol_ms(1e12, 1e9, m)[0] > roofline.sol_ms(1e12, 1e9, sheet)[0]
    assert devices.measured_spec_for("NVIDIA H200") is devices.spec_for("NVIDIA H200")
    assert devices.measured_spec_for("some cpu") is None


def _df():
    rows = []
    for i, (c, f, s) in enumerate([(True, [], 1.5), (True, [], 0.7), (False, [], None), (True, ["x"], 9.0)]):
        rows.append(dict(model="m", level="level1", problem=f"level1/{i}_P", correct=c, flags=f, speedup_eager=s,
                         speedup_compile=None, failure=None if c else "crash", device="cuda", backend="cuda", small=False,
                         device_name="NVIDIA H100 80GB HBM3", timestamp=pd.Timestamp("2026-11-21 08:00", tz="UTC")))
    return pd.DataFrame(rows)


def _interpreted(n=3):
    return pd.DataFrame([dict(model="m", level="level1", problem=f"level1/{10 + i}_Interp", correct=True, flags=[],
                              speedup_eager=10.0 ** -(3 + i), speedup_compile=None, failure=None, device="cpu",
                              backend="triton" if i else "cpp", small=True, device_name="x86_64",
                              timestamp=pd.Timestamp("2026-11-22", tz="UTC")) for i in range(n)])


def test_figures_are_written_and_deterministic(tmp_path):
    df = _df()
    digests = []
    for k in range(2):
        paths = plots.save(plots.speedup_plot(df), tmp_path / f"run{k}" / "speedup")
        assert [p.suffix for p in paths] == [".pdf", ".png"]
        digests.append([hashlib.sha256(p.read_bytes()).hexdigest() for p in paths])
    assert digests[0] == digests[1]
    plots.save(plots.fast_p_curve(df), tmp_path / "fastp")
    plots.save(plots.outcome_bars(df), tmp_path / "outcomes")
    assert (tmp_path / "fastp.png").stat().st_size > 1000


def _plotted_speeds(fig) -> list[float]:
    """Every point a figure's scatters drew (x for the per-problem chart, y for the strips)."""
    from matplotlib.collections import PathCollection

    ax = fig.axes[0]
    col = 0 if ax.get_xscale() == "log" else 1
    return sorted(float(p[col]) for c in ax.collections if isinstance(c, PathCollection) for p in c.get_offsets())


def test_interpreter_timed_rows_never_enter_a_speedup_figure(tmp_path):
    import matplotlib.pyplot as plt

    from kbench_lib import workflows

    mixed = pd.concat([_df(), _interpreted()], ignore_index=True)
    fig = plots.speedup_plot(mixed)
    names = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert sorted(names) == ["0_P", "1_P", "2_P", "3_P"]  # the GPU rows only
    assert all(v >= 0.1 for v in _plotted_speeds(fig))  # no 1e-3.. interpreter speedups
    title = fig._suptitle.get_text()  # the figure title (Figure.get_suptitle from matplotlib 3.8)
    assert "x86_64" not in title and "NVIDIA H100" in title
    plt.close(fig)
    with pytest.raises(plots.NoKernelTimings):
        plots.speedup_plot(_interpreted())
    with pytest.raises(plots.NoKernelTimings):
        plots.fast_p_curve(_interpreted())
    made = workflows.figures(_interpreted(), tmp_path / "cpu")
    assert list(made) == ["outcomes"]  # a run without a GPU draws its outcomes, no speedup
    # many rows: the per-level strip form leaves them out too
    many = pd.concat([_df()] * 20 + [_interpreted()], ignore_index=True)
    assert all(v >= 0.1 for v in _plotted_speeds(plots.speedup_plot(many)))
    plt.close("all")


def test_provenance_names_device_and_dates():
    df = pd.concat([_df(), _df().assign(timestamp=pd.Timestamp("2026-11-23", tz="UTC"))])
    assert plots.provenance(df) == "NVIDIA H100 80GB HBM3 · 2026-11-21 to 2026-11-23"
    assert plots.provenance(pd.DataFrame({"device_name": ["A"], "date": ["2026-11-21T10:34:56+00:00"]})) == "A · 2026-11-21"


def test_committed_figures_one_folder_per_device(tmp_path):
    from kbench_lib import workflows

    records = _df().assign(sol_ms=0.5, runtime_ms=1.0)
    base = pd.DataFrame([{"problem": f"level1/{i}_P", "level": "level1", "mode": mode, "runtime_ms": ms, "sol_ms": 0.5,
                          "failure": None, "device_name": "NVIDIA H100 80GB HBM3", "date": "2026-11-21T10:00:00+00:00"}
                         for i in range(3) for mode, ms in (("eager", 1.0), ("compile", 0.8), ("cudagraph", 0.9))])
    made = workflows.committed_figures(records, base, tmp_path)
    slug = "nvidia-h100-80gb-hbm3"
    assert set(made) == {f"{slug}/{n}" for n in ("fast_p_by_level", "speedup_eager", "baselines_vs_eager", "sol_fraction")}
    assert all(p.exists() for paths in made.values() for p in paths)
    # sol fractions: eager and compile from the baselines, the trusted kernel-timed candidates from the records
    names = [n for n, _ in workflows.sol_fractions(records, base)]
    assert names == ["eager PyTorch", "torch.compile", "m"]
    assert list(workflows.sol_fractions(records, base)[2][1]["value"]) == [0.5, 0.5]  # rows 0 and 1: trusted


def test_figures_are_saved_at_the_styles_resolution(tmp_path):
    """A PNG is written at the style's 300 dpi, however the figure was drawn (outside the style
    matplotlib's default is 100 dpi, which left 3-pixel labels in the rendered notebooks)."""
    import matplotlib.pyplot as plt

    from kbench_lib.reports import plots

    fig, ax = plt.subplots(figsize=(3.0, 2.0))
    ax.plot([0, 1], [0, 1])
    png = next(p for p in plots.save(fig, tmp_path / "f") if p.suffix == ".png")
    width = int.from_bytes(png.read_bytes()[16:20], "big")
    assert 0.8 * 3.0 * plots.STYLE["savefig.dpi"] <= width <= 3.0 * plots.STYLE["savefig.dpi"] + 2


def test_notebooks_show_figures_with_labels_of_at_least_9_points():
    """workflows.show's scale, as every notebook calls it, shows the style's smallest label at 9 pt
    or more; a notebook that passes its own scale is checked at that scale."""
    import inspect
    import json
    import re

    from kbench_lib import workflows
    from kbench_lib.reports import plots

    default = inspect.signature(workflows.show).parameters["scale"].default
    scales = {default}
    for nb in (REPO / "notebooks").glob("*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            scales |= {float(s) for s in re.findall(r"show\([^)]*scale\s*=\s*([0-9.]+)", "".join(cell["source"]))}
    assert all(plots.displayed_label_pt(s) >= 9 for s in scales), {s: plots.displayed_label_pt(s) for s in scales}
    assert plots.displayed_label_pt(0.3) < 9  # the check can fail: too small a scale is caught
