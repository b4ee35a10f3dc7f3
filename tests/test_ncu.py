"""CPU tests: reading Nsight Compute's CSV output (kbench_lib.measure.ncu) and the timing-fidelity
benchmark's bookkeeping (splitting ncu's kernel list per workload, the criteria and the table)."""
import importlib.util
import sys
from pathlib import Path

import pytest

from kbench_lib.measure import ncu

REPO = Path(__file__).resolve().parent.parent

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1>>(int, T2, T3)"
MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, "
       "at::native::binary_internal::MulFunctor<float>>, std::array<char*, 2>>(int, T2, T3)")
SPIN = "at::cuda::<unnamed>::spin_kernel(long)"
GEMM = "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x16_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"


def row(i: int, kernel: str, unit: str, value: str, metric: str = "gpu__time_duration.sum") -> str:
    return (f'"{i}","41234","python3.10","127.0.0.1","{kernel}","1","7","(128, 1, 1)","(1024, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


NCU_OUTPUT = "\n".join([
    "==PROF== Connected to process 41234 (/usr/bin/python3.10)",
    "==WARNING== Note: Running with uncontrolled GPU clocks.",
    '==PROF== Profiling "spin_kernel" - 0: 0%....50%....100% - 1 pass',
    "loss 0.125, step 3",  # the program's own output
    '"a","b"',  # program output that looks like CSV, before the table
    "==PROF== Disconnected from process 41234",
    HEADER,
    row(0, SPIN, "usecond", "1.57"),
    row(1, FILL, "nsecond", "2,880"),
    '"not","a","row"',  # program output that looks like CSV, inside the table
    row(2, MUL, "usecond", "1,234.56"),
    row(3, GEMM, "msecond", "21.93"),
    row(4, GEMM, "second", "0.5"),
])


def test_parse_mixed_output_names_units_and_separators():
    ks = ncu.parse_gpu_time_csv(NCU_OUTPUT)
    assert [k["id"] for k in ks] == [0, 1, 2, 3, 4]
    assert [k["kernel"] for k in ks] == [SPIN, FILL, MUL, GEMM, GEMM]  # commas inside quoted names survive
    assert [k["ns"] for k in ks] == pytest.approx([1570.0, 2880.0, 1_234_560.0, 21_930_000.0, 5e8])


def test_parse_sorts_by_id_ignores_other_metrics_and_crlf():
    text = "\r\n".join([HEADER, row(2, MUL, "ns", "300"), row(0, FILL, "us", "2"),
                        row(0, FILL, "cycle", "4,000", metric="sm__cycles_elapsed.avg"), row(1, MUL, "ms", "0.001")]) + "\r\n"
    ks = ncu.parse_gpu_time_csv(text)
    assert [(k["id"], k["ns"]) for k in ks] == [(0, 2000.0), (1, 1000.0), (2, 300.0)]


def test_parse_repeated_header_is_skipped():
    ks = ncu.parse_gpu_time_csv("\n".join([HEADER, row(0, FILL, "nsecond", "10"), HEADER, row(1, FILL, "nsecond", "20")]))
    assert [k["ns"] for k in ks] == [10.0, 20.0]


@pytest.mark.parametrize("text, message", [
    ("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n", "no ncu CSV table"),
    ("", "no ncu CSV table"),
    (HEADER + "\n" + row(0, FILL, "cycle", "12", metric="sm__cycles_elapsed.avg"), "no rows with Metric Name"),
    (HEADER + "\n" + row(0, FILL, "furlong", "12"), "unknown time unit"),
    (HEADER + "\n" + row(0, FILL, "nsecond", "n/a"), "not a number"),
    (HEADER + "\n" + row(0, FILL, "nsecond", "1") + "\n" + row(0, FILL, "nsecond", "2"), "two gpu__time_duration.sum rows"),
    ('"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Value"\n', "lacks columns"),
])
def test_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        ncu.parse_gpu_time_csv(text)


def test_per_call_ns_groups_consecutive_launches():
    ks = [{"id": i, "kernel": "k", "ns": float(v)} for i, v in enumerate([1, 2, 3, 4, 5, 6])]
    assert ncu.per_call_ns(ks, 1) == [1, 2, 3, 4, 5, 6]
    assert ncu.per_call_ns(ks, 2) == [3, 7, 11]
    assert ncu.per_call_ns(ks, 3) == [6, 15]
    with pytest.raises(ValueError, match="not a multiple"):
        ncu.per_call_ns(ks, 4)
    with pytest.raises(ValueError, match=">= 1"):
        ncu.per_call_ns(ks, 0)


def test_ncu_command():
    cmd = ncu.ncu_command(["python3", "bench.py", "--child"], extra=["--launch-count", "5"], exe="/opt/ncu")
    assert cmd[0] == "/opt/ncu" and cmd[-3:] == ["python3", "bench.py", "--child"]
    assert cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--cache-control") + 1] == "all"
    assert cmd[cmd.index("--metrics") + 1] == "gpu__time_duration.sum"
    assert cmd[cmd.index("--nvtx-include") + 1] == "kbench_fid/"
    assert cmd[cmd.index("--target-processes") + 1] == "all"
    assert "--csv" in cmd and "--nvtx" in cmd
    assert cmd.index("--launch-count") < cmd.index("python3")
    assert ncu.ncu_command(["x"], nvtx_range="r", exe="ncu")[ncu.ncu_command(["x"], exe="ncu").index("--nvtx-include") + 1] == "r/"


def test_available(monkeypatch):
    monkeypatch.setattr(ncu.shutil, "which", lambda name: "/somewhere/ncu" if name == "ncu" else None)
    assert ncu.available() == "/somewhere/ncu"
    monkeypatch.setattr(ncu.shutil, "which", lambda name: None)
    monkeypatch.setattr(ncu.glob, "glob", lambda pattern: ["/opt/nvidia/nsight-compute/2023.1/ncu", "/opt/nvidia/nsight-compute/2024.3/ncu"])
    monkeypatch.setattr(ncu.os.path, "isfile", lambda p: p.startswith("/opt/"))
    monkeypatch.setattr(ncu.os, "access", lambda p, mode: True)
    assert ncu.available() == "/opt/nvidia/nsight-compute/2024.3/ncu"
    monkeypatch.setattr(ncu.os.path, "isfile", lambda p: False)
    assert ncu.available() is None


# ------------------------------------------------------------------- the benchmark's bookkeeping
@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("timing_fidelity", REPO / "benchmarks" / "timing_fidelity.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["timing_fidelity"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("timing_fidelity", None)


def kernels(*groups):
    """Kernel dicts from (name, [ns...]) groups, numbered consecutively."""
    out = []
    for name, values in groups:
        out += [{"id": len(out) + i, "kernel": name, "ns": float(v)} for i, v in enumerate(values)]
    return out


def test_workload_ladder(bench):
    names = list(bench.WORKLOADS)
    assert 10 <= len(names) <= 12 and names[0] == "ew_4k" and names[-1] == "mm_8192"
    assert bench.EW_SIZES["4k"] == 4096 and bench.EW_SIZES["256m"] == 256 * 2**20


def test_split_ncu_by_markers(bench):
    order = [{"name": "ew_4k", "calls": 3, "marked": True, "error": None},
             {"name": "broken", "calls": 0, "marked": False, "error": "OutOfMemoryError: ..."},
             {"name": "mm_2048", "calls": 2, "marked": True, "error": None}]
    ks = kernels((SPIN, [1500]), (MUL, [3000, 1000, 2000]), (SPIN, [1500]), (GEMM, [100, 10, 300, 30]))
    res = bench.split_ncu(ks, order)
    assert res["ew_4k"]["ncu_ms"] == pytest.approx(2000 / 1e6) and res["ew_4k"]["ncu_kernels_per_call"] == 1
    assert res["ew_4k"]["ncu_calls"] == 3 and res["ew_4k"]["ncu_error"] is None
    # two kernels per call (e.g. a split-K GEMM and its reduction): each call is the sum of its two
    assert res["mm_2048"]["ncu_kernels_per_call"] == 2 and res["mm_2048"]["ncu_ms"] == pytest.approx(220 / 1e6)
    assert "ncu_ms" not in res["broken"] and "OutOfMemoryError" in res["broken"]["ncu_error"]


def test_split_ncu_from_parsed_csv(bench):
    text = "\n".join([HEADER, row(0, SPIN, "usecond", "1.5"), *(row(1 + i, MUL, "usecond", v) for i, v in enumerate(["3", "5", "4"]))])
    res = bench.split_ncu(ncu.parse_gpu_time_csv(text), [{"name": "ew_4k", "calls": 3, "marked": True, "error": None}])
    assert res["ew_4k"]["ncu_ms"] == pytest.approx(0.004) and res["ew_4k"]["ncu_kernels"] == [MUL]


def test_split_ncu_errors_and_fallback(bench):
    order = [{"name": "a", "calls": 2, "marked": True, "error": None}, {"name": "b", "calls": 2, "marked": True, "error": None}]
    with pytest.raises(ValueError, match="1 marker kernels .* 2 workloads"):
        bench.split_ncu(kernels((SPIN, [1]), (MUL, [1, 2, 3, 4])), order)
    with pytest.raises(ValueError, match="before the first marker"):
        bench.split_ncu(kernels((MUL, [9]), (SPIN, [1]), (MUL, [1, 2]), (SPIN, [1]), (MUL, [1, 2])), order)
    # a segment that is not a whole number of calls is that workload's error only
    res = bench.split_ncu(kernels((SPIN, [1]), (MUL, [1, 2, 3]), (SPIN, [1]), (MUL, [5, 7])), order)
    assert "3 kernels for 2 calls" in res["a"]["ncu_error"] and res["b"]["ncu_ms"] == pytest.approx(6e-6)
    # no markers at all: one kernel per call, checked against the total
    res = bench.split_ncu(kernels((MUL, [1, 3, 10, 20])), order)
    assert res["a"]["ncu_ms"] == pytest.approx(2e-6) and res["b"]["ncu_ms"] == pytest.approx(15e-6)
    with pytest.raises(ValueError, match="no marker kernels and 5 kernels for 4 calls"):
        bench.split_ncu(kernels((MUL, [1, 3, 10, 20, 30])), order)


def synthetic(name, ncu_ms, e2e_pct, dev_pct, e2e_spread=0.2, dev_spread=0.1, remeasured=(0,) * 10):
    r = {"name": name, "ncu_ms": ncu_ms, "e2e_ms": ncu_ms * (1 + e2e_pct / 100), "device_ms": ncu_ms * (1 + dev_pct / 100),
         "graph_ms": ncu_ms, "e2e_spread_pct": e2e_spread, "device_spread_pct": dev_spread, "remeasured": list(remeasured)}
    for k in ("e2e", "device", "graph"):
        r[f"{k}_vs_ncu_pct"] = (r[f"{k}_ms"] - ncu_ms) / ncu_ms * 100
    return r


def test_criteria_hold(bench):
    rows = [synthetic("ew_4k", 0.003, 150.0, 20.0, e2e_spread=9.0, dev_spread=5.0),  # below every floor
            synthetic("ew_1m", 0.006, 30.0, 2.5, e2e_spread=3.0),  # >= 5 us, < 10 us and < 50 us
            synthetic("ew_64m", 0.17, 4.9, -2.9, e2e_spread=0.9, dev_spread=0.5)]
    held = {label: ok for label, ok, _ in bench.criteria(rows)}
    assert list(held.values()) == [True, True, True, True]


def test_criteria_fail_on_4_percent_and_spread(bench):
    rows = [synthetic("ew_16k", 0.005, 10.0, 1.0), synthetic("ew_256k", 0.1, 6.0, 4.0, e2e_spread=1.5, dev_spread=0.4)]
    res = bench.criteria(rows)
    assert [ok for _, ok, _ in res] == [False, False, False, True]
    assert "ew_256k +4.00%" in res[0][2] and "ew_16k" not in res[0][2]
    assert "ew_256k +6.00%" in res[1][2]
    assert "ew_256k 1.50%" in res[2][2]


def test_criteria_not_judged_without_ncu_or_device_clock(bench):
    rows = [{"name": "ew_64m", "ncu_ms": None, "e2e_ms": 0.2, "device_ms": None, "e2e_spread_pct": 0.3,
             "device_spread_pct": None, "e2e_vs_ncu_pct": None, "device_vs_ncu_pct": None}]
    assert [ok for _, ok, _ in bench.criteria(rows)] == [None, None, True, None]
    # a device clock missing on one workload in scope fails rather than passing silently
    rows = [synthetic("a", 0.1, 1.0, 1.0), {**synthetic("b", 0.1, 1.0, 1.0), "device_vs_ncu_pct": None}]
    ok, detail = bench.criteria(rows)[0][1:]
    assert ok is False and "b n/a" in detail


def test_render_markdown(bench):
    rows = [synthetic("ew_4k", 0.0031, 150.0, 2.0, remeasured=(0, 1, 0, 0, 2, 0, 0, 0, 0, 0)),
            {**synthetic("mm_8192", 21.9, 0.4, 0.1), "ncu_kernels_per_call": 2, "e2e_idle_ms": 22.0, "e2e_idle_vs_ncu_pct": 0.4566},
            {"name": "ew_256m", "error": "OutOfMemoryError: boom", "ncu_error": "ncu not found"}]
    md = bench.render_markdown(rows, {"device": "NVIDIA H100 80GB HBM3", "torch": "2.5.1", "ncu": None})
    lines = md.splitlines()
    assert "device: NVIDIA H100 80GB HBM3; torch: 2.5.1;" in md and "ncu:" not in lines[2]
    table = [line for line in lines if line.startswith("| ew_4k")][0]
    assert table.startswith("| ew_4k | 3.10 | 7.75 (+150.0%) | 3.16 (+2.0%) | 3.10 (+0.0%) | - | 0.20% / 0.10% | 3 (in 2/10 runs) |"), table
    assert "| mm_8192 | 21,900.00 | 21,987.60 (+0.4%) |" in md and "| 22,000.00 (+0.5%) |" in md  # the clock without head start
    assert "| ew_256m | - | - | - | - | - | - / - | 0 (in 0/0 runs) |" in md
    assert "ew_256m: OutOfMemoryError: boom" in md and "ew_256m ncu: ncu not found" in md and "mm_8192: 2 kernels per call" in md
    assert "- device-busy within 3% of ncu for every kernel >= 5 us: **HELD**" in md
    assert "- end-to-end within 5% of ncu from 50 us: **HELD** (1 workloads in scope)" in md


def test_run_ncu_with_a_fake_ncu(bench, tmp_path, monkeypatch):
    """The parent's side of the protocol: ncu's stdout parsed, the child's lines read from stderr."""
    csv_text = "\n".join([HEADER, row(0, SPIN, "usecond", "1.5"), *(row(1 + i, MUL, "usecond", v) for i, v in enumerate(["3", "5", "4"]))])
    (tmp_path / "stdout.txt").write_text("==PROF== Connected to process 1\n" + csv_text + "\n")
    (tmp_path / "stderr.txt").write_text(
        'KBENCH_FID {"name": "ew_4k", "calls": 3, "marked": true, "error": null}\n'
        'KBENCH_FID {"name": "ew_16k", "calls": 0, "marked": false, "error": "RuntimeError: no"}\n')
    fake = tmp_path / "ncu"
    fake.write_text(f'#!/bin/sh\n[ "$1" = --version ] && {{ echo "Version 2024.3.2.0 (build 1)"; exit 0; }}\n'
                    f'cat {tmp_path}/stdout.txt; cat {tmp_path}/stderr.txt >&2\n')
    fake.chmod(0o755)
    monkeypatch.setattr(ncu, "available", lambda: str(fake))
    args = type("A", (), {"no_ncu": False, "ncu_calls": 3, "ncu_timeout": 30, "out": str(tmp_path)})()
    res, error, version = bench.run_ncu(["ew_4k", "ew_16k"], args)
    assert error is None and version == "Version 2024.3.2.0 (build 1)"
    assert res["ew_4k"]["ncu_ms"] == pytest.approx(0.004) and res["ew_16k"]["ncu_error"] == "RuntimeError: no"
    assert "--nvtx-include kbench_fid/" in (tmp_path / "ncu_output.txt").read_text()
    (tmp_path / "stdout.txt").write_text("==ERROR== ERR_NVGPUCTRPERM - no permission\n")
    res, error, _ = bench.run_ncu(["ew_4k"], args)
    assert res == {} and "no ncu CSV table" in error
    args.no_ncu = True
    assert bench.run_ncu(["ew_4k"], args) == ({}, "skipped (--no-ncu)", None)


# the first lines of a real run on the H100 (ncu 2025.3.1, --nvtx): NVTX range columns sit between
# "Host Name" and "Kernel Name", and a cell holds doubled quotes
H100_NVTX = """==WARNING== Note: Running with unmodified GPU clocks. If not controlled otherwise, profiling results may be inconsistent.
==PROF== Connected to process 526 (/usr/bin/python3.12)
==PROF== Disconnected from process 526
"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","526","python3.12","127.0.0.1","526  ""<default domain>:kbench_fid:none:none:none:none:none:none"" ","","cuda::<unnamed>::spin_kernel(long)","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","ns","2,624"
"""


def test_parses_the_h100_table_with_nvtx_columns():
    k = ncu.parse_gpu_time_csv(H100_NVTX)
    assert [r["id"] for r in k] == [0]
    assert k[0]["kernel"] == "cuda::<unnamed>::spin_kernel(long)" and k[0]["ns"] == 2624.0

