"""The flags' registry (kbench_lib.scoring.flags): every flag the judge raises has a class (cheat, hazard,
shortcut), a threat class (docs/THREAT_MODEL.md) and a meaning; the trust policies read it; the docs' table lists
the same; the timed run tells a static output buffer from a cached result."""
from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from kbench_lib.scoring import flags, metrics
from kbench_lib.scoring.flags import UnknownFlagPolicy

from conftest import FIXTURES, REPO

PACKAGE = REPO / "kbench_lib"
# string starts of the form "<name>: " in kbench_lib that are messages or notes, not flags
NOT_FLAGS = {
    "device_arena",  # tamper check's labels of the worker's objects
    "error", "evolve", "failures", "flagged", "host_bound", "kernels", "live", "machine", "ninja", "other",
    "refine", "replay", "roofline", "single", "sol_fraction", "static", "tune", "unshare", "usage", "default",
    "fails",  # the audit waterfall's step labels ("fails: <cause>")
    "kbench", "stopped",  # the judge service's lines ("kbench: interrupted", "stopped: {status}")
}


def _flag_names_in_source() -> set[str]:
    """Every ``"<name>: `` string start (f-strings too) and every ``add("<name>"`` of the static
    checks in kbench_lib's source."""
    starts = re.compile(r"""(?:^|[^\w'"`])f?["']([a-z][a-z0-9_]*): """)  # not a possessive (judge's: , :mod:`x`'s: )
    adds = re.compile(r"""\badd\(\s*["']([a-z][a-z0-9_]*)["']""")
    found = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        found |= set(starts.findall(text)) | set(adds.findall(text))
    return found


def test_the_registry_covers_every_flag_the_source_raises():
    names = _flag_names_in_source() - NOT_FLAGS
    assert names - set(flags.FLAGS) == set(), "flags raised in kbench_lib but not in kbench_lib/scoring/flags.py"
    # the scan sees the flags it should (so a broken regex cannot pass by finding nothing)
    assert {"output_reused", "static_output_buffer", "patches_library", "environment_access", "timing_unchecked"} <= names
    unused = set(flags.FLAGS) - names
    assert unused == set(), f"registered but never raised: {unused}"


def test_every_flag_has_a_class_a_threat_class_and_a_meaning():
    for name, f in flags.FLAGS.items():
        assert f.cls in flags.CLASSES, name
        assert f.threat and f.meaning and "\n" not in f.meaning, name
    assert flags.THREAT == {n: f.threat for n, f in flags.FLAGS.items()}


def test_failures_reads_the_one_threat_table():
    from kbench_lib.analysis import failures

    assert failures.THREAT is flags.THREAT
    assert failures.threat_classes(["static_output_buffer: 3 of 9", "output_reused: 2"]) == ["#8 memoisation", "kept output buffer (rewritten each call, not memoisation)"]
    assert failures.threat_classes(["made_up: x"]) == ["other: made_up"]


@pytest.mark.parametrize("name, cls", [
    ("output_reused", "cheat"), ("memoisation_suspected", "cheat"), ("side_stream_unjoined", "cheat"),
    ("threads_started", "cheat"), ("processes_started", "cheat"), ("patches_library", "cheat"),
    ("timer_tampered", "cheat"), ("harness_tampered", "cheat"), ("input_drawing_tampered", "cheat"),
    ("introspection", "cheat"), ("dynamic_code", "cheat"), ("faster_than_light", "shortcut"),
    ("profile_malformed", "cheat"), ("profile_missing", "cheat"), ("timing_unchecked", "cheat"), ("guards_off", "cheat"),
    ("static_output_buffer", "hazard"), ("output_aliases_input", "hazard"), ("global_settings_changed", "hazard"),
    ("changes_settings", "hazard"), ("environment_access", "hazard"), ("suspect_import", "hazard"), ("context_lost", "hazard"),
    ("no_custom_kernel", "shortcut"), ("library_passthrough", "shortcut"), ("library_does_the_work", "shortcut"),
    ("degenerate_task", "shortcut"), ("profile_failed", "shortcut"),
])
def test_the_class_of_each_flag(name, cls):
    assert flags.flag_class(name) == cls
    assert flags.flag_class(f"{name}: some reason: with a colon [small_variant0]") == cls


def test_names_classes_and_unknown_flags():
    assert flags.flag_name("  output_reused : 3 timed calls") == "output_reused"
    assert flags.flag_name("no colon at all") == "no colon at all"
    assert flags.flag_class("something_new: the judge cannot vouch for it") == "cheat"
    assert flags.classes(["library_passthrough: x", "changes_settings: y", "output_reused: z", "suspect_import: w"]) == \
        ["cheat", "hazard", "shortcut"]
    assert flags.classes([]) == flags.classes(None) == flags.classes(float("nan")) == []


def test_policies():
    hazard, cheat, shortcut = ["static_output_buffer: 3 of 9"], ["output_reused: 2"], ["no_custom_kernel: x"]
    assert flags.POLICIES == ("strict", "no-cheat")
    assert flags.check_policy(None) == flags.check_policy("") == "strict"
    assert flags.trusted(True, [], "strict") and flags.trusted(True, None, "no-cheat")
    assert not flags.trusted(True, hazard, "strict") and flags.trusted(True, hazard, "no-cheat")
    assert not flags.trusted(True, shortcut, "strict") and flags.trusted(True, shortcut, "no-cheat")
    assert not flags.trusted(True, cheat, "strict") and not flags.trusted(True, cheat, "no-cheat")
    assert not flags.trusted(True, hazard + cheat, "no-cheat")
    assert not flags.trusted(False, [], "no-cheat") and not flags.trusted(None, [], "strict")
    assert not flags.trusted(float("nan"), [], "strict") and not flags.trusted(pd.NA, [], "strict")
    assert flags.trusted(True, [], None)


def test_an_unknown_policy_is_a_one_line_error():
    with pytest.raises(UnknownFlagPolicy) as e:
        flags.check_policy("lenient")
    msg = str(e.value)
    assert "\n" not in msg and "'lenient'" in msg and "strict, no-cheat" in msg
    assert isinstance(e.value, ValueError)
    with pytest.raises(UnknownFlagPolicy):
        flags.trusted(True, [], "lenient")


def test_flags_module_is_pure_python():
    text = (PACKAGE / "scoring" / "flags.py").read_text()
    assert not re.search(r"^\s*(import|from)\s+(torch|numpy|pandas)\b", text, re.M)


# ----- the docs' table


def _docs_table() -> dict[str, str]:
    text = (REPO / "docs" / "THREAT_MODEL.md").read_text()
    section = text.split("## Every flag", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| (\w+) \| ([^|]+) \| ([^|]+) \|$", section, re.M)
    return {name: cls for name, cls, _, _ in rows}


def test_the_docs_table_lists_the_registry():
    assert _docs_table() == {n: f.cls for n, f in flags.FLAGS.items()}


# ----- the metrics under both policies


def _row(problem, correct=True, flags_=(), s_eager=2.0, model="m"):
    return {"model": model, "problem": problem, "level": "level1", "correct": correct, "flags": list(flags_),
            "speedup_eager": s_eager if correct else None, "speedup_compile": None,
            "failure": None if correct else "output_mismatch", "sample": 0, "device": "cuda", "backend": "cuda", "small": False}


@pytest.fixture
def df():
    return pd.DataFrame([
        _row("clean", s_eager=2.0),
        _row("hazard", flags_=["static_output_buffer: 9 of 10 timed calls"], s_eager=4.0),
        _row("shortcut", flags_=["library_passthrough: ran aten::mm"], s_eager=1.0),
        _row("cheat", flags_=["output_reused: 9 timed calls", "changes_settings: x"], s_eager=100.0),
        _row("wrong", correct=False),
    ])


def test_trusted_under_each_policy(df):
    assert metrics.trusted(df).tolist() == [True, False, False, False, False]
    assert metrics.trusted(df, "strict").tolist() == metrics.trusted(df).tolist()
    assert metrics.trusted(df, "no-cheat").tolist() == [True, True, True, False, False]
    with pytest.raises(UnknownFlagPolicy):
        metrics.trusted(df, "lenient")


def test_rates_under_each_policy(df):
    assert metrics.fast_p(df, 0.0) == metrics.trusted_rate(df) == 0.2
    assert metrics.fast_p(df, 0.0, policy="no-cheat") == metrics.trusted_rate(df, "no-cheat") == 0.6
    assert metrics.fast_p(df, 1.5) == 0.2 and metrics.fast_p(df, 1.5, policy="no-cheat") == 0.4  # the cheat's 100x never counts
    assert metrics.geomean_speedup(df) == pytest.approx(2.0)
    assert metrics.geomean_speedup(df, policy="no-cheat") == pytest.approx((2.0 * 4.0 * 1.0) ** (1 / 3))
    best = metrics.best_per_problem(df, policy="no-cheat")
    assert len(best) == 5
    for f in (lambda: metrics.fast_p(df, 1.0, policy="x"), lambda: metrics.geomean_speedup(df, policy="x"),
              lambda: metrics.summary(df, policy="x"), lambda: metrics.failure_counts(df, policy="x"),
              lambda: metrics.fast_p(df.iloc[:0], 1.0, policy="x"), lambda: metrics.attempts(df, policy="x"),
              lambda: metrics.best_per_problem(df, policy="x")):
        with pytest.raises(UnknownFlagPolicy):
            f()


def test_attempts_pick_their_best_row_under_the_policy():
    chain = pd.DataFrame([_row("a", s_eager=1.2), _row("a", flags_=["static_output_buffer: 5 of 6"], s_eager=3.0)]
                         ).assign(strategy="refine", sample=0, turn=[0, 1])
    assert metrics.attempts(chain)["speedup_eager"].tolist() == [1.2]
    assert metrics.attempts(chain, policy="no-cheat")["speedup_eager"].tolist() == [3.0]
    assert metrics.fast_p(chain, 2.0) == 0.0 and metrics.fast_p(chain, 2.0, policy="no-cheat") == 1.0


def test_summary_names_its_policy(df):
    strict, loose = metrics.summary(df, by=("model",)), metrics.summary(df, by=("model",), policy="no-cheat")
    assert list(strict.columns[:3]) == ["model", "trust", "n"]
    assert strict.loc[0, "trust"] == "strict" and loose.loc[0, "trust"] == "no-cheat"
    assert strict.loc[0, "flagged"] == pytest.approx(0.6) and loose.loc[0, "flagged"] == pytest.approx(0.2)
    assert strict.loc[0, "fast_0"] == pytest.approx(0.2) and loose.loc[0, "fast_0"] == pytest.approx(0.6)
    assert strict.loc[0, "correct"] == loose.loc[0, "correct"] == pytest.approx(0.8)
    assert math.isnan(strict.loc[0, "geomean_compile"])


def test_failure_counts_under_each_policy(df):
    strict = metrics.failure_counts(df, flag_names=True)
    assert strict.loc["m", "trusted"] == 1 and strict.loc["m", "flagged: static_output_buffer"] == 1
    loose = metrics.failure_counts(df, flag_names=True, policy="no-cheat")
    assert loose.loc["m", "trusted"] == 3 and loose.loc["m", "flagged: output_reused"] == 1
    assert "flagged: static_output_buffer" not in loose.columns


def test_flag_class_counts(df):
    c = metrics.flag_class_counts(df)
    assert c.loc["m"].to_dict() == {"correct": 4, "unflagged": 1, "cheat": 1, "hazard": 2, "shortcut": 1}
    two = pd.concat([df, pd.DataFrame([_row("x", model="n", flags_=["changes_settings: a", "environment_access: b"])])])
    c = metrics.flag_class_counts(two)
    assert c.loc["n"].to_dict() == {"correct": 1, "unflagged": 0, "cheat": 0, "hazard": 1, "shortcut": 0}  # once per class
    assert metrics.flag_class_counts(df, by=()).iloc[0]["hazard"] == 2
    assert metrics.flag_class_counts(df[~df["correct"]]).empty


def test_under_protocol_sets_trusted_under_the_policy(df):
    assert metrics.under_protocol(df, "kbench")["trusted"].tolist() == [True, False, False, False, False]
    assert metrics.under_protocol(df, "kbench", "no-cheat")["trusted"].tolist() == [True, True, True, False, False]
    table = metrics.protocol_summary(df, policy="no-cheat")
    assert set(table["trust"]) == {"no-cheat"} and list(table.columns[:3]) == ["protocol", "model", "trust"]
    with pytest.raises(UnknownFlagPolicy):
        metrics.under_protocol(df, "kbench", "x")


# ----- the timed run: a static output buffer against a cached result


def _drive(forward, n_sets=3, rounds=4):
    from kbench_lib.isolation.worker.timed import _Samples

    kept = _Samples()
    k = 0
    for _ in range(rounds):
        for j in range(n_sets):
            kept.keep(k, j, forward(j))
            k += 1
    return kept


def test_a_kept_buffer_is_static_not_reused():
    import torch

    buf = torch.empty(16)
    kept = _drive(lambda j: buf.fill_(float(j)))  # one buffer, rewritten by every call
    assert kept.static == 11 and kept.reused == 0 and kept.calls == 12  # the very first call has nothing held before it
    assert sorted(kept.samples) == [0, 1, 2]  # the re-check's samples are snapshots: each holds its own set's answer
    assert [float(v[0][0]) for _, v in sorted(kept.samples.items())] == [0.0, 1.0, 2.0]
    views = _drive(lambda j: (buf[:8].fill_(float(j)), buf[8:].fill_(-float(j))))  # two outputs in one kept buffer
    assert views.static == 11 and views.reused == 0


def test_a_result_cached_per_set_is_reused_not_static():
    import torch

    cache = {}
    kept = _drive(lambda j: cache.setdefault(j, torch.full((16,), float(j))))
    assert kept.reused == 9 and kept.static == 0  # every call after the first round
    block = torch.zeros(3, 16)  # a cache of slices of one block: the storage is shared, the addresses are not
    kept = _drive(lambda j: block[j])
    assert kept.static == 0 and kept.reused > 0


def test_fresh_outputs_are_neither():
    import torch

    kept = _drive(lambda j: torch.full((16,), float(j)))
    assert kept.reused == 0 and kept.static == 0 and kept.calls == 12


def test_the_timed_run_raises_each_flag_with_its_class():
    import torch

    from kbench_lib.isolation.worker.timed import _timing_flags
    from kbench_lib.measure.timing import Timing

    result = Timing(1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 12, 0.0)
    buf = torch.empty(4)
    static = _timing_flags(result, _drive(lambda j: buf), torch.device("cpu"))
    assert [flags.flag_name(f) for f in static] == ["static_output_buffer"]
    assert static[0].startswith("static_output_buffer: 11 of 12 timed calls returned storage the module keeps and rewrites")
    cache = {}
    reused = _timing_flags(result, _drive(lambda j: cache.setdefault(j, torch.ones(4) * j)), torch.device("cpu"))
    assert reused == ["output_reused: 9 timed calls returned the tensor returned for the same input set earlier (a cached result)"]
    assert [flags.flag_class(f) for f in static + reused] == ["hazard", "cheat"]
    assert _timing_flags(result, 2, torch.device("cpu"))[0].startswith("output_reused: 2 ")  # a count alone, as before


# ----- end to end on the CPU: the judge's verdicts on both


@pytest.fixture(scope="module")
def judged_buffers():
    from kbench_lib.core.candidates import load_candidate
    from kbench_lib.judging.pipeline import JudgeOptions, judge
    from kbench_lib.suite.problems import load_problem

    opts = JudgeOptions(device="cpu", timing_budget_s=0.1, min_trials=5, max_trials=20, warmup_ms=1.0, run_timeout_s=60)
    relu = load_problem(FIXTURES / "problems" / "level1" / "1_Scale_Add_ReLU.py")
    return {k: judge(relu, load_candidate(FIXTURES / "protocols" / f"scale_add_relu_{k}.py"), opts) for k in ("static_buffer", "cached")}


def test_a_static_output_buffer_is_correct_and_a_hazard(judged_buffers):
    v = judged_buffers["static_buffer"]
    assert v.correct, v.message
    assert any(flags.flag_name(f) == "static_output_buffer" for f in v.flags), v.flags
    assert "cheat" not in flags.classes(v.flags), v.flags
    assert flags.trusted(v.correct, v.flags, "no-cheat") and not flags.trusted(v.correct, v.flags, "strict")


def test_a_cached_result_is_rejected_or_a_cheat(judged_buffers):
    v = judged_buffers["cached"]
    assert (not v.correct) or "cheat" in flags.classes(v.flags), (v.correct, v.failure, v.flags)
    assert not flags.trusted(v.correct, v.flags, "no-cheat")
