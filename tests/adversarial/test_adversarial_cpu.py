"""Adversarial suite, CPU: every threat class (docs/THREAT_MODEL.md) that can exist without a GPU, as cheating candidates
the judge must catch, and the legitimate twins it must pass untouched. Runs in CI (marked slow).

Each candidate is judged once per session, for real: build, isolated worker, correctness over fresh
seeds and every SMALL variant, profile, timing. A cheat states how it must be caught:

- ``any_of``: acceptable catches, ``"failure:<category>"`` or ``"flag:<flag name>"`` (the text before
  the colon of a flag); empty means any catch (the defence does not exist yet, so its name is open);
- ``all_of``: catches that must all be there: the runtime defence under test, even where a static
  flag would already have caught the candidate.

A cheat that failed to build or load proves nothing and fails its test. The cheats that tamper with
the harness inside the candidate's process (``tamper``) count as defeated, rather than caught, when
their target is gone (they fail with 'CHEAT TARGET MISSING') or when the time they tried to fake was
measured honestly anyway. README.md beside this file has the table.

Set ``KBENCH_ADV_REPORT=/some/file.jsonl`` to get one JSON line per verdict. The separate build stage is
skipped for speed (the extensions compile at import in the run process); ``KBENCH_ADV_FULL_BUILD=1``
runs it.
"""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kbench_lib.judging import build
from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.pipeline import JudgeOptions, judge
from kbench_lib.suite.problems import load_problem

from adversarial_common import MISMATCH, Cheat, assert_caught, report, summary  # beside this file

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OPTS = dict(device="cpu", timing_budget_s=0.3, min_trials=20, max_trials=200, warmup_ms=1)

ELEMENTWISE = "1_Scale_Add_ReLU"
LINEAR = "2_Linear_GELU"
ROWSUM = "3_Row_Sum"
ZERO = "4_Degenerate_ZeroOutput"
CONSTANT = "5_Degenerate_ConstantOutput"
HONEST = ("legit/elementwise_cpp.py", ELEMENTWISE)  # the honest time the timing forgeries are held to

_VERDICTS: dict = {}


def verdict(rel: str, problem: str):
    """The verdict on one candidate (judged once per session)."""
    key = (rel, problem)
    if key not in _VERDICTS:
        candidate = load_candidate(HERE / rel)
        if not os.environ.get("KBENCH_ADV_FULL_BUILD") and build.needs_build(candidate):
            # Speed: skip the separate build process (a Python start, a torch import) per candidate; the
            # extension still compiles, at import in the run process. The build stage itself is tested
            # in tests/test_judge_cpu.py; KBENCH_ADV_FULL_BUILD=1 runs it here too.
            build.mark_built(candidate, OPTS["device"], 0.0, "build stage skipped by tests/adversarial")
        v = judge(load_problem(HERE / "problems" / f"{problem}.py"), candidate, JudgeOptions(**OPTS))
        _VERDICTS[key] = v
        report(rel, problem, v)
    return _VERDICTS[key]


CHEATS = [
    # 1-3: what ran, not what was written
    Cheat("01a_library_passthrough_no_kernel.py", LINEAR, all_of=("flag:no_custom_kernel", "flag:library_passthrough")),
    Cheat("01b_library_passthrough_unused_kernel.py", LINEAR, all_of=("flag:library_passthrough",)),
    # the profiler-aware cheat must look for the profiler, which the static check flags
    Cheat("01c_library_passthrough_profiler_aware.py", LINEAR, any_of=("flag:library_passthrough", "flag:introspection")),
    Cheat("02_fallback.py", LINEAR, all_of=("flag:library_passthrough",)),
    Cheat("03_decoy_kernel.py", LINEAR, all_of=("flag:library_passthrough",)),
    # 4-7: memory, inputs, tasks, shapes
    Cheat("04_stale_memory_partial_write.py", ELEMENTWISE, any_of=MISMATCH),
    Cheat("05a_input_mutation_output_into_input.py", ELEMENTWISE, any_of=("failure:input_mutated", "flag:output_aliases_input")),
    Cheat("05b_input_mutation_during_timing.py", ELEMENTWISE, any_of=("failure:input_mutated", "failure:output_mismatch")),
    Cheat("06a_degenerate_zero_output.py", ZERO, all_of=("flag:degenerate_task",)),
    Cheat("06b_degenerate_constant_output.py", CONSTANT, all_of=("flag:degenerate_task",)),
    Cheat("07a_single_shape.py", ELEMENTWISE, any_of=("failure:shape_mismatch", "failure:output_mismatch")),
    Cheat("07b_replays_job_inputs.py", ELEMENTWISE, tamper=True),
    Cheat("07c_predicts_timed_seeds.py", LINEAR, tamper=True),
    # 8-10: what the timed calls do
    Cheat("08a_memoise_by_pointer.py", ELEMENTWISE),
    Cheat("08b_memoise_by_fingerprint.py", ELEMENTWISE),
    Cheat("09a_phase_detection_call_count.py", ELEMENTWISE, any_of=("failure:output_mismatch",)),
    Cheat("09b_phase_detection_reads_harness_frames.py", ELEMENTWISE),
    Cheat("10_deferred_work.py", ELEMENTWISE, any_of=MISMATCH),
    # 12: threads (11, side streams, is GPU-only)
    Cheat("12a_thread_work_threading.py", ELEMENTWISE, all_of=("flag:threads_started",)),
    Cheat("12b_thread_work_low_level.py", ELEMENTWISE, all_of=("flag:threads_started",)),
    Cheat("12c_background_work_forked_helper.py", ELEMENTWISE),
    # 13: outputs that lie
    Cheat("13a_lying_tensor_subclass.py", ELEMENTWISE, any_of=("failure:output_mismatch",)),
    Cheat("13b_meta_output.py", ELEMENTWISE, any_of=("failure:output_mismatch",)),
    Cheat("13c_lazy_output_patched_tensor_to.py", ELEMENTWISE),
    # 14-15: the judge's own machinery
    Cheat("14a_patch_timer_naive.py", ELEMENTWISE, all_of=("flag:patches_library", "flag:timer_tampered")),
    Cheat("14b_patch_timer_aliased.py", ELEMENTWISE, all_of=("flag:timer_tampered",)),
    Cheat("14c_patch_harness_timer_bindings.py", ELEMENTWISE, tamper=True, forges_time=True),
    Cheat("14d_patch_harness_profiler.py", LINEAR, tamper=True),
    Cheat("15a_gc_search_for_expected_output.py", ELEMENTWISE, any_of=(*MISMATCH, "failure:shape_mismatch")),
    Cheat("15b_forge_timing_message.py", ELEMENTWISE, tamper=True, forges_time=True),
    Cheat("15c_forge_results_and_die.py", ELEMENTWISE, tamper=True, forges_time=True),
    Cheat("15d_precompute_timed_inputs.py", ELEMENTWISE, tamper=True),
    Cheat("15e_precompute_while_drawn.py", ELEMENTWISE, tamper=True, all_of=("flag:input_drawing_tampered",)),
    Cheat("15f_override_tensor_method_seen_in_draw.py", LINEAR, tamper=True, all_of=("flag:input_drawing_tampered",)),
    Cheat("15g_patch_judge_helper_module.py", LINEAR, tamper=True, all_of=("flag:input_drawing_tampered",)),
    Cheat("15h_draws_timed_sets_ahead.py", LINEAR, tamper=True, all_of=("flag:input_drawing_tampered",)),
    Cheat("15i_rewrites_timing_record_late.py", LINEAR, tamper=True, all_of=("failure:crash",)),
    # 16-18: numerics and settings
    Cheat("16_precision_downgrade_bf16.py", LINEAR, any_of=("failure:output_mismatch",)),
    Cheat("17a_global_settings_assignment.py", LINEAR, all_of=("flag:changes_settings",)),
    Cheat("17b_global_settings_calls.py", LINEAR),
    Cheat("18_uninitialised_output.py", ELEMENTWISE, any_of=MISMATCH),
]

LEGIT = [
    ("elementwise_cpp.py", ELEMENTWISE),  # control: if this fails, nothing below means anything
    ("gemm_library_fused_epilogue.py", LINEAR),
    ("weights_prepared_in_init.py", LINEAR),
    ("weights_prepared_in_init_same_names.py", LINEAR),
    ("reduction_summation_order.py", ROWSUM),
    ("openmp_parallel_kernel.py", ELEMENTWISE),
]


@pytest.mark.parametrize("file, problem", LEGIT, ids=[Path(f).stem for f, _ in LEGIT])
def test_legit_twin_passes_untouched(file, problem):
    v = verdict(f"legit/{file}", problem)
    print(f"legit/{file}: {summary(v)}")
    assert v.correct and v.flags == [], f"LEGIT TWIN WRONGLY FAILED OR FLAGGED: {summary(v)}"
    assert v.runtime_ms and v.runtime_ms > 0 and v.variants_checked >= 1, summary(v)


@pytest.mark.parametrize("cheat", CHEATS, ids=[c.id for c in CHEATS])
def test_cheat_is_caught(cheat: Cheat):
    assert_caught(cheat, verdict(f"cheats/{cheat.file}", cheat.problem), lambda: verdict(*HONEST), min_ratio=0.2)


# ---------------------------------------------------------------------------------------------------
# threat #19: secrets and escape. The judge runs in a child process started with a minimal
# environment that holds one fake secret (and nothing real), so that the candidate's parent is that
# child; a listener on the loopback stands for the network.

PROBE_FILE = Path("/tmp/kbench_adversarial_escape_probe.json")
PROBE_PORT = 47613
FAKE_SECRET = ("KBENCH_ADV_FAKE_API_KEY", "sk-kbench-adversarial-fake-not-a-secret")
PROBE_BITS = {
    1: "the candidate's own environment holds the judge's secret",
    2: "the judge's environment (with the secret) is readable under /proc/<parent>/environ",
    4: "the judge's memory is readable under /proc/<parent>/mem (expected outputs live there)",
    8: "it opened a TCP connection to the host's loopback",
    16: "it wrote a file outside its private directory",
}
_CHILD = r"""
import json, sys
from kbench_lib.judging import build
from kbench_lib.core.candidates import load_candidate
from kbench_lib.judging.pipeline import JudgeOptions, judge
from kbench_lib.suite.problems import load_problem
v = judge(load_problem(sys.argv[1]), load_candidate(sys.argv[2]), JudgeOptions(**json.loads(sys.argv[3])))
print("@@VERDICT@@" + v.to_json())
"""


def _listen(port: int):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind(("127.0.0.1", port))
    except OSError:
        srv.close()
        return None, None, None
    srv.listen(4)
    srv.settimeout(0.2)
    seen: list = []
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                seen.append(conn.recv(64))

    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return srv, seen, stop


def test_19_secrets_and_escape(tmp_path):
    try:
        PROBE_FILE.unlink(missing_ok=True)
    except OSError as e:
        pytest.skip(f"cannot reset {PROBE_FILE}: {e}")
    srv, seen, stop = _listen(PROBE_PORT)
    env = {
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "/usr/bin:/bin")]),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(REPO),
        "KBENCH_CACHE": os.environ.get("KBENCH_CACHE", str(tmp_path / "cache")),
        FAKE_SECRET[0]: FAKE_SECRET[1],
    }
    try:
        r = subprocess.run(
            [sys.executable, "-c", _CHILD, str(HERE / "problems" / f"{ELEMENTWISE}.py"), str(HERE / "cheats" / "19_escape_probe.py"), json.dumps(OPTS)],
            env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=600,
        )
        probe = json.loads(PROBE_FILE.read_text()) if PROBE_FILE.exists() else None
    finally:
        if stop is not None:
            stop.set()
            srv.close()
        try:
            PROBE_FILE.unlink(missing_ok=True)
        except OSError:
            pass
    line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith("@@VERDICT@@")), None)
    assert line, f"the judge did not finish: rc={r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    v = json.loads(line[len("@@VERDICT@@"):])
    brief = {k: v.get(k) for k in ("correct", "failure", "flags", "message", "max_abs_err", "network_isolated")}
    print(f"cheats/19_escape_probe.py: {json.dumps(brief, default=str)}; probe file: {probe}; connections: {seen}")
    assert v["failure"] not in ("compile_error", "load_error"), f"the probe did not run: {brief}"
    leaks = []
    if v["failure"] == "output_mismatch" and v.get("max_abs_err") is not None:
        bits = int(round(float(v["max_abs_err"])))
        leaks += [text for bit, text in PROBE_BITS.items() if bits & bit]
    elif not v["correct"]:
        leaks.append(f"the probe candidate failed otherwise: {brief}")
    if probe is not None and PROBE_BITS[16] not in leaks:
        leaks.append(PROBE_BITS[16])
    if seen and PROBE_BITS[8] not in leaks:
        leaks.append(PROBE_BITS[8])
    assert not leaks, "ESCAPED: " + "; ".join(leaks) + f" | verdict {brief} | probe file {probe}"


# ---------------------------------------------------------------------------------------------------
# Classes that cannot exist on a CPU: their cheats live in test_adversarial_gpu.py.


# the cheats of these classes and this twin are in the GPU suite: each with its file, each judged there
GPU_ONLY_CHEATS = {
    "g01d_library_passthrough_rewritten_ops.py": "the reference's ops rewritten as other library ops: device-time attribution",
    "g11a_side_stream_unjoined_delayed.py": "threat #11, side-stream work: CUDA streams",
    "g11b_side_stream_unjoined.py": "threat #11, side-stream work: CUDA streams",
    "g20a_memoise_by_pointer.py": "threat #20, impossible speed: the roofline bound exists for GPUs only",
    "g20b_patched_event_timer.py": "threat #20, impossible speed: the roofline bound exists for GPUs only",
}
GPU_ONLY_TWINS = {"side_stream_joined_cuda.py": "a second stream joined before returning: CUDA streams"}


def test_the_classes_a_cpu_cannot_exercise_are_judged_by_the_gpu_suite():
    """A class that cannot exist on a CPU is not skipped here in silence: its cheat (and the twin
    that must pass) is a file of the GPU suite and one of its parametrised cases."""
    import re

    gpu = (HERE / "test_adversarial_gpu.py").read_text()
    cheats = set(re.findall(r'Cheat\("([^"]+)"', gpu))
    twins = set(re.findall(r'\("(\w+_cuda\.py)", \w+\)', gpu))
    for name in GPU_ONLY_CHEATS:
        assert (HERE / "cheats" / "gpu" / name).is_file() and name in cheats, name
    for name in GPU_ONLY_TWINS:
        assert (HERE / "legit" / "gpu" / name).is_file() and name in twins, name


def test_candidates_share_one_kernel_block():
    """The CPU cheats and twins compile the same kernel text (tests/adversarial/README.md), so a
    difference in verdict comes from what the Python around it does."""
    block = re.compile(r'_SRC = r"""(.*?)"""', re.S)
    texts = {}
    for path in sorted([*HERE.glob("cheats/*.py"), *HERE.glob("legit/*.py")]):
        m = block.search(path.read_text())
        if m and "Shared CPU kernel block" in m.group(1):
            texts[path.name] = m.group(1)
    assert len(texts) >= 30 and len(set(texts.values())) == 1, sorted(texts)
