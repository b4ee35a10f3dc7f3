"""Adversarial suite, GPU: the threat class (docs/THREAT_MODEL.md)es that need CUDA (stale memory from the caching
allocator, side streams, deferred device work, the roofline bound, illegal memory access) and the
GPU versions of the legitimate twins. Marked ``gpu``: skipped without a CUDA device.

The candidates are under cheats/gpu/ and legit/gpu/. They bind their CUDA kernels with raw CPython
(no torch headers), so nvcc builds each in seconds. The conventions (``any_of``, ``all_of``,
``tamper``) are those of test_adversarial_cpu.py. Problems run at full size (the judge's default on
a GPU). ``KBENCH_ADV_REPORT=/some/file.jsonl`` gets one JSON line per verdict.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.pipeline import JudgeOptions, judge
from kbench_lib.suite.problems import load_problem

from adversarial_common import MISMATCH, Cheat, assert_caught, report, summary  # beside this file

pytestmark = pytest.mark.gpu

HERE = Path(__file__).resolve().parent
OPTS = dict(device="cuda", timing_budget_s=float(os.environ.get("KBENCH_TEST_TIMING_BUDGET", "0.5")))

ELEMENTWISE = "1_Scale_Add_ReLU"
LINEAR = "2_Linear_GELU"
ROWSUM = "3_Row_Sum"
HONEST = ("legit/gpu/elementwise_cuda.py", ELEMENTWISE)

_VERDICTS: dict = {}


def _judge(rel: str, problem: str):
    return judge(load_problem(HERE / "problems" / f"{problem}.py"), load_candidate(HERE / rel), JudgeOptions(**OPTS))


def verdict(rel: str, problem: str):
    key = (rel, problem)
    if key not in _VERDICTS:
        v = _VERDICTS[key] = _judge(rel, problem)
        report(rel, problem, v)
    return _VERDICTS[key]


CHEATS = [
    Cheat("g01d_library_passthrough_rewritten_ops.py", LINEAR),
    Cheat("g03_decoy_kernel.py", LINEAR, all_of=("flag:library_passthrough",)),
    Cheat("g04a_stale_memory_partial_write.py", ELEMENTWISE, any_of=MISMATCH),
    Cheat("g04b_stale_memory_no_write.py", ELEMENTWISE, any_of=MISMATCH),
    Cheat("g10_deferred_host_thread.py", ELEMENTWISE, any_of=(*MISMATCH, "flag:threads_started")),
    Cheat("g11a_side_stream_unjoined_delayed.py", ELEMENTWISE, all_of=("flag:side_stream_unjoined",)),
    Cheat("g11b_side_stream_unjoined.py", ELEMENTWISE, all_of=("flag:side_stream_unjoined",)),
    Cheat("g17_tf32_inside_forward.py", LINEAR),
    Cheat("g18_uninitialised_output.py", ELEMENTWISE, any_of=MISMATCH),
    Cheat("g20a_memoise_by_pointer.py", ELEMENTWISE, any_of=("flag:faster_than_light", "failure:output_mismatch")),
    Cheat("g20b_patched_event_timer.py", ELEMENTWISE, all_of=("flag:faster_than_light",), tamper=True, forges_time=True),
]

LEGIT = [
    ("elementwise_cuda.py", ELEMENTWISE),  # control
    ("gemm_library_fused_epilogue_cuda.py", LINEAR),
    ("weights_prepared_in_init_cuda.py", LINEAR),
    ("reduction_summation_order_cuda.py", ROWSUM),
    ("side_stream_joined_cuda.py", ELEMENTWISE),
]


def _files() -> list[Path]:
    return ([HERE / "cheats" / "gpu" / c.file for c in CHEATS] + [HERE / "legit" / "gpu" / f for f, _ in LEGIT]
            + [HERE / "cheats" / "gpu" / "gfault_illegal_memory_access.py"])


@pytest.fixture(scope="module", autouse=True)
def built_in_parallel():
    """This file's CUDA candidates compiled at once, on every core: built one judgement at a time
    they took 14-22 s each on the H100 (2026-11-27), most of this file's time."""
    from kbench_lib.batch.runner import prebuild

    prebuild([load_candidate(f) for f in _files()], "cuda", JudgeOptions(**OPTS), jobs=os.cpu_count() or 2, progress=False)


@pytest.mark.parametrize("file, problem", LEGIT, ids=[Path(f).stem for f, _ in LEGIT])
def test_legit_twin_passes_untouched_gpu(file, problem):
    v = verdict(f"legit/gpu/{file}", problem)
    print(f"legit/gpu/{file}: {summary(v)}")
    assert v.correct and v.flags == [], f"LEGIT TWIN WRONGLY FAILED OR FLAGGED: {summary(v)}"
    assert v.runtime_ms and v.runtime_ms > 0, summary(v)


@pytest.mark.parametrize("cheat", CHEATS, ids=[c.id for c in CHEATS])
def test_cheat_is_caught_gpu(cheat: Cheat):
    assert_caught(cheat, verdict(f"cheats/gpu/{cheat.file}", cheat.problem), lambda: verdict(*HONEST), min_ratio=0.5, folder="cheats/gpu")


def test_illegal_memory_access_is_contained_and_the_next_candidate_runs():
    v = verdict("cheats/gpu/gfault_illegal_memory_access.py", ELEMENTWISE)
    print(f"cheats/gpu/gfault_illegal_memory_access.py: {summary(v)}")
    assert not v.correct and v.failure in ("runtime_error", "crash"), summary(v)
    after = _judge(*HONEST)  # judged afresh, right after the fault
    assert after.correct and after.flags == [], f"the candidate after a fault did not run cleanly: {summary(after)}"
