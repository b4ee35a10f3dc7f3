"""benchmarks/throughput.py's eager control: each problem outside the band named with its cause,
and the control read on the device-busy clock too."""
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import throughput  # noqa: E402


def _row(problem, run, base, dev, base_dev):
    return {"model": "eager", "problem": problem, "speedup_eager": base / run, "runtime_ms": run, "baseline_eager_ms": base,
            "device_ms": dev, "baseline_eager_device_ms": base_dev, "failure": None, "flags": []}


def test_outside_the_band_each_problem_gets_its_cause():
    df = pd.DataFrame([
        _row("a", 1.0, 1.0, 0.98, 0.98),  # within the band
        _row("lstm", 14.2, 20.2, 9.1, 9.2),  # host time: the device clocks agree
        _row("gemm", 1.0, 1.2, 0.99, 1.19),  # the device times differ too
        _row("conv", 1.0, 0.9, 0.99, 0.99),  # device-bound, device clocks agree
        _row("none", 1.0, 1.3, None, 1.0),
    ])
    got = throughput.eager_speedups(df)
    assert got["timed"] == 5 and got["share_within_band"] == 0.2
    causes = {o["problem"]: o["cause"] for o in got["outside"]}
    assert causes["lstm"].startswith("host-bound")
    assert causes["gemm"].startswith("device time differs")
    assert causes["conv"].startswith("unexplained: device-bound")
    assert causes["none"].startswith("unexplained: no device-busy clock")
    # the device-busy clock's own control: a, lstm (1.011x), conv within; gemm (1.2x) outside; none has no clock
    assert got["device_clock"]["timed"] == 4 and got["device_clock"]["share_within_band"] == 0.75
